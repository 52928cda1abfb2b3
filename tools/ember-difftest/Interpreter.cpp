/// \file
/// The reference interpreter of the kernel IR ([Note] Reference interpreter in Interpreter.h).
/// This file must be compiled without floating-point contraction (CMake adds -ffp-contract=off).
#include "Interpreter.h"

#include "ember/compiler/IRPrinter.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace ember::difftest {

using ir::ScalarType;
using ir::Expr;
using ir::Stmt;
using ir::Type;

namespace {

// ---------------------------------------------------------------------------------------------
// Scalars as bits.

unsigned width(ScalarType t) {
    if (t == ScalarType::Void) throw Unsupported("a value of type " + std::string(ir::to_string(t)));
    return Type(t).bits(); // the storage width is a fact of the IR, not a semantics to re-derive
}

unsigned mem_bytes(ScalarType t) { return t == ScalarType::Bool ? 1 : width(t) / 8; }

bool is_signed(ScalarType t) { return t >= ScalarType::I8 && t <= ScalarType::I64; }
bool is_int(ScalarType t) { return t >= ScalarType::I8 && t <= ScalarType::U64; }
bool is_float(ScalarType t) { return t >= ScalarType::F16 && t <= ScalarType::F64; }

uint64_t mask(ScalarType t, uint64_t bits) {
    unsigned w = width(t);
    return w == 64 ? bits : bits & ((uint64_t{1} << w) - 1);
}

int64_t sext(ScalarType t, uint64_t bits) {
    unsigned w = width(t);
    if (w == 64) return static_cast<int64_t>(bits);
    uint64_t m = uint64_t{1} << (w - 1);
    bits &= (uint64_t{1} << w) - 1;
    return static_cast<int64_t>((bits ^ m) - m);
}

/// The integer's value (by its type's signedness) as a long double (exact for 64-bit integers on
/// x86's 80-bit long double).
long double int_value(ScalarType t, uint64_t bits) {
    return is_signed(t) ? static_cast<long double>(sext(t, bits)) : static_cast<long double>(mask(t, bits));
}

/// Rounds `x` (a double or long double) to nearest even in a binary format with `frac` fraction
/// bits and `ebits` exponent bits (f16: 10, 5; bf16: 7, 8), with subnormals and overflow to inf.
template <class F> uint64_t round_small(F x, int frac, int ebits) {
    const uint64_t sign = std::signbit(x) ? uint64_t{1} << (frac + ebits) : 0;
    const uint64_t exp_all = ((uint64_t{1} << ebits) - 1) << frac;
    if (std::isnan(x)) return sign | exp_all | (uint64_t{1} << (frac - 1));
    if (std::isinf(x)) return sign | exp_all;
    F a = std::fabs(x);
    if (a == 0) return sign;
    const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias, emax = bias;
    int e = 0;
    (void)std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
    int lead = e - 1;
    int qexp = (lead < emin ? emin : lead) - frac; // the weight of the last fraction bit
    F q = std::ldexp(a, -qexp);                    // exact: a power-of-two scaling
    F r = std::nearbyint(q);                       // round to nearest even (default mode)
    F v = std::ldexp(r, qexp);
    if (v >= std::ldexp(F(1), emax + 1)) return sign | exp_all;
    uint64_t ri = static_cast<uint64_t>(r);
    if (v < std::ldexp(F(1), emin)) return sign | ri; // subnormal (or the smallest normal: r = 2^frac)
    (void)std::frexp(v, &e);
    lead = e - 1;
    uint64_t fracbits = static_cast<uint64_t>(std::ldexp(v, frac - lead)) - (uint64_t{1} << frac);
    return sign | (static_cast<uint64_t>(lead + bias) << frac) | fracbits;
}

/// Rounds the long double `x` to the float type `t` (one rounding).
uint64_t encode_long(ScalarType t, long double x) {
    switch (t) {
    case ScalarType::F16: return round_small(x, 10, 5);
    case ScalarType::BF16: return round_small(x, 7, 8);
    case ScalarType::F32: return std::bit_cast<uint32_t>(static_cast<float>(x));
    case ScalarType::F64: return std::bit_cast<uint64_t>(static_cast<double>(x));
    default: throw Unsupported("encode_long of a non-float");
    }
}

/// fma(a, b, c) of f16/bf16 values (given exactly as doubles), rounded once: the product is
/// exact in long double, the sum is rounded to odd there (TwoSum), then to the type.
uint64_t fma_small(ScalarType t, double a, double b, double c) {
    long double p = static_cast<long double>(a) * static_cast<long double>(b);
    long double cc = c;
    long double s = p + cc;
    if (std::isfinite(s)) {
        long double bb = s - p;
        long double err = (p - (s - bb)) + (cc - bb);
        if (err != 0) {
            int e = 0;
            long double m = std::frexp(s, &e);
            // the last bit of the 64-bit significand
            long double scaled = std::ldexp(m, 64);
            bool odd = std::fmod(scaled, 2.0L) != 0;
            if (!odd) s = std::nextafter(s, err > 0 ? std::numeric_limits<long double>::infinity()
                                                     : -std::numeric_limits<long double>::infinity());
        }
    }
    return encode_long(t, s);
}

} // namespace

uint64_t encode_float(ScalarType t, double d) {
    switch (t) {
    case ScalarType::F16: return round_small(d, 10, 5);
    case ScalarType::BF16: return round_small(d, 7, 8);
    case ScalarType::F32: return std::bit_cast<uint32_t>(static_cast<float>(d));
    case ScalarType::F64: return std::bit_cast<uint64_t>(d);
    default: throw Unsupported("encode_float of a non-float");
    }
}

