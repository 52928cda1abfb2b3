/// \file
/// Host types for the 8-bit floats tensor cores multiply: `ember::float8_e4m3` (IR `e4m3`: 4
/// exponent bits with bias 7, 3 mantissa bits, largest finite 448, no infinities, NaN S.1111.111)
/// and `ember::float8_e5m2` (IR `e5m2`: the high byte of an f16, largest finite 57344). They are
/// storage types: one byte with the bits the device uses, converting to float exactly and from
/// float as the devices do ([Note] IR semantics: 8-bit floats): to nearest even, a magnitude
/// above the largest finite value (infinity included) saturating to it, NaN giving 0x7f. Buffers
/// of them (`DeviceBuffer<float8_e4m3>`) work like any other element type; host arithmetic goes
/// through float.
#ifndef EMBER_FLOAT8_H
#define EMBER_FLOAT8_H

#include <bit>
#include <cstdint>

namespace ember {

namespace detail {
/// float -> 8-bit float bits with `mant` mantissa bits and exponent bias `bias` (e4m3: 3, 7;
/// e5m2: 2, 15), rounded to nearest even and saturated; `largest` is the largest finite value's
/// f32 bits and `largest_code` its bits.
constexpr uint8_t float_to_fp8_bits(float f, unsigned mant, unsigned bias, uint32_t largest,
                                    uint8_t largest_code) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 24) & 0x80u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7f;
    if (a > largest) return static_cast<uint8_t>(sign | largest_code);
    const uint32_t smallest_normal = (128u - bias) << 23;
    if (a < smallest_normal) { // in units of the smallest subnormal, to nearest even
        const float scaled = std::bit_cast<float>(a) * static_cast<float>(1u << (bias + mant - 1));
        const uint32_t q = std::bit_cast<uint32_t>(scaled + 8388608.0f) - 0x4b000000u;
        return static_cast<uint8_t>(sign | q);
    }
    const unsigned drop = 23 - mant;
    uint32_t r = a - ((127u - bias) << 23);
    r += (1u << (drop - 1)) - 1u + ((r >> drop) & 1u);
    return static_cast<uint8_t>(sign | (r >> drop));
}

constexpr uint8_t float_to_e4m3_bits(float f) {
    return float_to_fp8_bits(f, 3, 7, 0x43e00000u, 0x7e);
}
constexpr uint8_t float_to_e5m2_bits(float f) {
    return float_to_fp8_bits(f, 2, 15, 0x47600000u, 0x7b);
}

constexpr float e4m3_bits_to_float(uint8_t b) {
    const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    const uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
    if ((b & 0x7fu) == 0x7fu) return std::bit_cast<float>(sign | 0x7fc00000u);
    if (e == 0) {
        const float v = static_cast<float>(m) * 0.001953125f; // m * 2^-9, exact
        return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((e + 120u) << 23) | (m << 20));
}

constexpr float e5m2_bits_to_float(uint8_t b) {
    const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    const uint32_t e = (b >> 2) & 0x1fu, m = b & 3u;
    if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 21));
    if (e == 0) {
        const float v = static_cast<float>(m) * 1.52587890625e-5f; // m * 2^-16, exact
        return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 21));
}
} // namespace detail

/// The two 8-bit float formats.
enum class Fp8Format : uint8_t { e4m3, e5m2 };

/// An 8-bit float of format `F`: one byte, converting as the devices do.
template <Fp8Format F> class float8 {
public:
    float8() = default;
    constexpr float8(float f) // NOLINT: implicit, like half
        : bits_(F == Fp8Format::e4m3 ? detail::float_to_e4m3_bits(f)
                                     : detail::float_to_e5m2_bits(f)) {}
    constexpr operator float() const { // NOLINT
        return F == Fp8Format::e4m3 ? detail::e4m3_bits_to_float(bits_)
                                    : detail::e5m2_bits_to_float(bits_);
    }
    static constexpr float8 from_bits(uint8_t b) {
        float8 v;
        v.bits_ = b;
        return v;
    }
    constexpr uint8_t bits() const { return bits_; }

private:
    uint8_t bits_ = 0;
};

/// e4m3 (CUDA's __nv_fp8_e4m3, PyTorch's float8_e4m3fn, with saturating conversion).
using float8_e4m3 = float8<Fp8Format::e4m3>;
/// e5m2 (CUDA's __nv_fp8_e5m2, PyTorch's float8_e5m2, with saturating conversion).
using float8_e5m2 = float8<Fp8Format::e5m2>;

static_assert(sizeof(float8_e4m3) == 1 && sizeof(float8_e5m2) == 1);
static_assert(detail::float_to_e4m3_bits(448.0f) == 0x7e &&
              detail::float_to_e4m3_bits(1e9f) == 0x7e);
static_assert(detail::float_to_e5m2_bits(57344.0f) == 0x7b &&
              detail::e5m2_bits_to_float(0x7b) == 57344.0f);
static_assert(detail::e4m3_bits_to_float(0x08) == 0.015625f &&
              detail::float_to_e4m3_bits(0.015625f) == 0x08);

} // namespace ember

#endif // EMBER_FLOAT8_H
