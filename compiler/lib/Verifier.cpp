/// \file
/// The IR verifier: scoping, mutability, types, loop context and kernel signature checks.
#include "ember/compiler/Verifier.h"

#include "IRPrinterInternal.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace ember::ir {

namespace {

std::string_view kind_name(VarKind k) {
    switch (k) {
    case VarKind::Param: return "param";
    case VarKind::Let: return "let";
    case VarKind::Mutable: return "var";
    case VarKind::LoopIndex: return "loop index";
    }
    return "invalid kind";
}

/// Does `s` end in a return on every path?
bool always_returns(const Stmt &s) {
    if (!s) return false;
    if (s.as<Return>()) return true;
    if (const auto *b = s.as<Block>()) return !b->stmts.empty() && always_returns(b->stmts.back());
    if (const auto *i = s.as<If>()) return always_returns(i->then_body) && always_returns(i->else_body);
    return false;
}

/// What the verifier checks: a kernel, or a device function (which has a return type).
struct Callable {
    bool is_kernel;
    const std::string &name;
    const std::vector<VariableRef> &params;
    const Stmt &body;
    Type ret;
};

/// Walks one kernel or device function with a stack of scopes and collects every problem.
class Verifier {
public:
    explicit Verifier(const Callable &k) : k_(k), what_(k.is_kernel ? "kernel '" : "function '@") {}

    std::vector<std::string> run() {
        if (k_.name.empty())
            report(k_.is_kernel ? "empty kernel name" : "empty function name");
        else if (!is_c_identifier(k_.name))
            report("name is not a C identifier");
        collect_definitions(k_.body);
        scopes_.emplace_back();
        for (size_t i = 0; i < k_.params.size(); ++i) {
            const VariableRef &p = k_.params[i];
            if (!p) {
                report("parameter " + std::to_string(i) + " is null");
                continue;
            }
            if (p->type.is_void()) report("parameter " + name(p) + " has void type");
            if (p->noalias && !p->type.is_pointer())
                report("parameter " + name(p) + " is noalias but not a pointer");
            if (k_.is_kernel && p->type.is_vector())
                report("parameter " + name(p) + " is a vector (" + p->type.to_string() +
                       "); kernels take scalars and pointers (load vectors through a pointer)");
            if (p->kind != VarKind::Param)
                report("parameter " + name(p) + " is a " + std::string(kind_name(p->kind)) +
                       " variable, not a param");
            define(p);
        }
        if (!k_.body)
            report("has no body");
        else if (!k_.body.as<Block>())
            report("body is a " + std::string(to_string(k_.body.kind())) + ", not a Block");
        if (!k_.is_kernel && k_.ret.is_pointer() && k_.ret.space() != AddressSpace::Global)
            report("returns a " + k_.ret.to_string() + "; only global pointers can be returned");
        if (!k_.is_kernel && !k_.ret.is_void() && k_.body && !always_returns(k_.body))
            report("returns " + k_.ret.to_string() + " but does not end in 'return' on every path");
        stmt(k_.body);
        if (shared_bytes_ > max_static_shared_bytes) report_shared_overflow();
        return std::move(problems_);
    }

private:
    void report(const std::string &msg) { problems_.push_back(what_ + k_.name + "': " + msg); }
    void report(const std::string &msg, const Stmt &s) {
        report(msg + " in '" + printer().stmt_line(s) + "'");
    }

    std::string name(const VariableRef &v) { return printer().name(v.get()); }

    /// The static shared arrays add up to more than the limit: the total, then every array with
    /// its size, one a line.
    void report_shared_overflow() {
        std::string msg = "static shared memory over the limit: " + std::to_string(shared_bytes_) +
                          " bytes of " + std::to_string(max_static_shared_bytes) + ", in " +
                          std::to_string(shared_arrays_.size()) + " shared array" +
                          (shared_arrays_.size() == 1 ? "" : "s") + ":";
        for (const Stmt &st : shared_arrays_) {
            const auto *op = st.as<SharedArray>();
            msg += "\n  " + printer().stmt_line(st) + " (" +
                   std::to_string(add_bytes(0, op->count, op->var->type.element_type().bytes())) + " bytes)";
        }
        report(msg);
    }

