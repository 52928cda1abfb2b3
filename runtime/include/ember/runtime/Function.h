/// \file
/// What a loaded kernel can be asked and told, and how a launch can be shaped beyond grid and
/// block: function attributes (PyCUDA's `function_attribute`, CUDA's CUfunction_attribute), cache
/// preference, compile-time attributes (Mojo's `func_attribute` of compile_function), launch
/// attributes (CUlaunchAttribute: thread-block clusters, priority, cooperative launches), the
/// occupancy helpers' result, and the images of external modules (PTX, cubin). Light: no
/// DeviceContext, no LLVM. See docs/runtime.md, "Functions" and "External modules".
#ifndef EMBER_RUNTIME_FUNCTION_H
#define EMBER_RUNTIME_FUNCTION_H

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace ember {

/// A property of a loaded kernel, by the values of CUfunction_attribute (PyCUDA's
/// `function_attribute`). Read with `DeviceFunction::get_attribute`; the ones marked *settable*
/// can be written with `set_attribute` or `FuncAttribute` at compile time.
enum class FunctionAttribute : int {
    /// Most threads a block of this kernel may have (depends on its registers).
    max_threads_per_block = 0,
    /// Bytes of static shared memory (`shared_array`) per block, without the dynamic part.
    shared_size_bytes = 1,
    /// Bytes of user constant memory the kernel uses.
    const_size_bytes = 2,
    /// Bytes of local memory per thread (local arrays, register spills).
    local_size_bytes = 3,
    /// Registers per thread.
    num_regs = 4,
    /// PTX ISA version the kernel was compiled from, major * 10 + minor (80 for PTX 8.0).
    ptx_version = 5,
    /// Binary (SASS) architecture, major * 10 + minor (90 for sm_90).
    binary_version = 6,
    /// 1 when compiled with caching of global loads in L1 (`-Xptxas -dlcm=ca`).
    cache_mode_ca = 7,
    /// *Settable*: most bytes of dynamic shared memory a launch may ask for. 48 KiB minus the
    /// static shared memory by default; up to the device's opt-in maximum (227 KiB on H100).
    max_dynamic_shared_size_bytes = 8,
    /// *Settable*: preferred share of the L1/shared memory carveout for shared memory, in
    /// percent (0-100), or -1 for no preference (a hint).
    preferred_shared_memory_carveout = 9,
    /// 1 when the kernel must be launched with a cluster dimension (sm_90).
    cluster_size_must_be_set = 10,
    /// *Settable* (before the first launch): the cluster dimensions the kernel requires, 0 when
    /// none (sm_90).
    required_cluster_width = 11,
    required_cluster_height = 12,
    required_cluster_depth = 13,
    /// *Settable*: 1 allows clusters of more than 8 blocks where the device supports them
    /// (16 on H100).
    non_portable_cluster_size_allowed = 14,
    /// *Settable*: a ClusterSchedulingPolicy value.
    cluster_scheduling_policy_preference = 15,
};

/// The attribute's name as in this enum ("num_regs"); "FunctionAttribute(<n>)" for others.
std::string to_string(FunctionAttribute a);

/// What a kernel prefers the on-chip memory split into, as CUfunc_cache (PyCUDA's func_cache).
enum class CacheConfig : int {
    prefer_none = 0,
    prefer_shared = 1,
    prefer_l1 = 2,
    prefer_equal = 3,
};

/// How the blocks of a cluster are placed on the GPU (CUclusterSchedulingPolicy).
enum class ClusterSchedulingPolicy : int {
    default_policy = 0,
    spread = 1,
    load_balancing = 2,
};

/// An attribute applied when a kernel is loaded, as Mojo's `func_attribute` of
/// compile_function: `CompileFunctionOptions{.func_attribute = {FuncAttribute::
/// max_dynamic_shared_size_bytes(64 * 1024)}}`.
struct FuncAttribute {
    enum class Kind { attribute, cache_config };
    Kind kind = Kind::attribute;
    /// For Kind::attribute: which, and its value.
    FunctionAttribute attribute = FunctionAttribute::max_dynamic_shared_size_bytes;
    int value = 0;
    /// For Kind::cache_config.
    CacheConfig cache = CacheConfig::prefer_none;

    /// Lets launches ask for up to `bytes` of dynamic shared memory (the opt-in above 48 KiB).
    static constexpr FuncAttribute max_dynamic_shared_size_bytes(int bytes) {
        return {Kind::attribute, FunctionAttribute::max_dynamic_shared_size_bytes, bytes, {}};
    }
    /// Preferred shared-memory carveout in percent (0-100), -1 for none.
    static constexpr FuncAttribute preferred_shared_carveout(int percent) {
        return {Kind::attribute, FunctionAttribute::preferred_shared_memory_carveout, percent, {}};
    }
    /// Cache preference (cuFuncSetCacheConfig).
    static constexpr FuncAttribute cache_preference(CacheConfig c) { return {Kind::cache_config, {}, 0, c}; }
    /// Allows clusters of more than 8 blocks.
    static constexpr FuncAttribute non_portable_cluster_size_allowed(bool allowed = true) {
        return {Kind::attribute, FunctionAttribute::non_portable_cluster_size_allowed, allowed ? 1 : 0, {}};
    }
    /// Any settable attribute.
    static constexpr FuncAttribute set(FunctionAttribute a, int v) { return {Kind::attribute, a, v, {}}; }
};

// `cluster_dim(...)` at a launch (LaunchCluster) is in ember/dsl/Value.h, with the kernel's
// `cluster_dim.x`.

/// One launch attribute (CUlaunchAttribute), given after the kernel's arguments like
/// `grid_dim(...)`: `ctx.enqueue_function(f, args..., grid_dim(8), block_dim(128),
/// LaunchAttribute::priority(-2))`.
struct LaunchAttribute {
    /// By the values of CUlaunchAttributeID.
    enum class Kind : int {
        cooperative = 2,
        cluster_dimension = 4,
        cluster_scheduling_policy = 5,
        programmatic_stream_serialization = 6,
        priority = 8,
    };
    Kind kind = Kind::priority;
    int64_t x = 0, y = 1, z = 1;

    /// All blocks are resident at once (cuLaunchCooperativeKernel): the grid may not exceed
    /// max_active_blocks_per_multiprocessor * multiprocessors (LogicError otherwise).
    static constexpr LaunchAttribute cooperative(bool on = true) { return {Kind::cooperative, on ? 1 : 0}; }
    /// The same as `cluster_dim(x, y, z)`.
    static constexpr LaunchAttribute cluster_dimension(int64_t x, int64_t y = 1, int64_t z = 1) {
        return {Kind::cluster_dimension, x, y, z};
    }
    static constexpr LaunchAttribute cluster_scheduling_policy(ClusterSchedulingPolicy p) {
        return {Kind::cluster_scheduling_policy, static_cast<int64_t>(p)};
    }
    /// The kernel may start before the previous kernel on the stream ends, when that kernel
    /// allows it (programmatic dependent launch, sm_90).
    static constexpr LaunchAttribute programmatic_stream_serialization(bool on = true) {
        return {Kind::programmatic_stream_serialization, on ? 1 : 0};
    }
    /// The launch's priority, in the context's stream_priority_range() (lower is more urgent).
    static constexpr LaunchAttribute priority(int p) { return {Kind::priority, p}; }
};

/// What `DeviceFunction::suggested_block_size` returns (cuOccupancyMaxPotentialBlockSize).
struct BlockSizeSuggestion {
    /// The smallest grid that reaches full occupancy with `block_size`.
    int min_grid_size = 0;
    /// The block size with the most resident threads.
    int block_size = 0;
};

namespace detail {
struct FunctionImpl;
int function_get_attribute(FunctionImpl *fn, FunctionAttribute a);
void function_set_attribute(FunctionImpl *fn, FunctionAttribute a, int value);
void function_set_cache_config(FunctionImpl *fn, CacheConfig c);
int function_max_active_blocks(FunctionImpl *fn, int block_size, size_t dynamic_shared_bytes);
BlockSizeSuggestion function_suggested_block_size(FunctionImpl *fn, size_t dynamic_shared_bytes,
                                                  int block_size_limit);
} // namespace detail

/// The attribute and occupancy queries of a loaded kernel, shared by every `DeviceFunction<P...>`
/// (PyCUDA's Function attributes, cuFuncGetAttribute/cuFuncSetAttribute, cuOccupancy*). On the
/// CPU device the answers describe how the CPU device runs the kernel (docs/runtime.md).
template <class Derived> class FunctionQueries {
public:
    /// The value of `a` for this kernel on its device.
    int get_attribute(FunctionAttribute a) const { return detail::function_get_attribute(fn("get_attribute"), a); }
    /// Sets a settable attribute (see FunctionAttribute); LogicError for the others or for a
    /// value outside the device's limits, naming both.
    void set_attribute(FunctionAttribute a, int value) const { detail::function_set_attribute(fn("set_attribute"), a, value); }
    /// The kernel's cache preference (cuFuncSetCacheConfig); a hint.
    void set_cache_config(CacheConfig c) const { detail::function_set_cache_config(fn("set_cache_config"), c); }

    int num_regs() const { return get_attribute(FunctionAttribute::num_regs); }
    int shared_size_bytes() const { return get_attribute(FunctionAttribute::shared_size_bytes); }
    int local_size_bytes() const { return get_attribute(FunctionAttribute::local_size_bytes); }
    int const_size_bytes() const { return get_attribute(FunctionAttribute::const_size_bytes); }
    int max_threads_per_block() const { return get_attribute(FunctionAttribute::max_threads_per_block); }
    int ptx_version() const { return get_attribute(FunctionAttribute::ptx_version); }
    int binary_version() const { return get_attribute(FunctionAttribute::binary_version); }

    /// Blocks of `block_size` threads (using `dynamic_shared_bytes` each) that can be resident on
    /// one multiprocessor at once (cuOccupancyMaxActiveBlocksPerMultiprocessor); 0 when such a
    /// block cannot run at all.
    int max_active_blocks_per_multiprocessor(int block_size, size_t dynamic_shared_bytes = 0) const {
        return detail::function_max_active_blocks(fn("max_active_blocks_per_multiprocessor"), block_size, dynamic_shared_bytes);
    }
    /// The block size with the best occupancy and the grid that fills the device with it
    /// (cuOccupancyMaxPotentialBlockSize). `block_size_limit` 0 means the kernel's maximum.
    BlockSizeSuggestion suggested_block_size(size_t dynamic_shared_bytes = 0, int block_size_limit = 0) const {
        return detail::function_suggested_block_size(fn("suggested_block_size"), dynamic_shared_bytes, block_size_limit);
    }

private:
    /// LogicError naming `method` when the function is empty (default-constructed or moved-from).
    detail::FunctionImpl *fn(const char *method) const { return &static_cast<const Derived *>(this)->checked(method); }
};

/// The code of an external module, for `DeviceContext::load_module` (PyCUDA's module_from_buffer
/// and module_from_file): PTX text or a cubin/fatbin, given as bytes or read from a file.
class ModuleImage {
public:
    enum class Format { ptx, cubin, fatbin, ember_ir };

    /// PTX source text (`.version`, `.target`, `.entry` ...), JIT-compiled by the driver.
    static ModuleImage ptx(std::string text, std::string name = "<ptx>");
    /// A compiled cubin (ELF) for the device's architecture.
    static ModuleImage cubin(std::span<const std::byte> bytes, std::string name = "<cubin>");
    static ModuleImage cubin(std::string bytes, std::string name = "<cubin>");
    /// A fat binary (several cubins and/or PTX).
    static ModuleImage fatbin(std::span<const std::byte> bytes, std::string name = "<fatbin>");
    /// ember's textual kernel IR (the form `EMBER_DUMP=ir` and `dump_ir` print; see
    /// IRPrinter.h): compiled by ember for the context's device, so it loads on every device,
    /// the CPU device included. It has kernels and device functions, no globals.
    static ModuleImage ember_ir(std::string text, std::string name = "<ember-ir>");
    /// Reads `path`; the format comes from its extension (.ptx, .cubin, .fatbin, .ir) or, failing
    /// that, its content (an ELF header is a cubin). Throws RuntimeError when it cannot be read,
    /// LogicError for an unknown extension and content.
    static ModuleImage file(const std::filesystem::path &path);

    Format format() const { return format_; }
    /// The bytes (PTX text for Format::ptx).
    const std::string &bytes() const { return bytes_; }
    /// Where it came from, for messages: the file's path or the name given.
    const std::string &name() const { return name_; }

private:
    ModuleImage(Format f, std::string bytes, std::string name)
        : format_(f), bytes_(std::move(bytes)), name_(std::move(name)) {}
    Format format_;
    std::string bytes_;
    std::string name_;
};

} // namespace ember

#endif // EMBER_RUNTIME_FUNCTION_H
