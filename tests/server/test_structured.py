"""Structured outputs from `schemaweaver serve`, through the official OpenAI Python client.

The client's own `chat.completions.parse(response_format=PydanticModel)` sends the model's
strict JSON Schema (nested objects as $defs and $ref) and parses the answer back into the
model; the answer is checked again by the `jsonschema` package. Every mode but free answers;
schemaweaver's object equals jump-forward's (its fields are decoded in parallel branches and
verified against the serial reference); a streamed answer comes in pieces and rebuilds the whole one; an answer cut
by max_tokens ends with finish_reason "length"; what cannot be honoured is refused with a 400
naming the field; a drawn answer (temperature, seed) is reproducible and valid.

    python test_structured.py --cli build/apps/cli/schemaweaver --model M.gguf
"""
import json
import sys
import tempfile
from pathlib import Path

import jsonschema
import openai
from openai.lib._pydantic import to_strict_json_schema
from typing import Annotated

from pydantic import BaseModel, Field

from server_checks import arguments, check
from serve_harness import running_server  # noqa: E402 (server_checks makes it importable)

REQUEST = [{"role": "user", "content": "Anna Berg is 31 and lives in Rome, Italy. She likes chess. Describe her as JSON."}]
MODES = ("schemaweaver", "schemaweaver/branches", "jump-forward", "constrained", "speculative")


# Bounded lengths (maxLength, maxItems): where SchemaWeaver's branches meet a near-tie that
# their pass's arithmetic breaks otherwise than jump-forward's (docs/benchmarks.md, "Why lossless
# modes differ"), SmolLM2 may run on in a string or a list; the bounds keep every answer whole.
Name = Annotated[str, Field(max_length=24)]


class Address(BaseModel):
    city: Name
    country: Name


class Person(BaseModel):
    name: Name
    age: int
    address: Address
    hobbies: list[Name] = Field(max_length=2)


# A flat schema, without near-ties on SmolLM2 for this request: the branches' object must be
# jump-forward's.
FLAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": {
    "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                     "city": {"type": "string", "enum": ["Paris", "Berlin", "Rome"]}},
    "required": ["name", "age", "city"], "additionalProperties": False}}}



def parsed_in_every_mode(client):
    """The parsed object per mode; each valid under the schema the client sent."""
    schema = to_strict_json_schema(Person)
    answers = {}
    for mode in MODES:
        r = client.chat.completions.parse(model="any", messages=REQUEST, response_format=Person, max_tokens=160,
                                          extra_body={"x_decoding_mode": mode})
        message = r.choices[0].message
        check(isinstance(message.parsed, Person) and not message.tool_calls,
              f"{mode} parsed into a Person by the client: {message.parsed}")
        check(r.choices[0].finish_reason == "stop", f"{mode} ends with finish_reason stop: {r.choices[0].finish_reason}")
        jsonschema.validate(json.loads(message.content), schema)
        check(True, f"{mode} valid under jsonschema: {message.content}")
        answers[mode] = message.content
    same = {mode: client.chat.completions.create(model="any", messages=REQUEST, response_format=FLAT, max_tokens=64,
                                                 extra_body={"x_decoding_mode": mode}).choices[0].message.content
            for mode in ("jump-forward", "schemaweaver/branches")}
    check(same["schemaweaver/branches"] == same["jump-forward"],
          f"schemaweaver's fields in branches make jump-forward's object: {same['jump-forward']}")
    return answers


def streamed(client, whole):
    """An object streams in content deltas as its values are decided: jump-forward's rebuilds
    its whole answer exactly; schemaweaver's, told as its branches are verified, is a valid
    object too (compared with the whole answer of a mode without a plan only: SchemaWeaver's plan
    follows the pass costs the server learns, so two of its answers may part at a near-tie)."""
    body = {"type": "json_schema", "json_schema": {"name": "Person", "schema": to_strict_json_schema(Person),
                                                     "strict": True}}
    for mode in ("jump-forward", "schemaweaver"):
        stream = client.chat.completions.create(model="any", messages=REQUEST, response_format=body, max_tokens=160,
                                                stream=True, extra_body={"x_decoding_mode": mode})
        content, finish, calls, pieces = "", None, 0, 0
        for chunk in stream:
            delta = chunk.choices[0].delta
            content += delta.content or ""
            pieces += bool(delta.content)
            calls += len(delta.tool_calls or [])
            finish = chunk.choices[0].finish_reason or finish
        check(pieces > 3 and calls == 0 and finish == "stop", f"the object streams in pieces ({mode}): {pieces}")
        jsonschema.validate(json.loads(content), to_strict_json_schema(Person))
        if mode == "jump-forward":
            check(content == whole, f"the streamed object is the whole one: {content}")