double decode_float(ScalarType t, uint64_t bits) {
    auto small = [](uint64_t b, int frac, int ebits) {
        const bool neg = (b >> (frac + ebits)) & 1;
        const uint64_t e = (b >> frac) & ((uint64_t{1} << ebits) - 1);
        const uint64_t f = b & ((uint64_t{1} << frac) - 1);
        const int bias = (1 << (ebits - 1)) - 1;
        double v;
        if (e == (uint64_t{1} << ebits) - 1)
            v = f ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
        else if (e == 0)
            v = std::ldexp(static_cast<double>(f), 1 - bias - frac);
        else
            v = std::ldexp(static_cast<double>(f | (uint64_t{1} << frac)), static_cast<int>(e) - bias - frac);
        return neg ? -v : v;
    };
    switch (t) {
    case ScalarType::F16: return small(bits, 10, 5);
    case ScalarType::BF16: return small(bits, 7, 8);
    case ScalarType::F32: return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case ScalarType::F64: return std::bit_cast<double>(bits);
    default: throw Unsupported("decode_float of a non-float");
    }
}

namespace {

bool is_fp8(ScalarType t) { return t == ScalarType::E4M3 || t == ScalarType::E5M2; }

/// The value of 8-bit float bits: e4m3 (bias 7, no infinities, NaN S.1111.111) or e5m2 (bias
/// 15, IEEE-like), from the fields.
double decode_fp8(ScalarType t, uint64_t bits) {
    const bool e4m3 = t == ScalarType::E4M3;
    const int frac = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const bool neg = bits & 0x80;
    const uint64_t e = (bits & 0x7f) >> frac, f = bits & ((uint64_t{1} << frac) - 1);
    double v;
    if (e4m3 && (bits & 0x7f) == 0x7f)
        v = std::numeric_limits<double>::quiet_NaN();
    else if (!e4m3 && e == 31)
        v = f ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (e == 0)
        v = std::ldexp(static_cast<double>(f), 1 - bias - frac);
    else
        v = std::ldexp(static_cast<double>(f | (uint64_t{1} << frac)),
                       static_cast<int>(e) - bias - frac);
    return neg ? -v : v;
}

/// `d` as 8-bit float bits by the definition ([Note] IR semantics: 8-bit floats), by search:
/// the finite value nearest to d (ties to the even code), the largest finite one at or past it
/// (infinity included), 0x7f for NaN.
uint64_t encode_fp8(ScalarType t, double d) {
    if (std::isnan(d)) return 0x7f;
    int best = -1, largest = -1;
    for (int c = 0; c < 256; ++c) {
        const double v = decode_fp8(t, uint64_t(c));
        if (!std::isfinite(v) || std::signbit(v) != std::signbit(d)) continue;
        if (largest < 0 || std::fabs(v) > std::fabs(decode_fp8(t, uint64_t(largest)))) largest = c;
        const double dist = std::fabs(v - d);
        const double best_dist = best < 0 ? 0 : std::fabs(decode_fp8(t, uint64_t(best)) - d);
        if (best < 0 || dist < best_dist || (dist == best_dist && c % 2 == 0)) best = c;
    }
    return std::fabs(d) >= std::fabs(decode_fp8(t, uint64_t(largest))) ? uint64_t(largest)
                                                                       : uint64_t(best);
}

uint64_t sign_bit(ScalarType t) { return uint64_t{1} << (width(t) - 1); }

/// float -> integer: truncate toward zero, saturate, NaN gives 0.
uint64_t float_to_int(ScalarType to, double d) {
    if (std::isnan(d)) return 0;
    long double tr = std::trunc(static_cast<long double>(d));
    unsigned w = width(to);
    long double lo, hi;
    if (is_signed(to)) {
        lo = -std::ldexp(1.0L, w - 1);
        hi = std::ldexp(1.0L, w - 1) - 1;
    } else {
        lo = 0;
        hi = std::ldexp(1.0L, w) - 1;
    }
    if (tr <= lo) tr = lo;
    if (tr >= hi) tr = hi;
    if (is_signed(to)) return mask(to, static_cast<uint64_t>(static_cast<int64_t>(tr)));
    return mask(to, static_cast<uint64_t>(tr));
}

uint64_t cast_scalar(ScalarType from, ScalarType to, uint64_t bits) {
    if (is_fp8(from) || is_fp8(to)) { // between 8-bit floats and f16, bf16, f32: one rounding
        const double d = is_fp8(from) ? decode_fp8(from, bits) : decode_float(from, bits);
        return is_fp8(to) ? encode_fp8(to, d) : encode_float(to, d);
    }
    if (to == ScalarType::Bool) {
        if (from == ScalarType::Bool) return bits & 1;
        if (is_float(from)) return decode_float(from, bits) != 0 ? 1 : 0;
        return mask(from, bits) != 0 ? 1 : 0;
    }
    if (from == ScalarType::Bool) return is_float(to) ? encode_float(to, bits & 1 ? 1.0 : 0.0) : (bits & 1);
    if (is_int(from) && is_int(to)) {
        uint64_t v = is_signed(from) ? static_cast<uint64_t>(sext(from, bits)) : mask(from, bits);
        return mask(to, v);
    }
    if (is_int(from)) return encode_long(to, int_value(from, bits));
    if (is_int(to)) return float_to_int(to, decode_float(from, bits));
    return encode_float(to, decode_float(from, bits)); // float -> float: exact decode, one rounding
}

bool float_less(double a, double b) { return a < b; }

/// IEEE minNum / maxNum: a NaN operand gives the other one.
double min_num(double a, double b) {
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    return float_less(b, a) ? b : a;
}
double max_num(double a, double b) {
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    return float_less(a, b) ? b : a;
}

uint64_t float_binary(ir::BinaryOp op, ScalarType t, uint64_t x, uint64_t y) {
    double a = decode_float(t, x), b = decode_float(t, y);
    double r;
    // Every operation of f16/bf16/f32 values is exact in double or rounded there and then to the
    // type, which gives the correctly rounded result (53 >= 2 * 24 + 2).
    switch (op) {
    case ir::BinaryOp::Add: r = a + b; break;
    case ir::BinaryOp::Sub: r = a - b; break;
    case ir::BinaryOp::Mul: r = a * b; break;
    case ir::BinaryOp::Div: r = a / b; break;
    case ir::BinaryOp::Mod: r = std::fmod(a, b); break;
    case ir::BinaryOp::Min: r = min_num(a, b); break;
    case ir::BinaryOp::Max: r = max_num(a, b); break;
    default: throw Unsupported("float operator " + std::string(ir::to_string(op)));
    }
    return encode_float(t, r);
}

uint64_t int_binary(ir::BinaryOp op, ScalarType t, uint64_t x, uint64_t y) {
    const unsigned w = width(t);
    const bool s = is_signed(t);
    x = mask(t, x);
    y = mask(t, y);
    switch (op) {
    case ir::BinaryOp::Add: return mask(t, x + y);
    case ir::BinaryOp::Sub: return mask(t, x - y);
    case ir::BinaryOp::Mul: return mask(t, x * y);
    case ir::BinaryOp::Div:
    case ir::BinaryOp::Mod: {
        if (y == 0) return 0;
        if (!s) return op == ir::BinaryOp::Div ? x / y : x % y;
        int64_t a = sext(t, x), b = sext(t, y);
        if (b == -1) return op == ir::BinaryOp::Div ? mask(t, 0 - x) : 0; // MIN / -1 wraps to MIN
        return mask(t, static_cast<uint64_t>(op == ir::BinaryOp::Div ? a / b : a % b));
    }
    case ir::BinaryOp::Min:
        if (s) return sext(t, x) < sext(t, y) ? x : y;
        return x < y ? x : y;
    case ir::BinaryOp::Max:
        if (s) return sext(t, x) > sext(t, y) ? x : y;
        return x > y ? x : y;
    case ir::BinaryOp::And: return x & y;
    case ir::BinaryOp::Or: return x | y;
    case ir::BinaryOp::Xor: return x ^ y;
    case ir::BinaryOp::Shl: return mask(t, x << (y & (w - 1)));
    case ir::BinaryOp::Shr:
        if (s) return mask(t, static_cast<uint64_t>(sext(t, x) >> (y & (w - 1))));
        return x >> (y & (w - 1));
    }
    throw Unsupported("integer operator");
}

bool compare(ir::CompareOp op, ScalarType t, uint64_t x, uint64_t y) {
    if (is_float(t)) {
        double a = decode_float(t, x), b = decode_float(t, y);
        switch (op) {
        case ir::CompareOp::EQ: return a == b;
        case ir::CompareOp::NE: return a != b;
        case ir::CompareOp::LT: return a < b;
        case ir::CompareOp::LE: return a <= b;
        case ir::CompareOp::GT: return a > b;
        case ir::CompareOp::GE: return a >= b;
        }
    }
    auto cmp = [op](auto a, auto b) {
        switch (op) {
        case ir::CompareOp::EQ: return a == b;
        case ir::CompareOp::NE: return a != b;
        case ir::CompareOp::LT: return a < b;
        case ir::CompareOp::LE: return a <= b;
        case ir::CompareOp::GT: return a > b;
        case ir::CompareOp::GE: return a >= b;
        }
        return false;
    };
    if (t == ScalarType::Bool) return cmp(x & 1, y & 1);
    if (is_signed(t)) return cmp(sext(t, x), sext(t, y));
    return cmp(mask(t, x), mask(t, y));
}

uint64_t intrinsic(ir::Intrinsic op, ScalarType t, const std::vector<uint64_t> &a) {
    using ir::Intrinsic;
    if (ir::is_math_library(op))
        throw Unsupported("the math library function " + std::string(ir::to_string(op)));
    if (is_int(t)) {
        uint64_t x = mask(t, a[0]);
        unsigned w = width(t);
        switch (op) {
        case Intrinsic::Abs: return is_signed(t) && sext(t, x) < 0 ? mask(t, 0 - x) : x;
        case Intrinsic::Popcount: return static_cast<uint64_t>(std::popcount(x));
        case Intrinsic::Clz: return x == 0 ? w : static_cast<uint64_t>(std::countl_zero(x) - (64 - w));
        case Intrinsic::Ctz: return x == 0 ? w : static_cast<uint64_t>(std::countr_zero(x));
        default: throw Unsupported("intrinsic on integers");
        }
    }
    const uint64_t sb = sign_bit(t);
    double x = decode_float(t, a[0]);
    switch (op) {
    case Intrinsic::Abs: return a[0] & ~sb;
    case Intrinsic::Sqrt: return encode_float(t, std::sqrt(x)); // one rounding in double, then exact or innocuous
    case Intrinsic::Floor: return encode_float(t, std::floor(x));
    case Intrinsic::Ceil: return encode_float(t, std::ceil(x));
    case Intrinsic::Trunc: return encode_float(t, std::trunc(x));
    case Intrinsic::Round: return encode_float(t, std::round(x));
    case Intrinsic::Fma: {
        double y = decode_float(t, a[1]), z = decode_float(t, a[2]);
        if (t == ScalarType::F64) return encode_float(t, std::fma(x, y, z));
        if (t == ScalarType::F32)
            return std::bit_cast<uint32_t>(std::fma(static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)));
        return fma_small(t, x, y, z);
    }
    case Intrinsic::Copysign: return (a[0] & ~sb) | (a[1] & sb);
    case Intrinsic::IsNan: return std::isnan(x);
    case Intrinsic::IsInf: return std::isinf(x);
    case Intrinsic::IsFinite: return std::isfinite(x);
    case Intrinsic::Fmin: return encode_float(t, min_num(x, decode_float(t, a[1])));
    case Intrinsic::Fmax: return encode_float(t, max_num(x, decode_float(t, a[1])));
    default: throw Unsupported("intrinsic " + std::string(ir::to_string(op)));
    }
}

