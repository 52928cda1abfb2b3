/// \file
/// The AMDGPU target ([Note] AMDGPU target): `amdgpu:gfx942` and every `gfx` processor LLVM 19
/// knows, triple amdgcn-amd-amdhsa, code object version 5, the relocatable object LLVM emits linked
/// in-process by lld into a code object (HSACO) a HIP runtime loads.
#include "TargetImpl.h"

#include "ember/compiler/PrintBuffer.h"

#include "../LLVMError.h"

#ifdef EMBER_WITH_AMDGPU

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <lld/Common/Driver.h>

#include <mutex>
#include <string>
#include <vector>

LLD_HAS_DRIVER(elf)

namespace ember::detail {

namespace {

constexpr const char *amdgpu_triple = "amdgcn-amd-amdhsa";

/// [Note] AMDGPU target
/// ====================
/// What the AMDGPU target does today, and what it refuses:
/// - **Kernel ABI.** The body is an `amdgpu_kernel` function whose parameters LLVM lays out in
///   the kernarg segment in order, each at its natural alignment (what the HIP runtime's
///   `hipModuleLaunchKernel` expects of a kernel's explicit arguments); the code object's
///   `amdhsa.kernels` metadata lists them, and the hidden arguments after them, for code object
///   version 5 (the module flag `amdhsa_code_object_version` = 500).
/// - **Special registers.** thread_idx and block_idx are the work-item and work-group ids
///   (`llvm.amdgcn.workitem.id.*`, `workgroup.id.*`); block_dim and grid_dim come from the hidden
///   arguments of code object version 5 (`llvm.amdgcn.implicitarg.ptr`): the group size, an i16
///   at byte 12 + 2·dim, and the block count, an i32 at byte 4·dim.
/// - **Memory.** Global memory is address space 1, shared memory (LDS) 3, constant memory 4,
///   local arrays 5 (LLVM's allocas). Static shared arrays are LDS globals; dynamic shared memory
///   is a zero-length external LDS array, which the code object sizes at launch as HIP's
///   `extern __shared__` does.
/// - **Barriers and fences** are HIP's: a barrier is a workgroup-scope release fence,
///   `s_barrier` and an acquire fence; a fence of the block, the device and the system is a
///   sequentially consistent fence of scope `workgroup`, `agent` and the system.
/// - **Atomics** take the sync scope of their ember scope, as HIP's `__hip_atomic` builtins do:
///   `workgroup` for the block, `agent` for the device (the default), the system's for the
///   system. Relaxed, as every ember atomic.
/// - **Warp operations** on the IR's warps of 32 lanes ([Note] Warps on AMDGPU below).
/// - **Matrix operations.** mma on CDNA (gfx908, gfx90a, gfx940-942) is built from the 16-block
///   4 x 4 MFMAs and fragment shuffles ([Note] Matrix multiply-accumulate from 4 x 4 blocks in
///   CodeGenLLVM.cpp; test/lit/eir/amdgpu_mfma.eir); on RDNA, and ldmatrix everywhere, from warp
///   shuffles. wgmma, mbarriers and TMA fail the compile (Target::async_tensor_problem).
/// - **Print** writes records into ember's print buffer, which the HIP back end drains at a
///   synchronize ([Note] Print buffer in ember/compiler/PrintBuffer.h): HIP's own printf is a
///   host-call buffer served by code from ROCm's device libraries. Nothing of the IR is refused.
/// - **Emission.** LLVM writes a relocatable ELF object; lld's ELF linker, in this process
///   (liblld, no `ld.lld` process), links it as a shared object: the code object. lld keeps
///   global state, so links are serialised. The `asm` stage is LLVM's AMDGPU assembly.
/// - **LLVM defects worked around** (found by compiling ember-difftest's random kernels for
///   gfx942 and gfx1100, every one of which compiles now): the
///   arithmetic fences become inline asm (`prepare_codegen`; the assembly parser is initialised
///   for the object streamer), an integer of up to 16 bits made bf16 goes through f32, and a bf16
///   comparison is made in f32 (a ballot of it had no selection pattern).
///
/// [Note] Warps on AMDGPU
/// ======================
/// The IR's warp is 32 lanes, lane = the thread's linear index in its block modulo 32 ([Note] IR
/// semantics), on every target, so that one kernel gives the same results on NVIDIA, AMD and the
/// CPU device. An AMD wave is 32 lanes on RDNA (gfx1100: a wave is a warp) and 64 on CDNA
/// (gfx90a, gfx942: a wave holds two warps, lanes 0-31 and 32-63 of the wave, since a wave is
/// made of consecutive linear indices); the `+wavefrontsize64`/`+wavefrontsize32` features of a
/// spec override the processor's default. A lane finds its place with `mbcnt` (the count of
/// wave lanes below it): its lane in the warp is that count modulo 32, its warp's first lane in
/// the wave that count & 32. Shuffles compute the source lane in the warp as the IR defines
/// each (idx: lane % 32; xor: lane ^ (mask % 32); up/down: lane -/+ delta, or the reader's own
/// lane outside [0, 32)) and read it with `ds_bpermute` at the warp's first lane plus it (two
/// for 64-bit values). `ballot` is the warp's 32 bits of the wave's ballot (`llvm.amdgcn.ballot`,
/// shifted by the warp's first lane on wave64); `warp_any` is whether they are non-zero and
/// `warp_all` whether they equal the ballot of `true`, the lanes that run. What a user must know:
/// `warp_size` is 32 on every target; the whole wave's 64-bit mask is `wave_ballot` (the wave's
/// `llvm.amdgcn.ballot.i64`, or the 32-bit one zero-extended on wave32; test/lit/eir/
/// wave_ballot.eir), and on wave64 processors two warps share a wave's execution, so a warp
/// operation that only one of them reaches still runs correctly (the other's lanes are off and
/// are not read). The lit test checks the LLVM IR and the disassembly
/// (test/lit/eir/amdgpu_kernel.eir), and ember-difftest's warp kernels compile for both wave
/// sizes (ctest difftest.amdgpu-compile.*).
///
/// Nothing of this has run on an AMD GPU (none exists on any machine here): LLVM's tools check
/// the code objects (test/lit/eir/amdgpu_kernel.eir, test/lit/examples/amdgpu_examples.test).
class AMDGPUTarget final : public Target {
public:
    using Target::Target;

