/// \file
/// Device information and context limits on every api: attributes (plausible, consistent with
/// the launch limits and the target, complete), compute capability, driver and API versions,
/// memory info, PCI bus id, is_compatible, limits set and read back, bad device ids, a second
/// GPU; the names of DeviceAttribute and Limit; and on the CPU device, kernels with barriers
/// whose threads hold more local arrays than the default fiber stack (they used to crash).
/// CUDA cases skip with a message where there is no GPU (or no second GPU).
#include "ember/ember.h"

#include "ContextImpl.h"
#include "DeviceInfo.h"
#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace ember;

namespace {

class DeviceInfoTest : public ember::testing::DeviceTest {
protected:
    const detail::DeviceLimits &limits() { return ctx().impl()->backend->limits(); }
    bool cuda() const { return GetParam() == "cuda"; }
};

const auto add_one = kernel("devinfo_add_one", {"v", "n"}, [](Ptr<int64_t> v, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += 1; });
});

TEST_P(DeviceInfoTest, AttributesMatchTheLaunchLimits) {
    const detail::DeviceLimits &lim = limits();
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::warp_size), 32);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::warp_size), lim.warp_size);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_threads_per_block), lim.max_threads_per_block);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_block_dim_x), lim.max_block_dim[0]);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_block_dim_y), lim.max_block_dim[1]);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_block_dim_z), lim.max_block_dim[2]);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_grid_dim_x), lim.max_grid_dim[0]);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_grid_dim_y), lim.max_grid_dim[1]);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_grid_dim_z), lim.max_grid_dim[2]);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_shared_memory_per_block), lim.max_shared_memory_per_block);
    // PyCUDA's old name is the same attribute.
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::shared_memory_per_block),
              ctx().get_attribute(DeviceAttribute::max_shared_memory_per_block));
    EXPECT_GE(ctx().get_attribute(DeviceAttribute::max_shared_memory_per_block_optin),
              ctx().get_attribute(DeviceAttribute::max_shared_memory_per_block));
    EXPECT_GE(ctx().get_attribute(DeviceAttribute::max_threads_per_multiprocessor),
              ctx().get_attribute(DeviceAttribute::max_threads_per_block));
    EXPECT_GE(ctx().get_attribute(DeviceAttribute::clock_rate), 0);
    EXPECT_GE(ctx().get_attribute(DeviceAttribute::l2_cache_size), 0);
    EXPECT_EQ(ctx().get_attribute(DeviceAttribute::unified_addressing), 1);

    const int sms = ctx().get_attribute(DeviceAttribute::multiprocessor_count);
    EXPECT_GE(sms, 1);
    if (cuda()) {
        EXPECT_GE(ctx().get_attribute(DeviceAttribute::total_constant_memory), 64 * 1024);
        EXPECT_GT(ctx().get_attribute(DeviceAttribute::max_registers_per_block), 0);
        EXPECT_GT(ctx().get_attribute(DeviceAttribute::clock_rate), 0);
        EXPECT_GT(ctx().get_attribute(DeviceAttribute::l2_cache_size), 0);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::integrated), 0) << "an H100/H200 is a discrete GPU";
    } else {
        // The CPU device: one multiprocessor per host thread of its pool.
        unsigned want = std::max(1u, std::thread::hardware_concurrency());
        if (const char *env = std::getenv("EMBER_CPU_THREADS"); env && *env) want = unsigned(std::atoi(env));
        EXPECT_EQ(sms, int(want));
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::integrated), 1);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::can_map_host_memory), 1);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::max_blocks_per_multiprocessor), 1);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::total_constant_memory), 64 * 1024);
        // What the CPU device has none of reads 0.
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::maximum_texture2d_width), 0);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::ecc_enabled), 0);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::pci_bus_id), 0);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::async_engine_count), 0);
        EXPECT_EQ(ctx().get_attribute(DeviceAttribute::stream_priorities_supported), 0);
        EXPECT_EQ(ctx().stream_priority_range(), std::make_pair(0, 0));
    }
}

