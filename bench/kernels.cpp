/// \file
/// How fast kernels written in ember run, next to the same algorithms in CUDA C++ compiled by
/// nvcc, and next to the libraries a CUDA programmer would call: CUB's reduction, cuBLAS's SGEMM
/// (FP32, no TF32) and cuBLAS's bf16 GEMM (cublasGemmEx, f32 sums). One process, one run, one
/// table: stream (copy, scale, add, triad in f32 and f64), reduction, transpose, a 5-point
/// stencil, softmax and layer norm over rows of 4096, SGEMM 4096^3, the bf16 tensor-core GEMM of
/// examples/gemm_bf16.h at 8192^3 and the wgmma + TMA GEMM of examples/gemm_wgmma.h (against
/// cuBLAS alone: they have no nvcc twin; the second with B n x k, as cuBLAS's "TN"), the fused
/// attention forward of examples/attention.h, causal and not, at (B=1, H=16, S=4096, D=128) in
/// bf16 (no peer here: its peer is PyTorch's scaled_dot_product_attention, measured by
/// bench/kernels_torch.py), and the compile time of each kernel that has a twin against NVRTC's
/// for its twin.
///
/// The twins are bench/kernels_twins.cu, carried as text and compiled here by the toolkit's nvcc
/// (nvcc in PATH, else /usr/local/cuda/bin; the library itself never uses it) into a shared
/// library with CUB, cuBLAS and NVRTC. Both sides get the same inputs; every output, ember's and
/// the peer's, is checked against a host reference before anything is timed, and a wrong result
/// ends the run with status 1: it is a failure, not a number. Times are medians over rounds of
/// back-to-back launches, measured with device events around each round on the stream each side
/// launches on.
/// The last column is ember's throughput over the peer's: 1.00 is parity, below is slower. The
/// attention rows print ember's side alone ("-" in the peer's columns and the ratio);
/// bench/kernels_torch.py --ember finds them by their labels and prints the ratio to torch's.
/// Timed on CUDA only; torch's side is bench/kernels_torch.py (scripts/bench-kernels.sh runs
/// both). Without a CUDA device and nvcc it checks ember's kernels alone at small sizes and times
/// nothing: the ctest bench.kernels-cpu runs it so on the CPU device, so that these kernels stay
/// right between GPU runs.
///
/// `--only SECTIONS` runs some sections alone, a comma-separated list of stream, reduce,
/// transpose (with the stencil), softmax (with layer norm), sgemm, gemm (bf16, mma.sync),
/// gemm_wgmma (bf16, wgmma + TMA: compute capability 9.0 and the CPU device) and attention;
/// the compile table then lists their kernels.
#include "ember/compiler/Compiler.h"
#include "ember/ember.h"

#include "../examples/attention.h"
#include "../examples/gemm_bf16.h"
#include "../examples/gemm_wgmma.h"
#include "../examples/sgemm.h"
#include "BenchSupport.h"

#include "kernels_twins.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace ember;
using ember::bench::find_nvcc;
using ember::bench::median;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kBlock = 256;
constexpr int64_t kRowLength = 4096; // softmax and layer norm rows: 256 threads x 16 values

// ---------------------------------------------------------------------------------------------
// The ember kernels.

/// STREAM's four kernels for T, W lanes per 16-byte access, one vector per thread.
template <class T, int W> struct Stream {
    static auto copy(const char *name) {
        return kernel(name, {"a", "c", "n"}, [](Ptr<const T> a, NoAlias<Ptr<T>> c, Int n) {
            Int i = global_idx.x * W;
            if_(i < n, [&] { c.store(i, a.template load<W>(i)); });
        });
    }
    static auto scale(const char *name) {
        return kernel(name, {"a", "c", "s", "n"},
                      [](Ptr<const T> a, NoAlias<Ptr<T>> c, Value<T> s, Int n) {
                          Int i = global_idx.x * W;
                          if_(i < n, [&] { c.store(i, a.template load<W>(i) * s); });
                      });
    }
    static auto add(const char *name) {
        return kernel(name, {"a", "b", "c", "n"},
                      [](Ptr<const T> a, Ptr<const T> b, NoAlias<Ptr<T>> c, Int n) {
                          Int i = global_idx.x * W;
                          if_(i < n,
                              [&] { c.store(i, a.template load<W>(i) + b.template load<W>(i)); });
                      });
    }
    static auto triad(const char *name) {
        return kernel(
            name, {"b", "c", "a", "s", "n"},
            [](Ptr<const T> b, Ptr<const T> c, NoAlias<Ptr<T>> a, Value<T> s, Int n) {
                Int i = global_idx.x * W;
                if_(i < n, [&] { a.store(i, b.template load<W>(i) + c.template load<W>(i) * s); });
            });
    }
};

const auto copy_f32 = Stream<float, 4>::copy("copy_f32");
const auto scale_f32 = Stream<float, 4>::scale("scale_f32");
const auto add_f32 = Stream<float, 4>::add("add_f32");
const auto triad_f32 = Stream<float, 4>::triad("triad_f32");
const auto copy_f64 = Stream<double, 2>::copy("copy_f64");
const auto scale_f64 = Stream<double, 2>::scale("scale_f64");
const auto add_f64 = Stream<double, 2>::add("add_f64");
const auto triad_f64 = Stream<double, 2>::triad("triad_f64");

/// Each block sums a grid-stride slice (4-lane loads), its warps with shuffles, then the warps'
/// sums; one launch of `blocks` blocks, then one of one block over their partial sums. `hint`
/// is the grid-stride loop's unroll hint (none in the twin's algorithm).
auto make_reduce(const char *name, UnrollHint hint) {
    return kernel(name, {"in", "partial", "n"},
                  [hint](Ptr<const float> in, NoAlias<Ptr<float>> partial, Int n) {
                      auto warp_sums = shared_array<float, kBlock / warp_size>();
                      Var<float> acc(0.0f);
                      for_(
                          global_idx.x * 4, n, grid_dim.x * block_dim.x * 4,
                          [&](Int i) {
                              auto v = in.load<4>(i);
                              acc += (v[0] + v[1]) + (v[2] + v[3]);
                          },
                          hint);
                      Float32 w = warp_sum(acc);
                      if_(lane_id() == 0, [&] { warp_sums[thread_idx.x / warp_size] = w; });
                      barrier();
                      if_(thread_idx.x < warp_size, [&] {
                          Var<float> x(0.0f);
                          if_(thread_idx.x < kBlock / warp_size,
                              [&] { x = warp_sums[thread_idx.x]; });
                          Float32 total = warp_sum(x);
                          if_(thread_idx.x == 0, [&] { partial[block_idx.x] = total; });
                      });
                  });
}
const auto reduce_partial = make_reduce("reduce_partial", UnrollHint{});
const auto reduce_unrolled = make_reduce("reduce_partial_unroll4", unroll(4));

/// 32 x 32 tiles through shared memory (a padded row against bank conflicts), 32 x 8 threads.
const auto transpose = kernel(
    "transpose", {"in", "out", "rows", "cols"},
    [](Ptr<const float> in, NoAlias<Ptr<float>> out, Int rows, Int cols) {
        auto tile = shared_array<float, 32 * 33>();
        Int x = block_idx.x * 32 + thread_idx.x, y0 = block_idx.y * 32 + thread_idx.y;
        for (int k = 0; k < 32; k += 8)
            tile[(thread_idx.y + k) * 33 + thread_idx.x] = in[(y0 + k) * cols + x];
        barrier();
        Int ox = block_idx.y * 32 + thread_idx.x, oy0 = block_idx.x * 32 + thread_idx.y;
        for (int k = 0; k < 32; k += 8)
            out[(oy0 + k) * rows + ox] = tile[thread_idx.x * 33 + thread_idx.y + k];
    });

const auto stencil5 = kernel(
    "stencil5", {"in", "out", "rows", "cols"},
    [](Ptr<const float> in, NoAlias<Ptr<float>> out, Int rows, Int cols) {
        Int x = global_idx.x, y = global_idx.y;
        if_(x > 0 && x < cols - 1 && y > 0 && y < rows - 1, [&] {
            Int i = y * cols + x;
            out[i] = 0.2f * ((((in[i] + in[i - 1]) + in[i + 1]) + in[i - cols]) + in[i + cols]);
        });
    });

