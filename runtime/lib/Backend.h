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
#include "ember/compiler/KernelBuild.h"
#include "ember/compiler/Target.h"
#include "ember/runtime/DeviceAttribute.h"
#include "ember/runtime/TensorMap.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember::detail {

/// The key of an artefact or of a device image (the compiler's ArtefactKey).
using CacheKey = ArtefactKey;

class ImageCache;

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
    /// The JIT's verbose info log from loading (CUDA: ptxas's "Used N registers", spill bytes;
    /// read by CompileReport), empty where there is none.
    std::string jit_info_log;
    /// Wall time of the load in seconds (CUDA: the driver's PTX JIT, or the link and the load of
    /// an image), 0 where the back end does not measure it.
    double load_seconds = 0;
    /// The device address and size in bytes of the module's global `symbol`
    /// (a constant array: CUDA's cuModuleGetGlobal, the JIT symbol on the CPU device), or {0, 0}
    /// when the module defines none of that name.
    virtual std::pair<DeviceAddress, size_t> global(const std::string &symbol) {
        (void)symbol;
        return {0, 0};
    }
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

/// A 2-D tensor map to encode ([Note] Tensor maps in ember/runtime/TensorMap.h), in the terms of
/// cuTensorMapEncodeTiled. runtime/lib/TensorMap.cpp has checked it against the driver's rules:
/// extents 1 to 2^32, a box of 1 to 256 each way whose rows are a multiple of 16 bytes (and at
/// most `swizzle_bytes` when swizzled), a row stride that is a multiple of 16 bytes below 2^40,
/// and `base` 16-byte aligned.
struct TensorMapDesc {
    /// The device address of element (0, 0).
    DeviceAddress base = 0;
    uint64_t rows = 0, cols = 0;
    uint64_t row_stride_bytes = 0;
    uint32_t box_rows = 0, box_cols = 0;
    uint32_t element_bytes = 0;
    TensorMapElement element = TensorMapElement::u8;
    /// 0 (no swizzle), 32, 64 or 128.
    uint32_t swizzle_bytes = 0;
};

/// A tensor map's 128 bytes, 64-byte aligned (as cuTensorMapEncodeTiled writes them).
struct alignas(64) TensorMapBytes {
    uint64_t words[16] = {};
};

/// A point in a stream's work: a CUevent, or a timestamp on the CPU device.
class BackendEvent {
public:
    virtual ~BackendEvent() = default;
    /// Whether the work before the last record has finished (true when never recorded).
    virtual bool query() = 0;
    /// Waits for the work before the last record; returns at once when never recorded.
    virtual void synchronize() = 0;
    /// Milliseconds from `start` to this event. DeviceEvent::time_since has checked that both are
    /// of this back end's context, made with timing and recorded; a back end throws LogicError
    /// only for what it alone knows (CUDA: an event not completed yet).
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

    // Device information and context limits.

    // Memory: memset, views, mapping, host and managed memory.
    /// Enqueues `count` elements of `width` (1, 2, 4 or 8) bytes at `dst`, each the low `width`
    /// bytes of `pattern` in memory order (little-endian). Any alignment of `dst`.
    virtual void memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) = 0;
    /// Enqueues a change of which streams may touch the managed allocation at `p`
    /// (cuStreamAttachMemAsync; `flags` are CUmemAttach_flags: 1 global, 2 host, 4 single).
    virtual void attach_managed(DeviceAddress p, unsigned flags) = 0;

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
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

    // Function attributes, launch attributes, clusters, occupancy.

    /// What a launch asks for beyond grid, block and shared memory (CUlaunchAttribute values),
    /// already checked by the API layer (runtime/lib/FunctionAttributes.cpp).
    struct LaunchExtras {
        /// Blocks per cluster; {0, 0, 0} for no cluster.
        std::array<int64_t, 3> cluster{0, 0, 0};
        /// A ClusterSchedulingPolicy value, or -1 for none.
        int cluster_scheduling_policy = -1;
        bool cooperative = false;
        bool programmatic_stream_serialization = false;
        bool has_priority = false;
        int priority = 0;
    };
    /// As launch, with `extras` (cuLaunchKernelEx on CUDA). The CPU device runs the blocks as
    /// launch does: clusters are groups of blocks, every block may run at once (cooperative), and
    /// priorities have nothing to reorder.
    virtual void launch_extended(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims,
                                 const LaunchExtras &extras, void **args, size_t num_args) = 0;

    // Constant memory and external modules.

    // Graphs.
    /// Starts capturing this stream's work into a new graph instead of running it ([Note]
    /// Graphs in BackendGraph.h). The caller checked that the stream does not capture already.
    virtual void begin_capture() = 0;
    /// Ends the capture and returns the complete graph (the one capture_graph() returned).
    virtual std::shared_ptr<class BackendGraph> end_capture() = 0;
    /// The graph this stream is capturing into, or nullptr: one atomic load, so the hot paths
    /// (launch, copies) may ask.
    BackendGraph *capture_graph() const noexcept { return capture_.load(std::memory_order_acquire); }
    /// launch() while capturing: adds a kernel node (the graph's next kernel node in enqueue
    /// order); `sizes[i]` is the size of *args[i] in bytes (the CPU device copies them).
    virtual void capture_launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims,
                                void **args, const uint32_t *sizes, size_t num_args) = 0;

