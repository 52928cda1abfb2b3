/// \file
/// The textual form of kernels, statements and expressions (see [Note] Textual IR).
#include "ember/compiler/IRPrinter.h"

#include "IRPrinterInternal.h"

#include <charconv>
#include <cmath>
#include <unordered_set>

namespace ember::ir {

namespace {

/// Names may only hold characters the parser reads back after '%'.
std::string sanitize(const std::string &name) {
    std::string s = name;
    for (char &c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.';
        if (!ok) c = '_';
    }
    return s;
}

void print_float(std::string &out, const FloatImm *op) {
    char buf[64];
    std::to_chars_result r;
    if (op->type.scalar() == ScalarType::F64)
        r = std::to_chars(buf, buf + sizeof buf, op->value);
    else // f16 and bf16 values are exact in a float, so float's shortest form round-trips them
        r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(op->value));
    std::string_view text(buf, r.ptr - buf);
    out += text;
    // "20" would read back as an integer: keep floats recognisable.
    if (text.find_first_of(".en") == std::string_view::npos) out += ".0";
    out += ':';
    out += to_string(op->type.scalar());
}

void indent_to(std::string &out, int indent) { out.append(static_cast<size_t>(indent) * 2, ' '); }

/// A string literal: `"..."` with \\, \", \n, \t and \xNN for other control bytes.
void print_string(std::string &out, std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    out += '"';
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    out += '"';
}

} // namespace

