/// \file
/// The target-independent lowering of kernel IR to LLVM IR (Halide's CodeGen_LLVM, without the
/// per-target subclasses: targets answer through hooks).
#include "CodeGenLLVM.h"

#include "LLVMError.h"
#include "math/MathLib.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/PrintBuffer.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember::detail {
namespace {

using ir::ScalarType;

class CodeGenLLVM {
public:
    CodeGenLLVM(const ir::Kernel &k, const Target &target, llvm::LLVMContext &ctx)
        : kernel_(k), target_(target), ctx_(ctx), b_(ctx) {}

    llvm::Expected<std::unique_ptr<llvm::Module>> run(const llvm::DataLayout &dl);

private:
    // --- types -------------------------------------------------------------------------------
    llvm::Type *scalar_type(ScalarType s) const;
    /// The type of a value in registers: bool is i1.
    llvm::Type *value_type(const ir::Type &t) const;
    /// The type of a value in memory and as a kernel parameter: bool is i8.
    llvm::Type *memory_type(const ir::Type &t) const;

    // --- expressions -------------------------------------------------------------------------
    llvm::Value *emit(const ir::Expr &e);
#define EMBER_IR_EXPR(Name) llvm::Value *visit(const ir::Name *op);
#include "ember/compiler/IRNodes.def"
    llvm::Value *emit_div_mod(bool is_div, const ir::Type &t, llvm::Value *a, llvm::Value *b);
    llvm::Value *contractible(llvm::Value *v);
    /// print through ember's print buffer ([Note] Print buffer): `format` as for printf, `args`
    /// i1, i32, i64 or double.
    void emit_print_to_buffer(const std::string &format, llvm::ArrayRef<llvm::Value *> args);
    llvm::Value *emit_half_fma(llvm::Value *a, llvm::Value *b, llvm::Value *c);
    /// fpext of v to ty, with the operand of a vector frozen where the target asks
    /// (Target::shield_vector_fpext).
    llvm::Value *widen_float(llvm::Value *v, llvm::Type *ty);
    llvm::Value *emit_int_to_bf16(llvm::Value *v, const ir::Type &from);
    llvm::Value *emit_int_to_f16(llvm::Value *v, const ir::Type &from);
    /// [Note] 8-bit floats from bits: the f32 value of e4m3 or e5m2 bits (i8 or a vector of
    /// them), exactly, and the bits of an f32 rounded to nearest even and saturated.
    llvm::Value *fp8_to_f32(llvm::Value *bits, bool e4m3);
    llvm::Value *f32_to_fp8(llvm::Value *f, bool e4m3);
    llvm::Value *emit_float_min_max(llvm::Intrinsic::ID id, llvm::Value *x, llvm::Value *y);
    llvm::Value *emit_cast(llvm::Value *v, const ir::Type &from, const ir::Type &to);
    /// A math library call, or a fast_ variant ([Note] Math library).
    llvm::Value *emit_math(ir::Intrinsic op, llvm::ArrayRef<llvm::Value *> args);
    llvm::Value *element_address(const ir::Expr &ptr, const ir::Expr &index);
    /// element_address for a load, store or atomic of `type`: through a shared pointer, checked
    /// by the target (Target::emit_shared_access_check).
    llvm::Value *access_address(const ir::Expr &ptr, const ir::Expr &index, const ir::Type &type, bool is_store);
    /// `f` applied to the scalars of each lane of `args` (vectors of one lane count), the results
    /// put back together: for what only exists for scalars (the math library, exact fmod).
    llvm::Value *per_lane(llvm::ArrayRef<llvm::Value *> args,
                          llvm::function_ref<llvm::Value *(llvm::ArrayRef<llvm::Value *>)> f);
    /// A vector load or store of type `t` at `addr` ([Note] IR semantics: Vector memory): `access`
    /// emits it with the alignment it is given. Where the target does not fault on a misaligned
    /// access, the address is checked first; the misaligned path reports to the target's runtime
    /// and accesses unaligned. Returns what the access returned.
    llvm::Value *vector_access(llvm::Value *addr, const ir::Type &t, bool is_store,
                               llvm::function_ref<llvm::Value *(llvm::Align)> access);
    /// The warp matrix operations from warp shuffles ([Note] Matrix operations from shuffles).
    llvm::Value *shuffle_lane(llvm::Value *v, llvm::Value *lane);
    llvm::Value *mma_by_shuffles(const ir::Mma &op, llvm::Value *a, llvm::Value *b, llvm::Value *c);
    llvm::Value *matrix_load_by_shuffles(const ir::MatrixLoad &op, llvm::Value *row);
    /// mma from block matrix instructions of k `kc` ([Note] Matrix multiply-accumulate from
    /// 4 x 4 blocks): the target's (Target::emit_mma_block), or with `emulate` the same
    /// instruction built from shuffles.
    llvm::Value *mma_by_blocks(const ir::Mma &op, llvm::Value *a, llvm::Value *b, llvm::Value *c,
                               unsigned kc, bool emulate);
    llvm::Value *mma_block_by_shuffles(llvm::Value *a, llvm::Value *b, llvm::Value *c);
    /// The thread's lane in its warp (its linear index in the block modulo 32), an i64.
    llvm::Value *lane_in_warp();
    /// Folds the lanes of the float vector `v` with `op` in the tree order of [Note] IR semantics.
    llvm::Value *fold_tree(llvm::Value *v, llvm::function_ref<llvm::Value *(llvm::Value *, llvm::Value *)> op);

    // --- statements --------------------------------------------------------------------------
    llvm::Error emit(const ir::Stmt &s);
#define EMBER_IR_STMT(Name) llvm::Error visit(const ir::Name *op);
#include "ember/compiler/IRNodes.def"
    /// How many times a `for` with a constant step runs its body ([Note] IR semantics: Loops), in
    /// the index type taken as unsigned; emitted before the loop.
    llvm::Value *for_trip_count(llvm::Value *begin, llvm::Value *end, llvm::ConstantInt *step,
                                bool is_signed);
    llvm::MDNode *unroll_metadata(const ir::Unroll &u);
    /// A `for` being emitted: its evaluated bounds and how it runs ([Note] IR semantics: Loops).
    struct ForLoop {
        llvm::Value *begin, *end, *step;
        llvm::ConstantInt *constant_step; ///< the step when constant (a counted loop), else null
        llvm::Value *trip;                ///< counted: the trip count
        llvm::Value *up, *down;           ///< runtime step: its direction (down null if unsigned)
        llvm::AllocaInst *slot;           ///< counted: the iteration; runtime step: the index
        bool is_signed;
        std::string name;
    };
    /// Runtime step: (up ? if_up : down ? if_down : false).
    llvm::Value *directed(const ForLoop &l, llvm::Value *if_up, llvm::Value *if_down);
    /// Runtime step: whether index i is before e in the step's direction.
    llvm::Value *before_end(const ForLoop &l, llvm::Value *i);
    /// Runtime step: stores from + s in the loop's slot; returns whether the add did not wrap
    /// (the new index is past `from` in the step's direction).
    llvm::Value *advance(const ForLoop &l, llvm::Value *from, const llvm::Twine &name);
    /// Counted: the index of iteration `iter`, b + iter * s (exact).
    llvm::Value *counted_index(const ForLoop &l, llvm::Value *iter);
    /// Whether `unroll(N)` is carried out here rather than by LLVM (see emit_for_groups).
    bool unrolls_by_hand(const ir::For *op, const ForLoop &l) const;
    /// The groups of N iterations of an `unroll(N)` loop, one exit test each; branches to
    /// `rest_bb` for the last iterations and to `end_bb` where the loop ends.
    llvm::Error emit_for_groups(const ir::For *op, const ForLoop &l, llvm::BasicBlock *rest_bb,
                                llvm::BasicBlock *end_bb);

    /// Emits `body` (of an if, a loop, a copy of an unrolled body) in a scope of its own: the
    /// math calls emitted in it are not reused after it ([Note] Math calls emitted once).
    llvm::Error emit_scoped(const ir::Stmt &body);
    /// Whether the value of math call `call` may stand for later uses of the same node: its
    /// arguments read no memory and no mutable variable.
    static bool reusable(const ir::ExprNode *call);

    /// An alloca in the entry block, so that mem2reg/SROA promote it.
    llvm::AllocaInst *create_entry_alloca(llvm::Type *ty, const std::string &name);
    /// Continues in a new block with no predecessors (after break/continue).
    void start_unreachable_block(const char *name);
    /// Branches to `to` unless the current block already ended.
    void branch_if_open(llvm::BasicBlock *to);
    void bind(const ir::VariableRef &var, llvm::Value *v);
    /// A block not yet in the function: `enter` appends it when code goes into it, so blocks
    /// appear in the order their code runs in the source (clang's EmitBlock).
    llvm::BasicBlock *new_block(const llvm::Twine &name) {
        blocks_.push_back(llvm::BasicBlock::Create(ctx_, name));
        return blocks_.back();
    }
    /// After a failure: removes the function and frees the blocks that never got into it.
    void discard_function();
    /// Defines the LLVM function of device function `f` (whose callees are defined already).
    llvm::Error define_function(const ir::Function &f, llvm::Module &m);
    /// Allocas go before a placeholder in the entry block; finish_body erases it.
    void start_body();
    void finish_body();
    void enter(llvm::BasicBlock *bb) {
        bb->insertInto(function_);
        b_.SetInsertPoint(bb);
    }

    const ir::Kernel &kernel_;
    const Target &target_;
    Target::KernelFacts facts_;
    llvm::LLVMContext &ctx_;
    llvm::IRBuilder<> b_;
    llvm::Function *function_ = nullptr;
    llvm::Instruction *alloca_point_ = nullptr;

    /// Params, lets and loop indices map to their SSA value; mutable vars to their alloca.
    /// Looked up only, never iterated, so pointer keys cannot make the output nondeterministic.
    /// Whether the kernel has asynchronous tensor operations, whose tiles want the dynamic shared
    /// memory aligned to 1024 bytes.
    bool aligned_dynamic_shared_ = false;
    std::unordered_map<const ir::Variable *, llvm::Value *> values_;
    /// Every block new_block made; all of them are in the function once emission succeeds.
    std::vector<llvm::BasicBlock *> blocks_;
    /// [Note] Math calls emitted once: the value of each such call node emitted in the current
    /// scope or an enclosing one, and the nodes in the order they were added (scopes pop them).
    /// Looked up only, never iterated.
    std::unordered_map<const ir::ExprNode *, llvm::Value *> math_values_;
    std::vector<const ir::ExprNode *> math_values_added_;

