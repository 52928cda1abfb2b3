/// \file
/// Nesting depth ([Note] IR semantics: Nesting): the parser stops input nested deeper than
/// max_nesting_depth with a CompileError naming its place and the limit, `make` asserts the
/// limit, input at the limit passes every stage on a thread with 1 MiB of stack, and long chains
/// of nodes (through device functions) are walked and freed without recursion.
#include "ember/compiler/Compiler.h"
#include "ember/compiler/Hash.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Verifier.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <exception>
#include <functional>
#include <regex>
#include <string>

using namespace ember;
using namespace ember::ir;

namespace {

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_TEST_ASAN 1
#endif
#endif

/// The stack the deepest accepted input must compile on ([Note] IR semantics: Nesting). Under
/// AddressSanitizer every frame carries redzones and the recursive walks use several times more
/// stack, so the same inputs get 8 MiB there; the 1 MiB promise is checked by the plain build.
#ifdef EMBER_TEST_ASAN
constexpr size_t kSmallStack = size_t(8) << 20;
#else
constexpr size_t kSmallStack = size_t(1) << 20;
#endif

/// Runs `f` on a thread with `bytes` of stack and rethrows what it throws.
void on_small_stack(const std::function<void()> &f, size_t bytes = kSmallStack) {
    struct Job {
        const std::function<void()> &f;
        std::exception_ptr error;
    } job{f, nullptr};
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
    pthread_t thread;
    const int rc = pthread_create(
        &thread, &attr,
        [](void *p) -> void * {
            auto *j = static_cast<Job *>(p);
            try {
                j->f();
            } catch (...) {
                j->error = std::current_exception();
            }
            return nullptr;
        },
        &job);
    pthread_attr_destroy(&attr);
    ASSERT_EQ(rc, 0);
    pthread_join(thread, nullptr);
    if (job.error) std::rethrow_exception(job.error);
}

const char *kHead = "kernel @deep(%out: ptr<global i32>, %x: i32) {\n";

/// `%out[0] = ((%x + 1) + 1) ...` with `n` nested parentheses.
std::string nested_parens(size_t n) {
    std::string s = kHead;
    s += "  %out[0:i32] = " + std::string(n, '(') + "%x";
    for (size_t i = 0; i < n; ++i) s += " + 1:i32)";
    return s + "\n}\n";
}

/// `%out[0] = - - ... - %x` with `n` unary minuses.
std::string unary_minuses(size_t n) {
    std::string s = kHead;
    s += "  %out[0:i32] = ";
    for (size_t i = 0; i < n; ++i) s += "- ";
    return s + "%x\n}\n";
}

/// `n` nested ifs around a store.
std::string nested_ifs(size_t n) {
    std::string s = kHead;
    for (size_t i = 0; i < n; ++i) s += "if (%x < 5:i32) { ";
    s += "%out[0:i32] = %x ";
    for (size_t i = 0; i < n; ++i) s += "} ";
    return s + "\n}\n";
}

/// `n` nested two-trip loops, one a line.
std::string nested_fors(size_t n) {
    std::string s = kHead;
    for (size_t i = 0; i < n; ++i)
        s += "for %i" + std::to_string(i) + ": i32 = 0:i32 to 2:i32 step 1:i32 {\n";
    s += "%out[%i0] = (%i" + std::to_string(n - 1) + " + %x)\n";
    for (size_t i = 0; i < n; ++i) s += "}\n";
    return s + "}\n";
}

/// The CompileError message parsing `text` gives on a 1 MiB stack ("" when none).
std::string parse_error_on_small_stack(const std::string &text) {
    std::string message;
    on_small_stack([&] {
        try {
            parse_module(text, "deep.eir");
        } catch (const CompileError &e) {
            message = e.what();
        }
    });
    return message;
}

TEST(DepthTest, DeepInputIsACompileErrorNamingThePlaceAndTheLimit) {
    // The inputs that overflowed the stack, and inputs nested 100,000 deep.
    const std::regex expected(R"(^deep\.eir:[0-9]+:[0-9]+: error: nested deeper than 1000 levels)");
    const struct {
        const char *what;
        std::string text;
    } inputs[] = {
        {"8,000 nested parentheses", nested_parens(8000)},
        {"100,000 nested parentheses", nested_parens(100000)},
        {"16,000 unary minuses", unary_minuses(16000)},
        {"100,000 unary minuses", unary_minuses(100000)},
        {"8,000 nested ifs", nested_ifs(8000)},
        {"100,000 nested ifs", nested_ifs(100000)},
        {"6,000 nested fors", nested_fors(6000)},
        {"100,000 nested fors", nested_fors(100000)},
    };
    for (const auto &in : inputs) {
        const std::string message = parse_error_on_small_stack(in.text);
        EXPECT_TRUE(std::regex_search(message, expected)) << in.what << ": " << message;
    }
    // One level past the limit: the error points at the expression that goes too deep.
    EXPECT_EQ(parse_error_on_small_stack(unary_minuses(998)).substr(0, 15), "deep.eir:2:2013");
}

/// Every stage for `text`, on a 1 MiB stack: parse, verify, print, parse the print back, hash,
/// and code generation for the CPU and NVPTX.
void every_stage_on_small_stack(const std::string &what, const std::string &text, int opt_level) {
    SCOPED_TRACE(what);
    on_small_stack([&] {
        Module m = parse_module(text, "deep.eir");
        ASSERT_EQ(m.kernels.size(), 1u);
        const Kernel &k = m.kernels[0];
        EXPECT_TRUE(verify(k).empty());
        const std::string printed = print(k);
        Module again = parse_module(printed, "printed.eir");
        EXPECT_EQ(print(again.kernels.at(0)), printed);
        EXPECT_EQ(content_hash(again.kernels.at(0)), content_hash(k));
        EXPECT_FALSE(emit(k, TargetSpec::parse("cpu"), Stage::Obj, opt_level).empty());
        EXPECT_NE(emit(k, TargetSpec::parse("nvptx:sm_90"), Stage::Asm, opt_level).find(".entry deep"),
                  std::string::npos);
    });
}

TEST(DepthTest, TheDeepestAcceptedInputPassesEveryStageOnASmallStack) {
    // 997 nested binary operators (or unary minuses) under a store in the kernel's block: 1000.
    every_stage_on_small_stack("997 nested parentheses", nested_parens(997), 3);
    every_stage_on_small_stack("997 unary minuses", unary_minuses(997), 3);
    // A block and the statement holding it are two levels: 498 ifs, the store and its operand.
    every_stage_on_small_stack("498 nested ifs", nested_ifs(498), 3);
    // The loops at O0: optimising 498 nested loops takes seconds.
    every_stage_on_small_stack("498 nested fors", nested_fors(498), 0);
    EXPECT_THROW(parse_module(nested_parens(998), "deep.eir"), CompileError);
    EXPECT_THROW(parse_module(nested_ifs(499), "deep.eir"), CompileError);
    EXPECT_THROW(parse_module(nested_fors(499), "deep.eir"), CompileError);
}

TEST(DepthTest, MakeAssertsTheLimit) {
    Expr e = VarRef::make(Variable::make("x", Type(ScalarType::I32), VarKind::Param));
    for (uint32_t d = 1; d < max_nesting_depth; ++d) e = Unary::make(UnaryOp::Neg, e);
    EXPECT_EQ(e.depth(), max_nesting_depth);
    EXPECT_THROW(Unary::make(UnaryOp::Neg, e), InternalError);
    EXPECT_THROW(Evaluate::make(e), InternalError);
    EXPECT_EQ(Unary::make(UnaryOp::Neg, Unary::make(UnaryOp::Neg, IntImm::make(Type(ScalarType::I32), 1))).depth(), 3u);
}

TEST(DepthTest, ALongChainOfFunctionsIsWalkedAndFreedWithoutRecursion) {
    // f0 returns its argument, f(i) returns f(i-1)(a): every function is shallow, the chain is
    // 100,000 long. Walking or freeing it recursively overflows a 1 MiB stack.
    constexpr int kChain = 100000;
    on_small_stack([&] {
        const Type i32(ScalarType::I32);
        FunctionRef f;
        for (int i = 0; i < kChain; ++i) {
            VariableRef a = Variable::make("a", i32, VarKind::Param);
            Expr value = f ? Invoke::make(f, {VarRef::make(a)}) : VarRef::make(a);
            f = Function::make("f" + std::to_string(i), {a}, i32, Block::make({Return::make(value)}));
        }
        VariableRef out = Variable::make("out", Type::pointer(ScalarType::I32, AddressSpace::Global), VarKind::Param);
        VariableRef x = Variable::make("x", i32, VarKind::Param);
        Stmt body = Block::make({Store::make(VarRef::make(out), IntImm::make(i32, 0),
                                             Invoke::make(f, {VarRef::make(x)}))});
        f = FunctionRef();
        std::vector<FunctionRef> called = called_functions(body);
        ASSERT_EQ(called.size(), size_t(kChain));
        EXPECT_EQ(called.front()->name, "f0");
        EXPECT_EQ(called.back()->name, "f" + std::to_string(kChain - 1));
        EXPECT_FALSE(uses_barrier(*called.back()));
        called.clear();
        body = Stmt(); // frees the whole chain
    });
}

} // namespace
