/// \file
/// Host types for the 16-bit floats kernels compute with: `ember::half` (IEEE binary16, IR `f16`,
/// DSL `Float16`) and `ember::bfloat16` (the top half of an f32, IR `bf16`, DSL `BFloat16`). They
/// are storage types: two bytes with the exact bits the device uses, converting to and from float
/// (float -> 16 bits rounds to nearest even, as the devices do; 16 bits -> float is exact). Host
/// arithmetic goes through float. Buffers of them (`DeviceBuffer<half>`) and scalar arguments work
/// like any other element type.
#ifndef EMBER_FLOAT16_H
#define EMBER_FLOAT16_H

#include <bit>
#include <cstdint>

namespace ember {

namespace detail {
/// float -> binary16 bits, round to nearest even; overflow gives inf, NaN stays a (quiet) NaN.
constexpr uint16_t float_to_half_bits(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // >= 65520 rounds to inf
    if (a >= 0x38800000u) {                                                   // a normal half
        uint32_t r = a - 0x38000000u;                                         // rebias 127 -> 15
        r += 0xfffu + ((r >> 13) & 1u);                                       // ties to even
        return static_cast<uint16_t>(sign | (r >> 13));
    }
    // A subnormal half (or zero): the value in units of 2^-24, rounded to nearest even.
    const uint32_t e = a >> 23;
    if (e < 102) return sign; // below 2^-25 (and float subnormals): rounds to zero
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e; // 14 .. 24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
}

constexpr float half_bits_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        const float v = static_cast<float>(m) * 5.9604644775390625e-8f; // m * 2^-24, exact
        return sign ? -v : v;
    }
    if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
    return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

/// float -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
constexpr uint16_t float_to_bfloat16_bits(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

constexpr float bfloat16_bits_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
} // namespace detail

/// IEEE 754 binary16 (CUDA's __half).
class half {
public:
    half() = default;
    constexpr half(float f) : bits_(detail::float_to_half_bits(f)) {} // NOLINT: implicit, like __half
    constexpr operator float() const { return detail::half_bits_to_float(bits_); } // NOLINT
    static constexpr half from_bits(uint16_t b) {
        half h;
        h.bits_ = b;
        return h;
    }
    constexpr uint16_t bits() const { return bits_; }

private:
    uint16_t bits_ = 0;
};

/// bfloat16: 8 exponent bits like f32, 7 mantissa bits (CUDA's __nv_bfloat16).
class bfloat16 {
public:
    bfloat16() = default;
    constexpr bfloat16(float f) : bits_(detail::float_to_bfloat16_bits(f)) {} // NOLINT: implicit
    constexpr operator float() const { return detail::bfloat16_bits_to_float(bits_); } // NOLINT
    static constexpr bfloat16 from_bits(uint16_t b) {
        bfloat16 h;
        h.bits_ = b;
        return h;
    }
    constexpr uint16_t bits() const { return bits_; }

private:
    uint16_t bits_ = 0;
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

} // namespace ember

#endif // EMBER_FLOAT16_H
