/// \file
/// `device_function("name", lambda)`: a function traced once into the IR, callable from kernels
/// and other device functions with typed parameters and a return value.
///
///     auto square = ember::device_function("square", [](ember::Float32 x) { return x * x; });
///     auto k = ember::kernel("k", [&](ember::Ptr<float> p) { p[0] = square(p[1]); });
///
/// Parameters are DSL values (`Value<T>`, `Ptr<T>` in any address space) or structs of them
/// (EMBER_STRUCT, passed field by field: see [Note] Structs in `ember/dsl/Struct.h`); the lambda
/// returns nothing, a `Value<T>` or a `Ptr<T>` (global). `return_(value)` returns early. The body is traced
/// when device_function() runs, on its own trace: it sees only its parameters. Each call appears
/// in the kernel's IR as `@name(args)`; the compiler decides whether to inline it. Recursion is
/// rejected: the function is not callable until its trace has finished (a call from its own body
/// goes through a handle that is still empty, which throws DslError).
#ifndef EMBER_DSL_FUNCTION_H
#define EMBER_DSL_FUNCTION_H

#include "ember/dsl/Builtins.h"
#include "ember/dsl/Kernel.h"
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
/// What a traced device function is, shared by every copy of its handle.
struct FunctionInfo {
    ir::FunctionRef ir;
    bool uses_barrier = false;
};

template <class R> struct function_result {
    static constexpr bool ok = false;
};
template <> struct function_result<void> {
    static constexpr bool ok = true;
    static ir::Type type() { return ir::Type(); }
};
template <Scalar T> struct function_result<Value<T>> {
    static constexpr bool ok = true;
    static ir::Type type() { return ir_type_of<T>(); }
};
template <class T> struct function_result<Ptr<T>> {
    static constexpr bool ok = true;
    static ir::Type type() { return Ptr<T>::ir_type(); }
};

void check_function_name(const std::string &name, size_t num_params, size_t num_names,
                         const std::source_location &loc);
std::shared_ptr<const FunctionInfo> finish_function(Builder &b, std::vector<ir::VariableRef> params, ir::Type ret);
/// Emits a call of `f` in the current trace and returns its value (null for a void function):
/// bound to a let where the user wrote it. Checks the arguments' traces and [Note] Divergence.
ir::Expr call_function(const FunctionInfo *f, std::vector<ir::Expr> args, std::vector<uint32_t> traces,
                       const std::source_location &loc);

/// A call argument for a parameter of type P, converted where the user wrote it. `append` adds
/// the IR arguments it becomes (one, or one per field of a struct) and their traces.
template <class P> struct ArgOf;
template <Scalar T> struct ArgOf<Value<T>> : At<T> {
    using At<T>::At;
    void append(std::vector<ir::Expr> &exprs, std::vector<uint32_t> &traces) const {
        exprs.push_back(this->value.expr());
        traces.push_back(this->value.trace());
    }
};
template <class T, ir::AddressSpace S> struct ArgOf<Ptr<T, S>> {
    Ptr<T, S> ptr;
    ArgOf(const Ptr<T, S> &p) : ptr(p) {} // NOLINT: implicit
    void append(std::vector<ir::Expr> &exprs, std::vector<uint32_t> &traces) const {
        exprs.push_back(ptr.expr());
        traces.push_back(ptr.trace());
    }
};
/// The fields of a struct argument, in declaration order, nested structs flattened.
template <class P> void append_fields(const P &p, std::vector<ir::Expr> &exprs, std::vector<uint32_t> &traces) {
    if constexpr (ReflectedStruct<P>) {
        [&]<size_t... I>(std::index_sequence<I...>) {
            (append_fields<std::remove_cv_t<typename struct_info<P>::template field_type<I>>>(
                 struct_info<P>::template get<I>(p), exprs, traces),
             ...);
        }(std::make_index_sequence<struct_info<P>::size>{});
    } else {
        exprs.push_back(p.expr());
        traces.push_back(p.trace());
    }
}
/// A struct argument: exactly the parameter's struct type (`View{p, n}` builds one in place).
template <ReflectedStruct S> struct ArgOf<S> {
    S value;
    ArgOf(const S &s) : value(s) {} // NOLINT: implicit
    void append(std::vector<ir::Expr> &exprs, std::vector<uint32_t> &traces) const {
        append_fields(value, exprs, traces);
    }
};
template <class T, ir::AddressSpace S> struct ArgOf<NoAlias<Ptr<T, S>>> : ArgOf<Ptr<T, S>> {
    using ArgOf<Ptr<T, S>>::ArgOf;
};
} // namespace detail

