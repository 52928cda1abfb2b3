/// \file
/// The fiber scheduler of the CPU device (see [Note] CPU fibers in CpuFibers.h), and the stacks
/// and shared memory every kernel runs in ([Note] CPU kernel memory).
#include "CpuFibers.h"

#include "ember/Float16.h"
#include "ember/Float8.h"
#include "ember/compiler/IR.h"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define EMBER_FIBER_ASM 1
#else
#include <ucontext.h>
#define EMBER_FIBER_ASM 0
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_FIBER_ASAN 1
#endif
#ifdef EMBER_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#if EMBER_FIBER_ASM
// The context switch: saves the callee-saved registers, the SSE control/status (MXCSR) and the
// x87 control word on the current stack, stores the stack pointer in *from, and resumes the
// context whose stack pointer is `to`. No system call (swapcontext saves the signal mask with
// one, which made every barrier cost a microsecond or more per thread).
extern "C" void ember_fiber_switch(void **from, void *to);
extern "C" void ember_fiber_entry();
extern "C" void ember_kernel_stack_entry();
asm(R"(
    .text
    .p2align 4
    .globl ember_fiber_switch
    .hidden ember_fiber_switch
    .type ember_fiber_switch, @function
ember_fiber_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ember_fiber_switch, .-ember_fiber_switch

    .p2align 4
    .globl ember_fiber_entry
    .hidden ember_fiber_entry
    .type ember_fiber_entry, @function
ember_fiber_entry:
    call ember_fiber_main
    ud2
    .size ember_fiber_entry, .-ember_fiber_entry

    .p2align 4
    .globl ember_kernel_stack_entry
    .hidden ember_kernel_stack_entry
    .type ember_kernel_stack_entry, @function
ember_kernel_stack_entry:
    call ember_kernel_stack_main
    ud2
    .size ember_kernel_stack_entry, .-ember_kernel_stack_entry
)");
#endif

