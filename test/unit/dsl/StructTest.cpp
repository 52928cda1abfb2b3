/// \file
/// Struct parameters (EMBER_STRUCT): the flattened IR of kernels and device functions, calls
/// with struct arguments, and misuse found while tracing.
#include "ember/compiler/IRPrinter.h"
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

namespace structs_test {

struct View {
    Ptr<float> data;
    Int n;
};
EMBER_STRUCT(View, data, n)

// Nested, with every kind of global pointer and a const field.
struct Job {
    View out;
    Ptr<const float> in;
    NoAlias<Ptr<int32_t>> flags;
    const Float32 scale;
};
EMBER_STRUCT(Job, out, in, flags, scale)

// Shared and local pointers: device functions only.
struct Scratch {
    SharedPtr<float> tile;
    LocalPtr<int32_t> mine;
    Int32 width;
};
EMBER_STRUCT(Scratch, tile, mine, width)

} // namespace structs_test

namespace {

using structs_test::Job;
using structs_test::Scratch;
using structs_test::View;

std::string ir_of(const auto &k) { return ir::print(k.ir()); }
bool has(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

template <class F> std::string dsl_error_of(F &&f) {
    try {
        f();
    } catch (const DslError &e) {
        return e.what();
    }
    return "<no DslError>";
}

static_assert(ReflectedStruct<View> && ReflectedStruct<const Job>);
static_assert(!ReflectedStruct<Int> && !ReflectedStruct<Ptr<float>> && !ReflectedStruct<int>);
static_assert(detail::struct_info<Job>::size == 4);
static_assert(detail::struct_info<Job>::name<2>.view() == "flags");

TEST(StructTest, AStructParameterIsOneIRParameterPerField) {
    auto k = kernel("k", {"v", "s"}, [](View v, Float32 s) {
        auto i = global_idx.x;
        if_(i < v.n, [&] { v.data[i] *= s; });
    });
    EXPECT_EQ(ir_of(k), "kernel @k(%v.data: ptr<global f32>, %v.n: i64, %s: f32) {\n"
                        "  if (((block_dim.x * block_idx.x) + thread_idx.x) < %v.n) {\n"
                        "    let %0: f32 = %v.data[((block_dim.x * block_idx.x) + thread_idx.x)]\n"
                        "    %v.data[((block_dim.x * block_idx.x) + thread_idx.x)] = (%0 * %s)\n"
                        "  }\n"
                        "}\n");
    // The handle keeps the user's parameters: one name per argument of enqueue_function.
    EXPECT_EQ(k.param_names(), (std::vector<std::string>{"v", "s"}));
    static_assert(std::is_same_v<decltype(k), Kernel<View, Float32>>);
}

TEST(StructTest, NestedStructsFlattenRecursivelyAndKeepPointerAttributes) {
    auto k = kernel("job", {"j"}, [](Job j) { j.out.data[0] = j.in[0] * j.scale + cast<float>(j.out.n); });
    EXPECT_TRUE(has(ir_of(k), "kernel @job(%j.out.data: ptr<global f32>, %j.out.n: i64, "
                              "%j.in: ptr<global const f32>, %j.flags: ptr<global i32> noalias, "
                              "%j.scale: f32) {\n"))
        << ir_of(k);
}

TEST(StructTest, AnonymousStructParametersAreNamedByTheirFields) {
    auto k = kernel("anon", [](View v, Int32 x) { v.data[0] = cast<float>(x); });
    EXPECT_TRUE(has(ir_of(k), "kernel @anon(%data: ptr<global f32>, %n: i64, %0: i32)")) << ir_of(k);
}

TEST(StructTest, DeviceFunctionsTakeStructsFieldByField) {
    auto sum = device_function("sum", {"v"}, [](View v) {
        Var<float> acc(0.0f);
        for_(0, v.n, [&](Int i) { acc += v.data[i]; });
        return Float32(acc);
    });
    auto fill = device_function("fill", {"s", "v"}, [](Scratch s, Float32 v) {
        s.tile[thread_idx.x] = v;
        s.mine[0] = s.width;
    });
    auto k = kernel("k", {"v"}, [&](View v) {
        auto tile = shared_array<float, 32>();
        auto mine = local_array<int32_t, 4>();
        fill(Scratch{tile, mine, 32}, sum(v));
        // A struct built in the kernel from fields and expressions.
        v.data[1] = sum(View{v.data, v.n - 1});
    });
    EXPECT_TRUE(has(ir::print(*sum.ir()), "func @sum(%v.data: ptr<global f32>, %v.n: i64) -> f32 {"))
        << ir::print(*sum.ir());
    EXPECT_TRUE(has(ir::print(*fill.ir()),
                    "func @fill(%s.tile: ptr<shared f32>, %s.mine: ptr<local i32>, %s.width: i32, %v: f32) {"))
        << ir::print(*fill.ir());
    std::string text = ir_of(k);
    EXPECT_TRUE(has(text, "let %2: f32 = @sum(%v.data, %v.n)\n")) << text;
    EXPECT_TRUE(has(text, "@fill(%0, %1, 32:i32, %2)\n")) << text;
    EXPECT_TRUE(has(text, "@sum(%v.data, (%v.n - 1:i64))")) << text;
}

TEST(StructTest, FlattenedIRParsesBack) {
    auto twice = device_function("twice", {"j"}, [](Job j) { return j.scale * 2.0f; });
    auto k = kernel("roundtrip", {"j", "v"}, [&](Job j, View v) { v.data[0] = twice(j) + j.in[v.n]; });
    std::string text = ir_of(k);
    ir::Module m = ir::parse_module(text);
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_EQ(ir::print(m.kernels[0]), text);
}

// --- misuse: DslError naming this file and the line -----------------------------------------

TEST(StructErrorTest, NameCountCountsStructsAsOneParameter) {
    std::string msg = dsl_error_of([] {
        kernel("k", {"v.data", "v.n", "s"}, [](View v, Float32 s) { v.data[0] = s; });
    });
    EXPECT_TRUE(has(msg, "3 parameter names given for 2 parameters")) << msg;
}

TEST(StructErrorTest, AStructOfAnotherKernelCannotBePassedToAFunction) {
    auto get = device_function("get", [](View v) { return Float32(v.data[0]); });
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("outer", [&](View v) {
            kernel("inner", [&](Ptr<float> p) {
                line = __LINE__ + 1;
                p[0] = get(v);
            });
        });
    });
    EXPECT_TRUE(has(msg, "a value traced in kernel 'outer' is used in kernel 'inner'")) << msg;
    EXPECT_TRUE(has(msg, "StructTest.cpp:" + std::to_string(line))) << msg;
}

TEST(StructErrorTest, AFunctionCannotCaptureAKernelsStruct) {
    std::string msg = dsl_error_of([] {
        kernel("k", [](View v) {
            auto leak = device_function("leak", [&](Int i) { return Float32(v.data[i]); });
            v.data[0] = leak(0);
        });
    });
    EXPECT_TRUE(has(msg, "device function 'leak'")) << msg;
}

TEST(StructErrorTest, FieldsOfMixedKernelsAreReportedAtTheCall) {
    auto get = device_function("get", [](View v) { return Float32(v.data[0]); });
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("outer", [&](Ptr<float> p) {
            kernel("inner", [&](Ptr<float> q, Int n) {
                line = __LINE__ + 1;
                q[0] = get(View{p, n}); // p is outer's, n inner's
            });
        });
    });
    EXPECT_TRUE(has(msg, "a value traced in kernel 'outer' is used in kernel 'inner'")) << msg;
    EXPECT_TRUE(has(msg, "StructTest.cpp:" + std::to_string(line))) << msg;
}

} // namespace
