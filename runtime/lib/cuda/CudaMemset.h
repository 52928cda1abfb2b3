/// \file
/// How the CUDA back end sets memory to a 1-, 2-, 4- or 8-byte pattern with the driver's 8-, 16-
/// and 32-bit memsets: see [Note] Memset widths. Pure (needs no driver), so the plan is tested
/// on any machine (CudaMemsetTest).
#ifndef EMBER_RUNTIME_CUDA_CUDAMEMSET_H
#define EMBER_RUNTIME_CUDA_CUDAMEMSET_H

#include "Backend.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::detail {

/// One driver call of a memset, in stream order.
struct MemsetStep {
    enum Kind { D8, D16, D32, DtoD };
    Kind kind;
    DeviceAddress dst;
    /// D8/D16/D32: the unit's value; DtoD: the source address.
    uint64_t value;
    /// D8/D16/D32: units; DtoD: bytes.
    size_t count;
};

/// [Note] Memset widths
/// ====================
/// The driver sets 1-, 2- or 4-byte units (cuMemsetD8/D16/D32Async, the latter two only at
/// addresses aligned to the unit). A pattern whose halves are equal is set as twice as many
/// units of half the width. What is left (an 8-byte pattern with differing halves, or a unit at
/// an address not aligned to it, as in a sub-buffer of a byte buffer) is written as its first
/// element byte by byte (D8 of 1), then doubled with device-to-device copies on the same stream:
/// [0, k) to [k, 2k), log2(count) copies of non-overlapping ranges.
///
/// The calls that set `count` elements of `width` (1, 2, 4 or 8) bytes at `dst`, each the low
/// `width` bytes of `pattern` in little-endian order.
std::vector<MemsetStep> plan_memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count);

} // namespace ember::detail

#endif // EMBER_RUNTIME_CUDA_CUDAMEMSET_H
