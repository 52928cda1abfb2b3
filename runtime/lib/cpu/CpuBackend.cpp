/// \file
/// The CPU device: kernels compiled for the host through ORC, the grid's blocks spread over a
/// pool of threads, the threads of a block run in order by the generated code (see [Note] CPU
/// kernel ABI). Operations complete before their enqueue_* call returns, on every stream, which
/// keeps each stream's in-order semantics; synchronize() has nothing to wait for ([Note] Streams
/// in Backend.h).
#include "Backend.h"
#include "ember/compiler/Settings.h"
#include "BackendGraph.h"
#include "cpu/CpuDeviceInfo.h"
#include "cpu/CpuGraph.h"
#include "cpu/CpuThreadPool.h"

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
#include <iterator>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <vector>

#include <cerrno>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ember::detail {

namespace {

class CpuFunction final : public LoadedFunction {
public:
    CpuFunction(std::unique_ptr<CpuModule> m, uint64_t local_bytes, std::vector<ir::ConstantGlobal> constants = {})
        : module_(std::move(m)), entry_(reinterpret_cast<CpuKernelFn>(module_->entry())),
          local_bytes_(local_bytes), constants_(std::move(constants)) {}
    CpuKernelFn entry() const { return entry_; }
    /// CompiledKernel::local_bytes: sizes the kernel and fiber stacks ([Note] CPU kernel memory).
    uint64_t local_bytes() const { return local_bytes_; }

    /// A constant array is an ordinary global of the JIT'd object, under
    /// cpu_constant_symbol(name); its size is the kernel's (the object's symbol table is not
    /// kept by ORC).
    std::pair<DeviceAddress, size_t> global(const std::string &symbol) override {
        for (const ir::ConstantGlobal &c : constants_)
            if (cpu_constant_symbol(c.name) == symbol) {
                void *address = module_->symbol(symbol);
                if (!address) return {0, 0};
                return {reinterpret_cast<DeviceAddress>(address), static_cast<size_t>(c.bytes)};
            }
        return {0, 0};
    }

private:
    std::unique_ptr<CpuModule> module_;
    CpuKernelFn entry_;
    uint64_t local_bytes_;
    std::vector<ir::ConstantGlobal> constants_;
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
    explicit CpuEvent(const EventOptions &) {}
    bool query() override { return true; }
    void synchronize() override {}
    float elapsed_ms_since(BackendEvent &start_event) override {
        // DeviceEvent::time_since has checked the pair: one context, timing, both recorded.
        const auto &start = static_cast<const CpuEvent &>(start_event);
        return std::chrono::duration<float, std::milli>(time_ - start.time_).count();
    }
    void record() { time_ = std::chrono::steady_clock::now(); }

private:
    std::chrono::steady_clock::time_point time_{};
};

class CpuStream final : public BackendStream {
public:
    void copy_to_device(DeviceAddress dst, const void *src, size_t bytes) override {
        if (captured_copy(reinterpret_cast<void *>(dst), src, bytes)) return;
        std::memmove(reinterpret_cast<void *>(dst), src, bytes);
    }
    void copy_from_device(void *dst, DeviceAddress src, size_t bytes) override {
        if (captured_copy(dst, reinterpret_cast<const void *>(src), bytes)) return;
        std::memmove(dst, reinterpret_cast<const void *>(src), bytes);
    }
    void copy_device_to_device(DeviceAddress dst, DeviceAddress src, size_t bytes) override {
        if (captured_copy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes)) return;
        std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
    }