    void collect_definitions(const Stmt &s) {
        if (!s) return;
        if (const auto *op = s.as<Block>())
            for (const Stmt &c : op->stmts) collect_definitions(c);
        else if (const auto *op = s.as<Let>())
            all_defs_.insert(op->var.get());
        else if (const auto *op = s.as<Declare>())
            all_defs_.insert(op->var.get());
        else if (const auto *op = s.as<If>()) {
            collect_definitions(op->then_body);
            collect_definitions(op->else_body);
        } else if (const auto *op = s.as<For>()) {
            all_defs_.insert(op->var.get());
            collect_definitions(op->body);
        } else if (const auto *op = s.as<While>())
            collect_definitions(op->body);
    }

    void define(const VariableRef &v) {
        if (!defined_.insert(v.get()).second) report("variable " + name(v) + " defined twice");
        scopes_.back().insert(v.get());
    }

    bool in_scope(const Variable *v) const {
        for (const auto &scope : scopes_)
            if (scope.count(v)) return true;
        return false;
    }

    void check_use(const VariableRef &v) {
        if (in_scope(v.get())) return;
        if (defined_.count(v.get()))
            report(name(v) + " used outside its scope");
        else if (all_defs_.count(v.get()))
            report(name(v) + " used before its definition");
        else
            report("use of undefined variable " + name(v));
    }

    void check_kind(const VariableRef &v, VarKind want, const Stmt &s) {
        if (v->kind != want)
            report("variable " + name(v) + " is a " + std::string(kind_name(v->kind)) +
                       " variable, expected a " + std::string(kind_name(want)),
                   s);
    }

    void check_type(Type got, Type want, const std::string &what, const Stmt &s) {
        if (got != want)
            report(what + " has type " + got.to_string() + ", expected " + want.to_string(), s);
    }

    void check_index(const Expr &index, const Stmt &s) {
        if (index && !index.type().is_int())
            report("index of type " + index.type().to_string() + " is not an integer", s);
    }

    void check_cond(const Expr &cond, std::string_view what, const Stmt &s) {
        if (cond && !cond.type().is_bool())
            report("condition of '" + std::string(what) + "' has type " + cond.type().to_string() +
                       ", expected bool",
                   s);
    }

