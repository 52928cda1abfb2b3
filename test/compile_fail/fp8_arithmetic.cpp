// The 8-bit floats only load, store, move, cast and multiply in mma ([Note] IR semantics: 8-bit
// floats): arithmetic, comparisons, constants and casts to other types than half, bfloat16,
// float and the other 8-bit float are refused with a message saying what to do.
// EXPECT: operator + needs numbers
// EXPECT: an 8-bit float has no comparisons
// EXPECT: an 8-bit float has no constants
// EXPECT: an 8-bit float converts to and from half, bfloat16, float and the other 8-bit float only
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float8_e4m3> p, Ptr<float> q) {
    Float8E4M3 x = p[0];
    p[1] = x + x;
    q[0] = select(x < x, 1.0f, 0.0f);
    Float8E4M3 one = 1.0f;
    p[2] = one;
    q[1] = cast<float>(cast<int32_t>(x));
});
