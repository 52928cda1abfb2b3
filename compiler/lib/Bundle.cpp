/// \file
/// Repro bundles ([Note] Repro bundles in ember/compiler/Bundle.h): writing, reading, replaying.
#include "ember/compiler/Bundle.h"
#include "ember/compiler/Settings.h"
#include "ember/compiler/Sha256.h"

#include "BundleInternal.h"
#include "ember/compiler/FileIO.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Log.h"

#include <llvm/ADT/StringRef.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <system_error>

#include <unistd.h>

namespace ember {

namespace fs = std::filesystem;

namespace {

thread_local int suppress_depth = 0;
thread_local std::string scope_driver, scope_device;

/// Suppresses bundles on this thread while alive (replay must not write bundles of its own).
struct Suppress {
    Suppress() { ++suppress_depth; }
    ~Suppress() { --suppress_depth; }
    Suppress(const Suppress &) = delete;
    Suppress &operator=(const Suppress &) = delete;
};

std::string hex_prefix(const std::array<uint8_t, 32> &digest, size_t digits) {
    static const char hex[] = "0123456789abcdef";
    std::string s;
    for (uint8_t b : digest) {
        s += hex[b >> 4];
        s += hex[b & 15];
        if (s.size() >= digits) break;
    }
    s.resize(digits);
    return s;
}

std::string options_text(int opt_level) { return "opt_level=" + std::to_string(opt_level) + "\n"; }

/// Kernel names are identifiers already; anything else (and overly long names) is cut down so
/// that the directory name stays a portable file name.
std::string file_safe(const std::string &name) {
    std::string s;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '_' || c == '-' || c == '.';
        s += ok ? c : '_';
        if (s.size() == 64) break;
    }
    return s.empty() ? std::string("kernel") : s;
}

/// The stage file of the assembly: PTX for NVPTX, host assembly otherwise.
const char *assembly_file(const TargetSpec &t) { return t.arch == Arch::NVPTX ? "kernel.ptx" : "kernel.s"; }

std::string versions_text() {
    std::string v = "ember: " + ember_version() + "\ncompiler build: " + compiler_build_id() + "\nllvm: " +
                    llvm_version() + "\n";
    if (!scope_driver.empty()) v += "driver: " + scope_driver + "\n";
    if (!scope_device.empty()) v += "device: " + scope_device + "\n";
    return v;
}

/// Writes `text` to `path` through a temporary file in the same directory and a rename.
bool write_file(const fs::path &path, const std::string &text, std::string *why) {
    static std::atomic<unsigned> counter{0};
    const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                         std::to_string(counter.fetch_add(1));
    {
        try {
            write_whole_file(tmp.string(), text); // checks every write and the close
        } catch (const LogicError &e) {
            *why = e.what();
            std::error_code ec;
            fs::remove(tmp, ec);
            return false;
        }
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        *why = "cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message();
        fs::remove(tmp, ec);
        return false;
    }
    return true;
}

/// The file `name` of the bundle `dir`, or nullopt when it does not exist. A file that is not a
/// regular file (a directory, a link to /dev/zero), is larger than max_input_file_bytes, or cannot
/// be read is a LogicError naming the bundle, the file and why.
std::optional<std::string> read_file(const std::string &dir, const char *name) {
    try {
        return read_regular_file_if_exists((fs::path(dir) / name).string());
    } catch (const LogicError &e) {
        throw LogicError("repro bundle '" + dir + "': " + e.what());
    }
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    size_t i = 0;
    while (i < s.size() && s[i] == ' ') ++i;
    return s.substr(i);
}

std::string first_line(const std::string &s) { return s.substr(0, s.find('\n')); }

/// The name of the first kernel in textual IR (`kernel @name(`), without parsing it: the IR of a
/// kernel that failed verification does not parse.
std::string kernel_name_of(const std::string &ir) {
    size_t pos = 0;
    while ((pos = ir.find("kernel @", pos)) != std::string::npos) {
        if (pos == 0 || ir[pos - 1] == '\n') {
            const size_t start = pos + 8;
            const size_t end = ir.find('(', start);
            if (end != std::string::npos) return ir.substr(start, end - start);
        }
        pos += 8;
    }
    return {};
}

std::string readme_text(const ReproBundle &b, const std::string &dir) {
    std::string r = "ember repro bundle for kernel '" + b.kernel_name + "', target '" +
                    b.target.to_string() + "', " + trim(options_text(b.opt_level)) + ".\n";
    if (b.error.empty())
        r += "The compile succeeded (written because EMBER_DUMP names 'bundle').\n";
    else
        r += "The compile failed at stage '" + b.failed_stage + "': see error.txt.\n";
    r += "\nFiles: kernel.ir (canonical IR), target.txt, options.txt, versions.txt, the stages\n"
         "produced (llvm.ll, opt.ll, " + std::string(assembly_file(b.target)) +
         "), error.txt (when it failed).\n"
         "\nReplay it offline with\n"
         "    ember-compile --bundle " + dir + "\n"
         "which compiles kernel.ir for target.txt with options.txt through the same stages, says\n"
         "whether it fails the same way, and with --diff lists the stages that differ from the\n"
         "stored ones. The stages can also be produced one by one:\n"
         "    ember-compile " + dir + "/kernel.ir --target=" + b.target.to_string() + " -O" +
         std::to_string(b.opt_level) + " --emit=llvm|llvm-opt|asm\n";
    if (b.failed_stage == "load")
        r += "\nThe failure happened when the driver loaded the PTX (its JIT): offline replay checks\n"
             "that the same PTX is produced; load kernel.ptx on the device named in versions.txt\n"
             "(e.g. with ptxas) to see the driver's error again.\n";
    return r;
}

ReproBundle bundle_of(const ir::Kernel &k, const TargetSpec &target, int opt_level) {
    ReproBundle b;
    b.kernel_name = k.name;
    b.target = target;
    b.opt_level = opt_level;
    b.versions = versions_text();
    try {
        b.ir = ir::print(k);
    } catch (...) {
        b.ir.clear(); // write_bundle reports a bundle without IR
    }
    return b;
}

CompileError with_note(const CompileError &error, const std::string &dir, const std::string &why) {
    std::string log = error.log();
    if (!log.empty() && log.back() != '\n') log += "\n";
    log += dir.empty() ? "repro bundle: not written (" + why + ")" : "repro bundle: " + dir;
    return CompileError(error.summary(), std::move(log));
}

} // namespace

