/// \file
/// Unit tests of TargetSpec: parsing, printing, round trips, errors, host() and nvptx_for().
#include "ember/compiler/Target.h"

#include "ember/Error.h"

#include <gtest/gtest.h>

#include <string>

using ember::Arch;
using ember::LogicError;
using ember::TargetSpec;

TEST(TargetSpecTest, ParsesTheAcceptedForms) {
    TargetSpec nv = TargetSpec::parse("nvptx:sm_90");
    EXPECT_EQ(nv.arch, Arch::NVPTX);
    EXPECT_EQ(nv.cpu, "sm_90");
    EXPECT_EQ(nv.features, "");

    TargetSpec nva = TargetSpec::parse("nvptx:sm_90a");
    EXPECT_EQ(nva.cpu, "sm_90a");

    TargetSpec cpu = TargetSpec::parse("cpu");
    EXPECT_EQ(cpu.arch, Arch::CPU);
    EXPECT_EQ(cpu.cpu, "");
    EXPECT_EQ(cpu.features, "");

    TargetSpec named = TargetSpec::parse("cpu:skylake-avx512");
    EXPECT_EQ(named.arch, Arch::CPU);
    EXPECT_EQ(named.cpu, "skylake-avx512");

    TargetSpec amd = TargetSpec::parse("amdgpu:gfx942");
    EXPECT_EQ(amd.arch, Arch::AMDGPU);
    EXPECT_EQ(amd.cpu, "gfx942");
}

TEST(TargetSpecTest, ParsesFeatures) {
    TargetSpec nv = TargetSpec::parse("nvptx:sm_80:+ptx80");
    EXPECT_EQ(nv.cpu, "sm_80");
    EXPECT_EQ(nv.features, "+ptx80");

    TargetSpec cpu = TargetSpec::parse("cpu:znver3:+avx2,-avx512f");
    EXPECT_EQ(cpu.cpu, "znver3");
    EXPECT_EQ(cpu.features, "+avx2,-avx512f");

    TargetSpec host_cpu = TargetSpec::parse("cpu::-avx512f");
    EXPECT_EQ(host_cpu.cpu, "");
    EXPECT_EQ(host_cpu.features, "-avx512f");
}

TEST(TargetSpecTest, PrintsWhatItParses) {
    for (const char *s : {"nvptx:sm_90", "nvptx:sm_75", "nvptx:sm_80:+ptx80", "cpu", "cpu:znver4",
                          "cpu:znver3:+avx2,-avx512f", "cpu::-avx512f", "amdgpu:gfx942"}) {
        EXPECT_EQ(TargetSpec::parse(s).to_string(), s);
        EXPECT_EQ(TargetSpec::parse(TargetSpec::parse(s).to_string()), TargetSpec::parse(s)) << s;
    }
}

TEST(TargetSpecTest, RejectsMalformedSpecsNamingTheAcceptedForms) {
    for (const char *s : {"", "gpu", "nvptx", "nvptx:", "nvptx:90", "nvptx:sm_", "nvptx:sm_9x0",
                          "nvptx:sm_90:", "cpu:", "cpu:a b", "cuda:sm_90", "amdgpu:sm_90",
                          "cpu:znver3:avx2;x", "CPU"}) {
        try {
            TargetSpec::parse(s);
            ADD_FAILURE() << "'" << s << "' was accepted";
        } catch (const LogicError &e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(std::string("invalid target '") + s + "'"), std::string::npos) << msg;
            EXPECT_NE(msg.find("nvptx:sm_<NN>"), std::string::npos) << msg;
            EXPECT_NE(msg.find("cpu:<llvm cpu name>"), std::string::npos) << msg;
        }
    }
}

TEST(TargetSpecTest, HostIsPlainCpu) {
    // The host's processor and features are resolved when code is generated (and are part of
    // the target's cache key), so the spec itself does not depend on the machine.
    TargetSpec host = TargetSpec::host();
    EXPECT_EQ(host.arch, Arch::CPU);
    EXPECT_EQ(host, TargetSpec::parse("cpu"));
    EXPECT_EQ(host.to_string(), "cpu");
}

TEST(TargetSpecTest, NvptxForPicksTheNewestKnownProcessorNotNewerThanTheDevice) {
    EXPECT_EQ(TargetSpec::nvptx_for(9, 0).to_string(), "nvptx:sm_90a"); // its own arch-specific one
    EXPECT_EQ(TargetSpec::nvptx_for(8, 0).to_string(), "nvptx:sm_80");
    EXPECT_EQ(TargetSpec::nvptx_for(8, 6).to_string(), "nvptx:sm_86");
    EXPECT_EQ(TargetSpec::nvptx_for(8, 9).to_string(), "nvptx:sm_89");
    EXPECT_EQ(TargetSpec::nvptx_for(7, 5).to_string(), "nvptx:sm_75");
    // sm_71 does not exist: the newest one below is sm_70.
    EXPECT_EQ(TargetSpec::nvptx_for(7, 1).to_string(), "nvptx:sm_70");
    // Newer than LLVM 19 knows (sm_100, sm_120): PTX for sm_90 runs there through the driver's
    // JIT. Never the arch-specific sm_90a, whose PTX runs on sm_90 only.
    EXPECT_EQ(TargetSpec::nvptx_for(10, 0).to_string(), "nvptx:sm_90");
    EXPECT_EQ(TargetSpec::nvptx_for(12, 0).to_string(), "nvptx:sm_90");
    EXPECT_EQ(TargetSpec::nvptx_for(9, 0).arch, Arch::NVPTX);
}
