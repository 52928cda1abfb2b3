/// \file
/// The sum of ten million integers: each warp sums its threads' partial sums with shuffles, the
/// warps' results meet in shared memory behind a barrier, the first warp sums those, and each
/// block adds its sum to the total with one atomic. Checked against the host.
#include "ember/ember.h"

#include <cstdint>
#include <iostream>
#include <vector>

using namespace ember;

constexpr int64_t block_size = 256;

static const auto reduce = kernel("reduce", {"in", "total", "n"}, [](Ptr<int64_t> in, Ptr<int64_t> total, Int n) {
    auto warp_sums = shared_array<int64_t, block_size / warp_size>();
    auto t = thread_idx.x;
    // Each thread first adds up a strided slice of the input (grid-stride loop).
    Var<int64_t> acc(0);
    for_(global_idx.x, n, grid_dim.x * block_dim.x, [&](Int i) { acc += in[i]; });
    // Each warp sums its 32 partial sums with shuffles; lane 0 keeps the warp's result.
    Int warp_total = warp_sum(acc);
    if_(lane_id() == 0, [&] { warp_sums[t / warp_size] = warp_total; });
    barrier();
    // The first warp sums the warps' results and adds the block's sum to the total.
    if_(t < warp_size, [&] {
        Var<int64_t> w(0);
        if_(t < block_size / warp_size, [&] { w = warp_sums[t]; });
        Int block_total = warp_sum(w);
        if_(t == 0, [&] { atomic_add(total[0], block_total); });
    });
});

int main() try {
    DeviceContext ctx;
    const int64_t n = 10'000'000;
    std::vector<int64_t> in(n);
    int64_t expected = 0;
    for (int64_t i = 0; i < n; ++i) {
        in[i] = (i * 2654435761) % 2001 - 1000;
        expected += in[i];
    }
    auto din = ctx.enqueue_create_buffer<int64_t>(n);
    auto dtotal = ctx.enqueue_create_buffer<int64_t>(1);
    const int64_t zero = 0;
    ctx.enqueue_copy(din, in.data());
    ctx.enqueue_copy(dtotal, &zero);
    ctx.enqueue_function(reduce, din, dtotal, n, grid_dim(1024), block_dim(block_size));
    int64_t total = -1;
    ctx.enqueue_copy(&total, dtotal);
    ctx.synchronize();
    if (total != expected) {
        std::cerr << "reduction: got " << total << ", expected " << expected << "\n";
        return 1;
    }
    std::cout << "reduction: sum of " << n << " integers = " << total << " on " << ctx.name() << " ("
              << ctx.api() << "): OK\n";
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "reduction: " << e.what() << "\n";
    return 1;
}
