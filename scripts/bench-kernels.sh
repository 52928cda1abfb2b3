#!/usr/bin/env bash
# Runs bench/kernels (ember against nvcc twins, CUB and cuBLAS) and bench/kernels_torch.py (the
# same operations in PyTorch, with ember's times beside them) on the GPU machine, over a tree
# carrying .devpkg/ember.tar.xz (scripts/pack-device.sh). Output in $OUT (default /tmp/ember-out):
# kernels.txt and kernels-torch.txt. Exit status 1 when either found a wrong result.
set -uo pipefail
OUT=${OUT:-/tmp/ember-out}
repo=$(pwd)
tree=/tmp/ember-bench-kernels
rm -rf "$tree" && mkdir -p "$OUT" "$tree" && tar -xJf .devpkg/ember.tar.xz -C "$tree"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
"$tree/build/bench/kernels" > "$OUT/kernels.txt" 2>&1
rc=$?
cat "$OUT/kernels.txt"
python3 "$repo/bench/kernels_torch.py" --ember "$OUT/kernels.txt" > "$OUT/kernels-torch.txt" 2>&1
rc_torch=$?
cat "$OUT/kernels-torch.txt"
[[ $rc -eq 0 && $rc_torch -eq 0 ]]
