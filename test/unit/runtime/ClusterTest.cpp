/// \file
/// Thread-block clusters ([Note] IR semantics: Clusters) on the CPU device and a compute
/// capability 9.0 GPU, against the host: the cluster registers in launches with and without
/// cluster_dim(...), cluster_sync ordering global writes between the blocks of a cluster,
/// mbarrier arrivals on every block of the cluster, and TMA boxes multicast to every block of
/// clusters of 2 and 4 (x and y). On the CPU device also the LaunchErrors of a rank outside the
/// cluster.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

class ClusterTest : public ember::testing::DeviceTest {
protected:
    /// Whether this device has clusters; skips the test where it does not.
    bool clusters() {
        if (GetParam() == "cpu") return true;
        if (GetParam() == "hip") return false;
        return ctx().compute_capability().first >= 9;
    }
};

// Per block: its rank, cluster_idx and block_idx_in_cluster (x, y), cluster_dim (x, y, z).
const auto cluster_registers = kernel("cluster_registers", {"out"}, [](Ptr<int32_t> out) {
    Int block = block_idx.y * grid_dim.x + block_idx.x;
    if_(thread_idx.x == 0, [&] {
        Int at = block * 8;
        out[at] = cast<int32_t>(block_rank_in_cluster());
        out[at + 1] = cast<int32_t>(cluster_idx.x);
        out[at + 2] = cast<int32_t>(cluster_idx.y);
        out[at + 3] = cast<int32_t>(block_idx_in_cluster.x);
        out[at + 4] = cast<int32_t>(block_idx_in_cluster.y);
        out[at + 5] = cast<int32_t>(cluster_dim.x);
        out[at + 6] = cast<int32_t>(cluster_dim.y);
        out[at + 7] = cast<int32_t>(cluster_dim.z);
    });
});

TEST_P(ClusterTest, TheClusterRegistersNameEachBlocksPlace) {
    if (!clusters()) GTEST_SKIP() << "clusters need a compute capability 9.0 GPU or the CPU device";
    const int64_t gx = 4, gy = 4;
    auto out = ctx().enqueue_create_buffer<int32_t>(gx * gy * 8);
    for (std::array<int64_t, 2> c :
         {std::array<int64_t, 2>{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 2}, {0, 0}}) {
        ctx().enqueue_memset(out, -1);
        if (c[0] == 0) // no cluster_dim: every block is a cluster of one
            ctx().enqueue_function(cluster_registers, out, grid_dim(gx, gy), block_dim(64));
        else
            ctx().enqueue_function(cluster_registers, out, grid_dim(gx, gy), block_dim(64),
                                   cluster_dim(c[0], c[1]));
        std::vector<int32_t> got(gx * gy * 8);
        ctx().enqueue_copy(got.data(), out);
        ctx().synchronize();
        const int64_t cx = std::max<int64_t>(1, c[0]), cy = std::max<int64_t>(1, c[1]);
        for (int64_t by = 0; by < gy; ++by)
            for (int64_t bx = 0; bx < gx; ++bx) {
                const int32_t *r = &got[(by * gx + bx) * 8];
                const std::string where = "cluster " + std::to_string(cx) + " x " +
                                          std::to_string(cy) + ", block (" + std::to_string(bx) +
                                          ", " + std::to_string(by) + ")";
                EXPECT_EQ(r[0], bx % cx + cx * (by % cy)) << where;
                EXPECT_EQ(r[1], bx / cx) << where;
                EXPECT_EQ(r[2], by / cy) << where;
                EXPECT_EQ(r[3], bx % cx) << where;
                EXPECT_EQ(r[4], by % cy) << where;
                EXPECT_EQ(r[5], cx) << where;
                EXPECT_EQ(r[6], cy) << where;
                EXPECT_EQ(r[7], 1) << where;
            }
    }
}

// Every thread writes a flag, the cluster meets, and each thread counts the flags of its
// cluster's blocks: all of them are set after cluster_sync. A second round reuses the flags.
const auto count_flags = kernel(
    "count_flags", {"flags", "out"}, [](Ptr<int32_t> flags, Ptr<int32_t> out) {
        Int threads = block_dim.x;
        Int block = block_idx.x;
        Int first = cluster_idx.x * cluster_dim.x; // the cluster's first block
        for (int round = 1; round <= 2; ++round) {
            flags[block * threads + thread_idx.x] = round;
            cluster_sync();
            Var<int32_t> seen(0);
            for_(Int(0), cluster_dim.x * threads,
                 [&](Int i) { seen = seen + cast<int32_t>(flags[first * threads + i] == round); });
            out[(block * threads + thread_idx.x) * 2 + (round - 1)] = seen;
            cluster_sync(); // everyone has read before the next round writes
        }
    });

