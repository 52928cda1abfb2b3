/// \file
/// DeviceContext::create_tensor_map's work for every element type ([Note] Tensor maps in
/// ember/runtime/TensorMap.h): the request checked against the CUDA driver's rules on every
/// device, the map encoded by the back end, its 128 bytes copied to device memory on the
/// context's stream.
#include "ember/runtime/TensorMap.h"

#include "Backend.h"
#include "BackendGraph.h"
#include "ContextImpl.h"

#include "ember/Error.h"
#include "ember/runtime/Launch.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace ember::detail {

namespace {

constexpr const char *kCall = "create_tensor_map";
constexpr int64_t kMaxExtent = int64_t(1) << 32;      // globalDim
constexpr int64_t kMaxBox = 256;                      // boxDim
constexpr int64_t kMaxStrideBytes = int64_t(1) << 40; // globalStrides, exclusive

[[noreturn]] void fail(const std::string &what) {
    throw LogicError(std::string(kCall) + ": " + what);
}

std::string str(int64_t v) { return std::to_string(v); }

std::string extent_pair(int64_t rows, int64_t cols) { return str(rows) + " x " + str(cols); }

uint32_t swizzle_bytes(TensorMapSwizzle s) {
    switch (s) {
    case TensorMapSwizzle::none: return 0;
    case TensorMapSwizzle::b32: return 32;
    case TensorMapSwizzle::b64: return 64;
    case TensorMapSwizzle::b128: return 128;
    }
    fail("the swizzle " + std::to_string(static_cast<int>(s)) +
         " is not a TensorMapSwizzle (none, b32, b64 or b128)");
}

/// Throws LogicError unless the request is one cuTensorMapEncodeTiled accepts (and fits its
/// buffer); `e` is the element's size in bytes.
void check_request(const TensorMapShape &s, int64_t e, uint64_t address, size_t size,
                   int64_t max_shared) {
    if (s.rows < 1 || s.cols < 1)
        fail("the matrix is " + extent_pair(s.rows, s.cols) +
             "; a tensor map needs at least one row and one column");
    if (s.rows > kMaxExtent || s.cols > kMaxExtent)
        fail("the matrix is " + extent_pair(s.rows, s.cols) + "; a tensor map has at most 2^32 (" +
             str(kMaxExtent) + ") rows and columns");
    if (s.box_rows < 1 || s.box_cols < 1 || s.box_rows > kMaxBox || s.box_cols > kMaxBox)
        fail("the box is " + extent_pair(s.box_rows, s.box_cols) +
             "; its rows and columns must each be 1 to " + str(kMaxBox));
    const int64_t box_row_bytes = s.box_cols * e;
    if (box_row_bytes % 16 != 0)
        fail("a row of the box, " + str(s.box_cols) + " elements of " + str(e) + " bytes, is " +
             str(box_row_bytes) + " bytes, which is not a multiple of 16 bytes");
    if (const uint32_t span = swizzle_bytes(s.swizzle); span != 0 && box_row_bytes > span)
        fail("with the " + str(span) + "-byte swizzle a row of the box may have at most " +
             str(span) + " bytes, and " + str(s.box_cols) + " elements of " + str(e) +
             " bytes are " + str(box_row_bytes));
    // One load of the box lands in one block's shared memory (the driver refuses a 256 KiB box).
    if (const int64_t box_bytes = s.box_rows * box_row_bytes; box_bytes > max_shared)
        fail("the box, " + extent_pair(s.box_rows, s.box_cols) + " elements of " + str(e) +
             " bytes, is " + str(box_bytes) + " bytes, more than the " + str(max_shared) +
             " bytes of shared memory a block can have on this device");
    if (s.row_stride < s.cols)
        fail("the row stride " + str(s.row_stride) + " is less than the " + str(s.cols) +
             " columns (rows would overlap)");
    if (s.row_stride >= kMaxStrideBytes / e)
        fail("the row stride of " + str(s.row_stride) + " elements of " + str(e) +
             " bytes is not less than 2^40 bytes (" + str(kMaxStrideBytes) +
             "), a tensor map's limit");
    const int64_t stride_bytes = s.row_stride * e;
    if (stride_bytes % 16 != 0)
        fail("the row stride of " + str(s.row_stride) + " elements of " + str(e) + " bytes is " +
             str(stride_bytes) + " bytes, which is not a multiple of 16 bytes");
    if (address % 16 != 0) {
        char hex[32];
        std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
        fail(std::string("the buffer's device address ") + hex +
             " is not a multiple of 16 bytes (a sub-buffer that starts inside a 16-byte chunk?)");
    }
    // The rule of tile_tensor (ember/runtime/TileTensor.h), in 64 bits: (rows - 1) * row_stride
    // may overflow them (2^32 rows of 2^40 bytes).
    uint64_t need = 0;
    const bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(s.rows - 1),
                                                 static_cast<uint64_t>(s.row_stride), &need) ||
                          __builtin_add_overflow(need, static_cast<uint64_t>(s.cols), &need);
    if (overflow || need > size)
        fail(extent_pair(s.rows, s.cols) + " with a row stride of " + str(s.row_stride) +
             " needs " + (overflow ? std::string("more than 2^64") : std::to_string(need)) +
             " elements, and the buffer has " + std::to_string(size));
}

} // namespace

