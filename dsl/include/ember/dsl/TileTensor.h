/// \file
/// Matrices as views: `TileTensor<T>` (a kernel parameter: a row-major matrix in global memory,
/// passed from the host as `tile_tensor(buffer, rows, cols)`) and `TileView<T, S, Sw>` (any
/// strided 2-D view: tiles of a tensor, a thread's share of a tile, a tile in shared memory,
/// swizzled or not). Element access computes `offset + i * row_stride + j * col_stride` (then
/// the swizzle) from traced integers, so it compiles to what indexing by hand gives (lit test
/// test/lit/dsl/tile_tensor.cpp pins it); shapes known in C++ fold into constants.
///
///     auto gemm = kernel("gemm", {"a", "b", "c"},
///         [](TileTensor<const bfloat16> a, TileTensor<const bfloat16> b, TileTensor<bfloat16> c) {
///             auto sa = shared_tile<bfloat16, 128, 32>();          // a 128 x 32 tile in shared
///             memory auto ga = a.tile<128, 32>(block_idx.y, k0);          // the block's tile of A
///             async_copy(sa, ga, thread_idx.x, 256);               // 16-byte copies by 256
///             threads
///             ...
///             auto mine = c.tile<16, 16>(i, j).distribute<4, 8>(lane_id()); // a thread's 4 x 2
///         });
///
/// Layouts follow CuTe's (shape, stride) algebra for rank 2: tile() is a composition with a
/// block, distribute() CuTe's local_partition over a row-major grid of threads.
#ifndef EMBER_DSL_TILETENSOR_H
#define EMBER_DSL_TILETENSOR_H

#include "ember/dsl/Control.h"
#include "ember/dsl/Matrix.h"
#include "ember/dsl/SIMD.h"
#include "ember/dsl/Struct.h"

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>

namespace ember {

/// No swizzle: element (i, j) of a view is at its linear index.
struct NoSwizzle {
    static constexpr bool identity = true;
    static Int apply(const Int &index) { return index; }
};

/// CuTe's Swizzle<B, M, S> on element indices: bits [M, M + B) of the index are XORed with bits
/// [M + S, M + S + B). A shared-memory tile whose rows are 2^(M + S) elements (or a multiple)
/// keeps its chunks of 2^M consecutive elements contiguous and spreads the same chunk of 2^B
/// consecutive rows over 2^B different chunks: Swizzle<3, 3, 3> for 16-bit rows of 64 elements
/// (chunks of 16 bytes, 8 rows in 8 different bank groups) lets ldmatrix read a column of
/// chunks without conflicts and without padding.
template <int B, int M, int S> struct Swizzle {
    static_assert(B >= 1 && M >= 0 && S >= B,
                  "Swizzle<B, M, S>: B >= 1, S >= B (the bits must not overlap)");
    static constexpr bool identity = false;
    static constexpr int64_t mask = ((int64_t(1) << B) - 1) << (M + S);
    static Int apply(const Int &index) { return index ^ ((index & mask) >> S); }
    /// The same on the host.
    static constexpr int64_t apply(int64_t index) { return index ^ ((index & mask) >> S); }
};

namespace detail {
/// An index argument as an Int.
inline Int as_int(const IndexArg &i) {
    ir::Expr e = i.expr;
    if (e.type() != ir::Type(ir::ScalarType::I64)) e = ir::Cast::make(ir::ScalarType::I64, e);
    return Int(e, i.trace);
}
/// Its value where it is a constant.
inline std::optional<int64_t> constant_of(const Int &i) {
    if (const auto *imm = i.expr().as<ir::IntImm>()) return imm->value;
    return std::nullopt;
}
} // namespace detail

namespace detail {
/// a * b and a + b, folding the constants 0 and 1 (and two constants) while tracing, so that a
/// view's index is the expression one would write by hand.
inline Int mul(const Int &a, const Int &b) {
    std::optional<int64_t> x = constant_of(a), y = constant_of(b);
    if (x && y) return Int(*x * *y);
    if (x == 1 || y == 0) return b;
    if (y == 1 || x == 0) return a;
    return a * b;
}
/// a / b for a view's extents, folded when both are constants (a shape known in C++ stays known).
inline Int div(const Int &a, int64_t b) {
    if (std::optional<int64_t> x = constant_of(a)) return Int(*x / b);
    return a / b;
}
inline Int add(const Int &a, const Int &b) {
    std::optional<int64_t> x = constant_of(a), y = constant_of(b);
    if (x && y) return Int(*x + *y);
    if (x == 0) return b;
    if (y == 0) return a;
    return a + b;
}
} // namespace detail

/// A strided 2-D view of T in address space S. Element (i, j), 0 <= i < rows, 0 <= j < cols, is
/// element (row0 + i * row_step, col0 + j * col_step) of the memory's matrix, whose (r, c) is
/// `data[Sw::apply(r * row_stride + c * col_stride)]`. Views are values: tile(), distribute() and
/// friends return new views of the same memory, moving (row0, col0) and the steps; the index of
/// an element is then `(row0 + i * row_step) * row_stride + (col0 + j * col_step) * col_stride`,
/// with the constants 0 and 1 folded away while tracing: what one writes by hand.
template <class T, ir::AddressSpace S = ir::AddressSpace::Global, class Sw = NoSwizzle>
struct TileView {
    using element_type = std::remove_const_t<T>;
    using pointer = Ptr<T, S>;
    using swizzle = Sw;
    pointer data;
    Int rows, cols;             ///< the view's shape
    Int row0, col0;             ///< where its element (0, 0) is in the memory's matrix
    Int row_step, col_step;     ///< the memory's rows and columns between its rows and columns
    Int row_stride, col_stride; ///< the memory's matrix: elements between rows and columns

