/// \file
/// f16 and bf16: the host types' conversions, and kernels computing in Float16/BFloat16 on every
/// api, bit for bit against the host (each operation rounded once to the 16-bit type).
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace ember;

namespace {

TEST(Float16HostTest, ConversionsRoundToNearestEven) {
    EXPECT_EQ(half(1.0f).bits(), 0x3c00);
    EXPECT_EQ(half(-2.0f).bits(), 0xc000);
    EXPECT_EQ(half(65504.0f).bits(), 0x7bff);           // largest finite
    EXPECT_EQ(half(65519.0f).bits(), 0x7bff);           // below the rounding boundary
    EXPECT_EQ(half(65520.0f).bits(), 0x7c00);           // rounds to inf
    EXPECT_EQ(half(std::ldexp(1.0f, -24)).bits(), 0x0001); // smallest subnormal
    EXPECT_EQ(half(std::ldexp(1.0f, -25)).bits(), 0x0000); // a tie rounds to even (0)
    EXPECT_EQ(half(std::ldexp(1.5f, -25)).bits(), 0x0001);
    EXPECT_EQ(half(std::ldexp(3.0f, -25)).bits(), 0x0002); // 1.5 units: tie to even 2
    EXPECT_EQ(half(1.0f + std::ldexp(1.0f, -11)).bits(), 0x3c00); // tie to even
    EXPECT_EQ(half(1.0f + std::ldexp(3.0f, -11)).bits(), 0x3c02);
    EXPECT_TRUE(std::isnan(static_cast<float>(half(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_EQ(static_cast<float>(half::from_bits(0x0001)), std::ldexp(1.0f, -24));
    EXPECT_EQ(bfloat16(1.0f).bits(), 0x3f80);
    EXPECT_EQ(bfloat16(1.0f + std::ldexp(1.0f, -8)).bits(), 0x3f80); // tie to even
    EXPECT_EQ(bfloat16(1.0f + std::ldexp(3.0f, -8)).bits(), 0x3f82);
    EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
    // Every half converts to float and back to itself.
    for (uint32_t b = 0; b < 0x10000; ++b) {
        half h = half::from_bits(static_cast<uint16_t>(b));
        if (std::isnan(static_cast<float>(h))) continue;
        ASSERT_EQ(half(static_cast<float>(h)).bits(), b);
    }
}

class Float16Test : public ember::testing::DeviceTest {};

const auto f16_ops = kernel("f16_ops", [](Ptr<half> a, Ptr<half> b, Ptr<half> out, Ptr<float> wide, Float16 s, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] {
        Float16 x = a[i], y = b[i];
        out[i * 4] = x * y + s;         // two roundings, like the host below
        out[i * 4 + 1] = x / y;
        out[i * 4 + 2] = sqrt(abs(x)) - 0.5f;
        out[i * 4 + 3] = max(x, y);
        wide[i] = cast<float>(x) * cast<float>(y); // exact in f32
    });
});

const auto bf16_ops = kernel("bf16_ops", [](Ptr<bfloat16> a, Ptr<bfloat16> b, Ptr<bfloat16> out, Ptr<float> in32, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] {
        BFloat16 x = a[i], y = b[i];
        out[i * 3] = x + y;
        out[i * 3 + 1] = x * y;
        out[i * 3 + 2] = cast<bfloat16>(in32[i]); // rounds to nearest even
    });
});

TEST_P(Float16Test, HalfArithmeticMatchesTheHost) {
    const int64_t n = 4096;
    std::vector<half> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
        a[i] = half(std::ldexp(static_cast<float>((i * 7919) % 2001 - 1000), static_cast<int>(i % 40) - 28));
        b[i] = half(static_cast<float>((i * 104729) % 1999 - 999) / 64.0f);
    }
    const half s = half(0.375f);
    auto da = ctx().enqueue_create_buffer<half>(n);
    auto db = ctx().enqueue_create_buffer<half>(n);
    auto dout = ctx().enqueue_create_buffer<half>(4 * n);
    auto dwide = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_function(f16_ops, da, db, dout, dwide, s, n, grid_dim((n + 255) / 256), block_dim(256));
    std::vector<half> out(4 * n);
    std::vector<float> wide(n);
    ctx().enqueue_copy(out.data(), dout);
    ctx().enqueue_copy(wide.data(), dwide);
    ctx().synchronize();
    auto same = [](half got, float want) {
        return std::isnan(want) ? std::isnan(static_cast<float>(got)) : got.bits() == half(want).bits();
    };
    for (int64_t i = 0; i < n; ++i) {
        float x = a[i], y = b[i];
        ASSERT_TRUE(same(out[i * 4], static_cast<float>(half(x * y)) + static_cast<float>(s))) << "i=" << i << " x=" << x << " y=" << y;
        ASSERT_TRUE(same(out[i * 4 + 1], x / y)) << "i=" << i << " x=" << x << " y=" << y;
        ASSERT_TRUE(same(out[i * 4 + 2], static_cast<float>(half(std::sqrt(std::fabs(x)))) - 0.5f)) << "i=" << i;
        ASSERT_TRUE(same(out[i * 4 + 3], std::fmax(x, y))) << "i=" << i;
        ASSERT_EQ(wide[i], x * y) << "i=" << i;
    }
}

TEST_P(Float16Test, BFloat16ArithmeticMatchesTheHost) {
    const int64_t n = 4096;
    std::vector<bfloat16> a(n), b(n);
    std::vector<float> in32(n);
    for (int64_t i = 0; i < n; ++i) {
        a[i] = bfloat16(std::ldexp(static_cast<float>((i * 7919) % 2001 - 1000), static_cast<int>(i % 200) - 100));
        b[i] = bfloat16(static_cast<float>((i * 104729) % 1999 - 999) / 8.0f);
        in32[i] = std::ldexp(1.0f + static_cast<float>(i) / 8192.0f, static_cast<int>(i % 60) - 30);
    }
    auto da = ctx().enqueue_create_buffer<bfloat16>(n);
    auto db = ctx().enqueue_create_buffer<bfloat16>(n);
    auto dout = ctx().enqueue_create_buffer<bfloat16>(3 * n);
    auto din = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_copy(din, in32.data());
    ctx().enqueue_function(bf16_ops, da, db, dout, din, n, grid_dim((n + 255) / 256), block_dim(256));
    std::vector<bfloat16> out(3 * n);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) {
        float x = a[i], y = b[i];
        ASSERT_EQ(out[i * 3].bits(), bfloat16(x + y).bits()) << "i=" << i;
        ASSERT_EQ(out[i * 3 + 1].bits(), bfloat16(x * y).bits()) << "i=" << i;
        ASSERT_EQ(out[i * 3 + 2].bits(), bfloat16(in32[i]).bits()) << "i=" << i;
    }
}

INSTANTIATE_TEST_SUITE_P(AllApis, Float16Test, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
