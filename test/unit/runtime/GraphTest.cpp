/// \file
/// Graphs on every api: capture of copies, kernels and waits, replays checked each time, updates
/// of a kernel node's arguments and dimensions, instances that are independent, graphs that
/// outlive the buffers the program dropped, captures on two streams at once, the empty graph,
/// and the LogicErrors of what a capture does not allow. CUDA cases skip where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ember;

namespace {

const auto add_scalar = kernel("add_scalar", {"v", "n", "s"}, [](Ptr<int64_t> v, Int n, Int64 s) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] += s; });
});

const auto scale = kernel("scale", {"v", "n", "factor"}, [](Ptr<int64_t> v, Int n, Int64 factor) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] *= factor; });
});

constexpr int64_t kN = 1000;
constexpr int64_t kBlock = 128;
constexpr int64_t kGrid = (kN + kBlock - 1) / kBlock;

class GraphTest : public ember::testing::DeviceTest {
protected:
    HostBuffer<int64_t> host(int64_t first) {
        HostBuffer<int64_t> h = ctx().enqueue_create_host_buffer<int64_t>(kN);
        std::iota(h.begin(), h.end(), first);
        return h;
    }
    /// Copies `dev` to the host (outside any capture) and returns it.
    std::vector<int64_t> read(const DeviceBuffer<int64_t> &dev) {
        std::vector<int64_t> out(kN);
        ctx().enqueue_copy(out.data(), dev);
        ctx().synchronize();
        return out;
    }
    void expect_iota(const std::vector<int64_t> &v, int64_t first, int64_t times = 1, const char *what = "") {
        for (int64_t i = 0; i < int64_t(v.size()); ++i)
            if (v[i] != (first + i) * times) {
                ADD_FAILURE() << what << ": element " << i << " is " << v[i] << ", want " << (first + i) * times;
                return;
            }
    }
    template <class F> void expect_logic_error(F &&f, const std::string &needle) {
        try {
            f();
            ADD_FAILURE() << "no LogicError (want one containing '" << needle << "')";
        } catch (const LogicError &e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    }
};

TEST_P(GraphTest, CapturesCopiesAndKernelsAndReplaysThem) {
    HostBuffer<int64_t> in = host(0), out = ctx().enqueue_create_host_buffer<int64_t>(kN);
    std::fill(out.begin(), out.end(), -1);
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    auto f = ctx().compile_function(add_scalar);
    ctx().synchronize();

    DeviceStream s = ctx().stream();
    EXPECT_FALSE(s.is_capturing());
    s.begin_capture();
    EXPECT_TRUE(s.is_capturing());
    EXPECT_TRUE(ctx().is_capturing());
    s.enqueue_copy(dev, in);
    s.enqueue_function(f, dev, kN, int64_t{10}, grid_dim(kGrid), block_dim(kBlock));
    s.enqueue_function(scale, dev, kN, int64_t{3}, grid_dim(kGrid), block_dim(kBlock)); // a Kernel too
    s.enqueue_copy(out, dev);
    DeviceGraph g = s.end_capture();
    EXPECT_FALSE(s.is_capturing());
    ctx().synchronize();
    // Capturing ran nothing.
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], -1) << "element " << i << " written during the capture";

    EXPECT_EQ(g.num_nodes(), 4u);
    std::vector<KernelNode> nodes = g.kernel_nodes();
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0].index, 0u);
    EXPECT_EQ(nodes[0].function_name, "add_scalar");
    EXPECT_EQ(nodes[1].function_name, "scale");
    EXPECT_EQ(nodes[1].grid_dim, Dim(kGrid));
    EXPECT_EQ(nodes[1].block_dim, Dim(kBlock));
    EXPECT_EQ(g.context().name(), ctx().name());

    DeviceGraphExec exec = g.instantiate();
    EXPECT_EQ(exec.num_nodes(), 4u);
    for (int round = 0; round < 3; ++round) {
        // The graph copies from `in` when it runs: new inputs each round.
        std::iota(in.begin(), in.end(), int64_t{round * 100});
        std::fill(out.begin(), out.end(), -1);
        exec.launch();
        ctx().synchronize();
        for (int64_t i = 0; i < kN; ++i)
            ASSERT_EQ(out[i], (round * 100 + i + 10) * 3) << "round " << round << ", element " << i;
    }
}

