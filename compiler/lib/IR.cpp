/// \file
/// Construction and validation of IR nodes, names of kinds and operators, and the default
/// IRVisitor / IRMutator traversals.
#include "ember/compiler/IR.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <unordered_set>

namespace ember::ir {

namespace {

/// Rounds `v` to a binary format with `mantissa_bits` explicit fraction bits and exponent range
/// [min_exp, max_exp] (IEEE-754 round-to-nearest-even, overflow to infinity, gradual underflow).
/// Used for f16 and bf16, which have no native C++ type; the result is exact in a double.
double round_to_small_float(double v, int mantissa_bits, int min_exp, int max_exp) {
    if (!std::isfinite(v) || v == 0) return v;
    int e = std::ilogb(v);
    if (e < min_exp) e = min_exp; // subnormal: fixed quantum
    double quantum = std::ldexp(1.0, e - mantissa_bits);
    double r = std::nearbyint(v / quantum) * quantum; // default rounding mode: to nearest even
    double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mantissa_bits), max_exp);
    if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
    return r;
}

bool is_number(Type t) { return t.is_arithmetic(); }

/// The lane type of a vector (a scalar's own type): what element-wise operators check.
Type lane(Type t) { return t.lane_type(); }

/// The textual name of an operation in a table of (operation, name) pairs; `what` names the
/// enumeration in the assertion for a value outside the table.
template <class Op, size_t N>
std::string_view name_in(const std::pair<Op, const char *> (&table)[N], Op op, const char *what) {
    for (const auto &[o, name] : table)
        if (o == op) return name;
    EMBER_UNREACHABLE(std::string("invalid ") + what);
}

/// The operation named `name` in such a table, if any.
template <class Op, size_t N>
std::optional<Op> op_named(const std::pair<Op, const char *> (&table)[N], std::string_view name) {
    for (const auto &[o, n] : table)
        if (name == n) return o;
    return std::nullopt;
}

uint32_t deepest(std::initializer_list<const IRNode *> nodes) {
    uint32_t d = 0;
    for (const IRNode *n : nodes)
        if (n) d = std::max(d, n->depth);
    return d;
}

uint32_t deepest(const std::vector<Expr> &exprs) {
    uint32_t d = 0;
    for (const Expr &e : exprs) d = std::max(d, e.depth());
    return d;
}

/// The depth of the deepest child of `n` (0 for none).
uint32_t deepest_child(const IRNode &n) {
    switch (n.kind) {
    case NodeKind::IntImm:
    case NodeKind::FloatImm:
    case NodeKind::BoolImm:
    case NodeKind::VarRef:
    case NodeKind::SpecialReg:
    case NodeKind::SharedArray:
    case NodeKind::LocalArray:
    case NodeKind::Break:
    case NodeKind::Continue:
    case NodeKind::Barrier:
    case NodeKind::AsyncGroup:
    case NodeKind::Fence: return 0;
    case NodeKind::AsyncCopy: {
        const auto &op = static_cast<const AsyncCopy &>(n);
        return deepest(
            {op.dst.get(), op.dst_index.get(), op.src.get(), op.src_index.get(), op.valid.get()});
    }
    case NodeKind::Wgmma: {
        const auto &op = static_cast<const Wgmma &>(n);
        return deepest({op.a.get(), op.a_index.get(), op.b.get(), op.b_index.get()});
    }
    case NodeKind::TensorSync: return 0;
    case NodeKind::MBarrier: {
        const auto &op = static_cast<const MBarrier &>(n);
        return deepest({op.ptr.get(), op.index.get(), op.value.get()});
    }
    case NodeKind::TmaLoad: {
        const auto &op = static_cast<const TmaLoad &>(n);
        return deepest({op.dst.get(), op.dst_index.get(), op.map.get(), op.x.get(), op.y.get(),
                        op.bar.get(), op.bar_index.get(), op.multicast.get()});
    }
    case NodeKind::Unary: return static_cast<const Unary &>(n).a.depth();
    case NodeKind::Cast: return static_cast<const Cast &>(n).a.depth();
    case NodeKind::Binary: {
        const auto &op = static_cast<const Binary &>(n);
        return deepest({op.a.get(), op.b.get()});
    }
    case NodeKind::Compare: {
        const auto &op = static_cast<const Compare &>(n);
        return deepest({op.a.get(), op.b.get()});
    }
    case NodeKind::Select: {
        const auto &op = static_cast<const Select &>(n);
        return deepest({op.cond.get(), op.a.get(), op.b.get()});
    }
    case NodeKind::Load: {
        const auto &op = static_cast<const Load &>(n);
        return deepest({op.ptr.get(), op.index.get()});
    }
    case NodeKind::Atomic: {
        const auto &op = static_cast<const Atomic &>(n);
        return deepest({op.ptr.get(), op.index.get(), op.value.get(), op.compare.get()});
    }
    case NodeKind::Warp: {
        const auto &op = static_cast<const Warp &>(n);
        return deepest({op.value.get(), op.lane.get()});
    }
    case NodeKind::Mma: {
        const auto &op = static_cast<const Mma &>(n);
        return deepest({op.a.get(), op.b.get(), op.c.get()});
    }
    case NodeKind::MatrixLoad: {
        const auto &op = static_cast<const MatrixLoad &>(n);
        return deepest({op.ptr.get(), op.index.get()});
    }
    case NodeKind::Call: return deepest(static_cast<const Call &>(n).args);
    case NodeKind::Invoke: return deepest(static_cast<const Invoke &>(n).args);
    case NodeKind::MakeVector: return deepest(static_cast<const MakeVector &>(n).args);
    case NodeKind::Extract: return static_cast<const Extract &>(n).vector.depth();
    case NodeKind::Reduce: return static_cast<const Reduce &>(n).value.depth();
    case NodeKind::Block: {
        uint32_t d = 0;
        for (const Stmt &s : static_cast<const Block &>(n).stmts) d = std::max(d, s.depth());
        return d;
    }
    case NodeKind::Let: return static_cast<const Let &>(n).value.depth();
    case NodeKind::Declare: return static_cast<const Declare &>(n).init.depth();
    case NodeKind::Assign: return static_cast<const Assign &>(n).value.depth();
    case NodeKind::ConstantArray: return deepest(static_cast<const ConstantArray &>(n).init);
    case NodeKind::Store: {
        const auto &op = static_cast<const Store &>(n);
        return deepest({op.ptr.get(), op.index.get(), op.value.get()});
    }
    case NodeKind::If: {
        const auto &op = static_cast<const If &>(n);
        return deepest({op.cond.get(), op.then_body.get(), op.else_body.get()});
    }
    case NodeKind::For: {
        const auto &op = static_cast<const For &>(n);
        return deepest({op.begin.get(), op.end.get(), op.step.get(), op.body.get()});
    }
    case NodeKind::While: {
        const auto &op = static_cast<const While &>(n);
        return deepest({op.cond.get(), op.body.get()});
    }
    case NodeKind::Return: return deepest({static_cast<const Return &>(n).value.get()});
    case NodeKind::Evaluate: return static_cast<const Evaluate &>(n).value.depth();
    case NodeKind::Print: {
        uint32_t d = 0;
        for (const PrintItem &i : static_cast<const Print &>(n).items)
            if (!i.is_text()) d = std::max(d, i.value.depth());
        return d;
    }
    }
    EMBER_UNREACHABLE("invalid NodeKind");
}

/// Sets the depth of a node `make` has just built and checks it against max_nesting_depth.
template <class N> N *sealed(N *n) {
    const uint32_t d = 1 + deepest_child(*n);
    if (d > max_nesting_depth) {
        delete n;
        detail::assertion_failed("depth <= max_nesting_depth",
                                 "IR nested " + std::to_string(d) + " deep, deeper than max_nesting_depth (" +
                                     std::to_string(max_nesting_depth) + "): the producer must check its input",
                                 __FILE__, __LINE__);
    }
    n->depth = d;
    return n;
}

} // namespace

void RefCounted::destroy(const RefCounted *p) noexcept {
    // The objects released while a deletion runs wait in a list linked through themselves; only
    // the outermost call deletes. Plain thread_locals: they stay valid while static objects that
    // hold IR are destroyed at exit.
    thread_local const RefCounted *pending = nullptr;
    thread_local bool deleting = false;
    if (deleting) {
        p->next_pending_ = pending;
        pending = p;
        return;
    }
    deleting = true;
    delete p;
    while (pending) {
        const RefCounted *q = pending;
        pending = q->next_pending_;
        delete q;
    }
    deleting = false;
}

// ---------------------------------------------------------------------------------------------
// Names.

std::string_view to_string(NodeKind k) {
    switch (k) {
#define EMBER_IR_EXPR(Name) case NodeKind::Name: return #Name;
#define EMBER_IR_STMT(Name) case NodeKind::Name: return #Name;
#include "ember/compiler/IRNodes.def"
    }
    EMBER_UNREACHABLE("invalid NodeKind");
}

std::string_view to_string(SpecialRegKind k) {
    switch (k) {
    case SpecialRegKind::ThreadIdx: return "thread_idx";
    case SpecialRegKind::BlockIdx: return "block_idx";
    case SpecialRegKind::BlockDim: return "block_dim";
    case SpecialRegKind::GridDim: return "grid_dim";
    case SpecialRegKind::ClusterDim: return "cluster_dim";
    }
    EMBER_UNREACHABLE("invalid SpecialRegKind");
}

