#!/usr/bin/env bash
# Build llama.cpp's own llama-bench (benchmarks only; never a glmbench dependency) from the
# llama.cpp source that llama-cpp-python's source package vendors (vendor/llama.cpp, with
# tools/llama-bench), for the CPU of this machine.
#
#   bash bench/build_llama_bench.sh [BUILD_DIR]      # default: ../llama-build; ~6 min on 2 cores
#   BUILD_DIR/bin/llama-bench -m FILE.gguf -p 512 -n 32 -d 0,4096 -t 2 -o json > lb.json
#   glmbench compare lb.json ...; glmbench calibrate lb.json --model glm-4.7-flash --hardware host ...
#   python bench/bench_ggml_peer.py --build-dir BUILD_DIR   # ggml's kernels vs glmbench's, same shapes
#
# AMX is switched off: with GGML_NATIVE=ON llama.cpp compiles its AMX kernels on this CPU (it has
# amx_int8/amx_tile), and there they die with SIGILL on the first tile load (tileloadd: this VM's
# kernel does not hand out AMX tile state), and before that its scheduler aborts on deepseek2's
# f16 attn_k_b (GGML_ASSERT(*cur_backend_id != -1) in ggml-backend.cpp). Everything else of the
# native build is kept: AVX-512 F/VBMI/VNNI/BF16, AVX-VNNI, FMA, F16C, BMI2, and the CPU_REPACK
# buffer (q4_0 -> interleaved q4_0x8, llama.cpp's default on this CPU; `--repack 0` turns it off).
# On a CPU without AVX-512 (an AVX2 Zen 3, say) those switches are off and ggml builds its AVX2 paths.
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/../.." && pwd)/llama-build}
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
SRC=$(mktemp -d)
trap 'rm -rf "$SRC"' EXIT
python -m pip download "llama-cpp-python==$VERSION" --no-binary llama-cpp-python --no-deps -q -d "$SRC"
tar xzf "$SRC"/llama_cpp_python-"$VERSION".tar.gz -C "$SRC"
LL="$SRC/llama_cpp_python-$VERSION/vendor/llama.cpp"
# each x86 feature switched on where this CPU reports it (/proc/cpuinfo), as GGML_NATIVE would, AMX aside
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null && echo ON || echo OFF; }
cmake -S "$LL" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=OFF -DGGML_AVX="$(has avx)" -DGGML_AVX2="$(has avx2)" -DGGML_FMA="$(has fma)" \
  -DGGML_F16C="$(has f16c)" -DGGML_BMI2="$(has bmi2)" -DGGML_AVX512="$(has avx512f)" \
  -DGGML_AVX512_VBMI="$(has avx512vbmi)" -DGGML_AVX512_VNNI="$(has avx512_vnni)" \
  -DGGML_AVX512_BF16="$(has avx512_bf16)" -DGGML_AVX_VNNI="$(has avx_vnni)" \
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF
ninja -C "$BUILD" llama-bench llama-quantize
# ggml's headers beside its static libraries, for bench/bench_ggml_peer.py's harness
rm -rf "$BUILD/ggml-include" && cp -r "$LL/ggml/include" "$BUILD/ggml-include"
"$BUILD"/bin/llama-bench --version
echo "built $BUILD/bin/llama-bench (llama.cpp vendored by llama-cpp-python $VERSION)"
