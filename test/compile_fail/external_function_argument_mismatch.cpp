// A kernel of an external module, declared with get_function<Ptr<float>, Int, Float32>, launched
// with a double for the Float32: the same static_assert as for ember's own kernels.
// EXPECT: enqueue_function: an argument does not match the kernel's parameter
// EXPECT: ArgumentPosition<2>, ember::HostType<double>, ember::KernelExpects<ember::Value<float> >
#include "ember/ember.h"
using namespace ember;
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    DeviceModule m = ctx.load_module(ModuleImage::ptx("..."));
    auto scale = m.get_function<Ptr<float>, Int, Float32>("scale");
    ctx.enqueue_function(scale, b, int64_t(1), 2.0, grid_dim(1), block_dim(1));
}
