#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool) over a tree carrying .devpkg/ember.tar.xz (see
# scripts/pack-device.sh): GPU detection, scalar_add on CUDA, every unit test, the dump-and-
# recompile round trip through ptxas, SASS dumps, the device log, docs/guide.md's programs, an
# EMBER_TRACE timeline, the benchmarks and the math library's errors (unless EMBER_SKIP_ULP is set).
# Logs go to $OUT.
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
  for e in vector_add reduction matmul softmax sgemm; do EMBER_API=cuda ./examples/$e; EMBER_API=cpu ./examples/$e; done
  echo "--- dump + ember-compile + ptxas"
  rm -rf /tmp/d && EMBER_DUMP=ir EMBER_DUMP_DIR=/tmp/d EMBER_API=cuda ./examples/scalar_add >/dev/null
  ls /tmp/d
  # <kernel>.<key>.<target>.eir: one file per specialisation.
  ir=$(ls /tmp/d/scalar_add.*.nvptx_sm_90a.eir | head -1)
  ./tools/ember-compile "$ir" --target=nvptx:sm_90a --emit=asm -o /tmp/d/sa.ptx &&
    ptxas -arch=sm_90a -o /tmp/d/sa.cubin /tmp/d/sa.ptx && echo "ptxas accepted the PTX"
  echo "--- EMBER_DUMP=sass"
  rm -rf /tmp/ds && EMBER_DUMP=sass EMBER_DUMP_DIR=/tmp/ds EMBER_API=cuda ./examples/scalar_add >/dev/null
  ls /tmp/ds; grep -c -E '^\s+/\*[0-9a-f]{4}\*/' /tmp/ds/*.sass | head -2
  echo "--- EMBER_LOG=device"
  EMBER_LOG=device ./examples/scalar_add 2>&1 >/dev/null | grep 'ember\[device\]'
  echo "--- docs/guide.md's programs on cuda (test/guide/run.py against their expected outputs)"
  guide_bad=0
  for b in ./test/guide/bin/guide_*; do
    n=${b##*/guide_}
    EMBER_GUIDE_API=cuda python3 "$repo/test/guide/run.py" "$b" "test/guide/programs/$n.json" \
      > "$OUT/guide-$n.txt" 2>&1 || { guide_bad=$((guide_bad + 1)); echo "guide $n: FAILED"; }
  done
  echo "guide programs: $(ls ./test/guide/bin/guide_* | wc -l) run, $guide_bad failed"
  echo "--- EMBER_TRACE of examples/reduction on cuda, checked by test/trace/check_trace.py"
  rm -rf /tmp/trace-cache
  EMBER_API=cuda EMBER_CACHE_DIR=/tmp/trace-cache python3 "$repo/test/trace/check_trace.py" \
    --schema "$repo/test/trace/trace_event.schema.json" --run ./examples/reduction --kernel reduce \
    "$OUT/trace-reduction.json" && echo "trace: OK"
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
[ -n "${EMBER_SKIP_ULP:-}" ] || grep -E '^\| `' "$OUT/math-cuda.txt" | head -80