std::string_view to_string(UnaryOp op) {
    switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Not: return "!";
    case UnaryOp::BitNot: return "~";
    }
    EMBER_UNREACHABLE("invalid UnaryOp");
}

std::string_view to_string(BinaryOp op) {
    switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::And: return "&";
    case BinaryOp::Or: return "|";
    case BinaryOp::Xor: return "^";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    }
    EMBER_UNREACHABLE("invalid BinaryOp");
}

std::string_view to_string(CompareOp op) {
    switch (op) {
    case CompareOp::EQ: return "==";
    case CompareOp::NE: return "!=";
    case CompareOp::LT: return "<";
    case CompareOp::LE: return "<=";
    case CompareOp::GT: return ">";
    case CompareOp::GE: return ">=";
    }
    EMBER_UNREACHABLE("invalid CompareOp");
}

// ---------------------------------------------------------------------------------------------
// Variables and expressions.

VariableRef Variable::make(std::string name, Type type, VarKind kind, bool noalias) {
    EMBER_ASSERT(kind <= VarKind::LoopIndex, "invalid VarKind");
    return VariableRef(new Variable(std::move(name), type, kind, noalias));
}

Expr IntImm::make(Type t, int64_t value) {
    EMBER_ASSERT(t.is_int(), "IntImm of non-integer type " + t.to_string());
    unsigned bits = t.bits();
    if (bits < 64) {
        uint64_t mask = (uint64_t(1) << bits) - 1;
        uint64_t u = static_cast<uint64_t>(value) & mask;
        if (t.is_signed_int() && (u >> (bits - 1)) != 0) u |= ~mask; // sign-extend
        value = static_cast<int64_t>(u);
    }
    return Expr(sealed(new IntImm(t, value)));
}

// f16 and bf16 are rounded exactly (round-to-nearest-even straight from the double, no double
// rounding through f32); the stored double holds the rounded value.
Expr FloatImm::make(Type t, double value) {
    EMBER_ASSERT(t.is_float(), "FloatImm of non-float type " + t.to_string());
    switch (t.scalar()) {
    case ScalarType::F16: value = round_to_small_float(value, 10, -14, 15); break;
    case ScalarType::BF16: value = round_to_small_float(value, 7, -126, 127); break;
    case ScalarType::F32: value = static_cast<double>(static_cast<float>(value)); break;
    default: break;
    }
    return Expr(sealed(new FloatImm(t, value)));
}

Expr BoolImm::make(bool value) { return Expr(sealed(new BoolImm(value))); }

Expr VarRef::make(VariableRef var) {
    EMBER_ASSERT(var, "VarRef of a null variable");
    EMBER_ASSERT(!var->type.is_void(), "VarRef of void variable");
    return Expr(sealed(new VarRef(std::move(var))));
}

Expr SpecialReg::make(SpecialRegKind reg, unsigned dim) {
    EMBER_ASSERT(reg <= SpecialRegKind::ClusterDim, "invalid SpecialRegKind");
    EMBER_ASSERT(dim < 3, "SpecialReg dimension must be 0, 1 or 2");
    return Expr(sealed(new SpecialReg(reg, static_cast<uint8_t>(dim))));
}

std::string_view operand_requirement(UnaryOp op, Type t) {
    t = lane(t);
    switch (op) {
    case UnaryOp::Neg: return is_number(t) ? "" : "numbers";
    case UnaryOp::Not: return t.is_bool() ? "" : "bool";
    case UnaryOp::BitNot: return t.is_int() ? "" : "integers";
    }
    EMBER_UNREACHABLE("invalid UnaryOp");
}

std::string_view operand_requirement(BinaryOp op, Type t) {
    t = lane(t);
    switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod:
    case BinaryOp::Min:
    case BinaryOp::Max: return is_number(t) ? "" : "numbers";
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Xor: return t.is_int() || t.is_bool() ? "" : "integers or bool";
    case BinaryOp::Shl:
    case BinaryOp::Shr: return t.is_int() ? "" : "integers";
    }
    EMBER_UNREACHABLE("invalid BinaryOp");
}

std::string_view operand_requirement(CompareOp op, Type t) {
    t = lane(t);
    if (!t.is_scalar() || t.is_void()) return "scalars or vectors";
    if (t.is_fp8()) return "numbers or bool (an 8-bit float is cast to f32 first)";
    if (t.is_bool() && op != CompareOp::EQ && op != CompareOp::NE) return "numbers";
    return "";
}

Expr Unary::make(UnaryOp op, Expr a) {
    EMBER_ASSERT(a, "Unary of a null operand");
    std::string_view need = operand_requirement(op, a.type());
    EMBER_ASSERT(need.empty(), "Unary '" + std::string(to_string(op)) + "' needs " +
                                   std::string(need) + ", found " + a.type().to_string());
    return Expr(sealed(new Unary(op, std::move(a))));
}

Expr Binary::make(BinaryOp op, Expr a, Expr b) {
    EMBER_ASSERT(a && b, "Binary with a null operand");
    Type t = a.type();
    EMBER_ASSERT(t == b.type(), "Binary '" + std::string(to_string(op)) + "' of mismatched types " +
                                    t.to_string() + " and " + b.type().to_string());
    std::string_view need = operand_requirement(op, t);
    EMBER_ASSERT(need.empty(), "Binary '" + std::string(to_string(op)) + "' needs " +
                                   std::string(need) + ", found " + t.to_string());
    return Expr(sealed(new Binary(op, std::move(a), std::move(b))));
}

Expr Compare::make(CompareOp op, Expr a, Expr b) {
    EMBER_ASSERT(a && b, "Compare with a null operand");
    Type t = a.type();
    EMBER_ASSERT(t == b.type(),
                 "Compare of mismatched types " + t.to_string() + " and " + b.type().to_string());
    EMBER_ASSERT(op <= CompareOp::GE, "invalid CompareOp");
    std::string_view need = operand_requirement(op, t);
    EMBER_ASSERT(need.empty(), "Compare '" + std::string(to_string(op)) + "' needs " +
                                   std::string(need) + ", found " + t.to_string());
    return Expr(sealed(new Compare(op, std::move(a), std::move(b))));
}

namespace {
struct IntrinsicInfo {
    Intrinsic op;
    const char *name;
    unsigned arity;
};
constexpr IntrinsicInfo intrinsics[] = {
    {Intrinsic::Abs, "abs", 1},         {Intrinsic::Popcount, "popcount", 1},
    {Intrinsic::Clz, "clz", 1},         {Intrinsic::Ctz, "ctz", 1},
    {Intrinsic::Sqrt, "sqrt", 1},       {Intrinsic::Floor, "floor", 1},
    {Intrinsic::Ceil, "ceil", 1},       {Intrinsic::Trunc, "trunc", 1},
    {Intrinsic::Round, "round", 1},     {Intrinsic::Fma, "fma", 3},
    {Intrinsic::Copysign, "copysign", 2}, {Intrinsic::IsNan, "isnan", 1},
    {Intrinsic::IsInf, "isinf", 1},     {Intrinsic::IsFinite, "isfinite", 1},
    {Intrinsic::Fmin, "fmin", 2},       {Intrinsic::Fmax, "fmax", 2},
    {Intrinsic::Rsqrt, "rsqrt", 1},     {Intrinsic::Cbrt, "cbrt", 1},
    {Intrinsic::Exp, "exp", 1},         {Intrinsic::Exp2, "exp2", 1},
    {Intrinsic::Expm1, "expm1", 1},     {Intrinsic::Log, "log", 1},
    {Intrinsic::Log2, "log2", 1},       {Intrinsic::Log10, "log10", 1},
    {Intrinsic::Log1p, "log1p", 1},     {Intrinsic::Pow, "pow", 2},
    {Intrinsic::Sin, "sin", 1},         {Intrinsic::Cos, "cos", 1},
    {Intrinsic::Tan, "tan", 1},         {Intrinsic::Asin, "asin", 1},
    {Intrinsic::Acos, "acos", 1},       {Intrinsic::Atan, "atan", 1},
    {Intrinsic::Atan2, "atan2", 2},     {Intrinsic::Sinh, "sinh", 1},
    {Intrinsic::Cosh, "cosh", 1},       {Intrinsic::Tanh, "tanh", 1},
    {Intrinsic::Erf, "erf", 1},
    {Intrinsic::FastExp, "fast_exp", 1},   {Intrinsic::FastExp2, "fast_exp2", 1},
    {Intrinsic::FastLog, "fast_log", 1},   {Intrinsic::FastLog2, "fast_log2", 1},
    {Intrinsic::FastSin, "fast_sin", 1},   {Intrinsic::FastCos, "fast_cos", 1},
    {Intrinsic::FastTanh, "fast_tanh", 1}, {Intrinsic::FastRsqrt, "fast_rsqrt", 1},
    {Intrinsic::FastSqrt, "fast_sqrt", 1},
};
const IntrinsicInfo &info(Intrinsic op) {
    for (const IntrinsicInfo &i : intrinsics)
        if (i.op == op) return i;
    EMBER_UNREACHABLE("invalid Intrinsic");
}
} // namespace

std::string_view to_string(Intrinsic op) { return info(op).name; }
unsigned arity(Intrinsic op) { return info(op).arity; }

