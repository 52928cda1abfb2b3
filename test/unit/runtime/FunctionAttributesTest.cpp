/// \file
/// Function attributes, compile-time function attributes (the dynamic shared memory opt-in),
/// cache preference, occupancy, and launches with attributes (clusters, priorities, cooperative
/// grids) on every api. CUDA cases skip with a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

constexpr int64_t kBlock = 128;

// 1000 floats of static shared memory (4000 bytes) and 64 floats of local memory per thread,
// indexed by run-time values so that neither can be optimised away.
const auto staged = kernel("staged", {"in", "out", "n"}, [](Ptr<float> in, Ptr<float> out, Int n) {
    auto tile = shared_array<float, 1000>();
    auto scratch = local_array<float, 64>();
    auto t = thread_idx.x;
    auto i = global_idx.x;
    for_(t, int64_t{1000}, block_dim.x, [&](Int j) { tile[j] = in[j % n]; });
    barrier();
    for_(int64_t{0}, int64_t{64}, [&](Int j) { scratch[j] = tile[(t * 7 + j) % 1000]; });
    if_(i < n, [&] { out[i] = scratch[(i * 13) % 64] + scratch[t % 64]; });
});

// A local array in the kernel and one in a device function it calls: the local size counts both
// (the compiler's one figure, CompiledKernel::local_bytes, which also sizes the CPU device's
// fiber stacks).
const auto sum_of_squares = device_function("sum_of_squares", [](Ptr<float> in, Int i) {
    auto squares = local_array<float, 32>(); // 128 bytes
    for_(int64_t{0}, int64_t{32}, [&](Int j) { squares[j] = in[(i + j) % 64] * in[(i + j) % 64]; });
    Var<float> sum(0.0f);
    for_(int64_t{0}, int64_t{32}, [&](Int j) { sum = sum + squares[j]; });
    return Float32(sum);
});
const auto with_a_callee = kernel("with_a_callee", {"in", "out"}, [](Ptr<float> in, Ptr<float> out) {
    auto own = local_array<float, 16>(); // 64 bytes
    auto i = global_idx.x;
    for_(int64_t{0}, int64_t{16}, [&](Int j) { own[j] = in[(i + j) % 64]; });
    out[i] = own[i % 16] + sum_of_squares(in, i);
});

// Every thread writes its dynamic shared slot and reads its neighbour's, so the whole
// `shared_mem_bytes` area is used.
const auto neighbours = kernel("neighbours", {"out", "per_thread"}, [](Ptr<float> out, Int per_thread) {
    auto mem = dynamic_shared<float>();
    auto t = thread_idx.x;
    auto i = global_idx.x;
    for_(0, per_thread, [&](Int k) { mem[t * per_thread + k] = cast<float>(i * 10 + k); });
    barrier();
    auto other = (t + 1) % block_dim.x;
    Var<float> sum(0.0f);
    for_(0, per_thread, [&](Int k) { sum += mem[other * per_thread + k]; });
    out[i] = sum;
});

const auto iota = kernel("iota", {"out", "n"}, [](Ptr<int64_t> out, Int n) {
    auto i = global_idx.x + global_idx.y * grid_dim.x * block_dim.x;
    if_(i < n, [&] { out[i] = i * 3 + 1; });
});

class FunctionAttributesTest : public ember::testing::DeviceTest {
protected:
    bool cuda() const { return GetParam() == "cuda"; }
    /// 90 for nvptx:sm_90.
    int sm() const {
        std::string t = ctx_->target();
        auto pos = t.find("sm_");
        return pos == std::string::npos ? 0 : std::stoi(t.substr(pos + 3));
    }
};
class OccupancyTest : public FunctionAttributesTest {};
class LaunchAttributeTest : public FunctionAttributesTest {
protected:
    void expect_iota(const DeviceBuffer<int64_t> &dev, int64_t n) {
        std::vector<int64_t> host(n, -1);
        ctx().enqueue_copy(host.data(), dev);
        ctx().synchronize();
        for (int64_t i = 0; i < n; ++i)
            if (host[i] != i * 3 + 1) {
                ADD_FAILURE() << "element " << i << " is " << host[i] << ", want " << i * 3 + 1;
                return;
            }
    }
};

template <class F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const LogicError &e) {
        return e.what();
    }
    return "(no LogicError)";
}

