/// \file
/// Unit tests of IR construction: make() validation, constant wrapping and rounding, names of
/// kinds, and the default visitor and mutator.
#include "ember/compiler/IR.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace ember::ir;
using ember::InternalError;

namespace {

const Type i32 = ScalarType::I32;
const Type i64 = ScalarType::I64;
const Type u8 = ScalarType::U8;
const Type f32 = ScalarType::F32;
const Type b1 = ScalarType::Bool;
const Type pf32 = Type::pointer(ScalarType::F32);

Expr int_(int64_t v, Type t = i32) { return IntImm::make(t, v); }
Expr flt(double v) { return FloatImm::make(f32, v); }
Expr var_ref(const char *name, Type t, VarKind k = VarKind::Param) {
    return VarRef::make(Variable::make(name, t, k));
}

} // namespace

TEST(IRTest, IntImmWrapsToTypeWidth) {
    EXPECT_EQ(IntImm::make(ScalarType::I8, 200).as<IntImm>()->value, -56);
    EXPECT_EQ(IntImm::make(ScalarType::U8, -1).as<IntImm>()->value, 255);
    EXPECT_EQ(IntImm::make(ScalarType::I16, 0x18000).as<IntImm>()->value, -32768);
    EXPECT_EQ(IntImm::make(ScalarType::U32, -1).as<IntImm>()->value, 0xffffffffLL);
    EXPECT_EQ(IntImm::make(ScalarType::I32, 0x100000005LL).as<IntImm>()->value, 5);
    EXPECT_EQ(IntImm::make(ScalarType::U64, -1).as<IntImm>()->bits(), ~uint64_t(0));
    EXPECT_EQ(IntImm::make(ScalarType::I64, INT64_MIN).as<IntImm>()->value, INT64_MIN);
}

TEST(IRTest, IntImmRejectsNonIntegerTypes) {
    EXPECT_THROW(IntImm::make(b1, 1), InternalError);
    EXPECT_THROW(IntImm::make(f32, 1), InternalError);
    EXPECT_THROW(IntImm::make(Type::pointer(ScalarType::I32), 1), InternalError);
}

TEST(IRTest, FloatImmRoundsToType) {
    EXPECT_EQ(FloatImm::make(f32, 0.1).as<FloatImm>()->value, static_cast<double>(0.1f));
    EXPECT_EQ(FloatImm::make(ScalarType::F64, 0.1).as<FloatImm>()->value, 0.1);
    // f16: 10 fraction bits, max 65504, smallest subnormal 2^-24.
    EXPECT_EQ(FloatImm::make(ScalarType::F16, 1.0 + 1.0 / 4096).as<FloatImm>()->value, 1.0);
    EXPECT_EQ(FloatImm::make(ScalarType::F16, 1.0 + 3.0 / 2048).as<FloatImm>()->value,
              1.0 + 2.0 / 1024); // tie rounds to even
    EXPECT_EQ(FloatImm::make(ScalarType::F16, 65504.0).as<FloatImm>()->value, 65504.0);
    EXPECT_TRUE(std::isinf(FloatImm::make(ScalarType::F16, 65520.0).as<FloatImm>()->value));
    EXPECT_EQ(FloatImm::make(ScalarType::F16, std::ldexp(1.0, -24)).as<FloatImm>()->value,
              std::ldexp(1.0, -24));
    EXPECT_EQ(FloatImm::make(ScalarType::F16, std::ldexp(1.0, -26)).as<FloatImm>()->value, 0.0);
    // bf16: 7 fraction bits.
    EXPECT_EQ(FloatImm::make(ScalarType::BF16, 1.0 + 1.0 / 256).as<FloatImm>()->value, 1.0);
    EXPECT_EQ(FloatImm::make(ScalarType::BF16, 3.0).as<FloatImm>()->value, 3.0);
    EXPECT_TRUE(std::isnan(FloatImm::make(ScalarType::F16, NAN).as<FloatImm>()->value));
    EXPECT_THROW(FloatImm::make(i32, 1.0), InternalError);
}

TEST(IRTest, MakeFillsResultTypes) {
    EXPECT_EQ(Compare::make(CompareOp::LT, int_(1), int_(2)).type(), b1);
    EXPECT_EQ(Cast::make(f32, int_(1)).type(), f32);
    EXPECT_EQ(SpecialReg::make(SpecialRegKind::BlockDim, 2).type(), i64);
    Expr p = var_ref("p", pf32);
    EXPECT_EQ(Load::make(p, int_(0, i64)).type(), f32);
    EXPECT_EQ(Select::make(BoolImm::make(true), p, p).type(), pf32);
    EXPECT_EQ(Binary::make(BinaryOp::Xor, BoolImm::make(true), BoolImm::make(false)).type(), b1);
}

