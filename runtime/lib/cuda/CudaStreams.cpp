/// \file
/// The CUDA back end's streams and events (classes in CudaBackend.h): CudaEvent, CudaStream's
/// copies, launches and synchronisation, the fault context the streams share, and
/// CudaBackend::create_stream.
#include "cuda/CudaBackend.h"

#include "ember/Error.h"

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace ember::detail {

CudaEvent::CudaEvent(std::shared_ptr<const CudaPrimaryContext> ctx, const EventOptions &o)
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

CudaEvent::~CudaEvent() {
    ScopedCurrent current(*ctx_, std::nothrow);
    if (current.ok()) ctx_->driver().log_if_error(ctx_->driver().cuEventDestroy(event_), "cuEventDestroy");
}

bool CudaEvent::query() {
    const CudaDriver &drv = ctx_->driver();
    ScopedCurrent current(*ctx_);
    cu::CUresult rc = drv.cuEventQuery(event_);
    if (rc == cu::CUDA_ERROR_NOT_READY) return false;
    drv.check(rc, "cuEventQuery", " on " + ctx_->where());
    return true;
}

void CudaEvent::synchronize() {
    const CudaDriver &drv = ctx_->driver();
    ScopedCurrent current(*ctx_);
    drv.check(drv.cuEventSynchronize(event_), "cuEventSynchronize",
              " on " + ctx_->where() + "; the failure comes from work recorded before the event");
}

float CudaEvent::elapsed_ms_since(BackendEvent &start_event) {
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

std::string CudaDeviceState::fault_context(cu::CUresult rc) const {
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

std::string CudaDeviceState::copy_context(size_t bytes, const char *direction, DeviceAddress device) const {
    return "; copying " + cuda_format_bytes(bytes) + " " + direction + " on " + ctx->where() +
           " (device address " + cuda_hex(device) + ")";
}

CudaStream::CudaStream(std::shared_ptr<CudaDeviceState> dev, int priority, bool user)
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

CudaStream::~CudaStream() {
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

void CudaStream::copy_to_device(DeviceAddress dst, const void *src, size_t bytes) {
    if (bytes == 0) return;
    ScopedCurrent current(*dev_->ctx);
    cu::CUresult rc = dev_->drv.cuMemcpyHtoDAsync(dst, src, bytes, stream_);
    if (rc != cu::CUDA_SUCCESS)
        dev_->drv.check(rc, "cuMemcpyHtoDAsync",
                        dev_->copy_context(bytes, "host to device", dst) + dev_->fault_context(rc));
}

void CudaStream::copy_from_device(void *dst, DeviceAddress src, size_t bytes) {
    if (bytes == 0) return;
    ScopedCurrent current(*dev_->ctx);
    cu::CUresult rc = dev_->drv.cuMemcpyDtoHAsync(dst, src, bytes, stream_);
    if (rc != cu::CUDA_SUCCESS)
        dev_->drv.check(rc, "cuMemcpyDtoHAsync",
                        dev_->copy_context(bytes, "device to host", src) + dev_->fault_context(rc));
}

void CudaStream::copy_device_to_device(DeviceAddress dst, DeviceAddress src, size_t bytes) {
    if (bytes == 0) return;
    ScopedCurrent current(*dev_->ctx);
    cu::CUresult rc = dev_->drv.cuMemcpyDtoDAsync(dst, src, bytes, stream_);
    if (rc != cu::CUDA_SUCCESS)
        dev_->drv.check(rc, "cuMemcpyDtoDAsync",
                        dev_->copy_context(bytes, "device to device", src) + " to " + cuda_hex(dst) +
                            dev_->fault_context(rc));
}

void CudaStream::launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &d, void **args,
                        size_t /*num_args*/) {
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
    std::string context = "; grid " + cuda_dims(d.grid) + ", block " + cuda_dims(d.block) + ", " +
                          std::to_string(d.shared_mem_bytes) +
                          " bytes of dynamic shared memory, on " + dev_->ctx->where();
    if (rc == cu::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
        context += "; a block of this size needs more registers than the device has: launch "
                   "fewer threads per block";
    context += dev_->fault_context(rc);
    dev_->drv.raise(rc, "launch of kernel '" + kernel_name + "' failed", context);
}

void CudaStream::record(BackendEvent &e) {
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

void CudaStream::wait(BackendEvent &e) {
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

void CudaStream::synchronize() {
    ScopedCurrent current(*dev_->ctx);
    cu::CUresult rc = dev_->drv.cuStreamSynchronize(stream_);
    if (rc != cu::CUDA_SUCCESS)
        dev_->drv.check(rc, "cuStreamSynchronize",
                        " on " + dev_->ctx->where() +
                            "; the failure comes from a kernel or copy enqueued since the last "
                            "synchronize" +
                            dev_->fault_context(rc));
    dev_->forget_launches();
    if (dev_->print_buffer) dev_->drain_prints(stream_); // [Note] Print buffer
}

bool CudaStream::is_done() {
    ScopedCurrent current(*dev_->ctx);
    cu::CUresult rc = dev_->drv.cuStreamQuery(stream_);
    if (rc == cu::CUDA_ERROR_NOT_READY) return false;
    if (rc != cu::CUDA_SUCCESS)
        dev_->drv.check(rc, "cuStreamQuery", " on " + dev_->ctx->where() + dev_->fault_context(rc));
    return true;
}

std::shared_ptr<BackendStream> CudaBackend::create_stream(int priority) {
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

} // namespace ember::detail
