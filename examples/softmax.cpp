/// \file
/// Row-wise softmax, one row per block: the block finds the row's maximum, then the sum of
/// exp(x - max), then writes exp(x - max) / sum. Both block-wide reductions are one device
/// function (warp shuffles, then the warps' results in shared memory behind barriers). exp is
/// ember's math library, the same code on every target. Checked against a double-precision
/// host softmax.
#include "ember/ember.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

using namespace ember;

constexpr int64_t block_size = 256;
constexpr int64_t num_warps = block_size / warp_size;

// The maximum (or the sum) of v over the block, in every thread. `scratch` holds one value per
// warp; the barriers make it reusable right after the call.
static const auto block_reduce = device_function(
    "block_reduce", {"scratch", "v", "is_max"}, [](SharedPtr<float> scratch, Float32 v, Bool is_max) {
        Float32 w = select(is_max, warp_max(v), warp_sum(v));
        if_(lane_id() == 0, [&] { scratch[thread_idx.x / warp_size] = w; });
        barrier();
        Var<float> r(scratch[0]);
        for_(1, num_warps, [&](Int k) {
            Float32 x = scratch[k];
            r = select(is_max, max(r, x), r + x);
        });
        barrier();
        return Float32(r);
    });

static const auto softmax = kernel("softmax", {"in", "out", "cols"}, [](Ptr<const float> in, NoAlias<Ptr<float>> out, Int cols) {
    auto scratch = shared_array<float, num_warps>();
    Int row = block_idx.x * cols;
    Var<float> m(-INFINITY);
    for_(thread_idx.x, cols, block_dim.x, [&](Int c) { m = max(m, in[row + c]); });
    Float32 row_max = block_reduce(scratch, m, true);
    Var<float> s(0.0f);
    for_(thread_idx.x, cols, block_dim.x, [&](Int c) { s += exp(in[row + c] - row_max); });
    Float32 inv = 1.0f / block_reduce(scratch, s, false);
    for_(thread_idx.x, cols, block_dim.x, [&](Int c) { out[row + c] = exp(in[row + c] - row_max) * inv; });
});

int main() try {
    DeviceContext ctx;
    const int64_t rows = 512, cols = 1000;
    std::vector<float> in(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) in[i] = static_cast<float>((i * 2654435761) % 20001) / 1000.0f - 10.0f;
    auto din = ctx.enqueue_create_buffer<float>(in.size());
    auto dout = ctx.enqueue_create_buffer<float>(in.size());
    ctx.enqueue_copy(din, in.data());
    ctx.enqueue_function(softmax, din, dout, cols, grid_dim(rows), block_dim(block_size));
    std::vector<float> out(in.size());
    ctx.enqueue_copy(out.data(), dout);
    ctx.synchronize();
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const float *x = &in[r * cols];
        double m = *std::max_element(x, x + cols), sum = 0;
        for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(x[c]) - m);
        for (int64_t c = 0; c < cols; ++c) {
            double want = std::exp(double(x[c]) - m) / sum;
            worst = std::max(worst, std::fabs(out[r * cols + c] - want) / want);
        }
    }
    if (!(worst < 1e-5)) {
        std::cerr << "softmax: relative error " << worst << " (want < 1e-5)\n";
        return 1;
    }
    std::cout << "softmax: " << rows << " rows of " << cols << " on " << ctx.name() << " (" << ctx.api()
              << "): max relative error " << worst << ": OK\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "softmax: " << e.what() << "\n";
    return 1;
}
