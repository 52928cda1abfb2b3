/// \file
/// The CUDA back end's memory (classes in CudaBackend.h): device allocations (stream-ordered
/// pools, immediate ones, frees deferred during a capture), page-locked, mapped, managed and
/// registered host memory, memset, pitched 2-D/3-D copies, copies between devices, IPC and peer
/// access.
#include "cuda/CudaBackend.h"
#include "cuda/CudaMemset.h"

#include "ember/Error.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace ember::detail {

DeviceAddress CudaBackend::allocate(size_t bytes) {
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
    drv_.check(rc, call, "; requested " + cuda_format_bytes(bytes) + " on " + ctx_->where());
    if (!pooled) {
        std::lock_guard<std::mutex> lock(immediate_mutex_);
        immediate_.insert(p);
    }
    return p;
}

void CudaBackend::deallocate(DeviceAddress p) noexcept {
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

void CudaBackend::free_deferred() noexcept {
    if (state_->capturing > 0) return;
    std::vector<DeviceAddress> frees;
    {
        std::lock_guard<std::mutex> lock(state_->deferred_mutex);
        frees.swap(state_->deferred_frees);
    }
    for (DeviceAddress p : frees) free_now(p);
}

void CudaBackend::free_now(DeviceAddress p) noexcept {
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

void *CudaBackend::allocate_host(size_t bytes) {
    if (bytes == 0) return nullptr;
    ScopedCurrent current(*ctx_);
    void *p = nullptr;
    cu::CUresult rc = drv_.cuMemAllocHost(&p, bytes);
    drv_.check(rc, "cuMemAllocHost",
               "; requested " + cuda_format_bytes(bytes) + " of page-locked host memory for " +
                   ctx_->where());
    return p;
}

void CudaBackend::deallocate_host(void *p) noexcept {
    if (!p) return;
    ScopedCurrent current(*ctx_, std::nothrow);
    if (!current.ok()) return;
    drv_.log_if_error(drv_.cuMemFreeHost(p), "cuMemFreeHost");
}

void CudaBackend::order_after_user_streams() noexcept {
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

std::string CudaBackend::out_of_memory_context(size_t bytes) const {
    std::string s = "; requested " + cuda_format_bytes(bytes) + " on " + ctx_->where();
    size_t free_bytes = 0, total_bytes = 0;
    if (drv_.cuMemGetInfo(&free_bytes, &total_bytes) == cu::CUDA_SUCCESS)
        s += ", which has " + cuda_format_bytes(free_bytes) + " free of " +
             cuda_format_bytes(total_bytes);
    return s;
}

// Memory: memset, views, mapping, host and managed memory.

void CudaStream::attach_managed(DeviceAddress p, unsigned flags) {
    ScopedCurrent current(*dev_->ctx);
    // Length 0: the whole allocation, as cuMemAllocManaged memory requires.
    dev_->drv.check(dev_->drv.cuStreamAttachMemAsync(stream_, p, 0, flags), "cuStreamAttachMemAsync",
                    "; attaching the managed memory at " + cuda_hex(p) + " (flags " + std::to_string(flags) +
                        ") on " + dev_->ctx->where());
}

void CudaStream::memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) {
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
                          " bytes at " + cuda_hex(dst) + " on " + dev_->ctx->where() + dev_->fault_context(rc));
    }
}

DeviceAddress CudaBackend::allocate_managed(size_t bytes, unsigned flags) {
    EMBER_ASSERT(bytes > 0, "CudaBackend::allocate_managed of 0 bytes");
    ScopedCurrent current(*ctx_);
    cu::CUdeviceptr p = 0;
    cu::CUresult rc = drv_.cuMemAllocManaged(&p, bytes, flags);
    if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY)
        drv_.raise(rc, "cuMemAllocManaged failed", out_of_memory_context(bytes) + " (managed memory)");
    drv_.check(rc, "cuMemAllocManaged", "; requested " + cuda_format_bytes(bytes) + " of managed memory on " +
                                            ctx_->where());
    // Freed by deallocate with cuMemFree, as the immediate allocations.
    std::lock_guard<std::mutex> lock(immediate_mutex_);
    immediate_.insert(p);
    return p;
}

