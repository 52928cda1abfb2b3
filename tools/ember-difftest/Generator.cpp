/// \file
/// The kernel generator of ember-difftest ([Note] Difftest kernels in Generator.h).
#include "Generator.h"

#include "Interpreter.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

namespace ember::difftest {

using ir::Expr;
using ir::ScalarType;
using ir::Stmt;
using ir::Type;

const std::vector<ScalarType> &buffer_types() {
    static const std::vector<ScalarType> types = {
        ScalarType::I8,  ScalarType::I16, ScalarType::I32,  ScalarType::I64, ScalarType::U8,  ScalarType::U16,
        ScalarType::U32, ScalarType::U64, ScalarType::F16, ScalarType::BF16, ScalarType::F32, ScalarType::F64};
    return types;
}

namespace {

/// splitmix64: a small generator whose sequence is the same everywhere.
class Rng {
public:
    /// SplitMix64. The seed is mixed into the starting state: a state of seed * gamma + c made
    /// seed k + 1's stream seed k's shifted by one draw, so neighbouring seeds generated the same
    /// expressions (one i16 vector expression turned up in 40 seeds' kernels).
    explicit Rng(uint64_t seed) : s_(mix(mix(seed) ^ 0x632BE59BD9B4E019ull)) {}
    uint64_t next() { return mix(s_ += 0x9E3779B97F4A7C15ull); }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    bool chance(unsigned percent) { return below(100) < percent; }
    template <class T> const T &pick(const std::vector<T> &v) { return v[below(v.size())]; }

private:
    static uint64_t mix(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t s_;
};

bool is_int(ScalarType t) { return t >= ScalarType::I8 && t <= ScalarType::U64; }
bool is_signed(ScalarType t) { return t >= ScalarType::I8 && t <= ScalarType::I64; }
bool is_float(ScalarType t) { return t >= ScalarType::F16 && t <= ScalarType::F64; }
unsigned bits_of(ScalarType t) { return Type(t).bits(); }

uint64_t param_index(ScalarType t) {
    const auto &types = buffer_types();
    for (size_t i = 0; i < types.size(); ++i)
        if (types[i] == t) return i;
    return 0;
}

/// An edge value of an integer type, as bits.
uint64_t int_edge(Rng &r, ScalarType t) {
    unsigned w = bits_of(t);
    uint64_t m = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
    uint64_t min_s = uint64_t{1} << (w - 1);
    switch (r.below(9)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return m; // -1 or max unsigned
    case 3: return min_s; // MIN of signed, 2^(w-1) of unsigned
    case 4: return min_s - 1;
    case 5: return r.below(16);
    case 6: return (0 - r.below(16)) & m;
    case 7: return (uint64_t{1} << r.below(w)) & m;
    default: return r.next() & m;
    }
}

double float_edge(Rng &r, ScalarType t) {
    static const double v[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -7.0, 1e-3, 65504.0, 65520.0, 1e30,
                               -1e30, 1e-40, 1e-310, 0.1, 1.5, 2.5, -2.5, 1e10};
    switch (r.below(6)) {
    case 0: return std::numeric_limits<double>::infinity() * (r.chance(50) ? 1 : -1);
    case 1: return static_cast<double>(static_cast<int64_t>(r.below(200)) - 100);
    case 2: return decode_float(t, encode_float(t, static_cast<double>(r.next() >> 11) * 0x1p-40));
    default: return v[r.below(sizeof v / sizeof v[0])];
    }
}

class Gen {
public:
    Gen(uint64_t seed, const GenerateOptions &options) : r_(seed), seed_(seed), options_(options) {}

    Generated run() {
        Generated g;
        g.kernel.name = "dt_" + std::to_string(seed_);
        for (ScalarType t : buffer_types())
            params_.push_back(ir::Variable::make("p_" + std::string(ir::to_string(t)), Type::pointer(t),
                                                 ir::VarKind::Param));
        g.kernel.params = params_;
        collective_ = r_.chance(60);
        warps_ = collective_ && r_.chance(70);
        if (warps_) block_ = 32 * (1 + r_.below(3));
        else {
            static const std::vector<uint64_t> sizes = {1, 3, 7, 32, 33, 64, 100};
            block_ = r_.pick(sizes);
        }
        grid_ = 1 + r_.below(3);
        if (r_.chance(35)) {
            unsigned n = 1 + static_cast<unsigned>(r_.below(2));
            for (unsigned i = 0; i < n; ++i) {
                functions_.push_back(function(i));
                values_.clear();
                mutables_.clear();
                out_next_.clear();
            }
        }
        g.grid = grid_;
        g.block = block_;
        threads_ = grid_ * block_;

        push_scope();
        tid_ = let(ir::SpecialReg::make(ir::SpecialRegKind::ThreadIdx, 0), "tid");
        gid_ = let(ir::Binary::make(ir::BinaryOp::Add,
                                    ir::Binary::make(ir::BinaryOp::Mul, ir::SpecialReg::make(ir::SpecialRegKind::BlockIdx, 0),
                                                     ir::SpecialReg::make(ir::SpecialRegKind::BlockDim, 0)),
                                    ir::SpecialReg::make(ir::SpecialRegKind::ThreadIdx, 0)),
                   "gid");
        // A few inputs up front.
        for (int i = 0; i < 4; ++i) load_input(pick_type());
        unsigned n = 6 + static_cast<unsigned>(r_.below(14));
        for (unsigned i = 0; i < n; ++i) {
            statement(0, false, collective_);
            if (warps_ && r_.chance(25)) warp_statement(); // warp operations are rare otherwise
        }
        // Every mutable variable's final value goes out.
        for (auto &[t, vars] : mutables_)
            for (const ir::VariableRef &v : vars) store_out(ir::VarRef::make(v));
        if (r_.chance(20)) {
            // Some threads end early; the others store once more.
            std::vector<Stmt> then;
            then.push_back(ir::Return::make());
            emit(ir::If::make(bool_expr(1), ir::Block::make(std::move(then))));
            store_out(expr(pick_type(), 2));
        }
        g.kernel.body = ir::Block::make(std::move(blocks_.back()));
        return g;
    }

private:
    // --- scopes: each block of statements, with the variables visible in it.

