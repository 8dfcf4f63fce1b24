#!/usr/bin/env bash
# bench/gpu_prebuild.sh: build glmbench's two extensions HERE for the device machine (its CPython 3.12
# and one GPU architecture, sm_90 by default) so that a device call does not spend its minutes on
# the build (bench/gpu_check.sh then skips it). Needs a CPython 3.12 (PY312=..., else python3.12 on
# PATH or pyenv's), nvcc, and PyPI for numpy / setuptools / scipy-openblas32 / nvidia-cublas.
#
#   bash bench/gpu_prebuild.sh            # then: run(..., carry=[".whl", <the three paths it prints>])
#
# The CPU core is built for x86-64-v3 (AVX2, FMA, F16C: any recent server CPU) instead of
# -march=native, which would tune it for this machine. A stamp, build/prebuilt.sha256, holds the
# hash of the sources it was built from; gpu_check.sh uses the prebuilt files only when the hash of
# its own checkout's sources matches, and builds otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ARCHS=${GLMBENCH_CUDA_ARCHS:-90}
W=${PREBUILD_DIR:-/tmp/glmbench-prebuild}
is312() { [ -n "$1" ] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; }
if [ -z "${PY312:-}" ]; then  # python3.12 on PATH (a pyenv shim may name one it cannot run), then pyenv's
  for c in "$(command -v python3.12 || true)" $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python 2>/dev/null); do
    if is312 "$c"; then PY312=$c; break; fi
  done
fi
if ! is312 "${PY312:-}"; then
  echo "gpu_prebuild.sh: no CPython 3.12 found (set PY312=/path/to/python3.12)" >&2
  exit 2
fi
OPENBLAS=$(sed -n 's/.*"\(scipy-openblas32==[^"]*\)".*/\1/p' pyproject.toml | head -1)
mkdir -p "$W"
if [ ! -x "$W/venv/bin/python" ]; then
  "$PY312" -m venv "$W/venv"
  "$W/venv/bin/pip" install -q --upgrade pip
fi
# numpy < 2.3: an extension built against an older NumPy 2 runs on newer ones (the device has 2.5)
"$W/venv/bin/pip" install -q "numpy>=2.0,<2.3" setuptools wheel "$OPENBLAS"
if [ ! -f "$W/cublas/nvidia/cu13/include/cublas_v2.h" ]; then
  rm -rf "$W/cublas-whl" "$W/cublas"
  "$W/venv/bin/pip" download -q --no-deps -d "$W/cublas-whl" nvidia-cublas
  mkdir -p "$W/cublas"
  (cd "$W/cublas" && python3 -m zipfile -e "$W"/cublas-whl/*.whl .)
fi
# the checkout as it is (tracked and untracked-not-ignored files), built apart from its build/
rm -rf "$W/tree"
mkdir -p "$W/tree"
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$W/tree"
(cd "$W/tree" && GLMBENCH_NATIVE=0 CFLAGS="-march=x86-64-v3" GLMBENCH_CUDA=1 GLMBENCH_CUDA_ARCHS="$ARCHS" \
   GLMBENCH_CUBLAS_DIR="$W/cublas/nvidia/cu13" "$W/venv/bin/python" setup.py build_ext --inplace > "$W/build.log" 2>&1) \
  || { tail -30 "$W/build.log"; echo "gpu_prebuild.sh: build failed ($W/build.log)" >&2; exit 4; }
CORE=$(cd "$W/tree" && ls glmbench/core/_core.cpython-312-*.so)
CUDA=$(cd "$W/tree" && ls glmbench/cuda/_cuda.cpython-312-*.so)
cp "$W/tree/$CORE" "$ROOT/$CORE"
cp "$W/tree/$CUDA" "$ROOT/$CUDA"
mkdir -p build
bash bench/gpu_sources_hash.sh > build/prebuilt.sha256
echo "$ARCHS" > build/prebuilt.archs
echo "gpu_prebuild.sh: built for CPython 3.12, sm_$ARCHS, sources $(cut -c1-12 build/prebuilt.sha256); carry:"
echo "  .whl $CORE $CUDA build/prebuilt.sha256 build/prebuilt.archs"