TEST(IRTest, BinaryValidatesOperands) {
    EXPECT_THROW(Binary::make(BinaryOp::Add, int_(1), flt(1)), InternalError);
    EXPECT_THROW(Binary::make(BinaryOp::Add, int_(1), int_(1, i64)), InternalError);
    EXPECT_THROW(Binary::make(BinaryOp::Add, BoolImm::make(true), BoolImm::make(true)),
                 InternalError);
    EXPECT_THROW(Binary::make(BinaryOp::And, flt(1), flt(2)), InternalError);
    EXPECT_THROW(Binary::make(BinaryOp::Shl, flt(1), flt(2)), InternalError);
    EXPECT_THROW(Binary::make(BinaryOp::Shr, BoolImm::make(true), BoolImm::make(true)),
                 InternalError);
    EXPECT_THROW(Binary::make(BinaryOp::Min, Expr(), int_(1)), InternalError);
    Expr p = var_ref("p", pf32);
    EXPECT_THROW(Binary::make(BinaryOp::Add, p, p), InternalError);
    EXPECT_NO_THROW(Binary::make(BinaryOp::Max, flt(1), flt(2)));
    EXPECT_NO_THROW(Binary::make(BinaryOp::Or, BoolImm::make(true), BoolImm::make(false)));
    EXPECT_NO_THROW(Binary::make(BinaryOp::Shr, int_(1, u8), int_(2, u8)));
}

TEST(IRTest, AssertionMessageNamesTheBug) {
    try {
        Binary::make(BinaryOp::Add, int_(1), flt(1));
        FAIL() << "expected InternalError";
    } catch (const InternalError &e) {
        std::string msg = e.what();
        EXPECT_EQ(msg.rfind("internal error: ", 0), 0u) << msg;
        EXPECT_NE(msg.find("i32 and f32"), std::string::npos) << msg;
        EXPECT_NE(msg.find("IR.cpp:"), std::string::npos) << msg;
        EXPECT_NE(msg.find("this is a bug in ember, please report it"), std::string::npos) << msg;
    }
}

TEST(IRTest, CompareUnaryCastSelectValidate) {
    EXPECT_THROW(Compare::make(CompareOp::EQ, int_(1), flt(1)), InternalError);
    EXPECT_THROW(Compare::make(CompareOp::LT, BoolImm::make(true), BoolImm::make(false)),
                 InternalError);
    EXPECT_NO_THROW(Compare::make(CompareOp::NE, BoolImm::make(true), BoolImm::make(false)));
    Expr p = var_ref("p", pf32);
    EXPECT_THROW(Compare::make(CompareOp::EQ, p, p), InternalError);

    EXPECT_THROW(Unary::make(UnaryOp::Neg, BoolImm::make(true)), InternalError);
    EXPECT_THROW(Unary::make(UnaryOp::Not, int_(1)), InternalError);
    EXPECT_THROW(Unary::make(UnaryOp::BitNot, flt(1)), InternalError);
    EXPECT_NO_THROW(Unary::make(UnaryOp::Neg, flt(1)));
    EXPECT_THROW(Unary::make(UnaryOp::Neg, Expr()), InternalError);

    EXPECT_THROW(Cast::make(Type(), int_(1)), InternalError);
    EXPECT_THROW(Cast::make(pf32, int_(1)), InternalError);
    EXPECT_THROW(Cast::make(i32, p), InternalError);
    EXPECT_NO_THROW(Cast::make(b1, flt(1)));

    EXPECT_THROW(Select::make(int_(1), int_(1), int_(2)), InternalError);
    EXPECT_THROW(Select::make(BoolImm::make(true), int_(1), flt(2)), InternalError);

    EXPECT_THROW(SpecialReg::make(SpecialRegKind::ThreadIdx, 3), InternalError);
}

