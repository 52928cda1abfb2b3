/// \file
/// Unit tests of the IR verifier: each rule, and several problems reported at once.
#include "ember/compiler/Verifier.h"

#include "ember/compiler/IRPrinter.h"

#include <gtest/gtest.h>

using namespace ember::ir;
using ember::CompileError;

namespace {

const Type i32 = ScalarType::I32;
const Type i64 = ScalarType::I64;
const Type f32 = ScalarType::F32;

Expr ref(const VariableRef &v) { return VarRef::make(v); }
Expr int_(int64_t v, Type t = i32) { return IntImm::make(t, v); }

/// Bypasses make()'s checks to build IR that only the verifier can catch (as a buggy pass could).
Variable &mutable_var(const VariableRef &v) { return const_cast<Variable &>(*v); }

using Problems = std::vector<std::string>;

} // namespace

TEST(VerifierTest, AcceptsWellFormedKernels) {
    Module m = parse_module("kernel @ok(%p: ptr<global f32>, %n: i64) {\n"
                            "  for %i: i64 = 0:i64 to %n step 1:i64 {\n"
                            "    var %x: f32 = %p[%i]\n"
                            "    while (%x > 1.0:f32) {\n"
                            "      %x = (%x / 2.0:f32)\n"
                            "      if (%x == 3.0:f32) {\n"
                            "        break\n"
                            "      }\n"
                            "    }\n"
                            "    %p[%i] = %x\n"
                            "  }\n"
                            "}\n");
    EXPECT_EQ(verify(m.kernels[0]), Problems{});
    EXPECT_NO_THROW(verify_or_throw(m.kernels[0]));
}

TEST(VerifierTest, ReportsEveryProblemAtOnce) {
    auto p = Variable::make("p", Type::pointer(ScalarType::F32, AddressSpace::Global, true),
                            VarKind::Param);
    auto v = Variable::make("v", ScalarType::Void, VarKind::Param);
    Stmt body = Block::make({
        Break::make(),
        Store::make(ref(p), int_(0), FloatImm::make(f32, 1.0)),
        Continue::make(),
    });
    Kernel k{"2bad", {p, v}, body};
    Problems expected = {
        "kernel '2bad': name is not a C identifier",
        "kernel '2bad': parameter %v has void type",
        "kernel '2bad': break outside a loop",
        "kernel '2bad': store through read-only pointer in '%p[0:i32] = 1.0:f32'",
        "kernel '2bad': continue outside a loop",
    };
    EXPECT_EQ(verify(k), expected);
    try {
        verify_or_throw(k);
        FAIL() << "expected CompileError";
    } catch (const CompileError &e) {
        EXPECT_EQ(e.summary(),
                  "kernel '2bad' failed verification (5 problems), the first: name is not a C identifier");
        EXPECT_EQ(e.log(), expected[0] + "\n" + expected[1] + "\n" + expected[2] + "\n" +
                               expected[3] + "\n" + expected[4]);
    }
}

TEST(VerifierTest, EmptyKernelName) {
    EXPECT_EQ(verify(Kernel{"", {}, Block::make({})}), Problems{"kernel '': empty kernel name"});
}

TEST(VerifierTest, MissingOrNonBlockBody) {
    EXPECT_EQ(verify(Kernel{"k", {}, Stmt()}), Problems{"kernel 'k': has no body"});
    EXPECT_EQ(verify(Kernel{"k", {}, Barrier::make()}),
              Problems{"kernel 'k': body is a Barrier, not a Block"});
}

TEST(VerifierTest, VariableUsedOutsideItsScope) {
    auto x = Variable::make("x", i32, VarKind::Let);
    auto y = Variable::make("y", i32, VarKind::Let);
    Stmt body = Block::make({
        If::make(BoolImm::make(true), Block::make({Let::make(x, int_(1))})),
        Let::make(y, ref(x)),
    });
    EXPECT_EQ(verify(Kernel{"k", {}, body}), Problems{"kernel 'k': %x used outside its scope"});
}

