/// \file
/// DeviceContext, buffers, compile and launch: the API layer over the back ends.
#include "ember/runtime/DeviceContext.h"
#include "ember/compiler/Settings.h"

#include "Backend.h"
#include "BackendGraph.h"
#include "CompileCache.h"
#include "CompileReportInternal.h"
#include "ContextImpl.h"
#include "Functions.h"
#include "ImageCache.h"
#include "Timeline.h"

#include "ember/compiler/Bundle.h"
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/Log.h"
#include "ember/dsl/DSL.h"

#include "hip/HipRuntime.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace ember {

namespace detail {

#ifndef EMBER_WITH_CUDA_RUNTIME
std::shared_ptr<Backend> make_cuda_backend(int) {
    throw RuntimeError("api 'cuda': this build of ember has no CUDA back end "
                       "(configured with EMBER_ENABLE_CUDA_RUNTIME=OFF)");
}
std::shared_ptr<Backend> start_cuda_backend(int device_id, const std::function<void()> &) {
    return make_cuda_backend(device_id);
}
int cuda_device_count(std::string *why) noexcept {
    if (why) *why = "this build of ember has no CUDA back end";
    return 0;
}
std::shared_ptr<Backend> make_hip_backend(int device_id) {
    check_hip_device(device_id);
    throw RuntimeError("api 'hip': this build of ember has no HIP back end (it shares the CUDA back end's "
                       "code, configured off with EMBER_ENABLE_CUDA_RUNTIME=OFF)");
}
#endif

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The api "default" stands for: $EMBER_API, else the first NVIDIA GPU, else the first AMD GPU,
/// else the CPU device. `why`, when given, receives the reason (EMBER_LOG=device).
std::string resolve_api(std::string_view api, std::string *why = nullptr) {
    if (api != "default") {
        if (why) *why = "the program's api argument '" + std::string(api) + "'";
        return std::string(api);
    }
    if (const std::optional<std::string> env = settings::text("EMBER_API")) {
        const std::string &e = *env;
        if (e != "cuda" && e != "hip" && e != "cpu")
            throw LogicError("EMBER_API='" + e + "' names no api: use cuda, hip or cpu");
        if (why) *why = "EMBER_API=" + e;
        return e;
    }
    // The first NVIDIA GPU, then the first AMD GPU, then the CPU device.
    std::string no_cuda, no_hip;
    if (const int n = cuda_device_count(why ? &no_cuda : nullptr); n > 0) {
        if (why) *why = "the first NVIDIA GPU (" + std::to_string(n) + " found; EMBER_API is unset)";
        return "cuda";
    }
    if (!why) return hip_device_count() > 0 ? "hip" : "cpu";
    // The log's path asks HIP for its reason too (hip_device_count() keeps only the count).
    const int n = HipRuntime::get().device_count(&no_hip);
    if (n > 0) {
        *why = "the first AMD GPU (" + std::to_string(n) + " found; no NVIDIA GPU: " + no_cuda +
               "; EMBER_API is unset)";
        return "hip";
    }
    if (no_hip.empty()) no_hip = "HIP reports no device";
    *why = "no GPU (NVIDIA: " + no_cuda + "; AMD: " + no_hip + "; EMBER_API is unset)";
    return "cpu";
}

std::string dims_text(const Dim &d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

void check_launch(const ContextImpl &ctx, const FunctionImpl &fn, const LaunchRequest &r) {
    const DeviceLimits &lim = ctx.backend->limits();
    const std::string &k = fn.kernel->ir.name;
    // Every launch passes here: the device's name is put into a message only when one is thrown.
    auto dev = [&] { return ctx.backend->name() + " (" + ctx.label + ")"; };
    const int64_t g[3] = {r.grid.x, r.grid.y, r.grid.z};
    const int64_t b[3] = {r.block.x, r.block.y, r.block.z};
    static const char *axis[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i) {
        if (g[i] < 1)
            throw LogicError("kernel '" + k + "': grid_dim " + dims_text(r.grid) + " has " + axis[i] +
                             " = " + std::to_string(g[i]) + "; every dimension must be at least 1");
        if (b[i] < 1)
            throw LogicError("kernel '" + k + "': block_dim " + dims_text(r.block) + " has " + axis[i] +
                             " = " + std::to_string(b[i]) + "; every dimension must be at least 1");
        if (g[i] > lim.max_grid_dim[i])
            throw LogicError("kernel '" + k + "': grid_dim " + dims_text(r.grid) + " has " + axis[i] +
                             " = " + std::to_string(g[i]) + " but " + dev() + " allows at most " +
                             std::to_string(lim.max_grid_dim[i]));
        if (b[i] > lim.max_block_dim[i])
            throw LogicError("kernel '" + k + "': block_dim " + dims_text(r.block) + " has " + axis[i] +
                             " = " + std::to_string(b[i]) + " but " + dev() + " allows at most " +
                             std::to_string(lim.max_block_dim[i]));
    }
    // Each factor is within the limits above, so the products cannot overflow.
    int64_t threads = b[0] * b[1] * b[2];
    if (threads > lim.max_threads_per_block)
        throw LogicError("kernel '" + k + "': block_dim " + dims_text(r.block) + " has " +
                         std::to_string(threads) + " threads but " + dev() + " allows at most " +
                         std::to_string(lim.max_threads_per_block) + " threads per block");
    if (const uint32_t bound = fn.kernel->ir.bounds.max_threads;
        bound != 0 && threads > int64_t(bound))
        throw LogicError("kernel '" + k + "': block_dim " + dims_text(r.block) + " has " +
                         std::to_string(threads) +
                         " threads but the kernel was compiled for at most " +
                         std::to_string(bound) + " (its LaunchBounds max_threads)");
    if (r.shared_mem_bytes < 0)
        throw LogicError("kernel '" + k + "': shared_mem_bytes(" + std::to_string(r.shared_mem_bytes) +
                         ") is negative");
    // No device has 4 GiB of shared memory per block: anything above is rejected before the sum
    // below could overflow (the limits checked next are far lower).
    if (r.shared_mem_bytes > int64_t(UINT32_MAX))
        throw LogicError("kernel '" + k + "': shared_mem_bytes(" + std::to_string(r.shared_mem_bytes) +
                         ") is more than " + std::to_string(UINT32_MAX) + " bytes, what a launch can ask for (" +
                         dev() + " allows at most " + std::to_string(lim.max_shared_memory_per_block) +
                         " per block without an opt-in)");
    const int64_t shared = static_cast<int64_t>(fn.static_shared_bytes) + r.shared_mem_bytes;
    // With the opt-in (FunctionAttribute::max_dynamic_shared_size_bytes) the kernel's own limit
    // applies (checked against the device's opt-in maximum when it was set).
    const int64_t opt_in = fn.max_dynamic_shared_bytes.load();
    if (opt_in >= 0 && r.shared_mem_bytes > opt_in)
        throw LogicError("kernel '" + k + "': " + std::to_string(r.shared_mem_bytes) +
                         " bytes of dynamic shared memory but the kernel's max_dynamic_shared_size_bytes is " +
                         std::to_string(opt_in) + " on " + dev());
    if (opt_in < 0 && shared > lim.max_shared_memory_per_block)
        throw LogicError("kernel '" + k + "': " + std::to_string(fn.static_shared_bytes) +
                         " bytes of static and " + std::to_string(r.shared_mem_bytes) +
                         " bytes of dynamic shared memory make " + std::to_string(shared) + " but " + dev() +
                         " allows at most " + std::to_string(lim.max_shared_memory_per_block) +
                         " per block without an opt-in; opt in to more with "
                         "FuncAttribute::max_dynamic_shared_size_bytes(n) at compile_function or "
                         "f.set_attribute(FunctionAttribute::max_dynamic_shared_size_bytes, n)");
}

} // namespace

std::string argument_label(const FunctionImpl &fn, size_t index, const char *field) {
    std::string s = "argument " + std::to_string(index);
    const auto &names = fn.kernel->param_names;
    if (index < names.size() && !names[index].empty()) s += " ('" + names[index] + "')";
    if (field && *field) s += std::string(", field '") + field + "'";
    return s;
}

// ---------------------------------------------------------------------------------------------
// Buffers.

RawDeviceBuffer::RawDeviceBuffer(std::shared_ptr<ContextImpl> ctx, size_t bytes)
    : ctx_(std::move(ctx)), bytes_(bytes) {
    if (bytes_ > 0) address_ = ctx_->backend->allocate(bytes_);
}

RawDeviceBuffer::RawDeviceBuffer(std::shared_ptr<ContextImpl> ctx, uint64_t address, size_t bytes)
    : ctx_(std::move(ctx)), address_(address), bytes_(bytes) {}

RawDeviceBuffer::~RawDeviceBuffer() {
    if (address_ && !owner_) ctx_->backend->deallocate(address_);
}

RawHostBuffer::RawHostBuffer(std::shared_ptr<ContextImpl> ctx, size_t bytes)
    : ctx_(std::move(ctx)), bytes_(bytes) {
    if (bytes_ > 0) data_ = ctx_->backend->allocate_host(bytes_);
}

RawHostBuffer::~RawHostBuffer() {
    if (data_) ctx_->backend->deallocate_host(data_);
}

void enqueue_copy_bytes(ContextImpl &ctx, MemSide dst_side, uint64_t dst, const ContextImpl *dst_ctx,
                        MemSide src_side, uint64_t src, const ContextImpl *src_ctx, size_t bytes,
                        StreamImpl *stream, const CopyOwners &owners) {
    if (bytes == 0) return;
    if ((dst_side == MemSide::Device && dst_ctx != &ctx) || (src_side == MemSide::Device && src_ctx != &ctx)) {
        // Its timeline spans are made there, on the stream that runs it.
        copy_across_contexts(ctx, stream, dst_side, dst, dst_ctx, src_side, src, src_ctx, bytes);
        return;
    }
    BackendStream &b = stream ? *stream->stream : *ctx.backend->default_stream();
    if (BackendGraph *g = b.capture_graph()) [[unlikely]]
        keep_copy_operands(*g, dst_side, dst_ctx, src_side, src_ctx, owners);
    auto copy = [&] {
        if (dst_side == MemSide::Device && src_side == MemSide::Host)
            b.copy_to_device(dst, reinterpret_cast<const void *>(src), bytes);
        else if (dst_side == MemSide::Host && src_side == MemSide::Device)
            b.copy_from_device(reinterpret_cast<void *>(dst), src, bytes);
        else if (dst_side == MemSide::Device && src_side == MemSide::Device)
            b.copy_device_to_device(dst, src, bytes);
        else
            EMBER_UNREACHABLE("host-to-host copy through a context");
    };
    if (timeline::on()) [[unlikely]] {
        const char *name = src_side == MemSide::Host   ? "copy HtoD"
                           : dst_side == MemSide::Host ? "copy DtoH"
                                                       : "copy DtoD";
        timeline::stream_op(ctx, timeline::stream_of(ctx, stream), "copy", name, name,
                            timeline::Args().number("bytes", int64_t(bytes)), copy);
    } else {
        copy();
    }
}

void throw_copy_size_mismatch(size_t dst_elems, size_t src_elems, size_t elem_bytes) {
    throw LogicError("enqueue_copy: the source has " + std::to_string(src_elems) + " elements (" +
                     std::to_string(src_elems * elem_bytes) + " bytes) but the destination has " +
                     std::to_string(dst_elems) + " elements (" + std::to_string(dst_elems * elem_bytes) +
                     " bytes); both must have the same size");
}

void throw_null_buffer(const char *what) {
    throw LogicError(std::string("enqueue_copy: the ") + what +
                     " is empty (a default-constructed or null buffer)");
}

// ---------------------------------------------------------------------------------------------
// Compile and launch.

namespace {
std::shared_ptr<FunctionImpl> compile_untimed(const std::shared_ptr<ContextImpl> &ctx,
                                              const std::shared_ptr<const KernelInfo> &kernel,
                                              const CompileFunctionOptions &opts) {
    auto fn = std::make_shared<FunctionImpl>();
    fn->backend = ctx->backend;
    fn->context = ctx.get();
    fn->context_ref = ctx;
    fn->context_label = ctx->label;
    fn->kernel = kernel;
    CompileOptions co;
    co.keep_ir = opts.dump_ir.enabled();
    co.keep_llvm_opt = opts.dump_llvm.enabled();
    co.keep_asm = opts.dump_asm.enabled();
    // Repro bundles name the driver and device ([Note] Repro bundles).
    const int driver = ctx->backend->driver_version();
    detail::BundleScope bundle_scope(driver ? std::to_string(driver) : "", ctx->backend->name());
    const TargetSpec &target = ctx->backend->target();
    const char *level = "compiled";
    std::optional<CacheKey> key;
    if (cacheable(co)) key = make_cache_key(*kernel, target, co);
    ImageCache *images = key ? ctx->backend->images() : nullptr;
    if (images) {
        // A device image of this kernel (a cubin) goes straight to the device: no artefact is
        // read and nothing is compiled ([Note] Image cache).
        auto t0 = std::chrono::steady_clock::now();
        CompiledKernel meta = compiled_from_binary(kernel->ir, target, {}, !kernel->verified);
        if (std::unique_ptr<LoadedFunction> loaded = images->load(*key, meta, &level)) {
            fn->compiled = std::move(meta);
            fn->static_shared_bytes = fn->compiled.static_shared_bytes;
            fn->loaded = std::move(loaded);
            fn->load_seconds = seconds_since(t0);
            if (timeline::on()) [[unlikely]]
                timeline::host_span(
                    "compile", "load", timeline::at(t0), timeline::now(),
                    timeline::Args().text("kernel", kernel->ir.name).text("from", level));
            fn->report.cache_level = level;
            finish_function(*fn, opts);
            record_report(*fn);
            return fn;
        }
    }
    fn->compiled = *CompileCache::instance().get(*kernel, target, co, &level);
    fn->static_shared_bytes = fn->compiled.static_shared_bytes;
    if (std::string_view(level) != "compiled") {
        // Nothing was compiled now: the report's stages (and compile_seconds) are this process's.
        fn->compiled.lower_seconds = fn->compiled.optimize_seconds = fn->compiled.codegen_seconds = 0;
        fn->report.cache_level = level;
    }
    fn->compile_seconds = fn->compiled.lower_seconds + fn->compiled.optimize_seconds +
                          fn->compiled.codegen_seconds;
    opts.dump_ir.write(fn->compiled.ir);
    opts.dump_llvm.write(fn->compiled.llvm_opt);
    opts.dump_asm.write(fn->compiled.assembly);
    auto t0 = std::chrono::steady_clock::now();
    // The image path first: the artefact linked into a device image, kept, loaded; where that
    // fails, the back end loads the artefact itself and reports any error with the JIT's log.
    if (images) fn->loaded = images->link_and_load(fn->compiled, *key);
    try {
        if (!fn->loaded) fn->loaded = ctx->backend->load(fn->compiled);
    } catch (const CompileError &e) { // the driver's JIT refused the PTX
        throw detail::bundle_load_failure(e, kernel->ir, fn->compiled, co);
    }
    fn->load_seconds = seconds_since(t0);
    if (timeline::on()) [[unlikely]]
        timeline::host_span("compile", "load", timeline::at(t0), timeline::now(),
                            timeline::Args().text("kernel", kernel->ir.name));
    finish_function(*fn, opts);
    record_report(*fn);
    return fn;
}
} // namespace

std::shared_ptr<FunctionImpl> compile(const std::shared_ptr<ContextImpl> &ctx,
                                      const std::shared_ptr<const KernelInfo> &kernel,
                                      const CompileFunctionOptions &opts) {
    if (timeline::on()) [[unlikely]] {
        const int64_t begin = timeline::now();
        std::shared_ptr<FunctionImpl> fn = compile_untimed(ctx, kernel, opts);
        timeline::compiled(*ctx, *fn, begin);
        return fn;
    }
    return compile_untimed(ctx, kernel, opts);
}

std::shared_ptr<FunctionImpl> compile_cached(const std::shared_ptr<ContextImpl> &ctx,
                                             const std::shared_ptr<const KernelInfo> &kernel) {
    std::lock_guard<std::mutex> lock(ctx->cache_mutex);
    auto it = ctx->cache.find(kernel->id);
    if (it != ctx->cache.end()) return it->second;
    std::shared_ptr<FunctionImpl> fn = compile(ctx, kernel, {});
    ctx->cache.emplace(kernel->id, fn);
    return fn;
}

namespace {
/// The launch slots of one KernelInfo (KernelInfo::launch_slot_storage): one per context, never
/// freed before the KernelInfo ([Note] Launch slot).
struct LaunchSlots {
    std::mutex mutex;
    std::vector<std::unique_ptr<LaunchSlot>> slots;
};
std::mutex launch_slot_storage_mutex;
} // namespace

FunctionImpl *compile_cached_slow(const std::shared_ptr<ContextImpl> &ctx,
                                  const std::shared_ptr<const KernelInfo> &kernel) {
    std::shared_ptr<FunctionImpl> fn = compile_cached(ctx, kernel);
    std::shared_ptr<LaunchSlots> storage;
    {
        std::lock_guard<std::mutex> lock(launch_slot_storage_mutex);
        if (!kernel->launch_slot_storage) kernel->launch_slot_storage = std::make_shared<LaunchSlots>();
        storage = std::static_pointer_cast<LaunchSlots>(kernel->launch_slot_storage);
    }
    std::lock_guard<std::mutex> lock(storage->mutex);
    const LaunchSlot *slot = nullptr;
    for (const std::unique_ptr<LaunchSlot> &s : storage->slots) {
        if (s->context == ctx.get() && !s->context_alive.expired() && s->function == fn.get()) {
            slot = s.get();
            break;
        }
    }
    if (!slot) {
        auto s = std::make_unique<LaunchSlot>();
        s->context = ctx.get();
        s->context_alive = std::shared_ptr<const void>(ctx);
        s->function = fn.get();
        slot = s.get();
        storage->slots.push_back(std::move(s));
    }
    kernel->launch_slot.store(slot, std::memory_order_release);
    return fn.get(); // owned by ctx->cache for as long as the context lives
}

namespace {
/// A DeviceFunction is loaded into the context that compiled it (a module of its own, per context,
/// even on one device), so another context cannot launch it.
[[noreturn]] void throw_foreign_function(const ContextImpl &ctx, const FunctionImpl &fn) {
    const std::string &k = fn.kernel->ir.name;
    const std::string what = "kernel '" + k + "' was compiled by " +
                             (fn.context_label != ctx.label ? "a DeviceContext of " + fn.context_label
                              : fn.context_ref.expired()    ? "a DeviceContext of " + ctx.label + " that no longer exists"
                                                            : "another DeviceContext of the same device (" +
                                                                  ctx.label + ")");
    throw LogicError(what + " and cannot be launched on " +
                     (fn.context_label == ctx.label ? "this one" : "one of " + ctx.label) +
                     ": a DeviceFunction belongs to the context whose compile_function made it, even on one "
                     "device. Call compile_function on the context that launches it, or launch it on the context "
                     "that compiled it (enqueue_function(kernel, ...) with the Kernel compiles for each context "
                     "itself)");
}
} // namespace

void launch(ContextImpl &ctx, StreamImpl *stream, FunctionImpl &fn, const LaunchRequest &req, void **args,
            size_t n, const KernelArgsInfo *info) {
    if (fn.context != &ctx) [[unlikely]]
        throw_foreign_function(ctx, fn);
    check_launch(ctx, fn, req);
    LaunchDims dims;
    dims.grid = {req.grid.x, req.grid.y, req.grid.z};
    dims.block = {req.block.x, req.block.y, req.block.z};
    dims.shared_mem_bytes = static_cast<uint32_t>(req.shared_mem_bytes);
    if (!req.constant_memory.empty()) write_constant_memory(ctx, stream, fn, req.constant_memory);
    BackendStream &s = stream ? *stream->stream : *ctx.backend->default_stream();
    if (BackendGraph *g = s.capture_graph()) [[unlikely]] {
        if (!req.attributes.empty())
            throw LogicError("kernel '" + fn.kernel->ir.name +
                             "': a launch with cluster_dim(...) or LaunchAttribute values cannot be captured "
                             "into a graph; capture it without them, or launch it outside the capture");
        capture_kernel(s, *g, fn, dims, args, n, info);
        return;
    }
    auto enqueue = [&] {
        if (req.attributes.empty())
            s.launch(*fn.loaded, fn.kernel->ir.name, dims, args, n);
        else
            launch_with_attributes(ctx, s, fn, req, dims, args, n);
    };
    if (timeline::on()) [[unlikely]] {
        const std::string &k = fn.kernel->ir.name;
        timeline::stream_op(ctx, timeline::stream_of(ctx, stream), "kernel", "launch " + k, k,
                            timeline::Args()
                                .text("kernel", k)
                                .dims("grid", dims.grid)
                                .dims("block", dims.block)
                                .number("shared_mem_bytes", dims.shared_mem_bytes),
                            enqueue);
    } else {
        enqueue();
    }
}

std::pair<std::string, std::string> two_contexts(const ContextImpl &a, const ContextImpl &b) {
    if (a.label != b.label) return {a.label, b.label};
    return {"a DeviceContext of " + a.label, "another DeviceContext of " + b.label};
}

void check_buffer_context(const ContextImpl &ctx, const FunctionImpl &fn, size_t index, const char *field,
                          const RawDeviceBuffer *raw) {
    if (!raw)
        throw LogicError("kernel '" + fn.kernel->ir.name + "': " + argument_label(fn, index, field) +
                         " is an empty DeviceBuffer (default-constructed or moved-from)");
    if (raw->context().get() != &ctx) {
        auto [of, on] = two_contexts(*raw->context(), ctx);
        throw LogicError("kernel '" + fn.kernel->ir.name + "': " + argument_label(fn, index, field) +
                         " is a DeviceBuffer of " + of + " but the kernel runs on " + on);
    }
}

void check_own(const ContextImpl &, const RawDeviceBuffer *raw, const char *which) {
    if (!raw) throw_null_buffer((std::string(which) + " DeviceBuffer").c_str());
}

void check_same_context(const ContextImpl &ctx, const RawDeviceBuffer &raw, const char *call) {
    if (raw.context().get() != &ctx) {
        auto [of, on] = two_contexts(*raw.context(), ctx);
        throw LogicError(std::string(call) + ": the DeviceBuffer belongs to " + of + " but the call was made on " +
                         on);
    }
}

void throw_missing_dims(const FunctionImpl &fn, bool has_grid, bool has_block) {
    std::string missing = !has_grid && !has_block ? "grid_dim(...) and block_dim(...)"
                          : !has_grid             ? "grid_dim(...)"
                                                  : "block_dim(...)";
    throw LogicError("enqueue_function of kernel '" + fn.kernel->ir.name + "' needs " + missing +
                     " after the kernel's arguments");
}

ContextImpl &stream_context(const StreamImpl &s) { return *s.context; }
const std::shared_ptr<ContextImpl> &stream_context_ptr(const StreamImpl &s) { return s.context; }

const std::string &function_name(const FunctionImpl &fn) { return fn.kernel->ir.name; }
double function_compile_seconds(const FunctionImpl &fn) { return fn.compile_seconds; }
double function_load_seconds(const FunctionImpl &fn) { return fn.load_seconds; }

std::string function_assembly(const FunctionImpl &fn) {
    if (!fn.compiled.assembly.empty()) return fn.compiled.assembly;
    if (fn.compiled.target.arch == Arch::NVPTX) {
        if (!fn.compiled.binary.empty()) return fn.compiled.binary;
        // Loaded from a cached cubin, without the PTX: the compile cache has it (or compiles it).
        if (fn.kernel) return CompileCache::instance().get(*fn.kernel, fn.compiled.target)->binary;
    }
    return ember::emit(fn.kernel->ir, fn.compiled.target, Stage::Asm);
}

} // namespace detail

