/// \file
/// MathBuilder: the small language the math library is written in ([Note] Math library).
///
/// A `V` is an LLVM value of the function's float type (`m.fty`: float or double), of the
/// integer type of the same width (`m.ity`: i32 or i64), or an i1. Operators build IR for the
/// operand's kind, so an implementation reads like the C it stands for:
///
///     V k = m.rint(x * kLog2e);                 // float ops: fmul, llvm.rint
///     V r = m.fma(k, -kLn2Hi, x);               // one rounding
///     V p = m.poly(r, {1.0, 1.0, 0.5, ...});    // Horner with fma, c0 first
///     return m.select(x > kOverflow, m.inf(), m.ldexp(p, m.to_int(k)));
///
/// Arithmetic on floats is IEEE with no fast-math flags (no contraction, no reassociation), so
/// the same IR gives the same bits on every target. Integer arithmetic wraps; `>>` is arithmetic
/// (signed), `lshr` logical. Comparisons of floats are ordered (false on NaN) except `!=`.
/// A `double` or integer operand next to a V becomes a constant of the V's type.
#ifndef EMBER_COMPILER_LIB_MATH_MATHBUILDER_H
#define EMBER_COMPILER_LIB_MATH_MATHBUILDER_H

#include "ember/compiler/IR.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember {
namespace detail __attribute__((visibility("hidden"))) {
namespace math {

class MathBuilder;

/// A value under construction; see the file comment.
struct V {
    llvm::Value *v = nullptr;
    MathBuilder *m = nullptr;

    llvm::Type *type() const { return v->getType(); }
    bool is_float() const { return v->getType()->isFloatingPointTy(); }
    bool is_bool() const { return v->getType()->isIntegerTy(1); }
};

class MathBuilder {
public:
    MathBuilder(llvm::IRBuilderBase &builder, llvm::Type *float_type);

    llvm::IRBuilderBase &b;
    llvm::Type *const fty; ///< float or double
    llvm::Type *const ity; ///< i32 or i64: the integer of fty's width

    bool is_f64() const { return fty->isDoubleTy(); }
    /// Explicit mantissa bits (23 or 52), exponent bias (127 or 1023).
    int mantissa_bits() const { return is_f64() ? 52 : 23; }
    int exponent_bias() const { return is_f64() ? 1023 : 127; }

    V wrap(llvm::Value *v) { return V{v, this}; }
    /// A constant of fty (x rounded to fty), of ity, of `like`'s type.
    V f(double x);
    V i(int64_t x);
    V constant_like(const V &like, double x);
    V constant_like(const V &like, int64_t x); ///< exact for integer V (masks beyond 2^53)
    V inf();
    V nan();
    V t() { return wrap(b.getTrue()); }
    V fls() { return wrap(b.getFalse()); }

    // Floating point.
    V fma(V a, V b, V c);
    /// c[0] + x*(c[1] + x*(c[2] + ...)), Horner's scheme with one fma per step.
    V poly(V x, std::initializer_list<double> c);
    V poly(V x, llvm::ArrayRef<double> c);
    V abs(V x);
    V copysign(V mag, V sign);
    V floor(V x);
    V ceil(V x);
    V trunc(V x);
    /// Round to nearest, ties to even.
    V rint(V x);
    /// Correctly rounded.
    V sqrt(V x);
    /// IEEE minNum/maxNum.
    V fmin(V a, V b);
    V fmax(V a, V b);
    V isnan(V x);
    V isinf(V x);
    V isfinite(V x);
    /// x * 2^n for |x| in [2^-8, 2^8] (or 0, inf, NaN) and any integer n (ity): rounded once
    /// (exact unless the result is subnormal), overflowing to inf.
    V ldexp(V x, V n);

    // Bits and conversions.
    V as_int(V x);   ///< bitcast fty -> ity
    V as_float(V x); ///< bitcast ity -> fty
    V to_int(V x);   ///< fptosi to ity (x must be in range)
    V to_float(V n); ///< sitofp from ity
    V lshr(V a, V n);
    V lshr(V a, int64_t n);

    // Control.
    V select(V cond, V a, V b);
    /// Runs `then_fn` or `else_fn` (in their own blocks) and returns the value of the one that ran.
    /// For rare, expensive paths only; see [Note] Math library.
    V if_else(V cond, llvm::function_ref<V()> then_fn, llvm::function_ref<V()> else_fn);

    /// `body(args)` for a path that is rarely taken and long (exp's subnormal and overflow
    /// results): on GPUs an internal function of its own, `__ember_<name>_f32` / `_f64`, never
    /// inlined, so that every inlined copy of the caller stays short (a softmax inlines exp 16
    /// times) and quick to compile; on the CPU device inline, since a loop with a call in it does
    /// not vectorise. The same bits either way. `body` builds with the MathBuilder it is given.
    V rare_path(const std::string &name, std::initializer_list<V> args,
                llvm::function_ref<V(MathBuilder &, llvm::ArrayRef<V>)> body);

    /// Another math library function of this type (e.g. tanh through expm1).
    V call(ir::Intrinsic op, std::initializer_list<V> args);