    /// Checks `e` in the context of statement `s`.
    void expr(const Expr &e, const Stmt &s) {
        if (!e) {
            report("null expression", s);
            return;
        }
        switch (e.kind()) {
        case NodeKind::VarRef: {
            const auto *op = e.as<VarRef>();
            check_use(op->var);
            if (op->type != op->var->type)
                report("reference to " + name(op->var) + " has type " + op->type.to_string() +
                           " but the variable is " + op->var->type.to_string(),
                       s);
            return;
        }
        case NodeKind::Unary: expr(e.as<Unary>()->a, s); return;
        case NodeKind::Binary:
            expr(e.as<Binary>()->a, s);
            expr(e.as<Binary>()->b, s);
            return;
        case NodeKind::Compare:
            expr(e.as<Compare>()->a, s);
            expr(e.as<Compare>()->b, s);
            return;
        case NodeKind::Cast: expr(e.as<Cast>()->a, s); return;
        case NodeKind::Select:
            expr(e.as<Select>()->cond, s);
            expr(e.as<Select>()->a, s);
            expr(e.as<Select>()->b, s);
            return;
        case NodeKind::Load:
            expr(e.as<Load>()->ptr, s);
            expr(e.as<Load>()->index, s);
            check_index(e.as<Load>()->index, s);
            return;
        case NodeKind::Call:
            for (const Expr &a : e.as<Call>()->args) expr(a, s);
            return;
        case NodeKind::Invoke: {
            const auto *op = e.as<Invoke>();
            for (const Expr &a : op->args) expr(a, s);
            if (op->args.size() != op->callee->params.size()) {
                report("call of @" + op->callee->name + " with " + std::to_string(op->args.size()) +
                           " arguments for " + std::to_string(op->callee->params.size()) + " parameters",
                       s);
                return;
            }
            for (size_t i = 0; i < op->args.size(); ++i)
                if (op->args[i] && op->args[i].type() != op->callee->params[i]->type)
                    report("argument " + std::to_string(i) + " of @" + op->callee->name + " has type " +
                               op->args[i].type().to_string() + ", expected " +
                               op->callee->params[i]->type.to_string(),
                           s);
            return;
        }
        case NodeKind::MakeVector:
            for (const Expr &a : e.as<MakeVector>()->args) expr(a, s);
            return;
        case NodeKind::Extract: expr(e.as<Extract>()->vector, s); return;
        case NodeKind::Reduce: expr(e.as<Reduce>()->value, s); return;
        case NodeKind::Warp:
            expr(e.as<Warp>()->value, s);
            if (e.as<Warp>()->lane) expr(e.as<Warp>()->lane, s);
            return;
        case NodeKind::Mma:
            expr(e.as<Mma>()->a, s);
            expr(e.as<Mma>()->b, s);
            expr(e.as<Mma>()->c, s);
            return;
        case NodeKind::MatrixLoad:
            expr(e.as<MatrixLoad>()->ptr, s);
            expr(e.as<MatrixLoad>()->index, s);
            check_index(e.as<MatrixLoad>()->index, s);
            return;
        case NodeKind::Atomic: {
            const auto *op = e.as<Atomic>();
            expr(op->ptr, s);
            expr(op->index, s);
            check_index(op->index, s);
            if (op->compare) expr(op->compare, s);
            expr(op->value, s);
            return;
        }
        default: return;
        }
    }

    /// Checks a loop or branch body in a scope of its own.
    void body(const Stmt &s, bool loop) {
        scopes_.emplace_back();
        loop_depth_ += loop;
        stmt(s);
        loop_depth_ -= loop;
        scopes_.pop_back();
    }

