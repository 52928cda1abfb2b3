/// \file
/// Unroll hints ([Note] IR semantics: Unroll hints) never change what a loop computes: loops with
/// every hint, with trip counts that the unroll count divides and that it does not (the remainder
/// loop), with zero trips, a negative step, a break and a continue, give the host's results on
/// every device.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace ember;

namespace {

/// out[t] for thread t over trip count n = t: a sum over i of (i * 3 + t) with each hint, a
/// downward loop, and a loop that skips multiples of 5 and stops at 40.
const auto hinted = kernel("hinted_loops", {"out"}, [](Ptr<int64_t> out) {
    Int t = thread_idx.x;
    Var<int64_t> a(0), b(0), c(0), d(0), e(0), f(0);
    for_(0, t, [&](Int i) { a += i * 3 + t; }, unroll(4));
    for_(0, 8, [&](Int i) { b += i * 3 + t; }, unroll());
    for_(0, t, [&](Int i) { c += i * 3 + t; }, unroll(1));
    for_(0, t, [&](Int i) { d += i * 3 + t; }, unroll(7));
    for_(t, 0, -3, [&](Int i) { e += i; }, unroll(2));
    for_(
        0, t,
        [&](Int i) {
            if_(i % 5 == 0, [&] { continue_(); });
            if_(i == 40, [&] { break_(); });
            f += i;
        },
        unroll(3));
    out[t * 6 + 0] = a;
    out[t * 6 + 1] = b;
    out[t * 6 + 2] = c;
    out[t * 6 + 3] = d;
    out[t * 6 + 4] = e;
    out[t * 6 + 5] = f;
});

class UnrollTest : public ember::testing::DeviceTest {};

TEST_P(UnrollTest, HintsKeepEveryLoopsResults) {
    constexpr int64_t threads = 64;
    auto out = ctx().enqueue_create_buffer<int64_t>(threads * 6);
    ctx().enqueue_function(hinted, out, grid_dim(1), block_dim(threads));
    std::vector<int64_t> got(threads * 6);
    ctx().enqueue_copy(got.data(), out);
    ctx().synchronize();
    for (int64_t t = 0; t < threads; ++t) {
        int64_t sum_t = 0, sum_8 = 0, down = 0, skip = 0;
        for (int64_t i = 0; i < t; ++i) sum_t += i * 3 + t;
        for (int64_t i = 0; i < 8; ++i) sum_8 += i * 3 + t;
        for (int64_t i = t; i > 0; i -= 3) down += i;
        for (int64_t i = 0; i < t; ++i) {
            if (i % 5 == 0) continue;
            if (i == 40) break;
            skip += i;
        }
        const int64_t want[6] = {sum_t, sum_8, sum_t, sum_t, down, skip};
        for (int k = 0; k < 6; ++k)
            EXPECT_EQ(got[t * 6 + k], want[k]) << "thread " << t << ", loop " << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, UnrollTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