TEST_P(DeviceInfoTest, ComputeCapabilityMatchesTheTarget) {
    auto [major, minor] = ctx().compute_capability();
    EXPECT_EQ(major, ctx().get_attribute(DeviceAttribute::compute_capability_major));
    EXPECT_EQ(minor, ctx().get_attribute(DeviceAttribute::compute_capability_minor));
    const std::string target = ctx().target();
    if (cuda()) {
        // The target is the device's own arch-specific sm_XXa where LLVM knows it, else the
        // newest sm_XX LLVM knows that is not newer than the device.
        std::smatch m;
        ASSERT_TRUE(std::regex_match(target, m, std::regex("nvptx:sm_([0-9]+)a?"))) << target;
        const int sm = std::stoi(m[1]);
        EXPECT_LE(sm, major * 10 + minor) << target;
        EXPECT_GE(major, 7);
        if (major == 9 && minor == 0) {
            EXPECT_EQ(target, "nvptx:sm_90a");
        }
    } else {
        EXPECT_EQ(major, 0);
        EXPECT_EQ(minor, 0);
        EXPECT_EQ(target.rfind("cpu", 0), 0u) << target;
    }
}

TEST_P(DeviceInfoTest, GetAttributesCoversEveryAttribute) {
    std::map<DeviceAttribute, int> all = ctx().get_attributes();
    if (!cuda()) {
        EXPECT_EQ(all.size(), std::size(all_device_attributes));
    } else {
        // A driver may not know the newest attributes, or drop deprecated ones; the rest it knows.
        EXPECT_GE(all.size(), std::size(all_device_attributes) - 20);
        for (DeviceAttribute a :
             {DeviceAttribute::max_threads_per_block, DeviceAttribute::max_grid_dim_x, DeviceAttribute::warp_size,
              DeviceAttribute::multiprocessor_count, DeviceAttribute::max_shared_memory_per_block,
              DeviceAttribute::compute_capability_major, DeviceAttribute::compute_capability_minor,
              DeviceAttribute::pci_bus_id, DeviceAttribute::pci_device_id, DeviceAttribute::pci_domain_id,
              DeviceAttribute::l2_cache_size, DeviceAttribute::unified_addressing, DeviceAttribute::managed_memory,
              DeviceAttribute::max_shared_memory_per_block_optin, DeviceAttribute::memory_pools_supported})
            EXPECT_TRUE(all.count(a)) << to_string(a);
    }
    for (DeviceAttribute a : all_device_attributes) {
        auto it = all.find(a);
        if (it != all.end()) {
            EXPECT_EQ(it->second, ctx().get_attribute(a)) << to_string(a);
            continue;
        }
        // Left out only where the driver does not know it; then get_attribute says which.
        EXPECT_TRUE(cuda()) << to_string(a);
        try {
            ctx().get_attribute(a);
            ADD_FAILURE() << to_string(a) << " is missing from get_attributes() but get_attribute reads it";
        } catch (const LogicError &e) {
            EXPECT_NE(std::string(e.what()).find(std::string(to_string(a))), std::string::npos) << e.what();
        }
    }
}

TEST_P(DeviceInfoTest, AnUnknownAttributeIsALogicError) {
    try {
        ctx().get_attribute(static_cast<DeviceAttribute>(9999));
        FAIL() << "no exception";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("DeviceAttribute(9999)"), std::string::npos) << e.what();
    }
}

TEST_P(DeviceInfoTest, MemoryInfo) {
    auto [free_bytes, total] = ctx().get_memory_info();
    EXPECT_GT(total, 0u);
    EXPECT_LE(free_bytes, total);
    EXPECT_GT(free_bytes, 0u);
    EXPECT_GT(ctx().total_memory(), 0u);
    if (!cuda()) {
        EXPECT_EQ(ctx().total_memory(), total);
        return;
    }
    // What the driver reports as total through either call agrees (within 2%: some
    // configurations keep a little of the memory to themselves).
    const size_t a = ctx().total_memory(), b = total;
    EXPECT_LE(a > b ? a - b : b - a, std::max(size_t(64) << 20, a / 50)) << a << " vs " << b;
    // An allocation of 1 GiB shows in the free memory.
    const size_t gib = size_t(1) << 30;
    auto buf = ctx().enqueue_create_buffer<uint8_t>(gib);
    ctx().synchronize();
    auto [free_after, total_after] = ctx().get_memory_info();
    EXPECT_EQ(total_after, total);
    EXPECT_LE(free_after + gib - (size_t(64) << 20), free_bytes) << free_bytes << " then " << free_after;
}

