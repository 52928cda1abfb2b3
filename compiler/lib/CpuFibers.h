/// \file
/// The CPU device's runtime for kernels with barriers: the threads of a block run as fibers that
/// switch at every barrier. Called by generated code, through symbols CpuJit defines in every
/// JITDylib (`__ember_cpu_run_block`, `__ember_cpu_barrier`); also the memory every kernel runs
/// in (`__ember_cpu_enter`).
///
/// [Note] CPU kernel memory
/// ========================
/// No kernel runs on the stack of the thread that calls it (a pool thread, or the user's thread
/// for a launch of one block), whose size ember does not choose and below which lies other
/// memory: the exported entry of a kernel ([Note] CPU kernel ABI) calls `ember_cpu_enter`, which
/// switches to a stack the host thread keeps for kernels (CpuLaunch::stack_bytes usable bytes,
/// reserved with mmap, committed as touched, a guard page below; replaced by a bigger one when a
/// launch needs more) and runs the blocks there. The runtime sizes it as fiber stacks are: the
/// kernel's local arrays (CompiledKernel::local_bytes) plus a margin, at least Limit::stack_size,
/// at most 64 MiB plus the margin (a LaunchError naming the kernel above). Every generated
/// function probes its stack frame page by page ("probe-stack"), so a frame that still does not
/// fit faults on the guard page instead of writing past it.
/// A block's shared memory (its static arrays, then the launch's dynamic shared memory at the next
/// 16-byte boundary) comes from an arena the host thread keeps, separate from every stack: the
/// segment ends where a guard page starts, and the arena grows when a launch needs more. Every
/// load, store and atomic through a shared pointer is checked against the segment (offset and
/// size in the launch context); one outside it is recorded in the launch's CpuFault (the runtime
/// throws a LaunchError naming the kernel, the offset and the size) and carried out on a scratch
/// location instead, so it can neither corrupt memory nor crash. Memory that cannot be reserved
/// is recorded as a fault too (MemoryError), never thrown through generated code.
///
/// [Note] CPU fibers
/// =================
/// A kernel that contains a barrier gets, instead of the plain loop over threads, a call per
/// block to `ember_cpu_run_block(thread, args, ctx)`. It starts one fiber per thread of the block,
/// each with its own copy of the launch context (thread_idx filled in) and its own stack,
/// and runs them round robin: a fiber runs until it reaches a barrier or ends; when every fiber
/// has reached the barrier (or ended), all of them continue. A warp operation is a rendezvous of
/// the 32 fibers of one warp (linear thread index / 32): each posts its value, and when the
/// warp's live fibers have all posted, each reads the lane it wants; a second rendezvous keeps
/// the slots until every lane has read. A thread at an mbarrier wait (a kernel with one runs as
/// fibers too) looks at the barrier each round and lets the others run; a round in which only
/// such threads ran and no mbarrier changed means none can ever end, which a GPU would hang on:
/// the launch fails instead (CpuFault::Kind::tensor_op) and every wait returns. A kernel with a
/// cluster barrier, a remote mbarrier arrival or a multicast copy runs all the blocks of a
/// cluster in one scheduler (`ember_cpu_run_cluster`): fibers block by block in rank order, each
/// block with its own shared memory, its barrier released when its own live fibers wait there,
/// the cluster barrier when every live fiber of the cluster does; warps never cross blocks. Stacks
/// (CpuLaunch::stack_bytes reserved, 256 KiB by default, committed as used, with a guard page
/// below) are cached per host thread and reused by later blocks; a launch that needs bigger ones
/// replaces them. The runtime sizes them from the kernel's local arrays
/// (CompiledKernel::local_bytes) plus a margin, and at least to the context's Limit::stack_size;
/// the generated functions probe their stack frames page by page
/// ("probe-stack"), so a frame too big for its stack faults on the guard page instead of
/// writing past it into other memory.
/// On x86-64 a switch is a few instructions of our own (callee-saved registers, MXCSR and the x87
/// control word; no system call): it made the barrier-heavy examples about 6x faster than
/// swapcontext, which saves the signal mask with a system call at every switch. Other hosts use
/// ucontext.
#ifndef EMBER_COMPILER_CPUFIBERS_H
#define EMBER_COMPILER_CPUFIBERS_H

#include "ember/compiler/CpuAbi.h"

#include <cstdint>

