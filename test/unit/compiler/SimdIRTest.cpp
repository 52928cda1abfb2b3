/// \file
/// Unit tests of SIMD vectors in the IR: vector types, make() validation of the vector nodes and
/// of the operators on vectors, the mutator, print -> parse -> print, parse errors and the
/// verifier's rules for vectors.
#include "ember/compiler/IR.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Verifier.h"

#include <gtest/gtest.h>

using namespace ember::ir;
using ember::CompileError;
using ember::InternalError;

namespace {

const Type i32 = ScalarType::I32;
const Type f32 = ScalarType::F32;
const Type b1 = ScalarType::Bool;
const Type f32x4 = Type::vector(ScalarType::F32, 4);
const Type i32x4 = Type::vector(ScalarType::I32, 4);
const Type boolx4 = Type::vector(ScalarType::Bool, 4);
const Type pf32 = Type::pointer(ScalarType::F32);

Expr int_(int64_t v, Type t = i32) { return IntImm::make(t, v); }
Expr flt(double v) { return FloatImm::make(f32, v); }
Expr param(const char *name, Type t) { return VarRef::make(Variable::make(name, t, VarKind::Param)); }

std::string parse_error(const std::string &text) {
    try {
        parse_module(text, "t.eir");
    } catch (const CompileError &e) {
        return std::string(e.what()) + "\n" + e.log();
    }
    return "";
}

} // namespace

TEST(SimdTypeTest, TextFormsAndParsing) {
    EXPECT_EQ(f32x4.to_string(), "f32x4");
    EXPECT_EQ(Type::vector(ScalarType::Bool, 8).to_string(), "boolx8");
    EXPECT_EQ(Type::vector(ScalarType::BF16, 16).to_string(), "bf16x16");
    for (ScalarType s : {ScalarType::Bool, ScalarType::I8, ScalarType::U64, ScalarType::F16, ScalarType::F64})
        for (unsigned n : {2u, 4u, 8u, 16u}) {
            Type t = Type::vector(s, n);
            EXPECT_EQ(Type::parse(t.to_string()), t) << t.to_string();
        }
    for (const char *bad : {"f32x3", "f32x1", "f32x32", "f32x04", "voidx4", "x4", "f32x", "f32x4x2", "ptr<global f32x4>"})
        EXPECT_EQ(Type::parse(bad), std::nullopt) << bad;
    EXPECT_EQ(Type::vector(ScalarType::F32, 1), f32);
    EXPECT_EQ(Type::vector(ScalarType::F32, 3), Type());
}

TEST(SimdTypeTest, SizesLanesAndPredicates) {
    EXPECT_EQ(f32x4.lanes(), 4u);
    EXPECT_EQ(f32x4.bytes(), 16u);
    EXPECT_EQ(f32x4.bits(), 128u);
    EXPECT_EQ(boolx4.bytes(), 4u);
    EXPECT_EQ(Type::vector(ScalarType::F16, 8).bytes(), 16u);
    EXPECT_EQ(f32x4.lane_type(), f32);
    EXPECT_EQ(f32.with_lanes(8), Type::vector(ScalarType::F32, 8));
    EXPECT_EQ(f32x4.with_lanes(1), f32);
    // Kind predicates are for scalars: every place that needs a scalar rejects vectors.
    EXPECT_TRUE(f32x4.is_vector());
    EXPECT_FALSE(f32x4.is_scalar());
    EXPECT_FALSE(f32x4.is_float());
    EXPECT_FALSE(i32x4.is_int());
    EXPECT_FALSE(boolx4.is_bool());
    EXPECT_FALSE(f32x4.is_void());
    EXPECT_NE(f32x4, f32);
    EXPECT_NE(f32x4, Type::vector(ScalarType::F32, 8));
    EXPECT_EQ(pf32.lanes(), 1u);
    EXPECT_EQ(vector_alignment(f32x4), 16u);
    EXPECT_EQ(vector_alignment(Type::vector(ScalarType::F64, 4)), 16u); // 32 bytes: 16-byte pieces
    EXPECT_EQ(vector_alignment(Type::vector(ScalarType::F16, 2)), 4u);
    EXPECT_EQ(vector_alignment(Type::vector(ScalarType::Bool, 2)), 2u);
}

