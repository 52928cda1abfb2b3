/// \file
/// The fastest FP32 matrix product we know how to write in ember, step by step. examples/sgemm.cpp
/// runs it and checks it; bench/kernels times it against the same algorithm compiled by nvcc and
/// against cuBLAS (bench/README.md has the figures).
///
/// C = A B for n x n row-major matrices, n a multiple of 128. The work is split three ways:
///
/// 1. Blocks. Each block of 256 threads computes one 128 x 128 tile of C. It walks K in steps of
///    BK, and for each step needs a 128 x BK slice of A and a BK x 128 slice of B: (128 + 128) BK
///    loads from global memory feed 128 * 128 * BK multiply-adds, 64 per load at BK = 8.
/// 2. Threads. Each thread computes 8 x 8 elements of the tile, in four 4 x 4 quarters: rows
///    4 ty .. 4 ty + 3 and 64 + 4 ty .. 64 + 4 ty + 3, the same for columns with tx (ty, tx in
///    0 .. 15). Per k it reads 8 values of A and 8 of B from shared memory and does 64 fmas, all in
///    registers. Splitting into quarters 64 apart (rather than 8 adjacent rows) makes the 16
///    threads of a half-warp read 16 consecutive float4s of B: no shared-memory bank conflicts.
/// 3. Stages. The slices go through shared memory in `Stages` buffers. While the threads compute
///    on stage s, async_copy (cp.async on sm_80 and later) is already bringing the slices of the
///    next steps into the other stages: the copies run in the background, no register holds their
///    data, and the loop never waits for global memory unless the copies fall behind.
///
/// Shared memory layout. A's slice stays row-major (128 rows of BK floats, each row padded to
/// BK + 4 floats so that rows 4 apart fall in different banks): cp.async copies 16 contiguous
/// bytes, so it cannot transpose, and the thread reads its 4 consecutive k of one row as one
/// float4 instead. B's slice is BK rows of 128 floats, read as float4s along a row.
#ifndef EMBER_EXAMPLES_SGEMM_H
#define EMBER_EXAMPLES_SGEMM_H

#include "ember/ember.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace sgemm_example {

using namespace ember;

constexpr int64_t kTile = 128;    // C tile per block (rows and columns)
constexpr int64_t kThreads = 256; // per block: 16 x 16, 8 x 8 elements each

