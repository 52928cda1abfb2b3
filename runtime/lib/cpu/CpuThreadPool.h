/// \file
/// The CPU device's pool of host threads (internal; used by CpuBackend): it runs one launch at a
/// time, the grid's blocks taken in chunks by every worker and by the launching thread.
#ifndef EMBER_RUNTIME_CPU_CPUTHREADPOOL_H
#define EMBER_RUNTIME_CPU_CPUTHREADPOOL_H

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ember::detail {

/// A fixed pool that runs one launch at a time: every worker and the launching thread take
/// chunks of blocks from a shared counter until none are left.
class CpuThreadPool {
public:
    explicit CpuThreadPool(unsigned n) {
        for (unsigned i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
    }
    ~CpuThreadPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto &t : workers_) t.join();
    }

    unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

    /// Calls body(begin, end) for chunks covering [0, total); returns when all are done.
    void run(int64_t total, const std::function<void(int64_t, int64_t)> &body) {
        std::lock_guard<std::mutex> one_launch(launch_mutex_);
        int64_t chunk = std::max<int64_t>(1, total / (int64_t(size()) * 8));
        {
            std::lock_guard<std::mutex> lock(mutex_);
            body_ = &body;
            total_ = total;
            chunk_ = chunk;
            next_.store(0);
            busy_ = static_cast<int>(workers_.size());
            ++generation_;
        }
        wake_.notify_all();
        drain();
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return busy_ == 0; });
        body_ = nullptr;
    }

private:
    void drain() {
        for (;;) {
            int64_t b = next_.fetch_add(chunk_);
            if (b >= total_) return;
            (*body_)(b, std::min(total_, b + chunk_));
        }
    }
    void work() {
        uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
            }
            drain();
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (--busy_ == 0) done_.notify_one();
            }
        }
    }

    std::vector<std::thread> workers_;
    std::mutex launch_mutex_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(int64_t, int64_t)> *body_ = nullptr;
    int64_t total_ = 0, chunk_ = 1;
    std::atomic<int64_t> next_{0};
    int busy_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;
};

/// The process's pool: $EMBER_CPU_THREADS threads, else every hardware thread; made on first use,
/// and made again in the child of a fork ([Note] CPU device and fork).
CpuThreadPool &cpu_thread_pool();

} // namespace ember::detail

#endif // EMBER_RUNTIME_CPU_CPUTHREADPOOL_H
