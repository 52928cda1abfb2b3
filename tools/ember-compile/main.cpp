/// \file
/// ember-compile: reads kernels in textual IR and prints one stage of the pipeline for a target.
#include "ember/Error.h"
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
  --help          this text

Text stages written to stdout start each kernel with a line
  // ----- kernel: NAME  target: SPEC  stage: STAGE -----
which is left out with -o and for obj. Exit status: 0 success, 1 compile error, 2 usage error.
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
    if (!o.help && !o.stage) throw UsageError{"missing --emit=STAGE"};
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

int run(const Options &o) {
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
