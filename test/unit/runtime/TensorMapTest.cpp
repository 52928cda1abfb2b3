/// \file
/// Tensor maps ([Note] Tensor maps in ember/runtime/TensorMap.h) on every device: the CPU
/// device's descriptor read back field by field, every rule of create_tensor_map as a LogicError
/// (the same on every device), a kernel that takes a TensorMap<T> parameter and reads its
/// descriptor, the matrix kept alive by the map, and, on an NVIDIA GPU of compute capability 9.0
/// or later, the driver's encoding of every element type and swizzle.
#include "ember/ember.h"

#include "ember/compiler/CpuAbi.h"

#include "DeviceTest.h"
#include "ExpectError.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace ember;
using ember::testing::expect_logic_error;

namespace {

#define SKIP_WITHOUT_TMA()                                                                         \
    if (const std::string why = no_tma(); !why.empty()) GTEST_SKIP() << why

class TensorMapTest : public ember::testing::DeviceTest {
protected:
    /// Why this device cannot make tensor maps (an NVIDIA GPU below compute capability 9.0), or
    /// "" where it can.
    std::string no_tma() {
        if (ctx().api() == "cpu") return "";
        auto [major, minor] = ctx().compute_capability();
        if (major >= 9) return "";
        return "tensor maps need compute capability 9.0; " + ctx().name() + " has " +
               std::to_string(major) + "." + std::to_string(minor);
    }
    /// The 16 words of a map's descriptor, read back from the device.
    std::vector<uint64_t> words(const DeviceBuffer<uint64_t> &storage) {
        std::vector<uint64_t> w(16, 0xdeadbeef);
        ctx().enqueue_copy(w.data(), storage);
        ctx().synchronize();
        return w;
    }
};

CpuTensorMap as_cpu_map(const std::vector<uint64_t> &w) {
    CpuTensorMap m;
    std::memcpy(static_cast<void *>(&m), w.data(), sizeof m); // trivially copyable
    return m;
}

TEST_P(TensorMapTest, TheCpuDevicesDescriptorHoldsTheMatrixAndTheBox) {
    if (ctx().api() != "cpu") GTEST_SKIP() << "the CpuTensorMap layout is the CPU device's";
    auto buf = ctx().enqueue_create_buffer<float>(100 * 48);
    auto map = ctx().create_tensor_map(buf, 100, 40, 16, 8, TensorMapSwizzle::b32, 48);
    EXPECT_TRUE(map);
    EXPECT_EQ(map.rows(), 100);
    EXPECT_EQ(map.cols(), 40);
    EXPECT_EQ(map.row_stride(), 48);
    EXPECT_EQ(map.box_rows(), 16);
    EXPECT_EQ(map.box_cols(), 8);
    EXPECT_EQ(map.swizzle(), TensorMapSwizzle::b32);
    EXPECT_EQ(map.box_bytes(), 16u * 8u * 4u);
    ASSERT_EQ(map.storage().size(), 16u);
    EXPECT_EQ(map.storage().address() % 64, 0u);

    const std::vector<uint64_t> w = words(map.storage());
    const CpuTensorMap m = as_cpu_map(w);
    EXPECT_EQ(m.magic, CpuTensorMap::kMagic);
    EXPECT_EQ(reinterpret_cast<uint64_t>(m.base), buf.address());
    EXPECT_EQ(m.dims[0], 40u);
    EXPECT_EQ(m.dims[1], 100u);
    EXPECT_EQ(m.row_stride_bytes, 48u * 4u);
    EXPECT_EQ(m.box[0], 8u);
    EXPECT_EQ(m.box[1], 16u);
    EXPECT_EQ(m.element_bytes, 4u);
    EXPECT_EQ(m.swizzle_bytes, 32u);
    // The bytes after the CpuTensorMap are zeros.
    for (size_t i = (sizeof(CpuTensorMap) + 7) / 8; i < 16; ++i)
        EXPECT_EQ(w[i], 0u) << "word " << i;
}

TEST_P(TensorMapTest, TheCpuDevicesDescriptorOfEveryElementTypeAndSwizzle) {
    if (ctx().api() != "cpu") GTEST_SKIP() << "the CpuTensorMap layout is the CPU device's";
    auto check = [&](const auto &map, uint32_t element_bytes, uint32_t swizzle_bytes) {
        const CpuTensorMap m = as_cpu_map(words(map.storage()));
        EXPECT_EQ(m.magic, CpuTensorMap::kMagic);
        EXPECT_EQ(m.element_bytes, element_bytes);
        EXPECT_EQ(m.swizzle_bytes, swizzle_bytes);
        EXPECT_EQ(m.row_stride_bytes, uint64_t(map.cols()) * element_bytes); // the default: cols
        EXPECT_EQ(map.box_bytes(), uint32_t(map.box_rows() * map.box_cols()) * element_bytes);
    };
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<bfloat16>(64 * 128), 64, 128, 64, 64,
                                  TensorMapSwizzle::b128),
          2, 128);
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<half>(64 * 64), 64, 64, 8, 32,
                                  TensorMapSwizzle::b64),
          2, 64);
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<int8_t>(32 * 32), 32, 32, 4, 16), 1,
          0);
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<uint16_t>(32 * 32), 32, 32, 4, 8), 2,
          0);
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<int32_t>(32 * 32), 32, 32, 4, 4), 4,
          0);
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<double>(32 * 32), 32, 32, 4, 2), 8,
          0);
    check(ctx().create_tensor_map(ctx().enqueue_create_buffer<uint64_t>(32 * 32), 32, 32, 2, 16,
                                  TensorMapSwizzle::b128),
          8, 128);
}

