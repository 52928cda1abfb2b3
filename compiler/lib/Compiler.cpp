/// \file
/// The compilation pipeline of [Note] Compilation pipeline: verify, lower, optimise, emit; stage
/// dumps (EMBER_DUMP) and the conversion of internal errors into ember::CompileError.
#include "ember/compiler/Compiler.h"
#include "ember/compiler/Settings.h"

#include "BundleInternal.h"
#include "CodeGenLLVM.h"
#include "LLVMError.h"
#include "ember/compiler/FileIO.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Sha256.h"
#include "ember/compiler/Verifier.h"
#include "targets/TargetImpl.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ember {

namespace detail {
/// A verified kernel's CompiledKernel without the binary: names, constants, resource figures
/// (also compiled_from_binary's, CacheSupport.cpp).
CompiledKernel kernel_description(const ir::Kernel &k, const TargetSpec &target);
} // namespace detail

std::string_view to_string(Stage s) {
    switch (s) {
    case Stage::IR: return "ir";
    case Stage::LLVM: return "llvm";
    case Stage::LLVMOpt: return "llvm-opt";
    case Stage::Asm: return "asm";
    case Stage::Obj: return "obj";
    }
    EMBER_UNREACHABLE("unknown Stage");
}

std::optional<Stage> parse_stage(std::string_view s) {
    for (Stage st : {Stage::IR, Stage::LLVM, Stage::LLVMOpt, Stage::Asm, Stage::Obj})
        if (s == to_string(st)) return st;
    return std::nullopt;
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

namespace {

// ---------------------------------------------------------------------------------------------
// EMBER_DUMP / EMBER_DUMP_DIR, read once per process.

struct DumpConfig {
    bool ir = false, llvm = false, llvm_opt = false, assembly = false;
    bool sass = false; // NVIDIA's machine code: the runtime disassembles what the driver built
    bool bundle = false; // repro bundles ([Note] Repro bundles in Bundle.h), not a stage
    std::string dir; // empty: stderr
    bool any() const { return ir || llvm || llvm_opt || assembly || sass; }
};

DumpConfig read_dump_config() {
    DumpConfig c;
    const std::optional<std::string> env = settings::text("EMBER_DUMP");
    if (!env) return c;
    std::string_view rest(*env);
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) continue;
        if (item == "bundle") {
            c.bundle = true;
            continue;
        }
        if (item == "sass") {
            c.sass = true;
            continue;
        }
        std::optional<Stage> st = parse_stage(item);
        if (!st || *st == Stage::Obj) {
            settings::warn("EMBER_DUMP", *env, "unknown stage '" + std::string(item) + "' ignored");
            continue;
        }
        switch (*st) {
        case Stage::IR: c.ir = true; break;
        case Stage::LLVM: c.llvm = true; break;
        case Stage::LLVMOpt: c.llvm_opt = true; break;
        case Stage::Asm: c.assembly = true; break;
        case Stage::Obj: break;
        }
    }
    if (const std::optional<std::string> dir = settings::text("EMBER_DUMP_DIR"); dir && c.any()) {
        std::error_code ec;
        std::filesystem::create_directories(*dir, ec);
        if (ec)
            std::cerr << "ember: warning: EMBER_DUMP_DIR: cannot create '" << *dir
                      << "': " << ec.message() << "; dumping to stderr instead\n";
        else
            c.dir = *dir;
    }
    return c;
}

const DumpConfig &dump_config() {
    static const DumpConfig config = read_dump_config();
    return config;
}

std::string stage_header(const std::string &kernel, const std::string &key, const TargetSpec &t,
                         std::string_view stage) {
    return "// ----- kernel: " + kernel + "  key: " + key + "  target: " + t.to_string() +
           "  stage: " + std::string(stage) + " -----";
}

/// The file name's extension of a stage: what tools and editors recognise.
std::string_view dump_extension(Stage s, const TargetSpec &t) {
    switch (s) {
    case Stage::IR: return "eir";
    case Stage::LLVM: return "ll";
    case Stage::LLVMOpt: return "opt.ll";
    case Stage::Asm: return t.arch == Arch::NVPTX ? "ptx" : "s";
    case Stage::Obj: return "o";
    }
    return "txt";
}

