/// \file
/// Errors in units in the last place, shared by the math library's tests and bench/math_ulp.
#ifndef EMBER_TEST_UNIT_COMMON_ULPERROR_H
#define EMBER_TEST_UNIT_COMMON_ULPERROR_H

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace ember::testing {

/// The binary format of T: explicit fraction bits and exponent range.
template <class T> struct Limits {
    static constexpr int p = std::numeric_limits<T>::digits - 1;          // 23, 52
    static constexpr int emin = std::numeric_limits<T>::min_exponent - 1; // -126, -1022
    static constexpr int emax = std::numeric_limits<T>::max_exponent - 1; // 127, 1023
    static constexpr int sub = emin - p;                                  // -149, -1074
};

/// The error of `got` against the reference `ref` (of a wider type R, unrounded), in ULPs of T at
/// `ref` (the subnormal spacing below the normal range); nullopt for a special-value mismatch
/// (NaN-ness, an infinity, a zero's sign), 0 when both are the same special value.
template <class T, class R> std::optional<double> ulp_error(T got, R ref) {
    if (std::isnan(ref) || std::isnan(got)) {
        if (std::isnan(ref) && std::isnan(got)) return 0.0;
        return std::nullopt;
    }
    T rounded = static_cast<T>(ref);
    if (std::isinf(rounded) || std::isinf(got)) {
        if (rounded == got) return 0.0;
        return std::nullopt;
    }
    if (ref == 0 && got == 0) {
        if (std::signbit(rounded) != std::signbit(got)) return std::nullopt;
        return 0.0;
    }
    int e = ref == 0 ? Limits<T>::emin : std::max(static_cast<int>(std::ilogb(ref)), Limits<T>::emin);
    long double ulp = std::ldexp(static_cast<long double>(1), e - Limits<T>::p);
    long double diff = std::fabs(static_cast<long double>(got) - static_cast<long double>(ref));
    return static_cast<double>(diff / ulp);
}

} // namespace ember::testing

#endif // EMBER_TEST_UNIT_COMMON_ULPERROR_H
