/// \file
/// The one stable textual form of the kernel IR, and its parser.
///
/// [Note] Textual IR
/// =================
///   kernel @scalar_add(%vector: ptr<global f32>, %size: i64, %scalar: f32) {
///     if (((block_idx.x * block_dim.x) + thread_idx.x) < %size) {
///       let %0: f32 = %vector[((block_idx.x * block_dim.x) + thread_idx.x)]
///       %vector[((block_idx.x * block_dim.x) + thread_idx.x)] = (%0 + %scalar)
///     }
///   }
/// * One statement per line, two-space indentation, `//` comments to the end of a line.
/// * Statements: `let %x: T = e`, `var %x: T = e`, `%x = e`, `p[i] = e`,
///   `if e { ... } else { ... }`, `for %i: T = b to e step s { ... }`, `while e { ... }`,
///   `break`, `continue`, `barrier`, `return`, `return e` (in functions), and `@f(args)`
///   (calling a void function).
/// * Device functions: `func @f(%a: T, ...) -> R { ... }` (no `-> R` for void), defined before
///   the kernels and functions that call them; a printed kernel is preceded by the functions it
///   calls, so that it parses alone. A call is `@f(args)`.
/// * Expressions: `42:i32`, `1.5:f32` (shortest round-trip decimal; `inf`, `-inf`, `nan`),
///   `true`, `false`, `%x`, `thread_idx.x` (and block_idx, block_dim, grid_dim; .x .y .z),
///   every binary operator fully parenthesised `(a + b)` (`&&`/`||` for bool, `&`/`|` for ints),
///   `min(a, b)`, `max(a, b)`, `-a`, `!a`, `~a`, `(a < b)`, `cast<T>(a)`, `select(c, a, b)`,
///   and loads `p[i]`.
/// * SIMD vectors: types `f32x4`, `boolx8`, ... (`<scalar>x<lanes>`, lanes 2, 4, 8 or 16); a
///   broadcast `f32x4(a)` and a vector of lanes `f32x4(a, b, c, d)`; `extract<2>(v)` (lane 2);
///   `reduce_add(v)` (and mul, min, max, and, or, xor); the vector load `load<4>(p[i])`; a store
///   `p[i] = v` of a vector value writes as many elements as `v` has lanes. Operators, `select`,
///   `cast` and the built-in functions apply to vectors lane by lane, with the scalar spelling.
/// * Names: a variable prints as `%name`, or `%N` when it has none (numbered in order of
///   definition); clashing names get `.1`, `.2`, ... so that every definition in a kernel has
///   its own name. Printing does not depend on addresses: print -> parse -> print is identical.
#ifndef EMBER_COMPILER_IRPRINTER_H
#define EMBER_COMPILER_IRPRINTER_H

#include "ember/compiler/IR.h"

#include <string>
#include <string_view>

namespace ember::ir {

std::string print(const Kernel &k);
std::string print(const Module &m);
/// A device function, after the functions it calls.
std::string print(const Function &f);
/// An expression or statement alone (names as if it were a kernel body); for messages and tests.
std::string print(const Expr &e);
std::string print(const Stmt &s);

/// Parses the textual form. Throws `ember::CompileError` whose message is
/// `<filename>:<line>:<col>: error: <what>` for the first problem; the result is verified.
Module parse_module(std::string_view text, std::string_view filename = "<input>");

} // namespace ember::ir

#endif // EMBER_COMPILER_IRPRINTER_H
