/// \file
/// `kernel("name", lambda)`: traces a C++ lambda once into a typed `Kernel<Params...>`.
#ifndef EMBER_DSL_KERNEL_H
#define EMBER_DSL_KERNEL_H

#include "ember/dsl/Control.h"
#include "ember/dsl/Struct.h"
#include "ember/dsl/Value.h"

#include <atomic>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace ember {

namespace detail {
/// What a traced kernel is, shared by every copy of its `Kernel` handle.
/// One (context, loaded function) pair of a kernel; immutable once published. `context` is the
/// runtime's ContextImpl and `function` its FunctionImpl, kept type-erased here. `context_alive`
/// tells a live context from a new one allocated at the address of a destroyed one.
struct LaunchSlot {
    const void *context = nullptr;
    std::weak_ptr<const void> context_alive;
    void *function = nullptr;
};

struct KernelInfo {
    ir::Kernel ir;
    /// One name per parameter (empty when the user gave none); used in messages.
    std::vector<std::string> param_names;
    /// Unique per traced kernel in this process: keys per-context compile caches.
    uint64_t id = 0;
    /// Seconds spent tracing the lambda into `ir` (and verifying it): the "trace" stage of
    /// CompileReport.
    double trace_seconds = 0;
    /// When tracing began (std::chrono::steady_clock, nanoseconds since its epoch) and the OS
    /// thread id of the thread that traced: where the runtime's timeline (EMBER_TRACE) draws the
    /// trace stage.
    int64_t trace_start_ns = 0;
    int64_t trace_thread = 0;
    /// Whether `ir` passed the verifier (finish_kernel verifies every traced kernel): the compile
    /// cache then does not verify it again before it accepts cached bytes for it.
    bool verified = false;
    /// The SHA-256 of the canonical printed IR (the compile cache's IR key component), computed
    /// once on first use by the runtime (CompileCache::key_for) and kept: `ir` never changes.
    mutable std::once_flag ir_hash_once;
    mutable std::string ir_hash;
    /// The launch fast path of enqueue_function(kernel, ...) (runtime/lib/CompileCache.h,
    /// [Note] Launch slot): the (context, function) this kernel was last launched with. Written by
    /// the runtime only; slots live in `launch_slot_storage` as long as this KernelInfo.
    mutable std::atomic<const LaunchSlot *> launch_slot{nullptr};
    mutable std::shared_ptr<void> launch_slot_storage;
};

template <class F> struct lambda_traits : lambda_traits<decltype(&F::operator())> {};
template <class C, class R, class... A> struct lambda_traits<R (C::*)(A...) const> {
    using result = R;
    using params = std::tuple<std::remove_cvref_t<A>...>;
};
template <class C, class R, class... A> struct lambda_traits<R (C::*)(A...)> {
    using result = R;
    using params = std::tuple<std::remove_cvref_t<A>...>;
};

template <class P> struct param_traits {
    static constexpr bool ok = false;
    static constexpr bool noalias = false;
};
template <Scalar T> struct param_traits<Value<T>> {
    static constexpr bool ok = true;
    static constexpr bool noalias = false;
    static constexpr ir::Type type() { return ir_type_of<T>(); }
};
template <class T, ir::AddressSpace S> struct param_traits<Ptr<T, S>> {
    static constexpr bool ok = true;
    static constexpr bool noalias = false;
    static constexpr bool global = S == ir::AddressSpace::Global;
    static constexpr ir::Type type() { return Ptr<T, S>::ir_type(); }
};
template <class T, ir::AddressSpace S> struct param_traits<NoAlias<Ptr<T, S>>> : param_traits<Ptr<T, S>> {
    static constexpr bool noalias = true;
};
/// Whether P is a vector (`SIMD<T, N>`, specialised in SIMD.h): device functions take them,
/// kernels do not.
template <class P> constexpr bool is_vector_param = false;
template <class P> constexpr bool is_non_global_ptr = false;
template <class T, ir::AddressSpace S> constexpr bool is_non_global_ptr<Ptr<T, S>> = S != ir::AddressSpace::Global;
template <class T, ir::AddressSpace S>
constexpr bool is_non_global_ptr<NoAlias<Ptr<T, S>>> = S != ir::AddressSpace::Global;

void check_kernel_signature(const std::string &name, size_t num_params, size_t num_names,
                            const std::source_location &loc);
std::shared_ptr<const KernelInfo> finish_kernel(Builder &b, std::vector<ir::VariableRef> params,
                                                std::vector<std::string> names,
                                                ir::LaunchBounds bounds = {},
                                                ir::FpContract contract = ir::FpContract::Off);
void check_launch_bounds(const std::string &name, const ir::LaunchBounds &bounds,
                         const std::source_location &loc);
} // namespace detail

