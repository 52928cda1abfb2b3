/// \file
/// The conversion of compiler/'s `llvm::Error` payloads into ember's public exceptions.
#include "LLVMError.h"

#include <llvm/Support/raw_ostream.h>

namespace ember::detail {

char CompileFailure::ID = 0;
char TargetUnavailable::ID = 0;

void CompileFailure::log(llvm::raw_ostream &os) const {
    os << summary_;
    if (!log_.empty()) os << "\n" << log_;
}

void throw_if_error(llvm::Error err, const std::string &context) {
    if (!err) return;
    // Collect the payload first and throw afterwards: an exception must not leave an llvm::Error
    // unhandled (it would abort in a build with LLVM_ENABLE_ABI_BREAKING_CHECKS).
    enum class Kind { Compile, Unavailable } kind = Kind::Compile;
    std::string summary, log;
    llvm::handleAllErrors(
        std::move(err),
        [&](const CompileFailure &f) {
            summary = f.summary();
            log = f.log();
        },
        [&](const TargetUnavailable &u) {
            kind = Kind::Unavailable;
            summary = u.text();
        },
        [&](const llvm::ErrorInfoBase &other) {
            summary = "failed to compile " + context;
            log = other.message();
        });
    if (kind == Kind::Unavailable) throw LogicError(summary);
    throw CompileError(summary, log);
}

} // namespace ember::detail
