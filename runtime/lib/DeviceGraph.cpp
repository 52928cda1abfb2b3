/// \file
/// Graphs, the API layer: stream capture, DeviceGraph, DeviceGraphExec and what they keep alive.
/// The back ends' side is in BackendGraph.h ([Note] Graphs).
#include "ember/runtime/DeviceGraph.h"

#include "Backend.h"
#include "BackendGraph.h"
#include "ContextImpl.h"
#include "Timeline.h"

#include <mutex>
#include <string>
#include <utility>

namespace ember {

namespace detail {

struct GraphImpl {
    std::shared_ptr<ContextImpl> context;
    std::shared_ptr<BackendGraph> graph;
};

struct GraphExecImpl {
    /// Declared first, destroyed last: the instance may refer to the graph's nodes.
    std::shared_ptr<GraphImpl> graph;
    std::unique_ptr<BackendGraphExec> exec;
    std::mutex mutex;
    /// The graph's kernel nodes with this instance's current arguments and dimensions.
    std::vector<KernelNodeRecord> kernels;
};

namespace {

std::string stream_label(const ContextImpl &ctx, const BackendStream &s) {
    return (&s == ctx.backend->default_stream().get() ? "the stream of " : "a stream of ") + ctx.label;
}

KernelNode public_node(size_t index, const KernelNodeRecord &r) {
    KernelNode k;
    k.index = index;
    k.function_name = r.name;
    k.grid_dim = Dim(r.dims.grid[0], r.dims.grid[1], r.dims.grid[2]);
    k.block_dim = Dim(r.dims.block[0], r.dims.block[1], r.dims.block[2]);
    k.shared_mem_bytes = r.dims.shared_mem_bytes;
    return k;
}

} // namespace

void reject_while_capturing(const BackendStream &stream, const ContextImpl &ctx, const char *call) {
    if (!stream.capture_graph()) return;
    throw LogicError(std::string(call) + " is not allowed while " + stream_label(ctx, stream) +
                     " is capturing a graph (between begin_capture() and end_capture()): the work "
                     "enqueued during a capture does not run until the graph is launched; call "
                     "end_capture() first");
}

void keep_for_graph(BackendGraph &graph, std::shared_ptr<const void> owner) {
    std::lock_guard<std::mutex> lock(graph.record.mutex);
    graph.record.owners.push_back(std::move(owner));
}

void keep_copy_operands(BackendGraph &graph, MemSide dst_side, const ContextImpl *dst_ctx, MemSide src_side,
                        const ContextImpl *src_ctx, const CopyOwners &owners) {
    auto raw_host = [](MemSide side, const ContextImpl *c) { return side == MemSide::Host && c == nullptr; };
    if (raw_host(dst_side, dst_ctx) || raw_host(src_side, src_ctx))
        throw LogicError(std::string("enqueue_copy while capturing a graph: the ") +
                         (raw_host(dst_side, dst_ctx) ? "destination" : "source") +
                         " is a raw host pointer, which a graph cannot keep alive and CUDA graphs "
                         "cannot copy (pageable memory); use a HostBuffer "
                         "(ctx.enqueue_create_host_buffer) for copies in a graph");
    std::lock_guard<std::mutex> lock(graph.record.mutex);
    for (const auto *o : {owners.dst_device, owners.src_device})
        if (o && *o) graph.record.owners.push_back(*o);
    for (const auto *o : {owners.dst_host, owners.src_host})
        if (o && *o) graph.record.owners.push_back(*o);
}

void capture_kernel(BackendStream &stream, BackendGraph &graph, FunctionImpl &fn, const LaunchDims &dims,
                    void **args, size_t n, const KernelArgsInfo *info) {
    if (!info)
        throw LogicError("kernel '" + fn.kernel->ir.name +
                         "': this kind of launch cannot be captured into a graph (its argument sizes "
                         "are unknown); launch it with enqueue_function");
    KernelNodeRecord node;
    node.function = fn.weak_from_this().lock();
    if (!node.function)
        throw LogicError("kernel '" + fn.kernel->ir.name +
                         "': this function is not shared-owned, so a graph cannot keep it alive; launch it "
                         "outside the capture");
    node.function_id = &fn;
    node.name = fn.kernel->ir.name;
    node.dims = dims;
    for (size_t i = 0; i < info->num_owners; ++i)
        if (*info->owners[i]) node.argument_owners.push_back(*info->owners[i]);
    // One lock around both, so kernel node i of the back end is record.kernels[i].
    std::lock_guard<std::mutex> lock(graph.record.mutex);
    stream.capture_launch(*fn.loaded, node.name, dims, args, info->sizes, n);
    graph.record.kernels.push_back(std::move(node));
}

FunctionImpl &kernel_node_function(const GraphExecImpl &exec, size_t index, const KernelInfo &kernel) {
    if (index >= exec.kernels.size())
        throw LogicError("update_kernel_arguments: kernel node " + std::to_string(index) +
                         " does not exist; the graph has " + std::to_string(exec.kernels.size()) +
                         " kernel node(s) (graph.kernel_nodes())");
    const KernelNodeRecord &node = exec.kernels[index];
    auto *fn = const_cast<FunctionImpl *>(static_cast<const FunctionImpl *>(node.function_id));
    if (fn->kernel->id != kernel.id)
        throw LogicError("update_kernel_arguments: kernel node " + std::to_string(index) + " launches kernel '" +
                         node.name + "', not '" + kernel.ir.name +
                         "'; pass the function the node launches");
    return *fn;
}

const KernelInfo &function_kernel_info(const FunctionImpl &fn) { return *fn.kernel; }

const ContextImpl &graph_exec_context(const GraphExecImpl &exec) { return *exec.graph->context; }

void update_kernel_node(GraphExecImpl &exec, size_t index, FunctionImpl &fn, const LaunchRequest *req,
                        void **args, size_t n, const KernelArgsInfo &info) {
    std::lock_guard<std::mutex> lock(exec.mutex);
    KernelNodeRecord &node = exec.kernels[index];
    LaunchDims dims = node.dims;
    if (req) {
        check_launch_request(*exec.graph->context, fn, *req);
        dims.grid = {req->grid.x, req->grid.y, req->grid.z};
        dims.block = {req->block.x, req->block.y, req->block.z};
        dims.shared_mem_bytes = static_cast<uint32_t>(req->shared_mem_bytes);
    }
    exec.exec->update_kernel(index, dims, args, info.sizes, n);
    node.dims = dims;
    node.argument_owners.clear();
    for (size_t i = 0; i < info.num_owners; ++i)
        if (*info.owners[i]) node.argument_owners.push_back(*info.owners[i]);
}

} // namespace detail

// ---------------------------------------------------------------------------------------------
// Capture.

void DeviceStream::begin_capture() const {
    detail::StreamImpl &self = live("begin_capture");
    detail::BackendStream &s = *self.stream;
    if (s.capture_graph())
        throw LogicError("begin_capture: " + detail::stream_label(*self.context, s) +
                         " is capturing already; call end_capture() first");
    s.begin_capture();
}

DeviceGraph DeviceStream::end_capture() const {
    detail::StreamImpl &self = live("end_capture");
    detail::BackendStream &s = *self.stream;
    if (!s.capture_graph())
        throw LogicError("end_capture: " + detail::stream_label(*self.context, s) +
                         " is not capturing; call begin_capture() first");
    std::shared_ptr<detail::BackendGraph> g = s.end_capture();
    return DeviceGraph(std::make_shared<detail::GraphImpl>(detail::GraphImpl{self.context, std::move(g)}));
}

bool DeviceStream::is_capturing() const { return live("is_capturing").stream->capture_graph() != nullptr; }

void DeviceContext::begin_capture() const {
    live("begin_capture");
    stream().begin_capture();
}
DeviceGraph DeviceContext::end_capture() const {
    live("end_capture");
    return stream().end_capture();
}
bool DeviceContext::is_capturing() const {
    live("is_capturing");
    return stream().is_capturing();
}

// ---------------------------------------------------------------------------------------------
// DeviceGraph.

namespace {
const detail::GraphImpl &require_graph(const std::shared_ptr<detail::GraphImpl> &g, const char *call) {
    if (!g) detail::throw_empty_handle("DeviceGraph", call, "make one with end_capture() or capture()");
    return *g;
}
} // namespace

size_t DeviceGraph::num_nodes() const { return require_graph(impl_, "num_nodes").graph->num_nodes(); }

std::vector<KernelNode> DeviceGraph::kernel_nodes() const {
    detail::GraphRecord &r = require_graph(impl_, "kernel_nodes").graph->record;
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<KernelNode> nodes;
    for (size_t i = 0; i < r.kernels.size(); ++i) nodes.push_back(detail::public_node(i, r.kernels[i]));
    return nodes;
}

DeviceGraphExec DeviceGraph::instantiate() const {
    const detail::GraphImpl &g = require_graph(impl_, "instantiate");
    auto exec = std::make_shared<detail::GraphExecImpl>();
    exec->graph = impl_;
    exec->exec = g.graph->instantiate();
    {
        std::lock_guard<std::mutex> lock(g.graph->record.mutex);
        exec->kernels = g.graph->record.kernels;
    }
    return DeviceGraphExec(std::move(exec));
}

DeviceContext DeviceGraph::context() const { return DeviceContext(require_graph(impl_, "context").context); }

// ---------------------------------------------------------------------------------------------
// DeviceGraphExec.

detail::GraphExecImpl &DeviceGraphExec::checked(const char *method) const {
    if (!impl_) detail::throw_empty_handle("DeviceGraphExec", method, "make one with graph.instantiate()");
    return *impl_;
}

void DeviceGraphExec::launch() const { launch(DeviceContext(checked("launch").graph->context).stream()); }

void DeviceGraphExec::launch(const DeviceStream &stream) const {
    detail::GraphExecImpl &e = checked("launch");
    const detail::ContextImpl &ctx = *e.graph->context;
    if (stream.checked_impl("DeviceGraphExec::launch")->context.get() != &ctx) {
        auto [on, of] = detail::two_contexts(ctx, *stream.impl()->context);
        throw LogicError("DeviceGraphExec::launch: the graph was captured on " + on + " but the stream belongs to " +
                         of + "; launch it on a stream of its own context");
    }
    detail::BackendStream &s = *stream.impl()->stream;
    if (s.capture_graph())
        throw LogicError("DeviceGraphExec::launch: " + detail::stream_label(ctx, s) +
                         " is capturing a graph; ember does not capture a graph into another "
                         "(launch it before begin_capture() or after end_capture())");
    std::lock_guard<std::mutex> lock(e.mutex);
    if (detail::timeline::on()) [[unlikely]]
        detail::timeline::stream_op(
            ctx, stream.impl()->stream, "graph", "graph launch", "graph",
            detail::timeline::Args().number("kernels", int64_t(e.kernels.size())),
            [&] { e.exec->launch(s); });
    else
        e.exec->launch(s);
}

size_t DeviceGraphExec::num_nodes() const { return checked("num_nodes").graph->graph->num_nodes(); }

std::vector<KernelNode> DeviceGraphExec::kernel_nodes() const {
    detail::GraphExecImpl &e = checked("kernel_nodes");
    std::lock_guard<std::mutex> lock(e.mutex);
    std::vector<KernelNode> nodes;
    for (size_t i = 0; i < e.kernels.size(); ++i) nodes.push_back(detail::public_node(i, e.kernels[i]));
    return nodes;
}

} // namespace ember
