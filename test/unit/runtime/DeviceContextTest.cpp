/// \file
/// DeviceContext end to end on every api: buffers, copies, compile, launch, the limits and the
/// errors. Runs on the CPU device everywhere and on CUDA where there is a GPU (skipped with a
/// message elsewhere).
#include "ember/ember.h"

#include "DeviceTest.h"
#include "ContextImpl.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

using namespace ember;

namespace {

const auto scalar_add = kernel("scalar_add", {"vector", "size", "scalar"},
                               [](Ptr<float> vector, Int size, Float32 scalar) {
                                   auto idx = block_idx.x * block_dim.x + thread_idx.x;
                                   if_(idx < size, [&] { vector[idx] += scalar; });
                               });

// Writes every thread's global linear index and its (x, y, z) coordinates.
const auto indices = kernel("indices", {"out", "coords"}, [](Ptr<int64_t> out, Ptr<int64_t> coords) {
    auto nx = grid_dim.x * block_dim.x;
    auto ny = grid_dim.y * block_dim.y;
    auto linear = (global_idx.z * ny + global_idx.y) * nx + global_idx.x;
    out[linear] = linear;
    coords[linear * 3] = global_idx.x;
    coords[linear * 3 + 1] = global_idx.y;
    coords[linear * 3 + 2] = global_idx.z;
});

class DeviceContextTest : public ember::testing::DeviceTest {
protected:
};

TEST_P(DeviceContextTest, ReportsItsApiAndName) {
    EXPECT_EQ(ctx().api(), GetParam());
    EXPECT_FALSE(ctx().name().empty());
    EXPECT_EQ(ctx().id(), 0);
    EXPECT_EQ(ctx().target().substr(0, GetParam() == "cuda" ? 6 : 3), GetParam() == "cuda" ? "nvptx:" : "cpu");
    EXPECT_GE(DeviceContext::number_of_devices(GetParam()), 1);
}

TEST_P(DeviceContextTest, ScalarAddMatchesTheSeed) {
    constexpr int64_t n = 20;
    auto host = ctx().enqueue_create_host_buffer<float>(n);
    ctx().synchronize();
    std::iota(host.begin(), host.end(), 0.0f);
    EXPECT_EQ(host.to_string(), "HostBuffer([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, "
                                "11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0])");
    auto dev = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(dev, host);
    auto fn = ctx().compile_function(scalar_add);
    ctx().enqueue_function(fn, dev, n, 20.0f, grid_dim(1), block_dim(n));
    ctx().enqueue_copy(host, dev);
    ctx().synchronize();
    EXPECT_EQ(host.to_string(), "HostBuffer([20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, "
                                "29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0])");
}

TEST_P(DeviceContextTest, ManyBlocksWithABoundsCheck) {
    const int64_t n = 100003; // not a multiple of the block size
    std::vector<float> in(n), out(n);
    for (int64_t i = 0; i < n; ++i) in[i] = float(i % 977) * 0.5f;
    auto dev = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(dev, in.data());
    // Launch straight from the kernel: compiled once for this context, then reused.
    for (int rep = 0; rep < 3; ++rep)
        ctx().enqueue_function(scalar_add, dev, n, 1.5f, grid_dim((n + 255) / 256), block_dim(256));
    ctx().enqueue_copy(out.data(), dev);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], in[i] + 4.5f) << "at " << i;
    EXPECT_EQ(ctx().impl()->cache.size(), 1u);
}

TEST_P(DeviceContextTest, ThreeDimensionalGridAndBlock) {
    const Dim grid{3, 2, 2}, block{4, 4, 2};
    const int64_t total = grid.x * grid.y * grid.z * block.x * block.y * block.z;
    auto out = ctx().enqueue_create_buffer<int64_t>(total);
    auto coords = ctx().enqueue_create_buffer<int64_t>(total * 3);
    ctx().enqueue_function(indices, out, coords, LaunchConfig{.grid_dim = grid, .block_dim = block});
    // The same launch spelled as grid_dim(...) / block_dim(...), as in the seed.
    ctx().enqueue_function(indices, out, coords, grid_dim({3, 2, 2}), block_dim(4, 4, 2));
    std::vector<int64_t> o(total), c(total * 3);
    ctx().enqueue_copy(o.data(), out);
    ctx().enqueue_copy(c.data(), coords);
    ctx().synchronize();
    const int64_t nx = grid.x * block.x, ny = grid.y * block.y;
    for (int64_t i = 0; i < total; ++i) {
        ASSERT_EQ(o[i], i);
        EXPECT_EQ(c[i * 3], i % nx);
        EXPECT_EQ(c[i * 3 + 1], (i / nx) % ny);
        EXPECT_EQ(c[i * 3 + 2], i / (nx * ny));
    }
}

