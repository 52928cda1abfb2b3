// The exponential and logarithmic family of the math library ([Note] Math library in MathLib.h):
// rsqrt, cbrt, exp, exp2, expm1, log, log2, log10, log1p, pow.
//
// [Note] Exponentials and logarithms
// ==================================
// Every function here is one algorithm for f32 and f64 (only the polynomials and a few bounds
// differ), in the working type only: f32 functions use no f64 arithmetic. Results are meant to be
// within about 0.5 ULP of the exact value (bench/math_ulp measures them; docs/math.md publishes
// the numbers), which takes a few extra bits in the last steps: values written `hi + lo` below
// are double-word numbers (MathBuilder::two_prod / two_sum), hi carrying the rounded value and lo
// what it missed.
//
// exp family. x = k ln2 + r with k = rint(x / ln2) and |r| <= ln2/2. `fma(k, -ln2_hi, x)` (ln2_hi
// = ln2 rounded to the working type) is exact: for |x| >= 0.35 both x and k ln2_hi are multiples
// of 2^-(p+1) (p = 23 or 52) and the difference is below 1/2; for smaller x, k = 0. The rest of
// k ln2 and, for pow, the low word of y log x, go into a second word rl. Then
// e^(rh + rl) - 1 = rh + rh^2/2 + rh^3 P(rh) + rl (1 + rh + ...), with rh^2 exact (two_prod) and
// P a minimax polynomial; exp rounds 1 + that once, and scales by 2^k exactly. Results that are
// subnormal are rounded once too, at the subnormal's last place (exp_scale). expm1 is
// 2 (2^(k-1) (1 + u) - 1/2) summed in double-word, so that it keeps full relative accuracy near
// 0 and the factor 2 keeps 2^(k-1) finite up to the overflow threshold.
//
// log family. x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^N first),
// f = m - 1 (exact), u = 2f / (2 + f) in double-word (one division for the reciprocal; the
// residual 2f - (2 + f) u_hi is exact with an fma), and log(1 + f) = 2 atanh(u/2) =
// u + u^3/12 + u^5/80 + u^7 G(u^2) with G a minimax polynomial on u^2 <= 0.1178. log = e ln2 +
// that, with ln2_hi short enough that e ln2_hi is exact; log2 and log10 multiply the double-word
// log(1 + f) by a double-word constant and add e (times log10(2)) last, so log2(2^n) = n exactly.
// log1p takes 1 + x as two_sum(1, x) and feeds the rounding error of that sum into f's low word
// (or uses f = x itself when 1 + x has the exponent 0).
//
// pow. |x|^y = exp(y log|x|) with log|x| in double-word to about 2^-(2p-8) (the u^3/12 and
// u^5/80 terms in double-word too: |y log x| reaches 745, so log needs p + 13 bits), y log|x| as
// two_prod + fma, and the exp core above taking the low word. The C99 Annex F special cases
// (F.9.4.4) are selects on top.
//
// cbrt. |x| = 2^(3q + rem) m, a = 2^rem m in [1, 8); a^(-1/3) from a minimax polynomial on m and
// one Newton step (division-free), y = a r^2, then one correction y + (a - y^3) / (3 y^2) with
// a - y^3 computed exactly (two_prod twice): about 0.5 ULP, exact for perfect cubes.
//
// rsqrt. 1 / sqrt(x) (two correctly rounded operations), then one Newton step with the residual
// 1 - x y^2 computed exactly; arguments are scaled by 2^(+-64) or 2^(+-512) first so that y^2
// neither overflows nor goes subnormal.
//
// The polynomial coefficients come from scripts/math_remez.py (Remez exchange with mpmath at 60
// digits, relative error, then rounded to the type); the double-word constants (ln2, log2(e),
// log10(e), log10(2), 1/12) are their values to 120 bits from mpmath, split into two doubles.
#include "MathBuilder.h"

#include <cmath>
#include <cstdint>

