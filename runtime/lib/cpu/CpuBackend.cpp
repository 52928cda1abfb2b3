/// \file
/// The CPU device: kernels compiled for the host through ORC, the grid's blocks spread over a
/// pool of threads, the threads of a block run in order by the generated code (see [Note] CPU
/// kernel ABI). Operations complete before their enqueue_* call returns, on every stream, which
/// keeps each stream's in-order semantics; synchronize() has nothing to wait for ([Note] Streams
/// in Backend.h).
#include "Backend.h"

#include "ember/compiler/CpuAbi.h"

#include <algorithm>
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace ember::detail {

namespace {

/// Threads for the CPU device: $EMBER_CPU_THREADS, else every hardware thread.
unsigned pool_size() {
    if (const char *env = std::getenv("EMBER_CPU_THREADS"); env && *env) {
        char *end = nullptr;
        long n = std::strtol(env, &end, 10);
        if (end && *end == '\0' && n >= 1 && n <= 4096) return static_cast<unsigned>(n);
        throw LogicError(std::string("EMBER_CPU_THREADS='") + env +
                         "' is not a thread count between 1 and 4096");
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

/// A fixed pool that runs one launch at a time: every worker and the launching thread take
/// chunks of blocks from a shared counter until none are left.
class ThreadPool {
public:
    explicit ThreadPool(unsigned n) {
        for (unsigned i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
    }
    ~ThreadPool() {
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

ThreadPool &pool() {
    static ThreadPool p(pool_size());
    return p;
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string s = line.substr(colon + 1);
                s.erase(0, s.find_first_not_of(" \t"));
                if (!s.empty()) return s;
            }
        }
    }
    return "CPU";
}

class CpuFunction final : public LoadedFunction {
public:
    explicit CpuFunction(std::unique_ptr<CpuModule> m)
        : module_(std::move(m)), entry_(reinterpret_cast<CpuKernelFn>(module_->entry())) {}
    CpuKernelFn entry() const { return entry_; }

private:
    std::unique_ptr<CpuModule> module_;
    CpuKernelFn entry_;
};

/// The host's available memory (MemAvailable of /proc/meminfo) in bytes; 0 when unknown.
uint64_t available_host_memory() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

/// Memory for the CPU device: 256-byte aligned like cudaMalloc, so vector loads behave alike.
void *aligned_bytes(size_t bytes, const char *what) {
    size_t rounded = (bytes + 255) / 256 * 256;
    void *p = rounded >= bytes ? std::aligned_alloc(256, rounded) : nullptr;
    if (!p) {
        std::string msg = std::string(what) + ": out of memory: requested " + std::to_string(bytes) +
                          " bytes of host memory for the CPU device";
        if (uint64_t avail = available_host_memory())
            msg += ", which has " + std::to_string(avail) + " bytes free (MemAvailable)";
        throw MemoryError(msg);
    }
    return p;
}

/// An event of the CPU device: the time of its last record (the work before it is done by then).
class CpuEvent final : public BackendEvent {
public:
    explicit CpuEvent(const EventOptions &o) : timing_(o.timing) {}
    bool query() override { return true; }
    void synchronize() override {}
    float elapsed_ms_since(BackendEvent &start_event) override {
        auto *start = dynamic_cast<CpuEvent *>(&start_event);
        if (!start)
            throw LogicError("time_since: the two events belong to different apis; time events of "
                             "one device");
        if (!timing_ || !start->timing_)
            throw LogicError("time_since: an event made with EventFlags::disable_timing has no "
                             "timestamp");
        if (!recorded_ || !start->recorded_)
            throw LogicError(std::string("time_since: the ") + (recorded_ ? "earlier" : "later") +
                             " event was never recorded (record it on a stream first)");
        return std::chrono::duration<float, std::milli>(time_ - start->time_).count();
    }
    void record() {
        time_ = std::chrono::steady_clock::now();
        recorded_ = true;
    }

private:
    bool timing_;
    bool recorded_ = false;
    std::chrono::steady_clock::time_point time_{};
};

class CpuStream final : public BackendStream {
public:
    void copy_to_device(DeviceAddress dst, const void *src, size_t bytes) override {
        std::memmove(reinterpret_cast<void *>(dst), src, bytes);
    }
    void copy_from_device(void *dst, DeviceAddress src, size_t bytes) override {
        std::memmove(dst, reinterpret_cast<const void *>(src), bytes);
    }
    void copy_device_to_device(DeviceAddress dst, DeviceAddress src, size_t bytes) override {
        std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
    }
    void launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args,
                size_t) override;
    void record(BackendEvent &e) override {
        auto *ce = dynamic_cast<CpuEvent *>(&e);
        if (!ce)
            throw LogicError("record_event: the event belongs to another api's device; record an "
                             "event of the stream's own context");
        ce->record();
    }
    /// The work before a CPU event is done; another device's event is waited for on the host.
    void wait(BackendEvent &e) override { e.synchronize(); }
    void synchronize() override {}
    bool is_done() override { return true; }
    int priority() const override { return 0; }
    // [issue-4 memory] memset: the pattern's bytes, element by element (the host is little-endian,
    // as the pattern's layout assumes).
    void memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) override {
        auto *p = reinterpret_cast<unsigned char *>(dst);
        if (width == 1) {
            std::memset(p, static_cast<int>(pattern & 0xff), count);
            return;
        }
        for (size_t i = 0; i < count; ++i) std::memcpy(p + i * width, &pattern, width);
    }
    /// Host memory is everyone's.
    void attach_managed(DeviceAddress, unsigned) override {}
};

class CpuBackend final : public Backend {
public:
    CpuBackend() : name_(cpu_model_name()), target_(TargetSpec::host()) {}

    std::string api() const override { return "cpu"; }
    std::string name() const override { return name_; }
    int device_id() const override { return 0; }
    TargetSpec target() const override { return target_; }
    // The limits of CUDA devices, so that a launch that works here also works on a GPU.
    const DeviceLimits &limits() const override { return limits_; }

    DeviceAddress allocate(size_t bytes) override {
        return reinterpret_cast<DeviceAddress>(aligned_bytes(bytes, "enqueue_create_buffer"));
    }
    void deallocate(DeviceAddress p) noexcept override { std::free(reinterpret_cast<void *>(p)); }
    void *allocate_host(size_t bytes) override { return aligned_bytes(bytes, "enqueue_create_host_buffer"); }
    void deallocate_host(void *p) noexcept override { std::free(p); }

    const std::shared_ptr<BackendStream> &default_stream() override { return default_stream_; }
    std::shared_ptr<BackendStream> create_stream(int priority) override {
        if (priority != 0)
            throw LogicError("create_stream: priority " + std::to_string(priority) +
                             " is outside the CPU device's range, which is 0 only");
        return std::make_shared<CpuStream>();
    }
    std::pair<int, int> stream_priority_range() override { return {0, 0}; }
    std::shared_ptr<BackendEvent> create_event(const EventOptions &o) override {
        if (o.interprocess && o.timing)
            throw LogicError("create_event: an interprocess event needs timing off "
                             "(EventFlags::interprocess | EventFlags::disable_timing), as CUDA "
                             "requires");
        return std::make_shared<CpuEvent>(o);
    }

    // [issue-4 anchor: devinfo] Device information and context limits.

    // [issue-4 anchor: memory] Memory: memset, views, mapping, host and managed memory.
    // On the CPU device all of these are ordinary (256-byte aligned) host memory: a managed or
    // mapped buffer's device address is its host address, and registering memory changes nothing.
    DeviceAddress allocate_managed(size_t bytes, unsigned) override {
        return reinterpret_cast<DeviceAddress>(aligned_bytes(bytes, "create_managed_buffer"));
    }
    void *allocate_host_mapped(size_t bytes, DeviceAddress *device) override {
        void *p = aligned_bytes(bytes, "create_host_mapped_buffer");
        *device = reinterpret_cast<DeviceAddress>(p);
        return p;
    }
    DeviceAddress register_host(void *p, size_t) override { return reinterpret_cast<DeviceAddress>(p); }
    void unregister_host(void *) override {}

    // [issue-4 anchor: memory2d] Memory: pitched 2-D/3-D copies, peer access, IPC.

    // [issue-4 anchor: functions] Function attributes, launch attributes, clusters, occupancy.

    // [issue-4 anchor: modules] Constant memory and external modules.

    // [issue-4 anchor: graphs] Graphs.

    std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) override {
        return std::make_unique<CpuFunction>(CpuModule::load(k.binary, k.entry_symbol));
    }

    static void launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args) {
        CpuKernelFn entry = static_cast<CpuFunction &>(fn).entry();
        CpuFault fault;
        run(entry, dims, args, &fault);
        if (fault.raised.load()) throw_misaligned(kernel_name, fault);
    }

private:
    static void run(CpuKernelFn entry, const LaunchDims &dims, void **args, CpuFault *fault) {
        CpuLaunch base{};
        base.fault = fault;
        base.shared_mem_bytes = dims.shared_mem_bytes;
        for (int i = 0; i < 3; ++i) {
            base.grid_dim[i] = dims.grid[i];
            base.block_dim[i] = dims.block[i];
        }
        int64_t blocks = dims.grid[0] * dims.grid[1] * dims.grid[2];
        if (blocks == 1 || pool().size() == 1) {
            base.block_begin = 0;
            base.block_end = blocks;
            entry(args, &base);
            return;
        }
        pool().run(blocks, [&](int64_t b, int64_t e) {
            CpuLaunch l = base;
            l.block_begin = b;
            l.block_end = e;
            entry(args, &l);
        });
    }

    /// The launch's first misaligned vector access ([Note] IR semantics: Vector memory). The
    /// generated code carried it (and any later one) out unaligned after reporting it, so the
    /// launch ran to its end and the process goes on; on a GPU the same kernel would fault.
    [[noreturn]] static void throw_misaligned(const std::string &kernel, const CpuFault &f) {
        char address[32];
        std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(f.address));
        auto triple = [](const int64_t v[3]) {
            return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
        };
        throw LaunchError("kernel '" + kernel + "': misaligned vector " + (f.is_store ? "store" : "load") + " of " +
                              std::to_string(f.bytes) + " bytes at address " + address + " in thread " +
                              triple(f.thread_idx) + " of block " + triple(f.block_idx) +
                              ": a vector access needs an address aligned to " + std::to_string(f.alignment) +
                              " bytes (min(N * sizeof(T), 16)); NVIDIA GPUs fail such a launch with "
                              "CUDA_ERROR_MISALIGNED_ADDRESS");
    }

    std::string name_;
    TargetSpec target_;
    DeviceLimits limits_;
    std::shared_ptr<BackendStream> default_stream_ = std::make_shared<CpuStream>();
};

void CpuStream::launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args,
                       size_t) {
    CpuBackend::launch(fn, kernel_name, dims, args);
}

} // namespace

std::shared_ptr<Backend> make_cpu_backend(int device_id) {
    if (device_id != 0)
        throw LogicError("no CPU device with id " + std::to_string(device_id) +
                         ": the CPU device is id 0 (api 'cpu' has 1 device)");
    return std::make_shared<CpuBackend>();
}

} // namespace ember::detail
