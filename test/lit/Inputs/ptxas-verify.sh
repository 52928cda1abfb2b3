#!/bin/sh
# Assembles the PTX on stdin with ptxas and throws the result away: fails when ptxas rejects it.
# Input holding several modules (one per `// ----- kernel: ...` header, as ember-compile and the
# lit programs print them) is split, and each module is assembled on its own.
# Arguments go to ptxas; without any, the target is sm_90.
set -e
dir=$(mktemp -d "${TMPDIR:-/tmp}/ember-ptxas.XXXXXX")
trap 'rm -rf "$dir"' EXIT
awk -v dir="$dir" '
  /^\/\/ ----- kernel: / { n++ }
  { f = sprintf("%s/module%04d.ptx", dir, n); print > f }
' 
if [ $# -eq 0 ]; then
  set -- -arch=sm_90
fi
count=0
for m in "$dir"/module*.ptx; do
  [ -e "$m" ] || continue
  grep -q '\.entry\|\.func' "$m" || continue
  ptxas "$@" -c -o /dev/null "$m"
  count=$((count + 1))
done
if [ "$count" -eq 0 ]; then
  echo "ptxas-verify: no PTX module in the input" >&2
  exit 1
fi