std::optional<Intrinsic> parse_intrinsic(std::string_view name) {
    for (const IntrinsicInfo &i : intrinsics)
        if (name == i.name) return i.op;
    return std::nullopt;
}

std::string_view operand_requirement(Intrinsic op, Type t) {
    t = lane(t);
    switch (op) {
    case Intrinsic::Abs: return is_number(t) ? "" : "numbers";
    case Intrinsic::Popcount:
    case Intrinsic::Clz:
    case Intrinsic::Ctz: return t.is_int() ? "" : "integers";
    default: return t.is_float() ? "" : "floats";
    }
}

Type result_type(Intrinsic op, Type t) {
    switch (op) {
    case Intrinsic::IsNan:
    case Intrinsic::IsInf:
    case Intrinsic::IsFinite: return Type::vector(ScalarType::Bool, t.lanes());
    default: return t;
    }
}

Intrinsic accurate_version(Intrinsic op) {
    switch (op) {
    case Intrinsic::FastExp: return Intrinsic::Exp;
    case Intrinsic::FastExp2: return Intrinsic::Exp2;
    case Intrinsic::FastLog: return Intrinsic::Log;
    case Intrinsic::FastLog2: return Intrinsic::Log2;
    case Intrinsic::FastSin: return Intrinsic::Sin;
    case Intrinsic::FastCos: return Intrinsic::Cos;
    case Intrinsic::FastTanh: return Intrinsic::Tanh;
    case Intrinsic::FastRsqrt: return Intrinsic::Rsqrt;
    case Intrinsic::FastSqrt: return Intrinsic::Sqrt;
    default: return op;
    }
}

Expr Call::make(Intrinsic op, std::vector<Expr> args) {
    EMBER_ASSERT(args.size() == arity(op), "Call '" + std::string(to_string(op)) + "' with " +
                                                std::to_string(args.size()) + " arguments");
    for (const Expr &a : args) EMBER_ASSERT(a, "Call with a null argument");
    Type t = args[0].type();
    for (const Expr &a : args)
        EMBER_ASSERT(a.type() == t, "Call '" + std::string(to_string(op)) + "' of mismatched types");
    std::string_view need = operand_requirement(op, t);
    EMBER_ASSERT(need.empty(), "Call '" + std::string(to_string(op)) + "' needs " +
                                   std::string(need) + ", found " + t.to_string());
    Type r = result_type(op, t);
    return Expr(sealed(new Call(op, r, std::move(args))));
}

namespace {
constexpr std::pair<AtomicOp, const char *> atomic_names[] = {
    {AtomicOp::Add, "add"},   {AtomicOp::Sub, "sub"}, {AtomicOp::Min, "min"},
    {AtomicOp::Max, "max"},   {AtomicOp::Exchange, "exchange"}, {AtomicOp::Cas, "cas"},
    {AtomicOp::And, "and"},   {AtomicOp::Or, "or"},   {AtomicOp::Xor, "xor"},
};
} // namespace

std::string_view to_string(AtomicOp op) { return name_in(atomic_names, op, "AtomicOp"); }

std::optional<AtomicOp> parse_atomic_op(std::string_view name) { return op_named(atomic_names, name); }

std::string_view operand_requirement(AtomicOp op, Type t) {
    const bool int_32_64 = t.is_int() && (t.bits() == 32 || t.bits() == 64);
    const bool float_32_64 = t.is_float() && (t.bits() == 32 || t.bits() == 64);
    if (op == AtomicOp::Add) return int_32_64 || float_32_64 ? "" : "32- or 64-bit integers or floats";
    return int_32_64 ? "" : "32- or 64-bit integers";
}

Expr Atomic::make(AtomicOp op, Expr ptr, Expr index, Expr value, Expr compare, FenceScope scope) {
    EMBER_ASSERT(ptr && index && value, "Atomic with a null operand");
    EMBER_ASSERT(ptr.type().is_pointer() && !ptr.type().readonly(), "Atomic through a non-writable pointer");
    EMBER_ASSERT(index.type().is_int(), "Atomic index of type " + index.type().to_string());
    Type t = ptr.type().element_type();
    EMBER_ASSERT(value.type() == t, "Atomic value of type " + value.type().to_string() +
                                        " on elements of " + t.to_string());
    EMBER_ASSERT((op == AtomicOp::Cas) == bool(compare), "Atomic compare operand is for cas only");
    EMBER_ASSERT(!compare || compare.type() == t, "Atomic compare of the wrong type");
    std::string_view need = operand_requirement(op, t);
    EMBER_ASSERT(need.empty(), "atomic_" + std::string(to_string(op)) + " needs " + std::string(need));
    EMBER_ASSERT(scope <= FenceScope::System, "invalid atomic scope");
    return Expr(sealed(new Atomic(op, std::move(ptr), std::move(index), std::move(value), std::move(compare), scope)));
}

namespace {
constexpr std::pair<WarpOp, const char *> warp_names[] = {
    {WarpOp::ShuffleIdx, "shuffle_idx"}, {WarpOp::ShuffleUp, "shuffle_up"},
    {WarpOp::ShuffleDown, "shuffle_down"}, {WarpOp::ShuffleXor, "shuffle_xor"},
    {WarpOp::Ballot, "ballot"}, {WarpOp::Any, "warp_any"}, {WarpOp::All, "warp_all"},
    {WarpOp::WaveBallot, "wave_ballot"},
};
} // namespace

std::string_view to_string(WarpOp op) { return name_in(warp_names, op, "WarpOp"); }

std::optional<WarpOp> parse_warp_op(std::string_view name) { return op_named(warp_names, name); }

Expr Warp::make(WarpOp op, Expr value, Expr lane) {
    EMBER_ASSERT(value, "Warp with a null value");
    Type t = value.type();
    if (is_shuffle(op)) {
        EMBER_ASSERT(lane && lane.type() == Type(ScalarType::I32), "shuffle lane must be i32");
        EMBER_ASSERT((t.is_int() || t.is_float()) && (t.bits() == 32 || t.bits() == 64),
                     "shuffle of " + t.to_string());
        return Expr(sealed(new Warp(op, t, std::move(value), std::move(lane))));
    }
    EMBER_ASSERT(!lane && t.is_bool(), std::string(to_string(op)) + " takes one bool");
    Type r = op == WarpOp::Ballot       ? Type(ScalarType::U32)
             : op == WarpOp::WaveBallot ? Type(ScalarType::U64)
                                        : Type(ScalarType::Bool);
    return Expr(sealed(new Warp(op, r, std::move(value), Expr())));
}

namespace {
constexpr std::pair<MmaInput, const char *> mma_input_names[] = {{MmaInput::F16, "f16"},
                                                                 {MmaInput::BF16, "bf16"},
                                                                 {MmaInput::TF32, "tf32"},
                                                                 {MmaInput::E4M3, "e4m3"},
                                                                 {MmaInput::E5M2, "e5m2"}};
} // namespace

std::string_view to_string(MmaInput t) { return name_in(mma_input_names, t, "MmaInput"); }

std::optional<MmaInput> parse_mma_input(std::string_view s) { return op_named(mma_input_names, s); }

std::string MmaShape::to_string() const {
    return "m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k);
}

std::optional<MmaShape> MmaShape::parse(std::string_view s) {
    // m<digits>n<digits>k<digits>, each 1 to 3 digits without leading zeros
    MmaShape shape;
    uint8_t *fields[] = {&shape.m, &shape.n, &shape.k};
    const char letters[] = {'m', 'n', 'k'};
    size_t at = 0;
    for (int f = 0; f < 3; ++f) {
        if (at >= s.size() || s[at] != letters[f]) return std::nullopt;
        ++at;
        unsigned v = 0;
        size_t digits = 0;
        while (at < s.size() && s[at] >= '0' && s[at] <= '9' && digits < 4) {
            v = v * 10 + unsigned(s[at] - '0');
            ++at, ++digits;
        }
        if (digits == 0 || digits > 3 || v == 0 || v > 255 || (digits > 1 && s[at - digits] == '0'))
            return std::nullopt;
        *fields[f] = static_cast<uint8_t>(v);
    }
    if (at != s.size()) return std::nullopt;
    return shape;
}

std::optional<MmaFragments> Mma::fragments(MmaShape shape, MmaInput input) {
    const Type c = Type::vector(ScalarType::F32, 4);
    if (shape.m != 16 || shape.n != 8) return std::nullopt;
    if (input == MmaInput::TF32) {
        if (shape.k != 8) return std::nullopt;
        return MmaFragments{Type::vector(ScalarType::F32, 4), Type::vector(ScalarType::F32, 2), c};
    }
    if (input == MmaInput::E4M3 || input == MmaInput::E5M2) {
        if (shape.k != 32) return std::nullopt;
        const ScalarType e = input == MmaInput::E4M3 ? ScalarType::E4M3 : ScalarType::E5M2;
        return MmaFragments{Type::vector(e, 16), Type::vector(e, 8), c};
    }
    const ScalarType e = input == MmaInput::F16 ? ScalarType::F16 : ScalarType::BF16;
    if (shape.k == 16) return MmaFragments{Type::vector(e, 8), Type::vector(e, 4), c};
    if (shape.k == 8) return MmaFragments{Type::vector(e, 4), Type::vector(e, 2), c};
    return std::nullopt;
}

