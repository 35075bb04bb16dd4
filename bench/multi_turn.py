#!/usr/bin/env python3
"""BFCL v4's multi-turn categories end to end, as an agent runs them, against `schemaweaver serve`
and llama-server (the same model file, template, threads, context and greedy sampling).

    $SCHEMAWEAVER_CACHE/venv/bin/python bench/multi_turn.py --model M.gguf [--sample 10]
        [--categories multi_turn_base,...] [--servers schemaweaver,llama-server] [--out DIR]

--servers names settings: schemaweaver, llama-server, schemaweaver/answer-repeats (each
request with "x_repeated_calls": "answer": a turn whose calls all repeat answered ones becomes the
answer in text; docs/server.md) and llama-server/calls-from-text (llama-server's best route for
these models, whose calls it returns as text: the client reads every JSON object naming a tool
with its arguments out of the text - fenced, tagged or with doubled braces - as the turn's calls).

Each task runs as bfcl_eval's own OpenAI function-calling handler runs it (its
inference_multi_turn_FC, followed step by step): the task's user turns in order; in each, the
model is asked with the tools (tool_choice auto, as that handler asks), its calls are executed by
bfcl_eval's executable backends (`execute_multi_turn_func_call`: a fresh instance per task, from
the task's initial configuration), their results go back as `tool` messages with the calls' ids,
and the turn ends when the model answers without a call (or after BFCL's step limit, which fails
the task). Functions held out by multi_turn_miss_func arrive at their turn with BFCL's own user
message. The calls of every step are then graded by bfcl_eval's multi-turn checker
(`multi_turn_checker`: the state of the backends and the results of the calls against the ground
truth's), exactly as its eval runner decodes them.

Per category and server: accuracy, calls per task, requests (steps) per task, wall time per task
and per step, and the prompt tokens each step computed against those it reused from the previous
step's cache (ours from `x_timings`, llama-server's from its `timings`). JSON lines per task and a
Markdown summary under --out; a rerun skips the tasks already there.
"""
import copy
import json
import random
import re
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import openai
from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC, MAXIMUM_STEP_LIMIT
from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (execute_multi_turn_func_call,
                                                                     is_empty_execute_response)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CACHE, geomean, log, resumed_run, servers_parser, table, write_summary  # noqa: E402
from bfcl_openai import bfcl_tools  # noqa: E402
from peers import start_server  # noqa: E402

CATEGORIES = "multi_turn_base,multi_turn_miss_func,multi_turn_miss_param,multi_turn_long_context"
MAX_TOKENS = 512


# ------------------------------------------------------------------ the tasks, as BFCL prepares them

def load_tasks(data, category):
    """The category's tasks with their function docs and ground truth, as bfcl_eval's
    populate_test_cases_with_predefined_functions prepares them (held-out functions moved to
    their turn)."""
    lines = lambda path: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    truth = {t["id"]: t["ground_truth"] for t in lines(data / "possible_answer" / f"BFCL_v4_{category}.json")}
    tasks = []
    for task in lines(data / f"BFCL_v4_{category}.json"):
        functions = []
        for name in task["involved_classes"]:
            functions += lines(data / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name])
        held_out = {}
        for turn, names in task.get("missed_function", {}).items():
            held_out[turn] = [f for f in functions if f["name"] in names]
            functions = [f for f in functions if f["name"] not in names]
        task["function"], task["missed_function"], task["ground_truth"] = functions, held_out, truth[task["id"]]
        tasks.append(task)
    return tasks


def executable(step):
    """A step's calls as BFCL executes them (its convert_to_function_call): ["name(k=v,...)"];
    a reply in text raises, as it does there."""
    if isinstance(step, str):
        raise ValueError("a reply in text")
    return [f"{name}({','.join(f'{k}={v!r}' for k, v in json.loads(arguments).items())})"
            for call in step for name, arguments in call.items()]


# ------------------------------------------------------------------ one task through one server

# A setting of a server, as --servers names it: the server, what each request adds, and whether
# the client reads calls out of a reply's text.
SETTINGS = {"schemaweaver": ("schemaweaver", {}, False), "llama-server": ("llama-server", {}, False),
            # calls that repeat answered ones answered in text instead (docs/server.md)
            "schemaweaver/answer-repeats": ("schemaweaver", {"x_repeated_calls": "answer"}, False),
            "llama-server/calls-from-text": ("llama-server", {}, True)}


