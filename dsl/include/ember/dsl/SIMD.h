/// \file
/// `SIMD<T, N>`: N lanes of a scalar type T (N = 2, 4, 8 or 16) as one traced value, like Mojo's
/// `SIMD[dtype, width]`: element-wise operators and functions, lane reads, reductions, and vector
/// loads and stores through pointers.
///
///     auto v = in.load<4>(i);                        // elements i..i+3 in one 16-byte load
///     auto w = v * 2.0f + SIMD<float, 4>(1, 2, 3, 4);
///     out.store(i, select(w > 0.0f, w, -w));         // one 16-byte store
///     sums[j] = reduce_add(w);
///
/// [Note] SIMD typing rules
/// ========================
/// * An operator or function of SIMD operands works lane by lane, with the rules of its scalar
///   version ([Note] IR semantics). Its SIMD operands have one element type and lane count:
///   `SIMD<float, 4> + SIMD<int32_t, 4>` does not compile; convert with
///   `cast<SIMD<float, 4>>(x)` (or `cast<float>(x)`, which keeps the lane count).
/// * A scalar operand is broadcast to every lane: a traced scalar must have the element type
///   (`Float32` with `SIMD<float, N>`), a C++ number becomes a constant of the element type by the
///   [Note] DSL typing rules.
/// * Comparisons give masks (`SIMD<bool, N>`); `select(mask, a, b)` picks lane by lane,
///   `select(Bool, a, b)` picks a whole vector; `any(mask)` and `all(mask)` fold a mask.
/// * `v[k]` reads lane k, a C++ integer in [0, N) (checked while tracing).
/// * A SIMD value never converts to a scalar or to bool: read a lane or reduce it.
/// * `p.load<N>(i)` and `p.store(i, v)` access elements i ... i+N-1 as one vector access; element
///   i must lie at an address aligned to min(N * sizeof(T), 16) bytes, or the launch fails
///   ([Note] IR semantics: Vector memory).
/// * `Var<SIMD<T, N>>` is a mutable vector; device functions take and return SIMD values; kernel
///   parameters are scalars and pointers (load vectors through a pointer).
///
/// [Note] Scalars and SIMD in the DSL
/// ==================================
/// Mojo defines `Scalar[dtype]` as `SIMD[dtype, 1]`: one type, one set of operators. ember has
/// one home for the meaning and two C++ faces for it.
/// * One home: the IR. `Binary`, `Compare`, `Unary`, `Select`, `Cast` and `Call` take scalar and
///   vector operands alike ([Note] IR semantics: Vectors, "each lane with the scalar rules"), so
///   the verifier, the printer, the interpreter of ember-difftest and the code generator have
///   one rule per operation, and the DSL's operand conversion (`detail::HostOperand`, [Note] DSL
///   typing rules), trace merging and `DslError` locations are shared: a SIMD operator is a
///   scalar operator's IR node over `MakeVector` operands.
/// * Two faces: `Value<T>` and `SIMD<T, N>` stay separate C++ types, because what C++ lets a
///   value do differs between them, and `SIMD<T, 1>` would need a special case at each point:
///   - a traced scalar is a condition (`if_`, `while_`, `select(Bool, a, b)` picking whole
///     vectors) and an index (`p[i]`, `p.load<N>(i)`); a vector is neither, so a `SIMD<bool, 1>`
///     would have to convert to a condition while `SIMD<bool, 4>` must not;
///   - a scalar is also `Var<T>`, `ElementRef<T>` (`p[i] += x`), a struct field, a kernel
///     parameter and an atomic's operand, each a class over `Value<T>`; kernel parameters are
///     never vectors ([Note] SIMD typing rules);
///   - a C++ number meets a scalar as a constant of its type and a vector as a broadcast;
///   - the lane counts are 2, 4, 8 and 16, the IR's vector widths, which map to the vector
///     loads and stores of every target; a one-lane vector has no such access.
///   Folding `Value<T>` into `SIMD<T, 1>` was weighed against that list: it would move these
///   differences into `if constexpr (N == 1)` branches of one template rather than remove them,
///   for a saving of about 40 lines (the second operator table below, whose bodies are already
///   one line each), and it would change the messages users see ("needs numbers" for a scalar,
///   "needs number lanes" for a vector). The two operator tables are kept side by side, in the
///   same order and with the same requirements, and compile_fail tests pin both faces' messages.
#ifndef EMBER_DSL_SIMD_H
#define EMBER_DSL_SIMD_H

#include "ember/dsl/Builtins.h"
#include "ember/dsl/Function.h"
#include "ember/dsl/Kernel.h"
#include "ember/dsl/Value.h"

#include <concepts>
#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember {

// ---------------------------------------------------------------------------------------------
// What counts as a SIMD operand.

namespace detail {
template <class X> struct simd_traits {
    static constexpr bool is_simd = false;
    using type = void;
};
template <Scalar T, int N> struct simd_traits<SIMD<T, N>> {
    static constexpr bool is_simd = true;
    using type = SIMD<T, N>;
};
template <Scalar T, int N> struct simd_traits<Var<SIMD<T, N>>> : simd_traits<SIMD<T, N>> {};
} // namespace detail

