#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool) over a tree carrying .devpkg/ember.tar.xz (see
# scripts/pack-device.sh): GPU detection, scalar_add on CUDA, every unit test, the dump-and-
# recompile round trip through ptxas, the benchmarks and the math library's errors. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/ember-out}
repo=$(pwd)
mkdir -p "$OUT" /tmp/ember
tar -xJf .devpkg/ember.tar.xz -C /tmp/ember
cd /tmp/ember/build
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "--- detect_gpu"; ./examples/detect_gpu
  echo "--- scalar_add (default api)"; ./examples/scalar_add
  echo "--- scalar_add (EMBER_API=cuda)"; EMBER_API=cuda ./examples/scalar_add
  echo "--- scalar_add (EMBER_API=cpu)"; EMBER_API=cpu ./examples/scalar_add
  echo "--- print_threads (cuda): header, rows, and the row check"
  EMBER_API=cuda ./examples/print_threads > /tmp/pt.txt; head -5 /tmp/pt.txt; tail -2 /tmp/pt.txt
  awk -f "$repo/test/lit/examples/Inputs/check_print_threads.awk" /tmp/pt.txt
  echo "--- examples (cuda, then cpu)"
  for e in vector_add reduction matmul softmax; do EMBER_API=cuda ./examples/$e; EMBER_API=cpu ./examples/$e; done
  echo "--- dump + ember-compile + ptxas"
  rm -rf /tmp/d && EMBER_DUMP=ir EMBER_DUMP_DIR=/tmp/d EMBER_API=cuda ./examples/scalar_add >/dev/null
  ls /tmp/d
  ./tools/ember-compile /tmp/d/scalar_add.nvptx_sm_90.ir --target=nvptx:sm_90 --emit=asm -o /tmp/d/sa.ptx &&
    ptxas -arch=sm_90 -o /tmp/d/sa.cubin /tmp/d/sa.ptx && echo "ptxas accepted the PTX"
} > "$OUT/summary.txt" 2>&1
for t in compiler dsl runtime; do
  timeout 300 ./test/unit/ember-$t-tests > "$OUT/$t-tests.txt" 2>&1
  rc=$?
  # The totals only (the skipped tests, hip's without an AMD GPU among them, are listed in the log).
  echo "ember-$t-tests: exit $rc $(grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ test' "$OUT/$t-tests.txt" | tail -2 | tr '\n' ' ')$(grep -E '^\[  SKIPPED \] [0-9]+ test' "$OUT/$t-tests.txt" | tail -1)" >> "$OUT/summary.txt"
done
./bench/first_launch > "$OUT/bench.txt" 2>&1; echo "first_launch: exit $?" >> "$OUT/summary.txt"
EMBER_API=cpu ./bench/first_launch > "$OUT/bench-cpu.txt" 2>&1; echo "first_launch (cpu): exit $?" >> "$OUT/summary.txt"
./bench/graph_replay > "$OUT/graph-replay.txt" 2>&1; echo "graph_replay: exit $?" >> "$OUT/summary.txt"
./bench/ptx_rules >> "$OUT/bench.txt" 2>&1; echo "ptx_rules: exit $?" >> "$OUT/summary.txt"
./bench/compile_cache > "$OUT/compile-cache.txt" 2>&1; echo "compile_cache: exit $?" >> "$OUT/summary.txt"
EMBER_API=cpu ./bench/compile_cache >> "$OUT/compile-cache.txt" 2>&1; echo "compile_cache (cpu): exit $?" >> "$OUT/summary.txt"
echo "--- EMBER_LOG=cache, scalar_add twice with one cache directory" >> "$OUT/compile-cache.txt"
rm -rf /tmp/sa-cache
for run in 1 2; do EMBER_LOG=cache EMBER_CACHE_DIR=/tmp/sa-cache ./examples/scalar_add >> "$OUT/compile-cache.txt" 2>&1; done
# The math library's errors on the GPU, and its results compared bit for bit with the CPU device.
[ -n "${EMBER_SKIP_ULP:-}" ] || timeout 300 ./bench/math_ulp --markdown > "$OUT/math-cuda.txt" 2>&1; echo "math_ulp (cuda): exit $?" >> "$OUT/summary.txt"
cat "$OUT/summary.txt" "$OUT/bench.txt" "$OUT/bench-cpu.txt" "$OUT/graph-replay.txt" "$OUT/compile-cache.txt"
grep -h -E "^\[  FAILED  \]|Failure$" -A3 "$OUT"/*-tests.txt | head -150
grep -E '^\| `' "$OUT/math-cuda.txt" | head -80
