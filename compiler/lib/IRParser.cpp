/// \file
/// The parser of the textual IR (see [Note] Textual IR in IRPrinter.h): type-checks as it goes,
/// reports the first problem with its line and column, and verifies every kernel it builds.
#include "ember/compiler/IRPrinter.h"

#include "ember/compiler/Verifier.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace ember::ir {

namespace {

enum class Tok : uint8_t {
    Eof,
    Ident,    ///< keywords, type names, special registers, inf, nan
    VarName,  ///< %name (text holds the name without '%')
    KernName, ///< @name (text holds the name without '@')
    Number,   ///< digits with optional fraction and exponent, no sign
    Punct,    ///< operators and punctuation
    String,   ///< "..." (text holds the quotes and the escapes as written)
};

struct Token {
    Tok kind = Tok::Eof;
    std::string_view text;
    size_t offset = 0;
    unsigned line = 1, col = 1;
};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_name_char(char c) { return is_ident_char(c) || c == '.'; }

class Parser {
public:
    Parser(std::string_view text, std::string_view filename) : text_(text), filename_(filename) {
        lex();
    }

    Module parse_module() {
        Module m;
        std::unordered_set<std::string> names;
        if (at_eof()) error(peek(), "expected 'kernel'");
        while (!at_eof()) {
            const Token &start = peek();
            if (is("func")) {
                FunctionRef f = parse_function();
                try {
                    verify_or_throw(*f);
                } catch (const CompileError &e) {
                    throw CompileError(location(start) + e.summary(), e.log());
                }
                functions_.emplace(f->name, f);
                m.functions.push_back(f);
                continue;
            }
            Kernel k = parse_kernel();
            if (!names.insert(k.name).second) error(start, "redefinition of kernel @" + k.name);
            try {
                verify_or_throw(k);
            } catch (const CompileError &e) {
                throw CompileError(location(start) + e.summary(), e.log());
            }
            m.kernels.push_back(std::move(k));
        }
        return m;
    }

private:
    // -----------------------------------------------------------------------------------------
    // Diagnostics.

    std::string location(const Token &t) const {
        return std::string(filename_) + ":" + std::to_string(t.line) + ":" + std::to_string(t.col) +
               ": error: ";
    }

    [[noreturn]] void error(const Token &t, const std::string &msg) const {
        throw CompileError(location(t) + msg);
    }

    static std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

    // -----------------------------------------------------------------------------------------
    // Nesting. The parser recurses once per nested expression and per nested block; `depth_`
    // counts those levels as the IR will (an expression one, a block and the statement holding
    // it two), so that input within max_nesting_depth gives IR within it and deeper input stops
    // here, at its place, before the stack or IR::make do.

    [[noreturn]] void too_deep(const Token &t) const {
        error(t, "nested deeper than " + std::to_string(max_nesting_depth) +
                     " levels, the limit of ember's IR (expressions, and blocks with the "
                     "statement holding them, count one level each)");
    }

    /// RAII: `levels` more levels of nesting, entered at `t`.
    class Nesting {
    public:
        Nesting(Parser &p, const Token &t, unsigned levels) : p_(p), levels_(levels) {
            if (p_.depth_ + levels_ > max_nesting_depth) p_.too_deep(t);
            p_.depth_ += levels_;
        }
        ~Nesting() { p_.depth_ -= levels_; }
        Nesting(const Nesting &) = delete;
        Nesting &operator=(const Nesting &) = delete;

    private:
        Parser &p_;
        unsigned levels_;
    };

