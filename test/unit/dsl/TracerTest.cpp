/// \file
/// Tracing lambdas into kernel IR: the IR each construct produces, and the trace-time errors.
#include "ember/compiler/IRPrinter.h"
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>

using namespace ember;

namespace {

std::string ir_of(const auto &k) { return ir::print(k.ir()); }

TEST(TracerTest, ScalarAddTracesToTheExpectedIR) {
    auto k = kernel("scalar_add", {"vector", "size", "scalar"},
                    [](Ptr<float> vector, Int size, Float32 scalar) {
                        auto idx = block_idx.x * block_dim.x + thread_idx.x;
                        if_(idx < size, [&] { vector[idx] += scalar; });
                    });
    EXPECT_EQ(ir_of(k),
              "kernel @scalar_add(%vector: ptr<global f32>, %size: i64, %scalar: f32) {\n"
              "  if (((block_idx.x * block_dim.x) + thread_idx.x) < %size) {\n"
              "    let %0: f32 = %vector[((block_idx.x * block_dim.x) + thread_idx.x)]\n"
              "    %vector[((block_idx.x * block_dim.x) + thread_idx.x)] = (%0 + %scalar)\n"
              "  }\n"
              "}\n");
    EXPECT_EQ(k.name(), "scalar_add");
    EXPECT_EQ(k.param_names().size(), 3u);
}

TEST(TracerTest, AnonymousParametersAreNumbered) {
    auto k = kernel("anon", [](Ptr<int32_t> p, Int32 v) { p[0] = v; });
    EXPECT_EQ(ir_of(k), "kernel @anon(%0: ptr<global i32>, %1: i32) {\n"
                        "  %0[0:i64] = %1\n"
                        "}\n");
}

TEST(TracerTest, GlobalIdxIsBlockDimTimesBlockIdxPlusThreadIdx) {
    auto k = kernel("gi", {"out"}, [](Ptr<int64_t> out) { out[global_idx.y] = global_idx.y; });
    EXPECT_NE(ir_of(k).find("%out[((block_dim.y * block_idx.y) + thread_idx.y)] = "
                            "((block_dim.y * block_idx.y) + thread_idx.y)"),
              std::string::npos)
        << ir_of(k);
}

TEST(TracerTest, LoadsAreBoundWhereTheyAreWritten) {
    // The load of p[0] happens before the store, so `old` keeps the old value.
    auto k = kernel("order", {"p"}, [](Ptr<float> p) {
        Float32 old = p[0];
        p[0] = 1.0f;
        p[1] = old;
    });
    EXPECT_EQ(ir_of(k), "kernel @order(%p: ptr<global f32>) {\n"
                        "  let %0: f32 = %p[0:i64]\n"
                        "  %p[0:i64] = 1.0:f32\n"
                        "  %p[1:i64] = %0\n"
                        "}\n");
}

TEST(TracerTest, VarReadsSnapshotTheCurrentValue) {
    auto k = kernel("vars", {"p"}, [](Ptr<int64_t> p) {
        Var<int64_t> i(5);
        Int before = i;
        i += 1;
        p[0] = before;
        p[1] = i;
    });
    EXPECT_EQ(ir_of(k), "kernel @vars(%p: ptr<global i64>) {\n"
                        "  var %0: i64 = 5:i64\n"
                        "  let %1: i64 = %0\n"
                        "  let %2: i64 = %0\n"
                        "  %0 = (%2 + 1:i64)\n"
                        "  %p[0:i64] = %1\n"
                        "  let %3: i64 = %0\n"
                        "  %p[1:i64] = %3\n"
                        "}\n");
}

TEST(TracerTest, IfElifElseNest) {
    auto k = kernel("branches", {"p", "n"}, [](Ptr<int32_t> p, Int n) {
        if_(n < 0, [&] { p[0] = -1; }).elif_(n == 0, [&] { p[0] = 0; }).else_([&] { p[0] = 1; });
    });
    EXPECT_EQ(ir_of(k), "kernel @branches(%p: ptr<global i32>, %n: i64) {\n"
                        "  if (%n < 0:i64) {\n"
                        "    %p[0:i64] = -1:i32\n"
                        "  } else {\n"
                        "    if (%n == 0:i64) {\n"
                        "      %p[0:i64] = 0:i32\n"
                        "    } else {\n"
                        "      %p[0:i64] = 1:i32\n"
                        "    }\n"
                        "  }\n"
                        "}\n");
}

TEST(TracerTest, LoopsBreakAndContinue) {
    auto k = kernel("loops", {"p", "n"}, [](Ptr<int64_t> p, Int n) {
        for_(0, n, [&](Int i) {
            if_(i == 3, [&] { continue_(); });
            p[i] = i;
        });
        for_(n, 0, -2, [&](Int i) { if_(i < 4, [&] { break_(); }); });
        Var<int64_t> j(0);
        while_([&] { return j < n; }, [&] { j += 1; });
    });
    std::string text = ir_of(k);
    EXPECT_NE(text.find("for %0: i64 = 0:i64 to %n step 1:i64 {"), std::string::npos) << text;
    EXPECT_NE(text.find("continue"), std::string::npos) << text;
    EXPECT_NE(text.find("for %1: i64 = %n to 0:i64 step -2:i64 {"), std::string::npos) << text;
    EXPECT_NE(text.find("break"), std::string::npos) << text;
    // The while condition reads j inline: it is re-evaluated every iteration.
    EXPECT_NE(text.find("while (%"), std::string::npos) << text;
    EXPECT_NE(text.find(" < %n) {"), std::string::npos) << text;
}

TEST(TracerTest, UnrollHintsAreOnTheirLoopsAndParseBack) {
    auto k = kernel("unrolled", {"p", "n"}, [](Ptr<int64_t> p, Int n) {
        for_(0, n, [&](Int i) { p[i] = i; }, unroll(4));
        for_(0, 8, [&](Int i) { p[i] += 1; }, unroll());
        for_(0, n, 2, [&](Int i) { p[i] -= 1; }, unroll(1));
        for_(0, n, [&](Int i) { p[i] *= 2; });
    });
    std::string text = ir_of(k);
    EXPECT_NE(text.find("to %n step 1:i64 unroll(4) {"), std::string::npos) << text;
    EXPECT_NE(text.find("to 8:i64 step 1:i64 unroll(full) {"), std::string::npos) << text;
    EXPECT_NE(text.find("to %n step 2:i64 unroll(none) {"), std::string::npos) << text;
    EXPECT_EQ(text.find("unroll", text.find("unroll(none)") + 1), std::string::npos)
        << "a loop without a hint printed one: " << text;
    ir::Module m = ir::parse_module(text);
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_EQ(ir::print(m.kernels[0]), text);
}

TEST(TracerTest, LaunchBoundsAreInTheKernelsIR) {
    auto k = kernel(
        "bounded", {"p"}, [](Ptr<float> p) { p[thread_idx.x] = 1.0f; },
        LaunchBounds{.max_threads = 256, .min_blocks = 2, .max_registers = 64});
    EXPECT_EQ(k.ir().bounds, (LaunchBounds{256, 2, 64}));
    std::string text = ir_of(k);
    EXPECT_EQ(text.rfind("kernel @bounded(%p: ptr<global f32>) max_threads(256) min_blocks(2) "
                         "max_registers(64) {\n",
                         0),
              0u)
        << text;
    ir::Module m = ir::parse_module(text);
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_EQ(m.kernels[0].bounds, k.ir().bounds);
    EXPECT_EQ(ir::print(m.kernels[0]), text);
}

TEST(TracerTest, CastSelectMinMax) {
    auto k = kernel("misc", {"p", "a", "b"}, [](Ptr<float> p, Int32 a, Int32 b) {
        p[0] = cast<Float32>(min(a, b));
        p[1] = select(a < b, cast<float>(max(a, b)), 2.5f);
    });
    std::string text = ir_of(k);
    EXPECT_NE(text.find("cast<f32>(min(%a, %b))"), std::string::npos) << text;
    EXPECT_NE(text.find("select((%a < %b), cast<f32>(max(%a, %b)), 2.5:f32)"), std::string::npos)
        << text;
}

TEST(TracerTest, PrintedIRParsesBack) {
    auto k = kernel("roundtrip", {"p", "n", "s"}, [](Ptr<double> p, Int n, Float64 s) {
        Var<double> acc(0.0);
        for_(0, n, [&](Int i) { acc += p[i] * s; });
        if_(!(n > 0) || n == 7, [&] { p[0] = acc; });
    });
    std::string text = ir_of(k);
    ir::Module m = ir::parse_module(text);
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_EQ(ir::print(m.kernels[0]), text);
}

// --- trace-time misuse: DslError naming this file and the line -------------------------------

template <class F> std::string dsl_error_of(F &&f) {
    try {
        f();
    } catch (const DslError &e) {
        return e.what();
    }
    return "<no DslError>";
}

TEST(TracerErrorTest, BreakOutsideALoopNamesTheUsersLine) {
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("bad", [&](Int) {
            line = __LINE__ + 1;
            if_(true, [&] { break_(); });
        });
    });
    EXPECT_NE(msg.find("TracerTest.cpp:" + std::to_string(line)), std::string::npos) << msg;
    EXPECT_NE(msg.find("break_ outside a loop"), std::string::npos) << msg;
}

