/// \file
/// The sum of ten million integers: each block reduces its part in shared memory (a tree of
/// barriers), then adds its partial sum to the total with one atomic. Checked against the host.
#include "ember/ember.h"

#include <cstdint>
#include <iostream>
#include <vector>

using namespace ember;

constexpr int64_t block_size = 256;

static const auto reduce = kernel("reduce", {"in", "total", "n"}, [](Ptr<int64_t> in, Ptr<int64_t> total, Int n) {
    auto partial = shared_array<int64_t, block_size>();
    auto t = thread_idx.x;
    // Each thread first adds up a strided slice of the input (grid-stride loop).
    Var<int64_t> acc(0);
    for_(global_idx.x, n, grid_dim.x * block_dim.x, [&](Int i) { acc += in[i]; });
    partial[t] = acc;
    barrier();
    // Then the block halves the number of active threads at each step.
    for (int64_t stride = block_size / 2; stride > 0; stride /= 2) { // unrolled while tracing
        if_(t < stride, [&] { partial[t] += partial[t + stride]; });
        barrier();
    }
    if_(t == 0, [&] { atomic_add(total[0], partial[0]); });
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
