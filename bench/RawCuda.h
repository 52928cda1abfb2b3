/// \file
/// The few CUDA driver entry points the benchmarks' peers call directly, declared here (no CUDA
/// headers) and found with dlopen, as ember's own back end finds them.
#ifndef EMBER_BENCH_RAWCUDA_H
#define EMBER_BENCH_RAWCUDA_H

#include <dlfcn.h>

#include <type_traits>

struct RawCuda {
    using CUresult = int;
    CUresult (*cuModuleLoadData)(void **, const void *) = nullptr;
    CUresult (*cuModuleGetFunction)(void **, void *, const char *) = nullptr;
    CUresult (*cuModuleUnload)(void *) = nullptr;
    CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, void *, void **, void **) = nullptr;
    CUresult (*cuStreamSynchronize)(void *) = nullptr;
    CUresult (*cuDevicePrimaryCtxRetain)(void **, int) = nullptr;
    CUresult (*cuCtxSetCurrent)(void *) = nullptr;

    /// Whether libcuda.so.1 was found with every entry point above.
    bool load() {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) return false;
        bool all = true;
        auto get = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
            all = all && fn;
        };
        get(cuModuleLoadData, "cuModuleLoadData");
        get(cuModuleGetFunction, "cuModuleGetFunction");
        get(cuModuleUnload, "cuModuleUnload");
        get(cuLaunchKernel, "cuLaunchKernel");
        get(cuStreamSynchronize, "cuStreamSynchronize");
        get(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
        get(cuCtxSetCurrent, "cuCtxSetCurrent");
        return all;
    }
};

#endif // EMBER_BENCH_RAWCUDA_H
