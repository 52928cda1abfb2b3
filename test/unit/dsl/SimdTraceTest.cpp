/// \file
/// Tracing SIMD<T, N>: the IR of loads, stores, broadcasts, Var and device functions of vectors,
/// and the trace-time errors (lanes out of range, constants that do not fit, vectors of another
/// kernel, functions returning the wrong vector type), each at the user's line.
#include "ember/compiler/IRPrinter.h"
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

namespace {

std::string ir_of(const auto &k) { return ir::print(k.ir()); }

template <class F> std::string dsl_error_of(F &&f) {
    try {
        f();
    } catch (const DslError &e) {
        return e.what();
    }
    return "<no DslError>";
}

TEST(SimdTraceTest, LoadsStoresAndBroadcasts) {
    auto k = kernel("scale", {"p", "s"}, [](Ptr<float> p, Float32 s) {
        auto v = p.load<4>(8);
        p.store(8, v * s + 1.0f);
        p[0] = v[2];
    });
    EXPECT_EQ(ir_of(k), "kernel @scale(%p: ptr<global f32>, %s: f32) {\n"
                        "  let %0: f32x4 = load<4>(%p[8:i64])\n"
                        "  %p[8:i64] = ((%0 * f32x4(%s)) + f32x4(1.0:f32))\n"
                        "  %p[0:i64] = extract<2>(%0)\n"
                        "}\n");
}

TEST(SimdTraceTest, VarOfAVectorIsDeclaredAssignedAndReadWhereWritten) {
    auto k = kernel("acc", {"p", "n"}, [](Ptr<int32_t> p, Int n) {
        Var<SIMD<int32_t, 2>> acc(SIMD<int32_t, 2>(1, 2));
        for_(0, n, [&](Int i) { acc += p.load<2>(i * 2); });
        p.store(0, acc);
        p[2] = acc[1];
    });
    EXPECT_EQ(ir_of(k), "kernel @acc(%p: ptr<global i32>, %n: i64) {\n"
                        "  var %0: i32x2 = i32x2(1:i32, 2:i32)\n"
                        "  for %1: i64 = 0:i64 to %n step 1:i64 {\n"
                        "    let %2: i32x2 = load<2>(%p[(%1 * 2:i64)])\n"
                        "    let %3: i32x2 = %0\n"
                        "    %0 = (%3 + %2)\n"
                        "  }\n"
                        "  let %4: i32x2 = %0\n"
                        "  %p[0:i64] = %4\n"
                        "  let %5: i32x2 = %0\n"
                        "  %p[2:i64] = extract<1>(%5)\n"
                        "}\n");
}

TEST(SimdTraceTest, MasksSelectAndReductions) {
    auto k = kernel("masks", {"p", "flag"}, [](Ptr<float> p, Bool flag) {
        auto v = p.load<2>(0);
        p.store(2, select(v > 0.0f, v, 0.0f));
        p.store(4, select(flag, v, -v));
        p[6] = reduce_max(v);
        p[7] = cast<float>(any(isnan(v)));
    });
    const std::string ir = ir_of(k);
    EXPECT_NE(ir.find("%p[2:i64] = select((%0 > f32x2(0.0:f32)), %0, f32x2(0.0:f32))"), std::string::npos) << ir;
    EXPECT_NE(ir.find("%p[4:i64] = select(%flag, %0, -%0)"), std::string::npos) << ir;
    EXPECT_NE(ir.find("%p[6:i64] = reduce_max(%0)"), std::string::npos) << ir;
    EXPECT_NE(ir.find("%p[7:i64] = cast<f32>(reduce_or(isnan(%0)))"), std::string::npos) << ir;
}

TEST(SimdTraceTest, LaneOutOfRangeNamesTheUsersLine) {
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("bad", [&](Ptr<float> p) {
            auto v = p.load<4>(0);
            line = __LINE__ + 1;
            p[0] = v[4];
        });
    });
    EXPECT_NE(msg.find("SimdTraceTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("lane 4 of a vector of 4 Float32 lanes (SIMD<T, 4> has lanes 0 to 3)"), std::string::npos) << msg;
}

TEST(SimdTraceTest, LaneConstantsAreCheckedWhereWritten) {
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("bad", [&](Ptr<int8_t> p) {
            line = __LINE__ + 1;
            p.store(0, SIMD<int8_t, 2>(1, 300));
        });
    });
    EXPECT_NE(msg.find("SimdTraceTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the constant 300 does not fit in i8"), std::string::npos) << msg;
}

TEST(SimdTraceTest, VectorsOfAnotherKernelAreRejectedWhereUsed) {
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("outer", [&](Ptr<float> p) {
            auto v = p.load<4>(0);
            kernel("inner", [&](Ptr<float> q) {
                line = __LINE__ + 1;
                q.store(0, v * 2.0f);
            });
        });
    });
    EXPECT_NE(msg.find("SimdTraceTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("used in kernel 'inner'"), std::string::npos) << msg;
}

TEST(SimdTraceTest, DeviceFunctionsTakeAndReturnVectors) {
    auto twice = device_function("twice", {"v"}, [](SIMD<float, 4> v) { return v + v; });
    auto k = kernel("calls", {"p"}, [&](Ptr<float> p) { p.store(0, twice(p.load<4>(0))); });
    const std::string ir = ir_of(k);
    EXPECT_NE(ir.find("func @twice(%v: f32x4) -> f32x4 {\n  return (%v + %v)\n}"), std::string::npos) << ir;
    EXPECT_NE(ir.find("let %1: f32x4 = @twice(%0)"), std::string::npos) << ir;

    int line = 0;
    std::string msg = dsl_error_of([&] {
        device_function("wrong", [&](SIMD<float, 4> v) {
            line = __LINE__ + 1;
            if_(v[0] > 0.0f, [&] { return_(SIMD<float, 2>(1.0f)); });
            return v;
        });
    });
    EXPECT_NE(msg.find("SimdTraceTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("returns f32x4, not f32x2"), std::string::npos) << msg;
}

} // namespace
