/// \file
/// A bf16 matrix product on the tensor cores with the warp's `mma` (mma.sync on NVIDIA, emulated
/// on the CPU device). examples/gemm_bf16.cpp runs it and checks it; bench/kernels times it
/// against cuBLAS (bench/README.md has the figures).
///
/// C = A B for row-major A (m x k), B (k x n) and C (m x n), all bf16; the products are summed in
/// f32 and rounded to bf16 once, at the end (what cuBLAS and torch.matmul do). How it works:
///
/// 1. Blocks. A block of 256 threads (8 warps) computes a BM x BN = 128 x 256 tile of C. It walks
///    k in slices of BK = 32: a 128 x 32 slice of A and a 32 x 256 slice of B per step.
/// 2. Warps. The 8 warps split the tile 2 x 4: each computes 64 x 64 elements of C as 4 x 8
///    tensor-core tiles of 16 x 8 (`Mma<bfloat16, m16n8k16>`), 32 accumulator fragments of 4
///    floats per thread. For each 16 of k a warp loads 4 A fragments and 8 B fragments from
///    shared memory with ldmatrix and issues 32 mmas: each fragment is used 8 or 4 times.
/// 3. Stages. The slices come into shared memory with async_copy (cp.async, 16 bytes each)
///    through `Stages` buffers: while the warps multiply slice s, the copies of the next slices
///    are in flight. One barrier per slice: after it, every warp has finished the slice whose
///    buffer the new copies overwrite.
/// 4. Shared memory. The rows of both slices are padded by 8 elements (16 bytes): A's rows are
///    80 bytes apart and B's 528, so the 8 rows one ldmatrix reads (16 bytes each) fall in 8
///    different groups of banks, without conflicts. 3 stages take 81 KiB of dynamic shared
///    memory, more than the 48 KiB a kernel gets without asking: the launch opts in
///    (FuncAttribute::max_dynamic_shared_size_bytes).
/// 5. The end. Each thread rounds its accumulators to bf16 and stores them in pairs (the two
///    adjacent columns a C fragment holds).
#ifndef EMBER_EXAMPLES_GEMM_BF16_H
#define EMBER_EXAMPLES_GEMM_BF16_H

#include "ember/ember.h"

#include <cstdint>
#include <vector>

