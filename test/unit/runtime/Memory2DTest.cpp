/// \file
/// Pitched 2-D memory, 2-D and 3-D copies, copies between contexts and devices, peer access and
/// IPC handles, on every api. CUDA cases skip with a message where there is no GPU; the two-GPU
/// case (PeerTest.TwoGpus*) where there are fewer than two. Suites: Memory2DTest, PeerTest, IpcTest.
#include "ember/ember.h"

#include "DeviceTest.h"
#include "SelfProcess.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ember;

namespace {

/// out[r * w + c] = 2 * img[r * pitch + c] + 1, over a w x h image with `pitch` elements per row.
const auto read_pitched = kernel("read_pitched", {"img", "pitch", "w", "h", "out"},
                                 [](Ptr<const float> img, Int pitch, Int w, Int h, Ptr<float> out) {
                                     auto i = global_idx.x;
                                     if_(i < w * h, [&] {
                                         auto r = i / w;
                                         auto c = i % w;
                                         out[i] = img[r * pitch + c] * 2.0f + 1.0f;
                                     });
                                 });

/// img[r * pitch + c] = r * 1000 + c, over a w x h image.
const auto write_pitched = kernel("write_pitched", {"img", "pitch", "w", "h"},
                                  [](Ptr<float> img, Int pitch, Int w, Int h) {
                                      auto i = global_idx.x;
                                      if_(i < w * h, [&] {
                                          auto r = i / w;
                                          auto c = i % w;
                                          img[r * pitch + c] = cast<float>(r * 1000 + c);
                                      });
                                  });

const auto add_int = kernel("add_int", {"v", "n", "k"}, [](Ptr<int32_t> v, Int n, Int32 k) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += k; });
});

constexpr float kSentinel = -7.0f;

std::string what_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const LogicError &e) {
        return e.what();
    } catch (const std::exception &e) {
        return std::string("unexpected exception type: ") + e.what();
    }
    return "no error";
}

#define EXPECT_LOGIC_ERROR(stmt, needle)                                                                    \
    do {                                                                                                    \
        std::string m_ = what_of([&] { stmt; });                                                            \
        EXPECT_NE(m_.find(needle), std::string::npos) << "message: " << m_;                               \
    } while (0)

class Memory2DTest : public ember::testing::DeviceTest {};

TEST_P(Memory2DTest, PitchedBufferRowsStartAtAMultipleOfThePitch) {
    auto img = ctx().create_pitched_buffer<float>(100, 7);
    EXPECT_TRUE(img);
    EXPECT_EQ(img.width(), 100u);
    EXPECT_EQ(img.height(), 7u);
    EXPECT_EQ(img.width_bytes(), 400u);
    EXPECT_GE(img.pitch(), 400u);
    EXPECT_EQ(img.pitch() % sizeof(float), 0u) << "pitch " << img.pitch();
    EXPECT_EQ(img.pitch_elements() * sizeof(float), img.pitch());
    EXPECT_EQ(img.bytes(), img.pitch() * 7);
    EXPECT_NE(img.address(), 0u);
    if (GetParam() == "cpu") {
        EXPECT_EQ(img.pitch(), 512u); // 400 bytes rounded up to 256
    } else {
        std::printf("cuMemAllocPitch: pitch %zu for rows of 400 bytes\n", img.pitch());
    }
    auto wide = ctx().create_pitched_buffer<double>(1, 3);
    EXPECT_GE(wide.pitch(), 8u);
    EXPECT_LOGIC_ERROR(ctx().create_pitched_buffer<float>(0, 3), "width 0 and height 3");
    EXPECT_LOGIC_ERROR(ctx().create_pitched_buffer<float>(3, 0), "both must be at least 1");
    EXPECT_FALSE(PitchedBuffer<float>());
}

