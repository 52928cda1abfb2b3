/// \file
/// Artefact keys and the runtime's one compile call ([Note] One compile call in KernelBuild.h).
#include "ember/compiler/KernelBuild.h"

#include "ember/compiler/CacheSupport.h"

#include <atomic>
#include <mutex>

namespace ember {

namespace {

/// The key components that are constants of the process.
struct Versions {
    std::string ember = ember_version() + "+f" + std::to_string(kArtefactFormatVersion);
    std::string build = compiler_build_id();
    std::string llvm = llvm_version();
};
const Versions &versions() {
    static const Versions v;
    return v;
}

std::mutex build_override_mutex;
std::atomic<bool> build_overridden{false};
std::string build_override; // set_build_id_for_testing

std::string key_build_id() {
    if (!build_overridden.load(std::memory_order_acquire)) return versions().build;
    std::lock_guard<std::mutex> lock(build_override_mutex);
    return build_overridden.load() ? build_override : versions().build;
}

} // namespace

std::string key_digest(const ArtefactKey &key) {
    std::string text = "ember-cache\nir=" + key.ir + "\ntarget=" + key.target + "\nmachine=" + key.target_machine +
                       "\noptions=" + key.options + "\nember=" + key.ember_version + "\nbuild=" + key.build +
                       "\nllvm=" + key.llvm_version + "\n";
    if (!key.driver.empty() || !key.arch.empty()) text += "driver=" + key.driver + "\narch=" + key.arch + "\n";
    return sha256_hex(text);
}

void set_build_id_for_testing(std::string build) {
    std::lock_guard<std::mutex> lock(build_override_mutex);
    build_overridden.store(!build.empty(), std::memory_order_release);
    build_override = std::move(build);
}

ArtefactKey artefact_key(std::string ir_hash, const TargetSpec &target, const CompileOptions &options) {
    ArtefactKey key;
    key.ir = std::move(ir_hash);
    key.target = target.to_string();
    key.target_machine = target_cache_key(target);
    key.options = "O" + std::to_string(options.opt_level);
    key.ember_version = versions().ember;
    key.build = key_build_id();
    key.llvm_version = versions().llvm;
    key.digest = key_digest(key);
    return key;
}

ArtefactKey image_key(const ArtefactKey &base, std::string_view driver, std::string_view arch) {
    ArtefactKey key = base;
    key.driver = driver;
    key.arch = arch;
    key.digest = key_digest(key);
    return key;
}

std::string changed_components(const ArtefactKey &a, const ArtefactKey &b) {
    std::string out;
    auto add = [&](bool differs, const char *name) {
        if (!differs) return;
        if (!out.empty()) out += ", ";
        out += name;
    };
    add(a.ir != b.ir, "IR");
    add(a.target != b.target, "target");
    add(a.target_machine != b.target_machine && a.target == b.target, "target machine");
    add(a.options != b.options, "options");
    add(a.ember_version != b.ember_version, "ember version");
    add(a.build != b.build, "compiler build");
    add(a.llvm_version != b.llvm_version, "LLVM version");
    add(a.driver != b.driver, "driver");
    add(a.arch != b.arch, "arch");
    return out;
}

std::string_view artefact_kind(const TargetSpec &target) {
    switch (target.arch) {
    case Arch::CPU: return "cpu-obj";
    case Arch::NVPTX: return "ptx";
    default: return "amdgpu-obj";
    }
}

KernelBuild build_kernel(const ir::Kernel &k, const ArtefactKey &key, const TargetSpec &target,
                         const CompileOptions &options, ArtefactStore *store, bool verified) {
    KernelBuild out;
    const std::string_view kind = artefact_kind(target);
    if (store) {
        if (std::optional<std::string> bytes = store->load(key.digest, kind)) {
            out.kernel = compiled_from_binary(k, target, std::move(*bytes), !verified);
            return out;
        }
    }
    out.kernel = compile(k, target, options);
    out.compiled = true;
    if (store) store->store(key.digest, kind, out.kernel.binary);
    return out;
}

} // namespace ember
