// TileTensor's checks at C++ compile time: a copy between views of different element types, an
// mma fragment stored into a view of another element type, and a store through a
// TileTensor<const T> each stop the build with one readable message.
// EXPECT: copy: one element type
// EXPECT: store(fragment, view): the view holds elements of the fragment's type
// EXPECT: cannot store through a Ptr<const T>
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](TileTensor<const float> in, TileTensor<float> out) {
    auto s = shared_tile<half, 16, 16>();
    copy(s, in.view(), thread_idx.x, 32);
    Mma<bfloat16, m16n8k16>::C c;
    store(c, s);
    in(0, 0) = 1.0f;
    out(0, 0) = 2.0f;
});
