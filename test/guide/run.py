#!/usr/bin/env python3
"""Runs one program of docs/guide.md and compares its stdout with the guide's output block.

  run.py PROGRAM EXPECTED.json

The program runs with EMBER_API set to $EMBER_GUIDE_API, or `cpu` when that is unset or empty
(so `make test` runs every program on the CPU device; EMBER_GUIDE_API=cuda runs them on an NVIDIA
GPU). It must exit with status 0, and its stdout must match one of its output blocks (several
blocks for one program are alternatives, for output that depends on the machine), or be empty
when it has none. Matching, line by line:

- a line that is exactly `...` stands for any number of lines, none included;
- `...` inside a line stands for any text within that line (a time, a device's name);
- every other line must equal the output's line;
- with `unordered` (`<!-- guide-output: NAME unordered -->`), the lines between the block's first
  and last `...` lines may come in any order, for kernels whose threads print: each must equal a
  different one of the output's lines that those `...` lines stand for, while the lines before the
  first `...` and after the last must be the output's first and last lines, in order. Without a
  `...` line, the whole output may come in any order and must hold exactly the block's lines.
"""

import difflib
import json
import os
import re
import subprocess
import sys
from collections import Counter

ELLIPSIS = "..."


def split_lines(text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def line_matches(pattern, line):
    if ELLIPSIS not in pattern:
        return pattern == line
    regex = ".*".join(re.escape(piece) for piece in pattern.split(ELLIPSIS))
    return re.fullmatch(regex, line, flags=re.DOTALL) is not None


def match_ordered(pattern, lines):
    """Whether `lines` match `pattern`, where a `...` line stands for any run of lines."""
    # reach[j]: pattern[:i] can match lines[:j]
    reach = [True] + [False] * len(lines)
    for p in pattern:
        if p == ELLIPSIS:
            seen = False
            for j in range(len(lines) + 1):
                seen = seen or reach[j]
                reach[j] = seen
        else:
            reach = [False] + [reach[j] and line_matches(p, lines[j]) for j in range(len(lines))]
    return reach[len(lines)]


def match_unordered(pattern, lines):
    marks = [i for i, p in enumerate(pattern) if p == ELLIPSIS]
    if not marks:
        return Counter(pattern) == Counter(lines)
    head, tail = pattern[: marks[0]], pattern[marks[-1] + 1:]
    samples = [p for p in pattern[marks[0]:marks[-1] + 1] if p != ELLIPSIS]
    if len(head) + len(tail) > len(lines):
        return False
    if not match_ordered(head, lines[: len(head)]):
        return False
    if not match_ordered(tail, lines[len(lines) - len(tail):]):
        return False
    middle = Counter(lines[len(head): len(lines) - len(tail)])
    return all(middle[s] >= n for s, n in Counter(samples).items())


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    program, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    api = os.environ.get("EMBER_GUIDE_API") or "cpu"
    env = dict(os.environ, EMBER_API=api)
    name = os.path.basename(program)
    try:
        run = subprocess.run([program], env=env, capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        print(f"{name}: still running after 300 s (EMBER_API={api})")
        return 1
    stdout = run.stdout.decode("utf-8", errors="replace")
    stderr = run.stderr.decode("utf-8", errors="replace")
    if run.returncode != 0:
        print(f"{name}: exit status {run.returncode} (EMBER_API={api})\n--- stdout\n{stdout}"
              f"--- stderr\n{stderr}")
        return 1
    lines = split_lines(stdout)
    outputs = expected["outputs"]
    if not outputs:
        if lines:
            print(f"{name}: printed output, but the guide shows no output block for it "
                  f"(EMBER_API={api}):\n{stdout}")
            return 1
        print(f"{name}: ran and printed nothing, as the guide expects (EMBER_API={api})")
        return 0
    for out in outputs:
        pattern = split_lines(out["text"])
        ok = (match_unordered if out["mode"] == "unordered" else match_ordered)(pattern, lines)
        if ok:
            print(f"{name}: output matches the block at {expected['guide']}:{out['line']} "
                  f"(EMBER_API={api})")
            return 0
    print(f"{name}: output matches no output block of the guide (EMBER_API={api})")
    for out in outputs:
        diff = difflib.unified_diff(split_lines(out["text"]), lines,
                                    f"{expected['guide']}:{out['line']} ({out['mode']})", "stdout",
                                    lineterm="")
        print("\n".join(diff))
    if stderr:
        print(f"--- stderr\n{stderr}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