TEST_P(DeviceContextTest, CopiesInEveryDirection) {
    const size_t n = 1000;
    std::vector<int32_t> src(n), dst(n, -1);
    std::iota(src.begin(), src.end(), 7);
    auto a = ctx().enqueue_create_buffer<int32_t>(n);
    auto b = ctx().enqueue_create_buffer<int32_t>(n);
    auto h = ctx().enqueue_create_host_buffer<int32_t>(n);
    ctx().enqueue_copy(a, src.data());   // host pointer -> device
    ctx().enqueue_copy(b, a);            // device -> device
    ctx().enqueue_copy(h, b);            // device -> host buffer
    auto c = ctx().enqueue_create_buffer<int32_t>(n);
    h.enqueue_copy_to(c);                // host buffer -> device (buffer method)
    c.enqueue_copy_to(dst.data());       // device -> host pointer (buffer method)
    ctx().synchronize();
    EXPECT_EQ(dst, src);
    auto d = ctx().enqueue_create_buffer<int32_t>(n);
    d.enqueue_copy_from(c);
    auto h2 = ctx().enqueue_create_host_buffer<int32_t>(n);
    h2.enqueue_copy_from(d);
    ctx().synchronize();
    EXPECT_TRUE(std::equal(h2.begin(), h2.end(), src.begin()));
}

