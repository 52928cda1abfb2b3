// load_matrix reads with ldmatrix, which moves 16-bit elements: a tf32 fragment (floats) cannot,
// and a C fragment has no load_matrix at all.
// EXPECT: load_matrix (ldmatrix) reads 16-bit elements: not tf32
// EXPECT: load_matrix reads an A or B fragment (ldmatrix); C has load()
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> p) {
    auto s = shared_array<float, 256>();
    auto h = shared_array<half, 256>();
    Mma<tf32, m16n8k8>::A a;
    a.load_matrix(s, 0, 8);
    Mma<half, m16n8k16, half>::C c;
    c.load_matrix(h, 0, 8);
    a.store(p, 0, 8);
});
