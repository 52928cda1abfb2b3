#!/usr/bin/env bash
# Runs on a GPU machine with two or more GPUs (the `device` tool's nvidia-h200-x2) over a tree carrying
# .devpkg/ember.tar.xz: every runtime test, so the cases that need a second GPU (device_id 1, peer
# access and copies, waits across contexts of two GPUs) run instead of skipping. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/ember-out}
mkdir -p "$OUT" /tmp/ember
tar -xJf .devpkg/ember.tar.xz -C /tmp/ember
cd /tmp/ember/build
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv,noheader
  nvidia-smi topo -m
} > "$OUT/summary.txt" 2>&1
./test/unit/ember-runtime-tests > "$OUT/runtime-tests.txt" 2>&1
echo "ember-runtime-tests: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/runtime-tests.txt" | tr '\n' ' ')" >> "$OUT/summary.txt"
# The cases that need two GPUs, listed with their outcome, so a skip cannot pass unnoticed.
grep -E '^\[ +(OK|FAILED|SKIPPED) +\].*([Pp]eer|[Dd]evice1|SecondDevice|TwoGpu|MultiGpu|MultiDevice|AcrossContexts|Ipc)' \
  "$OUT/runtime-tests.txt" >> "$OUT/summary.txt"
grep -B2 -A3 "Skipped\|SKIPPED" "$OUT/runtime-tests.txt" | head -60 >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
