/// \file
/// The internal target interface: what the one, target-independent CodeGenLLVM asks of a device
/// kind (GPUCompiler's `AbstractCompilerTarget`). Each back end lives in its own .cpp behind a
/// factory; `create_target` in TargetRegistry.cpp is the single switch over `Arch`.
#ifndef EMBER_COMPILER_LIB_TARGETS_TARGETIMPL_H
#define EMBER_COMPILER_LIB_TARGETS_TARGETIMPL_H

#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/IR.h"
#include "ember/compiler/Target.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember {
// Internal to libember_compiler.so: hidden, never exported (see ember_compiler.map).
namespace detail __attribute__((visibility("hidden"))) {

/// The instructions of `m` of type T for which `want` holds, all collected before any changes
/// (the targets' `prepare_codegen` rewrites).
template <class T, class Pred> std::vector<T *> instructions_of(llvm::Module &m, Pred want) {
    std::vector<T *> found;
    for (llvm::Function &f : m)
        for (llvm::BasicBlock &bb : f)
            for (llvm::Instruction &i : bb)
                if (auto *t = llvm::dyn_cast<T>(&i); t && want(*t)) found.push_back(t);
    return found;
}

/// Makes every LLVM target this build links available to the TargetRegistry; idempotent and
/// thread-safe (std::call_once).
void initialize_llvm_targets();

/// One device kind. Hooks with a default are overridden only where a back end differs.
class Target {
public:
    explicit Target(TargetSpec spec) : spec_(std::move(spec)) {}
    virtual ~Target() = default;
    Target(const Target &) = delete;
    Target &operator=(const Target &) = delete;

    /// The spec as the user gave it (e.g. `cpu` with an empty cpu name).
    const TargetSpec &spec() const { return spec_; }

    /// The LLVM target triple (`nvptx64-nvidia-cuda`, the host's triple for the CPU).
    virtual std::string triple() const = 0;
    /// The processor and feature string passed to LLVM, after defaults are resolved (the host's
    /// processor for `cpu`). These are what the generated code depends on.
    virtual std::string llvm_cpu() const = 0;
    virtual std::string llvm_features() const = 0;

    /// A TargetMachine for `triple()`, `llvm_cpu()` and `llvm_features()`. Its data layout is the
    /// module's. The default asks LLVM's registry with PIC relocations.
    virtual llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
    create_target_machine(llvm::CodeGenOptLevel level) const;

    /// The code generator's level for the pipeline's `opt_level` (0 to 3). The default maps
    /// them to LLVM's None, Less, Default and Aggressive.
    virtual llvm::CodeGenOptLevel codegen_level(int opt_level) const;

    /// Passes of LLVM's optimisation pipeline (by LLVM's pass name, e.g. "DSEPass") that are
    /// left out for this target, for compile time: none by default; NVPTX's in [Note] NVPTX's
    /// lighter pipeline.
    virtual std::span<const std::string_view> skipped_passes() const { return {}; }

    /// The LLVM address space of `ptr<global T>` kernel parameters.
    virtual unsigned global_address_space() const { return 0; }

    /// Name of the function that holds the kernel's body (the kernel itself on GPUs).
    virtual std::string body_function_name(std::string_view kernel) const {
        return std::string(kernel);
    }
    /// Parameters appended after the kernel's own ones (the CPU's launch context pointer).
    virtual std::vector<llvm::Type *> implicit_params(llvm::LLVMContext &) const { return {}; }

