/// \file
/// The CUDA Driver API, loaded at run time with dlopen("libcuda.so.1"): the few types, constants
/// and entry points ember uses, declared here (no CUDA SDK header or library at build time), the
/// mapping of `CUresult` to ember's exceptions, and the CUDA back end's LoadedFunction.
///
/// [Note] CUDA errors
/// ==================
/// Every driver call goes through `CudaDriver::check`, which throws, following PyCUDA's classes:
/// * MemoryError: CUDA_ERROR_OUT_OF_MEMORY.
/// * LaunchError: a launch that failed or a kernel that faulted (launch failed, illegal address,
///   misaligned address, illegal instruction, invalid PC / address space, hardware stack error,
///   device-side assert, launch timeout, launch out of resources, incompatible texturing,
///   cooperative launch too large, tensor memory leak).
/// * LogicError: the program asked for something impossible (invalid value/handle/context/device/
///   image, not found, not supported, not initialised, context destroyed, illegal state, no binary
///   for this GPU, invalid PTX, unsupported PTX version, the stream capture and graph errors 900-908
///   and 910: CUDA_ERROR_STREAM_CAPTURE_*, CUDA_ERROR_CAPTURED_EVENT,
///   CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE). `CudaBackend::load` turns the failures of
///   cuModuleLoadDataEx into CompileError carrying the JIT log instead.
/// * RuntimeError: everything else (no device, driver too old, ECC errors, the unknown).
/// Messages read `<call> failed: CUDA_ERROR_XXX (<driver's description>)<context>`. The sticky
/// errors (a kernel fault, a timeout, a device assert, a contained hardware error) leave the
/// context unusable for the rest of the process; their messages say so.
#ifndef EMBER_RUNTIME_CUDA_CUDADRIVER_H
#define EMBER_RUNTIME_CUDA_CUDADRIVER_H

#include "Backend.h"
#include "cuda/CudaFunctionApi.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember::detail {

/// The Driver API's types and constants, by the values of cuda.h (CUDA 12/13; they never change).
namespace cu {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUevent = CUevent_st *;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUdevice_attribute = int;
using CUjit_option = int;
struct CUlinkState_st;
using CUlinkState = CUlinkState_st *;
using CUjitInputType = int;
/// CUjitInputType: PTX source.
inline constexpr CUjitInputType CU_JIT_INPUT_PTX = 1;

enum : CUresult {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_CONTAINED = 226,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING = 703,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    CUDA_ERROR_TENSOR_MEMORY_LEAK = 721,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999,
};

enum : CUdevice_attribute {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
};

enum : CUjit_option {
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_JIT_LOG_VERBOSE = 12,
};

enum : unsigned { CU_STREAM_NON_BLOCKING = 0x1 };
// Flags of cuMemAllocManaged, cuMemHostAlloc and cuMemHostRegister.
enum : unsigned { CU_MEM_ATTACH_GLOBAL = 0x1, CU_MEM_ATTACH_HOST = 0x2, CU_MEM_ATTACH_SINGLE = 0x4 };
enum : unsigned { CU_MEMHOSTALLOC_PORTABLE = 0x1, CU_MEMHOSTALLOC_DEVICEMAP = 0x2 };
enum : unsigned { CU_MEMHOSTREGISTER_PORTABLE = 0x1, CU_MEMHOSTREGISTER_DEVICEMAP = 0x2 };
enum : unsigned {
    CU_EVENT_DEFAULT = 0x0,
    CU_EVENT_BLOCKING_SYNC = 0x1,
    CU_EVENT_DISABLE_TIMING = 0x2,
    CU_EVENT_INTERPROCESS = 0x4,
};
// Pitched 2-D/3-D copies, peer access, IPC.
struct CUarray_st;
struct CUmemPoolHandle_st;
using CUarray = CUarray_st *;
using CUmemoryPool = CUmemPoolHandle_st *;
enum : int { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_UNIFIED = 4 };
/// CUDA_MEMCPY2D_v2 of cuda.h.
struct CUDA_MEMCPY2D {
    size_t srcXInBytes;
    size_t srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    size_t srcPitch;
    size_t dstXInBytes;
    size_t dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    size_t dstPitch;
    size_t WidthInBytes;
    size_t Height;
};
/// CUDA_MEMCPY3D_v2 of cuda.h.
struct CUDA_MEMCPY3D {
    size_t srcXInBytes;
    size_t srcY;
    size_t srcZ;
    size_t srcLOD;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    void *reserved0;
    size_t srcPitch;
    size_t srcHeight;
    size_t dstXInBytes;
    size_t dstY;
    size_t dstZ;
    size_t dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    void *reserved1;
    size_t dstPitch;
    size_t dstHeight;
    size_t WidthInBytes;
    size_t Height;
    size_t Depth;
};
/// CUipcMemHandle_v1: 64 opaque bytes, passed by value.
struct CUipcMemHandle {
    char reserved[64];
};
enum : unsigned { CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1 };
/// CUmemLocation and CUmemAccessDesc (cuMemPoolSetAccess).
struct CUmemLocation {
    int type;
    int id;
};
struct CUmemAccessDesc {
    CUmemLocation location;
    int flags;
};
enum : int { CU_MEM_LOCATION_TYPE_DEVICE = 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 };
} // namespace cu

