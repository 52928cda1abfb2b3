// The HIP back end is the CUDA back end over a table of HIP's entry points ([Note] HIP back end in
// runtime/lib/cuda/HipDriver.cpp). Without an AMD GPU (none of ember's machines has one) these
// tests check, against Debian's real libamdhip64-5, what can be checked: the table is filled from
// the library, HIP's errors are named by HIP and classed like CUDA's, messages name HIP's calls,
// and ember's device attributes map onto hipDeviceAttribute_t. HipRuntimeTest runs a kernel where
// an AMD GPU is.
#include "ember/ember.h"

#include "cuda/CudaDriver.h"
#include "hip/HipRuntime.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace ember;
using namespace ember::detail;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

#define SKIP_WITHOUT_HIP_LIBRARY()                                                                 \
    if (!HipRuntime::get().usable())                                                               \
    GTEST_SKIP() << "libamdhip64 is not usable here (" << HipRuntime::get().problem() << ")"

TEST(HipDriverTest, EveryEntryOfTheTableIsFilledFromTheLibrary) {
    SKIP_WITHOUT_HIP_LIBRARY();
    const CudaDriver *hip = CudaDriver::hip_table_for_testing();
    ASSERT_NE(hip, nullptr);
    EXPECT_EQ(hip->api(), "hip");
    EXPECT_TRUE(hip->is_hip());
    EXPECT_TRUE(hip->empty_required_entries().empty());
    // Graphs, pools and the architecture's name are HIP's too; the linker and clusters are CUDA's.
    EXPECT_TRUE(hip->cuStreamBeginCapture && hip->cuStreamEndCapture && hip->cuStreamGetCaptureInfo_v2 &&
                hip->cuGraphInstantiateWithFlags && hip->cuGraphLaunch && hip->cuGraphExecDestroy &&
                hip->cuGraphDestroy && hip->cuGraphGetNodes && hip->cuGraphExecKernelNodeSetParams);
    EXPECT_TRUE(hip->cuMemAllocAsync && hip->cuMemFreeAsync && hip->cuDeviceGetDefaultMemPool &&
                hip->cuMemPoolSetAccess && hip->deviceArchName);
    EXPECT_EQ(hip->cuLinkCreate, nullptr);
    EXPECT_EQ(hip->cuLaunchKernelEx, nullptr);
}

TEST(HipDriverTest, ErrorsAreHipsNamesInCudasClasses) {
    SKIP_WITHOUT_HIP_LIBRARY();
    const CudaDriver &hip = *CudaDriver::hip_table_for_testing();
    EXPECT_EQ(hip.error_name(100), "hipErrorNoDevice");
    EXPECT_EQ(hip.error_name(600), "hipErrorNotReady");
    try {
        hip.check(2, "cuMemAlloc", " on device 0");
        FAIL();
    } catch (const MemoryError &e) {
        EXPECT_TRUE(contains(e.what(), "hipMalloc failed: hipErrorOutOfMemory")) << e.what();
        EXPECT_EQ(e.code_name(), "hipErrorOutOfMemory");
    }
    try {
        hip.check(700, "cuStreamSynchronize");
        FAIL();
    } catch (const LaunchError &e) {
        EXPECT_TRUE(contains(e.what(), "hipStreamSynchronize failed: hipErrorIllegalAddress")) << e.what();
        EXPECT_TRUE(contains(e.what(), "the HIP context is no longer usable")) << e.what();
    }
    // HIP's own codes: a symbol, a device pointer, a device function are the program's mistakes.
    for (int code : {13, 17, 98}) EXPECT_THROW(hip.check(code, "cuModuleGetGlobal"), LogicError) << code;
    EXPECT_THROW(hip.check(1052, "cuMemAlloc"), MemoryError);
    EXPECT_THROW(hip.check(801, "cuFuncSetAttribute"), LogicError);
}

