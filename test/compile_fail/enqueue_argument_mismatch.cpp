// Passing a double where the kernel takes Float32: one static_assert naming position 2, the host
// type and the expected type.
// EXPECT: enqueue_function: an argument does not match the kernel's parameter
// EXPECT: ArgumentPosition<2>, ember::HostType<double>, ember::KernelExpects<ember::Value<float> >
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n, Float32 s) { v[n] = s; });
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    ctx.enqueue_function(k, b, int64_t(1), 2.0, grid_dim(1), block_dim(1));
}
