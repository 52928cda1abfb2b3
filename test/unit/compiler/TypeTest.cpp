/// \file
/// Unit tests of IR value types: sizes, predicates, textual forms and parsing.
#include "ember/compiler/Type.h"

#include <gtest/gtest.h>

using namespace ember::ir;

TEST(TypeTest, ScalarNamesRoundTrip) {
    for (int i = 0; i <= static_cast<int>(ScalarType::F64); ++i) {
        auto s = static_cast<ScalarType>(i);
        EXPECT_EQ(parse_scalar_type(to_string(s)), s) << to_string(s);
        EXPECT_EQ(Type::parse(Type(s).to_string()), Type(s)) << to_string(s);
    }
    EXPECT_EQ(to_string(ScalarType::BF16), "bf16");
    EXPECT_EQ(parse_scalar_type("int"), std::nullopt);
}

TEST(TypeTest, AddressSpaceNamesRoundTrip) {
    for (auto s :
         {AddressSpace::Global, AddressSpace::Shared, AddressSpace::Local, AddressSpace::Constant})
        EXPECT_EQ(parse_address_space(to_string(s)), s);
    EXPECT_EQ(to_string(AddressSpace::Global), "global");
    EXPECT_EQ(parse_address_space("generic"), std::nullopt);
}

TEST(TypeTest, PointerTextForms) {
    EXPECT_EQ(Type::pointer(ScalarType::F32).to_string(), "ptr<global f32>");
    EXPECT_EQ(Type::pointer(ScalarType::F32, AddressSpace::Global, /*readonly=*/true).to_string(),
              "ptr<global const f32>");
    EXPECT_EQ(Type::pointer(ScalarType::I8, AddressSpace::Shared).to_string(), "ptr<shared i8>");
    EXPECT_EQ(Type::parse("ptr<global const f32>"),
              Type::pointer(ScalarType::F32, AddressSpace::Global, true));
    EXPECT_EQ(Type::parse(" ptr< global  f64 > "), Type::pointer(ScalarType::F64));
}

TEST(TypeTest, ParseRejectsMalformedTypes) {
    for (const char *bad :
         {"", "ptr", "ptr<>", "ptr<global>", "ptr<f32>", "ptr<global void>", "ptr<global f32",
          "ptr<global const const f32>", "ptr<heap f32>", "ptr<global f32 x>", "f31"})
        EXPECT_EQ(Type::parse(bad), std::nullopt) << bad;
    EXPECT_EQ(Type::parse("i64 "), Type(ScalarType::I64)); // surrounding blanks are fine
}

TEST(TypeTest, Sizes) {
    EXPECT_EQ(Type(ScalarType::Bool).bits(), 1u);
    EXPECT_EQ(Type(ScalarType::Bool).bytes(), 1u);
    EXPECT_EQ(Type(ScalarType::I8).bits(), 8u);
    EXPECT_EQ(Type(ScalarType::U16).bytes(), 2u);
    EXPECT_EQ(Type(ScalarType::F16).bits(), 16u);
    EXPECT_EQ(Type(ScalarType::BF16).bytes(), 2u);
    EXPECT_EQ(Type(ScalarType::F32).bytes(), 4u);
    EXPECT_EQ(Type(ScalarType::U64).bits(), 64u);
    EXPECT_EQ(Type(ScalarType::Void).bits(), 0u);
    EXPECT_EQ(Type::pointer(ScalarType::I8).bits(), 64u);
    EXPECT_EQ(Type::pointer(ScalarType::I8).bytes(), 8u);
}

TEST(TypeTest, Predicates) {
    EXPECT_TRUE(Type(ScalarType::I32).is_signed_int());
    EXPECT_TRUE(Type(ScalarType::U32).is_unsigned_int());
    EXPECT_FALSE(Type(ScalarType::Bool).is_int());
    EXPECT_FALSE(Type(ScalarType::Bool).is_arithmetic());
    EXPECT_TRUE(Type(ScalarType::BF16).is_float());
    EXPECT_FALSE(Type::pointer(ScalarType::I32).is_int());
    EXPECT_EQ(Type::pointer(ScalarType::I32).element_type(), Type(ScalarType::I32));
    EXPECT_TRUE(Type().is_void());
}

TEST(TypeTest, PointerEqualityIncludesSpaceAndConstness) {
    Type p = Type::pointer(ScalarType::F32);
    EXPECT_NE(p, Type(ScalarType::F32));
    EXPECT_NE(p, Type::pointer(ScalarType::F32, AddressSpace::Shared));
    EXPECT_NE(p, Type::pointer(ScalarType::F32, AddressSpace::Global, true));
    EXPECT_EQ(p, Type::pointer(ScalarType::F32));
}
