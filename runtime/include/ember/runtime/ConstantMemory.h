/// \file
/// Constant memory from the host: `DeviceGlobal` (a loaded function's constant array, what
/// `DeviceFunction::get_global(name)` returns, copied to and from with `enqueue_copy`) and the
/// launch option `constant_memory({ConstantMemoryMapping{name, ptr, bytes}, ...})` of Mojo's
/// enqueue_function. The kernel side is `constant_array<T, N>(name)` (dsl/Value.h).
#ifndef EMBER_RUNTIME_CONSTANTMEMORY_H
#define EMBER_RUNTIME_CONSTANTMEMORY_H

#include "ember/runtime/Buffer.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember {

namespace detail {
struct ContextImpl;
struct StreamImpl;
struct FunctionImpl;
} // namespace detail

/// One constant array to write before a launch (Mojo's ConstantMemoryMapping): `bytes` bytes from
/// `host_ptr` to the kernel's constant array `name`. `bytes` must be the array's size.
struct ConstantMemoryMapping {
    std::string name;
    const void *host_ptr = nullptr;
    size_t bytes = 0;
};

/// The launch option made by `constant_memory(...)`.
struct LaunchConstantMemory {
    std::vector<ConstantMemoryMapping> mappings;
};

/// `ctx.enqueue_function(f, args..., grid_dim(g), block_dim(b), constant_memory({{"coeffs",
/// host, 1024}}))`: copies each mapping to the kernel's constant array of that name, on the
/// launch's stream, before the launch (later launches see the values too). Pageable host memory
/// may be reused as soon as the call returns (page-locked memory once the stream has run the
/// copy). An unknown name or a size other than the array's is a LogicError, before anything is
/// enqueued.
inline LaunchConstantMemory constant_memory(std::vector<ConstantMemoryMapping> mappings) {
    return {std::move(mappings)};
}

/// A module global of a loaded kernel: one of its constant arrays, in one context (CUDA:
/// cuModuleGetGlobal's address; the CPU device: the JIT'd object's global). Made by
/// `DeviceFunction::get_global(name)`; keeps the function (and its module) alive. Copy to and
/// from it with `ctx.enqueue_copy` (or a DeviceStream's), as with a DeviceBuffer: from or to a
/// host pointer (the global's size), a HostBuffer<T> or a DeviceBuffer<T> of the same size in
/// bytes, or from a std::vector<T>; a size mismatch is a LogicError naming the global. Every
/// launch of the function after the copy (on the stream, or after a synchronisation) reads the
/// new values.
class DeviceGlobal {
public:
    DeviceGlobal() = default;
    DeviceGlobal(std::shared_ptr<detail::FunctionImpl> fn, const detail::ContextImpl *ctx, std::string name,
                 uint64_t address, size_t bytes)
        : fn_(std::move(fn)), ctx_(ctx), name_(std::move(name)), address_(address), bytes_(bytes) {}

    /// The name the kernel declared it with.
    const std::string &name() const { return name_; }
    /// The device address (a CUdeviceptr on CUDA; a host address on the CPU device).
    uint64_t address() const { return address_; }
    /// Its size in bytes (elements times the element size).
    size_t bytes() const { return bytes_; }
    explicit operator bool() const { return fn_ != nullptr; }

    const std::shared_ptr<detail::FunctionImpl> &function() const { return fn_; }
    const detail::ContextImpl *context() const { return ctx_; }

private:
    std::shared_ptr<detail::FunctionImpl> fn_;
    const detail::ContextImpl *ctx_ = nullptr;
    std::string name_;
    uint64_t address_ = 0;
    size_t bytes_ = 0;
};

namespace detail {

/// The constant array `name` of `fn` (LogicError listing the kernel's constant arrays when it has
/// none of that name).
DeviceGlobal get_global(const std::shared_ptr<FunctionImpl> &fn, std::string_view name);
/// Throws LogicError when `g` is empty or belongs to another context than `ctx`.
void check_global(const ContextImpl &ctx, const DeviceGlobal &g, const char *which);
/// Throws LogicError when `given` bytes are not `g.bytes()`: "... global 'coeffs' has 1024 bytes
/// but the source has 512".
void check_global_bytes(const DeviceGlobal &g, size_t given, const char *which);
/// Copies each mapping to `fn`'s constant array on `stream` (the default stream when null),
/// after checking every one of them.
void write_constant_memory(ContextImpl &ctx, StreamImpl *stream, FunctionImpl &fn,
                           const std::vector<ConstantMemoryMapping> &mappings);

// enqueue_copy overloads (typed_copy in DeviceContext.h). Host pointers copy the global's size.
template <class T> void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceGlobal &dst, const T *src) {
    check_global(ctx, dst, "destination");
    if (!src) throw_null_buffer("source pointer");
    check_global_bytes(dst, dst.bytes() / sizeof(T) * sizeof(T), "source pointer's elements");
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.context(), MemSide::Host,
                       reinterpret_cast<uint64_t>(src), nullptr, dst.bytes(), stream);
}
template <class T> void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceGlobal &dst, T *src) {
    typed_copy(ctx, stream, dst, static_cast<const T *>(src));
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceGlobal &dst, const HostBuffer<T> &src) {
    check_global(ctx, dst, "destination");
    require(src, "source HostBuffer");
    check_global_bytes(dst, src.bytes(), "source HostBuffer");
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.context(), MemSide::Host,
                       reinterpret_cast<uint64_t>(src.data()), src.raw()->context().get(), dst.bytes(), stream);
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceGlobal &dst, const std::vector<T> &src) {
    check_global(ctx, dst, "destination");
    check_global_bytes(dst, src.size() * sizeof(T), "source vector");
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.context(), MemSide::Host,
                       reinterpret_cast<uint64_t>(src.data()), nullptr, dst.bytes(), stream);
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceGlobal &dst, const DeviceBuffer<T> &src) {
    check_global(ctx, dst, "destination");
    require(src, "source DeviceBuffer");
    check_global_bytes(dst, src.bytes(), "source DeviceBuffer");
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.context(), MemSide::Device, src.address(),
                       src.raw()->context().get(), dst.bytes(), stream);
}
template <class T> void typed_copy(ContextImpl &ctx, StreamImpl *stream, T *dst, const DeviceGlobal &src) {
    check_global(ctx, src, "source");
    if (!dst) throw_null_buffer("destination pointer");
    check_global_bytes(src, src.bytes() / sizeof(T) * sizeof(T), "destination pointer's elements");
    enqueue_copy_bytes(ctx, MemSide::Host, reinterpret_cast<uint64_t>(dst), nullptr, MemSide::Device, src.address(),
                       src.context(), src.bytes(), stream);
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const HostBuffer<T> &dst, const DeviceGlobal &src) {
    check_global(ctx, src, "source");
    require(dst, "destination HostBuffer");
    check_global_bytes(src, dst.bytes(), "destination HostBuffer");
    enqueue_copy_bytes(ctx, MemSide::Host, reinterpret_cast<uint64_t>(dst.data()), dst.raw()->context().get(),
                       MemSide::Device, src.address(), src.context(), src.bytes(), stream);
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceBuffer<T> &dst, const DeviceGlobal &src) {
    check_global(ctx, src, "source");
    require(dst, "destination DeviceBuffer");
    check_global_bytes(src, dst.bytes(), "destination DeviceBuffer");
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.raw()->context().get(), MemSide::Device,
                       src.address(), src.context(), src.bytes(), stream);
}

} // namespace detail
} // namespace ember

#endif // EMBER_RUNTIME_CONSTANTMEMORY_H