    struct Scope {
        size_t values_mark;
    };

    void push_scope() {
        blocks_.emplace_back();
        marks_.push_back({values_.size(), mutable_count()});
    }
    Stmt pop_scope() {
        auto [vm, mm] = marks_.back();
        marks_.pop_back();
        values_.resize(vm);
        trim_mutables(mm);
        Stmt b = ir::Block::make(std::move(blocks_.back()));
        blocks_.pop_back();
        return b;
    }
    size_t mutable_count() const {
        size_t n = 0;
        for (auto &[t, v] : mutables_) n += v.size();
        return n;
    }
    void trim_mutables(size_t keep) {
        while (mutable_count() > keep) mutables_.erase(mutables_.begin() + static_cast<long>(mutables_.size()) - 1);
    }
    void emit(Stmt s) { blocks_.back().push_back(std::move(s)); }

    Expr let(Expr value, const std::string &name = "") {
        auto v = ir::Variable::make(name.empty() ? "v" + std::to_string(counter_++) : name, value.type(), ir::VarKind::Let);
        emit(ir::Let::make(v, value));
        Expr ref = ir::VarRef::make(v);
        if (!name.empty()) return ref; // tid, gid: not values of the pool
        values_.push_back(ref);
        return ref;
    }

    ScalarType pick_type() {
        // i8 and i16 often: their negation, shifts and casts are where back ends differ.
        static const std::vector<ScalarType> weighted = {
            ScalarType::I8,  ScalarType::I8,  ScalarType::I16, ScalarType::I16, ScalarType::I16, ScalarType::I32,
            ScalarType::I32, ScalarType::I64, ScalarType::U8,  ScalarType::U16, ScalarType::U32, ScalarType::U64,
            ScalarType::F16, ScalarType::BF16, ScalarType::F32, ScalarType::F32, ScalarType::F64, ScalarType::F64};
        return r_.pick(weighted);
    }

    Expr i64(int64_t v) { return ir::IntImm::make(ScalarType::I64, v); }
    Expr param(ScalarType t) { return ir::VarRef::make(params_[param_index(t)]); }

    Expr load_input(ScalarType t) {
        Expr idx = ir::Binary::make(ir::BinaryOp::Add, ir::Binary::make(ir::BinaryOp::Mul, gid_, i64(kSlots)),
                                    i64(static_cast<int64_t>(r_.below(kSlots))));
        return let(ir::Load::make(param(t), idx));
    }

    Expr out_index(ScalarType t) {
        uint64_t k = out_next_[t]++ % kSlots;
        return ir::Binary::make(ir::BinaryOp::Add,
                                ir::Binary::make(ir::BinaryOp::Mul, gid_, i64(kSlots)),
                                i64(static_cast<int64_t>(threads_ * kSlots + k)));
    }

    void store_out(Expr v) {
        ScalarType t = v.type().scalar();
        if (t == ScalarType::Bool) {
            v = ir::Cast::make(ScalarType::U8, v);
            t = ScalarType::U8;
        }
        emit(ir::Store::make(param(t), out_index(t), v));
    }

    // --- expressions.

    Expr constant(ScalarType t) {
        if (t == ScalarType::Bool) return ir::BoolImm::make(r_.chance(50));
        if (is_int(t)) return ir::IntImm::make(t, static_cast<int64_t>(int_edge(r_, t)));
        return ir::FloatImm::make(t, float_edge(r_, t));
    }

    Expr leaf(ScalarType t) {
        std::vector<Expr> same;
        for (const Expr &e : values_)
            if (e.type() == Type(t)) same.push_back(e);
        unsigned c = static_cast<unsigned>(r_.below(10));
        if (!same.empty() && c < 6) return r_.pick(same);
        if (in_function_) {
            // A parameter of another type, cast, or a constant.
            if (!values_.empty() && c < 8 && t != ScalarType::Bool) return ir::Cast::make(t, r_.pick(values_));
            return constant(t);
        }
        if (t != ScalarType::Bool && c < 8) return load_input(t);
        if (is_int(t) && c == 8) return ir::Cast::make(t, r_.chance(50) ? tid_ : gid_);
        return constant(t);
    }

