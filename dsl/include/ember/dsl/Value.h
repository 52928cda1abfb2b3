/// \file
/// Traced values of the DSL: `Value<T>` (immutable, with the Mojo-style aliases `Int`, `Float32`,
/// ...), `Var<T>` (mutable), `Ptr<T>` (global memory), special registers (`thread_idx.x`, ...)
/// and the operators on them.
///
/// [Note] DSL typing rules
/// =======================
/// * Two traced operands must have the same type: `Int32 + Int` does not compile; write
///   `cast<Int>(x)`. Traced values never convert to C++ `bool`, so `if (i < n)` does not compile;
///   use `if_(i < n, [&] { ... })`.
/// * A C++ number meets a traced operand as a constant of the traced operand's type: integers
///   become any integer or float type (their value is checked to fit at trace time), floating
///   values become float types only, `bool` becomes `Bool` only. A finite number that would round
///   to infinity in a float type (70000.0 as Float16) is a DslError, as an integer that does not
///   fit; infinity itself is written as such.
/// * `Value<T>` cannot be assigned (it is one traced value); `Var<T>` can.
#ifndef EMBER_DSL_VALUE_H
#define EMBER_DSL_VALUE_H

#include "ember/Float16.h"
#include "ember/Float8.h"
#include "ember/dsl/Tracer.h"

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