void dump_text(const std::string &kernel, const std::string &key, const TargetSpec &target,
               std::string_view stage, std::string_view extension, const std::string &text) {
    static std::mutex mutex; // one dump at a time: concurrent compiles must not interleave
    std::lock_guard<std::mutex> lock(mutex);
    const DumpConfig &c = dump_config();
    if (c.dir.empty()) {
        std::cerr << stage_header(kernel, key, target, stage) << "\n" << text;
        if (!text.empty() && text.back() != '\n') std::cerr << "\n";
        std::cerr.flush();
        return;
    }
    const std::filesystem::path path = std::filesystem::path(c.dir) /
                                       dump_file_name(kernel, key, target, extension);
    try {
        write_whole_file(path.string(), text); // checks every write and the close
    } catch (const LogicError &e) {
        detail::note_dump_write_failure();
        std::cerr << "ember: warning: EMBER_DUMP: " << e.what() << "\n";
    }
}

void dump(const std::string &kernel, const std::string &key, const TargetSpec &target, Stage stage,
          const std::string &text) {
    dump_text(kernel, key, target, to_string(stage), dump_extension(stage, target), text);
}

/// The specialisation key of dumps: kernels of one name with different IR or options (two
/// instantiations of a template, two values of a captured constant) get different files.
std::string dump_key_of(const std::string &ir_text, const CompileOptions &options) {
    return Sha256::hex(ir_text + "\nopt_level " + std::to_string(options.opt_level) +
                       " print_to_buffer " + (options.print_to_buffer ? "1" : "0")).substr(0, 12);
}

// ---------------------------------------------------------------------------------------------
// The pipeline.

/// Which outputs one run of the pipeline produces; it stops after the last one asked for.
struct Want {
    bool llvm = false, llvm_opt = false, assembly = false, binary = false;
};

struct Timer {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
};

std::string print_module(const llvm::Module &m) {
    std::string text;
    llvm::raw_string_ostream os(text);
    m.print(os, /*AAW=*/nullptr);
    return text;
}

/// Collects LLVM's error diagnostics instead of letting the default handler print them and exit.
struct Diagnostics {
    std::string errors;
    static void handle(const llvm::DiagnosticInfo *info, void *context) {
        if (info->getSeverity() != llvm::DS_Error) return;
        auto *self = static_cast<Diagnostics *>(context);
        llvm::raw_string_ostream os(self->errors);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
        os << "\n";
    }
    llvm::Error check(const std::string &where, const char *step) {
        if (errors.empty()) return llvm::Error::success();
        return detail::make_compile_failure(where + ": LLVM failed to " + std::string(step) + " it",
                                            std::move(errors));
    }
};

/// The deepest loop nest of `m`'s functions (1 for a loop that holds no other).
unsigned deepest_loop_nest(llvm::Module &m) {
    unsigned deepest = 0;
    for (llvm::Function &f : m) {
        if (f.isDeclaration()) continue;
        llvm::DominatorTree dt(f);
        llvm::LoopInfo li(dt);
        for (llvm::BasicBlock &bb : f) deepest = std::max(deepest, li.getLoopDepth(&bb));
    }
    return deepest;
}

/// Loops nested deeper than this are optimised without LICM's scalar promotion: promoting a
/// location in each loop of a nest of n loops rewrites the nest n times (time cubic in n: 250
/// nested loops took 4 s, 500 took 27 s), while a nest of 1 to 16 loops is where promotion pays.
constexpr unsigned max_loop_nest_for_promotion = 16;

// [Note] Huge functions
// ======================
// LLVM's optimisers and code generators are tuned for functions of hundreds to a few thousand
// instructions; some of their work grows with the square of a function's (or a basic block's)
// size. A kernel of 20,000 stores took over a minute to compile for the CPU (34 s for NVPTX;
// with this path, 2 to 5 s for both): inlined into the
// thread loops of [Note] CPU kernel ABI, its 40,000 loop-invariant values were hoisted out of the
// loops by LICM and all live at once (the register allocator spilled them all, slowly), and the
// machine and post-RA schedulers of one 60,000-instruction block are quadratic. So a function
// of more than `max_instructions_for_full_optimisation` instructions as lowered takes the cheap
// path: about 1,700 stores of invariant values (whose code generation took 4 s before) or 420
// stores indexed by the thread (0.3 s); the largest function of the lit inputs has 404.
//   - it is not inlined (the CPU body stays a call in the thread loops: nothing is hoisted out
//     of them), and is otherwise optimised as usual at the requested level;
//   - its code generation is LLVM's for `optnone` functions (fast instruction selection, no
//     instruction schedulers; the register allocator stays that of the level), set after the
//     IR pipeline so only the code generator sees it.
// Both are attributes of that function alone: no process-wide LLVM option changes, so compiles
// on other threads are not affected. `--emit=llvm-opt` shows them (`noinline optnone`).
constexpr unsigned max_instructions_for_full_optimisation = 5000;

