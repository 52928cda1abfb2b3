/// \file
/// The warp's matrix operations ([Note] IR semantics: Matrix multiply-accumulate, Matrix loads) on
/// every device, against the host: every mma there is (f16 and bf16 m16n8k16 and m16n8k8, tf32
/// m16n8k8, f16 accumulation) with fragments read from global memory, ldmatrix x1/x2/x4 plain and
/// transposed against the layout the IR documents, fragments read with ldmatrix from row- and
/// column-major tiles in shared memory (one at a time and B's two at a time), a product fed to
/// the next mma as an A fragment, a small GEMM looping
/// over k with several warps per block, tf32's ignored mantissa bits, and on the CPU device the
/// launch that fails because a warp is incomplete. Values are small integers where the sums are
/// exact in f32 whatever the order, so the CPU device's emulation and the H200's tensor cores must
/// agree bit for bit there.
#include "ember/compiler/CacheSupport.h"
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

/// The host value of a fragment element.
template <class T> float to_float(T v) { return float(v); }
template <class T> T from_float(float f) { return T(f); }

/// One warp computes D = A * B + C for one Mma with row-major A (m x k), B (k x n) and C, D
/// (m x n) in global memory, each read through its fragment's load().
template <class Op> auto single_mma_kernel(const char *name) {
    using A = typename Op::A;
    using B = typename Op::B;
    using C = typename Op::C;
    using EA = typename A::element_type;
    using EC = typename C::element_type;
    return kernel(name, {"a", "b", "c", "d"},
                  [](Ptr<const EA> a, Ptr<const EA> b, Ptr<const EC> c, Ptr<EC> d) {
                      A fa;
                      B fb;
                      C fc;
                      fa.load(a, 0, Op::shape::k);
                      fb.load(b, 0, Op::shape::n);
                      fc.load(c, 0, Op::shape::n);
                      C fd = mma(fa, fb, fc);
                      fd.store(d, 0, Op::shape::n);
                  });
}

template <class Op> void check_single_mma(DeviceContext &ctx, const char *name) {
    using EA = typename Op::A::element_type;
    using EC = typename Op::C::element_type;
    constexpr int M = Op::shape::m, N = Op::shape::n, K = Op::shape::k;
    std::vector<EA> a(M * K), b(K * N);
    std::vector<EC> c(M * N), d(M * N, from_float<EC>(-1.0f));
    for (int i = 0; i < M * K; ++i) a[i] = from_float<EA>(float((i * 7) % 9 - 4));
    for (int i = 0; i < K * N; ++i) b[i] = from_float<EA>(float((i * 5) % 7 - 3));
    for (int i = 0; i < M * N; ++i) c[i] = from_float<EC>(float(i % 11 - 5));
    auto da = ctx.enqueue_create_buffer<EA>(M * K);
    auto db = ctx.enqueue_create_buffer<EA>(K * N);
    auto dc = ctx.enqueue_create_buffer<EC>(M * N);
    auto dd = ctx.enqueue_create_buffer<EC>(M * N);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    ctx.enqueue_copy(dc, c.data());
    static const auto k = single_mma_kernel<Op>(name);
    ctx.enqueue_function(k, da, db, dc, dd, grid_dim(1), block_dim(32));
    ctx.enqueue_copy(d.data(), dd);
    ctx.synchronize();
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            float want = to_float(c[r * N + col]);
            for (int j = 0; j < K; ++j) want += to_float(a[r * K + j]) * to_float(b[j * N + col]);
            ASSERT_EQ(to_float(d[r * N + col]), want) << name << ": D[" << r << "][" << col << "]";
        }
}

class MmaTest : public ember::testing::DeviceTest {};

/// Whether the fragments of F hold every element of the operand's matrix exactly once.
template <class F> bool covers_once() {
    std::vector<int> seen(F::rows * F::cols, 0);
    for (int l = 0; l < 32; ++l)
        for (int i = 0; i < F::size; ++i) ++seen[F::row(l, i) * F::cols + F::col(l, i)];
    for (int s : seen)
        if (s != 1) return false;
    return true;
}

