#!/usr/bin/env python3
"""Against what users run today: the BFCL sample through llama.cpp's own server (llama-server,
built by `scripts/setup.sh --peers` from the same sdist) and through `schemaweaver serve`, the
same model file, threads, context and greedy sampling, end to end over HTTP with the official
openai client.

    $SCHEMAWEAVER_CACHE/venv/bin/python bench/peers.py --model M.gguf [--sample 100] [--out DIR]
        [--parts bfcl,restart,agent]

Parts:
  bfcl     per case and server: the case's first request (its tool set new to the server) streamed
           in the server's first setting - (a) in the issue's words -, then every setting streamed
           again with the tool set's prefix cached (b). Correctness by BFCL's checker
           (`schemaweaver bfcl-cases --check`) on the calls each server returned (no call: wrong);
           every returned call also validated with the jsonschema package against its tool.
  restart  `schemaweaver serve` sees some tool sets, is restarted, and answers them again: the
           first request after the restart (prefix read from the prompt cache on disk) against
           the same request once warm.
  agent    a three-turn task (a call, the MCP time server's result, the answer) per server (c).
  structured  structured outputs: for --structured-cases single-call cases spread over the sample,
           the expected function's parameters as response_format json_schema (no tools: the model
           writes that function's arguments object), llama-server against schemaweaver's modes;
           valid under jsonschema, correct by BFCL's checker on {name: expected, arguments: the
           object}, the time to the whole object, schemaweaver's passes.
  stream   for --stream-cases of those cases, the time to the first argument delta of a call and
           to the first content delta of a reply in text (tool_choice none), both servers.

Times: sent -> first executable call (the first call whose arguments are complete JSON) and
sent -> response complete; the servers' own timings split prefill from decoding. Results are
JSON lines and Markdown under --out, resumable per part.
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CACHE, CATEGORIES, CLI, geomean, log, machine, read_lines, svg_stacked, table  # noqa: E402
from serve_harness import free_port  # noqa: E402

LLAMA_SERVER = Path(os.environ.get("LLAMA_SERVER", "")) if os.environ.get("LLAMA_SERVER") else None
MAX_TOKENS = 256


def llama_server_path():
    if LLAMA_SERVER:
        return LLAMA_SERVER
    found = sorted((CACHE / "llama.cpp").glob("*-server/bin/llama-server"))
    if not found:
        sys.exit("peers.py: no llama-server; run scripts/setup.sh --peers")
    return found[0]


# ------------------------------------------------------------------ servers and their settings

def call_schema(tools, parallel):
    """The JSON Schema of a call (or a list of calls) to one of `tools`: llama-server's
    response_format route, which makes its grammar from it."""
    one = {"anyOf": [{"type": "object", "properties": {"name": {"const": t["function"]["name"]},
                                                        "arguments": t["function"]["parameters"]},
                      "required": ["name", "arguments"]} for t in tools]}
    return {"type": "array", "items": one, "minItems": 1} if parallel else one


def llama_settings(case):
    parallel = case["expected_calls"] > 1
    schema = call_schema(case["tools"], parallel)
    return [("auto", {"tool_choice": "auto"}),
            ("required", {"tool_choice": "required"}),
            ("json_schema", {"response_format": {"type": "json_schema",
                                                 "json_schema": {"name": "tool_call", "schema": schema}}})]


# --settings best: each server's best setting on every model measured so far (and llama-server's
# auto, its first request with a new tool set), for a model too slow to run every setting.
BEST_SETTINGS = {("llama-server", "auto"), ("llama-server", "json_schema"),
                 ("schemaweaver", "schemaweaver"), ("schemaweaver", "schemaweaver, list if parallel")}


def our_settings(case):
    """Each mode; tool_choice auto; and, as llama-server's json_schema route gets a list schema
    when several calls are expected, the calls as one list then (the `list` switch)."""
    parallel = case is not None and case["expected_calls"] > 1
    return [(mode, {"tool_choice": "required", "extra_body": {"x_decoding_mode": mode}})
            for mode in ("schemaweaver", "jump-forward", "constrained")] + \
           [("schemaweaver, auto", {"tool_choice": "auto", "extra_body": {"x_decoding_mode": "schemaweaver"}}),
            ("schemaweaver, list if parallel",
             {"tool_choice": "required", "extra_body": {"x_decoding_mode": "schemaweaver/list" if parallel else "schemaweaver"}})]


class Server:
    """A server process on a free loopback port, stopped on exit."""

    def __init__(self, name, command, port, log_path):
        self.name, self.port = name, port
        self.log = open(log_path, "a")
        self.process = subprocess.Popen([str(c) for c in command], stdout=self.log, stderr=self.log)
        self.client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=600,
                                    max_retries=0)
        deadline = time.time() + 300
        while True:
            try:
                self.client.models.list()
                break
            except openai.APIError:
                if self.process.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{name} did not start (see {log_path})")
                time.sleep(0.5)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def start_server(name, model, args, log_path, prompt_cache=None, flags=()):
    """`flags`: the server's own, appended (a setting of one server)."""
    port = free_port()
    if name == "llama-server":
        command = [llama_server_path(), "-m", model, "--host", "127.0.0.1", "--port", port, "-t", args.threads,
                   "-c", args.ctx, "-np", 1, "--jinja", "--no-webui"]
    else:
        command = [CLI, "serve", "-m", model, "--port", port, "-t", args.threads, "-c", args.ctx, "--slots", 1,
                   "--timeout", 600] + (["--prompt-cache-dir", prompt_cache] if prompt_cache else ["--no-prompt-cache"])
    return Server(name, command + list(flags), port, log_path)


