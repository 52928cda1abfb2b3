/// \file
/// Sizes that overflow: every call that multiplies an element count by an element size (or adds
/// offsets) rejects a result past SIZE_MAX with a LogicError naming the call, the count, the
/// element size and the limit, instead of allocating the wrapped-around size (2^61 + 4 doubles
/// used to get 32 bytes, and a memset then wrote past them). On every api; CUDA cases skip with
/// a message where there is no GPU.
#include "ember/ember.h"

#include "DeviceTest.h"
#include "ExpectError.h"
#include "Functions.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

using namespace ember;

namespace {

const std::string size_max = std::to_string(std::numeric_limits<size_t>::max());

/// 2^61 + 4 doubles: 2^64 + 32 bytes, 32 once wrapped.
constexpr size_t wraps_to_32 = (size_t(1) << 61) + 4;

using ember::testing::expect_logic_error;

class SizeOverflowTest : public ember::testing::DeviceTest {};

TEST_P(SizeOverflowTest, DeviceAndHostBuffersWhoseBytesOverflow) {
    const std::string count = std::to_string(wraps_to_32);
    expect_logic_error([&] { (void)ctx().enqueue_create_buffer<double>(wraps_to_32); },
                       {"enqueue_create_buffer", count + " elements of 8 bytes", size_max});
    expect_logic_error([&] { (void)ctx().enqueue_create_host_buffer<double>(wraps_to_32); },
                       {"enqueue_create_host_buffer", count + " elements of 8 bytes", size_max});
    expect_logic_error([&] { (void)ctx().create_buffer_sync<int32_t>(size_t(1) << 62); },
                       {"enqueue_create_buffer", std::to_string(size_t(1) << 62) + " elements of 4 bytes"});
    // The largest count that fits is not an overflow: it is more memory than there is (a
    // MemoryError on the CPU device; the driver's error on a GPU).
    try {
        (void)ctx().enqueue_create_buffer<double>(std::numeric_limits<size_t>::max() / 8);
        ADD_FAILURE() << "allocated 2^64 - 8 bytes";
    } catch (const LogicError &e) {
        ADD_FAILURE() << "not an overflow: " << e.what();
    } catch (const Error &) {
    }
    // The context still works.
    auto b = ctx().enqueue_create_buffer<double>(4);
    ctx().enqueue_memset(b, 1.5);
    std::vector<double> host(4);
    ctx().enqueue_copy(host.data(), b);
    ctx().synchronize();
    EXPECT_EQ(host[3], 1.5);
}

TEST_P(SizeOverflowTest, OtherAllocationsNameTheLimit) {
    const std::string count = std::to_string(wraps_to_32);
    expect_logic_error([&] { (void)ctx().malloc_host<double>(wraps_to_32); },
                       {"malloc_host", count + " elements of 8 bytes", size_max});
    expect_logic_error([&] { (void)ctx().create_managed_buffer<double>(wraps_to_32); },
                       {"create_managed_buffer", count + " elements of 8 bytes", size_max});
    expect_logic_error([&] { (void)ctx().create_host_mapped_buffer<double>(wraps_to_32); },
                       {"create_host_mapped_buffer", count + " elements of 8 bytes", size_max});
    expect_logic_error([&] { (void)ctx().create_ipc_buffer<double>(wraps_to_32); },
                       {"create_ipc_buffer", count + " * 8", size_max});
    // A width whose bytes fit but whose rows do not.
    expect_logic_error([&] { (void)ctx().create_pitched_buffer<float>(size_t(1) << 40, size_t(1) << 30); },
                       {"create_pitched_buffer", std::to_string(size_t(1) << 42) + " * " +
                                                     std::to_string(size_t(1) << 30), size_max});
    expect_logic_error([&] { (void)ctx().create_pitched_buffer<double>(wraps_to_32, 1); },
                       {"create_pitched_buffer", count + " * 8", size_max});
}

TEST_P(SizeOverflowTest, CopyRegionsThatOverflow) {
    auto img = ctx().create_pitched_buffer<float>(16, 4);
    Copy2D c;
    c.set_src(img);
    c.set_dst(img);
    c.width_in_bytes = 8;
    c.height = 2;
    c.src_y = std::numeric_limits<size_t>::max() - 0;
    expect_logic_error([&] { ctx().enqueue_copy_2d(c); }, {"enqueue_copy_2d", "source region", size_max});
}

const auto shared_sum = kernel("overflow_shared_sum", {"out"}, [](Ptr<int32_t> out) {
    auto s = shared_array<int32_t, 4>();
    s[thread_idx.x] = cast<int32_t>(thread_idx.x);
    barrier();
    if_(thread_idx.x == 0, [&] { out[0] = s[0] + s[1] + s[2] + s[3]; });
});

TEST_P(SizeOverflowTest, SharedMemBytesThatOverflowWithTheStaticSharedMemory) {
    auto out = ctx().enqueue_create_buffer<int32_t>(1);
    // 16 bytes of static shared memory + INT64_MAX used to wrap to a negative total that passed
    // the device's limit.
    expect_logic_error(
        [&] {
            ctx().enqueue_function(shared_sum, out, grid_dim(1), block_dim(4),
                                   shared_mem_bytes(std::numeric_limits<int64_t>::max()));
        },
        {"overflow_shared_sum", std::to_string(std::numeric_limits<int64_t>::max()), "4294967295"});
    ctx().enqueue_function(shared_sum, out, grid_dim(1), block_dim(4));
    int32_t host = 0;
    ctx().enqueue_copy(&host, out);
    ctx().synchronize();
    EXPECT_EQ(host, 6);
}

INSTANTIATE_TEST_SUITE_P(Apis, SizeOverflowTest, ember::testing::all_apis(), ember::testing::api_name);

TEST(SizeOverflowPtxScan, AParameterArrayWhoseBytesOverflowMatchesNoType) {
    // 8 * (2^61 + 1) bytes wrap to 8, the size of a pointer parameter.
    detail::PtxSymbols s = detail::scan_ptx(R"(
        .version 8.5
        .target sm_90
        .visible .entry k(
            .param .align 8 .b64 k_param_0[2305843009213693953]
        ) { ret; }
    )");
    ASSERT_EQ(s.entries.size(), 1u);
    ASSERT_EQ(s.entries[0].param_bytes.size(), 1u);
    EXPECT_EQ(s.entries[0].param_bytes[0], std::numeric_limits<size_t>::max());
}

} // namespace