TEST_P(TensorMapTest, EveryElementTypeAndSwizzleEncodes) {
    SKIP_WITHOUT_TMA();
    auto encodes = [&](auto element, int64_t box_cols, TensorMapSwizzle swizzle) {
        using T = decltype(element);
        auto buf = ctx().enqueue_create_buffer<T>(256 * 256);
        auto map = ctx().create_tensor_map(buf, 256, 256, 32, box_cols, swizzle);
        EXPECT_TRUE(map);
        EXPECT_EQ(map.box_bytes(), uint32_t(32 * box_cols * int64_t(sizeof(T))));
    };
    encodes(uint8_t{}, 128, TensorMapSwizzle::b128);
    encodes(int8_t{}, 16, TensorMapSwizzle::none);
    encodes(uint16_t{}, 16, TensorMapSwizzle::b32);
    encodes(int16_t{}, 32, TensorMapSwizzle::b64);
    encodes(uint32_t{}, 32, TensorMapSwizzle::b128);
    encodes(int32_t{}, 4, TensorMapSwizzle::none);
    encodes(uint64_t{}, 4, TensorMapSwizzle::b32);
    encodes(int64_t{}, 8, TensorMapSwizzle::b64);
    encodes(half{}, 64, TensorMapSwizzle::b128);
    encodes(bfloat16{}, 64, TensorMapSwizzle::b128);
    encodes(float{}, 32, TensorMapSwizzle::b128);
    encodes(double{}, 256, TensorMapSwizzle::none);
    ctx().synchronize();
}

