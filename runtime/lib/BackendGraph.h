/// \file
/// The back-end interface of graphs: a stream's captured work (BackendGraph) and its executable
/// instance (BackendGraphExec). Internal; public headers never include this file.
///
/// [Note] Graphs
/// =============
/// A graph is the work enqueued on one stream between `begin_capture()` and `end_capture()`:
/// copies, kernel launches and waits for events, in enqueue order. Nothing runs while a stream
/// captures; `instantiate()` makes an executable copy that `launch(stream)` replays as one unit,
/// any number of times; `update_kernel` changes a kernel node's arguments (and dimensions) in one
/// executable copy without touching the graph or other copies.
///
/// * CUDA: cuStreamBeginCapture_v2 in CU_STREAM_CAPTURE_MODE_RELAXED, so that ember may still
///   call cuMemAlloc (a buffer created while the context's stream captures) and load modules (a
///   Kernel compiled on first use) during the capture; ember's own checks, not the driver's
///   thread-local mode, reject the calls that would break it (synchronize, is_done, record_event,
///   launching a graph: LogicError naming the call). Every stream ember makes, the context's
///   default one included, is a created non-blocking stream, never the legacy NULL stream, so
///   it can capture. After each captured launch, cuStreamGetCaptureInfo gives the new kernel
///   node (the capture's only dependency then); the nodes are kept in enqueue order, and
///   `update_kernel(i, ...)` is cuGraphExecKernelNodeSetParams on node i. Waits for events are
///   captured with CU_EVENT_WAIT_EXTERNAL, as event wait nodes: a replay waits for the event's
///   last record before the replay. cuGraphInstantiateWithFlags(0), cuGraphLaunch,
///   cuGraphExecDestroy, cuGraphDestroy. While a stream of the device captures, frees are
///   deferred to the first allocation or free after the capture (a free must not become a node
///   of the graph nor synchronise the capturing stream).
/// * CPU device: capturing records the operations into a list instead of running them (a kernel
///   launch with a copy of its argument bytes); a replay runs the list in order on the launching
///   stream, which, as every CPU operation, is done when launch() returns; update_kernel replaces
///   the argument bytes of the executable copy's node.
///
/// Lifetimes: the public DeviceGraph keeps every DeviceBuffer, HostBuffer, DeviceEvent and
/// DeviceFunction its nodes refer to alive (shared owners in `GraphRecord`), and each
/// DeviceGraphExec keeps its graph, so a buffer dropped by the program after the capture stays
/// valid for every replay. Raw host pointers (`enqueue_copy(dev, ptr)`) cannot be kept and are
/// rejected while capturing: a captured copy from or to the host needs a HostBuffer (page-locked
/// on GPUs, which CUDA graphs need for their memcpy nodes).
#ifndef EMBER_RUNTIME_BACKENDGRAPH_H
#define EMBER_RUNTIME_BACKENDGRAPH_H

#include "Backend.h"

#include "ember/runtime/DeviceContext.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ember::detail {

/// One kernel node of a graph, as the API layer sees it.
struct KernelNodeRecord {
    /// The FunctionImpl launched (kept alive; identifies the kernel for update_kernel_arguments).
    std::shared_ptr<const void> function;
    const void *function_id = nullptr;
    std::string name;
    LaunchDims dims;
    /// The buffers of the node's current arguments.
    std::vector<std::shared_ptr<const void>> argument_owners;
};

/// What the API layer keeps for a graph: the owners of everything its nodes refer to, and its
/// kernel nodes in enqueue order (index i is the back end's kernel node i).
struct GraphRecord {
    std::mutex mutex;
    std::vector<std::shared_ptr<const void>> owners;
    std::vector<KernelNodeRecord> kernels;
};

/// An instantiated graph (CUgraphExec; a copy of the operation list on the CPU device).
class BackendGraphExec {
public:
    virtual ~BackendGraphExec() = default;
    /// Enqueues one replay of the whole graph on `stream` (of the graph's back end).
    virtual void launch(BackendStream &stream) = 0;
    /// Replaces the arguments and dimensions of kernel node `index` (in enqueue order) in this
    /// instance: `args[i]` points to parameter i's representation, `sizes[i]` bytes long.
    virtual void update_kernel(size_t index, const LaunchDims &dims, void **args, const uint32_t *sizes,
                               size_t num_args) = 0;
};

/// A captured graph (CUgraph; an operation list on the CPU device). Made by
/// BackendStream::begin_capture, complete after end_capture.
class BackendGraph {
public:
    virtual ~BackendGraph() = default;
    /// Nodes of the graph: one per captured copy, launch and wait.
    virtual size_t num_nodes() = 0;
    virtual std::unique_ptr<BackendGraphExec> instantiate() = 0;

    /// Filled by the API layer while capturing.
    GraphRecord record;
};

// The API layer's side (runtime/lib/DeviceGraph.cpp).
struct ContextImpl;
struct FunctionImpl;

/// A kernel launch on `stream`, which captures into `graph`: keeps `fn` and the argument buffers
/// of `info` and adds the kernel node. LogicError when `info` is missing.
void capture_kernel(BackendStream &stream, BackendGraph &graph, FunctionImpl &fn, const LaunchDims &dims,
                    void **args, size_t n, const KernelArgsInfo *info);
/// A copy on a capturing stream: keeps its buffers; LogicError for a raw host pointer.
void keep_copy_operands(BackendGraph &graph, MemSide dst_side, const ContextImpl *dst_ctx, MemSide src_side,
                        const ContextImpl *src_ctx, const CopyOwners &owners);
void keep_for_graph(BackendGraph &graph, std::shared_ptr<const void> owner);
/// The checks of a launch's dimensions against the device (DeviceContext.cpp).
void check_launch_request(const ContextImpl &ctx, const FunctionImpl &fn, const LaunchRequest &req);
/// LogicError naming `call` when `stream` is capturing.
void reject_while_capturing(const BackendStream &stream, const ContextImpl &ctx, const char *call);

} // namespace ember::detail

#endif // EMBER_RUNTIME_BACKENDGRAPH_H