# ------------------------------------------------------------------ one request, streamed

def complete_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def first_call_complete(content):
    """Whether a response_format answer holds a whole call yet: the whole object, or the first
    element of a list (a client reading the stream can run that call while the rest comes)."""
    text = content.lstrip()
    if not text.startswith("["):
        return complete_json(text)
    start = text.find("{")
    if start < 0:
        return False
    try:
        json.JSONDecoder().raw_decode(text, start)
        return True
    except ValueError:
        return False


def ask(server, messages, tools, setting, parallel):
    """Streams one request; returns what came back and when."""
    options = dict(setting)
    extra = options.pop("extra_body", {})
    request = dict(model="m", messages=messages, tools=tools, temperature=0, max_tokens=MAX_TOKENS, stream=True,
                   parallel_tool_calls=parallel, extra_body=extra)
    request.update(options)
    calls, content, finish, timings, error = {}, "", None, {}, None
    first_call_ms = first_content_ms = first_arguments_ms = None
    start = time.perf_counter()
    since = lambda: (time.perf_counter() - start) * 1000  # noqa: E731
    try:
        for chunk in server.client.chat.completions.create(**request):
            extra_fields = chunk.model_extra or {}
            timings = extra_fields.get("timings") or extra_fields.get("x_timings") or timings
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            delta = choice.delta
            for tc in delta.tool_calls or []:
                c = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                if tc.function and tc.function.name:
                    c["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    c["arguments"] += tc.function.arguments
                    first_arguments_ms = first_arguments_ms or since()
                if first_call_ms is None and c["name"] and complete_json(c["arguments"]):
                    first_call_ms = since()
            if delta.content:
                content += delta.content
                first_content_ms = first_content_ms or since()
                if first_call_ms is None and "response_format" in options and first_call_complete(content):
                    first_call_ms = (time.perf_counter() - start) * 1000
    except (openai.APIError, openai.APIConnectionError) as e:
        error = f"{type(e).__name__}: {e}"
    complete_ms = (time.perf_counter() - start) * 1000
    found = [calls[i] for i in sorted(calls)]
    if "response_format" in options and not found and content:
        found = calls_from_content(content)
    # A response that ends in an error returned no calls, whatever it streamed before.
    return {"calls": [] if error else found, "streamed_before_error": found if error else [], "content": content,
            "finish_reason": finish, "error": error, "timings": timings,
            "first_call_ms": None if error else first_call_ms, "complete_ms": complete_ms,
            "first_content_ms": first_content_ms, "first_arguments_ms": first_arguments_ms}


def calls_from_content(content):
    """The calls of a response_format answer: {"name", "arguments"} or a list of them."""
    try:
        value = json.loads(content)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    return [{"name": v["name"], "arguments": json.dumps(v["arguments"])} for v in items
            if isinstance(v, dict) and isinstance(v.get("name"), str) and isinstance(v.get("arguments"), dict)]


def split_times(server_name, result):
    """(prefill ms, decoding ms) by the server's own timings."""
    t = result["timings"] or {}
    if server_name == "llama-server":
        return t.get("prompt_ms", 0.0), t.get("predicted_ms", 0.0)
    return t.get("prompt_ms", 0.0), t.get("answer_ms", 0.0)


# ------------------------------------------------------------------ part: bfcl

def sampled_requests(args, out):
    """The sample's cases as OpenAI requests (`schemaweaver bfcl-cases`), written once."""
    requests = out / "requests.jsonl"
    if not requests.exists():
        subprocess.run([str(CLI), "bfcl-cases", "--data", str(CACHE / "data" / "bfcl"), "--categories", CATEGORIES,
                        "--sample", str(args.sample), "--seed", "1", "--requests", str(requests)], check=True)
    return read_lines(requests)


def part_bfcl(args, model, out):
    """Both servers run side by side (each idle while the other answers), case by case, so that
    a slower stretch of the machine falls on both."""
    cases = sampled_requests(args, out)
    lines_path = out / "bfcl.jsonl"
    done = {l["id"] for l in read_lines(lines_path) if l["server"] == "schemaweaver" and l["phase"] == "warm"}
    todo = [c for c in cases if c["id"] not in done]
    if todo:
        with tempfile.TemporaryDirectory() as prompt_cache:
            servers = [start_server("llama-server", model, args, out / "llama-server.log"),
                       start_server("schemaweaver", model, args, out / "schemaweaver.log", prompt_cache)]
            side_by_side(servers, todo, lines_path,
                         lambda server, case: run_case(server, case, cases.index(case), args))
    return grade(cases, read_lines(lines_path), out)


def side_by_side(servers, todo, lines_path, lines_of, label=""):
    """Each case on every server in turn, its lines (`lines_of(server, case)`) written whole, so
    that a case interrupted halfway is run again; the servers are stopped at the end."""
    try:
        with open(lines_path, "a") as sink:
            for n, case in enumerate(todo, 1):
                lines = [line for server in servers for line in lines_of(server, case)]
                sink.write("".join(json.dumps(line) + "\n" for line in lines))
                sink.flush()
                log(f"{label}{n}/{len(todo)} {case['id']}")
    finally:
        for server in servers:
            server.stop()


def run_case(server, case, position, args):
    """The case's first request (a tool set new to the server) in the server's first setting,
    then each setting with the prefix cached. llama-server's `required` runs to max_tokens
    without a call on every model tried, at several seconds a case: it runs on the first
    --required-cases cases only."""
    parallel = case["expected_calls"] > 1
    settings = (llama_settings if server.name == "llama-server" else our_settings)(case)
    if position >= args.required_cases:
        settings = [s for s in settings if not (server.name == "llama-server" and s[0] == "required")]
    if args.settings == "best":
        settings = [s for s in settings if (server.name, s[0]) in BEST_SETTINGS]
    for phase, (setting_name, setting) in [("cold", settings[0])] + [("warm", s) for s in settings]:
        result = ask(server, case["messages"], case["tools"], setting, parallel)
        result.update(id=case["id"], category=case["category"], server=server.name, setting=setting_name,
                      phase=phase)
        yield result


def grade(cases, lines, out):
    """Per server and setting: BFCL verdicts (the project's checker), jsonschema validity, times."""
    tools_of = {c["id"]: {t["function"]["name"]: t["function"]["parameters"] for t in c["tools"]} for c in cases}
    groups = {}
    for line in lines:
        groups.setdefault((line["server"], line["setting"], line["phase"]), []).append(line)
    summary = []
    for (server, setting, phase), group in sorted(groups.items()):
        calls_path = out / f"calls-{server}-{setting.replace(', ', '-')}-{phase}.jsonl"
        calls_path.write_text("".join(json.dumps({"id": l["id"], "calls": l["calls"], "error": l["error"]}) + "\n"
                                      for l in group))
        checked = subprocess.run([str(CLI), "bfcl-cases", "--data", str(CACHE / "data" / "bfcl"), "--categories",
                                  CATEGORIES, "--sample", str(len(cases)), "--seed", "1", "--check", str(calls_path)],
                                 check=True, capture_output=True, text=True).stdout
        verdicts = {v["id"]: v["valid"] for v in map(json.loads, checked.splitlines())}
        returned = valid_schema = 0
        for l in group:
            for call in l["calls"]:
                returned += 1
                valid_schema += schema_valid(tools_of[l["id"]], call)
        prefill, decoding = zip(*(split_times(server, l) for l in group))
        first = [l["first_call_ms"] for l in group if l["first_call_ms"] is not None]
        summary.append({"server": server, "setting": setting, "phase": phase, "cases": len(group),
                        "correct": sum(verdicts.values()), "with_calls": sum(bool(l["calls"]) for l in group),
                        "calls": returned, "schema_valid_calls": valid_schema,
                        "first_call_geomean_ms": geomean(first) if first else None,
                        "complete_geomean_ms": geomean([l["complete_ms"] for l in group]),
                        "prefill_mean_ms": sum(prefill) / len(group), "decoding_mean_ms": sum(decoding) / len(group),
                        "complete_mean_ms": sum(l["complete_ms"] for l in group) / len(group),
                        "cut_at_max_tokens": sum(l["finish_reason"] == "length" for l in group),
                        "errors": sum(l["error"] is not None for l in group)})
    (out / "bfcl-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def schema_valid(tools, call):
    schema = tools.get(call["name"])
    if schema is None:
        return False
    try:
        arguments = json.loads(call["arguments"]) if isinstance(call["arguments"], str) else call["arguments"]
        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)\
            .validate(arguments)
        return True
    except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError):
        return False


