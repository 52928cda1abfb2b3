#include "ImageCache.h"

#include "DiskCache.h"

#include <chrono>
#include <utility>

namespace ember::detail {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

CacheKey ImageCache::image_key_of(const CacheKey &base) const {
    return image_key(base, hooks_.image_driver(), hooks_.image_arch());
}

std::unique_ptr<LoadedFunction> ImageCache::load(const CacheKey &base, const CompiledKernel &meta, const char **level) {
    const auto start = std::chrono::steady_clock::now();
    const CacheKey image = image_key_of(base);
    const std::string_view kind = hooks_.image_kind();
    std::shared_ptr<const std::string> bytes;
    std::unique_ptr<LoadedFunction> fn = take_preloaded(image.digest, meta, bytes);
    if (fn) {
        CompileCache::instance().note_preloaded_image(base, image, kind, meta.kernel_name, std::move(bytes), level);
    } else {
        std::shared_ptr<const std::string> cached = CompileCache::instance().find_image(base, image, kind, meta.kernel_name, level);
        if (!cached) return nullptr;
        fn = hooks_.load_image_bytes(*cached, meta.entry_symbol, &meta);
        if (!fn) return nullptr;
    }
    fn->load_seconds = seconds_since(start);
    record_use(image.digest, meta.entry_symbol);
    return fn;
}

std::unique_ptr<LoadedFunction> ImageCache::link_and_load(const CompiledKernel &k, const CacheKey &base) {
    const auto start = std::chrono::steady_clock::now();
    std::string info_log;
    std::optional<std::string> linked = hooks_.link_image(k, info_log);
    if (!linked) return nullptr;
    auto bytes = std::make_shared<const std::string>(std::move(*linked));
    std::unique_ptr<LoadedFunction> fn = hooks_.load_image_bytes(*bytes, k.entry_symbol, &k);
    if (!fn) return nullptr;
    const CacheKey image = image_key_of(base);
    CompileCache::instance().store_image(image, hooks_.image_kind(), std::move(bytes));
    record_use(image.digest, k.entry_symbol);
    fn->load_seconds = seconds_since(start);
    fn->jit_info_log = std::move(info_log);
    return fn;
}

void ImageCache::set_preload(const PreloadPlan &plan) {
    const std::string arch = hooks_.image_arch(), driver = hooks_.image_driver();
    std::lock_guard<std::mutex> lock(mutex_);
    program_context_ = true;
    list_as_read_ = plan.items;
    preload_disk_ = plan.disk;
    for (size_t i = 0; i < plan.items.size(); ++i) {
        const PreloadItem &item = plan.items[i];
        if (i >= plan.bytes.size() || !plan.bytes[i] || item.arch != arch || item.driver != driver ||
            preload_index_.count(item.digest))
            continue;
        preload_index_.emplace(item.digest, preload_.size());
        preload_.push_back(Preloaded{item.digest, item.symbol, plan.bytes[i], Preloaded::Pending, nullptr});
    }
}

void ImageCache::run_preload() {
    for (size_t i = 0;; ++i) {
        std::shared_ptr<const std::string> bytes;
        std::string symbol;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stop_ || i >= preload_.size()) return;
            if (preload_[i].state != Preloaded::Pending) continue;
            preload_[i].state = Preloaded::Loading;
            bytes = preload_[i].bytes;
            symbol = preload_[i].symbol;
        }
        std::unique_ptr<LoadedFunction> fn;
        try {
            fn = hooks_.load_image_bytes(*bytes, symbol, nullptr);
        } catch (...) { // a preload that fails leaves the kernel to the usual path
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            preload_[i].state = fn ? Preloaded::Loaded : Preloaded::Failed;
            preload_[i].fn = std::move(fn);
        }
        cv_.notify_all();
    }
}

void ImageCache::stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
}

std::unique_ptr<LoadedFunction> ImageCache::take_preloaded(const std::string &digest, const CompiledKernel &k,
                                                           std::shared_ptr<const std::string> &bytes) {
    const std::string &symbol = k.entry_symbol;
    std::unique_lock<std::mutex> lock(mutex_);
    if (preload_.empty()) return nullptr;
    auto it = preload_index_.find(digest);
    if (it == preload_index_.end()) return nullptr;
    Preloaded &p = preload_[it->second];
    if (p.symbol != symbol) return nullptr;
    cv_.wait(lock, [&] { return p.state != Preloaded::Loading; });
    if (p.state == Preloaded::Failed || p.state == Preloaded::Taken) return nullptr;
    DiskCache *from = preload_disk_;
    lock.unlock();
    if (CompileCache::instance().disk() != from) return nullptr;
    lock.lock();
    if (p.state == Preloaded::Loaded) {
        p.state = Preloaded::Taken;
        bytes = p.bytes;
        return std::move(p.fn);
    }
    if (p.state != Preloaded::Pending) return nullptr; // taken by another thread meanwhile
    p.state = Preloaded::Taken;
    bytes = p.bytes;
    lock.unlock();
    std::unique_ptr<LoadedFunction> fn = hooks_.load_image_bytes(*bytes, symbol, &k);
    if (!fn) bytes.reset();
    return fn;
}

void ImageCache::record_use(const std::string &digest, const std::string &symbol) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!program_context_ || used_.size() >= kMaxPreload || !used_digests_.insert(digest).second) return;
    used_.push_back(PreloadItem{digest, hooks_.image_arch(), hooks_.image_driver(), symbol});
}

void ImageCache::finish() noexcept {
    std::vector<Preloaded> unloaded;
    std::vector<PreloadItem> used;
    DiskCache *from = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        unloaded.swap(preload_); // unloads the modules no kernel took, outside the lock
        preload_index_.clear();
        if (program_context_ && !used_.empty() && used_ != list_as_read_) {
            used = used_;
            from = preload_disk_;
        }
    }
    unloaded.clear();
    if (!from) return;
    try {
        if (DiskCache *disk = CompileCache::instance().disk(); disk && disk == from) write_preload_list(*disk, used);
    } catch (...) { // the list is an optimisation: never an error here
    }
}

} // namespace ember::detail
