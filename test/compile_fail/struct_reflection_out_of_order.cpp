// EMBER_STRUCT must list the fields in declaration order: two fields of one type listed the other
// way round would otherwise be swapped silently.
// EXPECT: EMBER_STRUCT must list the fields of the struct in declaration order
// EXPECT: ember::StructType<Box>
#include "ember/ember.h"
using namespace ember;
struct Box { Int width; Int height; };
EMBER_STRUCT(Box, height, width)
auto k = kernel("k", [](Ptr<int64_t> out, Box b) { out[0] = b.width * b.height; });
