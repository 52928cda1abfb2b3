/// \file
/// The compiler's side of repro bundles ([Note] Repro bundles in ember/compiler/Bundle.h): what
/// Compiler.cpp and Bundle.cpp call in each other.
#ifndef EMBER_COMPILER_LIB_BUNDLEINTERNAL_H
#define EMBER_COMPILER_LIB_BUNDLEINTERNAL_H

#include "ember/Error.h"
#include "ember/compiler/Compiler.h"

#include <string>

namespace ember::detail {

/// EMBER_DUMP names `bundle` (Compiler.cpp reads EMBER_DUMP).
bool bundle_dump_enabled();

/// Runs the pipeline for `k` as far as it goes, keeping every stage in `out`; returns the stage
/// that failed (`verify`, `lower`, `optimise`, `codegen`) or an empty string when all succeeded.
/// Never throws.
std::string produce_stages(const ir::Kernel &k, const TargetSpec &target, int opt_level,
                           CompiledKernel &out) noexcept;

/// True on a thread that replays a bundle: no further bundles are written there.
bool bundles_suppressed();

/// `compile` failed with `error`: writes a bundle and returns the error with the bundle line.
CompileError bundle_compile_failure(const CompileError &error, const ir::Kernel &k,
                                    const TargetSpec &target, const CompileOptions &options) noexcept;

/// EMBER_DUMP=bundle: writes a bundle for the successful compile `out` (its ir, llvm, llvm_opt and
/// assembly filled); a failure to write is a warning on stderr.
void bundle_compile_success(const ir::Kernel &k, const CompiledKernel &out,
                            const CompileOptions &options) noexcept;

} // namespace ember::detail

#endif // EMBER_COMPILER_LIB_BUNDLEINTERNAL_H