    /// The value of `reg` in dimension `dim` as an i64, emitted at `b`'s insertion point in the
    /// body function.
    virtual llvm::Value *emit_special_reg(llvm::IRBuilderBase &b, ir::SpecialRegKind reg,
                                          unsigned dim) const = 0;
    /// C's fmod(a, b) on two floats of one type ([Note] IR semantics: `%` on floats), exact.
    /// The default is LLVM's frem, which the CPU back ends turn into a libm call. The builder may
    /// be left in a new block.
    virtual llvm::Value *emit_frem(llvm::IRBuilderBase &b, llvm::Value *a, llvm::Value *c) const {
        return b.CreateFRem(a, c);
    }
    /// Prints for this thread, in one call so that lines of different threads do not mix:
    /// `format` is a C printf format (a pointer to a global string) and `args` its arguments,
    /// already promoted as C varargs are (i32, i64, double, ptr). The default calls the C
    /// library's printf, which the CPU device resolves in the process.
    virtual void emit_printf(llvm::IRBuilderBase &b, llvm::Value *format,
                             llvm::ArrayRef<llvm::Value *> args) const {
        llvm::Module &m = *b.GetInsertBlock()->getModule();
        llvm::FunctionCallee printf_fn = m.getOrInsertFunction(
            "printf", llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy()}, /*isVarArg=*/true));
        std::vector<llvm::Value *> all{format};
        all.insert(all.end(), args.begin(), args.end());
        b.CreateCall(printf_fn, all);
    }
    /// Whether the target has a printf of its own (emit_printf); where not, print writes into
    /// ember's print buffer ([Note] Print buffer in ember/compiler/PrintBuffer.h).
    virtual bool has_device_printf() const { return true; }
    /// Whether print goes through ember's print buffer: without a device printf, or where the
    /// compile asks (CompileOptions::print_to_buffer).
    bool print_to_buffer() const { return print_to_buffer_ || !has_device_printf(); }
    void set_print_to_buffer(bool on) { print_to_buffer_ = on; }
    /// A block-wide barrier, or a cluster-wide one ([Note] IR semantics: Clusters); fails for
    /// targets that cannot run one. `kernel` is for messages.
    virtual llvm::Error emit_barrier(llvm::IRBuilderBase &b, std::string_view kernel,
                                     ir::BarrierScope scope) const = 0;

    /// The address space of shared memory (3 on NVPTX).
    virtual unsigned shared_address_space() const { return 0; }
    /// The address of a static shared array of `count` elements of `elem`, placed `offset` bytes
    /// into the block's shared memory (offsets are assigned by the code generator, 16-aligned).
    virtual llvm::Value *emit_shared_array(llvm::IRBuilderBase &b, llvm::Type *elem, uint64_t count,
                                           uint64_t offset, const llvm::Twine &name) const = 0;
    /// The address space of constant memory (4 on NVPTX, whose loads from it are ld.const).
    virtual unsigned constant_address_space() const { return 0; }
    /// The symbol of constant array `name` in the module: what the runtime looks up
    /// (cuModuleGetGlobal on NVIDIA needs the name itself).
    virtual std::string constant_symbol(std::string_view name) const { return std::string(name); }
    /// A memory fence of `scope` ([Note] IR semantics).
    virtual void emit_fence(llvm::IRBuilderBase &b, ir::FenceScope scope) const = 0;
    /// Whether the target copies global to shared memory asynchronously ([Note] IR semantics:
    /// Asynchronous copies); where it does not, the code generator copies at once and
    /// async_commit / async_wait emit nothing.
    virtual bool has_async_copy() const { return false; }
    /// Starts copying `bytes` (4, 8 or 16) bytes from `src` (global) to `dst` (shared), both
    /// aligned to `bytes`; where `valid` (an i1, or null for always) is false, writes zeros and
    /// reads nothing. Only called where has_async_copy().
    virtual void emit_async_copy(llvm::IRBuilderBase &b, llvm::Value *dst, llvm::Value *src,
                                 unsigned bytes, llvm::Value *valid) const {
        (void)b, (void)dst, (void)src, (void)bytes, (void)valid;
        EMBER_UNREACHABLE("emit_async_copy on a target without asynchronous copies");
    }
    /// async_commit (`wait` < 0) or async_wait(wait). Only called where has_async_copy().
    virtual void emit_async_group(llvm::IRBuilderBase &b, int32_t wait) const {
        (void)b, (void)wait;
    }
    /// The address of the dynamic shared memory (sized by the launch).
    virtual llvm::Value *emit_dynamic_shared(llvm::IRBuilderBase &b, const llvm::Twine &name) const = 0;
    /// The address a load, store (`is_store`) or atomic of `bytes` bytes through a shared pointer
    /// uses, given its computed address `addr`. The default uses `addr` (GPUs keep shared memory
    /// apart from everything else); the CPU device checks it against the block's shared memory
    /// and reports an access outside it ([Note] CPU kernel memory). The builder may be left in a
    /// new block.
    virtual llvm::Value *emit_shared_access_check(llvm::IRBuilderBase &b, llvm::Value *addr, unsigned bytes,
                                                  bool is_store) const {
        (void)b, (void)bytes, (void)is_store;
        return addr;
    }

    /// A warp operation ([Note] IR semantics). Shuffles get and return the value's bits as an
    /// i32 or i64 and an i32 lane; ballot returns i32; warp_any/warp_all get and return i1.
    virtual llvm::Value *emit_warp(llvm::IRBuilderBase &b, ir::WarpOp op, llvm::Value *value,
                                   llvm::Value *lane) const = 0;

    /// Why the target cannot run the asynchronous tensor operation `op` (an ir::Wgmma,
    /// ir::TensorSync, ir::MBarrier, ir::TmaLoad or a cluster's ir::Barrier), "" when it can;
    /// asked before emission, as
    /// matrix_op_problem. By default none runs: they need Hopper's tensor cores and tensor memory
    /// accelerator, or the CPU device's emulation.
    virtual std::string async_tensor_problem(const ir::StmtNode &op) const {
        (void)op;
        return "needs an NVIDIA GPU of compute capability 9.0 (sm_90a) or the CPU device, and the "
               "target is " +
               spec().to_string();
    }
    /// wgmma ([Note] IR semantics: Warpgroup matrix multiply-accumulate): `a` and `bv` are the
    /// shared-memory addresses of A and B; `acc` holds the accumulators' values (f32x4) and
    /// receives the new ones.
    virtual void emit_wgmma(llvm::IRBuilderBase &b, const ir::Wgmma &op, llvm::Value *a,
                            llvm::Value *bv, std::vector<llvm::Value *> &acc) const {
        (void)b, (void)op, (void)a, (void)bv, (void)acc;
        EMBER_UNREACHABLE("emit_wgmma on a target without wgmma");
    }
    /// wgmma.fence, commit, wait and fence.proxy.async; `acc` as for emit_wgmma (the values pass
    /// through, ordered after the operation).
    virtual void emit_tensor_sync(llvm::IRBuilderBase &b, const ir::TensorSync &op,
                                  std::vector<llvm::Value *> &acc) const {
        (void)b, (void)op, (void)acc;
        EMBER_UNREACHABLE("emit_tensor_sync on a target without it");
    }
    /// An mbarrier operation on the shared u64 at `bar`; `value` an i32 (null for arrive; the
    /// block's rank in the cluster for arrive_cluster).
    virtual void emit_mbarrier(llvm::IRBuilderBase &b, ir::MBarrierOp op, llvm::Value *bar,
                               llvm::Value *value) const {
        (void)b, (void)op, (void)bar, (void)value;
        EMBER_UNREACHABLE("emit_mbarrier on a target without mbarriers");
    }
    /// tma_load: `dst` and `bar` shared addresses, `map` the tensor map's global address, `x`
    /// and `y` i32 coordinates, `multicast` null or the i16 mask of the cluster's blocks.
    virtual void emit_tma_load(llvm::IRBuilderBase &b, llvm::Value *dst, llvm::Value *map,
                               llvm::Value *x, llvm::Value *y, llvm::Value *bar,
                               llvm::Value *multicast) const {
        (void)b, (void)dst, (void)map, (void)x, (void)y, (void)bar, (void)multicast;
        EMBER_UNREACHABLE("emit_tma_load on a target without a tensor memory accelerator");
    }

    /// Why the target cannot run the warp matrix operation `op` (an ir::Mma or ir::MatrixLoad),
    /// "" when it can: the processor it needs. The code generator asks before emitting a kernel
    /// and fails its compile with the answer. Every target can by default: where emit_mma and
    /// emit_matrix_load return nullptr, the code generator builds the operations from the
    /// target's block matrix instruction (mma_block_k) or from warp shuffles ([Note] Matrix
    /// operations from shuffles in CodeGenLLVM.cpp).
    virtual std::string matrix_op_problem(const ir::ExprNode &op) const {
        (void)op;
        return "";
    }
    /// A warp matrix multiply-accumulate ([Note] IR semantics: Matrix multiply-accumulate) of the
    /// fragments `a`, `bv` and `c` (LLVM vectors of the IR types): the result fragment, or
    /// nullptr for the code generator's shuffles.
    virtual llvm::Value *emit_mma(llvm::IRBuilderBase &b, const ir::Mma &op, llvm::Value *a,
                                  llvm::Value *bv, llvm::Value *c) const {
        (void)b, (void)op, (void)a, (void)bv, (void)c;
        return nullptr;
    }
    /// The k of the target's block matrix instruction for mma inputs `input` ([Note] Matrix
    /// multiply-accumulate from 4 x 4 blocks in CodeGenLLVM.cpp): 16 independent products of a
    /// 4 x k and a k x 4 block added to 4 x 4 f32 blocks, block b on lanes 4b to 4b + 3, lane
    /// 4b + i holding row i of its A block, lane 4b + j column j of its B block and, in element r,
    /// D(r, j) of its block. 0 where there is none (the default), and for targets whose emit_mma
    /// answers.
    virtual unsigned mma_block_k(ir::MmaInput input) const {
        (void)input;
        return 0;
    }
    /// That instruction on this lane's operands: `a` and `bv` vectors of mma_block_k elements of
    /// the input's type (f32 for tf32, with the 13 low mantissa bits cleared), `c` an f32x4.
    virtual llvm::Value *emit_mma_block(llvm::IRBuilderBase &b, ir::MmaInput input, llvm::Value *a,
                                        llvm::Value *bv, llvm::Value *c) const {
        (void)b, (void)input, (void)a, (void)bv, (void)c;
        EMBER_UNREACHABLE("emit_mma_block on a target without block matrix instructions");
    }
    /// ldmatrix ([Note] IR semantics: Matrix loads): `row` is this lane's row address in shared
    /// memory (the element `ptr[index]`); the lane's vector, or nullptr for the code generator's
    /// shuffles.
    virtual llvm::Value *emit_matrix_load(llvm::IRBuilderBase &b, const ir::MatrixLoad &op,
                                          llvm::Value *row) const {
        (void)b, (void)op, (void)row;
        return nullptr;
    }

    /// The hardware approximation of the fast_ math function `op` (fast_exp, ...) of the f32 or
    /// f64 value `x`, or nullptr where the target has none (the code generator then calls the
    /// accurate function). Error bounds of what a target returns are published in docs/math.md.
    virtual llvm::Value *emit_fast_math(llvm::IRBuilderBase &b, ir::Intrinsic op, llvm::Value *x) const {
        (void)b, (void)op, (void)x;
        return nullptr;
    }

    /// An atomic of block or system scope ([Note] IR semantics: Atomic) at `addr`, returning the
    /// old value; `compare` is null except for cas. nullptr where LLVM's atomic instructions
    /// (device scope) already serve every scope, as on the CPU, whose atomics are system-wide.
    virtual llvm::Value *emit_scoped_atomic(llvm::IRBuilderBase &b, ir::AtomicOp op, ir::Type type,
                                            llvm::Value *addr, llvm::Value *value, llvm::Value *compare,
                                            ir::FenceScope scope) const {
        (void)b, (void)op, (void)type, (void)addr, (void)value, (void)compare, (void)scope;
        return nullptr;
    }

    /// The LLVM sync scope of an atomic of ember's `scope` that the code generator emits itself
    /// (every scope where emit_scoped_atomic returns nullptr). The default, LLVM's system scope,
    /// is right for every target and the strongest; AMDGPU narrows it to `workgroup`/`agent`.
    virtual llvm::SyncScope::ID atomic_sync_scope(llvm::LLVMContext &c, ir::FenceScope scope) const {
        (void)c, (void)scope;
        return llvm::SyncScope::System;
    }

    /// Whether the device faults by itself on a misaligned vector access ([Note] IR semantics:
    /// Vector memory), as NVIDIA GPUs do (CUDA_ERROR_MISALIGNED_ADDRESS). Where it does not, the
    /// code generator checks the address of every vector access, calls emit_misaligned_access on
    /// the misaligned path, and then carries the access out unaligned.
    virtual bool faults_on_misaligned_access() const { return false; }

    /// Whether the target has an fma instruction of this narrow float type that rounds once
    /// (f16, bf16). Without one the code generator computes it in f64 ([Note] Half-precision fma
    /// in CodeGenLLVM.cpp), since LLVM would widen it to f32 and round twice.
    virtual bool has_fma(ir::ScalarType) const { return false; }
    /// Whether the operand of a vector fpext is frozen first, so that the back end cannot fold
    /// a load into the conversion (freeze is free in machine code). LLVM 19's NVPTX back end
    /// declares the extending float vector loads it cannot lower illegal only up to 4 lanes (f32
    /// to f64) or 8 (f16, bf16): fpext(load <8 x float>) became invalid PTX (ld.v2.f32 into
    /// f64 registers), fpext(load <16 x half>) a b16 load into f32 registers that reads the bits
    /// as the value. Found by ember-difftest on the H200.
    virtual bool shield_vector_fpext() const { return false; }
    /// Reports a misaligned vector access of `bytes` bytes at `addr` (which needed `align`) so
    /// that the launch fails. The default traps (the launch fails without naming the address);
    /// the CPU device records it for a LaunchError.
    virtual void emit_misaligned_access(llvm::IRBuilderBase &b, llvm::Value *addr, unsigned align,
                                        unsigned bytes, bool is_store) const {
        (void)addr, (void)align, (void)bytes, (void)is_store;
        b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
    }

    /// What the code generator learnt about the kernel, for finish_module.
    struct KernelFacts {
        uint64_t static_shared_bytes = 0;
        bool uses_barrier = false;
        bool uses_warp_ops = false;
        /// Cluster barriers, remote mbarrier arrivals or multicast copies: the CPU device runs
        /// the blocks of a cluster together ([Note] CPU fibers).
        bool uses_cluster = false;
        bool uses_dynamic_shared = false;
        ir::LaunchBounds bounds; ///< the kernel's ([Note] IR semantics: Launch bounds)
    };
    /// Turns the body function into what the device loads: kernel annotations on NVPTX, the
    /// exported entry wrapper of [Note] CPU kernel ABI on the CPU.
    virtual llvm::Error finish_module(llvm::Module &, llvm::Function &body, const KernelFacts &) const {
        (void)body;
        return llvm::Error::success();
    }

    /// Rewrites the optimised module just before LLVM's code generator runs on it, for defects of
    /// LLVM's own back end or of what it makes of the module (NVPTX: the notes from [Note] LLVM
    /// 19's NVPTX back end and sitofp of i1 to [Note] Float to integer conversions on NVPTX, and
    /// [Note] ptxas and copysign). What the `llvm-opt` stage prints is the module after this.
    virtual void prepare_codegen(llvm::Module &) const {}

    /// Rewrites the assembly text LLVM's code generator produced, for defects of the target's
    /// own tool chain that LLVM cannot know about (NVPTX: [Note] ptxas and integer negation, abs and
    /// 16-bit min/max).
    /// Applied to the `asm` stage and, where the binary is assembly, to the binary.
    virtual std::string patch_assembly(std::string text) const { return text; }

    /// What the portable binary is: assembly (PTX text on NVPTX) or an object file (a
    /// relocatable ELF object on the CPU).
    virtual llvm::CodeGenFileType binary_file_type() const = 0;

    /// The portable binary the runtime loads. The default runs LLVM's code generator for
    /// `binary_file_type()`.
    virtual llvm::Expected<std::string> emit_binary(llvm::Module &m, llvm::TargetMachine &tm) const;

    /// Everything about the target that can change emit_binary()'s bytes: the triple, the
    /// processor and the features after defaults are resolved (the host's for `cpu`), e.g.
    /// `x86_64-pc-linux-gnu;znver4;+avx2,...` or `nvptx64-nvidia-cuda;sm_90;+ptx80`. STYLE 8.8:
    /// the compile cache hashes it next to the IR, the options, the compiler's build identity and
    /// the LLVM version (through target_cache_key in CacheSupport.h).
    virtual std::string cache_key() const;

