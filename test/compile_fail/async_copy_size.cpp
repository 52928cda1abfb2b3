// async_copy<N> copies 4, 8 or 16 bytes of one element type into shared memory: three floats,
// a copy between element types and one into a read-only pointer are refused when compiled.
// EXPECT: async_copy<N> copies 4, 8 or 16 bytes
// EXPECT: async_copy copies between pointers of one element type
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<const float> a, Ptr<const int32_t> b) {
    auto tile = shared_array<float, 64>();
    async_copy<3>(tile, 0, a, 0);
    async_copy<4>(tile, 0, b, 0);
});
