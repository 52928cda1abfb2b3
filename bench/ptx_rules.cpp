/// \file
/// What ember's rules around ptxas cost (docs/testing.md lists the ptxas defects; [Note] ptxas and
/// 32-bit min/max of negations and [Note] ptxas and 16-bit selects of live registers in
/// compiler/lib/targets/NVPTXTarget.cpp): every 32-bit integer min/max is done in 64 bits, and a
/// 16-bit select of two registers becomes a bit blend. Two kernels made of little else run on the
/// GPU beside their nvcc twins, the same arithmetic in CUDA C compiled by the toolkit's nvcc when
/// this program runs (nvcc in PATH, else /usr/local/cuda/bin; the library itself never uses it),
/// loaded and launched through the raw driver (-fmad=false: ember contracts no multiply and add
/// that the kernel does not write as an fma). Each chain with a rule has a calibration twin, the
/// same loop without the rule's instruction, which shows what the two compilers' loops cost apart
/// from the rule. The ratio is ember's time over nvcc's, medians of the rounds; the results are
/// compared bit for bit. CUDA only.
#include "ember/ember.h"

#include "BenchSupport.h"

#include "RawCuda.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace ember;
using ember::bench::find_nvcc;
using ember::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

// x is clamped, mixed with the loop counter and shifted: a dependent chain of min, max, xor, add
// and shift, five integer operations per step, two of them a min or max.
const auto minmax_chain = kernel("minmax_chain", {"in", "out", "n", "steps", "lo", "hi"},
                                 [](Ptr<int32_t> in, Ptr<int32_t> out, Int n, Int steps, Int32 lo, Int32 hi) {
                                     auto i = global_idx.x;
                                     if_(i < n, [&] {
                                         Var<int32_t> x(in[i]);
                                         for_(0, steps, [&](Int k) {
                                             x = max(min(x ^ cast<int32_t>(k), hi), lo) + (x >> 5);
                                         });
                                         out[i] = x;
                                     });
                                 });

// The same chain without the min and max: what the two compilers' loops cost apart from the rule.
const auto mix_chain = kernel("mix_chain", {"in", "out", "n", "steps", "lo", "hi"},
                              [](Ptr<int32_t> in, Ptr<int32_t> out, Int n, Int steps, Int32 lo, Int32 hi) {
                                  auto i = global_idx.x;
                                  if_(i < n, [&] {
                                      Var<int32_t> x(in[i]);
                                      for_(0, steps, [&](Int k) { x = (((x ^ cast<int32_t>(k)) & hi) | lo) + (x >> 5); });
                                      out[i] = x;
                                  });
                              });

// A chain of half selects between two computed values (both live in registers).
const auto select_chain = kernel("select_chain", {"in", "c", "out", "n", "steps"},
                                 [](Ptr<half> in, Ptr<half> c, Ptr<half> out, Int n, Int steps) {
                                     auto i = global_idx.x;
                                     if_(i < n, [&] {
                                         Var<half> h(in[i]);
                                         Value<half> a = c[0], b = c[1], t = c[2];
                                         for_(0, steps, [&](Int) { h = select(h < t, h + a, h * b); });
                                         out[i] = h;
                                     });
                                 });

// The same chain with the select made arithmetic (h + a when below t, else h * b, as a sum).
const auto arith_chain = kernel("arith_chain", {"in", "c", "out", "n", "steps"},
                                [](Ptr<half> in, Ptr<half> c, Ptr<half> out, Int n, Int steps) {
                                    auto i = global_idx.x;
                                    if_(i < n, [&] {
                                        Var<half> h(in[i]);
                                        Value<half> a = c[0], b = c[1], t = c[2];
                                        for_(0, steps, [&](Int) { h = (h + a) * t + h * b; });
                                        out[i] = h;
                                    });
                                });

