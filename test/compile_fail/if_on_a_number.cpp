// if_ on a traced number (not a comparison) says that a condition must be a Bool and names the
// type given, instead of calling it a mismatch of operator operands.
// EXPECT: a condition (of if_, elif_, while_, select or a warp vote) must be a Bool
// EXPECT: this one is a Float32
// EXPECT-NOT: operands of a DSL operator have different types
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Float32 x) { if_(x, [&] { v[0] = 1.0f; }); });