TEST_P(Memory2DTest, Copy2DHostToPitchedAndBackWithOffsets) {
    constexpr size_t W = 37, H = 11;
    std::vector<float> src(W * H);
    std::iota(src.begin(), src.end(), 0.0f);
    auto img = ctx().create_pitched_buffer<float>(W, H);

    Copy2D up;
    up.set_src(src.data(), src.size() * sizeof(float));
    up.set_dst(img);
    up.width_in_bytes = W * sizeof(float);
    up.height = H;
    ctx().enqueue_copy_2d(up);

    // A 10 x 4 window at column 5, row 3 of the image, into a host buffer of 16-element rows at
    // column 2, row 1.
    constexpr size_t DW = 16, DH = 8;
    auto out = ctx().enqueue_create_host_buffer<float>(DW * DH);
    for (float &v : out) v = kSentinel;
    Copy2D down;
    down.set_src(img);
    down.src_x_in_bytes = 5 * sizeof(float);
    down.src_y = 3;
    down.set_dst(out);
    down.dst_pitch = DW * sizeof(float);
    down.dst_x_in_bytes = 2 * sizeof(float);
    down.dst_y = 1;
    down.width_in_bytes = 10 * sizeof(float);
    down.height = 4;
    ctx().copy_2d_sync(down);
    for (size_t r = 0; r < DH; ++r)
        for (size_t c = 0; c < DW; ++c) {
            bool inside = r >= 1 && r < 5 && c >= 2 && c < 12;
            float want = inside ? src[(r - 1 + 3) * W + (c - 2 + 5)] : kSentinel;
            ASSERT_EQ(out[r * DW + c], want) << "row " << r << ", column " << c;
        }
}

TEST_P(Memory2DTest, AKernelReadsAndWritesAPitchedBuffer) {
    constexpr int64_t W = 45, H = 9;
    auto img = ctx().create_pitched_buffer<float>(W, H);
    const int64_t pitch = static_cast<int64_t>(img.pitch_elements());
    ctx().enqueue_function(write_pitched, img, pitch, W, H, grid_dim((W * H + 127) / 128), block_dim(128));
    auto out = ctx().enqueue_create_buffer<float>(W * H);
    ctx().enqueue_function(read_pitched, img, pitch, W, H, out, grid_dim((W * H + 127) / 128), block_dim(128));
    std::vector<float> o(W * H);
    ctx().enqueue_copy(o.data(), out);
    // The pitched image itself, through a 2-D copy into packed host rows.
    std::vector<float> packed(W * H, kSentinel);
    Copy2D c;
    c.set_src(img);
    c.set_dst(packed.data(), packed.size() * sizeof(float));
    c.width_in_bytes = W * sizeof(float);
    c.height = H;
    ctx().copy_2d_sync(c);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t col = 0; col < W; ++col) {
            float v = static_cast<float>(r * 1000 + col);
            ASSERT_EQ(packed[r * W + col], v) << "row " << r << ", column " << col;
            ASSERT_EQ(o[r * W + col], 2 * v + 1) << "row " << r << ", column " << col;
        }
}

TEST_P(Memory2DTest, Copy2DBetweenDeviceBuffersAndPitchedBuffers) {
    constexpr size_t W = 20, H = 6;
    std::vector<int32_t> src(W * H);
    std::iota(src.begin(), src.end(), 100);
    auto packed = ctx().enqueue_create_buffer<int32_t>(W * H);
    ctx().enqueue_copy(packed, src.data());
    auto img = ctx().create_pitched_buffer<int32_t>(W + 3, H + 2);
    // Device (packed) -> pitched, at column 3, row 2.
    Copy2D a;
    a.set_src_device(packed);
    a.set_dst_device(img);
    a.dst_x_in_bytes = 3 * sizeof(int32_t);
    a.dst_y = 2;
    a.width_in_bytes = W * sizeof(int32_t);
    a.height = H;
    ctx().enqueue_copy_2d(a);
    // Pitched -> another device buffer (packed), back from the same window.
    auto back = ctx().enqueue_create_buffer<int32_t>(W * H);
    Copy2D b;
    b.set_src(img);
    b.src_x_in_bytes = 3 * sizeof(int32_t);
    b.src_y = 2;
    b.set_dst(back);
    b.width_in_bytes = W * sizeof(int32_t);
    b.height = H;
    ctx().enqueue_copy_2d(b);
    std::vector<int32_t> out(W * H, -1);
    ctx().enqueue_copy(out.data(), back);
    ctx().synchronize();
    EXPECT_EQ(out, src);
}

