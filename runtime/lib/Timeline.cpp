/// \file
/// The timeline of EMBER_TRACE ([Note] Timeline in Timeline.h): its tracks, the device spans'
/// event pairs and their anchoring on the host clock, and the file (flush_trace, exit).
#include "Timeline.h"

#include "ember/compiler/Settings.h"
#include "ember/dsl/Kernel.h"
#include "ember/runtime/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

namespace ember::detail {

// Declared in ContextImpl.h: the context's pending device spans are placed while its back end
// still lives.
ContextImpl::~ContextImpl() {
    if (timeline::on()) [[unlikely]]
        timeline::context_closing(*this);
}

namespace timeline {

std::atomic<bool> enabled{false};

namespace {

using Clock = std::chrono::steady_clock;

/// Devices are processes of the trace whose ids lie above any Linux pid (at most 2^22), so that
/// they never meet the host process's.
constexpr int64_t kFirstDevicePid = int64_t(1) << 23;
/// EMBER_TRACE_MAX_EVENTS's default: about 150 bytes of JSON and of memory an event, so a
/// timeline holds 150 MB at most unless asked for more.
constexpr size_t kDefaultMaxEvents = 1'000'000;

struct Event {
    char phase = 'X'; // X: a span; M: metadata; s, f: the two ends of a flow arrow
    const char *category = "";
    std::string name;
    int64_t pid = 0, tid = 0;
    int64_t ts = 0, dur = 0; // nanoseconds since the timeline began
    uint64_t id = 0;         // a flow's
    std::string args;        // the members of "args"
};

/// A device span whose event pair has not been read yet.
struct PendingSpan {
    std::shared_ptr<BackendEvent> start, end;
    const char *category = "";
    std::string name;
    std::string args;
    uint64_t flow = 0;
};

/// A stream's device track.
struct StreamTrack {
    std::weak_ptr<BackendStream> stream;
    std::weak_ptr<Backend> backend;
    int64_t pid = 0, tid = 0;
    std::string name;
    bool synchronous = false;
    std::vector<PendingSpan> pending;
};

/// A context's process, and its pool of timing events.
struct ContextTrack {
    std::weak_ptr<Backend> backend;
    int64_t pid = 0;
    /// Its operations complete before their enqueue call returns (the CPU device).
    bool synchronous = false;
    std::vector<std::shared_ptr<BackendEvent>> free_events;
};

/// Whether `weak` still points to the object `shared` owns (not one destroyed at its address).
template <class W, class S> bool same_owner(const W &weak, const S &shared) {
    return !weak.expired() && !weak.owner_before(shared) && !shared.owner_before(weak);
}

struct State {
    /// As EMBER_TRACE gave it (for warnings), and made absolute when the timeline began (a
    /// program that changes directory still writes where it was asked to).
    std::string given_path;
    std::string path;
    Clock::time_point origin = Clock::now();
    int64_t pid = ::getpid();
    std::mutex mutex;
    std::vector<Event> events;
    std::unordered_set<int64_t> named_threads;
    /// Device processes by context label ("cuda:0"); stream tracks numbered per label.
    std::map<std::string, int64_t> device_pids;
    std::map<std::string, int> stream_counts;
    int64_t next_stream_tid = 1;
    std::unordered_map<const BackendStream *, StreamTrack> streams;
    /// Tracks of streams destroyed (and their address reused) with device spans still pending.
    std::vector<StreamTrack> retired;
    std::unordered_map<const Backend *, ContextTrack> contexts;
    std::unordered_set<uint64_t> traced_kernels;
    uint64_t next_flow = 1;
    /// Device spans that could not be placed (their context failed or was gone).
    uint64_t lost = 0;
    /// Once `events` holds max_events, operations that begin later are not recorded, only
    /// counted ([Note] Timeline: size); the device spans of those recorded before are placed.
    size_t max_events = kDefaultMaxEvents;
    uint64_t dropped = 0;
};

/// Made when the library is loaded with EMBER_TRACE set, never destroyed (written at exit).
State *state = nullptr;

int64_t thread_id() {
    thread_local const int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
    return tid;
}

int64_t to_ns(double seconds) { return static_cast<int64_t>(std::floor(seconds * 1e9)); }
int64_t ms_to_ns(float ms) {
    return static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
}

void push_metadata(State &s, const char *what, int64_t pid, int64_t tid, const Args &args) {
    Event e;
    e.phase = 'M';
    e.name = what;
    e.pid = pid;
    e.tid = tid;
    e.args = args.json();
    s.events.push_back(std::move(e));
}

void push_span(State &s, const char *category, std::string name, int64_t pid, int64_t tid,
               int64_t begin, int64_t end, std::string args) {
    Event e;
    e.category = category;
    e.name = std::move(name);
    e.pid = pid;
    e.tid = tid;
    e.ts = begin;
    e.dur = std::max<int64_t>(0, end - begin);
    e.args = std::move(args);
    s.events.push_back(std::move(e));
}

void push_flow(State &s, char phase, uint64_t id, int64_t pid, int64_t tid, int64_t ts) {
    Event e;
    e.phase = phase;
    e.category = "flow";
    e.name = "enqueue";
    e.pid = pid;
    e.tid = tid;
    e.ts = ts;
    e.id = id;
    s.events.push_back(std::move(e));
}

/// Whether a new operation may be recorded; when the timeline is full, counts it as dropped and,
/// the first time, says so on stderr.
bool room_locked(State &s) {
    if (s.events.size() < s.max_events) return true;
    if (s.dropped++ == 0)
        std::fprintf(stderr,
                     "ember: warning: EMBER_TRACE: the timeline reached its limit of %zu events "
                     "(EMBER_TRACE_MAX_EVENTS): later operations are not recorded, only counted "
                     "(otherData.dropped_operations in the file)\n",
                     s.max_events);
    return false;
}

void name_thread_locked(State &s, int64_t tid) {
    if (!s.named_threads.insert(tid).second) return;
    push_metadata(
        s, "thread_name", s.pid, tid,
        Args().text("name", tid == s.pid ? "main thread" : "host thread " + std::to_string(tid)));
}

ContextTrack &context_locked(State &s, const ContextImpl &ctx) {
    const Backend *b = ctx.backend.get();
    auto it = s.contexts.find(b);
    if (it != s.contexts.end()) {
        if (same_owner(it->second.backend, ctx.backend)) return it->second;
        s.contexts.erase(it); // a destroyed back end's, at a reused address
    }
    ContextTrack c;
    c.backend = ctx.backend;
    // [Note] Streams in Backend.h: the CPU device runs each operation inside its enqueue call.
    c.synchronous = ctx.backend->api() == "cpu";
    auto [pid, added] = s.device_pids.emplace(ctx.label,
                                              kFirstDevicePid + int64_t(s.device_pids.size()));
    c.pid = pid->second;
    if (added) {
        push_metadata(s, "process_name", c.pid, 0,
                      Args().text("name", ctx.label + ": " + ctx.backend->name()));
        push_metadata(s, "process_sort_index", c.pid, 0,
                      Args().number("sort_index", int64_t(s.device_pids.size())));
    }
    return s.contexts.emplace(b, std::move(c)).first->second;
}

StreamTrack &track_locked(State &s, const ContextImpl &ctx,
                          const std::shared_ptr<BackendStream> &stream) {
    auto it = s.streams.find(stream.get());
    if (it != s.streams.end()) {
        if (same_owner(it->second.stream, stream)) return it->second;
        if (!it->second.pending.empty()) s.retired.push_back(std::move(it->second));
        s.streams.erase(it);
    }
    ContextTrack &c = context_locked(s, ctx);
    StreamTrack t;
    t.stream = stream;
    t.backend = ctx.backend;
    t.pid = c.pid;
    t.tid = s.next_stream_tid++;
    t.synchronous = c.synchronous;
    const int index = s.stream_counts[ctx.label]++;
    t.name = ctx.label + " stream " + std::to_string(index) +
             (stream == ctx.backend->default_stream() ? " (default)" : "");
    push_metadata(s, "thread_name", t.pid, t.tid, Args().text("name", t.name));
    push_metadata(s, "thread_sort_index", t.pid, t.tid, Args().number("sort_index", index));
    return s.streams.emplace(stream.get(), std::move(t)).first->second;
}

std::shared_ptr<BackendEvent> pooled_event_locked(State &s, const ContextImpl &ctx) {
    ContextTrack &c = context_locked(s, ctx);
    if (c.free_events.empty()) return nullptr;
    std::shared_ptr<BackendEvent> e = std::move(c.free_events.back());
    c.free_events.pop_back();
    return e;
}

/// Timing events (the default EventOptions) for a pair or a marker.
std::shared_ptr<BackendEvent> new_event(Backend &b) { return b.create_event(EventOptions{}); }

/// Gives `events` back to the pool of `backend`'s context; those of a context the timeline no
/// longer knows go to `dropped`, destroyed by the caller once the mutex is released.
void recycle_locked(State &s, const std::weak_ptr<Backend> &backend,
                    std::vector<std::shared_ptr<BackendEvent>> events,
                    std::vector<std::shared_ptr<BackendEvent>> &dropped) {
    std::shared_ptr<Backend> b = backend.lock();
    auto it = b ? s.contexts.find(b.get()) : s.contexts.end();
    const bool known = it != s.contexts.end() && same_owner(it->second.backend, b);
    for (std::shared_ptr<BackendEvent> &e : events) {
        if (!e) continue;
        if (known)
            it->second.free_events.push_back(std::move(e));
        else
            dropped.push_back(std::move(e));
    }
}

/// Places `spans` on track (pid, tid): every span's events completed before `marker` did, and the
/// host saw the marker complete at `seen` ([Note] Timeline: anchoring).
void place(State &s, std::vector<PendingSpan> &spans, BackendEvent &marker, int64_t seen,
           int64_t pid, int64_t tid, const std::weak_ptr<Backend> &backend) {
    struct Placed {
        bool ok = false;
        int64_t begin = 0, end = 0;
    };
    std::vector<Placed> placed(spans.size());
    for (size_t i = 0; i < spans.size(); ++i) {
        try {
            placed[i].begin = seen - ms_to_ns(marker.elapsed_ms_since(*spans[i].start));
            placed[i].end = seen - ms_to_ns(marker.elapsed_ms_since(*spans[i].end));
            placed[i].ok = true;
        } catch (...) { // a failed context: the span is lost, the program goes on
        }
    }
    std::vector<std::shared_ptr<BackendEvent>> dropped;
    std::lock_guard<std::mutex> lock(s.mutex);
    for (size_t i = 0; i < spans.size(); ++i) {
        PendingSpan &p = spans[i];
        if (placed[i].ok) {
            push_span(s, p.category, std::move(p.name), pid, tid, placed[i].begin, placed[i].end,
                      std::move(p.args));
            push_flow(s, 'f', p.flow, pid, tid, placed[i].begin);
        } else {
            ++s.lost;
        }
        recycle_locked(s, backend, {std::move(p.start), std::move(p.end)}, dropped);
    }
}

/// Records a marker at the end of `stream`, waits for it and places `t`'s pending spans. The
/// stream is the track's own, or, when that one is gone (its destructor waited for its work),
/// its context's default stream.
void drain(State &s, StreamTrack &t) noexcept {
    if (t.pending.empty()) return;
    try {
        std::shared_ptr<Backend> backend = t.backend.lock();
        std::shared_ptr<BackendStream> stream = t.stream.lock();
        if (!stream && backend) stream = backend->default_stream();
        if (backend && stream && !stream->capture_graph()) {
            std::shared_ptr<BackendEvent> marker = new_event(*backend);
            stream->record(*marker);
            marker->synchronize();
            const int64_t seen = now();
            place(s, t.pending, *marker, seen, t.pid, t.tid, t.backend);
            t.pending.clear();
            return;
        }
    } catch (...) {
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    s.lost += t.pending.size();
    t.pending.clear();
}

void append_escaped(std::string &out, std::string_view text) {
    out += '"';
    for (char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x",
                              static_cast<unsigned>(static_cast<unsigned char>(c)));
                out += buf;
            } else {
                out += c;
            }
        }
    }
    out += '"';
}

/// Nanoseconds as the format's microseconds, exactly: "12.345".
void append_us(std::string &out, int64_t ns) {
    if (ns < 0) {
        out += '-';
        ns = -ns;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                  static_cast<long long>(ns % 1000));
    out += buf;
}

std::string serialize_locked(const State &s) {
    std::string out;
    out.reserve(64 + s.events.size() * 160);
    out += "{\"traceEvents\":[\n";
    bool first = true;
    for (const Event &e : s.events) {
        if (!first) out += ",\n";
        first = false;
        out += "{\"ph\":\"";
        out += e.phase;
        out += "\",\"name\":";
        append_escaped(out, e.name);
        if (e.phase != 'M') {
            out += ",\"cat\":";
            append_escaped(out, e.category);
        }
        out += ",\"pid\":" + std::to_string(e.pid) + ",\"tid\":" + std::to_string(e.tid);
        if (e.phase != 'M') {
            out += ",\"ts\":";
            append_us(out, e.ts);
        }
        if (e.phase == 'X') {
            out += ",\"dur\":";
            append_us(out, e.dur);
        }
        if (e.phase == 's' || e.phase == 'f') out += ",\"id\":" + std::to_string(e.id);
        if (e.phase == 'f') out += ",\"bp\":\"e\"";
        if (e.phase == 'X' || e.phase == 'M') out += ",\"args\":{" + e.args + "}";
        out += "}";
    }
    out += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"ember\",\"clock\":";
    append_escaped(out, "steady_clock; ts and dur in microseconds since the timeline began");
    out += ",\"lost_device_spans\":" + std::to_string(s.lost);
    out += ",\"max_events\":" + std::to_string(s.max_events);
    out += ",\"dropped_operations\":" + std::to_string(s.dropped) + "}}\n";
    return out;
}

/// Writes the file whole: a temporary file in the same directory, renamed over the path.
bool write(State &s) {
    std::string text;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        text = serialize_locked(s);
    }
    auto fail = [&](int error) {
        settings::warn("EMBER_TRACE", s.given_path,
                       "cannot write the timeline to '" + s.path + "': " + std::strerror(error));
        return false;
    };
    std::error_code ec;
    const std::filesystem::path path(s.path);
    if (path.has_parent_path())
        std::filesystem::create_directories(path.parent_path(), ec); // fopen says why not
    const std::string temporary = s.path + ".tmp." + std::to_string(::getpid());
    std::FILE *f = std::fopen(temporary.c_str(), "wb");
    if (!f) return fail(errno);
    int error = 0;
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) error = errno ? errno : EIO;
    if (std::fflush(f) != 0 && !error) error = errno;
    if (std::fclose(f) != 0 && !error) error = errno;
    if (!error && std::rename(temporary.c_str(), s.path.c_str()) != 0) error = errno;
    if (error) {
        std::remove(temporary.c_str());
        return fail(error);
    }
    return true;
}