TEST(HipDriverTest, MessagesNameHipsCalls) {
    SKIP_WITHOUT_HIP_LIBRARY();
    const CudaDriver &hip = *CudaDriver::hip_table_for_testing();
    EXPECT_EQ(hip.call_name("cuMemcpyHtoDAsync"), "hipMemcpyHtoDAsync");
    EXPECT_EQ(hip.call_name("cuEventRecord"), "hipEventRecord");
    EXPECT_EQ(hip.call_name("cuStreamCreate"), "hipStreamCreateWithFlags");
    EXPECT_EQ(hip.call_name("cuLaunchKernel"), "hipModuleLaunchKernel");
    EXPECT_EQ(hip.call_name("cuCtxGetLimit"), "hipDeviceGetLimit");
    EXPECT_EQ(hip.call_name("launch of kernel 'k'"), "launch of kernel 'k'");
    // Every entry a message may name is a real HIP entry point or the adapter's (documented) one.
    for (const char *cu_call : {"cuMemAlloc", "cuMemFree", "cuModuleLoadDataEx", "cuModuleGetFunction",
                                "cuStreamSynchronize", "cuEventElapsedTime", "cuIpcOpenMemHandle", "cuGraphLaunch",
                                "cuMemsetD32Async", "cuMemcpy2DAsync", "cuMemcpy3DAsync", "cuDeviceGetAttribute"}) {
        const std::string name = hip.call_name(cu_call);
        EXPECT_NE(HipRuntime::get().entry(name), nullptr) << cu_call << " -> " << name;
    }
}

TEST(HipDriverTest, WithoutAnAmdGpuTheTableSaysWhy) {
    SKIP_WITHOUT_HIP_LIBRARY();
    if (hip_device_count() > 0) GTEST_SKIP() << "this machine has an AMD GPU";
    std::string why;
    EXPECT_EQ(CudaDriver::try_hip(&why), nullptr);
    EXPECT_TRUE(contains(why, "api 'hip': hipGetDeviceCount failed: hipError")) << why;
    EXPECT_THROW(CudaDriver::hip(), RuntimeError);
}

TEST(HipDriverTest, DeviceAttributesMapOntoHipsEnum) {
    // hipDeviceAttribute_t of ROCm 5 and 6 (hip_runtime_api.h): the values launches and the back
    // end's constructor read.
    const std::map<DeviceAttribute, int> pinned = {
        {DeviceAttribute::max_threads_per_block, 56},    {DeviceAttribute::max_block_dim_x, 26},
        {DeviceAttribute::max_grid_dim_z, 31},           {DeviceAttribute::max_shared_memory_per_block, 74},
        {DeviceAttribute::warp_size, 87},                {DeviceAttribute::multiprocessor_count, 63},
        {DeviceAttribute::compute_capability_major, 23}, {DeviceAttribute::compute_capability_minor, 61},
        {DeviceAttribute::memory_pools_supported, 88},   {DeviceAttribute::l2_cache_size, 19},
        {DeviceAttribute::ecc_enabled, 0},               {DeviceAttribute::managed_memory, 24},
    };
    for (const auto &[a, hip] : pinned)
        EXPECT_EQ(hip_device_attribute(static_cast<int>(a)), hip) << to_string(a);
    // One HIP attribute per ember attribute, all inside HIP's CUDA-compatible range; CUDA-only
    // attributes have none.
    std::map<int, DeviceAttribute> seen;
    int mapped = 0;
    for (DeviceAttribute a : all_device_attributes) {
        const int h = hip_device_attribute(static_cast<int>(a));
        if (h < 0) continue;
        ++mapped;
        EXPECT_LT(h, 92) << to_string(a);
        auto [it, fresh] = seen.emplace(h, a);
        EXPECT_TRUE(fresh) << to_string(a) << " and " << to_string(it->second) << " both map to " << h;
    }
    EXPECT_GE(mapped, 60);
    EXPECT_EQ(hip_device_attribute(static_cast<int>(DeviceAttribute::cluster_launch)), -1);
    EXPECT_EQ(hip_device_attribute(static_cast<int>(DeviceAttribute::tensor_map_access_supported)), -1);
}

} // namespace
