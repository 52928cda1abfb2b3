/// \file
/// math_ulp: the largest error, in ULPs, of every function of ember's math library on the default
/// device (EMBER_API=cpu|cuda chooses), f32 and f64, against the C library: for f32 the double
/// function (the error is measured against its unrounded double value), for f64 the long double
/// (x87, 64-bit significand) one. See docs/math.md for the published numbers.
///
///     build/bench/math_ulp [--samples N] [--functions exp,log,...] [--markdown] [--seed S]
///     build/bench/math_ulp --functions exp --at -87.67 --at 0x1p-3    (values at given arguments)
///
/// Each function gets N random arguments (default 2^22) over domains that cover its whole range
/// (log-uniform magnitudes, both signs) and, more densely, where it is delicate (near 0 for expm1
/// and log1p, near 1 for log, [-pi, pi] for the fast trigonometric functions, ...), plus special
/// values (zeros, infinities, NaN, subnormals, the overflow thresholds). A result whose NaN-ness,
/// infinity or zero sign differs from the reference counts as a special-value mismatch, not as an
/// ULP error. On a GPU the same arguments also run on the CPU device, and the results that differ
/// bitwise (NaN payloads aside) are counted: ember's claim is that there are none except for the
/// fast_ variants.
#include "ember/ember.h"

#include "UlpError.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ember;
using ember::testing::Limits;
using ember::testing::ulp_error;

