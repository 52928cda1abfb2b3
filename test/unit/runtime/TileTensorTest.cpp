/// \file
/// TileTensor and TileView ([Note] in ember/dsl/TileTensor.h) on every device, against the
/// host's HostTileTensor: a TileTensor parameter passed with tile_tensor() (padded rows, const
/// and not), tiles and transposes, a thread's share from distribute() and distribute_vectors(),
/// copies from global to shared memory (plain and async, into padded and swizzled tiles), mma
/// fragments read from swizzled and padded tiles with ldmatrix and stored through a view, and
/// the errors: a matrix that does not fit its buffer, a view whose rows and columns both have
/// strides other than 1.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

class TileTensorTest : public ember::testing::DeviceTest {};

// out(i, j) = in's tile (block_idx.y, block_idx.x) of 4 x 8, transposed inside the tile: each
// thread one element.
const auto tiles = kernel(
    "tt_tiles", {"in", "out"}, [](TileTensor<const float> in, TileTensor<float> out) {
        auto src = in.tile<8, 4>(block_idx.y, block_idx.x).transposed(); // 4 x 8
        auto dst = out.tile<4, 8>(block_idx.x, block_idx.y);
        Int r = thread_idx.x / 8, c = thread_idx.x % 8;
        dst(r, c) = src(r, c) * 2.0f;
    });

TEST_P(TileTensorTest, TilesAndTransposesOfAParameter) {
    constexpr int64_t rows = 16, cols = 12, stride = 20; // rows of `in` padded to 20
    std::vector<float> in(rows * stride, -1.0f), out(cols * rows, -7.0f);
    HostTileTensor<float> hin(in, rows, cols, stride);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) hin(i, j) = float(100 * i + j);
    auto din = ctx().enqueue_create_buffer<float>(in.size());
    auto dout = ctx().enqueue_create_buffer<float>(out.size());
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(tiles, tile_tensor(din, rows, cols, stride),
                           tile_tensor(dout, cols, rows), grid_dim(cols / 4, rows / 8),
                           block_dim(32));
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    HostTileTensor<float> hout(out, cols, rows);
    // out is in transposed: out(j, i) = 2 in(i, j).
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(hout(j, i), 2 * hin(i, j)) << i << ", " << j;
}

// Thread t of 32 writes t to its share of a 16 x 16 tile distributed over 4 x 8 threads, and
// (second output) writes its share of 4-wide vectors over 16 x 2 threads.
const auto shares = kernel(
    "tt_shares", {"a", "b"}, [](TileTensor<int32_t> a, TileTensor<int32_t> b) {
        Int t = thread_idx.x;
        auto mine = a.tile<16, 16>(0, 0).distribute<4, 8>(t); // 4 x 2
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 2; ++j) mine(i, j) = cast<int32_t>(t * 100 + i * 10 + j);
        auto vecs = b.view().distribute_vectors<16, 2, 4>(t); // 1 row x 2 vectors of 4
        for (int j = 0; j < 2; ++j)
            vecs.store_vector(0, j, SIMD<int32_t, 4>(cast<int32_t>(t * 10 + j)));
    });

TEST_P(TileTensorTest, DistributeGivesEachThreadItsShare) {
    std::vector<int32_t> a(16 * 16, -1), b(16 * 16, -1);
    auto da = ctx().enqueue_create_buffer<int32_t>(a.size());
    auto db = ctx().enqueue_create_buffer<int32_t>(b.size());
    ctx().enqueue_function(shares, tile_tensor(da, 16, 16), tile_tensor(db, 16, 16), grid_dim(1),
                           block_dim(32));
    ctx().enqueue_copy(a.data(), da);
    ctx().enqueue_copy(b.data(), db);
    ctx().synchronize();
    HostTileTensor<int32_t> ha(a, 16, 16), hb(b, 16, 16);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            const int t = i % 4 * 8 + j % 8; // the thread whose share holds (i, j)
            ASSERT_EQ(ha(i, j), t * 100 + i / 4 * 10 + j / 8) << "a(" << i << ", " << j << ")";
            // 16 x 2 threads over rows and pairs of 4-wide vectors: thread i * 2 + (j / 4) % 2.
            const int u = i * 2 + j / 4 % 2;
            ASSERT_EQ(hb(i, j), u * 10 + j / 8) << "b(" << i << ", " << j << ")";
        }
}

