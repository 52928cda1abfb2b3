/// \file
/// `DeviceBuffer<T>` (device global memory) and `HostBuffer<T>` (host memory, page-locked on
/// GPUs), as in Mojo's `gpu.host`. Both are reference-counted handles: copies share the memory,
/// which is freed when the last handle goes away.
#ifndef EMBER_RUNTIME_BUFFER_H
#define EMBER_RUNTIME_BUFFER_H

#include "ember/Error.h"
#include "ember/Float16.h"
#include "ember/Float8.h"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace ember {

class DeviceContext;
template <class T> class DeviceBuffer;
template <class T> class HostBuffer;
template <class T> class MappedHostView;

namespace detail {
struct ContextImpl;
struct StreamImpl;

/// Untyped device memory owned by one context.
class RawDeviceBuffer {
public:
    RawDeviceBuffer(std::shared_ptr<ContextImpl> ctx, size_t bytes);
    /// Adopts `address` (`bytes` long) that the context's back end allocated another way (pitched,
    /// shareable, opened from another process: Memory2D.h); its deallocate releases it.
    RawDeviceBuffer(std::shared_ptr<ContextImpl> ctx, uint64_t address, size_t bytes);
    /// Memory this buffer does not own (a module's global): `owner` keeps it valid; it is not
    /// freed here.
    RawDeviceBuffer(std::shared_ptr<ContextImpl> ctx, uint64_t address, size_t bytes, std::shared_ptr<const void> owner)
        : ctx_(std::move(ctx)), address_(address), bytes_(bytes), owner_(std::move(owner)) {}
    ~RawDeviceBuffer();
    RawDeviceBuffer(const RawDeviceBuffer &) = delete;
    RawDeviceBuffer &operator=(const RawDeviceBuffer &) = delete;
    uint64_t address() const { return address_; }
    size_t bytes() const { return bytes_; }
    const std::shared_ptr<ContextImpl> &context() const { return ctx_; }

private:
    std::shared_ptr<ContextImpl> ctx_;
    uint64_t address_ = 0;
    size_t bytes_;
    std::shared_ptr<const void> owner_;
};

/// Untyped host memory owned by one context.
class RawHostBuffer {
public:
    RawHostBuffer(std::shared_ptr<ContextImpl> ctx, size_t bytes);
    /// Adopts `data`, allocated by the context's back end (allocate_host_mapped, ...) and freed by
    /// its `deallocate_host`.
    RawHostBuffer(std::shared_ptr<ContextImpl> ctx, void *data, size_t bytes)
        : ctx_(std::move(ctx)), data_(data), bytes_(bytes) {}
    ~RawHostBuffer();
    RawHostBuffer(const RawHostBuffer &) = delete;
    RawHostBuffer &operator=(const RawHostBuffer &) = delete;
    void *data() const { return data_; }
    size_t bytes() const { return bytes_; }
    const std::shared_ptr<ContextImpl> &context() const { return ctx_; }

private:
    std::shared_ptr<ContextImpl> ctx_;
    void *data_ = nullptr;
    size_t bytes_;
};

/// Copy entry points shared by DeviceContext and the buffers' enqueue_copy_to/from. `what` names
/// the operation in messages. Sizes are checked by the callers.
enum class MemSide { Host, Device };
/// The buffers a copy writes and reads, which a graph that captures it keeps alive ([Note]
/// Graphs in the runtime's BackendGraph.h).
struct CopyOwners {
    const std::shared_ptr<RawDeviceBuffer> *dst_device = nullptr, *src_device = nullptr;
    const std::shared_ptr<RawHostBuffer> *dst_host = nullptr, *src_host = nullptr;
};
void enqueue_copy_bytes(ContextImpl &ctx, MemSide dst_side, uint64_t dst, const ContextImpl *dst_ctx,
                        MemSide src_side, uint64_t src, const ContextImpl *src_ctx, size_t bytes,
                        StreamImpl *stream = nullptr, const CopyOwners &owners = {});
[[noreturn]] void throw_copy_size_mismatch(size_t dst_elems, size_t src_elems, size_t elem_bytes);
[[noreturn]] void throw_null_buffer(const char *what);
/// Throws LogicError unless a view of `count` elements of `view_elem` bytes (alignment
/// `view_align`) at element `offset` of a `kind` ("DeviceBuffer") of `size` elements of `elem`
/// bytes, which starts `byte_offset` bytes into its allocation, fits and is aligned.
/// LogicError: `<call>: the <what> is empty (default-constructed or moved-from)`.
[[noreturn]] void throw_empty_buffer(const char *call, const char *what);
/// LogicError `use of a moved-from <what> in <method>: <hint>`, for handles that are never
/// default-constructed empty (DeviceContext, DeviceStream).
[[noreturn]] void throw_moved_from(const char *what, const char *method, const char *hint);
/// LogicError `use of an empty <what> (default-constructed or moved-from) in <method>: <hint>`.
[[noreturn]] void throw_empty_handle(const char *what, const char *method, const char *hint);
void check_sub_buffer(const char *kind, size_t size, size_t elem, size_t byte_offset, size_t offset,
                      size_t count, size_t view_elem, size_t view_align);

template <class T> void format_element(std::ostream &os, const T &v) {
    if constexpr (std::is_same_v<T, bool>) {
        os << (v ? "True" : "False");
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> ||
                         std::is_same_v<T, bfloat16> || std::is_same_v<T, float8_e4m3> ||
                         std::is_same_v<T, float8_e5m2>) {
        // Shortest text that reads back as the same value, always with a '.' or exponent, as
        // Mojo prints floats: 0.0, 20.0, 0.1, 1e+20. (16- and 8-bit floats print as the float
        // they are.)
        char buf[64];
        std::to_chars_result r;
        if constexpr (std::is_floating_point_v<T>)
            r = std::to_chars(buf, buf + sizeof buf, v);
        else
            r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
        std::string s(buf, r.ptr);
        if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
        os << s;
    } else if constexpr (sizeof(T) == 1) {
        os << static_cast<int>(v);
    } else {
        os << v;
    }
}
} // namespace detail