TEST_P(FunctionAttributesTest, LocalSizeCountsTheCallees) {
    auto f = ctx().compile_function(with_a_callee);
    // The driver may keep small local arrays in registers; the CPU device reports ember's figure.
    if (!cuda()) {
        EXPECT_EQ(f.local_size_bytes(), 64 + 128);
    }
    std::vector<float> in(64);
    for (int k = 0; k < 64; ++k) in[k] = float(k % 7) - 3.0f;
    auto din = ctx().enqueue_create_buffer<float>(64);
    auto dout = ctx().enqueue_create_buffer<float>(64);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(f, din, dout, grid_dim(1), block_dim(64));
    std::vector<float> out(64);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int i = 0; i < 64; ++i) {
        float sum = 0.0f;
        for (int j = 0; j < 32; ++j) sum += in[(i + j) % 64] * in[(i + j) % 64];
        EXPECT_EQ(out[i], in[(i + i % 16) % 64] + sum) << "thread " << i;
    }
}

TEST_P(FunctionAttributesTest, SizesOfAKernelWithSharedAndLocalArrays) {
    auto f = ctx().compile_function(staged);
    EXPECT_GE(f.shared_size_bytes(), 4000);
    EXPECT_EQ(f.shared_size_bytes(), f.get_attribute(FunctionAttribute::shared_size_bytes));
    EXPECT_GE(f.local_size_bytes(), 256);
    EXPECT_GE(f.const_size_bytes(), 0);
    EXPECT_GE(f.max_threads_per_block(), kBlock);
    EXPECT_LE(f.max_threads_per_block(), 1024);
    int dyn = f.get_attribute(FunctionAttribute::max_dynamic_shared_size_bytes);
    EXPECT_GT(dyn, 0);
    EXPECT_LE(dyn + f.shared_size_bytes(), 48 * 1024);
    EXPECT_EQ(f.get_attribute(FunctionAttribute::cache_mode_ca), 0);
    if (cuda()) {
        EXPECT_GT(f.num_regs(), 0);
        EXPECT_LE(f.num_regs(), 255);
        EXPECT_GE(f.ptx_version(), 60); // PTX ISA 6.0 or newer from LLVM 19
        EXPECT_EQ(f.binary_version(), sm());
    } else {
        // The CPU device: what ember knows from the IR, no registers, no PTX.
        EXPECT_EQ(f.shared_size_bytes(), 4000);
        EXPECT_EQ(f.local_size_bytes(), 256);
        EXPECT_EQ(f.num_regs(), 0);
        EXPECT_EQ(f.ptx_version(), 0);
        EXPECT_EQ(f.binary_version(), 0);
        EXPECT_EQ(f.max_threads_per_block(), 1024);
        EXPECT_EQ(dyn, 48 * 1024 - 4000);
    }
    // And it runs.
    const int64_t n = 1000;
    std::vector<float> in(n);
    for (int64_t i = 0; i < n; ++i) in[i] = float(i);
    auto din = ctx().enqueue_create_buffer<float>(n);
    auto dout = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(f, din, dout, n, grid_dim((n + kBlock - 1) / kBlock), block_dim(kBlock));
    std::vector<float> out(n);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) {
        int64_t t = i % kBlock;
        float want = in[(t * 7 + (i * 13) % 64) % 1000 % n] + in[(t * 7 + t % 64) % 1000 % n];
        ASSERT_EQ(out[i], want) << "i=" << i;
    }
}

TEST_P(FunctionAttributesTest, DynamicSharedAbove48KiBNeedsTheOptIn) {
    constexpr int64_t threads = 128, per_thread = 128; // 128 * 128 * 4 = 64 KiB
    constexpr int64_t bytes = threads * per_thread * 4;
    auto out = ctx().enqueue_create_buffer<float>(2 * threads);
    auto plain = ctx().compile_function(neighbours);
    std::string msg = error_of([&] {
        ctx().enqueue_function(plain, out, per_thread, grid_dim(2), block_dim(threads), shared_mem_bytes(bytes));
    });
    EXPECT_NE(msg.find("neighbours"), std::string::npos) << msg;
    EXPECT_NE(msg.find("max_dynamic_shared_size_bytes"), std::string::npos) << msg;

    CompileFunctionOptions opts;
    opts.func_attribute = {FuncAttribute::max_dynamic_shared_size_bytes(int(bytes)),
                           FuncAttribute::cache_preference(CacheConfig::prefer_shared)};
    auto opted = ctx().compile_function(neighbours, opts);
    EXPECT_EQ(opted.get_attribute(FunctionAttribute::max_dynamic_shared_size_bytes), bytes);
    ctx().enqueue_function(opted, out, per_thread, grid_dim(2), block_dim(threads), shared_mem_bytes(bytes));
    std::vector<float> host(2 * threads);
    ctx().enqueue_copy(host.data(), out);
    ctx().synchronize();
    for (int64_t i = 0; i < 2 * threads; ++i) {
        int64_t block = i / threads, other = block * threads + (i % threads + 1) % threads;
        float want = 0;
        for (int64_t k = 0; k < per_thread; ++k) want += float(other * 10 + k);
        ASSERT_EQ(host[i], want) << "i=" << i;
    }
    // Above the kernel's own limit: rejected before the driver.
    msg = error_of([&] {
        ctx().enqueue_function(opted, out, per_thread, grid_dim(2), block_dim(threads), shared_mem_bytes(bytes + 16));
    });
    EXPECT_NE(msg.find(std::to_string(bytes)), std::string::npos) << msg;

    // The same opt-in at run time, on the function compiled without it.
    plain.set_attribute(FunctionAttribute::max_dynamic_shared_size_bytes, int(bytes));
    ctx().enqueue_function(plain, out, per_thread, grid_dim(2), block_dim(threads), shared_mem_bytes(bytes));
    ctx().synchronize();
}