namespace ember {

// ---------------------------------------------------------------------------------------------
// Scalar types.

namespace detail {
template <class T> struct scalar_info {
    static constexpr bool supported = false;
};
#define EMBER_SCALAR(CT, IRT, NAME)                                                                \
    template <> struct scalar_info<CT> {                                                           \
        static constexpr bool supported = true;                                                    \
        static constexpr ir::ScalarType ir_type = ir::ScalarType::IRT;                             \
        static constexpr const char *name = NAME;                                                  \
    };
EMBER_SCALAR(bool, Bool, "Bool")
EMBER_SCALAR(int8_t, I8, "Int8")
EMBER_SCALAR(int16_t, I16, "Int16")
EMBER_SCALAR(int32_t, I32, "Int32")
EMBER_SCALAR(int64_t, I64, "Int")
EMBER_SCALAR(uint8_t, U8, "UInt8")
EMBER_SCALAR(uint16_t, U16, "UInt16")
EMBER_SCALAR(uint32_t, U32, "UInt32")
EMBER_SCALAR(uint64_t, U64, "UInt64")
EMBER_SCALAR(half, F16, "Float16")
EMBER_SCALAR(bfloat16, BF16, "BFloat16")
EMBER_SCALAR(float, F32, "Float32")
EMBER_SCALAR(double, F64, "Float64")
EMBER_SCALAR(float8_e4m3, E4M3, "Float8E4M3")
EMBER_SCALAR(float8_e5m2, E5M2, "Float8E5M2")
#undef EMBER_SCALAR
// `long long` is a distinct type from int64_t (`long`) on LP64 Linux, with the same values.
template <> struct scalar_info<long long> : scalar_info<int64_t> {};
template <> struct scalar_info<unsigned long long> : scalar_info<uint64_t> {};

template <class T> constexpr bool always_false = false;
/// float, double, half and bfloat16.
template <class T>
constexpr bool is_float_type = std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
/// The 8-bit floats, which only load, store, move, cast and multiply in mma.
template <class T>
constexpr bool is_fp8 = std::is_same_v<T, float8_e4m3> || std::is_same_v<T, float8_e5m2>;
/// Whether cast<To>(From) exists: an 8-bit float converts to and from half, bfloat16, float and
/// 8-bit floats only ([Note] IR semantics: 8-bit floats).
template <class From, class To>
constexpr bool castable = (!is_fp8<From> && !is_fp8<To>) ||
                          ((is_fp8<From> || std::is_same_v<From, half> ||
                            std::is_same_v<From, bfloat16> || std::is_same_v<From, float>) &&
                           (is_fp8<To> || std::is_same_v<To, half> ||
                            std::is_same_v<To, bfloat16> || std::is_same_v<To, float>));
} // namespace detail

/// The C++ types a traced scalar can have.
template <class T>
concept Scalar = detail::scalar_info<T>::supported;

/// The IR type of a C++ scalar type.
template <Scalar T> constexpr ir::Type ir_type_of() { return ir::Type(detail::scalar_info<T>::ir_type); }
/// The DSL's name of a scalar type ("Int", "Float32", ...), for messages.
template <Scalar T> constexpr const char *scalar_name() { return detail::scalar_info<T>::name; }

template <Scalar T> class Value;
/// A mutable variable of scalar type T (or, see SIMD.h, of a vector type `SIMD<T, N>`).
template <class T> class Var;
/// N lanes of T (SIMD.h).
template <Scalar T, int N> class SIMD;
template <class T, ir::AddressSpace S = ir::AddressSpace::Global> class Ptr;
template <Scalar T> class ElementRef;
template <Scalar T> class ConstElementRef;
struct SpecialRegDim;

// ---------------------------------------------------------------------------------------------
// What counts as traced, and how anything becomes a Value.

namespace detail {
template <class X> struct traced_traits {
    static constexpr bool is_traced = false;
};
template <class T> struct traced_traits<Value<T>> {
    static constexpr bool is_traced = true;
    using type = T;
};
template <Scalar T> struct traced_traits<Var<T>> {
    static constexpr bool is_traced = true;
    using type = T;
};
template <class T> struct traced_traits<ElementRef<T>> {
    static constexpr bool is_traced = true;
    using type = T;
};
template <class T> struct traced_traits<ConstElementRef<T>> {
    static constexpr bool is_traced = true;
    using type = T;
};
template <> struct traced_traits<SpecialRegDim> {
    static constexpr bool is_traced = true;
    using type = int64_t;
};
} // namespace detail

/// A traced scalar: Value, Var, an element of a Ptr, or a special register.
template <class X>
concept Traced = detail::traced_traits<std::remove_cvref_t<X>>::is_traced;
/// A plain C++ number or bool (becomes a constant when it meets a traced operand).
template <class X>
concept HostScalar = std::is_arithmetic_v<std::remove_cvref_t<X>> || std::is_same_v<std::remove_cvref_t<X>, half> ||
                     std::is_same_v<std::remove_cvref_t<X>, bfloat16>;
template <class X>
concept Operand = Traced<X> || HostScalar<X>;

template <Traced X> using traced_t = typename detail::traced_traits<std::remove_cvref_t<X>>::type;

namespace detail {
/// A C++ number as a constant of type T (see [Note] DSL typing rules).
ir::Expr host_constant_int(ir::Type t, int64_t v, bool is_unsigned_source, uint64_t uv,
                           const std::source_location &loc);
/// `v` as a constant of the float type `t`; a finite `v` that would round to infinity in `t` is a
/// DslError at `loc` naming the value and the type's range.
ir::Expr host_constant_float(ir::Type t, double v, const std::source_location &loc);

template <Scalar T, HostScalar U> ir::Expr host_constant(U v, const std::source_location &loc) {
    using S = std::remove_cvref_t<U>;
    if constexpr (is_fp8<T>) {
        static_assert(always_false<S>, "an 8-bit float has no constants: cast<T>() an f32 value, "
                                       "cast<float8_e4m3>(Float32(0.5f))");
        return {};
    } else if constexpr (std::is_same_v<T, bool>) {
        static_assert(std::is_same_v<S, bool>,
                      "only a C++ bool converts to Bool; compare numbers explicitly (x != 0)");
        return ir::BoolImm::make(v);
    } else if constexpr (std::is_same_v<S, bool>) {
        static_assert(always_false<S>, "a C++ bool does not convert to a number; use select()");
        return {};
    } else if constexpr (is_float_type<S>) {
        static_assert(is_float_type<T>,
                      "a C++ floating-point value does not convert to an integer type implicitly; "
                      "use cast<T>() or an integer literal");
        if constexpr (std::is_floating_point_v<S>)
            return host_constant_float(ir_type_of<T>(), static_cast<double>(v), loc);
        else // half, bfloat16: exact in float
            return host_constant_float(ir_type_of<T>(), static_cast<double>(static_cast<float>(v)), loc);
    } else if constexpr (is_float_type<T>) {
        return host_constant_float(ir_type_of<T>(), static_cast<double>(v), loc);
    } else {
        return host_constant_int(ir_type_of<T>(), static_cast<int64_t>(v), std::is_unsigned_v<S>,
                                 static_cast<uint64_t>(v), loc);
    }
}
} // namespace detail

// ---------------------------------------------------------------------------------------------
// Value<T>.

/// One immutable traced value of scalar type T. Copyable, not assignable.
template <Scalar T> class Value {
public:
    using value_type = T;

    /// A C++ number as a constant (see [Note] DSL typing rules).
    template <HostScalar U>
    Value(U v, std::source_location loc = std::source_location::current()) // NOLINT: implicit
        : expr_(detail::host_constant<T>(v, loc)), trace_(0) {}
    /// Any traced operand of the same type (a Var, an element, a special register).
    template <Traced X>
        requires(!std::is_same_v<std::remove_cvref_t<X>, Value> && std::is_same_v<traced_t<X>, T>)
    Value(const X &x) : Value(x.value()) {} // NOLINT: implicit

    Value(const Value &) = default;
    Value &operator=(const Value &) = delete; // a traced value is immutable: use Var<T>

    /// Wraps an IR expression of type T (for the DSL's own use).
    Value(ir::Expr e, uint32_t trace) : expr_(detail::keep_shallow(std::move(e), trace)), trace_(trace) {
        EMBER_ASSERT(expr_.type() == ir_type_of<T>(), "Value<T> of the wrong IR type");
    }

    /// Traced values cannot drive C++ control flow: use if_(cond, [&] { ... }).
    explicit operator bool() const = delete;

    const ir::Expr &expr() const { return expr_; }
    uint32_t trace() const { return trace_; }
    Value value() const { return *this; }

private:
    ir::Expr expr_;
    uint32_t trace_;
};

/// Mojo-style names.
using Bool = Value<bool>;
using Int = Value<int64_t>;
using Int8 = Value<int8_t>;
using Int16 = Value<int16_t>;
using Int32 = Value<int32_t>;
using Int64 = Value<int64_t>;
using UInt8 = Value<uint8_t>;
using UInt16 = Value<uint16_t>;
using UInt32 = Value<uint32_t>;
using UInt64 = Value<uint64_t>;
using Float16 = Value<half>;
using BFloat16 = Value<bfloat16>;
using Float32 = Value<float>;
using Float64 = Value<double>;
using Float8E4M3 = Value<float8_e4m3>;
using Float8E5M2 = Value<float8_e5m2>;

namespace detail {
/// The type two operands share. Mismatched traced types fail here, naming both.
template <class A, class B> struct mismatched_operand_types {
    static_assert(always_false<A>,
                  "operands of a DSL operator have different types (see A and B in this "
                  "instantiation); convert one with cast<T>(x)");
    using type = A;
};

template <Scalar T, Operand X>
Value<T> to_value(const X &x, const std::source_location &loc = std::source_location::current()) {
    if constexpr (Traced<X>) {
        if constexpr (!std::is_same_v<traced_t<X>, T>) {
            (void)mismatched_operand_types<T, traced_t<X>>{};
            return Value<T>(ir::Expr(), 0); // unreachable: the build has failed
        } else {
            Value<T> v = x.value();
            check_trace(v.trace(), loc);
            return v;
        }
    } else {
        return Value<T>(host_constant<T>(x, loc), 0);
    }
}

/// A condition (of if_, elif_, while_, select, a warp vote) that is not a Bool fails the build
/// here, naming the DSL type given (the unspecialised template: a type without a DSL name).
template <class T, class Dependent = void> struct condition_must_be_a_Bool {
    static_assert(always_false<Dependent>,
                  "a condition (of if_, elif_, while_, select or a warp vote) must be a Bool: a "
                  "comparison such as x < n; see T in this instantiation for the type given");
};
#define EMBER_CONDITION_TYPE(CT, NAME)                                                             \
    template <class Dependent> struct condition_must_be_a_Bool<CT, Dependent> {                    \
        static_assert(always_false<Dependent>,                                                     \
                      "a condition (of if_, elif_, while_, select or a warp vote) must be a Bool: " \
                      "a comparison such as x < n, or x != 0; this one is a " NAME);              \
    };
EMBER_CONDITION_TYPE(int8_t, "Int8")
EMBER_CONDITION_TYPE(int16_t, "Int16")
EMBER_CONDITION_TYPE(int32_t, "Int32")
EMBER_CONDITION_TYPE(int64_t, "Int (Int64)")
EMBER_CONDITION_TYPE(uint8_t, "UInt8")
EMBER_CONDITION_TYPE(uint16_t, "UInt16")
EMBER_CONDITION_TYPE(uint32_t, "UInt32")
EMBER_CONDITION_TYPE(uint64_t, "UInt64")
EMBER_CONDITION_TYPE(half, "Float16")
EMBER_CONDITION_TYPE(bfloat16, "BFloat16")
EMBER_CONDITION_TYPE(float, "Float32")
EMBER_CONDITION_TYPE(double, "Float64")
EMBER_CONDITION_TYPE(float8_e4m3, "Float8E4M3")
EMBER_CONDITION_TYPE(float8_e5m2, "Float8E5M2")
#undef EMBER_CONDITION_TYPE

/// `cond` as the Bool of a condition, converted where the user wrote it. A traced number or a C++
/// number is not a condition: the build fails naming its type (not as mismatched operands).
template <class C> Bool to_condition(const C &cond, const std::source_location &loc) {
    using X = std::remove_cvref_t<C>;
    if constexpr (Traced<X>) {
        if constexpr (!std::is_same_v<traced_t<X>, bool>) {
            (void)condition_must_be_a_Bool<traced_t<X>>{};
            return Bool(ir::Expr(), 0); // unreachable: the build has failed
        } else {
            return to_value<bool>(cond, loc);
        }
    } else if constexpr (std::is_same_v<X, bool>) {
        return to_value<bool>(cond, loc);
    } else if constexpr (HostScalar<X>) {
        (void)condition_must_be_a_Bool<X>{};
        return Bool(ir::Expr(), 0);
    } else {
        static_assert(always_false<X>, "a condition must be a Bool (a comparison such as x < n); "
                                       "see C in this instantiation for what was given");
        return Bool(ir::Expr(), 0);
    }
}

template <Operand L, Operand R> struct common_operand {
    using type = void;
};
template <Operand L, Operand R>
    requires(Traced<L> && Traced<R> && std::is_same_v<traced_t<L>, traced_t<R>>)
struct common_operand<L, R> {
    using type = traced_t<L>;
};
template <Operand L, Operand R>
    requires(Traced<L> && Traced<R> && !std::is_same_v<traced_t<L>, traced_t<R>>)
struct common_operand<L, R> {
    using type = typename mismatched_operand_types<traced_t<L>, traced_t<R>>::type;
};
template <Operand L, Operand R>
    requires(Traced<L> && !Traced<R>)
struct common_operand<L, R> {
    using type = traced_t<L>;
};
template <Operand L, Operand R>
    requires(!Traced<L> && Traced<R>)
struct common_operand<L, R> {
    using type = traced_t<R>;
};
template <class L, class R> using common_t = typename common_operand<L, R>::type;

/// Merges the traces of two operands; kMixedTrace when they come from different kernels (reported
/// by check_trace where the value is used).
uint32_t merge_trace(uint32_t a, uint32_t b);

/// A traced operand as a Value<T> for an operator, not checked against the current trace. (C++
/// numbers reach operators as HostOperand, converted at the user's line.)
template <Scalar T, Traced X> Value<T> operand_value(const X &x) {
    if constexpr (std::is_same_v<traced_t<X>, T>) return x.value();
    else return Value<T>(ir::Expr(), 0); // unreachable: mismatched types fail the build
}

/// A C++ number meeting a traced operand of type T in an operator (`x + 300`), converted where
/// the user wrote it: operators cannot take a source_location, but the converting constructor's
/// default argument records the user's file and line for the range check's DslError.
template <Scalar T> struct HostOperand {
    Value<T> value;
    template <HostScalar U>
    HostOperand(U v, std::source_location loc = std::source_location::current()) // NOLINT: implicit
        : value(host_constant<T>(v, loc), 0) {}
};

/// A value operand converted where the user wrote it: the converting constructor's default
/// argument records the user's file and line, for the checks and for any error.
template <Scalar T> struct At {
    Value<T> value;
    std::source_location loc;
    template <Operand X>
    At(const X &x, std::source_location l = std::source_location::current()) // NOLINT: implicit
        : value(to_value<T>(x, l)), loc(l) {}
};

/// A pointer index converted where the user wrote it (any integer type, traced or C++).
struct IndexArg {
    ir::Expr expr;
    uint32_t trace = 0;
    std::source_location loc;
    template <Operand I>
    IndexArg(const I &index, std::source_location l = std::source_location::current()) // NOLINT
        : loc(l) {
        if constexpr (Traced<I>) {
            using T = traced_t<I>;
            static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                          "a pointer index must be an integer");
            Value<T> v = to_value<T>(index, l);
            expr = v.expr();
            trace = v.trace();
        } else {
            using T = std::remove_cvref_t<I>;
            static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                          "a pointer index must be an integer");
            if constexpr (std::is_unsigned_v<T>)
                expr = host_constant<uint64_t>(static_cast<uint64_t>(index), l);
            else
                expr = host_constant<int64_t>(static_cast<int64_t>(index), l);
        }
    }
};
} // namespace detail

