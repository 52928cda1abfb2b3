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
/// * Every value remembers the trace it came from (0 = none: constants and special registers),
///   so a value of one kernel cannot leak into another.
#ifndef EMBER_DSL_TRACER_H
#define EMBER_DSL_TRACER_H

#include "ember/Error.h"
#include "ember/compiler/IR.h"

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

namespace ember::detail {

class Builder {
public:
    Builder(std::string kernel_name, uint32_t id) : kernel_name_(std::move(kernel_name)), id_(id) {}

    const std::string &kernel_name() const { return kernel_name_; }
    uint32_t id() const { return id_; }

    void emit(ir::Stmt s, const std::source_location &loc);
    /// Binds `value` to a fresh `let` and returns a reference to it; returns `value` unchanged in
    /// expression-only mode or when it is already a constant or variable reference.
    ir::Expr bind(ir::Expr value);

    void push_block();
    ir::Stmt pop_block();
    /// Replaces the statement most recently emitted into the current block, which must be `old`
    /// (used by `else_`/`elif_` to complete an `if_`).
    bool replace_last(const ir::Stmt &old, ir::Stmt replacement);
    /// Removes and returns the statements emitted into the current block after `marker`; false
    /// when `marker` is not in the current block.
    bool take_after(const ir::Stmt &marker, std::vector<ir::Stmt> &out);

    int loop_depth = 0;
    int expression_only = 0;

private:
    std::string kernel_name_;
    uint32_t id_;
    std::vector<std::vector<ir::Stmt>> blocks_;
};

/// The innermost builder of this thread, or null outside any kernel trace.
Builder *current_builder() noexcept;
/// The innermost builder; throws DslError "<what> used outside a kernel" when there is none.
Builder &require_builder(const char *what, const std::source_location &loc);
/// The trace of an expression that combines values of different kernels.
inline constexpr uint32_t kMixedTrace = 0xFFFFFFFFu;
/// Throws DslError when a value traced for kernel `value_trace` is used while tracing another.
void check_trace(uint32_t value_trace, const std::source_location &loc);
uint32_t current_trace_id() noexcept;

/// RAII: pushes a builder for `kernel_name` and pops it again, also on exceptions.
class TraceScope {
public:
    explicit TraceScope(std::string kernel_name);
    ~TraceScope();
    TraceScope(const TraceScope &) = delete;
    TraceScope &operator=(const TraceScope &) = delete;
    Builder &builder() { return builder_; }

private:
    Builder builder_;
};

} // namespace ember::detail

#endif // EMBER_DSL_TRACER_H
