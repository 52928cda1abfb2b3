/// \file
/// Sizes, textual forms and parsing of IR value types.
#include "ember/compiler/Type.h"

#include "ember/Error.h"

#include <array>
#include <cctype>

namespace ember::ir {

namespace {

constexpr std::array<std::string_view, 16> scalar_names = {
    "void", "bool", "i8",  "i16",  "i32", "i64", "u8",   "u16",
    "u32",  "u64",  "f16", "bf16", "f32", "f64", "e4m3", "e5m2"};
constexpr std::array<std::string_view, 4> space_names = {"global", "shared", "local", "constant"};

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

/// Splits off the first whitespace-separated word of `s`.
std::string_view next_word(std::string_view &s) {
    s = trim(s);
    size_t n = 0;
    while (n < s.size() && !std::isspace(static_cast<unsigned char>(s[n]))) ++n;
    std::string_view word = s.substr(0, n);
    s.remove_prefix(n);
    return word;
}

} // namespace

std::string_view to_string(ScalarType t) {
    auto i = static_cast<size_t>(t);
    EMBER_ASSERT(i < scalar_names.size(), "invalid ScalarType");
    return scalar_names[i];
}

std::string_view to_string(AddressSpace s) {
    auto i = static_cast<size_t>(s);
    EMBER_ASSERT(i < space_names.size(), "invalid AddressSpace");
    return space_names[i];
}

std::optional<ScalarType> parse_scalar_type(std::string_view s) {
    for (size_t i = 0; i < scalar_names.size(); ++i)
        if (scalar_names[i] == s) return static_cast<ScalarType>(i);
    return std::nullopt;
}

std::optional<AddressSpace> parse_address_space(std::string_view s) {
    for (size_t i = 0; i < space_names.size(); ++i)
        if (space_names[i] == s) return static_cast<AddressSpace>(i);
    return std::nullopt;
}

unsigned Type::bits() const {
    if (is_pointer_) return 64;
    if (lanes_ > 1) return lanes_ * lane_type().bits();
    switch (scalar_) {
    case ScalarType::Void: return 0;
    case ScalarType::Bool: return 1;
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::E4M3:
    case ScalarType::E5M2: return 8;
    case ScalarType::I16:
    case ScalarType::U16:
    case ScalarType::F16:
    case ScalarType::BF16: return 16;
    case ScalarType::I32:
    case ScalarType::U32:
    case ScalarType::F32: return 32;
    case ScalarType::I64:
    case ScalarType::U64:
    case ScalarType::F64: return 64;
    }
    EMBER_UNREACHABLE("invalid ScalarType");
}

unsigned Type::bytes() const {
    if (is_pointer_) return 8;
    if (scalar_ == ScalarType::Bool) return lanes_;
    return bits() / 8;
}

std::string Type::to_string() const {
    if (lanes_ > 1) return std::string(ir::to_string(scalar_)) + "x" + std::to_string(lanes_);
    if (!is_pointer_) return std::string(ir::to_string(scalar_));
    std::string s = "ptr<";
    s += ir::to_string(space_);
    if (readonly_) s += " const";
    s += ' ';
    s += ir::to_string(scalar_);
    s += '>';
    return s;
}

std::optional<Type> Type::parse(std::string_view s) {
    s = trim(s);
    if (auto scalar = parse_scalar_type(s)) return Type(*scalar);
    // `<scalar>x<lanes>`: no scalar name contains an 'x'.
    if (size_t x = s.find('x'); x != std::string_view::npos && x + 1 < s.size() && x + 3 >= s.size()) {
        auto element = parse_scalar_type(s.substr(0, x));
        unsigned lanes = 0;
        for (char c : s.substr(x + 1)) {
            if (c < '0' || c > '9') return std::nullopt;
            lanes = lanes * 10 + static_cast<unsigned>(c - '0');
        }
        if (!element || *element == ScalarType::Void || !Type::valid_lanes(lanes) || s[x + 1] == '0')
            return std::nullopt;
        return Type::vector(*element, lanes);
    }
    if (!s.starts_with("ptr") || !s.ends_with(">")) return std::nullopt;
    std::string_view inner = trim(s.substr(3));
    if (!inner.starts_with("<")) return std::nullopt;
    inner = inner.substr(1, inner.size() - 2); // drop '<' and '>'
    auto space = parse_address_space(next_word(inner));
    if (!space) return std::nullopt;
    std::string_view word = next_word(inner);
    bool readonly = word == "const";
    if (readonly) word = next_word(inner);
    auto element = parse_scalar_type(word);
    if (!element || *element == ScalarType::Void || !trim(inner).empty()) return std::nullopt;
    return Type::pointer(*element, *space, readonly);
}

} // namespace ember::ir
