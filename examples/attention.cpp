/// \file
/// Runs the fused attention forward pass of examples/attention.h on the default device, causal
/// and not: 16 heads of 4096 x 128 on a GPU (the arguments heads and seq otherwise; 2 x 128 on
/// the CPU device), bf16. Checks sampled rows of O against a double-precision softmax(Q K^T /
/// sqrt(d)) V on the host, and prints the time and TFLOP/s (4 seq^2 d per head, halved when
/// causal) of the mean of ten launches after a warm-up, measured with device events.
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace ember;
using namespace attention_example;

static const auto attention = make_attention<false>("attention");
static const auto attention_causal = make_attention<true>("attention_causal");

int main(int argc, char **argv) try {
    DeviceContext ctx;
    const bool gpu = ctx.api() != "cpu";
    const int64_t heads = argc > 1 ? std::atoll(argv[1]) : gpu ? 16 : 2;
    const int64_t seq = argc > 2 ? std::atoll(argv[2]) : gpu ? 4096 : 128;
    if (heads <= 0 || seq <= 0 || seq % kBlockM != 0) {
        std::cerr << "attention: heads must be positive and seq a positive multiple of " << kBlockM
                  << "\n";
        return 2;
    }
    const int64_t n = heads * seq * kHeadDim;
    std::mt19937 gen(2026);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<bfloat16> q(n), k(n), v(n), o(n);
    for (auto *x : {&q, &k, &v})
        for (bfloat16 &e : *x) e = bfloat16(dist(gen));
    auto dq = ctx.enqueue_create_buffer<bfloat16>(n);
    auto dk = ctx.enqueue_create_buffer<bfloat16>(n);
    auto dv = ctx.enqueue_create_buffer<bfloat16>(n);
    auto dout = ctx.enqueue_create_buffer<bfloat16>(n);
    ctx.enqueue_copy(dq, q.data());
    ctx.enqueue_copy(dk, k.data());
    ctx.enqueue_copy(dv, v.data());
    CompileFunctionOptions opts;
    opts.func_attribute = {FuncAttribute::max_dynamic_shared_size_bytes(int(shared_bytes()))};

    for (bool causal : {false, true}) {
        auto f = ctx.compile_function(causal ? attention_causal : attention, opts);
        auto launch = [&](const DeviceContext &on) {
            on.enqueue_function(f, dq, dk, dv, dout, seq, grid_dim(seq / kBlockM, heads),
                                block_dim(kThreads), shared_mem_bytes(shared_bytes()));
        };
        launch(ctx); // warm-up
        const int iters = gpu ? 10 : 1;
        const double seconds = double(ctx.execution_time(launch, iters)) * 1e-9 / iters;
        ctx.enqueue_copy(o.data(), dout);
        ctx.synchronize();

        // 16 sampled rows: every element within bf16's rounding of the exact value plus a small
        // part of the row's scale (the softmax runs in f32 with an approximate exp2).
        for (int s = 0; s < 16; ++s) {
            const int64_t h = int64_t(gen() % uint64_t(heads)), i = int64_t(gen() % uint64_t(seq));
            const std::vector<Expected> want = expected_row(q, k, v, seq, h, i, causal);
            for (int64_t d = 0; d < kHeadDim; ++d) {
                const double got = double(float(o[(h * seq + i) * kHeadDim + d]));
                if (!want[d].admits(got)) {
                    std::cerr << "attention" << (causal ? " (causal)" : "") << ": O[" << h << "]["
                              << i << "][" << d << "] = " << got << ", expected " << want[d].value
                              << "\n";
                    return 1;
                }
            }
        }
        const double flops = 4.0 * double(heads) * double(seq) * double(seq) * kHeadDim /
                             (causal ? 2 : 1);
        std::cout << "attention" << (causal ? " causal" : "") << " " << heads << " heads x " << seq
                  << " x " << kHeadDim << " on " << ctx.name() << ": " << seconds * 1e3 << " ms, "
                  << flops / seconds / 1e12 << " TFLOP/s (16 rows checked)\n";
    }
    return 0;
} catch (const ember::Error &e) {
    std::cerr << "attention: " << e.what() << "\n";
    return 1;
}
