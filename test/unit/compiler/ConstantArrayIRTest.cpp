/// \file
/// Constant arrays in the IR: the textual form (print -> parse -> print), parse errors, the
/// verifier's rules (names, kernels only, the 64 KiB limit, no stores), the content
/// hash, constant_globals, and the generated code (an externally initialised addrspace(4) global
/// named as declared and ld.const on NVPTX; a prefixed global found through CpuModule::symbol on
/// the CPU, read and rewritten through it).
#include "ember/compiler/Compiler.h"
#include "ember/compiler/CpuAbi.h"
#include "ember/compiler/Hash.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Verifier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace ember;
using namespace ember::ir;

namespace {

const char *poly_text = R"(kernel @poly(%out: ptr<global f32>, %x: ptr<global const f32>, %n: i64) {
  constant %coeffs: f32[4] @coeffs
  constant %k: i32[3] @k = [1:i32, -2:i32, 3:i32]
  let %i: i64 = ((block_idx.x * block_dim.x) + thread_idx.x)
  if (%i < %n) {
    let %0: f32 = %x[%i]
    let %1: f32 = %coeffs[3:i64]
    let %2: f32 = %coeffs[2:i64]
    let %3: f32 = %coeffs[1:i64]
    let %4: f32 = %coeffs[0:i64]
    let %5: i32 = %k[1:i64]
    %out[%i] = ((((((%1 * %0) + %2) * %0) + %3) * %0) + (%4 + cast<f32>(%5)))
  }
}
)";

Kernel parse_kernel(const std::string &text) {
    Module m = parse_module(text, "ConstantArrayIRTest");
    EXPECT_EQ(m.kernels.size(), 1u);
    return m.kernels.at(0);
}

std::string parse_error(const std::string &text) {
    try {
        parse_module(text, "t.eir");
    } catch (const CompileError &e) {
        return e.what();
    }
    return "";
}

std::string all(const std::vector<std::string> &problems) {
    std::string s;
    for (const std::string &p : problems) s += p + "\n";
    return s;
}

/// A kernel `name` with constant arrays of `counts` f32 elements named c0, c1, ...
Kernel kernel_with_constants(const std::string &name, const std::vector<std::pair<std::string, uint64_t>> &arrays) {
    std::string text = "kernel @" + name + "(%out: ptr<global f32>) {\n";
    for (const auto &[n, count] : arrays)
        text += "  constant %" + n + ": f32[" + std::to_string(count) + "] @" + n + "\n";
    text += "  %out[0:i64] = 1.0:f32\n}\n";
    return parse_kernel(text);
}

} // namespace

TEST(ConstantArrayIRTest, PrintsAndParsesBack) {
    Module m = parse_module(poly_text, "rt.eir");
    EXPECT_EQ(print(m), poly_text);
    const Kernel &k = m.kernels.at(0);
    EXPECT_TRUE(verify(k).empty()) << all(verify(k));
    std::vector<ConstantGlobal> globals = constant_globals(k);
    ASSERT_EQ(globals.size(), 2u);
    EXPECT_EQ(globals[0].name, "coeffs");
    EXPECT_EQ(globals[0].element, ScalarType::F32);
    EXPECT_EQ(globals[0].count, 4u);
    EXPECT_EQ(globals[0].bytes, 16u);
    EXPECT_EQ(globals[1].name, "k");
    EXPECT_EQ(globals[1].bytes, 12u);
}

TEST(ConstantArrayIRTest, BuiltNodesPrintTheirNameTypeAndInitialiser) {
    VariableRef c = Variable::make("tbl", Type::pointer(ScalarType::U8, AddressSpace::Constant, true), VarKind::Let);
    Stmt s = ConstantArray::make(c, "table", 2, {IntImm::make(ScalarType::U8, 7), IntImm::make(ScalarType::U8, 255)});
    EXPECT_EQ(print(s), "constant %tbl: u8[2] @table = [7:u8, 255:u8]\n");
    EXPECT_EQ(c->type.to_string(), "ptr<constant const u8>");
}

TEST(ConstantArrayIRTest, ParseErrors) {
    EXPECT_NE(parse_error("kernel @k() {\n  constant %c: f32[0] @c\n}\n").find("at least one element"),
              std::string::npos);
    EXPECT_NE(parse_error("kernel @k() {\n  constant %c: f32x4[2] @c\n}\n").find("holds scalars"),
              std::string::npos);
    EXPECT_NE(parse_error("kernel @k() {\n  constant %c: f32[2] c\n}\n").find("global name"), std::string::npos);
    EXPECT_NE(parse_error("kernel @k() {\n  constant %c: f32[2] @c = [1.0:f32]\n}\n").find("2 elements but 1"),
              std::string::npos);
    EXPECT_NE(parse_error("kernel @k() {\n  constant %c: f32[1] @c = [1:i32]\n}\n").find("literal of type f32"),
              std::string::npos);
    // Stores through the read-only pointer are rejected by the parser.
    EXPECT_NE(parse_error("kernel @k() {\n  constant %c: f32[1] @c\n  %c[0:i64] = 1.0:f32\n}\n")
                  .find("read-only pointer"),
              std::string::npos);
}