void at_exit() {
    // A child made by fork() has the parent's timeline but not its file to write.
    if (!state || ::getpid() != state->pid) return;
    flush();
}

void start() noexcept {
    try {
        const std::optional<std::string> given = settings::text("EMBER_TRACE");
        if (!given) return;
        std::error_code ec;
        if (std::filesystem::is_directory(*given, ec)) {
            settings::warn("EMBER_TRACE", *given,
                           "names a directory, not a file: no timeline is recorded");
            return;
        }
        auto *s = new State;
        s->given_path = *given;
        if (const std::optional<std::string> m = settings::text("EMBER_TRACE_MAX_EVENTS")) {
            char *end = nullptr;
            errno = 0;
            const unsigned long long v = std::strtoull(m->c_str(), &end, 10);
            if (errno != 0 || end == m->c_str() || *end != '\0' || v == 0 || (*m)[0] == '-')
                settings::warn("EMBER_TRACE_MAX_EVENTS", *m,
                               "not a count above 0, the timeline keeps at most " +
                                   std::to_string(kDefaultMaxEvents) + " events");
            else
                s->max_events = static_cast<size_t>(v);
        }
        const std::filesystem::path absolute = std::filesystem::absolute(*given, ec);
        s->path = ec ? *given : absolute.string();
        push_metadata(*s, "process_name", s->pid, 0,
                      Args().text("name", std::string(program_invocation_short_name) + " (host)"));
        push_metadata(*s, "process_sort_index", s->pid, 0, Args().number("sort_index", 0));
        state = s;
        std::atexit(at_exit);
        enabled.store(true, std::memory_order_release);
    } catch (...) { // no timeline rather than no program
    }
}