TEST_P(MmaTest, EveryShapeAndInputGivesTheHostsProduct) {
    check_single_mma<Mma<bfloat16, m16n8k16>>(ctx(), "mma_bf16_k16");
    check_single_mma<Mma<bfloat16, m16n8k8>>(ctx(), "mma_bf16_k8");
    check_single_mma<Mma<half, m16n8k16>>(ctx(), "mma_f16_k16");
    check_single_mma<Mma<half, m16n8k8>>(ctx(), "mma_f16_k8");
    check_single_mma<Mma<half, m16n8k16, half>>(ctx(), "mma_f16_k16_f16acc");
    check_single_mma<Mma<half, m16n8k8, half>>(ctx(), "mma_f16_k8_f16acc");
    check_single_mma<Mma<tf32, m16n8k8>>(ctx(), "mma_tf32_k8");
    check_single_mma<Mma<float8_e4m3, m16n8k32>>(ctx(), "mma_e4m3_k32");
    check_single_mma<Mma<float8_e5m2, m16n8k32>>(ctx(), "mma_e5m2_k32");
}

TEST_P(MmaTest, FragmentLayoutsAreThePtxIsas) {
    // Host-side row() and col() against the PTX ISA's tables for m16n8k16 (lane 5: group 1,
    // thread in group 1).
    using Op = Mma<bfloat16, m16n8k16>;
    static_assert(Op::A::size == 8 && Op::B::size == 4 && Op::C::size == 4);
    EXPECT_EQ(Op::A::row(5, 0), 1);
    EXPECT_EQ(Op::A::col(5, 0), 2);
    EXPECT_EQ(Op::A::row(5, 2), 9);
    EXPECT_EQ(Op::A::col(5, 5), 11);
    EXPECT_EQ(Op::A::row(5, 7), 9);
    EXPECT_EQ(Op::B::row(5, 0), 2);
    EXPECT_EQ(Op::B::row(5, 3), 11);
    EXPECT_EQ(Op::B::col(5, 3), 1);
    EXPECT_EQ(Op::C::row(5, 3), 9);
    EXPECT_EQ(Op::C::col(5, 3), 3);
    using T = Mma<tf32, m16n8k8>;
    EXPECT_EQ(T::A::row(5, 1), 9);
    EXPECT_EQ(T::A::col(5, 2), 5);
    EXPECT_EQ(T::B::row(5, 1), 5);
    // Every element of every operand is held by exactly one lane.
    EXPECT_TRUE(covers_once<Op::A>());
    EXPECT_TRUE(covers_once<Op::B>());
    EXPECT_TRUE(covers_once<Op::C>());
    EXPECT_TRUE((covers_once<Mma<half, m16n8k8>::A>()));
    EXPECT_TRUE((covers_once<Mma<half, m16n8k8>::B>()));
    EXPECT_TRUE(covers_once<T::A>());
    EXPECT_TRUE(covers_once<T::B>());
    // m16n8k32 with 8-bit floats: four elements of a row (A) or column (B) per 32-bit register.
    using F = Mma<float8_e4m3, m16n8k32>;
    static_assert(F::A::size == 16 && F::B::size == 8 && F::C::size == 4);
    EXPECT_EQ(F::A::row(5, 3), 1);
    EXPECT_EQ(F::A::col(5, 3), 7);
    EXPECT_EQ(F::A::row(5, 4), 9);
    EXPECT_EQ(F::A::col(5, 9), 21);
    EXPECT_EQ(F::A::row(5, 12), 9);
    EXPECT_EQ(F::B::row(5, 2), 6);
    EXPECT_EQ(F::B::row(5, 5), 21);
    EXPECT_EQ(F::B::col(5, 5), 1);
    EXPECT_TRUE(covers_once<F::A>());
    EXPECT_TRUE(covers_once<F::B>());
}

