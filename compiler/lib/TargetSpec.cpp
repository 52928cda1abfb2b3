/// \file
/// TargetSpec's textual form: `nvptx:sm_90`, `cpu`, `cpu:<llvm cpu>`, `amdgpu:gfx942`, each with
/// an optional third field of LLVM features (`cpu:znver4:+avx512f`, `nvptx:sm_90:+ptx80`).
#include "ember/compiler/Target.h"

#include "ember/Error.h"
#include "targets/TargetImpl.h"

#include <llvm/TargetParser/Host.h>

#include <cctype>

namespace ember {
namespace {

constexpr const char *accepted_forms =
    "accepted forms: 'nvptx:sm_<NN>' (e.g. nvptx:sm_90), 'cpu' (the host processor), "
    "'cpu:<llvm cpu name>' (e.g. cpu:znver4), 'amdgpu:gfx<NNN>'; any of them may end in "
    "':<features>' with LLVM features such as +ptx80 or +avx2,-avx512f";

[[noreturn]] void bad_spec(std::string_view spec, std::string_view why) {
    throw LogicError("invalid target '" + std::string(spec) + "': " + std::string(why) + "; " +
                     accepted_forms);
}

bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

/// `sm_` followed by digits and optionally one lower-case letter (`sm_90a`).
bool is_sm_name(std::string_view s) {
    if (s.size() < 4 || s.substr(0, 3) != "sm_") return false;
    std::string_view rest = s.substr(3);
    if (!rest.empty() && std::islower(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
    if (rest.empty()) return false;
    for (char c : rest)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

bool is_gfx_name(std::string_view s) {
    if (s.size() < 4 || s.substr(0, 3) != "gfx") return false;
    for (char c : s.substr(3))
        if (!std::isalnum(static_cast<unsigned char>(c))) return false;
    return true;
}

} // namespace

TargetSpec TargetSpec::parse(std::string_view spec) {
    const size_t colon1 = spec.find(':');
    const std::string_view arch = spec.substr(0, colon1);
    std::string_view cpu, features;
    if (colon1 != std::string_view::npos) {
        const std::string_view rest = spec.substr(colon1 + 1);
        const size_t colon2 = rest.find(':');
        cpu = rest.substr(0, colon2);
        if (colon2 != std::string_view::npos) {
            features = rest.substr(colon2 + 1);
            if (features.empty()) bad_spec(spec, "empty feature list");
            for (char c : features)
                if (!is_name_char(c) && c != '+' && c != ',')
                    bad_spec(spec, "unexpected character in the feature list");
        }
    }
    TargetSpec out;
    out.cpu = std::string(cpu);
    out.features = std::string(features);
    if (arch == "cpu") {
        out.arch = Arch::CPU;
        // `cpu::+avx2` keeps the host processor and only changes features.
        if (colon1 != std::string_view::npos && cpu.empty() && features.empty())
            bad_spec(spec, "missing CPU name after 'cpu:'");
        for (char c : cpu)
            if (!is_name_char(c)) bad_spec(spec, "unexpected character in the CPU name");
        return out;
    }
    if (arch == "nvptx") {
        out.arch = Arch::NVPTX;
        if (!is_sm_name(cpu)) bad_spec(spec, "nvptx needs a processor 'sm_<NN>'");
        return out;
    }
    if (arch == "amdgpu") {
        out.arch = Arch::AMDGPU;
        if (!is_gfx_name(cpu)) bad_spec(spec, "amdgpu needs a processor 'gfx<NNN>'");
        return out;
    }
    bad_spec(spec, "unknown target kind '" + std::string(arch) + "'");
}

// `cpu` with no processor named means "this host": it prints as `cpu`, so file names and
// messages do not depend on the machine, and the CPU target resolves the host's processor and
// features when it creates its target machine (and puts them in its cache key).
TargetSpec TargetSpec::host() {
    TargetSpec out;
    out.arch = Arch::CPU;
    return out;
}

// The processor is the device's own arch-specific one (`sm_90a` for compute capability 9.0) when
// this LLVM's NVPTX back end lists it (through its MCSubtargetInfo, so a newer LLVM picks up new
// processors without a change here): the runtime compiles for the device it runs on, and only
// there are the instructions of that architecture alone (wgmma, setmaxnreg) available. Otherwise
// it is the newest `sm_NN` not newer than the device: PTX is forward compatible, so the driver
// JIT-compiles sm_90 PTX for a compute capability 10.0 device (arch-specific names of other
// devices are skipped: their PTX runs only on exactly that architecture). Without an NVPTX back
// end, or for a device older than every known processor, the result is the device's own
// `sm_<major><minor>`, and compiling for it reports the problem.
TargetSpec TargetSpec::nvptx_for(int cc_major, int cc_minor) {
    const int device = cc_major * 10 + cc_minor;
    const std::string own_specific = "sm_" + std::to_string(device) + "a";
    int best = -1;
    bool has_specific = false;
    for (const std::string &name : detail::known_llvm_cpus("nvptx64-nvidia-cuda")) {
        if (name == own_specific) has_specific = true;
        if (name.size() < 4 || name.compare(0, 3, "sm_") != 0) continue;
        const std::string digits = name.substr(3);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
        const int sm = std::stoi(digits);
        if (sm <= device && sm > best) best = sm;
    }
    TargetSpec out;
    out.arch = Arch::NVPTX;
    out.cpu = has_specific ? own_specific : "sm_" + std::to_string(best >= 0 ? best : device);
    return out;
}

std::string TargetSpec::to_string() const {
    std::string out;
    switch (arch) {
    case Arch::NVPTX: out = "nvptx"; break;
    case Arch::CPU: out = "cpu"; break;
    case Arch::AMDGPU: out = "amdgpu"; break;
    }
    if (!cpu.empty() || !features.empty()) out += ":" + cpu;
    if (!features.empty()) out += ":" + features;
    return out;
}

} // namespace ember