/// EMBER_TRACE is read once, while the runtime library is loaded (before main and before any
/// DeviceContext), so that a call site's test is one load of a flag that never changes after.
struct Starter {
    Starter() { start(); }
} starter;

} // namespace

int64_t now() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - state->origin)
        .count();
}

int64_t at(std::chrono::steady_clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - state->origin).count();
}

void Args::key(std::string_view k) {
    if (!json_.empty()) json_ += ',';
    append_escaped(json_, k);
    json_ += ':';
}

Args &Args::text(std::string_view k, std::string_view value) {
    key(k);
    append_escaped(json_, value);
    return *this;
}

Args &Args::number(std::string_view k, int64_t value) {
    key(k);
    json_ += std::to_string(value);
    return *this;
}

Args &Args::flag(std::string_view k, bool value) {
    key(k);
    json_ += value ? "true" : "false";
    return *this;
}

Args &Args::dims(std::string_view k, const std::array<int64_t, 3> &v) {
    key(k);
    json_ += "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) +
             "]";
    return *this;
}

void host_span(const char *category, std::string name, int64_t begin, int64_t end,
               const Args &args) {
    State &s = *state;
    const int64_t tid = thread_id();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!room_locked(s)) return;
    name_thread_locked(s, tid);
    push_span(s, category, std::move(name), s.pid, tid, begin, end, args.json());
}

