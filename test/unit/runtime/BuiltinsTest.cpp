/// \file
/// The built-in functions and return_ on every api, against the C++ standard library on the host.
#include "ember/ember.h"

#include "Backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace ember;

namespace {

class BuiltinsTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (GetParam() == "cuda" && detail::cuda_device_count() == 0)
            GTEST_SKIP() << "no CUDA device on this machine (libcuda.so.1 missing or no GPU)";
        ctx_ = std::make_unique<DeviceContext>(0, GetParam());
    }
    template <class T> std::vector<T> run(const auto &k, const std::vector<T> &in, size_t outs_per_in) {
        auto din = ctx_->enqueue_create_buffer<T>(in.size());
        auto dout = ctx_->enqueue_create_buffer<T>(in.size() * outs_per_in);
        ctx_->enqueue_copy(din, in.data());
        const int64_t n = static_cast<int64_t>(in.size());
        ctx_->enqueue_function(k, din, dout, n, grid_dim((n + 63) / 64), block_dim(64));
        std::vector<T> out(in.size() * outs_per_in);
        ctx_->enqueue_copy(out.data(), dout);
        ctx_->synchronize();
        return out;
    }
    std::unique_ptr<DeviceContext> ctx_;
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <class F> void expect_same(F got, F want, const char *what, F input) {
    if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << what << "(" << input << ") = " << got;
    } else {
        EXPECT_TRUE(same_bits(got, want)) << what << "(" << input << ") = " << got << ", want " << want;
    }
}

const auto int_bits = kernel("int_bits", {"in", "out", "n"}, [](Ptr<int32_t> in, Ptr<int32_t> out, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] {
        Int32 x = in[i];
        out[i * 5] = abs(x);
        out[i * 5 + 1] = popcount(x);
        out[i * 5 + 2] = clz(x);
        out[i * 5 + 3] = ctz(x);
        out[i * 5 + 4] = clamp(x, -100, 100);
    });
});

TEST_P(BuiltinsTest, IntegerBuiltinsMatchTheHost) {
    const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    std::vector<int32_t> in{0, 1, -1, 2, -2, 7, 100, -100, 101, -101, 0x00F0F000, lo, hi, lo + 1, 1 << 30};
    std::vector<int32_t> out = run(int_bits, in, 5);
    for (size_t i = 0; i < in.size(); ++i) {
        int32_t x = in[i];
        uint32_t u = static_cast<uint32_t>(x);
        EXPECT_EQ(out[i * 5], x == lo ? lo : std::abs(x)) << "abs(" << x << ")";
        EXPECT_EQ(out[i * 5 + 1], std::popcount(u)) << "popcount(" << x << ")";
        EXPECT_EQ(out[i * 5 + 2], std::countl_zero(u)) << "clz(" << x << ")";
        EXPECT_EQ(out[i * 5 + 3], std::countr_zero(u)) << "ctz(" << x << ")";
        EXPECT_EQ(out[i * 5 + 4], std::clamp(x, -100, 100)) << "clamp(" << x << ")";
    }
}

template <class T> auto make_float_kernel(const char *name) {
    return kernel(name, {"in", "out", "n"}, [](Ptr<T> in, Ptr<T> out, Int n) {
        auto i = global_idx.x;
        if_(i < n, [&] {
            Value<T> x = in[i];
            Value<T> y = in[(i + 1) % n];
            out[i * 11] = sqrt(x);
            out[i * 11 + 1] = floor(x);
            out[i * 11 + 2] = ceil(x);
            out[i * 11 + 3] = trunc(x);
            out[i * 11 + 4] = round(x);
            out[i * 11 + 5] = fma(x, y, x);
            out[i * 11 + 6] = copysign(x, y);
            out[i * 11 + 7] = abs(x);
            out[i * 11 + 8] = select(isnan(x), Value<T>(T(1)), T(0));
            out[i * 11 + 9] = select(isinf(x), Value<T>(T(1)), T(0));
            out[i * 11 + 10] = select(isfinite(x), Value<T>(T(1)), T(0));
        });
    });
}

