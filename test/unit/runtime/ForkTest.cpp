/// \file
/// fork() after the CPU device was used: the child's first launch of several blocks used to wait
/// forever for the parent's pool threads, which do not exist in the child ([Note] CPU device and
/// fork in runtime/lib/cpu/CpuBackend.cpp). Each test forks, runs kernels in the child, which
/// checks their results and leaves with _exit(status); the parent waits for it (killing it after
/// a minute, so that a hang fails the test instead of the suite) and checks the status. No death
/// tests, no timing: the time limit only guards against a hang.
#include "ember/ember.h"

#include <gtest/gtest.h>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

using namespace ember;

namespace {

const auto fill = kernel("fork_fill", {"v", "n", "base"}, [](Ptr<int32_t> v, Int n, Int32 base) {
    auto i = global_idx.x;
    if_(i < n, [&] { v[i] = base + cast<int32_t>(i); });
});

/// Waits until `flag[0]` is not 0; block 0's thread 0 first sets `started[0]` to 1.
const auto wait_for_flag = kernel("fork_wait_for_flag", {"flag", "started"}, [](Ptr<int32_t> flag, Ptr<int32_t> started) {
    if_(global_idx.x == 0, [&] { atomic_exchange(started[0], 1); });
    while_([&] { return atomic_add(flag[0], 0) == 0; }, [] {});
});

/// 0 when `v` holds base, base + 1, ...; 1 otherwise.
int check_fill(DeviceContext &ctx, const DeviceBuffer<int32_t> &d, int32_t base) {
    std::vector<int32_t> v(d.size());
    ctx.enqueue_copy(v.data(), d);
    ctx.synchronize();
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i] != base + int32_t(i)) {
            std::fprintf(stderr, "child: element %zu is %d, not %d\n", i, v[i], base + int32_t(i));
            return 1;
        }
    return 0;
}

/// Runs `child` in a child of fork(), which leaves with its result as exit status (97 to 99 when
/// it threw); returns the status, or -1 when the child did not end within a minute (then it is
/// killed).
template <class F> int in_child(F &&child) {
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) return -2;
    if (pid == 0) {
        int rc = 99;
        try {
            rc = child();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "child: %s\n", e.what());
            rc = 98;
        } catch (...) {
            rc = 97;
        }
        std::fflush(stderr);
        _exit(rc);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    for (;;) {
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0) return -2;
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

constexpr int64_t kN = 64 * 256;

TEST(CpuForkTest, AChildRunsLaunchesOfManyBlocks) {
    DeviceContext ctx(0, "cpu");
    auto d = ctx.enqueue_create_buffer<int32_t>(kN);
    // The parent's pool exists before the fork.
    ctx.enqueue_function(fill, d, kN, 1, grid_dim(64), block_dim(256));
    ASSERT_EQ(check_fill(ctx, d, 1), 0);
    const int status = in_child([&] {
        ctx.enqueue_function(fill, d, kN, 7, grid_dim(64), block_dim(256));
        if (int rc = check_fill(ctx, d, 7)) return rc;
        DeviceContext fresh(0, "cpu");
        auto e = fresh.enqueue_create_buffer<int32_t>(kN);
        fresh.enqueue_function(fill, e, kN, -3, grid_dim(64), block_dim(256));
        if (check_fill(fresh, e, -3)) return 2;
        // A child of the child too.
        return in_child([&] {
            fresh.enqueue_function(fill, e, kN, 11, grid_dim(64), block_dim(256));
            return check_fill(fresh, e, 11);
        });
    });
    EXPECT_EQ(status, 0) << (status == -1 ? "the child hung" : "the child failed");
    // The parent's pool goes on working.
    ctx.enqueue_function(fill, d, kN, 5, grid_dim(64), block_dim(256));
    EXPECT_EQ(check_fill(ctx, d, 5), 0);
}

TEST(CpuForkTest, AChildForkedWhileTheParentLaunches) {
    DeviceContext ctx(0, "cpu");
    auto flag = ctx.enqueue_create_buffer<int32_t>(1);
    auto started = ctx.enqueue_create_buffer<int32_t>(1);
    ctx.enqueue_memset(flag, 0);
    ctx.enqueue_memset(started, 0);
    auto d = ctx.enqueue_create_buffer<int32_t>(kN);
    ctx.enqueue_function(fill, d, kN, 0, grid_dim(64), block_dim(256)); // compiled before the fork
    // CPU-device memory is host memory: the host may watch and release the running kernel.
    auto *flag_word = reinterpret_cast<std::atomic<int32_t> *>(flag.address());
    auto *started_word = reinterpret_cast<std::atomic<int32_t> *>(started.address());
    // A launch of many blocks, which holds the parent's pool until the flag is set.
    std::exception_ptr error;
    std::thread launcher([&] {
        try {
            ctx.enqueue_function(wait_for_flag, flag, started, grid_dim(64), block_dim(32));
        } catch (...) {
            error = std::current_exception();
        }
    });
    while (started_word->load() == 0) std::this_thread::yield();
    const int status = in_child([&] {
        ctx.enqueue_function(fill, d, kN, 3, grid_dim(64), block_dim(256));
        return check_fill(ctx, d, 3);
    });
    flag_word->store(1);
    launcher.join();
    EXPECT_EQ(status, 0) << (status == -1 ? "the child hung" : "the child failed");
    EXPECT_FALSE(error);
}

} // namespace
