// A vector store through a Ptr<const T> does not compile.
// EXPECT: cannot store through a Ptr<const T>: its memory is read-only
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<const float> p) { p.store(0, p.load<4>(4)); });
