// EMBER_STRUCT must list every field: 'n' is missing (a silently unpassed field would be a bug).
// EXPECT: EMBER_STRUCT must list every field of the struct
// EXPECT: ember::StructType<View>, ember::ListedFields<1>
#include "ember/ember.h"
using namespace ember;
struct View { Ptr<float> data; Int n; };
EMBER_STRUCT(View, data)
auto k = kernel("k", [](View v) { v.data[0] = 1.0f; });
