/// \file
/// Pitched 2-D memory (`PitchedBuffer<T>`), 2-D and 3-D copies (`Copy2D`, `Copy3D`, modelled on
/// PyCUDA's Memcpy2D/Memcpy3D and the driver's cuMemcpy2DAsync/cuMemcpy3DAsync) and handles that
/// share a device buffer with another process (`IpcMemHandle`). The DeviceContext and
/// DeviceStream calls that use them are in DeviceContext.h; docs/runtime.md has examples.
#ifndef EMBER_RUNTIME_MEMORY2D_H
#define EMBER_RUNTIME_MEMORY2D_H

#include "ember/runtime/Buffer.h"
#include "ember/runtime/DevicePassable.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ember {

/// `height` rows of `width` elements of T in device memory, each row starting `pitch()` bytes
/// after the previous one (cuMemAllocPitch on CUDA; on the CPU device the pitch is the row's bytes
/// rounded up to a multiple of 256, the alignment of every CPU-device allocation, and of
/// sizeof(T)). Element (row, col) lives at `address() + row * pitch() + col * sizeof(T)`.
///
/// A kernel receives it as a `Ptr<T>` to element (0, 0); pass `pitch_elements()` with it and index
/// `p[row * pitch + col]`:
///
///   ctx.enqueue_function(k, img, img.pitch_elements(), img.width(), img.height(), ...);
///
/// Made by `ctx.create_pitched_buffer<T>(width, height)`. Copies share the memory, freed when the
/// last one goes away. Default-constructed ones are empty.
template <class T> class PitchedBuffer {
    static_assert(std::is_trivially_copyable_v<T>, "PitchedBuffer elements must be trivially copyable");

public:
    PitchedBuffer() = default;
    PitchedBuffer(std::shared_ptr<detail::RawDeviceBuffer> raw, size_t width, size_t height, size_t pitch)
        : raw_(std::move(raw)), width_(width), height_(height), pitch_(pitch) {}
    PitchedBuffer(const PitchedBuffer &) = default;
    PitchedBuffer &operator=(const PitchedBuffer &) = default;
    /// A moved-from buffer is empty: no memory, no rows.
    PitchedBuffer(PitchedBuffer &&o) noexcept
        : raw_(std::move(o.raw_)), width_(std::exchange(o.width_, 0)), height_(std::exchange(o.height_, 0)),
          pitch_(std::exchange(o.pitch_, 0)) {}
    PitchedBuffer &operator=(PitchedBuffer &&o) noexcept {
        raw_ = std::move(o.raw_);
        width_ = std::exchange(o.width_, 0);
        height_ = std::exchange(o.height_, 0);
        pitch_ = std::exchange(o.pitch_, 0);
        return *this;
    }

    /// Elements per row.
    size_t width() const { return width_; }
    /// Rows.
    size_t height() const { return height_; }
    /// Bytes from the start of one row to the start of the next (>= width() * sizeof(T)).
    size_t pitch() const { return pitch_; }
    /// The pitch in elements, for indexing in a kernel. LogicError when pitch() is not a multiple
    /// of sizeof(T) (only possible on CUDA for element sizes that are not powers of two).
    size_t pitch_elements() const;
    /// Bytes of one row's elements: width() * sizeof(T).
    size_t width_bytes() const { return width_ * sizeof(T); }
    /// Bytes of the allocation: pitch() * height().
    size_t bytes() const { return pitch_ * height_; }
    /// The device address of element (0, 0).
    uint64_t address() const { return raw_ ? raw_->address() : 0; }
    explicit operator bool() const { return raw_ != nullptr; }

    const std::shared_ptr<detail::RawDeviceBuffer> &raw() const { return raw_; }

private:
    std::shared_ptr<detail::RawDeviceBuffer> raw_;
    size_t width_ = 0, height_ = 0, pitch_ = 0;
};

namespace detail {
[[noreturn]] void throw_pitch_not_multiple(size_t pitch, size_t element_bytes);
}

template <class T> size_t PitchedBuffer<T>::pitch_elements() const {
    if (pitch_ % sizeof(T) != 0) detail::throw_pitch_not_multiple(pitch_, sizeof(T));
    return pitch_ / sizeof(T);
}

/// A PitchedBuffer<T> reaches a kernel as a pointer to element (0, 0).
template <class T> struct DevicePassable<PitchedBuffer<T>> {
    using device_type = Ptr<T>;
    static uint64_t to_device(const PitchedBuffer<T> &b) { return b.address(); }
};

