/// \file
/// CpuModule: CPU kernels (relocatable objects) linked into this process through one ORC LLJIT.
#include "ember/compiler/Compiler.h"

#include "CpuFibers.h"
#include "ember/compiler/CpuAbi.h"

#include "LLVMError.h"
#include "targets/TargetImpl.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <mutex>

namespace ember {
namespace {

// [Note] CPU floating-point builtins
// ==================================
// Without native f16/bf16 conversions (F16C, AVX512-BF16), LLVM's x86-64 and AArch64 back ends
// call compiler-rt's conversion helpers. libgcc 12 has the f16 ones but no bf16 ones, and older
// runtimes have neither, so ember defines all of them in every kernel's JITDylib (they take
// precedence over the process's): the results do not depend on the host's runtime libraries.
// Both ABIs pass a half/bfloat argument or result in the low 16 bits of the first floating-point
// register, which is where a `float` carrier puts the low 16 bits of its bit pattern.
#if defined(__x86_64__) || defined(__aarch64__)
#define EMBER_CPU_BUILTINS 1

float carrier(uint16_t bits) {
    const uint32_t u = bits;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t payload(float carrier_value) {
    uint32_t u;
    std::memcpy(&u, &carrier_value, sizeof u);
    return static_cast<uint16_t>(u);
}

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

/// `d` rounded to float toward zero, with the last bit set when inexact ("round to odd"): a
/// second rounding to a format at least 2 bits narrower is then correctly rounded.
float round_to_odd(double d) {
    if (std::isnan(d) || std::isinf(d)) return static_cast<float>(d);
    float f = static_cast<float>(d);
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    if (static_cast<double>(f) == d) return f;
    const uint32_t u = bits_of(f) | 1u;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t float_to_bf16(float f) {
    const uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u); // qNaN
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); // nearest, ties even
}

uint16_t float_to_f16(float f) {
    const uint32_t u = bits_of(f);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu); // NaN, quiet
    if (a >= 0x477ff000u) return sign | 0x7c00u; // rounds to >= 65520: infinity
    if (a < 0x38800000u) {                       // below 2^-14: subnormal half or zero
        if (a < 0x33000000u) return sign;        // below half the smallest subnormal
        const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
        const unsigned shift = 126 - (a >> 23); // 14 + (113 - exponent)
        const uint32_t value = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        return sign | static_cast<uint16_t>(value + (rest > half || (rest == half && (value & 1u))));
    }
    const uint32_t rebased = a - 0x38000000u; // exponent 127 -> 15
    const uint32_t value = rebased >> 13, rest = rebased & 0x1fffu;
    return sign | static_cast<uint16_t>(value + (rest > 0x1000u || (rest == 0x1000u && (value & 1u))));
}

float f16_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float magnitude;
    if (exp == 0x1f)
        magnitude = mant ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
    else if (exp == 0)
        magnitude = std::ldexp(static_cast<float>(mant), -24);
    else
        magnitude = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
    uint32_t u = bits_of(magnitude) | sign;
    if (exp == 0x1f && mant) u |= mant << 13; // keep the NaN payload
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

float ember_truncsfbf2(float f) { return carrier(float_to_bf16(f)); }
float ember_truncdfbf2(double d) { return carrier(float_to_bf16(round_to_odd(d))); }
float ember_truncsfhf2(float f) { return carrier(float_to_f16(f)); }
float ember_truncdfhf2(double d) { return carrier(float_to_f16(round_to_odd(d))); }
float ember_extendhfsf2(float h) { return f16_to_float(payload(h)); }
double ember_extendhfdf2(float h) { return f16_to_float(payload(h)); }

struct Builtin {
    const char *name;
    void *address;
};
const Builtin cpu_builtins[] = {
    {"__truncsfbf2", reinterpret_cast<void *>(&ember_truncsfbf2)},
    {"__truncdfbf2", reinterpret_cast<void *>(&ember_truncdfbf2)},
    {"__truncsfhf2", reinterpret_cast<void *>(&ember_truncsfhf2)},
    {"__truncdfhf2", reinterpret_cast<void *>(&ember_truncdfhf2)},
    {"__extendhfsf2", reinterpret_cast<void *>(&ember_extendhfsf2)},
    {"__extendhfdf2", reinterpret_cast<void *>(&ember_extendhfdf2)},
};
#endif

/// Called by generated code on a misaligned vector access ([Note] IR semantics: Vector memory):
/// records the first one of the launch in its CpuFault; the runtime throws after the launch.
void ember_cpu_misaligned(CpuFault *fault, uint64_t address, uint32_t alignment, uint32_t bytes,
                          uint32_t is_store, int64_t tx, int64_t ty, int64_t tz, int64_t bx, int64_t by,
                          int64_t bz) {
    if (!fault) { // a launch without a record (a test calling the entry directly): say it at least
        std::fprintf(stderr, "ember: misaligned %u-byte vector %s at 0x%llx (needs %u-byte alignment)\n", bytes,
                     is_store ? "store" : "load", static_cast<unsigned long long>(address), alignment);
        return;
    }
    bool expected = false;
    if (!fault->raised.compare_exchange_strong(expected, true)) return;
    fault->address = address;
    fault->alignment = alignment;
    fault->bytes = bytes;
    fault->is_store = is_store != 0;
    fault->thread_idx[0] = tx, fault->thread_idx[1] = ty, fault->thread_idx[2] = tz;
    fault->block_idx[0] = bx, fault->block_idx[1] = by, fault->block_idx[2] = bz;
}

/// The process-wide JIT. It is created on first use and deliberately never destroyed: a
/// CpuModule held by a static object may be released after static destructors have run, and
/// must still find its ExecutionSession. The OS reclaims everything at exit.
struct Jit {
    llvm::orc::LLJIT *jit = nullptr;
    std::string error; // why creating it failed
};

/// The IR compiler of the process JIT, which ember never uses: kernels arrive as objects compiled
/// ahead (Compiler.cpp). LLJIT's default one builds a second TargetMachine (about half of the JIT's
/// start, which a warm process pays before its first kernel), so this one stands in.
class ObjectsOnly final : public llvm::orc::IRCompileLayer::IRCompiler {
public:
    ObjectsOnly() : IRCompiler(llvm::orc::IRSymbolMapper::ManglingOptions()) {}
    llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module &) override {
        return llvm::make_error<llvm::StringError>("ember's CPU JIT links objects only, not LLVM IR",
                                                   llvm::inconvertibleErrorCode());
    }
};