namespace gemm_bf16_example {

using namespace ember;

constexpr int64_t kBM = 128, kBN = 256, kBK = 32; // the block's tile of C, and the slice of k
constexpr int64_t kThreads = 256;                 // 8 warps, 2 x 4 over the tile
constexpr int64_t kWM = 64, kWN = 64;             // a warp's part of the tile
constexpr int64_t kALd = kBK + 8, kBLd = kBN + 8; // padded rows of the slices in shared memory

/// Dynamic shared memory of the kernel with `Stages` buffers.
constexpr int64_t shared_bytes(int64_t stages) { return stages * (kBM * kALd + kBK * kBLd) * 2; }

/// The kernel with `Stages` (2 to 4) shared-memory buffers. Arguments (a, b, c, m, n, k), m a
/// multiple of 128, n of 256, k of 32; launch with grid_dim(n / 256, m / 128), block_dim(256) and
/// shared_mem_bytes(shared_bytes(Stages)).
template <int64_t Stages = 3> auto make_gemm_bf16(const char *name) {
    static_assert(Stages >= 2 && Stages <= 4, "2 to 4 stages");
    constexpr int64_t a_stage = kBM * kALd, b_stage = kBK * kBLd; // elements per buffer
    constexpr int64_t b_base = Stages * a_stage;                  // where B's buffers start
    constexpr int64_t mt = kWM / 16, nt = kWN / 8;                // tensor-core tiles of a warp
    return kernel(
        name, {"a", "b", "c", "m", "n", "k"},
        [](Ptr<const bfloat16> a, Ptr<const bfloat16> b, Ptr<bfloat16> c, Int m, Int n, Int k) {
            (void)m;
            using Op = Mma<bfloat16, m16n8k16>;
            auto smem = dynamic_shared<bfloat16>();
            Int t = thread_idx.x;
            Int warp = t / 32;
            Int wm = warp / (kBN / kWN), wn = warp % (kBN / kWN);
            Int row0 = block_idx.y * kBM, col0 = block_idx.x * kBN;

            // Slice `kt` of A and B into buffer `stage`: 16-byte copies, 2 of A and 4 of B per
            // thread, consecutive threads on consecutive 16 bytes of a row.
            auto issue = [&](const Int &kt, const Int &stage) {
                for (int64_t i = 0; i < kBM * kBK / 8 / kThreads; ++i) {
                    Int chunk = t + i * kThreads;
                    Int r = chunk / (kBK / 8), c8 = chunk % (kBK / 8) * 8;
                    async_copy<8>(smem, stage * a_stage + r * kALd + c8, a, (row0 + r) * k + kt * kBK + c8);
                }
                for (int64_t i = 0; i < kBK * kBN / 8 / kThreads; ++i) {
                    Int chunk = t + i * kThreads;
                    Int r = chunk / (kBN / 8), c8 = chunk % (kBN / 8) * 8;
                    async_copy<8>(smem, b_base + stage * b_stage + r * kBLd + c8, b, (kt * kBK + r) * n + col0 + c8);
                }
                async_commit();
            };

            std::vector<Op::C> acc;
            acc.reserve(mt * nt);
            for (int64_t i = 0; i < mt * nt; ++i) acc.emplace_back();

            Int slices = k / kBK;
            for (int64_t s = 0; s < Stages - 1; ++s)
                if_(Int(s) < slices, [&] { issue(Int(s), Int(s)); }).else_([&] { async_commit(); });
            for_(0, slices, [&](Int kt) {
                async_wait(Stages - 2); // slice kt has landed (for this thread's copies) ...
                barrier();              // ... and for everyone's; slice kt - 1 is done with
                Int next = kt + (Stages - 1);
                if_(next < slices, [&] { issue(next, next % Stages); }).else_([&] { async_commit(); });
                Int stage = kt % Stages;
                Int a_tile = stage * a_stage + wm * kWM * kALd;
                Int b_tile = b_base + stage * b_stage + wn * kWN;
                for (int64_t kk = 0; kk < kBK / 16; ++kk) {
                    std::vector<Op::A> fa(mt);
                    std::vector<Op::B> fb(nt);
                    for (int64_t i = 0; i < mt; ++i) fa[i].load_matrix(smem, a_tile + i * 16 * kALd + kk * 16, kALd);
                    for (int64_t j = 0; j < nt; ++j) fb[j].load_matrix(smem, b_tile + kk * 16 * kBLd + j * 8, kBLd);
                    for (int64_t i = 0; i < mt; ++i)
                        for (int64_t j = 0; j < nt; ++j) acc[i * nt + j] = mma(fa[i], fb[j], acc[i * nt + j]);
                }
            });

            // C fragment element pairs (0, 1) and (2, 3): row g and g + 8, columns 2t and 2t + 1.
            Int lane = t % 32;
            Int g = lane / 4, tq = lane % 4;
            for (int64_t i = 0; i < mt; ++i)
                for (int64_t j = 0; j < nt; ++j) {
                    SIMD<float, 4> v = acc[i * nt + j].value();
                    Int r = row0 + wm * kWM + i * 16 + g, col = col0 + wn * kWN + j * 8 + 2 * tq;
                    c.store(r * n + col, cast<bfloat16>(SIMD<float, 2>{v[0], v[1]}));
                    c.store((r + 8) * n + col, cast<bfloat16>(SIMD<float, 2>{v[2], v[3]}));
                }
        },
        LaunchBounds{.max_threads = kThreads, .min_blocks = 1});
}

} // namespace gemm_bf16_example

#endif // EMBER_EXAMPLES_GEMM_BF16_H
