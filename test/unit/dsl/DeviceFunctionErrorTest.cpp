/// \file
/// Misuse of device functions and barriers found while tracing: DslError (or CompileError) that
/// names the problem and the user's line.
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

namespace {

template <class F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    return "<no error>";
}

bool has(const std::string &msg, const std::string &part) { return msg.find(part) != std::string::npos; }

TEST(DeviceFunctionErrorTest, RecursionIsRejected) {
    DeviceFn<Value<int32_t>(Value<int32_t>)> fact;
    int line = 0;
    std::string msg = error_of([&] {
        fact = device_function("fact", [&](Int32 n) {
            line = __LINE__ + 1;
            Int32 r = fact(n - 1);
            return r * n;
        });
    });
    EXPECT_TRUE(has(msg, "recursion is not supported")) << msg;
    EXPECT_TRUE(has(msg, "device function 'fact'")) << msg;
    EXPECT_TRUE(has(msg, "DeviceFunctionErrorTest.cpp:" + std::to_string(line))) << msg;
    EXPECT_FALSE(fact);
}

TEST(DeviceFunctionErrorTest, AKernelsValueCannotLeakIntoAFunction) {
    std::string msg = error_of([] {
        kernel("k", [](Ptr<float> p, Float32 scale) {
            auto scaled = device_function("scaled", [&](Float32 x) { return x * scale; });
            p[0] = scaled(p[1]);
        });
    });
    EXPECT_TRUE(has(msg, "(in device function 'scaled')")) << msg;
    EXPECT_TRUE(has(msg, "as parameters")) << msg;
}

TEST(DeviceFunctionErrorTest, BarrierInDivergentCodeNamesTheCondition) {
    int cond_line = 0, barrier_line = 0;
    std::string msg = error_of([&] {
        kernel("k", [&](Ptr<float> p) {
            cond_line = __LINE__ + 1;
            if_(thread_idx.x < 16, [&] {
                p[thread_idx.x] = 1.0f;
                barrier_line = __LINE__ + 1;
                barrier();
            });
        });
    });
    EXPECT_TRUE(has(msg, "barrier() where the threads of a block may not all arrive")) << msg;
    EXPECT_TRUE(has(msg, "the if_ at ")) << msg;
    EXPECT_TRUE(has(msg, "DeviceFunctionErrorTest.cpp:" + std::to_string(cond_line))) << msg;
    EXPECT_TRUE(has(msg, "DeviceFunctionErrorTest.cpp:" + std::to_string(barrier_line))) << msg;
}

TEST(DeviceFunctionErrorTest, DivergenceFollowsLetsVarsLoopsAndElse) {
    // Through a let and a Var.
    EXPECT_TRUE(has(error_of([] {
        kernel("k", [](Ptr<int32_t>) {
            Var<int64_t> t = thread_idx.x * 2;
            Int u = t + 1;
            if_(u > 5, [&] { barrier(); });
        });
    }), "barrier()"));
    // A loop whose trip count depends on the thread; an else_ of a divergent if_.
    EXPECT_TRUE(has(error_of([] {
        kernel("k", [](Ptr<int32_t>) { for_(0, thread_idx.x, [&](Int) { barrier(); }); });
    }), "the for_ at"));
    EXPECT_TRUE(has(error_of([] {
        kernel("k", [](Ptr<int32_t> p) {
            if_(p[thread_idx.x] > 0, [&] { p[0] = 1; }).else_([&] { barrier(); });
        });
    }), "the else_ at"));
    // Uniform conditions are fine: block-wide values and loads through uniform addresses.
    EXPECT_EQ(error_of([] {
        kernel("k", [](Ptr<int32_t> p, Int n) {
            if_(block_idx.x < n && p[0] > 0, [&] { barrier(); });
            for_(0, n, [&](Int) { barrier(); });
            Var<int64_t> t = thread_idx.x;
            t = 0; // uniform again
            if_(t == 0, [&] { barrier(); });
        });
    }), "<no error>");
}

TEST(DeviceFunctionErrorTest, AFunctionWithABarrierCalledInDivergentCode) {
    auto sync_store = device_function("sync_store", [](Ptr<float> p, Int i) {
        barrier();
        p[i] = 0.0f;
    });
    auto indirect = device_function("indirect", [&](Ptr<float> p, Int i) { sync_store(p, i); });
    int line = 0;
    std::string msg = error_of([&] {
        kernel("k", [&](Ptr<float> p) {
            while_([&] { return p[thread_idx.x] > 0.0f; }, [&] {
                line = __LINE__ + 1;
                indirect(p, thread_idx.x);
            });
        });
    });
    EXPECT_TRUE(has(msg, "device function 'indirect' waits at a barrier()")) << msg;
    EXPECT_TRUE(has(msg, "the while_ at")) << msg;
    EXPECT_TRUE(has(msg, "DeviceFunctionErrorTest.cpp:" + std::to_string(line))) << msg;
    // Called from uniform code it is fine.
    EXPECT_EQ(error_of([&] { kernel("k", [&](Ptr<float> p) { indirect(p, thread_idx.x); }); }), "<no error>");
}

TEST(DeviceFunctionErrorTest, FunctionResultsThatReadTheThreadAreThreadDependent) {
    auto my_lane = device_function("my_lane", [] { return thread_idx.x % 32; });
    EXPECT_TRUE(has(error_of([&] {
        kernel("k", [&](Ptr<float>) { if_(my_lane() == 0, [&] { barrier(); }); });
    }), "barrier()"));
}

TEST(DeviceFunctionErrorTest, ReturnValuesMustMatch) {
    EXPECT_TRUE(has(error_of([] {
        device_function("f", [](Float32 x) {
            if_(x > 0.0f, [&] { return_(Float64(1.0)); });
            return x;
        });
    }), "device function 'f' returns f32, not f64"));
    EXPECT_TRUE(has(error_of([] {
        device_function("f", [](Float32 x) {
            if_(x > 0.0f, [&] { return_(); });
            return x;
        });
    }), "returns f32: use return_(value)"));
    EXPECT_TRUE(has(error_of([] {
        kernel("k", [](Float32 x) { if_(x > 0.0f, [&] { return_(x); }); });
    }), "a kernel returns no value"));
    EXPECT_TRUE(has(error_of([] {
        device_function("g", [](Ptr<float> p) { if_(p[0] > 0.0f, [&] { return_(1); }); });
    }), "which returns nothing"));
    // A C++ number converts to the return type.
    EXPECT_EQ(error_of([] {
        device_function("h", [](Float32 x) {
            if_(x > 0.0f, [&] { return_(1); });
            return x;
        });
    }), "<no error>");
}

TEST(DeviceFunctionErrorTest, SharedArraysBelongToKernels) {
    // A DslError at the user's line, while tracing (not the verifier's CompileError afterwards).
    int line = 0;
    std::string msg;
    try {
        device_function("f", [&](Int i) {
            line = __LINE__ + 1;
            auto s = shared_array<float, 32>();
            s[i] = 1.0f;
        });
    } catch (const DslError &e) {
        msg = e.what();
    }
    EXPECT_TRUE(has(msg, "DeviceFunctionErrorTest.cpp:" + std::to_string(line) +
                             ":")) << msg;
    EXPECT_TRUE(has(msg, "shared_array<Float32, 32> in device function 'f': shared arrays are declared in "
                         "kernels")) << msg;
}

TEST(DeviceFunctionErrorTest, NamesAreIdentifiers) {
    EXPECT_TRUE(has(error_of([] { device_function("no good", [](Int) {}); }), "is not a C identifier"));
}

} // namespace
