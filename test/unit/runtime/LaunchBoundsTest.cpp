/// \file
/// Launch bounds ([Note] IR semantics: Launch bounds) on every device: a kernel compiled with
/// them gives the same results, a launch with more threads than max_threads is a LogicError
/// naming the kernel and the bound, the most threads per block a device reports for the kernel is
/// the bound, and on CUDA ptxas keeps within max_registers.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

auto make_scale(const char *name, LaunchBounds bounds) {
    return kernel(
        name, {"v", "n"},
        [](Ptr<float> v, Int n) {
            Int i = global_idx.x;
            if_(i < n, [&] { v[i] = v[i] * 2.0f + 1.0f; });
        },
        bounds);
}

const auto bounded = make_scale("bounded_scale", LaunchBounds{.max_threads = 128, .min_blocks = 4});
const auto few_registers = make_scale("few_registers_scale", LaunchBounds{.max_registers = 32});

class LaunchBoundsTest : public ember::testing::DeviceTest {
protected:
    template <class K> void expect_scaled(const K &k, int64_t block) {
        constexpr int64_t n = 1000;
        std::vector<float> host(n);
        for (int64_t i = 0; i < n; ++i) host[i] = float(i);
        auto v = ctx().enqueue_create_buffer<float>(n);
        ctx().enqueue_copy(v, host.data());
        ctx().enqueue_function(k, v, n, grid_dim((n + block - 1) / block), block_dim(block));
        ctx().enqueue_copy(host.data(), v);
        ctx().synchronize();
        for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(host[i], float(i) * 2.0f + 1.0f) << "element " << i;
    }
};

TEST_P(LaunchBoundsTest, AKernelWithBoundsComputesTheSame) {
    expect_scaled(bounded, 128);
    expect_scaled(bounded, 64);
    expect_scaled(few_registers, 256);
}

TEST_P(LaunchBoundsTest, MoreThreadsThanMaxThreadsIsALogicError) {
    auto v = ctx().enqueue_create_buffer<float>(256);
    try {
        ctx().enqueue_function(bounded, v, int64_t(256), grid_dim(1), block_dim(256));
        FAIL() << "a launch of 256 threads of a kernel bounded to 128 was accepted";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find(
                      "kernel 'bounded_scale': block_dim (256, 1, 1) has 256 threads but the "
                      "kernel was compiled for at most 128 (its LaunchBounds max_threads)"),
                  std::string::npos)
            << e.what();
    }
}

TEST_P(LaunchBoundsTest, MaxThreadsPerBlockIsTheBound) {
    auto f = ctx().compile_function(bounded);
    EXPECT_EQ(f.get_attribute(FunctionAttribute::max_threads_per_block), 128);
}

TEST_P(LaunchBoundsTest, PtxasKeepsWithinMaxRegisters) {
    if (GetParam() != "cuda") GTEST_SKIP() << "registers per thread are ptxas's (CUDA)";
    auto g = ctx().compile_function(few_registers);
    EXPECT_GT(g.report().registers, 0);
    EXPECT_LE(g.report().registers, 32);
}

INSTANTIATE_TEST_SUITE_P(Apis, LaunchBoundsTest, ember::testing::all_apis(),
                         ember::testing::api_name);

} // namespace
