/// \file
/// `DevicePassable<H>`: how a host argument of type H reaches a kernel, as Mojo's trait of the
/// same name. Each specialisation names the kernel parameter type it becomes (`device_type`, a
/// DSL type such as `Int` or `Ptr<float>`) and converts the host value to the bytes the kernel
/// receives (`to_device`).
///
///   host type                         device_type
///   int64_t, long long                Int (Int64)
///   int32_t / int16_t / int8_t        Int32 / Int16 / Int8
///   uint64_t / uint32_t / ...         UInt64 / UInt32 / ...
///   float / double                    Float32 / Float64
///   bool                              Bool (passed as one byte)
///   DeviceBuffer<T>                   Ptr<T>, or Ptr<const T> where the kernel only reads it
///   ManagedBuffer<T>, HostMappedBuffer<T>   as DeviceBuffer<T>
///   a struct reflected with           a struct parameter (EMBER_STRUCT) with the same field
///     EMBER_STRUCT                      names in the same order, each field passable for its
///                                       field (a DeviceBuffer<T> for a Ptr<T>, an int for an Int)
///   any type, specialised as below    a struct parameter: `to_device` returns its fields
///
/// Specialise it for your own types:
///
///   struct Celsius { float degrees; };
///   template <> struct ember::DevicePassable<Celsius> {
///       using device_type = ember::Float32;
///       static float to_device(const Celsius &c) { return c.degrees; }
///   };
///
/// For a struct parameter (`struct View { Ptr<float> data; Int n; }; EMBER_STRUCT(View, data, n)`),
/// `to_device` returns the host values of the fields, in declaration order: a `std::tuple`, or a
/// struct reflected with EMBER_STRUCT; each is passed for its field as an argument would be (see
/// [Note] Structs in `ember/dsl/Struct.h`):
///
///   struct HostView { ember::DeviceBuffer<float> &buf; int64_t n; };
///   template <> struct ember::DevicePassable<HostView> {
///       using device_type = View;
///       static auto to_device(const HostView &h) { return std::tuple(std::cref(h.buf), h.n); }
///   };
///
/// A host struct whose fields already match needs no specialisation, only its own EMBER_STRUCT:
///
///   struct HostView { ember::DeviceBuffer<float> data; int64_t n; };
///   EMBER_STRUCT(HostView, data, n)        // passed for View: same names, in the same order
///
/// [Note] Argument checking
/// ========================
/// `enqueue_function` checks at C++ compile time that it gets one argument per kernel parameter
/// and that each argument's `device_type` is the parameter's type, or a scalar type that widens
/// to it without loss (a signed integer to a wider signed one, an unsigned one to a wider
/// integer, Float32 to Float64), so that `20` (an `int`) can be passed for an `Int`. A mismatch
/// stops the build in `enqueue_function_argument_mismatch<ArgumentPosition<I>, HostType<H>,
/// KernelExpects<P>>`, which names the position, the host type and the expected type.
///
/// A struct parameter is checked field by field, recursively: each host field against its
/// field's type as above; a mismatch stops the build in
/// `enqueue_function_struct_field_mismatch<ArgumentPosition<I>, StructField<"inner.n">,
/// HostType<H>, KernelExpects<P>>` (the field's path inside the parameter). A reflected host
/// struct must have the kernel struct's field names, in order
/// (`enqueue_function_struct_field_name_mismatch`), and as many fields
/// (`enqueue_function_struct_field_count_mismatch`, also for the tuple `to_device` returns).
#ifndef EMBER_RUNTIME_DEVICEPASSABLE_H
#define EMBER_RUNTIME_DEVICEPASSABLE_H

#include "ember/dsl/Struct.h"
#include "ember/dsl/Value.h"
#include "ember/runtime/Buffer.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ember {

/// Undefined for types that cannot be passed to a kernel.
template <class H> struct DevicePassable;

template <Scalar H> struct DevicePassable<H> {
    using canonical = typename std::conditional_t<
        std::is_same_v<H, long long>, std::type_identity<int64_t>,
        std::conditional_t<std::is_same_v<H, unsigned long long>, std::type_identity<uint64_t>,
                           std::type_identity<H>>>::type;
    using device_type = Value<canonical>;
    static auto to_device(H v) {
        if constexpr (std::is_same_v<H, bool>) return static_cast<uint8_t>(v);
        else return static_cast<canonical>(v);
    }
};

