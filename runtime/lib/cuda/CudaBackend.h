/// \file
/// The CUDA back end's classes, shared by its files (internal; nothing outside runtime/lib/cuda
/// includes this): one device's primary context and ScopedCurrent, events, the state the streams
/// share, streams and CudaBackend itself. Their bodies live by concept in CudaContext.cpp
/// (construction, device information, the helper thread), CudaStreams.cpp, CudaMemory.cpp,
/// CudaGraphs.cpp, CudaModules.cpp (attributes, occupancy, external modules), CudaTensorMap.cpp
/// and CudaLoader.cpp (PTX loaded by the driver's JIT; the image cache's hooks: cubins linked and
/// loaded).
///
/// [Note] CUDA contexts and threads
/// ================================
/// A back end retains the device's *primary* context (the one the CUDA runtime, and so PyTorch,
/// uses), so buffers and streams are shared with them. Any host thread may call it: every method
/// makes the context current for the duration of its driver calls through `ScopedCurrent`, which
/// costs one cuCtxGetCurrent when the context is current already. When the thread had *another*
/// context current, it is restored afterwards, so ember never changes the device the user's own
/// CUDA code runs on; when the thread had none, ours is left current (as the CUDA runtime does).
#ifndef EMBER_RUNTIME_CUDA_CUDABACKEND_H
#define EMBER_RUNTIME_CUDA_CUDABACKEND_H

#include "cuda/CudaDriver.h"

#include "ImageCache.h"
#include "Preload.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ember::detail {

/// A retained primary context, released when the last owner (the back end, a loaded function)
/// goes away.
class CudaPrimaryContext {
public:
    /// Throws as CudaDriver::check does.
    CudaPrimaryContext(const CudaDriver &drv, cu::CUdevice dev, std::string where)
        : drv_(drv), dev_(dev), where_(std::move(where)) {
        drv_.check(drv_.cuDevicePrimaryCtxRetain(&handle_, dev_), "cuDevicePrimaryCtxRetain",
                   " for " + where_);
    }
    ~CudaPrimaryContext() {
        if (CudaDriver::is_forked_child()) return; // [Note] CUDA and fork
        drv_.log_if_error(drv_.cuDevicePrimaryCtxRelease(dev_), "cuDevicePrimaryCtxRelease",
                          " for " + where_);
    }
    CudaPrimaryContext(const CudaPrimaryContext &) = delete;
    CudaPrimaryContext &operator=(const CudaPrimaryContext &) = delete;

    const CudaDriver &driver() const noexcept { return drv_; }
    cu::CUcontext handle() const noexcept { return handle_; }
    /// "device 0 (NVIDIA H100 80GB HBM3)", for messages.
    const std::string &where() const noexcept { return where_; }

private:
    const CudaDriver &drv_;
    cu::CUdevice dev_;
    cu::CUcontext handle_ = nullptr;
    std::string where_;
};

/// Makes a primary context current on this thread for one scope. See [Note] CUDA contexts and
/// threads.
class ScopedCurrent {
public:
    /// Throws when the context cannot be made current.
    explicit ScopedCurrent(const CudaPrimaryContext &ctx) : ctx_(ctx) {
        // [Note] CUDA and fork: refused before the driver is called.
        if (CudaDriver::is_forked_child()) [[unlikely]]
            CudaDriver::throw_forked_child("using " + ctx_.where());
        // Every launch passes here: the message is built only on failure.
        if (cu::CUresult rc = enter(); rc != cu::CUDA_SUCCESS) [[unlikely]]
            ctx_.driver().check(rc, "cuCtxSetCurrent", " making " + ctx_.where() + " current on this thread");
    }
    /// For noexcept paths: logs a failure; see ok().
    ScopedCurrent(const CudaPrimaryContext &ctx, std::nothrow_t) noexcept : ctx_(ctx) {
        // [Note] CUDA and fork: nothing to release in a child (the driver is not called there).
        ok_ = !CudaDriver::is_forked_child() && ctx_.driver().log_if_error(enter(), "cuCtxSetCurrent");
    }
    ~ScopedCurrent() {
        if (restore_)
            ctx_.driver().log_if_error(ctx_.driver().cuCtxSetCurrent(previous_), "cuCtxSetCurrent",
                                       " (restoring the thread's previous context)");
    }
    ScopedCurrent(const ScopedCurrent &) = delete;
    ScopedCurrent &operator=(const ScopedCurrent &) = delete;

