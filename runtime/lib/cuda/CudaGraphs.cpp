/// \file
/// The CUDA back end's graphs (classes in CudaBackend.h): a stream's capture into a CUgraph
/// (CudaStream::Graph), its instance (CudaStream::GraphExec) and the capture calls of CudaStream
/// ([Note] Graphs in BackendGraph.h).
#include "cuda/CudaBackend.h"

#include "BackendGraph.h"

#include "ember/Error.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace ember::detail {

/// A captured CUgraph and its kernel nodes in enqueue order ([Note] Graphs in BackendGraph.h).
class CudaStream::Graph final : public BackendGraph {
public:
    explicit Graph(std::shared_ptr<CudaDeviceState> dev) : dev_(std::move(dev)) {}
    ~Graph() override {
        if (!graph_) return;
        ScopedCurrent current(*dev_->ctx, std::nothrow);
        if (current.ok()) dev_->drv.log_if_error(dev_->drv.cuGraphDestroy(graph_), "cuGraphDestroy");
    }
    size_t num_nodes() override {
        size_t n = 0;
        ScopedCurrent current(*dev_->ctx);
        dev_->drv.check(dev_->drv.cuGraphGetNodes(graph_, nullptr, &n), "cuGraphGetNodes",
                        " on " + dev_->ctx->where());
        return n;
    }
    std::unique_ptr<BackendGraphExec> instantiate() override;

    cu::CUgraph graph_ = nullptr;
    std::vector<cu::CUgraphNode> kernel_nodes_;
    std::vector<cu::CUfunction> kernel_functions_;
    std::vector<std::string> kernel_names_;

private:
    std::shared_ptr<CudaDeviceState> dev_;
};

/// A CUgraphExec.
class CudaStream::GraphExec final : public BackendGraphExec {
public:
    GraphExec(std::shared_ptr<CudaDeviceState> dev, cu::CUgraphExec exec, const Graph &graph)
        : dev_(std::move(dev)), exec_(exec), nodes_(graph.kernel_nodes_), functions_(graph.kernel_functions_),
          names_(graph.kernel_names_) {
        // A fault surfacing later names the graph's kernels: each once, a few at most.
        for (const std::string &k : names_)
            if (suspects_.size() < 8 && std::find(suspects_.begin(), suspects_.end(), k) == suspects_.end())
                suspects_.push_back(k);
    }
    ~GraphExec() override {
        if (!exec_) return;
        ScopedCurrent current(*dev_->ctx, std::nothrow);
        if (current.ok()) dev_->drv.log_if_error(dev_->drv.cuGraphExecDestroy(exec_), "cuGraphExecDestroy");
    }
    GraphExec(const GraphExec &) = delete;
    GraphExec &operator=(const GraphExec &) = delete;

    void launch(BackendStream &stream) override {
        if (!exec_) return; // an empty graph: nothing to run
        auto &s = static_cast<CudaStream &>(stream);
        ScopedCurrent current(*dev_->ctx);
        cu::CUresult rc = dev_->drv.cuGraphLaunch(exec_, s.handle());
        if (rc != cu::CUDA_SUCCESS)
            dev_->drv.check(rc, "cuGraphLaunch", " on " + dev_->ctx->where() + dev_->fault_context(rc));
        for (const std::string &k : suspects_) dev_->remember_launch(k);
    }
    void update_kernel(size_t index, const LaunchDims &d, void **args, const uint32_t *, size_t) override {
        EMBER_ASSERT(index < nodes_.size(), "CudaStream::GraphExec::update_kernel: no such kernel node");
        cu::CUDA_KERNEL_NODE_PARAMS p{};
        p.func = functions_[index];
        set_launch_dims(p, d);
        p.kernelParams = args; // copied by the driver
        ScopedCurrent current(*dev_->ctx);
        dev_->drv.check(dev_->drv.cuGraphExecKernelNodeSetParams(exec_, nodes_[index], &p),
                        "cuGraphExecKernelNodeSetParams",
                        "; updating kernel node " + std::to_string(index) + " ('" + names_[index] + "') on " +
                            dev_->ctx->where());
    }

private:
    std::shared_ptr<CudaDeviceState> dev_;
    cu::CUgraphExec exec_;
    std::vector<cu::CUgraphNode> nodes_;
    std::vector<cu::CUfunction> functions_;
    std::vector<std::string> names_;
    std::vector<std::string> suspects_;
};