// A 32 x 64 tile of bf16 into shared memory (plain copy into a padded tile, async_copy into a
// swizzled one), then back out through the views: the data comes back where it was.
template <bool Async> auto round_trip_kernel(const char *name) {
    return kernel(
        name, {"in", "out1", "out2"},
        [](TileTensor<const bfloat16> in, TileTensor<bfloat16> out1, TileTensor<bfloat16> out2) {
            auto padded = shared_tile<bfloat16, 32, 64, 8>();
            auto swizzled = shared_tile<bfloat16, 32, 64, 0, Swizzle<3, 3, 3>>();
            Int t = thread_idx.x;
            auto src = in.tile<32, 64>(block_idx.x, 0);
            if constexpr (Async) {
                async_copy(padded, src, t, 64);
                async_copy(swizzled, src, t, 64);
                async_commit();
                async_wait(0);
            } else {
                copy(padded, src, t, 64);
                copy(swizzled, src, t, 64);
            }
            barrier();
            copy(out1.tile<32, 64>(block_idx.x, 0), padded, t, 64);
            for_(t, Int(32 * 64), 64, [&](Int e) {
                Int r = e / 64, c = e % 64;
                out2.tile<32, 64>(block_idx.x, 0)(r, c) = swizzled(r, c);
            });
        });
}

TEST_P(TileTensorTest, CopiesIntoPaddedAndSwizzledSharedTilesComeBackWhole) {
    constexpr int64_t rows = 64, cols = 64;
    std::vector<bfloat16> in(rows * cols), o1(rows * cols), o2(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) in[i] = bfloat16(float(i % 251));
    auto din = ctx().enqueue_create_buffer<bfloat16>(in.size());
    auto d1 = ctx().enqueue_create_buffer<bfloat16>(in.size());
    auto d2 = ctx().enqueue_create_buffer<bfloat16>(in.size());
    ctx().enqueue_copy(din, in.data());
    static const auto plain = round_trip_kernel<false>("tt_round_trip");
    static const auto async = round_trip_kernel<true>("tt_round_trip_async");
    for (const auto *k : {&plain, &async}) {
        ctx().enqueue_memset(d1, bfloat16(0.0f));
        ctx().enqueue_memset(d2, bfloat16(0.0f));
        ctx().enqueue_function(*k, tile_tensor(din, rows, cols), tile_tensor(d1, rows, cols),
                               tile_tensor(d2, rows, cols), grid_dim(rows / 32), block_dim(64));
        ctx().enqueue_copy(o1.data(), d1);
        ctx().enqueue_copy(o2.data(), d2);
        ctx().synchronize();
        for (int64_t i = 0; i < rows * cols; ++i) {
            ASSERT_EQ(float(o1[i]), float(in[i])) << "padded, element " << i;
            ASSERT_EQ(float(o2[i]), float(in[i])) << "swizzled, element " << i;
        }
    }
    // The swizzle really moves chunks: row 1's first chunk of 8 is stored in the second chunk.
    using Sw = Swizzle<3, 3, 3>;
    EXPECT_EQ(Sw::apply(int64_t(64)), 64 + 8);
    EXPECT_EQ(Sw::apply(int64_t(64 * 7 + 5)), 64 * 7 + 56 + 5);
}

