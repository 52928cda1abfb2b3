#include "ember/compiler/CacheSupport.h"
#include "ember/Version.h"

#include "ember/compiler/Verifier.h"

#include "ember/compiler/Sha256.h"
#include "targets/TargetImpl.h"

#include <mutex>
#include <unordered_map>

namespace ember {

namespace detail {
/// A verified kernel's CompiledKernel without the binary: names, constants, resource figures
/// (Compiler.cpp, where `compile` makes the same).
CompiledKernel kernel_description(const ir::Kernel &k, const TargetSpec &target);
}

std::string ember_version() { return EMBER_VERSION_STRING; }

std::string sha256_hex(std::string_view bytes) { return Sha256::hex(bytes); }

namespace {
std::mutex target_keys_mutex;
std::unordered_map<std::string, std::string> target_keys; // spec string -> its cache_key()
} // namespace

std::string target_cache_key(const TargetSpec &target) {
    const std::string spec = target.to_string();
    {
        std::lock_guard<std::mutex> lock(target_keys_mutex);
        auto it = target_keys.find(spec);
        if (it != target_keys.end()) return it->second;
    }
    std::string key;
    // Not validated: a processor or feature LLVM does not know gets a key like any other, but
    // compiling for it throws, so no entry is ever stored under it.
    if (auto t = detail::create_target(target, /*validate=*/false)) {
        key = (*t)->cache_key();
        switch (detail::forced_matrix_path()) {
        case MatrixPath::native: break;
        case MatrixPath::shuffles: key += ";matrix-shuffles"; break;
        case MatrixPath::blocks: key += ";matrix-blocks"; break;
        case MatrixPath::blocks_k2: key += ";matrix-blocks-k2"; break;
        }
    } else {
        llvm::consumeError(t.takeError());
        key = "unavailable:" + spec;
    }
    std::lock_guard<std::mutex> lock(target_keys_mutex);
    return target_keys.emplace(spec, std::move(key)).first->second;
}

void set_host_cpu_for_testing(std::string name, std::string features) {
    std::lock_guard<std::mutex> lock(target_keys_mutex);
    target_keys.clear(); // `cpu` resolves to another processor now
    if (name.empty())
        detail::set_host_cpu_override(std::nullopt);
    else
        detail::set_host_cpu_override(detail::HostCpu{std::move(name), std::move(features)});
}

void set_matrix_path_for_testing(MatrixPath path) {
    std::lock_guard<std::mutex> lock(target_keys_mutex);
    target_keys.clear();
    detail::force_matrix_path(path);
}

CompiledKernel compiled_from_binary(const ir::Kernel &k, const TargetSpec &target, std::string binary,
                                    bool verify) {
    if (verify) ir::verify_or_throw(k);
    CompiledKernel out = detail::kernel_description(k, target);
    out.binary = std::move(binary);
    return out;
}

} // namespace ember