    void stmt(const Stmt &s) {
        if (!s) return;
        switch (s.kind()) {
        case NodeKind::Block:
            scopes_.emplace_back();
            for (const Stmt &c : s.as<Block>()->stmts) {
                if (!c)
                    report("null statement in a block");
                else
                    stmt(c);
            }
            scopes_.pop_back();
            return;
        case NodeKind::Let: {
            const auto *op = s.as<Let>();
            expr(op->value, s);
            check_kind(op->var, VarKind::Let, s);
            check_type(op->value.type(), op->var->type, "value of " + name(op->var), s);
            define(op->var);
            return;
        }
        case NodeKind::SharedArray: {
            const auto *op = s.as<SharedArray>();
            check_kind(op->var, VarKind::Let, s);
            if (!k_.is_kernel)
                report("shared arrays are declared in kernels; pass the pointer to the function", s);
            shared_bytes_ = add_bytes(shared_bytes_, op->count, op->var->type.element_type().bytes());
            if (op->count > 0) shared_arrays_.push_back(s); // count 0: the dynamic shared memory
            define(op->var);
            return;
        }
        case NodeKind::LocalArray: {
            const auto *op = s.as<LocalArray>();
            check_kind(op->var, VarKind::Let, s);
            local_bytes_ = add_bytes(local_bytes_, op->count, op->var->type.element_type().bytes());
            if (local_bytes_ > max_local_bytes && !local_reported_) {
                local_reported_ = true;
                report("local arrays add up to more than " + std::to_string(max_local_bytes) +
                       " bytes per thread (" + std::to_string(local_bytes_) + " at " + name(op->var) + ")");
            }
            define(op->var);
            return;
        }
        case NodeKind::ConstantArray: {
            const auto *op = s.as<ConstantArray>();
            check_kind(op->var, VarKind::Let, s);
            const Type t = op->var->type;
            if (!t.is_pointer() || t.space() != AddressSpace::Constant || !t.readonly())
                report("constant array " + name(op->var) + " has type " + t.to_string() +
                           ", expected a ptr<constant const T>",
                       s);
            if (!k_.is_kernel)
                report("constant arrays are declared in kernels; pass the pointer to the function", s);
            check_constant_name(op, s);
            if (!op->init.empty() && op->init.size() != op->count)
                report("constant array @" + op->name + " has " + std::to_string(op->count) + " elements but " +
                           std::to_string(op->init.size()) + " initial values",
                       s);
            constant_bytes_ += op->count * t.element_type().bytes();
            if (constant_bytes_ > max_constant_bytes && !constant_reported_) {
                constant_reported_ = true;
                report("constant arrays add up to " + std::to_string(constant_bytes_) + " bytes (at @" + op->name +
                       "), more than the " + std::to_string(max_constant_bytes) +
                       " bytes of constant memory a kernel may use");
            }
            define(op->var);
            return;
        }
        case NodeKind::Fence: return;
        case NodeKind::AsyncGroup: return;
        case NodeKind::Wgmma: {
            const auto *op = s.as<Wgmma>();
            expr(op->a, s);
            expr(op->a_index, s);
            expr(op->b, s);
            expr(op->b_index, s);
            check_index(op->a_index, s);
            check_index(op->b_index, s);
            for (const VariableRef &v : op->acc) check_use(v);
            if (std::string p = Wgmma::problem(op->input, op->n, op->a.type(), op->b.type(),
                                               op->acc);
                !p.empty())
                report(p, s);
            return;
        }
        case NodeKind::TensorSync:
            for (const VariableRef &v : s.as<TensorSync>()->acc) {
                check_use(v);
                if (v->kind != VarKind::Mutable)
                    report("wgmma accumulator " + name(v) + " is not a var", s);
            }
            return;
        case NodeKind::MBarrier: {
            const auto *op = s.as<MBarrier>();
            expr(op->ptr, s);
            expr(op->index, s);
            check_index(op->index, s);
            if (op->value) expr(op->value, s);
            if (op->ptr.type().readonly()) report("mbarrier through a read-only pointer", s);
            return;
        }
        case NodeKind::TmaLoad: {
            const auto *op = s.as<TmaLoad>();
            for (const Expr *e :
                 {&op->dst, &op->dst_index, &op->map, &op->x, &op->y, &op->bar, &op->bar_index})
                expr(*e, s);
            if (op->multicast) expr(op->multicast, s);
            check_index(op->dst_index, s);
            check_index(op->bar_index, s);
            if (op->dst.type().readonly()) report("tma_load to a read-only pointer", s);
            return;
        }
        case NodeKind::AsyncCopy: {
            const auto *op = s.as<AsyncCopy>();
            expr(op->dst, s);
            expr(op->dst_index, s);
            expr(op->src, s);
            expr(op->src_index, s);
            check_index(op->dst_index, s);
            check_index(op->src_index, s);
            if (op->valid) {
                expr(op->valid, s);
                check_type(op->valid.type(), Type(ScalarType::Bool), "async_copy condition", s);
            }
            if (op->dst.type().readonly()) report("async_copy to a read-only pointer", s);
            return;
        }
        case NodeKind::Declare: {
            const auto *op = s.as<Declare>();
            expr(op->init, s);
            check_kind(op->var, VarKind::Mutable, s);
            check_type(op->init.type(), op->var->type, "initial value of " + name(op->var), s);
            define(op->var);
            return;
        }
        case NodeKind::Assign: {
            const auto *op = s.as<Assign>();
            expr(op->value, s);
            check_use(op->var);
            if (op->var->kind != VarKind::Mutable)
                report("assignment to immutable variable " + name(op->var) + " (" +
                       std::string(kind_name(op->var->kind)) + ")");
            check_type(op->value.type(), op->var->type, "value assigned to " + name(op->var), s);
            return;
        }
        case NodeKind::Store: {
            const auto *op = s.as<Store>();
            expr(op->ptr, s);
            expr(op->index, s);
            expr(op->value, s);
            check_index(op->index, s);
            if (!op->ptr.type().is_pointer()) {
                report("store through non-pointer of type " + op->ptr.type().to_string(), s);
                return;
            }
            if (op->ptr.type().readonly()) report("store through read-only pointer", s);
            // A vector value stores its lanes to consecutive elements.
            check_type(op->value.type().lane_type(), op->ptr.type().element_type(), "stored value", s);
            return;
        }
        case NodeKind::If: {
            const auto *op = s.as<If>();
            expr(op->cond, s);
            check_cond(op->cond, "if", s);
            body(op->then_body, /*loop=*/false);
            body(op->else_body, /*loop=*/false);
            return;
        }
        case NodeKind::For: {
            const auto *op = s.as<For>();
            expr(op->begin, s);
            expr(op->end, s);
            expr(op->step, s);
            check_kind(op->var, VarKind::LoopIndex, s);
            Type t = op->var->type;
            if (!t.is_int()) report("loop index " + name(op->var) + " is not an integer", s);
            check_type(op->begin.type(), t, "loop begin", s);
            check_type(op->end.type(), t, "loop end", s);
            check_type(op->step.type(), t, "loop step", s);
            scopes_.emplace_back();
            define(op->var);
            body(op->body, /*loop=*/true);
            scopes_.pop_back();
            return;
        }
        case NodeKind::While: {
            const auto *op = s.as<While>();
            expr(op->cond, s);
            check_cond(op->cond, "while", s);
            body(op->body, /*loop=*/true);
            return;
        }
        case NodeKind::Break:
            if (loop_depth_ == 0) report("break outside a loop");
            return;
        case NodeKind::Continue:
            if (loop_depth_ == 0) report("continue outside a loop");
            return;
        case NodeKind::Barrier: return;
        case NodeKind::Return: {
            const Expr &v = s.as<Return>()->value;
            if (k_.is_kernel || k_.ret.is_void()) {
                if (v) report(std::string(k_.is_kernel ? "a kernel" : "a void function") + " returns no value", s);
                return;
            }
            if (!v) {
                report("'return' without a value in a function returning " + k_.ret.to_string(), s);
                return;
            }
            expr(v, s);
            check_type(v.type(), k_.ret, "returned value", s);
            return;
        }
        case NodeKind::Evaluate: {
            const Expr &v = s.as<Evaluate>()->value;
            expr(v, s);
            if (v && !v.as<Invoke>()) report("only function calls can be evaluated as statements", s);
            return;
        }
        case NodeKind::Print:
            for (const PrintItem &i : s.as<Print>()->items)
                if (!i.is_text()) expr(i.value, s);
            return;
        default: EMBER_UNREACHABLE("expression kind in a Stmt");
        }
    }

