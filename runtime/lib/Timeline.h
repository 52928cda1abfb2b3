/// \file
/// The timeline of EMBER_TRACE (internal; runtime/lib/Timeline.cpp): what the API layer calls
/// around the operations it hands to the back ends.
///
/// [Note] Timeline
/// ===============
/// With EMBER_TRACE=<file> set when the runtime library is loaded, the API layer (DeviceContext,
/// DeviceStream, DeviceEvent, DeviceGraphExec, the memory calls, the compile cache) records a
/// Chrome Trace Event Format timeline, written to the file at normal exit or by flush_trace():
///  - Tracks. Every host thread that calls is a track of the host process (pid = the process id,
///    tid = the OS thread id): its API spans, one per call (enqueue_copy, enqueue_function, ...,
///    synchronize, compile and its stages). Every device (context label, "cuda:0") is a process
///    of its own, with one track per stream that ran traced work ("cuda:0 stream 0 (default)",
///    "cuda:0 stream 1"): the device spans of that work. A flow arrow joins each enqueue to its
///    device span. "M" events name the tracks.
///  - Device times. Where a back end runs work asynchronously (CUDA, HIP) each traced copy,
///    memset, launch and graph replay is bracketed by a pair of timing events recorded on its
///    stream; the pair's times are read once the work has completed. Events only give times
///    relative to each other, so they are anchored on the host clock: when the API layer
///    synchronizes a stream with pending pairs, it first records a marker event at the stream's
///    end, then waits; the marker completes when the stream drains and the wait returns right
///    after (microseconds: the driver's wake-up), so the host time read then is taken as the
///    marker's, and an event E is placed at host_now - elapsed(E -> marker). The same is done
///    for a stream's pending pairs when its context is destroyed and at flush (the marker then
///    recorded on the stream, or on its context's default stream when the stream is gone, whose
///    work then finished when it was destroyed). Re-anchoring at every synchronize keeps the
///    drift between the device and host clocks out.
///  - The CPU device completes every operation before its enqueue call returns ([Note] Streams
///    in Backend.h): a kernel's blocks run on the thread pool while the caller waits. Its device
///    span is that real interval, read on the host clock, with no events.
///  - Work captured into a graph does not run: its enqueue is a host span marked "captured"; a
///    replay of the graph is one span (host and device).
///  - Compiles: "compile <kernel>" on the calling thread, holding the compile cache's lookup
///    (its level: memory, disk, compiled), the disk read and write, the compiler's stages
///    (lower, optimise, codegen) and the load; "trace <kernel>" at the time and on the thread
///    where the lambda was traced. The compiler measures its stages as durations: they are laid
///    end to end from where the compiler began (after the disk lookup).
///  - Size. A program that runs for hours must not grow without bound: once the timeline holds
///    EMBER_TRACE_MAX_EVENTS events (a million by default, about 150 MB), operations that begin
///    later are not recorded, only counted (otherData.dropped_operations), with one warning. The
///    device spans of operations recorded before are still placed, so the file may hold a few
///    more; it stays whole and valid, its end is just earlier than the program's.
///  - Cost. Off, every traced call site is one predictable branch on a flag read once when the
///    runtime library is loaded: no allocation, no clock read. On, a call takes the timeline's
///    mutex once or twice and, on a GPU, records two events (kept in a pool and reused).
#ifndef EMBER_RUNTIME_TIMELINE_H
#define EMBER_RUNTIME_TIMELINE_H

#include "Backend.h"
#include "ContextImpl.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ember::detail {
struct KernelInfo;
}

