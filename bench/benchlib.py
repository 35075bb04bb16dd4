"""What the benchmark scripts share: paths, running and logging commands, statistics, Markdown
tables and SVG charts, results kept lean (standard library only).

    python3 bench/benchlib.py compact DIR    # per-case rows under DIR gzipped, logs removed
"""
import argparse
import datetime
import gzip
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SCHEMAWEAVER_CACHE", Path.home() / ".cache" / "schemaweaver"))
# SCHEMAWEAVER_CLI: a copy of the binary, so that a long run goes on while the tree is rebuilt.
CLI = Path(os.environ.get("SCHEMAWEAVER_CLI", ROOT / "build" / "apps" / "cli" / "schemaweaver"))
DEFAULT_MODEL = "SmolLM2-135M-Instruct-Q4_1"
CATEGORIES = "simple_python,multiple,parallel,parallel_multiple,live_simple,live_multiple"
# Categories by role: the tuning set the design was adjusted on, and held-out data.
GROUPS = {"tuning (simple_python, multiple)": ("simple_python", "multiple"),
          "parallel (parallel, parallel_multiple)": ("parallel", "parallel_multiple"),
          "held-out (live_simple, live_multiple)": ("live_simple", "live_multiple")}


def log(message):
    print(f"[bench {datetime.datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def run(command, **kwargs):
    log(" ".join(str(c) for c in command))
    return subprocess.run([str(c) for c in command], check=True, **kwargs)


def bfcl_command(model, sample, modes, out, summary, **flags):
    """`schemaweaver bfcl` over the suite's categories and sample; `flags` become options
    (repeat=2 -> --repeat 2)."""
    command = [CLI, "bfcl", "-m", model, "--data", CACHE / "data" / "bfcl", "--categories", CATEGORIES,
               "--sample", sample, "--modes", modes if isinstance(modes, str) else ",".join(modes),
               "--out", out, "--summary-json", summary]
    for name, value in flags.items():
        command += [f"--{name.replace('_', '-')}", value]
    return command


def servers_parser(description, sample_help, ctx):
    """The options of a benchmark that runs `schemaweaver serve` and llama-server side by side:
    --model, --servers, --sample, --seed, --threads, --ctx, --out (the caller adds its own)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", required=True)
    parser.add_argument("--servers", default="schemaweaver,llama-server")
    parser.add_argument("--sample", type=int, default=10, help=sample_help)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", default="2")
    parser.add_argument("--ctx", default=str(ctx))
    parser.add_argument("--out", default=None)
    return parser


def machine():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(os.sysconf("SC_PAGE_SIZE") *
            os.sysconf("SC_PHYS_PAGES") / 2**30, 1), "kernel": platform.release()}


def geomean(values):
    values = [max(v, 1e-3) for v in values]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def results_file(path):
    """A results file as written (PATH) or as kept (PATH.gz, see compact); None if neither is."""
    path = Path(path)
    for candidate in (path, path.with_name(path.name + ".gz")):
        if candidate.exists():
            return candidate
    return None


def read_lines(path):
    """The JSON lines of a results file, plain or gzipped; [] where there is none."""
    found = results_file(path)
    if found is None:
        return []
    with (gzip.open(found, "rt") if found.suffix == ".gz" else open(found)) as f:
        return [json.loads(line) for line in f if line.strip()]


def resumed_run(out, kind, model, file_name):
    """A side-by-side run's folder (`out`, else results/KIND-MODEL beside this file), made if
    need be, its JSON lines file and the lines a previous run left there (a rerun skips them)."""
    folder = Path(out or Path(__file__).parent / "results" / f"{kind}-{Path(model).stem}")
    folder.mkdir(parents=True, exist_ok=True)
    return folder, folder / file_name, read_lines(folder / file_name)


def write_summary(out, title, model, args, summary, markdown, **fields):
    """A run's summary.json (model, machine, seed, `fields`, the results) and summary.md (`title`,
    the model, the sample's seed, the machine and threads, then the table)."""
    (out / "summary.json").write_text(json.dumps({"model": Path(model).name, "machine": machine(), **fields,
                                                  "seed": args.seed, "results": summary}, indent=1))
    (out / "summary.md").write_text(f"{title}, {Path(model).name}, a sample of each category (seed {args.seed}; "
                                    f"tasks counted in the table); {machine()['cpu']}, {args.threads} threads"
                                    f"\n\n{markdown}\n")


def compact(directory):
    """Keeps a finished run lean: its per-case rows (*.jsonl) gzipped, its logs (*.log) removed;
    reports, summaries and figures stay. The report scripts read the rows either way."""
    for path in sorted(Path(directory).rglob("*.jsonl")):
        with open(path, "rb") as plain, open(path.with_name(path.name + ".gz"), "wb") as packed:
            packed.write(gzip.compress(plain.read(), mtime=0))
        path.unlink()
    for path in sorted(Path(directory).rglob("*.log")):
        path.unlink()


def fmt(value, digits=1):
    return f"{value:.{digits}f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]


class Plot:
    """An SVG chart: title, axes with a y grid from 0 to ymax, a legend on the right."""
    WIDTH, HEIGHT, LEFT, TOP, BOTTOM, RIGHT = 760, 360, 70, 40, 60, 170

    def __init__(self, title, ylabel, ymax, xlabel=""):
        self.plot_w = self.WIDTH - self.LEFT - self.RIGHT
        self.plot_h = self.HEIGHT - self.TOP - self.BOTTOM
        self.ymax = max(ymax, 1e-9) * 1.1
        left, top, w, h = self.LEFT, self.TOP, self.plot_w, self.plot_h
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.WIDTH}" height="{self.HEIGHT}" '
            'font-family="sans-serif" font-size="12">',
            f'<text x="{self.WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
            f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" stroke="black"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + h}" stroke="black"/>',
            f'<text x="{left + w / 2}" y="{self.HEIGHT - 15}" text-anchor="middle">{xlabel}</text>',
            f'<text x="15" y="{top + h / 2}" transform="rotate(-90 15 {top + h / 2})" text-anchor="middle">{ylabel}</text>']
        for i in range(5):
            v = self.ymax * i / 4
            self.parts.append(f'<text x="{left - 5}" y="{self.y(v) + 4}" text-anchor="end">{v:.3g}</text>')
            self.parts.append(f'<line x1="{left}" y1="{self.y(v)}" x2="{left + w}" y2="{self.y(v)}" stroke="#ddd"/>')

    def y(self, value):
        return self.TOP + self.plot_h - self.plot_h * value / self.ymax

    def x_label(self, x, text):
        self.parts.append(f'<text x="{x:.1f}" y="{self.TOP + self.plot_h + 18}" text-anchor="middle">{text}</text>')

    def rect(self, x, width, low, high, color):
        self.parts.append(f'<rect x="{x:.1f}" y="{self.y(high):.1f}" width="{width:.1f}" '
                          f'height="{self.y(low) - self.y(high):.1f}" fill="{color}"/>')

    def hline(self, value):
        self.parts.append(f'<line x1="{self.LEFT}" y1="{self.y(value)}" x2="{self.LEFT + self.plot_w}" '
                          f'y2="{self.y(value)}" stroke="black" stroke-dasharray="4"/>')

    def save(self, names, path):
        for i, name in enumerate(names):
            y = self.TOP + 10 + 18 * i
            x = self.LEFT + self.plot_w + 15
            self.parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>')
            self.parts.append(f'<text x="{x + 17}" y="{y + 10}">{name}</text>')
        Path(path).write_text("\n".join(self.parts + ["</svg>"]) + "\n")


