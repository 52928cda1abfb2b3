// A vector has 2, 4, 8 or 16 lanes.
// EXPECT: SIMD<T, N> has N = 2, 4, 8 or 16 lanes
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p) { p.store(0, p.load<3>(0)); });
