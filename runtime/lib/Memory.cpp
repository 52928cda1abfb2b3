/// \file
/// Memory calls of DeviceContext (ember/runtime/Memory.h): memset, sub-buffer checks,
/// map_to_host copies, page-locked, mapped, managed and registered host memory.
#include "ember/runtime/DeviceContext.h"

#include "Backend.h"
#include "ContextImpl.h"
#include "Timeline.h"

#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace ember::detail {

namespace {

std::string hex(uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

BackendStream &stream_or_default(ContextImpl &ctx, StreamImpl *stream) {
    return stream ? *stream->stream : *ctx.backend->default_stream();
}

/// The pointers malloc_host returned and free_host has not freed yet, with their context (which
/// may be gone) and its label.
struct HostAllocation {
    std::weak_ptr<ContextImpl> ctx;
    std::string label;
};
struct HostAllocations {
    std::mutex mutex;
    std::unordered_map<const void *, HostAllocation> live;
};
HostAllocations &host_allocations() {
    static auto *h = new HostAllocations; // leaked: used by destructors at exit
    return *h;
}

/// The host ranges registered now (by start), process-wide as page-locking is.
struct Registrations {
    std::mutex mutex;
    /// start -> (bytes, label of the registering context).
    std::map<uintptr_t, std::pair<size_t, std::string>> ranges;
};
Registrations &registrations() {
    static auto *r = new Registrations;
    return *r;
}

void check_buffer_of(const ContextImpl &ctx, const RawDeviceBuffer *raw, const char *call) {
    if (!raw) throw_empty_buffer(call, "DeviceBuffer");
    if (raw->context().get() != &ctx) {
        auto [of, on] = two_contexts(*raw->context(), ctx);
        throw LogicError(std::string(call) + ": the DeviceBuffer belongs to " + of + " but the call runs on " + on);
    }
}

} // namespace

void throw_empty_buffer(const char *call, const char *what) {
    throw LogicError(std::string(call) + ": the " + what + " is empty (default-constructed or moved-from)");
}

void throw_moved_from(const char *what, const char *method, const char *hint) {
    throw LogicError(std::string("use of a moved-from ") + what + " in " + method + ": " + hint);
}

void throw_empty_handle(const char *what, const char *method, const char *hint) {
    throw LogicError(std::string("use of an empty ") + what + " (default-constructed or moved-from) in " + method +
                     ": " + hint);
}

void check_sub_buffer(const char *kind, size_t size, size_t elem, size_t byte_offset, size_t offset, size_t count,
                      size_t view_elem, size_t view_align) {
    const std::string view = "create_sub_buffer(offset " + std::to_string(offset) + ", count " +
                             std::to_string(count) + ")";
    if (offset > size)
        throw LogicError(view + ": offset " + std::to_string(offset) + " is past the end of the " + kind + " of " +
                         std::to_string(size) + " elements");
    const size_t left = (size - offset) * elem;
    if (count > left / view_elem)
        throw LogicError(view + ": " + std::to_string(count) + " elements of " + std::to_string(view_elem) +
                         " bytes from element " + std::to_string(offset) + " do not fit in the " + kind + " of " +
                         std::to_string(size) + " elements of " + std::to_string(elem) + " bytes (size " +
                         std::to_string(size) + "; " + std::to_string(left) + " bytes from the offset on)");
    const size_t start = byte_offset + offset * elem;
    if (start % view_align != 0)
        throw LogicError(view + ": the view starts " + std::to_string(start) +
                         " bytes into the allocation, which is not a multiple of the " + std::to_string(view_align) +
                         "-byte alignment of its element type");
}

size_t checked_bytes(size_t elements, size_t width, const char *call) {
    size_t bytes = 0;
    if (__builtin_mul_overflow(elements, width, &bytes))
        throw LogicError(std::string(call) + ": " + std::to_string(elements) + " elements of " +
                         std::to_string(width) + " bytes overflow the address space: more than " +
                         std::to_string(std::numeric_limits<size_t>::max()) + " bytes (SIZE_MAX)");
    return bytes;
}

void throw_short_source(const char *call, size_t dst_elems, size_t src_elems) {
    throw LogicError(std::string(call) + ": the source has " + std::to_string(src_elems) +
                     " elements but the destination " + std::to_string(dst_elems) +
                     "; the source must have at least as many");
}

void copy_and_wait(ContextImpl &ctx, bool to_device, void *host, uint64_t device, size_t bytes) {
    if (bytes == 0) return;
    BackendStream &s = *ctx.backend->default_stream();
    auto copy = [&] {
        if (to_device)
            s.copy_to_device(device, host, bytes);
        else
            s.copy_from_device(host, device, bytes);
    };
    if (timeline::on()) [[unlikely]] {
        const char *name = to_device ? "copy HtoD" : "copy DtoH";
        timeline::stream_op(ctx, ctx.backend->default_stream(), "copy", name, name,
                            timeline::Args().number("bytes", int64_t(bytes)), copy);
        timeline::synchronize(ctx, ctx.backend->default_stream(), "synchronize");
        return;
    }
    copy();
    s.synchronize();
}

namespace {
/// BackendStream::memset, on the timeline when it records.
void memset_on(ContextImpl &ctx, StreamImpl *stream, uint64_t address, uint64_t pattern,
               unsigned width, size_t count) {
    BackendStream &s = stream_or_default(ctx, stream);
    if (timeline::on()) [[unlikely]]
        timeline::stream_op(ctx, timeline::stream_of(ctx, stream), "memset", "memset", "memset",
                            timeline::Args()
                                .number("bytes", int64_t(count * width))
                                .number("width", width)
                                .number("count", int64_t(count)),
                            [&] { s.memset(address, pattern, width, count); });
    else
        s.memset(address, pattern, width, count);
}
} // namespace

void enqueue_memset_bytes(ContextImpl &ctx, StreamImpl *stream, const RawDeviceBuffer *raw, uint64_t address,
                          uint64_t pattern, unsigned width, size_t count, const char *call) {
    check_buffer_of(ctx, raw, call);
    if (count == 0) return;
    memset_on(ctx, stream, address, pattern, width, count);
}

void memset_units(ContextImpl &ctx, StreamImpl *stream, const RawDeviceBuffer *raw, uint64_t address,
                  size_t buffer_bytes, uint64_t value, unsigned width, size_t count, size_t offset, const char *call,
                  bool wait) {
    check_buffer_of(ctx, raw, call);
    const size_t units = buffer_bytes / width;
    if (offset > units || count > units - offset)
        throw LogicError(std::string(call) + ": offset " + std::to_string(offset) + " + count " +
                         std::to_string(count) + " units of " + std::to_string(width) +
                         " bytes exceed the DeviceBuffer's " + std::to_string(buffer_bytes) + " bytes (" +
                         std::to_string(units) + " units)");
    if (address % width != 0)
        throw LogicError(std::string(call) + ": the DeviceBuffer's address " + hex(address) +
                         " is not aligned to " + std::to_string(width) + " bytes, as the driver requires");
    if (count) memset_on(ctx, stream, address + offset * width, value, width, count);
    if (!wait) return;
    if (timeline::on()) [[unlikely]]
        timeline::synchronize(ctx, timeline::stream_of(ctx, stream), "synchronize");
    else
        stream_or_default(ctx, stream).synchronize();
}

StreamImpl *stream_of(ContextImpl &ctx, const std::shared_ptr<StreamImpl> &stream, const char *call) {
    if (stream->context.get() != &ctx) {
        auto [of, on] = two_contexts(*stream->context, ctx);
        throw LogicError(std::string(call) + ": the stream belongs to " + of + " but the call runs on " + on);
    }
    return stream.get();
}

std::shared_ptr<RawDeviceBuffer> allocate_managed(const std::shared_ptr<ContextImpl> &ctx, size_t bytes,
                                                  MemAttach attach) {
    if (attach != MemAttach::global && attach != MemAttach::host)
        throw LogicError("create_managed_buffer: managed memory is allocated attached MemAttach::global or "
                         "MemAttach::host; attach it to a single stream afterwards with "
                         "ManagedBuffer::attach(MemAttach::single, stream)");
    uint64_t p = bytes ? ctx->backend->allocate_managed(bytes, static_cast<unsigned>(attach)) : 0;
    return std::make_shared<RawDeviceBuffer>(ctx, p, bytes);
}

void attach_managed(const RawDeviceBuffer *raw, StreamImpl *stream, MemAttach attach) {
    if (!raw) throw_empty_buffer("attach", "ManagedBuffer");
    if (attach != MemAttach::global && attach != MemAttach::host && attach != MemAttach::single)
        throw LogicError("attach: " + std::to_string(static_cast<unsigned>(attach)) +
                         " is not one MemAttach value (global, host or single)");
    if (raw->bytes() == 0) return;
    ContextImpl &ctx = *raw->context();
    stream_or_default(ctx, stream).attach_managed(raw->address(), static_cast<unsigned>(attach));
}

std::shared_ptr<RawHostBuffer> allocate_host_mapped(const std::shared_ptr<ContextImpl> &ctx, size_t bytes,
                                                    uint64_t *device_address) {
    *device_address = 0;
    void *p = bytes ? ctx->backend->allocate_host_mapped(bytes, device_address) : nullptr;
    return std::make_shared<RawHostBuffer>(ctx, p, bytes);
}

void *malloc_host(const std::shared_ptr<ContextImpl> &ctx, size_t bytes) {
    // A unique pointer even for 0 elements, so that free_host pairs with every call.
    void *p = ctx->backend->allocate_host(bytes ? bytes : 1);
    try {
        HostAllocations &h = host_allocations();
        std::lock_guard<std::mutex> lock(h.mutex);
        h.live[p] = HostAllocation{ctx, ctx->label};
    } catch (...) {
        ctx->backend->deallocate_host(p);
        throw;
    }
    return p;
}

void free_host(ContextImpl &ctx, const void *p) {
    if (!p) return;
    {
        HostAllocations &h = host_allocations();
        std::lock_guard<std::mutex> lock(h.mutex);
        auto it = h.live.find(p);
        if (it == h.live.end())
            throw LogicError("free_host: " + hex(reinterpret_cast<uintptr_t>(p)) +
                             " was not returned by malloc_host, or was freed already");
        if (it->second.ctx.lock().get() != &ctx)
            throw LogicError("free_host: " + hex(reinterpret_cast<uintptr_t>(p)) + " was allocated by " +
                             it->second.label + (it->second.ctx.expired() ? " (now destroyed)" : "") +
                             "; free it with that context, not with " + ctx.label);
        h.live.erase(it);
    }
    ctx.backend->deallocate_host(const_cast<void *>(p));
}

uint64_t register_host(ContextImpl &ctx, void *p, size_t bytes) {
    if (!p || bytes == 0)
        throw LogicError("register_host_memory: " + std::string(p ? "0 bytes" : "a null pointer") +
                         " cannot be registered");
    const auto start = reinterpret_cast<uintptr_t>(p);
    if (bytes > std::numeric_limits<uintptr_t>::max() - start)
        throw LogicError("register_host_memory: " + std::to_string(bytes) + " bytes at " + hex(start) +
                         " overflow the address space");
    Registrations &r = registrations();
    std::lock_guard<std::mutex> lock(r.mutex);
    // The registered range starting at or before p, and the first one after it.
    auto next = r.ranges.upper_bound(start);
    auto overlap = [&](std::map<uintptr_t, std::pair<size_t, std::string>>::iterator it) {
        throw LogicError("register_host_memory: [" + hex(start) + ", " + hex(start + bytes) + ") overlaps [" +
                         hex(it->first) + ", " + hex(it->first + it->second.first) + "), registered with " +
                         it->second.second + "; unregister it first");
    };
    if (next != r.ranges.end() && next->first < start + bytes) overlap(next);
    if (next != r.ranges.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.first > start) overlap(prev);
    }
    uint64_t device = ctx.backend->register_host(p, bytes);
    try {
        r.ranges[start] = {bytes, ctx.label};
    } catch (...) {
        ctx.backend->unregister_host(p);
        throw;
    }
    return device;
}

