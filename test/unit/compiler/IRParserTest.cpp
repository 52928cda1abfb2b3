/// \file
/// Unit tests of the textual IR parser: print -> parse -> print round trips over every node kind,
/// and user errors with their line and column.
#include "ember/compiler/IRPrinter.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace ember::ir;
using ember::CompileError;

namespace {

/// Parses `text` and expects it to print back unchanged.
void expect_round_trip(const std::string &text) {
    Module m;
    ASSERT_NO_THROW(m = parse_module(text, "rt.eir")) << text;
    EXPECT_EQ(print(m), text);
}

/// The message of the CompileError that parsing `text` throws ("" when it does not throw).
std::string parse_error(const std::string &text) {
    try {
        parse_module(text, "t.eir");
    } catch (const CompileError &e) {
        return e.what();
    }
    return "";
}

const char *every_node =
    R"(kernel @every_node(%p: ptr<global f32>, %q: ptr<global const f32>, %n: i64, %flag: bool) {
  let %tid: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)
  let %yz: i64 = (((thread_idx.y + thread_idx.z) + (block_idx.y - block_idx.z)) + ((block_dim.y / block_dim.z) % ((grid_dim.x + grid_dim.y) + grid_dim.z)))
  let %bits: i32 = ((((1:i32 & 2:i32) | 3:i32) ^ 4:i32) << (5:i32 >> 1:i32))
  let %mm: i64 = min(max(%tid, 0:i64), %n)
  let %neg: i32 = -~%bits
  let %logic: bool = !((%flag && true) || (false ^ %flag))
  let %cmp: bool = ((((%tid == %n) && (%tid != %n)) && ((%tid < %n) || (%tid <= %n))) || ((%tid > %n) && (%tid >= %n)))
  let %eq: bool = (%logic == %cmp)
  let %c: f64 = cast<f64>(cast<f32>(%bits))
  let %sel: f32 = select(%flag, %q[%tid], -1.5:f32)
  let %ptr_sel: f32 = select(%cmp, %p, %p)[0:u8]
  var %acc: f32 = 0.0:f32
  if (%tid < %n) {
    %acc = (%acc + %p[%tid])
    %p[%tid] = (%acc * 2.0:f32)
  } else {
    %acc = -%acc
  }
  if %eq {
    barrier
  }
  for %i: i32 = 0:i32 to 10:i32 step 2:i32 {
    if (%i == 4:i32) {
      continue
    }
    var %j: i32 = %i
    while (%j > 0:i32) {
      %j = (%j - 1:i32)
      if (%j == 7:i32) {
        break
      }
    }
  }
  for %k: u64 = 18446744073709551615:u64 to 0:u64 step 18446744073709551615:u64 {
    barrier
  }
}
)";

} // namespace

TEST(IRParserTest, RoundTripsEveryNodeKind) { expect_round_trip(every_node); }

TEST(IRParserTest, RoundTripsConstantsOfEveryType) {
    expect_round_trip("kernel @constants() {\n"
                      "  let %a: i8 = -128:i8\n"
                      "  let %b: i16 = 32767:i16\n"
                      "  let %c: i32 = -2147483648:i32\n"
                      "  let %d: i64 = -9223372036854775808:i64\n"
                      "  let %e: u8 = 255:u8\n"
                      "  let %f: u16 = 65535:u16\n"
                      "  let %g: u32 = 4294967295:u32\n"
                      "  let %h: u64 = 18446744073709551615:u64\n"
                      "  let %i: f16 = 0.099975586:f16\n"
                      "  let %j: bf16 = -3.0:bf16\n"
                      "  let %k: f32 = 1e+20:f32\n"
                      "  let %l: f32 = 1e-45:f32\n"
                      "  let %m: f64 = 5e-324:f64\n"
                      "  let %n: f64 = -0.0:f64\n"
                      "  let %o: f32 = inf:f32\n"
                      "  let %p: f64 = -inf:f64\n"
                      "  let %q: f32 = nan:f32\n"
                      "  let %r: f32 = 3.4028235e+38:f32\n"
                      "  let %s: f64 = 0.1:f64\n"
                      "  let %t: bool = true\n"
                      "  let %u: i32 = --3:i32\n"
                      "  let %v: f32 = (%k - -1.0:f32)\n"
                      "}\n");
}