namespace ember::detail {

namespace {

size_t page_bytes() {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
}

/// A fiber stack: `bytes` usable bytes above a guard page, reserved with mmap (committed as
/// touched).
struct Stack {
    void *base = nullptr; ///< the guard page
    size_t bytes = 0;     ///< usable bytes above it
    void *top() const { return static_cast<char *>(base) + page_bytes() + bytes; }
};

/// Spinning: waiting in an mbarrier wait, to be resumed in the next round to look again.
enum class FiberState : uint8_t { Ready, AtBarrier, AtClusterBarrier, AtWarp, Spinning, Done };

struct Fiber {
#if EMBER_FIBER_ASM
    void *sp = nullptr; ///< the saved stack pointer while the fiber is switched out
#else
    ucontext_t context;
#endif
    int64_t ctx[cpu_ctx_slots];
    FiberState state = FiberState::Ready;
    uint64_t posted = 0;   // this lane's value in a warp operation
    Stack stack;         // owned by the Stacks cache
};

/// Stacks cached per host thread and unmapped when it exits. A launch that needs bigger stacks
/// than the cached ones replaces them.
class Stacks {
public:
    ~Stacks() {
        for (Stack &s : stacks_) munmap(s.base, s.bytes + page_bytes());
    }
    /// Stack `i`, with at least `bytes` usable bytes (a multiple of the page size); null with
    /// errno set when it cannot be reserved. Never throws: it is called from generated code.
    const Stack *get(size_t i, size_t bytes) noexcept {
        if (stacks_.size() <= i) {
            try {
                stacks_.resize(i + 1);
            } catch (const std::bad_alloc &) {
                errno = ENOMEM;
                return nullptr;
            }
        }
        Stack &s = stacks_[i];
        if (s.base && s.bytes >= bytes) return &s;
        if (s.base) munmap(s.base, s.bytes + page_bytes());
        s = Stack{};
        const size_t total = bytes + page_bytes();
        void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                       -1, 0);
        if (p == MAP_FAILED) return nullptr;
        // The guard page: a frame that overflows the stack faults here (frames are probed page by
        // page, see [Note] CPU fibers) instead of writing into the memory below.
        if (mprotect(p, page_bytes(), PROT_NONE) != 0) {
            const int err = errno;
            munmap(p, total);
            errno = err;
            return nullptr;
        }
        s.base = p;
        s.bytes = bytes;
        return &s;
    }

private:
    std::vector<Stack> stacks_;
};

/// The shared memory of the blocks a host thread runs ([Note] CPU kernel memory): one mapping,
/// unmapped when the thread exits, whose last page is a guard page; a launch that needs more
/// replaces it.
class SharedArena {
public:
    ~SharedArena() {
        if (base_) munmap(base_, usable_ + page_bytes());
    }
    /// `bytes` bytes, 64-byte aligned, ending where the guard page starts (as closely as the
    /// alignment allows); null with errno set when they cannot be reserved.
    void *get(uint64_t bytes) noexcept {
        const size_t need = (bytes + 63) / 64 * 64;
        if (need > usable_) {
            if (base_) munmap(base_, usable_ + page_bytes());
            base_ = nullptr;
            usable_ = 0;
            const size_t usable = (need + page_bytes() - 1) / page_bytes() * page_bytes();
            void *p = mmap(nullptr, usable + page_bytes(), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == MAP_FAILED) return nullptr;
            if (mprotect(static_cast<char *>(p) + usable, page_bytes(), PROT_NONE) != 0) {
                const int err = errno;
                munmap(p, usable + page_bytes());
                errno = err;
                return nullptr;
            }
            base_ = p;
            usable_ = usable;
        }
        return static_cast<char *>(base_) + usable_ - need;
    }

private:
    void *base_ = nullptr;
    size_t usable_ = 0;
};

/// Records that `bytes` of `resource` could not be reserved (errno `err`) as the launch's fault.
void report_out_of_memory(CpuFault *fault, const char *resource, uint64_t bytes, int err) noexcept {
    if (!fault) { // a launch without a record (a test calling the entry directly): say it at least
        std::fprintf(stderr, "ember: the CPU device cannot reserve %llu bytes for %s (%s); blocks did not run\n",
                     static_cast<unsigned long long>(bytes), resource, std::strerror(err));
        return;
    }
    bool expected = false;
    if (!fault->raised.compare_exchange_strong(expected, true)) return;
    fault->kind = CpuFault::Kind::out_of_memory;
    fault->resource = resource;
    fault->resource_bytes = bytes;
    fault->error = err;
}

struct Scheduler {
#if EMBER_FIBER_ASM
    void *main_sp = nullptr;
#else
    ucontext_t main;
#endif
    /// The scheduler's own stack, for AddressSanitizer's fiber switches (asan_start_switch).
    const void *main_bottom = nullptr;
    size_t main_bytes = 0;
    /// The threads of every block of the cluster (one block without clusters), block by block
    /// in the order of their ranks.
    std::vector<Fiber> fibers;
    size_t block_threads = 0; ///< threads per block
    /// The shared memory of the cluster's blocks, by rank.
    std::vector<unsigned char *> block_shared;
    size_t current = 0;
    CpuThreadFn thread = nullptr;
    void **args = nullptr;
    /// Counts the changes of the cluster's mbarriers: a round in which only spinning fibers ran
    /// and it did not move can never end (every waiting thread waits for another).
    uint64_t mbarrier_epoch = 0;
    /// Set when that happened: every wait returns at once (the launch has failed).
    bool stuck = false;
};

thread_local Scheduler *active = nullptr;
thread_local Stacks stacks;
/// The host thread's kernel stack (stack 0) and shared memory ([Note] CPU kernel memory).
thread_local Stacks kernel_stack;
thread_local SharedArena shared_arena;

/// What ember_cpu_enter runs on the kernel stack.
struct KernelCall {
    CpuBlocksFn blocks;
    void **args;
    const CpuLaunch *launch;
    void *shared;
    const void *caller_bottom = nullptr; ///< the caller's stack, for AddressSanitizer
    size_t caller_bytes = 0;
#if EMBER_FIBER_ASM
    void *return_sp = nullptr;
    void *stack_sp = nullptr;
#else
    ucontext_t caller;
#endif
};
thread_local KernelCall *kernel_call = nullptr;

// AddressSanitizer must know which stack runs: it checks accesses against the bounds of the
// current stack and keeps a fake stack per stack (detect_stack_use_after_return). Each switch is
// announced before it (`start`: the stack it goes to; a null `fake` when the stack left behind
// is done for good) and confirmed on the new stack (`finish`, which also tells the stack it came
// from). Without ASan these are no-ops.
void asan_start_switch(void **fake, const void *bottom, size_t bytes) {
#ifdef EMBER_FIBER_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, bytes);
#else
    (void)fake, (void)bottom, (void)bytes;
#endif
}

void asan_finish_switch(void *fake, const void **from_bottom, size_t *from_bytes) {
#ifdef EMBER_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake, from_bottom, from_bytes);
#else
    (void)fake, (void)from_bottom, (void)from_bytes;
#endif
}

const void *stack_bottom(const Stack &stack) { return static_cast<char *>(stack.base) + page_bytes(); }

/// Switches from the scheduler to fiber `f`, and back when it waits or ends.
void resume(Scheduler &s, Fiber &f) {
    void *fake = nullptr;
    asan_start_switch(&fake, stack_bottom(f.stack), f.stack.bytes);
#if EMBER_FIBER_ASM
    ember_fiber_switch(&s.main_sp, f.sp);
#else
    swapcontext(&s.main, &f.context);
#endif
    asan_finish_switch(fake, nullptr, nullptr);
}

/// Switches from the current fiber `f` back to the scheduler.
void suspend(Scheduler &s, Fiber &f) {
    void *fake = nullptr;
    asan_start_switch(&fake, s.main_bottom, s.main_bytes);
#if EMBER_FIBER_ASM
    ember_fiber_switch(&f.sp, s.main_sp);
#else
    swapcontext(&f.context, &s.main);
#endif
    asan_finish_switch(fake, &s.main_bottom, &s.main_bytes);
}

/// The body of every fiber: runs the current GPU thread, then returns to the scheduler for good.
void run_current() {
    Scheduler &s = *active;
    asan_finish_switch(nullptr, &s.main_bottom, &s.main_bytes); // the fiber's first switch
    Fiber &f = s.fibers[s.current];
    s.thread(s.args, f.ctx);
    f.state = FiberState::Done;
}

#if EMBER_FIBER_ASM
/// A fresh stack for ember_fiber_switch to resume: what it pops (MXCSR and x87 control word, six
/// registers), then the return address `entry` (ember_fiber_entry, ember_kernel_stack_entry),
/// which leaves the stack pointer 16-byte aligned for its call, as the ABI wants.
void *initial_stack(const Stack &stack, void (*entry)() = &ember_fiber_entry) {
    auto top = reinterpret_cast<uintptr_t>(stack.top());
    top &= ~uintptr_t(15);
    auto *sp = reinterpret_cast<uint64_t *>(top - 64);
    uint32_t mxcsr;
    uint16_t fcw;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fcw));
    sp[0] = mxcsr | (uint64_t(fcw) << 32);
    for (int r = 1; r <= 6; ++r) sp[r] = 0; // r15 r14 r13 r12 rbx rbp
    sp[7] = reinterpret_cast<uint64_t>(entry);
    return sp;
}
#else
// makecontext passes int arguments only.
void trampoline(int) {
    run_current();
    asan_start_switch(nullptr, active->main_bottom, active->main_bytes); // the fiber's last switch
    // Returning resumes uc_link: the scheduler.
}
void kernel_stack_trampoline() {
    KernelCall &c = *kernel_call;
    asan_finish_switch(nullptr, &c.caller_bottom, &c.caller_bytes);
    c.blocks(c.args, c.launch, c.shared);
    asan_start_switch(nullptr, c.caller_bottom, c.caller_bytes); // this call's last switch
    // Returning resumes uc_link: ember_cpu_enter.
}
#endif

} // namespace