StreamOp::StreamOp(const ContextImpl &ctx, const std::shared_ptr<BackendStream> &stream,
                   const char *category, std::string host_name, std::string device_name, Args args,
                   bool device_span)
    : ctx_(ctx), stream_(stream), category_(category), host_name_(std::move(host_name)),
      device_name_(std::move(device_name)), args_(std::move(args)), device_span_(device_span) {
    State &s = *state;
    begin_ = now();
    captured_ = stream->capture_graph() != nullptr;
    bool pair = false;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        StreamTrack &t = track_locked(s, ctx, stream);
        track_pid_ = t.pid;
        track_tid_ = t.tid;
        synchronous_ = t.synchronous;
        args_.text("stream", t.name);
        // A full timeline records no new operation: no events for its device span either.
        pair = device_span_ && !captured_ && !synchronous_ && s.events.size() < s.max_events;
        if (pair) {
            start_ = pooled_event_locked(s, ctx);
            end_ = pooled_event_locked(s, ctx);
        }
    }
    if (captured_) args_.flag("captured", true);
    if (pair) {
        try {
            if (!start_) start_ = new_event(*ctx.backend);
            if (!end_) end_ = new_event(*ctx.backend);
            stream->record(*start_);
        } catch (...) { // no device span for this one; the operation itself goes on
            start_.reset();
            end_.reset();
        }
    }
    device_begin_ = now();
}

