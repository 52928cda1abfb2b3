/// \file
/// N small kernel launches on the default device, replayed as one graph against the peer
/// measured in the same run: the same N launches enqueued one by one with enqueue_function.
/// Both end with a synchronize; the time is per round of N launches (the median of the rounds),
/// and the ratio is the graph's time over the peer's. `--launches N` (default 100) and
/// `--rounds R` (default 200) change the sizes. The result is checked at the end.
#include "ember/ember.h"

#include "BenchSupport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace ember;
using ember::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void row(const char *what, double ember_us, double peer_us, const char *peer) {
    std::printf("%-34s %12.2f us   %-26s %12.2f us   ratio %8.2fx\n", what, ember_us, peer, peer_us,
                peer_us > 0 ? ember_us / peer_us : 0.0);
}

int arg(int argc, char **argv, const char *name, int fallback) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], name) == 0) return std::max(1, std::atoi(argv[i + 1]));
    return fallback;
}

} // namespace

int main(int argc, char **argv) try {
    const int launches = arg(argc, argv, "--launches", 100);
    const int rounds = arg(argc, argv, "--rounds", 200);
    auto add_one = kernel("add_one", {"v", "n"}, [](Ptr<int64_t> v, Int n) {
        auto i = block_idx.x * block_dim.x + thread_idx.x;
        if_(i < n, [&] { v[i] += 1; });
    });

    DeviceContext ctx;
    std::printf("device: %s (%s, target %s); %d launches of a 256-element kernel per round, %d rounds\n",
                ctx.name().c_str(), ctx.api().c_str(), ctx.target().c_str(), launches, rounds);
    const int64_t n = 256;
    auto buf = ctx.enqueue_create_buffer<int64_t>(n);
    std::vector<int64_t> zeros(n, 0);
    ctx.enqueue_copy(buf, zeros.data());
    auto fn = ctx.compile_function(add_one);

    auto enqueue_round = [&](const DeviceStream &s) {
        for (int k = 0; k < launches; ++k) s.enqueue_function(fn, buf, n, grid_dim(1), block_dim(n));
    };
    DeviceGraph graph = ctx.capture([&](DeviceStream &s) { enqueue_round(s); });
    DeviceGraphExec exec = graph.instantiate();

    // Warm up both, then alternate them round by round so that both see the same machine.
    enqueue_round(ctx.stream());
    exec.launch();
    ctx.synchronize();
    std::vector<double> peer_us, graph_us;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        enqueue_round(ctx.stream());
        ctx.synchronize();
        peer_us.push_back(us_since(t0));
        t0 = Clock::now();
        exec.launch();
        ctx.synchronize();
        graph_us.push_back(us_since(t0));
    }
    // The host's cost of enqueueing alone (no synchronize in the loop).
    auto t0 = Clock::now();
    exec.launch();
    double graph_enqueue_us = us_since(t0);
    t0 = Clock::now();
    enqueue_round(ctx.stream());
    double peer_enqueue_us = us_since(t0);
    ctx.synchronize();

    std::printf("\n%-34s %15s   %-26s %15s\n", "", "ember graph", "peer", "");
    row("round + synchronize (median)", median(graph_us), median(peer_us), "N x enqueue_function");
    row("round, enqueue only (one)", graph_enqueue_us, peer_enqueue_us, "N x enqueue_function");
    std::printf("graph: %zu nodes, %zu kernel nodes\n", graph.num_nodes(), graph.kernel_nodes().size());

    // Every launch adds 1: warm-up, rounds and the enqueue-only pair, graph and peer alike.
    std::vector<int64_t> out(n);
    ctx.enqueue_copy(out.data(), buf);
    ctx.synchronize();
    const int64_t expect = int64_t(launches) * 2 * (1 + rounds + 1);
    int64_t bad = std::count_if(out.begin(), out.end(), [&](int64_t x) { return x != expect; });
    std::printf("result check: %s\n", bad == 0 ? "ok" : "WRONG");
    return bad == 0 ? 0 : 1;
} catch (const ember::Error &e) {
    std::fprintf(stderr, "graph_replay: %s\n", e.what());
    return 1;
}
