/// \file
/// The state behind DeviceContext and DeviceFunction handles (internal).
#ifndef EMBER_RUNTIME_CONTEXTIMPL_H
#define EMBER_RUNTIME_CONTEXTIMPL_H

#include "Backend.h"

#include "ember/dsl/Kernel.h"
#include "ember/runtime/CompileReport.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <unordered_map>

namespace ember::detail {

struct FunctionImpl;

struct ContextImpl {
    std::shared_ptr<Backend> backend;
    /// "cuda:0", "cpu:0": for messages.
    std::string label;
    std::mutex cache_mutex;
    /// Kernels compiled by enqueue_function(kernel, ...), by KernelInfo::id.
    std::unordered_map<uint64_t, std::shared_ptr<FunctionImpl>> cache;

    ContextImpl() = default;
    /// Places the timeline's pending device spans of this context's streams, while the back end
    /// lives (Timeline.cpp; [Note] Timeline).
    ~ContextImpl();
    ContextImpl(const ContextImpl &) = delete;
    ContextImpl &operator=(const ContextImpl &) = delete;
};

/// Shared (enable_shared_from_this) so that a graph that captures a launch can keep it alive.
struct FunctionImpl : std::enable_shared_from_this<FunctionImpl> {
    /// Keeps the back end alive for as long as the loaded code (declared first: destroyed last).
    std::shared_ptr<Backend> backend;
    const ContextImpl *context = nullptr;
    /// The same context, to tell in messages whether it still exists, and its label.
    std::weak_ptr<const ContextImpl> context_ref;
    std::string context_label;
    std::shared_ptr<const KernelInfo> kernel;
    CompiledKernel compiled;
    std::unique_ptr<LoadedFunction> loaded;
    double compile_seconds = 0;
    double load_seconds = 0;
    /// What compiling and loading produced and cost (CompileReport.cpp): compile() sets
    /// report.cache_level and record_report; function_report builds the rest once, on first use.
    CompileReport report;
    bool report_recorded = false;
    mutable std::once_flag report_once;
    /// The kernel's static shared memory (CompiledKernel::static_shared_bytes; the driver's figure
    /// for functions of external modules).
    uint64_t static_shared_bytes = 0;

    // Function attributes (runtime/lib/FunctionAttributes.cpp).
    /// The opt-in of FunctionAttribute::max_dynamic_shared_size_bytes: the most dynamic shared
    /// memory a launch may ask for; -1 while not set (the device's default limit applies).
    std::atomic<int64_t> max_dynamic_shared_bytes{-1};
    /// Every value set through set_attribute or FuncAttribute, by FunctionAttribute value (the
    /// CPU device answers get_attribute from it).
    std::mutex attributes_mutex;
    std::map<int, int> attributes_set;
    /// For a function of an external module (DeviceModule::get_function): keeps the module
    /// loaded while the function lives.
    std::shared_ptr<const void> module;
};

/// A DeviceStream: a back-end stream and the context it belongs to (kept alive by it).
struct StreamImpl {
    std::shared_ptr<ContextImpl> context;
    std::shared_ptr<BackendStream> stream;
};

/// A DeviceEvent.
struct EventImpl {
    std::shared_ptr<ContextImpl> context;
    std::shared_ptr<BackendEvent> event;
    bool timing = true;            // made without EventFlags::disable_timing
    mutable bool recorded = false; // recorded on a stream at least once
};

/// "argument 1 ('size')" or "argument 1"; with a field: "argument 0 ('v'), field 'data'".
std::string argument_label(const FunctionImpl &fn, size_t index, const char *field = nullptr);

/// How messages name two different contexts: their labels ("cuda:0", "cpu:1"); two DeviceContexts
/// of one device share a label, and are then "a DeviceContext of cpu:0" and "another DeviceContext
/// of cpu:0".
std::pair<std::string, std::string> two_contexts(const ContextImpl &a, const ContextImpl &b);

} // namespace ember::detail

#endif // EMBER_RUNTIME_CONTEXTIMPL_H