void StreamOp::finish() {
    if (start_) {
        try {
            stream_->record(*end_);
        } catch (...) {
            start_.reset();
            end_.reset();
        }
    }
    end_time_ = now();
    finished_ = true;
    emit(false);
}

StreamOp::~StreamOp() {
    if (finished_) return;
    end_time_ = now();
    emit(true);
}

void StreamOp::emit(bool failed) noexcept {
    State &s = *state;
    try {
        const int64_t tid = thread_id();
        std::vector<std::shared_ptr<BackendEvent>> dropped;
        std::lock_guard<std::mutex> lock(s.mutex);
        if (!room_locked(s)) {
            recycle_locked(s, ctx_.backend, {std::move(start_), std::move(end_)}, dropped);
            return;
        }
        name_thread_locked(s, tid);
        Args host = args_;
        if (failed) host.flag("failed", true);
        push_span(s, category_, host_name_, s.pid, tid, begin_, end_time_, host.json());
        if (!device_span_ || captured_ || failed) {
            recycle_locked(s, ctx_.backend, {std::move(start_), std::move(end_)}, dropped);
            return;
        }
        const uint64_t flow = s.next_flow++;
        push_flow(s, 's', flow, s.pid, tid, begin_);
        if (synchronous_) {
            push_span(s, category_, device_name_, track_pid_, track_tid_, device_begin_, end_time_,
                      args_.json());
            push_flow(s, 'f', flow, track_pid_, track_tid_, device_begin_);
        } else if (start_) {
            track_locked(s, ctx_, stream_)
                .pending.push_back(PendingSpan{std::move(start_), std::move(end_), category_,
                                               device_name_, args_.json(), flow});
        } else {
            ++s.lost;
        }
    } catch (...) { // out of memory while recording: the span is lost
    }
}

