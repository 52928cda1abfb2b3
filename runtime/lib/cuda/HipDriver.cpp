/// \file
/// The HIP back end: the CUDA-shaped back end's driver table (CudaDriver) filled with the HIP
/// runtime's entry points (hip/HipRuntime.h loads them).
///
/// [Note] HIP back end
/// ===================
/// HIP's module API is CUDA's Driver API under other names: hipModuleLoadData, hipModuleLaunchKernel,
/// hipStreamCreateWithFlags, hipEventElapsedTime, hipMemcpyHtoDAsync, hipIpcGetMemHandle,
/// hipStreamBeginCapture and the rest take the same arguments in the same order, and HIP's error
/// codes are the Driver API's wherever both have one (hipErrorNotReady is 600,
/// hipErrorIllegalAddress 700; HIP's own are classed in CudaDriver.cpp). So ember has one back
/// end for both (CudaBackend, runtime/lib/cuda/): this file fills its table, entry by entry, with
/// HIP's calls, and every line of the back end that runs on the H200 is the line that runs on an
/// AMD GPU. Where the shapes differ, an adapter here translates:
/// - device attributes: ember's numbers are CUDA's (DeviceAttributes.def); `hip_attribute` maps
///   each to hipDeviceAttribute_t (the values of ROCm 5 and 6, which kept them), and an
///   attribute HIP does not have is hipErrorInvalidValue, which the back end reports as an
///   attribute the driver does not know;
/// - pointers: HIP's void * for CUDA's CUdeviceptr (both 64 bits);
/// - pitched copies: CUDA_MEMCPY2D/3D become hipMemcpy2DAsync/hipMemcpy3DAsync of the same
///   regions, direction hipMemcpyDefault (unified addressing tells host from device memory, as the
///   back end's CUDA copies rely on);
/// - peer copies: hipMemcpyAsync with hipMemcpyDefault (HIP copies between devices by address);
/// - graphs: CUDA_KERNEL_NODE_PARAMS becomes hipKernelNodeParams (other field order), and
///   hipGraphInstantiateWithFlags, hipStreamGetCaptureInfo_v2 are HIP's of the same shape;
/// - modules: a code object needs no JIT, so hipModuleLoadData takes no options and leaves the
///   JIT logs empty; there is no linker (the image cache's exact-device level is off on HIP: the
///   code object, linked in-process by lld when compiled, is already the device's binary, and the
///   compile cache keeps it);
/// - launches pass the argument pointers (kernelParams): the HIP runtime lays out the kernarg
///   segment from the code object's metadata (the explicit arguments at the offsets LLVM wrote,
///   which test/lit/eir/amdgpu_kernel.eir checks against ember's layout) and fills the hidden
///   arguments (block counts, group sizes) that block_dim and grid_dim read;
/// - what HIP lacks is hipErrorNotSupported, a LogicError naming the call: function attributes
///   that CUDA may set (cuFuncSetAttribute), cluster launches (cuLaunchKernelEx stays empty),
///   hipDeviceSetLimit before ROCm 6, an occupancy with a shared-memory-per-block callback. The
///   cache preference (cuFuncSetCacheConfig) is accepted and has no effect: AMD GPUs have no
///   split of L1 and LDS to choose.
/// - the architecture for the compiler comes from hipDeviceProp_t's gcnArchName
///   ("gfx90a:sramecc+:xnack-"): its "gfx" name, found in the properties wherever the release
///   puts the field (ROCm 6 reordered the struct), without the feature suffix. ember's code objects
///   name no xnack or sramecc setting, which lets them load under either.
/// HIP contexts: hipDevicePrimaryCtxRetain and hipCtxSetCurrent/GetCurrent are deprecated in HIP
/// but present in ROCm 5 and 6; HIP makes a context current by making its device current, so
/// [Note] CUDA contexts and threads holds. What is tested where: CI resolves every entry point
/// from Debian's real libamdhip64-5 and fills this table (HipDriverTest); no AMD GPU exists on any
/// machine here, so no adapter has run against hardware. The table's shared code runs on the H200
/// as the CUDA back end.
#include "cuda/CudaDriver.h"

#include "hip/HipRuntime.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ember::detail {