std::string Mma::problem(MmaShape shape, MmaInput input, Type a, Type b, Type c) {
    const std::string name = "mma." + shape.to_string() + "." + std::string(to_string(input));
    std::optional<MmaFragments> f = fragments(shape, input);
    if (!f)
        return "there is no " + name +
               " (there are m16n8k16 and m16n8k8 for f16 and bf16, m16n8k8 for tf32, and "
               "m16n8k32 for e4m3 and e5m2)";
    auto mismatch = [&](const char *what, Type want, Type got) {
        return name + " takes " + want.to_string() + " as " + what + ", not " + got.to_string();
    };
    if (a != f->a) return mismatch("a", f->a, a);
    if (b != f->b) return mismatch("b", f->b, b);
    const Type half_c = Type::vector(ScalarType::F16, 4);
    if (c != f->c && !(input == MmaInput::F16 && c == half_c))
        return name + " takes " + f->c.to_string() + (input == MmaInput::F16 ? " or f16x4" : "") +
               " as c, not " + c.to_string();
    return "";
}

Mma::Place Mma::a_place(MmaShape shape, MmaInput input, unsigned r, unsigned j) {
    const unsigned h = r / 8, base = 4 * (r % 8);
    if (input == MmaInput::TF32) return {base + j % 4, h + 2 * (j / 4)};
    if (input == MmaInput::E4M3 || input == MmaInput::E5M2)
        return {base + j % 16 / 4, j % 4 + 4 * h + 8 * (j / 16)};
    if (shape.k == 8) return {base + j / 2, j % 2 + 2 * h};
    return {base + j % 8 / 2, j % 2 + 2 * h + 4 * (j / 8)};
}

Mma::Place Mma::b_place(MmaShape shape, MmaInput input, unsigned j, unsigned col) {
    const unsigned base = 4 * col;
    if (input == MmaInput::TF32) return {base + j % 4, j / 4};
    if (input == MmaInput::E4M3 || input == MmaInput::E5M2)
        return {base + j % 16 / 4, j % 4 + 4 * (j / 16)};
    if (shape.k == 8) return {base + j / 2, j % 2};
    return {base + j % 8 / 2, j % 2 + 2 * (j / 8)};
}

Expr Mma::make(MmaShape shape, MmaInput input, Expr a, Expr b, Expr c) {
    EMBER_ASSERT(a && b && c, "Mma with a null operand");
    const std::string p = problem(shape, input, a.type(), b.type(), c.type());
    EMBER_ASSERT(p.empty(), p);
    return Expr(sealed(new Mma(shape, input, std::move(a), std::move(b), std::move(c))));
}

std::string MatrixLoad::problem(Type ptr, unsigned count) {
    if (count != 1 && count != 2 && count != 4)
        return "loads 1, 2 or 4 matrices (ldmatrix.x1, .x2, .x4), not " + std::to_string(count);
    if (!ptr.is_pointer() || ptr.space() != AddressSpace::Shared)
        return "reads shared memory, not through " + ptr.to_string();
    const Type e = ptr.element_type();
    if (e.is_bool() || e.bits() != 16)
        return "loads 16-bit elements (f16, bf16, i16, u16), not " + e.to_string();
    return "";
}

Expr MatrixLoad::make(Expr ptr, Expr index, unsigned count, bool trans) {
    EMBER_ASSERT(ptr && index, "MatrixLoad with a null operand");
    EMBER_ASSERT(index.type().is_int(), "MatrixLoad index of type " + index.type().to_string());
    const std::string p = problem(ptr.type(), count);
    EMBER_ASSERT(p.empty(), "ldmatrix " + p);
    const Type t = Type::vector(ptr.type().element(), 2 * count);
    return Expr(sealed(new MatrixLoad(t, std::move(ptr), std::move(index), count, trans)));
}

std::string Cast::problem(Type from, Type to) {
    const Type f = lane(from), t = lane(to);
    if (!f.is_fp8() && !t.is_fp8()) return "";
    auto partner = [](Type x) {
        return x.is_fp8() || x == Type(ScalarType::F16) || x == Type(ScalarType::BF16) ||
               x == Type(ScalarType::F32);
    };
    if (partner(f) && partner(t)) return "";
    const Type fp8 = f.is_fp8() ? f : t, other = f.is_fp8() ? t : f;
    return "an 8-bit float (" + fp8.to_string() +
           ") converts to and from f16, bf16, f32, e4m3 and e5m2 only, not " + other.to_string() +
           ": cast through f32";
}

Expr Cast::make(Type to, Expr a) {
    EMBER_ASSERT(a, "Cast of a null operand");
    EMBER_ASSERT(problem(a.type(), to).empty(), "Cast " + problem(a.type(), to));
    EMBER_ASSERT(!to.is_pointer() && !lane(to).is_void(), "Cast to " + to.to_string());
    EMBER_ASSERT(!a.type().is_pointer() && !lane(a.type()).is_void(), "Cast of " + a.type().to_string());
    EMBER_ASSERT(to.lanes() == a.type().lanes(),
                 "Cast of " + a.type().to_string() + " to " + to.to_string() + " changes the lane count");
    return Expr(sealed(new Cast(to, std::move(a))));
}

Expr Select::make(Expr cond, Expr a, Expr b) {
    EMBER_ASSERT(cond && a && b, "Select with a null operand");
    Type c = cond.type();
    EMBER_ASSERT(lane(c).is_bool() && !c.is_pointer() && (c.is_scalar() || c.lanes() == a.type().lanes()),
                 "Select condition of type " + c.to_string() + " for arms of type " + a.type().to_string());
    EMBER_ASSERT(a.type() == b.type(), "Select arms of mismatched types " + a.type().to_string() +
                                           " and " + b.type().to_string());
    return Expr(sealed(new Select(std::move(cond), std::move(a), std::move(b))));
}

Expr Load::make(Expr ptr, Expr index, unsigned lanes) {
    EMBER_ASSERT(ptr && index, "Load with a null operand");
    EMBER_ASSERT(ptr.type().is_pointer(), "Load from non-pointer " + ptr.type().to_string());
    EMBER_ASSERT(index.type().is_int(), "Load index of type " + index.type().to_string());
    EMBER_ASSERT(lanes == 1 || Type::valid_lanes(lanes), "Load of " + std::to_string(lanes) + " lanes");
    return Expr(sealed(new Load(std::move(ptr), std::move(index), lanes)));
}

unsigned vector_alignment(Type t) { return std::min(t.bytes(), 16u); }

Expr MakeVector::make(Type type, std::vector<Expr> args) {
    EMBER_ASSERT(type.is_vector(), "MakeVector of non-vector type " + type.to_string());
    EMBER_ASSERT(args.size() == 1 || args.size() == type.lanes(),
                 "MakeVector of " + type.to_string() + " from " + std::to_string(args.size()) + " values");
    for (const Expr &a : args)
        EMBER_ASSERT(a && a.type() == type.lane_type(),
                     "MakeVector of " + type.to_string() + " from a value of type " +
                         (a ? a.type().to_string() : std::string("<null>")));
    return Expr(sealed(new MakeVector(type, std::move(args))));
}

Expr MakeVector::broadcast(Expr scalar, unsigned lanes) {
    EMBER_ASSERT(scalar, "broadcast of a null value");
    Type t = scalar.type().with_lanes(lanes);
    return make(t, {std::move(scalar)});
}

Expr Extract::make(Expr vector, unsigned lane) {
    EMBER_ASSERT(vector && vector.type().is_vector(), "Extract from a non-vector");
    EMBER_ASSERT(lane < vector.type().lanes(), "Extract of lane " + std::to_string(lane) + " of " +
                                                   vector.type().to_string());
    return Expr(sealed(new Extract(std::move(vector), lane)));
}

namespace {
constexpr std::pair<ReduceOp, const char *> reduce_names[] = {
    {ReduceOp::Add, "add"}, {ReduceOp::Mul, "mul"}, {ReduceOp::Min, "min"}, {ReduceOp::Max, "max"},
    {ReduceOp::And, "and"}, {ReduceOp::Or, "or"},   {ReduceOp::Xor, "xor"},
};
} // namespace

std::string_view to_string(ReduceOp op) { return name_in(reduce_names, op, "ReduceOp"); }

std::optional<ReduceOp> parse_reduce_op(std::string_view name) { return op_named(reduce_names, name); }

std::string_view operand_requirement(ReduceOp op, Type t) {
    Type l = lane(t);
    switch (op) {
    case ReduceOp::Add:
    case ReduceOp::Mul:
    case ReduceOp::Min:
    case ReduceOp::Max: return t.is_vector() && is_number(l) ? "" : "vectors of numbers";
    case ReduceOp::And:
    case ReduceOp::Or:
    case ReduceOp::Xor: return t.is_vector() && (l.is_int() || l.is_bool()) ? "" : "vectors of integers or bool";
    }
    EMBER_UNREACHABLE("invalid ReduceOp");
}

Expr Reduce::make(ReduceOp op, Expr value) {
    EMBER_ASSERT(value, "Reduce of a null value");
    std::string_view need = operand_requirement(op, value.type());
    EMBER_ASSERT(need.empty(), "reduce_" + std::string(to_string(op)) + " needs " + std::string(need) +
                                   ", found " + value.type().to_string());
    return Expr(sealed(new Reduce(op, std::move(value))));
}

// ---------------------------------------------------------------------------------------------
// Statements.

