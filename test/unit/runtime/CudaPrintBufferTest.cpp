// ember's print buffer ([Note] Print buffer in ember/compiler/PrintBuffer.h), run on an NVIDIA GPU:
// AMDGPU kernels always print through it, and no machine here has an AMD GPU, so these tests
// compile for NVPTX with CompileOptions::print_to_buffer and run the whole path on the CUDA back
// end, which is the HIP back end's code: the records written by the generated code, the buffer
// attached at load, drained at synchronize, emptied, and a full buffer counted and reported.
#include "ember/ember.h"

#include "Backend.h"
#include "cuda/CudaDriver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace ember;
using namespace ember::detail;

namespace {

const auto buffer_print = kernel("buffer_print", {"v"}, [](Ptr<int32_t> v) {
    auto i = global_idx.x;
    print("thread", i, "value", v[i], "half", cast<float>(v[i]) * 0.5f, "odd", (v[i] & 1) == 1, "100%");
});

std::vector<std::string> sorted_lines(const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
}

class CudaPrintBufferTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
        backend_ = make_cuda_backend(0);
        CompileOptions options;
        options.print_to_buffer = true;
        CompiledKernel ck = compile(buffer_print.ir(), backend_->target(), options);
        ASSERT_NE(ck.binary.find("ember_print_buffer"), std::string::npos);
        ASSERT_EQ(ck.binary.find("vprintf"), std::string::npos);
        fn_ = backend_->load(ck);
    }
    void TearDown() override {
        if (v_) backend_->deallocate(v_);
    }
    /// Launches `blocks` x `threads` over values 3 * i - 100 and returns what the synchronize printed.
    std::string run(int64_t blocks, int64_t threads) {
        const int64_t n = blocks * threads;
        std::vector<int32_t> host(n);
        for (int64_t i = 0; i < n; ++i) host[i] = int32_t(3 * i - 100);
        if (v_) backend_->deallocate(v_);
        v_ = backend_->allocate(n * sizeof(int32_t));
        backend_->default_stream()->copy_to_device(v_, host.data(), n * sizeof(int32_t));
        void *args[] = {&v_};
        LaunchDims d;
        d.grid = {blocks, 1, 1};
        d.block = {threads, 1, 1};
        ::testing::internal::CaptureStdout();
        backend_->default_stream()->launch(*fn_, "buffer_print", d, args, 1);
        backend_->default_stream()->synchronize();
        return ::testing::internal::GetCapturedStdout();
    }
    std::shared_ptr<Backend> backend_;
    std::unique_ptr<LoadedFunction> fn_;
    DeviceAddress v_ = 0;
};

TEST_F(CudaPrintBufferTest, EveryThreadPrintsOneLineAtTheSynchronize) {
    const std::string out = run(2, 32);
    std::vector<std::string> want;
    for (int i = 0; i < 64; ++i) {
        const int v = 3 * i - 100;
        char line[128];
        std::snprintf(line, sizeof line, "thread %d value %d half %g odd %s 100%%", i, v, double(float(v) * 0.5f),
                      (v & 1) == 1 ? "True" : "False");
        want.push_back(line);
    }
    std::sort(want.begin(), want.end());
    EXPECT_EQ(sorted_lines(out), want) << out;
    // The buffer was emptied: a second launch prints its own lines only.
    EXPECT_EQ(sorted_lines(run(1, 8)).size(), 8u);
}

TEST_F(CudaPrintBufferTest, AFullBufferDropsLinesAndSaysSo) {
    // 65536 records of 88 bytes: 5.5 MiB, more than the buffer's 1 MiB.
    ::testing::internal::CaptureStderr();
    const std::string out = run(256, 256);
    const std::string err = ::testing::internal::GetCapturedStderr();
    const size_t lines = sorted_lines(out).size();
    EXPECT_GT(lines, 1000u);
    EXPECT_LT(lines, 65536u);
    // Every line is printed or counted: the warning names the rest.
    const size_t at = err.find("ember: warning: ");
    ASSERT_NE(at, std::string::npos) << err;
    const unsigned long long dropped = std::stoull(err.substr(at + 16));
    EXPECT_EQ(lines + dropped, 65536u) << err;
    EXPECT_NE(err.find(" line(s) printed by kernels on device 0"), std::string::npos) << err;
    // Emptied again: the next synchronize prints every line of a small launch.
    EXPECT_EQ(sorted_lines(run(1, 16)).size(), 16u);
}

} // namespace