protected:
    std::atomic<BackendGraph *> capture_{nullptr};
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

    // Device information and context limits.
    /// Reads `attribute` into `value` (cuDeviceGetAttribute). Returns false when the device does
    /// not know it (a driver older than the attribute); throws for any other failure.
    virtual bool query_attribute(DeviceAttribute attribute, int &value) = 0;
    /// cuDriverGetVersion (12040 for CUDA 12.4); 0 on the CPU device, which has no driver.
    virtual int driver_version() = 0;
    /// The API version of the native context (cuCtxGetApiVersion); 0 on the CPU device.
    virtual int api_version() = 0;
    /// {free, total} bytes of device memory (cuMemGetInfo); on the CPU device the host's
    /// MemAvailable and MemTotal.
    virtual std::pair<size_t, size_t> memory_info() = 0;
    /// Bytes of device memory (cuDeviceTotalMem); the host's MemTotal on the CPU device.
    virtual size_t total_memory() = 0;
    /// "dddd:bb:dd.f" (cuDeviceGetPCIBusId). Throws LogicError on the CPU device.
    virtual std::string pci_bus_id() = 0;
    /// A context limit (cuCtxGetLimit / cuCtxSetLimit); see Limit.
    virtual size_t get_limit(Limit limit) = 0;
    virtual void set_limit(Limit limit, size_t value) = 0;

    // Memory: memset, views, mapping, host and managed memory.
    /// Unified memory of `bytes` (> 0), valid on the host and the device (cuMemAllocManaged),
    /// freed by deallocate. Throws MemoryError naming the requested and free bytes.
    /// `flags`: 1 (CU_MEM_ATTACH_GLOBAL) or 2 (CU_MEM_ATTACH_HOST).
    virtual DeviceAddress allocate_managed(size_t bytes, unsigned flags) = 0;
    /// Page-locked host memory of `bytes` (> 0) mapped into the device's address space
    /// (cuMemHostAlloc DEVICEMAP | PORTABLE); its device address goes to `*device`. Freed by
    /// deallocate_host. Throws MemoryError.
    virtual void *allocate_host_mapped(size_t bytes, DeviceAddress *device) = 0;
    /// Page-locks existing host memory (cuMemHostRegister PORTABLE | DEVICEMAP); returns its
    /// device address. The caller checks for overlaps.
    virtual DeviceAddress register_host(void *p, size_t bytes) = 0;
    virtual void unregister_host(void *p) = 0;

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
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

    // Tensor maps.
    /// The 128 bytes of the tensor map `d` (CUDA: cuTensorMapEncodeTiled's CUtensorMap; the CPU
    /// device: an ember::CpuTensorMap). LogicError on a device without a tensor memory
    /// accelerator (below compute capability 9.0, AMD GPUs); the driver's own failures are
    /// thrown as for any driver call.
    virtual TensorMapBytes encode_tensor_map(const TensorMapDesc &d) = 0;

    // Function attributes, launch attributes, clusters, occupancy.

    /// What ember knows of a loaded kernel from its IR and from the attributes set on it (the
    /// CPU device answers from it; CUDA asks the driver).
    struct KernelFacts {
        uint64_t static_shared_bytes = 0;
        uint64_t local_bytes = 0;
        /// The opt-in of max_dynamic_shared_size_bytes, -1 when not set.
        int64_t max_dynamic_shared_bytes = -1;
        /// Values set so far, by FunctionAttribute value.
        std::map<int, int> attributes_set;
    };
    /// The value of FunctionAttribute `attr` (CUfunction_attribute) of `fn`.
    virtual int function_attribute(LoadedFunction &fn, int attr, const KernelFacts &facts) = 0;
    /// Sets a settable FunctionAttribute `attr` (checked by the caller against the limits below).
    virtual void set_function_attribute(LoadedFunction &fn, int attr, int value) = 0;
    /// A CacheConfig value (CUfunc_cache).
    virtual void set_cache_config(LoadedFunction &fn, int config) = 0;
    /// cuOccupancyMaxActiveBlocksPerMultiprocessor.
    virtual int max_active_blocks_per_multiprocessor(LoadedFunction &fn, int block_size, size_t dynamic_shared,
                                                     const KernelFacts &facts) = 0;
    /// cuOccupancyMaxPotentialBlockSize: {min_grid_size, block_size}; `block_size_limit` > 0.
    virtual std::pair<int, int> suggested_block_size(LoadedFunction &fn, size_t dynamic_shared,
                                                     int block_size_limit, const KernelFacts &facts) = 0;
    /// The most shared memory a block may have once a kernel opts in
    /// (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).
    virtual int64_t max_shared_memory_per_block_optin() = 0;
    virtual int multiprocessor_count() = 0;
    /// Whether launches with a cluster dimension work here (CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH).
    virtual bool supports_cluster_launch() = 0;
    /// Whether cooperative launches work here (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH).
    virtual bool supports_cooperative_launch() = 0;

    // Constant memory and external modules.

    /// A module loaded from an external image (PTX, cubin, fatbin).
    class LoadedModule {
    public:
        virtual ~LoadedModule() = default;
        /// The kernel `name`, or nullptr when the module has none (CUDA_ERROR_NOT_FOUND).
        virtual std::unique_ptr<LoadedFunction> function(const std::string &name) = 0;
        /// The address and size of global `name` (a .global or .const variable), or {0, 0}
        /// when the module has none.
        virtual std::pair<DeviceAddress, size_t> global(const std::string &name) = 0;
        /// The kernels' names where the driver can list them (CUDA 12.4+), else empty.
        virtual std::vector<std::string> function_names() = 0;
    };
    /// Loads an external image; `format` is a ModuleImage::Format value, `name` names it in
    /// messages. Throws CompileError with the JIT log when the driver rejects it; the CPU device
    /// throws LogicError.
    virtual std::shared_ptr<LoadedModule> load_module(int format, const std::string &bytes,
                                                      const std::string &name) = 0;

    // Graphs.

    /// Loads a compiled kernel. Throws CompileError carrying the driver's JIT log.
    virtual std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) = 0;
    /// The image cache of a back end that links artefacts into device images (NVIDIA: cubins;
    /// [Note] Image cache), asked before load(); null where there are none (the CPU device).
    virtual ImageCache *images() { return nullptr; }
};

