#!/usr/bin/env python3
"""What a run's calls would cost on another machine: its recorded passes priced by that machine's
pass-cost table.

    python3 bench/replay.py price RUN.jsonl[.gz] --costs TABLE.json [--modes a,b]
    python3 bench/replay.py phones --out DIR
    python3 bench/replay.py project [--models NAME,...] [--sample 50] [--out DIR]

Every row of `schemaweaver bfcl --out` holds the answer's passes by the tokens each carried
(stats.passes_by_tokens), the rows of logits they kept beyond one each (stats.extra_kept_rows)
and their measured time (stats.pass_ms). Priced with a table, a case's answer takes its measured
time outside passes (constraints, sampling, bookkeeping, as measured here) plus the table's cost
of each pass and of each further kept row. A table is what `schemaweaver costs --json` prints (the
ms of a pass of 1..8 tokens keeping one row, "pass_ms_by_tokens", and "ms_per_kept_row"),
optionally with "wide_ms_per_token" for passes wider than the table; beyond the table the last
step goes on, or the wide cost per token where that is more - as the engine's own
CostCurve::pass_ms extends a curve. A table without "ms_per_kept_row" prices kept rows at
nothing (the phone tables: the paper measured steps, not rows).

`phones` writes tables for the source paper's two phone core sets (its Table 10, Qwen3-1.7B Q8_0,
four pinned cores): a serial step, a four-sequence step and a prefill token, measured; 2 and 3
tokens interpolated, 5+ tokens continued by the prefill cost per token. Beside each, the variants
that the sensitivity rows use: 2-3 tokens costing as much as 4 (a step that is all overhead), and
5+ tokens at half or twice the prefill cost per token.

`project` runs, per model, jump-forward, constrained and schemaweaver over the BFCL sample three
times - planned with this machine's measured table (the replay's check: predicted within 10 % of
measured), and planned as if on each phone (--pass-costs) - and writes the report (project.md,
project.json) with every command it ran.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchlib import CACHE, CLI, bfcl_command, fmt, geomean, machine, read_lines, run, table

# The source paper's Table 10, the protocol's core sets: ms of a serial decode step, of a
# four-sequence step, of a prefill token (Qwen3-1.7B Q8_0, llama.cpp's batched bench).
PHONES = {"oneplus-12r-4xA715": (54.2, 65.9, 9.8), "pixel-7-2xX1-2xA78": (79.2, 88.0, 10.2)}
WIDTHS = 8


def phone_table(serial, four, prefill, low="linear", beyond=1.0):
    """A pass-cost table of 1..WIDTHS tokens from the three measured points."""
    ms = []
    for w in range(1, WIDTHS + 1):
        if w == 1:
            ms.append(serial)
        elif w <= 4:
            ms.append(four if low == "flat" else serial + (four - serial) * (w - 1) / 3)
        else:
            ms.append(four + (w - 4) * prefill * beyond)
    return {"pass_ms_by_tokens": [round(t, 2) for t in ms], "wide_ms_per_token": prefill * beyond}


def phone_variants():
    """Per phone: the base table, then the sensitivity variants, by name."""
    out = {}
    for phone, points in PHONES.items():
        out[phone] = phone_table(*points)
        out[phone + "+flat-2-3"] = phone_table(*points, low="flat")
        out[phone + "+wide-x0.5"] = phone_table(*points, beyond=0.5)
        out[phone + "+wide-x2"] = phone_table(*points, beyond=2.0)
    return out


def load_table(path):
    table_json = json.loads(Path(path).read_text())
    return table_json if isinstance(table_json, dict) else {"pass_ms_by_tokens": table_json}


def pass_ms(table_json, tokens):
    """The ms of a pass of `tokens` tokens under the table (CostCurve::pass_ms's rule)."""
    ms = table_json["pass_ms_by_tokens"]
    last = len(ms)
    if tokens <= last:
        return ms[tokens - 1]
    step = max(0.0, ms[-1] - ms[-2]) if last > 1 else ms[-1]
    return max(ms[-1] + step * (tokens - last), tokens * table_json.get("wide_ms_per_token", 0.0))


def priced(row, table_json):
    """A row's answer time (ms) with its passes priced by the table."""
    stats = row["stats"]
    outside = stats["call_ms"] - stats["pass_ms"]
    rows = stats.get("extra_kept_rows", 0) * table_json.get("ms_per_kept_row", 0.0)
    return outside + rows + sum(count * pass_ms(table_json, int(tokens))
                                for tokens, count in stats["passes_by_tokens"].items())


def by_mode(rows, modes=None):
    grouped = {}
    for row in rows:
        if "stats" not in row or "passes_by_tokens" not in row["stats"]:
            continue
        if modes and row["mode"] not in modes:
            continue
        grouped.setdefault(row["mode"], []).append(row)
    return grouped


def price_run(rows, table_json, modes=None):
    """Per mode: cases, measured and predicted answer time geomeans (ms)."""
    return {mode: {"cases": len(group), "measured_ms": geomean([r["stats"]["call_ms"] for r in group]),
                   "predicted_ms": geomean([priced(r, table_json) for r in group])}
            for mode, group in by_mode(rows, modes).items()}


def cmd_price(args):
    result = price_run(read_lines(args.run), load_table(args.costs), args.modes.split(",") if args.modes else None)
    rows = [[mode, r["cases"], fmt(r["measured_ms"]), fmt(r["predicted_ms"]), fmt(r["predicted_ms"] / r["measured_ms"], 3)]
            for mode, r in result.items()]
    print(table(["mode", "cases", "measured ms (geomean)", "predicted ms", "predicted / measured"], rows), end="")


def cmd_phones(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, table_json in phone_variants().items():
        (out / f"{name}.json").write_text(json.dumps(table_json, indent=1) + "\n")
        print(out / f"{name}.json")


MODES = ["jump-forward", "constrained", "schemaweaver"]


def model_path(name):
    return CACHE / "models" / f"{name}.gguf"


def cmd_project(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tables_dir = out / "tables"
    cmd_phones(argparse.Namespace(out=tables_dir))
    report = {"machine": machine(), "sample": args.sample, "models": {}, "commands": []}
    for name in args.models.split(","):
        model = model_path(name)
        own = tables_dir / f"here-{name}.json"
        command = [CLI, "costs", "-m", model, "--json"]
        report["commands"].append(" ".join(str(c) for c in command) + f" > {own}")
        with open(own, "w") as f:
            run(command, stdout=f)
        plans = {"here": own, **{phone: tables_dir / f"{phone}.json" for phone in PHONES}}
        entry = report["models"].setdefault(name, {})
        for plan, plan_table in plans.items():
            rows_path = out / f"{name}-{plan}.jsonl"
            command = bfcl_command(model, args.sample, MODES, rows_path, out / f"{name}-{plan}.summary.json",
                                   pass_costs=plan_table, repeat=1)
            report["commands"].append(" ".join(str(c) for c in command))
            if not rows_path.exists():
                run(command, stdout=subprocess.DEVNULL)
            rows = read_lines(rows_path)
            priced_by = {plan: price_run(rows, load_table(plan_table))}
            if plan != "here":  # the sensitivity: the same run priced by the variants of its table
                for variant in ("+flat-2-3", "+wide-x0.5", "+wide-x2"):
                    priced_by[plan + variant] = price_run(rows, load_table(tables_dir / f"{plan}{variant}.json"))
            entry[plan] = priced_by
    (out / "project.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "project.md").write_text(markdown(report))
    print(out / "project.md")


def markdown(report):
    lines = [f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores. BFCL sample of "
             f"{report['sample']} cases; answer time (after the prompt) geomean, ms.\n"]
    check, phones = [], []
    for name, entry in report["models"].items():
        here = entry["here"]["here"]
        for mode in MODES:
            r = here[mode]
            check.append([name, mode, fmt(r["measured_ms"]), fmt(r["predicted_ms"]),
                          f"{100 * (r['predicted_ms'] / r['measured_ms'] - 1):+.1f} %"])
        for phone in PHONES:
            for table_name, result in entry[phone].items():
                sw, jf, cons = (result[m]["predicted_ms"] for m in ("schemaweaver", "jump-forward", "constrained"))
                phones.append([name, table_name, fmt(jf), fmt(cons), fmt(sw), fmt(jf / sw, 2) + "x",
                               fmt(cons / sw, 2) + "x"])
    lines.append("Planned and priced with this machine's own measured table (the replay's check):\n")
    lines.append(table(["model", "mode", "measured", "predicted", "error"], check))
    lines.append("\nPlanned with each phone's table (--pass-costs), priced with it and its variants:\n")
    lines.append(table(["model", "table", "jump-forward", "constrained", "schemaweaver", "speed vs jump-forward",
                        "speed vs constrained"], phones))
    lines.append("\nCommands:\n\n" + "\n".join(f"    {c}" for c in report["commands"]) + "\n")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("price", help="price a run's passes with a table")
    p.add_argument("run")
    p.add_argument("--costs", required=True)
    p.add_argument("--modes", default="")
    p.set_defaults(func=cmd_price)
    p = sub.add_parser("phones", help="write the phone tables")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_phones)
    p = sub.add_parser("project", help="run and report the projections")
    p.add_argument("--models", default="qwen2.5-coder-0.5b-instruct-Q4_K_M")
    p.add_argument("--sample", type=int, default=50)
    p.add_argument("--out", default="bench/results/projections")
    p.set_defaults(func=cmd_project)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