// Lane l stores the 2N elements ldmatrix gave it. The shared tile holds 32 rows of 8 elements,
// element (r, c) = 100 r + c, and lane l points at row (l * 5) % 32: any row order works.
template <int N, bool Trans> auto ldmatrix_kernel(const char *name) {
    return kernel(name, {"in", "out"}, [](Ptr<const int16_t> in, Ptr<int16_t> out) {
        auto tile = shared_array<int16_t, 32 * 8>();
        Int l = thread_idx.x;
        for (int c = 0; c < 8; ++c) tile[l * 8 + c] = in[l * 8 + c];
        barrier();
        SIMD<int16_t, 2 * N> v = ldmatrix<N>(tile, (l * 5) % 32 * 8, Trans);
        for (int e = 0; e < 2 * N; ++e) out[l * 2 * N + e] = v[e];
    });
}

template <int N, bool Trans> void check_ldmatrix(DeviceContext &ctx, const char *name) {
    std::vector<int16_t> in(32 * 8), out(32 * 2 * N, -1);
    for (int r = 0; r < 32; ++r)
        for (int c = 0; c < 8; ++c) in[r * 8 + c] = int16_t(100 * r + c);
    auto din = ctx.enqueue_create_buffer<int16_t>(in.size());
    auto dout = ctx.enqueue_create_buffer<int16_t>(out.size());
    ctx.enqueue_copy(din, in.data());
    static const auto k = ldmatrix_kernel<N, Trans>(name);
    ctx.enqueue_function(k, din, dout, grid_dim(1), block_dim(32));
    ctx.enqueue_copy(out.data(), dout);
    ctx.synchronize();
    auto row_of = [](int lane) { return (lane * 5) % 32; }; // the row lane `lane` points at
    for (int l = 0; l < 32; ++l)
        for (int j = 0; j < N; ++j)
            for (int e = 0; e < 2; ++e) {
                // Matrix j's row r is the row lane 8j + r points at.
                const int r = Trans ? 2 * (l % 4) + e : l / 4, c = Trans ? l / 4 : 2 * (l % 4) + e;
                ASSERT_EQ(out[l * 2 * N + 2 * j + e], in[row_of(8 * j + r) * 8 + c])
                    << name << ": lane " << l << " matrix " << j << " element " << e;
            }
}

TEST_P(MmaTest, LdmatrixGivesEachLaneTheDocumentedElements) {
    check_ldmatrix<1, false>(ctx(), "ldmatrix_x1");
    check_ldmatrix<2, false>(ctx(), "ldmatrix_x2");
    check_ldmatrix<4, false>(ctx(), "ldmatrix_x4");
    check_ldmatrix<1, true>(ctx(), "ldmatrix_x1_trans");
    check_ldmatrix<2, true>(ctx(), "ldmatrix_x2_trans");
    check_ldmatrix<4, true>(ctx(), "ldmatrix_x4_trans");
}

// A and B come into shared memory in the layouts asked for (padded rows of 24 elements), the
// fragments from there through ldmatrix.
template <class Op, MatrixLayout LA, MatrixLayout LB> auto shared_mma_kernel(const char *name) {
    using E = typename Op::A::element_type;
    return kernel(name, {"a", "b", "d"}, [](Ptr<const E> a, Ptr<const E> b, Ptr<float> d) {
        constexpr int M = Op::shape::m, N = Op::shape::n, K = Op::shape::k, ld = 24;
        auto sa = shared_array<E, 16 * ld>();
        auto sb = shared_array<E, 16 * ld>();
        Int l = thread_idx.x;
        // a and b are row-major in global memory; thread l copies row l / 2 ... of each.
        for_(l, Int(M * K), 32, [&](Int i) {
            Int r = i / K, c = i % K;
            sa[LA == MatrixLayout::RowMajor ? r * ld + c : c * ld + r] = a[i];
        });
        for_(l, Int(K * N), 32, [&](Int i) {
            Int r = i / N, c = i % N;
            sb[LB == MatrixLayout::RowMajor ? r * ld + c : c * ld + r] = b[i];
        });
        barrier();
        typename Op::A fa;
        typename Op::B fb;
        typename Op::C acc;
        fa.load_matrix(sa, 0, ld, LA);
        fb.load_matrix(sb, 0, ld, LB);
        acc = mma(fa, fb, acc);
        acc.store(d, 0, N);
    });
}

