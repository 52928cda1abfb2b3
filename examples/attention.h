/// \file
/// Fused attention forward, O = softmax(Q K^T / sqrt(d)) V, on the tensor cores with the warp's
/// `mma` (FlashAttention's algorithm: the scores never leave the multiprocessor).
/// examples/attention.cpp runs it and checks it; bench/kernels compares it with PyTorch's
/// scaled_dot_product_attention.
///
/// Q, K, V and O are bf16, [heads][seq][128] row-major (batch and heads together, as PyTorch's
/// (B, H, S, D) contiguous tensors); the products are summed in f32, the softmax is computed in
/// f32, and O is rounded to bf16 once. With `Causal`, query i attends to keys 0 .. i. How it works:
///
/// 1. Blocks. A block of 4 warps owns 64 query rows of one head (grid: seq / 64 by heads), a warp
///    16 of them. The warp keeps its rows of Q in registers as 8 A fragments (16 x 16 each, the
///    head dimension 128 in steps of 16), loaded once with ldmatrix.
/// 2. Keys in tiles of 64. For each tile the block brings K's and V's 64 x 128 slices into shared
///    memory with async_copy, two tiles in flight: tile j + 1 is copied while tile j is used.
///    S = Q K^T for the warp's 16 rows is 8 C fragments (16 x 8 each, 64 keys): 64 mmas, K read
///    from shared memory as column-major B fragments (K is [key][dim]: B[dim][key]).
/// 3. Online softmax. Each row's running maximum m and sum l live in registers (a lane holds
///    rows g and g + 8 of its fragments, g = lane / 4; the four lanes of a row combine their
///    maxima with two shuffles). For a new tile: m' = max(m, max_j s_j), p_j = 2^(s_j log2(e) /
///    sqrt(d) - m'), l = l 2^(m - m') + sum_j p_j, and O is scaled by 2^(m - m') before the new
///    tile's P V is added. fast::exp2 is ex2.approx on NVIDIA (2 ulp).
/// 4. P V. The fragments of P (the scores after softmax, 16 x 64) are A fragments for the second
///    product as they are: two C fragments side by side are one A fragment of m16n8k16
///    (MmaFragment::from_accumulators), so P goes from one mma to the next without shared
///    memory. O (16 x 128 per warp) is 16 C fragments; V is read as row-major B fragments.
/// 5. Causal. Only tiles at or before the block's diagonal are visited, and only the diagonal
///    tile is masked (keys after the query get a score of -infinity).
/// 6. The end. The four lanes of a row add their partial sums l, and each writes O / l as bf16.
#ifndef EMBER_EXAMPLES_ATTENTION_H
#define EMBER_EXAMPLES_ATTENTION_H

#include "ember/ember.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace attention_example {

using namespace ember;

constexpr int64_t kHeadDim = 128;        // d
constexpr int64_t kBlockM = 64;          // query rows per block
constexpr int64_t kBlockN = 64;          // keys per tile
constexpr int64_t kThreads = 128;        // 4 warps, 16 query rows each
constexpr int64_t kLd = kHeadDim + 8;    // padded rows in shared memory: conflict-free ldmatrix
constexpr int64_t kTile = kBlockN * kLd; // elements of one K or V tile in shared memory

/// Dynamic shared memory: Q's rows, then K and V, two tiles each.
constexpr int64_t shared_bytes() { return (kBlockM * kLd + 4 * kTile) * 2; }