void synchronize(const ContextImpl &ctx, const std::shared_ptr<BackendStream> &stream,
                 const char *call) {
    State &s = *state;
    const int64_t begin = now();
    std::vector<PendingSpan> taken;
    std::shared_ptr<BackendEvent> marker;
    int64_t pid = 0, tid = 0;
    Args args;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        StreamTrack &t = track_locked(s, ctx, stream);
        taken.swap(t.pending);
        pid = t.pid;
        tid = t.tid;
        args.text("stream", t.name);
        if (!taken.empty()) marker = pooled_event_locked(s, ctx);
    }
    if (!taken.empty()) {
        // The marker goes after every pending pair: it completes when the stream drains, just
        // before the wait below returns ([Note] Timeline: anchoring).
        try {
            if (!marker) marker = new_event(*ctx.backend);
            stream->record(*marker);
        } catch (...) {
            marker.reset();
        }
    }
    try {
        stream->synchronize();
    } catch (...) {
        {
            std::lock_guard<std::mutex> lock(s.mutex);
            s.lost += taken.size();
        }
        host_span("sync", call, begin, now(), args.flag("failed", true));
        throw;
    }
    const int64_t seen = now();
    if (marker) {
        place(s, taken, *marker, seen, pid, tid, ctx.backend);
        std::vector<std::shared_ptr<BackendEvent>> dropped;
        std::lock_guard<std::mutex> lock(s.mutex);
        recycle_locked(s, ctx.backend, {std::move(marker)}, dropped);
    } else if (!taken.empty()) {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.lost += taken.size();
    }
    host_span("sync", call, begin, seen, args.number("device_spans_placed", int64_t(taken.size())));
}

void context_closing(const ContextImpl &ctx) noexcept {
    State &s = *state;
    try {
        std::vector<StreamTrack> tracks;
        std::vector<std::shared_ptr<BackendEvent>> pool;
        {
            std::lock_guard<std::mutex> lock(s.mutex);
            for (auto it = s.streams.begin(); it != s.streams.end();) {
                if (same_owner(it->second.backend, ctx.backend)) {
                    tracks.push_back(std::move(it->second));
                    it = s.streams.erase(it);
                } else {
                    ++it;
                }
            }
            for (auto it = s.retired.begin(); it != s.retired.end();) {
                if (same_owner(it->backend, ctx.backend)) {
                    tracks.push_back(std::move(*it));
                    it = s.retired.erase(it);
                } else {
                    ++it;
                }
            }
            auto c = s.contexts.find(ctx.backend.get());
            if (c != s.contexts.end() && same_owner(c->second.backend, ctx.backend)) {
                pool = std::move(c->second.free_events);
                s.contexts.erase(c);
            }
        }
        for (StreamTrack &t : tracks) drain(s, t);
    } catch (...) {
    }
}

