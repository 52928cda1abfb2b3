/// \file
/// ember's print buffer on the CUDA-shaped back end ([Note] Print buffer in
/// ember/compiler/PrintBuffer.h): made when a module that prints is loaded (every AMDGPU module
/// with a print; NVPTX ones only where a test compiled them so), its address written into the
/// module's `ember_print_buffer` global, and drained after a synchronize once every stream of
/// the device is idle, so that no kernel is writing while the host reads and empties it.
#include "cuda/CudaBackend.h"

#include "ember/Error.h"
#include "ember/compiler/PrintBuffer.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace ember::detail {

DeviceAddress CudaDeviceState::print_buffer_for_modules() {
    std::lock_guard<std::mutex> lock(print_mutex);
    if (print_buffer) return print_buffer;
    ScopedCurrent current(*ctx);
    const uint64_t capacity = print_buffer::kDefaultCapacity;
    cu::CUdeviceptr p = 0;
    drv.check(drv.cuMemAlloc(&p, print_buffer::kHeaderBytes + capacity), "cuMemAlloc",
              "; the print buffer (" + cuda_format_bytes(capacity) + ") of " + ctx->where());
    const uint64_t header[3] = {0, capacity, 0};
    // The record area starts zeroed: [Note] Print buffer.
    cu::CUresult rc = drv.cuMemsetD8Async(p, 0, print_buffer::kHeaderBytes + capacity, default_stream);
    if (rc == cu::CUDA_SUCCESS) rc = drv.cuMemcpyHtoDAsync(p, header, sizeof header, default_stream);
    if (rc == cu::CUDA_SUCCESS) rc = drv.cuStreamSynchronize(default_stream);
    if (rc != cu::CUDA_SUCCESS) {
        drv.log_if_error(drv.cuMemFree(p), "cuMemFree");
        drv.check(rc, "cuMemcpyHtoDAsync", " writing the print buffer's header on " + ctx->where());
    }
    print_buffer = p;
    print_capacity = capacity;
    return p;
}

void CudaBackend::attach_print_buffer(cu::CUmodule module) {
    const auto [slot, bytes] = cuda_module_global(*ctx_, module, print_buffer::kSymbol);
    if (!slot) return;
    if (bytes != 8)
        throw LogicError("a module on " + ctx_->where() + " has a global '" + std::string(print_buffer::kSymbol) +
                         "' of " + std::to_string(bytes) + " bytes; ember's print buffer global has 8");
    const uint64_t address = state_->print_buffer_for_modules();
    ScopedCurrent current(*ctx_);
    cu::CUresult rc = drv_.cuMemcpyHtoDAsync(slot, &address, 8, default_handle());
    if (rc == cu::CUDA_SUCCESS) rc = drv_.cuStreamSynchronize(default_handle());
    drv_.check(rc, "cuMemcpyHtoDAsync", " pointing a module at the print buffer of " + ctx_->where());
}

void CudaDeviceState::drain_prints(cu::CUstream s) {
    std::lock_guard<std::mutex> lock(print_mutex);
    if (!print_buffer) return;
    ScopedCurrent current(*ctx);
    {
        std::lock_guard<std::mutex> streams(streams_mutex);
        for (CudaStream *u : user_streams)
            if (u->handle() != s && drv.cuStreamQuery(u->handle()) == cu::CUDA_ERROR_NOT_READY) return;
    }
    if (default_stream != s && drv.cuStreamQuery(default_stream) == cu::CUDA_ERROR_NOT_READY) return;
    auto copy_in = [&](void *dst, DeviceAddress src, size_t n) {
        cu::CUresult rc = drv.cuMemcpyDtoHAsync(dst, src, n, s);
        if (rc == cu::CUDA_SUCCESS) rc = drv.cuStreamSynchronize(s);
        drv.check(rc, "cuMemcpyDtoHAsync", " reading the print buffer of " + ctx->where());
    };
    uint64_t header[3] = {};
    copy_in(header, print_buffer, sizeof header);
    if (header[0] == 0 && header[2] == 0) return;
    std::string records(std::min(header[0], print_capacity), '\0');
    if (!records.empty()) copy_in(records.data(), print_buffer + print_buffer::kHeaderBytes, records.size());
    const uint64_t empty[3] = {0, print_capacity, 0};
    cu::CUresult rc = drv.cuMemsetD8Async(print_buffer + print_buffer::kHeaderBytes, 0, records.size(), s);
    if (rc == cu::CUDA_SUCCESS) rc = drv.cuMemcpyHtoDAsync(print_buffer, empty, sizeof empty, s);
    if (rc == cu::CUDA_SUCCESS) rc = drv.cuStreamSynchronize(s);
    drv.check(rc, "cuMemcpyHtoDAsync", " emptying the print buffer of " + ctx->where());
    const std::string text = print_buffer::format_print_records(records);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (header[2] > 0)
        std::fprintf(stderr,
                     "ember: warning: %llu line(s) printed by kernels on %s since the last synchronize were "
                     "dropped: the print buffer holds %llu bytes of records; synchronize more often\n",
                     static_cast<unsigned long long>(header[2]), ctx->where().c_str(),
                     static_cast<unsigned long long>(print_capacity));
}

void CudaDeviceState::free_print_buffer() noexcept {
    std::lock_guard<std::mutex> lock(print_mutex);
    if (!print_buffer) return;
    ScopedCurrent current(*ctx, std::nothrow);
    if (current.ok()) drv.log_if_error(drv.cuMemFree(print_buffer), "cuMemFree", " (the print buffer)");
    print_buffer = 0;
}

} // namespace ember::detail
