/// \file
/// SHA-256 with the x86 SHA extensions where the CPU has them ([Note] SHA-256 in Sha256.h).
#include "ember/compiler/Sha256.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_SHA_NI 1
#include <immintrin.h>
#if __has_include(<sys/platform/x86.h>)
// glibc >= 2.33: the CPU features ld.so found at start. The header is C: its functions return
// `_Bool`, which C++ knows only through the extension `#define _Bool bool` in the compiler's
// <stdbool.h>. GCC's <stdbool.h> always has it; clang's not in the strict modes ember builds with
// (-std=c++20 sets __STRICT_ANSI__). So it is defined here when <stdbool.h> did not.
#include <stdbool.h>
#ifndef _Bool
#define _Bool bool
#define EMBER_DEFINED_BOOL 1
#endif
#include <sys/platform/x86.h>
#ifdef EMBER_DEFINED_BOOL
#undef _Bool
#undef EMBER_DEFINED_BOOL
#endif
#define EMBER_GLIBC_CPU_FEATURES 1
#else
#include <cpuid.h>
#endif
#endif

namespace ember {
namespace {

constexpr uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr std::array<uint32_t, 8> kInitialState = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

using Compress = void (*)(uint32_t *state, const uint8_t *blocks, size_t count);

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress_portable(uint32_t *state, const uint8_t *p, size_t count) {
    for (; count > 0; --count, p += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; ++t)
            w[t] = uint32_t(p[4 * t]) << 24 | uint32_t(p[4 * t + 1]) << 16 | uint32_t(p[4 * t + 2]) << 8 |
                   uint32_t(p[4 * t + 3]);
        for (int t = 16; t < 64; ++t) {
            uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int t = 0; t < 64; ++t) {
            uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
            uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        state[0] += a, state[1] += b, state[2] += c, state[3] += d;
        state[4] += e, state[5] += f, state[6] += g, state[7] += h;
    }
}

#ifdef EMBER_SHA_NI
/// The same with SHA-NI. The state lives in two registers, ABEF and CDGH (A in the high lane), the
/// layout sha256rnds2 works on; each sha256rnds2 does two rounds, so a quad of message words takes
/// two, and the two registers swap roles after each (after two rounds C,D,G,H are the old A,B,E,F).
/// Message quads 4..15 come from sha256msg1 (W[t-16] + sigma0(W[t-15])), plus W[t-7] (the quads
/// before, shifted by one word), then sha256msg2 (+ sigma1(W[t-2])).
__attribute__((target("sha,sse4.1"))) void compress_sha_ni(uint32_t *state, const uint8_t *p, size_t count) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state));
    __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state + 4));
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; count > 0; --count, p += 64) {
        const __m128i abef_start = abef, cdgh_start = cdgh;
        __m128i m[16];
        for (int i = 0; i < 4; ++i)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16 * i)), byte_swap);
        for (int i = 0; i < 16; ++i) {
            if (i >= 4) {
                __m128i x = _mm_sha256msg1_epu32(m[i - 4], m[i - 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(m[i - 1], m[i - 2], 4));
                m[i] = _mm_sha256msg2_epu32(x, m[i - 1]);
            }
            __m128i wk = _mm_add_epi32(m[i], _mm_loadu_si128(reinterpret_cast<const __m128i *>(K + 4 * i)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                         // rounds 4i, 4i+1
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E)); // rounds 4i+2, 4i+3
        }
        abef = _mm_add_epi32(abef, abef_start);
        cdgh = _mm_add_epi32(cdgh, cdgh_start);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state), _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

bool cpu_has_sha_ni() {
#ifdef EMBER_GLIBC_CPU_FEATURES
    // What ld.so found at start: no CPUID now (in a virtual machine each CPUID traps to the
    // hypervisor, and a few of them cost a warm start more than all its hashing).
    return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSE4_1) && CPU_FEATURE_ACTIVE(SSSE3);
#else
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19))) return false; // SSE4.1 (and SSSE3)
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 29)) != 0; // SHA
#endif
}
#endif

Compress best_compress() {
#ifdef EMBER_SHA_NI
    static const bool sha_ni = cpu_has_sha_ni();
    if (sha_ni) return compress_sha_ni;
#endif
    return compress_portable;
}

std::atomic<bool> force_portable{false};

Compress compress() { return force_portable.load(std::memory_order_relaxed) ? compress_portable : best_compress(); }

} // namespace

Sha256::Sha256() : state_(kInitialState) {}

void Sha256::update(std::string_view bytes) {
    const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
    size_t n = bytes.size();
    length_ += n;
    Compress f = compress();
    if (buffered_ > 0) {
        size_t take = std::min(n, 64 - buffered_);
        std::memcpy(buffer_.data() + buffered_, p, take);
        buffered_ += take, p += take, n -= take;
        if (buffered_ < 64) return;
        f(state_.data(), buffer_.data(), 1);
        buffered_ = 0;
    }
    if (n >= 64) {
        f(state_.data(), p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    std::memcpy(buffer_.data(), p, n);
    buffered_ = n;
}

std::array<uint8_t, 32> Sha256::final() {
    // Padding: 0x80, zeros up to 56 bytes mod 64, then the length in bits, big-endian.
    const uint64_t bits = length_ * 8;
    uint8_t pad[72] = {0x80};
    size_t pad_len = (buffered_ < 56 ? 56 : 120) - buffered_;
    for (int i = 0; i < 8; ++i) pad[pad_len + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(std::string_view(reinterpret_cast<const char *>(pad), pad_len + 8));
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(state_[i] >> (24 - 8 * j));
    return out;
}

std::string Sha256::hex(std::string_view bytes) {
    Sha256 sha;
    sha.update(bytes);
    std::array<uint8_t, 32> digest = sha.final();
    static const char digits[] = "0123456789abcdef";
    std::string out(64, '0');
    for (size_t i = 0; i < digest.size(); ++i) {
        out[2 * i] = digits[digest[i] >> 4];
        out[2 * i + 1] = digits[digest[i] & 15];
    }
    return out;
}

namespace detail {
const char *sha256_implementation() { return compress() == compress_portable ? "portable" : "sha-ni"; }
void sha256_force_portable(bool on) { force_portable.store(on); }
} // namespace detail

} // namespace ember