// ---------------------------------------------------------------------------------------------
// Vectors: rewritten lane by lane into scalars before execution ([Note] IR semantics: Vectors).

/// Replaces every vector variable by one scalar variable per lane and every vector expression by
/// its lanes: a vector load reads elements i ... i+N-1, a vector store writes them (after every
/// lane is evaluated), reduce folds the upper half of the lanes into the lower half until one is
/// left. The result is only for this interpreter (its blocks do not scope the lanes' lets).
class Scalarizer : public ir::IRMutator {
public:
    using ir::IRMutator::mutate;

    /// Lane `k` of the vector expression `e`, as a scalar expression.
    Expr lane(const Expr &e, unsigned k) {
        switch (e.kind()) {
        case ir::NodeKind::VarRef: {
            auto it = lanes_.find(e.as<ir::VarRef>()->var.get());
            if (it == lanes_.end()) throw Unsupported("a vector parameter");
            return ir::VarRef::make(it->second.at(k));
        }
        case ir::NodeKind::Load: {
            auto *l = e.as<ir::Load>();
            Expr idx = mutate(l->index);
            return ir::Load::make(mutate(l->ptr), ir::Binary::make(ir::BinaryOp::Add, idx, ir::IntImm::make(idx.type(), k)));
        }
        case ir::NodeKind::MakeVector: {
            auto *m = e.as<ir::MakeVector>();
            return mutate(m->is_broadcast() ? m->args[0] : m->args.at(k));
        }
        case ir::NodeKind::Unary: {
            auto *u = e.as<ir::Unary>();
            return ir::Unary::make(u->op, lane(u->a, k));
        }
        case ir::NodeKind::Binary: {
            auto *b = e.as<ir::Binary>();
            return ir::Binary::make(b->op, lane(b->a, k), lane(b->b, k));
        }
        case ir::NodeKind::Compare: {
            auto *c = e.as<ir::Compare>();
            return ir::Compare::make(c->op, lane(c->a, k), lane(c->b, k));
        }
        case ir::NodeKind::Cast: {
            auto *c = e.as<ir::Cast>();
            return ir::Cast::make(e.type().lane_type(), lane(c->a, k));
        }
        case ir::NodeKind::Select: {
            auto *x = e.as<ir::Select>();
            Expr c = x->cond.type().is_vector() ? lane(x->cond, k) : mutate(x->cond);
            return ir::Select::make(c, lane(x->a, k), lane(x->b, k));
        }
        case ir::NodeKind::Call: {
            auto *c = e.as<ir::Call>();
            std::vector<Expr> args;
            for (const Expr &a : c->args) args.push_back(lane(a, k));
            return ir::Call::make(c->op, std::move(args));
        }
        default: throw Unsupported("a vector " + std::string(ir::to_string(e.kind())));
        }
    }

protected:
    Expr visit(const ir::Extract *op) override { return lane(op->vector, op->lane); }

