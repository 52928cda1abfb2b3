/// \file
/// Runs kernels compiled for the CPU target (through CpuModule, the CPU kernel ABI) and checks
/// every rule of [Note] IR semantics against a C++ reference: wrapping integers, division and
/// remainder by zero and MIN / -1, shift amounts modulo the width, IEEE floats with minNum/maxNum,
/// saturating float-to-int casts, loops with runtime and negative steps, break and continue,
/// special registers and the block range of a launch. Every test runs at -O0 and -O3, so that
/// neither LLVM's constant folding nor its optimisations can hide a lowering that relies on UB.
/// The NVPTX tests only check that PTX comes out.
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/CpuAbi.h"
#include "ember/compiler/IR.h"
#include "ember/compiler/IRPrinter.h"

#include "FloatToInt.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

using namespace ember;
using namespace ember::ir;

namespace {

// ---------------------------------------------------------------------------------------------
// Harness.

ir::Kernel parse_kernel(const std::string &text) {
    Module m = parse_module(text, "CodeGenTest");
    EXPECT_EQ(m.kernels.size(), 1u);
    return m.kernels.at(0);
}

/// A kernel compiled for the host and linked into the process.
class CpuKernel {
public:
    CpuKernel(const ir::Kernel &k, int opt_level, const TargetSpec &target = TargetSpec::parse("cpu")) {
        CompileOptions options;
        options.opt_level = opt_level;
        CompiledKernel ck = compile(k, target, options);
        module_ = CpuModule::load(ck.binary, ck.entry_symbol);
        fn_ = reinterpret_cast<CpuKernelFn>(module_->entry());
    }

    /// Runs blocks [begin, end) of the grid (all of them when end < 0). Each argument is passed
    /// as its device representation: pointers as pointers, scalars by value.
    template <class... Args>
    void launch_range(std::array<int64_t, 3> grid, std::array<int64_t, 3> block, int64_t begin,
                      int64_t end, Args... args) const {
        CpuLaunch l{};
        for (int d = 0; d < 3; ++d) {
            l.grid_dim[d] = grid[d];
            l.block_dim[d] = block[d];
        }
        l.block_begin = begin;
        l.block_end = end >= 0 ? end : grid[0] * grid[1] * grid[2];
        std::tuple<Args...> values{args...};
        std::apply(
            [&](auto &...v) {
                void *ptrs[] = {static_cast<void *>(&v)..., nullptr};
                fn_(ptrs, &l);
            },
            values);
    }

    template <class... Args>
    void launch(std::array<int64_t, 3> grid, std::array<int64_t, 3> block, Args... args) const {
        launch_range(grid, block, 0, -1, args...);
    }

    /// One-dimensional launch of at least `n` threads in blocks of 64.
    template <class... Args> void launch_n(int64_t n, Args... args) const {
        launch({(n + 63) / 64, 1, 1}, {64, 1, 1}, args...);
    }

private:
    std::unique_ptr<CpuModule> module_;
    CpuKernelFn fn_ = nullptr;
};

class CodeGenTest : public ::testing::TestWithParam<int> {
protected:
    int opt_level() const { return GetParam(); }
    CpuKernel load(const std::string &text) const { return CpuKernel(parse_kernel(text), opt_level()); }
};

// C++ types and their IR names.
template <class T> constexpr const char *ir_name();
template <> constexpr const char *ir_name<int8_t>() { return "i8"; }
template <> constexpr const char *ir_name<int16_t>() { return "i16"; }
template <> constexpr const char *ir_name<int32_t>() { return "i32"; }
template <> constexpr const char *ir_name<int64_t>() { return "i64"; }
template <> constexpr const char *ir_name<uint8_t>() { return "u8"; }
template <> constexpr const char *ir_name<uint16_t>() { return "u16"; }
template <> constexpr const char *ir_name<uint32_t>() { return "u32"; }
template <> constexpr const char *ir_name<uint64_t>() { return "u64"; }
template <> constexpr const char *ir_name<float>() { return "f32"; }
template <> constexpr const char *ir_name<double>() { return "f64"; }

/// Edge cases of an integer type.
template <class T> std::vector<T> int_values() {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100,
                        L::max(), T(L::max() - 1), L::min(), T(L::min() + 1)};
    if constexpr (std::is_signed_v<T>)
        for (T x : {-1, -2, -3, -7, -8, -31, -32, -33, -64, -100}) v.push_back(x);
    return v;
}

/// Edge cases of a float type: signed zeros, NaN, infinities, subnormals, huge and tiny values.
template <class T> std::vector<T> float_values() {
    using L = std::numeric_limits<T>;
    return {T(0),          T(-0.0),        T(1),           T(-1),     T(0.5),       T(-2.5),
            T(3.75),       T(1e10),        T(-1e10),       T(1e30),   L::max(),     L::lowest(),
            L::min(),      L::denorm_min(), -L::denorm_min(), L::infinity(), -L::infinity(),
            L::quiet_NaN(), T(7),          T(3),           T(2147483520.0), T(-2147483648.0),
            T(4294967040.0), T(255.9),     T(300),         T(-5)};
}

template <class T> bool same_value(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
        // -0 and +0 may come out either way from min/max; everything else must match exactly.
        return a == b;
    }
    return a == b;
}

template <class T> std::string show(T v) {
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_floating_point_v<T>) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
        return buf;
    } else if constexpr (sizeof(T) == 1)
        return std::to_string(static_cast<int>(v));
    else
        return std::to_string(v);
}

// ---------------------------------------------------------------------------------------------
// Reference semantics ([Note] IR semantics), written independently of the code generator.

template <class T> T ref_wrap(uint64_t bits) { return static_cast<T>(bits); } // modular (C++20)

template <class T> T ref_div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
    return static_cast<T>(a / b);
}

template <class T> T ref_mod(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return 0;
    return static_cast<T>(a % b);
}

template <class T> T ref_shift(T a, T b, bool left) {
    const unsigned amount = static_cast<uint64_t>(b) & (sizeof(T) * 8 - 1);
    if (left) return ref_wrap<T>(static_cast<uint64_t>(a) << amount);
    return static_cast<T>(a >> amount); // arithmetic for signed (C++20), logical for unsigned
}

using ember::testing::ref_float_to_int; // truncate toward zero, saturate, NaN gives 0

template <class To, class From> To ref_cast(From x) {
    if constexpr (std::is_same_v<To, bool>) return x != From(0);
    else if constexpr (std::is_same_v<From, bool>) return x ? To(1) : To(0);
    else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>)
        return ref_float_to_int<To>(x);
    else return static_cast<To>(x);
}

// ---------------------------------------------------------------------------------------------
// Scalar add: the kernel of the seed documents, built node by node.

ir::Kernel make_scalar_add() {
    const Type f32 = ScalarType::F32, i64 = ScalarType::I64;
    VariableRef vector = Variable::make("vector", Type::pointer(ScalarType::F32), VarKind::Param);
    VariableRef size = Variable::make("size", i64, VarKind::Param);
    VariableRef scalar = Variable::make("scalar", f32, VarKind::Param);
    auto idx = [] {
        return Binary::make(BinaryOp::Add,
                            Binary::make(BinaryOp::Mul, SpecialReg::make(SpecialRegKind::BlockIdx, 0),
                                         SpecialReg::make(SpecialRegKind::BlockDim, 0)),
                            SpecialReg::make(SpecialRegKind::ThreadIdx, 0));
    };
    VariableRef old = Variable::make("", f32, VarKind::Let);
    Stmt then_body = Block::make(
        {Let::make(old, Load::make(VarRef::make(vector), idx())),
         Store::make(VarRef::make(vector), idx(),
                     Binary::make(BinaryOp::Add, VarRef::make(old), VarRef::make(scalar)))});
    ir::Kernel k;
    k.name = "scalar_add";
    k.params = {vector, size, scalar};
    k.body = Block::make({If::make(Compare::make(CompareOp::LT, idx(), VarRef::make(size)),
                                   then_body)});
    return k;
}

