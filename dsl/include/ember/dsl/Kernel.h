/// \file
/// `kernel("name", lambda)`: traces a C++ lambda once into a typed `Kernel<Params...>`.
#ifndef EMBER_DSL_KERNEL_H
#define EMBER_DSL_KERNEL_H

#include "ember/dsl/Control.h"
#include "ember/dsl/Value.h"

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace ember {

namespace detail {
/// What a traced kernel is, shared by every copy of its `Kernel` handle.
struct KernelInfo {
    ir::Kernel ir;
    /// One name per parameter (empty when the user gave none); used in messages.
    std::vector<std::string> param_names;
    /// Unique per traced kernel in this process: keys per-context compile caches.
    uint64_t id = 0;
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
                                                std::vector<std::string> names);

template <class P>
P make_param(size_t i, const std::vector<std::string> &names,
             std::vector<ir::VariableRef> &vars, uint32_t trace) {
    static_assert(param_traits<P>::ok,
                  "a kernel parameter must be a DSL value type: Int, Int32, Float32, Bool, ... "
                  "(Value<T>) or Ptr<T>");
    ir::VariableRef v =
        ir::Variable::make(names[i], param_traits<P>::type(), ir::VarKind::Param, param_traits<P>::noalias);
    vars.push_back(v);
    return P(ir::VarRef::make(v), trace);
}
} // namespace detail

/// A traced kernel taking `Params...` (each a `Value<T>` or a `Ptr<T>`). Cheap to copy.
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
                  const std::source_location &loc) {
    static_assert((!is_non_global_ptr<P> && ...),
                  "a kernel parameter points to global memory (Ptr<T>); shared and local pointers "
                  "are passed to device functions, not kernels");
    static_assert((!is_vector_param<P> && ...),
                  "a kernel parameter cannot be a SIMD<T, N>: pass a Ptr<T> and load the vector "
                  "(p.load<N>(i)); device functions take SIMD parameters");
    check_kernel_signature(name, sizeof...(P), names.size(), loc);
    if (names.empty()) names.resize(sizeof...(P));
    TraceScope scope(name);
    Builder &b = scope.builder();
    b.push_block();
    std::vector<ir::VariableRef> vars;
    // Braced initialisation creates the parameters left to right.
    auto args = [&]<size_t... I>(std::index_sequence<I...>) {
        return std::tuple<P...>{make_param<P>(I, names, vars, b.id())...};
    }(std::index_sequence_for<P...>{});
    std::apply(f, args);
    return Kernel<P...>(finish_kernel(b, std::move(vars), std::move(names)));
}
} // namespace detail

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
    using Fn = std::remove_cvref_t<F>;
    static_assert(requires { &Fn::operator(); },
                  "kernel() needs a lambda with explicit parameter types (no auto parameters)");
    using traits = detail::lambda_traits<Fn>;
    static_assert(std::is_void_v<typename traits::result>,
                  "a kernel returns nothing: write results through a Ptr<T> parameter");
    std::vector<std::string> names(param_names.begin(), param_names.end());
    return detail::trace_kernel(std::move(name), std::move(names), body,
                                static_cast<typename traits::params *>(nullptr), loc);
}

/// As above, with anonymous parameters (printed as %0, %1, ...).
template <class F>
auto kernel(std::string name, F &&body, std::source_location loc = std::source_location::current()) {
    return kernel(std::move(name), {}, std::forward<F>(body), loc);
}

} // namespace ember

#endif // EMBER_DSL_KERNEL_H