// D (16 x 16) = A (16 x 64) B (64 x 16): A through a swizzled tile, B (row-major) through a
// padded one, fragments by load_matrix/load_matrix_pair on views; D stored through a view.
const auto view_mma = kernel(
    "tt_view_mma", {"a", "b", "d"},
    [](TileTensor<const bfloat16> a, TileTensor<const bfloat16> b, TileTensor<float> d) {
        using Op = Mma<bfloat16, m16n8k16>;
        auto sa = shared_tile<bfloat16, 16, 64, 0, Swizzle<3, 3, 3>>();
        auto sb = shared_tile<bfloat16, 64, 16, 8>();
        Int t = thread_idx.x;
        copy(sa, a.view(), t, 32);
        copy(sb, b.view(), t, 32);
        barrier();
        Op::C d0, d1;
        for (int k = 0; k < 4; ++k) {
            Op::A fa;
            Op::B b0, b1;
            load_matrix(fa, sa.sub(Int(0), Int(16 * k), Int(16), Int(16)));
            load_matrix_pair(b0, b1, sb.sub(Int(16 * k), Int(0), Int(16), Int(16)));
            d0 = mma(fa, b0, d0);
            d1 = mma(fa, b1, d1);
        }
        store(d0, d.tile<16, 8>(0, 0));
        store(d1, d.tile<16, 8>(0, 1));
    });

TEST_P(TileTensorTest, FragmentsFromSwizzledAndPaddedViews) {
    std::vector<bfloat16> a(16 * 64), b(64 * 16);
    std::vector<float> d(16 * 16, -1.0f);
    for (int i = 0; i < 16 * 64; ++i) a[i] = bfloat16(float((i * 7) % 5 - 2));
    for (int i = 0; i < 64 * 16; ++i) b[i] = bfloat16(float((i * 3) % 7 - 3));
    auto da = ctx().enqueue_create_buffer<bfloat16>(a.size());
    auto db = ctx().enqueue_create_buffer<bfloat16>(b.size());
    auto dd = ctx().enqueue_create_buffer<float>(d.size());
    ctx().enqueue_copy(da, a.data());
    ctx().enqueue_copy(db, b.data());
    ctx().enqueue_function(view_mma, tile_tensor(da, 16, 64), tile_tensor(db, 64, 16),
                           tile_tensor(dd, 16, 16), grid_dim(1), block_dim(32));
    ctx().enqueue_copy(d.data(), dd);
    ctx().synchronize();
    HostTileTensor<bfloat16> ha(a, 16, 64), hb(b, 64, 16);
    HostTileTensor<float> hd(d, 16, 16);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float want = 0;
            for (int k = 0; k < 64; ++k) want += float(ha(i, k)) * float(hb(k, j));
            ASSERT_EQ(hd(i, j), want) << "D(" << i << ", " << j << ")";
        }
}

TEST_P(TileTensorTest, AMatrixThatDoesNotFitItsBufferIsALogicError) {
    auto buf = ctx().enqueue_create_buffer<float>(100);
    try {
        (void)tile_tensor(buf, 10, 10, 12);
        FAIL() << "10 x 10 with rows 12 apart fit in 100 elements";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("needs 118 elements, and the buffer has 100"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW((void)tile_tensor(buf, 10, 12, 10), LogicError); // rows would overlap
    EXPECT_NO_THROW((void)tile_tensor(buf, 10, 10));
}

TEST_P(TileTensorTest, LoadMatrixNeedsConsecutiveRowsOrColumns) {
    try {
        (void)kernel("tt_bad_view", [](Ptr<float> p) {
            auto s = shared_tile<bfloat16, 32, 32>();
            Mma<bfloat16, m16n8k16>::A fa;
            load_matrix(fa, s.distribute<2, 2>(0)); // strides 64 and 2
            fa.load(s.data, 0, 32);
            p[0] = 0.0f;
        });
        FAIL() << "a view with strides 64 and 2 was read with ldmatrix";
    } catch (const DslError &e) {
        EXPECT_NE(std::string(e.what()).find("load_matrix reads 8 consecutive elements per lane"),
                  std::string::npos)
            << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, TileTensorTest, ember::testing::all_apis(),
                         ember::testing::api_name);

} // namespace