const char *kTwins = R"(#include <cuda_fp16.h>
extern "C" __global__ void minmax_chain(const int *in, int *out, long long n, long long steps, int lo, int hi) {
    long long i = (long long)blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= n) return;
    int x = in[i];
    for (long long k = 0; k < steps; ++k) x = max(min(x ^ (int)k, hi), lo) + (x >> 5);
    out[i] = x;
}
extern "C" __global__ void mix_chain(const int *in, int *out, long long n, long long steps, int lo, int hi) {
    long long i = (long long)blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= n) return;
    int x = in[i];
    for (long long k = 0; k < steps; ++k) x = (((x ^ (int)k) & hi) | lo) + (x >> 5);
    out[i] = x;
}
extern "C" __global__ void arith_chain(const __half *in, const __half *c, __half *out, long long n, long long steps) {
    long long i = (long long)blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= n) return;
    __half h = in[i], a = c[0], b = c[1], t = c[2];
    for (long long k = 0; k < steps; ++k) h = __hadd(__hmul(__hadd(h, a), t), __hmul(h, b));
    out[i] = h;
}
extern "C" __global__ void select_chain(const __half *in, const __half *c, __half *out, long long n, long long steps) {
    long long i = (long long)blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= n) return;
    __half h = in[i], a = c[0], b = c[1], t = c[2];
    for (long long k = 0; k < steps; ++k) h = __hlt(h, t) ? __hadd(h, a) : __hmul(h, b);
    out[i] = h;
}
)";

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

void check(int rc, const char *what) {
    if (rc != 0) throw RuntimeError(std::string("ptx_rules: ") + what + " failed with CUresult " + std::to_string(rc));
}

} // namespace

