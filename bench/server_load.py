#!/usr/bin/env python3
"""A bounded load test of `schemaweaver serve` on loopback: N clients send tool-call requests
(half of them streaming) back to back for a fixed time; prints throughput, p50/p99 latency and
errors, and exits non-zero on any error or if the server died.

    python3 bench/server_load.py --model M.gguf [--clients 4] [--seconds 30] [--slots 2]

Standard library only.
"""
import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from serve_harness import running_server

ROOT = Path(__file__).resolve().parent.parent
CITIES = ["Paris", "Oslo", "Lima", "Rome", "Tokyo", "Madrid", "Cairo", "Quito"]


def one_request(base, tools, city, stream):
    body = json.dumps({"messages": [{"role": "user", "content": f"What is the weather like in {city}?"}],
                       "tools": tools, "tool_choice": "required", "max_tokens": 64, "stream": stream}).encode()
    request = urllib.request.Request(base + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        text = response.read().decode()
    if stream:
        if "data: [DONE]" not in text or '"tool_calls"' not in text:
            raise RuntimeError("incomplete stream: " + text[-200:])
    else:
        answer = json.loads(text)
        if answer["choices"][0]["finish_reason"] != "tool_calls":
            raise RuntimeError("no tool call: " + text[:200])


def read_metrics(base):
    """GET /metrics as {name: value} (Prometheus text format, labels kept in the name)."""
    with urllib.request.urlopen(base + "/metrics", timeout=30) as response:
        lines = response.read().decode().splitlines()
    return {name: float(value) for name, value in (line.rsplit(" ", 1) for line in lines if line.strip())}


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", default=str(ROOT / "build/apps/cli/schemaweaver"))
    parser.add_argument("--model", required=True)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()
    tools = json.loads((ROOT / "examples/weather_tools.json").read_text())
    latencies, errors = [], []
    lock = threading.Lock()
    with running_server(args.cli, args.model, "--slots", args.slots, "--max-waiting", args.clients) as (server, base, _):
        stop_at = time.time() + args.seconds

        def client(k):
            n = 0
            while time.time() < stop_at:
                start = time.perf_counter()
                try:
                    one_request(base, tools, CITIES[(k + n) % len(CITIES)], stream=(k + n) % 2 == 1)
                    with lock:
                        latencies.append((time.perf_counter() - start) * 1000)
                except (OSError, RuntimeError, ValueError, KeyError, urllib.error.HTTPError) as e:
                    with lock:
                        errors.append(repr(e))
                n += 1

        started = time.time()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - started
        alive = server.poll() is None
        metrics = read_metrics(base) if alive else {}
    print(f"model {Path(args.model).name}: {args.clients} clients, {args.slots} slot(s), {elapsed:.1f} s")
    print("| requests | errors | throughput (req/s) | p50 (ms) | p99 (ms) | server alive |\n|---|---|---|---|---|---|")
    p50 = percentile(latencies, 50) if latencies else 0
    p99 = percentile(latencies, 99) if latencies else 0
    print(f"| {len(latencies)} | {len(errors)} | {len(latencies) / elapsed:.2f} | {p50:.0f} | {p99:.0f} | {alive} |")
    # Compiled tool sets kept between requests: every request sends the same tools, so all but
    # the first find theirs compiled; compile ms per request is what the server spent compiling.
    requests = metrics.get("schemaweaver_calls_total", 0)
    if requests:
        print("| tool-set hits | misses | compile ms total | compile ms per request |\n|---|---|---|---|")
        compile_ms = metrics.get("schemaweaver_compile_ms_total", 0)
        print(f"| {metrics.get('schemaweaver_tool_set_hits_total', 0):.0f} | "
              f"{metrics.get('schemaweaver_tool_set_misses_total', 0):.0f} | {compile_ms:.1f} | "
              f"{compile_ms / requests:.3f} |")
    for e in errors[:5]:
        print("error:", e)
    ok = alive and not errors and latencies
    print("load test passed" if ok else "load test FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
