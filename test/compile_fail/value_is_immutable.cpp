// A Value cannot be reassigned (that would rebind at trace time, not on the device): use Var.
// EXPECT: use of deleted function
// EXPECT: operator=
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n) {
    Int i = thread_idx.x;
    i = i + n;
    v[i] = 1.0f;
});
