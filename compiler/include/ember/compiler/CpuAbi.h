/// \file
/// [Note] CPU kernel ABI
/// =====================
/// A kernel compiled for the `cpu` target exports one function, named after the kernel:
///
///     extern "C" void <kernel>(void **args, const ember::CpuLaunch *launch);
///
/// `args[i]` points to the value of parameter i in its device representation (a device address
/// as a 64-bit pointer, an i64, an f32, ...), exactly like `kernelParams` of `cuLaunchKernel`.
/// The function runs the blocks with linear indices [block_begin, block_end) of the grid
/// (x fastest, then y, then z) and, inside each block, every thread in order (x fastest), with
/// the special registers set as on a GPU. The runtime spreads ranges of blocks over threads.
#ifndef EMBER_COMPILER_CPUABI_H
#define EMBER_COMPILER_CPUABI_H

#include <cstdint>

namespace ember {

struct CpuLaunch {
    int64_t grid_dim[3];
    int64_t block_dim[3];
    int64_t block_begin;
    int64_t block_end;
    /// Bytes of dynamic shared memory per block (the launch's shared_mem_bytes).
    int64_t shared_mem_bytes;
};

using CpuKernelFn = void (*)(void **args, const CpuLaunch *launch);

} // namespace ember

#endif // EMBER_COMPILER_CPUABI_H
