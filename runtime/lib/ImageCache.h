/// \file
/// The image cache: the compile cache's device-image levels and the preload, above the back
/// ends ([Note] Image cache).
///
/// [Note] Image cache
/// ==================
/// A back end whose driver links a portable artefact (PTX today, an AMDGPU code object next)
/// into an image for the exact device keeps those images so that a warm process loads the image
/// and never reads, hashes or links the artefact again ([Note] Compile cache). The policy is one
/// for every such back end and lives here; the back end answers four narrow questions
/// (ImageHooks): which kind of image it makes and what decides it besides the artefact (the
/// device's arch, the driver's version), how to link an artefact into an image, and how to load
/// an image's bytes and find a kernel in it.
/// - DeviceContext asks load() first, with the artefact's key and the kernel's names: a preloaded
///   image, else the compile cache's memory or disk level (CompileCache::find_image). On a miss it
///   gets the artefact (CompileCache::get) and asks link_and_load(), which links, keeps the image
///   in both levels (CompileCache::store_image) and loads it; where that fails (no linker, a
///   driver that refuses), the back end's own load() of the artefact reports the error with the
///   JIT's log.
/// - The preload ([Note] Preload in Preload.h): set_preload() keeps the program's listed images
///   made for this device and driver; run_preload() loads them, in order, on the thread that
///   made the back end; load() takes a preloaded function (waiting while it is being loaded,
///   loading it itself when the preload has not reached it). Every image loaded or linked in the
///   program's first context is recorded (first use, in order); finish() stores the list when it
///   changed.
/// - The owner calls stop() before joining the preloading thread, then finish(), both before
///   the hooks go away.
/// ImageCacheTest runs the policy over a fake back end on any machine; the CUDA tests
/// (PreloadTest, CompileCacheTest's cubin levels) run it over the driver.
#ifndef EMBER_RUNTIME_IMAGECACHE_H
#define EMBER_RUNTIME_IMAGECACHE_H

#include "Backend.h"
#include "CompileCache.h"
#include "Preload.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember::detail {

/// What a back end with device images answers the image cache.
class ImageHooks {
public:
    virtual ~ImageHooks() = default;
    /// The disk cache kind of this back end's images ("cubin").
    virtual std::string_view image_kind() const = 0;
    /// The device's arch ("sm_90") and the driver's version ("13000"): with the artefact's key,
    /// what decides an image.
    virtual std::string image_arch() const = 0;
    virtual std::string image_driver() const = 0;
    /// The image of `k`'s artefact for this device; nullopt on any failure (the back end's
    /// load() of the artefact then reports it). `info_log` receives the linker's log (for the
    /// compile report: registers, spills).
    virtual std::optional<std::string> link_image(const CompiledKernel &k, std::string &info_log) = 0;
    /// The kernel `symbol` of a module loaded from `bytes`; null when the driver refuses the
    /// image or, for the preload (`k` null), when the symbol is missing. With `k`, a missing
    /// symbol is an error naming k's kernel.
    virtual std::unique_ptr<LoadedFunction> load_image_bytes(const std::string &bytes, const std::string &symbol,
                                                             const CompiledKernel *k) = 0;
};

class ImageCache {
public:
    explicit ImageCache(ImageHooks &hooks) : hooks_(hooks) {}
    ImageCache(const ImageCache &) = delete;
    ImageCache &operator=(const ImageCache &) = delete;

    /// The image key of the artefact key `base` on this device.
    CacheKey image_key_of(const CacheKey &base) const;

    /// The kernel whose artefact has key `base`, from a preloaded image or one of the compile
    /// cache's image levels; null on a miss. `meta` is the kernel's CompiledKernel without its
    /// binary (names). Sets `level` on a hit ("memory-cubin", "disk-cubin").
    std::unique_ptr<LoadedFunction> load(const CacheKey &base, const CompiledKernel &meta, const char **level);

    /// Links `k`'s artefact (key `base`) into an image, keeps it in the compile cache and loads
    /// it; null where any step fails. The linker's log becomes the function's jit_info_log.
    std::unique_ptr<LoadedFunction> link_and_load(const CompiledKernel &k, const CacheKey &base);

    /// Makes this the program's first context ([Note] Preload): keeps the images of `plan` made
    /// for this device and driver for run_preload, and records the images used from now on.
    void set_preload(const PreloadPlan &plan);
    /// Loads the images set_preload kept, in order, on the calling thread; returns when done or
    /// when stop() asks. A failure leaves that kernel to the usual path.
    void run_preload();
    /// Asks run_preload to return before its next image.
    void stop();
    /// Unloads the preloaded functions no kernel took and, in the program's first context,
    /// stores the images used as the program's list when it changed and the compile cache still
    /// uses the disk cache the list was read from. Never throws.
    void finish() noexcept;

private:
    /// A preloaded function of image `digest` for kernel `k` (its entry symbol), as run_preload
    /// left it; null when there is none (or it failed, or was taken). `bytes` receives the
    /// image's bytes.
    std::unique_ptr<LoadedFunction> take_preloaded(const std::string &digest, const CompiledKernel &k,
                                                   std::shared_ptr<const std::string> &bytes);
    /// Records that the image `digest` was used (first use only), in the program's first context.
    void record_use(const std::string &digest, const std::string &symbol);

    ImageHooks &hooks_;
    /// An image of the program's list, as run_preload loads it.
    struct Preloaded {
        std::string digest, symbol;
        std::shared_ptr<const std::string> bytes;
        enum State { Pending, Loading, Loaded, Failed, Taken } state;
        std::unique_ptr<LoadedFunction> fn; ///< Loaded: the module and its kernel
    };
    std::mutex mutex_; ///< guards everything below
    std::condition_variable cv_;
    std::vector<Preloaded> preload_;
    std::unordered_map<std::string, size_t> preload_index_; ///< digest -> preload_ index
    DiskCache *preload_disk_ = nullptr;                      ///< where the list and images came from
    bool stop_ = false;
    /// The program's first context: records the images it uses (first use, in order).
    bool program_context_ = false;
    std::vector<PreloadItem> list_as_read_, used_;
    std::unordered_set<std::string> used_digests_;
};

} // namespace ember::detail

#endif // EMBER_RUNTIME_IMAGECACHE_H
