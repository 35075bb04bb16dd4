#!/usr/bin/env python3
"""BFCL v4 multi-turn tasks run by `schemaweaver agent` through MCP: each task's backends served
by bench/bfcl_mcp_server.py (the official Python SDK) over stdio and over Streamable HTTP, the
task's user turns given as the agent's prompts (-p, one per turn), its calls graded by
bfcl_eval's multi-turn checker as bench/multi_turn.py grades the server-driven loop.

    $SCHEMAWEAVER_CACHE/venv/bin/python bench/mcp_multi_turn.py --model M.gguf [--sample 5]
        [--categories multi_turn_base] [--transports stdio,http] [--out DIR]

Per transport: accuracy, calls per task, wall time per task (the agent's process: model load,
server start and every turn), and the MCP round trip per call (the agent's call_ms: the request,
the backend's run - microseconds - and the answer), its median and 90th percentile. JSON lines
per task and a Markdown summary under --out; a rerun skips the tasks already there.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CACHE, CLI, geomean, log, resumed_run, table, write_summary  # noqa: E402
from multi_turn import grade, load_tasks, sample_tasks  # noqa: E402

SERVER = Path(__file__).resolve().parent / "bfcl_mcp_server.py"


def start_http(task_file):
    port_file = Path(tempfile.mkdtemp()) / "port"
    server = subprocess.Popen([sys.executable, str(SERVER), "--task", str(task_file), "--transport", "http",
                               "--port-file", str(port_file)])
    for _ in range(600):
        if port_file.exists():
            return server, f"http://127.0.0.1:{port_file.read_text()}/mcp"
        time.sleep(0.05)
    server.kill()
    raise SystemExit("the BFCL MCP server did not start")


def run_task(args, task, transport):
    """The task's steps per turn (each a list of {name: arguments}), the agent's steps and errors."""
    task_file = Path(tempfile.mkdtemp()) / "task.json"
    task_file.write_text(json.dumps(task))
    server = None
    if transport == "http":
        server, where = start_http(task_file)
    else:
        where = f"{sys.executable} {SERVER} --task {task_file} --transport stdio"
    prompts = []
    for user_messages in task["question"]:
        prompts += ["-p", "\n".join(m["content"] for m in user_messages)]
    command = [str(CLI), "agent", "-m", args.model, "-t", args.threads, "-c", args.ctx, "--mcp", where, "--json",
               "--max-rounds", str(MAXIMUM_STEP_LIMIT), "-n", "512", "--no-prompt-cache", *prompts]
    try:
        run = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=3600)
    finally:
        if server:
            server.kill()
            server.wait()
    lines = run.stdout.strip().splitlines()
    if not lines:
        raise SystemExit(f"the agent printed nothing: {run.stderr[-2000:]}")
    report = json.loads(lines[-1])
    turns = []
    for turn in range(len(report["answers"])):
        rounds = {}
        for step in report["steps"]:
            if step["turn"] == turn:
                rounds.setdefault(step["round"], []).append({step["call"]["name"]: json.dumps(step["call"]["arguments"])})
        turns.append([rounds[r] for r in sorted(rounds)] + [report["answers"][turn]])
    return turns, report


def summarize(lines):
    rows, summary = [], {}
    for key in sorted({(l["category"], l["transport"]) for l in lines}):
        group = [l for l in lines if (l["category"], l["transport"]) == key]
        call_ms = [s["call_ms"] for l in group for s in l["steps"]]
        entry = {"tasks": len(group), "correct": sum(l["valid"] for l in group),
                 "calls_per_task": sum(len(l["steps"]) for l in group) / len(group),
                 "task_s": geomean([l["wall_s"] for l in group]),
                 "call_ms_median": statistics.median(call_ms) if call_ms else None,
                 "call_ms_p90": statistics.quantiles(call_ms, n=10)[-1] if len(call_ms) >= 2 else None}
        summary["/".join(key)] = entry
        ms = (lambda v: "-" if v is None else f"{v:.1f}")
        rows.append([key[0], key[1], f"{entry['correct']}/{entry['tasks']}", f"{entry['calls_per_task']:.1f}",
                     f"{entry['task_s']:.1f}", ms(entry["call_ms_median"]), ms(entry["call_ms_p90"])])
    header = ["category", "MCP transport", "correct (bfcl_eval)", "calls / task", "task s (geomean)",
              "MCP call ms (median)", "MCP call ms (p90)"]
    return summary, table(header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--sample", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", default="2")
    parser.add_argument("--ctx", default="16384")
    parser.add_argument("--categories", default="multi_turn_base")
    parser.add_argument("--transports", default="stdio,http")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out, lines_path, lines = resumed_run(args.out, "mcp-multi-turn", args.model, "tasks.jsonl")
    done = {(l["transport"], l["id"]) for l in lines}
    data = CACHE / "data" / "bfcl"
    for transport in args.transports.split(","):
        for category in args.categories.split(","):
            for task in sample_tasks(load_tasks(data, category), args.sample, args.seed):
                if (transport, task["id"]) in done:
                    continue
                started = time.perf_counter()
                turns, report = run_task(args, task, transport)
                valid, why = grade(task, turns, f"schemaweaver_agent_{transport}")
                line = {"transport": transport, "category": category, "id": task["id"], "valid": valid, "why": why,
                        "wall_s": time.perf_counter() - started, "steps": report["steps"], "errors": report["errors"],
                        "turns": turns}
                lines.append(line)
                with lines_path.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                log(f"{transport} {task['id']}: {'correct' if valid else why}, {len(report['steps'])} calls, "
                    f"{line['wall_s']:.0f} s")
    summary, markdown = summarize(lines)
    write_summary(out, "BFCL v4 multi-turn through `schemaweaver agent` and MCP", args.model, args, summary, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
