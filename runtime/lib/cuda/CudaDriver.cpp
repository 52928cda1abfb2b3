/// \file
/// Loading libcuda.so.1 and turning CUresults into ember's exceptions.
#include "cuda/CudaDriver.h"

#include "ember/Error.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <string>
#include <type_traits>
#include <utility>

namespace ember::detail {

namespace {

struct ErrorName {
    int code;
    const char *name;
};

/// CUresult names, from cuda.h of CUDA 13.0; used when the driver is absent or does not know a
/// code (cuGetErrorName fails for codes newer than the driver).
/// HIP's error codes equal the Driver API's for every code both have (ROCm's hipError_t follows
/// cuda.h: hipErrorNotReady is 600, hipErrorIllegalAddress 700, ...); these are HIP's own.
enum : int {
    hip_error_invalid_configuration = 9,
    hip_error_invalid_pitch_value = 12,
    hip_error_invalid_symbol = 13,
    hip_error_invalid_device_pointer = 17,
    hip_error_invalid_memcpy_direction = 21,
    hip_error_invalid_device_function = 98,
    hip_error_runtime_memory = 1052,
};

constexpr ErrorName error_names[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {5, "CUDA_ERROR_PROFILER_DISABLED"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"},
    {205, "CUDA_ERROR_MAP_FAILED"},
    {206, "CUDA_ERROR_UNMAP_FAILED"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED"},
    {208, "CUDA_ERROR_ALREADY_MAPPED"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED"},
    {211, "CUDA_ERROR_NOT_MAPPED"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"},
    {226, "CUDA_ERROR_CONTAINED"},
    {300, "CUDA_ERROR_INVALID_SOURCE"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {402, "CUDA_ERROR_LOSSY_QUERY"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {600, "CUDA_ERROR_NOT_READY"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    {710, "CUDA_ERROR_ASSERT"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    {718, "CUDA_ERROR_INVALID_PC"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    {907, "CUDA_ERROR_CAPTURED_EVENT"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    {909, "CUDA_ERROR_TIMEOUT"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"},
    {916, "CUDA_ERROR_KEY_ROTATION"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

} // namespace

CudaErrorClass cuda_error_class(int code) noexcept {
    using namespace cu;
    switch (code) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case hip_error_runtime_memory:
        return CudaErrorClass::Memory;
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
        return CudaErrorClass::Launch;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_NOT_SUPPORTED:
    // Stream capture and graphs: the program did something a capture does not allow.
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_CAPTURED_EVENT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
    // HIP's codes outside the Driver API's (the table also serves HIP: cuda/HipDriver.cpp).
    case hip_error_invalid_configuration:
    case hip_error_invalid_pitch_value:
    case hip_error_invalid_symbol:
    case hip_error_invalid_device_pointer:
    case hip_error_invalid_memcpy_direction:
    case hip_error_invalid_device_function:
        return CudaErrorClass::Logic;
    default:
        return CudaErrorClass::Runtime;
    }
}

bool cuda_error_is_sticky(int code) noexcept {
    using namespace cu;
    switch (code) {
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_CONTAINED:
        return true;
    default:
        return false;
    }
}

std::string cuda_error_name(int code) {
    for (const ErrorName &e : error_names)
        if (e.code == code) return e.name;
    return "CUresult(" + std::to_string(code) + ")";
}

void throw_cuda_error(int code, std::string_view what_failed, std::string_view context,
                      std::string_view name, std::string_view description, std::string_view api) {
    std::string code_name = name.empty() ? cuda_error_name(code) : std::string(name);
    std::string msg(what_failed);
    msg += ": ";
    msg += code_name;
    if (!description.empty()) {
        msg += " (";
        msg += description;
        msg += ')';
    }
    msg += context;
    if (cuda_error_is_sticky(code))
        msg += "; the " + std::string(api) + " context is no longer usable: every later " + std::string(api) +
               " call in this process fails with this error, so the process must be restarted";
    switch (cuda_error_class(code)) {
    case CudaErrorClass::Memory:
        throw MemoryError(msg, code, std::move(code_name));
    case CudaErrorClass::Launch:
        throw LaunchError(msg, code, std::move(code_name));
    case CudaErrorClass::Logic:
        throw LogicError(msg, code, std::move(code_name));
    case CudaErrorClass::Runtime:
        break;
    }
    throw RuntimeError(msg, code, std::move(code_name));
}

namespace {
/// The process that initialised CUDA, recorded in a child of fork() ([Note] CUDA and fork); 0 in
/// the process that initialised it.
std::atomic<int> cuda_parent_pid{0};
void note_forked_child() noexcept { cuda_parent_pid.store(static_cast<int>(getppid()), std::memory_order_relaxed); }
std::string forked_child_message(std::string_view what) {
    return std::string(what) + ": this process is a child of fork(), made after process " +
           std::to_string(cuda_parent_pid.load(std::memory_order_relaxed)) +
           " initialised CUDA; the CUDA driver does not support its use in such a child (calls fail or "
           "hang). Use CUDA in the parent only, start the child with exec (posix_spawn, a new program) "
           "before it uses CUDA, or fork before the first CUDA call. The CPU device (api 'cpu') works "
           "in the child";
}
} // namespace

bool CudaDriver::is_forked_child() noexcept { return cuda_parent_pid.load(std::memory_order_relaxed) != 0; }

void CudaDriver::throw_forked_child(std::string_view what) { throw RuntimeError(forked_child_message(what)); }

CudaDriver &CudaDriver::instance() noexcept {
    // Leaked on purpose: buffers and contexts released by static destructors at exit still need
    // the entry points.
    static CudaDriver *driver = [] {
        auto *d = new CudaDriver;
        d->load();
        return d;
    }();
    return *driver;
}

const CudaDriver &CudaDriver::get() {
    if (is_forked_child()) [[unlikely]]
        throw_forked_child("a CUDA DeviceContext");
    return instance().usable_or_throw();
}

const CudaDriver &CudaDriver::usable_or_throw() const {
    if (!error_.empty()) throw RuntimeError(error_, error_code_, error_code_name_);
    return *this;
}

const CudaDriver *CudaDriver::usable_or_why(std::string *why) const noexcept {
    if (error_.empty()) return this;
    if (why) {
        try {
            *why = error_;
        } catch (...) {
        }
    }
    return nullptr;
}

const CudaDriver *CudaDriver::try_get(std::string *why) noexcept {
    if (is_forked_child()) [[unlikely]] {
        if (why) {
            try {
                *why = forked_child_message("CUDA");
            } catch (...) {
            }
        }
        return nullptr;
    }
    return instance().usable_or_why(why);
}

void CudaDriver::load() noexcept {
    try {
        library_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!library_) {
            const char *why = dlerror();
            error_ = std::string("cannot load libcuda.so.1: ") + (why ? why : "unknown error") +
                     "; is the NVIDIA driver installed?";
            return;
        }
        std::string missing;
        auto sym = [&](auto &fn, const char *name, bool required) {
            void *p = dlsym(library_, name);
            if (!p && required) missing += missing.empty() ? name : std::string(", ") + name;
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        };
        sym(cuInit, "cuInit", true);
        sym(cuDriverGetVersion, "cuDriverGetVersion", true);
        sym(cuGetErrorName, "cuGetErrorName", true);
        sym(cuGetErrorString, "cuGetErrorString", true);
        sym(cuDeviceGetCount, "cuDeviceGetCount", true);
        sym(cuDeviceGet, "cuDeviceGet", true);
        sym(cuDeviceGetName, "cuDeviceGetName", true);
        sym(cuDeviceGetAttribute, "cuDeviceGetAttribute", true);
        sym(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", true);
        sym(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", true);
        sym(cuCtxGetCurrent, "cuCtxGetCurrent", true);
        sym(cuCtxSetCurrent, "cuCtxSetCurrent", true);
        sym(cuStreamCreate, "cuStreamCreate", true);
        sym(cuStreamDestroy, "cuStreamDestroy_v2", true);
        sym(cuStreamSynchronize, "cuStreamSynchronize", true);
        sym(cuMemAlloc, "cuMemAlloc_v2", true);
        sym(cuMemFree, "cuMemFree_v2", true);
        sym(cuMemAllocHost, "cuMemAllocHost_v2", true);
        sym(cuMemFreeHost, "cuMemFreeHost", true);
        sym(cuMemGetInfo, "cuMemGetInfo_v2", true);
        sym(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", true);
        sym(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", true);
        sym(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", true);
        sym(cuModuleLoadDataEx, "cuModuleLoadDataEx", true);
        sym(cuModuleGetFunction, "cuModuleGetFunction", true);
        sym(cuModuleUnload, "cuModuleUnload", true);
        sym(cuLaunchKernel, "cuLaunchKernel", true);
        sym(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", true);
        sym(cuStreamQuery, "cuStreamQuery", true);
        sym(cuStreamWaitEvent, "cuStreamWaitEvent", true);
        sym(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", true);
        sym(cuEventCreate, "cuEventCreate", true);
        sym(cuEventDestroy, "cuEventDestroy_v2", true);
        sym(cuEventRecord, "cuEventRecord", true);
        sym(cuEventQuery, "cuEventQuery", true);
        sym(cuEventSynchronize, "cuEventSynchronize", true);
        sym(cuEventElapsedTime, "cuEventElapsedTime", true);

        // Device information and context limits.
        sym(cuDeviceTotalMem, "cuDeviceTotalMem_v2", true);
        sym(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", true);
        sym(cuCtxGetApiVersion, "cuCtxGetApiVersion", true);
        sym(cuCtxGetLimit, "cuCtxGetLimit", true);
        sym(cuCtxSetLimit, "cuCtxSetLimit", true);

        // Memory: memset, views, mapping, host and managed memory.
        sym(cuMemsetD8Async, "cuMemsetD8Async", true);
        sym(cuMemsetD16Async, "cuMemsetD16Async", true);
        sym(cuMemsetD32Async, "cuMemsetD32Async", true);
        sym(cuMemAllocManaged, "cuMemAllocManaged", true);
        sym(cuStreamAttachMemAsync, "cuStreamAttachMemAsync", true);
        sym(cuMemHostAlloc, "cuMemHostAlloc", true);
        sym(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", true);
        sym(cuMemHostRegister, "cuMemHostRegister_v2", true);
        sym(cuMemHostUnregister, "cuMemHostUnregister", true);

        // Memory: pitched 2-D/3-D copies, peer access, IPC.
        sym(cuMemAllocPitch, "cuMemAllocPitch_v2", true);
        sym(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", true);
        sym(cuMemcpy3DAsync, "cuMemcpy3DAsync_v2", true);
        sym(cuMemcpyAsync, "cuMemcpyAsync", true);
        sym(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", true);
        sym(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", true);
        sym(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", true);
        sym(cuCtxDisablePeerAccess, "cuCtxDisablePeerAccess", true);
        sym(cuIpcGetMemHandle, "cuIpcGetMemHandle", true);
        sym(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2", true);
        sym(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", true);
        sym(cuMemGetAddressRange, "cuMemGetAddressRange_v2", true);
        // Memory pools (CUDA 11.2+): only for peer access to pooled allocations.
        sym(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", false);
        sym(cuMemPoolSetAccess, "cuMemPoolSetAccess", false);
        // The linker (compile cache cubins): optional.
        sym(cuLinkCreate, "cuLinkCreate_v2", false);
        sym(cuLinkAddData, "cuLinkAddData_v2", false);
        sym(cuLinkComplete, "cuLinkComplete", false);
        sym(cuLinkDestroy, "cuLinkDestroy", false);

        // Function attributes, launch attributes, clusters, occupancy.
        sym(cuFuncGetAttribute, "cuFuncGetAttribute", true);
        sym(cuFuncSetAttribute, "cuFuncSetAttribute", true);
        sym(cuFuncSetCacheConfig, "cuFuncSetCacheConfig", true);
        sym(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", true);
        sym(cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", true);
        sym(cuLaunchKernelEx, "cuLaunchKernelEx", /*required=*/false);

        // Constant memory and external modules.
        sym(cuModuleGetGlobal, "cuModuleGetGlobal_v2", true);
        sym(cuModuleGetFunctionCount, "cuModuleGetFunctionCount", /*required=*/false);
        sym(cuModuleEnumerateFunctions, "cuModuleEnumerateFunctions", /*required=*/false);
        sym(cuFuncGetName, "cuFuncGetName", /*required=*/false);

        // Graphs.
        sym(cuStreamBeginCapture, "cuStreamBeginCapture_v2", false);
        sym(cuStreamEndCapture, "cuStreamEndCapture", false);
        sym(cuStreamGetCaptureInfo_v3, "cuStreamGetCaptureInfo_v3", false);
        sym(cuStreamGetCaptureInfo_v2, "cuStreamGetCaptureInfo_v2", false);
        sym(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", false);
        sym(cuGraphLaunch, "cuGraphLaunch", false);
        sym(cuGraphExecDestroy, "cuGraphExecDestroy", false);
        sym(cuGraphDestroy, "cuGraphDestroy", false);
        sym(cuGraphGetNodes, "cuGraphGetNodes", false);
        sym(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2", false);
        if (!cuGraphExecKernelNodeSetParams)
            sym(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", false);
        // Tensor maps (CUDA 12.0+).
        sym(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", /*required=*/false);
        sym(cuMemAllocAsync, "cuMemAllocAsync", /*required=*/false);
        sym(cuMemFreeAsync, "cuMemFreeAsync", /*required=*/false);
        if (!cuMemAllocAsync || !cuMemFreeAsync) {
            cuMemAllocAsync = nullptr;
            cuMemFreeAsync = nullptr;
        }
        if (!missing.empty()) {
            error_ = "libcuda.so.1 lacks " + missing +
                     "; the NVIDIA driver is too old for ember, which needs a driver for CUDA 11 "
                     "or newer";
            return;
        }
        if (cu::CUresult rc = cuInit(0); rc != cu::CUDA_SUCCESS) {
            std::string desc = error_string(rc);
            error_code_ = rc;
            error_code_name_ = error_name(rc);
            error_ = "cuInit failed: " + error_code_name_ + (desc.empty() ? "" : " (" + desc + ")");
            if (rc == cu::CUDA_ERROR_NO_DEVICE)
                error_ += "; no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
            return;
        }
        if (cuDriverGetVersion(&version_) != cu::CUDA_SUCCESS) version_ = 0;
        // [Note] CUDA and fork.
        pthread_atfork(nullptr, nullptr, &note_forked_child);
    } catch (...) {
        // Only std::bad_alloc can get here.
        error_ = "cannot load libcuda.so.1: out of host memory";
    }
}

namespace {
/// The leading call name of `text` ("cuMemAlloc failed"): its length, 0 when there is none.
size_t leading_call(std::string_view text) {
    if (text.size() < 3 || text[0] != 'c' || text[1] != 'u' || !std::isupper(static_cast<unsigned char>(text[2])))
        return 0;
    size_t n = 2;
    while (n < text.size() && (std::isalnum(static_cast<unsigned char>(text[n])) || text[n] == '_')) ++n;
    return n;
}

/// The HIP calls behind the table's entries where HIP's name is not the CUDA name with "hip" for
/// "cu" (cuda/HipDriver.cpp fills the entries with them).
constexpr std::pair<std::string_view, std::string_view> hip_call_names[] = {
    {"cuDeviceGetCount", "hipGetDeviceCount"},
    {"cuStreamCreate", "hipStreamCreateWithFlags"},
    {"cuMemAlloc", "hipMalloc"},
    {"cuMemFree", "hipFree"},
    {"cuMemAllocHost", "hipHostMalloc"},
    {"cuMemFreeHost", "hipHostFree"},
    {"cuMemHostAlloc", "hipHostMalloc"},
    {"cuMemAllocManaged", "hipMallocManaged"},
    {"cuMemAllocPitch", "hipMallocPitch"},
    {"cuMemAllocAsync", "hipMallocAsync"},
    {"cuMemFreeAsync", "hipFreeAsync"},
    {"cuMemHostGetDevicePointer", "hipHostGetDevicePointer"},
    {"cuMemHostRegister", "hipHostRegister"},
    {"cuMemHostUnregister", "hipHostUnregister"},
    {"cuMemcpy2DAsync", "hipMemcpy2DAsync"},
    {"cuMemcpy3DAsync", "hipMemcpy3DAsync"},
    {"cuMemcpyPeerAsync", "hipMemcpyAsync"},
    {"cuModuleLoadDataEx", "hipModuleLoadData"},
    {"cuLaunchKernel", "hipModuleLaunchKernel"},
    {"cuEventCreate", "hipEventCreateWithFlags"},
    {"cuCtxGetStreamPriorityRange", "hipDeviceGetStreamPriorityRange"},
    {"cuCtxGetLimit", "hipDeviceGetLimit"},
    {"cuCtxSetLimit", "hipDeviceSetLimit"},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessor", "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor"},
    {"cuOccupancyMaxPotentialBlockSize", "hipModuleOccupancyMaxPotentialBlockSize"},
    {"cuStreamGetCaptureInfo", "hipStreamGetCaptureInfo_v2"},
};
} // namespace

std::string CudaDriver::call_name(std::string_view cu_call) const {
    if (!is_hip() || leading_call(cu_call) != cu_call.size()) return std::string(cu_call);
    for (const auto &[cu_name, hip_name] : hip_call_names)
        if (cu_name == cu_call) return std::string(hip_name);
    return "hip" + std::string(cu_call.substr(2));
}

void CudaDriver::raise(cu::CUresult rc, std::string_view what_failed,
                       std::string_view context) const {
    if (cuda_error_is_sticky(rc)) sticky_reported_ = true;
    std::string what(what_failed);
    if (const size_t n = leading_call(what); n && is_hip()) what = call_name(what.substr(0, n)) + what.substr(n);
    throw_cuda_error(rc, what, context, error_name(rc), error_string(rc), is_hip() ? "HIP" : "CUDA");
}

std::vector<std::string> CudaDriver::empty_required_entries() const {
    std::vector<std::string> empty;
#define EMBER_REQUIRED(name) \
    if (!name) empty.push_back(#name);
    EMBER_REQUIRED(cuInit) EMBER_REQUIRED(cuDriverGetVersion) EMBER_REQUIRED(cuGetErrorName)
    EMBER_REQUIRED(cuGetErrorString) EMBER_REQUIRED(cuDeviceGetCount) EMBER_REQUIRED(cuDeviceGet)
    EMBER_REQUIRED(cuDeviceGetName) EMBER_REQUIRED(cuDeviceGetAttribute) EMBER_REQUIRED(cuDevicePrimaryCtxRetain)
    EMBER_REQUIRED(cuDevicePrimaryCtxRelease) EMBER_REQUIRED(cuCtxGetCurrent) EMBER_REQUIRED(cuCtxSetCurrent)
    EMBER_REQUIRED(cuStreamCreate) EMBER_REQUIRED(cuStreamDestroy) EMBER_REQUIRED(cuStreamSynchronize)
    EMBER_REQUIRED(cuMemAlloc) EMBER_REQUIRED(cuMemFree) EMBER_REQUIRED(cuMemAllocHost) EMBER_REQUIRED(cuMemFreeHost)
    EMBER_REQUIRED(cuMemGetInfo) EMBER_REQUIRED(cuMemcpyHtoDAsync) EMBER_REQUIRED(cuMemcpyDtoHAsync)
    EMBER_REQUIRED(cuMemcpyDtoDAsync) EMBER_REQUIRED(cuModuleLoadDataEx) EMBER_REQUIRED(cuModuleGetFunction)
    EMBER_REQUIRED(cuModuleUnload) EMBER_REQUIRED(cuLaunchKernel) EMBER_REQUIRED(cuStreamCreateWithPriority)
    EMBER_REQUIRED(cuStreamQuery) EMBER_REQUIRED(cuStreamWaitEvent) EMBER_REQUIRED(cuCtxGetStreamPriorityRange)
    EMBER_REQUIRED(cuEventCreate) EMBER_REQUIRED(cuEventDestroy) EMBER_REQUIRED(cuEventRecord)
    EMBER_REQUIRED(cuEventQuery) EMBER_REQUIRED(cuEventSynchronize) EMBER_REQUIRED(cuEventElapsedTime)
    EMBER_REQUIRED(cuDeviceTotalMem) EMBER_REQUIRED(cuDeviceGetPCIBusId) EMBER_REQUIRED(cuCtxGetApiVersion)
    EMBER_REQUIRED(cuCtxGetLimit) EMBER_REQUIRED(cuCtxSetLimit) EMBER_REQUIRED(cuMemsetD8Async)
    EMBER_REQUIRED(cuMemsetD16Async) EMBER_REQUIRED(cuMemsetD32Async) EMBER_REQUIRED(cuMemAllocManaged)
    EMBER_REQUIRED(cuStreamAttachMemAsync) EMBER_REQUIRED(cuMemHostAlloc) EMBER_REQUIRED(cuMemHostGetDevicePointer)
    EMBER_REQUIRED(cuMemHostRegister) EMBER_REQUIRED(cuMemHostUnregister) EMBER_REQUIRED(cuMemAllocPitch)
    EMBER_REQUIRED(cuMemcpy2DAsync) EMBER_REQUIRED(cuMemcpy3DAsync) EMBER_REQUIRED(cuMemcpyAsync)
    EMBER_REQUIRED(cuMemcpyPeerAsync) EMBER_REQUIRED(cuDeviceCanAccessPeer) EMBER_REQUIRED(cuCtxEnablePeerAccess)
    EMBER_REQUIRED(cuCtxDisablePeerAccess) EMBER_REQUIRED(cuIpcGetMemHandle) EMBER_REQUIRED(cuIpcOpenMemHandle)
    EMBER_REQUIRED(cuIpcCloseMemHandle) EMBER_REQUIRED(cuMemGetAddressRange) EMBER_REQUIRED(cuFuncGetAttribute)
    EMBER_REQUIRED(cuFuncSetAttribute) EMBER_REQUIRED(cuFuncSetCacheConfig)
    EMBER_REQUIRED(cuOccupancyMaxActiveBlocksPerMultiprocessor) EMBER_REQUIRED(cuOccupancyMaxPotentialBlockSize)
    EMBER_REQUIRED(cuModuleGetGlobal)
#undef EMBER_REQUIRED
    return empty;
}

bool CudaDriver::log_if_error(cu::CUresult rc, const char *call,
                              std::string_view context) const noexcept {
    if (rc == cu::CUDA_SUCCESS) return true;
    if (rc == cu::CUDA_ERROR_DEINITIALIZED) return false;
    if (cuda_error_is_sticky(rc) && sticky_reported_.exchange(true)) return false;
    try {
        std::string desc = error_string(rc);
        std::string msg = "ember: warning: " + call_name(call) + " failed: " + error_name(rc);
        if (!desc.empty()) msg += " (" + desc + ")";
        msg += context;
        std::fprintf(stderr, "%s\n", msg.c_str());
    } catch (...) {
        std::fprintf(stderr, "ember: warning: %s failed: CUresult %d\n", call, rc);
    }
    return false;
}

std::string CudaDriver::error_name(cu::CUresult rc) const {
    const char *s = nullptr;
    if (cuGetErrorName && cuGetErrorName(rc, &s) == cu::CUDA_SUCCESS && s) return s;
    return cuda_error_name(rc);
}

std::string CudaDriver::error_string(cu::CUresult rc) const {
    const char *s = nullptr;
    if (cuGetErrorString && cuGetErrorString(rc, &s) == cu::CUDA_SUCCESS && s) return s;
    return {};
}

} // namespace ember::detail
