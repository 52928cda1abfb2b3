/// \file
/// The CPU device's runtime for kernels with barriers: the threads of a block run as fibers that
/// switch at every barrier. Called by generated code, through symbols CpuJit defines in every
/// JITDylib (`__ember_cpu_run_block`, `__ember_cpu_barrier`).
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
/// the slots until every lane has read. Stacks (CpuLaunch::fiber_stack_bytes reserved, 256 KiB
/// by default, committed as used, with a guard page below) are cached per host thread and reused
/// by later blocks; a launch that needs bigger ones replaces them. The runtime sizes them from
/// the kernel's local arrays (CompiledKernel::local_bytes) plus a margin, and at least to the
/// context's Limit::stack_size; the generated functions probe their stack frames page by page
/// ("probe-stack"), so a frame too big for its stack faults on the guard page instead of
/// writing past it into other memory.
/// On x86-64 a switch is a few instructions of our own (callee-saved registers, MXCSR and the x87
/// control word; no system call): it made the barrier-heavy examples about 6x faster than
/// swapcontext, which saves the signal mask with a system call at every switch. Other hosts use
/// ucontext.
#ifndef EMBER_COMPILER_CPUFIBERS_H
#define EMBER_COMPILER_CPUFIBERS_H

#include <cstdint>

namespace ember::detail {

/// The function generated for one GPU thread: loads the parameters from `args` and runs the
/// kernel body with `ctx`.
using CpuThreadFn = void (*)(void **args, int64_t *ctx);

/// Number of i64 slots in the CPU launch context (see [Note] CPU launch context).
inline constexpr unsigned cpu_ctx_slots = 16;
/// Slot of the block's shared memory base address.
inline constexpr unsigned cpu_ctx_shared_slot = 12;
/// Slot of the block's dynamic shared memory address (after the static arrays).
inline constexpr unsigned cpu_ctx_dynamic_shared_slot = 13;
/// Slot of the launch's `CpuFault *` (CpuAbi.h), where misaligned vector accesses are reported.
inline constexpr unsigned cpu_ctx_fault_slot = 14;
/// Slot of the launch's fiber stack size (CpuLaunch::fiber_stack_bytes; 0: the default).
inline constexpr unsigned cpu_ctx_stack_slot = 15;
/// The fiber stack of a launch that asks for none (CpuLaunch::fiber_stack_bytes = 0).
inline constexpr uint64_t cpu_default_fiber_stack_bytes = 256 * 1024;

/// Runs every thread of the block described by `ctx` (block_idx, block_dim, grid_dim and the
/// shared memory base set; thread_idx ignored).
void ember_cpu_run_block(CpuThreadFn thread, void **args, const int64_t *ctx);
/// Called by a fiber at a barrier: returns when every thread of its block has reached one.
void ember_cpu_barrier();
/// A warp operation (`op` is an ir::WarpOp): posts this lane's `bits`, meets the other lanes of
/// its warp, and returns the shuffled value, the ballot, or warp_any / warp_all as 0 or 1.
uint64_t ember_cpu_warp(int32_t op, uint64_t bits, int32_t lane_arg);

} // namespace ember::detail

#endif // EMBER_COMPILER_CPUFIBERS_H