TEST(IRTest, MemoryNodesValidate) {
    Expr p = var_ref("p", pf32);
    EXPECT_THROW(Load::make(int_(1), int_(0)), InternalError);
    EXPECT_THROW(Load::make(p, flt(0)), InternalError);
    EXPECT_THROW(Load::make(p, BoolImm::make(false)), InternalError);
    EXPECT_NO_THROW(Load::make(p, int_(0, u8)));
    EXPECT_THROW(Store::make(p, int_(0), int_(1)), InternalError);
    EXPECT_THROW(Store::make(p, flt(0), flt(1)), InternalError);
    EXPECT_THROW(Store::make(flt(0), int_(0), flt(1)), InternalError);
    EXPECT_NO_THROW(Store::make(p, int_(0), flt(1)));
}

TEST(IRTest, StatementsValidate) {
    auto let_var = Variable::make("x", i32, VarKind::Let);
    auto mut_var = Variable::make("m", i32, VarKind::Mutable);
    auto idx = Variable::make("i", i64, VarKind::LoopIndex);
    Stmt body = Block::make({});

    EXPECT_NO_THROW(Let::make(let_var, int_(1)));
    EXPECT_THROW(Let::make(mut_var, int_(1)), InternalError);
    EXPECT_THROW(Let::make(let_var, flt(1)), InternalError);
    EXPECT_THROW(Let::make(VariableRef(), int_(1)), InternalError);

    EXPECT_NO_THROW(Declare::make(mut_var, int_(1)));
    EXPECT_THROW(Declare::make(let_var, int_(1)), InternalError);
    EXPECT_THROW(Declare::make(mut_var, int_(1, i64)), InternalError);

    EXPECT_NO_THROW(Assign::make(mut_var, int_(2)));
    EXPECT_THROW(Assign::make(let_var, int_(2)), InternalError);
    EXPECT_THROW(Assign::make(mut_var, flt(2)), InternalError);

    EXPECT_THROW(If::make(int_(1), body), InternalError);
    EXPECT_THROW(If::make(BoolImm::make(true), Stmt()), InternalError);
    EXPECT_NO_THROW(If::make(BoolImm::make(true), body));
    EXPECT_THROW(While::make(flt(1), body), InternalError);
    EXPECT_THROW(While::make(BoolImm::make(true), Stmt()), InternalError);

    EXPECT_NO_THROW(For::make(idx, int_(0, i64), int_(10, i64), int_(1, i64), body));
    EXPECT_THROW(For::make(idx, int_(0), int_(10, i64), int_(1, i64), body), InternalError);
    EXPECT_THROW(For::make(idx, int_(0, i64), int_(10, i64), int_(1), body), InternalError);
    EXPECT_THROW(For::make(let_var, int_(0), int_(10), int_(1), body), InternalError);
    auto float_idx = Variable::make("f", f32, VarKind::LoopIndex);
    EXPECT_THROW(For::make(float_idx, flt(0), flt(10), flt(1), body), InternalError);
    EXPECT_THROW(For::make(idx, int_(0, i64), int_(10, i64), int_(1, i64), Stmt()), InternalError);

    EXPECT_THROW(Block::make({Break::make(), Stmt()}), InternalError);
}

TEST(IRTest, AsDowncastsByKind) {
    Expr e = Binary::make(BinaryOp::Add, int_(1), int_(2));
    EXPECT_NE(e.as<Binary>(), nullptr);
    EXPECT_EQ(e.as<Compare>(), nullptr);
    EXPECT_EQ(e.kind(), NodeKind::Binary);
    Stmt s = Barrier::make();
    EXPECT_NE(s.as<Barrier>(), nullptr);
    EXPECT_EQ(s.as<Break>(), nullptr);
    EXPECT_EQ(Expr().as<Binary>(), nullptr);
}

TEST(IRTest, NamesOfKindsAndOperators) {
    EXPECT_EQ(to_string(NodeKind::IntImm), "IntImm");
    EXPECT_EQ(to_string(NodeKind::Barrier), "Barrier");
    EXPECT_EQ(to_string(BinaryOp::Shr), ">>");
    EXPECT_EQ(to_string(BinaryOp::Min), "min");
    EXPECT_EQ(to_string(CompareOp::GE), ">=");
    EXPECT_EQ(to_string(UnaryOp::BitNot), "~");
    EXPECT_EQ(to_string(SpecialRegKind::GridDim), "grid_dim");
}