bool bundle_dump_requested() { return detail::bundle_dump_enabled(); }

std::string bundle_directory(const ReproBundle &b) {
    Sha256 sha;
    const std::string key = b.ir + "\n" + b.target.to_string() + "\n" + options_text(b.opt_level);
    sha.update(key);
    const std::string name = "ember-bundle-" + file_safe(b.kernel_name) + "-" + hex_prefix(sha.final(), 12);
    if (const std::optional<std::string> dir = settings::text("EMBER_DUMP_DIR")) return (fs::path(*dir) / name).string();
    const char *tmp = std::getenv("TMPDIR");
    return (fs::path(tmp && *tmp ? tmp : "/tmp") / name).string();
}

std::string write_bundle(const ReproBundle &b, std::string *why) noexcept {
    std::string reason;
    if (!why) why = &reason;
    try {
        if (b.ir.empty()) {
            *why = "the kernel's IR could not be printed";
            return {};
        }
        const std::string dir = bundle_directory(b);
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) {
            *why = "cannot create '" + dir + "': " + ec.message();
            return {};
        }
        const fs::path d(dir);
        struct Entry {
            const char *name;
            std::string text;
        };
        std::vector<Entry> entries = {
            {"kernel.ir", b.ir},
            {"target.txt", b.target.to_string() + "\n"},
            {"options.txt", options_text(b.opt_level)},
            {"versions.txt", b.versions},
            {"llvm.ll", b.llvm},
            {"opt.ll", b.llvm_opt},
            {"kernel.ptx", b.target.arch == Arch::NVPTX ? b.assembly : std::string()},
            {"kernel.s", b.target.arch == Arch::NVPTX ? std::string() : b.assembly},
            {"error.txt", b.error.empty() ? std::string() : "stage: " + b.failed_stage + "\n" + b.error +
                                                               (b.error.back() == '\n' ? "" : "\n")},
            {"README.txt", readme_text(b, dir)},
        };
        for (const Entry &e : entries) {
            if (e.text.empty()) {
                // A stage this compile did not reach: a file left by an earlier writer of the
                // same bundle would be stale.
                fs::remove(d / e.name, ec);
                continue;
            }
            if (!write_file(d / e.name, e.text, why)) return {};
        }
        return dir;
    } catch (const std::exception &e) {
        *why = e.what();
    } catch (...) {
        *why = "unknown error";
    }
    return {};
}