def cut_short(client):
    """An object cut by max_tokens is closed by the shortest text its schema allows: valid under
    jsonschema, and still finish_reason "length" - the client's parse() refuses it as cut."""
    schema = to_strict_json_schema(Person)
    body = {"type": "json_schema", "json_schema": {"name": "Person", "schema": schema}}
    for mode in ("jump-forward", "constrained"):
        r = client.chat.completions.create(model="any", messages=REQUEST, response_format=body, max_tokens=4,
                                           extra_body={"x_decoding_mode": mode})
        choice = r.choices[0]
        jsonschema.validate(json.loads(choice.message.content), schema)
        check(choice.finish_reason == "length",
              f"an object cut by max_tokens is closed, valid, with finish_reason length ({mode}): "
              f"{choice.message.content!r}")
    try:
        client.chat.completions.parse(model="any", messages=REQUEST, response_format=Person, max_tokens=4,
                                      extra_body={"x_decoding_mode": "jump-forward"})
        check(False, "the client's parse() takes a cut object")
    except openai.LengthFinishReasonError:
        check(True, "the client's parse() refuses a cut object (finish_reason length)")


def refused(client, tools):
    def status_and_param(**kwargs):
        try:
            client.chat.completions.create(model="any", messages=REQUEST, max_tokens=32, **kwargs)
        except openai.BadRequestError as e:
            return e.status_code, e.body.get("param"), e.body.get("message", "")
        return 200, None, ""

    person = {"type": "json_schema", "json_schema": {"name": "Person", "schema": to_strict_json_schema(Person)}}
    only_empty = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object",
                                                                               "additionalProperties": False}}}
    status, param, message = status_and_param(response_format=only_empty)
    check(status == 400 and param == "response_format.json_schema.schema" and "{}" in message,
          f"a root that admits only {{}} refused with its path: {status} {param} {message}")
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"a": {"type": "string", "not": {"const": "b"}}}}}}
    status, param, message = status_and_param(response_format=bad)
    check(status == 400 and param == "response_format.json_schema.schema" and "not" in message,
          f"an unsupported keyword refused with its path: {status} {param} {message}")
    status, _, message = status_and_param(response_format=person, extra_body={"x_decoding_mode": "free"})
    check(status == 400 and "free" in message, f"the free mode refuses a schema: {status} {message}")
    status, _, message = status_and_param(response_format=person, logprobs=True)
    check(status == 400 and "logprobs" in message, f"logprobs of an answer in a schema refused: {status} {message}")


def with_tools(client, tools):
    schema = to_strict_json_schema(Person)
    body = {"type": "json_schema", "json_schema": {"name": "Person", "schema": schema}}
    # (The client's parse() takes strict tools only; the weather tool is not.)
    r = client.chat.completions.create(model="any", messages=REQUEST, response_format=body, tools=tools,
                                       tool_choice="none", max_tokens=160)
    message = r.choices[0].message
    jsonschema.validate(json.loads(message.content), schema)
    check(not message.tool_calls, "tool_choice none with tools answers in the schema")
    r = client.chat.completions.create(model="any", messages=[{"role": "user", "content": "Weather in Paris?"}],
                                       tools=tools, tool_choice="required", max_tokens=64, response_format=body)
    check(r.choices[0].message.tool_calls and r.choices[0].finish_reason == "tool_calls",
          "tool_choice required with a schema makes a call")
    # Under auto the model calls or answers in the schema: SmolLM2 answers this request in words,
    # so its answer is a Person (Qwen2.5-Coder's calls under auto with a schema:
    # test_tool_choice_auto.py). Streamed, the content rebuilds the whole answer.
    weather = [{"role": "user", "content": "What is the weather in Paris?"}]
    for mode in ("jump-forward", "schemaweaver"):
        r = client.chat.completions.create(model="any", messages=weather, tools=tools, response_format=body,
                                           max_tokens=160, extra_body={"x_decoding_mode": mode})
        message = r.choices[0].message
        jsonschema.validate(json.loads(message.content), schema)
        check(not message.tool_calls and r.choices[0].finish_reason == "stop",
              f"tool_choice auto with a schema: no call, the answer in the schema ({mode}): {message.content}")
        stream = client.chat.completions.create(model="any", messages=weather, tools=tools, response_format=body,
                                                max_tokens=160, stream=True, extra_body={"x_decoding_mode": mode})
        content, calls = "", 0
        for chunk in stream:
            content += chunk.choices[0].delta.content or ""
            calls += len(chunk.choices[0].delta.tool_calls or [])
        check(content == message.content and calls == 0, f"streamed, the same object as content ({mode}): {content}")


