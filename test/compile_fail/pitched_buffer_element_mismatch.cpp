// Passing a PitchedBuffer<int> where the kernel takes Ptr<float>: a pitched buffer reaches a
// kernel as a pointer to its element type, checked like a DeviceBuffer.
// EXPECT: enqueue_function: an argument does not match the kernel's parameter
// EXPECT: ArgumentPosition<0>, ember::HostType<ember::PitchedBuffer<int> >, ember::KernelExpects<ember::Ptr<float> >
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int pitch) { v[pitch] = 1.0f; });
void f(DeviceContext &ctx, PitchedBuffer<int> &b) {
    ctx.enqueue_function(k, b, int64_t(b.pitch_elements()), grid_dim(1), block_dim(1));
}
