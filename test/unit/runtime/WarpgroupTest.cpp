/// \file
/// Hopper's asynchronous tensor operations ([Note] IR semantics: Warpgroup matrix
/// multiply-accumulate, Memory barriers and the tensor memory accelerator) on the CPU device and
/// a compute capability 9.0 GPU, against the host: wgmma over tiles written into shared memory in
/// the 128-byte swizzled layout (bf16 with N = 64, f16 with N = 256, and an MN-major B with N =
/// 128 and 256, accumulating over four k steps), TMA boxes with and without the 128-byte swizzle,
/// partly outside the matrix (zeros), completing on an mbarrier, a warp operation while other
/// threads wait at an mbarrier, and, on the CPU device, the LaunchErrors of an mbarrier wait no
/// thread can end and of a wgmma operand outside the layout. Values are small integers: the sums
/// are exact in f32 whatever the order, so the tensor cores and the CPU's emulation agree bit for
/// bit.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

class WarpgroupTest : public ember::testing::DeviceTest {
protected:
    /// Whether this device runs the operations; skips the test where it does not.
    bool hopper() {
        if (GetParam() == "cpu") return true;
        if (GetParam() == "hip") return false;
        return ctx().compute_capability() == std::pair<int, int>{9, 0};
    }
};

/// Element (r, c) of a tile of 64-element rows in the 128-byte swizzle: the 8-element chunks of
/// row r permuted by r % 8.
Int swizzled_index(const Int &r, const Int &c) { return r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8; }

/// One warpgroup: A (64 x 64) and B (N x 64), row-major in global memory, go into shared memory
/// swizzled by ordinary stores; four wgmmas (k = 0-15, ..., 48-63) accumulate D = A Bᵀ, which
/// goes to global memory (64 x N) from the accumulator fragments.
template <class T, int N> auto wgmma_kernel(const char *name) {
    return kernel(name, {"a", "b", "d"}, [](Ptr<const T> a, Ptr<const T> b, Ptr<float> d) {
        auto smem = dynamic_shared<T>();
        Int t = thread_idx.x;
        for_(t, Int(64 * 64), Int(128),
             [&](Int e) { smem[swizzled_index(e / 64, e % 64)] = a[e]; });
        for_(t, Int(N * 64), Int(128),
             [&](Int e) { smem[8192 + swizzled_index(e / 64, e % 64)] = b[e]; });
        fence_proxy_async();
        barrier();
        WarpgroupAccumulator<N> acc;
        wgmma_fence(acc);
        for (int64_t kk = 0; kk < 4; ++kk) wgmma(smem, kk * 16, smem, 8192 + kk * 16, acc);
        wgmma_commit();
        wgmma_wait<0>(acc);
        Int lane = t % 32, warp = t / 32;
        Int r = warp * 16 + lane / 4;
        for (int j = 0; j < N / 8; ++j) {
            SIMD<float, 4> v = acc[j].value();
            Int col = j * 8 + 2 * (lane % 4);
            d[r * N + col] = v[0];
            d[r * N + col + 1] = v[1];
            d[(r + 8) * N + col] = v[2];
            d[(r + 8) * N + col + 1] = v[3];
        }
    });
}

/// Runs `kernel` (one warpgroup, `shared` bytes of dynamic shared memory) on A (64 x 64) and B
/// (small integers; N x 64 when `b_mn_major` is false, else 64 x N), and checks D (64 x N)
/// against the host's A Bᵀ or A B, exactly.
template <class T, int N, class K>
void check_product(DeviceContext &ctx, const K &kernel, const char *name, int64_t shared,
                   bool b_mn_major) {
    std::vector<T> a(64 * 64), b(N * 64);
    for (size_t i = 0; i < a.size(); ++i) a[i] = T(float(int(i * 7 % 9) - 4));
    for (size_t i = 0; i < b.size(); ++i) b[i] = T(float(int(i * 5 % 7) - 3));
    auto da = ctx.enqueue_create_buffer<T>(a.size()), db = ctx.enqueue_create_buffer<T>(b.size());
    auto dd = ctx.enqueue_create_buffer<float>(64 * N);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    CompileFunctionOptions opts;
    opts.func_attribute = {FuncAttribute::max_dynamic_shared_size_bytes(int(shared))};
    auto f = ctx.compile_function(kernel, opts);
    ctx.enqueue_function(f, da, db, dd, grid_dim(1), block_dim(128), shared_mem_bytes(shared));
    std::vector<float> d(64 * N);
    ctx.enqueue_copy(d.data(), dd);
    ctx.synchronize();
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < N; ++j) {
            float want = 0;
            for (int q = 0; q < 64; ++q)
                want += float(a[i * 64 + q]) * float(b_mn_major ? b[q * N + j] : b[j * 64 + q]);
            ASSERT_EQ(d[i * N + j], want) << name << ": D[" << i << "][" << j << "]";
        }
}