def json_object(client):
    """response_format json_object: an object of any keys, in every mode but free; schemaweaver's
    (nothing declared to branch on: written as jump-forward writes it) is jump-forward's."""
    request = [{"role": "user", "content": "Give a person's name and age as JSON."}]
    answers = {}
    for mode in ("jump-forward", "schemaweaver", "constrained"):
        r = client.chat.completions.create(model="any", messages=request, response_format={"type": "json_object"},
                                           max_tokens=64, extra_body={"x_decoding_mode": mode})
        answers[mode] = r.choices[0].message.content
        check(isinstance(json.loads(answers[mode]), dict) and r.choices[0].finish_reason == "stop",
              f"json_object answers an object ({mode}): {answers[mode]}")
    check(answers["schemaweaver"] == answers["jump-forward"], "json_object: schemaweaver's object is jump-forward's")


def sampled(client):
    """A drawn answer in a schema: the same seed gives the same object; it stays valid. (The fields
    in branches whatever the plan: a plan that changes with the learnt pass costs changes where
    the draws fall.)"""
    schema = to_strict_json_schema(Person)
    body = {"type": "json_schema", "json_schema": {"name": "Person", "schema": schema}}
    answers = [client.chat.completions.create(model="any", messages=REQUEST, response_format=body, max_tokens=160,
                                              temperature=1.0, seed=seed,
                                              extra_body={"x_decoding_mode": "schemaweaver/branches"}
                                              ).choices[0].message.content
               for seed in (5, 5, 6)]
    for content in answers:
        jsonschema.validate(json.loads(content), schema)
    check(answers[0] == answers[1], f"a seeded drawn answer is reproducible: {answers[0]}")


def access_log(path):
    """One JSON line per request on stderr: the generations with their mode, tokens, passes and
    times, the refusals with their status."""
    lines = [json.loads(l) for l in Path(path).read_text().splitlines() if l.startswith("{")]
    chats = [l for l in lines if l["path"] == "/v1/chat/completions"]
    generated = [l for l in chats if l["status"] == 200]
    check(generated and all(l["mode"] in ("schemaweaver", "jump-forward", "constrained", "speculative") and l["prompt_tokens"] > 0 and l["passes"] > 0
                            and 0 < l["call_ms"] <= l["total_ms"] for l in generated),
          f"the access log has a line per generation: {len(generated)}, e.g. {generated[0]}")
    check(sum(l["status"] == 400 for l in chats) >= 4 and all("mode" not in l for l in chats if l["status"] == 400),
          f"and one per refused request: {[l for l in chats if l['status'] == 400][:1]}")


def main():
    args, tools = arguments(model="the default model")
    log = Path(tempfile.mkdtemp()) / "serve.log"
    with running_server(args.cli, args.model, "--timeout", 120, "--log-format", "json",
                        stderr_path=log) as (server, base, _):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
        answers = parsed_in_every_mode(client)
        streamed(client, answers["jump-forward"])
        cut_short(client)
        refused(client, tools)
        with_tools(client, tools)
        json_object(client)
        sampled(client)
        check(server.poll() is None, "the server is still running")
    access_log(log)
    print("all structured-output checks passed")


if __name__ == "__main__":
    sys.exit(main())
