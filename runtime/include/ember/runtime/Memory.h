/// \file
/// Memory beyond DeviceBuffer and HostBuffer, as Mojo's `gpu.host` and PyCUDA's driver module
/// have it: `MappedHostView` (what `map_to_host` returns), `ManagedBuffer` (unified memory),
/// `HostMappedBuffer` (page-locked host memory a kernel reads and writes in place) and
/// `RegisteredHostMemory` (existing host memory page-locked for fast, asynchronous copies). They
/// are made by DeviceContext: `ctx.map_to_host(buf)`, `ctx.create_managed_buffer<T>(n)`,
/// `ctx.create_host_mapped_buffer<T>(n)`, `ctx.register_host_memory(p, bytes)`. The memset and
/// copy calls are DeviceContext's; docs/runtime.md ("Memory") describes all of them, on CUDA and
/// on the CPU device.
///
/// Included by ember/runtime/Buffer.h; include ember/ember.h.
#ifndef EMBER_RUNTIME_MEMORY_H
#define EMBER_RUNTIME_MEMORY_H

#include "ember/runtime/Buffer.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace ember {

class DeviceStream;

/// Which streams may touch managed memory (PyCUDA's mem_attach_flags, CUmemAttach_flags):
/// `global`, any stream of any device; `host`, the host only, until attached otherwise (devices
/// with concurrent managed access, as Hopper, ignore it); `single`, the host and one stream (see
/// ManagedBuffer::attach).
enum class MemAttach : unsigned { global = 1, host = 2, single = 4 };

namespace detail {
struct ContextImpl;
struct StreamImpl;

/// Copies `bytes` between `host` and device address `device` on the context's default stream
/// and waits for it (map_to_host).
void copy_and_wait(ContextImpl &ctx, bool to_device, void *host, uint64_t device, size_t bytes);
/// Enqueues `count` elements of `width` (1, 2, 4 or 8) bytes, each the low `width` bytes of
/// `pattern` in memory order, at `address` inside `raw` on `stream` (the default stream when
/// null). LogicError when `raw` is empty or belongs to another context; `call` names the
/// operation in messages.
void enqueue_memset_bytes(ContextImpl &ctx, StreamImpl *stream, const RawDeviceBuffer *raw, uint64_t address,
                          uint64_t pattern, unsigned width, size_t count, const char *call);
/// PyCUDA's memset_d8/d16/d32: `count` units of `width` bytes, starting `offset` units into the
/// `buffer_bytes` bytes at `address`; checks the range and the alignment, waits when `wait`.
void memset_units(ContextImpl &ctx, StreamImpl *stream, const RawDeviceBuffer *raw, uint64_t address,
                  size_t buffer_bytes, uint64_t value, unsigned width, size_t count, size_t offset, const char *call,
                  bool wait);
/// Throws LogicError unless `stream` is a stream of `ctx`.
StreamImpl *stream_of(ContextImpl &ctx, const std::shared_ptr<StreamImpl> &stream, const char *call);
std::shared_ptr<RawDeviceBuffer> allocate_managed(const std::shared_ptr<ContextImpl> &ctx, size_t bytes,
                                                  MemAttach attach);
/// Enqueues on `stream` (the default stream when null) a change of which streams may touch the
/// managed memory `raw` (cuStreamAttachMemAsync).
void attach_managed(const RawDeviceBuffer *raw, StreamImpl *stream, MemAttach attach);
std::shared_ptr<RawHostBuffer> allocate_host_mapped(const std::shared_ptr<ContextImpl> &ctx, size_t bytes,
                                                    uint64_t *device_address);
void *malloc_host(const std::shared_ptr<ContextImpl> &ctx, size_t bytes);
void free_host(ContextImpl &ctx, const void *p);
/// Registers [p, p + bytes) with the context's device; returns its device address.
uint64_t register_host(ContextImpl &ctx, void *p, size_t bytes);
/// Unregisters; throws when `p` was not registered.
void unregister_host(ContextImpl &ctx, void *p);
/// Prints `ember: warning: <what>: <why>` to stderr (for destructors).
void warn(const char *what, const char *why) noexcept;
/// elements * width; LogicError naming both when the product overflows size_t.
size_t checked_bytes(size_t elements, size_t width, const char *call);
/// LogicError: the source of `call` has fewer elements than the destination.
[[noreturn]] void throw_short_source(const char *call, size_t dst_elems, size_t src_elems);

template <class T> void typed_memset(ContextImpl &ctx, StreamImpl *stream, const DeviceBuffer<T> &dst, const T &value,
                                     const char *call) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "enqueue_memset / memset_sync: the element type must be 1, 2, 4 or 8 bytes (a scalar, or "
                  "a struct or array of that size); for larger elements fill a HostBuffer and enqueue_copy it");
    uint64_t pattern = 0;
    std::memcpy(&pattern, &value, sizeof(T));
    enqueue_memset_bytes(ctx, stream, dst.raw().get(), dst.address(), pattern, sizeof(T), dst.size(), call);
}
} // namespace detail

