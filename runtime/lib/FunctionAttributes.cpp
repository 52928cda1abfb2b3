/// \file
/// Function attributes, cache preference, occupancy and launches with attributes (clusters,
/// cooperative grids, priorities): the API layer over Backend's function calls. See
/// docs/runtime.md, "Functions".
#include "Functions.h"

#include "ember/compiler/IR.h"

#include <algorithm>
#include <mutex>
#include <string>

namespace ember {

std::string to_string(FunctionAttribute a) {
    switch (a) {
    case FunctionAttribute::max_threads_per_block: return "max_threads_per_block";
    case FunctionAttribute::shared_size_bytes: return "shared_size_bytes";
    case FunctionAttribute::const_size_bytes: return "const_size_bytes";
    case FunctionAttribute::local_size_bytes: return "local_size_bytes";
    case FunctionAttribute::num_regs: return "num_regs";
    case FunctionAttribute::ptx_version: return "ptx_version";
    case FunctionAttribute::binary_version: return "binary_version";
    case FunctionAttribute::cache_mode_ca: return "cache_mode_ca";
    case FunctionAttribute::max_dynamic_shared_size_bytes: return "max_dynamic_shared_size_bytes";
    case FunctionAttribute::preferred_shared_memory_carveout: return "preferred_shared_memory_carveout";
    case FunctionAttribute::cluster_size_must_be_set: return "cluster_size_must_be_set";
    case FunctionAttribute::required_cluster_width: return "required_cluster_width";
    case FunctionAttribute::required_cluster_height: return "required_cluster_height";
    case FunctionAttribute::required_cluster_depth: return "required_cluster_depth";
    case FunctionAttribute::non_portable_cluster_size_allowed: return "non_portable_cluster_size_allowed";
    case FunctionAttribute::cluster_scheduling_policy_preference: return "cluster_scheduling_policy_preference";
    }
    return "FunctionAttribute(" + std::to_string(static_cast<int>(a)) + ")";
}

namespace detail {

namespace {

FunctionImpl &require_fn(FunctionImpl *fn, const char *call) {
    if (!fn)
        throw LogicError(std::string(call) +
                         ": the DeviceFunction is empty; make one with compile_function or DeviceModule::get_function");
    return *fn;
}

/// "kernel 'scale' on cuda:0".
std::string where(const FunctionImpl &fn) { return "kernel '" + fn.kernel->ir.name + "' on " + fn.context->label; }

Backend::KernelFacts facts_of(FunctionImpl &fn) {
    Backend::KernelFacts f;
    f.static_shared_bytes = fn.static_shared_bytes;
    f.local_bytes = fn.compiled.local_bytes; // 0 for functions of external modules
    f.max_dynamic_shared_bytes = fn.max_dynamic_shared_bytes.load();
    std::lock_guard<std::mutex> lock(fn.attributes_mutex);
    f.attributes_set = fn.attributes_set;
    return f;
}

constexpr int first_attribute = 0, last_attribute = 15;

void check_known(FunctionAttribute a, const char *call) {
    int v = static_cast<int>(a);
    if (v < first_attribute || v > last_attribute)
        throw LogicError(std::string(call) + ": FunctionAttribute(" + std::to_string(v) +
                         ") is not an attribute ember knows (0 to 15, CUfunction_attribute)");
}

bool settable(FunctionAttribute a) {
    switch (a) {
    case FunctionAttribute::max_dynamic_shared_size_bytes:
    case FunctionAttribute::preferred_shared_memory_carveout:
    case FunctionAttribute::required_cluster_width:
    case FunctionAttribute::required_cluster_height:
    case FunctionAttribute::required_cluster_depth:
    case FunctionAttribute::non_portable_cluster_size_allowed:
    case FunctionAttribute::cluster_scheduling_policy_preference:
        return true;
    default:
        return false;
    }
}

void set_attribute(FunctionImpl &fn, FunctionAttribute a, int value, const char *call) {
    check_known(a, call);
    const std::string name = "FunctionAttribute::" + to_string(a);
    if (!settable(a))
        throw LogicError(std::string(call) + ": " + where(fn) + ": " + name +
                         " is read-only; the settable attributes are max_dynamic_shared_size_bytes, "
                         "preferred_shared_memory_carveout, required_cluster_width/height/depth, "
                         "non_portable_cluster_size_allowed and cluster_scheduling_policy_preference");
    auto range = [&](int64_t lo, int64_t hi, const std::string &why) {
        if (value < lo || value > hi)
            throw LogicError(std::string(call) + ": " + where(fn) + ": " + name + " = " + std::to_string(value) +
                             " is outside " + std::to_string(lo) + ".." + std::to_string(hi) + " (" + why + ")");
    };
    switch (a) {
    case FunctionAttribute::max_dynamic_shared_size_bytes: {
        const int64_t optin = fn.backend->max_shared_memory_per_block_optin();
        const int64_t limit = optin - static_cast<int64_t>(fn.static_shared_bytes);
        range(0, limit,
              "the device allows at most " + std::to_string(optin) + " bytes of shared memory per block with the "
              "opt-in, and the kernel has " + std::to_string(fn.static_shared_bytes) + " bytes of static shared memory");
        break;
    }
    case FunctionAttribute::preferred_shared_memory_carveout:
        range(-1, 100, "a percentage, or -1 for no preference");
        break;
    case FunctionAttribute::non_portable_cluster_size_allowed:
        range(0, 1, "0 or 1");
        break;
    case FunctionAttribute::cluster_scheduling_policy_preference:
        range(0, 2, "a ClusterSchedulingPolicy");
        break;
    default:
        range(0, 1024, "blocks per cluster dimension, 0 for none");
        break;
    }
    fn.backend->set_function_attribute(*fn.loaded, static_cast<int>(a), value);
    if (a == FunctionAttribute::max_dynamic_shared_size_bytes) fn.max_dynamic_shared_bytes = value;
    std::lock_guard<std::mutex> lock(fn.attributes_mutex);
    fn.attributes_set[static_cast<int>(a)] = value;
}

void set_cache(FunctionImpl &fn, CacheConfig c, const char *call) {
    int v = static_cast<int>(c);
    if (v < 0 || v > 3)
        throw LogicError(std::string(call) + ": " + where(fn) + ": CacheConfig(" + std::to_string(v) +
                         ") is none of prefer_none, prefer_shared, prefer_l1, prefer_equal");
    fn.backend->set_cache_config(*fn.loaded, v);
}

std::string dims_text(int64_t x, int64_t y, int64_t z) {
    return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

} // namespace

int function_get_attribute(FunctionImpl *f, FunctionAttribute a) {
    FunctionImpl &fn = require_fn(f, "get_attribute");
    check_known(a, "get_attribute");
    const int value = fn.backend->function_attribute(*fn.loaded, static_cast<int>(a), facts_of(fn));
    // A kernel's max_threads launch bound is its limit on every device (the CUDA driver says so
    // itself from .maxntid; the CPU device's answer is the device's).
    if (a == FunctionAttribute::max_threads_per_block && fn.kernel &&
        fn.kernel->ir.bounds.max_threads)
        return std::min(value, int(fn.kernel->ir.bounds.max_threads));
    return value;
}

void function_set_attribute(FunctionImpl *f, FunctionAttribute a, int value) {
    set_attribute(require_fn(f, "set_attribute"), a, value, "set_attribute");
}

void function_set_cache_config(FunctionImpl *f, CacheConfig c) {
    set_cache(require_fn(f, "set_cache_config"), c, "set_cache_config");
}

int function_max_active_blocks(FunctionImpl *f, int block_size, size_t dynamic_shared_bytes) {
    FunctionImpl &fn = require_fn(f, "max_active_blocks_per_multiprocessor");
    const int64_t max_threads = fn.backend->limits().max_threads_per_block;
    if (block_size < 1 || block_size > max_threads)
        throw LogicError("max_active_blocks_per_multiprocessor: " + where(fn) + ": block size " +
                         std::to_string(block_size) + " is outside 1.." + std::to_string(max_threads));
    Backend::KernelFacts facts = facts_of(fn);
    // A block that cannot get its shared memory cannot run: 0, as the driver says.
    const int64_t dyn_limit = facts.max_dynamic_shared_bytes >= 0
                                  ? facts.max_dynamic_shared_bytes
                                  : fn.backend->limits().max_shared_memory_per_block - int64_t(fn.static_shared_bytes);
    if (int64_t(dynamic_shared_bytes) > dyn_limit) return 0;
    return fn.backend->max_active_blocks_per_multiprocessor(*fn.loaded, block_size, dynamic_shared_bytes, facts);
}

BlockSizeSuggestion function_suggested_block_size(FunctionImpl *f, size_t dynamic_shared_bytes, int block_size_limit) {
    FunctionImpl &fn = require_fn(f, "suggested_block_size");
    const int64_t max_threads = fn.backend->limits().max_threads_per_block;
    if (block_size_limit < 0 || block_size_limit > max_threads)
        throw LogicError("suggested_block_size: " + where(fn) + ": block_size_limit " +
                         std::to_string(block_size_limit) + " is outside 0.." + std::to_string(max_threads) +
                         " (0: the kernel's maximum)");
    int limit = block_size_limit ? block_size_limit
                                 : fn.backend->function_attribute(*fn.loaded, 0, facts_of(fn)); // max_threads_per_block
    auto [min_grid, block] = fn.backend->suggested_block_size(*fn.loaded, dynamic_shared_bytes, limit, facts_of(fn));
    return {min_grid, block};
}

void finish_function(FunctionImpl &fn, const CompileFunctionOptions &opts) {
    for (const FuncAttribute &a : opts.func_attribute) {
        if (a.kind == FuncAttribute::Kind::cache_config)
            set_cache(fn, a.cache, "compile_function (func_attribute)");
        else
            set_attribute(fn, a.attribute, a.value, "compile_function (func_attribute)");
    }
}

void launch_with_attributes(ContextImpl &ctx, BackendStream &s, FunctionImpl &fn, const LaunchRequest &req,
                            const LaunchDims &dims, void **args, size_t n) {
    const std::string &k = fn.kernel->ir.name;
    const std::string dev = ctx.backend->name() + " (" + ctx.label + ")";
    BackendStream::LaunchExtras x;
    bool has_cluster = false, has_policy = false;
    for (const LaunchAttribute &a : req.attributes) {
        switch (a.kind) {
        case LaunchAttribute::Kind::cluster_dimension:
            if (has_cluster)
                throw LogicError("kernel '" + k + "': cluster_dim is given twice; give one");
            if (a.x < 1 || a.y < 1 || a.z < 1)
                throw LogicError("kernel '" + k + "': cluster_dim " + dims_text(a.x, a.y, a.z) +
                                 " has a dimension below 1");
            has_cluster = true;
            x.cluster = {a.x, a.y, a.z};
            break;
        case LaunchAttribute::Kind::cluster_scheduling_policy:
            if (a.x < 0 || a.x > 2)
                throw LogicError("kernel '" + k + "': cluster scheduling policy " + std::to_string(a.x) +
                                 " is no ClusterSchedulingPolicy (0 to 2)");
            x.cluster_scheduling_policy = static_cast<int>(a.x);
            has_policy = true;
            break;
        case LaunchAttribute::Kind::cooperative:
            x.cooperative = a.x != 0;
            break;
        case LaunchAttribute::Kind::programmatic_stream_serialization:
            x.programmatic_stream_serialization = a.x != 0;
            break;
        case LaunchAttribute::Kind::priority: {
            auto [least, greatest] = ctx.backend->stream_priority_range();
            if (a.x > least || a.x < greatest)
                throw LogicError("kernel '" + k + "': launch priority " + std::to_string(a.x) + " is outside " + dev +
                                 "'s range, from " + std::to_string(least) + " (least urgent) to " +
                                 std::to_string(greatest) + " (most urgent)");
            x.has_priority = true;
            x.priority = static_cast<int>(a.x);
            break;
        }
        default:
            throw LogicError("kernel '" + k + "': LaunchAttribute kind " + std::to_string(static_cast<int>(a.kind)) +
                             " is not one ember knows");
        }
    }
    if (has_policy && !has_cluster)
        throw LogicError("kernel '" + k + "': a cluster scheduling policy needs cluster_dim(...) too");
    if (has_cluster) {
        if (!ctx.backend->supports_cluster_launch())
            throw LogicError("kernel '" + k + "': cluster_dim needs thread-block clusters (sm_90 or newer, CUDA 11.8 "
                             "or newer), but " + dev + " is " + ctx.backend->target().to_string() +
                             " and does not support cluster launches");
        static const char *axis[3] = {"x", "y", "z"};
        int64_t size = 1;
        for (int i = 0; i < 3; ++i) {
            if (dims.grid[i] % x.cluster[i] != 0)
                throw LogicError("kernel '" + k + "': grid_dim " + dims_text(dims.grid[0], dims.grid[1], dims.grid[2]) +
                                 " is not a multiple of cluster_dim " +
                                 dims_text(x.cluster[0], x.cluster[1], x.cluster[2]) + " in " + axis[i] +
                                 "; every grid dimension must be a whole number of clusters");
            size *= x.cluster[i];
        }
        bool non_portable = false;
        {
            std::lock_guard<std::mutex> lock(fn.attributes_mutex);
            auto it = fn.attributes_set.find(static_cast<int>(FunctionAttribute::non_portable_cluster_size_allowed));
            non_portable = it != fn.attributes_set.end() && it->second != 0;
        }
        if (size > 8 && !non_portable)
            throw LogicError("kernel '" + k + "': cluster_dim " + dims_text(x.cluster[0], x.cluster[1], x.cluster[2]) +
                             " has " + std::to_string(size) +
                             " blocks but a portable cluster has at most 8; allow more (up to 16 on H100) with "
                             "set_attribute(FunctionAttribute::non_portable_cluster_size_allowed, 1)");
    }
    // The CPU device has no grid-wide barrier for blocks to wait at, so any grid is
    // "co-resident" there: only GPUs get the size check.
    if (x.cooperative && ctx.backend->api() != "cpu") {
        if (!ctx.backend->supports_cooperative_launch())
            throw LogicError("kernel '" + k + "': " + dev + " does not support cooperative launches");
        const int64_t threads = dims.block[0] * dims.block[1] * dims.block[2];
        const int64_t per_sm = function_max_active_blocks(&fn, static_cast<int>(threads), dims.shared_mem_bytes);
        const int64_t sms = ctx.backend->multiprocessor_count();
        const int64_t blocks = dims.grid[0] * dims.grid[1] * dims.grid[2];
        if (blocks > per_sm * sms)
            throw LogicError("kernel '" + k + "': a cooperative launch of " + std::to_string(blocks) +
                             " blocks, but only " + std::to_string(per_sm) + " blocks of " + std::to_string(threads) +
                             " threads fit on each of the " + std::to_string(sms) + " multiprocessors of " + dev +
                             " at once (" + std::to_string(per_sm * sms) + " in all)");
    }
    s.launch_extended(*fn.loaded, k, dims, x, args, n);
}

} // namespace detail
} // namespace ember