template <class Op, MatrixLayout LA, MatrixLayout LB>
void check_shared_mma(DeviceContext &ctx, const char *name) {
    using E = typename Op::A::element_type;
    constexpr int M = Op::shape::m, N = Op::shape::n, K = Op::shape::k;
    std::vector<E> a(M * K), b(K * N);
    std::vector<float> d(M * N, -1.0f);
    for (int i = 0; i < M * K; ++i) a[i] = E(float((i * 3) % 7 - 3));
    for (int i = 0; i < K * N; ++i) b[i] = E(float((i * 11) % 5 - 2));
    auto da = ctx.enqueue_create_buffer<E>(M * K);
    auto db = ctx.enqueue_create_buffer<E>(K * N);
    auto dd = ctx.enqueue_create_buffer<float>(M * N);
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    static const auto k = shared_mma_kernel<Op, LA, LB>(name);
    ctx.enqueue_function(k, da, db, dd, grid_dim(1), block_dim(32));
    ctx.enqueue_copy(d.data(), dd);
    ctx.synchronize();
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
            float want = 0;
            for (int j = 0; j < K; ++j) want += float(a[r * K + j]) * float(b[j * N + c]);
            ASSERT_EQ(d[r * N + c], want) << name << ": D[" << r << "][" << c << "]";
        }
}

TEST_P(MmaTest, FragmentsFromSharedMemoryThroughLdmatrix) {
    constexpr auto R = MatrixLayout::RowMajor, C = MatrixLayout::ColMajor;
    check_shared_mma<Mma<bfloat16, m16n8k16>, R, R>(ctx(), "ldm_bf16_rr");
    check_shared_mma<Mma<bfloat16, m16n8k16>, R, C>(ctx(), "ldm_bf16_rc");
    check_shared_mma<Mma<bfloat16, m16n8k16>, C, R>(ctx(), "ldm_bf16_cr");
    check_shared_mma<Mma<bfloat16, m16n8k16>, C, C>(ctx(), "ldm_bf16_cc");
    check_shared_mma<Mma<half, m16n8k8>, R, R>(ctx(), "ldm_f16_k8_rr");
    check_shared_mma<Mma<half, m16n8k8>, C, C>(ctx(), "ldm_f16_k8_cc");
}

// D (16 x 16) = A (16 x 16) * B (16 x 16) as two mmas, B's two fragments read by one
// load_matrix_pair from a tile in the layout asked for.
template <class Op, MatrixLayout LB> auto pair_kernel(const char *name) {
    using E = typename Op::A::element_type;
    return kernel(name, {"a", "b", "d"}, [](Ptr<const E> a, Ptr<const E> b, Ptr<float> d) {
        constexpr int K = Op::shape::k, ld = 24;
        auto sb = shared_array<E, 16 * ld>();
        Int l = thread_idx.x;
        for_(l, Int(K * 16), 32, [&](Int i) {
            Int r = i / 16, c = i % 16;
            sb[LB == MatrixLayout::RowMajor ? r * ld + c : c * ld + r] = b[i];
        });
        barrier();
        typename Op::A fa;
        typename Op::B lo, hi;
        typename Op::C d0, d1;
        fa.load(a, 0, K);
        lo.load_matrix_pair(hi, sb, 0, ld, LB);
        d0 = mma(fa, lo, d0);
        d1 = mma(fa, hi, d1);
        d0.store(d, 0, 16);
        d1.store(d, 8, 16);
    });
}

