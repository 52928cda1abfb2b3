// MathBuilder's operations and the entry point of the math library ([Note] Math library).
#include "MathLib.h"

#include "MathBuilder.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>

#include <string>

namespace ember::detail {
namespace math {

MathBuilder::MathBuilder(llvm::IRBuilderBase &builder, llvm::Type *float_type)
    : b(builder), fty(float_type),
      ity(llvm::Type::getIntNTy(builder.getContext(), float_type->getPrimitiveSizeInBits())) {
    EMBER_ASSERT(fty->isFloatTy() || fty->isDoubleTy(), "MathBuilder needs float or double");
}

V MathBuilder::f(double x) { return wrap(llvm::ConstantFP::get(fty, x)); }
V MathBuilder::i(int64_t x) { return wrap(llvm::ConstantInt::get(ity, static_cast<uint64_t>(x), true)); }
V MathBuilder::constant_like(const V &like, double x) {
    llvm::Type *t = like.type();
    if (t->isFloatingPointTy()) return wrap(llvm::ConstantFP::get(t, x));
    return wrap(llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(x)), true));
}
V MathBuilder::constant_like(const V &like, int64_t x) {
    llvm::Type *t = like.type();
    if (t->isFloatingPointTy()) return wrap(llvm::ConstantFP::get(t, static_cast<double>(x)));
    return wrap(llvm::ConstantInt::get(t, static_cast<uint64_t>(x), true));
}
V MathBuilder::inf() { return wrap(llvm::ConstantFP::getInfinity(fty)); }
V MathBuilder::nan() { return wrap(llvm::ConstantFP::getNaN(fty)); }

V MathBuilder::fma(V a, V x, V c) { return wrap(b.CreateIntrinsic(llvm::Intrinsic::fma, {fty}, {a.v, x.v, c.v})); }

V MathBuilder::poly(V x, llvm::ArrayRef<double> c) {
    EMBER_ASSERT(!c.empty(), "poly without coefficients");
    V r = f(c.back());
    for (size_t k = c.size() - 1; k-- > 0;) r = fma(r, x, f(c[k]));
    return r;
}
V MathBuilder::poly(V x, std::initializer_list<double> c) { return poly(x, llvm::ArrayRef<double>(c.begin(), c.end())); }

V MathBuilder::abs(V x) { return wrap(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x.v)); }
V MathBuilder::copysign(V mag, V sign) { return wrap(b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag.v, sign.v)); }
V MathBuilder::floor(V x) { return wrap(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x.v)); }
V MathBuilder::ceil(V x) { return wrap(b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x.v)); }
V MathBuilder::trunc(V x) { return wrap(b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x.v)); }
V MathBuilder::rint(V x) { return wrap(b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x.v)); }
V MathBuilder::sqrt(V x) { return wrap(b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x.v)); }
V MathBuilder::fmin(V x, V y) { return wrap(b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x.v, y.v)); }
V MathBuilder::fmax(V x, V y) { return wrap(b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x.v, y.v)); }
V MathBuilder::isnan(V x) { return wrap(b.CreateFCmpUNO(x.v, x.v)); }
V MathBuilder::isinf(V x) { return wrap(b.CreateFCmpOEQ(abs(x).v, inf().v)); }
V MathBuilder::isfinite(V x) { return wrap(b.CreateFCmpONE(abs(x).v, inf().v)); }

V MathBuilder::ldexp(V x, V n) {
    // x * 2^a * 2^b with a + b = n (n clamped where the result is 0 or inf anyway), chosen so
    // that 2^a and 2^b are normal numbers and x * 2^a is exact (a normal number or inf): only the
    // second multiplication rounds, so the result is rounded once, into the subnormals too.
    // That takes |x| in [2^-8, 2^8] (or 0, inf, NaN).
    const int64_t bias = exponent_bias();
    const int64_t lo = -(2 * bias - 10), hi = 2 * bias;
    V nn = select(n < lo, i(lo), select(n > hi, i(hi), n));
    V big = nn > bias, tiny = nn < -(bias - 9);
    V bb = select(big, nn - bias, select(tiny, i(-(bias - 1)), i(0)));
    V aa = nn - bb;
    auto pow2 = [&](V e) { return as_float((e + bias) << mantissa_bits()); };
    return x * pow2(aa) * pow2(bb);
}

