// A while_ condition lambda returning a traced number (not a comparison) names the type given.
// EXPECT: a condition (of if_, elif_, while_, select or a warp vote) must be a Bool
// EXPECT: this one is a UInt32
// EXPECT-NOT: operands of a DSL operator have different types
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<uint32_t> v, UInt32 n) {
    Var<uint32_t> i(n);
    while_([&] { return i; }, [&] { i -= 1; });
    v[0] = i;
});
