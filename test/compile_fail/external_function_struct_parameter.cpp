// An external kernel declared with a struct parameter: ember would pass it field by field, which
// is not how C++ passes a struct by value, so get_function refuses it.
// EXPECT: get_function<P...>: a kernel of an external module takes scalars
// EXPECT: ember::ParameterType<Pair>
#include "ember/ember.h"
using namespace ember;
struct Pair { Float32 a; Float32 b; };
EMBER_STRUCT(Pair, a, b)
void f(DeviceModule &m) { m.get_function<Ptr<float>, Pair>("k"); }
