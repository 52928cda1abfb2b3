#!/usr/bin/env python3
"""Extracts the programs of docs/guide.md so that the build compiles them and ctest runs them.

Every fenced C++ block of the guide is one of these, said by an HTML comment on the last
non-blank line before its fence (markdown does not render it):

  <!-- guide-program: NAME -->              a complete program, built as guide_NAME
  <!-- guide-fragment: NAME in PROGRAM -->  a fragment: PROGRAM with its `// ...` line replaced
                                            by the block, built as guide_NAME
  <!-- guide-compile-fail: NAME -->         a program that must not compile

and these comments mark the blocks checked against them:

  <!-- guide-output: NAME -->               ```text: what NAME prints on stdout (see run.py for
  <!-- guide-output: NAME unordered -->     `...` lines and `unordered`); several blocks for one
                                            NAME are alternatives, one of which must match
  <!-- guide-diagnostics: NAME -->          ```text: lines that the diagnostics of compile-fail
                                            program NAME must contain (GCC and clang)

Anything else is an error that fails the build, naming the guide's line: a C++ block without a
program, fragment or compile-fail comment, a fence without a language, a comment that no block
follows, an output for no program, a compile-fail program without diagnostics, a name defined
twice, a fragment's program without exactly one `// ...` line. A program without an output block
must print nothing.

Usage:
  extract.py GUIDE --list             one line per test: `program NAME` or `compile_fail NAME`
  extract.py GUIDE --out DIR          writes DIR/NAME.cpp and DIR/NAME.json for each program and
                                      fragment, DIR/compile_fail/NAME.cpp for each compile-fail
                                      program; files whose content is unchanged are not rewritten,
                                      so an edit of the guide rebuilds only the programs it changed
"""

import argparse
import json
import os
import re
import sys

CPP_LANGUAGES = {"cpp", "c++", "cxx", "cc", "c", "h", "hpp", "hxx"}
NAME = r"[a-z][a-z0-9_]*"
MARKER = re.compile(r"^\s*<!--\s*guide-([a-z-]+):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)\s*.*$")
PLACEHOLDER = "// ..."


class GuideError(Exception):
    pass


class Block:
    def __init__(self, line, language, text, marker, marker_line):
        self.line = line            # 1-based line of the opening fence
        self.language = language
        self.text = text            # the lines between the fences, indentation removed
        self.marker = marker        # (kind, argument) or None
        self.marker_line = marker_line


def parse_blocks(path, lines):
    """The fenced blocks of the guide, each with the marker comment before it, if any."""
    blocks = []
    pending = None  # (kind, argument, line) of a marker not yet followed by a fence
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            if pending:
                raise GuideError(f"{path}:{pending[2]}: guide-{pending[0]} comment followed by "
                                 "another comment instead of a fenced block")
            pending = (m.group(1), m.group(2), i + 1)
            i += 1
            continue
        if re.match(r"^\s*<!--\s*guide-", line):
            raise GuideError(f"{path}:{i + 1}: malformed guide comment (write it alone on its line, "
                             "as `<!-- guide-program: name -->`)")
        f = FENCE.match(line)
        if f:
            indent, fence, language = f.group(1), f.group(2), f.group(3).lower()
            start = i + 1
            body = []
            i += 1
            while i < len(lines):
                close = lines[i].strip()
                if close.startswith(fence[0] * len(fence)) and close.strip(fence[0]) == "":
                    break
                text = lines[i]
                body.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
                i += 1
            else:
                raise GuideError(f"{path}:{start}: fenced block never closed")
            if not language:
                raise GuideError(f"{path}:{start}: fenced block without a language: say what it is "
                                 "(```cpp, ```text, ```sh, ...)")
            marker = (pending[0], pending[1]) if pending else None
            blocks.append(Block(start, language, "\n".join(body) + "\n", marker,
                                pending[2] if pending else None))
            pending = None
            i += 1
            continue
        if pending and line.strip():
            raise GuideError(f"{path}:{pending[2]}: guide-{pending[0]} comment is not followed by a "
                             "fenced block")
        i += 1
    if pending:
        raise GuideError(f"{path}:{pending[2]}: guide-{pending[0]} comment at the end of the guide")
    return blocks


def check_name(path, line, name, what):
    if not re.fullmatch(NAME, name):
        raise GuideError(f"{path}:{line}: {what} name '{name}' must match {NAME}")


def line_directive(path, line):
    # Diagnostics and DslError locations then point into the guide.
    return f'#line {line} "{path}"\n'


