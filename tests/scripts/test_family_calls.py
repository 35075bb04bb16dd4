#!/usr/bin/env python3
"""A model family's calls, checked against llama.cpp's own reading of its chat template.

For one model (a tiny random-weight model made from a family's vocabulary and real template), in
every grammar mode under tool_choice required and auto (and as a list where the family's syntax
holds one):
  - the prompt the engine renders equals the one llama.cpp's chat library renders for the same
    message, tools and tool choice (`schemaweaver parse --print-prompt`), byte for byte;
  - the text the engine writes, read by llama.cpp's parser for that template (`schemaweaver
    parse`), holds exactly the calls the engine reports (or, for a reply in text, no call);
  - SchemaWeaver's calls equal jump-forward's (the serial reference).
With --thinking N the template's thinking block is on: the model reasons up to N tokens first,
and llama.cpp's parser must read from the whole output (block and answer) the reasoning the
engine reports as well as the calls.
With --channels the family answers text inside channels of its own (gpt-oss): a text reply under
auto that llama.cpp's parser refuses (random weights write no channel) counts as holding no call.
With --fallback the family's template gives no call syntax this library writes: `info` must say
so and why, and the calls must still come, in the library's own format.

Then the turn after tool results: the calls the engine made fed back as an OpenAI conversation -
its assistant turns with the calls and their ids, a tool message answering each id, two rounds -
must render as llama.cpp renders that request when it reads the messages itself, as llama-server
does (`schemaweaver parse --messages`), byte for byte; and the next turn, decoded under auto, is
read back by llama.cpp's parser as the engine reports it.

Random weights write nonsense values, but every value stands under the tool's schema, so the
check is of the syntax: markers, names, quoting, separators, reasoning blocks.
"""
import argparse
import json
import subprocess
import sys
import tempfile

PROMPT = "Book a table for two at Luigi's tomorrow at 7pm, by the window."


def run(command, check=True):
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(command)} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result


def thinking_options(args):
    return ["--thinking", str(args.thinking)] if args.thinking else []


def engine_call(args, mode, tool_choice, messages=None):
    asked = ["--messages", messages] if messages else ["-p", PROMPT]
    command = [args.cli, "call", "-m", args.model, "--tools", args.tools] + asked + ["--mode", mode,
               "--tool-choice", tool_choice, "--max-calls", "2", "-n", str(args.max_tokens), "--json", "--print-prompt",
               "--no-prompt-cache"] + thinking_options(args)
    result = run(command)
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


# A decision by less than this many logits may go either way on other pass shapes (kernel
# rounding): two modes' answers must agree up to the first such decision of either.
NEAR_TIE = 0.1


def first_near_tie(answer):
    """The offset of the first near-tie decision of an answer, or None."""
    ties = [offset for offset, margin in answer["decisions"] if margin is not None and margin < NEAR_TIE]
    return min(ties) if ties else None