    bool ok() const noexcept { return ok_; }

private:
    cu::CUresult enter() noexcept {
        const CudaDriver &drv = ctx_.driver();
        cu::CUcontext current = nullptr;
        if (cu::CUresult rc = drv.cuCtxGetCurrent(&current); rc != cu::CUDA_SUCCESS) return rc;
        if (current == ctx_.handle()) return cu::CUDA_SUCCESS;
        if (cu::CUresult rc = drv.cuCtxSetCurrent(ctx_.handle()); rc != cu::CUDA_SUCCESS)
            return rc;
        previous_ = current;
        restore_ = current != nullptr;
        return cu::CUDA_SUCCESS;
    }

    const CudaPrimaryContext &ctx_;
    cu::CUcontext previous_ = nullptr;
    bool restore_ = false;
    bool ok_ = true;
};

// Text for messages, shared by the back end's files (defined in CudaContext.cpp and, for the JIT
// log, CudaLoader.cpp).

/// "1048576 bytes (1 MiB)".
std::string cuda_format_bytes(uint64_t bytes);

std::string cuda_hex(uint64_t v);

std::string cuda_dims(const std::array<int64_t, 3> &d);

/// The text a NUL-terminated JIT log buffer holds, without trailing blank lines.
std::string cuda_log_text(const std::string &buffer);

inline constexpr size_t cuda_jit_log_bytes = 16 * 1024;

/// Sets the grid, block and dynamic shared memory of a launch's parameters from `d`: a
/// CUlaunchConfig or a CUDA_KERNEL_NODE_PARAMS, whose fields of those names agree.
template <class Params> void set_launch_dims(Params &p, const LaunchDims &d) {
    p.gridDimX = unsigned(d.grid[0]);
    p.gridDimY = unsigned(d.grid[1]);
    p.gridDimZ = unsigned(d.grid[2]);
    p.blockDimX = unsigned(d.block[0]);
    p.blockDimY = unsigned(d.block[1]);
    p.blockDimZ = unsigned(d.block[2]);
    p.sharedMemBytes = d.shared_mem_bytes;
}

/// The address and size of the global `name` of `module` on `ctx`; {0, 0} when it has none.
std::pair<DeviceAddress, size_t> cuda_module_global(const CudaPrimaryContext &ctx, cu::CUmodule module,
                                                    const std::string &name);

class CudaStream;

/// The CUcontext of a back end over the table `drv`; nullptr for another api's (memory2d).
cu::CUcontext cuda_context_of(const CudaDriver &drv, Backend &b) noexcept;

/// A CUevent of one context.
class CudaEvent final : public BackendEvent {
public:
    CudaEvent(std::shared_ptr<const CudaPrimaryContext> ctx, const EventOptions &o);
    ~CudaEvent() override;
    CudaEvent(const CudaEvent &) = delete;
    CudaEvent &operator=(const CudaEvent &) = delete;

    cu::CUevent handle() const noexcept { return event_; }
    const CudaPrimaryContext &context() const noexcept { return *ctx_; }

    bool query() override;
    void synchronize() override;
    float elapsed_ms_since(BackendEvent &start_event) override;

private:
    std::shared_ptr<const CudaPrimaryContext> ctx_;
    cu::CUevent event_ = nullptr;
};

/// What the streams and the back end of one device share: the context, the kernels launched
/// since the last synchronisation (named when a fault surfaces) and the live user streams
/// ([Note] Streams in Backend.h).
struct CudaDeviceState {
    CudaDeviceState(const CudaDriver &d, std::shared_ptr<const CudaPrimaryContext> c)
        : drv(d), ctx(std::move(c)) {}

    const CudaDriver &drv;
    std::shared_ptr<const CudaPrimaryContext> ctx;