V MathBuilder::as_int(V x) { return wrap(b.CreateBitCast(x.v, ity)); }
V MathBuilder::as_float(V x) { return wrap(b.CreateBitCast(x.v, fty)); }
V MathBuilder::to_int(V x) { return wrap(b.CreateFPToSI(x.v, ity)); }
V MathBuilder::to_float(V n) { return wrap(b.CreateSIToFP(n.v, fty)); }
V MathBuilder::lshr(V a, V n) { return wrap(b.CreateLShr(a.v, n.v)); }
V MathBuilder::lshr(V a, int64_t n) { return lshr(a, constant_like(a, n)); }

V MathBuilder::select(V cond, V x, V y) { return wrap(b.CreateSelect(cond.v, x.v, y.v)); }

V MathBuilder::if_else(V cond, llvm::function_ref<V()> then_fn, llvm::function_ref<V()> else_fn) {
    return if_else_values(
        cond, [&] { return std::vector<V>{then_fn()}; }, [&] { return std::vector<V>{else_fn()}; })[0];
}

V MathBuilder::rare_path(const std::string &name, std::initializer_list<V> args,
                         llvm::function_ref<V(MathBuilder &, llvm::ArrayRef<V>)> body) {
    llvm::Module &mod = *b.GetInsertBlock()->getModule();
    const llvm::Triple triple(mod.getTargetTriple());
    std::vector<V> in(args);
    if (!triple.isNVPTX() && !triple.isAMDGPU()) return body(*this, in);
    const std::string fn_name = "__ember_" + name + (is_f64() ? "_f64" : "_f32");
    llvm::Function *fn = mod.getFunction(fn_name);
    if (!fn) {
        std::vector<llvm::Type *> types;
        for (const V &a : in) types.push_back(a.type());
        auto *fnty = llvm::FunctionType::get(fty, types, false);
        fn = llvm::Function::Create(fnty, llvm::GlobalValue::InternalLinkage, fn_name, mod);
        fn->setDoesNotThrow();
        fn->setWillReturn();
        fn->setDoesNotAccessMemory();
        fn->addFnAttr(llvm::Attribute::NoInline);
        fn->addFnAttr(llvm::Attribute::NoUnwind);
        fn->addFnAttr(llvm::Attribute::NoSync);
        fn->addFnAttr(llvm::Attribute::NoFree);
        fn->addFnAttr(llvm::Attribute::NoRecurse);
        llvm::IRBuilder<> fb(llvm::BasicBlock::Create(mod.getContext(), "entry", fn));
        MathBuilder fm(fb, fty);
        std::vector<V> params;
        for (llvm::Argument &a : fn->args()) params.push_back(fm.wrap(&a));
        V r = body(fm, params);
        EMBER_ASSERT(r.type() == fty, "rare path of the wrong type");
        fb.CreateRet(r.v);
    }
    std::vector<llvm::Value *> values;
    for (const V &a : in) values.push_back(a.v);
    llvm::CallInst *call = b.CreateCall(fn, values);
    call->setDoesNotThrow();
    return wrap(call);
}

V MathBuilder::call(ir::Intrinsic op, std::initializer_list<V> args) {
    std::vector<llvm::Value *> a;
    for (const V &x : args) a.push_back(x.v);
    return wrap(emit_math_call(b, op, a));
}

std::pair<V, V> MathBuilder::two_prod(V x, V y) {
    V hi = x * y;
    return {hi, fma(x, y, -hi)};
}
std::pair<V, V> MathBuilder::two_sum(V x, V y) {
    V s = x + y;
    V bb = s - x;
    V err = (x - (s - bb)) + (y - bb);
    return {s, err};
}
std::pair<V, V> MathBuilder::fast_two_sum(V x, V y) {
    V s = x + y;
    return {s, y - (s - x)};
}

