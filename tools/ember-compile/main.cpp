/// \file
/// ember-compile: reads kernels in textual IR and prints one stage of the pipeline for a target
/// (or for every target, --all-targets), and what compiling cost (--report).
#include "ember/Error.h"
#include "ember/compiler/Bundle.h"
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/FileIO.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Target.h"

#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char *usage_text =
    R"(usage: ember-compile [FILE|-] --emit=STAGE [--target=SPEC | --all-targets] [-O0|-O1|-O2|-O3]
                     [-o FILE] [--kernel=NAME] [--report]
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
  --all-targets   every target ember has: nvptx:sm_70, nvptx:sm_80, nvptx:sm_90, amdgpu:gfx90a,
                  amdgpu:gfx942, amdgpu:gfx1100 (where built with AMDGPU) and cpu (the
                  host); with -o FILE, one file per target, the target (':' as '_') put before
                  FILE's extension: -o k.s writes k.nvptx_sm_70.s, ..., k.cpu.s
  --report        print a compile report of every kernel and target to stderr: the time of
                  each stage (lower, optimise, codegen) and the sizes known without a device
                  (static shared, local and constant bytes, binary size). Registers and spills
                  are ptxas's on NVPTX, which runs when a driver loads the PTX:
                  DeviceFunction::report() or EMBER_LOG=compile give them; on AMDGPU the code
                  object's metadata says them (VGPRs, SGPRs, spills, scratch, LDS, kernarg
                  bytes, wave size). --emit may be left out with --report.
  -O0 .. -O3      optimisation level (default -O3)
  -o FILE         write to FILE instead of stdout
  --kernel=NAME   only the kernel NAME
  --bundle DIR    replay the repro bundle DIR (written on a CompileError or with
                  EMBER_DUMP=bundle): compile its kernel.ir for its target and options
                  through the same stages and say whether it fails the same way
  --diff          with --bundle: compare each produced stage with the stored one
  --help          this text
  --version       ember's and LLVM's versions, and the compiler's build identity (what the
                  compile cache keys entries with)

Text stages written to stdout start each kernel with a line
  // ----- kernel: NAME  target: SPEC  stage: STAGE -----
which is left out with -o and for obj. FILE (and stdin) must be a regular file of at most 256 MiB,
as must each file of a bundle. Exit status: 0 success, 1 compile error, an unreadable input or a
failed write (stdout, -o FILE, an EMBER_DUMP file), 2 usage error.
With --bundle: 0 when the replay compiles, 1 when it fails (its error on stderr).
)";

struct UsageError {
    std::string message;
};

struct Options {
    std::string input = "-";
    std::optional<ember::Stage> stage;
    ember::TargetSpec target; // cpu
    bool target_given = false;
    bool all_targets = false;
    bool report = false;
    int opt_level = 3;
    std::optional<std::string> output;
    std::optional<std::string> kernel;
    bool help = false;
    bool version = false;
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
        } else if (arg == "--version") {
            o.version = true;
        } else if (auto v = value_of("--emit")) {
            o.stage = ember::parse_stage(*v);
            if (!o.stage)
                throw UsageError{"unknown stage '" + *v + "'; use ir, llvm, llvm-opt, asm or obj"};
        } else if (auto v = value_of("--target")) {
            try {
                o.target = ember::TargetSpec::parse(*v);
                o.target_given = true;
            } catch (const ember::LogicError &e) {
                throw UsageError{e.what()};
            }
        } else if (auto v = value_of("--bundle")) {
            o.bundle = *v;
        } else if (arg == "--diff") {
            o.diff = true;
        } else if (arg == "--all-targets") {
            o.all_targets = true;
        } else if (arg == "--report") {
            o.report = true;
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
    if (o.bundle && (o.stage || have_input || o.kernel || o.output || o.all_targets || o.report))
        throw UsageError{"--bundle DIR takes no input file, --emit, --kernel, -o, --all-targets or --report: the "
                         "bundle holds them"};
    if (!o.help && !o.version && !o.stage && !o.bundle && !o.report) throw UsageError{"missing --emit=STAGE (or --report)"};
    if (o.all_targets && o.target_given)
        throw UsageError{"--all-targets and --target=SPEC exclude each other"};
    return o;
}