namespace {

using hipError_t = int;
constexpr hipError_t hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorNotSupported = 801;
constexpr int hipMemcpyDefault = 4;

struct dim3 {
    unsigned x, y, z;
};
/// hipKernelNodeParams of hip_runtime_api.h.
struct HipKernelNodeParams {
    dim3 blockDim;
    void **extra;
    void *func;
    dim3 gridDim;
    void **kernelParams;
    unsigned sharedMemBytes;
};
/// hipPos, hipPitchedPtr, hipExtent and hipMemcpy3DParms of hip_runtime_api.h.
struct HipPos {
    size_t x, y, z;
};
struct HipPitchedPtr {
    void *ptr;
    size_t pitch, xsize, ysize;
};
struct HipExtent {
    size_t width, height, depth;
};
struct HipMemcpy3DParms {
    void *srcArray;
    HipPos srcPos;
    HipPitchedPtr srcPtr;
    void *dstArray;
    HipPos dstPos;
    HipPitchedPtr dstPtr;
    HipExtent extent;
    int kind;
};

/// The HIP entry points the adapters call, typed; filled once from HipRuntime.
struct Hip {
#define EMBER_HIP_POINTER(name) void *name = nullptr;
    EMBER_HIP_ENTRY_POINTS(EMBER_HIP_POINTER)
#undef EMBER_HIP_POINTER
    void *hipDeviceSetLimit = nullptr;          // ROCm 6+
    void *hipGetDevicePropertiesR0600 = nullptr; // ROCm 6+
};
Hip hip_entries;

/// Calls HIP's `name` with `args`, the entry point typed as `R(Args...)`.
template <class R = hipError_t, class... Args> R call(void *entry, Args... args) {
    return reinterpret_cast<R (*)(Args...)>(entry)(args...);
}
#define HIP(name, ...) call(hip_entries.name, __VA_ARGS__)

void *ptr(cu::CUdeviceptr p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); }

/// Runs `hip_call(void **)`, which returns an address through its argument, and stores the address
/// in `*p` as a CUdeviceptr.
template <class F> cu::CUresult address_out(cu::CUdeviceptr *p, F hip_call) {
    void *q = nullptr;
    const hipError_t rc = hip_call(&q);
    *p = reinterpret_cast<uintptr_t>(q);
    return rc;
}

} // namespace

/// ember's device attributes (CUDA's numbers, DeviceAttributes.def) to hipDeviceAttribute_t
/// (ROCm 5 and 6 give these the same values); -1 where HIP has no such attribute.
int hip_device_attribute(int cuda_attribute) {
    switch (cuda_attribute) {
    case 1: return 56;   // max threads per block: hipDeviceAttributeMaxThreadsPerBlock
    case 2: return 26;   // max block dim x
    case 3: return 27;   // y
    case 4: return 28;   // z
    case 5: return 29;   // max grid dim x
    case 6: return 30;   // y
    case 7: return 31;   // z
    case 8: return 74;   // max shared memory per block
    case 9: return 83;   // total constant memory
    case 10: return 87;  // warp size: 64 on CDNA, 32 on RDNA
    case 11: return 58;  // max pitch
    case 12: return 71;  // max registers per block
    case 13: return 5;   // clock rate
    case 14: return 81;  // texture alignment
    case 15: return 12;  // gpu overlap (device overlap)
    case 16: return 63;  // multiprocessor count (compute units)
    case 17: return 18;  // kernel exec timeout
    case 18: return 16;  // integrated
    case 19: return 3;   // can map host memory
    case 20: return 6;   // compute mode
    case 21: return 39;  // maximum texture 1-D width
    case 22: return 43;  // maximum texture 2-D width
    case 23: return 44;  // maximum texture 2-D height
    case 24: return 49;  // maximum texture 3-D width
    case 25: return 50;  // maximum texture 3-D height
    case 26: return 51;  // maximum texture 3-D depth
    case 30: return 79;  // surface alignment
    case 31: return 8;   // concurrent kernels
    case 32: return 0;   // ECC enabled
    case 33: return 67;  // PCI bus id
    case 34: return 68;  // PCI device id
    case 35: return 80;  // TCC driver
    case 36: return 60;  // memory clock rate
    case 37: return 59;  // global memory bus width
    case 38: return 19;  // L2 cache size
    case 39: return 57;  // max threads per multiprocessor
    case 40: return 2;   // async engine count
    case 41: return 85;  // unified addressing
    case 50: return 69;  // PCI domain id
    case 51: return 82;  // texture pitch alignment
    case 69: return 41;  // maximum texture 1-D linear width
    case 75: return 23;  // compute capability major
    case 76: return 61;  // compute capability minor
    case 78: return 78;  // stream priorities supported
    case 79: return 14;  // global L1 cache supported
    case 80: return 20;  // local L1 cache supported
    case 81: return 76;  // max shared memory per multiprocessor
    case 82: return 72;  // max registers per multiprocessor
    case 83: return 24;  // managed memory
    case 84: return 17;  // multi-GPU board
    case 85: return 62;  // multi-GPU board group id
    case 86: return 15;  // host native atomics
    case 87: return 77;  // single to double precision performance ratio
    case 88: return 65;  // pageable memory access
    case 89: return 9;   // concurrent managed access
    case 90: return 7;   // compute preemption supported
    case 91: return 4;   // can use host pointer for registered memory
    case 95: return 10;  // cooperative launch
    case 96: return 11;  // cooperative multi-device launch
    case 97: return 75;  // max shared memory per block, opt-in
    case 99: return 90;  // host register supported
    case 100: return 66; // pageable memory access uses host page tables
    case 101: return 13; // direct managed memory access from host
    case 102: return 89; // virtual memory management supported
    case 106: return 25; // max blocks per multiprocessor
    case 108: return 70; // max persisting L2 cache size
    case 109: return 1;  // max access policy window size
    case 111: return 73; // reserved shared memory per block
    case 115: return 88; // memory pools supported
    default: return -1;
    }
}

