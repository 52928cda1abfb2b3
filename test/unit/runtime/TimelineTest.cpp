/// \file
/// The timeline of EMBER_TRACE ([Note] Timeline in runtime/lib/Timeline.h), on every api: this
/// binary, run again with EMBER_TRACE set (TimelineTestChild.ProcessSide), compiles a kernel,
/// copies, launches, records an event, synchronizes, flushes, works on a second stream and exits
/// with a launch never waited for; the file it leaves is parsed here (a small JSON reader) and
/// must hold the compile and its stages, the host spans of the calls, the device spans of each
/// stream in order and without overlap, named tracks, matched flow arrows and spans that nest. A
/// path that cannot be written, and one that is a directory, are warnings and the program runs.
#include "ember/ember.h"

#include "DeviceTest.h"
#include "SelfProcess.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace ember;
namespace fs = std::filesystem;

namespace {

constexpr const char *kChildVar = "EMBER_TIMELINE_TEST_CHILD";
constexpr const char *kExpectWriteVar = "EMBER_TIMELINE_TEST_EXPECT_WRITE";
constexpr int64_t kN = 4096;
constexpr int64_t kBlock = 256;

const auto timeline_scale = kernel("timeline_scale", {"v", "n"}, [](Ptr<float> v, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] = v[i] * 2.0f + 1.0f; });
});

// ---------------------------------------------------------------------------------------------
// A JSON reader: enough for the trace file (objects, arrays, strings, numbers, literals).

struct Json {
    enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
    bool b = false;
    double n = 0;
    std::string s;
    std::vector<Json> a;
    std::map<std::string, Json> o;

    const Json *get(const std::string &key) const {
        auto it = o.find(key);
        return it == o.end() ? nullptr : &it->second;
    }
    std::string text(const std::string &key) const {
        const Json *v = get(key);
        return v && v->kind == Kind::string ? v->s : std::string();
    }
    double number(const std::string &key, double fallback = -1) const {
        const Json *v = get(key);
        return v && v->kind == Kind::number ? v->n : fallback;
    }
};

