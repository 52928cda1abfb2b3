/// \file
/// The CUDA back end's functions and modules (classes in CudaBackend.h): CudaFunction's module,
/// launches with attributes (clusters, cooperative, priority), function attributes and
/// occupancy, and external modules (CudaBackend::CudaModule, load_module).
#include "cuda/CudaBackend.h"

#include "ember/Error.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember::detail {

CudaFunction::~CudaFunction() {
    if (!module_) return;
    const CudaDriver &drv = ctx_->driver();
    ScopedCurrent current(*ctx_, std::nothrow);
    if (!current.ok()) return;
    drv.log_if_error(drv.cuModuleUnload(module_), "cuModuleUnload", " on " + ctx_->where());
}

std::pair<DeviceAddress, size_t> cuda_module_global(const CudaPrimaryContext &ctx, cu::CUmodule module,
                                                    const std::string &name) {
    const CudaDriver &drv = ctx.driver();
    ScopedCurrent current(ctx);
    cu::CUdeviceptr address = 0;
    size_t bytes = 0;
    cu::CUresult rc = drv.cuModuleGetGlobal(&address, &bytes, module, name.c_str());
    if (rc == cu::CUDA_ERROR_NOT_FOUND) return {0, 0};
    drv.check(rc, "cuModuleGetGlobal", " looking up the global '" + name + "' on " + ctx.where());
    return {static_cast<DeviceAddress>(address), bytes};
}

std::pair<DeviceAddress, size_t> CudaFunction::global(const std::string &symbol) {
    return cuda_module_global(*ctx_, module_, symbol);
}

// Function attributes, launch attributes, clusters, occupancy.