// ---------------------------------------------------------------------------------------------
// Special registers.

/// One dimension of a special register; an `Int`.
struct SpecialRegDim {
    ir::SpecialRegKind kind;
    unsigned dim;
    Int value() const { return Int(ir::SpecialReg::make(kind, dim), 0); }
};

/// What `grid_dim(x, y, z)` means at a launch: the number of blocks in each dimension.
struct LaunchGrid {
    int64_t x = 1, y = 1, z = 1;
};
/// What `block_dim(x, y, z)` means at a launch: the number of threads of a block in each dimension.
struct LaunchBlock {
    int64_t x = 1, y = 1, z = 1;
};

/// `thread_idx`, `block_idx`, `block_dim`, `grid_dim`: `.x`, `.y`, `.z` are `Int`s in a kernel.
struct SpecialReg3 {
    SpecialRegDim x, y, z;
};

/// `global_idx.x == block_dim.x * block_idx.x + thread_idx.x`, and likewise for y and z.
struct GlobalIdx {
    struct Dim {
        unsigned dim;
        Int value() const;
    };
    Dim x{0}, y{1}, z{2};
};

namespace detail {
template <> struct traced_traits<GlobalIdx::Dim> {
    static constexpr bool is_traced = true;
    using type = int64_t;
};
} // namespace detail