template <class Signature> class DeviceFn;

/// A traced device function returning R (void, Value<T> or Ptr<T>) from parameters P...
/// Cheap to copy. A default-constructed handle is empty until assigned.
template <class R, class... P> class DeviceFn<R(P...)> {
public:
    DeviceFn() = default;
    explicit DeviceFn(std::shared_ptr<const detail::FunctionInfo> info) : info_(std::move(info)) {}

    /// Calls the function where the user wrote it (inside a kernel or device function trace).
    R operator()(detail::ArgOf<P>... args, std::source_location loc = std::source_location::current()) const {
        std::vector<ir::Expr> exprs;
        std::vector<uint32_t> traces;
        (args.append(exprs, traces), ...);
        ir::Expr r = detail::call_function(info_.get(), std::move(exprs), std::move(traces), loc);
        if constexpr (!std::is_void_v<R>) return R(r, detail::current_trace_id());
    }

    const std::string &name() const { return info_->ir->name; }
    const ir::FunctionRef &ir() const { return info_->ir; }
    explicit operator bool() const { return info_ != nullptr; }

private:
    std::shared_ptr<const detail::FunctionInfo> info_;
};

namespace detail {
template <class R, class F, class... Params>
DeviceFn<R(Params...)> trace_function(std::string name, std::vector<std::string> names, F &f,
                                      std::tuple<Params...> *, const std::source_location &loc) {
    if constexpr (!(check_param<Params, /*ForKernel=*/false, /*Report=*/false>() && ...)) {
        (void)(check_param<Params, /*ForKernel=*/false>() && ...); // the static_asserts that say why
        return DeviceFn<R(Params...)>();
    } else {
        check_function_name(name, sizeof...(Params), names.size(), loc);
        if (names.empty()) names.resize(sizeof...(Params));
        TraceScope scope(name, /*is_function=*/true);
        Builder &b = scope.builder();
        b.return_type = function_result<R>::type();
        b.push_block("device_function", loc);
        std::vector<ir::VariableRef> vars;
        auto args = [&]<size_t... I>(std::index_sequence<I...>) {
            return std::tuple<Params...>{make_param<Params>(names[I], vars, b.id())...};
        }(std::index_sequence_for<Params...>{});
        if constexpr (std::is_void_v<R>) {
            std::apply(f, args);
        } else {
            R r = std::apply(f, args);
            check_trace(r.trace(), loc);
            b.emit(ir::Return::make(r.expr()), loc);
        }
        return DeviceFn<R(Params...)>(finish_function(b, std::move(vars), function_result<R>::type()));
    }
}
} // namespace detail

/// Traces `body` (a lambda with DSL-typed parameters) into the device function `name`, whose
/// parameters are called `param_names` in the IR.
template <class F>
auto device_function(std::string name, std::initializer_list<std::string_view> param_names, F &&body,
                     std::source_location loc = std::source_location::current()) {
    using Fn = std::remove_cvref_t<F>;
    static_assert(requires { &Fn::operator(); },
                  "device_function() needs a lambda with explicit parameter types (no auto parameters)");
    using traits = detail::lambda_traits<Fn>;
    using R = std::remove_cvref_t<typename traits::result>;
    if constexpr (ReflectedStruct<R>) {
        static_assert(detail::always_false<R>,
                      "a device function cannot return a struct: the IR returns one scalar or "
                      "pointer; return its fields one at a time, or write them through a Ptr<T> "
                      "parameter");
        return DeviceFn<void()>();
    } else if constexpr (!detail::function_result<R>::ok) {
        static_assert(detail::always_false<R>,
                      "a device function returns nothing, a DSL value (Int, Float32, ... : "
                      "Value<T>) or a global Ptr<T>");
        return DeviceFn<void()>();
    } else {
        return detail::trace_function<R>(std::move(name),
                                         std::vector<std::string>(param_names.begin(), param_names.end()),
                                         body, static_cast<typename traits::params *>(nullptr), loc);
    }
}

/// As above, with anonymous parameters (printed as %0, %1, ...).
template <class F>
auto device_function(std::string name, F &&body, std::source_location loc = std::source_location::current()) {
    return device_function(std::move(name), {}, std::forward<F>(body), loc);
}

} // namespace ember

#endif // EMBER_DSL_FUNCTION_H