namespace ember::detail::math {
namespace {

/// hi + lo, |lo| <= ulp(hi) (not necessarily normalised).
struct DW {
    V hi, lo;
};

/// A constant to twice the working precision from its double-double value (hi + lo). For f32, hi
/// is rounded to float and lo is the rest. `hi_bits` > 0 rounds hi to that many significant bits
/// (so that hi times a small integer is exact); lo then holds the rest.
DW dw_const(MathBuilder &m, double hi, double lo, int hi_bits = 0) {
    double h = m.is_f64() ? hi : static_cast<double>(static_cast<float>(hi));
    if (hi_bits > 0) {
        int e = 0;
        std::frexp(h, &e);
        h = std::ldexp(std::nearbyint(std::ldexp(h, hi_bits - e)), e - hi_bits);
    }
    return {m.f(h), m.f((hi - h) + lo)}; // hi - h is exact
}

// Double-double values of the constants (mpmath, 60 digits).
constexpr double kLn2Hi = 0x1.62e42fefa39efp-1, kLn2Lo = 0x1.abc9e3b39803fp-56;
constexpr double kLog2eHi = 0x1.71547652b82fep+0, kLog2eLo = 0x1.777d0ffda0d24p-56;
constexpr double kLog10eHi = 0x1.bcb7b1526e50ep-2, kLog10eLo = 0x1.95355baaafad3p-57;
constexpr double kLog10of2Hi = 0x1.34413509f79ffp-2, kLog10of2Lo = -0x1.9dc1da994fd21p-59;
constexpr double kTwelfthHi = 0x1.5555555555555p-4, kTwelfthLo = 0x1.5555555555555p-58;
constexpr double kEightiethHi = 0x1.999999999999ap-7, kEightiethLo = -0x1.999999999999ap-61;

// scripts/math_remez.py exp: (e^r - 1 - r - r^2/2) / r^3 on |r| <= 0.3466. Relative error after
// rounding 2^-23.6 (f32, degree 4) and 2^-53.0 (f64, degree 9); the term is below 2^-7.2 of the
// result, so it adds at most 2^-30 (f32) and 2^-60 (f64) relative.
constexpr double kExpPoly32[] = {0x1.555556p-3, 0x1.55551ap-5, 0x1.11112cp-7, 0x1.6d10ep-10, 0x1.a0890cp-13};
constexpr double kExpPoly64[] = {0x1.5555555555556p-3, 0x1.5555555555554p-5, 0x1.11111111109b8p-7,
                                 0x1.6c16c16c1811ep-10, 0x1.a01a01a7c0f31p-13, 0x1.a01a0198a8499p-16,
                                 0x1.71de0db915c3bp-19, 0x1.27e502c6348b3p-22, 0x1.af38931b60eb4p-26,
                                 0x1.1f2a253136517p-29};
// scripts/math_remez.py log: G(v) = (2 atanh(u/2) - u - u^3/12 - u^5/80) / u^7, v = u^2 in
// [0, 0.1178]. Relative error 2^-21.0 (f32, degree 2) and 2^-50.0 (f64, degree 6); u^7 G is below
// 2^-18.3 of log(1 + f), which keeps pow's log to 2^-39 (f32) and 2^-68 (f64).
constexpr double kLogPoly32[] = {0x1.249252p-9, 0x1.c6f394p-12, 0x1.82b22ap-14};
constexpr double kLogPoly64[] = {0x1.2492492492497p-9, 0x1.c71c71c7153ecp-12, 0x1.745d175511bc3p-14,
                                 0x1.3b13a52192463p-16, 0x1.1115a0dcada54p-18, 0x1.e01fa5f6faae7p-21,
                                 0x1.d9c79977cf44fp-23};
// scripts/math_remez.py cbrt: m^(-1/3) on [1, 2], relative error 2^-11.9 (f32, degree 3) and
// 2^-17.4 (f64, degree 5); one Newton step doubles the bits before the final correction.
constexpr double kRcbrtPoly32[] = {0x1.8ab91cp+0, -0x1.9eb31ep-1, 0x1.45622p-2, -0x1.991546p-5};
constexpr double kRcbrtPoly64[] = {0x1.c7f365c5ce5e3p+0, -0x1.90e7421a34688p+0, 0x1.3e68b9dc4331dp+0,
                                   -0x1.321c5ee95e269p-1, 0x1.3fa26a0045d5p-3, -0x1.16d6f1816ad99p-6};

/// (hi + lo) * (c_hi + c_lo) as hi + lo.
DW dw_mul(MathBuilder &m, DW a, DW c) {
    auto [ph, pl] = m.two_prod(a.hi, c.hi);
    return {ph, m.fma(a.hi, c.lo, m.fma(a.lo, c.hi, pl))};
}

V poly_for(MathBuilder &m, V x, llvm::ArrayRef<double> c32, llvm::ArrayRef<double> c64) {
    return m.poly(x, m.is_f64() ? c64 : c32);
}

/// min(max(x, lo), hi); NaN gives lo (callers select NaN results separately).
V clamp(MathBuilder &m, V x, double lo, double hi) { return m.fmin(m.fmax(x, m.f(lo)), m.f(hi)); }

/// 2^n for an integer n (ity) with 2^n normal.
V pow2(MathBuilder &m, V n) { return m.as_float((n + m.exponent_bias()) << m.mantissa_bits()); }

/// The smallest normal number, 2^(1 - bias).
V min_normal(MathBuilder &m) { return m.f(std::ldexp(1.0, 1 - m.exponent_bias())); }

// --- exp family ---------------------------------------------------------------------------------

/// e^(rh + rl) - 1 as hi + lo, for |rh| <= 0.3466 and |rl| <= 2^-16 (see the Note).
DW expm1_reduced(MathBuilder &m, V rh, V rl) {
    auto [sqh, sql] = m.two_prod(rh, rh);
    V c3 = rh * sqh * poly_for(m, rh, kExpPoly32, kExpPoly64);
    auto [uh, u0] = m.fast_two_sum(rh, sqh * 0.5);
    // e^(rh + rl) = e^rh (1 + rl + ...): rl times 1 + (e^rh - 1); rl^2 is below 2^-32 relative.
    V tail = m.fma(sql, m.f(0.5), c3) + m.fma(rl, uh + c3, rl);
    return {uh, u0 + tail};
}

/// (hi + lo) * 2^k for hi + lo in [0.7, 1.42] normalised (hi = hi + lo rounded) and k an integer
/// float in [-(bias + p + 10), bias + 2] (the callers clamp): exact when the result is normal,
/// rounded once at the subnormal's last place when it is not, inf on overflow.
V exp_scale(MathBuilder &m, V k, DW v) {
    const int64_t bias = m.exponent_bias();
    V n = m.to_int(k);
    // 2^(n/2) and 2^(n - n/2) are normal: the first product is exact, the second rounds once.
    V n1 = n >> 1;
    V normal = v.hi * pow2(m, n1) * pow2(m, n - n1);
    // A subnormal result is w * 2^(1 - bias) with w = v 2^(n + bias - 1) < 1: 1 + w rounds w at
    // 2^-p, which is the subnormal's last place, and (1 + w) - 1 is exact.
    V shift = n + (bias - 1);
    V scale = pow2(m, m.select(shift < 0, shift, m.i(0)));
    V wh = v.hi * scale, wl = v.lo * scale;
    auto [a, b] = m.fast_two_sum(m.f(1), wh);
    V sub = ((a + (b + wl)) - 1.0) * min_normal(m);
    return m.select((shift <= 0) && (wh < 1.0), sub, normal);
}

/// e^(rh + rl) * 2^k (see exp_scale for k).
V exp_finish(MathBuilder &m, V k, V rh, V rl) {
    DW u = expm1_reduced(m, rh, rl);
    auto [h0, l0] = m.fast_two_sum(m.f(1), u.hi);
    auto [h, l] = m.fast_two_sum(h0, l0 + u.lo);
    return exp_scale(m, k, {h, l});
}

/// Bounds beyond which e^x rounds to 0 (below half the smallest subnormal) or to inf; arguments
/// are clamped to them, which keeps k in exp_scale's range.
double exp_lower(MathBuilder &m) { return m.is_f64() ? -750.0 : -110.0; }
double exp_upper(MathBuilder &m) { return m.is_f64() ? 710.0 : 89.0; }

/// x = k ln2 + rh + rl (see the Note), for x within the exp bounds.
struct ExpReduced {
    V k, rh, rl;
};
ExpReduced exp_reduce(MathBuilder &m, V xh, V xl) {
    DW ln2 = dw_const(m, kLn2Hi, kLn2Lo);
    V k = m.rint(xh * kLog2eHi);
    return {k, m.fma(k, -ln2.hi, xh), m.fma(k, -ln2.lo, xl)};
}

/// The common path of exp and exp2 (see the Note): e^(rh + rl) * 2^k for |rh| <= 0.3466,
/// |rl| <= 2^-21 and a k (held in the low bits of `kt`, an integer plus 1.5 * 2^p) for which the
/// result is a normal number whatever its last bit. e^(rh + rl) = 1 + rh + rh^2/2 + rh^3 P(rh)
/// + rl e^rh: 1 + rh and rh^2 are exact double-words, the small terms go into the low word, and
/// the result is rounded once; the scaling adds k to the exponent field. About 25 instructions,
/// against about 60 for the path that handles every argument.
V exp_normal(MathBuilder &m, V kt, V rh, V rl) {
    V p3 = rh * poly_for(m, rh, kExpPoly32, kExpPoly64); // (e^rh - 1 - rh - rh^2/2) / rh^2
    auto [s, e] = m.fast_two_sum(m.f(1), rh);
    auto [sqh, sql] = m.two_prod(rh, rh);
    V em1 = m.fma(sqh, p3 + 0.5, rh); // e^rh - 1, for the rl term only
    V t = m.fma(sql, m.f(0.5), e + rl);
    t = m.fma(rl, em1, t);
    t = m.fma(p3, sqh, t);
    V y = s + m.fma(sqh, m.f(0.5), t);
    return m.as_float(m.as_int(y) + (m.as_int(kt) << m.mantissa_bits()));
}

/// 1.5 * 2^p: adding it to a float below 2^(p-1) in magnitude rounds that to an integer, which
/// then sits in the sum's low bits.
double round_shifter(MathBuilder &m) {
    return std::ldexp(1.5, static_cast<int>(m.mantissa_bits()));
}

V exp_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    // e^x is normal, with a binade to spare, on [-87, 88] (f32) and [-708, 709] (f64).
    const double lo = m.is_f64() ? -708.0 : -87.0, hi = m.is_f64() ? 709.0 : 88.0;
    auto normal = [&] {
        DW ln2 = dw_const(m, kLn2Hi, kLn2Lo);
        V kt = m.fma(x, m.f(kLog2eHi), m.f(round_shifter(m)));
        V k = kt - round_shifter(m);
        return exp_normal(m, kt, m.fma(k, -ln2.hi, x), k * -ln2.lo);
    };
    auto rest = [&] {
        return m.rare_path("exp_full", {x}, [](MathBuilder &fm, llvm::ArrayRef<V> a) {
            V xc = clamp(fm, a[0], exp_lower(fm), exp_upper(fm));
            ExpReduced r = exp_reduce(fm, xc, fm.f(0));
            return fm.select(fm.isnan(a[0]), a[0], exp_finish(fm, r.k, r.rh, r.rl));
        });
    };
    return m.if_else((x >= lo) && (x <= hi), normal, rest);
}

V exp2_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    const double bias = static_cast<double>(m.exponent_bias());
    // 2^x is normal, with a binade to spare, for k = rint(x) in [2 - bias, bias].
    auto normal = [&] {
        DW ln2 = dw_const(m, kLn2Hi, kLn2Lo);
        V kt = x + round_shifter(m);
        V r = x - (kt - round_shifter(m)); // exact
        auto [rh, rl] = m.two_prod(r, ln2.hi);
        return exp_normal(m, kt, rh, m.fma(r, ln2.lo, rl));
    };
    auto rest = [&] {
        return m.rare_path("exp2_full", {x}, [](MathBuilder &fm, llvm::ArrayRef<V> a) {
            const double b = static_cast<double>(fm.exponent_bias()),
                         p = static_cast<double>(fm.mantissa_bits());
            V xc = clamp(fm, a[0], -(b + p + 10), b + 2);
            V k = fm.rint(xc);
            V r = xc - k; // exact
            DW ln2 = dw_const(fm, kLn2Hi, kLn2Lo);
            auto [rh, rl] = fm.two_prod(r, ln2.hi);
            return fm.select(fm.isnan(a[0]), a[0], exp_finish(fm, k, rh, fm.fma(r, ln2.lo, rl)));
        });
    };
    return m.if_else((x >= 2 - bias) && (x <= bias), normal, rest);
}

