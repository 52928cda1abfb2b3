/// \file
/// The preload list: which device images (cubins) a program used in its last run, so that its
/// next run loads them into the new context in the background ([Note] Preload).
///
/// [Note] Preload
/// ==============
/// A warm process spends most of its per-kernel time in the driver: cuModuleLoadDataEx and
/// cuModuleGetFunction of the cached cubin, about 35 us per kernel on the H200, and 2 to 3 times
/// that for the first module after the context is made. Those loads need the context, and the
/// kernel's trace and key need the user's thread, so they can run side by side:
/// - In a process's first CUDA context, the image cache ([Note] Image cache) records each cubin
///   it loads or links (key digest, arch, driver, entry symbol) in first-use order. When it is destroyed, if that list differs from
///   the one read at the start, it stores it in the disk cache as the entry of kind "preload"
///   whose key is the hash of the executable's path (so a list is per program, versioned,
///   checksummed, written atomically and evicted like any entry).
/// - Every CUDA context is made on a helper thread while the user's thread warms the tracer
///   ([Note] Warm start). For the first one of a process, the user's thread also reads the list
///   and the listed cubins from disk (entries that are gone are skipped). Once the context exists, the helper, still
///   warm from making it, loads the listed cubins of this device's arch and driver, in order,
///   while the constructor returns and the user's thread traces its first kernels.
/// - A kernel whose cubin key is in the list takes the preloaded function (waiting if the helper
///   is loading it right now; loading it itself if the helper has not reached it). Its lookup is
///   logged and counted as a disk hit, "level=disk-cubin preloaded". A key not in the list, or
///   a preload that failed, goes the usual way: nothing the user sees changes but the time.
/// - The list is consulted only while the compile cache uses the disk cache it was read from
///   (a test that swaps the directory sees no preloaded kernel), never with EMBER_DISABLE_CACHE,
///   and not with EMBER_PRELOAD=0 (no list is read or written then). Later contexts of the process do not preload (they find the
///   cubins in the memory level). Modules preloaded for kernels the run never uses stay loaded
///   until the context goes (a few KiB each; at most kMaxPreload of them).
/// - Destroying the context stops the helper between two loads and joins it first.
#ifndef EMBER_RUNTIME_PRELOAD_H
#define EMBER_RUNTIME_PRELOAD_H

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::detail {

class DiskCache;

/// One device image a program used.
struct PreloadItem {
    std::string digest; ///< the image's cache key digest (64 hex digits)
    std::string arch;   ///< "sm_90"
    std::string driver; ///< the driver version, "13000"
    std::string symbol; ///< the kernel's entry symbol

    bool operator==(const PreloadItem &) const = default;
};

/// The most images a list holds (a run that used more keeps its first kPreloadMax).
inline constexpr size_t kMaxPreload = 256;
/// The disk cache kind of preload lists.
inline constexpr std::string_view kPreloadKind = "preload";

/// The list's text: a header line "ember-preload 1", then one line per item, its four fields
/// separated by spaces.
std::string format_preload_list(const std::vector<PreloadItem> &items);
/// The items of a list's text; nullopt when the header is not ours or a line is malformed (a
/// digest not 64 hex digits, a field missing or holding a space or control character).
std::optional<std::vector<PreloadItem>> parse_preload_list(std::string_view text);
/// The disk cache key of this program's list: SHA-256 of the executable's path.
std::string preload_list_key();
/// Whether preloading is on: EMBER_PRELOAD unset or anything but "0", "false", "off", "no".
bool preload_enabled();

/// A list read at a process's start, with the images' bytes (null where the entry is gone).
struct PreloadPlan {
    DiskCache *disk = nullptr;
    std::vector<PreloadItem> items;
    std::vector<std::shared_ptr<const std::string>> bytes; ///< parallel to items
};
/// Reads this program's list and its images (of disk cache kind `kind`) from `disk`; an empty
/// plan when there is none.
PreloadPlan read_preload_plan(DiskCache &disk, std::string_view kind);
/// Stores `items` (the first kMaxPreload) as this program's list in `disk`.
void write_preload_list(DiskCache &disk, const std::vector<PreloadItem> &items);

} // namespace ember::detail

#endif // EMBER_RUNTIME_PRELOAD_H