    Expr visit(const ir::Reduce *op) override {
        std::vector<Expr> l;
        for (unsigned k = 0; k < op->value.type().lanes(); ++k) l.push_back(lane(op->value, k));
        ir::BinaryOp b = ir::BinaryOp::Add;
        switch (op->op) {
        case ir::ReduceOp::Add: b = ir::BinaryOp::Add; break;
        case ir::ReduceOp::Mul: b = ir::BinaryOp::Mul; break;
        case ir::ReduceOp::Min: b = ir::BinaryOp::Min; break;
        case ir::ReduceOp::Max: b = ir::BinaryOp::Max; break;
        case ir::ReduceOp::And: b = ir::BinaryOp::And; break;
        case ir::ReduceOp::Or: b = ir::BinaryOp::Or; break;
        case ir::ReduceOp::Xor: b = ir::BinaryOp::Xor; break;
        }
        while (l.size() > 1) {
            size_t half = l.size() / 2;
            for (size_t i = 0; i < half; ++i) l[i] = ir::Binary::make(b, l[i], l[i + half]);
            l.resize(half);
        }
        return l[0];
    }

    /// Binds every lane of `value` to a fresh let first (so that no lane sees another's update).
    std::vector<Expr> bind(std::vector<Stmt> &out, const Expr &value) {
        std::vector<Expr> refs;
        for (unsigned k = 0; k < value.type().lanes(); ++k) {
            auto v = ir::Variable::make("", value.type().lane_type(), ir::VarKind::Let);
            out.push_back(ir::Let::make(v, lane(value, k)));
            refs.push_back(ir::VarRef::make(v));
        }
        return refs;
    }

    Stmt define(const ir::VariableRef &var, const Expr &value, bool is_let) {
        if (!var->type.is_vector()) return nullptr;
        std::vector<Stmt> out;
        std::vector<Expr> refs = bind(out, value);
        auto &lanes = lanes_[var.get()];
        lanes.clear();
        for (unsigned k = 0; k < refs.size(); ++k) {
            auto v = ir::Variable::make(var->name + "." + std::to_string(k), var->type.lane_type(),
                                        is_let ? ir::VarKind::Let : ir::VarKind::Mutable);
            out.push_back(is_let ? ir::Let::make(v, refs[k]) : ir::Declare::make(v, refs[k]));
            lanes.push_back(v);
        }
        return ir::Block::make(std::move(out));
    }

