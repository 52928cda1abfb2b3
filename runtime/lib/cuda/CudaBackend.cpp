/// \file
/// The CUDA back end: one device's primary context, its streams (a default one and any the user
/// makes) and events, PTX loaded by the driver's JIT.
///
/// [Note] CUDA contexts and threads
/// ================================
/// A back end retains the device's *primary* context (the one the CUDA runtime, and so PyTorch,
/// uses), so buffers and streams are shared with them. Any host thread may call it: every method
/// makes the context current for the duration of its driver calls through `ScopedCurrent`, which
/// costs one cuCtxGetCurrent when the context is current already. When the thread had *another*
/// context current, it is restored afterwards, so ember never changes the device the user's own
/// CUDA code runs on; when the thread had none, ours is left current (as the CUDA runtime does).
#include "cuda/CudaDriver.h"

#include "ember/Error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
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

namespace {

/// Makes a primary context current on this thread for one scope. See [Note] CUDA contexts and
/// threads.
class ScopedCurrent {
public:
    /// Throws when the context cannot be made current.
    explicit ScopedCurrent(const CudaPrimaryContext &ctx) : ctx_(ctx) {
        ctx_.driver().check(enter(), "cuCtxSetCurrent", " making " + ctx_.where() +
                                                           " current on this thread");
    }
    /// For noexcept paths: logs a failure; see ok().
    ScopedCurrent(const CudaPrimaryContext &ctx, std::nothrow_t) noexcept : ctx_(ctx) {
        ok_ = ctx_.driver().log_if_error(enter(), "cuCtxSetCurrent");
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

/// "1048576 bytes (1 MiB)".
std::string format_bytes(uint64_t bytes) {
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

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return buf;
}

std::string dims(const std::array<int64_t, 3> &d) {
    return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
           ")";
}

/// The text a NUL-terminated JIT log buffer holds, without trailing blank lines.
std::string log_text(const std::string &buffer) {
    std::string s(buffer.c_str());
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

constexpr size_t jit_log_bytes = 16 * 1024;

class CudaStream;

/// The CUcontext of a CUDA back end; nullptr for another api's (memory2d).
cu::CUcontext cuda_context_of(Backend &b) noexcept;

/// A CUevent of one context.
class CudaEvent final : public BackendEvent {
public:
    CudaEvent(std::shared_ptr<const CudaPrimaryContext> ctx, const EventOptions &o)
        : ctx_(std::move(ctx)), timing_(o.timing) {
        const CudaDriver &drv = ctx_->driver();
        unsigned flags = cu::CU_EVENT_DEFAULT;
        if (!o.timing) flags |= cu::CU_EVENT_DISABLE_TIMING;
        if (o.blocking_sync) flags |= cu::CU_EVENT_BLOCKING_SYNC;
        if (o.interprocess) {
            if (o.timing)
                throw LogicError("create_event: an interprocess event needs timing off "
                                 "(EventFlags::interprocess | EventFlags::disable_timing), as "
                                 "CUDA requires");
            flags |= cu::CU_EVENT_INTERPROCESS;
        }
        ScopedCurrent current(*ctx_);
        drv.check(drv.cuEventCreate(&event_, flags), "cuEventCreate", " on " + ctx_->where());
    }
    ~CudaEvent() override {
        ScopedCurrent current(*ctx_, std::nothrow);
        if (current.ok()) ctx_->driver().log_if_error(ctx_->driver().cuEventDestroy(event_), "cuEventDestroy");
    }
    CudaEvent(const CudaEvent &) = delete;
    CudaEvent &operator=(const CudaEvent &) = delete;

    cu::CUevent handle() const noexcept { return event_; }
    const CudaPrimaryContext &context() const noexcept { return *ctx_; }
    void mark_recorded() noexcept { recorded_ = true; }

    bool query() override {
        const CudaDriver &drv = ctx_->driver();
        ScopedCurrent current(*ctx_);
        cu::CUresult rc = drv.cuEventQuery(event_);
        if (rc == cu::CUDA_ERROR_NOT_READY) return false;
        drv.check(rc, "cuEventQuery", " on " + ctx_->where());
        return true;
    }
    void synchronize() override {
        const CudaDriver &drv = ctx_->driver();
        ScopedCurrent current(*ctx_);
        drv.check(drv.cuEventSynchronize(event_), "cuEventSynchronize",
                  " on " + ctx_->where() + "; the failure comes from work recorded before the event");
    }
    float elapsed_ms_since(BackendEvent &start_event) override {
        auto *start = dynamic_cast<CudaEvent *>(&start_event);
        if (!start)
            throw LogicError("time_since: the two events belong to different apis; time events of "
                             "one device");
        if (!timing_ || !start->timing_)
            throw LogicError("time_since: an event made with EventFlags::disable_timing has no "
                             "timestamp");
        if (!recorded_ || !start->recorded_)
            throw LogicError(std::string("time_since: the ") + (recorded_ ? "earlier" : "later") +
                             " event was never recorded (record it on a stream first)");
        const CudaDriver &drv = ctx_->driver();
        ScopedCurrent current(*ctx_);
        float ms = 0;
        cu::CUresult rc = drv.cuEventElapsedTime(&ms, start->event_, event_);
        if (rc == cu::CUDA_ERROR_NOT_READY)
            throw LogicError("time_since: an event has not completed yet; synchronize the later "
                             "event first");
        drv.check(rc, "cuEventElapsedTime", " on " + ctx_->where());
        return ms;
    }

private:
    std::shared_ptr<const CudaPrimaryContext> ctx_;
    cu::CUevent event_ = nullptr;
    bool timing_;
    bool recorded_ = false;
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
    std::string fault_context(cu::CUresult rc) const {
        if (cuda_error_class(rc) != CudaErrorClass::Launch) return {};
        std::string s;
        {
            std::lock_guard<std::mutex> lock(launched_mutex);
            for (const std::string &k : launched)
                s += (s.empty() ? "; kernels launched since the last synchronize: '" : ", '") + k + "'";
        }
        if (rc == cu::CUDA_ERROR_MISALIGNED_ADDRESS)
            s += "; a SIMD vector load or store (p.load<N>(i), p.store(i, v)) needs an address aligned to "
                 "min(N * sizeof(T), 16) bytes";
        return s;
    }

    std::string copy_context(size_t bytes, const char *direction, DeviceAddress device) const {
        return "; copying " + format_bytes(bytes) + " " + direction + " on " + ctx->where() +
               " (device address " + hex(device) + ")";
    }

    mutable std::mutex launched_mutex;
    std::vector<std::string> launched;

    /// The user streams alive now, and whether there ever were any.
    std::mutex streams_mutex;
    std::vector<CudaStream *> user_streams;
    std::atomic<bool> had_user_streams{false};
};

/// A CUstream of one context: the back end's default stream or one the user made.
class CudaStream final : public BackendStream {
public:
    /// Creates the stream (non-blocking with respect to the legacy NULL stream).
    CudaStream(std::shared_ptr<CudaDeviceState> dev, int priority, bool user)
        : dev_(std::move(dev)), priority_(priority), user_(user) {
        const CudaDriver &drv = dev_->drv;
        ScopedCurrent current(*dev_->ctx);
        drv.check(drv.cuStreamCreateWithPriority(&stream_, cu::CU_STREAM_NON_BLOCKING, priority),
                  "cuStreamCreateWithPriority",
                  " (priority " + std::to_string(priority) + ") on " + dev_->ctx->where());
        if (user_) {
            std::lock_guard<std::mutex> lock(dev_->streams_mutex);
            dev_->user_streams.push_back(this);
            dev_->had_user_streams = true;
        }
    }
    /// Waits for the stream's work (so that a stream-ordered free after this cannot overtake
    /// it), then destroys it.
    ~CudaStream() override {
        if (user_) {
            std::lock_guard<std::mutex> lock(dev_->streams_mutex);
            std::erase(dev_->user_streams, this);
        }
        const CudaDriver &drv = dev_->drv;
        ScopedCurrent current(*dev_->ctx, std::nothrow);
        if (!current.ok()) return;
        drv.log_if_error(drv.cuStreamSynchronize(stream_), "cuStreamSynchronize",
                         " while destroying a stream of " + dev_->ctx->where());
        drv.log_if_error(drv.cuStreamDestroy(stream_), "cuStreamDestroy", " on " + dev_->ctx->where());
    }
    CudaStream(const CudaStream &) = delete;
    CudaStream &operator=(const CudaStream &) = delete;

    cu::CUstream handle() const noexcept { return stream_; }
    int priority() const override { return priority_; }

    void copy_to_device(DeviceAddress dst, const void *src, size_t bytes) override {
        if (bytes == 0) return;
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuMemcpyHtoDAsync(dst, src, bytes, stream_);
        if (rc != cu::CUDA_SUCCESS)
            dev_->drv.check(rc, "cuMemcpyHtoDAsync",
                            dev_->copy_context(bytes, "host to device", dst) + dev_->fault_context(rc));
    }

    void copy_from_device(void *dst, DeviceAddress src, size_t bytes) override {
        if (bytes == 0) return;
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuMemcpyDtoHAsync(dst, src, bytes, stream_);
        if (rc != cu::CUDA_SUCCESS)
            dev_->drv.check(rc, "cuMemcpyDtoHAsync",
                            dev_->copy_context(bytes, "device to host", src) + dev_->fault_context(rc));
    }

    void copy_device_to_device(DeviceAddress dst, DeviceAddress src, size_t bytes) override {
        if (bytes == 0) return;
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuMemcpyDtoDAsync(dst, src, bytes, stream_);
        if (rc != cu::CUDA_SUCCESS)
            dev_->drv.check(rc, "cuMemcpyDtoDAsync",
                            dev_->copy_context(bytes, "device to device", src) + " to " + hex(dst) +
                                dev_->fault_context(rc));
    }

    void launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &d, void **args,
                size_t /*num_args*/) override {
        auto &f = static_cast<CudaFunction &>(fn);
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuLaunchKernel(
            f.function, unsigned(d.grid[0]), unsigned(d.grid[1]), unsigned(d.grid[2]),
            unsigned(d.block[0]), unsigned(d.block[1]), unsigned(d.block[2]), d.shared_mem_bytes,
            stream_, args, /*extra=*/nullptr);
        if (rc == cu::CUDA_SUCCESS) {
            dev_->remember_launch(kernel_name);
            return;
        }
        std::string context = "; grid " + dims(d.grid) + ", block " + dims(d.block) + ", " +
                              std::to_string(d.shared_mem_bytes) +
                              " bytes of dynamic shared memory, on " + dev_->ctx->where();
        if (rc == cu::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
            context += "; a block of this size needs more registers than the device has: launch "
                       "fewer threads per block";
        context += dev_->fault_context(rc);
        dev_->drv.raise(rc, "launch of kernel '" + kernel_name + "' failed", context);
    }

    void record(BackendEvent &e) override {
        auto *ce = dynamic_cast<CudaEvent *>(&e);
        EMBER_ASSERT(ce, "CudaStream::record of another api's event");
        if (&ce->context() != dev_->ctx.get())
            throw LogicError("record_event: the event belongs to " + ce->context().where() +
                             " but the stream to " + dev_->ctx->where() +
                             "; record an event of the stream's own context");
        ScopedCurrent current(*dev_->ctx);
        dev_->drv.check(dev_->drv.cuEventRecord(ce->handle(), stream_), "cuEventRecord",
                        " on " + dev_->ctx->where());
        ce->mark_recorded();
    }

    void wait(BackendEvent &e) override {
        auto *ce = dynamic_cast<CudaEvent *>(&e);
        if (!ce) {
            // An event of another api (the CPU device's complete when recorded): wait on the host.
            e.synchronize();
            return;
        }
        // cuStreamWaitEvent takes events of other contexts and devices too.
        ScopedCurrent current(*dev_->ctx);
        dev_->drv.check(dev_->drv.cuStreamWaitEvent(stream_, ce->handle(), 0), "cuStreamWaitEvent",
                        " on " + dev_->ctx->where());
    }

    void synchronize() override {
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuStreamSynchronize(stream_);
        if (rc != cu::CUDA_SUCCESS)
            dev_->drv.check(rc, "cuStreamSynchronize",
                            " on " + dev_->ctx->where() +
                                "; the failure comes from a kernel or copy enqueued since the last "
                                "synchronize" +
                                dev_->fault_context(rc));
        dev_->forget_launches();
    }

    // [issue-4 anchor: devinfo] Device information and context limits.

    // [issue-4 anchor: memory] Memory: memset, views, mapping, host and managed memory.

    // [issue-4 anchor: memory2d] Memory: pitched 2-D/3-D copies, peer access, IPC.
    void copy_3d(const Region3D &dst, const Region3D &src, size_t width_bytes, size_t height,
                 size_t depth) override {
        ScopedCurrent current(*dev_->ctx);
        const CudaDriver &drv = dev_->drv;
        cu::CUresult rc;
        const char *call;
        if (depth == 1) {
            // One slice: a 2-D copy, the slice offset folded into the row.
            cu::CUDA_MEMCPY2D c{};
            c.srcXInBytes = src.x_bytes;
            c.srcY = src.y + src.z * src.rows;
            c.srcPitch = src.pitch;
            c.srcMemoryType = src.device ? cu::CU_MEMORYTYPE_DEVICE : cu::CU_MEMORYTYPE_HOST;
            if (src.device) c.srcDevice = src.address;
            else c.srcHost = reinterpret_cast<const void *>(src.address);
            c.dstXInBytes = dst.x_bytes;
            c.dstY = dst.y + dst.z * dst.rows;
            c.dstPitch = dst.pitch;
            c.dstMemoryType = dst.device ? cu::CU_MEMORYTYPE_DEVICE : cu::CU_MEMORYTYPE_HOST;
            if (dst.device) c.dstDevice = dst.address;
            else c.dstHost = reinterpret_cast<void *>(dst.address);
            c.WidthInBytes = width_bytes;
            c.Height = height;
            call = "cuMemcpy2DAsync";
            rc = drv.cuMemcpy2DAsync(&c, stream_);
        } else {
            cu::CUDA_MEMCPY3D c{};
            c.srcXInBytes = src.x_bytes;
            c.srcY = src.y;
            c.srcZ = src.z;
            c.srcPitch = src.pitch;
            c.srcHeight = src.rows;
            c.srcMemoryType = src.device ? cu::CU_MEMORYTYPE_DEVICE : cu::CU_MEMORYTYPE_HOST;
            if (src.device) c.srcDevice = src.address;
            else c.srcHost = reinterpret_cast<const void *>(src.address);
            c.dstXInBytes = dst.x_bytes;
            c.dstY = dst.y;
            c.dstZ = dst.z;
            c.dstPitch = dst.pitch;
            c.dstHeight = dst.rows;
            c.dstMemoryType = dst.device ? cu::CU_MEMORYTYPE_DEVICE : cu::CU_MEMORYTYPE_HOST;
            if (dst.device) c.dstDevice = dst.address;
            else c.dstHost = reinterpret_cast<void *>(dst.address);
            c.WidthInBytes = width_bytes;
            c.Height = height;
            c.Depth = depth;
            call = "cuMemcpy3DAsync";
            rc = drv.cuMemcpy3DAsync(&c, stream_);
        }
        if (rc != cu::CUDA_SUCCESS)
            drv.check(rc, call,
                      "; copying " + std::to_string(depth) + " x " + std::to_string(height) + " rows of " +
                          std::to_string(width_bytes) + " bytes from " + (src.device ? "device" : "host") +
                          " memory " + hex(src.address) + " (pitch " + std::to_string(src.pitch) + ") to " +
                          (dst.device ? "device" : "host") + " memory " + hex(dst.address) + " (pitch " +
                          std::to_string(dst.pitch) + ") on " + dev_->ctx->where() + dev_->fault_context(rc));
    }

    void copy_between(DeviceAddress dst, Backend *dst_owner, DeviceAddress src, Backend *src_owner,
                      size_t bytes) override {
        if (bytes == 0) return;
        ScopedCurrent current(*dev_->ctx);
        const CudaDriver &drv = dev_->drv;
        cu::CUcontext dc = dst_owner ? cuda_context_of(*dst_owner) : nullptr;
        cu::CUcontext sc = src_owner ? cuda_context_of(*src_owner) : nullptr;
        cu::CUresult rc;
        const char *call;
        if (dc && sc && dc != sc) {
            call = "cuMemcpyPeerAsync";
            rc = drv.cuMemcpyPeerAsync(dst, dc, src, sc, bytes, stream_);
        } else {
            // Unified addressing: the driver tells host from device memory of any context.
            call = "cuMemcpyAsync";
            rc = drv.cuMemcpyAsync(dst, src, bytes, stream_);
        }
        if (rc != cu::CUDA_SUCCESS)
            drv.check(rc, call,
                      "; copying " + format_bytes(bytes) + " from " +
                          (src_owner ? src_owner->api() + ":" + std::to_string(src_owner->device_id()) : "host") +
                          " memory " + hex(src) + " to " +
                          (dst_owner ? dst_owner->api() + ":" + std::to_string(dst_owner->device_id()) : "host") +
                          " memory " + hex(dst) + " on a stream of " + dev_->ctx->where() + dev_->fault_context(rc));
    }


    // [issue-4 anchor: functions] Function attributes, launch attributes, clusters, occupancy.

    // [issue-4 anchor: modules] Constant memory and external modules.

    // [issue-4 anchor: graphs] Graphs.

    bool is_done() override {
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuStreamQuery(stream_);
        if (rc == cu::CUDA_ERROR_NOT_READY) return false;
        if (rc != cu::CUDA_SUCCESS)
            dev_->drv.check(rc, "cuStreamQuery", " on " + dev_->ctx->where() + dev_->fault_context(rc));
        return true;
    }

private:
    std::shared_ptr<CudaDeviceState> dev_;
    cu::CUstream stream_ = nullptr;
    int priority_;
    bool user_;
};

class CudaBackend final : public Backend {
public:
    CudaBackend(const CudaDriver &drv, int device_id) : drv_(drv), device_id_(device_id) {
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
        int major = attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              "compute capability");
        int minor = attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                              "compute capability");
        target_ = TargetSpec::nvptx_for(major, minor);
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
        limits_.warp_size = attribute(cu::CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");

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
    }

    ~CudaBackend() override {
        // The default stream synchronises in its destructor, before the context is released.
        default_stream_.reset();
    }

    std::string api() const override { return "cuda"; }
    std::string name() const override { return name_; }
    int device_id() const override { return device_id_; }
    TargetSpec target() const override { return target_; }
    const DeviceLimits &limits() const override { return limits_; }

    DeviceAddress allocate(size_t bytes) override {
        EMBER_ASSERT(bytes > 0, "CudaBackend::allocate of 0 bytes");
        ScopedCurrent current(*ctx_);
        cu::CUdeviceptr p = 0;
        // Stream-ordered only while the default stream is the only one ([Note] Streams).
        const bool pooled = use_pools_ && !state_->had_user_streams;
        const char *call = pooled ? "cuMemAllocAsync" : "cuMemAlloc";
        cu::CUstream stream = default_handle();
        cu::CUresult rc = pooled ? drv_.cuMemAllocAsync(&p, bytes, stream) : drv_.cuMemAlloc(&p, bytes);
        if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY && use_pools_) {
            // The pool returns memory freed on the stream to the device only at a synchronisation
            // point; one retry after it.
            drv_.check(drv_.cuStreamSynchronize(stream), "cuStreamSynchronize",
                       " (retrying an allocation that ran out of memory on " + ctx_->where() +
                           ")");
            rc = pooled ? drv_.cuMemAllocAsync(&p, bytes, stream) : drv_.cuMemAlloc(&p, bytes);
        }
        if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY)
            drv_.raise(rc, std::string(call) + " failed", out_of_memory_context(bytes));
        drv_.check(rc, call, "; requested " + format_bytes(bytes) + " on " + ctx_->where());
        if (!pooled) {
            std::lock_guard<std::mutex> lock(immediate_mutex_);
            immediate_.insert(p);
        }
        return p;
    }

