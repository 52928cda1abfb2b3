// A reflected host struct passed for a kernel's struct parameter: its field 'v.scale' is a double
// where the kernel's struct has a Float32. One static_assert naming the argument position, the
// field's path, the host type and the expected type.
// EXPECT: enqueue_function: a field of a struct argument does not match the kernel's struct
// EXPECT: ArgumentPosition<1>, ember::StructField<
// EXPECT: {"v.scale"}>, ember::HostType<double>, ember::KernelExpects<ember::Value<float> >
#include "ember/ember.h"
using namespace ember;
struct View { Ptr<float> data; Float32 scale; };
EMBER_STRUCT(View, data, scale)
struct Job { View v; Int n; };
EMBER_STRUCT(Job, v, n)
struct HostView { DeviceBuffer<float> data; double scale; };
EMBER_STRUCT(HostView, data, scale)
struct HostJob { HostView v; int64_t n; };
EMBER_STRUCT(HostJob, v, n)
auto k = kernel("k", [](Int i, Job j) { j.v.data[i] = j.v.scale; });
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    ctx.enqueue_function(k, 0, HostJob{{b, 2.0}, 1}, grid_dim(1), block_dim(1));
}