namespace {

/// Counts the nodes of each kind the default traversal reaches.
struct CountingVisitor final : IRVisitor {
    using IRVisitor::visit;
    int int_imms = 0, loads = 0, stores = 0, breaks = 0;
    void visit(const IntImm *) override { ++int_imms; }
    void visit(const Load *op) override {
        ++loads;
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        ++stores;
        IRVisitor::visit(op);
    }
    void visit(const Break *) override { ++breaks; }
};

/// Replaces the i32 constant 1 by 2; everything else is left alone.
struct OneToTwo final : IRMutator {
    using IRMutator::visit;
    Expr visit(const IntImm *op) override {
        if (op->type == Type(ScalarType::I32) && op->value == 1) return IntImm::make(op->type, 2);
        return op;
    }
};

Stmt sample_body(Expr &untouched_out) {
    auto p = Variable::make("p", Type::pointer(ScalarType::I32), VarKind::Param);
    auto i = Variable::make("i", i64, VarKind::LoopIndex);
    Expr load = Load::make(VarRef::make(p), VarRef::make(i));
    untouched_out = Binary::make(BinaryOp::Mul, load, int_(3));
    Stmt store = Store::make(VarRef::make(p), VarRef::make(i),
                             Binary::make(BinaryOp::Add, untouched_out, int_(1)));
    Stmt loop = For::make(
        i, int_(0, i64), int_(8, i64), int_(1, i64),
        Block::make({store, If::make(BoolImm::make(true), Block::make({Break::make()}))}));
    return Block::make({loop, Barrier::make()});
}

} // namespace

TEST(IRTest, VisitorReachesEveryNode) {
    Expr unused;
    CountingVisitor v;
    v.visit(sample_body(unused));
    EXPECT_EQ(v.int_imms, 5); // 0, 8, 1 of the loop; 3 and 1 in the store
    EXPECT_EQ(v.loads, 1);
    EXPECT_EQ(v.stores, 1);
    EXPECT_EQ(v.breaks, 1);
}

TEST(IRMutatorTest, ReturnsSameNodeWhenNothingChanges) {
    Expr unused;
    Stmt s = sample_body(unused);
    struct Identity final : IRMutator {};
    EXPECT_TRUE(Identity().mutate(s).same_as(s));
    Expr e = Binary::make(BinaryOp::Mul, int_(5), int_(3));
    EXPECT_TRUE(OneToTwo().mutate(e).same_as(e));
    EXPECT_TRUE(Identity().mutate(Stmt()).same_as(Stmt()));
}

TEST(IRMutatorTest, RebuildsOnlyChangedPathAndSharesTheRest) {
    Expr untouched;
    Stmt s = sample_body(untouched);
    Stmt out = OneToTwo().mutate(s);
    ASSERT_FALSE(out.same_as(s));
    const auto *old_block = s.as<Block>();
    const auto *new_block = out.as<Block>();
    ASSERT_NE(new_block, nullptr);
    EXPECT_TRUE(new_block->stmts[1].same_as(old_block->stmts[1])); // the barrier is shared
    const auto *loop = new_block->stmts[0].as<For>();
    ASSERT_NE(loop, nullptr);
    const auto *old_loop = old_block->stmts[0].as<For>();
    EXPECT_TRUE(loop->var.same_as(old_loop->var));
    const auto *store = loop->body.as<Block>()->stmts[0].as<Store>();
    const auto *sum = store->value.as<Binary>();
    EXPECT_TRUE(sum->a.same_as(untouched)); // (load * 3) did not change
    EXPECT_EQ(sum->b.as<IntImm>()->value, 2);
    // The if statement held no 1:i32 and is shared.
    EXPECT_TRUE(loop->body.as<Block>()->stmts[1].same_as(old_loop->body.as<Block>()->stmts[1]));
}

TEST(IRTest, VariablesAreIdentities) {
    auto a = Variable::make("x", i32, VarKind::Let);
    auto b = Variable::make("x", i32, VarKind::Let);
    EXPECT_FALSE(a.same_as(b));
    Expr ra = VarRef::make(a);
    EXPECT_TRUE(ra.as<VarRef>()->var.same_as(a));
    EXPECT_EQ(ra.type(), i32);
}

TEST(ErrorTest, DslErrorStartsWithLocation) {
    auto loc = std::source_location::current();
    ember::DslError e("break_() outside a loop", loc);
    std::string expected = std::string(loc.file_name()) + ":" + std::to_string(loc.line()) + ":" +
                           std::to_string(loc.column()) + ": error: break_() outside a loop";
    EXPECT_EQ(e.what(), expected);
    EXPECT_EQ(e.where().line(), loc.line());
    EXPECT_THROW(throw e, ember::LogicError);
}
