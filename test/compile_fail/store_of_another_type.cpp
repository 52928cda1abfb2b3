// Storing an Int into a Ptr<int32_t> element needs an explicit cast.
// EXPECT: operands of a DSL operator have different types
// EXPECT: mismatched_operand_types<int, long int>
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<int32_t> v, Int n) { v[0] = n; });