    std::string triple() const override { return amdgpu_triple; }
    std::string llvm_cpu() const override { return spec().cpu; }
    std::string llvm_features() const override { return spec().features; }

    unsigned global_address_space() const override { return 1; }
    unsigned shared_address_space() const override { return 3; }
    unsigned constant_address_space() const override { return 4; }
    bool has_fma(ir::ScalarType t) const override { return t == ir::ScalarType::F16; }

    llvm::Value *emit_special_reg(llvm::IRBuilderBase &b, ir::SpecialRegKind reg, unsigned dim) const override {
        EMBER_ASSERT(dim < 3, "special register dimension out of range");
        using namespace llvm;
        MDBuilder md(b.getContext());
        auto ranged = [&](Intrinsic::ID id, uint64_t lo, uint64_t hi) {
            CallInst *call = b.CreateIntrinsic(id, {}, {});
            call->setMetadata(LLVMContext::MD_range, md.createRange(APInt(32, lo), APInt(32, hi)));
            return b.CreateZExt(call, b.getInt64Ty(), "", /*IsNonNeg=*/true);
        };
        static const Intrinsic::ID workitem[3] = {Intrinsic::amdgcn_workitem_id_x, Intrinsic::amdgcn_workitem_id_y,
                                                  Intrinsic::amdgcn_workitem_id_z};
        static const Intrinsic::ID workgroup[3] = {Intrinsic::amdgcn_workgroup_id_x, Intrinsic::amdgcn_workgroup_id_y,
                                                   Intrinsic::amdgcn_workgroup_id_z};
        switch (reg) {
        case ir::SpecialRegKind::ClusterDim: return b.getInt64(1); // no clusters: each block is one
        case ir::SpecialRegKind::ThreadIdx: return ranged(workitem[dim], 0, 1024); // at most 1024 a block
        case ir::SpecialRegKind::BlockIdx: return ranged(workgroup[dim], 0, 0x80000000u);
        case ir::SpecialRegKind::BlockDim:
        case ir::SpecialRegKind::GridDim: {
            // The hidden arguments of code object version 5: block counts (i32) at 0, 4, 8; group
            // sizes (i16) at 12, 14, 16.
            Value *implicit = b.CreateIntrinsic(Intrinsic::amdgcn_implicitarg_ptr, {}, {});
            const bool group = reg == ir::SpecialRegKind::BlockDim;
            Type *ty = group ? b.getInt16Ty() : b.getInt32Ty();
            Value *at = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), implicit, group ? 12 + 2 * dim : 4 * dim);
            LoadInst *load = b.CreateAlignedLoad(ty, at, Align(group ? 2 : 4));
            load->setMetadata(LLVMContext::MD_invariant_load, MDNode::get(b.getContext(), {}));
            load->setMetadata(LLVMContext::MD_range,
                              md.createRange(APInt(ty->getIntegerBitWidth(), 1),
                                             APInt(ty->getIntegerBitWidth(), group ? 1025 : 0x80000000u)));
            return b.CreateZExt(load, b.getInt64Ty(), "", /*IsNonNeg=*/true);
        }
        }
        EMBER_UNREACHABLE("unknown special register");
    }