// ---------------------------------------------------------------------------------------------
// DumpOption.

bool DumpOption::enabled() const {
    if (auto *b = std::get_if<bool>(&v_)) return *b;
    return true;
}

void DumpOption::write(const std::string &text) const {
    if (!enabled()) return;
    if (std::holds_alternative<bool>(v_)) {
        std::cout << text;
        if (!text.empty() && text.back() != '\n') std::cout << '\n';
        std::cout.flush();
        return;
    }
    std::filesystem::path p = std::holds_alternative<std::filesystem::path>(v_)
                                  ? std::get<std::filesystem::path>(v_)
                                  : std::get<std::function<std::filesystem::path()>>(v_)();
    std::error_code ec;
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << text;
    if (!out) throw RuntimeError("cannot write the dump to '" + p.string() + "'");
}

// ---------------------------------------------------------------------------------------------
// DeviceContext.

namespace detail {
namespace {
/// [Note] Warm start
/// ================
/// The first kernel a process compiles pays, besides its own trace, key and load, the first use
/// of ember's tracer, verifier, printer and hash code: page faults, cold caches, first
/// allocations; on the H200's host about 200 us, as much as two or three warm kernels
/// (bench/compile_cache prints the first kernel apart). Creating a CUDA context takes the driver
/// 100 to 250 ms (cuInit, the primary context), so a helper thread makes the context
/// (start_cuda_backend) while the user's thread runs this: it traces one small kernel, computes
/// its cache key and sets up the disk cache (reads the environment, makes the directory if it is
/// missing, as the first compile would): no cache lookup, no entry read or written and no driver
/// call. The user's first kernel finds the effects (code paged in, the hash's CPU check done,
/// the cache directory open) ready, on its own thread. For the process's first CUDA context the
/// user's thread then reads the program's preload list, and the helper, still warm from making
/// the context, loads the listed kernels in the background ([Note] Preload). Any failure in the
/// warm-up is ignored (it is only a warm-up). Only for CUDA contexts, which dwarf it.
void warm_up() {
    auto k = kernel("ember_warm_up", {"v", "n", "s"}, [](Ptr<float> v, Int n, Float32 s) {
        auto i = global_idx.x;
        if_(i < n, [&] { v[i] = v[i] * s + 1.0f; });
    });
    (void)make_cache_key(*k.info(), TargetSpec::parse("nvptx:sm_90"), {});
    (void)compiled_from_binary(k.ir(), TargetSpec::parse("nvptx:sm_90"), {}, false);
    // The disk cache's set-up: the environment read, the directory made if missing (what the
    // first compile would do; its warnings, if any, come now).
    (void)CompileCache::instance().disk();
}
} // namespace
} // namespace detail

