/// \file
/// Filling a function's CompileReport (internal; runtime/lib/CompileReport.cpp).
#ifndef EMBER_RUNTIME_COMPILEREPORTINTERNAL_H
#define EMBER_RUNTIME_COMPILEREPORTINTERNAL_H

#include "ember/runtime/CompileReport.h"

namespace ember::detail {

struct FunctionImpl;

/// The report of `fn` as it stands (attributes asked of the back end, stage times, JIT log).
CompileReport build_report(FunctionImpl &fn);
/// After `fn` is compiled and loaded: marks fn.report to be built from build_report(fn) on first
/// use (keeping its cache_level; function_report) and prints it when EMBER_LOG=compile is on.
void record_report(FunctionImpl &fn);

} // namespace ember::detail

#endif // EMBER_RUNTIME_COMPILEREPORTINTERNAL_H