namespace {

template <class T> using MathKernel = Kernel<Ptr<T>, Ptr<T>, Ptr<T>, Int>;

/// out[i] = f(a[i], b[i]) for i < n.
template <class T, class F> MathKernel<T> make_kernel(const std::string &name, F f) {
    return kernel(name, {"a", "b", "out", "n"}, [f](Ptr<T> a, Ptr<T> b, Ptr<T> out, Int n) {
        auto i = global_idx.x;
        if_(i < n, [&] {
            Value<T> x = a[i];
            Value<T> y = b[i];
            out[i] = f(x, y);
        });
    });
}

/// Where a function's random arguments come from.
enum class Domain {
    Rsqrt, Cbrt, Exp, Exp2, Expm1, Log, Log1p, Pow, Trig, FastTrig, Asin, Atan, Atan2, Hyperbolic,
    Tanh, Erf, Sqrt,
};

struct Function {
    const char *name;
    int arity;
    Domain domain;
    std::function<MathKernel<float>()> kernel32;
    std::function<MathKernel<double>()> kernel64;
    double (*ref32)(double, double);
    long double (*ref64)(long double, long double);
};

// name, arity, domain, the DSL call on (x, y), the reference on (a, b).
#define EMBER_MATH_ULP_FUNCTIONS(X)                                                                \
    X(rsqrt, 1, Rsqrt, rsqrt(x), 1 / std::sqrt(a))                                                 \
    X(cbrt, 1, Cbrt, cbrt(x), std::cbrt(a))                                                        \
    X(exp, 1, Exp, exp(x), std::exp(a))                                                            \
    X(exp2, 1, Exp2, exp2(x), std::exp2(a))                                                        \
    X(expm1, 1, Expm1, expm1(x), std::expm1(a))                                                    \
    X(log, 1, Log, log(x), std::log(a))                                                            \
    X(log2, 1, Log, log2(x), std::log2(a))                                                         \
    X(log10, 1, Log, log10(x), std::log10(a))                                                      \
    X(log1p, 1, Log1p, log1p(x), std::log1p(a))                                                    \
    X(pow, 2, Pow, pow(x, y), std::pow(a, b))                                                      \
    X(sin, 1, Trig, sin(x), std::sin(a))                                                           \
    X(cos, 1, Trig, cos(x), std::cos(a))                                                           \
    X(tan, 1, Trig, tan(x), std::tan(a))                                                           \
    X(asin, 1, Asin, asin(x), std::asin(a))                                                        \
    X(acos, 1, Asin, acos(x), std::acos(a))                                                        \
    X(atan, 1, Atan, atan(x), std::atan(a))                                                        \
    X(atan2, 2, Atan2, atan2(x, y), std::atan2(a, b))                                              \
    X(sinh, 1, Hyperbolic, sinh(x), std::sinh(a))                                                  \
    X(cosh, 1, Hyperbolic, cosh(x), std::cosh(a))                                                  \
    X(tanh, 1, Tanh, tanh(x), std::tanh(a))                                                        \
    X(erf, 1, Erf, erf(x), std::erf(a))                                                            \
    X(fast_exp, 1, Exp, fast::exp(x), std::exp(a))                                                 \
    X(fast_exp2, 1, Exp2, fast::exp2(x), std::exp2(a))                                             \
    X(fast_log, 1, Log, fast::log(x), std::log(a))                                                 \
    X(fast_log2, 1, Log, fast::log2(x), std::log2(a))                                              \
    X(fast_sin, 1, FastTrig, fast::sin(x), std::sin(a))                                            \
    X(fast_cos, 1, FastTrig, fast::cos(x), std::cos(a))                                            \
    X(fast_tanh, 1, Tanh, fast::tanh(x), std::tanh(a))                                             \
    X(fast_rsqrt, 1, Rsqrt, fast::rsqrt(x), 1 / std::sqrt(a))                                      \
    X(fast_sqrt, 1, Sqrt, fast::sqrt(x), std::sqrt(a))

const std::vector<Function> &functions() {
#define EMBER_CALL(CALL) [](auto x, [[maybe_unused]] auto y) { return CALL; }
#define EMBER_ENTRY(NAME, ARITY, DOMAIN, CALL, REF)                                                \
    Function{#NAME,                                                                                \
             ARITY,                                                                                \
             Domain::DOMAIN,                                                                       \
             [] { return make_kernel<float>("ulp_" #NAME "_f32", EMBER_CALL(CALL)); },                \
             [] { return make_kernel<double>("ulp_" #NAME "_f64", EMBER_CALL(CALL)); },               \
             [](double a, double b) -> double { (void)b; return REF; },                             \
             [](long double a, long double b) -> long double { (void)b; return REF; }},
    static const std::vector<Function> all = {EMBER_MATH_ULP_FUNCTIONS(EMBER_ENTRY)};
#undef EMBER_ENTRY
#undef EMBER_CALL
    return all;
}

// --- arguments ----------------------------------------------------------------------------------


template <class T> class ArgGen {
public:
    explicit ArgGen(uint64_t seed) : rng_(seed) {}
    double uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng_); }
    bool coin() { return (rng_() & 1) != 0; }
    /// 2^u with u uniform in [lo, hi], times a mantissa in [1, 2): log-uniform magnitudes.
    T log_uniform(double lo, double hi, bool both_signs) {
        int e = static_cast<int>(std::floor(uniform(lo, hi)));
        long double v = std::ldexp(static_cast<long double>(uniform(1, 2)), e);
        T x = static_cast<T>(v);
        return both_signs && coin() ? -x : x;
    }
    /// Any finite magnitude (subnormals included), both signs when asked.
    T any(bool both_signs) { return log_uniform(Limits<T>::sub, Limits<T>::emax + 1, both_signs); }
    T small(bool both_signs) { return log_uniform(-Limits<T>::p - 12, 0, both_signs); }
    T u(double a, double b) { return static_cast<T>(uniform(a, b)); }
    /// One of `choices`, picked with probability proportional to the weights.
    T pick(std::initializer_list<std::pair<double, std::function<T()>>> choices) {
        double total = 0;
        for (auto &c : choices) total += c.first;
        double r = uniform(0, total);
        for (auto &c : choices) {
            if (r < c.first) return c.second();
            r -= c.first;
        }
        return choices.begin()->second();
    }
    std::mt19937_64 rng_;
};

template <class T> std::vector<T> special_values() {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {T(0), T(1), T(0.5), T(2), T(3), T(10), T(100), T(0.1), T(1e-10), T(1e10),
                        L::denorm_min(), L::min(), T(L::min() - L::denorm_min()), L::max(),
                        L::epsilon(), T(1) + L::epsilon(), T(1) - L::epsilon() / 2,
                        T(3.14159265358979323846), T(1.5707963267948966), T(0.6931471805599453),
                        T(8), T(27), T(1000)};
    // The overflow and underflow thresholds of the exp family, and their neighbours.
    using LD = long double;
    for (LD t : {std::log(LD(L::max())), std::log(LD(L::denorm_min())), std::log(LD(L::min())),
                 LD(L::max_exponent), LD(Limits<T>::sub - 1), LD(Limits<T>::emin)}) {
        T x = static_cast<T>(t);
        v.push_back(x);
        v.push_back(std::nextafter(x, L::infinity()));
        v.push_back(std::nextafter(x, -L::infinity()));
    }
    size_t n = v.size();
    for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
    v.push_back(-T(0));
    v.push_back(L::infinity());
    v.push_back(-L::infinity());
    v.push_back(L::quiet_NaN());
    return v;
}

/// `n` random argument pairs for `d` (the second only for functions of two arguments), then the
/// special values (all pairs of them for two arguments).
template <class T> void make_args(Domain d, size_t n, uint64_t seed, std::vector<T> &a, std::vector<T> &b) {
    using Lm = Limits<T>;
    ArgGen<T> g(seed);
    const double ln_max = std::log(static_cast<double>(std::numeric_limits<T>::max()));
    const double ln_sub = std::log(static_cast<double>(std::numeric_limits<T>::denorm_min()));
    const double ln_min = std::log(static_cast<double>(std::numeric_limits<T>::min()));
    const double pi = 3.14159265358979323846;
    a.resize(n);
    b.resize(n);
    for (size_t i = 0; i < n; ++i) {
        T x = 0, y = 0;
        switch (d) {
        case Domain::Rsqrt:
        case Domain::Sqrt:
            x = g.pick({{0.8, [&] { return g.any(false); }}, {0.2, [&] { return g.u(0, 8); }}});
            break;
        case Domain::Cbrt:
            x = g.pick({{0.8, [&] { return g.any(true); }}, {0.2, [&] { return g.u(-8, 8); }}});
            break;
        case Domain::Exp:
            x = g.pick({{0.5, [&] { return g.u(ln_sub - 1, ln_max + 1); }},
                           {0.15, [&] { return g.u(ln_sub - 1, ln_min); }},
                           {0.15, [&] { return g.u(-1, 1); }},
                           {0.2, [&] { return g.any(true); }}});
            break;
        case Domain::Exp2:
            x = g.pick({{0.5, [&] { return g.u(Lm::sub - 2, Lm::emax + 2); }},
                           {0.15, [&] { return g.u(Lm::sub - 1, Lm::emin); }},
                           {0.15, [&] { return g.u(-1, 1); }},
                           {0.2, [&] { return g.any(true); }}});
            break;
        case Domain::Expm1:
            x = g.pick({{0.4, [&] { return g.u(-(Lm::p + 8) * 0.7, ln_max + 1); }},
                           {0.3, [&] { return g.small(true); }},
                           {0.2, [&] { return g.u(-1, 1); }},
                           {0.1, [&] { return g.any(true); }}});
            break;
        case Domain::Log:
            x = g.pick({{0.5, [&] { return g.any(false); }},
                           {0.3, [&] { return g.u(0.5, 2); }},
                           {0.1, [&] { return T(1) + g.log_uniform(-Lm::p - 2, -1, true); }},
                           {0.1, [&] { return g.any(true); }}});
            break;
        case Domain::Log1p:
            x = g.pick({{0.3, [&] { return g.small(true); }},
                           {0.2, [&] { return g.u(-1, 1); }},
                           {0.3, [&] { return g.any(false); }},
                           {0.1, [&] { return T(-1) + g.log_uniform(-Lm::p - 1, -1, false); }},
                           {0.1, [&] { return g.any(true); }}});
            break;
        case Domain::Pow: {
            const double zlo = ln_sub - 2, zhi = ln_max + 2;
            double kind = g.uniform(0, 1);
            if (kind < 0.4) { // results over the whole range
                x = g.any(false);
                y = static_cast<T>(g.uniform(zlo, zhi) / std::log(static_cast<double>(x)));
            } else if (kind < 0.55) { // x near 1, large y
                x = T(1) + g.log_uniform(-Lm::p - 1, -2, true);
                y = static_cast<T>(g.uniform(zlo, zhi) / std::log(static_cast<double>(x)));
            } else if (kind < 0.7) { // negative x, integer y
                x = -g.any(false);
                double lx = std::log(std::fabs(static_cast<double>(x)));
                y = static_cast<T>(std::nearbyint(g.uniform(zlo, zhi) / lx));
            } else if (kind < 0.85) {
                x = g.any(true);
                y = g.any(true);
            } else {
                x = g.u(0, 4);
                y = g.u(-10, 10);
            }
            if (!std::isfinite(y)) y = 0;
            break;
        }
        case Domain::Trig:
            x = g.pick({{0.3, [&] { return g.any(true); }},
                           {0.3, [&] { return g.u(-pi, pi); }},
                           {0.2, [&] { return g.u(-1e4, 1e4); }},
                           {0.2, [&] { return g.log_uniform(10, Lm::emax + 1, true); }}});
            break;
        case Domain::FastTrig: x = g.u(-pi, pi); break;
        case Domain::Asin:
            x = g.pick({{0.6, [&] { return g.u(-1, 1); }},
                           {0.3, [&] { return g.small(true); }},
                           {0.1, [&] { return g.any(true); }}});
            break;
        case Domain::Atan:
            x = g.pick({{0.6, [&] { return g.any(true); }}, {0.4, [&] { return g.u(-4, 4); }}});
            break;
        case Domain::Atan2:
            if (g.coin()) {
                x = g.any(true);
                y = g.any(true);
            } else {
                x = g.u(-4, 4);
                y = g.u(-4, 4);
            }
            break;
        case Domain::Hyperbolic:
            x = g.pick({{0.5, [&] { return g.u(-ln_max - 2, ln_max + 2); }},
                           {0.3, [&] { return g.small(true); }},
                           {0.2, [&] { return g.u(-1, 1); }}});
            break;
        case Domain::Tanh:
            x = g.pick({{0.4, [&] { return g.u(-20, 20); }},
                           {0.3, [&] { return g.small(true); }},
                           {0.2, [&] { return g.u(-1, 1); }},
                           {0.1, [&] { return g.any(true); }}});
            break;
        case Domain::Erf:
            x = g.pick({{0.5, [&] { return g.u(-6, 6); }},
                           {0.3, [&] { return g.small(true); }},
                           {0.2, [&] { return g.any(true); }}});
            break;
        }
        a[i] = x;
        b[i] = y;
    }
    std::vector<T> s = special_values<T>();
    const bool binary = d == Domain::Pow || d == Domain::Atan2;
    if (!binary) {
        for (T x : s) {
            a.push_back(x);
            b.push_back(0);
        }
        return;
    }
    for (T x : s)
        for (T y : s) {
            a.push_back(x);
            b.push_back(y);
        }
    // C99 F.9.4.4's cases that the products above miss.
    const T third = T(1) / T(3);
    for (auto [x, y] : std::initializer_list<std::pair<T, T>>{{-8, third}, {-2, 3}, {-2, -3}, {-2, 0.5},
                                                             {T(-0.0), -3}, {T(-0.0), 3}, {T(-0.0), -4},
                                                             {-1, 1e30}, {2, 0.5}, {-3, 5}, {T(-0.5), -7}}) {
        a.push_back(x);
        b.push_back(y);
    }
}

// --- errors -------------------------------------------------------------------------------------

struct Result {
    double max_ulp = 0;
    size_t worst = 0; ///< index of the argument with max_ulp
    size_t special_mismatches = 0;
    size_t first_special = SIZE_MAX;
};


template <class T, class Ref> Result measure(const std::vector<T> &a, const std::vector<T> &b,
                                             const std::vector<T> &got, Ref ref, unsigned threads) {
    const size_t n = a.size();
    std::vector<Result> parts(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            Result &r = parts[t];
            for (size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
                std::optional<double> err = ulp_error(got[i], ref(a[i], b[i]));
                if (!err) {
                    if (r.special_mismatches++ == 0) r.first_special = i;
                } else if (*err > r.max_ulp) {
                    r.max_ulp = *err;
                    r.worst = i;
                }
            }
        });
    }
    for (std::thread &t : pool) t.join();
    Result all;
    for (const Result &r : parts) {
        if (r.max_ulp > all.max_ulp) {
            all.max_ulp = r.max_ulp;
            all.worst = r.worst;
        }
        all.special_mismatches += r.special_mismatches;
        all.first_special = std::min(all.first_special, r.first_special);
    }
    return all;
}

template <class T>
std::vector<T> run(const DeviceContext &ctx, const MathKernel<T> &k, const std::vector<T> &a,
                   const std::vector<T> &b) {
    const int64_t n = static_cast<int64_t>(a.size());
    auto da = ctx.enqueue_create_buffer<T>(a.size());
    auto db = ctx.enqueue_create_buffer<T>(a.size());
    auto dout = ctx.enqueue_create_buffer<T>(a.size());
    ctx.enqueue_copy(da, a.data());
    ctx.enqueue_copy(db, b.data());
    auto fn = ctx.compile_function(k);
    ctx.enqueue_function(fn, da, db, dout, n, grid_dim((n + 255) / 256), block_dim(256));
    std::vector<T> out(a.size());
    ctx.enqueue_copy(out.data(), dout);
    ctx.synchronize();
    return out;
}

template <class T> size_t bitwise_differences(const std::vector<T> &x, const std::vector<T> &y) {
    size_t d = 0;
    for (size_t i = 0; i < x.size(); ++i)
        if (!(std::isnan(x[i]) && std::isnan(y[i])) && std::memcmp(&x[i], &y[i], sizeof(T)) != 0) ++d;
    return d;
}

std::string show(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

/// What was measured for one function and type.
struct Row {
    std::string function, type;
    std::string error; ///< why nothing was measured (no implementation, ...); empty otherwise
    Result result;
    std::string worst_args;
    std::string first_special_args;
    std::optional<size_t> gpu_cpu_differences;
    double seconds = 0;
};

template <class T> MathKernel<T> kernel_of(const Function &f) {
    if constexpr (sizeof(T) == 4) return f.kernel32();
    else return f.kernel64();
}
template <class T> auto reference_of(const Function &f) {
    if constexpr (sizeof(T) == 4) return [&f](T x, T y) { return f.ref32(x, y); };
    else return [&f](T x, T y) { return f.ref64(x, y); };
}

template <class T>
Row measure_function(const Function &f, const DeviceContext &ctx, const DeviceContext *cpu, size_t samples,
                     uint64_t seed, unsigned threads) {
    Row row;
    row.function = f.name;
    row.type = sizeof(T) == 4 ? "f32" : "f64";
    auto t0 = std::chrono::steady_clock::now();
    std::vector<T> a, b;
    make_args<T>(f.domain, samples, seed, a, b);
    auto args = [&](size_t i) {
        std::string s = show(a[i]);
        if (f.arity == 2) s += ", " + show(b[i]);
        return s;
    };
    try {
        MathKernel<T> k = kernel_of<T>(f);
        std::vector<T> got = run(ctx, k, a, b);
        row.result = measure(a, b, got, reference_of<T>(f), threads);
        row.worst_args = args(row.result.worst);
        if (row.result.special_mismatches) {
            size_t i = row.result.first_special;
            row.first_special_args = args(i) + " -> " + show(got[i]);
        }
        if (cpu) row.gpu_cpu_differences = bitwise_differences(got, run(*cpu, k, a, b));
    } catch (const std::exception &e) {
        row.error = e.what();
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return row;
}

template <class T> void print_at(const Function &f, const DeviceContext &ctx, T x, T y) {
    std::vector<T> a{x}, b{y};
    T got = run(ctx, kernel_of<T>(f), a, b)[0];
    auto ref = reference_of<T>(f)(x, y);
    std::optional<double> err = ulp_error(got, ref);
    std::printf("%s_%s(%s%s) = %s (%a); reference %s; error %s ulp\n", f.name, sizeof(T) == 4 ? "f32" : "f64",
                show(x).c_str(), f.arity == 2 ? (", " + show(y)).c_str() : "", show(got).c_str(),
                static_cast<double>(got), show(static_cast<double>(ref)).c_str(),
                err ? show(*err).c_str() : "special-value mismatch");
}

/// `point` is "x" or "x,y" (anything strtod reads, hexadecimal floats included).
void print_at(const Function &f, const DeviceContext &ctx, const std::string &point) {
    size_t comma = point.find(',');
    double x = std::strtod(point.c_str(), nullptr);
    double y = comma == std::string::npos ? 0.0 : std::strtod(point.c_str() + comma + 1, nullptr);
    try {
        print_at<float>(f, ctx, static_cast<float>(x), static_cast<float>(y));
        print_at<double>(f, ctx, x, y);
    } catch (const std::exception &e) {
        std::printf("%s: %s\n", f.name, e.what());
    }
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

[[noreturn]] void usage(const char *why) {
    std::fprintf(stderr,
                 "math_ulp: %s\nusage: math_ulp [--samples N] [--functions a,b,...] [--markdown] [--seed S] "
                 "[--threads T] [--at x[,y]]...\n",
                 why);
    std::exit(2);
}

std::string ulp_cell(const Row &r) {
    if (!r.error.empty()) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", r.result.max_ulp);
    return buf;
}

} // namespace

int main(int argc, char **argv) try {
    size_t samples = size_t(1) << 22;
    uint64_t seed = 2026;
    bool markdown = false;
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::string> wanted;
    std::vector<std::string> at; // "x" or "x,y": print the selected functions there and stop
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
            return argv[++i];
        };
        if (arg == "--samples") samples = std::stoull(value());
        else if (arg == "--functions") wanted = split(value());
        else if (arg == "--markdown") markdown = true;
        else if (arg == "--seed") seed = std::stoull(value());
        else if (arg == "--threads") threads = std::max(1, std::stoi(value()));
        else if (arg == "--at") at.push_back(value());
        else usage(("unknown argument " + arg).c_str());
    }
    std::vector<const Function *> selected;
    auto is_wanted = [&](const char *name) {
        return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    };
    for (const Function &f : functions())
        if (is_wanted(f.name)) selected.push_back(&f);
    for (const std::string &w : wanted) {
        auto named = [&](const Function &f) { return w == f.name; };
        if (std::none_of(functions().begin(), functions().end(), named))
            usage(("unknown function " + w).c_str());
    }

    DeviceContext ctx;
    std::optional<DeviceContext> cpu;
    if (ctx.api() != "cpu") cpu.emplace(0, "cpu");
    std::printf("device: %s (%s, target %s); %zu random arguments per function and type, seed %llu\n",
                ctx.name().c_str(), ctx.api().c_str(), ctx.target().c_str(), samples,
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);

    if (!at.empty()) {
        for (const Function *f : selected)
            for (const std::string &point : at) print_at(*f, ctx, point);
        return 0;
    }

    std::vector<Row> rows;
    int failures = 0;
    for (const Function *f : selected) {
        for (int t = 0; t < 2; ++t) {
            Row r = t == 0 ? measure_function<float>(*f, ctx, cpu ? &*cpu : nullptr, samples, seed, threads)
                           : measure_function<double>(*f, ctx, cpu ? &*cpu : nullptr, samples, seed, threads);
            if (!r.error.empty()) {
                ++failures;
                std::printf("%-10s %s  not measured: %s\n", r.function.c_str(), r.type.c_str(),
                            r.error.c_str());
            } else {
                std::printf("%-10s %s  max %8.3f ulp at (%s)   special mismatches %zu",
                            r.function.c_str(), r.type.c_str(), r.result.max_ulp, r.worst_args.c_str(),
                            r.result.special_mismatches);
                if (r.result.special_mismatches) std::printf(" (first: %s)", r.first_special_args.c_str());
                if (r.gpu_cpu_differences) std::printf("   differs from cpu: %zu", *r.gpu_cpu_differences);
                std::printf("   [%.1f s]\n", r.seconds);
            }
            std::fflush(stdout);
            rows.push_back(std::move(r));
        }
    }

    if (markdown) {
        const bool gpu = cpu.has_value();
        std::printf("\n| function | f32 max ULP | f32 worst argument | f64 max ULP | f64 worst argument "
                    "| special mismatches (f32 / f64)%s |\n",
                    gpu ? " | results differing from the CPU device (f32 / f64)" : "");
        std::printf("| --- | --- | --- | --- | --- | ---%s |\n", gpu ? " | ---" : "");
        for (size_t i = 0; i + 1 < rows.size(); i += 2) {
            const Row &r32 = rows[i], &r64 = rows[i + 1];
            auto specials = [](const Row &r) {
                return r.error.empty() ? std::to_string(r.result.special_mismatches) : "n/a";
            };
            auto diffs = [](const Row &r) {
                return r.gpu_cpu_differences ? std::to_string(*r.gpu_cpu_differences) : "n/a";
            };
            std::printf("| `%s` | %s | %s | %s | %s | %s / %s", r32.function.c_str(), ulp_cell(r32).c_str(),
                        r32.error.empty() ? r32.worst_args.c_str() : "", ulp_cell(r64).c_str(),
                        r64.error.empty() ? r64.worst_args.c_str() : "", specials(r32).c_str(),
                        specials(r64).c_str());
            if (gpu) std::printf(" | %s / %s", diffs(r32).c_str(), diffs(r64).c_str());
            std::printf(" |\n");
        }
    }
    if (failures) std::printf("%d function/type pairs could not be measured (see above)\n", failures);
    return 0;
} catch (const std::exception &e) {
    std::fprintf(stderr, "math_ulp: %s\n", e.what());
    return 1;
}