void compiled(const ContextImpl &ctx, const FunctionImpl &fn, int64_t begin) {
    State &s = *state;
    const int64_t end = now();
    const KernelInfo *k = fn.kernel.get();
    const std::string name = k ? k->ir.name : fn.compiled.kernel_name;
    host_span("compile", "compile " + name, begin, end,
              Args()
                  .text("kernel", name)
                  .text("target", fn.compiled.target.to_string())
                  .text("context", ctx.label)
                  .text("cache", fn.report.cache_level));
    if (!k || k->trace_seconds <= 0 || k->trace_start_ns == 0) return;
    const int64_t origin =
        std::chrono::duration_cast<std::chrono::nanoseconds>(s.origin.time_since_epoch()).count();
    const int64_t traced = k->trace_start_ns - origin;
    if (traced < 0) return; // traced before the timeline began
    const int64_t tid = k->trace_thread ? k->trace_thread : thread_id();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.traced_kernels.insert(k->id).second) return; // one trace span per traced kernel
    if (!room_locked(s)) return;
    name_thread_locked(s, tid);
    push_span(s, "compile", "trace " + name, s.pid, tid, traced, traced + to_ns(k->trace_seconds),
              Args().text("kernel", name).json());
}

/// The disk cache as the compiler sees it, with the times of its calls kept.
class CacheLookup::TimedStore final : public ArtefactStore {
public:
    explicit TimedStore(ArtefactStore *inner) : inner_(inner) {}
    std::optional<std::string> load(std::string_view digest, std::string_view kind) override {
        load_begin = now();
        std::optional<std::string> bytes = inner_->load(digest, kind);
        load_end = now();
        hit = bytes.has_value();
        return bytes;
    }
    void store(std::string_view digest, std::string_view kind, std::string_view bytes) override {
        store_begin = now();
        inner_->store(digest, kind, bytes);
        store_end = now();
    }

    int64_t load_begin = -1, load_end = -1, store_begin = -1, store_end = -1;
    bool hit = false;

private:
    ArtefactStore *inner_;
};

CacheLookup::CacheLookup() : begin_(now()) {}
CacheLookup::~CacheLookup() = default;

ArtefactStore *CacheLookup::store(ArtefactStore *disk) {
    if (!disk) return nullptr;
    store_ = std::make_unique<TimedStore>(disk);
    return store_.get();
}

void CacheLookup::finish(const std::string &kernel, const std::string &target, const char *level,
                         const CompiledKernel &result) {
    State &s = *state;
    const int64_t end = now();
    const int64_t tid = thread_id();
    const TimedStore *d = store_.get();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!room_locked(s)) return;
    name_thread_locked(s, tid);
    push_span(s, "compile", "cache lookup", s.pid, tid, begin_, end,
              Args().text("kernel", kernel).text("target", target).text("level", level).json());
    if (d && d->load_end >= 0)
        push_span(s, "compile", "disk lookup", s.pid, tid, d->load_begin, d->load_end,
                  Args().flag("hit", d->hit).json());
    if (std::string_view(level) == "compiled") {
        // The compiler's stages, end to end from where it began ([Note] Timeline: compiles),
        // never past the disk write that follows them.
        int64_t at = d && d->load_end >= 0 ? d->load_end : begin_;
        const int64_t limit = d && d->store_begin >= 0 ? d->store_begin : end;
        const std::pair<const char *, double> stages[] = {{"lower", result.lower_seconds},
                                                          {"optimise", result.optimize_seconds},
                                                          {"codegen", result.codegen_seconds}};
        for (const auto &[stage, seconds] : stages) {
            const int64_t stop = std::min(limit, at + to_ns(seconds));
            if (stop > at)
                push_span(s, "compile", stage, s.pid, tid, at, stop,
                          Args().text("kernel", kernel).json());
            at = std::max(at, stop);
        }
    }
    if (d && d->store_end >= 0)
        push_span(s, "compile", "disk store", s.pid, tid, d->store_begin, d->store_end, {});
}

bool flush() {
    if (!on()) return false;
    State &s = *state;
    std::vector<StreamTrack> pending;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        for (auto &[stream, t] : s.streams) {
            if (t.pending.empty()) continue;
            StreamTrack copy;
            copy.stream = t.stream;
            copy.backend = t.backend;
            copy.pid = t.pid;
            copy.tid = t.tid;
            copy.pending.swap(t.pending);
            pending.push_back(std::move(copy));
        }
        for (StreamTrack &t : s.retired) pending.push_back(std::move(t));
        s.retired.clear();
    }
    for (StreamTrack &t : pending) drain(s, t);
    return write(s);
}

} // namespace timeline
} // namespace ember::detail

bool ember::flush_trace() { return detail::timeline::flush(); }
