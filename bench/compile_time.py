#!/usr/bin/env python3
"""What compiling a tool set costs a request, from the lines of `schemaweaver bfcl` runs.

    python3 bench/compile_time.py RUN.jsonl [RUN.jsonl ...]

The BFCL harness gives every call plain ToolSpecs, so each call compiles its tool set
(`stats.compile_ms`): the time a compiled set, kept by an app or by the server's cache, saves
that request. Printed per file and mode: the geometric mean and the maximum of compile_ms, and
its share of the request's engine time (prompt prefill and answer). Standard library only.
"""
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import read_lines  # noqa: E402


def geomean(values):
    return math.exp(sum(math.log(max(v, 1e-6)) for v in values) / len(values)) if values else 0.0


def main(paths):
    print("| run | mode | cases | compile ms, geomean | max | request ms, geomean | share |")
    print("|---|---|---|---|---|---|---|")
    for path in paths:
        by_mode = defaultdict(list)
        for line in read_lines(path):
            stats = line.get("stats")
            if stats and "compile_ms" in stats:
                by_mode[line["mode"]].append((stats["compile_ms"], stats["prompt_ms"] + stats["call_ms"]))
        for mode, rows in by_mode.items():
            compile_ms = [c for c, _ in rows]
            request_ms = [r for _, r in rows]
            share = sum(compile_ms) / sum(request_ms) if sum(request_ms) else 0.0
            print(f"| {Path(path).stem} | {mode} | {len(rows)} | {geomean(compile_ms):.2f} | {max(compile_ms):.1f} | "
                  f"{geomean(request_ms):.0f} | {100 * share:.2f} % |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