TEST_P(CodeGenTest, ScalarAddAddsToEveryElementInRange) {
    CpuKernel k(make_scalar_add(), opt_level());
    const int64_t n = 1000;
    std::vector<float> v(n + 24, -1.0f); // threads past n must not write
    for (int64_t i = 0; i < n; ++i) v[i] = float(i);
    k.launch({16, 1, 1}, {64, 1, 1}, v.data(), n, 20.0f);
    for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(v[i], float(i) + 20.0f) << "at " << i;
    for (int64_t i = n; i < n + 24; ++i) EXPECT_EQ(v[i], -1.0f) << "at " << i;
}

// ---------------------------------------------------------------------------------------------
// Integer arithmetic: every BinaryOp and UnaryOp on every integer type, over all pairs of edge
// values, against the reference.

constexpr const char *int_binary_ops[] = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "min", "max"};

template <class T> T ref_int_binary(int op, T a, T b) {
    switch (op) {
    case 0: return ref_wrap<T>(uint64_t(a) + uint64_t(b));
    case 1: return ref_wrap<T>(uint64_t(a) - uint64_t(b));
    case 2: return ref_wrap<T>(uint64_t(a) * uint64_t(b));
    case 3: return ref_div(a, b);
    case 4: return ref_mod(a, b);
    case 5: return T(a & b);
    case 6: return T(a | b);
    case 7: return T(a ^ b);
    case 8: return ref_shift(a, b, /*left=*/true);
    case 9: return ref_shift(a, b, /*left=*/false);
    case 10: return std::min(a, b);
    case 11: return std::max(a, b);
    }
    return 0;
}

template <class T> std::string int_ops_kernel() {
    const std::string t = ir_name<T>();
    std::string s = "kernel @int_ops(%a: ptr<global const " + t + ">, %b: ptr<global const " + t +
                    ">, %out: ptr<global " + t + ">, %n: i64) {\n"
                    "  let %i: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)\n"
                    "  if (%i < %n) {\n"
                    "    let %x: " + t + " = %a[%i]\n"
                    "    let %y: " + t + " = %b[%i]\n";
    const int num_ops = std::size(int_binary_ops);
    for (int op = 0; op < num_ops; ++op) {
        const std::string o = int_binary_ops[op];
        const std::string e = (o == "min" || o == "max") ? o + "(%x, %y)" : "(%x " + o + " %y)";
        s += "    %out[((%n * " + std::to_string(op) + ":i64) + %i)] = " + e + "\n";
    }
    // Unary ops, and division by constants (which LLVM may fold).
    s += "    %out[((%n * " + std::to_string(num_ops) + ":i64) + %i)] = -%x\n";
    s += "    %out[((%n * " + std::to_string(num_ops + 1) + ":i64) + %i)] = ~%x\n";
    s += "    %out[((%n * " + std::to_string(num_ops + 2) + ":i64) + %i)] = (%x / 0:" + t + ")\n";
    s += "    %out[((%n * " + std::to_string(num_ops + 3) + ":i64) + %i)] = (%x % 0:" + t + ")\n";
    s += "  }\n}\n";
    return s;
}

template <class T> void check_int_ops(int opt_level) {
    CpuKernel k(parse_kernel(int_ops_kernel<T>()), opt_level);
    std::vector<T> a, b;
    for (T x : int_values<T>())
        for (T y : int_values<T>()) {
            a.push_back(x);
            b.push_back(y);
        }
    const int64_t n = a.size();
    const int num_ops = std::size(int_binary_ops);
    std::vector<T> out(n * (num_ops + 4), T(0x5a));
    k.launch_n(n, a.data(), b.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        for (int op = 0; op < num_ops; ++op) {
            const T want = ref_int_binary(op, a[i], b[i]);
            ASSERT_EQ(out[op * n + i], want)
                << ir_name<T>() << ": " << show(a[i]) << " " << int_binary_ops[op] << " "
                << show(b[i]) << " at -O" << opt_level;
        }
        ASSERT_EQ(out[num_ops * n + i], ref_wrap<T>(0 - uint64_t(a[i]))) << "-" << show(a[i]);
        ASSERT_EQ(out[(num_ops + 1) * n + i], T(~a[i])) << "~" << show(a[i]);
        ASSERT_EQ(out[(num_ops + 2) * n + i], T(0)) << show(a[i]) << " / 0";
        ASSERT_EQ(out[(num_ops + 3) * n + i], T(0)) << show(a[i]) << " % 0";
    }
}

TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapI8) { check_int_ops<int8_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapI16) { check_int_ops<int16_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapI32) { check_int_ops<int32_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapI64) { check_int_ops<int64_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapU8) { check_int_ops<uint8_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapU16) { check_int_ops<uint16_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapU32) { check_int_ops<uint32_t>(opt_level()); }
TEST_P(CodeGenTest, IntegerOpsWrapAndNeverTrapU64) { check_int_ops<uint64_t>(opt_level()); }

TEST_P(CodeGenTest, DivisionEdgeCasesFollowTheSemanticsNote) {
    // The cases of [Note] IR semantics, spelled out (the sweep above covers them too).
    CpuKernel k = load(int_ops_kernel<int32_t>());
    const int32_t min = std::numeric_limits<int32_t>::min();
    std::vector<int32_t> a = {7, -7, 7, -7, 7, min, min, 0};
    std::vector<int32_t> b = {2, 2, -2, -2, 0, -1, 1, 0};
    const int64_t n = a.size();
    std::vector<int32_t> out(n * 16);
    k.launch_n(n, a.data(), b.data(), out.data(), n);
    const int32_t *q = &out[3 * n], *r = &out[4 * n];
    EXPECT_EQ(q[0], 3);
    EXPECT_EQ(r[0], 1);
    EXPECT_EQ(q[1], -3); // truncates toward zero
    EXPECT_EQ(r[1], -1); // sign of the dividend
    EXPECT_EQ(q[2], -3);
    EXPECT_EQ(r[2], 1);
    EXPECT_EQ(q[3], 3);
    EXPECT_EQ(r[3], -1);
    EXPECT_EQ(q[4], 0); // by zero
    EXPECT_EQ(r[4], 0);
    EXPECT_EQ(q[5], min); // MIN / -1 wraps
    EXPECT_EQ(r[5], 0);
    EXPECT_EQ(q[6], min);
    EXPECT_EQ(r[6], 0);
    EXPECT_EQ(q[7], 0);
    EXPECT_EQ(r[7], 0);
}

TEST_P(CodeGenTest, ShiftAmountsAreTakenModuloTheWidth) {
    CpuKernel k = load(int_ops_kernel<int32_t>());
    std::vector<int32_t> a = {1, 1, -8, -8, 1, std::numeric_limits<int32_t>::min()};
    std::vector<int32_t> b = {33, -1, 1, 33, 32, 31};
    const int64_t n = a.size();
    std::vector<int32_t> out(n * 16);
    k.launch_n(n, a.data(), b.data(), out.data(), n);
    const int32_t *shl = &out[8 * n], *shr = &out[9 * n];
    EXPECT_EQ(shl[0], 2);                // 33 % 32 == 1
    EXPECT_EQ(shl[1], int32_t(1u << 31)); // -1 is 31 modulo 32
    EXPECT_EQ(shr[2], -4);               // arithmetic for signed
    EXPECT_EQ(shr[3], -4);
    EXPECT_EQ(shl[4], 1); // by 32 is by 0
    EXPECT_EQ(shr[5], -1);

    CpuKernel u = load(int_ops_kernel<uint32_t>());
    std::vector<uint32_t> ua = {0x80000000u, 0x80000000u};
    std::vector<uint32_t> ub = {31, 63};
    std::vector<uint32_t> uout(2 * 16);
    u.launch_n(2, ua.data(), ub.data(), uout.data(), int64_t(2));
    EXPECT_EQ(uout[9 * 2 + 0], 1u); // logical for unsigned
    EXPECT_EQ(uout[9 * 2 + 1], 1u);
}

// ---------------------------------------------------------------------------------------------
// Float arithmetic: IEEE, no fast math; min/max are minNum/maxNum.

constexpr const char *float_binary_ops[] = {"+", "-", "*", "/", "%", "min", "max"};

template <class T> T ref_float_binary(int op, T a, T b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return std::fmod(a, b);
    case 5: return std::fmin(a, b); // C's fmin is IEEE minNum: a NaN operand yields the other
    case 6: return std::fmax(a, b);
    }
    return 0;
}