TEST_P(FunctionAttributesTest, SetAttributeChecksWhatAndHowMuch) {
    auto f = ctx().compile_function(staged);
    std::string msg = error_of([&] { f.set_attribute(FunctionAttribute::num_regs, 32); });
    EXPECT_NE(msg.find("read-only"), std::string::npos) << msg;
    EXPECT_NE(msg.find("num_regs"), std::string::npos) << msg;
    // More than the device's opt-in maximum (227 KiB on H100 and on the CPU device).
    msg = error_of([&] { f.set_attribute(FunctionAttribute::max_dynamic_shared_size_bytes, 1 << 20); });
    EXPECT_NE(msg.find("max_dynamic_shared_size_bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4000 bytes of static shared memory"), std::string::npos) << msg;
    msg = error_of([&] { f.set_attribute(FunctionAttribute::preferred_shared_memory_carveout, 150); });
    EXPECT_NE(msg.find("-1..100"), std::string::npos) << msg;
    msg = error_of([&] {
        CompileFunctionOptions o;
        o.func_attribute = {FuncAttribute::set(FunctionAttribute::binary_version, 1)};
        ctx().compile_function(staged, o);
    });
    EXPECT_NE(msg.find("compile_function"), std::string::npos) << msg;

    f.set_attribute(FunctionAttribute::preferred_shared_memory_carveout, 50);
    EXPECT_EQ(f.get_attribute(FunctionAttribute::preferred_shared_memory_carveout), 50);
    for (CacheConfig c : {CacheConfig::prefer_none, CacheConfig::prefer_shared, CacheConfig::prefer_l1,
                          CacheConfig::prefer_equal})
        f.set_cache_config(c);
    EXPECT_THROW(f.set_cache_config(static_cast<CacheConfig>(7)), LogicError);
    EXPECT_EQ(to_string(FunctionAttribute::local_size_bytes), "local_size_bytes");
    DeviceFunction<Ptr<float>> empty(nullptr);
    EXPECT_THROW(empty.num_regs(), LogicError);
}

TEST_P(OccupancyTest, ActiveBlocksAndSuggestedBlockSize) {
    auto f = ctx().compile_function(iota);
    int blocks = f.max_active_blocks_per_multiprocessor(256);
    EXPECT_GE(blocks, 1);
    EXPECT_LE(blocks, 64);
    EXPECT_GE(f.max_active_blocks_per_multiprocessor(32), blocks);
    BlockSizeSuggestion s = f.suggested_block_size();
    EXPECT_GE(s.min_grid_size, 1);
    EXPECT_GE(s.block_size, 32);
    EXPECT_EQ(s.block_size % 32, 0);
    EXPECT_LE(s.block_size, f.max_threads_per_block());
    BlockSizeSuggestion limited = f.suggested_block_size(0, 64);
    EXPECT_LE(limited.block_size, 64);
    EXPECT_GE(limited.block_size, 32);
    // The suggestion launches.
    const int64_t n = 10000;
    auto out = ctx().enqueue_create_buffer<int64_t>(n);
    ctx().enqueue_function(f, out, n, grid_dim((n + s.block_size - 1) / s.block_size), block_dim(s.block_size));
    std::vector<int64_t> host(n);
    ctx().enqueue_copy(host.data(), out);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], i * 3 + 1);
    // A block that cannot get its shared memory cannot be resident.
    EXPECT_EQ(f.max_active_blocks_per_multiprocessor(128, 100 * 1024), 0);
    EXPECT_THROW(f.max_active_blocks_per_multiprocessor(2048), LogicError);
    EXPECT_THROW(f.max_active_blocks_per_multiprocessor(0), LogicError);
    EXPECT_THROW(f.suggested_block_size(0, 4096), LogicError);
    if (!cuda()) {
        EXPECT_EQ(blocks, 1); // one block per pool thread at a time
        EXPECT_EQ(s.block_size, 256);
    }
}