DeviceContext::DeviceContext(int device_id, std::string_view api_arg) {
    std::string why;
    const bool log = log_enabled(LogTopic::device);
    std::string api = detail::resolve_api(api_arg, log ? &why : nullptr);
    auto impl = std::make_shared<detail::ContextImpl>();
    if (api == "cuda") {
        impl->backend = detail::start_cuda_backend(device_id, detail::warm_up); // [Note] Warm start
    } else if (api == "cpu") {
        impl->backend = detail::make_cpu_backend(device_id);
    } else if (api == "hip") {
        impl->backend = detail::make_hip_backend(device_id); // RuntimeError with HIP's own error without a GPU
    } else {
        throw LogicError("unknown api '" + api + "': use cuda, hip, cpu or default");
    }
    impl->label = api + ":" + std::to_string(device_id);
    if (log) {
        TargetSpec target = impl->backend->target();
        target.features.clear(); // the host's feature list is hundreds of characters
        log_line(LogTopic::device, "DeviceContext " + impl->label + ": " + impl->backend->name() + " (" +
                                       target.to_string() + "), chosen by " + why);
    }
    impl_ = std::move(impl);
}

int DeviceContext::number_of_devices(std::string_view api_arg) {
    std::string api = detail::resolve_api(api_arg);
    if (api == "cuda") return detail::cuda_device_count();
    if (api == "hip") return detail::hip_device_count();
    if (api == "cpu") return 1;
    throw LogicError("unknown api '" + api + "': use cuda, hip, cpu or default");
}

