// A constant array is read-only in kernels: the host writes it (get_global, constant_memory).
// EXPECT: cannot store through a Ptr<const T>: its memory is read-only (so is a constant_array's ConstPtr<T>: the host writes it)
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> out) {
    auto c = constant_array<float, 4>("c");
    c[0] = out[0];
});