/// A traced vector: a `SIMD<T, N>` or a `Var<SIMD<T, N>>`.
template <class X>
concept SimdValue = detail::simd_traits<std::remove_cvref_t<X>>::is_simd;
/// What a SIMD operator or function accepts: a traced vector, or a scalar to broadcast.
template <class X>
concept SimdOperand = SimdValue<X> || Operand<X>;
/// Operands of which at least one is a vector: a SIMD operator or function applies.
template <class... X>
concept SimdArgs = (SimdOperand<X> && ...) && (SimdValue<X> || ...);

namespace detail {
/// The `SIMD<T, N>` of a traced vector.
template <SimdValue X> using simd_type = typename simd_traits<std::remove_cvref_t<X>>::type;

/// The `SIMD<T, N>` of the first traced vector among X...
template <class... X> struct first_simd {
    using type = void;
};
template <class X, class... Rest> struct first_simd<X, Rest...> {
    using type = typename std::conditional_t<SimdValue<X>, simd_traits<std::remove_cvref_t<X>>,
                                             first_simd<Rest...>>::type;
};
template <class... X> using first_simd_t = typename first_simd<X...>::type;

template <class A, class B> struct mismatched_simd_types {
    static_assert(always_false<A>,
                  "SIMD operands of different element types or lane counts (see A and B in this "
                  "instantiation); convert one with cast<SIMD<T, N>>(x)");
};

/// One lane of the lane-by-lane constructor: converted where the user wrote it.
template <class T, size_t> using LaneArg = At<T>;

/// Storage and constructors of SIMD<T, N>; the lane-by-lane constructor takes one `At<T>` per
/// lane, so that each argument converts (and is checked) at the user's line.
template <Scalar T, int N, class Lanes = std::make_index_sequence<static_cast<size_t>(N)>> class SimdBase;
template <Scalar T, int N, size_t... I> class SimdBase<T, N, std::index_sequence<I...>> {
public:
    /// Lane i is the i-th argument (a C++ number or a traced scalar of type T).
    SimdBase(LaneArg<T, I>... lanes) // NOLINT: implicit, so that {a, b, c, d} works
    {
        std::vector<ir::Expr> args;
        uint32_t trace = 0;
        ((args.push_back(lanes.value.expr()), trace = merge_trace(trace, lanes.value.trace())), ...);
        expr_ = ir::MakeVector::make(ir::Type::vector(scalar_info<T>::ir_type, N), std::move(args));
        trace_ = trace;
    }
    /// Wraps an IR expression of the vector type (for the DSL's own use). A template, so that a
    /// literal 0 (a null pointer constant) never picks it.
    template <std::same_as<ir::Expr> E>
    SimdBase(E e, uint32_t trace) : expr_(detail::keep_shallow(std::move(e), trace)), trace_(trace) {
        EMBER_ASSERT(expr_.type() == ir::Type::vector(scalar_info<T>::ir_type, N), "SIMD<T, N> of the wrong IR type");
    }

    const ir::Expr &expr() const { return expr_; }
    uint32_t trace() const { return trace_; }

protected:
    SimdBase(const SimdBase &) = default;
    ir::Expr expr_;
    uint32_t trace_ = 0;
};

/// A lane number for `v[k]`: a C++ integer, with the user's line for the range check.
struct LaneIndex {
    int64_t lane;
    std::source_location loc;
    template <class I>
        requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
    LaneIndex(I k, std::source_location l = std::source_location::current()) // NOLINT: implicit
        : lane(std::is_unsigned_v<I> && static_cast<uint64_t>(k) > uint64_t(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(k)),
          loc(l) {}
};

/// Throws DslError unless 0 <= k.lane < lanes.
void check_lane(const LaneIndex &k, int lanes, const char *type_name);
} // namespace detail

// ---------------------------------------------------------------------------------------------
// SIMD<T, N>.

/// N lanes of T as one immutable traced value (see [Note] SIMD typing rules). Copyable, not
/// assignable (use `Var<SIMD<T, N>>`).
template <Scalar T, int N> class SIMD : public detail::SimdBase<T, N> {
    static_assert(ir::Type::valid_lanes(static_cast<unsigned>(N)), "SIMD<T, N> has N = 2, 4, 8 or 16 lanes");
    static_assert(!std::is_same_v<T, void>, "SIMD<T, N> holds scalars");
    using Base = detail::SimdBase<T, N>;

public:
    using value_type = T;
    static constexpr int size = N;

    using Base::Base;
    /// Every lane `x` (a C++ number or a traced scalar of type T).
    template <Operand X>
    SIMD(const X &x, std::source_location loc = std::source_location::current()) // NOLINT: implicit
        : SIMD(splat(detail::to_value<T>(x, loc))) {}
    /// The current value of a `Var<SIMD<T, N>>`.
    template <class V>
        requires std::same_as<V, Var<SIMD>>
    SIMD(const V &v) : SIMD(v.value()) {} // NOLINT: implicit
    SIMD(const SIMD &) = default;
    SIMD &operator=(const SIMD &) = delete; // a traced value is immutable: use Var<SIMD<T, N>>

    /// Traced values cannot drive C++ control flow; a vector has no single truth value either.
    explicit operator bool() const = delete;

    /// Lane k (a C++ integer in [0, N)).
    Value<T> operator[](detail::LaneIndex k) const {
        detail::check_lane(k, N, scalar_name<T>());
        return Value<T>(ir::Extract::make(this->expr_, static_cast<unsigned>(k.lane)), this->trace_);
    }

    SIMD value() const { return *this; }
    static constexpr ir::Type ir_type() { return ir::Type::vector(detail::scalar_info<T>::ir_type, N); }

private:
    static SIMD splat(const Value<T> &v) { return SIMD(ir::MakeVector::broadcast(v.expr(), N), v.trace()); }
};

// ---------------------------------------------------------------------------------------------
// Var<SIMD<T, N>>.

/// A mutable vector variable. Reading it takes its current value (bound to a `let` where it is
/// read, [Note] Tracing).
template <Scalar T, int N> class Var<SIMD<T, N>> {
public:
    using value_type = SIMD<T, N>;

    /// Declares the variable, every lane zero.
    explicit Var(std::source_location loc = std::source_location::current())
        : var_(make_var()) {
        declare(SIMD<T, N>(T{}, loc).expr(), loc);
    }
    /// Declares the variable with an initial value: a vector, or a scalar for every lane.
    template <SimdOperand X>
        requires(!std::is_same_v<std::remove_cvref_t<X>, Var>)
    Var(const X &init, std::source_location loc = std::source_location::current()) // NOLINT
        : var_(make_var()) {
        declare(convert(init, loc).expr(), loc);
    }
    /// A new variable holding `other`'s current value (C++ value semantics).
    Var(const Var &other, std::source_location loc = std::source_location::current()) : var_(make_var()) {
        declare(other.value().expr(), loc);
    }

    /// Assigns a vector, or a scalar to every lane.
    template <SimdOperand X>
        requires(!std::is_same_v<std::remove_cvref_t<X>, Var>)
    Var &operator=(const X &x) {
        auto loc = std::source_location::current();
        assign(convert(x, loc).expr(), loc);
        return *this;
    }
    Var &operator=(const Var &other) {
        assign(other.value().expr(), std::source_location::current());
        return *this;
    }

    /// The current value.
    SIMD<T, N> value() const {
        detail::Builder &b = detail::require_builder("a read of a Var", std::source_location::current());
        return SIMD<T, N>(b.bind(ir::VarRef::make(var_)), detail::merge_trace(trace_, b.id()));
    }
    /// Lane k of the current value.
    Value<T> operator[](detail::LaneIndex k) const { return value()[k]; }

    explicit operator bool() const = delete;
    const ir::VariableRef &variable() const { return var_; }

private:
    static ir::VariableRef make_var() { return ir::Variable::make("", SIMD<T, N>::ir_type(), ir::VarKind::Mutable); }
    template <class X> static SIMD<T, N> convert(const X &x, const std::source_location &loc);
    void declare(ir::Expr init, const std::source_location &loc) {
        detail::Builder &b = detail::require_builder("Var", loc);
        trace_ = b.id();
        b.emit(ir::Declare::make(var_, std::move(init)), loc);
    }
    void assign(ir::Expr e, const std::source_location &loc) {
        detail::check_trace(trace_, loc);
        detail::require_builder("assignment to a Var", loc).emit(ir::Assign::make(var_, std::move(e)), loc);
    }

    ir::VariableRef var_;
    uint32_t trace_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Conversions of operands.

namespace detail {
/// An operand as a `V` (a SIMD type) where the user wrote it: a vector of exactly V's type,
/// checked against the current trace, or a scalar broadcast to every lane.
template <class V, SimdOperand X> V to_simd(const X &x, const std::source_location &loc) {
    using T = typename V::value_type;
    if constexpr (SimdValue<X>) {
        if constexpr (!std::is_same_v<simd_type<X>, V>) {
            (void)mismatched_simd_types<V, simd_type<X>>{};
            return V(ir::Expr(), 0); // unreachable: the build has failed
        } else {
            V v = x.value();
            check_trace(v.trace(), loc);
            return v;
        }
    } else {
        Value<T> s = to_value<T>(x, loc);
        return V(ir::MakeVector::broadcast(s.expr(), static_cast<unsigned>(V::size)), s.trace());
    }
}

/// A traced operand (a vector, or a traced scalar to broadcast) as a `V` for an operator, not
/// checked against the current trace (operators cannot learn the user's line; see binary() in
/// Value.h). C++ numbers reach operators as HostOperand, converted at the user's line.
template <class V, SimdOperand X>
    requires(!HostScalar<X>)
V simd_operand(const X &x) {
    using T = typename V::value_type;
    if constexpr (SimdValue<X>) {
        if constexpr (!std::is_same_v<simd_type<X>, V>) {
            (void)mismatched_simd_types<V, simd_type<X>>{};
            return V(ir::Expr(), 0); // unreachable: the build has failed
        } else {
            return x.value();
        }
    } else {
        Value<T> s = operand_value<T>(x);
        return V(ir::MakeVector::broadcast(s.expr(), static_cast<unsigned>(V::size)), s.trace());
    }
}

template <class L, class R> auto simd_binary(ir::BinaryOp op, const L &l, const R &r) {
    using V = first_simd_t<L, R>;
    V a = simd_operand<V>(l), b = simd_operand<V>(r);
    return V(ir::Binary::make(op, a.expr(), b.expr()), merge_trace(a.trace(), b.trace()));
}

template <class L, class R> auto simd_compare(ir::CompareOp op, const L &l, const R &r) {
    using V = first_simd_t<L, R>;
    V a = simd_operand<V>(l), b = simd_operand<V>(r);
    return SIMD<bool, V::size>(ir::Compare::make(op, a.expr(), b.expr()), merge_trace(a.trace(), b.trace()));
}

/// A built-in function of vectors of type V, lane by lane, giving a vector of R lanes.
template <class R, class V, class... X>
R simd_intrinsic(ir::Intrinsic f, const std::source_location &loc, const X &...x) {
    std::vector<ir::Expr> args;
    uint32_t trace = 0;
    (
        [&] {
            V v = to_simd<V>(x, loc);
            args.push_back(v.expr());
            trace = merge_trace(trace, v.trace());
        }(),
        ...);
    return R(ir::Call::make(f, std::move(args)), trace);
}
} // namespace detail

template <Scalar T, int N>
template <class X>
SIMD<T, N> Var<SIMD<T, N>>::convert(const X &x, const std::source_location &loc) {
    return detail::to_simd<SIMD<T, N>>(x, loc);
}

// ---------------------------------------------------------------------------------------------
// Operators (lane by lane).

// Each operator has three overloads, as the scalar ones (Value.h): vectors and traced scalars,
// and a vector with a C++ number on either side, converted at the user's line
// (detail::HostOperand) so that a number that does not fit the lane type is reported there.
template <class L, class R>
concept SimdTracedArgs = SimdArgs<L, R> && !HostScalar<L> && !HostScalar<R>;
#define EMBER_SIMD_BINARY_OVERLOADS(SYM, CHECK, BODY)                                              \
    template <class L, class R>                                                                    \
        requires SimdTracedArgs<L, R>                                                              \
    auto operator SYM(const L &l, const R &r) {                                                    \
        using T = typename detail::first_simd_t<L, R>::value_type;                                 \
        CHECK;                                                                                     \
        return BODY(l, r);                                                                         \
    }                                                                                              \
    template <SimdValue L>                                                                         \
    auto operator SYM(const L &l, detail::HostOperand<typename detail::simd_type<L>::value_type> r) { \
        using T = typename detail::simd_type<L>::value_type;                                       \
        CHECK;                                                                                     \
        return BODY(l, r.value);                                                                   \
    }                                                                                              \
    template <SimdValue R>                                                                         \
    auto operator SYM(detail::HostOperand<typename detail::simd_type<R>::value_type> l, const R &r) { \
        using T = typename detail::simd_type<R>::value_type;                                       \
        CHECK;                                                                                     \
        return BODY(l.value, r);                                                                   \
    }

#define EMBER_SIMD_ARITH_OP(SYM, OP, REQ, WHAT)                                                    \
    EMBER_SIMD_BINARY_OVERLOADS(SYM, static_assert(REQ, "operator " #SYM " needs " WHAT),          \
                                [](const auto &a, const auto &b) {                                 \
                                    return detail::simd_binary(ir::BinaryOp::OP, a, b);            \
                                })
EMBER_SIMD_ARITH_OP(+, Add, detail::is_number<T>, "number lanes")
EMBER_SIMD_ARITH_OP(-, Sub, detail::is_number<T>, "number lanes")
EMBER_SIMD_ARITH_OP(*, Mul, detail::is_number<T>, "number lanes")
EMBER_SIMD_ARITH_OP(/, Div, detail::is_number<T>, "number lanes")
EMBER_SIMD_ARITH_OP(%, Mod, detail::is_number<T>, "number lanes")
EMBER_SIMD_ARITH_OP(&, And, detail::is_integer<T>, "integer lanes (use && for masks)")
EMBER_SIMD_ARITH_OP(|, Or, detail::is_integer<T>, "integer lanes (use || for masks)")
EMBER_SIMD_ARITH_OP(^, Xor, (detail::is_integer<T> || std::is_same_v<T, bool>), "integer or bool lanes")
EMBER_SIMD_ARITH_OP(<<, Shl, detail::is_integer<T>, "integer lanes")
EMBER_SIMD_ARITH_OP(>>, Shr, detail::is_integer<T>, "integer lanes")
EMBER_SIMD_ARITH_OP(&&, And, (std::is_same_v<T, bool>), "masks (SIMD<bool, N>; compare numbers first)")
EMBER_SIMD_ARITH_OP(||, Or, (std::is_same_v<T, bool>), "masks (SIMD<bool, N>; compare numbers first)")
#undef EMBER_SIMD_ARITH_OP

#define EMBER_SIMD_COMPARE_OP(SYM, OP)                                                             \
    EMBER_SIMD_BINARY_OVERLOADS(SYM, static_assert(!std::is_void_v<T>),                            \
                                [](const auto &a, const auto &b) {                                 \
                                    return detail::simd_compare(ir::CompareOp::OP, a, b);          \
                                })
EMBER_SIMD_COMPARE_OP(==, EQ)
EMBER_SIMD_COMPARE_OP(!=, NE)
EMBER_SIMD_COMPARE_OP(<, LT)
EMBER_SIMD_COMPARE_OP(<=, LE)
EMBER_SIMD_COMPARE_OP(>, GT)
EMBER_SIMD_COMPARE_OP(>=, GE)
#undef EMBER_SIMD_COMPARE_OP
#undef EMBER_SIMD_BINARY_OVERLOADS

template <SimdValue X> auto operator-(const X &x) {
    using V = detail::simd_type<X>;
    static_assert(detail::is_number<typename V::value_type>, "unary - needs number lanes");
    V v = x.value();
    return V(ir::Unary::make(ir::UnaryOp::Neg, v.expr()), v.trace());
}
template <SimdValue X> auto operator!(const X &x) {
    using V = detail::simd_type<X>;
    static_assert(std::is_same_v<typename V::value_type, bool>, "operator ! needs a mask (SIMD<bool, N>)");
    V v = x.value();
    return V(ir::Unary::make(ir::UnaryOp::Not, v.expr()), v.trace());
}
template <SimdValue X> auto operator~(const X &x) {
    using V = detail::simd_type<X>;
    static_assert(detail::is_integer<typename V::value_type>, "operator ~ needs integer lanes");
    V v = x.value();
    return V(ir::Unary::make(ir::UnaryOp::BitNot, v.expr()), v.trace());
}

// Compound assignment on Var<SIMD<T, N>>: `v += x` is `v = v + x`.
#define EMBER_SIMD_COMPOUND_OP(SYM, BIN)                                                           \
    template <Scalar T, int N, SimdOperand X> Var<SIMD<T, N>> &operator SYM(Var<SIMD<T, N>> &v, const X &x) { \
        v = v BIN x;                                                                               \
        return v;                                                                                  \
    }
EMBER_SIMD_COMPOUND_OP(+=, +)
EMBER_SIMD_COMPOUND_OP(-=, -)
EMBER_SIMD_COMPOUND_OP(*=, *)
EMBER_SIMD_COMPOUND_OP(/=, /)
EMBER_SIMD_COMPOUND_OP(%=, %)
EMBER_SIMD_COMPOUND_OP(&=, &)
EMBER_SIMD_COMPOUND_OP(|=, |)
EMBER_SIMD_COMPOUND_OP(^=, ^)
EMBER_SIMD_COMPOUND_OP(<<=, <<)
EMBER_SIMD_COMPOUND_OP(>>=, >>)
#undef EMBER_SIMD_COMPOUND_OP

// ---------------------------------------------------------------------------------------------
// select, cast.

namespace detail {
template <class C, class A, class B> struct select_result {
    // An arm fixes the vector type; else the mask's lane count and the arms' common scalar type.
    using arms = first_simd_t<A, B>;
    using type = std::conditional_t<!std::is_void_v<arms>, arms, void>;
};
template <class C, class A, class B>
    requires(std::is_void_v<first_simd_t<A, B>> && SimdValue<C>)
struct select_result<C, A, B> {
    using scalar = common_t<A, B>;
    static_assert(!std::is_void_v<scalar>,
                  "select(mask, a, b) with two C++ numbers: make one of them traced (Float32(x)) "
                  "or a SIMD value, so that the lane type is known");
    using type = SIMD<scalar, simd_type<C>::size>;
};
} // namespace detail

/// `cond ? a : b` for vectors: a mask (`SIMD<bool, N>`) picks lane by lane, a `Bool` picks a
/// whole vector; scalar arms are broadcast. Both arms are evaluated.
template <class C, class A, class B>
    requires(SimdArgs<C, A, B>)
auto select(const C &cond, const A &a, const B &b, std::source_location loc = std::source_location::current()) {
    using V = typename detail::select_result<C, A, B>::type;
    constexpr int N = V::size;
    ir::Expr c;
    uint32_t trace = 0;
    if constexpr (SimdValue<C>) {
        SIMD<bool, N> m = detail::to_simd<SIMD<bool, N>>(cond, loc);
        c = m.expr();
        trace = m.trace();
    } else {
        Bool m = detail::to_condition(cond, loc);
        c = m.expr();
        trace = m.trace();
    }
    V x = detail::to_simd<V>(a, loc), y = detail::to_simd<V>(b, loc);
    return V(ir::Select::make(c, x.expr(), y.expr()),
             detail::merge_trace(trace, detail::merge_trace(x.trace(), y.trace())));
}

namespace detail {
template <class To> struct cast_lane {
    using type = typename std::conditional_t<Scalar<To>, std::type_identity<To>, traced_traits<To>>::type;
};
template <Scalar U, int M> struct cast_lane<SIMD<U, M>> {
    using type = U;
};
} // namespace detail

/// Converts lane by lane (the rules of [Note] IR semantics): `cast<SIMD<int32_t, 4>>(v)`, or with
/// the lane type alone, `cast<int32_t>(v)` / `cast<Int32>(v)`, keeping the lane count.
template <class To, SimdValue X> auto cast(const X &x, std::source_location loc = std::source_location::current()) {
    using V = detail::simd_type<X>;
    using U = typename detail::cast_lane<To>::type;
    if constexpr (detail::simd_traits<To>::is_simd)
        static_assert(To::size == V::size, "cast<SIMD<U, M>>(v) keeps the lane count: M must be v's N");
    static_assert(detail::castable<typename V::value_type, U>,
                  "an 8-bit float converts to and from half, bfloat16, float and the other 8-bit "
                  "float only: cast through float");
    V v = detail::to_simd<V>(x, loc);
    if constexpr (std::is_same_v<U, typename V::value_type>) return v;
    else return SIMD<U, V::size>(ir::Cast::make(SIMD<U, V::size>::ir_type(), v.expr()), v.trace());
}

// ---------------------------------------------------------------------------------------------
// Built-in functions, lane by lane.

/// The smaller lane by lane (a scalar is broadcast).
template <class L, class R>
    requires SimdArgs<L, R>
auto min(const L &l, const R &r, std::source_location loc = std::source_location::current()) {
    using V = detail::first_simd_t<L, R>;
    static_assert(detail::is_number<typename V::value_type>, "min needs number lanes");
    return detail::simd_binary(ir::BinaryOp::Min, detail::to_simd<V>(l, loc), detail::to_simd<V>(r, loc));
}
/// The larger lane by lane (a scalar is broadcast).
template <class L, class R>
    requires SimdArgs<L, R>
auto max(const L &l, const R &r, std::source_location loc = std::source_location::current()) {
    using V = detail::first_simd_t<L, R>;
    static_assert(detail::is_number<typename V::value_type>, "max needs number lanes");
    return detail::simd_binary(ir::BinaryOp::Max, detail::to_simd<V>(l, loc), detail::to_simd<V>(r, loc));
}
/// min(max(x, lo), hi), lane by lane.
template <class X, class L, class H>
    requires SimdArgs<X, L, H>
auto clamp(const X &x, const L &lo, const H &hi, std::source_location loc = std::source_location::current()) {
    using V = detail::first_simd_t<X, L, H>;
    static_assert(detail::is_number<typename V::value_type>, "clamp needs number lanes");
    V v = detail::to_simd<V>(x, loc), l = detail::to_simd<V>(lo, loc), h = detail::to_simd<V>(hi, loc);
    return min(max(v, l), h);
}

/// |x| lane by lane.
template <SimdValue X> auto abs(const X &x, std::source_location loc = std::source_location::current()) {
    using V = detail::simd_type<X>;
    static_assert(detail::is_number<typename V::value_type>, "abs needs number lanes");
    return detail::simd_intrinsic<V, V>(ir::Intrinsic::Abs, loc, x);
}

#define EMBER_SIMD_INT_UNARY(NAME, OP)                                                             \
    template <SimdValue X> auto NAME(const X &x, std::source_location loc = std::source_location::current()) { \
        using V = detail::simd_type<X>;                                                            \
        static_assert(detail::is_integer<typename V::value_type>, #NAME " needs integer lanes");  \
        return detail::simd_intrinsic<V, V>(ir::Intrinsic::OP, loc, x);                            \
    }
EMBER_SIMD_INT_UNARY(popcount, Popcount)
EMBER_SIMD_INT_UNARY(clz, Clz)
EMBER_SIMD_INT_UNARY(ctz, Ctz)
#undef EMBER_SIMD_INT_UNARY

#define EMBER_SIMD_FLOAT_UNARY(NAME, OP)                                                           \
    template <SimdValue X> auto NAME(const X &x, std::source_location loc = std::source_location::current()) { \
        using V = detail::simd_type<X>;                                                            \
        static_assert(detail::is_float<typename V::value_type>, #NAME " needs floating-point lanes"); \
        return detail::simd_intrinsic<V, V>(ir::Intrinsic::OP, loc, x);                            \
    }
EMBER_SIMD_FLOAT_UNARY(sqrt, Sqrt)
EMBER_SIMD_FLOAT_UNARY(floor, Floor)
EMBER_SIMD_FLOAT_UNARY(ceil, Ceil)
EMBER_SIMD_FLOAT_UNARY(trunc, Trunc)
EMBER_SIMD_FLOAT_UNARY(round, Round)
EMBER_SIMD_FLOAT_UNARY(fabs, Abs)
// The math library, lane by lane (each lane gets the bits of the scalar function).
EMBER_SIMD_FLOAT_UNARY(rsqrt, Rsqrt)
EMBER_SIMD_FLOAT_UNARY(cbrt, Cbrt)
EMBER_SIMD_FLOAT_UNARY(exp, Exp)
EMBER_SIMD_FLOAT_UNARY(exp2, Exp2)
EMBER_SIMD_FLOAT_UNARY(expm1, Expm1)
EMBER_SIMD_FLOAT_UNARY(log, Log)
EMBER_SIMD_FLOAT_UNARY(log2, Log2)
EMBER_SIMD_FLOAT_UNARY(log10, Log10)
EMBER_SIMD_FLOAT_UNARY(log1p, Log1p)
EMBER_SIMD_FLOAT_UNARY(sin, Sin)
EMBER_SIMD_FLOAT_UNARY(cos, Cos)
EMBER_SIMD_FLOAT_UNARY(tan, Tan)
EMBER_SIMD_FLOAT_UNARY(asin, Asin)
EMBER_SIMD_FLOAT_UNARY(acos, Acos)
EMBER_SIMD_FLOAT_UNARY(atan, Atan)
EMBER_SIMD_FLOAT_UNARY(sinh, Sinh)
EMBER_SIMD_FLOAT_UNARY(cosh, Cosh)
EMBER_SIMD_FLOAT_UNARY(tanh, Tanh)
EMBER_SIMD_FLOAT_UNARY(erf, Erf)
namespace fast {
EMBER_SIMD_FLOAT_UNARY(exp, FastExp)
EMBER_SIMD_FLOAT_UNARY(exp2, FastExp2)
EMBER_SIMD_FLOAT_UNARY(log, FastLog)
EMBER_SIMD_FLOAT_UNARY(log2, FastLog2)
EMBER_SIMD_FLOAT_UNARY(sin, FastSin)
EMBER_SIMD_FLOAT_UNARY(cos, FastCos)
EMBER_SIMD_FLOAT_UNARY(tanh, FastTanh)
EMBER_SIMD_FLOAT_UNARY(rsqrt, FastRsqrt)
EMBER_SIMD_FLOAT_UNARY(sqrt, FastSqrt)
} // namespace fast
#undef EMBER_SIMD_FLOAT_UNARY

#define EMBER_SIMD_FLOAT_PREDICATE(NAME, OP)                                                       \
    template <SimdValue X> auto NAME(const X &x, std::source_location loc = std::source_location::current()) { \
        using V = detail::simd_type<X>;                                                            \
        static_assert(detail::is_float<typename V::value_type>, #NAME " needs floating-point lanes"); \
        return detail::simd_intrinsic<SIMD<bool, V::size>, V>(ir::Intrinsic::OP, loc, x);          \
    }
EMBER_SIMD_FLOAT_PREDICATE(isnan, IsNan)
EMBER_SIMD_FLOAT_PREDICATE(isinf, IsInf)
EMBER_SIMD_FLOAT_PREDICATE(isfinite, IsFinite)
#undef EMBER_SIMD_FLOAT_PREDICATE

/// a * b + c with one rounding, lane by lane.
template <class A, class B, class C>
    requires SimdArgs<A, B, C>
auto fma(const A &a, const B &b, const C &c, std::source_location loc = std::source_location::current()) {
    using V = detail::first_simd_t<A, B, C>;
    static_assert(detail::is_float<typename V::value_type>, "fma needs floating-point lanes");
    return detail::simd_intrinsic<V, V>(ir::Intrinsic::Fma, loc, a, b, c);
}

#define EMBER_SIMD_FLOAT_BINARY(NAME, OP)                                                          \
    template <class A, class B>                                                                    \
        requires SimdArgs<A, B>                                                                    \
    auto NAME(const A &a, const B &b, std::source_location loc = std::source_location::current()) { \
        using V = detail::first_simd_t<A, B>;                                                      \
        static_assert(detail::is_float<typename V::value_type>, #NAME " needs floating-point lanes"); \
        return detail::simd_intrinsic<V, V>(ir::Intrinsic::OP, loc, a, b);                         \
    }
EMBER_SIMD_FLOAT_BINARY(copysign, Copysign)
EMBER_SIMD_FLOAT_BINARY(pow, Pow)
EMBER_SIMD_FLOAT_BINARY(atan2, Atan2)
EMBER_SIMD_FLOAT_BINARY(fmin, Fmin)
EMBER_SIMD_FLOAT_BINARY(fmax, Fmax)
#undef EMBER_SIMD_FLOAT_BINARY

// ---------------------------------------------------------------------------------------------
// Reductions: the lanes folded into one scalar ([Note] IR semantics: Vectors, for the order of
// float sums and products).

#define EMBER_SIMD_REDUCE(NAME, OP, REQ, WHAT)                                                     \
    template <SimdValue X> auto NAME(const X &x, std::source_location loc = std::source_location::current()) { \
        using V = detail::simd_type<X>;                                                            \
        using T = typename V::value_type;                                                          \
        static_assert(REQ, #NAME " needs " WHAT);                                                  \
        V v = detail::to_simd<V>(x, loc);                                                          \
        return Value<T>(ir::Reduce::make(ir::ReduceOp::OP, v.expr()), v.trace());                  \
    }
EMBER_SIMD_REDUCE(reduce_add, Add, detail::is_number<T>, "number lanes")
EMBER_SIMD_REDUCE(reduce_mul, Mul, detail::is_number<T>, "number lanes")
EMBER_SIMD_REDUCE(reduce_min, Min, detail::is_number<T>, "number lanes")
EMBER_SIMD_REDUCE(reduce_max, Max, detail::is_number<T>, "number lanes")
EMBER_SIMD_REDUCE(reduce_and, And, (detail::is_integer<T> || std::is_same_v<T, bool>), "integer or bool lanes")
EMBER_SIMD_REDUCE(reduce_or, Or, (detail::is_integer<T> || std::is_same_v<T, bool>), "integer or bool lanes")
EMBER_SIMD_REDUCE(reduce_xor, Xor, (detail::is_integer<T> || std::is_same_v<T, bool>), "integer or bool lanes")
/// Whether any lane of the mask is true.
EMBER_SIMD_REDUCE(any, Or, (std::is_same_v<T, bool>), "a mask (SIMD<bool, N>)")
/// Whether every lane of the mask is true.
EMBER_SIMD_REDUCE(all, And, (std::is_same_v<T, bool>), "a mask (SIMD<bool, N>)")
#undef EMBER_SIMD_REDUCE

// ---------------------------------------------------------------------------------------------
// Vector loads and stores (declared in Ptr, Value.h).

template <class T, ir::AddressSpace S>
template <int N>
SIMD<typename Ptr<T, S>::element_type, N> Ptr<T, S>::load(detail::IndexArg index) const {
    static_assert(ir::Type::valid_lanes(static_cast<unsigned>(N)), "p.load<N>(i) reads N = 2, 4, 8 or 16 elements");
    detail::check_trace(trace_, index.loc);
    detail::Builder &b = detail::require_builder("a vector load", index.loc);
    ir::Expr e = b.bind(ir::Load::make(expr_, index.expr, static_cast<unsigned>(N)));
    return SIMD<element_type, N>(e, detail::merge_trace(detail::merge_trace(trace_, index.trace), b.id()));
}

template <class T, ir::AddressSpace S>
template <class V>
void Ptr<T, S>::store(detail::IndexArg index, const V &value) const {
    static_assert(!readonly, "cannot store through a Ptr<const T>: its memory is read-only");
    static_assert(SimdValue<V>, "p.store(i, v) writes a SIMD<T, N> value (write one element as p[i] = x)");
    using W = detail::simd_type<V>;
    static_assert(std::is_same_v<typename W::value_type, element_type>,
                  "p.store(i, v) needs v's lanes to have the pointer's element type; convert with cast<T>(v)");
    W v = detail::to_simd<W>(value, index.loc);
    detail::check_trace(detail::merge_trace(trace_, index.trace), index.loc);
    detail::require_builder("a vector store", index.loc).emit(ir::Store::make(expr_, index.expr, v.expr()), index.loc);
}

// ---------------------------------------------------------------------------------------------
// Device functions and kernels.

/// Returns a vector from the device function being traced (of exactly its return type).
template <SimdValue X> void return_(const X &value, std::source_location loc = std::source_location::current()) {
    detail::simd_type<X> v = value.value();
    detail::return_value(v.expr(), v.trace(), loc);
}

namespace detail {
template <Scalar T, int N> struct function_result<SIMD<T, N>> {
    static constexpr bool ok = true;
    static ir::Type type() { return SIMD<T, N>::ir_type(); }
};
/// A vector argument of a device function: a vector of its type, or a scalar for every lane.
template <Scalar T, int N> struct ArgOf<SIMD<T, N>> {
    SIMD<T, N> v;
    template <SimdOperand X>
    ArgOf(const X &x, std::source_location loc = std::source_location::current()) // NOLINT: implicit
        : v(to_simd<SIMD<T, N>>(x, loc)) {}
    void append(std::vector<ir::Expr> &exprs, std::vector<uint32_t> &traces) const {
        exprs.push_back(v.expr());
        traces.push_back(v.trace());
    }
};
template <Scalar T, int N> struct param_traits<SIMD<T, N>> {
    static constexpr bool ok = true;
    static constexpr bool noalias = false;
    static constexpr ir::Type type() { return SIMD<T, N>::ir_type(); }
};
template <Scalar T, int N> constexpr bool is_vector_param<SIMD<T, N>> = true;
} // namespace detail

} // namespace ember

#endif // EMBER_DSL_SIMD_H