/// A buffer of `size()` elements of T in the device's global memory. A kernel receives it as a
/// `Ptr<T>` (see DevicePassable). Default-constructed buffers are empty and refer to no context.
template <class T> class DeviceBuffer {
    static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer elements must be trivially copyable");

public:
    DeviceBuffer() = default;
    DeviceBuffer(std::shared_ptr<detail::RawDeviceBuffer> raw, size_t n) : raw_(std::move(raw)), size_(n) {}
    /// A view of `n` elements starting `byte_offset` bytes into `raw` (see create_sub_buffer).
    DeviceBuffer(std::shared_ptr<detail::RawDeviceBuffer> raw, size_t n, size_t byte_offset)
        : raw_(std::move(raw)), size_(n), offset_(byte_offset) {}
    DeviceBuffer(const DeviceBuffer &) = default;
    DeviceBuffer &operator=(const DeviceBuffer &) = default;
    /// A moved-from buffer is empty: no memory, 0 elements.
    DeviceBuffer(DeviceBuffer &&o) noexcept
        : raw_(std::move(o.raw_)), size_(std::exchange(o.size_, 0)), offset_(std::exchange(o.offset_, 0)) {}
    DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
        raw_ = std::move(o.raw_);
        size_ = std::exchange(o.size_, 0);
        offset_ = std::exchange(o.offset_, 0);
        return *this;
    }

    size_t size() const { return size_; }
    size_t bytes() const { return size_ * sizeof(T); }
    /// The device address (a CUdeviceptr on CUDA), for interoperation with other libraries.
    uint64_t address() const { return raw_ ? raw_->address() + offset_ : 0; }
    /// Bytes from the start of the allocation to element 0 (non-zero for sub-buffers).
    size_t byte_offset() const { return offset_; }

    /// A view of `count` elements of U starting at element `offset` of this buffer (Mojo's
    /// create_sub_buffer): it shares, and keeps alive, this buffer's memory. LogicError when it
    /// does not fit or its start is not aligned for U.
    template <class U = T> DeviceBuffer<U> create_sub_buffer(size_t offset, size_t count) const {
        static_assert(std::is_trivially_copyable_v<U>, "create_sub_buffer: U must be trivially copyable");
        if (!raw_) detail::throw_empty_buffer("create_sub_buffer", "DeviceBuffer");
        detail::check_sub_buffer("DeviceBuffer", size_, sizeof(T), offset_, offset, count, sizeof(U), alignof(U));
        return DeviceBuffer<U>(raw_, count, offset_ + offset * sizeof(T));
    }
    /// Copies the buffer to host memory and waits; the returned view's elements are written back
    /// to the device when it goes out of scope (Mojo's `with buf.map_to_host() as h:`). See
    /// MappedHostView in ember/runtime/Memory.h.
    MappedHostView<T> map_to_host() const;
    /// Enqueues setting every element to `value` on its context's stream (Mojo's enqueue_fill;
    /// DeviceContext::enqueue_memset). Returns *this.
    const DeviceBuffer &enqueue_fill(T value) const;
    explicit operator bool() const { return raw_ != nullptr; }

    /// Enqueues a copy of all elements into `dst` (sizes must match).
    void enqueue_copy_to(const HostBuffer<T> &dst) const;
    void enqueue_copy_to(const DeviceBuffer<T> &dst) const;
    /// Enqueues a copy of `size()` elements to host memory at `dst`.
    void enqueue_copy_to(T *dst) const;
    void enqueue_copy_from(const HostBuffer<T> &src) const;
    void enqueue_copy_from(const DeviceBuffer<T> &src) const;
    void enqueue_copy_from(const T *src) const;

    const std::shared_ptr<detail::RawDeviceBuffer> &raw() const { return raw_; }

