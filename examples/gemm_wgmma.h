/// \file
/// A bf16 matrix product with Hopper's warpgroup MMA (wgmma) fed by the tensor memory accelerator
/// (TMA): NVIDIA sm_90a, and the CPU device, which emulates both. examples/gemm_wgmma.cpp runs it
/// and checks it; bench/kernels times it against cuBLAS (bench/README.md has the figures).
///
/// C = A Bᵀ for row-major A (m x k), B (n x k: each row of B is a column of the product, k
/// contiguous, "K-major", the layout wgmma reads both operands in) and C (m x n), all bf16; the
/// products are summed in f32 and rounded to bf16 once, at the end. How it works:
///
/// 1. Blocks. A block computes a 128 x BN tile of C (BN = 128 or 256) with three warpgroups of
///    128 threads: warpgroup 0 is the producer, whose first thread only issues copies; warpgroups
///    1 and 2 are the consumers, each multiplying 64 rows of the tile. k is walked in slices of
///    64, a 128 x 64 slice of A and a BN x 64 slice of B per step. Blocks run in groups of
///    `Group` rows of tiles, column by column inside a group, so that the blocks resident at once
///    share slices in the L2 cache.
/// 2. Copies. The producer's thread asks the TMA for each slice with two `tma_load`s (one box of
///    A, one of B) into one of `Stages` buffers. The tensor maps use the 128-byte swizzle, so the
///    slices land in shared memory exactly as wgmma reads them (rows of 64 elements, the 16-byte
///    chunks of row r permuted by r % 8: no bank conflicts), and each buffer starts on a
///    1024-byte boundary.
/// 3. Barriers. Two mbarriers per buffer: `full` completes when the slice's bytes have arrived
///    (the producer announces them with mbarrier_expect_tx, the TMA completes them), `empty`
///    when both consumers are done with the buffer (one arrival each). The producer waits for
///    `empty` before refilling a buffer, the consumers for `full` before reading it; a buffer's
///    n-th use waits for phase n, parity n % 2.
/// 4. Multiplication. Per slice, a consumer issues four wgmma.m64n<BN>k16 (16 of k each) on its
///    64 rows of A's buffer and all of B's, commits them as a group, and waits until at most one
///    group is in flight (wgmma_wait<1>): the previous slice's group has completed, so its buffer
///    is released while this slice's multiplications run.
/// 5. The end. Each thread holds BN / 8 accumulator fragments (m16n8 C fragments: rows g and
///    g + 8, columns 2t and 2t + 1 of each 8), rounds them to bf16 and stores them in pairs.
///
/// Shared memory: Stages x (16 KiB of A + BN x 128 bytes of B) plus the barriers: 192 KiB and 64
/// bytes for 4 stages and BN = 256 (one block per multiprocessor), so the launch opts in to more
/// than 48 KiB (FuncAttribute::max_dynamic_shared_size_bytes).
#ifndef EMBER_EXAMPLES_GEMM_WGMMA_H
#define EMBER_EXAMPLES_GEMM_WGMMA_H

#include "ember/ember.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gemm_wgmma_example {

using namespace ember;

constexpr int64_t kBM = 128;      // rows of the block's tile of C
constexpr int64_t kBK = 64;       // k per slice: one row of 128 bytes
constexpr int64_t kThreads = 384; // a producer and two consumer warpgroups

/// Bytes of one stage's buffers (A's and B's slices) for tiles of 128 x `bn`.
constexpr int64_t stage_bytes(int64_t bn) { return (kBM + bn) * kBK * 2; }
/// Dynamic shared memory of the kernel with `stages` buffers and tiles of 128 x `bn`: the
/// buffers, then two mbarriers (8 bytes) per stage.
constexpr int64_t shared_bytes(int64_t stages, int64_t bn) {
    return stages * stage_bytes(bn) + 16 * stages;
}