void CudaStream::launch_extended(LoadedFunction &fn, const std::string &kernel_name, const LaunchDims &d,
                                 const LaunchExtras &x, void **args, size_t /*num_args*/) {
    auto &f = static_cast<CudaFunction &>(fn);
    const CudaDriver &drv = dev_->drv;
    if (!drv.cuLaunchKernelEx)
        throw LogicError("launch of kernel '" + kernel_name + "' with launch attributes needs cuLaunchKernelEx, "
                         "which this driver (CUDA " + std::to_string(drv.version() / 1000) + "." +
                         std::to_string(drv.version() % 1000 / 10) + ") lacks: update to a driver for CUDA 11.8 or newer");
    cu::CUlaunchAttribute attrs[5] = {};
    unsigned n = 0;
    auto add = [&](int id) -> cu::CUlaunchAttributeValue & {
        attrs[n].id = id;
        return attrs[n++].value;
    };
    if (x.cluster[0] > 0) {
        auto &v = add(cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
        v.clusterDim.x = unsigned(x.cluster[0]);
        v.clusterDim.y = unsigned(x.cluster[1]);
        v.clusterDim.z = unsigned(x.cluster[2]);
    }
    if (x.cluster_scheduling_policy >= 0)
        add(cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE).clusterSchedulingPolicyPreference =
            x.cluster_scheduling_policy;
    if (x.cooperative) add(cu::CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative = 1;
    if (x.programmatic_stream_serialization)
        add(cu::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).programmaticStreamSerializationAllowed = 1;
    if (x.has_priority) add(cu::CU_LAUNCH_ATTRIBUTE_PRIORITY).priority = x.priority;
    cu::CUlaunchConfig config{};
    set_launch_dims(config, d);
    config.hStream = stream_;
    config.attrs = n ? attrs : nullptr;
    config.numAttrs = n;
    ScopedCurrent current(*dev_->ctx);
    cu::CUresult rc = drv.cuLaunchKernelEx(&config, f.function, args, /*extra=*/nullptr);
    if (rc == cu::CUDA_SUCCESS) {
        dev_->remember_launch(kernel_name);
        return;
    }
    std::string context = "; grid " + cuda_dims(d.grid) + ", block " + cuda_dims(d.block) + ", " +
                          std::to_string(d.shared_mem_bytes) + " bytes of dynamic shared memory";
    if (x.cluster[0] > 0) context += ", cluster " + cuda_dims(x.cluster);
    if (x.cooperative) context += ", cooperative";
    if (x.has_priority) context += ", priority " + std::to_string(x.priority);
    context += ", on " + dev_->ctx->where();
    if (rc == cu::CUDA_ERROR_INVALID_CLUSTER_SIZE)
        throw LogicError("launch of kernel '" + kernel_name + "' failed: " + drv.error_name(rc) + context +
                         "; a cluster has at most 8 blocks (16 on H100 after "
                         "set_attribute(FunctionAttribute::non_portable_cluster_size_allowed, 1)), and its "
                         "blocks' shared memory must fit one GPC",
                         rc, drv.error_name(rc));
    if (rc == cu::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
        throw LogicError("launch of kernel '" + kernel_name + "' failed: " + drv.error_name(rc) + context +
                             "; a cooperative grid may not exceed max_active_blocks_per_multiprocessor x "
                             "multiprocessors",
                         rc, drv.error_name(rc));
    context += dev_->fault_context(rc);
    drv.raise(rc, "launch of kernel '" + kernel_name + "' failed", context);
}

int CudaBackend::function_attribute(LoadedFunction &fn, int attr, const KernelFacts &) {
    ScopedCurrent current(*ctx_);
    int value = 0;
    drv_.check(drv_.cuFuncGetAttribute(&value, attr, static_cast<CudaFunction &>(fn).function),
               "cuFuncGetAttribute", " reading attribute " + std::to_string(attr) + " on " + ctx_->where());
    return value;
}

void CudaBackend::set_function_attribute(LoadedFunction &fn, int attr, int value) {
    ScopedCurrent current(*ctx_);
    drv_.check(drv_.cuFuncSetAttribute(static_cast<CudaFunction &>(fn).function, attr, value),
               "cuFuncSetAttribute",
               " setting attribute " + std::to_string(attr) + " to " + std::to_string(value) + " on " +
                   ctx_->where());
}

void CudaBackend::set_cache_config(LoadedFunction &fn, int config) {
    ScopedCurrent current(*ctx_);
    drv_.check(drv_.cuFuncSetCacheConfig(static_cast<CudaFunction &>(fn).function, config),
               "cuFuncSetCacheConfig", " on " + ctx_->where());
}

int CudaBackend::max_active_blocks_per_multiprocessor(LoadedFunction &fn, int block_size, size_t dynamic_shared,
                                                      const KernelFacts &) {
    ScopedCurrent current(*ctx_);
    int blocks = 0;
    drv_.check(drv_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, static_cast<CudaFunction &>(fn).function,
                                                                 block_size, dynamic_shared),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor",
               " (block size " + std::to_string(block_size) + ", " + std::to_string(dynamic_shared) +
                   " bytes of dynamic shared memory) on " + ctx_->where());
    return blocks;
}

std::pair<int, int> CudaBackend::suggested_block_size(LoadedFunction &fn, size_t dynamic_shared, int block_size_limit,
                                                      const KernelFacts &) {
    ScopedCurrent current(*ctx_);
    int min_grid = 0, block = 0;
    drv_.check(drv_.cuOccupancyMaxPotentialBlockSize(&min_grid, &block, static_cast<CudaFunction &>(fn).function,
                                                      nullptr, dynamic_shared, block_size_limit),
               "cuOccupancyMaxPotentialBlockSize",
               " (" + std::to_string(dynamic_shared) + " bytes of dynamic shared memory) on " + ctx_->where());
    return {min_grid, block};
}

int CudaBackend::device_attribute_value(int attr, const char *what) {
    int value = 0;
    drv_.check(drv_.cuDeviceGetAttribute(&value, attr, dev_), "cuDeviceGetAttribute",
               std::string(" reading the ") + what + " of " + ctx_->where());
    return value;
}

int64_t CudaBackend::max_shared_memory_per_block_optin() {
    return device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                  "opt-in shared memory per block");
}

int CudaBackend::multiprocessor_count() {
    return device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
}

bool CudaBackend::supports_cluster_launch() {
    // Drivers older than CUDA 11.8 do not know the attribute: no clusters then.
    int value = 0;
    if (drv_.cuDeviceGetAttribute(&value, cu::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev_) != cu::CUDA_SUCCESS)
        return false;
    return value != 0 && drv_.cuLaunchKernelEx;
}

bool CudaBackend::supports_cooperative_launch() {
    return device_attribute_value(cu::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, "cooperative launch support") != 0;
}

// Constant memory and external modules.

/// A CUmodule loaded from an external image; unloaded when the last DeviceModule and
/// DeviceFunction of it go away.
class CudaBackend::CudaModule final : public LoadedModule {
public:
    CudaModule(std::shared_ptr<const CudaPrimaryContext> ctx, cu::CUmodule m) : ctx_(std::move(ctx)), module_(m) {}
    ~CudaModule() override {
        const CudaDriver &drv = ctx_->driver();
        ScopedCurrent current(*ctx_, std::nothrow);
        if (current.ok()) drv.log_if_error(drv.cuModuleUnload(module_), "cuModuleUnload", " on " + ctx_->where());
    }
    CudaModule(const CudaModule &) = delete;
    CudaModule &operator=(const CudaModule &) = delete;

    std::unique_ptr<LoadedFunction> function(const std::string &name) override {
        const CudaDriver &drv = ctx_->driver();
        ScopedCurrent current(*ctx_);
        cu::CUfunction f = nullptr;
        cu::CUresult rc = drv.cuModuleGetFunction(&f, module_, name.c_str());
        if (rc == cu::CUDA_ERROR_NOT_FOUND) return nullptr;
        drv.check(rc, "cuModuleGetFunction", " looking up '" + name + "' on " + ctx_->where());
        // The module is this object's: the function does not unload it.
        auto fn = std::make_unique<CudaFunction>(ctx_, nullptr);
        fn->function = f;
        return fn;
    }
    std::pair<DeviceAddress, size_t> global(const std::string &name) override {
        return cuda_module_global(*ctx_, module_, name);
    }
    std::vector<std::string> function_names() override {
        const CudaDriver &drv = ctx_->driver();
        std::vector<std::string> names;
        if (!drv.cuModuleGetFunctionCount || !drv.cuModuleEnumerateFunctions || !drv.cuFuncGetName) return names;
        ScopedCurrent current(*ctx_, std::nothrow);
        unsigned count = 0;
        if (!current.ok() || drv.cuModuleGetFunctionCount(&count, module_) != cu::CUDA_SUCCESS) return names;
        std::vector<cu::CUfunction> fns(count);
        if (count == 0 || drv.cuModuleEnumerateFunctions(fns.data(), count, module_) != cu::CUDA_SUCCESS)
            return names;
        for (cu::CUfunction f : fns) {
            const char *n = nullptr;
            if (drv.cuFuncGetName(&n, f) == cu::CUDA_SUCCESS && n) names.emplace_back(n);
        }
        return names;
    }

private:
    std::shared_ptr<const CudaPrimaryContext> ctx_;
    cu::CUmodule module_;
};

std::shared_ptr<Backend::LoadedModule> CudaBackend::load_module(int format, const std::string &bytes,
                                                                const std::string &name) {
    ScopedCurrent current(*ctx_);
    std::string info_log(cuda_jit_log_bytes, '\0'), error_log(cuda_jit_log_bytes, '\0');
    cu::CUjit_option options[] = {
        cu::CU_JIT_INFO_LOG_BUFFER,  cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    };
    void *values[] = {
        info_log.data(),
        reinterpret_cast<void *>(uintptr_t(info_log.size() - 1)),
        error_log.data(),
        reinterpret_cast<void *>(uintptr_t(error_log.size() - 1)),
    };
    static_assert(std::size(options) == std::size(values));
    cu::CUmodule module = nullptr;
    // A PTX image must be NUL-terminated (c_str() is); cubins and fatbins carry their size.
    cu::CUresult rc = drv_.cuModuleLoadDataEx(&module, bytes.c_str(), unsigned(std::size(options)), options, values);
    if (rc != cu::CUDA_SUCCESS) {
        CudaErrorClass c = cuda_error_class(rc);
        if (c == CudaErrorClass::Memory || c == CudaErrorClass::Launch)
            drv_.raise(rc, "cuModuleLoadDataEx failed", " loading module '" + name + "' on " + ctx_->where());
        static const char *const kinds[] = {"PTX", "cubin", "fatbin"};
        std::string summary = "module '" + name + "': the CUDA driver rejected the " +
                              (format >= 0 && format < 3 ? kinds[format] : "image") + " for " +
                              ctx_->where() + ", which is " + target_.to_string() + " (" + drv_.error_name(rc) + ")";
        if (rc == cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
            summary += "; the PTX ISA version is newer than this driver (CUDA " +
                       std::to_string(drv_.version() / 1000) + "." + std::to_string(drv_.version() % 1000 / 10) +
                       ") accepts";
        std::string log = cuda_log_text(error_log);
        std::string info = cuda_log_text(info_log);
        if (!info.empty()) log += (log.empty() ? "" : "\n") + info;
        if (log.empty()) {
            std::string desc = drv_.error_string(rc);
            log = "(no JIT log) " + drv_.error_name(rc) + (desc.empty() ? "" : ": " + desc);
        }
        throw CompileError(summary, std::move(log));
    }
    return std::make_shared<CudaModule>(ctx_, module);
}

} // namespace ember::detail
