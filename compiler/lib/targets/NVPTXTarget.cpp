/// \file
/// The NVPTX back end: kernels become `.entry` functions of PTX text for one `sm_XX`.
#include "TargetImpl.h"

#include "../LLVMError.h"

#ifdef EMBER_WITH_NVPTX

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/IntegerDivision.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::detail {
namespace {

constexpr const char *nvptx_triple = "nvptx64-nvidia-cuda";

/// fmod(x, y) by shift-and-subtract on floats: s runs down from the largest y * 2^k not above
/// |x| to |y|, and |x| - s is taken whenever |x| >= s. Every step is exact (doubling and halving
/// |y| stay in range; the subtraction has s <= |x| < 2s, Sterbenz), so the result is the exact
/// remainder, with the sign of x. NaN when x is NaN or infinite or y is NaN or zero; x itself
/// when |x| < |y| (this covers an infinite y and x = +-0). At most ~280 (f32) or ~2100 (f64)
/// iterations, the span of the exponents.
llvm::Value *exact_fmod(llvm::IRBuilderBase &b, llvm::Value *x, llvm::Value *y) {
    using namespace llvm;
    LLVMContext &c = b.getContext();
    Function *fn = b.GetInsertBlock()->getParent();
    Type *ty = x->getType();
    Value *ax = b.CreateUnaryIntrinsic(Intrinsic::fabs, x);
    Value *ay = b.CreateUnaryIntrinsic(Intrinsic::fabs, y);
    // Unordered predicates are also true for NaN operands.
    Value *invalid = b.CreateOr(b.CreateFCmpUGE(ax, ConstantFP::getInfinity(ty)),
                                b.CreateFCmpULE(ay, ConstantFP::getZero(ty)));
    Value *trivial = b.CreateSelect(invalid, ConstantFP::getNaN(ty), x, "fmod.trivial");
    Value *done_early = b.CreateOr(invalid, b.CreateFCmpOLT(ax, ay));
    BasicBlock *entry = b.GetInsertBlock();
    BasicBlock *grow = BasicBlock::Create(c, "fmod.grow", fn);
    BasicBlock *shrink = BasicBlock::Create(c, "fmod.shrink", fn);
    BasicBlock *done = BasicBlock::Create(c, "fmod.done", fn);
    b.CreateCondBr(done_early, done, grow);

    b.SetInsertPoint(grow); // s = the largest |y| * 2^k <= |x|
    PHINode *s = b.CreatePHI(ty, 2, "fmod.s");
    s->addIncoming(ay, entry);
    Value *twice = b.CreateFAdd(s, s);
    s->addIncoming(twice, grow);
    b.CreateCondBr(b.CreateFCmpOLE(twice, ax), grow, shrink);

    b.SetInsertPoint(shrink);
    PHINode *step = b.CreatePHI(ty, 2, "fmod.step");
    PHINode *rest = b.CreatePHI(ty, 2, "fmod.rest");
    step->addIncoming(s, grow);
    rest->addIncoming(ax, grow);
    // One instruction per statement: argument order is the host compiler's choice.
    Value *fits = b.CreateFCmpOGE(rest, step);
    Value *less = b.CreateFSub(rest, step);
    Value *next = b.CreateSelect(fits, less, rest);
    Value *half = b.CreateFMul(step, ConstantFP::get(ty, 0.5));
    step->addIncoming(half, shrink);
    rest->addIncoming(next, shrink);
    Value *result = b.CreateBinaryIntrinsic(Intrinsic::copysign, next, x);
    b.CreateCondBr(b.CreateFCmpOEQ(step, ay), done, shrink);

    b.SetInsertPoint(done);
    PHINode *out = b.CreatePHI(ty, 2, "fmod");
    out->addIncoming(trivial, entry);
    out->addIncoming(result, shrink);
    return out;
}

/// [Note] ptxas and integer negation, abs and 16-bit min/max
/// ==========================================================
/// ptxas (CUDA 13.0, sm_90; nvcc's own output is affected the same way) miscompiles these forms
/// of integer code that LLVM emits, and crashes on one f16 form; each was found by ember-difftest
/// and measured on an H200 against a host reference over random and edge values (INT_MIN,
/// INT_MAX, 0, +-1, +-2):
/// - **A negation feeding a min/max tree.** `neg.s32 a, x; neg.s32 b, y; neg.s32 c, z;
///   min.s32 t, a, b; min.s32 r, t, c` becomes a 3-input `VIMNMX3` that drops the negation of
///   one operand: min(-x, -y, -z) comes out as min(-x, y, -z). Every min/max tree of 4 or more
///   negated lanes (`reduce_min(-v)`, `reduce_max(-abs(v))`) is wrong on about half the inputs.
///   `sub.s32 a, 0, x`, `mul.lo.s32 a, x, -1` and a zero ptxas can fold fail the same way;
///   `not.b32` + `add.s32 1` is right.
/// - **abs treated as non-negative.** abs(INT_MIN) is INT_MIN in PTX (and in ember's IR), but
///   ptxas takes `abs.s32`'s result as non-negative: `rem.s32` of it becomes an unsigned
///   remainder (abs(INT_MIN) % 7 gives 2, not -2), and `setp.lt.s32 abs(x), 0` is folded to
///   false. `setp.lt` + `not` + `add 1` + `selp` is right, and so is the form with `neg`.
/// - **16-bit.** A negation or abs whose result is then sign-extended is widened first:
///   `neg.s16 %b, %a; cvt.s32.s16 %r, %b` becomes a 32-bit negation of the sign-extended
///   operand, so -(-32768) gives 32768 (likewise `abs.s16`, `cvt.s64.s16`). And `min`/`max` of
///   16 bits followed by a comparison become a packed `VIMNMX.U16x2`/`.S16x2` with a predicate
///   result that reads the register's upper half, which ptxas left holding garbage: 1 / -(2 * x)
///   in u16 gave 1 for every x (`max.u16 d, x, 1; setp.eq.s16 p, d, 1`), and `a % max(b, c)`
///   in i16 went wrong the same way.
/// - **A 64-bit subtraction of two shifts of one value.** (x >> 63) - (x << 1) came out as if
///   it were a rotate, wrong for 60,944 of 65,536 values, and (x << 1) - (x >> 63) likewise;
///   other shift amounts, x + x for x << 1 and 32 bits came out right (`rewrite_sub64`).
/// - **A crash.** ptxas itself crashes (a segfault, on about half the runs: in the driver's JIT
///   that kills the process) on a scalar `max.f16` whose result, packed with another half, feeds
///   a `max.f16x2` (found by ember-difftest; the kernel reduced to 17 PTX instructions crashed
///   ptxas 12 times in 24 runs). Scalar `min.f16` and `max.f16` are done in f32 between `cvt`s
///   (exact: the result is one of the operands), and that PTX did not crash in 64 runs; the
///   packed forms stay.
/// LLVM's instruction selection makes these instructions from many IR shapes (a `neg` from
/// `sub 0, x`, from multiplications by negative powers of two, from divisions by negative
/// constants), so the fix works on the PTX text itself (`patch_ptx`), in the assembly stage and
/// in the binary alike: every `neg.s16/s32/s64` becomes `not` + `add 1`; every `abs.s16/s32/s64`
/// becomes `setp.lt` + `not` + `add 1` + `selp`; every `min`/`max` of `.s16`/`.u16` is done in 64
/// bits between `cvt`s (32 bits would meet [Note] ptxas and 32-bit min/max of negations), every
/// scalar `min`/`max` of `.f16` in f32, and a `sub.s64` of a left and a right shift of one
/// register becomes `not` + `add 1` + `add`. The cost is an instruction or
/// three on each; test/lit/eir/ptxas_workarounds.eir pins the forms, BuiltinsTest runs them on
/// the GPU.

/// [Note] fmod of operands that become constants
/// ================================================
/// NVPTX's own lowering of `frem` is not exact, so fmod is exact_fmod's loop. Where both operands
/// become constants only once optimised (`min(inf, 4673.3066) % 7505.544`), LLVM leaves that loop
/// over constants in place and the driver's JIT evaluates it: `abs(65520.0 - r)`, an exact tie
/// between two floats, came out of the GPU as the odd neighbour, 0x476DAEB1, where
/// round-to-nearest-even gives 0x476DAEB2 (found by ember-difftest on an H200; the toolkit's
/// `ptxas -c` folds the same PTX to 0x476DAEB2). So fmod is a branch on `llvm.is.constant` of both
/// operands: where the optimiser has made both constants, the branch takes `frem`, which LLVM folds
/// exactly (APFloat's mod is IEEE fmod), and the loop is deleted; anywhere else the loop stays and
/// the `frem` is deleted. An earlier form, a pure call expanded into the loop after optimisation,
/// made kernels that never finished on the GPU (2 of 50,000 random kernels; with the loop built
/// before optimisation, as here, both finished and agreed), so the loop is built where the
/// operation is. test/lit/eir/fmod_nvptx.eir pins both outcomes.
llvm::Value *fmod_folding_constants(llvm::IRBuilderBase &b, llvm::Value *x, llvm::Value *y) {
    llvm::LLVMContext &c = b.getContext();
    llvm::Function *fn = b.GetInsertBlock()->getParent();
    llvm::Module *m = fn->getParent();
    llvm::Type *ty = x->getType();
    llvm::Function *is_constant = llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::is_constant, {ty});
    // One instruction per statement: argument order is the host compiler's choice.
    llvm::Value *x_constant = b.CreateCall(is_constant, {x});
    llvm::Value *y_constant = b.CreateCall(is_constant, {y});
    llvm::Value *both = b.CreateAnd(x_constant, y_constant);
    llvm::BasicBlock *folded = llvm::BasicBlock::Create(c, "fmod.constant", fn);
    llvm::BasicBlock *looped = llvm::BasicBlock::Create(c, "fmod.loop", fn);
    llvm::BasicBlock *join = llvm::BasicBlock::Create(c, "fmod.join", fn);
    b.CreateCondBr(both, folded, looped);
    b.SetInsertPoint(folded);
    llvm::Value *constant = b.CreateFRem(x, y);
    b.CreateBr(join);
    b.SetInsertPoint(looped);
    llvm::Value *loop = exact_fmod(b, x, y);
    llvm::BasicBlock *loop_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    llvm::PHINode *r = b.CreatePHI(ty, 2, "fmod");
    r->addIncoming(constant, folded);
    r->addIncoming(loop, loop_end);
    return r;
}

/// [Note] LLVM 19's NVPTX back end and sitofp of i1
/// ==================================================
/// `sitofp i1 %c` is -1.0 when %c is true. LLVM 19's NVPTX instruction selection folds it to a
/// select of -1.0 when %c is a comparison, but any other bit (an xor or or of comparisons, one
/// computed in another block, an argument read from memory) goes through its pattern for
/// sitofp of a predicate, `selp.u32 %r, 1, 0, %p` + `cvt.rn.f64.s32 %fd, %r`: +1.0. `llc`
/// alone shows it (`define void @k(i1 %c)` storing `sitofp i1 %c to double`). ember-difftest
/// found it on the GPU in 6 of the last 16 disagreeing kernels: LLVM's combiner makes
/// `-zext(b)` into `sext(b)` and `sitofp(sext(b))` into `sitofp i1`, so a bool cast to an
/// integer, negated and cast to a float meets it (f16, bf16, f32 and f64 alike). A
/// `select %c, -1.0, 0.0` is selected right (`selp`), so the NVPTX target turns every `sitofp`
/// of i1 (or of a vector of i1) into that select after the optimisation pipeline
/// (`prepare_codegen`), where no later pass turns it back. test/lit/eir/llvm_fold_workarounds.eir
/// pins the form; BuiltinsTest runs it.
void select_for_sitofp_i1(llvm::Module &m) {
    auto found = instructions_of<llvm::SIToFPInst>(
        m, [](llvm::SIToFPInst &c) { return c.getSrcTy()->isIntOrIntVectorTy(1); });
    for (llvm::SIToFPInst *c : found) {
        llvm::IRBuilder<> b(c);
        llvm::Type *ty = c->getType();
        llvm::Value *r = b.CreateSelect(c->getOperand(0), llvm::ConstantFP::get(ty, -1.0),
                                        llvm::ConstantFP::getZero(ty));
        r->takeName(c);
        c->replaceAllUsesWith(r);
        c->eraseFromParent();
    }
}

/// [Note] wgmma and 64-bit division
/// =================================
/// PTX has `div.s64` and `rem.u64` (and `rem.u16`, which LLVM makes of a 64-bit remainder of
/// small values), but the CUDA driver's JIT compiles them to calls of a helper
/// (`__cuda_sm20_div_s64`, ...), and a function with any call gets its wgmmas
/// serialised: each `wgmma.mma_async` waits until the one before it has completed
/// (`WARPGROUP.DEPBAR.LE gsb0, 0x0` after each HGMMA), so the tensor cores idle between them and
/// no group overlaps the next slice's copies. The JIT's log says "wgmma.mma_async instructions
/// are serialized due to the presence of Extern calls"; the offline ptxas inlines the helper and
/// does not, so only the driver's SASS shows it. examples/gemm_wgmma.h's tile arithmetic (a few
/// 64-bit divisions per tile, outside the loop) was enough: the whole kernel ran serialised.
/// In a module with a wgmma, each 64-bit division or remainder whose divisor is not a constant
/// (LLVM makes those multiplications) becomes a 32-bit one where both operands fit in 32 bits
/// (`div.s32`/`div.u32` are inline instructions) and, in the branch that is left, LLVM's own
/// shift-and-subtract expansion (`expandDivision`, a loop without calls). Signed operands take
/// the 32-bit path only when the dividend is not -2^31 (whose quotient by -1 does not fit); the
/// code generator has already made every divisor nonzero and every signed division defined
/// ([Note] IR semantics), so both paths compute the same. 8- and 16-bit divisions are done in
/// 32 bits (extended as their signedness says). Vector lanes are divided one by one.
/// test/lit/eir/wgmma_tma.eir pins the form; WarpgroupTest runs the divisions against the host.
bool uses_wgmma(const llvm::Module &m) {
    for (const llvm::Function &f : m)
        for (const llvm::BasicBlock &bb : f)
            for (const llvm::Instruction &i : bb)
                if (const auto *call = llvm::dyn_cast<llvm::CallInst>(&i))
                    if (const auto *asm_ = llvm::dyn_cast<llvm::InlineAsm>(
                            call->getCalledOperand()))
                        if (asm_->getAsmString().find("wgmma.mma_async") != std::string::npos)
                            return true;
    return false;
}

void inline_64bit_division(llvm::Module &m) {
    if (!uses_wgmma(m)) return;
    auto is_div = [](const llvm::Instruction &i) {
        switch (i.getOpcode()) {
        case llvm::Instruction::SDiv:
        case llvm::Instruction::UDiv:
        case llvm::Instruction::SRem:
        case llvm::Instruction::URem: {
            const unsigned bits = i.getType()->getScalarType()->getIntegerBitWidth();
            return bits == 64 || bits == 16 || bits == 8;
        }
        default: return false;
        }
    };
    // Vectors first: lane by lane.
    for (llvm::BinaryOperator *op : instructions_of<llvm::BinaryOperator>(
             m, [&](llvm::BinaryOperator &i) { return is_div(i) && i.getType()->isVectorTy(); })) {
        llvm::IRBuilder<> b(op);
        auto *vt = llvm::cast<llvm::FixedVectorType>(op->getType());
        llvm::Value *r = llvm::PoisonValue::get(vt);
        for (unsigned l = 0; l < vt->getNumElements(); ++l)
            r = b.CreateInsertElement(
                r,
                b.CreateBinOp(op->getOpcode(),
                              b.CreateExtractElement(op->getOperand(0), uint64_t(l)),
                              b.CreateExtractElement(op->getOperand(1), uint64_t(l))),
                uint64_t(l));
        r->takeName(op);
        op->replaceAllUsesWith(r);
        op->eraseFromParent();
    }
    for (llvm::BinaryOperator *op :
         instructions_of<llvm::BinaryOperator>(m, [&](llvm::BinaryOperator &i) {
             return is_div(i) && !llvm::isa<llvm::Constant>(i.getOperand(1));
         })) {
        const bool is_signed = op->getOpcode() == llvm::Instruction::SDiv ||
                               op->getOpcode() == llvm::Instruction::SRem;
        llvm::IRBuilder<> b(op);
        llvm::Value *x = op->getOperand(0), *y = op->getOperand(1);
        llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
        if (!op->getType()->isIntegerTy(64)) { // 8 or 16 bits: in 32
            auto wide = [&](llvm::Value *v) {
                return is_signed ? b.CreateSExt(v, i32) : b.CreateZExt(v, i32);
            };
            llvm::Value *r = b.CreateTrunc(b.CreateBinOp(op->getOpcode(), wide(x), wide(y)),
                                           op->getType());
            r->takeName(op);
            op->replaceAllUsesWith(r);
            op->eraseFromParent();
            continue;
        }
        auto fits = [&](llvm::Value *v) {
            llvm::Value *t = b.CreateTrunc(v, i32);
            return b.CreateICmpEQ(is_signed ? b.CreateSExt(t, i64) : b.CreateZExt(t, i64), v);
        };
        llvm::Value *narrow = b.CreateAnd(fits(x), fits(y));
        if (is_signed) narrow = b.CreateAnd(narrow, b.CreateICmpNE(x, b.getInt64(INT32_MIN)));
        llvm::Instruction *then_term = nullptr, *else_term = nullptr;
        llvm::SplitBlockAndInsertIfThenElse(narrow, op, &then_term, &else_term);
        b.SetInsertPoint(then_term);
        llvm::Value *small = b.CreateBinOp(op->getOpcode(), b.CreateTrunc(x, i32),
                                           b.CreateTrunc(y, i32));
        small = is_signed ? b.CreateSExt(small, i64) : b.CreateZExt(small, i64);
        b.SetInsertPoint(else_term);
        auto *wide = llvm::cast<llvm::BinaryOperator>(b.CreateBinOp(op->getOpcode(), x, y));
        llvm::BasicBlock *join = op->getParent();
        b.SetInsertPoint(join, join->getFirstInsertionPt());
        llvm::PHINode *phi = b.CreatePHI(i64, 2);
        phi->addIncoming(small, then_term->getParent());
        phi->addIncoming(wide, else_term->getParent());
        phi->takeName(op);
        op->replaceAllUsesWith(phi);
        op->eraseFromParent();
        // The expansion splits the else block; the phi's edge comes from where it ends.
        if (wide->getOpcode() == llvm::Instruction::SDiv ||
            wide->getOpcode() == llvm::Instruction::UDiv)
            llvm::expandDivision(wide);
        else
            llvm::expandRemainder(wide);
        for (llvm::BasicBlock *pred : llvm::predecessors(join))
            if (pred != then_term->getParent()) phi->setIncomingBlock(1, pred);
    }
}

/// [Note] LLVM 19's NVPTX back end and compares of 16-bit pairs
/// ================================================================
/// A comparison of two-lane vectors of 16-bit lanes (i16x2, f16x2, bf16x2) whose result is
/// sign-extended back to 16-bit lanes aborts LLVM 19's NVPTX instruction selection ("Cannot
/// select: v2i16 = setcc", for every sm): the DAG combiner folds `sext(setcc)` into a setcc with
/// a v2i16 result, which the back end has no pattern for. `llc` alone shows it on `icmp sgt
/// <2 x i16> %x, %y` + `sext <2 x i1> ... to <2 x i16>`; LLVM makes that sext out of a zext
/// negated, and out of `~(x >> 15)`, and ember-difftest met it (one kernel of 80,000 aborted the
/// compiler; f16x2 and bf16x2 compares fail the same way, 4- and 8-lane vectors do not). Before
/// code generation such a comparison is done lane by lane (two scalar compares put into a
/// <2 x i1>), which the combiner leaves alone; PTX has no packed integer compare, so the code is
/// the same two `setp` (a packed f16x2 `setp` becomes two). test/lit/eir/llvm_fold_workarounds.eir
/// pins the form; SimdTest runs it.
void scalar_compares_of_16bit_pairs(llvm::Module &m) {
    auto found = instructions_of<llvm::CmpInst>(m, [](llvm::CmpInst &c) {
        auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(c.getOperand(0)->getType());
        return vt && vt->getNumElements() == 2 && vt->getScalarSizeInBits() == 16;
    });
    for (llvm::CmpInst *c : found) {
        llvm::IRBuilder<> b(c);
        llvm::Value *r = llvm::PoisonValue::get(c->getType());
        for (unsigned lane = 0; lane < 2; ++lane) {
            llvm::Value *x = b.CreateExtractElement(c->getOperand(0), lane);
            llvm::Value *y = b.CreateExtractElement(c->getOperand(1), lane);
            llvm::Value *bit = c->isFPPredicate() ? b.CreateFCmp(c->getPredicate(), x, y)
                                                  : b.CreateICmp(c->getPredicate(), x, y);
            if (auto *fc = llvm::dyn_cast<llvm::FCmpInst>(bit)) fc->copyFastMathFlags(c);
            r = b.CreateInsertElement(r, bit, lane);
        }
        r->takeName(c);
        c->replaceAllUsesWith(r);
        c->eraseFromParent();
    }
}

/// [Note] LLVM 19's NVPTX back end and half vectors built from one lane
/// ======================================================================
/// LLVM legalises a vector of f16 or bf16 into two-lane pieces; where only one lane of a piece
/// is known (a scalar inserted into a 16-lane vector of which one lane is read later), the piece
/// is built by `scalar_to_vector`, for which LLVM 19's NVPTX back end has no pattern: "Cannot
/// select: v2bf16 = scalar_to_vector", an abort of the process, when the piece feeds packed
/// arithmetic (`llc` alone shows it: `insertelement <16 x bfloat> %v, bfloat %s, i64 8`, an
/// `fsub` of the vector, a compare, lane 8 read; f16 likewise). ember-difftest met it (one
/// kernel of 50,000). Before code generation the float arithmetic and compares of f16 and bf16
/// vectors are done lane by lane (extract, scalar operation, insert), which builds no such
/// piece. The PTX is what the back end made anyway after [Note] The driver's JIT and halves
/// repacked between packed operations: scalar instructions per lane. SimdTest runs it;
/// test/lit/eir/llvm_fold_workarounds.eir pins the form.
void scalar_half_vector_arithmetic(llvm::Module &m) {
    auto half_vector = [](llvm::Type *t) {
        auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
        return vt && (vt->getElementType()->isHalfTy() || vt->getElementType()->isBFloatTy());
    };
    auto found = instructions_of<llvm::Instruction>(m, [&](llvm::Instruction &i) {
        if (llvm::isa<llvm::FCmpInst>(i)) return half_vector(i.getOperand(0)->getType());
        return (llvm::isa<llvm::BinaryOperator>(i) || llvm::isa<llvm::UnaryOperator>(i)) && half_vector(i.getType());
    });
    for (llvm::Instruction *i : found) {
        llvm::IRBuilder<> b(i);
        const unsigned lanes = llvm::cast<llvm::FixedVectorType>(i->getOperand(0)->getType())->getNumElements();
        llvm::Value *r = llvm::PoisonValue::get(i->getType());
        for (unsigned lane = 0; lane < lanes; ++lane) {
            llvm::Value *x = b.CreateExtractElement(i->getOperand(0), lane);
            llvm::Value *v;
            if (auto *c = llvm::dyn_cast<llvm::FCmpInst>(i)) {
                v = b.CreateFCmp(c->getPredicate(), x, b.CreateExtractElement(c->getOperand(1), lane));
            } else if (auto *u = llvm::dyn_cast<llvm::UnaryOperator>(i)) {
                v = b.CreateUnOp(u->getOpcode(), x);
            } else {
                v = b.CreateBinOp(llvm::cast<llvm::BinaryOperator>(i)->getOpcode(), x,
                                  b.CreateExtractElement(i->getOperand(1), lane));
            }
            if (auto *vi = llvm::dyn_cast<llvm::Instruction>(v); vi && llvm::isa<llvm::FPMathOperator>(vi))
                vi->copyFastMathFlags(i);
            r = b.CreateInsertElement(r, v, lane);
        }
        r->takeName(i);
        i->replaceAllUsesWith(r);
        i->eraseFromParent();
    }
}

/// [Note] ptxas and copysign
/// ===========================
/// LLVM 19 lowers copysign(x, s) for NVPTX to `abs a, x; neg n, a; selp r, n, a, p` (p: the sign
/// bit of s). ptxas (CUDA 13.0, sm_90) makes that an abs into r and a predicated overwrite of r,
/// and where the abs is read elsewhere too it may read r for it: in
/// `floor(x) + abs(x) + (h + copysign(x, s))` on bf16 it paired the two additions into one packed
/// `HFMA2.BF16_V2` whose abs(x) lane read the register the copysign had overwritten, so abs(x)
/// came out negative (40 of 200 results wrong; found by ember-difftest on an H200, `cuobjdump
/// -sass` shows the shared register). The abs done in f32 or as an `and`, with the negation an
/// `or` of the sign bit, kept the shared register and the wrong results. So before code
/// generation every copysign becomes its meaning on the bits, (x & ~sign) | (s & sign), which
/// leaves no abs and no `selp` to share; the kernel agrees on the GPU since.
/// test/lit/eir/ptxas_workarounds.eir pins the form; BuiltinsTest runs it.
void copysign_on_bits(llvm::Module &m) {
    auto found = instructions_of<llvm::IntrinsicInst>(
        m, [](llvm::IntrinsicInst &i) { return i.getIntrinsicID() == llvm::Intrinsic::copysign; });
    for (llvm::IntrinsicInst *c : found) {
        llvm::IRBuilder<> b(c);
        llvm::Type *ty = c->getType();
        const unsigned bits = ty->getScalarSizeInBits();
        llvm::Type *ity = llvm::Type::getIntNTy(m.getContext(), bits);
        if (auto *vt = llvm::dyn_cast<llvm::VectorType>(ty)) ity = llvm::VectorType::get(ity, vt->getElementCount());
        const llvm::APInt sign = llvm::APInt::getSignMask(bits);
        llvm::Value *mag = b.CreateAnd(b.CreateBitCast(c->getArgOperand(0), ity), llvm::ConstantInt::get(ity, ~sign));
        llvm::Value *sgn = b.CreateAnd(b.CreateBitCast(c->getArgOperand(1), ity), llvm::ConstantInt::get(ity, sign));
        llvm::Value *r = b.CreateBitCast(b.CreateOr(mag, sgn), ty);
        r->takeName(c);
        c->replaceAllUsesWith(r);
        c->eraseFromParent();
    }
}

/// [Note] LLVM 19's NVPTX back end and bf16 constants passed to calls
/// ====================================================================
/// A call to a device function LLVM did not inline (a large one, or a huge one, `is_huge`) that
/// passes a constant scalar bf16 argument crashes LLVM 19's NVPTX instruction selection (a
/// segfault in InstrEmitter::AddOperand; `llc` alone shows it on `call i64 @f(bfloat 0xR3F80)`;
/// f16 constants, bf16 vectors and bf16 registers are fine), and so does an argument the
/// selector folds to a constant (`ceil(0xR42A2)`). ember-difftest found both (two kernels of 48,000
/// crashed the compiler). Before code generation every scalar bf16 argument of a call becomes
/// its bits moved through a one-instruction inline asm (`mov.b16`) and bitcast back to bf16,
/// which the selector cannot fold into a constant (a `freeze` or a plain bitcast it would).
/// DeviceFunctionTest calls a 250-branch function with bf16 constants; lit's
/// bf16_call_argument.eir pins the form.
void opaque_bf16_call_constants(llvm::Module &m) {
    auto calls = instructions_of<llvm::CallBase>(m, [](llvm::CallBase &c) {
        return !llvm::isa<llvm::IntrinsicInst>(c) && !c.isInlineAsm() &&
               llvm::any_of(c.args(), [](const llvm::Use &a) { return a->getType()->isBFloatTy(); });
    });
    std::vector<std::pair<llvm::CallBase *, unsigned>> found;
    for (llvm::CallBase *c : calls)
        for (unsigned k = 0; k < c->arg_size(); ++k)
            if (c->getArgOperand(k)->getType()->isBFloatTy()) found.push_back({c, k});
    for (auto [c, k] : found) {
        llvm::IRBuilder<> b(c);
        llvm::Value *bits = b.CreateBitCast(c->getArgOperand(k), b.getInt16Ty());
        auto *asm_ty = llvm::FunctionType::get(b.getInt16Ty(), {b.getInt16Ty()}, false);
        llvm::Value *moved = b.CreateCall(llvm::InlineAsm::get(asm_ty, "mov.b16 $0, $1;", "=h,h", false), {bits});
        c->setArgOperand(k, b.CreateBitCast(moved, b.getBFloatTy()));
    }
}

/// [Note] Float to integer conversions on NVPTX
/// =============================================
/// ember's casts from a float to an integer truncate toward zero, saturate to the integer's
/// range and give 0 for NaN: `llvm.fptosi.sat`/`llvm.fptoui.sat`. LLVM's NVPTX back end expands
/// them into `setp.nan` + `max` + `min` + `cvt.rzi` + `selp`, where PTX's `cvt.rzi` already
/// clamps to the destination's range (PTX ISA, cvt). The clamp pair is what ptxas (CUDA 13.0,
/// sm_90) then miscompiles: it reorders `max(min(x, 1.0), 0.0)`, where the `min` is the user's
/// and the `max` the expansion's, into `min(max(x, 0.0), 1.0)`, which differs when x is NaN
/// ([Note] ptxas and float clamps). So after optimisation the NVPTX target turns each one into
/// the NVVM conversion intrinsic (`llvm.nvvm.d2i.rz` and its siblings: `cvt.rzi.s32.f64`), 32
/// or 64 bits wide, and a select of 0 where the operand is NaN: `cvt.rzi` gives the smallest
/// integer's bits for NaN (0x80000000, 0x8000000000000000; measured on an H200 for every
/// width). An 8- or 16-bit result is the 32-bit one clamped in integers and truncated; f16 and
/// bf16 are widened to f32 first (exact). Vectors go lane by lane, as the back end would. Three
/// instructions (four or five for 8 and 16 bits) where the expansion had five, and no float
/// clamp. BuiltinsTest checks NaN, infinities and both ends of each range on the GPU.
void native_float_to_int(llvm::Module &m) {
    auto found = instructions_of<llvm::IntrinsicInst>(m, [](llvm::IntrinsicInst &c) {
        return c.getIntrinsicID() == llvm::Intrinsic::fptosi_sat || c.getIntrinsicID() == llvm::Intrinsic::fptoui_sat;
    });
    for (llvm::IntrinsicInst *c : found) {
        const bool is_signed = c->getIntrinsicID() == llvm::Intrinsic::fptosi_sat;
        llvm::IRBuilder<> b(c);
        auto lane = [&](llvm::Value *x, llvm::IntegerType *to) -> llvm::Value * {
            if (x->getType()->isHalfTy() || x->getType()->isBFloatTy()) x = b.CreateFPExt(x, b.getFloatTy());
            const bool dbl = x->getType()->isDoubleTy();
            const unsigned bits = to->getBitWidth();
            using I = llvm::Intrinsic::ID;
            I id = bits == 64 ? (dbl ? (is_signed ? llvm::Intrinsic::nvvm_d2ll_rz : llvm::Intrinsic::nvvm_d2ull_rz)
                                     : (is_signed ? llvm::Intrinsic::nvvm_f2ll_rz : llvm::Intrinsic::nvvm_f2ull_rz))
                              : (dbl ? (is_signed ? llvm::Intrinsic::nvvm_d2i_rz : llvm::Intrinsic::nvvm_d2ui_rz)
                                     : (is_signed ? llvm::Intrinsic::nvvm_f2i_rz : llvm::Intrinsic::nvvm_f2ui_rz));
            llvm::Value *r = b.CreateIntrinsic(id, {}, {x});
            // cvt.rzi gives INT_MIN's bits for NaN (every width); 0 is ember's answer.
            r = b.CreateSelect(b.CreateFCmpUNO(x, x), llvm::ConstantInt::get(r->getType(), 0), r);
            if (bits >= 32) return r;
            if (is_signed) {
                const llvm::APInt lo = llvm::APInt::getSignedMinValue(bits).sext(32);
                const llvm::APInt hi = llvm::APInt::getSignedMaxValue(bits).sext(32);
                r = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, r, b.getInt(lo));
                r = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, r, b.getInt(hi));
            } else {
                r = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, r, b.getInt(llvm::APInt::getMaxValue(bits).zext(32)));
            }
            return b.CreateTrunc(r, to);
        };
        llvm::Value *x = c->getArgOperand(0);
        llvm::Value *r = nullptr;
        if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(c->getType())) {
            auto *to = llvm::cast<llvm::IntegerType>(vt->getElementType());
            r = llvm::PoisonValue::get(vt);
            for (unsigned k = 0; k < vt->getNumElements(); ++k)
                r = b.CreateInsertElement(r, lane(b.CreateExtractElement(x, k), to), k);
        } else {
            r = lane(x, llvm::cast<llvm::IntegerType>(c->getType()));
        }
        r->takeName(c);
        c->replaceAllUsesWith(r);
        c->eraseFromParent();
    }
}

