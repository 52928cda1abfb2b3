// One constant array larger than the 64 KiB of constant memory fails at compile time.
// EXPECT: a kernel has at most 64 KiB of constant memory
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<float> out) { out[0] = constant_array<float, 16385>("c")[0]; });