// [graphs] Graph types and constants of cuda.h ([Note] Graphs in BackendGraph.h).
namespace cu {
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
using CUgraph = CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;
using CUgraphNode = CUgraphNode_st *;
enum : CUresult {
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_MERGE = 902,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
    CUDA_ERROR_CAPTURED_EVENT = 907,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
};
/// CUstreamCaptureMode and CUstreamCaptureStatus.
enum : int { CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
enum : int { CU_STREAM_CAPTURE_STATUS_NONE = 0, CU_STREAM_CAPTURE_STATUS_ACTIVE = 1 };
/// cuStreamWaitEvent's flag that captures the wait as an event wait node.
enum : unsigned { CU_EVENT_WAIT_EXTERNAL = 0x1 };
/// CUDA_KERNEL_NODE_PARAMS_v2 (CUDA 12); its first fields are CUDA_KERNEL_NODE_PARAMS_v1.
struct CUDA_KERNEL_NODE_PARAMS {
    CUfunction func;
    unsigned gridDimX, gridDimY, gridDimZ;
    unsigned blockDimX, blockDimY, blockDimZ;
    unsigned sharedMemBytes;
    void **kernelParams;
    void **extra;
    void *kern;
    CUcontext ctx;
};
} // namespace cu

// Tensor maps (cuTensorMapEncodeTiled, CUDA 12.0+; [Note] Tensor maps in
// ember/runtime/TensorMap.h).
namespace cu {
using cuuint32_t = unsigned;
using cuuint64_t = unsigned long long;
/// CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) CUtensorMap {
    cuuint64_t opaque[16];
};
/// CUtensorMapDataType.
enum : int {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
    CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4,
    CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
};
/// CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill.
enum : int { CU_TENSOR_MAP_INTERLEAVE_NONE = 0 };
enum : int {
    CU_TENSOR_MAP_SWIZZLE_NONE = 0,
    CU_TENSOR_MAP_SWIZZLE_32B = 1,
    CU_TENSOR_MAP_SWIZZLE_64B = 2,
    CU_TENSOR_MAP_SWIZZLE_128B = 3,
};
enum : int {
    CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
    CU_TENSOR_MAP_L2_PROMOTION_L2_64B = 1,
    CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
};
/// Elements outside the tensor read as zeros.
enum : int { CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0 };
} // namespace cu

/// Which public exception a CUresult becomes; see [Note] CUDA errors.
enum class CudaErrorClass { Memory, Logic, Launch, Runtime };

/// The class of `code` (any CUresult but CUDA_SUCCESS). Pure: needs no driver.
CudaErrorClass cuda_error_class(int code) noexcept;
/// Whether `code` leaves the context unusable for the rest of the process.
bool cuda_error_is_sticky(int code) noexcept;
/// `CUDA_ERROR_OUT_OF_MEMORY` for 2, from a built-in table of cuda.h's names;
/// `CUresult(<code>)` for a code the table does not know. Pure: needs no driver.
std::string cuda_error_name(int code);