bool is_huge(const llvm::Function &f) {
    return !f.isDeclaration() && f.getInstructionCount() > max_instructions_for_full_optimisation;
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm, const detail::Target &target,
              int opt_level) {
    llvm::PipelineTuningOptions tuning;
    if (opt_level > 0 && deepest_loop_nest(m) > max_loop_nest_for_promotion)
        tuning.LicmMssaNoAccForPromotionCap = 0;
    std::vector<std::string> huge;
    if (opt_level > 0)
        for (llvm::Function &f : m)
            if (is_huge(f)) {
                huge.push_back(f.getName().str());
                f.removeFnAttr(llvm::Attribute::AlwaysInline);
                f.addFnAttr(llvm::Attribute::NoInline);
            }
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    // The target's skipped passes: LLVM asks before each optional pass.
    llvm::PassInstrumentationCallbacks instrumentation;
    const std::span<const std::string_view> skipped = target.skipped_passes();
    if (!skipped.empty())
        instrumentation.registerShouldRunOptionalPassCallback(
            [skipped](llvm::StringRef pass, llvm::Any) {
                return std::find(skipped.begin(), skipped.end(),
                                 std::string_view(pass.data(), pass.size())) == skipped.end();
            });
    llvm::PassBuilder pb(&tm, tuning, std::nullopt, skipped.empty() ? nullptr : &instrumentation);
    tm.registerPassBuilderCallbacks(pb);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    static const llvm::OptimizationLevel levels[] = {
        llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1, llvm::OptimizationLevel::O2,
        llvm::OptimizationLevel::O3};
    llvm::ModulePassManager mpm = opt_level == 0
                                      ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                      : pb.buildPerModuleDefaultPipeline(levels[opt_level]);
    mpm.run(m, mam);
    // The pipeline may have deleted a huge function that nothing calls: mark those still here.
    for (const std::string &name : huge)
        if (llvm::Function *f = m.getFunction(name)) f->addFnAttr(llvm::Attribute::OptimizeNone);
}

/// Makes sure the summary of a compile failure names the kernel (and target): failures from
/// the target machine or the code generator do not know them.
llvm::Error in_context(llvm::Error err, const std::string &where) {
    return llvm::handleErrors(std::move(err), [&](const detail::CompileFailure &f) -> llvm::Error {
        if (f.summary().rfind("kernel '", 0) == 0) return detail::make_compile_failure(f.summary(), f.log());
        return detail::make_compile_failure(where + ": " + f.summary(), f.log());
    });
}

/// [Note] LLVM's fatal errors
/// ==========================
/// A defect of LLVM can stop it with a fatal error ("Cannot select: ..." from instruction
/// selection, found twice by ember-difftest in 100,000 random kernels and worked around since);
/// LLVM's default handler prints it and aborts the process, which would take the user's program
/// down for a compile. ember installs its own handler (once, for the LLVM linked into this
/// library, which no one else uses): on a thread inside the pipeline it throws, and the pipeline
/// returns an error that becomes a CompileError naming the kernel, the target and LLVM's message,
/// with its repro bundle like every CompileError; elsewhere it prints and aborts as LLVM would.
/// The exception unwinds through LLVM's frames, built without exception support: their
/// destructors do not run, so what the failed compile had allocated is leaked, and the
/// LLVMContext, module and target machine of that compile (ember's, destroyed) are not used
/// again. A fatal error is a bug of LLVM, rare by nature: leaking its compile beats aborting.
/// CodeGenTest.LlvmFatalErrorsBecomeCompileErrors checks the handler.
struct LlvmFatalError {
    std::string reason;
};

thread_local int pipeline_depth = 0;

void on_llvm_fatal_error(void *, const char *reason, bool) {
    if (pipeline_depth > 0) throw LlvmFatalError{reason ? reason : "(no message)"};
    std::fprintf(stderr, "LLVM ERROR: %s\n", reason ? reason : "");
    std::abort();
}