template <class T, int N> void check_wgmma(DeviceContext &ctx, const char *name) {
    static const auto k = wgmma_kernel<T, N>(name);
    check_product<T, N>(ctx, k, name, (8192 + N * 64) * 2, false);
}

/// The same with B row-major (64 x N, k rows) in shared memory MN-major: groups of 64 columns,
/// each 64 rows of 128 bytes swizzled, 8 KiB apart; the k step is 16 rows (2 KiB).
template <int N> auto wgmma_mn_kernel(const char *name) {
    return kernel(name, {"a", "b", "d"},
                  [](Ptr<const bfloat16> a, Ptr<const bfloat16> b, Ptr<float> d) {
                      auto smem = dynamic_shared<bfloat16>();
                      Int t = thread_idx.x;
                      for_(t, Int(64 * 64), Int(128),
                           [&](Int e) { smem[swizzled_index(e / 64, e % 64)] = a[e]; });
                      for_(t, Int(64 * N), Int(128), [&](Int e) {
                          Int k = e / N, c = e % N;
                          smem[4096 + c / 64 * 4096 + swizzled_index(k, c % 64)] = b[e];
                      });
                      fence_proxy_async();
                      barrier();
                      WarpgroupAccumulator<N> acc;
                      wgmma_fence(acc);
                      for (int64_t kk = 0; kk < 4; ++kk)
                          wgmma(smem, kk * 16, smem, 4096 + kk * 16 * 64, acc, MnMajor{8192});
                      wgmma_commit();
                      wgmma_wait<0>(acc);
                      // Fragment j of warp w: columns 8j to 8j + 7 of rows 16w to 16w + 15.
                      Int warp = t / 32;
                      for (int j = 0; j < N / 8; ++j) acc[j].store(d, warp * 16 * N + j * 8, N);
                  });
}

template <int N> void check_wgmma_mn(DeviceContext &ctx, const char *name) {
    static const auto k = wgmma_mn_kernel<N>(name);
    check_product<bfloat16, N>(ctx, k, name, 8192 + (N / 64) * 8192, true);
}

TEST_P(WarpgroupTest, WgmmaWithAnMnMajorBGivesTheHostsProduct) {
    if (!hopper()) GTEST_SKIP() << "wgmma needs a compute capability 9.0 GPU or the CPU device";
    check_wgmma_mn<128>(ctx(), "wgmma_mn_n128");
    check_wgmma_mn<256>(ctx(), "wgmma_mn_n256");
}

TEST_P(WarpgroupTest, WgmmaGivesTheHostsProduct) {
    if (!hopper()) GTEST_SKIP() << "wgmma needs a compute capability 9.0 GPU or the CPU device";
    check_wgmma<bfloat16, 64>(ctx(), "wgmma_bf16_n64");
    check_wgmma<half, 256>(ctx(), "wgmma_f16_n256");
}

/// Thread 0 loads the box of `map` at (x, y) (64 x 64 bf16) through the TMA; every thread waits
/// for it on the mbarrier, then the block copies it to `out` in row-major order, reading the
/// shared tile swizzled or not.
template <bool Swizzled> auto tma_kernel(const char *name) {
    return kernel(name, {"map", "out", "x", "y"},
                  [](TensorMap<bfloat16> map, Ptr<bfloat16> out, Int x, Int y) {
                      auto smem = dynamic_shared<bfloat16>();
                      auto bar = dynamic_shared<uint64_t>();
                      Int t = thread_idx.x;
                      if_(t == 0, [&] { mbarrier_init(bar, 1024, 1); });
                      barrier();
                      if_(t == 0, [&] {
                          mbarrier_expect_tx(bar, 1024, 64 * 64 * 2);
                          tma_load(smem, 0, map, x, y, bar, 1024);
                      });
                      mbarrier_wait(bar, 1024, 0);
                      for_(t, Int(64 * 64), Int(128), [&](Int e) {
                          out[e] = smem[Swizzled ? swizzled_index(e / 64, e % 64) : Int(e)];
                      });
                  });
}