ReproBundle read_bundle(const std::string &dir) {
    std::error_code ec;
    if (!fs::is_directory(fs::path(dir), ec))
        throw LogicError("repro bundle '" + dir + "' is not a directory");
    auto required = [&](const char *name) {
        std::optional<std::string> text = read_file(dir, name);
        if (!text) throw LogicError("repro bundle '" + dir + "' has no readable " + name);
        return *text;
    };
    ReproBundle b;
    b.ir = required("kernel.ir");
    b.kernel_name = kernel_name_of(b.ir);
    if (b.kernel_name.empty())
        throw LogicError("repro bundle '" + dir + "': kernel.ir defines no kernel ('kernel @name(')");
    b.target = TargetSpec::parse(trim(required("target.txt")));
    const std::string options = trim(required("options.txt"));
    std::istringstream lines(options);
    std::string line;
    bool have_level = false;
    while (std::getline(lines, line)) {
        line = trim(line);
        if (line.empty()) continue;
        const std::string key = "opt_level=";
        if (line.rfind(key, 0) != 0 || line.size() != key.size() + 1 || line[key.size()] < '0' ||
            line[key.size()] > '3')
            throw LogicError("repro bundle '" + dir + "': options.txt line '" + line +
                             "' is not understood; expected opt_level=0..3");
        b.opt_level = line[key.size()] - '0';
        have_level = true;
    }
    if (!have_level) throw LogicError("repro bundle '" + dir + "': options.txt has no opt_level");
    b.versions = read_file(dir, "versions.txt").value_or("");
    b.llvm = read_file(dir, "llvm.ll").value_or("");
    b.llvm_opt = read_file(dir, "opt.ll").value_or("");
    b.assembly = read_file(dir, assembly_file(b.target)).value_or("");
    if (std::optional<std::string> error = read_file(dir, "error.txt")) {
        const std::string stage_key = "stage: ";
        if (error->rfind(stage_key, 0) != 0)
            throw LogicError("repro bundle '" + dir + "': error.txt does not start with 'stage: '");
        const size_t eol = error->find('\n');
        b.failed_stage = trim(error->substr(stage_key.size(), eol - stage_key.size()));
        b.error = eol == std::string::npos ? std::string() : error->substr(eol + 1);
        if (b.error.empty()) b.error = "(no message)";
    }
    return b;
}

BundleReplay replay_bundle(const std::string &dir) {
    BundleReplay r;
    r.stored = read_bundle(dir);
    ReproBundle &p = r.produced;
    p.kernel_name = r.stored.kernel_name;
    p.target = r.stored.target;
    p.opt_level = r.stored.opt_level;
    p.versions = versions_text();
    Suppress suppress;
    try {
        ir::Module m = ir::parse_module(r.stored.ir, (fs::path(dir) / "kernel.ir").string());
        const ir::Kernel *k = nullptr;
        for (const ir::Kernel &candidate : m.kernels)
            if (candidate.name == r.stored.kernel_name) k = &candidate;
        EMBER_ASSERT(k, "kernel_name_of found a kernel the parser did not");
        p.ir = ir::print(*k);
        CompileOptions o;
        o.opt_level = p.opt_level;
        o.keep_llvm = o.keep_llvm_opt = o.keep_asm = true;
        try {
            CompiledKernel ck = compile(*k, p.target, o);
            p.llvm = std::move(ck.llvm);
            p.llvm_opt = std::move(ck.llvm_opt);
            p.assembly = std::move(ck.assembly);
        } catch (const CompileError &e) {
            CompiledKernel partial;
            p.failed_stage = detail::produce_stages(*k, p.target, p.opt_level, partial);
            if (p.failed_stage.empty()) p.failed_stage = "codegen";
            p.llvm = std::move(partial.llvm);
            p.llvm_opt = std::move(partial.llvm_opt);
            p.assembly = std::move(partial.assembly);
            p.error = e.what();
        }
    } catch (const CompileError &e) {
        // The parser verifies: a kernel that failed verification fails here.
        p.ir = r.stored.ir;
        p.failed_stage = "verify";
        p.error = e.what();
    }
    auto differs = [&](const char *name, const std::string &stored, const std::string &produced) {
        if (!stored.empty() && !produced.empty() && stored != produced) r.differing_stages.push_back(name);
    };
    differs("llvm.ll", r.stored.llvm, p.llvm);
    differs("opt.ll", r.stored.llvm_opt, p.llvm_opt);
    differs(assembly_file(p.target), r.stored.assembly, p.assembly);

    if (r.stored.failed_stage == "load") {
        r.reproduced = p.error.empty() && !p.assembly.empty() && p.assembly == r.stored.assembly;
    } else if (r.stored.error.empty()) {
        r.reproduced = p.error.empty();
    } else {
        // The parser prefixes a location to the verifier's summary: compare by containment.
        const std::string stored_summary = first_line(r.stored.error);
        r.reproduced = !p.error.empty() && p.failed_stage == r.stored.failed_stage &&
                       first_line(p.error).find(stored_summary) != std::string::npos;
    }
    return r;
}

