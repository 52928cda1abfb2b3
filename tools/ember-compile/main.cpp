/// \file
/// ember-compile: reads kernels in textual IR and prints one stage of the pipeline for a target.
#include "ember/Error.h"
#include "ember/compiler/Bundle.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Target.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char *usage_text =
    R"(usage: ember-compile [FILE|-] --emit=STAGE [--target=SPEC] [-O0|-O1|-O2|-O3]
                     [-o FILE] [--kernel=NAME]
       ember-compile --bundle DIR [--diff]

Reads kernels in ember's textual IR from FILE (or stdin when FILE is '-' or missing) and writes
one stage of the compilation pipeline for every kernel (or only NAME).

  --emit=STAGE    ir        the verified IR, printed canonically
                  llvm      LLVM IR after code generation and target finishing
                  llvm-opt  LLVM IR after the optimisation pipeline
                  asm       PTX (nvptx) or host assembly (cpu)
                  obj       the binary a runtime loads: PTX text (nvptx) or a relocatable
                            object (cpu); one kernel only
  --target=SPEC   nvptx:sm_90, cpu (the host, the default), cpu:<llvm cpu name>
  -O0 .. -O3      optimisation level (default -O3)
  -o FILE         write to FILE instead of stdout
  --kernel=NAME   only the kernel NAME
  --bundle DIR    replay the repro bundle DIR (written on a CompileError or with
                  EMBER_DUMP=bundle): compile its kernel.ir for its target and options
                  through the same stages and say whether it fails the same way
  --diff          with --bundle: compare each produced stage with the stored one
  --help          this text

Text stages written to stdout start each kernel with a line
  // ----- kernel: NAME  target: SPEC  stage: STAGE -----
which is left out with -o and for obj. Exit status: 0 success, 1 compile error, 2 usage error.
With --bundle: 0 when the replay compiles, 1 when it fails (its error on stderr).
)";

struct UsageError {
    std::string message;
};

struct Options {
    std::string input = "-";
    std::optional<ember::Stage> stage;
    ember::TargetSpec target; // cpu
    int opt_level = 3;
    std::optional<std::string> output;
    std::optional<std::string> kernel;
    bool help = false;
    std::optional<std::string> bundle;
    bool diff = false;
};

Options parse_args(int argc, char **argv) {
    Options o;
    bool have_input = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value_of = [&](const std::string &flag) -> std::optional<std::string> {
            if (arg.rfind(flag + "=", 0) == 0) return arg.substr(flag.size() + 1);
            if (arg == flag) {
                if (i + 1 >= argc) throw UsageError{flag + " needs a value"};
                return std::string(argv[++i]);
            }
            return std::nullopt;
        };
        if (arg == "--help" || arg == "-h") {
            o.help = true;
        } else if (auto v = value_of("--emit")) {
            o.stage = ember::parse_stage(*v);
            if (!o.stage)
                throw UsageError{"unknown stage '" + *v + "'; use ir, llvm, llvm-opt, asm or obj"};
        } else if (auto v = value_of("--target")) {
            try {
                o.target = ember::TargetSpec::parse(*v);
            } catch (const ember::LogicError &e) {
                throw UsageError{e.what()};
            }
        } else if (auto v = value_of("--bundle")) {
            o.bundle = *v;
        } else if (arg == "--diff") {
            o.diff = true;
        } else if (auto v = value_of("--kernel")) {
            o.kernel = *v;
        } else if (auto v = value_of("--output")) {
            o.output = *v;
        } else if (arg == "-o") {
            if (i + 1 >= argc) throw UsageError{"-o needs a file name"};
            o.output = argv[++i];
        } else if (arg.size() == 3 && arg[0] == '-' && arg[1] == 'O' && arg[2] >= '0' &&
                   arg[2] <= '3') {
            o.opt_level = arg[2] - '0';
        } else if (arg != "-" && arg.rfind("-", 0) == 0) {
            throw UsageError{"unknown option '" + arg + "'"};
        } else {
            if (have_input) throw UsageError{"more than one input file"};
            o.input = arg;
            have_input = true;
        }
    }
    if (o.diff && !o.bundle) throw UsageError{"--diff needs --bundle DIR"};
    if (o.bundle && (o.stage || have_input || o.kernel || o.output))
        throw UsageError{"--bundle DIR takes no input file, --emit, --kernel or -o: the bundle holds them"};
    if (!o.help && !o.stage && !o.bundle) throw UsageError{"missing --emit=STAGE"};
    return o;
}

