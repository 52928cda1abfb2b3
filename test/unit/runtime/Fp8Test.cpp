/// \file
/// The 8-bit floats ([Note] IR semantics: 8-bit floats) on every device, against the host types
/// of ember/Float8.h: every byte of e4m3 and e5m2 cast to f32, f16 and bf16 (exact); f32 values
/// across the whole range (every exponent, mantissas near the rounding points, subnormals, the
/// saturation bounds, infinities, NaNs) cast to both, and f16 and bf16 values too (rounded to
/// nearest even, saturated); e4m3 <-> e5m2; vectors lane by lane; and values the formats define
/// (448, 57344, the smallest subnormals, ties) pinned against their bits.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

class Fp8Test : public ember::testing::DeviceTest {};

/// The float's bits, with every NaN the same (the devices need not agree on a NaN's payload).
uint32_t canonical_bits(float f) {
    return std::isnan(f) ? 0x7fc00000u : std::bit_cast<uint32_t>(f);
}

/// Every byte as F, cast to f32, f16 and bf16 on the device, against the host's F.
template <class F> void check_every_byte(DeviceContext &ctx, const char *name) {
    static const auto k = kernel(name, {"in", "f", "h", "b"},
                                 [](Ptr<const F> in, Ptr<float> f, Ptr<half> h, Ptr<bfloat16> b) {
                                     Int i = global_idx.x;
                                     f[i] = cast<float>(in[i]);
                                     h[i] = cast<half>(in[i]);
                                     b[i] = cast<bfloat16>(in[i]);
                                 });
    std::vector<F> in(256);
    for (int i = 0; i < 256; ++i) in[i] = F::from_bits(uint8_t(i));
    auto din = ctx.enqueue_create_buffer<F>(256);
    auto df = ctx.enqueue_create_buffer<float>(256);
    auto dh = ctx.enqueue_create_buffer<half>(256);
    auto db = ctx.enqueue_create_buffer<bfloat16>(256);
    ctx.enqueue_copy(din, in.data());
    ctx.enqueue_function(k, din, df, dh, db, grid_dim(2), block_dim(128));
    std::vector<float> f(256);
    std::vector<half> h(256);
    std::vector<bfloat16> b(256);
    ctx.enqueue_copy(f.data(), df);
    ctx.enqueue_copy(h.data(), dh);
    ctx.enqueue_copy(b.data(), db);
    ctx.synchronize();
    for (int i = 0; i < 256; ++i) {
        const float want = float(in[i]);
        EXPECT_EQ(canonical_bits(f[i]), canonical_bits(want))
            << name << ": byte " << i << " to f32";
        EXPECT_EQ(canonical_bits(float(h[i])), canonical_bits(want))
            << name << ": byte " << i << " to f16";
        EXPECT_EQ(canonical_bits(float(b[i])), canonical_bits(want))
            << name << ": byte " << i << " to bf16";
    }
}

/// f32 values that exercise a conversion to 8 bits: for every exponent that can reach the
/// formats (and a few past them), mantissas at, around and between the rounding points of 2 and
/// 3 kept bits, both signs; infinities, NaNs and zeros.
std::vector<float> conversion_inputs() {
    std::vector<float> v;
    for (uint32_t e = 90; e <= 150; ++e)
        for (uint32_t m :
             {0u,        1u,        0x7fffu,   0x8000u,   0x80000u,  0x7ffffu,  0x80001u,
              0xfffffu,  0x100000u, 0x100001u, 0x17ffffu, 0x180000u, 0x180001u, 0x200000u,
              0x280000u, 0x300000u, 0x380000u, 0x3c0000u, 0x400000u, 0x480000u, 0x500000u,
              0x5fffffu, 0x600000u, 0x600001u, 0x700000u, 0x780000u, 0x7fffffu})
            for (uint32_t s : {0u, 0x80000000u})
                v.push_back(std::bit_cast<float>(s | (e << 23) | m));
    for (float x : {0.0f,     -0.0f,    INFINITY, -INFINITY, NAN,      -NAN,     448.0f, 464.0f,
                    463.99f,  480.0f,   57344.0f, 61439.0f,  61440.0f, 1e30f,    -1e30f, 0x1p-9f,
                    0x1p-10f, 0x3p-10f, 0x5p-10f, 0x1p-16f,  0x1p-17f, 0x3p-17f, 1e-30f, 0x1p-149f})
        v.push_back(x);
    return v;
}