private:
    std::shared_ptr<detail::RawDeviceBuffer> raw_;
    size_t size_ = 0;
    size_t offset_ = 0;
};

/// A buffer of `size()` elements of T in host memory that the device copies to and from quickly
/// (page-locked on GPUs). Index it like an array; print it as `HostBuffer([0.0, 1.0, ...])`.
template <class T> class HostBuffer {
    static_assert(std::is_trivially_copyable_v<T>, "HostBuffer elements must be trivially copyable");

public:
    HostBuffer() = default;
    HostBuffer(std::shared_ptr<detail::RawHostBuffer> raw, size_t n) : raw_(std::move(raw)), size_(n) {}
    /// A view of `n` elements starting `byte_offset` bytes into `raw` (see create_sub_buffer).
    HostBuffer(std::shared_ptr<detail::RawHostBuffer> raw, size_t n, size_t byte_offset)
        : raw_(std::move(raw)), size_(n), offset_(byte_offset) {}
    HostBuffer(const HostBuffer &) = default;
    HostBuffer &operator=(const HostBuffer &) = default;
    /// A moved-from buffer is empty: no memory, 0 elements (begin() == end()).
    HostBuffer(HostBuffer &&o) noexcept
        : raw_(std::move(o.raw_)), size_(std::exchange(o.size_, 0)), offset_(std::exchange(o.offset_, 0)) {}
    HostBuffer &operator=(HostBuffer &&o) noexcept {
        raw_ = std::move(o.raw_);
        size_ = std::exchange(o.size_, 0);
        offset_ = std::exchange(o.offset_, 0);
        return *this;
    }

    size_t size() const { return size_; }
    size_t bytes() const { return size_ * sizeof(T); }
    T *data() const {
        return raw_ ? reinterpret_cast<T *>(static_cast<unsigned char *>(raw_->data()) + offset_) : nullptr;
    }
    /// Bytes from the start of the allocation to element 0 (non-zero for sub-buffers).
    size_t byte_offset() const { return offset_; }
    /// Sets every element to `value` (on the host, at once: Mojo's enqueue_fill). Returns *this.
    const HostBuffer &enqueue_fill(const T &value) const {
        for (size_t i = 0; i < size_; ++i) data()[i] = value;
        return *this;
    }
    /// A view of `count` elements of U starting at element `offset`, as DeviceBuffer's.
    template <class U = T> HostBuffer<U> create_sub_buffer(size_t offset, size_t count) const {
        static_assert(std::is_trivially_copyable_v<U>, "create_sub_buffer: U must be trivially copyable");
        if (!raw_) detail::throw_empty_buffer("create_sub_buffer", "HostBuffer");
        detail::check_sub_buffer("HostBuffer", size_, sizeof(T), offset_, offset, count, sizeof(U), alignof(U));
        return HostBuffer<U>(raw_, count, offset_ + offset * sizeof(T));
    }
    T &operator[](size_t i) const { return data()[i]; }
    T *begin() const { return data(); }
    T *end() const { return data() + size_; }
    std::span<T> as_span() const { return {data(), size_}; }
    explicit operator bool() const { return raw_ != nullptr; }

    void enqueue_copy_to(const DeviceBuffer<T> &dst) const { dst.enqueue_copy_from(*this); }
    void enqueue_copy_from(const DeviceBuffer<T> &src) const { src.enqueue_copy_to(*this); }

    /// `HostBuffer([e0, e1, ...])`, as Mojo prints it.
    std::string to_string() const {
        std::ostringstream os;
        os << *this;
        return os.str();
    }
    friend std::ostream &operator<<(std::ostream &os, const HostBuffer &b) {
        os << "HostBuffer([";
        for (size_t i = 0; i < b.size_; ++i) {
            if (i) os << ", ";
            detail::format_element(os, b[i]);
        }
        return os << "])";
    }

    const std::shared_ptr<detail::RawHostBuffer> &raw() const { return raw_; }

private:
    std::shared_ptr<detail::RawHostBuffer> raw_;
    size_t size_ = 0;
    size_t offset_ = 0;
};

