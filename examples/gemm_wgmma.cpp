/// \file
/// Runs the wgmma + TMA GEMM of examples/gemm_wgmma.h on the default device, twice: with single
/// blocks, then in clusters of 2 that share B's slices through multicast copies. C = A Bᵀ for
/// m x k A and n x k B, bf16 (m = n = k = 8192 on a GPU, 256 x 512 x 256 on the CPU device, or
/// the arguments m n k: m a multiple of 128 (of 256 for the clusters), n of 256, k of 64). Each
/// run checks sampled elements of C against double-precision dot products on the host and prints
/// the time and TFLOP/s of the mean of ten launches after a warm-up, measured with device
/// events. It needs a compute capability 9.0 GPU (wgmma is an sm_90a instruction) or the CPU
/// device; elsewhere it says so and exits 0.
#include "gemm_wgmma.h"

#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

using namespace ember;
using namespace gemm_wgmma_example;

// 128 x 256 tiles, 4 stages of slices of 64, blocks (or clusters) in groups of 16 rows. On an
// H200 the single blocks are as fast or faster (bench/README.md).
constexpr int64_t kStages = 4, kBN = 256;
static const auto gemm = make_gemm_wgmma<kStages, kBN, 16>("gemm_wgmma");
static const auto gemm_cluster = make_gemm_wgmma<kStages, kBN, 16, false, 2>("gemm_wgmma_cluster");

int main(int argc, char **argv) try {
    DeviceContext ctx;
    const bool gpu = ctx.api() != "cpu";
    if (gpu && ctx.compute_capability() != std::pair<int, int>{9, 0}) {
        std::cout << "gemm_wgmma: wgmma needs a compute capability 9.0 GPU (sm_90a); " << ctx.name()
                  << " is " << ctx.target() << ": skipped\n";
        return 0;
    }
    const int64_t m = argc > 1 ? std::atoll(argv[1])
                      : gpu    ? 8192
                               : 256,
                  n = argc > 2 ? std::atoll(argv[2])
                      : gpu    ? 8192
                               : 512,
                  k = argc > 3 ? std::atoll(argv[3])
                      : gpu    ? 8192
                               : 256;
    if (m <= 0 || n <= 0 || k <= 0 || m % kBM != 0 || n % kBN != 0 || k % kBK != 0) {
        std::cerr << "gemm_wgmma: m must be a positive multiple of " << kBM << ", n of " << kBN
                  << ", k of " << kBK << "\n";
        return 2;
    }
    std::mt19937 gen(2026);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<bfloat16> a(m * k), b(n * k), c(m * n);
    for (bfloat16 &x : a) x = bfloat16(dist(gen));
    for (bfloat16 &x : b) x = bfloat16(dist(gen));
    auto da = ctx.enqueue_create_buffer<bfloat16>(m * k);
    auto db = ctx.enqueue_create_buffer<bfloat16>(n * k);
    auto dc = ctx.enqueue_create_buffer<bfloat16>(m * n);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    // Boxes of 128 rows of 64 elements (A's slice, and the half of B's slice each block of a
    // cluster copies) and of 256 rows (B's whole slice), swizzled as wgmma reads them.
    auto ma = ctx.create_tensor_map(da, m, k, kBM, kBK, TensorMapSwizzle::b128);
    auto mb = ctx.create_tensor_map(db, n, k, kBN, kBK, TensorMapSwizzle::b128);
    auto mb_half = ctx.create_tensor_map(db, n, k, kBN / 2, kBK, TensorMapSwizzle::b128);
    CompileFunctionOptions opts;
    opts.func_attribute = {
        FuncAttribute::max_dynamic_shared_size_bytes(int(shared_bytes(kStages, kBN)))};
    auto f = ctx.compile_function(gemm, opts);
    auto f_cluster = ctx.compile_function(gemm_cluster, opts);
    for (bool clusters : {false, true}) {
        if (clusters && m % (2 * kBM) != 0) {
            std::cout << "gemm_wgmma, clusters of 2: skipped, m is not a multiple of " << 2 * kBM
                      << "\n";
            continue;
        }
        auto launch = [&](const DeviceContext &on) {
            if (clusters) // one block per tile, block 2p + r the tile r of pair p
                on.enqueue_function(f_cluster, ma, mb_half, dc, m, n, k,
                                    grid_dim(n / kBN * (m / kBM)), block_dim(kThreads),
                                    cluster_dim(2), shared_mem_bytes(shared_bytes(kStages, kBN)));
            else
                on.enqueue_function(f, ma, mb, dc, m, n, k, grid_dim(n / kBN, m / kBM),
                                    block_dim(kThreads),
                                    shared_mem_bytes(shared_bytes(kStages, kBN)));
        };
        ctx.enqueue_memset(dc, bfloat16(0.0f));
        launch(ctx); // warm-up
        const int iters = gpu ? 10 : 1;
        const double seconds = double(ctx.execution_time(launch, iters)) * 1e-9 / iters;
        ctx.enqueue_copy(c.data(), dc);
        ctx.synchronize();

        // 256 sampled elements, and the first row whole: within bf16's rounding of the exact
        // value plus f32 summation error.
        int64_t checked = 0;
        for (int64_t s = 0; s < 256 + n; ++s) {
            const int64_t i = s < n ? 0 : int64_t(gen() % uint64_t(m));
            const int64_t j = s < n ? s : int64_t(gen() % uint64_t(n));
            const Expected want = expected(a, b, k, i, j);
            const double got = double(float(c[i * n + j]));
            if (!want.admits(got)) {
                std::cerr << "gemm_wgmma" << (clusters ? " (clusters of 2)" : "") << ": C[" << i
                          << "][" << j << "] = " << got << ", expected " << want.value << "\n";
                return 1;
            }
            ++checked;
        }
        std::cout << "gemm_wgmma" << (clusters ? ", clusters of 2, " : " ") << m << " x " << n
                  << " x " << k << " on " << ctx.name() << ": " << seconds * 1e3 << " ms, "
                  << 2.0 * double(m) * double(n) * double(k) / seconds / 1e12 << " TFLOP/s ("
                  << checked << " elements checked)\n";
    }
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "gemm_wgmma: " << e.what() << "\n";
    return 1;
}
