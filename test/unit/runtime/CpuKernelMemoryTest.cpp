/// \file
/// The memory CPU-device kernels run in ([Note] CPU kernel memory in compiler/lib/CpuFibers.h):
/// shared memory used to be an alloca on the stack of the pool thread (so an index past the
/// launch's shared_mem_bytes overwrote return addresses: SIGSEGV, or silently wrong results), and
/// local arrays lived on that stack too (a kernel whose local arrays exceed a thread's stack
/// crashed). Now every shared-memory access is checked against the block's shared memory and one
/// outside it fails the launch with a LaunchError naming the kernel, the offset and the size; and
/// kernels run on stacks sized for their local arrays. CPU device only: a GPU does not check
/// shared-memory accesses.
#include "ember/ember.h"

#include "ContextImpl.h"
#include "ExpectError.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

template <class F> void expect_launch_error(F &&f, std::initializer_list<std::string> parts) {
    ember::testing::expect_error<LaunchError>(f, parts);
}

// Each thread writes dynamic shared element `at + thread_idx.x` and, after a barrier, thread 0
// sums the first `n` elements.
const auto dynamic_writes = kernel("mem_dynamic_writes", {"out", "at", "n"}, [](Ptr<int32_t> out, Int at, Int n) {
    auto s = dynamic_shared<int32_t>();
    s[at + thread_idx.x] = cast<int32_t>(thread_idx.x + 1);
    barrier();
    if_(thread_idx.x == 0, [&] {
        Var<int32_t> sum(0);
        for_(0, n, [&](Int j) { sum += s[j]; });
        out[block_idx.x] = sum;
    });
});

// The same without a barrier (threads run as loop iterations, not fibers): each thread writes
// and reads back its own element.
const auto dynamic_no_barrier = kernel("mem_dynamic_no_barrier", {"out", "at"}, [](Ptr<int32_t> out, Int at) {
    auto s = dynamic_shared<int32_t>();
    s[at + thread_idx.x] = cast<int32_t>(thread_idx.x * 3);
    out[global_idx.x] = s[at + thread_idx.x];
});

// Static shared memory: 16 ints; a load at `at`.
const auto static_read = kernel("mem_static_read", {"out", "at"}, [](Ptr<int32_t> out, Int at) {
    auto s = shared_array<int32_t, 16>();
    s[thread_idx.x] = cast<int32_t>(thread_idx.x);
    barrier();
    out[thread_idx.x] = s[at];
});

// An atomic on shared memory at `at`.
const auto static_atomic = kernel("mem_static_atomic", {"out", "at"}, [](Ptr<int32_t> out, Int at) {
    auto s = shared_array<int32_t, 4>();
    if_(thread_idx.x == 0, [&] { s[0] = 0; });
    barrier();
    atomic_add(s[at], 1, MemoryScope::Block);
    barrier();
    if_(thread_idx.x == 0, [&] { out[0] = s[0]; });
});

class CpuSharedMemoryCheck : public ::testing::Test {
protected:
    DeviceContext ctx{0, "cpu"};
    std::vector<int32_t> read(const DeviceBuffer<int32_t> &b) {
        std::vector<int32_t> v(b.size());
        ctx.enqueue_copy(v.data(), b);
        return v;
    }
};

TEST_F(CpuSharedMemoryCheck, AccessesInsideTheSharedMemoryRun) {
    auto out = ctx.enqueue_create_buffer<int32_t>(64);
    // 16 ints of dynamic shared memory, all written (the last one included) and summed.
    ctx.enqueue_function(dynamic_writes, out, 0, 16, grid_dim(4), block_dim(16), shared_mem_bytes(64));
    std::vector<int32_t> v = read(out);
    for (int b = 0; b < 4; ++b) EXPECT_EQ(v[b], 16 * 17 / 2) << "block " << b;
    ctx.enqueue_function(dynamic_no_barrier, out, 0, grid_dim(2), block_dim(32), shared_mem_bytes(128));
    v = read(out);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(v[i], (i % 32) * 3) << "element " << i;
    ctx.enqueue_function(static_read, out, 15, grid_dim(1), block_dim(16));
    EXPECT_EQ(read(out)[3], 15);
    ctx.enqueue_function(static_atomic, out, 0, grid_dim(1), block_dim(64));
    EXPECT_EQ(read(out)[0], 64);
}