TEST_P(TensorMapTest, EveryRuleIsALogicError) {
    // The rules are checked before the back end is asked: the same errors on every device.
    auto buf = ctx().enqueue_create_buffer<float>(1024);
    auto make = [&](int64_t rows, int64_t cols, int64_t box_rows, int64_t box_cols,
                    TensorMapSwizzle swizzle = TensorMapSwizzle::none, int64_t row_stride = -1) {
        return [=, this] {
            (void)ctx().create_tensor_map(buf, rows, cols, box_rows, box_cols, swizzle, row_stride);
        };
    };
    expect_logic_error(make(0, 8, 1, 4),
                       {"create_tensor_map", "0 x 8", "at least one row and one column"});
    expect_logic_error(make(8, 0, 1, 4), {"8 x 0", "at least one row and one column"});
    expect_logic_error(make(1, (int64_t(1) << 32) + 4, 1, 4),
                       {"at most 2^32 (4294967296) rows and columns"});
    expect_logic_error(make(8, 8, 0, 4), {"the box is 0 x 4", "1 to 256"});
    expect_logic_error(make(8, 8, 257, 4), {"the box is 257 x 4", "1 to 256"});
    expect_logic_error(make(8, 8, 1, 260), {"the box is 1 x 260", "1 to 256"});
    expect_logic_error(make(8, 8, 1, 6),
                       {"6 elements of 4 bytes, is 24 bytes", "not a multiple of 16 bytes"});
    expect_logic_error(
        make(8, 16, 1, 16, TensorMapSwizzle::b32),
        {"with the 32-byte swizzle a row of the box may have at most 32 bytes", "are 64"});
    expect_logic_error(make(8, 32, 1, 32, TensorMapSwizzle::b64),
                       {"with the 64-byte swizzle", "at most 64 bytes", "are 128"});
    expect_logic_error(make(4, 64, 1, 64, TensorMapSwizzle::b128),
                       {"with the 128-byte swizzle", "at most 128 bytes", "are 256"});
    expect_logic_error(make(256, 256, 256, 256),
                       {"the box, 256 x 256 elements of 4 bytes, is 262144 bytes, more than the",
                        "bytes of shared memory a block can have on this device"});
    expect_logic_error(make(8, 8, 1, 4, static_cast<TensorMapSwizzle>(7)),
                       {"not a TensorMapSwizzle"});
    expect_logic_error(make(8, 8, 1, 4, TensorMapSwizzle::none, 6),
                       {"the row stride 6 is less than the 8 columns"});
    expect_logic_error(
        make(8, 8, 1, 4, TensorMapSwizzle::none, 10),
        {"row stride of 10 elements of 4 bytes is 40 bytes", "not a multiple of 16 bytes"});
    expect_logic_error(make(1, 8, 1, 4, TensorMapSwizzle::none, int64_t(1) << 38),
                       {"not less than 2^40 bytes (1099511627776)"});
    expect_logic_error(
        make(10, 8, 1, 4, TensorMapSwizzle::none, 128),
        {"10 x 8 with a row stride of 128 needs 1160 elements, and the buffer has 1024"});
    expect_logic_error(make(int64_t(1) << 32, 8, 1, 4, TensorMapSwizzle::none, int64_t(1) << 36),
                       {"needs more than 2^64 elements"});
    // A sub-buffer that starts 4 bytes into the allocation.
    expect_logic_error(
        [&] { (void)ctx().create_tensor_map(buf.create_sub_buffer(1, 512), 8, 8, 1, 4); },
        {"the buffer's device address 0x", "is not a multiple of 16 bytes"});
    expect_logic_error([&] { (void)ctx().create_tensor_map(DeviceBuffer<float>(), 8, 8, 1, 4); },
                       {"create_tensor_map", "DeviceBuffer is empty"});
    DeviceContext other(0, GetParam());
    auto theirs = other.enqueue_create_buffer<float>(64);
    expect_logic_error(
        [&] { (void)ctx().create_tensor_map(theirs, 8, 8, 1, 4); },
        {"create_tensor_map: the DeviceBuffer belongs to", "but the call was made on"});
}

TEST_P(TensorMapTest, TheLimitsThemselvesAreAccepted) {
    SKIP_WITHOUT_TMA();
    // The largest box, the widest rows of each swizzle.
    auto big = ctx().enqueue_create_buffer<float>(256 * 256);
    (void)ctx().create_tensor_map(big, 256, 256, 256, 128);
    (void)ctx().create_tensor_map(big, 256, 256, 128, 256);
    (void)ctx().create_tensor_map(big, 256, 256, 256, 8, TensorMapSwizzle::b32);
    (void)ctx().create_tensor_map(big, 256, 256, 256, 16, TensorMapSwizzle::b64);
    (void)ctx().create_tensor_map(big, 256, 256, 256, 32, TensorMapSwizzle::b128);
    ctx().synchronize();
}