    /// A constant array's global name: a C identifier, not reserved (`__...`), unique in the
    /// kernel, and not the name of the kernel or of a function it calls (one symbol namespace).
    void check_constant_name(const ConstantArray *op, const Stmt &s) {
        const std::string &n = op->name;
        if (!is_c_identifier(n)) {
            report("constant array name '" + n + "' is not a C identifier", s);
            return;
        }
        if (n.size() >= 2 && n[0] == '_' && n[1] == '_')
            report("constant array name '" + n + "' starts with '__', which is reserved for ember", s);
        if (n == k_.name) report("constant array @" + n + " has the kernel's name", s);
        // Symbols the NVPTX module may also hold: the printf entry point and the dynamic shared
        // memory.
        if (n == "vprintf" || n == "printf" || n == k_.name + "_dynamic_shared")
            report("constant array name '" + n + "' is reserved for ember", s);
        if (!callee_names_computed_) {
            callee_names_computed_ = true;
            for (const FunctionRef &f : called_functions(k_.body)) callee_names_.insert(f->name);
        }
        if (callee_names_.count(n)) report("constant array @" + n + " has the name of a called function", s);
        if (!constant_names_.insert(n).second) report("constant array @" + n + " is declared twice", s);
    }

    const Callable &k_;
    std::string what_;
    /// Names variables as the printer does, for messages: made on the first message only (naming
    /// a whole body costs more than verifying it, and valid IR has no message).
    detail::IRTextPrinter &printer() {
        if (!printer_) {
            printer_.emplace();
            for (const VariableRef &p : k_.params) printer_->name(p.get());
            printer_->name_definitions(k_.body);
        }
        return *printer_;
    }
    std::optional<detail::IRTextPrinter> printer_;
    std::vector<std::string> problems_;
    std::vector<std::unordered_set<const Variable *>> scopes_;
    std::unordered_set<const Variable *> defined_;  // defined so far in the walk
    std::unordered_set<const Variable *> all_defs_; // defined anywhere in the body
    int loop_depth_ = 0;
    /// total + count * element_bytes, saturating at UINT64_MAX (an array of 2^61 doubles must not
    /// wrap to 0 bytes and slip under a limit).
    static uint64_t add_bytes(uint64_t total, uint64_t count, uint64_t element_bytes) {
        if (element_bytes != 0 && count > UINT64_MAX / element_bytes) return UINT64_MAX;
        const uint64_t bytes = count * element_bytes;
        return bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
    }

