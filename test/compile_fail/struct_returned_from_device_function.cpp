// A device function cannot return a struct: the IR returns one scalar or pointer.
// EXPECT: a device function cannot return a struct
#include "ember/ember.h"
using namespace ember;
struct View { Ptr<float> data; Int n; };
EMBER_STRUCT(View, data, n)
auto shrink = device_function("shrink", [](View v) { return View{v.data, v.n - 1}; });
