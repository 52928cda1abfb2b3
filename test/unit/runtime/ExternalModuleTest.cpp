/// \file
/// External modules: hand-written PTX loaded with load_module, its kernels launched through the
/// checked enqueue_function with a declared signature, its globals written and read as buffers,
/// bad PTX as CompileError with the JIT log; the CPU device's refusal; ModuleImage::file; the
/// PTX scan behind the signature checks. CUDA cases skip with a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"
#include "Functions.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ember;

namespace {

// Two kernels and two globals, PTX ISA 8.0 (CUDA 12.0 and newer drivers) for sm_70 and newer:
// scale(float *v, int64 n, float s): v[i] *= s; from_table(float *out, int64 n):
// out[i] = table[i % 4], and counter += 1 per thread.
const char *const kPtx = R"(
//
// Hand-written for ExternalModuleTest.
//
.version 8.0
.target sm_70
.address_size 64

.visible .global .align 4 .f32 table[4];
.visible .global .align 4 .u32 counter;

.visible .entry scale(
    .param .u64 scale_param_0,
    .param .u64 scale_param_1,
    .param .f32 scale_param_2
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [scale_param_0];
    ld.param.u64 %rd2, [scale_param_1];
    ld.param.f32 %f1, [scale_param_2];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.s64.s32 %rd3, %r4;
    setp.ge.s64 %p1, %rd3, %rd2;
    @%p1 bra SCALE_DONE;
    cvta.to.global.u64 %rd4, %rd1;
    shl.b64 %rd5, %rd3, 2;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    mul.f32 %f2, %f2, %f1;
    st.global.f32 [%rd6], %f2;
SCALE_DONE:
    ret;
}

.visible .entry from_table(
    .param .u64 from_table_param_0,
    .param .u64 from_table_param_1
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [from_table_param_0];
    ld.param.u64 %rd2, [from_table_param_1];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.s64.s32 %rd3, %r4;
    setp.ge.s64 %p1, %rd3, %rd2;
    @%p1 bra TABLE_DONE;
    and.b64 %rd4, %rd3, 3;
    shl.b64 %rd5, %rd4, 2;
    mov.u64 %rd6, table;
    add.s64 %rd7, %rd6, %rd5;
    ld.global.f32 %f1, [%rd7];
    cvta.to.global.u64 %rd8, %rd1;
    shl.b64 %rd9, %rd3, 2;
    add.s64 %rd10, %rd8, %rd9;
    st.global.f32 [%rd10], %f1;
    atom.global.add.u32 %r5, [counter], 1;
TABLE_DONE:
    ret;
}
)";

class ExternalModuleTest : public ember::testing::DeviceTest {};

template <class E, class F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const E &e) {
        return e.what();
    }
    return "(no exception of the expected class)";
}

TEST_P(ExternalModuleTest, PtxKernelsRunWithADeclaredSignature) {
    DeviceModule m = ctx().load_module(ModuleImage::ptx(kPtx, "test.ptx"));
    EXPECT_EQ(m.name(), "test.ptx");
    EXPECT_EQ(m.function_names(), (std::vector<std::string>{"scale", "from_table"}));
    EXPECT_EQ(m.global_names(), (std::vector<std::string>{"table", "counter"}));
    auto scale = m.get_function<Ptr<float>, Int, Float32>("scale", {"v", "n", "s"});
    EXPECT_EQ(scale.name(), "scale");
    EXPECT_GT(scale.num_regs(), 0);
    EXPECT_EQ(scale.shared_size_bytes(), 0);
    EXPECT_GT(scale.ptx_version(), 0);
    EXPECT_GT(scale.binary_version(), 0);
    EXPECT_NE(scale.assembly().find(".entry scale"), std::string::npos);

    const int64_t n = 1000;
    std::vector<float> host(n);
    for (int64_t i = 0; i < n; ++i) host[i] = float(i);
    auto dev = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(dev, host.data());
    ctx().enqueue_function(scale, dev, n, 2.5f, grid_dim((n + 127) / 128), block_dim(128));
    // On a stream too.
    DeviceStream s = ctx().create_stream();
    s.enqueue_function(scale, dev, n, 2.0f, grid_dim((n + 255) / 256), block_dim(256));
    s.synchronize();
    ctx().enqueue_copy(host.data(), dev);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], float(i) * 2.5f * 2.0f) << "i=" << i;

    // The checks of ember's own kernels apply: a buffer of no context is rejected.
    std::string msg = error_of<LogicError>([&] {
        ctx().enqueue_function(scale, DeviceBuffer<float>(), n, 1.0f, grid_dim(1), block_dim(1));
    });
    EXPECT_NE(msg.find("kernel 'scale': argument 0 ('v') is an empty DeviceBuffer"), std::string::npos) << msg;
}

