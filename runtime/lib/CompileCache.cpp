#include "CompileCache.h"

#include "DiskCache.h"
#include "Timeline.h"

#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Hash.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Log.h"
#include "ember/dsl/Kernel.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

namespace ember::detail {

CacheKey make_cache_key(const ir::Kernel &k, const TargetSpec &target, const CompileOptions &options) {
    return artefact_key(ir::content_hash(k), target, options);
}

CacheKey make_cache_key(const KernelInfo &k, const TargetSpec &target, const CompileOptions &options) {
    std::call_once(k.ir_hash_once, [&] { k.ir_hash = ir::content_hash(k.ir); });
    return artefact_key(k.ir_hash, target, options);
}

std::string mask_numeric_literals(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    auto is_word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '%' || c == '@' || c == '.';
    };
    while (i < s.size()) {
        char c = s[i];
        bool starts_number = std::isdigit(static_cast<unsigned char>(c)) && (i == 0 || !is_word(s[i - 1]));
        if (!starts_number) {
            out += c;
            ++i;
            continue;
        }
        // A literal: digits, an optional fraction, exponent and hex digits (0x...).
        while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                                ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
            ++i;
        if (!out.empty() && out.back() == '-') out.pop_back();
        out += '#';
    }
    return out;
}

namespace {

void log_lookup(bool hit, std::string_view name, const std::string &target, const CacheKey &key,
                const char *level, const std::string &changed = {}, const char *note = nullptr) {
    if (!log_enabled(LogTopic::cache)) return;
    // Once per process, what every key of the process shares: which compiler made the entries.
    static std::once_flag versions_logged;
    std::call_once(versions_logged, [&] {
        log_line(LogTopic::cache, "ember " + key.ember_version + ", compiler build " + key.build.substr(0, 12) +
                                      ", LLVM " + key.llvm_version);
    });
    std::string line = std::string(hit ? "cache hit" : "cache miss") + " kernel=" + std::string(name) +
                       " target=" + target + " key=" + key.short_digest() + " level=" + level;
    if (note) line += std::string(" ") + note;
    if (!changed.empty()) line += " changed: " + changed;
    log_line(LogTopic::cache, line);
}

} // namespace

bool cacheable(const CompileOptions &options) {
    const bool keeps_text = options.keep_ir || options.keep_llvm || options.keep_llvm_opt || options.keep_asm;
    return !keeps_text && !dumps_requested();
}

struct CompileCache::State {
    std::mutex mutex;
    using Result = std::shared_ptr<const CompiledKernel>;
    std::unordered_map<std::string, std::shared_future<Result>> memory;
    /// Device images by image key digest (the memory-cubin level).
    std::unordered_map<std::string, std::shared_ptr<const std::string>> images;
    /// Interned level names of images ("memory-cubin", ...).
    std::set<std::string> image_levels;
    /// The last key each kernel name was looked up with (to say what changed on a miss).
    std::unordered_map<std::string, CacheKey> last_key;
    /// Per kernel name: masked-IR hash + target + options -> the IR hashes compiled with it.
    std::unordered_map<std::string, std::map<std::string, std::set<std::string>>> variants;
    std::set<std::string> warned;
    bool disk_overridden = false;
    DiskCache *disk_override = nullptr;
};

CompileCache &CompileCache::instance() {
    static CompileCache *cache = new CompileCache(); // never destroyed: used by static destructors
    return *cache;
}

CompileCache::CompileCache() : state_(std::make_unique<State>()) {}
CompileCache::~CompileCache() = default;

DiskCache *CompileCache::disk() const {
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        if (state_->disk_overridden) return state_->disk_override;
    }
    return DiskCache::instance();
}

void CompileCache::clear_memory() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->memory.clear();
    state_->images.clear();
}

void CompileCache::set_disk_for_testing(DiskCache *d) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->disk_overridden = true;
    state_->disk_override = d;
}

void CompileCache::reset_disk_to_default() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->disk_overridden = false;
    state_->disk_override = nullptr;
}

std::shared_ptr<const CompiledKernel> CompileCache::get(const KernelInfo &k, const TargetSpec &target,
                                                        const CompileOptions &options, const char **level) {
    if (timeline::on()) [[unlikely]] {
        timeline::CacheLookup lookup;
        const char *answered = "compiled";
        std::shared_ptr<const CompiledKernel> r = find(k, target, options, &answered, &lookup);
        lookup.finish(k.ir.name, target.to_string(), answered, *r);
        if (level) *level = answered;
        return r;
    }
    return find(k, target, options, level, nullptr);
}