# ------------------------------------------------------------------ part: structured

STRUCTURED_SETTINGS = {"llama-server": ["json_schema"],
                       "schemaweaver": ["schemaweaver", "jump-forward", "constrained"]}


def structured_cases(args, out):
    """--structured-cases of the sample's single-call cases, spread evenly over it."""
    singles = [c for c in sampled_requests(args, out) if c["expected_calls"] == 1]
    n = min(args.structured_cases, len(singles))
    return [singles[i * len(singles) // n] for i in range(n)]


def structured_request(case):
    tool = next(t["function"] for t in case["tools"] if t["function"]["name"] == case["expected_tools"][0])
    return {"type": "json_schema", "json_schema": {"name": tool["name"], "schema": tool["parameters"]}}, tool


def part_lines(args, model, out, cases, part, lines_of):
    """The part's lines (PART.jsonl under `out`): the cases it does not hold yet run on both
    servers side by side, case by case."""
    lines_path = out / f"{part}.jsonl"
    done = {l["id"] for l in read_lines(lines_path)}
    todo = [c for c in cases if c["id"] not in done]
    if todo:
        servers = [start_server("llama-server", model, args, out / "llama-server.log"),
                   start_server("schemaweaver", model, args, out / "schemaweaver.log")]
        side_by_side(servers, todo, lines_path, lines_of, part + " ")
    return read_lines(lines_path)


def warm_ask(server, case, tools, setting, options):
    """The request twice, the first to bring its prompt into the server's cache (as the bfcl
    part's warm phase); the second's result, labelled."""
    ask(server, case["messages"], tools, options, False)
    result = ask(server, case["messages"], tools, options, False)
    result.update(id=case["id"], category=case["category"], server=server.name, setting=setting)
    return result


def part_structured(args, model, out):
    cases = structured_cases(args, out)
    return grade_structured(args, cases, part_lines(args, model, out, cases, "structured", structured_lines), out)


def structured_lines(server, case):
    format_, _ = structured_request(case)
    for setting in STRUCTURED_SETTINGS[server.name]:
        extra = {} if server.name == "llama-server" else {"x_decoding_mode": setting}
        yield warm_ask(server, case, [], setting, {"response_format": format_, "extra_body": extra})


def grade_structured(args, cases, lines, out):
    by_id = {c["id"]: c for c in cases}
    groups = {}
    for line in lines:
        groups.setdefault((line["server"], line["setting"]), []).append(line)
    summary = []
    for (server, setting), group in sorted(groups.items()):
        calls_path = out / f"structured-{server}-{setting}.jsonl"
        valid = 0
        with open(calls_path, "w") as sink:
            for l in group:
                _, tool = structured_request(by_id[l["id"]])
                try:
                    arguments = json.loads(l["content"])
                    jsonschema.Draft202012Validator(tool["parameters"]).validate(arguments)
                    valid += 1
                    calls = [{"name": tool["name"], "arguments": arguments}]
                except (ValueError, jsonschema.ValidationError):
                    calls = []
                sink.write(json.dumps({"id": l["id"], "calls": calls, "error": l["error"]}) + "\n")
        checked = subprocess.run([str(CLI), "bfcl-cases", "--data", str(CACHE / "data" / "bfcl"), "--categories",
                                  CATEGORIES, "--sample", str(args.sample), "--seed", "1", "--check",
                                  str(calls_path)], check=True, capture_output=True, text=True).stdout
        verdicts = [json.loads(v)["valid"] for v in checked.splitlines()]
        passes = [(l["timings"] or {}).get("answer_passes") for l in group]
        summary.append({"server": server, "setting": setting, "cases": len(group), "valid": valid,
                        "correct": sum(verdicts), "complete_geomean_ms": geomean([l["complete_ms"] for l in group]),
                        "passes_mean": sum(passes) / len(passes) if all(p is not None for p in passes) else None,
                        "cut_at_max_tokens": sum(l["finish_reason"] == "length" for l in group),
                        "errors": sum(l["error"] is not None for l in group)})
    (out / "structured-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def structured_report(summary):
    rows = [[s["server"], s["setting"], f"{s['valid']}/{s['cases']}", f"{s['correct']}/{s['cases']}",
             f"{s['complete_geomean_ms']:.0f}", f"{s['passes_mean']:.1f}" if s["passes_mean"] is not None else "-",
             s["cut_at_max_tokens"], s["errors"]] for s in summary]
    lines = ["\nStructured outputs (the expected function's parameters as response_format json_schema, no tools):\n",
             table(["server", "setting", "valid (jsonschema)", "correct (BFCL checker)",
                    "sent -> whole object, geomean (ms)", "passes, mean", "cut at max_tokens", "errors"], rows)]
    by = {(s["server"], s["setting"]): s for s in summary}
    theirs = by.get(("llama-server", "json_schema"))
    for mode in STRUCTURED_SETTINGS["schemaweaver"]:
        ours = by.get(("schemaweaver", mode))
        if theirs and ours:
            lines.append(f"- schemaweaver {mode}: {ours['complete_geomean_ms'] / theirs['complete_geomean_ms']:.2f}x "
                         f"llama-server's time, {ours['correct']} vs {theirs['correct']} correct")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ part: stream

def stream_settings(server_name, case):
    """The same requests to both servers: a call - llama-server under auto (where it streams
    argument deltas of the calls it parses) and by its json_schema route (the call as content,
    its most accurate setting), schemaweaver in its modes under tool_choice required - and a
    reply in text (tool_choice none, the same messages, 32 tokens)."""
    text = ("text", {"tool_choice": "none", "max_tokens": 32})
    if server_name == "llama-server":
        return [("call, auto", {"tool_choice": "auto"}), ("call, json_schema", llama_settings(case)[2][1]), text]
    return [("call, " + mode, {"tool_choice": "required", "extra_body": {"x_decoding_mode": mode}})
            for mode in ("schemaweaver", "jump-forward")] + [text]


def first_delta_key(setting):
    """A reply's first delta is content, and so is a call by a response_format; else the call's
    first argument piece."""
    return "first_content_ms" if setting in ("text", "call, json_schema") else "first_arguments_ms"


def part_stream(args, model, out):
    """--stream-cases single-call cases, each request warm (warm_ask): the time to the first
    content delta of a text reply, to the first argument delta of a call, and to the first call
    whose arguments are whole."""
    cases = structured_cases(args, out)[:args.stream_cases]
    lines = part_lines(args, model, out, cases, "stream", stream_lines)
    summary = []
    for server in ("llama-server", "schemaweaver"):
        for setting, _ in stream_settings(server, cases[0]):
            group = [l for l in lines if l["server"] == server and l["setting"] == setting]
            firsts = [l[first_delta_key(setting)] for l in group if l[first_delta_key(setting)]]
            whole = [l["first_call_ms"] for l in group if l["first_call_ms"]]
            summary.append({"server": server, "setting": setting, "cases": len(group), "streamed": len(firsts),
                            "first_delta_geomean_ms": geomean(firsts) if firsts else None,
                            "first_whole_call_geomean_ms": geomean(whole) if whole else None,
                            "complete_geomean_ms": geomean([l["complete_ms"] for l in group])})
    (out / "stream-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def stream_lines(server, case):
    for setting, options in stream_settings(server.name, case):
        yield warm_ask(server, case, case["tools"], setting, options)


def stream_report(summary):
    ms = lambda v: f"{v:.0f}" if v else "-"  # noqa: E731
    rows = [[s["server"], s["setting"], f"{s['streamed']}/{s['cases']}", ms(s["first_delta_geomean_ms"]),
             ms(s["first_whole_call_geomean_ms"]), ms(s["complete_geomean_ms"])] for s in summary]
    return ("\nStreaming (warm prompt; a call's first delta is its first argument piece - by a response_format, "
            "its first content -, a text reply's its first content):\n\n" +
            table(["server", "setting", "streamed", "sent -> first delta, geomean (ms)",
                   "sent -> first whole call, geomean (ms)", "sent -> complete, geomean (ms)"], rows) + "\n")


# ------------------------------------------------------------------ part: restart

def part_restart(args, model, out):
    path = out / "restart.json"
    if path.exists():
        return json.loads(path.read_text())
    cases = sampled_requests(args, out)[:args.restart_cases]
    setting = our_settings(None)[0][1]
    rows = []
    with tempfile.TemporaryDirectory() as prompt_cache:
        server = start_server("schemaweaver", model, args, out / "restart.log", prompt_cache)
        try:
            for case in cases:  # each tool set computed once and saved
                ask(server, case["messages"], case["tools"], setting, case["expected_calls"] > 1)
        finally:
            server.stop()
        server = start_server("schemaweaver", model, args, out / "restart.log", prompt_cache)
        try:
            for case in cases:
                parallel = case["expected_calls"] > 1
                after = ask(server, case["messages"], case["tools"], setting, parallel)
                # The same request warm: the slot holds the tool set's prefix (left by another
                # question), and the question is computed as after the restart.
                ask(server, [{"role": "user", "content": "Hello."}], case["tools"], setting, parallel)
                warm = ask(server, case["messages"], case["tools"], setting, parallel)
                rows.append({"id": case["id"], "after_restart": after, "warm": warm})
        finally:
            server.stop()
    result = {"cases": len(rows),
              "restored_tokens_mean": sum(r["after_restart"]["timings"].get("prompt_restored_tokens", 0)
                                          for r in rows) / max(len(rows), 1),
              "first_call_after_restart_geomean_ms": geomean([r["after_restart"]["first_call_ms"] or
                                                              r["after_restart"]["complete_ms"] for r in rows]),
              "first_call_warm_geomean_ms": geomean([r["warm"]["first_call_ms"] or r["warm"]["complete_ms"]
                                                     for r in rows]),
              "rows": rows}
    result["ratio"] = result["first_call_after_restart_geomean_ms"] / result["first_call_warm_geomean_ms"]
    path.write_text(json.dumps(result, indent=2) + "\n")
    return result


# ------------------------------------------------------------------ part: agent

class McpTimeServer:
    """The MCP time server over stdio: tools/list and tools/call, JSON-RPC by hand."""

    def __init__(self):
        self.process = subprocess.Popen([str(CACHE / "venv" / "bin" / "mcp-server-time"), "--local-timezone", "UTC"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "peers", "version": "1"}})
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                             "params": params}) + "\n")
        self.process.stdin.flush()
        while True:
            ready, _, _ = select.select([self.process.stdout], [], [], 30)
            if not ready:
                raise RuntimeError("the MCP time server did not answer")
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == self.next_id:
                return message.get("result", {})

    def tools(self):
        return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                  "parameters": t["inputSchema"]}}
                for t in self.request("tools/list", {})["tools"]]

    def call(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        return "\n".join(c.get("text", "") for c in result.get("content", []))

    def stop(self):
        self.process.kill()


AGENT_TASKS = ["What time is it in Tokyo right now?",
               "It is 09:30 in London. What time is it then in New York?",
               "What is the current time in Sydney, Australia?"]


def part_agent(args, model, out):
    path = out / "agent.json"
    if path.exists():
        return json.loads(path.read_text())
    mcp = McpTimeServer()
    tools = mcp.tools()
    runs = []
    try:
        # The first turn in the setting that makes each server call (llama-server: its JSON
        # Schema route; here: schemaweaver, required), the answer in text.
        for server_name, first_setting in (("llama-server", llama_settings({"expected_calls": 1, "tools": tools})[2]),
                                           ("schemaweaver", our_settings(None)[0])):
            server = start_server(server_name, model, args, out / f"agent-{server_name}.log")
            try:
                ask(server, [{"role": "user", "content": AGENT_TASKS[0]}], tools, first_setting[1], False)  # warm-up
                for task in AGENT_TASKS:
                    runs.append(dict(run_agent_task(server, mcp, tools, task, first_setting[1]), server=server_name,
                                     setting=first_setting[0], task=task))
            finally:
                server.stop()
    finally:
        mcp.stop()
    result = {"runs": runs}
    for server_name in ("llama-server", "schemaweaver"):
        mine = [r for r in runs if r["server"] == server_name]
        result[server_name] = {"tasks": len(mine), "completed": sum(r["completed"] for r in mine),
                               "task_geomean_ms": geomean([r["task_ms"] for r in mine])}
    path.write_text(json.dumps(result, indent=2) + "\n")
    return result


def run_agent_task(server, mcp, tools, task, setting, rounds=3):
    """Calls and their results until the model answers in text (tool_choice auto after the first
    turn), at most `rounds` calls: the whole task's time. Completed when the answer is text that
    is not a call written out (a fenced or bare JSON call counts as not answered)."""
    messages = [{"role": "user", "content": task}]
    start = time.perf_counter()
    steps = []
    later = {k: v for k, v in setting.items() if k != "response_format"}
    later["tool_choice"] = "auto"
    for round_number in range(rounds + 1):
        reply = ask(server, messages, tools, setting if round_number == 0 else later, False)
        if not reply["calls"] or round_number == rounds:
            answer = reply["content"]
            completed = bool(answer.strip()) and not reply["error"] and '"arguments"' not in answer
            return {"completed": completed, "task_ms": (time.perf_counter() - start) * 1000, "steps": steps,
                    "answer": answer[:300], "error": reply["error"]}
        call = reply["calls"][0]
        try:
            result = mcp.call(call["name"], json.loads(call["arguments"]))
        except (ValueError, RuntimeError) as e:
            result = f"error: {e}"
        steps.append({"call": call, "result": result[:200]})
        call_id = f"call_{round_number}"
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]


