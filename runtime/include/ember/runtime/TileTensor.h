/// \file
/// The host's side of TileTensor (ember/dsl/TileTensor.h): `tile_tensor(buffer, rows, cols)` to
/// pass a row-major matrix in a DeviceBuffer for a `TileTensor<T>` (or `TileTensor<const T>`)
/// kernel parameter, and `HostTileTensor<T>`, the same view over host memory (a HostBuffer, a
/// std::vector, a pointer) for preparing inputs and checking results.
#ifndef EMBER_RUNTIME_TILETENSOR_H
#define EMBER_RUNTIME_TILETENSOR_H

#include "ember/Error.h"
#include "ember/dsl/TileTensor.h"
#include "ember/runtime/Buffer.h"
#include "ember/runtime/DevicePassable.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ember {

/// A row-major `rows` x `cols` matrix in a DeviceBuffer, rows `row_stride` elements apart: what
/// a launch passes for a TileTensor<T> parameter (field by field: the buffer for `data`, the
/// integers for the rest; a TileTensor<const T> takes it too). Made by tile_tensor().
template <class T> struct TileTensorArg {
    const DeviceBuffer<T> &data;
    int64_t rows, cols, row_stride;
};

// Reflected as EMBER_STRUCT would, for every T: the launch checks and passes it field by field.
template <class T> constexpr auto ember_struct_fields(detail::StructTag<TileTensorArg<T>>) {
    return detail::matrix_struct_fields<TileTensorArg<T>>();
}
template <class T> constexpr bool ember_struct_in_order(detail::StructTag<TileTensorArg<T>>) {
    return true;
}

namespace detail {
[[noreturn]] inline void throw_tile_tensor_error(const std::string &what) {
    throw LogicError(what);
}
inline void check_tile_tensor(size_t size, int64_t rows, int64_t cols, int64_t row_stride,
                              const char *what) {
    if (rows < 0 || cols < 0)
        throw_tile_tensor_error(std::string(what) + ": " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " has a negative extent");
    if (row_stride < cols)
        throw_tile_tensor_error(std::string(what) + ": the row stride " +
                                std::to_string(row_stride) + " is less than the " +
                                std::to_string(cols) + " columns (rows would overlap)");
    const uint64_t need = rows == 0 ? 0
                                    : uint64_t(rows - 1) * uint64_t(row_stride) + uint64_t(cols);
    if (need > size)
        throw_tile_tensor_error(std::string(what) + ": " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " with a row stride of " +
                                std::to_string(row_stride) + " needs " + std::to_string(need) +
                                " elements, and the buffer has " + std::to_string(size));
}
} // namespace detail

/// `buffer` as a row-major rows x cols matrix, rows `row_stride` apart (cols by default), for a
/// TileTensor parameter. A LogicError when the matrix does not fit in the buffer.
template <class T>
TileTensorArg<T> tile_tensor(const DeviceBuffer<T> &buffer, int64_t rows, int64_t cols,
                             int64_t row_stride = -1) {
    if (row_stride < 0) row_stride = cols;
    detail::check_tile_tensor(buffer.size(), rows, cols, row_stride, "tile_tensor");
    return TileTensorArg<T>{buffer, rows, cols, row_stride};
}

/// A row-major rows x cols matrix in host memory, rows `row_stride` elements apart: element (i, j)
/// is `data[i * row_stride + j]`. tile<R, C>(bi, bj) is a block of it, as on the device.
template <class T> class HostTileTensor {
public:
    HostTileTensor(T *data, int64_t rows, int64_t cols, int64_t row_stride = -1)
        : data_(data), rows_(rows), cols_(cols), row_stride_(row_stride < 0 ? cols : row_stride) {}
    /// Over a whole HostBuffer or vector (checked: a LogicError when the matrix does not fit).
    HostTileTensor(const HostBuffer<std::remove_const_t<T>> &b, int64_t rows, int64_t cols,
                   int64_t row_stride = -1)
        : HostTileTensor(b.data(), rows, cols, row_stride) {
        detail::check_tile_tensor(b.size(), rows, cols, row_stride_, "HostTileTensor");
    }
    template <class A>
    HostTileTensor(std::vector<std::remove_const_t<T>, A> &v, int64_t rows, int64_t cols,
                   int64_t row_stride = -1)
        : HostTileTensor(v.data(), rows, cols, row_stride) {
        detail::check_tile_tensor(v.size(), rows, cols, row_stride_, "HostTileTensor");
    }

    T &operator()(int64_t i, int64_t j) const { return data_[i * row_stride_ + j]; }
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t row_stride() const { return row_stride_; }
    T *data() const { return data_; }
    template <int64_t R, int64_t C> HostTileTensor tile(int64_t bi, int64_t bj) const {
        return HostTileTensor(data_ + bi * R * row_stride_ + bj * C, R, C, row_stride_);
    }

private:
    T *data_;
    int64_t rows_, cols_, row_stride_;
};

} // namespace ember

#endif // EMBER_RUNTIME_TILETENSOR_H
