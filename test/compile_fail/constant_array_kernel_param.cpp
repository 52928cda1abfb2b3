// A kernel parameter cannot point to constant memory: declare constant_array in the kernel.
// EXPECT: a kernel parameter points to global memory
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](ConstPtr<float> c, Ptr<float> out) { out[0] = c[0]; });