std::unique_ptr<BackendGraphExec> CudaStream::Graph::instantiate() {
    // An empty graph runs nothing: it needs no CUgraphExec.
    if (num_nodes() == 0) return std::make_unique<GraphExec>(dev_, nullptr, *this);
    ScopedCurrent current(*dev_->ctx);
    cu::CUgraphExec exec = nullptr;
    dev_->drv.check(dev_->drv.cuGraphInstantiateWithFlags(&exec, graph_, 0), "cuGraphInstantiateWithFlags",
                    " on " + dev_->ctx->where());
    return std::make_unique<GraphExec>(dev_, exec, *this);
}

void CudaStream::begin_capture() {
    const CudaDriver &drv = dev_->drv;
    if (!drv.cuStreamBeginCapture || !drv.cuStreamEndCapture ||
        (!drv.cuStreamGetCaptureInfo_v3 && !drv.cuStreamGetCaptureInfo_v2) || !drv.cuGraphInstantiateWithFlags ||
        !drv.cuGraphLaunch || !drv.cuGraphExecDestroy || !drv.cuGraphDestroy || !drv.cuGraphGetNodes ||
        !drv.cuGraphExecKernelNodeSetParams)
        throw RuntimeError("begin_capture: graphs need a driver for CUDA 11.4 or newer; this libcuda.so.1 (CUDA " +
                           std::to_string(drv.version() / 1000) + "." + std::to_string(drv.version() % 1000 / 10) +
                           ") lacks a graph entry point");
    auto graph = std::make_shared<Graph>(dev_);
    ScopedCurrent current(*dev_->ctx);
    // Relaxed: ember itself may still allocate (cuMemAlloc) and load modules while a stream
    // captures; it rejects the calls that would break the capture before the driver sees them.
    drv.check(drv.cuStreamBeginCapture(stream_, cu::CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture",
              " on " + dev_->ctx->where());
    ++dev_->capturing;
    graph_ = std::move(graph);
    capture_.store(graph_.get(), std::memory_order_release);
}

std::shared_ptr<BackendGraph> CudaStream::end_capture() {
    const CudaDriver &drv = dev_->drv;
    std::shared_ptr<Graph> graph = std::move(graph_);
    capture_.store(nullptr, std::memory_order_release);
    --dev_->capturing;
    ScopedCurrent current(*dev_->ctx);
    cu::CUgraph g = nullptr;
    cu::CUresult rc = drv.cuStreamEndCapture(stream_, &g);
    if (rc != cu::CUDA_SUCCESS) {
        if (g) drv.cuGraphDestroy(g);
        drv.check(rc, "cuStreamEndCapture",
                  " on " + dev_->ctx->where() +
                      "; an operation enqueued during the capture was not allowed while capturing, and the "
                      "driver invalidated the capture");
    }
    graph->graph_ = g;
    return graph;
}

void CudaStream::capture_launch(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &dims, void **args,
                                const uint32_t *, size_t num_args) {
    launch(fn, kernel_name, dims, args, num_args); // captured: becomes a kernel node
    // The node just added is now the capture's only dependency.
    const CudaDriver &drv = dev_->drv;
    ScopedCurrent current(*dev_->ctx);
    int status = 0;
    const cu::CUgraphNode *deps = nullptr;
    size_t num_deps = 0;
    cu::CUresult rc = drv.cuStreamGetCaptureInfo_v3
                          ? drv.cuStreamGetCaptureInfo_v3(stream_, &status, nullptr, nullptr, &deps, nullptr,
                                                          &num_deps)
                          : drv.cuStreamGetCaptureInfo_v2(stream_, &status, nullptr, nullptr, &deps, &num_deps);
    drv.check(rc, "cuStreamGetCaptureInfo", " after capturing kernel '" + kernel_name + "' on " + dev_->ctx->where());
    if (status != cu::CU_STREAM_CAPTURE_STATUS_ACTIVE || num_deps != 1)
        throw LogicError("capturing kernel '" + kernel_name + "' on " + dev_->ctx->where() +
                         ": the capture is no longer active (status " + std::to_string(status) +
                         ") or the kernel node is not its only dependency (" + std::to_string(num_deps) +
                         " dependencies); an operation not allowed while capturing invalidated it");
    graph_->kernel_nodes_.push_back(deps[0]);
    graph_->kernel_functions_.push_back(static_cast<CudaFunction &>(fn).function);
    graph_->kernel_names_.push_back(kernel_name);
}

} // namespace ember::detail