template <class Op, MatrixLayout LB> void check_pair(DeviceContext &ctx, const char *name) {
    using E = typename Op::A::element_type;
    constexpr int K = Op::shape::k;
    std::vector<E> a(16 * K), b(K * 16);
    std::vector<float> d(16 * 16, -1.0f);
    for (int i = 0; i < 16 * K; ++i) a[i] = E(float((i * 5) % 9 - 4));
    for (int i = 0; i < K * 16; ++i) b[i] = E(float((i * 7) % 11 - 5));
    auto da = ctx.enqueue_create_buffer<E>(a.size());
    auto db = ctx.enqueue_create_buffer<E>(b.size());
    auto dd = ctx.enqueue_create_buffer<float>(d.size());
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    static const auto k = pair_kernel<Op, LB>(name);
    ctx.enqueue_function(k, da, db, dd, grid_dim(1), block_dim(32));
    ctx.enqueue_copy(d.data(), dd);
    ctx.synchronize();
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) {
            float want = 0;
            for (int j = 0; j < K; ++j) want += float(a[r * K + j]) * float(b[j * 16 + c]);
            ASSERT_EQ(d[r * 16 + c], want) << name << ": D[" << r << "][" << c << "]";
        }
}

TEST_P(MmaTest, LoadMatrixPairReadsTwoBFragmentsAtOnce) {
    check_pair<Mma<bfloat16, m16n8k16>, MatrixLayout::RowMajor>(ctx(), "pair_bf16_k16_row");
    check_pair<Mma<bfloat16, m16n8k16>, MatrixLayout::ColMajor>(ctx(), "pair_bf16_k16_col");
    check_pair<Mma<half, m16n8k8>, MatrixLayout::RowMajor>(ctx(), "pair_f16_k8_row");
    check_pair<Mma<half, m16n8k8>, MatrixLayout::ColMajor>(ctx(), "pair_f16_k8_col");
}

// E = (A B) V for 16 x 16 A and B and 16 x 8 V: A B's two C fragments become one A fragment
// (from_accumulators) without leaving the registers, as in attention.
const auto chained = kernel(
    "mma_chained", {"a", "b", "v", "e"},
    [](Ptr<const bfloat16> a, Ptr<const bfloat16> b, Ptr<const bfloat16> v, Ptr<float> e) {
        using Op = Mma<bfloat16, m16n8k16>;
        Op::A fa;
        Op::B b0, b1, fv;
        Op::C p0, p1, out;
        fa.load(a, 0, 16);
        b0.load(b, 0, 16);
        b1.load(b, 8, 16);
        fv.load(v, 0, 8);
        p0 = mma(fa, b0, p0);
        p1 = mma(fa, b1, p1);
        Op::A fp(Op::A::from_accumulators(p0, p1));
        out = mma(fp, fv, out);
        out.store(e, 0, 8);
    });

TEST_P(MmaTest, AProductFeedsTheNextMmaAsAnAFragment) {
    std::vector<bfloat16> a(256), b(256), v(128);
    std::vector<float> e(128, -1.0f);
    for (int i = 0; i < 256; ++i)
        a[i] = bfloat16(float((i * 5) % 3 - 1)), b[i] = bfloat16(float((i * 7) % 3 - 1));
    for (int i = 0; i < 128; ++i) v[i] = bfloat16(float(i % 5 - 2));
    auto da = ctx().enqueue_create_buffer<bfloat16>(256);
    auto db = ctx().enqueue_create_buffer<bfloat16>(256);
    auto dv = ctx().enqueue_create_buffer<bfloat16>(128);
    auto de = ctx().enqueue_create_buffer<float>(128);
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_copy(dv, v.data());
    ctx().enqueue_function(chained, da, db, dv, de, grid_dim(1), block_dim(32));
    ctx().enqueue_copy(e.data(), de);
    ctx().synchronize();
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 8; ++c) {
            float want = 0;
            for (int j = 0; j < 16; ++j) {
                float p = 0; // |p| <= 16: exact in bf16
                for (int q = 0; q < 16; ++q) p += float(a[r * 16 + q]) * float(b[q * 16 + j]);
                want += p * float(v[j * 8 + c]);
            }
            ASSERT_EQ(e[r * 8 + c], want) << "E[" << r << "][" << c << "]";
        }
}