// Named so that the compiler's "in instantiation of" line reads as the error message.
template <class P> struct ParameterType {};

template <class P> struct parameter_is_not_a_dsl_type {
    static_assert(detail::always_false<P>,
                  "a kernel or device-function parameter must be a DSL type: Int, Int32, Float32, "
                  "Bool, ... (Value<T>), Ptr<T>, Ptr<const T>, NoAlias<Ptr<T>>, SharedPtr<T>, "
                  "LocalPtr<T> or SIMD<T, N> (device functions only), or a struct of those reflected with "
                  "EMBER_STRUCT; see ParameterType in this instantiation");
    static constexpr bool value = false;
};
template <class P> struct kernel_parameter_points_to_shared_or_local_memory {
    static_assert(detail::always_false<P>,
                  "a kernel parameter points to global memory (Ptr<T>); shared, local and constant "
                  "pointers are passed to device functions, not kernels (a kernel declares its "
                  "constant_array itself): see ParameterType in this instantiation");
    static constexpr bool value = false;
};
template <class P> struct kernel_parameter_is_a_vector {
    static_assert(detail::always_false<P>,
                  "a kernel parameter cannot be a SIMD<T, N>: pass a Ptr<T> and load the vector "
                  "(p.load<N>(i)); device functions take SIMD parameters. See ParameterType in "
                  "this instantiation");
    static constexpr bool value = false;
};
template <class Struct, class Field, class Type> struct struct_field_is_not_a_dsl_type {
    static_assert(detail::always_false<Struct>,
                  "a field of a struct parameter must be a DSL type (Int, Float32, ... Value<T>, "
                  "Ptr<T>, Ptr<const T>, NoAlias<Ptr<T>>; SharedPtr<T> and LocalPtr<T> for device "
                  "functions) or a struct reflected with EMBER_STRUCT, not a reference: see "
                  "StructType, FieldName and FieldType in this instantiation");
    static constexpr bool value = false;
};
template <class Struct, class Field> struct kernel_struct_field_points_to_shared_or_local_memory {
    static_assert(detail::always_false<Struct>,
                  "a field of a kernel's struct parameter points to shared or local memory: a "
                  "kernel receives only global pointers (Ptr<T>); pass such a struct to device "
                  "functions. See StructType and FieldName in this instantiation");
    static constexpr bool value = false;
};