    // Error-free transformations.
    /// hi + lo == a * b exactly (hi = a*b rounded).
    std::pair<V, V> two_prod(V a, V b);
    /// hi + lo == a + b exactly (any magnitudes).
    std::pair<V, V> two_sum(V a, V b);
    /// hi + lo == a + b exactly when |a| >= |b| or a == 0.
    std::pair<V, V> fast_two_sum(V a, V b);

    // Added with the trigonometric family (MathTrig.cpp): integers of any width (Payne-Hanek
    // reduction works on 64-bit words in f32 functions too), bit scans, multi-value branches.
    /// An integer constant of `bits` bits holding `value`'s low bits.
    V int_const(unsigned bits, uint64_t value);
    /// The integer V `a` zero-extended or truncated to `bits` bits.
    V zext_or_trunc(V a, unsigned bits);
    /// Leading zero bits of an integer V (its width for 0; llvm.ctlz).
    V clz(V a);
    /// The high word of (hi:lo) << (s mod width): a shift of a double-width integer that is
    /// defined for every s (llvm.fshl).
    V fshl(V hi, V lo, V s);
    /// 2^n as fty, exactly, for an integer n (ity) in [1 - bias, bias].
    V pow2i(V n);
    /// True where the sign bit of the float x is set (-0.0, negative NaNs included).
    V signbit(V x);
    /// if_else for several values: each arm returns the same number of values, of the same
    /// types in order.
    std::vector<V> if_else_values(V cond, llvm::function_ref<std::vector<V>()> then_fn,
                                  llvm::function_ref<std::vector<V>()> else_fn);
};

V operator+(V a, V b);
V operator-(V a, V b);
V operator*(V a, V b);
V operator/(V a, V b);
V operator-(V a);
V operator&(V a, V b);
V operator|(V a, V b);
V operator^(V a, V b);
V operator<<(V a, V b);
V operator>>(V a, V b); ///< arithmetic
V operator!(V a);       ///< i1 not
V operator&&(V a, V b); ///< i1 and (both evaluated)
V operator||(V a, V b); ///< i1 or (both evaluated)
V operator<(V a, V b);
V operator<=(V a, V b);
V operator>(V a, V b);
V operator>=(V a, V b);
V operator==(V a, V b);
V operator!=(V a, V b);

// A constant next to a V takes the V's type.
#define EMBER_MATH_MIXED(OP)                                                                       \
    inline V operator OP(V a, double c) { return a OP a.m->constant_like(a, c); }                  \
    inline V operator OP(double c, V a) { return a.m->constant_like(a, c) OP a; }
EMBER_MATH_MIXED(+)
EMBER_MATH_MIXED(-)
EMBER_MATH_MIXED(*)
EMBER_MATH_MIXED(/)
EMBER_MATH_MIXED(&)
EMBER_MATH_MIXED(|)
EMBER_MATH_MIXED(^)
EMBER_MATH_MIXED(<<)
EMBER_MATH_MIXED(>>)
EMBER_MATH_MIXED(<)
EMBER_MATH_MIXED(<=)
EMBER_MATH_MIXED(>)
EMBER_MATH_MIXED(>=)
EMBER_MATH_MIXED(==)
EMBER_MATH_MIXED(!=)
#undef EMBER_MATH_MIXED
// Integer literals of any integral type (exact; no detour through double).
#define EMBER_MATH_MIXED_INT(OP)                                                                   \
    template <class I>                                                                             \
        requires std::is_integral_v<I>                                                             \
    V operator OP(V a, I c) {                                                                      \
        return a OP a.m->constant_like(a, static_cast<int64_t>(c));                                \
    }                                                                                              \
    template <class I>                                                                             \
        requires std::is_integral_v<I>                                                             \
    V operator OP(I c, V a) {                                                                      \
        return a.m->constant_like(a, static_cast<int64_t>(c)) OP a;                                \
    }
EMBER_MATH_MIXED_INT(+)
EMBER_MATH_MIXED_INT(-)
EMBER_MATH_MIXED_INT(*)
EMBER_MATH_MIXED_INT(/)
EMBER_MATH_MIXED_INT(&)
EMBER_MATH_MIXED_INT(|)
EMBER_MATH_MIXED_INT(^)
EMBER_MATH_MIXED_INT(<<)
EMBER_MATH_MIXED_INT(>>)
EMBER_MATH_MIXED_INT(<)
EMBER_MATH_MIXED_INT(<=)
EMBER_MATH_MIXED_INT(>)
EMBER_MATH_MIXED_INT(>=)
EMBER_MATH_MIXED_INT(==)
EMBER_MATH_MIXED_INT(!=)
#undef EMBER_MATH_MIXED_INT

/// An implementation: builds the function's body from its arguments (of m.fty).
using Impl = V (*)(MathBuilder &m, llvm::ArrayRef<V> args);

/// The implementations of each family file: nullptr for functions the family does not hold.
/// MathExpLog.cpp: rsqrt cbrt exp exp2 expm1 log log2 log10 log1p pow.
Impl find_exp_log(ir::Intrinsic op);
/// MathTrig.cpp: sin cos tan asin acos atan atan2 sinh cosh tanh erf.
Impl find_trig(ir::Intrinsic op);

} // namespace math
} // namespace detail
} // namespace ember

#endif // EMBER_COMPILER_LIB_MATH_MATHBUILDER_H
