/// \file
/// The warp's matrix operations: tensor-core multiply-accumulate on fragments (`Mma`, `mma`) and
/// `ldmatrix`. Semantics and fragment layouts: [Note] IR semantics (Matrix multiply-accumulate,
/// Matrix loads) in compiler/include/ember/compiler/IR.h.
///
/// One mma is a type, `Mma<In, Shape, Acc>`, whose fragments are types too, so an operand of the
/// wrong shape, element type or role fails the C++ build:
///
///     using Op = Mma<bfloat16, m16n8k16>;     // D (16 x 8, f32) = A (16 x 16) * B (16 x 8) + C
///     Op::A a;  Op::B b;  Op::C acc;           // this lane's parts of A, B and C (zeros)
///     a.load_matrix(tile_a, 0, 32);            // ldmatrix from shared memory, row-major, 32 wide
///     b.load_matrix(tile_b, 0, 8);
///     acc = mma(a, b, acc);                    // all 32 lanes of the warp together
///     acc.store(c, row * n + col, n);
#ifndef EMBER_DSL_MATRIX_H
#define EMBER_DSL_MATRIX_H

#include "ember/dsl/Builtins.h"
#include "ember/dsl/Control.h"
#include "ember/dsl/SIMD.h"

#include <source_location>
#include <type_traits>
#include <vector>