    Stmt visit(const ir::Let *op) override {
        if (Stmt s = define(op->var, op->value, true)) return s;
        return ir::IRMutator::visit(op);
    }
    Stmt visit(const ir::Declare *op) override {
        if (Stmt s = define(op->var, op->init, false)) return s;
        return ir::IRMutator::visit(op);
    }
    Stmt visit(const ir::Assign *op) override {
        if (!op->var->type.is_vector()) return ir::IRMutator::visit(op);
        std::vector<Stmt> out;
        std::vector<Expr> refs = bind(out, op->value);
        const auto &lanes = lanes_.at(op->var.get());
        for (unsigned k = 0; k < refs.size(); ++k) out.push_back(ir::Assign::make(lanes[k], refs[k]));
        return ir::Block::make(std::move(out));
    }
    Stmt visit(const ir::Store *op) override {
        if (!op->value.type().is_vector()) return ir::IRMutator::visit(op);
        std::vector<Stmt> out;
        Expr ptr = mutate(op->ptr), idx = mutate(op->index);
        std::vector<Expr> refs = bind(out, op->value);
        for (unsigned k = 0; k < refs.size(); ++k)
            out.push_back(ir::Store::make(ptr, ir::Binary::make(ir::BinaryOp::Add, idx, ir::IntImm::make(idx.type(), k)), refs[k]));
        return ir::Block::make(std::move(out));
    }

private:
    std::unordered_map<const ir::Variable *, std::vector<ir::VariableRef>> lanes_;
};

// ---------------------------------------------------------------------------------------------
// Execution.

enum class Flow { Normal, Break, Continue, Return };

/// A pointer value: which region (parameters first, then shared and local arrays).
struct Pointer {
    uint64_t region;
};

struct Thread {
    uint64_t tid = 0, bid = 0;
    std::unordered_map<const ir::Variable *, uint64_t> vars;
    /// Results of warp operations computed collectively for the statement being run.
    std::unordered_map<const ir::ExprNode *, uint64_t> warp_results;
    uint64_t steps = 0;
    bool returned = false;
    uint64_t return_value = 0;
};

/// Whether a statement holds a barrier or a warp operation (collective).
class SyncFinder : public ir::IRVisitor {
public:
    bool found = false;
    using ir::IRVisitor::visit;
    void visit(const ir::Barrier *) override { found = true; }
    void visit(const ir::Warp *) override { found = true; }
    void visit(const ir::Invoke *op) override {
        visit(op->callee->body); // a callee's barriers and warp operations are the caller's
        ir::IRVisitor::visit(op);
    }
};

bool has_sync(const ir::Stmt &s) {
    SyncFinder f;
    f.visit(s);
    return f.found;
}

/// The warp operations of an expression tree, innermost first.
class WarpCollector : public ir::IRVisitor {
public:
    std::vector<const ir::Warp *> warps;
    using ir::IRVisitor::visit;
    void visit(const ir::Warp *op) override {
        ir::IRVisitor::visit(op);
        warps.push_back(op);
    }
};

class Machine {
public:
    Machine(const ir::Kernel &k, std::vector<Region> &regions, const Launch &launch)
        : kernel_(k), regions_(regions), launch_(launch) {}

    void run() {
        if (regions_.size() != kernel_.params.size())
            throw Undefined("run_kernel: " + std::to_string(regions_.size()) + " regions for " +
                            std::to_string(kernel_.params.size()) + " parameters");
        for (const ir::VariableRef &p : kernel_.params) {
            if (!p->type.is_pointer()) throw Unsupported("a scalar kernel parameter");
            elem_.push_back(p->type.element());
        }
        body_ = scalarizer_.mutate(kernel_.body);
        for (uint64_t b = 0; b < launch_.grid; ++b) run_block(b);
    }

private:
    void run_block(uint64_t b) {
        threads_.assign(launch_.block, Thread{});
        shared_.clear();
        for (uint64_t t = 0; t < launch_.block; ++t) {
            threads_[t].tid = t;
            threads_[t].bid = b;
            for (size_t i = 0; i < kernel_.params.size(); ++i) threads_[t].vars[kernel_.params[i].get()] = i;
        }
        // Regions past the parameters are this block's shared arrays and the threads' local ones.
        regions_.resize(kernel_.params.size());
        elem_.resize(kernel_.params.size());
        collective(body_);
        regions_.resize(kernel_.params.size());
        elem_.resize(kernel_.params.size());
    }

    // --- collective execution: every thread of the block, statement by statement.

