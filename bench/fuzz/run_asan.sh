#!/usr/bin/env bash
# The fuzzer against a C core built with AddressSanitizer (issue 16). The tree's own
# glmbench/core/_core*.so is left as it is: the ASan build goes to build-asan/ (git-ignored),
# next to a copy of the Python package that imports it.
#
#   bench/fuzz/run_asan.sh [N] [fuzz_glmbench.py options...]     # N inputs per target (default 10000)
#   FUZZ_TARGETS="rope kvcache" bench/fuzz/run_asan.sh [N]        # some targets only
#   FUZZ_UBSAN=1 bench/fuzz/run_asan.sh [N]                        # UndefinedBehaviorSanitizer too
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
# libstdc++ right after libasan: matplotlib's C++ (pybind11) throws at import, and ASan's
# __cxa_throw interceptor needs the real one loaded (else "CHECK failed: real___cxa_throw")
LIBSTDCXX=$(gcc -print-file-name=libstdc++.so.6)
PRELOAD="$LIBASAN $LIBSTDCXX"
SAN=address
if [ -n "${FUZZ_UBSAN:-}" ]; then
  # -fno-sanitize-recover: the first undefined operation (signed overflow, a shift past the width,
  # a misaligned load, a float-to-integer cast out of range (float-cast-overflow: not in gcc's
  # "undefined" group) ...) ends the process with its report, as ASan does
  SAN=address,undefined,float-cast-overflow
  LIBUBSAN=$(gcc -print-file-name=libubsan.so)
  [ -e "$LIBUBSAN" ] || { echo "run_asan.sh: gcc has no libubsan.so ($LIBUBSAN)" >&2; exit 2; }
  PRELOAD="$LIBASAN $LIBUBSAN $LIBSTDCXX"
fi

echo "building the C core with -fsanitize=$SAN into $B ..." >&2
rm -rf "$B/tree" "$B/lib"
CFLAGS="-fsanitize=$SAN -fno-sanitize-recover=all -fno-omit-frame-pointer -g" LDFLAGS="-fsanitize=$SAN" \
  GLMBENCH_CUDA=0 GLMBENCH_CORE=1 python setup.py -q build_ext --build-temp "$B/temp" --build-lib "$B/lib" >&2
SO=$(ls "$B"/lib/glmbench/core/_core*.so)
mkdir -p "$B/tree"
(cd "$ROOT" && find glmbench \( -name '*.py' -o -name '*.json' -o -name '*.toml' \) -exec cp --parents {} "$B/tree" \;)
cp "$SO" "$B/tree/glmbench/core/"
# (no grep -q: its early exit would SIGPIPE nm and fail the pipeline under pipefail)
nm -D "$B/tree/glmbench/core/"_core*.so | grep __asan_init > /dev/null || { echo "run_asan.sh: not an ASan build" >&2; exit 2; }

# FUZZ_TARGETS="rope kvcache" bench/fuzz/run_asan.sh N: only those (the others' results are kept)
TARGETS=${FUZZ_TARGETS:-$(PYTHONPATH="$B/tree" python -c "import runpy; m = runpy.run_path('$ROOT/bench/fuzz/fuzz_glmbench.py', run_name='x'); print(' '.join(list(m['TARGETS']) + list(m['READERS'])))")}
for t in $TARGETS; do rm -f "$B/fuzz-summary-$t.json" "$B/asan-$t.log"; done
[ -n "${FUZZ_TARGETS:-}" ] || rm -f "$B/fuzz-findings.jsonl"
echo "fuzzing ($N inputs per target, one process per target) with $PRELOAD preloaded ..." >&2
status=0
for t in $TARGETS; do
  if GLMBENCH_FUZZ_ASAN=1 PYTHONPATH="$B/tree" LD_PRELOAD="$PRELOAD" \
      ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:abort_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      python -W ignore "$ROOT/bench/fuzz/fuzz_glmbench.py" --target "$t" --n "$N" --out "$B/fuzz-summary-$t.json" \
      --log "$B/fuzz-findings.jsonl" "$@" 2> "$B/asan-$t.log"; then
    :
  else
    rc=$?
    status=1
    echo "$t: exit $rc (findings in $B/fuzz-findings.jsonl; an ASan report in $B/asan-$t.log)" >&2
    grep -A12 "ERROR: AddressSanitizer\|runtime error:" "$B/asan-$t.log" | grep -v "^    #[1-9][0-9] " >&2 || true
  fi
done
exit $status
