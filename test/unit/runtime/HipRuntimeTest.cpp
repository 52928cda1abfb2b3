// The HIP runtime loaded with dlopen ([Note] HIP runtime loading), tested against the real
// library where it is installed (Debian 12: libamdhip64-5, ROCm 5.2, which `make test` installs);
// no machine here has an AMD GPU, so the tests that need one skip, saying so.
#include "ember/ember.h"
#include "hip/HipRuntime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace ember;
using namespace ember::detail;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

#define SKIP_WITHOUT_HIP_LIBRARY()                                                                 \
    if (HipRuntime::get().library().empty())                                                       \
    GTEST_SKIP() << "libamdhip64 is not installed (" << HipRuntime::get().problem() << ")"

TEST(HipRuntimeTest, EveryEntryPointTheBackEndNeedsResolves) {
    SKIP_WITHOUT_HIP_LIBRARY();
    const HipRuntime &hip = HipRuntime::get();
    EXPECT_TRUE(hip.missing().empty()) << hip.problem();
    EXPECT_TRUE(hip.usable());
    const auto &names = HipRuntime::entry_point_names();
    for (const char *needed : {"hipModuleLoadData", "hipModuleLaunchKernel", "hipGetDeviceCount", "hipEventElapsedTime",
                               "hipGraphInstantiate", "hipIpcOpenMemHandle", "hipMemcpy3DAsync"})
        EXPECT_NE(std::find(names.begin(), names.end(), needed), names.end()) << needed;
    for (const std::string &name : HipRuntime::entry_point_names())
        EXPECT_NE(hip.entry(name), nullptr) << name << " not resolved from " << hip.library();
    EXPECT_EQ(hip.entry("hipNoSuchFunction"), nullptr);
}

TEST(HipRuntimeTest, ErrorsAreNamedByTheLibrary) {
    SKIP_WITHOUT_HIP_LIBRARY();
    const HipRuntime &hip = HipRuntime::get();
    EXPECT_TRUE(contains(hip.describe(100), "hipErrorNoDevice (100)")) << hip.describe(100);
    EXPECT_TRUE(contains(hip.describe(2), "hipErrorOutOfMemory (2)")) << hip.describe(2);
}

TEST(HipRuntimeTest, NoAmdGpuIsRuntimeErrorNamingHipsError) {
    SKIP_WITHOUT_HIP_LIBRARY();
    if (hip_device_count() > 0) GTEST_SKIP() << "this machine has an AMD GPU";
    EXPECT_FALSE(has_amd_gpu_accelerator());
    EXPECT_EQ(DeviceContext::number_of_devices("hip"), 0);
    std::string error;
    EXPECT_EQ(HipRuntime::get().device_count(&error), 0);
    EXPECT_TRUE(contains(error, "hipGetDeviceCount failed: hipError")) << error;
    try {
        DeviceContext c(0, "hip");
        FAIL() << "DeviceContext(0, \"hip\") returned without an AMD GPU";
    } catch (const RuntimeError &e) {
        EXPECT_TRUE(contains(e.what(), "api 'hip': hipGetDeviceCount failed: hipError")) << e.what();
        EXPECT_TRUE(contains(e.what(), "no AMD GPU")) << e.what();
    }
}

TEST(HipRuntimeTest, WithoutTheLibraryTheErrorNamesIt) {
    if (!HipRuntime::get().library().empty()) GTEST_SKIP() << "libamdhip64 is installed: the test above runs";
    EXPECT_EQ(hip_device_count(), 0);
    try {
        DeviceContext c(0, "hip");
        FAIL() << "DeviceContext(0, \"hip\") returned without the HIP runtime";
    } catch (const RuntimeError &e) {
        EXPECT_TRUE(contains(e.what(), "libamdhip64")) << e.what();
    }
}

TEST(HipRuntimeTest, AnAmdGpuIsFoundButNotYetUsed) {
    if (hip_device_count() == 0) GTEST_SKIP() << "no AMD GPU on this machine (none of ember's machines has one)";
    try {
        DeviceContext c(0, "hip");
        FAIL() << "ember's HIP back end does not run kernels yet; DeviceContext must say so";
    } catch (const RuntimeError &e) {
        EXPECT_TRUE(contains(e.what(), "does not run kernels yet")) << e.what();
    }
    EXPECT_THROW(DeviceContext(hip_device_count(), "hip"), LogicError);
}

} // namespace