    /// Keeps the names of the kernels launched since the last synchronize (a few), so that a
    /// fault reported later names its suspects.
    void remember_launch(const std::string &kernel) {
        std::lock_guard<std::mutex> lock(launched_mutex);
        for (const std::string &k : launched)
            if (k == kernel) return;
        if (launched.size() < 8) launched.push_back(kernel);
    }
    void forget_launches() {
        std::lock_guard<std::mutex> lock(launched_mutex);
        launched.clear();
    }

    /// For a kernel fault surfacing at a later call: the kernels launched since the last
    /// synchronize, and what a misaligned address means in ember ([Note] IR semantics: Vector
    /// memory). Empty for other failures.
    std::string fault_context(cu::CUresult rc) const;

    std::string copy_context(size_t bytes, const char *direction, DeviceAddress device) const;

    mutable std::mutex launched_mutex;
    std::vector<std::string> launched;

    /// The user streams alive now, and whether there ever were any.
    std::mutex streams_mutex;
    std::vector<CudaStream *> user_streams;
    std::atomic<bool> had_user_streams{false};

    /// The default stream's handle (set once it exists), for the print drain's check.
    cu::CUstream default_stream = nullptr;

    /// ember's print buffer of this device's modules ([Note] Print buffer in
    /// ember/compiler/PrintBuffer.h; CudaPrint.cpp): made when the first module that prints is
    /// loaded, 0 before; its capacity for records in bytes.
    std::mutex print_mutex;
    DeviceAddress print_buffer = 0;
    uint64_t print_capacity = 0;
    /// The buffer's address for a module's `ember_print_buffer` global, made on first use.
    DeviceAddress print_buffer_for_modules();
    /// Prints the records of the print buffer and empties it, if every stream of the device is
    /// idle (a kernel still running may be writing); `s` is an idle stream to copy on.
    void drain_prints(cu::CUstream s);
    /// Frees the buffer (the back end's destructor, the context still current).
    void free_print_buffer() noexcept;

    /// Streams capturing a graph now, and the frees deferred until none does ([Note] Graphs in
    /// BackendGraph.h).
    std::atomic<int> capturing{0};
    std::mutex deferred_mutex;
    std::vector<DeviceAddress> deferred_frees;
};

/// A CUstream of one context: the back end's default stream or one the user made.
class CudaStream final : public BackendStream {
public:
    /// Creates the stream (non-blocking with respect to the legacy NULL stream).
    CudaStream(std::shared_ptr<CudaDeviceState> dev, int priority, bool user);
    /// Waits for the stream's work (so that a stream-ordered free after this cannot overtake
    /// it), then destroys it.
    ~CudaStream() override;
    CudaStream(const CudaStream &) = delete;
    CudaStream &operator=(const CudaStream &) = delete;

    cu::CUstream handle() const noexcept { return stream_; }
    int priority() const override { return priority_; }

    void copy_to_device(DeviceAddress dst, const void *src, size_t bytes) override;
    void copy_from_device(void *dst, DeviceAddress src, size_t bytes) override;
    void copy_device_to_device(DeviceAddress dst, DeviceAddress src, size_t bytes) override;
    void launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &d, void **args,
                size_t /*num_args*/) override;
    void record(BackendEvent &e) override;
    void wait(BackendEvent &e) override;
    void synchronize() override;

    // Memory: memset, views, mapping, host and managed memory.
    void attach_managed(DeviceAddress p, unsigned flags) override;

    /// The driver calls of plan_memset ([Note] Memset widths in cuda/CudaMemset.h).
    void memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) override;

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
    void copy_3d(const Region3D &dst, const Region3D &src, size_t width_bytes, size_t height,
                 size_t depth) override;

    void copy_between(DeviceAddress dst, Backend *dst_owner, DeviceAddress src, Backend *src_owner,
                      size_t bytes) override;

    // Launch attributes, clusters.
    void launch_extended(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &d,
                         const LaunchExtras &x, void **args, size_t /*num_args*/) override;

    // Graphs.
    class Graph;
    class GraphExec;
    void begin_capture() override;
    std::shared_ptr<BackendGraph> end_capture() override;
    void capture_launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args,
                        const uint32_t *, size_t num_args) override;
    bool is_done() override;