template <class T> void check_float_ops(int opt_level) {
    const std::string t = ir_name<T>();
    std::string s = "kernel @float_ops(%a: ptr<global const " + t + ">, %b: ptr<global const " +
                    t + ">, %out: ptr<global " + t + ">, %n: i64) {\n"
                    "  let %i: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)\n"
                    "  if (%i < %n) {\n"
                    "    let %x: " + t + " = %a[%i]\n"
                    "    let %y: " + t + " = %b[%i]\n";
    const int num_ops = std::size(float_binary_ops);
    for (int op = 0; op < num_ops; ++op) {
        const std::string o = float_binary_ops[op];
        const std::string e = (o == "min" || o == "max") ? o + "(%x, %y)" : "(%x " + o + " %y)";
        s += "    %out[((%n * " + std::to_string(op) + ":i64) + %i)] = " + e + "\n";
    }
    s += "    %out[((%n * " + std::to_string(num_ops) + ":i64) + %i)] = -%x\n";
    s += "  }\n}\n";
    CpuKernel k(parse_kernel(s), opt_level);
    std::vector<T> a, b;
    for (T x : float_values<T>())
        for (T y : float_values<T>()) {
            a.push_back(x);
            b.push_back(y);
        }
    const int64_t n = a.size();
    std::vector<T> out(n * (num_ops + 1));
    k.launch_n(n, a.data(), b.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        for (int op = 0; op < num_ops; ++op) {
            const T want = ref_float_binary(op, a[i], b[i]);
            ASSERT_TRUE(same_value(out[op * n + i], want))
                << t << ": " << show(a[i]) << " " << float_binary_ops[op] << " " << show(b[i])
                << " gave " << show(out[op * n + i]) << ", want " << show(want) << " at -O"
                << opt_level;
        }
        const T neg = out[num_ops * n + i];
        ASSERT_TRUE(same_value(neg, T(-a[i])) && std::signbit(neg) != std::signbit(a[i]))
            << "-" << show(a[i]);
    }
}

TEST_P(CodeGenTest, FloatOpsAreIeeeF32) { check_float_ops<float>(opt_level()); }
TEST_P(CodeGenTest, FloatOpsAreIeeeF64) { check_float_ops<double>(opt_level()); }

TEST_P(CodeGenTest, FloatMinMaxIgnoreNaN) {
    CpuKernel k = load(R"(
kernel @minmax(%out: ptr<global f32>, %x: f32, %nan: f32) {
  %out[0:i64] = min(%nan, %x)
  %out[1:i64] = min(%x, %nan)
  %out[2:i64] = max(%nan, %x)
  %out[3:i64] = max(%x, %nan)
  %out[4:i64] = min(%nan, %nan)
}
)");
    std::vector<float> out(5);
    k.launch({1, 1, 1}, {1, 1, 1}, out.data(), 2.5f, std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(out[0], 2.5f);
    EXPECT_EQ(out[1], 2.5f);
    EXPECT_EQ(out[2], 2.5f);
    EXPECT_EQ(out[3], 2.5f);
    EXPECT_TRUE(std::isnan(out[4]));
}

TEST_P(CodeGenTest, NoContractionOfMultiplyAdd) {
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 loses its last term when rounded to f32, so
    // a*b+c = 2^-11 while fma(a, b, c) = 2^-11 + 2^-24.
    CpuKernel k = load(R"(
kernel @muladd(%out: ptr<global f32>, %a: f32, %b: f32, %c: f32) {
  %out[0:i64] = ((%a * %b) + %c)
}
)");
    const float a = 1.0f + std::ldexp(1.0f, -12), b = a, c = -1.0f;
    std::vector<float> out(1);
    k.launch({1, 1, 1}, {1, 1, 1}, out.data(), a, b, c);
    volatile float product = a * b;
    EXPECT_EQ(out[0], product + c);
    EXPECT_NE(out[0], std::fma(a, b, c));
}

// ---------------------------------------------------------------------------------------------
// Comparisons (results stored as bool bytes).

template <class T> void check_compares(int opt_level, const std::vector<T> &values) {
    const std::string t = ir_name<T>();
    static constexpr const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
    std::string s = "kernel @cmp(%a: ptr<global const " + t + ">, %b: ptr<global const " + t +
                    ">, %out: ptr<global bool>, %n: i64) {\n"
                    "  let %i: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)\n"
                    "  if (%i < %n) {\n"
                    "    let %x: " + t + " = %a[%i]\n"
                    "    let %y: " + t + " = %b[%i]\n";
    for (int op = 0; op < 6; ++op)
        s += "    %out[((%n * " + std::to_string(op) + ":i64) + %i)] = (%x " + ops[op] + " %y)\n";
    s += "  }\n}\n";
    CpuKernel k(parse_kernel(s), opt_level);
    std::vector<T> a, b;
    for (T x : values)
        for (T y : values) {
            a.push_back(x);
            b.push_back(y);
        }
    const int64_t n = a.size();
    std::vector<uint8_t> out(n * 6, 0x77);
    k.launch_n(n, a.data(), b.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        const bool want[] = {a[i] == b[i], a[i] != b[i], a[i] < b[i],
                             a[i] <= b[i], a[i] > b[i], a[i] >= b[i]};
        for (int op = 0; op < 6; ++op)
            ASSERT_EQ(out[op * n + i], want[op] ? 1 : 0)
                << t << ": " << show(a[i]) << " " << ops[op] << " " << show(b[i]);
    }
}

TEST_P(CodeGenTest, ComparisonsRespectSignednessAndNaN) {
    check_compares<int32_t>(opt_level(), int_values<int32_t>());
    check_compares<uint32_t>(opt_level(), int_values<uint32_t>());
    check_compares<int8_t>(opt_level(), int_values<int8_t>());
    check_compares<uint64_t>(opt_level(), int_values<uint64_t>());
    check_compares<float>(opt_level(), float_values<float>());
    check_compares<double>(opt_level(), float_values<double>());
}

// ---------------------------------------------------------------------------------------------
// Casts: every scalar type to every other one.

template <class From> std::string cast_kernel() {
    const std::string f = ir_name<From>();
    std::string s = "kernel @casts(%in: ptr<global const " + f + ">, %n: i64";
    static constexpr const char *to[] = {"bool", "i8",  "i16", "i32", "i64", "u8",
                                         "u16",  "u32", "u64", "f32", "f64"};
    for (const char *t : to) s += std::string(", %out_") + t + ": ptr<global " + t + ">";
    s += ") {\n  let %i: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)\n"
         "  if (%i < %n) {\n    let %x: " + f + " = %in[%i]\n";
    for (const char *t : to) s += std::string("    %out_") + t + "[%i] = cast<" + t + ">(%x)\n";
    s += "  }\n}\n";
    return s;
}

template <class From> void check_casts_from(int opt_level, const std::vector<From> &in) {
    CpuKernel k(parse_kernel(cast_kernel<From>()), opt_level);
    const int64_t n = in.size();
    std::vector<uint8_t> o_bool(n);
    std::vector<int8_t> o_i8(n);
    std::vector<int16_t> o_i16(n);
    std::vector<int32_t> o_i32(n);
    std::vector<int64_t> o_i64(n);
    std::vector<uint8_t> o_u8(n);
    std::vector<uint16_t> o_u16(n);
    std::vector<uint32_t> o_u32(n);
    std::vector<uint64_t> o_u64(n);
    std::vector<float> o_f32(n);
    std::vector<double> o_f64(n);
    k.launch_n(n, in.data(), n, o_bool.data(), o_i8.data(), o_i16.data(), o_i32.data(),
               o_i64.data(), o_u8.data(), o_u16.data(), o_u32.data(), o_u64.data(), o_f32.data(),
               o_f64.data());
    const std::string f = ir_name<From>();
    for (int64_t i = 0; i < n; ++i) {
        const From x = in[i];
        const std::string what = "cast from " + f + " " + show(x) + " at -O" +
                                 std::to_string(opt_level) + " to ";
        ASSERT_EQ(o_bool[i], ref_cast<bool>(x) ? 1 : 0) << what << "bool";
        ASSERT_EQ(o_i8[i], ref_cast<int8_t>(x)) << what << "i8";
        ASSERT_EQ(o_i16[i], ref_cast<int16_t>(x)) << what << "i16";
        ASSERT_EQ(o_i32[i], ref_cast<int32_t>(x)) << what << "i32";
        ASSERT_EQ(o_i64[i], ref_cast<int64_t>(x)) << what << "i64";
        ASSERT_EQ(o_u8[i], ref_cast<uint8_t>(x)) << what << "u8";
        ASSERT_EQ(o_u16[i], ref_cast<uint16_t>(x)) << what << "u16";
        ASSERT_EQ(o_u32[i], ref_cast<uint32_t>(x)) << what << "u32";
        ASSERT_EQ(o_u64[i], ref_cast<uint64_t>(x)) << what << "u64";
        ASSERT_TRUE(same_value(o_f32[i], ref_cast<float>(x))) << what << "f32: " << show(o_f32[i]);
        ASSERT_TRUE(same_value(o_f64[i], ref_cast<double>(x))) << what << "f64: " << show(o_f64[i]);
    }
}

TEST_P(CodeGenTest, CastsFromIntegers) {
    check_casts_from<int8_t>(opt_level(), int_values<int8_t>());
    check_casts_from<int16_t>(opt_level(), int_values<int16_t>());
    check_casts_from<int32_t>(opt_level(), int_values<int32_t>());
    check_casts_from<int64_t>(opt_level(), int_values<int64_t>());
    check_casts_from<uint8_t>(opt_level(), int_values<uint8_t>());
    check_casts_from<uint16_t>(opt_level(), int_values<uint16_t>());
    check_casts_from<uint32_t>(opt_level(), int_values<uint32_t>());
    check_casts_from<uint64_t>(opt_level(), int_values<uint64_t>());
}

TEST_P(CodeGenTest, CastsFromFloatsSaturate) {
    check_casts_from<float>(opt_level(), float_values<float>());
    check_casts_from<double>(opt_level(), float_values<double>());
}

TEST_P(CodeGenTest, FloatToIntSaturatesAndNaNGivesZero) {
    CpuKernel k = load(R"(
kernel @f2i(%in: ptr<global const f32>, %si: ptr<global i32>, %ub: ptr<global u8>, %n: i64) {
  let %i: i64 = thread_idx.x
  if (%i < %n) {
    let %x: f32 = %in[%i]
    %si[%i] = cast<i32>(%x)
    %ub[%i] = cast<u8>(%x)
  }
}
)");
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> in = {1e10f, -1e10f, std::nanf(""), inf, -inf, 3.99f, -3.99f, 300.0f, -5.0f,
                             255.9f};
    const int64_t n = in.size();
    std::vector<int32_t> si(n);
    std::vector<uint8_t> ub(n);
    k.launch({1, 1, 1}, {16, 1, 1}, in.data(), si.data(), ub.data(), n);
    const int32_t max = std::numeric_limits<int32_t>::max(), min = std::numeric_limits<int32_t>::min();
    const std::vector<int32_t> want_si = {max, min, 0, max, min, 3, -3, 300, -5, 255};
    const std::vector<uint8_t> want_ub = {255, 0, 0, 255, 0, 3, 0, 255, 0, 255};
    for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(si[i], want_si[i]) << "cast<i32>(" << in[i] << ")";
        EXPECT_EQ(ub[i], want_ub[i]) << "cast<u8>(" << in[i] << ")";
    }
}