TEST(IRParserTest, RoundTripsGeneratedNames) {
    expect_round_trip("kernel @names(%x: i32, %x.1: i32) {\n"
                      "  let %0: i32 = %x\n"
                      "  let %0.1: i32 = %x.1\n"
                      "  var %1: i32 = %0\n"
                      "  %1 = %0.1\n"
                      "}\n");
}

TEST(IRParserTest, RoundTripsModulesAndSkipsComments) {
    Module m = parse_module("// leading comment\n\n"
                            "kernel @a(%n: i64) { // trailing comment\n"
                            "\n"
                            "  // inside\n"
                            "  let %m: i64 = (%n + 1:i64)   \n"
                            "}\n"
                            "kernel @b() {\n"
                            "}\n// end");
    ASSERT_EQ(m.kernels.size(), 2u);
    EXPECT_EQ(print(m), "kernel @a(%n: i64) {\n  let %m: i64 = (%n + 1:i64)\n}\n\n"
                        "kernel @b() {\n}\n");
    expect_round_trip(print(m));
}

TEST(IRParserTest, BuildsTheExpectedNodes) {
    Module m = parse_module("kernel @k(%p: ptr<global f32>, %n: i64) {\n"
                            "  for %i: i64 = 0:i64 to %n step 1:i64 {\n"
                            "    %p[%i] = cast<f32>(%i)\n"
                            "  }\n"
                            "}\n");
    const Kernel &k = m.kernels.at(0);
    EXPECT_EQ(k.name, "k");
    ASSERT_EQ(k.params.size(), 2u);
    EXPECT_EQ(k.params[0]->kind, VarKind::Param);
    EXPECT_EQ(k.params[0]->type, Type::pointer(ScalarType::F32));
    const auto *loop = k.body.as<Block>()->stmts.at(0).as<For>();
    ASSERT_NE(loop, nullptr);
    EXPECT_EQ(loop->var->kind, VarKind::LoopIndex);
    EXPECT_TRUE(loop->end.as<VarRef>()->var.same_as(k.params[1]));
    const auto *store = loop->body.as<Block>()->stmts.at(0).as<Store>();
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->index.as<VarRef>()->var.same_as(loop->var));
    EXPECT_EQ(store->value.as<Cast>()->type, Type(ScalarType::F32));
}

TEST(IRParserTest, NegativeLiteralsNeedNoSpaceAfterTheSign) {
    Module m = parse_module("kernel @k() {\n  let %a: i32 = -5:i32\n  let %b: i32 = - 5:i32\n}\n");
    const auto &stmts = m.kernels[0].body.as<Block>()->stmts;
    EXPECT_EQ(stmts[0].as<Let>()->value.as<IntImm>()->value, -5);
    EXPECT_NE(stmts[1].as<Let>()->value.as<Unary>(), nullptr);
    // For unsigned types the printer's `-1:u8` is Neg(1:u8), so it reads back as that.
    Module u = parse_module("kernel @k() {\n  let %a: u8 = -1:u8\n}\n");
    const auto *neg = u.kernels[0].body.as<Block>()->stmts[0].as<Let>()->value.as<Unary>();
    ASSERT_NE(neg, nullptr);
    EXPECT_EQ(neg->a.as<IntImm>()->value, 1);
    EXPECT_TRUE(std::signbit(parse_module("kernel @k() {\n  let %a: f32 = -nan:f32\n}\n")
                                 .kernels[0]
                                 .body.as<Block>()
                                 ->stmts[0]
                                 .as<Let>()
                                 ->value.as<FloatImm>()
                                 ->value));
}

