/// \file
/// `EMBER_STRUCT(Type, field...)`: compile-time reflection of a plain C++ struct, so that a struct
/// of DSL values can be a kernel or device-function parameter, and a host struct can be passed
/// for it at a launch.
///
///     struct View { ember::Ptr<float> data; ember::Int n; };
///     EMBER_STRUCT(View, data, n)
///
/// [Note] Structs
/// ==============
/// A struct is a trace-time aggregate: the IR stays scalar. A struct parameter `v` of a kernel or
/// device function becomes one IR parameter per field, in declaration order, named `v.data`,
/// `v.n` (nested structs flatten recursively: `o.view.data`); the lambda receives the struct
/// built from those parameters. A call of a device function passes the fields of a struct
/// argument; the back ends and the launch ABI only ever see scalars and pointers. At a launch a
/// host argument for a struct parameter is flattened the same way, field by field, each field
/// converted through `DevicePassable` ([Note] Argument checking in
/// `ember/runtime/DevicePassable.h`).
///
/// Why flattening rather than an aggregate IR type: every scalar parameter keeps its own
/// attributes (`noalias`, the read-only path of `Ptr<const T>`), LLVM sees independent SSA values
/// without having to scalarise (SROA) an aggregate first, the kernel ABI stays "one 8-byte slot or
/// less per parameter" on every target (CUDA's parameter space, the CPU device's argument block),
/// and neither the IR, its verifier, nor any back end had to change.
///
/// `EMBER_STRUCT` goes at namespace scope, in the namespace of the struct (it defines functions
/// found by argument-dependent lookup), and lists every field, in declaration order (checked: a
/// missing field or a wrong order stops the build). The struct must be an aggregate: public
/// fields, no constructors, no base classes, no virtual functions. At most 32 fields.
#ifndef EMBER_DSL_STRUCT_H
#define EMBER_DSL_STRUCT_H

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ember {

namespace detail {
template <class T> constexpr bool always_false_struct = false;
/// A failed compile-time check whose error type E holds a static_assert: with Report, E is
/// instantiated and its static_assert is the diagnostic; without, the check only answers false.
/// Checks are asked first without Report so that the answer stays a constant expression (clang
/// treats a function whose instantiation failed a static_assert as not constant, and would add
/// errors about the caller's `if constexpr`), then with Report where the answer is false.
template <bool Report, class E> constexpr bool report() {
    if constexpr (Report) return E::value;
    else return false;
}

/// A string usable as a template argument (a field name or path in a diagnostic).
template <size_t N> struct FixedString {
    char data[N]{};
    constexpr FixedString(const char (&s)[N]) { // NOLINT: implicit, from a literal
        for (size_t i = 0; i < N; ++i) data[i] = s[i];
    }
    constexpr FixedString() = default;
    static constexpr size_t length = N - 1;
    constexpr std::string_view view() const { return {data, N - 1}; }
    constexpr const char *c_str() const { return data; }
};

/// "a.b" from "a" and "b"; just "b" when `a` is empty.
template <size_t A, size_t B> constexpr auto join_path(const FixedString<A> &a, const FixedString<B> &b) {
    if constexpr (A == 1) {
        return b;
    } else {
        FixedString<A + B> r;
        for (size_t i = 0; i < A - 1; ++i) r.data[i] = a.data[i];
        r.data[A - 1] = '.';
        for (size_t i = 0; i < B; ++i) r.data[A + i] = b.data[i];
        return r;
    }
}

/// The argument through which `ember_struct_fields` / `ember_struct_make` are found by ADL.
template <class T> struct StructTag {};

/// One reflected field: its declared type M, its name, and a getter.
template <class M, size_t N, class Get> struct FieldInfo {
    using type = M;
    FixedString<N> name;
    Get get;
};
template <class M, size_t N, class Get>
constexpr FieldInfo<M, N, Get> make_struct_field(const char (&name)[N], Get get) {
    return {FixedString<N>(name), get};
}

/// Converts to anything (as Boost.PFR's "ubiq"): `T{AnyField{} x k}` compiles exactly when T has
/// at least k fields and those after the k-th can be default-initialised, so the largest such k
/// is T's number of fields.
struct AnyField {
    template <class U> operator U &() const; // NOLINT: implicit
};
template <class T, size_t... I> constexpr bool inits_with(std::index_sequence<I...>) {
    return requires { T{(static_cast<void>(I), AnyField{})...}; };
}
/// Whether T has exactly N fields (up to N + 32 checked).
template <class T, size_t N> constexpr bool has_fields() {
    if constexpr (!inits_with<T>(std::make_index_sequence<N>{})) {
        return false;
    } else {
        return ![]<size_t... J>(std::index_sequence<J...>) {
            return (inits_with<T>(std::make_index_sequence<N + 1 + J>{}) || ...);
        }(std::make_index_sequence<32>{});
    }
}
} // namespace detail

/// A struct reflected with EMBER_STRUCT.
template <class T>
concept ReflectedStruct = requires { ember_struct_fields(detail::StructTag<std::remove_cv_t<T>>{}); };

// Named so that the compiler's "in instantiation of" line reads as the error message.
template <class T> struct StructType {};
template <size_t N> struct ListedFields {};
template <detail::FixedString Name> struct FieldName {};
template <class T> struct FieldType {};

template <class T> struct ember_struct_is_not_an_aggregate {
    static_assert(detail::always_false_struct<T>,
                  "EMBER_STRUCT: the struct (see StructType in this instantiation) must be an "
                  "aggregate: public fields, no constructors, no base classes, no virtual functions");
    static constexpr bool value = false;
};

template <class Type, class Listed> struct ember_struct_does_not_list_every_field {
    static_assert(detail::always_false_struct<Type>,
                  "EMBER_STRUCT must list every field of the struct: see StructType and "
                  "ListedFields (how many fields it lists) in this instantiation");
    static constexpr bool value = false;
};

template <class Type> struct ember_struct_lists_fields_out_of_order {
    static_assert(detail::always_false_struct<Type>,
                  "EMBER_STRUCT must list the fields of the struct in declaration order: see "
                  "StructType in this instantiation");
    static constexpr bool value = false;
};

namespace detail {
/// What EMBER_STRUCT says about T, checked once.
template <ReflectedStruct T> struct struct_info {
    static constexpr auto fields = ember_struct_fields(StructTag<std::remove_cv_t<T>>{});
    static constexpr size_t size = std::tuple_size_v<std::remove_const_t<decltype(fields)>>;
    /// The declared type of field I (a reference for a reference member).
    template <size_t I>
    using field_type = typename std::tuple_element_t<I, std::remove_const_t<decltype(fields)>>::type;
    /// Its name, as a FixedString.
    template <size_t I> static constexpr auto name = std::get<I>(fields).name;

    /// Whether EMBER_STRUCT describes T; with Report, a static_assert says why not.
    template <bool Report> static constexpr bool check() {
        if constexpr (!std::is_aggregate_v<T>)
            return report<Report, ember_struct_is_not_an_aggregate<StructType<T>>>();
        else if constexpr (!has_fields<T, size>())
            return report<Report, ember_struct_does_not_list_every_field<StructType<T>, ListedFields<size>>>();
        else if constexpr (!ember_struct_in_order(StructTag<std::remove_cv_t<T>>{}))
            return report<Report, ember_struct_lists_fields_out_of_order<StructType<T>>>();
        else
            return true;
    }
    static constexpr bool ok = check<false>();

    /// Field I of `s` (a reference to it).
    template <size_t I, class S> static constexpr decltype(auto) get(S &&s) {
        return std::get<I>(fields).get(std::forward<S>(s));
    }
};
} // namespace detail

} // namespace ember

