/// \file
/// The CPU back end: a kernel becomes a relocatable object for the host, whose exported entry
/// runs a range of blocks, thread by thread (see [Note] CPU kernel ABI in CpuAbi.h).
#include "TargetImpl.h"

#include "../LLVMError.h"
#include "ember/compiler/CpuAbi.h"
#include "../CpuFibers.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/IR/Attributes.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>

namespace ember::detail {

std::string host_cpu_features() {
    std::vector<std::string> items;
    for (const auto &kv : llvm::sys::getHostCPUFeatures())
        items.push_back((kv.getValue() ? "+" : "-") + kv.getKey().str());
    std::sort(items.begin(), items.end()); // StringMap order is not stable across LLVM builds
    std::string out;
    for (const std::string &s : items) out += (out.empty() ? "" : ",") + s;
    return out;
}

namespace {
std::mutex host_cpu_mutex;
std::optional<HostCpu> host_cpu_override; // set_host_cpu_override
} // namespace

HostCpu host_cpu() {
    static const HostCpu host{llvm::sys::getHostCPUName().str(), host_cpu_features()};
    std::lock_guard<std::mutex> lock(host_cpu_mutex);
    return host_cpu_override ? *host_cpu_override : host;
}

void set_host_cpu_override(std::optional<HostCpu> cpu) {
    std::lock_guard<std::mutex> lock(host_cpu_mutex);
    host_cpu_override = std::move(cpu);
}

namespace {

/// Removes the x86 instructions whose float results differ from [Note] IR semantics: the native
/// f32 -> bf16 conversions (AVX512-BF16's vcvtneps2bf16, AVX-NE-CONVERT) treat subnormal inputs as
/// zero. Without them LLVM converts with exact integer arithmetic, as on every other host. And
/// AVX512-FP16: with it LLVM 19 computes a saturating f16 -> i16 cast of a vector with vcvttph2w,
/// whose NaN gives 0x8000 where the IR says 0 (found by ember-difftest on a Xeon with AVX512-FP16,
/// seed 10203); without it f16 is computed in f32, as on every other host.
std::string strict_fp_features(const std::string &triple, std::string features) {
    if (!llvm::Triple(triple).isX86()) return features;
    for (const char *f : {"-avx512bf16", "-avxneconvert", "-avx512fp16"}) {
        std::string plus = std::string("+") + (f + 1);
        size_t at = features.find(plus);
        if (at != std::string::npos && (at + plus.size() == features.size() || features[at + plus.size()] == ','))
            features.replace(at, plus.size(), f);
        else
            features += (features.empty() ? "" : ",") + std::string(f);
    }
    return features;
}

// [Note] CPU launch context
// =========================
// The body function `<kernel>.body` takes the kernel's parameters and then one `ptr %ctx` to
//     struct { i64 thread_idx[3]; i64 block_idx[3]; i64 block_dim[3]; i64 grid_dim[3];
//              ptr shared; ptr dynamic_shared; ptr fault; i64 stack_bytes; i64 shared_bytes;
//              i64 cluster_dim[3]; }
// (20 x 8 bytes: the first four registers in SpecialRegKind order, then the block's shared
// memory, its dynamic part, the launch's CpuFault record for faulting accesses, the size of the
// fiber stacks (set for kernels that run as fibers only), the bytes of the block's shared memory,
// which every shared-memory access is checked against, and the launch's cluster dimensions),
// written by `<kernel>.blocks` before each call. A kernel with cluster barriers, remote mbarrier
// arrivals or multicast copies runs the blocks of each cluster together
// (`__ember_cpu_run_cluster`), each with its own shared memory. The exported `<kernel>` runs
// `<kernel>.blocks` through __ember_cpu_enter, on the host thread's kernel stack with shared memory
// from its arena ([Note] CPU kernel memory in CpuFibers.h). The body is internal and alwaysinline:
// after inlining, SROA turns the context into plain SSA values and the per-thread calls into loops.
// Kernels with a barrier run their threads as fibers instead ([Note] CPU fibers in CpuFibers.h).
// The layout is private to this file and CpuFibers; only CpuAbi.h is an ABI.
constexpr unsigned ctx_slot(ir::SpecialRegKind reg, unsigned dim) {
    return static_cast<unsigned>(reg) * 3 + dim;
}
constexpr unsigned ctx_slots = cpu_ctx_slots;
static_assert(cpu_ctx_shared_slot == 12, "the shared base follows the 12 special registers");

static_assert(offsetof(CpuLaunch, grid_dim) == 0 && offsetof(CpuLaunch, block_dim) == 24 &&
                  offsetof(CpuLaunch, block_begin) == 48 && offsetof(CpuLaunch, block_end) == 56 &&
                  offsetof(CpuLaunch, shared_mem_bytes) == 64 && offsetof(CpuLaunch, fault) == 72 &&
                  offsetof(CpuLaunch, stack_bytes) == 80 && sizeof(CpuFault *) == 8,
              "finish_module reads CpuLaunch as 9 consecutive i64 fields, a pointer and an i64");
static_assert(cpu_ctx_fault_slot == 14, "the fault record follows the shared memory slots");
static_assert(cpu_ctx_stack_slot == 15 && cpu_ctx_shared_bytes_slot == 16 &&
                  cpu_ctx_cluster_slot == 17 && cpu_ctx_slots == 20,
              "the stack size, the shared memory's size and the cluster's dimensions come last");
static_assert(offsetof(CpuLaunch, cluster_dim) == 88,
              "finish_module reads the cluster dimensions as i64 fields 11 to 13");

/// [Note] LLVM 19's x86 back end and integer vector reductions
/// =============================================================
/// LLVM 19.1's x86 instruction selection miscompiles integer vector reductions of a vector
/// whose lanes it knows in part: `llvm.vector.reduce.add` of `and(<a, b, 5, 6>, <-1, -1, 0, 0>)`
/// (v4i16) compiles to a bare `ret`, an undefined result, and `reduce.smax` of
/// `<a & a, b & b, 0, 0>` (v4i8) to max(a, b), the zero lanes left out (`llc` alone shows both).
/// On this host's CPU (x86-64, x86-64-v2, x86-64-v3 and znver4 checked by hand too), a sweep of
/// the nine reductions over i8 to i64 vectors of 2 to 16 lanes, half the lanes cleared by an
/// `and`, found wrong results for v4i8 (smax, smin), v8i8 (or, xor), v4i16 (add, smax, smin)
/// and v16i64 (add, or, xor); the same reductions written as a tree of shuffles and vector
/// operations were wrong too, and as scalar operations on the extracted lanes right in every
/// case. ember-difftest found it on the CPU device (`reduce_max` of an i8x4 with two lanes anded
/// with 0 gave -1 where the GPU and the interpreter gave 0). So on the CPU target, after
/// optimisation (where no pass forms a vector reduction again), every integer `llvm.vector.reduce.*` becomes a balanced tree of
/// scalar operations on its lanes; integer reductions do not depend on the order. Floats are
/// reduced by ember's own tree ([Note] IR semantics) and have no `and`. The cost is an extract
/// per lane, on a reduction of one vector. test/lit/eir/cpu/integer_reductions.eir pins the form;
/// ctest difftest.cpu-replay runs the kernel that found it (it fails without this rewrite), and
/// SimdTest.ReductionsOfPartlyClearedVectors runs masked reductions on every device.
void scalar_integer_reductions(llvm::Module &m) {
    const auto found = instructions_of<llvm::IntrinsicInst>(m, [](llvm::IntrinsicInst &call) {
        switch (call.getIntrinsicID()) {
        case llvm::Intrinsic::vector_reduce_add:
        case llvm::Intrinsic::vector_reduce_mul:
        case llvm::Intrinsic::vector_reduce_and:
        case llvm::Intrinsic::vector_reduce_or:
        case llvm::Intrinsic::vector_reduce_xor:
        case llvm::Intrinsic::vector_reduce_smax:
        case llvm::Intrinsic::vector_reduce_smin:
        case llvm::Intrinsic::vector_reduce_umax:
        case llvm::Intrinsic::vector_reduce_umin: return true;
        default: return false;
        }
    });
    for (llvm::IntrinsicInst *call : found) {
        auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(call->getArgOperand(0)->getType());
        if (!vt) continue;
        llvm::IRBuilder<> b(call);
        const llvm::Intrinsic::ID id = call->getIntrinsicID();
        auto combine = [&](llvm::Value *x, llvm::Value *y) -> llvm::Value * {
            switch (id) {
            case llvm::Intrinsic::vector_reduce_add: return b.CreateAdd(x, y);
            case llvm::Intrinsic::vector_reduce_mul: return b.CreateMul(x, y);
            case llvm::Intrinsic::vector_reduce_and: return b.CreateAnd(x, y);
            case llvm::Intrinsic::vector_reduce_or: return b.CreateOr(x, y);
            case llvm::Intrinsic::vector_reduce_xor: return b.CreateXor(x, y);
            case llvm::Intrinsic::vector_reduce_smax: return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
            case llvm::Intrinsic::vector_reduce_smin: return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
            case llvm::Intrinsic::vector_reduce_umax: return b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, x, y);
            default: return b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, x, y);
            }
        };
        std::vector<llvm::Value *> lanes;
        for (unsigned lane = 0; lane < vt->getNumElements(); ++lane)
            lanes.push_back(b.CreateExtractElement(call->getArgOperand(0), uint64_t(lane)));
        while (lanes.size() > 1) { // pairs, then pairs of pairs
            std::vector<llvm::Value *> next;
            for (size_t i = 0; i + 1 < lanes.size(); i += 2) next.push_back(combine(lanes[i], lanes[i + 1]));
            if (lanes.size() % 2) next.push_back(lanes.back());
            lanes = std::move(next);
        }
        lanes[0]->takeName(call);
        call->replaceAllUsesWith(lanes[0]);
        llvm::Function *callee = call->getCalledFunction();
        call->eraseFromParent();
        if (callee->use_empty()) callee->eraseFromParent();
    }
}