#if EMBER_FIBER_ASM
extern "C" __attribute__((used, visibility("hidden"))) void ember_fiber_main() {
    run_current();
    Scheduler &s = *active;
    asan_start_switch(nullptr, s.main_bottom, s.main_bytes); // the fiber's last switch
    ember_fiber_switch(&s.fibers[s.current].sp, s.main_sp); // never comes back
    __builtin_unreachable();
}

extern "C" __attribute__((used, visibility("hidden"))) void ember_kernel_stack_main() {
    KernelCall &c = *kernel_call;
    asan_finish_switch(nullptr, &c.caller_bottom, &c.caller_bytes);
    c.blocks(c.args, c.launch, c.shared);
    asan_start_switch(nullptr, c.caller_bottom, c.caller_bytes); // this call's last switch
    ember_fiber_switch(&c.stack_sp, c.return_sp); // never comes back
    __builtin_unreachable();
}
#endif

void ember_cpu_enter(CpuBlocksFn blocks, void **args, const CpuLaunch *launch, uint64_t shared_bytes) {
    void *shared = nullptr;
    if (shared_bytes > 0) {
        shared = shared_arena.get(shared_bytes);
        if (!shared) return report_out_of_memory(launch->fault, "the shared memory of a block", shared_bytes, errno);
    }
    if (kernel_call) { // already on the kernel stack (a kernel does not launch kernels; be safe)
        blocks(args, launch, shared);
        return;
    }
    const int64_t asked = launch->stack_bytes;
    size_t bytes = asked > 0 ? static_cast<size_t>(asked) : cpu_default_fiber_stack_bytes;
    bytes = (bytes + page_bytes() - 1) / page_bytes() * page_bytes();
    const Stack *stack = kernel_stack.get(0, bytes);
    if (!stack) return report_out_of_memory(launch->fault, "the kernel stack of a host thread", bytes, errno);
    KernelCall call{blocks, args, launch, shared};
    kernel_call = &call;
#ifdef EMBER_FIBER_ASAN
    // The last call's frames never returned: their shadow is stale.
    ASAN_UNPOISON_MEMORY_REGION(stack_bottom(*stack), stack->bytes);
#endif
    void *fake = nullptr;
    asan_start_switch(&fake, stack_bottom(*stack), stack->bytes);
#if EMBER_FIBER_ASM
    ember_fiber_switch(&call.return_sp, initial_stack(*stack, &ember_kernel_stack_entry));
#else
    ucontext_t callee;
    getcontext(&callee);
    callee.uc_stack.ss_sp = static_cast<char *>(stack->base) + page_bytes();
    callee.uc_stack.ss_size = stack->bytes;
    callee.uc_link = &call.caller;
    makecontext(&callee, &kernel_stack_trampoline, 0);
    swapcontext(&call.caller, &callee);
#endif
    asan_finish_switch(fake, nullptr, nullptr);
    kernel_call = nullptr;
}

void *ember_cpu_shared_fault(CpuFault *fault, int64_t offset, uint32_t bytes, uint64_t shared_bytes,
                             uint32_t is_store, int64_t tx, int64_t ty, int64_t tz, int64_t bx, int64_t by,
                             int64_t bz) {
    // The widest access is a vector of 16 lanes of 8 bytes.
    alignas(64) static thread_local unsigned char scratch[256];
    if (!fault) { // a launch without a record (a test calling the entry directly): say it at least
        std::fprintf(stderr,
                     "ember: %u-byte shared-memory %s at offset %lld, outside the block's %llu bytes of shared "
                     "memory (carried out on a scratch location)\n",
                     bytes, is_store ? "store" : "load", static_cast<long long>(offset),
                     static_cast<unsigned long long>(shared_bytes));
        return scratch;
    }
    bool expected = false;
    if (fault->raised.compare_exchange_strong(expected, true)) {
        fault->kind = CpuFault::Kind::shared_out_of_bounds;
        fault->bytes = bytes;
        fault->is_store = is_store != 0;
        fault->shared_offset = offset;
        fault->shared_bytes = shared_bytes;
        fault->thread_idx[0] = tx, fault->thread_idx[1] = ty, fault->thread_idx[2] = tz;
        fault->block_idx[0] = bx, fault->block_idx[1] = by, fault->block_idx[2] = bz;
    }
    return scratch;
}

