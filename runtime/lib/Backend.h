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
/// * Work is enqueued on a `BackendStream`: the back end's default stream (what DeviceContext's
///   own enqueue_* calls use) or one made by create_stream(). Operations on one stream run in
///   order; they may run before their call returns (the CPU device does). See [Note] Streams.
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
#include <utility>

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

/// How an event is made (CUevent_flags).
struct EventOptions {
    /// Records timestamps (elapsed_ms_since); off is CU_EVENT_DISABLE_TIMING.
    bool timing = true;
    /// synchronize() sleeps instead of spinning (CU_EVENT_BLOCKING_SYNC).
    bool blocking_sync = false;
    /// Shareable with another process (CU_EVENT_INTERPROCESS; needs timing off).
    bool interprocess = false;
};

/// A point in a stream's work: a CUevent, or a timestamp on the CPU device.
class BackendEvent {
public:
    virtual ~BackendEvent() = default;
    /// Whether the work before the last record has finished (true when never recorded).
    virtual bool query() = 0;
    /// Waits for the work before the last record; returns at once when never recorded.
    virtual void synchronize() = 0;
    /// Milliseconds from `start` to this event, both recorded, completed and made with timing.
    /// Throws LogicError otherwise, naming what is missing.
    virtual float elapsed_ms_since(BackendEvent &start) = 0;
};

/// [Note] Streams
/// ==============
/// A queue of operations run in order: copies, launches, event records and waits. Streams of
/// one context run concurrently with each other. On CUDA each is a CUstream (non-blocking with
/// respect to the legacy NULL stream); on the CPU device every operation completes before its
/// call returns, so a stream is only an ordering domain and waits have nothing to wait for,
/// except on events of another device, which they wait for on the host.
///
/// Memory and streams: buffers are allocated stream-ordered on the default stream while the
/// context has no other stream. Every new stream first waits for the default stream's work
/// (the allocations before it included); once other streams exist, allocations are immediate
/// (cuMemAlloc) and a stream-ordered free first makes the default stream wait for every live
/// stream. So a buffer may be used on any stream of its context without extra events: only the
/// user's own data dependencies between streams need them.
class BackendStream {
public:
    virtual ~BackendStream() = default;

