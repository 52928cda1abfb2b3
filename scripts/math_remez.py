#!/usr/bin/env python3
"""Minimax polynomial coefficients of ember's math library (compiler/lib/math/), with mpmath.

Each fit is the Remez exchange algorithm on a dense grid, at 60 significant digits, minimising
the relative error of p(x) against f(x) over [a, b]. The coefficients are then rounded to the
target type (f32 or f64) and the error of the rounded polynomial is measured again on the grid;
both errors are printed (as powers of two) next to the coefficients.

    python3 scripts/math_remez.py            # every fit used by MathExpLog.cpp
    python3 scripts/math_remez.py exp        # one of them

The fits are those named in the comments of compiler/lib/math/MathExpLog.cpp:
  exp   (e^r - 1 - r - r^2/2) / r^3          on |r| <= 0.3466 (ln2/2 and a margin)
  log   (2 atanh(u/2) - u - u^3/12 - u^5/80) / u^7   as a function of v = u^2 on [0, 0.1178]
        (u = 2f/(2+f), f = m - 1, m in [sqrt(1/2), sqrt(2)]: |u| <= 0.34315)
  cbrt  m^(-1/3)                              on [1, 2]
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 60


def to_f32(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def remez(f, a, b, n, grid=4000, iters=30):
    """Degree-n minimax polynomial of f on [a, b], relative error. Returns (coeffs, max_err)."""
    a, b = mp.mpf(a), mp.mpf(b)
    xs = [a + (b - a) * (1 - mp.cos(mp.pi * i / grid)) / 2 for i in range(grid + 1)]
    fs = [f(x) for x in xs]
    # Initial reference: Chebyshev extrema.
    nodes = [a + (b - a) * (1 - mp.cos(mp.pi * i / (n + 1))) / 2 for i in range(n + 2)]
    coeffs = None
    for _ in range(iters):
        # Solve p(x_i) - f(x_i) = (-1)^i E f(x_i).
        A = mp.matrix(n + 2, n + 2)
        rhs = mp.matrix(n + 2, 1)
        for i, x in enumerate(nodes):
            fx = f(x)
            for j in range(n + 1):
                A[i, j] = x ** j
            A[i, n + 1] = (-1) ** i * fx
            rhs[i] = fx
        sol = mp.lu_solve(A, rhs)
        coeffs = [sol[j] for j in range(n + 1)]
        err = [(mp.polyval(coeffs[::-1], x) - fx) / fx for x, fx in zip(xs, fs)]
        # New reference: the extremum of each sign run of the error.
        runs, cur = [], [0]
        for i in range(1, len(xs)):
            if (err[i] >= 0) == (err[cur[0]] >= 0):
                cur.append(i)
            else:
                runs.append(cur)
                cur = [i]
        runs.append(cur)
        ext = [max(r, key=lambda i: abs(err[i])) for r in runs]
        while len(ext) > n + 2:  # drop the smallest end extremum
            if abs(err[ext[0]]) < abs(err[ext[-1]]):
                ext.pop(0)
            else:
                ext.pop()
        if len(ext) < n + 2:
            break
        new_nodes = [xs[i] for i in ext]
        if all(abs(p - q) < mp.mpf(10) ** -40 for p, q in zip(new_nodes, nodes)):
            break
        nodes = new_nodes
    max_err = max(abs(e) for e in err)
    return coeffs, max_err


def rounded_error(f, coeffs, a, b, rnd, grid=4000):
    cs = [mp.mpf(rnd(c)) for c in coeffs]
    a, b = mp.mpf(a), mp.mpf(b)
    worst = 0
    for i in range(grid + 1):
        x = a + (b - a) * i / grid
        fx = f(x)
        worst = max(worst, abs((mp.polyval(cs[::-1], x) - fx) / fx))
    return cs, worst


def exp_tail(r):
    if abs(r) < mp.mpf(10) ** -8:
        return mp.mpf(1) / 6 + r / 24 + r * r / 120
    return (mp.exp(r) - 1 - r - r * r / 2) / r ** 3


def log_tail(v):
    if v < mp.mpf(10) ** -12:
        return mp.mpf(1) / 448 + v / 2304
    u = mp.sqrt(v)
    return (2 * mp.atanh(u / 2) - u - u ** 3 / 12 - u ** 5 / 80) / u ** 7


def rcbrt(m):
    return m ** (-mp.mpf(1) / 3)


FITS = {
    # name: (function, a, b, {type: degree})
    "exp": (exp_tail, -0.3466, 0.3466, {"f32": 4, "f64": 9}),
    "log": (log_tail, 0.0, 0.1178, {"f32": 2, "f64": 6}),
    "cbrt": (rcbrt, 1.0, 2.0, {"f32": 3, "f64": 5}),
}


def fmt(c, ty):
    """The coefficient rounded to ty, as an exact C++ hexadecimal literal."""
    x = to_f32(c) if ty == "f32" else float(c)
    mant, exp = x.hex().split("p")
    mant = mant.rstrip("0").rstrip(".")
    return mant + "p" + exp


def main(names):
    for name in names:
        f, a, b, degrees = FITS[name]
        for ty, n in degrees.items():
            coeffs, err = remez(f, a, b, n)
            rnd = to_f32 if ty == "f32" else float
            _, rerr = rounded_error(f, coeffs, a, b, rnd)
            print(f"{name} {ty} degree {n}: minimax error 2^{float(mp.log(err, 2)):.1f}, "
                  f"rounded to {ty} 2^{float(mp.log(rerr, 2)):.1f}")
            print("   ", ", ".join(fmt(c, ty) for c in coeffs))


if __name__ == "__main__":
    main(sys.argv[1:] or list(FITS))
