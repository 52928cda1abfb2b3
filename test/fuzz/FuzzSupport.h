/// \file
/// What the libFuzzer harnesses share: the rule that tells an expected outcome from a finding.
///
/// [Note] Fuzzing outcomes
/// =======================
/// Bad input is expected to end in a typed ember exception (`ember::Error` and its subclasses):
/// the harness returns and libFuzzer goes on. Everything else is a finding, and the harness
/// aborts so that libFuzzer saves the input as a crash artefact:
/// * `ember::InternalError` (a failed EMBER_ASSERT or EMBER_UNREACHABLE): a bug in ember;
/// * an exception that is not an `ember::Error` (std::bad_alloc, std::out_of_range, ...);
/// * a property a harness checks that does not hold (`finding`);
/// * and, without the harness's help, crashes, aborts and sanitizer reports.
#ifndef EMBER_TEST_FUZZ_FUZZSUPPORT_H
#define EMBER_TEST_FUZZ_FUZZSUPPORT_H

#include "ember/Error.h"
#include "ember/compiler/IRPrinter.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace ember::fuzz {

/// Reports a finding on stderr and aborts (libFuzzer writes the input to its crash file).
[[noreturn]] inline void finding(std::string_view what, std::string_view detail = {}) {
    std::fprintf(stderr, "\n==ember-fuzz== FINDING: %.*s\n", static_cast<int>(what.size()), what.data());
    if (!detail.empty())
        std::fprintf(stderr, "%.*s\n", static_cast<int>(detail.size()), detail.data());
    std::fflush(stderr);
    std::abort();
}

/// Runs `step` and classifies how it ended: true when it returned, false when it threw a typed
/// ember error (expected for bad input); any other outcome is a finding. `stage` names the step
/// in the report.
template <class F> bool expected_outcome(std::string_view stage, F &&step) {
    try {
        step();
        return true;
    } catch (const ember::InternalError &e) {
        finding(std::string(stage) + ": ember::InternalError (a broken invariant)", e.what());
    } catch (const ember::Error &) {
        return false;
    } catch (const std::exception &e) {
        finding(std::string(stage) + ": an exception that is not an ember::Error", e.what());
    } catch (...) {
        finding(std::string(stage) + ": an exception of unknown type");
    }
}

/// Parses the fuzzer's input as textual IR into `module`: false when that ends in a typed ember
/// error (the input is malformed), true when the module parsed (and is verified).
inline bool parse_input(const uint8_t *data, size_t size, ember::ir::Module &module) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    return expected_outcome("parse", [&] { module = ember::ir::parse_module(text, "<fuzz>"); });
}

} // namespace ember::fuzz

#endif // EMBER_TEST_FUZZ_FUZZSUPPORT_H