class CPUTarget final : public Target {
public:
    CPUTarget(const TargetSpec &spec, const HostCpu &host)
        : Target(spec), triple_(llvm::sys::getProcessTriple()), cpu_(spec.cpu.empty() ? host.name : spec.cpu),
          features_(strict_fp_features(triple_, spec.cpu.empty() && spec.features.empty() ? host.features
                                                                                          : spec.features)) {}

    std::string triple() const override { return triple_; }
    std::string llvm_cpu() const override { return cpu_; }
    std::string llvm_features() const override { return features_; }

    std::string body_function_name(std::string_view kernel) const override {
        return std::string(kernel) + ".body";
    }

    std::vector<llvm::Type *> implicit_params(llvm::LLVMContext &ctx) const override {
        return {llvm::PointerType::get(ctx, 0)};
    }

    std::string constant_symbol(std::string_view name) const override { return cpu_constant_symbol(name); }

    llvm::Value *emit_special_reg(llvm::IRBuilderBase &b, ir::SpecialRegKind reg,
                                  unsigned dim) const override {
        EMBER_ASSERT(dim < 3, "special register dimension out of range");
        llvm::Function *f = b.GetInsertBlock()->getParent();
        llvm::Value *ctx = f->getArg(f->arg_size() - 1);
        const unsigned at = reg == ir::SpecialRegKind::ClusterDim ? cpu_ctx_cluster_slot + dim
                                                                  : ctx_slot(reg, dim);
        llvm::Value *slot = b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), ctx, at);
        llvm::LoadInst *value = b.CreateAlignedLoad(b.getInt64Ty(), slot, llvm::Align(8));
        // Indices are >= 0 and dimensions >= 1 ([Note] IR semantics).
        const bool is_dim = reg == ir::SpecialRegKind::BlockDim ||
                            reg == ir::SpecialRegKind::GridDim ||
                            reg == ir::SpecialRegKind::ClusterDim;
        llvm::MDBuilder md(b.getContext());
        value->setMetadata(llvm::LLVMContext::MD_range,
                           md.createRange(llvm::APInt(64, is_dim ? 1 : 0),
                                          llvm::APInt::getSignedMinValue(64)));
        return value;
    }

    /// A call into the fiber runtime, which switches to the block's (the cluster's) next thread.
    llvm::Error emit_barrier(llvm::IRBuilderBase &b, std::string_view,
                             ir::BarrierScope scope) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        b.CreateCall(m.getOrInsertFunction(scope == ir::BarrierScope::Cluster
                                               ? "__ember_cpu_cluster_barrier"
                                               : "__ember_cpu_barrier",
                                           llvm::FunctionType::get(b.getVoidTy(), false)));
        return llvm::Error::success();
    }

    /// A call into the fiber runtime, which meets the warp's other lanes ([Note] CPU fibers).
    llvm::Value *emit_warp(llvm::IRBuilderBase &b, ir::WarpOp op, llvm::Value *value,
                           llvm::Value *lane) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_warp",
            llvm::FunctionType::get(b.getInt64Ty(), {b.getInt32Ty(), b.getInt64Ty(), b.getInt32Ty()}, false));
        llvm::Type *ty = value->getType();
        llvm::Value *bits = b.CreateZExt(value, b.getInt64Ty());
        llvm::Value *r = b.CreateCall(fn, {b.getInt32(static_cast<int32_t>(op)), bits,
                                           lane ? lane : b.getInt32(0)});
        if (op == ir::WarpOp::Ballot) return b.CreateTrunc(r, b.getInt32Ty());
        if (op == ir::WarpOp::WaveBallot) return r; // the wave is the warp: bits 32-63 are 0
        return b.CreateTrunc(r, ty);
    }

    /// Memory in the entry block for one fragment, holding `v` when given.
    static llvm::Value *fragment_slot(llvm::IRBuilderBase &b, llvm::Type *ty, llvm::Value *v) {
        llvm::Function *f = b.GetInsertBlock()->getParent();
        llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
        llvm::AllocaInst *slot = entry.CreateAlloca(ty, nullptr, "fragment");
        slot->setAlignment(llvm::Align(16));
        if (v) b.CreateAlignedStore(v, slot, llvm::Align(16));
        return slot;
    }

    /// `__ember_cpu_mma(input, k, c_is_f16, a, b, c, d)`: the lanes meet in the fiber runtime,
    /// which computes each lane's part of D from every lane's fragments ([Note] CPU fibers).
    llvm::Value *emit_mma(llvm::IRBuilderBase &b, const ir::Mma &op, llvm::Value *a,
                          llvm::Value *bv, llvm::Value *c) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Type *i32 = b.getInt32Ty(), *ptr = b.getPtrTy();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_mma",
            llvm::FunctionType::get(b.getVoidTy(), {i32, i32, i32, ptr, ptr, ptr, ptr}, false));
        llvm::Value *d = fragment_slot(b, c->getType(), nullptr);
        b.CreateCall(fn, {b.getInt32(static_cast<int32_t>(op.input)), b.getInt32(op.shape.k),
                          b.getInt32(c->getType()->getScalarType()->isHalfTy()),
                          fragment_slot(b, a->getType(), a), fragment_slot(b, bv->getType(), bv),
                          fragment_slot(b, c->getType(), c), d});
        return b.CreateAlignedLoad(c->getType(), d, llvm::Align(16));
    }

    /// Hopper's asynchronous tensor operations run in the CPU device's runtime, at once.
    std::string async_tensor_problem(const ir::StmtNode &) const override { return ""; }

    /// The kernel's launch context (the last parameter of the thread function).
    static llvm::Value *context(llvm::IRBuilderBase &b) {
        llvm::Function *f = b.GetInsertBlock()->getParent();
        return f->getArg(f->arg_size() - 1);
    }

    /// `__ember_cpu_wgmma(input, n, a, b, b_mn_stride, acc, ctx)`: this thread's accumulators
    /// (n / 2 floats in memory) updated from A and B in shared memory.
    void emit_wgmma(llvm::IRBuilderBase &b, const ir::Wgmma &op, llvm::Value *a, llvm::Value *bv,
                    std::vector<llvm::Value *> &acc) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Type *i32 = b.getInt32Ty(), *ptr = b.getPtrTy();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_wgmma",
            llvm::FunctionType::get(b.getVoidTy(), {i32, i32, ptr, ptr, i32, ptr, ptr}, false));
        llvm::Type *f32x4 = llvm::FixedVectorType::get(b.getFloatTy(), 4);
        llvm::Value *slot = fragment_slot(b, llvm::ArrayType::get(f32x4, acc.size()), nullptr);
        for (size_t t = 0; t < acc.size(); ++t)
            b.CreateAlignedStore(acc[t], b.CreateConstInBoundsGEP1_64(f32x4, slot, t),
                                 llvm::Align(16));
        b.CreateCall(fn, {b.getInt32(static_cast<int32_t>(op.input)), b.getInt32(op.n), a, bv,
                          b.getInt32(static_cast<int32_t>(op.b_mn_stride)), slot, context(b)});
        for (size_t t = 0; t < acc.size(); ++t)
            acc[t] = b.CreateAlignedLoad(f32x4, b.CreateConstInBoundsGEP1_64(f32x4, slot, t),
                                         llvm::Align(16));
    }

    /// Nothing to order: every wgmma and copy has completed when it returns.
    void emit_tensor_sync(llvm::IRBuilderBase &, const ir::TensorSync &,
                          std::vector<llvm::Value *> &) const override {}

    /// `__ember_cpu_mbarrier(op, bar, value, ctx)`; a wait switches fibers until the phase
    /// completes ([Note] CPU fibers).
    void emit_mbarrier(llvm::IRBuilderBase &b, ir::MBarrierOp op, llvm::Value *bar,
                       llvm::Value *value) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Type *i32 = b.getInt32Ty(), *ptr = b.getPtrTy();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_mbarrier",
            llvm::FunctionType::get(b.getVoidTy(), {i32, ptr, i32, ptr}, false));
        b.CreateCall(fn, {b.getInt32(static_cast<int32_t>(op)), bar, value ? value : b.getInt32(0),
                          context(b)});
    }

    /// `__ember_cpu_tma_load(dst, map, x, y, bar, multicast, ctx)`: the box copied at once (to
    /// the blocks of the mask, -1 for none).
    void emit_tma_load(llvm::IRBuilderBase &b, llvm::Value *dst, llvm::Value *map, llvm::Value *x,
                       llvm::Value *y, llvm::Value *bar, llvm::Value *multicast) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Type *i32 = b.getInt32Ty(), *ptr = b.getPtrTy();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_tma_load",
            llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i32, i32, ptr, i32, ptr}, false));
        llvm::Value *mask = multicast ? b.CreateZExt(multicast, i32) : b.getInt32(-1);
        b.CreateCall(fn, {dst, map, x, y, bar, mask, context(b)});
    }

    /// `__ember_cpu_ldmatrix(count, trans, row, out)`: the lanes meet in the fiber runtime, which
    /// checks every row address used against the block's shared memory and its alignment.
    llvm::Value *emit_matrix_load(llvm::IRBuilderBase &b, const ir::MatrixLoad &op,
                                  llvm::Value *row) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Type *i32 = b.getInt32Ty(), *ptr = b.getPtrTy();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_ldmatrix",
            llvm::FunctionType::get(b.getVoidTy(), {i32, i32, ptr, ptr}, false));
        llvm::Type *elem = op.type.element() == ir::ScalarType::F16 ? b.getHalfTy()
                           : op.type.element() == ir::ScalarType::BF16
                               ? b.getBFloatTy()
                               : static_cast<llvm::Type *>(b.getInt16Ty());
        llvm::Type *ty = llvm::FixedVectorType::get(elem, 2 * op.count);
        llvm::Value *out = fragment_slot(b, ty, nullptr);
        b.CreateCall(fn, {b.getInt32(op.count), b.getInt32(op.trans), row, out});
        return b.CreateAlignedLoad(ty, out, llvm::Align(16));
    }

    /// The block's shared memory base (a context slot) plus the array's offset.
    llvm::Value *emit_shared_array(llvm::IRBuilderBase &b, llvm::Type *, uint64_t, uint64_t offset,
                                   const llvm::Twine &name) const override {
        llvm::Function *f = b.GetInsertBlock()->getParent();
        llvm::Value *ctx = f->getArg(f->arg_size() - 1);
        llvm::Value *slot = b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), ctx, cpu_ctx_shared_slot);
        llvm::Value *base = b.CreateAlignedLoad(b.getPtrTy(), slot, llvm::Align(8), "shared.base");
        return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), base, offset, name);
    }

    /// The threads of one block run on one host thread (as loop iterations or fibers), so a block
    /// fence only has to keep the compiler from reordering; wider fences are real ones.
    /// The C library's fmod/fmodf, called with `nobuiltin`: x86 has no remainder instruction,
    /// so LLVM's frem becomes the same call, but LLVM 19's InstCombine narrows `fptrunc (frem
    /// (fpext half), (fpext half)) to bfloat` into an f16 frem whose result it converts to bf16
    /// with a bitcast (7 % 4 gave bf16 32 instead of 3). An opaque call is not narrowed. f16 and
    /// bf16 go through f32, which holds their remainder exactly.
    llvm::Value *emit_frem(llvm::IRBuilderBase &b, llvm::Value *x, llvm::Value *y) const override {
        llvm::Type *ty = x->getType();
        const bool wide = ty->isDoubleTy();
        llvm::Type *op_ty = wide ? ty : b.getFloatTy();
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::FunctionCallee fmod =
            m.getOrInsertFunction(wide ? "fmod" : "fmodf", llvm::FunctionType::get(op_ty, {op_ty, op_ty}, false));
        if (!wide && !ty->isFloatTy()) {
            x = b.CreateFPExt(x, op_ty);
            y = b.CreateFPExt(y, op_ty);
        }
        llvm::CallInst *r = b.CreateCall(fmod, {x, y}, "fmod");
        r->addFnAttr(llvm::Attribute::NoBuiltin);
        r->addFnAttr(llvm::Attribute::NoUnwind);
        r->addFnAttr(llvm::Attribute::WillReturn);
        if (op_ty == ty) return r;
        return b.CreateFPTrunc(r, ty);
    }

    void emit_fence(llvm::IRBuilderBase &b, ir::FenceScope scope) const override {
        b.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent,
                      scope == ir::FenceScope::Block ? llvm::SyncScope::SingleThread : llvm::SyncScope::System);
    }

    /// The block's dynamic shared memory, from its context slot.
    llvm::Value *emit_dynamic_shared(llvm::IRBuilderBase &b, const llvm::Twine &name) const override {
        llvm::Function *f = b.GetInsertBlock()->getParent();
        llvm::Value *ctx = f->getArg(f->arg_size() - 1);
        llvm::Value *slot = b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), ctx, cpu_ctx_dynamic_shared_slot);
        return b.CreateAlignedLoad(b.getPtrTy(), slot, llvm::Align(8), name);
    }

    /// [Note] CPU kernel memory: an access of `bytes` at `addr` must lie in the block's shared
    /// memory [shared, shared + shared_bytes) (context slots). Outside it,
    /// `__ember_cpu_shared_fault(fault, offset, bytes, shared_bytes, is_store, thread_idx.xyz,
    /// block_idx.xyz)` records the fault and returns a scratch location the access uses instead.
    llvm::Value *emit_shared_access_check(llvm::IRBuilderBase &b, llvm::Value *addr, unsigned bytes,
                                          bool is_store) const override {
        llvm::LLVMContext &c = b.getContext();
        llvm::Type *i64 = b.getInt64Ty(), *i32 = b.getInt32Ty();
        llvm::Function *f = b.GetInsertBlock()->getParent();
        llvm::Value *ctx = f->getArg(f->arg_size() - 1);
        llvm::Value *base = b.CreateAlignedLoad(
            b.getPtrTy(), b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_shared_slot), llvm::Align(8), "shared.base");
        llvm::Value *size = b.CreateAlignedLoad(
            i64, b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_shared_bytes_slot), llvm::Align(8), "shared.bytes");
        llvm::Value *addr_int = b.CreatePtrToInt(addr, i64);
        llvm::Value *base_int = b.CreatePtrToInt(base, i64);
        llvm::Value *offset = b.CreateSub(addr_int, base_int, "shared.offset");
        // offset < size first (a negative offset is a huge unsigned one), so offset + bytes
        // cannot wrap in the second comparison.
        llvm::Value *inside = b.CreateAnd(b.CreateICmpULT(offset, size),
                                          b.CreateICmpULE(b.CreateAdd(offset, b.getInt64(bytes)), size), "shared.inside");
        llvm::BasicBlock *from = b.GetInsertBlock();
        llvm::BasicBlock *bad = llvm::BasicBlock::Create(c, "shared.outside", f);
        llvm::BasicBlock *ok = llvm::BasicBlock::Create(c, "shared.access", f);
        b.CreateCondBr(inside, ok, bad, llvm::MDBuilder(c).createLikelyBranchWeights());
        b.SetInsertPoint(bad);
        llvm::Module &m = *f->getParent();
        llvm::FunctionCallee report = m.getOrInsertFunction(
            "__ember_cpu_shared_fault",
            llvm::FunctionType::get(b.getPtrTy(), {b.getPtrTy(), i64, i32, i64, i32, i64, i64, i64, i64, i64, i64},
                                    false));
        llvm::Value *fault = b.CreateAlignedLoad(
            b.getPtrTy(), b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_fault_slot), llvm::Align(8), "fault");
        std::vector<llvm::Value *> args{fault, offset, b.getInt32(bytes), size, b.getInt32(is_store)};
        for (ir::SpecialRegKind reg : {ir::SpecialRegKind::ThreadIdx, ir::SpecialRegKind::BlockIdx})
            for (unsigned d = 0; d < 3; ++d) args.push_back(emit_special_reg(b, reg, d));
        llvm::CallInst *scratch = b.CreateCall(report, args, "shared.scratch");
        scratch->addFnAttr(llvm::Attribute::Cold);
        scratch->addFnAttr(llvm::Attribute::NoUnwind);
        b.CreateBr(ok);
        b.SetInsertPoint(ok);
        llvm::PHINode *where = b.CreatePHI(b.getPtrTy(), 2, "shared.addr");
        where->addIncoming(addr, from);
        where->addIncoming(scratch, bad);
        return where;
    }

    /// `__ember_cpu_misaligned(fault, address, alignment, bytes, is_store, thread_idx.xyz,
    /// block_idx.xyz)`: records the fault in the launch's CpuFault (a context slot) for the
    /// runtime's LaunchError. Values, not the context, are passed, so that it stays promotable.
    void emit_misaligned_access(llvm::IRBuilderBase &b, llvm::Value *addr, unsigned align, unsigned bytes,
                                bool is_store) const override {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::Type *i64 = b.getInt64Ty(), *i32 = b.getInt32Ty();
        llvm::FunctionCallee fn = m.getOrInsertFunction(
            "__ember_cpu_misaligned",
            llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), i64, i32, i32, i32, i64, i64, i64, i64, i64, i64},
                                    false));
        llvm::Function *f = b.GetInsertBlock()->getParent();
        llvm::Value *ctx = f->getArg(f->arg_size() - 1);
        llvm::Value *slot = b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_fault_slot);
        llvm::Value *fault = b.CreateAlignedLoad(b.getPtrTy(), slot, llvm::Align(8), "fault");
        std::vector<llvm::Value *> args{fault, b.CreatePtrToInt(addr, i64), b.getInt32(align), b.getInt32(bytes),
                                        b.getInt32(is_store)};
        for (ir::SpecialRegKind reg : {ir::SpecialRegKind::ThreadIdx, ir::SpecialRegKind::BlockIdx})
            for (unsigned d = 0; d < 3; ++d) args.push_back(emit_special_reg(b, reg, d));
        llvm::CallInst *call = b.CreateCall(fn, args);
        call->addFnAttr(llvm::Attribute::Cold);
        call->addFnAttr(llvm::Attribute::NoUnwind);
    }

    llvm::Error finish_module(llvm::Module &m, llvm::Function &body, const KernelFacts &facts) const override;

    void prepare_codegen(llvm::Module &m) const override { scalar_integer_reductions(m); }

    llvm::CodeGenFileType binary_file_type() const override {
        return llvm::CodeGenFileType::ObjectFile;
    }