/// The host copy of a DeviceBuffer for one scope, as Mojo's `with ctx.map_to_host(buf) as h:`.
/// Made by `buf.map_to_host()` or `ctx.map_to_host(buf)`: copies the buffer to (page-locked)
/// host memory and waits; index it like an array; when it goes out of scope (or at `unmap()`)
/// the host copy is written back to the device and the context waits for that copy. The copies
/// run on the buffer's context's default stream: work on other streams that touches the buffer
/// must be ordered with events first.
///
///   {
///       auto h = buf.map_to_host();
///       for (size_t i = 0; i < h.size(); ++i) h[i] = float(i);
///   } // written back here
///
/// Destructors never throw: where the write-back must report a failure as an exception, call
/// `unmap()` at the end of the scope; the destructor prints a failure to stderr.
template <class T> class MappedHostView {
public:
    explicit MappedHostView(DeviceBuffer<T> buffer) : device_(std::move(buffer)) {
        if (!device_) detail::throw_empty_buffer("map_to_host", "DeviceBuffer");
        host_ = HostBuffer<T>(std::make_shared<detail::RawHostBuffer>(device_.raw()->context(), device_.bytes()),
                              device_.size());
        detail::copy_and_wait(*device_.raw()->context(), /*to_device=*/false, host_.data(), device_.address(),
                              device_.bytes());
        mapped_ = true;
    }
    MappedHostView(MappedHostView &&o) noexcept
        : device_(std::move(o.device_)), host_(std::move(o.host_)), mapped_(std::exchange(o.mapped_, false)) {}
    MappedHostView(const MappedHostView &) = delete;
    MappedHostView &operator=(const MappedHostView &) = delete;
    MappedHostView &operator=(MappedHostView &&) = delete;
    /// Writes back (as unmap()). Destructors never throw: a failure is printed to stderr (a
    /// faulted CUDA context then fails the next synchronising call too); call unmap() first to
    /// get it as an exception.
    ~MappedHostView() {
        if (!mapped_) return;
        try {
            unmap();
        } catch (const std::exception &e) {
            detail::warn("map_to_host: writing the host copy back to the device failed", e.what());
        }
    }

    /// Writes the host copy back to the device and waits; later calls do nothing. The view's
    /// memory stays readable until it is destroyed.
    void unmap() {
        if (!mapped_) return;
        mapped_ = false;
        detail::copy_and_wait(*device_.raw()->context(), /*to_device=*/true, host_.data(), device_.address(),
                              device_.bytes());
    }
    /// Whether the view will still write back.
    bool is_mapped() const { return mapped_; }

    size_t size() const { return host_.size(); }
    size_t bytes() const { return host_.bytes(); }
    T *data() const { return host_.data(); }
    T &operator[](size_t i) const { return host_[i]; }
    T *begin() const { return host_.begin(); }
    T *end() const { return host_.end(); }
    std::span<T> as_span() const { return host_.as_span(); }
    /// The device buffer it maps.
    const DeviceBuffer<T> &device_buffer() const { return device_; }
    /// The host copy as a HostBuffer (what Mojo's map_to_host yields): copies of it share the
    /// memory, which outlives the view.
    const HostBuffer<T> &host_buffer() const { return host_; }
    /// `HostBuffer([e0, e1, ...])`, as the host copy prints.
    std::string to_string() const { return host_.to_string(); }
    friend std::ostream &operator<<(std::ostream &os, const MappedHostView &v) { return os << v.host_; }

private:
    DeviceBuffer<T> device_;
    HostBuffer<T> host_;
    bool mapped_ = false;
};

template <class T> MappedHostView<T> DeviceBuffer<T>::map_to_host() const { return MappedHostView<T>(*this); }
template <class T> const DeviceBuffer<T> &DeviceBuffer<T>::enqueue_fill(T value) const {
    if (!raw_) detail::throw_empty_buffer("enqueue_fill", "DeviceBuffer");
    detail::typed_memset<T>(*raw_->context(), nullptr, *this, value, "enqueue_fill");
    return *this;
}

/// Unified ("managed") memory of one context, as PyCUDA's managed_empty (cuMemAllocManaged):
/// one address valid on the host and in kernels; the driver migrates the pages on use. Pass it
/// to a kernel like a DeviceBuffer (a `Ptr<T>`); index it on the host after `ctx.synchronize()`.
/// `device_buffer()` is the same memory as a DeviceBuffer, for enqueue_copy and memset. On the
/// CPU device it is ordinary host memory. Cheap to copy; copies share the memory.
template <class T> class ManagedBuffer {
public:
    ManagedBuffer() = default;
    explicit ManagedBuffer(DeviceBuffer<T> memory) : buf_(std::move(memory)) {}

    size_t size() const { return buf_.size(); }
    size_t bytes() const { return buf_.bytes(); }
    /// The address, on the host and on the device.
    T *data() const { return reinterpret_cast<T *>(static_cast<uintptr_t>(buf_.address())); }
    uint64_t address() const { return buf_.address(); }
    T &operator[](size_t i) const { return data()[i]; }
    T *begin() const { return data(); }
    T *end() const { return data() + size(); }
    std::span<T> as_span() const { return {data(), size()}; }
    explicit operator bool() const { return static_cast<bool>(buf_); }

    const DeviceBuffer<T> &device_buffer() const { return buf_; }
    const std::shared_ptr<detail::RawDeviceBuffer> &raw() const { return buf_.raw(); }

    /// Enqueues on `stream` (of the buffer's context) a change of which streams may touch the
    /// memory, as PyCUDA's ManagedAllocation.attach: MemAttach::single makes it the host's and
    /// `stream`'s only. Without a stream: on the context's stream. On the CPU device: nothing.
    void attach(MemAttach attach, const DeviceStream &stream) const;
    void attach(MemAttach attach) const { detail::attach_managed(buf_.raw().get(), nullptr, attach); }

private:
    DeviceBuffer<T> buf_;
};