/// Throws the exception of cuda_error_class(code), with code() = `code` and
/// code_name() = `name` (cuda_error_name(code) when empty), and the message
/// `<what_failed>: <name> (<description>)<context>`, plus a note for sticky errors. The driver's
/// description is left out when `description` is empty. Pure, for the driver and for tests.
[[noreturn]] void throw_cuda_error(int code, std::string_view what_failed,
                                   std::string_view context, std::string_view name = {},
                                   std::string_view description = {}, std::string_view api = "CUDA");

/// The hipDeviceAttribute_t of ember's device attribute `cuda_attribute` (CUDA's number), -1
/// where HIP has none ([Note] HIP back end in HipDriver.cpp).
int hip_device_attribute(int cuda_attribute);

/// libcuda.so.1, loaded once per process and never unloaded (so that destructors running at exit
/// can still call it), with cuInit(0) done. The entry points are public and keep the names of
/// cuda.h's macros (`cuMemAlloc` is the driver's `cuMemAlloc_v2`), so calls read like the docs.
/// Thread-safe: the Driver API is.
class CudaDriver {
public:
    /// The driver. Throws RuntimeError when libcuda.so.1 cannot be loaded, lacks an entry point
    /// ember needs, or cuInit fails (CUDA_ERROR_NO_DEVICE included).
    static const CudaDriver &get();
    /// The driver, or nullptr with the reason in `*why` (when given) instead of throwing.
    static const CudaDriver *try_get(std::string *why = nullptr) noexcept;

    /// The same table filled with the HIP runtime's entry points ([Note] HIP back end in
    /// cuda/HipDriver.cpp), hipInit(0) done. Throws RuntimeError naming the library's problem or
    /// HIP's error.
    static const CudaDriver &hip();
    /// The HIP table, or nullptr with the reason in `*why`.
    static const CudaDriver *try_hip(std::string *why = nullptr) noexcept;
    /// The HIP table whether or not hipInit succeeded (nullptr without a usable library): for
    /// tests, which check that every entry is filled.
    static const CudaDriver *hip_table_for_testing() noexcept;

    /// "cuda" or "hip": whose entry points fill the table.
    std::string_view api() const noexcept { return api_; }
    bool is_hip() const noexcept { return api_ == "hip"; }
    /// The name of the call `cu_call` (a name of this table, "cuMemAlloc") in the api's own
    /// vocabulary ("hipMalloc" on HIP), for messages.
    std::string call_name(std::string_view cu_call) const;
    /// The names of the required entries that are empty (none for a usable table).
    std::vector<std::string> empty_required_entries() const;

    /// [Note] CUDA and fork
    /// CUDA does not support a child of fork() using the driver that its parent initialised:
    /// calls fail or hang there. So once cuInit succeeded, a pthread_atfork child handler marks
    /// the process, and in a child every use is refused with a RuntimeError before the driver is
    /// called: get() (so new CUDA contexts; try_get returns nullptr, and the child counts no CUDA
    /// device, so the "default" api is the CPU device there), and every ScopedCurrent, which all
    /// work on a context goes through. The nothrow ScopedCurrent of destructors does nothing
    /// there, so a child that exits normally does not call the driver either. A process that
    /// forks before its first CUDA call may use CUDA in the child as usual.
    /// Whether this process is a child of fork() made after CUDA was initialised.
    static bool is_forked_child() noexcept;
    /// RuntimeError: CUDA cannot be used in this child of fork(); `what` names the use.
    [[noreturn]] static void throw_forked_child(std::string_view what);

    /// Throws for `rc` != CUDA_SUCCESS (see [Note] CUDA errors): `<call> failed: ...<context>`.
    /// `context` is appended as is; start it with "; " or " (".
    void check(cu::CUresult rc, const char *call, std::string_view context = {}) const {
        if (rc != cu::CUDA_SUCCESS) raise(rc, std::string(call) + " failed", context);
    }
    /// Throws for `rc` as check does, with `what_failed` in place of "<call> failed".
    [[noreturn]] void raise(cu::CUresult rc, std::string_view what_failed,
                            std::string_view context = {}) const;
    /// For destructors and other noexcept paths: prints "ember: warning: <call> failed: ..." to
    /// stderr for `rc` != CUDA_SUCCESS. Stays silent for CUDA_ERROR_DEINITIALIZED (the process is
    /// exiting) and for a sticky error once one has been thrown or logged (every later call
    /// fails with it). Returns whether `rc` was CUDA_SUCCESS.
    bool log_if_error(cu::CUresult rc, const char *call,
                      std::string_view context = {}) const noexcept;