V expm1_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    const bool d = m.is_f64();
    // Below the lower bound e^x is under a quarter of -1's last place: the result is -1.
    V xc = clamp(m, x, d ? -40.0 : -20.0, exp_upper(m));
    ExpReduced r = exp_reduce(m, xc, m.f(0));
    DW u = expm1_reduced(m, r.rh, r.rl);
    // e^x - 1 = 2 (a (1 + u) - 1/2) with a = 2^(k-1): a - 1/2, a u_hi and a u_lo are exact.
    V a = pow2(m, m.to_int(r.k) - 1);
    auto [th, tl] = m.two_sum(a, m.f(-0.5));
    auto [sh, sl] = m.two_sum(th, a * u.hi);
    V res = (sh + (sl + (tl + a * u.lo))) * 2.0;
    // Tiny x (and +-0): e^x - 1 rounds to x.
    const double tiny = std::ldexp(1.0, -(m.mantissa_bits() + 3));
    res = m.select(m.abs(x) < tiny, x, res);
    return m.select(m.isnan(x), x, res);
}

// --- log family ---------------------------------------------------------------------------------

/// x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), for x > 0 finite (subnormals included);
/// e as a float. Other x give some finite e and f (callers select their results).
struct LogReduced {
    V e, f;
};
LogReduced log_reduce(MathBuilder &m, V x) {
    const int p = m.mantissa_bits();
    const int scale = m.is_f64() ? 54 : 24; // brings every subnormal into the normals
    V sub = x < min_normal(m);
    V xs = m.select(sub, x * std::ldexp(1.0, scale), x);
    // The bits of sqrt(1/2) rounded to the type: subtracting them puts the exponent's boundary at
    // sqrt(1/2).
    const int64_t c = m.is_f64() ? 0x3fe6a09e667f3bcdLL : 0x3f3504f3LL;
    V ix = m.as_int(xs) - c;
    V e = (ix >> p) - m.select(sub, m.i(scale), m.i(0));
    V mant = m.as_float((ix & ((int64_t(1) << p) - 1)) + c);
    return {m.to_float(e), mant - 1.0};
}

