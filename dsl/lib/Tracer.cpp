/// \file
/// The thread-local builder stack, trace-time checks and kernel finishing.
#include "ember/dsl/Tracer.h"
#include "ember/dsl/Builtins.h"
#include "ember/dsl/Kernel.h"
#include "ember/dsl/Print.h"

#include "ember/compiler/Verifier.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <string>

namespace ember::detail {

namespace {
thread_local std::vector<Builder *> builder_stack;
std::atomic<uint32_t> next_trace_id{1};
std::atomic<uint64_t> next_kernel_id{1};

/// Name of the kernel a trace id belongs to, as long as it is on this thread's stack.
std::string trace_name(uint32_t id) {
    for (Builder *b : builder_stack)
        if (b->id() == id) return "'" + b->kernel_name() + "'";
    return "another kernel";
}

bool is_identifier(const std::string &s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}
} // namespace

void Builder::emit(ir::Stmt s, const std::source_location &loc) {
    if (expression_only)
        throw DslError("a while_ condition must be an expression: it cannot store, assign or "
                       "declare variables (kernel '" + kernel_name_ + "')",
                       loc);
    EMBER_ASSERT(!blocks_.empty(), "emit with no open block");
    blocks_.back().push_back(std::move(s));
}

ir::Expr Builder::bind(ir::Expr value) {
    if (expression_only) return value;
    switch (value.kind()) {
    case ir::NodeKind::IntImm:
    case ir::NodeKind::FloatImm:
    case ir::NodeKind::BoolImm:
        return value;
    case ir::NodeKind::VarRef:
        // Immutable variables never change; only mutable ones need a snapshot.
        if (value.as<ir::VarRef>()->var->kind != ir::VarKind::Mutable) return value;
        break;
    default:
        break;
    }
    ir::VariableRef v = ir::Variable::make("", value.type(), ir::VarKind::Let);
    EMBER_ASSERT(!blocks_.empty(), "bind with no open block");
    blocks_.back().push_back(ir::Let::make(v, std::move(value)));
    return ir::VarRef::make(v);
}

void Builder::push_block() { blocks_.emplace_back(); }

ir::Stmt Builder::pop_block() {
    EMBER_ASSERT(!blocks_.empty(), "pop_block with no open block");
    std::vector<ir::Stmt> stmts = std::move(blocks_.back());
    blocks_.pop_back();
    return ir::Block::make(std::move(stmts));
}

bool Builder::replace_last(const ir::Stmt &old, ir::Stmt replacement) {
    if (blocks_.empty() || blocks_.back().empty() || !blocks_.back().back().same_as(old))
        return false;
    blocks_.back().back() = std::move(replacement);
    return true;
}

bool Builder::take_after(const ir::Stmt &marker, std::vector<ir::Stmt> &out) {
    if (blocks_.empty()) return false;
    std::vector<ir::Stmt> &b = blocks_.back();
    for (size_t i = b.size(); i-- > 0;) {
        if (!b[i].same_as(marker)) continue;
        out.assign(b.begin() + static_cast<std::ptrdiff_t>(i) + 1, b.end());
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(i) + 1, b.end());
        return true;
    }
    return false;
}

Builder *current_builder() noexcept { return builder_stack.empty() ? nullptr : builder_stack.back(); }

uint32_t current_trace_id() noexcept {
    return builder_stack.empty() ? 0 : builder_stack.back()->id();
}

Builder &require_builder(const char *what, const std::source_location &loc) {
    if (builder_stack.empty())
        throw DslError(std::string(what) + " used outside a kernel: DSL operations are only valid "
                                           "while kernel() traces a lambda",
                       loc);
    return *builder_stack.back();
}

void check_trace(uint32_t value_trace, const std::source_location &loc) {
    if (value_trace == 0) return;
    if (value_trace == kMixedTrace)
        throw DslError("an expression combines values traced in different kernels; pass values "
                       "to a kernel as parameters",
                       loc);
    uint32_t cur = current_trace_id();
    if (cur == value_trace) return;
    if (cur == 0)
        throw DslError("a traced value of kernel " + trace_name(value_trace) +
                           " used outside a kernel",
                       loc);
    throw DslError("a value traced in kernel " + trace_name(value_trace) + " used in kernel '" +
                       builder_stack.back()->kernel_name() +
                       "': pass it as a parameter instead",
                   loc);
}

uint32_t merge_trace(uint32_t a, uint32_t b) {
    if (a == 0) return b;
    if (b == 0 || a == b) return a;
    return kMixedTrace; // reported where the value is used, with the user's location
}

TraceScope::TraceScope(std::string kernel_name)
    : builder_(std::move(kernel_name), next_trace_id.fetch_add(1)) {
    builder_stack.push_back(&builder_);
}

TraceScope::~TraceScope() {
    EMBER_ASSERT(!builder_stack.empty() && builder_stack.back() == &builder_,
                 "unbalanced trace scopes");
    builder_stack.pop_back();
}