std::string trim(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return std::string(v);
}

/// A 16-bit immediate operand as the 32-bit operand of the widened min/max: its low 16 bits,
/// sign- or zero-extended as the instruction's type says. "" when `text` is not a number.
std::string widen_immediate16(const std::string &text, bool is_signed) {
    if (text.empty() || text[0] == '%') return "";
    errno = 0;
    char *end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 0);
    if (errno != 0 || end == text.c_str() || *end != '\0') return "";
    const uint16_t low = static_cast<uint16_t>(static_cast<unsigned long long>(v));
    const long long widened = is_signed ? static_cast<long long>(static_cast<int16_t>(low)) : static_cast<long long>(low);
    return std::to_string(widened);
}

/// [Note] ptxas and predicates kept across a 64-bit division call
/// ===============================================================
/// ember's runtime links a kernel's PTX into a cubin with the driver's linker (cuLink, for the
/// compile cache's image level), a relocatable compile in which ptxas (CUDA 13.0, sm_90) makes each
/// 64-bit `div`/`rem` an ABI call (`__cuda_sm20_rem_u64`: the dividend in R4:R5, the result in the
/// same registers). Where a predicate computed from the dividend before the call is needed after it,
/// only the result's low word is used, and registers are scarce, ptxas computed the predicate again
/// after the call from R5, which the call had overwritten with the result's high word: a `select`
/// on `x < 2^57` of `x % y` gave 0 (found by ember-difftest; a probe on an H100 and an H200 measured
/// 24,595 to 64,823 of 65,536 inputs wrong for `rem`/`div`, `.u64`/`.s64`, through cuLink, and none
/// through cuModuleLoadDataEx, the whole-program compile). With the whole 64-bit result of the call
/// used, the probe measured every form right: `rem` becomes `div` + `mul.lo` + `sub` (a - a / b * b),
/// and `div` adds 1 where a - q * b == b, which never holds (the remainder is smaller than b; ember's
/// IR never divides by zero or INT_MIN by -1 here: the code generator selects a safe divisor).
/// About five instructions beside a call of some seventy. test/lit/eir/ptxas_workarounds.eir pins
/// the forms. (Loading PTX whole-program would avoid the relocatable compile and its ABI calls,
/// but the compile cache would lose the cubin it keeps; the relocatable compile is what runs.)