namespace {
/// Records, once per launch, that the fibers of `s` can never all meet: the first one waiting at
/// an mbarrier (every wait returns from now on).
void report_stuck(Scheduler &s) {
    s.stuck = true;
    size_t i = 0;
    while (i + 1 < s.fibers.size() && s.fibers[i].state != FiberState::Spinning) ++i;
    const int64_t *ctx = s.fibers[i].ctx;
    auto *fault = reinterpret_cast<CpuFault *>(ctx[cpu_ctx_fault_slot]);
    bool expected = false;
    const char *whose = s.block_shared.size() > 1 ? "cluster" : "block";
    const char *text = "an mbarrier wait that no thread of the %s can end (the phase it waits "
                       "for needs arrivals or copies that never come): the kernel would hang on "
                       "a GPU";
    if (!fault) {
        std::fprintf(stderr, "ember: ");
        std::fprintf(stderr, text, whose);
        std::fprintf(stderr, "\n");
    } else if (fault->raised.compare_exchange_strong(expected, true)) {
        fault->kind = CpuFault::Kind::tensor_op;
        std::snprintf(fault->message, sizeof fault->message, text, whose);
        for (int d = 0; d < 3; ++d) fault->thread_idx[d] = ctx[d], fault->block_idx[d] = ctx[3 + d];
    }
}

/// Runs the threads of `blocks` blocks as fibers ([Note] CPU fibers): block r (its rank in the
/// cluster, x fastest) at block_idx = ctx's block_idx + its place in the cluster, its shared
/// memory `shared_stride` bytes after block r - 1's.
void run_blocks(CpuThreadFn thread, void **args, const int64_t *ctx, size_t blocks,
                uint64_t shared_stride) {
    const int64_t bx = ctx[6], by = ctx[7], bz = ctx[8];
    const size_t per_block = static_cast<size_t>(bx * by * bz), n = per_block * blocks;
    const int64_t cx = std::max<int64_t>(1, ctx[cpu_ctx_cluster_slot]),
                  cy = std::max<int64_t>(1, ctx[cpu_ctx_cluster_slot + 1]);
    // The launch's stack size ([Note] CPU fibers), whole pages.
    const int64_t asked = ctx[cpu_ctx_stack_slot];
    size_t stack_bytes = asked > 0 ? static_cast<size_t>(asked) : cpu_default_fiber_stack_bytes;
    stack_bytes = (stack_bytes + page_bytes() - 1) / page_bytes() * page_bytes();
    Scheduler s;
    s.thread = thread;
    s.args = args;
    s.block_threads = per_block;
    s.fibers.resize(n);
    for (size_t r = 0; r < blocks; ++r)
        s.block_shared.push_back(reinterpret_cast<unsigned char *>(ctx[cpu_ctx_shared_slot]) +
                                 r * shared_stride);
    for (size_t i = 0; i < n; ++i) {
        Fiber &f = s.fibers[i];
        std::memcpy(f.ctx, ctx, sizeof f.ctx);
        const int64_t linear = static_cast<int64_t>(i % per_block),
                      rank = static_cast<int64_t>(i / per_block);
        f.ctx[0] = linear % bx;
        f.ctx[1] = (linear / bx) % by;
        f.ctx[2] = linear / (bx * by);
        f.ctx[3] += rank % cx;
        f.ctx[4] += (rank / cx) % cy;
        f.ctx[5] += rank / (cx * cy);
        if (ctx[cpu_ctx_shared_slot]) {
            const int64_t moved = static_cast<int64_t>(uint64_t(rank) * shared_stride);
            f.ctx[cpu_ctx_shared_slot] += moved;
            f.ctx[cpu_ctx_dynamic_shared_slot] += moved;
        }
        const Stack *stack = stacks.get(i, stack_bytes);
        if (!stack) {
            const int err = errno;
            return report_out_of_memory(reinterpret_cast<CpuFault *>(ctx[cpu_ctx_fault_slot]),
                                        blocks > 1 ? "the fiber stacks of a cluster"
                                                   : "the fiber stacks of a block",
                                        stack_bytes * n, err);
        }
        f.stack = *stack;
#ifdef EMBER_FIBER_ASAN
        // A fiber that ended on this stack left the shadow of its frames behind (they never
        // returned): the next one starts clean.
        ASAN_UNPOISON_MEMORY_REGION(stack_bottom(f.stack), f.stack.bytes);
#endif
#if EMBER_FIBER_ASM
        f.sp = initial_stack(f.stack);
#else
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = static_cast<char *>(f.stack.base) + page_bytes();
        f.context.uc_stack.ss_size = f.stack.bytes;
        f.context.uc_link = &s.main;
        makecontext(&f.context, reinterpret_cast<void (*)()>(&trampoline), 1, static_cast<int>(i));
#endif
    }
    Scheduler *outer = active;
    active = &s;
    // Round robin: run each ready fiber until it waits or ends (a fiber spinning at an mbarrier
    // wait runs again every round). Then release every warp whose live fibers all wait at a warp
    // operation; failing that, every block whose live fibers all wait at its barrier; failing
    // that, the cluster barrier once every live fiber of the cluster waits there; failing that,
    // while fibers spin, go round again. Stop when all have ended.
    bool reported = false;
    std::vector<size_t> live_in(blocks), at_barrier_in(blocks);
    for (;;) {
        const uint64_t epoch = s.mbarrier_epoch;
        bool progress = false; // a fiber that ran did something other than spin again
        for (size_t i = 0; i < n; ++i) {
            const FiberState before = s.fibers[i].state;
            if (before != FiberState::Ready && before != FiberState::Spinning) continue;
            s.current = i;
            s.fibers[i].state = FiberState::Ready;
            resume(s, s.fibers[i]);
            progress |= before != FiberState::Spinning || s.fibers[i].state != FiberState::Spinning;
        }
        size_t live = 0, at_cluster = 0, spinning = 0;
        bool released = false;
        for (size_t r = 0; r < blocks; ++r) {
            live_in[r] = at_barrier_in[r] = 0;
            for (size_t w = r * per_block; w < (r + 1) * per_block; w += 32) {
                size_t waiting = 0, alive = 0;
                const size_t warp_end = std::min((r + 1) * per_block, w + 32);
                for (size_t i = w; i < warp_end; ++i) {
                    FiberState st = s.fibers[i].state;
                    if (st == FiberState::Done) continue;
                    ++alive;
                    waiting += st == FiberState::AtWarp;
                    at_barrier_in[r] += st == FiberState::AtBarrier;
                    at_cluster += st == FiberState::AtClusterBarrier;
                    spinning += st == FiberState::Spinning;
                }
                live_in[r] += alive;
                if (alive > 0 && waiting == alive) {
                    for (size_t i = w; i < warp_end; ++i)
                        if (s.fibers[i].state == FiberState::AtWarp)
                            s.fibers[i].state = FiberState::Ready;
                    released = true;
                }
            }
            live += live_in[r];
        }
        if (live == 0) break;
        if (released) continue;
        for (size_t r = 0; r < blocks; ++r) {
            if (live_in[r] == 0 || at_barrier_in[r] != live_in[r]) continue;
            for (size_t i = r * per_block; i < (r + 1) * per_block; ++i)
                if (s.fibers[i].state == FiberState::AtBarrier)
                    s.fibers[i].state = FiberState::Ready;
            released = true;
        }
        if (released) continue;
        if (at_cluster == live) {
            for (Fiber &f : s.fibers)
                if (f.state == FiberState::AtClusterBarrier) f.state = FiberState::Ready;
            continue;
        }
        if (spinning > 0) {
            // Threads wait at mbarriers. Go round again while anything moves; when nothing can,
            // the kernel would hang on a GPU: record the fault and let every wait return.
            if (!progress && s.mbarrier_epoch == epoch && !s.stuck) report_stuck(s);
            continue;
        }
        if (!reported) {
            // Some lanes of a warp wait at a warp operation while others wait at a barrier, or
            // the threads of a block or cluster wait at different barriers: the kernel breaks
            // [Note] IR semantics (undefined on GPUs too). Let everyone go on.
            reported = true;
            std::fprintf(stderr, "ember: error: the threads of a block reached different barriers or "
                                 "warp operations (every lane of a warp must take the same path); "
                                 "the results are undefined\n");
        }
        for (Fiber &f : s.fibers)
            if (f.state == FiberState::AtBarrier || f.state == FiberState::AtClusterBarrier ||
                f.state == FiberState::AtWarp)
                f.state = FiberState::Ready;
    }
    active = outer;
}
} // namespace

