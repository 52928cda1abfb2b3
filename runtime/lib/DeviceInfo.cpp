/// \file
/// Device information and context limits of DeviceContext (get_attribute, compute_capability,
/// get_memory_info, pci_bus_id, is_compatible, get_limit/set_limit, ...), and the names of
/// DeviceAttribute and Limit.
#include "ember/runtime/DeviceAttribute.h"
#include "ember/runtime/DeviceContext.h"

#include "Backend.h"
#include "ContextImpl.h"
#include "DeviceInfo.h"

#include "ember/compiler/Compiler.h"
#include "ember/compiler/IRPrinter.h"

#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ember {

std::string_view to_string(DeviceAttribute attribute) {
    switch (attribute) {
#define EMBER_DEVICE_ATTRIBUTE(name, cu_number)                                                    \
    case DeviceAttribute::name: return #name;
#include "ember/runtime/DeviceAttributes.def"
    }
    // Not an attribute: a name that keeps its number, in storage that lives forever.
    static std::mutex mutex;
    static std::unordered_map<int, std::string> others;
    std::lock_guard<std::mutex> lock(mutex);
    const int n = static_cast<int>(attribute);
    auto it = others.find(n);
    if (it == others.end()) it = others.emplace(n, "DeviceAttribute(" + std::to_string(n) + ")").first;
    return it->second;
}

std::string_view to_string(Limit limit) {
    switch (limit) {
    case Limit::stack_size: return "stack_size";
    case Limit::printf_fifo_size: return "printf_fifo_size";
    case Limit::malloc_heap_size: return "malloc_heap_size";
    }
    static std::mutex mutex;
    static std::unordered_map<int, std::string> others;
    std::lock_guard<std::mutex> lock(mutex);
    const int n = static_cast<int>(limit);
    auto it = others.find(n);
    if (it == others.end()) it = others.emplace(n, "Limit(" + std::to_string(n) + ")").first;
    return it->second;
}

namespace detail {
namespace {

bool is_attribute(DeviceAttribute a) { return to_string(a).rfind("DeviceAttribute(", 0) != 0; }

void check_limit(Limit limit, const char *call) {
    if (limit != Limit::stack_size && limit != Limit::printf_fifo_size && limit != Limit::malloc_heap_size)
        throw LogicError(std::string(call) + ": " + std::string(to_string(limit)) +
                         " is no limit; use Limit::stack_size, Limit::printf_fifo_size or "
                         "Limit::malloc_heap_size");
}

/// "CUDA 12.4" for 12040.
std::string cuda_version_text(int v) {
    return "CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

} // namespace

std::pair<int, int> ptx_isa_version(const TargetSpec &target) {
    static std::mutex mutex;
    static std::unordered_map<std::string, std::pair<int, int>> known;
    const std::string key = target.to_string();
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (auto it = known.find(key); it != known.end()) return it->second;
    }
    ir::Module m = ir::parse_module("kernel @ember_ptx_version() {\n}\n", "<is_compatible>");
    const std::string ptx = ember::emit(m.kernels.at(0), target, Stage::Asm);
    const size_t at = ptx.find(".version ");
    int major = 0, minor = 0;
    if (at == std::string::npos || std::sscanf(ptx.c_str() + at, ".version %d.%d", &major, &minor) != 2)
        throw RuntimeError("is_compatible: the PTX ember generates for " + key +
                           " has no '.version' directive; cannot tell which driver it needs");
    std::lock_guard<std::mutex> lock(mutex);
    known.emplace(key, std::pair{major, minor});
    return {major, minor};
}

// From the PTX ISA release notes: 6.0 came with CUDA 9.0, 6.3 with 10.0, 7.x with 11.x, 8.0-8.5
/// with 12.0-12.5 (12.6 kept 8.5), 8.6-8.8 with 12.7-12.9, 9.x with 13.x. 0 for older PTX.
int cuda_version_for_ptx_isa(int major, int minor) {
    if (major < 6) return 0;
    if (major == 6) return minor <= 2 ? 9000 + minor * 10 : 10000 + (minor - 3) * 10;
    if (major == 7) return 11000 + minor * 10;
    if (major == 8) return minor <= 5 ? 12000 + minor * 10 : 12000 + (minor + 1) * 10;
    return 13000 + (major - 9) * 1000 + minor * 10;
}

} // namespace detail

int DeviceContext::get_attribute(DeviceAttribute attribute) const {
    detail::ContextImpl &self = live("get_attribute");
    if (!detail::is_attribute(attribute))
        throw LogicError("get_attribute: " + std::string(to_string(attribute)) +
                         " names no device attribute (see ember/runtime/DeviceAttributes.def)");
    int value = 0;
    if (!self.backend->query_attribute(attribute, value)) {
        std::string msg = "get_attribute: " + self.label + " (" + name() + ") does not know attribute '" +
                          std::string(to_string(attribute)) + "' (CUdevice_attribute " +
                          std::to_string(static_cast<int>(attribute)) + ")";
        if (api() == "hip") msg += "; HIP has no such device attribute";
        else if (int v = get_driver_version()) msg += "; its driver (" + detail::cuda_version_text(v) + ") predates it";
        throw LogicError(msg);
    }
    return value;
}

std::map<DeviceAttribute, int> DeviceContext::get_attributes() const {
    std::map<DeviceAttribute, int> out;
    for (DeviceAttribute a : all_device_attributes) {
        int value = 0;
        if (live("get_attributes").backend->query_attribute(a, value)) out.emplace(a, value);
    }
    return out;
}

std::pair<int, int> DeviceContext::compute_capability() const {
    return {get_attribute(DeviceAttribute::compute_capability_major),
            get_attribute(DeviceAttribute::compute_capability_minor)};
}

int DeviceContext::get_driver_version() const { return live("get_driver_version").backend->driver_version(); }
int DeviceContext::get_api_version() const { return live("get_api_version").backend->api_version(); }
std::pair<size_t, size_t> DeviceContext::get_memory_info() const { return live("get_memory_info").backend->memory_info(); }
size_t DeviceContext::total_memory() const { return live("total_memory").backend->total_memory(); }
std::string DeviceContext::pci_bus_id() const { return live("pci_bus_id").backend->pci_bus_id(); }

bool DeviceContext::is_compatible() const {
    const TargetSpec target = live("is_compatible").backend->target();
    if (target.arch == Arch::CPU) return true; // compiled for this very host
    if (target.arch != Arch::NVPTX) return false;
    auto [major, minor] = compute_capability();
    if (major < min_compute_capability_major ||
        (major == min_compute_capability_major && minor < min_compute_capability_minor))
        return false;
    auto [ptx_major, ptx_minor] = detail::ptx_isa_version(target);
    return get_driver_version() >= detail::cuda_version_for_ptx_isa(ptx_major, ptx_minor);
}

size_t DeviceContext::get_limit(Limit limit) const {
    detail::check_limit(limit, "get_limit");
    return live("get_limit").backend->get_limit(limit);
}

void DeviceContext::set_limit(Limit limit, size_t value) const {
    detail::check_limit(limit, "set_limit");
    live("set_limit").backend->set_limit(limit, value);
}

} // namespace ember
