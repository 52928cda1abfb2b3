/// \file
/// The fiber scheduler of the CPU device (see [Note] CPU fibers in CpuFibers.h).
#include "CpuFibers.h"

#include "ember/Error.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace ember::detail {

namespace {

constexpr size_t stack_bytes = 256 * 1024;

enum class FiberState : uint8_t { Ready, AtBarrier, AtWarp, Done };

struct Fiber {
    ucontext_t context;
    int64_t ctx[cpu_ctx_slots];
    FiberState state = FiberState::Ready;
    uint64_t posted = 0;   // this lane's value in a warp operation
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
    // Round robin: run each ready fiber until it waits or ends. Then release every warp whose
    // live fibers all wait at a warp operation; failing that, the block barrier once every live
    // fiber waits there. Stop when all have ended.
    bool reported = false;
    for (;;) {
        for (size_t i = 0; i < n; ++i) {
            if (s.fibers[i].state != FiberState::Ready) continue;
            s.current = i;
            swapcontext(&s.main, &s.fibers[i].context);
        }
        size_t live = 0, at_barrier = 0;
        bool released = false;
        for (size_t w = 0; w < n; w += 32) {
            size_t waiting = 0, alive = 0;
            for (size_t i = w; i < std::min(n, w + 32); ++i) {
                FiberState st = s.fibers[i].state;
                if (st == FiberState::Done) continue;
                ++alive;
                waiting += st == FiberState::AtWarp;
                at_barrier += st == FiberState::AtBarrier;
            }
            live += alive;
            if (alive > 0 && waiting == alive) {
                for (size_t i = w; i < std::min(n, w + 32); ++i)
                    if (s.fibers[i].state == FiberState::AtWarp) s.fibers[i].state = FiberState::Ready;
                released = true;
            }
        }
        if (live == 0) break;
        if (released) continue;
        if (at_barrier != live && !reported) {
            // Some lanes of a warp wait at a warp operation while others wait at the barrier: the
            // kernel breaks [Note] IR semantics (undefined on GPUs too). Let everyone go on.
            reported = true;
            std::fprintf(stderr, "ember: error: the threads of a block reached different barriers or "
                                 "warp operations (every lane of a warp must take the same path); "
                                 "the results are undefined\n");
        }
        for (Fiber &f : s.fibers)
            if (f.state == FiberState::AtBarrier || f.state == FiberState::AtWarp) f.state = FiberState::Ready;
    }
    active = outer;
}

namespace {
void wait(Scheduler &s, FiberState why) {
    Fiber &f = s.fibers[s.current];
    f.state = why;
    swapcontext(&f.context, &s.main);
}
} // namespace

uint64_t ember_cpu_warp(int32_t op, uint64_t bits, int32_t lane_arg) {
    Scheduler &s = *active;
    const size_t me = s.current;
    const size_t first = me / 32 * 32, count = std::min<size_t>(32, s.fibers.size() - first);
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
        result = op == 4 ? ballot : op == 5 ? uint64_t(set > 0) : uint64_t(set == alive);
    }
    }
    wait(s, FiberState::AtWarp); // every live lane has read: the slots may be reused
    return result;
}

void ember_cpu_barrier() {
    Scheduler &s = *active;
    Fiber &f = s.fibers[s.current];
    f.state = FiberState::AtBarrier;
    swapcontext(&f.context, &s.main);
}

} // namespace ember::detail