    /// The index in `data` of element (i, j).
    Int index(detail::IndexArg i, detail::IndexArg j) const {
        return index_of(detail::as_int(i), detail::as_int(j));
    }
    Int index_of(const Int &i, const Int &j) const {
        using detail::add, detail::mul;
        return Sw::apply(add(mul(add(row0, mul(i, row_step)), row_stride),
                             mul(add(col0, mul(j, col_step)), col_stride)));
    }
    /// Element (i, j): read it, or (through a view of non-const T) assign to it.
    auto operator()(detail::IndexArg i, detail::IndexArg j) const { return data[index(i, j)]; }

    /// The R x C block (bi, bj) of the view: rows R bi .. R bi + R - 1, columns C bj ...
    template <int64_t R, int64_t C> TileView tile(detail::IndexArg bi, detail::IndexArg bj) const {
        static_assert(R > 0 && C > 0, "tile<R, C>: a block has at least one row and one column");
        return sub(detail::mul(detail::as_int(bi), Int(R)), detail::mul(detail::as_int(bj), Int(C)),
                   Int(R), Int(C));
    }
    /// The r x c block whose first element is (i, j).
    TileView sub(const Int &i, const Int &j, const Int &r, const Int &c) const {
        using detail::add, detail::mul;
        return TileView{data,
                        r,
                        c,
                        add(row0, mul(i, row_step)),
                        add(col0, mul(j, col_step)),
                        row_step,
                        col_step,
                        row_stride,
                        col_stride};
    }
    /// The transpose: element (i, j) of the result is (j, i) of this view.
    TileView transposed() const {
        return TileView{data, cols, rows, col0, row0, col_step, row_step, col_stride, row_stride};
    }

    /// Thread `thread`'s share of the view when TR x TC threads (numbered row by row) cover it
    /// like tiles on a floor: rows t / TC, t / TC + TR, ... and columns t % TC, t % TC + TC, ...
    /// (CuTe's local_partition). The view's rows and columns must be multiples of TR and TC.
    template <int64_t TR, int64_t TC> TileView distribute(detail::IndexArg thread) const {
        static_assert(TR > 0 && TC > 0, "distribute<TR, TC>: at least one thread each way");
        using detail::add, detail::mul;
        Int t = detail::as_int(thread);
        return TileView{data,
                        detail::div(rows, TR),
                        detail::div(cols, TC),
                        add(row0, mul(t / TC, row_step)),
                        add(col0, mul(t % TC, col_step)),
                        mul(row_step, Int(TR)),
                        mul(col_step, Int(TC)),
                        row_stride,
                        col_stride};
    }
    /// As distribute<TR, TC>, each thread taking N consecutive columns at a time (a vector): the
    /// share is rows / TR x cols / (TC N) places of N elements, which load_vector and
    /// store_vector access (j counts vectors).
    template <int64_t TR, int64_t TC, int64_t N>
    TileView distribute_vectors(detail::IndexArg thread) const {
        static_assert(TR > 0 && TC > 0 && N > 0, "distribute_vectors<TR, TC, N>");
        using detail::add, detail::mul;
        Int t = detail::as_int(thread);
        return TileView{data,
                        detail::div(rows, TR),
                        detail::div(cols, TC * N),
                        add(row0, mul(t / TC, row_step)),
                        add(col0, mul(t % TC * N, col_step)),
                        mul(row_step, Int(TR)),
                        mul(col_step, Int(TC * N)),
                        row_stride,
                        col_stride};
    }