/// The block's maximum or sum (256 threads), in every thread; `scratch` holds one value per warp.
Float32 block_max(const SharedPtr<float> &scratch, Float32 v) {
    Float32 w = warp_max(v);
    if_(lane_id() == 0, [&] { scratch[thread_idx.x / warp_size] = w; });
    barrier();
    Var<float> r(scratch[0]);
    for (int k = 1; k < kBlock / warp_size; ++k) r = max(r, scratch[k]);
    barrier();
    return Float32(r);
}
Float32 block_sum(const SharedPtr<float> &scratch, Float32 v) {
    Float32 w = warp_sum(v);
    if_(lane_id() == 0, [&] { scratch[thread_idx.x / warp_size] = w; });
    barrier();
    Var<float> r(scratch[0]);
    for (int k = 1; k < kBlock / warp_size; ++k) r += scratch[k];
    barrier();
    return Float32(r);
}

/// One row of 4096 per block of 256 threads, 16 values (four 4-lane vectors) per thread held in
/// registers: one read and one write of the row. `Fast` uses fast::exp instead of exp.
template <bool Fast> auto make_softmax(const char *name) {
    return kernel(name, {"in", "out"}, [](Ptr<const float> in, NoAlias<Ptr<float>> out) {
        auto scratch = shared_array<float, kBlock / warp_size>();
        Int row = block_idx.x * kRowLength;
        std::vector<SIMD<float, 4>> v;
        Var<float> m(-INFINITY);
        for (int k = 0; k < 4; ++k) {
            v.push_back(in.load<4>(row + (k * kBlock + thread_idx.x) * 4));
            m = max(m, max(max(v[k][0], v[k][1]), max(v[k][2], v[k][3])));
        }
        Float32 row_max = block_max(scratch, m);
        Var<float> s(0.0f);
        std::vector<SIMD<float, 4>> e;
        for (int k = 0; k < 4; ++k) {
            if constexpr (Fast)
                e.push_back(fast::exp(v[k] - row_max));
            else
                e.push_back(exp(v[k] - row_max));
            s += (e[k][0] + e[k][1]) + (e[k][2] + e[k][3]);
        }
        Float32 inv = 1.0f / block_sum(scratch, s);
        for (int k = 0; k < 4; ++k) out.store(row + (k * kBlock + thread_idx.x) * 4, e[k] * inv);
    });
}
const auto softmax = make_softmax<false>("softmax");
const auto softmax_fast = make_softmax<true>("softmax_fast_exp");

const auto layernorm = kernel(
    "layernorm", {"in", "gamma", "beta", "out"},
    [](Ptr<const float> in, Ptr<const float> gamma, Ptr<const float> beta,
       NoAlias<Ptr<float>> out) {
        auto scratch = shared_array<float, kBlock / warp_size>();
        Int row = block_idx.x * kRowLength;
        std::vector<SIMD<float, 4>> v;
        Var<float> s(0.0f), q(0.0f);
        for (int k = 0; k < 4; ++k) {
            v.push_back(in.load<4>(row + (k * kBlock + thread_idx.x) * 4));
            s += (v[k][0] + v[k][1]) + (v[k][2] + v[k][3]);
            q += (v[k][0] * v[k][0] + v[k][1] * v[k][1]) + (v[k][2] * v[k][2] + v[k][3] * v[k][3]);
        }
        Float32 mean = block_sum(scratch, s) * (1.0f / kRowLength);
        Float32 sq = block_sum(scratch, q);
        Float32 rstd = rsqrt(sq * (1.0f / kRowLength) - mean * mean + 1e-5f);
        for (int k = 0; k < 4; ++k) {
            Int c = (k * kBlock + thread_idx.x) * 4;
            out.store(row + c, (v[k] - mean) * rstd * gamma.load<4>(c) + beta.load<4>(c));
        }
    });

/// How the plain SGEMM multiplies and adds: fma() as written, or `acc + x * y` (two roundings
/// unless the kernel contracts).
enum class MulAdd { Fma, Plus };

/// C = A B for n x n row-major matrices, n a multiple of 128: a 128 x 128 tile of C per block of
/// 256 threads, 8 x 8 per thread; K in steps of 8 through shared memory, A's tile transposed.
/// Launched with 256 threads only, as its bounds say. The `Plus` forms measure the contraction
/// policy (docs/language.md, "Contraction").
template <MulAdd M> auto make_plain_sgemm(const char *name, FpContract contract) {
    return kernel(
        name, {"a", "b", "c", "n"},
        [](Ptr<const float> a, Ptr<const float> b, NoAlias<Ptr<float>> c, Int n) {
            auto as = shared_array<float, 8 * 128>();
            auto bs = shared_array<float, 8 * 128>();
            Int tid = thread_idx.x;
            Int tx = tid % 16, ty = tid / 16;
            Int row0 = block_idx.y * 128, col0 = block_idx.x * 128;
            Int ar = tid / 2, ak = (tid % 2) * 4, bk = tid / 32, bc = (tid % 32) * 4;
            std::deque<Var<float>> acc;
            for (int i = 0; i < 64; ++i) acc.emplace_back(0.0f);
            for_(0, n, 8, [&](Int k0) {
                auto va = a.load<4>((row0 + ar) * n + k0 + ak);
                for (int j = 0; j < 4; ++j) as[(ak + j) * 128 + ar] = va[j];
                bs.store(bk * 128 + bc, b.load<4>((k0 + bk) * n + col0 + bc));
                barrier();
                for (int kk = 0; kk < 8; ++kk) {
                    auto a0 = as.load<4>(kk * 128 + ty * 8), a1 = as.load<4>(kk * 128 + ty * 8 + 4);
                    auto b0 = bs.load<4>(kk * 128 + tx * 8), b1 = bs.load<4>(kk * 128 + tx * 8 + 4);
                    for (int i = 0; i < 8; ++i)
                        for (int j = 0; j < 8; ++j) {
                            Float32 ai = i < 4 ? a0[i] : a1[i - 4];
                            Float32 bj = j < 4 ? b0[j] : b1[j - 4];
                            if constexpr (M == MulAdd::Fma)
                                acc[i * 8 + j] = fma(ai, bj, acc[i * 8 + j]);
                            else
                                acc[i * 8 + j] = acc[i * 8 + j] + ai * bj;
                        }
                }
                barrier();
            });
            for (int i = 0; i < 8; ++i)
                for (int j = 0; j < 8; ++j)
                    c[(row0 + ty * 8 + i) * n + col0 + tx * 8 + j] = acc[i * 8 + j];
        },
        LaunchBounds{.max_threads = 256}, contract); // the twin's __launch_bounds__(256)
}
const auto sgemm = make_plain_sgemm<MulAdd::Fma>("sgemm", FpContract::Off);
const auto sgemm_plus = make_plain_sgemm<MulAdd::Plus>("sgemm_plus", FpContract::Off);
const auto sgemm_plus_fast = make_plain_sgemm<MulAdd::Plus>("sgemm_plus_fast", FpContract::Fast);

// The pipelined SGEMM of examples/sgemm.h: slices of 8 or 16, 2 to 4 stages through cp.async.
const auto sgemm_async_8_2 = sgemm_example::make_sgemm<8, 2>("sgemm_async_8_2");
const auto sgemm_async_8_3 = sgemm_example::make_sgemm<8, 3>("sgemm_async");
const auto sgemm_async_8_4 = sgemm_example::make_sgemm<8, 4>("sgemm_async_8_4");
const auto sgemm_async_16_2 = sgemm_example::make_sgemm<16, 2>("sgemm_async_16_2");
const auto sgemm_async_256 = sgemm_example::make_sgemm<8, 3, 256>(
    "sgemm_async_256"); // 256 x 128 tiles
// The warp-tiled SGEMM of examples/sgemm.h, the example's.
const auto sgemm_warptile = sgemm_example::make_sgemm_warptile("sgemm_warptile");

// The bf16 tensor-core GEMM of examples/gemm_bf16.h in the example's shape: 128 x 128 tiles,
// slices of 32 through 4 stages, blocks in groups of 8 rows, 2 blocks per multiprocessor. Its
// 74 KiB of dynamic shared memory (kGemmShared) need the opt-in when it is compiled.
constexpr int64_t kGemmStages = 4, kGemmSlice = 32, kGemmBN = 128;
const auto gemm_bf16 = gemm_bf16_example::make_gemm_bf16<kGemmStages, kGemmSlice, 8, kGemmBN, 2>(
    "gemm_bf16");
constexpr int64_t kGemmShared = gemm_bf16_example::shared_bytes(kGemmStages, kGemmSlice, kGemmBN);

// The wgmma + TMA GEMM of examples/gemm_wgmma.h in the example's shape: 128 x 256 tiles, 4
// stages of slices of 64, blocks in groups of 16 rows; 192 KiB and 64 bytes of dynamic shared
// memory. Then the same in clusters of 2 with B's slices multicast (the example runs both).
constexpr int64_t kWgmmaStages = 4, kWgmmaBN = 256;
const auto gemm_wgmma = gemm_wgmma_example::make_gemm_wgmma<kWgmmaStages, kWgmmaBN, 16>(
    "gemm_wgmma");