def collect(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = parse_blocks(path, lines)

    programs = {}       # name -> (block, text)
    fragments = {}      # name -> (block, program name)
    compile_fails = {}  # name -> block
    outputs = {}        # name -> [(block, mode)]
    diagnostics = {}    # name -> block
    for b in blocks:
        is_cpp = b.language in CPP_LANGUAGES
        if b.marker is None:
            if is_cpp:
                raise GuideError(f"{path}:{b.line}: C++ block without a guide-program, guide-fragment "
                                 "or guide-compile-fail comment: every C++ block of the guide is built "
                                 "(docs/testing.md, 'The guide')")
            continue
        kind, arg = b.marker
        where = f"{path}:{b.marker_line}"
        if kind in ("program", "fragment", "compile-fail"):
            if not is_cpp:
                raise GuideError(f"{where}: guide-{kind} must precede a ```cpp block, not ```{b.language}")
            if kind == "fragment":
                m = re.fullmatch(r"(\S+)\s+in\s+(\S+)", arg)
                if not m:
                    raise GuideError(f"{where}: write guide-fragment as `NAME in PROGRAM`")
                name, program = m.group(1), m.group(2)
                check_name(path, b.marker_line, program, "program")
            else:
                name = arg
            check_name(path, b.marker_line, name, kind)
            if name in programs or name in fragments or name in compile_fails:
                raise GuideError(f"{where}: '{name}' is defined twice")
            if kind == "program":
                programs[name] = b
            elif kind == "fragment":
                fragments[name] = (b, program)
            else:
                compile_fails[name] = b
        elif kind in ("output", "diagnostics"):
            if b.language != "text":
                raise GuideError(f"{where}: guide-{kind} must precede a ```text block, not ```{b.language}")
            words = arg.split()
            if not words:
                raise GuideError(f"{where}: guide-{kind} needs the program's name")
            name = words[0]
            check_name(path, b.marker_line, name, "program")
            if kind == "output":
                mode = "ordered"
                if words[1:] == ["unordered"]:
                    mode = "unordered"
                elif words[1:]:
                    raise GuideError(f"{where}: unknown guide-output option '{' '.join(words[1:])}' "
                                     "(the only one is `unordered`)")
                outputs.setdefault(name, []).append((b, mode))
            else:
                if len(words) != 1:
                    raise GuideError(f"{where}: guide-diagnostics takes only the program's name")
                if name in diagnostics:
                    raise GuideError(f"{where}: second guide-diagnostics block for '{name}'")
                diagnostics[name] = b
        else:
            raise GuideError(f"{where}: unknown guide comment 'guide-{kind}' (guide-program, "
                             "guide-fragment, guide-compile-fail, guide-output, guide-diagnostics)")

    for name, entries in outputs.items():
        if name in compile_fails:
            raise GuideError(f"{path}:{entries[0][0].marker_line}: guide-output for '{name}', which "
                             "must not compile (use guide-diagnostics)")
        if name not in programs and name not in fragments:
            raise GuideError(f"{path}:{entries[0][0].marker_line}: guide-output for '{name}', but no "
                             "program or fragment has that name")
    for name, b in diagnostics.items():
        if name not in compile_fails:
            raise GuideError(f"{path}:{b.marker_line}: guide-diagnostics for '{name}', which is no "
                             "guide-compile-fail program")
    for name, b in compile_fails.items():
        if name not in diagnostics:
            raise GuideError(f"{path}:{b.marker_line}: guide-compile-fail '{name}' has no "
                             "guide-diagnostics block saying what the compiler must report")
        if not any(l.strip() for l in diagnostics[name].text.split("\n")):
            raise GuideError(f"{path}:{diagnostics[name].marker_line}: empty guide-diagnostics block")

    sources = {}
    for name, b in programs.items():
        sources[name] = line_directive(path, b.line + 1) + b.text
    for name, (b, program) in fragments.items():
        if program not in programs:
            raise GuideError(f"{path}:{b.marker_line}: fragment '{name}' goes into '{program}', "
                             "which is no guide-program")
        host = programs[program]
        text_lines = host.text.split("\n")
        spots = [k for k, l in enumerate(text_lines) if l.strip() == PLACEHOLDER]
        if len(spots) != 1:
            raise GuideError(f"{path}:{host.line}: program '{program}' takes fragments, so it needs "
                             f"exactly one `{PLACEHOLDER}` line where they go (it has {len(spots)})")
        k = spots[0]
        indent = text_lines[k][: len(text_lines[k]) - len(text_lines[k].lstrip())]
        inserted = "".join(indent + l + "\n" if l else "\n" for l in b.text.rstrip("\n").split("\n"))
        sources[name] = (line_directive(path, host.line + 1) + "".join(l + "\n" for l in text_lines[:k]) +
                         line_directive(path, b.line + 1) + inserted +
                         line_directive(path, host.line + 2 + k) + "\n".join(text_lines[k + 1:]))

    expectations = {}
    for name in sources:
        expectations[name] = {
            "guide": path,
            "outputs": [{"line": b.line, "mode": mode, "text": b.text}
                        for b, mode in outputs.get(name, [])],
        }
    fails = {}
    for name, b in compile_fails.items():
        expects = "".join(f"// EXPECT: {l.strip()}\n" for l in diagnostics[name].text.split("\n")
                          if l.strip())
        fails[name] = line_directive(path, b.line + 1) + b.text + expects
    return sources, expectations, fails


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("guide")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--list", action="store_true")
    group.add_argument("--out")
    args = parser.parse_args()
    try:
        sources, expectations, fails = collect(args.guide)
    except GuideError as e:
        print(f"extract.py: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"extract.py: error: cannot read the guide: {e}", file=sys.stderr)
        return 1
    if args.list:
        for name in sorted(sources):
            print(f"program {name}")
        for name in sorted(fails):
            print(f"compile_fail {name}")
        return 0
    os.makedirs(os.path.join(args.out, "compile_fail"), exist_ok=True)
    for name, text in sources.items():
        write_if_changed(os.path.join(args.out, name + ".cpp"), text)
        write_if_changed(os.path.join(args.out, name + ".json"),
                         json.dumps(expectations[name], indent=1) + "\n")
    for name, text in fails.items():
        write_if_changed(os.path.join(args.out, "compile_fail", name + ".cpp"), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