/// The CUDA back end for device `device_id`. Throws RuntimeError when libcuda.so.1 cannot be
/// loaded or initialised, LogicError when there is no device with that id.
std::shared_ptr<Backend> make_cuda_backend(int device_id);
/// make_cuda_backend(device_id) run on a helper thread while the calling thread runs
/// `meanwhile` ([Note] Warm start) and, for the process's first CUDA context, reads the program's
/// preload list; the helper then loads the listed kernels into the new context in the background
/// ([Note] Preload in Preload.h). Throws what make_cuda_backend throws. Without a second
/// hardware thread: make_cuda_backend alone.
std::shared_ptr<Backend> start_cuda_backend(int device_id, const std::function<void()> &meanwhile);
/// Number of CUDA devices; 0 when there is no driver, no device, or cuInit fails, with `why`
/// (when given) saying which.
int cuda_device_count(std::string *why = nullptr) noexcept;
/// The HIP back end for device `device_id`: the CUDA back end over HIP's entry points ([Note] HIP
/// back end in cuda/HipDriver.cpp). Throws RuntimeError with HIP's own error where HIP cannot be
/// used (no library, no AMD GPU), LogicError when there is no device with that id.
std::shared_ptr<Backend> make_hip_backend(int device_id);

/// The CPU device (device_id must be 0).
std::shared_ptr<Backend> make_cpu_backend(int device_id);

} // namespace ember::detail

#endif // EMBER_RUNTIME_BACKEND_H
