"""tool_choice "auto" over HTTP with the official OpenAI client, on real models: every form in
which the models here begin a call comes back as tool_calls, and a question that wants text
still gets text.

Each case first asks with tool_choice "none", which returns the model's own free text: its
beginning must be the case's form (the precondition, reported if it does not hold). The same
request without tool_choice (auto, what every OpenAI client sends) must then return the call,
with finish_reason "tool_calls" and no fence or other text as content, whole and streamed.

    python test_tool_choice_auto.py --cli build/apps/cli/schemaweaver --models DIR --tools T.json
"""
import json
import re
import sys
from pathlib import Path

import jsonschema
import openai

from server_checks import arguments, check
from serve_harness import running_server  # noqa: E402 (server_checks makes it importable)

QWEN_05B = "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"
QWEN_15B = "qwen2.5-coder-1.5b-instruct-Q4_K_M.gguf"
OSLO = "What is the weather like in Oslo?"

# How each form begins; text begins as none of them.
FORMS = {
    "fenced block": r"\s*```\w*\s*[\[{]",
    "bare JSON": r"\s*\[?\s*\{\s*\"name\"\s*:\s*\"get_weather\"",
    "doubled braces": r"\s*\{\{\s*\"name\"\s*:\s*\"get_weather\"",
    "python-like call": r"\s*\[?get_weather\(",
}


def form_of(text):
    return next((form for form, pattern in FORMS.items() if re.match(pattern, text)), "text")

# (model, form, system message, user message): the smallest model that writes each form.
CASES = [
    (QWEN_05B, "fenced block", None, OSLO),
    (QWEN_05B, "bare JSON", "Answer with bare JSON only, never in a code block.", OSLO),
    (QWEN_15B, "python-like call", 'Reply with one line of the form get_weather(city="...") and nothing else.',
     "Weather in Oslo?"),
    (QWEN_05B, "text", None, "Tell me a joke"),
    # Qwen2.5's template prints its example call with doubled braces, and the 1.5B copies them.
    (QWEN_15B, "doubled braces", "Use tools to answer.", OSLO),
]



def messages_of(system, user):
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


def run_case(client, tools, form, system, user):
    messages = messages_of(system, user)
    free = client.chat.completions.create(model="any", messages=messages, tools=tools, tool_choice="none",
                                          max_tokens=48)
    text = free.choices[0].message.content or ""
    check(form_of(text) == form, f"precondition, the model's own text is a {form}: {text!r}")
    auto = client.chat.completions.create(model="any", messages=messages, tools=tools, max_tokens=64)
    choice = auto.choices[0]
    if form == "text":
        check(choice.finish_reason == "stop" and not choice.message.tool_calls and choice.message.content,
              f"auto answers a question that wants text in text: {choice}")
        return
    check(choice.finish_reason == "tool_calls", f"auto turns a {form} into a call: {choice}")
    check(not choice.message.content, f"no fence or other text as content ({form}): {choice.message.content!r}")
    call = choice.message.tool_calls[0]
    arguments = json.loads(call.function.arguments)
    check(call.function.name == "get_weather" and arguments.get("city") == "Oslo", f"the call ({form}): {call}")
    # Streamed: the same call, assembled from the deltas.
    name, streamed_arguments, finish = "", "", None
    for chunk in client.chat.completions.create(model="any", messages=messages, tools=tools, max_tokens=64,
                                                stream=True):
        delta = chunk.choices[0].delta
        for piece in delta.tool_calls or []:
            name += piece.function.name or ""
            streamed_arguments += piece.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    check(name == "get_weather" and json.loads(streamed_arguments) == arguments and finish == "tool_calls",
          f"the streamed call equals the whole one ({form}): {name} {streamed_arguments} {finish}")


# A response_format beside the tools: the model calls, or answers in the schema instead of text.
JOKE = {"type": "object", "properties": {"setup": {"type": "string", "maxLength": 120},
                                         "punchline": {"type": "string", "maxLength": 120}},
        "required": ["setup", "punchline"], "additionalProperties": False}


def with_response_format(client, tools):
    """Under auto with a response_format, the weather question is still a call, and the request
    for a joke - text without the schema - is the schema's object, whole and streamed."""
    body = {"type": "json_schema", "json_schema": {"name": "joke", "schema": JOKE, "strict": True}}
    r = client.chat.completions.create(model="any", messages=messages_of(None, OSLO), tools=tools, max_tokens=64,
                                       response_format=body)
    choice = r.choices[0]
    check(choice.finish_reason == "tool_calls" and choice.message.tool_calls[0].function.name == "get_weather"
          and not choice.message.content, f"a response_format beside tools: the weather is still a call: {choice}")
    for mode in ("jump-forward", "schemaweaver"):
        r = client.chat.completions.create(model="any", messages=messages_of(None, "Tell me a joke"), tools=tools,
                                           max_tokens=128, response_format=body, extra_body={"x_decoding_mode": mode})
        choice = r.choices[0]
        jsonschema.validate(json.loads(choice.message.content), JOKE)
        check(choice.finish_reason == "stop" and not choice.message.tool_calls,
              f"and a joke is the schema's object ({mode}): {choice.message.content}")
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
        model="any", messages=messages_of(None, "Tell me a joke"), tools=tools, max_tokens=128, response_format=body,
        stream=True, extra_body={"x_decoding_mode": "schemaweaver"}))
    check(streamed == choice.message.content, f"streamed, the same object: {streamed}")


