/// \file
/// SHA-256 (FIPS 180-4) for the compile cache's keys and the IR's content hashes.
///
/// [Note] SHA-256
/// ==============
/// A warm process hashes every kernel it loads: its printed IR (about a kilobyte), then the cache
/// key and the cubin key (a few hundred bytes each). LLVM's portable SHA256 spends about 40
/// instructions per byte, which made the key the second largest part of a warm start (about 14 us
/// per kernel on the H200's host). This one compresses with the x86 SHA extensions (SHA-NI, on
/// every x86-64 server CPU since Intel Ice Lake and AMD Zen) when the CPU has them, checked once
/// with CPUID, and with a portable C++ function otherwise. Both give the standard digest; the
/// unit tests check the FIPS 180-4 example vectors and that the two agree on every length.
#ifndef EMBER_COMPILER_SHA256_H
#define EMBER_COMPILER_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember {

class Sha256 {
public:
    Sha256();
    /// Adds `bytes` to the message.
    void update(std::string_view bytes);
    /// The digest of everything added; the object is spent afterwards.
    std::array<uint8_t, 32> final();

    /// The digest of `bytes` as 64 lower-case hex digits.
    static std::string hex(std::string_view bytes);

private:
    std::array<uint32_t, 8> state_;
    std::array<uint8_t, 64> buffer_{};
    size_t buffered_ = 0;
    uint64_t length_ = 0;
};

namespace detail {
/// The compression in use: "sha-ni" (x86 SHA extensions) or "portable".
const char *sha256_implementation();
/// For tests: the portable compression even where SHA-NI exists (false restores the choice).
void sha256_force_portable(bool on);
} // namespace detail

} // namespace ember

#endif // EMBER_COMPILER_SHA256_H
