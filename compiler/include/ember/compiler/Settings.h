/// \file
/// Every `EMBER_*` environment variable ember reads, read here and nowhere else: one list (the
/// README's table documents exactly these, which a test checks), one vocabulary for booleans, and
/// one warning on stderr, naming the variable and what it accepts, for a value not understood.
#ifndef EMBER_COMPILER_SETTINGS_H
#define EMBER_COMPILER_SETTINGS_H

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ember::settings {

/// One variable: its name and, for warnings, what it accepts.
struct Variable {
    std::string_view name;
    std::string_view accepted;
};

/// Every variable ember reads.
std::span<const Variable> variables();

/// The variable's value; nullopt when it is unset or empty. `name` must be one of variables()
/// (a LogicError otherwise: reading an unlisted variable is a bug of ember's).
std::optional<std::string> text(std::string_view name);

/// A yes/no variable: `1`, `true`, `yes`, `on` are true; `0`, `false`, `no`, `off` are false (any
/// case); unset or empty gives `fallback`, and so does anything else, after a warning.
bool flag(std::string_view name, bool fallback);

/// Prints "ember: warning: NAME='VALUE': WHAT_HAPPENS; accepted: ACCEPTED" on stderr, once per
/// variable, value and message in a process.
void warn(std::string_view name, std::string_view value, std::string_view what_happens);

} // namespace ember::settings

#endif // EMBER_COMPILER_SETTINGS_H
