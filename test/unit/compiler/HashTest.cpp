/// \file
/// Unit tests of kernel content hashes.
#include "ember/compiler/Hash.h"

#include "ember/compiler/IRPrinter.h"

#include <gtest/gtest.h>

using namespace ember::ir;

namespace {

/// out[i] = a[i] * scale for i = thread_idx.x; the parameters tweak one detail each.
Kernel build(std::string name = "scale", double scale = 2.0, ScalarType elem = ScalarType::F32,
             std::string var_name = "x", bool readonly_input = true) {
    Type elem_t = elem;
    auto out = Variable::make("out", Type::pointer(elem), VarKind::Param);
    auto a = Variable::make("a", Type::pointer(elem, AddressSpace::Global, readonly_input),
                            VarKind::Param);
    auto x = Variable::make(var_name, elem_t, VarKind::Let);
    Expr tid = SpecialReg::make(SpecialRegKind::ThreadIdx, 0);
    Stmt body = Block::make({
        Let::make(x, Load::make(VarRef::make(a), tid)),
        Store::make(VarRef::make(out), tid,
                    Binary::make(BinaryOp::Mul, VarRef::make(x), FloatImm::make(elem_t, scale))),
    });
    return Kernel{std::move(name), {out, a}, body};
}

bool is_lower_hex(const std::string &s) {
    return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

TEST(HashTest, IsLowerCaseSha256Hex) {
    std::string h = content_hash(build());
    EXPECT_EQ(h.size(), 64u);
    EXPECT_TRUE(is_lower_hex(h)) << h;
}

TEST(HashTest, KnownValueOfAnEmptyKernel) {
    // SHA-256 of "kernel @k() {\n}\n".
    Kernel k{"k", {}, Block::make({})};
    ASSERT_EQ(print(k), "kernel @k() {\n}\n");
    EXPECT_EQ(content_hash(k), "aaa5b864d9abab6eab616db9c6c47d82ddb89af9d6268849ee05a7b9bb5e711b");
}

TEST(HashTest, SameIRBuiltTwiceHashesTheSame) {
    EXPECT_EQ(content_hash(build()), content_hash(build()));
    Kernel k = build();
    EXPECT_EQ(content_hash(k), content_hash(parse_module(print(k)).kernels[0]));
}

TEST(HashTest, AnyChangeChangesTheHash) {
    std::string base = content_hash(build());
    EXPECT_NE(content_hash(build("scale2")), base);
    EXPECT_NE(content_hash(build("scale", 3.0)), base);
    EXPECT_NE(content_hash(build("scale", 2.0, ScalarType::F64)), base);
    EXPECT_NE(content_hash(build("scale", 2.0, ScalarType::F32, "y")), base);
    EXPECT_NE(content_hash(build("scale", 2.0, ScalarType::F32, "x", false)), base);
    Kernel with_barrier = build();
    std::vector<Stmt> stmts = with_barrier.body.as<Block>()->stmts;
    stmts.push_back(Barrier::make());
    with_barrier.body = Block::make(stmts);
    EXPECT_NE(content_hash(with_barrier), base);
}