    /// The N consecutive elements from (i, j) as one vector access (`data.load<N>` at the index of
    /// (i, j)): the memory's columns must be consecutive (column stride 1) and a swizzle must not
    /// split them; the address aligned to the vector.
    template <int N>
    SIMD<element_type, N> load_vector(detail::IndexArg i, detail::IndexArg j) const {
        return data.template load<N>(index(i, j));
    }
    template <class V> void store_vector(detail::IndexArg i, detail::IndexArg j, const V &v) const {
        data.store(index(i, j), v);
    }
};

/// A row-major matrix in global memory, as a kernel parameter (a struct of four: the pointer,
/// rows, columns and the row stride in elements). The host passes `tile_tensor(buffer, rows,
/// cols[, row_stride])`. Element (i, j) is `data[i * row_stride + j]`; view() (and the
/// functions that return views) give a TileView of it.
template <class T> struct TileTensor {
    using element_type = std::remove_const_t<T>;
    Ptr<T> data;
    Int rows, cols, row_stride;

    TileView<T> view() const {
        return TileView<T>{data, rows, cols, Int(0), Int(0), Int(1), Int(1), row_stride, Int(1)};
    }
    Int index(detail::IndexArg i, detail::IndexArg j) const {
        return detail::as_int(i) * row_stride + detail::as_int(j);
    }
    auto operator()(detail::IndexArg i, detail::IndexArg j) const { return data[index(i, j)]; }
    template <int64_t R, int64_t C>
    TileView<T> tile(detail::IndexArg bi, detail::IndexArg bj) const {
        return view().template tile<R, C>(bi, bj);
    }
    template <int64_t TR, int64_t TC> TileView<T> distribute(detail::IndexArg thread) const {
        return view().template distribute<TR, TC>(thread);
    }
};

namespace detail {
/// The reflection EMBER_STRUCT writes ([Note] Structs in ember/dsl/Struct.h), for a struct whose
/// fields are data, rows, cols and row_stride: TileTensor<T>, and the host's TileTensorArg<T>.
template <class X> constexpr auto matrix_struct_fields() {
    return std::make_tuple(
        make_struct_field<decltype(X::data)>("data",
                                             [](auto &&s) -> decltype(auto) { return (s.data); }),
        make_struct_field<decltype(X::rows)>("rows",
                                             [](auto &&s) -> decltype(auto) { return (s.rows); }),
        make_struct_field<decltype(X::cols)>("cols",
                                             [](auto &&s) -> decltype(auto) { return (s.cols); }),
        make_struct_field<decltype(X::row_stride)>(
            "row_stride", [](auto &&s) -> decltype(auto) { return (s.row_stride); }));
}
} // namespace detail

// TileTensor<T> is a struct parameter, for every T.
template <class T> constexpr auto ember_struct_fields(detail::StructTag<TileTensor<T>>) {
    return detail::matrix_struct_fields<TileTensor<T>>();
}
template <class T> constexpr bool ember_struct_in_order(detail::StructTag<TileTensor<T>>) {
    return true;
}
template <class T, class Make>
TileTensor<T> ember_struct_make(detail::StructTag<TileTensor<T>>, Make &&make) {
    using X = TileTensor<T>;
    return X{.data = make(std::type_identity<decltype(X::data)>{}, "data"),
             .rows = make(std::type_identity<decltype(X::rows)>{}, "rows"),
             .cols = make(std::type_identity<decltype(X::cols)>{}, "cols"),
             .row_stride = make(std::type_identity<decltype(X::row_stride)>{}, "row_stride")};
}

/// An R x C row-major tile in shared memory (a shared_array of R * C, or of R * (C + Pad) with
/// rows padded by Pad elements), swizzled by Sw.
template <Scalar T, int64_t R, int64_t C, int64_t Pad = 0, class Sw = NoSwizzle>
TileView<T, ir::AddressSpace::Shared, Sw>
shared_tile(std::source_location loc = std::source_location::current()) {
    static_assert(R > 0 && C > 0 && Pad >= 0, "shared_tile<T, R, C, Pad>");
    auto p = shared_array<T, uint64_t(R * (C + Pad))>(loc);
    return TileView<T, ir::AddressSpace::Shared, Sw>{p,      Int(R), Int(C),       Int(0), Int(0),
                                                     Int(1), Int(1), Int(C + Pad), Int(1)};
}

namespace detail {
/// Whether the view's rows (or columns) are runs of consecutive elements in memory, as known
/// while tracing.
template <class V> bool rows_consecutive(const V &v) {
    return constant_of(v.col_stride) == 1 && constant_of(v.col_step) == 1;
}
template <class V> bool cols_consecutive(const V &v) {
    return constant_of(v.row_stride) == 1 && constant_of(v.row_step) == 1;
}
/// A DslError unless the view's rows are runs of consecutive elements (for vector copies).
template <class V>
void check_rows_consecutive(const V &v, const char *what, const std::source_location &loc) {
    if (rows_consecutive(v)) return;
    throw DslError(std::string(what) + " copies 16-byte vectors along rows: both views' rows must "
                                       "be consecutive elements in memory "
                                       "(column stride 1, as known when the kernel is traced)",
                   loc);
}
/// The elements per vector of a copy between two views of T: 16 bytes' worth.
template <class T> constexpr int64_t copy_vector() {
    return 16 / int64_t(sizeof(T)) > 0 ? 16 / int64_t(sizeof(T)) : 1;
}
} // namespace detail

/// Copies the view `src` into `dst` (same shape), the `threads` threads numbered by `thread`
/// sharing the work: each takes vectors of 16 bytes along the rows in turn. Both views need unit
/// column stride, columns a multiple of the vector (16 / sizeof(T) elements), rows aligned to 16
/// bytes; a swizzle must keep 16-byte chunks whole (M of Swizzle<B, M, S> at least the vector's
/// log2). Every thread must call it (it is a loop, not a barrier: follow it with barrier()).
template <class TD, ir::AddressSpace SD, class SwD, class TS, ir::AddressSpace SS, class SwS>
void copy(const TileView<TD, SD, SwD> &dst, const TileView<TS, SS, SwS> &src,
          detail::IndexArg thread, int64_t threads) {
    static_assert(std::is_same_v<std::remove_const_t<TD>, std::remove_const_t<TS>>,
                  "copy: one element type");
    detail::check_rows_consecutive(dst, "copy", thread.loc);
    detail::check_rows_consecutive(src, "copy", thread.loc);
    constexpr int64_t v = detail::copy_vector<std::remove_const_t<TD>>();
    Int t = detail::as_int(thread);
    Int per_row = src.cols / v;
    for_(t, src.rows * per_row, threads, [&](Int c) {
        Int i = c / per_row, j = c % per_row * v;
        dst.data.store(dst.index_of(i, j), src.data.template load<int(v)>(src.index_of(i, j)));
    });
}

/// As copy(), from global to shared memory with async_copy (cp.async on NVIDIA sm_80 and
/// later): the copies are issued, not waited for. Follow with async_commit(), async_wait() and
/// barrier() ([Note] IR semantics: Asynchronous copies). When the shapes are known in C++ (`R` x
/// `C` tiles, `threads` dividing the vectors), the loop is written out at trace time.
template <class TD, class SwD, class TS>
void async_copy(const TileView<TD, ir::AddressSpace::Shared, SwD> &dst, const TileView<TS> &src,
                detail::IndexArg thread, int64_t threads) {
    static_assert(std::is_same_v<std::remove_const_t<TD>, std::remove_const_t<TS>>,
                  "async_copy: one element type");
    detail::check_rows_consecutive(dst, "async_copy", thread.loc);
    detail::check_rows_consecutive(src, "async_copy", thread.loc);
    constexpr int64_t v = detail::copy_vector<std::remove_const_t<TD>>();
    Int t = detail::as_int(thread);
    std::optional<int64_t> rows = detail::constant_of(src.rows),
                           cols = detail::constant_of(src.cols);
    auto one = [&](const Int &c, const Int &per_row) {
        Int i = c / per_row, j = c % per_row * v;
        async_copy<int(v)>(dst.data, dst.index_of(i, j), src.data, src.index_of(i, j));
    };
    if (rows && cols && *rows * *cols / v % threads == 0) {
        for (int64_t k = 0; k < *rows * *cols / v / threads; ++k)
            one(t + k * threads, Int(*cols / v));
    } else {
        Int per_row = src.cols / v;
        for_(t, src.rows * per_row, threads, [&](Int c) { one(c, per_row); });
    }
}

/// Fragment loads from views: element (r, c) of the operand at view(r, c). For a view in shared
/// memory with 16-bit elements, load_matrix uses ldmatrix (each lane's row address from the
/// view, so padding and swizzles are followed); any view, load() reads element by element.
template <MmaOperand Role, class Op, class T, ir::AddressSpace S, class Sw>
void load(MmaFragment<Role, Op> &f, const TileView<T, S, Sw> &v) {
    using F = MmaFragment<Role, Op>;
    static_assert(std::is_same_v<std::remove_const_t<T>, typename F::element_type>,
                  "load(fragment, view): the view holds elements of the fragment's type");
    Int l = lane_id();
    std::vector<ir::Expr> lanes;
    uint32_t trace = 0;
    for (int i = 0; i < F::size; ++i) {
        Value<typename F::element_type> e =
            v.data[v.index_of(F::template row_at<Int>(l, i), F::template col_at<Int>(l, i))];
        lanes.push_back(e.expr());
        trace = detail::merge_trace(trace, e.trace());
    }
    f = typename F::vector_type(ir::MakeVector::make(F::vector_type::ir_type(), std::move(lanes)),
                                trace);
}

namespace detail {
/// Whether the view's rows (true) or columns (false) are runs of consecutive elements, for
/// ldmatrix; a DslError where neither stride is the constant 1.
template <class V>
bool rows_are_consecutive(const V &v, const char *what, const std::source_location &loc) {
    if (rows_consecutive(v)) return true;
    if (cols_consecutive(v)) return false;
    throw DslError(
        std::string(what) +
            " reads 8 consecutive elements per lane: the view's rows (row-major) or columns "
            "(column-major) must be consecutive elements in memory, as known when the kernel is "
            "traced "
            "(not a share from distribute, not a strided view)",
        loc);
}
} // namespace detail

/// Reads fragment `f` (A or B, 16-bit elements) from the shared-memory view `v` with ldmatrix: a
/// warp operation. The operand's element (r, c) is v(r, c); the view's rows or columns must be
/// consecutive in memory, every run of 8 starting 16-byte aligned (padding and swizzles that keep
/// 16-byte chunks whole are followed).
template <MmaOperand Role, class Op, class T, class Sw>
void load_matrix(MmaFragment<Role, Op> &f, const TileView<T, ir::AddressSpace::Shared, Sw> &v,
                 std::source_location loc = std::source_location::current()) {
    const bool row_major = detail::rows_are_consecutive(v, "load_matrix", loc);
    f.load_matrix_at(
        v.data, [&](const Int &r, const Int &c) { return v.index_of(r, c); }, row_major, loc);
}
/// Reads B fragments `f` (columns 0-7 of the view) and `next` (8-15) with one ldmatrix.
template <class Op, class T, class Sw>
void load_matrix_pair(MmaFragment<MmaOperand::B, Op> &f, MmaFragment<MmaOperand::B, Op> &next,
                      const TileView<T, ir::AddressSpace::Shared, Sw> &v,
                      std::source_location loc = std::source_location::current()) {
    const bool row_major = detail::rows_are_consecutive(v, "load_matrix_pair", loc);
    f.load_matrix_pair_at(
        next, v.data, [&](const Int &r, const Int &c) { return v.index_of(r, c); }, row_major, loc);
}
/// Writes fragment `f` to the view: element (r, c) of the operand to v(r, c).
template <MmaOperand Role, class Op, class T, ir::AddressSpace S, class Sw>
void store(const MmaFragment<Role, Op> &f, const TileView<T, S, Sw> &v) {
    using F = MmaFragment<Role, Op>;
    static_assert(
        std::is_same_v<T, typename F::element_type>,
        "store(fragment, view): the view holds elements of the fragment's type (not const)");
    Int l = lane_id();
    typename F::vector_type x = f.value();
    for (int i = 0; i < F::size; ++i)
        v.data[v.index_of(F::template row_at<Int>(l, i), F::template col_at<Int>(l, i))] = x[i];
}

} // namespace ember

#endif // EMBER_DSL_TILETENSOR_H