void ember_cpu_run_block(CpuThreadFn thread, void **args, const int64_t *ctx) {
    run_blocks(thread, args, ctx, 1, 0);
}

void ember_cpu_run_cluster(CpuThreadFn thread, void **args, const int64_t *ctx,
                           uint64_t shared_stride) {
    int64_t blocks = 1;
    for (unsigned d = 0; d < 3; ++d) blocks *= std::max<int64_t>(1, ctx[cpu_ctx_cluster_slot + d]);
    run_blocks(thread, args, ctx, static_cast<size_t>(blocks), shared_stride);
}

namespace {
void wait(Scheduler &s, FiberState why) {
    Fiber &f = s.fibers[s.current];
    f.state = why;
    suspend(s, f);
}

/// The first fiber of fiber `me`'s warp (warps do not cross blocks).
size_t warp_first(const Scheduler &s, size_t me) {
    const size_t block = me / s.block_threads * s.block_threads;
    return block + (me - block) / 32 * 32;
}
/// The fibers of the warp that starts at `first`: 32, fewer in a block's partial last warp.
size_t warp_count(const Scheduler &s, size_t first) {
    const size_t block_end = (first / s.block_threads + 1) * s.block_threads;
    return std::min<size_t>(32, block_end - first);
}
} // namespace

uint64_t ember_cpu_warp(int32_t op, uint64_t bits, int32_t lane_arg) {
    Scheduler &s = *active;
    const size_t me = s.current;
    const size_t first = warp_first(s, me), count = warp_count(s, first);
    const int64_t lane = static_cast<int64_t>(me - first);
    s.fibers[me].posted = bits;
    wait(s, FiberState::AtWarp); // every live lane has posted
    auto value_of = [&](int64_t src) {
        return src >= 0 && src < static_cast<int64_t>(count) ? s.fibers[first + static_cast<size_t>(src)].posted
                                                             : bits;
    };
    uint64_t result = 0;
    switch (op) {
    case 0: result = value_of(((lane_arg % 32) + 32) % 32); break;           // shuffle_idx
    case 1: result = value_of(lane - lane_arg); break;                        // shuffle_up
    case 2: result = value_of(lane + lane_arg); break;                        // shuffle_down
    case 3: result = value_of(lane ^ static_cast<int64_t>(lane_arg & 31)); break; // shuffle_xor
    default: {
        uint64_t ballot = 0;
        size_t alive = 0;
        for (size_t i = 0; i < count; ++i) {
            if (s.fibers[first + i].state == FiberState::Done) continue;
            ++alive;
            if (s.fibers[first + i].posted & 1) ballot |= uint64_t(1) << i;
        }
        const size_t set = static_cast<size_t>(__builtin_popcountll(ballot));
        // ballot and wave_ballot (the wave is the warp here), warp_any, warp_all.
        result = op == 4 || op == 7 ? ballot : op == 5 ? uint64_t(set > 0) : uint64_t(set == alive);
    }
    }
    wait(s, FiberState::AtWarp); // every live lane has read: the slots may be reused
    return result;
}

