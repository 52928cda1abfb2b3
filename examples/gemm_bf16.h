/// \file
/// A bf16 matrix product on the tensor cores with the warp's `mma` (mma.sync on NVIDIA, emulated
/// on the CPU device). examples/gemm_bf16.cpp runs it and checks it; bench/kernels times it
/// against cuBLAS (bench/README.md has the figures).
///
/// C = A B for row-major A (m x k), B (k x n) and C (m x n), all bf16; the products are summed in
/// f32 and rounded to bf16 once, at the end (what cuBLAS and torch.matmul do). How it works:
///
/// 1. Blocks. A block computes a 128 x BN tile of C (BN = 128 or 256), a warp per 64 x 64 of it
///    (4 or 8 warps). It walks k in slices of BK (32 or 64): a 128 x BK slice of A and a BK x BN
///    slice of B per step. The blocks run in groups of `Group` rows of tiles, column by column
///    inside a group, so that the blocks resident at once read the same slices of A and B and
///    find them in the L2 cache (8 rows: 357 TFLOP/s on an H200 where row-major order gives 312,
///    both over 10 launches from idle).
/// 2. Warps. A warp's 64 x 64 elements of C are 4 x 8 tensor-core tiles of 16 x 8
///    (`Mma<bfloat16, m16n8k16>`): 32 accumulator fragments of 4 floats per thread. For each 16
///    of k the warp loads 4 A fragments and 8 B fragments from shared memory with ldmatrix (B's
///    two at a time, load_matrix_pair) and issues 32 mmas: each A fragment serves 8, each B 4.
/// 3. Stages. The slices come into shared memory with async_copy (cp.async, 16 bytes each)
///    through `Stages` buffers: while the warps multiply slice s, the copies of the next slices
///    are in flight. One barrier per slice: after it, every warp has finished the slice whose
///    buffer the new copies overwrite.
/// 4. Shared memory. The rows of both slices are padded by 8 elements (16 bytes): with BK = 32,
///    A's rows are 80 bytes apart and B's 272 (BN = 128), so the 8 rows one ldmatrix reads (16
///    bytes each) fall in 8 different groups of banks, without conflicts. The configuration of
///    examples/gemm_bf16.cpp (BN = 128, BK = 32, 4 stages) takes 74 KiB of dynamic shared
///    memory, more than the 48 KiB a kernel gets without asking: the launch opts in
///    (FuncAttribute::max_dynamic_shared_size_bytes). Two blocks fit on a multiprocessor.
/// 5. The end. Each thread rounds its accumulators to bf16 and stores them in pairs (the two
///    adjacent columns a C fragment holds).
///
/// On an H200 it runs at 0.38x cuBLAS under a sustained load, 0.44x for a short burst before the
/// 700 W power cap lowers the clock (bench/README.md): mma.sync keeps the tensor cores about 64 %
/// busy here (ncu) and spends more energy per FLOP than Hopper's warpgroup instruction, wgmma,
/// which its full rate needs.
#ifndef EMBER_EXAMPLES_GEMM_BF16_H
#define EMBER_EXAMPLES_GEMM_BF16_H

#include "ember/ember.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gemm_bf16_example {

using namespace ember;

constexpr int64_t kBM = 128;          // rows of the block's tile of C
constexpr int64_t kWM = 64, kWN = 64; // a warp's part of the tile

/// Threads of the kernel with tiles of 128 x `bn`: a warp per 64 x 64.
constexpr int64_t threads(int64_t bn) { return kBM * bn / (kWM * kWN) * 32; }
/// Dynamic shared memory of the kernel with `stages` buffers of slices of `bk`, tiles 128 x `bn`.
constexpr int64_t shared_bytes(int64_t stages, int64_t bk, int64_t bn) {
    return stages * (kBM * (bk + 8) + bk * (bn + 8)) * 2;
}

/// The kernel with `Stages` (2 to 5) shared-memory buffers of slices of `kBK` (32 or 64), tiles of
/// 128 x `kBN` (128 or 256) in groups of `Group` rows (0: row by row), `MinBlocks` blocks per
/// multiprocessor. Arguments (a, b, c, m, n, k): m a multiple of 128, n of kBN, k of kBK; launch
/// with grid_dim(n / kBN, m / 128), block_dim(threads(kBN)) and
/// shared_mem_bytes(shared_bytes(Stages, kBK, kBN)).
template <int64_t Stages = 3, int64_t kBK = 32, int64_t Group = 8, int64_t kBN = 256,
          int64_t MinBlocks = 1>
