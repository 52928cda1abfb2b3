/// \file
/// `create_target`, the one switch over target kinds, and the hooks' shared defaults.
#include "TargetImpl.h"

#include "../LLVMError.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <mutex>

namespace ember::detail {

namespace {
std::atomic<MatrixPath> matrix_path{MatrixPath::native};
} // namespace

MatrixPath forced_matrix_path() { return matrix_path.load(std::memory_order_relaxed); }
void force_matrix_path(MatrixPath path) { matrix_path.store(path, std::memory_order_relaxed); }

void initialize_llvm_targets() {
    static std::once_flag once;
    std::call_once(once, [] {
#ifdef EMBER_WITH_NVPTX
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        // [Note] 32-bit shared memory addresses. Shared (and local and constant) memory is at
        // most 228 KiB per block, so its addresses fit in 32 bits; LLVM's NVPTX back end takes
        // them as 64-bit by default, which costs a 64-bit register and 64-bit arithmetic for
        // every shared-memory address (nvcc uses 32). `nvptx-short-ptr` makes those pointers 32
        // bits in the data layout of every NVPTX target machine (p3:32:32, p4, p5), before the
        // first one is created. The option is the statically linked LLVM's own, hidden inside
        // libember_compiler, so no other LLVM in the process sees it.
        auto &options = llvm::cl::getRegisteredOptions();
        if (auto it = options.find("nvptx-short-ptr"); it != options.end())
            it->second->addOccurrence(0, "nvptx-short-ptr", "true");
#endif
#ifdef EMBER_WITH_AMDGPU
        LLVMInitializeAMDGPUTargetInfo();
        LLVMInitializeAMDGPUTarget();
        LLVMInitializeAMDGPUTargetMC();
        LLVMInitializeAMDGPUAsmPrinter();
        // The object streamer parses inline assembly (AMDGPUTarget's arithmetic fences are
        // inline asm) with the target's assembly parser: without it LLVM stops with "Inline asm
        // not supported by this streamer" (1 kernel in 10 of ember-difftest's, compiled for
        // gfx942 and gfx1100).
        LLVMInitializeAMDGPUAsmParser();
#endif
        // The CPU device generates code for the host only, whose back end CMake links.
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
        llvm::InitializeNativeTargetAsmParser();
    });
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
Target::create_target_machine(llvm::CodeGenOptLevel level) const {
    initialize_llvm_targets();
    std::string error;
    const std::string tt = triple();
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(tt, error);
    if (!target)
        return make_target_unavailable("target '" + spec().to_string() + "' (" + tt +
                                       ") is not available in this LLVM: " + error);
    llvm::TargetOptions options;
    // [Note] IR semantics: no contraction of a*b+c. The default (Standard) would let back ends
    // fuse llvm.fmuladd only, which we never emit; Strict says it outright. The `contract` flag
    // of fp_contract(fast) kernels still fuses, instruction by instruction.
    options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        tt, llvm_cpu(), llvm_features(), options, llvm::Reloc::PIC_, std::nullopt, level));
    if (!tm)
        return make_compile_failure("LLVM could not create a target machine for '" +
                                    spec().to_string() + "' (" + tt + ")");
    return tm;
}

llvm::CodeGenOptLevel Target::codegen_level(int opt_level) const {
    switch (opt_level) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
    }
}

llvm::Expected<std::string> Target::emit_binary(llvm::Module &m, llvm::TargetMachine &tm) const {
    auto binary = emit_with_target_machine(m, tm, binary_file_type());
    if (binary && binary_file_type() == llvm::CodeGenFileType::AssemblyFile)
        return patch_assembly(std::move(*binary));
    return binary;
}

std::string Target::cache_key() const {
    return triple() + ";" + llvm_cpu() + ";" + llvm_features();
}

namespace {

std::unique_ptr<llvm::MCSubtargetInfo> subtarget_info(const std::string &triple) {
    initialize_llvm_targets();
    std::string error;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target) return nullptr;
    return std::unique_ptr<llvm::MCSubtargetInfo>(
        target->createMCSubtargetInfo(triple, /*CPU=*/"", /*Features=*/""));
}

