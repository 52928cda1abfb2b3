// Tensor maps at C++ compile time: a DeviceTensorMap of float passed where the kernel takes a
// TensorMap<bfloat16> (the element type is checked as any argument's type: one static_assert
// naming the position, the host type and the expected type), a map of a buffer of bool, and a
// TensorMap of const elements.
// EXPECT: enqueue_function: an argument does not match the kernel's parameter
// EXPECT: ArgumentPosition<0>, ember::HostType<ember::DeviceTensorMap<float> >,
// ember::KernelExpects<ember::TensorMap<ember::bfloat16> > EXPECT: create_tensor_map: the buffer's
// element type T must be an 8-, 16-, 32- or 64-bit integer EXPECT: TensorMap<T>: T is the matrix's
// element type, an integer, half, bfloat16, float or double, without const
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](TensorMap<bfloat16> a, Ptr<uint64_t> out) { out[0] = a.desc[0]; });
auto c = kernel("c", [](TensorMap<const float> a, Ptr<uint64_t> out) { out[0] = a.desc[0]; });
void f(DeviceContext &ctx, DeviceBuffer<float> &b, DeviceBuffer<uint64_t> &out,
       DeviceBuffer<bool> &flags) {
    auto map = ctx.create_tensor_map(b, 64, 64, 64, 64);
    ctx.enqueue_function(k, map, out, grid_dim(1), block_dim(128));
    (void)ctx.create_tensor_map(flags, 64, 64, 64, 64);
}
