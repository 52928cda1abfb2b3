/// \file
/// The CUDA back end's construction and context (classes in CudaBackend.h): the constructor and
/// destructor, device information and context limits, the factories (make_cuda_backend,
/// start_cuda_backend with its helper thread, cuda_device_count) and the text of messages.
#include "cuda/CudaBackend.h"

#include "CompileCache.h"
#include "Preload.h"
#include "hip/HipRuntime.h"

#include "ember/Error.h"

#include <atomic>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace ember::detail {

std::string cuda_format_bytes(uint64_t bytes) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::string s = std::to_string(bytes) + " bytes";
    if (bytes < 1024) return s;
    double v = double(bytes);
    int unit = 0;
    while (v >= 1024 && unit < 6) v /= 1024, ++unit;
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.3g %s)", v, units[unit]);
    return s + buf;
}

std::string cuda_hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return buf;
}

std::string cuda_dims(const std::array<int64_t, 3> &d) {
    return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
           ")";
}

CudaBackend::CudaBackend(const CudaDriver &drv, int device_id) : drv_(drv), device_id_(device_id) {
    std::string where = "device " + std::to_string(device_id);
    drv_.check(drv_.cuDeviceGet(&dev_, device_id), "cuDeviceGet", " for " + where);
    char name[256] = {};
    drv_.check(drv_.cuDeviceGetName(name, int(sizeof name) - 1, dev_), "cuDeviceGetName",
               " for " + where);
    name_ = name;
    where += " (" + name_ + ")";

    auto attribute = [&](cu::CUdevice_attribute attr, const char *what) {
        int value = 0;
        drv_.check(drv_.cuDeviceGetAttribute(&value, attr, dev_), "cuDeviceGetAttribute",
                   std::string(" reading the ") + what + " of " + where);
        return value;
    };
    if (drv_.is_hip()) {
        // The code object's architecture ([Note] HIP back end).
        char arch[64] = {};
        drv_.check(drv_.deviceArchName(arch, int(sizeof arch), dev_), "hipGetDeviceProperties",
                   " reading the architecture (gcnArchName) of " + where);
        try {
            target_ = TargetSpec::parse(std::string("amdgpu:") + arch);
        } catch (const Error &e) {
            throw RuntimeError(where + " is " + arch + ", which ember's AMDGPU target does not know: " + e.what());
        }
    } else {
        int major = attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
        int minor = attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
        target_ = TargetSpec::nvptx_for(major, minor);
        // sm_90a's PTX is ISA 8.0 (CUDA 12.0); an older driver would JIT none of it, and takes
        // the portable sm_90 (PTX 7.8), without the instructions of the architecture alone.
        if (!target_.cpu.empty() && target_.cpu.back() == 'a' && drv_.version() < 12000)
            target_.cpu.pop_back();
    }
    limits_.max_threads_per_block =
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
    limits_.max_block_dim = {
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "max block dimension x"),
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, "max block dimension y"),
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "max block dimension z")};
    limits_.max_grid_dim = {
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "max grid dimension x"),
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "max grid dimension y"),
        attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "max grid dimension z")};
    // The limit without the opt-in (cuFuncSetAttribute) that ember does not do.
    limits_.max_shared_memory_per_block = attribute(
        cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "max shared memory per block");
    // ember's warps have 32 lanes everywhere: on a GPU whose waves have 64, a warp is half a wave
    // ([Note] Warps on AMDGPU).
    limits_.warp_size = drv_.is_hip() ? 32 : attribute(cu::CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");

    // Older drivers do not know the attribute: no pools then.
    int pools = 0;
    if (drv_.cuDeviceGetAttribute(&pools, cu::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                  dev_) != cu::CUDA_SUCCESS)
        pools = 0;
    use_pools_ = pools != 0 && drv_.cuMemAllocAsync && drv_.cuMemFreeAsync;

    auto ctx = std::make_shared<const CudaPrimaryContext>(drv_, dev_, where);
    state_ = std::make_shared<CudaDeviceState>(drv_, ctx);
    ctx_ = std::move(ctx);
    ScopedCurrent current(*ctx_);
    drv_.check(drv_.cuCtxGetStreamPriorityRange(&least_priority_, &greatest_priority_),
               "cuCtxGetStreamPriorityRange", " on " + ctx_->where());
    default_stream_ = std::make_shared<CudaStream>(state_, 0, /*user=*/false);
    state_->default_stream = default_handle();
}