PARIS = "What is the weather like in Paris?"
ANSWERED = [{"role": "user", "content": PARIS},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "celsius"})}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 degrees"}]


def repeated_call(client, tools):
    """After the tool's result the 0.5B calls the same tool with the same arguments again: the
    response says so (x_repeated_calls), and "answer" - the server's default here (serve
    --repeated-calls answer), "keep" asked for by the request - makes it a reply in text that
    opens no call, whole and streamed."""
    kept = client.chat.completions.create(model="any", messages=ANSWERED, tools=tools, max_tokens=64,
                                          extra_body={"x_repeated_calls": "keep"})
    repeats = kept.model_extra["x_repeated_calls"]
    check(kept.choices[0].message.tool_calls and repeats == {"calls": 1, "answered_instead": False},
          f"precondition, the model calls get_weather(Paris) again, counted: {kept.choices[0].message} {repeats}")
    answered = client.chat.completions.create(model="any", messages=ANSWERED, tools=tools, max_tokens=64)
    choice = answered.choices[0]
    check(not choice.message.tool_calls and choice.message.content and form_of(choice.message.content) == "text"
          and answered.model_extra["x_repeated_calls"] == {"calls": 1, "answered_instead": True},
          f"x_repeated_calls answer: a reply in text instead: {choice.message.content!r}")
    streamed, calls = "", 0
    for chunk in client.chat.completions.create(model="any", messages=ANSWERED, tools=tools, max_tokens=64,
                                                stream=True, extra_body={"x_repeated_calls": "answer"}):
        delta = chunk.choices[0].delta
        streamed += delta.content or ""
        calls += len(delta.tool_calls or [])
    check(streamed == choice.message.content and calls == 0, f"streamed, the same text and no call delta: {streamed!r}")
    first = client.chat.completions.create(model="any", messages=ANSWERED[:1], tools=tools, max_tokens=64, stream=True,
                                           extra_body={"x_repeated_calls": "answer"})
    names = [piece.function.name for chunk in first for piece in chunk.choices[0].delta.tool_calls or []
             if piece.function.name]
    check(names == ["get_weather"], f"a call that repeats nothing still streams, once it stands: {names}")
    required = client.chat.completions.create(model="any", messages=ANSWERED, tools=tools, tool_choice="required",
                                              max_tokens=64)
    check(required.choices[0].message.tool_calls, f"under required the server's default does not apply: {required}")
    refused = client.chat.completions.with_raw_response.create
    try:
        refused(model="any", messages=ANSWERED, tools=tools, tool_choice="required",
                extra_body={"x_repeated_calls": "answer"})
        check(False, "x_repeated_calls answer under required is refused")
    except openai.BadRequestError as e:
        check("x_repeated_calls" in str(e), f"x_repeated_calls answer under required is refused: {e}")


AGENT_SYSTEM = "You are a helpful assistant. Use the tools to look things up, then answer the user."


def one_call_after_the_result(client, tools):
    """After the tool's result the 1.5B, left free, writes its call once (in doubled braces) and
    ends. Decoded as a call, it must end there too: one call, in every mode - not, made to go on
    after the call's closing tag (where it begins a <tool_response> of its own), call after call
    until max_tokens."""
    messages = [{"role": "system", "content": AGENT_SYSTEM}] + ANSWERED
    free = client.chat.completions.create(model="any", messages=messages, tools=tools, tool_choice="none",
                                          max_tokens=64)
    text = free.choices[0].message.content or ""
    check(form_of(text) != "text" and free.choices[0].finish_reason == "stop",
          f"precondition, the model's own text is one call, ended: {text!r}")
    for mode in ("constrained", "jump-forward", "schemaweaver"):
        r = client.chat.completions.create(model="any", messages=messages, tools=tools, max_tokens=128,
                                           extra_body={"x_decoding_mode": mode})
        calls = r.choices[0].message.tool_calls or []
        check(r.choices[0].finish_reason == "tool_calls" and len(calls) == 1 and calls[0].function.name == "get_weather",
              f"one call after the result, the turn ended where the model ends it ({mode}): {r.choices[0]}")


def main():
    args, tools = arguments(models="the folder of the fetched models")
    for model in sorted({case[0] for case in CASES}):
        flags = ["--repeated-calls", "answer"] if model == QWEN_05B else []
        with running_server(args.cli, Path(args.models) / model, "--timeout", 300, *flags) as (server, base, _):
            client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)
            for _, form, system, user in (case for case in CASES if case[0] == model):
                run_case(client, tools, form, system, user)
            if model == QWEN_05B:
                with_response_format(client, tools)
                repeated_call(client, tools)
            if model == QWEN_15B:
                one_call_after_the_result(client, tools)
            check(server.poll() is None, f"the server on {model} is still running")
    print("all tool_choice auto checks passed")


if __name__ == "__main__":
    sys.exit(main())