    Expr cast_from_any(ScalarType t, int depth) {
        // A round trip through an 8-bit float, which converts only to and from f16, bf16, f32.
        const bool fp8_partner = t == ScalarType::F16 || t == ScalarType::BF16 ||
                                 t == ScalarType::F32;
        if (fp8_partner && r_.chance(10)) {
            static const std::vector<ScalarType> from = {ScalarType::F16, ScalarType::BF16,
                                                         ScalarType::F32};
            const ScalarType e = r_.chance(50) ? ScalarType::E4M3 : ScalarType::E5M2;
            return ir::Cast::make(t, ir::Cast::make(e, expr(r_.pick(from), depth - 1)));
        }
        ScalarType from = r_.chance(15) ? ScalarType::Bool : pick_type();
        return ir::Cast::make(t, expr(from, depth - 1));
    }

    Expr float_zero(ScalarType t) { return ir::FloatImm::make(t, 0.0); }

    Expr expr(ScalarType t, int depth) {
        if (depth <= 0 || r_.chance(25)) return leaf(t);
        if (t == ScalarType::Bool) return bool_expr(depth);
        if (is_int(t)) return int_expr(t, depth);
        return float_expr(t, depth);
    }

    Expr bool_expr(int depth) {
        if (depth <= 0) return leaf(ScalarType::Bool);
        switch (r_.below(7)) {
        case 0:
        case 1:
        case 2: {
            ScalarType t = pick_type();
            auto op = static_cast<ir::CompareOp>(r_.below(6));
            return ir::Compare::make(op, expr(t, depth - 1), expr(t, depth - 1));
        }
        case 3: return ir::Unary::make(ir::UnaryOp::Not, bool_expr(depth - 1));
        case 4: {
            auto op = static_cast<ir::BinaryOp>(static_cast<int>(ir::BinaryOp::And) + r_.below(3));
            return ir::Binary::make(op, bool_expr(depth - 1), bool_expr(depth - 1));
        }
        case 5: {
            static const std::vector<ScalarType> fl = {ScalarType::F16, ScalarType::BF16, ScalarType::F32, ScalarType::F64};
            static const std::vector<ir::Intrinsic> preds = {ir::Intrinsic::IsNan, ir::Intrinsic::IsInf, ir::Intrinsic::IsFinite};
            return ir::Call::make(r_.pick(preds), {expr(r_.pick(fl), depth - 1)});
        }
        default: return leaf(ScalarType::Bool);
        }
    }

    Expr int_expr(ScalarType t, int depth) {
        unsigned c = static_cast<unsigned>(r_.below(20));
        if (c < 8) {
            auto op = static_cast<ir::BinaryOp>(r_.below(12));
            return ir::Binary::make(op, expr(t, depth - 1), expr(t, depth - 1));
        }
        if (c < 11) {
            // Negation, often of a shifted value or of the type's MIN.
            Expr a = expr(t, depth - 1);
            if (r_.chance(40))
                a = ir::Binary::make(ir::BinaryOp::Shl, a, ir::IntImm::make(t, static_cast<int64_t>(bits_of(t) - 1 - r_.below(3))));
            return ir::Unary::make(r_.chance(80) ? ir::UnaryOp::Neg : ir::UnaryOp::BitNot, a);
        }
        if (c < 14) return cast_from_any(t, depth);
        if (c < 16) return ir::Select::make(bool_expr(depth - 1), expr(t, depth - 1), expr(t, depth - 1));
        if (c < 18) {
            static const std::vector<ir::Intrinsic> ops = {ir::Intrinsic::Abs, ir::Intrinsic::Popcount, ir::Intrinsic::Clz,
                                                           ir::Intrinsic::Ctz};
            return ir::Call::make(r_.pick(ops), {expr(t, depth - 1)});
        }
        // Shifts by amounts at and past the width.
        auto op = r_.chance(50) ? ir::BinaryOp::Shl : ir::BinaryOp::Shr;
        return ir::Binary::make(op, expr(t, depth - 1),
                                ir::IntImm::make(t, static_cast<int64_t>(r_.below(bits_of(t) + 4))));
    }