auto make_gemm_bf16(const char *name) {
    static constexpr int64_t kThreads = threads(kBN);
    static constexpr int64_t kBLd = kBN + 8; // padded rows of B's slices in shared memory
    static_assert(Stages >= 2 && Stages <= 5, "2 to 5 stages");
    static_assert(kBK == 32 || kBK == 64, "slices of 32 or 64");
    static_assert(kBN == 128 || kBN == 256, "tiles of 128 x 128 or 128 x 256");
    static constexpr int64_t kALd = kBK + 8; // padded rows of A's slices in shared memory
    static constexpr int64_t a_stage = kBM * kALd, b_stage = kBK * kBLd; // elements per buffer
    static constexpr int64_t b_base = Stages * a_stage;                  // where B's buffers start
    static constexpr int64_t mt = kWM / 16, nt = kWN / 8; // tensor-core tiles of a warp
    return kernel(
        name, {"a", "b", "c", "m", "n", "k"},
        [](Ptr<const bfloat16> a, Ptr<const bfloat16> b, Ptr<bfloat16> c, Int m, Int n, Int k) {
            (void)m;
            using Op = Mma<bfloat16, m16n8k16>;
            auto smem = dynamic_shared<bfloat16>();
            Int t = thread_idx.x;
            Int warp = t / 32;
            Int wm = warp / (kBN / kWN), wn = warp % (kBN / kWN);
            // Blocks in groups of `Group` rows of tiles, column by column inside a group: the
            // blocks running at once share slices of A and B in the L2 cache.
            Int gx = grid_dim.x, gy = grid_dim.y;
            Int pid = block_idx.y * gx + block_idx.x;
            Int first = pid / (std::max<int64_t>(Group, 1) * gx) * Group;
            Int rows = min(gy - first, Int(Group));
            Int in_group = pid % (std::max<int64_t>(Group, 1) * gx);
            // Computed once, into Vars read here: an Int is an expression, computed again
            // wherever it is used, and these divisions would run in every iteration of the loop
            // below; a Var's read is a value bound where it is read.
            Var<int64_t> tile_row(Group == 0 ? block_idx.y * kBM : (first + in_group % rows) * kBM);
            Var<int64_t> tile_col(Group == 0 ? block_idx.x * kBN : in_group / rows * kBN);
            Int row0 = tile_row, col0 = tile_col;

            // Slice `kt` of A and B into buffer `stage`: 16-byte copies, 2 of A and 4 of B per
            // thread, consecutive threads on consecutive 16 bytes of a row.
            auto issue = [&](const Int &kt, const Int &stage) {
                for (int64_t i = 0; i < kBM * kBK / 8 / kThreads; ++i) {
                    Int chunk = t + i * kThreads;
                    Int r = chunk / (kBK / 8), c8 = chunk % (kBK / 8) * 8;
                    async_copy<8>(smem, stage * a_stage + r * kALd + c8, a,
                                  (row0 + r) * k + kt * kBK + c8);
                }
                for (int64_t i = 0; i < kBK * kBN / 8 / kThreads; ++i) {
                    Int chunk = t + i * kThreads;
                    Int r = chunk / (kBN / 8), c8 = chunk % (kBN / 8) * 8;
                    async_copy<8>(smem, b_base + stage * b_stage + r * kBLd + c8, b,
                                  (kt * kBK + r) * n + col0 + c8);
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
                if_(next < slices, [&] { issue(next, next % Stages); }).else_([&] {
                    async_commit();
                });
                Int stage = kt % Stages;
                Int a_tile = stage * a_stage + wm * kWM * kALd;
                Int b_tile = b_base + stage * b_stage + wn * kWN;
                for (int64_t kk = 0; kk < kBK / 16; ++kk) {
                    std::vector<Op::A> fa(mt);
                    std::vector<Op::B> fb(nt);
                    for (int64_t i = 0; i < mt; ++i)
                        fa[i].load_matrix(smem, a_tile + i * 16 * kALd + kk * 16, kALd);
                    for (int64_t j = 0; j < nt; j += 2)
                        fb[j].load_matrix_pair(fb[j + 1], smem, b_tile + kk * 16 * kBLd + j * 8,
                                               kBLd);
                    for (int64_t i = 0; i < mt; ++i)
                        for (int64_t j = 0; j < nt; ++j)
                            acc[i * nt + j] = mma(fa[i], fb[j], acc[i * nt + j]);
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
        LaunchBounds{.max_threads = kThreads, .min_blocks = MinBlocks});
}

/// Element (i, j) of the exact product A B (row-major bf16, k columns of A, n of B), and how far
/// a correct result may lie from it: bf16's rounding (2^-8 relative) plus f32 summation error
/// (1e-5 of the sum of |a b|). For the host checks of examples/gemm_bf16.cpp and bench/kernels.
struct Expected {
    double value, tolerance;
    bool admits(double got) const { return std::fabs(got - value) <= tolerance; }
};
inline Expected expected(const std::vector<bfloat16> &a, const std::vector<bfloat16> &b, int64_t n,
                         int64_t k, int64_t i, int64_t j) {
    double want = 0, mag = 0;
    for (int64_t q = 0; q < k; ++q) {
        const double p = double(float(a[i * k + q])) * double(float(b[q * n + j]));
        want += p;
        mag += std::fabs(p);
    }
    return {want, std::ldexp(std::fabs(want), -8) + 1e-5 * mag};
}

} // namespace gemm_bf16_example

#endif // EMBER_EXAMPLES_GEMM_BF16_H
