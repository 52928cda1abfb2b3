/// \file
/// The internal interface every device back end implements (CUDA, CPU; HIP next). Public headers
/// never include this file.
///
/// [Note] Back-end contract
/// ========================
/// * One `Backend` object per `DeviceContext` (copies of a DeviceContext share it). It owns the
///   native context/stream and must outlive every buffer and function made from it: buffers hold
///   a `std::shared_ptr<Backend>`.
/// * Calls may come from any host thread; a back end makes its native context current itself.
/// * `enqueue_*` calls are ordered on the context's one stream. They may run before they return
///   (the CPU device does); `synchronize()` waits for all of them.
/// * Failures throw the public exceptions of ember/Error.h (MemoryError, LogicError, LaunchError,
///   RuntimeError, CompileError), with messages that name the call, the native status name
///   (`CUDA_ERROR_OUT_OF_MEMORY`) and the sizes involved. Functions marked noexcept never throw:
///   they log a failure to stderr instead.
#ifndef EMBER_RUNTIME_BACKEND_H
#define EMBER_RUNTIME_BACKEND_H

#include "ember/compiler/Compiler.h"
#include "ember/compiler/Target.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ember::detail {

/// A device address: a CUdeviceptr on CUDA, a host address on the CPU device.
using DeviceAddress = uint64_t;

/// The limits a launch is checked against before it reaches the driver.
struct DeviceLimits {
    int64_t max_threads_per_block = 1024;
    std::array<int64_t, 3> max_block_dim{1024, 1024, 64};
    std::array<int64_t, 3> max_grid_dim{2147483647, 65535, 65535};
    int64_t max_shared_memory_per_block = 48 * 1024;
    int warp_size = 32;
};

/// A function loaded into a context (a CUfunction and its CUmodule, or JIT'd CPU code).
class LoadedFunction {
public:
    virtual ~LoadedFunction() = default;
};

struct LaunchDims {
    std::array<int64_t, 3> grid{1, 1, 1};
    std::array<int64_t, 3> block{1, 1, 1};
    uint32_t shared_mem_bytes = 0;
};

class Backend {
public:
    virtual ~Backend() = default;

    /// "cuda", "cpu", ...
    virtual std::string api() const = 0;
    /// The device's name as the native API reports it (e.g. "NVIDIA H100 80GB HBM3").
    virtual std::string name() const = 0;
    virtual int device_id() const = 0;
    /// What kernels are compiled for on this device (e.g. nvptx:sm_90, cpu).
    virtual TargetSpec target() const = 0;
    virtual const DeviceLimits &limits() const = 0;

    /// Device memory of `bytes` (> 0), ordered on the stream where the API allows.
    /// Throws MemoryError naming the requested and free bytes.
    virtual DeviceAddress allocate(size_t bytes) = 0;
    virtual void deallocate(DeviceAddress p) noexcept = 0;
    /// Host memory for HostBuffer: page-locked on GPUs (cuMemAllocHost). Throws MemoryError.
    virtual void *allocate_host(size_t bytes) = 0;
    virtual void deallocate_host(void *p) noexcept = 0;

    virtual void enqueue_copy_to_device(DeviceAddress dst, const void *src, size_t bytes) = 0;
    virtual void enqueue_copy_from_device(void *dst, DeviceAddress src, size_t bytes) = 0;
    virtual void enqueue_copy_device_to_device(DeviceAddress dst, DeviceAddress src,
                                               size_t bytes) = 0;
    /// Waits for everything enqueued so far; surfaces asynchronous failures (a faulting kernel)
    /// as LaunchError.
    virtual void synchronize() = 0;

    /// Loads a compiled kernel. Throws CompileError carrying the driver's JIT log.
    virtual std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) = 0;
    /// Enqueues `fn` on the stream. `args[i]` points to parameter i's device representation,
    /// as cuLaunchKernel's kernelParams. Dimensions were checked against limits() already.
    virtual void enqueue_launch(LoadedFunction &fn, const std::string &kernel_name,
                                const LaunchDims &dims, void **args, size_t num_args) = 0;
};

/// The CUDA back end for device `device_id`. Throws RuntimeError when libcuda.so.1 cannot be
/// loaded or initialised, LogicError when there is no device with that id.
std::shared_ptr<Backend> make_cuda_backend(int device_id);
/// Number of CUDA devices; 0 when there is no driver, no device, or cuInit fails.
int cuda_device_count() noexcept;

/// The CPU device (device_id must be 0).
std::shared_ptr<Backend> make_cpu_backend(int device_id);

} // namespace ember::detail

#endif // EMBER_RUNTIME_BACKEND_H