    struct Loop {
        llvm::BasicBlock *continue_to, *break_to;
    };
    std::vector<Loop> loops_;
    /// The device functions defined in the module.
    std::unordered_map<const ir::Function *, llvm::Function *> functions_;
    /// The trailing implicit parameters of the function being generated (the CPU's context),
    /// passed on to every call.
    std::vector<llvm::Value *> implicit_args_;
};

/// The LLVM name of values bound to `var`. Variables the printer numbers (no name, or a name the
/// parser took from `%0`) get none: LLVM numbers them itself, and `%"0"` would only confuse.
std::string llvm_name(const ir::Variable &var) {
    if (var.name.empty() || (var.name[0] >= '0' && var.name[0] <= '9')) return {};
    return var.name;
}

// ---------------------------------------------------------------------------------------------
// Types.

llvm::Type *CodeGenLLVM::scalar_type(ScalarType s) const {
    switch (s) {
    case ScalarType::Void: return llvm::Type::getVoidTy(ctx_);
    case ScalarType::Bool: return llvm::Type::getInt1Ty(ctx_);
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::E4M3: // 8-bit floats are their bits ([Note] 8-bit floats from bits)
    case ScalarType::E5M2: return llvm::Type::getInt8Ty(ctx_);
    case ScalarType::I16:
    case ScalarType::U16: return llvm::Type::getInt16Ty(ctx_);
    case ScalarType::I32:
    case ScalarType::U32: return llvm::Type::getInt32Ty(ctx_);
    case ScalarType::I64:
    case ScalarType::U64: return llvm::Type::getInt64Ty(ctx_);
    case ScalarType::F16: return llvm::Type::getHalfTy(ctx_);
    case ScalarType::BF16: return llvm::Type::getBFloatTy(ctx_);
    case ScalarType::F32: return llvm::Type::getFloatTy(ctx_);
    case ScalarType::F64: return llvm::Type::getDoubleTy(ctx_);
    }
    EMBER_UNREACHABLE("unknown ScalarType");
}

llvm::Type *CodeGenLLVM::value_type(const ir::Type &t) const {
    if (t.is_vector()) return llvm::FixedVectorType::get(scalar_type(t.scalar()), t.lanes());
    if (t.is_pointer()) {
        // Kernel parameters that are not global pointers are rejected in run().
        if (t.space() == ir::AddressSpace::Shared)
            return llvm::PointerType::get(ctx_, target_.shared_address_space());
        // Local arrays are allocas, which LLVM keeps in the generic address space (NVPTX moves
        // them to .local itself).
        if (t.space() == ir::AddressSpace::Local) return llvm::PointerType::get(ctx_, 0);
        if (t.space() == ir::AddressSpace::Constant)
            return llvm::PointerType::get(ctx_, target_.constant_address_space());
        EMBER_ASSERT(t.space() == ir::AddressSpace::Global, "only global and shared pointers are lowered");
        return llvm::PointerType::get(ctx_, target_.global_address_space());
    }
    return scalar_type(t.scalar());
}

llvm::Type *CodeGenLLVM::memory_type(const ir::Type &t) const {
    if (t.is_bool()) return llvm::Type::getInt8Ty(ctx_);
    if (t.is_vector() && t.lane_type().is_bool()) return llvm::FixedVectorType::get(llvm::Type::getInt8Ty(ctx_), t.lanes());
    return value_type(t);
}

/// `scalar` as a vector of as many lanes as `like` has, or itself when `like` is a scalar type.
llvm::Type *like_lanes(llvm::Type *scalar, llvm::Type *like) {
    if (auto *v = llvm::dyn_cast<llvm::FixedVectorType>(like)) return llvm::FixedVectorType::get(scalar, v->getNumElements());
    return scalar;
}

// ---------------------------------------------------------------------------------------------
// Expressions.

[[gnu::noinline]] bool CodeGenLLVM::reusable(const ir::ExprNode *call) {
    std::vector<const ir::ExprNode *> todo{call};
    std::unordered_set<const ir::ExprNode *> seen;
    auto push = [&](const ir::Expr &child) {
        if (seen.insert(child.get()).second) todo.push_back(child.get());
    };
    while (!todo.empty()) {
        const ir::ExprNode *n = todo.back();
        todo.pop_back();
        switch (n->kind) {
        case ir::NodeKind::IntImm:
        case ir::NodeKind::FloatImm:
        case ir::NodeKind::BoolImm:
        case ir::NodeKind::SpecialReg: break;
        case ir::NodeKind::VarRef:
            if (static_cast<const ir::VarRef *>(n)->var->kind == ir::VarKind::Mutable) return false;
            break;
        case ir::NodeKind::Unary: push(static_cast<const ir::Unary *>(n)->a); break;
        case ir::NodeKind::Binary: {
            auto *op = static_cast<const ir::Binary *>(n);
            push(op->a), push(op->b);
            break;
        }
        case ir::NodeKind::Compare: {
            auto *op = static_cast<const ir::Compare *>(n);
            push(op->a), push(op->b);
            break;
        }
        case ir::NodeKind::Cast: push(static_cast<const ir::Cast *>(n)->a); break;
        case ir::NodeKind::Select: {
            auto *op = static_cast<const ir::Select *>(n);
            push(op->cond), push(op->a), push(op->b);
            break;
        }
        case ir::NodeKind::Call:
            for (const ir::Expr &arg : static_cast<const ir::Call *>(n)->args) push(arg);
            break;
        case ir::NodeKind::MakeVector:
            for (const ir::Expr &arg : static_cast<const ir::MakeVector *>(n)->args) push(arg);
            break;
        case ir::NodeKind::Extract: push(static_cast<const ir::Extract *>(n)->vector); break;
        case ir::NodeKind::Reduce: push(static_cast<const ir::Reduce *>(n)->value); break;
        default: return false; // loads, atomics, warp operations, calls of device functions
        }
    }
    return true;
}

llvm::Error CodeGenLLVM::emit_scoped(const ir::Stmt &body) {
    const size_t mark = math_values_added_.size();
    llvm::Error err = emit(body);
    for (; math_values_added_.size() > mark; math_values_added_.pop_back())
        math_values_.erase(math_values_added_.back());
    return err;
}

// [Note] Math calls emitted once
// ===============================
// The front end shares expression nodes: `auto e = exp(v - m);` used five times is one node
// with five parents, and the printed IR shows it five times. Code generation emits a node per
// use, so the kernel's LLVM IR held five calls, each inlined by LLVM's optimiser (a math
// function is 25 to 200 instructions) before its CSE passes merge them again: softmax over
// rows of 4096 (16 values a thread, each e used by the sum and by the store) went to the
// optimiser with 80 calls of exp for the 16 it keeps. So the value of a math library call
// (rsqrt ... erf, the fast_ variants) is kept, and a later use of the same node in the same
// scope or a nested one gets it, when the call's arguments read no memory and no mutable
// variable (`reusable`): lets, parameters, loop indices, constants and the thread's indices
// do not change while they are visible, so the value is the one a second emission would compute.
// A scope is the body of an if, of a loop or of one copy of a body unrolled by hand
// (`emit_scoped`): a value emitted there dominates the rest of that body, and is forgotten when
// it ends, so no use outside sees a value its path may not have computed, and a loop index
// bound again for the next copy never meets a value of the last. Nodes are reused, never
// evaluated earlier than where they were first used; textual IR (the parser makes a node per
// occurrence) is not affected. The PTX is what LLVM's CSE made of the repeated calls before.
//
// Expressions nest up to the IR's nesting limit, each level a call of emit: the visitors are kept
// out of it ([[gnu::noinline]]), so that its frame stays small. Inlined, their temporaries made
// it 8 KiB a level under AddressSanitizer, and the deepest kernel overflowed 8 MiB of stack.
llvm::Value *CodeGenLLVM::emit(const ir::Expr &e) {
    EMBER_ASSERT(e, "null expression in a verified kernel");
    if (e.kind() == ir::NodeKind::Call &&
        ir::is_math_library(static_cast<const ir::Call *>(e.get())->op)) {
        if (auto it = math_values_.find(e.get()); it != math_values_.end()) return it->second;
        llvm::Value *v = visit(static_cast<const ir::Call *>(e.get()));
        if (v && reusable(e.get())) {
            math_values_.emplace(e.get(), v);
            math_values_added_.push_back(e.get());
        }
        return v;
    }
    switch (e.kind()) {
#define EMBER_IR_EXPR(Name)                                                                        \
    case ir::NodeKind::Name: return visit(static_cast<const ir::Name *>(e.get()));
#include "ember/compiler/IRNodes.def"
    default: break;
    }
    EMBER_UNREACHABLE("statement kind in an expression position");
}

llvm::Value *CodeGenLLVM::visit(const ir::IntImm *op) {
    return llvm::ConstantInt::get(llvm::cast<llvm::IntegerType>(value_type(op->type)),
                                  op->bits(), /*isSigned=*/op->type.is_signed_int());
}

llvm::Value *CodeGenLLVM::visit(const ir::FloatImm *op) {
    return llvm::ConstantFP::get(value_type(op->type), op->value);
}

llvm::Value *CodeGenLLVM::visit(const ir::BoolImm *op) { return b_.getInt1(op->value); }

llvm::Value *CodeGenLLVM::visit(const ir::VarRef *op) {
    auto it = values_.find(op->var.get());
    EMBER_ASSERT(it != values_.end(), "variable '" + op->var->name + "' used before definition");
    if (op->var->kind != ir::VarKind::Mutable) return it->second;
    auto *slot = llvm::cast<llvm::AllocaInst>(it->second);
    return b_.CreateLoad(slot->getAllocatedType(), slot, llvm_name(*op->var));
}

llvm::Value *CodeGenLLVM::visit(const ir::SpecialReg *op) {
    return target_.emit_special_reg(b_, op->reg, op->dim);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Unary *op) {
    llvm::Value *a = emit(op->a);
    switch (op->op) {
    case ir::UnaryOp::Neg:
        if (op->type.lane_type().is_float()) return b_.CreateFNeg(a);
        return b_.CreateSub(llvm::Constant::getNullValue(a->getType()), a); // wraps: no nsw
    case ir::UnaryOp::Not:
    case ir::UnaryOp::BitNot: return b_.CreateNot(a);
    }
    EMBER_UNREACHABLE("unknown UnaryOp");
}

/// [Note] Half-precision fma
/// ==========================
/// fma(a, b, c) rounds once ([Note] IR semantics). A target without an f16 or bf16 fma
/// instruction (x86, NVIDIA before sm_80 for bf16) would have LLVM widen `llvm.fma.f16` to an f32
/// fma rounded again to f16: twice rounded, one unit in the last place off whenever the f32
/// result lands on a halfway point of the narrow type (bf16 fma(-7, 0x1.78p58, -7) gave 0xde24
/// instead of 0xde25). Instead: the product of the operands widened to f64 is exact (11 + 11 or
/// 8 + 8 significant bits, and f64's exponent range holds every product), the sum s = p + c is
/// rounded to f64, and its rounding error e (TwoSum, exact) turns s into the sum rounded to odd:
/// where e != 0 and s's last bit is even, s moves one unit towards the exact sum. Rounding to odd
/// with 53 bits, then to nearest with 11 or 8 (fptrunc: the CPU device's __truncdfhf2 and
/// __truncdfbf2 round once), gives the exact sum rounded once. Infinite and NaN sums have a NaN
/// e, so they are left alone.
llvm::Value *CodeGenLLVM::widen_float(llvm::Value *v, llvm::Type *ty) {
    if (v->getType()->isVectorTy() && target_.shield_vector_fpext()) v = b_.CreateFreeze(v);
    return b_.CreateFPExt(v, ty);
}

llvm::Value *CodeGenLLVM::emit_half_fma(llvm::Value *a, llvm::Value *b, llvm::Value *c) {
    llvm::Type *ty = a->getType();
    llvm::Type *f64 = b_.getDoubleTy(), *i64 = b_.getInt64Ty();
    if (auto *vty = llvm::dyn_cast<llvm::FixedVectorType>(ty)) {
        f64 = llvm::FixedVectorType::get(f64, vty->getNumElements());
        i64 = llvm::FixedVectorType::get(i64, vty->getNumElements());
    }
    // One instruction per statement here and below: the order of a call's arguments is the host
    // compiler's choice, and the emitted IR must not depend on which compiler built ember.
    llvm::Value *wa = widen_float(a, f64);
    llvm::Value *wb = widen_float(b, f64);
    llvm::Value *p = b_.CreateFMul(wa, wb, "fma.product");
    llvm::Value *w = widen_float(c, f64);
    llvm::Value *s = b_.CreateFAdd(p, w, "fma.sum");
    llvm::Value *bv = b_.CreateFSub(s, p);
    llvm::Value *ap = b_.CreateFSub(s, bv);
    llvm::Value *dp = b_.CreateFSub(p, ap);
    llvm::Value *dw = b_.CreateFSub(w, bv);
    llvm::Value *e = b_.CreateFAdd(dp, dw, "fma.error");
    llvm::Value *bits = b_.CreateBitCast(s, i64);
    llvm::Value *zero64 = llvm::ConstantInt::get(i64, 0);
    llvm::Value *even = b_.CreateICmpEQ(b_.CreateAnd(bits, llvm::ConstantInt::get(i64, 1)), zero64);
    llvm::Value *inexact = b_.CreateFCmpONE(e, llvm::ConstantFP::get(f64, 0.0));
    // Towards the exact sum: the magnitude grows where e has s's sign.
    llvm::Value *e_negative = b_.CreateICmpSLT(b_.CreateBitCast(e, i64), zero64);
    llvm::Value *s_negative = b_.CreateICmpSLT(bits, zero64);
    llvm::Value *same_sign = b_.CreateICmpEQ(e_negative, s_negative);
    llvm::Value *step = b_.CreateSelect(same_sign, llvm::ConstantInt::get(i64, 1),
                                        llvm::ConstantInt::getSigned(i64, -1));
    llvm::Value *odd = b_.CreateBitCast(b_.CreateAdd(bits, step), f64);
    llvm::Value *rounded = b_.CreateSelect(b_.CreateAnd(inexact, even), odd, s, "fma.odd");
    return b_.CreateFPTrunc(rounded, ty, "fma");
}

/// A 32- or 64-bit integer to f16. Every integer of magnitude 65520 or more becomes an infinity
/// (65520 lies halfway between f16's largest finite value, 65504, and 2^16, and rounds to even,
/// up), so the integer is clamped to [-65520, 65520] first: f32 holds the clamped value exactly,
/// and one fptrunc rounds it. Not `sitofp` to half directly: LLVM 19's InstCombine turns
/// fpext(sitofp x to half) into sitofp x to float when the known bits of x leave at most 11
/// significant ones, without checking f16's exponent range, so `cast<f16>(x << 61)` widened to
/// f32 gave 2^61 instead of inf (found by ember-difftest on the CPU device). With the clamp, the
/// value converted has at most 17 significant bits and 65520 has 12, so that fold never applies
/// to a value out of range.
llvm::Value *CodeGenLLVM::emit_int_to_f16(llvm::Value *v, const ir::Type &from) {
    llvm::Type *it = v->getType();
    auto c = [&](int64_t x) { return llvm::ConstantInt::getSigned(it, x); };
    llvm::Value *clamped;
    if (from.is_signed_int()) {
        llvm::Value *low = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, c(-65520));
        clamped = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, low, c(65520));
    } else {
        clamped = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, v, c(65520));
    }
    llvm::Value *small = b_.CreateTrunc(clamped, like_lanes(b_.getInt32Ty(), it), "f16.clamped");
    llvm::Value *f = b_.CreateSIToFP(small, like_lanes(b_.getFloatTy(), it));
    return b_.CreateFPTrunc(f, like_lanes(b_.getHalfTy(), it));
}

/// minNum/maxNum of floats, as a reduction of a pair: llvm.vector.reduce.fmin/fmax of <x, y>
/// (lane by lane for vectors), which LLVM expands back into minnum/maxnum only when it emits
/// code (NVPTX: one min.f32/max.f32, as before; x86: the same instructions). Two defects of
/// LLVM 19's optimiser meet minnum/maxnum, and neither meets the reduction:
/// - ValueTracking takes maxnum(a, b) to have a clear sign bit when a's sign bit is known clear,
///   although maxnum(NaN, b) is b: abs(max(copysign(x, 1.0), -inf)) lost its abs, giving -inf
///   for a NaN x (found by ember-difftest on the CPU device; on the GPU, NVPTX's expanded fmod,
///   whose result has its dividend's sign, met it in max(2.5 % abs(x), y)). minnum likewise.
///   For a reduction it keeps the sign only when the result cannot be NaN.
/// - InstSimplify crashes the process (llvm_unreachable, undefined in a release build: a
///   segfault) on m(m(x, y), g(x, y, ...)), m minnum/maxnum and g any other intrinsic whose first
///   two operands are x and y: foldMinimumMaximumSharedOp asks getInverseMinMaxIntrinsic for g's
///   inverse. min(min(x, 0.0), fma(x, 0.0, 0.0)) did it (ember-difftest; clang 19 crashes on the
///   same C++).
/// The cost: LLVM's loop vectorizer does not widen the reduction, so a CPU-device loop of float
/// min/max stays scalar, a SIMD min/max on the CPU device is done lane by lane (16 vmaxss for an
/// f32x16, not one vmaxps), and a packed f16x2/bf16x2 min/max on NVPTX becomes two.
llvm::Value *CodeGenLLVM::emit_float_min_max(llvm::Intrinsic::ID id, llvm::Value *x, llvm::Value *y) {
    const llvm::Intrinsic::ID reduce =
        id == llvm::Intrinsic::minnum ? llvm::Intrinsic::vector_reduce_fmin : llvm::Intrinsic::vector_reduce_fmax;
    auto pair = [&](llvm::Value *p, llvm::Value *q) -> llvm::Value * {
        // Two constants are folded here: LLVM 19 does not fold the reduction of a constant pair,
        // so what depends on it (an fmod, [Note] fmod of operands that become constants) would
        // stay an operation on constants for the back end. Zeros of two signs stay unfolded.
        auto *cp = llvm::dyn_cast<llvm::ConstantFP>(p);
        auto *cq = llvm::dyn_cast<llvm::ConstantFP>(q);
        if (cp && cq && !(cp->isZero() && cq->isZero() && cp->isNegative() != cq->isNegative())) {
            const llvm::APFloat &a = cp->getValueAPF(), &c = cq->getValueAPF();
            if (a.isNaN()) return cq;
            if (c.isNaN()) return cp;
            const bool a_less = a.compare(c) == llvm::APFloat::cmpLessThan;
            return (id == llvm::Intrinsic::minnum) == a_less ? cp : cq;
        }
        auto *vt = llvm::FixedVectorType::get(p->getType(), 2);
        llvm::Value *v = b_.CreateInsertElement(llvm::PoisonValue::get(vt), p, uint64_t{0});
        v = b_.CreateInsertElement(v, q, uint64_t{1});
        return b_.CreateIntrinsic(reduce, {vt}, {v});
    };
    if (x->getType()->isVectorTy())
        return per_lane({x, y}, [&](llvm::ArrayRef<llvm::Value *> l) { return pair(l[0], l[1]); });
    return pair(x, y);
}

/// An integer to bf16, rounded once ([Note] IR semantics: casts). LLVM converts through f32
/// (x86: vcvtsi2ss, then __truncsfbf2), which rounds twice when the integer has more than 24
/// significant bits: 16842753 = 2^24 + 2^16 + 1 gave 2^24 instead of 2^24 + 2^17. So the
/// magnitude is first rounded to odd at 24 bits in the integers (the bits below the 24 leading
/// ones are dropped, and the last kept bit is set when any of them was 1); f32 holds that
/// exactly, and rounding to odd, then to nearest with 8 bits, is rounding once. The conversion
/// through f32 is then exact however LLVM folds it (InstCombine turns fptrunc (sitofp x to
/// double) into sitofp x to bfloat, so going through f64 would not survive). Integers of up to 16
/// bits are exact in f32 already.
llvm::Value *CodeGenLLVM::emit_int_to_bf16(llvm::Value *v, const ir::Type &from) {
    llvm::Type *dst = like_lanes(b_.getBFloatTy(), v->getType());
    if (from.bits() <= 16) return from.is_signed_int() ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
    llvm::Type *f32 = like_lanes(b_.getFloatTy(), v->getType());
    llvm::Type *it = v->getType();
    auto c = [&](uint64_t x) { return llvm::ConstantInt::get(it, x); };
    const uint64_t spare = from.bits() - 24; // leading zeros below which bits must be dropped
    llvm::Value *negative = from.is_signed_int() ? b_.CreateICmpSLT(v, c(0)) : nullptr;
    llvm::Value *mag = negative ? b_.CreateSelect(negative, b_.CreateNeg(v), v) : v; // |MIN| = 2^(W-1)
    llvm::Value *lz = b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {it}, {mag, b_.getFalse()});
    llvm::Value *wide = b_.CreateICmpULT(lz, c(spare));
    llvm::Value *excess = b_.CreateSub(c(spare), lz);
    llvm::Value *drop = b_.CreateSelect(wide, excess, c(0));
    llvm::Value *mask = b_.CreateSub(b_.CreateShl(c(1), drop), c(1));
    llvm::Value *sticky = b_.CreateZExt(b_.CreateICmpNE(b_.CreateAnd(mag, mask), c(0)), it);
    llvm::Value *kept = b_.CreateAnd(mag, b_.CreateNot(mask));
    llvm::Value *sticky_bit = b_.CreateShl(sticky, drop);
    llvm::Value *odd = b_.CreateOr(kept, sticky_bit, "to_odd");
    llvm::Value *f = b_.CreateUIToFP(odd, f32);
    if (negative) f = b_.CreateSelect(negative, b_.CreateFNeg(f), f);
    return b_.CreateFPTrunc(f, dst);
}