/// log(1 + fh + fl) as hi + lo for fh in [sqrt(1/2) - 1, sqrt(2) - 1] and |fl| <= ulp(fh).
/// `precise` computes the u^3/12 and u^5/80 terms in double-word too and adds every term above
/// 2^-18 of the result exactly (pow needs the log to about 2^-(2p-6); log does not).
DW log1p_reduced(MathBuilder &m, V fh, V fl, bool precise) {
    V den = fh + 2.0;
    V rden = 1.0 / den;
    V uh = (fh + fh) * rden;
    // (2 + f) u - 2f: fh - uh is exact (uh is within a factor 2 of fh), the fma rounds once.
    V t = m.fma(-uh, fh, (fh - uh) * 2.0) + fl * (2.0 - uh);
    V ul = t * rden;
    if (!precise) {
        V v = uh * uh;
        V q = m.fma(v, m.fma(v, poly_for(m, v, kLogPoly32, kLogPoly64), m.f(1.0 / 80)), m.f(1.0 / 12));
        auto [h, l] = m.fast_two_sum(uh, uh * v * q);
        return {h, l + ul};
    }
    // u^2, u^3, u^5, u^3/12 and u^5/80 in double-word.
    auto [v2h, v2l] = m.two_prod(uh, uh);
    v2l = m.fma(uh + uh, ul, v2l);
    auto [c3h, c3l] = m.two_prod(v2h, uh);
    c3l = m.fma(v2h, ul, m.fma(v2l, uh, c3l));
    auto [c5h, c5l] = m.two_prod(c3h, v2h);
    c5l = m.fma(c3h, v2l, m.fma(c3l, v2h, c5l));
    DW a = dw_mul(m, {c3h, c3l}, dw_const(m, kTwelfthHi, kTwelfthLo));
    DW b = dw_mul(m, {c5h, c5l}, dw_const(m, kEightiethHi, kEightiethLo));
    V tail = c5h * v2h * poly_for(m, v2h, kLogPoly32, kLogPoly64);
    auto [sh, sl] = m.fast_two_sum(a.hi, b.hi);
    auto [h, l] = m.fast_two_sum(uh, sh);
    return {h, l + (ul + ((sl + a.lo) + (b.lo + tail)))};
}

