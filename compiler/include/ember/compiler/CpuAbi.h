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
/// The function does not run the blocks on the caller's stack: it switches to a stack of
/// `stack_bytes` that the host thread keeps for kernels, and takes the block's shared memory from
/// an arena the host thread keeps too ([Note] CPU kernel memory in compiler/lib/CpuFibers.h).
#ifndef EMBER_COMPILER_CPUABI_H
#define EMBER_COMPILER_CPUABI_H

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember {

/// The first fault of a launch, which the runtime reads after the launch and turns into an
/// exception; later faults are dropped:
/// * a misaligned vector access ([Note] IR semantics: Vector memory): the generated code checks
///   the address of every vector load and store and reports a misaligned one through
///   `__ember_cpu_misaligned` (LaunchError);
/// * a shared-memory access outside the block's shared memory (its static arrays and the launch's
///   dynamic shared memory): the generated code checks every load, store and atomic through a
///   shared pointer and reports through `__ember_cpu_shared_fault` (LaunchError), then carries
///   the access out on a scratch location instead;
/// * memory the CPU device could not reserve for the launch (a kernel stack, fiber stacks, shared
///   memory): the blocks concerned do not run (MemoryError);
/// * a warp matrix operation (mma, ldmatrix) that ran without all 32 lanes of its warp (a partial
///   last warp, or lanes that returned before it): its result is zeros (LaunchError);
/// * an asynchronous tensor operation (wgmma, mbarrier, tma_load) the CPU device cannot carry
///   out as the IR's semantics say (an operand outside shared memory or not laid out as
///   required, a pointer that is not a tensor map, an mbarrier wait no thread can end):
///   `message` says which and why (LaunchError).
struct CpuFault {
    enum class Kind : uint8_t {
        misaligned,
        shared_out_of_bounds,
        out_of_memory,
        incomplete_warp,
        tensor_op
    };
    std::atomic<bool> raised{false};
    Kind kind = Kind::misaligned;
    uint64_t address = 0;
    uint32_t alignment = 0; ///< misaligned: the bytes the address had to be a multiple of
    uint32_t bytes = 0;     ///< the size of the access
    bool is_store = false;  ///< a store or an atomic (misaligned, shared_out_of_bounds)
    uint32_t lanes = 0;     ///< incomplete_warp: the lanes of the warp that were alive
    int64_t thread_idx[3] = {0, 0, 0};
    int64_t block_idx[3] = {0, 0, 0};
    /// shared_out_of_bounds: the access's offset from the start of the block's shared memory
    /// (negative before it) and the bytes of shared memory the block has.
    int64_t shared_offset = 0;
    uint64_t shared_bytes = 0;
    /// out_of_memory: what could not be reserved ("the kernel stack", ...), its bytes, errno.
    const char *resource = nullptr;
    uint64_t resource_bytes = 0;
    int error = 0;
    /// tensor_op: what went wrong.
    char message[240] = {};
};

struct CpuLaunch {
    int64_t grid_dim[3];
    int64_t block_dim[3];
    int64_t block_begin;
    int64_t block_end;
    /// Bytes of dynamic shared memory per block (the launch's shared_mem_bytes).
    int64_t shared_mem_bytes;
    /// Where the launch's first fault is recorded; null: reported on stderr only.
    CpuFault *fault;
    /// Bytes of stack for each GPU thread, guard page excluded ([Note] CPU kernel memory): the
    /// host thread's kernel stack, and the fibers of a kernel with barriers or warp operations
    /// ([Note] CPU fibers); 0 selects the default (256 KiB).
    int64_t stack_bytes;
    /// Blocks per cluster in x, y and z (0 or 1: no clusters). The grid's dimensions are
    /// multiples of them, and block_begin and block_end multiples of the cluster's size. A
    /// kernel that runs a cluster's blocks together ([Note] CPU fibers) numbers the blocks
    /// cluster by cluster (a cluster's consecutive, x fastest; the clusters x fastest), so it gets
    /// all of a cluster's blocks in one call; other kernels number them x fastest over the grid.
    int64_t cluster_dim[3] = {0, 0, 0};
};

using CpuKernelFn = void (*)(void **args, const CpuLaunch *launch);

/// The CPU device's tensor map: the 128 bytes a `TensorMap<T>` kernel parameter points to on the
/// CPU device, which `tma_load` reads ([Note] IR semantics: Tensor memory accelerator). On an
/// NVIDIA GPU the same 128 bytes hold the driver's CUtensorMap (cuTensorMapEncodeTiled). A
/// row-major matrix of `dims[1]` rows of `dims[0]` elements of `element_bytes` bytes, rows
/// `row_stride_bytes` apart from `base`; one load copies a box of `box[1]` rows of `box[0]`
/// elements to shared memory, rows of box[0] * element_bytes bytes one after the other, the 16-byte
/// chunks of each row permuted by `swizzle_bytes` (0: none; 32, 64, 128: CUDA's
/// CU_TENSOR_MAP_SWIZZLE_32B/64B/128B). Elements outside the matrix read as zeros.
struct CpuTensorMap {
    static constexpr uint64_t kMagic = 0x70616d726f736e65; ///< "ensormap" (little-endian)
    uint64_t magic = kMagic;
    const void *base = nullptr;
    uint64_t dims[2] = {0, 0};
    uint64_t row_stride_bytes = 0;
    uint32_t box[2] = {0, 0};
    uint32_t element_bytes = 0;
    uint32_t swizzle_bytes = 0;
};
static_assert(sizeof(CpuTensorMap) <= 128, "a tensor map is 128 bytes on every device");

/// The symbol of constant array `name` in a CPU kernel's object: an ordinary writable global,
/// prefixed so that it cannot take the name of a C library function the code calls (`fmod`,
/// `printf`). The runtime finds it with an ORC lookup (CpuModule::symbol).
inline std::string cpu_constant_symbol(std::string_view name) {
    return "__ember_constant_" + std::string(name);
}

} // namespace ember

#endif // EMBER_COMPILER_CPUABI_H
