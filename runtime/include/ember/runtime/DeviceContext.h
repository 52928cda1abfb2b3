/// \file
/// `DeviceContext`: one device and its stream of queued operations, as Mojo's `gpu.host`
/// DeviceContext: buffers, copies, compile_function, enqueue_function, synchronize.
#ifndef EMBER_RUNTIME_DEVICECONTEXT_H
#define EMBER_RUNTIME_DEVICECONTEXT_H

#include "ember/dsl/Kernel.h"
#include "ember/runtime/Buffer.h"
#include "ember/runtime/CompileReport.h"
#include "ember/runtime/ConstantMemory.h"
#include "ember/runtime/DeviceAttribute.h"
#include "ember/runtime/DevicePassable.h"
#include "ember/runtime/Function.h"
#include "ember/runtime/Launch.h"
#include "ember/runtime/Memory2D.h"
#include "ember/runtime/TensorMap.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace ember {

/// A kernel compiled and loaded for one DeviceContext. Typed by the kernel's parameters, so
/// `enqueue_function` checks its arguments at compile time. Cheap to copy. A default-constructed
/// (or moved-from) DeviceFunction is empty: every use of it is a LogicError until a compiled
/// function is assigned to it.
template <class... Params> class DeviceFunction : public FunctionQueries<DeviceFunction<Params...>> {
public:
    DeviceFunction() = default;
    DeviceFunction(std::shared_ptr<detail::FunctionImpl> impl) : impl_(std::move(impl)) {} // NOLINT

    /// The kernel's name.
    const std::string &name() const;
    /// Generated assembly (PTX on NVIDIA, host assembly on the CPU device).
    std::string assembly() const;
    /// Seconds spent compiling (lowering + optimisation + code generation) and loading.
    double compile_seconds() const;
    double load_seconds() const;
    /// Resources and stage times of this kernel on this target ([Note] Compile reports).
    CompileReport report() const;
    /// The kernel's constant array `name` (`constant_array<T, N>(name)`) in this context, to copy
    /// to and from with enqueue_copy (PyCUDA's get_global). LogicError listing the kernel's
    /// constant arrays when it has none of that name.
    DeviceGlobal get_global(std::string_view name) const {
        checked("get_global");
        return detail::get_global(impl_, name);
    }

    explicit operator bool() const { return impl_ != nullptr; }
    const std::shared_ptr<detail::FunctionImpl> &impl() const { return impl_; }
    /// The function's state; LogicError naming `method` when this DeviceFunction is empty.
    detail::FunctionImpl &checked(const char *method) const {
        if (!impl_) [[unlikely]]
            detail::throw_empty_handle("DeviceFunction", method,
                                       "assign it a function from compile_function or DeviceModule::get_function");
        return *impl_;
    }

private:
    std::shared_ptr<detail::FunctionImpl> impl_;
};

namespace detail {
const std::string &function_name(const FunctionImpl &fn);
std::string function_assembly(const FunctionImpl &fn);
double function_compile_seconds(const FunctionImpl &fn);
double function_load_seconds(const FunctionImpl &fn);
CompileReport function_report(const FunctionImpl &fn);
} // namespace detail

template <class... P> const std::string &DeviceFunction<P...>::name() const {
    return detail::function_name(checked("name"));
}
template <class... P> std::string DeviceFunction<P...>::assembly() const {
    return detail::function_assembly(checked("assembly"));
}
template <class... P> double DeviceFunction<P...>::compile_seconds() const {
    return detail::function_compile_seconds(checked("compile_seconds"));
}
template <class... P> double DeviceFunction<P...>::load_seconds() const {
    return detail::function_load_seconds(checked("load_seconds"));
}
template <class... P> CompileReport DeviceFunction<P...>::report() const {
    return detail::function_report(checked("report"));
}