private:
    TargetSpec spec_;
    bool print_to_buffer_ = false;
};

/// The processor names LLVM's back end for `triple` knows, in its order (empty when the back end
/// is not linked).
std::vector<std::string> known_llvm_cpus(const std::string &triple);

/// TargetUnavailable naming `spec` and the accepted names when `cpu` is not a processor of
/// `triple` or `features` holds an unknown `+feature`/`-feature`. LLVM itself would only print
/// a warning and carry on with defaults.
llvm::Error check_cpu_and_features(const TargetSpec &spec, const std::string &triple,
                                   const std::string &cpu, const std::string &features);

/// Runs LLVM's code generator on `m` (legacy pass manager) and returns the text or object bytes.
llvm::Expected<std::string> emit_with_target_machine(llvm::Module &m, llvm::TargetMachine &tm,
                                                     llvm::CodeGenFileType type);

/// The host processor's features as an LLVM feature string (`+avx2,+fma,-avx512f,...`), sorted.
std::string host_cpu_features();

/// The processor that `cpu` targets generate code for: LLVM's name for it and its feature string.
struct HostCpu {
    std::string name, features;
};
/// This host's processor (getHostCPUName, host_cpu_features), found once per process; or the
/// override set for a test.
HostCpu host_cpu();
/// Test hook (set_matrix_path_for_testing): how the code generator builds the warp matrix
/// operations; anything but native ignores the targets' emit_mma, mma_block_k and
/// emit_matrix_load.
MatrixPath forced_matrix_path();
void force_matrix_path(MatrixPath path);

