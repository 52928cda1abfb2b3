/// \file
/// The trigonometric family of the math library (sin, cos, tan, asin, acos, atan, atan2, sinh,
/// cosh, tanh, erf; [Note] Trigonometric family) on every api: the special values of C99 Annex F
/// bit for bit, and the error in ulp over random points of each function's whole domain against
/// the host's libm (long double for f64, double for f32), within the documented bounds.
#include "ember/compiler/IRPrinter.h"
#include "ember/ember.h"

#include "DeviceTest.h"
#include "UlpError.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ember;

namespace {

// The functions, by their column in the kernel's output.
constexpr int64_t kSin = 0, kCos = 1, kTan = 2, kAsin = 3, kAcos = 4, kAtan = 5, kAtan2 = 6,
                  kSinh = 7, kCosh = 8, kTanh = 9, kErf = 10, kNumFns = 11;
const char *const kNames[kNumFns] = {"sin",   "cos",  "tan",  "asin", "acos", "atan",
                                     "atan2", "sinh", "cosh", "tanh", "erf"};
/// The documented bound of each function, in ulp (docs/math.md).
constexpr double kBound[kNumFns] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2};

/// Every function of (x[i], y[i]) (y only for atan2) into out[i * kNumFns + f].
template <class T> auto make_trig_kernel(const char *name) {
    return kernel(name, {"x", "y", "out", "n"}, [](Ptr<T> x, Ptr<T> y, Ptr<T> out, Int n) {
        auto i = global_idx.x;
        if_(i < n, [&] {
            Value<T> a = x[i];
            Value<T> b = y[i];
            auto o = i * kNumFns;
            out[o + kSin] = sin(a);
            out[o + kCos] = cos(a);
            out[o + kTan] = tan(a);
            out[o + kAsin] = asin(a);
            out[o + kAcos] = acos(a);
            out[o + kAtan] = atan(a);
            out[o + kAtan2] = atan2(a, b);
            out[o + kSinh] = sinh(a);
            out[o + kCosh] = cosh(a);
            out[o + kTanh] = tanh(a);
            out[o + kErf] = erf(a);
        });
    });
}
const auto trig32 = make_trig_kernel<float>("trig32");
const auto trig64 = make_trig_kernel<double>("trig64");

template <class T> const auto &trig_kernel() {
    if constexpr (sizeof(T) == 4)
        return trig32;
    else
        return trig64;
}

/// The exact value of f (long double libm: ~2^-63 accurate, far below what is measured) for
/// f64 arguments, double libm for f32 ones.
template <class T> long double reference(int f, T x, T y) {
    using R = std::conditional_t<sizeof(T) == 4, double, long double>;
    R a = x, b = y;
    switch (f) {
    case kSin: return std::sin(a);
    case kCos: return std::cos(a);
    case kTan: return std::tan(a);
    case kAsin: return std::asin(a);
    case kAcos: return std::acos(a);
    case kAtan: return std::atan(a);
    case kAtan2: return std::atan2(a, b);
    case kSinh: return std::sinh(a);
    case kCosh: return std::cosh(a);
    case kTanh: return std::tanh(a);
    default: return std::erf(a);
    }
}