int main() try {
    DeviceContext ctx;
    std::printf("device: %s (%s, target %s)\n", ctx.name().c_str(), ctx.api().c_str(), ctx.target().c_str());
    if (ctx.api() != "cuda") {
        std::printf("ptx_rules measures rules of the NVPTX target against nvcc: it needs a CUDA device\n");
        return 0;
    }
    const std::string nvcc = find_nvcc();
    if (nvcc.empty()) {
        std::printf("ptx_rules: no nvcc in PATH or /usr/local/cuda/bin, so no twin to measure against\n");
        return 0;
    }
    auto [major, minor] = ctx.compute_capability();
    const std::string arch = "sm_" + std::to_string(major * 10 + minor);
    const auto dir = std::filesystem::temp_directory_path() / ("ember-ptx-rules-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "twins.cu") << kTwins;
    const std::string cmd = nvcc + " -O3 -fmad=false -arch=" + arch + " -cubin -o " + (dir / "twins.cubin").string() + " " +
                            (dir / "twins.cu").string();
    if (std::system(cmd.c_str()) != 0) throw RuntimeError("ptx_rules: nvcc failed: " + cmd);
    std::ifstream f(dir / "twins.cubin", std::ios::binary);
    const std::string cubin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::filesystem::remove_all(dir);

    RawCuda cu;
    if (!cu.load()) throw RuntimeError("cannot load libcuda.so.1 for the peer");
    void *module = nullptr;
    check(cu.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
    auto twin = [&](const char *name) {
        void *f = nullptr;
        check(cu.cuModuleGetFunction(&f, module, name), "cuModuleGetFunction");
        return f;
    };

    const int64_t n = int64_t(ctx.get_attribute(DeviceAttribute::multiprocessor_count)) * 2048 * 2, steps = 4096;
    const int64_t block = 256, grid = (n + block - 1) / block;
    const int rounds = 9;
    std::printf("%lld threads, %lld steps each, median of %d rounds (nvcc: %s -O3 -fmad=false -arch=%s)\n\n", (long long)n,
                (long long)steps, rounds, nvcc.c_str(), arch.c_str());
    std::printf("%-36s %12s %12s %8s  %s\n", "kernel", "ember", "nvcc", "ratio", "results");

    // Times one kernel against its twin, alternating them, and compares their outputs bit for bit.
    auto measure = [&](const char *what, auto launch_ember, void *twin, std::vector<void *> twin_args, auto outputs) {
        std::vector<double> te, tp;
        for (int r = 0; r < rounds + 1; ++r) {
            auto t0 = Clock::now();
            launch_ember();
            ctx.synchronize();
            if (r > 0) te.push_back(us_since(t0));
            t0 = Clock::now();
            check(cu.cuLaunchKernel(twin, unsigned(grid), 1, 1, unsigned(block), 1, 1, 0, nullptr, twin_args.data(),
                                    nullptr),
                  "cuLaunchKernel");
            check(cu.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
            if (r > 0) tp.push_back(us_since(t0));
        }
        const double e = median(te), p = median(tp);
        const bool same = outputs();
        std::printf("%-36s %9.1f us %9.1f us %7.2fx  %s\n", what, e, p, e / p, same ? "identical" : "DIFFER");
        return same;
    };

    std::vector<int32_t> hin(n);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (auto &v : hin) v = int32_t((s = s * 6364136223846793005ull + 1442695040888963407ull) >> 32);
    auto in = ctx.enqueue_create_buffer<int32_t>(n), out_e = ctx.enqueue_create_buffer<int32_t>(n),
         out_p = ctx.enqueue_create_buffer<int32_t>(n);
    ctx.enqueue_copy(in, hin.data());
    ctx.synchronize();
    uint64_t a_in = in.address(), a_out = out_p.address();
    int64_t nn = n, ss = steps;
    int32_t lo = -1000000, hi = 1 << 24;
    auto same_ints = [&] {
        std::vector<int32_t> e(n), p(n);
        ctx.enqueue_copy(e.data(), out_e);
        ctx.enqueue_copy(p.data(), out_p);
        ctx.synchronize();
        return e == p;
    };
    bool all_same = true;
    for (auto [k, name, what] : {std::tuple{&minmax_chain, "minmax_chain", "int32 min/max chain (64-bit in ember)"},
                                 std::tuple{&mix_chain, "mix_chain", "int32 and/or chain (no rule)"}}) {
        auto fn = ctx.compile_function(*k);
        all_same = measure(
                       what,
                       [&] { ctx.enqueue_function(fn, in, out_e, n, steps, lo, hi, LaunchConfig{Dim(grid), Dim(block)}); },
                       twin(name), {&a_in, &a_out, &nn, &ss, &lo, &hi}, same_ints) &&
                   all_same;
    }

    std::vector<half> hh(n), hc = {half(0.125f), half(-1.5f), half(0.75f)};
    for (int64_t i = 0; i < n; ++i) hh[i] = half(float(int(hin[i] % 4096)) / 2048.0f);
    auto hin_d = ctx.enqueue_create_buffer<half>(n), hc_d = ctx.enqueue_create_buffer<half>(3),
         hout_e = ctx.enqueue_create_buffer<half>(n), hout_p = ctx.enqueue_create_buffer<half>(n);
    ctx.enqueue_copy(hin_d, hh.data());
    ctx.enqueue_copy(hc_d, hc.data());
    ctx.synchronize();
    uint64_t h_in = hin_d.address(), h_c = hc_d.address(), h_out = hout_p.address();
    auto same_halves = [&] {
        std::vector<uint16_t> e(n), p(n);
        ctx.enqueue_copy(reinterpret_cast<half *>(e.data()), hout_e);
        ctx.enqueue_copy(reinterpret_cast<half *>(p.data()), hout_p);
        ctx.synchronize();
        return e == p;
    };
    for (auto [k, name, what] : {std::tuple{&select_chain, "select_chain", "f16 select chain (blend in ember)"},
                                 std::tuple{&arith_chain, "arith_chain", "f16 add/mul chain (no rule)"}}) {
        auto fn = ctx.compile_function(*k);
        all_same = measure(
                       what,
                       [&] { ctx.enqueue_function(fn, hin_d, hc_d, hout_e, n, steps, LaunchConfig{Dim(grid), Dim(block)}); },
                       twin(name), {&h_in, &h_c, &h_out, &nn, &ss}, same_halves) &&
                   all_same;
    }
    check(cu.cuModuleUnload(module), "cuModuleUnload");
    return all_same ? 0 : 1;
} catch (const ember::Error &e) {
    std::fprintf(stderr, "ptx_rules: %s\n", e.what());
    return 1;
}