/// One side (source or destination) of a 2-D or 3-D copy: which memory, how many bytes it holds
/// (for the bounds checks) and its natural pitch. Filled in by Copy2D::set_src / set_dst.
struct CopyEndpoint {
    enum class Kind { none, host, device };
    Kind kind = Kind::none;
    /// The host address, or the device address of the buffer's first byte.
    uint64_t address = 0;
    /// The bytes the memory holds, for bounds checks; 0 for a raw host pointer given without a
    /// size (not checked: the caller vouches for it, as for memcpy).
    size_t extent_bytes = 0;
    /// A PitchedBuffer's pitch, the default of the copy's pitch for this side; 0 otherwise.
    size_t natural_pitch = 0;
    /// "DeviceBuffer", "PitchedBuffer", "HostBuffer", "host pointer": for messages.
    const char *what = "nothing";
    /// Device memory: the buffer (kept alive, and naming its context). Host buffers: kept alive.
    std::shared_ptr<detail::RawDeviceBuffer> device;
    std::shared_ptr<detail::RawHostBuffer> host_buffer;
};

namespace detail {
CopyEndpoint host_endpoint(const void *p, size_t bytes, const char *what,
                           std::shared_ptr<RawHostBuffer> keep, const char *call);
CopyEndpoint device_endpoint(const std::shared_ptr<RawDeviceBuffer> &raw, uint64_t address, size_t bytes,
                             size_t natural_pitch, const char *what, const char *call);
} // namespace detail

/// A 2-D copy of `height` rows of `width_in_bytes` bytes, as PyCUDA's Memcpy2D and the driver's
/// CUDA_MEMCPY2D: row r of the source starts at `src_x_in_bytes + (src_y + r) * src_pitch` bytes
/// into the source memory, and likewise for the destination. Either side is host memory (a
/// HostBuffer, or a host pointer with or without its size), a DeviceBuffer or a PitchedBuffer.
/// A pitch left 0 is the side's natural one: a PitchedBuffer's pitch(), else width_in_bytes
/// (rows packed one after another).
///
///   ember::Copy2D c;
///   c.set_src(host.data(), host.size() * sizeof(float));   // a packed 100 x 64 host image
///   c.set_dst(img);                                          // a PitchedBuffer<float>
///   c.width_in_bytes = 64 * sizeof(float);
///   c.height = 100;
///   ctx.enqueue_copy_2d(c);
///
/// Every region is checked against its memory before anything is enqueued: LogicError naming the
/// field, its value and the limit.
struct Copy2D {
    size_t src_x_in_bytes = 0, src_y = 0, src_pitch = 0;
    size_t dst_x_in_bytes = 0, dst_y = 0, dst_pitch = 0;
    size_t width_in_bytes = 0, height = 0;
    CopyEndpoint src, dst;

    /// Host memory: `bytes` (when given) bounds the region; a raw pointer alone is unchecked.
    void set_src_host(const void *p) { src = detail::host_endpoint(p, 0, "host pointer", nullptr, "set_src_host"); }
    void set_src_host(const void *p, size_t bytes) {
        src = detail::host_endpoint(p, bytes, "host pointer", nullptr, "set_src_host");
    }
    template <class T> void set_src_host(const HostBuffer<T> &b) {
        src = detail::host_endpoint(b.data(), b.bytes(), "HostBuffer", b.raw(), "set_src_host");
    }
    template <class T> void set_src_device(const DeviceBuffer<T> &b) {
        src = detail::device_endpoint(b.raw(), b.address(), b.bytes(), 0, "DeviceBuffer", "set_src_device");
    }
    template <class T> void set_src_device(const PitchedBuffer<T> &b) {
        src = detail::device_endpoint(b.raw(), b.address(), b.bytes(), b.pitch(), "PitchedBuffer", "set_src_device");
    }
    void set_dst_host(void *p) { dst = detail::host_endpoint(p, 0, "host pointer", nullptr, "set_dst_host"); }
    void set_dst_host(void *p, size_t bytes) {
        dst = detail::host_endpoint(p, bytes, "host pointer", nullptr, "set_dst_host");
    }
    template <class T> void set_dst_host(const HostBuffer<T> &b) {
        dst = detail::host_endpoint(b.data(), b.bytes(), "HostBuffer", b.raw(), "set_dst_host");
    }
    template <class T> void set_dst_device(const DeviceBuffer<T> &b) {
        dst = detail::device_endpoint(b.raw(), b.address(), b.bytes(), 0, "DeviceBuffer", "set_dst_device");
    }
    template <class T> void set_dst_device(const PitchedBuffer<T> &b) {
        dst = detail::device_endpoint(b.raw(), b.address(), b.bytes(), b.pitch(), "PitchedBuffer", "set_dst_device");
    }