    /// Cluster barriers do not get here (async_tensor_problem refuses them: AMD GPUs have no
    /// clusters).
    llvm::Error emit_barrier(llvm::IRBuilderBase &b, std::string_view,
                             ir::BarrierScope) const override {
        llvm::LLVMContext &c = b.getContext();
        const llvm::SyncScope::ID workgroup = c.getOrInsertSyncScopeID("workgroup");
        b.CreateFence(llvm::AtomicOrdering::Release, workgroup);
        b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
        b.CreateFence(llvm::AtomicOrdering::Acquire, workgroup);
        return llvm::Error::success();
    }

    void emit_fence(llvm::IRBuilderBase &b, ir::FenceScope scope) const override {
        b.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent, atomic_sync_scope(b.getContext(), scope));
    }

    llvm::SyncScope::ID atomic_sync_scope(llvm::LLVMContext &c, ir::FenceScope scope) const override {
        if (scope == ir::FenceScope::Block) return c.getOrInsertSyncScopeID("workgroup");
        if (scope == ir::FenceScope::Device) return c.getOrInsertSyncScopeID("agent");
        return llvm::SyncScope::System;
    }

    llvm::Value *emit_shared_array(llvm::IRBuilderBase &b, llvm::Type *elem, uint64_t count, uint64_t,
                                   const llvm::Twine &name) const override {
        return internal_shared_array(b, elem, count, name, shared_address_space());
    }

    llvm::Value *emit_dynamic_shared(llvm::IRBuilderBase &b, const llvm::Twine &name) const override {
        return external_shared_array(b, name, shared_address_space());
    }

    /// Whether a wave has 64 lanes: the wavefrontsize feature where the spec names one, else the
    /// processor's default (64 before gfx10: GCN and CDNA, gfx90a and gfx942; 32 from gfx10 on:
    /// RDNA, gfx1100).
    bool wave64() const {
        const std::string &f = spec().features;
        if (f.find("+wavefrontsize64") != std::string::npos) return true;
        if (f.find("+wavefrontsize32") != std::string::npos) return false;
        const std::string &cpu = spec().cpu; // "gfx" and 3 or 4 characters: gfx942, gfx1100
        return cpu.size() < 7;
    }

    /// CDNA's 16-block MFMAs ([Note] Matrix multiply-accumulate from 4 x 4 blocks in
    /// CodeGenLLVM.cpp): f16 with k 4 and f32 with k 1 from gfx908 (MI100) on, bf16 with k 2 on
    /// gfx908 and k 4 (the `_1k` instruction) from gfx90a (MI200, MI300: gfx940-942). RDNA has
    /// none of them (its WMMAs take a whole wave of 32 for a 16 x 16 block), nor has gfx90c.
    unsigned mma_block_k(ir::MmaInput input) const override {
        const std::string &cpu = spec().cpu;
        const bool gfx908 = cpu == "gfx908";
        if (!wave64() ||
            !(gfx908 || cpu == "gfx90a" || cpu == "gfx940" || cpu == "gfx941" || cpu == "gfx942"))
            return 0;
        switch (input) {
        case ir::MmaInput::F16: return 4;
        case ir::MmaInput::BF16: return gfx908 ? 2 : 4;
        case ir::MmaInput::TF32: return 1;
        case ir::MmaInput::E4M3:
        case ir::MmaInput::E5M2: return 0; // CDNA 3's fp8 MFMAs are 16 x 16 and 32 x 32 only
        }
        return 0;
    }

    llvm::Value *emit_mma_block(llvm::IRBuilderBase &b, ir::MmaInput input, llvm::Value *a,
                                llvm::Value *bv, llvm::Value *c) const override {
        using namespace llvm;
        const unsigned kc = unsigned(cast<FixedVectorType>(a->getType())->getNumElements());
        Intrinsic::ID id = Intrinsic::amdgcn_mfma_f32_4x4x1f32;
        if (input == ir::MmaInput::F16) {
            id = Intrinsic::amdgcn_mfma_f32_4x4x4f16;
        } else if (input == ir::MmaInput::BF16) { // the bf16 MFMAs take i16 elements
            id = kc == 4 ? Intrinsic::amdgcn_mfma_f32_4x4x4bf16_1k
                         : Intrinsic::amdgcn_mfma_f32_4x4x2bf16;
            Type *bits = FixedVectorType::get(b.getInt16Ty(), kc);
            a = b.CreateBitCast(a, bits), bv = b.CreateBitCast(bv, bits);
        } else {
            a = b.CreateExtractElement(a, uint64_t(0)),
            bv = b.CreateExtractElement(bv, uint64_t(0));
        }
        // cbsz, abid, blgp: no broadcast between blocks, B's lanes as they are.
        return b.CreateIntrinsic(id, {}, {a, bv, c, b.getInt32(0), b.getInt32(0), b.getInt32(0)});
    }

    /// [Note] Warps on AMDGPU: the IR's warp of 32 lanes, as a wave of 32 or half a wave of 64.
    llvm::Value *emit_warp(llvm::IRBuilderBase &b, ir::WarpOp op, llvm::Value *value, llvm::Value *lane) const override {
        using namespace llvm;
        const bool w64 = wave64();
        if (op == ir::WarpOp::WaveBallot) { // the whole wave's ballot: 64 bits, or the warp's 32
            if (w64) return b.CreateIntrinsic(Intrinsic::amdgcn_ballot, {b.getInt64Ty()}, {value});
            return b.CreateZExt(b.CreateIntrinsic(Intrinsic::amdgcn_ballot, {b.getInt32Ty()}, {value}), b.getInt64Ty());
        }
        // The lane in the wave (the count of lanes below this one), the lane in the warp, and the
        // warp's first lane in the wave (0, or 32 in a wave of 64).
        Value *wave_lane = b.CreateIntrinsic(Intrinsic::amdgcn_mbcnt_lo, {}, {b.getInt32(-1), b.getInt32(0)});
        if (w64) wave_lane = b.CreateIntrinsic(Intrinsic::amdgcn_mbcnt_hi, {}, {b.getInt32(-1), wave_lane});
        Value *me = b.CreateAnd(wave_lane, 31, "warp.lane");
        Value *base = b.CreateAnd(wave_lane, 32, "warp.base");
        if (!ir::is_shuffle(op)) {
            // The warp's half of the wave's ballot: lanes that do not run contribute 0.
            auto half = [&](Value *cond) -> Value * {
                if (!w64) return b.CreateIntrinsic(Intrinsic::amdgcn_ballot, {b.getInt32Ty()}, {cond});
                Value *all = b.CreateIntrinsic(Intrinsic::amdgcn_ballot, {b.getInt64Ty()}, {cond});
                return b.CreateTrunc(b.CreateLShr(all, b.CreateZExt(base, b.getInt64Ty())), b.getInt32Ty());
            };
            Value *votes = half(value);
            if (op == ir::WarpOp::Ballot) return votes;
            if (op == ir::WarpOp::Any) return b.CreateICmpNE(votes, b.getInt32(0));
            return b.CreateICmpEQ(votes, half(b.getTrue())); // every running lane of the warp
        }
        // The source lane in the warp, as the IR defines each shuffle (and the CPU device and
        // NVPTX compute it): idx reads lane % 32, xor lane ^ (mask % 32), up and down lane -/+
        // delta or the reader's own lane outside [0, 32).
        Value *src = nullptr;
        switch (op) {
        case ir::WarpOp::ShuffleIdx: src = b.CreateAnd(lane, 31); break;
        case ir::WarpOp::ShuffleXor: src = b.CreateXor(me, b.CreateAnd(lane, 31)); break;
        default: {
            Value *me64 = b.CreateZExt(me, b.getInt64Ty());
            Value *delta = b.CreateSExt(lane, b.getInt64Ty());
            Value *s = op == ir::WarpOp::ShuffleUp ? b.CreateSub(me64, delta) : b.CreateAdd(me64, delta);
            Value *inside = b.CreateICmpULT(s, b.getInt64(32), "shfl.inside");
            src = b.CreateSelect(inside, b.CreateTrunc(s, b.getInt32Ty()), me, "shfl.lane");
        }
        }
        // ds_bpermute reads the lane whose index is its byte address / 4, in the wave.
        Value *address = b.CreateShl(b.CreateOr(base, src), 2);
        auto permute32 = [&](Value *v) {
            return b.CreateIntrinsic(Intrinsic::amdgcn_ds_bpermute, {}, {address, v});
        };
        if (value->getType()->isIntegerTy(32)) return permute32(value);
        // 64 bits: the two halves travel separately.
        Value *lo = permute32(b.CreateTrunc(value, b.getInt32Ty()));
        Value *hi = permute32(b.CreateTrunc(b.CreateLShr(value, 32), b.getInt32Ty()));
        return b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()), b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
    }

    /// HIP's printf needs ROCm's device libraries: print writes into ember's print buffer
    /// ([Note] Print buffer).
    bool has_device_printf() const override { return false; }

    llvm::Error finish_module(llvm::Module &m, llvm::Function &kernel,
                              const KernelFacts &facts) const override {
        const std::string where = "kernel '" + kernel.getName().str() + "' for " + spec().to_string();
        // The print buffer's global is found by name (hipModuleGetGlobal): exported.
        if (llvm::GlobalVariable *g = m.getGlobalVariable(print_buffer::kSymbol))
            g->setVisibility(llvm::GlobalValue::ProtectedVisibility);
        kernel.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
        // Launch bounds: the work-group size range the code must serve, and the VGPR budget
        // (min_blocks has no AMDGPU counterpart that means the same; it is not passed on).
        if (facts.bounds.max_threads)
            kernel.addFnAttr("amdgpu-flat-work-group-size",
                             "1," + std::to_string(facts.bounds.max_threads));
        if (facts.bounds.max_registers)
            kernel.addFnAttr("amdgpu-num-vgpr", std::to_string(facts.bounds.max_registers));
        kernel.setLinkage(llvm::GlobalValue::ExternalLinkage);
        kernel.setVisibility(llvm::GlobalValue::ProtectedVisibility);
        m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 500);
        return llvm::Error::success();
    }

    /// LLVM 19's AMDGPU instruction selection fails on `llvm.arithmetic.fence` of a uniform value
    /// ("illegal VGPR to SGPR copy"). The fences keep the optimiser from folding casts
    /// (emit_cast in CodeGenLLVM.cpp); once it has run they become an empty inline-asm copy in a
    /// VGPR, which no later pass looks through either.
    /// LLVM 19's AMDGPU instruction selection has no pattern for an integer converted to bf16
    /// from a bool ("Cannot select: bf16 = uint_to_fp i1", 5 random kernels of ember-difftest in
    /// 1,000 compiled for gfx942 and gfx1100). A conversion to bf16 (or bf16 lanes) of an integer
    /// of at most 16 bits goes through f32, which holds such an integer exactly, so the
    /// truncation to bf16 is its only rounding, as in the direct conversion.
    static void int_to_bf16_through_f32(llvm::Module &m) {
        for (llvm::CastInst *c : instructions_of<llvm::CastInst>(m, [](llvm::CastInst &c) {
                 return (llvm::isa<llvm::UIToFPInst>(c) || llvm::isa<llvm::SIToFPInst>(c)) &&
                        c.getType()->getScalarType()->isBFloatTy() &&
                        c.getOperand(0)->getType()->getScalarSizeInBits() <= 16;
             })) {
            llvm::IRBuilder<> b(c);
            llvm::Type *f32 = b.getFloatTy();
            if (auto *vt = llvm::dyn_cast<llvm::VectorType>(c->getType())) f32 = llvm::VectorType::get(f32, vt->getElementCount());
            llvm::Value *wide = llvm::isa<llvm::SIToFPInst>(c) ? b.CreateSIToFP(c->getOperand(0), f32)
                                                               : b.CreateUIToFP(c->getOperand(0), f32);
            llvm::Value *r = b.CreateFPTrunc(wide, c->getType());
            r->takeName(c);
            c->replaceAllUsesWith(r);
            c->eraseFromParent();
        }
    }

    /// LLVM 19's AMDGPU selection folds a ballot of a comparison into one wave-wide compare
    /// (`i64 = setcc` on wave64, `i32` on wave32) and has no pattern for it on bf16 operands
    /// ("Cannot select: i64 = SETCC ... setuo"; 7 of 300 random kernels once warp operations
    /// compiled). A bf16 comparison becomes one of its operands extended to f32, exactly (every
    /// bf16 is an f32), so the result is the same for every input, NaN included.
    static void bf16_compares_in_f32(llvm::Module &m) {
        for (llvm::FCmpInst *c : instructions_of<llvm::FCmpInst>(m, [](llvm::FCmpInst &c) {
                 return c.getOperand(0)->getType()->getScalarType()->isBFloatTy();
             })) {
            llvm::IRBuilder<> b(c);
            llvm::Type *f32 = b.getFloatTy();
            if (auto *vt = llvm::dyn_cast<llvm::VectorType>(c->getOperand(0)->getType()))
                f32 = llvm::VectorType::get(f32, vt->getElementCount());
            llvm::Value *r = b.CreateFCmp(c->getPredicate(), b.CreateFPExt(c->getOperand(0), f32),
                                          b.CreateFPExt(c->getOperand(1), f32));
            if (auto *ri = llvm::dyn_cast<llvm::Instruction>(r)) ri->copyFastMathFlags(c);
            r->takeName(c);
            c->replaceAllUsesWith(r);
            c->eraseFromParent();
        }
    }

    void prepare_codegen(llvm::Module &m) const override {
        int_to_bf16_through_f32(m);
        bf16_compares_in_f32(m);
        for (llvm::IntrinsicInst *c : instructions_of<llvm::IntrinsicInst>(m, [](llvm::IntrinsicInst &c) {
                 return c.getIntrinsicID() == llvm::Intrinsic::arithmetic_fence;
             })) {
            llvm::IRBuilder<> b(c);
            llvm::Type *ty = c->getType();
            auto *fnty = llvm::FunctionType::get(ty, {ty}, false);
            llvm::Value *r = b.CreateCall(llvm::InlineAsm::get(fnty, "; arithmetic fence", "=v,0", false),
                                          {c->getArgOperand(0)});
            r->takeName(c);
            c->replaceAllUsesWith(r);
            c->eraseFromParent();
        }
    }

    llvm::CodeGenFileType binary_file_type() const override { return llvm::CodeGenFileType::ObjectFile; }

    /// LLVM's relocatable object, linked by lld into the code object.
    llvm::Expected<std::string> emit_binary(llvm::Module &m, llvm::TargetMachine &tm) const override {
        llvm::Expected<std::string> object = emit_with_target_machine(m, tm, llvm::CodeGenFileType::ObjectFile);
        if (!object) return object.takeError();
        return link_code_object(*object, m.getName().str());
    }

