/// \file
/// What the CPU device reports as device attributes, memory and context limits (internal; used by
/// CpuBackend). docs/runtime.md ("Devices") explains the choices.
#ifndef EMBER_RUNTIME_CPU_CPUDEVICEINFO_H
#define EMBER_RUNTIME_CPU_CPUDEVICEINFO_H

#include "Backend.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace ember::detail {

/// The CPU device's value of `attribute`, for its `limits` and a pool of `threads` host threads.
/// Every DeviceAttribute has one (0 for what the CPU device lacks: textures, ECC, a PCI
/// address, ...). Throws LogicError for a value that names no DeviceAttribute.
int cpu_attribute(DeviceAttribute attribute, const DeviceLimits &limits, unsigned threads);

/// The processor's name, the CPU device's name: /proc/cpuinfo's "model name", else "CPU".
std::string cpu_model_name();

/// {MemAvailable, MemTotal} of /proc/meminfo, in bytes ({0, 0} where it cannot be read).
std::pair<size_t, size_t> cpu_memory_info();

/// The CPU device's limits. They belong to the device, as CUDA's belong to a device's primary
/// context: every CPU DeviceContext of the process shares them. Thread-safe.
size_t cpu_get_limit(Limit limit);
/// Throws LogicError for a stack size over cpu_max_stack_size (naming both) or an unknown limit.
void cpu_set_limit(Limit limit, size_t value);

/// The largest Limit::stack_size the CPU device accepts: 64 MiB per GPU thread (a block of
/// 1024 threads then reserves 64 GiB of address space on each host thread that runs one).
inline constexpr size_t cpu_max_stack_size = size_t(64) << 20;
/// What a fiber needs beyond the kernel's local arrays: its other locals, spills, the math
/// library's frames and the fiber runtime's own calls.
inline constexpr size_t cpu_fiber_stack_margin = size_t(128) << 10;

/// The fiber stack of a launch of a kernel whose threads hold `local_bytes` of local arrays:
/// the larger of Limit::stack_size and local_bytes plus cpu_fiber_stack_margin.
uint64_t cpu_fiber_stack_bytes(uint64_t local_bytes);

} // namespace ember::detail

#endif // EMBER_RUNTIME_CPU_CPUDEVICEINFO_H
