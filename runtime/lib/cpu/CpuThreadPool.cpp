/// \file
/// The CPU device's thread pool: its size, and its life across fork().
#include "cpu/CpuThreadPool.h"

#include "ember/compiler/Settings.h"
#include "ember/Error.h"

#include <cstdlib>
#include <optional>
#include <string>

#include <pthread.h>

namespace ember::detail {

namespace {

/// Threads for the CPU device: $EMBER_CPU_THREADS, else every hardware thread.
unsigned pool_size() {
    if (const std::optional<std::string> env = settings::text("EMBER_CPU_THREADS")) {
        char *end = nullptr;
        long n = std::strtol(env->c_str(), &end, 10);
        if (end && *end == '\0' && n >= 1 && n <= 4096) return static_cast<unsigned>(n);
        throw LogicError("EMBER_CPU_THREADS='" + *env + "' is not a thread count between 1 and 4096");
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

// [Note] CPU device and fork
// ==========================
// A child of fork() has one thread: the pool's workers do not exist there, and the pool's
// mutexes may be held by parent threads (a launch in progress), so launching on the parent's
// pool would wait forever. A pthread_atfork child handler therefore drops the pool (leaked on
// purpose: its std::threads can be neither joined nor destroyed in the child) and the child's
// first launch that needs one makes a new pool. The prepare handler holds pool_mutex over the
// fork, so the child never sees a pool half made; it does not wait for a launch in progress,
// which the child simply does not see. Other ember state (the compile caches, the JIT) is only
// as consistent in the child as it was when fork() was called: fork while no other thread is
// compiling.
std::mutex pool_mutex;
std::atomic<CpuThreadPool *> current_pool{nullptr};
/// Joins the workers at exit, as a static pool did (the child's pool too; never the parent's).
struct PoolOwner {
    ~PoolOwner() { delete current_pool.exchange(nullptr); }
} pool_owner;

void before_fork() { pool_mutex.lock(); }
void after_fork_in_parent() { pool_mutex.unlock(); }
void after_fork_in_child() {
    current_pool.store(nullptr);
    pool_mutex.unlock();
}

} // namespace

CpuThreadPool &cpu_thread_pool() {
    if (CpuThreadPool *p = current_pool.load(std::memory_order_acquire)) [[likely]]
        return *p;
    std::lock_guard<std::mutex> lock(pool_mutex);
    static const bool fork_handlers = pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child) == 0;
    (void)fork_handlers;
    if (!current_pool.load(std::memory_order_relaxed)) current_pool.store(new CpuThreadPool(pool_size()));
    return *current_pool.load(std::memory_order_relaxed);
}

} // namespace ember::detail