// C (m x n) = A (m x k) * B (k x n), all row-major in global memory; a block of 4 warps computes
// a 32 x 16 tile, each warp one 16 x 8 piece, looping over k in steps of 16.
const auto small_gemm = kernel(
    "mma_small_gemm", {"a", "b", "c", "k"},
    [](Ptr<const bfloat16> a, Ptr<const bfloat16> b, Ptr<float> c, Int k) {
        using Op = Mma<bfloat16, m16n8k16>;
        Int warp = thread_idx.x / 32;
        Int n = grid_dim.x * 16;
        Int row = block_idx.y * 32 + warp / 2 * 16, col = block_idx.x * 16 + warp % 2 * 8;
        Op::C acc;
        for_(0, k, 16, [&](Int k0) {
            Op::A fa;
            Op::B fb;
            fa.load(a, row * k + k0, k);
            fb.load(b, k0 * n + col, n);
            acc = mma(fa, fb, acc);
        });
        acc.store(c, row * n + col, n);
    });

TEST_P(MmaTest, ASmallGemmWithSeveralWarpsMatchesTheHost) {
    constexpr int M = 64, N = 48, K = 96;
    std::vector<bfloat16> a(M * K), b(K * N);
    std::vector<float> c(M * N, -1.0f);
    for (int i = 0; i < M * K; ++i) a[i] = bfloat16(float((i * 37) % 101 - 50) / 64.0f);
    for (int i = 0; i < K * N; ++i) b[i] = bfloat16(float((i * 53) % 89 - 44) / 32.0f);
    auto da = ctx().enqueue_create_buffer<bfloat16>(M * K);
    auto db = ctx().enqueue_create_buffer<bfloat16>(K * N);
    auto dc = ctx().enqueue_create_buffer<float>(M * N);
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_function(small_gemm, da, db, dc, int64_t(K), grid_dim(N / 16, M / 32),
                           block_dim(128));
    ctx().enqueue_copy(c.data(), dc);
    ctx().synchronize();
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            double want = 0, size = 0;
            for (int j = 0; j < K; ++j) {
                const double p = double(float(a[r * K + j])) * double(float(b[j * N + col]));
                want += p;
                size += std::fabs(p);
            }
            // Products are exact; the sums round in f32 in an order of the hardware's choosing.
            ASSERT_NEAR(c[r * N + col], want, 1e-6 * size + 1e-30)
                << "C[" << r << "][" << col << "]";
        }
}

// tf32 takes the sign, the exponent and 10 mantissa bits of each f32: 1 + 2^-11 is 1 to it, and
// 1 + 2^-10 is itself.
const auto tf32_bits = kernel("mma_tf32_bits", {"a", "d"}, [](Ptr<const float> a, Ptr<float> d) {
    using Op = Mma<tf32, m16n8k8>;
    Op::A fa;
    Op::B fb(Op::B::vector_type(1.0f));
    Op::C acc;
    fa.load(a, 0, 8);
    acc = mma(fa, fb, acc);
    acc.store(d, 0, 8);
});

TEST_P(MmaTest, Tf32IgnoresTheLowThirteenMantissaBits) {
    std::vector<float> a(16 * 8), d(16 * 8, -1.0f);
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 8; ++c)
            a[r * 8 + c] = r % 2 ? 1.0f + std::ldexp(1.0f, -10) : 1.0f + std::ldexp(1.0f, -11);
    auto da = ctx().enqueue_create_buffer<float>(a.size());
    auto dd = ctx().enqueue_create_buffer<float>(d.size());
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_function(tf32_bits, da, dd, grid_dim(1), block_dim(32));
    ctx().enqueue_copy(d.data(), dd);
    ctx().synchronize();
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 8; ++c)
            ASSERT_EQ(d[r * 8 + c], r % 2 ? 8.0f * (1.0f + std::ldexp(1.0f, -10)) : 8.0f)
                << "row " << r;
}

const auto partial_warp = kernel("mma_partial_warp", {"d"}, [](Ptr<float> d) {
    using Op = Mma<bfloat16, m16n8k16>;
    Op::A fa;
    Op::B fb;
    Op::C acc;
    acc = mma(fa, fb, acc);
    acc.store(d, 0, 8);
});

