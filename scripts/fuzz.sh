#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) for a bounded time each and reports, per target, how long
# it ran, executions and executions per second, coverage (edges, features), corpus size and
# crashes; exits non-zero if any target crashed. The targets come from the sanitizer build
# (scripts/setup.sh --sanitize: clang, AddressSanitizer, UBSan, coverage); the corpora start
# from fuzz/seeds.py (the project's tool files, requests, outputs, MCP messages, BFCL cases) and
# grow in build-asan/fuzz/corpus between runs. A crash's input lands in build-asan/fuzz/crashes.
#
#   bash scripts/fuzz.sh [--minutes M | --seconds S] [--targets fuzz_pattern,fuzz_bfcl] [--seed N] [--report F]
#                        [--jobs J]
# (--jobs: targets fuzzed at once, one core each; all cores unless said)
# (--seed: libFuzzer's random seed, for a run that can be repeated; 0, the default, draws one;
#  --report: where the table goes, build-asan/fuzz/report.md unless said, so that two runs of
#  other targets, one per core, keep a table each)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SCHEMAWEAVER_CACHE:-$HOME/.cache/schemaweaver}
SECONDS_EACH=60
SEED=0
REPORT=""
JOBS=$(nproc)
TARGETS="fuzz_tool_schemas,fuzz_pattern,fuzz_openai_request,fuzz_call_output,fuzz_mcp_messages,fuzz_bfcl,fuzz_gguf"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) SECONDS_EACH=$(( $2 * 60 )); shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --report) REPORT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
BUILD=$ROOT/build-asan
WORK=$BUILD/fuzz
REPORT=${REPORT:-$WORK/report.md}
bash "$ROOT/scripts/setup.sh" --sanitize --no-demo || exit 1
python3 "$ROOT/fuzz/seeds.py" "$WORK/seeds" --bfcl "$CACHE/data/bfcl" >/dev/null || exit 1
mkdir -p "$WORK/crashes"

# run_target TARGET: fuzzes one target; its report row goes to WORK/TARGET.row, its status is the
# run's (non-zero on a crash).
run_target() {
  local target=$1
  mkdir -p "$WORK/corpus/$target"
  local log="$WORK/$target.log" started=$SECONDS status crashes corpus last edges features
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$BUILD/fuzz/$target" -max_total_time="$SECONDS_EACH" -seed="$SEED" -timeout=10 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$WORK/crashes/$target-" "$WORK/corpus/$target" "$WORK/seeds/$target" >"$log" 2>&1
  status=$?
  crashes=$(ls "$WORK/crashes" | grep -c "^$target-" || true)
  stat() { grep -o "stat::$1: *[0-9]*" "$log" | tail -1 | grep -o '[0-9]*$'; }
  last=$(grep -E '^#[0-9]+[[:space:]]+(INITED|NEW|REDUCE|pulse|RELOAD|DONE)' "$log" | tail -1)
  edges=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*')
  features=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*')
  corpus=$(ls "$WORK/corpus/$target" | wc -l)
  printf '| %s | %d | %s | %s | %s | %s | %s | %s |\n' "$target" $((SECONDS - started)) "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "${edges:-?}" "${features:-?}" "$corpus" "$crashes" > "$WORK/$target.row"
  if [ $status -ne 0 ] || [ "$crashes" -gt 0 ]; then
    echo "fuzz.sh: $target failed (exit $status); its log: $log" >&2
    grep -E "ERROR|SUMMARY|runtime error|uncaught|deadly" "$log" | head -5 >&2
    return 1
  fi
}

# Each target is one process on one core: JOBS of them run at once, the rows keep the targets' order.
FAILED=0
running=0
for target in ${TARGETS//,/ }; do
  if [ $running -ge "$JOBS" ]; then wait -n || FAILED=1; running=$((running - 1)); fi
  run_target "$target" &
  running=$((running + 1))
done
while [ $running -gt 0 ]; do wait -n || FAILED=1; running=$((running - 1)); done
printf '| target | seconds | executions | per second | edges | features | corpus | crashes |\n|---|---|---|---|---|---|---|---|\n' > "$REPORT"
for target in ${TARGETS//,/ }; do tee -a "$REPORT" < "$WORK/$target.row"; done
echo "report: $REPORT"
exit $FAILED
