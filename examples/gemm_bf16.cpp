/// \file
/// Runs the bf16 tensor-core GEMM of examples/gemm_bf16.h on the default device: C = A B for
/// m x k and k x n bf16 matrices (m = n = k = 8192 on a GPU, 256 on the CPU device, or the
/// arguments m n k: m and n multiples of 128, k of 32), checks sampled elements of C against
/// double-precision dot products on the host, and prints the time and TFLOP/s of the mean of ten
/// launches after a warm-up, measured with device events.
#include "gemm_bf16.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace ember;
using namespace gemm_bf16_example;

// 128 x 128 tiles, slices of 32 through 4 stages, blocks in groups of 8 rows, 2 blocks per
// multiprocessor: the fastest of the shapes tried on an H200 (bench/README.md).
constexpr int64_t kStages = 4, kSlice = 32, kBN = 128;
static const auto gemm = make_gemm_bf16<kStages, kSlice, 8, kBN, 2>("gemm_bf16");

int main(int argc, char **argv) try {
    DeviceContext ctx;
    const bool gpu = ctx.api() != "cpu";
    const int64_t def = gpu ? 8192 : 256;
    const int64_t m = argc > 1 ? std::atoll(argv[1]) : def,
                  n = argc > 2 ? std::atoll(argv[2]) : def,
                  k = argc > 3 ? std::atoll(argv[3]) : def;
    if (m <= 0 || n <= 0 || k <= 0 || m % kBM != 0 || n % kBN != 0 || k % 32 != 0) {
        std::cerr << "gemm_bf16: m must be a positive multiple of " << kBM << ", n of " << kBN
                  << ", k of 32"
                  << "\n";
        return 2;
    }
    std::mt19937 gen(2026);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<bfloat16> a(m * k), b(k * n), c(m * n);
    for (bfloat16 &x : a) x = bfloat16(dist(gen));
    for (bfloat16 &x : b) x = bfloat16(dist(gen));
    auto da = ctx.enqueue_create_buffer<bfloat16>(m * k);
    auto db = ctx.enqueue_create_buffer<bfloat16>(k * n);
    auto dc = ctx.enqueue_create_buffer<bfloat16>(m * n);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    // 74 KiB of dynamic shared memory: more than a kernel gets without opting in.
    CompileFunctionOptions opts;
    opts.func_attribute = {
        FuncAttribute::max_dynamic_shared_size_bytes(int(shared_bytes(kStages, kSlice, kBN)))};
    auto f = ctx.compile_function(gemm, opts);
    auto launch = [&](const DeviceContext &on) {
        on.enqueue_function(f, da, db, dc, m, n, k, grid_dim(n / kBN, m / kBM),
                            block_dim(threads(kBN)),
                            shared_mem_bytes(shared_bytes(kStages, kSlice, kBN)));
    };
    launch(ctx); // warm-up
    const int iters = gpu ? 10 : 1;
    const double seconds = double(ctx.execution_time(launch, iters)) * 1e-9 / iters;
    ctx.enqueue_copy(c.data(), dc);
    ctx.synchronize();

    // 256 sampled elements: within bf16's rounding of the exact value plus f32 summation error.
    int64_t checked = 0;
    for (int64_t s = 0; s < 256; ++s) {
        const int64_t i = int64_t(gen() % uint64_t(m)), j = int64_t(gen() % uint64_t(n));
        const Expected want = expected(a, b, n, k, i, j);
        const double got = double(float(c[i * n + j]));
        if (!want.admits(got)) {
            std::cerr << "gemm_bf16: C[" << i << "][" << j << "] = " << got << ", expected "
                      << want.value << "\n";
            return 1;
        }
        ++checked;
    }
    std::cout << "gemm_bf16 " << m << " x " << n << " x " << k << " on " << ctx.name() << ": "
              << seconds * 1e3 << " ms, "
              << 2.0 * double(m) * double(n) * double(k) / seconds / 1e12 << " TFLOP/s (" << checked
              << " elements checked)\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "gemm_bf16: " << e.what() << "\n";
    return 1;
}
