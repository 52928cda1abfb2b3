/// \file
/// The fastest FP32 matrix products we know how to write in ember, step by step. examples/sgemm.cpp
/// runs the first and checks it; bench/kernels times both against the same algorithms compiled by
/// nvcc and against cuBLAS (bench/README.md has the figures).
///
/// C = A B for n x n row-major matrices. Two kernels:
///
/// - `make_sgemm_warptile` (the fastest on an H200): 256 x 128 tiles of C, one block of 256
///   threads per multiprocessor, 128 values of C per thread, A's slices transposed into shared
///   memory through registers. Explained below, at the function.
/// - `make_sgemm`: 128 x 128 tiles, two blocks per multiprocessor, 64 values per thread, the
///   slices brought in by `async_copy` (cp.async) through 2 to 4 stages. Explained here:
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

constexpr int64_t kTile = 128;    // C tile per block of make_sgemm (rows and columns)
constexpr int64_t kThreads = 256; // threads per block of both kernels

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

/// The warp-tiled kernel: C tiles of 256 rows by 128 columns, slices of 8 columns of A and rows of
/// B. Arguments: (a, b, c, n), n a multiple of 256; launch with grid_dim(n / 128, n / 256) and
/// block_dim(256).
///
/// 1. Blocks. A block computes a 256 x 128 tile of C, walking K in slices of 8: per slice it
///    loads (256 + 128) * 8 floats from global memory and does 256 * 128 * 8 fmas, 85 per load
///    (64 with 128 x 128 tiles). 128 accumulators per thread and the slices in flight take 249
///    registers, so one block of 8 warps runs per multiprocessor: few warps, each with much
///    independent work (cuBLAS's FP32 kernel on Hopper has the same shape).
/// 2. Warps. The 8 warps are 4 along M by 2 along N; each computes a 64 x 64 part of the
///    tile. Its 32 lanes are 4 along M by 8 along N, and each lane computes 16 x 8 values: 4
///    groups of 4 rows 16 apart, by 2 groups of 4 columns 32 apart. Per k a lane reads its A
///    values as 4 float4s and its B values as 2 float4s; within a warp the A reads come from 4
///    addresses (lanes in the same row share them) and the B reads from 8 consecutive float4s: no
///    bank conflicts. 6 shared loads for 128 fmas.
/// 3. A transposed. For a lane's A values of one k to be one float4, A's slice is stored k-major
///    (8 rows of 256 floats, padded by 4). async_copy cannot transpose, so the slices go through
///    registers, two slices ahead: at the top of the iteration for slice t each thread starts the
///    loads of its float4s of slice t + 2, computes on slice t while they and those of slice
///    t + 1 (started an iteration earlier) are in flight, then writes slice t + 1 into the other
///    of two shared buffers (A's four lanes one by one, transposed; B's as a float4) and meets
///    the others at the barrier. One barrier per slice: the buffer written was last read before
///    the previous barrier. The padding makes the 32 transposing stores of a warp fall in 32
///    different banks (two lanes per row of A, 4 columns apart: 4 x 260 = 16 mod 32).
/// 4. C written one float at a time. The fmas read an A value, a B value and an accumulator. With
///    C written as float4s, ptxas keeps each 4 accumulators in 4 aligned registers, the same
///    alignment as the B float4 they meet: B and accumulator then have registers of the same
///    parity (the same register bank) in 9 of 10 fmas, and ncu counts more dispatch stalls.
///    Written one float at a time, the accumulators may go anywhere, and ptxas gives 8 of 10 fmas
///    operands of different parity: 1 % faster (measured with loads one slice ahead: 231
///    registers instead of 214).
/// 5. Two slices per iteration of the loop. The two copies of the body, written out at trace
///    time, alternate the shared buffers (their addresses become constants) and the registers
///    that hold the slices in flight (none is copied to the next iteration). With loads one slice
///    ahead, or two slices ahead and one slice per iteration, the kernel ran at 0.87x cuBLAS on
///    an H200 (issue on 78 % of cycles at 1.98 GHz); two slices ahead and two per iteration,
///    0.92x to 0.93x (bench/README.md). `unroll(2)` on the loop runs the same but compiles in
///    about 1.5x the time: it also keeps a third copy, for a remainder that an even count never
///    runs.
inline auto make_sgemm_warptile(const char *name) {
    static constexpr int64_t Rows = 256, BK = 8, cols = 128;
    static constexpr int64_t a_stride = Rows + 4;                // floats per k of A's slice
    static constexpr int64_t a_stage = BK * a_stride;            // floats per buffer of A
    static constexpr int64_t b_stage = BK * cols;                // floats per buffer of B
    static constexpr int64_t a_loads = Rows * BK / 4 / kThreads; // float4s of A per thread
    static constexpr int64_t b_loads = cols * BK / 4 / kThreads; // float4s of B per thread
    static constexpr int64_t warp_rows = Rows / 4;               // rows of C per warp
    static constexpr int64_t rows = Rows / 16;                   // rows of C per thread
    return kernel(
        name, {"a", "b", "c", "n"},
        [](Ptr<const float> a, Ptr<const float> b, NoAlias<Ptr<float>> c, Int n) {
            SharedPtr<float> as = shared_array<float, 2 * a_stage>();
            SharedPtr<float> bs = shared_array<float, 2 * b_stage>();
            Int tid = thread_idx.x;
            Int warp = tid / 32, lane = tid % 32;
            Int row0 = block_idx.y * Rows, col0 = block_idx.x * cols;
            // The lane's first row within the tile, and first column (step 2).
            Int my_row = (warp % 4) * warp_rows + (lane / 8) * 4;
            Int my_col = (warp / 4) * 64 + (lane % 8) * 4;

            // Step 3: the thread's float4s of the slice at k0, global memory -> registers: A's
            // slice is 256 rows of 2 float4s, B's 8 rows of 32; thread tid takes number tid
            // (and tid + 256, ...) of each.
            auto load = [&](Int k0) {
                std::vector<SIMD<float, 4>> v;
                for (int64_t q = 0; q < a_loads; ++q) {
                    Int p = tid + q * kThreads;
                    v.push_back(a.load<4>((row0 + p / 2) * n + k0 + (p % 2) * 4));
                }
                for (int64_t q = 0; q < b_loads; ++q) {
                    Int p = tid + q * kThreads;
                    v.push_back(b.load<4>((k0 + p / 32) * n + col0 + (p % 32) * 4));
                }
                return v;
            };
            // ... and registers -> shared buffer `stage`, A transposed.
            auto store = [&](const std::vector<SIMD<float, 4>> &v, Int stage) {
                for (int64_t q = 0; q < a_loads; ++q) {
                    Int p = tid + q * kThreads;
                    for (int64_t i = 0; i < 4; ++i)
                        as[stage * a_stage + ((p % 2) * 4 + i) * a_stride + p / 2] = v[q][i];
                }
                for (int64_t q = 0; q < b_loads; ++q) {
                    Int p = tid + q * kThreads;
                    bs.store(stage * b_stage + (p / 32) * cols + (p % 32) * 4, v[a_loads + q]);
                }
            };

            // The accumulators, one register each (a deque: Var is not movable).
            std::deque<Var<float>> acc;
            for (int64_t i = 0; i < rows * 8; ++i) acc.emplace_back(0.0f);

            // Slice 0 into buffer 0 and slice 1 into registers, then one iteration per slice t:
            // the loads of slice t + 2 start (the last slice's again near the end, where they are
            // not used), slice t is computed on, and slice t + 1 is stored for the next iteration.
            Int steps = n / BK;
            store(load(Int(0)), Int(0));
            std::deque<Var<SIMD<float, 4>>> ahead; // slice t + 1, in flight
            for (const SIMD<float, 4> &x : load(min(Int(1), steps - 1) * BK)) ahead.emplace_back(x);
            barrier();
            auto slice = [&](Int t, int64_t stage) {
                std::vector<SIMD<float, 4>> next = load(min(t + 2, steps - 1) * BK);
                std::vector<SIMD<float, 4>> staged;
                for (const Var<SIMD<float, 4>> &x : ahead) staged.push_back(x.value());
                for (int64_t k = 0; k < BK; ++k) {
                    std::vector<SIMD<float, 4>> ra, rb;
                    for (int64_t g = 0; g < rows / 4; ++g)
                        ra.push_back(as.load<4>(stage * a_stage + k * a_stride + my_row + g * 16));
                    for (int64_t h = 0; h < 2; ++h)
                        rb.push_back(bs.load<4>(stage * b_stage + k * cols + my_col + h * 32));
                    for (int64_t i = 0; i < rows; ++i)
                        for (int64_t j = 0; j < 8; ++j) {
                            Float32 x = ra[i / 4][i % 4];
                            Float32 y = rb[j / 4][j % 4];
                            acc[i * 8 + j] = fma(x, y, acc[i * 8 + j]);
                        }
                }
                store(staged, Int(1 - stage));
                for (size_t q = 0; q < next.size(); ++q) ahead[q] = next[q];
                barrier();
            };
            // Step 5: two slices per iteration (steps is even: n is a multiple of 256).
            for_(0, steps / 2, [&](Int u) {
                slice(2 * u, 0);
                slice(2 * u + 1, 1);
            });

            // Step 4: the results, one float at a time.
            for (int64_t i = 0; i < rows; ++i) {
                Int row = row0 + my_row + (i / 4) * 16 + i % 4;
                for (int64_t j = 0; j < 8; ++j)
                    c[row * n + col0 + my_col + (j / 4) * 32 + j % 4] = acc[i * 8 + j];
            }
        },
        // 256 threads, one block per multiprocessor: up to 255 registers.
        LaunchBounds{.max_threads = kThreads, .min_blocks = 1});
}

} // namespace sgemm_example

#endif // EMBER_EXAMPLES_SGEMM_H