    Expr float_expr(ScalarType t, int depth) {
        unsigned c = static_cast<unsigned>(r_.below(20));
        if (c < 7) {
            static const std::vector<ir::BinaryOp> ops = {ir::BinaryOp::Add, ir::BinaryOp::Sub, ir::BinaryOp::Mul,
                                                          ir::BinaryOp::Div, ir::BinaryOp::Mod};
            return ir::Binary::make(r_.pick(ops), expr(t, depth - 1), expr(t, depth - 1));
        }
        if (c < 9) {
            Expr m = r_.chance(50) ? ir::Binary::make(r_.chance(50) ? ir::BinaryOp::Min : ir::BinaryOp::Max,
                                                      expr(t, depth - 1), expr(t, depth - 1))
                                   : ir::Call::make(r_.chance(50) ? ir::Intrinsic::Fmin : ir::Intrinsic::Fmax,
                                                    {expr(t, depth - 1), expr(t, depth - 1)});
            return ir::Binary::make(ir::BinaryOp::Add, m, float_zero(t)); // min(+0, -0) may be either
        }
        if (c < 10) return ir::Unary::make(ir::UnaryOp::Neg, expr(t, depth - 1));
        if (c < 13) return cast_from_any(t, depth);
        if (c < 14) return ir::Select::make(bool_expr(depth - 1), expr(t, depth - 1), expr(t, depth - 1));
        if (c < 18) {
            static const std::vector<ir::Intrinsic> ops = {ir::Intrinsic::Abs,   ir::Intrinsic::Sqrt,  ir::Intrinsic::Floor,
                                                           ir::Intrinsic::Ceil,  ir::Intrinsic::Trunc, ir::Intrinsic::Round};
            return ir::Call::make(r_.pick(ops), {expr(t, depth - 1)});
        }
        if (c < 19) {
            if (options_.no_half_fma && (t == ScalarType::F16 || t == ScalarType::BF16))
                return ir::Binary::make(ir::BinaryOp::Mul, expr(t, depth - 1), expr(t, depth - 1));
            return ir::Call::make(ir::Intrinsic::Fma, {expr(t, depth - 1), expr(t, depth - 1), expr(t, depth - 1)});
        }
        // copysign(a, b) with b never NaN (a NaN's sign is not defined).
        Expr b = expr(t, depth - 1);
        Expr safe = ir::Select::make(ir::Call::make(ir::Intrinsic::IsNan, {b}), ir::FloatImm::make(t, -1.0), b);
        return ir::Call::make(ir::Intrinsic::Copysign, {expr(t, depth - 1), safe});
    }

    // --- statements.

    void value_statement(int depth) {
        ScalarType t = r_.chance(8) ? ScalarType::Bool : pick_type();
        const int depth_of_tree = 2 + static_cast<int>(r_.below(3));
        Expr v = let(t == ScalarType::Bool ? bool_expr(depth_of_tree)
                     : is_int(t)           ? int_expr(t, depth_of_tree)
                                           : float_expr(t, depth_of_tree));
        if (in_function_) accumulate(v);
        else if (r_.chance(60)) store_out(v);
        (void)depth;
    }

    // --- vectors (SIMD values of 2 ... 16 lanes), lane by lane.

    Expr vector_leaf(ScalarType t, unsigned n) {
        switch (r_.below(3)) {
        case 0: {
            // load<n>(p[gid * kSlots + j * n]): aligned, as vector accesses must be
            Expr idx = ir::Binary::make(ir::BinaryOp::Add, ir::Binary::make(ir::BinaryOp::Mul, gid_, i64(kSlots)),
                                        i64(static_cast<int64_t>(n * r_.below(kSlots / n))));
            return let_vector(ir::Load::make(param(t), idx, n));
        }
        case 1: return ir::MakeVector::broadcast(expr(t, 1), n);
        default: {
            std::vector<Expr> lanes;
            for (unsigned k = 0; k < n; ++k) lanes.push_back(k < 4 || r_.chance(30) ? expr(t, 1) : leaf(t));
            return ir::MakeVector::make(Type::vector(t, n), std::move(lanes));
        }
        }
    }

    Expr let_vector(Expr value) {
        auto v = ir::Variable::make("q" + std::to_string(counter_++), value.type(), ir::VarKind::Let);
        emit(ir::Let::make(v, value));
        return ir::VarRef::make(v);
    }

