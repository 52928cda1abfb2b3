/// \file
/// The trace-time builder stack behind the DSL. A kernel's lambda runs once, while a `Builder`
/// for that kernel is on this thread's stack; every DSL operation appends IR to the innermost
/// open block of the innermost builder.
///
/// [Note] Tracing
/// ==============
/// * Evaluation order is C++'s: a load (`p[i]` read) and a read of a mutable `Var` are bound to
///   a `let` at the point where the C++ expression runs, so a value never observes a later store
///   or assignment. Pure arithmetic stays as expression trees.
/// * Inside a `while_` condition the builder is in expression-only mode: loads and reads stay
///   inline (the condition is re-evaluated every iteration) and statements are rejected.
/// * Nesting (ember's IR nests at most ir::max_nesting_depth levels). A value whose expression
///   is nested deeper than kBindDepth levels (a C++ loop that builds one long expression, say)
///   is bound to a `let` where it is built, as a load is, so expressions stay shallow; inside a
///   while_ condition, where nothing can be bound, such a value is a DslError at the while_.
///   if_, elif_, else_, for_ and while_ nest at most kMaxBlockNesting deep (a DslError at the
///   construct that goes deeper).
/// * Every value remembers the trace it came from (0 = none: constants and special registers),
///   so a value of one kernel cannot leak into another. A device function is traced on its own
///   builder (its own trace), so a kernel's values cannot leak into it either.
///
/// [Note] Divergence
/// =================
/// The builder follows which values can be seen to differ between the threads of a block:
/// values computed from thread_idx (and lane_id, global_idx), warp operations, atomics, loads
/// from such addresses, calls of functions that read them, and the lets, loop indices and Vars
/// they are stored in (a Var assigned in divergent code counts as thread-dependent). An if_,
/// elif_, else_, for_ or while_ whose condition or bounds are thread-dependent makes its body
/// divergent. A barrier() there, or a call of a device function that waits at a barrier, is a
/// DslError: the threads of the block would not all reach it (a hang or undefined behaviour on
/// GPUs). The analysis only reports what it can see: a condition read from memory through a
/// uniform address, or a parameter of a device function, is taken to be uniform.
#ifndef EMBER_DSL_TRACER_H
#define EMBER_DSL_TRACER_H

#include "ember/Error.h"
#include "ember/compiler/IR.h"

#include <chrono>
#include <cstdint>
#include <source_location>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember::detail {

/// [Note] Tracing: Nesting. Values are kept at most this deep, and blocks nest at most
/// kMaxBlockNesting deep: together with the few levels a statement adds, a kernel's IR stays
/// within ir::max_nesting_depth (two levels per block, one for the kernel's own).
inline constexpr uint32_t kBindDepth = 64;
inline constexpr uint32_t kMaxBlockNesting = 400;
static_assert(2 * kMaxBlockNesting + kBindDepth + 64 <= ir::max_nesting_depth);

/// `e`, or a reference to a `let` bound to it where it is built when it is nested deeper than
/// kBindDepth ([Note] Tracing: Nesting). `trace` is the value's trace.
ir::Expr keep_shallow(ir::Expr e, uint32_t trace);

class Builder {
public:
    Builder(std::string kernel_name, uint32_t id, bool is_function = false)
        : kernel_name_(std::move(kernel_name)), id_(id), is_function_(is_function),
          start_(std::chrono::steady_clock::now()) {}

    const std::string &kernel_name() const { return kernel_name_; }
    /// When tracing began (KernelInfo::trace_seconds is measured from it).
    std::chrono::steady_clock::time_point start_time() const { return start_; }
    uint32_t id() const { return id_; }
    /// Whether this traces a device function (else a kernel).
    bool is_function() const { return is_function_; }
    /// "kernel 'k'" or "device function 'f'", for messages.
    std::string what() const {
        return (is_function_ ? "device function '" : "kernel '") + kernel_name_ + "'";
    }
    /// A device function's return type (void for none and for kernels).
    ir::Type return_type;

    // [Note] Divergence.
    struct Divergence {
        const char *construct; ///< "if_", "for_", ...
        std::source_location loc;
    };
    /// Whether `e` can be seen to differ between the threads of a block.
    bool thread_dependent(const ir::Expr &e) const;
    /// Enters the body of `construct`; `divergent` when its condition is thread-dependent.
    void push_divergence(bool divergent, const char *construct, const std::source_location &loc);
    void pop_divergence();
    /// The innermost enclosing construct that makes the current code divergent, or null.
    const Divergence *divergence() const;
    /// Records that `v` (a let or loop index) holds a thread-dependent value.
    void mark_thread_dependent(const ir::Variable *v) { thread_dependent_vars_.insert(v); }