    /// The driver's name for `rc` (cuGetErrorName), else the built-in table's.
    std::string error_name(cu::CUresult rc) const;
    /// The driver's description of `rc` (cuGetErrorString), or empty.
    std::string error_string(cu::CUresult rc) const;
    /// cuDriverGetVersion: 12040 for CUDA 12.4.
    int version() const noexcept { return version_; }

    // Required entry points.
    cu::CUresult (*cuInit)(unsigned flags) = nullptr;
    cu::CUresult (*cuDriverGetVersion)(int *version) = nullptr;
    cu::CUresult (*cuGetErrorName)(cu::CUresult rc, const char **str) = nullptr;
    cu::CUresult (*cuGetErrorString)(cu::CUresult rc, const char **str) = nullptr;
    cu::CUresult (*cuDeviceGetCount)(int *count) = nullptr;
    cu::CUresult (*cuDeviceGet)(cu::CUdevice *dev, int ordinal) = nullptr;
    cu::CUresult (*cuDeviceGetName)(char *name, int len, cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuDeviceGetAttribute)(int *value, cu::CUdevice_attribute attr,
                                         cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuDevicePrimaryCtxRetain)(cu::CUcontext *ctx, cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuDevicePrimaryCtxRelease)(cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuCtxGetCurrent)(cu::CUcontext *ctx) = nullptr;
    cu::CUresult (*cuCtxSetCurrent)(cu::CUcontext ctx) = nullptr;
    cu::CUresult (*cuStreamCreate)(cu::CUstream *stream, unsigned flags) = nullptr;
    cu::CUresult (*cuStreamDestroy)(cu::CUstream stream) = nullptr;
    cu::CUresult (*cuStreamSynchronize)(cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemAlloc)(cu::CUdeviceptr *p, size_t bytes) = nullptr;
    cu::CUresult (*cuMemFree)(cu::CUdeviceptr p) = nullptr;
    cu::CUresult (*cuMemAllocHost)(void **p, size_t bytes) = nullptr;
    cu::CUresult (*cuMemFreeHost)(void *p) = nullptr;
    cu::CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes) = nullptr;
    cu::CUresult (*cuMemcpyHtoDAsync)(cu::CUdeviceptr dst, const void *src, size_t bytes,
                                      cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemcpyDtoHAsync)(void *dst, cu::CUdeviceptr src, size_t bytes,
                                      cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemcpyDtoDAsync)(cu::CUdeviceptr dst, cu::CUdeviceptr src, size_t bytes,
                                      cu::CUstream stream) = nullptr;
    cu::CUresult (*cuModuleLoadDataEx)(cu::CUmodule *module, const void *image, unsigned n,
                                       cu::CUjit_option *options, void **values) = nullptr;
    cu::CUresult (*cuModuleGetFunction)(cu::CUfunction *fn, cu::CUmodule module,
                                        const char *name) = nullptr;
    cu::CUresult (*cuModuleUnload)(cu::CUmodule module) = nullptr;
    cu::CUresult (*cuLaunchKernel)(cu::CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                   cu::CUstream stream, void **params, void **extra) = nullptr;

    // Streams and events.
    cu::CUresult (*cuStreamCreateWithPriority)(cu::CUstream *stream, unsigned flags,
                                               int priority) = nullptr;
    cu::CUresult (*cuStreamQuery)(cu::CUstream stream) = nullptr;
    cu::CUresult (*cuStreamWaitEvent)(cu::CUstream stream, cu::CUevent event,
                                      unsigned flags) = nullptr;
    cu::CUresult (*cuCtxGetStreamPriorityRange)(int *least, int *greatest) = nullptr;
    cu::CUresult (*cuEventCreate)(cu::CUevent *event, unsigned flags) = nullptr;
    cu::CUresult (*cuEventDestroy)(cu::CUevent event) = nullptr;
    cu::CUresult (*cuEventRecord)(cu::CUevent event, cu::CUstream stream) = nullptr;
    cu::CUresult (*cuEventQuery)(cu::CUevent event) = nullptr;
    cu::CUresult (*cuEventSynchronize)(cu::CUevent event) = nullptr;
    cu::CUresult (*cuEventElapsedTime)(float *ms, cu::CUevent start, cu::CUevent end) = nullptr;

    // Device information and context limits.
    cu::CUresult (*cuDeviceTotalMem)(size_t *bytes, cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuDeviceGetPCIBusId)(char *id, int len, cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuCtxGetApiVersion)(cu::CUcontext ctx, unsigned *version) = nullptr;
    /// `limit` is a CUlimit (ember::Limit has its values).
    cu::CUresult (*cuCtxGetLimit)(size_t *value, int limit) = nullptr;
    cu::CUresult (*cuCtxSetLimit)(int limit, size_t value) = nullptr;

    // Memory: memset, views, mapping, host and managed memory.
    cu::CUresult (*cuMemsetD8Async)(cu::CUdeviceptr dst, unsigned char value, size_t count,
                                    cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemsetD16Async)(cu::CUdeviceptr dst, unsigned short value, size_t count,
                                     cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemsetD32Async)(cu::CUdeviceptr dst, unsigned value, size_t count,
                                     cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemAllocManaged)(cu::CUdeviceptr *p, size_t bytes, unsigned flags) = nullptr;
    cu::CUresult (*cuStreamAttachMemAsync)(cu::CUstream stream, cu::CUdeviceptr p, size_t length,
                                           unsigned flags) = nullptr;
    cu::CUresult (*cuMemHostAlloc)(void **p, size_t bytes, unsigned flags) = nullptr;
    cu::CUresult (*cuMemHostGetDevicePointer)(cu::CUdeviceptr *device, void *p, unsigned flags) = nullptr;
    cu::CUresult (*cuMemHostRegister)(void *p, size_t bytes, unsigned flags) = nullptr;
    cu::CUresult (*cuMemHostUnregister)(void *p) = nullptr;

    // Memory: pitched 2-D/3-D copies, peer access, IPC.
    cu::CUresult (*cuMemAllocPitch)(cu::CUdeviceptr *p, size_t *pitch, size_t width_bytes,
                                    size_t height, unsigned element_bytes) = nullptr;
    cu::CUresult (*cuMemcpy2DAsync)(const cu::CUDA_MEMCPY2D *copy, cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemcpy3DAsync)(const cu::CUDA_MEMCPY3D *copy, cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemcpyAsync)(cu::CUdeviceptr dst, cu::CUdeviceptr src, size_t bytes,
                                  cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemcpyPeerAsync)(cu::CUdeviceptr dst, cu::CUcontext dst_ctx, cu::CUdeviceptr src,
                                      cu::CUcontext src_ctx, size_t bytes, cu::CUstream stream) = nullptr;
    cu::CUresult (*cuDeviceCanAccessPeer)(int *can, cu::CUdevice dev, cu::CUdevice peer) = nullptr;
    cu::CUresult (*cuCtxEnablePeerAccess)(cu::CUcontext peer, unsigned flags) = nullptr;
    cu::CUresult (*cuCtxDisablePeerAccess)(cu::CUcontext peer) = nullptr;
    cu::CUresult (*cuIpcGetMemHandle)(cu::CUipcMemHandle *handle, cu::CUdeviceptr p) = nullptr;
    cu::CUresult (*cuIpcOpenMemHandle)(cu::CUdeviceptr *p, cu::CUipcMemHandle handle,
                                       unsigned flags) = nullptr;
    cu::CUresult (*cuIpcCloseMemHandle)(cu::CUdeviceptr p) = nullptr;
    cu::CUresult (*cuMemGetAddressRange)(cu::CUdeviceptr *base, size_t *bytes,
                                         cu::CUdeviceptr p) = nullptr;
    cu::CUresult (*cuDeviceGetDefaultMemPool)(cu::CUmemoryPool *pool, cu::CUdevice dev) = nullptr;
    cu::CUresult (*cuMemPoolSetAccess)(cu::CUmemoryPool pool, const cu::CUmemAccessDesc *desc,
                                       size_t count) = nullptr;

    // Function attributes, launch attributes, clusters, occupancy.
    cu::CUresult (*cuFuncGetAttribute)(int *value, int attr, cu::CUfunction fn) = nullptr;
    cu::CUresult (*cuFuncSetAttribute)(cu::CUfunction fn, int attr, int value) = nullptr;
    cu::CUresult (*cuFuncSetCacheConfig)(cu::CUfunction fn, int config) = nullptr;
    cu::CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, cu::CUfunction fn, int block_size,
                                                                size_t dynamic_shared) = nullptr;
    cu::CUresult (*cuOccupancyMaxPotentialBlockSize)(int *min_grid, int *block_size, cu::CUfunction fn,
                                                     cu::CUoccupancyB2DSize to_shared, size_t dynamic_shared,
                                                     int block_size_limit) = nullptr;
    /// Optional (CUDA 11.8+).
    cu::CUresult (*cuLaunchKernelEx)(const cu::CUlaunchConfig *config, cu::CUfunction fn, void **params,
                                     void **extra) = nullptr;

    // Constant memory and external modules.
    /// The device address and size of a module's global (a constant array); CUDA_ERROR_NOT_FOUND
    /// when the module has none of that name.
    cu::CUresult (*cuModuleGetGlobal)(cu::CUdeviceptr *dptr, size_t *bytes, cu::CUmodule module,
                                      const char *name) = nullptr;
    /// Optional (CUDA 12.4+): listing a module's kernels for messages.
    cu::CUresult (*cuModuleGetFunctionCount)(unsigned *count, cu::CUmodule module) = nullptr;
    cu::CUresult (*cuModuleEnumerateFunctions)(cu::CUfunction *fns, unsigned n, cu::CUmodule module) = nullptr;
    cu::CUresult (*cuFuncGetName)(const char **name, cu::CUfunction fn) = nullptr;

    // Graphs.
    // Optional: graphs need them (CUDA 11.4+; the kernel node update's _v2 is CUDA 12), and
    // begin_capture says which are missing.
    cu::CUresult (*cuStreamBeginCapture)(cu::CUstream stream, int mode) = nullptr;
    cu::CUresult (*cuStreamEndCapture)(cu::CUstream stream, cu::CUgraph *graph) = nullptr;
    /// cuStreamGetCaptureInfo_v3 (CUDA 12.3+, with edge data), else _v2 (CUDA 11.3+).
    cu::CUresult (*cuStreamGetCaptureInfo_v3)(cu::CUstream stream, int *status, unsigned long long *id,
                                              cu::CUgraph *graph, const cu::CUgraphNode **deps,
                                              const void **edge_data, size_t *num_deps) = nullptr;
    cu::CUresult (*cuStreamGetCaptureInfo_v2)(cu::CUstream stream, int *status, unsigned long long *id,
                                              cu::CUgraph *graph, const cu::CUgraphNode **deps,
                                              size_t *num_deps) = nullptr;
    cu::CUresult (*cuGraphInstantiateWithFlags)(cu::CUgraphExec *exec, cu::CUgraph graph,
                                                unsigned long long flags) = nullptr;
    cu::CUresult (*cuGraphLaunch)(cu::CUgraphExec exec, cu::CUstream stream) = nullptr;
    cu::CUresult (*cuGraphExecDestroy)(cu::CUgraphExec exec) = nullptr;
    cu::CUresult (*cuGraphDestroy)(cu::CUgraph graph) = nullptr;
    cu::CUresult (*cuGraphGetNodes)(cu::CUgraph graph, cu::CUgraphNode *nodes, size_t *num_nodes) = nullptr;
    /// cuGraphExecKernelNodeSetParams_v2 (CUDA 12), else the v1 entry point, which reads the
    /// v1 prefix of the same struct.
    cu::CUresult (*cuGraphExecKernelNodeSetParams)(cu::CUgraphExec exec, cu::CUgraphNode node,
                                                   const cu::CUDA_KERNEL_NODE_PARAMS *params) = nullptr;

    // Tensor maps.
    /// Optional (CUDA 12.0+): the tensor maps of create_tensor_map. The enums are passed as the
    /// ints of cu:: above.
    cu::CUresult (*cuTensorMapEncodeTiled)(cu::CUtensorMap *map, int data_type, cu::cuuint32_t rank,
                                           void *address, const cu::cuuint64_t *dims,
                                           const cu::cuuint64_t *strides, const cu::cuuint32_t *box,
                                           const cu::cuuint32_t *element_strides, int interleave,
                                           int swizzle, int l2_promotion, int oob_fill) = nullptr;

    // Optional entry points (CUDA 11.2+): nullptr when the driver lacks them.
    cu::CUresult (*cuMemAllocAsync)(cu::CUdeviceptr *p, size_t bytes,
                                    cu::CUstream stream) = nullptr;
    cu::CUresult (*cuMemFreeAsync)(cu::CUdeviceptr p, cu::CUstream stream) = nullptr;
    // The driver's linker (a cubin for the exact device, stored in the compile cache so
    // that a warm process skips the PTX JIT). Optional: without it the cubin level is off.
    cu::CUresult (*cuLinkCreate)(unsigned n, cu::CUjit_option *options, void **values,
                                 cu::CUlinkState *state) = nullptr;
    cu::CUresult (*cuLinkAddData)(cu::CUlinkState state, cu::CUjitInputType type, void *data, size_t size,
                                  const char *name, unsigned n, cu::CUjit_option *options,
                                  void **values) = nullptr;
    cu::CUresult (*cuLinkComplete)(cu::CUlinkState state, void **cubin, size_t *size) = nullptr;
    cu::CUresult (*cuLinkDestroy)(cu::CUlinkState state) = nullptr;

    /// HIP only: the device's architecture, "gfx90a" (hipDeviceProp_t's gcnArchName without its
    /// feature suffix); nullptr on CUDA.
    cu::CUresult (*deviceArchName)(char *name, int len, cu::CUdevice dev) = nullptr;

    CudaDriver(const CudaDriver &) = delete;
    CudaDriver &operator=(const CudaDriver &) = delete;