DeviceBuffer<uint64_t> create_tensor_map(const std::shared_ptr<ContextImpl> &ctx,
                                         const std::shared_ptr<RawDeviceBuffer> &matrix,
                                         uint64_t address, size_t size, size_t element_bytes,
                                         TensorMapElement element, const TensorMapShape &shape) {
    if (!matrix) throw_empty_buffer(kCall, "DeviceBuffer");
    check_same_context(*ctx, *matrix, kCall);
    check_request(shape, static_cast<int64_t>(element_bytes), address, size,
                  ctx->backend->max_shared_memory_per_block_optin());
    BackendStream &stream = *ctx->backend->default_stream();
    reject_while_capturing(stream, *ctx, kCall);

    TensorMapDesc d;
    d.base = address;
    d.rows = static_cast<uint64_t>(shape.rows);
    d.cols = static_cast<uint64_t>(shape.cols);
    d.row_stride_bytes = static_cast<uint64_t>(shape.row_stride) * element_bytes;
    d.box_rows = static_cast<uint32_t>(shape.box_rows);
    d.box_cols = static_cast<uint32_t>(shape.box_cols);
    d.element_bytes = static_cast<uint32_t>(element_bytes);
    d.element = element;
    d.swizzle_bytes = swizzle_bytes(shape.swizzle);
    const TensorMapBytes bytes = ctx->backend->encode_tensor_map(d);

    // The map's memory, seen through a buffer that also owns the matrix's: whatever keeps the
    // map (a DeviceTensorMap, a graph that captured a launch with it) keeps the matrix.
    struct Owners {
        std::shared_ptr<RawDeviceBuffer> map, matrix;
    };
    auto memory = std::make_shared<RawDeviceBuffer>(ctx, sizeof bytes.words);
    const uint64_t at = memory->address();
    auto owners = std::make_shared<const Owners>(Owners{std::move(memory), matrix});
    auto raw = std::make_shared<RawDeviceBuffer>(ctx, at, sizeof bytes.words, std::move(owners));
    // A pageable source: the driver has copied it by the time the call returns (and the CPU
    // device has done the copy).
    enqueue_copy_bytes(*ctx, MemSide::Device, at, ctx.get(), MemSide::Host,
                       reinterpret_cast<uint64_t>(bytes.words), nullptr, sizeof bytes.words);
    return DeviceBuffer<uint64_t>(std::move(raw), 16);
}

} // namespace ember::detail
