// The trigonometric, hyperbolic and error-function family of the math library ([Note] Math
// library in MathLib.h): sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, erf.
//
// [Note] Trigonometric family
// ===========================
// Every function keeps its intermediate results as double-word values (hi + lo, an unevaluated
// sum of two numbers of the function's type) until one final addition or division, so that the
// result is rounded about once: the measured errors stay below 1 ulp (erf: 2 ulp), in f32 and in
// f64 alike. f32 functions use f32 and integer arithmetic only (f64 runs at 1/64 rate on most
// GPUs).
//
// * sin, cos, tan: x = k pi/2 + r with |r| <= pi/4, r double-word. Cody-Waite with a three-part
//   pi/2 (fma, so k * part is exact) below 2^17 (f32) / 2^28 (f64); above, and only there (an
//   if_else: rare), Payne-Hanek: the bits of 2/pi from the exponent of x on, selected among
//   64-bit immediates, times the integer mantissa in 32-bit limbs, give the quadrant and the
//   fraction to 128 bits or more, whatever the size of x. sin and cos of r are polynomials; tan
//   is sin r / cos r (or -cos r / sin r) as a double-word division.
// * asin, acos: u + u^3 P(u^2) for |x| <= 1/2; above, asin(x) = pi/2 - 2 asin(sqrt((1-x)/2))
//   with the square root as a double-word.
// * atan, atan2: one core on (n, d) = (min, max) of |y|, |x|: t = (n - c d) / (d + c n) with
//   c in {0, 1/2, 1} (exact numerator, double-word denominator and quotient), then
//   atan(c) + atan(t), placed in its octant by +-t around 0, pi/2 or pi. atan(x) = atan2(x, 1).
// * sinh, cosh, tanh: a private double-word exponential (exp_core: e^y = 2^k (p_hi + p_lo));
//   cosh = 2^(k-1) (p + 2^-2k / p), sinh likewise (a polynomial below 0.35, where that would
//   cancel), tanh = -m / (2 + m) with m = e^(-2|x|) - 1. Scaling by 2^(k-1) last keeps cosh(710)
//   finite in f64. (The other family's expm1 is not used: a double-word core here is what gets
//   these below 1 ulp, and it keeps the two families independent.)
// * erf: x + x E(x^2) below 3/4; above, 1 - e^(-x^2) h(t) with t = (x - 1) / (x + 1) and h a
//   polynomial fitted to erfc(x) e^(x^2) for the absolute error of erfc.
//
// Polynomial coefficients: scripts/math_trig_coeffs.py (Remez on the error of the final
// formula, coefficients rounded to the type, lowest degree first). Constants split into parts:
// the same script, `constants` and `2/pi`.
#include "MathBuilder.h"

#include <vector>