    uint64_t shared_bytes_ = 0;
    std::vector<Stmt> shared_arrays_; ///< the static ones, in order
    uint64_t local_bytes_ = 0;
    bool local_reported_ = false;
    uint64_t constant_bytes_ = 0;
    bool constant_reported_ = false;
    std::unordered_set<std::string> constant_names_;
    std::unordered_set<std::string> callee_names_;
    bool callee_names_computed_ = false;
};

std::vector<std::string> verify_alone(const Callable &c) { return Verifier(c).run(); }

/// The problems of `body`'s callees, each checked once.
void verify_callees(const Stmt &body, std::vector<std::string> &problems) {
    for (const FunctionRef &f : called_functions(body)) {
        std::vector<std::string> more = verify_alone({false, f->name, f->params, f->body, f->ret});
        problems.insert(problems.end(), more.begin(), more.end());
    }
}

/// The summary says what is wrong: the first line of the first problem, without the prefix
/// naming `what` itself (a callee's problem keeps its own).
void throw_problems(const std::string &what, const std::vector<std::string> &problems) {
    if (problems.empty()) return;
    std::string log;
    for (const std::string &p : problems) {
        if (!log.empty()) log += '\n';
        log += p;
    }
    std::string first = problems.front().substr(0, problems.front().find('\n'));
    if (first.rfind(what + ": ", 0) == 0) first.erase(0, what.size() + 2);
    const std::string summary = problems.size() == 1
                                    ? what + " failed verification (1 problem): " + first
                                    : what + " failed verification (" + std::to_string(problems.size()) +
                                          " problems), the first: " + first;
    throw CompileError(summary, log);
}

} // namespace

std::vector<std::string> verify(const Kernel &k) {
    std::vector<std::string> problems;
    verify_callees(k.body, problems);
    std::vector<std::string> own = verify_alone({true, k.name, k.params, k.body, Type()});
    problems.insert(problems.end(), own.begin(), own.end());
    if (std::string p = k.bounds.problem(); !p.empty())
        problems.push_back("kernel @" + k.name + ": launch bounds: " + p);
    return problems;
}

std::vector<std::string> verify(const Function &f) {
    std::vector<std::string> problems;
    verify_callees(f.body, problems);
    std::vector<std::string> own = verify_alone({false, f.name, f.params, f.body, f.ret});
    problems.insert(problems.end(), own.begin(), own.end());
    return problems;
}

void verify_or_throw(const Kernel &k) { throw_problems("kernel '" + k.name + "'", verify(k)); }
void verify_or_throw(const Function &f) { throw_problems("function '@" + f.name + "'", verify(f)); }

bool is_c_identifier(std::string_view s) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
    }
    return true;
}

} // namespace ember::ir
