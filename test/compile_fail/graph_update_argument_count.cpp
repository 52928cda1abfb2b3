// Updating a graph's kernel node with too few arguments: the argument-count static_assert of
// enqueue_function.
// EXPECT: enqueue_function: wrong number of kernel arguments
// EXPECT: KernelTakes<3>, ember::ArgumentsGiven<2>
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> v, Int n, Float32 s) { v[n] = s; });
void f(DeviceGraphExec &exec, DeviceBuffer<float> &b) { exec.update_kernel_arguments(0, k, b, int64_t(1)); }