def text_call(number, name, arguments):
    """A call read out of a reply's text, shaped as the client's tool calls are."""
    return SimpleNamespace(id=f"text_call_{number}",
                           function=SimpleNamespace(name=name, arguments=json.dumps(arguments)))


def calls_in_text(content, names):
    """Every JSON object {"name": <a tool>, "arguments": {...}} in the text, in order: bare, in a
    list, fenced, between tags, or inside doubled braces (the scan tries each brace)."""
    calls, at, decoder = [], 0, json.JSONDecoder()
    while (at := content.find("{", at)) >= 0:
        try:
            value, end = decoder.raw_decode(content, at)
        except ValueError:
            at += 1
            continue
        if not isinstance(value, dict):
            at += 1
            continue
        arguments = value.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = None
        if value.get("name") in names and isinstance(arguments, dict):
            calls.append(text_call(len(calls), value["name"], arguments))
            at = end
        else:
            at += 1
    return calls


def ask(server, messages, tools, extra):
    """One step: the server's answer and its prompt tokens (computed, reused)."""
    response = server.client.chat.completions.create(model="any", messages=messages, tools=tools, temperature=0,
                                                     max_tokens=MAX_TOKENS, extra_body=extra)
    extra = response.model_extra or {}
    if server.name == "llama-server":
        t = extra.get("timings") or {}
        computed, reused = t.get("prompt_n", 0), t.get("cache_n", 0)
    else:
        t = extra.get("x_timings") or {}
        reused = t.get("prompt_reused_tokens", 0)  # the restored ones among them
        computed = t.get("prompt_tokens", 0) - reused
    return response.choices[0], computed, reused


