/// \file
/// `DeviceAttribute` (what `DeviceContext::get_attribute` reports: PyCUDA's device_attribute,
/// Mojo's DeviceAttribute) and `Limit` (the context limits of `get_limit` / `set_limit`: PyCUDA's
/// limit). The attribute list is generated from DeviceAttributes.def.
#ifndef EMBER_RUNTIME_DEVICEATTRIBUTE_H
#define EMBER_RUNTIME_DEVICEATTRIBUTE_H

#include <string_view>

namespace ember {

/// A property of a device. Each enumerator is PyCUDA's `device_attribute` name in lower case
/// (`MAX_THREADS_PER_BLOCK` is `max_threads_per_block`), and its value is the CUdevice_attribute
/// number of cuda.h. PyCUDA's older names are aliases with the same value
/// (`shared_memory_per_block` is `max_shared_memory_per_block`). On the CPU device every
/// attribute has a value; docs/runtime.md ("Devices") says what each means there.
enum class DeviceAttribute : int {
#define EMBER_DEVICE_ATTRIBUTE(name, cu_number) name = cu_number,
#define EMBER_DEVICE_ATTRIBUTE_ALIAS(name, canonical) name = canonical,
#include "ember/runtime/DeviceAttributes.def"
};

/// Every attribute once (aliases left out), in CUdevice_attribute order: what
/// `DeviceContext::get_attributes()` asks for.
inline constexpr DeviceAttribute all_device_attributes[] = {
#define EMBER_DEVICE_ATTRIBUTE(name, cu_number) DeviceAttribute::name,
#include "ember/runtime/DeviceAttributes.def"
};

/// The attribute's name: "max_threads_per_block" (an alias gives its canonical name);
/// "DeviceAttribute(<n>)" for a value that names no attribute.
std::string_view to_string(DeviceAttribute attribute);

/// A limit of a context (PyCUDA's `limit`, CUlimit; values are CUlimit's numbers), read with
/// `DeviceContext::get_limit` and changed with `set_limit`.
enum class Limit : int {
    /// Bytes of stack per GPU thread (CU_LIMIT_STACK_SIZE). On the CPU device: the smallest
    /// stack of a GPU thread (the kernel stacks, and the fibers of kernels with barriers or warp
    /// operations).
    stack_size = 0,
    /// Bytes of the FIFO that `print(...)` in kernels writes to (CU_LIMIT_PRINTF_FIFO_SIZE).
    printf_fifo_size = 1,
    /// Bytes of the heap of device-side malloc (CU_LIMIT_MALLOC_HEAP_SIZE).
    malloc_heap_size = 2,
};

/// "stack_size", "printf_fifo_size", "malloc_heap_size"; "Limit(<n>)" for any other value.
std::string_view to_string(Limit limit);

/// The oldest NVIDIA GPUs ember's code runs on: compute capability 6.0 (Pascal), the first with
/// the scoped atomics (`atom.cta`, `atom.sys`) and the f64 atomic add that ember's PTX uses.
/// `DeviceContext::is_compatible()` checks it.
inline constexpr int min_compute_capability_major = 6;
inline constexpr int min_compute_capability_minor = 0;

} // namespace ember

#endif // EMBER_RUNTIME_DEVICEATTRIBUTE_H
