/// \file
/// EMBER_LOG: diagnostics printed to stderr by topic. `EMBER_LOG=cache,compile` (comma-separated;
/// `all` enables every topic) turns topics on; each line starts with "ember[<topic>]: ". The
/// variable is read once, at the first query; `set_log_topics` overrides it (tests).
#ifndef EMBER_COMPILER_LOG_H
#define EMBER_COMPILER_LOG_H

#include <string_view>

namespace ember {

enum class LogTopic : unsigned {
    cache = 1u << 0,   ///< one line per compile-cache lookup
    compile = 1u << 1, ///< a compile report per compiled kernel and target
    device = 1u << 2,  ///< which device each DeviceContext opened, and why that one
};

/// Whether `t` is on. Cheap after the first call (one relaxed atomic load).
bool log_enabled(LogTopic t) noexcept;
/// Prints "ember[<topic>]: <line>\n" to stderr as one write (lines of several threads do not
/// interleave). Call only when log_enabled(t), to avoid building the line otherwise.
void log_line(LogTopic t, std::string_view line);
/// Parses a list like EMBER_LOG's and makes it the enabled set (replacing the environment's).
/// Unknown names are ignored, with one warning line on stderr naming them and the known topics.
void set_log_topics(std::string_view list);

} // namespace ember

#endif // EMBER_COMPILER_LOG_H
