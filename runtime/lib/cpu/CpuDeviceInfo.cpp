/// \file
/// Device attributes, memory and limits of the CPU device.
#include "cpu/CpuDeviceInfo.h"

#include "ember/Error.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <fstream>
#include <string>
#include <unistd.h>

namespace ember::detail {

namespace {

/// Reads "<key> <kib> kB" lines of /proc/meminfo.
size_t meminfo_bytes(const std::string &wanted) {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    uint64_t kib = 0;
    while (in >> key >> kib >> unit)
        if (key == wanted) return static_cast<size_t>(kib * 1024);
    return 0;
}

/// The host processor's clock in kHz (CUDA's unit for clock_rate): cpuinfo_max_freq of cpufreq,
/// else the "cpu MHz" of /proc/cpuinfo; 0 when neither is there (some virtual machines).
int clock_rate_khz() {
    {
        std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
        long khz = 0;
        if (in >> khz && khz > 0 && khz <= INT_MAX) return static_cast<int>(khz);
    }
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("cpu MHz", 0) != 0) continue;
        auto colon = line.find(':');
        if (colon == std::string::npos) break;
        try {
            double mhz = std::stod(line.substr(colon + 1));
            if (mhz > 0 && mhz * 1000 <= INT_MAX) return static_cast<int>(mhz * 1000);
        } catch (const std::exception &) {
        }
        break;
    }
    return 0;
}

/// Bytes of the L2 cache of one core; 0 when the system does not say.
int l2_cache_bytes() {
    long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (bytes > 0 && bytes <= INT_MAX) return static_cast<int>(bytes);
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index2/size");
    long value = 0;
    char unit = 0;
    if (in >> value >> unit && value > 0) {
        long scaled = unit == 'K' ? value << 10 : unit == 'M' ? value << 20 : value;
        if (scaled <= INT_MAX) return static_cast<int>(scaled);
    }
    return 0;
}

int clamp_int(int64_t v) { return static_cast<int>(std::min<int64_t>(v, INT_MAX)); }

// The CPU device's limits, as CUDA's defaults where they have no effect here.
std::atomic<size_t> stack_size_limit{256 * 1024}; // the fibers' default stack
std::atomic<size_t> printf_fifo_limit{1 << 20};   // CUDA's default, 1 MiB
std::atomic<size_t> malloc_heap_limit{8 << 20};   // CUDA's default, 8 MiB

std::atomic<size_t> *limit_slot(Limit limit) {
    switch (limit) {
    case Limit::stack_size: return &stack_size_limit;
    case Limit::printf_fifo_size: return &printf_fifo_limit;
    case Limit::malloc_heap_size: return &malloc_heap_limit;
    }
    throw LogicError("no limit Limit(" + std::to_string(static_cast<int>(limit)) +
                     "): use Limit::stack_size, printf_fifo_size or malloc_heap_size");
}

} // namespace