TEST_P(DeviceInfoTest, PciBusId) {
    if (!cuda()) {
        try {
            (void)ctx().pci_bus_id();
            FAIL() << "no exception";
        } catch (const LogicError &e) {
            EXPECT_NE(std::string(e.what()).find("not a PCI device"), std::string::npos) << e.what();
        }
        return;
    }
    const std::string id = ctx().pci_bus_id();
    std::smatch m;
    ASSERT_TRUE(std::regex_match(id, m,
                                 std::regex("([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\\.([0-9a-fA-F])")))
        << id;
    EXPECT_EQ(std::stoi(m[1], nullptr, 16), ctx().get_attribute(DeviceAttribute::pci_domain_id)) << id;
    EXPECT_EQ(std::stoi(m[2], nullptr, 16), ctx().get_attribute(DeviceAttribute::pci_bus_id)) << id;
    EXPECT_EQ(std::stoi(m[3], nullptr, 16), ctx().get_attribute(DeviceAttribute::pci_device_id)) << id;
}

TEST_P(DeviceInfoTest, DriverAndApiVersions) {
    if (!cuda()) {
        EXPECT_EQ(ctx().get_driver_version(), 0);
        EXPECT_EQ(ctx().get_api_version(), 0);
        return;
    }
    EXPECT_GE(ctx().get_driver_version(), 11000); // ember needs CUDA 11 or newer
    EXPECT_GT(ctx().get_api_version(), 0);
    EXPECT_EQ(ctx().id(), 0);
}

TEST_P(DeviceInfoTest, IsCompatibleAndKernelsRun) {
    const bool compatible = ctx().is_compatible();
    if (cuda()) {
        auto [major, minor] = ctx().compute_capability();
        auto ptx = detail::ptx_isa_version(TargetSpec::parse(ctx().target()));
        const bool want = (major > min_compute_capability_major ||
                           (major == min_compute_capability_major && minor >= min_compute_capability_minor)) &&
                          ctx().get_driver_version() >= detail::cuda_version_for_ptx_isa(ptx.first, ptx.second);
        EXPECT_EQ(compatible, want);
    }
    EXPECT_TRUE(compatible) << "ember runs on " << ctx().name() << " (" << ctx().target() << ")";
    // ... and then a kernel compiles, loads and runs.
    std::vector<int64_t> v(1000, 41);
    auto d = ctx().enqueue_create_buffer<int64_t>(v.size());
    ctx().enqueue_copy(d, v.data());
    ctx().enqueue_function(add_one, d, int64_t(v.size()), grid_dim(4), block_dim(256));
    ctx().enqueue_copy(v.data(), d);
    ctx().synchronize();
    for (int64_t x : v) ASSERT_EQ(x, 42);
}

TEST_P(DeviceInfoTest, LimitsRoundTrip) {
    struct Case {
        Limit limit;
        size_t value;
    };
    const Case cases[] = {{Limit::stack_size, 8192},
                          {Limit::printf_fifo_size, size_t(3) << 20},
                          {Limit::malloc_heap_size, size_t(24) << 20}};
    for (const Case &c : cases) {
        SCOPED_TRACE(std::string(to_string(c.limit)));
        const size_t before = ctx().get_limit(c.limit);
        EXPECT_GT(before, 0u);
        try {
            ctx().set_limit(c.limit, c.value);
        } catch (const LogicError &e) {
            // CUDA refuses a new printf FIFO or heap size once a kernel that prints (allocates) has
            // run in the process: an earlier test of this binary, when several run in one process.
            ASSERT_TRUE(cuda() && c.limit != Limit::stack_size) << e.what();
            EXPECT_NE(std::string(e.what()).find("only before the first launch"), std::string::npos) << e.what();
            EXPECT_EQ(ctx().get_limit(c.limit), before);
            continue;
        }
        // CUDA may round up (the stack size to its granularity).
        if (cuda()) {
            EXPECT_GE(ctx().get_limit(c.limit), c.value);
        } else {
            EXPECT_EQ(ctx().get_limit(c.limit), c.value);
        }
        // Another context of the same device sees the same limit (the primary context's on CUDA).
        DeviceContext other(0, GetParam());
        EXPECT_EQ(other.get_limit(c.limit), ctx().get_limit(c.limit));
        ctx().set_limit(c.limit, before);
        if (!cuda()) {
            EXPECT_EQ(ctx().get_limit(c.limit), before);
        }
    }
    // Kernels still run after a change of the stack size.
    const size_t stack = ctx().get_limit(Limit::stack_size);
    ctx().set_limit(Limit::stack_size, cuda() ? 4096 : 64 * 1024);
    std::vector<int64_t> v(256, 1);
    auto d = ctx().enqueue_create_buffer<int64_t>(v.size());
    ctx().enqueue_copy(d, v.data());
    ctx().enqueue_function(add_one, d, int64_t(v.size()), grid_dim(1), block_dim(256));
    ctx().enqueue_copy(v.data(), d);
    ctx().synchronize();
    EXPECT_EQ(v[255], 2);
    ctx().set_limit(Limit::stack_size, stack);
}

