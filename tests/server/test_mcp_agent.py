#!/usr/bin/env python3
"""`schemaweaver agent` with MCP servers over both transports in one run: the official SDK's
order desk over Streamable HTTP (tests/scripts/mcp_test_server.py) beside the official time
server over stdio; the revision each agreed (-v); in one round (the small model writes no valid call
after it: the run ends without an answer, its steps printed), a read-only tool's call executed on the HTTP
server; a destructive tool's call not run without a yes (no terminal to ask on), run with --yes.

    test_mcp_agent.py --cli build/apps/cli/schemaweaver --model SmolLM2.gguf --python VENV/bin/python
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "scripts" / "mcp_test_server.py"


def check(condition, what, detail=""):
    if not condition:
        print(f"FAILED: {what}\n{detail}")
        sys.exit(1)
    print(f"ok: {what}")


def start_desk(python):
    port_file = Path(tempfile.mkdtemp()) / "port"
    desk = subprocess.Popen([python, str(SERVER), "--transport", "http", "--port-file", str(port_file)])
    for _ in range(400):
        if port_file.exists():
            return desk, f"http://127.0.0.1:{port_file.read_text()}/mcp"
        time.sleep(0.05)
    desk.kill()
    raise SystemExit("the SDK's order desk did not start")


def agent(args, url, tools, prompt, *extra):
    time_server = f"{Path(args.python).parent / 'mcp-server-time'} --local-timezone UTC"
    command = [args.cli, "agent", "-m", args.model, "--mcp", url, "--mcp", time_server, "--tools", tools,
               "--require-call", "--max-rounds", "1", "--max-calls", "1", "--json", "-v", "-p", prompt, *extra]
    run = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    steps = json.loads(run.stdout.splitlines()[-1])["steps"] if run.stdout.strip() else []
    return run, steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--python", required=True)
    args = parser.parse_args()
    desk, url = start_desk(args.python)
    try:
        run, steps = agent(args, url, "lookup_order", "Status of order 12345?")
        log = run.stderr
        check(f"MCP {url}: revision 2026-07-28" in log, "the HTTP server agreed the current revision", log)
        check("mcp-server-time --local-timezone UTC': revision 2026-07-28" in log,
              "the stdio server agreed the current revision", log)
        check("tool get_current_time from mcp-time" in log and "tool lookup_order from order-desk (read-only)" in log,
              "both servers' tools listed in one run", log)
        check(steps and steps[0]["server"] == "order-desk" and steps[0]["call"]["name"] == "lookup_order"
              and "shipped" in steps[0]["result"], "the model's call ran on the HTTP server", run.stdout + log)

        run, steps = agent(args, url, "cancel_order", "Cancel my order 12345")
        check(steps and steps[0]["declined"] and "did not allow" in steps[0]["result"],
              "a destructive call is not run without a yes", run.stdout + run.stderr)
        check("no terminal to ask on" in run.stderr, "and the user is told why", run.stderr)
        run, steps = agent(args, url, "cancel_order", "Cancel my order 12345", "--yes")
        check(steps and not steps[0]["declined"] and "cancelled" in steps[0]["result"],
              "with --yes it runs", run.stdout + run.stderr)
        check(all(step["call_ms"] > 0 for step in steps), "each call's round trip is timed", run.stdout)
    finally:
        desk.kill()
        desk.wait()
    print("all MCP agent checks passed")


if __name__ == "__main__":
    main()
