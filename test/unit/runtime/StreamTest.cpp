/// \file
/// Streams and events on every api: ordering across streams through events, timing, priorities,
/// waits across contexts, buffers shared by streams, many host threads on one context, and the
/// errors of misuse. CUDA cases skip with a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

using namespace ember;

namespace {

// Slow enough to still run when a copy on another stream would start (on a GPU): every thread
// iterates `rounds` times before writing its result.
const auto slow_fill = kernel("slow_fill", {"out", "n", "rounds", "value"},
                              [](Ptr<int64_t> out, Int n, Int rounds, Int64 value) {
                                  auto i = global_idx.x;
                                  if_(i < n, [&] {
                                      Var<int64_t> acc(0);
                                      for_(0, rounds, [&](Int r) { acc += r % 3; });
                                      // acc is the same for every thread; it only costs time.
                                      out[i] = value + acc - acc;
                                  });
                              });

const auto add_one = kernel("add_one", {"v", "n"}, [](Ptr<int64_t> v, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += 1; });
});

constexpr int64_t kN = 1 << 16;
constexpr int64_t kBlock = 256;

class StreamTest : public ember::testing::DeviceTest {
protected:
    int64_t rounds() const { return GetParam() == "cuda" ? 20000 : 20; }
    void expect_all(const std::vector<int64_t> &v, int64_t want) {
        for (size_t i = 0; i < v.size(); ++i)
            if (v[i] != want) {
                ADD_FAILURE() << "element " << i << " is " << v[i] << ", want " << want;
                return;
            }
    }
};

TEST_P(StreamTest, AnEventOrdersWorkOnTwoStreams) {
    DeviceStream compute = ctx().create_stream();
    DeviceStream copy = ctx().create_stream();
    EXPECT_FALSE(compute == copy);
    EXPECT_TRUE(ctx().stream() == ctx().stream());
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    auto host = ctx().enqueue_create_host_buffer<int64_t>(kN);
    for (int round = 1; round <= 3; ++round) {
        DeviceEvent done = compute.create_event(EventFlags::disable_timing);
        compute.enqueue_function(slow_fill, dev, kN, rounds(), int64_t{round * 1000},
                                 grid_dim(kN / kBlock), block_dim(kBlock));
        compute.record_event(done);
        copy.enqueue_wait_for(done);
        copy.enqueue_copy(host, dev);
        copy.synchronize();
        EXPECT_TRUE(copy.is_done());
        EXPECT_TRUE(done.query());
        expect_all(std::vector<int64_t>(host.begin(), host.end()), round * 1000);
    }
    EXPECT_EQ(copy.context().name(), ctx().name());
}

TEST_P(StreamTest, KernelsAndCopiesOnAStreamRunInOrder) {
    DeviceStream s = ctx().create_stream();
    std::vector<int64_t> in(kN), out(kN);
    std::iota(in.begin(), in.end(), 0);
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    s.enqueue_copy(dev, in.data());
    auto f = ctx().compile_function(add_one);
    for (int k = 0; k < 5; ++k) s.enqueue_function(f, dev, kN, grid_dim(kN / kBlock), block_dim(kBlock));
    s.enqueue_function(add_one, dev, kN, grid_dim(kN / kBlock), block_dim(kBlock)); // a Kernel too
    s.enqueue_copy(out.data(), dev);
    s.synchronize();
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], i + 6) << "element " << i;
}

TEST_P(StreamTest, EventsTimeTheWorkBetweenThem) {
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    DeviceEvent start = ctx().create_event(), end = ctx().create_event(EventFlags::blocking_sync);
    start.record();
    ctx().enqueue_function(slow_fill, dev, kN, rounds(), int64_t{7}, grid_dim(kN / kBlock), block_dim(kBlock));
    end.record(ctx().stream());
    end.synchronize();
    float ms = end.time_since(start);
    EXPECT_GT(ms, 0.0f);
    EXPECT_LT(ms, 60000.0f);
    EXPECT_FLOAT_EQ(start.time_till(end), ms);

    DeviceEvent untimed = ctx().create_event(EventFlags::disable_timing);
    untimed.record();
    untimed.synchronize();
    EXPECT_THROW(untimed.time_since(start), LogicError);
    DeviceEvent never = ctx().create_event();
    EXPECT_TRUE(never.query()); // nothing recorded: nothing to wait for
    never.synchronize();
    try {
        (void)never.time_since(start);
        ADD_FAILURE() << "no error";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("never recorded"), std::string::npos) << e.what();
    }
}