namespace {
llvm::IRBuilderBase &B(const V &a) { return a.m->b; }
} // namespace

V operator+(V a, V c) { return V{a.is_float() ? B(a).CreateFAdd(a.v, c.v) : B(a).CreateAdd(a.v, c.v), a.m}; }
V operator-(V a, V c) { return V{a.is_float() ? B(a).CreateFSub(a.v, c.v) : B(a).CreateSub(a.v, c.v), a.m}; }
V operator*(V a, V c) { return V{a.is_float() ? B(a).CreateFMul(a.v, c.v) : B(a).CreateMul(a.v, c.v), a.m}; }
V operator/(V a, V c) { return V{a.is_float() ? B(a).CreateFDiv(a.v, c.v) : B(a).CreateSDiv(a.v, c.v), a.m}; }
V operator-(V a) { return V{a.is_float() ? B(a).CreateFNeg(a.v) : B(a).CreateNeg(a.v), a.m}; }
V operator&(V a, V c) { return V{B(a).CreateAnd(a.v, c.v), a.m}; }
V operator|(V a, V c) { return V{B(a).CreateOr(a.v, c.v), a.m}; }
V operator^(V a, V c) { return V{B(a).CreateXor(a.v, c.v), a.m}; }
V operator<<(V a, V c) { return V{B(a).CreateShl(a.v, c.v), a.m}; }
V operator>>(V a, V c) { return V{B(a).CreateAShr(a.v, c.v), a.m}; }
V operator!(V a) { return V{B(a).CreateNot(a.v), a.m}; }
V operator&&(V a, V c) { return V{B(a).CreateAnd(a.v, c.v), a.m}; }
V operator||(V a, V c) { return V{B(a).CreateOr(a.v, c.v), a.m}; }
V operator<(V a, V c) { return V{a.is_float() ? B(a).CreateFCmpOLT(a.v, c.v) : B(a).CreateICmpSLT(a.v, c.v), a.m}; }
V operator<=(V a, V c) { return V{a.is_float() ? B(a).CreateFCmpOLE(a.v, c.v) : B(a).CreateICmpSLE(a.v, c.v), a.m}; }
V operator>(V a, V c) { return V{a.is_float() ? B(a).CreateFCmpOGT(a.v, c.v) : B(a).CreateICmpSGT(a.v, c.v), a.m}; }
V operator>=(V a, V c) { return V{a.is_float() ? B(a).CreateFCmpOGE(a.v, c.v) : B(a).CreateICmpSGE(a.v, c.v), a.m}; }
V operator==(V a, V c) { return V{a.is_float() ? B(a).CreateFCmpOEQ(a.v, c.v) : B(a).CreateICmpEQ(a.v, c.v), a.m}; }
V operator!=(V a, V c) { return V{a.is_float() ? B(a).CreateFCmpUNE(a.v, c.v) : B(a).CreateICmpNE(a.v, c.v), a.m}; }

} // namespace math

namespace {

/// Defines `__ember_<name>_<f32|f64>` in `m` (once) from its implementation.
llvm::Function *math_function(llvm::Module &mod, ir::Intrinsic op, llvm::Type *fty) {
    std::string name = "__ember_" + std::string(ir::to_string(op)) + (fty->isDoubleTy() ? "_f64" : "_f32");
    if (llvm::Function *existing = mod.getFunction(name)) return existing;
    math::Impl impl = math::find_exp_log(op);
    if (!impl) impl = math::find_trig(op);
    if (!impl)
        throw InternalError("the math library has no implementation of '" + std::string(ir::to_string(op)) + "'");
    unsigned n = ir::arity(op);
    auto *fnty = llvm::FunctionType::get(fty, std::vector<llvm::Type *>(n, fty), false);
    llvm::Function *fn = llvm::Function::Create(fnty, llvm::GlobalValue::InternalLinkage, name, mod);
    fn->setDoesNotThrow();
    fn->setWillReturn();
    fn->setDoesNotAccessMemory();
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::NoSync);
    fn->addFnAttr(llvm::Attribute::NoFree);
    fn->addFnAttr(llvm::Attribute::NoRecurse);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(mod.getContext(), "entry", fn));
    math::MathBuilder m(b, fty);
    std::vector<math::V> args;
    for (llvm::Argument &a : fn->args()) args.push_back(m.wrap(&a));
    math::V r = impl(m, args);
    EMBER_ASSERT(r.type() == fty, "math implementation of the wrong type");
    b.CreateRet(r.v);
    return fn;
}

} // namespace

