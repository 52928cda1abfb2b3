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
///
/// Specialise it for your own types:
///
///   struct Celsius { float degrees; };
///   template <> struct ember::DevicePassable<Celsius> {
///       using device_type = ember::Float32;
///       static float to_device(const Celsius &c) { return c.degrees; }
///   };
///
/// [Note] Argument checking
/// ========================
/// `enqueue_function` checks at C++ compile time that it gets one argument per kernel parameter
/// and that each argument's `device_type` is the parameter's type, or a scalar type that widens
/// to it without loss (a signed integer to a wider signed one, an unsigned one to a wider
/// integer, Float32 to Float64), so that `20` (an `int`) can be passed for an `Int`. A mismatch
/// stops the build in `enqueue_function_argument_mismatch<ArgumentPosition<I>, HostType<H>,
/// KernelExpects<P>>`, which names the position, the host type and the expected type.
#ifndef EMBER_RUNTIME_DEVICEPASSABLE_H
#define EMBER_RUNTIME_DEVICEPASSABLE_H

#include "ember/dsl/Value.h"
#include "ember/runtime/Buffer.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

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

namespace detail {
/// Checks argument I at compile time; true when it is acceptable (else a static_assert fired).
template <size_t I, class P, class H> constexpr bool check_argument() {
    using HD = std::remove_cvref_t<H>;
    if constexpr (!HasDevicePassable<HD>) {
        return enqueue_function_argument_not_device_passable<HostType<HD>>::value;
    } else if constexpr (!widens<typename DevicePassable<HD>::device_type, P>::value) {
        return enqueue_function_argument_mismatch<ArgumentPosition<I>, HostType<HD>,
                                                  KernelExpects<P>>::value;
    } else {
        return true;
    }
}

/// The bytes parameter P receives for host value h.
template <class P, class H> typename param_repr<P>::type to_param(const H &h) {
    using HD = std::remove_cvref_t<H>;
    return static_cast<typename param_repr<P>::type>(DevicePassable<HD>::to_device(h));
}
} // namespace detail

} // namespace ember

#endif // EMBER_RUNTIME_DEVICEPASSABLE_H