TEST_P(Memory2DTest, Copy3DMovesABoxBetweenHostAndDevice) {
    // A 6 x 5 x 4 (bytes x rows x slices) box of a 16 x 7 x 5 host volume at (3, 1, 1), into a
    // device volume of 8-byte rows and 6-row slices at (1, 0, 0), and back into a zeroed copy.
    constexpr size_t SX = 16, SY = 7, SZ = 5;
    std::vector<uint8_t> vol(SX * SY * SZ);
    for (size_t i = 0; i < vol.size(); ++i) vol[i] = static_cast<uint8_t>(i * 7 + 3);
    constexpr size_t DX = 8, DY = 6, DZ = 4;
    auto dev = ctx().enqueue_create_buffer<uint8_t>(DX * DY * DZ);
    Copy3D up;
    up.set_src_host(vol.data(), vol.size());
    up.src_pitch = SX;
    up.src_height = SY;
    up.src_x_in_bytes = 3;
    up.src_y = 1;
    up.src_z = 1;
    up.set_dst_device(dev);
    up.dst_pitch = DX;
    up.dst_height = DY;
    up.dst_x_in_bytes = 1;
    up.width_in_bytes = 6;
    up.height = 5;
    up.depth = 4;
    ctx().enqueue_copy_3d(up);

    std::vector<uint8_t> back(SX * SY * SZ, 0);
    Copy3D down;
    down.set_src(dev);
    down.src_pitch = DX;
    down.src_height = DY;
    down.src_x_in_bytes = 1;
    down.set_dst(back.data(), back.size());
    down.dst_pitch = SX;
    down.dst_height = SY;
    down.dst_x_in_bytes = 3;
    down.dst_y = 1;
    down.dst_z = 1;
    down.width_in_bytes = 6;
    down.height = 5;
    down.depth = 4;
    ctx().copy_3d_sync(down);
    for (size_t z = 0; z < SZ; ++z)
        for (size_t y = 0; y < SY; ++y)
            for (size_t x = 0; x < SX; ++x) {
                size_t i = (z * SY + y) * SX + x;
                bool inside = x >= 3 && x < 9 && y >= 1 && y < 6 && z >= 1 && z < 5;
                ASSERT_EQ(back[i], inside ? vol[i] : 0) << "x " << x << ", y " << y << ", z " << z;
            }

    // The device volume itself: every copied byte where the 3-D layout puts it.
    std::vector<uint8_t> d(DX * DY * DZ);
    ctx().enqueue_copy(d.data(), dev);
    ctx().synchronize();
    for (size_t z = 0; z < 4; ++z)
        for (size_t y = 0; y < 5; ++y)
            for (size_t x = 0; x < 6; ++x)
                ASSERT_EQ(d[(z * DY + y) * DX + x + 1], vol[((z + 1) * SY + y + 1) * SX + x + 3])
                    << "x " << x << ", y " << y << ", z " << z;
}

TEST_P(Memory2DTest, StreamsEnqueue2DAnd3DCopies) {
    DeviceStream s = ctx().create_stream();
    constexpr size_t W = 9, H = 4;
    auto host = ctx().enqueue_create_host_buffer<int16_t>(W * H);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int16_t>(i * 3 - 50);
    auto img = ctx().create_pitched_buffer<int16_t>(W, H);
    Copy2D up;
    up.set_src(host);
    up.set_dst(img);
    up.width_in_bytes = W * sizeof(int16_t);
    up.height = H;
    s.enqueue_copy_2d(up);
    // The same rows as a 3-D copy of 2 slices of 2 rows.
    auto back = ctx().enqueue_create_host_buffer<int16_t>(W * H);
    Copy3D down;
    down.set_src(img);
    down.src_height = 2;
    down.set_dst(back);
    down.dst_height = 2;
    down.width_in_bytes = W * sizeof(int16_t);
    down.height = 2;
    down.depth = 2;
    s.enqueue_copy_3d(down);
    s.synchronize();
    for (size_t i = 0; i < W * H; ++i) ASSERT_EQ(back[i], host[i]) << "element " << i;
}