TEST_P(WarpgroupTest, TmaLoadsBoxesSwizzledOrNotWithZerosOutsideTheMatrix) {
    if (!hopper()) GTEST_SKIP() << "the TMA needs a compute capability 9.0 GPU or the CPU device";
    static const auto plain = tma_kernel<false>("tma_plain");
    static const auto swizzled_k = tma_kernel<true>("tma_swizzled");
    const int64_t rows = 100, cols = 200;
    std::vector<bfloat16> m(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) m[i] = bfloat16(float(i % 251));
    auto dm = ctx().enqueue_create_buffer<bfloat16>(m.size());
    ctx().enqueue_copy(dm, m.data());
    auto dout = ctx().enqueue_create_buffer<bfloat16>(64 * 64);
    for (bool swizzle : {false, true}) {
        auto map = ctx().create_tensor_map(
            dm, rows, cols, 64, 64, swizzle ? TensorMapSwizzle::b128 : TensorMapSwizzle::none);
        for (auto [x, y] : {std::pair<int64_t, int64_t>{0, 0}, {8, 36}, {160, 64}}) {
            ctx().enqueue_memset(dout, bfloat16(-1.0f));
            ctx().enqueue_function(swizzle ? swizzled_k : plain, map, dout, x, y, grid_dim(1),
                                   block_dim(128), shared_mem_bytes(64 * 64 * 2 + 1024 * 8 + 8));
            std::vector<bfloat16> got(64 * 64);
            ctx().enqueue_copy(got.data(), dout);
            ctx().synchronize();
            for (int64_t r = 0; r < 64; ++r)
                for (int64_t c = 0; c < 64; ++c) {
                    const int64_t gr = y + r, gc = x + c;
                    const float want = gr < rows && gc < cols ? float(m[gr * cols + gc]) : 0.0f;
                    ASSERT_EQ(float(got[r * 64 + c]), want)
                        << "swizzle " << swizzle << ", box at (" << x << ", " << y << "): (" << r
                        << ", " << c << ")";
                }
        }
    }
}

const auto stuck_wait = kernel("stuck_wait", {"out"}, [](Ptr<int32_t> out) {
    auto bar = dynamic_shared<uint64_t>();
    if_(thread_idx.x == 0, [&] { mbarrier_init(bar, 0, 2); });
    barrier();
    if_(thread_idx.x == 0, [&] { mbarrier_arrive(bar, 0); }); // one arrival of the two
    mbarrier_wait(bar, 0, 0);
    out[thread_idx.x] = 1;
});

TEST_P(WarpgroupTest, AnMbarrierWaitNoThreadCanEndIsALaunchErrorOnTheCpu) {
    if (GetParam() != "cpu") GTEST_SKIP() << "a GPU hangs: only the CPU device can tell";
    auto out = ctx().enqueue_create_buffer<int32_t>(64);
    try {
        ctx().enqueue_function(stuck_wait, out, grid_dim(1), block_dim(64), shared_mem_bytes(8));
        ctx().synchronize();
        FAIL() << "a wait for an arrival that never comes returned";
    } catch (const LaunchError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("mbarrier wait that no thread of the block can end"), std::string::npos)
            << what;
        EXPECT_NE(what.find("stuck_wait"), std::string::npos) << what;
    }
}

// Warp 1 sums its lanes (a warp operation) and then arrives; warp 0 waits for that arrival.
const auto sum_then_arrive = kernel("sum_then_arrive", {"out"}, [](Ptr<int32_t> out) {
    auto bar = dynamic_shared<uint64_t>();
    auto total = dynamic_shared<int32_t>();
    Int t = thread_idx.x;
    if_(t == 0, [&] { mbarrier_init(bar, 0, 1); });
    barrier();
    if_(t >= 32, [&] {
        Value<int32_t> s = warp_sum(cast<int32_t>(t));
        if_(t == 32, [&] {
            total[2] = s;
            mbarrier_arrive(bar, 0);
        });
    }).else_([&] {
        mbarrier_wait(bar, 0, 0);
        out[t] = total[2];
    });
});

