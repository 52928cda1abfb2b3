/// \file
/// `print(...)` inside kernels, as Mojo's: values (any scalar, traced or C++), string literals,
/// `sep(...)` and `end(...)`:
///
///     print(block_idx.x, thread_idx.x, global_idx.x, sep("\t"));
///
/// Each call prints one line per thread ([Note] IR semantics: Print). On NVIDIA GPUs the output
/// appears at the next synchronisation.
#ifndef EMBER_DSL_PRINT_H
#define EMBER_DSL_PRINT_H

#include "ember/dsl/Value.h"

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

/// The separator between printed items (default " ").
struct PrintSep {
    std::string text;
};
/// What follows the printed items (default "\n").
struct PrintEnd {
    std::string text;
};
inline PrintSep sep(std::string text) { return {std::move(text)}; }
inline PrintEnd end(std::string text) { return {std::move(text)}; }

namespace detail {
class PrintBuilder {
public:
    void add(const PrintSep &s) { sep_ = s.text; }
    void add(const PrintEnd &e) { end_ = e.text; }
    void add(std::string_view text) { items_.push_back({ir::Expr(), std::string(text)}); }
    void add(const char *text) { add(std::string_view(text)); }
    void add(const std::string &text) { add(std::string_view(text)); }
    template <Traced X> void add(const X &x) {
        Value<traced_t<X>> v = x.value();
        items_.push_back({v.expr(), {}});
        trace_ = merge_trace(trace_, v.trace());
    }
    template <HostScalar X> void add(const X &x) {
        using S = typename DevicePassableScalar<std::remove_cvref_t<X>>::type;
        items_.push_back({host_constant<S>(static_cast<S>(x), std::source_location::current()), {}});
    }
    void emit(const std::source_location &loc);

private:
    template <class X> struct DevicePassableScalar {
        using type = std::conditional_t<std::is_same_v<X, long long>, int64_t,
                                        std::conditional_t<std::is_same_v<X, unsigned long long>, uint64_t, X>>;
    };
    std::vector<ir::PrintItem> items_;
    std::string sep_ = " ", end_ = "\n";
    uint32_t trace_ = 0;
};
} // namespace detail

/// Prints its arguments from every thread that runs it (a statement of the kernel).
template <class... A> struct print {
    print(const A &...args, std::source_location loc = std::source_location::current()) {
        detail::PrintBuilder b;
        (b.add(args), ...);
        b.emit(loc);
    }
};
template <class... A> print(const A &...) -> print<A...>;

} // namespace ember

#endif // EMBER_DSL_PRINT_H