class JsonReader {
public:
    explicit JsonReader(std::string text) : t_(std::move(text)) {}
    /// The document, or an error in `error`.
    Json read(std::string &error) {
        Json v;
        try {
            v = value();
            space();
            if (p_ != t_.size()) fail("text after the document");
        } catch (const std::string &e) {
            error = e;
        }
        return v;
    }

private:
    [[noreturn]] void fail(const std::string &what) {
        throw what + " at offset " + std::to_string(p_);
    }
    void space() {
        while (p_ < t_.size() &&
               (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t'))
            ++p_;
    }
    void expect(char c) {
        space();
        if (p_ >= t_.size() || t_[p_] != c) fail(std::string("expected '") + c + "'");
        ++p_;
    }
    bool take(char c) {
        space();
        if (p_ < t_.size() && t_[p_] == c) {
            ++p_;
            return true;
        }
        return false;
    }
    Json value() {
        space();
        if (p_ >= t_.size()) fail("unexpected end");
        Json v;
        const char c = t_[p_];
        if (c == '{') {
            ++p_;
            v.kind = Json::Kind::object;
            if (take('}')) return v;
            do {
                space();
                std::string key = string();
                expect(':');
                if (!v.o.emplace(key, value()).second) fail("duplicate key '" + key + "'");
            } while (take(','));
            expect('}');
        } else if (c == '[') {
            ++p_;
            v.kind = Json::Kind::array;
            if (take(']')) return v;
            do v.a.push_back(value());
            while (take(','));
            expect(']');
        } else if (c == '"') {
            v.kind = Json::Kind::string;
            v.s = string();
        } else if (t_.compare(p_, 4, "true") == 0 || t_.compare(p_, 5, "false") == 0) {
            v.kind = Json::Kind::boolean;
            v.b = t_[p_] == 't';
            p_ += v.b ? 4 : 5;
        } else if (t_.compare(p_, 4, "null") == 0) {
            p_ += 4;
        } else {
            size_t used = 0;
            try {
                v.n = std::stod(t_.substr(p_, 40), &used);
            } catch (...) {
                fail("not a JSON value");
            }
            v.kind = Json::Kind::number;
            p_ += used;
        }
        return v;
    }
    std::string string() {
        if (p_ >= t_.size() || t_[p_] != '"') fail("expected a string");
        ++p_;
        std::string out;
        while (p_ < t_.size() && t_[p_] != '"') {
            char c = t_[p_++];
            if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p_ >= t_.size()) fail("unexpected end");
            char e = t_[p_++];
            switch (e) {
            case '"':
            case '\\':
            case '/': out += e; break;
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'u':
                if (p_ + 4 > t_.size()) fail("a short \\u escape");
                out += static_cast<char>(
                    std::stoi(t_.substr(p_, 4), nullptr, 16)); // ASCII is all we write
                p_ += 4;
                break;
            default: fail("an unknown escape");
            }
        }
        if (p_ >= t_.size()) fail("an unterminated string");
        ++p_;
        return out;
    }

    std::string t_;
    size_t p_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The child process.

using ember::testing::ChildResult;

/// Runs this binary with only TimelineTestChild.ProcessSide on `api`, EMBER_TRACE=`trace`, its
/// compile cache in `cache` (empty: so that the kernel is compiled) and, when `expect_write`,
/// flush_trace() expected to succeed.
ChildResult run_child(const std::string &api, const std::string &trace, const fs::path &cache,
                      bool expect_write, const std::vector<std::string> &extra = {}) {
    std::vector<std::string> add = {std::string(kChildVar) + "=" + api,
                                    std::string(kExpectWriteVar) + "=" + (expect_write ? "1" : "0"),
                                    "EMBER_TRACE=" + trace, "EMBER_CACHE_DIR=" + cache.string()};
    add.insert(add.end(), extra.begin(), extra.end());
    return ember::testing::run_self(
        "TimelineTestChild.ProcessSide",
        {"EMBER_TIMELINE_TEST_", "EMBER_TRACE=", "EMBER_TRACE_MAX_EVENTS=", "EMBER_API=",
         "EMBER_CACHE_DIR=", "EMBER_DISABLE_CACHE=", "EMBER_DUMP=", "EMBER_LOG="},
        add, cache.parent_path() / "child.stderr");
}

/// The child's side: skips unless a TimelineTest started it.
TEST(TimelineTestChild, ProcessSide) {
    const char *api = std::getenv(kChildVar);
    if (!api)
        GTEST_SKIP()
            << "the child side of the TimelineTest cases; runs only when one of them starts it";
    const bool expect_write = std::string(std::getenv(kExpectWriteVar)
                                              ? std::getenv(kExpectWriteVar)
                                              : "1") == "1";
    DeviceContext ctx(0, api);
    auto f = ctx.compile_function(timeline_scale);
    auto dev = ctx.enqueue_create_buffer<float>(kN);
    auto host = ctx.enqueue_create_host_buffer<float>(kN);
    ctx.synchronize();
    for (int64_t i = 0; i < kN; ++i) host[i] = float(i);
    ctx.enqueue_copy(dev, host);
    ctx.enqueue_function(f, dev, kN, grid_dim(kN / kBlock), block_dim(kBlock));
    ctx.enqueue_copy(host, dev);
    DeviceEvent done = ctx.create_event();
    ctx.record_event(done);
    ctx.synchronize();
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(host[i], float(i) * 2.0f + 1.0f) << "element " << i;
    EXPECT_EQ(flush_trace(), expect_write);

    // After the flush: a second stream, then a launch on the default stream never waited for
    // (placed when the context is destroyed, then written at exit).
    DeviceStream second = ctx.create_stream();
    second.enqueue_memset(dev, 0.0f);
    second.enqueue_function(f, dev, kN, grid_dim(kN / kBlock), block_dim(kBlock));
    second.synchronize();
    // A copy from another context's buffer: its spans are those of the stream that runs it.
    DeviceContext other(0, api);
    auto theirs = other.enqueue_create_buffer<float>(kN);
    other.enqueue_memset(theirs, 3.0f);
    other.synchronize();
    ctx.enqueue_copy(dev, theirs);
    ctx.enqueue_function(f, dev, kN, grid_dim(kN / kBlock), block_dim(kBlock));
}

// ---------------------------------------------------------------------------------------------
// The checks.

struct Span {
    std::string name, category;
    int64_t pid = 0, tid = 0;
    double ts = 0, dur = 0;
    const Json *args = nullptr;
    double end() const { return ts + dur; }
};

/// The events of a trace file, by kind.
struct Trace {
    Json doc;
    std::vector<Span> spans;
    std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
    std::map<int64_t, std::string> process_names;
    std::map<double, int> flow_starts, flow_ends;

    /// The track (pid, tid) named `name`; {-1, -1} when none is.
    std::pair<int64_t, int64_t> track(const std::string &name) const {
        for (const auto &[key, n] : thread_names)
            if (n == name) return key;
        return {-1, -1};
    }
    std::vector<Span> on(std::pair<int64_t, int64_t> track) const {
        std::vector<Span> out;
        for (const Span &s : spans)
            if (s.pid == track.first && s.tid == track.second) out.push_back(s);
        std::sort(out.begin(), out.end(), [](const Span &a, const Span &b) { return a.ts < b.ts; });
        return out;
    }
    std::vector<Span> named(const std::string &name, int64_t pid) const {
        std::vector<Span> out;
        for (const Span &s : spans)
            if (s.name == name && s.pid == pid) out.push_back(s);
        return out;
    }
};

/// Nanosecond slack for the microseconds written with three decimals.
constexpr double kSlack = 0.0015;

bool inside(const Span &inner, const Span &outer) {
    return inner.ts >= outer.ts - kSlack && inner.end() <= outer.end() + kSlack;
}

Trace read_trace(const fs::path &path) {
    Trace t;
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string error;
    t.doc = JsonReader(ss.str()).read(error);
    EXPECT_TRUE(error.empty()) << path << " is not JSON: " << error;
    const Json *events = t.doc.get("traceEvents");
    if (!events || events->kind != Json::Kind::array) {
        ADD_FAILURE() << path << " has no traceEvents array";
        return t;
    }
    for (const Json &e : events->a) {
        const std::string ph = e.text("ph");
        const auto pid = static_cast<int64_t>(e.number("pid")),
                   tid = static_cast<int64_t>(e.number("tid"));
        const Json *args = e.get("args");
        if (ph == "M") {
            const std::string name = args ? args->text("name") : "";
            if (e.text("name") == "thread_name") t.thread_names[{pid, tid}] = name;
            if (e.text("name") == "process_name") t.process_names[pid] = name;
        } else if (ph == "X") {
            Span s{e.text("name"), e.text("cat"), pid, tid, e.number("ts"), e.number("dur"), args};
            t.spans.push_back(s);
        } else if (ph == "s") {
            ++t.flow_starts[e.number("id")];
        } else if (ph == "f") {
            ++t.flow_ends[e.number("id")];
            EXPECT_EQ(e.text("bp"), "e");
        } else {
            ADD_FAILURE() << "an event of phase '" << ph << "' (ember writes X, M, s and f)";
        }
    }
    return t;
}

class TimelineTest : public ember::testing::DeviceTest {
protected:
    void SetUp() override {
        DeviceTest::SetUp();
        if (IsSkipped()) return;
        dir_ = fs::temp_directory_path() /
               ("ember-timeline-test-" + GetParam() + "-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    fs::path dir_;
};

TEST_P(TimelineTest, RecordsCompilesCopiesLaunchesAndSynchronizesOnEveryTrack) {
    const fs::path file = dir_ / "out" / "trace.json"; // "out" is made by the writer
    ChildResult child = run_child(GetParam(), file.string(), dir_ / "cache", true);
    ASSERT_EQ(child.status, 0) << child.err;
    ASSERT_TRUE(fs::exists(file)) << child.err;
    for (const auto &e : fs::directory_iterator(file.parent_path()))
        EXPECT_EQ(e.path().filename(), "trace.json") << "left behind: " << e.path();
    Trace t = read_trace(file);
    EXPECT_EQ(t.doc.text("displayTimeUnit"), "ms");
    const Json *other = t.doc.get("otherData");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->number("lost_device_spans"), 0);

    // Tracks: the host process (the child's pid) and its thread, the device and its two streams.
    const std::string api = GetParam();
    const int64_t host = child.pid;
    EXPECT_NE(t.process_names[host].find("(host)"), std::string::npos);
    EXPECT_EQ(t.thread_names[std::make_pair(host, int64_t(host))], "main thread");
    const auto stream0 = t.track(api + ":0 stream 0 (default)");
    const auto stream1 = t.track(api + ":0 stream 1");
    ASSERT_NE(stream0.first, -1) << "no track for the default stream";
    ASSERT_NE(stream1.first, -1) << "no track for the second stream";
    EXPECT_EQ(stream0.first, stream1.first) << "one device, one process";
    EXPECT_EQ(t.process_names[stream0.first].rfind(api + ":0: ", 0), 0u)
        << t.process_names[stream0.first];
    for (const Span &s : t.spans) {
        EXPECT_TRUE(t.thread_names.count({s.pid, s.tid}))
            << "span '" << s.name << "' on an unnamed track";
        EXPECT_TRUE(t.process_names.count(s.pid))
            << "span '" << s.name << "' in an unnamed process";
        EXPECT_GE(s.dur, 0) << s.name;
    }

    // The compile: its stages inside it, the trace of the lambda on the host.
    std::vector<Span> compiles = t.named("compile timeline_scale", host);
    ASSERT_EQ(compiles.size(), 1u);
    const Span &compile = compiles[0];
    EXPECT_EQ(compile.category, "compile");
    EXPECT_GT(compile.dur, 0);
    EXPECT_EQ(compile.args->text("cache"), "compiled");
    for (const char *stage :
         {"cache lookup", "disk lookup", "lower", "optimise", "codegen", "disk store", "load"}) {
        std::vector<Span> found = t.named(stage, host);
        ASSERT_EQ(found.size(), 1u) << stage;
        EXPECT_GT(found[0].dur, 0) << stage;
        EXPECT_TRUE(inside(found[0], compile)) << stage << " is not inside the compile span";
    }
    const Span lookup = t.named("cache lookup", host)[0];
    EXPECT_EQ(lookup.args->text("level"), "compiled");
    for (const char *stage : {"disk lookup", "lower", "optimise", "codegen", "disk store"})
        EXPECT_TRUE(inside(t.named(stage, host)[0], lookup))
            << stage << " is not inside the cache lookup";
    ASSERT_EQ(t.named("trace timeline_scale", host).size(), 1u);
    EXPECT_LT(t.named("trace timeline_scale", host)[0].end(), compile.ts + kSlack)
        << "traced before compiled";

    // Host spans of the calls.
    std::vector<Span> launches = t.named("launch timeline_scale", host);
    ASSERT_EQ(launches.size(), 3u);
    const Json *grid = launches[0].args->get("grid");
    ASSERT_TRUE(grid && grid->a.size() == 3);
    EXPECT_EQ(grid->a[0].n, double(kN / kBlock));
    EXPECT_EQ(launches[0].args->get("block")->a[0].n, double(kBlock));
    EXPECT_EQ(launches[0].args->text("stream"), api + ":0 stream 0 (default)");
    EXPECT_EQ(launches[1].args->text("stream"), api + ":0 stream 1");
    EXPECT_FALSE(t.named("synchronize", host).empty());
    EXPECT_EQ(t.named("event record", host).size(), 1u);
    std::vector<Span> h2d = t.named("copy HtoD", host);
    ASSERT_EQ(h2d.size(), 1u);
    EXPECT_EQ(h2d[0].args->number("bytes"), double(kN * sizeof(float)));

    // Device spans: the default stream's copy, kernel, copy and (after the flush) the copy from
    // the other context and a kernel, in that order and apart; the second stream's memset and
    // kernel.
    std::vector<Span> d0 = t.on(stream0), d1 = t.on(stream1);
    std::vector<std::string> names0, names1;
    for (const Span &s : d0) names0.push_back(s.name);
    for (const Span &s : d1) names1.push_back(s.name);
    EXPECT_EQ(names0, (std::vector<std::string>{"copy HtoD", "timeline_scale", "copy DtoH",
                                                "copy between contexts", "timeline_scale"}));
    EXPECT_EQ(names1, (std::vector<std::string>{"memset", "timeline_scale"}));
    for (const std::vector<Span> *track : {&d0, &d1})
        for (size_t i = 0; i < track->size(); ++i) {
            EXPECT_GT((*track)[i].dur, 0) << (*track)[i].name;
            if (i) {
                EXPECT_LE((*track)[i - 1].end(), (*track)[i].ts + kSlack) << "device spans overlap";
            }
        }
    EXPECT_EQ(d0[1].category, "kernel");
    EXPECT_EQ(d0[0].category, "copy");
    // A kernel runs after its launch call began (give the anchoring on the host clock 50 us).
    ASSERT_EQ(d0.size(), 5u);
    ASSERT_EQ(d1.size(), 2u);
    EXPECT_GE(d0[1].ts + 50, launches[0].ts) << "a kernel before its launch";
    EXPECT_GE(d0[4].ts + 50, launches[2].ts) << "a kernel before its launch";
    std::vector<Span> across = t.named("copy between contexts", host);
    ASSERT_EQ(across.size(), 1u);
    EXPECT_EQ(across[0].args->number("bytes"), double(kN * sizeof(float)));
    EXPECT_EQ(across[0].args->text("stream"), api + ":0 stream 0 (default)");
    EXPECT_EQ(d0[3].category, "copy");
    EXPECT_GE(d1[1].ts + 50, launches[1].ts) << "a kernel before its launch";

    // Flow arrows: every start has its end.
    EXPECT_EQ(t.flow_starts, t.flow_ends);
    EXPECT_EQ(t.flow_starts.size(), 8u) << "one per device span (the other context's memset too)";

    // Spans of one track nest or are apart.
    std::map<std::pair<int64_t, int64_t>, std::vector<Span>> tracks;
    for (const Span &s : t.spans) tracks[{s.pid, s.tid}].push_back(s);
    for (auto &[key, spans] : tracks)
        for (size_t i = 0; i < spans.size(); ++i)
            for (size_t j = i + 1; j < spans.size(); ++j) {
                const Span &a = spans[i], &b = spans[j];
                const bool apart = a.end() <= b.ts + kSlack || b.end() <= a.ts + kSlack;
                EXPECT_TRUE(apart || inside(a, b) || inside(b, a))
                    << "'" << a.name << "' and '" << b.name << "' overlap on track "
                    << t.thread_names[key];
            }
}

TEST_P(TimelineTest, AFullTimelineRecordsNoMoreOperationsAndSaysSo) {
    // Without a limit the child's run records 30 host spans and flow starts (more on a GPU),
    // nine of them its compile's.
    constexpr int kLimit = 12;
    const fs::path file = dir_ / "trace.json";
    ChildResult child = run_child(GetParam(), file.string(), dir_ / "cache", true,
                                  {"EMBER_TRACE_MAX_EVENTS=" + std::to_string(kLimit)});
    ASSERT_EQ(child.status, 0) << child.err;
    const std::string warning = "ember: warning: EMBER_TRACE: the timeline reached its limit of " +
                                std::to_string(kLimit) + " events";
    const size_t at = child.err.find(warning);
    EXPECT_NE(at, std::string::npos) << child.err;
    EXPECT_EQ(child.err.find(warning, at + 1), std::string::npos) << "warned twice: " << child.err;
    Trace t = read_trace(file);
    const Json *other = t.doc.get("otherData");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->number("max_events"), kLimit);
    EXPECT_GT(other->number("dropped_operations"), 0);
    // What a new operation adds (its host spans, its flow's start) stops once the timeline holds
    // kLimit events; the operation that crosses the limit may add its whole compile (9 spans).
    // Past it come only the names of new tracks and the device spans (with their flows' ends)
    // of operations recorded before.
    const Json *events = t.doc.get("traceEvents");
    ASSERT_TRUE(events);
    size_t added_by_operations = 0;
    for (const Json &e : events->a)
        if ((e.text("ph") == "X" && e.number("pid") == child.pid) || e.text("ph") == "s")
            ++added_by_operations;
    EXPECT_LE(added_by_operations, size_t(kLimit) + 9) << "the limit did not hold";
    // Still whole: every flow that starts ends, and the compile came first.
    for (const auto &[id, n] : t.flow_starts) EXPECT_EQ(t.flow_ends[id], n) << "flow " << id;
    EXPECT_FALSE(t.named("compile timeline_scale", child.pid).empty());
}

TEST_P(TimelineTest, AMaxEventsThatIsNotACountIsAWarning) {
    const fs::path file = dir_ / "trace.json";
    ChildResult child = run_child(GetParam(), file.string(), dir_ / "cache", true,
                                  {"EMBER_TRACE_MAX_EVENTS=lots"});
    ASSERT_EQ(child.status, 0) << child.err;
    EXPECT_NE(child.err.find("ember: warning: EMBER_TRACE_MAX_EVENTS='lots': not a count above 0, "
                             "the timeline keeps at most 1000000 events"),
              std::string::npos)
        << child.err;
    Trace t = read_trace(file);
    const Json *other = t.doc.get("otherData");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->number("max_events"), 1000000);
    EXPECT_EQ(other->number("dropped_operations"), 0);
}

TEST_P(TimelineTest, AFileThatCannotBeWrittenIsAWarning) {
    // A regular file where the trace's directory would be.
    std::ofstream(dir_ / "plain").put('x');
    const fs::path file = dir_ / "plain" / "trace.json";
    ChildResult child = run_child(GetParam(), file.string(), dir_ / "cache", false);
    EXPECT_EQ(child.status, 0) << child.err;
    EXPECT_NE(child.err.find("ember: warning: EMBER_TRACE="), std::string::npos) << child.err;
    EXPECT_NE(
        child.err.find("cannot write the timeline to '" + file.string() + "': Not a directory"),
        std::string::npos)
        << child.err;
}

TEST_P(TimelineTest, ADirectoryIsAWarningAndNothingIsRecorded) {
    ChildResult child = run_child(GetParam(), dir_.string(), dir_ / "cache", false);
    EXPECT_EQ(child.status, 0) << child.err;
    EXPECT_NE(child.err.find("names a directory, not a file: no timeline is recorded"),
              std::string::npos)
        << child.err;
    for (const auto &e : fs::directory_iterator(dir_))
        EXPECT_TRUE(e.path().filename() == "cache" || e.path().filename() == "child.stderr")
            << e.path();
}

INSTANTIATE_TEST_SUITE_P(Apis, TimelineTest, ember::testing::all_apis(), ember::testing::api_name);

TEST(Timeline, FlushTraceIsFalseWithoutEmberTrace) {
    if (std::getenv("EMBER_TRACE")) GTEST_SKIP() << "EMBER_TRACE is set for this run";
    EXPECT_FALSE(flush_trace());
}

} // namespace
