/// \file
/// Repro bundles ([Note] Repro bundles): a bundle written for a compiled kernel replays to the
/// same stages; a CompileError writes one, names it in its message and replays to the same
/// error; an unwritable directory is a note, not a new error; malformed bundles are LogicErrors.
#include "ember/Error.h"
#include "ember/compiler/Bundle.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/IRPrinter.h"

#include "ScopedEnv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <unistd.h>

using namespace ember;
namespace fs = std::filesystem;

namespace {

const char *good_text = R"(kernel @bundle_twice(%out: ptr<global f32>, %x: f32) {
  %out[thread_idx.x] = (%x * 2.0:f32)
}
)";

// Lowering refuses pointers to shared memory in parameters on every target.
const char *bad_text = R"(kernel @bundle_shared_param(%out: ptr<shared f32>, %x: f32) {
  %out[thread_idx.x] = (%x * 2.0:f32)
}
)";

ir::Kernel parse_kernel(const std::string &text) { return std::move(ir::parse_module(text).kernels.at(0)); }

std::string slurp(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Points EMBER_DUMP_DIR at a fresh directory for the test, and restores it after.
class BundleTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("ember-bundle-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        dump_dir_.emplace("EMBER_DUMP_DIR", dir_.string());
    }
    void TearDown() override {
        dump_dir_.reset();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    fs::path dir_;
    std::optional<ember::testing::ScopedEnv> dump_dir_;
};

TEST_F(BundleTest, WrittenBundleReplaysToTheSameStages) {
    const ir::Kernel k = parse_kernel(good_text);
    const TargetSpec target = TargetSpec::parse("nvptx:sm_90");
    CompileOptions o;
    o.opt_level = 2;
    o.keep_ir = o.keep_llvm = o.keep_llvm_opt = o.keep_asm = true;
    const CompiledKernel ck = compile(k, target, o);

    ReproBundle b;
    b.kernel_name = k.name;
    b.ir = ck.ir;
    b.target = target;
    b.opt_level = 2;
    b.versions = "ember: " + ember_version() + "\n";
    b.llvm = ck.llvm;
    b.llvm_opt = ck.llvm_opt;
    b.assembly = ck.assembly;
    std::string why;
    const std::string dir = write_bundle(b, &why);
    ASSERT_FALSE(dir.empty()) << why;
    EXPECT_EQ(dir, bundle_directory(b));
    EXPECT_EQ(fs::path(dir).parent_path(), dir_);
    EXPECT_EQ(fs::path(dir).filename().string().rfind("ember-bundle-bundle_twice-", 0), 0u) << dir;
    for (const char *f : {"kernel.ir", "target.txt", "options.txt", "versions.txt", "llvm.ll", "opt.ll",
                          "kernel.ptx", "README.txt"})
        EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
    EXPECT_FALSE(fs::exists(fs::path(dir) / "error.txt"));
    EXPECT_FALSE(fs::exists(fs::path(dir) / "kernel.s"));
    EXPECT_EQ(slurp(fs::path(dir) / "target.txt"), "nvptx:sm_90\n");
    EXPECT_EQ(slurp(fs::path(dir) / "options.txt"), "opt_level=2\n");
    EXPECT_NE(slurp(fs::path(dir) / "README.txt").find("ember-compile --bundle " + dir), std::string::npos);

    const BundleReplay r = replay_bundle(dir);
    EXPECT_EQ(r.stored.kernel_name, "bundle_twice");
    EXPECT_EQ(r.stored.opt_level, 2);
    EXPECT_EQ(r.stored.target.to_string(), "nvptx:sm_90");
    EXPECT_TRUE(r.reproduced);
    EXPECT_TRUE(r.produced.error.empty()) << r.produced.error;
    EXPECT_TRUE(r.differing_stages.empty());
    EXPECT_EQ(r.produced.assembly, ck.assembly);
    EXPECT_NE(r.produced.assembly.find(".visible .entry bundle_twice"), std::string::npos);

    // A stored stage that this build does not produce is reported.
    std::ofstream(fs::path(dir) / "opt.ll", std::ios::trunc) << "; edited by hand\n";
    const BundleReplay edited = replay_bundle(dir);
    ASSERT_EQ(edited.differing_stages.size(), 1u);
    EXPECT_EQ(edited.differing_stages[0], "opt.ll");

    // Other options give another directory.
    ReproBundle o3 = b;
    o3.opt_level = 3;
    EXPECT_NE(bundle_directory(o3), dir);
}

TEST_F(BundleTest, CompileErrorWritesABundleAndNamesIt) {
    const ir::Kernel k = parse_kernel(bad_text);
    std::string msg, log;
    try {
        compile(k, TargetSpec::parse("cpu"));
        FAIL() << "a shared-memory pointer parameter compiled";
    } catch (const CompileError &e) {
        msg = e.what();
        log = e.log();
    }
    EXPECT_NE(msg.find("kernel 'bundle_shared_param'"), std::string::npos) << msg;
    const std::string key = "repro bundle: ";
    const size_t at = log.find(key);
    ASSERT_NE(at, std::string::npos) << msg;
    const std::string dir = log.substr(at + key.size(), log.find('\n', at) - at - key.size());
    EXPECT_EQ(fs::path(dir).parent_path(), dir_);
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    const std::string error = slurp(fs::path(dir) / "error.txt");
    EXPECT_EQ(error.rfind("stage: lower\n", 0), 0u) << error;
    EXPECT_NE(error.find("points to shared memory"), std::string::npos) << error;
    EXPECT_EQ(slurp(fs::path(dir) / "kernel.ir"), ir::print(k));
    EXPECT_NE(slurp(fs::path(dir) / "versions.txt").find("llvm: " + llvm_version()), std::string::npos);
    EXPECT_FALSE(fs::exists(fs::path(dir) / "llvm.ll")); // lowering failed: no later stage

    const BundleReplay r = replay_bundle(dir);
    EXPECT_EQ(r.stored.failed_stage, "lower");
    EXPECT_EQ(r.produced.failed_stage, "lower");
    EXPECT_TRUE(r.reproduced) << r.produced.error;
    EXPECT_NE(r.produced.error.find("points to shared memory"), std::string::npos);
    // Replaying writes no bundle of its own: the error carries no bundle line.
    EXPECT_EQ(r.produced.error.find("repro bundle:"), std::string::npos) << r.produced.error;

    // A bundle whose stored error differs is not reproduced.
    std::ofstream(fs::path(dir) / "error.txt", std::ios::trunc) << "stage: lower\nkernel 'x': something else\n";
    EXPECT_FALSE(replay_bundle(dir).reproduced);
}

TEST_F(BundleTest, UnwritableDirectoryIsANoteNotAnotherError) {
    // EMBER_DUMP_DIR names a regular file: no directory can be created below it.
    fs::create_directories(dir_);
    const fs::path file = dir_ / "a-file";
    std::ofstream(file) << "x";
    ::setenv("EMBER_DUMP_DIR", file.c_str(), 1);
    try {
        compile(parse_kernel(bad_text), TargetSpec::parse("cpu"));
        FAIL() << "compiled";
    } catch (const CompileError &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("points to shared memory"), std::string::npos) << msg;
        EXPECT_NE(msg.find("repro bundle: not written (cannot create"), std::string::npos) << msg;
    }
}

TEST_F(BundleTest, MalformedBundlesAreLogicErrors) {
    auto message = [](const std::string &dir) {
        try {
            replay_bundle(dir);
        } catch (const LogicError &e) {
            return std::string(e.what());
        }
        return std::string("no LogicError");
    };
    EXPECT_NE(message((dir_ / "missing").string()).find("is not a directory"), std::string::npos);

    ReproBundle b;
    b.kernel_name = "bundle_twice";
    b.ir = good_text;
    b.target = TargetSpec::parse("cpu");
    std::string why;
    const std::string dir = write_bundle(b, &why);
    ASSERT_FALSE(dir.empty()) << why;
    EXPECT_TRUE(replay_bundle(dir).reproduced);

    std::ofstream(fs::path(dir) / "options.txt", std::ios::trunc) << "opt_level=7\n";
    std::string msg = message(dir);
    EXPECT_NE(msg.find("options.txt line 'opt_level=7'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dir), std::string::npos) << msg;

    fs::remove(fs::path(dir) / "target.txt");
    msg = message(dir);
    EXPECT_NE(msg.find("has no readable target.txt"), std::string::npos) << msg;
}

} // namespace