    void deallocate(DeviceAddress p) noexcept override {
        if (!p) return;
        ScopedCurrent current(*ctx_, std::nothrow);
        if (!current.ok()) return;
        bool ipc_opened = false;
        {
            std::lock_guard<std::mutex> lock(immediate_mutex_);
            ipc_opened = ipc_opened_.erase(p) != 0;
        }
        if (ipc_opened) { // memory2d: mapped from another process
            // Unmapping does not wait for the work that uses the memory: wait for it first.
            if (state_->had_user_streams) order_after_user_streams();
            drv_.log_if_error(drv_.cuStreamSynchronize(default_handle()), "cuStreamSynchronize",
                              " (before closing an IPC buffer)");
            drv_.log_if_error(drv_.cuIpcCloseMemHandle(p), "cuIpcCloseMemHandle");
            return;
        }
        {
            std::lock_guard<std::mutex> lock(immediate_mutex_);
            shareable_.erase(p);
            if (immediate_.erase(p)) {
                // cuMemFree waits for the work in flight on the device.
                drv_.log_if_error(drv_.cuMemFree(p), "cuMemFree");
                return;
            }
        }
        cu::CUstream stream = default_handle();
        if (state_->had_user_streams) order_after_user_streams();
        drv_.log_if_error(drv_.cuMemFreeAsync(p, stream), "cuMemFreeAsync");
    }