Stmt Block::make(std::vector<Stmt> stmts) {
    for (const Stmt &s : stmts) EMBER_ASSERT(s, "Block with a null statement");
    return Stmt(sealed(new Block(std::move(stmts))));
}

Stmt Let::make(VariableRef var, Expr value) {
    EMBER_ASSERT(var && value, "Let with a null operand");
    EMBER_ASSERT(var->kind == VarKind::Let, "Let of a variable that is not of kind Let");
    EMBER_ASSERT(var->type == value.type(), "Let of " + var->type.to_string() + " variable to " +
                                                value.type().to_string() + " value");
    return Stmt(sealed(new Let(std::move(var), std::move(value))));
}

Stmt Declare::make(VariableRef var, Expr init) {
    EMBER_ASSERT(var && init, "Declare with a null operand");
    EMBER_ASSERT(var->kind == VarKind::Mutable, "Declare of a variable that is not Mutable");
    EMBER_ASSERT(var->type == init.type(), "Declare of " + var->type.to_string() +
                                               " variable with " + init.type().to_string() +
                                               " value");
    return Stmt(sealed(new Declare(std::move(var), std::move(init))));
}

Stmt Assign::make(VariableRef var, Expr value) {
    EMBER_ASSERT(var && value, "Assign with a null operand");
    EMBER_ASSERT(var->kind == VarKind::Mutable, "Assign to a variable that is not Mutable");
    EMBER_ASSERT(var->type == value.type(), "Assign of " + value.type().to_string() + " to " +
                                                var->type.to_string() + " variable");
    return Stmt(sealed(new Assign(std::move(var), std::move(value))));
}

Stmt Store::make(Expr ptr, Expr index, Expr value) {
    EMBER_ASSERT(ptr && index && value, "Store with a null operand");
    EMBER_ASSERT(ptr.type().is_pointer(), "Store to non-pointer " + ptr.type().to_string());
    EMBER_ASSERT(index.type().is_int(), "Store index of type " + index.type().to_string());
    EMBER_ASSERT(!value.type().is_pointer() && value.type().lane_type() == ptr.type().element_type(),
                 "Store of " + value.type().to_string() + " through " + ptr.type().to_string());
    return Stmt(sealed(new Store(std::move(ptr), std::move(index), std::move(value))));
}

Stmt If::make(Expr cond, Stmt then_body, Stmt else_body) {
    EMBER_ASSERT(cond && then_body, "If with a null condition or then body");
    EMBER_ASSERT(cond.type().is_bool(), "If condition of type " + cond.type().to_string());
    return Stmt(sealed(new If(std::move(cond), std::move(then_body), std::move(else_body))));
}

std::string LaunchBounds::problem() const {
    auto range = [](const char *what, uint32_t v, uint32_t lo, uint32_t hi) -> std::string {
        if (v == 0 || (v >= lo && v <= hi)) return "";
        return std::string(what) + " is " + std::to_string(lo) + " to " + std::to_string(hi) +
               ", not " + std::to_string(v);
    };
    for (std::string p : {range("max_threads", max_threads, 1, kMaxThreads),
                          range("min_blocks", min_blocks, 1, kMaxBlocks),
                          range("max_registers", max_registers, kMinRegisters, kMaxRegisters)})
        if (!p.empty()) return p;
    if (min_blocks != 0 && max_threads == 0)
        return "min_blocks needs max_threads: the blocks per multiprocessor are of that many "
               "threads";
    return "";
}

std::string LaunchBounds::to_string() const {
    std::string s;
    if (max_threads) s += " max_threads(" + std::to_string(max_threads) + ")";
    if (min_blocks) s += " min_blocks(" + std::to_string(min_blocks) + ")";
    if (max_registers) s += " max_registers(" + std::to_string(max_registers) + ")";
    return s;
}

std::string Unroll::to_string() const {
    switch (kind) {
    case Kind::Default: return "";
    case Kind::Disable: return "unroll(none)";
    case Kind::Full: return "unroll(full)";
    case Kind::Count: return "unroll(" + std::to_string(count) + ")";
    }
    return "";
}

Stmt For::make(VariableRef var, Expr begin, Expr end, Expr step, Stmt body, Unroll unroll) {
    EMBER_ASSERT(var && begin && end && step && body, "For with a null operand");
    EMBER_ASSERT(var->kind == VarKind::LoopIndex, "For of a variable that is not a LoopIndex");
    Type t = var->type;
    EMBER_ASSERT(t.is_int(), "For index of non-integer type " + t.to_string());
    EMBER_ASSERT(begin.type() == t && end.type() == t && step.type() == t,
                 "For bounds of types " + begin.type().to_string() + ", " + end.type().to_string() +
                     ", " + step.type().to_string() + " for " + t.to_string() + " index");
    EMBER_ASSERT(unroll.kind == Unroll::Kind::Count
                     ? unroll.count >= 2 && unroll.count <= Unroll::kMaxCount
                     : unroll.count == 0,
                 "For with unroll count " + std::to_string(unroll.count));
    return Stmt(sealed(new For(std::move(var), std::move(begin), std::move(end), std::move(step),
                               std::move(body), unroll)));
}

Stmt While::make(Expr cond, Stmt body) {
    EMBER_ASSERT(cond && body, "While with a null operand");
    EMBER_ASSERT(cond.type().is_bool(), "While condition of type " + cond.type().to_string());
    return Stmt(sealed(new While(std::move(cond), std::move(body))));
}

Stmt SharedArray::make(VariableRef var, uint64_t count) {
    EMBER_ASSERT(var, "SharedArray of a null variable");
    EMBER_ASSERT(var->kind == VarKind::Let, "SharedArray defines a Let variable");
    EMBER_ASSERT(var->type.is_pointer() && var->type.space() == AddressSpace::Shared &&
                     !var->type.readonly(),
                 "SharedArray variable must be a ptr<shared T>");
    return Stmt(sealed(new SharedArray(std::move(var), count)));
}

Stmt LocalArray::make(VariableRef var, uint64_t count) {
    EMBER_ASSERT(var && var->kind == VarKind::Let, "LocalArray defines a Let variable");
    EMBER_ASSERT(var->type.is_pointer() && var->type.space() == AddressSpace::Local && !var->type.readonly(),
                 "LocalArray variable must be a ptr<local T>");
    EMBER_ASSERT(count > 0, "LocalArray of no elements");
    return Stmt(sealed(new LocalArray(std::move(var), count)));
}

Stmt ConstantArray::make(VariableRef var, std::string name, uint64_t count, std::vector<Expr> init) {
    EMBER_ASSERT(var && var->kind == VarKind::Let, "ConstantArray defines a Let variable");
    EMBER_ASSERT(var->type.is_pointer() && var->type.space() == AddressSpace::Constant && var->type.readonly(),
                 "ConstantArray variable must be a ptr<constant const T>");
    EMBER_ASSERT(count > 0, "ConstantArray of no elements");
    EMBER_ASSERT(init.empty() || init.size() == count, "ConstantArray initialiser of the wrong length");
    for (const Expr &e : init)
        EMBER_ASSERT(e && e.type() == var->type.element_type() &&
                         (e.as<IntImm>() || e.as<FloatImm>() || e.as<BoolImm>()),
                     "ConstantArray initialiser must hold immediates of the element type");
    return Stmt(sealed(new ConstantArray(std::move(var), std::move(name), count, std::move(init))));
}

std::string_view to_string(FenceScope s) {
    switch (s) {
    case FenceScope::Block: return "block";
    case FenceScope::Device: return "device";
    case FenceScope::System: return "system";
    }
    EMBER_UNREACHABLE("invalid FenceScope");
}

std::optional<FenceScope> parse_fence_scope(std::string_view s) {
    for (FenceScope f : {FenceScope::Block, FenceScope::Device, FenceScope::System})
        if (s == to_string(f)) return f;
    return std::nullopt;
}

Stmt Fence::make(FenceScope scope) { return Stmt(sealed(new Fence(scope))); }

std::string AsyncCopy::problem(Type element, uint32_t count) {
    if (!element.is_scalar() || element.is_void() || element.is_bool())
        return "copies numbers, not " + element.to_string();
    const uint64_t bytes = uint64_t(count) * element.bytes();
    if (count == 0 || (bytes != 4 && bytes != 8 && bytes != 16))
        return "copies 4, 8 or 16 bytes, not " + std::to_string(count) + " x " +
               element.to_string() + " (" + std::to_string(bytes) + " bytes)";
    return "";
}

uint32_t AsyncCopy::bytes() const { return count * dst.type().element_type().bytes(); }

Stmt AsyncCopy::make(Expr dst, Expr dst_index, Expr src, Expr src_index, uint32_t count,
                     Expr valid) {
    EMBER_ASSERT(dst && dst_index && src && src_index, "AsyncCopy with a null operand");
    EMBER_ASSERT(dst.type().is_pointer() && dst.type().space() == AddressSpace::Shared,
                 "AsyncCopy to " + dst.type().to_string() + ", not a shared pointer");
    EMBER_ASSERT(src.type().is_pointer() && src.type().space() == AddressSpace::Global,
                 "AsyncCopy from " + src.type().to_string() + ", not a global pointer");
    EMBER_ASSERT(dst.type().element_type() == src.type().element_type(),
                 "AsyncCopy between " + src.type().to_string() + " and " + dst.type().to_string());
    EMBER_ASSERT(dst_index.type().is_int() && src_index.type().is_int(),
                 "AsyncCopy index not an integer");
    EMBER_ASSERT(!valid || valid.type().is_bool(), "AsyncCopy condition not a bool");
    EMBER_ASSERT(problem(dst.type().element_type(), count).empty(),
                 "AsyncCopy " + problem(dst.type().element_type(), count));
    return Stmt(sealed(new AsyncCopy(std::move(dst), std::move(dst_index), std::move(src),
                                     std::move(src_index), count, std::move(valid))));
}

