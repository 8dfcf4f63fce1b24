#!/usr/bin/env bash
# bench/gpu_check.sh: all the GPU work of glmbench in one call, planned for under 8 minutes on an
# H200 (1-2 min of build, ~1 min of validation, then 120 s + 150 s budgets). It builds the CPU core and the CUDA
# kernels for this card, runs tests/test_cuda.py (its GPU checks run here), then bench/gpu_check.py:
# validate every kernel against the float64 reference; time each against the copy and cuBLAS-GEMM
# ceilings measured in the same run and against PyTorch peers; sweep GLM-4.7-Flash and Qwen3-32B
# over depths. Results: $OUT (the device tool's folder) or bench/results/<date>_<card>/ --
# validation.csv kernels.csv peers.csv peers_hf.csv models.csv log.txt build.log pytest.log (8).
# Extra arguments go to gpu_check.py (e.g. --quick). GPU_CHECK_PYTEST=0 skips tests/test_cuda.py,
# GPU_CHECK_HF=0 the HF transformers peer, GPU_CHECK_PROBE=1 adds bench/gpu_probe.py (probe.txt,
# probe.csv: keep the files at 8, the device tool's limit, by skipping two of the others).
#
# The device image has nvcc, PyTorch (whose nvidia-cublas wheel gives cuBLAS), NumPy, setuptools
# and pytest, but not scipy-openblas32: carry its wheel in .whl/ (docs/CUDA.md says how). The build
# is skipped when bench/gpu_prebuild.sh's extensions for these sources are carried along.
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
if ! $PY -c "import scipy_openblas32" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  else
    echo "gpu_check.sh: scipy-openblas32 is not installed and .whl/ holds no wheel (see docs/CUDA.md)"
    exit 3
  fi
fi
# glmbench is built in place here, not installed: the tests that start a fresh Python elsewhere
# (test_import_in_a_fresh_process_does_not_touch_the_device) import it from this checkout.
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '-')
DEST=${OUT:-bench/results/$(date -u +%Y-%m-%d)_${CARD:-gpu}}
mkdir -p "$DEST"
# This card's architecture only: a third of the compile time of CI's three.
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
export GLMBENCH_CUDA=1 GLMBENCH_CUDA_ARCHS=${GLMBENCH_CUDA_ARCHS:-${CAP:-90}}
{ nvidia-smi; echo; } > "$DEST/build.log" 2>&1
# Extensions built off the device by bench/gpu_prebuild.sh (and carried) are used when they were
# built from these very sources for this card and import; otherwise build here (1-2 min).
if [ -f build/prebuilt.sha256 ] && [ "$(cat build/prebuilt.sha256)" = "$(bash bench/gpu_sources_hash.sh)" ] \
   && [ "$(cat build/prebuilt.archs 2>/dev/null)" = "$GLMBENCH_CUDA_ARCHS" ] \
   && $PY -c "import glmbench.core._core, glmbench.cuda._cuda" >> "$DEST/build.log" 2>&1; then
  echo "gpu_check.sh: prebuilt extensions (sources $(cut -c1-12 build/prebuilt.sha256), sm_$GLMBENCH_CUDA_ARCHS)" \
    | tee -a "$DEST/build.log"
else
  echo "gpu_check.sh: building for sm_$GLMBENCH_CUDA_ARCHS"
  if ! $PY setup.py build_ext --inplace >> "$DEST/build.log" 2>&1; then
    tail -40 "$DEST/build.log"
    echo "gpu_check.sh: build failed ($(( $(date +%s) - START )) s)"
    exit 4
  fi
  echo "gpu_check.sh: built in $(( $(date +%s) - START )) s"
fi
if [ "${GPU_CHECK_PYTEST:-1}" != 0 ]; then
  $PY -m pytest -q -p no:cacheprovider tests/test_cuda.py > "$DEST/pytest.log" 2>&1
  tail -3 "$DEST/pytest.log"
fi
# Three processes: a kernel fault leaves a sticky CUDA error that ends its process, not the run.
# The later ones read validation.csv and neither time nor use a kernel that failed it.
rc=0
group=0
for attempt in 1 2 3 4 5 6; do  # exit 3 = a sticky CUDA error: go on in a new process
  $PY bench/gpu_check.py --out "$DEST" --only validate --start-group "$group" "$@" | tee "$DEST/.validate.out"
  vrc=${PIPESTATUS[0]}
  if [ "$vrc" -ne 3 ]; then rc=$vrc; break; fi
  rc=1
  group=$(sed -n 's/^NEXT_GROUP=//p' "$DEST/.validate.out" | tail -1)
done
rm -f "$DEST/.validate.out"
$PY bench/gpu_check.py --out "$DEST" --only kernels,peers --budget-s "${BUDGET_KERNELS_S:-120}" "$@" || rc=$((rc ? rc : $?))
$PY bench/gpu_check.py --out "$DEST" --only "models$([ "${GPU_CHECK_HF:-1}" != 0 ] && echo ,hf)" \
  --budget-s "${BUDGET_MODELS_S:-150}" "$@" || rc=$((rc ? rc : $?))
# GPU_CHECK_PROBE=1: the per-kernel breakdown of whole steps and the split sweep (bench/gpu_probe.py)
if [ "${GPU_CHECK_PROBE:-0}" != 0 ]; then
  $PY bench/gpu_probe.py --out "$DEST" || rc=$((rc ? rc : $?))
fi
echo "gpu_check.sh: $(( $(date +%s) - START )) s in all, results in $DEST (exit $rc)"
exit $rc