TEST_P(ExternalModuleTest, GlobalsAreBuffers) {
    DeviceModule m = ctx().load_module(ModuleImage::ptx(kPtx));
    DeviceBuffer<float> table = m.get_global<float>("table");
    EXPECT_EQ(table.size(), 4u);
    EXPECT_EQ(m.get_global("table").bytes(), 16u);
    DeviceBuffer<uint32_t> counter = m.get_global<uint32_t>("counter");
    EXPECT_EQ(counter.size(), 1u);
    const float values[4] = {1.5f, -2.0f, 8.25f, 100.0f};
    ctx().enqueue_copy(table, &values[0]);
    uint32_t zero = 0;
    ctx().enqueue_copy(counter, &zero);

    auto from_table = m.get_function<Ptr<float>, Int>("from_table");
    const int64_t n = 777;
    auto out = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_function(from_table, out, n, grid_dim((n + 127) / 128), block_dim(128));
    std::vector<float> host(n);
    ctx().enqueue_copy(host.data(), out);
    uint32_t count = 0;
    ctx().enqueue_copy(&count, counter);
    float back[4] = {};
    ctx().enqueue_copy(&back[0], table);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], values[i % 4]) << "i=" << i;
    EXPECT_EQ(count, uint32_t(n));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(back[i], values[i]);
    // A global copied into an ordinary buffer and back.
    auto copy = ctx().enqueue_create_buffer<float>(4);
    ctx().enqueue_copy(copy, table);
    ctx().synchronize();
    EXPECT_THROW(m.get_global<double>("counter"), LogicError); // 4 bytes are no double
    // The buffer keeps the module loaded after the handles go away.
    DeviceBuffer<float> kept = DeviceModule(m).get_global<float>("table");
    m = DeviceModule();
    float again[4] = {};
    ctx().enqueue_copy(&again[0], kept);
    ctx().synchronize();
    EXPECT_EQ(again[3], 100.0f);
}