    void *allocate_host(size_t bytes) override {
        if (bytes == 0) return nullptr;
        ScopedCurrent current(*ctx_);
        void *p = nullptr;
        cu::CUresult rc = drv_.cuMemAllocHost(&p, bytes);
        drv_.check(rc, "cuMemAllocHost",
                   "; requested " + format_bytes(bytes) + " of page-locked host memory for " +
                       ctx_->where());
        return p;
    }

    void deallocate_host(void *p) noexcept override {
        if (!p) return;
        ScopedCurrent current(*ctx_, std::nothrow);
        if (!current.ok()) return;
        drv_.log_if_error(drv_.cuMemFreeHost(p), "cuMemFreeHost");
    }

    const std::shared_ptr<BackendStream> &default_stream() override { return default_stream_; }

    std::shared_ptr<BackendStream> create_stream(int priority) override {
        // Lower numbers are more urgent: greatest <= priority <= least.
        if (priority > least_priority_ || priority < greatest_priority_)
            throw LogicError("create_stream: priority " + std::to_string(priority) + " is outside " +
                             ctx_->where() + "'s range, from " + std::to_string(least_priority_) +
                             " (least urgent, the default) to " + std::to_string(greatest_priority_) +
                             " (most urgent)");
        auto stream = std::make_shared<CudaStream>(state_, priority, /*user=*/true);
        // The allocations made on the default stream so far are ordered before the new stream's
        // work ([Note] Streams).
        CudaEvent mark(ctx_, EventOptions{.timing = false});
        default_stream_->record(mark);
        stream->wait(mark);
        return stream;
    }