TEST(VerifierTest, LoopIndexIsScopedToItsBody) {
    auto i = Variable::make("i", i64, VarKind::LoopIndex);
    auto y = Variable::make("y", i64, VarKind::Let);
    Stmt loop = For::make(i, int_(0, i64), int_(4, i64), int_(1, i64), Block::make({}));
    Stmt body = Block::make({loop, Let::make(y, ref(i))});
    EXPECT_EQ(verify(Kernel{"k", {}, body}), Problems{"kernel 'k': %i used outside its scope"});
}

TEST(VerifierTest, VariableUsedBeforeDefinitionOrNeverDefined) {
    auto x = Variable::make("x", i32, VarKind::Let);
    auto y = Variable::make("y", i32, VarKind::Let);
    auto stranger = Variable::make("s", i32, VarKind::Param); // e.g. from another kernel
    auto z = Variable::make("z", i32, VarKind::Let);
    Stmt body = Block::make({
        Let::make(y, ref(x)),
        Let::make(x, int_(1)),
        Let::make(z, ref(stranger)),
    });
    EXPECT_EQ(verify(Kernel{"k", {}, body}),
              (Problems{"kernel 'k': %x used before its definition",
                        "kernel 'k': use of undefined variable %s"}));
}

TEST(VerifierTest, VariableDefinedTwice) {
    auto x = Variable::make("x", i32, VarKind::Let);
    Stmt let = Let::make(x, int_(1));
    EXPECT_EQ(verify(Kernel{"k", {}, Block::make({let, let})}),
              Problems{"kernel 'k': variable %x defined twice"});
    auto p = Variable::make("p", i32, VarKind::Param);
    EXPECT_EQ(verify(Kernel{"k", {p, p}, Block::make({})}),
              Problems{"kernel 'k': variable %p defined twice"});
}

TEST(VerifierTest, AssignmentToImmutableVariables) {
    auto n = Variable::make("n", i32, VarKind::Mutable);
    Stmt assign = Assign::make(n, int_(1));
    mutable_var(n).kind = VarKind::Param;
    EXPECT_EQ(verify(Kernel{"k", {n}, Block::make({assign})}),
              Problems{"kernel 'k': assignment to immutable variable %n (param)"});

    auto l = Variable::make("l", i32, VarKind::Mutable);
    Stmt decl = Declare::make(l, int_(0));
    Stmt assign_l = Assign::make(l, int_(1));
    mutable_var(l).kind = VarKind::Let;
    EXPECT_EQ(verify(Kernel{"k", {}, Block::make({decl, assign_l})}),
              (Problems{"kernel 'k': variable %l is a let variable, expected a var in "
                        "'var %l: i32 = 0:i32'",
                        "kernel 'k': assignment to immutable variable %l (let)"}));
}

TEST(VerifierTest, ParamOfWrongKind) {
    auto x = Variable::make("x", i32, VarKind::Let);
    EXPECT_EQ(verify(Kernel{"k", {x}, Block::make({})}),
              Problems{"kernel 'k': parameter %x is a let variable, not a param"});
}

TEST(VerifierTest, TypeMismatchesNameTheStatement) {
    auto x = Variable::make("x", i32, VarKind::Let);
    Stmt let = Let::make(x, int_(1));
    mutable_var(x).type = i64;
    EXPECT_EQ(
        verify(Kernel{"k", {}, Block::make({let})}),
        Problems{"kernel 'k': value of %x has type i32, expected i64 in 'let %x: i64 = 1:i32'"});

    auto i = Variable::make("i", i32, VarKind::LoopIndex);
    Stmt loop = For::make(i, int_(0), int_(4), int_(1), Block::make({}));
    mutable_var(i).type = i64;
    EXPECT_EQ(verify(Kernel{"k", {}, Block::make({loop})}),
              (Problems{"kernel 'k': loop begin has type i32, expected i64 in "
                        "'for %i: i64 = 0:i32 to 4:i32 step 1:i32 {'",
                        "kernel 'k': loop end has type i32, expected i64 in "
                        "'for %i: i64 = 0:i32 to 4:i32 step 1:i32 {'",
                        "kernel 'k': loop step has type i32, expected i64 in "
                        "'for %i: i64 = 0:i32 to 4:i32 step 1:i32 {'"}));
}

