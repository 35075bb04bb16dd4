#!/usr/bin/env python3
"""Under tool_choice auto, is the choice between a call and text the model's own? BFCL v4's
relevance sets (irrelevance and live_irrelevance: no tool fits, the model should not call;
live_relevance: one does) and a sample of the single-turn categories, each asked with four system
messages, over HTTP with the official openai client.

    $SCHEMAWEAVER_CACHE/venv/bin/python bench/auto_decisions.py --model M.gguf [--sample 10] [--out DIR]

Per case and system message:
  - the model's own free decoding: `schemaweaver serve` with tool_choice "none" (the same prompt,
    the tools shown, no constraint), its text read leniently here - any call-shaped opening (the
    template's <tool_call> marker, a fenced block, bare JSON with a "name" key, its brace doubled
    or not, a tool's name followed by "(" or "{") counts as a call;
  - `schemaweaver serve` under auto (SchemaWeaver mode): a call or text, and whether each call is
    valid under its tool's schema (the jsonschema package);
  - llama-server under auto (the same model file, template, threads, context): a call or text.
The figure the engine answers for is agreement: its choice equals the free decoding's in what
share of cases. Calls where BFCL expects one, abstentions where it expects none, per category and
server. JSON lines per request and a Markdown summary under --out.
"""
import json
import random
import re
import sys
from pathlib import Path

import jsonschema

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CACHE, log, machine, read_lines, resumed_run, servers_parser, table  # noqa: E402
from bfcl_openai import bfcl_tools  # noqa: E402
from peers import start_server  # noqa: E402

# (category, whether BFCL expects a call)
CATEGORIES = [("irrelevance", False), ("live_irrelevance", False), ("live_relevance", True),
              ("simple_python", True), ("multiple", True), ("live_simple", True), ("live_multiple", True)]
SYSTEMS = {
    "none": None,
    "assistant": "You are a helpful assistant.",
    "use tools": "Use tools to answer.",
    "agent instructions": "You are an agent. Use the tools you are given when they help with the user's request; "
                          "otherwise answer the user directly.",
}
MAX_TOKENS = 96


def cases(category, n, seed):
    path = CACHE / "data" / "bfcl" / f"BFCL_v4_{category}.json"
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    chosen = random.Random(seed).sample(entries, min(n, len(entries)))
    return [(e["id"], e["question"][0], bfcl_tools(e["function"])) for e in chosen]


def call_shaped(text, tools):
    """Whether a free answer opens as a call, read leniently (whitespace aside)."""
    names = "|".join(re.escape(t["function"]["name"]) for t in tools)
    opening = text.lstrip()
    patterns = [r"<tool_call>", r"```[\w-]*\s*[\[{<]", r"\[?\s*\{\{?\s*\"name\"\s*:", rf"\[?\s*(?:{names})\s*[({{]"]
    return any(re.match(p, opening) for p in patterns)


def names_unknown_tool(text, tools):
    """An opening of bare JSON whose "name" is no tool's: nothing it names can be called (the
    engine reads it as text; a fenced block it takes for a call whatever its name says)."""
    named = re.match(r"\s*\[?\s*\{\{?\s*\"name\"\s*:\s*\"([^\"]*)\"", text)
    return bool(named) and named.group(1) not in {t["function"]["name"] for t in tools}


def tools_by_id(lines):
    """The tools each case of `lines` offered, as the run built them."""
    wanted = {l["id"] for l in lines}
    found = {}
    for category, _ in CATEGORIES:
        path = CACHE / "data" / "bfcl" / f"BFCL_v4_{category}.json"
        for line in path.read_text().splitlines():
            entry = json.loads(line) if line.strip() else None
            if entry and entry["id"] in wanted:
                found[entry["id"]] = bfcl_tools(entry["function"])
    return found


