/// \file
/// First-launch costs of scalar_add on the default device, each beside a peer measured in the same
/// run: trace, compile (lower, optimise, codegen), load, one async launch, launch + synchronize.
///
/// On CUDA the peer is the raw driver API called directly (cuModuleLoadData of the same PTX,
/// cuLaunchKernel of the same function): the ratio is ember's cost over the driver's. On the CPU
/// device the peer is a plain C++ loop doing the same work on one thread. Set CUDA_CACHE_DISABLE=1
/// (this program does) so that the driver's own PTX cache does not hide the JIT cost.
///
/// ember's compile cache gets a new, empty directory (EMBER_CACHE_DIR, unless the caller set one),
/// so that the first compile_function is a real compile and load. The second compile_function of the
/// same kernel is then answered by the cache's memory level (on CUDA: a new module from the cubin in
/// memory, no JIT), and a twin kernel of another name (a new cache entry, the same PTX but for
/// the name) measures a PTX load on a warm driver, the peer's situation.
#include "ember/ember.h"

#include "RawCuda.h"


#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void check(int rc, const char *what) {
    if (rc != 0) {
        std::fprintf(stderr, "first_launch: %s failed with CUresult %d\n", what, rc);
        std::exit(1);
    }
}

void row(const char *what, double ember_us, double peer_us, const char *peer) {
    std::printf("%-34s %12.2f us   %-26s %12.2f us   ratio %8.2fx\n", what, ember_us, peer, peer_us,
                peer_us > 0 ? ember_us / peer_us : 0.0);
}

} // namespace