TEST_P(StreamTest, ExecutionTimeMeasuresTheEnqueuedWork) {
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    int calls = 0;
    int64_t ns = ctx().execution_time(
        [&](const DeviceContext &c) {
            ++calls;
            c.enqueue_function(slow_fill, dev, kN, rounds(), int64_t{1}, grid_dim(kN / kBlock), block_dim(kBlock));
        },
        4);
    EXPECT_EQ(calls, 4);
    EXPECT_GT(ns, 0);
    std::vector<int> seen;
    int64_t ns_iter = ctx().execution_time_iter(
        [&](const DeviceContext &c, int i) {
            seen.push_back(i);
            c.enqueue_function(add_one, dev, kN, grid_dim(kN / kBlock), block_dim(kBlock));
        },
        3);
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
    EXPECT_GT(ns_iter, 0);
    std::vector<int64_t> out(kN);
    ctx().enqueue_copy(out.data(), dev);
    ctx().synchronize();
    expect_all(out, 1 + 3);
    EXPECT_THROW((void)ctx().execution_time([](const DeviceContext &) {}, 0), LogicError);
}

TEST_P(StreamTest, PrioritiesLieInTheDevicesRange) {
    auto [least, greatest] = ctx().stream_priority_range();
    EXPECT_LE(greatest, least);
    EXPECT_EQ(ctx().create_stream(greatest).priority(), greatest);
    EXPECT_EQ(ctx().create_stream().priority(), 0);
    EXPECT_EQ(ctx().stream().priority(), 0);
    try {
        (void)ctx().create_stream(least + 1);
        ADD_FAILURE() << "no error";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("priority " + std::to_string(least + 1)), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)ctx().create_stream(greatest - 1), LogicError);
}

// Buffers allocated before and after a stream exists, used on it, and freed while work that uses
// them is still queued there ([Note] Streams in Backend.h).
TEST_P(StreamTest, BuffersMayBeUsedOnAnyStreamOfTheirContext) {
    std::vector<int64_t> in(kN, 5), out(kN, 0);
    auto before = ctx().enqueue_create_buffer<int64_t>(kN);
    ctx().enqueue_copy(before, in.data());
    DeviceStream s = ctx().create_stream();
    s.enqueue_function(add_one, before, kN, grid_dim(kN / kBlock), block_dim(kBlock));
    auto after = ctx().enqueue_create_buffer<int64_t>(kN);
    s.enqueue_copy(after, before);
    for (int k = 0; k < 4; ++k) {
        // A temporary used on the stream and dropped at once: its memory must not be reused
        // before the stream is done with it.
        auto temp = ctx().enqueue_create_buffer<int64_t>(kN);
        s.enqueue_function(slow_fill, temp, kN, rounds(), int64_t{k}, grid_dim(kN / kBlock), block_dim(kBlock));
        s.enqueue_copy(after, temp);
        s.enqueue_function(add_one, after, kN, grid_dim(kN / kBlock), block_dim(kBlock));
    }
    auto last = ctx().enqueue_create_buffer<int64_t>(kN);
    ctx().enqueue_copy(last, in.data());
    s.enqueue_copy(out.data(), after);
    s.synchronize();
    expect_all(out, 3 + 1);
    ctx().enqueue_copy(out.data(), last);
    ctx().synchronize();
    expect_all(out, 5);
}

// Mojo's ctx.enqueue_wait_for(other): after it, synchronising ctx covers other's work too.
TEST_P(StreamTest, AContextWaitsForAnotherContext) {
    DeviceContext other(0, GetParam());
    auto dev = other.enqueue_create_buffer<int64_t>(kN);
    auto host = other.enqueue_create_host_buffer<int64_t>(kN);
    other.enqueue_function(slow_fill, dev, kN, rounds(), int64_t{42}, grid_dim(kN / kBlock), block_dim(kBlock));
    other.enqueue_copy(host, dev);
    ctx().enqueue_wait_for(other);
    ctx().synchronize(); // not other.synchronize()
    expect_all(std::vector<int64_t>(host.begin(), host.end()), 42);
    ctx().enqueue_wait_for(ctx()); // its own stream: nothing to do

    // An event of the other context waited for on this one's stream.
    DeviceEvent e = other.create_event();
    other.enqueue_function(slow_fill, dev, kN, rounds(), int64_t{43}, grid_dim(kN / kBlock), block_dim(kBlock));
    other.enqueue_copy(host, dev);
    other.record_event(e);
    DeviceStream s = ctx().create_stream();
    s.enqueue_wait_for(e);
    s.synchronize();
    e.synchronize();
    expect_all(std::vector<int64_t>(host.begin(), host.end()), 43);
    // Recording another context's event on this context's stream, or timing across contexts,
    // is a LogicError naming both.
    DeviceEvent mine = ctx().create_event();
    mine.record();
    mine.synchronize();
    try {
        s.record_event(e);
        ADD_FAILURE() << "no error";
    } catch (const LogicError &err) {
        EXPECT_NE(std::string(err.what()).find("belongs to"), std::string::npos) << err.what();
    }
    EXPECT_THROW((void)mine.time_since(e), LogicError);
}

