// A traced value never converts to bool: C++ `if` on it does not compile.
// EXPECT: use of deleted function
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n) {
    auto i = thread_idx.x;
    if (i < n) v[i] = 1.0f;
});