std::string DeviceContext::name() const { return live("name").backend->name(); }
std::string DeviceContext::api() const { return live("api").backend->api(); }
int DeviceContext::id() const { return live("id").backend->device_id(); }
std::string DeviceContext::target() const { return live("target").backend->target().to_string(); }
void DeviceContext::synchronize() const {
    detail::ContextImpl &self = live("synchronize");
    detail::reject_while_capturing(*self.backend->default_stream(), self, "synchronize");
    if (detail::timeline::on()) [[unlikely]]
        detail::timeline::synchronize(self, self.backend->default_stream(), "synchronize");
    else
        self.backend->default_stream()->synchronize();
}

DeviceStream DeviceContext::stream() const {
    detail::ContextImpl &self = live("stream");
    return DeviceStream(std::make_shared<detail::StreamImpl>(detail::StreamImpl{impl_, self.backend->default_stream()}));
}

DeviceStream DeviceContext::create_stream(int priority) const {
    detail::ContextImpl &self = live("create_stream");
    detail::reject_while_capturing(*self.backend->default_stream(), self, "create_stream");
    return DeviceStream(std::make_shared<detail::StreamImpl>(detail::StreamImpl{impl_, self.backend->create_stream(priority)}));
}

std::pair<int, int> DeviceContext::stream_priority_range() const { return live("stream_priority_range").backend->stream_priority_range(); }