int main() try {
    ::setenv("CUDA_CACHE_DISABLE", "1", 0);
    char cache_dir[] = "/tmp/ember-first-launch-XXXXXX";
    const bool own_cache_dir = !std::getenv("EMBER_CACHE_DIR") && ::mkdtemp(cache_dir);
    if (own_cache_dir) ::setenv("EMBER_CACHE_DIR", cache_dir, 1);
    auto body = [](Ptr<float> vector, Int size, Float32 scalar) {
        auto idx = block_idx.x * block_dim.x + thread_idx.x;
        if_(idx < size, [&] { vector[idx] += scalar; });
    };
    auto t0 = Clock::now();
    auto scalar_add = kernel("scalar_add", {"vector", "size", "scalar"}, body);
    double trace_us = us_since(t0);
    auto twin = kernel("scalar_add_twin", {"vector", "size", "scalar"}, body);

    DeviceContext ctx;
    std::printf("device: %s (%s, target %s)\n", ctx.name().c_str(), ctx.api().c_str(), ctx.target().c_str());
    const int64_t n = 1 << 20;
    auto buf = ctx.enqueue_create_buffer<float>(n);
    std::vector<float> host(n, 1.0f);
    ctx.enqueue_copy(buf, host.data());
    ctx.synchronize();

    t0 = Clock::now();
    auto fn = ctx.compile_function(scalar_add);
    double first_compile_us = us_since(t0);
    // A second compile_function of the same kernel: the cache's memory level answers it.
    t0 = Clock::now();
    auto fn2 = ctx.compile_function(scalar_add);
    double second_compile_us = us_since(t0);
    // The twin: compiled and loaded from its PTX with the driver warm, like the peer below.
    t0 = Clock::now();
    auto fn3 = ctx.compile_function(twin);
    double twin_compile_us = us_since(t0);
    std::printf("trace                              %12.2f us\n", trace_us);
    std::printf("compile_function, first            %12.2f us   (compile %.2f us + load %.2f us)\n",
                first_compile_us, fn.compile_seconds() * 1e6, fn.load_seconds() * 1e6);
    std::printf("compile_function, memory hit       %12.2f us   (load %.2f us)\n", second_compile_us,
                fn2.load_seconds() * 1e6);
    std::printf("compile_function, twin kernel      %12.2f us   (compile %.2f us + load %.2f us)\n",
                twin_compile_us, fn3.compile_seconds() * 1e6, fn3.load_seconds() * 1e6);

    const Dim grid((n + 255) / 256), block(256);
    const int iters = 20000;
    // Warm up, then one launch + synchronize, then many async launches.
    ctx.enqueue_function(fn, buf, n, 1.0f, LaunchConfig{grid, block});
    ctx.synchronize();
    t0 = Clock::now();
    ctx.enqueue_function(fn, buf, n, 1.0f, LaunchConfig{grid, block});
    ctx.synchronize();
    double first_launch_sync_us = us_since(t0);
    t0 = Clock::now();
    for (int i = 0; i < 1000; ++i) {
        ctx.enqueue_function(fn, buf, n, 1.0f, LaunchConfig{grid, block});
        ctx.synchronize();
    }
    double launch_sync_us = us_since(t0) / 1000;
    t0 = Clock::now();
    for (int i = 0; i < iters; ++i) ctx.enqueue_function(fn, buf, n, 1.0f, LaunchConfig{grid, block});
    double launch_us = us_since(t0) / iters;
    ctx.synchronize();
    t0 = Clock::now();
    for (int i = 0; i < iters; ++i) ctx.enqueue_function(scalar_add, buf, n, 1.0f, LaunchConfig{grid, block});
    double launch_cached_us = us_since(t0) / iters;
    ctx.synchronize();

    if (ctx.api() == "cuda") {
        RawCuda cu;
        if (!cu.load()) throw RuntimeError("cannot load libcuda.so.1 for the peer");
        std::string ptx = fn3.assembly();
        void *mod = nullptr, *f = nullptr;
        t0 = Clock::now();
        check(cu.cuModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData");
        double peer_load_us = us_since(t0);
        check(cu.cuModuleGetFunction(&f, mod, "scalar_add_twin"), "cuModuleGetFunction");
        uint64_t addr = buf.address();
        int64_t size = n;
        float s = 1.0f;
        void *args[] = {&addr, &size, &s};
        auto raw_launch = [&] {
            check(cu.cuLaunchKernel(f, unsigned(grid.x), 1, 1, unsigned(block.x), 1, 1, 0, nullptr, args,
                                    nullptr),
                  "cuLaunchKernel");
        };
        raw_launch();
        check(cu.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
        t0 = Clock::now();
        for (int i = 0; i < 1000; ++i) {
            raw_launch();
            check(cu.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
        }
        double peer_launch_sync_us = us_since(t0) / 1000;
        t0 = Clock::now();
        for (int i = 0; i < iters; ++i) raw_launch();
        double peer_launch_us = us_since(t0) / iters;
        check(cu.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
        cu.cuModuleUnload(mod);
        std::printf("\n%-34s %15s   %-26s %15s\n", "", "ember", "peer", "");
        row("PTX load, warm driver (twin)", fn3.load_seconds() * 1e6, peer_load_us, "cuModuleLoadData");
        row("launch, async (DeviceFunction)", launch_us, peer_launch_us, "cuLaunchKernel");
        row("launch, async (Kernel, cached)", launch_cached_us, peer_launch_us, "cuLaunchKernel");
        row("launch + synchronize", launch_sync_us, peer_launch_sync_us, "cuLaunchKernel+sync");
        std::printf("first launch + synchronize (after compile): %.2f us\n", first_launch_sync_us);
    } else {
        std::vector<float> v(n, 1.0f);
        t0 = Clock::now();
        for (int rep = 0; rep < 100; ++rep)
            for (int64_t i = 0; i < n; ++i) v[i] += 1.0f;
        double peer_us = us_since(t0) / 100;
        std::printf("\n");
        row("launch + synchronize (1M floats)", launch_sync_us, peer_us, "C++ loop, one thread");
        row("launch, async (DeviceFunction)", launch_us, peer_us, "C++ loop, one thread");
        row("launch, async (Kernel, cached)", launch_cached_us, peer_us, "C++ loop, one thread");
        std::printf("first launch + synchronize (after compile): %.2f us\n", first_launch_sync_us);
    }
    // The result must be right too: 1 + every launch made above.
    std::vector<float> out(n);
    ctx.enqueue_copy(out.data(), buf);
    ctx.synchronize();
    // ember's launches above, plus the peer's on CUDA (integers, exact in float).
    float expect = 1.0f + 1 + 1 + 1000 + 2 * iters;
    if (ctx.api() == "cuda") expect += 1 + 1000 + iters;
    int64_t bad = std::count_if(out.begin(), out.end(), [&](float x) { return x != expect; });
    std::printf("result check: %s\n", bad == 0 ? "ok" : "WRONG");
    if (own_cache_dir) std::filesystem::remove_all(cache_dir);
    return bad == 0 ? 0 : 1;
} catch (const ember::Error &e) {
    std::fprintf(stderr, "first_launch: %s\n", e.what());
    return 1;
}
