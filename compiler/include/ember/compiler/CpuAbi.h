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

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember {

/// The first misaligned vector access of a launch ([Note] IR semantics: Vector memory). The
/// generated code checks the address of every vector load and store and reports a misaligned one
/// through `__ember_cpu_misaligned`, which fills this record once (later faults are dropped); the
/// runtime reads it after the launch and throws a LaunchError.
struct CpuFault {
    std::atomic<bool> raised{false};
    uint64_t address = 0;
    uint32_t alignment = 0; ///< the bytes the address had to be a multiple of
    uint32_t bytes = 0;     ///< the size of the access
    bool is_store = false;
    int64_t thread_idx[3] = {0, 0, 0};
    int64_t block_idx[3] = {0, 0, 0};
};

struct CpuLaunch {
    int64_t grid_dim[3];
    int64_t block_dim[3];
    int64_t block_begin;
    int64_t block_end;
    /// Bytes of dynamic shared memory per block (the launch's shared_mem_bytes).
    int64_t shared_mem_bytes;
    /// Where a misaligned vector access is recorded; null: reported on stderr only.
    CpuFault *fault;
    /// Bytes of stack for each fiber of a kernel with barriers or warp operations ([Note] CPU
    /// fibers), guard page excluded; 0 selects the default (256 KiB).
    int64_t fiber_stack_bytes;
};

using CpuKernelFn = void (*)(void **args, const CpuLaunch *launch);

/// The symbol of constant array `name` in a CPU kernel's object: an ordinary writable global,
/// prefixed so that it cannot take the name of a C library function the code calls (`fmod`,
/// `printf`). The runtime finds it with an ORC lookup (CpuModule::symbol).
inline std::string cpu_constant_symbol(std::string_view name) {
    return "__ember_constant_" + std::string(name);
}

} // namespace ember

#endif // EMBER_COMPILER_CPUABI_H