    // Graphs ([Note] Graphs in BackendGraph.h): while capturing, operations are recorded into
    // graph_ instead of running.
    void begin_capture() override {
        graph_ = std::make_shared<CpuGraph>();
        capture_.store(graph_.get(), std::memory_order_release);
    }
    std::shared_ptr<BackendGraph> end_capture() override {
        capture_.store(nullptr, std::memory_order_release);
        return std::move(graph_);
    }
    void capture_launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args,
                        const uint32_t *sizes, size_t n) override {
        CpuGraphOp op;
        op.kind = CpuGraphOp::Kind::Launch;
        op.function = &fn;
        op.kernel_name = kernel_name;
        op.dims = dims;
        op.set_arguments(args, sizes, n);
        graph_->ops.push_back(std::move(op));
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
    void wait(BackendEvent &e) override {
        if (graph_) {
            CpuGraphOp op;
            op.kind = CpuGraphOp::Kind::Wait;
            op.event = &e;
            std::lock_guard<std::mutex> lock(graph_->record.mutex);
            graph_->ops.push_back(std::move(op));
            return;
        }
        e.synchronize();
    }
    void synchronize() override {}
    bool is_done() override { return true; }
    int priority() const override { return 0; }

    // memory2d: every address of the CPU device is a host address.
    void copy_3d(const Region3D &dst, const Region3D &src, size_t width_bytes, size_t height,
                 size_t depth) override {
        for (size_t z = 0; z < depth; ++z)
            for (size_t y = 0; y < height; ++y) {
                char *d = reinterpret_cast<char *>(dst.address) + dst.x_bytes + (dst.y + y) * dst.pitch +
                          (dst.z + z) * dst.pitch * dst.rows;
                const char *s = reinterpret_cast<const char *>(src.address) + src.x_bytes + (src.y + y) * src.pitch +
                                (src.z + z) * src.pitch * src.rows;
                // While capturing, each row becomes one recorded copy.
                if (!captured_copy(d, s, width_bytes)) std::memmove(d, s, width_bytes);
            }
    }
    void copy_between(DeviceAddress dst, Backend *dst_owner, DeviceAddress src, Backend *src_owner,
                      size_t bytes) override;
    // Function attributes, launch attributes, clusters, occupancy.

    /// A cluster's blocks are numbered together, and run together where the kernel uses a
    /// cluster's barrier, its peers' mbarriers or multicast copies ([Note] CPU fibers);
    /// cooperative grids and priorities need nothing more here (see Backend.h).
    void launch_extended(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims,
                         const LaunchExtras &extras, void **args, size_t) override;
    // memset: the pattern's bytes, element by element (the host is little-endian,
    // as the pattern's layout assumes).
    void memset(DeviceAddress dst, uint64_t pattern, unsigned width, size_t count) override {
        if (graph_) { // recorded while capturing
            CpuGraphOp op;
            op.kind = CpuGraphOp::Kind::Memset;
            op.dst = reinterpret_cast<void *>(dst);
            op.pattern = pattern;
            op.width = width;
            op.bytes = count;
            std::lock_guard<std::mutex> lock(graph_->record.mutex);
            graph_->ops.push_back(std::move(op));
            return;
        }
        fill(reinterpret_cast<void *>(dst), pattern, width, count);
    }
    static void fill(void *dst, uint64_t pattern, unsigned width, size_t count) {
        auto *p = static_cast<unsigned char *>(dst);
        if (width == 1) {
            std::memset(p, static_cast<int>(pattern & 0xff), count);
            return;
        }
        for (size_t i = 0; i < count; ++i) std::memcpy(p + i * width, &pattern, width);
    }
    /// Host memory is everyone's.
    void attach_managed(DeviceAddress, unsigned) override {}
private:
    /// Records a copy while capturing; false otherwise.
    bool captured_copy(void *dst, const void *src, size_t bytes) {
        if (!graph_) return false;
        CpuGraphOp op;
        op.kind = CpuGraphOp::Kind::Copy;
        op.dst = dst;
        op.src = src;
        op.bytes = bytes;
        std::lock_guard<std::mutex> lock(graph_->record.mutex);
        graph_->ops.push_back(std::move(op));
        return true;
    }

    std::shared_ptr<CpuGraph> graph_;
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
    void deallocate(DeviceAddress p) noexcept override {
        if (release_mapping(p)) return; // shareable or IPC-opened memory (memory2d)
        std::free(reinterpret_cast<void *>(p));
    }
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

    // Device information and context limits.
    bool query_attribute(DeviceAttribute attribute, int &value) override {
        value = cpu_attribute(attribute, limits_, cpu_thread_pool().size());
        return true;
    }
    int driver_version() override { return 0; }
    int api_version() override { return 0; }
    std::pair<size_t, size_t> memory_info() override { return cpu_memory_info(); }
    size_t total_memory() override { return cpu_memory_info().second; }
    std::string pci_bus_id() override {
        throw LogicError("pci_bus_id: the CPU device (" + name_ +
                         ") is the host processor, not a PCI device; only GPUs have a PCI bus id");
    }
    size_t get_limit(Limit limit) override { return cpu_get_limit(limit); }
    void set_limit(Limit limit, size_t value) override { cpu_set_limit(limit, value); }

    // Memory: memset, views, mapping, host and managed memory.
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

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
    // The pitch is the row's bytes rounded up to 256 (every CPU-device allocation's alignment, so
    // each row starts as aligned as a buffer does) and to a multiple of the element size.
    DeviceAddress allocate_pitched(size_t width_bytes, size_t height, unsigned element_bytes,
                                   size_t *pitch) override {
        size_t p = (width_bytes + 255) / 256 * 256;
        while (element_bytes && p % element_bytes) p += 256;
        size_t total = 0;
        if (p < width_bytes || __builtin_mul_overflow(p, height, &total))
            throw MemoryError("create_pitched_buffer: " + std::to_string(height) + " rows of " +
                              std::to_string(width_bytes) + " bytes overflow the address space");
        *pitch = p;
        return reinterpret_cast<DeviceAddress>(aligned_bytes(total, "create_pitched_buffer"));
    }

    // [Note] CPU-device IPC
    // Shareable memory is a memfd mapped MAP_SHARED; its handle names this process and the fd
    // ("emberipc", pid, fd, bytes), and another process of the same user maps
    // /proc/<pid>/fd/<fd>. It stays valid while this process holds the buffer.
    DeviceAddress allocate_shareable(size_t bytes) override {
        int fd = static_cast<int>(::syscall(SYS_memfd_create, "ember-ipc-buffer", 1u /*MFD_CLOEXEC*/));
        if (fd < 0) throw_errno("create_ipc_buffer: memfd_create");
        if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
            int e = errno;
            ::close(fd);
            if (e == ENOMEM || e == ENOSPC || e == EFBIG)
                throw MemoryError("create_ipc_buffer: out of memory: requested " + std::to_string(bytes) +
                                  " bytes of shared memory for the CPU device: " + std::strerror(e));
            errno = e;
            throw_errno("create_ipc_buffer: ftruncate");
        }
        void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            ::close(fd);
            throw MemoryError("create_ipc_buffer: mmap of " + std::to_string(bytes) +
                              " bytes of shared memory failed: " + std::strerror(e));
        }
        std::lock_guard<std::mutex> lock(mappings_mutex_);
        mappings_[reinterpret_cast<DeviceAddress>(p)] = Mapping{fd, bytes};
        return reinterpret_cast<DeviceAddress>(p);
    }

    std::array<uint8_t, 64> ipc_handle(DeviceAddress p) override {
        Mapping m;
        {
            std::lock_guard<std::mutex> lock(mappings_mutex_);
            auto it = mappings_.find(p);
            if (it == mappings_.end() || it->second.fd < 0)
                throw LogicError("ipc_handle: the buffer was not made by create_ipc_buffer on this "
                                 "device (or is a view into one); only those can be shared with "
                                 "another process");
            m = it->second;
        }
        std::array<uint8_t, 64> h{};
        std::memcpy(h.data(), kIpcMagic, 8);
        int32_t pid = static_cast<int32_t>(::getpid()), fd = m.fd;
        uint64_t bytes = m.bytes;
        std::memcpy(h.data() + 8, &pid, 4);
        std::memcpy(h.data() + 12, &fd, 4);
        std::memcpy(h.data() + 16, &bytes, 8);
        return h;
    }

    DeviceAddress open_ipc(const std::array<uint8_t, 64> &h, size_t bytes) override {
        if (std::memcmp(h.data(), kIpcMagic, 8) != 0)
            throw LogicError("open_ipc_buffer: the handle was not made by ember's CPU device");
        int32_t pid = 0, fd = 0;
        uint64_t size = 0;
        std::memcpy(&pid, h.data() + 8, 4);
        std::memcpy(&fd, h.data() + 12, 4);
        std::memcpy(&size, h.data() + 16, 8);
        if (bytes > size)
            throw LogicError("open_ipc_buffer: asked for " + std::to_string(bytes) +
                             " bytes but the shared buffer has " + std::to_string(size));
        std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
        int own = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (own < 0)
            throw LogicError("open_ipc_buffer: cannot open the shared buffer of process " + std::to_string(pid) +
                             " (" + path + "): " + std::strerror(errno) +
                             "; the process must be alive, hold the buffer, and belong to this user");
        struct stat st {};
        if (::fstat(own, &st) != 0 || static_cast<uint64_t>(st.st_size) < size) {
            ::close(own);
            throw LogicError("open_ipc_buffer: " + path + " is not the shared buffer of " +
                             std::to_string(size) + " bytes the handle names (the process closed it)");
        }
        size_t map_bytes = size ? size : 1;
        void *p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
        int e = errno;
        ::close(own);
        if (p == MAP_FAILED)
            throw MemoryError("open_ipc_buffer: mmap of " + std::to_string(map_bytes) + " bytes failed: " +
                              std::strerror(e));
        std::lock_guard<std::mutex> lock(mappings_mutex_);
        mappings_[reinterpret_cast<DeviceAddress>(p)] = Mapping{-1, map_bytes};
        return reinterpret_cast<DeviceAddress>(p);
    }

    // Host threads run the CPU device's kernels: they reach any CPU device's memory, never a
    // GPU's.
    bool can_access_peer(Backend &peer) override { return peer.api() == "cpu"; }
    void enable_peer_access(Backend &peer) override {
        if (!can_access_peer(peer))
            throw LogicError("enable_peer_access: the CPU device cannot access the memory of " + peer.api() +
                             " device " + std::to_string(peer.device_id()) + " (" + peer.name() +
                             "); can_access() is false");
    }
    void disable_peer_access(Backend &) override {}

    // Tensor maps.

    /// The CpuTensorMap that tma_load of the CPU device reads ([Note] CPU kernel ABI): the
    /// matrix's device address is its host address.
    TensorMapBytes encode_tensor_map(const TensorMapDesc &d) override {
        CpuTensorMap m;
        m.base = reinterpret_cast<const void *>(d.base);
        m.dims[0] = d.cols;
        m.dims[1] = d.rows;
        m.row_stride_bytes = d.row_stride_bytes;
        m.box[0] = d.box_cols;
        m.box[1] = d.box_rows;
        m.element_bytes = d.element_bytes;
        m.swizzle_bytes = d.swizzle_bytes;
        TensorMapBytes bytes;
        static_assert(sizeof(CpuTensorMap) <= sizeof(bytes.words));
        std::memcpy(bytes.words, &m, sizeof m);
        return bytes;
    }

    // Function attributes, launch attributes, clusters, occupancy.

    /// The CPU device's answers (docs/runtime.md, "Functions"): what ember knows from the IR,
    /// the CUDA limits it mirrors, the values set; no registers, no PTX.
    int function_attribute(LoadedFunction &, int attr, const KernelFacts &f) override {
        auto set_or = [&](int fallback) {
            auto it = f.attributes_set.find(attr);
            return it == f.attributes_set.end() ? fallback : it->second;
        };
        switch (attr) {
        case 0: // max_threads_per_block
            return int(limits_.max_threads_per_block);
        case 1: // shared_size_bytes
            return int(f.static_shared_bytes);
        case 3: // local_size_bytes
            return int(f.local_bytes);
        case 8: // max_dynamic_shared_size_bytes
            return int(f.max_dynamic_shared_bytes >= 0
                           ? f.max_dynamic_shared_bytes
                           : std::max<int64_t>(0, limits_.max_shared_memory_per_block - int64_t(f.static_shared_bytes)));
        case 9: // preferred_shared_memory_carveout
            return set_or(-1);
        default: // const_size, num_regs, ptx/binary version, cache_mode_ca, cluster attributes
            return set_or(0);
        }
    }
    void set_function_attribute(LoadedFunction &, int, int) override {}
    void set_cache_config(LoadedFunction &, int) override {}
    /// One block runs on a pool thread at a time.
    int max_active_blocks_per_multiprocessor(LoadedFunction &, int, size_t, const KernelFacts &) override { return 1; }
    /// 256 threads (8 warps) per block, and a block for every pool thread.
    std::pair<int, int> suggested_block_size(LoadedFunction &, size_t, int limit, const KernelFacts &) override {
        int block = std::min(limit, 256);
        if (block >= limits_.warp_size) block -= block % limits_.warp_size;
        return {int(cpu_thread_pool().size()), block};
    }
    /// H100's 227 KiB, so that a kernel that opts in here also runs on one.
    int64_t max_shared_memory_per_block_optin() override { return 227 * 1024; }
    /// The pool's threads.
    int multiprocessor_count() override { return int(cpu_thread_pool().size()); }
    bool supports_cluster_launch() override { return true; }
    bool supports_cooperative_launch() override { return true; }

    // Constant memory and external modules.

    std::shared_ptr<LoadedModule> load_module(int format, const std::string &, const std::string &name) override {
        static const char *const kinds[] = {"PTX", "a cubin", "a fatbin"};
        throw LogicError("load_module of '" + name + "': " + (format >= 0 && format < 3 ? kinds[format] : "this image") +
                         " needs a CUDA device; the CPU device runs kernels written with ember's DSL only "
                         "(open a DeviceContext with api 'cuda')");
    }

    // Graphs.

    std::unique_ptr<LoadedFunction> load(const CompiledKernel &k) override {
        return std::make_unique<CpuFunction>(CpuModule::load(k.binary, k.entry_symbol), k.local_bytes, k.constants);
    }

    /// `cluster`: blocks per cluster ({0, 0, 0}: none); the grid is a whole number of clusters
    /// (checked by the caller).
    static void launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims,
                       void **args, const std::array<int64_t, 3> &cluster = {0, 0, 0}) {
        auto &f = static_cast<CpuFunction &>(fn);
        CpuFault fault;
        run(f.entry(), dims, cluster, args, &fault, stack_bytes(kernel_name, f.local_bytes()));
        if (fault.raised.load()) throw_fault(kernel_name, fault);
    }

