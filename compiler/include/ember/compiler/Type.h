/// \file
/// Value types of the kernel IR: scalars, SIMD vectors of scalars, and typed pointers into an
/// address space.
#ifndef EMBER_COMPILER_TYPE_H
#define EMBER_COMPILER_TYPE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember::ir {

/// Scalar element types. The textual names are those of `to_string(ScalarType)`:
/// void bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 e4m3 e5m2.
///
/// e4m3 and e5m2 are the 8-bit floats of tensor cores (OCP FP8; CUDA's __nv_fp8_e4m3 and
/// __nv_fp8_e5m2), storage types with no arithmetic: they are loaded, stored, moved, cast to and
/// from f16, bf16 and f32, and multiplied by mma ([Note] IR semantics: 8-bit floats).
enum class ScalarType : uint8_t {
    Void,
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    E4M3,
    E5M2
};

/// Where a pointer points. Only `Global` is produced by the front end today; the others are
/// reserved for shared, local and constant memory.
enum class AddressSpace : uint8_t { Global, Shared, Local, Constant };

std::string_view to_string(ScalarType t);
std::string_view to_string(AddressSpace s);
std::optional<ScalarType> parse_scalar_type(std::string_view s);
std::optional<AddressSpace> parse_address_space(std::string_view s);

/// A value type: a scalar, a vector of 2, 4, 8 or 16 scalars of one type (SIMD lanes), or a
/// pointer to scalars in one address space.
///
/// Textual form: `i64`, `f32`, `f32x4`, `boolx8`, `ptr<global f32>`, `ptr<global const f32>`
/// (read-only).
///
/// The kind predicates (`is_int`, `is_float`, `is_bool`, `is_arithmetic`, ...) hold for scalars
/// only, so that every place that needs a scalar (an index, a condition, a loop bound, an atomic)
/// rejects vectors without saying so; code that works lane by lane asks `lane_type()`.
class Type {
public:
    constexpr Type() = default; // void
    constexpr Type(ScalarType s) : scalar_(s) {} // NOLINT: scalars convert implicitly

    static constexpr Type pointer(ScalarType element, AddressSpace space = AddressSpace::Global,
                                  bool readonly = false) {
        Type t(element);
        t.is_pointer_ = true;
        t.space_ = space;
        t.readonly_ = readonly;
        return t;
    }
    /// Whether a vector may have `n` lanes: 2, 4, 8 or 16.
    static constexpr bool valid_lanes(unsigned n) { return n == 2 || n == 4 || n == 8 || n == 16; }
    /// A vector of `lanes` (valid_lanes) elements of the non-void scalar `element`; `lanes` 1 gives
    /// the scalar itself. Check valid_lanes first: other counts give void.
    static constexpr Type vector(ScalarType element, unsigned lanes) {
        if (lanes == 1) return Type(element);
        if (!valid_lanes(lanes) || element == ScalarType::Void) return Type();
        Type t(element);
        t.lanes_ = static_cast<uint8_t>(lanes);
        return t;
    }

    constexpr bool is_pointer() const { return is_pointer_; }
    /// One value (not a pointer, not a vector).
    constexpr bool is_scalar() const { return !is_pointer_ && lanes_ == 1; }
    constexpr bool is_vector() const { return lanes_ > 1; }
    /// 1 for scalars and pointers.
    constexpr unsigned lanes() const { return lanes_; }
    /// The scalar type itself, the element of a vector, or for a pointer the type it points to.
    constexpr ScalarType scalar() const { return scalar_; }
    constexpr ScalarType element() const { return scalar_; }
    constexpr AddressSpace space() const { return space_; }
    constexpr bool readonly() const { return readonly_; }

    /// The type of one lane of a vector; a scalar or a pointer is its own lane type.
    constexpr Type lane_type() const { return is_pointer_ ? *this : Type(scalar_); }
    /// The vector of `lanes` lanes of this (scalar or vector) type's element; 1 gives the scalar.
    constexpr Type with_lanes(unsigned lanes) const { return vector(scalar_, lanes); }

    constexpr bool is_void() const { return is_scalar() && scalar_ == ScalarType::Void; }
    constexpr bool is_bool() const { return is_scalar() && scalar_ == ScalarType::Bool; }
    constexpr bool is_int() const {
        return is_scalar() && scalar_ >= ScalarType::I8 && scalar_ <= ScalarType::U64;
    }
    constexpr bool is_signed_int() const {
        return is_scalar() && scalar_ >= ScalarType::I8 && scalar_ <= ScalarType::I64;
    }
    constexpr bool is_unsigned_int() const {
        return is_scalar() && scalar_ >= ScalarType::U8 && scalar_ <= ScalarType::U64;
    }
    constexpr bool is_float() const {
        return is_scalar() && scalar_ >= ScalarType::F16 && scalar_ <= ScalarType::F64;
    }
    /// Integers and floats (not bool, not pointers, not vectors, not 8-bit floats).
    constexpr bool is_arithmetic() const { return is_int() || is_float(); }
    /// e4m3 or e5m2: an 8-bit float, which has no arithmetic.
    constexpr bool is_fp8() const {
        return is_scalar() && (scalar_ == ScalarType::E4M3 || scalar_ == ScalarType::E5M2);
    }

    /// Width in bits of a scalar (bool is 1), of all lanes of a vector, 64 for pointers.
    unsigned bits() const;
    /// Size in bytes in memory (bool is 1 per lane), 8 for pointers.
    unsigned bytes() const;

    /// The pointee type as a scalar `Type`.
    constexpr Type element_type() const { return Type(scalar_); }

    std::string to_string() const;
    /// Parses the textual form; nullopt when `s` is not a type.
    static std::optional<Type> parse(std::string_view s);

    friend constexpr bool operator==(const Type &a, const Type &b) {
        return a.scalar_ == b.scalar_ && a.is_pointer_ == b.is_pointer_ && a.lanes_ == b.lanes_ &&
               (!a.is_pointer_ || (a.space_ == b.space_ && a.readonly_ == b.readonly_));
    }
    friend constexpr bool operator!=(const Type &a, const Type &b) { return !(a == b); }

private:
    ScalarType scalar_ = ScalarType::Void;
    bool is_pointer_ = false;
    AddressSpace space_ = AddressSpace::Global;
    bool readonly_ = false;
    uint8_t lanes_ = 1;
};

} // namespace ember::ir

#endif // EMBER_COMPILER_TYPE_H