    void collective(const ir::Stmt &s) {
        if (!has_sync(s)) {
            for (Thread &t : threads_)
                if (!t.returned) {
                    Flow f = exec(t, s);
                    if (f == Flow::Break || f == Flow::Continue)
                        throw Unsupported("break/continue across a barrier or warp operation");
                }
            return;
        }
        if (auto *b = s.as<ir::Block>()) {
            for (const ir::Stmt &x : b->stmts) collective(x);
            return;
        }
        if (s.as<ir::Barrier>()) {
            for (Thread &t : threads_)
                if (t.returned) throw Undefined("a barrier after a thread of the block returned");
            return;
        }
        if (auto *f = s.as<ir::For>()) {
            uint64_t b = 0, e = 0, st = 0;
            bool first = true;
            for (Thread &t : threads_) {
                if (t.returned) throw Unsupported("a collective loop after a thread returned");
                uint64_t tb = eval(t, f->begin), te = eval(t, f->end), ts = eval(t, f->step);
                if (first) b = tb, e = te, st = ts, first = false;
                else if (tb != b || te != e || ts != st)
                    throw Unsupported("a loop with a barrier or warp operation whose bounds differ between threads");
            }
            ScalarType ty = f->var->type.scalar();
            const uint64_t trip = trip_count(ty, b, e, st);
            for (uint64_t k = 0, i = b; k < trip; ++k, i = mask(ty, i + st)) {
                for (Thread &t : threads_) {
                    t.vars[f->var.get()] = i;
                    step(t);
                }
                collective(f->body);
            }
            return;
        }
        if (auto *i = s.as<ir::If>()) {
            bool first = true, c = false;
            for (Thread &t : threads_) {
                if (t.returned) throw Unsupported("a collective if after a thread returned");
                bool tc = eval(t, i->cond) & 1;
                if (first) c = tc, first = false;
                else if (tc != c) throw Unsupported("a barrier or warp operation under a divergent if");
            }
            if (c) collective(i->then_body);
            else if (i->else_body) collective(i->else_body);
            return;
        }
        // A simple statement holding warp operations.
        switch (s.kind()) {
        case ir::NodeKind::Let:
        case ir::NodeKind::Declare:
        case ir::NodeKind::Assign:
        case ir::NodeKind::Store:
        case ir::NodeKind::Evaluate: break;
        default: throw Unsupported("a barrier or warp operation inside " + std::string(ir::to_string(s.kind())));
        }
        WarpCollector wc;
        wc.visit(s);
        if (wc.warps.empty()) throw Unsupported("a device function call holding a barrier or warp operation");
        if (launch_.block % 32 != 0) throw Undefined("a warp operation in a block of " + std::to_string(launch_.block) + " threads");
        for (Thread &t : threads_)
            if (t.returned) throw Undefined("a warp operation after a thread returned");
        for (const ir::Warp *w : wc.warps) {
            std::vector<uint64_t> val(threads_.size()), lane(threads_.size());
            for (Thread &t : threads_) {
                val[t.tid] = eval(t, w->value);
                if (w->lane) lane[t.tid] = eval(t, w->lane);
            }
            for (uint64_t base = 0; base < threads_.size(); base += 32)
                for (uint64_t l = 0; l < 32; ++l) {
                    Thread &t = threads_[base + l];
                    uint64_t r = 0;
                    int64_t d = sext(ScalarType::I32, lane[base + l]);
                    switch (w->op) {
                    case ir::WarpOp::ShuffleIdx: r = val[base + static_cast<uint64_t>(((d % 32) + 32) % 32)]; break;
                    case ir::WarpOp::ShuffleUp: {
                        int64_t src = static_cast<int64_t>(l) - d;
                        r = src >= 0 && src < 32 ? val[base + static_cast<uint64_t>(src)] : val[base + l];
                        break;
                    }
                    case ir::WarpOp::ShuffleDown: {
                        int64_t src = static_cast<int64_t>(l) + d;
                        r = src >= 0 && src < 32 ? val[base + static_cast<uint64_t>(src)] : val[base + l];
                        break;
                    }
                    case ir::WarpOp::ShuffleXor: {
                        int64_t src = static_cast<int64_t>(l) ^ d;
                        if (src < 0 || src >= 32) throw Undefined("shuffle_xor reads a lane outside the warp");
                        r = val[base + static_cast<uint64_t>(src)];
                        break;
                    }
                    case ir::WarpOp::Ballot:
                    case ir::WarpOp::WaveBallot: // the reference's wave is the warp
                        for (uint64_t k = 0; k < 32; ++k) r |= (val[base + k] & 1) << k;
                        break;
                    case ir::WarpOp::Any:
                        for (uint64_t k = 0; k < 32; ++k) r |= val[base + k] & 1;
                        break;
                    case ir::WarpOp::All:
                        r = 1;
                        for (uint64_t k = 0; k < 32; ++k) r &= val[base + k] & 1;
                        break;
                    }
                    t.warp_results[w] = r;
                }
        }
        for (Thread &t : threads_) {
            exec(t, s);
            t.warp_results.clear();
        }
    }

    // --- one thread.

    void step(Thread &t) {
        if (++t.steps > launch_.max_steps_per_thread)
            throw Undefined("thread " + std::to_string(t.tid) + " of block " + std::to_string(t.bid) + " ran more than " +
                            std::to_string(launch_.max_steps_per_thread) + " statements");
    }

    /// How many times `for i = b to e step s` runs its body: the values b, b + s, ... strictly
    /// before e in the step's direction, never past the type's range ([Note] IR semantics: Loops).
    static uint64_t trip_count(ScalarType ty, uint64_t b, uint64_t e, uint64_t s) {
        bool pos = is_signed(ty) ? sext(ty, s) > 0 : mask(ty, s) != 0;
        bool neg = is_signed(ty) && sext(ty, s) < 0;
        if (pos && compare(ir::CompareOp::LT, ty, b, e))
            return (mask(ty, e - b) - 1) / mask(ty, s) + 1;
        if (neg && compare(ir::CompareOp::GT, ty, b, e))
            return (mask(ty, b - e) - 1) / mask(ty, 0 - s) + 1;
        return 0;
    }