TEST_P(ClusterTest, ClusterSyncOrdersTheWritesOfEveryBlockOfTheCluster) {
    if (!clusters()) GTEST_SKIP() << "clusters need a compute capability 9.0 GPU or the CPU device";
    const int64_t blocks = 16, threads = 96;
    auto flags = ctx().enqueue_create_buffer<int32_t>(blocks * threads);
    auto out = ctx().enqueue_create_buffer<int32_t>(blocks * threads * 2);
    for (int64_t c : {2, 4, 8}) {
        ctx().enqueue_memset(flags, 0);
        ctx().enqueue_function(count_flags, flags, out, grid_dim(blocks), block_dim(threads),
                               cluster_dim(c));
        std::vector<int32_t> got(blocks * threads * 2);
        ctx().enqueue_copy(got.data(), out);
        ctx().synchronize();
        for (int64_t i = 0; i < blocks * threads * 2; ++i)
            ASSERT_EQ(got[i], c * threads)
                << "clusters of " << c << ", thread " << i / 2 % threads << " of block "
                << i / 2 / threads << ", round " << i % 2 + 1;
    }
}

// Thread 0 of each block arrives once on the mbarrier of every block of its cluster (its own
// included), each expecting as many arrivals as the cluster has blocks; every thread then waits
// for the phase and records that it completed.
const auto arrive_everywhere = kernel("arrive_everywhere", {"out"}, [](Ptr<int32_t> out) {
    auto bar = dynamic_shared<uint64_t>();
    Int size = cluster_dim.x * cluster_dim.y;
    if_(thread_idx.x == 0, [&] { mbarrier_init(bar, 0, size); });
    fence_proxy_async();
    cluster_sync(); // every block's mbarrier is initialised before anyone arrives on it
    if_(thread_idx.x == 0,
        [&] { for_(Int(0), size, [&](Int r) { mbarrier_arrive_cluster(bar, 0, r); }); });
    mbarrier_wait(bar, 0, 0);
    out[(block_idx.y * grid_dim.x + block_idx.x) * block_dim.x + thread_idx.x] = 1;
    cluster_sync(); // no block leaves while others may still arrive on its mbarrier
});

TEST_P(ClusterTest, MbarrierArrivalsReachEveryBlockOfTheCluster) {
    if (!clusters()) GTEST_SKIP() << "clusters need a compute capability 9.0 GPU or the CPU device";
    const int64_t gx = 8, gy = 2, threads = 64;
    auto out = ctx().enqueue_create_buffer<int32_t>(gx * gy * threads);
    for (std::array<int64_t, 2> c : {std::array<int64_t, 2>{2, 1}, {4, 2}, {1, 2}, {1, 1}}) {
        ctx().enqueue_memset(out, 0);
        ctx().enqueue_function(arrive_everywhere, out, grid_dim(gx, gy), block_dim(threads),
                               cluster_dim(c[0], c[1]), shared_mem_bytes(8));
        std::vector<int32_t> got(gx * gy * threads);
        ctx().enqueue_copy(got.data(), out);
        ctx().synchronize();
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], 1) << "cluster " << c[0] << " x " << c[1] << ", thread " << i;
    }
}

// Block r of the cluster copies rows 64 r to 64 r + 63 of the matrix (a box of 64 x 64) with the
// TMA to slot r of every block's shared memory at once; each block then writes all the slots it
// received to its part of `out`.
const auto multicast_rows = kernel(
    "multicast_rows", {"map", "out"}, [](TensorMap<bfloat16> map, Ptr<bfloat16> out) {
        auto smem = dynamic_shared<bfloat16>();
        auto bar = dynamic_shared<uint64_t>();
        constexpr int64_t box = 64 * 64, bar_at = 4 * box * 2 / 8; // after four slots
        Int size = cluster_dim.x * cluster_dim.y;
        Int rank = block_rank_in_cluster();
        Int t = thread_idx.x;
        if_(t == 0, [&] { mbarrier_init(bar, bar_at, 1); });
        fence_proxy_async();
        cluster_sync();
        if_(t == 0, [&] {
            mbarrier_expect_tx(bar, bar_at, size * box * 2); // every block's box lands here
            tma_load_multicast(smem, rank * box, map, Int(0), rank * 64, bar, bar_at,
                               (Int(1) << size) - 1);
        });
        mbarrier_wait(bar, bar_at, 0);
        Int block = block_idx.y * grid_dim.x + block_idx.x;
        for_(t, size * box, block_dim.x, [&](Int e) { out[block * 4 * box + e] = smem[e]; });
        cluster_sync(); // no block leaves while its boxes may still be landing elsewhere
    });