TEST_P(GraphTest, UpdatesAKernelsArgumentsBetweenReplays) {
    auto a = ctx().enqueue_create_buffer<int64_t>(kN);
    auto b = ctx().enqueue_create_buffer<int64_t>(kN);
    HostBuffer<int64_t> init = host(0);
    ctx().enqueue_copy(a, init);
    ctx().enqueue_copy(b, init);
    auto f = ctx().compile_function(add_scalar);
    DeviceGraph g = ctx().capture([&](DeviceStream &s) {
        s.enqueue_function(f, a, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
    });
    DeviceGraphExec exec = g.instantiate();
    exec.launch();
    expect_iota(read(a), 1, 1, "a after one replay");

    // Another buffer and scalar: later replays add 5 to b, a stays.
    exec.update_kernel_arguments(0, f, b, kN, int64_t{5});
    exec.launch();
    exec.launch();
    expect_iota(read(a), 1, 1, "a after the update");
    expect_iota(read(b), 10, 1, "b after two updated replays");

    // Through the Kernel and the KernelNode, with new dimensions: one block of kBlock threads
    // covers only the first kBlock elements.
    KernelNode node = exec.kernel_nodes().at(0);
    exec.update_kernel_arguments(node, add_scalar, a, kN, int64_t{1000}, grid_dim(1), block_dim(kBlock));
    EXPECT_EQ(exec.kernel_nodes()[0].grid_dim, Dim(1));
    EXPECT_EQ(g.kernel_nodes()[0].grid_dim, Dim(kGrid)); // the graph keeps what it captured
    exec.launch();
    std::vector<int64_t> av = read(a);
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(av[i], i + 1 + (i < kBlock ? 1000 : 0)) << "element " << i;

    // A second instance of the graph is independent of the first's updates.
    DeviceGraphExec fresh = g.instantiate();
    fresh.launch();
    av = read(a);
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(av[i], i + 2 + (i < kBlock ? 1000 : 0)) << "element " << i;
}

TEST_P(GraphTest, AnUpdateIsCheckedAgainstTheNode) {
    auto a = ctx().enqueue_create_buffer<int64_t>(kN);
    auto f = ctx().compile_function(add_scalar);
    DeviceGraph g = ctx().capture([&](DeviceStream &s) {
        s.enqueue_function(f, a, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
    });
    DeviceGraphExec exec = g.instantiate();
    expect_logic_error([&] { exec.update_kernel_arguments(0, scale, a, kN, int64_t{2}); },
                       "launches kernel 'add_scalar', not 'scale'");
    expect_logic_error([&] { exec.update_kernel_arguments(1, f, a, kN, int64_t{2}); },
                       "kernel node 1 does not exist; the graph has 1 kernel node");
    DeviceBuffer<int64_t> empty;
    expect_logic_error([&] { exec.update_kernel_arguments(0, f, empty, kN, int64_t{2}); }, "empty DeviceBuffer");
    DeviceContext other(0, GetParam());
    auto foreign = other.enqueue_create_buffer<int64_t>(kN);
    expect_logic_error([&] { exec.update_kernel_arguments(0, f, foreign, kN, int64_t{2}); }, "is a DeviceBuffer of");
    expect_logic_error([&] { exec.update_kernel_arguments(0, f, a, kN, int64_t{2}, grid_dim(1)); },
                       "needs block_dim(...)");
    expect_logic_error(
        [&] { exec.update_kernel_arguments(0, f, a, kN, int64_t{2}, grid_dim(1), block_dim(100000)); },
        "block_dim");
    // None of these changed the node.
    HostBuffer<int64_t> init = host(0);
    ctx().enqueue_copy(a, init);
    exec.launch();
    expect_iota(read(a), 1, 1, "after the rejected updates");
}

TEST_P(GraphTest, CaptureRejectsWhatItCannotHold) {
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    std::vector<int64_t> pageable(kN, 0);
    DeviceEvent e = ctx().create_event();
    DeviceStream s = ctx().stream();
    DeviceGraphExec earlier = ctx().capture([](DeviceStream &) {}).instantiate();
    s.begin_capture();
    expect_logic_error([&] { s.begin_capture(); }, "is capturing already");
    expect_logic_error([&] { s.synchronize(); }, "synchronize is not allowed while the stream of");
    expect_logic_error([&] { ctx().synchronize(); }, "synchronize is not allowed while");
    expect_logic_error([&] { (void)s.is_done(); }, "is_done is not allowed while");
    expect_logic_error([&] { s.record_event(e); }, "record_event is not allowed while");
    expect_logic_error([&] { e.record(); }, "record_event is not allowed while");
    expect_logic_error([&] { (void)ctx().create_stream(); }, "create_stream is not allowed while");
    expect_logic_error([&] { ctx().enqueue_copy(dev, pageable.data()); }, "source is a raw host pointer");
    expect_logic_error([&] { ctx().enqueue_copy(pageable.data(), dev); }, "destination is a raw host pointer");
    expect_logic_error([&] { earlier.launch(); }, "is capturing a graph");
    // The capture survives the rejected calls.
    s.enqueue_function(add_scalar, dev, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
    DeviceGraph g = s.end_capture();
    EXPECT_EQ(g.num_nodes(), 1u);
    expect_logic_error([&] { (void)s.end_capture(); }, "is not capturing");
    ctx().synchronize(); // usable again

    // A body that throws ends the capture and drops the graph.
    EXPECT_THROW(ctx().capture([](DeviceStream &) { throw std::runtime_error("body failed"); }),
                 std::runtime_error);
    EXPECT_FALSE(ctx().is_capturing());

    DeviceGraph none;
    expect_logic_error([&] { (void)none.num_nodes(); }, "default-constructed");
    DeviceGraphExec no_exec;
    expect_logic_error([&] { no_exec.launch(); }, "default-constructed");
    DeviceContext other(0, GetParam());
    expect_logic_error([&] { g.instantiate().launch(other.stream()); }, "launch it on a stream of its own context");
}

TEST_P(GraphTest, AGraphKeepsItsBuffersAlive) {
    HostBuffer<int64_t> out = ctx().enqueue_create_host_buffer<int64_t>(kN);
    DeviceGraphExec exec;
    {
        auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
        auto scratch = ctx().enqueue_create_buffer<int64_t>(kN);
        HostBuffer<int64_t> in = host(7);
        auto f = ctx().compile_function(add_scalar);
        DeviceGraph g = ctx().capture([&](DeviceStream &s) {
            s.enqueue_copy(dev, in);
            s.enqueue_function(f, dev, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
            s.enqueue_copy(scratch, dev);
            s.enqueue_copy(out, scratch);
        });
        exec = g.instantiate();
        // dev, scratch, in, f and g go out of scope here.
    }
    // New allocations of the same size would reuse freed memory if the graph had not kept it.
    auto other = ctx().enqueue_create_buffer<int64_t>(kN);
    auto other2 = ctx().enqueue_create_buffer<int64_t>(kN);
    HostBuffer<int64_t> junk = host(-5000);
    ctx().enqueue_copy(other, junk);
    ctx().enqueue_copy(other2, junk);
    for (int round = 0; round < 3; ++round) {
        std::fill(out.begin(), out.end(), -1);
        exec.launch();
        ctx().synchronize();
        for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], 7 + i + 1) << "round " << round << ", element " << i;
    }
    expect_iota(read(other), -5000, 1, "a buffer allocated after the capture");
}

TEST_P(GraphTest, TwoStreamsCaptureAtOnce) {
    auto a = ctx().enqueue_create_buffer<int64_t>(kN);
    auto b = ctx().enqueue_create_buffer<int64_t>(kN);
    HostBuffer<int64_t> init = host(0);
    ctx().enqueue_copy(a, init);
    ctx().enqueue_copy(b, init);
    ctx().synchronize();
    DeviceStream s1 = ctx().create_stream(), s2 = ctx().create_stream();
    s1.begin_capture();
    s2.begin_capture();
    EXPECT_TRUE(s1.is_capturing());
    EXPECT_TRUE(s2.is_capturing());
    EXPECT_FALSE(ctx().is_capturing());
    s1.enqueue_function(add_scalar, a, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
    s2.enqueue_function(scale, b, kN, int64_t{2}, grid_dim(kGrid), block_dim(kBlock));
    s1.enqueue_function(add_scalar, a, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
    DeviceGraph g2 = s2.end_capture();
    DeviceGraph g1 = s1.end_capture();
    EXPECT_EQ(g1.num_nodes(), 2u);
    EXPECT_EQ(g2.num_nodes(), 1u);
    expect_iota(read(a), 0, 1, "a after the captures");
    DeviceGraphExec e1 = g1.instantiate(), e2 = g2.instantiate();
    e1.launch(s1);
    e2.launch(s2);
    s1.synchronize();
    s2.synchronize();
    e2.launch(s1); // any stream of the context
    s1.synchronize();
    expect_iota(read(a), 2, 1, "a");
    expect_iota(read(b), 0, 4, "b");
}

TEST_P(GraphTest, AGraphWaitsForAnEventRecordedOutsideIt) {
    auto dev = ctx().enqueue_create_buffer<int64_t>(kN);
    HostBuffer<int64_t> init = host(0);
    DeviceStream upload = ctx().create_stream(), work = ctx().create_stream();
    DeviceEvent uploaded = upload.create_event(EventFlags::disable_timing);
    upload.record_event(uploaded);
    work.begin_capture();
    work.enqueue_wait_for(uploaded);
    work.enqueue_function(add_scalar, dev, kN, int64_t{1}, grid_dim(kGrid), block_dim(kBlock));
    DeviceGraph g = work.end_capture();
    EXPECT_EQ(g.num_nodes(), 2u);
    DeviceGraphExec exec = g.instantiate();
    for (int round = 0; round < 3; ++round) {
        upload.enqueue_copy(dev, init);
        upload.record_event(uploaded);
        exec.launch(work);
        work.synchronize();
        expect_iota(read(dev), 1, 1, "after a replay");
    }
}

TEST_P(GraphTest, AnEmptyGraphRunsNothing) {
    DeviceStream s = ctx().create_stream();
    s.begin_capture();
    DeviceGraph g = s.end_capture();
    EXPECT_EQ(g.num_nodes(), 0u);
    EXPECT_TRUE(g.kernel_nodes().empty());
    DeviceGraphExec exec = g.instantiate();
    EXPECT_EQ(exec.num_nodes(), 0u);
    exec.launch(s);
    exec.launch();
    s.synchronize();
    ctx().synchronize();
    EXPECT_TRUE(s.is_done());
}

TEST_P(GraphTest, BuffersCreatedAndDroppedDuringACaptureAreNotPartOfIt) {
    auto a = ctx().enqueue_create_buffer<int64_t>(kN);
    HostBuffer<int64_t> init = host(0);
    ctx().enqueue_copy(a, init);
    DeviceGraph g = ctx().capture([&](DeviceStream &s) {
        auto tmp = ctx().enqueue_create_buffer<int64_t>(kN); // allocated now, not in the graph
        s.enqueue_copy(tmp, a);
        s.enqueue_function(add_scalar, tmp, kN, int64_t{3}, grid_dim(kGrid), block_dim(kBlock));
        s.enqueue_copy(a, tmp);
        auto dropped = ctx().enqueue_create_buffer<int64_t>(16); // freed during the capture
    });
    EXPECT_EQ(g.num_nodes(), 3u);
    DeviceGraphExec exec = g.instantiate();
    exec.launch();
    exec.launch();
    expect_iota(read(a), 6, 1, "after two replays");
}

INSTANTIATE_TEST_SUITE_P(Apis, GraphTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
