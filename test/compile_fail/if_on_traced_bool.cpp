// A traced value never converts to bool: C++ `if` on it does not compile.
// EXPECT-GCC: use of deleted function
// EXPECT-GCC: operator bool
// EXPECT-CLANG: attempt to use a deleted function
// EXPECT-CLANG: 'operator bool' has been explicitly marked deleted
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n) {
    auto i = thread_idx.x;
    if (i < n) v[i] = 1.0f;
});
