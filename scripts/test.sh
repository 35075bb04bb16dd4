#!/usr/bin/env bash
# Runs all tests: unit, CLI and model tests (the real default model; the skeleton's tokenizer
# test reads every model) on the release build, then the same tests built with
# AddressSanitizer and UBSan. Installs and builds whatever is
# missing first, through scripts/setup.sh (cached: a second run only rebuilds what changed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/setup.sh --no-demo --models all
ctest --test-dir build --output-on-failure

bash scripts/setup.sh --no-demo --sanitize
# libgomp and ggml keep process-lifetime allocations; leaks are checked in our code's tests
# through the suppressions list, which names only those libraries.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export LSAN_OPTIONS=suppressions=$ROOT/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure
