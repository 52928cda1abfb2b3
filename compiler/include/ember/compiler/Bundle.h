/// \file
/// Repro bundles: a directory that holds everything needed to replay one kernel's compilation
/// offline.
///
/// [Note] Repro bundles
/// ====================
/// A bundle is written when a compile fails with `CompileError` (verifier, lowering, LLVM, or the
/// driver's PTX JIT when the runtime loads the result), and for every compiled kernel when
/// `EMBER_DUMP` names `bundle`. It goes to `<EMBER_DUMP_DIR or $TMPDIR or /tmp>/
/// ember-bundle-<kernel>-<12 hex digits>/`, the digits hashing the IR, target and options, and
/// holds
///   kernel.ir     the canonical textual IR (ember-compile reads it)
///   target.txt    the target spec (`nvptx:sm_90`, `cpu:x86-64:+avx2,...`)
///   options.txt   the code-affecting options (`opt_level=3`)
///   versions.txt  ember, LLVM, and the driver and device when a runtime compiled the kernel
///   llvm.ll, opt.ll, kernel.ptx | kernel.s   every stage produced before the failure
///   error.txt     `stage: <verify|lower|optimise|codegen|load>` then the error and its log;
///                 absent when the compile succeeded
///   README.txt    how to replay it
/// The `CompileError` gains the line `repro bundle: <dir>` in its log (or, when writing failed,
/// `repro bundle: not written (<why>)`); writing a bundle never replaces the original error.
/// `ember-compile --bundle DIR` replays a bundle (`replay_bundle`).
#ifndef EMBER_COMPILER_BUNDLE_H
#define EMBER_COMPILER_BUNDLE_H

#include "ember/Error.h"
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/IR.h"
#include "ember/compiler/Target.h"

#include <string>
#include <vector>

namespace ember {

/// The contents of a repro bundle directory (see [Note] Repro bundles).
struct ReproBundle {
    std::string kernel_name;
    /// kernel.ir: canonical textual IR.
    std::string ir;
    TargetSpec target;
    /// options.txt: the code-affecting options.
    int opt_level = 3;
    /// versions.txt, one `name: value` per line.
    std::string versions;
    /// Stage texts; empty when the stage was not reached.
    std::string llvm, llvm_opt, assembly;
    /// error.txt without its `stage:` line; empty for a successful compile.
    std::string error;
    /// The stage that failed (`verify`, `lower`, `optimise`, `codegen`, `load`); empty on success.
    std::string failed_stage;
};

/// The outcome of `replay_bundle`.
struct BundleReplay {
    ReproBundle stored;
    /// What this build produced from the bundle's kernel.ir, target and options.
    ReproBundle produced;
    /// True when the replay failed the way the stored bundle did (or both succeeded). A stored
    /// `load` failure (the driver's PTX JIT) cannot be replayed offline: it counts as reproduced
    /// when the produced PTX equals the stored one.
    bool reproduced = false;
    /// The names of the stage files whose produced text differs from the stored one
    /// (`llvm.ll`, `opt.ll`, `kernel.ptx`, `kernel.s`); stages missing on either side are skipped.
    std::vector<std::string> differing_stages;
};

/// True when `EMBER_DUMP` names `bundle` (read once per process).
bool bundle_dump_requested();

// ember_version() (the version this library was built as) is declared in CacheSupport.h.

/// The directory `write_bundle` uses for `b` (see [Note] Repro bundles).
std::string bundle_directory(const ReproBundle &b);

/// Writes `b` to `bundle_directory(b)` (each file through a temporary file and a rename, so that
/// concurrent writers of one bundle are safe). Returns the directory, or an empty string with the
/// reason in `*why` when the bundle could not be written. Never throws.
std::string write_bundle(const ReproBundle &b, std::string *why) noexcept;

/// Reads the bundle in `dir`. Throws `LogicError` naming the directory and the missing or
/// malformed file.
ReproBundle read_bundle(const std::string &dir);

/// Reads the bundle in `dir` and compiles its kernel.ir for its target and options through the
/// same stages, without writing another bundle. Throws `LogicError` for an unreadable bundle, and
/// what `compile` throws besides `CompileError` (e.g. `LogicError` for a target this build cannot
/// generate code for); a `CompileError` is caught and recorded in `produced`.
BundleReplay replay_bundle(const std::string &dir);

namespace detail {

/// While alive, bundles written on this thread add `driver` and `device` to versions.txt (the
/// runtime sets one around its compile). Nests; restores the previous values.
class BundleScope {
public:
    BundleScope(std::string driver, std::string device);
    ~BundleScope();
    BundleScope(const BundleScope &) = delete;
    BundleScope &operator=(const BundleScope &) = delete;

private:
    std::string prev_driver_, prev_device_;
};

/// For the runtime: `error` was thrown while loading `compiled` (compiled from `k` with
/// `options`); writes a bundle for it (stage `load`) and returns the error with the bundle line.
/// Never throws.
CompileError bundle_load_failure(const CompileError &error, const ir::Kernel &k,
                                 const CompiledKernel &compiled, const CompileOptions &options) noexcept;

} // namespace detail

} // namespace ember

#endif // EMBER_COMPILER_BUNDLE_H
