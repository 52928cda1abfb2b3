#!/usr/bin/env bash
# The fuzzers on a bigger machine (the GPU machine: many cores, no clang or LLVM).
#
#   scripts/fuzz-device.sh pack         here, after `make fuzz-build`: writes .devpkg/fuzz.tar.xz
#                                       (the harnesses, libember_compiler.so, the seed corpus)
#   scripts/fuzz-device.sh run MINUTES [DEPTH]
#                                       there, in the repository root carrying .devpkg/: runs
#                                       every fuzzer at once for MINUTES each, with the cores
#                                       shared among them (libFuzzer's fork mode, going on after
#                                       a finding), after running each over inputs nested DEPTH
#                                       deep (default 100000; 0: none). Logs, artefacts and the
#                                       grown corpora go to $OUT/fuzz; $OUT/fuzz/summary.txt
#                                       has a line per fuzzer.
#
# The harnesses need only the system's libstdc++, libc, libm, libz and libzstd besides the
# packed libember_compiler.so (LLVM is linked into it): `ldd` on the unpacked tree says so
# before the run. Reports name addresses in the binaries (no llvm-symbolizer there);
# `llvm-symbolizer-19 --obj=build-fuzz/lib/libember_compiler.so 0xOFFSET` here turns them into
# lines, the build being the same.
set -uo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
pack)
  build=${FUZZ_BUILD:-build-fuzz}
  [[ -d $build/fuzz/bin && -d $build/fuzz/seed ]] || { echo "fuzz-device.sh: build $build first (make fuzz-build)" >&2; exit 2; }
  mkdir -p .devpkg
  tar -cf - "$build/fuzz/bin" "$build/fuzz/seed" "$build/lib/libember_compiler.so" \
    --transform "s|^$build/|build-fuzz/|" | xz -3 -T2 > .devpkg/fuzz.tar.xz
  ls -la .devpkg/fuzz.tar.xz
  ;;
run)
  minutes=${2:?usage: fuzz-device.sh run MINUTES [DEPTH]}
  depth=${3:-100000}
  OUT=${OUT:-/tmp/ember-out}
  root=/tmp/ember-fuzz
  mkdir -p "$OUT/fuzz" "$root"
  tar -xJf .devpkg/fuzz.tar.xz -C "$root" || exit 2
  {
    echo "--- $(nproc) cores; ldd of the harnesses (nothing may be 'not found')"
    for f in "$root"/build-fuzz/fuzz/bin/*; do echo "$f"; ldd "$f"; done
  } > "$OUT/fuzz/ldd.txt" 2>&1
  if grep -q "=> not found" "$OUT/fuzz/ldd.txt"; then
    cat "$OUT/fuzz/ldd.txt"
    exit 2
  fi
  fuzzers=$(ls "$root"/build-fuzz/fuzz/bin | wc -l)
  fork=$(($(nproc) / fuzzers))
  ((fork > 0)) || fork=1
  deep_args=()
  if ((depth > 0)); then deep_args=(--deep "$depth"); fi
  scripts/fuzz.sh --build "$root/build-fuzz" --out "$OUT/fuzz" --seconds $((minutes * 60)) \
    --parallel --fork "$fork" "${deep_args[@]}"
  ;;
*)
  sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
  ;;
esac