TEST(IRParserTest, RoundTripsHandBuiltIR) {
    auto p = Variable::make("out", Type::pointer(ScalarType::F16), VarKind::Param);
    auto anon = Variable::make("", ScalarType::F16, VarKind::Let);
    Stmt body = Block::make({
        Let::make(anon, FloatImm::make(ScalarType::F16, 1.0 / 3)),
        Store::make(VarRef::make(p), SpecialReg::make(SpecialRegKind::ThreadIdx, 0),
                    Binary::make(BinaryOp::Mul, VarRef::make(anon), VarRef::make(anon))),
    });
    std::string text = print(Kernel{"half", {p}, body});
    expect_round_trip(text);
}

TEST(IRParserTest, ReportsTypeErrorsWithLocation) {
    EXPECT_EQ(parse_error("kernel @k(%a: i64, %b: f32) {\n  let %c: i64 = (%a + %b)\n}\n"),
              "t.eir:2:21: error: operands of '+' have different types i64 and f32");
    EXPECT_EQ(parse_error("kernel @k(%a: i64) {\n  let %c: i64 = (%a + %y)\n}\n"),
              "t.eir:2:23: error: use of undefined variable %y");
    EXPECT_EQ(parse_error("kernel @k(%a: i64) {\n  let %c: i64 = (%a + %a\n}\n"),
              "t.eir:3:1: error: expected ')', found '}'");
    EXPECT_EQ(parse_error("kernel @k(%a: i64) {\n  let %c: f32 = %a\n}\n"),
              "t.eir:2:17: error: cannot initialize %c of type f32 with a value of type i64");
    EXPECT_EQ(parse_error("kernel @k(%a: bool) {\n  let %c: bool = (%a < %a)\n}\n"),
              "t.eir:2:22: error: operands of '<' must be numbers, found bool");
    EXPECT_EQ(parse_error("kernel @k(%a: i32) {\n  let %c: i32 = (%a && %a)\n}\n"),
              "t.eir:2:21: error: operands of '&&' must be bool, found i32");
    EXPECT_EQ(parse_error("kernel @k(%a: f32) {\n  let %c: f32 = (%a << %a)\n}\n"),
              "t.eir:2:21: error: operands of '<<' must be integers, found f32");
    EXPECT_EQ(parse_error("kernel @k(%a: i32) {\n  if %a {\n  }\n}\n"),
              "t.eir:2:6: error: condition of 'if' must be bool, found i32");
    EXPECT_EQ(parse_error("kernel @k(%a: f32) {\n  let %b: f32 = %a[0:i64]\n}\n"),
              "t.eir:2:19: error: cannot index a value of type f32");
    EXPECT_EQ(parse_error("kernel @k(%a: ptr<global f32>) {\n  let %b: f32 = %a[1.0:f32]\n}\n"),
              "t.eir:2:20: error: index must be an integer, found f32");
}

TEST(IRParserTest, ReportsLiteralErrors) {
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: i32 = 42\n}\n"),
              "t.eir:3:1: error: expected ':' and a type after literal 42");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: u8 = 256:u8\n}\n"),
              "t.eir:2:16: error: integer literal 256 is out of range for u8");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: u8 = -256:u8\n}\n"),
              "t.eir:2:16: error: integer literal -256 is out of range for u8");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: i64 = 99999999999999999999:i64\n}\n"),
              "t.eir:2:17: error: integer literal 99999999999999999999 is out of range for i64");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: i32 = 1.5:i32\n}\n"),
              "t.eir:2:21: error: floating-point literal cannot have integer type i32");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: f32 = 1e99:f32\n}\n"),
              "t.eir:2:17: error: floating-point literal '1e99' is out of range for f32");
    // f16 and bf16 literals beyond their range are rejected as f32's are, not rounded to inf.
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: f16 = 70000.0:f16\n}\n"),
              "t.eir:2:17: error: floating-point literal '70000.0' is out of range for f16");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: f16 = -65520.0:f16\n}\n"),
              "t.eir:2:18: error: floating-point literal '65520.0' is out of range for f16");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: bf16 = 3.4e38:bf16\n}\n"),
              "t.eir:2:18: error: floating-point literal '3.4e38' is out of range for bf16");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: bf16 = 1e39:bf16\n}\n"),
              "t.eir:2:18: error: floating-point literal '1e39' is out of range for bf16");
    // What rounds to the largest finite f16 is accepted, and so is inf.
    EXPECT_EQ(print(parse_module("kernel @k(%p: ptr<global f16>) {\n  %p[0:i64] = 65519.0:f16\n"
                                         "  %p[1:i64] = -inf:f16\n}\n")
                            .kernels.at(0)),
              "kernel @k(%p: ptr<global f16>) {\n  %p[0:i64] = 65504.0:f16\n  %p[1:i64] = -inf:f16\n}\n");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: bool = 1:bool\n}\n"),
              "t.eir:2:20: error: a numeric literal cannot have type bool");
}

