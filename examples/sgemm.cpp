/// \file
/// Runs the warp-tiled SGEMM of examples/sgemm.h on the default device: C = A B for n x n floats
/// (n = 4096 on a GPU, 256 on the CPU device, or the first argument, a multiple of 256), checks
/// sampled elements of C against double-precision dot products on the host, and prints the time and
/// TFLOP/s of the best of five launches.
#include "sgemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace ember;

// The fastest of the two on an H200 (bench/README.md).
static const auto sgemm = sgemm_example::make_sgemm_warptile("sgemm");
constexpr int64_t kRows = 256, kCols = 128; // the C tile of a block

int main(int argc, char **argv) try {
    DeviceContext ctx;
    const bool gpu = ctx.api() != "cpu";
    const int64_t n = argc > 1 ? std::atoll(argv[1]) : gpu ? 4096 : 256;
    if (n <= 0 || n % kRows != 0) {
        std::cerr << "sgemm: n must be a positive multiple of " << kRows << "\n";
        return 2;
    }
    std::mt19937 gen(2026);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (float &x : a) x = dist(gen);
    for (float &x : b) x = dist(gen);
    auto da = ctx.enqueue_create_buffer<float>(n * n);
    auto db = ctx.enqueue_create_buffer<float>(n * n);
    auto dc = ctx.enqueue_create_buffer<float>(n * n);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    auto f = ctx.compile_function(sgemm);

    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        ctx.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        ctx.enqueue_function(f, da, db, dc, n, grid_dim(n / kCols, n / kRows),
                             block_dim(sgemm_example::kThreads));
        ctx.synchronize();
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    ctx.enqueue_copy(c.data(), dc);
    ctx.synchronize();

    // 256 sampled elements (every one for small n) within 1e-5 of the sum of |a b| terms.
    int64_t checked = 0;
    for (int64_t s = 0; s < std::min<int64_t>(n * n, 256); ++s) {
        const int64_t i = n * n <= 256 ? s / n : int64_t(gen() % n),
                      j = n * n <= 256 ? s % n : int64_t(gen() % n);
        double want = 0, mag = 0;
        for (int64_t k = 0; k < n; ++k) {
            want += double(a[i * n + k]) * b[k * n + j];
            mag += std::fabs(double(a[i * n + k]) * b[k * n + j]);
        }
        if (!(std::fabs(c[i * n + j] - want) <= 1e-5 * mag)) {
            std::cerr << "sgemm: C[" << i << "][" << j << "] = " << c[i * n + j] << ", expected "
                      << want << "\n";
            return 1;
        }
        ++checked;
    }
    std::cout << "sgemm " << n << "^3 on " << ctx.name() << ": " << best * 1e3 << " ms, "
              << 2.0 * double(n) * n * n / best / 1e12 << " TFLOP/s (" << checked
              << " elements checked)\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "sgemm: " << e.what() << "\n";
    return 1;
}
