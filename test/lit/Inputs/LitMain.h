/// \file
/// The lit harness for DSL programs: a test file registers kernels with EMBER_LIT_KERNEL and is
/// built into a program that prints any stage of them for any target:
///
///   lit-foo [--emit=ir|llvm|llvm-opt|asm] [--target=SPEC]... [--kernel=NAME]
///
/// Each dump is preceded by `// ----- kernel: NAME  target: SPEC  stage: STAGE -----` so that
/// FileCheck labels have a unique anchor. Kernels are traced when they are printed, so a trace
/// error (DslError) is reported on stderr with its file:line and the program exits with 1.
#ifndef EMBER_TEST_LIT_LITMAIN_H
#define EMBER_TEST_LIT_LITMAIN_H

#include "ember/ember.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/IRPrinter.h"

#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace ember::lit {

struct Entry {
    std::string name;
    std::function<ir::Kernel()> trace;
};

inline std::vector<Entry> &registry() {
    static std::vector<Entry> r;
    return r;
}

inline bool register_kernel(std::string name, std::function<ir::Kernel()> trace) {
    registry().push_back({std::move(name), std::move(trace)});
    return true;
}

inline int main(int argc, char **argv) {
    std::string emit = "ir", only;
    std::vector<std::string> targets;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--emit=", 0) == 0) emit = a.substr(7);
        else if (a.rfind("--target=", 0) == 0) targets.push_back(a.substr(9));
        else if (a.rfind("--kernel=", 0) == 0) only = a.substr(9);
        else {
            std::cerr << "usage: " << argv[0]
                      << " [--emit=ir|llvm|llvm-opt|asm] [--target=SPEC]... [--kernel=NAME]\n";
            return 2;
        }
    }
    if (targets.empty()) targets.push_back("cpu");
    std::optional<Stage> stage = parse_stage(emit);
    if (!stage || *stage == Stage::Obj) {
        std::cerr << "error: --emit must be ir, llvm, llvm-opt or asm\n";
        return 2;
    }
    int status = 0;
    for (const Entry &e : registry()) {
        if (!only.empty() && e.name != only) continue;
        try {
            ir::Kernel k = e.trace();
            if (*stage == Stage::IR) {
                std::cout << "// ----- kernel: " << e.name << "  target: -  stage: ir -----\n"
                          << ir::print(k) << std::flush;
                continue;
            }
            for (const std::string &t : targets) {
                TargetSpec spec = TargetSpec::parse(t);
                std::string text = ember::emit(k, spec, *stage);
                std::cout << "// ----- kernel: " << e.name << "  target: " << spec.to_string()
                          << "  stage: " << emit << " -----\n"
                          << text << std::flush;
            }
        } catch (const ember::Error &err) {
            std::cerr << err.what() << "\n";
            status = 1;
        }
    }
    return status;
}

} // namespace ember::lit

#define EMBER_LIT_CAT2(a, b) a##b
#define EMBER_LIT_CAT(a, b) EMBER_LIT_CAT2(a, b)
/// Registers kernel NAME traced from the remaining arguments, as `ember::kernel("NAME", ...)`.
#define EMBER_LIT_KERNEL(NAME, ...)                                                                \
    static const bool EMBER_LIT_CAT(ember_lit_registered_, NAME) =                                 \
        ::ember::lit::register_kernel(#NAME, [] { return ::ember::kernel(#NAME, __VA_ARGS__).ir(); });

/// Defines main() for a lit program.
#define EMBER_LIT_MAIN()                                                                           \
    int main(int argc, char **argv) { return ::ember::lit::main(argc, argv); }

#endif // EMBER_TEST_LIT_LITMAIN_H
