/// \file
/// The exceptions of ember's public API, modelled on PyCUDA's `pycuda.driver` error classes.
///
/// Inside compiler/ and runtime/ failures travel as `llvm::Error`/`llvm::Expected`; they are turned
/// into these exceptions at the public boundary only. Every message names what the user needs to
/// find the problem: the kernel, the argument, the value and the limit it broke.
#ifndef EMBER_ERROR_H
#define EMBER_ERROR_H

#include "ember/CompilerCheck.h"

#include <source_location>
#include <stdexcept>
#include <string>

namespace ember {

/// Base of every exception ember throws. Catch this to catch them all.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/// A kernel failed to compile: the IR was rejected by the verifier, LLVM failed, or the driver
/// refused the generated code. `log()` holds the full diagnostic output (verifier report, driver
/// JIT log); `what()` is a one-line summary that names the kernel and target.
class CompileError : public Error {
public:
    CompileError(const std::string &msg, std::string log = {})
        : Error(log.empty() ? msg : msg + "\n" + log), summary_(msg), log_(std::move(log)) {}
    const std::string &summary() const noexcept { return summary_; }
    const std::string &log() const noexcept { return log_; }

private:
    std::string summary_;
    std::string log_;
};

/// A driver-level failure. `code()` is the raw status of the native API (a `CUresult` for CUDA,
/// 0 where no native call was involved) and `code_name()` its symbolic name (`CUDA_ERROR_...`).
class DriverErrorBase : public Error {
public:
    DriverErrorBase(const std::string &msg, int code = 0, std::string code_name = {})
        : Error(msg), code_(code), code_name_(std::move(code_name)) {}
    int code() const noexcept { return code_; }
    const std::string &code_name() const noexcept { return code_name_; }

private:
    int code_;
    std::string code_name_;
};

/// Out of memory, on the device or for page-locked host memory (PyCUDA's `MemoryError`).
class MemoryError : public DriverErrorBase {
public:
    using DriverErrorBase::DriverErrorBase;
};

/// The program asked for something that cannot be done: a bad argument, a mismatched size, a
/// buffer of another context, a launch over the device's limits (PyCUDA's `LogicError`).
class LogicError : public DriverErrorBase {
public:
    using DriverErrorBase::DriverErrorBase;
};

/// A kernel launch failed, or a running kernel faulted (PyCUDA's `LaunchError`).
class LaunchError : public DriverErrorBase {
public:
    using DriverErrorBase::DriverErrorBase;
};

/// Any other failure of the platform: no device, driver not loadable, an unexpected native status
/// (PyCUDA's `RuntimeError`).
class RuntimeError : public DriverErrorBase {
public:
    using DriverErrorBase::DriverErrorBase;
};

/// Misuse of the DSL found while tracing a kernel. The message starts with the user's
/// `file:line:column` so that editors and terminals can jump to it.
class DslError : public LogicError {
public:
    DslError(const std::string &msg, const std::source_location &loc);
    const std::source_location &where() const noexcept { return loc_; }

private:
    std::source_location loc_;
};

/// A broken invariant inside ember: always a bug in ember, never in the user's program.
class InternalError : public Error {
public:
    explicit InternalError(const std::string &msg) : Error(msg) {}
};

namespace detail {
[[noreturn]] void assertion_failed(const char *cond, const std::string &msg, const char *file,
                                   int line);
} // namespace detail

} // namespace ember

/// Checks an internal invariant; on failure throws `ember::InternalError` naming file and line.
/// Cheap checks stay on in release builds.
#define EMBER_ASSERT(cond, msg)                                                                    \
    do {                                                                                           \
        if (!(cond)) ::ember::detail::assertion_failed(#cond, (msg), __FILE__, __LINE__);          \
    } while (0)

/// Marks code that must never run.
#define EMBER_UNREACHABLE(msg) ::ember::detail::assertion_failed("unreachable", (msg), __FILE__, __LINE__)

#endif // EMBER_ERROR_H