inline constexpr SpecialReg3 thread_idx{{ir::SpecialRegKind::ThreadIdx, 0},
                                        {ir::SpecialRegKind::ThreadIdx, 1},
                                        {ir::SpecialRegKind::ThreadIdx, 2}};
inline constexpr SpecialReg3 block_idx{{ir::SpecialRegKind::BlockIdx, 0},
                                       {ir::SpecialRegKind::BlockIdx, 1},
                                       {ir::SpecialRegKind::BlockIdx, 2}};
inline constexpr GlobalIdx global_idx{};

/// `block_dim.x` in a kernel; `block_dim(n)` / `block_dim(x, y, z)` at a launch.
struct BlockDimReg : SpecialReg3 {
    constexpr LaunchBlock operator()(int64_t x, int64_t y = 1, int64_t z = 1) const { return {x, y, z}; }
    /// `block_dim({4, 4, 2})`, like Mojo's tuple form.
    constexpr LaunchBlock operator()(LaunchBlock b) const { return b; }
};
/// `grid_dim.x` in a kernel; `grid_dim(n)` / `grid_dim(x, y, z)` at a launch.
struct GridDimReg : SpecialReg3 {
    constexpr LaunchGrid operator()(int64_t x, int64_t y = 1, int64_t z = 1) const { return {x, y, z}; }
    /// `grid_dim({2, 2})`, like Mojo's tuple form.
    constexpr LaunchGrid operator()(LaunchGrid g) const { return g; }
};
inline constexpr BlockDimReg block_dim{{{ir::SpecialRegKind::BlockDim, 0},
                                        {ir::SpecialRegKind::BlockDim, 1},
                                        {ir::SpecialRegKind::BlockDim, 2}}};
inline constexpr GridDimReg grid_dim{{{ir::SpecialRegKind::GridDim, 0},
                                      {ir::SpecialRegKind::GridDim, 1},
                                      {ir::SpecialRegKind::GridDim, 2}}};

/// What `cluster_dim(x, y, z)` means at a launch: the grid is made of clusters of this many
/// blocks (Hopper's thread-block clusters, sm_90 and newer; the CPU device emulates them). Each
/// grid dimension must be a multiple of the cluster's.
struct LaunchCluster {
    int64_t x = 1, y = 1, z = 1;
};
/// `cluster_dim.x` in a kernel: the blocks per cluster in x (1 in a launch without clusters, and
/// on targets without them); `cluster_dim(n)` / `cluster_dim(x, y, z)` at a launch.
struct ClusterDimReg : SpecialReg3 {
    constexpr LaunchCluster operator()(int64_t x, int64_t y = 1, int64_t z = 1) const {
        return {x, y, z};
    }
    constexpr LaunchCluster operator()(LaunchCluster c) const { return c; }
};
inline constexpr ClusterDimReg cluster_dim{{{ir::SpecialRegKind::ClusterDim, 0},
                                            {ir::SpecialRegKind::ClusterDim, 1},
                                            {ir::SpecialRegKind::ClusterDim, 2}}};

/// `cluster_idx.x == block_idx.x / cluster_dim.x` (the cluster's index in the grid of clusters)
/// and `block_idx_in_cluster.x == block_idx.x % cluster_dim.x`, likewise for y and z.
struct ClusterIdx {
    struct Dim {
        unsigned dim;
        bool within; ///< block_idx_in_cluster rather than cluster_idx
        Int value() const;
    };
    Dim x, y, z;
};
inline constexpr ClusterIdx cluster_idx{{0, false}, {1, false}, {2, false}};
inline constexpr ClusterIdx block_idx_in_cluster{{0, true}, {1, true}, {2, true}};

namespace detail {
template <> struct traced_traits<ClusterIdx::Dim> {
    static constexpr bool is_traced = true;
    using type = int64_t;
};
} // namespace detail

inline Int ClusterIdx::Dim::value() const {
    return Int(ir::Binary::make(within ? ir::BinaryOp::Mod : ir::BinaryOp::Div,
                                ir::SpecialReg::make(ir::SpecialRegKind::BlockIdx, dim),
                                ir::SpecialReg::make(ir::SpecialRegKind::ClusterDim, dim)),
               0);
}

/// The block's rank in its cluster, 0 to the cluster's size - 1: block_idx_in_cluster with x
/// fastest (PTX's %cluster_ctarank). The rank names a block in mbarrier_arrive_cluster and in a
/// multicast mask.
inline Int block_rank_in_cluster() {
    using ir::BinaryOp;
    auto reg = [](ir::SpecialRegKind k, unsigned d) { return ir::SpecialReg::make(k, d); };
    auto in = [&](unsigned d) {
        return ir::Binary::make(BinaryOp::Mod, reg(ir::SpecialRegKind::BlockIdx, d),
                                reg(ir::SpecialRegKind::ClusterDim, d));
    };
    auto mul = [](ir::Expr a, ir::Expr b) { return ir::Binary::make(BinaryOp::Mul, a, b); };
    auto add = [](ir::Expr a, ir::Expr b) { return ir::Binary::make(BinaryOp::Add, a, b); };
    return Int(add(in(0), mul(reg(ir::SpecialRegKind::ClusterDim, 0),
                              add(in(1), mul(reg(ir::SpecialRegKind::ClusterDim, 1), in(2))))),
               0);
}

