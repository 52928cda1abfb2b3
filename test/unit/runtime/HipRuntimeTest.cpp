// The HIP runtime loaded with dlopen ([Note] HIP runtime loading), tested against the real
// library where it is installed (Debian 12: libamdhip64-5, ROCm 5.2, which `make test` installs);
// no machine here has an AMD GPU, so the tests that need one skip, saying so.
#include "ember/ember.h"
#include "hip/HipRuntime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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
                               "hipGraphInstantiateWithFlags", "hipIpcOpenMemHandle", "hipMemcpy3DAsync"})
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

TEST(HipRuntimeTest, AnAmdGpuRunsAKernel) {
    if (hip_device_count() == 0) GTEST_SKIP() << "no AMD GPU on this machine (none of ember's machines has one)";
    DeviceContext c(0, "hip");
    EXPECT_EQ(c.api(), "hip");
    EXPECT_EQ(c.target().rfind("amdgpu:gfx", 0), 0u) << c.target();
    auto add = kernel("hip_scalar_add", {"v", "n", "s"}, [](Ptr<float> v, Int n, Float32 s) {
        auto i = global_idx.x;
        if_(i < n, [&] { v[i] += s; });
    });
    const int n = 1000;
    std::vector<float> host(n);
    for (int i = 0; i < n; ++i) host[i] = float(i);
    auto buf = c.enqueue_create_buffer<float>(n);
    c.enqueue_copy(buf, host.data());
    c.enqueue_function(add, buf, n, 2.5f, grid_dim((n + 255) / 256), block_dim(256));
    c.enqueue_copy(host.data(), buf);
    c.synchronize();
    for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], float(i) + 2.5f) << i;
    EXPECT_THROW(DeviceContext(hip_device_count(), "hip"), LogicError);
}

} // namespace