void unregister_host(ContextImpl &ctx, void *p) {
    {
        Registrations &r = registrations();
        std::lock_guard<std::mutex> lock(r.mutex);
        auto it = r.ranges.find(reinterpret_cast<uintptr_t>(p));
        if (it == r.ranges.end())
            throw LogicError("unregister: host memory at " + hex(reinterpret_cast<uintptr_t>(p)) +
                             " is not registered");
        r.ranges.erase(it);
    }
    ctx.backend->unregister_host(p);
}

void warn(const char *what, const char *why) noexcept { std::fprintf(stderr, "ember: warning: %s: %s\n", what, why); }

} // namespace ember::detail

namespace ember::detail {

void check_mapped_host_context(const ContextImpl &ctx, const FunctionImpl &fn, size_t index, const char *field,
                               const RawHostBuffer *raw) {
    if (!raw)
        throw LogicError("kernel '" + fn.kernel->ir.name + "': " + argument_label(fn, index, field) +
                         " is an empty HostMappedBuffer (default-constructed or moved-from)");
    if (raw->context()->backend->api() != ctx.backend->api())
        throw LogicError("kernel '" + fn.kernel->ir.name + "': " + argument_label(fn, index, field) +
                         " is a HostMappedBuffer of " + raw->context()->label + ", which a kernel on " + ctx.label +
                         " cannot address; make it with that device's context");
}

} // namespace ember::detail