TEST(TracerErrorTest, AnUnrollCountOutOfRangeNamesTheUsersLine) {
    for (int64_t count : {int64_t(0), int64_t(-3), int64_t(1025)}) {
        int line = 0;
        std::string msg = dsl_error_of([&] {
            kernel("bad", [&](Ptr<int64_t> p) {
                line = __LINE__ + 1;
                for_(0, 4, [&](Int i) { p[i] = i; }, unroll(count));
            });
        });
        EXPECT_NE(msg.find("TracerTest.cpp:" + std::to_string(line)), std::string::npos) << msg;
        EXPECT_NE(
            msg.find(
                "unroll(" + std::to_string(count) +
                "): the count is 1 (keep the loop rolled) to 1024; unroll() unrolls completely"),
            std::string::npos)
            << msg;
    }
}

TEST(TracerErrorTest, LaunchBoundsOutOfRangeNameTheKernelsLine) {
    const std::pair<LaunchBounds, std::string> cases[] = {
        {LaunchBounds{.max_threads = 2048}, "max_threads is 1 to 1024, not 2048"},
        {LaunchBounds{.max_threads = 64, .min_blocks = 33}, "min_blocks is 1 to 32, not 33"},
        {LaunchBounds{.min_blocks = 2}, "min_blocks needs max_threads"},
        {LaunchBounds{.max_registers = 8}, "max_registers is 16 to 255, not 8"},
    };
    for (const auto &[bounds, want] : cases) {
        int line = 0;
        std::string msg = dsl_error_of([&] {
            line = __LINE__ + 1;
            kernel("bad", {"p"}, [](Ptr<float> p) { p[0] = 1.0f; }, bounds);
        });
        EXPECT_NE(msg.find("TracerTest.cpp:" + std::to_string(line)), std::string::npos) << msg;
        EXPECT_NE(msg.find("kernel 'bad': LaunchBounds: " + want), std::string::npos) << msg;
    }
}