void *CudaBackend::allocate_host_mapped(size_t bytes, DeviceAddress *device) {
    EMBER_ASSERT(bytes > 0, "CudaBackend::allocate_host_mapped of 0 bytes");
    ScopedCurrent current(*ctx_);
    void *p = nullptr;
    cu::CUresult rc =
        drv_.cuMemHostAlloc(&p, bytes, cu::CU_MEMHOSTALLOC_DEVICEMAP | cu::CU_MEMHOSTALLOC_PORTABLE);
    drv_.check(rc, "cuMemHostAlloc",
               "; requested " + cuda_format_bytes(bytes) + " of mapped page-locked host memory for " +
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

DeviceAddress CudaBackend::register_host(void *p, size_t bytes) {
    ScopedCurrent current(*ctx_);
    drv_.check(drv_.cuMemHostRegister(p, bytes, cu::CU_MEMHOSTREGISTER_PORTABLE | cu::CU_MEMHOSTREGISTER_DEVICEMAP),
               "cuMemHostRegister",
               "; registering " + cuda_format_bytes(bytes) + " of host memory at " +
                   cuda_hex(reinterpret_cast<uintptr_t>(p)) + " with " + ctx_->where());
    cu::CUdeviceptr d = 0;
    cu::CUresult rc = drv_.cuMemHostGetDevicePointer(&d, p, 0);
    if (rc != cu::CUDA_SUCCESS) {
        drv_.log_if_error(drv_.cuMemHostUnregister(p), "cuMemHostUnregister");
        drv_.check(rc, "cuMemHostGetDevicePointer", " for registered host memory on " + ctx_->where());
    }
    return d;
}

void CudaBackend::unregister_host(void *p) {
    ScopedCurrent current(*ctx_);
    drv_.check(drv_.cuMemHostUnregister(p), "cuMemHostUnregister",
               "; unregistering host memory at " + cuda_hex(reinterpret_cast<uintptr_t>(p)) + " from " +
                   ctx_->where());
}

// Memory: pitched 2-D/3-D copies, peer access, IPC.

void CudaStream::copy_3d(const Region3D &dst, const Region3D &src, size_t width_bytes, size_t height,
                         size_t depth) {
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
                      " memory " + cuda_hex(src.address) + " (pitch " + std::to_string(src.pitch) + ") to " +
                      (dst.device ? "device" : "host") + " memory " + cuda_hex(dst.address) + " (pitch " +
                      std::to_string(dst.pitch) + ") on " + dev_->ctx->where() + dev_->fault_context(rc));
}

void CudaStream::copy_between(DeviceAddress dst, Backend *dst_owner, DeviceAddress src, Backend *src_owner,
                              size_t bytes) {
    if (bytes == 0) return;
    ScopedCurrent current(*dev_->ctx);
    const CudaDriver &drv = dev_->drv;
    for (Backend *owner : {dst_owner, src_owner})
        if (auto *c = dynamic_cast<CudaBackend *>(owner); c && &c->driver() != &drv)
            throw LogicError("copy: a " + dev_->ctx->where() + " stream cannot copy " + c->api() +
                             " memory: " + std::string(drv.api()) + " and " + c->api() +
                             " devices share no memory; copy through a host buffer");
    cu::CUcontext dc = dst_owner ? cuda_context_of(drv, *dst_owner) : nullptr;
    cu::CUcontext sc = src_owner ? cuda_context_of(drv, *src_owner) : nullptr;
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
                  "; copying " + cuda_format_bytes(bytes) + " from " +
                      (src_owner ? src_owner->api() + ":" + std::to_string(src_owner->device_id()) : "host") +
                      " memory " + cuda_hex(src) + " to " +
                      (dst_owner ? dst_owner->api() + ":" + std::to_string(dst_owner->device_id()) : "host") +
                      " memory " + cuda_hex(dst) + " on a stream of " + dev_->ctx->where() + dev_->fault_context(rc));
}

