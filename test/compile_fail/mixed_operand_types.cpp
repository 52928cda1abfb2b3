// Traced operands of different types need an explicit cast.
// EXPECT: operands of a DSL operator have different types
// EXPECT: mismatched_operand_types<int, long int>
#include "ember/ember.h"
using namespace ember;
auto k = kernel("k", [](Ptr<int32_t> v, Int32 a, Int b) { v[0] = cast<int32_t>(a + b); });