template <class T> void check_floats(const std::vector<T> &in, const std::vector<T> &out) {
    const size_t n = in.size();
    for (size_t i = 0; i < n; ++i) {
        T x = in[i], y = in[(i + 1) % n];
        expect_same<T>(out[i * 11], std::sqrt(x), "sqrt", x);
        expect_same<T>(out[i * 11 + 1], std::floor(x), "floor", x);
        expect_same<T>(out[i * 11 + 2], std::ceil(x), "ceil", x);
        expect_same<T>(out[i * 11 + 3], std::trunc(x), "trunc", x);
        expect_same<T>(out[i * 11 + 4], std::round(x), "round", x);
        expect_same<T>(out[i * 11 + 5], std::fma(x, y, x), "fma", x);
        expect_same<T>(out[i * 11 + 6], std::copysign(x, y), "copysign", x);
        expect_same<T>(out[i * 11 + 7], std::fabs(x), "abs", x);
        EXPECT_EQ(out[i * 11 + 8], std::isnan(x) ? T(1) : T(0)) << "isnan(" << x << ")";
        EXPECT_EQ(out[i * 11 + 9], std::isinf(x) ? T(1) : T(0)) << "isinf(" << x << ")";
        EXPECT_EQ(out[i * 11 + 10], std::isfinite(x) ? T(1) : T(0)) << "isfinite(" << x << ")";
    }
}

template <class T> std::vector<T> float_inputs() {
    using L = std::numeric_limits<T>;
    std::vector<T> v{T(0), T(-0.0), T(0.5), T(-0.5), T(1.5), T(2.5), T(-2.5), T(3.7), T(-3.7),
                     T(1) / T(3), T(2), T(1e10), T(-1e-3), L::denorm_min(), -L::denorm_min(),
                     L::min(), L::max(), -L::max(), L::infinity(), -L::infinity(), L::quiet_NaN(),
                     T(4503599627370497.0), T(8388609.0), T(0.49999997f)};
    // Products where a separate rounding of x*y would differ from fma.
    v.push_back(T(1) + L::epsilon());
    v.push_back(T(1) - L::epsilon());
    return v;
}

const auto floats32 = make_float_kernel<float>("floats32");
const auto floats64 = make_float_kernel<double>("floats64");

TEST_P(BuiltinsTest, Float32BuiltinsAreExact) {
    std::vector<float> in = float_inputs<float>();
    check_floats(in, run(floats32, in, 11));
}

TEST_P(BuiltinsTest, Float64BuiltinsAreExact) {
    std::vector<double> in = float_inputs<double>();
    check_floats(in, run(floats64, in, 11));
}

const auto early_return = kernel("early_return", {"out", "n"}, [](Ptr<int32_t> out, Int n) {
    auto i = global_idx.x;
    if_(i >= n, [&] { return_(); });
    out[i] = 1;
    if_(i % 3 == 0, [&] { return_(); });
    // Only threads not divisible by 3 get here; a loop with a return inside ends the thread.
    for_(0, 10, [&](Int j) {
        if_(j == i % 4, [&] { return_(); });
        out[i] += 10;
    });
});

TEST_P(BuiltinsTest, ReturnEndsOnlyThatThread) {
    const int64_t n = 1000; // launched with 1024 threads: the extra ones return at once
    std::vector<int32_t> host(1024, -5);
    auto out = ctx_->enqueue_create_buffer<int32_t>(1024);
    ctx_->enqueue_copy(out, host.data());
    ctx_->enqueue_function(early_return, out, n, grid_dim(8), block_dim(128));
    ctx_->enqueue_copy(host.data(), out);
    ctx_->synchronize();
    for (int64_t i = 0; i < 1024; ++i) {
        int32_t want = i >= n ? -5 : i % 3 == 0 ? 1 : 1 + 10 * int32_t(i % 4);
        ASSERT_EQ(host[i], want) << "thread " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(AllApis, BuiltinsTest, ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return info.param; });

} // namespace

namespace {
const auto printer = kernel("printer", {"x"}, [](Float64 x) {
    print("t", thread_idx.x, cast<float>(x) * 2.0f, thread_idx.x == 1, sep(":"));
});

TEST_P(BuiltinsTest, PrintWritesOneLinePerThread) {
    std::fflush(stdout);
    ::testing::internal::CaptureStdout();
    ctx_->enqueue_function(printer, 1.25, grid_dim(1), block_dim(3));
    ctx_->synchronize();
    std::fflush(stdout);
    std::string out = ::testing::internal::GetCapturedStdout();
    std::vector<std::string> lines;
    for (size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1)
        lines.push_back(out.substr(at, nl - at));
    std::sort(lines.begin(), lines.end());
    ASSERT_EQ(lines.size(), 3u) << out;
    EXPECT_EQ(lines[0], "t:0:2.5:False");
    EXPECT_EQ(lines[1], "t:1:2.5:True");
    EXPECT_EQ(lines[2], "t:2:2.5:False");
}
} // namespace