TEST_P(StreamTest, EmptyEventsAreLogicErrors) {
    DeviceEvent empty;
    EXPECT_FALSE(empty);
    EXPECT_THROW(ctx().record_event(empty), LogicError);
    EXPECT_THROW(ctx().enqueue_wait_for(empty), LogicError);
    EXPECT_THROW(empty.synchronize(), LogicError);
    EXPECT_THROW((void)empty.query(), LogicError);
    EXPECT_THROW(ctx().create_event(EventFlags::interprocess), LogicError); // needs disable_timing
    DeviceEvent ipc = ctx().create_event(EventFlags::interprocess | EventFlags::disable_timing);
    EXPECT_TRUE(ipc);
}

// Many host threads enqueuing on one context at once, on its stream and on their own streams,
// through one compiled function and through the per-context compile cache.
TEST_P(StreamTest, ManyHostThreadsShareOneContext) {
    constexpr int kThreads = 8, kLaunches = 25;
    constexpr int64_t n = 4096;
    auto f = ctx().compile_function(add_one);
    std::vector<DeviceBuffer<int64_t>> bufs;
    for (int t = 0; t < kThreads; ++t) bufs.push_back(ctx().enqueue_create_buffer<int64_t>(n));
    std::vector<std::vector<int64_t>> results(kThreads, std::vector<int64_t>(n));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            try {
                std::vector<int64_t> zero(n, t);
                DeviceStream s = t % 2 ? ctx().create_stream() : ctx().stream();
                s.enqueue_copy(bufs[t], zero.data());
                for (int k = 0; k < kLaunches; ++k) {
                    if (k % 2)
                        s.enqueue_function(f, bufs[t], n, grid_dim(n / kBlock), block_dim(kBlock));
                    else
                        s.enqueue_function(add_one, bufs[t], n, grid_dim(n / kBlock), block_dim(kBlock));
                }
                s.enqueue_copy(results[t].data(), bufs[t]);
                s.synchronize();
            } catch (const std::exception &e) {
                ++failures;
                ADD_FAILURE() << "thread " << t << ": " << e.what();
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    for (int t = 0; t < kThreads; ++t) {
        SCOPED_TRACE("thread " + std::to_string(t));
        expect_all(results[t], t + kLaunches);
    }
}

// Waits across devices: a context on the second GPU waits for one on the first and the other way
// round, and the CPU device waits for a GPU (and a GPU for the CPU device). The two-GPU case needs a
// second GPU and skips with a message without one; the CPU/GPU case needs one GPU.
TEST(StreamMultiDeviceTest, ContextsOnTwoGpusWaitForEachOther) {
    if (detail::cuda_device_count() < 2)
        GTEST_SKIP() << "needs two CUDA devices; this machine has " << detail::cuda_device_count();
    DeviceContext a(0, "cuda"), b(1, "cuda");
    ASSERT_EQ(b.id(), 1);
    auto da = a.enqueue_create_buffer<int64_t>(kN);
    auto db = b.enqueue_create_buffer<int64_t>(kN);
    auto host = a.enqueue_create_host_buffer<int64_t>(kN);
    a.enqueue_function(slow_fill, da, kN, int64_t{20000}, int64_t{7}, grid_dim(kN / kBlock), block_dim(kBlock));
    a.enqueue_copy(host, da);
    b.enqueue_wait_for(a);
    b.synchronize(); // covers a's work
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(host[i], 7) << "element " << i;

    // An event recorded on device 1 orders a stream of device 0.
    b.enqueue_function(slow_fill, db, kN, int64_t{20000}, int64_t{9}, grid_dim(kN / kBlock), block_dim(kBlock));
    auto host_b = b.enqueue_create_host_buffer<int64_t>(kN);
    b.enqueue_copy(host_b, db);
    DeviceEvent e = b.create_event();
    b.record_event(e);
    DeviceStream s = a.create_stream();
    s.enqueue_wait_for(e);
    s.synchronize();
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(host_b[i], 9) << "element " << i;
}

TEST(StreamMultiDeviceTest, TheCpuDeviceAndAGpuWaitForEachOther) {
    if (detail::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device on this machine";
    DeviceContext gpu(0, "cuda"), cpu(0, "cpu");
    auto dg = gpu.enqueue_create_buffer<int64_t>(kN);
    auto hg = gpu.enqueue_create_host_buffer<int64_t>(kN);
    gpu.enqueue_function(slow_fill, dg, kN, int64_t{20000}, int64_t{5}, grid_dim(kN / kBlock), block_dim(kBlock));
    gpu.enqueue_copy(hg, dg);
    cpu.enqueue_wait_for(gpu);
    cpu.synchronize();
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(hg[i], 5) << "element " << i;

    auto dc = cpu.enqueue_create_buffer<int64_t>(kN);
    auto hc = cpu.enqueue_create_host_buffer<int64_t>(kN);
    cpu.enqueue_function(slow_fill, dc, kN, int64_t{20}, int64_t{6}, grid_dim(kN / kBlock), block_dim(kBlock));
    cpu.enqueue_copy(hc, dc);
    gpu.enqueue_wait_for(cpu);
    gpu.synchronize();
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(hc[i], 6) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(AllApis, StreamTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