TEST_P(Memory2DTest, BadRegionsAreLogicErrorsNamingTheField) {
    auto img = ctx().create_pitched_buffer<float>(10, 4); // pitch >= 40 bytes, 4 rows
    auto dev = ctx().enqueue_create_buffer<float>(16);
    std::vector<float> host(64);
    const size_t pitch = img.pitch();

    Copy2D c;
    c.width_in_bytes = 8;
    c.height = 2;
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(c), "enqueue_copy_2d: the source is not set");
    c.set_src(host.data(), host.size() * sizeof(float));
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(c), "the destination is not set");

    c.set_dst(img);
    c.dst_x_in_bytes = pitch - 4;
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(c), "dst_x_in_bytes (" + std::to_string(pitch - 4) +
                                                     ") + width_in_bytes (8) = " + std::to_string(pitch + 4) +
                                                     " exceeds dst_pitch (" + std::to_string(pitch));
    c.dst_x_in_bytes = 0;
    c.dst_y = 3; // rows 3 and 4 of a 4-row image
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(c), "the destination region ends at byte " +
                                                     std::to_string(4 * pitch + 8) + " (dst_x_in_bytes 0, dst_y 3");
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(c), "but the destination PitchedBuffer holds " +
                                                     std::to_string(4 * pitch) + " bytes");
    c.dst_y = 2;
    ctx().enqueue_copy_2d(c); // the last two rows fit

    Copy2D d;
    d.set_src(dev);
    d.set_dst(host.data());
    d.width_in_bytes = 16;
    d.height = 5; // 5 packed rows of 16 bytes: 80 bytes of a 64-byte buffer
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(d), "the source region ends at byte 80");
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(d), "the source DeviceBuffer holds 64 bytes");
    d.height = 4;
    d.src_pitch = 8;
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_2d(d), "src_x_in_bytes (0) + width_in_bytes (16) = 16 exceeds src_pitch (8)");

    Copy3D e;
    e.set_src(host.data(), host.size() * sizeof(float));
    e.set_dst(dev);
    e.width_in_bytes = 4;
    e.height = 3;
    e.depth = 2;
    e.src_height = 2;
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_3d(e), "src_y (0) + height (3) = 3 exceeds src_height (2)");
    e.src_height = 0;
    // Packed slices of 3 rows of 4 bytes in a 64-byte buffer: slices 2 to 4 end at byte 60.
    e.dst_z = 2;
    e.depth = 3;
    ctx().enqueue_copy_3d(e);
    e.depth = 4;
    EXPECT_LOGIC_ERROR(ctx().enqueue_copy_3d(e), "the destination region ends at byte 72");

    EXPECT_LOGIC_ERROR(c.set_src(DeviceBuffer<float>()), "Copy2D::set_src_device: the DeviceBuffer is empty");
    EXPECT_LOGIC_ERROR(c.set_dst(static_cast<void *>(nullptr)), "the host pointer is null");
    ctx().synchronize();
}

TEST_P(Memory2DTest, EnqueueCopyWorksBetweenTwoContexts) {
    DeviceContext other(0, GetParam());
    std::vector<int32_t> v(1000);
    std::iota(v.begin(), v.end(), -300);
    auto mine = ctx().enqueue_create_buffer<int32_t>(v.size());
    auto theirs = other.enqueue_create_buffer<int32_t>(v.size());
    other.enqueue_copy(theirs, v.data());
    ctx().enqueue_copy(mine, theirs); // waits for `other`'s upload first
    std::vector<int32_t> out(v.size(), 0);
    ctx().enqueue_copy(out.data(), mine);
    ctx().synchronize();
    EXPECT_EQ(out, v);
    // The other direction, enqueued on the destination's context, and a foreign buffer to host.
    ctx().enqueue_function(add_int, mine, int64_t(v.size()), int32_t{5}, grid_dim(8), block_dim(128));
    other.enqueue_copy(theirs, mine);
    std::fill(out.begin(), out.end(), 0);
    ctx().enqueue_copy(out.data(), theirs);
    ctx().synchronize();
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], v[i] + 5) << "element " << i;
    // On a stream of the other context, and to a HostBuffer of this one.
    DeviceStream s = other.create_stream();
    auto again = other.enqueue_create_buffer<int32_t>(v.size());
    s.enqueue_copy(again, mine);
    auto h = ctx().enqueue_create_host_buffer<int32_t>(v.size());
    s.enqueue_copy(h, again);
    s.synchronize();
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(h[i], v[i] + 5) << "element " << i;
}