TEST_P(LaunchAttributeTest, ClusterLaunchRunsOnHopperAndTheCpuDevice) {
    const int64_t n = 16 * kBlock;
    auto out = ctx().enqueue_create_buffer<int64_t>(n);
    auto f = ctx().compile_function(iota);
    if (cuda() && sm() < 90) {
        std::string msg = error_of([&] {
            ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(2));
        });
        EXPECT_NE(msg.find("sm_90"), std::string::npos) << msg;
        GTEST_SKIP() << "cluster launches need sm_90; this GPU is " << ctx().target();
    }
    ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(2));
    expect_iota(out, n);
    ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(8),
                           LaunchAttribute::cluster_scheduling_policy(ClusterSchedulingPolicy::spread));
    expect_iota(out, n);
    // Two-dimensional grid of 4 x 4 blocks in clusters of 2 x 2.
    ctx().enqueue_function(f, out, n, grid_dim(4, 4), block_dim(kBlock),
                           LaunchAttribute::cluster_dimension(2, 2));
    expect_iota(out, n);
    // On a stream too.
    DeviceStream s = ctx().create_stream();
    s.enqueue_function(iota, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(4));
    s.synchronize();
    expect_iota(out, n);
}

TEST_P(LaunchAttributeTest, BadClustersAreRejected) {
    if (cuda() && sm() < 90) GTEST_SKIP() << "cluster launches need sm_90; this GPU is " << ctx().target();
    const int64_t n = 16 * kBlock;
    auto out = ctx().enqueue_create_buffer<int64_t>(n);
    auto f = ctx().compile_function(iota);
    std::string msg = error_of([&] {
        ctx().enqueue_function(f, out, n, grid_dim(6), block_dim(kBlock), cluster_dim(4));
    });
    EXPECT_NE(msg.find("not a multiple of cluster_dim (4, 1, 1) in x"), std::string::npos) << msg;
    msg = error_of([&] { ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(16)); });
    EXPECT_NE(msg.find("at most 8"), std::string::npos) << msg;
    msg = error_of([&] { ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(0)); });
    EXPECT_NE(msg.find("below 1"), std::string::npos) << msg;
    msg = error_of([&] {
        ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock), cluster_dim(2), cluster_dim(4));
    });
    EXPECT_NE(msg.find("twice"), std::string::npos) << msg;
    msg = error_of([&] {
        ctx().enqueue_function(f, out, n, grid_dim(16), block_dim(kBlock),
                               LaunchAttribute::cluster_scheduling_policy(ClusterSchedulingPolicy::spread));
    });
    EXPECT_NE(msg.find("needs cluster_dim"), std::string::npos) << msg;
}

TEST_P(LaunchAttributeTest, PriorityAndCooperativeLaunches) {
    const int64_t n = 4 * kBlock;
    auto out = ctx().enqueue_create_buffer<int64_t>(n);
    auto f = ctx().compile_function(iota);
    auto [least, greatest] = ctx().stream_priority_range();
    ctx().enqueue_function(f, out, n, grid_dim(4), block_dim(kBlock), LaunchAttribute::priority(greatest));
    expect_iota(out, n);
    std::string msg = error_of([&] {
        ctx().enqueue_function(f, out, n, grid_dim(4), block_dim(kBlock), LaunchAttribute::priority(least + 1));
    });
    EXPECT_NE(msg.find("priority"), std::string::npos) << msg;

    ctx().enqueue_function(f, out, n, grid_dim(4), block_dim(kBlock), LaunchAttribute::cooperative());
    expect_iota(out, n);
    // More blocks than can be resident at once: rejected on a GPU; the CPU device, which has no
    // grid-wide barrier to wait at, runs any grid.
    const int64_t per_sm = f.max_active_blocks_per_multiprocessor(kBlock);
    const int64_t too_many = per_sm * 100000;
    if (cuda()) {
        msg = error_of([&] {
            ctx().enqueue_function(f, out, n, grid_dim(too_many), block_dim(kBlock), LaunchAttribute::cooperative());
        });
        EXPECT_NE(msg.find("cooperative launch of " + std::to_string(too_many) + " blocks"), std::string::npos)
            << msg;
    } else {
        ctx().enqueue_function(f, out, n, grid_dim(too_many), block_dim(kBlock), LaunchAttribute::cooperative());
        expect_iota(out, n);
    }

    // Allowed to overlap the previous kernel (programmatic dependent launch needs sm_90).
    if (!cuda() || sm() >= 90) {
        ctx().enqueue_function(f, out, n, grid_dim(4), block_dim(kBlock),
                               LaunchAttribute::programmatic_stream_serialization());
        expect_iota(out, n);
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, FunctionAttributesTest, ember::testing::all_apis(), ember::testing::api_name);
INSTANTIATE_TEST_SUITE_P(Apis, OccupancyTest, ember::testing::all_apis(), ember::testing::api_name);
INSTANTIATE_TEST_SUITE_P(Apis, LaunchAttributeTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
