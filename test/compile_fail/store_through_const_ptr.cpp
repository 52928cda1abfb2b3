// A Ptr<const T> is read-only.
// EXPECT: cannot store through a Ptr<const T>: its memory is read-only
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<const float> in, Ptr<float> out) {
    out[0] = in[0];
    in[1] = 2.0f;
});
