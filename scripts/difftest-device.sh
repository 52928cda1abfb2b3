#!/usr/bin/env bash
# Runs on the GPU machine over a tree carrying .devpkg/ember.tar.xz (scripts/pack-device.sh):
# ember-difftest over N random kernels (default 100000) from seed S (default 1) on every core,
# each kernel on the GPU, on the CPU device and in the reference interpreter, compared bit for bit.
# The log goes to $OUT/difftest.txt, the repro files of the disagreements (and crash-<seed>.ir/.txt
# of the kernels that crashed or hung a worker) to
# $OUT/difftest-repro.tar.xz (one archive: the device tool brings back at most 8 files;
# docs/testing.md). Further arguments
# go to ember-difftest (e.g. --no-half-fma). The run stops after $DIFFTEST_SECONDS (default 540,
# under the device tool's 10 minutes) and then sums up the kernels that finished; split a larger
# N over several calls by seed. With N = @FILE (a path relative to the tree), the seeds listed
# in FILE (one per line) are replayed instead, one process per seed on every core: the way to
# check, after a fix, the seeds that disagreed before (its log and archive are
# $OUT/difftest-replay.txt and $OUT/difftest-replay-repro.tar.xz, so a replay and a run can share
# one call). $DIFFTEST_DEVICES (default cuda,cpu)
# names the devices. On a host with several GPUs the seeds are split between them: one
# ember-difftest per GPU over its own range (or, replaying, seed modulo the GPU count), with the
# cores shared out; the logs are joined in $OUT/difftest.txt. test/difftest/gpu_seeds.txt lists
# every seed that disagreed or crashed on a GPU so far (docs/testing.md).
#   scripts/difftest-device.sh [N|@FILE] [S] [ember-difftest options...]
set -uo pipefail
OUT=${OUT:-/tmp/ember-out}
count=${1:-100000}
seed=${2:-1}
shift $(( $# < 2 ? $# : 2 ))
devices=${DIFFTEST_DEVICES:-cuda,cpu}
repro=/tmp/ember-difftest-repro
mkdir -p "$OUT" "$repro" /tmp/ember
# Every kernel is new: the driver's cache of JIT-compiled PTX would only be written to.
export CUDA_CACHE_DISABLE=1
seeds_file=
[[ $count == @* ]] && seeds_file=$(realpath "${count#@}")
tar -xJf .devpkg/ember.tar.xz -C /tmp/ember
cd /tmp/ember/build
gpus=1
if [[ $devices == *cuda* ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  (( gpus < 1 )) && gpus=1
fi
cores=$(nproc)
if [[ -n $seeds_file ]]; then
  total=$(grep -c . "$seeds_file")
  log="$OUT/difftest-replay.txt"
  echo "replay of $total seeds from ${count#@} on $devices" > "$log"
  grep . "$seeds_file" | xargs -P "$cores" -I{} sh -c \
    "CUDA_VISIBLE_DEVICES=\$(( {} % $gpus )) EMBER_CPU_THREADS=1 timeout 120 ./tools/ember-difftest --seed {} --count 1 --devices $devices --repro-dir $repro $* > $repro/log-{}.txt 2>&1 || true"
  still=$(ls "$repro"/difftest-*.txt 2>/dev/null | sed 's/.*difftest-//; s/[.]txt$//' | sort -n | tr '\n' ' ')
  crashed=$(grep -l "crash or hang" "$repro"/log-*.txt 2>/dev/null | sed 's/.*log-//; s/[.]txt$//' | sort -n | tr '\n' ' ')
  { echo "still disagreeing: $(echo $still | wc -w) of $total: $still"; echo "crashed or hung: $crashed"; } | tee -a "$log"
  tar -C "$(dirname "$repro")" -cf - "$(basename "$repro")" | xz -T0 > "$OUT/difftest-replay-repro.tar.xz"
  rm -rf "$repro"
  [[ -z $still && -z $crashed ]]
  exit
fi
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "ember-difftest --seed $seed --count $count --devices $devices on $gpus GPU(s), $cores cores $*"
} > "$OUT/difftest.txt" 2>&1
per=$(( (count + gpus - 1) / gpus ))
jobs=$(( cores / gpus > 1 ? cores / gpus : 1 ))
pids=()
for (( g = 0; g < gpus; g++ )); do
  n=$(( count - g * per < per ? count - g * per : per ))
  (( n > 0 )) || break
  CUDA_VISIBLE_DEVICES=$g timeout -s INT -k 30 "${DIFFTEST_SECONDS:-540}" \
    ./tools/ember-difftest --seed $(( seed + g * per )) --count "$n" --devices "$devices" --jobs "$jobs" \
    --repro-dir "$repro" "$@" > "/tmp/ember/difftest-$g.txt" 2>&1 &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
cat /tmp/ember/difftest-*.txt >> "$OUT/difftest.txt"
echo "ember-difftest: exit $rc" >> "$OUT/difftest.txt"
# The device tool brings back at most 8 files: the reports travel as one archive.
tar -C "$(dirname "$repro")" -cf - "$(basename "$repro")" | xz -T0 > "$OUT/difftest-repro.tar.xz"
# The summary (last lines), the disagreements by pair, and the first ones.
grep -E '^=== difftest' "$OUT/difftest.txt" | sed -E 's/seed [0-9]+: //; s/\([0-9]+ values\)//' | sort | uniq -c
grep -E '^=== difftest' "$OUT/difftest.txt" | head -20
for f in /tmp/ember/difftest-*.txt; do tail -8 "$f"; done
exit $rc
