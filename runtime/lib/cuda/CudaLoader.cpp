/// \file
/// The CUDA back end's loader (classes in CudaBackend.h): PTX loaded by the driver's JIT, the
/// compile cache's image path (PTX linked into a cubin with cuLink*, cubins loaded), the preload
/// of the program's kernels ([Note] Preload in Preload.h) and the errors of a load.
#include "cuda/CudaBackend.h"

#include "CompileCache.h"
#include "DiskCache.h"
#include "Preload.h"

#include "ember/Error.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace ember::detail {

std::string cuda_log_text(const std::string &buffer) {
    std::string s(buffer.c_str());
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::unique_ptr<LoadedFunction> CudaBackend::load(const CompiledKernel &k, const detail::CacheKey *image_base) {
    if (k.target.arch != Arch::NVPTX)
        throw LogicError("kernel '" + k.kernel_name + "' was compiled for " +
                         k.target.to_string() + ", but " + ctx_->where() + " needs " +
                         target_.to_string());
    ScopedCurrent current(*ctx_);
    // The compile cache's image levels ([Note] Compile cache): the PTX is linked by the driver
    // into a cubin for this device (the JIT runs once), kept in the cache under the artefact's
    // key plus the driver and arch, and loaded; a later compile of the same kernel (this
    // process or another) loads the cubin through load_image without any PTX. Any failure of
    // this path falls back to loading the PTX below, which reports errors with the JIT log.
    if (image_base)
        if (std::unique_ptr<LoadedFunction> fn = link_and_load(k, *image_base)) return fn;
    std::string info_log(cuda_jit_log_bytes, '\0'), error_log(cuda_jit_log_bytes, '\0');
    cu::CUjit_option options[] = {
        cu::CU_JIT_INFO_LOG_BUFFER,  cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        cu::CU_JIT_LOG_VERBOSE,
    };
    void *values[] = {
        info_log.data(),
        reinterpret_cast<void *>(uintptr_t(info_log.size() - 1)),
        error_log.data(),
        reinterpret_cast<void *>(uintptr_t(error_log.size() - 1)),
        // Verbose: ptxas writes "Used N registers" and spill bytes to the info log (CompileReport).
        reinterpret_cast<void *>(uintptr_t(1)),
    };
    static_assert(std::size(options) == std::size(values));
    cu::CUmodule module = nullptr;
    auto start = std::chrono::steady_clock::now();
    // The PTX image must be NUL-terminated; c_str() is.
    cu::CUresult rc = drv_.cuModuleLoadDataEx(&module, k.binary.c_str(),
                                              unsigned(std::size(options)), options, values);
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (rc != cu::CUDA_SUCCESS)
        throw_load_error(k, rc, cuda_log_text(error_log), cuda_log_text(info_log));

    auto fn = std::make_unique<CudaFunction>(ctx_, module);
    fn->load_seconds = elapsed.count();
    fn->jit_info_log = cuda_log_text(info_log);
    drv_.check(drv_.cuModuleGetFunction(&fn->function, module, k.entry_symbol.c_str()),
               "cuModuleGetFunction",
               "; the PTX of kernel '" + k.kernel_name + "' has no entry point '" +
                   k.entry_symbol + "'");
    return fn;
}

std::unique_ptr<LoadedFunction> CudaBackend::load_image(const detail::CacheKey &base, const CompiledKernel &meta,
                                                        const char **level) {
    if (meta.target.arch != Arch::NVPTX || !linker_available()) return nullptr;
    ScopedCurrent current(*ctx_);
    auto start = std::chrono::steady_clock::now();
    const detail::CacheKey image = cubin_key(base);
    std::shared_ptr<const std::string> bytes;
    std::unique_ptr<CudaFunction> fn = take_preloaded(image.digest, meta, bytes);
    if (fn) {
        detail::CompileCache::instance().note_preloaded_image(base, image, "cubin", meta.kernel_name,
                                                              std::move(bytes), level);
    } else {
        std::shared_ptr<const std::string> cubin =
            detail::CompileCache::instance().find_image(base, image, "cubin", meta.kernel_name, level);
        if (!cubin) return nullptr;
        fn = load_cubin(*cubin, meta);
        if (!fn) return nullptr;
    }
    fn->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    record_use(image.digest, meta.entry_symbol);
    return fn;
}

void CudaBackend::set_preload(const PreloadPlan &plan) {
    const std::string arch = target_.cpu, driver = std::to_string(drv_.version());
    std::lock_guard<std::mutex> lock(preload_mutex_);
    program_context_ = true;
    list_as_read_ = plan.items;
    preload_disk_ = plan.disk;
    for (size_t i = 0; i < plan.items.size(); ++i) {
        const PreloadItem &item = plan.items[i];
        if (!plan.bytes[i] || item.arch != arch || item.driver != driver || preload_index_.count(item.digest))
            continue;
        preload_index_.emplace(item.digest, preload_.size());
        preload_.push_back(Preloaded{item.digest, item.symbol, plan.bytes[i], Preloaded::Pending, nullptr});
    }
}

void CudaBackend::run_preload() {
    ScopedCurrent current(*ctx_);
    for (size_t i = 0;; ++i) {
        std::shared_ptr<const std::string> bytes;
        std::string symbol;
        {
            std::lock_guard<std::mutex> lock(preload_mutex_);
            if (preload_stop_ || i >= preload_.size()) return;
            if (preload_[i].state != Preloaded::Pending) continue;
            preload_[i].state = Preloaded::Loading;
            bytes = preload_[i].bytes;
            symbol = preload_[i].symbol;
        }
        std::unique_ptr<CudaFunction> fn;
        cu::CUmodule module = nullptr;
        if (drv_.cuModuleLoadDataEx(&module, bytes->data(), 0, nullptr, nullptr) == cu::CUDA_SUCCESS) {
            fn = std::make_unique<CudaFunction>(ctx_, module);
            if (drv_.cuModuleGetFunction(&fn->function, module, symbol.c_str()) != cu::CUDA_SUCCESS) fn.reset();
        }
        {
            std::lock_guard<std::mutex> lock(preload_mutex_);
            preload_[i].state = fn ? Preloaded::Loaded : Preloaded::Failed;
            preload_[i].fn = std::move(fn);
        }
        preload_cv_.notify_all();
    }
}

std::unique_ptr<CudaFunction> CudaBackend::take_preloaded(const std::string &digest, const CompiledKernel &k,
                                                          std::shared_ptr<const std::string> &bytes) {
    std::unique_lock<std::mutex> lock(preload_mutex_);
    if (preload_.empty()) return nullptr;
    auto it = preload_index_.find(digest);
    if (it == preload_index_.end()) return nullptr;
    Preloaded &p = preload_[it->second];
    if (p.symbol != k.entry_symbol) return nullptr;
    preload_cv_.wait(lock, [&] { return p.state != Preloaded::Loading; });
    if (p.state == Preloaded::Failed || p.state == Preloaded::Taken) return nullptr;
    DiskCache *from = preload_disk_;
    lock.unlock();
    if (detail::CompileCache::instance().disk() != from) return nullptr;
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
    std::unique_ptr<CudaFunction> fn = load_cubin(*bytes, k);
    if (!fn) bytes.reset();
    return fn;
}

void CudaBackend::record_use(const std::string &digest, const std::string &symbol) {
    if (!program_context_) return;
    std::lock_guard<std::mutex> lock(preload_mutex_);
    if (used_.size() >= kMaxPreload || !used_digests_.insert(digest).second) return;
    used_.push_back(PreloadItem{digest, target_.cpu, std::to_string(drv_.version()), symbol});
}

void CudaBackend::store_used_list() {
    std::lock_guard<std::mutex> lock(preload_mutex_);
    if (used_.empty() || used_ == list_as_read_) return;
    DiskCache *disk = detail::CompileCache::instance().disk();
    if (!disk || disk != preload_disk_) return;
    write_preload_list(*disk, used_);
}

detail::CacheKey CudaBackend::cubin_key(const detail::CacheKey &base) const {
    return image_key(base, std::to_string(drv_.version()), target_.cpu);
}

std::unique_ptr<CudaFunction> CudaBackend::load_cubin(const std::string &cubin, const CompiledKernel &k) {
    cu::CUmodule module = nullptr;
    if (drv_.cuModuleLoadDataEx(&module, cubin.data(), 0, nullptr, nullptr) != cu::CUDA_SUCCESS) return nullptr;
    auto fn = std::make_unique<CudaFunction>(ctx_, module); // unloads the module if we throw
    if (cu::CUresult rc = drv_.cuModuleGetFunction(&fn->function, module, k.entry_symbol.c_str());
        rc != cu::CUDA_SUCCESS)
        drv_.check(rc, "cuModuleGetFunction",
                   "; the cubin of kernel '" + k.kernel_name + "' has no entry point '" + k.entry_symbol + "'");
    return fn;
}

std::unique_ptr<LoadedFunction> CudaBackend::link_and_load(const CompiledKernel &k, const detail::CacheKey &base) {
    if (!linker_available()) return nullptr;
    auto start = std::chrono::steady_clock::now();
    std::string info_log;
    std::optional<std::string> cubin = link_cubin(k, info_log);
    if (!cubin) return nullptr;
    auto bytes = std::make_shared<const std::string>(std::move(*cubin));
    std::unique_ptr<CudaFunction> fn = load_cubin(*bytes, k);
    if (!fn) return nullptr;
    const detail::CacheKey image = cubin_key(base);
    detail::CompileCache::instance().store_image(image, "cubin", std::move(bytes));
    record_use(image.digest, k.entry_symbol);
    fn->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fn->jit_info_log = std::move(info_log);
    return fn;
}

std::optional<std::string> CudaBackend::link_cubin(const CompiledKernel &k, std::string &info_log) {
    std::string info(cuda_jit_log_bytes, '\0');
    cu::CUjit_option options[] = {cu::CU_JIT_INFO_LOG_BUFFER, cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                  cu::CU_JIT_LOG_VERBOSE};
    void *values[] = {info.data(), reinterpret_cast<void *>(uintptr_t(info.size() - 1)),
                      reinterpret_cast<void *>(uintptr_t(1))};
    static_assert(std::size(options) == std::size(values));
    cu::CUlinkState state = nullptr;
    if (drv_.cuLinkCreate(unsigned(std::size(options)), options, values, &state) != cu::CUDA_SUCCESS || !state)
        return std::nullopt;
    std::optional<std::string> out;
    // Size including the terminating NUL, as the CUDA samples (ptxjit) pass it.
    if (drv_.cuLinkAddData(state, cu::CU_JIT_INPUT_PTX, const_cast<char *>(k.binary.c_str()),
                           k.binary.size() + 1, k.kernel_name.c_str(), 0, nullptr,
                           nullptr) == cu::CUDA_SUCCESS) {
        void *image = nullptr;
        size_t size = 0;
        // The image belongs to the link state: copy it before cuLinkDestroy.
        if (drv_.cuLinkComplete(state, &image, &size) == cu::CUDA_SUCCESS && image && size)
            out.emplace(static_cast<const char *>(image), size);
    }
    drv_.cuLinkDestroy(state);
    if (out) info_log = cuda_log_text(info);
    return out;
}

void CudaBackend::throw_load_error(const CompiledKernel &k, cu::CUresult rc,
                                                std::string error_log, const std::string &info_log) const {
    // A fault of an earlier kernel, or no memory to load into: not the PTX's fault.
    CudaErrorClass c = cuda_error_class(rc);
    if (c == CudaErrorClass::Memory || c == CudaErrorClass::Launch)
        drv_.raise(rc, "cuModuleLoadDataEx failed",
                   " loading kernel '" + k.kernel_name + "' on " + ctx_->where());
    std::string summary = "kernel '" + k.kernel_name +
                          "': the CUDA driver rejected the PTX for " + k.target.to_string() +
                          " (" + drv_.error_name(rc) + ")";
    if (rc == cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
        summary += "; the PTX ISA version is newer than this driver (CUDA " +
                   std::to_string(drv_.version() / 1000) + "." +
                   std::to_string(drv_.version() % 1000 / 10) +
                   ") accepts: update the driver or target an older PTX version";
    else if (!(k.target == target_))
        summary += "; " + ctx_->where() + " is " + target_.to_string();
    std::string log = std::move(error_log);
    if (!info_log.empty()) log += (log.empty() ? "" : "\n") + info_log;
    if (log.empty()) {
        // Some failures (a corrupt image) leave both logs empty.
        std::string desc = drv_.error_string(rc);
        log = "(no JIT log) " + drv_.error_name(rc) + (desc.empty() ? "" : ": " + desc);
    }
    throw CompileError(summary, std::move(log));
}

double last_load_seconds(const LoadedFunction &fn) {
    const auto *f = dynamic_cast<const CudaFunction *>(&fn);
    return f ? f->load_seconds : 0;
}

} // namespace ember::detail