TEST_P(Memory2DTest, TwoContextsOfOneDeviceReachEachOther) {
    DeviceContext other(0, GetParam());
    EXPECT_TRUE(ctx().can_access(other));
    ctx().enable_peer_access(other);
    ctx().enable_peer_access(other); // again: not an error
    ctx().disable_peer_access(other);
    ctx().disable_peer_access(other); // again: not an error
    EXPECT_TRUE(ctx().can_access(other));
}

INSTANTIATE_TEST_SUITE_P(Apis, Memory2DTest, ember::testing::all_apis(), ember::testing::api_name);

// ---------------------------------------------------------------------------------------------
// Between the CPU device and a GPU, and between two GPUs.

void require_gpus(int n) {
    if (detail::cuda_device_count() < n)
        GTEST_SKIP() << "needs " << n << " CUDA device(s); this machine has " << detail::cuda_device_count();
}

TEST(PeerTest, CpuAndCudaBuffersCopyBothWays) {
    require_gpus(1);
    if (::testing::Test::IsSkipped()) return;
    DeviceContext cpu(0, "cpu"), gpu(0, "cuda");
    EXPECT_FALSE(cpu.can_access(gpu));
    EXPECT_FALSE(gpu.can_access(cpu));
    EXPECT_LOGIC_ERROR(cpu.enable_peer_access(gpu), "can_access() is false");
    EXPECT_LOGIC_ERROR(gpu.enable_peer_access(cpu), "can_access() is false");

    constexpr size_t n = 4096;
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), 1);
    auto c = cpu.enqueue_create_buffer<int32_t>(n);
    cpu.enqueue_copy(c, v.data());
    auto g = gpu.enqueue_create_buffer<int32_t>(n);
    gpu.enqueue_copy(g, c); // on the GPU's stream: the CPU buffer is host memory
    gpu.enqueue_function(add_int, g, int64_t(n), int32_t{10}, grid_dim(n / 256), block_dim(256));
    auto c2 = cpu.enqueue_create_buffer<int32_t>(n);
    cpu.enqueue_copy(c2, g); // on the CPU device: done when it returns, after the kernel
    std::vector<int32_t> out(n);
    cpu.enqueue_copy(out.data(), c2);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], v[i] + 10) << "element " << i;

    // A 2-D copy on the GPU with a CPU-device buffer as its host side.
    auto img = gpu.create_pitched_buffer<int32_t>(64, n / 64);
    Copy2D up;
    up.set_src(c);
    up.set_dst(img);
    up.width_in_bytes = 64 * sizeof(int32_t);
    up.height = n / 64;
    gpu.copy_2d_sync(up);
    Copy2D down;
    down.set_src(img);
    down.set_dst(c2);
    down.width_in_bytes = 64 * sizeof(int32_t);
    down.height = n / 64;
    gpu.copy_2d_sync(down);
    cpu.enqueue_copy(out.data(), c2);
    EXPECT_EQ(out, v);
    // The CPU device cannot run a 2-D copy that reaches a GPU's memory.
    EXPECT_LOGIC_ERROR(cpu.enqueue_copy_2d(down), "belongs to cuda:0 but the copy runs on cpu:0");
}

