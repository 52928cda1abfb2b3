/// \file
/// Tracing asynchronous copies and the contraction policy: what the DSL's async_copy,
/// async_commit, async_wait and FpContract become in the IR, and the DslError of a wait out of
/// range, at the user's line.
#include "ember/compiler/IRPrinter.h"
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

namespace {

std::string ir_of(const auto &k) { return ir::print(k.ir()); }

TEST(AsyncCopyTraceTest, CopiesCommitsAndWaits) {
    auto k = kernel("stage", {"a", "n"}, [](Ptr<const float> a, Int n) {
        auto tile = shared_array<float, 128>();
        Int t = thread_idx.x;
        async_copy<4>(tile, 4 * t, a, 4 * t);
        async_copy<1>(tile, t, a, t, t < n);
        async_commit();
        async_wait(1);
        async_wait(0);
    });
    EXPECT_EQ(ir_of(k), "kernel @stage(%a: ptr<global const f32>, %n: i64) {\n"
                        "  shared %0: f32[128]\n"
                        "  async_copy.4(%0[(4:i64 * thread_idx.x)], %a[(4:i64 * thread_idx.x)])\n"
                        "  async_copy.1(%0[thread_idx.x], %a[thread_idx.x], (thread_idx.x < %n))\n"
                        "  async_commit\n"
                        "  async_wait(1)\n"
                        "  async_wait(0)\n"
                        "}\n");
}

TEST(AsyncCopyTraceTest, AWaitOutOfRangeIsADslErrorAtTheUsersLine) {
    const int line = __LINE__ + 3;
    try {
        auto k = kernel("bad_wait", [](Ptr<float> p) {
            async_wait(8);
            p[0] = 1.0f;
        });
        FAIL() << "async_wait(8) was traced";
    } catch (const DslError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("async_wait(8): the groups left in flight are 0 to 7"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("AsyncCopyTraceTest.cpp:" + std::to_string(line)), std::string::npos)
            << what;
    }
}

TEST(AsyncCopyTraceTest, ContractionIsAKernelAttribute) {
    auto body = [](Ptr<float> x, Float32 a) { x[0] = x[0] * a + 1.0f; };
    auto fast = kernel("fast", {"x", "a"}, body, FpContract::Fast);
    auto bounded = kernel("bounded", {"x", "a"}, body, LaunchBounds{.max_threads = 64},
                          FpContract::Fast);
    auto off = kernel("off", {"x", "a"}, body);
    EXPECT_EQ(fast.ir().contract, FpContract::Fast);
    EXPECT_NE(ir_of(fast).find("kernel @fast(%x: ptr<global f32>, %a: f32) fp_contract(fast) {"),
              std::string::npos)
        << ir_of(fast);
    EXPECT_NE(ir_of(bounded).find("%a: f32) max_threads(64) fp_contract(fast) {"),
              std::string::npos)
        << ir_of(bounded);
    EXPECT_EQ(off.ir().contract, FpContract::Off);
    EXPECT_EQ(ir_of(off).find("fp_contract"), std::string::npos) << ir_of(off);
}

} // namespace
