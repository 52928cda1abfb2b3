/// \file
/// The compile cache: one compile per (canonical IR, target, code-affecting options,
/// versions) per process, shared by every context of a target, backed by the disk cache.
///
/// [Note] Compile cache
/// - Levels: memory (this process, process-wide, by key digest), disk (DiskCache, kind "ptx" or
///   "cpu-obj"), compiled (LLVM ran). A back end with device images (NVIDIA: the cubin linked for
///   the exact device) has two more, asked first: memory-cubin and disk-cubin. Their key is the
///   artefact's key plus the driver version and the device arch (image_key), so a warm
///   process goes from the traced IR straight to the cubin: no PTX is read, hashed or JIT'ed.
/// - Key components (CacheKey, the compiler's ArtefactKey): everything that changes the bytes compiled. The SHA-256 of the
///   canonical printed IR (two traces of one lambda print alike; computed once per traced
///   kernel, KernelInfo::ir_hash); the target spec string (for messages and logs) and the target
///   machine (target_cache_key: triple, processor and features with defaults resolved, so that
///   `cpu` names this host's processor and features, and a cache shared between machines never
///   hands one machine's code to another); the options that change the code (the opt level;
///   the keep_* stage texts and dump flags do not); the ember version (project version + cache
///   format number); the compiler's build identity (compiler_build_id(), [Note] Compiler build
///   identity: any change to compiler/'s sources, the C++ compiler, flags or LLVM gives new keys);
///   the LLVM version. An image key adds the driver version and the device's sm arch (ember
///   passes the CUDA linker no option that changes the code; one that did would belong in the
///   image key). The components are kept, not only the digest, so that a miss names what changed.
///   Per lookup the key costs the IR hash (once per traced kernel), one memoized map lookup for
///   the target machine, and the digest; the versions and the build identity are constants.
/// - Thread safety: one mutex around the maps; a compile runs outside it, and a second thread
///   asking for a key being compiled waits for that compile (std::shared_future) instead of
///   compiling again. A failed compile is not cached (its waiters get the same exception).
/// - Counting and EMBER_LOG=cache: every compile of a kernel for a context is one lookup, answered
///   by one level and logged as one line, "cache hit|cache miss kernel=<name> target=<spec>
///   key=<12 hex of the artefact key> level=<memory-cubin|disk-cubin|memory|disk|compiled>", and
///   on a miss for a kernel name seen with another key, "changed: <components>". Before the
///   first, once per process: "ember <version>, compiler build <12 hex>, LLVM <version>". An image miss is
///   not a line of its own: the artefact lookup that follows it is.
/// - The constants warning: when one kernel name was compiled for kConstantsWarnAfter keys that
///   differ only in the IR, and only in numeric literals (IR text with literals masked is equal),
///   one warning on stderr advises passing the values as kernel arguments.
/// - EMBER_DUMP set: lookups bypass the cache (the compiler must run to write the dumps).
///
/// [Note] Launch slot
/// enqueue_function(kernel, ...) first reads KernelInfo::launch_slot (one acquire load): when it
/// names this context (same address and the weak pointer not expired, so not a new context at
/// a dead one's address), its function is used: no lock, no map, no shared_ptr copy, no
/// allocation, no hashing. Otherwise compile_cached_slow looks up the context's map (compiling
/// through CompileCache on a miss) and publishes a slot for this context. Slots are created once
/// per (kernel, context) and kept until the KernelInfo dies, so a reader never sees a freed one.
#ifndef EMBER_RUNTIME_COMPILECACHE_H
#define EMBER_RUNTIME_COMPILECACHE_H

#include "ember/compiler/Compiler.h"
#include "ember/compiler/KernelBuild.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ember::detail {

struct KernelInfo;
class DiskCache;
namespace timeline {
class CacheLookup;
}

/// Distinct constant-only variants of one kernel name before the constants warning.
inline constexpr int kConstantsWarnAfter = 8;

/// The key of an artefact or of a device image: the compiler's ([Note] One compile call).
using CacheKey = ArtefactKey;