TEST_P(DeviceContextTest, MismatchedCopySizesAreLogicErrors) {
    auto a = ctx().enqueue_create_buffer<float>(20);
    auto b = ctx().enqueue_create_buffer<float>(30);
    auto h = ctx().enqueue_create_host_buffer<float>(10);
    try {
        ctx().enqueue_copy(a, b);
        FAIL() << "no error";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("the source has 30 elements (120 bytes) but the "
                                             "destination has 20 elements (80 bytes)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(ctx().enqueue_copy(h, a), LogicError);
    EXPECT_THROW(ctx().enqueue_copy(a, h), LogicError);
    EXPECT_THROW(ctx().enqueue_copy(DeviceBuffer<float>(), h), LogicError);
}

TEST_P(DeviceContextTest, BuffersOfAnotherContextAreRejected) {
    DeviceContext other(0, GetParam()); // a second context on the same device
    auto mine = ctx().enqueue_create_buffer<float>(8);
    auto theirs = other.enqueue_create_buffer<float>(8);
    try {
        ctx().enqueue_function(scalar_add, theirs, int64_t(8), 1.0f, grid_dim(1), block_dim(8));
        FAIL() << "no error";
    } catch (const LogicError &e) {
        std::string m = e.what();
        EXPECT_NE(m.find("kernel 'scalar_add': argument 0 ('vector') is a DeviceBuffer of"), std::string::npos) << m;
    }
    // Copies between contexts work (Memory2DTest.EnqueueCopyWorksBetweenTwoContexts); kernels
    // take only their own context's buffers.
    ctx().enqueue_copy(mine, theirs);
    auto fn = other.compile_function(scalar_add);
    EXPECT_THROW(ctx().enqueue_function(fn, mine, int64_t(8), 1.0f, grid_dim(1), block_dim(8)), LogicError);
}

TEST_P(DeviceContextTest, LaunchesOverTheLimitsAreRejectedBeforeTheDriver) {
    auto v = ctx().enqueue_create_buffer<float>(4);
    auto expect_logic = [&](Dim g, Dim b, const std::string &needle) {
        try {
            ctx().enqueue_function(scalar_add, v, int64_t(4), 1.0f, LaunchConfig{g, b});
            ADD_FAILURE() << "no error for " << needle;
        } catch (const LogicError &e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_logic(1, 2048, "block_dim (2048, 1, 1) has x = 2048 but");
    expect_logic(1, {32, 32, 2}, "has 2048 threads but");
    expect_logic(1, {1, 1, 65}, "has z = 65 but");
    expect_logic(0, 1, "grid_dim (0, 1, 1) has x = 0; every dimension must be at least 1");
    expect_logic({1, 70000}, 1, "grid_dim (1, 70000, 1) has y = 70000 but");
    try {
        ctx().enqueue_function(scalar_add, v, int64_t(4), 1.0f, grid_dim(1));
        ADD_FAILURE() << "no error without block_dim";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("needs block_dim(...)"), std::string::npos) << e.what();
    }
}

TEST_P(DeviceContextTest, WideningArgumentsAreAccepted) {
    auto k = kernel("widen", {"out", "a", "b", "c"}, [](Ptr<double> out, Int a, UInt64 b, Float64 c) {
        out[0] = cast<double>(a) + cast<double>(b) + c;
    });
    auto out = ctx().enqueue_create_buffer<double>(1);
    int a = -3;            // int -> Int (i64)
    uint32_t b = 10;       // u32 -> UInt64
    float c = 0.5f;        // f32 -> Float64
    ctx().enqueue_function(k, out, a, b, c, grid_dim(1), block_dim(1));
    double r = 0;
    ctx().enqueue_copy(&r, out);
    ctx().synchronize();
    EXPECT_DOUBLE_EQ(r, 7.5);
}

TEST_P(DeviceContextTest, BoolAndSmallIntegerParameters) {
    auto k = kernel("flags", {"out", "flag", "small", "u"},
                    [](Ptr<int32_t> out, Bool flag, Int8 small, UInt16 u) {
                        out[0] = select(flag, cast<int32_t>(small), cast<int32_t>(u));
                    });
    auto out = ctx().enqueue_create_buffer<int32_t>(1);
    int32_t r = 0;
    ctx().enqueue_function(k, out, true, int8_t(-7), uint16_t(60000), grid_dim(1), block_dim(1));
    ctx().enqueue_copy(&r, out);
    ctx().synchronize();
    EXPECT_EQ(r, -7);
    ctx().enqueue_function(k, out, false, int8_t(-7), uint16_t(60000), grid_dim(1), block_dim(1));
    ctx().enqueue_copy(&r, out);
    ctx().synchronize();
    EXPECT_EQ(r, 60000);
}

TEST_P(DeviceContextTest, DumpOptionsWriteFiles) {
    auto dir = std::filesystem::temp_directory_path() / ("ember-dump-" + GetParam() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    CompileFunctionOptions opts;
    opts.dump_llvm = dir / "k.ll";
    opts.dump_asm = std::function<std::filesystem::path()>([&] { return dir / "k.s"; });
    opts.dump_ir = dir / "k.eir";
    auto fn = ctx().compile_function(scalar_add, opts);
    auto slurp = [](const std::filesystem::path &p) {
        std::ifstream in(p);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    };
    EXPECT_NE(slurp(dir / "k.ll").find("scalar_add"), std::string::npos);
    EXPECT_NE(slurp(dir / "k.eir").find("kernel @scalar_add("), std::string::npos);
    std::string asm_text = slurp(dir / "k.s");
    EXPECT_FALSE(asm_text.empty());
    if (GetParam() == "cuda") {
        EXPECT_NE(asm_text.find(".entry scalar_add"), std::string::npos);
    }
    EXPECT_FALSE(fn.assembly().empty());
    EXPECT_GT(fn.compile_seconds(), 0.0);
    std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(AllApis, DeviceContextTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace

// --- a user-defined DevicePassable type --------------------------------------------------------

struct Kelvin {
    double kelvin;
};
template <> struct ember::DevicePassable<Kelvin> {
    using device_type = ember::Float32;
    static float to_device(const Kelvin &k) { return static_cast<float>(k.kelvin - 273.15); }
};

namespace {

TEST(DevicePassableTest, UserSpecialisationConvertsTheValue) {
    DeviceContext ctx(0, "cpu");
    auto v = ctx.enqueue_create_buffer<float>(4);
    std::vector<float> zeros(4, 0.0f), r(4);
    ctx.enqueue_copy(v, zeros.data());
    ctx.enqueue_function(scalar_add, v, int64_t(4), Kelvin{300.0}, grid_dim(1), block_dim(4));
    ctx.enqueue_copy(r.data(), v);
    ctx.synchronize();
    EXPECT_NEAR(r[3], 26.85f, 1e-4);
}

static_assert(std::is_same_v<DevicePassable<int64_t>::device_type, Int>);
static_assert(std::is_same_v<DevicePassable<long long>::device_type, Int>);
static_assert(std::is_same_v<DevicePassable<int>::device_type, Int32>);
static_assert(std::is_same_v<DevicePassable<float>::device_type, Float32>);
static_assert(std::is_same_v<DevicePassable<DeviceBuffer<float>>::device_type, Ptr<float>>);
static_assert(detail::widens<Int32, Int>::value && !detail::widens<Int, Int32>::value);
static_assert(detail::widens<UInt32, Int>::value && !detail::widens<UInt64, Int>::value);
static_assert(!detail::widens<Int32, UInt64>::value && detail::widens<Float32, Float64>::value);
static_assert(!detail::widens<Float64, Float32>::value && !detail::widens<Int, Float64>::value);

TEST(DeviceContextApiTest, UnknownApisAndIdsAreClearErrors) {
    try {
        DeviceContext c(0, "metal");
        FAIL();
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("unknown api 'metal'"), std::string::npos);
    }
    try {
        DeviceContext c(1, "cpu");
        FAIL();
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("no CPU device with id 1"), std::string::npos);
    }
    if (detail::cuda_device_count() == 0) {
        EXPECT_THROW(DeviceContext(0, "cuda"), Error);
        EXPECT_FALSE(has_nvidia_gpu_accelerator());
    } else {
        int n = detail::cuda_device_count();
        try {
            DeviceContext c(n, "cuda");
            FAIL();
        } catch (const LogicError &e) {
            EXPECT_NE(std::string(e.what()).find("no CUDA device with id " + std::to_string(n)),
                      std::string::npos)
                << e.what();
        }
        EXPECT_TRUE(has_nvidia_gpu_accelerator());
        EXPECT_TRUE(has_accelerator());
    }
    EXPECT_THROW(DeviceContext(0, "hip"), RuntimeError);
}

TEST(DeviceContextApiTest, DefaultApiFollowsEmberApi) {
    const char *old = std::getenv("EMBER_API");
    std::string saved = old ? old : "";
    ::setenv("EMBER_API", "cpu", 1);
    EXPECT_EQ(DeviceContext().api(), "cpu");
    ::setenv("EMBER_API", "vulkan", 1);
    EXPECT_THROW(DeviceContext(), LogicError);
    ::unsetenv("EMBER_API");
    EXPECT_EQ(DeviceContext().api(), detail::cuda_device_count() > 0 ? "cuda" : "cpu");
    if (old) ::setenv("EMBER_API", saved.c_str(), 1);
}

TEST(HostBufferTest, PrintsLikeMojo) {
    DeviceContext ctx(0, "cpu");
    auto f = ctx.enqueue_create_host_buffer<float>(4);
    f[0] = 0.0f, f[1] = 0.1f, f[2] = -2.5f, f[3] = 1e20f;
    EXPECT_EQ(f.to_string(), "HostBuffer([0.0, 0.1, -2.5, 1e+20])");
    auto i = ctx.enqueue_create_host_buffer<int32_t>(3);
    i[0] = 1, i[1] = -2, i[2] = 3;
    EXPECT_EQ(i.to_string(), "HostBuffer([1, -2, 3])");
    auto b = ctx.enqueue_create_host_buffer<bool>(2);
    b[0] = true, b[1] = false;
    EXPECT_EQ(b.to_string(), "HostBuffer([True, False])");
    EXPECT_EQ(ctx.enqueue_create_host_buffer<double>(0).to_string(), "HostBuffer([])");
}

} // namespace
