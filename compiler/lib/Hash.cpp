/// \file
/// Content hashes of kernels: SHA-256 of the canonical textual form.
#include "ember/compiler/Hash.h"

#include "ember/compiler/IRPrinter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <array>

namespace ember::ir {

std::string content_hash(const Kernel &k) {
    std::string text = print(k);
    llvm::SHA256 sha;
    sha.update(llvm::StringRef(text));
    std::array<uint8_t, 32> digest = sha.final();
    return llvm::toHex(digest, /*LowerCase=*/true);
}

} // namespace ember::ir
