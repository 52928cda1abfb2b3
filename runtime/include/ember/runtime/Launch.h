/// \file
/// What a launch and a compile take besides the kernel (grid and block dimensions, dynamic shared
/// memory, `LaunchConfig`, `CompileFunctionOptions`), and how `enqueue_function` turns its
/// arguments into the bytes a kernel receives, checked at compile time ([Note] Argument
/// checking in DevicePassable.h). Included by DeviceContext.h, which is what users include.
#ifndef EMBER_RUNTIME_LAUNCH_H
#define EMBER_RUNTIME_LAUNCH_H

#include "ember/dsl/Kernel.h"
#include "ember/runtime/Buffer.h"
#include "ember/runtime/CompileReport.h"
#include "ember/runtime/DeviceAttribute.h"
#include "ember/runtime/ConstantMemory.h"
#include "ember/runtime/DevicePassable.h"
#include "ember/runtime/Memory2D.h"
#include "ember/runtime/Function.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace ember {

/// Grid or block dimensions: `Dim(64)` is (64, 1, 1); `{2, 2}` is (2, 2, 1); `{4, 4, 2}`.
struct Dim {
    int64_t x = 1, y = 1, z = 1;
    constexpr Dim() = default;
    constexpr Dim(int64_t x_, int64_t y_ = 1, int64_t z_ = 1) : x(x_), y(y_), z(z_) {} // NOLINT
    constexpr Dim(LaunchGrid g) : x(g.x), y(g.y), z(g.z) {}                            // NOLINT
    constexpr Dim(LaunchBlock b) : x(b.x), y(b.y), z(b.z) {}                           // NOLINT
    friend constexpr bool operator==(const Dim &, const Dim &) = default;
};

/// `shared_mem_bytes(n)` at a launch: bytes of dynamic shared memory per block (Mojo's
/// `shared_mem_bytes=`), what `dynamic_shared<T>()` points to.
struct LaunchSharedMem {
    int64_t bytes = 0;
};
constexpr LaunchSharedMem shared_mem_bytes(int64_t bytes) { return {bytes}; }

/// The launch parameters, when given as one object instead of `grid_dim(...)`/`block_dim(...)`:
/// `ctx.enqueue_function(f, args..., LaunchConfig{.grid_dim = 1, .block_dim = 20})`.
struct LaunchConfig {
    Dim grid_dim;
    Dim block_dim;
    int64_t shared_mem_bytes = 0;
};

/// Where `compile_function` writes a stage: `true` prints it to stdout, a path writes that file,
/// a function is asked for the path (as Mojo's `Variant[Bool, Path, fn() -> Path]`).
class DumpOption {
public:
    DumpOption(bool enabled = false) : v_(enabled) {}                       // NOLINT
    DumpOption(std::filesystem::path p) : v_(std::move(p)) {}               // NOLINT
    DumpOption(const char *p) : v_(std::filesystem::path(p)) {}             // NOLINT
    DumpOption(std::function<std::filesystem::path()> f) : v_(std::move(f)) {} // NOLINT
    bool enabled() const;
    /// Writes `text` where this option says (no-op when disabled).
    void write(const std::string &text) const;

private:
    std::variant<bool, std::filesystem::path, std::function<std::filesystem::path()>> v_;
};

struct CompileFunctionOptions {
    /// The generated LLVM IR (after optimisation), as Mojo's `dump_llvm`.
    DumpOption dump_llvm;
    /// The generated assembly (PTX on NVIDIA), as Mojo's `dump_asm`.
    DumpOption dump_asm;
    /// ember's kernel IR.
    DumpOption dump_ir;
    /// Attributes applied when the kernel is loaded (Mojo's `func_attribute`), e.g.
    /// `{FuncAttribute::max_dynamic_shared_size_bytes(64 * 1024)}`.
    std::vector<FuncAttribute> func_attribute;
};

