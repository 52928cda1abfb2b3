/// \file
/// [Note] Huge functions: kernels of thousands of stores, built by a C++ loop, take the cheap
/// path of the pipeline (out of line, optnone code generation) and still compute what the host
/// does, on every api.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ember;

namespace {

class HugeKernelTest : public ember::testing::DeviceTest {};

constexpr int kStores = 2000;

// Stores of loop-invariant values (LICM would hoist them out of the CPU's thread loops), and
// stores indexed by the thread.
const auto invariant_stores = kernel("invariant_stores", [](Ptr<float> out, Float32 x) {
    for (int k = 0; k < kStores; ++k) out[k] = x + static_cast<float>(k);
});
const auto thread_stores = kernel("thread_stores", [](Ptr<float> out, Float32 x) {
    auto i = global_idx.x;
    for (int k = 0; k < kStores; ++k)
        out[i * kStores + k] = x * static_cast<float>(k) + cast<float>(i);
});

TEST(HugeKernelPipelineTest, TakesTheCheapPath) {
    for (const auto *k : {&invariant_stores, &thread_stores}) {
        const std::string opt = emit(k->ir(), TargetSpec::parse("cpu"), Stage::LLVMOpt);
        EXPECT_NE(opt.find("call fastcc void @" + k->ir().name + ".body("), std::string::npos)
            << k->ir().name;
        EXPECT_NE(opt.find("optnone"), std::string::npos) << k->ir().name;
    }
}

TEST_P(HugeKernelTest, InvariantStoresMatchTheHost) {
    auto d = ctx().enqueue_create_buffer<float>(kStores);
    ctx().enqueue_function(invariant_stores, d, 0.5f, grid_dim(2), block_dim(32));
    std::vector<float> out(kStores);
    ctx().enqueue_copy(out.data(), d);
    ctx().synchronize();
    for (int k = 0; k < kStores; ++k) ASSERT_EQ(out[k], 0.5f + static_cast<float>(k)) << "k=" << k;
}

TEST_P(HugeKernelTest, ThreadIndexedStoresMatchTheHost) {
    const int threads = 2 * 32;
    auto d = ctx().enqueue_create_buffer<float>(threads * kStores);
    ctx().enqueue_function(thread_stores, d, 0.25f, grid_dim(2), block_dim(32));
    std::vector<float> out(threads * kStores);
    ctx().enqueue_copy(out.data(), d);
    ctx().synchronize();
    for (int i = 0; i < threads; ++i)
        for (int k = 0; k < kStores; ++k)
            ASSERT_EQ(out[i * kStores + k], 0.25f * static_cast<float>(k) + static_cast<float>(i))
                << "i=" << i << " k=" << k;
}

INSTANTIATE_TEST_SUITE_P(AllApis, HugeKernelTest, ember::testing::all_apis(),
                         ember::testing::api_name);

} // namespace