namespace {
detail::EventOptions event_options(EventFlags flags) {
    detail::EventOptions o;
    o.timing = !has_flag(flags, EventFlags::disable_timing);
    o.blocking_sync = has_flag(flags, EventFlags::blocking_sync);
    o.interprocess = has_flag(flags, EventFlags::interprocess);
    return o;
}

const detail::EventImpl &require_event(const DeviceEvent &e, const char *call) {
    if (!e) detail::throw_empty_handle("DeviceEvent", call, "make one with create_event()");
    return *e.impl();
}
} // namespace

DeviceEvent DeviceContext::create_event(EventFlags flags) const {
    detail::ContextImpl &self = live("create_event");
    const detail::EventOptions options = event_options(flags);
    return DeviceEvent(std::make_shared<detail::EventImpl>(
        detail::EventImpl{impl_, self.backend->create_event(options), options.timing}));
}

void DeviceContext::record_event(const DeviceEvent &event) const {
    live("record_event");
    stream().record_event(event);
}
void DeviceContext::enqueue_wait_for(const DeviceEvent &event) const {
    live("enqueue_wait_for");
    stream().enqueue_wait_for(event);
}

void DeviceContext::enqueue_wait_for(const DeviceContext &other) const {
    if (other.live_ptr("enqueue_wait_for") == live_ptr("enqueue_wait_for")) return; // one stream: already in order
    DeviceEvent mark = other.create_event(EventFlags::disable_timing);
    other.record_event(mark);
    enqueue_wait_for(mark);
}