TEST(PeerTest, TwoGpusCopyAndAKernelOnDevice1ReadsDevice0sData) {
    require_gpus(2);
    if (::testing::Test::IsSkipped()) return;
    DeviceContext d0(0, "cuda"), d1(1, "cuda");
    EXPECT_EQ(d1.id(), 1);
    const bool p01 = d0.can_access(d1), p10 = d1.can_access(d0);
    std::printf("peer access: device 0 -> 1: %d, device 1 -> 0: %d\n", p01, p10);
    if (p10) {
        d1.enable_peer_access(d0);
        d1.enable_peer_access(d0); // idempotent
    } else {
        EXPECT_LOGIC_ERROR(d1.enable_peer_access(d0), "can_access() is false");
    }
    if (p01) d0.enable_peer_access(d1);
    EXPECT_TRUE(d0.can_access(d0));

    constexpr size_t n = 1 << 20;
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    auto a = d0.enqueue_create_buffer<int32_t>(n);
    d0.enqueue_copy(a, v.data());
    d0.enqueue_function(add_int, a, int64_t(n), int32_t{1}, grid_dim(n / 256), block_dim(256));
    auto b = d1.enqueue_create_buffer<int32_t>(n);
    d1.enqueue_copy(b, a); // cuMemcpyPeerAsync on device 1's stream, after device 0's kernel
    d1.enqueue_function(add_int, b, int64_t(n), int32_t{100}, grid_dim(n / 256), block_dim(256));
    std::vector<int32_t> out(n);
    d1.enqueue_copy(out.data(), b);
    d1.synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], v[i] + 101) << "element " << i;

    // Back to device 0, enqueued there; and device 1's buffer read to the host through device 0.
    auto a2 = d0.enqueue_create_buffer<int32_t>(n);
    d0.enqueue_copy(a2, b);
    d0.enqueue_function(add_int, a2, int64_t(n), int32_t{1000}, grid_dim(n / 256), block_dim(256));
    d0.enqueue_copy(out.data(), a2);
    d0.synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], v[i] + 1101) << "element " << i;
    std::fill(out.begin(), out.end(), 0);
    d0.enqueue_copy(out.data(), b);
    d0.synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], v[i] + 101) << "element " << i;
    if (p10) {
        d1.disable_peer_access(d0);
        d1.disable_peer_access(d0); // not enabled any more: not an error
        d1.enable_peer_access(d0);
    }

    // A 2-D copy reaches one GPU's memory only.
    auto img = d1.create_pitched_buffer<int32_t>(16, 16);
    Copy2D c;
    c.set_src(a);
    c.set_dst(img);
    c.width_in_bytes = 64;
    c.height = 16;
    EXPECT_LOGIC_ERROR(d1.enqueue_copy_2d(c), "belongs to cuda:0 but the copy runs on cuda:1");
}

// ---------------------------------------------------------------------------------------------
// IPC: a child process (this test binary, with a filter) opens the parent's buffer.

constexpr const char *kHandleVar = "EMBER_TEST_IPC_HANDLE";
constexpr const char *kCountVar = "EMBER_TEST_IPC_COUNT";

/// Runs this binary with only IpcTestChild.ProcessSide and the handle in the environment;
/// returns its exit status (0: its checks passed).
int run_child(const IpcMemHandle &h, size_t n) {
    return ember::testing::run_self("IpcTestChild.ProcessSide", {kHandleVar, kCountVar},
                                    {std::string(kHandleVar) + "=" + h.to_string(),
                                     std::string(kCountVar) + "=" + std::to_string(n)})
        .status;
}

/// The child's side of IpcTest.AChildProcessOpensTheBufferAndWritesIt: skips unless started by it. Opens the handle, checks the
/// parent's values (i * 2), writes i * 3 + 1, and exits through gtest (status 0 when all passed).
TEST(IpcTestChild, ProcessSide) {
    const char *text = std::getenv(kHandleVar);
    const char *count = std::getenv(kCountVar);
    if (!text || !count) GTEST_SKIP() << "the child side of IpcTest.AChildProcessOpensTheBufferAndWritesIt; runs only when that test starts it";
    IpcMemHandle h = IpcMemHandle::from_string(text);
    size_t n = std::strtoull(count, nullptr, 10);
    DeviceContext ctx(0, h.api);
    // More than the buffer (and any allocation granularity) holds.
    EXPECT_LOGIC_ERROR(ctx.open_ipc_buffer<int32_t>(h, size_t{1} << 30), "asked for 4294967296 bytes but the shared buffer has");
    auto buf = ctx.open_ipc_buffer<int32_t>(h, n);
    std::vector<int32_t> v(n);
    ctx.enqueue_copy(v.data(), buf);
    ctx.synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], int32_t(i * 2)) << "element " << i;
    for (size_t i = 0; i < n; ++i) v[i] = int32_t(i * 3);
    ctx.enqueue_copy(buf, v.data());
    ctx.enqueue_function(add_int, buf, int64_t(n), int32_t{1}, grid_dim((n + 255) / 256), block_dim(256));
    ctx.synchronize();
}

