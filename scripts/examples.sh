#!/usr/bin/env bash
# Builds the examples against the installed package, as an app's build would: `cmake --install`
# of a build into a fresh prefix, then examples/cpp and examples/c each a CMake project of their
# own finding it with find_package(schemaweaver), and the C one also by pkg-config alone; each
# makes one real call on SmolLM2-135M and must print the get_weather call for Paris.
#   scripts/examples.sh [BUILD_DIR]   (default: build; build-aarch64, the cross build of
#                                      scripts/setup.sh --target aarch64, runs under qemu-aarch64)
# Under the emulator a call takes minutes (2.5 on this 2-core machine): there all three are built
# and the C one found by find_package makes the call.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
CACHE=${SCHEMAWEAVER_CACHE:-$HOME/.cache/schemaweaver}
MODEL=$CACHE/models/SmolLM2-135M-Instruct-Q4_1.gguf
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# A cross build's examples are built with its toolchain and run under the emulator.
TOOLCHAIN=$(sed -n 's/^CMAKE_TOOLCHAIN_FILE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
CC=cc RUN=() CROSS=()
if [ -n "$TOOLCHAIN" ]; then
  CC=aarch64-linux-gnu-gcc RUN=(qemu-aarch64 -L /usr/aarch64-linux-gnu) CROSS=(-DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN")
fi

cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
ask() {  # ask PROGRAM: one call, which must name get_weather for Paris
  local out started=$SECONDS
  out=$("${RUN[@]}" "$1" "$MODEL" "$ROOT/examples/weather_tools.json" "What is the weather like in Paris?" 2>/dev/null)
  echo "$(basename "$(dirname "$1")") ($((SECONDS - started)) s): ${out:0:100}"
  grep -q '"name": *"get_weather"' <<<"$out" && grep -q '"city": *"Paris"' <<<"$out" \
    || { echo "examples.sh: $1 did not make the call" >&2; return 1; }
}
runs() { [ -z "$TOOLCHAIN" ] || [ "$1" = c ]; }
for lang in cpp c; do
  cmake -S "$ROOT/examples/$lang" -B "$WORK/$lang" -DCMAKE_PREFIX_PATH="$WORK/prefix" "${CROSS[@]}" >/dev/null
  cmake --build "$WORK/$lang" >/dev/null
  if runs "$lang"; then ask "$WORK/$lang/weather"; fi
done
mkdir -p "$WORK/pkg-config"
# shellcheck disable=SC2046 # pkg-config's flags are words
"$CC" -std=c11 -Wall -Werror "$ROOT/examples/c/weather.c" -o "$WORK/pkg-config/weather" \
  $(PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig" pkg-config --cflags --libs schemaweaver)
if runs pkg-config; then ask "$WORK/pkg-config/weather"; fi
