/// \file
/// Random, well-defined kernels for ember-difftest.
///
/// [Note] Difftest kernels
/// =======================
/// Every kernel has one signature: a pointer to a buffer of each scalar type (i8 i16 i32 i64 u8
/// u16 u32 u64 f16 bf16 f32 f64, in that order, `%p_<type>`). Each buffer holds, in elements,
/// the inputs (`kSlots` per thread, random bits, at `gid * kSlots + j`), then the outputs
/// (`kSlots` per thread, at `threads * kSlots + gid * kSlots + j`), then `kAtomicSlots` elements
/// that atomics of all threads update (one atomic operator per slot, so the order of the
/// updates does not matter). Every value a kernel computes that it stores lands in its thread's
/// output slots as raw bits (bool as u8); the runner compares the whole buffers.
///
/// The kernels are deterministic by construction: no thread reads what another writes except
/// through shared memory after a barrier, or through commutative atomics whose old values are
/// not used (an atomic on a thread's own output slot may use its old value); barriers and warp
/// operations sit where every thread of the block reaches them (the kernel's top level and
/// `for` loops with constant bounds), warp operations only in blocks of whole warps; loops have
/// small constant trip counts or a counter bound; device functions take and return scalars;
/// vector loads and stores are aligned (element offsets that are multiples of the lane count); float min/max results get `+ 0.0` (IEEE
/// leaves the sign of min(+0, -0) open) and copysign never takes its sign from a NaN. NaN
/// payloads are not defined by the IR: the runner compares floats that are NaN as equal.
#ifndef EMBER_TOOLS_DIFFTEST_GENERATOR_H
#define EMBER_TOOLS_DIFFTEST_GENERATOR_H

#include "ember/compiler/IR.h"

#include <cstdint>
#include <vector>

namespace ember::difftest {

inline constexpr uint64_t kSlots = 16;
inline constexpr uint64_t kAtomicSlots = 8;

/// The element types of the kernel's buffers, in parameter order.
const std::vector<ir::ScalarType> &buffer_types();

/// Elements of each buffer for a launch of `threads` threads in all.
inline uint64_t buffer_elements(uint64_t threads) { return 2 * threads * kSlots + kAtomicSlots; }

struct Generated {
    ir::Kernel kernel;
    uint64_t grid = 1, block = 1;
};

struct GenerateOptions {
    /// Make no fma of f16 or bf16 (the CPU device rounds them twice: docs/testing.md).
    bool no_half_fma = false;
};

/// The kernel of `seed` (named `dt_<seed>`), the same for a given build of the tool.
Generated generate(uint64_t seed, const GenerateOptions &options = {});

/// The initial contents of every buffer for `seed` (random bits, biased to edge values; NaNs are
/// quiet), one byte vector per buffer type.
std::vector<std::vector<uint8_t>> make_inputs(uint64_t seed, uint64_t threads);

} // namespace ember::difftest

#endif // EMBER_TOOLS_DIFFTEST_GENERATOR_H