    Flow exec(Thread &t, const ir::Stmt &s) {
        step(t);
        switch (s.kind()) {
        case ir::NodeKind::Block:
            for (const ir::Stmt &x : s.as<ir::Block>()->stmts) {
                Flow f = exec(t, x);
                if (f != Flow::Normal) return f;
            }
            return Flow::Normal;
        case ir::NodeKind::Let: {
            auto *l = s.as<ir::Let>();
            t.vars[l->var.get()] = eval(t, l->value);
            return Flow::Normal;
        }
        case ir::NodeKind::Declare: {
            auto *d = s.as<ir::Declare>();
            t.vars[d->var.get()] = eval(t, d->init);
            return Flow::Normal;
        }
        case ir::NodeKind::Assign: {
            auto *a = s.as<ir::Assign>();
            t.vars[a->var.get()] = eval(t, a->value);
            return Flow::Normal;
        }
        case ir::NodeKind::SharedArray: {
            auto *a = s.as<ir::SharedArray>();
            if (a->count == 0) throw Unsupported("dynamic shared memory");
            // One array per block: the first thread to reach the statement makes it.
            auto it = shared_.find(a);
            if (it == shared_.end() || it->second.first != t.bid) {
                uint64_t id = new_region(a->var->type.element(), a->count);
                it = shared_.insert_or_assign(a, std::make_pair(t.bid, id)).first;
            }
            t.vars[a->var.get()] = it->second.second;
            return Flow::Normal;
        }
        case ir::NodeKind::LocalArray: {
            auto *a = s.as<ir::LocalArray>();
            t.vars[a->var.get()] = new_region(a->var->type.element(), a->count);
            return Flow::Normal;
        }
        case ir::NodeKind::Store: {
            auto *st = s.as<ir::Store>();
            uint64_t p = eval(t, st->ptr);
            uint64_t i = eval(t, st->index);
            if (st->value.type().is_vector()) throw Unsupported("vectors");
            uint64_t v = eval(t, st->value);
            store(p, index_value(st->index.type().scalar(), i), v);
            return Flow::Normal;
        }
        case ir::NodeKind::If: {
            auto *i = s.as<ir::If>();
            if (eval(t, i->cond) & 1) return exec(t, i->then_body);
            if (i->else_body) return exec(t, i->else_body);
            return Flow::Normal;
        }
        case ir::NodeKind::For: {
            auto *f = s.as<ir::For>();
            ScalarType ty = f->var->type.scalar();
            uint64_t b = eval(t, f->begin), e = eval(t, f->end), st = eval(t, f->step);
            const uint64_t trip = trip_count(ty, b, e, st);
            for (uint64_t k = 0, i = b; k < trip; ++k, i = mask(ty, i + st)) {
                step(t);
                t.vars[f->var.get()] = i;
                Flow fl = exec(t, f->body);
                if (fl == Flow::Break) break;
                if (fl == Flow::Return) return fl;
            }
            return Flow::Normal;
        }
        case ir::NodeKind::While: {
            auto *w = s.as<ir::While>();
            while (eval(t, w->cond) & 1) {
                step(t);
                Flow fl = exec(t, w->body);
                if (fl == Flow::Break) break;
                if (fl == Flow::Return) return fl;
            }
            return Flow::Normal;
        }
        case ir::NodeKind::Break: return Flow::Break;
        case ir::NodeKind::Continue: return Flow::Continue;
        case ir::NodeKind::Barrier: throw Unsupported("a barrier under divergent control flow");
        case ir::NodeKind::Fence: return Flow::Normal; // one thread at a time: always ordered
        case ir::NodeKind::AsyncCopy:
        case ir::NodeKind::AsyncGroup: throw Unsupported("asynchronous copies");
        case ir::NodeKind::Return: {
            auto *r = s.as<ir::Return>();
            if (r->value) t.return_value = eval(t, r->value);
            if (depth_ == 0) t.returned = true;
            return Flow::Return;
        }
        case ir::NodeKind::Evaluate: eval(t, s.as<ir::Evaluate>()->value); return Flow::Normal;
        default: throw Unsupported("statement " + std::string(ir::to_string(s.kind())));
        }
    }

    static int64_t index_value(ScalarType t, uint64_t bits) {
        return is_signed(t) ? sext(t, bits) : static_cast<int64_t>(mask(t, bits));
    }

    uint64_t new_region(ScalarType elem, uint64_t count) {
        if (count > (uint64_t{1} << 24)) throw Unsupported("an array of " + std::to_string(count) + " elements");
        Region r;
        r.bytes.assign(count * mem_bytes(elem), 0xA5);
        regions_.push_back(std::move(r));
        elem_.push_back(elem);
        return regions_.size() - 1;
    }

    uint8_t *address(uint64_t region, int64_t index) {
        if (region >= regions_.size()) throw Undefined("a pointer to no region");
        ScalarType e = elem_[region];
        uint64_t n = regions_[region].bytes.size() / mem_bytes(e);
        if (index < 0 || static_cast<uint64_t>(index) >= n)
            throw Undefined("an access of element " + std::to_string(index) + " of an array of " + std::to_string(n));
        return regions_[region].bytes.data() + static_cast<uint64_t>(index) * mem_bytes(e);
    }

    uint64_t load(uint64_t region, int64_t index) {
        uint8_t *p = address(region, index);
        ScalarType e = elem_[region];
        uint64_t v = 0;
        std::memcpy(&v, p, mem_bytes(e)); // little endian, as every target
        return e == ScalarType::Bool ? (v & 0xff) != 0 : v;
    }

    void store(uint64_t region, int64_t index, uint64_t v) {
        uint8_t *p = address(region, index);
        ScalarType e = elem_[region];
        if (e == ScalarType::Bool) v &= 1;
        std::memcpy(p, &v, mem_bytes(e));
    }

