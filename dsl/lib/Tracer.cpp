/// \file
/// The thread-local builder stack, trace-time checks and kernel finishing.
#include "ember/dsl/Tracer.h"
#include "ember/dsl/Builtins.h"
#include "ember/dsl/Function.h"
#include "ember/dsl/Kernel.h"
#include "ember/dsl/Print.h"
#include "ember/dsl/SIMD.h"

#include "ember/compiler/Verifier.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <string>

#include <sys/syscall.h>
#include <unistd.h>

namespace ember::detail {

namespace {
thread_local std::vector<Builder *> builder_stack;
std::atomic<uint32_t> next_trace_id{1};
std::atomic<uint64_t> next_kernel_id{1};

/// What each trace id traced ("kernel 'k'", "device function 'f'"), for messages about values
/// used outside their trace, which may name a kernel whose trace has ended. The oldest names are
/// dropped beyond max_trace_names.
struct TraceNames {
    static constexpr size_t max_trace_names = 1 << 16;
    std::mutex mutex;
    std::unordered_map<uint32_t, std::string> names;
    std::deque<uint32_t> order;

    void add(uint32_t id, std::string what) {
        std::lock_guard<std::mutex> lock(mutex);
        if (order.size() == max_trace_names) {
            names.erase(order.front());
            order.pop_front();
        }
        names.emplace(id, std::move(what));
        order.push_back(id);
    }
    std::string get(uint32_t id) {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = names.find(id);
        return it == names.end() ? std::string("a kernel traced earlier") : it->second;
    }
};

TraceNames &trace_names() {
    static TraceNames *names = new TraceNames; // never destroyed: kernels may be traced at exit
    return *names;
}

} // namespace

void Builder::emit(ir::Stmt s, const std::source_location &loc) {
    if (expression_only)
        throw DslError("a while_ condition must be an expression: it cannot store, assign or "
                       "declare variables (kernel '" + kernel_name_ + "')",
                       loc);
    EMBER_ASSERT(!blocks_.empty(), "emit with no open block");
    check_depth(s.depth(), "this statement", loc);
    // [Note] Divergence: a Var is thread-dependent after a thread-dependent value, or any value
    // assigned in divergent code, went into it.
    const ir::Variable *var = nullptr;
    bool dependent = false;
    if (const auto *d = s.as<ir::Declare>()) {
        var = d->var.get();
        dependent = thread_dependent(d->init);
    } else if (const auto *a = s.as<ir::Assign>()) {
        var = a->var.get();
        dependent = thread_dependent(a->value);
    }
    if (const auto *w = s.as<ir::Wgmma>()) // the accumulators hold each thread's own elements
        for (const ir::VariableRef &v : w->acc) thread_dependent_vars_.insert(v.get());
    if (var) {
        if (dependent || divergence())
            thread_dependent_vars_.insert(var);
        else
            thread_dependent_vars_.erase(var);
    }
    blocks_.back().push_back(std::move(s));
}

namespace {
/// Does a body read something that differs between threads (calls aside)?
class ReadsThread final : public ir::IRVisitor {
public:
    using ir::IRVisitor::visit;
    void visit(const ir::SpecialReg *op) override { found |= op->reg == ir::SpecialRegKind::ThreadIdx; }
    void visit(const ir::Warp *) override { found = true; }
    void visit(const ir::Mma *) override { found = true; }
    void visit(const ir::MatrixLoad *) override { found = true; }
    void visit(const ir::Atomic *) override { found = true; }
    bool found = false;
};

/// Does `f`, or a function it calls, read something that differs between threads?
bool reads_thread(const ir::Function &f) {
    ReadsThread r;
    r.visit(f.body);
    for (const ir::FunctionRef &g : ir::called_functions(f.body)) {
        if (r.found) break;
        r.visit(g->body);
    }
    return r.found;
}
} // namespace

bool Builder::thread_dependent(const ir::Expr &e) const {
    if (!e) return false;
    switch (e.kind()) {
    case ir::NodeKind::IntImm:
    case ir::NodeKind::FloatImm:
    case ir::NodeKind::BoolImm: return false;
    case ir::NodeKind::SpecialReg: return e.as<ir::SpecialReg>()->reg == ir::SpecialRegKind::ThreadIdx;
    case ir::NodeKind::VarRef: return thread_dependent_vars_.count(e.as<ir::VarRef>()->var.get()) != 0;
    case ir::NodeKind::Warp:
    case ir::NodeKind::Mma:
    case ir::NodeKind::MatrixLoad:
    case ir::NodeKind::Atomic: return true;
    case ir::NodeKind::Invoke: {
        const auto *op = e.as<ir::Invoke>();
        for (const ir::Expr &a : op->args)
            if (thread_dependent(a)) return true;
        auto [it, fresh] = function_reads_thread_.try_emplace(op->callee.get(), false);
        if (fresh) it->second = reads_thread(*op->callee);
        return it->second;
    }
    default: break;
    }
    // Every other node depends on the thread exactly when one of its operands does.
    struct Children final : ir::IRVisitor {
        const Builder &b;
        bool found = false;
        explicit Children(const Builder &bb) : b(bb) {}
        using ir::IRVisitor::visit;
        void visit(const ir::SpecialReg *op) override { found |= b.thread_dependent(op); }
        void visit(const ir::VarRef *op) override { found |= b.thread_dependent(op); }
        void visit(const ir::Warp *) override { found = true; }
        void visit(const ir::Mma *) override { found = true; }
        void visit(const ir::MatrixLoad *) override { found = true; }
        void visit(const ir::Atomic *) override { found = true; }
        void visit(const ir::Invoke *op) override { found |= b.thread_dependent(op); }
    } c(*this);
    c.visit(e);
    return c.found;
}

void Builder::push_divergence(bool divergent, const char *construct, const std::source_location &loc) {
    divergence_.push_back({divergent ? construct : nullptr, loc});
}

void Builder::pop_divergence() {
    EMBER_ASSERT(!divergence_.empty(), "unbalanced divergence scopes");
    divergence_.pop_back();
}

const Builder::Divergence *Builder::divergence() const {
    for (size_t i = divergence_.size(); i-- > 0;)
        if (divergence_[i].construct) return &divergence_[i];
    return nullptr;
}

void check_shared_array(Builder &b, const std::string &what, uint64_t bytes, const std::source_location &loc) {
    if (b.is_function())
        throw DslError(what + " in " + b.what() + ": shared arrays are declared in kernels; declare it "
                                                  "in the kernel and pass the SharedPtr<T> to the function",
                       loc);
    if (bytes == 0) return; // the dynamic shared memory: sized at the launch
    b.shared_arrays.push_back({what, bytes, loc});
    b.shared_bytes += bytes;
    if (b.shared_bytes <= ir::max_static_shared_bytes) return;
    std::string msg = b.what() + ": static shared memory over the limit: " + std::to_string(b.shared_bytes) +
                      " bytes of " + std::to_string(ir::max_static_shared_bytes) + ", in " +
                      std::to_string(b.shared_arrays.size()) + " shared arrays:";
    for (const Builder::SharedArrayDecl &d : b.shared_arrays)
        msg += "\n  " + d.what + " (" + std::to_string(d.bytes) + " bytes) at " + short_location(d.loc);
    throw DslError(msg, loc);
}

std::string short_location(const std::source_location &loc) {
    return std::string(loc.file_name()) + ":" + std::to_string(loc.line());
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
    if (thread_dependent(value)) thread_dependent_vars_.insert(v.get());
    blocks_.back().push_back(ir::Let::make(v, std::move(value)));
    return ir::VarRef::make(v);
}

void Builder::push_block(const char *construct, const std::source_location &loc) {
    if (blocks_.size() > kMaxBlockNesting)
        throw DslError(std::string(construct) + " nested " + std::to_string(blocks_.size()) +
                           " deep in " + what() + ": if_, elif_, else_, for_ and while_ nest at most " +
                           std::to_string(kMaxBlockNesting) + " deep (ember's IR nests at most " +
                           std::to_string(ir::max_nesting_depth) + " levels)",
                       loc);
    blocks_.emplace_back();
}

void Builder::check_depth(uint32_t depth, const std::string &what, const std::source_location &loc) const {
    // The statement sits in the open blocks, each (but the kernel's own) held by a statement.
    const uint64_t total = uint64_t(depth) + 2 * blocks_.size() - 1;
    if (total > ir::max_nesting_depth)
        throw DslError(what + " nests " + std::to_string(total) + " levels deep in " + this->what() +
                           " (blocks and the statements holding them, and expressions, count one "
                           "level each): ember's IR nests at most " +
                           std::to_string(ir::max_nesting_depth) + " levels",
                       loc);
}

ir::Expr keep_shallow(ir::Expr e, uint32_t trace) {
    if (!e || e.depth() <= kBindDepth) return e;
    Builder *b = current_builder();
    const std::string deep = "an expression nested " + std::to_string(e.depth()) + " levels deep";
    if (!b) throw DslError(deep + " outside a kernel", std::source_location::current());
    if (trace != 0 && trace != b->id()) check_trace(trace, std::source_location::current());
    if (b->expression_only)
        throw DslError("the condition of this while_ is " + deep + " (in " + b->what() +
                           "): a while_ condition can nest at most " + std::to_string(kBindDepth) +
                           " levels; compute deeper values into a Var before the loop",
                       b->condition_loc);
    return b->bind(std::move(e));
}

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
        throw DslError("an expression combines values traced in different kernels or device "
                       "functions" + (builder_stack.empty() ? std::string() : " (in " + builder_stack.back()->what() + ")") +
                       "; pass values to a kernel or device function as parameters",
                       loc);
    uint32_t cur = current_trace_id();
    if (cur == value_trace) return;
    const std::string origin = trace_names().get(value_trace);
    if (cur == 0)
        throw DslError("a value traced in " + origin + " is used outside any kernel: a traced value "
                           "exists only while its kernel is traced",
                       loc);
    const std::string user = builder_stack.back()->what();
    throw DslError("a value traced in " + origin + " is used in " + user +
                       ": a traced value belongs to the kernel or device function that traced it; "
                       "pass it to " + user + " as a parameter instead",
                   loc);
}

