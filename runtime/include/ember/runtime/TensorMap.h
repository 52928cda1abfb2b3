/// \file
/// The host's side of TensorMap (ember/dsl/TensorMap.h): `DeviceTensorMap<T>`, a tensor map in
/// device memory, made by `DeviceContext::create_tensor_map` and passed for a `TensorMap<T>`
/// kernel parameter.
///
/// [Note] Tensor maps
/// ==================
/// A tensor map describes a row-major matrix of T in global memory (its base address, `rows` x
/// `cols` elements, rows `row_stride` elements apart) and the box of `box_rows` x `box_cols`
/// elements that one load of the tensor memory accelerator copies to shared memory, the box's
/// rows one after the other (box_cols * sizeof(T) bytes each), their 16-byte chunks permuted by
/// the swizzle. Elements of a box outside the matrix read as zeros. The map's 128 bytes live in
/// device memory (64-byte aligned), where the kernel reads them: on an NVIDIA GPU they are the
/// driver's CUtensorMap (cuTensorMapEncodeTiled; compute capability 9.0 or later), on the CPU
/// device an ember::CpuTensorMap (ember/compiler/CpuAbi.h). AMD GPUs have no tensor memory
/// accelerator. create_tensor_map checks the CUDA driver's rules on every device, so a map
/// accepted on the CPU device is accepted on a GPU.
///
/// The descriptor is written by a copy enqueued on the context's stream, so every later launch
/// on that stream sees it; it refers to the matrix's memory by address, and keeps that memory
/// alive for as long as the map (or a graph that captured a launch with it) exists.
#ifndef EMBER_RUNTIME_TENSORMAP_H
#define EMBER_RUNTIME_TENSORMAP_H

#include "ember/Float16.h"
#include "ember/dsl/TensorMap.h"
#include "ember/runtime/Buffer.h"
#include "ember/runtime/DevicePassable.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ember {

/// How a tensor map lays the rows of a box out in shared memory: `none` as they are; `b32`,
/// `b64` and `b128` permute the 16-byte chunks of each row within spans of 32, 64 or 128 bytes
/// (CUDA's CU_TENSOR_MAP_SWIZZLE_32B/64B/128B), for conflict-free reads of the box's columns. A
/// box row may then have at most that many bytes.
enum class TensorMapSwizzle : uint8_t { none, b32, b64, b128 };

namespace detail {
/// The element types of tensor maps, as CUDA's CUtensorMapDataType has them: 8- and 16-bit
/// integers are copied as unsigned ones (the bits are the same).
enum class TensorMapElement : uint8_t { u8, u16, u32, i32, u64, i64, f16, bf16, f32, f64 };

/// Whether a matrix of T can have a tensor map: the scalar types kernels have, but bool.
template <class T>
constexpr bool tensor_map_element_supported = Scalar<T> && !std::is_same_v<T, bool>;

template <class T> struct create_tensor_map_element_type_is_not_supported {
    static_assert(always_false<T>,
                  "create_tensor_map: the buffer's element type T must be an 8-, 16-, 32- or "
                  "64-bit integer, half, bfloat16, float, double, float8_e4m3 or float8_e5m2");
    static constexpr bool value = false;
};

/// The element type code of a supported T.
template <class T>
    requires tensor_map_element_supported<T>
constexpr TensorMapElement tensor_map_element() {
    if constexpr (std::is_same_v<T, half>) {
        return TensorMapElement::f16;
    } else if constexpr (std::is_same_v<T, bfloat16>) {
        return TensorMapElement::bf16;
    } else if constexpr (std::is_same_v<T, float>) {
        return TensorMapElement::f32;
    } else if constexpr (std::is_same_v<T, double>) {
        return TensorMapElement::f64;
    } else if constexpr (sizeof(T) == 1) {
        return TensorMapElement::u8;
    } else if constexpr (sizeof(T) == 2) {
        return TensorMapElement::u16;
    } else if constexpr (sizeof(T) == 4) {
        return std::is_signed_v<T> ? TensorMapElement::i32 : TensorMapElement::u32;
    } else {
        return std::is_signed_v<T> ? TensorMapElement::i64 : TensorMapElement::u64;
    }
}

/// A tensor map's matrix and box, in elements, as create_tensor_map was asked for them (the row
/// stride resolved).
struct TensorMapShape {
    int64_t rows = 0, cols = 0, row_stride = 0;
    int64_t box_rows = 0, box_cols = 0;
    TensorMapSwizzle swizzle = TensorMapSwizzle::none;
};

/// create_tensor_map for any T: checks the request (LogicError naming what is wrong and the
/// limit), has the context's back end encode the map of the `size` elements of `element_bytes`
/// bytes at `address` in `matrix` (a buffer of `ctx`), and enqueues the copy of its 128 bytes to
/// new device memory on the context's stream. Returns that memory, which keeps `matrix` alive.
DeviceBuffer<uint64_t> create_tensor_map(const std::shared_ptr<ContextImpl> &ctx,
                                         const std::shared_ptr<RawDeviceBuffer> &matrix,
                                         uint64_t address, size_t size, size_t element_bytes,
                                         TensorMapElement element, const TensorMapShape &shape);

/// What a DeviceTensorMap passes for the fields of a TensorMap parameter: its 128 bytes.
struct TensorMapFields {
    const DeviceBuffer<uint64_t> &desc;
};
// Reflected as EMBER_STRUCT would (here, where argument-dependent lookup finds it): a launch
// checks and passes it field by field.
constexpr auto ember_struct_fields(StructTag<TensorMapFields>) {
    return std::make_tuple(make_struct_field<decltype(TensorMapFields::desc)>(
        "desc", [](auto &&s) -> decltype(auto) { return (s.desc); }));
}
constexpr bool ember_struct_in_order(StructTag<TensorMapFields>) { return true; }
} // namespace detail

