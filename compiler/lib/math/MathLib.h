/// \file
/// ember's math library: one implementation of each function, built as LLVM IR by the compiler.
///
/// [Note] Math library
/// ===================
/// Every target runs the same code for exp, log, sin, ... : each function is written once, in
/// C-like C++ over `MathBuilder` (MathBuilder.h), which emits LLVM IR. The code generator asks
/// `emit_math_call` for a call; the first call in a module defines an internal function
/// `__ember_<name>_f32` / `_f64` there, and the optimiser inlines it or not like any other call.
///
/// Why our own implementations and not libdevice or the C library:
/// * libdevice ships with the CUDA *toolkit*, not the driver; ember's users need only the driver
///   (the runtime dlopens libcuda), so a portable fallback would be needed anyway, and two
///   implementations would give two answers for one kernel.
/// * The CPU device would otherwise call the host's libm (different bits again, and a call per
///   element that LLVM cannot vectorise), and AMDGPU would need a third library (ROCm's ocml).
/// * One implementation gives the same bits on the CPU device and on every GPU (given fma, which
///   each target has): a kernel debugged on the CPU computes the same numbers on the GPU.
/// * The error bound of each function is measured by bench/math_ulp against a correctly rounded
///   reference and published in docs/math.md, per target.
///
/// Rules every implementation follows:
/// * Branch-free where reasonable (selects, not branches): GPUs run warps in lockstep and a
///   branch that one lane takes costs every lane. Rare paths (huge trigonometric arguments,
///   exp's subnormal and overflowing results) may branch, through `MathBuilder::if_else`; a long
///   one goes through `MathBuilder::rare_path`, a function of its own on GPUs that is never
///   inlined, so that the common path is all a kernel inlines at each call.
/// * No tables in memory (a global table means a load per call, and on NVPTX a constant-bank
///   or global read); constants are immediates.
/// * Special values follow C99 Annex F (exp(-inf) = 0, log(0) = -inf, log(-1) = NaN, sin(inf) =
///   NaN, pow(x, 0) = 1, ...); subnormal inputs and results are handled (no flush to zero).
/// * f16 and bf16 arguments are widened to f32, computed there and rounded back.
#ifndef EMBER_COMPILER_LIB_MATH_MATHLIB_H
#define EMBER_COMPILER_LIB_MATH_MATHLIB_H

#include "ember/compiler/IR.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/IRBuilder.h>

namespace ember {
namespace detail __attribute__((visibility("hidden"))) {

/// A call of ember's implementation of the math library function `op` (rsqrt ... erf, not a
/// fast_ variant) on `args`, which share one LLVM floating-point type, emitted at `b`'s insertion
/// point; defines the function in the module on first use.
llvm::Value *emit_math_call(llvm::IRBuilderBase &b, ir::Intrinsic op, llvm::ArrayRef<llvm::Value *> args);

} // namespace detail
} // namespace ember

#endif // EMBER_COMPILER_LIB_MATH_MATHLIB_H
