/// \file
/// The fiber scheduler of the CPU device (see [Note] CPU fibers in CpuFibers.h).
#include "CpuFibers.h"

#include "ember/Error.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace ember::detail {

namespace {

constexpr size_t stack_bytes = 256 * 1024;

enum class FiberState : uint8_t { Ready, AtBarrier, Done };

struct Fiber {
    ucontext_t context;
    int64_t ctx[cpu_ctx_slots];
    FiberState state = FiberState::Ready;
    void *stack = nullptr; // owned by the Stacks cache
};

/// Stacks reserved with mmap (committed as touched), a guard page at the low end; cached per
/// host thread and unmapped when it exits.
class Stacks {
public:
    ~Stacks() {
        for (void *s : stacks_) munmap(s, stack_bytes);
    }
    void *get(size_t i) {
        while (stacks_.size() <= i) {
            void *s = mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
            if (s == MAP_FAILED)
                throw MemoryError("the CPU device cannot reserve " + std::to_string(stack_bytes) +
                                  " bytes for the stack of GPU thread " + std::to_string(stacks_.size()));
            mprotect(s, static_cast<size_t>(sysconf(_SC_PAGESIZE)), PROT_NONE);
            stacks_.push_back(s);
        }
        return stacks_[i];
    }

private:
    std::vector<void *> stacks_;
};

struct Scheduler {
    ucontext_t main;
    std::vector<Fiber> fibers;
    size_t current = 0;
    CpuThreadFn thread = nullptr;
    void **args = nullptr;
};

thread_local Scheduler *active = nullptr;
thread_local Stacks stacks;

// makecontext passes int arguments only: the fiber's index.
void trampoline(int index) {
    Scheduler &s = *active;
    Fiber &f = s.fibers[static_cast<size_t>(index)];
    s.thread(s.args, f.ctx);
    f.state = FiberState::Done;
    // Returning resumes uc_link: the scheduler.
}

} // namespace

void ember_cpu_run_block(CpuThreadFn thread, void **args, const int64_t *ctx) {
    const int64_t bx = ctx[6], by = ctx[7], bz = ctx[8];
    const size_t n = static_cast<size_t>(bx * by * bz);
    Scheduler s;
    s.thread = thread;
    s.args = args;
    s.fibers.resize(n);
    for (size_t i = 0; i < n; ++i) {
        Fiber &f = s.fibers[i];
        std::memcpy(f.ctx, ctx, sizeof f.ctx);
        const int64_t linear = static_cast<int64_t>(i);
        f.ctx[0] = linear % bx;
        f.ctx[1] = (linear / bx) % by;
        f.ctx[2] = linear / (bx * by);
        f.stack = stacks.get(i);
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack;
        f.context.uc_stack.ss_size = stack_bytes;
        f.context.uc_link = &s.main;
        makecontext(&f.context, reinterpret_cast<void (*)()>(&trampoline), 1, static_cast<int>(i));
    }
    Scheduler *outer = active;
    active = &s;
    // Round robin: run each ready fiber until it waits at a barrier or ends; when none is ready,
    // release the ones at the barrier; stop when all have ended.
    for (;;) {
        bool any_waiting = false;
        for (size_t i = 0; i < n; ++i) {
            if (s.fibers[i].state != FiberState::Ready) continue;
            s.current = i;
            swapcontext(&s.main, &s.fibers[i].context);
            if (s.fibers[i].state == FiberState::AtBarrier) any_waiting = true;
        }
        if (!any_waiting) break;
        for (Fiber &f : s.fibers)
            if (f.state == FiberState::AtBarrier) f.state = FiberState::Ready;
    }
    active = outer;
}

void ember_cpu_barrier() {
    Scheduler &s = *active;
    Fiber &f = s.fibers[s.current];
    f.state = FiberState::AtBarrier;
    swapcontext(&f.context, &s.main);
}

} // namespace ember::detail