class DeviceContext;

/// A tensor map of a matrix of T in a DeviceBuffer, in the device memory of one context ([Note]
/// Tensor maps): what a launch passes for a `TensorMap<T>` kernel parameter (its 128 bytes for
/// the parameter's `desc`; a DeviceTensorMap of another element type does not compile). Made by
/// DeviceContext::create_tensor_map. A reference-counted handle, cheap to copy; copies share the
/// map. A default-constructed DeviceTensorMap is empty: no map, every extent 0.
template <class T> class DeviceTensorMap {
public:
    using element_type = T;

    DeviceTensorMap() = default;

    /// The matrix: rows x cols elements, rows row_stride() elements apart.
    int64_t rows() const { return shape_.rows; }
    int64_t cols() const { return shape_.cols; }
    int64_t row_stride() const { return shape_.row_stride; }
    /// The box one load copies: box_rows() x box_cols() elements.
    int64_t box_rows() const { return shape_.box_rows; }
    int64_t box_cols() const { return shape_.box_cols; }
    TensorMapSwizzle swizzle() const { return shape_.swizzle; }
    /// The bytes one load of a box delivers to shared memory (box_rows * box_cols * sizeof(T),
    /// elements outside the matrix included, as zeros): what a kernel tells its memory barrier to
    /// expect (expect_tx) for each load.
    uint32_t box_bytes() const {
        return static_cast<uint32_t>(shape_.box_rows * shape_.box_cols * int64_t(sizeof(T)));
    }
    /// The device memory holding the map: 16 u64, 128 bytes.
    const DeviceBuffer<uint64_t> &storage() const { return storage_; }
    explicit operator bool() const { return static_cast<bool>(storage_); }

private:
    friend class DeviceContext;
    DeviceTensorMap(DeviceBuffer<uint64_t> storage, const detail::TensorMapShape &shape)
        : storage_(std::move(storage)), shape_(shape) {}

    DeviceBuffer<uint64_t> storage_;
    detail::TensorMapShape shape_;
};

/// A DeviceTensorMap<T> reaches a kernel as a TensorMap<T>: the address of its 128 bytes for the
/// struct's one field, `desc`. Through DevicePassable rather than a reflection of its own, so
/// that the element type is checked too: DeviceTensorMap<float> for a TensorMap<bfloat16> stops
/// the build in enqueue_function_argument_mismatch ([Note] Argument checking).
template <class T> struct DevicePassable<DeviceTensorMap<T>> {
    using device_type = TensorMap<T>;
    static detail::TensorMapFields to_device(const DeviceTensorMap<T> &m) { return {m.storage()}; }
};

} // namespace ember

#endif // EMBER_RUNTIME_TENSORMAP_H
