/// \file
/// [Note] Tracing: Nesting. Deep C++-built expressions are bound to lets and compile; if_, for_,
/// while_ and elif_ chains nested too deep, and too deep while_ conditions, are DslErrors at the
/// user's line naming the limit, never a stack overflow.
#include "ember/compiler/Compiler.h"
#include "ember/compiler/Verifier.h"
#include "ember/dsl/DSL.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace ember;

namespace {

/// The message of the DslError `f` throws, checked to start with this file's name and `line`.
template <class F> std::string dsl_error(F &&f, int line) {
    try {
        f();
    } catch (const DslError &e) {
        EXPECT_EQ(int(e.where().line()), line) << e.what();
        EXPECT_NE(std::string(e.what()).find("DepthTest.cpp:" + std::to_string(line)), std::string::npos)
            << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no DslError";
    return "";
}

TEST(DslDepthTest, ADeepExpressionBuiltByACppLoopIsBoundToLets) {
    // 20,000 nested additions: the IR stays within max_nesting_depth and compiles.
    auto k = kernel("deep_sum", {"out", "x"}, [](Ptr<int32_t> out, Int32 x) {
        std::vector<Int32> chain{x};
        for (int i = 0; i < 20000; ++i) chain.push_back(chain.back() + 1);
        out[0] = chain.back();
    });
    EXPECT_LE(k.ir().body.depth(), ir::max_nesting_depth);
    EXPECT_TRUE(ir::verify(k.ir()).empty());
    EXPECT_FALSE(emit(k.ir(), TargetSpec::parse("cpu"), Stage::Obj, 1).empty());
}

const int kIfLine = __LINE__ + 4;
/// `n` if_s nested by recursion.
void nest_ifs(Int32 x, int n) {
    if (n == 0) return;
    if_(x < 5, [&] { nest_ifs(x, n - 1); });
}

TEST(DslDepthTest, IfsNestedTooDeepAreADslErrorAtTheUsersLine) {
    for (int n : {401, 6000, 100000}) {
        const std::string m = dsl_error(
            [&] { kernel("deep_if", {"x"}, [n](Int32 x) { nest_ifs(x, n); }); }, kIfLine);
        EXPECT_NE(m.find("nest at most 400 deep"), std::string::npos) << m;
    }
    EXPECT_NO_THROW(kernel("if_400", {"x"}, [](Int32 x) { nest_ifs(x, 400); }));
}

const int kForLine = __LINE__ + 7;
/// `n` for_s nested by recursion.
void nest_fors(Ptr<int32_t> out, int n) {
    if (n == 0) {
        out[0] = 1;
        return;
    }
    for_(0, 2, [&](Int) { nest_fors(out, n - 1); });
}

TEST(DslDepthTest, ForsNestedTooDeepAreADslErrorAtTheUsersLine) {
    const std::string m = dsl_error(
        [] { kernel("deep_for", {"out"}, [](Ptr<int32_t> out) { nest_fors(out, 6000); }); }, kForLine);
    EXPECT_NE(m.find("for_ nested 401 deep"), std::string::npos) << m;
}

TEST(DslDepthTest, ADeepWhileConditionIsADslErrorAtTheWhile) {
    const int line = __LINE__ + 9;
    const std::string m = dsl_error(
        [&] {
            kernel("deep_while", {"x"}, [&](Int32 x) {
                auto cond = [&] {
                    std::vector<Int32> chain{x};
                    for (int i = 0; i < 20000; ++i) chain.push_back(chain.back() + 1);
                    return chain.back() < 0;
                };
                while_(cond, [] {});
            });
        },
        line);
    EXPECT_NE(m.find("at most 64 levels"), std::string::npos) << m;
}

TEST(DslDepthTest, ALongElifChainIsADslErrorAtTheElif) {
    const int line = __LINE__ + 5;
    const std::string m = dsl_error(
        [&] {
            kernel("deep_elif", {"out", "x"}, [&](Ptr<int32_t> out, Int32 x) {
                IfChain chain = if_(x == 0, [&] { out[0] = 0; });
                for (int i = 1; i < 1000; ++i) chain.elif_(x == i, [&] { out[0] = i; });
            });
        },
        line);
    EXPECT_NE(m.find("elif_ arms nests"), std::string::npos) << m;
    EXPECT_NE(m.find("at most 1000 levels"), std::string::npos) << m;
}

} // namespace
