/// \file
/// Asynchronous copies to shared memory ([Note] IR semantics: Asynchronous copies) on every
/// device: a double-buffered pipeline over tiles gives the host's sums, a copy whose condition is
/// false writes zeros and reads nothing (its source address lies far outside the buffer), copies
/// of 4, 8 and 16 bytes of several element types land whole, and a misaligned copy fails the
/// launch on the CPU device. On CUDA (sm_80 and later) these run as cp.async.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

constexpr int64_t kCols = 128; // one tile row: 32 threads x 4 floats
constexpr int64_t kRows = 8;   // rows per tile
constexpr int64_t kTiles = 9;  // tiles per block, streamed through two buffers

// Each block sums the kTiles * kRows rows of its slab column by column. Tile t + 1 is copied while
// tile t is summed: async_wait(1) leaves the newest group in flight.
const auto pipelined_sum = kernel(
    "pipelined_sum", {"in", "out"}, [](Ptr<const float> in, Ptr<float> out) {
        auto buf = shared_array<float, 2 * kRows * kCols>();
        Int t = thread_idx.x; // 0 .. 31
        Int slab = block_idx.x * (kTiles * kRows * kCols);
        auto issue = [&](Int tile, Int stage) {
            for (int r = 0; r < kRows; ++r)
                async_copy<4>(buf, stage * (kRows * kCols) + r * kCols + 4 * t, in,
                              slab + tile * (kRows * kCols) + r * kCols + 4 * t);
            async_commit();
        };
        Var<float> s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
        issue(Int(0), Int(0));
        for_(0, kTiles, [&](Int tile) {
            Int stage = tile % 2;
            if_(tile + 1 < kTiles, [&] { issue(tile + 1, 1 - stage); }).else_([&] {
                async_commit();
            });
            async_wait(1);
            barrier();
            for (int r = 0; r < kRows; ++r) {
                // Read another thread's columns, so that the barrier matters.
                Int c = 4 * ((t + 5) % 32);
                Int base = stage * (kRows * kCols) + r * kCols + c;
                s0 += buf[base];
                s1 += buf[base + 1];
                s2 += buf[base + 2];
                s3 += buf[base + 3];
            }
            barrier();
        });
        Int c = 4 * ((t + 5) % 32);
        out[block_idx.x * kCols + c] = s0;
        out[block_idx.x * kCols + c + 1] = s1;
        out[block_idx.x * kCols + c + 2] = s2;
        out[block_idx.x * kCols + c + 3] = s3;
    });

// Thread i copies 4 ints from in[4 i] where i < n and would copy from far beyond the buffer
// otherwise: those copies must write zeros without reading.
const auto edge_copy = kernel("edge_copy", {"in", "out", "n"},
                              [](Ptr<const int32_t> in, Ptr<int32_t> out, Int n) {
                                  auto tile = shared_array<int32_t, 4 * 64>();
                                  Int t = thread_idx.x;
                                  Int src = select(t < n, 4 * t, Int(int64_t(1) << 40));
                                  for (int k = 0; k < 4; ++k) tile[4 * t + k] = -1;
                                  async_copy<4>(tile, 4 * t, in, src, t < n);
                                  async_commit();
                                  async_wait(0);
                                  for (int k = 0; k < 4; ++k) out[4 * t + k] = tile[4 * t + k];
                              });

// 8 bytes as one double, 16 bytes as two, 4 bytes as four int8s, 16 as eight halves.
const auto sizes = kernel(
    "sizes", {"d", "b", "h", "od", "ob", "oh"},
    [](Ptr<double> d, Ptr<int8_t> b, Ptr<half> h, Ptr<double> od, Ptr<int8_t> ob, Ptr<half> oh) {
        auto sd = shared_array<double, 64>();
        auto sb = shared_array<int8_t, 128>();
        auto sh = shared_array<half, 256>();
        Int t = thread_idx.x; // 0 .. 31
        async_copy<1>(sd, t, d, t);
        async_copy<2>(sd, 32 + 0 * t, d, 32 + 0 * t); // one thread's worth, repeated
        async_copy<4>(sb, 4 * t, b, 4 * t);
        async_copy<8>(sh, 8 * t, h, 8 * t);
        async_commit();
        async_wait(0);
        barrier();
        od[t] = sd[(t + 1) % 32];
        if_(t < 2, [&] { od[32 + t] = sd[32 + t]; });
        for (int k = 0; k < 4; ++k) ob[4 * t + k] = sb[4 * ((t + 1) % 32) + k];
        for (int k = 0; k < 8; ++k) oh[8 * t + k] = sh[8 * ((t + 1) % 32) + k];
    });