std::string join(const std::vector<std::string> &items) {
    std::string out;
    for (const std::string &s : items) out += (out.empty() ? "" : " ") + s;
    return out;
}

} // namespace

std::vector<std::string> known_llvm_cpus(const std::string &triple) {
    std::vector<std::string> cpus;
    if (auto sti = subtarget_info(triple))
        for (const llvm::SubtargetSubTypeKV &kv : sti->getAllProcessorDescriptions())
            cpus.emplace_back(kv.Key);
    return cpus;
}

llvm::Error check_cpu_and_features(const TargetSpec &spec, const std::string &triple,
                                   const std::string &cpu, const std::string &features) {
    auto sti = subtarget_info(triple);
    if (!sti)
        return make_target_unavailable("target '" + spec.to_string() + "': LLVM has no back end for " +
                                       triple);
    if (!cpu.empty() && !sti->isCPUStringValid(cpu))
        return make_target_unavailable("target '" + spec.to_string() + "': LLVM " +
                                       LLVM_VERSION_STRING + " does not know the processor '" + cpu +
                                       "'; known processors: " + join(known_llvm_cpus(triple)));
    llvm::StringRef rest(features);
    while (!rest.empty()) {
        auto [item, tail] = rest.split(',');
        rest = tail;
        if (item.empty()) continue;
        llvm::StringRef name = item.drop_front();
        bool known = false;
        for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
            known = known || name == kv.Key;
        if ((item.front() != '+' && item.front() != '-') || !known)
            return make_target_unavailable("target '" + spec.to_string() + "': '" + item.str() +
                                           "' is not a feature LLVM knows for " + triple +
                                           " (features are written +name or -name)");
        // LLVM's x86 back end aborts the process on 64-bit code for a subtarget without 64bit.
        if (item == "-64bit" && llvm::StringRef(triple).starts_with("x86_64"))
            return make_target_unavailable("target '" + spec.to_string() + "': '-64bit' cannot be turned off: " +
                                           "the code is for " + triple + ", a 64-bit processor");
    }
    return llvm::Error::success();
}

llvm::Expected<std::string> emit_with_target_machine(llvm::Module &m, llvm::TargetMachine &tm,
                                                     llvm::CodeGenFileType type) {
    llvm::SmallString<0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (tm.addPassesToEmitFile(pm, os, /*DwoOut=*/nullptr, type))
        return make_compile_failure("LLVM's " + tm.getTargetTriple().str() +
                                    " back end cannot emit this file type");
    pm.run(m);
    return std::string(buffer.str());
}

llvm::Value *internal_shared_array(llvm::IRBuilderBase &b, llvm::Type *elem, uint64_t count, const llvm::Twine &name,
                                   unsigned space) {
    llvm::Module &m = *b.GetInsertBlock()->getModule();
    auto *ty = llvm::ArrayType::get(elem, count);
    auto *g = new llvm::GlobalVariable(m, ty, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(ty), name, nullptr, llvm::GlobalValue::NotThreadLocal, space);
    g->setAlignment(llvm::Align(16));
    return g;
}

llvm::Value *external_shared_array(llvm::IRBuilderBase &b, const llvm::Twine &name, unsigned space) {
    llvm::Module &m = *b.GetInsertBlock()->getModule();
    if (llvm::GlobalVariable *g = m.getNamedGlobal(name.str())) return g;
    auto *ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
    auto *g = new llvm::GlobalVariable(m, ty, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage, nullptr, name,
                                       nullptr, llvm::GlobalValue::NotThreadLocal, space);
    g->setAlignment(llvm::Align(16));
    return g;
}

llvm::Expected<std::unique_ptr<Target>> create_target(const TargetSpec &spec, bool validate) {
    switch (spec.arch) {
    case Arch::NVPTX:
        return new_nvptx_target(spec, validate);
    case Arch::CPU:
        return new_cpu_target(spec, validate);
    case Arch::AMDGPU:
        return new_amdgpu_target(spec, validate);
    }
    EMBER_UNREACHABLE("unknown Arch");
}

} // namespace ember::detail
