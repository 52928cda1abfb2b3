// The host side of ember's print buffer ([Note] Print buffer in ember/compiler/PrintBuffer.h):
// records written as the code generator writes them become printf's text, and malformed bytes
// end the text with a line saying so instead of being read past.
#include "ember/compiler/PrintBuffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace ember::print_buffer;

namespace {

/// One record as the device writes it: size and count, the format padded to 8, the arguments.
std::string record(const std::string &format, const std::vector<uint64_t> &args) {
    const uint64_t format_bytes = (format.size() + 1 + 7) / 8 * 8;
    const uint32_t bytes = uint32_t(8 + format_bytes + 8 * args.size()), count = uint32_t(args.size());
    std::string r(bytes, '\0');
    std::memcpy(r.data(), &bytes, 4);
    std::memcpy(r.data() + 4, &count, 4);
    std::memcpy(r.data() + 8, format.data(), format.size());
    for (size_t i = 0; i < args.size(); ++i) std::memcpy(r.data() + 8 + format_bytes + 8 * i, &args[i], 8);
    return r;
}

uint64_t bits(double d) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
}

TEST(PrintBufferTest, RecordsPrintAsPrintfWould) {
    const std::string records =
        record("x %d %u\n", {uint64_t(uint32_t(-7)), 4000000000u}) +
        record("%lld %llu %g %s %s 100%%\n", {uint64_t(-5), ~uint64_t(0), bits(0.1), 1, 0}) +
        record("seven!\n", {}) + record("%g %g\n", {bits(-0.0), bits(1e300)});
    EXPECT_EQ(format_print_records(records), "x -7 4000000000\n"
                                             "-5 18446744073709551615 0.1 True False 100%\n"
                                             "seven!\n"
                                             "-0 1e+300\n");
    EXPECT_EQ(format_print_records(""), "");
}

TEST(PrintBufferTest, MalformedRecordsAreNamedNotReadPast) {
    const std::string good = record("ok %d\n", {1});
    // A size past the end, a count that disagrees with the size, a conversion without argument.
    std::string overrun = record("a %d\n", {2});
    overrun[0] = char(200);
    EXPECT_EQ(format_print_records(good + overrun),
              "ok 1\nember: print buffer: record at byte 24 is malformed (its size); the rest of the buffer is not "
              "printed\n");
    std::string miscounted = record("a %d\n", {2});
    miscounted[4] = 3;
    EXPECT_NE(format_print_records(miscounted).find("malformed (its argument count)"), std::string::npos);
    EXPECT_NE(format_print_records(record("a %d %d\n", {2})).find("a conversion without its argument"),
              std::string::npos);
    std::string unterminated = record("abcdefg", {});
    unterminated[8 + 7] = 'h'; // the NUL's byte
    EXPECT_NE(format_print_records(unterminated).find("a format without its end"), std::string::npos);
    // Zeros after the records: the records that fit end there, silently.
    EXPECT_EQ(format_print_records(good + std::string(56, '\0')), "ok 1\n");
    // Fewer than a header's 8 bytes left: nothing more is printed.
    EXPECT_EQ(format_print_records(good + std::string(4, '\0')), "ok 1\n");
}

} // namespace