const auto misaligned = kernel(
    "misaligned_copy", {"in", "out"}, [](Ptr<const float> in, Ptr<float> out) {
        auto tile = shared_array<float, 64>();
        async_copy<4>(tile, 4 * thread_idx.x, in,
                      4 * thread_idx.x + 1); // 4 bytes past a 16-byte boundary
        async_commit();
        async_wait(0);
        out[thread_idx.x] = tile[4 * thread_idx.x];
    });

class AsyncCopyTest : public ember::testing::DeviceTest {};

TEST_P(AsyncCopyTest, DoubleBufferedTilesSumAsTheHost) {
    constexpr int64_t blocks = 3, n = blocks * kTiles * kRows * kCols;
    std::vector<float> in(n), out(blocks * kCols, -1.0f);
    for (int64_t i = 0; i < n; ++i) in[i] = float((i * 7919) % 1000); // sums stay exact in f32
    auto din = ctx().enqueue_create_buffer<float>(n);
    auto dout = ctx().enqueue_create_buffer<float>(blocks * kCols);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(pipelined_sum, din, dout, grid_dim(blocks), block_dim(32));
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t c = 0; c < kCols; ++c) {
            float want = 0;
            for (int64_t r = 0; r < kTiles * kRows; ++r)
                want += in[b * kTiles * kRows * kCols + r * kCols + c];
            ASSERT_EQ(out[b * kCols + c], want) << "block " << b << " column " << c;
        }
}

TEST_P(AsyncCopyTest, AFalseConditionWritesZerosAndReadsNothing) {
    constexpr int64_t threads = 64, n = 37;
    std::vector<int32_t> in(4 * n), out(4 * threads, 7);
    for (int64_t i = 0; i < 4 * n; ++i) in[i] = int32_t(1000 + i);
    auto din = ctx().enqueue_create_buffer<int32_t>(4 * n);
    auto dout = ctx().enqueue_create_buffer<int32_t>(4 * threads);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(edge_copy, din, dout, n, grid_dim(1), block_dim(threads));
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int64_t i = 0; i < 4 * threads; ++i)
        ASSERT_EQ(out[i], i < 4 * n ? in[i] : 0) << "element " << i;
}

TEST_P(AsyncCopyTest, CopiesOfFourEightAndSixteenBytesLandWhole) {
    std::vector<double> d(64), od(64, -1);
    std::vector<int8_t> b(128), ob(128, 0);
    std::vector<half> h(256), oh(256);
    for (int i = 0; i < 64; ++i) d[i] = 0.5 + i;
    for (int i = 0; i < 128; ++i) b[i] = int8_t(i - 64);
    for (int i = 0; i < 256; ++i) h[i] = half(float(i) / 8);
    auto dd = ctx().enqueue_create_buffer<double>(64);
    auto db = ctx().enqueue_create_buffer<int8_t>(128);
    auto dh = ctx().enqueue_create_buffer<half>(256);
    auto dod = ctx().enqueue_create_buffer<double>(64);
    auto dob = ctx().enqueue_create_buffer<int8_t>(128);
    auto doh = ctx().enqueue_create_buffer<half>(256);
    ctx().enqueue_copy(dd, d.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_copy(dh, h.data());
    ctx().enqueue_function(sizes, dd, db, dh, dod, dob, doh, grid_dim(1), block_dim(32));
    ctx().enqueue_copy(od.data(), dod);
    ctx().enqueue_copy(ob.data(), dob);
    ctx().enqueue_copy(oh.data(), doh);
    ctx().synchronize();
    for (int t = 0; t < 32; ++t) {
        ASSERT_EQ(od[t], d[(t + 1) % 32]) << "double " << t;
        for (int k = 0; k < 4; ++k)
            ASSERT_EQ(ob[4 * t + k], b[4 * ((t + 1) % 32) + k]) << "int8 " << t;
        for (int k = 0; k < 8; ++k)
            ASSERT_EQ(float(oh[8 * t + k]), float(h[8 * ((t + 1) % 32) + k])) << "half " << t;
    }
    EXPECT_EQ(od[32], d[32]);
    EXPECT_EQ(od[33], d[33]);
}

TEST_P(AsyncCopyTest, AMisalignedCopyFailsTheLaunchOnTheCpu) {
    if (GetParam() != "cpu")
        GTEST_SKIP() << "a misaligned cp.async faults the CUDA context, which later tests share";
    auto din = ctx().enqueue_create_buffer<float>(256);
    auto dout = ctx().enqueue_create_buffer<float>(32);
    try {
        ctx().enqueue_function(misaligned, din, dout, grid_dim(1), block_dim(16));
        ctx().synchronize();
        FAIL() << "a misaligned 16-byte async_copy ran";
    } catch (const LaunchError &e) {
        EXPECT_NE(std::string(e.what()).find("misaligned"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, AsyncCopyTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