TEST(IRParserTest, ReportsScopeAndStatementErrors) {
    EXPECT_EQ(parse_error("kernel @k(%x: i32) {\n  if true {\n    let %x: i32 = 1:i32\n  }\n}\n"),
              "t.eir:3:9: error: redefinition of %x");
    EXPECT_EQ(parse_error("kernel @k(%x: i32, %x: i32) {\n}\n"),
              "t.eir:1:20: error: redefinition of %x");
    EXPECT_EQ(parse_error("kernel @k() {\n  if true {\n    let %y: i32 = 1:i32\n  }\n"
                          "  let %z: i32 = %y\n}\n"),
              "t.eir:5:17: error: use of undefined variable %y");
    EXPECT_EQ(parse_error("kernel @k(%x: i32) {\n  %x = 1:i32\n}\n"),
              "t.eir:2:3: error: cannot assign to immutable variable %x");
    EXPECT_EQ(parse_error("kernel @k() {\n  var %x: i32 = 0:i32\n  %x = 1:i64\n}\n"),
              "t.eir:3:8: error: cannot assign a value of type i64 to %x of type i32");
    EXPECT_EQ(parse_error("kernel @k(%p: ptr<global const f32>) {\n  %p[0:i64] = 1.0:f32\n}\n"),
              "t.eir:2:13: error: cannot store through read-only pointer of type "
              "ptr<global const f32>");
    EXPECT_EQ(parse_error("kernel @k(%p: ptr<global f32>) {\n  %p[0:i64] = 1.0:f64\n}\n"),
              "t.eir:2:15: error: cannot store a value of type f64 through ptr<global f32>");
    EXPECT_EQ(parse_error("kernel @k() {\n  break\n}\n"),
              "t.eir:2:3: error: 'break' outside a loop");
    EXPECT_EQ(
        parse_error("kernel @k() {\n  for %i: f32 = 0.0:f32 to 1.0:f32 step 1.0:f32 {\n  }\n}\n"),
        "t.eir:2:11: error: loop index %i must have an integer type, found f32");
    EXPECT_EQ(parse_error("kernel @k() {\n  for %i: i64 = 0:i32 to 1:i64 step 1:i64 {\n  }\n}\n"),
              "t.eir:2:17: error: loop begin has type i32, expected i64");
    EXPECT_EQ(parse_error("kernel @k() {\n  frobnicate\n}\n"),
              "t.eir:2:3: error: expected statement, found 'frobnicate'");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: i32 = 1:i32 $\n}\n"),
              "t.eir:2:23: error: unexpected character '$'");
    EXPECT_EQ(parse_error("kernel @k() {\n  let %a: i32 = 1:i32\n"),
              "t.eir:3:1: error: expected '}', found end of input");
    EXPECT_EQ(parse_error("kernel @k(%a: ptr<global quux>) {\n}\n"),
              "t.eir:1:26: error: unknown type 'quux'");
    EXPECT_EQ(parse_error(""), "t.eir:1:1: error: expected 'kernel'");
    EXPECT_EQ(parse_error("kernel @k() {\n}\nkernel @k() {\n}\n"),
              "t.eir:3:1: error: redefinition of kernel @k");
}

