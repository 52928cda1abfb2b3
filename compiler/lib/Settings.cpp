/// \file
/// The `EMBER_*` variables (Settings.h).
#include "ember/compiler/Settings.h"

#include "ember/Error.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace ember::settings {

namespace {

constexpr std::array<Variable, 11> kVariables = {{
    {"EMBER_API", "cuda, hip or cpu"},
    {"EMBER_DUMP", "a comma-separated list of ir, llvm, llvm-opt, asm, sass and bundle"},
    {"EMBER_DUMP_DIR", "a directory"},
    {"EMBER_CPU_THREADS", "a thread count between 1 and 4096"},
    {"EMBER_CACHE_DIR", "a directory"},
    {"EMBER_DISABLE_CACHE", "1, true, yes, on or 0, false, no, off"},
    {"EMBER_PRELOAD", "1, true, yes, on or 0, false, no, off"},
    {"EMBER_CACHE_MAX_BYTES", "a size such as 1073741824, 512M or 2G, above 0"},
    {"EMBER_LOG", "a comma-separated list of cache, compile, device and all"},
    {"EMBER_TRACE", "the path of a file to write the timeline to (Chrome trace JSON)"},
    {"EMBER_TRACE_MAX_EVENTS", "a count of timeline events above 0, such as 1000000"},
}};

bool listed(std::string_view name) {
    return std::any_of(kVariables.begin(), kVariables.end(), [&](const Variable &v) { return v.name == name; });
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

} // namespace

std::span<const Variable> variables() { return kVariables; }

std::optional<std::string> text(std::string_view name) {
    if (!listed(name)) throw LogicError("ember reads an environment variable it does not list: " + std::string(name));
    const char *v = std::getenv(std::string(name).c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
}

bool flag(std::string_view name, bool fallback) {
    const std::optional<std::string> v = text(name);
    if (!v) return fallback;
    const std::string l = lower(*v);
    if (l == "1" || l == "true" || l == "yes" || l == "on") return true;
    if (l == "0" || l == "false" || l == "no" || l == "off") return false;
    warn(name, *v, fallback ? "not understood, ignored (on by default)" : "not understood, ignored (off by default)");
    return fallback;
}

void warn(std::string_view name, std::string_view value, std::string_view what_happens) {
    static std::mutex mutex;
    static std::set<std::string, std::less<>> *warned = new std::set<std::string, std::less<>>; // never destroyed
    std::string_view accepted;
    for (const Variable &v : kVariables)
        if (v.name == name) accepted = v.accepted;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (!warned->insert(std::string(name) + "=" + std::string(value) + "\n" + std::string(what_happens)).second) return;
    }
    const std::string line = "ember: warning: " + std::string(name) + "='" + std::string(value) + "': " +
                             std::string(what_happens) + "; accepted: " + std::string(accepted) + "\n";
    std::fputs(line.c_str(), stderr);
}

} // namespace ember::settings
