/// \file
/// Compile reports ([Note] Compile reports): resources and stage times of a compiled kernel on
/// every api, EMBER_LOG=compile, and the parser of ptxas's info log. CUDA cases skip with a
/// message where there is no GPU.
#include "ember/ember.h"

#include "CompileCache.h"
#include "DeviceTest.h"

#include "ember/compiler/Log.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace ember;

namespace {

constexpr int64_t kBlock = 128;

// 1000 floats of static shared memory (4000 bytes), 64 floats of local memory per thread (256
// bytes) and a constant array of 4 int32 (16 bytes), all indexed by run-time values so that
// none can be optimised away.
// Named for this process, as spiller below: the CUDA driver's JIT cache must not know its PTX.
const std::string sized_name = "report_sized_" + std::to_string(::getpid());
const auto sized = kernel(sized_name, {"in", "out", "n"}, [](Ptr<float> in, Ptr<float> out, Int n) {
    auto tile = shared_array<float, 1000>();
    auto scratch = local_array<float, 64>();
    auto table = constant_array<int32_t, 4>("report_table", {1, 2, 3, 4});
    auto t = thread_idx.x;
    auto i = global_idx.x;
    for_(t, int64_t{1000}, block_dim.x, [&](Int j) { tile[j] = in[j % n]; });
    barrier();
    for_(int64_t{0}, int64_t{64}, [&](Int j) { scratch[j] = tile[(t * 7 + j) % 1000]; });
    if_(i < n, [&] {
        out[i] = scratch[(i * 13) % 64] + scratch[t % 64] + cast<float>(table[i % 4]);
    });
});

// Loads kLive values per thread before a barrier and multiplies each by a weight loaded after it:
// more live 32-bit values than the 255 registers a thread can have, so ptxas must spill (no load
// can move across the barrier, and the products need the loads of both sides).
constexpr int kLive = 600;
// The name is this process's own: ptxas must really run for the spills to be reported, and the
// CUDA driver's own JIT cache (~/.nv/ComputeCache) would answer a PTX it has seen in an earlier run
// with a cubin and no ptxas log.
const auto spiller = kernel("report_spiller_" + std::to_string(::getpid()), {"in", "w", "out"},
                            [](Ptr<float> in, Ptr<float> w, Ptr<float> out) {
    auto i = global_idx.x;
    std::vector<std::unique_ptr<Var<float>>> v;
    for (int k = 0; k < kLive; ++k) v.push_back(std::make_unique<Var<float>>(in[i * kLive + k]));
    barrier();
    Var<float> acc(0.0f);
    for (int k = 0; k < kLive; ++k) acc += *v[k] * w[int64_t{k}];
    out[i] = acc;
});

class CompileReportTest : public ember::testing::DeviceTest {
protected:
    // Every compile in these tests really runs LLVM: no memory or disk cache level answers
    // (CompileCacheTest covers the reports' cache levels).
    void SetUp() override {
        detail::CompileCache::instance().clear_memory();
        detail::CompileCache::instance().set_disk_for_testing(nullptr);
        DeviceTest::SetUp();
    }
    void TearDown() override { detail::CompileCache::instance().reset_disk_to_default(); }
    bool cuda() const { return GetParam() == "cuda"; }
    void run_sized(const DeviceFunction<Ptr<float>, Ptr<float>, Int> &f) {
        constexpr int64_t n = 256;
        auto in = ctx().enqueue_create_buffer<float>(n);
        auto out = ctx().enqueue_create_buffer<float>(n);
        std::vector<float> host(n, 1.0f);
        ctx().enqueue_copy(in, host.data());
        ctx().enqueue_function(f, in, out, n, grid_dim(n / kBlock), block_dim(kBlock));
        ctx().enqueue_copy(host.data(), out);
        ctx().synchronize();
        for (int64_t i = 0; i < n; ++i)
            if (host[i] != 2.0f + float(i % 4 + 1)) {
                ADD_FAILURE() << "element " << i << " is " << host[i];
                return;
            }
    }
};

TEST_P(CompileReportTest, ReportsTheKernelsSharedLocalAndConstantBytes) {
    auto f = ctx().compile_function(sized);
    CompileReport r = f.report();
    EXPECT_EQ(r.kernel, sized_name);
    EXPECT_EQ(r.target, ctx().target());
    EXPECT_EQ(r.cache_level, "compiled");
    EXPECT_GT(r.max_threads_per_block, 0);
    EXPECT_LE(r.max_threads_per_block, 1024);
    EXPECT_EQ(r.max_threads_per_block, f.max_threads_per_block());
    if (cuda()) {
        EXPECT_GE(r.shared_bytes, 4000u);
        EXPECT_GE(r.local_bytes, 256u);
        // The driver's CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES (whether it counts module-scope .const
        // arrays is the driver's call: ptxas -v lists none for them).
        EXPECT_EQ(r.const_bytes, uint64_t(f.const_size_bytes()));
        EXPECT_GT(r.registers, 0);
        EXPECT_LE(r.registers, 255);
        EXPECT_EQ(r.registers, f.num_regs());
        // The JIT's verbose log was read: the spill figures are known.
        EXPECT_GE(r.spill_store_bytes, 0);
        EXPECT_GE(r.spill_load_bytes, 0);
        EXPECT_GE(r.stack_frame_bytes, 0);
    } else {
        // The CPU device: exactly what the IR declares; no registers or spills to speak of.
        EXPECT_EQ(r.shared_bytes, 4000u);
        EXPECT_EQ(r.local_bytes, 256u);
        EXPECT_EQ(r.const_bytes, 16u);
        EXPECT_EQ(r.registers, -1);
        EXPECT_EQ(r.spill_store_bytes, -1);
        EXPECT_EQ(r.spill_load_bytes, -1);
        EXPECT_EQ(r.stack_frame_bytes, -1);
    }
    EXPECT_EQ(r.shared_bytes, uint64_t(f.shared_size_bytes()));
    EXPECT_EQ(r.local_bytes, uint64_t(f.local_size_bytes()));
    run_sized(f);
}

TEST_P(CompileReportTest, StageTimesArePositiveAndAddUp) {
    auto f = ctx().compile_function(sized);
    CompileReport r = f.report();
    EXPECT_GT(r.trace_seconds, 0);
    EXPECT_GT(r.lower_seconds, 0);
    EXPECT_GT(r.optimize_seconds, 0);
    EXPECT_GT(r.codegen_seconds, 0);
    EXPECT_GT(r.load_seconds, 0);
    // The compile stages are what compile_seconds counts, the load what load_seconds counts.
    double compile = r.lower_seconds + r.optimize_seconds + r.codegen_seconds;
    EXPECT_NEAR(compile, f.compile_seconds(), 1e-9 + 1e-6 * f.compile_seconds());
    EXPECT_DOUBLE_EQ(r.load_seconds, f.load_seconds());
    EXPECT_NEAR(r.total_seconds(), r.trace_seconds + f.compile_seconds() + f.load_seconds(),
                1e-9 + 1e-6 * r.total_seconds());
    // Each stage is a part of the whole, and tracing a small kernel is not most of it.
    EXPECT_LT(r.trace_seconds, r.total_seconds());
}

TEST_P(CompileReportTest, LogCompilePrintsTheReport) {
    // A kernel traced here with a value of this run baked in, so that no compile cache can hold it.
    const int64_t salt = std::chrono::steady_clock::now().time_since_epoch().count() % 1000003;
    auto fresh = kernel("report_logged", {"out"}, [&](Ptr<int64_t> out) {
        auto scratch = local_array<int64_t, 8>();
        auto t = thread_idx.x;
        scratch[t % 8] = t + salt;
        out[t] = scratch[(t * 3) % 8];
    });
    set_log_topics("compile");
    ::testing::internal::CaptureStderr();
    std::string err;
    try {
        auto f = ctx().compile_function(fresh);
        err = ::testing::internal::GetCapturedStderr();
    } catch (...) {
        err = ::testing::internal::GetCapturedStderr();
        set_log_topics("");
        throw;
    }
    set_log_topics("");
    auto line_start = err.find("ember[compile]: kernel 'report_logged'");
    ASSERT_NE(line_start, std::string::npos) << err;
    std::string line = err.substr(line_start, err.find('\n', line_start) - line_start);
    EXPECT_NE(line.find(ctx().target()), std::string::npos) << line;
    // The CPU device reports the IR's local array exactly; ptxas may round the frame up.
    EXPECT_NE(line.find(cuda() ? "local " : "local 64 B"), std::string::npos) << line;
    EXPECT_NE(line.find("lower "), std::string::npos) << line;
    EXPECT_NE(line.find("load "), std::string::npos) << line;
    EXPECT_NE(line.find(" ms"), std::string::npos) << line;
    if (cuda())
        EXPECT_NE(line.find(" registers,"), std::string::npos) << line;
    else
        EXPECT_NE(line.find("registers n/a"), std::string::npos) << line;

    // Off again: compiling prints nothing.
    ::testing::internal::CaptureStderr();
    auto again = ctx().compile_function(fresh);
    std::string quiet = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(quiet.find("ember[compile]"), std::string::npos) << quiet;
}

TEST_P(CompileReportTest, ToStringNamesEveryFigure) {
    auto f = ctx().compile_function(sized);
    std::string s = to_string(f.report());
    for (const std::string &part : {"kernel '" + sized_name + "'", std::string("(compiled)"), std::string("shared "),
                                   std::string("local "), std::string("const "), std::string("threads/block"),
                                   std::string("trace "), std::string("optimise "), std::string("codegen "),
                                   std::string("total ")})
        EXPECT_NE(s.find(part), std::string::npos) << part << " in: " << s;
    EXPECT_EQ(s.find('\n'), std::string::npos) << s;
}

TEST_P(CompileReportTest, AKernelWithTooManyLiveValuesReportsSpills) {
    auto f = ctx().compile_function(spiller);
    CompileReport r = f.report();
    if (cuda()) {
        EXPECT_EQ(r.registers, f.num_regs());
        EXPECT_GT(r.spill_store_bytes, 0) << to_string(r);
        EXPECT_GT(r.spill_load_bytes, 0) << to_string(r);
        EXPECT_GT(r.stack_frame_bytes, 0) << to_string(r);
        // Spill slots live in local memory.
        EXPECT_GT(r.local_bytes, 0u) << to_string(r);
    } else {
        // Spills are ptxas's: the CPU device reports none (n/a).
        EXPECT_EQ(r.spill_store_bytes, -1);
        EXPECT_EQ(r.spill_load_bytes, -1);
    }
    // And the kernel computes what it should.
    constexpr int64_t threads = 64;
    std::vector<float> host(threads * kLive);
    for (size_t j = 0; j < host.size(); ++j) host[j] = float(j % 5);
    std::vector<float> weights(kLive);
    for (int k = 0; k < kLive; ++k) weights[k] = float(k + 1);
    auto in = ctx().enqueue_create_buffer<float>(host.size());
    auto w = ctx().enqueue_create_buffer<float>(kLive);
    auto out = ctx().enqueue_create_buffer<float>(threads);
    ctx().enqueue_copy(in, host.data());
    ctx().enqueue_copy(w, weights.data());
    ctx().enqueue_function(f, in, w, out, grid_dim(1), block_dim(threads));
    std::vector<float> got(threads);
    ctx().enqueue_copy(got.data(), out);
    ctx().synchronize();
    for (int64_t i = 0; i < threads; ++i) {
        double want = 0;
        for (int k = 0; k < kLive; ++k) want += double((i * kLive + k) % 5) * (k + 1);
        EXPECT_NEAR(got[i], want, 1e-4 * want) << "thread " << i;
    }
}

TEST_P(CompileReportTest, KernelsOfModulesHaveReportsToo) {
    // ember IR compiled here: compile stages but no tracing.
    const char *ir = "kernel @report_module_ir(%out: ptr<global i64>) {\n"
                     "  shared %s: i64[16]\n"
                     "  %s[thread_idx.x] = 5:i64\n"
                     "  barrier\n"
                     "  %out[thread_idx.x] = %s[(15:i64 - thread_idx.x)]\n"
                     "}\n";
    DeviceModule m = ctx().load_module(ModuleImage::ember_ir(ir, "report.ir"));
    auto f = m.get_function<Ptr<int64_t>>("report_module_ir");
    CompileReport r = f.report();
    EXPECT_EQ(r.kernel, "report_module_ir");
    EXPECT_EQ(r.cache_level, "compiled");
    EXPECT_EQ(r.trace_seconds, 0);
    EXPECT_GT(r.lower_seconds, 0);
    EXPECT_GT(r.codegen_seconds, 0);
    EXPECT_GT(r.load_seconds, 0);
    EXPECT_GE(r.shared_bytes, 128u);
    if (!cuda()) return;
    // Hand-written PTX: nothing compiled by ember, the driver's figures only.
    const char *ptx = ".version 7.0\n.target sm_70\n.address_size 64\n"
                      ".visible .entry report_ptx(.param .u64 out)\n{\n"
                      "  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
                      "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd1, %rd1;\n"
                      "  mov.u32 %r1, 7;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";
    DeviceModule pm = ctx().load_module(ModuleImage::ptx(ptx, "report.ptx"));
    auto pf = pm.get_function<Ptr<int32_t>>("report_ptx");
    CompileReport pr = pf.report();
    EXPECT_EQ(pr.kernel, "report_ptx");
    EXPECT_EQ(pr.cache_level, "external module");
    EXPECT_GT(pr.registers, 0);
    EXPECT_EQ(pr.registers, pf.num_regs());
    EXPECT_EQ(pr.lower_seconds + pr.optimize_seconds + pr.codegen_seconds, 0);
}

INSTANTIATE_TEST_SUITE_P(AllApis, CompileReportTest, ember::testing::all_apis(), ember::testing::api_name);

// The info log of the driver's PTX JIT (CU_JIT_LOG_VERBOSE) for a module of two kernels, as
// the driver writes it (the ptxas lines of `ptxas -v`, continuation lines prefixed).
constexpr const char *kJitLog = "ptxas info    : 0 bytes gmem\n"
                                "ptxas info    : Compiling entry function 'small' for 'sm_90'\n"
                                "ptxas info    : Function properties for small\n"
                                "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                                "ptxas info    : Used 10 registers, 368 bytes cmem[0]\n"
                                "ptxas info    : Compiling entry function 'spill' for 'sm_90'\n"
                                "ptxas info    : Function properties for spill\n"
                                "ptxas         .     1032 bytes stack frame, 1164 bytes spill stores, 1160 bytes "
                                "spill loads\n"
                                "ptxas info    : Used 255 registers, used 1 barriers, 368 bytes cmem[0]\n";

TEST(CompileReportParser, ReadsTheFiguresOfTheNamedKernel) {
    PtxasInfo spill = parse_ptxas_info(kJitLog, "spill");
    EXPECT_EQ(spill.registers, 255);
    EXPECT_EQ(spill.stack_frame_bytes, 1032);
    EXPECT_EQ(spill.spill_store_bytes, 1164);
    EXPECT_EQ(spill.spill_load_bytes, 1160);
    PtxasInfo small = parse_ptxas_info(kJitLog, "small");
    EXPECT_EQ(small.registers, 10);
    EXPECT_EQ(small.stack_frame_bytes, 0);
    EXPECT_EQ(small.spill_store_bytes, 0);
    EXPECT_EQ(small.spill_load_bytes, 0);
}

TEST(CompileReportParser, KeepsTheJitsPerformanceWarningsOfTheNamedKernel) {
    // As the CUDA 13 driver's JIT writes it for a kernel with a wgmma and a call.
    const char *log =
        "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are "
        "serialized due to the presence of Extern calls in the function 'gemm'\n"
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
        "ptxas info    : Function properties for gemm\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 1 barriers\n";
    PtxasInfo p = parse_ptxas_info(log, "gemm");
    ASSERT_EQ(p.performance_warnings.size(), 1u);
    EXPECT_EQ(p.performance_warnings[0],
              "Potential Performance Loss: wgmma.mma_async instructions are "
              "serialized due to the presence of Extern calls in the function 'gemm'");
    EXPECT_EQ(p.registers, 168);
    EXPECT_TRUE(parse_ptxas_info(log, "other").performance_warnings.empty());
    EXPECT_TRUE(parse_ptxas_info(kJitLog, "spill").performance_warnings.empty());
    CompileReport r;
    r.ptxas_warnings = p.performance_warnings;
    EXPECT_NE(to_string(r).find("; ptxas: Potential Performance Loss: wgmma.mma_async"),
              std::string::npos);
}

TEST(CompileReportParser, WithoutANameTakesTheFirstFigures) {
    PtxasInfo first = parse_ptxas_info(kJitLog);
    EXPECT_EQ(first.registers, 10);
    EXPECT_EQ(first.spill_store_bytes, 0);
}

TEST(CompileReportParser, ReadsPtxasDashVOutput) {
    // `ptxas -v` of nvcc, continuation line indented with spaces.
    const char *log = "ptxas info    : 0 bytes gmem\n"
                      "ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_80'\n"
                      "ptxas info    : Function properties for _Z6kernelPfi\n"
                      "    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                      "ptxas info    : Used 32 registers, 364 bytes cmem[0]\n";
    PtxasInfo p = parse_ptxas_info(log, "_Z6kernelPfi");
    EXPECT_EQ(p.registers, 32);
    EXPECT_EQ(p.stack_frame_bytes, 24);
    EXPECT_EQ(p.spill_store_bytes, 8);
    EXPECT_EQ(p.spill_load_bytes, 12);
}

TEST(CompileReportParser, ReadsARealPtxasLogOfTheSpillingKernel) {
    // `ptxas -v -arch=sm_90` (CUDA 13.0) on ember's PTX of report_spiller above, verbatim.
    const char *log = "ptxas info    : 0 bytes gmem\n"
                      "ptxas info    : Compiling entry function 'report_spiller' for 'sm_90'\n"
                      "ptxas info    : Function properties for report_spiller\n"
                      "    1456 bytes stack frame, 1432 bytes spill stores, 1432 bytes spill loads\n"
                      "ptxas info    : Used 255 registers, used 1 barriers, 1456 bytes cumulative stack size\n"
                      "ptxas info    : Compile time = 567.510 ms\n";
    PtxasInfo p = parse_ptxas_info(log, "report_spiller");
    EXPECT_EQ(p.registers, 255);
    EXPECT_EQ(p.stack_frame_bytes, 1456);
    EXPECT_EQ(p.spill_store_bytes, 1432);
    EXPECT_EQ(p.spill_load_bytes, 1432);
}

TEST(CompileReportParser, UnknownKernelOrEmptyLogLeavesEverythingUnknown) {
    PtxasInfo none = parse_ptxas_info(kJitLog, "absent");
    EXPECT_EQ(none.registers, -1);
    EXPECT_EQ(none.spill_store_bytes, -1);
    EXPECT_EQ(none.spill_load_bytes, -1);
    EXPECT_EQ(none.stack_frame_bytes, -1);
    PtxasInfo empty = parse_ptxas_info("");
    EXPECT_EQ(empty.registers, -1);
    EXPECT_EQ(empty.spill_store_bytes, -1);
    // A truncated log: the last line cut in the middle of a number still parses what is whole.
    PtxasInfo cut = parse_ptxas_info("ptxas info    : Function properties for k\nptxas .  16 bytes stack frame, 4 by", "k");
    EXPECT_EQ(cut.stack_frame_bytes, 16);
    EXPECT_EQ(cut.spill_store_bytes, -1);
}

} // namespace
