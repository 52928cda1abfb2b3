/// \file
/// The `llvm::Error` payloads of compiler/ and the one place where they become the public
/// exceptions of ember/Error.h (STYLE 8.5). Internal: no public header includes this file.
#ifndef EMBER_COMPILER_LIB_LLVMERROR_H
#define EMBER_COMPILER_LIB_LLVMERROR_H

#include "ember/Error.h"

#include <llvm/Support/Error.h>

#include <string>
#include <utility>

namespace ember {
// Internal to libember_compiler.so: hidden, never exported (see ember_compiler.map).
namespace detail __attribute__((visibility("hidden"))) {

/// A kernel could not be compiled. `summary` is the one line the user sees first (it names the
/// kernel and the target); `log` holds LLVM's diagnostics, if any. Becomes `ember::CompileError`.
class CompileFailure : public llvm::ErrorInfo<CompileFailure> {
public:
    static char ID;
    CompileFailure(std::string summary, std::string log = {})
        : summary_(std::move(summary)), log_(std::move(log)) {}
    const std::string &summary() const { return summary_; }
    const std::string &log() const { return log_; }
    void log(llvm::raw_ostream &os) const override;
    std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
    std::string summary_;
    std::string log_;
};

/// This build (or this LLVM) cannot generate code for the requested target: a back end switched
/// off at configure time, an unknown processor name. Becomes `ember::LogicError`.
class TargetUnavailable : public llvm::ErrorInfo<TargetUnavailable> {
public:
    static char ID;
    explicit TargetUnavailable(std::string msg) : msg_(std::move(msg)) {}
    const std::string &text() const { return msg_; }
    void log(llvm::raw_ostream &os) const override { os << msg_; }
    std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
    std::string msg_;
};

inline llvm::Error make_compile_failure(std::string summary, std::string log = {}) {
    return llvm::make_error<CompileFailure>(std::move(summary), std::move(log));
}

inline llvm::Error make_target_unavailable(std::string msg) {
    return llvm::make_error<TargetUnavailable>(std::move(msg));
}

/// Converts `err` into the public exception and throws it; returns when `err` is success.
/// `context` ("kernel 'k' for target 'nvptx:sm_90'") is the summary of errors that carry none of
/// their own (plain LLVM errors, whose text goes to the log).
void throw_if_error(llvm::Error err, const std::string &context);

template <class T> T throw_if_error(llvm::Expected<T> value, const std::string &context) {
    if (!value) throw_if_error(value.takeError(), context);
    return std::move(*value);
}

} // namespace detail
} // namespace ember

#endif // EMBER_COMPILER_LIB_LLVMERROR_H
