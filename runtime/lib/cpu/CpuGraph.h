/// \file
/// Graphs of the CPU device (internal; used by CpuBackend): the captured operations, run in order
/// by a replay ([Note] Graphs in BackendGraph.h).
#ifndef EMBER_RUNTIME_CPU_CPUGRAPH_H
#define EMBER_RUNTIME_CPU_CPUGRAPH_H

#include "Backend.h"
#include "BackendGraph.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember::detail {

/// Runs a kernel on the pool (CpuBackend::launch).
void run_cpu_kernel(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args);

/// Sets `count` elements of `width` bytes at `dst` to `pattern` (CpuStream::fill).
void cpu_memset(void *dst, uint64_t pattern, unsigned width, size_t count);

/// One captured operation of a CPU device graph.
struct CpuGraphOp {
    enum class Kind { Copy, Memset, Launch, Wait } kind = Kind::Copy;
    // Copy; Memset (`bytes` counts elements of `width` bytes set to `pattern`).
    void *dst = nullptr;
    const void *src = nullptr;
    size_t bytes = 0;
    uint64_t pattern = 0;
    unsigned width = 0;
    // Launch: the argument bytes, each at a 16-byte aligned offset of `storage`.
    LoadedFunction *function = nullptr;
    std::string kernel_name;
    LaunchDims dims;
    struct alignas(16) Chunk {
        unsigned char bytes[16];
    };
    std::vector<Chunk> storage;
    std::vector<size_t> offsets, sizes;
    // Wait (the API layer keeps the event alive).
    BackendEvent *event = nullptr;

    /// Copies the arguments into `storage`, each at a 16-byte aligned offset.
    void set_arguments(void **args, const uint32_t *arg_sizes, size_t n);
    /// Does the operation now.
    void run();
};

class CpuGraphExec final : public BackendGraphExec {
public:
    explicit CpuGraphExec(std::vector<CpuGraphOp> ops) : ops_(std::move(ops)) {
        for (size_t i = 0; i < ops_.size(); ++i)
            if (ops_[i].kind == CpuGraphOp::Kind::Launch) kernels_.push_back(i);
    }
    /// Every CPU operation is done when its call returns, on any stream: the replay runs here.
    void launch(BackendStream &) override {
        for (CpuGraphOp &op : ops_) op.run();
    }
    void update_kernel(size_t index, const LaunchDims &dims, void **args, const uint32_t *sizes,
                       size_t n) override {
        EMBER_ASSERT(index < kernels_.size(), "CpuGraphExec::update_kernel: no such kernel node");
        CpuGraphOp &op = ops_[kernels_[index]];
        EMBER_ASSERT(n == op.sizes.size(), "CpuGraphExec::update_kernel: another kernel's arguments");
        op.dims = dims;
        op.set_arguments(args, sizes, n);
    }

private:
    std::vector<CpuGraphOp> ops_;
    std::vector<size_t> kernels_;
};

class CpuGraph final : public BackendGraph {
public:
    size_t num_nodes() override { return ops.size(); }
    std::unique_ptr<BackendGraphExec> instantiate() override { return std::make_unique<CpuGraphExec>(ops); }
    std::vector<CpuGraphOp> ops;
};

} // namespace ember::detail

#endif // EMBER_RUNTIME_CPU_CPUGRAPH_H