/// The error of `got` in ULPs of T at `want`; huge for a special-value mismatch.
template <class T> double ulp_error(T got, long double want) {
    return ember::testing::ulp_error(got, want).value_or(1e30);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class MathTrigTest : public ember::testing::DeviceTest {
  protected:
    /// out[i * kNumFns + f] = f(x[i], y[i]) on the device.
    template <class T> std::vector<T> run(const std::vector<T> &x, const std::vector<T> &y) {
        const int64_t n = static_cast<int64_t>(x.size());
        auto dx = ctx_->enqueue_create_buffer<T>(x.size());
        auto dy = ctx_->enqueue_create_buffer<T>(x.size());
        auto dout = ctx_->enqueue_create_buffer<T>(x.size() * kNumFns);
        ctx_->enqueue_copy(dx, x.data());
        ctx_->enqueue_copy(dy, y.data());
        ctx_->enqueue_function(trig_kernel<T>(), dx, dy, dout, n, grid_dim((n + 127) / 128),
                               block_dim(128));
        std::vector<T> out(x.size() * kNumFns);
        ctx_->enqueue_copy(out.data(), dout);
        ctx_->synchronize();
        return out;
    }

    template <class T> void special_values();
    template <class T> void accuracy();
};

// --- Special values ----------------------------------------------------------------------------

template <class T> struct Special {
    int f;
    T x, y, want;
    bool in_ulp = false; ///< a finite value checked against the reference, not bit for bit
};

template <class T> void MathTrigTest::special_values() {
    using L = std::numeric_limits<T>;
    const T inf = L::infinity(), nan = L::quiet_NaN(), tiny = L::denorm_min(), mn = L::min();
    const T pi = static_cast<T>(3.14159265358979323846264338327950288L);
    const T pio2 = static_cast<T>(1.57079632679489661923132169163975144L);
    const T pio4 = static_cast<T>(0.785398163397448309615660845819875721L);
    const T pi3o4 = static_cast<T>(2.35619449019234492884698253745962716L);
    const T huge = sizeof(T) == 8 ? T(711) : T(90);    // sinh, cosh overflow
    const T big = sizeof(T) == 8 ? T(710.4) : T(89.4); // they do not yet
    std::vector<Special<T>> cases;
    for (T s : {T(1), T(-1)}) {
        const T z = s * T(0);
        cases.insert(cases.end(), {
                                      {kSin, z, 1, z},
                                      {kSin, s * inf, 1, nan},
                                      {kSin, s * tiny, 1, s * tiny},
                                      {kSin, s * mn, 1, s * mn},
                                      {kCos, z, 1, 1},
                                      {kCos, s * inf, 1, nan},
                                      {kCos, s * tiny, 1, 1},
                                      {kTan, z, 1, z},
                                      {kTan, s * inf, 1, nan},
                                      {kTan, s * tiny, 1, s * tiny},
                                      {kAsin, z, 1, z},
                                      {kAsin, s, 1, s * pio2},
                                      {kAsin, s * T(1.0000001), 1, nan},
                                      {kAsin, s * inf, 1, nan},
                                      {kAsin, s * tiny, 1, s * tiny},
                                      {kAcos, z, 1, pio2},
                                      {kAcos, s * T(2), 1, nan},
                                      {kAcos, s * inf, 1, nan},
                                      {kAtan, z, 1, z},
                                      {kAtan, s * inf, 1, s * pio2},
                                      {kAtan, s * tiny, 1, s * tiny},
                                      {kAtan, s * L::max(), 1, s * pio2},
                                      // atan2: C99 F.9.1.4, every row.
                                      {kAtan2, z, T(-0.0), s * pi},
                                      {kAtan2, z, T(0), z},
                                      {kAtan2, z, T(-3), s * pi},
                                      {kAtan2, z, T(3), z},
                                      {kAtan2, z, -tiny, s * pi},
                                      {kAtan2, z, tiny, z},
                                      {kAtan2, s * T(2), T(0), s * pio2},
                                      {kAtan2, s * T(2), T(-0.0), s * pio2},
                                      {kAtan2, s * tiny, T(-0.0), s * pio2},
                                      {kAtan2, s * T(2), -inf, s * pi},
                                      {kAtan2, s * T(2), inf, z},
                                      {kAtan2, s * L::max(), inf, z},
                                      {kAtan2, s * inf, T(2), s * pio2},
                                      {kAtan2, s * inf, T(-2), s * pio2},
                                      {kAtan2, s * inf, T(0), s * pio2},
                                      {kAtan2, s * inf, -inf, s * pi3o4},
                                      {kAtan2, s * inf, inf, s * pio4},
                                      {kAtan2, s * T(5), T(5), s * pio4},
                                      {kAtan2, s * T(5), T(-5), s * pi3o4},
                                      {kAtan2, s * L::max(), L::max(), s * pio4},
                                      {kAtan2, s * tiny, tiny, s * pio4},
                                      {kAtan2, s * tiny, L::max(), z},
                                      {kAtan2, s * L::max(), tiny, s * pio2},
                                      {kAtan2, nan, s, nan},
                                      {kAtan2, s, nan, nan},
                                      {kAtan2, s * inf, nan, nan},
                                      {kSinh, z, 1, z},
                                      {kSinh, s * inf, 1, s * inf},
                                      {kSinh, s * tiny, 1, s * tiny},
                                      {kSinh, s * huge, 1, s * inf},
                                      {kCosh, z, 1, 1},
                                      {kCosh, s * inf, 1, inf},
                                      {kCosh, s * tiny, 1, 1},
                                      {kCosh, s * huge, 1, inf},
                                      {kTanh, z, 1, z},
                                      {kTanh, s * inf, 1, s},
                                      {kTanh, s * T(30), 1, s},
                                      {kTanh, s * L::max(), 1, s},
                                      {kTanh, s * tiny, 1, s * tiny},
                                      {kErf, z, 1, z},
                                      {kErf, s * inf, 1, s},
                                      {kErf, s * T(6.5), 1, s},
                                      {kErf, s * L::max(), 1, s},
                                      {kErf, s * tiny, 1, s * tiny},
                                  });
    }
    // Finite although e^x alone overflows.
    cases.insert(cases.end(), {{kAcos, T(1), 1, T(0)},
                               {kAcos, T(-1), 1, pi},
                               {kCosh, big, 1, 0, true},
                               {kSinh, big, 1, 0, true},
                               {kSinh, -big, 1, 0, true}});
    for (int f = 0; f < kNumFns; ++f) cases.push_back({f, nan, 1, nan});
    std::vector<T> x, y;
    for (const auto &c : cases) {
        x.push_back(c.x);
        y.push_back(c.y);
    }
    std::vector<T> out = run(x, y);
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto &c = cases[i];
        T got = out[i * kNumFns + c.f];
        std::ostringstream what;
        what.precision(L::max_digits10);
        what << kNames[c.f] << "(" << c.x << (c.f == kAtan2 ? ", " + std::to_string(c.y) : "")
             << ") = " << got;
        if (c.in_ulp) {
            EXPECT_TRUE(std::isfinite(got)) << what.str();
            EXPECT_LE(ulp_error(got, reference(c.f, c.x, c.y)), kBound[c.f]) << what.str();
        } else if (std::isnan(c.want)) {
            EXPECT_TRUE(std::isnan(got)) << what.str() << ", want NaN";
        } else {
            EXPECT_TRUE(same_bits(got, c.want)) << what.str() << ", want " << c.want;
        }
    }
}

