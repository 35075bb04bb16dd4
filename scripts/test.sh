#!/usr/bin/env bash
# Runs all tests: unit, CLI, server, model and C API tests (the real default model; the skeleton's
# tokenizer test reads every model) on the release build; the examples built against the
# installed package and run (scripts/examples.sh); the model tests and packing for speed
# again on a second llama.cpp build with other CPU kernels (AVX2 only: on an AVX-512 CPU these are
# another machine's kernels); then the tests of our code built with AddressSanitizer and UBSan (clang: all
# but the model-bound ones, below), every fuzz target for 20 seconds, and the aarch64 cross build
# under qemu (scripts/arm.sh: its unit tests, the examples' calls). Every stage runs
# even when an earlier one fails, and a summary of all closes the output. Installs and builds
# whatever is missing first, through scripts/setup.sh (cached: a second run only rebuilds what
# changed).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

declare -a SUMMARY=()
FAILED=0
# stage NAME COMMAND...: runs one stage and notes its outcome.
stage() {
  local name=$1; shift
  local started=$SECONDS
  echo "=== $name"
  if "$@"; then SUMMARY+=("passed  $name ($((SECONDS - started)) s)")
  else SUMMARY+=("FAILED  $name ($((SECONDS - started)) s)"); FAILED=1; fi
}

# Under the sanitizers what is checked is our code, and the model's passes (llama.cpp, built
# without them) cost what they cost on the release build. So the sanitizer stage runs every unit,
# CLI and server test and the model tests that reach each of the engine's paths, but not the ones
# whose time is the model's arithmetic over pools of cases or whole models, whose code paths the
# others reach too: agreement of two procedures over many calls (drafts from a second model or a
# whole-turn guess against none, max_calls, lists, cuts at max_tokens, batched against single
# passes, the speculative mode against the constrained one), the distribution of many drawn calls
# (its chooser and verifier paths run in the seeded-call test), packing and shaping again at other
# budgets and the calls and quality of their outputs (cli.pack and cli.shape run), tool_choice auto
# on the Qwen2.5-Coder models (the opening probe has its unit tests), and the families' checks
# against llama.cpp beyond one of each kind of call syntax (markers per call: Qwen3, and with its
# thinking on; a list with ids: Mistral Nemo; the name in markers: Functionary; tagged arguments
# and an always-open thinking block: MiniMax-M2; keywords in a notation of the model's own:
# Gemma 4; the library's format: SmolLM3). All of them ran on the release build above.
MODEL_ARITHMETIC='^(BatchedPasses\.|Quality\.ModelAgainstItself|Pack\.PackedModel|Speculative\.(ModeGives|DraftModelChanges)|'
MODEL_ARITHMETIC+='Sampling\.SchemaWeaverDraws|'
MODEL_ARITHMETIC+='Weaver\.(WholeTurnGuess|MaxCalls|ATurnCut|CallsAsAList|DraftsChange)|'
MODEL_ARITHMETIC+='cli\.(pack_for_speed|packed_|shape_width$|narrowed_)|server\.tool_choice_auto|'
MODEL_ARITHMETIC+='cli\.family_(llama3\.2|hermes3|granite4|qwen3-coder|qwen3\.5|qwen3\.5-thinking|glm4\.6|lfm2\.5|phi3\.5|'
MODEL_ARITHMETIC+='minicpm5|minicpm5-thinking|mistral-small3\.2|gpt-oss|gpt-oss-thinking)$)'
sanitized_ctest() {
  # libgomp and ggml keep process-lifetime allocations; leaks are checked in our code's tests
  # through the suppressions list, which names only those libraries.
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
  LSAN_OPTIONS=suppressions=$ROOT/tests/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -E "$MODEL_ARITHMETIC"
}

# The machine, so that a stage's time can be read against it (kernels differ by CPU).
MACHINE="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo 'AVX2, no AVX-512')"
echo "=== machine: $MACHINE"
stage "set-up (native kernels)" bash scripts/setup.sh --no-demo --models all
stage "release tests" ctest --test-dir build --output-on-failure
stage "examples against the installed package (C++ and C, find_package and pkg-config)" bash scripts/examples.sh build
# Packing and quality measure weights and distributions, not greedy decisions: they run once; but
# packing for speed asks for a budget from what these kernels measure, so it runs on both.
avx2_ctest() {
  local status=0
  ctest --test-dir build-avx2 --output-on-failure -L model -E "^(Pack|Quality)\\." || status=1
  ctest --test-dir build-avx2 --output-on-failure -R "^cli\\.(pack_for_speed|packed_for_speed_calls)$" || status=1
  return $status
}
# On a CPU without AVX-512 the native kernels are the AVX2 ones already: the stage would repeat
# the release model tests.
if grep -qw avx512f /proc/cpuinfo; then
  stage "set-up (AVX2 kernels)" bash scripts/setup.sh --no-demo --kernels avx2 --only "model_tests schemaweaver-cli"
  stage "model tests and packing for speed on AVX2 kernels" avx2_ctest
else
  echo "=== model tests on AVX2 kernels: skipped, this CPU has no AVX-512 (its native kernels are AVX2)"
  SUMMARY+=("skipped model tests on AVX2 kernels (no AVX-512 here: the release stage ran them)")
fi
stage "set-up (sanitizers)" bash scripts/setup.sh --no-demo --sanitize
stage "sanitizer tests" sanitized_ctest
# Every libFuzzer target briefly, from its seeds, with a fixed seed so that a run can be repeated
# (the long runs: scripts/fuzz.sh --minutes M).
stage "fuzz targets (20 s each, one per core)" bash scripts/fuzz.sh --seconds 20 --seed 1
# The library on 64-bit ARM under qemu: its unit tests and a real call by each example.
stage "ARM (aarch64 cross build under qemu): unit tests and the examples' calls" bash scripts/arm.sh

echo "=== summary"
printf '%s\n' "${SUMMARY[@]}" "total: $SECONDS s on $MACHINE"
exit $FAILED