const auto gemm_wgmma_cluster =
    gemm_wgmma_example::make_gemm_wgmma<kWgmmaStages, kWgmmaBN, 16, false, 2>("gemm_wgmma_cluster");
constexpr int64_t kWgmmaShared = gemm_wgmma_example::shared_bytes(kWgmmaStages, kWgmmaBN);

// The fused attention forward of examples/attention.h (FlashAttention's algorithm on mma), bf16
// [heads][seq][128], causal and not. Its 85 KiB of dynamic shared memory need the opt-in too.
const auto attention = attention_example::make_attention<false>("attention");
const auto attention_causal = attention_example::make_attention<true>("attention_causal");

// ---------------------------------------------------------------------------------------------
// The peer: the twins' shared library.

struct Twins {
    void *lib = nullptr;
    template <class F> F get(const char *name) {
        void *p = dlsym(lib, name);
        if (!p) throw RuntimeError(std::string("kernels: the twins' library has no ") + name);
        return reinterpret_cast<F>(p);
    }
    /// The "// shared" section and the "// twin: NAME" section of the twins' text.
    static std::string source(const std::string &name) {
        const std::string text = kKernelsTwins;
        auto section = [&](const std::string &marker) {
            const size_t at = text.find("\n" + marker + "\n");
            if (at == std::string::npos)
                throw RuntimeError("kernels: no section '" + marker + "' in the twins");
            size_t end = at + 1;
            for (const char *next : {"\n// twin: ", "\n// shared\n", "\n// host\n"}) {
                const size_t n = text.find(next, at + 1);
                if (n != std::string::npos && (end == at + 1 || n < end)) end = n;
            }
            return text.substr(at + 1, end - at - 1);
        };
        return section("// shared") + "\n" + section("// twin: " + name);
    }
    /// source(name) with only the explicit instantiation that names `instance`
    /// ("stream_copy<float, float4>") of the section's `template __global__ ...;` statements: that
    /// kernel alone.
    static std::string source_of_one(const std::string &name, const std::string &instance) {
        std::string text = source(name), out;
        const std::string head = "template __global__ void ";
        size_t at = 0, found = 0;
        for (size_t next; (next = text.find(head, at)) != std::string::npos;) {
            const size_t end = text.find(';', next);
            if (end == std::string::npos) break;
            out += text.substr(at, next - at);
            const std::string statement = text.substr(next, end + 1 - next);
            if (statement.find(head + instance + "(") == 0) {
                out += statement;
                ++found;
            }
            at = end + 1;
        }
        if (found != 1)
            throw RuntimeError("kernels: no single instantiation " + instance + " in twin " + name);
        return out + text.substr(at);
    }
};

/// Compiles the twins with nvcc into a shared library and loads it.
Twins build_twins(const std::string &nvcc, const std::string &arch, const fs::path &dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "twins.cu") << kKernelsTwins;
    const fs::path so = dir / "twins.so";
    const std::string cmd = nvcc + " -O3 -std=c++17 -arch=" + arch +
                            " -shared -Xcompiler -fPIC -o " + so.string() + " " +
                            (dir / "twins.cu").string() + " -lcublas -lnvrtc 2>&1";
    const auto t0 = Clock::now();
    if (std::system(cmd.c_str()) != 0) throw RuntimeError("kernels: nvcc failed: " + cmd);
    std::printf("twins: %s (%.1f s)\n", cmd.c_str(),
                std::chrono::duration<double>(Clock::now() - t0).count());
    Twins t;
    t.lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!t.lib) throw RuntimeError(std::string("kernels: cannot load the twins: ") + dlerror());
    return t;
}

// ---------------------------------------------------------------------------------------------
// Measuring and reporting.

/// How one side measures a round: `begin` before its launches, `end_ms` after them returns the
/// milliseconds between the two on the device: events recorded on the stream the side launches
/// on, not a host clock around a synchronize, whose own latency is not the kernels' time.
struct EventClock {
    std::function<void()> begin;
    std::function<double()> end_ms;
};

/// Milliseconds per launch: the median over `rounds` of `reps` back-to-back launches between two
/// events, after one warm-up round.
double time_ms(const std::function<void()> &launch, const EventClock &clock, int reps,
               int rounds = 7) {
    std::vector<double> per;
    for (int r = 0; r <= rounds; ++r) {
        clock.begin();
        for (int k = 0; k < reps; ++k) launch();
        const double ms = clock.end_ms();
        if (r > 0) per.push_back(ms / reps);
    }
    return median(per);
}

bool all_ok = true;

/// Each kernel's report from its first compile in this process (a real compile: the cache is
/// fresh) and its IR, for the compile-time table.
struct FirstCompile {
    CompileReport report;
    const ir::Kernel *ir = nullptr;
};
std::map<std::string, FirstCompile> first_compiles;

template <class K>
auto compiled(DeviceContext &ctx, const K &k, const CompileFunctionOptions &options = {}) {
    auto f = ctx.compile_function(k, options);
    if (f.report().cache_level == "compiled")
        first_compiles.emplace(f.report().kernel, FirstCompile{f.report(), &k.ir()});
    return f;
}

/// Milliseconds of `ember::compile` (verify, lower, optimise, PTX), the median of 3, of a kernel
/// compiled once already in this process: the compiler as a program that compiles kernels runs it.
double median_compile_ms(const ir::Kernel &k, const TargetSpec &target) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
        const auto start = Clock::now();
        (void)ember::compile(k, target);
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    return median(t);
}

void fail(const std::string &what) {
    std::printf("WRONG: %s\n", what.c_str());
    all_ok = false;
}

/// Compares `got` with `want` element by element within `tol` relative (or absolute below 1).
template <class T>
bool close(const std::vector<T> &got, const std::vector<double> &want, double tol,
           const std::string &who) {
    for (size_t i = 0; i < want.size(); ++i) {
        const double g = double(got[i]), w = want[i];
        if (!(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)))) {
            fail(who + ": element " + std::to_string(i) + " is " + std::to_string(g) +
                 ", expected " + std::to_string(w));
            return false;
        }
    }
    return true;
}

/// One row of the table; `work` is the bytes (GB/s) or flops (TFLOP/s) of one launch.
void report(const std::string &kernel, const std::string &peer, const std::string &unit,
            double work, double ember_ms, double peer_ms) {
    const double scale = unit == "GB/s" ? 1e-9 : 1e-12;
    std::printf("%-26s %-22s %10.3f ms %10.3f ms %9.1f %9.1f %-7s %6.2f\n", kernel.c_str(),
                peer.c_str(), ember_ms, peer_ms, work / (ember_ms * 1e-3) * scale,
                work / (peer_ms * 1e-3) * scale, unit.c_str(), peer_ms / ember_ms);
    std::fflush(stdout);
}

/// A row whose peer this program does not run: ember's time and throughput alone, the peer's
/// columns and the ratio "-". `peer` says where the peer is measured (bench/kernels_torch.py
/// finds the row by its label and prints the ratio against its own time).
void report_alone(const std::string &kernel, const std::string &peer, const std::string &unit,
                  double work, double ember_ms) {
    const double scale = unit == "GB/s" ? 1e-9 : 1e-12;
    std::printf("%-26s %-22s %10.3f ms %13s %9.1f %9s %-7s %6s\n", kernel.c_str(), peer.c_str(),
                ember_ms, "-", work / (ember_ms * 1e-3) * scale, "-", unit.c_str(), "-");
    std::fflush(stdout);
}

std::vector<float> random_floats(size_t n, float lo, float hi, uint32_t seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto &x : v) x = d(g);
    return v;
}

template <class T> std::vector<T> download(DeviceContext &ctx, const DeviceBuffer<T> &b) {
    std::vector<T> v(b.size());
    ctx.enqueue_copy(v.data(), b);
    ctx.synchronize();
    return v;
}

/// A bf16 GEMM's C (m x n, in `c`) after `launch` (then `sync`), downloaded into `got` and checked
/// at the elements `at` against `want(i, j)` (a gemm_bf16_example::Expected or the like): false,
/// after fail(), at the first wrong one.
template <class Want>
bool check_bf16_gemm(DeviceContext &ctx, const DeviceBuffer<bfloat16> &c, int64_t n,
                     const std::vector<std::pair<int64_t, int64_t>> &at,
                     const std::function<void()> &launch, const std::function<void()> &sync,
                     const std::string &who, std::vector<bfloat16> &got, Want &&want) {
    ctx.enqueue_memset(c, bfloat16(0.0f));
    ctx.synchronize();
    launch();
    sync();
    got = download(ctx, c);
    for (auto [i, j] : at) {
        const auto w = want(i, j);
        const double g = double(float(got[i * n + j]));
        if (!w.admits(g)) {
            fail(who + ": C[" + std::to_string(i) + "][" + std::to_string(j) +
                 "] = " + std::to_string(g) + ", expected " + std::to_string(w.value));
            return false;
        }
    }
    return true;
}