namespace {

// The adapters: CUDA's signature outside, HIP's call inside.
cu::CUresult get_error_name(cu::CUresult rc, const char **s) {
    *s = call<const char *>(hip_entries.hipGetErrorName, rc);
    return *s ? hipSuccess : hipErrorInvalidValue;
}
cu::CUresult get_error_string(cu::CUresult rc, const char **s) {
    *s = call<const char *>(hip_entries.hipGetErrorString, rc);
    return *s ? hipSuccess : hipErrorInvalidValue;
}
cu::CUresult device_get_attribute(int *value, cu::CUdevice_attribute attr, cu::CUdevice dev) {
    const int h = hip_device_attribute(attr);
    if (h < 0) return hipErrorInvalidValue;
    return HIP(hipDeviceGetAttribute, value, h, dev);
}
cu::CUresult device_arch_name(char *name, int len, cu::CUdevice dev) {
    // hipDeviceProp_t is about 1.5 KiB in ROCm 5 and 6; the buffer leaves room for growth, and
    // gcnArchName is found by its contents, wherever the release's layout puts it.
    std::vector<char> props(64 * 1024, 0);
    hipError_t rc = hip_entries.hipGetDevicePropertiesR0600 ? HIP(hipGetDevicePropertiesR0600, props.data(), int(dev))
                                                            : HIP(hipGetDeviceProperties, props.data(), int(dev));
    if (rc != hipSuccess) return rc;
    for (size_t i = 0; i + 4 < props.size(); ++i) {
        if (std::memcmp(&props[i], "gfx", 3) != 0 || (i > 0 && props[i - 1] != 0)) continue;
        size_t n = 3;
        while (i + n < props.size() && std::isalnum(static_cast<unsigned char>(props[i + n]))) ++n;
        if (n == 3 || (props[i + n] != 0 && props[i + n] != ':')) continue;
        const std::string arch(&props[i], n);
        if (len <= int(arch.size())) return hipErrorInvalidValue;
        std::memcpy(name, arch.c_str(), arch.size() + 1);
        return hipSuccess;
    }
    return hipErrorNotSupported; // no gcnArchName: not an AMD GPU HIP knows
}
cu::CUresult device_total_mem(size_t *bytes, cu::CUdevice dev) { return HIP(hipDeviceTotalMem, bytes, int(dev)); }
cu::CUresult ctx_get_api_version(cu::CUcontext ctx, unsigned *version) {
    int v = 0;
    hipError_t rc = HIP(hipCtxGetApiVersion, static_cast<void *>(ctx), &v);
    *version = unsigned(v);
    return rc;
}
cu::CUresult ctx_set_limit(int limit, size_t value) {
    if (!hip_entries.hipDeviceSetLimit) return hipErrorNotSupported;
    return HIP(hipDeviceSetLimit, limit, value);
}
cu::CUresult mem_alloc(cu::CUdeviceptr *p, size_t bytes) {
    return address_out(p, [&](void **q) { return HIP(hipMalloc, q, bytes); });
}
cu::CUresult mem_free(cu::CUdeviceptr p) { return HIP(hipFree, ptr(p)); }
cu::CUresult mem_alloc_host(void **p, size_t bytes) { return HIP(hipHostMalloc, p, bytes, 0u); }
cu::CUresult mem_host_alloc(void **p, size_t bytes, unsigned flags) {
    // hipHostMallocPortable and hipHostMallocMapped are CUDA's values (1, 2).
    return HIP(hipHostMalloc, p, bytes, flags);
}
cu::CUresult mem_alloc_managed(cu::CUdeviceptr *p, size_t bytes, unsigned flags) {
    // hipMemAttachGlobal and hipMemAttachHost are CUDA's values (1, 2).
    return address_out(p, [&](void **q) { return HIP(hipMallocManaged, q, bytes, flags); });
}
cu::CUresult stream_attach(cu::CUstream s, cu::CUdeviceptr p, size_t length, unsigned flags) {
    return HIP(hipStreamAttachMemAsync, static_cast<void *>(s), ptr(p), length, flags);
}
cu::CUresult host_get_device_pointer(cu::CUdeviceptr *d, void *p, unsigned flags) {
    return address_out(d, [&](void **q) { return HIP(hipHostGetDevicePointer, q, p, flags); });
}
cu::CUresult mem_alloc_pitch(cu::CUdeviceptr *p, size_t *pitch, size_t width, size_t height, unsigned) {
    return address_out(p, [&](void **q) { return HIP(hipMallocPitch, q, pitch, width, height); });
}
cu::CUresult mem_alloc_async(cu::CUdeviceptr *p, size_t bytes, cu::CUstream s) {
    return address_out(p, [&](void **q) { return HIP(hipMallocAsync, q, bytes, static_cast<void *>(s)); });
}
cu::CUresult mem_free_async(cu::CUdeviceptr p, cu::CUstream s) { return HIP(hipFreeAsync, ptr(p), static_cast<void *>(s)); }

/// The address of a region's first byte.
void *region_start(int memory_type, const void *host, cu::CUdeviceptr device, size_t x, size_t y, size_t pitch) {
    auto *base = static_cast<char *>(memory_type == cu::CU_MEMORYTYPE_HOST ? const_cast<void *>(host) : ptr(device));
    return base + y * pitch + x;
}
cu::CUresult memcpy_2d(const cu::CUDA_MEMCPY2D *c, cu::CUstream s) {
    if (c->srcArray || c->dstArray) return hipErrorNotSupported;
    void *dst = region_start(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch);
    void *src = region_start(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch);
    return HIP(hipMemcpy2DAsync, dst, c->dstPitch, static_cast<const void *>(src), c->srcPitch, c->WidthInBytes,
               c->Height, hipMemcpyDefault, static_cast<void *>(s));
}
cu::CUresult memcpy_3d(const cu::CUDA_MEMCPY3D *c, cu::CUstream s) {
    if (c->srcArray || c->dstArray) return hipErrorNotSupported;
    HipMemcpy3DParms p{};
    auto base = [](int type, const void *host, cu::CUdeviceptr dev) {
        return type == cu::CU_MEMORYTYPE_HOST ? const_cast<void *>(host) : ptr(dev);
    };
    p.srcPtr = {base(c->srcMemoryType, c->srcHost, c->srcDevice), c->srcPitch, c->srcPitch, c->srcHeight};
    p.srcPos = {c->srcXInBytes, c->srcY, c->srcZ};
    p.dstPtr = {base(c->dstMemoryType, c->dstHost, c->dstDevice), c->dstPitch, c->dstPitch, c->dstHeight};
    p.dstPos = {c->dstXInBytes, c->dstY, c->dstZ};
    p.extent = {c->WidthInBytes, c->Height, c->Depth};
    p.kind = hipMemcpyDefault;
    return HIP(hipMemcpy3DAsync, static_cast<const HipMemcpy3DParms *>(&p), static_cast<void *>(s));
}
cu::CUresult memcpy_async(cu::CUdeviceptr dst, cu::CUdeviceptr src, size_t bytes, cu::CUstream s) {
    return HIP(hipMemcpyAsync, ptr(dst), static_cast<const void *>(ptr(src)), bytes, hipMemcpyDefault,
               static_cast<void *>(s));
}
cu::CUresult memcpy_peer_async(cu::CUdeviceptr dst, cu::CUcontext, cu::CUdeviceptr src, cu::CUcontext, size_t bytes,
                               cu::CUstream s) {
    return memcpy_async(dst, src, bytes, s);
}
cu::CUresult ipc_get(cu::CUipcMemHandle *h, cu::CUdeviceptr p) { return HIP(hipIpcGetMemHandle, h, ptr(p)); }
cu::CUresult ipc_open(cu::CUdeviceptr *p, cu::CUipcMemHandle h, unsigned flags) {
    return address_out(p, [&](void **q) { return HIP(hipIpcOpenMemHandle, q, h, flags); });
}
cu::CUresult ipc_close(cu::CUdeviceptr p) { return HIP(hipIpcCloseMemHandle, ptr(p)); }
cu::CUresult func_set_attribute(cu::CUfunction, int, int) { return hipErrorNotSupported; }
cu::CUresult func_set_cache_config(cu::CUfunction, int) { return hipSuccess; }
cu::CUresult func_get_attribute(int *value, int attr, cu::CUfunction fn) {
    // hipFunction_attribute has CUDA's values up to the carve-out (9); the cluster ones are CUDA's.
    if (attr < 0 || attr > 9) return hipErrorInvalidValue;
    return HIP(hipFuncGetAttribute, value, attr, static_cast<void *>(fn));
}
cu::CUresult occupancy_block_size(int *min_grid, int *block, cu::CUfunction fn, cu::CUoccupancyB2DSize to_shared,
                                  size_t dynamic_shared, int limit) {
    if (to_shared) return hipErrorNotSupported;
    return HIP(hipModuleOccupancyMaxPotentialBlockSize, min_grid, block, static_cast<void *>(fn), dynamic_shared, limit);
}
cu::CUresult module_load(cu::CUmodule *m, const void *image, unsigned, cu::CUjit_option *, void **) {
    return HIP(hipModuleLoadData, reinterpret_cast<void **>(m), image);
}
cu::CUresult capture_info(cu::CUstream s, int *status, unsigned long long *id, cu::CUgraph *graph,
                          const cu::CUgraphNode **deps, size_t *n) {
    return HIP(hipStreamGetCaptureInfo_v2, static_cast<void *>(s), status, id, graph, deps, n);
}
cu::CUresult kernel_node_set_params(cu::CUgraphExec exec, cu::CUgraphNode node, const cu::CUDA_KERNEL_NODE_PARAMS *p) {
    HipKernelNodeParams h{};
    h.func = static_cast<void *>(p->func);
    h.gridDim = {p->gridDimX, p->gridDimY, p->gridDimZ};
    h.blockDim = {p->blockDimX, p->blockDimY, p->blockDimZ};
    h.sharedMemBytes = p->sharedMemBytes;
    h.kernelParams = p->kernelParams;
    h.extra = p->extra;
    return HIP(hipGraphExecKernelNodeSetParams, static_cast<void *>(exec), static_cast<void *>(node),
               static_cast<const HipKernelNodeParams *>(&h));
}

/// Stores HIP's entry point `entry` in the table's slot `slot`, which has the same shape.
template <class Slot> void same_shape(Slot &slot, void *entry) { slot = reinterpret_cast<Slot>(entry); }

} // namespace

