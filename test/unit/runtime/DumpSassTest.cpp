/// \file
/// EMBER_DUMP=sass: the search for the CUDA toolkit's disassemblers, the run of one on a cubin
/// (with stand-in tools, so that it is checked without a toolkit), and on an NVIDIA GPU the real
/// thing: a kernel's SASS file from cuobjdump or nvdisasm. The GPU case skips with a message where
/// there is no CUDA device or no toolkit.
#include "ember/ember.h"

#include "Backend.h"
#include "ScopedEnv.h"
#include "cuda/CudaSass.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace ember;
using ember::testing::ScopedEnv;

class DumpSassTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("ember-sass-test-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "bin");
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    /// An executable shell script `bin/<name>` with `body`.
    void tool(const std::string &name, const std::string &body) {
        const fs::path p = dir_ / "bin" / name;
        std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
        fs::permissions(p, fs::perms::owner_all);
    }
    fs::path dir_;
};

std::string slurp(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST_F(DumpSassTest, FindsAToolOnThePathBeforeTheToolkitHomes) {
    tool("cuobjdump", "exit 0");
    ScopedEnv path("PATH", "/nonexistent:" + (dir_ / "bin").string());
    std::optional<std::string> found = detail::find_cuda_tool("cuobjdump");
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, (dir_ / "bin" / "cuobjdump").string());
    // A file that is not executable is not a tool.
    std::ofstream(dir_ / "bin" / "nvdisasm") << "not a program\n";
    fs::permissions(dir_ / "bin" / "nvdisasm", fs::perms::owner_read | fs::perms::owner_write);
    std::optional<std::string> nv = detail::find_cuda_tool("nvdisasm");
    EXPECT_NE(nv, (dir_ / "bin" / "nvdisasm").string());
}

TEST_F(DumpSassTest, CuobjdumpGetsTheCubinAndItsOutputIsTheSass) {
    // The stand-in checks its option and echoes the file it was given.
    tool("cuobjdump", "[ \"$1\" = -sass ] || exit 9\necho \"code for sm_90\"\ncat \"$2\"");
    ScopedEnv path("PATH", (dir_ / "bin").string() + ":/usr/bin:/bin");
    const std::string cubin("\x7f" "ELF\0binary\xff", 12);
    std::string why;
    std::optional<std::string> sass = detail::disassemble_cubin(cubin, why);
    ASSERT_TRUE(sass) << why;
    EXPECT_EQ(*sass, "code for sm_90\n" + cubin);
}

TEST_F(DumpSassTest, NvdisasmServesWhenThereIsNoCuobjdump) {
    tool("nvdisasm", "[ \"$1\" = -c ] || exit 9\nwc -c < \"$2\"");
    ScopedEnv path("PATH", (dir_ / "bin").string() + ":/usr/bin:/bin");
    ScopedEnv home("CUDA_HOME", "");
    ScopedEnv cpath("CUDA_PATH", "");
    if (std::optional<std::string> real = detail::find_cuda_tool("cuobjdump"))
        GTEST_SKIP() << *real << " is found before a stand-in nvdisasm on this machine";
    std::string why;
    std::optional<std::string> sass = detail::disassemble_cubin(std::string(1000, 'x'), why);
    ASSERT_TRUE(sass) << why;
    EXPECT_EQ(*sass, "1000\n");
}

TEST_F(DumpSassTest, AFailingToolIsReportedWithItsStatusAndMessage) {
    tool("cuobjdump", "echo 'cuobjdump fatal   : Could not open input file' >&2\nexit 3");
    ScopedEnv path("PATH", (dir_ / "bin").string());
    std::string why;
    EXPECT_FALSE(detail::disassemble_cubin("bytes", why));
    EXPECT_NE(why.find("exited with status 3: cuobjdump fatal   : Could not open input file"), std::string::npos)
        << why;
}

TEST_F(DumpSassTest, NoToolSaysWhereItLooked) {
    if (fs::exists("/usr/local/cuda/bin/cuobjdump") || fs::exists("/usr/local/cuda/bin/nvdisasm"))
        GTEST_SKIP() << "the CUDA toolkit is installed in /usr/local/cuda on this machine";
    ScopedEnv path("PATH", (dir_ / "bin").string());
    ScopedEnv home("CUDA_HOME", "");
    ScopedEnv cpath("CUDA_PATH", "");
    std::string why;
    EXPECT_FALSE(detail::disassemble_cubin("bytes", why));
    EXPECT_NE(why.find("neither cuobjdump nor nvdisasm"), std::string::npos) << why;
}

TEST_F(DumpSassTest, AKernelOnAnNvidiaGpuDumpsItsSass) {
    if (detail::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    if (!detail::find_cuda_tool("cuobjdump") && !detail::find_cuda_tool("nvdisasm"))
        GTEST_SKIP() << "no cuobjdump or nvdisasm (CUDA toolkit) on this machine";
    // EMBER_DUMP is read once per process: the check runs in a fresh one (a threadsafe death test
    // re-executes this test alone), which exits 0 only when the SASS file is right.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const fs::path out = dir_ / "dumps";
    auto check = [&]() -> int {
        ::setenv("EMBER_DUMP", "sass", 1);
        ::setenv("EMBER_DUMP_DIR", out.c_str(), 1);
        auto k = kernel("sass_scale", {"v", "n"}, [](Ptr<float> v, Int n) {
            auto i = global_idx.x;
            if_(i < n, [&] { v[i] = v[i] * 2.0f; });
        });
        DeviceContext ctx(0, "cuda");
        auto f = ctx.compile_function(k);
        auto buf = ctx.enqueue_create_buffer<float>(4);
        ctx.enqueue_memset(buf, 1.0f);
        ctx.enqueue_function(f, buf, int64_t(4), grid_dim(1), block_dim(4));
        ctx.synchronize();
        int files = 0;
        for (const auto &e : fs::directory_iterator(out)) {
            const std::string name = e.path().filename().string();
            if (name.rfind("sass_scale.", 0) != 0 || e.path().extension() != ".sass") {
                std::fprintf(stderr, "unexpected dump file %s\n", name.c_str());
                return 2;
            }
            ++files;
            const std::string sass = slurp(e.path());
            // SASS, not PTX: Hopper's exit instruction in capitals, and the kernel's name.
            if (sass.find("EXIT") == std::string::npos || sass.find("sass_scale") == std::string::npos) {
                std::fprintf(stderr, "%s is not SASS of sass_scale:\n%s\n", name.c_str(), sass.c_str());
                return 3;
            }
        }
        return files == 1 ? 0 : 4;
    };
    EXPECT_EXIT(std::exit(check()), ::testing::ExitedWithCode(0), "");
}

} // namespace