inline Int GlobalIdx::Dim::value() const {
    return Int(ir::Binary::make(ir::BinaryOp::Add,
                                ir::Binary::make(ir::BinaryOp::Mul,
                                                 ir::SpecialReg::make(ir::SpecialRegKind::BlockDim, dim),
                                                 ir::SpecialReg::make(ir::SpecialRegKind::BlockIdx, dim)),
                                ir::SpecialReg::make(ir::SpecialRegKind::ThreadIdx, dim)),
               0);
}

// ---------------------------------------------------------------------------------------------
// Var<T>.

/// A mutable variable of a kernel. Reading it (using it as an operand) takes its current value.
template <class T> class Var {
    static_assert(Scalar<T>, "Var<T> holds a scalar (Var<float>, Var<int64_t>, ...) or a SIMD<T, N>");

public:
    using value_type = T;

    /// Declares the variable, initialised to zero.
    explicit Var(std::source_location loc = std::source_location::current())
        : Var(T{}, loc) {}
    /// Declares the variable with an initial value (a C++ number or a traced value of type T).
    template <Operand X>
    Var(const X &init, std::source_location loc = std::source_location::current()) // NOLINT
        : var_(ir::Variable::make("", ir_type_of<T>(), ir::VarKind::Mutable)) {
        declare(detail::to_value<T>(init, loc).expr(), loc);
    }
    /// A new variable holding `other`'s current value (C++ value semantics).
    Var(const Var &other, std::source_location loc = std::source_location::current())
        : var_(ir::Variable::make("", ir_type_of<T>(), ir::VarKind::Mutable)) {
        declare(other.value().expr(), loc);
    }

    /// Assigns a C++ number or a traced value of type T. (An exact-match template: a parameter
    /// converted like detail::At would tie with the copy assignment through Var's converting
    /// constructor, so assignment errors name the kernel rather than the user's line.)
    template <Operand X>
        requires(!std::is_same_v<std::remove_cvref_t<X>, Var>)
    Var &operator=(const X &x) {
        auto loc = std::source_location::current();
        assign(detail::to_value<T>(x, loc).expr(), loc);
        return *this;
    }
    Var &operator=(const Var &other) {
        assign(other.value().expr(), std::source_location::current());
        return *this;
    }

    /// The current value (bound to a `let` where it is read; see [Note] Tracing).
    /// Assigns with the location the caller recorded (compound assignment).
    void assign_at(const detail::At<T> &x) { assign(x.value.expr(), x.loc); }

    /// (Like every operand, it is checked against the current kernel where it is used.)
    Value<T> value() const {
        detail::Builder &b = detail::require_builder("a read of a Var", std::source_location::current());
        return Value<T>(b.bind(ir::VarRef::make(var_)), detail::merge_trace(trace_, b.id()));
    }

    explicit operator bool() const = delete; // traced: use if_(cond, [&] { ... })

    const ir::VariableRef &variable() const { return var_; }

private:
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
// Ptr<T> and its elements.

namespace detail {
/// What both kinds of element share: the address, and the load where the value is read.
template <Scalar T> class ElementBase {
public:
    using value_type = T;
    ElementBase(ir::Expr ptr, ir::Expr index, uint32_t trace)
        : ptr_(std::move(ptr)), index_(std::move(index)), trace_(trace) {}

    Value<T> value() const {
        Builder &b = require_builder("a load", std::source_location::current());
        return Value<T>(b.bind(ir::Load::make(ptr_, index_)), merge_trace(trace_, b.id()));
    }
    explicit operator bool() const = delete; // traced: use if_(cond, [&] { ... })

    const ir::Expr &ptr_expr() const { return ptr_; }
    const ir::Expr &index_expr() const { return index_; }
    uint32_t trace() const { return trace_; }

protected:
    ir::Expr ptr_, index_;
    uint32_t trace_;
};
} // namespace detail

/// `p[i]`: reading loads (at the point of the read), assigning stores.
template <Scalar T> class ElementRef : public detail::ElementBase<T> {
public:
    using detail::ElementBase<T>::ElementBase;
    /// Stores a C++ number or a traced value of type T.
    const ElementRef &operator=(detail::At<T> x) const {
        store(x.value.expr(), x.loc);
        return *this;
    }
    const ElementRef &operator=(const ElementRef &other) const {
        store(other.value().expr(), std::source_location::current());
        return *this;
    }

private:
    void store(ir::Expr v, const std::source_location &loc) const {
        detail::check_trace(this->trace_, loc);
        detail::require_builder("a store", loc).emit(ir::Store::make(this->ptr_, this->index_, std::move(v)), loc);
    }
};

/// `p[i]` of a `Ptr<const T>`: reads only.
template <Scalar T> class ConstElementRef : public detail::ElementBase<T> {
public:
    using detail::ElementBase<T>::ElementBase;
    template <class X> const ConstElementRef &operator=(const X &) const {
        static_assert(detail::always_false<X>, "cannot store through a Ptr<const T>: its memory is read-only "
                                               "(so is a constant_array's ConstPtr<T>: the host writes it)");
        return *this;
    }
};

/// A pointer to T in global memory (a kernel receives a `DeviceBuffer<T>` as a `Ptr<T>`), or in
/// the block's shared memory (`Ptr<T, ir::AddressSpace::Shared>`, from `shared_array`).
///
/// `Ptr<const T>` is read-only, with the contract of CUDA's `const __restrict__`: the memory it
/// reads does not change while the kernel runs (through any pointer), so its loads may use the
/// read-only data path (`ld.global.nc` on NVIDIA). Storing through it does not compile.
template <class T, ir::AddressSpace S> class Ptr {
    static_assert(Scalar<std::remove_const_t<T>>, "Ptr<T> points to a scalar type (Int, float, ...)");

public:
    using element_type = std::remove_const_t<T>;
    static constexpr bool readonly = std::is_const_v<T>;
    using reference = std::conditional_t<readonly, ConstElementRef<element_type>, ElementRef<element_type>>;
    Ptr(ir::Expr e, uint32_t trace) : expr_(detail::keep_shallow(std::move(e), trace)), trace_(trace) {
        EMBER_ASSERT(expr_.type() == ir_type(), "Ptr<T> of the wrong IR type");
    }
    Ptr(const Ptr &) = default;
    Ptr &operator=(const Ptr &) = delete; // a traced value is immutable

    /// The element at `index` (any integer type, traced or a C++ integer).
    reference operator[](detail::IndexArg index) const {
        detail::check_trace(trace_, index.loc);
        return reference(expr_, index.expr, detail::merge_trace(trace_, index.trace));
    }

    /// The N elements from `index` on, as one vector access: `p.load<4>(i)` (SIMD.h). The address
    /// of element `index` must be aligned to min(N * sizeof(T), 16) bytes ([Note] IR semantics:
    /// Vector memory); a misaligned access fails the launch.
    template <int N> SIMD<element_type, N> load(detail::IndexArg index) const;
    /// Writes the lanes of `value` (a `SIMD<T, N>`) to the N elements from `index` on, as one
    /// vector access with the alignment rule of load().
    template <class V> void store(detail::IndexArg index, const V &value) const;

    static constexpr ir::Type ir_type() {
        return ir::Type::pointer(detail::scalar_info<element_type>::ir_type, S, readonly);
    }
    const ir::Expr &expr() const { return expr_; }
    uint32_t trace() const { return trace_; }

private:
    ir::Expr expr_;
    uint32_t trace_;
};

/// A pointer into the block's shared memory.
/// A pointer parameter with C's `restrict` contract: while the kernel (or device function) runs,
/// the memory it accesses is accessed through no other pointer, so the compiler may reorder,
/// combine and vectorise its loads and stores. Used exactly like the pointer it wraps:
///
///     kernel("axpy", [](NoAlias<Ptr<float>> y, Ptr<const float> x, Float32 a, Int n) { ... });
///
/// Breaking the contract (passing overlapping buffers) makes the kernel's results undefined.
template <class P> class NoAlias : public P {
public:
    using P::P;
    NoAlias(const P &p) : P(p) {} // NOLINT: implicit
};

template <Scalar T> using SharedPtr = Ptr<T, ir::AddressSpace::Shared>;

/// A static shared array of N elements of T: one per block, seen by all of its threads, contents
/// undefined when the block starts (CUDA's `__shared__ T a[N]`). At most 48 KiB per kernel: the
/// array that goes over is a DslError listing every shared array of the kernel with its line.
/// Declared in kernels only (a device function takes a SharedPtr<T> parameter).
template <Scalar T, uint64_t N>
SharedPtr<T> shared_array(std::source_location loc = std::source_location::current()) {
    static_assert(N > 0, "a shared array needs at least one element");
    static_assert(N * sizeof(T) <= ir::max_static_shared_bytes,
                  "a kernel has at most 48 KiB of static shared memory");
    detail::Builder &b = detail::require_builder("shared_array", loc);
    detail::check_shared_array(
        b, "shared_array<" + std::string(scalar_name<T>()) + ", " + std::to_string(N) + ">", N * sizeof(T), loc);
    ir::VariableRef var = ir::Variable::make("", SharedPtr<T>::ir_type(), ir::VarKind::Let);
    b.emit(ir::SharedArray::make(var, N), loc);
    return SharedPtr<T>(ir::VarRef::make(var), b.id());
}

/// A pointer to the thread's own local memory.
template <Scalar T> using LocalPtr = Ptr<T, ir::AddressSpace::Local>;

/// A per-thread array of N elements of T (uninitialised), like a C array in a CUDA kernel.
template <Scalar T, uint64_t N>
LocalPtr<T> local_array(std::source_location loc = std::source_location::current()) {
    static_assert(N > 0, "a local array needs at least one element");
    static_assert(N * sizeof(T) <= ir::max_local_bytes, "a thread has at most 512 KiB of local arrays");
    detail::Builder &b = detail::require_builder("local_array", loc);
    ir::VariableRef var = ir::Variable::make("", LocalPtr<T>::ir_type(), ir::VarKind::Let);
    b.emit(ir::LocalArray::make(var, N), loc);
    return LocalPtr<T>(ir::VarRef::make(var), b.id());
}

/// The block's dynamic shared memory, as T elements: as many bytes as the launch's
/// `shared_mem_bytes(...)` (CUDA's `extern __shared__ T a[]`). Every call gives the same address.
template <Scalar T> SharedPtr<T> dynamic_shared(std::source_location loc = std::source_location::current()) {
    detail::Builder &b = detail::require_builder("dynamic_shared", loc);
    detail::check_shared_array(b, "dynamic_shared<" + std::string(scalar_name<T>()) + ">", 0, loc);
    ir::VariableRef var = ir::Variable::make("", SharedPtr<T>::ir_type(), ir::VarKind::Let);
    b.emit(ir::SharedArray::make(var, 0), loc);
    return SharedPtr<T>(ir::VarRef::make(var), b.id());
}

/// A read-only pointer into constant memory, from `constant_array` (`ptr<constant const T>`).
/// Indexed and loaded like a `Ptr<const T>`; storing through it does not compile. Device
/// functions take it as a parameter.
template <Scalar T> using ConstPtr = Ptr<const T, ir::AddressSpace::Constant>;

namespace detail {
/// Emits the declaration of constant array `name` (count elements; `init` empty or count
/// immediates) bound to `var`; throws DslError for a name that is not a C identifier, is
/// reserved, or was declared before in this kernel, and in a device function.
void declare_constant_array(const ir::VariableRef &var, const std::string &name, uint64_t count,
                            std::vector<ir::Expr> init, const std::source_location &loc);
} // namespace detail

/// A module-level array of N elements of T in constant memory, named `name` (CUDA's
/// `__constant__ T name[N]`): every thread of every launch reads it, the host writes it between
/// launches (`fn.get_global(name)` with `ctx.enqueue_copy`, or the launch option
/// `constant_memory({{name, ptr, bytes}})`). It starts as zeros. `name` is a C identifier, unique
/// in the kernel (DslError otherwise); a kernel's constant arrays take at most 64 KiB together.
template <Scalar T, uint64_t N>
ConstPtr<T> constant_array(const std::string &name, std::source_location loc = std::source_location::current()) {
    static_assert(N > 0, "a constant array needs at least one element");
    static_assert(N * sizeof(T) <= ir::max_constant_bytes, "a kernel has at most 64 KiB of constant memory");
    ir::VariableRef var = ir::Variable::make(name, ConstPtr<T>::ir_type(), ir::VarKind::Let);
    detail::declare_constant_array(var, name, N, {}, loc);
    return ConstPtr<T>(ir::VarRef::make(var), detail::require_builder("constant_array", loc).id());
}

/// As above, starting with the values `init` (exactly N of them; DslError otherwise) when the
/// kernel is loaded: `constant_array<float, 4>("k", {1, 2, 3, 4})`.
template <Scalar T, uint64_t N>
ConstPtr<T> constant_array(const std::string &name, std::initializer_list<T> init,
                           std::source_location loc = std::source_location::current()) {
    static_assert(N > 0, "a constant array needs at least one element");
    static_assert(N * sizeof(T) <= ir::max_constant_bytes, "a kernel has at most 64 KiB of constant memory");
    if (init.size() != N)
        throw DslError("constant array '" + name + "' has " + std::to_string(N) + " elements but " +
                           std::to_string(init.size()) + " initial values were given",
                       loc);
    std::vector<ir::Expr> values;
    values.reserve(N);
    for (const T &v : init) values.push_back(detail::host_constant<T>(v, loc));
    ir::VariableRef var = ir::Variable::make(name, ConstPtr<T>::ir_type(), ir::VarKind::Let);
    detail::declare_constant_array(var, name, N, std::move(values), loc);
    return ConstPtr<T>(ir::VarRef::make(var), detail::require_builder("constant_array", loc).id());
}

// ---------------------------------------------------------------------------------------------
// Operators.

namespace detail {
template <class T> constexpr bool is_number = (std::is_arithmetic_v<T> || is_float_type<T>) && !std::is_same_v<T, bool>;
template <class T> constexpr bool is_integer = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class L, class R> constexpr bool operands_match_v() {
    if constexpr (Traced<L> && Traced<R>) return std::is_same_v<traced_t<L>, traced_t<R>>;
    else return true;
}
template <class L, class R> constexpr bool operands_match = operands_match_v<L, R>();

// Operators cannot learn the user's source location, so they do not check traces: they merge
// them (see merge_trace), and the statement that consumes the value checks with the user's line.
template <class L, class R>
Value<common_t<L, R>> binary(ir::BinaryOp op, const L &l, const R &r) {
    using T = common_t<L, R>;
    if constexpr (!operands_match<L, R>) return Value<T>(ir::Expr(), 0); // the build has failed
    Value<T> a = operand_value<T>(l), b = operand_value<T>(r);
    return Value<T>(ir::Binary::make(op, a.expr(), b.expr()), merge_trace(a.trace(), b.trace()));
}
template <class L, class R> Bool compare(ir::CompareOp op, const L &l, const R &r) {
    using T = common_t<L, R>;
    if constexpr (!operands_match<L, R>) return Bool(ir::Expr(), 0); // the build has failed
    Value<T> a = operand_value<T>(l), b = operand_value<T>(r);
    return Bool(ir::Compare::make(op, a.expr(), b.expr()), merge_trace(a.trace(), b.trace()));
}
} // namespace detail

template <class L, class R>
concept OperandPair = Operand<L> && Operand<R> && (Traced<L> || Traced<R>);

// Each operator has three overloads: two traced operands, and a traced operand with a C++ number
// on either side. The number is a detail::HostOperand, so that a number that does not fit the
// traced type (`Int8 x; x + 300`) is reported at the user's line.
#define EMBER_BINARY_OVERLOADS(SYM, RET, CHECK, BODY)                                              \
    template <Traced L, Traced R> RET operator SYM(const L &l, const R &r) {                       \
        using T = detail::common_t<L, R>;                                                          \
        CHECK;                                                                                     \
        return BODY(l, r);                                                                         \
    }                                                                                              \
    template <Traced L> RET operator SYM(const L &l, detail::HostOperand<traced_t<L>> r) {         \
        using T = traced_t<L>;                                                                     \
        CHECK;                                                                                     \
        return BODY(l, r.value);                                                                   \
    }                                                                                              \
    template <Traced R> RET operator SYM(detail::HostOperand<traced_t<R>> l, const R &r) {         \
        using T = traced_t<R>;                                                                     \
        CHECK;                                                                                     \
        return BODY(l.value, r);                                                                   \
    }

#define EMBER_ARITH_OP(SYM, OP, REQ, WHAT)                                                         \
    EMBER_BINARY_OVERLOADS(SYM, auto, static_assert(REQ, "operator " #SYM " needs " WHAT),         \
                           [](const auto &a, const auto &b) { return detail::binary(ir::BinaryOp::OP, a, b); })
EMBER_ARITH_OP(+, Add, detail::is_number<T>, "numbers")
EMBER_ARITH_OP(-, Sub, detail::is_number<T>, "numbers")
EMBER_ARITH_OP(*, Mul, detail::is_number<T>, "numbers")
EMBER_ARITH_OP(/, Div, detail::is_number<T>, "numbers")
EMBER_ARITH_OP(%, Mod, detail::is_number<T>, "numbers")
EMBER_ARITH_OP(&, And, detail::is_integer<T>, "integers (use && for Bool)")
EMBER_ARITH_OP(|, Or, detail::is_integer<T>, "integers (use || for Bool)")
EMBER_ARITH_OP(^, Xor, (detail::is_integer<T> || std::is_same_v<T, bool>), "integers or Bool")
EMBER_ARITH_OP(<<, Shl, detail::is_integer<T>, "integers")
EMBER_ARITH_OP(>>, Shr, detail::is_integer<T>, "integers")
#undef EMBER_ARITH_OP

#define EMBER_LOGIC_OP(SYM, OP)                                                                    \
    EMBER_BINARY_OVERLOADS(SYM, Bool,                                                              \
                           static_assert(std::is_same_v<T, bool>,                                  \
                                         "operator " #SYM " needs Bool operands (compare numbers first)"), \
                           [](const auto &a, const auto &b) { return detail::binary(ir::BinaryOp::OP, a, b); })
EMBER_LOGIC_OP(&&, And)
EMBER_LOGIC_OP(||, Or)
#undef EMBER_LOGIC_OP

#define EMBER_COMPARE_OP(SYM, OP)                                                                  \
    EMBER_BINARY_OVERLOADS(                                                                        \
        SYM, Bool,                                                                                 \
        static_assert(!detail::is_fp8<T>,                                                          \
                      "an 8-bit float has no comparisons: cast<float>(x) first"),                  \
        [](const auto &a, const auto &b) { return detail::compare(ir::CompareOp::OP, a, b); })
EMBER_COMPARE_OP(==, EQ)
EMBER_COMPARE_OP(!=, NE)
EMBER_COMPARE_OP(<, LT)
EMBER_COMPARE_OP(<=, LE)
EMBER_COMPARE_OP(>, GT)
EMBER_COMPARE_OP(>=, GE)
#undef EMBER_COMPARE_OP
#undef EMBER_BINARY_OVERLOADS

template <Traced X> auto operator-(const X &x) {
    using T = traced_t<X>;
    static_assert(detail::is_number<T>, "unary - needs a number");
    Value<T> v = detail::operand_value<T>(x);
    return Value<T>(ir::Unary::make(ir::UnaryOp::Neg, v.expr()), v.trace());
}
template <Traced X> Bool operator!(const X &x) {
    static_assert(std::is_same_v<traced_t<X>, bool>, "operator ! needs a Bool");
    Bool v = detail::operand_value<bool>(x);
    return Bool(ir::Unary::make(ir::UnaryOp::Not, v.expr()), v.trace());
}
template <Traced X> auto operator~(const X &x) {
    using T = traced_t<X>;
    static_assert(detail::is_integer<T>, "operator ~ needs an integer");
    Value<T> v = detail::operand_value<T>(x);
    return Value<T>(ir::Unary::make(ir::UnaryOp::BitNot, v.expr()), v.trace());
}

// Compound assignment on Var and on pointer elements: `x += y` is `x = x + y`.
#define EMBER_COMPOUND_OP(SYM, BIN)                                                                \
    template <Scalar T> Var<T> &operator SYM(Var<T> &v, std::type_identity_t<detail::At<T>> x) {  \
        v.assign_at(detail::At<T>(v BIN x.value, x.loc));                                         \
        return v;                                                                                  \
    }                                                                                              \
    template <Scalar T>                                                                            \
    const ElementRef<T> &operator SYM(const ElementRef<T> &e, std::type_identity_t<detail::At<T>> x) { \
        e = detail::At<T>(e BIN x.value, x.loc);                                                   \
        return e;                                                                                  \
    }
EMBER_COMPOUND_OP(+=, +)
EMBER_COMPOUND_OP(-=, -)
EMBER_COMPOUND_OP(*=, *)
EMBER_COMPOUND_OP(/=, /)
EMBER_COMPOUND_OP(%=, %)
EMBER_COMPOUND_OP(&=, &)
EMBER_COMPOUND_OP(|=, |)
EMBER_COMPOUND_OP(^=, ^)
EMBER_COMPOUND_OP(<<=, <<)
EMBER_COMPOUND_OP(>>=, >>)
#undef EMBER_COMPOUND_OP

// ---------------------------------------------------------------------------------------------
// Builtins.

/// Converts to another scalar type (see [Note] IR semantics for the rules):
/// `cast<Float32>(i)` or `cast<float>(i)`.
template <class To, Operand X>
auto cast(const X &x, std::source_location loc = std::source_location::current()) {
    using T = typename std::conditional_t<Scalar<To>, std::type_identity<To>,
                                          detail::traced_traits<To>>::type;
    if constexpr (Traced<X>) {
        static_assert(detail::castable<traced_t<X>, T>,
                      "an 8-bit float converts to and from half, bfloat16, float and the other "
                      "8-bit float only: cast through float");
        Value<traced_t<X>> v = x.value();
        detail::check_trace(v.trace(), loc);
        if constexpr (std::is_same_v<traced_t<X>, T>) return v;
        else return Value<T>(ir::Cast::make(ir_type_of<T>(), v.expr()), v.trace());
    } else {
        using S = std::remove_cvref_t<X>;
        Value<S> v(x);
        if constexpr (std::is_same_v<S, T>) return v;
        else return Value<T>(ir::Cast::make(ir_type_of<T>(), v.expr()), 0);
    }
}

/// `cond ? a : b`; both sides are evaluated.
template <Operand C, class A, class B>
    requires OperandPair<A, B>
auto select(const C &cond, const A &a, const B &b,
            std::source_location loc = std::source_location::current()) {
    using T = detail::common_t<A, B>;
    Bool c = detail::to_condition(cond, loc);
    Value<T> x = detail::to_value<T>(a, loc), y = detail::to_value<T>(b, loc);
    return Value<T>(ir::Select::make(c.expr(), x.expr(), y.expr()),
                    detail::merge_trace(c.trace(), detail::merge_trace(x.trace(), y.trace())));
}

/// The smaller of `l` and `r` (a C++ number is a constant of the other operand's type).
template <class L, class R>
    requires OperandPair<L, R>
auto min(const L &l, const R &r, std::source_location loc = std::source_location::current()) {
    using T = detail::common_t<L, R>;
    static_assert(detail::is_number<T>, "min needs numbers");
    return detail::binary(ir::BinaryOp::Min, detail::to_value<T>(l, loc), detail::to_value<T>(r, loc));
}
/// The larger of `l` and `r`.
template <class L, class R>
    requires OperandPair<L, R>
auto max(const L &l, const R &r, std::source_location loc = std::source_location::current()) {
    using T = detail::common_t<L, R>;
    static_assert(detail::is_number<T>, "max needs numbers");
    return detail::binary(ir::BinaryOp::Max, detail::to_value<T>(l, loc), detail::to_value<T>(r, loc));
}

} // namespace ember

#endif // EMBER_DSL_VALUE_H