TEST_P(WarpgroupTest, AWarpOperationRunsWhileOtherThreadsWaitAtAnMbarrier) {
    if (!hopper()) GTEST_SKIP() << "mbarriers need a compute capability 9.0 GPU or the CPU device";
    auto out = ctx().enqueue_create_buffer<int32_t>(32);
    ctx().enqueue_function(sum_then_arrive, out, grid_dim(1), block_dim(64), shared_mem_bytes(16));
    std::vector<int32_t> got(32);
    ctx().enqueue_copy(got.data(), out);
    ctx().synchronize();
    for (int i = 0; i < 32; ++i) ASSERT_EQ(got[i], (32 + 63) * 32 / 2) << i;
}

const auto misplaced_wgmma = kernel("misplaced_wgmma", {"out"}, [](Ptr<float> out) {
    auto smem = dynamic_shared<bfloat16>();
    WarpgroupAccumulator<8> acc;
    wgmma_fence(acc);
    wgmma(smem, 4, smem, 8192, acc); // 8 bytes into a row: not a 16-column boundary
    wgmma_commit();
    wgmma_wait<0>(acc);
    out[thread_idx.x] = acc[0].value()[0];
});

TEST_P(WarpgroupTest, AWgmmaOperandOutsideTheLayoutIsALaunchErrorOnTheCpu) {
    if (GetParam() != "cpu") GTEST_SKIP() << "undefined on a GPU: only the CPU device checks it";
    auto out = ctx().enqueue_create_buffer<float>(128);
    try {
        ctx().enqueue_function(misplaced_wgmma, out, grid_dim(1), block_dim(128),
                               shared_mem_bytes(32768));
        ctx().synchronize();
        FAIL() << "a wgmma of a misplaced operand ran";
    } catch (const LaunchError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("wgmma's operand at shared offset 8"), std::string::npos) << what;
    }
}

/// The warpgroup's wgmma of the first tiles of the dynamic shared memory (A at 0, B at 4096),
/// completed: what makes a kernel one with a wgmma.
void one_wgmma(WarpgroupAccumulator<8> &acc) {
    auto smem = dynamic_shared<bfloat16>();
    wgmma_fence(acc);
    wgmma(smem, 0, smem, 4096, acc);
    wgmma_commit();
    wgmma_wait<0>(acc);
}

// 64-bit divisions in a kernel with a wgmma, which the NVPTX target rewrites ([Note] wgmma and
// 64-bit division): 32-bit where the operands fit, an expansion elsewhere. Each thread divides
// its pairs signed and unsigned after the warpgroup's wgmma.
const auto divide_after_wgmma = kernel(
    "divide_after_wgmma", {"x", "y", "out", "small", "n"},
    [](Ptr<const int64_t> x, Ptr<const int64_t> y, Ptr<int64_t> out, Ptr<int16_t> small, Int n) {
        WarpgroupAccumulator<8> acc;
        one_wgmma(acc);
        for_(Int(thread_idx.x), n, Int(128), [&](Int i) {
            Value<int64_t> a = x[i], b = y[i];
            Value<uint64_t> ua = cast<uint64_t>(a), ub = cast<uint64_t>(b);
            out[4 * i] = a / b;
            out[4 * i + 1] = a % b;
            out[4 * i + 2] = cast<int64_t>(ua / ub);
            out[4 * i + 3] = cast<int64_t>(ua % ub);
            // 16 bits, which PTX would divide with a helper too.
            small[2 * i] = cast<int16_t>(a) / cast<int16_t>(b);
            small[2 * i + 1] = cast<int16_t>(cast<uint16_t>(a) % cast<uint16_t>(b));
        });
    });