/// While alive, an LLVM fatal error on this thread throws LlvmFatalError.
class LlvmFatalErrorScope {
public:
    LlvmFatalErrorScope() {
        static std::once_flag once;
        std::call_once(once, [] { llvm::install_fatal_error_handler(on_llvm_fatal_error, nullptr); });
        ++pipeline_depth;
    }
    ~LlvmFatalErrorScope() { --pipeline_depth; }
    LlvmFatalErrorScope(const LlvmFatalErrorScope &) = delete;
    LlvmFatalErrorScope &operator=(const LlvmFatalErrorScope &) = delete;
};

llvm::Error llvm_fatal_error(const std::string &reason) {
    return llvm::make_error<llvm::StringError>(
        "LLVM " LLVM_VERSION_STRING " stopped with an internal error: " + reason +
            " (a defect of LLVM, not of the kernel: [Note] LLVM's fatal errors)",
        llvm::inconvertibleErrorCode());
}

llvm::Error run_pipeline_stages(const ir::Kernel &k, const detail::Target &target, int opt_level,
                                const Want &want, CompiledKernel &out);

/// Lowers, optimises and emits `k` (already verified) as far as `want` needs, filling the texts
/// and timings of `out`; an LLVM fatal error on the way is returned as an error.
llvm::Error run_pipeline(const ir::Kernel &k, const detail::Target &target, int opt_level,
                         const Want &want, CompiledKernel &out) {
    LlvmFatalErrorScope scope;
    try {
        return run_pipeline_stages(k, target, opt_level, want, out);
    } catch (const LlvmFatalError &e) {
        return llvm_fatal_error(e.reason);
    }
}

llvm::Error run_pipeline_stages(const ir::Kernel &k, const detail::Target &target, int opt_level,
                                const Want &want, CompiledKernel &out) {
    const std::string where =
        "kernel '" + k.name + "' for target '" + target.spec().to_string() + "'";
    Timer lower_timer;
    auto tm = target.create_target_machine(target.codegen_level(opt_level));
    if (!tm) return tm.takeError();
    llvm::LLVMContext ctx;
    Diagnostics diags;
    ctx.setDiagnosticHandlerCallBack(&Diagnostics::handle, &diags);
    auto module = detail::lower_to_llvm(k, target, (*tm)->createDataLayout(), ctx);
    if (!module) return module.takeError();
    if (llvm::Error err = diags.check(where, "lower")) return err;
    if (want.llvm) out.llvm = print_module(**module);
    out.lower_seconds = lower_timer.seconds();
    if (!want.llvm_opt && !want.assembly && !want.binary) return llvm::Error::success();

    Timer optimize_timer;
    optimize(**module, **tm, target, opt_level);
    target.prepare_codegen(**module);
    if (llvm::Error err = diags.check(where, "optimise")) return err;
    if (want.llvm_opt) out.llvm_opt = print_module(**module);
    out.optimize_seconds = optimize_timer.seconds();
    if (!want.assembly && !want.binary) return llvm::Error::success();

    Timer codegen_timer;
    const bool binary_is_asm =
        target.binary_file_type() == llvm::CodeGenFileType::AssemblyFile;
    if (want.assembly && !(want.binary && binary_is_asm)) {
        // The code generator changes the module it runs on: give it a copy when the binary is
        // still to come from the same module.
        std::unique_ptr<llvm::Module> copy = want.binary ? llvm::CloneModule(**module) : nullptr;
        auto text = detail::emit_with_target_machine(copy ? *copy : **module, **tm,
                                                     llvm::CodeGenFileType::AssemblyFile);
        if (!text) return text.takeError();
        out.assembly = target.patch_assembly(std::move(*text));
        if (llvm::Error err = diags.check(where, "generate code for")) return err;
        if (want.binary) {
            // A fresh target machine, too: some back ends keep per-module state in it.
            auto tm2 = target.create_target_machine(target.codegen_level(opt_level));
            if (!tm2) return tm2.takeError();
            tm = std::move(tm2);
        }
    }
    if (want.binary) {
        auto binary = target.emit_binary(**module, **tm);
        if (!binary) return binary.takeError();
        if (llvm::Error err = diags.check(where, "generate code for")) return err;
        out.binary = std::move(*binary);
        if (want.assembly && binary_is_asm) out.assembly = out.binary;
    }
    out.codegen_seconds = codegen_timer.seconds();
    return llvm::Error::success();
}

