/// \file
/// Issue 5, item 1: enqueue_function(kernel, ...) on a kernel already compiled for the context
/// allocates nothing that enqueue_function(DeviceFunction, ...) does not ([Note] Launch slot), and
/// on CUDA neither allocates at all (AllocationCounter.h counts the global operator new).
#include "ember/ember.h"

#include "DeviceTest.h"

#include "AllocationCounter.h"

#include <gtest/gtest.h>

#include <vector>

using namespace ember;

namespace {

class LaunchAllocationTest : public ember::testing::DeviceTest {};

TEST_P(LaunchAllocationTest, TheCachedKernelPathAllocatesNothingMoreThanADeviceFunction) {
    auto k = kernel("alloc_count", {"v", "n"}, [](Ptr<float> v, Int n) {
        auto i = global_idx.x;
        if_(i < n, [&] { v[i] += 1.0f; });
    });
    constexpr int64_t n = 256;
    constexpr int launches = 200;
    auto dev = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_memset(dev, 0.0f);
    auto fn = ctx().compile_function(k);
    // First launches of each path: the kernel's compile and slot, the back end's first-launch work.
    ctx().enqueue_function(fn, dev, n, grid_dim(1), block_dim(n));
    ctx().enqueue_function(k, dev, n, grid_dim(1), block_dim(n));
    ctx().synchronize();

    long by_function = ember::testing::allocations_in([&] {
        for (int i = 0; i < launches; ++i) ctx().enqueue_function(fn, dev, n, grid_dim(1), block_dim(n));
    });
    ctx().synchronize();
    long by_kernel = ember::testing::allocations_in([&] {
        for (int i = 0; i < launches; ++i) ctx().enqueue_function(k, dev, n, grid_dim(1), block_dim(n));
    });
    ctx().synchronize();
    EXPECT_EQ(by_kernel, by_function) << "enqueue_function(kernel) allocates where enqueue_function(fn) does not";
    // The CPU device's launch allocates once (its task), by either path; a CUDA launch never.
    if (GetParam() == "cuda") {
        EXPECT_EQ(by_function, 0) << "a CUDA launch allocates";
    }

    // The launches ran: 2 + 2 x 200 increments of 1.
    std::vector<float> out(n);
    ctx().enqueue_copy(out.data(), dev);
    ctx().synchronize();
    for (float x : out) ASSERT_EQ(x, float(2 + 2 * launches));
}

INSTANTIATE_TEST_SUITE_P(Apis, LaunchAllocationTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