TEST_P(WarpgroupTest, SixtyFourBitDivisionsBesideAWgmmaGiveTheHostsResults) {
    if (!hopper()) GTEST_SKIP() << "wgmma needs a compute capability 9.0 GPU or the CPU device";
    const int64_t edges[] = {0,
                             1,
                             -1,
                             2,
                             -2,
                             7,
                             -7,
                             INT16_MIN,
                             65535,
                             INT32_MAX,
                             INT32_MIN,
                             INT32_MAX + int64_t(1),
                             INT32_MIN - int64_t(1),
                             UINT32_MAX,
                             INT64_MAX,
                             INT64_MIN,
                             INT64_MIN + 1,
                             1000000007,
                             -999999937,
                             int64_t(1) << 40};
    std::vector<int64_t> x, y;
    for (int64_t a : edges)
        for (int64_t b : edges) x.push_back(a), y.push_back(b);
    uint64_t state = 2026;
    for (int i = 0; i < 4096; ++i) { // random pairs, some narrow and some wide
        auto next = [&] {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            return state;
        };
        const int shift_a = int(next() >> 58), shift_b = int(next() >> 58);
        x.push_back(int64_t(next()) >> shift_a);
        y.push_back(int64_t(next()) >> shift_b);
    }
    const int64_t n = int64_t(x.size());
    auto dx = ctx().enqueue_create_buffer<int64_t>(n), dy = ctx().enqueue_create_buffer<int64_t>(n);
    auto dout = ctx().enqueue_create_buffer<int64_t>(4 * n);
    auto dsmall = ctx().enqueue_create_buffer<int16_t>(2 * n);
    ctx().enqueue_copy(dx, x.data());
    ctx().enqueue_copy(dy, y.data());
    ctx().enqueue_function(divide_after_wgmma, dx, dy, dout, dsmall, n, grid_dim(1), block_dim(128),
                           shared_mem_bytes(16384));
    std::vector<int64_t> got(4 * n);
    std::vector<int16_t> got_small(2 * n);
    ctx().enqueue_copy(got.data(), dout);
    ctx().enqueue_copy(got_small.data(), dsmall);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) {
        const int64_t a = x[i], b = y[i];
        const uint64_t ua = uint64_t(a), ub = uint64_t(b);
        // [Note] IR semantics: x / 0 == x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0.
        const int64_t q = b == 0 ? 0 : (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
        const int64_t r = b == 0 || b == -1 ? 0 : a % b;
        ASSERT_EQ(got[4 * i], q) << a << " / " << b;
        ASSERT_EQ(got[4 * i + 1], r) << a << " % " << b;
        ASSERT_EQ(uint64_t(got[4 * i + 2]), ub == 0 ? 0 : ua / ub)
            << ua << " / " << ub << " (unsigned)";
        ASSERT_EQ(uint64_t(got[4 * i + 3]), ub == 0 ? 0 : ua % ub)
            << ua << " % " << ub << " (unsigned)";
        const int16_t a16 = int16_t(a), b16 = int16_t(b);
        const uint16_t ua16 = uint16_t(a), ub16 = uint16_t(b);
        const int16_t q16 = b16 == 0                          ? 0
                            : (a16 == INT16_MIN && b16 == -1) ? INT16_MIN
                                                              : int16_t(a16 / b16);
        ASSERT_EQ(got_small[2 * i], q16) << a16 << " / " << b16 << " (16 bits)";
        ASSERT_EQ(uint16_t(got_small[2 * i + 1]), ub16 == 0 ? 0 : uint16_t(ua16 % ub16))
            << ua16 << " % " << ub16 << " (16 bits, unsigned)";
    }
}

// A wgmma kernel that prints calls vprintf, so the JIT serialises its wgmmas and says so.
const auto print_after_wgmma = kernel("print_after_wgmma", {"out"}, [](Ptr<float> out) {
    WarpgroupAccumulator<8> acc;
    one_wgmma(acc);
    if_(thread_idx.x == 1000, [&] { print("never", thread_idx.x); });
    out[thread_idx.x] = acc[0].value()[0];
});

TEST_P(WarpgroupTest, TheJitKeepsTheWgmmasOfAKernelThatDividesAsynchronous) {
    if (GetParam() != "cuda" || !hopper())
        GTEST_SKIP() << "the PTX JIT's report: a compute capability 9.0 GPU only";
    // The report carries what the JIT says of serialised wgmmas: nothing for the kernel whose
    // 64-bit divisions ember inlines, the reason for the one that calls vprintf.
    CompileReport divides = ctx().compile_function(divide_after_wgmma).report();
    EXPECT_TRUE(divides.ptxas_warnings.empty()) << to_string(divides);
    CompileReport prints = ctx().compile_function(print_after_wgmma).report();
    ASSERT_FALSE(prints.ptxas_warnings.empty()) << to_string(prints);
    EXPECT_NE(prints.ptxas_warnings[0].find("serialized"), std::string::npos)
        << prints.ptxas_warnings[0];
}

INSTANTIATE_TEST_SUITE_P(Apis, WarpgroupTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