const Jit &process_jit() {
    static const Jit instance = [] {
        detail::initialize_llvm_targets();
        Jit j;
        auto created =
            llvm::orc::LLJITBuilder()
                .setCompileFunctionCreator(
                    [](llvm::orc::JITTargetMachineBuilder)
                        -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                        return std::make_unique<ObjectsOnly>();
                    })
                .create();
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

    void *symbol(const std::string &name) const override {
        // The object's JITDylib (its generator could also find a process symbol of that name;
        // constant arrays' symbols are prefixed so that none exists).
        auto found = jit_->lookup(*jd_, name);
        if (!found) {
            llvm::consumeError(found.takeError());
            return nullptr;
        }
        return found->toPtr<void *>();
    }

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
    {
        // The fiber runtime for kernels with barriers ([Note] CPU fibers), the kernel stacks and
        // shared memory ([Note] CPU kernel memory), and the reports of faulting accesses.
        llvm::orc::SymbolMap fibers;
        const std::pair<const char *, void *> entries[] = {
            {"__ember_cpu_enter", reinterpret_cast<void *>(&detail::ember_cpu_enter)},
            {"__ember_cpu_shared_fault", reinterpret_cast<void *>(&detail::ember_cpu_shared_fault)},
            {"__ember_cpu_run_block", reinterpret_cast<void *>(&detail::ember_cpu_run_block)},
            {"__ember_cpu_run_cluster", reinterpret_cast<void *>(&detail::ember_cpu_run_cluster)},
            {"__ember_cpu_barrier", reinterpret_cast<void *>(&detail::ember_cpu_barrier)},
            {"__ember_cpu_cluster_barrier",
             reinterpret_cast<void *>(&detail::ember_cpu_cluster_barrier)},
            {"__ember_cpu_warp", reinterpret_cast<void *>(&detail::ember_cpu_warp)},
            {"__ember_cpu_mma", reinterpret_cast<void *>(&detail::ember_cpu_mma)},
            {"__ember_cpu_ldmatrix", reinterpret_cast<void *>(&detail::ember_cpu_ldmatrix)},
            {"__ember_cpu_wgmma", reinterpret_cast<void *>(&detail::ember_cpu_wgmma)},
            {"__ember_cpu_mbarrier", reinterpret_cast<void *>(&detail::ember_cpu_mbarrier)},
            {"__ember_cpu_tma_load", reinterpret_cast<void *>(&detail::ember_cpu_tma_load)},
            {"__ember_cpu_misaligned", reinterpret_cast<void *>(&ember_cpu_misaligned)},
        };
        for (const auto &[name, address] : entries)
            fibers[jit.mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                                 llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
        if (llvm::Error err = jd->define(llvm::orc::absoluteSymbols(std::move(fibers)))) {
            llvm::consumeError(jit.getExecutionSession().removeJITDylib(*jd));
            return err;
        }
    }
#ifdef EMBER_CPU_BUILTINS
    llvm::orc::SymbolMap builtins;
    for (const Builtin &b : cpu_builtins)
        builtins[jit.mangleAndIntern(b.name)] = {
            llvm::orc::ExecutorAddr::fromPtr(b.address),
            llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
    if (llvm::Error err = jd->define(llvm::orc::absoluteSymbols(std::move(builtins)))) {
        llvm::consumeError(jit.getExecutionSession().removeJITDylib(*jd));
        return err;
    }
#endif

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