TEST_P(ExternalModuleTest, MissingNamesAndWrongSignaturesAreLogicErrors) {
    DeviceModule m = ctx().load_module(ModuleImage::ptx(kPtx, "test.ptx"));
    std::string msg = error_of<LogicError>([&] { m.get_function<Ptr<float>>("scal"); });
    EXPECT_NE(msg.find("has no kernel 'scal'; its kernels are 'scale', 'from_table'"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { m.get_global("tabel"); });
    EXPECT_NE(msg.find("has no global 'tabel'; its globals are 'table', 'counter'"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { m.get_function<Ptr<float>, Int>("scale"); });
    EXPECT_NE(msg.find("declares 2 parameters but the PTX's .entry has 3"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { m.get_function<Ptr<float>, Int32, Float32>("scale"); });
    EXPECT_NE(msg.find("parameter 1 is declared i32 (4 bytes) but the PTX's parameter has 8 bytes"),
              std::string::npos)
        << msg;
}

TEST_P(ExternalModuleTest, BadPtxIsACompileErrorWithTheJitLog) {
    const char *bad = ".version 8.0\n.target sm_70\n.address_size 64\n"
                      ".visible .entry broken()\n{\n    frobnicate.u32 %r1, 2;\n    ret;\n}\n";
    try {
        ctx().load_module(ModuleImage::ptx(bad, "broken.ptx"));
        FAIL() << "load_module accepted bad PTX";
    } catch (const CompileError &e) {
        EXPECT_NE(e.summary().find("module 'broken.ptx'"), std::string::npos) << e.summary();
        EXPECT_FALSE(e.log().empty());
        EXPECT_NE(e.log().find("rror"), std::string::npos) << e.log(); // "error" / "Error"
    }
    // The context stays usable.
    DeviceModule m = ctx().load_module(ModuleImage::ptx(kPtx));
    EXPECT_TRUE(m);
}

TEST_P(ExternalModuleTest, ModuleImageFromAFile) {
    auto path = std::filesystem::temp_directory_path() / ("ember_external_" + std::to_string(::getpid()) + ".ptx");
    {
        std::ofstream out(path);
        out << kPtx;
    }
    ModuleImage image = ModuleImage::file(path);
    std::filesystem::remove(path);
    EXPECT_EQ(image.format(), ModuleImage::Format::ptx);
    DeviceModule m = ctx().load_module(image);
    EXPECT_EQ(m.name(), path.string());
    auto scale = m.get_function<Ptr<float>, Int, Float32>("scale");
    auto dev = ctx().enqueue_create_buffer<float>(1);
    float one = 3.0f;
    ctx().enqueue_copy(dev, &one);
    ctx().enqueue_function(scale, dev, int64_t{1}, 2.0f, grid_dim(1), block_dim(32));
    ctx().enqueue_copy(&one, dev);
    ctx().synchronize();
    EXPECT_EQ(one, 6.0f);
}

// A cubin made from the same PTX by the CUDA toolkit's ptxas (tests may use the toolkit; the
// library never does): loaded from bytes and from a file, launched, its global used. Skips with a
// message where ptxas is not on the PATH.
TEST_P(ExternalModuleTest, CubinsFromPtxasLoadAndRun) {
    if (std::system("command -v ptxas >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "ptxas (CUDA toolkit) is not on the PATH: no cubin to load";
    auto [major, minor] = ctx().compute_capability();
    const std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
    auto dir = std::filesystem::temp_directory_path();
    auto ptx = dir / ("ember_cubin_" + std::to_string(::getpid()) + ".ptx");
    auto cubin = dir / ("ember_cubin_" + std::to_string(::getpid()) + ".cubin");
    {
        std::ofstream out(ptx);
        out << kPtx;
    }
    const std::string cmd = "ptxas -arch=" + arch + " -o " + cubin.string() + " " + ptx.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::filesystem::remove(ptx);
    std::ifstream in(cubin, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 4u);
    EXPECT_EQ(bytes.substr(1, 3), "ELF");

    ModuleImage from_file = ModuleImage::file(cubin);
    EXPECT_EQ(from_file.format(), ModuleImage::Format::cubin);
    std::filesystem::remove(cubin);
    for (const ModuleImage &image : {ModuleImage::cubin(bytes, "test.cubin"), from_file}) {
        SCOPED_TRACE(image.name());
        DeviceModule m = ctx().load_module(image);
        auto scale = m.get_function<Ptr<float>, Int, Float32>("scale", {"v", "n", "s"});
        EXPECT_GT(scale.num_regs(), 0);
        const int64_t n = 300;
        std::vector<float> host(n);
        for (int64_t i = 0; i < n; ++i) host[i] = float(i);
        auto dev = ctx().enqueue_create_buffer<float>(n);
        ctx().enqueue_copy(dev, host.data());
        ctx().enqueue_function(scale, dev, n, 3.0f, grid_dim((n + 127) / 128), block_dim(128));
        ctx().enqueue_copy(host.data(), dev);
        ctx().synchronize();
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], float(i) * 3.0f) << "i=" << i;

        auto table = m.get_global<float>("table");
        EXPECT_EQ(table.size(), 4u);
        std::vector<float> t = {1.5f, -2.0f, 4.0f, 8.0f};
        ctx().enqueue_copy(table, t.data());
        auto from_table = m.get_function<Ptr<float>, Int>("from_table", {"out", "n"});
        ctx().enqueue_function(from_table, dev, n, grid_dim((n + 127) / 128), block_dim(128));
        ctx().enqueue_copy(host.data(), dev);
        ctx().synchronize();
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], t[i % 4]) << "i=" << i;
        // A missing global in a cubin is named (the cubin's globals cannot be listed).
        std::string msg = error_of<LogicError>([&] { (void)m.get_global("no_such_global"); });
        EXPECT_NE(msg.find("no_such_global"), std::string::npos) << msg;
    }
}

// PTX and cubins need a CUDA device; ExternalModuleCpuTest covers what the CPU device does.
INSTANTIATE_TEST_SUITE_P(Apis, ExternalModuleTest, ::testing::Values("cuda"), ember::testing::api_name);

// ---------------------------------------------------------------------------------------------
// ember IR modules, on every device.

const char *const kIr = R"(
// Two kernels in ember's textual IR.
kernel @scalar_add(%vector: ptr<global f32>, %size: i64, %scalar: f32) {
  if (((block_idx.x * block_dim.x) + thread_idx.x) < %size) {
    let %0: f32 = %vector[((block_idx.x * block_dim.x) + thread_idx.x)]
    %vector[((block_idx.x * block_dim.x) + thread_idx.x)] = (%0 + %scalar)
  }
}
kernel @fill(%out: ptr<global i64>, %n: i64, %value: i64) {
  if (((block_idx.x * block_dim.x) + thread_idx.x) < %n) {
    %out[((block_idx.x * block_dim.x) + thread_idx.x)] = %value
  }
}
)";

