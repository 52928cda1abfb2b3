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
class IRTextPrinter {
public:
    /// Assigns the names of `k`'s params and of every variable its body defines.
    void name_kernel(const Kernel &k);
    /// Assigns the names of every variable `s` defines.
    void name_definitions(const Stmt &s);

    /// `%name` of `v`, assigning one on first use.
    const std::string &name(const Variable *v);

    void print_expr(std::string &out, const Expr &e);
    /// Prints `s` as lines indented by `indent` levels, each ending in '\n'. A Block prints its
    /// statements (nested Blocks are flattened: the grammar has no bare block).
    void print_stmt(std::string &out, const Stmt &s, int indent);
    void print_kernel(std::string &out, const Kernel &k);

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

    std::unordered_map<const Variable *, std::string> names_;
    std::unordered_set<std::string> used_;
    unsigned anonymous_ = 0;
};

} // namespace ember::ir::detail

#endif // EMBER_COMPILER_LIB_IRPRINTERINTERNAL_H