TEST_P(CodeGenTest, HalfAndBFloat16RoundTrip) {
    // f16 and bf16 live in memory as 16-bit patterns; arithmetic goes through the host's
    // conversions (F16C, or compiler-rt/libgcc helpers found in the process).
    CpuKernel k = load(R"(
kernel @halves(%h: ptr<global f16>, %b: ptr<global bf16>, %f: ptr<global f32>) {
  let %h0: f16 = %h[0:i64]
  let %h1: f16 = %h[1:i64]
  %h[2:i64] = (%h0 + %h1)
  let %b0: bf16 = %b[0:i64]
  let %b1: bf16 = %b[1:i64]
  %b[2:i64] = (%b0 * %b1)
  %f[0:i64] = cast<f32>(%h0)
  %f[1:i64] = cast<f32>(%b1)
  %b[3:i64] = cast<bf16>(%h1)
  %h[3:i64] = cast<f16>(%b0)
}
)");
    // f16: 1.5 = 0x3e00, 2.0 = 0x4000 -> 3.5 = 0x4300. bf16: 1.5 = 0x3fc0, 3.0 = 0x4040 -> 4.5 = 0x4090.
    std::vector<uint16_t> h = {0x3e00, 0x4000, 0, 0}, b = {0x3fc0, 0x4040, 0, 0};
    std::vector<float> f(2);
    k.launch({1, 1, 1}, {1, 1, 1}, h.data(), b.data(), f.data());
    EXPECT_EQ(h[2], 0x4300);
    EXPECT_EQ(b[2], 0x4090);
    EXPECT_EQ(f[0], 1.5f);
    EXPECT_EQ(f[1], 3.0f);
    EXPECT_EQ(b[3], 0x4000); // 2.0
    EXPECT_EQ(h[3], 0x3e00); // 1.5
}

double f16_value(uint16_t h) {
    const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f) return mant ? std::nan("") : sign * INFINITY;
    if (exp == 0) return sign * std::ldexp(double(mant), -24);
    return sign * std::ldexp(double(mant | 0x400), exp - 25);
}

double bf16_value(uint16_t b) {
    const uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

/// The 16-bit pattern nearest to `x` (ties to the even pattern), found by trying every finite
/// pattern; `overflow` is the magnitude from which a value rounds to infinity.
uint16_t ref_round16(double x, double (*value)(uint16_t), uint16_t inf_bits, double overflow) {
    if (std::isnan(x)) return 0x7fff; // any NaN; checked with is_nan16
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const long double a = std::fabs(static_cast<long double>(x));
    if (a >= overflow) return sign | inf_bits;
    uint16_t best = 0;
    long double best_d = INFINITY;
    for (uint32_t p = 0; p < inf_bits; ++p) {
        const long double d = std::fabs(static_cast<long double>(value(uint16_t(p))) - a);
        if (d < best_d || (d == best_d && (p & 1) == 0)) {
            best = uint16_t(p);
            best_d = d;
        }
    }
    return sign | best;
}

TEST_P(CodeGenTest, HalfAndBFloat16ConversionsRoundToNearestEven) {
    const std::string text = R"(
kernel @conv(%in: ptr<global const f64>, %n: i64, %h32: ptr<global f16>, %h64: ptr<global f16>, %b32: ptr<global bf16>, %b64: ptr<global bf16>, %fh: ptr<global f32>, %dh: ptr<global f64>, %fb: ptr<global f32>) {
  let %i: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)
  if (%i < %n) {
    let %x: f64 = %in[%i]
    let %xf: f32 = cast<f32>(%x)
    %h32[%i] = cast<f16>(%xf)
    %h64[%i] = cast<f16>(%x)
    %b32[%i] = cast<bf16>(%xf)
    %b64[%i] = cast<bf16>(%x)
    let %h: f16 = %h64[%i]
    %fh[%i] = cast<f32>(%h)
    %dh[%i] = cast<f64>(%h)
    let %b: bf16 = %b64[%i]
    %fb[%i] = cast<f32>(%b)
  }
}
)";
    std::vector<double> in = float_values<double>();
    for (double v : {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40, 0x1p-25, 3 * 0x1p-25,
                     0x1p-25 + 0x1p-60, 65504.0, 65519.99, 65520.0, 0x1p-14, 0x1p-14 - 0x1p-25,
                     1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, 1.0 + 0x1p-8 + 0x1p-40, 3.3961e38, 1e-39,
                     0.1, -0.3, 1.0 / 3.0, 1234.5678, -6.1e-5, 2.9e-8, 1e-45})
        in.push_back(v);
    const int64_t n = in.size();
    std::vector<std::string> targets = {"cpu"};
#if defined(__x86_64__)
    targets.push_back("cpu:x86-64"); // no F16C: goes through the conversion builtins