class ExternalModuleIrTest : public ember::testing::DeviceTest {};

TEST_P(ExternalModuleIrTest, IrKernelsRunWithADeclaredSignature) {
    DeviceModule m = ctx().load_module(ModuleImage::ember_ir(kIr, "two.ir"));
    EXPECT_EQ(m.function_names(), (std::vector<std::string>{"scalar_add", "fill"}));
    EXPECT_TRUE(m.global_names().empty());
    auto add = m.get_function<Ptr<float>, Int, Float32>("scalar_add");
    auto fill = m.get_function<Ptr<int64_t>, Int, Int>("fill", {"out", "n", "value"});
    EXPECT_EQ(add.shared_size_bytes(), 0);
    const int64_t n = 300;
    std::vector<float> host(n, 1.5f);
    auto dev = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(dev, host.data());
    ctx().enqueue_function(add, dev, n, 20.0f, grid_dim(3), block_dim(128));
    auto ints = ctx().enqueue_create_buffer<int64_t>(n);
    ctx().enqueue_function(fill, ints, n, int64_t{-7}, grid_dim(3), block_dim(128), LaunchAttribute::priority(0));
    std::vector<int64_t> ihost(n);
    ctx().enqueue_copy(host.data(), dev);
    ctx().enqueue_copy(ihost.data(), ints);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(host[i], 21.5f) << "i=" << i;
        ASSERT_EQ(ihost[i], -7) << "i=" << i;
    }
    std::string msg = error_of<LogicError>([&] {
        ctx().enqueue_function(fill, DeviceBuffer<int64_t>(), n, int64_t{1}, grid_dim(1), block_dim(1));
    });
    EXPECT_NE(msg.find("kernel 'fill': argument 0 ('out') is an empty DeviceBuffer"), std::string::npos) << msg;
}

