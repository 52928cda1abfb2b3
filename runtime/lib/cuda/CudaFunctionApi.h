/// \file
/// The Driver API types and constants of function attributes, occupancy, extended launches
/// (cuLaunchKernelEx) and modules, by the values and layouts of cuda.h (CUDA 12/13). Separate
/// from CudaDriver.h's list so that the parts of the runtime stay apart.
#ifndef EMBER_RUNTIME_CUDA_CUDAFUNCTIONAPI_H
#define EMBER_RUNTIME_CUDA_CUDAFUNCTIONAPI_H

#include <cstddef>

namespace ember::detail::cu {

struct CUstream_st;

enum : int {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120,
};

/// CUfunction_attribute: the values of ember::FunctionAttribute.
enum : int {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum : int { CUDA_ERROR_INVALID_CLUSTER_SIZE = 912 };

/// CUlaunchAttributeID.
enum : int {
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
    CU_LAUNCH_ATTRIBUTE_PRIORITY = 8,
};

/// CUlaunchAttributeValue: a 64-byte union; ember uses its int and dim3 members.
union alignas(8) CUlaunchAttributeValue {
    char pad[64];
    int cooperative;
    struct {
        unsigned x, y, z;
    } clusterDim;
    int clusterSchedulingPolicyPreference;
    int programmaticStreamSerializationAllowed;
    int priority;
};

/// CUlaunchAttribute: the id, padded to 8 bytes, then the value.
struct CUlaunchAttribute {
    int id;
    char pad[8 - sizeof(int)];
    CUlaunchAttributeValue value;
};
static_assert(sizeof(CUlaunchAttributeValue) == 64 && sizeof(CUlaunchAttribute) == 72 && alignof(CUlaunchAttribute) == 8);

/// CUlaunchConfig.
struct CUlaunchConfig {
    unsigned gridDimX, gridDimY, gridDimZ;
    unsigned blockDimX, blockDimY, blockDimZ;
    unsigned sharedMemBytes;
    CUstream_st *hStream;
    CUlaunchAttribute *attrs;
    unsigned numAttrs;
};
static_assert(sizeof(CUlaunchConfig) == 56 && alignof(CUlaunchConfig) == 8);

/// CUoccupancyB2DSize: dynamic shared memory for a block size.
using CUoccupancyB2DSize = size_t (*)(int block_size);

} // namespace ember::detail::cu

#endif // EMBER_RUNTIME_CUDA_CUDAFUNCTIONAPI_H