def run_task(server, extra, task, model_name, reads_text):
    """The task's steps per turn (each a list of {name: arguments} or the reply's text), and what
    the steps cost."""
    category = task["id"].rsplit("_", 1)[0]
    long_context = "long_context" in category
    functions = list(task["function"])
    tools = bfcl_tools(functions)
    messages, turns, steps = [], [], []
    for turn, user_messages in enumerate(task["question"]):
        if str(turn) in task["missed_function"]:
            functions += task["missed_function"][str(turn)]
            tools = bfcl_tools(functions)
            user_messages = [{"role": "user", "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}]
        messages += user_messages
        responses, forced_quit = [], False
        while True:
            asked = time.perf_counter()
            try:
                choice, computed, reused = ask(server, messages, tools, extra)
            except openai.APIStatusError as e:  # an error response (a call cut at max_tokens): the turn ends
                responses.append(f"error {e.status_code}: {e.message}")
                steps.append({"turn": turn, "ms": 1000 * (time.perf_counter() - asked), "computed": 0, "reused": 0,
                              "calls": 0, "finish": "error"})
                break
            wall_ms = 1000 * (time.perf_counter() - asked)
            message = choice.message
            calls = message.tool_calls or []
            if not calls and reads_text:
                calls = calls_in_text(message.content or "", {f["name"] for f in functions})
            step = [{c.function.name: c.function.arguments} for c in calls] if calls else (message.content or "")
            responses.append(step)
            steps.append({"turn": turn, "ms": wall_ms, "computed": computed, "reused": reused, "calls": len(calls),
                          "finish": choice.finish_reason})
            assistant = {"role": "assistant", "content": "" if calls else message.content or ""}
            if calls:
                assistant["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.function.name, "arguments": c.function.arguments}} for c in calls]
            messages.append(assistant)
            try:
                decoded = executable(step)
                if is_empty_execute_response(decoded):
                    break
            except Exception:  # BFCL's handler ends the turn on any output it cannot execute
                break
            results, _ = execute_multi_turn_func_call(decoded, task["initial_config"], task["involved_classes"],
                                                      model_name, task["id"], long_context=long_context)
            messages += [{"role": "tool", "content": result, "tool_call_id": c.id} for result, c in zip(results, calls)]
            if len([s for s in steps if s["turn"] == turn]) > MAXIMUM_STEP_LIMIT:
                forced_quit = True
                break
        turns.append(responses)
        if forced_quit:
            break
    return turns, steps


def grade(task, turns, model_name):
    """bfcl_eval's verdict on the task, its steps decoded as its eval runner decodes them."""
    if len(turns) != len(task["ground_truth"]):
        return False, "force-terminated (step limit)"
    decoded = []
    for responses in turns:
        kept = []
        for step in responses:
            try:
                calls = executable(step)
            except Exception:
                continue
            if not is_empty_execute_response(calls):
                kept.append(calls)
        decoded.append(kept)
    category = task["id"].rsplit("_", 1)[0]
    verdict = multi_turn_checker(decoded, task["ground_truth"], copy.deepcopy(task), category, model_name)
    return bool(verdict["valid"]), "" if verdict["valid"] else verdict.get("error_type", "wrong")


# ------------------------------------------------------------------ the run and its report

def sample_tasks(tasks, n, seed):
    if n <= 0 or n >= len(tasks):
        return tasks
    chosen = sorted(random.Random(seed).sample(range(len(tasks)), n))
    return [tasks[i] for i in chosen]


def summarize(lines):
    rows, summary = [], {}
    for (category, server), tasks in sorted(group(lines).items()):
        steps = [s for t in tasks for s in t["steps"]]
        later = [s for t in tasks for s in t["steps"][1:]]
        reused = sum(s["reused"] for s in later) / max(sum(s["reused"] + s["computed"] for s in later), 1)
        entry = {"tasks": len(tasks), "correct": sum(t["valid"] for t in tasks),
                 "calls_per_task": sum(s["calls"] for s in steps) / len(tasks),
                 "steps_per_task": len(steps) / len(tasks),
                 "task_s": geomean([sum(s["ms"] for s in t["steps"]) / 1000 for t in tasks]),
                 "step_ms": geomean([s["ms"] for s in steps]),
                 # A task's first step is its prompt's prefill, which a server may restore from an
                 # earlier task's (llama-server keeps prompts in RAM; the bench runs ours without
                 # its prompt cache): the later steps, errors aside, compare the servers alike.
                 "later_step_ms": geomean([s["ms"] for s in later if s["finish"] != "error"] or [0]),
                 "reused_after_first_step": reused}
        summary[f"{category}/{server}"] = entry
        rows.append([category, server, f"{entry['correct']}/{entry['tasks']}", f"{entry['calls_per_task']:.1f}",
                     f"{entry['steps_per_task']:.1f}", f"{entry['task_s']:.1f}", f"{entry['step_ms']:.0f}",
                     f"{entry['later_step_ms']:.0f}",
                     f"{100 * reused:.1f} %"])
    header = ["category", "server", "correct (bfcl_eval)", "calls / task", "steps / task", "task s (geomean)",
              "step ms (geomean)", "a later step's ms (geomean)", "prompt reused after a task's first step"]
    return summary, table(header, rows)


def group(lines):
    by = {}
    for line in lines:
        by.setdefault((line["category"], line["server"]), []).append(line)
    return by


def main():
    parser = servers_parser(__doc__.split("\n\n")[0], "tasks per category (0: all)", 16384)
    parser.add_argument("--categories", default=CATEGORIES)
    parser.add_argument("--ids", default="", help="these tasks only (comma-separated ids), not a sample")
    args = parser.parse_args()
    ids = set(filter(None, args.ids.split(",")))
    model = Path(args.model)
    out, lines_path, lines = resumed_run(args.out, "multi-turn", model, "tasks.jsonl")
    done = {(line["server"], line["id"]) for line in lines}
    data = CACHE / "data" / "bfcl"
    for server_name in args.servers.split(","):
        todo = [(category, task) for category in args.categories.split(",")
                for task in (sample_tasks(load_tasks(data, category), args.sample, args.seed) if not ids else
                             [t for t in load_tasks(data, category) if t["id"] in ids])
                if (server_name, task["id"]) not in done]
        if not todo:
            continue
        kind, extra, reads_text = SETTINGS[server_name]
        server = start_server(kind, model, args, out / f"{server_name.replace('/', '-')}.log")
        try:
            for category, task in todo:
                model_name = re.sub(r"\W", "_", f"{server_name}_{model.stem}")
                started = time.perf_counter()
                turns, steps = run_task(server, extra, task, model_name, reads_text)
                valid, why = grade(task, turns, model_name)
                line = {"server": server_name, "category": category, "id": task["id"], "valid": valid, "why": why,
                        "wall_s": time.perf_counter() - started, "steps": steps, "turns": turns}
                lines.append(line)
                with lines_path.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                log(f"{server_name} {task['id']}: {'correct' if valid else why}, {len(steps)} steps, "
                    f"{line['wall_s']:.0f} s")
        finally:
            server.stop()
    summary, markdown = summarize(lines)
    write_summary(out, "BFCL v4 multi-turn", model, args, summary, markdown,
                  **({"ids": sorted(ids)} if ids else {"sample": args.sample}))
    print(markdown)


if __name__ == "__main__":
    main()
