/// \file
/// Out-of-line parts of ember's exceptions: DslError's location prefix and the assertion handler.
#include "ember/Error.h"

#include <string>
#include <string_view>

namespace ember {

namespace {

/// A location inside ember's own DSL headers is where ember noticed the problem, not where the
/// user wrote it (C++ operators cannot take a source_location): such a prefix would mislead, so
/// it is left out and the message names the kernel instead.
bool is_ember_internal(const char *file) {
    std::string_view f(file);
    return f.find("/ember/dsl/") != std::string_view::npos || f.find("dsl/lib/Tracer.cpp") != std::string_view::npos;
}

std::string format_location(const std::source_location &loc) {
    if (is_ember_internal(loc.file_name())) return "error: ";
    return std::string(loc.file_name()) + ":" + std::to_string(loc.line()) + ":" +
           std::to_string(loc.column()) + ": error: ";
}

} // namespace

DslError::DslError(const std::string &msg, const std::source_location &loc)
    : LogicError(format_location(loc) + msg), loc_(loc) {}

namespace detail {

void assertion_failed(const char *cond, const std::string &msg, const char *file, int line) {
    throw InternalError("internal error: " + msg + " (" + cond + ") at " + file + ":" +
                        std::to_string(line) + "; this is a bug in ember, please report it");
}

} // namespace detail

} // namespace ember
