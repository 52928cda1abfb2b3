/// \file
/// Built-in functions of the kernel language that map to IR intrinsics: abs, clamp, bit counting,
/// and the exact floating-point functions (sqrt, floor, ceil, trunc, round, fma, copysign, isnan,
/// isinf, isfinite). Semantics: [Note] IR semantics in compiler/include/ember/compiler/IR.h.
#ifndef EMBER_DSL_BUILTINS_H
#define EMBER_DSL_BUILTINS_H

#include "ember/dsl/Value.h"

#include <optional>
#include <source_location>
#include <vector>

namespace ember {

namespace detail {
template <Scalar T, class... X>
Value<T> intrinsic(ir::Intrinsic f, const std::source_location &loc, const X &...x) {
    std::vector<ir::Expr> args;
    uint32_t trace = 0;
    (
        [&] {
            Value<T> v = to_value<T>(x, loc);
            args.push_back(v.expr());
            trace = merge_trace(trace, v.trace());
        }(),
        ...);
    ir::Expr call = ir::Call::make(f, std::move(args));
    return Value<T>(call, trace);
}

/// The type a built-in works on: the first traced argument's.
template <class... X> struct first_traced;
template <class X, class... Rest> struct first_traced<X, Rest...> {
    using type = typename std::conditional_t<Traced<X>, traced_traits<std::remove_cvref_t<X>>,
                                             first_traced<Rest...>>::type;
};
template <> struct first_traced<> {
    using type = void;
};
template <class... X> using first_traced_t = typename first_traced<X...>::type;

template <class T> constexpr bool is_float = is_float_type<T>;
} // namespace detail

/// |x|; abs of the most negative integer is itself (wrapping), abs of a float clears its sign.
template <Traced X> auto abs(const X &x, std::source_location loc = std::source_location::current()) {
    using T = traced_t<X>;
    static_assert(detail::is_number<T>, "abs needs a number");
    return detail::intrinsic<T>(ir::Intrinsic::Abs, loc, x);
}

/// Number of set bits.
template <Traced X> auto popcount(const X &x, std::source_location loc = std::source_location::current()) {
    static_assert(detail::is_integer<traced_t<X>>, "popcount needs an integer");
    return detail::intrinsic<traced_t<X>>(ir::Intrinsic::Popcount, loc, x);
}
/// Leading zero bits; clz(0) is the bit width.
template <Traced X> auto clz(const X &x, std::source_location loc = std::source_location::current()) {
    static_assert(detail::is_integer<traced_t<X>>, "clz needs an integer");
    return detail::intrinsic<traced_t<X>>(ir::Intrinsic::Clz, loc, x);
}
/// Trailing zero bits; ctz(0) is the bit width.
template <Traced X> auto ctz(const X &x, std::source_location loc = std::source_location::current()) {
    static_assert(detail::is_integer<traced_t<X>>, "ctz needs an integer");
    return detail::intrinsic<traced_t<X>>(ir::Intrinsic::Ctz, loc, x);
}

#define EMBER_FLOAT_UNARY(NAME, OP, WHAT)                                                          \
    /** WHAT */                                                                                    \
    template <Traced X> auto NAME(const X &x, std::source_location loc = std::source_location::current()) { \
        static_assert(detail::is_float<traced_t<X>>, #NAME " needs a floating-point value");      \
        return detail::intrinsic<traced_t<X>>(ir::Intrinsic::OP, loc, x);                          \
    }
EMBER_FLOAT_UNARY(sqrt, Sqrt, "Square root, correctly rounded.")
EMBER_FLOAT_UNARY(floor, Floor, "Rounds toward negative infinity.")
EMBER_FLOAT_UNARY(ceil, Ceil, "Rounds toward positive infinity.")
EMBER_FLOAT_UNARY(trunc, Trunc, "Rounds toward zero.")
EMBER_FLOAT_UNARY(round, Round, "Rounds to nearest, halfway cases away from zero (C's round).")
// The math library: ember's own implementations, the same bits on every target; the error
// bound of each function is in docs/math.md.
EMBER_FLOAT_UNARY(rsqrt, Rsqrt, "1 / sqrt(x).")
EMBER_FLOAT_UNARY(cbrt, Cbrt, "Cube root.")
EMBER_FLOAT_UNARY(exp, Exp, "e^x.")
EMBER_FLOAT_UNARY(exp2, Exp2, "2^x.")
EMBER_FLOAT_UNARY(expm1, Expm1, "e^x - 1, accurate near 0.")
EMBER_FLOAT_UNARY(log, Log, "Natural logarithm.")
EMBER_FLOAT_UNARY(log2, Log2, "Base-2 logarithm.")
EMBER_FLOAT_UNARY(log10, Log10, "Base-10 logarithm.")
EMBER_FLOAT_UNARY(log1p, Log1p, "log(1 + x), accurate near 0.")
EMBER_FLOAT_UNARY(sin, Sin, "Sine (radians).")
EMBER_FLOAT_UNARY(cos, Cos, "Cosine (radians).")
EMBER_FLOAT_UNARY(tan, Tan, "Tangent (radians).")
EMBER_FLOAT_UNARY(asin, Asin, "Arc sine, in [-pi/2, pi/2].")
EMBER_FLOAT_UNARY(acos, Acos, "Arc cosine, in [0, pi].")
EMBER_FLOAT_UNARY(atan, Atan, "Arc tangent, in [-pi/2, pi/2].")
EMBER_FLOAT_UNARY(sinh, Sinh, "Hyperbolic sine.")
EMBER_FLOAT_UNARY(cosh, Cosh, "Hyperbolic cosine.")
EMBER_FLOAT_UNARY(tanh, Tanh, "Hyperbolic tangent.")
EMBER_FLOAT_UNARY(erf, Erf, "Error function.")
/// |x| (C's fabs; the same as abs for floats).
template <Traced X> auto fabs(const X &x, std::source_location loc = std::source_location::current()) {
    static_assert(detail::is_float<traced_t<X>>, "fabs needs a floating-point value");
    return detail::intrinsic<traced_t<X>>(ir::Intrinsic::Abs, loc, x);
}

/// Opt-in approximations: the hardware's fast instructions where the target has them (on NVIDIA
/// GPUs CUDA's __expf, __logf, __sinf, ... for f32), the accurate function elsewhere. Their error
/// bounds are in docs/math.md; sin and cos lose accuracy quickly outside [-pi, pi].
namespace fast {
EMBER_FLOAT_UNARY(exp, FastExp, "Approximate e^x.")
EMBER_FLOAT_UNARY(exp2, FastExp2, "Approximate 2^x.")
EMBER_FLOAT_UNARY(log, FastLog, "Approximate natural logarithm.")
EMBER_FLOAT_UNARY(log2, FastLog2, "Approximate base-2 logarithm.")
EMBER_FLOAT_UNARY(sin, FastSin, "Approximate sine.")
EMBER_FLOAT_UNARY(cos, FastCos, "Approximate cosine.")
EMBER_FLOAT_UNARY(tanh, FastTanh, "Approximate hyperbolic tangent.")
EMBER_FLOAT_UNARY(rsqrt, FastRsqrt, "Approximate 1 / sqrt(x).")
EMBER_FLOAT_UNARY(sqrt, FastSqrt, "Approximate square root.")
} // namespace fast
#undef EMBER_FLOAT_UNARY

#define EMBER_FLOAT_PREDICATE(NAME, OP)                                                            \
    template <Traced X> Bool NAME(const X &x, std::source_location loc = std::source_location::current()) { \
        using T = traced_t<X>;                                                                     \
        static_assert(detail::is_float<T>, #NAME " needs a floating-point value");                \
        Value<T> v = detail::to_value<T>(x, loc);                                                  \
        return Bool(ir::Call::make(ir::Intrinsic::OP, {v.expr()}), v.trace());                     \
    }
EMBER_FLOAT_PREDICATE(isnan, IsNan)
EMBER_FLOAT_PREDICATE(isinf, IsInf)
EMBER_FLOAT_PREDICATE(isfinite, IsFinite)
#undef EMBER_FLOAT_PREDICATE

/// a * b + c with one rounding.
template <class A, class B, class C>
    requires(Operand<A> && Operand<B> && Operand<C> && (Traced<A> || Traced<B> || Traced<C>))
auto fma(const A &a, const B &b, const C &c, std::source_location loc = std::source_location::current()) {
    using T = detail::first_traced_t<A, B, C>;
    static_assert(detail::is_float<T>, "fma needs floating-point values");
    return detail::intrinsic<T>(ir::Intrinsic::Fma, loc, a, b, c);
}

/// The magnitude of `a` with the sign of `b`.
template <class A, class B>
    requires OperandPair<A, B>
auto copysign(const A &a, const B &b, std::source_location loc = std::source_location::current()) {
    using T = detail::common_t<A, B>;
    static_assert(detail::is_float<T>, "copysign needs floating-point values");
    return detail::intrinsic<T>(ir::Intrinsic::Copysign, loc, a, b);
}

#define EMBER_FLOAT_BINARY(NAME, OP, WHAT)                                                         \
    /** WHAT */                                                                                    \
    template <class A, class B>                                                                    \
        requires OperandPair<A, B>                                                                 \
    auto NAME(const A &a, const B &b, std::source_location loc = std::source_location::current()) { \
        using T = detail::common_t<A, B>;                                                          \
        static_assert(detail::is_float<T>, #NAME " needs floating-point values");                 \
        return detail::intrinsic<T>(ir::Intrinsic::OP, loc, a, b);                                 \
    }
EMBER_FLOAT_BINARY(pow, Pow, "a^b (C's pow, with its special cases).")
EMBER_FLOAT_BINARY(atan2, Atan2, "The angle of the point (b, a), in [-pi, pi].")
EMBER_FLOAT_BINARY(fmin, Fmin, "The smaller of a and b; a NaN operand gives the other one.")
EMBER_FLOAT_BINARY(fmax, Fmax, "The larger of a and b; a NaN operand gives the other one.")
#undef EMBER_FLOAT_BINARY

/// min(max(x, lo), hi).
template <class X, class L, class H>
    requires(Operand<X> && Operand<L> && Operand<H> && (Traced<X> || Traced<L> || Traced<H>))
auto clamp(const X &x, const L &lo, const H &hi, std::source_location loc = std::source_location::current()) {
    using T = detail::first_traced_t<X, L, H>;
    static_assert(detail::is_number<T>, "clamp needs numbers");
    Value<T> v = detail::to_value<T>(x, loc), l = detail::to_value<T>(lo, loc),
             h = detail::to_value<T>(hi, loc);
    return min(max(v, l), h);
}

// ---------------------------------------------------------------------------------------------
// Atomics: `atomic_add(p[i], v)` updates p[i] indivisibly and returns its old value (relaxed
// ordering, as CUDA's atomicAdd; see [Note] IR semantics: Atomic).

/// The threads an atomic is indivisible for (CUDA's atomicAdd_block / atomicAdd /
/// atomicAdd_system): `Block` is cheaper where only the block's threads update the element (e.g.
/// shared memory), `System` is needed where the host or other devices update it too.
enum class MemoryScope : uint8_t { Block, Device, System };
static_assert(static_cast<int>(MemoryScope::Block) == static_cast<int>(ir::FenceScope::Block) &&
                  static_cast<int>(MemoryScope::System) == static_cast<int>(ir::FenceScope::System),
              "MemoryScope mirrors ir::FenceScope");

namespace detail {
template <class T> constexpr bool atomic_int = std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                               (sizeof(T) == 4 || sizeof(T) == 8);
template <class T> constexpr bool atomic_float = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <Scalar T>
Value<T> atomic(ir::AtomicOp op, const ElementRef<T> &e, const At<T> &value, const At<T> *compare,
                MemoryScope scope) {
    Builder &b = require_builder("an atomic", value.loc);
    uint32_t trace = merge_trace(e.trace(), value.value.trace());
    if (compare) trace = merge_trace(trace, compare->value.trace());
    check_trace(trace, value.loc);
    ir::Expr a = ir::Atomic::make(op, e.ptr_expr(), e.index_expr(), value.value.expr(),
                                  compare ? compare->value.expr() : ir::Expr(),
                                  static_cast<ir::FenceScope>(scope));
    return Value<T>(b.bind(a), b.id());
}
} // namespace detail

#define EMBER_ATOMIC(NAME, OP, REQ, WHAT)                                                          \
    template <Scalar T>                                                                            \
    Value<T> NAME(const ElementRef<T> &element, std::type_identity_t<detail::At<T>> value,         \
                  MemoryScope scope = MemoryScope::Device) {                                       \
        static_assert(REQ, #NAME " works on " WHAT);                                               \
        return detail::atomic<T>(ir::AtomicOp::OP, element, value, nullptr, scope);                \
    }
EMBER_ATOMIC(atomic_add, Add, detail::atomic_int<T> || detail::atomic_float<T>,
             "32- and 64-bit integers and Float32/Float64")
EMBER_ATOMIC(atomic_sub, Sub, detail::atomic_int<T>, "32- and 64-bit integers")
EMBER_ATOMIC(atomic_min, Min, detail::atomic_int<T>, "32- and 64-bit integers")
EMBER_ATOMIC(atomic_max, Max, detail::atomic_int<T>, "32- and 64-bit integers")
EMBER_ATOMIC(atomic_exchange, Exchange, detail::atomic_int<T>, "32- and 64-bit integers")
EMBER_ATOMIC(atomic_and, And, detail::atomic_int<T>, "32- and 64-bit integers")
EMBER_ATOMIC(atomic_or, Or, detail::atomic_int<T>, "32- and 64-bit integers")
EMBER_ATOMIC(atomic_xor, Xor, detail::atomic_int<T>, "32- and 64-bit integers")
#undef EMBER_ATOMIC

/// Writes `value` to the element where it equals `compare`; returns the old element either way.
template <Scalar T>
Value<T> atomic_cas(const ElementRef<T> &element, std::type_identity_t<detail::At<T>> compare,
                    std::type_identity_t<detail::At<T>> value, MemoryScope scope = MemoryScope::Device) {
    static_assert(detail::atomic_int<T>, "atomic_cas works on 32- and 64-bit integers");
    return detail::atomic<T>(ir::AtomicOp::Cas, element, value, &compare, scope);
}

// ---------------------------------------------------------------------------------------------
// Warp operations ([Note] IR semantics): every lane of the warp must execute them together.

/// Lanes per warp on the targets ember has today (NVIDIA GPUs, and the CPU device's emulation).
inline constexpr int64_t warp_size = 32;

/// The thread's lane in its warp: its linear index in the block modulo warp_size.
inline Int lane_id() {
    return ((thread_idx.z * block_dim.y + thread_idx.y) * block_dim.x + thread_idx.x) % warp_size;
}

namespace detail {
template <Operand L> Int32 lane_operand(const L &l, const std::source_location &loc) {
    if constexpr (Traced<L>) {
        static_assert(is_integer<traced_t<L>>, "a lane, delta or mask must be an integer");
        return cast<int32_t>(l, loc);
    } else {
        static_assert(std::is_integral_v<L> && !std::is_same_v<L, bool>, "a lane, delta or mask must be an integer");
        return to_value<int32_t>(static_cast<int32_t>(l), loc);
    }
}

template <Traced X, Operand L>
Value<traced_t<X>> shuffle(ir::WarpOp op, const X &x, const L &lane, const std::source_location &loc) {
    using T = traced_t<X>;
    static_assert((std::is_integral_v<T> || std::is_floating_point_v<T>) && !std::is_same_v<T, bool> &&
                      (sizeof(T) == 4 || sizeof(T) == 8),
                  "warp shuffles work on 32- and 64-bit integers and floats");
    Value<T> v = to_value<T>(x, loc);
    Int32 l = lane_operand(lane, loc);
    Builder &b = require_builder("a warp shuffle", loc);
    uint32_t trace = merge_trace(v.trace(), l.trace());
    check_trace(trace, loc);
    return Value<T>(b.bind(ir::Warp::make(op, v.expr(), l.expr())), b.id());
}

template <class R, Operand C> R vote(ir::WarpOp op, const C &cond, const std::source_location &loc) {
    Bool c = to_condition(cond, loc);
    Builder &b = require_builder("a warp vote", loc);
    check_trace(c.trace(), loc);
    return R(b.bind(ir::Warp::make(op, c.expr())), b.id());
}
} // namespace detail

/// The value of `x` in lane `lane % warp_size`.
template <Traced X, Operand L>
auto shuffle_idx(const X &x, const L &lane, std::source_location loc = std::source_location::current()) {
    return detail::shuffle(ir::WarpOp::ShuffleIdx, x, lane, loc);
}
/// The value of `x` in lane `lane_id() - delta` (this lane's own value below lane 0).
template <Traced X, Operand L>
auto shuffle_up(const X &x, const L &delta, std::source_location loc = std::source_location::current()) {
    return detail::shuffle(ir::WarpOp::ShuffleUp, x, delta, loc);
}
/// The value of `x` in lane `lane_id() + delta` (this lane's own value past the last lane).
template <Traced X, Operand L>
auto shuffle_down(const X &x, const L &delta, std::source_location loc = std::source_location::current()) {
    return detail::shuffle(ir::WarpOp::ShuffleDown, x, delta, loc);
}
/// The value of `x` in lane `lane_id() ^ mask`.
template <Traced X, Operand L>
auto shuffle_xor(const X &x, const L &mask, std::source_location loc = std::source_location::current()) {
    return detail::shuffle(ir::WarpOp::ShuffleXor, x, mask, loc);
}
/// Bit i set where lane i's condition holds.
template <Operand C> UInt32 ballot(const C &cond, std::source_location loc = std::source_location::current()) {
    return detail::vote<UInt32>(ir::WarpOp::Ballot, cond, loc);
}
/// The ballot of the thread's hardware wave: bit i set where lane i of the wave's condition holds.
/// On a wave of 64 (AMD CDNA: gfx90a, gfx942) both warps of the wave; wherever the wave is the
/// warp (NVIDIA, AMD RDNA, the CPU device), ballot's 32 bits and zeros above. Every lane of the
/// wave must execute it together.
template <Operand C> UInt64 wave_ballot(const C &cond, std::source_location loc = std::source_location::current()) {
    return detail::vote<UInt64>(ir::WarpOp::WaveBallot, cond, loc);
}
/// Whether the condition holds in any lane of the warp.
template <Operand C> Bool warp_any(const C &cond, std::source_location loc = std::source_location::current()) {
    return detail::vote<Bool>(ir::WarpOp::Any, cond, loc);
}
/// Whether the condition holds in every lane of the warp.
template <Operand C> Bool warp_all(const C &cond, std::source_location loc = std::source_location::current()) {
    return detail::vote<Bool>(ir::WarpOp::All, cond, loc);
}

namespace detail {
template <Traced X, class Op> auto warp_reduce(const X &x, Op op, const std::source_location &loc) {
    using T = traced_t<X>;
    Builder &b = require_builder("a warp reduction", loc);
    std::optional<Value<T>> v;
    v.emplace(to_value<T>(x, loc));
    // A butterfly: after log2(32) steps every lane holds the whole warp's result. Each partial
    // result is bound to a let, so that the IR stays linear.
    for (int32_t offset = static_cast<int32_t>(warp_size) / 2; offset > 0; offset /= 2) {
        Value<T> other = shuffle(ir::WarpOp::ShuffleXor, *v, offset, loc);
        Value<T> next = op(*v, other);
        v.emplace(b.bind(next.expr()), next.trace());
    }
    return *v;
}
} // namespace detail

/// The sum of `x` over the warp, in every lane.
template <Traced X> auto warp_sum(const X &x, std::source_location loc = std::source_location::current()) {
    return detail::warp_reduce(x, [](const auto &a, const auto &b) { return a + b; }, loc);
}
/// The minimum of `x` over the warp, in every lane.
template <Traced X> auto warp_min(const X &x, std::source_location loc = std::source_location::current()) {
    return detail::warp_reduce(x, [](const auto &a, const auto &b) { return min(a, b); }, loc);
}
/// The maximum of `x` over the warp, in every lane.
template <Traced X> auto warp_max(const X &x, std::source_location loc = std::source_location::current()) {
    return detail::warp_reduce(x, [](const auto &a, const auto &b) { return max(a, b); }, loc);
}

/// Ends the kernel (or a void device function) for this thread (the threads that do not reach
/// it go on).
void return_(std::source_location loc = std::source_location::current());

namespace detail {
void return_value(ir::Expr value, uint32_t trace, const std::source_location &loc);
ir::Type current_return_type(const std::source_location &loc);
/// A C++ number as a constant of the IR type `t` (known only while tracing), by the rules of
/// host_constant.
template <HostScalar U> ir::Expr host_constant_for(ir::Type t, U v, const std::source_location &loc) {
    using S = std::remove_cvref_t<U>;
    if (!t.is_scalar() || t.is_void())
        throw DslError("a C++ number cannot be returned as " + t.to_string(), loc);
    if constexpr (std::is_same_v<S, bool>) {
        if (!t.is_bool()) throw DslError("a C++ bool does not convert to " + t.to_string(), loc);
        return ir::BoolImm::make(v);
    } else {
        if (t.is_bool()) throw DslError("a C++ number does not convert to bool; compare it (x != 0)", loc);
        if constexpr (is_float_type<S>) {
            if (!t.is_float())
                throw DslError("a C++ floating-point value does not convert to " + t.to_string() +
                                   " implicitly; use cast<T>()",
                               loc);
            return host_constant_float(t, static_cast<double>(v), loc);
        } else {
            if (t.is_float()) return host_constant_float(t, static_cast<double>(v), loc);
            return host_constant_int(t, static_cast<int64_t>(v), std::is_unsigned_v<S>, static_cast<uint64_t>(v), loc);
        }
    }
}
} // namespace detail

/// Returns `value` from the device function being traced (of exactly its return type; a C++
/// number is converted to it).
template <Operand X> void return_(const X &value, std::source_location loc = std::source_location::current()) {
    if constexpr (Traced<X>) {
        Value<traced_t<X>> v = detail::to_value<traced_t<X>>(value, loc);
        detail::return_value(v.expr(), v.trace(), loc);
    } else {
        detail::return_value(detail::host_constant_for(detail::current_return_type(loc), value, loc), 0, loc);
    }
}

} // namespace ember

#endif // EMBER_DSL_BUILTINS_H
