#!/usr/bin/env python3
"""Checks that extract.py refuses a malformed guide, and says why.

  check_bad.py EXTRACT BAD.md OUTDIR

BAD.md's first line is `<!-- expect: TEXT -->`: the extraction must exit with a non-zero status,
print TEXT in its error, and write no program.
"""

import os
import re
import subprocess
import sys


def main():
    extract, bad, out = sys.argv[1:4]
    with open(bad, encoding="utf-8") as f:
        first = f.readline()
    m = re.fullmatch(r"<!-- expect: (.*) -->\n?", first)
    if not m:
        print(f"{bad}: the first line must be `<!-- expect: TEXT -->`")
        return 1
    expect = m.group(1)
    run = subprocess.run([sys.executable, extract, bad, "--out", out], capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    if run.returncode == 0:
        print(f"FAIL: extract.py accepted {bad}")
        return 1
    if expect not in run.stderr:
        print(f"FAIL: the error does not say '{expect}'")
        return 1
    if os.path.isdir(out) and any(name.endswith(".cpp") for _, _, names in os.walk(out) for name in names):
        print(f"FAIL: extract.py wrote programs into {out}")
        return 1
    print(f"ok: extract.py refused {os.path.basename(bad)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
