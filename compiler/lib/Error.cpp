/// \file
/// Out-of-line parts of ember's exceptions: DslError's location prefix and the assertion handler.
#include "ember/Error.h"

#include <string>

namespace ember {

namespace {

std::string format_location(const std::source_location &loc) {
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