namespace {
/// Whether every one of the 32 lanes of the warp starting at fiber `first` is alive at a warp
/// matrix operation; where not, records the launch's fault (the operation is undefined on a GPU).
bool whole_warp(Scheduler &s, size_t first, size_t me) {
    size_t alive = 0;
    for (size_t i = first; i < first + warp_count(s, first); ++i)
        alive += s.fibers[i].state != FiberState::Done;
    if (alive == 32) return true;
    const int64_t *ctx = s.fibers[me].ctx;
    auto *fault = reinterpret_cast<CpuFault *>(ctx[cpu_ctx_fault_slot]);
    if (!fault) {
        std::fprintf(stderr, "ember: a warp matrix operation ran with %zu of its warp's 32 lanes\n",
                     alive);
        return false;
    }
    bool expected = false;
    if (fault->raised.compare_exchange_strong(expected, true)) {
        fault->kind = CpuFault::Kind::incomplete_warp;
        fault->lanes = static_cast<uint32_t>(alive);
        for (int d = 0; d < 3; ++d) fault->thread_idx[d] = ctx[d], fault->block_idx[d] = ctx[3 + d];
    }
    return false;
}

/// Element `i` of a fragment of `input` (an ir::MmaInput: f16, bf16, tf32, e4m3, e5m2) as a
/// float; tf32 keeps the sign, the exponent and the 10 high bits of the mantissa.
float fragment_element(int32_t input, const void *fragment, unsigned i) {
    const auto in = static_cast<ir::MmaInput>(input);
    if (in == ir::MmaInput::E4M3 || in == ir::MmaInput::E5M2) {
        const uint8_t byte = static_cast<const uint8_t *>(fragment)[i];
        return in == ir::MmaInput::E4M3 ? e4m3_bits_to_float(byte) : e5m2_bits_to_float(byte);
    }
    if (input == 2) {
        uint32_t bits;
        std::memcpy(&bits, static_cast<const char *>(fragment) + 4 * i, 4);
        bits &= ~uint32_t(0x1fff);
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, static_cast<const char *>(fragment) + 2 * i, 2);
    if (input == 0) return half_bits_to_float(h);
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

/// What a lane posts for an mma: where its fragments are.
struct MmaOperands {
    const void *a, *b, *c;
};
} // namespace

void ember_cpu_mma(int32_t input, int32_t k, int32_t c_is_f16, const void *a, const void *b,
                   const void *c, void *d) {
    Scheduler &s = *active;
    const size_t me = s.current, first = warp_first(s, me);
    const MmaOperands mine{a, b, c};
    s.fibers[me].posted = reinterpret_cast<uintptr_t>(&mine);
    wait(s, FiberState::AtWarp); // every live lane has posted
    float out[4] = {0, 0, 0, 0};
    if (whole_warp(s, first, me)) {
        auto lane_of = [&](unsigned l) {
            return reinterpret_cast<const MmaOperands *>(s.fibers[first + l].posted);
        };
        // The lane and element holding A[r][j] and B[j][col] ([Note] IR semantics: Matrix
        // multiply-accumulate).
        const ir::MmaShape shape{16, 8, static_cast<uint8_t>(k)};
        const auto in = static_cast<ir::MmaInput>(input);
        auto a_at = [&](unsigned r, unsigned j) {
            const ir::Mma::Place p = ir::Mma::a_place(shape, in, r, j);
            return fragment_element(input, lane_of(p.lane)->a, p.element);
        };
        auto b_at = [&](unsigned j, unsigned col) {
            const ir::Mma::Place p = ir::Mma::b_place(shape, in, j, col);
            return fragment_element(input, lane_of(p.lane)->b, p.element);
        };
        const unsigned lane = static_cast<unsigned>(me - first), g = lane / 4, t = lane % 4;
        for (unsigned i = 0; i < 4; ++i) {
            const unsigned r = g + 8 * (i / 2), col = 2 * t + i % 2;
            float acc;
            if (c_is_f16) {
                uint16_t h;
                std::memcpy(&h, static_cast<const char *>(c) + 2 * i, 2);
                acc = half_bits_to_float(h);
            } else {
                std::memcpy(&acc, static_cast<const char *>(c) + 4 * i, 4);
            }
            for (unsigned j = 0; j < static_cast<unsigned>(k); ++j)
                acc += a_at(r, j) * b_at(j, col);
            out[i] = acc;
        }
    }
    for (unsigned i = 0; i < 4; ++i) {
        if (c_is_f16) {
            const uint16_t h = float_to_half_bits(out[i]);
            std::memcpy(static_cast<char *>(d) + 2 * i, &h, 2);
        } else {
            std::memcpy(static_cast<char *>(d) + 4 * i, &out[i], 4);
        }
    }
    wait(s, FiberState::AtWarp); // every live lane has read: the fragments may go
}

void ember_cpu_ldmatrix(int32_t count, int32_t trans, const void *row, void *out) {
    Scheduler &s = *active;
    const size_t me = s.current, first = warp_first(s, me);
    const unsigned lane = static_cast<unsigned>(me - first);
    // A lane whose address is used checks it: inside the block's shared memory and aligned to 16
    // bytes, else the launch's fault and zeros instead.
    const int64_t *ctx = s.fibers[me].ctx;
    const void *checked = nullptr;
    if (lane < 8 * static_cast<unsigned>(count)) {
        auto *fault = reinterpret_cast<CpuFault *>(ctx[cpu_ctx_fault_slot]);
        const auto base = static_cast<uintptr_t>(ctx[cpu_ctx_shared_slot]);
        const auto bytes = static_cast<uint64_t>(ctx[cpu_ctx_shared_bytes_slot]);
        const auto at = reinterpret_cast<uintptr_t>(row);
        const int64_t offset = static_cast<int64_t>(at - base);
        if (offset < 0 || static_cast<uint64_t>(offset) + 16 > bytes) {
            ember_cpu_shared_fault(fault, offset, 16, bytes, 0, ctx[0], ctx[1], ctx[2], ctx[3],
                                   ctx[4], ctx[5]);
        } else if (at % 16 != 0) {
            bool expected = false;
            if (!fault)
                std::fprintf(stderr,
                             "ember: ldmatrix row address 0x%llx is not aligned to 16 bytes\n",
                             static_cast<unsigned long long>(at));
            else if (fault->raised.compare_exchange_strong(expected, true)) {
                fault->kind = CpuFault::Kind::misaligned;
                fault->address = at;
                fault->alignment = 16;
                fault->bytes = 16;
                fault->is_store = false;
                for (int d = 0; d < 3; ++d)
                    fault->thread_idx[d] = ctx[d], fault->block_idx[d] = ctx[3 + d];
            }
        } else {
            checked = row;
        }
    }
    s.fibers[me].posted = reinterpret_cast<uintptr_t>(checked);
    wait(s, FiberState::AtWarp); // every live lane has posted
    uint16_t values[8] = {};
    if (whole_warp(s, first, me)) {
        for (unsigned j = 0; j < static_cast<unsigned>(count); ++j)
            for (unsigned e = 0; e < 2; ++e) {
                // Row l / 4, columns 2 (l % 4) + e of matrix j; transposed, that element of
                // column l / 4.
                const unsigned r = trans ? 2 * (lane % 4) + e : lane / 4,
                               col = trans ? lane / 4 : 2 * (lane % 4) + e;
                const auto *src = reinterpret_cast<const uint16_t *>(
                    s.fibers[first + 8 * j + r].posted);
                values[2 * j + e] = src ? src[col] : 0;
            }
    }
    std::memcpy(out, values, 4 * static_cast<size_t>(count));
    wait(s, FiberState::AtWarp); // every live lane has read
}

void ember_cpu_barrier() { wait(*active, FiberState::AtBarrier); }
void ember_cpu_cluster_barrier() { wait(*active, FiberState::AtClusterBarrier); }

namespace {
/// Records an asynchronous tensor operation's fault (CpuFault::Kind::tensor_op) for the thread
/// of `ctx`; false, so callers can `return tensor_fault(...)`.
[[gnu::format(printf, 2, 3)]] bool tensor_fault(const int64_t *ctx, const char *format, ...) {
    char text[sizeof CpuFault::message];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    auto *fault = reinterpret_cast<CpuFault *>(ctx[cpu_ctx_fault_slot]);
    bool expected = false;
    if (!fault) {
        std::fprintf(stderr, "ember: %s\n", text);
    } else if (fault->raised.compare_exchange_strong(expected, true)) {
        fault->kind = CpuFault::Kind::tensor_op;
        std::memcpy(fault->message, text, sizeof text);
        for (int d = 0; d < 3; ++d) fault->thread_idx[d] = ctx[d], fault->block_idx[d] = ctx[3 + d];
    }
    return false;
}

/// The offset of `p` in the block's shared memory, when [p, p + bytes) lies inside it.
bool shared_offset(const int64_t *ctx, const void *p, uint64_t bytes, uint64_t *offset) {
    const auto base = static_cast<uintptr_t>(ctx[cpu_ctx_shared_slot]);
    const auto size = static_cast<uint64_t>(ctx[cpu_ctx_shared_bytes_slot]);
    const auto at = reinterpret_cast<uintptr_t>(p);
    if (at < base || at - base > size || size - (at - base) < bytes) return false;
    *offset = at - base;
    return true;
}

/// A byte offset in shared memory with CUDA's swizzle of `span` bytes (32, 64, 128; 0 none):
/// bits 4 and up of the 16-byte chunk index, as many as span / 16 needs, exclusive-ored with the
/// bits from 7 up (the row of 128 bytes modulo 8, 4, 2).
uint64_t swizzled(uint64_t offset, uint32_t span) {
    if (span == 0) return offset;
    const uint64_t mask = span / 16 - 1; // 7, 3, 1
    return offset ^ (((offset >> 7) & mask) << 4);
}

/// A float from f16 or bf16 bits (`input` an ir::MmaInput).
float half_element(int32_t input, uint16_t h) {
    if (input == 0) return half_bits_to_float(h);
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

/// The CPU device's mbarrier, in the u64 of shared memory: the arrivals still expected in this
/// phase, the count a phase expects, the phase's parity, and the bytes of copies still expected
/// (negative when copies completed before expect_tx announced them, as on a GPU).
struct MBarrierState {
    int32_t tx;
    uint16_t pending;
    uint16_t count_and_phase; ///< the count in bits 0-14, the parity in bit 15
};
static_assert(sizeof(MBarrierState) == 8);

void complete_if_done(MBarrierState &m) {
    if (m.pending != 0 || m.tx != 0) return;
    m.count_and_phase ^= 0x8000;
    m.pending = m.count_and_phase & 0x7fff;
}
} // namespace

void ember_cpu_wgmma(int32_t input, int32_t n, const void *a, const void *b, int32_t b_mn_stride,
                     float *acc, const int64_t *ctx) {
    // This thread's place in its warpgroup: warp w (rows 16w to 16w + 15), lane l.
    const int64_t linear = ctx[0] + ctx[6] * (ctx[1] + ctx[7] * ctx[2]);
    const int64_t w = (linear / 32) % 4, l = linear % 32;
    const uint64_t mn = static_cast<uint32_t>(b_mn_stride);
    // K-major: the 32 bytes of k of each row, rows 128 bytes apart (64 of A's, n of B's).
    // MN-major B: 16 rows of k of 128 bytes in each group of 64 columns, groups mn bytes apart.
    const uint64_t b_bytes = mn ? mn * uint64_t((n - 1) / 64) + 2048 : uint64_t(n - 1) * 128 + 32;
    uint64_t ao = 0, bo = 0;
    const bool a_inside = shared_offset(ctx, a, 63 * 128 + 32, &ao);
    if (!a_inside || !shared_offset(ctx, b, b_bytes, &bo)) {
        tensor_fault(
            ctx, "wgmma's %s (%llu bytes from its start) is not inside the block's shared memory",
            a_inside ? "b" : "a",
            static_cast<unsigned long long>(a_inside ? b_bytes : 63 * 128 + 32));
        return;
    }
    // A K-major operand starts at columns 0, 16, 32 or 48 of a tile on a 1024-byte boundary; an
    // MN-major one on the boundary itself.
    const auto k_slice = [](uint64_t o) { return o % 1024 % 32 == 0 && o % 1024 < 128; };
    const bool b_ok = mn ? bo % 1024 == 0 : k_slice(bo);
    if (!k_slice(ao) || !b_ok) {
        const uint64_t o = k_slice(ao) ? bo : ao;
        if (mn && o == bo)
            tensor_fault(
                ctx,
                "wgmma's MN-major b at shared offset %llu does not start on a 1024-byte boundary",
                static_cast<unsigned long long>(o));
        else
            tensor_fault(ctx,
                         "wgmma's operand at shared offset %llu is not the start of a 128-byte "
                         "swizzled tile's columns 0, 16, 32 or 48 (its offset modulo 1024 must be "
                         "0, 32, 64 or 96)",
                         static_cast<unsigned long long>(o));
        return;
    }
    const auto *shared = reinterpret_cast<const unsigned char *>(ctx[cpu_ctx_shared_slot]);
    auto at = [&](uint64_t offset) {
        uint16_t h;
        std::memcpy(&h, shared + swizzled(offset, 128), 2);
        return half_element(input, h);
    };
    auto a_element = [&](int64_t row, int64_t k) {
        return at(ao + uint64_t(row) * 128 + uint64_t(k) * 2);
    };
    auto b_element = [&](int64_t col, int64_t k) {
        if (!mn) return at(bo + uint64_t(col) * 128 + uint64_t(k) * 2);
        return at(bo + mn * uint64_t(col / 64) + 1024 * uint64_t(k / 8) + 128 * uint64_t(k % 8) +
                  2 * uint64_t(col % 64));
    };
    for (int32_t t = 0; t < n / 8; ++t)
        for (int e = 0; e < 4; ++e) {
            const int64_t row = 16 * w + l / 4 + 8 * (e / 2), col = 8 * t + 2 * (l % 4) + e % 2;
            float sum = acc[4 * t + e];
            for (int64_t k = 0; k < 16; ++k) sum += a_element(row, k) * b_element(col, k);
            acc[4 * t + e] = sum;
        }
}

namespace {
/// Block `rank` of the running cluster's shared memory, null (the fault recorded) when the
/// cluster has no such block; `what` names the operation for the message.
unsigned char *peer_shared(const int64_t *ctx, int64_t rank, const char *what) {
    const Scheduler *s = active;
    const size_t blocks = s ? s->block_shared.size() : 1;
    if (rank < 0 || static_cast<uint64_t>(rank) >= blocks) {
        tensor_fault(ctx, "%s names block %lld of the cluster, which has %zu block%s", what,
                     static_cast<long long>(rank), blocks, blocks == 1 ? "" : "s");
        return nullptr;
    }
    return s ? s->block_shared[static_cast<size_t>(rank)]
             : reinterpret_cast<unsigned char *>(ctx[cpu_ctx_shared_slot]);
}
} // namespace

void ember_cpu_mbarrier(int32_t op, void *bar, int32_t value, const int64_t *ctx) {
    uint64_t offset = 0;
    if (!shared_offset(ctx, bar, 8, &offset) || offset % 8 != 0) {
        tensor_fault(ctx, "an mbarrier must be an aligned u64 inside the block's shared memory");
        return;
    }
    if (op == static_cast<int32_t>(ir::MBarrierOp::ArriveCluster)) {
        // The same offset in block `value`'s shared memory: an arrival there.
        unsigned char *peer = peer_shared(ctx, value, "mbarrier.arrive_cluster");
        if (!peer) return;
        bar = peer + offset;
        op = static_cast<int32_t>(ir::MBarrierOp::Arrive);
    }
    MBarrierState m;
    std::memcpy(&m, bar, 8);
    Scheduler *s = active;
    switch (op) {
    case 0: // init
        if (value < 1 || value > 0x7fff) {
            tensor_fault(ctx, "mbarrier.init with a count of %d (1 to 32767 on the CPU device)",
                         value);
            return;
        }
        m = MBarrierState{0, uint16_t(value), uint16_t(value)};
        break;
    case 1: // arrive
    case 2: // expect_tx
        if (op == 2) m.tx += value;
        if (m.pending == 0) {
            tensor_fault(ctx,
                         "mbarrier arrival on a barrier that was not initialised, or more arrivals "
                         "than its count in one phase");
            return;
        }
        --m.pending;
        complete_if_done(m);
        break;
    default: { // wait
        const bool parity = (value & 1) != 0;
        for (;;) {
            std::memcpy(&m, bar, 8);
            const bool phase = (m.count_and_phase & 0x8000) != 0;
            if (phase != parity || !s || s->stuck) return;
            wait(*s, FiberState::Spinning);
        }
    }
    }
    std::memcpy(bar, &m, 8);
    if (s) ++s->mbarrier_epoch;
}

void ember_cpu_tma_load(void *dst, const void *map, int32_t x, int32_t y, void *bar,
                        int32_t multicast, const int64_t *ctx) {
    CpuTensorMap t;
    std::memcpy(&t, map, sizeof t);
    if (t.magic != CpuTensorMap::kMagic) {
        tensor_fault(ctx, "tma_load's map does not point to a tensor map (make one with "
                          "DeviceContext::create_tensor_map)");
        return;
    }
    const uint64_t row_bytes = uint64_t(t.box[0]) * t.element_bytes, bytes = row_bytes * t.box[1];
    uint64_t offset = 0;
    if (!shared_offset(ctx, dst, bytes, &offset)) {
        tensor_fault(ctx,
                     "tma_load's destination (%llu bytes) is not inside the block's shared memory",
                     static_cast<unsigned long long>(bytes));
        return;
    }
    const uint64_t align = t.swizzle_bytes == 128  ? 1024
                           : t.swizzle_bytes == 64 ? 512
                           : t.swizzle_bytes == 32 ? 256
                                                   : 128;
    if (offset % align != 0) {
        tensor_fault(
            ctx, "tma_load's destination at shared offset %llu is not aligned to %llu bytes",
            static_cast<unsigned long long>(offset), static_cast<unsigned long long>(align));
        return;
    }
    uint64_t bar_offset = 0;
    if (!shared_offset(ctx, bar, 8, &bar_offset) || bar_offset % 8 != 0) {
        tensor_fault(ctx,
                     "tma_load's mbarrier must be an aligned u64 inside the block's shared memory");
        return;
    }
    // Where the box lands: this block, or every block of the cluster named by the mask (the same
    // offsets in each), checked before anything is written.
    std::vector<unsigned char *> into;
    if (multicast < 0) {
        into.push_back(reinterpret_cast<unsigned char *>(ctx[cpu_ctx_shared_slot]));
    } else {
        for (int32_t r = 0; r < 16; ++r) {
            if (!(multicast >> r & 1)) continue;
            unsigned char *peer = peer_shared(ctx, r, "tma_load's multicast mask");
            if (!peer) return;
            into.push_back(peer);
        }
    }
    const auto *base = static_cast<const unsigned char *>(t.base);
    for (unsigned char *shared : into) {
        for (uint32_t r = 0; r < t.box[1]; ++r)
            for (uint32_t c = 0; c < t.box[0]; ++c) {
                const int64_t gr = int64_t(y) + r, gc = int64_t(x) + c;
                unsigned char *to = shared +
                                    swizzled(offset + r * row_bytes + uint64_t(c) * t.element_bytes,
                                             t.swizzle_bytes);
                if (gr < 0 || gc < 0 || uint64_t(gr) >= t.dims[1] || uint64_t(gc) >= t.dims[0])
                    std::memset(to, 0, t.element_bytes);
                else
                    std::memcpy(to,
                                base + uint64_t(gr) * t.row_stride_bytes +
                                    uint64_t(gc) * t.element_bytes,
                                t.element_bytes);
            }
        MBarrierState m;
        std::memcpy(&m, shared + bar_offset, 8);
        m.tx -= static_cast<int32_t>(bytes);
        complete_if_done(m);
        std::memcpy(shared + bar_offset, &m, 8);
    }
    if (active) ++active->mbarrier_epoch;
}

} // namespace ember::detail
