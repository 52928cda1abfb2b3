/// \file
/// The NVPTX back end: kernels become `.entry` functions of PTX text for one `sm_XX`.
#include "TargetImpl.h"

#include "../LLVMError.h"

#ifdef EMBER_WITH_NVPTX

#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

namespace ember::detail {
namespace {

constexpr const char *nvptx_triple = "nvptx64-nvidia-cuda";

class NVPTXTarget final : public Target {
public:
    using Target::Target;

    std::string triple() const override { return nvptx_triple; }
    std::string llvm_cpu() const override { return spec().cpu; }
    std::string llvm_features() const override { return spec().features; }

    unsigned global_address_space() const override { return 1; } // NVPTX's global space

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
        const Info *info = nullptr;
        switch (reg) {
        case ir::SpecialRegKind::ThreadIdx: info = &thread_idx; break;
        case ir::SpecialRegKind::BlockIdx: info = &block_idx; break;
        case ir::SpecialRegKind::BlockDim: info = &block_dim; break;
        case ir::SpecialRegKind::GridDim: info = &grid_dim; break;
        }
        EMBER_ASSERT(info, "unknown special register");
        CallInst *call = b.CreateIntrinsic(info->id[dim], {}, {});
        MDBuilder md(b.getContext());
        call->setMetadata(LLVMContext::MD_range,
                          md.createRange(APInt(32, info->lo[dim]), APInt(32, info->hi[dim])));
        return b.CreateZExt(call, b.getInt64Ty(), "", /*IsNonNeg=*/true);
    }

    llvm::Error emit_barrier(llvm::IRBuilderBase &b, std::string_view) const override {
        b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); // bar.sync 0
        return llvm::Error::success();
    }

    llvm::Error finish_module(llvm::Module &m, llvm::Function &kernel) const override {
        // LLVM 19 has no ptx_kernel calling convention yet: a kernel is marked by
        // !nvvm.annotations = !{!{ptr @k, !"kernel", i32 1}}.
        llvm::LLVMContext &ctx = m.getContext();
        llvm::Metadata *ops[] = {
            llvm::ValueAsMetadata::get(&kernel), llvm::MDString::get(ctx, "kernel"),
            llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))};
        m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, ops));
        return llvm::Error::success();
    }

    llvm::CodeGenFileType binary_file_type() const override {
        return llvm::CodeGenFileType::AssemblyFile;
    }
};

} // namespace

llvm::Expected<std::unique_ptr<Target>> new_nvptx_target(const TargetSpec &spec) {
    if (llvm::Error err = check_cpu_and_features(spec, nvptx_triple, spec.cpu, spec.features))
        return err;
    return std::make_unique<NVPTXTarget>(spec);
}

} // namespace ember::detail

#else // !EMBER_WITH_NVPTX

llvm::Expected<std::unique_ptr<ember::detail::Target>>
ember::detail::new_nvptx_target(const TargetSpec &spec) {
    return make_target_unavailable("target '" + spec.to_string() +
                                   "' needs the NVPTX back end, but ember was built with "
                                   "EMBER_ENABLE_NVPTX=OFF (or an LLVM without NVPTX)");
}

#endif
