/// \file
/// Lowering of one kernel to an LLVM module: the one code generator, shared by every target
/// (target differences are `detail::Target` hooks). Internal to compiler/.
#ifndef EMBER_COMPILER_LIB_CODEGENLLVM_H
#define EMBER_COMPILER_LIB_CODEGENLLVM_H

#include "ember/compiler/IR.h"
#include "targets/TargetImpl.h"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>

#include <memory>

namespace ember {
// Internal to libember_compiler.so: hidden, never exported (see ember_compiler.map).
namespace detail __attribute__((visibility("hidden"))) {

    /// Lowers `k`, which must have passed the verifier, to a module for `target` whose data layout
    /// is `dl`, and applies `target.finish_module`. The module implements [Note] IR semantics
    /// exactly: no nsw/nuw, no fast-math flags (`contract` under fp_contract(fast)), guarded
    /// division, saturating float-to-int casts.
    ///
    /// [Note] Kernel parameter representation
    /// ======================================
    /// Parameter i of the LLVM function has the kernel parameter's *memory* type, which is also
    /// what `args[i]` of the CPU ABI and `kernelParams[i]` of cuLaunchKernel point to:
    /// * `ptr<global T>` is `ptr addrspace(G)` (G = 1 on NVPTX, 0 on the CPU), 8 bytes;
    /// * `bool` is one byte (`i8`): 0 is false, any other value true (converted with `!= 0`);
    /// * integers and floats are themselves (`u32` is `i32`, `f16` is `half`, `bf16` is `bfloat`).
    /// All parameters are `noundef`. Booleans in memory (`ptr<global bool>`) are bytes as well;
    /// stores write 0 or 1.
    llvm::Expected<std::unique_ptr<llvm::Module>> lower_to_llvm(
        const ir::Kernel &k, const Target &target, const llvm::DataLayout &dl,
        llvm::LLVMContext &ctx);

} // namespace detail
} // namespace ember

#endif // EMBER_COMPILER_LIB_CODEGENLLVM_H