namespace ember {

/// f32 values that an mma reads as TensorFloat-32: the sign, the exponent and the 10 high bits of
/// the mantissa (`Mma<tf32, m16n8k8>`; its fragments hold float).
struct tf32 {};

/// The shape of an mma: D (M x N) = A (M x K) * B (K x N) + C.
template <int M, int N, int K> struct MmaShape {
    static constexpr int m = M, n = N, k = K;
};
using m16n8k16 = MmaShape<16, 8, 16>;
using m16n8k8 = MmaShape<16, 8, 8>;
using m16n8k32 = MmaShape<16, 8, 32>;

/// Which operand a fragment belongs to. C is also the result, D.
enum class MmaOperand { A, B, C };

/// How a matrix lies in memory: rows one after the other (element (r, c) at r * ld + c), or
/// columns (at c * ld + r).
enum class MatrixLayout { RowMajor, ColMajor };

template <MmaOperand Role, class Op> class MmaFragment;

namespace detail {
template <class In> struct mma_input {
    static constexpr bool valid = false;
};
template <> struct mma_input<half> {
    static constexpr bool valid = true;
    using element = half;
    static constexpr ir::MmaInput ir = ir::MmaInput::F16;
};
template <> struct mma_input<bfloat16> {
    static constexpr bool valid = true;
    using element = bfloat16;
    static constexpr ir::MmaInput ir = ir::MmaInput::BF16;
};
template <> struct mma_input<tf32> {
    static constexpr bool valid = true;
    using element = float;
    static constexpr ir::MmaInput ir = ir::MmaInput::TF32;
};
template <Fp8Format F> struct mma_input<float8<F>> {
    static constexpr bool valid = true;
    using element = float8<F>;
    static constexpr ir::MmaInput ir = F == Fp8Format::e4m3 ? ir::MmaInput::E4M3
                                                            : ir::MmaInput::E5M2;
};

template <class Shape> struct is_mma_shape : std::false_type {};
template <int M, int N, int K> struct is_mma_shape<MmaShape<M, N, K>> : std::true_type {};

/// Whether ember has the mma of these types ([Note] IR semantics: Matrix multiply-accumulate).
template <class In, class Shape, class Acc> constexpr bool mma_exists() {
    if constexpr (!mma_input<In>::valid || !is_mma_shape<Shape>::value) {
        return false;
    } else {
        if (Shape::m != 16 || Shape::n != 8) return false;
        const bool acc_ok = std::is_same_v<Acc, float> ||
                            (std::is_same_v<Acc, half> && std::is_same_v<In, half>);
        if (!acc_ok) return false;
        if constexpr (is_fp8<In>) return Shape::k == 32;
        return std::is_same_v<In, tf32> ? Shape::k == 8 : (Shape::k == 8 || Shape::k == 16);
    }
}

/// Emits a bound IR expression (a warp operation) and wraps it as a `V`.
template <class V>
V bound_vector(ir::Expr e, const char *what, const std::source_location &loc, uint32_t trace) {
    Builder &b = require_builder(what, loc);
    check_trace(trace, loc);
    return V(b.bind(std::move(e)), b.id());
}
} // namespace detail

/// One kind of warp matrix multiply-accumulate ([Note] IR semantics: Matrix multiply-accumulate):
/// `In` is the element type of A and B (half, bfloat16, tf32, float8_e4m3 or float8_e5m2),
/// `Shape` m16n8k16 or m16n8k8 (tf32: m16n8k8; the 8-bit floats: m16n8k32), `Acc` that of C and
/// D (float, or half with half inputs). NVIDIA sm_80 and later (m16n8k8 with half: sm_75; the
/// 8-bit floats: sm_89); the CPU device emulates it.
template <class In, class Shape, class Acc = float> struct Mma {
    static_assert(detail::mma_input<In>::valid,
                  "Mma<In, Shape, Acc>: In is half, bfloat16, tf32, float8_e4m3 or float8_e5m2");
    static_assert(detail::is_mma_shape<Shape>::value,
                  "Mma<In, Shape, Acc>: Shape is m16n8k16, m16n8k8 or m16n8k32");
    static_assert(detail::mma_exists<In, Shape, Acc>(),
                  "there is no such mma: m16n8k16 and m16n8k8 for half and bfloat16, m16n8k8 for "
                  "tf32, m16n8k32 for float8_e4m3 and float8_e5m2; Acc is float, or half with half "
                  "inputs");
    using input_type = In;
    using shape = Shape;
    using accumulator_type = Acc;
    static constexpr ir::MmaShape ir_shape{Shape::m, Shape::n, Shape::k};
    static constexpr ir::MmaInput ir_input = detail::mma_input<In>::ir;

    using A = MmaFragment<MmaOperand::A, Mma>;
    using B = MmaFragment<MmaOperand::B, Mma>;
    using C = MmaFragment<MmaOperand::C, Mma>;
};

/// A lane's part of one operand of an `Mma` (its fragment): a mutable variable holding `size`
/// elements, element i being `(row(lane, i), col(lane, i))` of the operand's matrix. Created as
/// zeros; assigned from a `SIMD<element_type, size>` (what `mma` returns) or another fragment.
template <MmaOperand Role, class Op> class MmaFragment {
    using In = typename Op::input_type;
    using Shape = typename Op::shape;
    static constexpr bool is_tf32 = std::is_same_v<In, tf32>;
    static constexpr bool is_fp8 = detail::is_fp8<In>;

public:
    static constexpr MmaOperand role = Role;
    using mma_type = Op;
    using element_type = std::conditional_t<Role == MmaOperand::C, typename Op::accumulator_type,
                                            typename detail::mma_input<In>::element>;
    /// Elements per lane: the operand's m x k, k x n or m x n elements over 32 lanes.
    static constexpr int rows = Role == MmaOperand::B ? Shape::k : Shape::m;
    static constexpr int cols = Role == MmaOperand::A ? Shape::k : Shape::n;
    static constexpr int size = rows * cols / 32;
    using vector_type = SIMD<element_type, size>;

    /// The row of the operand's matrix that element `i` of lane `lane` holds ([Note] IR
    /// semantics: Matrix multiply-accumulate).
    static constexpr int row(int lane, int i) { return row_at(lane, i); }
    /// The column of the operand's matrix that element `i` of lane `lane` holds.
    static constexpr int col(int lane, int i) { return col_at(lane, i); }

    /// Zeros.
    explicit MmaFragment(std::source_location loc = std::source_location::current())
        : var_(zeros(loc), loc) {}
    /// The lane's elements.
    MmaFragment(const vector_type &v,
                std::source_location loc = std::source_location::current()) // NOLINT
        : var_(v, loc) {}
    MmaFragment(const MmaFragment &other,
                std::source_location loc = std::source_location::current())
        : var_(other.value(), loc) {}

    MmaFragment &operator=(const vector_type &v) {
        var_ = v;
        return *this;
    }
    MmaFragment &operator=(const MmaFragment &other) {
        var_ = other.value();
        return *this;
    }

    /// The current elements.
    vector_type value() const { return var_.value(); }
    /// Element i (a C++ integer in [0, size)).
    Value<element_type> operator[](detail::LaneIndex i) const { return var_[i]; }

    /// Reads the lane's elements of the operand's matrix, which lies in memory at `p[origin ...]`
    /// with `ld` elements between rows (RowMajor) or columns (ColMajor): element (r, c) at
    /// `origin + r * ld + c` or `origin + c * ld + r`. Every lane reads its own elements, so it
    /// is not a warp operation; any memory, any element type.
    template <class T, ir::AddressSpace S>
    void load(const Ptr<T, S> &p, detail::IndexArg origin, detail::IndexArg ld,
              MatrixLayout layout = MatrixLayout::RowMajor) {
        static_assert(std::is_same_v<std::remove_const_t<T>, element_type>,
                      "MmaFragment::load reads elements of the fragment's type");
        std::vector<ir::Expr> lanes;
        uint32_t trace = 0;
        for (int i = 0; i < size; ++i) {
            Value<element_type> v = p[offset(origin, ld, layout, i)];
            lanes.push_back(v.expr());
            trace = detail::merge_trace(trace, v.trace());
        }
        var_ = vector_type(ir::MakeVector::make(vector_type::ir_type(), std::move(lanes)), trace);
    }

    /// Writes the lane's elements to the matrix at `p[origin ...]` (as load() reads them).
    template <class T, ir::AddressSpace S>
    void store(const Ptr<T, S> &p, detail::IndexArg origin, detail::IndexArg ld,
               MatrixLayout layout = MatrixLayout::RowMajor) const {
        static_assert(!std::is_const_v<T>,
                      "MmaFragment::store writes memory: a Ptr<const T> will not do");
        static_assert(std::is_same_v<T, element_type>,
                      "MmaFragment::store writes elements of the fragment's type");
        vector_type v = value();
        for (int i = 0; i < size; ++i) p[offset(origin, ld, layout, i)] = v[i];
    }

    /// Reads the operand (A or B, 16-bit elements) from shared memory with `ldmatrix`: a warp
    /// operation, all 32 lanes together. The matrix lies at `p[origin ...]` as for load(); each
    /// row (RowMajor) or column (ColMajor) of 8 elements that a lane's address points to must be
    /// aligned to 16 bytes, so `origin` and `ld` are multiples of 8.
    void load_matrix(const SharedPtr<element_type> &p, detail::IndexArg origin, detail::IndexArg ld,
                     MatrixLayout layout = MatrixLayout::RowMajor,
                     std::source_location loc = std::source_location::current()) {
        Int o = to_int(origin), w = to_int(ld);
        const bool row_major = layout == MatrixLayout::RowMajor;
        load_matrix_at(
            p,
            [&](const Int &r, const Int &c) { return row_major ? o + r * w + c : o + c * w + r; },
            row_major, loc);
    }

    /// Reads this B fragment and `next`, the fragment of the 8 columns after this one's, with one
    /// ldmatrix of twice the matrices (half the instructions of two load_matrix calls); as
    /// load_matrix otherwise.
    void load_matrix_pair(MmaFragment &next, const SharedPtr<element_type> &p,
                          detail::IndexArg origin, detail::IndexArg ld,
                          MatrixLayout layout = MatrixLayout::RowMajor,
                          std::source_location loc = std::source_location::current()) {
        Int o = to_int(origin), w = to_int(ld);
        const bool row_major = layout == MatrixLayout::RowMajor;
        load_matrix_pair_at(
            next, p,
            [&](const Int &r, const Int &c) { return row_major ? o + r * w + c : o + c * w + r; },
            row_major, loc);
    }

    /// load_matrix with the operand's element (r, c) at `p[at(r, c)]`: 8 elements in a row
    /// (`row_major`) or a column from each lane's address are consecutive in memory, and start
    /// 16-byte aligned (how TileView's padded and swizzled tiles are read).
    template <class At>
    void load_matrix_at(const SharedPtr<element_type> &p, At &&at, bool row_major,
                        std::source_location loc = std::source_location::current()) {
        static_assert(Role != MmaOperand::C,
                      "load_matrix reads an A or B fragment (ldmatrix); C has load()");
        static_assert(sizeof(element_type) == 2,
                      "load_matrix (ldmatrix) reads 16-bit elements: not tf32");
        constexpr int count = size / 2; // 8 x 8 matrices
        // Lane 8j + r gives row r of 8 x 8 matrix j, which is the operand's block (rb, cb) of
        // 8 x 8 elements: A's matrices go down, then across (a0a1, a2a3, a4a5, a6a7); B's down.
        Int l = lane_id();
        Int j = l / 8 % count, r = l % 8;
        Int rb = Role == MmaOperand::A ? j % 2 : j;
        Int cb = Role == MmaOperand::A ? j / 2 : Int(0);
        // The lane points at the start of a row (row-major) or a column of its 8 x 8 block.
        Int index = row_major ? at(8 * rb + r, 8 * cb) : at(8 * rb, 8 * cb + r);
        // B is held column by column (b0b1 is a column's pair), A row by row: a row-major B and a
        // column-major A are read transposed.
        const bool trans = (Role == MmaOperand::B) == row_major;
        var_ = ldmatrix_impl<count>(p, index, trans, loc);
    }

    /// load_matrix_pair with the operand's element (r, c) at `p[at(r, c)]` (c counting this
    /// fragment's 8 columns and then next's), as load_matrix_at.
    template <class At>
    void load_matrix_pair_at(MmaFragment &next, const SharedPtr<element_type> &p, At &&at,
                             bool row_major,
                             std::source_location loc = std::source_location::current()) {
        static_assert(Role == MmaOperand::B, "load_matrix_pair reads two B fragments side by side");
        static_assert(sizeof(element_type) == 2,
                      "load_matrix_pair (ldmatrix) reads 16-bit elements: not tf32");
        constexpr int count = size; // 8 x 8 matrices: size / 2 per fragment
        // Matrices j = 0 .. count/2 - 1 are this fragment's (down k), the rest next's.
        Int l = lane_id();
        Int j = l / 8 % count, r = l % 8;
        Int kb = j % (count / 2), nb = j / (count / 2);
        Int index = row_major ? at(8 * kb + r, 8 * nb) : at(8 * kb, 8 * nb + r);
        SIMD<element_type, 2 * count> both = ldmatrix_impl<count>(p, index, row_major, loc);
        std::vector<ir::Expr> lo, hi;
        for (int e = 0; e < size; ++e) {
            lo.push_back(both[e].expr());
            hi.push_back(both[size + e].expr());
        }
        var_ = vector_type(ir::MakeVector::make(vector_type::ir_type(), std::move(lo)),
                           both.trace());
        next.var_ = vector_type(ir::MakeVector::make(vector_type::ir_type(), std::move(hi)),
                                both.trace());
    }

    /// The A fragment holding the result of two mmas side by side, rounded to the input type:
    /// `left` is the C fragment of columns 0-7 of the 16 x 16 product, `right` of columns 8-15
    /// (m16n8k16; m16n8k8 takes `left` alone). A C fragment's elements sit where an A
    /// fragment's do, so this is a conversion and no data moves between lanes: how a product
    /// feeds the next mma (attention's P V after Q K^T).
    template <class V>
    static vector_type
    from_accumulators(const V &left, const V &right,
                      std::source_location loc = std::source_location::current()) {
        static_assert(Role == MmaOperand::A && !is_tf32,
                      "from_accumulators makes an f16 or bf16 A fragment");
        static_assert(Shape::k == 16,
                      "m16n8k16's A fragment is two accumulators; m16n8k8's is one");
        SIMD<float, 4> l = accumulator(left, loc), r = accumulator(right, loc);
        SIMD<float, 8> both{l[0], l[1], l[2], l[3], r[0], r[1], r[2], r[3]};
        return cast<element_type>(both, loc);
    }
    template <class V>
    static vector_type
    from_accumulators(const V &only, std::source_location loc = std::source_location::current()) {
        static_assert(Role == MmaOperand::A && !is_tf32,
                      "from_accumulators makes an f16 or bf16 A fragment");
        static_assert(Shape::k == 8, "m16n8k8's A fragment is one accumulator; m16n8k16's is two");
        return cast<element_type>(accumulator(only, loc), loc);
    }

    const Var<vector_type> &variable() const { return var_; }

    /// row() and col() for a C++ lane (int) or a traced one (Int: `row_at(lane_id(), i)`).
    template <class I> static constexpr I row_at(const I &lane, int i) {
        const I g = lane / 4, t = lane % 4;
        if constexpr (Role == MmaOperand::C)
            return g + 8 * (i / 2);
        else if constexpr (Role == MmaOperand::A) {
            if constexpr (is_fp8)
                return g + 8 * (i / 4 % 2);
            else if constexpr (is_tf32)
                return g + 8 * (i % 2);
            else if constexpr (Shape::k == 8)
                return g + 8 * (i / 2);
            else
                return g + 8 * (i / 2 % 2);
        } else {
            if constexpr (is_fp8)
                return 4 * t + i % 4 + 16 * (i / 4);
            else if constexpr (is_tf32)
                return t + 4 * i;
            else if constexpr (Shape::k == 8)
                return 2 * t + i;
            else
                return 2 * t + (i % 2 + 8 * (i / 2));
        }
    }
    template <class I> static constexpr I col_at(const I &lane, int i) {
        const I g = lane / 4, t = lane % 4;
        if constexpr (Role == MmaOperand::C)
            return 2 * t + i % 2;
        else if constexpr (Role == MmaOperand::A) {
            if constexpr (is_fp8)
                return 4 * t + i % 4 + 16 * (i / 8);
            else if constexpr (is_tf32)
                return t + 4 * (i / 2);
            else if constexpr (Shape::k == 8)
                return 2 * t + i % 2;
            else
                return 2 * t + (i % 2 + 8 * (i / 4));
        } else {
            return g;
        }
    }

private:
    /// An f32 C fragment's elements: from the fragment, or from its value (a SIMD<float, 4>).
    template <class V>
    static SIMD<float, 4> accumulator(const V &x, const std::source_location &loc) {
        if constexpr (requires { typename V::mma_type; }) {
            static_assert(V::role == MmaOperand::C &&
                              std::is_same_v<typename V::element_type, float>,
                          "from_accumulators takes f32 C fragments");
            return x.value();
        } else {
            return detail::to_simd<SIMD<float, 4>>(x, loc);
        }
    }
    static vector_type zeros(const std::source_location &loc) {
        if constexpr (detail::is_fp8<element_type>) // no 8-bit constants: +0.0 from f32
            return cast<element_type>(SIMD<float, size>(0.0f, loc), loc);
        else
            return vector_type(element_type(0.0f), loc);
    }
    static Int to_int(const detail::IndexArg &i) {
        ir::Expr e = i.expr;
        if (e.type() != ir::Type(ir::ScalarType::I64)) e = ir::Cast::make(ir::ScalarType::I64, e);
        return Int(e, i.trace);
    }
    /// The index of this lane's element i.
    static Int offset(const detail::IndexArg &origin, const detail::IndexArg &ld,
                      MatrixLayout layout, int i) {
        Int l = lane_id();
        Int r = row_at(l, i), c = col_at(l, i);
        return layout == MatrixLayout::RowMajor ? to_int(origin) + r * to_int(ld) + c
                                                : to_int(origin) + c * to_int(ld) + r;
    }
    template <int N>
    static SIMD<element_type, 2 * N> ldmatrix_impl(const SharedPtr<element_type> &p,
                                                   const Int &index, bool trans,
                                                   const std::source_location &loc) {
        return detail::bound_vector<SIMD<element_type, 2 * N>>(
            ir::MatrixLoad::make(p.expr(), index.expr(), N, trans), "ldmatrix", loc,
            detail::merge_trace(p.trace(), index.trace()));
    }

    Var<vector_type> var_;
};

/// D = A * B + C for the warp ([Note] IR semantics: Matrix multiply-accumulate): a warp
/// operation, all 32 lanes together. The three fragments must be of one `Mma`; the result is the
/// lane's part of D, to assign to a C fragment (`acc = mma(a, b, acc)`).
template <class FA, class FB, class FC>
auto mma(const FA &a, const FB &b, const FC &c,
         std::source_location loc = std::source_location::current()) {
    static_assert(FA::role == MmaOperand::A && FB::role == MmaOperand::B &&
                      FC::role == MmaOperand::C,
                  "mma(a, b, c) takes an A, a B and a C fragment, in this order");
    static_assert(
        std::is_same_v<typename FA::mma_type, typename FB::mma_type> &&
            std::is_same_v<typename FA::mma_type, typename FC::mma_type>,
        "mma(a, b, c): the fragments belong to different Mma types (shape, input or accumulator "
        "type differ)");
    using V = typename FC::vector_type;
    using Op = typename FA::mma_type;
    auto av = a.value();
    auto bv = b.value();
    auto cv = c.value();
    const uint32_t trace = detail::merge_trace(detail::merge_trace(av.trace(), bv.trace()),
                                               cv.trace());
    return detail::bound_vector<V>(
        ir::Mma::make(Op::ir_shape, Op::ir_input, av.expr(), bv.expr(), cv.expr()), "mma", loc,
        trace);
}

/// `ldmatrix.xN` ([Note] IR semantics: Matrix loads): the warp loads N (1, 2 or 4) 8 x 8 matrices
/// of 16-bit elements from shared memory; this lane gives the address `p + index` of row
/// lane % 8 of matrix lane / 8 (16 bytes, aligned to 16) and receives 2N elements. With `trans`
/// the matrices are read transposed.
template <int N, class T>
SIMD<T, 2 * N> ldmatrix(const SharedPtr<T> &p, detail::IndexArg index, bool trans = false,
                        std::source_location loc = std::source_location::current()) {
    static_assert(N == 1 || N == 2 || N == 4, "ldmatrix<N> loads 1, 2 or 4 matrices");
    static_assert(sizeof(T) == 2 && !std::is_same_v<T, bool>,
                  "ldmatrix loads 16-bit elements (half, bfloat16, int16_t, uint16_t)");
    return detail::bound_vector<SIMD<T, 2 * N>>(
        ir::MatrixLoad::make(p.expr(), index.expr, N, trans), "ldmatrix", loc,
        detail::merge_trace(p.trace(), index.trace));
}

} // namespace ember

#endif // EMBER_DSL_MATRIX_H
