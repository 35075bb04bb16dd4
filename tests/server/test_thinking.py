"""Thinking over HTTP with the official OpenAI client, as llama-server takes it: a reasoning
template's block turned on by chat_template_kwargs' enable_thinking, its length bounded by
thinking_budget_tokens, what the model reasoned returned as reasoning_content.

On a tiny random-weight Qwen3 (its real template; the reasoning is nonsense, the syntax is not):
  - whole: reasoning_content and the call, the same as `schemaweaver call --thinking N` gives
    for the same request (and that one llama.cpp's parser agrees with: cli.family_qwen3-thinking);
  - streamed: one reasoning_content delta equal to the whole answer's, before any call;
  - thinking off (no kwargs, or a budget alone): no reasoning_content;
  - tool_choice auto: the block is a prelude, never content.
And refusals by name: thinking on a model whose template has no block (SmolLM2), template kwargs
that are not an object, a budget that is not an integer.

    python test_thinking.py --cli build/apps/cli/schemaweaver --model qwen3.gguf --plain M.gguf --tools family_tools.json
"""
import json
import subprocess
import sys

import openai

from server_checks import arguments, check
from serve_harness import running_server  # noqa: E402 (server_checks makes it importable)

# The family check's tool and request: every value bounded, so random weights finish a call.
WEATHER = [{"role": "user", "content": "Book a table for two at Luigi's tomorrow at 7pm, by the window."}]
MAX_TOKENS = 300
BUDGET = 5
THINKING = {"chat_template_kwargs": {"enable_thinking": True}, "thinking_budget_tokens": BUDGET}



def expect_400(call, param, what):
    try:
        result = call()
        raise AssertionError(f"{what}: answered as a success: {result}")
    except openai.BadRequestError as e:
        text = json.dumps(e.body)
        check(param in text, f"{what}: 400 naming {param}: {text}")


def cli_answer(args):
    out = subprocess.run([args.cli, "call", "-m", args.model, "--tools", args.tools, "-p", WEATHER[0]["content"],
                          "--thinking", str(BUDGET), "-n", str(MAX_TOKENS), "--max-calls", "1", "--json", "--no-prompt-cache"],
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_thinking(client, tools, expected):
    whole = client.chat.completions.create(model="any", messages=WEATHER, tools=tools, tool_choice="required",
                                           max_tokens=MAX_TOKENS, parallel_tool_calls=False, extra_body=THINKING)
    message = whole.choices[0].message
    reasoning = getattr(message, "reasoning_content", None)
    check(reasoning == expected["reasoning"], f"whole: the CLI's reasoning: {reasoning!r} vs {expected['reasoning']!r}")
    calls = [{"name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in message.tool_calls]
    check(calls == expected["calls"], f"whole: the CLI's calls after the thinking: {calls}")

    deltas = []
    for chunk in client.chat.completions.create(model="any", messages=WEATHER, tools=tools, tool_choice="required",
                                                max_tokens=MAX_TOKENS, parallel_tool_calls=False,
                                                extra_body=THINKING, stream=True):
        delta = chunk.choices[0].delta
        if getattr(delta, "reasoning_content", None) is not None:
            deltas.append(("reasoning", delta.reasoning_content))
        if delta.tool_calls:
            deltas.append(("call", delta.tool_calls[0].function.name))
    kinds = [kind for kind, _ in deltas]
    check(kinds[:1] == ["reasoning"] and kinds.count("reasoning") == 1 and "call" in kinds,
          f"streamed: one reasoning delta, before the calls: {kinds}")
    check(deltas[0][1] == reasoning, f"streamed: the whole answer's reasoning: {deltas[0][1]!r}")

    for label, extra in [("no kwargs", {}), ("a budget alone", {"thinking_budget_tokens": BUDGET})]:
        plain = client.chat.completions.create(model="any", messages=WEATHER, tools=tools, tool_choice="required",
                                               max_tokens=MAX_TOKENS, parallel_tool_calls=False, extra_body=extra)
        check(getattr(plain.choices[0].message, "reasoning_content", None) is None,
              f"thinking off ({label}): no reasoning_content")

    auto = client.chat.completions.create(model="any", messages=WEATHER, tools=tools, max_tokens=MAX_TOKENS,
                                          parallel_tool_calls=False, extra_body=THINKING)
    content = auto.choices[0].message.content or ""
    check("think>" not in content and auto.choices[0].message.reasoning_content is not None,
          f"auto: the block is a prelude, not content: {content[:80]!r}")

    expect_400(lambda: client.chat.completions.create(
        model="any", messages=WEATHER, tools=tools, extra_body={"chat_template_kwargs": [True]}),
        "chat_template_kwargs", "template kwargs that are not an object")
    expect_400(lambda: client.chat.completions.create(
        model="any", messages=WEATHER, tools=tools, extra_body={**THINKING, "thinking_budget_tokens": "many"}),
        "thinking_budget_tokens", "a budget that is not an integer")


def main():
    args, tools = arguments(model="a model whose template has a thinking block", plain="a model whose template has none")
    expected = cli_answer(args)
    check(not expected["error"] and expected["thinking_text"], f"the CLI thinks and calls: {expected['thinking_text']!r}")
    with running_server(args.cli, args.model, "--no-prompt-cache") as (_, base, _port):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)
        check_thinking(client, tools, expected)
    with running_server(args.cli, args.plain) as (_, base, _port):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)
        try:
            client.chat.completions.create(model="any", messages=WEATHER, tools=tools, extra_body=THINKING)
            raise AssertionError("thinking on a template without a block answered as a success")
        except openai.BadRequestError as e:
            check("no thinking block" in json.dumps(e.body), f"no block in the template: 400: {e.body}")
    print("all thinking checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