# ------------------------------------------------------------------ report

def report(args, model, out, summary, restart, agent, structured=None, stream=None):
    lines = [f"# Against llama-server: {model.stem}\n",
             f"{machine()['cpu']}, {args.threads} threads, context {args.ctx}, one slot each, greedy, "
             f"max_tokens {MAX_TOKENS}; BFCL v4 sample of {args.sample} (seed 1). "
             f"`{' '.join(sys.argv)}`\n"]
    if summary:
        rows = []
        for s in summary:
            rows.append([s["server"], s["setting"], s["phase"], f"{s['correct']}/{s['cases']}",
                         f"{s['with_calls']}/{s['cases']}", f"{s['schema_valid_calls']}/{s['calls']}",
                         f"{s['first_call_geomean_ms']:.0f}" if s["first_call_geomean_ms"] else "-",
                         f"{s['complete_geomean_ms']:.0f}", f"{s['prefill_mean_ms']:.0f}", f"{s['decoding_mean_ms']:.0f}",
                         s["cut_at_max_tokens"], s["errors"]])
        lines.append(table(["server", "setting", "prefix", "correct (BFCL checker)", "answered with calls",
                            "calls valid (jsonschema)", "sent -> first executable call, geomean (ms)",
                            "sent -> complete, geomean (ms)", "prefill mean (ms)", "decoding mean (ms)",
                            "cut at max_tokens", "errors"], rows))
    if summary:
        lines.append(goals(summary))
    if restart:
        lines.append(f"\nRestart: {restart['cases']} tool sets; first request after a restart "
                     f"{restart['first_call_after_restart_geomean_ms']:.0f} ms to the first call (geomean; "
                     f"{restart['restored_tokens_mean']:.0f} prompt tokens restored from disk on average), the same "
                     f"request warm {restart['first_call_warm_geomean_ms']:.0f} ms: {restart['ratio']:.2f}x.\n")
    if agent:
        lines.append("\nThree-turn task with the MCP time server (call, result, answer):\n")
        setting = {r["server"]: r["setting"] for r in agent["runs"]}
        lines.append(table(["server", "first turn's setting", "tasks completed", "whole task, geomean (ms)"],
                           [[s, setting.get(s, "-"), f"{agent[s]['completed']}/{agent[s]['tasks']}",
                             f"{agent[s]['task_geomean_ms']:.0f}"] for s in ("llama-server", "schemaweaver")]))
    if structured:
        lines.append(structured_report(structured))
    if stream:
        lines.append(stream_report(stream))
    if summary:
        lines.append(f"\n![where the time goes]({time_figure(summary, out, model.stem).name})\n")
    (out / "peers.md").write_text("\n".join(lines))
    print("\n".join(lines))