/// The input: a regular file, or stdin for '-', at most ember::max_input_file_bytes.
std::string read_input(const std::string &path) {
    if (path == "-") return ember::read_descriptor(0, "<stdin>");
    return ember::read_regular_file(path);
}

/// Writes `text` to stdout; a failed write (a full disk, a closed pipe) is an error.
void write_stdout(const std::string &text) { ember::write_descriptor(1, "stdout", text); }

/// `--bundle DIR [--diff]`: replays a repro bundle ([Note] Repro bundles).
int replay(const Options &o) {
    const ember::BundleReplay r = ember::replay_bundle(*o.bundle);
    const ember::ReproBundle &s = r.stored;
    std::string out;
    out += "bundle: " + *o.bundle + "\n" +
           "kernel: " + s.kernel_name + "  target: " + s.target.to_string() + "  -O" +
           std::to_string(s.opt_level) + "\n" + "stored: " +
           (s.failed_stage.empty() ? std::string("compiled") : "failed at " + s.failed_stage) +
           "\n" + "replay: " +
           (r.produced.failed_stage.empty() ? std::string("compiled")
                                            : "failed at " + r.produced.failed_stage) +
           "\n";
    if (s.failed_stage == "load")
        out += "note: the stored failure is the driver's PTX JIT, which offline replay does "
               "not run; it compares the PTX instead\n";
    out += std::string("reproduced: ") + (r.reproduced ? "yes" : "no") + "\n";
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
            out += std::string("stage ") + name + ": " + verdict + "\n";
        }
    }
    write_stdout(out);
    if (!r.produced.error.empty()) {
        std::cerr << "ember-compile: error: " << r.produced.error;
        if (r.produced.error.back() != '\n') std::cerr << "\n";
        return 1;
    }
    return 0;
}

/// The targets of --all-targets: every NVPTX generation ember supports, the AMDGPU processors
/// of CDNA 2 and 3 and RDNA 3 where this build has the AMDGPU back end, and the host.
std::vector<ember::TargetSpec> every_target() {
    std::vector<ember::TargetSpec> t;
    for (const char *spec : {"nvptx:sm_70", "nvptx:sm_80", "nvptx:sm_90"}) t.push_back(ember::TargetSpec::parse(spec));
    for (const char *spec : {"amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx1100"}) {
        ember::TargetSpec amd = ember::TargetSpec::parse(spec);
        if (ember::target_cache_key(amd).rfind("unavailable:", 0) != 0) t.push_back(amd);
    }
    t.push_back(ember::TargetSpec::parse("cpu"));
    return t;
}

/// `path` with `target` (':' as '_') before its extension: k.s -> k.nvptx_sm_90.s, k -> k.cpu.
std::string path_for_target(const std::string &path, const ember::TargetSpec &target) {
    std::string tag = target.to_string();
    for (char &c : tag)
        if (c == ':') c = '_';
    size_t slash = path.find_last_of('/');
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
        dot == (slash == std::string::npos ? 0 : slash + 1))
        return path + "." + tag;
    return path.substr(0, dot) + "." + tag + path.substr(dot);
}

std::string milliseconds(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
    return buf;
}

