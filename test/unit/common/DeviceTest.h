/// \file
/// The fixture of tests that run on every api: parameterised by the api name, it opens a
/// DeviceContext on device 0, or skips with a message where the api has no device here (CUDA on a
/// machine without an NVIDIA GPU, HIP without an AMD GPU: no machine of ember's has one yet). The
/// CPU device always runs, so every such test runs in CI.
#ifndef EMBER_TEST_UNIT_COMMON_DEVICETEST_H
#define EMBER_TEST_UNIT_COMMON_DEVICETEST_H

#include "ember/ember.h"

#include "Backend.h"
#include "hip/HipRuntime.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace ember::testing {

class DeviceTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (GetParam() == "cuda" && detail::cuda_device_count() == 0)
            GTEST_SKIP() << "no CUDA device on this machine (libcuda.so.1 missing or no GPU)";
        if (GetParam() == "hip" && detail::hip_device_count() == 0)
            GTEST_SKIP() << "no AMD GPU on this machine (libamdhip64 missing or no GPU); the HIP back end "
                            "runs these tests only where one is";
        ctx_ = std::make_unique<DeviceContext>(0, GetParam());
    }
    DeviceContext &ctx() { return *ctx_; }
    std::unique_ptr<DeviceContext> ctx_;
};

/// The apis every DeviceTest runs on.
inline auto all_apis() { return ::testing::Values("cpu", "cuda", "hip"); }
/// Test name suffixes: "cpu", "cuda", "hip".
inline std::string api_name(const ::testing::TestParamInfo<std::string> &info) { return info.param; }

} // namespace ember::testing

#endif // EMBER_TEST_UNIT_COMMON_DEVICETEST_H
