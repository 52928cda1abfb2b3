// An int64_t does not narrow to an Int32 parameter silently.
// EXPECT: ArgumentPosition<1>, ember::HostType<long int>, ember::KernelExpects<ember::Value<int> >
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int32 n) { v[n] = 1.0f; });
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    ctx.enqueue_function(k, b, int64_t(1), grid_dim(1), block_dim(1));
}