    std::pair<int, int> stream_priority_range() override { return {least_priority_, greatest_priority_}; }

    std::shared_ptr<BackendEvent> create_event(const EventOptions &options) override {
        return std::make_shared<CudaEvent>(ctx_, options);
    }

    // [issue-4 anchor: devinfo] Device information and context limits.

    // [issue-4 anchor: memory] Memory: memset, views, mapping, host and managed memory.

    // [issue-4 anchor: memory2d] Memory: pitched 2-D/3-D copies, peer access, IPC.
    cu::CUcontext context_handle() const noexcept { return ctx_->handle(); }
    cu::CUdevice device_handle() const noexcept { return dev_; }

    DeviceAddress allocate_pitched(size_t width_bytes, size_t height, unsigned element_bytes,
                                   size_t *pitch) override {
        ScopedCurrent current(*ctx_);
        cu::CUdeviceptr p = 0;
        // cuMemAllocPitch takes 4, 8 or 16: the widest access kernels make to a row.
        unsigned access = element_bytes <= 4 ? 4 : element_bytes <= 8 ? 8 : 16;
        cu::CUresult rc = drv_.cuMemAllocPitch(&p, pitch, width_bytes, height, access);
        std::string what = "; " + std::to_string(height) + " rows of " + std::to_string(width_bytes) + " bytes";
        if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY)
            drv_.raise(rc, "cuMemAllocPitch failed", what + out_of_memory_context(width_bytes * height));
        drv_.check(rc, "cuMemAllocPitch", what + " on " + ctx_->where());
        std::lock_guard<std::mutex> lock(immediate_mutex_);
        immediate_.insert(p);
        return p;
    }