namespace ember::detail::timeline {

/// Set once, while the runtime library is loaded, when EMBER_TRACE names a file.
extern std::atomic<bool> enabled;

/// Whether the timeline records: the one branch a traced call site pays when it does not.
inline bool on() noexcept { return enabled.load(std::memory_order_relaxed); }

/// Nanoseconds since the timeline began (steady_clock).
int64_t now() noexcept;
/// A steady_clock time on the timeline's clock.
int64_t at(std::chrono::steady_clock::time_point t) noexcept;

/// The members of an event's "args" object, in order.
class Args {
public:
    Args &text(std::string_view key, std::string_view value);
    Args &number(std::string_view key, int64_t value);
    Args &flag(std::string_view key, bool value);
    /// "[x, y, z]".
    Args &dims(std::string_view key, const std::array<int64_t, 3> &value);
    const std::string &json() const { return json_; }

private:
    void key(std::string_view k);
    std::string json_;
};

/// A span of `category` on the calling host thread's track.
void host_span(const char *category, std::string name, int64_t begin, int64_t end,
               const Args &args = {});

/// The stream DeviceContext's own calls use when `stream` is null.
inline const std::shared_ptr<BackendStream> &stream_of(const ContextImpl &ctx,
                                                       const StreamImpl *stream) {
    return stream ? stream->stream : ctx.backend->default_stream();
}

/// One operation enqueued on a stream: the host span of the call and, unless `device_span` is
/// false or the stream is capturing a graph, its device span ([Note] Timeline).
class StreamOp {
public:
    StreamOp(const ContextImpl &ctx, const std::shared_ptr<BackendStream> &stream,
             const char *category, std::string host_name, std::string device_name, Args args,
             bool device_span = true);
    /// After the operation was enqueued.
    void finish();
    /// Without finish() (the operation threw): the host span alone, marked failed.
    ~StreamOp();
    StreamOp(const StreamOp &) = delete;
    StreamOp &operator=(const StreamOp &) = delete;

private:
    void emit(bool failed) noexcept;
    const ContextImpl &ctx_;
    const std::shared_ptr<BackendStream> &stream_;
    const char *category_;
    std::string host_name_, device_name_;
    Args args_;
    bool device_span_;
    bool captured_ = false;
    bool synchronous_ = false;
    bool finished_ = false;
    std::shared_ptr<BackendEvent> start_, end_;
    int64_t begin_ = 0, device_begin_ = 0, end_time_ = 0;
    /// The stream's device track.
    int64_t track_pid_ = 0, track_tid_ = 0;
};

/// Runs `enqueue` (which hands one operation to `stream`) inside a StreamOp.
template <class F>
void stream_op(const ContextImpl &ctx, const std::shared_ptr<BackendStream> &stream,
               const char *category, std::string host_name, std::string device_name, Args args,
               F &&enqueue) {
    StreamOp op(ctx, stream, category, std::move(host_name), std::move(device_name),
                std::move(args));
    enqueue();
    op.finish();
}

/// A call on a stream with a host span only (event record and wait).
template <class F>
void stream_call(const ContextImpl &ctx, const std::shared_ptr<BackendStream> &stream,
                 const char *category, std::string name, F &&call) {
    StreamOp op(ctx, stream, category, std::move(name), {}, {}, /*device_span=*/false);
    call();
    op.finish();
}

/// A call with a host span only (a copy between contexts, an event's synchronize).
template <class F> void host_call(const char *category, std::string name, Args args, F &&call) {
    const int64_t begin = now();
    try {
        call();
    } catch (...) {
        host_span(category, std::move(name), begin, now(), args.flag("failed", true));
        throw;
    }
    host_span(category, std::move(name), begin, now(), args);
}

/// stream->synchronize() with its host span; first places the stream's pending device spans
/// ([Note] Timeline: the marker event).
void synchronize(const ContextImpl &ctx, const std::shared_ptr<BackendStream> &stream,
                 const char *call);

/// Called by ~ContextImpl: places the pending device spans of the context's streams while its
/// back end still lives, and forgets its streams.
void context_closing(const ContextImpl &ctx) noexcept;

/// After compile() made `fn`: the "compile <kernel>" span from `begin`, and the kernel's trace
/// span (once per traced kernel).
void compiled(const ContextImpl &ctx, const FunctionImpl &fn, int64_t begin);

/// One lookup of the compile cache (CompileCache::get): its span, the disk cache's read and
/// write (through store()) and, when the compiler ran, its stages.
class CacheLookup {
public:
    CacheLookup();
    ~CacheLookup();
    /// The store to hand the compiler: `disk` with the times of its calls kept (nullptr stays
    /// nullptr).
    ArtefactStore *store(ArtefactStore *disk);
    /// After the lookup: the spans, with the level that answered ("memory", "disk", "compiled").
    void finish(const std::string &kernel, const std::string &target, const char *level,
                const CompiledKernel &result);

private:
    class TimedStore;
    int64_t begin_;
    std::unique_ptr<TimedStore> store_;
};

/// Writes the file now (flush_trace); false when off or when it cannot be written.
bool flush();

} // namespace ember::detail::timeline

#endif // EMBER_RUNTIME_TIMELINE_H
