// ember's headers are C++20: an older -std fails first with ember/CompilerCheck.h's one message
// (before the errors from concepts and std::source_location deeper in the headers).
// FLAGS: -std=c++17
// EXPECT: ember's headers are C++20: compile with -std=c++20
#include "ember/ember.h"
int main() { return 0; }