TEST_P(MathTrigTest, Float32SpecialValuesFollowAnnexF) { special_values<float>(); }
TEST_P(MathTrigTest, Float64SpecialValuesFollowAnnexF) { special_values<double>(); }

// --- Accuracy ----------------------------------------------------------------------------------

/// Points of f's domain: log-uniform magnitudes over [2^lo, 2^hi] (both signs), some of them
/// in the part of the domain where the function's reduction or formula changes.
template <class T> std::vector<T> points(int f, std::mt19937_64 &rng, size_t n) {
    using L = std::numeric_limits<T>;
    const bool f64 = sizeof(T) == 8;
    auto log_uniform = [&](double lo, double hi) {
        double v = std::exp2(std::uniform_real_distribution<double>(lo, hi)(rng));
        T t = static_cast<T>(v);
        if (!std::isfinite(t)) t = L::max();
        return (rng() & 1) ? t : -t;
    };
    const double emin = L::min_exponent - L::digits, emax = L::max_exponent;
    std::vector<T> v;
    for (size_t i = 0; i < n; ++i) {
        switch (f) {
        case kSin:
        case kCos:
        case kTan:
            // Mostly moderate arguments; a quarter beyond the Cody-Waite range; some tiny.
            v.push_back(i % 4 == 0   ? log_uniform(17, emax)
                        : i % 8 == 1 ? log_uniform(emin, -10)
                                     : log_uniform(-10, 20));
            break;
        case kAsin:
        case kAcos:
            v.push_back(i % 2 ? log_uniform(emin, 0)
                              : static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(rng)));
            break;
        case kAtan:
        case kAtan2: v.push_back(i % 2 ? log_uniform(emin, emax) : log_uniform(-8, 8)); break;
        case kSinh:
        case kCosh:
            v.push_back(i % 2 ? log_uniform(emin, f64 ? 9.48 : 6.49)
                              : log_uniform(-3, 4)); // up to overflow
            break;
        case kTanh: v.push_back(i % 2 ? log_uniform(emin, 5) : log_uniform(-6, 3)); break;
        default: v.push_back(i % 2 ? log_uniform(emin, 3) : log_uniform(-3, 2)); break; // erf
        }
    }
    return v;
}

/// Arguments that are hard for the trigonometric reduction: the largest values, powers of ten,
/// the closest values of the type to multiples of pi/2 (found by search: x - k pi/2 is about
/// 2^-61 / 2^-29 of x) and values next to multiples of pi/2.
template <class T> std::vector<T> hard_trig_arguments() {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {L::max(),         T(1e22),       T(1e30),      T(1e38),
                        T(3.4e38),        T(1e10),       T(1e6),       T(65536),
                        T(131072),        T(131071.99),  T(105414.35), T(52516.4336),
                        T(21999384600.0), T(252.898209), T(2238.38477)};
    if (sizeof(T) == 8) {
        for (double d : {1e300, 1e200, 1e100, 1e50, 0x1.6ac5b262ca1ffp+849, 0x1p1023,
                         0x1.fffffffffffffp+27, 0x1p28, 268435456.5})
            v.push_back(static_cast<T>(d));
    }
    for (long double k : {1.0L, 2.0L, 3.0L, 4.0L, 10.0L, 100.0L, 1000.0L, 12345.0L, 1e5L, 1e6L,
                          1e7L, 1e9L, 1e12L}) {
        T c = static_cast<T>(k * 1.57079632679489661923132169163975144L);
        v.insert(v.end(), {c, std::nextafter(c, T(0)), std::nextafter(c, L::infinity())});
    }
    size_t n = v.size();
    for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
    return v;
}

