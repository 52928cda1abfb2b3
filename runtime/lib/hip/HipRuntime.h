/// \file
/// The HIP runtime (ROCm's libamdhip64), loaded at run time with dlopen: no ROCm header or
/// library at build time, as for CUDA (cuda/CudaDriver.h).
///
/// [Note] HIP runtime loading
/// ==========================
/// `HipRuntime::get()` opens libamdhip64.so.6, then .so.5, then libamdhip64.so (ROCm 6, ROCm 5,
/// a development link), once per process, and resolves every entry point of
/// `EMBER_HIP_ENTRY_POINTS` together: the library is usable only when all of them are there, and
/// `missing()` names the ones that are not (Debian 12's libamdhip64-5, ROCm 5.2, has them all).
/// The library is never closed: the HIP runtime registers exit handlers that must find it loaded.
/// HIP's errors read `hipErrorNoDevice (100): no ROCm-capable device is detected`, from
/// `hipGetErrorName` and `hipGetErrorString` (which ROCm 5.2 makes the name again; the text is
/// then given once). `DeviceContext(api = "hip")` asks `hipInit` and `hipGetDeviceCount` and
/// raises RuntimeError with HIP's own error where they fail (no AMD GPU, no /dev/kfd). ember's HIP
/// back end runs kernels through these entry points ([Note] HIP back end in cuda/HipDriver.cpp).
/// Nothing here has run on AMD hardware; tests run against the real library without a GPU
/// (HipRuntimeTest, HipDriverTest).
#ifndef EMBER_RUNTIME_HIP_HIPRUNTIME_H
#define EMBER_RUNTIME_HIP_HIPRUNTIME_H

#include <map>
#include <string>
#include <vector>

namespace ember::detail {

namespace hip {
using hipError_t = int; // an enum in hip_runtime_api.h; 0 is hipSuccess
inline constexpr hipError_t hipSuccess = 0;
} // namespace hip

/// Every entry point the HIP back end calls (cuda/HipDriver.cpp, which fills the driver table of
/// the CUDA-shaped back end with them), by the names of hip_runtime_api.h. All must be there;
/// `optional_entry` finds the few that ROCm 5.2 lacks.
#define EMBER_HIP_ENTRY_POINTS(X)                                                                  \
    X(hipInit) X(hipDriverGetVersion) X(hipRuntimeGetVersion) X(hipGetDeviceCount) X(hipDeviceGet)  \
    X(hipDeviceGetName) X(hipDeviceGetAttribute) X(hipDeviceTotalMem) X(hipDeviceGetPCIBusId)       \
    X(hipGetDeviceProperties) X(hipGetErrorName) X(hipGetErrorString) X(hipDevicePrimaryCtxRetain)  \
    X(hipDevicePrimaryCtxRelease) X(hipCtxGetCurrent) X(hipCtxSetCurrent) X(hipCtxGetApiVersion)    \
    X(hipDeviceCanAccessPeer) X(hipCtxEnablePeerAccess) X(hipCtxDisablePeerAccess)                  \
    X(hipDeviceGetLimit) X(hipDeviceGetStreamPriorityRange) X(hipMalloc) X(hipFree)                 \
    X(hipMallocAsync) X(hipFreeAsync) X(hipDeviceGetDefaultMemPool) X(hipMemPoolSetAccess)          \
    X(hipHostMalloc) X(hipHostFree) X(hipMallocManaged) X(hipStreamAttachMemAsync) X(hipMallocPitch) \
    X(hipHostRegister) X(hipHostUnregister) X(hipHostGetDevicePointer) X(hipMemGetInfo)             \
    X(hipMemGetAddressRange) X(hipMemcpyHtoDAsync) X(hipMemcpyDtoHAsync) X(hipMemcpyDtoDAsync)      \
    X(hipMemcpyAsync) X(hipMemcpy2DAsync) X(hipMemcpy3DAsync) X(hipMemsetD8Async)                  \
    X(hipMemsetD16Async) X(hipMemsetD32Async) X(hipModuleLoadData) X(hipModuleUnload)               \
    X(hipModuleGetFunction) X(hipModuleGetGlobal) X(hipModuleLaunchKernel) X(hipFuncGetAttribute)   \
    X(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor) X(hipModuleOccupancyMaxPotentialBlockSize) \
    X(hipStreamCreateWithFlags) X(hipStreamCreateWithPriority) X(hipStreamDestroy) X(hipStreamQuery) \
    X(hipStreamSynchronize) X(hipStreamWaitEvent) X(hipEventCreateWithFlags) X(hipEventDestroy)     \
    X(hipEventRecord) X(hipEventQuery) X(hipEventSynchronize) X(hipEventElapsedTime)                \
    X(hipIpcGetMemHandle) X(hipIpcOpenMemHandle) X(hipIpcCloseMemHandle) X(hipStreamBeginCapture)   \
    X(hipStreamEndCapture) X(hipStreamGetCaptureInfo_v2) X(hipGraphInstantiateWithFlags)            \
    X(hipGraphLaunch) X(hipGraphDestroy) X(hipGraphExecDestroy) X(hipGraphGetNodes)                 \
    X(hipGraphExecKernelNodeSetParams)

/// The loaded library ([Note] HIP runtime loading).
class HipRuntime {
public:
    /// The process's one instance, loaded on first use.
    static const HipRuntime &get();

    /// The library was found and every entry point resolved.
    bool usable() const { return handle_ != nullptr && missing_.empty(); }
    /// The file dlopen found ("" when none).
    const std::string &library() const { return library_; }
    /// Why the library is not usable: dlopen's messages, or the missing entry points.
    std::string problem() const;
    /// The entry points the library lacks.
    const std::vector<std::string> &missing() const { return missing_; }
    /// Every entry point's name, in the order of EMBER_HIP_ENTRY_POINTS.
    static const std::vector<std::string> &entry_point_names();
    /// The address of an entry point (nullptr when not resolved).
    void *entry(const std::string &name) const;
    /// The address of a symbol outside EMBER_HIP_ENTRY_POINTS that newer ROCm releases have
    /// (hipDeviceSetLimit, hipGetDevicePropertiesR0600), nullptr without it or the library.
    void *optional_entry(const char *name) const;

    /// `hipErrorNoDevice (100): no ROCm-capable device is detected`; the code alone where the
    /// library cannot name it.
    std::string describe(hip::hipError_t e) const;
    /// hipInit(0), then hipGetDeviceCount: the count, or the failing call and HIP's error in
    /// `error` (count 0).
    int device_count(std::string *error = nullptr) const;

private:
    HipRuntime();
    void *handle_ = nullptr;
    std::string library_, dlopen_errors_;
    std::map<std::string, void *> entries_;
    std::vector<std::string> missing_;
};

/// Number of HIP devices; 0 when the library is missing or unusable, or HIP reports an error.
int hip_device_count() noexcept;

/// Checks that HIP device `device_id` exists: RuntimeError naming the library's problem or HIP's
/// own error (no AMD GPU), LogicError for an id past the last device.
void check_hip_device(int device_id);

} // namespace ember::detail

#endif // EMBER_RUNTIME_HIP_HIPRUNTIME_H
