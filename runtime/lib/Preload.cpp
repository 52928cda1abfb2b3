#include "Preload.h"

#include "ember/compiler/Settings.h"

#include "DiskCache.h"

#include "ember/compiler/CacheSupport.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ember::detail {

namespace {
constexpr std::string_view kHeader = "ember-preload 1\n";

bool is_hex_digest(std::string_view s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

/// A field: non-empty, printable, no space.
bool is_field(std::string_view s) {
    if (s.empty() || s.size() > 1024) return false;
    for (char c : s)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
    return true;
}
} // namespace

std::string format_preload_list(const std::vector<PreloadItem> &items) {
    std::string out(kHeader);
    size_t n = 0;
    for (const PreloadItem &i : items) {
        if (n++ == kMaxPreload) break;
        out += i.digest + ' ' + i.arch + ' ' + i.driver + ' ' + i.symbol + '\n';
    }
    return out;
}

std::optional<std::vector<PreloadItem>> parse_preload_list(std::string_view text) {
    if (text.substr(0, kHeader.size()) != kHeader) return std::nullopt;
    text.remove_prefix(kHeader.size());
    std::vector<PreloadItem> items;
    while (!text.empty()) {
        size_t end = text.find('\n');
        if (end == std::string_view::npos) return std::nullopt; // every line ends with '\n'
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end + 1);
        std::string_view fields[4];
        for (int f = 0; f < 4; ++f) {
            size_t sp = f < 3 ? line.find(' ') : line.size();
            if (sp == std::string_view::npos) return std::nullopt;
            fields[f] = line.substr(0, sp);
            line.remove_prefix(f < 3 ? sp + 1 : sp);
            if (!is_field(fields[f])) return std::nullopt;
        }
        if (!is_hex_digest(fields[0]) || items.size() == kMaxPreload) return std::nullopt;
        items.push_back({std::string(fields[0]), std::string(fields[1]), std::string(fields[2]),
                         std::string(fields[3])});
    }
    return items;
}

std::string preload_list_key() {
    char exe[4096];
    ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::string path = len > 0 ? std::string(exe, size_t(len)) : std::string("(unknown executable)");
    return sha256_hex("ember-preload\n" + path + "\n");
}

bool preload_enabled() { return settings::flag("EMBER_PRELOAD", true); }

PreloadPlan read_preload_plan(DiskCache &disk, std::string_view kind) {
    PreloadPlan plan;
    plan.disk = &disk;
    std::optional<std::string> text = disk.load(preload_list_key(), kPreloadKind);
    if (!text) return plan;
    std::optional<std::vector<PreloadItem>> items = parse_preload_list(*text);
    if (!items) return plan; // checksummed, so only another ember's format: the next run rewrites it
    for (PreloadItem &item : *items) {
        std::optional<std::string> bytes = disk.load(item.digest, kind);
        plan.bytes.push_back(bytes ? std::make_shared<const std::string>(std::move(*bytes)) : nullptr);
        plan.items.push_back(std::move(item));
    }
    return plan;
}

void write_preload_list(DiskCache &disk, const std::vector<PreloadItem> &items) {
    disk.store(preload_list_key(), kPreloadKind, format_preload_list(items));
}

} // namespace ember::detail
