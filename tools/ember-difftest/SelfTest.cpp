/// \file
/// `ember-difftest --self-test`: checks of the oracle itself. The float encoders against the
/// host's own conversions (GCC's _Float16, and the bits of f32 -> bf16 rounding), the
/// interpreter on small kernels whose results [Note] IR semantics fixes, and the generator's
/// independence between seeds.
#include "SelfTest.h"

#include "Generator.h"
#include "Interpreter.h"

#include "ember/compiler/IRPrinter.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ember::difftest {

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
    if (!ok) {
        ++failures;
        if (failures <= 20) std::fprintf(stderr, "self-test: FAILED: %s\n", what.c_str());
    }
}

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

void check_floats() {
    using ir::ScalarType;
    // Every f16 and bf16 encoding decodes to a value that encodes back to it (NaNs stay NaNs).
    for (uint64_t b = 0; b < 65536; ++b)
        for (ScalarType t : {ScalarType::F16, ScalarType::BF16}) {
            double d = decode_float(t, b);
            uint64_t e = encode_float(t, d);
            expect(std::isnan(d) ? std::isnan(decode_float(t, e)) : e == b,
                   std::string(ir::to_string(t)) + " round trip of " + hex(b) + " gave " + hex(e));
        }
    // Doubles to f16 against the host's conversion (one rounding, subnormals, overflow).
    uint64_t s = 12345;
    auto next = [&s] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return s;
    };
    for (int i = 0; i < 2000000; ++i) {
        uint64_t r = next();
        double d = std::ldexp(static_cast<double>(r >> 11) * 0x1p-53, static_cast<int>((r >> 3) % 60) - 40);
        if (r & 1) d = -d;
#ifdef __FLT16_MAX__ // the compiler has _Float16 (GCC 12, Clang 15 on x86-64)
        uint16_t host = std::bit_cast<uint16_t>(static_cast<_Float16>(d));
        expect(encode_float(ScalarType::F16, d) == host, "f16 of " + std::to_string(d));
#endif
        // f32 -> bf16: round to nearest even on the bits.
        float f = static_cast<float>(d * 0x1p60);
        uint32_t u = std::bit_cast<uint32_t>(f);
        uint64_t want = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
        if (std::isinf(f)) want = u >> 16;
        expect(encode_float(ScalarType::BF16, f) == want, "bf16 of " + std::to_string(f));
    }
}

/// Runs a kernel of one i64 output buffer of `n` elements and compares it with `want`.
void check_kernel(const std::string &name, const std::string &body, const std::vector<int64_t> &want) {
    std::string text = "kernel @" + name + "(%o: ptr<global i64>) {\n" + body + "}\n";
    try {
        ir::Module m = ir::parse_module(text, name + ".ir");
        std::vector<Region> regions(1);
        regions[0].bytes.assign(want.size() * 8, 0);
        run_kernel(m.kernels.at(0), regions, Launch{1, 32});
        for (size_t i = 0; i < want.size(); ++i) {
            int64_t got;
            std::memcpy(&got, regions[0].bytes.data() + 8 * i, 8);
            expect(got == want[i], name + "[" + std::to_string(i) + "] = " + std::to_string(got) + ", want " +
                                       std::to_string(want[i]));
        }
    } catch (const std::exception &e) {
        expect(false, name + ": " + e.what());
    }
}