TEST_F(CpuSharedMemoryCheck, AStorePastTheDynamicSharedMemoryIsALaunchError) {
    auto out = ctx.enqueue_create_buffer<int32_t>(64);
    // Thread 15 writes element 16 of a 16-element (64-byte) dynamic shared memory.
    expect_launch_error(
        [&] { ctx.enqueue_function(dynamic_writes, out, 1, 16, grid_dim(2), block_dim(16), shared_mem_bytes(64)); },
        {"kernel 'mem_dynamic_writes'", "shared-memory store of 4 bytes at offset 64", "thread (15, 0, 0)",
         "outside the block's 64 bytes of shared memory"});
    // Far past it (4 MiB): it used to overwrite the pool thread's stack.
    expect_launch_error(
        [&] {
            ctx.enqueue_function(dynamic_writes, out, 1 << 20, 16, grid_dim(8), block_dim(16), shared_mem_bytes(64));
        },
        {"kernel 'mem_dynamic_writes'", "at offset 4194304", "64 bytes of shared memory"});
    // Before it.
    expect_launch_error(
        [&] {
            ctx.enqueue_function(dynamic_no_barrier, out, -1000, grid_dim(2), block_dim(32), shared_mem_bytes(128));
        },
        {"kernel 'mem_dynamic_no_barrier'", "store of 4 bytes at offset -4000", "128 bytes of shared memory"});
    // Without shared_mem_bytes, a kernel's dynamic shared memory is empty.
    expect_launch_error([&] { ctx.enqueue_function(dynamic_no_barrier, out, 0, grid_dim(1), block_dim(4)); },
                        {"mem_dynamic_no_barrier", "offset 0", "block's 0 bytes of shared memory"});
    // The context goes on working.
    ctx.enqueue_function(dynamic_writes, out, 0, 16, grid_dim(1), block_dim(16), shared_mem_bytes(64));
    EXPECT_EQ(read(out)[0], 136);
}

TEST_F(CpuSharedMemoryCheck, LoadsAndAtomicsOutsideTheStaticSharedMemoryAreLaunchErrors) {
    auto out = ctx.enqueue_create_buffer<int32_t>(16);
    expect_launch_error([&] { ctx.enqueue_function(static_read, out, 16, grid_dim(1), block_dim(16)); },
                        {"kernel 'mem_static_read'", "shared-memory load of 4 bytes at offset 64",
                         "outside the block's 64 bytes"});
    expect_launch_error([&] { ctx.enqueue_function(static_atomic, out, 1 << 24, grid_dim(1), block_dim(8)); },
                        {"kernel 'mem_static_atomic'", "store of 4 bytes at offset 67108864",
                         "outside the block's 16 bytes"});
    // Dynamic shared memory after the static arrays counts: 16 static + 16 dynamic bytes.
    ctx.enqueue_function(static_atomic, out, 7, grid_dim(1), block_dim(8), shared_mem_bytes(16));
    expect_launch_error(
        [&] { ctx.enqueue_function(static_atomic, out, 8, grid_dim(1), block_dim(8), shared_mem_bytes(16)); },
        {"at offset 32", "outside the block's 32 bytes"});
}

// Local arrays bigger than a thread's stack: a chain of device functions, each holding a 512 KiB
// array (the most one function may have) live across its call of the next: 24 of them need
// 12 MiB per thread, more than the 8 MiB of a pool thread (or of the main thread). The arrays are
// indexed by values known at run time only, so they stay in memory.
constexpr int64_t kChunk = 64 * 1024; // int64 elements: 512 KiB
DeviceFn<Value<int64_t>(Int)> local_chain(int depth) {
    auto leaf = device_function("mem_chain_leaf", [](Int seed) { return Value<int64_t>(seed); });
    DeviceFn<Value<int64_t>(Int)> prev = leaf;
    for (int d = 1; d <= depth; ++d) {
        prev = device_function("mem_chain_" + std::to_string(d), [prev](Int seed) {
            auto a = local_array<int64_t, kChunk>();
            Int i = seed % kChunk, j = (seed * 7919 + 13) % kChunk;
            a[i] = seed;
            a[j] = seed * 2;
            Value<int64_t> inner = prev(seed + 1);
            return inner + a[i] + a[j];
        });
    }
    return prev;
}
int64_t chain_value(int64_t seed, int depth) {
    int64_t v = seed + depth; // the leaf's
    for (int d = 0; d < depth; ++d) {
        const int64_t s = seed + d;
        const bool same = s % kChunk == (s * 7919 + 13) % kChunk;
        v += same ? 4 * s : 3 * s;
    }
    return v;
}
constexpr int kDepth = 24;
const auto chain = local_chain(kDepth);
const auto deep_locals = kernel("mem_deep_locals", {"out"}, [](Ptr<int64_t> out) {
    out[global_idx.x] = chain(global_idx.x * 1000);
});