llvm::Value *emit_math_call(llvm::IRBuilderBase &b, ir::Intrinsic op, llvm::ArrayRef<llvm::Value *> args) {
    EMBER_ASSERT(ir::is_math_library(op) && !ir::is_fast_math(op), "emit_math_call of a non-library function");
    llvm::Type *ty = args[0]->getType();
    // f16 and bf16 compute in f32 and round once at the end ([Note] Math library).
    bool narrow = ty->isHalfTy() || ty->isBFloatTy();
    std::vector<llvm::Value *> a(args.begin(), args.end());
    if (narrow)
        for (llvm::Value *&x : a) x = b.CreateFPExt(x, b.getFloatTy());
    llvm::Module &mod = *b.GetInsertBlock()->getModule();
    // Defining the callee moves no insertion point of `b`: it has its own builder.
    llvm::Function *fn = math_function(mod, op, a[0]->getType());
    llvm::Value *r = b.CreateCall(fn, a);
    return narrow ? b.CreateFPTrunc(r, ty) : r;
}

} // namespace ember::detail

// MathBuilder helpers added with the trigonometric family (MathTrig.cpp); see MathBuilder.h.
namespace ember::detail::math {

V MathBuilder::int_const(unsigned bits, uint64_t value) {
    return wrap(llvm::ConstantInt::get(b.getIntNTy(bits), value));
}
V MathBuilder::zext_or_trunc(V a, unsigned bits) { return wrap(b.CreateZExtOrTrunc(a.v, b.getIntNTy(bits))); }
V MathBuilder::clz(V a) {
    return wrap(b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a.v, b.getFalse()));
}
V MathBuilder::fshl(V hi, V lo, V s) {
    return wrap(b.CreateIntrinsic(llvm::Intrinsic::fshl, {hi.type()}, {hi.v, lo.v, s.v}));
}
V MathBuilder::pow2i(V n) { return as_float((n + exponent_bias()) << mantissa_bits()); }
V MathBuilder::signbit(V x) { return as_int(x) < 0; }
std::vector<V> MathBuilder::if_else_values(V cond, llvm::function_ref<std::vector<V>()> then_fn,
                                           llvm::function_ref<std::vector<V>()> else_fn) {
    llvm::Function *fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext &ctx = b.getContext();
    auto *then_bb = llvm::BasicBlock::Create(ctx, "math.then", fn);
    auto *else_bb = llvm::BasicBlock::Create(ctx, "math.else", fn);
    auto *join_bb = llvm::BasicBlock::Create(ctx, "math.join", fn);
    b.CreateCondBr(cond.v, then_bb, else_bb);
    b.SetInsertPoint(then_bb);
    std::vector<V> tv = then_fn();
    llvm::BasicBlock *then_end = b.GetInsertBlock();
    b.CreateBr(join_bb);
    b.SetInsertPoint(else_bb);
    std::vector<V> ev = else_fn();
    llvm::BasicBlock *else_end = b.GetInsertBlock();
    b.CreateBr(join_bb);
    b.SetInsertPoint(join_bb);
    EMBER_ASSERT(tv.size() == ev.size(), "if_else_values arms of different arity");
    std::vector<V> out;
    for (size_t k = 0; k < tv.size(); ++k) {
        EMBER_ASSERT(tv[k].type() == ev[k].type(), "if_else_values arms of different types");
        llvm::PHINode *phi = b.CreatePHI(tv[k].type(), 2);
        phi->addIncoming(tv[k].v, then_end);
        phi->addIncoming(ev[k].v, else_end);
        out.push_back(wrap(phi));
    }
    return out;
}

} // namespace ember::detail::math
