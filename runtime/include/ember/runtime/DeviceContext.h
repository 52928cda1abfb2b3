/// \file
/// `DeviceContext`: one device and its stream of queued operations, as Mojo's `gpu.host`
/// DeviceContext: buffers, copies, compile_function, enqueue_function, synchronize.
#ifndef EMBER_RUNTIME_DEVICECONTEXT_H
#define EMBER_RUNTIME_DEVICECONTEXT_H

#include "ember/dsl/Kernel.h"
#include "ember/runtime/Buffer.h"
#include "ember/runtime/DevicePassable.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

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
};

namespace detail {
struct ContextImpl;
struct FunctionImpl;

struct LaunchRequest {
    Dim grid, block;
    int64_t shared_mem_bytes = 0;
};

void launch(ContextImpl &ctx, FunctionImpl &fn, const LaunchRequest &req, void **args, size_t n);
std::shared_ptr<FunctionImpl> compile(const std::shared_ptr<ContextImpl> &ctx,
                                      const std::shared_ptr<const KernelInfo> &kernel,
                                      const CompileFunctionOptions &opts);
std::shared_ptr<FunctionImpl> compile_cached(const std::shared_ptr<ContextImpl> &ctx,
                                             const std::shared_ptr<const KernelInfo> &kernel);
/// Throws LogicError when buffer argument `index` (its field `field` when not empty: see
/// [Note] Structs) is empty or belongs to another context.
void check_buffer_context(const ContextImpl &ctx, const FunctionImpl &fn, size_t index, const char *field,
                          const RawDeviceBuffer *raw);

template <class X> struct is_launch_option : std::false_type {};
template <> struct is_launch_option<LaunchGrid> : std::true_type {};
template <> struct is_launch_option<LaunchBlock> : std::true_type {};
template <> struct is_launch_option<LaunchConfig> : std::true_type {};
template <> struct is_launch_option<LaunchSharedMem> : std::true_type {};

template <class... A> constexpr size_t trailing_launch_options() {
    constexpr bool flags[] = {false, is_launch_option<std::remove_cvref_t<A>>::value...};
    size_t n = 0;
    for (size_t i = sizeof...(A); i > 0 && flags[i]; --i) ++n;
    return n;
}
} // namespace detail

/// A kernel compiled and loaded for one DeviceContext. Typed by the kernel's parameters, so
/// `enqueue_function` checks its arguments at compile time. Cheap to copy.
template <class... Params> class DeviceFunction {
public:
    DeviceFunction(std::shared_ptr<detail::FunctionImpl> impl) : impl_(std::move(impl)) {} // NOLINT

    /// The kernel's name.
    const std::string &name() const;
    /// Generated assembly (PTX on NVIDIA, host assembly on the CPU device).
    std::string assembly() const;
    /// Seconds spent compiling (lowering + optimisation + code generation) and loading.
    double compile_seconds() const;
    double load_seconds() const;

    const std::shared_ptr<detail::FunctionImpl> &impl() const { return impl_; }

private:
    std::shared_ptr<detail::FunctionImpl> impl_;
};

namespace detail {
const std::string &function_name(const FunctionImpl &fn);
std::string function_assembly(const FunctionImpl &fn);
double function_compile_seconds(const FunctionImpl &fn);
double function_load_seconds(const FunctionImpl &fn);
} // namespace detail

template <class... P> const std::string &DeviceFunction<P...>::name() const {
    return detail::function_name(*impl_);
}
template <class... P> std::string DeviceFunction<P...>::assembly() const {
    return detail::function_assembly(*impl_);
}
template <class... P> double DeviceFunction<P...>::compile_seconds() const {
    return detail::function_compile_seconds(*impl_);
}
template <class... P> double DeviceFunction<P...>::load_seconds() const {
    return detail::function_load_seconds(*impl_);
}

/// One device (a GPU, or the CPU device) and the stream its operations are queued on. Copies
/// share the same device context.
class DeviceContext {
public:
    /// `api` is "cuda", "cpu", or "default": `$EMBER_API` when set, else the first GPU, else the
    /// CPU device. Throws RuntimeError/LogicError when there is no such device, naming the api,
    /// the id and how many devices there are.
    explicit DeviceContext(int device_id = 0, std::string_view api = "default");

