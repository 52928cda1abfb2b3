/// \file
/// The one question the runtime asks the compiler about a kernel: what is its artefact for this
/// target, under which key, and what does it need at run time ([Note] One compile call).
///
/// [Note] One compile call
/// =======================
/// The runtime (runtime/lib/CompileCache.cpp, DeviceContext.cpp) holds the memory level of the
/// compile cache, the device images and the back ends; everything about the kernel itself is the
/// compiler's: the key of its artefact (artefact_key: the IR hash, the target machine, the
/// options, the versions and the compiler's build identity), its verification, its resource
/// figures (CompiledKernel::local_bytes and static_shared_bytes) and the artefact, compiled or
/// read from the store it is given (build_kernel). A device image (a cubin) is found by
/// image_key, and a kernel loaded from one is described by compiled_from_binary (CacheSupport.h)
/// without its artefact. The store is an interface the runtime's disk cache implements: the
/// compiler never sees files.
#ifndef EMBER_COMPILER_KERNELBUILD_H
#define EMBER_COMPILER_KERNELBUILD_H

#include "ember/compiler/Compiler.h"

#include <optional>
#include <string>
#include <string_view>

namespace ember {

/// Bumped when the format of cached artefacts or of the key changes.
inline constexpr int kArtefactFormatVersion = 2;

/// What an artefact is stored under: every input that changes its bytes ([Note] Compile cache in
/// runtime/lib/CompileCache.h says why each is there). The components are kept, not only the
/// digest, so that a miss names what changed.
struct ArtefactKey {
    std::string ir;             ///< SHA-256 of the canonical printed IR (ir::content_hash)
    std::string target;         ///< TargetSpec::to_string()
    std::string target_machine; ///< target_cache_key(): triple;processor;features
    std::string options;        ///< code-affecting options, e.g. "O3"
    std::string ember_version;  ///< "0.1.0+f2": project version + kArtefactFormatVersion
    std::string build;          ///< compiler_build_id()
    std::string llvm_version;   ///< ember::llvm_version()
    std::string driver;         ///< image keys only: the driver version
    std::string arch;           ///< image keys only: the device's arch
    std::string digest;         ///< SHA-256 over all of the above (the disk file name)

    std::string short_digest() const { return digest.substr(0, 12); }
};

/// The key of a kernel whose canonical IR hashes to `ir_hash` (ir::content_hash), compiled for
/// `target` with `options`.
ArtefactKey artefact_key(std::string ir_hash, const TargetSpec &target, const CompileOptions &options);
/// `base` (an artefact key) plus the driver version and the device's arch: the key of the device
/// image made from that artefact on such a device (a cubin).
ArtefactKey image_key(const ArtefactKey &base, std::string_view driver, std::string_view arch);
/// SHA-256 over every component of `key` (what ArtefactKey::digest holds).
std::string key_digest(const ArtefactKey &key);
/// The components that differ between `a` and `b`, comma-separated ("IR, options"); empty if none.
std::string changed_components(const ArtefactKey &a, const ArtefactKey &b);
/// Test hook: keys made from now on name `build` as the compiler's build identity instead of
/// compiler_build_id(), as a rebuilt compiler would; empty returns to this build's.
void set_build_id_for_testing(std::string build);

/// The kind artefacts for `target` are stored as: "ptx", "cpu-obj" or "amdgpu-obj".
std::string_view artefact_kind(const TargetSpec &target);

/// Where artefacts outlive the process: the runtime's disk cache implements it.
class ArtefactStore {
public:
    virtual ~ArtefactStore() = default;
    /// The bytes stored under `digest` and `kind`; nullopt when there are none (or unreadable).
    virtual std::optional<std::string> load(std::string_view digest, std::string_view kind) = 0;
    virtual void store(std::string_view digest, std::string_view kind, std::string_view bytes) = 0;
};

/// A kernel's artefact with everything the runtime needs of it.
struct KernelBuild {
    /// The artefact, entry symbol, constants and resource figures (and, when compiled now, the
    /// time of each stage and the stage texts the options asked for).
    CompiledKernel kernel;
    /// True when LLVM ran; false when the artefact came from the store.
    bool compiled = false;
};

/// The artefact of `k` for `target` under `key` (artefact_key of `k`, `target` and `options`):
/// read from `store` when it has it (the kernel is verified first unless `verified`, so that a
/// store never makes the compiler accept IR it would reject), else compiled and stored there.
/// Throws what `compile` throws.
KernelBuild build_kernel(const ir::Kernel &k, const ArtefactKey &key, const TargetSpec &target,
                         const CompileOptions &options, ArtefactStore *store, bool verified);

} // namespace ember

#endif // EMBER_COMPILER_KERNELBUILD_H