/// log(x) = e ln2 + log(1 + f) as hi + lo (not normalised), for x > 0 finite.
DW log_dw(MathBuilder &m, V e, DW l) {
    // |e| < 2^11 (f64) or 2^8 (f32): e * ln2_hi is exact with ln2_hi of p - 11 or p - 8 bits.
    DW ln2 = dw_const(m, kLn2Hi, kLn2Lo, m.is_f64() ? 42 : 16);
    auto [sh, sl] = m.fast_two_sum(e * ln2.hi, l.hi); // |e ln2| > |l| unless e = 0
    return {sh, sl + (l.lo + e * ln2.lo)};
}

/// The special values of log, log2 and log10 on top of `r`.
V log_specials(MathBuilder &m, V x, V r) {
    r = m.select(x == m.inf(), x, r);
    r = m.select(x == 0.0, -m.inf(), r);
    r = m.select(x < 0.0, m.nan(), r);
    return m.select(m.isnan(x), x, r);
}

V log_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    LogReduced r = log_reduce(m, x);
    DW l = log_dw(m, r.e, log1p_reduced(m, r.f, m.f(0), /*precise=*/false));
    return log_specials(m, x, l.hi + l.lo);
}

V log2_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    LogReduced r = log_reduce(m, x);
    DW p = dw_mul(m, log1p_reduced(m, r.f, m.f(0), /*precise=*/false), dw_const(m, kLog2eHi, kLog2eLo));
    auto [sh, sl] = m.fast_two_sum(r.e, p.hi); // |p| < 1/2 <= |e| unless e = 0
    return log_specials(m, x, sh + (sl + p.lo));
}