    static std::string describe(const Token &t) {
        switch (t.kind) {
        case Tok::Eof: return "end of input";
        case Tok::VarName: return "%" + std::string(t.text);
        case Tok::KernName: return "@" + std::string(t.text);
        default: return quote(t.text);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Lexer.

    void lex() {
        size_t i = 0;
        unsigned line = 1;
        size_t line_start = 0;
        const size_t n = text_.size();
        auto make = [&](Tok kind, size_t begin, size_t end, size_t skip = 0) {
            Token t;
            t.kind = kind;
            t.text = text_.substr(begin + skip, end - begin - skip);
            t.offset = begin;
            t.line = line;
            t.col = static_cast<unsigned>(begin - line_start + 1);
            tokens_.push_back(t);
        };
        while (i < n) {
            char c = text_[i];
            if (c == '\n') {
                ++i;
                ++line;
                line_start = i;
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\r') {
                ++i;
                continue;
            }
            if (c == '/' && i + 1 < n && text_[i + 1] == '/') {
                while (i < n && text_[i] != '\n') ++i;
                continue;
            }
            size_t begin = i;
            if (is_ident_start(c)) {
                while (i < n && is_ident_char(text_[i])) ++i;
                make(Tok::Ident, begin, i);
                continue;
            }
            if (is_digit(c)) {
                while (i < n && is_digit(text_[i])) ++i;
                if (i < n && text_[i] == '.') {
                    ++i;
                    while (i < n && is_digit(text_[i])) ++i;
                }
                if (i < n && (text_[i] == 'e' || text_[i] == 'E')) {
                    size_t j = i + 1;
                    if (j < n && (text_[j] == '+' || text_[j] == '-')) ++j;
                    if (j < n && is_digit(text_[j])) {
                        i = j;
                        while (i < n && is_digit(text_[i])) ++i;
                    }
                }
                make(Tok::Number, begin, i);
                continue;
            }
            if (c == '"') {
                ++i;
                while (i < n && text_[i] != '"' && text_[i] != '\n') i += text_[i] == '\\' ? 2 : 1;
                if (i >= n || text_[i] != '"') {
                    Token bad;
                    bad.line = line;
                    bad.col = static_cast<unsigned>(begin - line_start + 1);
                    error(bad, "unterminated string literal");
                }
                ++i;
                make(Tok::String, begin, i);
                continue;
            }
            if ((c == '%' || c == '@') && i + 1 < n && is_name_char(text_[i + 1])) {
                ++i;
                while (i < n && is_name_char(text_[i])) ++i;
                make(c == '%' ? Tok::VarName : Tok::KernName, begin, i, /*skip=*/1);
                continue;
            }
            static constexpr std::string_view two_char[] = {"&&", "||", "<<", ">>", "<=",
                                                            ">=", "==", "!=", "->"};
            bool matched = false;
            for (std::string_view op : two_char) {
                if (text_.substr(i, 2) == op) {
                    i += 2;
                    make(Tok::Punct, begin, i);
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
            if (std::string_view("(){}[]<>=+-*/%&|^!~,:.;").find(c) != std::string_view::npos) {
                ++i;
                make(Tok::Punct, begin, i);
                continue;
            }
            Token bad;
            bad.line = line;
            bad.col = static_cast<unsigned>(begin - line_start + 1);
            error(bad, "unexpected character " + quote(text_.substr(i, 1)));
        }
        Token eof;
        eof.offset = n;
        eof.line = line;
        eof.col = static_cast<unsigned>(n - line_start + 1);
        tokens_.push_back(eof);
    }

    // -----------------------------------------------------------------------------------------
    // Token helpers.

    const Token &peek(size_t ahead = 0) const {
        return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
    }
    bool at_eof() const { return peek().kind == Tok::Eof; }
    const Token &take() {
        const Token &t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return t;
    }
    bool is(std::string_view punct_or_keyword, size_t ahead = 0) const {
        const Token &t = peek(ahead);
        return (t.kind == Tok::Punct || t.kind == Tok::Ident) && t.text == punct_or_keyword;
    }
    bool accept(std::string_view s) {
        if (!is(s)) return false;
        take();
        return true;
    }
    const Token &expect(std::string_view s) {
        if (!is(s)) error(peek(), "expected " + quote(s) + ", found " + describe(peek()));
        return take();
    }
    const Token &expect_kind(Tok kind, std::string_view what) {
        if (peek().kind != kind)
            error(peek(), "expected " + std::string(what) + ", found " + describe(peek()));
        return take();
    }

    // -----------------------------------------------------------------------------------------
    // Scopes.

    VariableRef lookup(std::string_view name) const {
        for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
            auto found = it->find(std::string(name));
            if (found != it->end()) return found->second;
        }
        return VariableRef();
    }

    void check_fresh(const Token &t) const {
        if (lookup(t.text)) error(t, "redefinition of %" + std::string(t.text));
    }

    void bind(const VariableRef &v) { scopes_.back().emplace(v->name, v); }

    // -----------------------------------------------------------------------------------------
    // Types.

    Type parse_type() {
        const Token &t = peek();
        if (t.kind != Tok::Ident) error(t, "expected type, found " + describe(t));
        take();
        if (t.text != "ptr") {
            std::optional<Type> s = Type::parse(t.text); // a scalar or a vector
            if (!s) error(t, "unknown type " + quote(t.text));
            return *s;
        }
        expect("<");
        const Token &space_tok = expect_kind(Tok::Ident, "address space");
        auto space = parse_address_space(space_tok.text);
        if (!space) error(space_tok, "unknown address space " + quote(space_tok.text));
        bool readonly = accept("const");
        const Token &elem_tok = expect_kind(Tok::Ident, "element type");
        auto elem = parse_scalar_type(elem_tok.text);
        if (!elem) error(elem_tok, "unknown type " + quote(elem_tok.text));
        if (*elem == ScalarType::Void) error(elem_tok, "pointer to void");
        expect(">");
        return Type::pointer(*elem, *space, readonly);
    }

    // -----------------------------------------------------------------------------------------
    // Expressions.

    Expr parse_expr() { return parse_unary(); }

    Expr parse_unary() {
        const Token &t = peek();
        Nesting nest(*this, t, 1);
        if (is("-")) {
            const Token &next = peek(1);
            bool adjacent = next.offset == t.offset + 1;
            if (adjacent &&
                (next.kind == Tok::Number ||
                 (next.kind == Tok::Ident && (next.text == "inf" || next.text == "nan")))) {
                take();
                return parse_literal(t, /*negative=*/true);
            }
            return parse_unary_op(UnaryOp::Neg, "unary '-'", "a number");
        }
        if (is("!")) return parse_unary_op(UnaryOp::Not, "'!'", "bool");
        if (is("~")) return parse_unary_op(UnaryOp::BitNot, "'~'", "an integer");
        return parse_postfix();
    }

    /// The operator at the current token, applied to the unary expression after it; `what` and
    /// `need` word the error (operand_requirement decides what is accepted).
    Expr parse_unary_op(UnaryOp op, const char *what, const char *need) {
        const Token &t = take();
        Expr a = parse_unary();
        if (!operand_requirement(op, a.type()).empty())
            error(t, std::string("operand of ") + what + " must be " + need + ", found " + a.type().to_string());
        return Unary::make(op, a);
    }

    Expr parse_postfix() {
        Expr e = parse_primary();
        while (is("[")) {
            const Token &bracket = take();
            if (!e.type().is_pointer())
                error(bracket, "cannot index a value of type " + e.type().to_string());
            const Token &index_tok = peek();
            Expr index = parse_expr();
            if (!index.type().is_int())
                error(index_tok, "index must be an integer, found " + index.type().to_string());
            expect("]");
            // The element is one level deeper than the pointer expression before it.
            if (depth_ + std::max(e.depth(), index.depth()) > max_nesting_depth) too_deep(bracket);
            e = Load::make(e, index);
        }
        return e;
    }

    /// A number, `inf` or `nan` (already past the '-' when `negative`), then `:T`.
    Expr parse_literal(const Token &start, bool negative) {
        const Token &lit = take();
        bool float_form =
            lit.kind == Tok::Ident || lit.text.find_first_of(".eE") != std::string_view::npos;
        if (!is(":"))
            error(peek(), "expected ':' and a type after literal " +
                              std::string(negative ? "-" : "") + std::string(lit.text));
        take();
        const Token &type_tok = peek();
        Type t = parse_type();
        if (t.is_float()) return make_float(lit, t, negative);
        if (!t.is_int()) error(type_tok, "a numeric literal cannot have type " + t.to_string());
        if (float_form)
            error(type_tok, "floating-point literal cannot have integer type " + t.to_string());
        uint64_t magnitude = 0;
        auto [ptr, ec] =
            std::from_chars(lit.text.data(), lit.text.data() + lit.text.size(), magnitude);
        bool overflow = ec != std::errc() || ptr != lit.text.data() + lit.text.size();
        // The range of t: [-2^(bits-1), 2^(bits-1) - 1] or [0, 2^bits - 1].
        unsigned bits = t.bits();
        uint64_t max_positive = t.is_signed_int() ? (uint64_t(1) << (bits - 1)) - 1
                                : bits == 64      ? std::numeric_limits<uint64_t>::max()
                                                  : (uint64_t(1) << bits) - 1;
        // The printer shows Neg(1:u8) as `-1:u8` and Neg(0:i32) as `-0:i32`; no constant prints
        // that way, so these read back as negations.
        uint64_t max_negative = t.is_signed_int() ? uint64_t(1) << (bits - 1) : max_positive;
        if (overflow || magnitude > (negative ? max_negative : max_positive))
            error(start, "integer literal " + std::string(negative ? "-" : "") +
                             std::string(lit.text) + " is out of range for " + t.to_string());
        if (negative && (t.is_unsigned_int() || magnitude == 0))
            return Unary::make(UnaryOp::Neg, IntImm::make(t, static_cast<int64_t>(magnitude)));
        uint64_t bits_value = negative ? uint64_t(0) - magnitude : magnitude;
        return IntImm::make(t, static_cast<int64_t>(bits_value));
    }

    Expr make_float(const Token &lit, Type t, bool negative) {
        double value;
        if (lit.text == "inf") {
            value = std::numeric_limits<double>::infinity();
        } else if (lit.text == "nan") {
            value = std::numeric_limits<double>::quiet_NaN();
        } else if (t.scalar() == ScalarType::F64) {
            auto [ptr, ec] =
                std::from_chars(lit.text.data(), lit.text.data() + lit.text.size(), value);
            if (ec == std::errc::invalid_argument || ptr != lit.text.data() + lit.text.size())
                error(lit, "invalid floating-point literal " + quote(lit.text));
            if (ec == std::errc::result_out_of_range)
                error(lit,
                      "floating-point literal " + quote(lit.text) + " is out of range for f64");
        } else {
            // Read as float directly: a double read then rounded to float could round twice.
            // f16/bf16 are then rounded from that float (exact for printed values).
            float f;
            auto [ptr, ec] = std::from_chars(lit.text.data(), lit.text.data() + lit.text.size(), f);
            if (ec == std::errc::invalid_argument || ptr != lit.text.data() + lit.text.size())
                error(lit, "invalid floating-point literal " + quote(lit.text));
            if (ec == std::errc::result_out_of_range)
                error(lit, "floating-point literal " + quote(lit.text) + " is out of range for " +
                               t.to_string());
            value = f;
        }
        if (negative) value = -value;
        Expr e = FloatImm::make(t, value);
        // f16 and bf16 round from the float: a finite literal beyond their range, as one beyond
        // f32's, is an error rather than a silent infinity.
        if (std::isfinite(value) && !std::isfinite(e.as<FloatImm>()->value))
            error(lit, "floating-point literal " + quote(lit.text) + " is out of range for " + t.to_string());
        return e;
    }

    Expr parse_primary() {
        const Token &t = peek();
        switch (t.kind) {
        case Tok::Number: return parse_literal(t, /*negative=*/false);
        case Tok::VarName: {
            take();
            VariableRef v = lookup(t.text);
            if (!v) error(t, "use of undefined variable %" + std::string(t.text));
            return VarRef::make(v);
        }
        case Tok::KernName: return parse_invoke();
        case Tok::Ident: break;
        case Tok::Punct:
            if (t.text == "(") return parse_parenthesised();
            error(t, "expected expression, found " + describe(t));
        default: error(t, "expected expression, found " + describe(t));
        }
        if (t.text == "inf" || t.text == "nan") return parse_literal(t, /*negative=*/false);
        if (t.text == "true" || t.text == "false") {
            take();
            return BoolImm::make(t.text == "true");
        }
        if (t.text == "min" || t.text == "max") return parse_min_max();
        if (t.text == "cast") return parse_cast();
        if (t.text == "select") return parse_select();
        if (t.text == "load") return parse_vector_load();
        if (t.text == "extract") return parse_extract();
        if (t.text.substr(0, 7) == "reduce_") {
            if (std::optional<ReduceOp> op = parse_reduce_op(t.text.substr(7))) return parse_reduce(*op);
        }
        if (std::optional<Type> vt = Type::parse(t.text); vt && vt->is_vector() && is("(", 1))
            return parse_make_vector(*vt);
        if (std::optional<Intrinsic> f = parse_intrinsic(t.text)) return parse_call(*f);
        if (std::optional<WarpOp> w = parse_warp_op(t.text)) return parse_warp(*w);
        if (t.text == "mma" && is(".", 1)) return parse_mma();
        if (t.text == "ldmatrix" && is(".", 1)) return parse_matrix_load();
        if (t.text.substr(0, 7) == "atomic_") {
            if (std::optional<AtomicOp> op = parse_atomic_op(t.text.substr(7))) return parse_atomic(*op);
        }
        static constexpr std::pair<std::string_view, SpecialRegKind> regs[] = {
            {"thread_idx", SpecialRegKind::ThreadIdx},
            {"block_idx", SpecialRegKind::BlockIdx},
            {"block_dim", SpecialRegKind::BlockDim},
            {"grid_dim", SpecialRegKind::GridDim},
            {"cluster_dim", SpecialRegKind::ClusterDim}};
        for (auto [name, reg] : regs) {
            if (t.text != name) continue;
            take();
            expect(".");
            const Token &dim_tok = peek();
            static constexpr std::string_view dims[] = {"x", "y", "z"};
            for (unsigned d = 0; d < 3; ++d) {
                if (dim_tok.kind == Tok::Ident && dim_tok.text == dims[d]) {
                    take();
                    return SpecialReg::make(reg, d);
                }
            }
            error(dim_tok, "expected 'x', 'y' or 'z', found " + describe(dim_tok));
        }
        error(t, "expected expression, found " + describe(t));
    }

    struct OpInfo {
        std::string_view text;
        bool is_compare;
        BinaryOp bin;
        CompareOp cmp;
    };

    static const OpInfo *find_op(const Token &t) {
        static constexpr OpInfo ops[] = {
            {"+", false, BinaryOp::Add, {}},  {"-", false, BinaryOp::Sub, {}},
            {"*", false, BinaryOp::Mul, {}},  {"/", false, BinaryOp::Div, {}},
            {"%", false, BinaryOp::Mod, {}},  {"&", false, BinaryOp::And, {}},
            {"|", false, BinaryOp::Or, {}},   {"^", false, BinaryOp::Xor, {}},
            {"&&", false, BinaryOp::And, {}}, {"||", false, BinaryOp::Or, {}},
            {"<<", false, BinaryOp::Shl, {}}, {">>", false, BinaryOp::Shr, {}},
            {"==", true, {}, CompareOp::EQ},  {"!=", true, {}, CompareOp::NE},
            {"<", true, {}, CompareOp::LT},   {"<=", true, {}, CompareOp::LE},
            {">", true, {}, CompareOp::GT},   {">=", true, {}, CompareOp::GE},
        };
        if (t.kind != Tok::Punct) return nullptr;
        for (const OpInfo &op : ops)
            if (op.text == t.text) return &op;
        return nullptr;
    }

    /// Checks the operand types of binary operator `op` (spelled `text`) and builds the node.
    Expr make_binary(const Token &at, std::string_view text, BinaryOp op, Expr a, Expr b) {
        Type t = a.type();
        if (t != b.type())
            error(at, "operands of " + quote(text) + " have different types " + t.to_string() +
                          " and " + b.type().to_string());
        // The spelling picks the meaning: `&&`/`||` for bool, `&`/`|` for integers (lane by lane
        // for vectors).
        std::string_view need = operand_requirement(op, t);
        const Type l = t.lane_type();
        if ((op == BinaryOp::And || op == BinaryOp::Or) && need.empty())
            need = text.size() == 2 ? (l.is_bool() ? "" : "bool") : (l.is_int() ? "" : "integers");
        if (!need.empty())
            error(at, "operands of " + quote(text) + " must be " + std::string(need) + ", found " +
                          t.to_string());
        return Binary::make(op, a, b);
    }

    Expr parse_parenthesised() {
        expect("(");
        Expr a = parse_expr();
        if (accept(")")) return a; // plain grouping
        const Token &op_tok = peek();
        const OpInfo *op = find_op(op_tok);
        if (!op) error(op_tok, "expected operator or ')', found " + describe(op_tok));
        take();
        Expr b = parse_expr();
        expect(")");
        if (!op->is_compare) return make_binary(op_tok, op->text, op->bin, a, b);
        Type t = a.type();
        if (t != b.type())
            error(op_tok, "operands of " + quote(op->text) + " have different types " +
                              t.to_string() + " and " + b.type().to_string());
        if (t.is_pointer()) error(op_tok, "cannot compare pointers with " + quote(op->text));
        if (std::string_view need = operand_requirement(op->cmp, t); !need.empty())
            error(op_tok, "operands of " + quote(op->text) + " must be " + std::string(need) +
                              ", found " + t.to_string());
        return Compare::make(op->cmp, a, b);
    }

    Expr parse_min_max() {
        const Token &t = take();
        expect("(");
        Expr a = parse_expr();
        expect(",");
        Expr b = parse_expr();
        expect(")");
        return make_binary(t, t.text, t.text == "min" ? BinaryOp::Min : BinaryOp::Max, a, b);
    }

    Expr parse_cast() {
        take();
        expect("<");
        const Token &type_tok = peek();
        Type to = parse_type();
        if (to.is_pointer() || to.is_void()) error(type_tok, "cannot cast to " + to.to_string());
        expect(">");
        expect("(");
        const Token &operand_tok = peek();
        Expr a = parse_expr();
        if (a.type().is_pointer())
            error(operand_tok, "cannot cast a value of type " + a.type().to_string());
        if (a.type().lanes() != to.lanes())
            error(operand_tok, "cannot cast " + a.type().to_string() + " to " + to.to_string() +
                                   ": a cast keeps the number of lanes");
        if (std::string p = Cast::problem(a.type(), to); !p.empty())
            error(operand_tok, "cannot cast: " + p);
        expect(")");
        return Cast::make(to, a);
    }

    /// The value of a string literal token (escapes decoded).
    std::string parse_string(const Token &t) {
        if (t.kind != Tok::String) error(t, "expected a string literal, found " + describe(t));
        std::string out;
        std::string_view s = t.text.substr(1, t.text.size() - 2);
        for (size_t i = 0; i < s.size(); ++i) {
            if (s[i] != '\\') {
                out += s[i];
                continue;
            }
            char e = i + 1 < s.size() ? s[++i] : '\0';
            if (e == 'n') out += '\n';
            else if (e == 't') out += '\t';
            else if (e == '\\' || e == '"') out += e;
            else if (e == 'x' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
                     std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
                out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
                i += 2;
            } else {
                error(t, "unknown escape in string literal (use \\\\, \\\", \\n, \\t or \\xNN)");
            }
        }
        return out;
    }

    /// `print(item, ..., sep="..", end="..")`: items are scalar expressions or string literals.
    Stmt parse_print() {
        take();
        expect("(");
        std::vector<PrintItem> items;
        std::string sep = " ", end = "\n";
        bool first = true;
        while (!is(")")) {
            if (!first) expect(",");
            first = false;
            const Token &t = peek();
            if (t.kind == Tok::String) {
                take();
                items.push_back({Expr(), parse_string(t)});
                continue;
            }
            if (t.kind == Tok::Ident && (t.text == "sep" || t.text == "end") &&
                peek(1).kind == Tok::Punct && peek(1).text == "=") {
                take();
                take();
                (t.text == "sep" ? sep : end) = parse_string(take());
                continue;
            }
            Expr e = parse_expr();
            if (!e.type().is_scalar() || e.type().is_void())
                error(t, "cannot print a value of type " + e.type().to_string());
            items.push_back({e, {}});
        }
        expect(")");
        return Print::make(std::move(items), std::move(sep), std::move(end));
    }

    /// `shuffle_xx(value, lane)`, `ballot(c)`, `warp_any(c)`, `warp_all(c)`.
    Expr parse_warp(WarpOp op) {
        const Token &name = take();
        expect("(");
        const Token &value_tok = peek();
        Expr value = parse_expr();
        Type t = value.type();
        Expr lane;
        if (is_shuffle(op)) {
            if (!((t.is_int() || t.is_float()) && (t.bits() == 32 || t.bits() == 64)))
                error(value_tok, quote(name.text) + " works on 32- and 64-bit integers and floats, found " +
                                     t.to_string());
            expect(",");
            const Token &lane_tok = peek();
            lane = parse_expr();
            if (lane.type() != Type(ScalarType::I32))
                error(lane_tok, "the lane of " + quote(name.text) + " must be i32, found " + lane.type().to_string());
        } else if (!t.is_bool()) {
            error(value_tok, quote(name.text) + " takes a bool, found " + t.to_string());
        }
        expect(")");
        return Warp::make(op, value, lane);
    }

    /// `mma.<shape>.<input>(a, b, c)`.
    Expr parse_mma() {
        const Token &name = take();
        expect(".");
        const Token &shape_tok = expect_kind(Tok::Ident, "an mma shape (m16n8k16)");
        std::optional<MmaShape> shape = MmaShape::parse(shape_tok.text);
        if (!shape)
            error(shape_tok,
                  "expected an mma shape such as m16n8k16, found " + describe(shape_tok));
        expect(".");
        const Token &input_tok = expect_kind(Tok::Ident, "the mma input type (f16, bf16, tf32)");
        std::optional<MmaInput> input = parse_mma_input(input_tok.text);
        if (!input)
            error(input_tok, "expected the mma input type (f16, bf16, tf32, e4m3 or e5m2), found " +
                                 describe(input_tok));
        expect("(");
        const Token &a_tok = peek();
        Expr a = parse_expr();
        expect(",");
        const Token &b_tok = peek();
        Expr b = parse_expr();
        expect(",");
        const Token &c_tok = peek();
        Expr c = parse_expr();
        expect(")");
        if (std::string p = Mma::problem(*shape, *input, a.type(), b.type(), c.type());
            !p.empty()) {
            // At the operand that is wrong, or at the shape where there is no such mma.
            std::optional<MmaFragments> f = Mma::fragments(*shape, *input);
            error(!f ? shape_tok : a.type() != f->a ? a_tok : b.type() != f->b ? b_tok : c_tok, p);
        }
        (void)name;
        return Mma::make(*shape, *input, a, b, c);
    }

    /// An element `p[i]` for `what`'s operand `role`, through a pointer of `space`.
    Expr parse_element_of(const char *what, const char *role, AddressSpace space) {
        const Token &tok = peek();
        Expr e = parse_expr();
        const Load *load = e.as<Load>();
        if (!load || load->lanes() != 1)
            error(tok, std::string(what) + " needs an element `p[i]` as its " + role);
        if (load->ptr.type().space() != space)
            error(tok, std::string(what) + "'s " + role + " must point to " +
                           std::string(to_string(space)) + " memory, found " +
                           load->ptr.type().to_string());
        return e;
    }

    /// `%acc, ...` up to `)`: mutable f32x4 variables.
    std::vector<VariableRef> parse_accumulators(const char *what) {
        std::vector<VariableRef> acc;
        while (!is(")")) {
            if (!acc.empty()) expect(",");
            const Token &t = expect_kind(Tok::VarName, "an accumulator variable");
            VariableRef v = lookup(t.text);
            if (!v) error(t, "use of undefined variable %" + std::string(t.text));
            if (v->kind != VarKind::Mutable || v->type != Type::vector(ScalarType::F32, 4))
                error(t, std::string(what) + "'s accumulators are f32x4 variables (var), not %" +
                             v->name + " of type " + v->type.to_string());
            acc.push_back(v);
        }
        return acc;
    }

    /// `wgmma.m64n<N>k16.<input>(a[i], b[j]; %acc...)`, `wgmma.fence(%acc...)`, `wgmma.commit`,
    /// `wgmma.wait(n; %acc...)`.
    Stmt parse_wgmma() {
        take();
        expect(".");
        const Token &what = expect_kind(Tok::Ident,
                                        "a wgmma shape (m64n128k16), fence, commit or wait");
        if (what.text == "commit") return TensorSync::make(TensorSyncKind::WgmmaCommit);
        if (what.text == "fence") {
            expect("(");
            std::vector<VariableRef> acc = parse_accumulators("wgmma.fence");
            expect(")");
            return TensorSync::make(TensorSyncKind::WgmmaFence, 0, std::move(acc));
        }
        if (what.text == "wait") {
            expect("(");
            const Token &n = peek();
            if (n.kind != Tok::Number || n.text.size() != 1 || !is_digit(n.text[0]) ||
                n.text[0] - '0' > TensorSync::kMaxPending)
                error(n, "expected the number of groups wgmma.wait leaves in flight (0 to " +
                             std::to_string(TensorSync::kMaxPending) + "), found " + describe(n));
            take();
            std::vector<VariableRef> acc;
            if (accept(";")) acc = parse_accumulators("wgmma.wait");
            expect(")");
            return TensorSync::make(TensorSyncKind::WgmmaWait, n.text[0] - '0', std::move(acc));
        }
        // m64n<N>k16, N up to 256 (MmaShape's fields are 8 bits).
        unsigned n = 0;
        {
            const std::string_view text = what.text;
            const bool framed = text.size() > 7 && text.substr(0, 4) == "m64n" &&
                                text.substr(text.size() - 3) == "k16";
            const std::string_view digits = framed ? text.substr(4, text.size() - 7)
                                                   : std::string_view();
            if (digits.empty() || digits.size() > 3 || digits[0] == '0' ||
                digits.find_first_not_of("0123456789") != std::string_view::npos)
                error(what, "expected a wgmma shape m64n<N>k16, fence, commit or wait, found " +
                                describe(what));
            for (char c : digits) n = n * 10 + unsigned(c - '0');
        }
        expect(".");
        const Token &input_tok = expect_kind(Tok::Ident, "the wgmma input type (f16, bf16)");
        std::optional<MmaInput> input = parse_mma_input(input_tok.text);
        if (!input || *input == MmaInput::TF32)
            error(input_tok,
                  "expected the wgmma input type (f16 or bf16), found " + describe(input_tok));
        expect("(");
        const Token &a_tok = peek();
        const Expr a_e = parse_element_of("wgmma", "a", AddressSpace::Shared);
        const Load *a = a_e.as<Load>();
        expect(",");
        const Token &b_tok = peek();
        const Expr b_e = parse_element_of("wgmma", "b", AddressSpace::Shared);
        const Load *b = b_e.as<Load>();
        uint32_t mn = 0;
        if (is("mn")) {
            take();
            const Token &stride = peek();
            if (stride.kind != Tok::Number || stride.text.size() > 7 ||
                stride.text.find_first_not_of("0123456789") != std::string_view::npos ||
                std::stoul(std::string(stride.text)) == 0 ||
                std::stoul(std::string(stride.text)) % 1024 != 0)
                error(stride,
                      "expected the bytes between an MN-major B's groups of 64 columns (a positive "
                      "multiple of 1024), found " +
                          describe(stride));
            mn = uint32_t(std::stoul(std::string(take().text)));
        }
        expect(";");
        const Token &acc_tok = peek();
        std::vector<VariableRef> acc = parse_accumulators("wgmma");
        expect(")");

        if (std::string p = Wgmma::problem(*input, n, a->ptr.type(), b->ptr.type(), acc);
            !p.empty()) {
            const Type e = Type(*input == MmaInput::F16 ? ScalarType::F16 : ScalarType::BF16);
            error(n == 0 || n > 256 || n % 8 ? what
                  : a->type != e             ? a_tok
                  : b->type != e             ? b_tok
                                             : acc_tok,
                  p);
        }
        return Wgmma::make(*input, n, a->ptr, a->index, b->ptr, b->index, std::move(acc), mn);
    }

    /// `mbarrier.<op>(bar[i])`, `mbarrier.<op>(bar[i], value)`.
    Stmt parse_mbarrier() {
        take();
        expect(".");
        const Token &op_tok = expect_kind(Tok::Ident, "an mbarrier operation");
        std::optional<MBarrierOp> op = parse_mbarrier_op(op_tok.text);
        if (!op)
            error(op_tok,
                  "expected an mbarrier operation (init, arrive, expect_tx, wait, arrive_cluster), "
                  "found " +
                      describe(op_tok));
        expect("(");
        const Token &bar_tok = peek();
        const Expr bar_e = parse_element_of("mbarrier", "barrier", AddressSpace::Shared);
        const Load *bar = bar_e.as<Load>();
        if (bar->type != Type(ScalarType::U64))
            error(bar_tok, "an mbarrier is a u64 in shared memory, not " + bar->type.to_string());
        Expr value;
        if (*op != MBarrierOp::Arrive) {
            expect(",");
            const Token &v_tok = peek();
            value = parse_expr();
            if (!value.type().is_int() || !value.type().is_scalar())
                error(v_tok, "mbarrier." + std::string(to_string(*op)) + " takes an integer, not " +
                                 value.type().to_string());
        }
        expect(")");
        return MBarrier::make(*op, bar->ptr, bar->index, value);
    }

    /// `tma_load(dst[i], map, x, y, bar[j])`, `tma_load(dst[i], map, x, y, bar[j], multicast m)`.
    Stmt parse_tma_load() {
        take();
        expect("(");
        const Expr dst_e = parse_element_of("tma_load", "destination", AddressSpace::Shared);
        const Load *dst = dst_e.as<Load>();
        expect(",");
        const Token &map_tok = peek();
        Expr map = parse_expr();
        if (!map.type().is_pointer() || map.type().space() != AddressSpace::Global ||
            map.type().element() != ScalarType::U64)
            error(map_tok,
                  "tma_load's map is a ptr<global const u64> (the 128-byte tensor map), not " +
                      map.type().to_string());
        Expr coord[2];
        for (Expr &c : coord) {
            expect(",");
            const Token &tok = peek();
            c = parse_expr();
            if (!c.type().is_int() || !c.type().is_scalar())
                error(tok, "tma_load's coordinates are integers, not " + c.type().to_string());
        }
        expect(",");
        const Token &bar_tok = peek();
        const Expr bar_e = parse_element_of("tma_load", "barrier", AddressSpace::Shared);
        const Load *bar = bar_e.as<Load>();
        if (bar->type != Type(ScalarType::U64))
            error(bar_tok, "an mbarrier is a u64 in shared memory, not " + bar->type.to_string());
        Expr multicast;
        if (is(",")) {
            take();
            const Token &kw = peek();
            if (kw.kind != Tok::Ident || kw.text != "multicast")
                error(kw, "expected 'multicast' and the mask of the cluster's blocks, found " +
                              describe(kw));
            take();
            const Token &tok = peek();
            multicast = parse_expr();
            if (!multicast.type().is_int() || !multicast.type().is_scalar())
                error(tok, "tma_load's multicast mask is an integer, not " +
                               multicast.type().to_string());
        }
        expect(")");
        return TmaLoad::make(dst->ptr, dst->index, map, coord[0], coord[1], bar->ptr, bar->index,
                             multicast);
    }

    /// `ldmatrix.xN(%p[i])` or `ldmatrix.xN.trans(%p[i])`.
    Expr parse_matrix_load() {
        take();
        expect(".");
        const Token &n = expect_kind(Tok::Ident, "the matrix count of ldmatrix (x1, x2, x4)");
        if (n.text != "x1" && n.text != "x2" && n.text != "x4")
            error(n, "expected the matrix count of ldmatrix (x1, x2 or x4), found " + describe(n));
        const unsigned count = unsigned(n.text[1] - '0');
        bool trans = false;
        if (accept(".")) {
            const Token &tr = peek();
            if (!is("trans"))
                error(tr, "expected 'trans' after ldmatrix." + std::string(n.text) + ".");
            take();
            trans = true;
        }
        expect("(");
        const Token &tok = peek();
        Expr e = parse_expr();
        const Load *load = e.as<Load>();
        if (!load || load->lanes() != 1)
            error(tok, "ldmatrix needs an element `p[i]` as its argument");
        if (std::string p = MatrixLoad::problem(load->ptr.type(), count); !p.empty())
            error(tok, "ldmatrix " + p);
        expect(")");
        return MatrixLoad::make(load->ptr, load->index, count, trans);
    }

    /// `async_copy.N(%dst[i], %src[j])` or `async_copy.N(%dst[i], %src[j], cond)`.
    Stmt parse_async_copy() {
        take();
        expect(".");
        const Token &n = peek();
        if (n.kind != Tok::Number ||
            n.text.find_first_not_of("0123456789") != std::string_view::npos || n.text.size() > 2)
            error(n,
                  "expected the element count of async_copy (async_copy.4), found " + describe(n));
        take();
        const uint32_t count = uint32_t(std::stoul(std::string(n.text)));
        expect("(");
        auto element = [&](AddressSpace space, const char *what) {
            const Token &tok = peek();
            Expr e = parse_expr();
            const Load *load = e.as<Load>();
            if (!load || load->lanes() != 1)
                error(tok, std::string("async_copy needs an element `p[i]` as its ") + what);
            if (load->ptr.type().space() != space)
                error(tok, std::string("async_copy's ") + what + " must point to " +
                               std::string(to_string(space)) + " memory, found " +
                               load->ptr.type().to_string());
            return e;
        };
        const Expr dst_expr = element(AddressSpace::Shared, "destination");
        expect(",");
        const Token &src_tok = peek();
        const Expr src_expr = element(AddressSpace::Global, "source");
        const Load *dst = dst_expr.as<Load>(), *src = src_expr.as<Load>();
        if (src->type != dst->type)
            error(src_tok, "async_copy from " + src->ptr.type().to_string() + " to " +
                               dst->ptr.type().to_string() + ": the element types differ");
        if (std::string p = AsyncCopy::problem(dst->type, count); !p.empty())
            error(n, "async_copy " + p);
        Expr valid;
        if (accept(",")) {
            const Token &tok = peek();
            valid = parse_expr();
            if (!valid.type().is_bool())
                error(tok,
                      "async_copy's condition must be bool, found " + valid.type().to_string());
        }
        expect(")");
        return AsyncCopy::make(dst->ptr, dst->index, src->ptr, src->index, count, valid);
    }

    /// `atomic_<op>(p[i], value)` or `atomic_cas(p[i], compare, value)`.
    Expr parse_atomic(AtomicOp op) {
        const Token &name = take();
        FenceScope scope = FenceScope::Device;
        if (accept(".")) {
            const Token &s = expect_kind(Tok::Ident, "atomic scope");
            std::optional<FenceScope> f = parse_fence_scope(s.text);
            if (!f) error(s, "expected an atomic scope (block, device or system), found " + describe(s));
            scope = *f;
        }
        expect("(");
        const Token &elem_tok = peek();
        Expr elem = parse_expr();
        const Load *load = elem.as<Load>();
        if (!load) error(elem_tok, quote(name.text) + " needs an element `p[i]` as its first argument");
        if (load->ptr.type().readonly())
            error(elem_tok, "cannot update through read-only pointer of type " + load->ptr.type().to_string());
        Type t = elem.type();
        if (std::string_view need = operand_requirement(op, t); !need.empty())
            error(elem_tok, quote(name.text) + " works on " + std::string(need) + ", found " + t.to_string());
        Expr compare;
        auto operand = [&](const char *what) {
            expect(",");
            const Token &tok = peek();
            Expr v = parse_expr();
            if (v.type() != t)
                error(tok, std::string(what) + " of " + quote(name.text) + " must be " + t.to_string() +
                               ", found " + v.type().to_string());
            return v;
        };
        if (op == AtomicOp::Cas) compare = operand("the compared value");
        Expr value = operand("the value");
        expect(")");
        return Atomic::make(op, load->ptr, load->index, value, compare, scope);
    }

    /// `@f(a, b, ...)`: a call of a device function defined earlier.
    Expr parse_invoke() {
        const Token &name = take();
        std::string fname(name.text);
        if (fname == current_function_)
            error(name, "@" + fname + " calls itself: device functions cannot be recursive");
        auto it = functions_.find(fname);
        if (it == functions_.end())
            error(name, "call of undefined function @" + fname + " (a function is defined before its callers)");
        const FunctionRef &f = it->second;
        expect("(");
        std::vector<Expr> args;
        if (!is(")")) {
            do {
                const Token &arg_tok = peek();
                Expr a = parse_expr();
                size_t i = args.size();
                if (i >= f->params.size())
                    error(arg_tok, "too many arguments for @" + fname + ", which takes " +
                                       std::to_string(f->params.size()));
                if (a.type() != f->params[i]->type)
                    error(arg_tok, "argument " + std::to_string(i + 1) + " of @" + fname + " has type " +
                                       a.type().to_string() + ", expected " + f->params[i]->type.to_string());
                args.push_back(a);
            } while (accept(","));
        }
        const Token &close = expect(")");
        if (args.size() != f->params.size())
            error(close, "@" + fname + " takes " + std::to_string(f->params.size()) + " arguments, found " +
                             std::to_string(args.size()));
        return Invoke::make(f, std::move(args));
    }

    /// `name(a, b, ...)` of a built-in function: arguments of one type that the function takes.
    Expr parse_call(Intrinsic f) {
        const Token &name = take();
        expect("(");
        std::vector<Expr> args;
        std::vector<const Token *> arg_toks;
        for (unsigned i = 0; i < arity(f); ++i) {
            if (i) expect(",");
            arg_toks.push_back(&peek());
            args.push_back(parse_expr());
        }
        expect(")");
        for (size_t i = 1; i < args.size(); ++i)
            if (args[i].type() != args[0].type())
                error(*arg_toks[i], "arguments of " + quote(name.text) + " have different types " +
                                        args[0].type().to_string() + " and " + args[i].type().to_string());
        if (std::string_view need = operand_requirement(f, args[0].type()); !need.empty())
            error(*arg_toks[0], "arguments of " + quote(name.text) + " must be " + std::string(need) +
                                    ", found " + args[0].type().to_string());
        return Call::make(f, std::move(args));
    }

    Expr parse_select() {
        take();
        expect("(");
        const Token &cond_tok = peek();
        Expr cond = parse_expr();
        Type c = cond.type();
        if (!c.lane_type().is_bool() || c.is_pointer())
            error(cond_tok, "condition of 'select' must be bool or a bool vector, found " + c.to_string());
        expect(",");
        const Token &a_tok = peek();
        Expr a = parse_expr();
        const Token &comma = expect(",");
        Expr b = parse_expr();
        expect(")");
        if (a.type() != b.type())
            error(comma, "arms of 'select' have different types " + a.type().to_string() + " and " +
                             b.type().to_string());
        if (c.is_vector() && c.lanes() != a.type().lanes())
            error(a_tok, "a condition of type " + c.to_string() + " selects between vectors of " +
                             std::to_string(c.lanes()) + " lanes, found " + a.type().to_string());
        return Select::make(cond, a, b);
    }

    /// `TxN(a)` (a broadcast) or `TxN(a0, ..., aN-1)`.
    Expr parse_make_vector(Type t) {
        const Token &name = take();
        expect("(");
        std::vector<Expr> args;
        do {
            const Token &arg_tok = peek();
            Expr a = parse_expr();
            if (a.type() != t.lane_type())
                error(arg_tok, "the lanes of " + t.to_string() + " are " + t.lane_type().to_string() +
                                   ", found a value of type " + a.type().to_string());
            args.push_back(a);
        } while (accept(","));
        const Token &close = expect(")");
        if (args.size() != 1 && args.size() != t.lanes())
            error(close, quote(name.text) + " takes one value (a broadcast) or " + std::to_string(t.lanes()) +
                             ", found " + std::to_string(args.size()));
        return MakeVector::make(t, std::move(args));
    }

    /// A small count written as plain digits inside `<...>` (a lane count or lane index).
    unsigned parse_count(std::string_view what) {
        const Token &tok = peek();
        if (tok.kind != Tok::Number || tok.text.find_first_not_of("0123456789") != std::string_view::npos ||
            tok.text.size() > 3)
            error(tok, "expected " + std::string(what) + ", found " + describe(tok));
        take();
        return static_cast<unsigned>(std::stoul(std::string(tok.text)));
    }

    /// `extract<k>(v)`: lane k of vector v.
    Expr parse_extract() {
        take();
        expect("<");
        const Token &lane_tok = peek();
        unsigned lane = parse_count("a lane number");
        expect(">");
        expect("(");
        const Token &v_tok = peek();
        Expr v = parse_expr();
        expect(")");
        if (!v.type().is_vector()) error(v_tok, "'extract' needs a vector, found " + v.type().to_string());
        if (lane >= v.type().lanes())
            error(lane_tok, "lane " + std::to_string(lane) + " is out of range for " + v.type().to_string());
        return Extract::make(v, lane);
    }

    /// `reduce_<op>(v)`.
    Expr parse_reduce(ReduceOp op) {
        const Token &name = take();
        expect("(");
        const Token &v_tok = peek();
        Expr v = parse_expr();
        expect(")");
        if (std::string_view need = operand_requirement(op, v.type()); !need.empty())
            error(v_tok, quote(name.text) + " works on " + std::string(need) + ", found " + v.type().to_string());
        return Reduce::make(op, v);
    }

    /// `load<N>(p[i])`: N elements from p[i] on as one vector.
    Expr parse_vector_load() {
        take();
        expect("<");
        const Token &lanes_tok = peek();
        unsigned lanes = parse_count("a lane count");
        if (!Type::valid_lanes(lanes))
            error(lanes_tok, "a vector load reads 2, 4, 8 or 16 elements, not " + std::to_string(lanes));
        expect(">");
        expect("(");
        const Token &elem_tok = peek();
        Expr elem = parse_expr();
        const Load *load = elem.as<Load>();
        if (!load || load->lanes() != 1)
            error(elem_tok, "'load' needs an element `p[i]` as its argument");
        expect(")");
        return Load::make(load->ptr, load->index, lanes);
    }

    Expr parse_condition(std::string_view what) {
        const Token &t = peek();
        Expr cond = parse_expr();
        if (!cond.type().is_bool())
            error(t, "condition of " + quote(what) + " must be bool, found " +
                         cond.type().to_string());
        return cond;
    }

    // -----------------------------------------------------------------------------------------
    // Statements.

    /// `{ stmts }` in a new scope.
    Stmt parse_body() {
        Nesting nest(*this, peek(), 2);
        expect("{");
        scopes_.emplace_back();
        std::vector<Stmt> stmts;
        while (!is("}")) {
            if (at_eof()) error(peek(), "expected '}', found end of input");
            stmts.push_back(parse_stmt());
        }
        take();
        scopes_.pop_back();
        return Block::make(std::move(stmts));
    }

    Stmt parse_stmt() {
        const Token &t = peek();
        if (t.kind == Tok::Ident) {
            if (t.text == "let" || t.text == "var") return parse_definition();
            if (t.text == "shared") return parse_shared();
            if (t.text == "local") return parse_local();
            if (t.text == "constant") return parse_constant();
            if (t.text == "fence") {
                take();
                if (accept(".")) {
                    const Token &proxy = expect_kind(Tok::Ident, "proxy");
                    if (proxy.text != "proxy")
                        error(proxy, "expected fence.proxy.async, found " + describe(proxy));
                    expect(".");
                    const Token &async = expect_kind(Tok::Ident, "async");
                    if (async.text != "async")
                        error(async, "expected fence.proxy.async, found " + describe(async));
                    return TensorSync::make(TensorSyncKind::ProxyFence);
                }
                const Token &scope = expect_kind(Tok::Ident, "fence scope");
                std::optional<FenceScope> f = parse_fence_scope(scope.text);
                if (!f) error(scope, "expected a fence scope (block, device or system), found " + describe(scope));
                return Fence::make(*f);
            }
            if (t.text == "async_copy") return parse_async_copy();
            if (t.text == "wgmma") return parse_wgmma();
            if (t.text == "mbarrier") return parse_mbarrier();
            if (t.text == "tma_load") return parse_tma_load();
            if (t.text == "async_commit") {
                take();
                return AsyncGroup::commit();
            }
            if (t.text == "async_wait") {
                take();
                expect("(");
                const Token &n = peek();
                if (n.kind != Tok::Number || n.text.size() != 1 || !is_digit(n.text[0]) ||
                    n.text[0] - '0' > AsyncGroup::kMaxPending)
                    error(n, "expected the number of groups async_wait leaves in flight (0 to " +
                                 std::to_string(AsyncGroup::kMaxPending) + "), found " +
                                 describe(n));
                take();
                expect(")");
                return AsyncGroup::wait_for(n.text[0] - '0');
            }
            if (t.text == "if") return parse_if();
            if (t.text == "for") return parse_for();
            if (t.text == "while") {
                take();
                Expr cond = parse_condition("while");
                ++loop_depth_;
                Stmt body = parse_body();
                --loop_depth_;
                return While::make(cond, body);
            }
            if (t.text == "break" || t.text == "continue") {
                take();
                if (loop_depth_ == 0) error(t, quote(t.text) + " outside a loop");
                return t.text == "break" ? Break::make() : Continue::make();
            }
            if (t.text == "barrier" || t.text == "cluster_barrier") {
                take();
                return Barrier::make(t.text == "barrier" ? BarrierScope::Block
                                                         : BarrierScope::Cluster);
            }
            if (t.text == "return") {
                take();
                if (current_return_.is_void()) return Return::make();
                const Token &value_tok = peek();
                Expr v = parse_expr();
                if (v.type() != current_return_)
                    error(value_tok, "@" + current_function_ + " returns " + current_return_.to_string() +
                                         ", found a value of type " + v.type().to_string());
                return Return::make(v);
            }
            if (t.text == "print") return parse_print();
        }
        if (t.kind == Tok::KernName) {
            Nesting nest(*this, t, 1);
            return Evaluate::make(parse_invoke());
        }
        if (t.kind != Tok::VarName && !is("select") && !is("("))
            error(t, "expected statement, found " + describe(t));
        Expr target = parse_expr();
        const Token &eq = expect("=");
        const Token &value_tok = peek();
        Expr value = parse_expr();
        if (const auto *ref = target.as<VarRef>()) {
            const VariableRef &var = ref->var;
            if (var->kind != VarKind::Mutable)
                error(t, "cannot assign to immutable variable %" + var->name);
            if (value.type() != var->type)
                error(value_tok, "cannot assign a value of type " + value.type().to_string() +
                                     " to %" + var->name + " of type " + var->type.to_string());
            return Assign::make(var, value);
        }
        if (const auto *load = target.as<Load>()) {
            Type ptr = load->ptr.type();
            if (ptr.readonly())
                error(eq, "cannot store through read-only pointer of type " + ptr.to_string());
            if (value.type().is_pointer() || value.type().lane_type() != ptr.element_type())
                error(value_tok, "cannot store a value of type " + value.type().to_string() +
                                     " through " + ptr.to_string());
            return Store::make(load->ptr, load->index, value);
        }
        error(eq, "left side of '=' must be a variable or a memory location");
    }

    Stmt parse_definition() {
        bool is_let = take().text == "let";
        const Token &name = expect_kind(Tok::VarName, "variable name");
        check_fresh(name);
        expect(":");
        Type type = parse_type();
        expect("=");
        const Token &value_tok = peek();
        Expr value = parse_expr();
        if (value.type() != type)
            error(value_tok, "cannot initialize %" + std::string(name.text) + " of type " +
                                 type.to_string() + " with a value of type " +
                                 value.type().to_string());
        VariableRef var =
            Variable::make(std::string(name.text), type, is_let ? VarKind::Let : VarKind::Mutable);
        bind(var);
        return is_let ? Let::make(var, value) : Declare::make(var, value);
    }

    /// `shared %s: T[N]`, `shared %s: T[]` (the dynamic shared memory) and `local %a: T[N]`:
    /// the array's variable (a pointer into `space`) and element count (0 for `[]`).
    std::pair<VariableRef, uint64_t> parse_array(AddressSpace space, bool allow_dynamic) {
        const char *what = space == AddressSpace::Shared ? "shared" : "local";
        take();
        const Token &name = expect_kind(Tok::VarName, "variable name");
        check_fresh(name);
        expect(":");
        const Token &type_tok = peek();
        Type elem = parse_type();
        if (!elem.is_scalar() || elem.is_void())
            error(type_tok, std::string("a ") + what + " array holds scalars, not " + elem.to_string());
        expect("[");
        uint64_t count = 0;
        if (!(allow_dynamic && is("]"))) {
            const Token &count_tok = peek();
            if (count_tok.kind != Tok::Number ||
                count_tok.text.find_first_not_of("0123456789") != std::string_view::npos || count_tok.text.size() > 12)
                error(count_tok, "expected the number of elements, found " + describe(count_tok));
            take();
            count = std::stoull(std::string(count_tok.text));
            if (count == 0) error(count_tok, std::string("a ") + what + " array needs at least one element");
        }
        expect("]");
        VariableRef var = Variable::make(std::string(name.text), Type::pointer(elem.scalar(), space), VarKind::Let);
        bind(var);
        return {var, count};
    }

    Stmt parse_shared() {
        auto [var, count] = parse_array(AddressSpace::Shared, /*allow_dynamic=*/true);
        return SharedArray::make(var, count);
    }

    Stmt parse_local() {
        auto [var, count] = parse_array(AddressSpace::Local, /*allow_dynamic=*/false);
        return LocalArray::make(var, count);
    }

    /// `constant %c: T[N] @name` and `constant %c: T[N] @name = [v0, ..., vN-1]`.
    Stmt parse_constant() {
        take();
        const Token &name = expect_kind(Tok::VarName, "variable name");
        check_fresh(name);
        expect(":");
        const Token &type_tok = peek();
        Type elem = parse_type();
        if (!elem.is_scalar() || elem.is_void())
            error(type_tok, "a constant array holds scalars, not " + elem.to_string());
        expect("[");
        const Token &count_tok = peek();
        if (count_tok.kind != Tok::Number ||
            count_tok.text.find_first_not_of("0123456789") != std::string_view::npos || count_tok.text.size() > 12)
            error(count_tok, "expected the number of elements, found " + describe(count_tok));
        take();
        const uint64_t count = std::stoull(std::string(count_tok.text));
        if (count == 0) error(count_tok, "a constant array needs at least one element");
        expect("]");
        const Token &global = expect_kind(Tok::KernName, "the constant array's global name (@name)");
        std::vector<Expr> init;
        if (accept("=")) {
            expect("[");
            while (true) {
                const Token &value_tok = peek();
                Expr v = parse_expr();
                if (!(v.as<IntImm>() || v.as<FloatImm>() || v.as<BoolImm>()) || v.type() != elem)
                    error(value_tok, "an element of constant array @" + std::string(global.text) +
                                         " must be a literal of type " + elem.to_string());
                init.push_back(v);
                if (!accept(",")) break;
            }
            const Token &close = expect("]");
            if (init.size() != count)
                error(close, "constant array @" + std::string(global.text) + " has " + std::to_string(count) +
                                 " elements but " + std::to_string(init.size()) + " initial values");
        }
        VariableRef var = Variable::make(std::string(name.text), Type::pointer(elem.scalar(), AddressSpace::Constant,
                                                                               /*readonly=*/true),
                                         VarKind::Let);
        bind(var);
        return ConstantArray::make(var, std::string(global.text), count, std::move(init));
    }

    Stmt parse_if() {
        take();
        Expr cond = parse_condition("if");
        Stmt then_body = parse_body();
        Stmt else_body;
        if (accept("else")) else_body = parse_body();
        return If::make(cond, then_body, else_body);
    }

    Stmt parse_for() {
        take();
        const Token &name = expect_kind(Tok::VarName, "loop index name");
        check_fresh(name);
        expect(":");
        const Token &type_tok = peek();
        Type type = parse_type();
        if (!type.is_int())
            error(type_tok, "loop index %" + std::string(name.text) +
                                " must have an integer type, found " + type.to_string());
        expect("=");
        Expr begin = parse_bound(type, "begin");
        expect("to");
        Expr end = parse_bound(type, "end");
        expect("step");
        Expr step = parse_bound(type, "step");
        const Unroll unroll = parse_unroll();
        VariableRef var = Variable::make(std::string(name.text), type, VarKind::LoopIndex);
        scopes_.emplace_back();
        bind(var);
        ++loop_depth_;
        Stmt body = parse_body();
        --loop_depth_;
        scopes_.pop_back();
        return For::make(var, begin, end, step, body, unroll);
    }

    /// `max_threads(N)`, `min_blocks(N)`, `max_registers(N)`, each at most once, in this order.
    LaunchBounds parse_launch_bounds() {
        LaunchBounds lb;
        const Token &first = peek();
        for (auto [word, field] : {std::pair{"max_threads", &LaunchBounds::max_threads},
                                   std::pair{"min_blocks", &LaunchBounds::min_blocks},
                                   std::pair{"max_registers", &LaunchBounds::max_registers}}) {
            if (!accept(word)) continue;
            expect("(");
            const Token &t = peek();
            if (t.kind != Tok::Number ||
                t.text.find_first_not_of("0123456789") != std::string_view::npos ||
                t.text.size() > 5)
                error(t, std::string("expected the ") + word + " count, found " + describe(t));
            take();
            lb.*field = uint32_t(std::stoul(std::string(t.text)));
            expect(")");
        }
        if (std::string p = lb.problem(); !p.empty()) error(first, p);
        return lb;
    }

    /// `unroll(none)`, `unroll(full)`, `unroll(N)` with 2 <= N <= 1024, or nothing.
    Unroll parse_unroll() {
        if (!accept("unroll")) return {};
        expect("(");
        Unroll u;
        const Token &t = peek();
        if (accept("none")) {
            u = Unroll::none();
        } else if (accept("full")) {
            u = Unroll::full();
        } else {
            if (t.kind != Tok::Number ||
                t.text.find_first_not_of("0123456789") != std::string_view::npos ||
                t.text.size() > 5)
                error(t, "expected none, full or an unroll count, found " + describe(t));
            take();
            const uint64_t n = std::stoull(std::string(t.text));
            if (n < 2 || n > Unroll::kMaxCount)
                error(t, "an unroll count is 2 to " + std::to_string(Unroll::kMaxCount) +
                             ", found " + std::to_string(n) +
                             " (unroll(none) keeps a loop rolled)");
            u = Unroll::by(uint32_t(n));
        }
        expect(")");
        return u;
    }

    Expr parse_bound(Type index_type, std::string_view what) {
        const Token &t = peek();
        Expr e = parse_expr();
        if (e.type() != index_type)
            error(t, "loop " + std::string(what) + " has type " + e.type().to_string() +
                         ", expected " + index_type.to_string());
        return e;
    }

    /// `(%a: T, ...)` in a fresh scope stack.
    std::vector<VariableRef> parse_params() {
        std::vector<VariableRef> params;
        scopes_.assign(1, {});
        loop_depth_ = 0;
        expect("(");
        if (!is(")")) {
            do {
                const Token &name = expect_kind(Tok::VarName, "parameter name");
                check_fresh(name);
                expect(":");
                const Token &type_tok = peek();
                Type type = parse_type();
                if (type.is_void())
                    error(type_tok, "parameter %" + std::string(name.text) + " cannot be void");
                const Token &attr = peek();
                bool noalias = accept("noalias");
                if (noalias && !type.is_pointer())
                    error(attr, "only pointer parameters can be noalias, %" + std::string(name.text) + " is " +
                                    type.to_string());
                VariableRef var = Variable::make(std::string(name.text), type, VarKind::Param, noalias);
                bind(var);
                params.push_back(var);
            } while (accept(","));
        }
        expect(")");
        return params;
    }

    Kernel parse_kernel() {
        expect("kernel");
        Kernel k;
        k.name = std::string(expect_kind(Tok::KernName, "kernel name").text);
        k.params = parse_params();
        k.bounds = parse_launch_bounds();
        if (accept("fp_contract")) {
            expect("(");
            const Token &c = expect_kind(Tok::Ident, "contraction mode");
            std::optional<FpContract> fc = parse_fp_contract(c.text);
            if (!fc)
                error(c, "expected fp_contract(off) or fp_contract(fast), found " + describe(c));
            k.contract = *fc;
            expect(")");
        }
        current_function_.clear();
        current_return_ = Type();
        k.body = parse_body();
        scopes_.clear();
        return k;
    }

    /// `func @f(%a: T, ...) -> R { ... }` (no `-> R` for a void function).
    FunctionRef parse_function() {
        expect("func");
        const Token &name = expect_kind(Tok::KernName, "function name");
        std::string fname(name.text);
        if (functions_.count(fname)) error(name, "redefinition of function @" + fname);
        std::vector<VariableRef> params = parse_params();
        Type ret;
        if (accept("->")) {
            const Token &type_tok = peek();
            ret = parse_type();
            if (ret.is_void()) error(type_tok, "write no '-> void': a function without '->' returns nothing");
        }
        current_function_ = fname;
        current_return_ = ret;
        Stmt body = parse_body();
        current_function_.clear();
        current_return_ = Type();
        scopes_.clear();
        return Function::make(fname, std::move(params), ret, std::move(body));
    }

    std::string_view text_;
    std::string_view filename_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    std::vector<std::unordered_map<std::string, VariableRef>> scopes_;
    int loop_depth_ = 0;
    unsigned depth_ = 0; ///< see Nesting
    /// The functions defined so far, by name.
    std::unordered_map<std::string, FunctionRef> functions_;
    /// The function being parsed (empty in a kernel) and its return type.
    std::string current_function_;
    Type current_return_;
};

} // namespace

Module parse_module(std::string_view text, std::string_view filename) {
    return Parser(text, filename).parse_module();
}

} // namespace ember::ir