llvm::Value *CodeGenLLVM::emit_div_mod(bool is_div, const ir::Type &t, llvm::Value *a,
                                       llvm::Value *b) {
    // [Note] IR semantics: x / 0 == x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0. The divisor is
    // replaced by 1 where the hardware instruction would be undefined (x / 1 == x gives MIN for
    // MIN / -1 and x % 1 == 0), then a select puts 0 where the divisor was 0. No UB, no poison.
    //
    // [Note] Vector divisors with a zero lane
    // The zero divisor becomes 1 through umax(b, 1), not through select(b == 0, 1, b). LLVM 19's
    // InstSimplify threads a division over a select of its divisor and folds a division by a
    // constant vector with a zero lane to poison for the whole vector, which is wrong when the
    // select's condition is a vector: `srem x, select(c, <1, 1>, <16, 0>)` became 0, dropping the
    // lane that divides by 16 (fixed upstream in LLVM 20). A divisor that becomes a constant only
    // after inlining or unrolling met that fold (ember-difftest found it on the CPU device and the
    // GPU alike). umax(b, 1) has no zero lane once folded, so the only select left, the signed
    // overflow guard, chooses between divisors that are never 0.
    llvm::Type *ty = a->getType();
    llvm::Constant *zero = llvm::Constant::getNullValue(ty);
    llvm::Constant *one = llvm::ConstantInt::get(ty, 1);
    auto divide = [&](llvm::Value *divisor) -> llvm::Value * {
        if (t.is_signed_int())
            return is_div ? b_.CreateSDiv(a, divisor) : b_.CreateSRem(a, divisor);
        return is_div ? b_.CreateUDiv(a, divisor) : b_.CreateURem(a, divisor);
    };
    // A constant divisor needs no guard unless it is 0 (the result is 0) or a signed -1.
    if (auto *k = llvm::dyn_cast<llvm::ConstantInt>(b)) {
        if (k->isZero()) return zero;
        if (!t.is_signed_int() || !k->isMinusOne()) return divide(b);
    }
    llvm::Value *by_zero = b_.CreateICmpEQ(b, zero, "div.by_zero");
    llvm::Value *safe = llvm::isa<llvm::ConstantInt>(b) // -1 here
                            ? b
                            : b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, b, one, nullptr, "div.nonzero");
    if (t.is_signed_int()) {
        llvm::Value *overflow = b_.CreateAnd(
            b_.CreateICmpEQ(a, llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(
                                                               ty->getScalarSizeInBits()))),
            b_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(ty)), "div.overflow");
        safe = b_.CreateSelect(overflow, one, safe, "div.safe");
    }
    return b_.CreateSelect(by_zero, zero, divide(safe));
}

/// `v`, an fadd, fsub or fmul the user wrote, with LLVM's `contract` flag where the kernel says
/// fp_contract(fast) ([Note] IR semantics: Contraction). Only these get it: the math library and
/// the code generator's own exact sequences (fma emulation, fmod) stay as written.
llvm::Value *CodeGenLLVM::contractible(llvm::Value *v) {
    if (kernel_.contract == ir::FpContract::Fast)
        if (auto *i = llvm::dyn_cast<llvm::Instruction>(v)) i->setHasAllowContract(true);
    return v;
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Binary *op) {
    llvm::Value *a = emit(op->a);
    llvm::Value *b = emit(op->b);
    const ir::Type t = op->type.lane_type(); // vectors: lane by lane
    const bool fp = t.is_float();
    const bool is_signed = t.is_signed_int();
    switch (op->op) {
    case ir::BinaryOp::Add: return fp ? contractible(b_.CreateFAdd(a, b)) : b_.CreateAdd(a, b);
    case ir::BinaryOp::Sub: return fp ? contractible(b_.CreateFSub(a, b)) : b_.CreateSub(a, b);
    case ir::BinaryOp::Mul: return fp ? contractible(b_.CreateFMul(a, b)) : b_.CreateMul(a, b);
    case ir::BinaryOp::Div: return fp ? b_.CreateFDiv(a, b) : emit_div_mod(true, t, a, b);
    case ir::BinaryOp::Mod:
        if (!fp) return emit_div_mod(false, t, a, b);
        if (op->type.is_vector())
            return per_lane({a, b}, [&](llvm::ArrayRef<llvm::Value *> x) { return target_.emit_frem(b_, x[0], x[1]); });
        return target_.emit_frem(b_, a, b);
    case ir::BinaryOp::Min:
        if (fp) return emit_float_min_max(llvm::Intrinsic::minnum, a, b);
        return b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
                                        a, b);
    case ir::BinaryOp::Max:
        if (fp) return emit_float_min_max(llvm::Intrinsic::maxnum, a, b);
        return b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax,
                                        a, b);
    case ir::BinaryOp::And: return b_.CreateAnd(a, b);
    case ir::BinaryOp::Or: return b_.CreateOr(a, b);
    case ir::BinaryOp::Xor: return b_.CreateXor(a, b);
    case ir::BinaryOp::Shl:
    case ir::BinaryOp::Shr: {
        // Shift amounts are taken modulo the width (a power of two), so the shift is never
        // poison; for a signed amount the two's complement bits give the mathematical modulo.
        const unsigned bits = a->getType()->getScalarSizeInBits();
        llvm::Value *amount = b_.CreateAnd(b, llvm::ConstantInt::get(b->getType(), bits - 1));
        if (op->op == ir::BinaryOp::Shl) return b_.CreateShl(a, amount);
        return is_signed ? b_.CreateAShr(a, amount) : b_.CreateLShr(a, amount);
    }
    }
    EMBER_UNREACHABLE("unknown BinaryOp");
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Atomic *op) {
    llvm::Value *addr = access_address(op->ptr, op->index, op->type, /*is_store=*/true);
    llvm::Value *compare = op->compare ? emit(op->compare) : nullptr;
    llvm::Value *value = emit(op->value);
    const ir::Type t = op->type;
    // Relaxed ordering, as CUDA's atomic functions ([Note] IR semantics: Atomic).
    constexpr auto order = llvm::AtomicOrdering::Monotonic;
    const llvm::MaybeAlign align(t.bytes());
    if (op->scope != ir::FenceScope::Device)
        if (llvm::Value *r = target_.emit_scoped_atomic(b_, op->op, t, addr, value, compare, op->scope)) return r;
    const llvm::SyncScope::ID sync = target_.atomic_sync_scope(ctx_, op->scope);
    if (op->op == ir::AtomicOp::Cas) {
        llvm::Value *pair = b_.CreateAtomicCmpXchg(addr, compare, value, align, order, order, sync);
        return b_.CreateExtractValue(pair, 0);
    }
    using B = llvm::AtomicRMWInst::BinOp;
    B bin = B::Add;
    switch (op->op) {
    case ir::AtomicOp::Add: bin = t.is_float() ? B::FAdd : B::Add; break;
    case ir::AtomicOp::Sub: bin = B::Sub; break;
    case ir::AtomicOp::Min: bin = t.is_signed_int() ? B::Min : B::UMin; break;
    case ir::AtomicOp::Max: bin = t.is_signed_int() ? B::Max : B::UMax; break;
    case ir::AtomicOp::Exchange: bin = B::Xchg; break;
    case ir::AtomicOp::And: bin = B::And; break;
    case ir::AtomicOp::Or: bin = B::Or; break;
    case ir::AtomicOp::Xor: bin = B::Xor; break;
    case ir::AtomicOp::Cas: EMBER_UNREACHABLE("cas handled above");
    }
    return b_.CreateAtomicRMW(bin, addr, value, align, order, sync);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Warp *op) {
    facts_.uses_warp_ops = true;
    llvm::Value *v = emit(op->value);
    if (!ir::is_shuffle(op->op)) return target_.emit_warp(b_, op->op, v, nullptr);
    llvm::Value *lane = emit(op->lane);
    llvm::Type *ty = v->getType();
    llvm::Type *bits = b_.getIntNTy(ty->getPrimitiveSizeInBits().getFixedValue());
    llvm::Value *r = target_.emit_warp(b_, op->op, b_.CreateBitCast(v, bits), lane);
    return b_.CreateBitCast(r, ty);
}

// [Note] Matrix operations from shuffles
// ======================================
// A target without matrix instructions of its own (Target::emit_mma and emit_matrix_load return
// nullptr and mma_block_k 0: AMDGPU's RDNA processors, and every AMDGPU processor for ldmatrix)
// gets the warp matrix operations built from warp shuffles, exactly as
// [Note] IR semantics defines them. mma: D[r][c] for the lane's four elements (r = g + 8h,
// c = 2t + e) needs row r of A and column c of B; the lane holding A[r][j] is r % 8 * 4 plus a
// part fixed by j, at an element index fixed by (h, j), so one shuffle_idx per (h, j) brings it,
// and likewise one per (e, j) for B: 4k shuffles. The products (exact in f32; tf32 inputs with
// their 13 low mantissa bits cleared) are summed in f32 in the order of k, starting from C's
// element, and an f16 result is rounded once: the CPU device's order, so both give the same
// bits. ldmatrix: each lane shuffles the row addresses it needs (2N of them) and loads the
// elements itself.
llvm::Value *CodeGenLLVM::lane_in_warp() {
    auto reg = [&](ir::SpecialRegKind r, unsigned d) { return target_.emit_special_reg(b_, r, d); };
    using R = ir::SpecialRegKind;
    llvm::Value *linear = b_.CreateAdd(
        b_.CreateMul(b_.CreateAdd(b_.CreateMul(reg(R::ThreadIdx, 2), reg(R::BlockDim, 1)),
                                  reg(R::ThreadIdx, 1)),
                     reg(R::BlockDim, 0)),
        reg(R::ThreadIdx, 0));
    return b_.CreateAnd(linear, b_.getInt64(31));
}

llvm::Value *CodeGenLLVM::shuffle_lane(llvm::Value *v, llvm::Value *lane) {
    llvm::Type *ty = v->getType();
    const unsigned bits = static_cast<unsigned>(ty->getPrimitiveSizeInBits().getFixedValue());
    llvm::Type *wide = bits <= 32 ? b_.getInt32Ty() : b_.getInt64Ty();
    llvm::Value *x = b_.CreateBitCast(v, b_.getIntNTy(bits));
    if (bits < 32) x = b_.CreateZExt(x, wide);
    llvm::Value *r = target_.emit_warp(b_, ir::WarpOp::ShuffleIdx, x, lane);
    if (bits < 32) r = b_.CreateTrunc(r, b_.getIntNTy(bits));
    return b_.CreateBitCast(r, ty);
}

llvm::Value *CodeGenLLVM::mma_by_shuffles(const ir::Mma &op, llvm::Value *a, llvm::Value *bv,
                                          llvm::Value *c) {
    const bool tf32 = op.input == ir::MmaInput::TF32;
    const unsigned k = op.shape.k;
    llvm::Value *lane = b_.CreateTrunc(lane_in_warp(), b_.getInt32Ty());
    llvm::Value *g = b_.CreateLShr(lane, 2), *t = b_.CreateAnd(lane, 3);
    // Where A[r][j] and B[j][col] live: the lane is 4 (r % 8), or 4 col, plus a part fixed by j
    // (the lane of row 8h, or of column 0), and the element.
    std::vector<llvm::Value *> a_row[2], b_col[2];
    for (unsigned h = 0; h < 2; ++h)
        for (unsigned j = 0; j < k; ++j) {
            auto [part, i] = ir::Mma::a_place(op.shape, op.input, 8 * h, j);
            llvm::Value *src = b_.CreateAdd(b_.CreateShl(g, 2), b_.getInt32(part));
            a_row[h].push_back(shuffle_lane(b_.CreateExtractElement(a, uint64_t(i)), src));
        }
    for (unsigned e = 0; e < 2; ++e)
        for (unsigned j = 0; j < k; ++j) {
            auto [part, i] = ir::Mma::b_place(op.shape, op.input, j, 0);
            llvm::Value *col = b_.CreateAdd(b_.CreateShl(t, 1), b_.getInt32(e));
            llvm::Value *src = b_.CreateAdd(b_.CreateShl(col, 2), b_.getInt32(part));
            b_col[e].push_back(shuffle_lane(b_.CreateExtractElement(bv, uint64_t(i)), src));
        }
    auto as_f32 = [&](llvm::Value *x) {
        if (tf32)
            return b_.CreateBitCast(
                b_.CreateAnd(b_.CreateBitCast(x, b_.getInt32Ty()), b_.getInt32(~0x1fffu)),
                b_.getFloatTy());
        if (op.input == ir::MmaInput::E4M3 || op.input == ir::MmaInput::E5M2)
            return fp8_to_f32(x, op.input == ir::MmaInput::E4M3);
        return b_.CreateFPExt(x, b_.getFloatTy());
    };
    llvm::Type *cty = c->getType();
    const bool half_c = cty->getScalarType()->isHalfTy();
    llvm::Value *d = llvm::PoisonValue::get(cty);
    for (unsigned i = 0; i < 4; ++i) {
        llvm::Value *acc = b_.CreateExtractElement(c, uint64_t(i));
        if (half_c) acc = b_.CreateFPExt(acc, b_.getFloatTy());
        for (unsigned j = 0; j < k; ++j)
            acc = b_.CreateFAdd(acc,
                                b_.CreateFMul(as_f32(a_row[i / 2][j]), as_f32(b_col[i % 2][j])));
        if (half_c) acc = b_.CreateFPTrunc(acc, b_.getHalfTy());
        d = b_.CreateInsertElement(d, acc, uint64_t(i));
    }
    return d;
}