private:
    std::shared_ptr<CudaDeviceState> dev_;
    cu::CUstream stream_ = nullptr;
    /// The graph being captured (capture_ points to it).
    std::shared_ptr<Graph> graph_;
    int priority_;
    bool user_;
};

/// The disk cache kind of CUDA device images (the preload list names them too).
inline constexpr std::string_view kCubinKind = "cubin";

class CudaBackend final : public Backend, private ImageHooks {
public:
    CudaBackend(const CudaDriver &drv, int device_id);
    ~CudaBackend() override;

    /// "cuda", or "hip" for the same back end over HIP's table ([Note] HIP back end).
    std::string api() const override { return std::string(drv_.api()); }
    std::string name() const override { return name_; }
    int device_id() const override { return device_id_; }
    const CudaDriver &driver() const noexcept { return drv_; }
    TargetSpec target() const override { return target_; }
    const DeviceLimits &limits() const override { return limits_; }

    DeviceAddress allocate(size_t bytes) override;
    void deallocate(DeviceAddress p) noexcept override;

    /// Frees what deallocate deferred during a capture, once no stream captures.
    void free_deferred() noexcept;

    void free_now(DeviceAddress p) noexcept;
    void *allocate_host(size_t bytes) override;
    void deallocate_host(void *p) noexcept override;

    const std::shared_ptr<BackendStream> &default_stream() override { return default_stream_; }

    std::shared_ptr<BackendStream> create_stream(int priority) override;

    std::pair<int, int> stream_priority_range() override { return {least_priority_, greatest_priority_}; }

    std::shared_ptr<BackendEvent> create_event(const EventOptions &options) override {
        return std::make_shared<CudaEvent>(ctx_, options);
    }

    // Device information and context limits.
    bool query_attribute(DeviceAttribute attribute, int &value) override;

    int driver_version() override { return drv_.version(); }

    int api_version() override;
    std::pair<size_t, size_t> memory_info() override;
    size_t total_memory() override;
    std::string pci_bus_id() override;
    size_t get_limit(Limit limit) override;
    void set_limit(Limit limit, size_t value) override;

    // Memory: memset, views, mapping, host and managed memory.
    DeviceAddress allocate_managed(size_t bytes, unsigned flags) override;

    void *allocate_host_mapped(size_t bytes, DeviceAddress *device) override;
    DeviceAddress register_host(void *p, size_t bytes) override;
    void unregister_host(void *p) override;

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
    cu::CUcontext context_handle() const noexcept { return ctx_->handle(); }
    cu::CUdevice device_handle() const noexcept { return dev_; }

    DeviceAddress allocate_pitched(size_t width_bytes, size_t height, unsigned element_bytes,
                                   size_t *pitch) override;
    DeviceAddress allocate_shareable(size_t bytes) override;
    std::array<uint8_t, 64> ipc_handle(DeviceAddress p) override;
    DeviceAddress open_ipc(const std::array<uint8_t, 64> &handle, size_t bytes) override;
    bool can_access_peer(Backend &peer) override;
    void enable_peer_access(Backend &peer) override;

    /// `b` as a back end over this one's table (the same api), else nullptr: a CUDA and a HIP
    /// device share no memory.
    CudaBackend *same_api(Backend &b) noexcept {
        auto *c = dynamic_cast<CudaBackend *>(&b);
        return c && &c->drv_ == &drv_ ? c : nullptr;
    }

    /// Gives this device (`flags`: read-write) or takes from it (0) access to `other`'s default
    /// memory pool, where its stream-ordered allocations live.
    void set_pool_access(CudaBackend &other, int flags, const char *verb);

    void disable_peer_access(Backend &peer) override;

    // Tensor maps (CudaTensorMap.cpp).
    TensorMapBytes encode_tensor_map(const TensorMapDesc &d) override;

    // Function attributes, launch attributes, clusters, occupancy.