uint32_t merge_trace(uint32_t a, uint32_t b) {
    if (a == 0) return b;
    if (b == 0 || a == b) return a;
    return kMixedTrace; // reported where the value is used, with the user's location
}

TraceScope::TraceScope(std::string kernel_name, bool is_function)
    : builder_(std::move(kernel_name), next_trace_id.fetch_add(1), is_function) {
    trace_names().add(builder_.id(), builder_.what());
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
        return host_constant_float(t, d, loc);
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

namespace {
/// The largest finite value of the float type `t`.
double max_finite(ir::Type t) {
    switch (t.scalar()) {
    case ir::ScalarType::F16: return 65504.0;
    case ir::ScalarType::BF16: return std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
    case ir::ScalarType::F32: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
    }
}

/// Half a unit in the last place of max_finite(t): a finite value whose magnitude reaches
/// max_finite(t) + this rounds to infinity (a tie rounds to even, which is infinity there).
double half_ulp_at_max(ir::Type t) {
    switch (t.scalar()) {
    case ir::ScalarType::F16: return std::ldexp(1.0, 15 - 10 - 1);
    case ir::ScalarType::BF16: return std::ldexp(1.0, 127 - 7 - 1);
    case ir::ScalarType::F32: return std::ldexp(1.0, 127 - 23 - 1);
    default: return std::numeric_limits<double>::infinity(); // f64: every finite double fits
    }
}

/// `v` as written in C++: integers in full (up to 1e18), other values in their shortest form.
std::string shortest(double v) {
    if (v == std::trunc(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<long long>(v));
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}
} // namespace

ir::Expr host_constant_float(ir::Type t, double v, const std::source_location &loc) {
    // A finite C++ number that would round to infinity in `t` is an error, as an integer that
    // does not fit: infinity is written as such (std::numeric_limits<float>::infinity()).
    if (std::isfinite(v) && std::fabs(v) >= max_finite(t) + half_ulp_at_max(t)) {
        Builder *b = current_builder();
        throw DslError("the constant " + shortest(v) + " is out of range for " + t.to_string() +
                           " (its finite values lie within +-" + shortest(max_finite(t)) + ")" +
                           (b ? " (kernel '" + b->kernel_name() + "')" : std::string()) +
                           "; it would round to infinity: write infinity explicitly, or use a wider type",
                       loc);
    }
    return ir::FloatImm::make(t, v);
}

void check_kernel_signature(const std::string &name, size_t num_params, size_t num_names,
                            const std::source_location &loc) {
    if (!ir::is_c_identifier(name))
        throw DslError("kernel name '" + name + "' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)", loc);
    if (num_names != 0 && num_names != num_params)
        throw DslError("kernel '" + name + "': " + std::to_string(num_names) +
                           " parameter names given for " + std::to_string(num_params) + " parameters",
                       loc);
}

void check_function_name(const std::string &name, size_t num_params, size_t num_names,
                         const std::source_location &loc) {
    if (!ir::is_c_identifier(name))
        throw DslError("device function name '" + name + "' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)", loc);
    if (num_names != 0 && num_names != num_params)
        throw DslError("device function '" + name + "': " + std::to_string(num_names) +
                           " parameter names given for " + std::to_string(num_params) + " parameters",
                       loc);
}

std::shared_ptr<const FunctionInfo> finish_function(Builder &b, std::vector<ir::VariableRef> params, ir::Type ret) {
    auto info = std::make_shared<FunctionInfo>();
    info->ir = ir::Function::make(b.kernel_name(), std::move(params), ret, b.pop_block());
    ir::verify_or_throw(*info->ir);
    info->uses_barrier = ir::uses_barrier(*info->ir);
    return info;
}

ir::Expr call_function(const FunctionInfo *f, std::vector<ir::Expr> args, std::vector<uint32_t> traces,
                       const std::source_location &loc) {
    Builder &b = require_builder("a device function call", loc);
    if (!f)
        throw DslError("call of a device function that is not defined yet, in " + b.what() +
                           (b.is_function() ? " (a device function cannot call itself: recursion is not "
                                              "supported on GPUs)"
                                            : ""),
                       loc);
    for (uint32_t t : traces) check_trace(t, loc);
    if (f->uses_barrier) {
        if (const Builder::Divergence *d = b.divergence())
            throw DslError("device function '" + f->ir->name + "' waits at a barrier() but is called where "
                               "the threads of a block may not all arrive: the " + std::string(d->construct) +
                               " at " + short_location(d->loc) + " depends on the thread (thread_idx) (" +
                               b.what() + "; see [Note] Divergence)",
                           loc);
    }
    ir::Expr call = ir::Invoke::make(f->ir, std::move(args));
    if (f->ir->ret.is_void()) {
        b.emit(ir::Evaluate::make(call), loc);
        return {};
    }
    return b.bind(call);
}

void check_launch_bounds(const std::string &name, const ir::LaunchBounds &bounds,
                         const std::source_location &loc) {
    if (std::string p = bounds.problem(); !p.empty())
        throw DslError("kernel '" + name + "': LaunchBounds: " + p, loc);
}

std::shared_ptr<const KernelInfo> finish_kernel(Builder &b, std::vector<ir::VariableRef> params,
                                                std::vector<std::string> names,
                                                ir::LaunchBounds bounds, ir::FpContract contract) {
    auto info = std::make_shared<KernelInfo>();
    info->ir = ir::Kernel{b.kernel_name(), std::move(params), b.pop_block(), bounds, contract};
    info->param_names = std::move(names);
    info->id = next_kernel_id.fetch_add(1);
    ir::verify_or_throw(info->ir);
    info->verified = true;
    info->trace_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - b.start_time()).count();
    info->trace_start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               b.start_time().time_since_epoch())
                               .count();
    info->trace_thread = static_cast<int64_t>(::syscall(SYS_gettid));
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
    // Each arm nests two levels deeper than the one before it: check the depth of the whole
    // chain before building it.
    uint32_t depth = else_body_ ? else_body_.depth() : 0;
    for (size_t i = arms_.size(); i-- > 0;) {
        depth = 1 + std::max({arms_[i].cond.depth(), arms_[i].body.depth(), depth});
        if (i == 0) break;
        for (const ir::Stmt &s : arms_[i].prelude) depth = std::max(depth, s.depth());
        ++depth; // the else block
    }
    builder_->check_depth(depth, "an if_ with " + std::to_string(arms_.size() - 1) + " elif_ arms", loc);
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

void detail::check_lane(const LaneIndex &k, int lanes, const char *type_name) {
    if (k.lane >= 0 && k.lane < lanes) return;
    throw DslError("lane " + std::to_string(k.lane) +
                       " of a vector of " + std::to_string(lanes) + " " + type_name + " lanes (SIMD<T, " +
                       std::to_string(lanes) + "> has lanes 0 to " + std::to_string(lanes - 1) + ")",
                   k.loc);
}

void detail::PrintBuilder::emit(const std::source_location &loc) {
    check_trace(trace_, loc);
    require_builder("print", loc).emit(ir::Print::make(std::move(items_), sep_, end_), loc);
}

void return_(std::source_location loc) {
    detail::Builder &b = detail::require_builder("return_", loc);
    if (!b.return_type.is_void())
        throw DslError(b.what() + " returns " + b.return_type.to_string() + ": use return_(value)", loc);
    b.emit(ir::Return::make(), loc);
}

ir::Type detail::current_return_type(const std::source_location &loc) {
    detail::Builder &b = detail::require_builder("return_", loc);
    if (!b.is_function())
        throw DslError("return_(value) in " + b.what() + ": a kernel returns no value (use return_())", loc);
    if (b.return_type.is_void())
        throw DslError("return_(value) in " + b.what() + ", which returns nothing: use return_()", loc);
    return b.return_type;
}

void detail::return_value(ir::Expr value, uint32_t trace, const std::source_location &loc) {
    detail::check_trace(trace, loc);
    detail::Builder &b = detail::require_builder("return_", loc);
    current_return_type(loc);
    if (value.type() != b.return_type)
        throw DslError(b.what() + " returns " + b.return_type.to_string() + ", not " +
                           value.type().to_string() + ": convert with cast<T>()",
                       loc);
    b.emit(ir::Return::make(std::move(value)), loc);
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

void detail::emit_async_copy(const ir::Expr &dst, uint32_t dst_trace, const IndexArg &dst_index,
                             const ir::Expr &src, uint32_t src_trace, const IndexArg &src_index,
                             uint32_t count, const Bool *valid) {
    const std::source_location &loc = src_index.loc;
    uint32_t trace = merge_trace(merge_trace(dst_trace, dst_index.trace),
                                 merge_trace(src_trace, src_index.trace));
    if (valid) trace = merge_trace(trace, valid->trace());
    check_trace(trace, loc);
    detail::Builder &b = detail::require_builder("async_copy", loc);
    if (std::string p = ir::AsyncCopy::problem(dst.type().element_type(), count); !p.empty())
        throw DslError("async_copy " + p, loc);
    b.emit(ir::AsyncCopy::make(dst, dst_index.expr, src, src_index.expr, count,
                               valid ? valid->expr() : ir::Expr()),
           loc);
}

void async_commit(std::source_location loc) {
    detail::require_builder("async_commit", loc).emit(ir::AsyncGroup::commit(), loc);
}

void async_wait(int pending, std::source_location loc) {
    detail::Builder &b = detail::require_builder("async_wait", loc);
    if (pending < 0 || pending > ir::AsyncGroup::kMaxPending)
        throw DslError("async_wait(" + std::to_string(pending) +
                           "): the groups left in flight are 0 to " +
                           std::to_string(ir::AsyncGroup::kMaxPending),
                       loc);
    b.emit(ir::AsyncGroup::wait_for(pending), loc);
}

namespace {
void emit_barrier(ir::BarrierScope scope, const char *name, std::source_location loc) {
    detail::Builder &b = detail::require_builder(name, loc);
    if (const detail::Builder::Divergence *d = b.divergence())
        throw DslError(std::string(name) + "() where the threads of a " +
                           (scope == ir::BarrierScope::Block ? "block" : "cluster") +
                           " may not all arrive: the " + std::string(d->construct) + " at " +
                           detail::short_location(d->loc) +
                           " depends on the thread (thread_idx), so some threads would skip it (" +
                           b.what() + "; see [Note] Divergence)",
                       loc);
    b.emit(ir::Barrier::make(scope), loc);
}
} // namespace

void barrier(std::source_location loc) { emit_barrier(ir::BarrierScope::Block, "barrier", loc); }
void cluster_sync(std::source_location loc) {
    emit_barrier(ir::BarrierScope::Cluster, "cluster_sync", loc);
}

} // namespace ember
