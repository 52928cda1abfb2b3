/// \file
/// `DeviceModule`: code that ember did not compile (PTX, a cubin), loaded into a DeviceContext
/// with `ctx.load_module(ModuleImage::ptx(text))`, as PyCUDA's SourceModule/module_from_buffer.
/// Its kernels become `DeviceFunction<P...>` with a signature the caller declares once (PyCUDA's
/// `prepare`), launched with the same checked `enqueue_function` as ember's own kernels; its
/// globals become DeviceBuffers.
#ifndef EMBER_RUNTIME_MODULE_H
#define EMBER_RUNTIME_MODULE_H

#include "ember/runtime/DeviceContext.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace ember {

namespace detail {
struct ModuleImpl;
/// The function `name` of `m`, declared with parameters of IR types `types` (names for messages
/// in `names`). Throws LogicError naming the function and the module's functions when it has
/// none of that name, or when the PTX declares other parameters.
std::shared_ptr<FunctionImpl> module_function(const ModuleImpl &m, const std::string &name,
                                              std::vector<ir::Type> types, std::vector<std::string> names);
/// The address and size of global `name` as a buffer of its bytes. LogicError when missing.
std::shared_ptr<RawDeviceBuffer> module_global(const ModuleImpl &m, const std::string &name);

template <class P> struct external_parameter_is_a_struct {
    static_assert(always_false<P>,
                  "get_function<P...>: a kernel of an external module takes scalars (Int32, Float32, "
                  "...) and pointers (Ptr<T>) only; ember passes a struct as one parameter per field, "
                  "which is not how C++ passes a struct by value: see ParameterType in this instantiation");
    static constexpr bool value = false;
};
template <class P, bool Report> constexpr bool check_external_param() {
    if constexpr (ReflectedStruct<P>)
        return report<Report, external_parameter_is_a_struct<ParameterType<P>>>();
    else
        return check_param<P, /*ForKernel=*/true, Report>();
}
} // namespace detail

/// A module loaded from an external image. Cheap to copy; the module stays loaded while a copy
/// or a function of it lives.
class DeviceModule {
public:
    DeviceModule() = default;
    explicit DeviceModule(std::shared_ptr<detail::ModuleImpl> impl) : impl_(std::move(impl)) {}

    /// The kernel `name`, typed by the parameters the caller declares, as PyCUDA's
    /// `get_function(name).prepare(...)`: `get_function<Ptr<float>, Int32>("scale")`. Each P is a
    /// DSL parameter type (`Value<T>` such as Int32/Float32, or `Ptr<T>`); enqueue_function then
    /// checks arguments against them at compile time. For PTX images the declared parameters
    /// are also checked against the `.entry`'s (count and sizes; LogicError on a mismatch).
    /// `param_names` (optional) name the parameters in messages.
    template <class... P>
    DeviceFunction<P...> get_function(const std::string &name, std::vector<std::string> param_names = {}) const {
        // One static_assert names the offending type (in check_external_param); nothing else.
        constexpr bool ok = (detail::check_external_param<P, false>() && ...);
        if constexpr (ok) {
            return DeviceFunction<P...>(
                detail::module_function(require("get_function"), name, {detail::param_traits<P>::type()...}, std::move(param_names)));
        } else {
            (void)(detail::check_external_param<P, true>() && ...);
            return DeviceFunction<P...>(nullptr);
        }
    }

    /// The global variable `name` (a `.global` or `.const` variable of the PTX, a `__device__` or
    /// `__constant__` one of CUDA C++) as a buffer of its bytes (cuModuleGetGlobal): copy to and
    /// from it with enqueue_copy, pass it to kernels. The memory is the module's: it stays valid
    /// while the module is loaded (the buffer keeps it so). LogicError naming the global and the
    /// module's globals when it has none of that name.
    DeviceBuffer<std::byte> get_global(const std::string &name) const;
    /// As get_global, viewed as elements of T (LogicError when the size is no multiple of T's).
    template <class T> DeviceBuffer<T> get_global(const std::string &name) const {
        std::shared_ptr<detail::RawDeviceBuffer> raw = detail::module_global(require("get_global"), name);
        if (raw->bytes() % sizeof(T) != 0) throw_global_size(name, raw->bytes(), sizeof(T));
        return DeviceBuffer<T>(raw, raw->bytes() / sizeof(T));
    }

    /// Where the image came from (ModuleImage::name()).
    const std::string &name() const;
    /// The kernels of the module as far as ember can tell: the `.entry`s of PTX, or the driver's
    /// list (CUDA 12.4+) for binaries; empty when unknown.
    std::vector<std::string> function_names() const;
    /// The `.global` and `.const` variables of PTX images (empty for binaries).
    std::vector<std::string> global_names() const;
    /// The context it is loaded into.
    DeviceContext context() const;

    explicit operator bool() const { return impl_ != nullptr; }
    const std::shared_ptr<detail::ModuleImpl> &impl() const { return impl_; }

private:
    /// The module; LogicError naming `method` when it is empty.
    const detail::ModuleImpl &require(const char *method) const;
    [[noreturn]] void throw_global_size(const std::string &name, size_t bytes, size_t elem) const;
    std::shared_ptr<detail::ModuleImpl> impl_;
};

} // namespace ember

#endif // EMBER_RUNTIME_MODULE_H
