"""`schemaweaver serve` never reports a failure as a success, checked with the official OpenAI
client on the real default model:

- a call cut off at max_tokens under tool_choice required: 422 "max_tokens_reached", whole and
  as a streamed error event (the client raises), never 200 with the raw call text;
- a free-decoded call that breaks its schema (a pattern): 422 "invalid_tool_call" (on
  Qwen2.5-Coder-0.5B, the smallest model here that writes calls without a grammar);
- a request that runs past --timeout: 504 "timeout";
- with --api-key: 401 "invalid_api_key" without the key or with a wrong one, 200 with it,
  /health open; a non-loopback --host without a key refuses to start.

    python test_failures.py --cli build/apps/cli/schemaweaver --model M.gguf --coder Q.gguf --tools T.json
"""
import json
import subprocess
import sys

import openai

from server_checks import arguments, check
from serve_harness import metric, running_server  # noqa: E402 (server_checks makes it importable)

WEATHER = [{"role": "user", "content": "What is the weather like in Paris?"}]
# A city must be five digits: the model writes a name, which free decoding does not prevent.
POSTCODE_TOOL = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city"]}}}]



def expect_status(call, status, code, what):
    try:
        result = call()
        raise AssertionError(f"{what}: answered as a success: {result}")
    except openai.APIStatusError as e:
        check(e.status_code == status and e.body.get("code") == code,
              f"{what}: {status} with code {code}: {e.status_code} {e.body}")


def test_cut_call(client, tools):
    expect_status(lambda: client.chat.completions.create(model="any", messages=WEATHER, tools=tools,
                                                         tool_choice="required", max_tokens=3),
                  422, "max_tokens_reached", "a call cut at max_tokens")
    try:
        chunks = list(client.chat.completions.create(model="any", messages=WEATHER, tools=tools,
                                                     tool_choice="required", max_tokens=3, stream=True))
        raise AssertionError(f"a streamed call cut at max_tokens ended as a success: {chunks[-1]}")
    except openai.APIError as e:
        check("max_tokens" in str(e), f"a streamed call cut at max_tokens: an error event: {e}")


def test_invalid_call(cli, coder):
    with running_server(cli, coder, "--timeout", 120) as (_, base, _port):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
        check_invalid_call(client)


def check_invalid_call(client):
    expect_status(lambda: client.chat.completions.create(model="any", messages=WEATHER, tools=POSTCODE_TOOL,
                                                         tool_choice="required", max_tokens=48,
                                                         extra_body={"x_decoding_mode": "free"}),
                  422, "invalid_tool_call", "a free call that breaks its schema")
    r = client.chat.completions.create(model="any", messages=WEATHER, tools=POSTCODE_TOOL, tool_choice="required",
                                       max_tokens=48)
    city = json.loads(r.choices[0].message.tool_calls[0].function.arguments)["city"]
    check(len(city) == 5 and city.isdigit(), f"the same call constrained fits the pattern: {city}")


def test_timeout(cli, model, tools):
    with running_server(cli, model, "--timeout", 1) as (_, base, _port):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=60)
        long_story = [{"role": "user", "content": "Count from 1 to 500, one number per line."}]
        expect_status(lambda: client.chat.completions.create(model="any", messages=long_story, tools=tools,
                                                             tool_choice="none", max_tokens=1024),
                      504, "timeout", "a request past --timeout")
        # The generation itself was stopped, not answered 504 after it ran to the end: how long
        # that would take depends on the machine, what the server counts does not.
        check(metric(base, "schemaweaver_calls_cancelled_total") == 1,
              "the timeout cancels the generation: calls_cancelled_total is 1")


def test_api_key(cli, model, tools):
    with running_server(cli, model, "--api-key", "s3cret") as (_, base, _port):
        for key, what in (("none", "a wrong key"),):
            client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=60)
            expect_status(lambda: client.models.list(), 401, "invalid_api_key", what)
        client = openai.OpenAI(base_url=base + "/v1", api_key="s3cret", max_retries=0, timeout=60)
        check(client.models.list().data[0].id != "", "the right key: served")
        r = client.chat.completions.create(model="any", messages=WEATHER, tools=tools, tool_choice="required",
                                           max_tokens=64)
        check(r.choices[0].finish_reason == "tool_calls", f"the right key: a call: {r.choices[0]}")
        import urllib.request
        with urllib.request.urlopen(base + "/health", timeout=10) as response:
            check(response.status == 200, "/health needs no key")
        try:
            urllib.request.urlopen(base + "/v1/models", timeout=10)
            raise AssertionError("no key: served")
        except urllib.error.HTTPError as e:
            check(e.code == 401 and json.loads(e.read())["error"]["code"] == "invalid_api_key", f"no key: 401: {e}")
    run = subprocess.run([cli, "serve", "-m", model, "--host", "0.0.0.0", "--port", "1"], capture_output=True,
                         text=True, timeout=60)
    check(run.returncode != 0 and "needs --api-key" in run.stderr,
          f"a public address without a key: refused: {run.returncode} {run.stderr.strip()}")


def main():
    args, tools = arguments(model="the default model", coder="a model that writes calls freely (Qwen2.5-Coder-0.5B)")
    with running_server(args.cli, args.model, "--timeout", 120) as (server, base, _port):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
        test_cut_call(client, tools)
        check(server.poll() is None, "the server is still running")
    test_invalid_call(args.cli, args.coder)
    test_timeout(args.cli, args.model, tools)
    test_api_key(args.cli, args.model, tools)
    print("all failure checks passed")


if __name__ == "__main__":
    sys.exit(main())