void check_semantics() {
    check_kernel("ints",
                 "  let %m: i16 = -32768:i16\n"
                 "  %o[0:i64] = cast<i64>(-%m)\n"                          // wraps to MIN
                 "  %o[1:i64] = cast<i64>((7:i32 / 0:i32))\n"              // division by zero: 0
                 "  %o[2:i64] = cast<i64>((-2147483648:i32 / -1:i32))\n"   // MIN / -1: MIN
                 "  %o[3:i64] = cast<i64>((-2147483648:i32 % -1:i32))\n"   // MIN % -1: 0
                 "  %o[4:i64] = cast<i64>((-7:i8 % 3:i8))\n"               // sign of a
                 "  %o[5:i64] = cast<i64>((1:i8 << 9:i8))\n"               // shift modulo width
                 "  %o[6:i64] = cast<i64>((-16:i8 >> 2:i8))\n"             // arithmetic
                 "  %o[7:i64] = cast<i64>((240:u8 >> 2:u8))\n"             // logical
                 "  %o[8:i64] = cast<i64>(cast<u16>(-1:i8))\n"             // sign-extends
                 "  %o[9:i64] = cast<i64>(clz(0:u16))\n"
                 "  %o[10:i64] = cast<i64>(abs(-128:i8))\n",
                 {-32768, 0, -2147483648LL, 0, -1, 2, -4, 60, 65535, 16, -128});
    check_kernel("casts",
                 "  %o[0:i64] = cast<i64>(cast<i8>(1000.0:f32))\n"        // saturates
                 "  %o[1:i64] = cast<i64>(cast<u8>(-3.5:f32))\n"
                 "  %o[2:i64] = cast<i64>(cast<i32>(nan:f64))\n"          // NaN: 0
                 "  %o[3:i64] = cast<i64>(-2.9:f64)\n"                    // toward zero
                 "  %o[4:i64] = cast<i64>(cast<f16>(65520:i32))\n"        // rounds to inf: saturates
                 "  %o[5:i64] = cast<i64>(cast<f16>(2049:i32))\n"         // ties to even
                 "  %o[6:i64] = cast<i64>(cast<bf16>(257:i64))\n"
                 "  %o[7:i64] = cast<i64>(cast<f32>(16777217:i64))\n"
                 "  %o[8:i64] = cast<i64>(true)\n",
                 {127, 0, 0, -2, INT64_MAX, 2048, 256, 16777216, 1});
    check_kernel("floats",
                 "  %o[0:i64] = cast<i64>(min(nan:f32, 3.0:f32))\n"       // minNum
                 "  %o[1:i64] = cast<i64>(isnan((0.0:f64 / 0.0:f64)))\n"
                 "  %o[2:i64] = cast<i64>(round(-2.5:f64))\n"             // half away from zero
                 "  %o[3:i64] = cast<i64>((cast<f16>(2048:i32) + cast<f16>(1:i32)))\n" // f16 rounding
                 "  %o[4:i64] = cast<i64>(((nan:f32 != nan:f32) && !(nan:f32 == nan:f32)))\n"
                 "  %o[5:i64] = cast<i64>((fma(16777216.0:f32, 1.0:f32, 1.0:f32) - 16777216.0:f32))\n"
                 // one rounding where an f32 step would round twice (halfway points of bf16/f16)
                 "  %o[6:i64] = cast<i64>(cast<bf16>(16842753:i32))\n"
                 "  %o[7:i64] = cast<i64>(fma(-7.0:bf16, 423338364972826624.0:bf16, -7.0:bf16))\n"
                 "  %o[8:i64] = cast<i64>((fma(1.0009765625:f16, 1.5:f16, -5.960464477539063e-08:f16) * 1024.0:f16))\n"
                 // a remainder of f16 values cast to bf16 (LLVM's InstCombine turns the cast into a bitcast)
                 "  %o[9:i64] = cast<i64>((cast<bf16>((cast<f32>(7.0:f16) % cast<f32>(4.0:f16))) * 8.0:bf16))\n",
                 {3, 1, -3, 2048, 1, 0, 16908288, -2972375754064527360LL, 1537, 24});
    // 8-bit floats ([Note] IR semantics: 8-bit floats): to nearest even, saturating, exact back.
    check_kernel(
        "fp8",
        "  %o[0:i64] = cast<i64>(cast<f32>(cast<e4m3>(1000.0:f32)))\n" // saturates: 448
        "  %o[1:i64] = cast<i64>(cast<f32>(cast<e4m3>(-inf:f32)))\n"   // -448
        "  %o[2:i64] = cast<i64>(cast<f32>(cast<e5m2>(inf:f32)))\n"    // 57344
        "  %o[3:i64] = cast<i64>(cast<f32>(cast<e4m3>(17.0:f32)))\n"   // tie: 16
        "  %o[4:i64] = cast<i64>(cast<f32>(cast<e4m3>(19.0:f32)))\n"   // tie: 20
        "  %o[5:i64] = cast<i64>(isnan(cast<f32>(cast<e4m3>(nan:f32))))\n"
        "  %o[6:i64] = cast<i64>((cast<f32>(cast<e4m3>(0.001953125:f32)) * 1024.0:f32))\n" // 2^-9:
                                                                                           // 2
        "  %o[7:i64] = cast<i64>((cast<f32>(cast<e5m2>(cast<e4m3>(0.001953125:f32))) * "
        "1024.0:f32))\n"
        "  %o[8:i64] = cast<i64>(cast<f32>(cast<e5m2>(cast<bf16>(-100.0:f32))))\n", // -96
        {448, -448, 57344, 16, 20, 1, 2, 2, -96});
    check_kernel("threads",
                 "  shared %s: i64[32]\n"
                 "  %s[thread_idx.x] = (thread_idx.x * 10:i64)\n"
                 "  barrier\n"
                 "  let %x: i64 = %s[(31:i64 - thread_idx.x)]\n"
                 "  let %b: u32 = ballot((thread_idx.x < 3:i64))\n"
                 "  let %y: i64 = shuffle_down(thread_idx.x, 1:i32)\n"
                 "  if (thread_idx.x == 0:i64) {\n"
                 "    %o[0:i64] = %x\n"
                 "    %o[1:i64] = cast<i64>(%b)\n"
                 "  }\n"
                 "  if (thread_idx.x == 31:i64) {\n"
                 "    %o[2:i64] = %y\n"
                 "  }\n"
                 "  let %a: i64 = atomic_add(%o[3:i64], 1:i64)\n",
                 {310, 7, 31, 32});
}

/// Neighbouring seeds give unrelated kernels: no long statement (variable names aside) turns up in
/// the kernels of several of seeds 1 ... 200. When the generator's random streams of seeds k and
/// k + 1 were one stream shifted by a draw, one i16 vector expression was in 40 kernels.
void check_seed_independence() {
    const std::regex names("%[a-z]+[0-9]+");
    std::map<std::string, std::set<uint64_t>> seen;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
        std::istringstream lines(ir::print(generate(seed).kernel));
        std::string line;
        while (std::getline(lines, line)) {
            if (line.size() < 80) continue;
            seen[std::regex_replace(line, names, "%x")].insert(seed);
        }
    }
    size_t worst = 0;
    std::string example;
    for (const auto &[line, seeds] : seen)
        if (seeds.size() > worst) worst = seeds.size(), example = line;
    expect(worst <= 3, "a statement of 80 or more characters is in the kernels of " + std::to_string(worst) +
                           " of seeds 1 ... 200: " + example.substr(0, 160));
}

} // namespace

int self_test() {
    failures = 0;
    check_floats();
    check_semantics();
    check_seed_independence();
    std::printf("ember-difftest --self-test: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}

} // namespace ember::difftest