/// The replacement of one PTX instruction (`op dst, src[, src2]`), or "" to keep it.
std::string rewrite_instruction(const std::string &op, const std::vector<std::string> &args, const std::string &indent) {
    auto bits_of = [](const std::string &t) { return t.substr(t.size() - 2); }; // "16", "32" or "64"
    if ((op == "neg.s16" || op == "neg.s32" || op == "neg.s64") && args.size() == 2) {
        const std::string n = bits_of(op);
        // dst may be src: not reads src before add writes dst.
        return indent + "// " + op + " as not + add: ember's [Note] ptxas and integer negation, abs and 16-bit min/max\n" +
               indent + "not.b" + n + " \t" + args[0] + ", " + args[1] + ";\n" +
               indent + "add.s" + n + " \t" + args[0] + ", " + args[0] + ", 1;";
    }
    if ((op == "abs.s16" || op == "abs.s32" || op == "abs.s64") && args.size() == 2) {
        const std::string n = bits_of(op);
        const std::string p = "%abs" + n + "_p", t = "%abs" + n + "_t";
        return indent + "// " + op + " as setp + not + add + selp: ember's [Note] ptxas and integer negation, abs and 16-bit min/max\n" +
               indent + "{\n" + indent + ".reg .pred " + p + ";\n" + indent + ".reg .b" + n + " " + t + ";\n" +
               indent + "setp.lt.s" + n + " \t" + p + ", " + args[1] + ", 0;\n" +
               indent + "not.b" + n + " \t" + t + ", " + args[1] + ";\n" +
               indent + "add.s" + n + " \t" + t + ", " + t + ", 1;\n" +
               indent + "selp.b" + n + " \t" + args[0] + ", " + t + ", " + args[1] + ", " + p + ";\n" + indent + "}";
    }
    if ((op == "min.s16" || op == "max.s16" || op == "min.u16" || op == "max.u16") && args.size() == 3) {
        const bool is_signed = op[4] == 's';
        // in 64 bits, not 32: [Note] ptxas and 32-bit min/max of negations
        const std::string wide = op.substr(0, 4) + (is_signed ? "s64" : "u64");
        const std::string ext = is_signed ? "cvt.s64.s16" : "cvt.u64.u16";
        std::string out = indent + "// " + op + " in 64 bits: ember's [Note] ptxas and integer negation, abs and 16-bit min/max\n" +
                          indent + "{\n" + indent + ".reg .b64 %mm16_a, %mm16_b;\n";
        std::string operands[2];
        for (int i = 0; i < 2; ++i) {
            const std::string &a = args[1 + i];
            if (!a.empty() && a[0] == '%') {
                operands[i] = i == 0 ? "%mm16_a" : "%mm16_b";
                out += indent + ext + " \t" + operands[i] + ", " + a + ";\n";
            } else {
                operands[i] = widen_immediate16(a, is_signed);
                if (operands[i].empty()) return ""; // an operand this rewrite does not know: keep the line
            }
        }
        out += indent + wide + " \t%mm16_a, " + operands[0] + ", " + operands[1] + ";\n";
        out += indent + "cvt.u16.u64 \t" + args[0] + ", %mm16_a;\n" + indent + "}";
        return out;
    }
    if ((op == "rem.u64" || op == "rem.s64") && args.size() == 3) {
        const std::string div = op == "rem.u64" ? "div.u64" : "div.s64";
        // d may be a or b: both are read before the sub writes d.
        return indent + "// " + op + " as div + mul + sub: ember's [Note] ptxas and predicates kept across a 64-bit division call\n" +
               indent + "{\n" + indent + ".reg .b64 %dr64_q, %dr64_p;\n" +
               indent + div + " \t%dr64_q, " + args[1] + ", " + args[2] + ";\n" +
               indent + "mul.lo.s64 \t%dr64_p, %dr64_q, " + args[2] + ";\n" +
               indent + "sub.s64 \t" + args[0] + ", " + args[1] + ", %dr64_p;\n" + indent + "}";
    }
    if ((op == "div.u64" || op == "div.s64") && args.size() == 3) {
        return indent + "// " + op + " with its high word used: ember's [Note] ptxas and predicates kept across a 64-bit division call\n" +
               indent + "{\n" + indent + ".reg .pred %dr64_e;\n" + indent + ".reg .b64 %dr64_q, %dr64_p, %dr64_r, %dr64_c;\n" +
               indent + op + " \t%dr64_q, " + args[1] + ", " + args[2] + ";\n" +
               indent + "mul.lo.s64 \t%dr64_p, %dr64_q, " + args[2] + ";\n" +
               indent + "sub.s64 \t%dr64_r, " + args[1] + ", %dr64_p;\n" +
               indent + "setp.eq.s64 \t%dr64_e, %dr64_r, " + args[2] + ";\n" +
               indent + "selp.u64 \t%dr64_c, 1, 0, %dr64_e;\n" +
               indent + "add.s64 \t" + args[0] + ", %dr64_q, %dr64_c;\n" + indent + "}";
    }
    if ((op == "min.f16" || op == "max.f16") && args.size() == 3 && !args[1].empty() && args[1][0] == '%' &&
        !args[2].empty() && args[2][0] == '%') {
        const std::string wide = op.substr(0, 4) + "f32";
        return indent + "// " + op + " in f32: ember's [Note] ptxas and integer negation, abs and 16-bit min/max\n" +
               indent + "{\n" + indent + ".reg .f32 %mmh_a, %mmh_b;\n" +
               indent + "cvt.f32.f16 \t%mmh_a, " + args[1] + ";\n" +
               indent + "cvt.f32.f16 \t%mmh_b, " + args[2] + ";\n" +
               indent + wide + " \t%mmh_a, %mmh_a, %mmh_b;\n" +
               indent + "cvt.rn.f16.f32 \t" + args[0] + ", %mmh_a;\n" + indent + "}";
    }
    return "";
}

/// One PTX instruction line: `op args...;` after its indentation, and what follows the `;`.
struct PtxLine {
    std::string_view text, indent, rest;
    std::string op;
    std::vector<std::string> args;
};