private:
    static void run(CpuKernelFn entry, const LaunchDims &dims,
                    const std::array<int64_t, 3> &cluster, void **args, CpuFault *fault,
                    uint64_t stack_bytes) {
        CpuLaunch base{};
        base.fault = fault;
        base.stack_bytes = static_cast<int64_t>(stack_bytes);
        base.shared_mem_bytes = dims.shared_mem_bytes;
        int64_t cluster_blocks = 1;
        for (int i = 0; i < 3; ++i) {
            base.grid_dim[i] = dims.grid[i];
            base.block_dim[i] = dims.block[i];
            base.cluster_dim[i] = std::max<int64_t>(1, cluster[i]);
            cluster_blocks *= base.cluster_dim[i];
        }
        const int64_t blocks = dims.grid[0] * dims.grid[1] * dims.grid[2];
        if (blocks == cluster_blocks || cpu_thread_pool().size() == 1) {
            base.block_begin = 0;
            base.block_end = blocks;
            entry(args, &base);
            return;
        }
        // The pool's threads take whole clusters (CpuLaunch::cluster_dim).
        cpu_thread_pool().run(blocks / cluster_blocks, [&](int64_t b, int64_t e) {
            CpuLaunch l = base;
            l.block_begin = b * cluster_blocks;
            l.block_end = e * cluster_blocks;
            entry(args, &l);
        });
    }

    /// The stack of each GPU thread of a launch of `kernel` (the host thread's kernel stack, and
    /// the fibers of a kernel with barriers or warp operations): big enough for its local
    /// arrays, at least Limit::stack_size ([Note] CPU kernel memory).
    static uint64_t stack_bytes(const std::string &kernel, uint64_t local_bytes) {
        const uint64_t bytes = cpu_fiber_stack_bytes(local_bytes);
        if (bytes > cpu_max_stack_size + cpu_fiber_stack_margin)
            throw LaunchError("kernel '" + kernel + "': its threads hold up to " + std::to_string(local_bytes) +
                              " bytes of local arrays (its own and its functions'), which needs " +
                              std::to_string(bytes) + " bytes of stack per thread, more than the CPU device's " +
                              "limit of " + std::to_string(cpu_max_stack_size + cpu_fiber_stack_margin) + " bytes");
        return bytes;
    }

    /// The launch's first fault (CpuFault). The generated code carried a faulting access out
    /// (a misaligned one unaligned, one outside the shared memory on a scratch location) after
    /// reporting it, so the launch ran to its end and the process goes on; on a GPU the same
    /// kernel would fault, or silently read and write another block's memory.
    [[noreturn]] static void throw_fault(const std::string &kernel, const CpuFault &f) {
        auto triple = [](const int64_t v[3]) {
            return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
        };
        if (f.kind == CpuFault::Kind::out_of_memory)
            throw MemoryError("kernel '" + kernel + "': the CPU device cannot reserve " +
                              std::to_string(f.resource_bytes) + " bytes for " + f.resource + " (" +
                              std::strerror(f.error) +
                              "); the launch did not run completely. Lower Limit::stack_size, the kernel's local "
                              "arrays or its shared memory");
        if (f.kind == CpuFault::Kind::tensor_op)
            throw LaunchError("kernel '" + kernel + "': thread " + triple(f.thread_idx) +
                              " of block " + triple(f.block_idx) + ": " + f.message);
        if (f.kind == CpuFault::Kind::incomplete_warp)
            throw LaunchError(
                "kernel '" + kernel + "': a warp matrix operation (mma or ldmatrix) in thread " +
                triple(f.thread_idx) + " of block " + triple(f.block_idx) + " ran with " +
                std::to_string(f.lanes) +
                " of its warp's 32 lanes; every lane of the warp must execute it together (blocks "
                "of a multiple of 32 threads, no lane returned before it)");
        if (f.kind == CpuFault::Kind::shared_out_of_bounds)
            throw LaunchError("kernel '" + kernel + "': shared-memory " + (f.is_store ? "store" : "load") + " of " +
                              std::to_string(f.bytes) + " bytes at offset " + std::to_string(f.shared_offset) +
                              " in thread " + triple(f.thread_idx) + " of block " + triple(f.block_idx) +
                              " is outside the block's " + std::to_string(f.shared_bytes) +
                              " bytes of shared memory (its static arrays and the launch's shared_mem_bytes); "
                              "the CPU device checks every shared-memory access and fails the launch");
        char address[32];
        std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(f.address));
        throw LaunchError("kernel '" + kernel + "': misaligned vector " + (f.is_store ? "store" : "load") + " of " +
                              std::to_string(f.bytes) + " bytes at address " + address + " in thread " +
                              triple(f.thread_idx) + " of block " + triple(f.block_idx) +
                              ": a vector access needs an address aligned to " + std::to_string(f.alignment) +
                              " bytes (min(N * sizeof(T), 16)); NVIDIA GPUs fail such a launch with "
                              "CUDA_ERROR_MISALIGNED_ADDRESS");
    }

    struct Mapping {
        int fd = -1; // the memfd of a shareable buffer; -1 for one opened from another process
        size_t bytes = 0;
    };
    static constexpr char kIpcMagic[9] = "emberipc";
    [[noreturn]] static void throw_errno(const std::string &what) {
        throw RuntimeError(what + " failed: " + std::strerror(errno));
    }
    /// Unmaps `p` when it is shareable or IPC-opened memory; false otherwise.
    bool release_mapping(DeviceAddress p) noexcept {
        Mapping m;
        {
            std::lock_guard<std::mutex> lock(mappings_mutex_);
            auto it = mappings_.find(p);
            if (it == mappings_.end()) return false;
            m = it->second;
            mappings_.erase(it);
        }
        ::munmap(reinterpret_cast<void *>(p), m.bytes ? m.bytes : 1);
        if (m.fd >= 0) ::close(m.fd);
        return true;
    }
    std::mutex mappings_mutex_;
    std::unordered_map<DeviceAddress, Mapping> mappings_;

    std::string name_;
    TargetSpec target_;
    DeviceLimits limits_;
    std::shared_ptr<BackendStream> default_stream_ = std::make_shared<CpuStream>();
};

