/// \file
/// C = A x B for square float matrices, tiled through shared memory: each block computes a 16x16
/// tile of C, loading 16x16 tiles of A and B into shared memory between barriers. Checked against
/// a double-precision product on the host.
#include "ember/ember.h"

#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

using namespace ember;

constexpr int64_t tile = 16;

static const auto matmul = kernel("matmul", {"a", "b", "c", "n"}, [](Ptr<float> a, Ptr<float> b, Ptr<float> c, Int n) {
    auto ta = shared_array<float, tile * tile>();
    auto tb = shared_array<float, tile * tile>();
    auto tx = thread_idx.x, ty = thread_idx.y;
    auto row = block_idx.y * tile + ty;
    auto col = block_idx.x * tile + tx;
    Var<float> acc(0.0f);
    for_(0, (n + tile - 1) / tile, [&](Int k) {
        // Load one tile of A and one of B; zeros outside the matrices.
        Var<float> x(0.0f), y(0.0f);
        auto ac = k * tile + tx, br = k * tile + ty;
        if_(row < n && ac < n, [&] { x = a[row * n + ac]; });
        if_(br < n && col < n, [&] { y = b[br * n + col]; });
        ta[ty * tile + tx] = x;
        tb[ty * tile + tx] = y;
        barrier();
        for (int64_t j = 0; j < tile; ++j) acc += ta[ty * tile + j] * tb[j * tile + tx]; // unrolled
        barrier();
    });
    if_(row < n && col < n, [&] { c[row * n + col] = acc; });
});

int main() try {
    DeviceContext ctx;
    const int64_t n = 200; // not a multiple of the tile: the edges are exercised
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (int64_t i = 0; i < n * n; ++i) {
        a[i] = float((i * 37) % 19) / 8.0f - 1.0f;
        b[i] = float((i * 11) % 23) / 16.0f - 0.5f;
    }
    auto da = ctx.enqueue_create_buffer<float>(n * n);
    auto db = ctx.enqueue_create_buffer<float>(n * n);
    auto dc = ctx.enqueue_create_buffer<float>(n * n);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    const int64_t blocks = (n + tile - 1) / tile;
    ctx.enqueue_function(matmul, da, db, dc, n, grid_dim(blocks, blocks), block_dim(tile, tile));
    ctx.enqueue_copy(c.data(), dc);
    ctx.synchronize();
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (int64_t k = 0; k < n; ++k) want += double(a[i * n + k]) * double(b[k * n + j]);
            worst = std::max(worst, std::abs(want - double(c[i * n + j])));
        }
    // Float accumulation of 200 terms of magnitude <= 1.5: a bound far above rounding, far below
    // any indexing mistake.
    if (worst > 1e-3) {
        std::cerr << "matmul: largest error " << worst << "\n";
        return 1;
    }
    std::cout << "matmul: " << n << "x" << n << " on " << ctx.name() << " (" << ctx.api()
              << "): OK (largest error " << worst << ")\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "matmul: " << e.what() << "\n";
    return 1;
}