    void emit(ir::Stmt s, const std::source_location &loc);
    /// Binds `value` to a fresh `let` and returns a reference to it; returns `value` unchanged in
    /// expression-only mode or when it is already a constant or variable reference.
    ir::Expr bind(ir::Expr value);

    /// Opens the block of the construct `what` at `loc`; a DslError beyond kMaxBlockNesting.
    void push_block(const char *what, const std::source_location &loc);
    ir::Stmt pop_block();
    /// Replaces the statement most recently emitted into the current block, which must be `old`
    /// (used by `else_`/`elif_` to complete an `if_`).
    bool replace_last(const ir::Stmt &old, ir::Stmt replacement);
    /// Removes and returns the statements emitted into the current block after `marker`; false
    /// when `marker` is not in the current block.
    bool take_after(const ir::Stmt &marker, std::vector<ir::Stmt> &out);
    /// Throws a DslError at `loc` when a statement `depth` levels deep (`what`) cannot go into
    /// the current block within ir::max_nesting_depth.
    void check_depth(uint32_t depth, const std::string &what, const std::source_location &loc) const;
    /// How many blocks are open (1 in the kernel's own body).
    size_t block_nesting() const { return blocks_.size(); }

    int loop_depth = 0;
    int expression_only = 0;
    /// The while_ whose condition is traced in expression-only mode.
    std::source_location condition_loc;
    /// The constant arrays declared so far (constant_array), by name: where each was declared.
    std::unordered_map<std::string, std::string> constant_arrays;
    /// The static shared arrays declared so far (shared_array), for the message when they add up
    /// to more than ir::max_static_shared_bytes.
    struct SharedArrayDecl {
        std::string what; ///< "shared_array<Float32, 8192>"
        uint64_t bytes;
        std::source_location loc;
    };
    std::vector<SharedArrayDecl> shared_arrays;
    uint64_t shared_bytes = 0;

private:
    std::string kernel_name_;
    uint32_t id_;
    bool is_function_;
    std::chrono::steady_clock::time_point start_;
    std::vector<std::vector<ir::Stmt>> blocks_;
    std::vector<Divergence> divergence_; ///< construct == nullptr: a uniform construct
    std::unordered_set<const ir::Variable *> thread_dependent_vars_;
    /// Device functions whose results depend on the thread (cached).
    mutable std::unordered_map<const ir::Function *, bool> function_reads_thread_;
};

/// RAII: Builder::push_divergence / pop_divergence.
class DivergenceScope {
public:
    DivergenceScope(Builder &b, bool divergent, const char *construct, const std::source_location &loc)
        : b_(b) {
        b_.push_divergence(divergent, construct, loc);
    }
    ~DivergenceScope() { b_.pop_divergence(); }
    DivergenceScope(const DivergenceScope &) = delete;
    DivergenceScope &operator=(const DivergenceScope &) = delete;

private:
    Builder &b_;
};

/// Checks a shared array about to be declared in `b`: a DslError at `loc` in a device function
/// (`what` names the call), and for a static one (`bytes` > 0, declared as `what`) that takes the
/// kernel's static shared memory over ir::max_static_shared_bytes (the message lists every static
/// shared array with its size and line).
void check_shared_array(Builder &b, const std::string &what, uint64_t bytes, const std::source_location &loc);

/// "file:line" of `loc`, for messages that point at another place than the error's own.
std::string short_location(const std::source_location &loc);

/// The innermost builder of this thread, or null outside any kernel trace.
Builder *current_builder() noexcept;
/// The innermost builder; throws DslError "<what> used outside a kernel" when there is none.
Builder &require_builder(const char *what, const std::source_location &loc);
/// The trace of an expression that combines values of different kernels.
inline constexpr uint32_t kMixedTrace = 0xFFFFFFFFu;
/// Throws DslError when a value traced for kernel `value_trace` is used while tracing another.
void check_trace(uint32_t value_trace, const std::source_location &loc);
uint32_t current_trace_id() noexcept;

/// RAII: pushes a builder for `kernel_name` (a device function's name when `is_function`) and
/// pops it again, also on exceptions.
class TraceScope {
public:
    explicit TraceScope(std::string kernel_name, bool is_function = false);
    ~TraceScope();
    TraceScope(const TraceScope &) = delete;
    TraceScope &operator=(const TraceScope &) = delete;
    Builder &builder() { return builder_; }

private:
    Builder builder_;
};

} // namespace ember::detail

#endif // EMBER_DSL_TRACER_H
