/// \file
/// Target specifications: which device kind, which processor, which features.
#ifndef EMBER_COMPILER_TARGET_H
#define EMBER_COMPILER_TARGET_H

#include <string>
#include <string_view>

namespace ember {

enum class Arch { NVPTX, CPU, AMDGPU };

/// Parses and prints `nvptx:sm_90`, `cpu` (the host processor), `cpu:<llvm cpu name>` and, once
/// that back end exists, `amdgpu:gfx942`. One parser serves the command line, the environment and
/// the API.
struct TargetSpec {
    Arch arch = Arch::CPU;
    /// `sm_90` for NVPTX, `gfx942` for AMDGPU, an LLVM CPU name or empty (= host) for CPU.
    std::string cpu;
    /// LLVM feature string (`+ptx80`); empty selects the default for `cpu`.
    std::string features;

    /// Throws `ember::LogicError` naming the bad spec and the accepted forms.
    static TargetSpec parse(std::string_view spec);
    /// The host processor, with its features.
    static TargetSpec host();
    /// `nvptx:sm_XX` for a device of compute capability major.minor.
    static TargetSpec nvptx_for(int cc_major, int cc_minor);

    std::string to_string() const;
    friend bool operator==(const TargetSpec &, const TargetSpec &) = default;
};

} // namespace ember

#endif // EMBER_COMPILER_TARGET_H
