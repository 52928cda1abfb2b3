/// \file
/// How failures reach the user on every api: a kernel that faults (CUDA: a LaunchError at the
/// next synchronising call, saying the context is no longer usable), out-of-memory (MemoryError
/// with the requested and free bytes), and empty or moved-from buffers (LogicError naming the
/// argument). CUDA cases skip with a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>

using namespace ember;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// Writes far outside its buffer (4 TiB past it): an illegal address on a GPU.
const auto wild_store = kernel("wild_store", {"out", "offset"}, [](Ptr<float> out, Int offset) {
    out[offset] = 1.0f;
});

const auto fill = kernel("fill", {"out", "n"}, [](Ptr<float> out, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { out[i] = 2.0f; });
});

class FailureTest : public ember::testing::DeviceTest {};

TEST_P(FailureTest, OutOfMemoryNamesRequestedAndFreeBytes) {
    constexpr size_t one_pib = size_t(1) << 50;
    try {
        auto b = ctx().enqueue_create_buffer<char>(one_pib);
        FAIL() << "allocated 1 PiB";
    } catch (const MemoryError &e) {
        EXPECT_TRUE(contains(e.what(), "1125899906842624 bytes")) << e.what();
        EXPECT_TRUE(contains(e.what(), "free")) << e.what();
    }
    // The context is still usable.
    auto b = ctx().enqueue_create_buffer<float>(256);
    ctx().enqueue_function(fill, b, int64_t{256}, grid_dim(1), block_dim(256));
    std::vector<float> out(256);
    ctx().enqueue_copy(out.data(), b);
    ctx().synchronize();
    EXPECT_EQ(out[255], 2.0f);
}

TEST_P(FailureTest, EmptyAndMovedFromBuffersAreLogicErrors) {
    auto b = ctx().enqueue_create_buffer<float>(16);
    DeviceBuffer<float> moved = std::move(b);
    EXPECT_FALSE(b); // NOLINT(bugprone-use-after-move): what the test is about
    try {
        ctx().enqueue_function(fill, b, int64_t{16}, grid_dim(1), block_dim(16));
        FAIL() << "launched with a moved-from buffer";
    } catch (const LogicError &e) {
        EXPECT_TRUE(contains(e.what(), "kernel 'fill'")) << e.what();
        EXPECT_TRUE(contains(e.what(), "argument 0 ('out')")) << e.what();
        EXPECT_TRUE(contains(e.what(), "moved-from")) << e.what();
    }
    std::vector<float> host(16);
    EXPECT_THROW(ctx().enqueue_copy(host.data(), b), LogicError);
    EXPECT_THROW(ctx().enqueue_copy(b, host.data()), LogicError);
    EXPECT_THROW(ctx().enqueue_copy(moved, b), LogicError);
    EXPECT_THROW(ctx().stream().enqueue_copy(host.data(), b), LogicError);
    HostBuffer<float> hb;
    EXPECT_THROW(ctx().enqueue_copy(moved, hb), LogicError);
    // The moved-to buffer works.
    ctx().enqueue_function(fill, moved, int64_t{16}, grid_dim(1), block_dim(16));
    ctx().enqueue_copy(host.data(), moved);
    ctx().synchronize();
    EXPECT_EQ(host[15], 2.0f);
}

// A faulting kernel leaves a CUDA context unusable for the rest of the process (a sticky error),
// so the launch runs in a child process (a death test in the "threadsafe" style re-executes the
// test alone), which prints the LaunchError's message and exits; the parent checks it.
class FailureDeathTest : public ember::testing::DeviceTest {};

// Two DeviceContexts of one device share the label "cpu:0"/"cuda:0"; messages about mixing them
// say "another DeviceContext of", never "a buffer of cuda:0 used on cuda:0".
TEST_P(FailureTest, MixingTwoContextsOfOneDeviceSaysAnotherContext) {
    DeviceContext other(0, GetParam());
    auto foreign = other.enqueue_create_buffer<float>(16);
    try {
        ctx().enqueue_function(fill, foreign, int64_t{16}, grid_dim(1), block_dim(16));
        ADD_FAILURE() << "no error";
    } catch (const LogicError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("argument 0 ('out')"), std::string::npos) << what;
        EXPECT_NE(what.find("a DeviceContext of " + GetParam() + ":0 but the kernel runs on another DeviceContext of " +
                            GetParam() + ":0"),
                  std::string::npos)
            << what;
    }
    DeviceEvent a = ctx().create_event(), b = other.create_event();
    a.record();
    b.record();
    try {
        (void)a.time_since(b);
        ADD_FAILURE() << "no error";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("another DeviceContext of"), std::string::npos) << e.what();
    }
}

TEST_P(FailureDeathTest, AFaultingKernelIsALaunchErrorAtTheNextSynchronize) {
    if (GetParam() != "cuda")
        GTEST_SKIP() << "on the CPU device a kernel's illegal access is the host process's own fault, "
                        "as in any C++ code (docs/runtime.md, Failures)";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            auto out = ctx().enqueue_create_buffer<float>(16);
            // The launch itself is accepted: the fault happens while the kernel runs.
            ctx().enqueue_function(wild_store, out, int64_t{1} << 40, grid_dim(1), block_dim(1));
            try {
                ctx().synchronize();
            } catch (const LaunchError &e) {
                std::cerr << e.what() << "\n";
                // Later calls fail with the same error class.
                try {
                    auto more = ctx().enqueue_create_buffer<float>(16);
                    ctx().synchronize();
                    std::cerr << "later call succeeded\n";
                } catch (const Error &later) {
                    std::cerr << "later: " << later.what() << "\n";
                }
                std::_Exit(0);
            }
            std::cerr << "no error\n";
            std::_Exit(1);
        },
        ::testing::ExitedWithCode(0),
        "CUDA_ERROR_ILLEGAL_ADDRESS.*wild_store.*no longer usable(.|\n)*later: ");
}

INSTANTIATE_TEST_SUITE_P(AllApis, FailureTest, ember::testing::all_apis(), ember::testing::api_name);
INSTANTIATE_TEST_SUITE_P(AllApis, FailureDeathTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
