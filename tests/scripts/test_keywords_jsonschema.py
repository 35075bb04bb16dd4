"""Calls made under schema keywords, validated by the official `jsonschema` package.

The real default model answers requests for tools whose parameters use the enforced keywords
(patterns, formats, bounds, lengths, item counts, tuples, $ref, a recursive $ref with oneOf
beside it, and a pattern that makes a backtracking matcher run for minutes). Every call each grammar-constrained mode makes must
validate against its tool's schema under jsonschema's 2020-12 validator with format checking:
an independent oracle, not the engine's own check. How long a call takes is the benchmarks'
business; a call that never ends (a matcher gone exponential) meets a generous timeout.

    python test_keywords_jsonschema.py --cli build/apps/cli/schemaweaver --model M.gguf --tools T.json [--tools U.json]

Each request is run with the file that holds its tool, so that a tool added in a file of its own
leaves the prompts of the others as they were.
"""
import argparse
import json
import subprocess
import sys
import time

import jsonschema

REQUESTS = [
    ("book_flight", "Book a flight from Paris to Tokyo on the first of May 2025 for two people."),
    ("set_alarm", "Alarm: time 06:30:00Z, label gym, days mon and wed."),
    ("send_invite", "Invite ann@example.org to meeting 123e4567-e89b-12d3-a456-426614174000 tomorrow at 9, priority 2.5."),
    ("move_robot", "Move the arm to x 10, y -20, slowly, with code aab."),
    ("add_task", "Add the task move house, with the subtasks pack boxes and call movers, due in 3 days."),
]
MODES = ["constrained", "jump-forward", "schemaweaver"]
# A hang guard, not a speed requirement: the slowest call seen (under the sanitizers, on a slow
# CPU) took 22 s.
HANG_SECONDS = 300


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tools", required=True, action="append")
    args = parser.parse_args()
    schemas, tool_file = {}, {}
    for path in args.tools:
        with open(path) as f:
            for t in json.load(f):
                schemas[t["function"]["name"]] = t["function"]["parameters"]
                tool_file[t["function"]["name"]] = path
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    failures, calls = [], 0
    for tool, prompt in REQUESTS:
        validator = jsonschema.Draft202012Validator(schemas[tool], format_checker=checker)
        for mode in MODES:
            started = time.time()
            try:
                run = subprocess.run([args.cli, "call", "-m", args.model, "--tools", tool_file[tool], "--tool", tool,
                                      "--mode", mode, "-p", prompt, "--max-tokens", "96"],
                                     capture_output=True, text=True, timeout=HANG_SECONDS)
            except subprocess.TimeoutExpired:
                failures.append(f"{tool} {mode}: no answer within {HANG_SECONDS} s (a hang)")
                continue
            seconds = time.time() - started
            lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
            if run.returncode != 0 or not lines:
                # Cut at max_tokens is the one way a constrained call may fail; it is said, not hidden.
                ok = "stopped at max_tokens" in run.stderr
                print(f"{'cut' if ok else 'FAIL'}: {tool} {mode}: exit {run.returncode}: {run.stderr.strip()[-300:]}")
                if not ok:
                    failures.append(f"{tool} {mode}: no valid call: {run.stderr.strip()[-300:]}")
                continue
            for call in lines:
                calls += 1
                errors = [e.message for e in validator.iter_errors(call["arguments"])]
                print(f"{'FAIL' if errors else 'ok'}: {tool} {mode} ({seconds:.1f} s): {json.dumps(call['arguments'])}"
                      + (f" -> {errors}" if errors else ""))
                if errors:
                    failures.append(f"{tool} {mode}: {errors}")
    if calls < len(REQUESTS) * len(MODES) // 2:
        failures.append(f"only {calls} calls to validate")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"all {calls} calls validate under jsonschema")
    return 0


if __name__ == "__main__":
    sys.exit(main())