    /// Devices of `api` on this machine (the CPU device counts as one).
    static int number_of_devices(std::string_view api = "default");

    /// The device's name as its API reports it.
    std::string name() const;
    /// "cuda" or "cpu".
    std::string api() const;
    int id() const;
    /// What kernels are compiled for on this device, e.g. "nvptx:sm_90" or "cpu".
    std::string target() const;

    /// A device buffer of n elements (contents undefined until written).
    template <class T> DeviceBuffer<T> enqueue_create_buffer(size_t n) const {
        return DeviceBuffer<T>(std::make_shared<detail::RawDeviceBuffer>(impl_, n * sizeof(T)), n);
    }
    /// A host buffer of n elements, page-locked on GPUs (contents undefined until written).
    template <class T> HostBuffer<T> enqueue_create_host_buffer(size_t n) const {
        return HostBuffer<T>(std::make_shared<detail::RawHostBuffer>(impl_, n * sizeof(T)), n);
    }

    /// Copies, in (destination, source) order as memcpy. Buffer-to-buffer copies need equal sizes
    /// (LogicError otherwise); a raw host pointer must hold the buffer's size() elements.
    template <class T> void enqueue_copy(const DeviceBuffer<T> &dst, const HostBuffer<T> &src) const {
        check_own(dst.raw().get(), "destination");
        dst.enqueue_copy_from(src);
    }
    template <class T> void enqueue_copy(const HostBuffer<T> &dst, const DeviceBuffer<T> &src) const {
        check_own(src.raw().get(), "source");
        src.enqueue_copy_to(dst);
    }
    template <class T> void enqueue_copy(const DeviceBuffer<T> &dst, const DeviceBuffer<T> &src) const {
        check_own(dst.raw().get(), "destination");
        check_own(src.raw().get(), "source");
        src.enqueue_copy_to(dst);
    }
    template <class T> void enqueue_copy(const DeviceBuffer<T> &dst, const T *src) const {
        check_own(dst.raw().get(), "destination");
        dst.enqueue_copy_from(src);
    }
    template <class T> void enqueue_copy(T *dst, const DeviceBuffer<T> &src) const {
        check_own(src.raw().get(), "source");
        src.enqueue_copy_to(dst);
    }

    /// Blocks until every operation queued on this context has finished. Errors of earlier
    /// asynchronous operations (a faulting kernel) surface here as LaunchError.
    void synchronize() const;

    /// Compiles `k` for this device and loads it.
    template <class... P>
    DeviceFunction<P...> compile_function(const Kernel<P...> &k,
                                          const CompileFunctionOptions &options = {}) const {
        return DeviceFunction<P...>(detail::compile(impl_, k.info(), options));
    }

    /// Enqueues `f` with `args...`, followed by `grid_dim(...)` and `block_dim(...)` (or one
    /// `LaunchConfig`), and optionally `shared_mem_bytes(...)`. Argument types are checked at compile time (see [Note] Argument checking).
    template <class... P, class... A> void enqueue_function(const DeviceFunction<P...> &f, A &&...a) const {
        launch_with(*f.impl(), std::forward_as_tuple(std::forward<A>(a)...),
                    static_cast<std::tuple<P...> *>(nullptr));
    }
    /// Compiles `k` on first use (once per context) and enqueues it.
    template <class... P, class... A> void enqueue_function(const Kernel<P...> &k, A &&...a) const {
        std::shared_ptr<detail::FunctionImpl> fn = detail::compile_cached(impl_, k.info());
        launch_with(*fn, std::forward_as_tuple(std::forward<A>(a)...),
                    static_cast<std::tuple<P...> *>(nullptr));
    }

    const std::shared_ptr<detail::ContextImpl> &impl() const { return impl_; }

private:
    void check_own(const detail::RawDeviceBuffer *raw, const char *which) const;

