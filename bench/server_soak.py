#!/usr/bin/env python3
"""A soak test of `schemaweaver serve`: for each model, N clients on loopback for a long time,
mixing whole and streamed tool calls, text replies, clients that hang up in the middle of a
response, and bad requests (malformed JSON, an unknown tool, a bad schema, an oversized body,
a wrong method, a Content-Length that lies). Every answer is checked against what that kind of
request must get; anything else is an unexpected error. Reports per model: requests by kind,
unexpected errors by kind, p50/p99 latency of the tool calls, and the server's RSS at the start,
after the first minute and at the end (growth after the first minute, in percent).

    python3 bench/server_soak.py --models SmolLM2-135M-Instruct-Q4_1,qwen2.5-coder-0.5b-instruct-Q4_K_M \\
        [--minutes 10] [--clients 8] [--slots 2] [--out soak.md]

Standard library only. Exits non-zero on an unexpected error, a dead server or RSS growth of
5 % or more after the first minute.
"""
import argparse
import collections
import json
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from serve_harness import running_server

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache/schemaweaver"
CITIES = ["Paris", "Oslo", "Lima", "Rome", "Tokyo", "Madrid", "Cairo", "Quito"]
MAX_BODY = 65536


def post(base, body, timeout=300):
    """(status, text) of a POST to /v1/chat/completions."""
    request = urllib.request.Request(base + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def call_body(tools, city, stream, **extra):
    return json.dumps({"messages": [{"role": "user", "content": f"What is the weather like in {city}?"}],
                       "tools": tools, "tool_choice": "required", "max_tokens": 64, "stream": stream,
                       **extra}).encode()


class Soak:
    def __init__(self, base, port, tools):
        self.base, self.port, self.tools = base, port, tools
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.unexpected = collections.Counter()
        self.examples = {}
        self.latencies = []

    def note(self, kind, problem=None, ms=None):
        with self.lock:
            self.counts[kind] += 1
            if problem:
                self.unexpected[kind] += 1
                self.examples.setdefault(kind, problem[:300])
            if ms is not None:
                self.latencies.append(ms)

    # Each kind of request and the answer it must get.
    def tool_call(self, rng):
        stream = rng.random() < 0.5
        started = time.perf_counter()
        status, text = post(self.base, call_body(self.tools, rng.choice(CITIES), stream))
        ms = (time.perf_counter() - started) * 1000
        # A small model may run on to max_tokens: then 422 / an error event is the right answer.
        if stream:
            ok = status == 200 and (("data: [DONE]" in text and '"tool_calls"' in text) or "max_tokens_reached" in text)
        else:
            ok = status == 200 and '"tool_calls"' in text or status == 422 and "max_tokens_reached" in text
        self.note("call, streamed" if stream else "call, whole", None if ok else f"{status} {text[-200:]}", ms)

    def text_reply(self, rng):
        status, text = post(self.base, json.dumps({"messages": [{"role": "user", "content": "Say hello."}],
                                                   "tools": self.tools, "tool_choice": "none",
                                                   "max_tokens": 16}).encode())
        ok = status == 200 and json.loads(text)["choices"][0]["message"]["content"] is not None
        self.note("text reply", None if ok else f"{status} {text[-200:]}")

    def hang_up(self, rng):
        """A client that sends a request and closes the connection after a moment."""
        body = call_body(self.tools, rng.choice(CITIES), rng.random() < 0.5)
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            time.sleep(rng.uniform(0.05, 1.0))
        self.note("hang-up")

    def bad_request(self, rng):
        cases = [
            ("malformed JSON", lambda: post(self.base, b'{"messages": ['), 400),
            ("unknown tool in tool_choice", lambda: post(self.base, call_body(
                self.tools, "Oslo", False, tool_choice={"type": "function", "function": {"name": "nope"}})), 400),
            ("bad schema", lambda: post(self.base, json.dumps({
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {
                    "type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}}}]}).encode()), 400),
            ("oversized body", lambda: post(self.base, b"x" * (MAX_BODY + 1)), 413),
            ("wrong method", lambda: self.raw(b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n"), 405),
            ("lying Content-Length", lambda: self.raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                                      b"Content-Length: -5\r\n\r\n"), 400),
        ]
        name, send, expected = rng.choice(cases)
        status, text = send()
        self.note(f"bad: {name}", None if status == expected and '"error"' in text else f"{status} {text[-200:]}")

    def raw(self, request):
        """(status, body) of a request sent as bytes: the head, then Content-Length bytes of body."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(request)
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
            head, _, body = reply.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return int(head.split(b" ", 2)[1]), body.decode(errors="replace")

    def client(self, k, stop_at):
        rng = random.Random(k)
        kinds = [self.tool_call] * 6 + [self.text_reply, self.hang_up, self.bad_request, self.bad_request]
        while time.time() < stop_at:
            kind = rng.choice(kinds)
            try:
                kind(rng)
            except Exception as e:  # noqa: BLE001 - every exception is an unexpected error, counted
                self.note(kind.__name__, f"{type(e).__name__}: {e}")


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0


def soak(cli, model, minutes, clients, slots, tools):
    with running_server(cli, model, "--slots", slots, "--max-waiting", clients * 2, "--max-body", MAX_BODY,
                        "--timeout", 120) as (server, base, port):
        run = Soak(base, port, tools)
        rss = {"start": rss_kb(server.pid)}
        stop_at = time.time() + minutes * 60
        threads = [threading.Thread(target=run.client, args=(k, stop_at)) for k in range(clients)]
        for t in threads:
            t.start()
        time.sleep(min(60, minutes * 60))
        rss["after 1 min"] = rss_kb(server.pid)
        for t in threads:
            t.join()
        alive = server.poll() is None
        rss["end"] = rss_kb(server.pid) if alive else 0
    return run, rss, alive


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", default=str(ROOT / "build/apps/cli/schemaweaver"))
    parser.add_argument("--models", default="SmolLM2-135M-Instruct-Q4_1,qwen2.5-coder-0.5b-instruct-Q4_K_M")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    tools = json.loads((ROOT / "examples/weather_tools.json").read_text())
    lines, failed = [], False
    for name in args.models.split(","):
        model = CACHE / "models" / f"{name}.gguf"
        run, rss, alive = soak(args.cli, model, args.minutes, args.clients, args.slots, tools)
        growth = 100.0 * (rss["end"] - rss["after 1 min"]) / max(1, rss["after 1 min"])
        failed = failed or not alive or sum(run.unexpected.values()) > 0 or growth >= 5
        lines += [f"### {name}: {args.clients} clients, {args.slots} slots, {args.minutes:g} min",
                  "", "| requests | of which | unexpected errors |", "|---|---|---|"]
        lines += [f"| {n} | {kind} | {run.unexpected[kind]} |" for kind, n in sorted(run.counts.items())]
        lines += ["", f"Tool calls: p50 {percentile(run.latencies, 50):.0f} ms, p99 {percentile(run.latencies, 99):.0f} ms; "
                  f"server alive at the end: {alive}; RSS {rss['start'] / 1024:.1f} MiB at the start, "
                  f"{rss['after 1 min'] / 1024:.1f} after the first minute, {rss['end'] / 1024:.1f} at the end "
                  f"({growth:+.2f} % after the first minute)."]
        lines += [f"- unexpected, {kind}: {example}" for kind, example in run.examples.items()] + [""]
        print("\n".join(lines[-(len(run.counts) + 8 + len(run.examples)):]), flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    print("soak test passed" if not failed else "soak test FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
