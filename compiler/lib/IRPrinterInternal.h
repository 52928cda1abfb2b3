/// \file
/// The printer's naming and line formatting, shared by IRPrinter.cpp and Verifier.cpp so that the
/// verifier's messages name variables exactly as `print(Kernel)` does. Private to compiler/lib.
#ifndef EMBER_COMPILER_LIB_IRPRINTERINTERNAL_H
#define EMBER_COMPILER_LIB_IRPRINTERINTERNAL_H

#include "ember/compiler/IR.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace ember::ir::detail {

/// Prints IR with the names of one kernel. See [Note] Textual IR in IRPrinter.h.
///
/// Names are assigned by `name_kernel`/`name_definitions` in definition order (params, then the
/// statements depth first); a variable met without a definition (a free variable of a lone
/// expression, or a broken kernel) gets its name when it is first printed.
/// The names of device functions in one printed unit (a module, or a kernel with its callees):
/// `@name`, with `.1`, `.2`, ... for different functions of one name.
struct FunctionNames {
    std::unordered_map<const Function *, std::string> names;
    std::unordered_set<std::string> used;
};

class IRTextPrinter {
public:
    /// `functions` is shared by the printers of one unit; without it, this printer has its own.
    explicit IRTextPrinter(FunctionNames *functions = nullptr)
        : functions_(functions ? functions : &own_functions_) {}
    IRTextPrinter(const IRTextPrinter &) = delete;
    IRTextPrinter &operator=(const IRTextPrinter &) = delete;

    /// Assigns the names of `k`'s params and of every variable its body defines.
    void name_kernel(const Kernel &k);
    /// Assigns the names of every variable `s` defines.
    void name_definitions(const Stmt &s);

    /// `%name` of `v`, assigning one on first use.
    const std::string &name(const Variable *v);

    void print_expr(std::string &out, const Expr &e);
    /// `ptr[index]`.
    void print_element(std::string &out, const Expr &ptr, const Expr &index);
    /// `(a, b, ...)`: the arguments of a call, an invocation or a vector constructor.
    void print_args(std::string &out, const std::vector<Expr> &args);
    /// Prints `s` as lines indented by `indent` levels, each ending in '\n'. A Block prints its
    /// statements (nested Blocks are flattened: the grammar has no bare block).
    void print_stmt(std::string &out, const Stmt &s, int indent);
    void print_kernel(std::string &out, const Kernel &k);
    /// `func @f(...) -> T { ... }` (its callees are printed separately).
    void print_function(std::string &out, const Function &f);
    /// `@name` of `f` in this unit.
    const std::string &function_name(const Function *f);

    std::string expr(const Expr &e) {
        std::string s;
        print_expr(s, e);
        return s;
    }
    /// The first line of `s` without indentation or newline (`if c {` for an If).
    std::string stmt_line(const Stmt &s);

private:
    void define(const Variable *v);
    void print_body(std::string &out, const Stmt &body, int indent);
    void print_signature(std::string &out, const std::vector<VariableRef> &params);

    std::unordered_map<const Variable *, std::string> names_;
    std::unordered_set<std::string> used_;
    unsigned anonymous_ = 0;
    FunctionNames own_functions_;
    FunctionNames *functions_;
};

} // namespace ember::ir::detail

#endif // EMBER_COMPILER_LIB_IRPRINTERINTERNAL_H