def llama_parse(args, text, tool_choice, messages=None):
    asked = ["--messages", messages] if messages else ["-p", PROMPT]
    command = [args.cli, "parse", "-m", args.model, "--tools", args.tools] + asked + ["--tool-choice",
               tool_choice, "--print-prompt"] + (["--thinking"] if args.thinking else [])
    result = subprocess.run(command, input=text, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return None, result.stderr
    return json.loads(result.stdout), result.stderr


def conversation(calls):
    """The request, then two rounds of `calls` (ids of nine characters, as Mistral's templates
    require), each answered by a tool message per call."""
    messages = [{"role": "user", "content": PROMPT}]
    for round_ in range(2):
        ids = [f"call{round_}{i:04d}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": id_, "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for id_, c in zip(ids, calls)]})
        messages += [{"role": "tool", "tool_call_id": id_, "content": json.dumps({"ok": True, "round": round_})}
                     for id_ in ids]
    return messages


def after_tool_results(args, calls, failures):
    """The turn after the tools answered: the prompt as llama.cpp renders the same request, and
    the next answer (auto) as its parser reads it."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(conversation(calls), f)
    answer, ours = engine_call(args, "jump-forward", "auto", f.name)
    parsed, theirs = llama_parse(args, answer["thinking_text"] + answer["text"], "auto", f.name)
    label = f"the turn after {len(calls)} call(s) answered, twice"
    refused_text = parsed is None and args.channels and not answer["calls"]
    if refused_text:  # a reply outside the channels: llama.cpp refuses it after printing the prompt
        theirs = theirs[:theirs.rfind("\nerror: ")] + "\n"
    if answer["error"]:
        failures.append(f"{label}: the engine failed: {answer['error']}")
    elif parsed is None and not refused_text:
        failures.append(f"{label}: llama.cpp refuses the conversation or the answer: {theirs[-500:]}")
    elif ours != theirs:
        failures.append(f"{label}: the prompt differs from llama.cpp's:\n--- ours\n{ours[-3000:]}\n"
                        f"--- llama.cpp\n{theirs[-3000:]}")
    elif not refused_text and \
            [{"name": c["name"], "arguments": c["arguments"]} for c in parsed["tool_calls"]] != answer["calls"]:
        failures.append(f"{label}: llama.cpp reads {parsed['tool_calls']}, the engine reports {answer['calls']}")
    else:
        print(f"{label}: the prompt is llama.cpp's; the next turn is "
              f"{'a call' if answer['calls'] else 'text'}, read back alike")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--fallback", action="store_true",
                        help="the family's template gives no syntax written here: the library's own format")
    parser.add_argument("--list", action="store_true", help="the family's syntax holds a list of calls")
    parser.add_argument("--channels", action="store_true",
                        help="text answers stand in channels (gpt-oss's <|channel|>final<|message|>), which random "
                             "weights do not write: a text reply llama.cpp's parser refuses holds no call either")
    parser.add_argument("--thinking", type=int, default=0, help="the thinking block on, with this budget in tokens")
    parser.add_argument("--max-tokens", type=int, default=300,
                        help="per answer (random weights reply in text to this length under auto)")
    args = parser.parse_args()

    info = run([args.cli, "info", "-m", args.model]).stdout
    format_line = next(line for line in info.splitlines() if line.startswith("call format:"))
    print(format_line)
    print(next(line for line in info.splitlines() if line.startswith("a call:")))
    if args.fallback != ("the library's instruction" in format_line):
        raise SystemExit(f"FAIL: expected {'a fallback' if args.fallback else 'the template'} format: {format_line}")

    failures = []
    modes = ["constrained", "jump-forward", "schemaweaver"] + (["jump-forward/list", "schemaweaver/list"] if args.list else [])
    for tool_choice in ["required", "auto"]:
        answers = {}
        for mode in modes:
            answer, engine_prompt = engine_call(args, mode, tool_choice)
            label = f"{mode} under {tool_choice}"
            if answer["error"]:
                failures.append(f"{label}: the engine failed: {answer['error']}")
                continue
            calls = answer["calls"]
            answers[mode] = answer
            print(f"{label}: {len(calls)} call(s) in {answer['stats']['call_passes']} passes, "
                  f"text {json.dumps(answer['text'])[:160]}")
            if args.fallback:
                if not calls and tool_choice == "required":
                    failures.append(f"{label}: no call")
                continue
            if args.thinking and not answer["thinking_text"]:
                failures.append(f"{label}: no thinking block")
            parsed, parse_prompt = llama_parse(args, answer["thinking_text"] + answer["text"], tool_choice)
            if parsed is not None and parse_prompt != engine_prompt:
                failures.append(f"{label}: the prompt differs from llama.cpp's:\n--- ours\n{engine_prompt[:3000]}\n"
                                f"--- llama.cpp\n{parse_prompt[:3000]}")
            if parsed is None and args.channels and not calls and tool_choice == "auto":
                print(f"{label}: a reply in text outside the template's channels, which llama.cpp reads as no call")
                continue
            if parsed is None:
                failures.append(f"{label}: llama.cpp's parser refuses the text: {parse_prompt[-500:]}")
                continue
            theirs = [{"name": c["name"], "arguments": c["arguments"]} for c in parsed["tool_calls"]]
            if theirs != calls:
                failures.append(f"{label}: llama.cpp reads {theirs}, the engine reports {calls}")
            if parsed["reasoning_content"] != answer["reasoning"]:
                failures.append(f"{label}: llama.cpp reads the reasoning {json.dumps(parsed['reasoning_content'])}, "
                                f"the engine reports {json.dumps(answer['reasoning'])}")
        for list_suffix in ["", "/list"]:
            serial, woven = answers.get("jump-forward" + list_suffix), answers.get("schemaweaver" + list_suffix)
            if serial is None or woven is None:
                continue
            ties = [t for t in (first_near_tie(serial), first_near_tie(woven)) if t is not None]
            decided = min(ties) if ties else None
            label = f"schemaweaver{list_suffix} under {tool_choice}"
            if decided is None and serial["text"] != woven["text"] or \
                    decided is not None and serial["text"][:decided] != woven["text"][:decided]:
                failures.append(f"{label}: {json.dumps(woven['text'])} where jump-forward writes "
                                f"{json.dumps(serial['text'])} (decided up to byte {decided})")
        if tool_choice == "required" and not args.fallback and answers.get("jump-forward", {}).get("calls"):
            after_tool_results(args, answers["jump-forward"]["calls"], failures)
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        return 1
    print("family calls come in the library's format" if args.fallback else "family calls agree with llama.cpp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