    template <class Tuple, class... P> void launch_with(detail::FunctionImpl &fn, Tuple &&all,
                                                        std::tuple<P...> *) const {
        constexpr size_t total = std::tuple_size_v<std::remove_cvref_t<Tuple>>;
        constexpr size_t num_options = []<size_t... I>(std::index_sequence<I...>) {
            return detail::trailing_launch_options<std::tuple_element_t<I, std::remove_cvref_t<Tuple>>...>();
        }(std::make_index_sequence<total>{});
        constexpr size_t num_args = total - num_options;
        if constexpr (num_args != sizeof...(P)) {
            (void)enqueue_function_argument_count_mismatch<KernelTakes<sizeof...(P)>,
                                                           ArgumentsGiven<num_args>>{};
        } else {
            detail::LaunchRequest req;
            bool has_grid = false, has_block = false;
            [&]<size_t... I>(std::index_sequence<I...>) {
                (apply_option(req, std::get<num_args + I>(all), has_grid, has_block), ...);
            }(std::make_index_sequence<num_options>{});
            constexpr bool ok = []<size_t... I>(std::index_sequence<I...>) {
                return (detail::check_argument<I, P, std::tuple_element_t<I, std::remove_cvref_t<Tuple>>>() && ...);
            }(std::make_index_sequence<num_args>{});
            if constexpr (ok) {
                if (!has_grid || !has_block) throw_missing_dims(fn, has_grid, has_block);
                // One representation per kernel (IR) parameter: a struct argument becomes one per
                // field ([Note] Structs).
                using Flat = detail::flat_params_t<P...>;
                constexpr size_t num_params = std::tuple_size_v<Flat>;
                typename detail::repr_tuple<Flat>::type reprs{};
                [&]<size_t... I>(std::index_sequence<I...>) {
                    (detail::flatten_into<detail::flat_offset<I, P...>(), P, detail::FixedString<1>{""}>(
                         reprs, std::get<I>(all),
                         [&](const auto &h, const char *field) { check_buffer(fn, I, field, h); }),
                     ...);
                }(std::make_index_sequence<num_args>{});
                [&]<size_t... J>(std::index_sequence<J...>) {
                    void *ptrs[num_params + 1] = {static_cast<void *>(&std::get<J>(reprs))..., nullptr};
                    detail::launch(*impl_, fn, req, ptrs, num_params);
                }(std::make_index_sequence<num_params>{});
            }
        }
    }

    static void apply_option(detail::LaunchRequest &r, const LaunchGrid &g, bool &has_grid, bool &) {
        r.grid = Dim(g);
        has_grid = true;
    }
    static void apply_option(detail::LaunchRequest &r, const LaunchBlock &b, bool &, bool &has_block) {
        r.block = Dim(b);
        has_block = true;
    }
    static void apply_option(detail::LaunchRequest &r, const LaunchConfig &c, bool &has_grid,
                             bool &has_block) {
        r.grid = c.grid_dim;
        r.block = c.block_dim;
        r.shared_mem_bytes = c.shared_mem_bytes;
        has_grid = has_block = true;
    }
    static void apply_option(detail::LaunchRequest &r, const LaunchSharedMem &m, bool &, bool &) {
        r.shared_mem_bytes = m.bytes;
    }
    [[noreturn]] static void throw_missing_dims(const detail::FunctionImpl &fn, bool has_grid,
                                                bool has_block);

    template <class H>
    void check_buffer(const detail::FunctionImpl &fn, size_t i, const char *field, const H &h) const {
        if constexpr (requires { h.raw(); }) {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*h.raw())>, detail::RawDeviceBuffer>)
                detail::check_buffer_context(*impl_, fn, i, field, h.raw().get());
        }
    }

    std::shared_ptr<detail::ContextImpl> impl_;
};

/// True when the machine has a GPU that some ember back end or probe can see (NVIDIA or AMD).
/// The CPU device does not count.
bool has_accelerator();
bool has_nvidia_gpu_accelerator();
bool has_amd_gpu_accelerator();

} // namespace ember

#endif // EMBER_RUNTIME_DEVICECONTEXT_H