namespace detail {

BundleScope::BundleScope(std::string driver, std::string device)
    : prev_driver_(std::move(scope_driver)), prev_device_(std::move(scope_device)) {
    scope_driver = std::move(driver);
    scope_device = std::move(device);
}

BundleScope::~BundleScope() {
    scope_driver = std::move(prev_driver_);
    scope_device = std::move(prev_device_);
}

bool bundles_suppressed() { return suppress_depth > 0; }

CompileError bundle_compile_failure(const CompileError &error, const ir::Kernel &k,
                                    const TargetSpec &target, const CompileOptions &options) noexcept {
    try {
        ReproBundle b = bundle_of(k, target, options.opt_level);
        CompiledKernel partial;
        b.failed_stage = produce_stages(k, target, options.opt_level, partial);
        if (b.failed_stage.empty()) b.failed_stage = "codegen"; // failed once, not on the rerun
        b.llvm = std::move(partial.llvm);
        b.llvm_opt = std::move(partial.llvm_opt);
        b.assembly = std::move(partial.assembly);
        b.error = error.what();
        std::string why;
        const std::string dir = write_bundle(b, &why);
        if (log_enabled(LogTopic::compile))
            log_line(LogTopic::compile, "kernel '" + k.name + "': repro bundle " +
                                            (dir.empty() ? "not written (" + why + ")" : dir));
        return with_note(error, dir, why);
    } catch (...) {
        return error;
    }
}

void bundle_compile_success(const ir::Kernel &k, const CompiledKernel &out,
                            const CompileOptions &options) noexcept {
    if (bundles_suppressed()) return;
    try {
        ReproBundle b = bundle_of(k, out.target, options.opt_level);
        b.llvm = out.llvm;
        b.llvm_opt = out.llvm_opt;
        b.assembly = out.assembly;
        std::string why;
        const std::string dir = write_bundle(b, &why);
        if (dir.empty()) {
            detail::note_dump_write_failure();
            std::cerr << "ember: warning: EMBER_DUMP=bundle: kernel '" << k.name
                      << "': repro bundle not written (" << why << ")\n";
        } else if (log_enabled(LogTopic::compile))
            log_line(LogTopic::compile, "kernel '" + k.name + "': repro bundle " + dir);
    } catch (...) {
        // A bundle is a by-product: it never fails the compile.
    }
}

CompileError bundle_load_failure(const CompileError &error, const ir::Kernel &k,
                                 const CompiledKernel &compiled, const CompileOptions &options) noexcept {
    if (bundles_suppressed()) return error;
    try {
        ReproBundle b = bundle_of(k, compiled.target, options.opt_level);
        CompiledKernel stages;
        produce_stages(k, compiled.target, options.opt_level, stages);
        b.llvm = std::move(stages.llvm);
        b.llvm_opt = std::move(stages.llvm_opt);
        // What the driver was given: the PTX (on NVPTX the binary is the assembly).
        b.assembly = compiled.target.arch == Arch::NVPTX ? compiled.binary : std::move(stages.assembly);
        b.failed_stage = "load";
        b.error = error.what();
        std::string why;
        const std::string dir = write_bundle(b, &why);
        return with_note(error, dir, why);
    } catch (...) {
        return error;
    }
}

} // namespace detail

} // namespace ember