    uint64_t eval(Thread &t, const ir::Expr &e) {
        const ir::ExprNode *n = e.get();
        Type ty = e.type();
        if (ty.is_vector()) throw Unsupported("vectors");
        switch (e.kind()) {
        case ir::NodeKind::IntImm: return mask(ty.scalar(), e.as<ir::IntImm>()->bits());
        case ir::NodeKind::FloatImm: return encode_float(ty.scalar(), e.as<ir::FloatImm>()->value);
        case ir::NodeKind::BoolImm: return e.as<ir::BoolImm>()->value;
        case ir::NodeKind::VarRef: {
            auto it = t.vars.find(e.as<ir::VarRef>()->var.get());
            if (it == t.vars.end()) throw Undefined("a read of an undefined variable");
            return it->second;
        }
        case ir::NodeKind::SpecialReg: {
            auto *r = e.as<ir::SpecialReg>();
            if (r->dim != 0)
                return r->reg == ir::SpecialRegKind::BlockDim ||
                               r->reg == ir::SpecialRegKind::GridDim ||
                               r->reg == ir::SpecialRegKind::ClusterDim
                           ? 1
                           : 0;
            switch (r->reg) {
            case ir::SpecialRegKind::ThreadIdx: return t.tid;
            case ir::SpecialRegKind::BlockIdx: return t.bid;
            case ir::SpecialRegKind::BlockDim: return launch_.block;
            case ir::SpecialRegKind::GridDim: return launch_.grid;
            case ir::SpecialRegKind::ClusterDim: return 1; // launches without clusters
            }
            return 0;
        }
        case ir::NodeKind::Unary: {
            auto *u = e.as<ir::Unary>();
            uint64_t a = eval(t, u->a);
            ScalarType s = ty.scalar();
            switch (u->op) {
            case ir::UnaryOp::Not: return (a & 1) ^ 1;
            case ir::UnaryOp::BitNot: return mask(s, ~a);
            case ir::UnaryOp::Neg: return is_float(s) ? a ^ sign_bit(s) : mask(s, 0 - a);
            }
            return 0;
        }
        case ir::NodeKind::Binary: {
            auto *b = e.as<ir::Binary>();
            uint64_t x = eval(t, b->a), y = eval(t, b->b);
            ScalarType s = ty.scalar();
            if (s == ScalarType::Bool) {
                switch (b->op) {
                case ir::BinaryOp::And: return x & y & 1;
                case ir::BinaryOp::Or: return (x | y) & 1;
                case ir::BinaryOp::Xor: return (x ^ y) & 1;
                default: throw Unsupported("bool operator");
                }
            }
            return is_float(s) ? float_binary(b->op, s, x, y) : int_binary(b->op, s, x, y);
        }
        case ir::NodeKind::Compare: {
            auto *c = e.as<ir::Compare>();
            uint64_t x = eval(t, c->a), y = eval(t, c->b);
            return compare(c->op, c->a.type().scalar(), x, y);
        }
        case ir::NodeKind::Cast: {
            auto *c = e.as<ir::Cast>();
            return cast_scalar(c->a.type().scalar(), ty.scalar(), eval(t, c->a));
        }
        case ir::NodeKind::Select: {
            auto *s = e.as<ir::Select>();
            uint64_t c = eval(t, s->cond), a = eval(t, s->a), b = eval(t, s->b); // both arms evaluated
            return c & 1 ? a : b;
        }
        case ir::NodeKind::Load: {
            auto *l = e.as<ir::Load>();
            uint64_t p = eval(t, l->ptr), i = eval(t, l->index);
            return load(p, index_value(l->index.type().scalar(), i));
        }
        case ir::NodeKind::Call: {
            auto *c = e.as<ir::Call>();
            std::vector<uint64_t> args;
            for (const ir::Expr &a : c->args) args.push_back(eval(t, a));
            return intrinsic(c->op, c->args[0].type().scalar(), args);
        }
        case ir::NodeKind::Atomic: {
            auto *a = e.as<ir::Atomic>();
            uint64_t p = eval(t, a->ptr), i = eval(t, a->index), v = eval(t, a->value);
            uint64_t c = a->compare ? eval(t, a->compare) : 0;
            int64_t idx = index_value(a->index.type().scalar(), i);
            ScalarType s = ty.scalar();
            uint64_t old = load(p, idx), nv = old;
            switch (a->op) {
            case ir::AtomicOp::Add: nv = is_float(s) ? float_binary(ir::BinaryOp::Add, s, old, v) : int_binary(ir::BinaryOp::Add, s, old, v); break;
            case ir::AtomicOp::Sub: nv = int_binary(ir::BinaryOp::Sub, s, old, v); break;
            case ir::AtomicOp::Min: nv = int_binary(ir::BinaryOp::Min, s, old, v); break;
            case ir::AtomicOp::Max: nv = int_binary(ir::BinaryOp::Max, s, old, v); break;
            case ir::AtomicOp::Exchange: nv = v; break;
            case ir::AtomicOp::Cas: nv = mask(s, old) == mask(s, c) ? v : old; break;
            case ir::AtomicOp::And: nv = old & v; break;
            case ir::AtomicOp::Or: nv = old | v; break;
            case ir::AtomicOp::Xor: nv = old ^ v; break;
            }
            store(p, idx, mask(s, nv));
            return mask(s, old);
        }
        case ir::NodeKind::Warp: {
            auto it = t.warp_results.find(n);
            if (it == t.warp_results.end()) throw Unsupported("a warp operation under divergent control flow");
            return it->second;
        }
        case ir::NodeKind::Invoke: {
            auto *c = e.as<ir::Invoke>();
            std::vector<uint64_t> args;
            for (const ir::Expr &a : c->args) args.push_back(eval(t, a));
            for (size_t i = 0; i < args.size(); ++i) t.vars[c->callee->params[i].get()] = args[i];
            ++depth_;
            if (depth_ > 64) throw Undefined("calls nested more than 64 deep");
            auto it = callees_.find(c->callee.get());
            if (it == callees_.end()) it = callees_.emplace(c->callee.get(), scalarizer_.mutate(c->callee->body)).first;
            Flow f = exec(t, it->second);
            --depth_;
            (void)f;
            return t.return_value;
        }
        default: throw Unsupported("expression " + std::string(ir::to_string(e.kind())));
        }
    }

    const ir::Kernel &kernel_;
    std::vector<Region> &regions_;
    std::vector<ScalarType> elem_;
    const Launch &launch_;
    std::vector<Thread> threads_;
    std::unordered_map<const ir::SharedArray *, std::pair<uint64_t, uint64_t>> shared_;
    int depth_ = 0;
    Scalarizer scalarizer_;
    ir::Stmt body_;
    std::unordered_map<const ir::Function *, ir::Stmt> callees_;
};

} // namespace

void run_kernel(const ir::Kernel &k, std::vector<Region> &regions, const Launch &launch) {
    Machine(k, regions, launch).run();
}

} // namespace ember::difftest
