/// \file
/// Compile reports ([Note] Compile reports in CompileReport.h): building one for a loaded
/// function, printing it, and parsing ptxas's info log.
#include "ember/runtime/CompileReport.h"

#include "CompileReportInternal.h"
#include "ContextImpl.h"

#include "ember/compiler/Log.h"
#include "ember/runtime/DeviceContext.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace ember {

namespace {

std::string milliseconds(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
    return buf;
}

std::string or_na(int64_t v, const char *unit) {
    if (v < 0) return "n/a";
    return std::to_string(v) + unit;
}

/// The number written just before `pos` in `line` ("12 bytes spill stores": 12), or -1.
int64_t number_before(std::string_view line, size_t pos) {
    size_t end = pos;
    while (end > 0 && line[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    if (begin == end) return -1;
    int64_t v = 0;
    for (size_t i = begin; i < end; ++i) v = v * 10 + (line[i] - '0');
    return v;
}

/// The number written just after `pos` in `line` ("Used 12 registers": 12), or -1.
int64_t number_after(std::string_view line, size_t pos) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    size_t begin = pos;
    int64_t v = 0;
    while (pos < line.size() && std::isdigit(static_cast<unsigned char>(line[pos])))
        v = v * 10 + (line[pos++] - '0');
    return pos == begin ? -1 : v;
}

/// The function a line of the log introduces ("Compiling entry function 'k' for 'sm_90'",
/// "Function properties for k"), or empty.
std::string_view function_named(std::string_view line) {
    constexpr std::string_view compiling = "Compiling entry function '";
    constexpr std::string_view properties = "Function properties for ";
    if (size_t p = line.find(compiling); p != std::string_view::npos) {
        std::string_view rest = line.substr(p + compiling.size());
        return rest.substr(0, rest.find('\''));
    }
    if (size_t p = line.find(properties); p != std::string_view::npos) {
        std::string_view rest = line.substr(p + properties.size());
        size_t end = 0;
        while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end]))) ++end;
        return rest.substr(0, end);
    }
    return {};
}

} // namespace

std::string to_string(const CompileReport &r) {
    std::string s = "kernel '" + r.kernel + "' " + r.target + " (" + r.cache_level + "): ";
    s += r.registers < 0 ? std::string("registers n/a") : std::to_string(r.registers) + " registers";
    s += ", spill stores " + or_na(r.spill_store_bytes, " B") + ", spill loads " + or_na(r.spill_load_bytes, " B");
    if (r.stack_frame_bytes >= 0) s += ", stack frame " + std::to_string(r.stack_frame_bytes) + " B";
    s += ", shared " + std::to_string(r.shared_bytes) + " B, local " + std::to_string(r.local_bytes) +
         " B, const " + std::to_string(r.const_bytes) + " B, max " + std::to_string(r.max_threads_per_block) +
         " threads/block; trace " + milliseconds(r.trace_seconds) + ", lower " + milliseconds(r.lower_seconds) +
         ", optimise " + milliseconds(r.optimize_seconds) + ", codegen " + milliseconds(r.codegen_seconds) +
         ", load " + milliseconds(r.load_seconds) + ", total " + milliseconds(r.total_seconds());
    for (const std::string &w : r.ptxas_warnings) s += "; ptxas: " + w;
    return s;
}

