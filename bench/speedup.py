#!/usr/bin/env python3
"""A mode's speed over a baseline mode, per model and per category group, from the modes stage's
rows (bench.py --stages modes: modes interleaved case by case in one process).

    python3 bench/speedup.py DIR [--base jump-forward] [--modes schemaweaver,schemaweaver/branches] [--by-plan]

Per model (each DIR/modes-MODEL.jsonl[.gz]): the tool-call latency geomean of each mode, its speed
over the base (base geomean / mode geomean), the same per category group, the cases whose answer
text equals the base's and the speed over those alone, and how SchemaWeaver planned its calls
(in branches or serially). --by-plan adds the cases split by whether the answer text is the
base's and whether a call went into branches, each part's count and speed: where the text is the
same the plan can be judged; where it parts, the passes follow different answers.
"""
import argparse
from pathlib import Path

from benchlib import GROUPS, fmt, geomean, read_lines, table


def rows_of(path):
    stem = path.name.split(".jsonl")[0]
    return stem[len("modes-"):], read_lines(path.with_name(stem + ".jsonl"))


def speedups(lines, base, modes):
    by_id = {}
    for line in lines:
        by_id.setdefault(line["id"], {})[line["mode"]] = line
    out = []
    for mode in modes:
        pairs = [t for t in by_id.values() if mode in t and base in t]
        if not pairs:
            continue
        plans = [p["plan"] for t in pairs for p in t[mode]["stats"].get("plans", [])]
        entry = {"mode": mode, "cases": len(pairs),
                 "base_ms": geomean([t[base]["latency_ms"] for t in pairs]),
                 "mode_ms": geomean([t[mode]["latency_ms"] for t in pairs]),
                 "same": sum(t[mode].get("output") == t[base].get("output") for t in pairs),
                 "correct": (sum(t[base]["valid"] for t in pairs), sum(t[mode]["valid"] for t in pairs)),
                 "branches": plans.count("branches"), "serial": plans.count("serial"), "groups": {},
                 "parts": {}}
        # Where the two answers differ (a near-tie decided otherwise, docs/benchmarks.md), the
        # passes differ with the text; the speed of the same answers compares the passes alone.
        same = [t for t in pairs if t[mode].get("output") == t[base].get("output")]
        entry["same_speed"] = (geomean([t[base]["latency_ms"] for t in same]) /
                               geomean([t[mode]["latency_ms"] for t in same])) if same else 0
        for t in pairs:
            branched = any(p["plan"] == "branches" for p in t[mode]["stats"].get("plans", []))
            part = ("same text" if t[mode].get("output") == t[base].get("output") else "text parts") + \
                (", a call in branches" if branched else ", serial")
            entry["parts"].setdefault(part, []).append(t)
        for part, inside in entry["parts"].items():
            entry["parts"][part] = (len(inside), geomean([t[base]["latency_ms"] for t in inside]) /
                                    geomean([t[mode]["latency_ms"] for t in inside]))
        for group, categories in GROUPS.items():
            inside = [t for t in pairs if t[mode]["category"] in categories]
            if inside:
                entry["groups"][group] = geomean([t[base]["latency_ms"] for t in inside]) / geomean(
                    [t[mode]["latency_ms"] for t in inside])
        out.append(entry)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir")
    parser.add_argument("--base", default="jump-forward")
    parser.add_argument("--modes", default="schemaweaver,schemaweaver/branches")
    parser.add_argument("--by-plan", action="store_true", help="the cases split by text and plan")
    args = parser.parse_args()
    rows = []
    parts = []
    seen = set()
    for path in sorted(Path(args.dir).glob("modes-*.jsonl*")):
        model, lines = rows_of(path)
        if model in seen:
            continue
        seen.add(model)
        for e in speedups(lines, args.base, args.modes.split(",")):
            groups = ", ".join(f"{g.split(' ')[0]} {v:.2f}x" for g, v in e["groups"].items())
            rows.append([model, e["mode"], e["cases"], f"{e['correct'][0]} / {e['correct'][1]}", fmt(e["base_ms"]),
                         fmt(e["mode_ms"]), f"{e['base_ms'] / e['mode_ms']:.2f}x", groups,
                         f"{e['same']}/{e['cases']}", f"{e['same_speed']:.2f}x", f"{e['branches']} / {e['serial']}"])
            parts += [[model, e["mode"], part, count, f"{speed:.2f}x"]
                      for part, (count, speed) in sorted(e["parts"].items())]
    print(table(["model", "mode", "cases", f"correct: {args.base} / mode", f"{args.base} ms", "mode ms",
                 f"speed over {args.base}", "by group", "same text", "speed where the text is the same",
                 "calls in branches / serial"], rows), end="")
    if args.by_plan:
        print()
        print(table(["model", "mode", "part", "cases", f"speed over {args.base}"], parts), end="")


if __name__ == "__main__":
    main()