    Expr vector_expr(ScalarType t, unsigned n, int depth) {
        if (depth <= 0 || r_.chance(20)) return vector_leaf(t, n);
        Expr zero = ir::MakeVector::broadcast(is_float(t) ? ir::FloatImm::make(t, 0.0) : ir::IntImm::make(t, 0), n);
        switch (r_.below(8)) {
        case 0:
        case 1:
        case 2: {
            if (is_int(t))
                return ir::Binary::make(static_cast<ir::BinaryOp>(r_.below(12)), vector_expr(t, n, depth - 1),
                                        vector_expr(t, n, depth - 1));
            static const std::vector<ir::BinaryOp> ops = {ir::BinaryOp::Add, ir::BinaryOp::Sub, ir::BinaryOp::Mul,
                                                          ir::BinaryOp::Div, ir::BinaryOp::Min, ir::BinaryOp::Max};
            ir::BinaryOp op = r_.pick(ops);
            Expr e = ir::Binary::make(op, vector_expr(t, n, depth - 1), vector_expr(t, n, depth - 1));
            if (op == ir::BinaryOp::Min || op == ir::BinaryOp::Max) e = ir::Binary::make(ir::BinaryOp::Add, e, zero);
            return e;
        }
        case 3: return ir::Unary::make(is_int(t) && r_.chance(30) ? ir::UnaryOp::BitNot : ir::UnaryOp::Neg, vector_expr(t, n, depth - 1));
        case 4: return ir::Cast::make(Type::vector(t, n), vector_expr(pick_type(), n, depth - 1));
        case 5: {
            ScalarType u = pick_type();
            Expr c = ir::Compare::make(static_cast<ir::CompareOp>(r_.below(6)), vector_expr(u, n, depth - 1),
                                       vector_expr(u, n, depth - 1));
            return ir::Select::make(c, vector_expr(t, n, depth - 1), vector_expr(t, n, depth - 1));
        }
        default: {
            static const std::vector<ir::Intrinsic> ints = {ir::Intrinsic::Abs, ir::Intrinsic::Popcount, ir::Intrinsic::Clz, ir::Intrinsic::Ctz};
            static const std::vector<ir::Intrinsic> floats = {ir::Intrinsic::Abs, ir::Intrinsic::Sqrt, ir::Intrinsic::Floor,
                                                              ir::Intrinsic::Ceil, ir::Intrinsic::Trunc, ir::Intrinsic::Round};
            return ir::Call::make(r_.pick(is_int(t) ? ints : floats), {vector_expr(t, n, depth - 1)});
        }
        }
    }

    /// A vector value: stored whole to aligned output slots, or one lane, or folded by a reduce.
    void vector_statement() {
        static const std::vector<unsigned> widths = {2, 4, 4, 8, 16};
        ScalarType t = pick_type();
        unsigned n = r_.pick(widths);
        Expr v = let_vector(vector_expr(t, n, 1 + static_cast<int>(r_.below(3))));
        switch (r_.below(3)) {
        case 0: {
            uint64_t &next = out_next_[t];
            uint64_t k = (next + n - 1) / n * n % kSlots;
            next = k + n;
            Expr idx = ir::Binary::make(ir::BinaryOp::Add, ir::Binary::make(ir::BinaryOp::Mul, gid_, i64(kSlots)),
                                        i64(static_cast<int64_t>(threads_ * kSlots + k)));
            emit(ir::Store::make(param(t), idx, v));
            return;
        }
        case 1: store_out(let(ir::Extract::make(v, static_cast<unsigned>(r_.below(n))))); return;
        default: {
            std::vector<ir::ReduceOp> ops = {ir::ReduceOp::Add, ir::ReduceOp::Mul, ir::ReduceOp::Min, ir::ReduceOp::Max};
            if (is_int(t)) ops.insert(ops.end(), {ir::ReduceOp::And, ir::ReduceOp::Or, ir::ReduceOp::Xor});
            ir::ReduceOp op = r_.pick(ops);
            Expr r = ir::Reduce::make(op, v);
            if (is_float(t) && (op == ir::ReduceOp::Min || op == ir::ReduceOp::Max))
                r = ir::Binary::make(ir::BinaryOp::Add, r, ir::FloatImm::make(t, 0.0)); // min(+0, -0) may be either
            store_out(let(r));
        }
        }
    }

    /// In a device function, values flow into its result through an accumulator.
    void accumulate(const Expr &v) {
        Expr acc = ir::VarRef::make(acc_);
        auto op = is_int(ret_) ? ir::BinaryOp::Xor : ir::BinaryOp::Add;
        emit(ir::Assign::make(acc_, ir::Binary::make(op, acc, ir::Cast::make(ret_, v))));
    }

    /// `let v = @f(args)` of one of the kernel's device functions.
    void call_statement() {
        const ir::FunctionRef &f = r_.pick(functions_);
        std::vector<Expr> args;
        for (const ir::VariableRef &p : f->params) args.push_back(expr(p->type.scalar(), 2));
        Expr v = let(ir::Invoke::make(f, std::move(args)));
        if (!in_function_) store_out(v);
    }

    /// A device function of scalar parameters and a scalar result: lets, mutable variables,
    /// branches that return early, loops, calls of the functions made before it.
    ir::FunctionRef function(size_t index) {
        in_function_ = true;
        ret_ = pick_type();
        push_scope();
        std::vector<ir::VariableRef> params;
        unsigned n = 1 + static_cast<unsigned>(r_.below(3));
        for (unsigned i = 0; i < n; ++i) {
            auto p = ir::Variable::make("x" + std::to_string(i), pick_type(), ir::VarKind::Param);
            params.push_back(p);
            values_.push_back(ir::VarRef::make(p));
        }
        acc_ = ir::Variable::make("acc", ret_, ir::VarKind::Mutable);
        emit(ir::Declare::make(acc_, expr(ret_, 1)));
        unsigned count = 2 + static_cast<unsigned>(r_.below(5));
        for (unsigned i = 0; i < count; ++i) statement(1, false, false);
        emit(ir::Return::make(ir::Binary::make(is_int(ret_) ? ir::BinaryOp::Xor : ir::BinaryOp::Add,
                                               ir::VarRef::make(acc_), expr(ret_, 2))));
        Stmt body = pop_scope();
        in_function_ = false;
        return ir::Function::make("f" + std::to_string(index), std::move(params), ret_, body);
    }