/// Test hook (set_host_cpu_for_testing): host_cpu() returns `cpu` until it is reset with nullopt.
void set_host_cpu_override(std::optional<HostCpu> cpu);

/// Factories, one per back end. A back end that was not built returns TargetUnavailable. With
/// `validate` false the processor and features are not checked against LLVM's lists
/// (check_cpu_and_features, which costs milliseconds the first time): for cache_key() only.
llvm::Expected<std::unique_ptr<Target>> new_nvptx_target(const TargetSpec &spec, bool validate = true);
llvm::Expected<std::unique_ptr<Target>> new_cpu_target(const TargetSpec &spec, bool validate = true);
llvm::Expected<std::unique_ptr<Target>> new_amdgpu_target(const TargetSpec &spec, bool validate = true);

/// A GPU's static shared array: an internal, uninitialised, 16-aligned global of `count` `elem`s
/// in address space `space`.
llvm::Value *internal_shared_array(llvm::IRBuilderBase &b, llvm::Type *elem, uint64_t count, const llvm::Twine &name,
                                   unsigned space);
/// The GPUs' dynamic shared memory: the module's zero-length external array `name` of address
/// space `space`, 16-aligned, which the driver places after the static shared arrays (CUDA's and
/// HIP's `extern __shared__`); one per module.
llvm::Value *external_shared_array(llvm::IRBuilderBase &b, const llvm::Twine &name, unsigned space);

/// The single switch over `spec.arch`.
llvm::Expected<std::unique_ptr<Target>> create_target(const TargetSpec &spec, bool validate = true);

} // namespace detail
} // namespace ember

#endif // EMBER_COMPILER_LIB_TARGETS_TARGETIMPL_H
