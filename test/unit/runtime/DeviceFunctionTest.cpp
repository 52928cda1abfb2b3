/// \file
/// Device functions on every api: values, early returns, void functions writing memory, calls
/// between functions, shared-memory pointers and a barrier inside a function.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace ember;

namespace {

class DeviceFunctionTest : public ember::testing::DeviceTest {};

// clamp01(x) = 0 below 0, min(x*x, 1) above: an early return and a call of another function.
const auto square = device_function("square", [](Float32 x) { return x * x; });
const auto clamp01 = device_function("clamp01", [](Float32 x) {
    if_(x < 0.0f, [&] { return_(0.0f); });
    return min(square(x), 1.0f);
});
// A void function writing through a pointer, and a bool-valued one.
const auto put = device_function("put", [](Ptr<float> p, Int i, Float32 v) { p[i] = v; });
const auto is_odd = device_function("is_odd", [](Int32 n) { return (n & 1) == 1; });
// Integer arithmetic with a loop and a mutable variable inside the function.
const auto collatz_steps = device_function("collatz_steps", [](Int32 start) {
    Var<int64_t> n = cast<int64_t>(start);
    Var<int32_t> steps = 0;
    while_([&] { return n != int64_t{1}; }, [&] {
        if_((n & int64_t{1}) == int64_t{0}, [&] { n = n / int64_t{2}; }).else_([&] { n = n * int64_t{3} + int64_t{1}; });
        steps += 1;
    });
    return Int32(steps);
});

const auto values = kernel("values", [](Ptr<float> in, Ptr<float> out, Ptr<int32_t> iout, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] {
        Float32 x = in[i];
        put(out, i, clamp01(x));
        Int32 k = cast<int32_t>(i) + 1;
        iout[i * 2] = select(is_odd(k), collatz_steps(k), -k);
        iout[i * 2 + 1] = collatz_steps(k);
    });
});

int collatz_host(int64_t n) {
    int s = 0;
    while (n != 1) {
        n = n % 2 == 0 ? n / 2 : 3 * n + 1;
        ++s;
    }
    return s;
}

TEST_P(DeviceFunctionTest, ValuesEarlyReturnsAndVoidFunctions) {
    const int64_t n = 1000;
    std::vector<float> in(n);
    for (int64_t i = 0; i < n; ++i) in[i] = -1.5f + 3.0f * static_cast<float>(i) / n;
    auto din = ctx().enqueue_create_buffer<float>(n);
    auto dout = ctx().enqueue_create_buffer<float>(n);
    auto diout = ctx().enqueue_create_buffer<int32_t>(2 * n);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(values, din, dout, diout, n, grid_dim((n + 127) / 128), block_dim(128));
    std::vector<float> out(n);
    std::vector<int32_t> iout(2 * n);
    ctx().enqueue_copy(out.data(), dout);
    ctx().enqueue_copy(iout.data(), diout);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) {
        float want = in[i] < 0 ? 0.0f : std::min(in[i] * in[i], 1.0f);
        ASSERT_EQ(out[i], want) << "i=" << i;
        int k = static_cast<int>(i) + 1;
        ASSERT_EQ(iout[2 * i], k % 2 == 1 ? collatz_host(k) : -k) << "i=" << i;
        ASSERT_EQ(iout[2 * i + 1], collatz_host(k)) << "i=" << i;
    }
}

// A block sum in a device function: it gets the kernel's shared array and waits at barriers.
constexpr int kBlock = 128;
const auto block_sum = device_function("block_sum", [](SharedPtr<int32_t> scratch, Int32 v) {
    Int t = thread_idx.x;
    scratch[t] = v;
    barrier();
    for (int s = kBlock / 2; s > 0; s /= 2) { // unrolled at trace time
        if_(t < s, [&] { scratch[t] = scratch[t] + scratch[t + s]; });
        barrier();
    }
    Int32 total = scratch[0];
    barrier(); // everyone has read scratch[0] before it is reused
    return total;
});