std::shared_ptr<const CompiledKernel>
CompileCache::find(const KernelInfo &k, const TargetSpec &target, const CompileOptions &options,
                   const char **level, timeline::CacheLookup *timed) {
    const char *unused_level = nullptr;
    if (!level) level = &unused_level;
    *level = "compiled";
    if (!cacheable(options)) {
        // Stage texts or dumps were asked for: the compiler must run.
        compiles_.fetch_add(1);
        return std::make_shared<const CompiledKernel>(ember::compile(k.ir, target, options));
    }
    const CacheKey key = make_cache_key(k, target, options);
    const std::string &name = k.ir.name;
    std::promise<State::Result> promise;
    std::shared_future<State::Result> future;
    std::string changed;
    bool owner = false;
    {
        std::unique_lock<std::mutex> lock(state_->mutex);
        auto it = state_->memory.find(key.digest);
        if (it != state_->memory.end()) {
            future = it->second;
        } else {
            future = promise.get_future().share();
            state_->memory.emplace(key.digest, future);
            owner = true;
            auto last = state_->last_key.find(name);
            if (last != state_->last_key.end() && last->second.digest != key.digest)
                changed = changed_components(last->second, key);
        }
        state_->last_key[name] = key;
    }
    if (!owner) {
        State::Result r = future.get(); // waits for a compile in flight; rethrows its failure
        memory_hits_.fetch_add(1);
        *level = "memory";
        log_lookup(true, name, key.target, key, "memory");
        return r;
    }

    try {
        // The one call to the compiler ([Note] One compile call): the disk level is its store.
        DiskCache *d = disk();
        ArtefactStore *store = timed ? timed->store(d) : d;
        KernelBuild built = build_kernel(k.ir, key, target, options, store, k.verified);
        if (built.compiled) {
            log_lookup(false, name, key.target, key, "compiled", changed);
            compiles_.fetch_add(1);
            note_variant(k, key);
        } else {
            disk_hits_.fetch_add(1);
            *level = "disk";
            log_lookup(true, name, key.target, key, "disk");
        }
        State::Result result = std::make_shared<const CompiledKernel>(std::move(built.kernel));
        promise.set_value(result);
        return result;
    } catch (...) {
        promise.set_exception(std::current_exception());
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->memory.erase(key.digest);
        throw;
    }
}

void CompileCache::note_variant(const KernelInfo &k, const CacheKey &key) {
    const std::string masked = sha256_hex(mask_numeric_literals(ir::print(k.ir)));
    const std::string group = masked + "|" + key.target + "|" + key.options;
    bool warn = false;
    size_t count = 0;
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        std::set<std::string> &irs = state_->variants[k.ir.name][group];
        irs.insert(key.ir);
        count = irs.size();
        if (count >= static_cast<size_t>(kConstantsWarnAfter) && state_->warned.insert(k.ir.name).second)
            warn = true;
    }
    if (warn)
        std::fprintf(stderr,
                     "ember: warning: kernel '%s' was compiled %zu times for %s with IR that differs only in "
                     "numeric constants; pass those values as kernel arguments to compile it once\n",
                     k.ir.name.c_str(), count, key.target.c_str());
}

const char *CompileCache::image_level(const char *where, std::string_view kind) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->image_levels.insert(std::string(where) + "-" + std::string(kind)).first->c_str();
}

std::shared_ptr<const std::string> CompileCache::find_image(const CacheKey &base, const CacheKey &image,
                                                            std::string_view kind, std::string_view name,
                                                            const char **level) {
    std::shared_ptr<const std::string> bytes;
    const char *where = "memory";
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        auto it = state_->images.find(image.digest);
        if (it != state_->images.end()) bytes = it->second;
    }
    if (bytes) {
        memory_hits_.fetch_add(1);
    } else if (DiskCache *d = disk()) {
        if (std::optional<std::string> loaded = d->load(image.digest, kind)) {
            bytes = std::make_shared<const std::string>(std::move(*loaded));
            where = "disk";
            disk_hits_.fetch_add(1);
            std::lock_guard<std::mutex> lock(state_->mutex);
            state_->images.emplace(image.digest, bytes);
        }
    }
    if (!bytes) return nullptr;
    note_image_hit(base, kind, name, where, level, nullptr);
    return bytes;
}

void CompileCache::note_preloaded_image(const CacheKey &base, const CacheKey &image, std::string_view kind,
                                        std::string_view name, std::shared_ptr<const std::string> bytes,
                                        const char **level) {
    disk_hits_.fetch_add(1);
    if (bytes) {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->images.emplace(image.digest, std::move(bytes));
    }
    note_image_hit(base, kind, name, "disk", level, "preloaded");
}

void CompileCache::note_image_hit(const CacheKey &base, std::string_view kind, std::string_view name,
                                  const char *where, const char **level, const char *note) {
    const char *lvl = image_level(where, kind);
    if (level) *level = lvl;
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->last_key[std::string(name)] = base;
    }
    log_lookup(true, name, base.target, base, lvl, {}, note);
}

void CompileCache::store_image(const CacheKey &image, std::string_view kind, std::shared_ptr<const std::string> bytes) {
    if (!bytes) return;
    if (DiskCache *d = disk()) d->store(image.digest, kind, *bytes);
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->images[image.digest] = std::move(bytes);
}

} // namespace ember::detail