CudaDriver &CudaDriver::hip_instance() noexcept {
    // Leaked on purpose, as the CUDA table is ([Note] HIP runtime loading).
    static CudaDriver *driver = [] {
        auto *d = new CudaDriver;
        d->load_hip();
        return d;
    }();
    return *driver;
}

const CudaDriver *CudaDriver::hip_table_for_testing() noexcept {
    const CudaDriver &d = hip_instance();
    return d.cuInit ? &d : nullptr;
}

const CudaDriver &CudaDriver::hip() { return hip_instance().usable_or_throw(); }

const CudaDriver *CudaDriver::try_hip(std::string *why) noexcept { return hip_instance().usable_or_why(why); }

void CudaDriver::load_hip() noexcept {
    api_ = "hip";
    try {
        const HipRuntime &rt = HipRuntime::get();
        if (!rt.usable()) {
            error_ = "api 'hip': " + rt.problem();
            return;
        }
#define EMBER_HIP_FILL(name) hip_entries.name = rt.entry(#name);
        EMBER_HIP_ENTRY_POINTS(EMBER_HIP_FILL)
#undef EMBER_HIP_FILL
        hip_entries.hipDeviceSetLimit = rt.optional_entry("hipDeviceSetLimit");
        hip_entries.hipGetDevicePropertiesR0600 = rt.optional_entry("hipGetDevicePropertiesR0600");
        const Hip &h = hip_entries;
        same_shape(cuInit, h.hipInit);
        same_shape(cuDriverGetVersion, h.hipDriverGetVersion);
        cuGetErrorName = get_error_name;
        cuGetErrorString = get_error_string;
        same_shape(cuDeviceGetCount, h.hipGetDeviceCount);
        same_shape(cuDeviceGet, h.hipDeviceGet);
        same_shape(cuDeviceGetName, h.hipDeviceGetName);
        cuDeviceGetAttribute = device_get_attribute;
        deviceArchName = device_arch_name;
        same_shape(cuDevicePrimaryCtxRetain, h.hipDevicePrimaryCtxRetain);
        same_shape(cuDevicePrimaryCtxRelease, h.hipDevicePrimaryCtxRelease);
        same_shape(cuCtxGetCurrent, h.hipCtxGetCurrent);
        same_shape(cuCtxSetCurrent, h.hipCtxSetCurrent);
        same_shape(cuStreamCreate, h.hipStreamCreateWithFlags); // hipStreamNonBlocking is 1, as CUDA's
        same_shape(cuStreamDestroy, h.hipStreamDestroy);
        same_shape(cuStreamSynchronize, h.hipStreamSynchronize);
        cuMemAlloc = mem_alloc;
        cuMemFree = mem_free;
        cuMemAllocHost = mem_alloc_host;
        same_shape(cuMemFreeHost, h.hipHostFree);
        same_shape(cuMemGetInfo, h.hipMemGetInfo);
        same_shape(cuMemcpyHtoDAsync, h.hipMemcpyHtoDAsync);
        same_shape(cuMemcpyDtoHAsync, h.hipMemcpyDtoHAsync);
        same_shape(cuMemcpyDtoDAsync, h.hipMemcpyDtoDAsync);
        cuModuleLoadDataEx = module_load;
        same_shape(cuModuleGetFunction, h.hipModuleGetFunction);
        same_shape(cuModuleUnload, h.hipModuleUnload);
        same_shape(cuLaunchKernel, h.hipModuleLaunchKernel);
        same_shape(cuStreamCreateWithPriority, h.hipStreamCreateWithPriority);
        same_shape(cuStreamQuery, h.hipStreamQuery);
        same_shape(cuStreamWaitEvent, h.hipStreamWaitEvent);
        same_shape(cuCtxGetStreamPriorityRange, h.hipDeviceGetStreamPriorityRange);
        same_shape(cuEventCreate, h.hipEventCreateWithFlags); // the event flags are CUDA's values
        same_shape(cuEventDestroy, h.hipEventDestroy);
        same_shape(cuEventRecord, h.hipEventRecord);
        same_shape(cuEventQuery, h.hipEventQuery);
        same_shape(cuEventSynchronize, h.hipEventSynchronize);
        same_shape(cuEventElapsedTime, h.hipEventElapsedTime);
        cuDeviceTotalMem = device_total_mem;
        same_shape(cuDeviceGetPCIBusId, h.hipDeviceGetPCIBusId);
        cuCtxGetApiVersion = ctx_get_api_version;
        same_shape(cuCtxGetLimit, h.hipDeviceGetLimit); // hipLimit_t: CUDA's values for stack, printf, heap
        cuCtxSetLimit = ctx_set_limit;
        same_shape(cuMemsetD8Async, h.hipMemsetD8Async);
        same_shape(cuMemsetD16Async, h.hipMemsetD16Async);
        same_shape(cuMemsetD32Async, h.hipMemsetD32Async);
        cuMemAllocManaged = mem_alloc_managed;
        cuStreamAttachMemAsync = stream_attach;
        cuMemHostAlloc = mem_host_alloc;
        cuMemHostGetDevicePointer = host_get_device_pointer;
        same_shape(cuMemHostRegister, h.hipHostRegister); // hipHostRegisterPortable/Mapped are CUDA's
        same_shape(cuMemHostUnregister, h.hipHostUnregister);
        cuMemAllocPitch = mem_alloc_pitch;
        cuMemcpy2DAsync = memcpy_2d;
        cuMemcpy3DAsync = memcpy_3d;
        cuMemcpyAsync = memcpy_async;
        cuMemcpyPeerAsync = memcpy_peer_async;
        same_shape(cuDeviceCanAccessPeer, h.hipDeviceCanAccessPeer);
        same_shape(cuCtxEnablePeerAccess, h.hipCtxEnablePeerAccess);
        same_shape(cuCtxDisablePeerAccess, h.hipCtxDisablePeerAccess);
        cuIpcGetMemHandle = ipc_get;
        cuIpcOpenMemHandle = ipc_open;
        cuIpcCloseMemHandle = ipc_close;
        same_shape(cuMemGetAddressRange, h.hipMemGetAddressRange);
        same_shape(cuDeviceGetDefaultMemPool, h.hipDeviceGetDefaultMemPool);
        same_shape(cuMemPoolSetAccess, h.hipMemPoolSetAccess); // hipMemAccessDesc is CUmemAccessDesc
        cuFuncGetAttribute = func_get_attribute;
        cuFuncSetAttribute = func_set_attribute;
        cuFuncSetCacheConfig = func_set_cache_config;
        same_shape(cuOccupancyMaxActiveBlocksPerMultiprocessor, h.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor);
        cuOccupancyMaxPotentialBlockSize = occupancy_block_size;
        same_shape(cuModuleGetGlobal, h.hipModuleGetGlobal);
        same_shape(cuStreamBeginCapture, h.hipStreamBeginCapture); // hipStreamCaptureModeRelaxed is 2
        same_shape(cuStreamEndCapture, h.hipStreamEndCapture);
        cuStreamGetCaptureInfo_v2 = capture_info;
        same_shape(cuGraphInstantiateWithFlags, h.hipGraphInstantiateWithFlags);
        same_shape(cuGraphLaunch, h.hipGraphLaunch);
        same_shape(cuGraphExecDestroy, h.hipGraphExecDestroy);
        same_shape(cuGraphDestroy, h.hipGraphDestroy);
        same_shape(cuGraphGetNodes, h.hipGraphGetNodes);
        cuGraphExecKernelNodeSetParams = kernel_node_set_params;
        cuMemAllocAsync = mem_alloc_async;
        cuMemFreeAsync = mem_free_async;
        // Left empty: cuLaunchKernelEx (clusters), the module listing of CUDA 12.4, the linker,
        // cuTensorMapEncodeTiled (CudaTensorMap.cpp refuses tensor maps on HIP before it).

        if (cu::CUresult rc = cuInit(0); rc != hipSuccess) {
            // Without a device hipInit fails too (ROCm 5.2: hipErrorInvalidDevice); the count's
            // error names the cause, as check_hip_device reports it.
            std::string count_error;
            rt.device_count(&count_error);
            error_code_ = rc;
            error_code_name_ = error_name(rc);
            error_ = "api 'hip': " + (count_error.empty() ? "hipInit failed: " + error_code_name_ : count_error);
            return;
        }
        if (cuDriverGetVersion(&version_) != hipSuccess) version_ = 0;
    } catch (...) {
        error_ = "api 'hip': cannot fill the HIP driver table: out of host memory";
    }
}

} // namespace ember::detail