int64_t DeviceContext::time_iterations(const std::function<void(int)> &body, int num_iters) const {
    live("execution_time");
    if (num_iters < 1)
        throw LogicError("execution_time: num_iters is " + std::to_string(num_iters) + "; it must be at least 1");
    DeviceEvent start = create_event(), end = create_event();
    record_event(start);
    for (int i = 0; i < num_iters; ++i) body(i);
    record_event(end);
    end.synchronize();
    return static_cast<int64_t>(static_cast<double>(end.time_since(start)) * 1e6);
}

// ---------------------------------------------------------------------------------------------
// DeviceStream and DeviceEvent.

void DeviceStream::synchronize() const {
    detail::StreamImpl &self = live("synchronize");
    detail::reject_while_capturing(*self.stream, *self.context, "synchronize");
    if (detail::timeline::on()) [[unlikely]]
        detail::timeline::synchronize(*self.context, self.stream, "synchronize");
    else
        self.stream->synchronize();
}
bool DeviceStream::is_done() const {
    detail::StreamImpl &self = live("is_done");
    detail::reject_while_capturing(*self.stream, *self.context, "is_done");
    return self.stream->is_done();
}
int DeviceStream::priority() const { return live("priority").stream->priority(); }
DeviceContext DeviceStream::context() const { return DeviceContext(live("context").context); }
bool operator==(const DeviceStream &a, const DeviceStream &b) {
    return a.live("operator==").stream == b.live("operator==").stream;
}

