/// \file
/// Unit tests of the IR printer: exact text of hand-built kernels, naming, constants.
#include "ember/compiler/IRPrinter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace ember::ir;

namespace {

const Type i32 = ScalarType::I32;
const Type i64 = ScalarType::I64;
const Type f32 = ScalarType::F32;
const Type f64 = ScalarType::F64;

Expr ref(const VariableRef &v) { return VarRef::make(v); }
Expr add(Expr a, Expr b) { return Binary::make(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return Binary::make(BinaryOp::Mul, std::move(a), std::move(b)); }

Kernel scalar_add() {
    auto vector = Variable::make("vector", Type::pointer(ScalarType::F32), VarKind::Param);
    auto size = Variable::make("size", i64, VarKind::Param);
    auto scalar = Variable::make("scalar", f32, VarKind::Param);
    auto idx = Variable::make("idx", i64, VarKind::Let);
    auto loaded = Variable::make("", f32, VarKind::Let);
    Expr gid = add(mul(SpecialReg::make(SpecialRegKind::BlockIdx, 0),
                       SpecialReg::make(SpecialRegKind::BlockDim, 0)),
                   SpecialReg::make(SpecialRegKind::ThreadIdx, 0));
    Stmt then_body = Block::make({
        Let::make(loaded, Load::make(ref(vector), ref(idx))),
        Store::make(ref(vector), ref(idx), add(ref(loaded), ref(scalar))),
    });
    Stmt body = Block::make({
        Let::make(idx, gid),
        If::make(Compare::make(CompareOp::LT, ref(idx), ref(size)), then_body),
    });
    return Kernel{"scalar_add", {vector, size, scalar}, body};
}

std::string float_text(Type t, double v) { return print(FloatImm::make(t, v)); }

} // namespace

TEST(IRPrinterTest, PrintsScalarAddExactly) {
    EXPECT_EQ(print(scalar_add()),
              "kernel @scalar_add(%vector: ptr<global f32>, %size: i64, %scalar: f32) {\n"
              "  let %idx: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)\n"
              "  if (%idx < %size) {\n"
              "    let %0: f32 = %vector[%idx]\n"
              "    %vector[%idx] = (%0 + %scalar)\n"
              "  }\n"
              "}\n");
}

TEST(IRPrinterTest, ModuleSeparatesKernelsByOneBlankLine) {
    Kernel a{"a", {}, Block::make({Barrier::make()})};
    Kernel b{"b", {}, Block::make({})};
    EXPECT_EQ(print(Module{{}, {a, b}}), "kernel @a() {\n  barrier\n}\n\nkernel @b() {\n}\n");
}

TEST(IRPrinterTest, NumbersAnonymousAndUniquifiesDuplicateNames) {
    auto x1 = Variable::make("x", i32, VarKind::Param);
    auto x2 = Variable::make("x", i32, VarKind::Param);
    auto anon1 = Variable::make("", i32, VarKind::Let);
    auto named0 = Variable::make("0", i32, VarKind::Let);
    auto x3 = Variable::make("x", i32, VarKind::Let);
    auto x1name = Variable::make("x.1", i32, VarKind::Let);
    auto anon2 = Variable::make("", i32, VarKind::Mutable);
    auto odd = Variable::make("a b-c", i32, VarKind::Let);
    Stmt body = Block::make({
        Let::make(anon1, ref(x1)),
        Let::make(named0, ref(x2)),
        Let::make(x3, ref(anon1)),
        Let::make(x1name, ref(named0)),
        Declare::make(anon2, ref(x3)),
        Let::make(odd, ref(x1name)),
        Assign::make(anon2, ref(odd)),
    });
    EXPECT_EQ(print(Kernel{"k", {x1, x2}, body}), "kernel @k(%x: i32, %x.1: i32) {\n"
                                                  "  let %0: i32 = %x\n"
                                                  "  let %0.1: i32 = %x.1\n"
                                                  "  let %x.2: i32 = %0\n"
                                                  "  let %x.1.1: i32 = %0.1\n"
                                                  "  var %1: i32 = %x.2\n"
                                                  "  let %a_b_c: i32 = %x.1.1\n"
                                                  "  %1 = %a_b_c\n"
                                                  "}\n");
}

TEST(IRPrinterTest, NamesFollowDefinitionOrderAcrossNesting) {
    auto i = Variable::make("", i64, VarKind::LoopIndex);
    auto inner = Variable::make("", i64, VarKind::Let);
    auto after = Variable::make("", i64, VarKind::Let);
    Stmt loop = For::make(i, IntImm::make(i64, 0), IntImm::make(i64, 4), IntImm::make(i64, 1),
                          Block::make({Let::make(inner, ref(i))}));
    Stmt body = Block::make({loop, Let::make(after, IntImm::make(i64, 7))});
    EXPECT_EQ(print(Kernel{"k", {}, body}), "kernel @k() {\n"
                                            "  for %0: i64 = 0:i64 to 4:i64 step 1:i64 {\n"
                                            "    let %1: i64 = %0\n"
                                            "  }\n"
                                            "  let %2: i64 = 7:i64\n"
                                            "}\n");
}

TEST(IRPrinterTest, IntegerConstants) {
    EXPECT_EQ(print(IntImm::make(i32, 42)), "42:i32");
    EXPECT_EQ(print(IntImm::make(i64, -3)), "-3:i64");
    EXPECT_EQ(print(IntImm::make(ScalarType::U64, -1)), "18446744073709551615:u64");
    EXPECT_EQ(print(IntImm::make(ScalarType::U8, 255)), "255:u8");
    EXPECT_EQ(print(IntImm::make(ScalarType::I8, 255)), "-1:i8");
    EXPECT_EQ(print(IntImm::make(i64, std::numeric_limits<int64_t>::min())),
              "-9223372036854775808:i64");
    EXPECT_EQ(print(BoolImm::make(true)), "true");
    EXPECT_EQ(print(BoolImm::make(false)), "false");
}

TEST(IRPrinterTest, FloatConstantsAreShortestAndLookLikeFloats) {
    EXPECT_EQ(float_text(f32, 20.0), "20.0:f32");
    EXPECT_EQ(float_text(f32, 1.5), "1.5:f32");
    EXPECT_EQ(float_text(f32, 0.1), "0.1:f32");
    EXPECT_EQ(float_text(f64, 0.1), "0.1:f64");
    EXPECT_EQ(float_text(f32, 1e20), "1e+20:f32");
    EXPECT_EQ(float_text(f32, -0.0), "-0.0:f32");
    EXPECT_EQ(float_text(f32, 1.0 / 3), "0.33333334:f32");
    EXPECT_EQ(float_text(f64, 1.0 / 3), "0.3333333333333333:f64");
    EXPECT_EQ(float_text(f32, INFINITY), "inf:f32");
    EXPECT_EQ(float_text(f64, -INFINITY), "-inf:f64");
    EXPECT_EQ(float_text(f32, NAN), "nan:f32");
    EXPECT_EQ(float_text(ScalarType::F16, 0.1), "0.099975586:f16");
    EXPECT_EQ(float_text(ScalarType::BF16, 3.0), "3.0:bf16");
}

TEST(IRPrinterTest, OperatorsAndIntrinsics) {
    auto a = ref(Variable::make("a", i32, VarKind::Param));
    auto b = ref(Variable::make("b", i32, VarKind::Param));
    auto p = ref(Variable::make("p", Type::pointer(ScalarType::I32, AddressSpace::Global, true),
                                VarKind::Param));
    Expr t = BoolImm::make(true), f = BoolImm::make(false);
    EXPECT_EQ(print(Binary::make(BinaryOp::And, t, f)), "(true && false)");
    EXPECT_EQ(print(Binary::make(BinaryOp::Or, t, f)), "(true || false)");
    EXPECT_EQ(print(Binary::make(BinaryOp::Xor, t, f)), "(true ^ false)");
    EXPECT_EQ(print(Binary::make(BinaryOp::And, a, b)), "(%a & %b)");
    EXPECT_EQ(print(Binary::make(BinaryOp::Or, a, b)), "(%a | %b)");
    EXPECT_EQ(print(Binary::make(BinaryOp::Shl, a, b)), "(%a << %b)");
    EXPECT_EQ(print(Binary::make(BinaryOp::Mod, a, b)), "(%a % %b)");
    EXPECT_EQ(print(Binary::make(BinaryOp::Min, a, Binary::make(BinaryOp::Max, a, b))),
              "min(%a, max(%a, %b))");
    EXPECT_EQ(print(Compare::make(CompareOp::GE, a, b)), "(%a >= %b)");
    EXPECT_EQ(print(Unary::make(UnaryOp::Neg, Binary::make(BinaryOp::Sub, a, b))), "-(%a - %b)");
    EXPECT_EQ(print(Unary::make(UnaryOp::BitNot, a)), "~%a");
    EXPECT_EQ(print(Unary::make(UnaryOp::Not, Compare::make(CompareOp::EQ, a, b))), "!(%a == %b)");
    EXPECT_EQ(print(Cast::make(f32, a)), "cast<f32>(%a)");
    EXPECT_EQ(print(Select::make(t, a, b)), "select(true, %a, %b)");
    EXPECT_EQ(print(Load::make(p, a)), "%p[%a]");
    EXPECT_EQ(print(SpecialReg::make(SpecialRegKind::GridDim, 2)), "grid_dim.z");
}

TEST(IRPrinterTest, StatementsAndNesting) {
    auto n = Variable::make("n", i32, VarKind::Mutable);
    Expr cond = Compare::make(CompareOp::LT, ref(n), IntImm::make(i32, 10));
    Stmt loop = While::make(
        cond,
        Block::make({If::make(Compare::make(CompareOp::EQ, ref(n), IntImm::make(i32, 5)),
                              Block::make({Break::make()}), Block::make({Continue::make()}))}));
    Stmt s = Block::make({Declare::make(n, IntImm::make(i32, 0)), loop, Barrier::make()});
    EXPECT_EQ(print(s), "var %n: i32 = 0:i32\n"
                        "while (%n < 10:i32) {\n"
                        "  if (%n == 5:i32) {\n"
                        "    break\n"
                        "  } else {\n"
                        "    continue\n"
                        "  }\n"
                        "}\n"
                        "barrier\n");
}

TEST(IRPrinterTest, OutputDoesNotDependOnAddresses) {
    std::string first = print(scalar_add());
    for (int i = 0; i < 5; ++i) EXPECT_EQ(print(scalar_add()), first);
}