/// The offline compile report of `k` for `target`: what is known without a driver.
std::string report_line(const ember::ir::Kernel &k, const ember::TargetSpec &target, int opt_level) {
    ember::CompileOptions co;
    co.opt_level = opt_level;
    ember::CompiledKernel c = ember::compile(k, target, co);
    uint64_t const_bytes = 0;
    for (const ember::ir::ConstantGlobal &g : c.constants) const_bytes += g.bytes;
    double total = c.lower_seconds + c.optimize_seconds + c.codegen_seconds;
    std::string s = "report: kernel '" + k.name + "' " + target.to_string() + ": shared " +
                    std::to_string(ember::ir::static_shared_bytes(k)) + " B, local " +
                    std::to_string(c.local_bytes) + " B, const " + std::to_string(const_bytes) +
                    " B, binary " + std::to_string(c.binary.size()) + " B; lower " +
                    milliseconds(c.lower_seconds) + ", optimise " + milliseconds(c.optimize_seconds) +
                    ", codegen " + milliseconds(c.codegen_seconds) + ", total " + milliseconds(total) +
                    "; ";
    if (target.arch == ember::Arch::NVPTX) {
        s += "registers, spills: need a driver (ptxas runs when the PTX is loaded; run on a device: "
             "DeviceFunction::report() or EMBER_LOG=compile)";
    } else if (target.arch == ember::Arch::AMDGPU) {
        // The code object is final: its metadata note says what the back end allocated.
        if (auto info = ember::amdgpu_kernel_info(c.binary, c.kernel_name)) {
            s += "VGPRs " + std::to_string(info->vgprs) + ", SGPRs " + std::to_string(info->sgprs) +
                 (info->agprs >= 0 ? ", AGPRs " + std::to_string(info->agprs) : std::string()) + ", spilled VGPRs " +
                 std::to_string(info->vgpr_spills) + ", spilled SGPRs " + std::to_string(info->sgpr_spills) +
                 ", scratch " + std::to_string(info->private_segment_bytes) + " B, LDS " +
                 std::to_string(info->group_segment_bytes) + " B, kernarg " +
                 std::to_string(info->kernarg_segment_bytes) + " B, wave " + std::to_string(info->wavefront_size);
        } else {
            s += "registers: the code object has no metadata for the kernel";
        }
    } else {
        s += "registers, spills: n/a on the CPU";
    }
    return s;
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
    const std::vector<ember::TargetSpec> targets =
        o.all_targets ? every_target() : std::vector<ember::TargetSpec>{o.target};
    const bool binary = o.stage && *o.stage == ember::Stage::Obj;
    if (binary && kernels.size() != 1)
        throw UsageError{"--emit=obj writes exactly one kernel, but " + filename + " has " +
                         std::to_string(kernels.size()) + "; pick one with --kernel=NAME"};
    if (binary && targets.size() > 1 && !o.output)
        throw UsageError{"--emit=obj with --all-targets writes one file per target: give -o FILE"};
    const bool headers = !binary && !o.output;

    std::string out;
    for (const ember::TargetSpec &target : targets) {
        std::string target_out;
        for (const ember::ir::Kernel *k : kernels) {
            if (o.report) {
                std::cerr << report_line(*k, target, o.opt_level) << "\n";
                std::cerr.flush();
            }
            if (!o.stage) continue;
            std::string text = ember::emit(*k, target, *o.stage, o.opt_level);
            if (headers) {
                target_out += "// ----- kernel: " + k->name + "  target: " + target.to_string() +
                              "  stage: " + std::string(ember::to_string(*o.stage)) + " -----\n";
            }
            target_out += text;
            if (!binary && !text.empty() && text.back() != '\n') target_out += "\n";
        }
        if (!o.stage) continue;
        if (o.output && o.all_targets) {
            ember::write_whole_file(path_for_target(*o.output, target), target_out);
        } else {
            out += target_out;
        }
    }
    if (!o.stage || (o.output && o.all_targets)) return 0;
    if (o.output)
        ember::write_whole_file(*o.output, out);
    else
        write_stdout(out);
    return 0;
}

/// EMBER_DUMP files that could not be written (each was warned about) fail the run.
int check_dumps(int status) {
    const uint64_t failed = ember::dump_write_failures();
    if (failed == 0 || status != 0) return status;
    std::cerr << "ember-compile: error: " << failed << " EMBER_DUMP file" << (failed == 1 ? "" : "s")
              << " could not be written (see the warning" << (failed == 1 ? "" : "s") << " above)\n";
    return 1;
}

} // namespace

int main(int argc, char **argv) {
    try {
        Options o = parse_args(argc, argv);
        if (o.help) {
            write_stdout(usage_text);
            return 0;
        }
        if (o.version) {
            // The library's versions, not the headers': the ones that compile.
            write_stdout("ember-compile " + ember::ember_version() + " (LLVM " +
                         ember::llvm_version() +
                         ")\ncompiler build: " + ember::compiler_build_id() + "\n");
            return 0;
        }
        return check_dumps(run(o));
    } catch (const UsageError &e) {
        std::cerr << "ember-compile: error: " << e.message << "\n"
                  << "run 'ember-compile --help' for usage\n";
        return 2;
    } catch (const ember::Error &e) {
        std::cerr << "ember-compile: error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception &e) {
        // Not expected (every failure ember knows of is an ember::Error), but never uncaught.
        std::cerr << "ember-compile: error: " << e.what() << "\n";
        return 1;
    }
}
