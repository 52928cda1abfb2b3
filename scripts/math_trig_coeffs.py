#!/usr/bin/env python3
"""Polynomial coefficients and constants of the trigonometric family of ember's math library
(compiler/lib/math/MathTrig.cpp), computed with mpmath.

Each polynomial is fitted by the Remez exchange algorithm on a dense grid at 50 significant
digits, minimising the error *of the final result* it feeds (the weight of each fit below, e.g.
the relative error of r + r^3 S(r^2) against sin r, not the error of S itself). The coefficients
are then rounded to the target type and the error of the whole formula with the rounded
coefficients is measured again on a finer grid; the lowest degree whose rounded error is below
the target (2^-58 for f64, 2^-30 for f32: far below the final rounding, so that the evaluation
in floating point dominates) is printed as a C++ initializer list of hex floats, lowest degree
first (the order of MathBuilder::poly).

    python3 scripts/math_trig_coeffs.py             # every fit and constant, f64 and f32
    python3 scripts/math_trig_coeffs.py sin cos     # some of them

Fits (z = r^2 where the function is even or odd):
  sin    S(z) = (sin r - r) / r^3               r in [0, pi/4]   final: r + r^3 S
  cos    C(z) = (cos r - 1 + r^2/2) / r^4       r in [0, pi/4]   final: 1 - r^2/2 + r^4 C
  asin   P(z) = (asin u - u) / u^3              u in [0, 1/2]    final: u + u^3 P
  atan   A(z) = (atan t - t) / t^3              t in [0, 1/4]    final: t + t^3 A
  sinh   H(z) = (sinh x - x) / x^3              x in [0, 0.35]   final: x + x^3 H
  exp    G(r) = (e^r - 1 - r - r^2/2) / r^3     r in [-ln2/2, ln2/2]   final: 1 + r + r^2/2 + r^3 G
  erf    E(z) = erf(x) / x - 1                  x in [0, 3/4]    final: x + x E
  erfc   h(t) = erfc(x) e^(x^2), t = (x-1)/(x+1), x in [0.75, 5.95] (f32: [0.75, 3.95]);
         final: e^(-x^2) h(t), absolute error (erf = 1 - erfc there)
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 50


def round_to(x, bits):
    if bits == 64:
        return mp.mpf(float(x))
    return mp.mpf(struct.unpack("f", struct.pack("f", float(x)))[0])


def remez(f, w, a, b, n, grid=600, iters=30):
    """Coefficients c0..cn minimising max |w(x) (p(x) - f(x))| on [a, b] (discrete Remez)."""
    a, b = mp.mpf(a), mp.mpf(b)
    xs = [a + (b - a) * (1 - mp.cos(mp.pi * i / (grid - 1))) / 2 for i in range(grid)]
    fx = [f(x) for x in xs]
    wx = [abs(w(x)) for x in xs]
    m = n + 2
    ref = [int(round((grid - 1) * (1 - mp.cos(mp.pi * i / (m - 1))) / 2)) for i in range(m)]
    best = None
    for _ in range(iters):
        A = mp.matrix(m, m)
        rhs = mp.matrix(m, 1)
        for r, gi in enumerate(ref):
            for j in range(n + 1):
                A[r, j] = xs[gi] ** j
            A[r, m - 1] = (-1) ** r / wx[gi]
            rhs[r] = fx[gi]
        sol = mp.lu_solve(A, rhs)
        coef = [sol[j] for j in range(n + 1)]
        err = [wx[i] * (mp.polyval(coef[::-1], xs[i]) - fx[i]) for i in range(grid)]
        emax = max(abs(e) for e in err)
        if best is None or emax < best[1]:
            best = (coef, emax)
        # The extremum of each run of one sign, then drop the smaller end ones down to m.
        segs, i = [], 0
        while i < grid:
            s, j, bi = err[i] >= 0, i, i
            while j < grid and (err[j] >= 0) == s:
                if abs(err[j]) > abs(err[bi]):
                    bi = j
                j += 1
            segs.append(bi)
            i = j
        while len(segs) > m:
            segs.pop(0 if abs(err[segs[0]]) < abs(err[segs[-1]]) else -1)
        if len(segs) < m:
            break
        ref = segs
        emin = min(abs(err[k]) for k in ref)
        if emin > 0 and emax / emin < 1 + mp.mpf("1e-8"):
            break
    return best[0]


def sqrt_or(z, v):
    return mp.sqrt(z) if z > 0 else v


# name: (g, weight, final error of coefficients c at grid point, interval(bits), degrees to try)
# g is the function fitted, w its weight; `final(c, v)` is the error of the final result at v.
def fits():
    def series_ratio(fn, odd_power):
        # (fn(r) - leading terms) / r^k as a function of z = r^2, evaluated accurately near 0
        return fn

    sin_S = lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5
    cos_C = lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2
    asin_P = lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5
    atan_A = lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5
    sinh_H = lambda z: (mp.sinh(mp.sqrt(z)) - mp.sqrt(z)) / z ** 1.5
    exp_G = lambda r: (mp.exp(r) - 1 - r - r * r / 2) / r ** 3 if r != 0 else mp.mpf(1) / 6
    erf_E = lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1
    K = ERFC_K
    x_of_t = lambda t: K * (1 + t) / (1 - t)
    erfc_h = lambda t: mp.erfc(x_of_t(t)) * mp.exp(x_of_t(t) ** 2)

    pio4 = mp.pi / 4 * (1 + mp.mpf(2) ** -20)
    eps = lambda hi: hi * mp.mpf(10) ** -7  # keep z = 0 (weight 0 or 0/0) off the grid
    return {
        "sin": dict(c0=-mp.mpf(1) / 6, g=sin_S, w=lambda z: z ** 1.5 / mp.sin(mp.sqrt(z)), iv=lambda b: (eps(pio4**2), pio4**2),
                    final=lambda c, z: (mp.sqrt(z) + z ** 1.5 * mp.polyval(c[::-1], z)) / mp.sin(mp.sqrt(z)) - 1),
        "cos": dict(g=cos_C, w=lambda z: z ** 2 / mp.cos(mp.sqrt(z)), iv=lambda b: (eps(pio4**2), pio4**2),
                    final=lambda c, z: (1 - z / 2 + z ** 2 * mp.polyval(c[::-1], z)) / mp.cos(mp.sqrt(z)) - 1),
        "asin": dict(g=asin_P, w=lambda z: z ** 1.5 / mp.asin(mp.sqrt(z)), iv=lambda b: (eps(0.25), mp.mpf(0.25)),
                     final=lambda c, z: (mp.sqrt(z) + z ** 1.5 * mp.polyval(c[::-1], z)) / mp.asin(mp.sqrt(z)) - 1),
        "atan": dict(g=atan_A, w=lambda z: z ** 1.5 / mp.atan(mp.sqrt(z)), iv=lambda b: (eps(0.0626), mp.mpf(0.0626)),
                     final=lambda c, z: (mp.sqrt(z) + z ** 1.5 * mp.polyval(c[::-1], z)) / mp.atan(mp.sqrt(z)) - 1),
        "sinh": dict(g=sinh_H, w=lambda z: z ** 1.5 / mp.sinh(mp.sqrt(z)), iv=lambda b: (eps(0.1226), mp.mpf(0.1226)),
                     final=lambda c, z: (mp.sqrt(z) + z ** 1.5 * mp.polyval(c[::-1], z)) / mp.sinh(mp.sqrt(z)) - 1),
        "exp": dict(g=exp_G, w=lambda r: r ** 3 / mp.exp(r), iv=lambda b: (-mp.log(2) / 2 - mp.mpf(2) ** -30,
                                                                          mp.log(2) / 2 + mp.mpf(2) ** -30),
                    final=lambda c, r: (1 + r + r * r / 2 + r ** 3 * mp.polyval(c[::-1], r)) / mp.exp(r) - 1),
        # 2/sqrt(pi) - 1 rounded to the type alone costs 2^-57 (f64): erf's bound is 2 ulp.
        "erf": dict(target={64: mp.mpf(2) ** -56, 32: mp.mpf(2) ** -28}, g=erf_E, w=lambda z: mp.sqrt(z) / mp.erf(mp.sqrt(z)), iv=lambda b: (eps(ERF_SPLIT ** 2), ERF_SPLIT ** 2),
                    final=lambda c, z: mp.sqrt(z) * (1 + mp.polyval(c[::-1], z)) / mp.erf(mp.sqrt(z)) - 1),
        "erfc": dict(target={64: mp.mpf(2) ** -57, 32: mp.mpf(2) ** -28}, g=erfc_h, w=lambda t: mp.exp(-x_of_t(t) ** 2),
                     iv=lambda b: ((ERF_SPLIT - K) / (ERF_SPLIT + K), (mp.mpf(5.95 if b == 64 else 3.95) - K) / (K + mp.mpf(5.95 if b == 64 else 3.95))),
                     final=lambda c, t: mp.exp(-x_of_t(t) ** 2) * mp.polyval(c[::-1], t) - mp.erfc(x_of_t(t))),
    }


# erf switches from its series to 1 - erfc here.
ERF_SPLIT = mp.mpf(0.75)
# erfc e^(x^2) is fitted in t = (x - K) / (x + K): |t| small where erfc is largest.
ERFC_K = mp.mpf(1)

TARGET = {64: mp.mpf(2) ** -58, 32: mp.mpf(2) ** -30}


def fit(name, spec, bits, verbose=False):
    a, b = spec["iv"](bits)
    pts = [a + (b - a) * i / 2000 for i in range(2001)]
    for n in range(2, 30):
        # Fit, round c0 to the type, refit c1..cn with c0 fixed (as a fit of (g - c0) / x of
        # degree n - 1 with weight w x), round c1 and refit likewise, then round the rest: the
        # rounding of the leading coefficients costs most, the refits absorb it.
        g, w, fixed = spec["g"], spec["w"], []
        if "c0" in spec:  # c0 exact (the code adds it as a double-word): fit the rest
            fixed.append(spec["c0"])
            g = (lambda g, c0: lambda x: (g(x) - c0) / x)(g, spec["c0"])
            w = (lambda w: lambda x: w(x) * x)(w)
        for k in range(len(fixed), 3):
            c = remez(g, w, a, b, n - k)
            fixed.append(round_to(c[0], bits))
            g = (lambda g, c0: lambda x: (g(x) - c0) / x)(g, fixed[-1])
            w = (lambda w: lambda x: w(x) * x)(w)
        cr = fixed[:-1] + [round_to(x, bits) for x in c]
        if "c0" in spec:  # evaluate with c0 exact, print it in two parts
            cr[0] = spec["c0"]
        err = max(abs(spec["final"](cr, v)) for v in pts)
        if verbose:
            print(f"  {name} f{bits} degree {n}: 2^{float(mp.log(err, 2)):.1f}", file=sys.stderr)
        if err < spec.get("target", TARGET)[bits]:
            return n, cr, err
    raise RuntimeError(f"{name}: no degree below 30 reaches the target")


def hexf(x):
    """float.hex without the trailing zeros of the mantissa: 0x1.555556p-3."""
    m, e = float(x).hex().split("p")
    return (m.rstrip("0").rstrip(".") if "." in m else m) + "p" + e


def hexlist(cs, bits):
    return "{" + ", ".join(hexf(x) for x in cs) + "}"


def constants():
    """Multi-part constants (each part rounded to the type, the next one the rest)."""
    out = []
    for bits in (64, 32):
        def parts(v, n):
            ps = []
            for _ in range(n):
                p = round_to(v, bits)
                ps.append(p)
                v -= p
            return ps
        for name, v, n in [("pi/2", mp.pi / 2, 3), ("pi", mp.pi, 2), ("atan(1/2)", mp.atan(0.5), 2),
                           ("pi/4", mp.pi / 4, 2), ("ln2", mp.log(2), 2)]:
            out.append(f"f{bits} {name}: " + ", ".join(hexf(p) for p in parts(v, n)))
    return out


def two_over_pi_words(nwords):
    """64-bit words of the binary expansion of 2/pi, after one word of zeros (the integer part and
    the bits above it), most significant first."""
    mp.mp.dps = 500
    v = 2 / mp.pi
    words = [0]
    for _ in range(nwords - 1):
        v *= mp.mpf(2) ** 64
        w = int(mp.floor(v))
        words.append(w)
        v -= w
    mp.mp.dps = 50
    return words


def main(argv):
    specs = fits()
    names = argv or list(specs) + ["constants", "2/pi"]
    for name in names:
        if name == "constants":
            print("\n".join(constants()))
            continue
        if name == "2/pi":
            print("2/pi words: " + ", ".join(f"0x{w:016X}" for w in two_over_pi_words(20)))
            continue
        for bits in (64, 32):
            n, cr, err = fit(name, specs[name], bits, verbose=True)
            print(f"{name} f{bits}: degree {n}, final error 2^{float(mp.log(err, 2)):.1f}")
            if "c0" in specs[name]:
                c0h = round_to(cr[0], bits)
                print(f"    c0 = {hexf(c0h)} + {hexf(round_to(cr[0] - c0h, bits))}, then")
                cr = cr[1:]
            print("    " + hexlist(cr, bits))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
