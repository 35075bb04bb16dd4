"""`schemaweaver serve` against the official OpenAI Python client, on the real default model.

Starts the server on a free loopback port, then checks: the model list; a tool call, whole
and streamed in argument deltas (every mode), rebuilt by the client's own stream accumulator; a
text reply, whole and streamed in content deltas, cut by stop strings (a call never is), with
its tokens' logprobs; OpenAI-style 4xx errors for malformed JSON, invalid UTF-8, an unknown tool
in tool_choice and an oversized body, with the server serving on; several clients at once;
prompt prefix reuse and cancellation of a request whose client went away, both seen in /metrics.

    python test_openai_client.py --cli build/apps/cli/schemaweaver --model M.gguf --tools T.json
"""
import json
import socket
import sys
import threading
import time

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState

from server_checks import arguments, check
from serve_harness import http, metric, running_server  # noqa: E402 (server_checks makes it importable)

WEATHER = "What is the weather like in Paris?"


def test_tool_call(client, tools):
    r = client.chat.completions.create(model="any", messages=[{"role": "user", "content": WEATHER}],
                                       tools=tools, tool_choice="required", max_tokens=64)
    choice = r.choices[0]
    check(choice.finish_reason == "tool_calls", f"finish_reason tool_calls: {choice}")
    call = choice.message.tool_calls[0]
    check(call.id.startswith("call_") and call.type == "function", f"call id and type: {call}")
    check(call.function.name == "get_weather", f"the weather tool is called: {call}")
    arguments = json.loads(call.function.arguments)
    check(isinstance(arguments.get("city"), str) and arguments["city"], f"a city argument: {arguments}")
    check(r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, f"usage counted: {r.usage}")


def test_streamed_tool_call(client, tools, mode):
    """Every mode streams its calls in OpenAI's deltas - the id and name first, then pieces of
    the arguments as they are decided (the serial modes token by token, schemaweaver as its
    branches are verified, free decoding whole once the answer parsed) - which the client's own
    stream accumulator joins into exactly the whole response's calls."""
    request = dict(model="any", messages=[{"role": "user", "content": WEATHER}], tools=tools,
                   tool_choice="required", max_tokens=64, extra_body={"x_decoding_mode": mode})
    whole = client.chat.completions.create(**request).choices[0].message.tool_calls
    state = ChatCompletionStreamState()
    roles, heads, pieces = [], [], 0
    for chunk in client.chat.completions.create(**request, stream=True):
        state.handle_chunk(chunk)
        delta = chunk.choices[0].delta
        roles += [delta.role] if delta.role else []
        for call in delta.tool_calls or []:
            if call.id:
                heads.append((call.index, call.function.name))
            pieces += bool(call.function.arguments)
    streamed = state.get_final_completion().choices[0]
    check(roles == ["assistant"], f"one role delta ({mode}): {roles}")
    check(streamed.finish_reason == "tool_calls", f"the stream ends with finish_reason tool_calls ({mode}): {streamed}")
    calls = streamed.message.tool_calls
    check([(c.function.name, c.function.arguments) for c in calls] == [(c.function.name, c.function.arguments) for c in whole],
          f"the accumulated calls are the whole response's ({mode}): {calls} {whole}")
    check(heads == [(i, c.function.name) for i, c in enumerate(whole)] and all(c.id.startswith("call_") for c in calls),
          f"each call's id and name once, in its first delta ({mode}): {heads}")
    if mode in ("jump-forward", "constrained", "speculative"):
        check(pieces > 2, f"the arguments in pieces as they are decided ({mode}): {pieces}")


def test_text_reply(client, tools):
    r = client.chat.completions.create(model="any", messages=[{"role": "user", "content": "Say hello."}],
                                       tools=tools, tool_choice="none", max_tokens=16)
    choice = r.choices[0]
    check(choice.message.tool_calls is None and isinstance(choice.message.content, str),
          f"tool_choice none gives text: {choice}")
    check(choice.finish_reason in ("stop", "length"), f"text finish_reason: {choice.finish_reason}")


