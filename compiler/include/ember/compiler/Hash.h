/// \file
/// Content hashes of kernels: equal for kernels that print identically, and only for those.
#ifndef EMBER_COMPILER_HASH_H
#define EMBER_COMPILER_HASH_H

#include "ember/compiler/IR.h"

#include <string>

namespace ember::ir {

/// SHA-256 of the canonical textual form, as 64 lower-case hex digits. Independent of node
/// addresses and of the process: the same kernel hashes the same in every run.
std::string content_hash(const Kernel &k);

} // namespace ember::ir

#endif // EMBER_COMPILER_HASH_H
