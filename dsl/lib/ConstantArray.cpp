/// \file
/// constant_array: the trace-time checks of a constant array's declaration (Value.h).
#include "ember/dsl/Value.h"
#include "ember/compiler/Verifier.h"

namespace ember::detail {

void declare_constant_array(const ir::VariableRef &var, const std::string &name, uint64_t count,
                            std::vector<ir::Expr> init, const std::source_location &loc) {
    Builder &b = require_builder("constant_array", loc);
    const std::string what = "constant_array<" + var->type.element_type().to_string() + ", " + std::to_string(count) +
                             ">(\"" + name + "\") in " + b.what();
    if (b.is_function())
        throw DslError(what + ": constant arrays are module globals declared in kernels; declare it in the kernel "
                              "and pass the ConstPtr<T> to the function",
                       loc);
    if (!ir::is_c_identifier(name))
        throw DslError(what + ": the name must be a C identifier (letters, digits and '_', not starting with a digit)",
                       loc);
    if (name.size() >= 2 && name[0] == '_' && name[1] == '_')
        throw DslError(what + ": names starting with '__' are reserved for ember", loc);
    if (name == b.kernel_name())
        throw DslError(what + ": a constant array cannot have the kernel's name", loc);
    if (auto [it, fresh] = b.constant_arrays.emplace(name, short_location(loc)); !fresh)
        throw DslError(what + ": the kernel already declares a constant array named '" + name + "' (at " +
                           it->second + "); each needs its own name",
                       loc);
    b.emit(ir::ConstantArray::make(var, name, count, std::move(init)), loc);
}

} // namespace ember::detail
