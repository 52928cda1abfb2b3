// The trigonometric, hyperbolic and error-function family of the math library ([Note] Math
// library in MathLib.h): sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, erf.
#include "MathBuilder.h"

namespace ember::detail::math {

Impl find_trig(ir::Intrinsic op) {
    switch (op) {
    default: return nullptr;
    }
}

} // namespace ember::detail::math
