/// \file
/// Neither enqueue_function(kernel, ...) on a kernel already compiled for the
/// context ([Note] Launch slot) nor enqueue_function(DeviceFunction, ...) allocates, on any device
/// (AllocationCounter.h counts the global operator new).
#include "ember/ember.h"

#include "DeviceTest.h"

#include "AllocationCounter.h"

#include <gtest/gtest.h>

#include <vector>

using namespace ember;

namespace {

class LaunchAllocationTest : public ember::testing::DeviceTest {};

TEST_P(LaunchAllocationTest, NeitherLaunchPathAllocates) {
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
    // Neither path allocates: no message or container is built on the way to the driver (or the
    // CPU device's pool), and the kernel's launch slot adds one atomic load.
    EXPECT_EQ(by_function, 0) << "enqueue_function(DeviceFunction) allocates";
    EXPECT_EQ(by_kernel, 0) << "enqueue_function(kernel) allocates";

    // The launches ran: 2 + 2 x 200 increments of 1.
    std::vector<float> out(n);
    ctx().enqueue_copy(out.data(), dev);
    ctx().synchronize();
    for (float x : out) ASSERT_EQ(x, float(2 + 2 * launches));
}

INSTANTIATE_TEST_SUITE_P(Apis, LaunchAllocationTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