// [Note] Matrix multiply-accumulate from 4 x 4 blocks
// ===================================================
// AMD's CDNA processors (gfx908, gfx90a, gfx940-942) multiply matrices in waves of 64 lanes;
// the IR's warp is 32 lanes, half a wave there ([Note] Warps on AMDGPU), and the two warps of a
// wave need not run the same mma, or any. Of their instructions only the 16-block ones keep each
// warp to itself: v_mfma_f32_4x4x4_16b_f16 / _bf16 (bf16 with k 4 from gfx90a, k 2 on gfx908)
// and v_mfma_f32_4x4x1_16b_f32 compute 16 independent products D = A B + C of a 4 x k block of
// A, a k x 4 block of B and a 4 x 4 f32 block, block b on lanes 4b to 4b + 3: lane 4b + i holds
// row i of its A block (k elements), lane 4b + j column j of its B block, and D(r, j) of its
// block in element r of an f32x4 (AMD's matrix instruction calculator gives these layouts). A
// warp holds 8 blocks, lanes 0-31 of the wave blocks 0-7 and lanes 32-63 blocks 8-15, so a warp
// reads and writes only its own lanes. (Target::mma_block_k says which instruction a target has.)
//
// An m16n8 mma is 8 blocks of 4 x 4: block b (rb = b / 2, cb = b % 2) computes rows rb, rb + 4,
// rb + 8 and rb + 12 (row i of the block is rb + 4i) and columns 4cb to 4cb + 3, and k / kc
// instructions accumulate it, instruction s taking k = s kc to s kc + kc - 1. Shuffles bring the
// IR's fragments ([Note] IR semantics: Matrix multiply-accumulate) into the block layout and the
// result back, the 16-bit elements two at a time (k and k + 1 are neighbours in both layouts):
// - A: lane 4b + i needs row R = rb + 4i, held by lane 4 (R % 8) plus a part fixed by k, at an
//   element fixed by k and by R / 8 = i / 2: one shuffle for each half, and a select;
// - B: lane 4b + j needs column 4cb + j, held by lane 4 (4cb + j) plus a part fixed by k, at an
//   element fixed by k: one shuffle;
// - C: element r of lane 4b + j is C(rb + 4r, 4cb + j), in lane 4 (rb + 4 (r % 2)) + 2cb + j / 2
//   at element 2 (r / 2) + j % 2: a shuffle of each of the two elements and a select;
// - D: the IR's element e of lane l (g = l / 4, t = l % 4) is D(g + 8 (e / 2), 2t + e % 2),
//   element g / 4 + 2 (e / 2) of lane 8 (g % 4) + 4 (t / 2) + 2 (t % 2) + e % 2: two shuffles
//   and a select.
// An m16n8k16 bf16 mma is so 4 MFMAs and 40 shuffles (the shuffle path: 128 shuffles and 64
// multiply-adds). tf32 inputs (f32 values) have their 13 low mantissa bits cleared first, so the
// f32 instruction multiplies them exactly; an f16 C is widened to f32 and D rounded back once.
// The products are summed in k order from C's element, so where each instruction adds in order
// the result has the bits of the CPU device's.
//
// Nothing of this has run on an AMD GPU. The test hook set_matrix_path_for_testing(blocks,
// blocks_k2) makes every target take this path with each block instruction built from shuffles
// as the layouts above define it (mma_block_by_shuffles), so the CPU device and the H200 check
// the shuffles against the host (MmaTest); test/lit/eir/amdgpu_mfma.eir pins the instructions.
llvm::Value *CodeGenLLVM::mma_by_blocks(const ir::Mma &op, llvm::Value *a, llvm::Value *bv,
                                        llvm::Value *c, unsigned kc, bool emulate) {
    const bool tf32 = op.input == ir::MmaInput::TF32;
    const unsigned k = op.shape.k;
    const unsigned step = tf32 ? 1 : 2; // elements moved by one shuffle
    EMBER_ASSERT(kc == 1 || kc == 2 || kc == 4, "block matrix instruction of k 1, 2 or 4");
    EMBER_ASSERT(kc % step == 0 && k % kc == 0, "block k does not divide the mma's");
    llvm::Value *lane = b_.CreateTrunc(lane_in_warp(), b_.getInt32Ty());
    auto bits = [&](unsigned shift, unsigned mask) {
        return b_.CreateAnd(b_.CreateLShr(lane, shift), b_.getInt32(mask));
    };
    llvm::Value *rb = b_.CreateLShr(lane, 3), *cb = bits(2, 1), *j = bits(0, 3);
    llvm::Value *i_half = b_.CreateICmpNE(bits(1, 1), b_.getInt32(0)); // (lane % 4) / 2
    llvm::Value *j_odd = b_.CreateICmpNE(bits(0, 1), b_.getInt32(0));
    llvm::Type *elem = a->getType()->getScalarType();
    llvm::Type *f32 = b_.getFloatTy();
    if (tf32) { // only the high 19 bits take part
        auto clear = [&](llvm::Value *v) {
            llvm::Type *ity = llvm::FixedVectorType::get(
                b_.getInt32Ty(),
                unsigned(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements()));
            return b_.CreateBitCast(
                b_.CreateAnd(b_.CreateBitCast(v, ity), llvm::ConstantInt::get(ity, ~0x1fffu)),
                v->getType());
        };
        a = clear(a), bv = clear(bv);
    }
    // `step` elements of `v` from `first` on, as one value (an i32 for two 16-bit elements).
    auto group = [&](llvm::Value *v, unsigned first) -> llvm::Value * {
        if (step == 1) return b_.CreateExtractElement(v, uint64_t(first));
        return b_.CreateBitCast(b_.CreateShuffleVector(v, {int(first), int(first) + 1}),
                                b_.getInt32Ty());
    };
    auto ungroup = [&](llvm::Value *g, llvm::Value *&into, unsigned at) {
        if (step == 1) {
            into = b_.CreateInsertElement(into, g, uint64_t(at));
            return;
        }
        llvm::Value *pair = b_.CreateBitCast(g, llvm::FixedVectorType::get(elem, 2));
        for (unsigned e = 0; e < 2; ++e)
            into = b_.CreateInsertElement(into, b_.CreateExtractElement(pair, uint64_t(e)),
                                          uint64_t(at + e));
    };
    // Lane 4 (R % 8) with R % 8 = rb + 4 (i % 2), and lane 4 (4cb + j).
    llvm::Value *a_owner = b_.CreateShl(b_.CreateAdd(rb, b_.CreateShl(bits(0, 1), 2)), 2);
    llvm::Value *b_owner = b_.CreateShl(b_.CreateAdd(b_.CreateShl(cb, 2), j), 2);
    // C into the block layout.
    llvm::Value *cf = c;
    const bool half_c = c->getType()->getScalarType()->isHalfTy();
    if (half_c) cf = b_.CreateFPExt(c, llvm::FixedVectorType::get(f32, 4));
    llvm::Value *acc = llvm::PoisonValue::get(llvm::FixedVectorType::get(f32, 4));
    for (unsigned r = 0; r < 4; ++r) {
        llvm::Value *src = b_.CreateAdd(b_.CreateShl(b_.CreateAdd(rb, b_.getInt32(4 * (r % 2))), 2),
                                        b_.CreateAdd(b_.CreateShl(cb, 1), bits(1, 1)));
        llvm::Value *even = shuffle_lane(b_.CreateExtractElement(cf, uint64_t(2 * (r / 2))), src);
        llvm::Value *odd = shuffle_lane(b_.CreateExtractElement(cf, uint64_t(2 * (r / 2) + 1)),
                                        src);
        acc = b_.CreateInsertElement(acc, b_.CreateSelect(j_odd, odd, even), uint64_t(r));
    }
    llvm::Type *block_ty = llvm::FixedVectorType::get(elem, kc);
    for (unsigned s = 0; s < k / kc; ++s) {
        llvm::Value *ablk = llvm::PoisonValue::get(block_ty),
                    *bblk = llvm::PoisonValue::get(block_ty);
        for (unsigned u = 0; u < kc; u += step) {
            const unsigned x = s * kc + u;
            auto [a_part, a_lo] = ir::Mma::a_place(op.shape, op.input, 0, x); // rows 0 and 8
            const unsigned a_hi = ir::Mma::a_place(op.shape, op.input, 8, x).element;
            llvm::Value *src = b_.CreateAdd(a_owner, b_.getInt32(a_part));
            llvm::Value *lo = shuffle_lane(group(a, a_lo), src),
                        *hi = shuffle_lane(group(a, a_hi), src);
            ungroup(b_.CreateSelect(i_half, hi, lo), ablk, u);
            auto [b_part, b_i] = ir::Mma::b_place(op.shape, op.input, x, 0);
            ungroup(shuffle_lane(group(bv, b_i), b_.CreateAdd(b_owner, b_.getInt32(b_part))), bblk,
                    u);
        }
        acc = emulate ? mma_block_by_shuffles(ablk, bblk, acc)
                      : target_.emit_mma_block(b_, op.input, ablk, bblk, acc);
    }
    // D back into the IR's layout.
    llvm::Value *g4 = b_.CreateICmpNE(bits(4, 1), b_.getInt32(0)); // (lane / 4) / 4
    llvm::Value *base = b_.CreateAdd(
        b_.CreateShl(bits(2, 3), 3),
        b_.CreateAdd(b_.CreateShl(bits(1, 1), 2), b_.CreateShl(bits(0, 1), 1)));
    llvm::Value *d = llvm::PoisonValue::get(c->getType());
    for (unsigned e = 0; e < 4; ++e) {
        llvm::Value *src = b_.CreateAdd(base, b_.getInt32(e % 2));
        llvm::Value *lo = shuffle_lane(b_.CreateExtractElement(acc, uint64_t(2 * (e / 2))), src);
        llvm::Value *hi = shuffle_lane(b_.CreateExtractElement(acc, uint64_t(2 * (e / 2) + 1)),
                                       src);
        llvm::Value *v = b_.CreateSelect(g4, hi, lo);
        if (half_c) v = b_.CreateFPTrunc(v, b_.getHalfTy());
        d = b_.CreateInsertElement(d, v, uint64_t(e));
    }
    return d;
}

// The block instruction as [Note] Matrix multiply-accumulate from 4 x 4 blocks defines it: lane
// 4b + j's D(r, j) = C(r, j) + the sum over u of A(r, u), from lane 4b + r, times its own B(u, j),
// added in the order of u.
llvm::Value *CodeGenLLVM::mma_block_by_shuffles(llvm::Value *a, llvm::Value *bv, llvm::Value *c) {
    const unsigned kc = unsigned(llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements());
    llvm::Value *lane = b_.CreateTrunc(lane_in_warp(), b_.getInt32Ty());
    llvm::Value *first = b_.CreateAnd(lane, b_.getInt32(~3u));
    llvm::Type *f32 = b_.getFloatTy();
    auto widen = [&](llvm::Value *x) { return x->getType() == f32 ? x : b_.CreateFPExt(x, f32); };
    llvm::Value *d = c;
    for (unsigned r = 0; r < 4; ++r) {
        llvm::Value *src = b_.CreateAdd(first, b_.getInt32(r));
        llvm::Value *sum = b_.CreateExtractElement(c, uint64_t(r));
        for (unsigned u = 0; u < kc; ++u) {
            llvm::Value *ar = shuffle_lane(b_.CreateExtractElement(a, uint64_t(u)), src);
            sum = b_.CreateFAdd(
                sum, b_.CreateFMul(widen(ar), widen(b_.CreateExtractElement(bv, uint64_t(u)))));
        }
        d = b_.CreateInsertElement(d, sum, uint64_t(r));
    }
    return d;
}

llvm::Value *CodeGenLLVM::matrix_load_by_shuffles(const ir::MatrixLoad &op, llvm::Value *row) {
    llvm::Value *lane = b_.CreateTrunc(lane_in_warp(), b_.getInt32Ty());
    llvm::Type *vty = value_type(op.type);
    llvm::Type *elem = vty->getScalarType();
    const unsigned addr_bits = b_.GetInsertBlock()
                                   ->getModule()
                                   ->getDataLayout()
                                   .getPointerSizeInBits(row->getType()->getPointerAddressSpace());
    llvm::Value *mine = b_.CreatePtrToInt(row, b_.getIntNTy(addr_bits));
    llvm::Value *quad = b_.CreateAnd(lane, 3), *group = b_.CreateLShr(lane, 2);
    llvm::Value *v = llvm::PoisonValue::get(vty);
    for (unsigned j = 0; j < op.count; ++j)
        for (unsigned e = 0; e < 2; ++e) {
            // Row l / 4, columns 2 (l % 4) + e of matrix j; transposed, rows 2 (l % 4) + e of
            // column l / 4.
            llvm::Value *pair = b_.CreateAdd(b_.CreateShl(quad, 1), b_.getInt32(e));
            llvm::Value *r = op.trans ? pair : group, *col = op.trans ? group : pair;
            llvm::Value *src = b_.CreateAdd(b_.getInt32(8 * j), r);
            llvm::Value *addr = b_.CreateIntToPtr(shuffle_lane(mine, src), row->getType());
            llvm::Value *p = b_.CreateGEP(elem, addr, col);
            v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(elem, p, llvm::Align(2)),
                                       uint64_t(2 * j + e));
        }
    return v;
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Mma *op) {
    facts_.uses_warp_ops = true;
    llvm::Value *a = emit(op->a), *b = emit(op->b), *c = emit(op->c);
    const bool tf32 = op->input == ir::MmaInput::TF32;
    const bool fp8 = op->input == ir::MmaInput::E4M3 || op->input == ir::MmaInput::E5M2;
    // No 16-block MFMA takes 8-bit floats: they take the shuffles on the blocks paths too.
    switch (forced_matrix_path()) {
    case MatrixPath::native: break;
    case MatrixPath::shuffles: return mma_by_shuffles(*op, a, b, c);
    case MatrixPath::blocks:
        return fp8 ? mma_by_shuffles(*op, a, b, c)
                   : mma_by_blocks(*op, a, b, c, tf32 ? 1 : 4, /*emulate=*/true);
    case MatrixPath::blocks_k2:
        return fp8 ? mma_by_shuffles(*op, a, b, c)
                   : mma_by_blocks(*op, a, b, c, tf32 ? 1 : 2, /*emulate=*/true);
    }
    if (llvm::Value *v = target_.emit_mma(b_, *op, a, b, c)) return v;
    if (const unsigned kc = target_.mma_block_k(op->input))
        return mma_by_blocks(*op, a, b, c, kc, false);
    return mma_by_shuffles(*op, a, b, c);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::MatrixLoad *op) {
    facts_.uses_warp_ops = true;
    llvm::Value *row = element_address(op->ptr, op->index);
    if (forced_matrix_path() == MatrixPath::native)
        if (llvm::Value *v = target_.emit_matrix_load(b_, *op, row)) return v;
    return matrix_load_by_shuffles(*op, row);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Invoke *op) {
    auto it = functions_.find(op->callee.get());
    EMBER_ASSERT(it != functions_.end(), "call of @" + op->callee->name + " before its definition");
    std::vector<llvm::Value *> args;
    for (const ir::Expr &a : op->args) args.push_back(emit(a));
    args.insert(args.end(), implicit_args_.begin(), implicit_args_.end());
    return b_.CreateCall(it->second, args);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Call *op) {
    std::vector<llvm::Value *> a;
    for (const ir::Expr &arg : op->args) a.push_back(emit(arg));
    if (ir::is_math_library(op->op)) {
        // One implementation per scalar type ([Note] Math library): vectors go lane by lane.
        if (op->type.is_vector())
            return per_lane(a, [&](llvm::ArrayRef<llvm::Value *> x) { return emit_math(op->op, x); });
        return emit_math(op->op, a);
    }
    llvm::Value *x = a[0];
    llvm::Type *ty = x->getType();
    const ir::Type t = op->args[0].type().lane_type(); // LLVM's intrinsics take vectors too
    auto unary = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, x); };
    // Bit counts and integer abs are defined for every input ([Note] IR semantics): the
    // "is poison" flags are false.
    auto with_false = [&](llvm::Intrinsic::ID id) {
        return b_.CreateIntrinsic(id, {ty}, {x, b_.getFalse()});
    };
    switch (op->op) {
    case ir::Intrinsic::Abs:
        if (t.is_float()) return unary(llvm::Intrinsic::fabs);
        if (t.is_unsigned_int()) return x;
        return with_false(llvm::Intrinsic::abs);
    case ir::Intrinsic::Popcount: return unary(llvm::Intrinsic::ctpop);
    case ir::Intrinsic::Clz: return with_false(llvm::Intrinsic::ctlz);
    case ir::Intrinsic::Ctz: return with_false(llvm::Intrinsic::cttz);
    case ir::Intrinsic::Sqrt: return unary(llvm::Intrinsic::sqrt);
    case ir::Intrinsic::Floor: return unary(llvm::Intrinsic::floor);
    case ir::Intrinsic::Ceil: return unary(llvm::Intrinsic::ceil);
    case ir::Intrinsic::Trunc: return unary(llvm::Intrinsic::trunc);
    case ir::Intrinsic::Round: return unary(llvm::Intrinsic::round);
    case ir::Intrinsic::Fma:
        if ((t.scalar() == ir::ScalarType::F16 || t.scalar() == ir::ScalarType::BF16) &&
            !target_.has_fma(t.scalar()))
            return emit_half_fma(a[0], a[1], a[2]); // [Note] Half-precision fma
        return b_.CreateIntrinsic(llvm::Intrinsic::fma, {ty}, {a[0], a[1], a[2]});
    case ir::Intrinsic::Copysign: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a[0], a[1]);
    case ir::Intrinsic::Fmin: return emit_float_min_max(llvm::Intrinsic::minnum, a[0], a[1]);
    case ir::Intrinsic::Fmax: return emit_float_min_max(llvm::Intrinsic::maxnum, a[0], a[1]);
    case ir::Intrinsic::IsNan: return b_.CreateFCmpUNO(x, x);
    case ir::Intrinsic::IsInf:
    case ir::Intrinsic::IsFinite: {
        llvm::Value *mag = unary(llvm::Intrinsic::fabs);
        llvm::Value *inf = llvm::ConstantFP::getInfinity(ty);
        // isfinite is false for NaN: "ordered and not equal".
        return op->op == ir::Intrinsic::IsInf ? b_.CreateFCmpOEQ(mag, inf) : b_.CreateFCmpONE(mag, inf);
    }
    default: break; // the math library, handled above
    }
    EMBER_UNREACHABLE("unknown Intrinsic");
}