PtxLine parse_ptx_line(std::string_view line) {
    PtxLine l;
    l.text = line;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) return l;
    l.indent = line.substr(0, first);
    std::string_view body = line.substr(first);
    const size_t op_end = body.find_first_of(" \t");
    const size_t semi = body.find(';');
    if (op_end == std::string_view::npos || semi == std::string_view::npos || op_end > semi) return l;
    l.op = std::string(body.substr(0, op_end));
    l.rest = body.substr(semi + 1);
    std::string_view operands = body.substr(op_end, semi - op_end);
    for (size_t start = 0;;) {
        const size_t comma = operands.find(',', start);
        l.args.push_back(trim(operands.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return l;
}

/// The registers an instruction line writes: its first operand, each of a `{...}` list, the
/// first operand of a predicated instruction; of a `{ ... }` scope on one line, every register it
/// names (more than it writes, which only makes the rewrites that ask more careful).
std::vector<std::string> written_registers(const PtxLine &l) {
    std::vector<std::string> written;
    if (l.op.empty() || l.args.empty()) return written;
    if (l.op[0] == '{') {
        for (size_t at = l.text.find('%'); at != std::string_view::npos; at = l.text.find('%', at + 1)) {
            size_t end = at + 1;
            while (end < l.text.size() && (std::isalnum(static_cast<unsigned char>(l.text[end])) || l.text[end] == '_'))
                ++end;
            written.emplace_back(l.text.substr(at, end - at));
        }
        return written;
    }
    std::string first = l.args[0];
    if (l.op[0] == '@') { // "@%p mov.b32 %r1": the destination follows the instruction's name
        const size_t space = first.find_last_of(" \t");
        if (space != std::string::npos) first = first.substr(space + 1);
    }
    if (!first.empty() && first[0] == '{') {
        for (const std::string &a : l.args) {
            std::string r = a;
            std::erase(r, '{');
            std::erase(r, '}');
            written.push_back(trim(r));
            if (a.find('}') != std::string::npos) break;
        }
    } else if (!first.empty() && first[0] == '%') {
        written.push_back(first);
    }
    return written;
}

/// `sub.sN d, a, b` (the line `l`) as d = a + (~b + 1), under `comment`; the sum reads the
/// temporary first or second as `negation_first` says (each form as measured). d may be a or b:
/// b is read into the temporary before d is written.
std::string subtraction_as_addition(const PtxLine &l, const std::string &bits, const std::string &comment, bool negation_first) {
    const std::string indent(l.indent), t = "%sub" + bits + "_t";
    return indent + "// " + comment + "\n" + indent + "{\n" + indent + ".reg .b" + bits + " " + t + ";\n" +
           indent + "not.b" + bits + " \t" + t + ", " + l.args[2] + ";\n" +
           indent + "add.s" + bits + " \t" + t + ", " + t + ", 1;\n" +
           indent + "add.s" + bits + " \t" + l.args[0] + ", " + (negation_first ? t + ", " + l.args[1] : l.args[1] + ", " + t) +
           ";\n" + indent + "}";
}

/// `sub.s64 d, a, b` where a and b are shifts of one register, one left and one right: ptxas
/// (CUDA 13.0, sm_90) computed (x >> 63) - (x << 1) as if it were a rotate, wrong for 60,944 of
/// 65,536 values, and (x << 1) - (x >> 63) likewise (measured on an H200; (x >> 62) - (x << 1),
/// (x >> 63) - (x + x) and the 32-bit forms came out right). LLVM's `sub` is rewritten as
/// a + (~b + 1), which came out right for every value. `shifts` maps a register to the
/// register it shifts and the direction.
std::string rewrite_sub64(const PtxLine &l, const std::map<std::string, std::pair<std::string, bool>> &shifts) {
    if (l.op != "sub.s64" || l.args.size() != 3) return "";
    auto a = shifts.find(l.args[1]), b = shifts.find(l.args[2]);
    if (a == shifts.end() || b == shifts.end() || a->second.first != b->second.first || a->second.second == b->second.second)
        return "";
    return subtraction_as_addition(l, "64", "sub.s64 of two shifts of one value as not + add + add: ember's [Note] ptxas and integer negation, abs and 16-bit min/max", false);
}

/// `add`/`or`/`xor` of a left shift and an arithmetic right shift of one register: ptxas (CUDA
/// 13.0, sm_90) took (x >>s 3) + (x << 61) in 64 bits for a rotate of x (a funnel shift,
/// `SHF.L.W`), which holds only for a logical right shift: bits 61 to 63 came out without x's
/// sign (found by ember-difftest on an H200; the SASS shows the rotate). The
/// arithmetic shift is computed again at the combination from its operand as
/// ((x ^ s) >>u k) ^ s with s = x >>s (width - 1): the same value, through a register that is
/// not x, so no rotate is matched. Only where x and the shift's result are each written once in
/// the whole text (LLVM writes most registers once), so x still holds the shifted value. The
/// kernel that found it agrees on the GPU since; the lit test pins the form.
struct Shift {
    std::string of, amount;
    bool left = false, arithmetic = false;
};

std::string rewrite_arithmetic_rotate(const PtxLine &l, const std::map<std::string, Shift> &shifts,
                                      const std::map<std::string, int> &writes) {
    static const std::map<std::string, std::string> ops = {{"add.s64", "64"}, {"or.b64", "64"}, {"xor.b64", "64"},
                                                           {"add.s32", "32"}, {"or.b32", "32"}, {"xor.b32", "32"}};
    auto op = ops.find(l.op);
    if (op == ops.end() || l.args.size() != 3) return "";
    auto a = shifts.find(l.args[1]), b = shifts.find(l.args[2]);
    if (a == shifts.end() || b == shifts.end() || a->second.of != b->second.of || a->second.left == b->second.left)
        return "";
    const bool first_is_right = !a->second.left;
    const Shift &right = first_is_right ? a->second : b->second;
    const std::string &right_reg = first_is_right ? l.args[1] : l.args[2];
    auto written = [&](const std::string &r) { auto w = writes.find(r); return w == writes.end() ? 0 : w->second; };
    if (!right.arithmetic || written(right.of) > 1 || written(right_reg) != 1) return "";
    const std::string n = op->second, indent(l.indent);
    const std::string &x = right.of;
    return indent + "// " + l.op + " of a left and an arithmetic right shift of one value, the right one as xor + shr.u + xor: ember's [Note] ptxas and integer negation, abs and 16-bit min/max\n" +
           indent + "{\n" + indent + ".reg .b" + n + " %rot_s, %rot_t;\n" +
           indent + "shr.s" + n + " \t%rot_s, " + x + ", " + std::to_string(std::stoi(n) - 1) + ";\n" +
           indent + "xor.b" + n + " \t%rot_t, " + x + ", %rot_s;\n" +
           indent + "shr.u" + n + " \t%rot_t, %rot_t, " + right.amount + ";\n" +
           indent + "xor.b" + n + " \t%rot_t, %rot_t, %rot_s;\n" +
           indent + l.op + " \t" + l.args[0] + ", " + (first_is_right ? "%rot_t, " + l.args[2] : l.args[1] + ", %rot_t") + ";\n" +
           indent + "}";
}

/// [Note] ptxas and 32-bit min/max of negations
/// =============================================
/// [Note] ptxas and integer negation, abs and 16-bit min/max: ptxas folds the negation of an
/// operand into a 32-bit integer min/max (`VIMNMX`, and `VIMNMX3` where it merges two) and drops
/// it. Rewriting the PTX's own negations was not enough, because the negation may be ptxas's own:
/// - in one kernel of 50,000 (ember-difftest on an H200) a `mul.lo.s32` by a register ptxas had
///   proved to be -1 (the `not` of a conversion of a constant 0.0), where `reduce_min` of 16 such
///   products came out wrong (each product stored alone was right);
/// - in one kernel of 100,000, a single `min.s32 r, a, t` with t = `~s - c` and s a shuffle of
///   the constant 0: ptxas took t for -(c + 1) and made one `VIADDMNMX r, c, 1, a` (an addition
///   and a min) without the negation, so -33 came out 33.
/// So no 32-bit integer min/max is left: every `min`/`max` of `.s32`/`.u32` is done in 64 bits
/// (both operands extended by their signedness, `min`/`max` of 64 bits, the low word kept),
/// where ptxas has no min/max instruction with an operand to negate: it emits compares and
/// selects. Measured on both kernels: the wrong results were gone (the second's SASS held no
/// `VIMNMX`); selecting with `setp` + `selp` in 32 bits instead let ptxas form `VIMNMX3` again.
/// A min/max costs about five instructions instead of one: a chain of them runs at half nvcc's
/// speed on an H200 (bench/ptx_rules). test/lit/eir/ptxas_workarounds.eir
/// pins the form; BuiltinsTest runs reductions of negated and multiplied lanes and the single
/// min on the GPU.
bool is_min_max32(const PtxLine &l) {
    return (l.op == "min.s32" || l.op == "max.s32" || l.op == "min.u32" || l.op == "max.u32") && l.args.size() == 3;
}

std::string min_max32_in_64_bits(const PtxLine &l) {
    if (!is_min_max32(l)) return "";
    const std::string ind(l.indent), narrow = l.op.substr(4), wide = narrow[0] == 's' ? "s64" : "u64";
    return ind + "// " + l.op + " done in 64 bits: ember's [Note] ptxas and 32-bit min/max of negations\n" +
           ind + "{\n" + ind + ".reg .b64 %mm64_a, %mm64_b;\n" +
           ind + "cvt." + wide + "." + narrow + " \t%mm64_a, " + l.args[1] + ";\n" +
           ind + "cvt." + wide + "." + narrow + " \t%mm64_b, " + l.args[2] + ";\n" +
           ind + l.op.substr(0, 4) + wide + " \t%mm64_a, %mm64_a, %mm64_b;\n" +
           ind + "cvt.u32.u64 \t" + l.args[0] + ", %mm64_a;\n" + ind + "}";
}

/// [Note] ptxas and float selects
/// ===============================
/// ptxas (CUDA 13.0, sm_90) made `selp.f32 %f, 0f3F800000, 0f80000000, %p` (1.0 or -0.0) an
/// `FSET.BF`, which gives 1.0 or +0.0: it took -0.0 for the 0.0 of that form, and a store of the
/// select read 0 where -0 was right (one kernel of 50,000 of ember-difftest on an H200; the CPU
/// device and the interpreter gave -0). A select moves bits, whatever the type names, so every
/// float select, LLVM's and the rewrites' below, is a `selp.b32`/`selp.b64` with its float
/// immediates written as the integers of their bits: ptxas then emits a `SEL`, which has no
/// float form to match. test/lit/eir/ptxas_workarounds.eir pins the form.
std::string bits_select(const std::string &type, const std::string &d, const std::string &a, const std::string &b,
                        const std::string &p) {
    const bool f64 = type == "f64";
    auto operand = [&](const std::string &x) {
        const std::string prefix = f64 ? "0d" : "0f";
        const size_t digits = f64 ? 16 : 8;
        if (x.size() != 2 + digits || x.rfind(prefix, 0) != 0 ||
            x.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
            return x;
        const unsigned long long bits = std::stoull(x.substr(2), nullptr, 16);
        return f64 ? std::to_string(static_cast<long long>(bits))
                   : std::to_string(static_cast<int32_t>(static_cast<uint32_t>(bits)));
    };
    return std::string(f64 ? "selp.b64" : "selp.b32") + " \t" + d + ", " + operand(a) + ", " + operand(b) + ", " + p + ";";
}

std::string select_bits(const PtxLine &l) {
    if ((l.op != "selp.f32" && l.op != "selp.f64") || l.args.size() != 4) return "";
    return std::string(l.indent) + bits_select(l.op.substr(5), l.args[0], l.args[1], l.args[2], l.args[3]);
}

/// [Note] ptxas and 16-bit selects of live registers
/// ====================================================
/// ptxas (CUDA 13.0, sm_90) compiles `selp.b16 d, a, b, p` as a copy of b into d's register and
/// a copy of a over it under p, and may give d the register of b where b is read again: in
/// `h + cast<bf16>(c) + (x + select(c, cast<bf16>(y), cast<bf16>(c)))` on bf16 it paired the two
/// additions into one `HADD2.BF16_V2` whose lane for cast<bf16>(c) read the register the select
/// had overwritten with cast<bf16>(y) (one kernel of 100,000 of ember-difftest on an H200; the
/// toolkit's ptxas 13.0 made the same SASS; [Note] ptxas and copysign was the same sharing).
/// Selecting through 32 bits kept it. So a 16-bit select of a register is done on the bits as
/// b ^ ((a ^ b) & m), with the mask m = p ? 0xFFFF : 0 (a select of immediates, which shares no
/// register): ptxas emits a `LOP3`, which writes a register of its own. Three instructions more
/// per such select: a chain of them runs at about half nvcc's speed on an H200 (bench/ptx_rules).
/// test/lit/eir/ptxas_workarounds.eir pins the form; BuiltinsTest runs it.
std::string blend_select16(const PtxLine &l) {
    if (l.op != "selp.b16" || l.args.size() != 4) return "";
    auto is_reg = [](const std::string &a) { return !a.empty() && a[0] == '%'; };
    if (!is_reg(l.args[1]) && !is_reg(l.args[2])) return "";
    const std::string ind(l.indent), &d = l.args[0], &a = l.args[1], &b = l.args[2], &p = l.args[3];
    return ind + "// selp.b16 of a register as a blend of the bits: ember's [Note] ptxas and 16-bit selects of live registers\n" +
           ind + "{\n" + ind + ".reg .b16 %sel_m, %sel_t;\n" +
           ind + "selp.b16 \t%sel_m, 0xFFFF, 0x0000, " + p + ";\n" +
           ind + "xor.b16 \t%sel_t, " + (is_reg(a) ? a + ", " + b : b + ", " + a) + ";\n" +
           ind + "and.b16 \t%sel_t, %sel_t, %sel_m;\n" +
           // every source was read above: d may be one of them
           ind + "xor.b16 \t" + d + ", %sel_t, " + b + ";\n" + ind + "}";
}

/// [Note] ptxas and float clamps
/// ==============================
/// ptxas (CUDA 13.0, sm_90) takes `max.f64 r, t, 0.0` of `min.f64 t, x, 1.0` to be a clamp of x
/// and reorders it into min(max(x, 0.0), 1.0): the same for every x but NaN, where PTX's
/// min/max (IEEE minNum/maxNum: a NaN operand gives the other one) make the first 1.0 and the
/// second 0.0. ember-difftest found it on the GPU (a min of the user's feeding the clamp that
/// LLVM makes of a float-to-integer cast, which [Note] Float to integer conversions on NVPTX
/// now avoids; the user's own clamps remain). When a float min/max with an immediate operand
/// feeds another one, its register operand is made NaN-free first: NaN becomes the immediate
/// (`setp.nan` + `selp`), which gives the same result (min(NaN, c) is c) and leaves ptxas no
/// NaN to reorder wrongly. Two instructions per such clamp; test/lit/eir/ptxas_workarounds.eir
/// pins the form, BuiltinsTest runs clamps of NaN on the GPU.
std::string guard_float_clamp(const PtxLine &l, const std::set<std::string> &clamped) {
    const bool is_minmax = (l.op == "min.f32" || l.op == "max.f32" || l.op == "min.f64" || l.op == "max.f64");
    if (!is_minmax || l.args.size() != 3 || clamped.count(l.args[0]) == 0) return "";
    auto is_reg = [](const std::string &a) { return !a.empty() && a[0] == '%'; };
    if (is_reg(l.args[1]) == is_reg(l.args[2])) return "";
    const std::string &reg = is_reg(l.args[1]) ? l.args[1] : l.args[2];
    const std::string &imm = is_reg(l.args[1]) ? l.args[2] : l.args[1];
    const std::string type = l.op.substr(4); // "f32" or "f64"
    const std::string indent(l.indent);
    return indent + "// " + l.op + " of a NaN-free operand: ember's [Note] ptxas and float clamps\n" +
           indent + "{\n" + indent + ".reg .pred %clamp_p;\n" + indent + ".reg ." + type + " %clamp_t;\n" +
           indent + "setp.nan." + type + " \t%clamp_p, " + reg + ", " + reg + ";\n" +
           indent + bits_select(type, "%clamp_t", imm, reg, "%clamp_p") + "\n" +
           indent + l.op + " \t" + l.args[0] + ", %clamp_t, " + imm + ";\n" + indent + "}";
}

/// [Note] ptxas and comparisons of abs with NaN
/// =============================================
/// ptxas (CUDA 13.0, sm_90) takes `abs.f32`/`abs.f64` to be non-negative and folds a comparison
/// of it with a non-positive constant as if it could not be NaN: `setp.gt.f32 p, |x|, -1e30`
/// and `setp.ge.f32 p, |x|, 0.0` became true, where a NaN x makes both false (the SASS had no
/// comparison left and the branch it guarded was gone). ember-difftest found it in three
/// kernels on the GPU. The constant need not be an immediate: `mov.f32 %f3, 0fAEDBE6B1` then
/// `setp.le.f32 %p13, %f3, %f25` with %f25 = |x| was folded to true as well (a fourth kernel),
/// ptxas propagating the register's value. So every ordered or unordered comparison with an abs
/// operand is rewritten to AND in an explicit test of the operands, which ptxas knows nothing
/// about: `setp.num q, x, y; setp.gt.and p, |x|, y, q` (for the unordered comparisons,
/// `setp.nan` and `.or`; x and y are the abs's operands where both sides are abs, a float
/// immediate is left out of the test). The value is the same for every input: a NaN operand
/// makes an ordered comparison false and an unordered one true already. A `setp.nan`/`setp.num`
/// of |x| tests x instead. The fold happens across basic blocks too (LLVM hoists an abs used in
/// two blocks: `abs.f32 %f1, %f2` in the entry block, `setp.ge.f32 %p3, %f1, 0fC4EDE795` after a
/// label, ptxas 13.0 kept no FSETP; a probe on an H100 measured the guarded form right), so the
/// pair is kept across labels where both registers are written once. test/lit/eir/ptxas_workarounds.eir
/// pins the form.
std::string guard_abs_comparison(const PtxLine &l, const std::map<std::string, std::string> &abs_of) {
    if (l.op.rfind("setp.", 0) != 0 || l.args.size() != 3) return "";
    const size_t dot = l.op.find('.', 5);
    if (dot == std::string::npos) return "";
    const std::string cmp = l.op.substr(5, dot - 5), type = l.op.substr(dot + 1);
    if (type != "f32" && type != "f64" && type != "f16" && type != "bf16") return "";
    const std::string indent(l.indent);
    auto a = abs_of.find(l.args[1]), b = abs_of.find(l.args[2]);
    if (cmp == "nan" || cmp == "num") {
        if (a == abs_of.end() || l.args[1] != l.args[2]) return "";
        return indent + "// " + l.op + " of abs tests its operand: ember's [Note] ptxas and comparisons of abs with NaN\n" +
               indent + l.op + " \t" + l.args[0] + ", " + a->second + ", " + a->second + ";";
    }
    static const std::set<std::string> ordered = {"eq", "ne", "lt", "le", "gt", "ge"};
    static const std::set<std::string> unordered = {"equ", "neu", "ltu", "leu", "gtu", "geu"};
    const bool is_ordered = ordered.count(cmp) != 0;
    if (!is_ordered && unordered.count(cmp) == 0) return "";
    if (a == abs_of.end() && b == abs_of.end()) return "";
    // the values whose NaN decides the comparison: each abs's operand, the other side's register
    std::vector<std::string> tested;
    for (auto [side, arg] : {std::pair{a, &l.args[1]}, std::pair{b, &l.args[2]}})
        if (side != abs_of.end()) tested.push_back(side->second);
        else if (arg->starts_with("%")) tested.push_back(*arg);
    const std::string &p = tested.front(), &q = tested.back();
    return indent + "// " + l.op + " of abs with the NaN test explicit: ember's [Note] ptxas and comparisons of abs with NaN\n" +
           indent + "{\n" + indent + ".reg .pred %absc_p;\n" +
           indent + "setp." + (is_ordered ? "num." : "nan.") + type + " \t%absc_p, " + p + ", " + q + ";\n" +
           indent + "setp." + cmp + (is_ordered ? ".and." : ".or.") + type + " \t" + l.args[0] + ", " + l.args[1] + ", " +
           l.args[2] + ", %absc_p;\n" + indent + "}";
}

/// [Note] ptxas and unsigned conversions of sign-extended fields
/// ==============================================================
/// ptxas (CUDA 13.0, sm_90) fuses `bfe.s32 r, x, pos, 8` + `cvt.rn.f32.u32 f, r` into one `I2F.S8`,
/// a *signed* conversion of the byte: cast<f32>(cast<u32>(b)) of the i8 -86 gave -86.0 where
/// 4294967210 rounds to 4294967296.0 (found by ember-difftest; a probe on an H100 measured every
/// byte at each position: bfe of 8 and 16 bits into f32 and f64 are all wrong, 32,768 of 65,536
/// inputs; going through u64 or f64 does not help, ptxas sees through it). Such a field extract
/// becomes `bfe.u32` + `xor` + `sub` of the field's sign bit, the same value, which the probe
/// measured right for every input. A sign extension by `cvt` is the same pair for ptxas:
/// `cvt.s32.s16 r, h` + `cvt.rn.f64.u32 d, r` gave -3.0 for the i16 -3 where 4294967293.0 is right
/// (cast<f64>(cast<u32>(x)), found by ember-difftest on an H200); it becomes `cvt.u32.u16` + `xor`
/// + `sub` alike (also from 8 bits, and into 64). Only registers read by an unsigned-to-float
/// `cvt` somewhere in the text are rewritten; test/lit/eir/ptxas_workarounds.eir pins the form.
std::string rewrite_signed_field(const PtxLine &l, const std::set<std::string> &converted) {
    if (l.args.size() < 2 || converted.count(l.args[0]) == 0) return "";
    const std::string indent(l.indent), &d = l.args[0];
    // `zero_extend` (one instruction into d), then d's low `bits` bits sign-extended to `width`
    auto rewrite = [&](const std::string &how, const std::string &zero_extend, int width, int bits) {
        const std::string n = std::to_string(width), sign = std::to_string(1ull << (bits - 1));
        return indent + "// " + l.op + " read by an unsigned conversion to float, as " + how + " + xor + sub: ember's [Note] ptxas and unsigned conversions of sign-extended fields\n" +
               indent + zero_extend + "\n" + indent + "xor.b" + n + " \t" + d + ", " + d + ", " + sign + ";\n" +
               indent + "sub.s" + n + " \t" + d + ", " + d + ", " + sign + ";";
    };
    // a sign extension by cvt: cvt.s32.s16 d, a becomes cvt.u32.u16 d, a + xor + sub of bit 15
    static const std::map<std::string, std::tuple<std::string, int, int>> extensions = {
        {"cvt.s32.s8", {"cvt.u32.u8", 32, 8}},   {"cvt.s32.s16", {"cvt.u32.u16", 32, 16}},
        {"cvt.s64.s8", {"cvt.u64.u8", 64, 8}},   {"cvt.s64.s16", {"cvt.u64.u16", 64, 16}},
        {"cvt.s64.s32", {"cvt.u64.u32", 64, 32}}};
    if (const auto e = extensions.find(l.op); e != extensions.end()) {
        if (l.args.size() != 2) return "";
        const auto &[zext, width, bits] = e->second;
        return rewrite(zext, zext + " \t" + d + ", " + l.args[1] + ";", width, bits);
    }
    if ((l.op != "bfe.s32" && l.op != "bfe.s64") || l.args.size() != 4) return "";
    const std::string &len = l.args[3];
    if (len.empty() || len.size() > 2 || len.find_first_not_of("0123456789") != std::string::npos) return "";
    const int bits = std::stoi(len), width = l.op == "bfe.s32" ? 32 : 64;
    if (bits < 1 || bits >= width) return "";
    const std::string n = std::to_string(width);
    return rewrite("bfe.u", "bfe.u" + n + " \t" + d + ", " + l.args[1] + ", " + l.args[2] + ", " + len + ";", width, bits);
}

/// Is `op` a conversion of an unsigned 32- or 64-bit integer to a float type?
bool is_unsigned_to_float_cvt(const std::string &op) {
    if (op.rfind("cvt.", 0) != 0 || (!op.ends_with(".u32") && !op.ends_with(".u64"))) return false;
    return op.find(".f16.") != std::string::npos || op.find(".bf16.") != std::string::npos ||
           op.find(".f32.") != std::string::npos || op.find(".f64.") != std::string::npos;
}

/// [Note] ptxas and negations of abs
/// ==================================
/// LLVM 19 lowered copysign(x, s) for NVPTX to `abs.f32 a, x; neg.f32 n, a; selp.f32 r, n, a, p`.
/// Where x is a `selp` of constants, one of them 0.0, ptxas (CUDA 13.0, sm_90) folds the `neg`
/// of the zero to +0.0: copysign(select(c, 0.0, -7.0), -1.0) gave +0.0 where -0.0 is right (found
/// by ember-difftest; a probe on an H100 showed `neg.f32` of `abs.f32` of such a `selp` wrong
/// and `neg.f32` of the `selp` right). copysign is now done on the bits before code generation
/// ([Note] ptxas and copysign), but LLVM still makes a `neg` of an `abs` from -abs(x) and its
/// folds. Such a `neg` (where the abs is tracked as for [Note] ptxas and comparisons of abs with
/// NaN) is rewritten to set the sign bit of the abs's operand, -|x| = x | 0x80000000 (`or.b16` of
/// 0x8000 for f16 and bf16), with no abs or neg left for ptxas to fold; the seed agrees on the GPU
/// since. test/lit/eir/ptxas_workarounds.eir pins the form.
std::string rewrite_neg_of_abs(const PtxLine &l, const std::map<std::string, std::string> &abs_of) {
    static const std::map<std::string, std::pair<std::string, std::string>> sign_bit = {
        {"neg.f64", {"or.b64", "-9223372036854775808"}},
        {"neg.f32", {"or.b32", "-2147483648"}},
        {"neg.f16", {"or.b16", "0x8000"}},
        {"neg.bf16", {"or.b16", "0x8000"}}};
    const auto op = sign_bit.find(l.op);
    if (op == sign_bit.end() || l.args.size() != 2) return "";
    auto a = abs_of.find(l.args[1]);
    if (a == abs_of.end()) return "";
    const std::string indent(l.indent);
    return indent + "// " + l.op + " of abs as the operand's sign bit set: ember's [Note] ptxas and negations of abs\n" +
           indent + op->second.first + " \t" + l.args[0] + ", " + a->second + ", " + op->second.second + ";";
}

/// [Note] ptxas and packed negative half immediates
/// ==================================================
/// LLVM builds an f16x2/bf16x2 operand with a constant lane as `mov.b16 %h, 0xFC00` + `mov.b32 %r,
/// {%h, %y}`. Where that pack is the first source of a packed `sub`/`add`/`mul`/`fma`/`setp`
/// .f16x2 (or `sub`/`add` .bf16x2) and the immediate has its sign bit set, ptxas (CUDA 13.0,
/// sm_90) folds the immediate into the instruction without its sign: -inf - v came out as
/// +inf - v (found by ember-difftest; a probe on an H100 measured -inf, -1 and -65504 in either
/// lane, thousands of wrong results each), and with -0.0 the driver's JIT crashed the process.
/// The same pack built with integer instructions was right in every case, so such a pack is
/// built as `cvt.u32.u16` + `shl` + `or` of the immediate (a single `mov.b32` where both lanes
/// are immediates), whatever reads it (ptxas swaps commutative operands). Only immediates written
/// once to their register (LLVM's constants). A half negated before the pack (`neg.f16 %n, %a;
/// mov.b32 %r, {%b, %n}`) lost its negation the same way (f16 and bf16, first operands and fma's
/// multiplicands): such a `neg` becomes `xor.b16` of the sign bit, which is what LLVM's fneg
/// means. The probe measured both rewritten forms right. test/lit/eir/ptxas_workarounds.eir pins
/// the forms.
/// The low and high halves of a pack `mov.b32 %r, {%lo, %hi}`; nullopt for any other line.
std::optional<std::pair<std::string, std::string>> packed_halves_of(const PtxLine &l) {
    if (l.op != "mov.b32" || l.args.size() != 3 || l.args[1].empty() || l.args[1][0] != '{' || l.args[2].empty() ||
        l.args[2].back() != '}')
        return std::nullopt;
    return std::make_pair(trim(l.args[1].substr(1)), trim(l.args[2].substr(0, l.args[2].size() - 1)));
}

std::string rewrite_negative_half_pack(const PtxLine &l, const std::map<std::string, unsigned> &half_immediates) {
    const auto halves = packed_halves_of(l);
    if (!halves) return "";
    const std::string &lo = halves->first, &hi = halves->second;
    auto imm = [&](const std::string &r) -> long {
        auto it = half_immediates.find(r);
        return it == half_immediates.end() ? -1 : static_cast<long>(it->second);
    };
    const long lo_imm = imm(lo), hi_imm = imm(hi);
    const bool lo_neg = lo_imm >= 0 && (lo_imm & 0x8000), hi_neg = hi_imm >= 0 && (hi_imm & 0x8000);
    if (!lo_neg && !hi_neg) return "";
    auto hex = [](uint32_t v) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(v));
        return std::string(buf);
    };
    const std::string indent(l.indent), d = l.args[0];
    std::string out = indent + "// " + l.op + " of a negative half immediate built with integer instructions: ember's [Note] ptxas and packed negative half immediates\n";
    if (lo_imm >= 0 && hi_imm >= 0)
        return out + indent + "mov.b32 \t" + d + ", " + hex(static_cast<uint32_t>((hi_imm << 16) | lo_imm)) + ";";
    out += indent + "{\n" + indent + ".reg .b32 %pk_t;\n";
    if (lo_imm >= 0)
        out += indent + "cvt.u32.u16 \t%pk_t, " + hi + ";\n" + indent + "shl.b32 \t%pk_t, %pk_t, 16;\n" + indent +
               "or.b32 \t" + d + ", %pk_t, " + hex(static_cast<uint32_t>(lo_imm)) + ";\n";
    else
        out += indent + "cvt.u32.u16 \t%pk_t, " + lo + ";\n" + indent + "or.b32 \t" + d + ", %pk_t, " +
               hex(static_cast<uint32_t>(hi_imm << 16)) + ";\n";
    return out + indent + "}";
}

/// A `neg.f16`/`neg.bf16` whose result is a half of some pack, as an `xor.b16` of the sign bit.
std::string rewrite_negated_half(const PtxLine &l, const std::set<std::string> &packed_halves) {
    if ((l.op != "neg.f16" && l.op != "neg.bf16") || l.args.size() != 2 || packed_halves.count(l.args[0]) == 0) return "";
    const std::string indent(l.indent);
    return indent + "// " + l.op + " of a packed half as xor of the sign bit: ember's [Note] ptxas and packed negative half immediates\n" +
           indent + "xor.b16 \t" + l.args[0] + ", " + l.args[1] + ", 0x8000;";
}

/// [Note] ptxas and 16-bit subtractions, byte parameters and folded conversions
/// ==============================================================================
/// Three more miscompiles of ptxas (CUDA 13.0 driver 580, sm_90), each found by ember-difftest on
/// an H200 and each fixed by the rewrite below, measured on the kernel that found it:
/// - **A 16-bit subtraction from a zero ptxas can see.** LLVM splits an i16 vector subtraction into
///   `sub.s16` lanes; where a lane's minuend is a constant 0 that reaches the `sub` only through a
///   `mov.b32` pack and unpack, ptxas folds it into a negation and widens it as it did `neg.s16`
///   ([Note] ptxas and integer negation, abs and 16-bit min/max): 0 - (-32768) compared as
///   32768, so `x >= 0 - y` came out false. Every `sub.s16` becomes `not` + `add 1` + `add`.
/// - **A byte parameter loaded into a 16-bit register.** A device function's i8 argument is read
///   with `ld.param.s8 %rs, [p]`; compared unsigned (`setp.ge.u16`) with the same value that went
///   through f64 and back, it was unequal: ptxas read the register's upper half as the load's
///   sign extension on one side only. The byte is loaded into a 32-bit register
///   (`ld.param.u8`, sign-extended by `cvt.s32.s8` for `.s8`) and truncated with `cvt.u16.u32`.
/// - **A float-to-integer conversion of a value ptxas can fold.** `cvt.rzi.u64.f32` of
///   `selp.f32 %f, 0.0, -1.0, %p` came out as 2^64 - 1 where the operand was -1.0: ptxas folded
///   the conversion of the constant without PTX's saturation (the hardware gives 0). So the
///   conversion only ever sees a value in its range: an operand below the range, at or above it,
///   or NaN is replaced by 0.0 before the `cvt` (one `selp`), and the result is selected
///   afterwards, the type's minimum below the range and its maximum at or above it, which is
///   what `cvt.rzi` means, from comparisons that fold right. A first form selected the result
///   only, after a `cvt` of the raw operand; in one kernel of 80,000 ptxas then dropped one of
///   two `F2I.F64` whose f64 operands shared their low word (two constants built by `or.b64`
///   with a sign, in a block ptxas had duplicated for a divergent shuffle) and used the other's
///   result: the selected operand gives every conversion its own input, and that kernel agreed.
///   Eight instructions per conversion.
/// test/lit/eir/ptxas_workarounds.eir pins the three forms.
std::string rewrite_sub16(const PtxLine &l) {
    if (l.op != "sub.s16" || l.args.size() != 3 || l.args[2].empty() || l.args[2][0] != '%') return "";
    return subtraction_as_addition(l, "16", "sub.s16 as not + add + add: ember's [Note] ptxas and 16-bit subtractions, byte parameters and folded conversions", true);
}

std::string rewrite_byte_param_load(const PtxLine &l) {
    if ((l.op != "ld.param.s8" && l.op != "ld.param.u8") || l.args.size() != 2 || l.args[0].rfind("%rs", 0) != 0)
        return "";
    const std::string indent(l.indent);
    return indent + "// " + l.op + " into 32 bits, then truncated: ember's [Note] ptxas and 16-bit subtractions, byte parameters and folded conversions\n" +
           indent + "{\n" + indent + ".reg .b32 %ld8_t;\n" +
           indent + "ld.param.u8 \t%ld8_t, " + l.args[1] + ";\n" +
           (l.op == "ld.param.s8" ? indent + "cvt.s32.s8 \t%ld8_t, %ld8_t;\n" : std::string()) +
           indent + "cvt.u16.u32 \t" + l.args[0] + ", %ld8_t;\n" + indent + "}";
}

/// A PTX float immediate (0f... for f32, 0d... for f64) of `x`.
std::string ptx_float_immediate(double x, bool f64) {
    char buf[32];
    if (f64) {
        uint64_t u;
        std::memcpy(&u, &x, sizeof u);
        std::snprintf(buf, sizeof buf, "0d%016llX", static_cast<unsigned long long>(u));
    } else {
        const float f = static_cast<float>(x);
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        std::snprintf(buf, sizeof buf, "0f%08X", static_cast<unsigned>(u));
    }
    return buf;
}

std::string guard_float_to_int(const PtxLine &l) {
    // cvt.rzi.{s,u}{16,32,64}.{f32,f64}
    if (l.op.rfind("cvt.rzi.", 0) != 0 || l.op.size() != 15 || l.args.size() != 2) return "";
    const std::string to = l.op.substr(8, 3), from = l.op.substr(12);
    static const std::set<std::string> ints = {"s16", "u16", "s32", "u32", "s64", "u64"};
    if (ints.count(to) == 0 || (from != "f32" && from != "f64")) return "";
    const bool is_unsigned = to[0] == 'u', f64 = from == "f64";
    const int bits = std::stoi(to.substr(1));
    const double lo = is_unsigned ? 0.0 : -std::ldexp(1.0, bits - 1);
    const double hi = is_unsigned ? std::ldexp(1.0, bits) : std::ldexp(1.0, bits - 1);
    const unsigned long long umax = bits == 64 ? ~0ull : (1ull << bits) - 1;
    const std::string min_value = is_unsigned ? "0" : "-" + std::to_string(1ull << (bits - 1));
    const std::string max_value = std::to_string(is_unsigned ? umax : (1ull << (bits - 1)) - 1);
    const std::string indent(l.indent), d = l.args[0], x = l.args[1], b = "b" + std::to_string(bits);
    const std::string zero = f64 ? "0d0000000000000000" : "0f00000000";
    return indent + "// " + l.op + " of an operand in range, result selected by range: ember's [Note] ptxas and 16-bit subtractions, byte parameters and folded conversions\n" +
           indent + "{\n" + indent + ".reg .pred %cvt_lo, %cvt_hi, %cvt_out;\n" + indent + ".reg ." + from + " %cvt_x;\n" +
           indent + "setp.lt." + from + " \t%cvt_lo, " + x + ", " + ptx_float_immediate(lo, f64) + ";\n" +
           indent + "setp.ge." + from + " \t%cvt_hi, " + x + ", " + ptx_float_immediate(hi, f64) + ";\n" +
           indent + "setp.nan.or." + from + " \t%cvt_out, " + x + ", " + x + ", %cvt_lo;\n" +
           indent + "or.pred \t%cvt_out, %cvt_out, %cvt_hi;\n" +
           indent + bits_select(from, "%cvt_x", zero, x, "%cvt_out") + "\n" +
           indent + l.op + " \t" + d + ", %cvt_x;\n" +
           indent + "selp." + b + " \t" + d + ", " + min_value + ", " + d + ", %cvt_lo;\n" +
           indent + "selp." + b + " \t" + d + ", " + max_value + ", " + d + ", %cvt_hi;\n" + indent + "}";
}

/// [Note] ptxas and packed 16-bit integer arithmetic
/// =================================================
/// For sm_90a, ptxas (CUDA 13.0) compiled `add.s16x2 %r5, %r3, %r4` with %r4 = -1 (both lanes
/// -1) as `VIADD.16x2 R0, R0, 0x0`: the immediate it folded lost its bits, so each lane got x + 0
/// instead of x - 1 (for sm_90 the same PTX became a correct add). ember-difftest found it on an
/// H200 (popcount and clz of i16x2 sums off by one or by 16, in 12 of 4,000 random kernels) once
/// the runtime compiled for sm_90a. LLVM 19 emits packed integer instructions for i16x2 on
/// sm_90 and later (`add`, `min`, `max` of `.s16x2` and `.u16x2`; it splits subtractions
/// itself), so every packed form, `sub` included, is unpacked and done lane by lane as the
/// scalar 16-bit instruction ember already makes safe: add as add.s16, sub as not + add + add,
/// min and max as rewrite_instruction makes them. An immediate operand is split into its two
/// lanes. test/lit/eir/ptxas_workarounds.eir pins the form.
std::string scalarize_packed_int16(const PtxLine &l) {
    static const std::set<std::string> packed = {"add.s16x2", "add.u16x2", "sub.s16x2",
                                                 "sub.u16x2", "min.s16x2", "max.s16x2",
                                                 "min.u16x2", "max.u16x2"};
    if (packed.count(l.op) == 0 || l.args.size() != 3) return "";
    const std::string indent(l.indent), kind = l.op.substr(0, 3); // add, sub, min, max
    const std::string scalar = l.op.substr(0, l.op.size() - 2);   // "min.s16"
    std::string out = indent + "// " + l.op +
                      " lane by lane: ember's [Note] ptxas and packed 16-bit integer arithmetic\n" +
                      indent + "{\n" + indent +
                      ".reg .b16 %ix_a0, %ix_a1, %ix_b0, %ix_b1, %ix_d0, %ix_d1, %ix_t;\n";
    static const char *const names[] = {"a", "b"};
    for (size_t i = 1; i < 3; ++i) {
        const std::string &x = l.args[i], n = names[i - 1];
        if (!x.empty() && x[0] == '%') {
            out += indent + "mov.b32 \t{%ix_" + n + "0, %ix_" + n + "1}, " + x + ";\n";
            continue;
        }
        char *end = nullptr;
        const long long v = std::strtoll(x.c_str(), &end, 0); // a decimal or 0x immediate
        if (x.empty() || *end != '\0') return "";
        const auto bits = static_cast<uint32_t>(v);
        out += indent + "mov.b16 \t%ix_" + n + "0, " + std::to_string(bits & 0xffffu) + ";\n";
        out += indent + "mov.b16 \t%ix_" + n + "1, " + std::to_string(bits >> 16) + ";\n";
    }
    for (const char *h : {"0", "1"}) {
        const std::string d = std::string("%ix_d") + h, a = std::string("%ix_a") + h,
                          b = std::string("%ix_b") + h;
        if (kind == "add") {
            out += indent + "add.s16 \t" + d + ", " + a + ", " + b + ";\n";
        } else if (kind == "sub") {
            out += indent + "not.b16 \t%ix_t, " + b + ";\n" + indent +
                   "add.s16 \t%ix_t, %ix_t, 1;\n" + indent + "add.s16 \t" + d + ", " + a +
                   ", %ix_t;\n";
        } else {
            const std::string safe = rewrite_instruction(scalar, {d, a, b}, indent);
            out += safe.empty() ? indent + scalar + " \t" + d + ", " + a + ", " + b + ";\n"
                                : safe + "\n";
        }
    }
    // every source was read above: d may be one of them
    return out + indent + "mov.b32 \t" + l.args[0] + ", {%ix_d0, %ix_d1};\n" + indent + "}";
}

/// [Note] The driver's JIT and halves repacked between packed operations
/// =======================================================================
/// The CUDA driver's JIT (580.159, sm_90; the toolkit's `ptxas` compiled the same PTX) crashed
/// the process (a segfault, on every run) on a packed `sub.rn.f16x2` whose halves were unpacked,
/// went through scalar code, were packed again and fed a packed `add.rn.f16x2`; and likewise
/// with `.bf16x2` and a scalar `max.bf16` between (two of 80,000 random kernels of
/// ember-difftest on an H200). Reduced on the GPU by deleting instructions while the JIT still
/// crashed, the f16 kernel kept 13: the `sub`, an unpack, a `cvt.f32.f16` + `cvt.rn.f16.f32`
/// round trip per half, the pack and the `add`. Any scalar code between two packed operations
/// makes that shape, so the packed operations themselves go: every `add`/`sub`/`mul`/`fma` of
/// `.f16x2` or `.bf16x2` is unpacked, done as two scalar instructions of the same rounding and
/// packed again, which is what each packed instruction means lane by lane. Both kernels then
/// loaded and agreed; ptxas still pairs scalar halves where it sees fit. The cost is the unpack
/// and the pack (PTX `mov`s the JIT mostly folds) and a scalar issue per lane where the packed
/// form issued one. test/lit/eir/ptxas_workarounds.eir pins the form.
std::string scalarize_packed_half(const PtxLine &l) {
    static const std::set<std::string> packed = {"add.rn.f16x2",  "sub.rn.f16x2",  "mul.rn.f16x2",  "fma.rn.f16x2",
                                                 "add.rn.bf16x2", "sub.rn.bf16x2", "mul.rn.bf16x2", "fma.rn.bf16x2",
                                                 "add.f16x2",     "sub.f16x2",     "mul.f16x2"};
    const bool is_fma = l.op.rfind("fma.", 0) == 0;
    if (packed.count(l.op) == 0 || l.args.size() != (is_fma ? 4u : 3u)) return "";
    for (size_t i = 1; i < l.args.size(); ++i)
        if (l.args[i].empty() || l.args[i][0] != '%') return "";
    const std::string indent(l.indent), scalar = l.op.substr(0, l.op.size() - 2); // "add.rn.f16"
    static const char *const names[] = {"a", "b", "c"};
    std::string out = indent + "// " + l.op + " lane by lane: ember's [Note] The driver's JIT and halves repacked between packed operations\n" +
                      indent + "{\n" + indent + ".reg .b16 %hx_a0, %hx_a1, %hx_b0, %hx_b1, %hx_c0, %hx_c1, %hx_d0, %hx_d1;\n";
    for (size_t i = 1; i < l.args.size(); ++i)
        out += indent + "mov.b32 \t{%hx_" + names[i - 1] + "0, %hx_" + names[i - 1] + "1}, " + l.args[i] + ";\n";
    for (const char *h : {"0", "1"})
        out += indent + scalar + " \t%hx_d" + h + ", %hx_a" + h + ", %hx_b" + h + (is_fma ? std::string(", %hx_c") + h : "") + ";\n";
    // every source was read above: d may be one of them
    return out + indent + "mov.b32 \t" + l.args[0] + ", {%hx_d0, %hx_d1};\n" + indent + "}";
}

std::string patch_ptx(std::string ptx) {
    static constexpr std::string_view triggers[] = {
        "neg.s",   "abs.s",       "min.s16",     "max.s16",  "min.u16",  "max.u16",
        "min.f",   "max.f",       "sub.s64",     "abs.f",    "abs.bf",   "shr.s",
        "bfe.s",   "cvt.s32.s",   "cvt.s64.s",   "mov.b16",  "mov.u16",  "mov.s16",
        "neg.f16", "neg.bf16",    "div.u64",     "div.s64",  "rem.u64",  "rem.s64",
        "sub.s16", "ld.param.s8", "ld.param.u8", "cvt.rzi.", "f16x2",    "selp.f",
        "min.s32", "max.s32",     "min.u32",     "max.u32",  "selp.b16", "16x2"};
    bool any = false;
    for (std::string_view t : triggers) any |= ptx.find(t) != std::string::npos;
    if (!any) return ptx;
    std::vector<PtxLine> lines;
    for (size_t pos = 0; pos <= ptx.size();) {
        size_t eol = ptx.find('\n', pos);
        if (eol == std::string::npos) eol = ptx.size();
        lines.push_back(parse_ptx_line(std::string_view(ptx.data() + pos, eol - pos)));
        pos = eol + 1;
    }
    // Registers that are shifts of another: LLVM's PTX assigns most registers once; where one is
    // assigned again, the subtraction's rewrite is still a correct subtraction, only a longer one
    // (the rotate's rewrite checks `writes`).
    std::map<std::string, Shift> shifts;
    std::map<std::string, std::pair<std::string, bool>> shifts64;
    for (const PtxLine &l : lines) {
        if (l.args.size() != 3) continue;
        static const std::set<std::string> shift_ops = {"shl.b64", "shr.u64", "shr.s64", "shr.b64",
                                                        "shl.b32", "shr.u32", "shr.s32", "shr.b32"};
        if (shift_ops.count(l.op) == 0) continue;
        const bool left = l.op.rfind("shl", 0) == 0;
        shifts[l.args[0]] = {l.args[1], l.args[2], left, l.op.rfind("shr.s", 0) == 0};
        if (l.op.ends_with("64")) shifts64[l.args[0]] = {l.args[1], left};
    }
    // How often each register is written.
    std::map<std::string, int> writes;
    for (const PtxLine &l : lines)
        for (const std::string &r : written_registers(l)) ++writes[r];
    // Registers read by a float min/max with an immediate operand ([Note] ptxas and float clamps).
    std::set<std::string> clamped;
    for (const PtxLine &l : lines)
        if (l.args.size() == 3 && (l.op == "min.f32" || l.op == "max.f32" || l.op == "min.f64" || l.op == "max.f64")) {
            const bool reg1 = !l.args[1].empty() && l.args[1][0] == '%', reg2 = !l.args[2].empty() && l.args[2][0] == '%';
            if (reg1 != reg2) clamped.insert(reg1 ? l.args[1] : l.args[2]);
        }
    // 16-bit registers that hold an immediate, written once ([Note] ptxas and packed negative half
    // immediates).
    std::map<std::string, unsigned> half_immediates;
    for (const PtxLine &l : lines)
        if ((l.op == "mov.b16" || l.op == "mov.u16" || l.op == "mov.s16") && l.args.size() == 2 &&
            l.args[1].size() == 6 && l.args[1].rfind("0x", 0) == 0 &&
            l.args[1].find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos && writes[l.args[0]] == 1)
            half_immediates[l.args[0]] = static_cast<unsigned>(std::stoul(l.args[1].substr(2), nullptr, 16));
    // 16-bit registers packed into 32 bits by `mov.b32 %r, {%a, %b}`.
    std::set<std::string> packed_halves;
    for (const PtxLine &l : lines)
        if (const auto halves = packed_halves_of(l)) {
            packed_halves.insert(halves->first);
            packed_halves.insert(halves->second);
        }
    // Registers converted from unsigned integers to floats ([Note] ptxas and unsigned conversions
    // of sign-extended fields).
    std::set<std::string> converted;
    for (const PtxLine &l : lines)
        if (l.args.size() == 2 && is_unsigned_to_float_cvt(l.op)) converted.insert(l.args[1]);
    // Registers that hold the abs of another one here ([Note] ptxas and comparisons of abs with
    // NaN): from the abs on, until either register is written again (LLVM writes a phi's register
    // in every predecessor); within one basic block, or in every block after it where both are
    // written once in the text (SSA values: the abs dominates each read of its destination and the
    // operand's only write dominates the abs, so no read of the destination sees another operand).
    std::map<std::string, std::string> abs_of;
    std::string out;
    out.reserve(ptx.size() + ptx.size() / 8);
    for (size_t i = 0; i < lines.size(); ++i) {
        const PtxLine &l = lines[i];
        std::string replacement;
        if (!l.op.empty()) {
            replacement = rewrite_instruction(l.op, l.args, std::string(l.indent));
            if (replacement.empty()) replacement = rewrite_sub16(l);
            if (replacement.empty()) replacement = rewrite_byte_param_load(l);
            if (replacement.empty()) replacement = guard_float_to_int(l);
            if (replacement.empty()) replacement = select_bits(l);
            if (replacement.empty()) replacement = blend_select16(l);
            if (replacement.empty()) replacement = min_max32_in_64_bits(l);
            if (replacement.empty()) replacement = scalarize_packed_half(l);
            if (replacement.empty()) replacement = scalarize_packed_int16(l);
            if (replacement.empty()) replacement = rewrite_sub64(l, shifts64);
            if (replacement.empty()) replacement = rewrite_arithmetic_rotate(l, shifts, writes);
            if (replacement.empty()) replacement = guard_float_clamp(l, clamped);
            if (replacement.empty()) replacement = guard_abs_comparison(l, abs_of);
            if (replacement.empty()) replacement = rewrite_neg_of_abs(l, abs_of);
            if (replacement.empty()) replacement = rewrite_signed_field(l, converted);
            if (replacement.empty()) replacement = rewrite_negative_half_pack(l, half_immediates);
            if (replacement.empty()) replacement = rewrite_negated_half(l, packed_halves);
            for (const std::string &w : written_registers(l))
                for (auto it = abs_of.begin(); it != abs_of.end();)
                    it = it->first == w || it->second == w ? abs_of.erase(it) : std::next(it);
            if ((l.op == "abs.f32" || l.op == "abs.f64" || l.op == "abs.f16" || l.op == "abs.bf16") &&
                l.args.size() == 2 && l.args[0] != l.args[1])
                abs_of[l.args[0]] = l.args[1];
        } else if (trim(l.text).ends_with(":")) {
            // a label: another block; pairs of registers written once stay valid in it
            for (auto it = abs_of.begin(); it != abs_of.end();)
                it = writes[it->first] == 1 && writes[it->second] == 1 ? std::next(it) : abs_of.erase(it);
        } else if (l.text.find(".entry") != std::string_view::npos || l.text.find(".func") != std::string_view::npos) {
            abs_of.clear(); // another function
        }
        if (!replacement.empty()) {
            out += replacement;
            if (l.rest.find_first_not_of(" \t") != std::string_view::npos)
                out += "\n" + std::string(l.indent) + trim(l.rest); // a comment after the instruction
        } else {
            out += l.text;
        }
        if (i + 1 < lines.size()) out += '\n';
    }
    return out;
}

// [Note] NVPTX's lighter pipeline
// ================================
// Compiling is part of a kernel's first launch, so its time is the user's. On NVPTX three parts of
// LLVM's O3 cost time and give ember's kernels nothing:
//   - The IR passes of `nvptx_skipped_passes`. On the 64 NVPTX kernels of the lit tests and
//     bench/kernels, leaving them out, VectorCombine aside (below), changes no byte of the PTX
//     (checked with an LLVM 19 build of ember, 2026-11-29). DSE is the costly one: a dead store
//     is rare in a kernel (variables are SSA values, arrays are promoted to registers by SROA
//     before DSE runs), but on a block
//     of many stores to addresses computed from parameters DSE asks alias analysis about every
//     pair, and BasicAA decomposes both addresses each time: 22 % of the 128 x 128 SGEMM's
//     compile, for its 64 stores of C. The others (loop vectorisation, where NVPTX has no
//     vector registers to fill; loop distribution, loop load elimination, loop idiom recognition
//     (no memset or memcpy calls on a GPU); merged load/store motion; the interprocedural and
//     call-site passes, where every call is inlined; Float2Int; constraint elimination, whose
//     facts the kernels' bounds checks already give InstCombine and CVP) each cost less, together
//     several per cent.
//   - VectorCombine, which does change PTX: it splits a vector load whose lanes are read one by
//     one into scalar loads (its scalarizeLoadExtract), and the code generator's load/store
//     vectoriser joins them again (`ld.global.nc.v4` either way). In between, every pass sees
//     four loads, four addresses and, in a loop, four users of the induction variable for each
//     vector: loop strength reduction on the reduction unrolled by 4 took 41 of its 86 million
//     instructions, and leaving VectorCombine out brings the whole compile to 46 million (the
//     pipelined SGEMM 379 to 287, the reduction 30 to 26, the 128 x 128 SGEMM 268 to 243). The
//     PTX of 11 of the 64 kernels changes: the same memory operations, the SGEMMs' shared loads
//     in another order, up to 96 lines shorter; every kernel of bench/kernels ran at the same
//     speed on an H200 (2026-11-29).
//   - The code generator's Aggressive level, whose only difference for NVPTX is GVN instead of
//     EarlyCSE in the back end's IR passes (run twice), after the optimiser's GVN has already
//     done that work: about 7 % of the SGEMM's compile. O3 uses the Default level; of the 64
//     kernels one (softmax with fast::exp) differs, by 4 PTX lines, and ran at the same speed on
//     an H200, as did every kernel of bench/kernels.
// Together they take the 128 x 128 SGEMM's compile from 408 to 243 million instructions (40 %
// fewer), the pipelined SGEMM's from 420 to 287 (32 %), the reduction's from 31 to 26, softmax's
// and layer norm's 7 to 11 % (callgrind, ember-compile over three copies of each). A pass added
// to the list must keep the PTX of that corpus unchanged, or its cost and gain be measured
// (bench/kernels).
constexpr std::string_view nvptx_skipped_passes[] = {
    "DSEPass",
    "LoopVectorizePass",
    "LoopDistributePass",
    "LoopLoadEliminationPass",
    "LoopIdiomRecognizePass",
    "MergedLoadStoreMotionPass",
    "CalledValuePropagationPass",
    "CallSiteSplittingPass",
    "LibCallsShrinkWrapPass",
    "Float2IntPass",
    "ConstraintEliminationPass",
    "VectorCombinePass",
};

class NVPTXTarget final : public Target {
public:
    using Target::Target;

    /// [Note] NVPTX's lighter pipeline: O3 generates code at LLVM's Default level.
    llvm::CodeGenOptLevel codegen_level(int opt_level) const override {
        return Target::codegen_level(std::min(opt_level, 2));
    }
    std::span<const std::string_view> skipped_passes() const override {
        return nvptx_skipped_passes;
    }

    std::string triple() const override { return nvptx_triple; }
    std::string llvm_cpu() const override { return spec().cpu; }
    /// The spec's features, and at least PTX ISA 6.3 (CUDA 10.0), which every processor from
    /// sm_75 on gets by default: on sm_70 and sm_72 LLVM's defaults are 6.0 and 6.1, and an
    /// instruction newer than those aborts instruction selection there alone (activemask, which
    /// the warp operations once used, did). One floor keeps every processor on a version the
    /// code generator is tested with. A spec that names its own +ptxNN keeps it.
    std::string llvm_features() const override {
        const std::string &features = spec().features;
        if (features.find("+ptx") != std::string::npos) return features;
        const std::string &cpu = spec().cpu;
        const int sm = cpu.rfind("sm_", 0) == 0 ? std::atoi(cpu.c_str() + 3) : 0;
        if (sm >= 75) return features;
        return features.empty() ? "+ptx63" : features + ",+ptx63";
    }

    unsigned global_address_space() const override { return 1; } // NVPTX's global space
    /// A vector ld/st must be aligned to its size (PTX ISA, "Vectors"); the hardware raises
    /// CUDA_ERROR_MISALIGNED_ADDRESS otherwise, so no check is generated.
    bool faults_on_misaligned_access() const override { return true; }
    /// fma.rn.f16 from sm_53, fma.rn.bf16 from sm_80.
    bool has_fma(ir::ScalarType t) const override {
        return t == ir::ScalarType::F16 || (t == ir::ScalarType::BF16 && sm_version() >= 80);
    }
    bool shield_vector_fpext() const override { return true; }

    /// cp.async from sm_80 (Ampere): `.cg` (L2 only, as a tile streamed through shared memory
    /// wants) for 16 bytes, `.ca` for 4 and 8, the form with a source size (0 where the copy is
    /// not valid: the destination is zero-filled and nothing is read). Written as inline assembly
    /// because LLVM 19's patterns for llvm.nvvm.cp.async.* take 64-bit shared addresses only,
    /// and ember's are 32-bit ([Note] 32-bit shared memory addresses); the assembly reads and
    /// writes memory as far as LLVM knows, so no access moves across it.
    bool has_async_copy() const override { return sm_version() >= 80; }
    void emit_async_copy(llvm::IRBuilderBase &b, llvm::Value *dst, llvm::Value *src, unsigned bytes,
                         llvm::Value *valid) const override {
        const std::string op = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") +
                               ".shared.global [$0], [$1], " + std::to_string(bytes);
        llvm::Value *d = b.CreatePtrToInt(b.CreateAddrSpaceCast(dst, b.getPtrTy(3)),
                                          b.getInt32Ty());
        llvm::Value *s = b.CreatePtrToInt(b.CreateAddrSpaceCast(src, b.getPtrTy(1)),
                                          b.getInt64Ty());
        std::vector<llvm::Type *> types{b.getInt32Ty(), b.getInt64Ty()};
        std::vector<llvm::Value *> args{d, s};
        std::string text = op + ";", constraints = "r,l,~{memory}";
        if (valid) {
            types.push_back(b.getInt32Ty());
            args.push_back(b.CreateSelect(valid, b.getInt32(bytes), b.getInt32(0)));
            text = op + ", $2;";
            constraints = "r,l,r,~{memory}";
        }
        auto *fn_ty = llvm::FunctionType::get(b.getVoidTy(), types, false);
        b.CreateCall(llvm::InlineAsm::get(fn_ty, text, constraints, /*hasSideEffects=*/true), args);
    }
    void emit_async_group(llvm::IRBuilderBase &b, int32_t wait) const override {
        if (wait < 0)
            b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
        else
            b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {},
                              {b.getInt32(uint32_t(wait))});
    }

    llvm::Value *emit_special_reg(llvm::IRBuilderBase &b, ir::SpecialRegKind reg,
                                  unsigned dim) const override {
        EMBER_ASSERT(dim < 3, "special register dimension out of range");
        using namespace llvm;
        // The intrinsics per register and dimension, and the values the hardware can produce
        // (CUDA's limits: 1024 threads per block, z <= 64; grid x < 2^31, y and z < 2^16). The
        // ranges let LLVM drop sign checks and narrow index arithmetic.
        struct Info {
            Intrinsic::ID id[3];
            uint64_t lo[3], hi[3]; // [lo, hi)
        };
        static const Info thread_idx{{Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                      Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                      Intrinsic::nvvm_read_ptx_sreg_tid_z},
                                     {0, 0, 0},
                                     {1024, 1024, 64}};
        static const Info block_dim{{Intrinsic::nvvm_read_ptx_sreg_ntid_x,
                                     Intrinsic::nvvm_read_ptx_sreg_ntid_y,
                                     Intrinsic::nvvm_read_ptx_sreg_ntid_z},
                                    {1, 1, 1},
                                    {1025, 1025, 65}};
        static const Info block_idx{{Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                     Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                     Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
                                    {0, 0, 0},
                                    {0x7fffffff, 0xffff, 0xffff}};
        static const Info grid_dim{{Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                                    Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                    Intrinsic::nvvm_read_ptx_sreg_nctaid_z},
                                   {1, 1, 1},
                                   {0x80000000, 0x10000, 0x10000}};
        // At most 16 blocks in a cluster (8 without the non-portable size attribute).
        static const Info cluster_dim{{Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_x,
                                       Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_y,
                                       Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_z},
                                      {1, 1, 1},
                                      {17, 17, 17}};
        const Info *info = nullptr;
        switch (reg) {
        case ir::SpecialRegKind::ThreadIdx: info = &thread_idx; break;
        case ir::SpecialRegKind::BlockIdx: info = &block_idx; break;
        case ir::SpecialRegKind::BlockDim: info = &block_dim; break;
        case ir::SpecialRegKind::GridDim: info = &grid_dim; break;
        case ir::SpecialRegKind::ClusterDim:
            // Before sm_90 there are no clusters: every block is a cluster of one.
            if (sm_version() < 90) return b.getInt64(1);
            info = &cluster_dim;
            break;
        }
        EMBER_ASSERT(info, "unknown special register");
        CallInst *call = b.CreateIntrinsic(info->id[dim], {}, {});
        MDBuilder md(b.getContext());
        call->setMetadata(LLVMContext::MD_range,
                          md.createRange(APInt(32, info->lo[dim]), APInt(32, info->hi[dim])));
        return b.CreateZExt(call, b.getInt64Ty(), "", /*IsNonNeg=*/true);
    }

    // LLVM 19 expands frem for NVPTX as x - trunc(x / y) * y, which is wrong once x / y is large
    // (fmod(1e10, 1) comes out as -inf); CUDA's fmodf is exact through libdevice, which ember
    // does not link. So fmod is built here from exact steps: f16/bf16 go through f32, where
    // their fmod is exact too (the result is representable in the narrow type).
    llvm::Value *emit_frem(llvm::IRBuilderBase &b, llvm::Value *x, llvm::Value *y) const override {
        llvm::Type *ty = x->getType();
        if (ty->isHalfTy() || ty->isBFloatTy()) {
            llvm::Type *f32 = b.getFloatTy();
            llvm::Value *wx = b.CreateFPExt(x, f32);
            llvm::Value *wy = b.CreateFPExt(y, f32);
            return b.CreateFPTrunc(fmod_folding_constants(b, wx, wy), ty);
        }
        return fmod_folding_constants(b, x, y);
    }

    /// PTX's approximate instructions (CUDA's __expf, __logf, __sinf, ...): ex2/lg2/sin/cos
    /// .approx.f32 (subnormals kept, no .ftz), rsqrt.approx for f32 and f64, sqrt.approx.f32, and
    /// tanh.approx.f32 from sm_75.
    llvm::Value *emit_fast_math(llvm::IRBuilderBase &b, ir::Intrinsic op, llvm::Value *x) const override {
        using ir::Intrinsic;
        bool f32 = x->getType()->isFloatTy();
        auto call = [&](llvm::Intrinsic::ID id, llvm::Value *v) { return b.CreateIntrinsic(id, {}, {v}); };
        auto f = [&](double c) { return llvm::ConstantFP::get(x->getType(), c); };
        if (op == Intrinsic::FastRsqrt)
            return call(f32 ? llvm::Intrinsic::nvvm_rsqrt_approx_f : llvm::Intrinsic::nvvm_rsqrt_approx_d, x);
        if (!f32) return nullptr;
        switch (op) {
        case Intrinsic::FastExp2: return call(llvm::Intrinsic::nvvm_ex2_approx_f, x);
        case Intrinsic::FastExp:
            return call(llvm::Intrinsic::nvvm_ex2_approx_f, b.CreateFMul(x, f(1.4426950408889634)));
        case Intrinsic::FastLog2: return call(llvm::Intrinsic::nvvm_lg2_approx_f, x);
        case Intrinsic::FastLog:
            return b.CreateFMul(call(llvm::Intrinsic::nvvm_lg2_approx_f, x), f(0.6931471805599453));
        case Intrinsic::FastSin: return call(llvm::Intrinsic::nvvm_sin_approx_f, x);
        case Intrinsic::FastCos: return call(llvm::Intrinsic::nvvm_cos_approx_f, x);
        case Intrinsic::FastSqrt: return call(llvm::Intrinsic::nvvm_sqrt_approx_f, x);
        case Intrinsic::FastTanh: {
            if (sm_version() < 75) return nullptr;
            auto *fnty = llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy()}, false);
            auto *asm_ = llvm::InlineAsm::get(fnty, "tanh.approx.f32 $0, $1;", "=f,f", false);
            return b.CreateCall(asm_, {x});
        }
        default: return nullptr;
        }
    }

    /// `atom.cta` / `atom.sys` through inline PTX: LLVM 19's NVPTX back end ignores syncscope on
    /// atomic instructions (everything is .gpu). Generic addressing serves global and shared
    /// pointers alike; the semantics is .relaxed, as for every ember atomic.
    llvm::Value *emit_scoped_atomic(llvm::IRBuilderBase &b, ir::AtomicOp op, ir::Type t, llvm::Value *addr,
                                    llvm::Value *value, llvm::Value *compare,
                                    ir::FenceScope scope) const override {
        const bool wide = t.bits() == 64;
        std::string type;
        const char *name = nullptr;
        switch (op) {
        case ir::AtomicOp::Add:
        case ir::AtomicOp::Sub:
            name = "add";
            type = t.is_float() ? (wide ? "f64" : "f32") : (wide ? "u64" : "u32");
            if (op == ir::AtomicOp::Sub) value = b.CreateNeg(value);
            break;
        case ir::AtomicOp::Min:
        case ir::AtomicOp::Max:
            name = op == ir::AtomicOp::Min ? "min" : "max";
            type = std::string(t.is_signed_int() ? "s" : "u") + (wide ? "64" : "32");
            break;
        case ir::AtomicOp::Exchange: name = "exch"; type = wide ? "b64" : "b32"; break;
        case ir::AtomicOp::Cas: name = "cas"; type = wide ? "b64" : "b32"; break;
        case ir::AtomicOp::And: name = "and"; type = wide ? "b64" : "b32"; break;
        case ir::AtomicOp::Or: name = "or"; type = wide ? "b64" : "b32"; break;
        case ir::AtomicOp::Xor: name = "xor"; type = wide ? "b64" : "b32"; break;
        }
        const char *reg = t.is_float() ? (wide ? "d" : "f") : (wide ? "l" : "r");
        std::string text = std::string("atom.") + (scope == ir::FenceScope::Block ? "cta" : "sys") + "." +
                           name + "." + type + " $0, [$1], $2" + (compare ? ", $3;" : ";");
        std::string constraints = std::string("=") + reg + ",l," + reg + (compare ? std::string(",") + reg : "") +
                                  ",~{memory}";
        llvm::Value *generic = b.CreatePtrToInt(
            b.CreateAddrSpaceCast(addr, llvm::PointerType::get(b.getContext(), 0)), b.getInt64Ty());
        llvm::Type *ty = value->getType();
        std::vector<llvm::Type *> params{b.getInt64Ty(), ty};
        std::vector<llvm::Value *> args{generic};
        // cas: atom.cas d, [a], compare, new.
        if (compare) {
            params.push_back(ty);
            args.push_back(compare);
        }
        args.push_back(value);
        auto *fnty = llvm::FunctionType::get(ty, params, false);
        return b.CreateCall(llvm::InlineAsm::get(fnty, text, constraints, /*hasSideEffects=*/true), args);
    }

    /// mma.sync needs sm_80 for bf16, tf32 and m16n8k16 f16, sm_75 for m16n8k8 f16; ldmatrix
    /// sm_75.
    std::string matrix_op_problem(const ir::ExprNode &op) const override {
        int need = 75;
        if (op.kind == ir::NodeKind::Mma) {
            const auto &mma = static_cast<const ir::Mma &>(op);
            need = mma.input == ir::MmaInput::F16 && mma.shape.k == 8 ? 75 : 80;
            if (mma.input == ir::MmaInput::E4M3 || mma.input == ir::MmaInput::E5M2) need = 89;
        }
        if (sm_version() >= need) return "";
        return "needs sm_" + std::to_string(need) + " or later, and the target is " + spec().cpu;
    }

    /// wgmma needs sm_90a (an architecture-specific feature of Hopper); mbarriers with
    /// transaction counts, cp.async.bulk.tensor and the async proxy fence need sm_90.
    std::string async_tensor_problem(const ir::StmtNode &op) const override {
        const bool wgmma = op.kind == ir::NodeKind::Wgmma ||
                           (op.kind == ir::NodeKind::TensorSync &&
                            static_cast<const ir::TensorSync &>(op).sync !=
                                ir::TensorSyncKind::ProxyFence);
        if (wgmma) {
            if (spec().cpu == "sm_90a") return "";
            return "needs sm_90a (the runtime compiles for it on a compute capability 9.0 device; "
                   "ember-compile --target nvptx:sm_90a), and the target is " +
                   spec().cpu;
        }
        if (sm_version() >= 90) return "";
        return "needs sm_90 or later, and the target is " + spec().cpu;
    }

    /// [Note] Accumulators through inline assembly
    /// ===========================================
    /// LLVM 19 has no intrinsics for wgmma.mma_async, so it and its fence and wait are inline
    /// assembly. The accumulators go in and come out of each as "+f" operands (an output and its
    /// tied input): the wgmma writes them, and the fence and the wait pass them through, so every
    /// use of an accumulator depends on the wait that completes it and cannot move above it, and
    /// none of the values of a wgmma in flight is copied or read by other code (which would make
    /// ptxas serialise the wgmmas).
    static void pinned_asm(llvm::IRBuilderBase &b, const std::string &text,
                           std::vector<llvm::Value *> &acc, const std::string &inputs,
                           const std::vector<llvm::Value *> &input_values) {
        const unsigned n = static_cast<unsigned>(acc.size()) * 4;
        std::vector<llvm::Type *> params, outs(n, b.getFloatTy());
        std::vector<llvm::Value *> args;
        std::string constraints;
        for (unsigned i = 0; i < n; ++i) constraints += (i ? ",=f" : "=f");
        for (llvm::Value *v : input_values) {
            params.push_back(v->getType());
            args.push_back(v);
        }
        if (!inputs.empty()) constraints += (constraints.empty() ? "" : ",") + inputs;
        for (unsigned i = 0; i < n; ++i) {
            params.push_back(b.getFloatTy());
            args.push_back(b.CreateExtractElement(acc[i / 4], uint64_t(i % 4)));
            constraints += (constraints.empty() ? "" : ",") + std::to_string(i);
        }
        constraints += constraints.empty() ? "~{memory}" : ",~{memory}";
        llvm::Type *ret = n == 0   ? b.getVoidTy()
                          : n == 1 ? b.getFloatTy()
                                   : static_cast<llvm::Type *>(
                                         llvm::StructType::get(b.getContext(), outs));
        auto *fn_ty = llvm::FunctionType::get(ret, params, false);
        llvm::Value *r = b.CreateCall(
            llvm::InlineAsm::get(fn_ty, text, constraints, /*hasSideEffects=*/true), args);
        llvm::Type *f32x4 = llvm::FixedVectorType::get(b.getFloatTy(), 4);
        for (unsigned t = 0; t < acc.size(); ++t) {
            llvm::Value *v = llvm::PoisonValue::get(f32x4);
            for (unsigned e = 0; e < 4; ++e)
                v = b.CreateInsertElement(v, n == 1 ? r : b.CreateExtractValue(r, 4 * t + e),
                                          uint64_t(e));
            acc[t] = v;
        }
    }

    /// A shared-memory address as the 32-bit register PTX takes ([Note] 32-bit shared memory
    /// addresses).
    static llvm::Value *shared_u32(llvm::IRBuilderBase &b, llvm::Value *p) {
        return b.CreatePtrToInt(b.CreateAddrSpaceCast(p, b.getPtrTy(3)), b.getInt32Ty());
    }

    /// The wgmma shared-memory matrix descriptor of a 128-byte swizzled K-major operand at `p`:
    /// the address (bits 4 to 17 of it) in bits 0-13, the leading-dimension byte offset (unused
    /// by this layout: 1) in bits 16-29, the stride between groups of 8 rows (1024 bytes) in bits
    /// 32-45, both in units of 16 bytes, and the layout (1: 128-byte swizzle) in bits 62-63.
    /// An MN-major operand has the bytes between its groups of 64 columns as the leading-dimension
    /// byte offset (`leading`); the stride between groups of 8 rows of k stays 1024.
    static llvm::Value *matrix_descriptor(llvm::IRBuilderBase &b, llvm::Value *p,
                                          uint32_t leading = 16) {
        llvm::Value *addr = b.CreateZExt(shared_u32(b, p), b.getInt64Ty());
        llvm::Value *start = b.CreateLShr(b.CreateAnd(addr, b.getInt64(0x3FFFF)), b.getInt64(4));
        const uint64_t fixed = (uint64_t(leading >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
                               (uint64_t(1) << 62);
        return b.CreateOr(start, b.getInt64(fixed));
    }

    /// `wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<in>.<in>` with both operands' descriptors,
    /// scale-d true (D = A B + D), A and B not transposed ([Note] Accumulators through inline
    /// assembly).
    void emit_wgmma(llvm::IRBuilderBase &b, const ir::Wgmma &op, llvm::Value *a, llvm::Value *bv,
                    std::vector<llvm::Value *> &acc) const override {
        const unsigned n = static_cast<unsigned>(acc.size()) * 4;
        const std::string in(ir::to_string(op.input));
        std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(n + 2) +
                           ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(op.n) +
                           "k16.f32." + in + "." + in + " {";
        for (unsigned i = 0; i < n; ++i) text += (i ? ", $" : "$") + std::to_string(i);
        // The last immediate transposes B: 1 when it is MN-major.
        text += "}, $" + std::to_string(n) + ", $" + std::to_string(n + 1) + ", p, 1, 1, 0, " +
                (op.b_mn_stride ? "1" : "0") + ";\n}";
        llvm::Value *b_desc = op.b_mn_stride ? matrix_descriptor(b, bv, op.b_mn_stride)
                                             : matrix_descriptor(b, bv);
        pinned_asm(b, text, acc, "l,l,r", {matrix_descriptor(b, a), b_desc, b.getInt32(1)});
    }

    void emit_tensor_sync(llvm::IRBuilderBase &b, const ir::TensorSync &op,
                          std::vector<llvm::Value *> &acc) const override {
        switch (op.sync) {
        case ir::TensorSyncKind::WgmmaFence:
            return pinned_asm(b, "wgmma.fence.sync.aligned;", acc, "", {});
        case ir::TensorSyncKind::WgmmaCommit:
            return pinned_asm(b, "wgmma.commit_group.sync.aligned;", acc, "", {});
        case ir::TensorSyncKind::WgmmaWait:
            return pinned_asm(b,
                              "wgmma.wait_group.sync.aligned " + std::to_string(op.pending) + ";",
                              acc, "", {});
        case ir::TensorSyncKind::ProxyFence:
            return pinned_asm(b, "fence.proxy.async.shared::cta;", acc, "", {});
        }
    }

    /// mbarrier.init / arrive / arrive.expect_tx, and a loop of mbarrier.try_wait.parity (which
    /// itself waits a while before it gives up) until the phase has completed.
    void emit_mbarrier(llvm::IRBuilderBase &b, ir::MBarrierOp op, llvm::Value *bar,
                       llvm::Value *value) const override {
        llvm::Value *addr = shared_u32(b, bar);
        llvm::Type *i32 = b.getInt32Ty();
        auto run = [&](const char *text, const char *constraints, std::vector<llvm::Value *> args,
                       llvm::Type *ret) -> llvm::Value * {
            std::vector<llvm::Type *> params;
            for (llvm::Value *v : args) params.push_back(v->getType());
            auto *fn_ty = llvm::FunctionType::get(ret, params, false);
            return b.CreateCall(
                llvm::InlineAsm::get(fn_ty, text, constraints, /*hasSideEffects=*/true), args);
        };
        switch (op) {
        case ir::MBarrierOp::Init:
            run("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", {addr, value},
                b.getVoidTy());
            return;
        case ir::MBarrierOp::Arrive:
            run("mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", {addr}, b.getVoidTy());
            return;
        case ir::MBarrierOp::ArriveCluster:
            // The peer's mbarrier at the same offset (mapa), arrived on with the default
            // semantics (release at the block's scope), as CUTLASS's cluster pipelines do: a
            // release at cluster scope made every arrival wait for this thread's outstanding
            // memory operations, and halved the speed of examples/gemm_wgmma.h.
            run("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
                "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
                "r,r,~{memory}", {addr, value}, b.getVoidTy());
            return;
        case ir::MBarrierOp::ExpectTx:
            run("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
                {addr, value}, b.getVoidTy());
            return;
        case ir::MBarrierOp::Wait: {
            llvm::Function *f = b.GetInsertBlock()->getParent();
            llvm::BasicBlock *loop = llvm::BasicBlock::Create(b.getContext(), "mbarrier.wait", f);
            llvm::BasicBlock *done = llvm::BasicBlock::Create(b.getContext(), "mbarrier.done", f);
            b.CreateBr(loop);
            b.SetInsertPoint(loop);
            llvm::Value *ok = run(
                "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                "selp.u32 $0, 1, 0, p;\n}",
                "=r,r,r,~{memory}", {addr, b.CreateAnd(value, b.getInt32(1))}, i32);
            b.CreateCondBr(b.CreateICmpNE(ok, b.getInt32(0)), done, loop);
            b.SetInsertPoint(done);
            return;
        }
        }
    }

    void emit_tma_load(llvm::IRBuilderBase &b, llvm::Value *dst, llvm::Value *map, llvm::Value *x,
                       llvm::Value *y, llvm::Value *bar, llvm::Value *multicast) const override {
        llvm::Value *generic_map = b.CreatePtrToInt(
            b.CreateAddrSpaceCast(map, llvm::PointerType::get(b.getContext(), 0)), b.getInt64Ty());
        std::vector<llvm::Value *> args{shared_u32(b, dst), generic_map, x, y, shared_u32(b, bar)};
        if (multicast) args.push_back(multicast);
        std::vector<llvm::Type *> params;
        for (llvm::Value *v : args) params.push_back(v->getType());
        auto *fn_ty = llvm::FunctionType::get(b.getVoidTy(), params, false);
        b.CreateCall(llvm::InlineAsm::get(
                         fn_ty,
                         multicast
                             ? "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                               "complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], "
                               "[$4], $5;"
                             : "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                               "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
                         multicast ? "r,l,r,r,r,h,~{memory}" : "r,l,r,r,r,~{memory}",
                         /*hasSideEffects=*/true),
                     args);
    }

    /// [Note] Fragments as PTX registers: the mma and ldmatrix intrinsics take and return the
    /// fragments as 32-bit registers (i32, <2 x half>, float), several per operand; ember's
    /// fragments are vectors. `pieces` splits a vector into the intrinsic's next parameters, and
    /// `joined` puts a returned struct back together as a vector: both are bitcasts through
    /// <N x i32>, which cost no instruction.
    static void pieces(llvm::IRBuilderBase &b, llvm::Value *v, llvm::FunctionType *fn,
                       std::vector<llvm::Value *> &args) {
        const unsigned bits = static_cast<unsigned>(
            v->getType()->getPrimitiveSizeInBits().getFixedValue());
        llvm::Value *words = b.CreateBitCast(v,
                                             llvm::FixedVectorType::get(b.getInt32Ty(), bits / 32));
        for (unsigned i = 0; i < bits / 32; ++i) {
            llvm::Type *param = fn->getParamType(static_cast<unsigned>(args.size()));
            args.push_back(b.CreateBitCast(b.CreateExtractElement(words, uint64_t(i)), param));
        }
    }
    static llvm::Value *joined(llvm::IRBuilderBase &b, llvm::Value *result, llvm::Type *to) {
        llvm::Type *rt = result->getType();
        const unsigned n = rt->isStructTy() ? rt->getStructNumElements() : 1;
        llvm::Value *words = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getInt32Ty(), n));
        for (unsigned i = 0; i < n; ++i) {
            llvm::Value *piece = rt->isStructTy() ? b.CreateExtractValue(result, i) : result;
            words = b.CreateInsertElement(words, b.CreateBitCast(piece, b.getInt32Ty()),
                                          uint64_t(i));
        }
        return b.CreateBitCast(words, to);
    }

    /// mma.sync.aligned.<shape>.row.col through LLVM's intrinsics ([Note] Fragments as PTX
    /// registers).
    llvm::Value *emit_mma(llvm::IRBuilderBase &b, const ir::Mma &op, llvm::Value *a,
                          llvm::Value *bv, llvm::Value *c) const override {
        using ID = llvm::Intrinsic::ID;
        namespace I = llvm::Intrinsic;
        const bool half_c = c->getType()->getScalarType()->isHalfTy();
        ID id = I::not_intrinsic;
        switch (op.input) {
        case ir::MmaInput::F16:
            if (op.shape.k == 16)
                id = half_c ? I::nvvm_mma_m16n8k16_row_col_f16_f16
                            : I::nvvm_mma_m16n8k16_row_col_f32_f32;
            else
                id = half_c ? I::nvvm_mma_m16n8k8_row_col_f16_f16
                            : I::nvvm_mma_m16n8k8_row_col_f32_f32;
            break;
        case ir::MmaInput::BF16:
            id = op.shape.k == 16 ? I::nvvm_mma_m16n8k16_row_col_bf16
                                  : I::nvvm_mma_m16n8k8_row_col_bf16;
            break;
        case ir::MmaInput::TF32: id = I::nvvm_mma_m16n8k8_row_col_tf32; break;
        case ir::MmaInput::E4M3:
        case ir::MmaInput::E5M2: return emit_fp8_mma(b, op, a, bv, c);
        }
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Function *fn = llvm::Intrinsic::getDeclaration(&m, id);
        std::vector<llvm::Value *> args;
        pieces(b, a, fn->getFunctionType(), args);
        pieces(b, bv, fn->getFunctionType(), args);
        pieces(b, c, fn->getFunctionType(), args);
        return joined(b, b.CreateCall(fn, args), c->getType());
    }

    /// mma.sync.aligned.m16n8k32.row.col.f32.<in>.<in>.f32 for the 8-bit floats (sm_89, PTX ISA
    /// 8.4), which LLVM 19 has no intrinsic for: inline assembly, convergent as the intrinsics
    /// are, taking A as four 32-bit registers, B as two and C as four floats; patch_assembly
    /// raises the module's PTX version for it ([Note] PTX version of 8-bit float mma).
    static llvm::Value *emit_fp8_mma(llvm::IRBuilderBase &b, const ir::Mma &op, llvm::Value *a,
                                     llvm::Value *bv, llvm::Value *c) {
        llvm::Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
        llvm::Type *result = llvm::StructType::get(b.getContext(), {f32, f32, f32, f32});
        auto *fty = llvm::FunctionType::get(
            result, {i32, i32, i32, i32, i32, i32, f32, f32, f32, f32}, false);
        const std::string in(ir::to_string(op.input));
        auto *asm_ = llvm::InlineAsm::get(fty,
                                          "mma.sync.aligned.m16n8k32.row.col.f32." + in + "." + in +
                                              ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
                                              "{$10, $11, $12, $13};",
                                          "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
                                          /*hasSideEffects=*/false);
        std::vector<llvm::Value *> args;
        pieces(b, a, fty, args);
        pieces(b, bv, fty, args);
        pieces(b, c, fty, args);
        llvm::CallInst *call = b.CreateCall(fty, asm_, args);
        call->addFnAttr(llvm::Attribute::Convergent);
        call->addFnAttr(llvm::Attribute::NoUnwind);
        return joined(b, call, c->getType());
    }

    /// ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 ([Note] Fragments as PTX registers).
    llvm::Value *emit_matrix_load(llvm::IRBuilderBase &b, const ir::MatrixLoad &op,
                                  llvm::Value *row) const override {
        namespace I = llvm::Intrinsic;
        const llvm::Intrinsic::ID ids[2][3] = {{I::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16,
                                                I::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16,
                                                I::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16},
                                               {I::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16,
                                                I::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16,
                                                I::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16}};
        const unsigned which = op.count == 1 ? 0 : op.count == 2 ? 1 : 2;
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        // The intrinsics are overloaded on the pointer: the shared one gives ldmatrix.shared.
        llvm::Function *fn = llvm::Intrinsic::getDeclaration(&m, ids[op.trans][which],
                                                             {row->getType()});
        llvm::Type *elem = op.type.element() == ir::ScalarType::F16 ? b.getHalfTy()
                           : op.type.element() == ir::ScalarType::BF16
                               ? b.getBFloatTy()
                               : static_cast<llvm::Type *>(b.getInt16Ty());
        return joined(b, b.CreateCall(fn, {row}), llvm::FixedVectorType::get(elem, 2 * op.count));
    }

    /// The XX of `sm_XX` (0 when the name has another form).
    int sm_version() const {
        const std::string &cpu = spec().cpu;
        if (cpu.rfind("sm_", 0) != 0) return 0;
        return std::atoi(cpu.c_str() + 3);
    }

    /// CUDA's device printf: vprintf(format, args) with the arguments packed into a local
    /// buffer, each at its natural alignment (what nvcc does for printf).
    void emit_printf(llvm::IRBuilderBase &b, llvm::Value *format,
                     llvm::ArrayRef<llvm::Value *> args) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::FunctionCallee vprintf = m.getOrInsertFunction(
            "vprintf", llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy()}, false));
        llvm::Value *packed = llvm::ConstantPointerNull::get(b.getPtrTy());
        if (!args.empty()) {
            std::vector<llvm::Type *> fields;
            for (llvm::Value *a : args) fields.push_back(a->getType());
            llvm::StructType *st = llvm::StructType::get(m.getContext(), fields);
            // The buffer lives in the function's entry block, like every other alloca.
            llvm::Function *f = b.GetInsertBlock()->getParent();
            llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
            llvm::AllocaInst *buf = entry.CreateAlloca(st, nullptr, "printf.args");
            for (unsigned i = 0; i < args.size(); ++i)
                b.CreateStore(args[i], b.CreateStructGEP(st, buf, i));
            packed = buf;
        }
        b.CreateCall(vprintf, {format, packed});
    }

    llvm::Error emit_barrier(llvm::IRBuilderBase &b, std::string_view,
                             ir::BarrierScope scope) const override {
        if (scope == ir::BarrierScope::Cluster) {
            // barrier.cluster.arrive (release) then barrier.cluster.wait (acquire); every thread
            // of the block takes part, as in bar.sync, hence the aligned forms.
            b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {});
            b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
            return llvm::Error::success();
        }
        b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); // bar.sync 0
        return llvm::Error::success();
    }

    /// The lanes of this thread's warp that exist: all 32 but in a partial last warp of a block
    /// whose thread count is not a multiple of 32. Computed from the special registers, which
    /// LLVM hoists and shares between the warp operations of a kernel.
    static llvm::Value *existing_lanes(llvm::IRBuilderBase &b) {
        auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateIntrinsic(id, {}, {}); };
        llvm::Value *nx = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
        llvm::Value *ny = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y);
        llvm::Value *nz = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z);
        llvm::Value *tx = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
        llvm::Value *ty = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y);
        llvm::Value *tz = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z);
        // At most 1024 threads a block: 32-bit arithmetic does not overflow.
        llvm::Value *threads = b.CreateNUWMul(b.CreateNUWMul(nx, ny), nz);
        llvm::Value *linear = b.CreateNUWAdd(tx, b.CreateNUWMul(nx, b.CreateNUWAdd(ty, b.CreateNUWMul(ny, tz))));
        llvm::Value *left = b.CreateSub(threads, b.CreateAnd(linear, b.getInt32(~31u)), "warp.lanes");
        llvm::Value *partial = b.CreateSub(b.CreateShl(b.getInt32(1), left), b.getInt32(1));
        llvm::Value *full = b.CreateICmpUGE(left, b.getInt32(32));
        return b.CreateSelect(full, b.getInt32(~0u), partial, "warp.mask");
    }

    /// shfl.sync / vote.sync over every existing lane of the warp ([Note] IR semantics: all of
    /// them execute the operation together). Not activemask: after divergent code the lanes of a
    /// warp need not have reconverged (independent thread scheduling, sm_70 on), and a shuffle
    /// over only the lanes active at that moment reads undefined values from the others; a
    /// .sync over all of them waits for them. Lanes that have returned are not waited for (PTX:
    /// the instruction waits for the non-exited threads of the mask); reading one is undefined.
    llvm::Value *emit_warp(llvm::IRBuilderBase &b, ir::WarpOp op, llvm::Value *value,
                           llvm::Value *lane) const override {
        llvm::Value *mask = existing_lanes(b);
        if (op == ir::WarpOp::WaveBallot) // the wave is the warp
            return b.CreateZExt(b.CreateIntrinsic(llvm::Intrinsic::nvvm_vote_ballot_sync, {}, {mask, value}),
                                b.getInt64Ty());
        if (!ir::is_shuffle(op)) {
            llvm::Intrinsic::ID id = op == ir::WarpOp::Ballot ? llvm::Intrinsic::nvvm_vote_ballot_sync
                                     : op == ir::WarpOp::Any  ? llvm::Intrinsic::nvvm_vote_any_sync
                                                              : llvm::Intrinsic::nvvm_vote_all_sync;
            return b.CreateIntrinsic(id, {}, {mask, value});
        }
        llvm::Intrinsic::ID id = op == ir::WarpOp::ShuffleIdx ? llvm::Intrinsic::nvvm_shfl_sync_idx_i32
                                 : op == ir::WarpOp::ShuffleUp ? llvm::Intrinsic::nvvm_shfl_sync_up_i32
                                 : op == ir::WarpOp::ShuffleDown ? llvm::Intrinsic::nvvm_shfl_sync_down_i32
                                                                 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
        // shuffle_up/down read lane -/+ delta and give the reader's own value outside [0, 32)
        // ([Note] IR semantics), but shfl.up/down read only the delta's low 5 bits (a delta of 39
        // read lane + 7). A delta that is not a constant in [0, 32) therefore becomes the source
        // lane, computed in 64 bits, and shfl.idx reads it (or the reader's own lane).
        auto *constant_delta = llvm::dyn_cast<llvm::ConstantInt>(lane);
        if ((op == ir::WarpOp::ShuffleUp || op == ir::WarpOp::ShuffleDown) &&
            !(constant_delta && constant_delta->getSExtValue() >= 0 && constant_delta->getSExtValue() < 32)) {
            llvm::Value *me = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_laneid, {}, {});
            llvm::Value *me64 = b.CreateZExt(me, b.getInt64Ty());
            llvm::Value *delta = b.CreateSExt(lane, b.getInt64Ty());
            llvm::Value *src = op == ir::WarpOp::ShuffleUp ? b.CreateSub(me64, delta) : b.CreateAdd(me64, delta);
            llvm::Value *inside = b.CreateICmpULT(src, b.getInt64(32), "shfl.inside");
            lane = b.CreateSelect(inside, b.CreateTrunc(src, b.getInt32Ty()), me, "shfl.lane");
            id = llvm::Intrinsic::nvvm_shfl_sync_idx_i32;
            op = ir::WarpOp::ShuffleIdx;
        }
        // The c operand: clamp to lane 31 (segment mask 0) for all but up, which clamps at 0.
        llvm::Value *c = b.getInt32(op == ir::WarpOp::ShuffleUp ? 0 : 0x1f);
        auto shfl32 = [&](llvm::Value *v) { return b.CreateIntrinsic(id, {}, {mask, v, lane, c}); };
        if (value->getType()->isIntegerTy(32)) return shfl32(value);
        // 64 bits: the two halves travel separately.
        llvm::Value *lo = shfl32(b.CreateTrunc(value, b.getInt32Ty()));
        llvm::Value *hi = shfl32(b.CreateTrunc(b.CreateLShr(value, 32), b.getInt32Ty()));
        llvm::Value *lo64 = b.CreateZExt(lo, b.getInt64Ty());
        llvm::Value *hi64 = b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32);
        return b.CreateOr(lo64, hi64);
    }

    /// membar.cta / membar.gl / membar.sys (CUDA's __threadfence_block / _ / _system).
    void emit_fence(llvm::IRBuilderBase &b, ir::FenceScope scope) const override {
        llvm::Intrinsic::ID id = scope == ir::FenceScope::Block    ? llvm::Intrinsic::nvvm_membar_cta
                                 : scope == ir::FenceScope::Device ? llvm::Intrinsic::nvvm_membar_gl
                                                                   : llvm::Intrinsic::nvvm_membar_sys;
        b.CreateIntrinsic(id, {}, {});
    }

    unsigned shared_address_space() const override { return 3; }
    unsigned constant_address_space() const override { return 4; }

    llvm::Value *emit_shared_array(llvm::IRBuilderBase &b, llvm::Type *elem, uint64_t count, uint64_t,
                                   const llvm::Twine &name) const override {
        return internal_shared_array(b, elem, count, name, shared_address_space());
    }

    llvm::Value *emit_dynamic_shared(llvm::IRBuilderBase &b, const llvm::Twine &name) const override {
        return external_shared_array(b, name, shared_address_space());
    }

    llvm::Error finish_module(llvm::Module &m, llvm::Function &kernel,
                              const KernelFacts &facts) const override {
        // LLVM 19 has no ptx_kernel calling convention yet: a kernel is marked by
        // !nvvm.annotations = !{!{ptr @k, !"kernel", i32 1}}, and its launch bounds likewise
        // ("maxntidx", "minctasm", "maxnreg": PTX's .maxntid, .minnctapersm, .maxnreg).
        llvm::LLVMContext &ctx = m.getContext();
        llvm::NamedMDNode *annotations = m.getOrInsertNamedMetadata("nvvm.annotations");
        auto annotate = [&](const char *key, uint32_t value) {
            llvm::Metadata *ops[] = {llvm::ValueAsMetadata::get(&kernel),
                                     llvm::MDString::get(ctx, key),
                                     llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                         llvm::Type::getInt32Ty(ctx), value))};
            annotations->addOperand(llvm::MDNode::get(ctx, ops));
        };
        annotate("kernel", 1);
        if (facts.bounds.max_threads) annotate("maxntidx", facts.bounds.max_threads);
        if (facts.bounds.min_blocks) annotate("minctasm", facts.bounds.min_blocks);
        if (facts.bounds.max_registers) annotate("maxnreg", facts.bounds.max_registers);
        return llvm::Error::success();
    }

    void prepare_codegen(llvm::Module &m) const override {
        copysign_on_bits(m);
        select_for_sitofp_i1(m);
        native_float_to_int(m);
        opaque_bf16_call_constants(m);
        scalar_compares_of_16bit_pairs(m);
        scalar_half_vector_arithmetic(m);
        inline_64bit_division(m);
    }

    /// [Note] PTX version of 8-bit float mma
    /// =====================================
    /// mma.sync with e4m3 or e5m2 inputs is PTX ISA 8.4 (CUDA 12.4), later than the version
    /// LLVM 19 declares for sm_89 (7.8) and sm_90 (8.0). A module that has one declares 8.4
    /// instead (no spec with its own +ptxNN is touched: it gets what it asked for), so only
    /// those kernels need a driver of CUDA 12.4 or later; an older one refuses the PTX and the
    /// load fails naming the kernel. Everything else in the module means the same in 8.4.
    ///
    /// [Note] PTX version of Hopper's asynchronous operations
    /// ======================================================
    /// The tensor memory accelerator's copies, `mbarrier.arrive.expect_tx`, `fence.proxy.async`
    /// and everything addressed `.shared::cluster` (remote arrivals, multicast) are PTX ISA 8.0,
    /// but LLVM 19 declares 7.8 for sm_90 (8.0 only for sm_90a), and ptxas refuses the module.
    /// A module that has one of them declares 8.0 at least (the same exception for +ptxNN), which
    /// a CUDA 12.0 driver reads, as sm_90a already needs.
    std::string patch_assembly(std::string text) const override {
        if (spec().features.find("+ptx") == std::string::npos) {
            if (text.find(".f32.e4m3.e4m3.f32") != std::string::npos ||
                text.find(".f32.e5m2.e5m2.f32") != std::string::npos)
                text = with_ptx_version_at_least(std::move(text), 8, 4);
            for (const char *ptx80 :
                 {"cp.async.bulk", ".expect_tx", "fence.proxy.async", "::cluster"})
                if (text.find(ptx80) != std::string::npos) {
                    text = with_ptx_version_at_least(std::move(text), 8, 0);
                    break;
                }
        }
        return patch_ptx(std::move(text));
    }

    /// `ptx` declaring `.version major.minor` where it declared an older one.
    static std::string with_ptx_version_at_least(std::string ptx, int major, int minor) {
        const size_t at = ptx.find("\n.version ");
        if (at == std::string::npos) return ptx;
        const size_t start = at + 10, end = ptx.find('\n', start);
        int have_major = 0, have_minor = 0;
        if (std::sscanf(ptx.c_str() + start, "%d.%d", &have_major, &have_minor) != 2) return ptx;
        if (have_major > major || (have_major == major && have_minor >= minor)) return ptx;
        return ptx.replace(start, end - start, std::to_string(major) + "." + std::to_string(minor));
    }

    llvm::CodeGenFileType binary_file_type() const override {
        return llvm::CodeGenFileType::AssemblyFile;
    }
};

} // namespace

llvm::Expected<std::unique_ptr<Target>> new_nvptx_target(const TargetSpec &spec, bool validate) {
    if (!validate) return std::make_unique<NVPTXTarget>(spec);
    if (llvm::Error err = check_cpu_and_features(spec, nvptx_triple, spec.cpu, spec.features))
        return err;
    return std::make_unique<NVPTXTarget>(spec);
}

} // namespace ember::detail

#else // !EMBER_WITH_NVPTX

llvm::Expected<std::unique_ptr<ember::detail::Target>>
ember::detail::new_nvptx_target(const TargetSpec &spec, bool) {
    return make_target_unavailable("target '" + spec.to_string() +
                                   "' needs the NVPTX back end, but ember was built with "
                                   "EMBER_ENABLE_NVPTX=OFF (or an LLVM without NVPTX)");
}

#endif