/// Every element of ember's C against the peer's: both round f32 sums to bf16, so within a unit
/// in the last place of bf16 (2^-7 relative) of each other, plus 1e-2 for sums that cancel, whose
/// order differs between the two.
bool same_bf16_products(const std::vector<bfloat16> &ember_c, const std::vector<bfloat16> &peer_c,
                        int64_t n, const std::string &label) {
    for (size_t e = 0; e < ember_c.size(); ++e) {
        const double x = float(ember_c[e]), y = float(peer_c[e]);
        if (!(std::fabs(x - y) <= std::ldexp(std::max(std::fabs(x), std::fabs(y)), -7) + 1e-2)) {
            fail("ember " + label + ": C[" + std::to_string(int64_t(e) / n) + "][" +
                 std::to_string(int64_t(e) % n) + "] = " + std::to_string(x) + ", cuBLAS's " +
                 std::to_string(y));
            return false;
        }
    }
    return true;
}

const void *addr(const auto &buffer) { return reinterpret_cast<const void *>(buffer.address()); }
void *waddr(const auto &buffer) { return reinterpret_cast<void *>(buffer.address()); }

} // namespace

/// The sections `--only` names (all when it is absent).
struct Sections {
    static constexpr const char *all[] = {"stream", "reduce", "transpose",  "softmax",
                                          "sgemm",  "gemm",   "gemm_wgmma", "attention"};
    std::vector<std::string> chosen;
    bool operator()(const std::string &section) const {
        return chosen.empty() || std::find(chosen.begin(), chosen.end(), section) != chosen.end();
    }
    static std::string names() {
        std::string list;
        for (const char *a : all) list += (list.empty() ? "" : ", ") + std::string(a);
        return list;
    }
    static Sections parse(int argc, char **argv) {
        Sections s;
        for (int i = 1; i < argc; ++i) {
            const std::string arg = argv[i];
            if (arg != "--only" || i + 1 == argc)
                throw LogicError("unknown argument '" + arg +
                                 "'; usage: kernels [--only SECTION,...] with sections " + names());
            std::stringstream list(argv[++i]);
            for (std::string name; std::getline(list, name, ',');) {
                if (std::find(std::begin(all), std::end(all), name) == std::end(all))
                    throw LogicError("no section '" + name + "'; the sections are " + names());
                s.chosen.push_back(name);
            }
        }
        return s;
    }
};