    DeviceAddress allocate_shareable(size_t bytes) override {
        ScopedCurrent current(*ctx_);
        cu::CUdeviceptr p = 0;
        cu::CUresult rc = drv_.cuMemAlloc(&p, bytes);
        if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY) drv_.raise(rc, "cuMemAlloc failed", out_of_memory_context(bytes));
        drv_.check(rc, "cuMemAlloc", "; requested " + format_bytes(bytes) + " on " + ctx_->where());
        std::lock_guard<std::mutex> lock(immediate_mutex_);
        immediate_.insert(p);
        shareable_.insert(p);
        return p;
    }

    std::array<uint8_t, 64> ipc_handle(DeviceAddress p) override {
        {
            std::lock_guard<std::mutex> lock(immediate_mutex_);
            if (!shareable_.count(p))
                throw LogicError("ipc_handle: the buffer at " + hex(p) + " on " + ctx_->where() +
                                 " was not made by create_ipc_buffer (or is a view into one): CUDA "
                                 "shares only whole cuMemAlloc allocations, not the stream-ordered "
                                 "pool's");
        }
        ScopedCurrent current(*ctx_);
        cu::CUipcMemHandle h{};
        drv_.check(drv_.cuIpcGetMemHandle(&h, p), "cuIpcGetMemHandle", " for " + hex(p) + " on " + ctx_->where());
        std::array<uint8_t, 64> out{};
        static_assert(sizeof h == 64);
        std::memcpy(out.data(), &h, 64);
        return out;
    }

    DeviceAddress open_ipc(const std::array<uint8_t, 64> &handle, size_t bytes) override {
        ScopedCurrent current(*ctx_);
        cu::CUipcMemHandle h{};
        std::memcpy(&h, handle.data(), 64);
        cu::CUdeviceptr p = 0;
        cu::CUresult rc = drv_.cuIpcOpenMemHandle(&p, h, cu::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (rc == cu::CUDA_ERROR_INVALID_CONTEXT)
            drv_.raise(rc, "cuIpcOpenMemHandle failed",
                       " on " + ctx_->where() + "; a process cannot open its own IPC handles, and the "
                       "exporting process must still hold the buffer");
        drv_.check(rc, "cuIpcOpenMemHandle", " on " + ctx_->where());
        cu::CUdeviceptr base = 0;
        size_t size = 0;
        rc = drv_.cuMemGetAddressRange(&base, &size, p);
        if (rc != cu::CUDA_SUCCESS || size < bytes) {
            drv_.log_if_error(drv_.cuIpcCloseMemHandle(p), "cuIpcCloseMemHandle");
            drv_.check(rc, "cuMemGetAddressRange", " for an IPC buffer on " + ctx_->where());
            throw LogicError("open_ipc_buffer: asked for " + std::to_string(bytes) +
                             " bytes but the shared buffer has " + std::to_string(size));
        }
        std::lock_guard<std::mutex> lock(immediate_mutex_);
        ipc_opened_.insert(p);
        return p;
    }

    bool can_access_peer(Backend &peer) override {
        auto *other = dynamic_cast<CudaBackend *>(&peer);
        if (!other) return false; // the CPU device's memory is pageable host memory
        if (other->dev_ == dev_) return true;
        int can = 0;
        drv_.check(drv_.cuDeviceCanAccessPeer(&can, dev_, other->dev_), "cuDeviceCanAccessPeer",
                   " for " + ctx_->where() + " and " + other->ctx_->where());
        return can != 0;
    }

    void enable_peer_access(Backend &peer) override {
        auto *other = dynamic_cast<CudaBackend *>(&peer);
        if (!other || !can_access_peer(peer))
            throw LogicError("enable_peer_access: " + ctx_->where() + " cannot access the memory of " +
                             peer.api() + " device " + std::to_string(peer.device_id()) + " (" + peer.name() +
                             "); can_access() is false");
        if (other->dev_ == dev_) return; // one primary context
        ScopedCurrent current(*ctx_);
        cu::CUresult rc = drv_.cuCtxEnablePeerAccess(other->ctx_->handle(), 0);
        constexpr cu::CUresult peer_access_already_enabled = 704;
        if (rc != peer_access_already_enabled)
            drv_.check(rc, "cuCtxEnablePeerAccess", " from " + ctx_->where() + " to " + other->ctx_->where());
        // Stream-ordered allocations of the peer live in its default pool, which
        // cuCtxEnablePeerAccess does not cover.
        if (other->use_pools_ && drv_.cuDeviceGetDefaultMemPool && drv_.cuMemPoolSetAccess) {
            cu::CUmemoryPool pool = nullptr;
            drv_.check(drv_.cuDeviceGetDefaultMemPool(&pool, other->dev_), "cuDeviceGetDefaultMemPool",
                       " of " + other->ctx_->where());
            cu::CUmemAccessDesc desc{};
            desc.location.type = cu::CU_MEM_LOCATION_TYPE_DEVICE;
            desc.location.id = device_id_;
            desc.flags = cu::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            drv_.check(drv_.cuMemPoolSetAccess(pool, &desc, 1), "cuMemPoolSetAccess",
                       " giving " + ctx_->where() + " access to the memory pool of " + other->ctx_->where());
        }
    }

    void disable_peer_access(Backend &peer) override {
        auto *other = dynamic_cast<CudaBackend *>(&peer);
        if (!other || other->dev_ == dev_) return; // never enabled: nothing to undo
        ScopedCurrent current(*ctx_);
        cu::CUresult rc = drv_.cuCtxDisablePeerAccess(other->ctx_->handle());
        constexpr cu::CUresult peer_access_not_enabled = 705;
        if (rc == peer_access_not_enabled) return;
        drv_.check(rc, "cuCtxDisablePeerAccess", " from " + ctx_->where() + " to " + other->ctx_->where());
        if (other->use_pools_ && drv_.cuDeviceGetDefaultMemPool && drv_.cuMemPoolSetAccess) {
            cu::CUmemoryPool pool = nullptr;
            drv_.check(drv_.cuDeviceGetDefaultMemPool(&pool, other->dev_), "cuDeviceGetDefaultMemPool",
                       " of " + other->ctx_->where());
            cu::CUmemAccessDesc desc{};
            desc.location.type = cu::CU_MEM_LOCATION_TYPE_DEVICE;
            desc.location.id = device_id_;
            desc.flags = 0; // CU_MEM_ACCESS_FLAGS_PROT_NONE
            drv_.check(drv_.cuMemPoolSetAccess(pool, &desc, 1), "cuMemPoolSetAccess",
                       " taking from " + ctx_->where() + " access to the memory pool of " + other->ctx_->where());
        }
    }


    // [issue-4 anchor: functions] Function attributes, launch attributes, clusters, occupancy.

    // [issue-4 anchor: modules] Constant memory and external modules.

    // [issue-4 anchor: graphs] Graphs.

    std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) override {
        if (k.target.arch != Arch::NVPTX)
            throw LogicError("kernel '" + k.kernel_name + "' was compiled for " +
                             k.target.to_string() + ", but " + ctx_->where() + " needs " +
                             target_.to_string());
        ScopedCurrent current(*ctx_);
        std::string info_log(jit_log_bytes, '\0'), error_log(jit_log_bytes, '\0');
        cu::CUjit_option options[] = {
            cu::CU_JIT_INFO_LOG_BUFFER,  cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            cu::CU_JIT_LOG_VERBOSE,
        };
        void *values[] = {
            info_log.data(),
            reinterpret_cast<void *>(uintptr_t(info_log.size() - 1)),
            error_log.data(),
            reinterpret_cast<void *>(uintptr_t(error_log.size() - 1)),
            reinterpret_cast<void *>(uintptr_t(0)),
        };
        static_assert(std::size(options) == std::size(values));
        cu::CUmodule module = nullptr;
        auto start = std::chrono::steady_clock::now();
        // The PTX image must be NUL-terminated; c_str() is.
        cu::CUresult rc = drv_.cuModuleLoadDataEx(&module, k.binary.c_str(),
                                                  unsigned(std::size(options)), options, values);
        std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        if (rc != cu::CUDA_SUCCESS)
            throw_load_error(k, rc, log_text(error_log), log_text(info_log));

        auto fn = std::make_unique<CudaFunction>(ctx_, module);
        fn->load_seconds = elapsed.count();
        drv_.check(drv_.cuModuleGetFunction(&fn->function, module, k.entry_symbol.c_str()),
                   "cuModuleGetFunction",
                   "; the PTX of kernel '" + k.kernel_name + "' has no entry point '" +
                       k.entry_symbol + "'");
        return fn;
    }

