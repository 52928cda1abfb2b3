// A Value cannot be reassigned (that would rebind at trace time, not on the device): use Var.
// EXPECT-GCC: use of deleted function
// EXPECT-GCC: operator=
// EXPECT-CLANG: overload resolution selected deleted operator '='
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n) {
    Int i = thread_idx.x;
    i = i + n;
    v[i] = 1.0f;
});