namespace detail {
struct ContextImpl;
struct FunctionImpl;

struct LaunchRequest {
    Dim grid, block;
    int64_t shared_mem_bytes = 0;
    /// constant_memory(...): written before the launch.
    std::vector<ConstantMemoryMapping> constant_memory;
    /// `cluster_dim(...)` / LaunchAttribute values (see Function.h); empty for a plain launch.
    std::vector<LaunchAttribute> attributes;
};

struct StreamImpl;
struct EventImpl;

/// Checks `req` against the device's limits and enqueues `fn` on `stream` (the context's default
/// stream when null).
struct KernelArgsInfo;
/// `info` (sizes and buffers of the arguments) is needed when the stream captures a graph.
void launch(ContextImpl &ctx, StreamImpl *stream, FunctionImpl &fn, const LaunchRequest &req, void **args,
            size_t n, const KernelArgsInfo *info = nullptr);
std::shared_ptr<FunctionImpl> compile(const std::shared_ptr<ContextImpl> &ctx,
                                      const std::shared_ptr<const KernelInfo> &kernel,
                                      const CompileFunctionOptions &opts);
std::shared_ptr<FunctionImpl> compile_cached(const std::shared_ptr<ContextImpl> &ctx,
                                             const std::shared_ptr<const KernelInfo> &kernel);
/// The slow path of cached_function: the context's map (compiling on a miss), then publishes
/// the kernel's launch slot for this context ([Note] Launch slot in runtime/lib/CompileCache.h).
FunctionImpl *compile_cached_slow(const std::shared_ptr<ContextImpl> &ctx,
                                  const std::shared_ptr<const KernelInfo> &kernel);
/// The function of `kernel` loaded in `ctx`, compiled on first use: one atomic load when the
/// kernel was last launched on this context (no lock, no allocation, no hashing).
inline FunctionImpl *cached_function(const std::shared_ptr<ContextImpl> &ctx,
                                     const std::shared_ptr<const KernelInfo> &kernel) {
    const LaunchSlot *slot = kernel->launch_slot.load(std::memory_order_acquire);
    if (slot && slot->context == ctx.get() && !slot->context_alive.expired()) [[likely]]
        return static_cast<FunctionImpl *>(slot->function);
    return compile_cached_slow(ctx, kernel);
}
/// Throws LogicError when buffer argument `index` (its field `field` when not empty: see
/// [Note] Structs) is empty or belongs to another context.
void check_buffer_context(const ContextImpl &ctx, const FunctionImpl &fn, size_t index, const char *field,
                          const RawDeviceBuffer *raw);

template <class X> struct is_launch_option : std::false_type {};
template <> struct is_launch_option<LaunchGrid> : std::true_type {};
template <> struct is_launch_option<LaunchBlock> : std::true_type {};
template <> struct is_launch_option<LaunchConfig> : std::true_type {};
template <> struct is_launch_option<LaunchSharedMem> : std::true_type {};
template <> struct is_launch_option<LaunchConstantMemory> : std::true_type {};
template <> struct is_launch_option<LaunchCluster> : std::true_type {};
template <> struct is_launch_option<LaunchAttribute> : std::true_type {};

template <class... A> constexpr size_t trailing_launch_options() {
    constexpr bool flags[] = {false, is_launch_option<std::remove_cvref_t<A>>::value...};
    size_t n = 0;
    for (size_t i = sizeof...(A); i > 0 && flags[i]; --i) ++n;
    return n;
}

inline void apply_option(LaunchRequest &r, const LaunchGrid &g, bool &has_grid, bool &) {
    r.grid = Dim(g);
    has_grid = true;
}
inline void apply_option(LaunchRequest &r, const LaunchBlock &b, bool &, bool &has_block) {
    r.block = Dim(b);
    has_block = true;
}
inline void apply_option(LaunchRequest &r, const LaunchConfig &c, bool &has_grid, bool &has_block) {
    r.grid = c.grid_dim;
    r.block = c.block_dim;
    r.shared_mem_bytes = c.shared_mem_bytes;
    has_grid = has_block = true;
}
inline void apply_option(LaunchRequest &r, const LaunchSharedMem &m, bool &, bool &) {
    r.shared_mem_bytes = m.bytes;
}
inline void apply_option(LaunchRequest &r, const LaunchConstantMemory &c, bool &, bool &) {
    r.constant_memory.insert(r.constant_memory.end(), c.mappings.begin(), c.mappings.end());
}
inline void apply_option(LaunchRequest &r, const LaunchCluster &c, bool &, bool &) {
    r.attributes.push_back(LaunchAttribute::cluster_dimension(c.x, c.y, c.z));
}
inline void apply_option(LaunchRequest &r, const LaunchAttribute &a, bool &, bool &) { r.attributes.push_back(a); }
[[noreturn]] void throw_missing_dims(const FunctionImpl &fn, bool has_grid, bool has_block);

/// Throws LogicError when the HostMappedBuffer argument's memory `raw` is empty or was made by a
/// device of another api (mapped memory is portable between devices of one api).
void check_mapped_host_context(const ContextImpl &ctx, const FunctionImpl &fn, size_t index, const char *field,
                               const RawHostBuffer *raw);
template <class H>
void check_buffer(const ContextImpl &ctx, const FunctionImpl &fn, size_t i, const char *field, const H &h) {
    if constexpr (requires { h.raw(); }) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*h.raw())>, RawDeviceBuffer>)
            check_buffer_context(ctx, fn, i, field, h.raw().get());
        else if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*h.raw())>, RawHostBuffer>)
            check_mapped_host_context(ctx, fn, i, field, h.raw().get()); // a HostMappedBuffer
    }
}