const auto sums = kernel("sums", [](Ptr<int32_t> in, Ptr<int32_t> out) {
    auto scratch = shared_array<int32_t, kBlock>();
    Int i = global_idx.x;
    Int32 first = block_sum(scratch, in[i]);
    Int32 second = block_sum(scratch, in[i] * 2);
    if_(thread_idx.x == 0, [&] { out[block_idx.x] = first + second; });
});

TEST_P(DeviceFunctionTest, SharedPointersAndBarriersInsideFunctions) {
    const int blocks = 6;
    std::vector<int32_t> in(blocks * kBlock);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(i % 97) - 40;
    auto din = ctx().enqueue_create_buffer<int32_t>(in.size());
    auto dout = ctx().enqueue_create_buffer<int32_t>(blocks);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(sums, din, dout, grid_dim(blocks), block_dim(kBlock));
    std::vector<int32_t> out(blocks);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int b = 0; b < blocks; ++b) {
        int32_t want = 0;
        for (int t = 0; t < kBlock; ++t) want += 3 * in[b * kBlock + t];
        EXPECT_EQ(out[b], want) << "block " << b;
    }
}

// A function large enough (250 branches) that LLVM calls it instead of inlining it, called with
// bf16 constants and with one that folds to a constant (ceil): LLVM 19's NVPTX back end crashed
// on such arguments ([Note] LLVM 19's NVPTX back end and bf16 constants passed to calls).
constexpr int big_bf16_steps = 250;
const auto big_bf16 = device_function("big_bf16", [](BFloat16 a, BFloat16 b, BFloat16 c) {
    Var<float> acc = cast<float>(a);
    Var<int32_t> k = cast<int32_t>(b);
    for (int i = 0; i < big_bf16_steps; ++i)
        if_(acc > float(i) + 0.5f, [&] {
            acc = acc * cast<float>(b) + cast<float>(c) / (acc + (float(i) + 0.25f));
            k = (k * (i + 3)) ^ cast<int32_t>(Float32(acc));
        });
    return cast<int32_t>(Float32(acc)) ^ Int32(k);
});

const auto bf16_calls = kernel("bf16_calls", [](Ptr<bfloat16> in, Ptr<int32_t> out) {
    out[0] = big_bf16(in[0], BFloat16(bfloat16(1.5f)), ceil(BFloat16(bfloat16(2.25f))));
    out[1] = big_bf16(in[1], in[2], BFloat16(bfloat16(0.5f)));
});

int32_t big_bf16_host(float a, float b, float c) {
    float acc = a;
    int32_t k = static_cast<int32_t>(b);
    auto to_int = [](float x) -> int32_t {
        if (std::isnan(x)) return 0;
        if (x <= -2147483648.0f) return INT32_MIN;
        if (x >= 2147483648.0f) return INT32_MAX;
        return static_cast<int32_t>(x);
    };
    for (int i = 0; i < big_bf16_steps; ++i)
        if (acc > float(i) + 0.5f) {
            acc = acc * b + c / (acc + (float(i) + 0.25f));
            k = static_cast<int32_t>(static_cast<uint32_t>(k) * static_cast<uint32_t>(i + 3)) ^ to_int(acc);
        }
    return to_int(acc) ^ k;
}

TEST_P(DeviceFunctionTest, LargeFunctionTakesBf16Constants) {
    const std::vector<bfloat16> in = {bfloat16(3.0f), bfloat16(7.5f), bfloat16(1.25f)};
    auto din = ctx().enqueue_create_buffer<bfloat16>(in.size());
    auto dout = ctx().enqueue_create_buffer<int32_t>(2);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(bf16_calls, din, dout, grid_dim(1), block_dim(1));
    std::vector<int32_t> out(2);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    EXPECT_EQ(out[0], big_bf16_host(3.0f, 1.5f, 3.0f));
    EXPECT_EQ(out[1], big_bf16_host(7.5f, 1.25f, 0.5f));
}

INSTANTIATE_TEST_SUITE_P(AllApis, DeviceFunctionTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