namespace detail {
/// Whether P can be a parameter (of a kernel when `ForKernel`, else of a device function). When
/// it cannot, a static_assert names the parameter type, or the struct and field, and why; without
/// Report it only answers (see report()), so that a caller's `if constexpr` on the answer stays a
/// constant expression under clang.
template <class P, bool ForKernel, bool Report = true> constexpr bool check_param();

template <class S, size_t I, bool ForKernel, bool Report> constexpr bool check_struct_field() {
    using M = typename struct_info<S>::template field_type<I>;
    using F = std::remove_cv_t<M>;
    using Name = FieldName<struct_info<S>::template name<I>>;
    if constexpr (std::is_reference_v<M> || (!ReflectedStruct<F> && !param_traits<F>::ok))
        return report<Report, struct_field_is_not_a_dsl_type<StructType<S>, Name, FieldType<M>>>();
    else if constexpr (ForKernel && is_non_global_ptr<F>)
        return report<Report, kernel_struct_field_points_to_shared_or_local_memory<StructType<S>, Name>>();
    else
        return check_param<F, ForKernel, Report>();
}

template <class P, bool ForKernel, bool Report> constexpr bool check_param() {
    if constexpr (ReflectedStruct<P>) {
        if constexpr (!struct_info<P>::ok) return struct_info<P>::template check<Report>();
        else
            return []<size_t... I>(std::index_sequence<I...>) {
                return (check_struct_field<P, I, ForKernel, Report>() && ...);
            }(std::make_index_sequence<struct_info<P>::size>{});
    } else if constexpr (!param_traits<P>::ok) {
        return report<Report, parameter_is_not_a_dsl_type<ParameterType<P>>>();
    } else if constexpr (ForKernel && is_non_global_ptr<P>) {
        return report<Report, kernel_parameter_points_to_shared_or_local_memory<ParameterType<P>>>();
    } else if constexpr (ForKernel && is_vector_param<P>) {
        return report<Report, kernel_parameter_is_a_vector<ParameterType<P>>>();
    } else {
        return true;
    }
}

/// A parameter of type P named `name` (empty: anonymous), created in `vars`. A struct becomes
/// one parameter per field, named `name.field` (see [Note] Structs), in declaration order.
template <class P>
P make_param(const std::string &name, std::vector<ir::VariableRef> &vars, uint32_t trace) {
    if constexpr (ReflectedStruct<P>) {
        // Braced initialisation (inside ember_struct_make) makes the fields left to right.
        return ember_struct_make(StructTag<P>{}, [&]<class M>(std::type_identity<M>, const char *field) {
            return make_param<std::remove_cv_t<M>>(name.empty() ? std::string(field) : name + "." + field,
                                                   vars, trace);
        });
    } else {
        ir::VariableRef v = ir::Variable::make(name, param_traits<P>::type(), ir::VarKind::Param,
                                               param_traits<P>::noalias);
        vars.push_back(v);
        return P(ir::VarRef::make(v), trace);
    }
}
} // namespace detail

/// A traced kernel taking `Params...` (each a `Value<T>`, a `Ptr<T>` or a struct of them
/// reflected with EMBER_STRUCT). Cheap to copy.
template <class... Params> class Kernel {
public:
    using params = std::tuple<Params...>;
    static constexpr size_t arity = sizeof...(Params);

    explicit Kernel(std::shared_ptr<const detail::KernelInfo> info) : info_(std::move(info)) {}

    const std::string &name() const { return info_->ir.name; }
    const ir::Kernel &ir() const { return info_->ir; }
    const std::vector<std::string> &param_names() const { return info_->param_names; }
    const std::shared_ptr<const detail::KernelInfo> &info() const { return info_; }

private:
    std::shared_ptr<const detail::KernelInfo> info_;
};

namespace detail {
template <class F, class... P>
auto trace_kernel(std::string name, std::vector<std::string> names, F &f, std::tuple<P...> *,
                  const std::source_location &loc, ir::LaunchBounds bounds = {},
                  ir::FpContract contract = ir::FpContract::Off) {
    if constexpr (!(check_param<P, /*ForKernel=*/true, /*Report=*/false>() && ...)) {
        (void)(check_param<P, /*ForKernel=*/true>() && ...); // the static_asserts that say why
        return Kernel<P...>(nullptr);
    } else {
        check_kernel_signature(name, sizeof...(P), names.size(), loc);
        check_launch_bounds(name, bounds, loc);
        if (names.empty()) names.resize(sizeof...(P));
        TraceScope scope(name);
        Builder &b = scope.builder();
        b.push_block("kernel", loc);
        std::vector<ir::VariableRef> vars;
        // Braced initialisation creates the parameters left to right.
        auto args = [&]<size_t... I>(std::index_sequence<I...>) {
            return std::tuple<P...>{make_param<P>(names[I], vars, b.id())...};
        }(std::index_sequence_for<P...>{});
        std::apply(f, args);
        return Kernel<P...>(finish_kernel(b, std::move(vars), std::move(names), bounds, contract));
    }
}
} // namespace detail