#endif
    for (const std::string &target : targets) {
        CpuKernel k(parse_kernel(text), opt_level(), TargetSpec::parse(target));
        std::vector<uint16_t> h32(n), h64(n), b32(n), b64(n);
        std::vector<float> fh(n), fb(n);
        std::vector<double> dh(n);
        k.launch_n(n, in.data(), n, h32.data(), h64.data(), b32.data(), b64.data(), fh.data(),
                   dh.data(), fb.data());
        auto is_nan16 = [](uint16_t v, uint16_t inf) { return (v & 0x7fff) > inf; };
        for (int64_t i = 0; i < n; ++i) {
            const double x = in[i];
            const double xf = static_cast<float>(x);
            const std::string what = target + ": " + show(x);
            const uint16_t want_h32 = ref_round16(xf, f16_value, 0x7c00, 65520.0);
            const uint16_t want_h64 = ref_round16(x, f16_value, 0x7c00, 65520.0);
            const double bf_overflow = bf16_value(0x7f7f) + std::ldexp(1.0, 119);
            const uint16_t want_b32 = ref_round16(xf, bf16_value, 0x7f80, bf_overflow);
            const uint16_t want_b64 = ref_round16(x, bf16_value, 0x7f80, bf_overflow);
            if (std::isnan(x)) {
                EXPECT_TRUE(is_nan16(h32[i], 0x7c00) && is_nan16(h64[i], 0x7c00)) << what;
                EXPECT_TRUE(is_nan16(b32[i], 0x7f80) && is_nan16(b64[i], 0x7f80)) << what;
                EXPECT_TRUE(std::isnan(fh[i]) && std::isnan(dh[i]) && std::isnan(fb[i])) << what;
                continue;
            }
            EXPECT_EQ(h32[i], want_h32) << what << " f32 -> f16";
            EXPECT_EQ(h64[i], want_h64) << what << " f64 -> f16";
            EXPECT_EQ(b32[i], want_b32) << what << " f32 -> bf16";
            EXPECT_EQ(b64[i], want_b64) << what << " f64 -> bf16";
            EXPECT_TRUE(same_value(double(fh[i]), f16_value(h64[i])) &&
                        std::signbit(fh[i]) == bool(h64[i] & 0x8000))
                << what << " f16 -> f32";
            EXPECT_TRUE(same_value(dh[i], f16_value(h64[i]))) << what << " f16 -> f64";
            EXPECT_TRUE(same_value(double(fb[i]), bf16_value(b64[i]))) << what << " bf16 -> f32";
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Booleans, logic and select.

TEST_P(CodeGenTest, BoolParamsAreBytesAndLogicDoesNotShortCircuit) {
    CpuKernel k = load(R"(
kernel @logic(%out: ptr<global bool>, %sel: ptr<global i32>, %p: bool, %q: bool) {
  %out[0:i64] = (%p && %q)
  %out[1:i64] = (%p || %q)
  %out[2:i64] = (%p ^ %q)
  %out[3:i64] = !%p
  %out[4:i64] = (%p == %q)
  %out[5:i64] = (%p != %q)
  %sel[0:i64] = select(%p, 10:i32, 20:i32)
  %sel[1:i64] = select((%p && %q), 30:i32, 40:i32)
  %sel[2:i64] = cast<i32>(%q)
}
)");
    for (uint8_t p : {0, 1, 2}) { // any non-zero byte is true
        for (uint8_t q : {0, 1}) {
            std::vector<uint8_t> out(6, 0x77);
            std::vector<int32_t> sel(3);
            k.launch({1, 1, 1}, {1, 1, 1}, out.data(), sel.data(), p, q);
            const bool bp = p != 0, bq = q != 0;
            EXPECT_EQ(out[0], bp && bq);
            EXPECT_EQ(out[1], bp || bq);
            EXPECT_EQ(out[2], bp != bq);
            EXPECT_EQ(out[3], !bp);
            EXPECT_EQ(out[4], bp == bq);
            EXPECT_EQ(out[5], bp != bq);
            EXPECT_EQ(sel[0], bp ? 10 : 20);
            EXPECT_EQ(sel[1], bp && bq ? 30 : 40);
            EXPECT_EQ(sel[2], bq ? 1 : 0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Control flow.

TEST_P(CodeGenTest, IfElseTakesOneArm) {
    CpuKernel k = load(R"(
kernel @ifelse(%out: ptr<global i32>, %n: i64) {
  let %i: i64 = thread_idx.x
  if (%i < %n) {
    if ((%i % 3:i64) == 0:i64) {
      %out[%i] = 1:i32
    } else {
      if ((%i % 3:i64) == 1:i64) {
        %out[%i] = 2:i32
      }
    }
  } else {
    %out[%i] = 9:i32
  }
}
)");
    std::vector<int32_t> out(16, -1);
    k.launch({1, 1, 1}, {16, 1, 1}, out.data(), int64_t(10));
    for (int i = 0; i < 16; ++i) {
        const int want = i >= 10 ? 9 : i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : -1;
        EXPECT_EQ(out[i], want) << "at " << i;
    }
}

/// What `for %i = b to e step s { sum += i; count += 1; if count > 1000 break }` computes: the
/// index counts in exact integers and the loop ends where it would leave i32's range; the sum
/// wraps as i32 arithmetic does.
std::pair<int32_t, int32_t> ref_for(int32_t b, int32_t e, int32_t s) {
    uint32_t sum = 0;
    int32_t count = 0;
    for (int64_t i = b; s > 0 ? i < e : s < 0 ? i > e : false; i += s) {
        sum += uint32_t(i);
        count += 1;
        if (count > 1000) break;
    }
    return {static_cast<int32_t>(sum), count};
}

TEST_P(CodeGenTest, ForLoopsHandleRuntimeNegativeAndZeroSteps) {
    CpuKernel k = load(R"(
kernel @for_sum(%out: ptr<global i32>, %b: i32, %e: i32, %s: i32) {
  var %sum: i32 = 0:i32
  var %count: i32 = 0:i32
  for %i: i32 = %b to %e step %s {
    %sum = (%sum + %i)
    %count = (%count + 1:i32)
    if (%count > 1000:i32) {
      break
    }
  }
  %out[0:i64] = %sum
  %out[1:i64] = %count
}
)");
    const int32_t max = std::numeric_limits<int32_t>::max(), min = std::numeric_limits<int32_t>::min();
    const std::vector<std::array<int32_t, 3>> cases = {
        {0, 10, 1},
        {10, 0, -3},
        {0, 10, 0},
        {0, 10, -1},
        {10, 0, 1},
        {0, 10, 3},
        {-5, 5, 2},
        {5, 5, 1},
        {5, 5, -1},
        {0, 0, 0},
        {max - 2, max, 5},  // the next index is past MAX:
                            // one iteration, no wrap
        {max - 7, max, 3},  // max - 7, max - 4, max - 1
        {min + 2, min, -5}, // the next index is past MIN
        {min, max, max},    // min, -1, max - 1: a distance of 2^32 - 1
        {0, min, min},      // a step of MIN
        {-10, 10, max},     // one big step that lands past the end
    };
    for (const auto &[b, e, s] : cases) {
        std::vector<int32_t> out(2, -1);
        k.launch({1, 1, 1}, {1, 1, 1}, out.data(), b, e, s);
        const auto [sum, count] = ref_for(b, e, s);
        EXPECT_EQ(out[1], count) << "for " << b << " to " << e << " step " << s;
        EXPECT_EQ(out[0], sum) << "for " << b << " to " << e << " step " << s;
    }
}

TEST_P(CodeGenTest, ForLoopBoundsAreEvaluatedOnce) {
    CpuKernel k = load(R"(
kernel @for_once(%out: ptr<global i32>) {
  var %n: i32 = 5:i32
  var %s: i32 = 1:i32
  var %count: i32 = 0:i32
  for %i: i32 = 0:i32 to %n step %s {
    %n = (%n + 1:i32)
    %s = (%s + 1:i32)
    %count = (%count + 1:i32)
  }
  %out[0:i64] = %count
  %out[1:i64] = %n
}
)");
    std::vector<int32_t> out(2);
    k.launch({1, 1, 1}, {1, 1, 1}, out.data());
    EXPECT_EQ(out[0], 5);
    EXPECT_EQ(out[1], 10);
}

TEST_P(CodeGenTest, UnsignedForLoopsStopOnlyOnTheUpperSide) {
    CpuKernel k = load(R"(
kernel @for_u(%out: ptr<global u32>, %b: u32, %e: u32, %s: u32) {
  var %sum: u32 = 0:u32
  var %count: u32 = 0:u32
  for %i: u32 = %b to %e step %s {
    %sum = (%sum + %i)
    %count = (%count + 1:u32)
    if (%count > 1000:u32) {
      break
    }
  }
  %out[0:i64] = %sum
  %out[1:i64] = %count
}
)");
    struct Case {
        uint32_t b, e, s, sum, count;
    };
    for (const Case &c : {Case{0, 10, 3, 18, 4}, Case{10, 0, 3, 0, 0}, Case{0, 10, 0, 0, 0},
                          Case{4294967289u, 4294967295u, 2, 3 * 4294967291u, 3},
                          // 4294967294 + 2 would wrap to 0, below the end: the loop ends.
                          Case{4294967290u, 4294967295u, 2, 4294967284u, 3},
                          Case{0, 4294967295u, 2147483648u, 2147483648u, 2}}) {
        std::vector<uint32_t> out(2, 99);
        k.launch({1, 1, 1}, {1, 1, 1}, out.data(), c.b, c.e, c.s);
        EXPECT_EQ(out[1], c.count) << "for " << c.b << " to " << c.e << " step " << c.s;
        EXPECT_EQ(out[0], c.sum) << "for " << c.b << " to " << c.e << " step " << c.s;
    }
}

TEST_P(CodeGenTest, BreakAndContinueActOnTheInnermostLoop) {
    CpuKernel k = load(R"(
kernel @loops(%out: ptr<global i32>, %limit: i32) {
  var %i: i32 = 0:i32
  var %acc: i32 = 0:i32
  var %outer: i32 = 0:i32
  while (%i < 100:i32) {
    %i = (%i + 1:i32)
    if ((%i % 2:i32) == 0:i32) {
      continue
    }
    if (%i > %limit) {
      break
    }
    %outer = (%outer + 1:i32)
    for %j: i32 = 0:i32 to 10:i32 step 1:i32 {
      if (%j == 3:i32) {
        continue
      }
      if (%j >= %i) {
        break
      }
      %acc = ((%acc * 3:i32) + %j)
    }
  }
  %out[0:i64] = %i
  %out[1:i64] = %acc
  %out[2:i64] = %outer
}
)");
    for (int32_t limit : {0, 1, 7, 15, 1000}) {
        int32_t i = 0, acc = 0, outer = 0;
        while (i < 100) {
            i += 1;
            if (i % 2 == 0) continue;
            if (i > limit) break;
            outer += 1;
            for (int32_t j = 0; j < 10; ++j) {
                if (j == 3) continue;
                if (j >= i) break;
                acc = static_cast<int32_t>(uint32_t(acc) * 3u + uint32_t(j));
            }
        }
        std::vector<int32_t> out(3);
        k.launch({1, 1, 1}, {1, 1, 1}, out.data(), limit);
        EXPECT_EQ(out[0], i) << "limit " << limit;
        EXPECT_EQ(out[1], acc) << "limit " << limit;
        EXPECT_EQ(out[2], outer) << "limit " << limit;
    }
}

TEST_P(CodeGenTest, CodeAfterBreakDoesNotRun) {
    CpuKernel k = load(R"(
kernel @after_break(%out: ptr<global i32>) {
  var %n: i32 = 0:i32
  while true {
    %out[0:i64] = 7:i32
    break
    %out[0:i64] = 8:i32
  }
  for %i: i32 = 0:i32 to 3:i32 step 1:i32 {
    %n = (%n + 1:i32)
    continue
    %out[1:i64] = 8:i32
  }
  %out[2:i64] = %n
}
)");
    std::vector<int32_t> out(3, -1);
    k.launch({1, 1, 1}, {1, 1, 1}, out.data());
    EXPECT_EQ(out[0], 7);
    EXPECT_EQ(out[1], -1);
    EXPECT_EQ(out[2], 3);
}

TEST_P(CodeGenTest, NestedLoopsWithMutableVars) {
    CpuKernel k = load(R"(
kernel @matmul(%a: ptr<global const f32>, %b: ptr<global const f32>, %c: ptr<global f32>, %n: i32) {
  let %row: i32 = cast<i32>(thread_idx.y)
  let %col: i32 = cast<i32>(thread_idx.x)
  if ((%row < %n) && (%col < %n)) {
    var %sum: f32 = 0.0:f32
    for %k: i32 = 0:i32 to %n step 1:i32 {
      let %x: f32 = %a[((%row * %n) + %k)]
      let %y: f32 = %b[((%k * %n) + %col)]
      %sum = (%sum + (%x * %y))
    }
    %c[((%row * %n) + %col)] = %sum
  }
}
)");
    const int n = 5;
    std::vector<float> a(n * n), b(n * n), c(n * n, -1);
    for (int i = 0; i < n * n; ++i) {
        a[i] = float(i % 7) - 2.0f;
        b[i] = float(i % 5) * 0.5f;
    }
    k.launch({1, 1, 1}, {8, 8, 1}, a.data(), b.data(), c.data(), int32_t(n));
    for (int r = 0; r < n; ++r)
        for (int col = 0; col < n; ++col) {
            float sum = 0;
            for (int kk = 0; kk < n; ++kk) {
                volatile float p = a[r * n + kk] * b[kk * n + col];
                sum = sum + p;
            }
            EXPECT_EQ(c[r * n + col], sum) << r << "," << col;
        }
}

// ---------------------------------------------------------------------------------------------
// Special registers and the CPU launch ABI.

constexpr const char *ids_kernel = R"(
kernel @ids(%out: ptr<global i64>, %order: ptr<global i64>, %counter: ptr<global i64>) {
  let %block: i64 = ((((block_idx.z * grid_dim.y) + block_idx.y) * grid_dim.x) + block_idx.x)
  let %threads: i64 = ((block_dim.x * block_dim.y) * block_dim.z)
  let %thread: i64 = ((((thread_idx.z * block_dim.y) + thread_idx.y) * block_dim.x) + thread_idx.x)
  let %g: i64 = ((%block * %threads) + %thread)
  let %base: i64 = (%g * 12:i64)
  %out[(%base + 0:i64)] = thread_idx.x
  %out[(%base + 1:i64)] = thread_idx.y
  %out[(%base + 2:i64)] = thread_idx.z
  %out[(%base + 3:i64)] = block_idx.x
  %out[(%base + 4:i64)] = block_idx.y
  %out[(%base + 5:i64)] = block_idx.z
  %out[(%base + 6:i64)] = block_dim.x
  %out[(%base + 7:i64)] = block_dim.y
  %out[(%base + 8:i64)] = block_dim.z
  %out[(%base + 9:i64)] = grid_dim.x
  %out[(%base + 10:i64)] = grid_dim.y
  %out[(%base + 11:i64)] = grid_dim.z
  let %c: i64 = %counter[0:i64]
  %order[%g] = %c
  %counter[0:i64] = (%c + 1:i64)
}
)";

TEST_P(CodeGenTest, SpecialRegistersAndExecutionOrderFollowTheCpuAbi) {
    CpuKernel k = load(ids_kernel);
    const std::array<int64_t, 3> grid{2, 3, 2}, block{4, 2, 3};
    const int64_t blocks = 12, threads = 24;
    std::vector<int64_t> out(blocks * threads * 12, -1), order(blocks * threads, -1);
    int64_t counter = 0;
    k.launch(grid, block, out.data(), order.data(), &counter);
    EXPECT_EQ(counter, blocks * threads);
    int64_t g = 0;
    for (int64_t bz = 0; bz < 2; ++bz)
        for (int64_t by = 0; by < 3; ++by)
            for (int64_t bx = 0; bx < 2; ++bx)
                for (int64_t tz = 0; tz < 3; ++tz)
                    for (int64_t ty = 0; ty < 2; ++ty)
                        for (int64_t tx = 0; tx < 4; ++tx, ++g) {
                            const int64_t want[12] = {tx, ty, tz, bx, by, bz, 4, 2, 3, 2, 3, 2};
                            for (int f = 0; f < 12; ++f)
                                ASSERT_EQ(out[g * 12 + f], want[f]) << "thread " << g << " field " << f;
                            // Blocks in linear order (x fastest), threads x fastest.
                            ASSERT_EQ(order[g], g) << "thread " << g;
                        }
}

TEST_P(CodeGenTest, LaunchRunsOnlyTheBlockRange) {
    CpuKernel k = load(ids_kernel);
    const std::array<int64_t, 3> grid{2, 3, 2}, block{4, 2, 3};
    const int64_t threads = 24;
    std::vector<int64_t> out(12 * threads * 12, -1), order(12 * threads, -1);
    int64_t counter = 0;
    k.launch_range(grid, block, 3, 7, out.data(), order.data(), &counter);
    EXPECT_EQ(counter, 4 * threads);
    for (int64_t b = 0; b < 12; ++b) {
        const bool ran = b >= 3 && b < 7;
        for (int64_t t = 0; t < threads; ++t) {
            const int64_t g = b * threads + t;
            EXPECT_EQ(order[g], ran ? (b - 3) * threads + t : -1) << "block " << b;
            if (ran) {
                EXPECT_EQ(out[g * 12 + 3], b % 2);
                EXPECT_EQ(out[g * 12 + 4], (b / 2) % 3);
                EXPECT_EQ(out[g * 12 + 5], b / 6);
            }
        }
    }
    // An empty range runs nothing.
    k.launch_range(grid, block, 5, 5, out.data(), order.data(), &counter);
    EXPECT_EQ(counter, 4 * threads);
}

// ---------------------------------------------------------------------------------------------
// [Note] Math calls emitted once: a math call node with several uses is emitted once where its
// value stays right, and again where it may not.

TEST_P(CodeGenTest, ASharedMathCallIsReusedOnlyWhereItsValueStaysTheSame) {
    const Type f32 = ScalarType::F32;
    VariableRef out = Variable::make("out", Type::pointer(ScalarType::F32), VarKind::Param);
    VariableRef a = Variable::make("a", f32, VarKind::Param);
    VariableRef v = Variable::make("v", f32, VarKind::Mutable);
    auto at = [](int64_t i) { return IntImm::make(ScalarType::I64, i); };
    // exp(v) of a mutable v: one node, used before and after v changes.
    const Expr of_var = Call::make(Intrinsic::Exp, {VarRef::make(v)});
    // exp(a) of a parameter: one node, first used inside a branch taken for a > 0, then after it.
    const Expr of_param = Call::make(Intrinsic::Exp, {VarRef::make(a)});
    ir::Kernel k;
    k.name = "shared_math";
    k.params = {out, a};
    k.body = Block::make({
        Declare::make(v, VarRef::make(a)),
        Store::make(VarRef::make(out), at(0), of_var),
        Assign::make(v, Binary::make(BinaryOp::Mul, VarRef::make(a), FloatImm::make(f32, 2.0))),
        Store::make(VarRef::make(out), at(1), of_var),
        If::make(Compare::make(CompareOp::GT, VarRef::make(a), FloatImm::make(f32, 0.0)),
                 Store::make(VarRef::make(out), at(2), of_param)),
        Store::make(VarRef::make(out), at(3), Binary::make(BinaryOp::Add, of_param, of_param)),
    });
    CpuKernel kernel(k, opt_level());
    for (const float x : {0.5f, -0.75f}) {
        std::vector<float> got(4, -1.0f);
        kernel.launch({1, 1, 1}, {1, 1, 1}, got.data(), x);
        EXPECT_NEAR(got[0], std::exp(double(x)), 1e-6 * std::exp(double(x))) << "exp(v) at " << x;
        EXPECT_NEAR(got[1], std::exp(2.0 * x), 1e-6 * std::exp(2.0 * x)) << "exp(v) after v = 2a";
        EXPECT_EQ(got[2], x > 0 ? float(got[3] / 2) : -1.0f) << "the branch at " << x;
        EXPECT_NEAR(got[3], 2 * std::exp(double(x)), 2e-6 * std::exp(double(x)))
            << "exp(a) after the branch at " << x;
    }
    // Emitted: twice for the mutable variable, once in the branch and once after it.
    const std::string llvm = emit(k, TargetSpec::parse("cpu"), Stage::LLVM, opt_level());
    size_t calls = 0;
    for (size_t at = llvm.find("call float @__ember_exp_f32("); at != std::string::npos;
         at = llvm.find("call float @__ember_exp_f32(", at + 1))
        ++calls;
    EXPECT_EQ(calls, 4u) << llvm;
}

INSTANTIATE_TEST_SUITE_P(OptLevels, CodeGenTest, ::testing::Values(0, 3),
                         [](const ::testing::TestParamInfo<int> &info) {
                             return "O" + std::to_string(info.param);
                         });

// ---------------------------------------------------------------------------------------------
// Errors, NVPTX output and the pipeline API (not per opt level).

constexpr const char *barrier_kernel = R"(
kernel @with_barrier(%out: ptr<global i32>) {
  %out[thread_idx.x] = 1:i32
  barrier
}
)";

// On the CPU, the threads of a block run as fibers that switch at barriers ([Note] CPU fibers):
// every thread's write before the barrier is seen by every thread after it.
TEST(CodeGenCpuTest, BarrierSynchronisesTheThreadsOfABlock) {
    CpuKernel k(parse_kernel(R"(
kernel @reverse(%data: ptr<global i32>, %n: i64) {
  shared %s: i32[256]
  let %t: i64 = thread_idx.x
  let %i: i64 = ((block_idx.x * block_dim.x) + %t)
  %s[%t] = %data[%i]
  barrier
  %data[%i] = %s[((block_dim.x - 1:i64) - %t)]
  barrier
  %s[%t] = 0:i32
}
)"), 3);
    const int64_t blocks = 5, threads = 256;
    std::vector<int32_t> data(blocks * threads);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i);
    k.launch({blocks, 1, 1}, {threads, 1, 1}, data.data(), int64_t(data.size()));
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t t = 0; t < threads; ++t)
            ASSERT_EQ(data[b * threads + t], b * threads + (threads - 1 - t)) << "block " << b << " thread " << t;
}

TEST(CodeGenNvptxTest, EmitsPtxWithAnEntryAndBarrier) {
    const std::string ptx = emit(parse_kernel(barrier_kernel), TargetSpec::parse("nvptx:sm_90"),
                                 Stage::Asm);
    EXPECT_NE(ptx.find(".entry with_barrier"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find(".target sm_90"), std::string::npos) << ptx;
}

TEST(CodeGenNvptxTest, CompileKeepsPtxAsTheBinary) {
    CompileOptions o;
    o.keep_ir = o.keep_llvm = o.keep_llvm_opt = o.keep_asm = true;
    CompiledKernel ck = compile(make_scalar_add(), TargetSpec::parse("nvptx:sm_80"), o);
    EXPECT_EQ(ck.kernel_name, "scalar_add");
    EXPECT_EQ(ck.entry_symbol, "scalar_add");
    EXPECT_NE(ck.binary.find(".visible .entry scalar_add("), std::string::npos);
    EXPECT_NE(ck.binary.find("ld.global.f32"), std::string::npos);
    EXPECT_EQ(ck.assembly, ck.binary);
    EXPECT_NE(ck.ir.find("kernel @scalar_add"), std::string::npos);
    EXPECT_NE(ck.llvm.find("!nvvm.annotations"), std::string::npos);
    EXPECT_NE(ck.llvm_opt.find("define void @scalar_add(ptr addrspace(1)"), std::string::npos);
    EXPECT_GE(ck.lower_seconds, 0.0);
    EXPECT_GE(ck.optimize_seconds, 0.0);
    EXPECT_GE(ck.codegen_seconds, 0.0);
}

TEST(CodeGenCpuTest, CompileKeepsOnlyTheStagesAskedFor) {
    CompileOptions o;
    o.keep_asm = true;
    CompiledKernel ck = compile(make_scalar_add(), TargetSpec::parse("cpu"), o);
    EXPECT_EQ(ck.binary.substr(0, 4), std::string("\x7f" "ELF"));
    EXPECT_NE(ck.assembly.find("scalar_add:"), std::string::npos);
    EXPECT_TRUE(ck.ir.empty());
    EXPECT_TRUE(ck.llvm.empty());
    EXPECT_TRUE(ck.llvm_opt.empty());
}

TEST(CodeGenCpuTest, EmitNamesTheEntryAndTheBody) {
    const std::string llvm = emit(make_scalar_add(), TargetSpec::parse("cpu"), Stage::LLVM, 0);
    EXPECT_NE(llvm.find("define internal void @scalar_add.body("), std::string::npos) << llvm;
    EXPECT_NE(llvm.find("define void @scalar_add(ptr"), std::string::npos) << llvm;
    const std::string opt = emit(make_scalar_add(), TargetSpec::parse("cpu"), Stage::LLVMOpt, 3);
    EXPECT_EQ(opt.find("@scalar_add.body"), std::string::npos) << "body not inlined:\n" << opt;
}

TEST(CodeGenErrorTest, BadOptLevelAndUnavailableTargetsAreLogicErrors) {
    EXPECT_THROW(compile(make_scalar_add(), TargetSpec::parse("cpu"), CompileOptions{.opt_level = 4}),
                 LogicError);
    EXPECT_THROW(compile(make_scalar_add(), TargetSpec::parse("amdgpu:gfx9999")), LogicError);
    EXPECT_THROW(compile(make_scalar_add(), TargetSpec::parse("nvptx:sm_999")), LogicError);
    EXPECT_THROW(compile(make_scalar_add(), TargetSpec::parse("cpu:not-a-cpu")), LogicError);
}

// The AMDGPU target's binary is a code object: an ELF shared object for AMDGPU (e_machine 224)
// that lld linked in this process, its kernel named in the symbol table.
TEST(CodeGenAmdgpuTest, TheBinaryIsALinkedCodeObject) {
    if (target_cache_key(TargetSpec::parse("amdgpu:gfx942")).rfind("unavailable:", 0) == 0)
        GTEST_SKIP() << "this build has no AMDGPU back end (EMBER_ENABLE_AMDGPU=OFF or no liblld)";
    for (const char *arch : {"amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx1100"}) {
        const CompiledKernel k = compile(make_scalar_add(), TargetSpec::parse(arch));
        const std::string &elf = k.binary;
        ASSERT_GT(elf.size(), 64u) << arch;
        EXPECT_EQ(elf.substr(0, 4), "\x7f" "ELF") << arch;
        EXPECT_EQ(static_cast<unsigned char>(elf[16]), 3u) << arch << ": ET_DYN, a shared object";
        EXPECT_EQ(static_cast<unsigned char>(elf[18]) | static_cast<unsigned char>(elf[19]) << 8, 224u)
            << arch << ": EM_AMDGPU";
        EXPECT_NE(elf.find("scalar_add"), std::string::npos) << arch;
        EXPECT_NE(elf.find("amdhsa.kernels"), std::string::npos) << arch << ": no kernel metadata";
    }
}

// The code object's metadata, read back for compile reports: the wave of each arch, no scratch
// or spills for a small kernel, the kernarg buffer at least the two pointers and the scalar;
// nothing for bytes that are not a code object or for a kernel it does not hold.
TEST(CodeGenAmdgpuTest, KernelInfoComesFromTheCodeObjectMetadata) {
    if (target_cache_key(TargetSpec::parse("amdgpu:gfx942")).rfind("unavailable:", 0) == 0)
        GTEST_SKIP() << "this build has no AMDGPU back end (EMBER_ENABLE_AMDGPU=OFF or no liblld)";
    for (auto [arch, wave] : {std::pair{"amdgpu:gfx90a", 64}, {"amdgpu:gfx942", 64}, {"amdgpu:gfx1100", 32}}) {
        const CompiledKernel k = compile(make_scalar_add(), TargetSpec::parse(arch));
        const std::optional<AmdgpuKernelInfo> info = amdgpu_kernel_info(k.binary, k.kernel_name);
        ASSERT_TRUE(info.has_value()) << arch;
        EXPECT_EQ(info->wavefront_size, wave) << arch;
        EXPECT_GT(info->vgprs, 0) << arch;
        EXPECT_GT(info->sgprs, 0) << arch;
        EXPECT_EQ(info->vgpr_spills, 0) << arch;
        EXPECT_EQ(info->private_segment_bytes, 0) << arch;
        EXPECT_EQ(info->group_segment_bytes, 0) << arch;
        EXPECT_GE(info->kernarg_segment_bytes, 8 + 8 + 4) << arch;
        EXPECT_FALSE(amdgpu_kernel_info(k.binary, "no_such_kernel").has_value()) << arch;
    }
    EXPECT_FALSE(amdgpu_kernel_info("not a code object", "scalar_add").has_value());
    const CompiledKernel cpu = compile(make_scalar_add(), TargetSpec::parse("cpu"));
    EXPECT_FALSE(amdgpu_kernel_info(cpu.binary, "scalar_add").has_value()) << "a host object is not a code object";
}

// An LLVM fatal error inside the pipeline ([Note] LLVM's fatal errors) is an error of the
// compile, not an abort of the process: the handler throws through LLVM's own frames (here
// report_fatal_error's) and the message names LLVM and its reason. Twice, so the handler stays.
TEST(CodeGenErrorTest, LlvmFatalErrorsBecomeCompileErrors) {
    for (int round = 0; round < 2; ++round) {
        const std::string message = detail::llvm_fatal_error_for_testing("Cannot select: v2bf16 = scalar_to_vector");
        EXPECT_NE(message.find("stopped with an internal error: Cannot select: v2bf16 = scalar_to_vector"),
                  std::string::npos) << message;
        EXPECT_NE(message.find("a defect of LLVM"), std::string::npos) << message;
    }
    // The compiler still works after it.
    EXPECT_FALSE(compile(make_scalar_add(), TargetSpec::parse("cpu")).binary.empty());
}

TEST(CodeGenErrorTest, VerifierProblemsAreCompileErrors) {
    ir::Kernel k = make_scalar_add();
    k.name = "not an identifier";
    EXPECT_THROW(compile(k, TargetSpec::parse("cpu")), CompileError);
}

TEST(CpuModuleTest, LoadRejectsGarbageAndMissingSymbols) {
    EXPECT_THROW(CpuModule::load("not an object file", "k"), CompileError);
    CompiledKernel ck = compile(make_scalar_add(), TargetSpec::parse("cpu"));
    EXPECT_THROW(CpuModule::load(ck.binary, "no_such_kernel"), CompileError);
    // The same object twice: every load has its own JITDylib, so the names do not clash.
    auto a = CpuModule::load(ck.binary, ck.entry_symbol);
    auto b = CpuModule::load(ck.binary, ck.entry_symbol);
    EXPECT_NE(a->entry(), nullptr);
    EXPECT_NE(a->entry(), b->entry());
}

TEST(CpuModuleTest, CompilesLoadsAndRunsFromManyThreads) {
    // compile() and CpuModule::load() are called from the runtime's worker threads.
    std::vector<std::thread> threads;
    std::vector<int> failures(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([t, &failures] {
            for (int round = 0; round < 3; ++round) {
                CpuKernel k(make_scalar_add(), /*opt_level=*/round == 0 ? 0 : 3);
                std::vector<float> v(100, float(t));
                k.launch({2, 1, 1}, {64, 1, 1}, v.data(), int64_t(100), float(round));
                for (float x : v) failures[t] += x != float(t + round);
                const std::string ptx = emit(make_scalar_add(), TargetSpec::parse("nvptx:sm_90"),
                                             Stage::Asm);
                failures[t] += ptx.find(".entry scalar_add") == std::string::npos;
            }
        });
    }
    for (std::thread &th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(CpuModuleTest, UnloadedModulesCanBeLoadedAgain) {
    CompiledKernel ck = compile(make_scalar_add(), TargetSpec::parse("cpu"));
    for (int i = 0; i < 20; ++i) {
        auto m = CpuModule::load(ck.binary, ck.entry_symbol);
        std::vector<float> v(4, 1.0f);
        CpuLaunch l{{1, 1, 1}, {4, 1, 1}, 0, 1, 0, /*fault=*/nullptr, /*stack_bytes=*/0};
        float *p = v.data();
        int64_t n = 4;
        float s = 2.0f;
        void *args[] = {&p, &n, &s};
        reinterpret_cast<CpuKernelFn>(m->entry())(args, &l);
        EXPECT_EQ(v[3], 3.0f);
    }
}

} // namespace
