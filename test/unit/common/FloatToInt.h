/// \file
/// The reference for casts from a float to an integer, shared by the code generator's tests and
/// the runtime's: truncate toward zero, saturate to the integer's range, NaN gives 0.
#ifndef EMBER_TEST_UNIT_COMMON_FLOATTOINT_H
#define EMBER_TEST_UNIT_COMMON_FLOATTOINT_H

#include <cmath>
#include <limits>
#include <type_traits>

namespace ember::testing {

template <class To, class From> To ref_float_to_int(From x) {
    if (std::isnan(x)) return 0;
    const long double t = std::trunc(static_cast<long double>(x));
    constexpr int bits = sizeof(To) * 8;
    if constexpr (std::is_signed_v<To>) {
        if (t < -std::ldexp(1.0L, bits - 1)) return std::numeric_limits<To>::min();
        if (t >= std::ldexp(1.0L, bits - 1)) return std::numeric_limits<To>::max();
    } else {
        if (t < 0) return 0;
        if (t >= std::ldexp(1.0L, bits)) return std::numeric_limits<To>::max();
    }
    return static_cast<To>(t);
}

} // namespace ember::testing

#endif