CudaBackend::~CudaBackend() {
    // [Note] CUDA and fork: in a child, the helper thread and the driver's state are the
    // parent's; nothing is joined, freed or written there (members release nothing either).
    if (CudaDriver::is_forked_child()) [[unlikely]] {
        if (helper_.joinable()) helper_.detach();
        return;
    }
    // The preloading helper first ([Note] Preload): it uses this back end until joined.
    images_.stop();
    if (helper_.joinable()) helper_.join();
    images_.finish(); // unloads the modules no kernel took; stores the program's list
    free_deferred();
    // The default stream synchronises in its destructor, before the context is released; lines
    // printed since the last synchronize are printed then.
    if (state_->print_buffer) {
        try {
            default_stream_->synchronize();
        } catch (const Error &) { // reported by the synchronize that met it, if any came
        }
    }
    state_->free_print_buffer();
    default_stream_.reset();
}

// Device information and context limits.

bool CudaBackend::query_attribute(DeviceAttribute attribute, int &value) {
    cu::CUresult rc = drv_.cuDeviceGetAttribute(&value, static_cast<int>(attribute), dev_);
    // The driver's answer for an attribute newer than itself.
    if (rc == cu::CUDA_ERROR_INVALID_VALUE) return false;
    drv_.check(rc, "cuDeviceGetAttribute",
               std::string(" reading attribute '") + std::string(to_string(attribute)) + "' of " +
                   ctx_->where());
    return true;
}

int CudaBackend::api_version() {
    unsigned version = 0;
    drv_.check(drv_.cuCtxGetApiVersion(ctx_->handle(), &version), "cuCtxGetApiVersion",
               " on " + ctx_->where());
    return static_cast<int>(version);
}