// EMBER_STRUCT_FOR_EACH(M, T, a, b, c) -> M(T, a), M(T, b), M(T, c)   (1 to 32 items)
#define EMBER_STRUCT_NARGS_(...)                                                                   \
    EMBER_STRUCT_NARGS_I_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, \
                          17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, )
#define EMBER_STRUCT_NARGS_I_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15,     \
                              _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28,     \
                              _29, _30, _31, _32, N, ...)                                          \
    N
#define EMBER_STRUCT_CAT_(a, b) EMBER_STRUCT_CAT_I_(a, b)
#define EMBER_STRUCT_CAT_I_(a, b) a##b
#define EMBER_STRUCT_FOR_EACH(M, T, ...)                                                           \
    EMBER_STRUCT_CAT_(EMBER_STRUCT_FE_, EMBER_STRUCT_NARGS_(__VA_ARGS__))(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_1(M, T, x) M(T, x)
#define EMBER_STRUCT_FE_2(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_1(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_3(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_2(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_4(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_3(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_5(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_4(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_6(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_5(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_7(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_6(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_8(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_7(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_9(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_8(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_10(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_9(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_11(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_10(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_12(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_11(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_13(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_12(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_14(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_13(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_15(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_14(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_16(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_15(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_17(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_16(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_18(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_17(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_19(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_18(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_20(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_19(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_21(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_20(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_22(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_21(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_23(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_22(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_24(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_23(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_25(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_24(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_26(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_25(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_27(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_26(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_28(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_27(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_29(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_28(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_30(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_29(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_31(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_30(M, T, __VA_ARGS__)
#define EMBER_STRUCT_FE_32(M, T, x, ...) M(T, x), EMBER_STRUCT_FE_31(M, T, __VA_ARGS__)

#define EMBER_STRUCT_FIELD_(T, f)                                                                  \
    ::ember::detail::make_struct_field<decltype(T::f)>(                                            \
        #f, [](auto &&ember_s) -> decltype(auto) { return (ember_s.f); })
#define EMBER_STRUCT_INIT_(T, f) .f = ember_make(::std::type_identity<decltype(T::f)>{}, #f)
// Designated initialisers must follow declaration order, so this checks the order.
#define EMBER_STRUCT_DECLVAL_(T, f) .f = ::std::declval<decltype(T::f)>()

/// Reflects the aggregate `Type` whose fields are listed (all of them, in declaration order). At
/// namespace scope, in the namespace of `Type`; see [Note] Structs.
///
/// Defines, for argument-dependent lookup:
/// * `ember_struct_fields(StructTag<Type>)`: the fields (declared types, names, getters);
/// * `ember_struct_in_order(StructTag<Type>)`: whether the list follows declaration order;
/// * `ember_struct_make(StructTag<Type>, make)`: a Type whose field `f` of declared type M is
///   `make(std::type_identity<M>{}, "f")`, the fields made in declaration order.
#define EMBER_STRUCT(Type, ...)                                                                    \
    static_assert(sizeof(#__VA_ARGS__) > 1,                                                        \
                  "EMBER_STRUCT(" #Type ") lists no fields: write EMBER_STRUCT(" #Type             \
                  ", field1, field2, ...) with every field of the struct");                        \
    __VA_OPT__(EMBER_STRUCT_IMPL_(Type, __VA_ARGS__))
#define EMBER_STRUCT_IMPL_(Type, ...)                                                              \
    [[maybe_unused]] constexpr auto ember_struct_fields(::ember::detail::StructTag<Type>) {        \
        return ::std::make_tuple(EMBER_STRUCT_FOR_EACH(EMBER_STRUCT_FIELD_, Type, __VA_ARGS__));   \
    }                                                                                              \
    template <class EmberT = Type>                                                                 \
    [[maybe_unused]] constexpr bool ember_struct_in_order(::ember::detail::StructTag<Type>) {      \
        return requires { EmberT{EMBER_STRUCT_FOR_EACH(EMBER_STRUCT_DECLVAL_, EmberT, __VA_ARGS__)}; }; \
    }                                                                                              \
    template <class EmberMake>                                                                     \
    [[maybe_unused]] Type ember_struct_make(::ember::detail::StructTag<Type>, EmberMake &&ember_make) { \
        return Type{EMBER_STRUCT_FOR_EACH(EMBER_STRUCT_INIT_, Type, __VA_ARGS__)};                 \
    }

#endif // EMBER_DSL_STRUCT_H
