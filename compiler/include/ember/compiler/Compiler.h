/// \file
/// The compiler's public entry point: kernel IR in, any stage for a target out.
///
/// [Note] Compilation pipeline
/// ===========================
/// ir --(verify)--> llvm (CodeGenLLVM + Target::finish_module) --(O3)--> llvm-opt
///    --(TargetMachine)--> asm (PTX text, host assembly) / obj (relocatable object)
/// The binary a runtime loads is the PTX text for NVPTX and the relocatable object for the CPU.
/// `EMBER_DUMP=ir,llvm,llvm-opt,asm,sass` (any subset) prints those stages of every compiled
/// kernel to stderr, or writes them to `$EMBER_DUMP_DIR/<kernel>.<key>.<target>.<ext>`: the key
/// is 12 hex digits of a SHA-256 of the kernel's IR and compile options, so that two
/// specialisations of one kernel (template instances, captured constants) keep apart; ':' in the
/// target becomes '_'; the extension says what the file holds: `.eir` (ember IR), `.ll` (LLVM IR),
/// `.opt.ll` (after the pipeline), `.ptx` (NVPTX) or `.s` (AMDGPU, host assembly), `.sass`
/// (NVIDIA machine code: the runtime links the PTX with the driver and disassembles the cubin
/// with cuobjdump or nvdisasm when one is installed), e.g. `scalar_add.3f2a9c01b7de.nvptx_sm_90.ptx`.
/// `EMBER_DUMP=bundle` (alone or in the list) writes a repro bundle of every compiled kernel, and
/// every CompileError of `compile` writes one ([Note] Repro bundles in Bundle.h).
#ifndef EMBER_COMPILER_COMPILER_H
#define EMBER_COMPILER_COMPILER_H

#include "ember/compiler/IR.h"
#include "ember/compiler/Target.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

enum class Stage { IR, LLVM, LLVMOpt, Asm, Obj };
std::string_view to_string(Stage s); // "ir", "llvm", "llvm-opt", "asm", "obj"
std::optional<Stage> parse_stage(std::string_view s);

/// Whether EMBER_DUMP asks for a stage or for repro bundles (read once; an unknown stage alone
/// asks for nothing). A compile cache must then compile every kernel, so that it is dumped.
bool dumps_requested();
/// Whether EMBER_DUMP asks for `sass` (NVIDIA machine code, which only a runtime with the driver
/// can produce).
bool sass_dump_requested();

struct CompileOptions {
    /// 0..3; 3 is the default O3 pipeline.
    int opt_level = 3;
    /// Keep the text of these stages in `CompiledKernel` (the binary is always kept).
    bool keep_ir = false, keep_llvm = false, keep_llvm_opt = false, keep_asm = false;
    /// Print through ember's print buffer ([Note] Print buffer) on a target that has a printf of
    /// its own too (NVPTX): for tests of the buffer on NVIDIA GPUs. AMDGPU always uses it.
    bool print_to_buffer = false;
};

/// The result of compiling one kernel for one target: portable bytes, no live handles.
struct CompiledKernel {
    std::string kernel_name;
    /// The symbol to look up in the binary (the kernel's name).
    std::string entry_symbol;
    TargetSpec target;
    /// PTX text (NVPTX), a code object (AMDGPU) or a relocatable ELF object (CPU).
    std::string binary;
    /// The kernel's constant arrays (ir::constant_globals): module globals the host writes.
    std::vector<ir::ConstantGlobal> constants;
    /// Stage texts that were asked for in CompileOptions (empty otherwise).
    std::string ir, llvm, llvm_opt, assembly;
    /// Wall time of each step, in seconds.
    double lower_seconds = 0, optimize_seconds = 0, codegen_seconds = 0;
    /// Bytes of local arrays one thread may hold at once: the kernel's and, for every call, the
    /// callee's (an upper bound: as if every call were inlined). The CPU device sizes the stacks
    /// of its fibers from it ([Note] CPU fibers) and answers FunctionAttribute::local_size_bytes.
    uint64_t local_bytes = 0;
    /// Bytes of static shared arrays per block, laid out as the code generator does
    /// (ir::static_shared_bytes); the runtime checks launches and attributes against it.
    uint64_t static_shared_bytes = 0;
    /// The specialisation key of EMBER_DUMP's files (empty when nothing is dumped).
    std::string dump_key;
};

