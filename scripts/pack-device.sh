#!/usr/bin/env bash
# Packs the built binaries (build/ must be built) into .devpkg/ember.tar.xz for the GPU machine,
# which has no LLVM: LLVM is linked statically into libember_compiler.so, and every binary finds
# the libraries through $ORIGIN, so the tree runs wherever it is unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build"
# The libraries carry a version (libember_runtime.so -> .so.0.1 -> .so.0.1.0): the links travel
# as links, the binaries name the middle one.
for f in build/lib/*.so* build/examples/* build/bench/* \
         build/tools/ember-* build/test/unit/ember-*-tests build/test/guide/bin/*; do
  mkdir -p "$stage/$(dirname "$f")"
  if [[ -L $f ]]; then
    cp -P "$f" "$stage/$f"
    continue
  fi
  [[ -f $f && -x $f ]] || continue
  cp "$f" "$stage/$f"
  strip --strip-unneeded "$stage/$f"
done
# The guide's expected outputs, for test/guide/run.py on the GPU.
if compgen -G "build/test/guide/programs/*.json" > /dev/null; then
  mkdir -p "$stage/build/test/guide/programs"
  cp build/test/guide/programs/*.json "$stage/build/test/guide/programs/"
fi
mkdir -p .devpkg
tar -C "$stage" -cf - build | xz -6 -T2 > .devpkg/ember.tar.xz
ls -la .devpkg/ember.tar.xz