    void statement(int depth, bool in_loop, bool collective) {
        unsigned c = static_cast<unsigned>(r_.below(100));
        if (!in_function_ && r_.chance(12)) return vector_statement();
        if (c < 35 || depth >= 3) return value_statement(depth);
        if (c < 42) {
            ScalarType t = pick_type();
            auto v = ir::Variable::make("m" + std::to_string(counter_++), t, ir::VarKind::Mutable);
            emit(ir::Declare::make(v, expr(t, 2)));
            mutables_.emplace_back(t, std::vector<ir::VariableRef>{v});
            return;
        }
        if (c < 50 && !mutables_.empty()) {
            auto &[t, vars] = mutables_[r_.below(mutables_.size())];
            emit(ir::Assign::make(vars[0], expr(t, 2)));
            return;
        }
        if (c < 60) return if_statement(depth, in_loop);
        if (c < 68) return for_statement(depth, collective);
        if (c < 72) return while_statement(depth);
        if (c < 80 && !functions_.empty()) return call_statement();
        if (in_function_) return value_statement(depth);
        if (c < 75 && in_loop) {
            std::vector<Stmt> then;
            then.push_back(r_.chance(50) ? ir::Break::make() : ir::Continue::make());
            emit(ir::If::make(bool_expr(2), ir::Block::make(std::move(then))));
            return;
        }
        if (c < 80) return global_atomic();
        if (c < 83 && depth == 0) return local_array();
        if (collective) {
            if (c < 88) return shared_exchange();
            if (c < 91) return shared_atomic();
            if (c < 97 && warps_) return warp_statement();
            if (c < 99) {
                emit(ir::Barrier::make());
                return;
            }
        }
        value_statement(depth);
    }

    void body(int depth, bool in_loop, bool collective) {
        unsigned n = 1 + static_cast<unsigned>(r_.below(4));
        for (unsigned i = 0; i < n; ++i) statement(depth, in_loop, collective);
    }

    void if_statement(int depth, bool in_loop) {
        Expr c = bool_expr(2);
        push_scope();
        body(depth + 1, in_loop, false);
        if (in_function_ && r_.chance(30)) emit(ir::Return::make(ir::VarRef::make(acc_))); // an early return
        Stmt then = pop_scope();
        Stmt els;
        if (r_.chance(50)) {
            push_scope();
            body(depth + 1, in_loop, false);
            els = pop_scope();
        }
        emit(ir::If::make(c, then, els));
    }

    void for_statement(int depth, bool collective) {
        static const std::vector<ScalarType> types = {ScalarType::I8, ScalarType::I16, ScalarType::I32, ScalarType::I64,
                                                      ScalarType::U8, ScalarType::U16, ScalarType::U32, ScalarType::U64};
        ScalarType t = r_.pick(types);
        bool uniform = collective && r_.chance(50);
        int64_t begin = static_cast<int64_t>(r_.below(10));
        if (is_signed(t) && r_.chance(30)) begin -= 10;
        int64_t trips = static_cast<int64_t>(r_.below(6));
        int64_t step = 1 + static_cast<int64_t>(r_.below(2));
        Expr b = ir::IntImm::make(t, begin), e, s = ir::IntImm::make(t, step);
        bool down = is_signed(t) && r_.chance(25);
        if (down) {
            e = ir::IntImm::make(t, begin - trips);
            s = ir::IntImm::make(t, -step);
        } else if (!uniform && r_.chance(50)) {
            // A trip count from the data: begin + (x & 7).
            Expr x = ir::Binary::make(ir::BinaryOp::And, expr(t, 1), ir::IntImm::make(t, 7));
            e = ir::Binary::make(ir::BinaryOp::Add, x, b);
        } else {
            e = ir::IntImm::make(t, begin + trips);
        }
        auto var = ir::Variable::make("i" + std::to_string(counter_++), t, ir::VarKind::LoopIndex);
        push_scope();
        values_.push_back(ir::VarRef::make(var));
        // A loop holding barriers has no break or continue: every thread runs every iteration.
        body(depth + 1, !uniform, uniform);
        if (uniform) emit(ir::Barrier::make()); // the next iteration rewrites shared arrays
        Stmt bd = pop_scope();
        emit(ir::For::make(var, b, e, s, bd));
    }

    void while_statement(int depth) {
        auto cnt = ir::Variable::make("w" + std::to_string(counter_++), ScalarType::I32, ir::VarKind::Mutable);
        emit(ir::Declare::make(cnt, ir::IntImm::make(ScalarType::I32, 0)));
        Expr c = ir::Binary::make(ir::BinaryOp::And,
                                  ir::Compare::make(ir::CompareOp::LT, ir::VarRef::make(cnt),
                                                    ir::IntImm::make(ScalarType::I32, 1 + static_cast<int64_t>(r_.below(5)))),
                                  bool_expr(1));
        push_scope();
        // The counter first, so that a continue cannot skip it.
        emit(ir::Assign::make(cnt, ir::Binary::make(ir::BinaryOp::Add, ir::VarRef::make(cnt), ir::IntImm::make(ScalarType::I32, 1))));
        body(depth + 1, true, false);
        Stmt bd = pop_scope();
        emit(ir::While::make(c, bd));
        if (!in_function_) store_out(ir::VarRef::make(cnt));
    }

