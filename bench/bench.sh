#!/usr/bin/env bash
# The whole evaluation in one command: sets up (packages, llama.cpp, models, data, the build)
# and runs the benchmark suite, writing tables, JSON and figures into bench/results/<date>.
#
#   bench/bench.sh [--quick] [other options of bench/bench.py]
#
# --quick runs the default model on a small sample in under 10 minutes; without it every model
# the project can fetch is measured (hours; re-running resumes where a run stopped).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODELS=all
for arg in "$@"; do [ "$arg" = --quick ] && MODELS=default; done
bash "$ROOT/scripts/setup.sh" --no-demo --models "$MODELS"
exec python3 "$ROOT/bench/bench.py" "$@"
