#!/usr/bin/env bash
# The fuzzer against a C core built with AddressSanitizer (issue 16). The tree's own
# glmbench/core/_core*.so is left as it is: the ASan build goes to build-asan/ (git-ignored),
# next to a copy of the Python package that imports it.
#
#   bench/fuzz/run_asan.sh [N] [fuzz_glmbench.py options...]     # N inputs per target (default 10000)
#
# Writes build-asan/fuzz-summary.json and build-asan/fuzz-findings.jsonl; ASan reports go to stderr
# (a memory error ends the process there, with the stack).
set -euo pipefail
N=${1:-10000}
shift || true
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build-asan
cd "$ROOT"
LIBASAN=$(gcc -print-file-name=libasan.so)
[ -e "$LIBASAN" ] || { echo "run_asan.sh: gcc has no libasan.so ($LIBASAN)" >&2; exit 2; }

echo "building the C core with -fsanitize=address into $B ..." >&2
rm -rf "$B/tree" "$B/lib"
CFLAGS="-fsanitize=address -fno-omit-frame-pointer -g" LDFLAGS="-fsanitize=address" \
  GLMBENCH_CUDA=0 GLMBENCH_CORE=1 python setup.py -q build_ext --build-temp "$B/temp" --build-lib "$B/lib" >&2
SO=$(ls "$B"/lib/glmbench/core/_core*.so)
mkdir -p "$B/tree"
(cd "$ROOT" && find glmbench \( -name '*.py' -o -name '*.json' -o -name '*.toml' \) -exec cp --parents {} "$B/tree" \;)
cp "$SO" "$B/tree/glmbench/core/"
nm -D "$B/tree/glmbench/core/"_core*.so | grep -q __asan_init || { echo "run_asan.sh: not an ASan build" >&2; exit 2; }

rm -f "$B/fuzz-findings.jsonl"
echo "fuzzing ($N inputs per target) with $LIBASAN preloaded ..." >&2
GLMBENCH_FUZZ_ASAN=1 PYTHONPATH="$B/tree" LD_PRELOAD="$LIBASAN" \
  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:abort_on_error=1 \
  python -W ignore "$ROOT/bench/fuzz/fuzz_glmbench.py" --n "$N" --out "$B/fuzz-summary.json" \
  --log "$B/fuzz-findings.jsonl" "$@"
