// An mma takes the A, B and C fragments of one Mma type: fragments of another shape or input
// type, or in the wrong order, fail the build with one readable message each.
// EXPECT: the fragments belong to different Mma types
// EXPECT: takes an A, a B and a C fragment, in this order
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p) {
    using Big = Mma<bfloat16, m16n8k16>;
    using Small = Mma<bfloat16, m16n8k8>;
    Big::A a;
    Small::B b;
    Big::C c;
    c = mma(a, b, c);
    Big::B good_b;
    c = mma(good_b, a, c);
    c.store(p, 0, 8);
});