/// Throws LogicError when `raw` is empty. A buffer of another context is copied across contexts
/// (see [Note] Copies between contexts in runtime/lib/Memory2D.cpp).
void check_own(const ContextImpl &ctx, const RawDeviceBuffer *raw, const char *which);
/// LogicError "<call>: the DeviceBuffer belongs to <its context> but the call was made on <ctx>"
/// unless `raw` is `ctx`'s.
void check_same_context(const ContextImpl &ctx, const RawDeviceBuffer &raw, const char *call);

template <class Dst, class Src> struct enqueue_copy_operands {
    static_assert(always_false<Dst>,
                  "enqueue_copy(dst, src) copies a HostBuffer<T> or a T* host pointer to a "
                  "DeviceBuffer<T>, a DeviceBuffer<T> to a HostBuffer<T>, a T* or a DeviceBuffer<T>, "
                  "with one element type T: see Dst and Src in this instantiation");
};

/// The copies of DeviceContext::enqueue_copy and DeviceStream::enqueue_copy, on `stream` (the
/// default stream when null).
template <class Dst, class Src> void typed_copy(ContextImpl &, StreamImpl *, const Dst &, const Src &) {
    (void)enqueue_copy_operands<Dst, Src>{};
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceBuffer<T> &dst, const HostBuffer<T> &src) {
    check_own(ctx, dst.raw().get(), "destination");
    require(src, "source HostBuffer");
    check_sizes(dst.size(), src.size(), sizeof(T));
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.raw()->context().get(), MemSide::Host,
                       reinterpret_cast<uint64_t>(src.data()), src.raw()->context().get(), dst.bytes(), stream,
                       {.dst_device = &dst.raw(), .src_host = &src.raw()});
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const HostBuffer<T> &dst, const DeviceBuffer<T> &src) {
    check_own(ctx, src.raw().get(), "source");
    require(dst, "destination HostBuffer");
    check_sizes(dst.size(), src.size(), sizeof(T));
    enqueue_copy_bytes(ctx, MemSide::Host, reinterpret_cast<uint64_t>(dst.data()), dst.raw()->context().get(),
                       MemSide::Device, src.address(), src.raw()->context().get(), src.bytes(), stream,
                       {.src_device = &src.raw(), .dst_host = &dst.raw()});
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceBuffer<T> &dst, const DeviceBuffer<T> &src) {
    check_own(ctx, dst.raw().get(), "destination");
    check_own(ctx, src.raw().get(), "source");
    check_sizes(dst.size(), src.size(), sizeof(T));
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.raw()->context().get(), MemSide::Device,
                       src.address(), src.raw()->context().get(), src.bytes(), stream,
                       {.dst_device = &dst.raw(), .src_device = &src.raw()});
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceBuffer<T> &dst, const T *src) {
    check_own(ctx, dst.raw().get(), "destination");
    if (dst.size() == 0) return;
    if (!src) throw_null_buffer("source pointer");
    enqueue_copy_bytes(ctx, MemSide::Device, dst.address(), dst.raw()->context().get(), MemSide::Host,
                       reinterpret_cast<uint64_t>(src), nullptr, dst.bytes(), stream,
                       {.dst_device = &dst.raw()});
}
template <class T> void typed_copy(ContextImpl &ctx, StreamImpl *stream, const DeviceBuffer<T> &dst, T *src) {
    typed_copy(ctx, stream, dst, static_cast<const T *>(src));
}
template <class T>
void typed_copy(ContextImpl &ctx, StreamImpl *stream, T *dst, const DeviceBuffer<T> &src) {
    check_own(ctx, src.raw().get(), "source");
    if (src.size() == 0) return;
    if (!dst) throw_null_buffer("destination pointer");
    enqueue_copy_bytes(ctx, MemSide::Host, reinterpret_cast<uint64_t>(dst), nullptr, MemSide::Device, src.address(),
                       src.raw()->context().get(), src.bytes(), stream,
                       {.src_device = &src.raw()});
}

/// What a launch passes besides the parameters' values: their sizes, and the buffers they refer
/// to, which a graph that captures the launch keeps alive ([Note] Graphs in the runtime's
/// BackendGraph.h).
struct KernelArgsInfo {
    const uint32_t *sizes = nullptr;
    const std::shared_ptr<RawDeviceBuffer> *const *owners = nullptr;
    size_t num_owners = 0;
};

template <class Tuple> struct repr_sizes;
template <class... L> struct repr_sizes<std::tuple<L...>> {
    static constexpr uint32_t value[sizeof...(L) + 1] = {static_cast<uint32_t>(sizeof(L))..., 0};
};

