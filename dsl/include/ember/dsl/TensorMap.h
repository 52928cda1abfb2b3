/// \file
/// `TensorMap<T>`: a kernel parameter that refers to a tensor map, the 128-byte descriptor of a
/// row-major matrix of T in global memory from which the tensor memory accelerator copies boxes
/// to shared memory (`cp.async.bulk.tensor`, NVIDIA sm_90; [Note] IR semantics: Memory barriers
/// and the tensor memory accelerator). The host makes the map with
/// `ctx.create_tensor_map(buffer, rows, cols, box_rows, box_cols[, swizzle])` and passes the
/// DeviceTensorMap<T> it returns (ember/runtime/TensorMap.h); `tma_load` reads it.
///
///     auto k = kernel("k", {"a"}, [](TensorMap<bfloat16> a) {
///         ...   // tma_load of a 64 x 64 box of `a` into shared memory
///     });
///     auto map = ctx.create_tensor_map(buf, 4096, 4096, 64, 64, TensorMapSwizzle::b128);
///     ctx.enqueue_function(k, map, grid_dim(...), block_dim(...));
#ifndef EMBER_DSL_TENSORMAP_H
#define EMBER_DSL_TENSORMAP_H

#include "ember/dsl/Struct.h"
#include "ember/dsl/Value.h"

#include <cstdint>
#include <tuple>
#include <type_traits>

namespace ember {

/// A tensor map of a matrix of T, as a kernel parameter: a struct of one field, `desc`, the
/// address of the map's 128 bytes (16 u64) in global memory. The kernel sees nothing else of the
/// matrix: its shape, row stride, the box one load copies and its swizzle are the ones the host
/// created the map with (DeviceContext::create_tensor_map), and T only says which maps a
/// parameter accepts (a DeviceTensorMap<T> of the same T, checked when the C++ program is
/// compiled). The map is opaque (the driver's CUtensorMap on NVIDIA GPUs, ember::CpuTensorMap on
/// the CPU device); `tma_load` is what reads it.
template <class T> struct TensorMap {
    static_assert(Scalar<T> && !std::is_same_v<T, bool>,
                  "TensorMap<T>: T is the matrix's element type, an integer, half, bfloat16, float "
                  "or double, without const (a tensor map is only ever read)");
    using element_type = T;
    /// The map's 128 bytes, in global memory.
    Ptr<const uint64_t> desc;
};

// TensorMap<T> is a struct parameter, for every T ([Note] Structs in ember/dsl/Struct.h).
template <class T> constexpr auto ember_struct_fields(detail::StructTag<TensorMap<T>>) {
    return std::make_tuple(detail::make_struct_field<decltype(TensorMap<T>::desc)>(
        "desc", [](auto &&s) -> decltype(auto) { return (s.desc); }));
}
template <class T> constexpr bool ember_struct_in_order(detail::StructTag<TensorMap<T>>) {
    return true;
}
template <class T, class Make>
TensorMap<T> ember_struct_make(detail::StructTag<TensorMap<T>>, Make &&make) {
    using X = TensorMap<T>;
    return X{.desc = make(std::type_identity<decltype(X::desc)>{}, "desc")};
}

} // namespace ember

#endif // EMBER_DSL_TENSORMAP_H
