// A host type with no DevicePassable specialisation.
// EXPECT: this host type cannot be passed to a kernel
// EXPECT: HostType<Opaque>
#include "ember/ember.h"
using namespace ember;
struct Opaque { int x; };
auto k = kernel("k", [](Ptr<float> v, Int n) { v[n] = 1.0f; });
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    ctx.enqueue_function(k, b, Opaque{1}, grid_dim(1), block_dim(1));
}
