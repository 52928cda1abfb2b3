/// \file
/// Content hashes of kernels: SHA-256 of the canonical textual form.
#include "ember/compiler/Hash.h"

#include "ember/compiler/IRPrinter.h"

#include "ember/compiler/Sha256.h"

namespace ember::ir {

std::string content_hash(const Kernel &k) {
    return Sha256::hex(print(k));
}

} // namespace ember::ir
