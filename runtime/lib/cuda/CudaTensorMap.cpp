/// \file
/// The CUDA back end's tensor maps (class in CudaBackend.h): cuTensorMapEncodeTiled of a 2-D
/// row-major matrix ([Note] Tensor maps in ember/runtime/TensorMap.h). The HIP back end, the same
/// class over HIP's table, has none: AMD GPUs have no tensor memory accelerator.
#include "cuda/CudaBackend.h"

#include "ember/Error.h"

#include <cstdint>
#include <string>

namespace ember::detail {

namespace {

int cuda_data_type(TensorMapElement e) {
    switch (e) {
    case TensorMapElement::u8: return cu::CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case TensorMapElement::u16: return cu::CU_TENSOR_MAP_DATA_TYPE_UINT16;
    case TensorMapElement::u32: return cu::CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case TensorMapElement::i32: return cu::CU_TENSOR_MAP_DATA_TYPE_INT32;
    case TensorMapElement::u64: return cu::CU_TENSOR_MAP_DATA_TYPE_UINT64;
    case TensorMapElement::i64: return cu::CU_TENSOR_MAP_DATA_TYPE_INT64;
    case TensorMapElement::f16: return cu::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case TensorMapElement::bf16: return cu::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case TensorMapElement::f32: return cu::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case TensorMapElement::f64: return cu::CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    }
    EMBER_UNREACHABLE("unknown tensor map element type");
}

int cuda_swizzle(uint32_t bytes) {
    switch (bytes) {
    case 0: return cu::CU_TENSOR_MAP_SWIZZLE_NONE;
    case 32: return cu::CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return cu::CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return cu::CU_TENSOR_MAP_SWIZZLE_128B;
    }
    EMBER_UNREACHABLE("a tensor map swizzle of 0, 32, 64 or 128 bytes");
}

} // namespace

TensorMapBytes CudaBackend::encode_tensor_map(const TensorMapDesc &d) {
    if (drv_.is_hip())
        throw LogicError(
            "create_tensor_map on " + ctx_->where() +
            ": AMD GPUs have no tensor memory accelerator (TMA), so there are no tensor "
            "maps on HIP; they need an NVIDIA GPU of compute capability 9.0 or later (or "
            "the CPU device)");
    const int major = device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                             "compute capability");
    if (major < 9) {
        const int minor = device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                 "compute capability");
        throw LogicError("create_tensor_map: tensor maps (TMA) need compute capability 9.0 or " +
                         std::string("later, and ") + ctx_->where() + " has " +
                         std::to_string(major) + "." + std::to_string(minor));
    }
    if (!drv_.cuTensorMapEncodeTiled)
        throw LogicError(
            "create_tensor_map: the NVIDIA driver (CUDA " + std::to_string(drv_.version() / 1000) +
            "." + std::to_string(drv_.version() % 1000 / 10) +
            ") lacks cuTensorMapEncodeTiled, which CUDA 12.0 brought; update the driver");
    const cu::cuuint64_t dims[2] = {d.cols, d.rows};
    const cu::cuuint64_t strides[1] = {d.row_stride_bytes};
    const cu::cuuint32_t box[2] = {d.box_cols, d.box_rows};
    const cu::cuuint32_t element_strides[2] = {1, 1};
    TensorMapBytes bytes;
    static_assert(sizeof(bytes) == sizeof(cu::CUtensorMap) &&
                  alignof(TensorMapBytes) >= alignof(cu::CUtensorMap));
    ScopedCurrent current(*ctx_);
    const cu::CUresult rc = drv_.cuTensorMapEncodeTiled(
        reinterpret_cast<cu::CUtensorMap *>(bytes.words), cuda_data_type(d.element), 2,
        reinterpret_cast<void *>(static_cast<uintptr_t>(d.base)), dims, strides, box,
        element_strides, cu::CU_TENSOR_MAP_INTERLEAVE_NONE, cuda_swizzle(d.swizzle_bytes),
        cu::CU_TENSOR_MAP_L2_PROMOTION_L2_256B, cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc != cu::CUDA_SUCCESS)
        drv_.check(rc, "cuTensorMapEncodeTiled",
                   " encoding the tensor map of a " + std::to_string(d.rows) + " x " +
                       std::to_string(d.cols) + " matrix of " + std::to_string(d.element_bytes) +
                       "-byte elements at " + cuda_hex(d.base) + " (rows " +
                       std::to_string(d.row_stride_bytes) + " bytes apart), box " +
                       std::to_string(d.box_rows) + " x " + std::to_string(d.box_cols) +
                       ", swizzle " + std::to_string(d.swizzle_bytes) + " bytes, on " +
                       ctx_->where());
    return bytes;
}

} // namespace ember::detail
