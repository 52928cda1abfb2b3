/// \file
/// The on-disk half of the compile cache: a directory of entries, each the bytes of one
/// artefact (PTX, a CPU object, a cubin) under a key the caller computed (a hex digest of
/// everything that affects the bytes: see CompileCache). This layer knows nothing of kernels: it
/// stores and returns bytes, safely.
///
/// [Note] Disk cache entries
/// - Location: $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else $HOME/.cache/ember.
///   EMBER_DISABLE_CACHE=1 turns the disk cache off (DiskCache::instance() is null then).
/// - One file per entry, named from the key and the kind. It starts with a versioned header
///   (magic, format version, kind, key, payload size, payload checksum), then the payload.
/// - Writes go to a temporary file in the same directory, are flushed, then renamed over the
///   entry: a reader sees a whole entry or none. Several processes may store the same key at
///   once: the last rename wins, and every version is whole and equal.
/// - A load checks the header, the key, the size and the checksum. A corrupt, truncated or
///   foreign entry is a miss with a warning (one line on stderr saying which file and what is
///   wrong); the entry is removed, so the caller recompiles and stores a good one. Never a crash,
///   never wrong bytes.
/// - Size cap: EMBER_CACHE_MAX_BYTES (default 1 GiB; suffixes K, M, G accepted). After a store
///   that takes the directory over the cap, the least recently used entries (by access time the
///   cache itself maintains, e.g. touching the file's mtime on every hit) are removed until it
///   fits.
/// The implementation (DiskCache.cpp) and docs/cache.md "Disk cache" give the byte layout and
/// the reasons behind each choice.
#ifndef EMBER_RUNTIME_DISKCACHE_H
#define EMBER_RUNTIME_DISKCACHE_H

#include "ember/compiler/KernelBuild.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ember::detail {

class DiskCache final : public ArtefactStore {
public:
    /// The process's disk cache, configured from the environment at the first call; null when
    /// EMBER_DISABLE_CACHE=1 or when the directory cannot be created (a one-line warning then).
    static DiskCache *instance();
    /// A cache configured from the environment as it is now (instance() calls this once; tests
    /// call it after setenv). Null when disabled or when the directory cannot be created, with a
    /// one-line warning in the second case; a malformed EMBER_CACHE_MAX_BYTES is a warning and the
    /// default (kDefaultMaxBytes).
    static std::unique_ptr<DiskCache> from_environment();

    static constexpr uint64_t kDefaultMaxBytes = uint64_t(1) << 30;
    /// The longest key and kind accepted (file names stay far below NAME_MAX with the temporary
    /// suffix).
    static constexpr size_t kMaxKeyLength = 160;
    static constexpr size_t kMaxKindLength = 32;
    /// Version of the entry format, written in every header; an entry of another version is
    /// reported and removed like a corrupt one.
    static constexpr uint32_t kFormatVersion = 1;
    /// Bytes of the fixed part of the header (the kind and key follow it, then the payload).
    static constexpr size_t kHeaderFixedBytes = 40;

    /// A cache in `dir` with a cap of `max_bytes` (tests; instance() uses the environment).
    DiskCache(std::filesystem::path dir, uint64_t max_bytes);

    /// The payload stored under (key, kind), or nullopt on a miss. `kind` is a short token such as
    /// "ptx", "cpu-obj", "cubin" (part of the file name). A bad entry is reported, removed, and a
    /// miss.
    std::optional<std::string> load(std::string_view key, std::string_view kind) override;
    /// Stores `payload` under (key, kind), replacing any entry; then evicts to the cap. Failures
    /// (disk full, permissions) are a one-line warning, never an exception: the cache is an
    /// optimisation.
    void store(std::string_view key, std::string_view kind, std::string_view payload) override;
    /// Removes the entry (key, kind); whether there was one. Same validation as load.
    bool remove(std::string_view key, std::string_view kind);
    /// The file of entry (key, kind): `<directory>/<key>.<kind>`. LogicError when the key or the
    /// kind is empty, too long or not made of [0-9a-zA-Z_-].
    std::filesystem::path entry_path(std::string_view key, std::string_view kind) const;

    const std::filesystem::path &directory() const { return dir_; }
    uint64_t max_bytes() const { return max_bytes_; }
    /// Total bytes of the entries now in the directory.
    uint64_t size_bytes() const;

private:
    /// Removes the least recently used entries, sparing the file named `keep`, until the
    /// directory fits max_bytes_.
    void evict(const std::string &keep);

    std::filesystem::path dir_;
    uint64_t max_bytes_;
};

/// Parses EMBER_CACHE_MAX_BYTES-style sizes ("1073741824", "512M", "2G"); nullopt when malformed.
/// Accepted: decimal digits, then optionally K, M, G or T (binary multiples, any case), optionally
/// followed by "B" or "iB"; no spaces, no fractions; overflow of 64 bits is malformed.
std::optional<uint64_t> parse_byte_size(std::string_view text);

/// The checksum of entry payloads: XXH64 with seed 0 (the algorithm of xxHash, written here: no
/// dependency). Eight bytes at a time: a cubin of 10 KB costs about 2 µs.
uint64_t checksum64(std::string_view bytes) noexcept;

} // namespace ember::detail

#endif // EMBER_RUNTIME_DISKCACHE_H