/// `in` cast to F from f32, and through f16 and bf16 (each exact in f32), on the device.
template <class F> void check_from_float(DeviceContext &ctx, const char *name) {
    static const auto k = kernel(
        name, {"in", "out", "from_half", "from_bf16"},
        [](Ptr<const float> in, Ptr<F> out, Ptr<F> from_half, Ptr<F> from_bf16) {
            Int i = global_idx.x;
            out[i] = cast<F>(in[i]);
            from_half[i] = cast<F>(cast<half>(in[i]));
            from_bf16[i] = cast<F>(cast<bfloat16>(in[i]));
        });
    std::vector<float> in = conversion_inputs();
    const size_t n = in.size(), padded = (n + 127) / 128 * 128;
    in.resize(padded, 0.0f);
    auto din = ctx.enqueue_create_buffer<float>(padded);
    auto dout = ctx.enqueue_create_buffer<F>(padded);
    auto dh = ctx.enqueue_create_buffer<F>(padded);
    auto db = ctx.enqueue_create_buffer<F>(padded);
    ctx.enqueue_copy(din, in.data());
    ctx.enqueue_function(k, din, dout, dh, db, grid_dim(padded / 128), block_dim(128));
    std::vector<F> out(padded), from_half(padded), from_bf16(padded);
    ctx.enqueue_copy(out.data(), dout);
    ctx.enqueue_copy(from_half.data(), dh);
    ctx.enqueue_copy(from_bf16.data(), db);
    ctx.synchronize();
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(out[i].bits(), F(in[i]).bits())
            << name << ": " << in[i] << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(in[i])
            << ")";
        EXPECT_EQ(from_half[i].bits(), F(float(half(in[i]))).bits())
            << name << ": f16 of " << in[i];
        EXPECT_EQ(from_bf16[i].bits(), F(float(bfloat16(in[i]))).bits())
            << name << ": bf16 of " << in[i];
    }
}

TEST_P(Fp8Test, EveryByteConvertsExactlyToF32F16AndBf16) {
    check_every_byte<float8_e4m3>(ctx(), "e4m3_bytes");
    check_every_byte<float8_e5m2>(ctx(), "e5m2_bytes");
}

TEST_P(Fp8Test, FloatsRoundToNearestEvenAndSaturate) {
    check_from_float<float8_e4m3>(ctx(), "to_e4m3");
    check_from_float<float8_e5m2>(ctx(), "to_e5m2");
}

TEST(Fp8Host, TheFormatsValuesHaveTheirBits) {
    // e4m3: largest finite 448 = 0x7e; above it, infinity included, saturates; NaN is 0x7f.
    EXPECT_EQ(float8_e4m3(448.0f).bits(), 0x7e);
    EXPECT_EQ(float8_e4m3(463.99f).bits(), 0x7e);
    EXPECT_EQ(float8_e4m3(500.0f).bits(), 0x7e);
    EXPECT_EQ(float8_e4m3(-INFINITY).bits(), 0xfe);
    EXPECT_EQ(float8_e4m3(NAN).bits(), 0x7f);
    EXPECT_TRUE(std::isnan(float(float8_e4m3::from_bits(0xff))));
    EXPECT_EQ(float(float8_e4m3::from_bits(0x01)), 0x1p-9f); // the smallest subnormal
    EXPECT_EQ(float8_e4m3(0x1p-10f).bits(), 0x00);           // a tie: to even, zero
    EXPECT_EQ(float8_e4m3(0x3p-10f).bits(), 0x02);           // 1.5 units: to even, 2
    EXPECT_EQ(float8_e4m3(-0.0f).bits(), 0x80);
    EXPECT_EQ(float8_e4m3(1.0f).bits(), 0x38);
    EXPECT_EQ(float8_e4m3(1.0625f).bits(), 0x38); // a tie between 1 and 1.125: to even
    EXPECT_EQ(float8_e4m3(1.1875f).bits(), 0x3a); // a tie between 1.125 and 1.25: to even
    // e5m2: the high byte of an f16; largest finite 57344 = 0x7b; infinity saturates too.
    EXPECT_EQ(float8_e5m2(57344.0f).bits(), 0x7b);
    EXPECT_EQ(float8_e5m2(61440.0f).bits(), 0x7b);
    EXPECT_EQ(float8_e5m2(INFINITY).bits(), 0x7b);
    EXPECT_EQ(float(float8_e5m2::from_bits(0x7c)), INFINITY);
    EXPECT_EQ(float(float8_e5m2::from_bits(0x01)), 0x1p-16f);
    EXPECT_EQ(float8_e5m2(1.0f).bits(), 0x3c);
    EXPECT_EQ(float8_e5m2(1.125f).bits(), 0x3c); // a tie between 1 and 1.25: to even
    for (int i = 0; i < 256; ++i) {              // every finite e5m2 is the f16 of its byte
        const uint8_t b = uint8_t(i);
        EXPECT_EQ(canonical_bits(float(float8_e5m2::from_bits(b))),
                  canonical_bits(float(half::from_bits(uint16_t(b << 8)))));
        // and every value converts back to itself
        if (!std::isnan(float(float8_e4m3::from_bits(b)))) {
            EXPECT_EQ(float8_e4m3(float(float8_e4m3::from_bits(b))).bits(), b);
        }
        if (!std::isnan(float(float8_e5m2::from_bits(b))) && (b & 0x7f) != 0x7c) {
            EXPECT_EQ(float8_e5m2(float(float8_e5m2::from_bits(b))).bits(), b);
        }
    }
}