class IpcTest : public ember::testing::DeviceTest {};

TEST_P(IpcTest, AChildProcessOpensTheBufferAndWritesIt) {
    constexpr size_t n = 10000;
    auto buf = ctx().create_ipc_buffer<int32_t>(n);
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = int32_t(i * 2);
    ctx().enqueue_copy(buf, v.data());
    ctx().synchronize();
    IpcMemHandle h = ctx().ipc_handle(buf);
    EXPECT_EQ(h.api, GetParam());
    ASSERT_EQ(run_child(h, n), 0) << "the child process failed (its output is above)";
    std::fill(v.begin(), v.end(), 0);
    ctx().enqueue_copy(v.data(), buf);
    ctx().synchronize();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], int32_t(i * 3 + 1)) << "element " << i;
}

TEST_P(IpcTest, HandlesRoundTripThroughTextAndMisuseIsALogicError) {
    auto buf = ctx().create_ipc_buffer<float>(64);
    IpcMemHandle h = ctx().ipc_handle(buf);
    std::string s = h.to_string();
    EXPECT_EQ(s.size(), GetParam().size() + 1 + 128) << s;
    EXPECT_EQ(IpcMemHandle::from_string(s), h);
    EXPECT_LOGIC_ERROR(IpcMemHandle::from_string("0123"), "has no api prefix");
    EXPECT_LOGIC_ERROR(IpcMemHandle::from_string("cuda:12"), "2 hex digits after 'cuda:'; a handle has 128");
    EXPECT_LOGIC_ERROR(IpcMemHandle::from_string("cpu:" + std::string(128, 'g')), "'g' is not a hex digit");

    auto pooled = ctx().enqueue_create_buffer<float>(64);
    EXPECT_LOGIC_ERROR(ctx().ipc_handle(pooled), "was not made by create_ipc_buffer");
    EXPECT_LOGIC_ERROR(ctx().ipc_handle(DeviceBuffer<float>()), "the DeviceBuffer is empty");
    EXPECT_LOGIC_ERROR(ctx().create_ipc_buffer<float>(0), "needs at least one");
    IpcMemHandle foreign = h;
    foreign.api = GetParam() == "cpu" ? "cuda" : "cpu";
    EXPECT_LOGIC_ERROR(ctx().open_ipc_buffer<float>(foreign, 64), "open it on a device of the same api");
    DeviceContext other(0, GetParam());
    EXPECT_LOGIC_ERROR(other.ipc_handle(buf), "ask its own context");
}

// CUDA does not let a process open its own IPC handles; the CPU device does.
TEST(IpcTestCpu, OpensItsOwnHandleInProcess) {
    DeviceContext cpu(0, "cpu");
    auto buf = cpu.create_ipc_buffer<int64_t>(100);
    std::vector<int64_t> v(100, 42);
    cpu.enqueue_copy(buf, v.data());
    {
        auto view = cpu.open_ipc_buffer<int64_t>(cpu.ipc_handle(buf), 100);
        EXPECT_NE(view.address(), buf.address()); // a second mapping of the same memory
        cpu.enqueue_function(kernel("add_i64", {"v", "n"},
                                      [](Ptr<int64_t> p, Int n) {
                                          auto i = global_idx.x;
                                          if_(i < n, [&] { p[i] += 1; });
                                      }),
                               view, int64_t(100), grid_dim(1), block_dim(128));
        EXPECT_LOGIC_ERROR(cpu.open_ipc_buffer<int64_t>(cpu.ipc_handle(buf), 101),
                           "asked for 808 bytes but the shared buffer has 800");
    }
    cpu.enqueue_copy(v.data(), buf);
    for (int64_t x : v) ASSERT_EQ(x, 43);
}

INSTANTIATE_TEST_SUITE_P(Apis, IpcTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
