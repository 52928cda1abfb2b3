/// \file
/// ember's print buffer: how kernels print on a target without a device printf (AMDGPU), shared
/// by the code generator that writes records and the runtime that reads them.
///
/// [Note] Print buffer
/// ===================
/// HIP's own printf goes through a host-call buffer that a service thread of the HIP runtime
/// drains while the kernel runs, with device code from ROCm's device libraries, which ember does
/// not link. ember prints the way CUDA's printf FIFO behaves instead: each `print` appends one
/// record to a buffer in device memory, and the host formats the records when the stream is
/// synchronised, so a thread's line is never mixed with another's and lines appear at the
/// synchronisation, as on NVIDIA.
/// - The module has a global `ember_print_buffer` (a u64, externally initialised): the device
///   address of the buffer, which the runtime writes when it loads the module; 0 prints nothing.
/// - The buffer starts with a header of `kHeaderBytes`: u64 bytes used (after the header), u64
///   capacity (bytes for records), u64 records dropped because the buffer was full.
/// - A print reserves its record with one atomic add on the bytes used; a record that does not
///   fit is dropped and counted (the host warns, naming the count and the capacity). The bytes
///   used then count the dropped records too, so the record area starts zeroed (and is zeroed
///   again after each drain): the records that fit end where a zero size begins.
/// - A record: u32 bytes (a multiple of 8, all of it), u32 argument count, the C format
///   (NUL-terminated, padded to 8), then one u64 per argument: integers in the low bits (what the
///   conversion reads: %d and %u 32 bits, %lld and %llu 64), doubles (%g) as their bits, bools
///   (%s) 0 or 1, printed True or False, as [Note] IR semantics says print shows them.
/// `format_print_records` turns records into text exactly as C's printf would the same format and
/// arguments. Where the buffer is used: AMDGPU always; NVPTX when a test asks
/// (CompileOptions::print_to_buffer), which runs the whole path on NVIDIA GPUs
/// (PrintBufferTest). The runtime side is in runtime/lib/cuda/CudaStreams.cpp (attached at
/// load, drained after a synchronize once the device's streams are idle).
#ifndef EMBER_COMPILER_PRINTBUFFER_H
#define EMBER_COMPILER_PRINTBUFFER_H

#include <cstdint>
#include <string>
#include <string_view>

namespace ember::print_buffer {

/// The module global that holds the buffer's device address.
inline constexpr const char *kSymbol = "ember_print_buffer";
/// Bytes before the first record: used, capacity, dropped (u64 each), then padding.
inline constexpr uint64_t kHeaderBytes = 64;
/// Records the runtime's buffer holds by default: 1 MiB, CUDA's default printf FIFO.
inline constexpr uint64_t kDefaultCapacity = 1 << 20;

/// The text of the records in `records` (the bytes after the header, as many as were used), in
/// order, up to a zero record size (the end of the records that fit). A record that is malformed (a size that overruns the bytes, a format without its NUL,
/// fewer arguments than conversions) ends the text with a line saying so; nothing is read past
/// `records`.
std::string format_print_records(std::string_view records);

} // namespace ember::print_buffer

#endif // EMBER_COMPILER_PRINTBUFFER_H
