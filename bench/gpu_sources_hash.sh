#!/usr/bin/env bash
# bench/gpu_sources_hash.sh: one hash of everything the two extensions are built from (setup.py and
# the C / CUDA sources under csrc/ and kernels/), as the checkout holds them; bench/gpu_prebuild.sh
# stamps its build with it and bench/gpu_check.sh compares it before using a prebuilt extension.
# No git: the device machine's copy of the tree has no .git.
set -euo pipefail
cd "$(dirname "$0")/.."
find setup.py csrc kernels -type f \( -name '*.py' -o -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
  | LC_ALL=C sort | while read -r f; do
  printf '%s\n' "$f"
  cat "$f"
done | sha256sum | cut -d' ' -f1