V log10_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    LogReduced r = log_reduce(m, x);
    DW p = dw_mul(m, log1p_reduced(m, r.f, m.f(0), /*precise=*/false), dw_const(m, kLog10eHi, kLog10eLo));
    DW lg2 = dw_const(m, kLog10of2Hi, kLog10of2Lo, m.is_f64() ? 42 : 16);
    auto [sh, sl] = m.fast_two_sum(r.e * lg2.hi, p.hi); // |p| < 0.15 < |e log10(2)| unless e = 0
    return log_specials(m, x, sh + (sl + (p.lo + r.e * lg2.lo)));
}

V log1p_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    // 1 + x = a + al exactly; a is 0 or at least 2^-p (x >= -1), so normal.
    auto [a, al] = m.two_sum(m.f(1), x);
    LogReduced r = log_reduce(m, a);
    // With e = 0, 1 + x = 1 + f for f = x exactly. Otherwise |x| > 0.29 and the rounding error of
    // a, scaled like f, is at most half of f's last place: log(1 + f + fl) is accurate to 2^-2p.
    V e0 = r.e == 0.0;
    V fh = m.select(e0, x, r.f);
    V fl = m.select(e0, m.f(0), m.ldexp(al, -m.to_int(r.e)));
    DW l = log_dw(m, r.e, log1p_reduced(m, fh, fl, /*precise=*/false));
    V res = l.hi + l.lo;
    res = m.select(x == m.inf(), x, res);
    res = m.select(x == -1.0, -m.inf(), res);
    res = m.select(x < -1.0, m.nan(), res);
    // Tiny x (and +-0): log(1 + x) rounds to x.
    const double tiny = std::ldexp(1.0, -(m.mantissa_bits() + 4));
    res = m.select(m.abs(x) < tiny, x, res);
    return m.select(m.isnan(x), x, res);
}

