#!/bin/sh
# Assembles the PTX on stdin with ptxas and throws the result away: fails when ptxas rejects it.
# Arguments go to ptxas; without any, the target is sm_90.
set -e
tmp=$(mktemp "${TMPDIR:-/tmp}/ember-ptxas.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
if [ $# -eq 0 ]; then
  set -- -arch=sm_90
fi
ptxas "$@" -c -o /dev/null "$tmp"