/// The kernel with `Stages` (2 to 6) buffers, tiles of 128 x `kBN` (128 or 256), in groups of
/// `Group` rows (0: row by row). Arguments (a, b, c, m, n, k): TensorMap<bfloat16>s of A (m x k,
/// boxes of 128 x 64) and B (n x k, boxes of kBN / Cluster x 64), both with
/// TensorMapSwizzle::b128; m a multiple of 128 Cluster, n of kBN, k of 64. Launch with
/// block_dim(kThreads) and shared_mem_bytes(shared_bytes(Stages, kBN)), and
/// grid_dim(n / kBN, m / 128) or, with clusters, grid_dim(n / kBN * (m / 128)) and
/// cluster_dim(Cluster) (block 2p + r is block r of pair p) or, `Persistent`,
/// grid_dim(blocks) for any number of blocks (one per multiprocessor), each of which takes the
/// tiles blocks apart in turn: its producer then copies the next tile's first slices while the
/// consumers store the last one's results.
///
/// Clusters of 2 (`Cluster`): the two blocks of a cluster compute the tiles of C one above the
/// other, which need the same slices of B. Each block's producer copies its own slice of A and
/// half of the slice of B, multicast to both blocks (tma_load_multicast), so the pair reads B
/// from L2 once instead of twice (8 GB of L2 reads per 8192³ product instead of 12). A buffer of
/// B is then written by both producers, so it is free only when the consumers of both blocks are
/// done with it: each consumer arrives on the `empty` mbarrier of both blocks
/// (mbarrier_arrive_cluster), which expects 4 arrivals. The blocks meet (cluster_sync) once their
/// mbarriers are initialised, before any copy can reach them, and again at the end, so that
/// neither leaves while the other may still write to it. On an H200 this variant is correct but
/// no faster than single blocks (bench/README.md): each producer now waits for the consumers of
/// both blocks, and the two slices of lookahead that 4 stages leave do not cover that.
template <int64_t Stages = 4, int64_t kBN = 256, int64_t Group = 8, bool Persistent = false,
          int64_t Cluster = 1>