TEST_P(DeviceInfoTest, BadLimitsAreLogicErrors) {
    try {
        ctx().get_limit(static_cast<Limit>(7));
        FAIL() << "no exception";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("Limit(7)"), std::string::npos) << e.what();
    }
    EXPECT_THROW(ctx().set_limit(static_cast<Limit>(-1), 1), LogicError);
    if (cuda()) return;
    const size_t before = ctx().get_limit(Limit::stack_size);
    try {
        ctx().set_limit(Limit::stack_size, size_t(1) << 30);
        FAIL() << "no exception";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("1073741824"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("64 MiB"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx().get_limit(Limit::stack_size), before);
}

TEST_P(DeviceInfoTest, ABadDeviceIdIsALogicErrorNamingItAndTheCount) {
    const int count = DeviceContext::number_of_devices(GetParam());
    for (int id : {count, count + 7, -1}) {
        try {
            DeviceContext bad(id, GetParam());
            FAIL() << "no exception for id " << id;
        } catch (const LogicError &e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("id " + std::to_string(id)), std::string::npos) << msg;
            EXPECT_NE(msg.find(std::to_string(count)), std::string::npos) << msg;
        }
    }
}

TEST_P(DeviceInfoTest, NumberOfDevices) {
    EXPECT_EQ(DeviceContext::number_of_devices("cpu"), 1);
    EXPECT_EQ(DeviceContext::number_of_devices("cuda"), detail::cuda_device_count());
    EXPECT_GE(DeviceContext::number_of_devices("hip"), 0);
    EXPECT_THROW(DeviceContext::number_of_devices("metal"), LogicError);
    EXPECT_GE(DeviceContext::number_of_devices(GetParam()), 1);
    EXPECT_EQ(ctx().id(), 0);
}

INSTANTIATE_TEST_SUITE_P(Apis, DeviceInfoTest, ember::testing::all_apis(), ember::testing::api_name);

// A second GPU: device 1 opens, is another device than 0, reports its own attributes and limits,
// and runs kernels. Needs two CUDA devices (the lead's 2xH200 run).
TEST(DeviceInfoMultiGpu, DeviceOneIsItsOwnDevice) {
    const int count = DeviceContext::number_of_devices("cuda");
    if (count < 2) GTEST_SKIP() << "needs two CUDA devices; this machine has " << count;
    DeviceContext d0(0, "cuda"), d1(1, "cuda");
    EXPECT_EQ(d1.id(), 1);
    EXPECT_EQ(d1.api(), "cuda");
    EXPECT_NE(d0.pci_bus_id(), d1.pci_bus_id());
    EXPECT_EQ(d1.get_attribute(DeviceAttribute::warp_size), 32);
    EXPECT_EQ(d1.get_attributes().size(), d0.get_attributes().size());
    EXPECT_TRUE(d1.is_compatible());
    auto [free1, total1] = d1.get_memory_info();
    EXPECT_LE(free1, total1);
    EXPECT_GT(total1, 0u);
    // Limits are per device: a change on device 1 leaves device 0 alone.
    const size_t stack0 = d0.get_limit(Limit::stack_size), stack1 = d1.get_limit(Limit::stack_size);
    d1.set_limit(Limit::stack_size, stack1 + 4096);
    EXPECT_GE(d1.get_limit(Limit::stack_size), stack1 + 4096);
    EXPECT_EQ(d0.get_limit(Limit::stack_size), stack0);
    d1.set_limit(Limit::stack_size, stack1);
    // A kernel runs on device 1 and its memory is device 1's.
    std::vector<int64_t> v(512, 9);
    auto d = d1.enqueue_create_buffer<int64_t>(v.size());
    d1.enqueue_copy(d, v.data());
    d1.enqueue_function(add_one, d, int64_t(v.size()), grid_dim(2), block_dim(256));
    d1.enqueue_copy(v.data(), d);
    d1.synchronize();
    for (int64_t x : v) ASSERT_EQ(x, 10);
    EXPECT_THROW(d0.enqueue_function(add_one, d, int64_t(v.size()), grid_dim(2), block_dim(256)), LogicError);
}