private:
    CudaDriver() = default;
    static CudaDriver &instance() noexcept;
    void load() noexcept;
    /// Fills the table with HIP's entry points and calls hipInit (cuda/HipDriver.cpp).
    void load_hip() noexcept;
    static CudaDriver &hip_instance() noexcept;
    /// This table, or RuntimeError with why it cannot be used.
    const CudaDriver &usable_or_throw() const;
    /// This table, or nullptr with why in `*why`.
    const CudaDriver *usable_or_why(std::string *why) const noexcept;

    std::string_view api_ = "cuda";

    void *library_ = nullptr;
    /// Set once a sticky error has been reported.
    mutable std::atomic<bool> sticky_reported_{false};
    int version_ = 0;
    /// Why the driver is unusable; empty when it is usable. The code is cuInit's status, or 0
    /// when the library could not be loaded.
    std::string error_;
    int error_code_ = 0;
    std::string error_code_name_;
};

class CudaPrimaryContext;

/// A kernel loaded by the CUDA back end: a CUmodule and its CUfunction. The module is unloaded
/// in the destructor, which keeps the primary context retained until then.
class CudaFunction final : public LoadedFunction {
public:
    CudaFunction(std::shared_ptr<const CudaPrimaryContext> ctx, cu::CUmodule module)
        : ctx_(std::move(ctx)), module_(module) {}
    ~CudaFunction() override;
    CudaFunction(const CudaFunction &) = delete;
    CudaFunction &operator=(const CudaFunction &) = delete;

    cu::CUmodule module() const noexcept { return module_; }
    /// cuModuleGetGlobal on the module.
    std::pair<DeviceAddress, size_t> global(const std::string &symbol) override;
    cu::CUfunction function = nullptr;

private:
    std::shared_ptr<const CudaPrimaryContext> ctx_;
    cu::CUmodule module_;
};

} // namespace ember::detail

#endif // EMBER_RUNTIME_CUDA_CUDADRIVER_H