def ask(server, messages, tools, tool_choice):
    extra = {} if server.name == "llama-server" else {"x_decoding_mode": "schemaweaver"}
    response = server.client.chat.completions.create(model="any", messages=messages, tools=tools,
                                                     tool_choice=tool_choice, temperature=0, max_tokens=MAX_TOKENS,
                                                     extra_body=extra)
    message = response.choices[0].message
    calls = [{"name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls or []]
    return calls, message.content or ""


def schema_valid(tools, call):
    schema = {t["function"]["name"]: t["function"]["parameters"] for t in tools}.get(call["name"])
    try:
        jsonschema.validate(json.loads(call["arguments"]), schema)
        return schema is not None
    except (jsonschema.ValidationError, json.JSONDecodeError):
        return False


def run(server, todo, lines_path):
    for category, case_id, question, tools, system in todo:
        messages = [{"role": "system", "content": SYSTEMS[system]}] + question if SYSTEMS[system] else question
        line = {"server": server.name, "category": category, "id": case_id, "system": system}
        try:
            if server.name == "schemaweaver":
                _, free_text = ask(server, messages, tools, "none")
                line["free_text"], line["free_calls"] = free_text, call_shaped(free_text, tools)
            calls, content = ask(server, messages, tools, "auto")
            line.update(calls=calls, content=content, valid=all(schema_valid(tools, c) for c in calls))
        except Exception as e:  # an error response is recorded, not fatal: it counts as no call
            line.update(calls=[], content="", valid=False, error=str(e)[:300])
        with lines_path.open("a") as f:
            f.write(json.dumps(line) + "\n")


def summarize(lines):
    """Per category and server, and the agreement over all requests: the lenient reading's, and
    the same with bare JSON naming no tool read as text (the engine cannot call what does not exist)."""
    tools = tools_by_id(lines)
    for line in lines:
        if line["server"] == "schemaweaver":
            line["free_known_call"] = line["free_calls"] and not names_unknown_tool(line["free_text"], tools[line["id"]])
    rows, summary = [], {}
    expects = dict(CATEGORIES)
    by = {}
    for line in lines:
        by.setdefault((line["category"], line["server"]), []).append(line)
    for (category, server), group in sorted(by.items()):
        n = len(group)
        called = sum(bool(l["calls"]) for l in group)
        right = called if expects[category] else n - called
        entry = {"requests": n, "calls": called, "expected_choice": right,
                 "schema_valid_calls": sum(l["valid"] for l in group if l["calls"])}
        agree = ""
        if server == "schemaweaver":
            entry["agrees_with_free"] = sum(bool(l["calls"]) == l["free_calls"] for l in group)
            entry["free_calls"] = sum(l["free_calls"] for l in group)
            agree = f"{entry['agrees_with_free']}/{n}"
        summary[f"{category}/{server}"] = entry
        rows.append([category, "call" if expects[category] else "no call", server, f"{called}/{n}",
                     f"{right}/{n}", f"{entry['schema_valid_calls']}/{called}", agree,
                     f"{entry.get('free_calls', '')}"])
    ours = [l for l in lines if l["server"] == "schemaweaver"]
    total = {"agreement": sum(bool(l["calls"]) == l["free_calls"] for l in ours) / max(len(ours), 1),
             "agreement_known_tools": sum(bool(l["calls"]) == l["free_known_call"] for l in ours) / max(len(ours), 1),
             "free_calls_of_unknown_tools": sum(l["free_calls"] and not l["free_known_call"] for l in ours),
             "requests": len(ours), "schema_valid": all(l["valid"] for l in ours if l["calls"])}
    header = ["category", "BFCL expects", "server", "answered with a call", "as BFCL expects",
              "calls schema-valid", "same choice as free decoding", "free decoding's call-shaped openings"]
    return summary, total, table(header, rows)


def main():
    args = servers_parser(__doc__.split("\n\n")[0], "cases per category", 8192).parse_args()
    model = Path(args.model)
    out, lines_path, lines = resumed_run(args.out, "auto-decisions", model, "requests.jsonl")
    done = {(l["server"], l["id"], l["system"]) for l in lines}
    for server_name in args.servers.split(","):
        todo = [(category, case_id, question, tools, system)
                for category, _ in CATEGORIES for case_id, question, tools in cases(category, args.sample, args.seed)
                for system in SYSTEMS if (server_name, case_id, system) not in done]
        if not todo:
            continue
        log(f"{server_name}: {len(todo)} requests")
        server = start_server(server_name, model, args, out / f"{server_name}.log")
        try:
            run(server, todo, lines_path)
        finally:
            server.stop()
    lines = list(read_lines(lines_path))
    summary, total, markdown = summarize(lines)
    (out / "summary.json").write_text(json.dumps({"model": model.name, "machine": machine(), "sample": args.sample,
                                                  "seed": args.seed, "systems": SYSTEMS, "total": total,
                                                  "results": summary}, indent=1))
    text = (f"tool_choice auto on BFCL v4, {model.name}, {args.sample} cases per category x {len(SYSTEMS)} system "
            f"messages (seed {args.seed}); {machine()['cpu']}, {args.threads} threads. schemaweaver's choice equals "
            f"its free decoding's in {100 * total['agreement']:.1f} % of {total['requests']} requests, read "
            f"leniently; {100 * total['agreement_known_tools']:.1f} % where bare JSON naming no tool counts as text "
            f"({total['free_calls_of_unknown_tools']} such openings); every call schema-valid: "
            f"{total['schema_valid']}\n\n{markdown}")
    (out / "summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