private:
    std::string triple_, cpu_, features_;
};

/// The kernel stacks and fiber stacks are as big as the kernel's local arrays need ([Note] CPU
/// kernel memory); should a frame still not fit, probing it page by page faults on the stack's
/// guard page instead of skipping over it into other memory. (Inline probes exist on x86-64 and
/// AArch64; elsewhere the value would name a function.)
void probe_stacks(llvm::Module &m, const std::string &triple) {
    const llvm::Triple host(triple);
    if (host.getArch() == llvm::Triple::x86_64 || host.getArch() == llvm::Triple::aarch64)
        for (llvm::Function &f : m)
            if (!f.isDeclaration()) f.addFnAttr("probe-stack", "inline-asm");
}

llvm::Error CPUTarget::finish_module(llvm::Module &m, llvm::Function &body, const KernelFacts &facts) const {
    using namespace llvm;
    LLVMContext &c = m.getContext();
    const DataLayout &dl = m.getDataLayout();
    Type *i64 = Type::getInt64Ty(c);
    PointerType *ptr = PointerType::get(c, 0);

    StringRef body_name = body.getName();
    EMBER_ASSERT(body_name.ends_with(".body"), "CPU body function is not named <kernel>.body");
    const std::string kernel = body_name.drop_back(5).str();

    body.setLinkage(GlobalValue::InternalLinkage);
    body.removeFnAttr(Attribute::NoInline);
    body.addFnAttr(Attribute::AlwaysInline);
    const unsigned ctx_arg = body.arg_size() - 1;
    body.addParamAttr(ctx_arg, Attribute::NoAlias);
    body.addParamAttr(ctx_arg, Attribute::NoCapture);
    body.addParamAttr(ctx_arg, Attribute::ReadOnly);

    // void <kernel>(ptr %args, ptr %launch); see [Note] CPU kernel ABI. It runs
    // <kernel>.blocks(%args, %launch, %shared) on the host thread's kernel stack, with the block's
    // shared memory from its arena ([Note] CPU kernel memory in CpuFibers.h).
    FunctionType *exported_ty = FunctionType::get(Type::getVoidTy(c), {ptr, ptr}, false);
    Function *exported = Function::Create(exported_ty, GlobalValue::ExternalLinkage, kernel, m);
    if (exported->getName() != kernel)
        return make_compile_failure("kernel '" + kernel +
                                    "': its entry symbol clashes with another function");
    FunctionType *entry_ty = FunctionType::get(Type::getVoidTy(c), {ptr, ptr, ptr}, false);
    Function *entry = Function::Create(entry_ty, GlobalValue::InternalLinkage, kernel + ".blocks", m);
    for (Function *f : {exported, entry}) {
        f->addFnAttr(Attribute::NoUnwind);
        for (unsigned i = 0; i < 2; ++i) {
            f->getArg(i)->setName(i == 0 ? "args" : "launch");
            f->addParamAttr(i, Attribute::NoUndef);
            f->addParamAttr(i, Attribute::NoCapture);
            f->addParamAttr(i, Attribute::ReadOnly);
        }
    }
    Argument *args = entry->getArg(0);
    Argument *launch = entry->getArg(1);
    Argument *shared = entry->getArg(2);
    shared->setName("shared");
    const bool uses_shared = facts.static_shared_bytes > 0 || facts.uses_dynamic_shared;
    // The static arrays, then the launch's dynamic shared memory at the next 16-byte boundary.
    const uint64_t dynamic_at = (facts.static_shared_bytes + 15) / 16 * 16;
    auto shared_bytes = [&](IRBuilder<> &ib, Value *from) -> Value * {
        if (!uses_shared) return ib.getInt64(0);
        Value *dynamic_bytes = ib.CreateAlignedLoad(i64, ib.CreateConstInBoundsGEP1_64(i64, from, 8), Align(8),
                                                    "shared_mem_bytes");
        return ib.CreateAdd(ib.getInt64(dynamic_at), dynamic_bytes, "shared.bytes");
    };
    // The launch's cluster dimensions, 1 for 0 (no clusters).
    auto cluster_dims = [&](IRBuilder<> &ib, Value *from, std::array<Value *, 3> &dims) {
        for (unsigned d = 0; d < 3; ++d) {
            Value *v = ib.CreateAlignedLoad(i64, ib.CreateConstInBoundsGEP1_64(i64, from, 11 + d),
                                            Align(8), "cluster_dim." + Twine("xyz"[d]));
            dims[d] = ib.CreateSelect(ib.CreateICmpSLT(v, ib.getInt64(1)), ib.getInt64(1), v);
        }
        return ib.CreateMul(ib.CreateMul(dims[0], dims[1]), dims[2], "cluster.blocks");
    };
    // A kernel that runs a cluster's blocks together gives each its own shared memory, 128
    // bytes apart at least.
    const bool clustered = facts.uses_cluster;
    auto shared_stride = [&](IRBuilder<> &ib, Value *bytes) {
        return ib.CreateAnd(ib.CreateAdd(bytes, ib.getInt64(127)), ib.getInt64(~int64_t(127)),
                            "shared.stride");
    };
    {
        IRBuilder<> eb(BasicBlock::Create(c, "entry", exported));
        FunctionCallee enter = m.getOrInsertFunction(
            "__ember_cpu_enter", FunctionType::get(Type::getVoidTy(c), {ptr, ptr, ptr, i64}, false));
        Value *bytes = shared_bytes(eb, exported->getArg(1));
        if (clustered && uses_shared) {
            std::array<Value *, 3> dims{};
            bytes = eb.CreateMul(shared_stride(eb, bytes),
                                 cluster_dims(eb, exported->getArg(1), dims));
        }
        eb.CreateCall(enter, {entry, exported->getArg(0), exported->getArg(1), bytes});
        eb.CreateRetVoid();
    }

    BasicBlock *bb_entry = BasicBlock::Create(c, "entry", entry);
    BasicBlock *bb_block = BasicBlock::Create(c, "block", entry);
    BasicBlock *bb_tz = BasicBlock::Create(c, "thread.z", entry);
    BasicBlock *bb_ty = BasicBlock::Create(c, "thread.y", entry);
    BasicBlock *bb_tx = BasicBlock::Create(c, "thread.x", entry);
    BasicBlock *bb_ty_latch = BasicBlock::Create(c, "thread.y.latch", entry);
    BasicBlock *bb_tz_latch = BasicBlock::Create(c, "thread.z.latch", entry);
    BasicBlock *bb_block_latch = BasicBlock::Create(c, "block.latch", entry);
    BasicBlock *bb_exit = BasicBlock::Create(c, "exit", entry);
    IRBuilder<> b(bb_entry);

    // Parameters: args[i] points to parameter i in the type the body takes it in.
    auto load_params = [&](IRBuilder<> &ib, Value *from) {
        std::vector<Value *> values;
        for (unsigned i = 0; i < ctx_arg; ++i) {
            Type *ty = body.getArg(i)->getType();
            Value *slot = ib.CreateAlignedLoad(ptr, ib.CreateConstInBoundsGEP1_64(ptr, from, i),
                                               Align(8), "arg" + Twine(i) + ".addr");
            values.push_back(ib.CreateAlignedLoad(ty, slot, dl.getABITypeAlign(ty),
                                                  body.getArg(i)->getName()));
        }
        return values;
    };
    const bool fibers = facts.uses_barrier || facts.uses_warp_ops || clustered;
    std::vector<Value *> call_args;
    if (!fibers) call_args = load_params(b, args);

    auto launch_field = [&](unsigned index, const Twine &name) {
        return b.CreateAlignedLoad(i64, b.CreateConstInBoundsGEP1_64(i64, launch, index), Align(8),
                                   name);
    };
    Value *grid[3], *block[3];
    for (unsigned d = 0; d < 3; ++d) grid[d] = launch_field(d, "grid_dim." + Twine("xyz"[d]));
    for (unsigned d = 0; d < 3; ++d) block[d] = launch_field(3 + d, "block_dim." + Twine("xyz"[d]));
    Value *begin = launch_field(6, "block_begin");
    Value *end = launch_field(7, "block_end");
    Value *fault = b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(i64, launch, 9), Align(8), "fault");

    Value *ctx = b.CreateAlloca(ArrayType::get(i64, ctx_slots), nullptr, "ctx");
    auto store_ctx = [&](ir::SpecialRegKind reg, unsigned dim, Value *v) {
        b.CreateAlignedStore(v, b.CreateConstInBoundsGEP1_64(i64, ctx, ctx_slot(reg, dim)),
                             Align(8));
    };
    for (unsigned d = 0; d < 3; ++d) {
        store_ctx(ir::SpecialRegKind::BlockDim, d, block[d]);
        store_ctx(ir::SpecialRegKind::GridDim, d, grid[d]);
    }
    std::array<Value *, 3> cluster{};
    Value *cluster_blocks = cluster_dims(b, launch, cluster);
    for (unsigned d = 0; d < 3; ++d)
        b.CreateAlignedStore(
            cluster[d], b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_cluster_slot + d), Align(8));
    b.CreateAlignedStore(fault, b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_fault_slot), Align(8));
    // One block at a time runs in this call, so one piece of shared memory serves them all (its
    // contents are undefined at the start of a block, as on GPUs). Without shared memory the
    // base is null and the size 0, so that any access through a shared pointer is reported.
    b.CreateAlignedStore(uses_shared ? static_cast<Value *>(shared) : ConstantPointerNull::get(ptr),
                         b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_shared_slot), Align(8));
    b.CreateAlignedStore(uses_shared ? b.CreateConstInBoundsGEP1_64(Type::getInt8Ty(c), shared, dynamic_at)
                                     : static_cast<Value *>(ConstantPointerNull::get(ptr)),
                         b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_dynamic_shared_slot), Align(8));
    Value *block_shared_bytes = shared_bytes(b, launch);
    b.CreateAlignedStore(block_shared_bytes,
                         b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_shared_bytes_slot),
                         Align(8));
    call_args.push_back(ctx);
    b.CreateCondBr(b.CreateICmpSLT(begin, end), bb_block, bb_exit);

    // Blocks: linear index -> (x, y, z), x fastest. Dimensions are >= 1 (the runtime checks).
    b.SetInsertPoint(bb_block);
    PHINode *linear = b.CreatePHI(i64, 2, "block.linear");
    linear->addIncoming(begin, bb_entry);
    // The block loop's latch and the exit, shared by both ways of running a block's threads.
    auto close_blocks = [&] {
        b.SetInsertPoint(bb_block_latch);
        Value *next_block = b.CreateAdd(linear, clustered ? cluster_blocks : b.getInt64(1), "",
                                        /*HasNUW=*/false,
                                        /*HasNSW=*/true);
        linear->addIncoming(next_block, bb_block_latch);
        b.CreateCondBr(b.CreateICmpSLT(next_block, end), bb_block, bb_exit);
        b.SetInsertPoint(bb_exit);
        b.CreateRetVoid();
    };
    if (clustered) {
        // Cluster by cluster (CpuLaunch::cluster_dim): the linear index is the cluster's times its
        // size plus the block's place in it, so a cluster's blocks are consecutive.
        Value *clusters_x = b.CreateUDiv(grid[0], cluster[0], "clusters.x");
        Value *clusters_y = b.CreateUDiv(grid[1], cluster[1], "clusters.y");
        Value *cluster_linear = b.CreateUDiv(linear, cluster_blocks, "cluster.linear");
        Value *in_cluster = b.CreateURem(linear, cluster_blocks, "in_cluster");
        Value *cluster_rest = b.CreateUDiv(cluster_linear, clusters_x);
        Value *in_rest = b.CreateUDiv(in_cluster, cluster[0]);
        Value *at[3] = {b.CreateURem(cluster_linear, clusters_x),
                        b.CreateURem(cluster_rest, clusters_y),
                        b.CreateUDiv(cluster_rest, clusters_y)};
        Value *within[3] = {b.CreateURem(in_cluster, cluster[0]), b.CreateURem(in_rest, cluster[1]),
                            b.CreateUDiv(in_rest, cluster[1])};
        for (unsigned d = 0; d < 3; ++d)
            store_ctx(ir::SpecialRegKind::BlockIdx, d,
                      b.CreateAdd(b.CreateMul(at[d], cluster[d]), within[d],
                                  "block_idx." + Twine("xyz"[d])));
    } else {
        // Blocks in any order do (the pool's ranges are whole clusters all the same): x fastest.
        Value *rest = b.CreateUDiv(linear, grid[0]);
        store_ctx(ir::SpecialRegKind::BlockIdx, 0, b.CreateURem(linear, grid[0], "block_idx.x"));
        store_ctx(ir::SpecialRegKind::BlockIdx, 1, b.CreateURem(rest, grid[1], "block_idx.y"));
        store_ctx(ir::SpecialRegKind::BlockIdx, 2, b.CreateUDiv(rest, grid[1], "block_idx.z"));
    }
    if (fibers) {
        // [Note] CPU fibers: `<kernel>.thread(args, ctx)` runs one GPU thread; the runtime runs
        // all of the block's threads as fibers that switch at barriers.
        FunctionType *thread_ty = FunctionType::get(Type::getVoidTy(c), {ptr, ptr}, false);
        Function *thread = Function::Create(thread_ty, GlobalValue::InternalLinkage, kernel + ".thread", m);
        thread->addFnAttr(Attribute::NoUnwind);
        IRBuilder<> tb(BasicBlock::Create(c, "entry", thread));
        std::vector<Value *> thread_args = load_params(tb, thread->getArg(0));
        thread_args.push_back(thread->getArg(1));
        tb.CreateCall(&body, thread_args);
        tb.CreateRetVoid();
        b.CreateAlignedStore(b.CreateAlignedLoad(i64, b.CreateConstInBoundsGEP1_64(i64, launch, 10), Align(8),
                                                 "stack_bytes"),
                             b.CreateConstInBoundsGEP1_64(i64, ctx, cpu_ctx_stack_slot), Align(8));
        if (clustered) {
            // The cluster's blocks together (this is its first block).
            FunctionCallee run_cluster = m.getOrInsertFunction(
                "__ember_cpu_run_cluster",
                FunctionType::get(Type::getVoidTy(c), {ptr, ptr, ptr, i64}, false));
            b.CreateCall(run_cluster, {thread, args, ctx, shared_stride(b, block_shared_bytes)});
        } else {
            FunctionCallee run_block = m.getOrInsertFunction(
                "__ember_cpu_run_block",
                FunctionType::get(Type::getVoidTy(c), {ptr, ptr, ptr}, false));
            b.CreateCall(run_block, {thread, args, ctx});
        }
        b.CreateBr(bb_block_latch);
        for (BasicBlock *unused : {bb_tz, bb_ty, bb_tx, bb_ty_latch, bb_tz_latch}) unused->eraseFromParent();
        close_blocks();
        probe_stacks(m, triple_);
        return llvm::Error::success();
    }
    b.CreateBr(bb_tz);

    // Threads: do-while loops over z, y, x (x innermost); block_dim >= 1.
    auto open_loop = [&](BasicBlock *bb, BasicBlock *from, unsigned dim) {
        b.SetInsertPoint(bb);
        PHINode *idx = b.CreatePHI(i64, 2, "thread_idx." + Twine("xyz"[dim]));
        idx->addIncoming(b.getInt64(0), from);
        store_ctx(ir::SpecialRegKind::ThreadIdx, dim, idx);
        return idx;
    };
    auto close_loop = [&](PHINode *idx, unsigned dim, BasicBlock *header, BasicBlock *after) {
        Value *next = b.CreateAdd(idx, b.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
        idx->addIncoming(next, b.GetInsertBlock());
        b.CreateCondBr(b.CreateICmpSLT(next, block[dim]), header, after);
    };
    PHINode *tz = open_loop(bb_tz, bb_block, 2);
    b.CreateBr(bb_ty);
    PHINode *ty = open_loop(bb_ty, bb_tz, 1);
    b.CreateBr(bb_tx);
    PHINode *tx = open_loop(bb_tx, bb_ty, 0);
    b.CreateCall(&body, call_args);
    close_loop(tx, 0, bb_tx, bb_ty_latch);
    b.SetInsertPoint(bb_ty_latch);
    close_loop(ty, 1, bb_ty, bb_tz_latch);
    b.SetInsertPoint(bb_tz_latch);
    close_loop(tz, 2, bb_tz, bb_block_latch);

    close_blocks();
    probe_stacks(m, triple_);
    return llvm::Error::success();
}

} // namespace

llvm::Expected<std::unique_ptr<Target>> new_cpu_target(const TargetSpec &spec, bool validate) {
    // Only `cpu` (no processor named) and `cpu::<features>` ask for the host's processor.
    auto target = std::make_unique<CPUTarget>(spec, spec.cpu.empty() ? host_cpu() : HostCpu{});
    if (!validate) return target;
    if (llvm::Error err = check_cpu_and_features(spec, target->triple(), target->llvm_cpu(),
                                                 target->llvm_features()))
        return err;
    return target;
}

} // namespace ember::detail