void DeviceStream::enqueue_wait_for(const DeviceEvent &event) const {
    detail::StreamImpl &self = live("enqueue_wait_for");
    const detail::EventImpl &e = require_event(event, "enqueue_wait_for");
    if (detail::BackendGraph *g = self.stream->capture_graph()) detail::keep_for_graph(*g, event.impl());
    if (detail::timeline::on()) [[unlikely]]
        detail::timeline::stream_call(*self.context, self.stream, "event", "event wait",
                                      [&] { self.stream->wait(*e.event); });
    else
        self.stream->wait(*e.event);
}

void DeviceStream::record_event(const DeviceEvent &event) const {
    detail::StreamImpl &self = live("record_event");
    const detail::EventImpl &e = require_event(event, "record_event");
    detail::reject_while_capturing(*self.stream, *self.context, "record_event");
    if (e.context != self.context) {
        auto [of, to] = detail::two_contexts(*e.context, *self.context);
        throw LogicError("record_event: the event belongs to " + of + " but the stream to " + to +
                         "; record an event of the stream's own context");
    }
    if (detail::timeline::on()) [[unlikely]]
        detail::timeline::stream_call(*self.context, self.stream, "event", "event record",
                                      [&] { self.stream->record(*e.event); });
    else
        self.stream->record(*e.event);
    e.recorded = true;
}