def svg_bars(title, groups, series, values, ylabel, path, reference=None):
    """Grouped bars: values[series][group] (None: no bar); a dashed line at `reference`."""
    plot = Plot(title, ylabel, max([v for s in series for v in values[s] if v is not None] + [reference or 0]))
    if reference:
        plot.hline(reference)
    group_w = plot.plot_w / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    for g, group in enumerate(groups):
        plot.x_label(plot.LEFT + group_w * (g + 0.5), group)
        for s, name in enumerate(series):
            if values[name][g] is not None:
                x = plot.LEFT + group_w * (g + 0.1) + bar_w * s
                plot.rect(x, bar_w, 0, values[name][g], COLORS[s % len(COLORS)])
    plot.save(series, path)


def svg_stacked(title, bars, layers, values, ylabel, path):
    """One bar per entry of `bars`, stacked from values[layer][bar]."""
    plot = Plot(title, ylabel, max(sum(values[layer][b] for layer in layers) for b in range(len(bars))))
    bar_w = plot.plot_w / max(len(bars), 1)
    for b, bar in enumerate(bars):
        x = plot.LEFT + bar_w * (b + 0.2)
        base = 0.0
        for l, layer in enumerate(layers):
            plot.rect(x, bar_w * 0.6, base, base + values[layer][b], COLORS[l % len(COLORS)])
            base += values[layer][b]
        plot.x_label(x + bar_w * 0.3, bar)
    plot.save(layers, path)


def svg_points(title, series, xlabel, ylabel, path, connect=None, ticks=None):
    """Points (x, y) of each series, joined by a line for the series named in `connect` (default:
    all); x ticks at `ticks` (default: five across the range)."""
    points = [p for ps in series.values() for p in ps]
    plot = Plot(title, ylabel, max(y for _, y in points), xlabel)
    xmin, xmax = min(x for x, _ in points), max(x for x, _ in points)
    span = xmax - xmin if xmax > xmin else 1.0
    X = lambda x: plot.LEFT + plot.plot_w * (x - xmin) / span
    for x in ticks if ticks is not None else [xmin + span * i / 4 for i in range(5)]:
        plot.x_label(X(x), f"{x:.3g}")
    for s, (name, ps) in enumerate(series.items()):
        color = COLORS[s % len(COLORS)]
        if connect is None or name in connect:
            line = " ".join(f"{X(x):.1f},{plot.y(y):.1f}" for x, y in sorted(ps))
            plot.parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
        plot.parts += [f'<circle cx="{X(x):.1f}" cy="{plot.y(y):.1f}" r="3" fill="{color}"/>' for x, y in ps]
    plot.save(list(series), path)


def svg_lines(title, xs, series, xlabel, ylabel, path):
    """Lines through (xs[i], series[name][i])."""
    svg_points(title, {name: list(zip(xs, vs)) for name, vs in series.items()}, xlabel, ylabel, path, ticks=xs)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "compact":
        sys.exit("usage: python3 bench/benchlib.py compact DIR")
    compact(sys.argv[2])
