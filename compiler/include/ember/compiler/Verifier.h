/// \file
/// Checks a kernel against the rules of [Note] IR semantics and reports every problem at once.
#ifndef EMBER_COMPILER_VERIFIER_H
#define EMBER_COMPILER_VERIFIER_H

#include "ember/compiler/IR.h"

#include <string>
#include <string_view>
#include <vector>

namespace ember::ir {

/// Is `s` a C identifier: an ASCII letter or `_`, then letters, digits and `_`? Kernel,
/// function, parameter and constant-array names must be (the verifier and the DSL's tracer ask).
bool is_c_identifier(std::string_view s);

/// Every problem found in `k`, each a one-line message naming the kernel and, where it helps, the
/// offending statement in textual form. Empty when the kernel is well formed.
///
/// Checked: a variable used outside its scope or before its definition; a variable defined twice;
/// assignment to an immutable variable (param, let, loop index); type mismatches (store value vs
/// pointee, condition not bool, loop bounds of different or non-integer types, index not an
/// integer); stores through read-only pointers; break/continue outside a loop; params of void
/// type, and kernel params of vector type; an empty kernel name or a name that is not a C
/// identifier; constant arrays outside kernels, with a name that is not a C identifier, starts
/// with `__`, is taken (twice, the kernel's, a called function's), or adding up to more than
/// max_constant_bytes; static shared arrays adding up to more than max_static_shared_bytes (the
/// message gives the total and lists the arrays, one a line).
std::vector<std::string> verify(const Kernel &k);

/// Throws `ember::CompileError` with all problems in its log when `verify` finds any; its summary
/// is "kernel 'k' failed verification (N problems), the first: ..." (for one problem, "(1
/// problem): ..."), so that the first line says what is wrong.
void verify_or_throw(const Kernel &k);
/// The same for a device function and the functions it calls: also a return type that is not
/// returned on every path, `return` without a value in a non-void function (or with one in a
/// void function), a returned value of another type, call arguments that do not match the
/// parameters, and shared arrays (kernels declare them). A kernel's check includes its callees.
std::vector<std::string> verify(const Function &f);
void verify_or_throw(const Function &f);

} // namespace ember::ir

#endif // EMBER_COMPILER_VERIFIER_H
