// A reflected host struct is passed field by field by name: 'size' where the kernel's struct has
// 'n' (same type) must not compile, so that two fields of one type can never be swapped silently.
// EXPECT: enqueue_function: a host struct is passed for a kernel struct field by field, by name and in order, but these names differ
// EXPECT: ArgumentPosition<0>, ember::StructField<ember::detail::FixedString<2>{"n"}>, ember::HostField<ember::detail::FixedString<5>{"size"}>
#include "ember/ember.h"
using namespace ember;
struct View { Ptr<float> data; Int n; };
EMBER_STRUCT(View, data, n)
struct HostView { DeviceBuffer<float> data; int64_t size; };
EMBER_STRUCT(HostView, data, size)
auto k = kernel("k", [](View v) { v.data[0] = cast<float>(v.n); });
void f(DeviceContext &ctx, DeviceBuffer<float> &b) {
    ctx.enqueue_function(k, HostView{b, 4}, grid_dim(1), block_dim(1));
}
