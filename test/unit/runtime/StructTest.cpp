/// \file
/// Structs passed by value to kernels and device functions, on every api: a View from a host
/// struct through DevicePassable, nested structs from reflected host structs without any
/// specialisation, mixed scalar fields, a struct with shared memory built in the kernel, and a
/// buffer of another context inside a struct.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

using namespace ember;

namespace runtime_structs {

// --- device side -----------------------------------------------------------------------------

struct View {
    Ptr<float> data;
    Int n;
};
EMBER_STRUCT(View, data, n)

struct Pair {
    Ptr<const float> x;
    NoAlias<Ptr<float>> y;
};
EMBER_STRUCT(Pair, x, y)

// Nested: a Pair inside, and scalars after it.
struct Axpy {
    Pair io;
    Float32 a;
    Int n;
};
EMBER_STRUCT(Axpy, io, a, n)

// Scalars of every size, in an order that would need padding in a C struct.
struct Mixed {
    Bool flag;
    Int8 small;
    Float64 big;
    UInt16 mid;
    Int32 k;
    Float16 h;
};
EMBER_STRUCT(Mixed, flag, small, big, mid, k, h)

struct Tile {
    SharedPtr<float> data;
    Int size;
};
EMBER_STRUCT(Tile, data, size)

// --- host side -------------------------------------------------------------------------------

// Through DevicePassable: a reference to the buffer, and the element count.
struct HostView {
    DeviceBuffer<float> &buf;
    int64_t n;
};

// Reflected host structs: passed field by field, by name, without a specialisation.
struct HostPair {
    DeviceBuffer<float> x;
    DeviceBuffer<float> y;
};
EMBER_STRUCT(HostPair, x, y)
struct HostAxpy {
    HostPair io;
    float a;
    int n; // an int for an Int: widens as a plain argument would
};
EMBER_STRUCT(HostAxpy, io, a, n)

struct HostMixed {
    bool flag;
    int8_t small;
    double big;
    uint16_t mid;
    int32_t k;
    half h;
};
EMBER_STRUCT(HostMixed, flag, small, big, mid, k, h)

} // namespace runtime_structs

template <> struct ember::DevicePassable<runtime_structs::HostView> {
    using device_type = runtime_structs::View;
    static auto to_device(const runtime_structs::HostView &h) { return std::tuple(std::cref(h.buf), h.n); }
};

namespace {

using namespace runtime_structs;

class StructTest : public ember::testing::DeviceTest {};

// v.data[i] = v.data[i] * s + offset(v), for i < v.n: a struct passed on to device functions.
const auto offset = device_function("offset", {"v"}, [](View v) { return cast<float>(v.n) * 0.5f; });
const auto scale_at = device_function("scale_at", {"v", "i", "s"}, [](View v, Int i, Float32 s) {
    if_(i < v.n, [&] { v.data[i] = v.data[i] * s + offset(v); });
});
const auto scale = kernel("scale", {"v", "s"}, [](View v, Float32 s) { scale_at(v, global_idx.x, s); });

TEST_P(StructTest, ViewFromAHostStructThroughDevicePassable) {
    const int64_t size = 300, n = 257; // elements past n stay as they are
    std::vector<float> host(size);
    for (int64_t i = 0; i < size; ++i) host[i] = 0.25f * static_cast<float>(i) - 3.0f;
    auto buf = ctx().enqueue_create_buffer<float>(size);
    ctx().enqueue_copy(buf, host.data());
    ctx().enqueue_function(scale, HostView{buf, n}, 2.0f, grid_dim((size + 63) / 64), block_dim(64));
    // The same through compile_function's DeviceFunction.
    auto fn = ctx().compile_function(scale);
    ctx().enqueue_function(fn, HostView{buf, n}, -1.5f, grid_dim((size + 63) / 64), block_dim(64));
    std::vector<float> out(size);
    ctx().enqueue_copy(out.data(), buf);
    ctx().synchronize();
    const float off = static_cast<float>(n) * 0.5f;
    for (int64_t i = 0; i < size; ++i) {
        float want = host[i];
        if (i < n) want = (want * 2.0f + off) * -1.5f + off;
        ASSERT_EQ(out[i], want) << "i=" << i;
    }
}

// y[i] = a * x[i] + y[i] through a device function taking the nested struct, and a struct built
// in the kernel (a prefix of the problem) passed to the same function.
const auto axpy_at = device_function("axpy_at", {"p", "i"}, [](Axpy p, Int i) {
    if_(i < p.n, [&] { p.io.y[i] = p.a * p.io.x[i] + p.io.y[i]; });
});
const auto axpy = kernel("axpy", {"p", "extra"}, [](Axpy p, Float32 extra) {
    Int i = global_idx.x;
    axpy_at(p, i);
    axpy_at(Axpy{p.io, extra, p.n / 2}, i); // the first half again, with another factor
});

TEST_P(StructTest, NestedStructsFromReflectedHostStructs) {
    const int n = 1000;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 17) - 8.0f;
        y[i] = 0.5f * static_cast<float>(i);
    }
    auto dx = ctx().enqueue_create_buffer<float>(n);
    auto dy = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(dx, x.data());
    ctx().enqueue_copy(dy, y.data());
    ctx().enqueue_function(axpy, HostAxpy{{dx, dy}, 3.0f, n}, 0.25f, grid_dim((n + 127) / 128), block_dim(128));
    std::vector<float> out(n);
    ctx().enqueue_copy(out.data(), dy);
    ctx().synchronize();
    for (int i = 0; i < n; ++i) {
        float want = 3.0f * x[i] + y[i];
        if (i < n / 2) want = 0.25f * x[i] + want;
        ASSERT_EQ(out[i], want) << "i=" << i;
    }
}

