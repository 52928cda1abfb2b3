// A constant array is read-only in kernels: the host writes it (get_global, constant_memory).
// EXPECT: cannot store through a Ptr<const T> or a ConstPtr<T> (constant_array): its memory is read-only
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> out) {
    auto c = constant_array<float, 4>("c");
    c[0] = out[0];
});
