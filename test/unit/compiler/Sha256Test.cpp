/// \file
/// SHA-256 ([Note] SHA-256): the FIPS 180-4 example digests, incremental updates split anywhere,
/// and the SHA-NI compression against the portable one on every message length up to 300 bytes.
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace ember;

namespace {

/// Runs `body` with the portable compression forced, restoring the choice afterwards.
template <class F> auto portable(F body) {
    detail::sha256_force_portable(true);
    auto r = body();
    detail::sha256_force_portable(false);
    return r;
}

std::string hex_of(Sha256 &sha) {
    std::string s;
    static const char digits[] = "0123456789abcdef";
    for (uint8_t b : sha.final()) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

} // namespace

TEST(Sha256, FipsExamples) {
    const std::pair<std::string, const char *> cases[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
         "nopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
        {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
    for (const auto &[message, digest] : cases) {
        EXPECT_EQ(Sha256::hex(message), digest) << detail::sha256_implementation() << ", " << message.size() << " bytes";
        EXPECT_EQ(portable([&] { return Sha256::hex(message); }), digest) << "portable, " << message.size() << " bytes";
        EXPECT_EQ(sha256_hex(message), digest);
    }
}

TEST(Sha256, UpdatesSplitAnywhereGiveOneDigest) {
    std::mt19937 rng(2026);
    std::string message(777, '\0');
    for (char &c : message) c = static_cast<char>(rng());
    const std::string whole = Sha256::hex(message);
    for (size_t first : {size_t(0), size_t(1), size_t(55), size_t(56), size_t(63), size_t(64), size_t(65), size_t(200)}) {
        Sha256 sha;
        sha.update(std::string_view(message).substr(0, first));
        for (size_t at = first; at < message.size(); at += 17) sha.update(std::string_view(message).substr(at, 17));
        EXPECT_EQ(hex_of(sha), whole) << "first piece " << first;
    }
}

TEST(Sha256, BothCompressionsAgreeOnEveryLength) {
    std::mt19937 rng(7);
    std::string message;
    for (size_t n = 0; n <= 300; ++n) {
        EXPECT_EQ(Sha256::hex(message), portable([&] { return Sha256::hex(message); })) << n << " bytes";
        message += static_cast<char>(rng());
    }
    // Say which one ran, so that a log shows whether SHA-NI was exercised on this machine.
    std::printf("[ sha256   ] compression in use: %s\n", detail::sha256_implementation());
}