template <class T> struct DevicePassable<DeviceBuffer<T>> {
    using device_type = Ptr<T>;
    static uint64_t to_device(const DeviceBuffer<T> &b) { return b.address(); }
};

/// Managed and mapped host memory reach a kernel as a pointer, as a DeviceBuffer does
/// (ember/runtime/Memory.h).
template <class T> struct DevicePassable<ManagedBuffer<T>> {
    using device_type = Ptr<T>;
    static uint64_t to_device(const ManagedBuffer<T> &b) { return b.address(); }
};
template <class T> struct DevicePassable<HostMappedBuffer<T>> {
    using device_type = Ptr<T>;
    static uint64_t to_device(const HostMappedBuffer<T> &b) { return b.device_address(); }
};

namespace detail {
template <class H>
concept HasDevicePassable = requires { typename DevicePassable<std::remove_cvref_t<H>>::device_type; };

/// True when a host value of device type `From` may be passed for a parameter of type `To`.
template <class From, class To> struct widens : std::false_type {};
template <class T> struct widens<T, T> : std::true_type {};
template <class U, class T>
    requires(!std::is_same_v<U, T>)
struct widens<Value<U>, Value<T>>
    : std::bool_constant<
          (std::is_integral_v<U> && std::is_integral_v<T> && !std::is_same_v<U, bool> &&
           !std::is_same_v<T, bool> &&
           ((std::is_signed_v<U> == std::is_signed_v<T> && sizeof(U) <= sizeof(T)) ||
            (std::is_unsigned_v<U> && std::is_signed_v<T> && sizeof(U) < sizeof(T)))) ||
          (std::is_same_v<U, float> && std::is_same_v<T, double>)> {};

/// A buffer may be passed where the kernel only reads it.
template <class T> struct widens<Ptr<T>, Ptr<const T>> : std::true_type {};
/// A buffer is passed for a NoAlias pointer as for the pointer itself.
template <class From, class P> struct widens<From, NoAlias<P>> : widens<From, P> {};

template <class P> struct param_repr;
template <Scalar T> struct param_repr<Value<T>> {
    using type = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
};
template <Scalar T> struct param_repr<Ptr<T>> {
    using type = uint64_t;
};
template <Scalar T> struct param_repr<Ptr<const T>> {
    using type = uint64_t;
};
template <class P> struct param_repr<NoAlias<P>> : param_repr<P> {};
} // namespace detail

// Named so that the compiler's "in instantiation of" line reads as the error message.
template <size_t I> struct ArgumentPosition {};
template <class H> struct HostType {};
template <class P> struct KernelExpects {};
template <size_t N> struct KernelTakes {};
template <size_t N> struct ArgumentsGiven {};

template <class Position, class Host, class Expected> struct enqueue_function_argument_mismatch {
    static_assert(detail::always_false<Host>,
                  "enqueue_function: an argument does not match the kernel's parameter: see "
                  "ArgumentPosition (0-based), HostType and KernelExpects in this instantiation");
    static constexpr bool value = false;
};
template <class Host> struct enqueue_function_argument_not_device_passable {
    static_assert(detail::always_false<Host>,
                  "enqueue_function: this host type cannot be passed to a kernel: see HostType "
                  "in this instantiation; specialise ember::DevicePassable<H> for it");
    static constexpr bool value = false;
};
template <class Takes, class Given> struct enqueue_function_argument_count_mismatch {
    static_assert(detail::always_false<Takes>,
                  "enqueue_function: wrong number of kernel arguments: see KernelTakes and "
                  "ArgumentsGiven in this instantiation");
    static constexpr bool value = false;
};

template <detail::FixedString Path> struct StructField {};
template <detail::FixedString Name> struct HostField {};
template <class R> struct ToDeviceReturns {};
template <size_t N> struct HostFields {};
template <size_t N> struct KernelFields {};

