/// \file
/// What the compile cache (runtime/lib/CompileCache) needs from the compiler without seeing LLVM:
/// the LLVM version, SHA-256, and a CompiledKernel rebuilt from cached bytes.
#ifndef EMBER_COMPILER_CACHESUPPORT_H
#define EMBER_COMPILER_CACHESUPPORT_H

#include "ember/compiler/Compiler.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace ember {

/// (llvm_version() and compiler_build_id() are declared in Compiler.h.)
/// The ember project version (CMake PROJECT_VERSION, "0.1.0").
std::string ember_version();
/// Everything about `target` that changes the code compiled for it (the target's cache_key():
/// LLVM triple, processor and features, defaults resolved): for `cpu`, this host's processor
/// name and feature string, e.g. `x86_64-pc-linux-gnu;znver4;+adx,+aes,...`; for
/// `nvptx:sm_90`, `nvptx64-nvidia-cuda;sm_90;`. Computed once per spec per process (the host's
/// features once), without checking the names against LLVM's lists (a name LLVM does not know
/// fails the compile, so no entry has its key). A target whose back end this build lacks gives
/// `unavailable:<spec>`.
std::string target_cache_key(const TargetSpec &target);
/// Test hook: `cpu` targets (no processor named, as TargetSpec::host()) compile for processor
/// `name` with `features` instead of this host's, as on another machine, in compiles and in
/// target_cache_key; an empty `name` returns to this host.
void set_host_cpu_for_testing(std::string name, std::string features);
/// How the code generator builds the warp matrix operations (mma, ldmatrix): a test hook.
enum class MatrixPath : uint8_t {
    native,    ///< as the target does: its own instructions, else 4 x 4 blocks, else shuffles
    shuffles,  ///< from warp shuffles, as targets without matrix instructions do ([Note] Matrix
               ///< operations from shuffles in compiler/lib/CodeGenLLVM.cpp)
    blocks,    ///< mma from 4 x 4 block products of k 4 (tf32: 1), as CDNA's MFMA does ([Note]
               ///< Matrix multiply-accumulate from 4 x 4 blocks), each block product emulated
               ///< with shuffles; ldmatrix from shuffles
    blocks_k2, ///< the same with blocks of k 2 for f16 and bf16, as gfx908's bf16 MFMA
};
/// Test hook: every target builds the warp matrix operations by `path`, so that the H200 and the
/// CPU device run the code other targets get; it is part of target_cache_key while not native.
void set_matrix_path_for_testing(MatrixPath path);
/// SHA-256 of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);
/// The CompiledKernel `compile(k, target)` would return, with `binary` (PTX or a CPU object
/// cached from an earlier compile of the same key) instead of running LLVM: the names, constants
/// and local bytes come from the IR. With `verify` (the default) it verifies `k` first, so that a
/// cache never accepts IR the compiler would reject; a caller whose IR was verified already
/// (every traced kernel: KernelInfo::verified) passes false.
CompiledKernel compiled_from_binary(const ir::Kernel &k, const TargetSpec &target, std::string binary,
                                    bool verify = true);

} // namespace ember

#endif // EMBER_COMPILER_CACHESUPPORT_H