def goals(summary):
    """The issue's two numbers: correctness against llama-server's best setting, and the time to
    the first executable call (warm prefix) against that setting's."""
    def best(server):
        warm = [s for s in summary if s["server"] == server and s["phase"] == "warm"]
        return max(warm, key=lambda s: (s["correct"], -(s["first_call_geomean_ms"] or float("inf"))))
    theirs, ours = best("llama-server"), best("schemaweaver")
    ratio = (f"{ours['first_call_geomean_ms'] / theirs['first_call_geomean_ms']:.2f}x"
             if ours["first_call_geomean_ms"] and theirs["first_call_geomean_ms"] else "-")
    return (f"\nBest setting of each (most correct, then fastest): llama-server {theirs['setting']} "
            f"{theirs['correct']}/{theirs['cases']}, schemaweaver {ours['setting']} {ours['correct']}/{ours['cases']}; "
            f"time to the first executable call (warm prefix, geomean) {ratio} of llama-server's.\n")


def time_figure(summary, out, title):
    """Stacked bars: the mean request split into prefill, decoding and the rest, for each
    server's first setting with a new tool set and each setting with the prefix cached."""
    bars, layers = [], {"prompt prefill": [], "call decoding": [], "the rest (HTTP, parsing, waiting)": []}
    for s in summary:
        if s["phase"] == "cold" or s["setting"] in ("auto", "required", "json_schema", "schemaweaver"):
            bars.append(f"{'llama' if s['server'] == 'llama-server' else 'sw'} {s['setting']}"
                        f"{' (new)' if s['phase'] == 'cold' else ''}")
            layers["prompt prefill"].append(s["prefill_mean_ms"])
            layers["call decoding"].append(s["decoding_mean_ms"])
            layers["the rest (HTTP, parsing, waiting)"].append(
                max(s["complete_mean_ms"] - s["prefill_mean_ms"] - s["decoding_mean_ms"], 0.0))
    path = out / "time.svg"
    svg_stacked(f"Where a request's time goes: {title}", bars, list(layers), layers, "ms (mean per request)", path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--restart-cases", type=int, default=10)
    parser.add_argument("--required-cases", type=int, default=20,
                        help="cases on which llama-server's tool_choice required is tried")
    parser.add_argument("--settings", choices=("all", "best"), default="all",
                        help="every setting, or each server's best one only (BEST_SETTINGS)")
    parser.add_argument("--structured-cases", type=int, default=50)
    parser.add_argument("--stream-cases", type=int, default=20)
    parser.add_argument("--parts", default="bfcl,restart,agent", help="of bfcl, restart, agent, structured, stream")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    out = args.out / args.model.stem
    out.mkdir(parents=True, exist_ok=True)
    parts = args.parts.split(",")
    summary = part_bfcl(args, args.model, out) if "bfcl" in parts else None
    restart = part_restart(args, args.model, out) if "restart" in parts else None
    agent = part_agent(args, args.model, out) if "agent" in parts else None
    structured = part_structured(args, args.model, out) if "structured" in parts else None
    stream = part_stream(args, args.model, out) if "stream" in parts else None
    report(args, args.model, out, summary, restart, agent, structured, stream)


if __name__ == "__main__":
    main()
