#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus: every textual IR input of the lit tests, one file each.

usage: make_seed_corpus.py OUT_DIR LIT_DIR [EXTRA_DIR ...]

A lit input made with split-file (`//--- name.eir` markers) gives one seed per part, so that each
malformed case of test/lit/eir/errors reaches the parser alone. Files of the EXTRA_DIRs (the IR
the DSL lit tests trace, committed under test/fuzz/corpus) are copied as they are. OUT_DIR is
emptied first, so seeds of deleted inputs do not linger.
"""
import os
import pathlib
import re
import shutil
import sys


def parts(text):
    """The split-file parts of `text` as (name, content), or [(None, text)] without markers."""
    marks = list(re.finditer(r"^//--- (\S+)\n", text, re.M))
    if not marks:
        return [(None, text)]
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((m.group(1), text[m.end():end]))
    return out


def main():
    out_dir = pathlib.Path(sys.argv[1])
    lit_dir = pathlib.Path(sys.argv[2])
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    count = 0
    for path in sorted(lit_dir.rglob("*.eir")):
        stem = "lit_" + "_".join(path.relative_to(lit_dir).with_suffix("").parts)
        for name, content in parts(path.read_text()):
            seed = stem if name is None else stem + "__" + re.sub(r"\W", "_", name)
            (out_dir / (seed + ".eir")).write_text(content)
            count += 1
    for extra in sys.argv[3:]:
        for path in sorted(pathlib.Path(extra).glob("*")):
            if path.is_file():
                shutil.copyfile(path, out_dir / path.name)
                count += 1
    print(f"ember: {count} fuzzing seeds in {out_dir}")


if __name__ == "__main__":
    main()