constexpr std::pair<MBarrierOp, const char *> mbarrier_names[] = {
    {MBarrierOp::Init, "init"},
    {MBarrierOp::Arrive, "arrive"},
    {MBarrierOp::ExpectTx, "expect_tx"},
    {MBarrierOp::Wait, "wait"},
    {MBarrierOp::ArriveCluster, "arrive_cluster"}};

std::string_view to_string(MBarrierOp op) { return name_in(mbarrier_names, op, "MBarrierOp"); }
std::optional<MBarrierOp> parse_mbarrier_op(std::string_view s) {
    return op_named(mbarrier_names, s);
}

std::string Wgmma::problem(MmaInput input, unsigned n, Type a, Type b,
                           const std::vector<VariableRef> &acc) {
    if (input == MmaInput::TF32) return "wgmma takes f16 or bf16 inputs here, not tf32";
    const std::string name = "wgmma.m64n" + std::to_string(n) + "k16." +
                             std::string(to_string(input));
    if (n == 0 || n > 256 || n % 8 != 0)
        return "there is no " + name + " (N is a multiple of 8 from 8 to 256)";
    const ScalarType e = input == MmaInput::F16 ? ScalarType::F16 : ScalarType::BF16;
    for (auto [what, t] : {std::pair<const char *, Type>{"a", a}, {"b", b}})
        if (!t.is_pointer() || t.space() != AddressSpace::Shared || t.element() != e)
            return name + " reads " + what + " through a ptr<shared " + Type(e).to_string() +
                   ">, not " + t.to_string();
    if (acc.size() != n / 8)
        return name + " takes " + std::to_string(n / 8) + " accumulators (f32x4 variables), not " +
               std::to_string(acc.size());
    const Type f32x4 = Type::vector(ScalarType::F32, 4);
    for (const VariableRef &v : acc) {
        if (!v || v->type != f32x4 || v->kind != VarKind::Mutable)
            return name + "'s accumulators are f32x4 variables (var), not " +
                   (v ? "%" + v->name + " of type " + v->type.to_string() : std::string("null"));
    }
    return "";
}

Stmt Wgmma::make(MmaInput input, unsigned n, Expr a, Expr a_index, Expr b, Expr b_index,
                 std::vector<VariableRef> acc, uint32_t b_mn_stride) {
    EMBER_ASSERT(a && a_index && b && b_index, "Wgmma with a null operand");
    EMBER_ASSERT(a_index.type().is_int() && b_index.type().is_int(), "Wgmma index not an integer");
    const std::string p = problem(input, n, a.type(), b.type(), acc);
    EMBER_ASSERT(p.empty(), p);
    EMBER_ASSERT(b_mn_stride % 1024 == 0, "wgmma's MN-major stride " + std::to_string(b_mn_stride));
    return Stmt(sealed(new Wgmma(input, n, std::move(a), std::move(a_index), std::move(b),
                                 std::move(b_index), std::move(acc), b_mn_stride)));
}

Stmt TensorSync::make(TensorSyncKind sync, int32_t pending, std::vector<VariableRef> acc) {
    EMBER_ASSERT(pending >= 0 && pending <= kMaxPending,
                 "wgmma.wait(" + std::to_string(pending) + ")");
    EMBER_ASSERT(acc.empty() || sync == TensorSyncKind::WgmmaFence ||
                     sync == TensorSyncKind::WgmmaWait,
                 "accumulators on a tensor sync that takes none");
    return Stmt(sealed(new TensorSync(sync, pending, std::move(acc))));
}

Stmt MBarrier::make(MBarrierOp op, Expr ptr, Expr index, Expr value) {
    EMBER_ASSERT(ptr && index, "MBarrier with a null operand");
    EMBER_ASSERT(ptr.type().is_pointer() && ptr.type().space() == AddressSpace::Shared &&
                     ptr.type().element() == ScalarType::U64,
                 "mbarrier through " + ptr.type().to_string() + ", not a ptr<shared u64>");
    EMBER_ASSERT(index.type().is_int(), "MBarrier index not an integer");
    EMBER_ASSERT((op == MBarrierOp::Arrive) == !value, "mbarrier operand count");
    EMBER_ASSERT(!value || value.type().is_int(), "MBarrier value not an integer");
    return Stmt(sealed(new MBarrier(op, std::move(ptr), std::move(index), std::move(value))));
}

Stmt TmaLoad::make(Expr dst, Expr dst_index, Expr map, Expr x, Expr y, Expr bar, Expr bar_index,
                   Expr multicast) {
    EMBER_ASSERT(dst && dst_index && map && x && y && bar && bar_index,
                 "TmaLoad with a null operand");
    EMBER_ASSERT(dst.type().is_pointer() && dst.type().space() == AddressSpace::Shared,
                 "tma_load to " + dst.type().to_string());
    EMBER_ASSERT(map.type().is_pointer() && map.type().space() == AddressSpace::Global &&
                     map.type().element() == ScalarType::U64,
                 "tma_load map " + map.type().to_string());
    EMBER_ASSERT(bar.type().is_pointer() && bar.type().space() == AddressSpace::Shared &&
                     bar.type().element() == ScalarType::U64,
                 "tma_load barrier " + bar.type().to_string());
    EMBER_ASSERT(dst_index.type().is_int() && x.type().is_int() && y.type().is_int() &&
                     bar_index.type().is_int(),
                 "TmaLoad index not an integer");
    EMBER_ASSERT(!multicast || multicast.type().is_int(), "TmaLoad multicast mask not an integer");
    return Stmt(sealed(new TmaLoad(std::move(dst), std::move(dst_index), std::move(map),
                                   std::move(x), std::move(y), std::move(bar), std::move(bar_index),
                                   std::move(multicast))));
}

Stmt AsyncGroup::commit() { return Stmt(sealed(new AsyncGroup(-1))); }
Stmt AsyncGroup::wait_for(int32_t pending) {
    EMBER_ASSERT(pending >= 0 && pending <= kMaxPending,
                 "async_wait(" + std::to_string(pending) + ")");
    return Stmt(sealed(new AsyncGroup(pending)));
}

std::string_view to_string(FpContract c) {
    switch (c) {
    case FpContract::Off: return "off";
    case FpContract::Fast: return "fast";
    }
    EMBER_UNREACHABLE("invalid FpContract");
}

std::optional<FpContract> parse_fp_contract(std::string_view s) {
    for (FpContract c : {FpContract::Off, FpContract::Fast})
        if (s == to_string(c)) return c;
    return std::nullopt;
}

Stmt Break::make() { return Stmt(sealed(new Break)); }
Stmt Return::make(Expr value) { return Stmt(sealed(new Return(std::move(value)))); }

Stmt Evaluate::make(Expr value) {
    EMBER_ASSERT(value, "Evaluate of a null expression");
    return Stmt(sealed(new Evaluate(std::move(value))));
}

Ref<Function> Function::make(std::string name, std::vector<VariableRef> params, Type ret, Stmt body) {
    for (const VariableRef &p : params) EMBER_ASSERT(p, "Function with a null parameter");
    return Ref<Function>(new Function(std::move(name), std::move(params), ret, std::move(body)));
}

Expr Invoke::make(FunctionRef callee, std::vector<Expr> args) {
    EMBER_ASSERT(callee, "Invoke of a null function");
    EMBER_ASSERT(args.size() == callee->params.size(),
                 "Invoke of @" + callee->name + " with " + std::to_string(args.size()) +
                     " arguments for " + std::to_string(callee->params.size()) + " parameters");
    for (size_t i = 0; i < args.size(); ++i)
        EMBER_ASSERT(args[i] && args[i].type() == callee->params[i]->type,
                     "Invoke of @" + callee->name + ": argument " + std::to_string(i) + " has the wrong type");
    return Expr(sealed(new Invoke(std::move(callee), std::move(args))));
}

Stmt Print::make(std::vector<PrintItem> items, std::string sep, std::string end) {
    for (const PrintItem &i : items)
        EMBER_ASSERT(i.is_text() || (i.value.type().is_scalar() && !i.value.type().is_void()),
                     "Print of a non-scalar value");
    return Stmt(sealed(new Print(std::move(items), std::move(sep), std::move(end))));
}
Stmt Continue::make() { return Stmt(sealed(new Continue)); }
Stmt Barrier::make(BarrierScope scope) { return Stmt(sealed(new Barrier(scope))); }

// ---------------------------------------------------------------------------------------------
// IRVisitor.

void IRVisitor::visit(const Expr &e) {
    if (!e) return;
    switch (e.kind()) {
#define EMBER_IR_EXPR(Name)                                                                        \
    case NodeKind::Name:                                                                           \
        return visit(static_cast<const Name *>(e.get()));
#include "ember/compiler/IRNodes.def"
    default: EMBER_UNREACHABLE("statement kind in an Expr");
    }
}