template <class H>
void collect_owner(const std::shared_ptr<RawDeviceBuffer> **owners, size_t &n, const H &h) {
    if constexpr (requires { h.raw(); }) {
        if constexpr (std::is_lvalue_reference_v<decltype(h.raw())> &&
                      std::is_same_v<std::remove_cvref_t<decltype(h.raw())>, std::shared_ptr<RawDeviceBuffer>>)
            owners[n++] = &h.raw();
    }
}

/// The argument checking of enqueue_function, shared with graph updates: `all` is the kernel's
/// arguments followed by the launch options. Checks the arguments against P... at compile time
/// (see [Note] Argument checking) and every buffer against `ctx` at run time, converts them to
/// one representation per kernel (IR) parameter, and calls `body(req, ptrs, num_params, info)`.
/// `req` points to the launch options; with `OptionsOptional`, it is null when none were given
/// (otherwise grid_dim and block_dim are required).
template <bool OptionsOptional, class Tuple, class... P, class Body>
void with_kernel_params(const ContextImpl &ctx, const FunctionImpl &fn, Tuple &&all, std::tuple<P...> *,
                        Body &&body) {
    constexpr size_t total = std::tuple_size_v<std::remove_cvref_t<Tuple>>;
    constexpr size_t num_options = []<size_t... I>(std::index_sequence<I...>) {
        return trailing_launch_options<std::tuple_element_t<I, std::remove_cvref_t<Tuple>>...>();
    }(std::make_index_sequence<total>{});
    constexpr size_t num_args = total - num_options;
    if constexpr (num_args != sizeof...(P)) {
        (void)enqueue_function_argument_count_mismatch<KernelTakes<sizeof...(P)>, ArgumentsGiven<num_args>>{};
    } else {
        LaunchRequest req;
        bool has_grid = false, has_block = false;
        [&]<size_t... I>(std::index_sequence<I...>) {
            (apply_option(req, std::get<num_args + I>(all), has_grid, has_block), ...);
        }(std::make_index_sequence<num_options>{});
        constexpr bool ok = []<size_t... I>(std::index_sequence<I...>) {
            return (check_argument<false, I, P, std::tuple_element_t<I, std::remove_cvref_t<Tuple>>>() && ...);
        }(std::make_index_sequence<num_args>{});
        if constexpr (!ok) {
            // Not a constant expression: only the static_asserts of the mismatches speak.
            [&]<size_t... I>(std::index_sequence<I...>) {
                (void)(check_argument<true, I, P, std::tuple_element_t<I, std::remove_cvref_t<Tuple>>>() && ...);
            }(std::make_index_sequence<num_args>{});
        } else {
            constexpr bool has_options = !OptionsOptional || num_options > 0;
            if (has_options && (!has_grid || !has_block)) throw_missing_dims(fn, has_grid, has_block);
            // One representation per kernel (IR) parameter: a struct argument becomes one per
            // field ([Note] Structs).
            using Flat = flat_params_t<P...>;
            constexpr size_t num_params = std::tuple_size_v<Flat>;
            using Reprs = typename repr_tuple<Flat>::type;
            Reprs reprs{};
            const std::shared_ptr<RawDeviceBuffer> *owners[num_params + 1] = {};
            size_t num_owners = 0;
            [&]<size_t... I>(std::index_sequence<I...>) {
                (flatten_into<flat_offset<I, P...>(), P, FixedString<1>{""}>(
                     reprs, std::get<I>(all),
                     [&](const auto &h, const char *field) {
                         check_buffer(ctx, fn, I, field, h);
                         collect_owner(owners, num_owners, h);
                     }),
                 ...);
            }(std::make_index_sequence<num_args>{});
            [&]<size_t... J>(std::index_sequence<J...>) {
                void *ptrs[num_params + 1] = {static_cast<void *>(&std::get<J>(reprs))..., nullptr};
                const KernelArgsInfo info{repr_sizes<Reprs>::value, owners, num_owners};
                body(has_options ? &req : nullptr, ptrs, num_params, info);
            }(std::make_index_sequence<num_params>{});
        }
    }
}

/// enqueue_function of DeviceContext and DeviceStream: `all` is the kernel's arguments followed
/// by the launch options; see [Note] Argument checking.
template <class Tuple, class... P>
void enqueue_checked(ContextImpl &ctx, StreamImpl *stream, FunctionImpl &fn, Tuple &&all, std::tuple<P...> *tag) {
    with_kernel_params<false>(ctx, fn, std::forward<Tuple>(all), tag,
                              [&](const LaunchRequest *req, void **ptrs, size_t n, const KernelArgsInfo &info) {
                                  launch(ctx, stream, fn, *req, ptrs, n, &info);
                              });
}
} // namespace detail

} // namespace ember

#endif // EMBER_RUNTIME_LAUNCH_H
