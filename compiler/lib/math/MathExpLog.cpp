// The exponential and logarithmic family of the math library ([Note] Math library in MathLib.h):
// rsqrt, cbrt, exp, exp2, expm1, log, log2, log10, log1p, pow.
#include "MathBuilder.h"

namespace ember::detail::math {

Impl find_exp_log(ir::Intrinsic op) {
    switch (op) {
    default: return nullptr;
    }
}

} // namespace ember::detail::math
