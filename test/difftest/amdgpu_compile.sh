#!/bin/sh
# Compiles the random kernels of ember-difftest's seeds FROM..TO into AMDGPU code objects for ARCH
# (no AMD GPU needed): every kernel must compile (print included: ember's print buffer). A failure
# (an LLVM defect, which ember reports as a CompileError) fails the test and names the seed.
#   amdgpu_compile.sh EMBER_DIFFTEST EMBER_COMPILE WORKDIR FROM TO ARCH
set -u
difftest=$1 compile=$2 dir=$3 from=$4 to=$5 arch=$6
rm -rf "$dir" && mkdir -p "$dir" || exit 2
failed=0 compiled=0
s=$from
while [ "$s" -le "$to" ]; do
  "$difftest" --print "$s" > "$dir/k.ir" || { echo "seed $s: the generator failed"; exit 2; }
  if EMBER_DUMP= "$compile" "$dir/k.ir" --target="amdgpu:$arch" --emit=obj -o "$dir/k.hsaco" > "$dir/err.txt" 2>&1; then
    compiled=$((compiled + 1))
  else
    failed=$((failed + 1))
    echo "seed $s (amdgpu:$arch): $(head -c 400 "$dir/err.txt")"
    cp "$dir/k.ir" "$dir/failed-$s.ir"
  fi
  s=$((s + 1))
done
echo "amdgpu:$arch seeds $from..$to: $compiled compiled, $failed failed"
[ "$failed" -eq 0 ]