TEST(IRParserTest, VerifiesParsedKernels) {
    try {
        parse_module("kernel @bad.name() {\n}\n", "v.eir");
        FAIL() << "expected CompileError";
    } catch (const CompileError &e) {
        EXPECT_EQ(e.summary(),
                  "v.eir:1:1: error: kernel 'bad.name' failed verification (1 problem): name is not a C "
                  "identifier");
        EXPECT_EQ(e.log(), "kernel 'bad.name': name is not a C identifier");
    }
}

namespace {

/// Builds random, well-formed kernels covering every node kind (deterministic for a seed).
class RandomKernel {
public:
    explicit RandomKernel(unsigned seed) : state_(seed * 2654435761u + 1) {}

    Kernel build() {
        Kernel k;
        k.name = "random";
        for (Type t : {Type(ScalarType::I32), Type(ScalarType::I64), Type(ScalarType::U8),
                       Type(ScalarType::F32), Type(ScalarType::F64), Type(ScalarType::Bool),
                       Type(ScalarType::F16), Type::pointer(ScalarType::F32),
                       Type::pointer(ScalarType::I32, AddressSpace::Global, true)}) {
            auto v = Variable::make(pick(2) ? "" : "p", t, VarKind::Param);
            k.params.push_back(v);
            scope_.push_back(v);
        }
        k.body = block(3);
        return k;
    }

private:
    unsigned next() {
        state_ ^= state_ << 13;
        state_ ^= state_ >> 17;
        state_ ^= state_ << 5;
        return state_;
    }
    unsigned pick(unsigned n) { return next() % n; }

    Type scalar_type() {
        static const ScalarType types[] = {ScalarType::I32, ScalarType::I64, ScalarType::U8,
                                           ScalarType::F32, ScalarType::F64, ScalarType::Bool,
                                           ScalarType::F16};
        return types[pick(7)];
    }

    std::string name() {
        static const char *names[] = {"", "", "x", "x.1", "0", "acc", "i"};
        return names[pick(7)];
    }

    Expr constant(Type t) {
        if (t.is_bool()) return BoolImm::make(pick(2));
        if (t.is_int()) {
            static const int64_t values[] = {0, 1, -1, 127, -128, 255, INT64_MIN, INT64_MAX, 42};
            return IntImm::make(t, values[pick(9)]);
        }
        static const double values[] = {0.0,   -0.0,     1.5,       -2.25, 0.1, 1e20,
                                        1e-30, INFINITY, -INFINITY, NAN,   3.0, 65504.0};
        return FloatImm::make(t, values[pick(12)]);
    }

    Expr expr(Type t, int depth) {
        std::vector<VariableRef> candidates;
        for (const auto &v : scope_)
            if (v->type == t) candidates.push_back(v);
        unsigned choice = depth <= 0 ? pick(2) : pick(10);
        if (choice == 0 && !candidates.empty())
            return VarRef::make(candidates[pick(candidates.size())]);
        if (choice <= 1) {
            if (t == Type(ScalarType::I64) && pick(2))
                return SpecialReg::make(SpecialRegKind(pick(4)), pick(3));
            return constant(t);
        }
        switch (choice) {
        case 2: {
            if (t.is_bool()) return Unary::make(UnaryOp::Not, expr(t, depth - 1));
            if (t.is_int() && pick(2)) return Unary::make(UnaryOp::BitNot, expr(t, depth - 1));
            return Unary::make(UnaryOp::Neg, expr(t, depth - 1));
        }
        case 3:
        case 4: {
            std::vector<BinaryOp> ops;
            if (t.is_arithmetic())
                ops = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                       BinaryOp::Mod, BinaryOp::Min, BinaryOp::Max};
            if (t.is_int())
                for (auto op :
                     {BinaryOp::And, BinaryOp::Or, BinaryOp::Xor, BinaryOp::Shl, BinaryOp::Shr})
                    ops.push_back(op);
            if (t.is_bool()) ops = {BinaryOp::And, BinaryOp::Or, BinaryOp::Xor};
            return Binary::make(ops[pick(ops.size())], expr(t, depth - 1), expr(t, depth - 1));
        }
        case 5: {
            if (!t.is_bool()) break;
            Type operand = scalar_type();
            CompareOp op =
                operand.is_bool() ? (pick(2) ? CompareOp::EQ : CompareOp::NE) : CompareOp(pick(6));
            return Compare::make(op, expr(operand, depth - 1), expr(operand, depth - 1));
        }
        case 6: return Cast::make(t, expr(scalar_type(), depth - 1));
        case 7:
            return Select::make(expr(ScalarType::Bool, depth - 1), expr(t, depth - 1),
                                expr(t, depth - 1));
        case 8: {
            for (const auto &v : scope_)
                if (v->type.is_pointer() && v->type.element_type() == t)
                    return Load::make(VarRef::make(v), expr(ScalarType::I64, depth - 1));
            break;
        }
        default: break;
        }
        return constant(t);
    }

