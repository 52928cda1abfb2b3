/// \file
/// constant_array while tracing: the IR it produces (a module global read through a ConstPtr<T>,
/// also in device functions), and the trace-time errors naming the array, the kernel and the
/// user's line.
#include "ember/compiler/IRPrinter.h"
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

namespace {

std::string ir_of(const auto &k) { return ir::print(k.ir()); }

template <class F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    return "<no error>";
}

bool has(const std::string &msg, const std::string &part) { return msg.find(part) != std::string::npos; }

} // namespace

TEST(ConstantArrayTest, TracesToAConstantGlobalAndLoads) {
    auto k = kernel("scale", {"out", "n"}, [](Ptr<float> out, Int n) {
        auto coeffs = constant_array<float, 4>("coeffs");
        auto i = global_idx.x;
        if_(i < n, [&] { out[i] = coeffs[i % 4] * coeffs[0]; });
    });
    const std::string text = ir_of(k);
    EXPECT_TRUE(has(text, "  constant %coeffs: f32[4] @coeffs\n")) << text;
    EXPECT_TRUE(has(text, "%coeffs[(((block_dim.x * block_idx.x) + thread_idx.x) % 4:i64)]")) << text;
    EXPECT_TRUE(has(text, "%coeffs[0:i64]")) << text;
    // The printed IR parses back to the same text.
    EXPECT_EQ(ir::print(ir::parse_module(text)), text);
    std::vector<ir::ConstantGlobal> globals = ir::constant_globals(k.ir());
    ASSERT_EQ(globals.size(), 1u);
    EXPECT_EQ(globals[0].name, "coeffs");
    EXPECT_EQ(globals[0].bytes, 16u);
}

TEST(ConstantArrayTest, InitialValuesAreImmediatesOfTheElementType) {
    auto k = kernel("init", {"out"}, [](Ptr<int32_t> out) {
        auto t = constant_array<int32_t, 3>("table", {1, -2, 3});
        out[thread_idx.x] = t[thread_idx.x];
    });
    EXPECT_TRUE(has(ir_of(k), "  constant %table: i32[3] @table = [1:i32, -2:i32, 3:i32]\n")) << ir_of(k);
}

TEST(ConstantArrayTest, DeviceFunctionsTakeTheConstPtr) {
    auto dot2 = device_function("dot2", {"c", "x"}, [](ConstPtr<float> c, Float32 x) { return c[0] + c[1] * x; });
    auto k = kernel("use", {"out"}, [&](Ptr<float> out) {
        auto c = constant_array<float, 2>("c");
        out[thread_idx.x] = dot2(c, 2.0f);
    });
    const std::string text = ir_of(k);
    EXPECT_TRUE(has(text, "func @dot2(%c: ptr<constant const f32>, %x: f32) -> f32 {")) << text;
    EXPECT_TRUE(has(text, "@dot2(%c, 2.0:f32)")) << text;
}

TEST(ConstantArrayTest, TwoKernelsMayUseTheSameName) {
    auto a = kernel("a", [](Ptr<float> out) { out[0] = constant_array<float, 1>("c")[0]; });
    auto b = kernel("b", [](Ptr<float> out) { out[0] = constant_array<float, 2>("c")[1]; });
    EXPECT_TRUE(has(ir_of(a), "constant %c: f32[1] @c")) << ir_of(a);
    EXPECT_TRUE(has(ir_of(b), "constant %c: f32[2] @c")) << ir_of(b);
}

TEST(ConstantArrayTest, DuplicateNameIsATraceError) {
    int first = 0, second = 0;
    std::string msg = error_of([&] {
        kernel("dup", [&](Ptr<float> out) {
            first = __LINE__ + 1;
            auto a = constant_array<float, 4>("coeffs");
            second = __LINE__ + 1;
            auto b = constant_array<float, 8>("coeffs");
            out[0] = a[0] + b[0];
        });
    });
    EXPECT_TRUE(has(msg, "constant_array<f32, 8>(\"coeffs\") in kernel 'dup'")) << msg;
    EXPECT_TRUE(has(msg, "already declares a constant array named 'coeffs'")) << msg;
    EXPECT_TRUE(has(msg, "ConstantArrayTest.cpp:" + std::to_string(first))) << msg;
    EXPECT_TRUE(has(msg, "ConstantArrayTest.cpp:" + std::to_string(second))) << msg;
}

TEST(ConstantArrayTest, BadNamesAreTraceErrors) {
    auto declare = [](const std::string &name) {
        return error_of([&] { kernel("named", [&](Ptr<float> out) { out[0] = constant_array<float, 1>(name)[0]; }); });
    };
    EXPECT_TRUE(has(declare("1abc"), "must be a C identifier")) << declare("1abc");
    EXPECT_TRUE(has(declare("a-b"), "must be a C identifier")) << declare("a-b");
    EXPECT_TRUE(has(declare(""), "must be a C identifier")) << declare("");
    EXPECT_TRUE(has(declare("__ember_x"), "reserved for ember")) << declare("__ember_x");
    EXPECT_TRUE(has(declare("named"), "kernel's name")) << declare("named");
    EXPECT_EQ(declare("ok_name_2"), "<no error>");
}

TEST(ConstantArrayTest, DeviceFunctionsCannotDeclareOne) {
    std::string msg = error_of([] {
        device_function("f", [](Ptr<float> out) { out[0] = constant_array<float, 4>("c")[0]; });
    });
    EXPECT_TRUE(has(msg, "in device function 'f'")) << msg;
    EXPECT_TRUE(has(msg, "declare it in the kernel and pass the ConstPtr<T>")) << msg;
}

TEST(ConstantArrayTest, WrongNumberOfInitialValues) {
    std::string msg = error_of([] {
        kernel("k", [](Ptr<float> out) { out[0] = constant_array<float, 4>("c", {1.0f, 2.0f})[0]; });
    });
    EXPECT_TRUE(has(msg, "constant array 'c' has 4 elements but 2 initial values were given")) << msg;
}

TEST(ConstantArrayTest, OutsideAKernelIsATraceError) {
    std::string msg = error_of([] { constant_array<float, 4>("c"); });
    EXPECT_TRUE(has(msg, "constant_array used outside a kernel")) << msg;
}