void IRVisitor::visit(const Stmt &s) {
    if (!s) return;
    switch (s.kind()) {
#define EMBER_IR_STMT(Name)                                                                        \
    case NodeKind::Name:                                                                           \
        return visit(static_cast<const Name *>(s.get()));
#include "ember/compiler/IRNodes.def"
    default: EMBER_UNREACHABLE("expression kind in a Stmt");
    }
}

void IRVisitor::visit(const IntImm *) {}
void IRVisitor::visit(const FloatImm *) {}
void IRVisitor::visit(const BoolImm *) {}
void IRVisitor::visit(const VarRef *) {}
void IRVisitor::visit(const SpecialReg *) {}
void IRVisitor::visit(const Unary *op) { visit(op->a); }
void IRVisitor::visit(const Binary *op) {
    visit(op->a);
    visit(op->b);
}
void IRVisitor::visit(const Compare *op) {
    visit(op->a);
    visit(op->b);
}
void IRVisitor::visit(const Cast *op) { visit(op->a); }
void IRVisitor::visit(const Select *op) {
    visit(op->cond);
    visit(op->a);
    visit(op->b);
}
void IRVisitor::visit(const Load *op) {
    visit(op->ptr);
    visit(op->index);
}
void IRVisitor::visit(const Atomic *op) {
    visit(op->ptr);
    visit(op->index);
    if (op->compare) visit(op->compare);
    visit(op->value);
}
void IRVisitor::visit(const Warp *op) {
    visit(op->value);
    if (op->lane) visit(op->lane);
}
void IRVisitor::visit(const Mma *op) {
    visit(op->a);
    visit(op->b);
    visit(op->c);
}
void IRVisitor::visit(const MatrixLoad *op) {
    visit(op->ptr);
    visit(op->index);
}
void IRVisitor::visit(const Call *op) {
    for (const Expr &a : op->args) visit(a);
}
void IRVisitor::visit(const Invoke *op) {
    for (const Expr &a : op->args) visit(a);
}
void IRVisitor::visit(const MakeVector *op) {
    for (const Expr &a : op->args) visit(a);
}
void IRVisitor::visit(const Extract *op) { visit(op->vector); }
void IRVisitor::visit(const Reduce *op) { visit(op->value); }

void IRVisitor::visit(const Block *op) {
    for (const Stmt &s : op->stmts) visit(s);
}
void IRVisitor::visit(const Let *op) { visit(op->value); }
void IRVisitor::visit(const Declare *op) { visit(op->init); }
void IRVisitor::visit(const Assign *op) { visit(op->value); }
void IRVisitor::visit(const Store *op) {
    visit(op->ptr);
    visit(op->index);
    visit(op->value);
}
void IRVisitor::visit(const If *op) {
    visit(op->cond);
    visit(op->then_body);
    visit(op->else_body);
}
void IRVisitor::visit(const For *op) {
    visit(op->begin);
    visit(op->end);
    visit(op->step);
    visit(op->body);
}
void IRVisitor::visit(const While *op) {
    visit(op->cond);
    visit(op->body);
}
void IRVisitor::visit(const Break *) {}
void IRVisitor::visit(const LocalArray *) {}
void IRVisitor::visit(const ConstantArray *) {}
void IRVisitor::visit(const Fence *) {}
void IRVisitor::visit(const AsyncCopy *op) {
    visit(op->dst);
    visit(op->dst_index);
    visit(op->src);
    visit(op->src_index);
    if (op->valid) visit(op->valid);
}
void IRVisitor::visit(const AsyncGroup *) {}
void IRVisitor::visit(const Wgmma *op) {
    visit(op->a);
    visit(op->a_index);
    visit(op->b);
    visit(op->b_index);
}
void IRVisitor::visit(const TensorSync *) {}
void IRVisitor::visit(const MBarrier *op) {
    visit(op->ptr);
    visit(op->index);
    if (op->value) visit(op->value);
}
void IRVisitor::visit(const TmaLoad *op) {
    visit(op->dst);
    visit(op->dst_index);
    visit(op->map);
    visit(op->x);
    visit(op->y);
    visit(op->bar);
    visit(op->bar_index);
    if (op->multicast) visit(op->multicast);
}
void IRVisitor::visit(const SharedArray *) {}
void IRVisitor::visit(const Return *op) {
    if (op->value) visit(op->value);
}
void IRVisitor::visit(const Evaluate *op) { visit(op->value); }
void IRVisitor::visit(const Print *op) {
    for (const PrintItem &i : op->items)
        if (!i.is_text()) visit(i.value);
}
void IRVisitor::visit(const Continue *) {}
void IRVisitor::visit(const Barrier *) {}

// ---------------------------------------------------------------------------------------------
// IRMutator.

Expr IRMutator::mutate(const Expr &e) {
    if (!e) return e;
    switch (e.kind()) {
#define EMBER_IR_EXPR(Name)                                                                        \
    case NodeKind::Name:                                                                           \
        return visit(static_cast<const Name *>(e.get()));
#include "ember/compiler/IRNodes.def"
    default: EMBER_UNREACHABLE("statement kind in an Expr");
    }
}

Stmt IRMutator::mutate(const Stmt &s) {
    if (!s) return s;
    switch (s.kind()) {
#define EMBER_IR_STMT(Name)                                                                        \
    case NodeKind::Name:                                                                           \
        return visit(static_cast<const Name *>(s.get()));
#include "ember/compiler/IRNodes.def"
    default: EMBER_UNREACHABLE("expression kind in a Stmt");
    }
}

Expr IRMutator::visit(const IntImm *op) { return op; }
Expr IRMutator::visit(const FloatImm *op) { return op; }
Expr IRMutator::visit(const BoolImm *op) { return op; }
Expr IRMutator::visit(const VarRef *op) { return op; }
Expr IRMutator::visit(const SpecialReg *op) { return op; }

Expr IRMutator::visit(const Unary *op) {
    Expr a = mutate(op->a);
    if (a.same_as(op->a)) return op;
    return Unary::make(op->op, std::move(a));
}

Expr IRMutator::visit(const Binary *op) {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    return Binary::make(op->op, std::move(a), std::move(b));
}

Expr IRMutator::visit(const Compare *op) {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    return Compare::make(op->op, std::move(a), std::move(b));
}

Expr IRMutator::visit(const Cast *op) {
    Expr a = mutate(op->a);
    if (a.same_as(op->a)) return op;
    return Cast::make(op->type, std::move(a));
}

Expr IRMutator::visit(const Atomic *op) {
    Expr p = mutate(op->ptr), i = mutate(op->index);
    Expr c = op->compare ? mutate(op->compare) : Expr();
    Expr v = mutate(op->value);
    if (p.same_as(op->ptr) && i.same_as(op->index) && c.same_as(op->compare) && v.same_as(op->value))
        return op;
    return Atomic::make(op->op, std::move(p), std::move(i), std::move(v), std::move(c), op->scope);
}

Expr IRMutator::visit(const Warp *op) {
    Expr v = mutate(op->value);
    Expr l = op->lane ? mutate(op->lane) : Expr();
    if (v.same_as(op->value) && l.same_as(op->lane)) return op;
    return Warp::make(op->op, std::move(v), std::move(l));
}

Expr IRMutator::visit(const Mma *op) {
    Expr a = mutate(op->a), b = mutate(op->b), c = mutate(op->c);
    if (a.same_as(op->a) && b.same_as(op->b) && c.same_as(op->c)) return op;
    return Mma::make(op->shape, op->input, std::move(a), std::move(b), std::move(c));
}

Expr IRMutator::visit(const MatrixLoad *op) {
    Expr p = mutate(op->ptr), i = mutate(op->index);
    if (p.same_as(op->ptr) && i.same_as(op->index)) return op;
    return MatrixLoad::make(std::move(p), std::move(i), op->count, op->trans);
}

Expr IRMutator::visit(const Call *op) {
    std::vector<Expr> args;
    bool same = true;
    for (const Expr &a : op->args) {
        args.push_back(mutate(a));
        same = same && args.back().same_as(a);
    }
    if (same) return op;
    return Call::make(op->op, std::move(args));
}

Expr IRMutator::visit(const Select *op) {
    Expr cond = mutate(op->cond);
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (cond.same_as(op->cond) && a.same_as(op->a) && b.same_as(op->b)) return op;
    return Select::make(std::move(cond), std::move(a), std::move(b));
}

Expr IRMutator::visit(const Load *op) {
    Expr ptr = mutate(op->ptr);
    Expr index = mutate(op->index);
    if (ptr.same_as(op->ptr) && index.same_as(op->index)) return op;
    return Load::make(std::move(ptr), std::move(index), op->lanes());
}

Expr IRMutator::visit(const MakeVector *op) {
    std::vector<Expr> args;
    bool same = true;
    for (const Expr &a : op->args) {
        args.push_back(mutate(a));
        same = same && args.back().same_as(a);
    }
    if (same) return op;
    return MakeVector::make(op->type, std::move(args));
}

Expr IRMutator::visit(const Extract *op) {
    Expr v = mutate(op->vector);
    if (v.same_as(op->vector)) return op;
    return Extract::make(std::move(v), op->lane);
}

Expr IRMutator::visit(const Reduce *op) {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return op;
    return Reduce::make(op->op, std::move(v));
}