template <class Position, class Field, class Host, class Expected> struct enqueue_function_struct_field_mismatch {
    static_assert(detail::always_false<Host>,
                  "enqueue_function: a field of a struct argument does not match the kernel's "
                  "struct: see ArgumentPosition (0-based), StructField (the field), HostType and "
                  "KernelExpects in this instantiation");
    static constexpr bool value = false;
};
template <class Position, class Field, class Host> struct enqueue_function_struct_field_not_device_passable {
    static_assert(detail::always_false<Host>,
                  "enqueue_function: a field of a struct argument has a host type that cannot be "
                  "passed to a kernel: see ArgumentPosition, StructField and HostType in this "
                  "instantiation; specialise ember::DevicePassable<H> for it");
    static constexpr bool value = false;
};
template <class Position, class Field, class HostName> struct enqueue_function_struct_field_name_mismatch {
    static_assert(detail::always_false<HostName>,
                  "enqueue_function: a host struct is passed for a kernel struct field by field, "
                  "by name and in order, but these names differ: see ArgumentPosition, StructField "
                  "(the kernel's field) and HostField (the host struct's field) in this "
                  "instantiation");
    static constexpr bool value = false;
};
template <class Position, class Host, class Expected, class Given, class Takes>
struct enqueue_function_struct_field_count_mismatch {
    static_assert(detail::always_false<Host>,
                  "enqueue_function: a host struct (or the tuple DevicePassable<H>::to_device "
                  "returns) must have one value per field of the kernel's struct: see "
                  "ArgumentPosition, HostType, KernelExpects, HostFields and KernelFields in this "
                  "instantiation");
    static constexpr bool value = false;
};
template <class Host, class Returns, class Expected> struct device_passable_to_device_must_return_the_fields {
    static_assert(detail::always_false<Host>,
                  "DevicePassable<H>::to_device of a struct device_type must return the fields' "
                  "host values, in declaration order: a std::tuple or a struct reflected with "
                  "EMBER_STRUCT; see HostType, ToDeviceReturns and KernelExpects in this "
                  "instantiation");
    static constexpr bool value = false;
};