// The PTX ISA version ember writes and the driver each needs (no GPU needed: compiling only).
TEST(DeviceInfoPtx, PtxIsaVersionAndTheDriverItNeeds) {
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(6, 0), 9000);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(6, 3), 10000);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(6, 5), 10020);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(7, 0), 11000);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(7, 8), 11080);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(8, 0), 12000);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(8, 5), 12050);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(8, 7), 12080);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(9, 0), 13000);
    EXPECT_EQ(detail::cuda_version_for_ptx_isa(5, 0), 0);
    std::pair<int, int> v;
    try {
        v = detail::ptx_isa_version(TargetSpec::parse("nvptx:sm_90"));
    } catch (const LogicError &e) {
        GTEST_SKIP() << "this build cannot generate NVPTX: " << e.what();
    }
    // LLVM writes PTX 7.8 at least for sm_90 (the first ISA with sm_90).
    EXPECT_GE(v.first * 10 + v.second, 78);
    auto again = detail::ptx_isa_version(TargetSpec::parse("nvptx:sm_90"));
    EXPECT_EQ(again, v);
    auto older = detail::ptx_isa_version(TargetSpec::parse("nvptx:sm_70"));
    EXPECT_LE(older.first * 10 + older.second, v.first * 10 + v.second);
    EXPECT_GE(older.first, 6);
}

// ---------------------------------------------------------------------------------------------
// Names.

TEST(DeviceAttributeNames, AreLowerCasePyCudaNamesWithCudaNumbers) {
    EXPECT_EQ(to_string(DeviceAttribute::max_threads_per_block), "max_threads_per_block");
    EXPECT_EQ(to_string(DeviceAttribute::multiprocessor_count), "multiprocessor_count");
    EXPECT_EQ(to_string(DeviceAttribute::shared_memory_per_block), "max_shared_memory_per_block");
    EXPECT_EQ(to_string(DeviceAttribute::maximum_texture2d_array_numslices), "maximum_texture2d_layered_layers");
    EXPECT_EQ(to_string(static_cast<DeviceAttribute>(4242)), "DeviceAttribute(4242)");
    // cuda.h's numbers.
    EXPECT_EQ(int(DeviceAttribute::max_threads_per_block), 1);
    EXPECT_EQ(int(DeviceAttribute::warp_size), 10);
    EXPECT_EQ(int(DeviceAttribute::multiprocessor_count), 16);
    EXPECT_EQ(int(DeviceAttribute::pci_bus_id), 33);
    EXPECT_EQ(int(DeviceAttribute::compute_capability_major), 75);
    EXPECT_EQ(int(DeviceAttribute::compute_capability_minor), 76);
    EXPECT_EQ(int(DeviceAttribute::multi_gpu_board_group_id), 85);
    EXPECT_EQ(int(DeviceAttribute::max_shared_memory_per_block_optin), 97);
    EXPECT_EQ(int(DeviceAttribute::memory_pools_supported), 115);
    EXPECT_EQ(int(DeviceAttribute::cluster_launch), 120);
    // Distinct, increasing, each with its own lower-case name.
    std::set<std::string_view> names;
    int last = 0;
    for (DeviceAttribute a : all_device_attributes) {
        EXPECT_GT(int(a), last) << to_string(a);
        last = int(a);
        std::string_view n = to_string(a);
        EXPECT_TRUE(names.insert(n).second) << n;
        for (char c : n) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << n;
    }
}