/// The bits of the finite F nearest to `f` (ties to the even code), found by trying every one:
/// the definition the conversions' bit arithmetic must agree with. Saturating, 0x7f for NaN.
template <class F> uint8_t nearest_by_search(float f) {
    if (std::isnan(f)) return 0x7f;
    auto value = [](int c) { return double(float(F::from_bits(uint8_t(c)))); };
    int best = -1, largest = -1;
    for (int c = 0; c < 256; ++c) {
        const double v = value(c);
        if (!std::isfinite(v) || std::signbit(v) != std::signbit(f)) continue;
        if (largest < 0 || std::fabs(v) > std::fabs(value(largest))) largest = c;
        const double d = std::fabs(v - double(f)),
                     best_d = best < 0 ? 0 : std::fabs(value(best) - double(f));
        if (best < 0 || d < best_d || (d == best_d && c % 2 == 0)) best = c;
    }
    // At or past the largest finite value (infinity too) it saturates.
    return std::fabs(double(f)) >= std::fabs(value(largest)) ? uint8_t(largest) : uint8_t(best);
}

TEST(Fp8Host, ConversionsGiveTheNearestValueFoundBySearch) {
    std::vector<float> in = conversion_inputs();
    for (uint32_t i = 0; i < 200000; ++i)
        in.push_back(std::bit_cast<float>(i * 2654435761u)); // spread bits
    for (float f : in) {
        ASSERT_EQ(float8_e4m3(f).bits(), nearest_by_search<float8_e4m3>(f)) << f;
        ASSERT_EQ(float8_e5m2(f).bits(), nearest_by_search<float8_e5m2>(f)) << f;
    }
}

const auto between_formats = kernel("fp8_between_formats", {"a", "b", "to_b", "to_a"},
                                    [](Ptr<const float8_e4m3> a, Ptr<const float8_e5m2> b,
                                       Ptr<float8_e5m2> to_b, Ptr<float8_e4m3> to_a) {
                                        Int i = global_idx.x;
                                        to_b[i] = cast<float8_e5m2>(a[i]);
                                        to_a[i] = cast<float8_e4m3>(b[i]);
                                    });

const auto vectors = kernel("fp8_vectors", {"in", "out"}, [](Ptr<const float> in, Ptr<float> out) {
    Int i = global_idx.x;
    SIMD<float, 4> x = in.load<4>(i * 4);
    SIMD<float8_e4m3, 4> q = cast<float8_e4m3>(x);
    out.store(i * 4, cast<float>(q));
});

TEST_P(Fp8Test, TheFormatsConvertToEachOtherAndVectorsLaneByLane) {
    std::vector<float8_e4m3> a(256);
    std::vector<float8_e5m2> b(256);
    for (int i = 0; i < 256; ++i)
        a[i] = float8_e4m3::from_bits(uint8_t(i)), b[i] = float8_e5m2::from_bits(uint8_t(i));
    auto da = ctx().enqueue_create_buffer<float8_e4m3>(256);
    auto db = ctx().enqueue_create_buffer<float8_e5m2>(256);
    auto dtb = ctx().enqueue_create_buffer<float8_e5m2>(256);
    auto dta = ctx().enqueue_create_buffer<float8_e4m3>(256);
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_function(between_formats, da, db, dtb, dta, grid_dim(2), block_dim(128));
    std::vector<float8_e5m2> to_b(256);
    std::vector<float8_e4m3> to_a(256);
    ctx().enqueue_copy(to_b.data(), dtb);
    ctx().enqueue_copy(to_a.data(), dta);
    // Lanes of a vector as scalars: every input of conversion_inputs, four at a time.
    std::vector<float> in = conversion_inputs();
    in.resize((in.size() + 127) / 128 * 128, 0.0f);
    auto din = ctx().enqueue_create_buffer<float>(in.size());
    auto dout = ctx().enqueue_create_buffer<float>(in.size());
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(vectors, din, dout, grid_dim(in.size() / 128), block_dim(32));
    std::vector<float> out(in.size());
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int i = 0; i < 256; ++i) {
        EXPECT_EQ(to_b[i].bits(), float8_e5m2(float(a[i])).bits()) << "e4m3 byte " << i;
        EXPECT_EQ(to_a[i].bits(), float8_e4m3(float(b[i])).bits()) << "e5m2 byte " << i;
    }
    for (size_t i = 0; i < in.size(); ++i)
        EXPECT_EQ(canonical_bits(out[i]), canonical_bits(float(float8_e4m3(in[i])))) << in[i];
}