    /// An atomic on a slot every thread updates with the same operator (old value unused), or on
    /// the thread's own output slot (old value stored).
    void global_atomic() {
        static const std::vector<ScalarType> types = {ScalarType::I32, ScalarType::I64, ScalarType::U32, ScalarType::U64};
        ScalarType t = r_.pick(types);
        if (r_.chance(60)) {
            static const std::vector<ir::AtomicOp> ops = {ir::AtomicOp::Add, ir::AtomicOp::Sub, ir::AtomicOp::Min,
                                                          ir::AtomicOp::Max, ir::AtomicOp::And, ir::AtomicOp::Or,
                                                          ir::AtomicOp::Xor};
            size_t k = r_.below(ops.size());
            Expr slot = i64(static_cast<int64_t>(2 * threads_ * kSlots + k));
            auto v = ir::Variable::make("a" + std::to_string(counter_++), t, ir::VarKind::Let);
            emit(ir::Let::make(v, ir::Atomic::make(ops[k], param(t), slot, expr(t, 2))));
            return;
        }
        static const std::vector<ir::AtomicOp> all = {ir::AtomicOp::Add, ir::AtomicOp::Sub, ir::AtomicOp::Min,
                                                      ir::AtomicOp::Max, ir::AtomicOp::Exchange, ir::AtomicOp::Cas,
                                                      ir::AtomicOp::And, ir::AtomicOp::Or, ir::AtomicOp::Xor};
        ir::AtomicOp op = r_.pick(all);
        Expr idx = out_index(t);
        Expr cmp = op == ir::AtomicOp::Cas ? (r_.chance(50) ? ir::Load::make(param(t), idx) : expr(t, 1)) : Expr();
        Expr old = let(ir::Atomic::make(op, param(t), idx, expr(t, 2), cmp, r_.chance(30) ? ir::FenceScope::Block : ir::FenceScope::Device));
        store_out(old);
    }

    void local_array() {
        ScalarType t = pick_type();
        auto arr = ir::Variable::make("l" + std::to_string(counter_++), Type::pointer(t, ir::AddressSpace::Local), ir::VarKind::Let);
        emit(ir::LocalArray::make(arr, 8));
        auto i = ir::Variable::make("i" + std::to_string(counter_++), ScalarType::I32, ir::VarKind::LoopIndex);
        push_scope();
        values_.push_back(ir::VarRef::make(i));
        emit(ir::Store::make(ir::VarRef::make(arr), ir::VarRef::make(i), expr(t, 2)));
        Stmt bd = pop_scope();
        emit(ir::For::make(i, ir::IntImm::make(ScalarType::I32, 0), ir::IntImm::make(ScalarType::I32, 8),
                           ir::IntImm::make(ScalarType::I32, 1), bd));
        ScalarType it = r_.chance(50) ? ScalarType::U8 : ScalarType::I64;
        Expr idx = ir::Binary::make(ir::BinaryOp::And, expr(it, 1), ir::IntImm::make(it, 7));
        store_out(let(ir::Load::make(ir::VarRef::make(arr), idx)));
    }

    /// Each thread writes its element of a shared array; after a barrier it reads another's.
    void shared_exchange() {
        ScalarType t = pick_type();
        auto arr = ir::Variable::make("s" + std::to_string(counter_++), Type::pointer(t, ir::AddressSpace::Shared), ir::VarKind::Let);
        emit(ir::SharedArray::make(arr, block_));
        emit(ir::Store::make(ir::VarRef::make(arr), tid_, expr(t, 2)));
        emit(ir::Barrier::make());
        Expr other;
        int64_t n = static_cast<int64_t>(block_);
        switch (r_.below(3)) {
        case 0: other = ir::Binary::make(ir::BinaryOp::Mod, ir::Binary::make(ir::BinaryOp::Add, tid_, i64(static_cast<int64_t>(r_.below(block_ + 1)))), i64(n)); break;
        case 1: other = ir::Binary::make(ir::BinaryOp::Sub, i64(n - 1), tid_); break;
        default: other = i64(static_cast<int64_t>(r_.below(block_)));
        }
        store_out(let(ir::Load::make(ir::VarRef::make(arr), other)));
        emit(ir::Barrier::make());
    }