/// The key of `k` compiled for `target` with `options`.
CacheKey make_cache_key(const ir::Kernel &k, const TargetSpec &target, const CompileOptions &options);
/// The same for a traced kernel, whose IR hash is computed once and kept (KernelInfo::ir_hash).
CacheKey make_cache_key(const KernelInfo &k, const TargetSpec &target, const CompileOptions &options);
/// Whether a compile with `options` may use the cache: not when stage texts are kept or
/// EMBER_DUMP asks for dumps (the compiler must run to produce them).
bool cacheable(const CompileOptions &options);
/// `ir_text` with every numeric literal replaced by '#' (for the constants warning).
std::string mask_numeric_literals(std::string_view ir_text);

class CompileCache {
public:
    /// The process's cache (disk level: DiskCache::instance()).
    static CompileCache &instance();

    /// The artefact of `k` for `target`: from memory, else from disk, else compiled (once per
    /// key in this process, then stored in both levels). Throws what ember::compile throws.
    /// `level`, when given, is set to the level that answered: "memory", "disk" or "compiled".
    std::shared_ptr<const CompiledKernel> get(const KernelInfo &k, const TargetSpec &target,
                                              const CompileOptions &options = {}, const char **level = nullptr);

    /// The device image (kind "cubin") of key `image` (image_key of the artefact key `base`)
    /// from memory, else from disk; null on a miss. A hit is the lookup of kernel `name`: counted,
    /// logged with `base`'s key, and `level` set to "memory-<kind>" or "disk-<kind>". A miss is
    /// neither: the artefact's lookup (get) follows it.
    std::shared_ptr<const std::string> find_image(const CacheKey &base, const CacheKey &image, std::string_view kind,
                                                  std::string_view name, const char **level = nullptr);
    /// Counts and logs, as find_image's disk hit does, the lookup of kernel `name` that a
    /// preloaded image answered ([Note] Preload): "level=disk-<kind> preloaded"; keeps `bytes`
    /// (when given) as the memory level's image of key `image`.
    void note_preloaded_image(const CacheKey &base, const CacheKey &image, std::string_view kind,
                              std::string_view name, std::shared_ptr<const std::string> bytes,
                              const char **level = nullptr);
    /// Keeps `bytes` as the image of key `image` in memory and on disk.
    void store_image(const CacheKey &image, std::string_view kind, std::shared_ptr<const std::string> bytes);

    /// Test hooks: forget the memory level (artefacts and images); replace the disk level (nullptr: no disk).
    void clear_memory();
    void set_disk_for_testing(DiskCache *disk);
    void reset_disk_to_default();
    DiskCache *disk() const;

    /// Counters (for tests and benchmarks): lookups answered by each level.
    uint64_t memory_hits() const { return memory_hits_.load(); }
    uint64_t disk_hits() const { return disk_hits_.load(); }
    uint64_t compiles() const { return compiles_.load(); }

    CompileCache();
    ~CompileCache();
    CompileCache(const CompileCache &) = delete;
    CompileCache &operator=(const CompileCache &) = delete;

private:
    struct State;
    /// get(), with the disk level's calls timed for the timeline when `timed` is given.
    std::shared_ptr<const CompiledKernel> find(const KernelInfo &k, const TargetSpec &target,
                                               const CompileOptions &options, const char **level,
                                               timeline::CacheLookup *timed);
    void note_variant(const KernelInfo &k, const CacheKey &key);
    /// The bookkeeping of an image hit of kernel `name` at `where` ("memory", "disk"): `level`
    /// set, the name's last key kept, the EMBER_LOG=cache line (with `note` appended, if any).
    void note_image_hit(const CacheKey &base, std::string_view kind, std::string_view name, const char *where,
                        const char **level, const char *note);
    /// "memory-<kind>" / "disk-<kind>" with static storage.
    const char *image_level(const char *where, std::string_view kind);
    std::unique_ptr<State> state_;
    std::atomic<uint64_t> memory_hits_{0}, disk_hits_{0}, compiles_{0};
};

} // namespace ember::detail

#endif // EMBER_RUNTIME_COMPILECACHE_H
