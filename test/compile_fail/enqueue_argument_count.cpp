// Too few kernel arguments.
// EXPECT: enqueue_function: wrong number of kernel arguments
// EXPECT: KernelTakes<3>, ember::ArgumentsGiven<2>
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n, Float32 s) { v[n] = s; });
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    ctx.enqueue_function(k, b, int64_t(1), grid_dim(1), block_dim(1));
}
