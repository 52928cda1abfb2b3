// Mma<In, Shape, Acc> exists only for the shapes and types the IR has: tf32 has no m16n8k16, and
// only half inputs accumulate in half.
// EXPECT: there is no such mma
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p) {
    Mma<tf32, m16n8k16>::C c;
    Mma<bfloat16, m16n8k16, half>::C d;
    c.store(p, 0, 8);
});
