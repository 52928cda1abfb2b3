#!/usr/bin/env python3
"""Writes deeply nested textual IR, one kernel per file, for the fuzzers to run once.

usage: make_deep_inputs.py OUT_DIR DEPTH

Each file nests one construct DEPTH levels deep: parentheses, unary minus, `!`, `~`, casts,
`select`, calls of built-in functions, `if`s, `for`s, `while`s and blocks of `else { if`. Deep
nesting must end in a typed error naming the limit, or compile: never overflow the stack.
libFuzzer's mutations stay below its -max_len, so these inputs are given to it directly.
"""
import pathlib
import sys


def kernel(body, params="%p: ptr<global i32>, %n: i32"):
    return f"kernel @deep({params}) {{\n{body}}}\n"


def expr_file(open_, close, leaf="%n"):
    return lambda d: kernel(f"  %p[0:i64] = {open_ * d}{leaf}{close * d}\n")


def nested_stmt(open_, close, inner="  %p[0:i64] = %n\n"):
    return lambda d: kernel(open_ * d + inner + close * d)


SHAPES = {
    "parens": expr_file("(", ")"),
    "add": lambda d: kernel("  %p[0:i64] = " + "(%n + " * d + "%n" + ")" * d + "\n"),
    "neg": expr_file("-", ""),
    "not": lambda d: kernel("  %p[0:i64] = select(" + "!" * d + "true, 1:i32, 0:i32)\n"),
    "bitnot": expr_file("~", ""),
    "cast": expr_file("cast<i32>(", ")"),
    "abs": expr_file("abs(", ")"),
    "min": lambda d: kernel("  %p[0:i64] = " + "min(%n, " * d + "%n" + ")" * d + "\n"),
    "select": lambda d: kernel("  %p[0:i64] = " + "select(true, %n, " * d + "%n" + ")" * d + "\n"),
    "index": lambda d: kernel("  %p[0:i64] = " + "%p[cast<i64>(" * d + "%n" + ")]" * d + "\n"),
    "if": nested_stmt("if (%n < 10:i32) {\n", "}\n"),
    "if_else": nested_stmt("if (%n < 10:i32) {\n} else {\n", "}\n"),
    "for": lambda d: kernel("".join(f"for %i{k}: i32 = 0:i32 to %n step 1:i32 {{\n" for k in range(d))
                            + "  %p[0:i64] = %n\n" + "}\n" * d),
    "while": nested_stmt("while (%n < 0:i32) {\n", "}\n"),
}


def main():
    out = pathlib.Path(sys.argv[1])
    depth = int(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in SHAPES.items():
        (out / f"deep_{name}_{depth}.eir").write_text(make(depth))
    print(f"ember: {len(SHAPES)} inputs nested {depth} deep in {out}")


if __name__ == "__main__":
    main()
