/// \file
/// Device-side control flow: `if_`/`elif_`/`else_`, `for_`, `while_`, `break_`, `continue_`,
/// `barrier()`, fences, and the asynchronous copies to shared memory (`async_copy`). Bodies are C++
/// lambdas, traced once into the structured IR. A plain C++ `for` or `if` inside a kernel runs at
/// trace time: it unrolls or selects code, it does not branch on the device.
#ifndef EMBER_DSL_CONTROL_H
#define EMBER_DSL_CONTROL_H

#include "ember/dsl/Value.h"

#include <functional>
#include <source_location>
#include <utility>
#include <vector>

namespace ember {

namespace detail {
/// Traces `body` into a fresh block and returns it; the block is discarded on exceptions.
template <class F> ir::Stmt trace_block(Builder &b, F &&body, const char *what, const std::source_location &loc) {
    b.push_block(what, loc);
    try {
        std::invoke(std::forward<F>(body));
    } catch (...) {
        b.pop_block();
        throw;
    }
    return b.pop_block();
}

template <class F> void check_body() {
    static_assert(std::is_invocable_v<F>, "the body of if_/else_/while_ is a lambda taking no "
                                          "arguments: [&] { ... }");
}
} // namespace detail

/// The result of `if_`: `.elif_(cond, body)` and `.else_(body)` extend the same `if`.
class IfChain {
public:
    IfChain(detail::Builder &b, ir::Expr cond, ir::Stmt then_body, ir::Stmt emitted, bool divergent)
        : builder_(&b), emitted_(std::move(emitted)), divergent_(divergent) {
        arms_.push_back({{}, std::move(cond), std::move(then_body)});
    }

    template <Operand C, class F>
    IfChain &elif_(const C &cond, F &&body, std::source_location loc = std::source_location::current()) {
        detail::check_body<F>();
        Bool c = detail::to_condition(cond, loc);
        check_open("elif_", loc);
        std::vector<ir::Stmt> prelude = take_condition_prelude(loc);
        // Each arm runs only where the earlier conditions failed: it diverges when any did.
        divergent_ = divergent_ || builder_->thread_dependent(c.expr());
        ir::Stmt block;
        {
            detail::DivergenceScope d(*builder_, divergent_, "elif_", loc);
            block = detail::trace_block(*builder_, std::forward<F>(body), "elif_", loc);
        }
        arms_.push_back({std::move(prelude), c.expr(), std::move(block)});
        rebuild(loc);
        return *this;
    }

    template <class F> void else_(F &&body, std::source_location loc = std::source_location::current()) {
        detail::check_body<F>();
        check_open("else_", loc);
        if (!take_condition_prelude(loc).empty()) EMBER_UNREACHABLE("else_ has no condition");
        {
            detail::DivergenceScope d(*builder_, divergent_, "else_", loc);
            else_body_ = detail::trace_block(*builder_, std::forward<F>(body), "else_", loc);
        }
        rebuild(loc);
        closed_ = true;
    }

private:
    struct Arm {
        std::vector<ir::Stmt> prelude; ///< lets bound while evaluating the condition
        ir::Expr cond;
        ir::Stmt body;
    };
    void check_open(const char *what, const std::source_location &loc);
    std::vector<ir::Stmt> take_condition_prelude(const std::source_location &loc);
    void rebuild(const std::source_location &loc);

