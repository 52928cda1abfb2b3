// A kernel's struct parameter whose field is a plain int instead of a DSL type (Int).
// EXPECT: a field of a struct parameter must be a DSL type
// EXPECT: ember::StructType<View>, ember::FieldName<ember::detail::FixedString<2>{"n"}>, ember::FieldType<int>
#include "ember/ember.h"
using namespace ember;
struct View { Ptr<float> data; int n; };
EMBER_STRUCT(View, data, n)
auto k = kernel("k", [](View v) { v.data[0] = 1.0f; });