int cpu_attribute(DeviceAttribute attribute, const DeviceLimits &limits, unsigned threads) {
    using A = DeviceAttribute;
    switch (attribute) {
    // The launch limits: the CPU device checks CUDA's, so that a launch that works here works
    // on a GPU (CpuBackend::limits()).
    case A::max_threads_per_block: return clamp_int(limits.max_threads_per_block);
    case A::max_block_dim_x: return clamp_int(limits.max_block_dim[0]);
    case A::max_block_dim_y: return clamp_int(limits.max_block_dim[1]);
    case A::max_block_dim_z: return clamp_int(limits.max_block_dim[2]);
    case A::max_grid_dim_x: return clamp_int(limits.max_grid_dim[0]);
    case A::max_grid_dim_y: return clamp_int(limits.max_grid_dim[1]);
    case A::max_grid_dim_z: return clamp_int(limits.max_grid_dim[2]);
    case A::max_shared_memory_per_block:
    case A::max_shared_memory_per_block_optin: return clamp_int(limits.max_shared_memory_per_block);
    case A::warp_size: return limits.warp_size;
    // A host thread of the pool is a multiprocessor: it runs one block at a time.
    case A::multiprocessor_count: return static_cast<int>(threads);
    case A::max_threads_per_multiprocessor: return clamp_int(limits.max_threads_per_block);
    case A::max_shared_memory_per_multiprocessor: return clamp_int(limits.max_shared_memory_per_block);
    case A::max_blocks_per_multiprocessor: return 1;
    // CUDA's sizes, which ember's checks and the DSL mirror.
    case A::total_constant_memory: return 64 * 1024;
    case A::max_pitch: return INT_MAX;
    // The host.
    case A::clock_rate: return clock_rate_khz();
    case A::l2_cache_size: return l2_cache_bytes();
    // Device memory is host memory: one address space, any host pointer is usable, atomics are
    // the host's, caches are the host's.
    case A::integrated:
    case A::can_map_host_memory:
    case A::unified_addressing:
    case A::managed_memory:
    case A::concurrent_managed_access:
    case A::pageable_memory_access:
    case A::pageable_memory_access_uses_host_page_tables:
    case A::direct_managed_mem_access_from_host:
    case A::can_use_host_pointer_for_registered_mem:
    case A::host_register_supported:
    case A::host_native_atomic_supported:
    case A::global_l1_cache_supported:
    case A::local_l1_cache_supported:
    case A::compute_preemption_supported: return 1;
    // A vector register holds twice as many f32 as f64 lanes.
    case A::single_to_double_precision_perf_ratio: return 2;
    // Not an NVIDIA GPU: compute capability 0.0 (DeviceContext::compute_capability() is {0, 0}).
    case A::compute_capability_major:
    case A::compute_capability_minor: return 0;
    // What the CPU device does not have or do: no textures or surfaces, no copy engines or
    // overlap (every operation completes before its call returns), one launch at a time, one
    // stream priority, no PCI address, no ECC/TCC/timeout/board information, no register file
    // limit, no cooperative or cluster launches, no memory pools, VMM, IPC or RDMA.
    case A::max_registers_per_block:
    case A::max_registers_per_multiprocessor:
    case A::texture_alignment:
    case A::gpu_overlap:
    case A::kernel_exec_timeout:
    case A::compute_mode:
    case A::maximum_texture1d_width:
    case A::maximum_texture2d_width:
    case A::maximum_texture2d_height:
    case A::maximum_texture3d_width:
    case A::maximum_texture3d_height:
    case A::maximum_texture3d_depth:
    case A::maximum_texture2d_layered_width:
    case A::maximum_texture2d_layered_height:
    case A::maximum_texture2d_layered_layers:
    case A::surface_alignment:
    case A::concurrent_kernels:
    case A::ecc_enabled:
    case A::pci_bus_id:
    case A::pci_device_id:
    case A::tcc_driver:
    case A::memory_clock_rate:
    case A::global_memory_bus_width:
    case A::async_engine_count:
    case A::maximum_texture1d_layered_width:
    case A::maximum_texture1d_layered_layers:
    case A::maximum_texture2d_gather_width:
    case A::maximum_texture2d_gather_height:
    case A::maximum_texture3d_width_alternate:
    case A::maximum_texture3d_height_alternate:
    case A::maximum_texture3d_depth_alternate:
    case A::pci_domain_id:
    case A::texture_pitch_alignment:
    case A::maximum_texturecubemap_width:
    case A::maximum_texturecubemap_layered_width:
    case A::maximum_texturecubemap_layered_layers:
    case A::maximum_surface1d_width:
    case A::maximum_surface2d_width:
    case A::maximum_surface2d_height:
    case A::maximum_surface3d_width:
    case A::maximum_surface3d_height:
    case A::maximum_surface3d_depth:
    case A::maximum_surface1d_layered_width:
    case A::maximum_surface1d_layered_layers:
    case A::maximum_surface2d_layered_width:
    case A::maximum_surface2d_layered_height:
    case A::maximum_surface2d_layered_layers:
    case A::maximum_surfacecubemap_width:
    case A::maximum_surfacecubemap_layered_width:
    case A::maximum_surfacecubemap_layered_layers:
    case A::maximum_texture1d_linear_width:
    case A::maximum_texture2d_linear_width:
    case A::maximum_texture2d_linear_height:
    case A::maximum_texture2d_linear_pitch:
    case A::maximum_texture2d_mipmapped_width:
    case A::maximum_texture2d_mipmapped_height:
    case A::maximum_texture1d_mipmapped_width:
    case A::stream_priorities_supported:
    case A::multi_gpu_board:
    case A::multi_gpu_board_group_id:
    case A::cooperative_launch:
    case A::cooperative_multi_device_launch:
    case A::can_flush_remote_writes:
    case A::virtual_memory_management_supported:
    case A::max_persisting_l2_cache_size:
    case A::max_access_policy_window_size:
    case A::reserved_shared_memory_per_block:
    case A::memory_pools_supported:
    case A::gpu_direct_rdma_supported:
    case A::cluster_launch:
    case A::ipc_event_supported:
    case A::mem_sync_domain_count:
    case A::tensor_map_access_supported:
    case A::unified_function_pointers: return 0;
    }
    throw LogicError("get_attribute: " + std::string(to_string(attribute)) +
                     " names no device attribute (see ember/runtime/DeviceAttributes.def)");
}

std::pair<size_t, size_t> cpu_memory_info() {
    return {meminfo_bytes("MemAvailable:"), meminfo_bytes("MemTotal:")};
}

size_t cpu_get_limit(Limit limit) { return limit_slot(limit)->load(); }

void cpu_set_limit(Limit limit, size_t value) {
    std::atomic<size_t> *slot = limit_slot(limit);
    if (limit == Limit::stack_size && value > cpu_max_stack_size)
        throw LogicError("set_limit: stack_size of " + std::to_string(value) +
                         " bytes is more than the CPU device allows per GPU thread, " +
                         std::to_string(cpu_max_stack_size) + " bytes (64 MiB)");
    slot->store(value);
}

uint64_t cpu_fiber_stack_bytes(uint64_t local_bytes) {
    const uint64_t need = local_bytes > UINT64_MAX - cpu_fiber_stack_margin ? UINT64_MAX
                                                                            : local_bytes + cpu_fiber_stack_margin;
    return std::max<uint64_t>(stack_size_limit.load(), need);
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string s = line.substr(colon + 1);
                s.erase(0, s.find_first_not_of(" \t"));
                if (!s.empty()) return s;
            }
        }
    }
    return "CPU";
}

} // namespace ember::detail
