/// \file
/// Graphs: the work enqueued on a stream, captured once and replayed as one unit (CUDA graphs;
/// on the CPU device a recorded list of operations). See [Note] Graphs in the runtime's
/// BackendGraph.h and docs/runtime.md.
///
/// ```cpp
/// DeviceGraph g = ctx.capture([&](DeviceStream &s) {
///     s.enqueue_copy(dev, host);
///     s.enqueue_function(f, dev, n, grid_dim(blocks), block_dim(256));
///     s.enqueue_copy(host, dev);
/// });
/// DeviceGraphExec exec = g.instantiate();
/// exec.launch();                                        // on ctx's stream
/// exec.update_kernel_arguments(0, f, other_dev, n);     // kernel node 0, same grid and block
/// exec.launch();
/// ctx.synchronize();
/// ```
#ifndef EMBER_RUNTIME_DEVICEGRAPH_H
#define EMBER_RUNTIME_DEVICEGRAPH_H

#include "ember/runtime/DeviceContext.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {

namespace detail {
struct GraphImpl;
struct GraphExecImpl;
/// The function of kernel node `index` of `exec`, after checking that the node exists and
/// launches the kernel `kernel` (LogicError naming both otherwise).
FunctionImpl &kernel_node_function(const GraphExecImpl &exec, size_t index, const KernelInfo &kernel);
const KernelInfo &function_kernel_info(const FunctionImpl &fn);
const ContextImpl &graph_exec_context(const GraphExecImpl &exec);
/// Replaces kernel node `index`'s arguments (and its launch dimensions when `req` is given).
void update_kernel_node(GraphExecImpl &exec, size_t index, FunctionImpl &fn, const LaunchRequest *req,
                        void **args, size_t n, const KernelArgsInfo &info);
} // namespace detail

/// A kernel launch in a graph. `graph.kernel_nodes()` lists them in the order they were
/// enqueued during the capture; `index` is the position in that list, which
/// `DeviceGraphExec::update_kernel_arguments` takes.
struct KernelNode {
    size_t index = 0;
    /// The kernel's name.
    std::string function_name;
    Dim grid_dim, block_dim;
    int64_t shared_mem_bytes = 0;
};

class DeviceGraphExec;

/// Captured work of one stream (CUDA's CUgraph, PyCUDA's Graph): made by `stream.end_capture()`
/// or `ctx.capture(body)`. Keeps every buffer, event and function its operations use alive, so
/// the program may drop them after the capture. Cheap to copy; copies are the same graph.
class DeviceGraph {
public:
    DeviceGraph() = default;
    explicit DeviceGraph(std::shared_ptr<detail::GraphImpl> impl) : impl_(std::move(impl)) {}

    /// Nodes of the graph: one per captured copy, kernel launch and wait for an event.
    size_t num_nodes() const;
    /// The kernel launches, in the order they were enqueued.
    std::vector<KernelNode> kernel_nodes() const;
    /// An executable instance (cuGraphInstantiateWithFlags). Instances are independent: an
    /// update of one's arguments leaves the graph and other instances as they were.
    DeviceGraphExec instantiate() const;
    /// The context whose stream captured the graph.
    DeviceContext context() const;

    explicit operator bool() const { return impl_ != nullptr; }
    const std::shared_ptr<detail::GraphImpl> &impl() const { return impl_; }

private:
    std::shared_ptr<detail::GraphImpl> impl_;
};

/// An instantiated graph (CUgraphExec): launch replays every operation of the graph, in the
/// captured order, as one enqueued unit. Keeps its graph alive. Cheap to copy; copies are the
/// same instance.
class DeviceGraphExec {
public:
    DeviceGraphExec() = default;
    explicit DeviceGraphExec(std::shared_ptr<detail::GraphExecImpl> impl) : impl_(std::move(impl)) {}

    /// Enqueues one replay on the context's stream.
    void launch() const;
    /// Enqueues one replay on `stream`, which must belong to the graph's context and not be
    /// capturing (LogicError otherwise).
    void launch(const DeviceStream &stream) const;
    size_t num_nodes() const;
    /// The kernel nodes with this instance's current dimensions.
    std::vector<KernelNode> kernel_nodes() const;

    /// Replaces the arguments of kernel node `kernel_node` (an index into kernel_nodes()) for
    /// later launches of this instance (cuGraphExecKernelNodeSetParams). `f` must be the kernel
    /// the node launches (LogicError otherwise); the arguments are checked against its
    /// parameters at compile time exactly as enqueue_function checks them. Trailing launch
    /// options (grid_dim(...), block_dim(...), shared_mem_bytes(...) or a LaunchConfig) change
    /// the node's dimensions too; without them they stay as captured.
    template <class... P, class... A>
    void update_kernel_arguments(size_t kernel_node, const DeviceFunction<P...> &f, A &&...args) const {
        update(kernel_node, detail::function_kernel_info(f.checked("update_kernel_arguments")), static_cast<std::tuple<P...> *>(nullptr),
               std::forward_as_tuple(std::forward<A>(args)...));
    }
    template <class... P, class... A>
    void update_kernel_arguments(size_t kernel_node, const Kernel<P...> &k, A &&...args) const {
        update(kernel_node, *k.info(), static_cast<std::tuple<P...> *>(nullptr),
               std::forward_as_tuple(std::forward<A>(args)...));
    }
    template <class F, class... A>
    void update_kernel_arguments(const KernelNode &node, const F &f, A &&...args) const {
        update_kernel_arguments(node.index, f, std::forward<A>(args)...);
    }

    explicit operator bool() const { return impl_ != nullptr; }
    const std::shared_ptr<detail::GraphExecImpl> &impl() const { return impl_; }

private:
    template <class... P, class Tuple>
    void update(size_t kernel_node, const detail::KernelInfo &kernel, std::tuple<P...> *tag, Tuple &&all) const {
        detail::GraphExecImpl &exec = checked("update_kernel_arguments");
        detail::FunctionImpl &fn = detail::kernel_node_function(exec, kernel_node, kernel);
        detail::with_kernel_params<true>(
            detail::graph_exec_context(exec), fn, std::forward<Tuple>(all), tag,
            [&](const detail::LaunchRequest *req, void **ptrs, size_t n, const detail::KernelArgsInfo &info) {
                detail::update_kernel_node(exec, kernel_node, fn, req, ptrs, n, info);
            });
    }
    /// The instance; LogicError naming `method` when it is empty.
    detail::GraphExecImpl &checked(const char *method) const;

    std::shared_ptr<detail::GraphExecImpl> impl_;
};

template <class F> DeviceGraph DeviceContext::capture(F &&body) const {
    DeviceStream s = stream();
    s.begin_capture();
    try {
        std::forward<F>(body)(s);
    } catch (...) {
        // End the capture so the stream is usable again; the partial graph is dropped.
        try {
            (void)s.end_capture();
        } catch (...) {
        }
        throw;
    }
    return s.end_capture();
}

} // namespace ember

#endif // EMBER_RUNTIME_DEVICEGRAPH_H