/// `<kernel>.<key>.<target>.<extension>`, the name of a dump file (without its directory).
std::string dump_file_name(const std::string &kernel, const std::string &key, const TargetSpec &target,
                           std::string_view extension);
/// Dumps a stage the runtime produces (e.g. "sass") of `k` as EMBER_DUMP dumps the compiler's:
/// to stderr, or to EMBER_DUMP_DIR with `extension`.
void dump_stage_text(const CompiledKernel &k, std::string_view stage, std::string_view extension,
                     const std::string &text);

/// Verifies, lowers, optimises and emits `k` for `target`; honours EMBER_DUMP.
/// Throws `ember::CompileError` (verifier report or LLVM diagnostics in its log) on failure, and
/// `ember::LogicError` for a target this build cannot generate code for.
CompiledKernel compile(const ir::Kernel &k, const TargetSpec &target,
                       const CompileOptions &options = {});

/// One stage of `k` for `target` as text (bytes for `Stage::Obj`; on NVPTX, whose binary is
/// text, `Stage::Obj` is the PTX); for tools and tests. Honours EMBER_DUMP like `compile`.
std::string emit(const ir::Kernel &k, const TargetSpec &target, Stage stage, int opt_level = 3);

/// Code for the CPU device, loaded into this process through ORC. Move-only; the code stays
/// valid as long as the object lives.
class CpuModule {
public:
    /// Links `object` (from `compile` for a CPU target) into the process and looks up
    /// `entry_symbol`. Throws `ember::CompileError` when the object cannot be linked or the
    /// symbol is missing.
    static std::unique_ptr<CpuModule> load(const std::string &object, const std::string &entry_symbol);
    virtual ~CpuModule() = default;
    /// The kernel's entry point (see [Note] CPU kernel ABI in CpuAbi.h).
    virtual void *entry() const = 0;
    /// The address of the object's symbol `name` (a constant array: cpu_constant_symbol in
    /// CpuAbi.h), or null when the object does not define it.
    virtual void *symbol(const std::string &name) const = 0;
};

/// What the metadata note of an AMDGPU code object (`amdhsa.kernels`, code object version 5)
/// says of one kernel; -1 where it does not say.
struct AmdgpuKernelInfo {
    int vgprs = -1, sgprs = -1, agprs = -1;         ///< registers per work-item (AGPRs: gfx90a/gfx942)
    int vgpr_spills = -1, sgpr_spills = -1;         ///< registers spilled
    int wavefront_size = -1;                        ///< 64 (CDNA) or 32 (RDNA)
    int64_t private_segment_bytes = -1;             ///< scratch per work-item
    int64_t group_segment_bytes = -1;               ///< static LDS per work-group
    int64_t kernarg_segment_bytes = -1;             ///< the kernarg buffer, hidden arguments included
    int max_flat_workgroup_size = -1;
};
/// Reads `kernel`'s entry of the metadata of `code_object` (an HSACO: the binary of a kernel
/// compiled for an AMDGPU target). nullopt when the bytes are not such a code object, or when
/// its metadata has no kernel of that name (or this build has no AMDGPU target).
std::optional<AmdgpuKernelInfo> amdgpu_kernel_info(std::string_view code_object, std::string_view kernel);

namespace detail {
/// For tests of [Note] LLVM's fatal errors (Compiler.cpp): raises an LLVM fatal error with
/// `reason` the way the pipeline would meet one and returns the message the pipeline's error
/// then carries (the process goes on).
std::string llvm_fatal_error_for_testing(const std::string &reason);
} // namespace detail

/// The LLVM version ember was built with (e.g. "19.1.7").
std::string llvm_version();

/// The identity of this build of the compiler: 64 hex digits of a SHA-256 over every source of
/// compiler/, the C++ compiler and flags it was built with, and LLVM ([Note] Compiler build
/// identity in compiler/lib/BuildId.cpp). A change to any of them gives another identity; the
/// compile cache keys every entry with it. A constant computed at build time.
std::string compiler_build_id();

} // namespace ember

#endif // EMBER_COMPILER_COMPILER_H
