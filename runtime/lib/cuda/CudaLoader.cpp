/// \file
/// The CUDA back end's loader (classes in CudaBackend.h): PTX loaded by the driver's JIT, the
/// image cache's hooks (PTX linked into a cubin with cuLink*, cubins loaded; [Note] Image cache)
/// and the errors of a load.
#include "cuda/CudaBackend.h"

#include "ember/Error.h"
#include "ember/compiler/Compiler.h"

#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

namespace ember::detail {

std::string cuda_log_text(const std::string &buffer) {
    std::string s(buffer.c_str());
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::unique_ptr<LoadedFunction> CudaBackend::load(const CompiledKernel &k) {
    if (k.target.arch != (drv_.is_hip() ? Arch::AMDGPU : Arch::NVPTX))
        throw LogicError("kernel '" + k.kernel_name + "' was compiled for " +
                         k.target.to_string() + ", but " + ctx_->where() + " needs " +
                         target_.to_string());
    ScopedCurrent current(*ctx_);
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
    attach_print_buffer(module);
    // With EMBER_DUMP the compile cache is bypassed, so every kernel dumped is loaded here.
    if (sass_dump_requested()) dump_sass(k);
    return fn;
}

std::string CudaBackend::image_arch() const { return target_.cpu; }

std::string CudaBackend::image_driver() const { return std::to_string(drv_.version()); }

std::unique_ptr<LoadedFunction> CudaBackend::load_image_bytes(const std::string &bytes, const std::string &symbol,
                                                              const CompiledKernel *k) {
    ScopedCurrent current(*ctx_);
    cu::CUmodule module = nullptr;
    if (drv_.cuModuleLoadDataEx(&module, bytes.data(), 0, nullptr, nullptr) != cu::CUDA_SUCCESS) return nullptr;
    auto fn = std::make_unique<CudaFunction>(ctx_, module); // unloads the module if we throw
    if (cu::CUresult rc = drv_.cuModuleGetFunction(&fn->function, module, symbol.c_str()); rc != cu::CUDA_SUCCESS) {
        if (!k) return nullptr;
        drv_.check(rc, "cuModuleGetFunction",
                   "; the cubin of kernel '" + k->kernel_name + "' has no entry point '" + symbol + "'");
    }
    attach_print_buffer(module);
    return fn;
}

std::optional<std::string> CudaBackend::link_image(const CompiledKernel &k, std::string &info_log) {
    if (k.target.arch != Arch::NVPTX || !linker_available()) return std::nullopt;
    ScopedCurrent current(*ctx_);
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
    std::string summary = "kernel '" + k.kernel_name + "': " +
                          (drv_.is_hip() ? "the HIP runtime rejected the code object for "
                                         : "the CUDA driver rejected the PTX for ") +
                          k.target.to_string() + " (" + drv_.error_name(rc) + ")";
    if (rc == cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION && !drv_.is_hip())
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
        log = std::string(drv_.is_hip() ? "(a code object has no JIT log) " : "(no JIT log) ") + drv_.error_name(rc) + (desc.empty() ? "" : ": " + desc);
    }
    throw CompileError(summary, std::move(log));
}


} // namespace ember::detail