private:
    cu::CUstream default_handle() const { return static_cast<CudaStream &>(*default_stream_).handle(); }

    /// Makes the default stream wait for the current end of every live user stream, so that a
    /// stream-ordered free cannot overtake a use of the memory there.
    void order_after_user_streams() noexcept {
        std::lock_guard<std::mutex> lock(state_->streams_mutex);
        for (CudaStream *s : state_->user_streams) {
            try {
                CudaEvent mark(ctx_, EventOptions{.timing = false});
                s->record(mark);
                default_stream_->wait(mark);
            } catch (const std::exception &e) {
                std::fprintf(stderr, "ember: warning: ordering a free after a stream of %s: %s\n",
                             ctx_->where().c_str(), e.what());
            }
        }
    }

    std::string out_of_memory_context(size_t bytes) const {
        std::string s = "; requested " + format_bytes(bytes) + " on " + ctx_->where();
        size_t free_bytes = 0, total_bytes = 0;
        if (drv_.cuMemGetInfo(&free_bytes, &total_bytes) == cu::CUDA_SUCCESS)
            s += ", which has " + format_bytes(free_bytes) + " free of " +
                 format_bytes(total_bytes);
        return s;
    }

    [[noreturn]] void throw_load_error(const CompiledKernel &k, cu::CUresult rc,
                                       std::string error_log, const std::string &info_log) const {
        // A fault of an earlier kernel, or no memory to load into: not the PTX's fault.
        CudaErrorClass c = cuda_error_class(rc);
        if (c == CudaErrorClass::Memory || c == CudaErrorClass::Launch)
            drv_.raise(rc, "cuModuleLoadDataEx failed",
                       " loading kernel '" + k.kernel_name + "' on " + ctx_->where());
        std::string summary = "kernel '" + k.kernel_name +
                              "': the CUDA driver rejected the PTX for " + k.target.to_string() +
                              " (" + drv_.error_name(rc) + ")";
        if (rc == cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
            summary += "; the PTX ISA version is newer than this driver (CUDA " +
                       std::to_string(drv_.version() / 1000) + "." +
                       std::to_string(drv_.version() % 1000 / 10) +
                       ") accepts: update the driver or target an older PTX version";
        else if (!(k.target == target_))
            summary += "; " + ctx_->where() + " is " + target_.to_string();
        std::string log = std::move(error_log);
        if (!info_log.empty()) log += (log.empty() ? "" : "\n") + info_log;
        if (log.empty()) {
            // Some failures (a corrupt image) leave both logs empty.
            std::string desc = drv_.error_string(rc);
            log = "(no JIT log) " + drv_.error_name(rc) + (desc.empty() ? "" : ": " + desc);
        }
        throw CompileError(summary, std::move(log));
    }

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
};

cu::CUcontext cuda_context_of(Backend &b) noexcept {
    auto *c = dynamic_cast<CudaBackend *>(&b);
    return c ? c->context_handle() : nullptr;
}

} // namespace

CudaFunction::~CudaFunction() {
    if (!module_) return;
    const CudaDriver &drv = ctx_->driver();
    ScopedCurrent current(*ctx_, std::nothrow);
    if (!current.ok()) return;
    drv.log_if_error(drv.cuModuleUnload(module_), "cuModuleUnload", " on " + ctx_->where());
}

double last_load_seconds(const LoadedFunction &fn) {
    const auto *f = dynamic_cast<const CudaFunction *>(&fn);
    return f ? f->load_seconds : 0;
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

int cuda_device_count() noexcept {
    const CudaDriver *drv = CudaDriver::try_get();
    if (!drv) return 0;
    int count = 0;
    if (drv->cuDeviceGetCount(&count) != cu::CUDA_SUCCESS) return 0;
    return count;
}

} // namespace ember::detail