    virtual void copy_to_device(DeviceAddress dst, const void *src, size_t bytes) = 0;
    virtual void copy_from_device(void *dst, DeviceAddress src, size_t bytes) = 0;
    virtual void copy_device_to_device(DeviceAddress dst, DeviceAddress src, size_t bytes) = 0;
    /// Enqueues `fn`. `args[i]` points to parameter i's device representation, as
    /// cuLaunchKernel's kernelParams. Dimensions were checked against limits() already.
    virtual void launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims,
                        void **args, size_t num_args) = 0;
    /// Records `e` at the current end of this stream.
    virtual void record(BackendEvent &e) = 0;
    /// Makes later work on this stream wait for the work before `e`'s last record (`e` may
    /// belong to another context or back end).
    virtual void wait(BackendEvent &e) = 0;
    /// Waits for everything enqueued so far; surfaces asynchronous failures (a faulting kernel)
    /// as LaunchError.
    virtual void synchronize() = 0;
    /// Whether everything enqueued so far has finished.
    virtual bool is_done() = 0;
    /// The priority it was made with (lower numbers run first on CUDA).
    virtual int priority() const = 0;

    // [issue-4 anchor: devinfo] Device information and context limits.

    // [issue-4 anchor: memory] Memory: memset, views, mapping, host and managed memory.

    // [issue-4 anchor: memory2d] Memory: pitched 2-D/3-D copies, peer access, IPC.
    /// One side of copy_3d: host memory, or device memory of this stream's context.
    struct Region3D {
        bool device = false;
        DeviceAddress address = 0;
        size_t x_bytes = 0, y = 0, z = 0;
        /// Bytes per row and rows per slice (both > 0).
        size_t pitch = 0, rows = 0;
    };
    /// Copies `depth` slices of `height` rows of `width_bytes` bytes (cuMemcpy2DAsync when
    /// depth is 1, else cuMemcpy3DAsync). The regions were checked against their memory.
    virtual void copy_3d(const Region3D &dst, const Region3D &src, size_t width_bytes, size_t height,
                         size_t depth) = 0;
    /// Copies `bytes` where a side may be memory of another context: `*_owner` is the back end
    /// whose device memory the side is, or nullptr for host memory (which includes the CPU
    /// device's buffers when this is a GPU). CUDA: cuMemcpyPeerAsync between two contexts, else
    /// cuMemcpyAsync (unified addressing). See [Note] Copies between contexts in Memory2D.cpp.
    virtual void copy_between(DeviceAddress dst, class Backend *dst_owner, DeviceAddress src,
                              class Backend *src_owner, size_t bytes) = 0;

    // [issue-4 anchor: functions] Function attributes, launch attributes, clusters, occupancy.

    // [issue-4 anchor: modules] Constant memory and external modules.

    // [issue-4 anchor: graphs] Graphs.
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

    /// The stream DeviceContext's own operations go to; lives as long as the back end.
    virtual const std::shared_ptr<BackendStream> &default_stream() = 0;
    /// A new stream of `priority`, which must lie in stream_priority_range() (LogicError
    /// otherwise). It first waits for the default stream's work (see [Note] Streams).
    virtual std::shared_ptr<BackendStream> create_stream(int priority) = 0;
    /// {least, greatest} priority, as cuCtxGetStreamPriorityRange: {0, -5} on recent NVIDIA GPUs
    /// (lower numbers are more urgent); {0, 0} on the CPU device.
    virtual std::pair<int, int> stream_priority_range() = 0;
    virtual std::shared_ptr<BackendEvent> create_event(const EventOptions &options) = 0;

    // [issue-4 anchor: devinfo] Device information and context limits.

    // [issue-4 anchor: memory] Memory: memset, views, mapping, host and managed memory.

    // [issue-4 anchor: memory2d] Memory: pitched 2-D/3-D copies, peer access, IPC.
    /// `height` rows of `width_bytes` (both > 0), each row at a multiple of `*pitch` bytes
    /// (cuMemAllocPitch; `element_bytes` is the widest access kernels make, 4, 8 or 16). Released by
    /// deallocate. MemoryError naming the bytes when out of memory.
    virtual DeviceAddress allocate_pitched(size_t width_bytes, size_t height, unsigned element_bytes,
                                           size_t *pitch) = 0;
    /// `bytes` (> 0) of device memory that ipc_handle can share with another process (CUDA:
    /// cuMemAlloc, never the stream-ordered pool; CPU: a memfd mapping). Released by deallocate.
    virtual DeviceAddress allocate_shareable(size_t bytes) = 0;
    /// The 64 bytes another process passes to open_ipc. LogicError when `p` is not the start of
    /// an allocate_shareable allocation.
    virtual std::array<uint8_t, 64> ipc_handle(DeviceAddress p) = 0;
    /// Maps the memory of another process's ipc_handle; LogicError when it holds fewer than
    /// `bytes`, or cannot be opened (named). deallocate unmaps it.
    virtual DeviceAddress open_ipc(const std::array<uint8_t, 64> &handle, size_t bytes) = 0;
    /// Whether kernels of this device can access the memory of `peer` (cuDeviceCanAccessPeer;
    /// true for the same device).
    virtual bool can_access_peer(Backend &peer) = 0;
    /// Lets kernels of this device access `peer`'s memory (cuCtxEnablePeerAccess, and access to
    /// peer's memory pool); idempotent. LogicError when can_access_peer is false.
    virtual void enable_peer_access(Backend &peer) = 0;
    /// Undoes enable_peer_access (cuCtxDisablePeerAccess); not an error when it is not enabled.
    virtual void disable_peer_access(Backend &peer) = 0;

    // [issue-4 anchor: functions] Function attributes, launch attributes, clusters, occupancy.

    // [issue-4 anchor: modules] Constant memory and external modules.

    // [issue-4 anchor: graphs] Graphs.

    /// Loads a compiled kernel. Throws CompileError carrying the driver's JIT log.
    virtual std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) = 0;
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