TEST(VerifierTest, BreakAndContinueInsideLoopsOnly) {
    Stmt in_loop = While::make(BoolImm::make(true), Block::make({Break::make(), Continue::make()}));
    EXPECT_EQ(verify(Kernel{"k", {}, Block::make({in_loop})}), Problems{});
    Stmt in_if = If::make(BoolImm::make(true), Block::make({Continue::make()}));
    EXPECT_EQ(verify(Kernel{"k", {}, Block::make({in_if})}),
              Problems{"kernel 'k': continue outside a loop"});
}

TEST(VerifierTest, NamesMatchThePrinter) {
    auto a = Variable::make("", i32, VarKind::Let);
    auto b = Variable::make("", i32, VarKind::Let);
    auto c = Variable::make("", i32, VarKind::Let);
    Stmt body = Block::make({
        Let::make(a, int_(1)),
        If::make(BoolImm::make(true), Block::make({Let::make(b, ref(a))})),
        Let::make(c, ref(b)),
    });
    Kernel k{"k", {}, body};
    EXPECT_NE(print(k).find("let %2: i32 = %1"), std::string::npos);
    EXPECT_EQ(verify(k), Problems{"kernel 'k': %1 used outside its scope"});
}

TEST(VerifierTest, ArrayBytesThatOverflowSaturateInsteadOfWrapping) {
    // 2^61 doubles are 2^64 bytes: wrapped, that is 0 bytes and passed both limits.
    const uint64_t count = uint64_t(1) << 61;
    Kernel k{"huge", {}, Block::make({
        SharedArray::make(Variable::make("s", Type::pointer(ScalarType::F64, AddressSpace::Shared), VarKind::Let), count),
        LocalArray::make(Variable::make("l", Type::pointer(ScalarType::F64, AddressSpace::Local), VarKind::Let), count)})};
    const Problems problems = verify(k);
    ASSERT_EQ(problems.size(), 2u);
    auto reported = [&](const std::string &text) {
        return problems[0].find(text) != std::string::npos || problems[1].find(text) != std::string::npos;
    };
    EXPECT_TRUE(reported("static shared memory over the limit: 18446744073709551615 bytes of 49152"));
    EXPECT_TRUE(reported("local arrays add up to more than 524288 bytes per thread (18446744073709551615 at %l)"));
}

TEST(VerifierTest, SharedMemoryOverTheLimitSaysSoAndListsTheArrays) {
    // The first line says what is wrong and by how much; the log lists every static shared
    // array by name with its size (the dynamic one, [], adds nothing).
    auto shared = [](const char *name, ScalarType t, uint64_t count) {
        return SharedArray::make(Variable::make(name, Type::pointer(t, AddressSpace::Shared), VarKind::Let),
                                 count);
    };
    Kernel k{"tiles", {}, Block::make({shared("a", ScalarType::F32, 8192), shared("dyn", ScalarType::F32, 0),
                                       shared("b", ScalarType::F64, 2048), shared("c", ScalarType::U8, 16)})};
    const std::string expected =
        "kernel 'tiles': static shared memory over the limit: 49168 bytes of 49152, in 3 shared arrays:\n"
        "  shared %a: f32[8192] (32768 bytes)\n"
        "  shared %b: f64[2048] (16384 bytes)\n"
        "  shared %c: u8[16] (16 bytes)";
    EXPECT_EQ(verify(k), Problems{expected});
    try {
        verify_or_throw(k);
        FAIL() << "expected CompileError";
    } catch (const CompileError &e) {
        EXPECT_EQ(e.summary(), "kernel 'tiles' failed verification (1 problem): static shared memory over "
                               "the limit: 49168 bytes of 49152, in 3 shared arrays:");
        EXPECT_EQ(e.log(), expected);
    }
    // At the limit exactly, nothing is reported.
    Module ok = parse_module("kernel @full(%p: ptr<global f32>) {\n"
                             "  shared %a: f32[8192]\n"
                             "  shared %b: f64[2048]\n"
                             "}\n");
    EXPECT_EQ(verify(ok.kernels[0]), Problems{});
}