cu::CUcontext cuda_context_of(const CudaDriver &drv, Backend &b) noexcept {
    auto *c = dynamic_cast<CudaBackend *>(&b);
    return c && &c->driver() == &drv ? c->context_handle() : nullptr;
}

DeviceAddress CudaBackend::allocate_pitched(size_t width_bytes, size_t height, unsigned element_bytes,
                                            size_t *pitch) {
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

DeviceAddress CudaBackend::allocate_shareable(size_t bytes) {
    ScopedCurrent current(*ctx_);
    cu::CUdeviceptr p = 0;
    cu::CUresult rc = drv_.cuMemAlloc(&p, bytes);
    if (rc == cu::CUDA_ERROR_OUT_OF_MEMORY) drv_.raise(rc, "cuMemAlloc failed", out_of_memory_context(bytes));
    drv_.check(rc, "cuMemAlloc", "; requested " + cuda_format_bytes(bytes) + " on " + ctx_->where());
    std::lock_guard<std::mutex> lock(immediate_mutex_);
    immediate_.insert(p);
    shareable_.insert(p);
    return p;
}

std::array<uint8_t, 64> CudaBackend::ipc_handle(DeviceAddress p) {
    {
        std::lock_guard<std::mutex> lock(immediate_mutex_);
        if (!shareable_.count(p))
            throw LogicError("ipc_handle: the buffer at " + cuda_hex(p) + " on " + ctx_->where() +
                             " was not made by create_ipc_buffer (or is a view into one): CUDA "
                             "shares only whole cuMemAlloc allocations, not the stream-ordered "
                             "pool's");
    }
    ScopedCurrent current(*ctx_);
    cu::CUipcMemHandle h{};
    drv_.check(drv_.cuIpcGetMemHandle(&h, p), "cuIpcGetMemHandle", " for " + cuda_hex(p) + " on " + ctx_->where());
    std::array<uint8_t, 64> out{};
    static_assert(sizeof h == 64);
    std::memcpy(out.data(), &h, 64);
    return out;
}

DeviceAddress CudaBackend::open_ipc(const std::array<uint8_t, 64> &handle, size_t bytes) {
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

bool CudaBackend::can_access_peer(Backend &peer) {
    auto *other = same_api(peer);
    if (!other) return false; // the CPU device's memory is pageable host memory; another api's is apart
    if (other->dev_ == dev_) return true;
    int can = 0;
    drv_.check(drv_.cuDeviceCanAccessPeer(&can, dev_, other->dev_), "cuDeviceCanAccessPeer",
               " for " + ctx_->where() + " and " + other->ctx_->where());
    return can != 0;
}

void CudaBackend::enable_peer_access(Backend &peer) {
    auto *other = same_api(peer);
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

void CudaBackend::set_pool_access(CudaBackend &other, int flags, const char *verb) {
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

void CudaBackend::disable_peer_access(Backend &peer) {
    auto *other = same_api(peer);
    if (!other || other->dev_ == dev_) return; // never enabled: nothing to undo
    ScopedCurrent current(*ctx_);
    cu::CUresult rc = drv_.cuCtxDisablePeerAccess(other->ctx_->handle());
    constexpr cu::CUresult peer_access_not_enabled = 705;
    if (rc == peer_access_not_enabled) return;
    drv_.check(rc, "cuCtxDisablePeerAccess", " from " + ctx_->where() + " to " + other->ctx_->where());
    set_pool_access(*other, /*CU_MEM_ACCESS_FLAGS_PROT_NONE*/ 0, " taking from ");
}

} // namespace ember::detail
