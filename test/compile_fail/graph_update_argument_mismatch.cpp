// Updating a graph's kernel node with a double where the kernel takes Float32: the same
// static_assert as enqueue_function, naming position 2, the host type and the expected type.
// EXPECT: enqueue_function: an argument does not match the kernel's parameter
// EXPECT: ArgumentPosition<2>, ember::HostType<double>, ember::KernelExpects<ember::Value<float> >
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n, Float32 s) { v[n] = s; });
void f(DeviceGraphExec &exec, DeviceBuffer<float> &b) { exec.update_kernel_arguments(0, k, b, int64_t(1), 2.0); }
