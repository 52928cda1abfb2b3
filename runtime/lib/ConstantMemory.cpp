/// \file
/// Constant memory from the host: DeviceFunction::get_global and the constant_memory launch
/// option (ember/runtime/ConstantMemory.h).
#include "ember/runtime/ConstantMemory.h"

#include "Backend.h"
#include "ContextImpl.h"

#include "ember/compiler/CpuAbi.h"

namespace ember::detail {

namespace {

const std::string &kernel_name(const FunctionImpl &fn) { return fn.compiled.kernel_name; }

/// "'coeffs' (1024 bytes), 'k' (16 bytes)", or "none".
std::string list_constants(const FunctionImpl &fn) {
    std::string s;
    for (const ir::ConstantGlobal &c : fn.compiled.constants) {
        if (!s.empty()) s += ", ";
        s += "'" + c.name + "' (" + std::to_string(c.bytes) + " bytes)";
    }
    return s.empty() ? "none" : s;
}

/// The kernel's constant array `name`; LogicError for an unknown name, naming `what` (the call).
const ir::ConstantGlobal &find_constant(const FunctionImpl &fn, std::string_view name, const std::string &what) {
    for (const ir::ConstantGlobal &c : fn.compiled.constants)
        if (c.name == name) return c;
    throw LogicError(what + ": kernel '" + kernel_name(fn) + "' has no constant array named '" + std::string(name) +
                     "'; its constant arrays: " + list_constants(fn));
}

/// The symbol the back end's module defines for constant array `name` (the CPU device prefixes
/// it: cpu_constant_symbol).
std::string symbol_of(const FunctionImpl &fn, const std::string &name) {
    return fn.compiled.target.arch == Arch::CPU ? cpu_constant_symbol(name) : name;
}

/// The address of constant array `c` in the loaded module.
uint64_t address_of(FunctionImpl &fn, const ir::ConstantGlobal &c) {
    const std::string symbol = symbol_of(fn, c.name);
    auto [address, bytes] = fn.loaded->global(symbol);
    if (address == 0)
        throw RuntimeError("kernel '" + kernel_name(fn) + "': the loaded module has no global '" + symbol +
                           "' for constant array '" + c.name + "'; this is a bug in ember, please report it");
    if (bytes != c.bytes)
        throw RuntimeError("kernel '" + kernel_name(fn) + "': the loaded module's global '" + symbol + "' has " +
                           std::to_string(bytes) + " bytes but constant array '" + c.name + "' has " +
                           std::to_string(c.bytes) + "; this is a bug in ember, please report it");
    return address;
}

} // namespace

DeviceGlobal get_global(const std::shared_ptr<FunctionImpl> &fn, std::string_view name) {
    if (!fn || !fn->loaded) throw LogicError("get_global('" + std::string(name) + "') of an empty DeviceFunction");
    const ir::ConstantGlobal &c = find_constant(*fn, name, "get_global('" + std::string(name) + "')");
    const uint64_t address = address_of(*fn, c);
    return DeviceGlobal(fn, fn->context, c.name, address, static_cast<size_t>(c.bytes));
}

void check_global(const ContextImpl &ctx, const DeviceGlobal &g, const char *which) {
    if (!g)
        throw LogicError(std::string("enqueue_copy: the ") + which +
                         " DeviceGlobal is empty (default-constructed or moved-from)");
    if (g.context() != &ctx) {
        auto [of, on] = two_contexts(*g.context(), ctx);
        throw LogicError(std::string("enqueue_copy: the ") + which + " global '" + g.name() + "' belongs to " + of +
                         " but the copy runs on " + on);
    }
}

void check_global_bytes(const DeviceGlobal &g, size_t given, const char *which) {
    if (given != g.bytes())
        throw LogicError("enqueue_copy: constant array '" + g.name() + "' of kernel '" +
                         kernel_name(*g.function()) + "' has " + std::to_string(g.bytes()) + " bytes but the " +
                         which + " has " + std::to_string(given) + "; both must have the same size");
}

void write_constant_memory(ContextImpl &ctx, StreamImpl *stream, FunctionImpl &fn,
                           const std::vector<ConstantMemoryMapping> &mappings) {
    // Every mapping is checked before anything is enqueued.
    std::vector<uint64_t> addresses;
    addresses.reserve(mappings.size());
    for (const ConstantMemoryMapping &m : mappings) {
        const std::string what = "constant_memory('" + m.name + "')";
        const ir::ConstantGlobal &c = find_constant(fn, m.name, what);
        if (m.bytes != c.bytes)
            throw LogicError(what + ": constant array '" + c.name + "' of kernel '" + kernel_name(fn) + "' has " +
                             std::to_string(c.bytes) + " bytes but the mapping gives " + std::to_string(m.bytes));
        if (!m.host_ptr)
            throw LogicError(what + ": the host pointer of the mapping is null (kernel '" + kernel_name(fn) + "')");
        addresses.push_back(address_of(fn, c));
    }
    for (size_t i = 0; i < mappings.size(); ++i)
        enqueue_copy_bytes(ctx, MemSide::Device, addresses[i], &ctx, MemSide::Host,
                           reinterpret_cast<uint64_t>(mappings[i].host_ptr), nullptr, mappings[i].bytes, stream);
}

} // namespace ember::detail