// --- pow ----------------------------------------------------------------------------------------

V pow_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0], y = args[1];
    V ax = m.abs(x);
    LogReduced lr = log_reduce(m, ax);
    DW l = log_dw(m, lr.e, log1p_reduced(m, lr.f, m.f(0), /*precise=*/true));
    auto [lh, ll] = m.fast_two_sum(l.hi, l.lo);
    // z = y log|x| in double-word; beyond the exp bounds only zh matters (0 or inf), and there
    // its low word may be inf or NaN.
    auto [zh, zl] = m.two_prod(y, lh);
    zl = m.fma(y, ll, zl);
    zl = m.select(m.abs(zh) < 4096.0, zl, m.f(0));
    V zc = clamp(m, zh, exp_lower(m), exp_upper(m));
    ExpReduced r = exp_reduce(m, zc, zl);
    V res = exp_finish(m, r.k, r.rh, r.rl);

    // C99 F.9.4.4. An integer y: trunc(y) == y (infinities count as even integers).
    V y_int = m.trunc(y) == y;
    V half = y * 0.5;
    V y_odd = y_int && (m.trunc(half) != half);
    V x_neg = m.as_int(x) < m.i(0); // -0 included
    V neg = x_neg && y_odd;
    res = m.select(neg, -res, res);
    // x < 0 finite and y finite and not an integer: NaN.
    res = m.select((x < 0.0) && !y_int, m.nan(), res);
    // x = +-0 or +-inf: 0 or inf, negative for a negative x and an odd integer y.
    V zero_or_inf = (ax == 0.0) || (ax == m.inf());
    V mag = m.select((ax == 0.0) == (y < 0.0), m.inf(), m.f(0));
    res = m.select(zero_or_inf, m.select(neg, -mag, mag), res);
    // y = +-inf: 1 for |x| = 1, else 0 or inf.
    V yinf_mag = m.select((ax < 1.0) == (y < 0.0), m.inf(), m.f(0));
    res = m.select(m.isinf(y), m.select(ax == 1.0, m.f(1), yinf_mag), res);
    res = m.select(m.isnan(x) || m.isnan(y), x + y, res);
    return m.select((y == 0.0) || (x == 1.0), m.f(1), res);
}

// --- roots --------------------------------------------------------------------------------------