    /// A block-wide atomic accumulation in shared memory, read by every thread after a barrier.
    void shared_atomic() {
        static const std::vector<ScalarType> types = {ScalarType::I32, ScalarType::I64, ScalarType::U32, ScalarType::U64};
        static const std::vector<ir::AtomicOp> ops = {ir::AtomicOp::Add, ir::AtomicOp::Sub, ir::AtomicOp::Min, ir::AtomicOp::Max,
                                                      ir::AtomicOp::And, ir::AtomicOp::Or, ir::AtomicOp::Xor};
        ScalarType t = r_.pick(types);
        auto arr = ir::Variable::make("s" + std::to_string(counter_++), Type::pointer(t, ir::AddressSpace::Shared), ir::VarKind::Let);
        emit(ir::SharedArray::make(arr, 1));
        std::vector<Stmt> init;
        init.push_back(ir::Store::make(ir::VarRef::make(arr), i64(0), constant(t)));
        emit(ir::If::make(ir::Compare::make(ir::CompareOp::EQ, tid_, i64(0)), ir::Block::make(std::move(init))));
        emit(ir::Barrier::make());
        auto v = ir::Variable::make("a" + std::to_string(counter_++), t, ir::VarKind::Let);
        emit(ir::Let::make(v, ir::Atomic::make(r_.pick(ops), ir::VarRef::make(arr), i64(0), expr(t, 2), Expr(),
                                               r_.chance(50) ? ir::FenceScope::Block : ir::FenceScope::Device)));
        emit(ir::Barrier::make());
        store_out(let(ir::Load::make(ir::VarRef::make(arr), i64(0))));
        emit(ir::Barrier::make());
    }

    void warp_statement() {
        unsigned c = static_cast<unsigned>(r_.below(10));
        if (c < 7) {
            static const std::vector<ScalarType> types = {ScalarType::I32, ScalarType::I64, ScalarType::U32,
                                                          ScalarType::U64, ScalarType::F32, ScalarType::F64};
            ScalarType t = r_.pick(types);
            auto op = static_cast<ir::WarpOp>(r_.below(4));
            Expr lane;
            // shuffle_idx reads lane % 32; shuffle_up/down past the warp give the reader's value;
            // shuffle_xor stays in the warp.
            const int64_t limit = op == ir::WarpOp::ShuffleIdx ? 64 : op == ir::WarpOp::ShuffleXor ? 32 : 40;
            if (r_.chance(50)) {
                lane = ir::IntImm::make(ScalarType::I32, static_cast<int64_t>(r_.below(static_cast<uint64_t>(limit))));
            } else {
                lane = ir::Binary::make(ir::BinaryOp::And, expr(ScalarType::I32, 1),
                                        ir::IntImm::make(ScalarType::I32, limit == 40 ? 31 + 8 * r_.chance(20) : limit - 1));
            }
            store_out(let(ir::Warp::make(op, expr(t, 2), lane)));
            return;
        }
        auto op = static_cast<ir::WarpOp>(static_cast<int>(ir::WarpOp::Ballot) + r_.below(3));
        store_out(let(ir::Warp::make(op, bool_expr(2))));
    }

    Rng r_;
    uint64_t seed_;
    GenerateOptions options_;
    std::vector<ir::VariableRef> params_;
    bool collective_ = false, warps_ = false;
    uint64_t block_ = 1, grid_ = 1, threads_ = 1;
    Expr tid_, gid_;
    std::vector<std::vector<Stmt>> blocks_;
    std::vector<std::pair<size_t, size_t>> marks_;
    std::vector<Expr> values_;
    std::vector<std::pair<ScalarType, std::vector<ir::VariableRef>>> mutables_;
    std::map<ScalarType, uint64_t> out_next_;
    std::vector<ir::FunctionRef> functions_;
    bool in_function_ = false;
    ir::VariableRef acc_;
    ScalarType ret_ = ScalarType::I32;
    uint64_t counter_ = 0;
};

} // namespace

Generated generate(uint64_t seed, const GenerateOptions &options) { return Gen(seed, options).run(); }

std::vector<std::vector<uint8_t>> make_inputs(uint64_t seed, uint64_t threads) {
    Rng r(seed ^ 0xD1FFD1FFD1FFull);
    std::vector<std::vector<uint8_t>> out;
    const uint64_t n = buffer_elements(threads);
    for (ScalarType t : buffer_types()) {
        const unsigned bytes = bits_of(t) / 8;
        std::vector<uint8_t> buf(n * bytes);
        for (uint64_t i = 0; i < n; ++i) {
            uint64_t v;
            if (is_float(t)) {
                v = r.chance(50) ? r.next() : encode_float(t, float_edge(r, t));
                // quiet NaNs only (signalling ones may be quieted by some operations and not others)
                double d = decode_float(t, v & (bits_of(t) == 64 ? ~uint64_t{0} : (uint64_t{1} << bits_of(t)) - 1));
                if (std::isnan(d)) {
                    unsigned frac = t == ScalarType::F16 ? 10 : t == ScalarType::BF16 ? 7 : t == ScalarType::F32 ? 23 : 52;
                    v |= uint64_t{1} << (frac - 1);
                }
            } else {
                v = r.chance(50) ? r.next() : int_edge(r, t);
            }
            std::memcpy(buf.data() + i * bytes, &v, bytes);
        }
        out.push_back(std::move(buf));
    }
    return out;
}

} // namespace ember::difftest