TEST(SimdIRTest, VectorNodesValidate) {
    Expr x = param("x", f32);
    Expr v = MakeVector::broadcast(x, 4);
    EXPECT_EQ(v.type(), f32x4);
    EXPECT_TRUE(v.as<MakeVector>()->is_broadcast());
    EXPECT_EQ(MakeVector::make(f32x4, {x, x, flt(1), flt(2)}).type(), f32x4);
    EXPECT_THROW(MakeVector::make(f32x4, {x, x}), InternalError);                 // 2 values for 4 lanes
    EXPECT_THROW(MakeVector::make(f32x4, {int_(1)}), InternalError);              // wrong lane type
    EXPECT_THROW(MakeVector::make(f32, {x}), InternalError);                      // not a vector
    EXPECT_THROW(MakeVector::broadcast(x, 3), InternalError);                     // 3 lanes

    EXPECT_EQ(Extract::make(v, 3).type(), f32);
    EXPECT_THROW(Extract::make(v, 4), InternalError);
    EXPECT_THROW(Extract::make(x, 0), InternalError);

    EXPECT_EQ(Reduce::make(ReduceOp::Add, v).type(), f32);
    EXPECT_EQ(Reduce::make(ReduceOp::Or, MakeVector::broadcast(BoolImm::make(true), 2)).type(), b1);
    EXPECT_THROW(Reduce::make(ReduceOp::Xor, v), InternalError); // bitwise needs integers or bool
    EXPECT_THROW(Reduce::make(ReduceOp::Add, x), InternalError); // a scalar
    EXPECT_THROW(Reduce::make(ReduceOp::Max, MakeVector::broadcast(BoolImm::make(true), 2)), InternalError);
}

TEST(SimdIRTest, OperatorsWorkLaneByLane) {
    Expr v = param("v", f32x4), w = param("w", f32x4), k = param("k", i32x4);
    EXPECT_EQ(Binary::make(BinaryOp::Add, v, w).type(), f32x4);
    EXPECT_EQ(Compare::make(CompareOp::LT, v, w).type(), boolx4);
    EXPECT_THROW(Binary::make(BinaryOp::Add, v, param("s", f32)), InternalError); // no implicit broadcast
    EXPECT_THROW(Binary::make(BinaryOp::Shl, v, w), InternalError);
    EXPECT_NO_THROW(Binary::make(BinaryOp::Shl, k, k));
    EXPECT_THROW(Unary::make(UnaryOp::Not, v), InternalError);
    Expr mask = Compare::make(CompareOp::EQ, k, k);
    EXPECT_NO_THROW(Unary::make(UnaryOp::Not, mask));
    EXPECT_NO_THROW(Binary::make(BinaryOp::And, mask, mask));

    EXPECT_EQ(Select::make(mask, v, w).type(), f32x4);
    EXPECT_EQ(Select::make(BoolImm::make(true), v, w).type(), f32x4);
    EXPECT_THROW(Select::make(mask, param("a", f32), param("b", f32)), InternalError);
    EXPECT_THROW(Select::make(MakeVector::broadcast(BoolImm::make(true), 2), v, w), InternalError);

    EXPECT_EQ(Cast::make(i32x4, v).type(), i32x4);
    EXPECT_THROW(Cast::make(i32, v), InternalError);
    EXPECT_THROW(Cast::make(Type::vector(ScalarType::I32, 8), v), InternalError);

    EXPECT_EQ(Call::make(Intrinsic::Sqrt, {v}).type(), f32x4);
    EXPECT_EQ(Call::make(Intrinsic::IsNan, {v}).type(), boolx4);
    EXPECT_EQ(Call::make(Intrinsic::Clz, {k}).type(), i32x4);
    EXPECT_THROW(Call::make(Intrinsic::Sqrt, {k}), InternalError);
}