namespace detail {

void IRTextPrinter::define(const Variable *v) {
    if (!v || names_.count(v)) return;
    std::string base = v->name.empty() ? std::to_string(anonymous_++) : sanitize(v->name);
    std::string candidate = base;
    for (unsigned n = 1; used_.count(candidate); ++n) candidate = base + "." + std::to_string(n);
    used_.insert(candidate);
    names_.emplace(v, "%" + candidate);
}

const std::string &IRTextPrinter::name(const Variable *v) {
    define(v);
    return names_.at(v);
}

void IRTextPrinter::name_kernel(const Kernel &k) {
    for (const VariableRef &p : k.params) define(p.get());
    name_definitions(k.body);
}

void IRTextPrinter::name_definitions(const Stmt &s) {
    if (!s) return;
    switch (s.kind()) {
    case NodeKind::Block:
        for (const Stmt &c : s.as<Block>()->stmts) name_definitions(c);
        return;
    case NodeKind::Let: define(s.as<Let>()->var.get()); return;
    case NodeKind::Declare: define(s.as<Declare>()->var.get()); return;
    case NodeKind::SharedArray: define(s.as<SharedArray>()->var.get()); return;
    case NodeKind::LocalArray: define(s.as<LocalArray>()->var.get()); return;
    case NodeKind::ConstantArray: define(s.as<ConstantArray>()->var.get()); return;
    case NodeKind::If:
        name_definitions(s.as<If>()->then_body);
        name_definitions(s.as<If>()->else_body);
        return;
    case NodeKind::For:
        define(s.as<For>()->var.get());
        name_definitions(s.as<For>()->body);
        return;
    case NodeKind::While: name_definitions(s.as<While>()->body); return;
    default: return;
    }
}

void IRTextPrinter::print_args(std::string &out, const std::vector<Expr> &args) {
    out += '(';
    for (size_t i = 0; i < args.size(); ++i) {
        if (i) out += ", ";
        print_expr(out, args[i]);
    }
    out += ')';
}

void IRTextPrinter::print_element(std::string &out, const Expr &ptr, const Expr &index) {
    print_expr(out, ptr);
    out += '[';
    print_expr(out, index);
    out += ']';
}

void IRTextPrinter::print_expr(std::string &out, const Expr &e) {
    if (!e) {
        out += "<null>";
        return;
    }
    switch (e.kind()) {
    case NodeKind::IntImm: {
        const auto *op = e.as<IntImm>();
        out += op->type.is_unsigned_int() ? std::to_string(op->bits()) : std::to_string(op->value);
        out += ':';
        out += to_string(op->type.scalar());
        return;
    }
    case NodeKind::FloatImm: print_float(out, e.as<FloatImm>()); return;
    case NodeKind::BoolImm: out += e.as<BoolImm>()->value ? "true" : "false"; return;
    case NodeKind::VarRef: out += name(e.as<VarRef>()->var.get()); return;
    case NodeKind::SpecialReg: {
        const auto *op = e.as<SpecialReg>();
        out += to_string(op->reg);
        out += '.';
        out += "xyz"[op->dim];
        return;
    }
    case NodeKind::Unary: {
        const auto *op = e.as<Unary>();
        out += to_string(op->op);
        print_expr(out, op->a);
        return;
    }
    case NodeKind::Binary: {
        const auto *op = e.as<Binary>();
        if (op->op == BinaryOp::Min || op->op == BinaryOp::Max) {
            out += to_string(op->op);
            out += '(';
            print_expr(out, op->a);
            out += ", ";
            print_expr(out, op->b);
            out += ')';
            return;
        }
        std::string_view sym = to_string(op->op);
        const bool logical = op->type.lane_type().is_bool(); // bool and boolxN
        if (logical && op->op == BinaryOp::And) sym = "&&";
        if (logical && op->op == BinaryOp::Or) sym = "||";
        out += '(';
        print_expr(out, op->a);
        out += ' ';
        out += sym;
        out += ' ';
        print_expr(out, op->b);
        out += ')';
        return;
    }
    case NodeKind::Compare: {
        const auto *op = e.as<Compare>();
        out += '(';
        print_expr(out, op->a);
        out += ' ';
        out += to_string(op->op);
        out += ' ';
        print_expr(out, op->b);
        out += ')';
        return;
    }
    case NodeKind::Cast: {
        const auto *op = e.as<Cast>();
        out += "cast<";
        out += op->type.to_string();
        out += ">(";
        print_expr(out, op->a);
        out += ')';
        return;
    }
    case NodeKind::Select: {
        const auto *op = e.as<Select>();
        out += "select(";
        print_expr(out, op->cond);
        out += ", ";
        print_expr(out, op->a);
        out += ", ";
        print_expr(out, op->b);
        out += ')';
        return;
    }
    case NodeKind::Load: {
        const auto *op = e.as<Load>();
        if (op->lanes() > 1) {
            out += "load<";
            out += std::to_string(op->lanes());
            out += ">(";
        }
        print_element(out, op->ptr, op->index);
        if (op->lanes() > 1) out += ')';
        return;
    }
    case NodeKind::MakeVector: {
        const auto *op = e.as<MakeVector>();
        out += op->type.to_string();
        print_args(out, op->args);
        return;
    }
    case NodeKind::Extract: {
        const auto *op = e.as<Extract>();
        out += "extract<";
        out += std::to_string(op->lane);
        out += ">(";
        print_expr(out, op->vector);
        out += ')';
        return;
    }
    case NodeKind::Reduce: {
        const auto *op = e.as<Reduce>();
        out += "reduce_";
        out += to_string(op->op);
        out += '(';
        print_expr(out, op->value);
        out += ')';
        return;
    }
    case NodeKind::Atomic: {
        const auto *op = e.as<Atomic>();
        out += "atomic_";
        out += to_string(op->op);
        if (op->scope != FenceScope::Device) {
            out += '.';
            out += to_string(op->scope);
        }
        out += '(';
        print_element(out, op->ptr, op->index);
        out += ", ";
        if (op->compare) {
            print_expr(out, op->compare);
            out += ", ";
        }
        print_expr(out, op->value);
        out += ')';
        return;
    }
    case NodeKind::Warp: {
        const auto *op = e.as<Warp>();
        out += to_string(op->op);
        out += '(';
        print_expr(out, op->value);
        if (op->lane) {
            out += ", ";
            print_expr(out, op->lane);
        }
        out += ')';
        return;
    }
    case NodeKind::Mma: {
        const auto *op = e.as<Mma>();
        out += "mma.";
        out += op->shape.to_string();
        out += '.';
        out += to_string(op->input);
        out += '(';
        print_expr(out, op->a);
        out += ", ";
        print_expr(out, op->b);
        out += ", ";
        print_expr(out, op->c);
        out += ')';
        return;
    }
    case NodeKind::MatrixLoad: {
        const auto *op = e.as<MatrixLoad>();
        out += "ldmatrix.x";
        out += std::to_string(op->count);
        if (op->trans) out += ".trans";
        out += '(';
        print_element(out, op->ptr, op->index);
        out += ')';
        return;
    }
    case NodeKind::Call: {
        const auto *op = e.as<Call>();
        out += to_string(op->op);
        print_args(out, op->args);
        return;
    }
    case NodeKind::Invoke: {
        const auto *op = e.as<Invoke>();
        out += function_name(op->callee.get());
        print_args(out, op->args);
        return;
    }
    default: EMBER_UNREACHABLE("statement kind in an Expr");
    }
}

void IRTextPrinter::print_body(std::string &out, const Stmt &body, int indent) {
    print_stmt(out, body, indent + 1);
}

void IRTextPrinter::print_stmt(std::string &out, const Stmt &s, int indent) {
    if (!s) return;
    if (const auto *op = s.as<Block>()) {
        for (const Stmt &c : op->stmts) print_stmt(out, c, indent);
        return;
    }
    indent_to(out, indent);
    switch (s.kind()) {
    case NodeKind::Let:
    case NodeKind::Declare: {
        bool is_let = s.kind() == NodeKind::Let;
        const Variable *var = is_let ? s.as<Let>()->var.get() : s.as<Declare>()->var.get();
        out += is_let ? "let " : "var ";
        out += name(var);
        out += ": ";
        out += var->type.to_string();
        out += " = ";
        print_expr(out, is_let ? s.as<Let>()->value : s.as<Declare>()->init);
        break;
    }
    case NodeKind::SharedArray: {
        const auto *op = s.as<SharedArray>();
        out += "shared ";
        out += name(op->var.get());
        out += ": ";
        out += to_string(op->var->type.element());
        out += '[';
        if (op->count) out += std::to_string(op->count);
        out += ']';
        break;
    }
    case NodeKind::LocalArray: {
        const auto *op = s.as<LocalArray>();
        out += "local ";
        out += name(op->var.get());
        out += ": ";
        out += to_string(op->var->type.element());
        out += '[';
        out += std::to_string(op->count);
        out += ']';
        break;
    }
    case NodeKind::ConstantArray: {
        const auto *op = s.as<ConstantArray>();
        out += "constant ";
        out += name(op->var.get());
        out += ": ";
        out += to_string(op->var->type.element());
        out += '[';
        out += std::to_string(op->count);
        out += "] @";
        out += op->name;
        if (!op->init.empty()) {
            out += " = [";
            for (size_t i = 0; i < op->init.size(); ++i) {
                if (i) out += ", ";
                print_expr(out, op->init[i]);
            }
            out += ']';
        }
        break;
    }
    case NodeKind::Fence:
        out += "fence ";
        out += to_string(s.as<Fence>()->scope);
        break;
    case NodeKind::AsyncCopy: {
        const auto *op = s.as<AsyncCopy>();
        out += "async_copy.";
        out += std::to_string(op->count);
        out += '(';
        print_element(out, op->dst, op->dst_index);
        out += ", ";
        print_element(out, op->src, op->src_index);
        if (op->valid) {
            out += ", ";
            print_expr(out, op->valid);
        }
        out += ')';
        break;
    }
    case NodeKind::Wgmma: {
        const auto *op = s.as<Wgmma>();
        out += "wgmma.m64n";
        out += std::to_string(op->n);
        out += "k16.";
        out += to_string(op->input);
        out += '(';
        print_element(out, op->a, op->a_index);
        out += ", ";
        print_element(out, op->b, op->b_index);
        if (op->b_mn_stride) {
            out += " mn ";
            out += std::to_string(op->b_mn_stride);
        }
        out += ';';
        for (const VariableRef &v : op->acc) {
            out += ' ';
            out += name(v.get());
            if (&v != &op->acc.back()) out += ',';
        }
        out += ')';
        break;
    }
    case NodeKind::TensorSync: {
        const auto *op = s.as<TensorSync>();
        auto accs = [&] {
            for (const VariableRef &v : op->acc) {
                if (&v != &op->acc.front()) out += ", ";
                out += name(v.get());
            }
        };
        switch (op->sync) {
        case TensorSyncKind::WgmmaFence:
            out += "wgmma.fence(";
            accs();
            out += ')';
            break;
        case TensorSyncKind::WgmmaCommit: out += "wgmma.commit"; break;
        case TensorSyncKind::WgmmaWait:
            out += "wgmma.wait(";
            out += std::to_string(op->pending);
            if (!op->acc.empty()) out += "; ";
            accs();
            out += ')';
            break;
        case TensorSyncKind::ProxyFence: out += "fence.proxy.async"; break;
        }
        break;
    }
    case NodeKind::MBarrier: {
        const auto *op = s.as<MBarrier>();
        out += "mbarrier.";
        out += to_string(op->op);
        out += '(';
        print_element(out, op->ptr, op->index);
        if (op->value) {
            out += ", ";
            print_expr(out, op->value);
        }
        out += ')';
        break;
    }
    case NodeKind::TmaLoad: {
        const auto *op = s.as<TmaLoad>();
        out += "tma_load(";
        print_element(out, op->dst, op->dst_index);
        out += ", ";
        print_expr(out, op->map);
        out += ", ";
        print_expr(out, op->x);
        out += ", ";
        print_expr(out, op->y);
        out += ", ";
        print_element(out, op->bar, op->bar_index);
        if (op->multicast) {
            out += ", multicast ";
            print_expr(out, op->multicast);
        }
        out += ')';
        break;
    }
    case NodeKind::AsyncGroup: {
        const auto *op = s.as<AsyncGroup>();
        if (op->is_commit()) {
            out += "async_commit";
        } else {
            out += "async_wait(";
            out += std::to_string(op->wait);
            out += ')';
        }
        break;
    }
    case NodeKind::Assign: {
        const auto *op = s.as<Assign>();
        out += name(op->var.get());
        out += " = ";
        print_expr(out, op->value);
        break;
    }
    case NodeKind::Store: {
        const auto *op = s.as<Store>();
        print_element(out, op->ptr, op->index);
        out += " = ";
        print_expr(out, op->value);
        break;
    }
    case NodeKind::If: {
        const auto *op = s.as<If>();
        out += "if ";
        print_expr(out, op->cond);
        out += " {\n";
        print_body(out, op->then_body, indent);
        if (op->else_body) {
            indent_to(out, indent);
            out += "} else {\n";
            print_body(out, op->else_body, indent);
        }
        indent_to(out, indent);
        out += '}';
        break;
    }
    case NodeKind::For: {
        const auto *op = s.as<For>();
        out += "for ";
        out += name(op->var.get());
        out += ": ";
        out += op->var->type.to_string();
        out += " = ";
        print_expr(out, op->begin);
        out += " to ";
        print_expr(out, op->end);
        out += " step ";
        print_expr(out, op->step);
        if (op->unroll.kind != Unroll::Kind::Default) {
            out += ' ';
            out += op->unroll.to_string();
        }
        out += " {\n";
        print_body(out, op->body, indent);
        indent_to(out, indent);
        out += '}';
        break;
    }
    case NodeKind::While: {
        const auto *op = s.as<While>();
        out += "while ";
        print_expr(out, op->cond);
        out += " {\n";
        print_body(out, op->body, indent);
        indent_to(out, indent);
        out += '}';
        break;
    }
    case NodeKind::Break: out += "break"; break;
    case NodeKind::Continue: out += "continue"; break;
    case NodeKind::Barrier:
        out += s.as<Barrier>()->scope == BarrierScope::Cluster ? "cluster_barrier" : "barrier";
        break;
    case NodeKind::Return:
        out += "return";
        if (const Expr &v = s.as<Return>()->value) {
            out += ' ';
            print_expr(out, v);
        }
        break;
    case NodeKind::Evaluate: print_expr(out, s.as<Evaluate>()->value); break;
    case NodeKind::Print: {
        const auto *op = s.as<Print>();
        out += "print(";
        bool first = true;
        for (const PrintItem &i : op->items) {
            if (!first) out += ", ";
            first = false;
            if (i.is_text()) print_string(out, i.text);
            else print_expr(out, i.value);
        }
        // Mojo's defaults (sep=" ", end="\n") are left out.
        if (op->sep != " ") {
            out += first ? "sep=" : ", sep=";
            print_string(out, op->sep);
            first = false;
        }
        if (op->end != "\n") {
            out += first ? "end=" : ", end=";
            print_string(out, op->end);
        }
        out += ')';
        break;
    }
    default: EMBER_UNREACHABLE("expression kind in a Stmt");
    }
    out += '\n';
}

void IRTextPrinter::print_signature(std::string &out, const std::vector<VariableRef> &params) {
    out += '(';
    for (size_t i = 0; i < params.size(); ++i) {
        if (i) out += ", ";
        if (!params[i]) {
            out += "<null>";
            continue;
        }
        out += name(params[i].get());
        out += ": ";
        out += params[i]->type.to_string();
        if (params[i]->noalias) out += " noalias";
    }
    out += ')';
}

void IRTextPrinter::print_kernel(std::string &out, const Kernel &k) {
    name_kernel(k);
    out += "kernel @";
    out += k.name;
    print_signature(out, k.params);
    out += k.bounds.to_string();
    if (k.contract != FpContract::Off) {
        out += " fp_contract(";
        out += to_string(k.contract);
        out += ')';
    }
    out += " {\n";
    print_stmt(out, k.body, 1);
    out += "}\n";
}

void IRTextPrinter::print_function(std::string &out, const Function &f) {
    for (const VariableRef &p : f.params) define(p.get());
    name_definitions(f.body);
    out += "func ";
    out += function_name(&f);
    print_signature(out, f.params);
    if (!f.ret.is_void()) {
        out += " -> ";
        out += f.ret.to_string();
    }
    out += " {\n";
    print_stmt(out, f.body, 1);
    out += "}\n";
}

const std::string &IRTextPrinter::function_name(const Function *f) {
    auto it = functions_->names.find(f);
    if (it != functions_->names.end()) return it->second;
    std::string base = sanitize(f->name.empty() ? std::string("f") : f->name);
    std::string candidate = base;
    for (unsigned n = 1; functions_->used.count(candidate); ++n) candidate = base + "." + std::to_string(n);
    functions_->used.insert(candidate);
    return functions_->names.emplace(f, "@" + candidate).first->second;
}

std::string IRTextPrinter::stmt_line(const Stmt &s) {
    if (const auto *block = s.as<Block>()) {
        if (block->stmts.empty()) return "";
        return stmt_line(block->stmts.front());
    }
    std::string text;
    print_stmt(text, s, 0);
    return text.substr(0, text.find('\n'));
}

} // namespace detail

