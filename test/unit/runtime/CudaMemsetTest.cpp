/// \file
/// The CUDA back end's memset plan ([Note] Memset widths), run on a simulated device memory on
/// any machine: every width, pattern (8-byte ones whose halves differ included), count and
/// alignment sets exactly the bytes it must, with driver calls whose preconditions hold (16- and
/// 32-bit units aligned, copies in range and not overlapping).
#include "cuda/CudaMemset.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ember::detail {
namespace {

constexpr DeviceAddress kBase = 0x7f0000000000ull; // 256-byte aligned, as cuMemAlloc's
constexpr size_t kGuard = 16;

/// Runs `steps` on `mem` (address kBase is mem[0]); fails the test on a violated precondition.
void run(const std::vector<MemsetStep> &steps, std::vector<uint8_t> &mem) {
    auto index = [&](DeviceAddress a, size_t bytes) {
        EXPECT_GE(a, kBase);
        EXPECT_LE(a - kBase + bytes, mem.size());
        return static_cast<size_t>(a - kBase);
    };
    for (const MemsetStep &s : steps) {
        switch (s.kind) {
        case MemsetStep::D8:
            std::memset(&mem[index(s.dst, s.count)], int(s.value), s.count);
            break;
        case MemsetStep::D16: {
            ASSERT_EQ(s.dst % 2, 0u) << "cuMemsetD16 needs a 2-byte aligned address";
            size_t i = index(s.dst, s.count * 2);
            for (size_t k = 0; k < s.count; ++k) {
                uint16_t v = uint16_t(s.value);
                std::memcpy(&mem[i + 2 * k], &v, 2);
            }
            break;
        }
        case MemsetStep::D32: {
            ASSERT_EQ(s.dst % 4, 0u) << "cuMemsetD32 needs a 4-byte aligned address";
            size_t i = index(s.dst, s.count * 4);
            for (size_t k = 0; k < s.count; ++k) {
                uint32_t v = uint32_t(s.value);
                std::memcpy(&mem[i + 4 * k], &v, 4);
            }
            break;
        }
        case MemsetStep::DtoD: {
            size_t d = index(s.dst, s.count), src = index(s.value, s.count);
            ASSERT_TRUE(d >= src + s.count || src >= d + s.count) << "overlapping copy";
            std::memcpy(&mem[d], &mem[src], s.count);
            break;
        }
        }
    }
}

TEST(CudaMemsetPlan, SetsExactlyThePatternAtEveryWidthCountAndAlignment) {
    const uint64_t patterns[] = {0x0123456789abcdefull, 0x1234567812345678ull, 0xabababababababab,
                                 0x00000000ffffffffull, 0xffff0000ffff0000ull, 0x0102030401020304ull, 0};
    for (unsigned width : {1u, 2u, 4u, 8u})
        for (uint64_t pattern : patterns)
            for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{1000}, size_t{4097}})
                for (size_t misalign = 0; misalign < 8; ++misalign) {
                    SCOPED_TRACE("width " + std::to_string(width) + ", pattern " + std::to_string(pattern) +
                                 ", count " + std::to_string(count) + ", misalign " + std::to_string(misalign));
                    std::vector<uint8_t> mem(kGuard + misalign + count * width + kGuard, 0x5a);
                    const DeviceAddress dst = kBase + kGuard + misalign;
                    std::vector<MemsetStep> steps = plan_memset(dst, pattern, width, count);
                    run(steps, mem);
                    size_t copies = 0;
                    for (const MemsetStep &s : steps) copies += s.kind == MemsetStep::DtoD;
                    EXPECT_LE(copies, 20u); // log2 of the bytes, not one per element
                    for (size_t i = 0; i < mem.size(); ++i) {
                        const size_t start = kGuard + misalign, end = start + count * width;
                        uint8_t want = i >= start && i < end ? uint8_t(pattern >> (8 * ((i - start) % width))) : 0x5a;
                        if (mem[i] != want) {
                            ADD_FAILURE() << "byte " << i << " is " << int(mem[i]) << ", want " << int(want);
                            break;
                        }
                    }
                }
}

TEST(CudaMemsetPlan, UsesOneDriverMemsetWhereThePatternAllows) {
    auto only = [](std::vector<MemsetStep> s, MemsetStep::Kind k, size_t count) {
        ASSERT_EQ(s.size(), 1u);
        EXPECT_EQ(s[0].kind, k);
        EXPECT_EQ(s[0].count, count);
    };
    only(plan_memset(kBase, 0x1234567812345678ull, 8, 100), MemsetStep::D32, 200);
    only(plan_memset(kBase, 0xabababababababab, 8, 100), MemsetStep::D8, 800);
    only(plan_memset(kBase, 0xdeadbeef, 4, 10), MemsetStep::D32, 10);
    only(plan_memset(kBase + 2, 0xbeef, 2, 10), MemsetStep::D16, 10);
    EXPECT_TRUE(plan_memset(kBase, 1, 8, 0).empty());
    // Halves differ: the first element byte by byte, then doubling copies.
    std::vector<MemsetStep> s = plan_memset(kBase, 0x0123456789abcdefull, 8, 4);
    ASSERT_EQ(s.size(), 8u + 2u);
    EXPECT_EQ(s[8].kind, MemsetStep::DtoD);
    EXPECT_EQ(s[8].count, 8u);
    EXPECT_EQ(s[9].count, 16u);
}

} // namespace
} // namespace ember::detail