/// Page-locked host memory mapped into the device's address space, as PyCUDA's
/// pagelocked_empty(..., mem_flags=DEVICEMAP) (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP |
/// PORTABLE): kernels read and write it in place, over the bus, through `device_address()` (pass
/// the buffer itself to a kernel as a `Ptr<T>`). Read it on the host after the kernel finished
/// (`ctx.synchronize()`). On the CPU device it is ordinary host memory whose device address is
/// its host address. Cheap to copy; copies share the memory.
template <class T> class HostMappedBuffer {
public:
    HostMappedBuffer() = default;
    HostMappedBuffer(HostBuffer<T> host, uint64_t device_address) : host_(std::move(host)), device_(device_address) {}

    size_t size() const { return host_.size(); }
    size_t bytes() const { return host_.bytes(); }
    T *data() const { return host_.data(); }
    T &operator[](size_t i) const { return host_[i]; }
    T *begin() const { return host_.begin(); }
    T *end() const { return host_.end(); }
    std::span<T> as_span() const { return host_.as_span(); }
    explicit operator bool() const { return static_cast<bool>(host_); }
    /// The address kernels use (equal to data() on 64-bit systems with unified addressing).
    uint64_t device_address() const { return host_ ? device_ : 0; }
    /// The same memory as a HostBuffer, for enqueue_copy.
    const HostBuffer<T> &host_buffer() const { return host_; }
    const std::shared_ptr<detail::RawHostBuffer> &raw() const { return host_.raw(); }

private:
    HostBuffer<T> host_;
    uint64_t device_ = 0;
};

/// Existing host memory registered with a device (page-locked), as PyCUDA's
/// register_host_memory (cuMemHostRegister with PORTABLE | DEVICEMAP): copies from and to it
/// through the `T*` overloads of enqueue_copy are then truly asynchronous, and kernels may
/// address it through device_address(). Unregistered when destroyed (or at `unregister()`); the
/// memory itself stays the caller's. Registering memory that overlaps a registered range is a
/// LogicError. On the CPU device registration only records the range. Movable, not copyable.
class RegisteredHostMemory {
public:
    RegisteredHostMemory() = default;
    RegisteredHostMemory(std::shared_ptr<detail::ContextImpl> ctx, void *data, size_t bytes, uint64_t device)
        : ctx_(std::move(ctx)), data_(data), bytes_(bytes), device_(device) {}
    RegisteredHostMemory(RegisteredHostMemory &&o) noexcept
        : ctx_(std::move(o.ctx_)), data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)),
          device_(std::exchange(o.device_, 0)) {}
    RegisteredHostMemory &operator=(RegisteredHostMemory &&o) noexcept {
        if (this != &o) {
            release();
            ctx_ = std::move(o.ctx_);
            data_ = std::exchange(o.data_, nullptr);
            bytes_ = std::exchange(o.bytes_, 0);
            device_ = std::exchange(o.device_, 0);
        }
        return *this;
    }
    RegisteredHostMemory(const RegisteredHostMemory &) = delete;
    RegisteredHostMemory &operator=(const RegisteredHostMemory &) = delete;
    ~RegisteredHostMemory() { release(); }

    /// Unregisters now (throws on a driver failure); later calls do nothing.
    void unregister() {
        if (!data_) return;
        void *p = std::exchange(data_, nullptr);
        bytes_ = 0;
        device_ = 0;
        detail::unregister_host(*ctx_, p);
    }
    void *data() const { return data_; }
    size_t bytes() const { return bytes_; }
    /// The address kernels use for data().
    uint64_t device_address() const { return device_; }
    /// Whether it is registered.
    explicit operator bool() const { return data_ != nullptr; }

private:
    void release() noexcept {
        try {
            unregister();
        } catch (const std::exception &e) {
            detail::warn("RegisteredHostMemory: unregistering host memory failed", e.what());
        }
    }

    std::shared_ptr<detail::ContextImpl> ctx_;
    void *data_ = nullptr;
    size_t bytes_ = 0;
    uint64_t device_ = 0;
};

} // namespace ember

#endif // EMBER_RUNTIME_MEMORY_H
