/// \file
/// Constant memory on every api: kernels read constant_array coefficients written through
/// DeviceFunction::get_global + enqueue_copy and through the constant_memory launch option
/// (ordered on the launch's stream), initial values, device functions taking the ConstPtr, SIMD
/// loads, independence of two kernels' arrays of one name, and the errors of misuse (unknown
/// names, sizes, empty or foreign globals, more than 64 KiB). CUDA cases skip with a message
/// where there is no GPU; select them with --gtest_filter='*ConstantMemory*'.
#include "ember/ember.h"

#include "DeviceTest.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

using namespace ember;

namespace {

constexpr int kDegree = 7;
constexpr int64_t kN = 4096;
constexpr int64_t kBlock = 128;

// out[i] = sum_k coeffs[k] * x_i^k (Horner), with x_i = i % 7 - 3: small integers, so every
// intermediate value is an integer well inside f32's exact range and the result is exact on
// every target.
const auto poly = kernel("poly", {"out", "n"}, [](Ptr<float> out, Int n) {
    auto coeffs = constant_array<float, kDegree + 1>("coeffs");
    auto i = global_idx.x;
    if_(i < n, [&] {
        Float32 x = cast<float>(i % 7 - 3);
        Var<float> acc(0.0f);
        for (int k = kDegree; k >= 0; --k) acc = acc * x + coeffs[k];
        out[i] = acc;
    });
});

float horner(const std::array<float, kDegree + 1> &c, int64_t i) {
    const float x = static_cast<float>(i % 7 - 3);
    float acc = 0.0f;
    for (int k = kDegree; k >= 0; --k) acc = acc * x + c[k];
    return acc;
}

class ConstantMemoryTest : public ember::testing::DeviceTest {
protected:
    std::vector<float> run(const DeviceFunction<Ptr<float>, Int> &f) {
        auto out = ctx().enqueue_create_buffer<float>(kN);
        ctx().enqueue_function(f, out, kN, grid_dim(kN / kBlock), block_dim(kBlock));
        std::vector<float> host(kN);
        ctx().enqueue_copy(host.data(), out);
        ctx().synchronize();
        return host;
    }
    void expect_poly(const std::vector<float> &got, const std::array<float, kDegree + 1> &c) {
        ASSERT_EQ(got.size(), size_t(kN));
        for (int64_t i = 0; i < kN; ++i)
            if (got[i] != horner(c, i)) {
                ADD_FAILURE() << "element " << i << " is " << got[i] << ", want " << horner(c, i);
                return;
            }
    }
    template <class F> std::string logic_error_of(F &&f) {
        try {
            f();
        } catch (const LogicError &e) {
            return e.what();
        }
        return "<no LogicError>";
    }
};

bool has(const std::string &msg, const std::string &part) { return msg.find(part) != std::string::npos; }

const std::array<float, kDegree + 1> first = {1, -2, 3, 0, 1, -1, 2, 1};
const std::array<float, kDegree + 1> second = {-4, 0, 1, 2, 0, 0, -1, 3};

TEST_P(ConstantMemoryTest, PolynomialFromGetGlobalThenFromConstantMemoryAtLaunch) {
    auto f = ctx().compile_function(poly);
    DeviceGlobal g = f.get_global("coeffs");
    EXPECT_TRUE(g);
    EXPECT_EQ(g.name(), "coeffs");
    EXPECT_EQ(g.bytes(), (kDegree + 1) * sizeof(float));
    EXPECT_NE(g.address(), 0u);

    // Zeros until written.
    std::vector<float> zero = run(f);
    expect_poly(zero, {});

    ctx().enqueue_copy(g, std::vector<float>(first.begin(), first.end()));
    expect_poly(run(f), first);

    // The launch option writes before the launch, and the values stay for later launches.
    auto out = ctx().enqueue_create_buffer<float>(kN);
    ctx().enqueue_function(f, out, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                           constant_memory({{"coeffs", second.data(), sizeof second}}));
    std::vector<float> host(kN);
    ctx().enqueue_copy(host.data(), out);
    ctx().synchronize();
    expect_poly(host, second);
    expect_poly(run(f), second);

    // Read back through the global: into a host pointer, a HostBuffer and a DeviceBuffer.
    std::array<float, kDegree + 1> back{};
    ctx().enqueue_copy(back.data(), g);
    auto hb = ctx().enqueue_create_host_buffer<float>(kDegree + 1);
    ctx().enqueue_copy(hb, g);
    auto db = ctx().enqueue_create_buffer<float>(kDegree + 1);
    ctx().enqueue_copy(db, g);
    std::array<float, kDegree + 1> via_device{};
    ctx().enqueue_copy(via_device.data(), db);
    ctx().synchronize();
    for (int k = 0; k <= kDegree; ++k) {
        EXPECT_EQ(back[k], second[k]) << k;
        EXPECT_EQ(hb[k], second[k]) << k;
        EXPECT_EQ(via_device[k], second[k]) << k;
    }

    // And written from a HostBuffer and from a DeviceBuffer.
    for (int k = 0; k <= kDegree; ++k) hb[k] = first[k];
    ctx().enqueue_copy(g, hb);
    expect_poly(run(f), first);
    ctx().enqueue_copy(db, second.data());
    ctx().enqueue_copy(g, db);
    expect_poly(run(f), second);
}

TEST_P(ConstantMemoryTest, ConstantMemoryIsOrderedOnTheLaunchStream) {
    // Two launches on one stream, each with its own values, without synchronising in between:
    // each sees the values written just before it. The host array is reused right after each
    // call (the copy has read it by then).
    auto f = ctx().compile_function(poly);
    DeviceStream s = ctx().create_stream();
    auto out1 = ctx().enqueue_create_buffer<float>(kN);
    auto out2 = ctx().enqueue_create_buffer<float>(kN);
    std::array<float, kDegree + 1> values = first;
    s.enqueue_function(f, out1, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                       constant_memory({{"coeffs", values.data(), sizeof values}}));
    values = second;
    s.enqueue_function(f, out2, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                       constant_memory({{"coeffs", values.data(), sizeof values}}));
    values.fill(99.0f);
    // A copy to the global on the stream is ordered the same way.
    const std::array<float, kDegree + 1> third = {2, 2, -1, 0, 0, 1, 0, -1};
    auto out3 = ctx().enqueue_create_buffer<float>(kN);
    s.enqueue_copy(f.get_global("coeffs"), third.data());
    s.enqueue_function(f, out3, kN, grid_dim(kN / kBlock), block_dim(kBlock));
    std::vector<float> h1(kN), h2(kN), h3(kN);
    s.enqueue_copy(h1.data(), out1);
    s.enqueue_copy(h2.data(), out2);
    s.enqueue_copy(h3.data(), out3);
    s.synchronize();
    expect_poly(h1, first);
    expect_poly(h2, second);
    expect_poly(h3, third);
}

TEST_P(ConstantMemoryTest, CachedKernelsTakeConstantMemoryToo) {
    auto out = ctx().enqueue_create_buffer<float>(kN);
    ctx().enqueue_function(poly, out, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                           constant_memory({{"coeffs", first.data(), sizeof first}}));
    std::vector<float> host(kN);
    ctx().enqueue_copy(host.data(), out);
    ctx().synchronize();
    expect_poly(host, first);
}

TEST_P(ConstantMemoryTest, InitialValuesAreThereWhenLoaded) {
    auto k = kernel("initial", {"out"}, [](Ptr<int32_t> out) {
        auto t = constant_array<int32_t, 4>("table", {10, -20, 30, -40});
        out[thread_idx.x] = t[thread_idx.x] + 1;
    });
    auto f = ctx().compile_function(k);
    auto out = ctx().enqueue_create_buffer<int32_t>(4);
    ctx().enqueue_function(f, out, grid_dim(1), block_dim(4));
    std::array<int32_t, 4> host{}, table{};
    ctx().enqueue_copy(host.data(), out);
    ctx().enqueue_copy(table.data(), f.get_global("table"));
    ctx().synchronize();
    EXPECT_EQ(host, (std::array<int32_t, 4>{11, -19, 31, -39}));
    EXPECT_EQ(table, (std::array<int32_t, 4>{10, -20, 30, -40}));
}

TEST_P(ConstantMemoryTest, TwoKernelsWithTheSameGlobalNameAreIndependent) {
    auto a = kernel("const_a", {"out"}, [](Ptr<int64_t> out) {
        auto c = constant_array<int64_t, 2>("shared_name");
        out[thread_idx.x] = c[thread_idx.x];
    });
    auto b = kernel("const_b", {"out"}, [](Ptr<int64_t> out) {
        auto c = constant_array<int64_t, 2>("shared_name");
        out[thread_idx.x] = c[thread_idx.x] * 10;
    });
    auto fa = ctx().compile_function(a);
    auto fb = ctx().compile_function(b);
    // Two compilations of one kernel are two modules, each with its own global, too.
    auto fa2 = ctx().compile_function(a);
    const std::array<int64_t, 2> va{1, 2}, vb{3, 4}, va2{5, 6};
    ctx().enqueue_copy(fa.get_global("shared_name"), va.data());
    ctx().enqueue_copy(fb.get_global("shared_name"), vb.data());
    ctx().enqueue_copy(fa2.get_global("shared_name"), va2.data());
    EXPECT_NE(fa.get_global("shared_name").address(), fb.get_global("shared_name").address());
    auto oa = ctx().enqueue_create_buffer<int64_t>(2);
    auto ob = ctx().enqueue_create_buffer<int64_t>(2);
    auto oa2 = ctx().enqueue_create_buffer<int64_t>(2);
    ctx().enqueue_function(fa, oa, grid_dim(1), block_dim(2));
    ctx().enqueue_function(fb, ob, grid_dim(1), block_dim(2));
    ctx().enqueue_function(fa2, oa2, grid_dim(1), block_dim(2));
    std::array<int64_t, 2> ha{}, hb{}, ha2{};
    ctx().enqueue_copy(ha.data(), oa);
    ctx().enqueue_copy(hb.data(), ob);
    ctx().enqueue_copy(ha2.data(), oa2);
    ctx().synchronize();
    EXPECT_EQ(ha, (std::array<int64_t, 2>{1, 2}));
    EXPECT_EQ(hb, (std::array<int64_t, 2>{30, 40}));
    EXPECT_EQ(ha2, (std::array<int64_t, 2>{5, 6}));
}

TEST_P(ConstantMemoryTest, DeviceFunctionsAndSimdLoadsReadConstantMemory) {
    auto dot4 = device_function("dot4", {"c", "x"}, [](ConstPtr<float> c, Float32 x) {
        auto v = c.load<4>(0); // one 16-byte load: constant arrays start 16-byte aligned
        return v[0] + x * (v[1] + x * (v[2] + x * v[3]));
    });
    auto k = kernel("const_dot", {"out"}, [&](Ptr<float> out) {
        auto c = constant_array<float, 8>("c");
        Float32 x = cast<float>(thread_idx.x);
        out[thread_idx.x] = dot4(c, x) + c[4 + thread_idx.x % 4];
    });
    auto f = ctx().compile_function(k);
    const std::array<float, 8> c{1, 2, 3, 4, 100, 200, 300, 400};
    auto out = ctx().enqueue_create_buffer<float>(32);
    ctx().enqueue_function(f, out, grid_dim(1), block_dim(32), constant_memory({{"c", c.data(), sizeof c}}));
    std::vector<float> host(32);
    ctx().enqueue_copy(host.data(), out);
    ctx().synchronize();
    for (int i = 0; i < 32; ++i) {
        const float x = float(i);
        EXPECT_EQ(host[i], (1 + x * (2 + x * (3 + x * 4))) + c[4 + i % 4]) << i;
    }
}

TEST_P(ConstantMemoryTest, UnknownNamesListTheKernelsConstantArrays) {
    auto f = ctx().compile_function(poly);
    std::string msg = logic_error_of([&] { f.get_global("coefs"); });
    EXPECT_TRUE(has(msg, "kernel 'poly' has no constant array named 'coefs'")) << msg;
    EXPECT_TRUE(has(msg, "its constant arrays: 'coeffs' (32 bytes)")) << msg;

    auto out = ctx().enqueue_create_buffer<float>(kN);
    const float v[8] = {};
    msg = logic_error_of([&] {
        ctx().enqueue_function(f, out, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                               constant_memory({{"coeffs", v, sizeof v}, {"nope", v, sizeof v}}));
    });
    EXPECT_TRUE(has(msg, "constant_memory('nope'): kernel 'poly' has no constant array named 'nope'")) << msg;
    EXPECT_TRUE(has(msg, "'coeffs' (32 bytes)")) << msg;

    auto none = kernel("no_constants", {"out"}, [](Ptr<float> o) { o[0] = 1.0f; });
    msg = logic_error_of([&] { ctx().compile_function(none).get_global("x"); });
    EXPECT_TRUE(has(msg, "its constant arrays: none")) << msg;
}

TEST_P(ConstantMemoryTest, SizeMismatchesNameTheGlobalAndBothSizes) {
    auto f = ctx().compile_function(poly);
    DeviceGlobal g = f.get_global("coeffs");
    std::string msg = logic_error_of([&] { ctx().enqueue_copy(g, std::vector<float>(4)); });
    EXPECT_TRUE(has(msg, "constant array 'coeffs' of kernel 'poly' has 32 bytes but the source vector has 16")) << msg;
    auto small = ctx().enqueue_create_host_buffer<float>(3);
    msg = logic_error_of([&] { ctx().enqueue_copy(small, g); });
    EXPECT_TRUE(has(msg, "has 32 bytes but the destination HostBuffer has 12")) << msg;
    auto dev = ctx().enqueue_create_buffer<double>(3);
    msg = logic_error_of([&] { ctx().enqueue_copy(g, dev); });
    EXPECT_TRUE(has(msg, "has 32 bytes but the source DeviceBuffer has 24")) << msg;
    // A host pointer of elements that do not tile the global.
    std::array<std::array<char, 3>, 11> odd{};
    msg = logic_error_of([&] { ctx().enqueue_copy(g, odd.data()); });
    EXPECT_TRUE(has(msg, "has 32 bytes but the source pointer's elements has 30")) << msg;

    auto out = ctx().enqueue_create_buffer<float>(kN);
    const float v[4] = {};
    msg = logic_error_of([&] {
        ctx().enqueue_function(f, out, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                               constant_memory({{"coeffs", v, sizeof v}}));
    });
    EXPECT_TRUE(has(msg, "constant_memory('coeffs'): constant array 'coeffs' of kernel 'poly' has 32 bytes but the "
                         "mapping gives 16"))
        << msg;
    msg = logic_error_of([&] {
        ctx().enqueue_function(f, out, kN, grid_dim(kN / kBlock), block_dim(kBlock),
                               constant_memory({{"coeffs", nullptr, 32}}));
    });
    EXPECT_TRUE(has(msg, "host pointer of the mapping is null")) << msg;
}

TEST_P(ConstantMemoryTest, EmptyAndForeignGlobalsAreRejected) {
    DeviceGlobal empty;
    EXPECT_FALSE(empty);
    const float v[8] = {};
    std::string msg = logic_error_of([&] { ctx().enqueue_copy(empty, v); });
    EXPECT_TRUE(has(msg, "destination DeviceGlobal is empty")) << msg;

    // A second context of the same device is another context: its copies cannot reach this one's
    // module.
    DeviceContext other(0, GetParam());
    auto f = other.compile_function(poly);
    msg = logic_error_of([&] { ctx().enqueue_copy(f.get_global("coeffs"), v); });
    EXPECT_TRUE(has(msg, "destination global 'coeffs' belongs to")) << msg;
}

TEST_P(ConstantMemoryTest, MoreThan64KiBIsACompileError) {
    // The kernel is verified when its trace ends, before any device sees it.
    try {
        auto big = kernel("too_much_constant", {"out"}, [](Ptr<float> out) {
            auto a = constant_array<float, 8192>("a");
            auto b = constant_array<float, 8192>("b");
            auto c = constant_array<float, 1>("c");
            out[0] = a[0] + b[0] + c[0];
        });
        ctx().compile_function(big);
        ADD_FAILURE() << "65540 bytes of constant arrays compiled";
    } catch (const CompileError &e) {
        const std::string msg = e.what();
        EXPECT_TRUE(has(msg, "kernel 'too_much_constant'")) << msg;
        EXPECT_TRUE(has(msg, "constant arrays add up to 65540 bytes")) << msg;
        EXPECT_TRUE(has(msg, "65536")) << msg;
    }
    // 64 KiB exactly is fine.
    auto fits = kernel("all_constant", {"out"}, [](Ptr<float> out) {
        auto a = constant_array<float, 8192>("a");
        auto b = constant_array<float, 8192>("b");
        out[thread_idx.x] = a[thread_idx.x] + b[8191 - thread_idx.x];
    });
    auto f = ctx().compile_function(fits);
    std::vector<float> a(8192), b(8192);
    for (int i = 0; i < 8192; ++i) {
        a[i] = float(i);
        b[i] = float(10 * i);
    }
    auto out = ctx().enqueue_create_buffer<float>(64);
    ctx().enqueue_function(f, out, grid_dim(1), block_dim(64),
                           constant_memory({{"a", a.data(), a.size() * sizeof(float)},
                                            {"b", b.data(), b.size() * sizeof(float)}}));
    std::vector<float> host(64);
    ctx().enqueue_copy(host.data(), out);
    ctx().synchronize();
    for (int i = 0; i < 64; ++i) EXPECT_EQ(host[i], float(i) + float(10 * (8191 - i))) << i;
}

INSTANTIATE_TEST_SUITE_P(Apis, ConstantMemoryTest, ember::testing::all_apis(), ember::testing::api_name);

} // namespace
