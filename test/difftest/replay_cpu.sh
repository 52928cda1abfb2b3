#!/bin/sh
# Replays every seed of SEEDS_FILE (one per line) on the CPU device against the reference
# interpreter, one kernel per process: the seeds that ever disagreed on the GPU machine include
# those where the CPU device was the one wrong, and each must agree here. Fails naming the seeds
# that disagree or crash; their reports are left in REPRO_DIR.
#   replay_cpu.sh EMBER_DIFFTEST SEEDS_FILE REPRO_DIR
difftest=$1 seeds=$2 repro=$3
rm -rf "$repro" && mkdir -p "$repro" || exit 1
failed=""
total=0
for seed in $(grep -E '^[0-9]+$' "$seeds"); do
  total=$((total + 1))
  "$difftest" --seed "$seed" --count 1 --devices cpu --no-minimise --repro-dir "$repro" \
    > "$repro/log-$seed.txt" 2>&1 || failed="$failed $seed"
done
if [ -n "$failed" ]; then
  echo "replay_cpu: of $total seeds, these disagree or crash on the CPU device:$failed (reports in $repro)"
  exit 1
fi
echo "replay_cpu: all $total seeds agree on the CPU device"
