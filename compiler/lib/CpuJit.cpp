/// \file
/// CpuModule: CPU kernels (relocatable objects) linked into this process through one ORC LLJIT.
#include "ember/compiler/Compiler.h"

#include "LLVMError.h"
#include "targets/TargetImpl.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <iostream>
#include <mutex>

namespace ember {
namespace {

/// The process-wide JIT. It is created on first use and deliberately never destroyed: a
/// CpuModule held by a static object may be released after static destructors have run, and
/// must still find its ExecutionSession. The OS reclaims everything at exit.
struct Jit {
    llvm::orc::LLJIT *jit = nullptr;
    std::string error; // why creating it failed
};

const Jit &process_jit() {
    static const Jit instance = [] {
        detail::initialize_llvm_targets();
        Jit j;
        auto created = llvm::orc::LLJITBuilder().create();
        if (!created) {
            j.error = llvm::toString(created.takeError());
            return j;
        }
        j.jit = created->release();
        return j;
    }();
    return instance;
}

class OrcCpuModule final : public CpuModule {
public:
    OrcCpuModule(llvm::orc::LLJIT &jit, llvm::orc::JITDylib &jd, void *entry)
        : jit_(&jit), jd_(&jd), entry_(entry) {}

    ~OrcCpuModule() override {
        // Frees the code and data of this object; never throws.
        if (llvm::Error err = jit_->getExecutionSession().removeJITDylib(*jd_))
            std::cerr << "ember: warning: releasing a CPU kernel module failed: "
                      << llvm::toString(std::move(err)) << "\n";
    }

    void *entry() const override { return entry_; }

private:
    llvm::orc::LLJIT *jit_;
    llvm::orc::JITDylib *jd_;
    void *entry_;
};

llvm::Expected<std::unique_ptr<CpuModule>> load_object(const std::string &object,
                                                       const std::string &symbol) {
    const Jit &j = process_jit();
    if (!j.jit)
        return detail::make_compile_failure("cannot start the CPU JIT (LLVM ORC)", j.error);
    llvm::orc::LLJIT &jit = *j.jit;

    // Each object gets its own JITDylib: kernels of the same name from different modules do not
    // clash, and removing one releases exactly its memory.
    static std::atomic<uint64_t> counter{0};
    auto jd = jit.createJITDylib("ember.cpu." + std::to_string(counter++) + "." + symbol);
    if (!jd) return jd.takeError();
    // libm, memcpy, ... from the process (the default links of LLJIT may already provide
    // them; the explicit generator does not depend on that default).
    auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit.getDataLayout().getGlobalPrefix());
    if (!generator) {
        llvm::consumeError(jit.getExecutionSession().removeJITDylib(*jd));
        return generator.takeError();
    }
    jd->addGenerator(std::move(*generator));

    auto cleanup_on_error = [&](llvm::Error err) -> llvm::Error {
        if (llvm::Error rm = jit.getExecutionSession().removeJITDylib(*jd))
            err = llvm::joinErrors(std::move(err), std::move(rm));
        return err;
    };
    if (llvm::Error err = jit.addObjectFile(
            *jd, llvm::MemoryBuffer::getMemBufferCopy(object, "ember-cpu-kernel-" + symbol)))
        return cleanup_on_error(std::move(err));
    auto address = jit.lookup(*jd, symbol);
    if (!address) return cleanup_on_error(address.takeError());
    return std::make_unique<OrcCpuModule>(jit, *jd, address->toPtr<void *>());
}

} // namespace

std::unique_ptr<CpuModule> CpuModule::load(const std::string &object,
                                           const std::string &entry_symbol) {
    auto module = load_object(object, entry_symbol);
    if (!module) {
        std::string log = llvm::toString(module.takeError());
        throw CompileError("cannot load the CPU kernel '" + entry_symbol + "' into the process",
                           log);
    }
    return std::move(*module);
}

} // namespace ember