DeviceEvent DeviceStream::create_event(EventFlags flags) const {
    live("create_event");
    return context().create_event(flags);
}

// Device information and context limits.

// Memory: memset, views, mapping, host and managed memory.

// Memory: pitched 2-D/3-D copies, peer access, IPC.

// Function attributes, launch attributes, clusters, occupancy.

// Constant memory and external modules.

// Graphs.
// (The rest is in DeviceGraph.cpp.)
void detail::check_launch_request(const ContextImpl &ctx, const FunctionImpl &fn, const LaunchRequest &req) {
    check_launch(ctx, fn, req);
}

const DeviceEvent &DeviceEvent::record(const DeviceStream &stream) const {
    stream.record_event(*this);
    return *this;
}
const DeviceEvent &DeviceEvent::record() const {
    DeviceContext(require_event(*this, "record").context).record_event(*this);
    return *this;
}
void DeviceEvent::synchronize() const {
    detail::BackendEvent &e = *require_event(*this, "synchronize").event;
    if (detail::timeline::on()) [[unlikely]]
        detail::timeline::host_call("sync", "event synchronize", {}, [&] { e.synchronize(); });
    else
        e.synchronize();
}
bool DeviceEvent::query() const { return require_event(*this, "query").event->query(); }
float DeviceEvent::time_since(const DeviceEvent &earlier) const {
    const detail::EventImpl &a = require_event(*this, "time_since"), &b = require_event(earlier, "time_since");
    if (a.context != b.context) {
        auto [first, second] = detail::two_contexts(*b.context, *a.context);
        throw LogicError("time_since: the events belong to " + first + " and " + second +
                         "; time two events of one context");
    }
    if (!a.timing || !b.timing)
        throw LogicError("time_since: an event made with EventFlags::disable_timing has no timestamp");
    if (!a.recorded || !b.recorded)
        throw LogicError(std::string("time_since: the ") + (a.recorded ? "earlier" : "later") +
                         " event was never recorded (record it on a stream first)");
    return a.event->elapsed_ms_since(*b.event);
}

bool has_nvidia_gpu_accelerator() { return detail::cuda_device_count() > 0; }
bool has_amd_gpu_accelerator() { return detail::hip_device_count() > 0; }
bool has_accelerator() { return has_nvidia_gpu_accelerator() || has_amd_gpu_accelerator(); }

} // namespace ember