/// The kernel for slices of `BK` (8 or 16) columns of A and rows of B, through `Stages` (2 to 4)
/// shared-memory buffers, for tiles of `Rows` (128 or 256) rows of C by 128 columns: each thread
/// computes Rows / 16 rows (groups of 4, 64 apart) by 8 columns. Arguments: (a, b, c, n); launch
/// with grid_dim(n / 128, n / Rows) and block_dim(256).
template <int64_t BK, int64_t Stages, int64_t Rows = kTile> auto make_sgemm(const char *name) {
    static_assert(BK == 8 || BK == 16, "slices of 8 or 16");
    static_assert(Stages >= 2 && Stages <= 4, "2 to 4 stages");
    static_assert(Rows == 128 || Rows == 256, "tiles of 128 or 256 rows");
    static constexpr int64_t a_stride = BK + 4;         // floats per row of A's slice, padded
    static constexpr int64_t a_stage = Rows * a_stride; // floats per stage of A
    static constexpr int64_t b_stage = BK * kTile;      // floats per stage of B
    static constexpr int64_t a_copies = Rows * BK / 4 /
                                        kThreads; // 16-byte copies per thread per slice
    static constexpr int64_t b_copies = kTile * BK / 4 / kThreads;
    static constexpr int64_t rows = Rows / 16; // rows of C per thread
    static constexpr uint32_t min_blocks = Rows == 128 ? 2 : 1;
    return kernel(
        name, {"a", "b", "c", "n"},
        [](Ptr<const float> a, Ptr<const float> b, NoAlias<Ptr<float>> c, Int n) {
            SharedPtr<float> as = shared_array<float, Stages * a_stage>();
            SharedPtr<float> bs = shared_array<float, Stages * b_stage>();
            Int tid = thread_idx.x;
            Int tx = tid % 16, ty = tid / 16;
            Int row0 = block_idx.y * Rows, col0 = block_idx.x * kTile;
            // Row r of the thread's rows of C (and of A's slice): groups of 4, 64 apart.
            auto thread_row = [](int64_t r) { return (r / 4) * 64 + r % 4; };

            // Step 1: who copies what. A's slice is Rows rows of BK / 4 float4s; B's is BK rows of
            // 32 float4s. Thread tid copies float4 number tid (tid + 256, ...) of each. `fetch`
            // starts the copies of the slice at k0 into stage `stage` and closes them into one
            // group.
            auto fetch = [&](Int k0, Int stage) {
                for (int64_t q = 0; q < a_copies; ++q) {
                    Int p = tid + q * kThreads;
                    Int ar = p / (BK / 4), ak = (p % (BK / 4)) * 4;
                    async_copy<4>(as, stage * a_stage + ar * a_stride + ak, a,
                                  (row0 + ar) * n + k0 + ak);
                }
                for (int64_t q = 0; q < b_copies; ++q) {
                    Int p = tid + q * kThreads;
                    Int br = p / 32, bc = (p % 32) * 4;
                    async_copy<4>(bs, stage * b_stage + br * kTile + bc, b,
                                  (k0 + br) * n + col0 + bc);
                }
                async_commit();
            };

            // Step 2: the accumulators, one register each (a deque: Var is not movable).
            std::deque<Var<float>> acc;
            for (int64_t i = 0; i < rows * 8; ++i) acc.emplace_back(0.0f);

            // Step 3: the pipeline. The first Stages - 1 slices are started before the loop. Each
            // iteration waits until the slice it needs has landed (all but the newest Stages - 2
            // groups of this thread, then a barrier for every thread's), starts the slice Stages - 1
            // ahead into the stage the previous iteration computed on (every thread has passed the
            // barrier, so none still reads it; past the end it closes an empty group, so that the
            // count of groups stays the same), and computes. One barrier per slice.
            Int steps = n / BK;
            for (int64_t s = 0; s < Stages - 1; ++s) fetch(Int(s * BK), Int(s));
            for_(0, steps, [&](Int t) {
                async_wait(Stages - 2);
                barrier(); // every thread's copies of slice t have landed
                Int ahead = t + (Stages - 1);
                if_(ahead < steps, [&] { fetch(ahead * BK, ahead % Stages); }).else_([&] { async_commit(); });

                // Step 4: the inner product over the slice, 4 values of k at a time. Each thread
                // reads its rows of A as float4s (4 k each), then per k two float4s of B, and does
                // rows * 8 fmas. Everything in this loop is unrolled at trace time.
                Int stage = t % Stages;
                Int a0 = stage * a_stage + (4 * ty) * a_stride;
                Int b0 = stage * b_stage + 4 * tx;
                for (int64_t kq = 0; kq < BK; kq += 4) {
                    std::vector<SIMD<float, 4>> ra;
                    for (int64_t i = 0; i < rows; ++i)
                        ra.push_back(as.load<4>(a0 + thread_row(i) * a_stride + kq));
                    for (int64_t kk = 0; kk < 4; ++kk) {
                        auto lo = bs.load<4>(b0 + (kq + kk) * kTile),
                             hi = bs.load<4>(b0 + (kq + kk) * kTile + 64);
                        for (int64_t i = 0; i < rows; ++i)
                            for (int64_t j = 0; j < 8; ++j) {
                                Float32 x = ra[i][kk];
                                Float32 y = j < 4 ? lo[j] : hi[j - 4];
                                acc[i * 8 + j] = fma(x, y, acc[i * 8 + j]);
                            }
                    }
                }
            });

            // Step 5: write the results as two float4s per row.
            for (int64_t i = 0; i < rows; ++i) {
                Int row = row0 + 4 * ty + thread_row(i);
                for (int64_t half = 0; half < 2; ++half) {
                    const int64_t j = 4 * half;
                    c.store(row * n + col0 + 4 * tx + 64 * half,
                            SIMD<float, 4>(acc[i * 8 + j], acc[i * 8 + j + 1], acc[i * 8 + j + 2],
                                           acc[i * 8 + j + 3]));
                }
            }
        },
        // Step 6: 256 threads at most; with 128-row tiles two blocks per multiprocessor, so at
        // most 128 registers per thread (the 64 accumulators, 32 values of A, 8 of B and the
        // addresses fit); with 256-row tiles one block, whose 128 accumulators need more.
        LaunchBounds{.max_threads = kThreads, .min_blocks = min_blocks});
}

} // namespace sgemm_example

#endif // EMBER_EXAMPLES_SGEMM_H
