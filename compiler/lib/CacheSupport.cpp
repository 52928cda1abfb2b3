#include "ember/compiler/CacheSupport.h"

#include "ember/compiler/Verifier.h"

#include "ember/compiler/Sha256.h"

namespace ember {

namespace detail {
uint64_t kernel_local_bytes(const ir::Kernel &k); // Compiler.cpp
}

std::string ember_version() { return EMBER_VERSION_STRING; }

std::string sha256_hex(std::string_view bytes) { return Sha256::hex(bytes); }

CompiledKernel compiled_from_binary(const ir::Kernel &k, const TargetSpec &target, std::string binary,
                                    bool verify) {
    if (verify) ir::verify_or_throw(k);
    CompiledKernel out;
    out.kernel_name = k.name;
    out.entry_symbol = k.name;
    out.constants = ir::constant_globals(k);
    out.target = target;
    out.binary = std::move(binary);
    out.local_bytes = detail::kernel_local_bytes(k);
    return out;
}

} // namespace ember