// Each field lands in its own parameter, whatever its size and alignment.
const auto mixed = kernel("mixed", {"m", "out"}, [](Mixed m, Ptr<double> out) {
    out[0] = select(m.flag, Float64(1.0), Float64(2.0));
    out[1] = cast<double>(m.small);
    out[2] = m.big;
    out[3] = cast<double>(m.mid);
    out[4] = cast<double>(m.k);
    out[5] = cast<double>(cast<float>(m.h));
});

TEST_P(StructTest, MixedScalarFields) {
    auto out = ctx().enqueue_create_buffer<double>(6);
    ctx().enqueue_function(mixed, HostMixed{true, int8_t{-7}, 1.0e300, uint16_t{65000}, -123456, half(2.5f)}, out,
                           grid_dim(1), block_dim(1));
    std::vector<double> got(6);
    ctx().enqueue_copy(got.data(), out);
    ctx().synchronize();
    EXPECT_EQ(got, (std::vector<double>{1.0, -7.0, 1.0e300, 65000.0, -123456.0, 2.5}));
}

// A struct holding a shared-memory pointer, built in the kernel, read by a device function after
// a barrier: every thread sums its block's tile.
const auto tile_sum = device_function("tile_sum", {"t"}, [](Tile t) {
    Var<float> acc(0.0f);
    for_(0, t.size, [&](Int j) { acc += t.data[j]; });
    return Float32(acc);
});
const auto block_sums = kernel("block_sums", {"in", "out"}, [](View in, Ptr<float> out) {
    auto tile = shared_array<float, 64>();
    Int i = global_idx.x;
    tile[thread_idx.x] = 0.0f;
    if_(i < in.n, [&] { tile[thread_idx.x] = in.data[i]; });
    barrier();
    if_(i < in.n, [&] { out[i] = tile_sum(Tile{tile, block_dim.x}); });
});

TEST_P(StructTest, SharedMemoryStructInADeviceFunction) {
    const int64_t n = 200;
    std::vector<float> in(n);
    for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 5);
    auto din = ctx().enqueue_create_buffer<float>(n);
    auto dout = ctx().enqueue_create_buffer<float>(n);
    ctx().enqueue_copy(din, in.data());
    ctx().enqueue_function(block_sums, HostView{din, n}, dout, grid_dim((n + 63) / 64), block_dim(64));
    std::vector<float> out(n);
    ctx().enqueue_copy(out.data(), dout);
    ctx().synchronize();
    for (int64_t i = 0; i < n; ++i) {
        float want = 0.0f;
        for (int64_t j = i / 64 * 64; j < std::min(n, i / 64 * 64 + 64); ++j) want += in[j];
        ASSERT_EQ(out[i], want) << "i=" << i;
    }
}

TEST_P(StructTest, ABufferOfAnotherContextInAStructNamesTheField) {
    DeviceContext other(0, "cpu");
    auto mine = ctx().enqueue_create_buffer<float>(4);
    auto theirs = other.enqueue_create_buffer<float>(4);
    try {
        ctx().enqueue_function(axpy, HostAxpy{{mine, theirs}, 1.0f, 4}, 1.0f, grid_dim(1), block_dim(4));
        FAIL() << "no LogicError";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("argument 0 ('p'), field 'io.y' is a DeviceBuffer of"),
                  std::string::npos)
            << e.what();
    }
    try {
        ctx().enqueue_function(axpy, HostAxpy{{DeviceBuffer<float>(), mine}, 1.0f, 4}, 1.0f, grid_dim(1),
                               block_dim(4));
        FAIL() << "no LogicError";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("argument 0 ('p'), field 'io.x' is an empty DeviceBuffer"),
                  std::string::npos)
            << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(AllApis, StructTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