/// D = A B + 0 with A selecting rows of B (A[r][k] = 1 where k = r + 16 * half): D holds rows
/// 16 half to 16 half + 15 of B as the mma read them. B holds every finite byte (NaNs and
/// infinities, which would turn the zero products into NaNs, are replaced by zero and checked on
/// the host).
template <class F> void check_mma_reads_every_byte(DeviceContext &ctx, const char *name) {
    using Op = Mma<F, m16n8k32>;
    static const auto k = kernel(name, {"a", "b", "d"},
                                 [](Ptr<const F> a, Ptr<const F> b, Ptr<float> d) {
                                     typename Op::A fa;
                                     typename Op::B fb;
                                     typename Op::C fc;
                                     fa.load(a, 0, 32);
                                     fb.load(b, 0, 8);
                                     fc = mma(fa, fb, fc);
                                     fc.store(d, 0, 8);
                                 });
    std::vector<F> b(32 * 8);
    for (int i = 0; i < 256; ++i) {
        const F v = F::from_bits(uint8_t(i));
        b[i] = std::isfinite(float(v)) ? v : F(0.0f);
    }
    auto db = ctx.enqueue_create_buffer<F>(256);
    ctx.enqueue_copy(db, b.data());
    for (int half_ = 0; half_ < 2; ++half_) {
        std::vector<F> a(16 * 32, F(0.0f));
        for (int r = 0; r < 16; ++r) a[r * 32 + r + 16 * half_] = F(1.0f);
        auto da = ctx.enqueue_create_buffer<F>(16 * 32);
        auto dd = ctx.enqueue_create_buffer<float>(16 * 8);
        ctx.enqueue_copy(da, a.data());
        ctx.enqueue_function(k, da, db, dd, grid_dim(1), block_dim(32));
        std::vector<float> d(16 * 8);
        ctx.enqueue_copy(d.data(), dd);
        ctx.synchronize();
        for (int r = 0; r < 16; ++r)
            for (int c = 0; c < 8; ++c) {
                const int byte = (r + 16 * half_) * 8 + c;
                // (-0 read as -0 and added to C's +0 gives +0: values, not bits, are compared.)
                EXPECT_EQ(d[r * 8 + c], float(b[byte])) << name << ": byte " << byte;
            }
    }
}

// The tensor cores read each byte as the host does (subnormals included): on the GPU this checks
// the decoding against the hardware.
TEST_P(Fp8Test, MmaReadsEveryFiniteByteAsTheHostDoes) {
    check_mma_reads_every_byte<float8_e4m3>(ctx(), "mma_reads_e4m3");
    check_mma_reads_every_byte<float8_e5m2>(ctx(), "mma_reads_e5m2");
}

const auto scalar_argument = kernel("fp8_scalar_argument", {"x", "y", "out"},
                                    [](Float8E4M3 x, Float8E5M2 y, Ptr<float> out) {
                                        out[0] = cast<float>(x);
                                        out[1] = cast<float>(y);
                                    });

TEST_P(Fp8Test, ScalarArgumentsArriveAsTheirBits) {
    auto dout = ctx().enqueue_create_buffer<float>(2);
    ctx().enqueue_function(scalar_argument, float8_e4m3(-0.3125f), float8_e5m2(3072.0f), dout,
                           grid_dim(1), block_dim(1));
    std::vector<float> out(2);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    EXPECT_EQ(out[0], -0.3125f);
    EXPECT_EQ(out[1], 3072.0f);
}

INSTANTIATE_TEST_SUITE_P(Apis, Fp8Test, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