    /// The same, picking host or device by the argument's type.
    void set_src(const void *p) { set_src_host(p); }
    void set_src(const void *p, size_t bytes) { set_src_host(p, bytes); }
    template <class T> void set_src(const HostBuffer<T> &b) { set_src_host(b); }
    template <class T> void set_src(const DeviceBuffer<T> &b) { set_src_device(b); }
    template <class T> void set_src(const PitchedBuffer<T> &b) { set_src_device(b); }
    void set_dst(void *p) { set_dst_host(p); }
    void set_dst(void *p, size_t bytes) { set_dst_host(p, bytes); }
    template <class T> void set_dst(const HostBuffer<T> &b) { set_dst_host(b); }
    template <class T> void set_dst(const DeviceBuffer<T> &b) { set_dst_device(b); }
    template <class T> void set_dst(const PitchedBuffer<T> &b) { set_dst_device(b); }
};

/// A 3-D copy of `depth` slices of `height` rows of `width_in_bytes` bytes, as PyCUDA's Memcpy3D
/// and CUDA_MEMCPY3D: each side is a stack of slices of `src_height` (`dst_height`) rows of
/// `src_pitch` (`dst_pitch`) bytes; row r of slice s of the source starts at
/// `src_x_in_bytes + (src_y + r) * src_pitch + (src_z + s) * src_pitch * src_height`. A slice
/// height left 0 is the copy's `height` (slices packed one after another).
struct Copy3D : Copy2D {
    size_t src_z = 0, src_height = 0;
    size_t dst_z = 0, dst_height = 0;
    size_t depth = 1;
};

/// A handle to a device buffer that another process can open (cuIpcGetMemHandle: 64 opaque
/// bytes on CUDA; on the CPU device a shared-memory file, see docs/runtime.md), as PyCUDA's
/// mem_get_ipc_handle / IPCMemoryHandle. Made by `ctx.ipc_handle(buffer)` for a buffer of
/// `ctx.create_ipc_buffer<T>(n)`; opened by `ctx.open_ipc_buffer<T>(handle, n)` in another process.
struct IpcMemHandle {
    /// The api of the device that made it: "cuda" or "cpu".
    std::string api;
    std::array<uint8_t, 64> bytes{};

    /// "cuda:" followed by 128 hex digits: to hand to another process (an argument, an env var).
    std::string to_string() const;
    /// Reads to_string()'s form back; LogicError naming what is wrong otherwise.
    static IpcMemHandle from_string(std::string_view text);
    friend bool operator==(const IpcMemHandle &, const IpcMemHandle &) = default;
};

namespace detail {
struct ContextImpl;
struct StreamImpl;
/// ctx.create_pitched_buffer: `height` rows of `width` elements of `element_bytes`.
std::shared_ptr<RawDeviceBuffer> create_pitched(const std::shared_ptr<ContextImpl> &ctx, size_t width,
                                                size_t height, size_t element_bytes, size_t *pitch);
/// ctx/stream.enqueue_copy_2d/3d; `call` names the operation in messages.
void enqueue_copy_3d(ContextImpl &ctx, StreamImpl *stream, const Copy3D &c, bool three_d);
/// ctx.create_ipc_buffer: `bytes` of device memory that ipc_handle can share.
std::shared_ptr<RawDeviceBuffer> create_shareable(const std::shared_ptr<ContextImpl> &ctx, size_t n,
                                                  size_t element_bytes);
IpcMemHandle ipc_handle(ContextImpl &ctx, const RawDeviceBuffer *raw, uint64_t address, size_t bytes);
std::shared_ptr<RawDeviceBuffer> open_ipc(const std::shared_ptr<ContextImpl> &ctx, const IpcMemHandle &h,
                                          size_t n, size_t element_bytes);
/// enqueue_copy with a DeviceBuffer of a context other than `ctx`: see [Note] Copies between
/// contexts in runtime/lib/Memory2D.cpp.
void copy_across_contexts(ContextImpl &ctx, StreamImpl *stream, MemSide dst_side, uint64_t dst,
                          const ContextImpl *dst_ctx, MemSide src_side, uint64_t src, const ContextImpl *src_ctx,
                          size_t bytes);
} // namespace detail

} // namespace ember

#endif // EMBER_RUNTIME_MEMORY2D_H