namespace ember::detail::math {
namespace {

/// An unevaluated sum hi + lo.
struct DW {
    V hi, lo;
};

/// The f64 or the f32 value of a constant.
double pick(MathBuilder &m, double f64, double f32) { return m.is_f64() ? f64 : f32; }
/// The f64 or the f32 coefficient set.
template <size_t N64, size_t N32>
llvm::ArrayRef<double> coeffs(MathBuilder &m, const double (&f64)[N64], const double (&f32)[N32]) {
    return m.is_f64() ? llvm::ArrayRef<double>(f64) : llvm::ArrayRef<double>(f32);
}

/// (n.hi + n.lo) / (d.hi + d.lo), rounded once (up to the error of the double-words): the
/// quotient q of the heads plus the remainder's correction.
V div_dw(MathBuilder &m, DW n, DW d) {
    V q = n.hi / d.hi;
    V rem = m.fma(-q, d.hi, n.hi) + (n.lo - q * d.lo);
    return q + rem / d.hi;
}

// --- sin, cos, tan --------------------------------------------------------------------------

// sin r = r - r^3/6 + r^5 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4:
// math_trig_coeffs.py sin / cos (final relative error 2^-67.3 / 2^-63.9 for f64, 2^-36.2 /
// 2^-33.0 for f32). -1/6 is applied as a double-word: r^3/6 is up to a tenth of sin r.
constexpr double kSin64[] = {0x1.111111111110fp-7,  -0x1.a01a01a01944dp-13,
                             0x1.71de3a53e0a26p-19, -0x1.ae6453572ccbep-26,
                             0x1.6120ff430ea2dp-33, -0x1.aad5fdc33734dp-41};
constexpr double kSin32[] = {0x1.11110ep-7, -0x1.a01362p-13, 0x1.6da1cp-19};
constexpr double kCos64[] = {0x1.555555555554bp-5,  -0x1.6c16c16c15015p-10,
                             0x1.a01a019c8f255p-16, -0x1.27e4f7f191621p-22,
                             0x1.1ee9dbcf15ccfp-29, -0x1.8fa684986a8dep-37};
constexpr double kCos32[] = {0x1.55554ap-5, -0x1.6c0c28p-10, 0x1.99e80cp-16};

// pi/2 in three parts, each the rest of the previous ones rounded to the type (the first two
// exact with fma against k < 2^24); pi/2 - sum is 2^-76.3 (f32) / 2^-163.6 (f64).
constexpr double kPio2F64[] = {0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54,
                               -0x1.f1976b7ed8fbcp-110};
constexpr double kPio2F32[] = {0x1.921fb6p+0, -0x1.777a5cp-25, -0x1.ee59dap-50};
double pio2(MathBuilder &m, int part) { return m.is_f64() ? kPio2F64[part] : kPio2F32[part]; }

// The binary expansion of 2/pi in 64-bit words, most significant first, after one word of
// zeros (the integer part): word j holds bits 64(j-1)+1 .. 64j after the binary point.
// math_trig_coeffs.py 2/pi. f64 needs all 20, f32 the first 5.
constexpr uint64_t kTwoOverPi[] = {
    0x0000000000000000, 0xA2F9836E4E441529, 0xFC2757D1F534DDC0, 0xDB6295993C439041,
    0xFE5163ABDEBBC561, 0xB7246E3A424DD2E0, 0x06492EEA09D1921C, 0xFE1DEB1CB129A73E,
    0xE88235F52EBB4484, 0xE99C7026B45F7E41, 0x3991D639835339F4, 0x9C845F8BBDF9283B,
    0x1FF897FFDE05980F, 0xEF2F118B5A0A6D1F, 0x6D367ECF27CB09B7, 0x4F463F669E5FEA2D,
    0x7527BAC7EBE5F17B, 0x3D0739F78A5292EA, 0x6BFB5FB11F8D5D08, 0x56033046FC7B6BAB};

/// Below this |x|, Cody-Waite: with k < 2^16.4 (f32) the three-part pi/2 leaves an absolute
/// error under 2^-55, against |r| >= 2^-28 for every f32 below it (an exhaustive search); f64:
/// 2^-130 against the 2^-61 of the closest double to a multiple of pi/2.
double cody_waite_limit(MathBuilder &m) { return pick(m, 0x1p28, 0x1p17); }

/// The quadrant (ity, 0..3) and r (double-word) of ax = |x| >= cody_waite_limit or inf:
/// Payne-Hanek. ax = mant 2^e with an integer mant (24 or 53 bits); the bits of 2/pi of weight
/// 2^-(e-2) and more add multiples of 4 to ax 2/pi, so only the window of 2/pi from bit e-1 on
/// matters. mant times that window (128 bits for f32, 192 for f64), modulo 2^width, is
/// ax 2/pi mod 4 in fixed point: the top 2 bits the quadrant, the rest the fraction, accurate
/// to 2^-102 (f32) / 2^-137 (f64) and taken with 48 / 106 significant bits: relative errors
/// below 2^-47 / 2^-75 even for the smallest fractions of the type (about 2^-31 / 2^-62).
std::vector<V> payne_hanek(MathBuilder &m, V ax) {
    const bool f64 = m.is_f64();
    const int mb = m.mantissa_bits(), bias = m.exponent_bias();
    const int words = f64 ? 3 : 2;  // of the window
    const int table = f64 ? 20 : 5; // words of kTwoOverPi reachable
    auto u64 = [&](uint64_t v) { return m.int_const(64, v); };
    V bits = m.zext_or_trunc(m.as_int(ax), 64);
    V biased = m.lshr(bits, mb);
    V mant = (bits & u64((uint64_t(1) << mb) - 1)) | u64(uint64_t(1) << mb);
    // The window starts at bit e - 1 after the binary point (bit i of weight 2^-i, i >= 1),
    // e = biased - bias - mb: bit j0 = e - 1 + 63 of the table counted from 0 at its top (the
    // first word is zeros); j0 >= 0 for ax >= 2^(mb - 62).
    V j0 = biased - u64(uint64_t(bias + mb - 62));
    V w0 = m.lshr(j0, 6), sh = j0 & u64(63);
    std::vector<V> t; // the table words w0 .. w0 + words
    for (int i = 0; i <= words; ++i) {
        V idx = w0 + u64(uint64_t(i));
        V v = u64(0);
        for (int j = 1; j < table; ++j)
            v = m.select(idx == u64(uint64_t(j)), u64(kTwoOverPi[j]), v);
        t.push_back(v);
    }
    // The window as 32-bit limbs, least significant first.
    std::vector<V> win;
    for (int i = words - 1; i >= 0; --i) {
        V wv = m.fshl(t[i], t[i + 1], sh);
        win.push_back(wv & u64(0xFFFFFFFF));
        win.push_back(m.lshr(wv, 32));
    }
    std::vector<V> a = {mant & u64(0xFFFFFFFF), m.lshr(mant, 32)};
    if (!f64) a.pop_back(); // 24 bits
    // Schoolbook product modulo 2^(64 words): columns of 32-bit halves, then the carries.
    const size_t nl = win.size();
    std::vector<V> col(nl, u64(0));
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; i + j < nl; ++j) {
            V p = a[i] * win[j];
            col[i + j] = col[i + j] + (p & u64(0xFFFFFFFF));
            if (i + j + 1 < nl) col[i + j + 1] = col[i + j + 1] + m.lshr(p, 32);
        }
    std::vector<V> pw; // 64-bit words of the product, least significant first
    V carry = u64(0), low = u64(0);
    for (size_t j = 0; j < nl; ++j) {
        V c = col[j] + carry;
        carry = m.lshr(c, 32);
        V limb = c & u64(0xFFFFFFFF);
        if (j % 2 == 0)
            low = limb;
        else
            pw.push_back(low | (limb << u64(32)));
    }
    V top = pw.back();
    // Quadrant rounded to nearest; the fraction f = (product << 2) in [0, 1), taken as f - 1
    // when >= 1/2 (one's complement: 2^-width off, far below what matters).
    V q = (m.lshr(top, 62) + (m.lshr(top, 61) & u64(1))) & u64(3);
    std::vector<V> f; // most significant first
    for (int i = words - 1; i >= 0; --i)
        f.push_back(i > 0 ? m.fshl(pw[i], pw[i - 1], u64(2)) : pw[0] << u64(2));
    V neg = f[0] < u64(0);
    V flip = f[0] >> u64(63);
    for (V &x : f) x = x ^ flip;
    // Normalise: |f| >= 2^-62 for every input of the type, so its leading one is in f[0].
    V s = m.clz(f[0]);
    V hi = m.fshl(f[0], f[1], s);
    V lo = m.fshl(f[1], words > 2 ? f[2] : u64(0), s);
    // |f| = (hi + lo 2^-64) 2^(-64-s), as fh + fl.
    V si = m.zext_or_trunc(s, f64 ? 64 : 32);
    V fh, fl;
    if (f64) {
        V h = m.to_float(m.lshr(hi, 11));                                  // exact
        V l = m.to_float(((hi & u64(0x7FF)) << u64(52)) | m.lshr(lo, 12)); // rounded
        fh = h * m.pow2i(-53 - si);
        fl = l * m.pow2i(-116 - si);
    } else {
        V h = m.to_float(m.lshr(hi, 40));                     // exact
        V l = m.to_float(m.lshr(hi & u64(0xFFFFFFFFFF), 16)); // exact
        fh = h * m.pow2i(-24 - si);
        fl = l * m.pow2i(-48 - si);
    }
    // r = f pi/2 as a double-word.
    V c_hi = m.f(pick(m, 0x1.921fb54442d18p+0, 0x1.921fb6p+0));
    V c_lo = m.f(pick(m, 0x1.1a62633145c07p-54, -0x1.777a5cp-25));
    V rh = fh * c_hi;
    V rl = m.fma(fh, c_hi, -rh) + (fh * c_lo + fl * c_hi);
    auto [r_hi, r_lo] = m.fast_two_sum(rh, rl);
    return {m.zext_or_trunc(q, f64 ? 64 : 32), m.select(neg, -r_hi, r_hi),
            m.select(neg, -r_lo, r_lo)};
}

/// x = (4n + q) pi/2 + r for ax = |x|: the quadrant q (ity, 0..3) and r = hi + lo, |r| <= pi/4
/// (up to a rounding). NaN gives garbage (the callers select NaN); inf takes the Payne-Hanek
/// path, whose garbage is defined too.
std::pair<V, DW> reduce_pio2(MathBuilder &m, V ax) {
    V limit = m.f(cody_waite_limit(m));
    // Cody-Waite on ax where it applies (0 elsewhere, so that the conversions stay defined).
    V xc = m.select(ax < limit, ax, m.f(0));
    V k = m.rint(xc * pick(m, 0x1.45f306dc9c883p-1, 0x1.45f306p-1));
    V r1 = m.fma(-k, m.f(pio2(m, 0)), xc); // exact
    auto [p_hi, p_lo] = m.two_prod(k, m.f(pio2(m, 1)));
    auto [s, e] = m.two_sum(r1, -p_hi);
    V lo = m.fma(-k, m.f(pio2(m, 2)), e - p_lo);
    auto [r_hi, r_lo] = m.fast_two_sum(s, lo);
    V q = m.to_int(k) & 3;
    auto huge = [&] { return payne_hanek(m, ax); };
    auto moderate = [&] { return std::vector<V>{q, r_hi, r_lo}; };
    std::vector<V> out = m.if_else_values(ax >= limit, huge, moderate);
    return {out[0], DW{out[1], out[2]}};
}

/// sin r as hi + lo for the reduced r: r.hi - r.hi^3/6 with r.hi^3 and -1/6 as double-words,
/// one fast_two_sum; the rest (r^5 S, lo cos r) is small enough for plain arithmetic.
DW sin_kernel(MathBuilder &m, DW r) {
    auto [zh, zl] = m.two_prod(r.hi, r.hi);
    auto [p, pe] = m.two_prod(r.hi, zh); // r.hi^3 = p + pe + r.hi zl
    V p_lo = m.fma(r.hi, zl, pe);
    const double c_hi = pick(m, -0x1.5555555555555p-3, -0x1.555556p-3);
    const double c_lo = pick(m, -0x1.5555555555555p-57, 0x1.555556p-28);
    auto [q, qe] = m.two_prod(p, m.f(c_hi)); // -r.hi^3/6 = q + q_lo
    V q_lo = qe + m.fma(p, m.f(c_lo), p_lo * c_hi);
    auto [s, e] = m.fast_two_sum(r.hi, q);
    V rest = m.fma(p * zh, m.poly(zh, coeffs(m, kSin64, kSin32)), m.fma(-0.5 * zh, r.lo, r.lo));
    return DW{s, e + (q_lo + rest)};
}

/// cos r as hi + lo: 1 - z/2 rounded with its error kept (z = r.hi^2 exactly, as zh + zl).
DW cos_kernel(MathBuilder &m, DW r) {
    auto [zh, zl] = m.two_prod(r.hi, r.hi);
    V hz = 0.5 * zh;
    V w = 1.0 - hz;
    V tail = (((1.0 - w) - hz) - 0.5 * zl) +
             m.fma(zh * zh, m.poly(zh, coeffs(m, kCos64, kCos32)), -(r.hi * r.lo));
    return DW{w, tail};
}

/// NaN for inf, x itself (a quiet NaN) for NaN, `v` otherwise.
V nan_unless_finite(MathBuilder &m, V x, V v) { return m.select(m.isfinite(x), v, x - x); }

V impl_sin(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    auto [q, r] = reduce_pio2(m, m.abs(x));
    DW s = sin_kernel(m, r), c = cos_kernel(m, r);
    V v = m.select((q & 1) != 0, c.hi + c.lo, s.hi + s.lo);
    v = m.select((q & 2) != 0, -v, v);
    v = m.select(m.signbit(x), -v, v);
    return nan_unless_finite(m, x, v);
}

V impl_cos(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    auto [q, r] = reduce_pio2(m, m.abs(x));
    DW s = sin_kernel(m, r), c = cos_kernel(m, r);
    V v = m.select((q & 1) != 0, s.hi + s.lo, c.hi + c.lo);
    v = m.select(((q + 1) & 2) != 0, -v, v);
    return nan_unless_finite(m, x, v);
}

V impl_tan(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    auto [q, r] = reduce_pio2(m, m.abs(x));
    DW s = sin_kernel(m, r), c = cos_kernel(m, r);
    auto [sh, sl] = m.fast_two_sum(s.hi, s.lo);
    auto [ch, cl] = m.fast_two_sum(c.hi, c.lo);
    V odd = (q & 1) != 0;
    // tan = sin r / cos r in even quadrants, -cos r / sin r in odd ones.
    DW num{m.select(odd, ch, sh), m.select(odd, cl, sl)};
    DW den{m.select(odd, sh, ch), m.select(odd, sl, cl)};
    V v = div_dw(m, num, den);
    v = m.select(odd != m.signbit(x), -v, v);
    return nan_unless_finite(m, x, v);
}

// --- asin, acos -----------------------------------------------------------------------------

// asin u = u + u^3 P(u^2) on |u| <= 1/2: math_trig_coeffs.py asin (final relative error
// 2^-59.8 / 2^-31.6). The top f64 coefficients alternate in sign: they fit the singularity of
// asin at 1 and weigh u^20 <= 2^-20 there.
constexpr double kAsin64[] = {0x1.5555555555577p-3, 0x1.333333332e13p-4,  0x1.6db6db721278ap-5,
                              0x1.f1c71a94ebf76p-6, 0x1.6e8bdee10b5abp-6, 0x1.1c49f04e615c6p-6,
                              0x1.ca1f8ecd94677p-7, 0x1.75857e79c0706p-7, 0x1.613ccade3bc4ep-7,
                              0x1.e5f1e1ec56deep-9, 0x1.639d8a3d5db34p-6, -0x1.57ff011e2dd43p-6,
                              0x1.0b473487287bfp-5};
constexpr double kAsin32[] = {0x1.55554cp-3, 0x1.3338acp-4, 0x1.6ca754p-5,
                              0x1.04d2cep-5, 0x1.d52724p-7, 0x1.34c204p-5};

constexpr double kPiF64[] = {0x1.921fb54442d18p+1, 0x1.1a62633145c07p-53};
constexpr double kPiF32[] = {0x1.921fb6p+1, -0x1.777a5cp-24};

/// asin(x) or acos(x): K + a asin(u) with u = x (|x| <= 1/2) or u = sqrt((1 - |x|)/2), which
/// is exact as its square z; (K, a) from the identities asin x = pi/2 - 2 asin u,
/// acos x = pi/2 - asin x = 2 asin u (x > 0) = pi - 2 asin u (x < 0).
V asin_acos(MathBuilder &m, V x, bool acos) {
    V ax = m.abs(x);
    V big = ax > 0.5;        // false for NaN: u = NaN
    V zb = (1.0 - ax) * 0.5; // exact; < 0 (sqrt NaN) for |x| > 1
    V sh = m.sqrt(zb);
    V sl = m.select(zb > 0.0, m.fma(-sh, sh, zb) / (sh + sh), m.f(0));
    V u = m.select(big, sh, acos ? x : ax);
    V ul = m.select(big, sl, m.f(0));
    V z = m.select(big, zb, x * x);
    V tail = m.fma(u * z, m.poly(z, coeffs(m, kAsin64, kAsin32)), ul); // asin(u + ul) - u
    const double pio2_hi = pio2(m, 0), pio2_lo = pio2(m, 1);
    const double pi_hi = pick(m, kPiF64[0], kPiF32[0]), pi_lo = pick(m, kPiF64[1], kPiF32[1]);
    V k_hi, k_lo, a;
    if (!acos) {
        k_hi = m.select(big, m.f(pio2_hi), m.f(0));
        k_lo = m.select(big, m.f(pio2_lo), m.f(0));
        a = m.select(big, m.f(-2), m.f(1));
    } else {
        V negx = x < 0.0;
        k_hi = m.select(big, m.select(negx, m.f(pi_hi), m.f(0)), m.f(pio2_hi));
        k_lo = m.select(big, m.select(negx, m.f(pi_lo), m.f(0)), m.f(pio2_lo));
        a = m.select(big, m.select(negx, m.f(-2), m.f(2)), m.f(-1));
    }
    auto [h, hl] = m.two_sum(k_hi, a * u);
    V v = h + (hl + (k_lo + a * tail));
    return acos ? v : m.copysign(v, x);
}

V impl_asin(MathBuilder &m, llvm::ArrayRef<V> args) {
    return asin_acos(m, args[0], /*acos=*/false);
}
V impl_acos(MathBuilder &m, llvm::ArrayRef<V> args) { return asin_acos(m, args[0], /*acos=*/true); }

// --- atan, atan2 ----------------------------------------------------------------------------

// atan t = t + t^3 A(t^2) on |t| <= 1/4: math_trig_coeffs.py atan (final relative error
// 2^-63.7 / 2^-32.4).
constexpr double kAtan64[] = {-0x1.5555555555553p-2, 0x1.9999999998da8p-3,  -0x1.24924923eb3aep-3,
                              0x1.c71c713846da2p-4,  -0x1.745cf4bb483a7p-4, 0x1.3b0ea34158271p-4,
                              -0x1.109bdde38b58p-4,  0x1.d4f4b706ba019p-5,  -0x1.47942a72d0cbfp-5};
constexpr double kAtan32[] = {-0x1.55555p-2, 0x1.9992dap-3, -0x1.23422ep-3, 0x1.9332ep-4};

/// atan2(y, x) (atan(x) is atan2(x, 1)). With n = min(|x|, |y|), d = max: atan(n/d) =
/// atan(c) + atan(t), t = (n - c d) / (d + c n), c = 0 for n/d < 1/4, 1/2 below 0.7, else 1,
/// so |t| <= 1/4; n - c d is exact there (Sterbenz) and d + c n a two_sum. Then the octant:
/// K + sg atan(n/d) with K in {0, pi/2, pi}.
V atan2_impl(MathBuilder &m, V y, V x) {
    V ax = m.abs(x), ay = m.abs(y);
    V swap = ay > ax;
    V n = m.select(swap, ax, ay), d = m.select(swap, ay, ax);
    // inf/inf is atan(1); n/inf and 0/0 are atan(0) (the octant does the rest).
    V both_inf = m.isinf(n);
    V degenerate = m.isinf(d) || d == 0.0;
    n = m.select(degenerate, m.select(both_inf, m.f(1), m.f(0)), n);
    d = m.select(degenerate, m.f(1), d);
    // Scale into d in [1, 2) when d < 1 (exact: n <= d), by 1/4 when d + n could overflow.
    V dexp = m.lshr(m.as_int(d), m.mantissa_bits());
    V up = m.as_float((m.i(2 * m.exponent_bias()) - dexp) << m.mantissa_bits());
    V scale =
        m.select(d < 1.0, up, m.select(d >= m.f(pick(m, 0x1p1022, 0x1p126)), m.f(0.25), m.f(1)));
    n = n * scale;
    d = d * scale;
    V mid = n >= d * 0.25, high = n >= d * 0.7;
    V c = m.select(high, m.f(1), m.select(mid, m.f(0.5), m.f(0)));
    V num = n - c * d; // exact
    auto [dh, dl] = m.two_sum(d, c * n);
    V th = num / dh;
    // th's error; dropped where th is so small that the remainder would round in the
    // subnormals (atan(t) is then t, rounded once in th).
    V tl = m.select(m.abs(th) < m.f(pick(m, 0x1p-960, 0x1p-100)), m.f(0),
                    (m.fma(-th, dh, num) - th * dl) / dh);
    V z = th * th;
    V tail = m.fma(th * z, m.poly(z, coeffs(m, kAtan64, kAtan32)), tl); // atan(th + tl) - th
    // atan(1/2) and atan(1) = pi/4 as hi + lo.
    V a_hi = m.select(high, m.f(pick(m, 0x1.921fb54442d18p-1, 0x1.921fb6p-1)),
                      m.select(mid, m.f(pick(m, 0x1.dac670561bb4fp-2, 0x1.dac67p-2)), m.f(0)));
    V a_lo = m.select(high, m.f(pick(m, 0x1.1a62633145c07p-55, -0x1.777a5cp-26)),
                      m.select(mid, m.f(pick(m, 0x1.a2b7f222f65e2p-56, 0x1.586ed4p-28)), m.f(0)));
    // Octant: atan(n/d) (x >= 0, no swap), pi/2 - it (swap), pi - it (x < 0), pi/2 + it.
    V negx = m.signbit(x);
    V k_hi =
        m.select(swap, m.f(pio2(m, 0)), m.select(negx, m.f(pick(m, kPiF64[0], kPiF32[0])), m.f(0)));
    V k_lo =
        m.select(swap, m.f(pio2(m, 1)), m.select(negx, m.f(pick(m, kPiF64[1], kPiF32[1])), m.f(0)));
    V minus = swap != negx;
    V sa_hi = m.select(minus, -a_hi, a_hi), sth = m.select(minus, -th, th);
    V s_rest = m.select(minus, -(a_lo + tail), a_lo + tail);
    auto [s1, e1] = m.two_sum(k_hi, sa_hi);
    auto [s2, e2] = m.two_sum(s1, sth);
    V v = s2 + ((e1 + e2) + (k_lo + s_rest));
    v = m.copysign(v, y);
    return m.select(m.isnan(x) || m.isnan(y), x + y, v);
}

V impl_atan(MathBuilder &m, llvm::ArrayRef<V> args) { return atan2_impl(m, args[0], m.f(1)); }
V impl_atan2(MathBuilder &m, llvm::ArrayRef<V> args) { return atan2_impl(m, args[0], args[1]); }

// --- sinh, cosh, tanh: a double-word exponential ----------------------------------------------

// e^r = 1 + r + r^2/2 + r^3 G(r) on |r| <= ln2/2: math_trig_coeffs.py exp (final relative
// error 2^-63.7 / 2^-33.0).
constexpr double kExp64[] = {0x1.555555555555ap-3,  0x1.555555555552ap-5,  0x1.111111110f1b8p-7,
                             0x1.6c16c16c2952cp-10, 0x1.a01a01b1bac38p-13, 0x1.a01a014884d9dp-16,
                             0x1.71ddf3f72faeep-19, 0x1.27e59fb990ab3p-22, 0x1.af65f8cd51405p-26,
                             0x1.1e4cdcb706a76p-29};
constexpr double kExp32[] = {0x1.555554p-3, 0x1.5554e8p-5, 0x1.1112fap-7, 0x1.6d4cc8p-10,
                             0x1.9e3232p-13};

/// e^(y + yl) = 2^k (hi + lo), hi + lo in [0.7, 1.42], about 2^-58 (f64) / 2^-30 (f32)
/// accurate; k is an ity. For |y| up to ~1100 (f64) / ~150 (f32), yl tiny next to y.
struct ExpCore {
    V k;
    DW p;
};
ExpCore exp_core(MathBuilder &m, V y, V yl) {
    V kf = m.rint(y * pick(m, 0x1.71547652b82fep+0, 0x1.715476p+0));
    // r = y - k ln2 as rh + rl, ln2 in two parts: the first product is exact within the fma.
    V r1 = m.fma(-kf, m.f(pick(m, 0x1.62e42fefa39efp-1, 0x1.62e43p-1)), y);
    auto [a, al] = m.two_prod(kf, m.f(pick(m, 0x1.abc9e3b39803fp-56, -0x1.05c61p-29)));
    auto [rh, e] = m.two_sum(r1, -a);
    V rl = (e - al) + yl;
    // 1 + rh + rh^2/2 in three exact pieces, the rest (rh^3 G, the part of rl) in the tail.
    auto [zh, zl] = m.two_prod(rh, rh);
    V h = 0.5 * zh;
    auto [a1, e1] = m.fast_two_sum(m.f(1), rh);
    auto [ph, e2] = m.two_sum(a1, h);
    V tail = m.fma(rh * zh, m.poly(rh, coeffs(m, kExp64, kExp32)), m.fma(rl, rh, rl));
    V pl = (e1 + e2) + (0.5 * zl + tail);
    auto [hi, lo] = m.fast_two_sum(ph, pl);
    return {m.to_int(kf), DW{hi, lo}};
}

/// 1 / (p.hi + p.lo) as hi + lo.
DW recip_dw(MathBuilder &m, DW p) {
    V ih = 1.0 / p.hi;
    return DW{ih, ih * (m.fma(-ih, p.hi, m.f(1)) - ih * p.lo)};
}

// sinh x = x + x^3 H(x^2) on |x| <= 0.35: math_trig_coeffs.py sinh (final relative error
// 2^-61.5 / 2^-34.3).
constexpr double kSinh64[] = {0x1.5555555555559p-3, 0x1.111111110f5a3p-7, 0x1.a01a01b07c37dp-13,
                              0x1.71ddf67bbcc77p-19, 0x1.af627c1ba88edp-26};
constexpr double kSinh32[] = {0x1.555556p-3, 0x1.110fc2p-7, 0x1.a2d6b2p-13};

/// cosh |x| (sign = +1) or sinh |x| (sign = -1) for |x| >= 0.35 (then k >= 1 and the
/// difference does not cancel): 2^(k-1) (p +- 2^-2k / p), rounded once, by the final ldexp.
/// Clamping |x| where the result overflows anyway keeps k in range; NaN is the caller's.
V cosh_sinh_big(MathBuilder &m, V ax, double sign) {
    V xc = m.fmin(ax, m.f(pick(m, 711, 90)));
    ExpCore e = exp_core(m, xc, m.f(0));
    DW inv = recip_dw(m, e.p);
    // 2^-2k, exact; capped where it no longer shows (2^-120 / 2^-60 next to p).
    V kk = m.select(e.k < 60, e.k, m.i(60));
    V sc = m.pow2i(-2 * kk) * sign;
    auto [s, err] = m.two_sum(e.p.hi, sc * inv.hi);
    V v = s + (err + (e.p.lo + sc * inv.lo));
    return m.ldexp(v, e.k - 1);
}

V impl_cosh(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    V v = cosh_sinh_big(m, m.abs(x), 1.0); // no cancellation at any size: 1/p <= 2^0.5
    return m.select(m.isnan(x), x, v);
}

V impl_sinh(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    V ax = m.abs(x);
    V z = x * x;
    V small = m.fma(x, z * m.poly(z, coeffs(m, kSinh64, kSinh32)), x);
    V big = m.copysign(cosh_sinh_big(m, ax, -1.0), x);
    return m.select(ax < 0.35, small, m.select(m.isnan(x), x, big));
}

V impl_tanh(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    // tanh |x| = -M / (2 + M), M = e^(-2|x|) - 1 as a double-word (no cancellation near 0: the
    // exponential's pieces are exact). Beyond 22 (f64) / 10 (f32) tanh rounds to 1.
    V xc = m.fmin(m.abs(x), m.f(pick(m, 22, 10)));
    ExpCore e = exp_core(m, -2.0 * xc, m.f(0));
    V sc = m.pow2i(e.k); // k in [-64, 0]
    auto [mh0, me] = m.two_sum(sc * e.p.hi, m.f(-1));
    auto [mh, ml] = m.two_sum(mh0, me + sc * e.p.lo);
    auto [dh, de] = m.two_sum(m.f(2), mh);
    V v = div_dw(m, DW{-mh, -ml}, DW{dh, de + ml});
    return m.select(m.isnan(x), x, m.copysign(v, x));
}

// --- erf ------------------------------------------------------------------------------------

// erf x = x + x E(x^2) on |x| <= 3/4: math_trig_coeffs.py erf (final relative error 2^-56.2 /
// 2^-29.0; E(0) = 2/sqrt(pi) - 1 rounded alone costs 2^-57). x E is at most a seventh of erf.
constexpr double kErf64[] = {0x1.06eba8214db69p-3,   -0x1.812746b037a33p-2,  0x1.ce2f21a046eadp-4,
                             -0x1.b82ce313f3224p-6,  0x1.565bcd4c79702p-8,   -0x1.c02dc010b7124p-11,
                             0x1.f9a48c1e5aafp-14,   -0x1.f4eab02cdf907p-17, 0x1.bac7842200668p-20,
                             -0x1.61bb5931d80f8p-23, 0x1.caa97af6cd4dfp-27};
constexpr double kErf32[] = {0x1.06eba8p-3,  -0x1.81273ap-2, 0x1.ce2acep-4,
                             -0x1.b7a764p-6, 0x1.4f18d4p-8,  -0x1.614032p-11};
// erfc x = e^(-x^2) h(t), t = (x - 1) / (x + 1), on [3/4, 5.95] (f64) / [3/4, 3.95] (f32);
// erf rounds to 1 beyond: math_trig_coeffs.py erfc (absolute error 2^-57.8 / 2^-31.4). t is
// small where erfc is large, so the rounding errors of h's steps weigh little there.
constexpr double kErfc64[] = {
    0x1.b5d8780f956b2p-2,   -0x1.17c4e3f17c053p-1,  0x1.23122255b646ep-4,   0x1.c05ecfde337ccp-5,
    0x1.78738bb24900ap-8,   -0x1.03bb8bd1a4f0fp-7,  -0x1.616d43e087818p-8,  -0x1.3d689ce6d6cdep-10,
    0x1.6ed2303123c53p-11,  0x1.c757a89213e46p-11,  0x1.d539e52cac078p-12,  0x1.23cee496e61e3p-14,
    -0x1.f80c06d375277p-14, -0x1.5dfb69c18b6c8p-18, -0x1.0bbc3ff98dccfp-12, 0x1.00836d3ac9ddcp-13};
constexpr double kErfc32[] = {0x1.b5d878p-2, -0x1.17c4e4p-1, 0x1.231258p-4, 0x1.c05fc8p-5,
                              0x1.7869ccp-8, -0x1.046fdp-7,  -0x1.716644p-8};

V impl_erf(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    V ax = m.abs(x);
    V small = m.fma(x, m.poly(x * x, coeffs(m, kErf64, kErf32)), x);
    // 1 - erfc |x|: erfc <= 0.29 there, so its absolute error is what counts, and the product
    // e^(-x^2) h(t) is kept as a double-word (h's first step too) until that subtraction.
    V xc = m.fmin(ax, m.f(pick(m, 5.95, 3.95)));
    auto [zh, zl] = m.two_prod(xc, xc);
    ExpCore ex = exp_core(m, -zh, -zl);
    V t = (xc - 1.0) / (xc + 1.0);
    llvm::ArrayRef<double> hc = coeffs(m, kErfc64, kErfc32);
    auto [hp, hpe] = m.two_prod(t, m.poly(t, hc.drop_front()));
    auto [hh, hs] = m.two_sum(m.f(hc[0]), hp);
    V hl = hs + hpe;
    auto [q, qe] = m.two_prod(ex.p.hi, hh);
    V ql = qe + m.fma(ex.p.hi, hl, ex.p.lo * hh);
    V sc = m.pow2i(ex.k); // 2^k >= 2^-51 (f64) / 2^-23 (f32)
    auto [one, oe] = m.fast_two_sum(m.f(1), -(q * sc));
    V big = m.copysign(one + (oe - ql * sc), x);
    return m.select(ax < 0.75, small, m.select(m.isnan(x), x, big));
}

} // namespace

Impl find_trig(ir::Intrinsic op) {
    switch (op) {
    case ir::Intrinsic::Sin: return impl_sin;
    case ir::Intrinsic::Cos: return impl_cos;
    case ir::Intrinsic::Tan: return impl_tan;
    case ir::Intrinsic::Asin: return impl_asin;
    case ir::Intrinsic::Acos: return impl_acos;
    case ir::Intrinsic::Atan: return impl_atan;
    case ir::Intrinsic::Atan2: return impl_atan2;
    case ir::Intrinsic::Sinh: return impl_sinh;
    case ir::Intrinsic::Cosh: return impl_cosh;
    case ir::Intrinsic::Tanh: return impl_tanh;
    case ir::Intrinsic::Erf: return impl_erf;
    default: return nullptr;
    }
}

} // namespace ember::detail::math