PtxasInfo parse_ptxas_info(std::string_view log, std::string_view kernel) {
    PtxasInfo info;
    std::string_view current; // the function the lines being read describe
    while (!log.empty()) {
        size_t nl = log.find('\n');
        std::string_view line = log.substr(0, nl);
        log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
        if (std::string_view f = function_named(line); !f.empty()) {
            current = f;
            continue;
        }
        // "ptxas info    : (C7510) Potential Performance Loss: ... in the function 'k'": it
        // names its function itself, and may come before the function's own lines.
        if (size_t p = line.find("Performance Loss"); p != std::string_view::npos) {
            const size_t close = line.rfind('\'');
            const size_t open = close == std::string_view::npos || close == 0
                                    ? std::string_view::npos
                                    : line.rfind('\'', close - 1);
            const std::string_view named = open == std::string_view::npos
                                               ? std::string_view()
                                               : line.substr(open + 1, close - open - 1);
            if (kernel.empty() || named.empty() || named == kernel) {
                const size_t start = line.rfind(": ", p);
                std::string_view text = start == std::string_view::npos ? line
                                                                        : line.substr(start + 2);
                if (text.size() > 8 && text[0] == '(' && text.find(") ") != std::string_view::npos)
                    text = text.substr(text.find(") ") + 2); // "(C7510) "
                info.performance_warnings.emplace_back(text);
            }
            continue;
        }
        bool ours = kernel.empty() || current.empty() || current == kernel;
        if (!ours) continue;
        auto take = [&](int64_t &field, int64_t v) {
            if (field < 0 && v >= 0) field = v;
        };
        if (size_t p = line.find("bytes stack frame"); p != std::string_view::npos)
            take(info.stack_frame_bytes, number_before(line, p));
        if (size_t p = line.find("bytes spill stores"); p != std::string_view::npos)
            take(info.spill_store_bytes, number_before(line, p));
        if (size_t p = line.find("bytes spill loads"); p != std::string_view::npos)
            take(info.spill_load_bytes, number_before(line, p));
        if (size_t p = line.find("Used "); p != std::string_view::npos && info.registers < 0) {
            size_t after = p + 5;
            int64_t v = number_after(line, after);
            if (v >= 0 && line.find("register", after) != std::string_view::npos) info.registers = int(v);
        }
    }
    return info;
}

namespace detail {

CompileReport build_report(FunctionImpl &fn) {
    CompileReport r;
    r.kernel = fn.kernel ? fn.kernel->ir.name : fn.compiled.kernel_name;
    r.target = fn.compiled.target.to_string();
    r.trace_seconds = fn.kernel ? fn.kernel->trace_seconds : 0;
    r.lower_seconds = fn.compiled.lower_seconds;
    r.optimize_seconds = fn.compiled.optimize_seconds;
    r.codegen_seconds = fn.compiled.codegen_seconds;
    r.load_seconds = fn.load_seconds;
    auto attr = [&](FunctionAttribute a) { return function_get_attribute(&fn, a); };
    r.max_threads_per_block = attr(FunctionAttribute::max_threads_per_block);
    r.shared_bytes = static_cast<uint64_t>(attr(FunctionAttribute::shared_size_bytes));
    r.local_bytes = static_cast<uint64_t>(attr(FunctionAttribute::local_size_bytes));
    if (fn.compiled.target.arch == Arch::NVPTX) {
        r.registers = attr(FunctionAttribute::num_regs);
        r.const_bytes = static_cast<uint64_t>(attr(FunctionAttribute::const_size_bytes));
        if (fn.loaded && !fn.loaded->jit_info_log.empty()) {
            PtxasInfo p = parse_ptxas_info(fn.loaded->jit_info_log, fn.compiled.entry_symbol);
            if (p.registers < 0) p = parse_ptxas_info(fn.loaded->jit_info_log);
            r.spill_store_bytes = p.spill_store_bytes;
            r.spill_load_bytes = p.spill_load_bytes;
            r.stack_frame_bytes = p.stack_frame_bytes;
            r.ptxas_warnings = parse_ptxas_info(fn.loaded->jit_info_log, fn.compiled.entry_symbol)
                                   .performance_warnings;
        }
    } else {
        // Host code: no register count or spills to report ([Note] Compile reports).
        r.local_bytes = std::max<uint64_t>(r.local_bytes, fn.compiled.local_bytes);
        for (const ir::ConstantGlobal &c : fn.compiled.constants) r.const_bytes += c.bytes;
    }
    return r;
}

void record_report(FunctionImpl &fn) {
    // Built on first use (function_report): the driver's attributes cost microseconds that a
    // warm start need not pay when nobody reads the report.
    fn.report_recorded = true;
    if (log_enabled(LogTopic::compile)) log_line(LogTopic::compile, to_string(function_report(fn)));
}

CompileReport function_report(const FunctionImpl &fn) {
    if (fn.report_recorded) {
        std::call_once(fn.report_once, [&] {
            auto &f = const_cast<FunctionImpl &>(fn); // report is the lazily built cache of fn
            std::string level = f.report.cache_level;
            f.report = build_report(f);
            f.report.cache_level = std::move(level);
        });
        return fn.report;
    }
    // A function of an external module (PTX, cubin): nothing was compiled here.
    CompileReport r = build_report(const_cast<FunctionImpl &>(fn));
    r.cache_level = "external module";
    return r;
}

} // namespace detail

} // namespace ember
