/// \file
/// Hopper's asynchronous tensor operations in kernels ([Note] IR semantics: Warpgroup matrix
/// multiply-accumulate, Memory barriers and the tensor memory accelerator):
///
/// * `wgmma(a, i, b, j, acc)`: the warpgroup's (four warps') D (64 x N) += A (64 x 16) B (16 x N),
///   A and B read from shared memory in the 128-byte swizzled K-major layout (`Swizzle<3, 3, 3>`
///   of 64-element rows, the layout `TensorMapSwizzle::b128` loads), D in a
///   `WarpgroupAccumulator<N>` (N / 8 m16n8 C fragments per thread); with `wgmma_fence`,
///   `wgmma_commit` and `wgmma_wait<n>` around it;
/// * mbarriers: `mbarrier_init`, `mbarrier_arrive`, `mbarrier_expect_tx`, `mbarrier_wait`;
/// * `tma_load(dst, i, map, x, y, bar, j)`: the tensor memory accelerator copies a box of a
///   TensorMap<T> into shared memory and completes its bytes on the mbarrier;
/// * `fence_proxy_async()`: orders ordinary shared-memory writes before asynchronous reads.
///
/// NVIDIA sm_90a (a compute capability 9.0 device) and the CPU device, which emulates them.
#ifndef EMBER_DSL_WARPGROUP_H
#define EMBER_DSL_WARPGROUP_H

#include "ember/Error.h"
#include "ember/dsl/Matrix.h"
#include "ember/dsl/TensorMap.h"
#include "ember/dsl/Tracer.h"
#include "ember/dsl/Value.h"

#include <array>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