/// A kernel `name` whose constant arrays are built directly (the parser verifies what it reads).
Kernel built_kernel(const std::string &name, const std::vector<std::pair<std::string, uint64_t>> &arrays) {
    std::vector<Stmt> stmts;
    for (const auto &[n, count] : arrays)
        stmts.push_back(ConstantArray::make(
            Variable::make("v", Type::pointer(ScalarType::F32, AddressSpace::Constant, true), VarKind::Let), n, count));
    Kernel k;
    k.name = name;
    k.body = Block::make(std::move(stmts));
    return k;
}

TEST(ConstantArrayIRTest, VerifierChecksNames) {
    Kernel twice = built_kernel("k", {{"a", 4}, {"a", 4}});
    EXPECT_NE(all(verify(twice)).find("constant array @a is declared twice"), std::string::npos) << all(verify(twice));
    Kernel reserved = built_kernel("k", {{"__x", 1}});
    EXPECT_NE(all(verify(reserved)).find("reserved"), std::string::npos);
    Kernel kernel_name = built_kernel("k", {{"k", 1}});
    EXPECT_NE(all(verify(kernel_name)).find("the kernel's name"), std::string::npos);
    Kernel printf_name = built_kernel("k", {{"vprintf", 1}});
    EXPECT_NE(all(verify(printf_name)).find("reserved"), std::string::npos);

    // A name that is not an identifier can only come from a buggy pass or front end.
    VariableRef c = Variable::make("c", Type::pointer(ScalarType::F32, AddressSpace::Constant, true), VarKind::Let);
    Kernel bad;
    bad.name = "bad";
    bad.body = Block::make({ConstantArray::make(c, "not an identifier", 1)});
    EXPECT_NE(all(verify(bad)).find("is not a C identifier"), std::string::npos) << all(verify(bad));

    // The name of a called function.
    const std::string msg = parse_error("func @helper(%x: f32) -> f32 {\n  return %x\n}\n"
                                        "kernel @k(%out: ptr<global f32>) {\n"
                                        "  constant %helper: f32[1] @helper\n"
                                        "  %out[0:i64] = @helper(%helper[0:i64])\n"
                                        "}\n");
    EXPECT_NE(msg.find("constant array @helper has the name of a called function"), std::string::npos) << msg;
}

TEST(ConstantArrayIRTest, VerifierRejectsMoreThan64KiB) {
    Kernel fits = kernel_with_constants("fits", {{"a", 8192}, {"b", 8192}}); // 2 x 32 KiB
    EXPECT_TRUE(verify(fits).empty()) << all(verify(fits));
    Kernel big = built_kernel("big", {{"a", 8192}, {"b", 8192}, {"c", 1}});
    const std::string problems = all(verify(big));
    EXPECT_NE(problems.find("kernel 'big'"), std::string::npos) << problems;
    EXPECT_NE(problems.find("65540 bytes"), std::string::npos) << problems;
    EXPECT_NE(problems.find("65536"), std::string::npos) << problems;
    try {
        compile(big, TargetSpec::parse("cpu"));
        ADD_FAILURE() << "compiling more than 64 KiB of constant arrays did not throw";
    } catch (const CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("kernel 'big'"), std::string::npos) << e.what();
        EXPECT_NE(e.log().find("65540 bytes"), std::string::npos) << e.log();
    }
}

TEST(ConstantArrayIRTest, OnlyKernelsDeclareThemAndNothingWritesThem) {
    VariableRef c = Variable::make("c", Type::pointer(ScalarType::I32, AddressSpace::Constant, true), VarKind::Let);
    FunctionRef f = Function::make("f", {}, Type(),
                                   Block::make({ConstantArray::make(c, "c", 1)}));
    EXPECT_NE(all(verify(*f)).find("constant arrays are declared in kernels"), std::string::npos) << all(verify(*f));

    VariableRef d = Variable::make("d", Type::pointer(ScalarType::I32, AddressSpace::Constant, true), VarKind::Let);
    Kernel k;
    k.name = "k";
    k.body = Block::make({ConstantArray::make(d, "d", 4),
                          Store::make(VarRef::make(d), IntImm::make(ScalarType::I64, 0), IntImm::make(ScalarType::I32, 1))});
    const std::string problems = all(verify(k));
    EXPECT_NE(problems.find("store through read-only pointer"), std::string::npos) << problems;
}

