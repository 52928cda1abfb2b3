// Arithmetic needs numbers: a scalar Bool and a mask (SIMD<bool, N>) are refused with the
// message of each face ([Note] Scalars and SIMD in the DSL).
// EXPECT: operator + needs numbers
// EXPECT: operator + needs number lanes
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p, Float32 x) {
    Bool b = x > 0.0f;
    auto m = p.load<4>(0) > 0.0f;
    p[0] = select(b + b, 1.0f, 0.0f);
    p.store(4, select(m + m, 1.0f, 0.0f));
});