namespace ember {

/// The accumulators of a warpgroup matrix multiply-accumulate of N columns: fragment t is the
/// m16n8 accumulator fragment (as `Mma<bfloat16, m16n8k16>::C`) of columns 8t to 8t + 7 of the
/// 16 rows of this thread's warp (warp w of the warpgroup: rows 16w to 16w + 15). Zero when
/// declared.
template <int N> class WarpgroupAccumulator {
    static_assert(N >= 8 && N <= 256 && N % 8 == 0,
                  "WarpgroupAccumulator<N>: wgmma has N from 8 to 256, a multiple of 8");

public:
    using Fragment = typename Mma<bfloat16, m16n8k16, float>::C;
    static constexpr int columns = N;
    static constexpr int fragments = N / 8;

    WarpgroupAccumulator() = default;
    WarpgroupAccumulator(const WarpgroupAccumulator &) = delete;
    WarpgroupAccumulator &operator=(const WarpgroupAccumulator &) = delete;

    Fragment &operator[](int t) { return frags_[static_cast<size_t>(t)]; }
    const Fragment &operator[](int t) const { return frags_[static_cast<size_t>(t)]; }

    /// Sets every accumulator to zero.
    void clear() {
        for (Fragment &f : frags_) f = typename Fragment::vector_type(0.0f);
    }

    /// The IR variables, fragment 0 first.
    std::vector<ir::VariableRef> variables() const {
        std::vector<ir::VariableRef> out;
        for (const Fragment &f : frags_) out.push_back(f.variable().variable());
        return out;
    }

private:
    std::array<Fragment, fragments> frags_;
};

namespace detail {
template <class T>
constexpr bool wgmma_input = std::is_same_v<T, bfloat16> || std::is_same_v<T, half>;

template <class... Acc> std::vector<ir::VariableRef> accumulator_variables(const Acc &...acc) {
    std::vector<ir::VariableRef> out;
    (
        [&] {
            for (ir::VariableRef &v : acc.variables()) out.push_back(std::move(v));
        }(),
        ...);
    return out;
}
} // namespace detail

/// acc += A B for the warpgroup: A is the 64 x 16 block at `a + a_index` and B the N x 16 block
/// (B transposed: N rows of k) at `b + b_index`, both rows of 128 bytes in a 128-byte swizzled
/// tile that starts on a 1024-byte boundary of shared memory ([Note] IR semantics: Warpgroup
/// matrix multiply-accumulate); the 16 columns are 0-15, 16-31, 32-47 or 48-63 of those rows.
/// Asynchronous: call wgmma_fence(acc) before the first, then wgmma_commit() and
/// wgmma_wait<0>(acc) before reading acc. All 128 threads of the warpgroup run it together.
template <class T, int N>
void wgmma(const SharedPtr<T> &a, detail::IndexArg a_index, const SharedPtr<T> &b,
           detail::IndexArg b_index, WarpgroupAccumulator<N> &acc,
           std::source_location loc = std::source_location::current()) {
    static_assert(detail::wgmma_input<T>, "wgmma multiplies bfloat16 or half matrices");
    constexpr ir::MmaInput input = std::is_same_v<T, half> ? ir::MmaInput::F16 : ir::MmaInput::BF16;
    detail::require_builder("wgmma", loc)
        .emit(ir::Wgmma::make(input, N, a.expr(), a_index.expr, b.expr(), b_index.expr,
                              acc.variables()),
              loc);
}

/// wgmma's B given MN-major: B(k, n) is row k of a row-major k x n slice, brought into shared
/// memory as groups of 64 columns (rows of 128 bytes, 128-byte swizzled, 1024-byte aligned: a
/// TensorMapSwizzle::b128 box 64 columns wide per group), `group_bytes` apart (a multiple of
/// 1024). The 16 rows of k of one wgmma start at `b + b_index`, on a 1024-byte boundary (rows 0,
/// 16, 32, ... of each group).
struct MnMajor {
    uint32_t group_bytes;
};

/// acc += A B with B MN-major (MnMajor): A as for the other wgmma.
template <class T, int N>
void wgmma(const SharedPtr<T> &a, detail::IndexArg a_index, const SharedPtr<T> &b,
           detail::IndexArg b_index, WarpgroupAccumulator<N> &acc, MnMajor b_layout,
           std::source_location loc = std::source_location::current()) {
    static_assert(detail::wgmma_input<T>, "wgmma multiplies bfloat16 or half matrices");
    if (b_layout.group_bytes == 0 || b_layout.group_bytes % 1024 != 0)
        throw DslError("wgmma: an MN-major B's groups of 64 columns are a positive multiple of "
                       "1024 bytes apart, "
                       "not " +
                           std::to_string(b_layout.group_bytes),
                       loc);
    constexpr ir::MmaInput input = std::is_same_v<T, half> ? ir::MmaInput::F16 : ir::MmaInput::BF16;
    detail::require_builder("wgmma", loc)
        .emit(ir::Wgmma::make(input, N, a.expr(), a_index.expr, b.expr(), b_index.expr,
                              acc.variables(), b_layout.group_bytes),
              loc);
}

/// Orders the accumulators' and shared memory's earlier writes before the next wgmma.
template <class... Acc> void wgmma_fence(Acc &...acc) {
    const auto loc = std::source_location::current();
    detail::require_builder("wgmma_fence", loc)
        .emit(ir::TensorSync::make(ir::TensorSyncKind::WgmmaFence, 0,
                                   detail::accumulator_variables(acc...)),
              loc);
}

/// Closes the group of the warpgroup's wgmmas issued since the last commit.
inline void wgmma_commit(std::source_location loc = std::source_location::current()) {
    detail::require_builder("wgmma_commit", loc)
        .emit(ir::TensorSync::make(ir::TensorSyncKind::WgmmaCommit), loc);
}

/// Waits until at most `Pending` groups of wgmmas are in flight; `acc` are the accumulators the
/// code reads or writes next (of the groups completed).
template <int Pending, class... Acc> void wgmma_wait(Acc &...acc) {
    static_assert(Pending >= 0 && Pending <= ir::TensorSync::kMaxPending,
                  "wgmma_wait<n>: n is 0 to 7");
    const auto loc = std::source_location::current();
    detail::require_builder("wgmma_wait", loc)
        .emit(ir::TensorSync::make(ir::TensorSyncKind::WgmmaWait, Pending,
                                   detail::accumulator_variables(acc...)),
              loc);
}

/// Orders this thread's ordinary shared-memory writes before later asynchronous reads (wgmma,
/// tma), and asynchronous writes before its later ordinary reads.
inline void fence_proxy_async(std::source_location loc = std::source_location::current()) {
    detail::require_builder("fence_proxy_async", loc)
        .emit(ir::TensorSync::make(ir::TensorSyncKind::ProxyFence), loc);
}

/// Initialises the mbarrier `bar[index]` to wait for `count` arrivals per phase: one thread,
/// before every other use, then a barrier().
inline void mbarrier_init(const SharedPtr<uint64_t> &bar, detail::IndexArg index,
                          detail::IndexArg count,
                          std::source_location loc = std::source_location::current()) {
    detail::require_builder("mbarrier_init", loc)
        .emit(ir::MBarrier::make(ir::MBarrierOp::Init, bar.expr(), index.expr, count.expr), loc);
}
/// Arrives at `bar[index]`.
inline void mbarrier_arrive(const SharedPtr<uint64_t> &bar, detail::IndexArg index,
                            std::source_location loc = std::source_location::current()) {
    detail::require_builder("mbarrier_arrive", loc)
        .emit(ir::MBarrier::make(ir::MBarrierOp::Arrive, bar.expr(), index.expr), loc);
}
/// Arrives at the mbarrier at `bar[index]`'s place in the shared memory of block `rank`
/// (block_rank_in_cluster) of this block's cluster, this thread's earlier reads and writes
/// ordered before what that block does once the phase completes. NVIDIA sm_90 and newer, and
/// the CPU device.
inline void mbarrier_arrive_cluster(const SharedPtr<uint64_t> &bar, detail::IndexArg index,
                                    detail::IndexArg rank,
                                    std::source_location loc = std::source_location::current()) {
    detail::require_builder("mbarrier_arrive_cluster", loc)
        .emit(ir::MBarrier::make(ir::MBarrierOp::ArriveCluster, bar.expr(), index.expr, rank.expr),
              loc);
}
/// Arrives at `bar[index]`, whose phase then also waits for `bytes` of asynchronous copies
/// (tma_load) to complete on it.
inline void mbarrier_expect_tx(const SharedPtr<uint64_t> &bar, detail::IndexArg index,
                               detail::IndexArg bytes,
                               std::source_location loc = std::source_location::current()) {
    detail::require_builder("mbarrier_expect_tx", loc)
        .emit(ir::MBarrier::make(ir::MBarrierOp::ExpectTx, bar.expr(), index.expr, bytes.expr),
              loc);
}
/// Waits until the phase of parity `parity` (0 or 1; phases alternate, the first is 0) of
/// `bar[index]` has completed.
inline void mbarrier_wait(const SharedPtr<uint64_t> &bar, detail::IndexArg index,
                          detail::IndexArg parity,
                          std::source_location loc = std::source_location::current()) {
    detail::require_builder("mbarrier_wait", loc)
        .emit(ir::MBarrier::make(ir::MBarrierOp::Wait, bar.expr(), index.expr, parity.expr), loc);
}

/// Starts the tensor memory accelerator's copy of the box of `map` whose first element is
/// column x, row y into shared memory at `dst + dst_index` (1024-byte aligned for the 128-byte
/// swizzle, 128 otherwise); its bytes (the box's) complete on `bar[bar_index]`. One thread
/// issues it.
template <class T>
void tma_load(const SharedPtr<T> &dst, detail::IndexArg dst_index, const TensorMap<T> &map,
              detail::IndexArg x, detail::IndexArg y, const SharedPtr<uint64_t> &bar,
              detail::IndexArg bar_index,
              std::source_location loc = std::source_location::current()) {
    detail::require_builder("tma_load", loc)
        .emit(ir::TmaLoad::make(dst.expr(), dst_index.expr, map.desc.expr(), x.expr, y.expr,
                                bar.expr(), bar_index.expr),
              loc);
}

/// tma_load to every block of the cluster whose rank (block_rank_in_cluster) is a set bit of
/// `mask`: the box lands at `dst + dst_index` in each one's shared memory, and its bytes complete
/// on each one's mbarrier at `bar[bar_index]`'s place, which must expect them. The tensor memory
/// accelerator reads the box from global memory once. NVIDIA sm_90 and newer, and the CPU device.
template <class T>
void tma_load_multicast(const SharedPtr<T> &dst, detail::IndexArg dst_index,
                        const TensorMap<T> &map, detail::IndexArg x, detail::IndexArg y,
                        const SharedPtr<uint64_t> &bar, detail::IndexArg bar_index,
                        detail::IndexArg mask,
                        std::source_location loc = std::source_location::current()) {
    detail::require_builder("tma_load_multicast", loc)
        .emit(ir::TmaLoad::make(dst.expr(), dst_index.expr, map.desc.expr(), x.expr, y.expr,
                                bar.expr(), bar_index.expr, mask.expr),
              loc);
}

} // namespace ember

#endif // EMBER_DSL_WARPGROUP_H
