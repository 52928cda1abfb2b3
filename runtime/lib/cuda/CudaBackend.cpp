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
#include "cuda/CudaMemset.h"

#include "BackendGraph.h"
#include "CompileCache.h"
#include "DiskCache.h"
#include "Preload.h"
#include "ember/compiler/CacheSupport.h"

#include "ember/Error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
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

namespace {

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
        : ctx_(std::move(ctx)) {
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
        // DeviceEvent::time_since has checked the pair: one context, timing, both recorded.
        const auto &start = static_cast<const CudaEvent &>(start_event);
        const CudaDriver &drv = ctx_->driver();
        ScopedCurrent current(*ctx_);
        float ms = 0;
        cu::CUresult rc = drv.cuEventElapsedTime(&ms, start.event_, event_);
        if (rc == cu::CUDA_ERROR_NOT_READY)
            throw LogicError("time_since: an event has not completed yet; synchronize the later "
                             "event first");
        drv.check(rc, "cuEventElapsedTime", " on " + ctx_->where());
        return ms;
    }

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
        if (graph_) {
            // Dropped while capturing: end the capture (the graph is discarded).
            capture_.store(nullptr);
            --dev_->capturing;
            cu::CUgraph g = nullptr;
            drv.cuStreamEndCapture(stream_, &g);
            if (g) drv.cuGraphDestroy(g);
        }
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
    }

    void wait(BackendEvent &e) override {
        auto *ce = dynamic_cast<CudaEvent *>(&e);
        if (!ce) {
            // An event of another api (the CPU device's complete when recorded): wait on the host.
            e.synchronize();
            return;
        }
        // cuStreamWaitEvent takes events of other contexts and devices too. While capturing, the
        // wait becomes an event wait node ([Note] Graphs in BackendGraph.h).
        ScopedCurrent current(*dev_->ctx);
        const unsigned flags = capture_graph() ? cu::CU_EVENT_WAIT_EXTERNAL : 0u;
        dev_->drv.check(dev_->drv.cuStreamWaitEvent(stream_, ce->handle(), flags), "cuStreamWaitEvent",
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

    // Device information and context limits.

    // Memory: memset, views, mapping, host and managed memory.
    void attach_managed(DeviceAddress p, unsigned flags) override {
        ScopedCurrent current(*dev_->ctx);
        // Length 0: the whole allocation, as cuMemAllocManaged memory requires.
        dev_->drv.check(dev_->drv.cuStreamAttachMemAsync(stream_, p, 0, flags), "cuStreamAttachMemAsync",
                        "; attaching the managed memory at " + hex(p) + " (flags " + std::to_string(flags) +
                            ") on " + dev_->ctx->where());
    }

    /// The driver calls of plan_memset ([Note] Memset widths in cuda/CudaMemset.h).
    void memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) override {
        const CudaDriver &drv = dev_->drv;
        ScopedCurrent current(*dev_->ctx);
        for (const MemsetStep &s : plan_memset(dst, pattern, width, count)) {
            cu::CUresult rc = cu::CUDA_SUCCESS;
            const char *call = "";
            switch (s.kind) {
            case MemsetStep::D8:
                call = "cuMemsetD8Async";
                rc = drv.cuMemsetD8Async(s.dst, static_cast<unsigned char>(s.value), s.count, stream_);
                break;
            case MemsetStep::D16:
                call = "cuMemsetD16Async";
                rc = drv.cuMemsetD16Async(s.dst, static_cast<unsigned short>(s.value), s.count, stream_);
                break;
            case MemsetStep::D32:
                call = "cuMemsetD32Async";
                rc = drv.cuMemsetD32Async(s.dst, static_cast<unsigned>(s.value), s.count, stream_);
                break;
            case MemsetStep::DtoD:
                call = "cuMemcpyDtoDAsync";
                rc = drv.cuMemcpyDtoDAsync(s.dst, s.value, s.count, stream_);
                break;
            }
            if (rc != cu::CUDA_SUCCESS)
                drv.check(rc, call,
                          "; setting " + std::to_string(count) + " elements of " + std::to_string(width) +
                              " bytes at " + hex(dst) + " on " + dev_->ctx->where() + dev_->fault_context(rc));
        }
    }

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
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


    // Function attributes, launch attributes, clusters, occupancy.

    void launch_extended(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &d,
                         const LaunchExtras &x, void **args, size_t /*num_args*/) override {
        auto &f = static_cast<CudaFunction &>(fn);
        const CudaDriver &drv = dev_->drv;
        if (!drv.cuLaunchKernelEx)
            throw LogicError("launch of kernel '" + kernel_name + "' with launch attributes needs cuLaunchKernelEx, "
                             "which this driver (CUDA " + std::to_string(drv.version() / 1000) + "." +
                             std::to_string(drv.version() % 1000 / 10) + ") lacks: update to a driver for CUDA 11.8 or newer");
        cu::CUlaunchAttribute attrs[5] = {};
        unsigned n = 0;
        auto add = [&](int id) -> cu::CUlaunchAttributeValue & {
            attrs[n].id = id;
            return attrs[n++].value;
        };
        if (x.cluster[0] > 0) {
            auto &v = add(cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
            v.clusterDim.x = unsigned(x.cluster[0]);
            v.clusterDim.y = unsigned(x.cluster[1]);
            v.clusterDim.z = unsigned(x.cluster[2]);
        }
        if (x.cluster_scheduling_policy >= 0)
            add(cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE).clusterSchedulingPolicyPreference =
                x.cluster_scheduling_policy;
        if (x.cooperative) add(cu::CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative = 1;
        if (x.programmatic_stream_serialization)
            add(cu::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).programmaticStreamSerializationAllowed = 1;
        if (x.has_priority) add(cu::CU_LAUNCH_ATTRIBUTE_PRIORITY).priority = x.priority;
        cu::CUlaunchConfig config{};
        config.gridDimX = unsigned(d.grid[0]);
        config.gridDimY = unsigned(d.grid[1]);
        config.gridDimZ = unsigned(d.grid[2]);
        config.blockDimX = unsigned(d.block[0]);
        config.blockDimY = unsigned(d.block[1]);
        config.blockDimZ = unsigned(d.block[2]);
        config.sharedMemBytes = d.shared_mem_bytes;
        config.hStream = stream_;
        config.attrs = n ? attrs : nullptr;
        config.numAttrs = n;
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = drv.cuLaunchKernelEx(&config, f.function, args, /*extra=*/nullptr);
        if (rc == cu::CUDA_SUCCESS) {
            dev_->remember_launch(kernel_name);
            return;
        }
        std::string context = "; grid " + dims(d.grid) + ", block " + dims(d.block) + ", " +
                              std::to_string(d.shared_mem_bytes) + " bytes of dynamic shared memory";
        if (x.cluster[0] > 0) context += ", cluster " + dims(x.cluster);
        if (x.cooperative) context += ", cooperative";
        if (x.has_priority) context += ", priority " + std::to_string(x.priority);
        context += ", on " + dev_->ctx->where();
        if (rc == cu::CUDA_ERROR_INVALID_CLUSTER_SIZE)
            throw LogicError("launch of kernel '" + kernel_name + "' failed: " + drv.error_name(rc) + context +
                             "; a cluster has at most 8 blocks (16 on H100 after "
                             "set_attribute(FunctionAttribute::non_portable_cluster_size_allowed, 1)), and its "
                             "blocks' shared memory must fit one GPC",
                             rc, drv.error_name(rc));
        if (rc == cu::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
            throw LogicError("launch of kernel '" + kernel_name + "' failed: " + drv.error_name(rc) + context +
                                 "; a cooperative grid may not exceed max_active_blocks_per_multiprocessor x "
                                 "multiprocessors",
                             rc, drv.error_name(rc));
        context += dev_->fault_context(rc);
        drv.raise(rc, "launch of kernel '" + kernel_name + "' failed", context);
    }

    // Constant memory and external modules.

    // Graphs.
    /// A captured CUgraph and its kernel nodes in enqueue order ([Note] Graphs in BackendGraph.h).
    class Graph final : public BackendGraph {
    public:
        explicit Graph(std::shared_ptr<CudaDeviceState> dev) : dev_(std::move(dev)) {}
        ~Graph() override {
            if (!graph_) return;
            ScopedCurrent current(*dev_->ctx, std::nothrow);
            if (current.ok()) dev_->drv.log_if_error(dev_->drv.cuGraphDestroy(graph_), "cuGraphDestroy");
        }
        size_t num_nodes() override {
            size_t n = 0;
            ScopedCurrent current(*dev_->ctx);
            dev_->drv.check(dev_->drv.cuGraphGetNodes(graph_, nullptr, &n), "cuGraphGetNodes",
                            " on " + dev_->ctx->where());
            return n;
        }
        std::unique_ptr<BackendGraphExec> instantiate() override;

        cu::CUgraph graph_ = nullptr;
        std::vector<cu::CUgraphNode> kernel_nodes_;
        std::vector<cu::CUfunction> kernel_functions_;
        std::vector<std::string> kernel_names_;

    private:
        std::shared_ptr<CudaDeviceState> dev_;
    };

    /// A CUgraphExec.
    class GraphExec final : public BackendGraphExec {
    public:
        GraphExec(std::shared_ptr<CudaDeviceState> dev, cu::CUgraphExec exec, const Graph &graph)
            : dev_(std::move(dev)), exec_(exec), nodes_(graph.kernel_nodes_), functions_(graph.kernel_functions_),
              names_(graph.kernel_names_) {
            // A fault surfacing later names the graph's kernels: each once, a few at most.
            for (const std::string &k : names_)
                if (suspects_.size() < 8 && std::find(suspects_.begin(), suspects_.end(), k) == suspects_.end())
                    suspects_.push_back(k);
        }
        ~GraphExec() override {
            if (!exec_) return;
            ScopedCurrent current(*dev_->ctx, std::nothrow);
            if (current.ok()) dev_->drv.log_if_error(dev_->drv.cuGraphExecDestroy(exec_), "cuGraphExecDestroy");
        }
        GraphExec(const GraphExec &) = delete;
        GraphExec &operator=(const GraphExec &) = delete;

        void launch(BackendStream &stream) override {
            if (!exec_) return; // an empty graph: nothing to run
            auto &s = static_cast<CudaStream &>(stream);
            ScopedCurrent current(*dev_->ctx);
            cu::CUresult rc = dev_->drv.cuGraphLaunch(exec_, s.handle());
            if (rc != cu::CUDA_SUCCESS)
                dev_->drv.check(rc, "cuGraphLaunch", " on " + dev_->ctx->where() + dev_->fault_context(rc));
            for (const std::string &k : suspects_) dev_->remember_launch(k);
        }
        void update_kernel(size_t index, const LaunchDims &d, void **args, const uint32_t *, size_t) override {
            EMBER_ASSERT(index < nodes_.size(), "CudaStream::GraphExec::update_kernel: no such kernel node");
            cu::CUDA_KERNEL_NODE_PARAMS p{};
            p.func = functions_[index];
            p.gridDimX = unsigned(d.grid[0]);
            p.gridDimY = unsigned(d.grid[1]);
            p.gridDimZ = unsigned(d.grid[2]);
            p.blockDimX = unsigned(d.block[0]);
            p.blockDimY = unsigned(d.block[1]);
            p.blockDimZ = unsigned(d.block[2]);
            p.sharedMemBytes = d.shared_mem_bytes;
            p.kernelParams = args; // copied by the driver
            ScopedCurrent current(*dev_->ctx);
            dev_->drv.check(dev_->drv.cuGraphExecKernelNodeSetParams(exec_, nodes_[index], &p),
                            "cuGraphExecKernelNodeSetParams",
                            "; updating kernel node " + std::to_string(index) + " ('" + names_[index] + "') on " +
                                dev_->ctx->where());
        }

    private:
        std::shared_ptr<CudaDeviceState> dev_;
        cu::CUgraphExec exec_;
        std::vector<cu::CUgraphNode> nodes_;
        std::vector<cu::CUfunction> functions_;
        std::vector<std::string> names_;
        std::vector<std::string> suspects_;
    };

    void begin_capture() override {
        const CudaDriver &drv = dev_->drv;
        if (!drv.cuStreamBeginCapture || !drv.cuStreamEndCapture ||
            (!drv.cuStreamGetCaptureInfo_v3 && !drv.cuStreamGetCaptureInfo_v2) || !drv.cuGraphInstantiateWithFlags ||
            !drv.cuGraphLaunch || !drv.cuGraphExecDestroy || !drv.cuGraphDestroy || !drv.cuGraphGetNodes ||
            !drv.cuGraphExecKernelNodeSetParams)
            throw RuntimeError("begin_capture: graphs need a driver for CUDA 11.4 or newer; this libcuda.so.1 (CUDA " +
                               std::to_string(drv.version() / 1000) + "." + std::to_string(drv.version() % 1000 / 10) +
                               ") lacks a graph entry point");
        auto graph = std::make_shared<Graph>(dev_);
        ScopedCurrent current(*dev_->ctx);
        // Relaxed: ember itself may still allocate (cuMemAlloc) and load modules while a stream
        // captures; it rejects the calls that would break the capture before the driver sees them.
        drv.check(drv.cuStreamBeginCapture(stream_, cu::CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture",
                  " on " + dev_->ctx->where());
        ++dev_->capturing;
        graph_ = std::move(graph);
        capture_.store(graph_.get(), std::memory_order_release);
    }

    std::shared_ptr<BackendGraph> end_capture() override {
        const CudaDriver &drv = dev_->drv;
        std::shared_ptr<Graph> graph = std::move(graph_);
        capture_.store(nullptr, std::memory_order_release);
        --dev_->capturing;
        ScopedCurrent current(*dev_->ctx);
        cu::CUgraph g = nullptr;
        cu::CUresult rc = drv.cuStreamEndCapture(stream_, &g);
        if (rc != cu::CUDA_SUCCESS) {
            if (g) drv.cuGraphDestroy(g);
            drv.check(rc, "cuStreamEndCapture",
                      " on " + dev_->ctx->where() +
                          "; an operation enqueued during the capture was not allowed while capturing, and the "
                          "driver invalidated the capture");
        }
        graph->graph_ = g;
        return graph;
    }

    void capture_launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args,
                        const uint32_t *, size_t num_args) override {
        launch(fn, kernel_name, dims, args, num_args); // captured: becomes a kernel node
        // The node just added is now the capture's only dependency.
        const CudaDriver &drv = dev_->drv;
        ScopedCurrent current(*dev_->ctx);
        int status = 0;
        const cu::CUgraphNode *deps = nullptr;
        size_t num_deps = 0;
        cu::CUresult rc = drv.cuStreamGetCaptureInfo_v3
                              ? drv.cuStreamGetCaptureInfo_v3(stream_, &status, nullptr, nullptr, &deps, nullptr,
                                                              &num_deps)
                              : drv.cuStreamGetCaptureInfo_v2(stream_, &status, nullptr, nullptr, &deps, &num_deps);
        drv.check(rc, "cuStreamGetCaptureInfo", " after capturing kernel '" + kernel_name + "' on " + dev_->ctx->where());
        if (status != cu::CU_STREAM_CAPTURE_STATUS_ACTIVE || num_deps != 1)
            throw LogicError("capturing kernel '" + kernel_name + "' on " + dev_->ctx->where() +
                             ": the capture is no longer active (status " + std::to_string(status) +
                             ") or the kernel node is not its only dependency (" + std::to_string(num_deps) +
                             " dependencies); an operation not allowed while capturing invalidated it");
        graph_->kernel_nodes_.push_back(deps[0]);
        graph_->kernel_functions_.push_back(static_cast<CudaFunction &>(fn).function);
        graph_->kernel_names_.push_back(kernel_name);
    }

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
    /// The graph being captured (capture_ points to it).
    std::shared_ptr<Graph> graph_;
    int priority_;
    bool user_;
};

std::unique_ptr<BackendGraphExec> CudaStream::Graph::instantiate() {
    // An empty graph runs nothing: it needs no CUgraphExec.
    if (num_nodes() == 0) return std::make_unique<GraphExec>(dev_, nullptr, *this);
    ScopedCurrent current(*dev_->ctx);
    cu::CUgraphExec exec = nullptr;
    dev_->drv.check(dev_->drv.cuGraphInstantiateWithFlags(&exec, graph_, 0), "cuGraphInstantiateWithFlags",
                    " on " + dev_->ctx->where());
    return std::make_unique<GraphExec>(dev_, exec, *this);
}

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
        // [Note] CUDA and fork: in a child, the helper thread and the driver's state are the
        // parent's; nothing is joined, freed or written there (members release nothing either).
        if (CudaDriver::is_forked_child()) [[unlikely]] {
            if (helper_.joinable()) helper_.detach();
            return;
        }
        // The preloading helper first ([Note] Preload): it uses this back end until joined.
        {
            std::lock_guard<std::mutex> lock(preload_mutex_);
            preload_stop_ = true;
        }
        if (helper_.joinable()) helper_.join();
        preload_.clear(); // unloads the modules no kernel took
        if (program_context_) {
            try {
                store_used_list();
            } catch (...) { // the list is an optimisation: never an error in a destructor
            }
        }
        free_deferred();
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
        free_deferred();
        // Stream-ordered only while the default stream is the only one ([Note] Streams), and
        // not while it captures a graph (the allocation would become a node of the graph).
        const bool pooled = use_pools_ && !state_->had_user_streams && !default_stream_->capture_graph();
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
        if (state_->capturing > 0) {
            // A free must neither become a node of a graph nor wait for a capturing stream
            // ([Note] Graphs in BackendGraph.h): later.
            try {
                std::lock_guard<std::mutex> lock(state_->deferred_mutex);
                state_->deferred_frees.push_back(p);
                return;
            } catch (const std::bad_alloc &) {
                // No memory to defer it: free it now, as outside a capture.
            }
        }
        free_deferred();
        free_now(p);
    }

    /// Frees what deallocate deferred during a capture, once no stream captures.
    void free_deferred() noexcept {
        if (state_->capturing > 0) return;
        std::vector<DeviceAddress> frees;
        {
            std::lock_guard<std::mutex> lock(state_->deferred_mutex);
            frees.swap(state_->deferred_frees);
        }
        for (DeviceAddress p : frees) free_now(p);
    }

    void free_now(DeviceAddress p) noexcept {
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

    // Device information and context limits.
    bool query_attribute(DeviceAttribute attribute, int &value) override {
        cu::CUresult rc = drv_.cuDeviceGetAttribute(&value, static_cast<int>(attribute), dev_);
        // The driver's answer for an attribute newer than itself.
        if (rc == cu::CUDA_ERROR_INVALID_VALUE) return false;
        drv_.check(rc, "cuDeviceGetAttribute",
                   std::string(" reading attribute '") + std::string(to_string(attribute)) + "' of " +
                       ctx_->where());
        return true;
    }

    int driver_version() override { return drv_.version(); }

    int api_version() override {
        unsigned version = 0;
        drv_.check(drv_.cuCtxGetApiVersion(ctx_->handle(), &version), "cuCtxGetApiVersion",
                   " on " + ctx_->where());
        return static_cast<int>(version);
    }

    std::pair<size_t, size_t> memory_info() override {
        ScopedCurrent current(*ctx_);
        size_t free_bytes = 0, total_bytes = 0;
        drv_.check(drv_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo", " on " + ctx_->where());
        return {free_bytes, total_bytes};
    }

    size_t total_memory() override {
        size_t bytes = 0;
        drv_.check(drv_.cuDeviceTotalMem(&bytes, dev_), "cuDeviceTotalMem", " of " + ctx_->where());
        return bytes;
    }

    std::string pci_bus_id() override {
        // "dddd:bb:dd.f" and a NUL; the documentation asks for 13 bytes at least.
        char id[64] = {};
        drv_.check(drv_.cuDeviceGetPCIBusId(id, int(sizeof id) - 1, dev_), "cuDeviceGetPCIBusId",
                   " of " + ctx_->where());
        return id;
    }

    size_t get_limit(Limit limit) override {
        ScopedCurrent current(*ctx_);
        size_t value = 0;
        drv_.check(drv_.cuCtxGetLimit(&value, static_cast<int>(limit)), "cuCtxGetLimit",
                   std::string(" reading ") + std::string(to_string(limit)) + " of " + ctx_->where());
        return value;
    }

    void set_limit(Limit limit, size_t value) override {
        // The primary context's limit: every DeviceContext of this device (and the CUDA runtime's
        // code in this process) sees it.
        ScopedCurrent current(*ctx_);
        cu::CUresult rc = drv_.cuCtxSetLimit(static_cast<int>(limit), value);
        if (rc == cu::CUDA_SUCCESS) return;
        std::string context = std::string(" setting ") + std::string(to_string(limit)) + " to " +
                              format_bytes(value) + " on " + ctx_->where();
        if (rc == cu::CUDA_ERROR_INVALID_VALUE && limit == Limit::printf_fifo_size)
            context += "; CUDA accepts a new printf_fifo_size only before the first launch of a kernel "
                       "that prints (print(...)) in this process";
        else if (rc == cu::CUDA_ERROR_INVALID_VALUE && limit == Limit::malloc_heap_size)
            context += "; CUDA accepts a new malloc_heap_size only before the first launch of a kernel "
                       "that allocates device memory in this process";
        drv_.raise(rc, "cuCtxSetLimit failed", context);
    }

    // Memory: memset, views, mapping, host and managed memory.
    DeviceAddress allocate_managed(size_t bytes, unsigned flags) override {
        EMBER_ASSERT(bytes > 0, "CudaBackend::allocate_managed of 0 bytes");
        ScopedCurrent current(*ctx_);
        cu::CUdeviceptr p = 0;
        cu::CUresult rc = drv_.cuMemAllocManaged(&p, bytes, flags);
        if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY)
            drv_.raise(rc, "cuMemAllocManaged failed", out_of_memory_context(bytes) + " (managed memory)");
        drv_.check(rc, "cuMemAllocManaged", "; requested " + format_bytes(bytes) + " of managed memory on " +
                                                ctx_->where());
        // Freed by deallocate with cuMemFree, as the immediate allocations.
        std::lock_guard<std::mutex> lock(immediate_mutex_);
        immediate_.insert(p);
        return p;
    }

    void *allocate_host_mapped(size_t bytes, DeviceAddress *device) override {
        EMBER_ASSERT(bytes > 0, "CudaBackend::allocate_host_mapped of 0 bytes");
        ScopedCurrent current(*ctx_);
        void *p = nullptr;
        cu::CUresult rc =
            drv_.cuMemHostAlloc(&p, bytes, cu::CU_MEMHOSTALLOC_DEVICEMAP | cu::CU_MEMHOSTALLOC_PORTABLE);
        drv_.check(rc, "cuMemHostAlloc",
                   "; requested " + format_bytes(bytes) + " of mapped page-locked host memory for " +
                       ctx_->where());
        cu::CUdeviceptr d = 0;
        rc = drv_.cuMemHostGetDevicePointer(&d, p, 0);
        if (rc != cu::CUDA_SUCCESS) {
            drv_.log_if_error(drv_.cuMemFreeHost(p), "cuMemFreeHost");
            drv_.check(rc, "cuMemHostGetDevicePointer", " for mapped host memory on " + ctx_->where());
        }
        *device = d;
        return p;
    }

    DeviceAddress register_host(void *p, size_t bytes) override {
        ScopedCurrent current(*ctx_);
        drv_.check(drv_.cuMemHostRegister(p, bytes, cu::CU_MEMHOSTREGISTER_PORTABLE | cu::CU_MEMHOSTREGISTER_DEVICEMAP),
                   "cuMemHostRegister",
                   "; registering " + format_bytes(bytes) + " of host memory at " +
                       hex(reinterpret_cast<uintptr_t>(p)) + " with " + ctx_->where());
        cu::CUdeviceptr d = 0;
        cu::CUresult rc = drv_.cuMemHostGetDevicePointer(&d, p, 0);
        if (rc != cu::CUDA_SUCCESS) {
            drv_.log_if_error(drv_.cuMemHostUnregister(p), "cuMemHostUnregister");
            drv_.check(rc, "cuMemHostGetDevicePointer", " for registered host memory on " + ctx_->where());
        }
        return d;
    }

    void unregister_host(void *p) override {
        ScopedCurrent current(*ctx_);
        drv_.check(drv_.cuMemHostUnregister(p), "cuMemHostUnregister",
                   "; unregistering host memory at " + hex(reinterpret_cast<uintptr_t>(p)) + " from " +
                       ctx_->where());
    }

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
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
        set_pool_access(*other, cu::CU_MEM_ACCESS_FLAGS_PROT_READWRITE, " giving ");
    }

    /// Gives this device (`flags`: read-write) or takes from it (0) access to `other`'s default
    /// memory pool, where its stream-ordered allocations live.
    void set_pool_access(CudaBackend &other, int flags, const char *verb) {
        if (!other.use_pools_ || !drv_.cuDeviceGetDefaultMemPool || !drv_.cuMemPoolSetAccess) return;
        cu::CUmemoryPool pool = nullptr;
        drv_.check(drv_.cuDeviceGetDefaultMemPool(&pool, other.dev_), "cuDeviceGetDefaultMemPool",
                   " of " + other.ctx_->where());
        cu::CUmemAccessDesc desc{};
        desc.location.type = cu::CU_MEM_LOCATION_TYPE_DEVICE;
        desc.location.id = device_id_;
        desc.flags = flags;
        drv_.check(drv_.cuMemPoolSetAccess(pool, &desc, 1), "cuMemPoolSetAccess",
                   verb + ctx_->where() + " access to the memory pool of " + other.ctx_->where());
    }

    void disable_peer_access(Backend &peer) override {
        auto *other = dynamic_cast<CudaBackend *>(&peer);
        if (!other || other->dev_ == dev_) return; // never enabled: nothing to undo
        ScopedCurrent current(*ctx_);
        cu::CUresult rc = drv_.cuCtxDisablePeerAccess(other->ctx_->handle());
        constexpr cu::CUresult peer_access_not_enabled = 705;
        if (rc == peer_access_not_enabled) return;
        drv_.check(rc, "cuCtxDisablePeerAccess", " from " + ctx_->where() + " to " + other->ctx_->where());
        set_pool_access(*other, /*CU_MEM_ACCESS_FLAGS_PROT_NONE*/ 0, " taking from ");
    }


    // Function attributes, launch attributes, clusters, occupancy.

    int function_attribute(LoadedFunction &fn, int attr, const KernelFacts &) override {
        ScopedCurrent current(*ctx_);
        int value = 0;
        drv_.check(drv_.cuFuncGetAttribute(&value, attr, static_cast<CudaFunction &>(fn).function),
                   "cuFuncGetAttribute", " reading attribute " + std::to_string(attr) + " on " + ctx_->where());
        return value;
    }
    void set_function_attribute(LoadedFunction &fn, int attr, int value) override {
        ScopedCurrent current(*ctx_);
        drv_.check(drv_.cuFuncSetAttribute(static_cast<CudaFunction &>(fn).function, attr, value),
                   "cuFuncSetAttribute",
                   " setting attribute " + std::to_string(attr) + " to " + std::to_string(value) + " on " +
                       ctx_->where());
    }
    void set_cache_config(LoadedFunction &fn, int config) override {
        ScopedCurrent current(*ctx_);
        drv_.check(drv_.cuFuncSetCacheConfig(static_cast<CudaFunction &>(fn).function, config),
                   "cuFuncSetCacheConfig", " on " + ctx_->where());
    }
    int max_active_blocks_per_multiprocessor(LoadedFunction &fn, int block_size, size_t dynamic_shared,
                                             const KernelFacts &) override {
        ScopedCurrent current(*ctx_);
        int blocks = 0;
        drv_.check(drv_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, static_cast<CudaFunction &>(fn).function,
                                                                     block_size, dynamic_shared),
                   "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                   " (block size " + std::to_string(block_size) + ", " + std::to_string(dynamic_shared) +
                       " bytes of dynamic shared memory) on " + ctx_->where());
        return blocks;
    }
    std::pair<int, int> suggested_block_size(LoadedFunction &fn, size_t dynamic_shared, int block_size_limit,
                                             const KernelFacts &) override {
        ScopedCurrent current(*ctx_);
        int min_grid = 0, block = 0;
        drv_.check(drv_.cuOccupancyMaxPotentialBlockSize(&min_grid, &block, static_cast<CudaFunction &>(fn).function,
                                                          nullptr, dynamic_shared, block_size_limit),
                   "cuOccupancyMaxPotentialBlockSize",
                   " (" + std::to_string(dynamic_shared) + " bytes of dynamic shared memory) on " + ctx_->where());
        return {min_grid, block};
    }
    int device_attribute_value(int attr, const char *what) {
        int value = 0;
        drv_.check(drv_.cuDeviceGetAttribute(&value, attr, dev_), "cuDeviceGetAttribute",
                   std::string(" reading the ") + what + " of " + ctx_->where());
        return value;
    }
    int64_t max_shared_memory_per_block_optin() override {
        return device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                      "opt-in shared memory per block");
    }
    int multiprocessor_count() override {
        return device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
    }
    bool supports_cluster_launch() override {
        // Drivers older than CUDA 11.8 do not know the attribute: no clusters then.
        int value = 0;
        if (drv_.cuDeviceGetAttribute(&value, cu::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev_) != cu::CUDA_SUCCESS)
            return false;
        return value != 0 && drv_.cuLaunchKernelEx;
    }
    bool supports_cooperative_launch() override {
        return device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, "cooperative launch support") != 0;
    }

    // Constant memory and external modules.

    /// A CUmodule loaded from an external image; unloaded when the last DeviceModule and
    /// DeviceFunction of it go away.
    class CudaModule final : public LoadedModule {
    public:
        CudaModule(std::shared_ptr<const CudaPrimaryContext> ctx, cu::CUmodule m) : ctx_(std::move(ctx)), module_(m) {}
        ~CudaModule() override {
            const CudaDriver &drv = ctx_->driver();
            ScopedCurrent current(*ctx_, std::nothrow);
            if (current.ok()) drv.log_if_error(drv.cuModuleUnload(module_), "cuModuleUnload", " on " + ctx_->where());
        }
        CudaModule(const CudaModule &) = delete;
        CudaModule &operator=(const CudaModule &) = delete;

        std::unique_ptr<LoadedFunction> function(const std::string &name) override {
            const CudaDriver &drv = ctx_->driver();
            ScopedCurrent current(*ctx_);
            cu::CUfunction f = nullptr;
            cu::CUresult rc = drv.cuModuleGetFunction(&f, module_, name.c_str());
            if (rc == cu::CUDA_ERROR_NOT_FOUND) return nullptr;
            drv.check(rc, "cuModuleGetFunction", " looking up '" + name + "' on " + ctx_->where());
            // The module is this object's: the function does not unload it.
            auto fn = std::make_unique<CudaFunction>(ctx_, nullptr);
            fn->function = f;
            return fn;
        }
        std::pair<DeviceAddress, size_t> global(const std::string &name) override {
            const CudaDriver &drv = ctx_->driver();
            ScopedCurrent current(*ctx_);
            cu::CUdeviceptr p = 0;
            size_t bytes = 0;
            cu::CUresult rc = drv.cuModuleGetGlobal(&p, &bytes, module_, name.c_str());
            if (rc == cu::CUDA_ERROR_NOT_FOUND) return {0, 0};
            drv.check(rc, "cuModuleGetGlobal", " looking up '" + name + "' on " + ctx_->where());
            return {p, bytes};
        }
        std::vector<std::string> function_names() override {
            const CudaDriver &drv = ctx_->driver();
            std::vector<std::string> names;
            if (!drv.cuModuleGetFunctionCount || !drv.cuModuleEnumerateFunctions || !drv.cuFuncGetName) return names;
            ScopedCurrent current(*ctx_, std::nothrow);
            unsigned count = 0;
            if (!current.ok() || drv.cuModuleGetFunctionCount(&count, module_) != cu::CUDA_SUCCESS) return names;
            std::vector<cu::CUfunction> fns(count);
            if (count == 0 || drv.cuModuleEnumerateFunctions(fns.data(), count, module_) != cu::CUDA_SUCCESS)
                return names;
            for (cu::CUfunction f : fns) {
                const char *n = nullptr;
                if (drv.cuFuncGetName(&n, f) == cu::CUDA_SUCCESS && n) names.emplace_back(n);
            }
            return names;
        }

    private:
        std::shared_ptr<const CudaPrimaryContext> ctx_;
        cu::CUmodule module_;
    };

    std::shared_ptr<LoadedModule> load_module(int format, const std::string &bytes, const std::string &name) override {
        ScopedCurrent current(*ctx_);
        std::string info_log(jit_log_bytes, '\0'), error_log(jit_log_bytes, '\0');
        cu::CUjit_option options[] = {
            cu::CU_JIT_INFO_LOG_BUFFER,  cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        };
        void *values[] = {
            info_log.data(),
            reinterpret_cast<void *>(uintptr_t(info_log.size() - 1)),
            error_log.data(),
            reinterpret_cast<void *>(uintptr_t(error_log.size() - 1)),
        };
        static_assert(std::size(options) == std::size(values));
        cu::CUmodule module = nullptr;
        // A PTX image must be NUL-terminated (c_str() is); cubins and fatbins carry their size.
        cu::CUresult rc = drv_.cuModuleLoadDataEx(&module, bytes.c_str(), unsigned(std::size(options)), options, values);
        if (rc != cu::CUDA_SUCCESS) {
            CudaErrorClass c = cuda_error_class(rc);
            if (c == CudaErrorClass::Memory || c == CudaErrorClass::Launch)
                drv_.raise(rc, "cuModuleLoadDataEx failed", " loading module '" + name + "' on " + ctx_->where());
            static const char *const kinds[] = {"PTX", "cubin", "fatbin"};
            std::string summary = "module '" + name + "': the CUDA driver rejected the " +
                                  (format >= 0 && format < 3 ? kinds[format] : "image") + " for " +
                                  ctx_->where() + ", which is " + target_.to_string() + " (" + drv_.error_name(rc) + ")";
            if (rc == cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
                summary += "; the PTX ISA version is newer than this driver (CUDA " +
                           std::to_string(drv_.version() / 1000) + "." + std::to_string(drv_.version() % 1000 / 10) +
                           ") accepts";
            std::string log = log_text(error_log);
            std::string info = log_text(info_log);
            if (!info.empty()) log += (log.empty() ? "" : "\n") + info;
            if (log.empty()) {
                std::string desc = drv_.error_string(rc);
                log = "(no JIT log) " + drv_.error_name(rc) + (desc.empty() ? "" : ": " + desc);
            }
            throw CompileError(summary, std::move(log));
        }
        return std::make_shared<CudaModule>(ctx_, module);
    }

    // Graphs.

    std::unique_ptr<LoadedFunction> load(const CompiledKernel &k, const detail::CacheKey *image_base) override {
        if (k.target.arch != Arch::NVPTX)
            throw LogicError("kernel '" + k.kernel_name + "' was compiled for " +
                             k.target.to_string() + ", but " + ctx_->where() + " needs " +
                             target_.to_string());
        ScopedCurrent current(*ctx_);
        // The compile cache's image levels ([Note] Compile cache): the PTX is linked by the driver
        // into a cubin for this device (the JIT runs once), kept in the cache under the artefact's
        // key plus the driver and arch, and loaded; a later compile of the same kernel (this
        // process or another) loads the cubin through load_image without any PTX. Any failure of
        // this path falls back to loading the PTX below, which reports errors with the JIT log.
        if (image_base)
            if (std::unique_ptr<LoadedFunction> fn = link_and_load(k, *image_base)) return fn;
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
            // Verbose: ptxas writes "Used N registers" and spill bytes to the info log (CompileReport).
            reinterpret_cast<void *>(uintptr_t(1)),
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
        fn->jit_info_log = log_text(info_log);
        drv_.check(drv_.cuModuleGetFunction(&fn->function, module, k.entry_symbol.c_str()),
                   "cuModuleGetFunction",
                   "; the PTX of kernel '" + k.kernel_name + "' has no entry point '" +
                       k.entry_symbol + "'");
        return fn;
    }

    bool has_images() const override { return linker_available(); }

    std::unique_ptr<LoadedFunction> load_image(const detail::CacheKey &base, const CompiledKernel &meta,
                                               const char **level) override {
        if (meta.target.arch != Arch::NVPTX || !linker_available()) return nullptr;
        ScopedCurrent current(*ctx_);
        auto start = std::chrono::steady_clock::now();
        const detail::CacheKey image = cubin_key(base);
        std::shared_ptr<const std::string> bytes;
        std::unique_ptr<CudaFunction> fn = take_preloaded(image.digest, meta, bytes);
        if (fn) {
            detail::CompileCache::instance().note_preloaded_image(base, image, "cubin", meta.kernel_name,
                                                                  std::move(bytes), level);
        } else {
            std::shared_ptr<const std::string> cubin =
                detail::CompileCache::instance().find_image(base, image, "cubin", meta.kernel_name, level);
            if (!cubin) return nullptr;
            fn = load_cubin(*cubin, meta);
            if (!fn) return nullptr;
        }
        fn->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        record_use(image.digest, meta.entry_symbol);
        return fn;
    }

    /// Makes this back end's context current on the calling thread if it has none (as every
    /// method does through ScopedCurrent), for a back end made on another thread.
    void make_current_here() { ScopedCurrent current(*ctx_); }

    /// Takes ownership of the thread that made this back end and may still preload into it
    /// ([Note] Preload); the destructor stops and joins it.
    void adopt_helper(std::thread helper) { helper_ = std::move(helper); }

    /// Makes this back end the process's first CUDA context ([Note] Preload): it will take the
    /// images of `plan` made for this device and driver (run_preload loads them), record the
    /// images it uses and store them as the program's list when destroyed.
    void set_preload(const PreloadPlan &plan) {
        const std::string arch = target_.cpu, driver = std::to_string(drv_.version());
        std::lock_guard<std::mutex> lock(preload_mutex_);
        program_context_ = true;
        list_as_read_ = plan.items;
        preload_disk_ = plan.disk;
        for (size_t i = 0; i < plan.items.size(); ++i) {
            const PreloadItem &item = plan.items[i];
            if (!plan.bytes[i] || item.arch != arch || item.driver != driver || preload_index_.count(item.digest))
                continue;
            preload_index_.emplace(item.digest, preload_.size());
            preload_.push_back(Preloaded{item.digest, item.symbol, plan.bytes[i], Preloaded::Pending, nullptr});
        }
    }

    /// Loads the images set_preload kept, in order, on the calling thread (the helper that made
    /// the back end), publishing each for take_preloaded; returns when done or when the
    /// destructor asks. A failure leaves that kernel to the usual path.
    void run_preload() {
        ScopedCurrent current(*ctx_);
        for (size_t i = 0;; ++i) {
            std::shared_ptr<const std::string> bytes;
            std::string symbol;
            {
                std::lock_guard<std::mutex> lock(preload_mutex_);
                if (preload_stop_ || i >= preload_.size()) return;
                if (preload_[i].state != Preloaded::Pending) continue;
                preload_[i].state = Preloaded::Loading;
                bytes = preload_[i].bytes;
                symbol = preload_[i].symbol;
            }
            std::unique_ptr<CudaFunction> fn;
            cu::CUmodule module = nullptr;
            if (drv_.cuModuleLoadDataEx(&module, bytes->data(), 0, nullptr, nullptr) == cu::CUDA_SUCCESS) {
                fn = std::make_unique<CudaFunction>(ctx_, module);
                if (drv_.cuModuleGetFunction(&fn->function, module, symbol.c_str()) != cu::CUDA_SUCCESS) fn.reset();
            }
            {
                std::lock_guard<std::mutex> lock(preload_mutex_);
                preload_[i].state = fn ? Preloaded::Loaded : Preloaded::Failed;
                preload_[i].fn = std::move(fn);
            }
            preload_cv_.notify_all();
        }
    }

private:
    bool linker_available() const {
        return drv_.cuLinkCreate && drv_.cuLinkAddData && drv_.cuLinkComplete && drv_.cuLinkDestroy;
    }

    /// A preloaded image of digest `digest` for kernel `k` ([Note] Preload): the function the
    /// helper loaded (waiting while it loads it), else, if the helper has not reached it, the
    /// image loaded now from the preloaded bytes; null when there is none (or it failed, or was
    /// taken already), or the compile cache no longer uses the disk cache it came from. `bytes`
    /// receives the image's bytes on success. The current context is set.
    std::unique_ptr<CudaFunction> take_preloaded(const std::string &digest, const CompiledKernel &k,
                                                 std::shared_ptr<const std::string> &bytes) {
        std::unique_lock<std::mutex> lock(preload_mutex_);
        if (preload_.empty()) return nullptr;
        auto it = preload_index_.find(digest);
        if (it == preload_index_.end()) return nullptr;
        Preloaded &p = preload_[it->second];
        if (p.symbol != k.entry_symbol) return nullptr;
        preload_cv_.wait(lock, [&] { return p.state != Preloaded::Loading; });
        if (p.state == Preloaded::Failed || p.state == Preloaded::Taken) return nullptr;
        DiskCache *from = preload_disk_;
        lock.unlock();
        if (detail::CompileCache::instance().disk() != from) return nullptr;
        lock.lock();
        if (p.state == Preloaded::Loaded) {
            p.state = Preloaded::Taken;
            bytes = p.bytes;
            return std::move(p.fn);
        }
        if (p.state != Preloaded::Pending) return nullptr; // taken by another thread meanwhile
        p.state = Preloaded::Taken;
        bytes = p.bytes;
        lock.unlock();
        std::unique_ptr<CudaFunction> fn = load_cubin(*bytes, k);
        if (!fn) bytes.reset();
        return fn;
    }

    /// Records that this context loaded the image `digest` (first use only), for the program's
    /// preload list.
    void record_use(const std::string &digest, const std::string &symbol) {
        if (!program_context_) return;
        std::lock_guard<std::mutex> lock(preload_mutex_);
        if (used_.size() >= kMaxPreload || !used_digests_.insert(digest).second) return;
        used_.push_back(PreloadItem{digest, target_.cpu, std::to_string(drv_.version()), symbol});
    }

    /// Stores the images this context used as the program's preload list, when they differ
    /// from the list read at its start and the compile cache still uses the disk it was read
    /// from.
    void store_used_list() {
        std::lock_guard<std::mutex> lock(preload_mutex_);
        if (used_.empty() || used_ == list_as_read_) return;
        DiskCache *disk = detail::CompileCache::instance().disk();
        if (!disk || disk != preload_disk_) return;
        write_preload_list(*disk, used_);
    }

    /// The image key of the artefact key `base` on this device: the driver decides the cubin too.
    detail::CacheKey cubin_key(const detail::CacheKey &base) const {
        return image_key(base, std::to_string(drv_.version()), target_.cpu);
    }

    /// A module of `cubin` and its kernel `k.entry_symbol`; null when the driver refuses the cubin
    /// (the caller then goes the PTX way, which reports the error). The current context is set.
    std::unique_ptr<CudaFunction> load_cubin(const std::string &cubin, const CompiledKernel &k) {
        cu::CUmodule module = nullptr;
        if (drv_.cuModuleLoadDataEx(&module, cubin.data(), 0, nullptr, nullptr) != cu::CUDA_SUCCESS) return nullptr;
        auto fn = std::make_unique<CudaFunction>(ctx_, module); // unloads the module if we throw
        if (cu::CUresult rc = drv_.cuModuleGetFunction(&fn->function, module, k.entry_symbol.c_str());
            rc != cu::CUDA_SUCCESS)
            drv_.check(rc, "cuModuleGetFunction",
                       "; the cubin of kernel '" + k.kernel_name + "' has no entry point '" + k.entry_symbol + "'");
        return fn;
    }

    /// The image path of load(): links the PTX of `k` into a cubin, keeps it in the compile cache
    /// under `base`'s image key and loads it; null when the linker is unavailable or any step
    /// fails. The link's verbose log (registers, spills) becomes the function's jit_info_log.
    std::unique_ptr<LoadedFunction> link_and_load(const CompiledKernel &k, const detail::CacheKey &base) {
        if (!linker_available()) return nullptr;
        auto start = std::chrono::steady_clock::now();
        std::string info_log;
        std::optional<std::string> cubin = link_cubin(k, info_log);
        if (!cubin) return nullptr;
        auto bytes = std::make_shared<const std::string>(std::move(*cubin));
        std::unique_ptr<CudaFunction> fn = load_cubin(*bytes, k);
        if (!fn) return nullptr;
        const detail::CacheKey image = cubin_key(base);
        detail::CompileCache::instance().store_image(image, "cubin", std::move(bytes));
        record_use(image.digest, k.entry_symbol);
        fn->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fn->jit_info_log = std::move(info_log);
        return fn;
    }

    /// Links the PTX of `k` into a cubin for the current context's device (cuLink*); nullopt on
    /// any failure. `info_log` receives ptxas's verbose log (as the PTX load's, for reports).
    std::optional<std::string> link_cubin(const CompiledKernel &k, std::string &info_log) {
        std::string info(jit_log_bytes, '\0');
        cu::CUjit_option options[] = {cu::CU_JIT_INFO_LOG_BUFFER, cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                      cu::CU_JIT_LOG_VERBOSE};
        void *values[] = {info.data(), reinterpret_cast<void *>(uintptr_t(info.size() - 1)),
                          reinterpret_cast<void *>(uintptr_t(1))};
        static_assert(std::size(options) == std::size(values));
        cu::CUlinkState state = nullptr;
        if (drv_.cuLinkCreate(unsigned(std::size(options)), options, values, &state) != cu::CUDA_SUCCESS || !state)
            return std::nullopt;
        std::optional<std::string> out;
        // Size including the terminating NUL, as the CUDA samples (ptxjit) pass it.
        if (drv_.cuLinkAddData(state, cu::CU_JIT_INPUT_PTX, const_cast<char *>(k.binary.c_str()),
                               k.binary.size() + 1, k.kernel_name.c_str(), 0, nullptr,
                               nullptr) == cu::CUDA_SUCCESS) {
            void *image = nullptr;
            size_t size = 0;
            // The image belongs to the link state: copy it before cuLinkDestroy.
            if (drv_.cuLinkComplete(state, &image, &size) == cu::CUDA_SUCCESS && image && size)
                out.emplace(static_cast<const char *>(image), size);
        }
        drv_.cuLinkDestroy(state);
        if (out) info_log = log_text(info);
        return out;
    }

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

    /// [Note] Preload. An image of the program's list, as the helper loads it.
    struct Preloaded {
        std::string digest, symbol;
        std::shared_ptr<const std::string> bytes;
        enum State { Pending, Loading, Loaded, Failed, Taken } state;
        std::unique_ptr<CudaFunction> fn; ///< Loaded: the module and its kernel
    };
    std::mutex preload_mutex_; ///< guards everything below but helper_
    std::condition_variable preload_cv_;
    std::vector<Preloaded> preload_;
    std::unordered_map<std::string, size_t> preload_index_; ///< digest -> preload_ index
    DiskCache *preload_disk_ = nullptr;                      ///< where the list and images came from
    bool preload_stop_ = false;
    std::thread helper_; ///< the thread that made this back end and preloads; joined first
    /// The process's first CUDA context: records the images it uses (first use, in order) and
    /// stores them as the program's list when it is destroyed.
    bool program_context_ = false;
    std::vector<PreloadItem> list_as_read_, used_;
    std::unordered_set<std::string> used_digests_;
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

std::pair<DeviceAddress, size_t> CudaFunction::global(const std::string &symbol) {
    const CudaDriver &drv = ctx_->driver();
    ScopedCurrent current(*ctx_);
    cu::CUdeviceptr address = 0;
    size_t bytes = 0;
    cu::CUresult rc = drv.cuModuleGetGlobal(&address, &bytes, module_, symbol.c_str());
    if (rc == cu::CUDA_ERROR_NOT_FOUND) return {0, 0};
    drv.check(rc, "cuModuleGetGlobal", " looking up the global '" + symbol + "' on " + ctx_->where());
    return {static_cast<DeviceAddress>(address), bytes};
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
                        backend->set_preload(*start->plan);
                        preload = !start->plan->items.empty();
                        start->plan.reset(); // the back end keeps what it needs
                    }
                    start->backend = std::move(made);
                    start->error = error;
                    start->made = true;
                }
                start->cv.notify_all();
                // Still warm from making the context: load the program's kernels now.
                if (preload) backend->run_preload();
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
            if (DiskCache *disk = CompileCache::instance().disk()) *plan = read_preload_plan(*disk);
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

int cuda_device_count() noexcept {
    const CudaDriver *drv = CudaDriver::try_get();
    if (!drv) return 0;
    int count = 0;
    if (drv->cuDeviceGetCount(&count) != cu::CUDA_SUCCESS) return 0;
    return count;
}

} // namespace ember::detail