TEST(CpuKernelStacks, LocalArraysBiggerThanAThreadStackWithoutBarriers) {
    DeviceContext ctx(0, "cpu");
    auto f = ctx.compile_function(deep_locals);
    EXPECT_EQ(f.impl()->compiled.local_bytes, uint64_t(kDepth * kChunk * 8));
    const int64_t blocks = 6, threads = 2;
    auto out = ctx.enqueue_create_buffer<int64_t>(blocks * threads);
    ctx.enqueue_function(f, out, grid_dim(blocks), block_dim(threads));
    std::vector<int64_t> v(out.size());
    ctx.enqueue_copy(v.data(), out);
    for (int64_t i = 0; i < blocks * threads; ++i) EXPECT_EQ(v[i], chain_value(i * 1000, kDepth)) << "thread " << i;
}

// One block runs on the launching thread itself: a thread with a small stack (128 KiB) launches
// a kernel with a 384 KiB local array.
constexpr int64_t kMid = 48 * 1024;
const auto mid_locals = kernel("mem_mid_locals", {"out", "seed"}, [](Ptr<int64_t> out, Int seed) {
    auto a = local_array<int64_t, kMid>();
    for_(0, kMid, [&](Int j) { a[j] = seed + j; });
    Var<int64_t> sum(0);
    for_(0, kMid, [&](Int j) { sum += a[(j * 7919) % kMid]; });
    out[thread_idx.x] = sum;
});

struct SmallStackLaunch {
    DeviceContext *ctx;
    DeviceBuffer<int64_t> *out;
    std::string error;
};

void *launch_on_small_stack(void *arg) {
    auto *l = static_cast<SmallStackLaunch *>(arg);
    try {
        l->ctx->enqueue_function(mid_locals, *l->out, 5, grid_dim(1), block_dim(2));
    } catch (const std::exception &e) {
        l->error = e.what();
    }
    return nullptr;
}

TEST(CpuKernelStacks, AOneBlockLaunchFromAThreadWithASmallStack) {
    DeviceContext ctx(0, "cpu");
    auto out = ctx.enqueue_create_buffer<int64_t>(2);
    (void)ctx.compile_function(mid_locals); // compiled here, on a normal stack
    ctx.enqueue_function(mid_locals, out, 5, grid_dim(1), block_dim(2));
    SmallStackLaunch l{&ctx, &out, ""};
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, 128 * 1024), 0);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, &attr, &launch_on_small_stack, &l), 0);
    pthread_join(t, nullptr);
    pthread_attr_destroy(&attr);
    EXPECT_EQ(l.error, "");
    std::vector<int64_t> v(2);
    ctx.enqueue_copy(v.data(), out);
    EXPECT_EQ(v[0], 5 * kMid + kMid * (kMid - 1) / 2);
}

// Local arrays need at most 64 MiB (plus a margin) per thread: above, a LaunchError naming the
// kernel and the limit, also without barriers (six calls of the 12 MiB chain: 72 MiB).
const auto too_deep_locals = kernel("mem_too_deep_locals", {"out"}, [](Ptr<int64_t> out) {
    Var<int64_t> acc(0);
    for (int i = 0; i < 6; ++i) acc += chain(Int(global_idx.x) + i);
    out[0] = acc;
});

TEST(CpuKernelStacks, MoreLocalArraysThanTheLimitIsALaunchError) {
    DeviceContext ctx(0, "cpu");
    auto out = ctx.enqueue_create_buffer<int64_t>(1);
    expect_launch_error([&] { ctx.enqueue_function(too_deep_locals, out, grid_dim(1), block_dim(1)); },
                        {"kernel 'mem_too_deep_locals'", std::to_string(6 * kDepth * kChunk * 8) + " bytes of local arrays",
                         "limit of " + std::to_string((64 << 20) + (128 << 10)) + " bytes"});
}

} // namespace
