/// \file
/// libFuzzer harness: code generation for every target, from textual IR.
///
/// Input that does not parse ends in a typed ember error, as in ir_roundtrip_fuzzer. Every kernel of
/// a module that parses is compiled for every target: the binary each runtime loads (the CPU
/// device's object at O3, PTX at O3) and the O0 path (FastISel, another instruction selector) for
/// each kind of target. A target may refuse a verified kernel with a CompileError that says why
/// (e.g. a kernel parameter pointing to shared memory); but invalid LLVM IR from ember's code
/// generator, an error LLVM itself reports, an empty binary, a crash inside LLVM or a sanitizer
/// report is a finding ([Note] Fuzzing outcomes in FuzzSupport.h).
#include "FuzzSupport.h"

#include "ember/compiler/Compiler.h"
#include "ember/compiler/IRPrinter.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using ember::fuzz::finding;

struct Job {
    const char *target;
    ember::Stage stage;
    int opt_level;
};

const std::vector<Job> &jobs() {
    static const std::vector<Job> all = {
        {"cpu", ember::Stage::Obj, 3},
        {"cpu", ember::Stage::Asm, 0},
#ifdef EMBER_FUZZ_NVPTX
        {"nvptx:sm_90", ember::Stage::Asm, 3},
        {"nvptx:sm_70", ember::Stage::Asm, 0},
#endif
    };
    return all;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ember::ir::Module module;
    if (!ember::fuzz::parse_input(data, size, module)) return 0;

    for (const ember::ir::Kernel &k : module.kernels) {
        for (const Job &job : jobs()) {
            const ember::TargetSpec target = ember::TargetSpec::parse(job.target);
            const std::string what = "kernel @" + k.name + " for " + job.target + " at O" +
                                     std::to_string(job.opt_level);
            try {
                const std::string out = ember::emit(k, target, job.stage, job.opt_level);
                if (out.empty()) finding(what + ": empty output", ember::ir::print(k));
            } catch (const ember::InternalError &e) {
                finding(what + ": ember::InternalError", std::string(e.what()) + "\n--- kernel:\n" + ember::ir::print(k));
            } catch (const ember::Error &e) {
                // ember's own refusals are expected; LLVM's diagnostics and the check of the
                // generated LLVM IR (CodeGenLLVM) are not.
                const std::string_view msg = e.what();
                if (msg.find("this is a bug in ember") != std::string_view::npos ||
                    msg.find("LLVM failed to") != std::string_view::npos)
                    finding(what + ": code generation failed inside LLVM",
                            std::string(msg) + "\n--- kernel:\n" + ember::ir::print(k));
            } catch (const std::exception &e) {
                finding(what + ": an exception that is not an ember::Error", e.what());
            }
        }
    }
    return 0;
}