auto make_gemm_wgmma(const char *name) {
    static_assert(Stages >= 2 && Stages <= 6, "2 to 6 stages");
    static_assert(kBN == 128 || kBN == 256, "tiles of 128 x 128 or 128 x 256");
    static_assert(Cluster == 1 || (Cluster == 2 && !Persistent),
                  "clusters of 1, or of 2 without persistent blocks");
    static constexpr int64_t a_stage = kBM * kBK, b_stage = kBN * kBK; // elements per buffer
    static constexpr int64_t b_base = Stages * a_stage;                // where B's buffers start
    static constexpr int64_t bars = Stages * stage_bytes(kBN) / 8;     // the first mbarrier (u64)
    static constexpr int64_t tx_bytes = stage_bytes(kBN);
    static constexpr int64_t b_part = kBN / Cluster; // rows of B's slice each producer copies
    return kernel(
        name, {"a", "b", "c", "m", "n", "k"},
        [](TensorMap<bfloat16> a, TensorMap<bfloat16> b, Ptr<bfloat16> c, Int m, Int n, Int k) {
            auto smem = dynamic_shared<bfloat16>();
            auto bar =
                dynamic_shared<uint64_t>(); // full[s] at bars + s, empty[s] at bars + Stages + s
            Int t = thread_idx.x;
            Int wg = t / 128;
            Var<int64_t> slices(k / kBK);
            // A cluster computes a "pair" of Cluster tiles one above the other: pairs of
            // 128 Cluster x kBN, numbered as tiles are without clusters.
            Var<int64_t> cols(n / kBN), tiles(m / (kBM * Cluster) * (n / kBN));
            Int first_tile = Persistent ? Int(block_idx.x)
                                        : (block_idx.y * grid_dim.x + block_idx.x) / Cluster;
            Int tile_step = Persistent ? Int(grid_dim.x) : Int(tiles);
            Int rank = Cluster > 1 ? block_rank_in_cluster() : Int(0);
            // Tile `pid`'s first row and column: tiles in groups of `Group` rows, column by column
            // inside a group, so that the blocks running at once share slices in the L2 cache.
            auto corner = [&](const Int &pid, Var<int64_t> &row0, Var<int64_t> &col0) {
                constexpr int64_t pair = kBM * Cluster;
                if constexpr (Group == 0) {
                    row0 = pid / cols * pair + rank * kBM;
                    col0 = pid % cols * kBN;
                } else {
                    Int gy = m / pair;
                    Int first = pid / (Group * cols) * Group;
                    Int rows = min(gy - first, Int(Group));
                    Int in_group = pid % (Group * cols);
                    row0 = (first + in_group % rows) * pair + rank * kBM;
                    col0 = in_group / rows * kBN;
                }
            };

            if_(t == 0, [&] {
                for (int64_t s = 0; s < Stages; ++s) {
                    mbarrier_init(bar, bars + s, 1); // the producer's expect_tx
                    // One arrival per consumer of every block of the cluster.
                    mbarrier_init(bar, bars + Stages + s, 2 * Cluster);
                }
                fence_proxy_async();
            });
            if constexpr (Cluster > 1)
                cluster_sync(); // the peer's mbarriers are ready before any copy reaches them
            else
                barrier();

            // Slices are numbered across the block's tiles: slice i uses buffer i % Stages for
            // the (i / Stages)-th time, phase parity (i / Stages) % 2.
            Var<int64_t> i(0);
            Var<int64_t> row0(0), col0(0);
            if_(wg == 0, [&] {
                // The producer: one thread issues every copy.
                if_(t == 0, [&] {
                    for_(first_tile, tiles, tile_step, [&](Int pid) {
                        corner(pid, row0, col0);
                        for_(0, slices, [&](Int kt) {
                            Var<int64_t> stage(i % Stages);
                            Int round = i / Stages;
                            if_(i >= Stages, [&] {
                                mbarrier_wait(bar, bars + Stages + stage, (round - 1) % 2);
                            });
                            mbarrier_expect_tx(bar, bars + stage, tx_bytes);
                            tma_load(smem, stage * a_stage, a, kt * kBK, row0, bar, bars + stage);
                            if constexpr (Cluster > 1)
                                tma_load_multicast(smem,
                                                   b_base + stage * b_stage + rank * b_part * kBK,
                                                   b, kt * kBK, col0 + rank * b_part, bar,
                                                   bars + stage, (1 << Cluster) - 1);
                            else
                                tma_load(smem, b_base + stage * b_stage, b, kt * kBK, col0, bar,
                                         bars + stage);
                            i = i + 1;
                        });
                    });
                });
            }).else_([&] {
                // A consumer: rows 64 (wg - 1) to 64 wg - 1 of each tile.
                Int consumer = wg - 1;
                auto leader = t % 128 == 0;
                // Frees buffer `s` in every block of the cluster that writes into it: thread r of
                // the warpgroup arrives on block r's mbarrier, all in one instruction.
                auto release = [&](const Int &s) {
                    if constexpr (Cluster > 1)
                        mbarrier_arrive_cluster(bar, bars + Stages + s, t % 128);
                    else
                        mbarrier_arrive(bar, bars + Stages + s);
                };
                auto releasing = Cluster > 1 ? t % 128 < Cluster : leader;
                WarpgroupAccumulator<kBN> acc;
                for_(first_tile, tiles, tile_step, [&](Int pid) {
                    corner(pid, row0, col0);
                    acc.clear();
                    for_(0, slices, [&](Int kt) {
                        Var<int64_t> stage(i % Stages);
                        mbarrier_wait(bar, bars + stage, (i / Stages) % 2);
                        Int a_tile = stage * a_stage + consumer * 64 * kBK;
                        Int b_tile = b_base + stage * b_stage;
                        wgmma_fence(acc);
                        for (int64_t kk = 0; kk < kBK / 16; ++kk)
                            wgmma(smem, a_tile + kk * 16, smem, b_tile + kk * 16, acc);
                        wgmma_commit();
                        wgmma_wait<1>(acc); // the previous slice's group has completed: release it
                        if_(kt > 0 && releasing, [&] { release((i + (Stages - 1)) % Stages); });
                        i = i + 1;
                    });
                    wgmma_wait<0>(acc);
                    // The tile's last slice too (a later tile's first does not release it).
                    if_(releasing, [&] { release((i + (Stages - 1)) % Stages); });

                    // Fragment j: rows g and g + 8 of the warp's 16, columns 8j + 2 tq and + 1.
                    Int lane = t % 32, warp = (t % 128) / 32;
                    Int g = lane / 4, tq = lane % 4;
                    Int r = row0 + consumer * 64 + warp * 16 + g;
                    for (int64_t j = 0; j < kBN / 8; ++j) {
                        SIMD<float, 4> v = acc[static_cast<int>(j)].value();
                        Int col = col0 + j * 8 + 2 * tq;
                        c.store(r * n + col, cast<bfloat16>(SIMD<float, 2>{v[0], v[1]}));
                        c.store((r + 8) * n + col, cast<bfloat16>(SIMD<float, 2>{v[2], v[3]}));
                    }
                });
            });
            // Neither block of a cluster leaves while the other may still copy into it or arrive
            // on its mbarriers.
            if constexpr (Cluster > 1) cluster_sync();
        },
        LaunchBounds{.max_threads = kThreads, .min_blocks = 1});
}

/// Element (i, j) of the exact product A Bᵀ (row-major bf16 A m x k and B n x k), and how far a
/// correct result may lie from it: bf16's rounding (2^-8 relative) plus f32 summation error (1e-5
/// of the sum of |a b|). For the host checks of examples/gemm_wgmma.cpp and bench/kernels.
struct Expected {
    double value, tolerance;
    bool admits(double got) const { return std::fabs(got - value) <= tolerance; }
};
inline Expected expected(const std::vector<bfloat16> &a, const std::vector<bfloat16> &b, int64_t k,
                         int64_t i, int64_t j) {
    double want = 0, mag = 0;
    for (int64_t q = 0; q < k; ++q) {
        const double p = double(float(a[i * k + q])) * double(float(b[j * k + q]));
        want += p;
        mag += std::fabs(p);
    }
    return {want, std::ldexp(std::fabs(want), -8) + 1e-5 * mag};
}

} // namespace gemm_wgmma_example

#endif // EMBER_EXAMPLES_GEMM_WGMMA_H