/// What a kernel promises about its launches and asks of register allocation, as CUDA's
/// `__launch_bounds__` and `__maxnreg__` ([Note] IR semantics: Launch bounds):
///
///     auto k = kernel("sgemm", {"a", "b", "c", "n"}, [](...) { ... },
///                     LaunchBounds{.max_threads = 256, .min_blocks = 2});
///
/// `max_threads`: no launch has more threads per block (a launch that does is a LogicError), so
/// the compiler may plan registers for that many; `min_blocks`: that many blocks of max_threads
/// should fit on a multiprocessor at once (registers are limited to allow it); `max_registers`:
/// registers per thread at most. NVPTX gets all three (.maxntid, .minnctapersm, .maxnreg), AMDGPU
/// max_threads and max_registers (its flat work-group size and VGPR budget), the CPU device none
/// but the launch check. Values out of range are a DslError at the kernel's line.
using LaunchBounds = ir::LaunchBounds;

/// Whether the kernel's float multiplies and adds may fuse into fma ([Note] IR semantics:
/// Contraction), given after the body (and the launch bounds, if any):
///
///     auto k = kernel("sgemm", {...}, [](...) { ... }, LaunchBounds{.max_threads = 256},
///                     FpContract::Fast);
///
/// `FpContract::Off`, the default, rounds every operation as written, so a kernel computes the
/// same bits on every device (the CPU device included); `fma(a, b, c)` fuses one product where
/// the author wants it. `FpContract::Fast` lets the compiler fuse any product into the add or
/// subtract that uses it, as nvcc does by default (`--fmad=true`): fewer instructions and one
/// rounding instead of two, but results that may differ between devices in the last bits
/// (docs/language.md, "Contraction").
using FpContract = ir::FpContract;

/// kernel() with launch bounds and a contraction policy (the one every kernel() overload calls).
template <class F>
auto kernel(std::string name, std::initializer_list<std::string_view> param_names, F &&body,
            LaunchBounds bounds, FpContract contract,
            std::source_location loc = std::source_location::current()) {
    using Fn = std::remove_cvref_t<F>;
    static_assert(
        requires { &Fn::operator(); },
        "kernel() needs a lambda with explicit parameter types (no auto parameters)");
    using traits = detail::lambda_traits<Fn>;
    static_assert(std::is_void_v<typename traits::result>,
                  "a kernel returns nothing: write results through a Ptr<T> parameter");
    std::vector<std::string> names(param_names.begin(), param_names.end());
    return detail::trace_kernel(std::move(name), std::move(names), body,
                                static_cast<typename traits::params *>(nullptr), loc, bounds,
                                contract);
}

/// kernel() with launch bounds.
template <class F>
auto kernel(std::string name, std::initializer_list<std::string_view> param_names, F &&body,
            LaunchBounds bounds, std::source_location loc = std::source_location::current()) {
    return kernel(std::move(name), param_names, std::forward<F>(body), bounds, FpContract::Off,
                  loc);
}

/// kernel() with a contraction policy.
template <class F>
auto kernel(std::string name, std::initializer_list<std::string_view> param_names, F &&body,
            FpContract contract, std::source_location loc = std::source_location::current()) {
    return kernel(std::move(name), param_names, std::forward<F>(body), LaunchBounds{}, contract,
                  loc);
}

/// Traces `body`, a lambda whose parameters are DSL types, into a kernel named `name` (a C
/// identifier). Throws DslError for misuse found while tracing.
///
///     auto k = ember::kernel("scalar_add", {"vector", "size", "scalar"},
///         [](ember::Ptr<float> vector, ember::Int size, ember::Float32 scalar) {
///             auto idx = ember::block_idx.x * ember::block_dim.x + ember::thread_idx.x;
///             ember::if_(idx < size, [&] { vector[idx] += scalar; });
///         });
template <class F>
auto kernel(std::string name, std::initializer_list<std::string_view> param_names, F &&body,
            std::source_location loc = std::source_location::current()) {
    return kernel(std::move(name), param_names, std::forward<F>(body), LaunchBounds{},
                  FpContract::Off, loc);
}

/// As above, with anonymous parameters (printed as %0, %1, ...).
template <class F>
auto kernel(std::string name, F &&body,
            std::source_location loc = std::source_location::current()) {
    return kernel(std::move(name), {}, std::forward<F>(body), loc);
}

} // namespace ember

#endif // EMBER_DSL_KERNEL_H