TEST(DeviceAttributeNames, CoverPyCudasDeviceAttributeList) {
    // PyCUDA's device_attribute (seed 004), as PyCUDA spells them.
    const char *pycuda[] = {
        "MAX_THREADS_PER_BLOCK", "MAX_BLOCK_DIM_X", "MAX_BLOCK_DIM_Y", "MAX_BLOCK_DIM_Z", "MAX_GRID_DIM_X",
        "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z", "TOTAL_CONSTANT_MEMORY", "WARP_SIZE", "MAX_PITCH", "CLOCK_RATE",
        "TEXTURE_ALIGNMENT", "GPU_OVERLAP", "MULTIPROCESSOR_COUNT", "SHARED_MEMORY_PER_BLOCK",
        "MAX_SHARED_MEMORY_PER_BLOCK", "REGISTERS_PER_BLOCK", "MAX_REGISTERS_PER_BLOCK", "KERNEL_EXEC_TIMEOUT",
        "INTEGRATED", "CAN_MAP_HOST_MEMORY", "COMPUTE_MODE", "MAXIMUM_TEXTURE1D_WIDTH", "MAXIMUM_TEXTURE2D_WIDTH",
        "MAXIMUM_TEXTURE2D_HEIGHT", "MAXIMUM_TEXTURE3D_WIDTH", "MAXIMUM_TEXTURE3D_HEIGHT", "MAXIMUM_TEXTURE3D_DEPTH",
        "MAXIMUM_TEXTURE2D_ARRAY_WIDTH", "MAXIMUM_TEXTURE2D_ARRAY_HEIGHT", "MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES",
        "MAXIMUM_TEXTURE2D_LAYERED_WIDTH", "MAXIMUM_TEXTURE2D_LAYERED_HEIGHT", "MAXIMUM_TEXTURE2D_LAYERED_LAYERS",
        "MAXIMUM_TEXTURE1D_LAYERED_WIDTH", "MAXIMUM_TEXTURE1D_LAYERED_LAYERS", "SURFACE_ALIGNMENT",
        "CONCURRENT_KERNELS", "ECC_ENABLED", "PCI_BUS_ID", "PCI_DEVICE_ID", "TCC_DRIVER", "MEMORY_CLOCK_RATE",
        "GLOBAL_MEMORY_BUS_WIDTH", "L2_CACHE_SIZE", "MAX_THREADS_PER_MULTIPROCESSOR", "ASYNC_ENGINE_COUNT",
        "UNIFIED_ADDRESSING", "MAXIMUM_TEXTURE2D_GATHER_WIDTH", "MAXIMUM_TEXTURE2D_GATHER_HEIGHT",
        "MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE", "MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE",
        "MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE", "PCI_DOMAIN_ID", "TEXTURE_PITCH_ALIGNMENT",
        "MAXIMUM_TEXTURECUBEMAP_WIDTH", "MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH",
        "MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS", "MAXIMUM_SURFACE1D_WIDTH", "MAXIMUM_SURFACE2D_WIDTH",
        "MAXIMUM_SURFACE2D_HEIGHT", "MAXIMUM_SURFACE3D_WIDTH", "MAXIMUM_SURFACE3D_HEIGHT", "MAXIMUM_SURFACE3D_DEPTH",
        "MAXIMUM_SURFACE1D_LAYERED_WIDTH", "MAXIMUM_SURFACE1D_LAYERED_LAYERS", "MAXIMUM_SURFACE2D_LAYERED_WIDTH",
        "MAXIMUM_SURFACE2D_LAYERED_HEIGHT", "MAXIMUM_SURFACE2D_LAYERED_LAYERS", "MAXIMUM_SURFACECUBEMAP_WIDTH",
        "MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH", "MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS",
        "MAXIMUM_TEXTURE1D_LINEAR_WIDTH", "MAXIMUM_TEXTURE2D_LINEAR_WIDTH", "MAXIMUM_TEXTURE2D_LINEAR_HEIGHT",
        "MAXIMUM_TEXTURE2D_LINEAR_PITCH", "MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH", "MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT",
        "COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR", "MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH",
        "STREAM_PRIORITIES_SUPPORTED", "GLOBAL_L1_CACHE_SUPPORTED", "LOCAL_L1_CACHE_SUPPORTED",
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "MAX_REGISTERS_PER_MULTIPROCESSOR", "MANAGED_MEMORY",
        "MULTI_GPU_BOARD", "MULTI_GPU_BOARD_GROUP_ID"};
    // Every enumerator's spelling, aliases included, from the X-macro list.
    std::set<std::string> ours = {
#define EMBER_DEVICE_ATTRIBUTE(name, cu_number) #name,
#define EMBER_DEVICE_ATTRIBUTE_ALIAS(name, canonical) #name,
#include "ember/runtime/DeviceAttributes.def"
    };
    for (const char *p : pycuda) {
        std::string lower(p);
        for (char &c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
        EXPECT_TRUE(ours.count(lower)) << p << " has no DeviceAttribute::" << lower;
    }
}

TEST(LimitNames, AreLowerCasePyCudaNamesWithCudaNumbers) {
    EXPECT_EQ(to_string(Limit::stack_size), "stack_size");
    EXPECT_EQ(to_string(Limit::printf_fifo_size), "printf_fifo_size");
    EXPECT_EQ(to_string(Limit::malloc_heap_size), "malloc_heap_size");
    EXPECT_EQ(to_string(static_cast<Limit>(9)), "Limit(9)");
    // CUlimit's numbers.
    EXPECT_EQ(int(Limit::stack_size), 0);
    EXPECT_EQ(int(Limit::printf_fifo_size), 1);
    EXPECT_EQ(int(Limit::malloc_heap_size), 2);
}

// ---------------------------------------------------------------------------------------------
// The CPU device's fiber stacks. Kernels with barriers run each thread as a fiber; its stack
// used to be 256 KiB, so a thread with more local arrays than that ran past its stack (a crash,
// or other threads' data overwritten) although the DSL allows 512 KiB.

constexpr int64_t kBig = 48 * 1024; // int64 elements: 384 KiB per thread

// Each thread fills its array, meets the others at a barrier, then sums its array in a scrambled
// order (so that the array must exist in memory).
const auto big_locals = kernel("devinfo_big_locals", {"out"}, [](Ptr<int64_t> out) {
    auto a = local_array<int64_t, kBig>();
    Int t = thread_idx.x;
    for_(0, kBig, [&](Int j) { a[j] = t * 3 + j; });
    barrier();
    Var<int64_t> sum(0);
    for_(0, kBig, [&](Int j) { sum += a[(j * 7919) % kBig]; });
    out[block_idx.x * block_dim.x + t] = sum;
});

// The same need, from a device function's local array (320 KiB) in a kernel with a barrier.
constexpr int64_t kFn = 40 * 1024;
const auto sum_in_local = device_function("devinfo_sum_in_local", [](Int seed) {
    auto a = local_array<int64_t, kFn>();
    for_(0, kFn, [&](Int j) { a[j] = seed + j; });
    Var<int64_t> sum(0);
    for_(0, kFn, [&](Int j) { sum += a[kFn - 1 - j]; });
    return Int(sum);
});
const auto fn_locals = kernel("devinfo_fn_locals", {"out"}, [](Ptr<int64_t> out) {
    Int t = thread_idx.x;
    Int s = sum_in_local(t);
    barrier();
    out[block_idx.x * block_dim.x + t] = s + shuffle_xor(s, 1) - shuffle_xor(s, 1);
});

int64_t expected_sum(int64_t base, int64_t n) { return base * n + n * (n - 1) / 2; }

TEST(DeviceInfoCpuFibers, ThreadsWithMoreLocalArraysThanTheDefaultStack) {
    DeviceContext ctx(0, "cpu");
    const int64_t blocks = 6, threads = 64;
    std::vector<int64_t> out(blocks * threads, -1);
    auto d = ctx.enqueue_create_buffer<int64_t>(out.size());
    // A small stack_size limit does not shrink a kernel's stacks below what it needs.
    const size_t before = ctx.get_limit(Limit::stack_size);
    ctx.set_limit(Limit::stack_size, 16 * 1024);
    ctx.enqueue_function(big_locals, d, grid_dim(blocks), block_dim(threads));
    ctx.enqueue_copy(out.data(), d);
    ctx.set_limit(Limit::stack_size, before);
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t t = 0; t < threads; ++t)
            ASSERT_EQ(out[b * threads + t], expected_sum(t * 3, kBig)) << "block " << b << " thread " << t;
}

