/// \file
/// The contraction policy ([Note] IR semantics: Contraction) on every device: without it a*b+c
/// rounds twice, bit for bit as the host computes it; with FpContract::Fast each result is the
/// fused or the unfused value, and on CUDA the fused one (ptxas gets fma.rn from LLVM).
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace ember;

namespace {

auto make_axpb(const char *name, FpContract contract) {
    return kernel(
        name, {"x", "y", "a", "n"},
        [](Ptr<const float> x, Ptr<float> y, Float32 a, Int n) {
            Int i = global_idx.x;
            if_(i < n, [&] { y[i] = x[i] * a + y[i]; });
        },
        contract);
}
const auto axpb_off = make_axpb("axpb_off", FpContract::Off);
const auto axpb_fast = make_axpb("axpb_fast", FpContract::Fast);

class FpContractTest : public ember::testing::DeviceTest {
protected:
    static constexpr int64_t n = 4096;
    static constexpr float a = 1.0f / 3.0f;
    std::vector<float> x = std::vector<float>(n), y = std::vector<float>(n);
    void SetUp() override {
        DeviceTest::SetUp();
        for (int64_t i = 0; i < n; ++i) {
            x[i] = 1.0f + float(i) / 7.0f;
            y[i] = -float(i) / 21.0f; // cancels most of x * a: the fused and unfused results differ
        }
    }
    template <class K> std::vector<float> run(const K &k) {
        auto dx = ctx().enqueue_create_buffer<float>(n);
        auto dy = ctx().enqueue_create_buffer<float>(n);
        ctx().enqueue_copy(dx, x.data());
        ctx().enqueue_copy(dy, y.data());
        ctx().enqueue_function(k, dx, dy, a, n, grid_dim(n / 256), block_dim(256));
        std::vector<float> out(n);
        ctx().enqueue_copy(out.data(), dy);
        ctx().synchronize();
        return out;
    }
    float unfused(int64_t i) const {
        volatile float p = x[i] * a; // rounded on its own, whatever the host compiler contracts
        return p + y[i];
    }
    float fused(int64_t i) const { return std::fma(x[i], a, y[i]); }
};

TEST_P(FpContractTest, OffRoundsEveryOperationAsTheHostDoes) {
    std::vector<float> got = run(axpb_off);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], unfused(i)) << "element " << i;
}

TEST_P(FpContractTest, FastGivesTheFusedOrUnfusedResultAndFusesOnCuda) {
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) differ += fused(i) != unfused(i);
    ASSERT_GT(differ, n / 10) << "the inputs do not tell fused from unfused";
    std::vector<float> got = run(axpb_fast);
    int64_t fused_count = 0;
    for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(got[i] == fused(i) || got[i] == unfused(i))
            << "element " << i << ": " << got[i];
        fused_count += got[i] == fused(i) && fused(i) != unfused(i);
    }
    if (GetParam() == "cuda") {
        EXPECT_EQ(fused_count, differ);
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, FpContractTest, ember::testing::all_apis(),
                         ember::testing::api_name);

} // namespace