Stmt IRMutator::visit(const Block *op) {
    std::vector<Stmt> stmts;
    stmts.reserve(op->stmts.size());
    bool changed = false;
    for (const Stmt &s : op->stmts) {
        stmts.push_back(mutate(s));
        changed |= !stmts.back().same_as(s);
    }
    if (!changed) return op;
    return Block::make(std::move(stmts));
}

Stmt IRMutator::visit(const Let *op) {
    Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    return Let::make(op->var, std::move(value));
}

Stmt IRMutator::visit(const Declare *op) {
    Expr init = mutate(op->init);
    if (init.same_as(op->init)) return op;
    return Declare::make(op->var, std::move(init));
}

Stmt IRMutator::visit(const Assign *op) {
    Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    return Assign::make(op->var, std::move(value));
}

Stmt IRMutator::visit(const Store *op) {
    Expr ptr = mutate(op->ptr);
    Expr index = mutate(op->index);
    Expr value = mutate(op->value);
    if (ptr.same_as(op->ptr) && index.same_as(op->index) && value.same_as(op->value)) return op;
    return Store::make(std::move(ptr), std::move(index), std::move(value));
}

Stmt IRMutator::visit(const If *op) {
    Expr cond = mutate(op->cond);
    Stmt then_body = mutate(op->then_body);
    Stmt else_body = mutate(op->else_body);
    if (cond.same_as(op->cond) && then_body.same_as(op->then_body) &&
        else_body.same_as(op->else_body))
        return op;
    return If::make(std::move(cond), std::move(then_body), std::move(else_body));
}

Stmt IRMutator::visit(const For *op) {
    Expr begin = mutate(op->begin);
    Expr end = mutate(op->end);
    Expr step = mutate(op->step);
    Stmt body = mutate(op->body);
    if (begin.same_as(op->begin) && end.same_as(op->end) && step.same_as(op->step) &&
        body.same_as(op->body))
        return op;
    return For::make(op->var, std::move(begin), std::move(end), std::move(step), std::move(body),
                     op->unroll);
}

Stmt IRMutator::visit(const While *op) {
    Expr cond = mutate(op->cond);
    Stmt body = mutate(op->body);
    if (cond.same_as(op->cond) && body.same_as(op->body)) return op;
    return While::make(std::move(cond), std::move(body));
}

Stmt IRMutator::visit(const Break *op) { return op; }
Stmt IRMutator::visit(const LocalArray *op) { return op; }
Stmt IRMutator::visit(const ConstantArray *op) { return op; }
Stmt IRMutator::visit(const Fence *op) { return op; }
Stmt IRMutator::visit(const AsyncGroup *op) { return op; }
Stmt IRMutator::visit(const Wgmma *op) {
    Expr a = mutate(op->a), ai = mutate(op->a_index), b = mutate(op->b), bi = mutate(op->b_index);
    if (a.same_as(op->a) && ai.same_as(op->a_index) && b.same_as(op->b) && bi.same_as(op->b_index))
        return op;
    return Wgmma::make(op->input, op->n, std::move(a), std::move(ai), std::move(b), std::move(bi),
                       op->acc, op->b_mn_stride);
}
Stmt IRMutator::visit(const TensorSync *op) { return op; }
Stmt IRMutator::visit(const MBarrier *op) {
    Expr p = mutate(op->ptr), i = mutate(op->index), v = op->value ? mutate(op->value) : Expr();
    if (p.same_as(op->ptr) && i.same_as(op->index) && v.same_as(op->value)) return op;
    return MBarrier::make(op->op, std::move(p), std::move(i), std::move(v));
}
Stmt IRMutator::visit(const TmaLoad *op) {
    Expr d = mutate(op->dst), di = mutate(op->dst_index), m = mutate(op->map), x = mutate(op->x),
         y = mutate(op->y), b = mutate(op->bar), bi = mutate(op->bar_index),
         mc = op->multicast ? mutate(op->multicast) : Expr();
    if (d.same_as(op->dst) && di.same_as(op->dst_index) && m.same_as(op->map) && x.same_as(op->x) &&
        y.same_as(op->y) && b.same_as(op->bar) && bi.same_as(op->bar_index) &&
        mc.same_as(op->multicast))
        return op;
    return TmaLoad::make(std::move(d), std::move(di), std::move(m), std::move(x), std::move(y),
                         std::move(b), std::move(bi), std::move(mc));
}
Stmt IRMutator::visit(const AsyncCopy *op) {
    Expr dst = mutate(op->dst), dst_index = mutate(op->dst_index);
    Expr src = mutate(op->src), src_index = mutate(op->src_index);
    Expr valid = op->valid ? mutate(op->valid) : Expr();
    if (dst.same_as(op->dst) && dst_index.same_as(op->dst_index) && src.same_as(op->src) &&
        src_index.same_as(op->src_index) && valid.same_as(op->valid))
        return op;
    return AsyncCopy::make(std::move(dst), std::move(dst_index), std::move(src),
                           std::move(src_index), op->count, std::move(valid));
}
Stmt IRMutator::visit(const SharedArray *op) { return op; }
Stmt IRMutator::visit(const Return *op) {
    if (!op->value) return op;
    Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    return Return::make(std::move(value));
}
Stmt IRMutator::visit(const Evaluate *op) {
    Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    return Evaluate::make(std::move(value));
}
Expr IRMutator::visit(const Invoke *op) {
    std::vector<Expr> args;
    bool same = true;
    for (const Expr &a : op->args) {
        args.push_back(mutate(a));
        same = same && args.back().same_as(a);
    }
    if (same) return op;
    return Invoke::make(op->callee, std::move(args));
}
Stmt IRMutator::visit(const Print *op) {
    std::vector<PrintItem> items;
    bool same = true;
    for (const PrintItem &i : op->items) {
        items.push_back(i.is_text() ? i : PrintItem{mutate(i.value), {}});
        same = same && (i.is_text() || items.back().value.same_as(i.value));
    }
    if (same) return op;
    return Print::make(std::move(items), op->sep, op->end);
}
Stmt IRMutator::visit(const Continue *op) { return op; }
Stmt IRMutator::visit(const Barrier *op) { return op; }

} // namespace ember::ir

namespace ember::ir {

namespace {
class SharedLayout final : public IRVisitor {
public:
    using IRVisitor::visit;
    void visit(const SharedArray *op) override {
        if (op->count == 0) {
            dynamic = true;
            return;
        }
        bytes = (bytes + 15) / 16 * 16 + op->count * op->var->type.element_type().bytes();
    }
    uint64_t bytes = 0;
    bool dynamic = false;
};
} // namespace

uint64_t static_shared_bytes(const Kernel &k) {
    SharedLayout l;
    l.visit(k.body);
    return l.bytes;
}

namespace {
/// The functions a body calls directly (not through another function), each once, in the order
/// of their first call, and whether it waits at a barrier itself.
class DirectCalls final : public IRVisitor {
public:
    using IRVisitor::visit;
    void visit(const Invoke *op) override {
        IRVisitor::visit(op);
        if (seen.insert(op->callee.get()).second) calls.push_back(op->callee);
    }
    void visit(const Barrier *) override { barrier = true; }
    std::unordered_set<const Function *> seen;
    std::vector<FunctionRef> calls;
    bool barrier = false;
};

std::vector<FunctionRef> direct_calls(const Stmt &body) {
    DirectCalls c;
    c.visit(body);
    return std::move(c.calls);
}
} // namespace

std::vector<FunctionRef> called_functions(const Stmt &body) {
    // Depth first, callees before callers, with an explicit stack: a chain of functions each
    // calling the next is as long as the program makes it.
    struct Frame {
        FunctionRef f;
        std::vector<FunctionRef> callees;
        size_t next = 0;
    };
    std::unordered_set<const Function *> seen;
    std::vector<FunctionRef> order;
    std::vector<Frame> stack;
    stack.push_back({FunctionRef(), direct_calls(body)});
    while (!stack.empty()) {
        Frame &top = stack.back();
        if (top.next == top.callees.size()) {
            if (top.f) order.push_back(std::move(top.f));
            stack.pop_back();
            continue;
        }
        FunctionRef callee = top.callees[top.next++];
        if (!seen.insert(callee.get()).second) continue;
        std::vector<FunctionRef> callees = direct_calls(callee->body);
        stack.push_back({std::move(callee), std::move(callees)});
    }
    return order;
}

bool uses_barrier(const Function &f) {
    DirectCalls self;
    self.visit(f.body);
    if (self.barrier) return true;
    for (const FunctionRef &g : called_functions(f.body)) {
        DirectCalls c;
        c.visit(g->body);
        if (c.barrier) return true;
    }
    return false;
}

bool uses_dynamic_shared(const Kernel &k) {
    SharedLayout l;
    l.visit(k.body);
    return l.dynamic;
}

namespace {
class ConstantCollector final : public IRVisitor {
public:
    using IRVisitor::visit;
    void visit(const ConstantArray *op) override {
        const Type elem = op->var->type.element_type();
        globals.push_back({op->name, elem.scalar(), op->count, op->count * elem.bytes()});
    }
    std::vector<ConstantGlobal> globals;
};
} // namespace

std::vector<ConstantGlobal> constant_globals(const Kernel &k) {
    ConstantCollector c;
    c.visit(k.body);
    return std::move(c.globals);
}

} // namespace ember::ir
