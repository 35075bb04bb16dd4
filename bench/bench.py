#!/usr/bin/env python3
"""The benchmark suite: every measurement of the evaluation, side by side, with a report.

    python3 bench/bench.py [--quick] [--models default|all|NAME,...] [--out DIR]
                             [--stages costs,modes,example,rss,bandwidth,coldstart,report]

Stages (each resumes: a finished file is kept, a BFCL run continues where it stopped):
  costs      the time of a pass carrying 1..8 tokens, per model (Table 2)
  modes      every decoding mode interleaved case by case over the BFCL sample, per model
             (Table 5; the SchemaWeaver ablation rows of Table 7 on the default and the
             largest model; the phases of Table 8 and Figures 11 and 12 come from these runs)
  example    one call (2 required arguments, 1 optional) through its phases (Table 8)
  rss        peak resident memory per mode, one process per mode (Table 9)
  bandwidth  latency against the memory bandwidth left by a co-runner on the other core
             (Figure 13, an emulation of a slower memory bus)
  coldstart  the first call after launch with the model out of the page cache, per packing,
             load method and storage speed, with each packing's accuracy (bench/coldstart.py)
  peers      the BFCL sample end to end over HTTP through llama-server (scripts/setup.sh --peers)
             and `schemaweaver serve`, a restart with the prompt cache, a three-turn MCP agent
             task (bench/peers.py, run with the test venv's Python for the openai client)
  report     Markdown tables, JSON and SVG figures in DIR; BENCHMARKS.md, the index of every
             report under bench/results, is written anew

Uses only the standard library; the engine itself needs no Python.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import coldstart
from benchlib import (CACHE, CATEGORIES, CLI, DEFAULT_MODEL, GROUPS, ROOT, bfcl_command, fmt, geomean, log, machine,
                      read_lines, run, svg_bars, svg_lines, svg_stacked, table)

MEMBW = ROOT / "build" / "bench" / "membw"

TABLE5_MODES = ["free", "constrained", "jump-forward", "speculative", "speculative/draft-model", "schemaweaver",
                "schemaweaver/unverified", "schemaweaver/read-only"]
# Same-vocabulary pairs: the model, and the smaller one that drafts for it in speculative/draft-model.
DRAFT_MODELS = {"qwen2.5-coder-1.5b-instruct-Q4_K_M": "qwen2.5-coder-0.5b-instruct-Q4_K_M"}
# The design steps one at a time (the paper's Table 7), then the argument set given (upper bound).
# Provisional calls only exist for read-only tools, so they are the step that marks the tools so.
ABLATION = [("jump-forward", "jump-forward (baseline)"),
            ("schemaweaver/no-parallel/no-padding", "+ skeleton, values one branch at a time"),
            ("schemaweaver/no-padding/branches", "+ parallel values"),
            ("schemaweaver/branches", "+ padding by measured cost"),
            ("schemaweaver", "+ each call planned by its predicted cost: branches or serial values (the default)"),
            ("schemaweaver/unverified", "without verification: the branches' values stand unchecked"),
            ("schemaweaver/read-only", "+ provisional calls (tools read-only)"),
            ("schemaweaver/given-args/read-only", "argument set given (upper bound)"),
            ("schemaweaver/drafts", "beyond the paper: + prompt-lookup drafts in the value branches"),
            ("schemaweaver/whole-turn", "beyond the paper: + the next call guessed in the write-back pass")]
# Rows whose answers must equal another mode's (the same decisions, made in fewer passes).
# Verified SchemaWeaver writes the serial reference's calls (jump-forward, the same grammar).
SAME_AS = {"schemaweaver/no-parallel/no-padding": "jump-forward", "schemaweaver/no-padding/branches": "jump-forward",
           "schemaweaver/branches": "jump-forward", "schemaweaver": "jump-forward",
           "schemaweaver/read-only": "schemaweaver", "schemaweaver/drafts": "schemaweaver",
           "schemaweaver/whole-turn": "schemaweaver",
           "speculative": "constrained", "speculative/draft-model": "constrained",
           # Two serial modes that choose alike on the same logits: how often rounding alone parts them.
           "jump-forward": "constrained"}
RSS_MODES = ["constrained", "jump-forward", "speculative", "schemaweaver"]
BANDWIDTH_MODES = ["constrained", "jump-forward", "schemaweaver"]
# One call through its phases (the paper's Table 8 example: 2 required arguments, 1 optional).
EXAMPLE = {"tools": ROOT / "examples" / "traffic_tools.json", "read_only": "get_traffic_info",
           "prompt": "How bad is the traffic from Oakland to San Jose if I leave at 17:30?"}
EXAMPLE_MODES = ["constrained", "jump-forward", "schemaweaver"]


def model_files(which):
    models = sorted(p for p in (CACHE / "models").glob("*.gguf"))
    if not models:
        sys.exit("bench.py: no models in %s; run scripts/setup.sh first" % (CACHE / "models"))
    if which == "default":
        return [p for p in models if p.stem == DEFAULT_MODEL]
    if which == "all":
        return sorted(models, key=lambda p: p.stat().st_size)
    wanted = which.split(",")
    chosen = [p for p in models if p.stem in wanted]
    if len(chosen) != len(wanted):
        sys.exit("bench.py: unknown model in %s (have: %s)" % (which, ", ".join(p.stem for p in models)))
    return chosen


# ---------------------------------------------------------------- stages


def stage_costs(cfg, model, out):
    path = out / f"costs-{model.stem}.json"
    if path.exists():
        return
    result = run([CLI, "costs", "-m", model, "--rounds", cfg.rounds, "--json"], capture_output=True, text=True)
    path.write_text(result.stdout)


def draft_model(model):
    """The GGUF that drafts for `model` in speculative/draft-model, or None."""
    path = CACHE / "models" / f"{DRAFT_MODELS.get(model.stem, '')}.gguf"
    return path if model.stem in DRAFT_MODELS and path.exists() else None


def modes_for(cfg, model, largest):
    modes = [m for m in TABLE5_MODES if m != "speculative/draft-model" or draft_model(model)]
    if model.stem == DEFAULT_MODEL or model == largest:
        modes += [m for m, _ in ABLATION if m not in modes]
    return [m for m in modes if not cfg.modes or m in cfg.modes.split(",")]


def stage_modes(cfg, model, out, largest):
    stem = out / f"modes-{model.stem}"
    draft = draft_model(model)
    drawn = ["--temperature", cfg.temperature, "--sampling-seed", 1] if cfg.temperature else []
    run(bfcl_command(model, cfg.sample, modes_for(cfg, model, largest), f"{stem}.jsonl", f"{stem}.summary.json",
                     seed=1, repeat=cfg.repeat, warmup=1) + ["--resume"] + (["--draft-model", draft] if draft else [])
        + drawn, stdout=open(f"{stem}.md", "w"))


def stage_structured(cfg, model, out):
    run([CACHE / "venv" / "bin" / "python", ROOT / "bench" / "peers.py", "--model", model, "--sample", cfg.sample,
         "--parts", "structured", "--structured-cases", 10 if cfg.quick else 50, "--out", out / "peers"])


def stage_peers(cfg, model, out):
    run([CACHE / "venv" / "bin" / "python", ROOT / "bench" / "peers.py", "--model", model, "--sample", cfg.sample,
         "--restart-cases", 4 if cfg.quick else 10, "--settings", cfg.peer_settings, "--out", out / "peers"])


def stage_rss(cfg, model, out):
    path = out / f"rss-{model.stem}.json"
    if path.exists():
        return
    rss = {}
    for mode in RSS_MODES:
        summary = out / f"rss-{model.stem}-{mode}.tmp.json"
        run(bfcl_command(model, cfg.rss_sample, mode, os.devnull, summary, warmup=0), stdout=subprocess.DEVNULL)
        rss[mode] = json.loads(summary.read_text())["modes"][0]["peak_rss_kb"]
        summary.unlink()
    path.write_text(json.dumps({"cases": cfg.rss_sample, "peak_rss_kb": rss}, indent=2) + "\n")


def stage_example(cfg, model, out):
    path = out / f"example-{model.stem}.json"
    if path.exists():
        return
    runs = {}
    for mode in EXAMPLE_MODES:
        result = run([CLI, "call", "-m", model, "--tools", EXAMPLE["tools"], "-p", EXAMPLE["prompt"],
                      "--read-only", EXAMPLE["read_only"], "--mode", mode, "--json"],
                     capture_output=True, text=True)
        runs[mode] = json.loads(result.stdout)
    path.write_text(json.dumps(runs, indent=2) + "\n")


def probe_bandwidth(core):
    result = run(["taskset", "-c", core, MEMBW, "probe", "--seconds", 2], capture_output=True, text=True)
    return json.loads(result.stdout)["read_gb_per_s"]


def stage_bandwidth(cfg, model, out):
    """The engine on core 0 with one thread in every arm; a co-runner on core 1 takes a share
    of the memory bus in all but the first arm."""
    path = out / f"bandwidth-{model.stem}.json"
    arms = json.loads(path.read_text()) if path.exists() else []
    done = {a["intensity"] for a in arms}
    for intensity in cfg.intensities:
        if intensity in done:
            continue
        corunner = None
        if intensity > 0:
            corunner = subprocess.Popen(["taskset", "-c", "1", str(MEMBW), "load", "--intensity", str(intensity)])
            time.sleep(1)
        try:
            gbps = probe_bandwidth(0)
            stem = out / f"bandwidth-{model.stem}-{intensity}"
            run(["taskset", "-c", "0"] + bfcl_command(model, cfg.bandwidth_sample, BANDWIDTH_MODES, f"{stem}.jsonl",
                                                      f"{stem}.summary.json", threads=1, warmup=1) + ["--resume"],
                stdout=subprocess.DEVNULL)
            summary = json.loads(Path(f"{stem}.summary.json").read_text())
        finally:
            if corunner:
                corunner.terminate()
                corunner.wait()
        arms.append({"intensity": intensity, "read_gb_per_s": gbps,
                     "latency_geomean_ms": {m["mode"]: m["latency_geomean_ms"] for m in summary["modes"]},
                     "passes_per_call": {m["mode"]: m["passes_per_call"] for m in summary["modes"]}})
        path.write_text(json.dumps(arms, indent=2) + "\n")


# ---------------------------------------------------------------- report


def stopped_at_max_tokens(line):
    return "max_tokens" in (line.get("error") or "")


def same_answers(lines, mode, reference):
    """'n/m as <reference>, calls k/m': cases where `mode` wrote exactly the text `reference`
    wrote, and cases whose calls (names and arguments) are the same; and how many of the others
    both stopped at max_tokens (cut at another point: the modes count the tokens of a turn that
    runs on differently)."""
    if not reference:
        return ""
    by_id = {}
    for line in lines:
        by_id.setdefault(line["id"], {})[line["mode"]] = line
    pairs = [t for t in by_id.values() if mode in t and reference in t]
    if not pairs:
        return ""
    same = sum(t[mode].get("output") == t[reference].get("output") for t in pairs)
    cut = sum(t[mode].get("output") != t[reference].get("output") and stopped_at_max_tokens(t[mode]) and
              stopped_at_max_tokens(t[reference]) for t in pairs)
    text = f"{same}/{len(pairs)} as `{reference}`"
    if all("calls" in t[mode] and "calls" in t[reference] for t in pairs):
        text += f", calls {sum(t[mode]['calls'] == t[reference]['calls'] for t in pairs)}/{len(pairs)}"
    return text + (f" (+{cut} both cut at max_tokens)" if cut else "")


def summarise(lines):
    """Per mode: correctness, latency geomean, passes per call, over the given lines."""
    modes = {}
    for line in lines:
        modes.setdefault(line["mode"], []).append(line)
    out = {}
    for mode, rows in modes.items():
        timed = [r for r in rows if not r.get("not_run")]
        out[mode] = {"cases": len(rows), "correct": sum(bool(r.get("valid")) for r in rows),
                     "latency": geomean([r["latency_ms"] for r in timed]),
                     "passes": sum(r["stats"]["call_passes"] for r in timed) / max(len(timed), 1)}
    return out


def this_machine():
    info = machine()
    return f"{info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB, Linux {info['kernel']}"


def note_measured(out, stage, model):
    """Records the machine and date a stage measured a model on: a results folder filled over
    several sessions can hold measurements from different machines."""
    path = out / "measured-on.json"
    notes = json.loads(path.read_text()) if path.exists() else {}
    notes[f"{stage} {model.stem}"] = {"machine": this_machine(), "date": f"{datetime.date.today()}"}
    path.write_text(json.dumps(notes, indent=1, sort_keys=True) + "\n")


def measured_on(out):
    """The machines and dates of the folder's measurements, each with the stages and models it
    measured (the machine of this report's run if nothing was noted)."""
    path = out / "measured-on.json"
    notes = json.loads(path.read_text()) if path.exists() else {}
    if not notes:
        return f"Machine: {this_machine()}; no GPU.  \nDate: {datetime.date.today()}."
    by_machine = {}
    for key, note in sorted(notes.items()):
        stage, model = key.split(" ", 1)
        by_machine.setdefault((note["machine"], note["date"]), {}).setdefault(stage, []).append(model)
    lines = [f"{machine_name}, {date}: " + "; ".join(f"{stage} ({', '.join(models)})" for stage, models in stages.items())
             for (machine_name, date), stages in sorted(by_machine.items(), key=lambda item: item[0][1])]
    return "Measured on (no GPU):  \n" + "  \n".join(lines) + "  \n"


def report(cfg, models, out, command):
    sections = []
    machines = measured_on(out)
    data = {"measured_on": machines, "command": command, "models": {}}
    sections.append(f"Command: `{command}`  \n{machines}\nGreedy decoding. Sample: {cfg.sample} BFCL v4 cases "
                    f"from {CATEGORIES.replace(',', ', ')}, even over required-argument counts 1, 2, 3, 4+ "
                    f"(seed 1); modes interleaved case by case in one process after a warm-up case; "
                    f"{cfg.repeat} repetition(s) per case and mode, geometric mean over the repetitions, "
                    f"then over the cases; speedups are ratios of these means.\n")

    # Table 2
    rows = []
    for m in models:
        path = out / f"costs-{m.stem}.json"
        if path.exists():
            costs = json.loads(path.read_text())
            ms = costs["pass_ms_by_tokens"]
            row_ms = costs.get("ms_per_kept_row", 0.0)
            rows.append([m.stem, fmt(ms[0])] + [fmt(v / ms[0], 2) + "x" for v in ms] + [fmt(row_ms, 2)])
            data["models"].setdefault(m.stem, {})["pass_ms_by_tokens"] = ms
            data["models"][m.stem]["ms_per_kept_row"] = row_ms
    if rows:
        sections.append("## Table 2: cost of a pass by the tokens it carries\n\n"
                        "Median of interleaved rounds after a 256-token context (`schemaweaver costs`), "
                        "relative to a pass carrying one token and keeping the logits of its last; the last "
                        "column is what each further kept row of logits adds (a branch's, a draft's).\n\n" +
                        table(["model", "1 token (ms)"] + [f"{n}" for n in range(1, len(rows[0]) - 2)]
                              + ["kept row (ms)"], rows))

    for m in models:
        summary_path = out / f"modes-{m.stem}.summary.json"
        if not summary_path.exists():
            continue
        summary = json.loads(summary_path.read_text())
        lines = read_lines(out / f"modes-{m.stem}.jsonl")
        modes = {s["mode"]: s for s in summary["modes"]}
        base = modes.get("constrained")
        weight_gb = summary.get("weight_bytes", 0) / 1e9
        data["models"].setdefault(m.stem, {})["modes"] = modes
        rows = []
        for name in TABLE5_MODES:
            s = modes.get(name)
            if not s:
                continue
            rng = f"{s['latency_min_ms']:.0f} / {s['latency_median_ms']:.0f} / {s['latency_max_ms']:.0f}"
            speed = f"{base['latency_geomean_ms'] / s['latency_geomean_ms']:.2f}x" if base else ""
            drafts = (f"{100 * s['accepted_draft_tokens'] / s['draft_tokens']:.0f} %"
                      if s.get("draft_tokens") else "")
            rows.append([name, f"{s['correct']}/{s['cases']}", f"{100 * s['schema_valid']:.0f} %",
                         fmt(s["latency_geomean_ms"]), rng, speed, fmt(s["passes_per_call"]),
                         fmt(s["tokens_per_pass"], 2), fmt(s["passes_per_call"] * weight_gb, 2), drafts,
                         same_answers(lines, name, SAME_AS.get(name) if name.startswith("speculative") or
                                      name in ("schemaweaver", "jump-forward") else None)])
        sections.append(f"## {m.stem}\n\nModel: {summary.get('model_description', '')}, "
                        f"{summary.get('weight_bytes', 0) / 2**20:.0f} MiB of weights; "
                        f"{summary['threads']} threads; {summary['llama']}.\n\n"
                        "### Table 5: modes\n\nTool-call latency: from the end of the prompt prefill until "
                        "every call of the turn can be executed. Weight GB streamed per call = passes x weight "
                        "bytes, a proxy for energy (energy itself cannot be measured here).\n\n" +
                        table(["mode", "correct", "schema-valid", "latency geomean (ms)", "min / median / max",
                               "vs constrained", "passes/call", "tokens/pass", "weight GB/call", "drafts taken",
                               "same answers"],
                              rows))
        # By category group.
        rows = []
        for group, cats in GROUPS.items():
            per_mode = summarise([l for l in lines if l["category"] in cats])
            if "constrained" not in per_mode:
                continue
            b = per_mode["constrained"]
            for name in TABLE5_MODES:
                if name in per_mode:
                    s = per_mode[name]
                    rows.append([group, name, f"{s['correct']}/{s['cases']}", fmt(s["latency"]),
                                 f"{b['latency'] / s['latency']:.2f}x", fmt(s["passes"])])
        sections.append("By category group (the design was tuned on simple_python and multiple only):\n\n" +
                        table(["categories", "mode", "correct", "latency geomean (ms)", "vs constrained",
                               "passes/call"], rows))
        # Table 7
        if "jump-forward" in modes and "schemaweaver" in modes:
            jf = modes["jump-forward"]["latency_geomean_ms"]
            parallel = summarise([l for l in lines if l["category"] in GROUPS["parallel (parallel, parallel_multiple)"]])
            rows = [[label, f"`{mode}`", f"{modes[mode]['correct']}/{modes[mode]['cases']}",
                     fmt(modes[mode]["latency_geomean_ms"]), f"{jf / modes[mode]['latency_geomean_ms']:.2f}x",
                     fmt(modes[mode]["passes_per_call"]),
                     fmt(parallel[mode]["latency"]) if mode in parallel else "",
                     same_answers(lines, mode, SAME_AS.get(mode))]
                    for mode, label in ABLATION if mode in modes]
            sections.append("### Table 7: ablation, one design step at a time\n\n"
                            "Same answers: cases whose text equals that of the mode the row must agree with, then "
                            "cases whose calls (names and arguments) do (its output is meant to be the same; "
                            "llama.cpp's kernels round differently for passes of different shapes, so near-ties "
                            "can flip; the baseline's row shows how often that parts two serial modes).\n\n" +
                            table(["step", "mode", "correct", "latency geomean (ms)", "vs jump-forward",
                                   "passes/call", "parallel categories (ms)", "same answers"], rows))
        # Verification: how often the reference chose otherwise, and what the repair cost.
        verified = [l for l in lines if l["mode"] == "schemaweaver" and not l.get("not_run")]
        if verified and "verification" in verified[0]["stats"]:
            v = {k: sum(l["stats"]["verification"][k] for l in verified) for k in verified[0]["stats"]["verification"]}
            calls = sum(1 for l in verified for e in l["events"] if e["kind"] == "final")
            sampled = sum(l["stats"]["sampled_tokens"] for l in verified)
            repair = [p for l in verified for p in l["stats"]["phases"] if p["name"] == "repair"]
            check_ms = sum(p["ms"] for l in verified for p in l["stats"]["phases"] if p["name"] == "verify")
            by_id = {}
            for l in lines:
                by_id.setdefault(l["id"], {})[l["mode"]] = l
            differ = [(i, m) for i, m in by_id.items() if "jump-forward" in m and "schemaweaver" in m and
                      m["jump-forward"]["output"] != m["schemaweaver"]["output"]]
            margin = lambda l: fmt(l["stats"]["smallest_margin"], 3) if l["stats"].get("smallest_margin") is not None else ""
            same_calls = lambda m: ("yes" if m["jump-forward"]["calls"] == m["schemaweaver"]["calls"] else "no"
                                    ) if "calls" in m["jump-forward"] and "calls" in m["schemaweaver"] else ""
            rows = [[i, margin(m["jump-forward"]), margin(m["schemaweaver"]),
                     str(m["schemaweaver"]["stats"]["verification"]["repaired_calls"]), same_calls(m)]
                    for i, m in differ]
            sections.append(
                "### Verification (lossless SchemaWeaver)\n\n"
                f"Of {calls} calls, {v['repaired_calls']} ({100 * v['repaired_calls'] / max(calls, 1):.1f} %) had a "
                f"value that the serial reference chose otherwise; {v['discarded_tokens']} value tokens were decided "
                f"again ({100 * v['discarded_tokens'] / max(sampled, 1):.1f} % of the {sampled} tokens the model "
                f"chose); {v['checked_tokens']} choices were checked in {check_ms:.0f} ms in all. A repair (the "
                f"reference writing the rest of the call) took {sum(p['passes'] for p in repair) / max(len(repair), 1):.1f} "
                f"passes and {sum(p['ms'] for p in repair) / max(len(repair), 1):.0f} ms on average; calls checked without "
                f"their logits: {v['unverified_calls']}.\n\n"
                f"Cases whose text differs from jump-forward's ({len(differ)} of {len(by_id)}), with the smallest "
                "decision margin (logits) of each answer: the two run passes of other shapes, whose kernels round "
                "differently, and lay the branches' cells out otherwise, which regroups attention's sums, so a "
                "near-tie can go either way (docs/benchmarks.md, \"Why lossless modes differ\").\n\n" +
                (table(["case", "jump-forward smallest margin", "schemaweaver smallest margin", "calls repaired",
                        "same calls"], rows)
                 if rows else ""))
        # Table 8 and Figure 11
        sw_lines = [l for l in lines if l["mode"] == "schemaweaver" and not l.get("not_run")]
        if sw_lines:
            phases = {}
            for l in sw_lines:
                for p in l["stats"]["phases"]:
                    acc = phases.setdefault(p["name"], [0, 0, 0.0])
                    acc[0] += p["passes"]
                    acc[1] += p["tokens"]
                    acc[2] += p["ms"]
            n = len(sw_lines)
            finals = [e["at_ms"] for l in sw_lines for e in l["events"] if e["kind"] == "final"]
            provisional = [e["at_ms"] for l in lines if l["mode"] == "schemaweaver/read-only"
                           for e in l["events"] if e["kind"] == "provisional"]
            rows = [[name, fmt(v[0] / n), fmt(v[1] / n), fmt(v[2] / n)] for name, v in phases.items()]
            sections.append("### SchemaWeaver's phases over the sample (mean per case; Figure 11's data)\n\n" + table(
                ["phase", "passes", "tokens", "ms"], rows) +
                f"\nCalls emitted: final calls at {fmt(geomean(finals))} ms (geomean of {len(finals)}), "
                f"provisional calls (read-only run) at {fmt(geomean(provisional))} ms (geomean of "
                f"{len(provisional)}).\n")
            data["models"][m.stem]["phases"] = {k: [v[0] / n, v[1] / n, v[2] / n] for k, v in phases.items()}
        # Figure 12
        buckets = ["1", "2", "3", "4+"]
        series = [s for s in ("jump-forward", "speculative", "schemaweaver", "schemaweaver/read-only") if s in modes]
        if base and series:
            values = {s: [(base["latency_by_arguments"][b]["latency_geomean_ms"] /
                           modes[s]["latency_by_arguments"][b]["latency_geomean_ms"])
                          if b in modes[s]["latency_by_arguments"] and b in base["latency_by_arguments"] else None
                          for b in buckets] for s in series}
            svg_bars(f"Speedup over constrained decoding by required arguments ({m.stem})", buckets, series,
                     values, "speedup (x)", out / f"fig12-{m.stem}.svg", reference=1.0)
            sections.append(f"### Figure 12: speedup by number of required arguments\n\n![](fig12-{m.stem}.svg)\n")

    # Table 8: one call through its phases
    for m in models:
        path = out / f"example-{m.stem}.json"
        if not path.exists():
            continue
        runs = json.loads(path.read_text())
        rows = []
        for mode, r in runs.items():
            for p in r["stats"]["phases"]:
                rows.append([mode, p["name"], p["passes"], p["tokens"], fmt(p["ms"])])
            for e in r["events"]:
                rows.append([mode, f"{e['kind']} call emitted", "", "", fmt(e["at_ms"])])
            rows.append([mode, "call executable / answer done", "", "",
                         f"{fmt(r['stats']['executable_ms'])} / {fmt(r['stats']['call_ms'])}"])
        call = runs["schemaweaver"]["calls"]
        sections.append(f"## Table 8: one call through its phases ({m.stem})\n\nRequest: \"{EXAMPLE['prompt']}\" "
                        f"with `{EXAMPLE['tools'].relative_to(ROOT)}` (`{EXAMPLE['read_only']}` read-only). "
                        f"SchemaWeaver's call: `{json.dumps(call)}`.\n\n" +
                        table(["mode", "phase / event", "passes", "tokens", "ms"], rows))

    # Figure 11 across models
    phase_models = [m.stem for m in models if "phases" in data["models"].get(m.stem, {})]
    if phase_models:
        layers = ["name", "skeleton", "values", "write-back", "optional"]
        values = {layer: [data["models"][m]["phases"].get(layer, [0, 0, 0])[2] for m in phase_models] for layer in layers}
        svg_stacked("SchemaWeaver: mean time per phase of a turn", phase_models, layers, values, "ms",
                    out / "fig11-phases.svg")
        sections.append("## Figure 11: latency by phase\n\n![](fig11-phases.svg)\n")

    # Table 9
    rows = []
    for m in models:
        path = out / f"rss-{m.stem}.json"
        if path.exists():
            rss = json.loads(path.read_text())["peak_rss_kb"]
            base = rss.get("constrained", 0)
            rows.append([m.stem] + [f"{rss[mode] / 1024:.1f} ({(rss[mode] - base) / 1024:+.1f})" for mode in RSS_MODES])
    if rows:
        sections.append("## Table 9: peak resident memory (MiB; difference from constrained)\n\n"
                        f"One process per mode, {cfg.rss_sample} BFCL cases each (VmHWM).\n\n" +
                        table(["model"] + RSS_MODES, rows))

    # Figure 13
    for m in models:
        path = out / f"bandwidth-{m.stem}.json"
        if not path.exists():
            continue
        arms = sorted(json.loads(path.read_text()), key=lambda a: -a["read_gb_per_s"])
        xs = [a["read_gb_per_s"] for a in arms]
        lat = {mode: [a["latency_geomean_ms"][mode] for a in arms] for mode in BANDWIDTH_MODES}
        speed = {f"{mode} vs constrained": [a["latency_geomean_ms"]["constrained"] / a["latency_geomean_ms"][mode]
                                            for a in arms] for mode in BANDWIDTH_MODES[1:]}
        svg_lines(f"Latency against available memory bandwidth ({m.stem}, 1 thread)", xs, lat,
                  "read bandwidth left by the co-runner (GB/s)", "latency geomean (ms)", out / f"fig13-latency-{m.stem}.svg")
        svg_lines(f"Speedup against available memory bandwidth ({m.stem}, 1 thread)", xs, speed,
                  "read bandwidth left by the co-runner (GB/s)", "speedup (x)", out / f"fig13-speedup-{m.stem}.svg")
        rows = [[a["intensity"], fmt(a["read_gb_per_s"], 2)] + [fmt(a["latency_geomean_ms"][mode]) for mode in BANDWIDTH_MODES] +
                [f"{a['latency_geomean_ms']['constrained'] / a['latency_geomean_ms']['schemaweaver']:.2f}x"]
                for a in sorted(arms, key=lambda a: a["intensity"])]
        sections.append(f"## Figure 13: memory bandwidth ({m.stem})\n\nAn emulation: this machine's memory clock "
                        "cannot be changed, so a co-runner on the other core copies between buffers far larger "
                        "than the caches for a share of every 10 ms (the intensity), and a probe measures the read "
                        "bandwidth left to the engine's core. The engine runs with one thread on core 0 in every "
                        f"arm, the unloaded one included. {cfg.bandwidth_sample} cases. One core can take only "
                        "part of the bus (its outstanding misses are limited), so the range of bandwidths this "
                        "emulation reaches is narrow; the probe's numbers say how narrow.\n\n" +
                        table(["co-runner intensity", "read GB/s"] + [f"{mode} (ms)" for mode in BANDWIDTH_MODES] +
                              ["schemaweaver vs constrained"], rows) +
                        f"\n![](fig13-latency-{m.stem}.svg)\n![](fig13-speedup-{m.stem}.svg)\n")

    sections += coldstart.report(cfg, models, out)
    for m in models:  # each peers report as bench/peers.py wrote it, its headings one level down
        path = out / "peers" / m.stem / "peers.md"
        if path.exists():
            text = path.read_text().replace("# Against", "## Against", 1)
            sections.append(text.replace("](time.svg)", f"](peers/{m.stem}/time.svg)"))
    text = "# Benchmarks\n\n" + "\n".join(sections)
    (out / "report.md").write_text(text)
    (out / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    return text


def measuring_arguments(argv):
    """The command line that measured the results: a report-only run names the run it reports."""
    if "--stages" in argv and argv[argv.index("--stages") + 1] == "report":
        at = argv.index("--stages")
        argv = argv[:at] + argv[at + 2:]
    return argv


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the default model, a small sample: under 10 minutes")
    parser.add_argument("--models", default=None, help="default, all, or model names (default: all; --quick: default)")
    parser.add_argument("--out", default=None, help="results folder (default bench/results/<date>[-quick])")
    parser.add_argument("--stages", default="costs,modes,example,rss,bandwidth,coldstart,report",
                        help="of these, and peers (llama-server side by side) and structured (structured outputs against it)")
    parser.add_argument("--sample", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--modes", default=None, help="run only these of the modes stage's modes (comma-separated)")
    parser.add_argument("--temperature", type=float, default=0,
                        help="the modes stage draws its tokens at this temperature (seed 1; 0: greedy)")
    parser.add_argument("--peer-settings", choices=("all", "best"), default="all",
                        help="the peers stage: every setting, or each server's best one (bench/peers.py --settings)")
    cfg = parser.parse_args()
    quick = cfg.quick
    cfg.models = cfg.models or ("default" if quick else "all")
    cfg.sample = cfg.sample or (10 if quick else 100)
    cfg.repeat = cfg.repeat or (1 if quick else 2)
    cfg.rounds = 5 if quick else 9
    cfg.rss_sample = 3 if quick else 8
    cfg.bandwidth_sample = 4 if quick else 24
    cfg.intensities = [0.0, 1.0] if quick else [0.0, 0.25, 0.5, 1.0]
    cfg.storage_rates = [None, 250] if quick else [None, 250, 100]  # MB/s caps; None: none
    cfg.cold_repeat = 1 if quick else 2
    cfg.corpus_tokens = 1024 if quick else 2048
    cfg.sensitivity_tokens = 32 if quick else 128
    out = Path(cfg.out or ROOT / "bench" / "results" / f"{datetime.date.today()}{'-quick' if quick else ''}")
    out.mkdir(parents=True, exist_ok=True)
    for tool in (CLI, MEMBW, coldstart.PAGECACHE):
        if not tool.exists():
            sys.exit(f"bench.py: {tool} is missing; run scripts/setup.sh first")
    models = model_files(cfg.models)
    largest = max(models, key=lambda p: p.stat().st_size)
    stages = cfg.stages.split(",")
    started = time.time()
    for m in models:
        for stage in stages:
            if stage == "costs":
                stage_costs(cfg, m, out)
            elif stage == "modes":
                stage_modes(cfg, m, out, largest)
            elif stage == "rss":
                stage_rss(cfg, m, out)
            elif stage == "example":
                stage_example(cfg, m, out)
            elif stage == "bandwidth" and (m == largest):
                stage_bandwidth(cfg, m, out)
            elif stage == "coldstart":
                coldstart.stage(cfg, m, out, EXAMPLE)
            elif stage == "peers":
                stage_peers(cfg, m, out)
            elif stage == "structured":
                stage_structured(cfg, m, out)
            else:
                continue
            note_measured(out, stage, m)
        log(f"{m.stem} done, {(time.time() - started) / 60:.1f} min elapsed")
    if "report" in stages:
        command = "python3 bench/bench.py " + " ".join(measuring_arguments(sys.argv[1:]))
        report(cfg, models, out, command.strip())
        write_index()
        log(f"report: {out / 'report.md'}; index: BENCHMARKS.md")


def anchor(heading):
    """The anchor GitHub's Markdown gives a heading."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def write_index():
    """BENCHMARKS.md: every report under bench/results, newest first, with its command, the run's
    summary.md if it has one, and its sections as links. The reports are the one source; this file only points at them."""
    lines = ["# Benchmarks", "",
             "Every suite run's report, newest first (written by `bench/bench.py` when it reports; the",
             "numbers live in the reports and the JSON beside them). docs/benchmarks.md quotes the current ones.", ""]
    for path in sorted((ROOT / "bench" / "results").glob("*/report.md"), key=lambda p: p.parent.name, reverse=True):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text().splitlines()
        command = next((l for l in text if l.startswith("Command:")), "").removeprefix("Command:").strip()
        lines.append(f"## [{path.parent.name}]({rel})")
        lines.append("")
        if command:
            lines.append(f"Command: {command}")
            lines.append("")
        summary = path.parent / "summary.md"  # what a run's author said of it, beside the report
        if summary.exists():
            lines += summary.read_text().rstrip("\n").splitlines() + [""]
        for heading in (l[3:].strip() for l in text if l.startswith("## ")):
            lines.append(f"- [{heading}]({rel}#{anchor(heading)})")
        lines.append("")
    (ROOT / "BENCHMARKS.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