TEST(SimdIRTest, VectorMemoryValidates) {
    Expr p = param("p", pf32);
    EXPECT_EQ(Load::make(p, int_(0), 4).type(), f32x4);
    EXPECT_EQ(Load::make(p, int_(0), 4).as<Load>()->lanes(), 4u);
    EXPECT_THROW(Load::make(p, int_(0), 3), InternalError);
    EXPECT_NO_THROW(Store::make(p, int_(0), param("v", f32x4)));
    EXPECT_THROW(Store::make(p, int_(0), param("k", i32x4)), InternalError);
    // Vectors are not indices, atomics' operands or print items.
    EXPECT_THROW(Load::make(p, param("k", i32x4)), InternalError);
    EXPECT_THROW(Atomic::make(AtomicOp::Add, p, int_(0), param("v", f32x4)), InternalError);
    EXPECT_THROW(Print::make({PrintItem{param("v", f32x4), {}}}), InternalError);
}

TEST(SimdIRTest, MutatorKeepsLaneCountsAndSharesUntouchedNodes) {
    Expr p = param("p", pf32);
    Expr load = Load::make(p, int_(1), 8);
    Expr sum = Reduce::make(ReduceOp::Add, load);
    Expr lane = Extract::make(MakeVector::make(Type::vector(ScalarType::I32, 2), {int_(1), int_(5)}), 1);
    struct Identity final : IRMutator {};
    EXPECT_TRUE(Identity().mutate(sum).same_as(sum));
    EXPECT_TRUE(Identity().mutate(lane).same_as(lane));
    struct OneToTwo final : IRMutator {
        using IRMutator::visit;
        Expr visit(const IntImm *op) override { return op->value == 1 ? IntImm::make(op->type, 2) : Expr(op); }
    };
    Expr out = OneToTwo().mutate(sum);
    ASSERT_FALSE(out.same_as(sum));
    EXPECT_EQ(out.type(), f32);
    EXPECT_EQ(out.as<Reduce>()->value.as<Load>()->lanes(), 8u);
    EXPECT_EQ(print(out), "reduce_add(load<8>(%p[2:i32]))");
    EXPECT_EQ(print(OneToTwo().mutate(lane)), "extract<1>(i32x2(2:i32, 5:i32))");
}

TEST(SimdIRTest, RoundTripsThroughText) {
    const std::string text = R"(func @dot(%a: f32x4, %b: f32x4) -> f32 {
  return reduce_add((%a * %b))
}

kernel @simd(%p: ptr<global f32>, %q: ptr<global const f32>, %m: ptr<global bool>, %i: i64, %s: f32) {
  let %v: f32x4 = load<4>(%q[%i])
  let %w: f32x4 = fma(%v, f32x4(%s), f32x4(1.0:f32, 2.0:f32, -0.5:f32, inf:f32))
  let %mask: boolx4 = ((%v < %w) && !isnan(%w))
  %p[%i] = select(%mask, %v, -%w)
  %p[(%i + 4:i64)] = select((%s > 0.0:f32), floor(%v), cast<f32x4>(cast<i32x4>(%w)))
  %m[0:i64] = %mask
  var %acc: i32x8 = i32x8(0:i32)
  %acc = ((%acc + i32x8(1:i32)) << i32x8(2:i32))
  %p[8:i64] = ((extract<3>(%w) + @dot(%v, %w)) + cast<f32>(reduce_max(%acc)))
  let %any: bool = (reduce_or(%mask) || reduce_and(load<2>(%m[2:i64])))
  %p[9:i64] = cast<f32>(((reduce_mul(%acc) ^ reduce_xor(%acc)) & reduce_min(%acc)))
}
)";
    Module m;
    ASSERT_NO_THROW(m = parse_module(text, "rt.eir")) << parse_error(text);
    EXPECT_EQ(print(m), text);
}