llvm::Value *CodeGenLLVM::emit_math(ir::Intrinsic op, llvm::ArrayRef<llvm::Value *> a) {
    if (ir::is_fast_math(op)) {
        // The hardware's approximation works on f32 (f64 for some): f16 and bf16 go through f32.
        llvm::Value *x = a[0];
        llvm::Type *ty = x->getType();
        bool narrow = ty->isHalfTy() || ty->isBFloatTy();
        if (narrow) x = b_.CreateFPExt(x, b_.getFloatTy());
        if (llvm::Value *r = target_.emit_fast_math(b_, op, x)) return narrow ? b_.CreateFPTrunc(r, ty) : r;
        op = ir::accurate_version(op);
        if (op == ir::Intrinsic::Sqrt) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a[0]);
    }
    return emit_math_call(b_, op, a);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Compare *op) {
    llvm::Value *a = emit(op->a);
    llvm::Value *b = emit(op->b);
    using P = llvm::CmpInst::Predicate;
    const ir::Type t = op->a.type().lane_type(); // vectors compare lane by lane
    if (t.is_float()) {
        // Ordered predicates are false on NaN; `!=` is unordered, so true on NaN.
        static constexpr P fp[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT,
                                   P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
        return b_.CreateFCmp(fp[static_cast<int>(op->op)], a, b);
    }
    // Bools and pointers order as unsigned values.
    static constexpr P sint[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT,
                                 P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    static constexpr P uint[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT,
                                 P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
    return b_.CreateICmp((t.is_signed_int() ? sint : uint)[static_cast<int>(op->op)], a, b);
}

llvm::Value *CodeGenLLVM::emit_cast(llvm::Value *v, const ir::Type &from_type, const ir::Type &to_type) {
    llvm::Type *dst = value_type(to_type);
    // Vectors convert lane by lane: the rules are those of their lane types, on LLVM vectors.
    const ir::Type from = from_type.lane_type(), to = to_type.lane_type();
    if (from == to || (from.is_int() && to.is_int() && from.bits() == to.bits())) return v;
    if (from.is_fp8() || to.is_fp8()) { // through f32, which holds every value of the others
        llvm::Type *f32 = like_lanes(b_.getFloatTy(), dst);
        llvm::Value *wide = from.is_fp8() ? fp8_to_f32(v, from.scalar() == ScalarType::E4M3)
                            : from.scalar() == ScalarType::F32 ? v
                                                               : widen_float(v, f32);
        if (to.is_fp8()) return f32_to_fp8(wide, to.scalar() == ScalarType::E4M3);
        return to.scalar() == ScalarType::F32 ? wide : b_.CreateFPTrunc(wide, dst); // exact
    }
    // Pointers differ only in `const`, which LLVM does not see (all are global today).
    if (from.is_pointer() && to.is_pointer()) return v;
    if (to.is_bool()) { // x != 0; NaN != 0 is true
        if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
        return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_bool()) return to.is_float() ? b_.CreateUIToFP(v, dst) : b_.CreateZExt(v, dst);
    if (from.is_int() && to.is_int())
        return from.is_signed_int() ? b_.CreateSExtOrTrunc(v, dst) : b_.CreateZExtOrTrunc(v, dst);
    if (from.is_int() && to.is_float()) {
        if (to.scalar() == ir::ScalarType::BF16) return emit_int_to_bf16(v, from);
        if (to.scalar() == ir::ScalarType::F16 && from.bits() > 16) return emit_int_to_f16(v, from);
        return from.is_signed_int() ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
    }
    if (from.is_float() && to.is_int()) {
        // Truncates toward zero, saturates to the destination's range, NaN gives 0.
        auto id = to.is_signed_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
        return b_.CreateIntrinsic(id, {dst, v->getType()}, {v});
    }
    if (from.is_float() && to.is_float()) {
        const unsigned from_bits = v->getType()->getScalarSizeInBits();
        const unsigned to_bits = dst->getScalarSizeInBits();
        if (from_bits < to_bits) return widen_float(v, dst);
        if (from_bits > to_bits) {
            // To f16 through an arithmetic fence (no instruction on any target). LLVM 19's
            // InstCombine makes fptrunc (uitofp x to float) to half a uitofp x to half, and then
            // meets the fold that emit_int_to_f16 avoids: an fpext of it became uitofp x to
            // float, and the f16 overflow was lost (cast<f16>(cast<f32>(x << 29)) widened again
            // stayed 2^29, not inf; found by ember-difftest on the CPU device). The integer can
            // reach the fptrunc through a variable or a call as well as directly, so every such
            // fptrunc is fenced; the fence only keeps InstCombine from looking through it.
            // To bf16 likewise: InstCombine made fptrunc (uitofp x to double) to bfloat a uitofp
            // x to bfloat, which LLVM 19's x86 back end does through f32, rounding twice
            // (cast<bf16>(cast<f64>(4286578687:u32)) gave 2^32, not 4278190080; found by
            // ember-difftest on the CPU device).
            if (to.scalar() == ir::ScalarType::F16 || to.scalar() == ir::ScalarType::BF16)
                v = b_.CreateArithmeticFence(v, v->getType());
            return b_.CreateFPTrunc(v, dst);
        }
        // f16 <-> bf16: through f32, which holds both exactly, so there is one rounding. From
        // bf16 the fence above is needed too: an integer converted to bf16 and then to f16 was
        // folded into one conversion to f32 (cast<f16>(cast<bf16>(2^31)) stayed 2^31, not inf).
        llvm::Value *wide = widen_float(v, like_lanes(b_.getFloatTy(), dst));
        if (to.scalar() == ir::ScalarType::F16) wide = b_.CreateArithmeticFence(wide, wide->getType());
        return b_.CreateFPTrunc(wide, dst);
    }
    EMBER_UNREACHABLE("cast from " + from.to_string() + " to " + to.to_string());
}

// [Note] 8-bit floats from bits
// ==============================
// No target has an LLVM type for e4m3 or e5m2, so they are i8s and the code generator converts
// them with integer arithmetic, the same on every target ([Note] IR semantics: 8-bit floats):
// - to f32, exactly: e5m2 is the high byte of an f16 (fpext of it); e4m3's normals rebias the
//   exponent (+120) and shift the mantissa, its subnormals are m * 2^-9, S.1111.111 is NaN.
// - from f32: NaN gives 0x7f; a magnitude above the largest finite value (448, 57344) gives it
//   (0x7e, 0x7b) with the sign; a normal rebiases the exponent and rounds the mantissa to 3 (2)
//   bits by adding half an ulp less one plus the kept bit's lowest bit, then shifting (a carry
//   moves into the exponent, as it must); below the smallest normal (2^-6, 2^-14) the magnitude
//   scaled to units of the smallest subnormal is rounded to an integer by adding and subtracting
//   2^23 in f32 (round to nearest even).
// The host's ember::float8_e4m3 and float8_e5m2 (ember/Float8.h) convert the same way, and
// Fp8Test compares the two on every byte and across the f32 range, on every device.
llvm::Value *CodeGenLLVM::fp8_to_f32(llvm::Value *bits, bool e4m3) {
    llvm::Type *i32 = like_lanes(b_.getInt32Ty(), bits->getType());
    llvm::Type *f32 = like_lanes(b_.getFloatTy(), bits->getType());
    auto k = [&](uint32_t c) { return llvm::ConstantInt::get(i32, c); };
    llvm::Value *x = b_.CreateZExt(bits, i32);
    if (!e4m3) {
        llvm::Type *i16 = like_lanes(b_.getInt16Ty(), bits->getType());
        llvm::Value *h = b_.CreateShl(b_.CreateZExt(bits, i16), llvm::ConstantInt::get(i16, 8));
        return b_.CreateFPExt(b_.CreateBitCast(h, like_lanes(b_.getHalfTy(), bits->getType())),
                              f32);
    }
    llvm::Value *sign = b_.CreateShl(b_.CreateAnd(x, k(0x80)), k(24));
    llvm::Value *e = b_.CreateAnd(b_.CreateLShr(x, k(3)), k(15)), *m = b_.CreateAnd(x, k(7));
    llvm::Value *normal = b_.CreateOr(
        sign, b_.CreateOr(b_.CreateShl(b_.CreateAdd(e, k(120)), k(23)), b_.CreateShl(m, k(20))));
    llvm::Value *tiny = b_.CreateFMul(b_.CreateUIToFP(m, f32), llvm::ConstantFP::get(f32, 0x1p-9));
    llvm::Value *subnormal = b_.CreateOr(sign, b_.CreateBitCast(tiny, i32));
    llvm::Value *nan = b_.CreateOr(sign, k(0x7fc00000));
    llvm::Value *r = b_.CreateSelect(b_.CreateICmpEQ(b_.CreateAnd(x, k(0x7f)), k(0x7f)), nan,
                                     normal);
    r = b_.CreateSelect(b_.CreateICmpEQ(e, k(0)), subnormal, r);
    return b_.CreateBitCast(r, f32);
}

llvm::Value *CodeGenLLVM::f32_to_fp8(llvm::Value *f, bool e4m3) {
    llvm::Type *i32 = like_lanes(b_.getInt32Ty(), f->getType());
    llvm::Type *f32 = f->getType();
    auto k = [&](uint32_t c) { return llvm::ConstantInt::get(i32, c); };
    const unsigned mant = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const uint32_t largest = e4m3 ? 0x43e00000u : 0x47600000u;  // 448, 57344
    const uint32_t smallest = e4m3 ? 0x3c800000u : 0x38800000u; // 2^-6, 2^-14
    const uint32_t largest_code = e4m3 ? 0x7e : 0x7b;
    llvm::Value *x = b_.CreateBitCast(f, i32);
    llvm::Value *sign = b_.CreateAnd(b_.CreateLShr(x, k(24)), k(0x80));
    llvm::Value *a = b_.CreateAnd(x, k(0x7fffffff));
    const unsigned drop = 23 - mant;
    llvm::Value *r = b_.CreateSub(a, k((127 - bias) << 23));
    r = b_.CreateAdd(
        r, b_.CreateAdd(k((1u << (drop - 1)) - 1), b_.CreateAnd(b_.CreateLShr(r, k(drop)), k(1))));
    llvm::Value *normal = b_.CreateLShr(r, k(drop));
    // |f| in units of the smallest subnormal (2^(1 - bias - mant)), rounded by the 2^23 trick.
    llvm::Value *scaled = b_.CreateFMul(
        b_.CreateBitCast(a, f32),
        llvm::ConstantFP::get(f32, std::ldexp(1.0, int(bias + mant - 1))));
    llvm::Value *rounded = b_.CreateFAdd(scaled, llvm::ConstantFP::get(f32, 0x1p23));
    llvm::Value *subnormal = b_.CreateSub(b_.CreateBitCast(rounded, i32), k(0x4b000000));
    llvm::Value *code = b_.CreateSelect(b_.CreateICmpULT(a, k(smallest)), subnormal, normal);
    code = b_.CreateSelect(b_.CreateICmpUGT(a, k(largest)), k(largest_code), code);
    code = b_.CreateSelect(b_.CreateICmpUGT(a, k(0x7f800000)), k(0x7f), b_.CreateOr(sign, code));
    return b_.CreateTrunc(code, like_lanes(b_.getInt8Ty(), f->getType()));
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Cast *op) {
    return emit_cast(emit(op->a), op->a.type(), op->type);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Select *op) {
    llvm::Value *c = emit(op->cond);
    llvm::Value *a = emit(op->a);
    llvm::Value *b = emit(op->b);
    return b_.CreateSelect(c, a, b);
}

llvm::Value *CodeGenLLVM::element_address(const ir::Expr &ptr, const ir::Expr &index) {
    llvm::Value *p = emit(ptr);
    llvm::Value *i = emit(index);
    // The index is extended by its own signedness ([Note] IR semantics, Memory).
    i = index.type().is_signed_int() ? b_.CreateSExt(i, b_.getInt64Ty())
                                     : b_.CreateZExt(i, b_.getInt64Ty());
    return b_.CreateInBoundsGEP(memory_type(ptr.type().element_type()), p, i);
}

llvm::Value *CodeGenLLVM::access_address(const ir::Expr &ptr, const ir::Expr &index, const ir::Type &type,
                                          bool is_store) {
    llvm::Value *addr = element_address(ptr, index);
    if (ptr.type().space() != ir::AddressSpace::Shared) return addr;
    return target_.emit_shared_access_check(b_, addr, type.bytes(), is_store);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Load *op) {
    llvm::Value *addr = access_address(op->ptr, op->index, op->type, /*is_store=*/false);
    llvm::Type *ty = memory_type(op->type);
    auto load = [&](llvm::Align align) -> llvm::Value * {
        llvm::LoadInst *v = b_.CreateAlignedLoad(ty, addr, align);
        // A read-only pointer's memory does not change during the kernel (the contract of
        // Ptr<const T>): NVPTX turns invariant loads into ld.global.nc.
        if (op->ptr.type().readonly())
            v->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
        return v;
    };
    llvm::Value *v = op->type.is_vector() ? vector_access(addr, op->type, /*is_store=*/false, load)
                                          : load(llvm::Align(op->type.bytes()));
    if (op->type.lane_type().is_bool()) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(ty));
    return v;
}

llvm::Value *CodeGenLLVM::vector_access(llvm::Value *addr, const ir::Type &t, bool is_store,
                                        llvm::function_ref<llvm::Value *(llvm::Align)> access) {
    const unsigned align = ir::vector_alignment(t);
    if (target_.faults_on_misaligned_access() || align == 1) return access(llvm::Align(align));
    llvm::Value *low = b_.CreateAnd(b_.CreatePtrToInt(addr, b_.getInt64Ty()), b_.getInt64(align - 1));
    llvm::Value *misaligned = b_.CreateICmpNE(low, b_.getInt64(0), "misaligned");
    llvm::BasicBlock *bad_bb = new_block("vector.misaligned");
    llvm::BasicBlock *ok_bb = new_block("vector.aligned");
    llvm::BasicBlock *end_bb = new_block("vector.end");
    b_.CreateCondBr(misaligned, bad_bb, ok_bb, llvm::MDBuilder(ctx_).createUnlikelyBranchWeights());
    enter(bad_bb);
    target_.emit_misaligned_access(b_, addr, align, t.bytes(), is_store);
    llvm::Value *slow = access(llvm::Align(1));
    llvm::BasicBlock *slow_end = b_.GetInsertBlock();
    b_.CreateBr(end_bb);
    enter(ok_bb);
    llvm::Value *fast = access(llvm::Align(align));
    llvm::BasicBlock *fast_end = b_.GetInsertBlock();
    b_.CreateBr(end_bb);
    enter(end_bb);
    if (is_store) return nullptr;
    llvm::PHINode *phi = b_.CreatePHI(fast->getType(), 2);
    phi->addIncoming(slow, slow_end);
    phi->addIncoming(fast, fast_end);
    return phi;
}

llvm::Value *CodeGenLLVM::per_lane(llvm::ArrayRef<llvm::Value *> args,
                                   llvm::function_ref<llvm::Value *(llvm::ArrayRef<llvm::Value *>)> f) {
    const unsigned lanes = llvm::cast<llvm::FixedVectorType>(args[0]->getType())->getNumElements();
    llvm::Value *result = nullptr;
    for (unsigned i = 0; i < lanes; ++i) {
        std::vector<llvm::Value *> scalars;
        for (llvm::Value *a : args) scalars.push_back(b_.CreateExtractElement(a, uint64_t(i)));
        llvm::Value *r = f(scalars);
        if (!result) result = llvm::PoisonValue::get(llvm::FixedVectorType::get(r->getType(), lanes));
        result = b_.CreateInsertElement(result, r, uint64_t(i));
    }
    return result;
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::MakeVector *op) {
    const unsigned lanes = op->type.lanes();
    if (op->is_broadcast()) return b_.CreateVectorSplat(lanes, emit(op->args[0]));
    llvm::Value *v = llvm::PoisonValue::get(value_type(op->type));
    for (unsigned i = 0; i < lanes; ++i) v = b_.CreateInsertElement(v, emit(op->args[i]), uint64_t(i));
    return v;
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Extract *op) {
    return b_.CreateExtractElement(emit(op->vector), uint64_t(op->lane));
}

llvm::Value *CodeGenLLVM::fold_tree(llvm::Value *v, llvm::function_ref<llvm::Value *(llvm::Value *, llvm::Value *)> op) {
    unsigned n = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements();
    for (; n > 2; n /= 2) {
        std::vector<int> lo, hi;
        for (unsigned i = 0; i < n / 2; ++i) {
            lo.push_back(static_cast<int>(i));
            hi.push_back(static_cast<int>(i + n / 2));
        }
        // Sequenced: the order of function arguments is unspecified, the IR's must not be.
        llvm::Value *low = b_.CreateShuffleVector(v, lo);
        llvm::Value *high = b_.CreateShuffleVector(v, hi);
        v = op(low, high);
    }
    llvm::Value *first = b_.CreateExtractElement(v, uint64_t(0));
    llvm::Value *second = b_.CreateExtractElement(v, uint64_t(1));
    return op(first, second);
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::visit(const ir::Reduce *op) {
    llvm::Value *v = emit(op->value);
    const ir::Type t = op->type; // the lane type
    if (t.is_float()) {
        // The tree order of [Note] IR semantics: the same roundings on every target (LLVM's
        // ordered reductions would fold left to right, its unordered ones in any order).
        return fold_tree(v, [&](llvm::Value *x, llvm::Value *y) -> llvm::Value * {
            switch (op->op) {
            case ir::ReduceOp::Add: return b_.CreateFAdd(x, y);
            case ir::ReduceOp::Mul: return b_.CreateFMul(x, y);
            case ir::ReduceOp::Min: return emit_float_min_max(llvm::Intrinsic::minnum, x, y);
            case ir::ReduceOp::Max: return emit_float_min_max(llvm::Intrinsic::maxnum, x, y);
            default: EMBER_UNREACHABLE("bitwise reduction of floats");
            }
        });
    }
    // Integers and bools: the order does not change the result.
    const bool is_signed = t.is_signed_int();
    switch (op->op) {
    case ir::ReduceOp::Add: return b_.CreateAddReduce(v);
    case ir::ReduceOp::Mul: return b_.CreateMulReduce(v);
    case ir::ReduceOp::Min: return b_.CreateIntMinReduce(v, is_signed);
    case ir::ReduceOp::Max: return b_.CreateIntMaxReduce(v, is_signed);
    case ir::ReduceOp::And: return b_.CreateAndReduce(v);
    case ir::ReduceOp::Or: return b_.CreateOrReduce(v);
    case ir::ReduceOp::Xor: return b_.CreateXorReduce(v);
    }
    EMBER_UNREACHABLE("unknown ReduceOp");
}

// ---------------------------------------------------------------------------------------------
// Statements.

// Statements nest (a block in a for in a block ...) up to the IR's nesting limit, each level a
// call of emit: the visitors that do not recurse and need large frames are kept out of it
// ([[gnu::noinline]]), so that the deepest kernel compiles on a 1 MiB stack.
llvm::Error CodeGenLLVM::emit(const ir::Stmt &s) {
    EMBER_ASSERT(s, "null statement in a verified kernel");
    switch (s.kind()) {
#define EMBER_IR_STMT(Name)                                                                        \
    case ir::NodeKind::Name: return visit(static_cast<const ir::Name *>(s.get()));
#include "ember/compiler/IRNodes.def"
    default: break;
    }
    EMBER_UNREACHABLE("expression kind in a statement position");
}

llvm::AllocaInst *CodeGenLLVM::create_entry_alloca(llvm::Type *ty, const std::string &name) {
    llvm::IRBuilder<> entry(alloca_point_);
    return entry.CreateAlloca(ty, nullptr, name.empty() ? "" : name + ".addr");
}

void CodeGenLLVM::start_unreachable_block(const char *name) {
    enter(new_block(name));
}

void CodeGenLLVM::branch_if_open(llvm::BasicBlock *to) {
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(to);
}

void CodeGenLLVM::bind(const ir::VariableRef &var, llvm::Value *v) {
    // Name fresh instructions after the variable; never rename an argument or a value that
    // another variable already named.
    if (auto *inst = llvm::dyn_cast<llvm::Instruction>(v); inst && !inst->hasName())
        inst->setName(llvm_name(*var));
    values_[var.get()] = v;
}

llvm::Error CodeGenLLVM::visit(const ir::Block *op) {
    for (const ir::Stmt &s : op->stmts)
        if (llvm::Error err = emit(s)) return err;
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Let *op) {
    // A let is immutable and every use is dominated by its definition (structured control flow;
    // uses in blocks after a break have no predecessors, which LLVM treats as dominated), so it
    // is bound to its SSA value directly instead of going through an alloca.
    bind(op->var, emit(op->value));
    return llvm::Error::success();
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::visit(const ir::SharedArray *op) {
    const ir::Type elem = op->var->type.element_type();
    if (op->count == 0) {
        facts_.uses_dynamic_shared = true;
        // An external symbol keeps its name in PTX, where "." is not allowed.
        llvm::Value *dynamic = target_.emit_dynamic_shared(b_, kernel_.name + "_dynamic_shared");
        // Tiles that wgmma and the TMA use start on 1024-byte boundaries of shared memory: the
        // dynamic shared memory of a kernel with such operations starts on one too, also after
        // static arrays.
        if (auto *g = llvm::dyn_cast<llvm::GlobalVariable>(dynamic); g && aligned_dynamic_shared_)
            g->setAlignment(llvm::Align(1024));
        bind(op->var, dynamic);
        return llvm::Error::success();
    }
    const uint64_t offset = (facts_.static_shared_bytes + 15) / 16 * 16;
    llvm::Value *base = target_.emit_shared_array(b_, memory_type(elem), op->count, offset,
                                                  kernel_.name + ".shared." + llvm_name(*op->var));
    facts_.static_shared_bytes = offset + op->count * elem.bytes();
    bind(op->var, base);
    return llvm::Error::success();
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::visit(const ir::LocalArray *op) {
    llvm::Type *elem = memory_type(op->var->type.element_type());
    llvm::AllocaInst *a = create_entry_alloca(llvm::ArrayType::get(elem, op->count), llvm_name(*op->var));
    a->setAlignment(llvm::Align(16));
    bind(op->var, a);
    return llvm::Error::success();
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::visit(const ir::ConstantArray *op) {
    // A writable global in the constant address space, initialised by the driver when the module
    // loads and rewritten by the host (cuModuleGetGlobal + a copy): externally_initialized keeps
    // the optimiser from folding its loads into the initial value.
    llvm::Module &m = *function_->getParent();
    llvm::Type *elem = memory_type(op->var->type.element_type());
    auto *ty = llvm::ArrayType::get(elem, op->count);
    llvm::Constant *init = llvm::Constant::getNullValue(ty);
    if (!op->init.empty()) {
        std::vector<llvm::Constant *> values;
        values.reserve(op->init.size());
        for (const ir::Expr &e : op->init) {
            if (const auto *b = e.as<ir::BoolImm>())
                values.push_back(llvm::ConstantInt::get(elem, b->value ? 1 : 0));
            else
                values.push_back(llvm::cast<llvm::Constant>(emit(e)));
        }
        init = llvm::ConstantArray::get(ty, values);
    }
    const std::string symbol = target_.constant_symbol(op->name);
    auto *g = new llvm::GlobalVariable(m, ty, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage, init,
                                       symbol, nullptr, llvm::GlobalValue::NotThreadLocal,
                                       target_.constant_address_space(), /*isExternallyInitialized=*/true);
    // 16 bytes, as buffers and shared arrays: SIMD loads from the start are aligned.
    g->setAlignment(llvm::Align(16));
    if (g->getName() != symbol)
        return make_compile_failure("kernel '" + kernel_.name + "': constant array @" + op->name +
                                    " cannot be named '" + symbol +
                                    "': the module already has a symbol of that name; rename the array");
    bind(op->var, g);
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Fence *op) {
    target_.emit_fence(b_, op->scope);
    return llvm::Error::success();
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::visit(const ir::AsyncCopy *op) {
    const ir::Type elem = op->dst.type().element_type();
    const ir::Type t = ir::Type::vector(elem.scalar(), op->count);
    if (target_.has_async_copy()) {
        llvm::Value *dst = access_address(op->dst, op->dst_index, t, /*is_store=*/true);
        llvm::Value *src = element_address(op->src, op->src_index);
        llvm::Value *valid = op->valid ? emit(op->valid) : nullptr;
        target_.emit_async_copy(b_, dst, src, op->bytes(), valid);
        return llvm::Error::success();
    }
    // No asynchronous copy here: the copy completes now, as a load and a store of the N elements
    // (with the checks of any other access), which [Note] IR semantics allows.
    ir::Stmt copy = ir::Store::make(op->dst, op->dst_index,
                                    ir::Load::make(op->src, op->src_index, op->count));
    if (!op->valid) return emit(copy);
    ir::Expr zero = elem.is_float() ? ir::FloatImm::make(elem, 0.0) : ir::IntImm::make(elem, 0);
    if (op->count > 1) zero = ir::MakeVector::broadcast(zero, op->count);
    return emit(ir::If::make(op->valid, copy, ir::Store::make(op->dst, op->dst_index, zero)));
}

llvm::Error CodeGenLLVM::visit(const ir::AsyncGroup *op) {
    if (target_.has_async_copy()) target_.emit_async_group(b_, op->wait);
    return llvm::Error::success();
}

// The accumulators of a wgmma or tensor sync are mutable variables (allocas): their values are
// loaded, passed to the target, and the results stored back.
llvm::Error CodeGenLLVM::visit(const ir::Wgmma *op) {
    llvm::Value *a = element_address(op->a, op->a_index);
    llvm::Value *bv = element_address(op->b, op->b_index);
    std::vector<llvm::Value *> acc;
    llvm::Type *f32x4 = value_type(ir::Type::vector(ir::ScalarType::F32, 4));
    for (const ir::VariableRef &v : op->acc)
        acc.push_back(b_.CreateLoad(f32x4, values_.at(v.get())));
    target_.emit_wgmma(b_, *op, a, bv, acc);
    for (size_t i = 0; i < acc.size(); ++i) b_.CreateStore(acc[i], values_.at(op->acc[i].get()));
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::TensorSync *op) {
    std::vector<llvm::Value *> acc;
    llvm::Type *f32x4 = value_type(ir::Type::vector(ir::ScalarType::F32, 4));
    for (const ir::VariableRef &v : op->acc)
        acc.push_back(b_.CreateLoad(f32x4, values_.at(v.get())));
    target_.emit_tensor_sync(b_, *op, acc);
    for (size_t i = 0; i < acc.size(); ++i) b_.CreateStore(acc[i], values_.at(op->acc[i].get()));
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::MBarrier *op) {
    // A wait is where the CPU device's threads must take turns, as at a barrier.
    if (op->op == ir::MBarrierOp::Wait) facts_.uses_barrier = true;
    if (op->op == ir::MBarrierOp::ArriveCluster) facts_.uses_cluster = true;
    llvm::Value *bar = element_address(op->ptr, op->index);
    llvm::Value *value = op->value ? b_.CreateSExtOrTrunc(emit(op->value), b_.getInt32Ty())
                                   : nullptr;
    target_.emit_mbarrier(b_, op->op, bar, value);
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::TmaLoad *op) {
    llvm::Value *dst = element_address(op->dst, op->dst_index);
    llvm::Value *map = emit(op->map);
    llvm::Value *x = b_.CreateSExtOrTrunc(emit(op->x), b_.getInt32Ty());
    llvm::Value *y = b_.CreateSExtOrTrunc(emit(op->y), b_.getInt32Ty());
    llvm::Value *bar = element_address(op->bar, op->bar_index);
    llvm::Value *multicast = nullptr;
    if (op->multicast) {
        facts_.uses_cluster = true;
        multicast = b_.CreateTrunc(emit(op->multicast), b_.getInt16Ty());
    }
    target_.emit_tma_load(b_, dst, map, x, y, bar, multicast);
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Declare *op) {
    llvm::Value *init = emit(op->init);
    llvm::AllocaInst *slot = create_entry_alloca(value_type(op->var->type), llvm_name(*op->var));
    b_.CreateStore(init, slot);
    values_[op->var.get()] = slot;
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Assign *op) {
    llvm::Value *v = emit(op->value);
    auto it = values_.find(op->var.get());
    EMBER_ASSERT(it != values_.end() && op->var->kind == ir::VarKind::Mutable,
                 "assignment to an undeclared or immutable variable");
    b_.CreateStore(v, it->second);
    return llvm::Error::success();
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::visit(const ir::Store *op) {
    llvm::Value *addr = access_address(op->ptr, op->index, op->value.type(), /*is_store=*/true);
    llvm::Value *v = emit(op->value);
    const ir::Type t = op->value.type();
    if (t.lane_type().is_bool()) v = b_.CreateZExt(v, memory_type(t));
    auto store = [&](llvm::Align align) -> llvm::Value * { return b_.CreateAlignedStore(v, addr, align); };
    if (t.is_vector())
        vector_access(addr, t, /*is_store=*/true, store);
    else
        store(llvm::Align(t.bytes()));
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::If *op) {
    llvm::Value *cond = emit(op->cond);
    llvm::BasicBlock *then_bb = new_block("if.then");
    llvm::BasicBlock *else_bb = op->else_body ? new_block("if.else") : nullptr;
    llvm::BasicBlock *end_bb = new_block("if.end");
    b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : end_bb);
    enter(then_bb);
    if (llvm::Error err = emit_scoped(op->then_body)) return err;
    branch_if_open(end_bb);
    if (else_bb) {
        enter(else_bb);
        if (llvm::Error err = emit_scoped(op->else_body)) return err;
        branch_if_open(end_bb);
    }
    enter(end_bb);
    return llvm::Error::success();
}

/// The loop ID of a `for` with its unroll hint ([Note] IR semantics: Unroll hints): LLVM's loop
/// unroller reads it from the backedge's branch, which loop rotation keeps it on.
llvm::MDNode *CodeGenLLVM::unroll_metadata(const ir::Unroll &u) {
    llvm::LLVMContext &c = ctx_;
    llvm::SmallVector<llvm::Metadata *, 2> ops;
    ops.push_back(nullptr); // the loop ID refers to itself
    switch (u.kind) {
    case ir::Unroll::Kind::Disable:
        ops.push_back(llvm::MDNode::get(c, llvm::MDString::get(c, "llvm.loop.unroll.disable")));
        break;
    case ir::Unroll::Kind::Full:
        ops.push_back(llvm::MDNode::get(c, llvm::MDString::get(c, "llvm.loop.unroll.full")));
        break;
    case ir::Unroll::Kind::Count:
        ops.push_back(llvm::MDNode::get(c, {llvm::MDString::get(c, "llvm.loop.unroll.count"),
                                            llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                                llvm::Type::getInt32Ty(c), u.count))}));
        break;
    case ir::Unroll::Kind::Default:
        // LLVM may still unroll a loop whose trip count is a constant (completely or in part),
        // but not one whose trip count is known only at run time: unrolling those (NVPTX and
        // AMDGPU ask for it) adds a remainder loop, registers and compile time for nothing a
        // memory-bound grid-stride loop measures; unroll(N) asks for it.
        ops.push_back(
            llvm::MDNode::get(c, llvm::MDString::get(c, "llvm.loop.unroll.runtime.disable")));
        break;
    }
    llvm::MDNode *id = llvm::MDNode::getDistinct(c, ops);
    id->replaceOperandWith(0, id);
    return id;
}

[[gnu::noinline]] llvm::Value *CodeGenLLVM::for_trip_count(llvm::Value *begin, llvm::Value *end,
                                                           llvm::ConstantInt *step,
                                                           bool is_signed) {
    // The number of values begin, begin + step, ... strictly before end in the step's direction,
    // in the index type taken as unsigned: the distance between begin and end is exact there, and
    // so is the count, which is at most the distance (so the + 1 does not wrap). A zero step
    // runs nothing.
    llvm::Type *ty = begin->getType();
    llvm::Constant *zero = llvm::Constant::getNullValue(ty);
    llvm::Constant *one = llvm::ConstantInt::get(ty, 1);
    if (step->isZero()) return zero;
    const bool up = !is_signed || step->getValue().isStrictlyPositive();
    auto *b0 = llvm::dyn_cast<llvm::ConstantInt>(begin);
    llvm::Value *runs, *distance, *magnitude;
    if (up) {
        runs = is_signed ? b_.CreateICmpSLT(begin, end) : b_.CreateICmpULT(begin, end);
        distance = b0 && b0->isZero() ? end : b_.CreateSub(end, begin);
        magnitude = step;
    } else {
        runs = b_.CreateICmpSGT(begin, end);
        distance = b_.CreateSub(begin, end);
        magnitude = llvm::ConstantExpr::getNeg(step);
    }
    if (step->isOne()) return b_.CreateSelect(runs, distance, zero, "for.trip");
    llvm::Value *count = b_.CreateNUWAdd(b_.CreateUDiv(b_.CreateSub(distance, one), magnitude),
                                         one);
    return b_.CreateSelect(runs, count, zero, "for.trip");
}

llvm::Value *CodeGenLLVM::directed(const ForLoop &l, llvm::Value *if_up, llvm::Value *if_down) {
    llvm::Value *v = l.down ? b_.CreateSelect(l.down, if_down, b_.getFalse()) : b_.getFalse();
    return b_.CreateSelect(l.up, if_up, v);
}

llvm::Value *CodeGenLLVM::before_end(const ForLoop &l, llvm::Value *i) {
    // (Each comparison is its own statement: the order of the instructions does not depend on
    // the order in which the C++ compiler evaluates arguments.)
    llvm::Value *below = l.is_signed ? b_.CreateICmpSLT(i, l.end) : b_.CreateICmpULT(i, l.end);
    llvm::Value *above = l.down ? b_.CreateICmpSGT(i, l.end) : nullptr;
    return directed(l, below, above);
}

llvm::Value *CodeGenLLVM::advance(const ForLoop &l, llvm::Value *from, const llvm::Twine &name) {
    llvm::Value *next = b_.CreateAdd(from, l.step, name);
    b_.CreateStore(next, l.slot);
    llvm::Value *above = l.is_signed ? b_.CreateICmpSGT(next, from) : b_.CreateICmpUGT(next, from);
    llvm::Value *below = l.down ? b_.CreateICmpSLT(next, from) : nullptr;
    return directed(l, above, below);
}

llvm::Value *CodeGenLLVM::counted_index(const ForLoop &l, llvm::Value *iter) {
    // Exact: iter * s is at most the distance from b to e.
    llvm::Value *offset = l.constant_step->isOne() ? iter : b_.CreateMul(iter, l.step);
    auto *b0 = llvm::dyn_cast<llvm::ConstantInt>(l.begin);
    return b0 && b0->isZero() ? offset : b_.CreateAdd(l.begin, offset);
}

/// [Note] Unrolling by hand
/// LLVM 19 applies a loop's `llvm.loop.unroll.count` in its full-unroll pass, which may not add
/// a remainder loop: where the trip count is not a constant, each of the N copies keeps its own
/// exit test, so a grid-stride loop unrolled by 4 still tests (and branches) after every load.
/// ember emits such a loop itself: a loop of groups of N copies of the body with one test per
/// group (enough iterations left for all N), then the plain loop for the last N - 1 at most,
/// both marked not to be unrolled again. A constant trip count is left to LLVM, which handles
/// it, and so is a body that declares arrays (copies would duplicate them).
bool CodeGenLLVM::unrolls_by_hand(const ir::For *op, const ForLoop &l) const {
    if (op->unroll.kind != ir::Unroll::Kind::Count) return false;
    if (l.trip && llvm::isa<llvm::Constant>(l.trip)) return false;
    struct Arrays final : ir::IRVisitor {
        bool found = false;
        using ir::IRVisitor::visit;
        void visit(const ir::SharedArray *) override { found = true; }
        void visit(const ir::LocalArray *) override { found = true; }
        void visit(const ir::ConstantArray *) override { found = true; }
    } arrays;
    arrays.visit(op->body);
    return !arrays.found;
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::emit_for_groups(const ir::For *op, const ForLoop &l,
                                                           llvm::BasicBlock *rest_bb,
                                                           llvm::BasicBlock *end_bb) {
    const uint32_t n = op->unroll.count;
    llvm::Type *ty = l.begin->getType();
    llvm::Value *span = nullptr, *span_fits = nullptr;
    if (!l.constant_step) {
        // The group's last index is (N - 1) |s| past its first: computed once; where that does
        // not fit the type, no group runs.
        llvm::Value *magnitude = l.step;
        if (l.down) {
            llvm::Value *negated = b_.CreateNeg(l.step);
            magnitude = b_.CreateSelect(l.up, l.step, negated);
        }
        llvm::Value *product = b_.CreateBinaryIntrinsic(
            llvm::Intrinsic::umul_with_overflow, magnitude, llvm::ConstantInt::get(ty, n - 1));
        span = b_.CreateExtractValue(product, 0, "for.span");
        span_fits = b_.CreateNot(b_.CreateExtractValue(product, 1), "for.span.fits");
    }
    llvm::BasicBlock *cond_bb = new_block("for.group.cond");
    llvm::BasicBlock *latch_bb = new_block("for.group.latch");
    b_.CreateBr(cond_bb);

    enter(cond_bb);
    llvm::Value *first, *go;
    if (l.constant_step) {
        first = b_.CreateLoad(ty, l.slot, "for.group.k");
        llvm::Value *left = b_.CreateSub(l.trip, first);
        go = b_.CreateICmpUGE(left, llvm::ConstantInt::get(ty, n), "for.group.go");
    } else {
        // The first index is before e, and e is more than the span past it.
        first = b_.CreateLoad(ty, l.slot, "for.group.i");
        llvm::Value *before = before_end(l, first);
        llvm::Value *distance = b_.CreateSub(l.end, first);
        if (l.down) {
            llvm::Value *back = b_.CreateSub(first, l.end);
            distance = b_.CreateSelect(l.up, distance, back);
        }
        llvm::Value *far = b_.CreateICmpUGT(distance, span);
        go = b_.CreateAnd(b_.CreateAnd(before, span_fits), far, "for.group.go");
    }
    llvm::BasicBlock *copy_bb = new_block("for.group");
    b_.CreateCondBr(go, copy_bb, rest_bb);

    enter(copy_bb);
    for (uint32_t j = 0; j < n; ++j) {
        llvm::Value *index;
        llvm::Constant *jc = llvm::ConstantInt::get(ty, j);
        if (l.constant_step) {
            index = counted_index(l, j == 0 ? first : b_.CreateNUWAdd(first, jc));
        } else {
            index = j == 0 ? first : b_.CreateAdd(first, b_.CreateMul(l.step, jc));
        }
        values_[op->var.get()] = index;
        llvm::BasicBlock *next_bb = j + 1 < n ? new_block("for.group") : latch_bb;
        loops_.push_back({next_bb, end_bb}); // `continue` goes on with the next copy
        llvm::Error err = emit_scoped(op->body);
        loops_.pop_back();
        if (err) return err;
        branch_if_open(next_bb);
        enter(next_bb);
    }

    llvm::BranchInst *backedge;
    if (l.constant_step) {
        b_.CreateStore(b_.CreateNUWAdd(first, llvm::ConstantInt::get(ty, n), "for.group.next"),
                       l.slot);
        backedge = b_.CreateBr(cond_bb);
    } else {
        llvm::Value *last = b_.CreateAdd(first,
                                         b_.CreateMul(l.step, llvm::ConstantInt::get(ty, n - 1)));
        llvm::Value *fits = advance(l, last, "for.group.next");
        backedge = b_.CreateCondBr(fits, cond_bb, end_bb);
    }
    backedge->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(ir::Unroll::none()));
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::For *op) {
    // b, e and s are evaluated once; the body runs for i = b, b + s, b + 2s, ... while
    // (s > 0 ? i < e : s < 0 ? i > e : false), never past the index type's range ([Note] IR
    // semantics: Loops).
    // - A constant step: the loop counts its iterations. The trip count is computed once (a
    //   division by the constant, or none for 1), a counter k runs from 0 to it and i is
    //   b + k * s, so that LLVM knows the trip count (unrolling, vectorisation on the CPU).
    // - A step known at run time (a grid-stride loop's): the index itself is the loop variable,
    //   tested against e before each iteration, and the latch leaves the loop where adding s
    //   wraps. Counting would take a 64-bit division before the loop, whose code took the
    //   benchmark's vector reduction from 24 to 38 registers (6 blocks of 256 threads per
    //   multiprocessor instead of 8) for nothing, as such a loop is not unrolled without a hint.
    // `unroll(N)` where the trip count is not a constant: groups first ([Note] Unrolling by hand).
    ForLoop l{};
    l.begin = emit(op->begin);
    l.end = emit(op->end);
    l.step = emit(op->step);
    l.is_signed = op->var->type.is_signed_int();
    l.name = llvm_name(*op->var);
    l.constant_step = llvm::dyn_cast<llvm::ConstantInt>(l.step);
    llvm::Type *ty = l.begin->getType();
    const llvm::ConstantInt *k = l.constant_step;

    if (k) {
        l.trip = for_trip_count(l.begin, l.end, l.constant_step, l.is_signed);
        l.slot = create_entry_alloca(ty, l.name.empty() ? "for.iter" : l.name + ".iter");
        b_.CreateStore(llvm::Constant::getNullValue(ty), l.slot);
    } else {
        llvm::Constant *zero = llvm::Constant::getNullValue(ty);
        l.up = l.is_signed ? b_.CreateICmpSGT(l.step, zero, "for.up")
                           : b_.CreateICmpNE(l.step, zero, "for.up");
        l.down = l.is_signed ? b_.CreateICmpSLT(l.step, zero, "for.down") : nullptr;
        l.slot = create_entry_alloca(ty, l.name.empty() ? "for.index" : l.name);
        b_.CreateStore(l.begin, l.slot);
    }

    llvm::BasicBlock *cond_bb = new_block("for.cond");
    llvm::BasicBlock *body_bb = new_block("for.body");
    llvm::BasicBlock *latch_bb = new_block("for.latch");
    llvm::BasicBlock *end_bb = new_block("for.end");
    const bool by_hand = unrolls_by_hand(op, l);
    if (by_hand) {
        if (llvm::Error err = emit_for_groups(op, l, cond_bb, end_bb)) return err;
    } else {
        b_.CreateBr(cond_bb);
    }

    enter(cond_bb);
    llvm::Value *i;
    if (k) {
        llvm::Value *iter = b_.CreateLoad(ty, l.slot, "for.k");
        b_.CreateCondBr(b_.CreateICmpULT(iter, l.trip, "for.go"), body_bb, end_bb);
        enter(body_bb);
        i = counted_index(l, iter);
        if (llvm::isa<llvm::Instruction>(i) && !l.name.empty()) i->setName(l.name);
    } else {
        i = b_.CreateLoad(ty, l.slot, l.name);
        llvm::Value *go = before_end(l, i);
        go->setName("for.go");
        b_.CreateCondBr(go, body_bb, end_bb);
        enter(body_bb);
    }
    values_[op->var.get()] = i;
    loops_.push_back({latch_bb, end_bb});
    llvm::Error err = emit_scoped(op->body);
    loops_.pop_back();
    if (err) return err;
    branch_if_open(latch_bb);

    enter(latch_bb);
    llvm::Value *current = b_.CreateLoad(ty, l.slot);
    llvm::BranchInst *backedge;
    if (k) {
        b_.CreateStore(b_.CreateNUWAdd(current, llvm::ConstantInt::get(ty, 1), "for.next"), l.slot);
        backedge = b_.CreateBr(cond_bb);
    } else {
        // The next index exists only where the add did not wrap.
        llvm::Value *fits = advance(l, current, "for.next");
        fits->setName("for.fits");
        backedge = b_.CreateCondBr(fits, cond_bb, end_bb);
    }
    // After groups, the plain loop runs fewer than N times: not unrolled again.
    backedge->setMetadata(llvm::LLVMContext::MD_loop,
                          unroll_metadata(by_hand ? ir::Unroll::none() : op->unroll));

    enter(end_bb);
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::While *op) {
    llvm::BasicBlock *cond_bb = new_block("while.cond");
    llvm::BasicBlock *body_bb = new_block("while.body");
    llvm::BasicBlock *end_bb = new_block("while.end");
    b_.CreateBr(cond_bb);

    enter(cond_bb);
    b_.CreateCondBr(emit(op->cond), body_bb, end_bb);

    enter(body_bb);
    loops_.push_back({cond_bb, end_bb});
    llvm::Error err = emit_scoped(op->body);
    loops_.pop_back();
    if (err) return err;
    branch_if_open(cond_bb);

    enter(end_bb);
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Break *) {
    EMBER_ASSERT(!loops_.empty(), "break outside a loop in a verified kernel");
    b_.CreateBr(loops_.back().break_to);
    start_unreachable_block("after.break");
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Continue *) {
    EMBER_ASSERT(!loops_.empty(), "continue outside a loop in a verified kernel");
    b_.CreateBr(loops_.back().continue_to);
    start_unreachable_block("after.continue");
    return llvm::Error::success();
}

[[gnu::noinline]] llvm::Error CodeGenLLVM::visit(const ir::Print *op) {
    // One C format string and its arguments, promoted as C varargs are; see [Note] IR semantics
    // for how each type prints. Literal text has its '%' doubled. A bool is a %s argument: the
    // string True or False for a printf, 0 or 1 in ember's print buffer.
    std::string format;
    std::vector<llvm::Value *> args;
    std::vector<bool> is_bool;
    auto literal = [&](std::string_view text) {
        for (char c : text) format += c == '%' ? "%%" : std::string(1, c);
    };
    bool first = true;
    for (const ir::PrintItem &item : op->items) {
        if (!first) literal(op->sep);
        first = false;
        if (item.is_text()) {
            literal(item.text);
            continue;
        }
        llvm::Value *v = emit(item.value);
        const ir::Type &t = item.value.type();
        is_bool.push_back(t.is_bool());
        if (t.is_bool()) {
            format += "%s";
            args.push_back(v);
        } else if (t.is_int()) {
            const bool wide = t.bits() > 32;
            format += t.is_signed_int() ? (wide ? "%lld" : "%d") : (wide ? "%llu" : "%u");
            llvm::Type *to = wide ? b_.getInt64Ty() : b_.getInt32Ty();
            args.push_back(t.is_signed_int() ? b_.CreateSExt(v, to) : b_.CreateZExt(v, to));
        } else {
            format += "%g";
            args.push_back(b_.CreateFPExt(v, b_.getDoubleTy()));
        }
    }
    literal(op->end);
    if (target_.print_to_buffer()) {
        emit_print_to_buffer(format, args);
        return llvm::Error::success();
    }
    for (size_t i = 0; i < args.size(); ++i)
        if (is_bool[i])
            args[i] = b_.CreateSelect(args[i], b_.CreateGlobalString("True", "str.true"),
                                      b_.CreateGlobalString("False", "str.false"));
    target_.emit_printf(b_, b_.CreateGlobalString(format, "printf.format"), args);
    return llvm::Error::success();
}

void CodeGenLLVM::emit_print_to_buffer(const std::string &format, llvm::ArrayRef<llvm::Value *> args) {
    // [Note] Print buffer: reserve a record with one atomic add, write it, or count it dropped.
    namespace pb = print_buffer;
    llvm::Module &m = *b_.GetInsertBlock()->getModule();
    llvm::Function *fn = b_.GetInsertBlock()->getParent();
    const unsigned as = target_.global_address_space();
    llvm::Type *i64 = b_.getInt64Ty();
    auto *slot = m.getGlobalVariable(pb::kSymbol);
    if (!slot) {
        slot = new llvm::GlobalVariable(m, i64, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantInt::get(i64, 0), pb::kSymbol, nullptr,
                                        llvm::GlobalValue::NotThreadLocal, as);
        slot->setExternallyInitialized(true); // the runtime writes it: never folded to 0
        slot->setAlignment(llvm::Align(8));
    }
    // The record's bytes: its size and count, the format padded to 8 with its NUL, the arguments.
    const uint64_t format_bytes = (format.size() + 1 + 7) / 8 * 8;
    const uint64_t bytes = 8 + format_bytes + 8 * args.size();
    llvm::Value *base_int = b_.CreateLoad(i64, slot, "print.buffer");
    llvm::BasicBlock *reserve = llvm::BasicBlock::Create(ctx_, "print.reserve", fn);
    llvm::BasicBlock *write = llvm::BasicBlock::Create(ctx_, "print.write", fn);
    llvm::BasicBlock *drop = llvm::BasicBlock::Create(ctx_, "print.drop", fn);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "print.done", fn);
    b_.CreateCondBr(b_.CreateICmpNE(base_int, b_.getInt64(0)), reserve, done);

    b_.SetInsertPoint(reserve);
    llvm::Type *ptr = llvm::PointerType::get(ctx_, as);
    llvm::Value *base = b_.CreateIntToPtr(base_int, ptr);
    auto at = [&](llvm::Value *offset) { return b_.CreateGEP(b_.getInt8Ty(), base, offset); };
    llvm::Value *used = b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, base, b_.getInt64(bytes), llvm::Align(8),
                                           llvm::AtomicOrdering::Monotonic);
    llvm::Value *capacity = b_.CreateLoad(i64, at(b_.getInt64(8)), "print.capacity");
    llvm::Value *end = b_.CreateAdd(used, b_.getInt64(bytes));
    b_.CreateCondBr(b_.CreateICmpULE(end, capacity), write, drop);

    b_.SetInsertPoint(write);
    llvm::Value *record = b_.CreateAdd(used, b_.getInt64(pb::kHeaderBytes));
    auto store64 = [&](uint64_t offset, llvm::Value *v) {
        b_.CreateAlignedStore(v, at(b_.CreateAdd(record, b_.getInt64(offset))), llvm::Align(8));
    };
    store64(0, b_.getInt64(bytes | uint64_t(args.size()) << 32));
    for (uint64_t w = 0; w < format_bytes / 8; ++w) {
        uint64_t word = 0;
        for (uint64_t k = 0; k < 8 && w * 8 + k < format.size(); ++k)
            word |= uint64_t(static_cast<unsigned char>(format[w * 8 + k])) << (8 * k);
        store64(8 + w * 8, b_.getInt64(word));
    }
    for (size_t i = 0; i < args.size(); ++i) {
        llvm::Value *a = args[i];
        if (a->getType()->isDoubleTy()) a = b_.CreateBitCast(a, i64);
        else a = b_.CreateZExt(a, i64); // i1 and i32: the low bits are what the conversion reads
        store64(8 + format_bytes + 8 * i, a);
    }
    b_.CreateBr(done);

    b_.SetInsertPoint(drop);
    b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, at(b_.getInt64(16)), b_.getInt64(1), llvm::Align(8),
                       llvm::AtomicOrdering::Monotonic);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
}

llvm::Error CodeGenLLVM::visit(const ir::Return *op) {
    // The kernel function returns; on the CPU the body function is inlined into the thread loop,
    // so returning ends only this thread. A device function returns its value.
    if (op->value)
        b_.CreateRet(emit(op->value));
    else
        b_.CreateRetVoid();
    start_unreachable_block("after.return");
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Evaluate *op) {
    emit(op->value);
    return llvm::Error::success();
}

llvm::Error CodeGenLLVM::visit(const ir::Barrier *op) {
    facts_.uses_barrier = true;
    if (op->scope == ir::BarrierScope::Cluster) facts_.uses_cluster = true;
    return target_.emit_barrier(b_, kernel_.name, op->scope);
}

// ---------------------------------------------------------------------------------------------
// The kernel.

llvm::Expected<std::unique_ptr<llvm::Module>> CodeGenLLVM::run(const llvm::DataLayout &dl) {
    const std::string where = "kernel '" + kernel_.name + "' for target '" +
                              target_.spec().to_string() + "'";
    for (const ir::VariableRef &p : kernel_.params)
        if (p->type.is_pointer() && p->type.space() != ir::AddressSpace::Global)
            return make_compile_failure(where + ": parameter '%" + p->name + "' points to " +
                                        std::string(ir::to_string(p->type.space())) +
                                        " memory; only global pointers are supported yet");

    // The warp matrix operations the target cannot run fail the compile here, naming the first.
    {
        struct MatrixOps final : ir::IRVisitor {
            const Target &target;
            std::string problem;
            explicit MatrixOps(const Target &t) : target(t) {}
            using ir::IRVisitor::visit;
            void check(const ir::ExprNode &op, const std::string &name) {
                if (problem.empty())
                    if (std::string p = target.matrix_op_problem(op); !p.empty())
                        problem = name + ": " + p;
            }
            void visit(const ir::Mma *op) override {
                check(*op,
                      "mma." + op->shape.to_string() + "." + std::string(ir::to_string(op->input)));
                ir::IRVisitor::visit(op);
            }
            void visit(const ir::MatrixLoad *op) override {
                check(*op, "ldmatrix.x" + std::to_string(op->count) + (op->trans ? ".trans" : ""));
                ir::IRVisitor::visit(op);
            }
            bool any_async = false;
            void async_op(const ir::StmtNode &op, const std::string &name) {
                any_async = true;
                if (problem.empty())
                    if (std::string p = target.async_tensor_problem(op); !p.empty())
                        problem = name + ": " + p;
            }
            void visit(const ir::Wgmma *op) override {
                async_op(*op, "wgmma.m64n" + std::to_string(op->n) + "k16." +
                                  std::string(ir::to_string(op->input)));
                ir::IRVisitor::visit(op);
            }
            void visit(const ir::TensorSync *op) override {
                static const char *const names[] = {"wgmma.fence", "wgmma.commit", "wgmma.wait",
                                                    "fence.proxy.async"};
                async_op(*op, names[static_cast<int>(op->sync)]);
            }
            void visit(const ir::MBarrier *op) override {
                async_op(*op, "mbarrier." + std::string(ir::to_string(op->op)));
                ir::IRVisitor::visit(op);
            }
            void visit(const ir::TmaLoad *op) override {
                async_op(*op, op->multicast ? "tma_load multicast" : "tma_load");
                ir::IRVisitor::visit(op);
            }
            void visit(const ir::Barrier *op) override {
                if (op->scope == ir::BarrierScope::Cluster && problem.empty())
                    if (std::string p = target.async_tensor_problem(*op); !p.empty())
                        problem = "cluster_barrier: " + p;
            }
        } ops(target_);
        ops.visit(kernel_.body);
        for (const ir::FunctionRef &f : ir::called_functions(kernel_.body)) ops.visit(f->body);
        if (!ops.problem.empty()) return make_compile_failure(where + ": " + ops.problem);
        aligned_dynamic_shared_ = ops.any_async;
    }

    auto module = std::make_unique<llvm::Module>(kernel_.name, ctx_);
    module->setSourceFileName(kernel_.name);
    module->setTargetTriple(target_.triple());
    module->setDataLayout(dl);

    std::vector<llvm::Type *> params;
    for (const ir::VariableRef &p : kernel_.params) params.push_back(memory_type(p->type));
    const size_t num_kernel_params = params.size();
    for (llvm::Type *t : target_.implicit_params(ctx_)) params.push_back(t);
    auto *fn_ty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), params, /*isVarArg=*/false);
    const std::string fn_name = target_.body_function_name(kernel_.name);

    // Device functions first (callees before callers), each an internal function that the
    // optimiser inlines or not.
    for (const ir::FunctionRef &f : ir::called_functions(kernel_.body))
        if (llvm::Error err = define_function(*f, *module)) return err;

    function_ = llvm::Function::Create(fn_ty, llvm::GlobalValue::ExternalLinkage, fn_name, *module);
    function_->addFnAttr(llvm::Attribute::NoUnwind);
    for (unsigned i = 0; i < function_->arg_size(); ++i)
        function_->addParamAttr(i, llvm::Attribute::NoUndef);
    for (size_t i = 0; i < num_kernel_params; ++i) {
        const ir::Type &t = kernel_.params[i]->type;
        if (kernel_.params[i]->noalias) function_->addParamAttr(i, llvm::Attribute::NoAlias);
        // A read-only pointer's memory does not change while the kernel runs, through any pointer
        // (the contract of Ptr<const T>, CUDA's const __restrict__): so noalias (which speaks only
        // of memory that is modified) and readonly hold. With them NVPTX keeps ld.global.nc for
        // every load based on the parameter, also after the optimiser has split a vector load
        // whose lanes are read one by one (the scalar loads lose !invariant.load) or merged
        // scalar loads into a vector one.
        if (t.is_pointer() && t.readonly() && t.space() == ir::AddressSpace::Global) {
            function_->addParamAttr(i, llvm::Attribute::NoAlias);
            function_->addParamAttr(i, llvm::Attribute::ReadOnly);
        }
    }
    start_body();
    for (size_t i = 0; i < num_kernel_params; ++i) {
        const ir::VariableRef &p = kernel_.params[i];
        llvm::Argument *arg = function_->getArg(i);
        const std::string name = llvm_name(*p);
        arg->setName(name);
        llvm::Value *v = arg;
        if (p->type.is_bool())
            v = b_.CreateICmpNE(arg, b_.getInt8(0), name.empty() ? "" : name + ".bool");
        values_[p.get()] = v;
    }
    implicit_args_.clear();
    for (size_t i = num_kernel_params; i < function_->arg_size(); ++i) {
        function_->getArg(i)->setName("ctx");
        implicit_args_.push_back(function_->getArg(i));
    }

    if (llvm::Error err = emit(kernel_.body)) {
        discard_function();
        return err;
    }
    finish_body();

    facts_.bounds = kernel_.bounds;
    if (llvm::Error err = target_.finish_module(*module, *function_, facts_)) return err;

    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*module, &os))
        return make_compile_failure(
            where + ": ember generated invalid LLVM IR; this is a bug in ember, please report it",
            problems + "\n" + ir::print(kernel_));
    return module;
}