TEST_P(ExternalModuleIrTest, MistakesAreNamed) {
    DeviceModule m = ctx().load_module(ModuleImage::ember_ir(kIr, "two.ir"));
    std::string msg = error_of<LogicError>([&] { m.get_function<Ptr<float>, Int, Float64>("scalar_add"); });
    EXPECT_NE(msg.find("parameter 2 ('scalar') is f32 but the signature declares f64"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { m.get_function<Ptr<float>, Int>("scalar_add"); });
    EXPECT_NE(msg.find("declares 2 parameters but the kernel has 3"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { m.get_function<Ptr<float>>("nope"); });
    EXPECT_NE(msg.find("has no kernel 'nope'; its kernels are 'scalar_add', 'fill'"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { m.get_global("x"); });
    EXPECT_NE(msg.find("ember IR modules have none"), std::string::npos) << msg;
    try {
        ctx().load_module(ModuleImage::ember_ir("kernel @k(%a: i64) {\n  %a = \n}\n", "bad.ir"));
        FAIL() << "load_module accepted bad IR";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("bad.ir:"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, ExternalModuleIrTest, ember::testing::all_apis(), ember::testing::api_name);

// ---------------------------------------------------------------------------------------------
// Without a GPU.

TEST(ExternalModuleCpuTest, TheCpuDeviceRefusesPtxAndCubins) {
    DeviceContext cpu(0, "cpu");
    std::string msg = error_of<LogicError>([&] { cpu.load_module(ModuleImage::ptx(kPtx, "test.ptx")); });
    EXPECT_NE(msg.find("load_module of 'test.ptx': PTX needs a CUDA device"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { cpu.load_module(ModuleImage::cubin(std::string("\x7f" "ELF...", 7))); });
    EXPECT_NE(msg.find("a cubin needs a CUDA device"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { cpu.load_module(ModuleImage::ptx("")); });
    EXPECT_NE(msg.find("is empty"), std::string::npos) << msg;
    msg = error_of<LogicError>([&] { DeviceModule().get_global("x"); });
    EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
}

TEST(ExternalModuleCpuTest, ModuleImageFileFormats) {
    auto dir = std::filesystem::temp_directory_path();
    auto write = [&](const std::string &name, const std::string &bytes) {
        auto p = dir / name;
        std::ofstream(p, std::ios::binary) << bytes;
        return p;
    };
    std::string pid = std::to_string(::getpid());
    auto ptx = write("ember_img_" + pid + ".txt", kPtx);
    auto elf = write("ember_img_" + pid + ".bin", std::string("\x7f" "ELF\x02\x01", 6));
    auto cubin = write("ember_img_" + pid + ".cubin", "anything");
    auto other = write("ember_img_" + pid + ".dat", "hello");
    auto ir = write("ember_img_" + pid + ".ir", "kernel @k() {\n}\n");
    EXPECT_EQ(ModuleImage::file(ptx).format(), ModuleImage::Format::ptx);
    EXPECT_EQ(ModuleImage::file(elf).format(), ModuleImage::Format::cubin);
    EXPECT_EQ(ModuleImage::file(cubin).format(), ModuleImage::Format::cubin);
    EXPECT_EQ(ModuleImage::file(cubin).bytes(), "anything");
    EXPECT_THROW(ModuleImage::file(other), LogicError);
    EXPECT_EQ(ModuleImage::file(ir).format(), ModuleImage::Format::ember_ir);
    for (const auto &p : {ptx, elf, cubin, other, ir}) std::filesystem::remove(p);
    EXPECT_THROW(ModuleImage::file(dir / ("ember_no_such_" + pid + ".ptx")), RuntimeError);
    // Not regular files: an error naming the path, not std::ios_failure or an endless read.
    EXPECT_THROW(ModuleImage::file(dir), LogicError);
    EXPECT_THROW(ModuleImage::file("/dev/zero"), LogicError);
}

TEST(ExternalModuleCpuTest, PtxScanFindsEntriesParametersAndGlobals) {
    detail::PtxSymbols s = detail::scan_ptx(kPtx);
    ASSERT_EQ(s.entries.size(), 2u);
    EXPECT_EQ(s.entries[0].name, "scale");
    EXPECT_EQ(s.entries[0].param_bytes, (std::vector<size_t>{8, 8, 4}));
    EXPECT_EQ(s.entries[1].name, "from_table");
    EXPECT_EQ(s.entries[1].param_bytes, (std::vector<size_t>{8, 8}));
    EXPECT_EQ(s.globals, (std::vector<std::string>{"table", "counter"}));

    // What nvcc writes: byte-array parameters, .const and initialised globals, comments, a
    // .func with a prototype, an .extern declaration, entries without parameters.
    detail::PtxSymbols t = detail::scan_ptx(R"(
        .version 8.5 // a comment with .entry fake(
        .target sm_90
        /* .global .u32 commented_out; */
        .extern .global .align 4 .u32 elsewhere;
        .const .align 8 .b8 params[64];
        .visible .global .align 4 .u32 lut[3] = {1, 2, 3};
        .global .f64 scalar = 0d3FF0000000000000;
        .func (.param .b32 func_retval0) helper(.param .b32 x) { ret; }
        .visible .entry _Z4testPfi4Pair(
            .param .u64 .ptr .global .align 4 _Z4testPfi4Pair_param_0,
            .param .u32 _Z4testPfi4Pair_param_1,
            .param .align 8 .b8 _Z4testPfi4Pair_param_2[16]
        )
        .maxntid 256, 1, 1
        { .reg .b32 %r<2>; { .global .u32 nested; } ret; }
        .entry empty() { ret; }
        .entry no_parens { ret; }
    )");
    ASSERT_EQ(t.entries.size(), 3u);
    EXPECT_EQ(t.entries[0].name, "_Z4testPfi4Pair");
    EXPECT_EQ(t.entries[0].param_bytes, (std::vector<size_t>{8, 4, 16}));
    EXPECT_EQ(t.entries[1].name, "empty");
    EXPECT_TRUE(t.entries[1].param_bytes.empty());
    EXPECT_EQ(t.entries[2].name, "no_parens");
    EXPECT_EQ(t.globals, (std::vector<std::string>{"params", "lut", "scalar"}));
}

} // namespace
