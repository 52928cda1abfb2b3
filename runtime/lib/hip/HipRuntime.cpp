/// \file
/// Loading libamdhip64 and naming HIP's errors ([Note] HIP runtime loading).
#include "hip/HipRuntime.h"

#include "ember/Error.h"

#include <dlfcn.h>

namespace ember::detail {

HipRuntime::HipRuntime() {
    for (const char *name : {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}) {
        if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
            library_ = name;
            break;
        }
        const char *why = dlerror();
        dlopen_errors_ += (dlopen_errors_.empty() ? "" : "; ") + std::string(why ? why : name);
    }
    if (!handle_) return;
    for (const std::string &name : entry_point_names()) {
        void *p = dlsym(handle_, name.c_str());
        if (p) entries_[name] = p;
        else missing_.push_back(name);
    }
}

const HipRuntime &HipRuntime::get() {
    static const HipRuntime runtime; // never closed: [Note] HIP runtime loading
    return runtime;
}

const std::vector<std::string> &HipRuntime::entry_point_names() {
#define EMBER_HIP_NAME(name) #name,
    static const std::vector<std::string> names = {EMBER_HIP_ENTRY_POINTS(EMBER_HIP_NAME)};
#undef EMBER_HIP_NAME
    return names;
}

void *HipRuntime::entry(const std::string &name) const {
    const auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : it->second;
}

void *HipRuntime::optional_entry(const char *name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

std::string HipRuntime::problem() const {
    if (!handle_)
        return "the HIP runtime could not be loaded (libamdhip64.so.6, .so.5 or .so: " + dlopen_errors_ +
               "); ROCm's HIP runtime provides it (Debian: libamdhip64-5)";
    if (missing_.empty()) return "";
    std::string list;
    for (const std::string &m : missing_) list += (list.empty() ? "" : ", ") + m;
    return library_ + " lacks " + std::to_string(missing_.size()) + " entry point(s) ember needs: " + list;
}

std::string HipRuntime::describe(hip::hipError_t e) const {
    using Text = const char *(*)(hip::hipError_t);
    const auto name_of = reinterpret_cast<Text>(entry("hipGetErrorName"));
    const auto text_of = reinterpret_cast<Text>(entry("hipGetErrorString"));
    const std::string code = std::to_string(e);
    const char *name = name_of ? name_of(e) : nullptr;
    const char *text = text_of ? text_of(e) : nullptr;
    if (!name || !*name) return "HIP error " + code;
    std::string out = std::string(name) + " (" + code + ")";
    if (text && *text && std::string(text) != name) out += ": " + std::string(text);
    return out;
}

int HipRuntime::device_count(std::string *error) const {
    if (!usable()) {
        if (error) *error = problem();
        return 0;
    }
    using Init = hip::hipError_t (*)(unsigned);
    using Count = hip::hipError_t (*)(int *);
    // hipInit fails without a device too (ROCm 5.2 says hipErrorInvalidDevice); the count's error
    // is the one that names the cause.
    reinterpret_cast<Init>(entry("hipInit"))(0);
    int count = 0;
    const hip::hipError_t e = reinterpret_cast<Count>(entry("hipGetDeviceCount"))(&count);
    if (e != hip::hipSuccess || count < 0) {
        if (error) *error = "hipGetDeviceCount failed: " + describe(e);
        return 0;
    }
    return count;
}

int hip_device_count() noexcept {
    static const int count = [] {
        try {
            return HipRuntime::get().device_count();
        } catch (...) {
            return 0;
        }
    }();
    return count;
}

void check_hip_device(int device_id) {
    std::string error;
    const int count = HipRuntime::get().device_count(&error);
    if (!error.empty()) throw RuntimeError("api 'hip': " + error + "; this machine has no AMD GPU that HIP can use");
    if (count == 0) throw RuntimeError("api 'hip': HIP reports no AMD GPU on this machine");
    if (device_id < 0 || device_id >= count)
        throw LogicError("api 'hip': no device " + std::to_string(device_id) + ": HIP reports " +
                         std::to_string(count) + " AMD GPU(s), ids 0 to " + std::to_string(count - 1));
}

} // namespace ember::detail
