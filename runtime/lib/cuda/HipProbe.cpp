/// \file
/// Counting AMD GPUs through libamdhip64, loaded at run time.
#include "cuda/HipProbe.h"

#include <dlfcn.h>
#include <initializer_list>

namespace ember::detail {

namespace {

int probe() noexcept {
    // Never dlclose'd: the HIP runtime registers exit handlers that must find it loaded.
    void *lib = nullptr;
    for (const char *name : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"})
        if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return 0;
    using GetDeviceCount = int (*)(int *count); // hipError_t hipGetDeviceCount(int *)
    auto get_count = reinterpret_cast<GetDeviceCount>(dlsym(lib, "hipGetDeviceCount"));
    if (!get_count) return 0;
    int count = 0;
    if (get_count(&count) != 0 /* hipSuccess */ || count < 0) return 0;
    return count;
}

} // namespace

int hip_device_count() noexcept {
    static const int count = probe();
    return count;
}

} // namespace ember::detail