    Stmt block(int depth) {
        size_t mark = scope_.size();
        std::vector<Stmt> stmts;
        unsigned n = 1 + pick(5);
        for (unsigned i = 0; i < n; ++i) stmts.push_back(stmt(depth));
        scope_.resize(mark);
        return Block::make(std::move(stmts));
    }

    Stmt stmt(int depth) {
        switch (depth <= 0 ? pick(4) : pick(10)) {
        case 0: {
            Type t = scalar_type();
            auto v = Variable::make(name(), t, VarKind::Let);
            Stmt s = Let::make(v, expr(t, 3));
            scope_.push_back(v);
            return s;
        }
        case 1: {
            Type t = scalar_type();
            auto v = Variable::make(name(), t, VarKind::Mutable);
            Stmt s = Declare::make(v, expr(t, 2));
            scope_.push_back(v);
            return s;
        }
        case 2: {
            for (const auto &v : scope_)
                if (v->kind == VarKind::Mutable) return Assign::make(v, expr(v->type, 2));
            return Barrier::make();
        }
        case 3: {
            const VariableRef &p = scope_[7]; // ptr<global f32>
            return Store::make(VarRef::make(p), expr(ScalarType::I64, 2), expr(ScalarType::F32, 2));
        }
        case 4:
        case 5:
            return If::make(expr(ScalarType::Bool, 2), block(depth - 1),
                            pick(2) ? block(depth - 1) : Stmt());
        case 6: {
            Type t = pick(2) ? Type(ScalarType::I64) : Type(ScalarType::U8);
            auto v = Variable::make(name(), t, VarKind::LoopIndex);
            Expr b = expr(t, 1), e = expr(t, 1), s = expr(t, 1);
            scope_.push_back(v);
            ++loops_;
            Stmt body = block(depth - 1);
            --loops_;
            scope_.pop_back();
            return For::make(v, b, e, s, body);
        }
        case 7: {
            Expr c = expr(ScalarType::Bool, 2);
            ++loops_;
            Stmt body = block(depth - 1);
            --loops_;
            return While::make(c, body);
        }
        case 8:
            if (loops_ > 0) return pick(2) ? Break::make() : Continue::make();
            return Barrier::make();
        default: return Barrier::make();
        }
    }

    uint32_t state_;
    std::vector<VariableRef> scope_;
    int loops_ = 0;
};

} // namespace

TEST(IRParserTest, RoundTripsRandomKernels) {
    for (unsigned seed = 0; seed < 300; ++seed) {
        Kernel k = RandomKernel(seed).build();
        std::string text = print(k);
        Module m;
        try {
            m = parse_module(text, "random.eir");
        } catch (const ember::Error &e) {
            FAIL() << "seed " << seed << ": " << e.what() << "\n" << text;
        }
        ASSERT_EQ(print(m), text) << "seed " << seed;
    }
}