V cbrt_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    const int p = m.mantissa_bits();
    const int64_t bias = m.exponent_bias();
    const int scale = m.is_f64() ? 54 : 24; // a multiple of 3 that brings subnormals into the normals
    V ax = m.abs(x);
    V sub = ax < min_normal(m);
    V xs = m.select(sub, ax * std::ldexp(1.0, scale), ax);
    V bits = m.as_int(xs);
    V e = (bits >> p) - bias - m.select(sub, m.i(scale), m.i(0));
    V mant = m.as_float((bits & ((int64_t(1) << p) - 1)) | (bias << p)); // [1, 2)
    // e = 3q + rem, rem in {0, 1, 2}: (e + 1/2)/3 is at least 1/6 from an integer.
    V q = m.to_int(m.floor((m.to_float(e) + 0.5) * (1.0 / 3)));
    V rem = e - q * 3;
    V a = mant * m.select(rem == 0, m.f(1), m.select(rem == 1, m.f(2), m.f(4))); // exact
    // 2^(-rem/3) for the first estimate (rounded; the Newton step and the correction fix it).
    V third = m.select(rem == 0, m.f(1),
                       m.select(rem == 1, m.f(0x1.965fea53d6e3dp-1), m.f(0x1.428a2f98d728bp-1)));
    V r = poly_for(m, mant, kRcbrtPoly32, kRcbrtPoly64) * third;
    // One Newton step for a^(-1/3): r += r (1 - a r^3) / 3.
    r = m.fma(r * (1.0 / 3), m.fma(-(a * r), r * r, m.f(1)), r);
    // y = a r^2 ~ a^(1/3); then y += (a - y^3) / (3 y^2), with a - y^3 exact to 2^-2p.
    V y = a * (r * r);
    auto [sh, sl] = m.two_prod(y, y);
    auto [ch, cl] = m.two_prod(y, sh);
    V resid = (a - ch) - m.fma(y, sl, cl); // a - ch is exact: ch is within a factor 2 of a
    y = m.fma(resid, (r * r) * (1.0 / 3), y);
    V res = m.copysign(y * pow2(m, q), x);
    return m.select((ax == 0.0) || !m.isfinite(x), x + x, res);
}

V rsqrt_impl(MathBuilder &m, llvm::ArrayRef<V> args) {
    V x = args[0];
    // x above 2^s is scaled by 2^-s, x below 2^-s (subnormals too) by 2^s: y^2 and x y^2 then
    // stay normal.
    const int s = m.is_f64() ? 512 : 64;
    V big = x > std::ldexp(1.0, s), small = x < std::ldexp(1.0, -s);
    V xs = m.select(big, x * std::ldexp(1.0, -s), m.select(small, x * std::ldexp(1.0, s), x));
    V factor = m.select(big, m.f(std::ldexp(1.0, -s / 2)),
                        m.select(small, m.f(std::ldexp(1.0, s / 2)), m.f(1)));
    V y0 = 1.0 / m.sqrt(xs);
    // One Newton step: y = y0 + y0 (1 - x y0^2) / 2, with 1 - x y0^2 to 2^-2p.
    auto [hh, hl] = m.two_prod(y0, y0);
    V d = m.fma(-xs, hh, m.f(1)) - xs * hl;
    V y = m.fma(y0 * 0.5, d, y0) * factor;
    // 0, inf, negative numbers and NaN: 1 / sqrt(x) is already exact (+-inf, 0, NaN).
    V regular = (x > 0.0) && (x != m.inf());
    return m.select(regular, y, 1.0 / m.sqrt(x));
}

} // namespace

Impl find_exp_log(ir::Intrinsic op) {
    switch (op) {
    case ir::Intrinsic::Rsqrt: return rsqrt_impl;
    case ir::Intrinsic::Cbrt: return cbrt_impl;
    case ir::Intrinsic::Exp: return exp_impl;
    case ir::Intrinsic::Exp2: return exp2_impl;
    case ir::Intrinsic::Expm1: return expm1_impl;
    case ir::Intrinsic::Log: return log_impl;
    case ir::Intrinsic::Log2: return log2_impl;
    case ir::Intrinsic::Log10: return log10_impl;
    case ir::Intrinsic::Log1p: return log1p_impl;
    case ir::Intrinsic::Pow: return pow_impl;
    default: return nullptr;
    }
}

} // namespace ember::detail::math
