/// \file
/// What the compiler gives the compile cache's key: the build identity (a constant of the build)
/// and each target's machine (target_cache_key: the processor and features the code is really
/// built for, defaults resolved).
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Compiler.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

TEST(CompilerBuildId, IsASha256ConstantOfTheBuild) {
    const std::string id = compiler_build_id();
    ASSERT_EQ(id.size(), 64u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    EXPECT_EQ(compiler_build_id(), id);
}

TEST(TargetCacheKey, CpuNamesTheHostsProcessorAndFeatures) {
    const std::string key = target_cache_key(TargetSpec::host());
    // triple;processor;features, never the bare `cpu` of the spec.
    const size_t a = key.find(';'), b = key.find(';', a + 1);
    ASSERT_NE(b, std::string::npos) << key;
    EXPECT_GT(a, 0u) << key;
    EXPECT_GT(b, a + 1) << "no processor name: " << key;
    EXPECT_FALSE(key.substr(b + 1).empty()) << "no features: " << key;
    if (key.rfind("x86_64", 0) == 0) { // the features as built, strict-FP removals included
        EXPECT_NE(key.find("-avx512bf16"), std::string::npos) << key;
    }
    EXPECT_EQ(target_cache_key(TargetSpec::parse("cpu")), key);
}

TEST(TargetCacheKey, NamedProcessorsFeaturesAndGpuArchs) {
    const std::string znver4 = target_cache_key(TargetSpec::parse("cpu:znver4"));
    EXPECT_NE(znver4.find(";znver4;"), std::string::npos) << znver4;
    EXPECT_NE(target_cache_key(TargetSpec::parse("cpu:skylake")), znver4);
    EXPECT_NE(target_cache_key(TargetSpec::parse("cpu:znver4:+avx2")), znver4);
    EXPECT_EQ(target_cache_key(TargetSpec::parse("nvptx:sm_90")), "nvptx64-nvidia-cuda;sm_90;");
    EXPECT_EQ(target_cache_key(TargetSpec::parse("nvptx:sm_90:+ptx80")), "nvptx64-nvidia-cuda;sm_90;+ptx80");
    EXPECT_NE(target_cache_key(TargetSpec::parse("nvptx:sm_80")), target_cache_key(TargetSpec::parse("nvptx:sm_90")));
    // AMDGPU: the triple and the processor; a build without the AMDGPU back end (EMBER_ENABLE_AMDGPU
    // off) gives a key no compiled entry has.
    const std::string amd = target_cache_key(TargetSpec::parse("amdgpu:gfx942"));
    EXPECT_TRUE(amd == "amdgcn-amd-amdhsa;gfx942;" || amd == "unavailable:amdgpu:gfx942") << amd;
}

TEST(TargetCacheKey, FollowsTheProcessorCpuResolvesTo) {
    const std::string host = target_cache_key(TargetSpec::host());
    set_host_cpu_for_testing("znver4", "+avx2");
    const std::string other = target_cache_key(TargetSpec::host());
    set_host_cpu_for_testing("", "");
    EXPECT_NE(other.find(";znver4;+avx2"), std::string::npos) << other;
    EXPECT_NE(other, host);
    EXPECT_EQ(target_cache_key(TargetSpec::host()), host);
}