TEST_P(MmaTest, AnIncompleteWarpFailsTheLaunchOnTheCpu) {
    if (GetParam() != "cpu") GTEST_SKIP() << "undefined on GPUs: only the CPU device checks it";
    auto dd = ctx().enqueue_create_buffer<float>(16 * 8);
    try {
        ctx().enqueue_function(partial_warp, dd, grid_dim(1), block_dim(48));
        ctx().synchronize();
        FAIL() << "an mma in a warp of 16 lanes ran";
    } catch (const LaunchError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("ran with 16 of its warp's 32 lanes"), std::string::npos) << what;
        EXPECT_NE(what.find("mma_partial_warp"), std::string::npos) << what;
    }
}

/// While alive, every target builds the warp matrix operations by `path`.
struct ForcedMatrixPath {
    explicit ForcedMatrixPath(MatrixPath path) { set_matrix_path_for_testing(path); }
    ~ForcedMatrixPath() { set_matrix_path_for_testing(MatrixPath::native); }
};

/// Every mma there is, once, against the host.
void check_every_single_mma(DeviceContext &ctx, const std::string &path) {
    check_single_mma<Mma<bfloat16, m16n8k16>>(ctx, ("mma_bf16_k16_" + path).c_str());
    check_single_mma<Mma<bfloat16, m16n8k8>>(ctx, ("mma_bf16_k8_" + path).c_str());
    check_single_mma<Mma<half, m16n8k16>>(ctx, ("mma_f16_k16_" + path).c_str());
    check_single_mma<Mma<half, m16n8k8, half>>(ctx, ("mma_f16_k8_f16acc_" + path).c_str());
    check_single_mma<Mma<tf32, m16n8k8>>(ctx, ("mma_tf32_k8_" + path).c_str());
    check_single_mma<Mma<float8_e4m3, m16n8k32>>(ctx, ("mma_e4m3_k32_" + path).c_str());
    check_single_mma<Mma<float8_e5m2, m16n8k32>>(ctx, ("mma_e5m2_k32_" + path).c_str());
}

// Targets without matrix instructions (AMDGPU's RDNA) build mma and ldmatrix from warp shuffles;
// the test hook makes every target do so, so that the shuffles run here against the same host
// products (and, on the GPU, against what the tensor cores gave above).
TEST_P(MmaTest, TheOperationsBuiltFromShufflesGiveTheSameResults) {
    ForcedMatrixPath on(MatrixPath::shuffles);
    check_every_single_mma(ctx(), "shuffles");
    check_ldmatrix<1, true>(ctx(), "ldmatrix_x1_trans");
    check_ldmatrix<2, false>(ctx(), "ldmatrix_x2");
    check_ldmatrix<4, true>(ctx(), "ldmatrix_x4_trans");
    check_shared_mma<Mma<bfloat16, m16n8k16>, MatrixLayout::ColMajor, MatrixLayout::RowMajor>(
        ctx(), "ldm_bf16_cr");
    check_pair<Mma<half, m16n8k8>, MatrixLayout::RowMajor>(ctx(), "pair_f16_k8_row");
}

// AMDGPU's CDNA processors build mma from 16-block 4 x 4 MFMAs ([Note] Matrix multiply-accumulate
// from 4 x 4 blocks); the hook makes every target move the fragments as they do, with each block
// instruction emulated from shuffles, so that the moves run against the host here.
TEST_P(MmaTest, TheMmasBuiltFromFourByFourBlocksGiveTheSameResults) {
    for (MatrixPath path : {MatrixPath::blocks, MatrixPath::blocks_k2}) {
        const std::string name = path == MatrixPath::blocks ? "blocks" : "blocks_k2";
        SCOPED_TRACE(name);
        ForcedMatrixPath on(path);
        check_every_single_mma(ctx(), name);
        check_shared_mma<Mma<bfloat16, m16n8k16>, MatrixLayout::ColMajor, MatrixLayout::RowMajor>(
            ctx(), ("ldm_bf16_cr_" + name).c_str());
        check_pair<Mma<half, m16n8k8>, MatrixLayout::RowMajor>(ctx(),
                                                               ("pair_f16_k8_row_" + name).c_str());
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, MmaTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