TEST(DeviceInfoCpuFibers, LocalArraysOfDeviceFunctionsCount) {
    DeviceContext ctx(0, "cpu");
    const int64_t blocks = 3, threads = 96;
    std::vector<int64_t> out(blocks * threads, -1);
    auto d = ctx.enqueue_create_buffer<int64_t>(out.size());
    ctx.enqueue_function(fn_locals, d, grid_dim(blocks), block_dim(threads));
    ctx.enqueue_copy(out.data(), d);
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t t = 0; t < threads; ++t)
            ASSERT_EQ(out[b * threads + t], expected_sum(t, kFn)) << "block " << b << " thread " << t;
}

TEST(DeviceInfoCpuFibers, CompiledKernelsKnowTheirLocalBytes) {
    DeviceContext ctx(0, "cpu");
    auto f = ctx.compile_function(big_locals);
    EXPECT_EQ(f.impl()->compiled.local_bytes, uint64_t(kBig * 8));
    auto g = ctx.compile_function(fn_locals);
    EXPECT_EQ(g.impl()->compiled.local_bytes, uint64_t(kFn * 8));
    auto h = ctx.compile_function(add_one);
    EXPECT_EQ(h.impl()->compiled.local_bytes, 0u);
}

// More local arrays than any fiber stack may hold (a 256 KiB array in a function called 300
// times: 75 MiB) is a LaunchError naming the kernel, its bytes and the limit, before it runs.
constexpr int64_t kHuge = 32 * 1024;
const auto first_of_local = device_function("devinfo_first_of_local", [](Int seed) {
    auto a = local_array<int64_t, kHuge>();
    for_(0, kHuge, [&](Int j) { a[j] = seed + j; });
    return Int(a[seed % kHuge]);
});
const auto too_many_locals = kernel("devinfo_too_many_locals", {"out"}, [](Ptr<int64_t> out) {
    Var<int64_t> acc(0);
    for (int i = 0; i < 300; ++i) acc += first_of_local(Int(thread_idx.x) + i);
    barrier();
    out[thread_idx.x] = acc;
});

