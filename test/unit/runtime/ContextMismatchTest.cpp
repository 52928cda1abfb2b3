/// \file
/// A DeviceFunction belongs to the DeviceContext that compiled it. Launching it on another context
/// of the same device used to say "compiled for cpu:0 and cannot be launched on cpu:0"; the
/// message now says that the function belongs to another context of the same device and what to
/// do. On every api; CUDA cases skip with a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

using namespace ember;

namespace {

const auto inc = kernel("mismatch_inc", {"v", "n"}, [](Ptr<int32_t> v, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += 1; });
});

std::string launch_error(const DeviceContext &on, const DeviceFunction<Ptr<int32_t>, Int> &f,
                         const DeviceBuffer<int32_t> &b) {
    try {
        on.enqueue_function(f, b, 4, grid_dim(1), block_dim(4));
    } catch (const LogicError &e) {
        return e.what();
    }
    return "no LogicError";
}

class ContextMismatchTest : public ember::testing::DeviceTest {};

TEST_P(ContextMismatchTest, AFunctionOfAnotherContextOfTheSameDevice) {
    DeviceContext other(0, GetParam());
    auto f = other.compile_function(inc);
    auto b = ctx().enqueue_create_buffer<int32_t>(4);
    const std::string label = GetParam() + ":0";
    const std::string msg = launch_error(ctx(), f, b);
    EXPECT_NE(msg.find("kernel 'mismatch_inc' was compiled by another DeviceContext of the same device (" + label +
                       ")"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("Call compile_function on the context that launches it"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("compiled for " + label + " and cannot be launched on " + label), std::string::npos) << msg;
    // What it advises works: the kernel itself compiles for each context.
    ctx().enqueue_function(inc, b, 4, grid_dim(1), block_dim(4));
    ctx().enqueue_function(ctx().compile_function(inc), b, 4, grid_dim(1), block_dim(4));
    ctx().synchronize();
}

TEST_P(ContextMismatchTest, AFunctionWhoseContextIsGone) {
    std::optional<DeviceContext> gone(std::in_place, 0, GetParam());
    auto f = gone->compile_function(inc);
    gone.reset();
    auto b = ctx().enqueue_create_buffer<int32_t>(4);
    const std::string msg = launch_error(ctx(), f, b);
    EXPECT_NE(msg.find("was compiled by a DeviceContext of " + GetParam() + ":0 that no longer exists"),
              std::string::npos)
        << msg;
}

INSTANTIATE_TEST_SUITE_P(Apis, ContextMismatchTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
