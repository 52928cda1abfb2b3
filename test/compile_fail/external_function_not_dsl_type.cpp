// An external kernel declared with a C++ type instead of a DSL type.
// EXPECT: a kernel or device-function parameter must be a DSL type
// EXPECT: ember::ParameterType<float>
#include "ember/ember.h"
using namespace ember;
void f(DeviceModule &m) { m.get_function<Ptr<float>, float>("k"); }