ir::Expr host_constant_int(ir::Type t, int64_t v, bool is_unsigned_source, uint64_t uv,
                           const std::source_location &loc) {
    if (t.is_float()) {
        double d = is_unsigned_source ? static_cast<double>(uv) : static_cast<double>(v);
        return ir::FloatImm::make(t, d);
    }
    // Does the C++ value fit the traced type?
    bool fits;
    unsigned bits = t.bits();
    if (t.is_unsigned_int()) {
        uint64_t max = bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t(1) << bits) - 1;
        fits = is_unsigned_source ? uv <= max : (v >= 0 && static_cast<uint64_t>(v) <= max);
    } else {
        int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
        int64_t min = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
        fits = is_unsigned_source ? uv <= static_cast<uint64_t>(max) : (v >= min && v <= max);
    }
    if (!fits) {
        Builder *b = current_builder();
        throw DslError("the constant " + (is_unsigned_source ? std::to_string(uv) : std::to_string(v)) +
                           " does not fit in " + t.to_string() +
                           (b ? " (kernel '" + b->kernel_name() + "')" : std::string()) +
                           "; use cast<T>() to convert it explicitly",
                       loc);
    }
    return ir::IntImm::make(t, is_unsigned_source ? static_cast<int64_t>(uv) : v);
}

ir::Expr host_constant_float(ir::Type t, double v) { return ir::FloatImm::make(t, v); }

void check_kernel_signature(const std::string &name, size_t num_params, size_t num_names,
                            const std::source_location &loc) {
    if (!is_identifier(name))
        throw DslError("kernel name '" + name + "' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)", loc);
    if (num_names != 0 && num_names != num_params)
        throw DslError("kernel '" + name + "': " + std::to_string(num_names) +
                           " parameter names given for " + std::to_string(num_params) + " parameters",
                       loc);
}

std::shared_ptr<const KernelInfo> finish_kernel(Builder &b, std::vector<ir::VariableRef> params,
                                                std::vector<std::string> names) {
    auto info = std::make_shared<KernelInfo>();
    info->ir = ir::Kernel{b.kernel_name(), std::move(params), b.pop_block()};
    info->param_names = std::move(names);
    info->id = next_kernel_id.fetch_add(1);
    ir::verify_or_throw(info->ir);
    return info;
}

} // namespace ember::detail

namespace ember {

void IfChain::check_open(const char *what, const std::source_location &loc) {
    if (closed_)
        throw DslError(std::string(what) + " after else_: an if_ chain has at most one else_", loc);
    if (detail::current_builder() != builder_)
        throw DslError(std::string(what) + " used outside the kernel of its if_", loc);
}

std::vector<ir::Stmt> IfChain::take_condition_prelude(const std::source_location &loc) {
    // Evaluating an elif_ condition may have bound loads and Var reads to lets after the if_.
    // They belong to the else branch: they run only when the earlier conditions are false.
    std::vector<ir::Stmt> prelude;
    if (!builder_->take_after(emitted_, prelude))
        throw DslError("elif_/else_ must directly follow its if_ (it is not in the same block)", loc);
    for (const ir::Stmt &s : prelude) {
        if (s.kind() != ir::NodeKind::Let)
            throw DslError("elif_/else_ must directly follow its if_ (another statement came between)", loc);
    }
    return prelude;
}

void IfChain::rebuild(const std::source_location &loc) {
    // if c0 {b0} else { <lets of c1>; if c1 {b1} else { ... else {else_body} } }
    ir::Stmt tail = else_body_;
    for (size_t i = arms_.size(); i-- > 1;) {
        std::vector<ir::Stmt> stmts = arms_[i].prelude;
        stmts.push_back(ir::If::make(arms_[i].cond, arms_[i].body, tail));
        tail = ir::Block::make(std::move(stmts));
    }
    ir::Stmt top = ir::If::make(arms_[0].cond, arms_[0].body, tail);
    if (!builder_->replace_last(emitted_, top))
        throw DslError("elif_/else_ must directly follow its if_ (another statement came between)", loc);
    emitted_ = top;
}

void break_(std::source_location loc) {
    detail::Builder &b = detail::require_builder("break_", loc);
    if (b.loop_depth == 0) throw DslError("break_ outside a loop (for_ or while_)", loc);
    b.emit(ir::Break::make(), loc);
}

void continue_(std::source_location loc) {
    detail::Builder &b = detail::require_builder("continue_", loc);
    if (b.loop_depth == 0) throw DslError("continue_ outside a loop (for_ or while_)", loc);
    b.emit(ir::Continue::make(), loc);
}

void detail::PrintBuilder::emit(const std::source_location &loc) {
    check_trace(trace_, loc);
    require_builder("print", loc).emit(ir::Print::make(std::move(items_), sep_, end_), loc);
}

void return_(std::source_location loc) {
    detail::require_builder("return_", loc).emit(ir::Return::make(), loc);
}

void fence_block(std::source_location loc) {
    detail::require_builder("fence_block", loc).emit(ir::Fence::make(ir::FenceScope::Block), loc);
}
void fence_device(std::source_location loc) {
    detail::require_builder("fence_device", loc).emit(ir::Fence::make(ir::FenceScope::Device), loc);
}
void fence_system(std::source_location loc) {
    detail::require_builder("fence_system", loc).emit(ir::Fence::make(ir::FenceScope::System), loc);
}

void barrier(std::source_location loc) {
    detail::require_builder("barrier", loc).emit(ir::Barrier::make(), loc);
}

} // namespace ember
