// Kernels take scalars and pointers; vectors are loaded through a pointer.
// EXPECT: a kernel parameter cannot be a SIMD<T, N>
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p, SIMD<float, 4> v) { p.store(0, v); });
