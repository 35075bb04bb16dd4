"""tool_choice auto against required on a BFCL sample: the share of turns answered with calls,
correctness, and what the opening cost, from the JSON lines of `schemaweaver bfcl` run with a
mode and the same mode with /auto interleaved (every case of the sample expects a call).

    python3 bench/tool_choice_auto.py RESULTS.jsonl...
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import read_lines  # noqa: E402


def rows(path):
    by_mode = {}
    for case in read_lines(path):
        by_mode.setdefault(case["mode"], []).append(case)
    for mode, cases in by_mode.items():
        opening = [p for c in cases for p in c["stats"]["phases"] if p["name"] == "opening"]
        calls = sum(not c.get("text_reply", False) for c in cases)
        yield (Path(path).name.split(".jsonl")[0], mode, len(cases), calls, sum(c["valid"] for c in cases),
               sum(p["passes"] for p in opening) / max(len(opening), 1), sum(p["ms"] for p in opening) / max(len(opening), 1))


def main():
    print("| model | mode | cases | answered with calls | correct | opening passes (mean, where probed) | opening ms |")
    print("|---|---|---|---|---|---|---|")
    for path in sys.argv[1:]:
        for model, mode, n, calls, valid, passes, ms in rows(path):
            print(f"| {model} | {mode} | {n} | {calls} ({100 * calls / n:.0f} %) | {valid}/{n} | {passes:.1f} | {ms:.0f} |")


if __name__ == "__main__":
    main()