namespace detail {
template <class T> constexpr bool is_tuple = false;
template <class... T> constexpr bool is_tuple<std::tuple<T...>> = true;

/// What `DevicePassable<H>::to_device` returns, without references.
template <class H>
using to_device_t = std::remove_cvref_t<decltype(DevicePassable<H>::to_device(std::declval<const H &>()))>;

/// The fields of a host value passed for a struct: a std::tuple or a reflected struct.
template <class R> struct host_fields;
template <class... T> struct host_fields<std::tuple<T...>> {
    static constexpr size_t size = sizeof...(T);
    template <size_t I> using type = std::tuple_element_t<I, std::tuple<T...>>;
    template <size_t I> static decltype(auto) get(const std::tuple<T...> &t) { return std::get<I>(t); }
};
template <ReflectedStruct R> struct host_fields<R> {
    static constexpr size_t size = struct_info<R>::size;
    template <size_t I> using type = typename struct_info<R>::template field_type<I>;
    template <size_t I> static decltype(auto) get(const R &r) { return struct_info<R>::template get<I>(r); }
};
/// A std::reference_wrapper in a tuple (std::cref(buffer)) stands for what it refers to.
template <class X> const X &unwrap(const X &x) { return x; }
template <class X> const X &unwrap(const std::reference_wrapper<X> &x) { return x.get(); }
template <class X> struct unwrapped {
    using type = std::remove_cvref_t<X>;
};
template <class X> struct unwrapped<std::reference_wrapper<X>> {
    using type = std::remove_cv_t<X>;
};
template <class X> using unwrapped_t = typename unwrapped<std::remove_cvref_t<X>>::type;

template <bool Report, size_t Pos, auto Path, class P, class H> constexpr bool check_value();

template <bool Report, size_t Pos, auto Path, class P, class R, size_t I> constexpr bool check_field() {
    constexpr auto name = struct_info<P>::template name<I>;
    constexpr auto path = join_path(Path, name);
    using F = std::remove_cv_t<typename struct_info<P>::template field_type<I>>;
    if constexpr (ReflectedStruct<R>) {
        constexpr auto host_name = struct_info<R>::template name<I>;
        if constexpr (host_name.view() != name.view())
            return report<Report, enqueue_function_struct_field_name_mismatch<ArgumentPosition<Pos>, StructField<path>,
                                                               HostField<host_name>>>();
        else
            return check_value<Report, Pos, path, F, typename host_fields<R>::template type<I>>();
    } else {
        return check_value<Report, Pos, path, F, typename host_fields<R>::template type<I>>();
    }
}

template <bool Report, class R> constexpr bool host_fields_ok() {
    if constexpr (ReflectedStruct<R>) return struct_info<R>::template check<Report>();
    else return true;
}

template <bool Report, size_t Pos, auto Path, class P, class R> constexpr bool check_fields() {
    constexpr size_t n = struct_info<P>::size;
    if constexpr (!host_fields_ok<false, R>()) {
        return host_fields_ok<Report, R>();
    } else if constexpr (host_fields<R>::size != n) {
        return report<Report, enqueue_function_struct_field_count_mismatch<ArgumentPosition<Pos>, HostType<R>, KernelExpects<P>,
                                                             HostFields<host_fields<R>::size>, KernelFields<n>>>();
    } else {
        return []<size_t... I>(std::index_sequence<I...>) {
            return (check_field<Report, Pos, Path, P, R, I>() && ...);
        }(std::make_index_sequence<n>{});
    }
}

/// Checks a host value of type H for P, at argument Pos, field Path ("" for the argument itself).
template <bool Report, size_t Pos, auto Path, class P, class H> constexpr bool check_value() {
    using HD = unwrapped_t<H>;
    constexpr bool top = Path.length == 0;
    if constexpr (ReflectedStruct<P>) {
        if constexpr (HasDevicePassable<HD>) {
            if constexpr (!std::is_same_v<typename DevicePassable<HD>::device_type, P>) {
                if constexpr (top)
                    return report<Report, enqueue_function_argument_mismatch<ArgumentPosition<Pos>, HostType<HD>, KernelExpects<P>>>();
                else
                    return report<Report, enqueue_function_struct_field_mismatch<ArgumentPosition<Pos>, StructField<Path>, HostType<HD>,
                                                                  KernelExpects<P>>>();
            } else if constexpr (!is_tuple<to_device_t<HD>> && !ReflectedStruct<to_device_t<HD>>) {
                return report<Report, device_passable_to_device_must_return_the_fields<HostType<HD>, ToDeviceReturns<to_device_t<HD>>,
                                                                        KernelExpects<P>>>();
            } else {
                return check_fields<Report, Pos, Path, P, to_device_t<HD>>();
            }
        } else if constexpr (ReflectedStruct<HD> || (!top && is_tuple<HD>)) {
            return check_fields<Report, Pos, Path, P, HD>();
        } else if constexpr (top) {
            return report<Report, enqueue_function_argument_not_device_passable<HostType<HD>>>();
        } else {
            return report<Report, enqueue_function_struct_field_not_device_passable<ArgumentPosition<Pos>, StructField<Path>,
                                                                     HostType<HD>>>();
        }
    } else if constexpr (!HasDevicePassable<HD>) {
        if constexpr (top)
            return report<Report, enqueue_function_argument_not_device_passable<HostType<HD>>>();
        else
            return report<Report, enqueue_function_struct_field_not_device_passable<ArgumentPosition<Pos>, StructField<Path>,
                                                                     HostType<HD>>>();
    } else if constexpr (!widens<typename DevicePassable<HD>::device_type, P>::value) {
        if constexpr (top)
            return report<Report, enqueue_function_argument_mismatch<ArgumentPosition<Pos>, HostType<HD>, KernelExpects<P>>>();
        else
            return report<Report, enqueue_function_struct_field_mismatch<ArgumentPosition<Pos>, StructField<Path>, HostType<HD>,
                                                          KernelExpects<P>>>();
    } else {
        return true;
    }
}

/// Whether argument I (host type H) is acceptable for kernel parameter P. With Report, a mismatch
/// instantiates its error type, whose static_assert is the diagnostic; without, it only answers,
/// so that the answer stays a constant expression (clang treats a function whose instantiation
/// failed a static_assert as not constant, and would add two errors about the caller).
template <bool Report, size_t I, class P, class H> constexpr bool check_argument() {
    return check_value<Report, I, FixedString<1>{""}, P, H>();
}

/// The bytes parameter P receives for host value h.
template <class P, class H> typename param_repr<P>::type to_param(const H &h) {
    using HD = std::remove_cvref_t<H>;
    return static_cast<typename param_repr<P>::type>(DevicePassable<HD>::to_device(h));
}

/// How many kernel parameters (IR parameters) P becomes: one, or one per field of a struct.
template <class P> constexpr size_t flat_size() {
    if constexpr (ReflectedStruct<P>) {
        return []<size_t... I>(std::index_sequence<I...>) {
            return (size_t{0} + ... + flat_size<std::remove_cv_t<typename struct_info<P>::template field_type<I>>>());
        }(std::make_index_sequence<struct_info<P>::size>{});
    } else {
        return 1;
    }
}
/// The index of the first flattened parameter of parameter I among P...
template <size_t I, class... P> constexpr size_t flat_offset() {
    constexpr size_t sizes[] = {flat_size<P>()..., 0};
    size_t o = 0;
    for (size_t k = 0; k < I; ++k) o += sizes[k];
    return o;
}
/// The parameters P... become, flattened: a std::tuple of Value<T> and pointer types.
template <class P> struct flat_one;
template <class... P> struct flat_params {
    using type = decltype(std::tuple_cat(std::declval<typename flat_one<P>::type>()...));
};
template <class... P> using flat_params_t = typename flat_params<P...>::type;
template <class P> struct flat_one {
    using type = std::tuple<P>;
};
template <ReflectedStruct P> struct flat_one<P> {
    template <size_t... I>
    static auto fields(std::index_sequence<I...>)
        -> flat_params_t<std::remove_cv_t<typename struct_info<P>::template field_type<I>>...>;
    using type = decltype(fields(std::make_index_sequence<struct_info<P>::size>{}));
};
/// The index of the first flattened parameter of field I of struct P, counted from P's first.
template <class P, size_t I> constexpr size_t field_offset() {
    return []<size_t... K>(std::index_sequence<K...>) {
        return (size_t{0} + ... + flat_size<std::remove_cv_t<typename struct_info<P>::template field_type<K>>>());
    }(std::make_index_sequence<I>{});
}
template <class Tuple> struct repr_tuple;
template <class... L> struct repr_tuple<std::tuple<L...>> {
    using type = std::tuple<typename param_repr<L>::type...>;
};

/// Converts host value `h` for P into `out` (the representations of the flattened parameters),
/// starting at parameter Off; `check(host_value, field)` sees every leaf value first (buffer
/// checks), `field` being its path in the argument ("" for the argument itself).
template <size_t Off, class P, auto Path, class Reprs, class H, class Check>
void flatten_into(Reprs &out, const H &h, const Check &check);

template <size_t Off, class P, auto Path, class Reprs, class R, class Check>
void flatten_fields(Reprs &out, const R &r, const Check &check) {
    [&]<size_t... I>(std::index_sequence<I...>) {
        (flatten_into<Off + field_offset<P, I>(), std::remove_cv_t<typename struct_info<P>::template field_type<I>>,
                      join_path(Path, struct_info<P>::template name<I>)>(
             out, unwrap(host_fields<R>::template get<I>(r)), check),
         ...);
    }(std::make_index_sequence<struct_info<P>::size>{});
}

template <size_t Off, class P, auto Path, class Reprs, class H, class Check>
void flatten_into(Reprs &out, const H &h, const Check &check) {
    if constexpr (!ReflectedStruct<P>) {
        check(h, Path.c_str());
        std::get<Off>(out) = to_param<P>(h);
    } else if constexpr (HasDevicePassable<H>) {
        const auto &fields = DevicePassable<H>::to_device(h); // a temporary, alive to the end
        flatten_fields<Off, P, Path>(out, fields, check);
    } else {
        flatten_fields<Off, P, Path>(out, h, check);
    }
}
} // namespace detail

} // namespace ember

#endif // EMBER_RUNTIME_DEVICEPASSABLE_H
