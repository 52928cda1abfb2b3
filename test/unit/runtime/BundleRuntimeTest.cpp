/// \file
/// Repro bundles from the runtime ([Note] Repro bundles): a CompileError of compile_function
/// names its bundle, which holds the IR, the context's target and device; a module the device
/// refuses to load gets a bundle at stage `load` holding what was given to the driver;
/// EMBER_DUMP=bundle writes a bundle for a kernel that compiles.
#include "ember/compiler/Bundle.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/ember.h"

#include "ContextImpl.h"
#include "DeviceTest.h"
#include "ScopedEnv.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

using namespace ember;
namespace fs = std::filesystem;

namespace {

// The DSL cannot trace a parameter that points to shared memory, and lowering refuses one on
// every target: a CompileError that only the compile path finds.
const char *shared_param_text = R"(kernel @bundle_rt_shared(%out: ptr<shared f32>, %x: f32) {
  %out[thread_idx.x] = (%x * 2.0:f32)
}
)";

const auto bundle_scale = kernel("bundle_rt_scale", {"v", "n"}, [](Ptr<float> v, Int n) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] *= 3.0f; });
});

std::string slurp(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool has(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// The directory named by the `repro bundle: DIR` line of `log`, or "" when there is none.
std::string bundle_line(const std::string &log) {
    const std::string key = "repro bundle: ";
    const size_t at = log.find(key);
    if (at == std::string::npos) return {};
    return log.substr(at + key.size(), log.find('\n', at) - at - key.size());
}

class BundleRuntimeTest : public ember::testing::DeviceTest {
protected:
    void SetUp() override {
        DeviceTest::SetUp();
        if (IsSkipped()) return;
        dir_ = fs::temp_directory_path() /
               ("ember-bundle-rt-" + GetParam() + "-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        dump_dir_.emplace("EMBER_DUMP_DIR", dir_.string());
    }
    void TearDown() override {
        dump_dir_.reset();
        if (!dir_.empty()) {
            std::error_code ec;
            fs::remove_all(dir_, ec);
        }
    }
    fs::path dir_;
    std::optional<ember::testing::ScopedEnv> dump_dir_;
};

TEST_P(BundleRuntimeTest, CompileErrorNamesItsBundle) {
    auto info = std::make_shared<detail::KernelInfo>();
    info->ir = std::move(ir::parse_module(shared_param_text).kernels.at(0));
    info->param_names = {"out", "x"};
    info->id = 0xb0d1e000u; // traced kernels count up from 1: no clash with the cache
    Kernel<Ptr<float>, Float32> k(info);
    std::string log, what;
    try {
        ctx().compile_function(k);
        FAIL() << "a shared-memory pointer parameter compiled";
    } catch (const CompileError &e) {
        log = e.log();
        what = e.what();
    }
    EXPECT_TRUE(has(what, "kernel 'bundle_rt_shared'")) << what;
    const std::string dir = bundle_line(log);
    ASSERT_FALSE(dir.empty()) << what;
    EXPECT_EQ(fs::path(dir).parent_path(), dir_);
    EXPECT_EQ(slurp(fs::path(dir) / "kernel.ir"), ir::print(info->ir));
    EXPECT_EQ(slurp(fs::path(dir) / "target.txt"),
              ctx().impl()->backend->target().to_string() + "\n");
    const std::string versions = slurp(fs::path(dir) / "versions.txt");
    EXPECT_TRUE(has(versions, "ember: " + ember_version())) << versions;
    EXPECT_TRUE(has(versions, "device: " + ctx().name())) << versions;
    if (GetParam() == "cuda") {
        EXPECT_TRUE(has(versions, "driver: " + std::to_string(ctx().get_driver_version()))) << versions;
    }
    const std::string error = slurp(fs::path(dir) / "error.txt");
    EXPECT_EQ(error.rfind("stage: lower\n", 0), 0u) << error;
    EXPECT_TRUE(has(error, "points to shared memory")) << error;

    const BundleReplay r = replay_bundle(dir);
    EXPECT_TRUE(r.reproduced) << r.produced.error;
}

TEST_P(BundleRuntimeTest, RefusedModuleGetsALoadBundle) {
    // What the driver (or the CPU JIT) refuses: the compiled module with its code broken.
    CompileOptions co;
    CompiledKernel ck = ember::compile(bundle_scale.ir(), ctx().impl()->backend->target(), co);
    if (ck.target.arch == Arch::NVPTX) {
        const size_t entry = ck.binary.find(".visible .entry");
        ASSERT_NE(entry, std::string::npos);
        const size_t body = ck.binary.find('{', entry);
        ASSERT_NE(body, std::string::npos);
        ck.binary.insert(body + 1, "\n\tthis_is_not_an_instruction %r1;\n");
    } else {
        ck.binary = "not an object file";
    }
    try {
        ctx().impl()->backend->load(ck);
        FAIL() << "a broken module loaded";
    } catch (const CompileError &e) {
        const CompileError noted = detail::bundle_load_failure(e, bundle_scale.ir(), ck, co);
        EXPECT_EQ(noted.summary(), e.summary());
        const std::string dir = bundle_line(noted.log());
        ASSERT_FALSE(dir.empty()) << noted.what();
        EXPECT_TRUE(has(noted.what(), e.log())) << noted.what();
        const std::string error = slurp(fs::path(dir) / "error.txt");
        EXPECT_EQ(error.rfind("stage: load\n", 0), 0u) << error;
        EXPECT_TRUE(has(error, e.summary())) << error;
        EXPECT_FALSE(slurp(fs::path(dir) / "llvm.ll").empty());
        EXPECT_FALSE(slurp(fs::path(dir) / "opt.ll").empty());
        if (ck.target.arch == Arch::NVPTX) {
            // The PTX the driver refused, not a fresh one.
            EXPECT_EQ(slurp(fs::path(dir) / "kernel.ptx"), ck.binary);
            // Offline, the replay produces the unbroken PTX: not the same, so not reproduced.
            const BundleReplay r = replay_bundle(dir);
            EXPECT_EQ(r.stored.failed_stage, "load");
            EXPECT_FALSE(r.reproduced);
            ASSERT_EQ(r.differing_stages.size(), 1u);
            EXPECT_EQ(r.differing_stages[0], "kernel.ptx");
        } else {
            EXPECT_TRUE(has(slurp(fs::path(dir) / "kernel.s"), "bundle_rt_scale"));
        }
    }
}

TEST_P(BundleRuntimeTest, EmberDumpBundleWritesOneForACompiledKernel) {
    // EMBER_DUMP is read once per process: the check runs in a fresh one (a threadsafe death
    // test re-executes this test alone), which exits 0 only when the bundle is right.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const std::string api = GetParam();
    auto check = [&]() -> int {
            ::setenv("EMBER_DUMP", "bundle", 1);
            auto f = ctx().compile_function(bundle_scale);
            auto buf = ctx().enqueue_create_buffer<float>(4);
            ctx().enqueue_memset(buf, 1.0f);
            ctx().enqueue_function(f, buf, int64_t(4), grid_dim(1), block_dim(4));
            std::vector<float> host(4);
            ctx().enqueue_copy(host.data(), buf);
            ctx().synchronize();
            int found = 0;
            for (const auto &entry : fs::directory_iterator(dir_)) {
                const fs::path d = entry.path();
                if (d.filename().string().rfind("ember-bundle-bundle_rt_scale-", 0) != 0) continue;
                ++found;
                const char *assembly = api == "cuda" ? "kernel.ptx" : "kernel.s";
                for (const char *file : {"kernel.ir", "target.txt", "options.txt", "versions.txt",
                                         "llvm.ll", "opt.ll", assembly, "README.txt"})
                    if (slurp(d / file).empty()) {
                        std::fprintf(stderr, "bundle %s: %s is missing or empty\n", d.c_str(), file);
                        return 3;
                    }
                if (fs::exists(d / "error.txt")) {
                    std::fprintf(stderr, "bundle of a compiled kernel has error.txt\n");
                    return 4;
                }
                const BundleReplay r = replay_bundle(d.string());
                if (!r.reproduced || !r.differing_stages.empty()) {
                    std::fprintf(stderr, "replay differs: %s\n", r.produced.error.c_str());
                    return 5;
                }
            }
            if (found != 1) {
                std::fprintf(stderr, "%d bundles for bundle_rt_scale in %s\n", found, dir_.c_str());
                return 2;
            }
            return host[3] == 3.0f ? 0 : 6;
    };
    EXPECT_EXIT(
        {
            const int code = check();
            std::error_code ec;
            fs::remove_all(dir_, ec); // the child's own directory (its pid names it)
            std::exit(code);
        },
        ::testing::ExitedWithCode(0), "");
}

INSTANTIATE_TEST_SUITE_P(Apis, BundleRuntimeTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