int main(int argc, char **argv) try {
    const Sections run = Sections::parse(argc, argv);
    // A fresh compile cache, so that every kernel's compile time below is a real compile.
    const fs::path dir = fs::temp_directory_path() /
                         ("ember-bench-kernels-" + std::to_string(::getpid()));
    fs::create_directories(dir / "cache");
    ::setenv("EMBER_CACHE_DIR", (dir / "cache").c_str(), 1);
    DeviceContext ctx;
    std::printf("device: %s (%s, target %s)\n", ctx.name().c_str(), ctx.api().c_str(),
                ctx.target().c_str());
    // Without a CUDA device and nvcc there is no peer: ember's kernels are then only checked, at
    // small sizes (the ctest bench.kernels-cpu runs so on the CPU device), and nothing is timed.
    const bool cuda = ctx.api() == "cuda";
    const std::string nvcc = cuda ? find_nvcc() : "";
    const bool peers = !nvcc.empty();
    if (!peers)
        std::printf("kernels: %s: ember's kernels are checked at small sizes, nothing is timed\n",
                    cuda ? "no nvcc in PATH or /usr/local/cuda/bin, so no twin to measure against"
                         : "no CUDA device");
    auto size = [&](int64_t full, int64_t small) { return peers ? full : small; };
    int checked_only = 0;
    auto checked = [&](const std::string &what) {
        std::printf("checked: %s\n", what.c_str());
        ++checked_only;
    };
    int major = 0, minor = 0;
    std::optional<Twins> twins;
    int (*twin_sync)() = nullptr;
    const char *(*twin_error)() = nullptr;
    int (*twin_clock_begin)() = nullptr;
    float (*twin_clock_end_ms)() = nullptr;
    if (peers) {
        std::tie(major, minor) = ctx.compute_capability();
        twins = build_twins(nvcc, "sm_" + std::to_string(major * 10 + minor), dir);
        twin_sync = twins->get<int (*)()>("twin_sync");
        twin_error = twins->get<const char *(*)()>("twin_error");
        twin_clock_begin = twins->get<int (*)()>("twin_clock_begin");
        twin_clock_end_ms = twins->get<float (*)()>("twin_clock_end_ms");
    }
    auto peer_sync = [&] {
        if (twin_sync() != 0)
            throw RuntimeError(std::string("kernels: a twin failed: ") + twin_error());
    };
    auto ember_sync = [&] { ctx.synchronize(); };
    // Each side's clock: events on ember's stream; events on the legacy default stream, where
    // the twins, CUB and cuBLAS launch.
    const DeviceEvent ember_start = ctx.create_event(), ember_stop = ctx.create_event();
    const EventClock ember_clock{[&] { ember_start.record(); },
                                 [&] {
                                     ember_stop.record();
                                     ember_stop.synchronize();
                                     return double(ember_stop.time_since(ember_start));
                                 }};
    const EventClock peer_clock{
        [&] {
            if (twin_clock_begin() != 0)
                throw RuntimeError(std::string("kernels: an event failed: ") + twin_error());
        },
        [&] {
            const float ms = twin_clock_end_ms();
            if (ms < 0) throw RuntimeError(std::string("kernels: a twin failed: ") + twin_error());
            return double(ms);
        }};
    const int sms = peers ? int(ctx.get_attribute(DeviceAttribute::multiprocessor_count)) : 2;

    if (peers)
        std::printf("\n%-26s %-22s %13s %13s %9s %9s %-7s %6s\n", "kernel", "peer", "ember", "peer",
                    "ember", "peer", "unit", "ember/peer");

    // Stream: 2^26 elements a vector (256 MiB in f32, 512 MiB in f64).
    if (run("stream")) {
        const int64_t n = size(int64_t(1) << 26, int64_t(1) << 14);
        auto stream_rows = [&](auto type_tag, const char *suffix, auto &kc, auto &ks, auto &ka,
                               auto &kt, const char *twin_name) {
            using T = decltype(type_tag);
            constexpr int W = 16 / sizeof(T);
            std::vector<T> hx(n), hy(n);
            for (int64_t i = 0; i < n; ++i) {
                hx[i] = T(i % 1000) * T(0.5);
                hy[i] = T(i % 777) - T(100);
            }
            auto x = ctx.enqueue_create_buffer<T>(n), y = ctx.enqueue_create_buffer<T>(n),
                 z = ctx.enqueue_create_buffer<T>(n);
            ctx.enqueue_copy(x, hx.data());
            ctx.enqueue_copy(y, hy.data());
            const T s = T(3);
            const int64_t grid = n / W / kBlock;
            auto fc = compiled(ctx, kc);
            auto fs_ = compiled(ctx, ks);
            auto fa = compiled(ctx, ka);
            auto ft = compiled(ctx, kt);
            using TwinFn = void (*)(int, int, const void *, const void *, void *, T, long long);
            TwinFn twin = peers ? twins->get<TwinFn>(twin_name) : nullptr;
            const char *names[] = {"copy", "scale", "add", "triad"};
            const double bytes[] = {2.0 * n * sizeof(T), 2.0 * n * sizeof(T), 3.0 * n * sizeof(T),
                                    3.0 * n * sizeof(T)};
            for (int which = 0; which < 4; ++which) {
                auto launch_ember = [&] {
                    const LaunchConfig cfg{Dim(grid), Dim(kBlock)};
                    if (which == 0) ctx.enqueue_function(fc, x, z, n, cfg);
                    if (which == 1) ctx.enqueue_function(fs_, x, z, s, n, cfg);
                    if (which == 2) ctx.enqueue_function(fa, x, y, z, n, cfg);
                    if (which == 3) ctx.enqueue_function(ft, x, y, z, s, n, cfg);
                };
                auto launch_peer = [&] {
                    twin(which, int(grid), addr(x), addr(y), waddr(z), s, n / W);
                };
                std::vector<double> want(n);
                for (int64_t i = 0; i < n; ++i) {
                    const double a = double(hx[i]), b = double(hy[i]);
                    want[i] = which == 0   ? a
                              : which == 1 ? a * double(s)
                              : which == 2 ? a + b
                                           : a + b * double(s);
                }
                const std::string kname = std::string(names[which]) + " " + suffix;
                ctx.enqueue_memset(z, T(0));
                launch_ember();
                bool ok = close(download(ctx, z), want, 1e-6, "ember " + kname);
                if (!peers) {
                    if (ok) checked(kname);
                    continue;
                }
                ctx.enqueue_memset(z, T(0));
                ctx.synchronize();
                launch_peer();
                peer_sync();
                ok = close(download(ctx, z), want, 1e-6, "nvcc " + kname) && ok;
                if (!ok) continue;
                report(kname, "nvcc", "GB/s", bytes[which], time_ms(launch_ember, ember_clock, 20),
                       time_ms(launch_peer, peer_clock, 20));
            }
        };
        stream_rows(float{}, "f32", copy_f32, scale_f32, add_f32, triad_f32, "twin_stream_f32");
        stream_rows(double{}, "f64", copy_f64, scale_f64, add_f64, triad_f64, "twin_stream_f64");
    }

    // Reduction: the sum of 2^26 floats.
    if (run("reduce")) {
        const int64_t n = size(int64_t(1) << 26, int64_t(1) << 16);
        const int blocks = sms * 8;
        auto h = random_floats(n, 0.0f, 1.0f, 1);
        double want = 0;
        for (float v : h) want += v;
        auto in = ctx.enqueue_create_buffer<float>(n),
             partial = ctx.enqueue_create_buffer<float>(blocks),
             out = ctx.enqueue_create_buffer<float>(1);
        ctx.enqueue_copy(in, h.data());
        auto f = compiled(ctx, reduce_partial);
        auto fu = compiled(ctx, reduce_unrolled);
        auto launch_ember = [&] {
            ctx.enqueue_function(f, in, partial, n, grid_dim(blocks), block_dim(kBlock));
            ctx.enqueue_function(f, partial, out, int64_t(blocks), grid_dim(1), block_dim(kBlock));
        };
        auto launch_unrolled = [&] {
            ctx.enqueue_function(fu, in, partial, n, grid_dim(blocks), block_dim(kBlock));
            ctx.enqueue_function(fu, partial, out, int64_t(blocks), grid_dim(1), block_dim(kBlock));
        };
        using ReduceFn = void (*)(const float *, float *, float *, long long, int);
        using CubFn = int (*)(const float *, float *, long long);
        ReduceFn twin = peers ? twins->get<ReduceFn>("twin_reduce") : nullptr;
        CubFn cub = peers ? twins->get<CubFn>("twin_cub_sum") : nullptr;
        auto launch_twin = [&] {
            twin((const float *)addr(in), (float *)waddr(partial), (float *)waddr(out), n, blocks);
        };
        auto launch_cub = [&] {
            if (cub((const float *)addr(in), (float *)waddr(out), n) != 0)
                throw RuntimeError("kernels: CUB failed");
        };
        bool ok = true;
        using Side = std::tuple<const char *, std::function<void()>, std::function<void()>>;
        std::vector<Side> sides = {Side{"ember", launch_ember, ember_sync},
                                   Side{"ember (unroll(4))", launch_unrolled, ember_sync}};
        if (peers) {
            sides.push_back(Side{"nvcc", launch_twin, peer_sync});
            sides.push_back(Side{"CUB", launch_cub, peer_sync});
        }
        for (auto &[who, launch, sync] : sides) {
            ctx.enqueue_memset(out, 0.0f);
            ctx.synchronize();
            launch();
            sync();
            ok = close(download(ctx, out), {want}, 1e-5, std::string(who) + " reduction") && ok;
        }
        if (ok && !peers) checked("reduce sum f32 (and unroll(4))");
        if (ok && peers) {
            const double e = time_ms(launch_ember, ember_clock, 20);
            const double twin_ms = time_ms(launch_twin, peer_clock, 20);
            report("reduce sum f32", "nvcc", "GB/s", 4.0 * n, e, twin_ms);
            const double cub_ms = time_ms(launch_cub, peer_clock, 20);
            report("reduce sum f32", "CUB DeviceReduce::Sum", "GB/s", 4.0 * n, e, cub_ms);
            // The same with the grid-stride loop unrolled by 4, ember's groups of four loads with
            // one test (nvcc unrolls the twin's loop so by itself).
            const double eu = time_ms(launch_unrolled, ember_clock, 20);
            report("reduce sum f32, unroll(4)", "nvcc", "GB/s", 4.0 * n, eu, twin_ms);
            report("reduce sum f32, unroll(4)", "CUB DeviceReduce::Sum", "GB/s", 4.0 * n, eu,
                   cub_ms);
        }
    }

    // Transpose and stencil: 8192 x 8192 floats.
    if (run("transpose")) {
        const int64_t r = size(8192, 256), c = size(8192, 256);
        auto h = random_floats(r * c, -1.0f, 1.0f, 2);
        auto in = ctx.enqueue_create_buffer<float>(r * c),
             out = ctx.enqueue_create_buffer<float>(r * c);
        ctx.enqueue_copy(in, h.data());
        auto ft = compiled(ctx, transpose), fs5 = compiled(ctx, stencil5);
        using GridFn = void (*)(const float *, float *, long long, long long);
        GridFn twin_t = peers ? twins->get<GridFn>("twin_transpose") : nullptr;
        GridFn twin_s = peers ? twins->get<GridFn>("twin_stencil") : nullptr;
        auto et = [&] {
            ctx.enqueue_function(ft, in, out, r, c, grid_dim(c / 32, r / 32), block_dim(32, 8));
        };
        auto pt = [&] { twin_t((const float *)addr(in), (float *)waddr(out), r, c); };
        auto es = [&] {
            ctx.enqueue_function(fs5, in, out, r, c, grid_dim(c / 32, r / 8), block_dim(32, 8));
        };
        auto ps = [&] { twin_s((const float *)addr(in), (float *)waddr(out), r, c); };
        std::vector<double> want_t(r * c), want_s(r * c, 0.0);
        for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < c; ++j) want_t[j * r + i] = h[i * c + j];
        for (int64_t i = 1; i < r - 1; ++i)
            for (int64_t j = 1; j < c - 1; ++j) {
                const int64_t k = i * c + j;
                want_s[k] = 0.2 * (double(h[k]) + h[k - 1] + h[k + 1] + h[k - c] + h[k + c]);
            }
        bool ok_t = true, ok_s = true;
        for (int side = 0; side < (peers ? 2 : 1); ++side) {
            ctx.enqueue_memset(out, 0.0f);
            ctx.synchronize();
            side == 0 ? et() : (pt(), peer_sync());
            ok_t = close(download(ctx, out), want_t, 0,
                         side == 0 ? "ember transpose" : "nvcc transpose") &&
                   ok_t;
            ctx.enqueue_memset(out, 0.0f);
            ctx.synchronize();
            side == 0 ? es() : (ps(), peer_sync());
            ok_s = close(download(ctx, out), want_s, 1e-6,
                         side == 0 ? "ember stencil" : "nvcc stencil") &&
                   ok_s;
        }
        if (!peers) {
            if (ok_t) checked("transpose");
            if (ok_s) checked("stencil5");
        }
        if (ok_t && peers)
            report("transpose 8192^2 f32", "nvcc", "GB/s", 8.0 * r * c,
                   time_ms(et, ember_clock, 20), time_ms(pt, peer_clock, 20));
        if (ok_s && peers)
            report("stencil 5-point 8192^2", "nvcc", "GB/s", 8.0 * r * c,
                   time_ms(es, ember_clock, 20), time_ms(ps, peer_clock, 20));
    }

    // Softmax and layer norm: 4096 rows of 4096.
    if (run("softmax")) {
        const int64_t rows_n = size(4096, 32), n = rows_n * kRowLength;
        auto h = random_floats(n, -8.0f, 8.0f, 3);
        auto hg = random_floats(kRowLength, 0.5f, 1.5f, 4),
             hb = random_floats(kRowLength, -0.5f, 0.5f, 5);
        auto in = ctx.enqueue_create_buffer<float>(n), out = ctx.enqueue_create_buffer<float>(n);
        auto g = ctx.enqueue_create_buffer<float>(kRowLength),
             b = ctx.enqueue_create_buffer<float>(kRowLength);
        ctx.enqueue_copy(in, h.data());
        ctx.enqueue_copy(g, hg.data());
        ctx.enqueue_copy(b, hb.data());
        std::vector<double> want_sm(n), want_ln(n);
        for (int64_t r = 0; r < rows_n; ++r) {
            const float *x = &h[r * kRowLength];
            double m = *std::max_element(x, x + kRowLength), sum = 0, mean = 0, sq = 0;
            for (int64_t k = 0; k < kRowLength; ++k)
                sum += std::exp(double(x[k]) - m), mean += x[k];
            mean /= kRowLength;
            for (int64_t k = 0; k < kRowLength; ++k) sq += (x[k] - mean) * (x[k] - mean);
            const double rstd = 1.0 / std::sqrt(sq / kRowLength + 1e-5);
            for (int64_t k = 0; k < kRowLength; ++k) {
                want_sm[r * kRowLength + k] = std::exp(double(x[k]) - m) / sum;
                want_ln[r * kRowLength + k] = (x[k] - mean) * rstd * hg[k] + hb[k];
            }
        }
        auto fsm = compiled(ctx, softmax), fsf = compiled(ctx, softmax_fast);
        auto fln = compiled(ctx, layernorm);
        using RowsFn = void (*)(const float *, float *, int);
        using NormFn = void (*)(const float *, const float *, const float *, float *, int);
        RowsFn twin_sm = peers ? twins->get<RowsFn>("twin_softmax") : nullptr;
        NormFn twin_ln = peers ? twins->get<NormFn>("twin_layernorm") : nullptr;
        auto esm = [&] { ctx.enqueue_function(fsm, in, out, grid_dim(rows_n), block_dim(kBlock)); };
        auto esf = [&] { ctx.enqueue_function(fsf, in, out, grid_dim(rows_n), block_dim(kBlock)); };
        auto psm = [&] { twin_sm((const float *)addr(in), (float *)waddr(out), int(rows_n)); };
        auto eln = [&] {
            ctx.enqueue_function(fln, in, g, b, out, grid_dim(rows_n), block_dim(kBlock));
        };
        auto pln = [&] {
            twin_ln((const float *)addr(in), (const float *)addr(g), (const float *)addr(b),
                    (float *)waddr(out), int(rows_n));
        };
        // Softmax values are below 1: an absolute bound of 1e-6 is a relative one for the large
        // ones.
        auto check = [&](auto launch, bool peer, const std::vector<double> &want, double tol,
                         const std::string &who) {
            ctx.enqueue_memset(out, 0.0f);
            ctx.synchronize();
            launch();
            peer ? peer_sync() : ember_sync();
            return close(download(ctx, out), want, tol, who);
        };
        const bool ok_sm = check(esm, false, want_sm, 1e-6, "ember softmax") &
                           (!peers || check(psm, true, want_sm, 1e-6, "nvcc softmax"));
        const bool ok_sf = check(esf, false, want_sm, 1e-5, "ember softmax (fast::exp)");
        const bool ok_ln = check(eln, false, want_ln, 1e-4, "ember layernorm") &
                           (!peers || check(pln, true, want_ln, 1e-4, "nvcc layernorm"));
        const double bytes = 8.0 * n;
        if (!peers) {
            if (ok_sm) checked("softmax");
            if (ok_sf) checked("softmax (fast::exp)");
            if (ok_ln) checked("layernorm");
        }
        const double peer_sm = ok_sm && peers ? time_ms(psm, peer_clock, 20) : 0;
        if (ok_sm && peers)
            report("softmax 4096x4096 (exp)", "nvcc (expf)", "GB/s", bytes,
                   time_ms(esm, ember_clock, 20), peer_sm);
        if (ok_sm && ok_sf && peers)
            report("softmax (fast::exp)", "nvcc (expf)", "GB/s", bytes,
                   time_ms(esf, ember_clock, 20), peer_sm);
        if (ok_ln && peers)
            report("layernorm 4096x4096", "nvcc", "GB/s", bytes + 8.0 * kRowLength,
                   time_ms(eln, ember_clock, 20), time_ms(pln, peer_clock, 20));
    }

    // SGEMM 4096^3, FP32: the plain 128 x 128 x 8 kernel with fma, with a*b+c (contraction off
    // and fast), the pipelined kernel of examples/sgemm.h in five shapes and its warp-tiled
    // kernel, each against nvcc's build of the same algorithm where there is one, and against
    // cuBLAS.
    if (run("sgemm")) {
        const int64_t n = size(4096, 256);
        auto ha = random_floats(n * n, -1.0f, 1.0f, 6), hb = random_floats(n * n, -1.0f, 1.0f, 7);
        auto a = ctx.enqueue_create_buffer<float>(n * n),
             b = ctx.enqueue_create_buffer<float>(n * n),
             c = ctx.enqueue_create_buffer<float>(n * n);
        ctx.enqueue_copy(a, ha.data());
        ctx.enqueue_copy(b, hb.data());
        using GemmFn = void (*)(const float *, const float *, float *, long long);
        using AsyncFn = int (*)(const float *, const float *, float *, long long, int, int);
        using BlasFn = int (*)(const float *, const float *, float *, int);
        GemmFn twin = peers ? twins->get<GemmFn>("twin_sgemm") : nullptr;
        GemmFn twin_warptile = peers ? twins->get<GemmFn>("twin_sgemm_warptile") : nullptr;
        AsyncFn twin_async = peers ? twins->get<AsyncFn>("twin_sgemm_async") : nullptr;
        BlasFn cublas = peers ? twins->get<BlasFn>("twin_cublas_sgemm") : nullptr;
        auto pc = [&] {
            if (cublas((const float *)addr(a), (const float *)addr(b), (float *)waddr(c), int(n)) !=
                0)
                throw RuntimeError("kernels: cuBLAS failed");
        };
        // 512 sampled elements against double-precision dot products, within 1e-5 of sum |a b|.
        std::mt19937 gen(8);
        std::vector<std::pair<int64_t, int64_t>> at;
        for (int k = 0; k < 512; ++k) at.push_back({int64_t(gen() % n), int64_t(gen() % n)});
        auto check = [&](const std::function<void()> &launch, bool peer, const std::string &who) {
            ctx.enqueue_memset(c, 0.0f);
            ctx.synchronize();
            launch();
            peer ? peer_sync() : ember_sync();
            std::vector<float> got = download(ctx, c);
            for (auto [i, j] : at) {
                double want = 0, mag = 0;
                for (int64_t k = 0; k < n; ++k) {
                    want += double(ha[i * n + k]) * hb[k * n + j];
                    mag += std::fabs(double(ha[i * n + k]) * hb[k * n + j]);
                }
                if (!(std::fabs(got[i * n + j] - want) <= 1e-5 * mag)) {
                    fail(who + ": C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " +
                         std::to_string(got[i * n + j]) + ", expected " + std::to_string(want));
                    return false;
                }
            }
            return true;
        };
        const double flops = 2.0 * n * n * n;
        std::optional<double> cublas_ms;
        if (peers && check(pc, true, "cuBLAS sgemm")) cublas_ms = time_ms(pc, peer_clock, 5, 5);
        // One ember kernel: checked, then timed against its nvcc twin (when it has one) and
        // cuBLAS.
        auto gemm = [&](const std::string &label, auto &kernel_def, const std::string &twin_label,
                        const std::function<void()> &twin_launch, int64_t rows = 128) {
            auto f = compiled(ctx, kernel_def);
            auto es = [&] {
                ctx.enqueue_function(f, a, b, c, n, grid_dim(n / 128, n / rows), block_dim(kBlock));
            };
            const bool ok = check(es, false, "ember " + label) &
                            (!peers || !twin_launch ||
                             check(twin_launch, true, twin_label + " " + label));
            if (ok && !peers) checked(label);
            if (!ok || !peers) return;
            const double e = time_ms(es, ember_clock, 5, 5);
            if (twin_launch)
                report(label, twin_label, "TFLOP/s", flops, e,
                       time_ms(twin_launch, peer_clock, 5, 5));
            if (cublas_ms) report(label, "cuBLAS (no TF32)", "TFLOP/s", flops, e, *cublas_ms);
        };
        auto plain = [&] {
            twin((const float *)addr(a), (const float *)addr(b), (float *)waddr(c), n);
        };
        auto pipelined = [&](int bk, int stages) -> std::function<void()> {
            return [&, bk, stages] {
                if (twin_async((const float *)addr(a), (const float *)addr(b), (float *)waddr(c), n,
                               bk, stages) != 0)
                    throw RuntimeError("kernels: no such pipelined twin");
            };
        };
        std::function<void()> none;
        gemm("sgemm 4096^3, fma", sgemm, "nvcc (same tiling)", peers ? plain : none);
        gemm("sgemm a*b+c, contract off", sgemm_plus, "nvcc (same tiling, fmaf)",
             peers ? plain : none);
        gemm("sgemm a*b+c, contract fast", sgemm_plus_fast, "nvcc (same tiling, fmaf)",
             peers ? plain : none);
        gemm("sgemm async 8x2", sgemm_async_8_2, "nvcc (same pipeline)",
             peers ? pipelined(8, 2) : none);
        gemm("sgemm async 8x3", sgemm_async_8_3, "nvcc (same pipeline)",
             peers ? pipelined(8, 3) : none);
        gemm("sgemm async 8x4", sgemm_async_8_4, "nvcc (same pipeline)",
             peers ? pipelined(8, 4) : none);
        gemm("sgemm async 16x2", sgemm_async_16_2, "nvcc (same pipeline)",
             peers ? pipelined(16, 2) : none);
        gemm("sgemm async 256x128 8x3", sgemm_async_256, "", none, 256);
        auto warptiled = [&] {
            twin_warptile((const float *)addr(a), (const float *)addr(b), (float *)waddr(c), n);
        };
        gemm("sgemm warptile (example)", sgemm_warptile, "nvcc (same kernel)",
             peers ? warptiled : none, 256);
    }

    // GEMM 8192^3 in bf16 on the tensor cores (f32 sums, C rounded to bf16 once): the kernel of
    // examples/gemm_bf16.h against cuBLAS's cublasGemmEx. No nvcc twin: cuBLAS is the peer.
    if (run("gemm")) {
        const int64_t m = size(8192, 256), n = m, k = m;
        std::vector<bfloat16> ha(m * k), hb(k * n);
        {
            const auto fa = random_floats(m * k, -1.0f, 1.0f, 9),
                       fb = random_floats(k * n, -1.0f, 1.0f, 10);
            std::copy(fa.begin(), fa.end(), ha.begin());
            std::copy(fb.begin(), fb.end(), hb.begin());
        }
        auto a = ctx.enqueue_create_buffer<bfloat16>(m * k),
             b = ctx.enqueue_create_buffer<bfloat16>(k * n),
             c = ctx.enqueue_create_buffer<bfloat16>(m * n);
        ctx.enqueue_copy(a, ha.data());
        ctx.enqueue_copy(b, hb.data());
        using BlasFn = int (*)(const void *, const void *, void *, int, int, int);
        BlasFn cublas = peers ? twins->get<BlasFn>("twin_cublas_gemm_bf16") : nullptr;
        auto pc = [&] {
            if (cublas(addr(a), addr(b), waddr(c), int(m), int(n), int(k)) != 0)
                throw RuntimeError("kernels: cuBLAS failed");
        };
        CompileFunctionOptions opts;
        opts.func_attribute = {FuncAttribute::max_dynamic_shared_size_bytes(int(kGemmShared))};
        auto f = compiled(ctx, gemm_bf16, opts);
        auto es = [&] {
            ctx.enqueue_function(f, a, b, c, m, n, k, grid_dim(n / kGemmBN, m / 128),
                                 block_dim(gemm_bf16_example::threads(kGemmBN)),
                                 shared_mem_bytes(kGemmShared));
        };
        // 512 sampled elements against double-precision dot products of the bf16 inputs, within
        // bf16's rounding of the exact value (2^-8 relative) plus 1e-5 of sum |a b| for the f32
        // sums, as examples/gemm_bf16.cpp checks; then, with a peer, all of C against cuBLAS's.
        std::mt19937 gen(11);
        std::vector<std::pair<int64_t, int64_t>> at;
        for (int s = 0; s < 512; ++s) at.push_back({int64_t(gen() % m), int64_t(gen() % n)});
        auto want = [&](int64_t i, int64_t j) {
            return gemm_bf16_example::expected(ha, hb, n, k, i, j);
        };
        const std::string label = "gemm bf16 (example)";
        std::vector<bfloat16> ember_c, cublas_c;
        bool ok = check_bf16_gemm(ctx, c, n, at, es, ember_sync, "ember " + label, ember_c, want);
        if (ok && !peers) checked(label);
        if (peers)
            ok = check_bf16_gemm(ctx, c, n, at, pc, peer_sync, "cuBLAS bf16 gemm", cublas_c,
                                 want) &&
                 ok && same_bf16_products(ember_c, cublas_c, n, label);
        if (ok && peers)
            report(label, "cuBLAS (bf16)", "TFLOP/s", 2.0 * m * n * k,
                   time_ms(es, ember_clock, 5, 5), time_ms(pc, peer_clock, 5, 5));
    }

    // The same product with wgmma + TMA (examples/gemm_wgmma.h), B given n x k: against
    // cuBLAS's cublasGemmEx on the same layout ("TN" in cuBLAS's column-major terms). It needs
    // sm_90a: other GPUs skip the section.
    const bool hopper = ctx.api() == "cpu" || ctx.compute_capability() == std::pair<int, int>{9, 0};
    if (run("gemm_wgmma") && !hopper)
        std::printf("gemm_wgmma: skipped, it needs a compute capability 9.0 GPU\n");
    if (run("gemm_wgmma") && hopper) {
        const int64_t m = size(8192, 256), n = size(8192, 512), k = size(8192, 256);
        std::vector<bfloat16> ha(m * k), hb(n * k);
        {
            const auto fa = random_floats(m * k, -1.0f, 1.0f, 12),
                       fb = random_floats(n * k, -1.0f, 1.0f, 13);
            std::copy(fa.begin(), fa.end(), ha.begin());
            std::copy(fb.begin(), fb.end(), hb.begin());
        }
        auto a = ctx.enqueue_create_buffer<bfloat16>(m * k),
             b = ctx.enqueue_create_buffer<bfloat16>(n * k),
             c = ctx.enqueue_create_buffer<bfloat16>(m * n);
        ctx.enqueue_copy(a, ha.data());
        ctx.enqueue_copy(b, hb.data());
        auto ma = ctx.create_tensor_map(a, m, k, gemm_wgmma_example::kBM, gemm_wgmma_example::kBK,
                                        TensorMapSwizzle::b128);
        // B's boxes: a whole slice, or the half each block of a cluster of 2 copies.
        auto mb = ctx.create_tensor_map(b, n, k, kWgmmaBN, gemm_wgmma_example::kBK,
                                        TensorMapSwizzle::b128);
        auto mb_half = ctx.create_tensor_map(b, n, k, kWgmmaBN / 2, gemm_wgmma_example::kBK,
                                             TensorMapSwizzle::b128);
        using BlasFn = int (*)(const void *, const void *, void *, int, int, int);
        BlasFn cublas = peers ? twins->get<BlasFn>("twin_cublas_gemm_bf16_tn") : nullptr;
        auto pc = [&] {
            if (cublas(addr(a), addr(b), waddr(c), int(m), int(n), int(k)) != 0)
                throw RuntimeError("kernels: cuBLAS failed");
        };
        CompileFunctionOptions opts;
        opts.func_attribute = {FuncAttribute::max_dynamic_shared_size_bytes(int(kWgmmaShared))};
        auto f = compiled(ctx, gemm_wgmma, opts);
        auto f_cluster = compiled(ctx, gemm_wgmma_cluster, opts);
        std::mt19937 gen(14);
        std::vector<std::pair<int64_t, int64_t>> at;
        for (int s = 0; s < 512; ++s) at.push_back({int64_t(gen() % m), int64_t(gen() % n)});
        auto want = [&](int64_t i, int64_t j) {
            return gemm_wgmma_example::expected(ha, hb, k, i, j);
        };
        std::vector<bfloat16> cublas_c;
        bool peer_ok = true;
        if (peers)
            peer_ok = check_bf16_gemm(ctx, c, n, at, pc, peer_sync, "cuBLAS bf16 gemm (TN)",
                                      cublas_c, want);
        for (int clusters : {1, 2}) {
            auto es = [&] {
                if (clusters == 1)
                    ctx.enqueue_function(f, ma, mb, c, m, n, k, grid_dim(n / kWgmmaBN, m / 128),
                                         block_dim(gemm_wgmma_example::kThreads),
                                         shared_mem_bytes(kWgmmaShared));
                else
                    ctx.enqueue_function(f_cluster, ma, mb_half, c, m, n, k,
                                         grid_dim(n / kWgmmaBN * (m / 128)),
                                         block_dim(gemm_wgmma_example::kThreads), cluster_dim(2),
                                         shared_mem_bytes(kWgmmaShared));
            };
            const std::string label = clusters == 1 ? "gemm bf16 wgmma (example)"
                                                    : "gemm bf16 wgmma, clusters of 2 (example)";
            std::vector<bfloat16> ember_c;
            bool ok = check_bf16_gemm(ctx, c, n, at, es, ember_sync, "ember " + label, ember_c,
                                      want);
            if (ok && !peers) checked(label);
            if (peers) ok = peer_ok && ok && same_bf16_products(ember_c, cublas_c, n, label);
            if (ok && peers)
                report(label, "cuBLAS (bf16, TN)", "TFLOP/s", 2.0 * m * n * k,
                       time_ms(es, ember_clock, 5, 5), time_ms(pc, peer_clock, 5, 5));
        }
    }

    // Fused attention forward, (B=1, H=16, S=4096, D=128) in bf16, causal and not: the kernel of
    // examples/attention.h. Its peer is PyTorch's scaled_dot_product_attention (the flash
    // backend), which bench/kernels_torch.py measures: the rows here are ember's alone.
    if (run("attention")) {
        using attention_example::kBlockM;
        using attention_example::kHeadDim;
        const int64_t heads = size(16, 2), seq = size(4096, 128), n = heads * seq * kHeadDim;
        std::vector<bfloat16> hq(n), hk(n), hv(n);
        {
            std::mt19937 g(12);
            std::normal_distribution<float> d(0.0f, 1.0f);
            for (auto *x : {&hq, &hk, &hv})
                for (bfloat16 &e : *x) e = bfloat16(d(g));
        }
        auto q = ctx.enqueue_create_buffer<bfloat16>(n), k = ctx.enqueue_create_buffer<bfloat16>(n),
             v = ctx.enqueue_create_buffer<bfloat16>(n), o = ctx.enqueue_create_buffer<bfloat16>(n);
        ctx.enqueue_copy(q, hq.data());
        ctx.enqueue_copy(k, hk.data());
        ctx.enqueue_copy(v, hv.data());
        CompileFunctionOptions opts;
        opts.func_attribute = {
            FuncAttribute::max_dynamic_shared_size_bytes(int(attention_example::shared_bytes()))};
        std::mt19937 gen(13);
        for (bool causal : {false, true}) {
            const std::string label = causal ? "attention causal (example)" : "attention (example)";
            auto f = compiled(ctx, causal ? attention_causal : attention, opts);
            auto es = [&] {
                ctx.enqueue_function(f, q, k, v, o, seq, grid_dim(seq / kBlockM, heads),
                                     block_dim(attention_example::kThreads),
                                     shared_mem_bytes(attention_example::shared_bytes()));
            };
            ctx.enqueue_memset(o, bfloat16(0.0f));
            ctx.synchronize();
            es();
            const std::vector<bfloat16> got = download(ctx, o);
            // 16 sampled rows against a double-precision softmax(Q K^T / sqrt(d)) V of the bf16
            // inputs, as examples/attention.cpp checks: every element within bf16's rounding of
            // the exact value (2^-7 relative) plus 1e-2 of sum_j p_j |v_j| (the softmax runs in
            // f32 with an approximate exp2, P is rounded to bf16 for the second product).
            bool ok = true;
            for (int s = 0; ok && s < 16; ++s) {
                const int64_t h = int64_t(gen() % uint64_t(heads)),
                              i = int64_t(gen() % uint64_t(seq));
                const std::vector<attention_example::Expected> want =
                    attention_example::expected_row(hq, hk, hv, seq, h, i, causal);
                for (int64_t d = 0; ok && d < kHeadDim; ++d) {
                    const double g = double(float(got[(h * seq + i) * kHeadDim + d]));
                    if (!want[d].admits(g)) {
                        fail("ember " + label + ": O[" + std::to_string(h) + "][" +
                             std::to_string(i) + "][" + std::to_string(d) + "] = " +
                             std::to_string(g) + ", expected " + std::to_string(want[d].value));
                        ok = false;
                    }
                }
            }
            if (ok && !peers) checked(label + ", 16 sampled rows");
            if (ok && peers)
                report_alone(label, "SDPA: kernels_torch.py", "TFLOP/s",
                             4.0 * double(heads) * double(seq) * double(seq) * kHeadDim /
                                 (causal ? 2 : 1),
                             time_ms(es, ember_clock, 20));
        }
    }

    // Registers, and compile time: ember's trace of the C++ lambda plus the median of 3 compiles
    // of its IR to PTX (verify, lower, optimise, codegen), against the median of 3 of NVRTC's
    // CUDA C++ to PTX of the twin's section; ember's first compile in the process is shown too.
    if (peers) {
        auto regs = twins->get<int (*)(const char *)>("twin_registers");
        auto nvrtc = twins->get<double (*)(const char *, const char *, char *, int)>(
            "twin_nvrtc_ms");
        const std::string virt = "compute_" + std::to_string(major * 10 + minor);
        const TargetSpec target = TargetSpec::parse(ctx.target());
        std::printf("\n%-26s %10s %10s %10s %8s %12s %12s\n", "compile (a fresh cache)",
                    "ember 1st", "ember ms", "NVRTC ms", "ratio", "ember regs", "nvcc regs");
        auto row = [&](const char *section, const char *what, const char *twin,
                       const std::vector<const char *> &kernels, const char *reg_name,
                       const char *instance = nullptr) {
            if (!run(section)) return;
            double ember_first_ms = 0, ember_ms = 0;
            int ember_regs = -1;
            for (const char *k : kernels) {
                auto it = first_compiles.find(k);
                if (it == first_compiles.end()) {
                    fail(std::string("no first compile of ") + k + " was recorded");
                    return;
                }
                const CompileReport &r = it->second.report;
                ember_first_ms += 1e3 * (r.trace_seconds + r.lower_seconds + r.optimize_seconds +
                                         r.codegen_seconds);
                ember_ms += 1e3 * r.trace_seconds + median_compile_ms(*it->second.ir, target);
                ember_regs = std::max(ember_regs, r.registers);
            }
            char log[4096] = "";
            const std::string src = instance ? Twins::source_of_one(twin, instance)
                                             : Twins::source(twin);
            std::vector<double> t;
            for (int k = 0; k < 3; ++k)
                t.push_back(nvrtc(src.c_str(), virt.c_str(), log, sizeof log));
            const double nv = median(t);
            if (nv < 0) {
                fail(std::string("NVRTC could not compile the twin ") + twin + ": " + log);
                return;
            }
            std::printf("%-26s %10.2f %10.2f %10.2f %7.2fx %12d %12d\n", what, ember_first_ms,
                        ember_ms, nv, ember_ms / nv, ember_regs, regs(reg_name));
        };
        // The stream kernels together, then each alone against NVRTC's compile of the twin with
        // that kernel's instantiation alone.
        const std::pair<const char *, const char *> stream_kernels[] = {
            {"copy_f32", "stream_copy<float, float4>"},
            {"scale_f32", "stream_scale<float, float4>"},
            {"add_f32", "stream_add<float, float4>"},
            {"triad_f32", "stream_triad<float, float4>"},
            {"copy_f64", "stream_copy<double, double2>"},
            {"scale_f64", "stream_scale<double, double2>"},
            {"add_f64", "stream_add<double, double2>"},
            {"triad_f64", "stream_triad<double, double2>"}};
        std::vector<const char *> all_stream;
        for (const auto &kernel : stream_kernels) all_stream.push_back(kernel.first);
        row("stream", "stream (8 kernels)", "stream", all_stream, "stream_triad_f32");
        for (const auto &[k, instance] : stream_kernels)
            row("stream", (std::string("  ") + k).c_str(), "stream", {k},
                (std::string("stream_") + k).c_str(), instance);
        const std::pair<const char *, const char *> kernels[] = {
            {"reduce", "reduce_partial"}, {"transpose", "transpose"}, {"transpose", "stencil5"},
            {"softmax", "softmax"},       {"softmax", "layernorm"},   {"sgemm", "sgemm"},
            {"sgemm", "sgemm_async"},     {"sgemm", "sgemm_warptile"}};
        for (const auto &[section, k] : kernels) row(section, k, k, {k}, k);
        // No row for gemm_bf16 or attention: a row compares ember's compile with NVRTC's of the
        // kernel's twin, and they have none (their peers are cuBLAS and PyTorch), so there is
        // nothing to compare against.
        std::printf(
            "(ember 1st: each kernel's first compile in this process, from the lambda to PTX;\n"
            " ember ms: its trace plus the median of 3 more compiles of its IR to PTX, the "
            "ratio's;\n"
            " NVRTC: the median of 3 compiles of the twin's source to PTX; stream: the sums over\n"
            " ember's eight kernels against one source with all eight, then each kernel alone\n"
            " against the source with only its instantiation. Registers: ember's from its PTX's\n"
            " JIT, nvcc's from cudaFuncGetAttributes; the eight stream kernels together: the\n"
            " largest of ember's, the f32 triad's for nvcc)\n");
    }

    fs::remove_all(dir);
    if (!peers && all_ok)
        std::printf("kernels: %d kernels checked on %s\n", checked_only, ctx.name().c_str());
    if (!all_ok) {
        std::printf("\nkernels: a result was wrong (see WRONG above)\n");
        return 1;
    }
    return 0;
} catch (const ember::Error &e) {
    std::fprintf(stderr, "kernels: %s\n", e.what());
    return 1;
}