// ---------------------------------------------------------------------------------------------

namespace detail {
template <class B> void require(const B &b, const char *what) {
    if (!b) throw_null_buffer(what);
}
inline void check_sizes(size_t dst, size_t src, size_t elem) {
    if (dst != src) throw_copy_size_mismatch(dst, src, elem);
}
} // namespace detail

template <class T> void DeviceBuffer<T>::enqueue_copy_to(const HostBuffer<T> &dst) const {
    detail::require(*this, "source DeviceBuffer");
    detail::require(dst, "destination HostBuffer");
    detail::check_sizes(dst.size(), size_, sizeof(T));
    detail::enqueue_copy_bytes(*raw_->context(), detail::MemSide::Host,
                               reinterpret_cast<uint64_t>(dst.data()), dst.raw()->context().get(),
                               detail::MemSide::Device, address(), raw_->context().get(), bytes(), nullptr,
                               {.src_device = &raw_, .dst_host = &dst.raw()});
}
template <class T> void DeviceBuffer<T>::enqueue_copy_to(const DeviceBuffer<T> &dst) const {
    detail::require(*this, "source DeviceBuffer");
    detail::require(dst, "destination DeviceBuffer");
    detail::check_sizes(dst.size(), size_, sizeof(T));
    detail::enqueue_copy_bytes(*raw_->context(), detail::MemSide::Device, dst.address(),
                               dst.raw()->context().get(), detail::MemSide::Device, address(),
                               raw_->context().get(), bytes(), nullptr,
                               {.dst_device = &dst.raw(), .src_device = &raw_});
}
template <class T> void DeviceBuffer<T>::enqueue_copy_to(T *dst) const {
    detail::require(*this, "source DeviceBuffer");
    if (size_ == 0) return;
    if (!dst) detail::throw_null_buffer("destination pointer");
    detail::enqueue_copy_bytes(*raw_->context(), detail::MemSide::Host, reinterpret_cast<uint64_t>(dst),
                               nullptr, detail::MemSide::Device, address(), raw_->context().get(),
                               bytes(), nullptr, {.src_device = &raw_});
}
template <class T> void DeviceBuffer<T>::enqueue_copy_from(const HostBuffer<T> &src) const {
    detail::require(*this, "destination DeviceBuffer");
    detail::require(src, "source HostBuffer");
    detail::check_sizes(size_, src.size(), sizeof(T));
    detail::enqueue_copy_bytes(*raw_->context(), detail::MemSide::Device, address(),
                               raw_->context().get(), detail::MemSide::Host,
                               reinterpret_cast<uint64_t>(src.data()), src.raw()->context().get(),
                               bytes(), nullptr, {.dst_device = &raw_, .src_host = &src.raw()});
}
template <class T> void DeviceBuffer<T>::enqueue_copy_from(const DeviceBuffer<T> &src) const {
    src.enqueue_copy_to(*this);
}
template <class T> void DeviceBuffer<T>::enqueue_copy_from(const T *src) const {
    detail::require(*this, "destination DeviceBuffer");
    if (size_ == 0) return;
    if (!src) detail::throw_null_buffer("source pointer");
    detail::enqueue_copy_bytes(*raw_->context(), detail::MemSide::Device, address(),
                               raw_->context().get(), detail::MemSide::Host,
                               reinterpret_cast<uint64_t>(src), nullptr, bytes(), nullptr,
                               {.dst_device = &raw_});
}

} // namespace ember

// MappedHostView, ManagedBuffer, HostMappedBuffer, RegisteredHostMemory.
#include "ember/runtime/Memory.h"

#endif // EMBER_RUNTIME_BUFFER_H
