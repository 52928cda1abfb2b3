// enqueue_memset of a 16-byte element: no driver call sets it.
// EXPECT: the element type must be 1, 2, 4 or 8 bytes
#include "ember/ember.h"
using namespace ember;
struct Big { double a, b; };
void f(DeviceContext &ctx, DeviceBuffer<Big> &b) {
    ctx.enqueue_memset(b, Big{1.0, 2.0});
}