    int function_attribute(LoadedFunction &fn, int attr, const KernelFacts &) override;
    void set_function_attribute(LoadedFunction &fn, int attr, int value) override;
    void set_cache_config(LoadedFunction &fn, int config) override;
    int max_active_blocks_per_multiprocessor(LoadedFunction &fn, int block_size, size_t dynamic_shared,
                                             const KernelFacts &) override;
    std::pair<int, int> suggested_block_size(LoadedFunction &fn, size_t dynamic_shared, int block_size_limit,
                                             const KernelFacts &) override;
    int device_attribute_value(int attr, const char *what);
    int64_t max_shared_memory_per_block_optin() override;
    int multiprocessor_count() override;
    bool supports_cluster_launch() override;
    bool supports_cooperative_launch() override;

    // Constant memory and external modules.

    class CudaModule;
    std::shared_ptr<LoadedModule> load_module(int format, const std::string &bytes, const std::string &name) override;

    // Loading (CudaLoader.cpp): PTX, and the image cache's hooks: cubins linked and loaded.
    std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) override;
    /// EMBER_DUMP=sass: links `k` into a cubin and dumps its disassembly (CudaSass.cpp).
    void dump_sass(const CompiledKernel &k);

    /// The image cache when the driver has a linker ([Note] Image cache).
    ImageCache *images() override { return linker_available() ? &images_ : nullptr; }
    /// The image cache whether or not there is a linker: the preload loads cubins without one.
    ImageCache &image_cache() { return images_; }

    std::string_view image_kind() const override { return kCubinKind; }
    std::string image_arch() const override;
    std::string image_driver() const override;
    /// Links the PTX of `k` into a cubin for this device (cuLink*), a relocatable compile;
    /// nullopt on any failure. `info_log` receives ptxas's verbose log (as the PTX load's).
    std::optional<std::string> link_image(const CompiledKernel &k, std::string &info_log) override;
    std::unique_ptr<LoadedFunction> load_image_bytes(const std::string &bytes, const std::string &symbol,
                                                     const CompiledKernel *k) override;

    /// Makes this back end's context current on the calling thread if it has none (as every
    /// method does through ScopedCurrent), for a back end made on another thread.
    void make_current_here() { ScopedCurrent current(*ctx_); }

    /// Takes ownership of the thread that made this back end and may still preload into it
    /// ([Note] Preload); the destructor stops and joins it.
    void adopt_helper(std::thread helper) { helper_ = std::move(helper); }

private:
    bool linker_available() const {
        return drv_.cuLinkCreate && drv_.cuLinkAddData && drv_.cuLinkComplete && drv_.cuLinkDestroy;
    }

    cu::CUstream default_handle() const { return static_cast<CudaStream &>(*default_stream_).handle(); }

    /// Makes the default stream wait for the current end of every live user stream, so that a
    /// stream-ordered free cannot overtake a use of the memory there.
    void order_after_user_streams() noexcept;

    std::string out_of_memory_context(size_t bytes) const;
    /// Points `module`'s print buffer global, if it has one, at the device's buffer ([Note]
    /// Print buffer; CudaPrint.cpp).
    void attach_print_buffer(cu::CUmodule module);
    [[noreturn]] void throw_load_error(const CompiledKernel &k, cu::CUresult rc,
                                       std::string error_log, const std::string &info_log) const;

    const CudaDriver &drv_;
    int device_id_;
    cu::CUdevice dev_ = 0;
    std::string name_;
    TargetSpec target_;
    DeviceLimits limits_;
    bool use_pools_ = false;
    std::shared_ptr<const CudaPrimaryContext> ctx_;
    std::shared_ptr<CudaDeviceState> state_;
    int least_priority_ = 0, greatest_priority_ = 0;
    std::shared_ptr<BackendStream> default_stream_;
    /// Addresses from cuMemAlloc (made once user streams exist), freed with cuMemFree.
    std::mutex immediate_mutex_;
    std::unordered_set<DeviceAddress> immediate_;
    /// memory2d, under immediate_mutex_: allocations of allocate_shareable (also in immediate_),
    /// and addresses opened from another process's IPC handle.
    std::unordered_set<DeviceAddress> shareable_, ipc_opened_;

    /// Cubins and the preload ([Note] Image cache); stopped and finished before the members
    /// above go.
    ImageCache images_{*this};
    std::thread helper_; ///< the thread that made this back end and preloads; joined first
};

} // namespace ember::detail

#endif // EMBER_RUNTIME_CUDA_CUDABACKEND_H