TEST(SimdIRTest, ParseErrorsNameTheProblem) {
    auto kernel = [](const std::string &body) {
        return "kernel @k(%p: ptr<global f32>, %v: f32x4, %k: i32x4) {\n" + body + "\n}\n";
    };
    // Kernel parameters cannot be vectors: the verifier says so after the parse.
    EXPECT_NE(parse_error(kernel("")).find("parameter %v is a vector (f32x4)"), std::string::npos);
    auto fn = [](const std::string &body) {
        return "func @f(%p: ptr<global f32>, %v: f32x4, %k: i32x4) {\n" + body + "\n}\n";
    };
    EXPECT_NE(parse_error(fn("  %p[0:i64] = (%v + 1.0:f32)")).find("operands of '+' have different types f32x4 and f32"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = f32x4(1.0:f32, 2.0:f32)")).find("'f32x4' takes one value (a broadcast) or 4, found 2"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = f32x4(1:i32)")).find("the lanes of f32x4 are f32, found a value of type i32"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = extract<4>(%v)")).find("lane 4 is out of range for f32x4"), std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = load<3>(%p[0:i64])")).find("a vector load reads 2, 4, 8 or 16 elements, not 3"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = reduce_xor(%v)")).find("'reduce_xor' works on vectors of integers or bool, found f32x4"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = cast<i32x8>(%v)")).find("a cast keeps the number of lanes"), std::string::npos);
    EXPECT_EQ(parse_error(fn("  %p[0:i64] = %v\n  %p[0:i64] = select((%k == %k), %v, %v)")), "");
    EXPECT_NE(parse_error(fn("  %p[0:i64] = select(%k, %v, %v)")).find("condition of 'select' must be bool or a bool vector, found i32x4"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = select(boolx2(true), %v, %v)")).find("selects between vectors of 2 lanes"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[%k] = %v")).find("index must be an integer, found i32x4"), std::string::npos);
    EXPECT_NE(parse_error(fn("  if (%v < %v) {\n  }")).find("condition of 'if' must be bool, found boolx4"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  %p[0:i64] = %k")).find("cannot store a value of type i32x4 through ptr<global f32>"),
              std::string::npos);
    EXPECT_NE(parse_error(fn("  let %x: f32 = 1.0:f32x4")).find("a numeric literal cannot have type f32x4"), std::string::npos);
    EXPECT_NE(parse_error(fn("  print(%v)")).find("cannot print a value of type f32x4"), std::string::npos);
    EXPECT_NE(parse_error(fn("  let %o: f32 = atomic_add(%p[0:i64], %v)")), "");
}

TEST(SimdIRTest, VerifierChecksVectorStoresAndParams) {
    auto v = Variable::make("v", f32x4, VarKind::Param);
    auto p = Variable::make("p", pf32, VarKind::Param);
    Kernel k{"k", {p, v}, Block::make({Store::make(VarRef::make(p), int_(0), VarRef::make(v))})};
    std::vector<std::string> problems = verify(k);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0], "kernel 'k': parameter %v is a vector (f32x4); kernels take scalars and pointers (load "
                           "vectors through a pointer)");
    // A device function takes vectors; a free variable inside a vector node is found.
    auto free_var = Variable::make("x", f32, VarKind::Let);
    auto f = Function::make("f", {p, v}, Type(),
                            Block::make({Store::make(VarRef::make(p), int_(0),
                                                     Reduce::make(ReduceOp::Add, MakeVector::broadcast(VarRef::make(free_var), 4)))}));
    problems = verify(*f);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("use of undefined variable %x"), std::string::npos) << problems[0];
}