/// The kernel. Arguments (q, k, v, o, seq), seq a multiple of 64; launch with
/// grid_dim(seq / 64, heads), block_dim(128), shared_mem_bytes(shared_bytes()).
template <bool Causal> auto make_attention(const char *name) {
    return kernel(
        name, {"q", "k", "v", "o", "seq"},
        [](Ptr<const bfloat16> q, Ptr<const bfloat16> k, Ptr<const bfloat16> v, Ptr<bfloat16> o,
           Int seq) {
            using Op = Mma<bfloat16, m16n8k16>;
            constexpr int64_t dk = kHeadDim / 16;  // k-steps over the head dimension
            constexpr int64_t nt_s = kBlockN / 8;  // C fragments of S (keys)
            constexpr int64_t nt_o = kHeadDim / 8; // C fragments of O (head dimension)
            constexpr int64_t kt_p = kBlockN / 16; // k-steps of P V (keys)
            const float scale_log2 = float(1.0 / std::sqrt(double(kHeadDim)) * M_LOG2E);

            auto smem = dynamic_shared<bfloat16>();
            constexpr int64_t k_base = kBlockM * kLd, v_base = k_base + 2 * kTile;
            Int t = thread_idx.x, warp = t / 32, lane = t % 32;
            Int g = lane / 4, tq = lane % 4;
            Var<int64_t> head(block_idx.y * seq * kHeadDim); // this head's [seq][128]
            Var<int64_t> q0(block_idx.x * kBlockM);          // the block's first query

            // `rows` x 128 elements of `src` from row `from` of this head into shared memory at
            // `to`: 16-byte copies, consecutive threads along a row.
            auto copy_rows = [&](const Ptr<const bfloat16> &src, const Int &from, int64_t to,
                                 int64_t rows) {
                for (int64_t i = 0; i < rows * kHeadDim / 8 / kThreads; ++i) {
                    Int chunk = t + i * kThreads;
                    Int r = chunk / (kHeadDim / 8), c8 = chunk % (kHeadDim / 8) * 8;
                    async_copy<8>(smem, to + r * kLd + c8, src, head + (from + r) * kHeadDim + c8);
                }
            };
            // K's and V's tile j into stage j % 2, one commit group.
            auto issue = [&](const Int &j) {
                Int stage = j % 2;
                for (int64_t i = 0; i < kBlockN * kHeadDim / 8 / kThreads; ++i) {
                    Int chunk = t + i * kThreads;
                    Int r = chunk / (kHeadDim / 8), c8 = chunk % (kHeadDim / 8) * 8;
                    Int src = head + (j * kBlockN + r) * kHeadDim + c8;
                    async_copy<8>(smem, k_base + stage * kTile + r * kLd + c8, k, src);
                    async_copy<8>(smem, v_base + stage * kTile + r * kLd + c8, v, src);
                }
                async_commit();
            };

            copy_rows(q, q0, 0, kBlockM);
            async_commit();
            // Tiles 0 .. last: all of them, or up to the block's diagonal.
            Var<int64_t> tiles(Causal ? (q0 + kBlockM) / kBlockN : seq / kBlockN);
            issue(Int(0));
            async_wait(1); // Q has landed (tile 0 may still be in flight)
            barrier();
            std::vector<Op::A> qf(dk);
            for (int64_t kk = 0; kk < dk; ++kk)
                qf[kk].load_matrix(smem, warp * 16 * kLd + kk * 16, kLd);

            std::vector<Op::C> acc(nt_o);
            Var<float> m0(-INFINITY), m1(-INFINITY), l0(0.0f), l1(0.0f); // rows g and g + 8
            for_(0, tiles, [&](Int j) {
                if_(j + 1 < tiles, [&] { issue(j + 1); }).else_([&] { async_commit(); });
                async_wait(1);
                barrier();
                Int stage = j % 2;
                Int kt = k_base + stage * kTile, vt = v_base + stage * kTile;

                // S = Q K^T: K's rows are keys, so its tile is a column-major B (dims x keys).
                std::vector<Op::C> s(nt_s);
                for (int64_t kk = 0; kk < dk; ++kk) {
                    std::vector<Op::B> kf(nt_s);
                    for (int64_t n = 0; n < nt_s; n += 2)
                        kf[n].load_matrix_pair(kf[n + 1], smem, kt + n * 8 * kLd + kk * 16, kLd,
                                               MatrixLayout::ColMajor);
                    for (int64_t n = 0; n < nt_s; ++n) s[n] = mma(qf[kk], kf[n], s[n]);
                }

                // Scores in the log2 domain; the diagonal tile masks keys after the query.
                std::vector<SIMD<float, 4>> x;
                for (int64_t n = 0; n < nt_s; ++n) {
                    SIMD<float, 4> sv = s[n].value() * scale_log2;
                    if constexpr (Causal) {
                        Int query = q0 + warp * 16 + g, key = j * kBlockN + n * 8 + 2 * tq;
                        Bool diag = j == tiles - 1;
                        x.push_back(
                            SIMD<float, 4>{select(diag && key > query, -INFINITY, sv[0]),
                                           select(diag && key + 1 > query, -INFINITY, sv[1]),
                                           select(diag && key > query + 8, -INFINITY, sv[2]),
                                           select(diag && key + 1 > query + 8, -INFINITY, sv[3])});
                    } else {
                        x.push_back(sv);
                    }
                }
                Var<float> r0(m0), r1(m1);
                for (int64_t n = 0; n < nt_s; ++n) {
                    r0 = max(r0, max(x[n][0], x[n][1]));
                    r1 = max(r1, max(x[n][2], x[n][3]));
                }
                for (int mask : {1, 2}) {
                    r0 = max(r0, shuffle_xor(Float32(r0), mask));
                    r1 = max(r1, shuffle_xor(Float32(r1), mask));
                }
                Float32 c0 = fast::exp2(m0 - r0), c1 = fast::exp2(m1 - r1);
                m0 = r0;
                m1 = r1;
                Var<float> sum0(0.0f), sum1(0.0f);
                std::vector<SIMD<float, 4>> p;
                for (int64_t n = 0; n < nt_s; ++n) {
                    SIMD<float, 4> pv{
                        fast::exp2(x[n][0] - Float32(m0)), fast::exp2(x[n][1] - Float32(m0)),
                        fast::exp2(x[n][2] - Float32(m1)), fast::exp2(x[n][3] - Float32(m1))};
                    sum0 += pv[0] + pv[1];
                    sum1 += pv[2] + pv[3];
                    p.push_back(pv);
                }
                l0 = l0 * c0 + sum0;
                l1 = l1 * c1 + sum1;
                SIMD<float, 4> corr{c0, c0, c1, c1};
                for (int64_t n = 0; n < nt_o; ++n) acc[n] = acc[n].value() * corr;

                // O += P V: P's fragments are A fragments already; V's rows are keys (row-major B).
                for (int64_t kk = 0; kk < kt_p; ++kk) {
                    Op::A pf(Op::A::from_accumulators(p[2 * kk], p[2 * kk + 1]));
                    std::vector<Op::B> vf(nt_o);
                    for (int64_t n = 0; n < nt_o; n += 2)
                        vf[n].load_matrix_pair(vf[n + 1], smem, vt + kk * 16 * kLd + n * 8, kLd);
                    for (int64_t n = 0; n < nt_o; ++n) acc[n] = mma(pf, vf[n], acc[n]);
                }
                barrier(); // every warp is done with this stage before it is copied over
            });

            // O / l, the four lanes of a row adding their parts of l first.
            for (int mask : {1, 2}) {
                l0 += shuffle_xor(Float32(l0), mask);
                l1 += shuffle_xor(Float32(l1), mask);
            }
            Float32 inv0 = 1.0f / l0, inv1 = 1.0f / l1;
            Int row = q0 + warp * 16 + g;
            for (int64_t n = 0; n < nt_o; ++n) {
                SIMD<float, 4> ov = acc[n].value();
                Int col = n * 8 + 2 * tq;
                o.store(head + row * kHeadDim + col,
                        cast<bfloat16>(SIMD<float, 2>{ov[0] * inv0, ov[1] * inv0}));
                o.store(head + (row + 8) * kHeadDim + col,
                        cast<bfloat16>(SIMD<float, 2>{ov[2] * inv1, ov[3] * inv1}));
            }
        },
        LaunchBounds{.max_threads = kThreads});
}

