// A C++ floating-point value does not become an integer constant implicitly.
// EXPECT: does not convert to an integer type implicitly
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<int32_t> v, Int32 a) { v[0] = a + 1.5; });