void CpuStream::copy_between(DeviceAddress dst, Backend *dst_owner, DeviceAddress src, Backend *src_owner,
                             size_t bytes) {
    EMBER_ASSERT((!dst_owner || dst_owner->api() == "cpu") && (!src_owner || src_owner->api() == "cpu"),
                 "CpuStream::copy_between with a GPU's memory (Memory2D.cpp routes those to the GPU)");
    if (captured_copy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes)) return;
    std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
}

void CpuStream::launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims,
                       void **args, size_t n) {
    launch_extended(fn, kernel_name, dims, LaunchExtras{}, args, n);
}

void CpuStream::launch_extended(LoadedFunction &fn, const std::string &kernel_name,
                                const LaunchDims &dims, const LaunchExtras &extras, void **args,
                                size_t) {
    if (graph_)
        throw LogicError(
            "kernel '" + kernel_name +
            "': this kind of launch cannot be captured into a graph on the CPU device; "
            "launch it with enqueue_function");
    CpuBackend::launch(fn, kernel_name, dims, args, extras.cluster);
}

} // namespace

void cpu_memset(void *dst, uint64_t pattern, unsigned width, size_t count) {
    CpuStream::fill(dst, pattern, width, count);
}

void run_cpu_kernel(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args) {
    CpuBackend::launch(fn, kernel_name, dims, args);
}

std::shared_ptr<Backend> make_cpu_backend(int device_id) {
    if (device_id != 0)
        throw LogicError("no CPU device with id " + std::to_string(device_id) +
                         ": the CPU device is id 0 (api 'cpu' has 1 device)");
    return std::make_shared<CpuBackend>();
}

} // namespace ember::detail