TEST_P(TensorMapTest, NotWhileTheStreamCapturesAGraph) {
    SKIP_WITHOUT_TMA();
    auto buf = ctx().enqueue_create_buffer<float>(64);
    ctx().begin_capture();
    expect_logic_error([&] { (void)ctx().create_tensor_map(buf, 8, 8, 1, 4); },
                       {"create_tensor_map is not allowed while", "capturing a graph"});
    (void)ctx().end_capture();
}

// Writes the first two words of the map's descriptor to `out`.
const auto first_words = kernel("tm_first_words", {"map", "out"},
                                [](TensorMap<float> map, Ptr<uint64_t> out) {
                                    if_(thread_idx.x == 0, [&] {
                                        out[0] = map.desc[0];
                                        out[1] = map.desc[1];
                                    });
                                });

TEST_P(TensorMapTest, AKernelTakesTheMapForATensorMapParameter) {
    SKIP_WITHOUT_TMA();
    auto buf = ctx().enqueue_create_buffer<float>(64 * 64);
    auto map = ctx().create_tensor_map(buf, 64, 64, 32, 32);
    auto out = ctx().enqueue_create_buffer<uint64_t>(2);
    ctx().enqueue_function(first_words, map, out, grid_dim(1), block_dim(32));
    std::vector<uint64_t> got(2, 0);
    ctx().enqueue_copy(got.data(), out);
    ctx().synchronize();
    const std::vector<uint64_t> w = words(map.storage());
    EXPECT_EQ(got[0], w[0]);
    EXPECT_EQ(got[1], w[1]);
    if (ctx().api() == "cpu") {
        EXPECT_EQ(got[0], CpuTensorMap::kMagic);
        EXPECT_EQ(got[1], buf.address());
    }
}

TEST_P(TensorMapTest, ALaunchChecksTheMapsMemory) {
    SKIP_WITHOUT_TMA();
    auto out = ctx().enqueue_create_buffer<uint64_t>(2);
    expect_logic_error(
        [&] {
            ctx().enqueue_function(first_words, DeviceTensorMap<float>(), out, grid_dim(1),
                                   block_dim(1));
        },
        {"argument 0 ('map'), field 'desc'", "empty DeviceBuffer"});
    DeviceContext other(0, GetParam());
    auto theirs = other.create_tensor_map(other.enqueue_create_buffer<float>(64), 8, 8, 8, 8);
    expect_logic_error(
        [&] { ctx().enqueue_function(first_words, theirs, out, grid_dim(1), block_dim(1)); },
        {"argument 0 ('map'), field 'desc'", "is a DeviceBuffer of"});
    other.synchronize();
}

TEST_P(TensorMapTest, TheMapKeepsTheMatrixAlive) {
    SKIP_WITHOUT_TMA();
    auto buf = ctx().enqueue_create_buffer<float>(64);
    std::weak_ptr<detail::RawDeviceBuffer> matrix = buf.raw();
    auto map = ctx().create_tensor_map(buf, 8, 8, 8, 8);
    buf = DeviceBuffer<float>();
    EXPECT_FALSE(matrix.expired());
    auto copy = map;
    map = DeviceTensorMap<float>();
    EXPECT_FALSE(map);
    EXPECT_EQ(map.rows(), 0);
    EXPECT_FALSE(matrix.expired());
    copy = DeviceTensorMap<float>();
    ctx().synchronize();
    EXPECT_TRUE(matrix.expired());
}

TEST_P(TensorMapTest, BelowComputeCapability9IsALogicError) {
    if (ctx().api() != "cuda") GTEST_SKIP() << "compute capabilities are NVIDIA's";
    auto [major, minor] = ctx().compute_capability();
    if (major >= 9)
        GTEST_SKIP() << ctx().name() << " has compute capability " << major << "." << minor;
    auto buf = ctx().enqueue_create_buffer<float>(64);
    expect_logic_error([&] { (void)ctx().create_tensor_map(buf, 8, 8, 8, 8); },
                       {"tensor maps (TMA) need compute capability 9.0"});
}

INSTANTIATE_TEST_SUITE_P(Apis, TensorMapTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