std::string context_of(const ir::Kernel &k, const TargetSpec &t) {
    return "kernel '" + k.name + "' for target '" + t.to_string() + "'";
}

void check_opt_level(int opt_level) {
    if (opt_level < 0 || opt_level > 3)
        throw LogicError("optimisation level " + std::to_string(opt_level) +
                         " is out of range; use 0, 1, 2 or 3");
}

/// CompiledKernel::local_bytes: the local arrays of a body plus, for every call in it, those of
/// the callee (memoised per function), saturating.
class LocalBytes final : public ir::IRVisitor {
public:
    using Memo = std::unordered_map<const ir::Function *, uint64_t>;
    explicit LocalBytes(Memo &memo) : memo_(memo) {}
    using ir::IRVisitor::visit;
    void visit(const ir::LocalArray *op) override {
        add(op->count * op->var->type.element_type().bytes());
    }
    void visit(const ir::Invoke *op) override {
        ir::IRVisitor::visit(op);
        const ir::Function *f = op->callee.get();
        auto it = memo_.find(f);
        if (it == memo_.end()) {
            LocalBytes callee(memo_);
            callee.visit(f->body);
            it = memo_.emplace(f, callee.total).first;
        }
        add(it->second);
    }
    uint64_t total = 0;

private:
    void add(uint64_t bytes) { total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes; }
    Memo &memo_;
};

uint64_t local_bytes_of(const ir::Kernel &k) {
    LocalBytes::Memo memo;
    // Callees before callers: every call then finds its callee in the memo, and the walk never
    // nests one function's body inside another's (a chain of calls is as long as the program).
    for (const ir::FunctionRef &f : ir::called_functions(k.body)) {
        LocalBytes callee(memo);
        callee.visit(f->body);
        memo.emplace(f.get(), callee.total);
    }
    LocalBytes l(memo);
    l.visit(k.body);
    return l.total;
}

CompiledKernel compile_stages(const ir::Kernel &k, const TargetSpec &target,
                              const CompileOptions &options) {
    const std::string context = context_of(k, target);
    const DumpConfig &dumps = dump_config();
    Timer verify_timer;
    ir::verify_or_throw(k);
    CompiledKernel out = detail::kernel_description(k, target);
    const double verify_seconds = verify_timer.seconds();
    if (options.keep_ir || dumps.any() || dumps.bundle) {
        std::string text = ir::print(k);
        if (dumps.any()) out.dump_key = dump_key_of(text, options);
        if (dumps.ir) dump(k.name, out.dump_key, target, Stage::IR, text);
        out.ir = std::move(text);
    }
    std::unique_ptr<detail::Target> t = detail::throw_if_error(detail::create_target(target), context);
    t->set_print_to_buffer(options.print_to_buffer);
    Want want;
    want.llvm = options.keep_llvm || dumps.llvm || dumps.bundle;
    want.llvm_opt = options.keep_llvm_opt || dumps.llvm_opt || dumps.bundle;
    want.assembly = options.keep_asm || dumps.assembly || dumps.bundle;
    want.binary = true;
    detail::throw_if_error(in_context(run_pipeline(k, *t, options.opt_level, want, out), context),
                           context);
    out.lower_seconds += verify_seconds;

    if (dumps.llvm) dump(k.name, out.dump_key, target, Stage::LLVM, out.llvm);
    if (dumps.llvm_opt) dump(k.name, out.dump_key, target, Stage::LLVMOpt, out.llvm_opt);
    if (dumps.assembly) dump(k.name, out.dump_key, target, Stage::Asm, out.assembly);
    if (dumps.bundle) detail::bundle_compile_success(k, out, options);
    if (!options.keep_ir) out.ir.clear();
    if (!options.keep_llvm) out.llvm.clear();
    if (!options.keep_llvm_opt) out.llvm_opt.clear();
    if (!options.keep_asm) out.assembly.clear();
    return out;
}

} // namespace

bool detail::bundle_dump_enabled() { return dump_config().bundle; }

bool dumps_requested() { return dump_config().any() || dump_config().bundle; }

bool sass_dump_requested() { return dump_config().sass; }

