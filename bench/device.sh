#!/usr/bin/env bash
# A ready run for a machine with many cores: builds what it needs (scripts/setup.sh, from the
# cached sdist and models where SCHEMAWEAVER_CACHE holds them), measures the machine's pass
# table, runs the BFCL sample in jump-forward and schemaweaver with every core, prices the run's
# passes with the table it measured (bench/replay.py: the replay's check on that machine) and
# writes the report - meant to finish inside 10 minutes on 16 cores.
#
#   bash bench/device.sh [--model NAME] [--sample N] [--out DIR]
#
# NAME is a model file under $SCHEMAWEAVER_CACHE/models without .gguf (default: Qwen2.5-Coder-1.5B).
# The report (DIR/report.md) names the machine, the pass table, each mode's correct calls and
# tool-call latency, schemaweaver's speed over jump-forward, the plans it chose, and the time the
# whole run took. The llama.cpp build is the CPU's (native kernels); a GPU is not used.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SCHEMAWEAVER_CACHE:-$HOME/.cache/schemaweaver}
MODEL=qwen2.5-coder-1.5b-instruct-Q4_K_M
SAMPLE=50
OUT="$ROOT/bench/results/device-$(date +%Y-%m-%d)"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --sample) SAMPLE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "device.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
log() { printf '[device %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=$(date +%s)

models=default
[ "$MODEL" = qwen2.5-coder-0.5b-instruct-Q4_K_M ] || models=all
log "building (scripts/setup.sh, $(nproc) cores)"
bash "$ROOT/scripts/setup.sh" --models "$models" --no-demo --only schemaweaver-cli
CLI="$ROOT/build/apps/cli/schemaweaver"
GGUF="$CACHE/models/$MODEL.gguf"
[ -f "$GGUF" ] || { echo "device.sh: no model $GGUF" >&2; exit 1; }
mkdir -p "$OUT"

log "measuring the pass table"
"$CLI" costs -m "$GGUF" --json >"$OUT/pass-costs.json"
log "running $SAMPLE BFCL cases in jump-forward and schemaweaver"
"$CLI" bfcl -m "$GGUF" --data "$CACHE/data/bfcl" \
  --categories simple_python,multiple,parallel,parallel_multiple,live_simple,live_multiple \
  --sample "$SAMPLE" --modes jump-forward,schemaweaver --out "$OUT/rows.jsonl" \
  --summary-json "$OUT/summary.json" >"$OUT/summary.txt"
python3 "$ROOT/bench/replay.py" price "$OUT/rows.jsonl" --costs "$OUT/pass-costs.json" >"$OUT/replay.md"

python3 - "$OUT" "$MODEL" "$SAMPLE" "$(( $(date +%s) - started ))" <<'PY'
import json, sys
from pathlib import Path
out, model, sample, seconds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
table = json.loads((out / "pass-costs.json").read_text())
summary = json.loads((out / "summary.json").read_text())
rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines() if line.strip()]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
ms = table["pass_ms_by_tokens"]
plans = [p["plan"] for r in rows if r["mode"] == "schemaweaver" for p in r["stats"].get("plans", [])]
modes = {m["mode"]: m for m in summary["modes"]}
lines = [f"# {model} on {cpu}, {table.get('threads', '?')} threads\n",
         "| tokens in a pass | " + " | ".join(str(i + 1) for i in range(len(ms))) + " |",
         "|---|" + "---|" * len(ms),
         "| ms | " + " | ".join(f"{t:.1f}" for t in ms) + " |",
         "| vs 1 token | " + " | ".join(f"{t / ms[0]:.2f}x" for t in ms) + " |\n",
         f"A pass keeping the logits of every token it carries: each row beyond the first adds "
         f"{table.get('ms_per_kept_row', 0):.2f} ms.\n",
         "| mode | correct | tool-call latency geomean (ms) |", "|---|---|---|"]
for name, m in modes.items():
    lines.append(f"| {name} | {m.get('correct', '?')}/{m.get('cases', '?')} | {m.get('latency_geomean_ms', 0):.1f} |")
if "jump-forward" in modes and "schemaweaver" in modes:
    speed = modes["jump-forward"]["latency_geomean_ms"] / modes["schemaweaver"]["latency_geomean_ms"]
    lines.append(f"\nschemaweaver over jump-forward: {speed:.2f}x; plans: {plans.count('branches')} calls in branches, "
                 f"{plans.count('serial')} serial.")
lines.append("\nThe run's passes priced with the table above (bench/replay.py):\n")
lines.append((out / "replay.md").read_text())
lines.append(f"The whole run (build included) took {seconds} s on {sample} cases.")
(out / "report.md").write_text("\n".join(lines) + "\n")
PY
log "report: $OUT/report.md"
cat "$OUT/report.md"
