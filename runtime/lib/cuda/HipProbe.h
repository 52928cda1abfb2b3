/// \file
/// Whether an AMD GPU is present, asked of the HIP runtime through dlopen (no ROCm at build time).
#ifndef EMBER_RUNTIME_CUDA_HIPPROBE_H
#define EMBER_RUNTIME_CUDA_HIPPROBE_H

namespace ember::detail {

/// The number of HIP devices (hipGetDeviceCount from libamdhip64.so, .so.6 or .so.5); 0 when the
/// library is missing, lacks the symbol or reports an error. Asks once per process; the library
/// stays loaded.
int hip_device_count() noexcept;

} // namespace ember::detail

#endif // EMBER_RUNTIME_CUDA_HIPPROBE_H