std::string dump_file_name(const std::string &kernel, const std::string &key, const TargetSpec &target,
                           std::string_view extension) {
    // The feature list is left out: for the host it can be longer than a file name may be.
    TargetSpec short_target = target;
    short_target.features.clear();
    std::string name = short_target.to_string();
    for (char &ch : name)
        if (ch == ':') ch = '_';
    return kernel + (key.empty() ? "" : "." + key) + "." + name + "." + std::string(extension);
}

void dump_stage_text(const CompiledKernel &k, std::string_view stage, std::string_view extension,
                     const std::string &text) {
    dump_text(k.kernel_name, k.dump_key, k.target, stage, extension, text);
}

std::string detail::produce_stages(const ir::Kernel &k, const TargetSpec &target, int opt_level,
                                   CompiledKernel &out) noexcept {
    try {
        try {
            ir::verify_or_throw(k);
        } catch (const CompileError &) {
            return "verify";
        }
        auto t = detail::create_target(target);
        if (!t) {
            llvm::consumeError(t.takeError());
            return "lower";
        }
        Want want;
        want.llvm = want.llvm_opt = want.assembly = want.binary = true;
        if (llvm::Error err = run_pipeline(k, **t, opt_level, want, out)) llvm::consumeError(std::move(err));
    } catch (...) {
        // Only what was produced matters here; the caller holds the original error.
    }
    if (out.llvm.empty()) return "lower";
    if (out.llvm_opt.empty()) return "optimise";
    if (out.assembly.empty() || out.binary.empty()) return "codegen";
    return {};
}

CompiledKernel compile(const ir::Kernel &k, const TargetSpec &target,
                       const CompileOptions &options) {
    check_opt_level(options.opt_level);
    try {
        return compile_stages(k, target, options);
    } catch (const CompileError &e) {
        if (detail::bundles_suppressed()) throw;
        throw detail::bundle_compile_failure(e, k, target, options);
    }
}

std::string emit(const ir::Kernel &k, const TargetSpec &target, Stage stage, int opt_level) {
    check_opt_level(opt_level);
    if (dumps_requested()) {
        // EMBER_DUMP asks for stages this call would not compute: take the full path, which dumps.
        CompileOptions o;
        o.opt_level = opt_level;
        o.keep_ir = o.keep_llvm = o.keep_llvm_opt = o.keep_asm = true;
        CompiledKernel ck = compile(k, target, o);
        switch (stage) {
        case Stage::IR: return ck.ir;
        case Stage::LLVM: return ck.llvm;
        case Stage::LLVMOpt: return ck.llvm_opt;
        case Stage::Asm: return ck.assembly;
        case Stage::Obj: return ck.binary;
        }
    }
    ir::verify_or_throw(k);
    if (stage == Stage::IR) return ir::print(k);
    const std::string context = context_of(k, target);
    std::unique_ptr<detail::Target> t = detail::throw_if_error(detail::create_target(target), context);
    Want want;
    want.llvm = stage == Stage::LLVM;
    want.llvm_opt = stage == Stage::LLVMOpt;
    want.assembly = stage == Stage::Asm;
    want.binary = stage == Stage::Obj;
    CompiledKernel out;
    detail::throw_if_error(in_context(run_pipeline(k, *t, opt_level, want, out), context), context);
    switch (stage) {
    case Stage::LLVM: return out.llvm;
    case Stage::LLVMOpt: return out.llvm_opt;
    case Stage::Asm: return out.assembly;
    case Stage::Obj: return out.binary;
    case Stage::IR: break;
    }
    EMBER_UNREACHABLE("unhandled Stage");
}

namespace detail {
std::string llvm_fatal_error_for_testing(const std::string &reason) {
    LlvmFatalErrorScope scope;
    try {
        llvm::report_fatal_error(llvm::Twine(reason), /*gen_crash_diag=*/false);
    } catch (const LlvmFatalError &e) {
        std::string message;
        llvm::handleAllErrors(llvm_fatal_error(e.reason), [&](const llvm::ErrorInfoBase &info) { message = info.message(); });
        return message;
    }
    return {};
}

CompiledKernel kernel_description(const ir::Kernel &k, const TargetSpec &target) {
    CompiledKernel out;
    out.kernel_name = k.name;
    out.entry_symbol = k.name;
    out.constants = ir::constant_globals(k);
    out.target = target;
    out.local_bytes = local_bytes_of(k);
    out.static_shared_bytes = ir::static_shared_bytes(k);
    return out;
}
} // namespace detail

} // namespace ember
