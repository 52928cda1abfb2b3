/// \file
/// Helpers of DeviceContext::is_compatible (internal; exposed for tests).
#ifndef EMBER_RUNTIME_DEVICEINFO_H
#define EMBER_RUNTIME_DEVICEINFO_H

#include "ember/compiler/Target.h"

#include <utility>

namespace ember::detail {

/// The PTX ISA version ember's compiler writes for `target` (an NVPTX target), {major, minor}:
/// the `.version` of an empty kernel's PTX, compiled once per target. Thread-safe.
std::pair<int, int> ptx_isa_version(const TargetSpec &target);

/// The oldest CUDA driver, in cuDriverGetVersion's encoding (12040 = CUDA 12.4), that accepts
/// PTX ISA `major.minor`; 0 for PTX older than 6.0.
int cuda_version_for_ptx_isa(int major, int minor);

} // namespace ember::detail

#endif // EMBER_RUNTIME_DEVICEINFO_H