namespace ember::detail {

/// The function generated for one GPU thread: loads the parameters from `args` and runs the
/// kernel body with `ctx`.
using CpuThreadFn = void (*)(void **args, int64_t *ctx);

/// Number of i64 slots in the CPU launch context (see [Note] CPU launch context).
inline constexpr unsigned cpu_ctx_slots = 20;
/// Slot of the block's shared memory base address.
inline constexpr unsigned cpu_ctx_shared_slot = 12;
/// Slot of the block's dynamic shared memory address (after the static arrays).
inline constexpr unsigned cpu_ctx_dynamic_shared_slot = 13;
/// Slot of the launch's `CpuFault *` (CpuAbi.h), where misaligned vector accesses are reported.
inline constexpr unsigned cpu_ctx_fault_slot = 14;
/// Slot of the launch's stack size (CpuLaunch::stack_bytes; 0: the default).
inline constexpr unsigned cpu_ctx_stack_slot = 15;
/// Slot of the bytes of the block's shared memory (static and dynamic), what shared-memory
/// accesses are checked against ([Note] CPU kernel memory).
inline constexpr unsigned cpu_ctx_shared_bytes_slot = 16;
/// Slots of the launch's cluster dimensions (x, y, z; 1 without clusters).
inline constexpr unsigned cpu_ctx_cluster_slot = 17;
/// The stack of a launch that asks for none (CpuLaunch::stack_bytes = 0).
inline constexpr uint64_t cpu_default_fiber_stack_bytes = 256 * 1024;

/// The blocks of one launch: `<kernel>.blocks(args, launch, shared)`, run by ember_cpu_enter with
/// `shared` the block's shared memory (null when the kernel has none).
using CpuBlocksFn = void (*)(void **args, const CpuLaunch *launch, void *shared);

/// Runs `blocks` on the calling host thread's kernel stack, with `shared_bytes` of shared memory
/// from its arena ([Note] CPU kernel memory). When either cannot be reserved, records an
/// out_of_memory fault in launch->fault and returns without running the blocks.
void ember_cpu_enter(CpuBlocksFn blocks, void **args, const CpuLaunch *launch, uint64_t shared_bytes);
/// Called by generated code on a shared-memory access of `bytes` bytes at `offset` from the
/// block's shared memory of `shared_bytes` bytes: records it in `fault` (the first fault of the
/// launch) and returns a scratch location of the host thread for the access to use instead.
void *ember_cpu_shared_fault(CpuFault *fault, int64_t offset, uint32_t bytes, uint64_t shared_bytes,
                             uint32_t is_store, int64_t tx, int64_t ty, int64_t tz, int64_t bx, int64_t by,
                             int64_t bz);

/// Runs every thread of the block described by `ctx` (block_idx, block_dim, grid_dim and the
/// shared memory base set; thread_idx ignored).
void ember_cpu_run_block(CpuThreadFn thread, void **args, const int64_t *ctx);
/// Runs every thread of every block of the cluster whose first block `ctx` describes (as for
/// ember_cpu_run_block, with the cluster's dimensions set): block r of the cluster (x fastest)
/// gets the shared memory `shared_stride` bytes after block r - 1's.
void ember_cpu_run_cluster(CpuThreadFn thread, void **args, const int64_t *ctx,
                           uint64_t shared_stride);
/// Called by a fiber at a barrier: returns when every thread of its block has reached one.
void ember_cpu_barrier();
/// Called by a fiber at a cluster barrier: returns when every thread of its cluster has.
void ember_cpu_cluster_barrier();
/// A warp operation (`op` is an ir::WarpOp): posts this lane's `bits`, meets the other lanes of
/// its warp, and returns the shuffled value, the ballot, or warp_any / warp_all as 0 or 1.
uint64_t ember_cpu_warp(int32_t op, uint64_t bits, int32_t lane_arg);
/// A warp matrix multiply-accumulate ([Note] IR semantics: Matrix multiply-accumulate; `input` is
/// an ir::MmaInput, `k` 8 or 16, `c_is_f16` whether C and D are f16): posts this lane's fragments
/// `a`, `b`, `c`, meets the other lanes of its warp, and writes this lane's part of D to `d`.
void ember_cpu_mma(int32_t input, int32_t k, int32_t c_is_f16, const void *a, const void *b,
                   const void *c, void *d);
/// ldmatrix ([Note] IR semantics: Matrix loads): posts this lane's row address, meets the other
/// lanes of its warp, and writes this lane's 2 * `count` 16-bit elements to `out`.
void ember_cpu_ldmatrix(int32_t count, int32_t trans, const void *row, void *out);
/// wgmma ([Note] IR semantics: Warpgroup matrix multiply-accumulate): this thread's n / 2
/// accumulators `acc` += its elements of A B, A and B read from the block's shared memory (B
/// MN-major when b_mn_stride, the bytes between its groups of 64 columns, is not 0).
void ember_cpu_wgmma(int32_t input, int32_t n, const void *a, const void *b, int32_t b_mn_stride,
                     float *acc, const int64_t *ctx);
/// An mbarrier operation (ir::MBarrierOp) on the shared u64 `bar`: a wait switches to the
/// cluster's other fibers until the phase completes; arrive_cluster arrives on the mbarrier at
/// bar's offset in block `value` of the cluster.
void ember_cpu_mbarrier(int32_t op, void *bar, int32_t value, const int64_t *ctx);
/// tma_load: the box of the CpuTensorMap `map` at (x, y) copied to `dst` at once, its bytes
/// completed on `bar`; with `multicast` >= 0, to dst's and bar's offsets in every block of the
/// cluster whose rank is a bit of the mask.
void ember_cpu_tma_load(void *dst, const void *map, int32_t x, int32_t y, void *bar,
                        int32_t multicast, const int64_t *ctx);

} // namespace ember::detail

#endif // EMBER_COMPILER_CPUFIBERS_H