    detail::Builder *builder_;
    ir::Stmt emitted_;
    std::vector<Arm> arms_;
    ir::Stmt else_body_;
    bool closed_ = false;
    bool divergent_; ///< some condition of the chain depends on the thread
};

/// Runs `body` on the device for the threads where `cond` (a Bool) holds.
template <Operand C, class F>
IfChain if_(const C &cond, F &&body, std::source_location loc = std::source_location::current()) {
    detail::check_body<F>();
    Bool c = detail::to_condition(cond, loc);
    detail::Builder &b = detail::require_builder("if_", loc);
    const bool divergent = b.thread_dependent(c.expr());
    ir::Stmt then_body;
    {
        detail::DivergenceScope d(b, divergent, "if_", loc);
        then_body = detail::trace_block(b, std::forward<F>(body), "if_", loc);
    }
    ir::Stmt s = ir::If::make(c.expr(), then_body);
    b.emit(s, loc);
    return IfChain(b, c.expr(), then_body, s, divergent);
}

namespace detail {
/// The loop index type: the first traced bound's type, else Int.
template <class B, class E> struct loop_index {
    using type = int64_t;
};
template <class B, class E>
    requires Traced<B>
struct loop_index<B, E> {
    using type = traced_t<B>;
};
template <class B, class E>
    requires(!Traced<B> && Traced<E>)
struct loop_index<B, E> {
    using type = traced_t<E>;
};
template <class B, class E> using loop_index_t = typename loop_index<B, E>::type;

template <class T, class F>
void trace_for(const Value<T> &begin, const Value<T> &end, const Value<T> &step, F &&body,
               const std::source_location &loc, ir::Unroll unroll = {}) {
    static_assert(is_integer<T>, "for_ bounds must be integers");
    static_assert(std::is_invocable_v<F, Value<T>>,
                  "the body of for_ is a lambda taking the index: [&](Int i) { ... }");
    Builder &b = require_builder("for_", loc);
    ir::VariableRef var = ir::Variable::make("", ir_type_of<T>(), ir::VarKind::LoopIndex);
    Value<T> index(ir::VarRef::make(var), b.id());
    const bool divergent =
        b.thread_dependent(begin.expr()) || b.thread_dependent(end.expr()) || b.thread_dependent(step.expr());
    if (divergent) b.mark_thread_dependent(var.get());
    ++b.loop_depth;
    ir::Stmt block;
    try {
        DivergenceScope d(b, divergent, "for_", loc);
        block = trace_block(b, [&] { std::invoke(body, index); }, "for_", loc);
    } catch (...) {
        --b.loop_depth;
        throw;
    }
    --b.loop_depth;
    b.emit(ir::For::make(var, begin.expr(), end.expr(), step.expr(), block, unroll), loc);
}
} // namespace detail

/// An unrolling hint for `for_`, after the body: `for_(0, n, body, unroll(4))`. As CUDA's
/// `#pragma unroll`: `unroll()` unrolls completely (where the trip count is known when
/// compiling), `unroll(N)` by N (2 to 1024, a remainder loop where N does not divide the trip
/// count), `unroll(1)` keeps the loop rolled. A hint to the optimiser: it never changes what the
/// loop computes ([Note] IR semantics: Unroll hints); without one, LLVM chooses.
struct UnrollHint {
    ir::Unroll value;
};
inline UnrollHint unroll() { return {ir::Unroll::full()}; }
inline UnrollHint unroll(int64_t n, std::source_location loc = std::source_location::current()) {
    if (n == 1) return {ir::Unroll::none()};
    if (n < 1 || n > int64_t(ir::Unroll::kMaxCount))
        throw DslError("unroll(" + std::to_string(n) +
                           "): the count is 1 (keep the loop rolled) to " +
                           std::to_string(ir::Unroll::kMaxCount) + "; unroll() unrolls completely",
                       loc);
    return {ir::Unroll::by(uint32_t(n))};
}

/// `for (i = begin; i < end; i += 1)` on the device; the body receives the index.
template <Operand B, Operand E, class F>
    requires(!Operand<F>)
void for_(const B &begin, const E &end, F &&body,
          std::source_location loc = std::source_location::current()) {
    using T = detail::loop_index_t<B, E>;
    detail::trace_for<T>(detail::to_value<T>(begin, loc), detail::to_value<T>(end, loc),
                         detail::to_value<T>(1, loc), std::forward<F>(body), loc);
}

/// `for (i = begin; step > 0 ? i < end : i > end; i += step)` on the device, in exact integers:
/// the loop ends where the next index would leave its type's range instead of wrapping around.
template <Operand B, Operand E, Operand S, class F>
void for_(const B &begin, const E &end, const S &step, F &&body,
          std::source_location loc = std::source_location::current()) {
    using T = detail::loop_index_t<B, E>;
    detail::trace_for<T>(detail::to_value<T>(begin, loc), detail::to_value<T>(end, loc),
                         detail::to_value<T>(step, loc), std::forward<F>(body), loc);
}

/// for_ with an unrolling hint: `for_(0, n, body, unroll(4))`.
template <Operand B, Operand E, class F>
    requires(!Operand<F>)
void for_(const B &begin, const E &end, F &&body, UnrollHint hint,
          std::source_location loc = std::source_location::current()) {
    using T = detail::loop_index_t<B, E>;
    detail::trace_for<T>(detail::to_value<T>(begin, loc), detail::to_value<T>(end, loc),
                         detail::to_value<T>(1, loc), std::forward<F>(body), loc, hint.value);
}

/// for_ with a step and an unrolling hint: `for_(0, n, 8, body, unroll())`.
template <Operand B, Operand E, Operand S, class F>
void for_(const B &begin, const E &end, const S &step, F &&body, UnrollHint hint,
          std::source_location loc = std::source_location::current()) {
    using T = detail::loop_index_t<B, E>;
    detail::trace_for<T>(detail::to_value<T>(begin, loc), detail::to_value<T>(end, loc),
                         detail::to_value<T>(step, loc), std::forward<F>(body), loc, hint.value);
}

/// `while (cond()) body()` on the device. The condition is a lambda returning a Bool; it is
/// re-evaluated before every iteration and may not store, assign or declare.
template <class C, class F>
void while_(C &&cond, F &&body, std::source_location loc = std::source_location::current()) {
    static_assert(std::is_invocable_v<C>,
                  "while_ takes its condition as a lambda, so that it is re-evaluated each "
                  "iteration: while_([&] { return i < n; }, [&] { ... })");
    detail::check_body<F>();
    detail::Builder &b = detail::require_builder("while_", loc);
    ++b.expression_only;
    b.condition_loc = loc;
    Bool c = [&] {
        try {
            auto r = std::invoke(cond);
            --b.expression_only;
            return detail::to_condition(r, loc);
        } catch (...) {
            --b.expression_only;
            throw;
        }
    }();
    ++b.loop_depth;
    ir::Stmt block;
    try {
        detail::DivergenceScope d(b, b.thread_dependent(c.expr()), "while_", loc);
        block = detail::trace_block(b, std::forward<F>(body), "while_", loc);
    } catch (...) {
        --b.loop_depth;
        throw;
    }
    --b.loop_depth;
    b.emit(ir::While::make(c.expr(), block), loc);
}

/// Leaves the innermost for_/while_.
void break_(std::source_location loc = std::source_location::current());
/// Starts the next iteration of the innermost for_/while_.
void continue_(std::source_location loc = std::source_location::current());
/// Orders this thread's memory accesses for the threads of its block (__threadfence_block).
void fence_block(std::source_location loc = std::source_location::current());
/// Orders this thread's memory accesses for the whole device (__threadfence).
void fence_device(std::source_location loc = std::source_location::current());
/// Orders this thread's memory accesses also for the host and other devices
/// (__threadfence_system).
void fence_system(std::source_location loc = std::source_location::current());
/// Waits until every thread of the block has reached this point (GPU targets).
void barrier(std::source_location loc = std::source_location::current());
/// Waits until every thread of every block of the cluster has reached this point; orders
/// their earlier memory accesses (shared memory included) before everyone's later ones. NVIDIA
/// sm_90 and newer, and the CPU device; in a launch without cluster_dim(...) the cluster is the
/// block.
void cluster_sync(std::source_location loc = std::source_location::current());

namespace detail {
void emit_async_copy(const ir::Expr &dst, uint32_t dst_trace, const IndexArg &dst_index,
                     const ir::Expr &src, uint32_t src_trace, const IndexArg &src_index,
                     uint32_t count, const Bool *valid);
template <int N, class T, class U> constexpr void check_async_copy() {
    static_assert(!std::is_const_v<T>,
                  "async_copy writes its destination: a SharedPtr<const T> will not do");
    static_assert(std::is_same_v<std::remove_const_t<T>, std::remove_const_t<U>>,
                  "async_copy copies between pointers of one element type");
    static_assert(
        N > 0 && (N * sizeof(T) == 4 || N * sizeof(T) == 8 || N * sizeof(T) == 16),
        "async_copy<N> copies 4, 8 or 16 bytes: N elements of T make N * sizeof(T) bytes");
}
} // namespace detail

/// Starts copying the N elements `src[src_index ..]` of global memory to `dst[dst_index ..]` of
/// shared memory without waiting for them (cp.async on NVIDIA sm_80 and later; elsewhere the copy
/// happens at once). N elements make 4, 8 or 16 bytes, and both addresses are aligned to that
/// size. The copy belongs to the group the next async_commit() closes; its destination may be
/// read once this thread has waited for that group (async_wait) and, by other threads, after a
/// barrier() that follows the wait ([Note] IR semantics: Asynchronous copies):
///
///     async_copy<4>(tile, 4 * thread_idx.x, a, row * n + 4 * thread_idx.x);
///     async_commit();
///     async_wait(0);
///     barrier();
template <int N, class T, class U>
void async_copy(const Ptr<T, ir::AddressSpace::Shared> &dst, detail::IndexArg dst_index,
                const Ptr<U, ir::AddressSpace::Global> &src, detail::IndexArg src_index) {
    detail::check_async_copy<N, T, U>();
    detail::emit_async_copy(dst.expr(), dst.trace(), dst_index, src.expr(), src.trace(), src_index,
                            N, nullptr);
}
/// As above where `valid` holds; where it does not, writes N zeros to `dst` and reads nothing
/// from `src` (which may then point anywhere): the edge of a tile.
template <int N, class T, class U, Operand C>
void async_copy(const Ptr<T, ir::AddressSpace::Shared> &dst, detail::IndexArg dst_index,
                const Ptr<U, ir::AddressSpace::Global> &src, detail::IndexArg src_index,
                const C &valid) {
    detail::check_async_copy<N, T, U>();
    Bool v = detail::to_condition(valid, src_index.loc);
    detail::emit_async_copy(dst.expr(), dst.trace(), dst_index, src.expr(), src.trace(), src_index,
                            N, &v);
}
/// Closes the group of this thread's async_copy calls since the last async_commit().
void async_commit(std::source_location loc = std::source_location::current());
/// Waits until at most `pending` (0 to 7) of this thread's committed groups are still in flight:
/// async_wait(0) waits for all of them, async_wait(1) leaves the newest one (double buffering).
void async_wait(int pending, std::source_location loc = std::source_location::current());

} // namespace ember

#endif // EMBER_DSL_CONTROL_H
