/// \file
/// Function attributes, launches with attributes, and external modules: the API layer's
/// internals (runtime/lib/FunctionAttributes.cpp, runtime/lib/ExternalModule.cpp).
#ifndef EMBER_RUNTIME_FUNCTIONS_H
#define EMBER_RUNTIME_FUNCTIONS_H

#include "Backend.h"
#include "ContextImpl.h"

#include "ember/runtime/DeviceContext.h"

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ember::detail {

/// After `fn` is loaded: records what the IR says (local bytes) and applies
/// `opts.func_attribute` in order.
void finish_function(FunctionImpl &fn, const CompileFunctionOptions &opts);

/// Checks `req.attributes` (cluster shape, cooperative grid size, priority range) against the
/// device and `fn`, and launches through BackendStream::launch_extended.
void launch_with_attributes(ContextImpl &ctx, BackendStream &s, FunctionImpl &fn, const LaunchRequest &req,
                            const LaunchDims &dims, void **args, size_t n);

/// What a PTX text declares at module scope: its kernels with their parameters' sizes in bytes,
/// and its `.global` / `.const` variables. A lexical scan (comments skipped), for messages and
/// signature checks; the driver remains the judge of the PTX.
struct PtxSymbols {
    struct Entry {
        std::string name;
        /// Bytes of each parameter (`.param .u64 a` is 8; an array `.param .align 8 .b8 s[16]` 16).
        std::vector<size_t> param_bytes;
    };
    std::vector<Entry> entries;
    std::vector<std::string> globals;
};
PtxSymbols scan_ptx(std::string_view ptx);

/// A loaded external module (DeviceModule).
struct ModuleImpl {
    std::shared_ptr<ContextImpl> context;
    std::shared_ptr<Backend::LoadedModule> loaded;
    std::string name;
    /// ModuleImage::Format.
    int format = 0;
    /// For PTX images; empty otherwise.
    PtxSymbols ptx;
    std::string ptx_text;
    /// For ember IR images (`loaded` is null then): the kernels, and those compiled so far.
    std::vector<ir::Kernel> ir_kernels;
    mutable std::mutex compiled_mutex;
    mutable std::map<std::string, std::shared_ptr<FunctionImpl>> compiled;
};

} // namespace ember::detail

#endif // EMBER_RUNTIME_FUNCTIONS_H
