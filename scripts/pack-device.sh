#!/usr/bin/env bash
# Packs the built binaries (build/ must be built) into .devpkg/ember.tar.xz for the GPU machine,
# which has no LLVM: LLVM is linked statically into libember_compiler.so, and every binary finds
# the libraries through $ORIGIN, so the tree runs wherever it is unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build"
for f in build/lib/*.so build/examples/* build/bench/* \
         build/tools/ember-* build/test/unit/ember-*-tests; do
  [[ -f $f && -x $f ]] || continue
  mkdir -p "$stage/$(dirname "$f")"
  cp "$f" "$stage/$f"
  strip --strip-unneeded "$stage/$f"
done
mkdir -p .devpkg
tar -C "$stage" -cf - build | xz -6 -T2 > .devpkg/ember.tar.xz
ls -la .devpkg/ember.tar.xz