void CodeGenLLVM::start_body() {
    blocks_.clear();
    values_.clear();
    loops_.clear();
    math_values_.clear();
    math_values_added_.clear();
    llvm::BasicBlock *entry = new_block("entry");
    enter(entry);
    // Clang's trick: allocas go before a placeholder that is erased at the end, so they stay in
    // the entry block in creation order.
    alloca_point_ = new llvm::BitCastInst(llvm::PoisonValue::get(b_.getInt32Ty()), b_.getInt32Ty(),
                                          "allocapt", entry);
}

void CodeGenLLVM::finish_body() {
    if (!b_.GetInsertBlock()->getTerminator()) {
        // A non-void function returns on every path (verified): the open block is unreachable.
        if (function_->getReturnType()->isVoidTy())
            b_.CreateRetVoid();
        else
            b_.CreateUnreachable();
    }
    alloca_point_->eraseFromParent();
    alloca_point_ = nullptr;
}

llvm::Error CodeGenLLVM::define_function(const ir::Function &f, llvm::Module &m) {
    std::vector<llvm::Type *> params;
    for (const ir::VariableRef &p : f.params) params.push_back(value_type(p->type));
    const size_t num_params = params.size();
    for (llvm::Type *t : target_.implicit_params(ctx_)) params.push_back(t);
    auto *fn_ty = llvm::FunctionType::get(value_type(f.ret), params, /*isVarArg=*/false);
    function_ = llvm::Function::Create(fn_ty, llvm::GlobalValue::InternalLinkage, f.name, m);
    function_->addFnAttr(llvm::Attribute::NoUnwind);
    for (unsigned i = 0; i < function_->arg_size(); ++i)
        function_->addParamAttr(i, llvm::Attribute::NoUndef);
    for (size_t i = 0; i < num_params; ++i)
        if (f.params[i]->noalias) function_->addParamAttr(i, llvm::Attribute::NoAlias);
    start_body();
    for (size_t i = 0; i < num_params; ++i) {
        llvm::Argument *arg = function_->getArg(i);
        arg->setName(llvm_name(*f.params[i]));
        values_[f.params[i].get()] = arg;
    }
    implicit_args_.clear();
    for (size_t i = num_params; i < function_->arg_size(); ++i) {
        function_->getArg(i)->setName("ctx");
        implicit_args_.push_back(function_->getArg(i));
    }
    if (llvm::Error err = emit(f.body)) {
        discard_function();
        return err;
    }
    finish_body();
    functions_[&f] = function_;
    function_ = nullptr;
    return llvm::Error::success();
}

void CodeGenLLVM::discard_function() {
    std::vector<llvm::BasicBlock *> detached;
    for (llvm::BasicBlock *bb : blocks_)
        if (!bb->getParent()) detached.push_back(bb);
    function_->eraseFromParent(); // drops the branches that still name detached blocks
    function_ = nullptr;
    for (llvm::BasicBlock *bb : detached) delete bb;
    blocks_.clear();
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::Module>> lower_to_llvm(const ir::Kernel &k,
                                                            const Target &target,
                                                            const llvm::DataLayout &dl,
                                                            llvm::LLVMContext &ctx) {
    return CodeGenLLVM(k, target, ctx).run(dl);
}

} // namespace ember::detail