template <class T> void MathTrigTest::accuracy() {
    constexpr size_t kPerFn = 4000;
    std::mt19937_64 rng(sizeof(T));
    // Input i belongs to function i / kPerFn; atan2's y is another point of atan's domain.
    std::vector<T> x, y;
    std::vector<int> fn;
    for (int f = 0; f < kNumFns; ++f) {
        std::vector<T> a = points<T>(f, rng, kPerFn), b = points<T>(kAtan2, rng, kPerFn);
        if (f == kSin || f == kCos || f == kTan) {
            std::vector<T> h = hard_trig_arguments<T>();
            std::copy(h.begin(), h.end(), a.begin());
        }
        x.insert(x.end(), a.begin(), a.end());
        y.insert(y.end(), b.begin(), b.end());
        fn.insert(fn.end(), kPerFn, f);
    }
    std::vector<T> out = run(x, y);
    for (int f = 0; f < kNumFns; ++f) {
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            if (fn[i] != f) continue;
            double e = ulp_error(out[i * kNumFns + f], reference(f, x[i], y[i]));
            if (e > worst) worst = e, at = i;
        }
        std::ostringstream where;
        where << std::hexfloat << "x = " << x[at];
        if (f == kAtan2) where << ", y = " << y[at];
        where << ": got " << out[at * kNumFns + f] << ", want "
              << static_cast<double>(reference(f, x[at], y[at]));
        EXPECT_LE(worst, kBound[f])
            << kNames[f] << " f" << 8 * sizeof(T) << ": " << worst << " ulp at " << where.str()
            << " (max over " << kPerFn << " points)";
    }
}

TEST_P(MathTrigTest, Float32ErrorsAreWithinTheirBounds) { accuracy<float>(); }
TEST_P(MathTrigTest, Float64ErrorsAreWithinTheirBounds) { accuracy<double>(); }

// --- f16 ---------------------------------------------------------------------------------------

// The DSL has no f16 values yet: the kernel comes from the textual IR.
const char *const kSinF16 = R"(
kernel @sin_f16(%in: ptr<global f32>, %out: ptr<global f32>, %n: i64) {
  if (thread_idx.x < %n) {
    %out[thread_idx.x] = cast<f32>(sin(cast<f16>(%in[thread_idx.x])))
  }
}
)";

TEST_P(MathTrigTest, Float16ComputesInFloat32) {
    ir::Module mod = ir::parse_module(kSinF16, "sin_f16.eir");
    auto info = std::make_shared<detail::KernelInfo>();
    info->ir = mod.kernels.at(0);
    info->param_names = {"in", "out", "n"};
    Kernel<Ptr<float>, Ptr<float>, Int> k(info);
    // Values of f16 (max 65504; 2^-24 the smallest subnormal).
    std::vector<float> in = {0.0f,    -0.0f,    0.5f,      -1.5f,    3.140625f, 100.0f,
                             1000.0f, 65504.0f, -65504.0f, 0x1p-24f, 0x1p-14f,  0.333251953125f};
    auto din = ctx_->enqueue_create_buffer<float>(in.size());
    auto dout = ctx_->enqueue_create_buffer<float>(in.size());
    ctx_->enqueue_copy(din, in.data());
    auto fn = ctx_->compile_function(k);
    ctx_->enqueue_function(fn, din, dout, static_cast<int64_t>(in.size()), grid_dim(1),
                           block_dim(32));
    std::vector<float> out(in.size());
    ctx_->enqueue_copy(out.data(), dout);
    ctx_->synchronize();
    for (size_t i = 0; i < in.size(); ++i) {
        double want = std::sin(static_cast<double>(in[i]));
        // One f16 ulp at want (2^-24 below the normal range).
        int e = 0;
        std::frexp(want, &e);
        double ulp = std::ldexp(1.0, std::max(e - 1, -14) - 10);
        EXPECT_LE(std::fabs(out[i] - want), ulp)
            << "sin(f16 " << in[i] << ") = " << out[i] << ", want " << want;
        if (want == 0) {
            EXPECT_EQ(std::signbit(out[i]), std::signbit(in[i])) << "sin(" << in[i] << ")";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllApis, MathTrigTest, ember::testing::all_apis(),
                         ember::testing::api_name);

} // namespace
