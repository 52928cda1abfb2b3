// SIMD operands need one element type and lane count.
// EXPECT: SIMD operands of different element types or lane counts
// EXPECT: mismatched_simd_types<ember::SIMD<float, 4>, ember::SIMD<float, 8> >
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p) { p.store(0, p.load<4>(0) + p.load<8>(0)); });