namespace {
/// Prints functions (each once, callees first) and kernels that share one table of function
/// names, each with its own variable names.
class UnitPrinter {
public:
    void function(const FunctionRef &f) {
        if (!printed_.insert(f.get()).second) return;
        for (const FunctionRef &callee : called_functions(f->body)) function(callee);
        separate();
        detail::IRTextPrinter(&names_).print_function(out_, *f);
    }
    void kernel(const Kernel &k) {
        for (const FunctionRef &f : called_functions(k.body)) function(f);
        separate();
        detail::IRTextPrinter(&names_).print_kernel(out_, k);
    }
    std::string take() { return std::move(out_); }

private:
    void separate() {
        if (!out_.empty()) out_ += '\n';
    }
    std::string out_;
    detail::FunctionNames names_;
    std::unordered_set<const Function *> printed_;
};
} // namespace

std::string print(const Kernel &k) {
    UnitPrinter p;
    p.kernel(k);
    return p.take();
}

std::string print(const Module &m) {
    UnitPrinter p;
    for (const FunctionRef &f : m.functions) p.function(f);
    for (const Kernel &k : m.kernels) p.kernel(k);
    return p.take();
}

std::string print(const Function &f) {
    UnitPrinter p;
    p.function(FunctionRef(&f));
    return p.take();
}

std::string print(const Expr &e) { return detail::IRTextPrinter().expr(e); }

std::string print(const Stmt &s) {
    detail::IRTextPrinter p;
    p.name_definitions(s);
    std::string out;
    p.print_stmt(out, s, 0);
    return out;
}

} // namespace ember::ir