TEST(ConstantArrayIRTest, HashCoversNameCountAndInitialiser) {
    const std::string base = "kernel @k(%out: ptr<global f32>) {\n  constant %c: f32[4] @";
    const std::string rest = "\n  %out[0:i64] = %c[0:i64]\n}\n";
    const std::string h1 = content_hash(parse_kernel(base + "c" + rest));
    EXPECT_EQ(h1, content_hash(parse_kernel(base + "c" + rest)));
    EXPECT_NE(h1, content_hash(parse_kernel(base + "d" + rest)));
    EXPECT_NE(h1, content_hash(parse_kernel(
                      "kernel @k(%out: ptr<global f32>) {\n  constant %c: f32[5] @c" + rest)));
    EXPECT_NE(h1, content_hash(parse_kernel(base + "c = [1.0:f32, 2.0:f32, 3.0:f32, 4.0:f32]" + rest)));
}

TEST(ConstantArrayIRTest, NvptxGlobalIsAnExternallyInitialisedConstAddrspaceArrayReadWithLdConst) {
    Kernel k = parse_kernel(poly_text);
    std::string llvm_ir;
    try {
        llvm_ir = emit(k, TargetSpec::parse("nvptx:sm_90"), Stage::LLVM);
    } catch (const LogicError &e) {
        GTEST_SKIP() << "no NVPTX back end in this build: " << e.what();
    }
    EXPECT_NE(llvm_ir.find("@coeffs = addrspace(4) externally_initialized global [4 x float] zeroinitializer, align 16"),
              std::string::npos)
        << llvm_ir;
    EXPECT_NE(llvm_ir.find("@k = addrspace(4) externally_initialized global [3 x i32] [i32 1, i32 -2, i32 3], align 16"),
              std::string::npos)
        << llvm_ir;
    const std::string ptx = emit(k, TargetSpec::parse("nvptx:sm_90"), Stage::Asm);
    // Visible, so that cuModuleGetGlobal finds them by the declared name.
    EXPECT_NE(ptx.find(".visible .const .align 16 .b8 coeffs[16];"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find(".visible .const .align 16 .b8 k[12] = {1, 0, 0, 0, 254, 255, 255, 255, 3};"),
              std::string::npos)
        << ptx;
    // Read through the constant cache: the four coefficients as one 16-byte load, k[1].
    EXPECT_NE(ptx.find("ld.const.v4.f32"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("[coeffs]"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("ld.const.u32"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("[k+4]"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("ld.global.nc.f32 \t%f2"), std::string::npos) << ptx;
}

TEST(ConstantArrayIRTest, CpuGlobalIsFoundByItsSymbolAndRewritable) {
    // out[i] = c[i] * 2 + k[i]: writes through CpuModule::symbol reach the kernel.
    Kernel k = parse_kernel(R"(kernel @twice(%out: ptr<global f32>) {
  constant %c: f32[4] @c
  constant %k: f32[4] @k = [0.5:f32, 1.5:f32, 2.5:f32, 3.5:f32]
  let %i: i64 = thread_idx.x
  %out[%i] = ((%c[%i] * 2.0:f32) + %k[%i])
}
)");
    CompiledKernel ck = compile(k, TargetSpec::parse("cpu"));
    ASSERT_EQ(ck.constants.size(), 2u);
    std::unique_ptr<CpuModule> m = CpuModule::load(ck.binary, ck.entry_symbol);
    auto *c = static_cast<float *>(m->symbol(cpu_constant_symbol("c")));
    auto *kv = static_cast<float *>(m->symbol(cpu_constant_symbol("k")));
    ASSERT_NE(c, nullptr);
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(m->symbol(cpu_constant_symbol("nope")), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 16, 0u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(c[i], 0.0f);
        EXPECT_EQ(kv[i], 0.5f + float(i));
    }
    auto run = [&](std::vector<float> &out) {
        float *out_ptr = out.data();
        void *args[] = {&out_ptr};
        CpuLaunch launch{{1, 1, 1}, {4, 1, 1}, 0, 1, 0, /*fault=*/nullptr, /*stack_bytes=*/0};
        reinterpret_cast<CpuKernelFn>(m->entry())(args, &launch);
    };
    std::vector<float> out(4, -1.0f);
    run(out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], 0.5f + float(i));
    const float values[4] = {1, 2, 3, 4};
    std::memcpy(c, values, sizeof values);
    run(out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], values[i] * 2 + 0.5f + float(i));
}