std::pair<size_t, size_t> CudaBackend::memory_info() {
    ScopedCurrent current(*ctx_);
    size_t free_bytes = 0, total_bytes = 0;
    drv_.check(drv_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo", " on " + ctx_->where());
    return {free_bytes, total_bytes};
}

size_t CudaBackend::total_memory() {
    size_t bytes = 0;
    drv_.check(drv_.cuDeviceTotalMem(&bytes, dev_), "cuDeviceTotalMem", " of " + ctx_->where());
    return bytes;
}

std::string CudaBackend::pci_bus_id() {
    // "dddd:bb:dd.f" and a NUL; the documentation asks for 13 bytes at least.
    char id[64] = {};
    drv_.check(drv_.cuDeviceGetPCIBusId(id, int(sizeof id) - 1, dev_), "cuDeviceGetPCIBusId",
               " of " + ctx_->where());
    return id;
}

size_t CudaBackend::get_limit(Limit limit) {
    ScopedCurrent current(*ctx_);
    size_t value = 0;
    drv_.check(drv_.cuCtxGetLimit(&value, static_cast<int>(limit)), "cuCtxGetLimit",
               std::string(" reading ") + std::string(to_string(limit)) + " of " + ctx_->where());
    return value;
}

void CudaBackend::set_limit(Limit limit, size_t value) {
    // The primary context's limit: every DeviceContext of this device (and the CUDA runtime's
    // code in this process) sees it.
    ScopedCurrent current(*ctx_);
    cu::CUresult rc = drv_.cuCtxSetLimit(static_cast<int>(limit), value);
    if (rc == cu::CUDA_SUCCESS) return;
    std::string context = std::string(" setting ") + std::string(to_string(limit)) + " to " +
                          cuda_format_bytes(value) + " on " + ctx_->where();
    if (rc == cu::CUDA_ERROR_INVALID_VALUE && limit == Limit::printf_fifo_size)
        context += "; CUDA accepts a new printf_fifo_size only before the first launch of a kernel "
                   "that prints (print(...)) in this process";
    else if (rc == cu::CUDA_ERROR_INVALID_VALUE && limit == Limit::malloc_heap_size)
        context += "; CUDA accepts a new malloc_heap_size only before the first launch of a kernel "
                   "that allocates device memory in this process";
    drv_.raise(rc, "cuCtxSetLimit failed", context);
}

std::shared_ptr<Backend> make_cuda_backend(int device_id) {
    const CudaDriver &drv = CudaDriver::get();
    int count = 0;
    drv.check(drv.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (device_id < 0 || device_id >= count) {
        std::string msg = "no CUDA device with id " + std::to_string(device_id) +
                          ": this machine has " + std::to_string(count);
        if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES"))
            msg += std::string(" (CUDA_VISIBLE_DEVICES is '") + visible + "')";
        throw LogicError(msg);
    }
    return std::make_shared<CudaBackend>(drv, device_id);
}

std::shared_ptr<Backend> start_cuda_backend(int device_id, const std::function<void()> &meanwhile) {
    static std::atomic<bool> first_context{true};
    const bool first = first_context.exchange(false);
    // What both threads share; the helper keeps it alive for as long as it runs.
    struct Start {
        std::mutex mutex;
        std::condition_variable cv;
        bool planned = false, made = false;
        std::optional<PreloadPlan> plan; // planned: the first context's list (maybe empty)
        std::shared_ptr<CudaBackend> backend;
        std::exception_ptr error;
    };
    auto start = std::make_shared<Start>();
    std::thread helper;
    if (std::thread::hardware_concurrency() >= 2) {
        try {
            helper = std::thread([start, device_id] {
                std::shared_ptr<CudaBackend> made;
                std::exception_ptr error;
                try {
                    made = std::static_pointer_cast<CudaBackend>(make_cuda_backend(device_id));
                } catch (...) {
                    error = std::current_exception();
                }
                CudaBackend *backend = made.get(); // outlives this thread: its destructor joins it
                bool preload = false;
                {
                    std::unique_lock<std::mutex> lock(start->mutex);
                    start->cv.wait(lock, [&] { return start->planned; });
                    if (backend && start->plan) {
                        backend->image_cache().set_preload(*start->plan);
                        preload = !start->plan->items.empty();
                        start->plan.reset(); // the back end keeps what it needs
                    }
                    start->backend = std::move(made);
                    start->error = error;
                    start->made = true;
                }
                start->cv.notify_all();
                // Still warm from making the context: load the program's kernels now.
                if (preload) backend->image_cache().run_preload();
            });
        } catch (const std::system_error &) { // no thread: no warm-up, no preload
        }
    }
    if (!helper.joinable()) return make_cuda_backend(device_id);
    std::optional<PreloadPlan> plan;
    try {
        meanwhile();
        if (first && preload_enabled()) {
            plan.emplace();
            if (DiskCache *disk = CompileCache::instance().disk()) *plan = read_preload_plan(*disk, kCubinKind);
        }
    } catch (...) { // a warm-up or a list that cannot be read: no preload
        plan.reset();
    }
    std::shared_ptr<CudaBackend> backend;
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(start->mutex);
        start->plan = std::move(plan);
        start->planned = true;
        start->cv.notify_all();
        start->cv.wait(lock, [&] { return start->made; });
        backend = std::move(start->backend);
        error = start->error;
    }
    if (error) {
        helper.join();
        if (first) first_context.store(true); // the next context is the program's first
        std::rethrow_exception(error);
    }
    backend->adopt_helper(std::move(helper));
    backend->make_current_here();
    return backend;
}

std::shared_ptr<Backend> make_hip_backend(int device_id) {
    check_hip_device(device_id); // RuntimeError with HIP's own error where there is no AMD GPU
    return std::make_shared<CudaBackend>(CudaDriver::hip(), device_id);
}

int cuda_device_count(std::string *why) noexcept {
    const CudaDriver *drv = CudaDriver::try_get(why);
    if (!drv) return 0;
    int count = 0;
    if (const cu::CUresult rc = drv->cuDeviceGetCount(&count); rc != cu::CUDA_SUCCESS) {
        if (why) {
            try {
                *why = "cuDeviceGetCount failed: " + drv->error_name(rc);
            } catch (...) {
            }
        }
        return 0;
    }
    if (count == 0 && why) {
        try {
            *why = "the CUDA driver reports no device";
        } catch (...) {
        }
    }
    return count;
}

} // namespace ember::detail
