#!/usr/bin/env python3
"""Time to the first call through `schemaweaver serve` when a request repeats the tool set of
the one before (its prompt prefix is in the slot's KV cache) and when it brings another one.

    python3 bench/server_prefix.py --cli build/apps/cli/schemaweaver --model M.gguf [--rounds 5]

Each round sends, on one slot: a request with tool set A, then A again with another question
(the prefix is reused), then tool set B (not reused). It prints the geometric means of the
time from sending a streaming request to the chunk that carries its first call, and the
server's prompt-token counters. Standard library only.
"""
import argparse
import json
import math
import time
import urllib.request
from pathlib import Path

from serve_harness import running_server

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["What is the weather like in Paris?", "Is it raining in Oslo?", "How warm is it in Lima?",
             "Weather in Rome, in celsius?", "What's the weather in Tokyo?", "Is it sunny in Madrid?"]


def time_to_first_call(base, tools, question):
    body = json.dumps({"messages": [{"role": "user", "content": question}], "tools": tools,
                       "tool_choice": "required", "max_tokens": 64, "stream": True}).encode()
    request = urllib.request.Request(base + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data: {") and '"tool_calls"' in line:
                first = time.perf_counter() - start
                response.read()
                return first * 1000
    raise RuntimeError("no call in the stream")


def metrics(base):
    with urllib.request.urlopen(base + "/metrics") as response:
        return {line.split()[0]: float(line.split()[1]) for line in response.read().decode().splitlines()}


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", default=str(ROOT / "build/apps/cli/schemaweaver"))
    parser.add_argument("--model", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tools_a = json.loads((ROOT / "examples/weather_tools.json").read_text())
    tools_b = json.loads((ROOT / "examples/traffic_tools.json").read_text())
    with running_server(args.cli, args.model, "--slots", 1) as (_, base, _port):
        time_to_first_call(base, tools_b, QUESTIONS[0])  # warm-up
        cold, warm, other = [], [], []
        for r in range(args.rounds):
            cold.append(time_to_first_call(base, tools_a, QUESTIONS[r % len(QUESTIONS)]))
            warm.append(time_to_first_call(base, tools_a, QUESTIONS[(r + 1) % len(QUESTIONS)]))
            other.append(time_to_first_call(base, tools_b, QUESTIONS[(r + 2) % len(QUESTIONS)]))
        m = metrics(base)
    print(f"model {Path(args.model).name}, {args.rounds} rounds, time to the first call (geomean ms)")
    print("| request | ms |\n|---|---|")
    print(f"| new tool set (prefix not cached) | {geomean(cold):.1f} |")
    print(f"| same tool set again (prefix reused) | {geomean(warm):.1f} |")
    print(f"| another tool set (prefix not cached) | {geomean(other):.1f} |")
    print(f"saving with the prefix reused: {geomean(cold) / geomean(warm):.2f}x; prompt tokens reused "
          f"{m['schemaweaver_prompt_reused_tokens_total']:.0f} of {m['schemaweaver_prompt_tokens_total']:.0f}")


if __name__ == "__main__":
    main()