/// Row i of head h of the exact softmax(Q K^T / sqrt(d)) V (bf16 [heads][seq][128] inputs),
/// element by element, and how far a correct result may lie from each: bf16's rounding (2^-7
/// relative) plus 1e-2 of sum_j p_j |v_j| (the softmax runs in f32 with an approximate exp2, and
/// P is rounded to bf16 for the second product). For the host checks of examples/attention.cpp
/// and bench/kernels.
struct Expected {
    double value, tolerance;
    bool admits(double got) const { return std::fabs(got - value) <= tolerance; }
};
inline std::vector<Expected> expected_row(const std::vector<bfloat16> &q,
                                          const std::vector<bfloat16> &k,
                                          const std::vector<bfloat16> &v, int64_t seq, int64_t h,
                                          int64_t i, bool causal) {
    const double scale = 1.0 / std::sqrt(double(kHeadDim));
    const int64_t base = h * seq * kHeadDim, keys = causal ? i + 1 : seq;
    std::vector<double> w(keys);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < kHeadDim; ++d)
            dot += double(float(q[base + i * kHeadDim + d])) *
                   double(float(k[base + j * kHeadDim + d]));
        w[j] = dot * scale;
        mx = std::max(mx, w[j]);
    }
    for (double &x : w) sum += (x = std::exp(x - mx));
    std::vector<Expected> row;
    for (int64_t d = 0; d < kHeadDim; ++d) {
        double want = 0, mag = 0;
        for (int64_t j = 0; j < keys; ++j) {
            const double vj = double(float(v[base + j * kHeadDim + d]));
            want += w[j] / sum * vj;
            mag += w[j] / sum * std::fabs(vj);
        }
        row.push_back({want, std::ldexp(std::fabs(want), -7) + 1e-2 * mag});
    }
    return row;
}

} // namespace attention_example

#endif // EMBER_EXAMPLES_ATTENTION_H