TEST_P(ClusterTest, TmaMulticastLandsEveryBoxInEveryBlockOfTheCluster) {
    if (!clusters()) GTEST_SKIP() << "clusters need a compute capability 9.0 GPU or the CPU device";
    const int64_t rows = 256, cols = 64, box = 64 * 64;
    std::vector<bfloat16> m(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) m[i] = bfloat16(float(i % 241));
    auto dm = ctx().enqueue_create_buffer<bfloat16>(m.size());
    ctx().enqueue_copy(dm, m.data());
    auto map = ctx().create_tensor_map(dm, rows, cols, 64, 64, TensorMapSwizzle::none);
    const int64_t gx = 4, gy = 2;
    auto out = ctx().enqueue_create_buffer<bfloat16>(gx * gy * 4 * box);
    for (std::array<int64_t, 2> c : {std::array<int64_t, 2>{2, 1}, {4, 1}, {2, 2}, {1, 2}}) {
        ctx().enqueue_memset(out, bfloat16(-1.0f));
        ctx().enqueue_function(multicast_rows, map, out, grid_dim(gx, gy), block_dim(128),
                               cluster_dim(c[0], c[1]), shared_mem_bytes(4 * box * 2 + 8));
        std::vector<bfloat16> got(gx * gy * 4 * box);
        ctx().enqueue_copy(got.data(), out);
        ctx().synchronize();
        const int64_t size = c[0] * c[1];
        for (int64_t b = 0; b < gx * gy; ++b)
            for (int64_t e = 0; e < size * box; ++e)
                ASSERT_EQ(float(got[b * 4 * box + e]), float(m[e]))
                    << "cluster " << c[0] << " x " << c[1] << ", block " << b << ", slot "
                    << e / box << ", element " << e % box;
    }
}

const auto arrive_outside = kernel("arrive_outside", {"rank"}, [](Int rank) {
    auto bar = dynamic_shared<uint64_t>();
    if_(thread_idx.x == 0, [&] { mbarrier_init(bar, 0, 1); });
    cluster_sync();
    if_(thread_idx.x == 0, [&] { mbarrier_arrive_cluster(bar, 0, rank); });
    cluster_sync();
});

TEST_P(ClusterTest, ARankOutsideTheClusterIsALaunchErrorOnTheCpu) {
    if (GetParam() != "cpu") GTEST_SKIP() << "undefined on a GPU: only the CPU device checks it";
    try {
        ctx().enqueue_function(arrive_outside, int64_t(2), grid_dim(4), block_dim(32),
                               cluster_dim(2), shared_mem_bytes(8));
        ctx().synchronize();
        FAIL() << "an arrival on block 2 of a cluster of 2 ran";
    } catch (const LaunchError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("arrive_outside"), std::string::npos) << what;
        EXPECT_NE(what.find("names block 2 of the cluster, which has 2 blocks"), std::string::npos)
            << what;
    }
    // In range, the same kernel runs.
    ctx().enqueue_function(arrive_outside, int64_t(1), grid_dim(4), block_dim(32), cluster_dim(2),
                           shared_mem_bytes(8));
    ctx().synchronize();
}

TEST_P(ClusterTest, AGridThatIsNoWholeNumberOfClustersIsRefused) {
    if (!clusters()) GTEST_SKIP() << "clusters need a compute capability 9.0 GPU or the CPU device";
    auto out = ctx().enqueue_create_buffer<int32_t>(6 * 8);
    EXPECT_THROW(
        ctx().enqueue_function(cluster_registers, out, grid_dim(6), block_dim(32), cluster_dim(4)),
        LogicError);
}

INSTANTIATE_TEST_SUITE_P(Apis, ClusterTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
