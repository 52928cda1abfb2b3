/// \file
/// The host side of [Note] Print buffer: records to text.
#include "ember/compiler/PrintBuffer.h"

#include <cstdio>
#include <cstring>

namespace ember::print_buffer {

namespace {

uint32_t read32(const char *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

uint64_t read64(const char *p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

/// Appends `format` with `args` to `out` as printf would; false when there are fewer arguments
/// than conversions or a conversion ember never writes.
bool format_one(std::string &out, std::string_view format, const char *args, uint32_t count) {
    uint32_t used = 0;
    char buf[64];
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '%') {
            out += '%';
            ++i;
            continue;
        }
        // The conversions the code generator writes: %d %u %lld %llu %g %s.
        const std::string_view rest = format.substr(i + 1);
        std::string_view spec;
        for (std::string_view s : {"lld", "llu", "d", "u", "g", "s"})
            if (rest.substr(0, s.size()) == s) {
                spec = s;
                break;
            }
        if (spec.empty() || used == count) return false;
        const uint64_t a = read64(args + 8 * used++);
        if (spec == "d") std::snprintf(buf, sizeof buf, "%d", static_cast<int32_t>(static_cast<uint32_t>(a)));
        else if (spec == "u") std::snprintf(buf, sizeof buf, "%u", static_cast<uint32_t>(a));
        else if (spec == "lld") std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(a));
        else if (spec == "llu") std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(a));
        else if (spec == "g") {
            double d;
            std::memcpy(&d, &a, 8);
            std::snprintf(buf, sizeof buf, "%g", d);
        } else std::snprintf(buf, sizeof buf, "%s", a ? "True" : "False");
        out += buf;
        i += spec.size();
    }
    return true;
}

} // namespace

std::string format_print_records(std::string_view records) {
    std::string out;
    size_t at = 0;
    while (at + 8 <= records.size()) {
        const uint32_t bytes = read32(records.data() + at), count = read32(records.data() + at + 4);
        // Zeros: the records that fit end here (the runtime zeroes what it has read).
        if (bytes == 0 && count == 0) break;
        auto malformed = [&](const char *why) {
            out += "ember: print buffer: record at byte " + std::to_string(at) + " is malformed (" + why +
                   "); the rest of the buffer is not printed\n";
            return out;
        };
        if (bytes < 16 || bytes % 8 != 0 || bytes > records.size() - at) return malformed("its size");
        const std::string_view body = records.substr(at + 8, bytes - 8);
        const size_t nul = body.find('\0');
        if (nul == std::string_view::npos) return malformed("a format without its end");
        const size_t args_at = (nul + 1 + 7) / 8 * 8;
        if (args_at + 8ull * count != body.size()) return malformed("its argument count");
        if (!format_one(out, body.substr(0, nul), body.data() + args_at, count))
            return malformed("a conversion without its argument");
        at += bytes;
    }
    return out;
}

} // namespace ember::print_buffer