TEST(TracerErrorTest, ContinueOutsideALoop) {
    EXPECT_NE(dsl_error_of([] { kernel("bad", [](Int) { continue_(); }); }).find("continue_ outside a loop"),
              std::string::npos);
}

TEST(TracerErrorTest, VarOutsideAKernel) {
    std::string msg = dsl_error_of([] { Var<int32_t> v(1); });
    EXPECT_NE(msg.find("Var used outside a kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("TracerTest.cpp:"), std::string::npos) << msg;
}

TEST(TracerErrorTest, WhileConditionMayNotStore) {
    std::string msg = dsl_error_of([] {
        kernel("bad", [](Ptr<int32_t> p) {
            while_([&] { p[0] = 1; return p[1] < 3; }, [&] {});
        });
    });
    EXPECT_NE(msg.find("while_ condition must be an expression"), std::string::npos) << msg;
}

TEST(TracerErrorTest, ValueOfOneKernelUsedInAnother) {
    std::string msg = dsl_error_of([] {
        kernel("outer", [](Ptr<int64_t> p, Int n) {
            kernel("inner", [&](Ptr<int64_t> q) { q[0] = n; });
            p[0] = n;
        });
    });
    EXPECT_NE(msg.find("a value traced in kernel 'outer' is used in kernel 'inner'"), std::string::npos)
        << msg;
}

TEST(TracerErrorTest, ValueOfAFinishedKernelUsedInAnotherNamesBothAndTheLine) {
    // The value outlives its kernel's trace: the message still names that kernel, the one that
    // uses it, and the user's line, in one sentence.
    std::optional<Int> leaked;
    kernel("k1", [&](Int n) { leaked.emplace(n); });
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("k2", [&](Ptr<int64_t> p) {
            line = __LINE__ + 1;
            p[0] = *leaked;
        });
    });
    EXPECT_EQ(msg.rfind(std::string(__FILE__) + ":" + std::to_string(line) + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find(": error: a value traced in kernel 'k1' is used in kernel 'k2': a traced value "
                       "belongs to the kernel or device function that traced it; pass it to kernel 'k2' "
                       "as a parameter instead"),
              std::string::npos)
        << msg;
    // Outside any kernel.
    msg = dsl_error_of([&] {
        line = __LINE__ + 1;
        Int copy = cast<int64_t>(*leaked);
    });
    EXPECT_EQ(msg.rfind(std::string(__FILE__) + ":" + std::to_string(line) + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find("a value traced in kernel 'k1' is used outside any kernel"), std::string::npos) << msg;
}

TEST(TracerErrorTest, SharedMemoryOverTheLimitListsTheArraysAndTheirLines) {
    // The array that goes over the limit is a DslError at its line; the message says by how much
    // and lists every static shared array of the kernel with its size and line.
    int line_a = 0, line_b = 0;
    std::string msg = dsl_error_of([&] {
        kernel("tiles", [&](Ptr<float> p) {
            line_a = __LINE__ + 1;
            auto a = shared_array<float, 8192>();
            auto d = dynamic_shared<float>(); // sized at the launch: not counted
            line_b = __LINE__ + 1;
            auto b = shared_array<float, 8192>();
            p[0] = a[0] + b[0] + d[0];
        });
    });
    const std::string file = __FILE__;
    EXPECT_EQ(msg.rfind(file + ":" + std::to_string(line_b) + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find(": error: kernel 'tiles': static shared memory over the limit: 65536 bytes of 49152, "
                       "in 2 shared arrays:\n"
                       "  shared_array<Float32, 8192> (32768 bytes) at " + file + ":" + std::to_string(line_a) +
                       "\n"
                       "  shared_array<Float32, 8192> (32768 bytes) at " + file + ":" + std::to_string(line_b)),
              std::string::npos)
        << msg;
    // Exactly at the limit is fine.
    auto k = kernel("full", [](Ptr<float> p) {
        auto a = shared_array<float, 8192>();
        auto b = shared_array<double, 2048>();
        p[0] = a[0] + cast<float>(b[0]);
    });
    EXPECT_EQ(k.name(), "full");
}

TEST(TracerErrorTest, ConstantThatDoesNotFit) {
    std::string msg = dsl_error_of([] {
        kernel("bad", [](Ptr<int8_t> p) { p[0] = 300; });
    });
    EXPECT_NE(msg.find("the constant 300 does not fit in i8"), std::string::npos) << msg;
}

TEST(TracerErrorTest, BadKernelNameAndNameCount) {
    EXPECT_NE(dsl_error_of([] { kernel("not a name", [](Int) {}); }).find("is not a C identifier"),
              std::string::npos);
    EXPECT_NE(dsl_error_of([] { kernel("k", {"a"}, [](Int, Int) {}); })
                  .find("1 parameter names given for 2 parameters"),
              std::string::npos);
}

TEST(TracerErrorTest, ElseAfterElse) {
    std::string msg = dsl_error_of([] {
        kernel("bad", [](Ptr<int32_t> p, Bool c) {
            auto chain = if_(c, [&] { p[0] = 1; });
            chain.else_([&] { p[0] = 2; });
            chain.else_([&] { p[0] = 3; });
        });
    });
    EXPECT_NE(msg.find("else_ after else_"), std::string::npos) << msg;
}

TEST(TracerErrorTest, TraceStackIsCleanAfterAnError) {
    EXPECT_THROW(kernel("bad", [](Int) { break_(); }), DslError);
    EXPECT_EQ(detail::current_builder(), nullptr);
    // And the next kernel traces normally.
    auto k = kernel("good", {"p"}, [](Ptr<int32_t> p) { p[0] = 1; });
    EXPECT_EQ(k.name(), "good");
}

} // namespace

namespace {
TEST(TracerTest, ElifConditionReadsRunInTheElseBranch) {
    // Reading `v` for the elif_ condition must happen only when the first condition is false.
    auto k = kernel("elif_reads", {"p"}, [](Ptr<int32_t> p) {
        Var<int32_t> v(3);
        if_(p[0] == 0, [&] { p[1] = 1; }).elif_(v == p[2], [&] { p[1] = 2; });
    });
    EXPECT_EQ(ir_of(k), "kernel @elif_reads(%p: ptr<global i32>) {\n"
                        "  var %0: i32 = 3:i32\n"
                        "  let %1: i32 = %p[0:i64]\n"
                        "  if (%1 == 0:i32) {\n"
                        "    %p[1:i64] = 1:i32\n"
                        "  } else {\n"
                        "    let %2: i32 = %0\n"
                        "    let %3: i32 = %p[2:i64]\n"
                        "    if (%2 == %3) {\n"
                        "      %p[1:i64] = 2:i32\n"
                        "    }\n"
                        "  }\n"
                        "}\n");
}
} // namespace

namespace {
// Errors found inside operators are reported where the value is used, at the user's line.
TEST(TracerErrorTest, ErrorsNameTheUsersLineEvenThroughOperators) {
    int line = 0;
    std::string msg = dsl_error_of([&] {
        kernel("outer", [&](Ptr<int64_t> p, Int n) {
            kernel("inner", [&](Ptr<int64_t> q) {
                line = __LINE__ + 1;
                q[0] = n * 2 + 1;
            });
            p[0] = n;
        });
    });
    EXPECT_NE(msg.find("TracerTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("used in kernel 'inner'"), std::string::npos) << msg;

    msg = dsl_error_of([&] {
        kernel("bad", [&](Ptr<int8_t> p) {
            line = __LINE__ + 1;
            p[0] = 300;
        });
    });
    EXPECT_NE(msg.find("TracerTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the constant 300 does not fit in i8 (kernel 'bad')"), std::string::npos) << msg;

    msg = dsl_error_of([&] {
        kernel("outer2", [&](Ptr<int64_t>, Int n) {
            kernel("inner2", [&](Ptr<int64_t> q, Int m) {
                line = __LINE__ + 1;
                q[n + m] = 1; // an index mixing two kernels
            });
        });
    });
    EXPECT_NE(msg.find("TracerTest.cpp:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("combines values traced in different kernels"), std::string::npos) << msg;
}

/// `msg` starts with this file and `line` (not an ember header) and contains `what`.
void expect_at(const std::string &msg, int line, const std::string &what) {
    EXPECT_EQ(msg.rfind(std::string(__FILE__) + ":" + std::to_string(line) + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
}

TEST(TracerErrorTest, ConstantsThatDoNotFitInsideOperatorsNameTheUsersLine) {
    // A C++ number meeting a traced operand in an operator is converted at the user's line: the
    // error starts with it (and names the kernel), on either side and for every kind of operator.
    int line = 0;
    auto expect_at_line = [&](const std::string &msg, const std::string &what) { expect_at(msg, line, what); };
    expect_at_line(dsl_error_of([&] {
                       kernel("narrow", [&](Ptr<int8_t> p, Int8 x) {
                           line = __LINE__ + 1;
                           p[0] = x + 300;
                       });
                   }),
                   "the constant 300 does not fit in i8 (kernel 'narrow')");
    expect_at_line(dsl_error_of([&] {
                       kernel("narrow", [&](Ptr<int8_t> p, Int8 x) {
                           line = __LINE__ + 1;
                           p[0] = 1000 * x;
                       });
                   }),
                   "the constant 1000 does not fit in i8");
    expect_at_line(dsl_error_of([&] {
                       kernel("narrow", [&](Ptr<bool> p, UInt8 x) {
                           Var<uint8_t> v(x);
                           line = __LINE__ + 1;
                           p[0] = v < -1;
                       });
                   }),
                   "the constant -1 does not fit in u8");
    expect_at_line(dsl_error_of([&] {
                       kernel("narrow", [&](Ptr<int16_t> p) {
                           line = __LINE__ + 1;
                           p[0] = min(p[1], 40000);
                       });
                   }),
                   "the constant 40000 does not fit in i16");
    expect_at_line(dsl_error_of([&] {
                       kernel("narrow", [&](Ptr<int8_t> p) {
                           line = __LINE__ + 1;
                           p.store(0, p.load<4>(0) + 300);
                       });
                   }),
                   "the constant 300 does not fit in i8");
    expect_at_line(dsl_error_of([&] {
                       kernel("narrow", [&](Ptr<int8_t> p) {
                           line = __LINE__ + 1;
                           p.store(0, max(p.load<4>(0), -300));
                       });
                   }),
                   "the constant -300 does not fit in i8");
}

TEST(TracerErrorTest, FloatConstantsBeyondTheTypesRangeAreRejected) {
    // A finite C++ number that would round to infinity in the traced float type is an error at
    // the user's line naming the value and the range, for f16, bf16 and f32 alike.
    int line = 0;
    auto expect_at_line = [&](const std::string &msg, const std::string &what) { expect_at(msg, line, what); };
    expect_at_line(dsl_error_of([&] {
                       kernel("wide", [&](Ptr<half> p, Float16 x) {
                           line = __LINE__ + 1;
                           p[0] = x * 70000.0;
                       });
                   }),
                   "the constant 70000 is out of range for f16 (its finite values lie within +-65504) "
                   "(kernel 'wide'); it would round to infinity");
    expect_at_line(dsl_error_of([&] {
                       kernel("wide", [&](Ptr<half> p) {
                           line = __LINE__ + 1;
                           p[0] = -65520.0f;
                       });
                   }),
                   "the constant -65520 is out of range for f16");
    expect_at_line(dsl_error_of([&] {
                       kernel("wide", [&](Ptr<half> p, Float16 x) {
                           line = __LINE__ + 1;
                           p[0] = x + 100000; // an integer constant of a float type
                       });
                   }),
                   "the constant 100000 is out of range for f16");
    expect_at_line(dsl_error_of([&] {
                       kernel("wide", [&](Ptr<bfloat16> p) {
                           line = __LINE__ + 1;
                           p[0] = 3.4e38;
                       });
                   }),
                   "the constant 3.4e+38 is out of range for bf16");
    expect_at_line(dsl_error_of([&] {
                       kernel("wide", [&](Ptr<float> p, Float32 x) {
                           line = __LINE__ + 1;
                           p[0] = max(x, 1e39);
                       });
                   }),
                   "the constant 1e+39 is out of range for f32");
    // What rounds to the largest finite value, and infinity written as such, are accepted.
    auto k = kernel("edge", {"h", "f"}, [](Ptr<half> h, Ptr<float> f) {
        h[0] = 65519.0;
        h[1] = -std::numeric_limits<double>::infinity();
        f[0] = 3.4028235e38;
    });
    EXPECT_NE(ir_of(k).find("%h[0:i64] = 65504.0:f16"), std::string::npos) << ir_of(k);
    EXPECT_NE(ir_of(k).find("%h[1:i64] = -inf:f16"), std::string::npos) << ir_of(k);
}
} // namespace

namespace {
TEST(TracerTest, VarsAssignFromEveryKindOfOperand) {
    auto k = kernel("assign", {"p", "x"}, [](Ptr<int64_t> p, Int x) {
        Var<int64_t> v = 1;        // copy-initialisation from a C++ number
        Var<int64_t> w = p[0];     // ... and from a load
        v = p[1];                  // assignment from a load
        v = x;                     // from a Value
        v = w;                     // from another Var (its current value)
        v = thread_idx.x;          // from a special register
        v = 7;                     // from a C++ number
        p[2] = v;
    });
    EXPECT_EQ(ir_of(k), "kernel @assign(%p: ptr<global i64>, %x: i64) {\n"
                        "  var %0: i64 = 1:i64\n"
                        "  let %1: i64 = %p[0:i64]\n"
                        "  var %2: i64 = %1\n"
                        "  let %3: i64 = %p[1:i64]\n"
                        "  %0 = %3\n"
                        "  %0 = %x\n"
                        "  let %4: i64 = %2\n"
                        "  %0 = %4\n"
                        "  %0 = thread_idx.x\n"
                        "  %0 = 7:i64\n"
                        "  let %5: i64 = %0\n"
                        "  %p[2:i64] = %5\n"
                        "}\n");
}
} // namespace