TEST(DeviceInfoCpuFibers, MoreLocalArraysThanAnyStackIsALaunchError) {
    DeviceContext ctx(0, "cpu");
    auto d = ctx.enqueue_create_buffer<int64_t>(32);
    auto f = ctx.compile_function(too_many_locals);
    EXPECT_EQ(f.impl()->compiled.local_bytes, uint64_t(300 * kHuge * 8));
    try {
        ctx.enqueue_function(f, d, grid_dim(1), block_dim(32));
        FAIL() << "no exception";
    } catch (const LaunchError &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("devinfo_too_many_locals"), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::to_string(300 * kHuge * 8)), std::string::npos) << msg;
        EXPECT_NE(msg.find("limit of"), std::string::npos) << msg;
    }
}

// Each generated function probes its frame page by page, so that a frame bigger than its stack
// faults on the guard page instead of writing below it (x86-64 and AArch64, where LLVM has inline
// probes).
TEST(DeviceInfoCpuFibers, FiberKernelsProbeTheirStackFrames) {
    const TargetSpec host = TargetSpec::host();
    CompileOptions opts;
    opts.keep_llvm_opt = true;
    const std::string with_barrier = compile(big_locals.info()->ir, host, opts).llvm_opt;
    const std::string plain = compile(add_one.info()->ir, host, opts).llvm_opt;
#if defined(__x86_64__) || defined(__aarch64__)
    EXPECT_NE(with_barrier.find("\"probe-stack\"=\"inline-asm\""), std::string::npos) << with_barrier;
    // Kernels without barriers run on kernel stacks sized alike ([Note] CPU kernel memory).
    EXPECT_NE(plain.find("\"probe-stack\"=\"inline-asm\""), std::string::npos) << plain;
#endif
    // The entry stores the launch's stack size for the fiber runtime.
    EXPECT_NE(with_barrier.find("stack_bytes"), std::string::npos);
}

} // namespace