private:

    /// `object` linked by lld's ELF driver into a shared object, through two temporary files.
    llvm::Expected<std::string> link_code_object(const std::string &object, const std::string &name) const {
        llvm::SmallString<128> dir;
        if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("ember-amdgpu-link", dir))
            return make_compile_failure("cannot make a temporary directory to link '" + name + "': " + ec.message());
        struct Cleanup {
            llvm::SmallString<128> &dir;
            ~Cleanup() { llvm::sys::fs::remove_directories(dir); }
        } cleanup{dir};
        llvm::SmallString<128> in(dir), out(dir);
        llvm::sys::path::append(in, "kernel.o");
        llvm::sys::path::append(out, "kernel.hsaco");
        {
            std::error_code ec;
            llvm::raw_fd_ostream os(in, ec, llvm::sys::fs::OF_None);
            if (ec) return make_compile_failure("cannot write '" + in.str().str() + "': " + ec.message());
            os << object;
        }
        std::string log;
        llvm::raw_string_ostream log_os(log);
        const char *args[] = {"ld.lld", "-shared", "--no-undefined", in.c_str(), "-o", out.c_str()};
        static std::mutex lld_mutex; // lld keeps global state
        {
            std::lock_guard<std::mutex> lock(lld_mutex);
            lld::Result r = lld::lldMain(args, log_os, log_os, {{lld::Gnu, &lld::elf::link}});
            if (r.retCode != 0 || !r.canRunAgain)
                return make_compile_failure("lld could not link the code object of '" + name + "' for " +
                                            spec().to_string() + ":\n" + log);
        }
        auto buffer = llvm::MemoryBuffer::getFile(out);
        if (!buffer) return make_compile_failure("cannot read the code object lld wrote for '" + name + "'");
        return (*buffer)->getBuffer().str();
    }
};

} // namespace

llvm::Expected<std::unique_ptr<Target>> new_amdgpu_target(const TargetSpec &spec, bool validate) {
    if (!validate) return std::make_unique<AMDGPUTarget>(spec);
    if (llvm::Error err = check_cpu_and_features(spec, amdgpu_triple, spec.cpu, spec.features)) return err;
    return std::make_unique<AMDGPUTarget>(spec);
}

} // namespace ember::detail

#else // !EMBER_WITH_AMDGPU

llvm::Expected<std::unique_ptr<ember::detail::Target>> ember::detail::new_amdgpu_target(const TargetSpec &spec, bool) {
    return make_target_unavailable("target '" + spec.to_string() +
                                   "' needs the AMDGPU back end and lld, but ember was built without them "
                                   "(EMBER_ENABLE_AMDGPU=OFF, an LLVM without AMDGPU, or no liblld)");
}

#endif
