#!/usr/bin/env bash
# glmbench against llama.cpp's own llama-bench on the same GGUF file and threads, on this CPU, and
# llama-bench's real `-o json` brought into glmbench: `compare` pairs it with glmbench's measurement
# of the same file, `calibrate` fits a runtime profile of llama.cpp on this CPU to it.
#
#   bash bench/build_llama_bench.sh                     # once: ../llama-build/bin/llama-bench
#   FMT=q4_0 LAYERS=4 DEPTHS=0,4096,16384 bash bench/bench_llama_bench.sh
#
# Writes under OUT (default bench/results/llama-bench_<fmt>_L<layers>_<date>/): llama-bench.json (raw
# llama-bench -o json), glmbench.json (glmbench measure records), compare.md (glmbench compare),
# host_profile.json (glmbench hardware --save-host), config.json (the file's model, from its GGUF
# header), llama-cpp-cpu.json + calibrate.txt (glmbench calibrate on llama-bench.json), bandwidth.txt
# (triad before and after), README.md (what ran).
# The GGUF is GLM-4.7-Flash-shaped with seeded random blocks (bench/bench_llamacpp.py --write-only):
# LAYERS of its 47 blocks, every matrix in FMT; both sides run that same file.
set -euo pipefail
cd "$(dirname "$0")/.."
LB=${LLAMA_BENCH:-../llama-build/bin/llama-bench}
FMT=${FMT:-q4_0}
LAYERS=${LAYERS:-4}
DEPTHS=${DEPTHS:-0,4096,16384}
NP=${N_PROMPT:-512}
NG=${N_GEN:-32}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
OUT=${OUT:-bench/results/llama-bench_${FMT}_L${LAYERS}_$(date +%F)}
GGUF=${GGUF:-${TMPDIR:-/tmp}/glmbench-peer-glm47flash-${FMT}-L${LAYERS}.gguf}
PY=${PYTHON:-python}
mkdir -p "$OUT"
[ -x "$LB" ] || { echo "no llama-bench at $LB: run bench/build_llama_bench.sh or set LLAMA_BENCH" >&2; exit 2; }
[ -f "$GGUF" ] || $PY bench/bench_llamacpp.py --write-only --layers "$LAYERS" --fmt "$FMT" --gguf "$GGUF"
bw() { $PY -c "from glmbench.measure.machine import probe_bandwidth as p; print('%s triad %.1f GB/s' % ('$1', max(p(5)[0] for _ in range(3))))"; }
bw before > "$OUT/bandwidth.txt"
"$LB" -m "$GGUF" -p "$NP" -n "$NG" -d "$DEPTHS" -r "$REPS" -t "$THREADS" -o json --progress > "$OUT/llama-bench.json"
bw "after llama-bench" >> "$OUT/bandwidth.txt"
$PY -m glmbench measure "$GGUF" --depths "$DEPTHS" --n-prompt "$NP" --n-gen "$NG" --threads "$THREADS" \
    --repeats "$REPS" --retries 2 --out "$OUT/glmbench.json"
bw "after glmbench" >> "$OUT/bandwidth.txt"
$PY -m glmbench compare "$OUT/llama-bench.json" "$OUT/glmbench.json" --model "$GGUF" > "$OUT/compare.md"
$PY -m glmbench hardware --save-host "$OUT/host_profile.json"
# the file's model as an HF config (read from its GGUF header), so that calibrate and the truth
# table can predict these points on any machine without the GGUF file
$PY -c "import json, sys; from glmbench.models import gguf_file as g; json.dump(g.hf_config(g.read(sys.argv[1])), sys.stdout, indent=1)" \
    "$GGUF" > "$OUT/config.json"
$PY -m glmbench calibrate "$OUT/llama-bench.json" --model "$OUT/config.json" --hardware "$OUT/host_profile.json" \
    --out "$OUT/llama-cpp-cpu.json" > "$OUT/calibrate.txt"
{
  echo "# llama.cpp's llama-bench and glmbench on the same GGUF, this CPU ($(date +%F))"
  echo
  echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; threads $THREADS on both sides"
  echo "- llama-bench: $("$LB" --version 2>&1 | head -1) (built by bench/build_llama_bench.sh: native AVX-512 build, AMX off, CPU_REPACK on)"
  echo "- file: GLM-4.7-Flash-shaped, $LAYERS of 47 layers, $FMT matrices, seeded random blocks ($GGUF, $(du -h "$GGUF" | cut -f1))"
  echo "- tests: pp$NP and tg$NG at depths $DEPTHS, $REPS repeats each side (llama-bench -d; glmbench measure --depths)"
  echo "- command: FMT=$FMT LAYERS=$LAYERS DEPTHS=$DEPTHS bash bench/bench_llama_bench.sh"
  echo
  echo "## Bandwidth"; echo; sed 's/^/- /' "$OUT/bandwidth.txt"; echo
  echo "## glmbench compare llama-bench.json glmbench.json (B/A > 1: glmbench faster)"; echo; cat "$OUT/compare.md"; echo
  echo "## glmbench calibrate llama-bench.json --hardware host_profile.json (llama.cpp's runtime on this CPU)"; echo
  echo '```'; cat "$OUT/calibrate.txt"; echo '```'
} > "$OUT/README.md"
cat "$OUT/README.md"