/// How an event is made (PyCUDA's event_flags, CUevent_flags); combine with `|`.
enum class EventFlags : unsigned {
    none = 0,
    /// synchronize() sleeps instead of spinning (CU_EVENT_BLOCKING_SYNC).
    blocking_sync = 1,
    /// No timestamps: cheaper, for ordering only (CU_EVENT_DISABLE_TIMING).
    disable_timing = 2,
    /// Shareable with another process (CU_EVENT_INTERPROCESS); needs disable_timing.
    interprocess = 4,
};
constexpr EventFlags operator|(EventFlags a, EventFlags b) {
    return static_cast<EventFlags>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr bool has_flag(EventFlags set, EventFlags f) {
    return (static_cast<unsigned>(set) & static_cast<unsigned>(f)) != 0;
}

class DeviceContext;
class DeviceStream;
class DeviceGraph;
class DeviceModule;

/// A marker in a stream's work, as Mojo's DeviceEvent and PyCUDA's Event: record it on a
/// stream, wait for it (on the host, or on another stream with enqueue_wait_for), time the work
/// between two. Made by `ctx.create_event()` or `stream.create_event()`. Cheap to copy; copies
/// are the same event.
class DeviceEvent {
public:
    DeviceEvent() = default;
    explicit DeviceEvent(std::shared_ptr<detail::EventImpl> impl) : impl_(std::move(impl)) {}

    /// Records the event at the current end of `stream` (its context's default stream when
    /// omitted). Returns *this, as PyCUDA's record.
    const DeviceEvent &record(const DeviceStream &stream) const;
    const DeviceEvent &record() const;
    /// Blocks until the work before the last record has finished (at once if never recorded).
    /// Errors of that work (a faulting kernel) surface here as LaunchError.
    void synchronize() const;
    /// Whether the work before the last record has finished (true if never recorded).
    bool query() const;
    bool is_done() const { return query(); }
    /// Milliseconds from `earlier` to this event, both recorded and completed.
    float time_since(const DeviceEvent &earlier) const;
    /// Milliseconds from this event to `later`.
    float time_till(const DeviceEvent &later) const { return later.time_since(*this); }

    explicit operator bool() const { return impl_ != nullptr; }
    const std::shared_ptr<detail::EventImpl> &impl() const { return impl_; }

private:
    std::shared_ptr<detail::EventImpl> impl_;
};

/// A queue of operations on one device, as Mojo's DeviceStream and PyCUDA's Stream: operations
/// on one stream run in order; operations on different streams may overlap. A DeviceContext's
/// own enqueue_* calls go to its default stream (`ctx.stream()`); `ctx.create_stream()` makes
/// more. Cheap to copy; the stream lives while a copy (or, for the default stream, its context)
/// does. See [Note] Streams in the runtime's Backend.h for how buffers and streams interact.
class DeviceStream {
public:
    explicit DeviceStream(std::shared_ptr<detail::StreamImpl> impl) : impl_(std::move(impl)) {}

    /// Blocks until every operation enqueued on this stream has finished; errors of earlier
    /// asynchronous operations (a faulting kernel) surface here as LaunchError.
    void synchronize() const;
    /// Whether every operation enqueued so far has finished (PyCUDA's is_done).
    bool is_done() const;
    /// Later operations on this stream wait for the work before `event`'s last record (the
    /// event may belong to another context or device).
    void enqueue_wait_for(const DeviceEvent &event) const;
    /// Records `event` at the current end of this stream.
    void record_event(const DeviceEvent &event) const;
    /// A new event of this stream's context (not yet recorded).
    DeviceEvent create_event(EventFlags flags = EventFlags::none) const;
    /// The priority the stream was made with (lower numbers are more urgent on CUDA).
    int priority() const;
    /// The context the stream belongs to.
    DeviceContext context() const;

    /// As DeviceContext::enqueue_function, on this stream.
    template <class... P, class... A> void enqueue_function(const DeviceFunction<P...> &f, A &&...a) const;
    template <class... P, class... A> void enqueue_function(const Kernel<P...> &k, A &&...a) const;
    /// As DeviceContext::enqueue_copy, on this stream.
    template <class Dst, class Src> void enqueue_copy(const Dst &dst, const Src &src) const;
    /// As DeviceContext::enqueue_copy_2d / enqueue_copy_3d, on this stream.
    void enqueue_copy_2d(const Copy2D &c) const;
    void enqueue_copy_3d(const Copy3D &c) const;

    /// Graphs (see DeviceGraph.h): from begin_capture() to end_capture(), the operations
    /// enqueued on this stream are recorded into a graph instead of running. LogicError when the
    /// stream captures already.
    void begin_capture() const;
    /// Ends the capture and returns the graph. LogicError when the stream does not capture.
    DeviceGraph end_capture() const;
    /// Whether the stream is capturing (CUDA's cuStreamIsCapturing).
    bool is_capturing() const;
    /// As DeviceContext::enqueue_memset, on this stream.
    template <class T> void enqueue_memset(const DeviceBuffer<T> &dst, std::type_identity_t<T> value) const;

    const std::shared_ptr<detail::StreamImpl> &impl() const { return impl_; }
    /// impl(); LogicError naming `method` when this DeviceStream was moved from.
    const std::shared_ptr<detail::StreamImpl> &checked_impl(const char *method) const {
        live(method);
        return impl_;
    }
    /// Whether both are the same stream.
    friend bool operator==(const DeviceStream &a, const DeviceStream &b);

private:
    detail::StreamImpl &live(const char *method) const {
        if (!impl_) [[unlikely]]
            detail::throw_moved_from("DeviceStream", method,
                                     "use the DeviceStream it was moved to, or assign it ctx.stream() or "
                                     "ctx.create_stream()");
        return *impl_;
    }

    std::shared_ptr<detail::StreamImpl> impl_;
};

/// One device (a GPU, or the CPU device) and the stream its operations are queued on. Copies
/// share the same device context.
class DeviceContext {
public:
    /// `api` is "cuda", "cpu", or "default": `$EMBER_API` when set, else the first GPU, else the
    /// CPU device. Throws RuntimeError/LogicError when there is no such device, naming the api,
    /// the id and how many devices there are.
    explicit DeviceContext(int device_id = 0, std::string_view api = "default");

    /// Devices of `api` on this machine (the CPU device counts as one).
    static int number_of_devices(std::string_view api = "default");

    /// The device's name as its API reports it.
    std::string name() const;
    /// "cuda" or "cpu".
    std::string api() const;
    int id() const;
    /// What kernels are compiled for on this device, e.g. "nvptx:sm_90" or "cpu".
    std::string target() const;

    /// A device buffer of n elements (contents undefined until written). LogicError when
    /// n * sizeof(T) overflows size_t, MemoryError when the device is out of memory.
    template <class T> DeviceBuffer<T> enqueue_create_buffer(size_t n) const {
        const size_t bytes = detail::checked_bytes(n, sizeof(T), "enqueue_create_buffer");
        return DeviceBuffer<T>(std::make_shared<detail::RawDeviceBuffer>(live_ptr("enqueue_create_buffer"), bytes), n);
    }
    /// A host buffer of n elements, page-locked on GPUs (contents undefined until written).
    /// LogicError when n * sizeof(T) overflows size_t.
    template <class T> HostBuffer<T> enqueue_create_host_buffer(size_t n) const {
        const size_t bytes = detail::checked_bytes(n, sizeof(T), "enqueue_create_host_buffer");
        return HostBuffer<T>(std::make_shared<detail::RawHostBuffer>(live_ptr("enqueue_create_host_buffer"), bytes), n);
    }

    /// Copies, in (destination, source) order as memcpy: between DeviceBuffers and HostBuffers of
    /// one element type, or a DeviceBuffer and a raw host pointer to its size() elements.
    /// Buffer-to-buffer copies need equal sizes (LogicError otherwise).
    template <class Dst, class Src> void enqueue_copy(const Dst &dst, const Src &src) const {
        detail::typed_copy(live("enqueue_copy"), nullptr, dst, src);
    }

    /// Blocks until every operation queued on this context's stream has finished. Errors of
    /// earlier asynchronous operations (a faulting kernel) surface here as LaunchError.
    void synchronize() const;

    /// The stream this context's own enqueue_* calls use.
    DeviceStream stream() const;
    /// A new stream of this device. `priority` lies in stream_priority_range() (LogicError
    /// otherwise); 0, the default, is the least urgent. The stream first waits for the work
    /// enqueued on this context so far.
    DeviceStream create_stream(int priority = 0) const;
    /// {least, greatest} stream priority: {0, -5} on recent NVIDIA GPUs (lower numbers are more
    /// urgent, as cuCtxGetStreamPriorityRange), {0, 0} on the CPU device.
    std::pair<int, int> stream_priority_range() const;
    /// A new event of this device (not yet recorded).
    DeviceEvent create_event(EventFlags flags = EventFlags::none) const;
    /// Records `event` at the current end of this context's stream.
    void record_event(const DeviceEvent &event) const;
    /// Later operations on this context's stream wait for the work before `event`'s last record.
    void enqueue_wait_for(const DeviceEvent &event) const;
    /// Later operations on this context's stream wait for everything enqueued on `other`'s
    /// stream so far (Mojo's enqueue_wait_for(other)); `other` may be another device.
    void enqueue_wait_for(const DeviceContext &other) const;

    /// Nanoseconds that `num_iters` calls of `func(ctx)` take on the device, measured with events
    /// around them on this context's stream (Mojo's execution_time): the enqueued work's time,
    /// not the host's. Synchronises before returning.
    template <class F> int64_t execution_time(F &&func, int num_iters) const {
        return time_iterations([&](int) { func(*this); }, num_iters);
    }
    /// As execution_time, calling `func(ctx, i)` with the iteration number i.
    template <class F> int64_t execution_time_iter(F &&func, int num_iters) const {
        return time_iterations([&](int i) { func(*this, i); }, num_iters);
    }

    // Device information and context limits.

    /// The value of `attribute` (Mojo's and PyCUDA's get_attribute; cuDeviceGetAttribute).
    /// Throws LogicError naming the attribute when the device's driver is older than it. The CPU
    /// device answers every attribute (docs/runtime.md, "Devices").
    int get_attribute(DeviceAttribute attribute) const;
    /// Every attribute the device knows, by attribute (PyCUDA's get_attributes): all of
    /// `all_device_attributes` on the CPU device and on current drivers.
    std::map<DeviceAttribute, int> get_attributes() const;
    /// {major, minor}: {9, 0} for an H100; {0, 0} on the CPU device, which is no NVIDIA GPU.
    std::pair<int, int> compute_capability() const;
    /// The CUDA driver's version, as cuDriverGetVersion: 1000 * major + 10 * minor (12040 for
    /// CUDA 12.4). 0 on the CPU device, which has no driver (cuDriverGetVersion's 0 for none).
    int get_driver_version() const;
    /// The API version of the device's context (PyCUDA's Context.get_api_version;
    /// cuCtxGetApiVersion). 0 on the CPU device.
    int get_api_version() const;
    /// {free, total} bytes of device memory (Mojo's get_memory_info; cuMemGetInfo). On the CPU
    /// device: the host's MemAvailable and MemTotal (/proc/meminfo).
    std::pair<size_t, size_t> get_memory_info() const;
    /// Bytes of device memory (PyCUDA's total_memory; cuDeviceTotalMem); MemTotal on the CPU.
    size_t total_memory() const;
    /// The device's PCI address "dddd:bb:dd.f" in hexadecimal (PyCUDA's pci_bus_id). Throws
    /// LogicError on the CPU device, which has none.
    std::string pci_bus_id() const;
    /// Whether ember's kernels run on this device (Mojo's is_compatible): on a GPU, compute
    /// capability at least min_compute_capability_major.minor and a driver that accepts the PTX
    /// ISA version ember generates for it. Always true on the CPU device.
    bool is_compatible() const;
    /// A limit of the device's context (PyCUDA's Context.get_limit; cuCtxGetLimit).
    size_t get_limit(Limit limit) const;
    /// Sets a limit of the device's context (PyCUDA's Context.set_limit; cuCtxSetLimit). On CUDA
    /// the limit belongs to the device's primary context, so every DeviceContext of the device
    /// sees it, and the driver may round it (stack_size up to its granularity); printf_fifo_size
    /// and malloc_heap_size can only change before the first launch of a kernel that prints or
    /// allocates (LogicError after). On the CPU
    /// device: stack_size is the smallest stack of a GPU thread (kernel and fiber stacks; ember grows it
    /// for a kernel whose local arrays need more; at most 64 MiB, LogicError above);
    /// printf_fifo_size and malloc_heap_size are stored and returned but change nothing.
    void set_limit(Limit limit, size_t value) const;

    // Memory: memset, views, mapping, host and managed memory.
    // Memory (ember/runtime/Memory.h; docs/runtime.md, "Memory").

    /// As enqueue_create_buffer, and waits for the allocation (Mojo's create_buffer_sync).
    template <class T> DeviceBuffer<T> create_buffer_sync(size_t n) const {
        DeviceBuffer<T> b = enqueue_create_buffer<T>(n);
        synchronize();
        return b;
    }

    /// Enqueues setting every element of `dst` (a buffer or sub-buffer of this context) to
    /// `value`. T is any type of 1, 2, 4 or 8 bytes (larger ones fail to compile).
    template <class T> void enqueue_memset(const DeviceBuffer<T> &dst, std::type_identity_t<T> value) const {
        detail::typed_memset<T>(live("enqueue_memset"), nullptr, dst, value, "enqueue_memset");
    }
    /// Mojo's other name for enqueue_memset.
    template <class T> void memset(const DeviceBuffer<T> &dst, std::type_identity_t<T> value) const {
        detail::typed_memset<T>(live("memset"), nullptr, dst, value, "memset");
    }
    /// As enqueue_memset, and waits for it.
    template <class T> void memset_sync(const DeviceBuffer<T> &dst, std::type_identity_t<T> value) const {
        detail::typed_memset<T>(live("memset_sync"), nullptr, dst, value, "memset_sync");
        synchronize();
    }
    /// PyCUDA's memset_d8/d16/d32: sets `count` 8/16/32-bit units of `dst`'s memory, starting
    /// `offset` units into it, to `value`, and waits. LogicError when they do not fit in `dst`
    /// or its address is not aligned to the unit.
    template <class T>
    void memset_d8(const DeviceBuffer<T> &dst, uint8_t value, size_t count, size_t offset = 0) const {
        detail::memset_units(live("memset_d8"), nullptr, dst.raw().get(), dst.address(), dst.bytes(), value, 1, count, offset,
                             "memset_d8", true);
    }
    template <class T>
    void memset_d16(const DeviceBuffer<T> &dst, uint16_t value, size_t count, size_t offset = 0) const {
        detail::memset_units(live("memset_d16"), nullptr, dst.raw().get(), dst.address(), dst.bytes(), value, 2, count, offset,
                             "memset_d16", true);
    }
    template <class T>
    void memset_d32(const DeviceBuffer<T> &dst, uint32_t value, size_t count, size_t offset = 0) const {
        detail::memset_units(live("memset_d32"), nullptr, dst.raw().get(), dst.address(), dst.bytes(), value, 4, count, offset,
                             "memset_d32", true);
    }
    /// As memset_d8/d16/d32, enqueued on `stream` (a stream of this context), or on the
    /// context's stream when omitted; does not wait.
    template <class T>
    void memset_d8_async(const DeviceBuffer<T> &dst, uint8_t value, size_t count, const DeviceStream &stream,
                         size_t offset = 0) const;
    template <class T>
    void memset_d16_async(const DeviceBuffer<T> &dst, uint16_t value, size_t count, const DeviceStream &stream,
                          size_t offset = 0) const;
    template <class T>
    void memset_d32_async(const DeviceBuffer<T> &dst, uint32_t value, size_t count, const DeviceStream &stream,
                          size_t offset = 0) const;
    template <class T> void memset_d8_async(const DeviceBuffer<T> &dst, uint8_t value, size_t count) const {
        detail::memset_units(live("memset_d8_async"), nullptr, dst.raw().get(), dst.address(), dst.bytes(), value, 1, count, 0,
                             "memset_d8_async", false);
    }
    template <class T> void memset_d16_async(const DeviceBuffer<T> &dst, uint16_t value, size_t count) const {
        detail::memset_units(live("memset_d16_async"), nullptr, dst.raw().get(), dst.address(), dst.bytes(), value, 2, count, 0,
                             "memset_d16_async", false);
    }
    template <class T> void memset_d32_async(const DeviceBuffer<T> &dst, uint32_t value, size_t count) const {
        detail::memset_units(live("memset_d32_async"), nullptr, dst.raw().get(), dst.address(), dst.bytes(), value, 4, count, 0,
                             "memset_d32_async", false);
    }

    /// Mojo's copy names. Host pointers point to dst/src.size() elements.
    template <class T> void enqueue_copy_to_device(const DeviceBuffer<T> &dst, const T *src) const {
        enqueue_copy(dst, src);
    }
    template <class T> void enqueue_copy_from_device(T *dst, const DeviceBuffer<T> &src) const {
        enqueue_copy(dst, src);
    }
    /// Copies dst.size() elements: `src` must have at least as many (LogicError otherwise).
    template <class T>
    void enqueue_copy_device_to_device(const DeviceBuffer<T> &dst, const DeviceBuffer<T> &src) const {
        detail::check_own(live("enqueue_copy_device_to_device"), src.raw().get(), "source");
        if (src.size() < dst.size())
            detail::throw_short_source("enqueue_copy_device_to_device", dst.size(), src.size());
        enqueue_copy(dst, src.template create_sub_buffer<T>(0, dst.size()));
    }
    /// The copies above, followed by a wait for the context's stream.
    template <class T> void copy_to_device_sync(const DeviceBuffer<T> &dst, const T *src) const {
        enqueue_copy_to_device(dst, src);
        synchronize();
    }
    template <class T> void copy_from_device_sync(T *dst, const DeviceBuffer<T> &src) const {
        enqueue_copy_from_device(dst, src);
        synchronize();
    }
    template <class T>
    void copy_device_to_device_sync(const DeviceBuffer<T> &dst, const DeviceBuffer<T> &src) const {
        enqueue_copy_device_to_device(dst, src);
        synchronize();
    }
    /// enqueue_copy(dst, src), then a wait for the context's stream.
    template <class Dst, class Src> void copy_sync(const Dst &dst, const Src &src) const {
        enqueue_copy(dst, src);
        synchronize();
    }

    /// `n` elements of page-locked host memory (Mojo's malloc_host; cuMemAllocHost), for fast
    /// copies; release it with free_host. On the CPU device: ordinary host memory.
    template <class T> T *malloc_host(size_t n) const {
        static_assert(std::is_trivially_copyable_v<T>, "malloc_host: T must be trivially copyable");
        return static_cast<T *>(detail::malloc_host(live_ptr("malloc_host"), detail::checked_bytes(n, sizeof(T), "malloc_host")));
    }
    /// Frees memory of malloc_host of this context (nullptr: nothing); LogicError for any other
    /// pointer. Free it before the context goes away.
    void free_host(const void *p) const { detail::free_host(live("free_host"), p); }

    /// `n` elements of unified memory, valid on the host and in kernels (cuMemAllocManaged;
    /// PyCUDA's managed_empty). `attach` is global or host (LogicError for single: attach a
    /// stream later with ManagedBuffer::attach).
    template <class T> ManagedBuffer<T> create_managed_buffer(size_t n, MemAttach attach = MemAttach::global) const {
        const size_t bytes = detail::checked_bytes(n, sizeof(T), "create_managed_buffer");
        return ManagedBuffer<T>(DeviceBuffer<T>(detail::allocate_managed(live_ptr("create_managed_buffer"), bytes, attach), n));
    }
    /// `n` elements of page-locked host memory that kernels access in place (cuMemHostAlloc
    /// DEVICEMAP), as PyCUDA's pagelocked_empty(..., mem_flags=DEVICEMAP).
    template <class T> HostMappedBuffer<T> create_host_mapped_buffer(size_t n) const {
        uint64_t device = 0;
        auto raw = detail::allocate_host_mapped(live_ptr("create_host_mapped_buffer"), detail::checked_bytes(n, sizeof(T), "create_host_mapped_buffer"),
                                                &device);
        return HostMappedBuffer<T>(HostBuffer<T>(std::move(raw), n), device);
    }
    /// Page-locks the caller's host memory [p, p + bytes) for this device until the result is
    /// destroyed (PyCUDA's register_host_memory; cuMemHostRegister).
    RegisteredHostMemory register_host_memory(void *p, size_t bytes) const {
        uint64_t device = detail::register_host(live("register_host_memory"), p, bytes);
        return RegisteredHostMemory(live_ptr("register_host_memory"), p, bytes, device);
    }
    /// The host copy of `buf` (a buffer of this context) for one scope: see MappedHostView.
    template <class T> MappedHostView<T> map_to_host(const DeviceBuffer<T> &buf) const {
        detail::check_own(live("map_to_host"), buf.raw().get(), "mapped");
        detail::check_same_context(live("map_to_host"), *buf.raw(), "map_to_host");
        return MappedHostView<T>(buf);
    }

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
    /// `height` rows of `width` elements of T, each row starting at a multiple of the pitch
    /// (cuMemAllocPitch; on the CPU device the row's bytes rounded up to 256). LogicError for a
    /// zero width or height, MemoryError when the device is out of memory.
    template <class T> PitchedBuffer<T> create_pitched_buffer(size_t width, size_t height) const {
        size_t pitch = 0;
        auto raw = detail::create_pitched(live_ptr("create_pitched_buffer"), width, height, sizeof(T), &pitch);
        return PitchedBuffer<T>(std::move(raw), width, height, pitch);
    }
    /// Enqueues the 2-D copy `c` (cuMemcpy2DAsync) on this context's stream, after checking
    /// every region against its memory (LogicError naming the field, its value and the limit).
    /// Device memory must be this context's, or a CPU-device buffer (host memory to a GPU).
    void enqueue_copy_2d(const Copy2D &c) const;
    /// Enqueues the 3-D copy `c` (cuMemcpy3DAsync), checked as enqueue_copy_2d.
    void enqueue_copy_3d(const Copy3D &c) const;
    /// enqueue_copy_2d / enqueue_copy_3d, then waits for this context's stream.
    void copy_2d_sync(const Copy2D &c) const;
    void copy_3d_sync(const Copy3D &c) const;

    /// Whether kernels on this device can read and write `peer`'s memory once
    /// enable_peer_access(peer) was called (cuDeviceCanAccessPeer; true for the same device, and
    /// between CPU devices; false between a GPU and the CPU device).
    bool can_access(const DeviceContext &peer) const;
    /// Lets kernels on this device access `peer`'s memory (cuCtxEnablePeerAccess, and access to
    /// peer's memory pool). Calling it again is not an error. LogicError when can_access(peer) is
    /// false. Copies between devices (enqueue_copy of buffers of two contexts) work without it.
    void enable_peer_access(const DeviceContext &peer) const;
    /// Undoes enable_peer_access (cuCtxDisablePeerAccess); not an error when access is not
    /// enabled. Nothing to do on the CPU device.
    void disable_peer_access(const DeviceContext &peer) const;

    /// A device buffer of n elements that `ipc_handle` can share with another process (CUDA:
    /// cuMemAlloc, never the stream-ordered pool; CPU device: shared memory, see docs/runtime.md).
    template <class T> DeviceBuffer<T> create_ipc_buffer(size_t n) const {
        return DeviceBuffer<T>(detail::create_shareable(live_ptr("create_ipc_buffer"), n, sizeof(T)), n);
    }
    /// The handle another process passes to open_ipc_buffer (cuIpcGetMemHandle). `buffer` must
    /// come from create_ipc_buffer of this context (LogicError otherwise).
    template <class T> IpcMemHandle ipc_handle(const DeviceBuffer<T> &buffer) const {
        return detail::ipc_handle(live("ipc_handle"), buffer.raw().get(), buffer.address(), buffer.bytes());
    }
    /// Opens another process's buffer as n elements of T (cuIpcOpenMemHandle; unmapped when the
    /// last copy of the returned buffer goes away). LogicError when the handle is of another api,
    /// malformed, or its buffer holds fewer than n elements; on CUDA a process cannot open its
    /// own handles.
    template <class T> DeviceBuffer<T> open_ipc_buffer(const IpcMemHandle &handle, size_t n) const {
        return DeviceBuffer<T>(detail::open_ipc(live_ptr("open_ipc_buffer"), handle, n, sizeof(T)), n);
    }

    // Tensor maps (ember/runtime/TensorMap.h).

    /// A tensor map of `buffer` (a buffer of this context) as a row-major `rows` x `cols` matrix,
    /// rows `row_stride` elements apart (`cols` when negative), from which one load copies a box
    /// of `box_rows` x `box_cols` elements, laid out by `swizzle` ([Note] Tensor maps): for a
    /// `TensorMap<T>` kernel parameter. The map is written by a copy enqueued on this context's
    /// stream. T is an 8-, 16-, 32- or 64-bit integer, half, bfloat16, float or double (others do
    /// not compile). LogicError, naming the value and its limit, unless: rows and cols are 1 to
    /// 2^32; box_rows and box_cols 1 to 256; a box row (box_cols * sizeof(T) bytes) a multiple of
    /// 16 bytes, and at most 32, 64 or 128 bytes with the swizzle of that size; row_stride at
    /// least cols, its bytes a multiple of 16 and less than 2^40; the buffer's address a multiple
    /// of 16; the matrix within the buffer ((rows - 1) * row_stride + cols elements at most). Also
    /// a LogicError on a device without a tensor memory accelerator (an NVIDIA GPU below compute
    /// capability 9.0, an AMD GPU) and while the context's stream captures a graph.
    template <class T>
    DeviceTensorMap<T> create_tensor_map(const DeviceBuffer<T> &buffer, int64_t rows, int64_t cols,
                                         int64_t box_rows, int64_t box_cols,
                                         TensorMapSwizzle swizzle = TensorMapSwizzle::none,
                                         int64_t row_stride = -1) const {
        if constexpr (!detail::tensor_map_element_supported<T>) {
            (void)detail::create_tensor_map_element_type_is_not_supported<T>{};
            return {};
        } else {
            const detail::TensorMapShape shape{
                rows, cols, row_stride < 0 ? cols : row_stride, box_rows, box_cols, swizzle};
            return DeviceTensorMap<T>(
                detail::create_tensor_map(live_ptr("create_tensor_map"), buffer.raw(),
                                          buffer.address(), buffer.size(), sizeof(T),
                                          detail::tensor_map_element<T>(), shape),
                shape);
        }
    }

    // Function attributes, launch attributes, clusters, occupancy.

    // Constant memory and external modules.

    /// Loads PTX or a cubin (PyCUDA's module_from_buffer / module_from_file). PTX the driver
    /// rejects throws CompileError with the JIT log. The CPU device throws LogicError: it runs
    /// ember kernels only.
    DeviceModule load_module(const ModuleImage &image) const;

    // Graphs.
    /// Graphs (see DeviceGraph.h), on this context's stream: stream().begin_capture(), ...
    void begin_capture() const;
    DeviceGraph end_capture() const;
    bool is_capturing() const;
    /// Captures what `body(stream)` enqueues on this context's stream into a graph; the capture
    /// ends when body returns or throws (the partial graph is then discarded).
    template <class F> DeviceGraph capture(F &&body) const;

    /// Compiles `k` for this device and loads it.
    template <class... P>
    DeviceFunction<P...> compile_function(const Kernel<P...> &k,
                                          const CompileFunctionOptions &options = {}) const {
        return DeviceFunction<P...>(detail::compile(live_ptr("compile_function"), k.info(), options));
    }

    /// Enqueues `f` with `args...`, followed by `grid_dim(...)` and `block_dim(...)` (or one
    /// `LaunchConfig`), and optionally `shared_mem_bytes(...)`, `constant_memory(...)`, `cluster_dim(...)`
    /// and `LaunchAttribute` values. Argument types are checked at compile time (see [Note] Argument checking).
    template <class... P, class... A> void enqueue_function(const DeviceFunction<P...> &f, A &&...a) const {
        detail::enqueue_checked(live("enqueue_function"), nullptr, f.checked("enqueue_function"), std::forward_as_tuple(std::forward<A>(a)...),
                                static_cast<std::tuple<P...> *>(nullptr));
    }
    /// Compiles `k` on first use (once per context) and enqueues it.
    template <class... P, class... A> void enqueue_function(const Kernel<P...> &k, A &&...a) const {
        detail::FunctionImpl *fn = detail::cached_function(live_ptr("enqueue_function"), k.info());
        detail::enqueue_checked(live("enqueue_function"), nullptr, *fn, std::forward_as_tuple(std::forward<A>(a)...),
                                static_cast<std::tuple<P...> *>(nullptr));
    }

    const std::shared_ptr<detail::ContextImpl> &impl() const { return impl_; }
    /// impl(); LogicError naming `method` when this DeviceContext was moved from.
    const std::shared_ptr<detail::ContextImpl> &checked_impl(const char *method) const { return live_ptr(method); }

    explicit DeviceContext(std::shared_ptr<detail::ContextImpl> impl) : impl_(std::move(impl)) {}

private:
    /// The context's state; LogicError naming `method` when this DeviceContext was moved from
    /// (destroying or assigning to it is fine).
    const std::shared_ptr<detail::ContextImpl> &live_ptr(const char *method) const {
        if (!impl_) [[unlikely]]
            detail::throw_moved_from("DeviceContext", method,
                                     "it refers to no device; use the DeviceContext it was moved to, or "
                                     "assign it a new one");
        return impl_;
    }
    detail::ContextImpl &live(const char *method) const { return *live_ptr(method); }
    int64_t time_iterations(const std::function<void(int)> &body, int num_iters) const;

    std::shared_ptr<detail::ContextImpl> impl_;
};

namespace detail {
ContextImpl &stream_context(const StreamImpl &s);
const std::shared_ptr<ContextImpl> &stream_context_ptr(const StreamImpl &s);
}

template <class... P, class... A>
void DeviceStream::enqueue_function(const DeviceFunction<P...> &f, A &&...a) const {
    detail::StreamImpl &self = live("enqueue_function");
    detail::enqueue_checked(detail::stream_context(self), &self, f.checked("enqueue_function"),
                            std::forward_as_tuple(std::forward<A>(a)...), static_cast<std::tuple<P...> *>(nullptr));
}
template <class... P, class... A> void DeviceStream::enqueue_function(const Kernel<P...> &k, A &&...a) const {
    detail::StreamImpl &self = live("enqueue_function");
    detail::FunctionImpl *fn = detail::cached_function(detail::stream_context_ptr(self), k.info());
    detail::enqueue_checked(detail::stream_context(self), &self, *fn,
                            std::forward_as_tuple(std::forward<A>(a)...), static_cast<std::tuple<P...> *>(nullptr));
}
template <class Dst, class Src> void DeviceStream::enqueue_copy(const Dst &dst, const Src &src) const {
    detail::StreamImpl &self = live("enqueue_copy");
    detail::typed_copy(detail::stream_context(self), &self, dst, src);
}
template <class T> void ManagedBuffer<T>::attach(MemAttach attach, const DeviceStream &stream) const {
    if (!buf_) detail::throw_empty_buffer("attach", "ManagedBuffer");
    detail::attach_managed(buf_.raw().get(),
                           detail::stream_of(*buf_.raw()->context(), stream.checked_impl("ManagedBuffer::attach"),
                                             "ManagedBuffer::attach"),
                           attach);
}
template <class T>
void DeviceStream::enqueue_memset(const DeviceBuffer<T> &dst, std::type_identity_t<T> value) const {
    detail::StreamImpl &self = live("enqueue_memset");
    detail::typed_memset<T>(detail::stream_context(self), &self, dst, value, "enqueue_memset");
}
template <class T>
void DeviceContext::memset_d8_async(const DeviceBuffer<T> &dst, uint8_t value, size_t count, const DeviceStream &stream,
                                    size_t offset) const {
    detail::ContextImpl &self = live("memset_d8_async");
    detail::memset_units(self, detail::stream_of(self, stream.checked_impl("memset_d8_async"), "memset_d8_async"),
                         dst.raw().get(),
                         dst.address(), dst.bytes(), value, 1, count, offset, "memset_d8_async", false);
}
template <class T>
void DeviceContext::memset_d16_async(const DeviceBuffer<T> &dst, uint16_t value, size_t count,
                                     const DeviceStream &stream, size_t offset) const {
    detail::ContextImpl &self = live("memset_d16_async");
    detail::memset_units(self, detail::stream_of(self, stream.checked_impl("memset_d16_async"), "memset_d16_async"),
                         dst.raw().get(),
                         dst.address(), dst.bytes(), value, 2, count, offset, "memset_d16_async", false);
}
template <class T>
void DeviceContext::memset_d32_async(const DeviceBuffer<T> &dst, uint32_t value, size_t count,
                                     const DeviceStream &stream, size_t offset) const {
    detail::ContextImpl &self = live("memset_d32_async");
    detail::memset_units(self, detail::stream_of(self, stream.checked_impl("memset_d32_async"), "memset_d32_async"),
                         dst.raw().get(),
                         dst.address(), dst.bytes(), value, 4, count, offset, "memset_d32_async", false);
}

/// True when the machine has a GPU that some ember back end or probe can see (NVIDIA or AMD).
/// The CPU device does not count.
bool has_accelerator();
bool has_nvidia_gpu_accelerator();
bool has_amd_gpu_accelerator();

} // namespace ember

// Graphs need the complete DeviceContext and DeviceStream.
#include "ember/runtime/DeviceGraph.h"

#endif // EMBER_RUNTIME_DEVICECONTEXT_H
