/// \file
/// `for_` runs its body exactly ceil((end - begin) / step) times ([Note] IR semantics: Loops):
/// runtime bounds and steps of both signs, zero steps, empty ranges and ranges that end at the
/// edge of the index type, where a wrapping index would run on, give the host's trip counts and
/// index sums on every device, and so do the same loops unrolled by hand in groups ([Note]
/// Unrolling by hand), with a `continue` and a `break` inside a group. A grid-stride loop (a
/// runtime step) covers every element once.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace ember;

namespace {

/// Case t: the trip count and the sum of the indices of `for i = b[t] to e[t] step s[t]` for
/// 32-bit signed, 32-bit unsigned and 8-bit signed indices.
const auto loops = kernel(
    "for_loops", {"b", "e", "s", "out"},
    [](Ptr<const int32_t> b, Ptr<const int32_t> e, Ptr<const int32_t> s, Ptr<int64_t> out) {
        Int t = thread_idx.x;
        Var<int64_t> n32(0), sum32(0), nu(0), sumu(0), n8(0), sum8(0);
        for_(b[t], e[t], s[t], [&](Int32 i) {
            n32 += 1;
            sum32 += cast<int64_t>(i);
        });
        for_(cast<uint32_t>(b[t]), cast<uint32_t>(e[t]), cast<uint32_t>(s[t]), [&](UInt32 i) {
            nu += 1;
            sumu += cast<int64_t>(i);
        });
        for_(cast<int8_t>(b[t]), cast<int8_t>(e[t]), cast<int8_t>(s[t]), [&](Value<int8_t> i) {
            n8 += 1;
            sum8 += cast<int64_t>(i);
        });
        out[t * 6 + 0] = n32;
        out[t * 6 + 1] = sum32;
        out[t * 6 + 2] = nu;
        out[t * 6 + 3] = sumu;
        out[t * 6 + 4] = n8;
        out[t * 6 + 5] = sum8;
    });

/// The runtime-step loops again with unroll hints, which ember carries out itself in groups with
/// one test each ([Note] Unrolling by hand): i32 by 3, u32 by 4, and i32 by 4 with a `continue`
/// (multiples of 5) and a `break` (after 7 counted iterations), which leave a copy mid-group.
const auto unrolled = kernel(
    "for_unrolled", {"b", "e", "s", "out"},
    [](Ptr<const int32_t> b, Ptr<const int32_t> e, Ptr<const int32_t> s, Ptr<int64_t> out) {
        Int t = thread_idx.x;
        Var<int64_t> n3(0), sum3(0), nu(0), sumu(0), nb(0), sumb(0);
        for_(
            b[t], e[t], s[t],
            [&](Int32 i) {
                n3 += 1;
                sum3 += cast<int64_t>(i);
            },
            unroll(3));
        for_(
            cast<uint32_t>(b[t]), cast<uint32_t>(e[t]), cast<uint32_t>(s[t]),
            [&](UInt32 i) {
                nu += 1;
                sumu += cast<int64_t>(i);
            },
            unroll(4));
        for_(
            b[t], e[t], s[t],
            [&](Int32 i) {
                if_(i % 5 == 0, [&] { continue_(); });
                if_(nb == 7, [&] { break_(); });
                nb += 1;
                sumb += cast<int64_t>(i);
            },
            unroll(4));
        out[t * 6 + 0] = n3;
        out[t * 6 + 1] = sum3;
        out[t * 6 + 2] = nu;
        out[t * 6 + 3] = sumu;
        out[t * 6 + 4] = nb;
        out[t * 6 + 5] = sumb;
    });

/// The same with constant steps (the counted loop, its trip count a division by the constant):
/// i32 by 3, by -5 and by 1, and u32 by 7.
const auto constant_steps = kernel(
    "for_constant_steps", {"b", "e", "out"},
    [](Ptr<const int32_t> b, Ptr<const int32_t> e, Ptr<int64_t> out) {
        Int t = thread_idx.x;
        Var<int64_t> n[4] = {Var<int64_t>(0), Var<int64_t>(0), Var<int64_t>(0), Var<int64_t>(0)};
        Var<int64_t> sum[4] = {Var<int64_t>(0), Var<int64_t>(0), Var<int64_t>(0), Var<int64_t>(0)};
        auto count = [&](int k, auto i) {
            n[k] += 1;
            sum[k] += cast<int64_t>(i);
        };
        for_(b[t], e[t], 3, [&](Int32 i) { count(0, i); });
        for_(b[t], e[t], -5, [&](Int32 i) { count(1, i); });
        for_(b[t], e[t], [&](Int32 i) { count(2, i); });
        for_(cast<uint32_t>(b[t]), cast<uint32_t>(e[t]), 7u, [&](UInt32 i) { count(3, i); });
        for (int k = 0; k < 4; ++k) {
            out[t * 8 + 2 * k] = n[k];
            out[t * 8 + 2 * k + 1] = sum[k];
        }
    });

/// The host's count and index sum of `for (i = b; s > 0 ? i < e : s < 0 ? i > e : false; i += s)`
/// in exact integers.
template <class T> void host_loop(T b, T e, T s, int64_t &count, int64_t &sum) {
    count = sum = 0;
    using W = __int128;
    if (s == 0) return;
    for (W i = b; s > 0 ? i < W(e) : i > W(e); i += W(s)) {
        ++count;
        sum += int64_t(i);
    }
}

class ForLoopTest : public ember::testing::DeviceTest {};

constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
constexpr int32_t kMin = std::numeric_limits<int32_t>::min();

struct Case {
    int32_t b, e, s;
};

/// Runtime bounds and steps: both directions, zero steps, empty ranges, ranges that end where one
/// more step would wrap, and longer ranges that fill several unrolled groups.
const std::vector<Case> runtime_cases = {
    {0, 10, 1},
    {0, 10, 3},
    {10, 0, -3},
    {3, 3, 1},
    {5, 0, 1},
    {0, 5, -1},
    {0, 10, 0},
    {-7, 9, 4},
    {9, -7, -4},
    {kMax - 7, kMax, 4},
    {kMax - 7, kMax, 3},
    {kMin + 5, kMin, -2},
    {0, kMin, kMin},
    {kMin, kMax, kMax},
    {kMax, kMin, kMin},
    {-1, 100, 7},
    {120, 127, 3},
    {-120, -128, -3},
    {100, -100, -50},
    {-2, 2, 1},
    {0, 100, 1},
    {-50, 50, 2},
    {kMax - 100, kMax, 7},
    {kMin + 100, kMin, -9},
    {1000, -1000, -13},
};

/// Launches `k` (b, e, s, out) with one thread per case; returns its 6 outputs per case.
template <class K>
std::vector<int64_t> run_cases(DeviceContext &ctx, const K &k, const std::vector<Case> &cases) {
    const int64_t n = int64_t(cases.size());
    std::vector<int32_t> b(n), e(n), s(n);
    for (int64_t t = 0; t < n; ++t) b[t] = cases[t].b, e[t] = cases[t].e, s[t] = cases[t].s;
    auto db = ctx.enqueue_create_buffer<int32_t>(n), de = ctx.enqueue_create_buffer<int32_t>(n),
         ds = ctx.enqueue_create_buffer<int32_t>(n);
    auto out = ctx.enqueue_create_buffer<int64_t>(n * 6);
    ctx.enqueue_copy(db, b.data());
    ctx.enqueue_copy(de, e.data());
    ctx.enqueue_copy(ds, s.data());
    ctx.enqueue_function(k, db, de, ds, out, grid_dim(1), block_dim(n));
    std::vector<int64_t> got(n * 6);
    ctx.enqueue_copy(got.data(), out);
    ctx.synchronize();
    return got;
}

TEST_P(ForLoopTest, TripCountsAreExactUpToTheEdgeOfTheIndexType) {
    const std::vector<int64_t> got = run_cases(ctx(), loops, runtime_cases);
    for (size_t t = 0; t < runtime_cases.size(); ++t) {
        const auto [b, e, s] = runtime_cases[t];
        int64_t want[6];
        host_loop<int32_t>(b, e, s, want[0], want[1]);
        host_loop<uint32_t>(uint32_t(b), uint32_t(e), uint32_t(s), want[2], want[3]);
        host_loop<int8_t>(int8_t(b), int8_t(e), int8_t(s), want[4], want[5]);
        const char *what[6] = {"i32 count", "i32 sum",  "u32 count",
                               "u32 sum",   "i8 count", "i8 sum"};
        for (int k = 0; k < 6; ++k)
            EXPECT_EQ(got[t * 6 + k], want[k])
                << what[k] << " of for " << b << " to " << e << " step " << s;
    }
}

TEST_P(ForLoopTest, UnrolledGroupsRunEveryIterationOnce) {
    const std::vector<int64_t> got = run_cases(ctx(), unrolled, runtime_cases);
    for (size_t t = 0; t < runtime_cases.size(); ++t) {
        const auto [b, e, s] = runtime_cases[t];
        int64_t want[6];
        host_loop<int32_t>(b, e, s, want[0], want[1]);
        host_loop<uint32_t>(uint32_t(b), uint32_t(e), uint32_t(s), want[2], want[3]);
        want[4] = want[5] = 0;
        if (s != 0)
            for (__int128 i = b; s > 0 ? i < e : i > e; i += s) {
                if (i % 5 == 0) continue;
                if (want[4] == 7) break;
                ++want[4];
                want[5] += int64_t(i);
            }
        const char *what[6] = {"i32 by 3 count",
                               "i32 by 3 sum",
                               "u32 by 4 count",
                               "u32 by 4 sum",
                               "i32 by 4 with continue and break: count",
                               "... sum"};
        for (int k = 0; k < 6; ++k)
            EXPECT_EQ(got[t * 6 + k], want[k])
                << what[k] << " of for " << b << " to " << e << " step " << s;
    }
}

TEST_P(ForLoopTest, ConstantStepsCountExactlyUpToTheEdgeOfTheIndexType) {
    // Ranges short both as i32 and as u32, many ending where one more step would wrap:
    // {-2, -1} as u32 by 7 would wrap to 5, below the end, and run on.
    const std::vector<std::pair<int32_t, int32_t>> cases = {
        {0, 10},          {10, 0},          {3, 3},           {-3, 4},
        {9, 0},           {kMax - 7, kMax}, {kMax - 2, kMax}, {kMax - 10, kMax},
        {kMin + 9, kMin}, {kMin + 3, kMin}, {kMin, kMin + 4}, {-8, -1},
        {-2, -1},         {-20, -1},
    };
    const int64_t n = int64_t(cases.size());
    std::vector<int32_t> b(n), e(n);
    for (int64_t t = 0; t < n; ++t) b[t] = cases[t].first, e[t] = cases[t].second;
    auto db = ctx().enqueue_create_buffer<int32_t>(n), de = ctx().enqueue_create_buffer<int32_t>(n);
    auto out = ctx().enqueue_create_buffer<int64_t>(n * 8);
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_copy(de, e.data());
    ctx().enqueue_function(constant_steps, db, de, out, grid_dim(1), block_dim(n));
    std::vector<int64_t> got(n * 8);
    ctx().enqueue_copy(got.data(), out);
    ctx().synchronize();
    for (int64_t t = 0; t < n; ++t) {
        int64_t want[8];
        host_loop<int32_t>(b[t], e[t], 3, want[0], want[1]);
        host_loop<int32_t>(b[t], e[t], -5, want[2], want[3]);
        host_loop<int32_t>(b[t], e[t], 1, want[4], want[5]);
        host_loop<uint32_t>(uint32_t(b[t]), uint32_t(e[t]), 7u, want[6], want[7]);
        const char *what[4] = {"i32 by 3", "i32 by -5", "i32 by 1", "u32 by 7"};
        for (int k = 0; k < 8; ++k)
            EXPECT_EQ(got[t * 8 + k], want[k]) << what[k / 2] << (k % 2 ? " sum" : " count")
                                               << " of for " << b[t] << " to " << e[t];
    }
}

/// A grid-stride loop whose step is the launch's thread count, hinted and not: every element
/// is visited once, for sizes that the unrolled group divides and that it does not.
const auto grid_stride = kernel("grid_stride", {"x", "n"}, [](Ptr<int32_t> x, Int n) {
    Int first = block_idx.x * block_dim.x + thread_idx.x;
    Int stride = block_dim.x * grid_dim.x;
    for_(first, n, stride, [&](Int i) { x[i] += 1; });
    for_(first, n, stride, [&](Int i) { x[i] += 2; }, unroll(4));
});

TEST_P(ForLoopTest, AGridStrideLoopVisitsEveryElementOnce) {
    for (int64_t n : {0, 1, 255, 256, 257, 1023, 4096 + 17, 100000}) {
        std::vector<int32_t> host(n, 0);
        auto x = ctx().enqueue_create_buffer<int32_t>(n == 0 ? 1 : n);
        if (n > 0) ctx().enqueue_copy(x, host.data());
        ctx().enqueue_function(grid_stride, x, n, grid_dim(3), block_dim(64));
        if (n > 0) ctx().enqueue_copy(host.data(), x);
        ctx().synchronize();
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(host[i], 3) << "element " << i << " of " << n;
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, ForLoopTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