def test_streamed_text_reply(client, tools):
    """A reply in text streams in content deltas as it is decided (tool_choice none, and auto's
    choice of text), which joined are the whole response's content."""
    for choice, request in (("none", "Say hello."), ("auto", "Tell me a joke about cats.")):
        messages = [{"role": "user", "content": request}]
        whole = client.chat.completions.create(model="any", messages=messages, tools=tools, tool_choice=choice,
                                               max_tokens=24).choices[0].message
        if whole.tool_calls:
            continue  # auto chose a call: nothing to stream as text
        pieces = [c.choices[0].delta.content for c in client.chat.completions.create(
            model="any", messages=messages, tools=tools, tool_choice=choice, max_tokens=24, stream=True)
            if c.choices and c.choices[0].delta.content]
        check(len(pieces) > 1 and "".join(pieces) == whole.content,
              f"{choice}: a text reply streams in {len(pieces)} content deltas equal to the whole: {pieces[:4]}")


def test_stop(client, tools):
    """A reply in text ends before the first stop string it writes, whole and streamed; a call is
    never cut by one."""
    messages = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]
    whole = client.chat.completions.create(model="any", messages=messages, max_tokens=32).choices[0].message.content
    stop = whole[len(whole) // 2:len(whole) // 2 + 3]
    expected = whole[:whole.find(stop)]
    r = client.chat.completions.create(model="any", messages=messages, max_tokens=32, stop=[stop, "never written"])
    check(r.choices[0].message.content == expected and r.choices[0].finish_reason == "stop",
          f"a reply ends before its stop string {stop!r}: {r.choices[0].message.content!r}")
    pieces = [c.choices[0].delta.content for c in client.chat.completions.create(
        model="any", messages=messages, max_tokens=32, stop=stop, stream=True) if c.choices and c.choices[0].delta.content]
    check("".join(pieces) == expected, f"streamed, the same: {pieces}")
    r = client.chat.completions.create(model="any", messages=[{"role": "user", "content": WEATHER}], tools=tools,
                                       tool_choice="required", max_tokens=64, stop=["Paris", "{"])
    arguments = json.loads(r.choices[0].message.tool_calls[0].function.arguments)
    check(r.choices[0].finish_reason == "tool_calls" and arguments, f"a call is not cut by stop strings: {arguments}")


def test_logprobs(client, tools):
    """logprobs and top_logprobs of a reply in text, as OpenAI gives them: the tokens spell the
    content (their bytes exactly), the alternatives come likeliest first; streamed, the client's
    accumulator rebuilds the same list. A call has none."""
    request = dict(model="any", messages=[{"role": "user", "content": "Say hello."}], tools=tools, tool_choice="none",
                   max_tokens=16, logprobs=True, top_logprobs=2)
    whole = client.chat.completions.create(**request).choices[0]
    tokens = whole.logprobs.content
    check(b"".join(bytes(t.bytes) for t in tokens).decode() == whole.message.content,
          f"the tokens' bytes spell the reply: {[t.token for t in tokens]}")
    check(all(len(t.top_logprobs) == 2 and t.logprob <= 0 and t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
              for t in tokens), f"each token weighed, its alternatives likeliest first: {tokens[0]}")
    state = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(**request, stream=True):
        state.handle_chunk(chunk)
    streamed = state.current_completion_snapshot.choices[0].logprobs.content  # (cut at max_tokens: no final)
    check([(t.token, t.logprob) for t in streamed] == [(t.token, t.logprob) for t in tokens],
          f"streamed, the accumulated logprobs are the whole reply's: {len(streamed)} tokens")
    call = client.chat.completions.create(**dict(request, tool_choice="required", max_tokens=64)).choices[0]
    check(call.message.tool_calls and call.logprobs is None, f"a call has no logprobs: {call.logprobs}")


def test_errors(client, base, tools, max_body):
    try:
        client.chat.completions.create(model="any", messages=[{"role": "user", "content": WEATHER}], tools=tools,
                                       tool_choice={"type": "function", "function": {"name": "no_such_tool"}})
        raise AssertionError("an unknown tool in tool_choice was accepted")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.body.get("param") == "tool_choice", f"unknown tool: 400 naming tool_choice: {e.body}")
    json_headers = {"Content-Type": "application/json"}
    status, body = http(base, "POST", "/v1/chat/completions", b'{"messages": [', json_headers)
    check(status == 400 and "error" in json.loads(body), f"malformed JSON: 400 with an error body: {status} {body}")
    status, body = http(base, "POST", "/v1/chat/completions",
                        b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', json_headers)
    check(status == 400 and "error" in json.loads(body), f"invalid UTF-8: 400: {status} {body}")
    status, body = http(base, "POST", "/v1/chat/completions",
                        json.dumps({"messages": [{"role": "user", "content": 7}]}).encode(), json_headers)
    check(status == 400 and json.loads(body)["error"]["param"] == "messages[0].content", f"wrong type: 400: {body}")
    status, _ = http(base, "POST", "/v1/chat/completions", b"x" * (max_body + 1), json_headers)
    check(status == 413, f"oversized body: 413: {status}")
    status, body = http(base, "GET", "/v1/chat/completions")
    check(status == 405 and "POST" in json.loads(body)["error"]["message"], f"wrong method: 405: {status} {body}")
    port = int(base.rsplit(":", 1)[1])
    for length, expected in (("-5", 400), ("100000000000000000000", 413), (str(max_body + 1), 413)):
        check(bad_content_length_status(port, length) == expected, f"Content-Length {length}: {expected} at once")
    status, body = http(base, "GET", "/health")
    check(status == 200, f"still serving after bad requests: {status} {body}")


def bad_content_length_status(port, length):
    """The status of a request whose Content-Length is `length`, answered before any body is sent;
    None if no reply comes within 5 s."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(5)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + length.encode() + b"\r\n\r\n")
        try:
            return int(s.recv(1024).split(b" ", 2)[1])
        except (socket.timeout, IndexError, ValueError):
            return None


def test_clients_at_once(client, tools):
    results, errors = [], []

    def ask(city):
        try:
            r = client.chat.completions.create(model="any", tools=tools, tool_choice="required", max_tokens=64,
                                               messages=[{"role": "user", "content": f"Weather in {city}?"}])
            results.append(r.choices[0].message.tool_calls[0].function.name)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=ask, args=(city,)) for city in ("Rome", "Oslo", "Lima")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors and len(results) == 3, f"three clients at once all answered: {results} {errors}")


def test_prefix_reuse(base):
    check(metric(base, "schemaweaver_prompt_reused_tokens_total") > 0,
          "prompt prefix reused: repeated tools came from the KV cache")


def test_tool_sets_kept(base):
    # Every request so far that reached the engine sent the same tools: one compiled set, found
    # again by the five requests after the first.
    misses = metric(base, "schemaweaver_tool_set_misses_total")
    hits = metric(base, "schemaweaver_tool_set_hits_total")
    check(misses == 1 and hits >= 5, f"compiled tool sets kept between requests: {misses} misses, {hits} hits")


def test_cancel_on_disconnect(base, port):
    before = metric(base, "schemaweaver_calls_cancelled_total")
    body = json.dumps({"messages": [{"role": "user", "content": "Write a long story about a lighthouse."}],
                       "max_tokens": 400, "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.recv(1024)  # the stream has started
    deadline = time.time() + 30
    while time.time() < deadline and metric(base, "schemaweaver_calls_cancelled_total") == before:
        time.sleep(0.2)
    check(metric(base, "schemaweaver_calls_cancelled_total") == before + 1, "a client that went away is cancelled")


def main():
    args, tools = arguments(model="the default model")
    max_body = 65536
    with running_server(args.cli, args.model, "--slots", 2, "--max-body", max_body, "--timeout", 120,
                        quiet=False) as (server, base, port):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
        check(client.models.list().data[0].id != "", "model list")
        test_tool_call(client, tools)
        for mode in ("schemaweaver", "jump-forward", "constrained", "speculative", "schemaweaver/branches"):
            test_streamed_tool_call(client, tools, mode)
        test_text_reply(client, tools)
        test_streamed_text_reply(client, tools)
        test_errors(client, base, tools, max_body)
        test_clients_at_once(client, tools)
        test_prefix_reuse(base)
        test_tool_sets_kept(base)
        test_stop(client, tools)  # after the count of tool sets: it asks without tools too
        test_logprobs(client, tools)
        test_cancel_on_disconnect(base, port)
        check(server.poll() is None, "the server is still running")
    print("all server checks passed")


if __name__ == "__main__":
    sys.exit(main())