std::string read_input(const std::string &path) {
    if (path == "-") {
        std::ostringstream ss;
        ss << std::cin.rdbuf();
        return ss.str();
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ember::LogicError("cannot open '" + path + "'");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// `--bundle DIR [--diff]`: replays a repro bundle ([Note] Repro bundles).
int replay(const Options &o) {
    const ember::BundleReplay r = ember::replay_bundle(*o.bundle);
    const ember::ReproBundle &s = r.stored;
    std::cout << "bundle: " << *o.bundle << "\n"
              << "kernel: " << s.kernel_name << "  target: " << s.target.to_string()
              << "  -O" << s.opt_level << "\n"
              << "stored: "
              << (s.failed_stage.empty() ? std::string("compiled") : "failed at " + s.failed_stage)
              << "\n"
              << "replay: "
              << (r.produced.failed_stage.empty() ? std::string("compiled")
                                                  : "failed at " + r.produced.failed_stage)
              << "\n";
    if (s.failed_stage == "load")
        std::cout << "note: the stored failure is the driver's PTX JIT, which offline replay does "
                     "not run; it compares the PTX instead\n";
    std::cout << "reproduced: " << (r.reproduced ? "yes" : "no") << "\n";
    if (o.diff) {
        const std::pair<const char *, std::pair<const std::string *, const std::string *>> stages[] = {
            {"llvm.ll", {&s.llvm, &r.produced.llvm}},
            {"opt.ll", {&s.llvm_opt, &r.produced.llvm_opt}},
            {s.target.arch == ember::Arch::NVPTX ? "kernel.ptx" : "kernel.s",
             {&s.assembly, &r.produced.assembly}},
        };
        for (const auto &[name, texts] : stages) {
            const std::string &stored = *texts.first, &produced = *texts.second;
            const char *verdict = stored.empty() && produced.empty() ? "absent in both"
                                  : stored.empty()                  ? "not stored"
                                  : produced.empty()                ? "not produced"
                                  : stored == produced              ? "same"
                                                                    : "differs";
            std::cout << "stage " << name << ": " << verdict << "\n";
        }
    }
    std::cout.flush();
    if (!r.produced.error.empty()) {
        std::cerr << "ember-compile: error: " << r.produced.error;
        if (r.produced.error.back() != '\n') std::cerr << "\n";
        return 1;
    }
    return 0;
}

int run(const Options &o) {
    if (o.bundle) return replay(o);
    const std::string filename = o.input == "-" ? "<stdin>" : o.input;
    ember::ir::Module module;
    try {
        module = ember::ir::parse_module(read_input(o.input), filename);
    } catch (const ember::CompileError &e) {
        std::cerr << e.what() << "\n"; // already `file:line:col: error: ...`
        return 1;
    }

    std::vector<const ember::ir::Kernel *> kernels;
    for (const ember::ir::Kernel &k : module.kernels)
        if (!o.kernel || k.name == *o.kernel) kernels.push_back(&k);
    if (o.kernel && kernels.empty()) {
        std::cerr << "ember-compile: error: no kernel named '" << *o.kernel << "' in " << filename
                  << "\n";
        return 1;
    }
    const bool binary = *o.stage == ember::Stage::Obj;
    if (binary && kernels.size() != 1)
        throw UsageError{"--emit=obj writes exactly one kernel, but " + filename + " has " +
                         std::to_string(kernels.size()) + "; pick one with --kernel=NAME"};
    const bool headers = !binary && !o.output;

    std::string out;
    for (const ember::ir::Kernel *k : kernels) {
        std::string text = ember::emit(*k, o.target, *o.stage, o.opt_level);
        if (headers) {
            out += "// ----- kernel: " + k->name + "  target: " + o.target.to_string() +
                   "  stage: " + std::string(ember::to_string(*o.stage)) + " -----\n";
        }
        out += text;
        if (!binary && !text.empty() && text.back() != '\n') out += "\n";
    }

    if (o.output) {
        std::ofstream f(*o.output, std::ios::binary | std::ios::trunc);
        f << out;
        if (!f) {
            std::cerr << "ember-compile: error: cannot write '" << *o.output << "'\n";
            return 1;
        }
        return 0;
    }
    std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
    std::cout.flush();
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    try {
        Options o = parse_args(argc, argv);
        if (o.help) {
            std::cout << usage_text;
            return 0;
        }
        return run(o);
    } catch (const UsageError &e) {
        std::cerr << "ember-compile: error: " << e.message << "\n"
                  << "run 'ember-compile --help' for usage\n";
        return 2;
    } catch (const ember::Error &e) {
        std::cerr << "ember-compile: error: " << e.what() << "\n";
        return 1;
    }
}
