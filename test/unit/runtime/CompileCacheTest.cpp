/// \file
/// The compile cache (runtime/lib/CompileCache.h, [Note] Compile cache): every key component
/// changes the key; two traces of one lambda hit; the memory level skips the compiler; the disk
/// level answers a fresh process cache without LLVM; a corrupt entry recovers; several processes
/// compiling one kernel into one directory all succeed with one entry; EMBER_LOG=cache lines; the
/// constants warning; the launch slot of enqueue_function(kernel) across contexts.
#include "ember/ember.h"

#include "CompileCache.h"
#include "DeviceTest.h"
#include "DiskCache.h"

#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Log.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace ember;
using ember::detail::CacheKey;
using ember::detail::CompileCache;
using ember::detail::DiskCache;
namespace fs = std::filesystem;

namespace {

auto make_add(const char *name, float amount) {
    return kernel(name, {"v", "n"}, [amount](Ptr<float> v, Int n) {
        auto i = global_idx.x;
        if_(i < n, [&] { v[i] += amount; });
    });
}

fs::path fresh_dir(const std::string &tag) {
    fs::path dir = fs::temp_directory_path() /
                   ("ember-compile-cache-test-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::vector<fs::path> entries_of_kind(const fs::path &dir, const std::string &kind) {
    std::vector<fs::path> out;
    for (const auto &e : fs::directory_iterator(dir)) {
        std::string name = e.path().filename().string();
        if (name.size() > kind.size() + 1 && name.compare(name.size() - kind.size() - 1, std::string::npos,
                                                          "." + kind) == 0)
            out.push_back(e.path());
    }
    return out;
}

/// `err` without the line the cache log prints once per process, before its first lookup line
/// ("ember[cache]: ember <version>, compiler build ..., LLVM ..."): whether a test's capture has it
/// depends on which tests ran before it in the process.
std::string without_versions_line(std::string err) {
    const std::string prefix = "ember[cache]: ember ";
    for (size_t at = err.find(prefix); at != std::string::npos; at = err.find(prefix, at + 1))
        if (at == 0 || err[at - 1] == '\n') {
            const size_t end = err.find('\n', at);
            err.erase(at, end == std::string::npos ? std::string::npos : end + 1 - at);
            break;
        }
    return err;
}

const char *kind_for(const std::string &api) { return api == "cuda" ? "ptx" : "cpu-obj"; }

/// Runs `k` (v[i] += amount) on 64 elements of value 1 and returns the results.
template <class K> std::vector<float> run_add(DeviceContext &ctx, const K &k) {
    constexpr int64_t n = 64;
    auto host = ctx.enqueue_create_host_buffer<float>(n);
    ctx.synchronize();
    for (int64_t i = 0; i < n; ++i) host[i] = 1.0f;
    auto dev = ctx.enqueue_create_buffer<float>(n);
    ctx.enqueue_copy(dev, host);
    ctx.enqueue_function(k, dev, n, grid_dim(1), block_dim(n));
    ctx.enqueue_copy(host, dev);
    ctx.synchronize();
    return std::vector<float>(host.begin(), host.end());
}

void expect_all(const std::vector<float> &v, float want) {
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i] != want) {
            ADD_FAILURE() << "element " << i << " is " << v[i] << ", want " << want;
            return;
        }
}

} // namespace

TEST(CompileCacheKey, EveryComponentChangesTheDigest) {
    auto k = make_add("key_components", 1.0f);
    CacheKey base = detail::make_cache_key(k.info()->ir, TargetSpec::host(), {});
    EXPECT_EQ(base.digest, key_digest(base));
    EXPECT_EQ(base.digest.size(), 64u);
    EXPECT_EQ(base.llvm_version, llvm_version());
    EXPECT_NE(base.ember_version.find(ember_version()), std::string::npos);
    struct Change {
        std::string CacheKey::*field;
        const char *name;
    };
    EXPECT_EQ(base.build, compiler_build_id());
    EXPECT_EQ(base.target_machine, target_cache_key(TargetSpec::host()));
    const Change changes[] = {{&CacheKey::ir, "IR"},
                              {&CacheKey::target, "target"},
                              {&CacheKey::target_machine, "target machine"},
                              {&CacheKey::options, "options"},
                              {&CacheKey::ember_version, "ember version"},
                              {&CacheKey::build, "compiler build"},
                              {&CacheKey::llvm_version, "LLVM version"},
                              {&CacheKey::driver, "driver"},
                              {&CacheKey::arch, "arch"}};
    for (const Change &c : changes) {
        CacheKey other = base;
        other.*(c.field) += "x";
        other.digest = key_digest(other);
        EXPECT_NE(other.digest, base.digest) << c.name;
        EXPECT_EQ(changed_components(base, other), c.name);
    }
    EXPECT_EQ(changed_components(base, base), "");
}

TEST(CompileCacheKey, MakeKeyFollowsIrTargetOptionsAndCubinFields) {
    auto a = make_add("key_make", 1.0f);
    auto b = make_add("key_make", 2.0f);
    const TargetSpec host = TargetSpec::host();
    CacheKey ka = detail::make_cache_key(a.info()->ir, host, {});
    CacheKey kb = detail::make_cache_key(b.info()->ir, host, {});
    EXPECT_EQ(changed_components(ka, kb), "IR");
    CacheKey kt = detail::make_cache_key(a.info()->ir, TargetSpec::parse("nvptx:sm_90"), {});
    EXPECT_EQ(changed_components(ka, kt), "target");
    CompileOptions o2;
    o2.opt_level = 2;
    CacheKey ko = detail::make_cache_key(a.info()->ir, host, o2);
    EXPECT_EQ(changed_components(ka, ko), "options");
    // Stage texts do not change the code, so not the key.
    CompileOptions keep;
    keep.keep_ir = keep.keep_asm = true;
    EXPECT_EQ(detail::make_cache_key(a.info()->ir, host, keep).digest, ka.digest);
    CacheKey c1 = image_key(ka, "12040", "sm_90");
    CacheKey c2 = image_key(ka, "12050", "sm_90");
    CacheKey c3 = image_key(ka, "12040", "sm_80");
    EXPECT_NE(c1.digest, ka.digest);
    EXPECT_EQ(changed_components(c1, c2), "driver");
    EXPECT_EQ(changed_components(c1, c3), "arch");
    EXPECT_NE(c1.digest, c2.digest);
    EXPECT_NE(c1.digest, c3.digest);
}

namespace {

/// This host's processor name and feature string, from the `cpu` target's key
/// (`triple;name;features`).
std::pair<std::string, std::string> host_name_and_features() {
    const std::string key = target_cache_key(TargetSpec::host());
    const size_t a = key.find(';'), b = key.find(';', a + 1);
    EXPECT_NE(b, std::string::npos) << key;
    return {key.substr(a + 1, b - a - 1), key.substr(b + 1)};
}

/// A processor LLVM knows that is not this host's.
std::string another_cpu() { return host_name_and_features().first == "znver4" ? "skylake-avx512" : "znver4"; }

/// `features` with one vector extension it has (`+avx512f`, else `+avx2`, ...) turned into
/// `-name`: code for this processor, as on a machine without that extension.
std::string without_one_feature(std::string features) {
    const std::string list = "," + features + ",";
    for (const char *f : {"+avx512f", "+avx2", "+sse4.2", "+neon", "+sve"}) {
        const size_t at = list.find("," + std::string(f) + ",");
        if (at == std::string::npos) continue;
        features[at] = '-'; // `at` in `list` is the feature's sign in `features`
        return features;
    }
    ADD_FAILURE() << "no vector extension to take away in " << features;
    return features;
}

/// Makes `cpu` targets compile for another processor while it lives, as on another machine.
struct OtherHostCpu {
    OtherHostCpu(std::string name, std::string features) { set_host_cpu_for_testing(std::move(name), std::move(features)); }
    ~OtherHostCpu() { set_host_cpu_for_testing("", ""); }
};

/// Makes cache keys name another compiler build while it lives, as after a rebuild.
struct OtherCompilerBuild {
    explicit OtherCompilerBuild(std::string id) { set_build_id_for_testing(std::move(id)); }
    ~OtherCompilerBuild() { set_build_id_for_testing(""); }
};

/// The level that answers a lookup of `k` for `cpu` in a new process (nothing in memory) whose
/// disk cache is `disk`.
template <class K> std::string level_in_a_new_process(DiskCache &disk, const K &k) {
    CompileCache cache;
    cache.set_disk_for_testing(&disk);
    const char *level = nullptr;
    cache.get(*k.info(), TargetSpec::host(), {}, &level);
    return level;
}

} // namespace

// Every input of the code changes the key that make_cache_key builds from it, one at a time:
// the compiler's build, the processor and the features `cpu` resolves to, each option, the
// target, the IR. (The versions are process constants; EveryComponentChangesTheDigest shows that
// each one changes the digest, and the key above holds this build's.)
TEST(CompileCacheKey, EachInputOfTheCodeChangesTheKey) {
    auto k = make_add("key_inputs", 1.0f);
    auto k2 = make_add("key_inputs", 2.0f);
    const TargetSpec host = TargetSpec::host();
    const CacheKey base = detail::make_cache_key(k.info()->ir, host, {});
    const auto [cpu_name, cpu_features] = host_name_and_features();
    ASSERT_FALSE(cpu_name.empty());
    EXPECT_NE(base.target_machine.find(";" + cpu_name + ";"), std::string::npos) << base.target_machine;

    auto expect_change = [&](const CacheKey &other, const char *what, const std::string &why) {
        EXPECT_NE(other.digest, base.digest) << why;
        EXPECT_EQ(changed_components(base, other), what) << why;
    };
    {
        OtherCompilerBuild rebuilt(std::string(64, '0'));
        expect_change(detail::make_cache_key(k.info()->ir, host, {}), "compiler build", "a rebuilt compiler");
    }
    {
        const std::string other_cpu = another_cpu();
        OtherHostCpu other(other_cpu, cpu_features);
        const CacheKey key = detail::make_cache_key(k.info()->ir, host, {});
        expect_change(key, "target machine", "another processor");
        EXPECT_NE(key.target_machine.find(";" + other_cpu + ";"), std::string::npos) << key.target_machine;
        EXPECT_EQ(key.target, base.target); // `cpu` in both: the spec alone would not tell them apart
    }
    {
        OtherHostCpu other(cpu_name, without_one_feature(cpu_features));
        expect_change(detail::make_cache_key(k.info()->ir, host, {}), "target machine", "one feature less");
    }
    EXPECT_EQ(detail::make_cache_key(k.info()->ir, host, {}).digest, base.digest) << "back on this host";
    std::set<std::string> digests{base.digest};
    for (int level = 0; level < 3; ++level) {
        CompileOptions o;
        o.opt_level = level;
        const CacheKey key = detail::make_cache_key(k.info()->ir, host, o);
        expect_change(key, "options", "O" + std::to_string(level));
        digests.insert(key.digest);
    }
    EXPECT_EQ(digests.size(), 4u) << "each opt level has its own key";
    expect_change(detail::make_cache_key(k2.info()->ir, host, {}), "IR", "other IR");
    // Named processors and features, and GPU features, are in the target and its machine.
    const CacheKey a = detail::make_cache_key(k.info()->ir, TargetSpec::parse("cpu:znver4"), {});
    const CacheKey b = detail::make_cache_key(k.info()->ir, TargetSpec::parse("cpu:znver4:+avx2"), {});
    const CacheKey c = detail::make_cache_key(k.info()->ir, TargetSpec::parse("nvptx:sm_90"), {});
    const CacheKey d = detail::make_cache_key(k.info()->ir, TargetSpec::parse("nvptx:sm_90:+ptx80"), {});
    EXPECT_NE(a.target_machine, b.target_machine);
    EXPECT_NE(a.digest, b.digest);
    EXPECT_NE(c.target_machine, d.target_machine);
    EXPECT_NE(c.digest, d.digest);
}

TEST(CompileCacheKey, TwoTracesOfOneLambdaHaveOneKey) {
    auto a = make_add("two_traces", 3.0f);
    auto b = make_add("two_traces", 3.0f);
    EXPECT_NE(a.info()->id, b.info()->id); // two traced kernels...
    EXPECT_EQ(detail::make_cache_key(a.info()->ir, TargetSpec::host(), {}).digest,
              detail::make_cache_key(b.info()->ir, TargetSpec::host(), {}).digest); // ...one key
    auto c = make_add("two_traces_renamed", 3.0f);
    EXPECT_NE(detail::make_cache_key(a.info()->ir, TargetSpec::host(), {}).digest,
              detail::make_cache_key(c.info()->ir, TargetSpec::host(), {}).digest);
}

TEST(CompileCacheKey, MaskNumericLiterals) {
    EXPECT_EQ(detail::mask_numeric_literals("%v = add %x1, 3.5e+2 ; i64 -7 f32"),
              "%v = add %x1, # ; i64 # f32");
    EXPECT_EQ(detail::mask_numeric_literals("0x1p3"), "#");
}

TEST(CompileCacheStandalone, MemoryLevelCompilesOnceAndThreadsShareIt) {
    CompileCache cache;
    cache.set_disk_for_testing(nullptr);
    auto k = make_add("standalone_once", 1.0f);
    std::vector<std::thread> threads;
    std::vector<std::shared_ptr<const CompiledKernel>> results(4);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] { results[t] = cache.get(*k.info(), TargetSpec::host()); });
    for (auto &t : threads) t.join();
    EXPECT_EQ(cache.compiles(), 1u);
    EXPECT_EQ(cache.memory_hits(), 3u);
    for (int t = 1; t < 4; ++t) EXPECT_EQ(results[t].get(), results[0].get());
    // A second trace of the same lambda is a memory hit too.
    auto again = make_add("standalone_once", 1.0f);
    EXPECT_EQ(cache.get(*again.info(), TargetSpec::host()).get(), results[0].get());
    EXPECT_EQ(cache.compiles(), 1u);
}

TEST(CompileCacheStandalone, DiskLevelSkipsLlvmAndCorruptEntriesRecover) {
    fs::path dir = fresh_dir("disk");
    DiskCache disk(dir, uint64_t(1) << 30);
    CompileCache cache;
    cache.set_disk_for_testing(&disk);
    auto k = make_add("standalone_disk", 1.0f);
    auto first = cache.get(*k.info(), TargetSpec::host());
    EXPECT_EQ(cache.compiles(), 1u);
    ASSERT_EQ(entries_of_kind(dir, "cpu-obj").size(), 1u);

    cache.clear_memory();
    auto second = cache.get(*k.info(), TargetSpec::host());
    EXPECT_EQ(cache.compiles(), 1u) << "a disk hit must not run LLVM";
    EXPECT_EQ(cache.disk_hits(), 1u);
    EXPECT_EQ(second->binary, first->binary);
    EXPECT_EQ(second->local_bytes, first->local_bytes);
    EXPECT_EQ(second->kernel_name, "standalone_disk");

    // Truncate the entry: a warning, then a recompile that stores a good entry again.
    fs::path entry = entries_of_kind(dir, "cpu-obj").at(0);
    fs::resize_file(entry, fs::file_size(entry) / 2);
    cache.clear_memory();
    ::testing::internal::CaptureStderr();
    auto third = cache.get(*k.info(), TargetSpec::host());
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("recompiling"), std::string::npos) << err;
    EXPECT_EQ(cache.compiles(), 2u);
    EXPECT_EQ(third->binary, first->binary);
    cache.clear_memory();
    cache.get(*k.info(), TargetSpec::host());
    EXPECT_EQ(cache.compiles(), 2u);
    EXPECT_EQ(cache.disk_hits(), 2u);
    fs::remove_all(dir);
}

// A cache shared between machines (an NFS home, a pre-warmed container image): an object built
// for another processor, or for this one with other features, is not served to this one; each
// machine finds its own.
TEST(CompileCacheStandalone, ACpuEntryOfAnotherProcessorIsNotServed) {
    fs::path dir = fresh_dir("other-cpu");
    DiskCache disk(dir, uint64_t(1) << 30);
    auto k = make_add("standalone_other_cpu", 1.0f);
    const auto [cpu_name, cpu_features] = host_name_and_features();
    const std::string other_cpu = another_cpu();
    auto level_of_fresh_process = [&] { return level_in_a_new_process(disk, k); };
    {
        OtherHostCpu other(other_cpu, "");
        EXPECT_EQ(level_of_fresh_process(), "compiled");
        EXPECT_EQ(level_of_fresh_process(), "disk") << "the other machine finds its own entry";
    }
    EXPECT_EQ(level_of_fresh_process(), "compiled") << "code for " << other_cpu << " served to " << cpu_name;
    {
        OtherHostCpu other(cpu_name, without_one_feature(cpu_features));
        EXPECT_EQ(level_of_fresh_process(), "compiled") << "code for this processor's features served without one";
        EXPECT_EQ(level_of_fresh_process(), "disk");
    }
    EXPECT_EQ(level_of_fresh_process(), "disk") << "this machine finds its own entry";
    EXPECT_EQ(entries_of_kind(dir, "cpu-obj").size(), 3u);
    fs::remove_all(dir);
}

// The stale-code case: an entry written by a compiler whose code generator differed (another
// build identity) is not served by this build, which compiles with its own code generator.
TEST(CompileCacheStandalone, AnotherCompilerBuildsEntryIsNotServed) {
    fs::path dir = fresh_dir("other-build");
    DiskCache disk(dir, uint64_t(1) << 30);
    auto k = make_add("standalone_other_build", 1.0f);
    auto level_of_fresh_process = [&] { return level_in_a_new_process(disk, k); };
    {
        OtherCompilerBuild old_build(std::string(64, 'a'));
        EXPECT_EQ(level_of_fresh_process(), "compiled");
        EXPECT_EQ(level_of_fresh_process(), "disk");
    }
    EXPECT_EQ(level_of_fresh_process(), "compiled") << "an object of another compiler build was served";
    EXPECT_EQ(level_of_fresh_process(), "disk");
    fs::remove_all(dir);
}

TEST(CompileCacheStandalone, SeveralProcessesCompileOneKernelIntoOneDirectory) {
    fs::path dir = fresh_dir("fork");
    auto k = make_add("standalone_fork", 5.0f);
    constexpr int n = 4;
    std::vector<pid_t> pids;
    for (int i = 0; i < n; ++i) {
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int rc = 1;
            try {
                DiskCache disk(dir, uint64_t(1) << 30);
                CompileCache cache;
                cache.set_disk_for_testing(&disk);
                auto r = cache.get(*k.info(), TargetSpec::host());
                rc = r && !r->binary.empty() ? 0 : 2;
            } catch (...) {
                rc = 3;
            }
            ::_exit(rc);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status));
        EXPECT_EQ(WEXITSTATUS(status), 0);
    }
    std::vector<fs::path> entries = entries_of_kind(dir, "cpu-obj");
    ASSERT_EQ(entries.size(), 1u);
    for (const auto &e : fs::directory_iterator(dir))
        EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    // The entry is whole: a fresh cache loads it without compiling.
    DiskCache disk(dir, uint64_t(1) << 30);
    CompileCache cache;
    cache.set_disk_for_testing(&disk);
    cache.get(*k.info(), TargetSpec::host());
    EXPECT_EQ(cache.compiles(), 0u);
    EXPECT_EQ(cache.disk_hits(), 1u);
    fs::remove_all(dir);
}

TEST(CompileCacheStandalone, LogLinesSayHitMissLevelAndWhatChanged) {
    CompileCache cache;
    cache.set_disk_for_testing(nullptr);
    auto k = make_add("standalone_log", 1.0f);
    set_log_topics("cache");
    ::testing::internal::CaptureStderr();
    cache.get(*k.info(), TargetSpec::host());
    cache.get(*k.info(), TargetSpec::host());
    CompileOptions o1;
    o1.opt_level = 1;
    cache.get(*k.info(), TargetSpec::host(), o1);
    auto k2 = make_add("standalone_log", 2.0f);
    cache.get(*k2.info(), TargetSpec::host(), o1);
    std::string err = ::testing::internal::GetCapturedStderr();
    set_log_topics("");
    const std::string target = TargetSpec::host().to_string();
    CacheKey key = detail::make_cache_key(k.info()->ir, TargetSpec::host(), {});
    EXPECT_NE(err.find("ember[cache]: cache miss kernel=standalone_log target=" + target + " key=" +
                       key.short_digest() + " level=compiled\n"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("ember[cache]: cache hit kernel=standalone_log target=" + target + " key=" +
                       key.short_digest() + " level=memory\n"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("level=compiled changed: options\n"), std::string::npos) << err;
    EXPECT_NE(err.find("level=compiled changed: IR\n"), std::string::npos) << err;
}

TEST(CompileCacheStandalone, WarnsOnceAboutKernelsDifferingOnlyInConstants) {
    CompileCache cache;
    cache.set_disk_for_testing(nullptr);
    const std::string needle = "differs only in numeric constants";
    ::testing::internal::CaptureStderr();
    for (int i = 0; i < detail::kConstantsWarnAfter - 1; ++i)
        cache.get(*make_add("standalone_consts", 10.0f + float(i)).info(), TargetSpec::host(), {});
    std::string before = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(before.find(needle), std::string::npos) << before;
    ::testing::internal::CaptureStderr();
    for (int i = detail::kConstantsWarnAfter - 1; i < detail::kConstantsWarnAfter + 2; ++i)
        cache.get(*make_add("standalone_consts", 10.0f + float(i)).info(), TargetSpec::host(), {});
    std::string after = ::testing::internal::GetCapturedStderr();
    size_t at = after.find(needle);
    ASSERT_NE(at, std::string::npos) << after;
    EXPECT_NE(after.find("standalone_consts"), std::string::npos) << after;
    EXPECT_NE(after.find("kernel arguments"), std::string::npos) << after;
    EXPECT_EQ(after.find(needle, at + 1), std::string::npos) << "warned twice: " << after;
}

class CompileCacheTest : public ember::testing::DeviceTest {
protected:
    void SetUp() override {
        DeviceTest::SetUp();
        if (IsSkipped()) return;
        dir_ = fresh_dir("ctx-" + GetParam());
        disk_ = std::make_unique<DiskCache>(dir_, uint64_t(1) << 30);
        CompileCache::instance().set_disk_for_testing(disk_.get());
    }
    void TearDown() override {
        CompileCache::instance().reset_disk_to_default();
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    fs::path dir_;
    std::unique_ptr<DiskCache> disk_;
};

TEST_P(CompileCacheTest, MemoryThenDiskHitsRunTheRightKernel) {
    CompileCache &cache = CompileCache::instance();
    auto k = make_add(("ctx_levels_" + GetParam()).c_str(), 2.0f);
    uint64_t compiles = cache.compiles(), disk_hits = cache.disk_hits(), memory_hits = cache.memory_hits();
    auto f1 = ctx().compile_function(k);
    EXPECT_EQ(cache.compiles(), compiles + 1);
    EXPECT_EQ(f1.report().cache_level, "compiled");
    EXPECT_GT(f1.compile_seconds(), 0.0);
    expect_all(run_add(ctx(), f1), 3.0f);
    EXPECT_EQ(entries_of_kind(dir_, kind_for(GetParam())).size(), 1u);

    const bool cuda = GetParam() == "cuda";
    if (cuda) {
        EXPECT_EQ(entries_of_kind(dir_, "cubin").size(), 1u);
    }

    // A new function of the same kernel: a memory hit, of the cubin on CUDA (no PTX JIT).
    auto f2 = ctx().compile_function(k);
    EXPECT_EQ(cache.compiles(), compiles + 1);
    EXPECT_EQ(cache.memory_hits(), memory_hits + 1);
    EXPECT_EQ(cache.disk_hits(), disk_hits);
    // The report says where the code came from, and nothing was compiled for it.
    EXPECT_EQ(f2.report().cache_level, cuda ? "memory-cubin" : "memory");
    EXPECT_EQ(f2.compile_seconds(), 0.0);
    expect_all(run_add(ctx(), f2), 3.0f);

    cache.clear_memory();
    DeviceContext other(0, GetParam());
    auto f3 = other.compile_function(k); // disk hit: no LLVM (and on CUDA, no PTX: the cubin)
    EXPECT_EQ(cache.compiles(), compiles + 1);
    EXPECT_EQ(cache.disk_hits(), disk_hits + 1);
    EXPECT_EQ(f3.report().cache_level, cuda ? "disk-cubin" : "disk");
    EXPECT_EQ(f3.compile_seconds(), 0.0);
    expect_all(run_add(other, f3), 3.0f);

    // Corrupt entries (on CUDA the cubin and the PTX): a warning each, a recompile, the right result.
    std::vector<fs::path> corrupt = entries_of_kind(dir_, kind_for(GetParam()));
    if (cuda) corrupt.push_back(entries_of_kind(dir_, "cubin").at(0));
    for (const fs::path &entry : corrupt) {
        std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(fs::file_size(entry) - 1));
        f.put('\x5a');
    }
    cache.clear_memory();
    ::testing::internal::CaptureStderr();
    auto f4 = ctx().compile_function(k);
    std::string err = ::testing::internal::GetCapturedStderr();
    for (const fs::path &entry : corrupt)
        EXPECT_NE(err.find(entry.filename().string() + ": payload checksum mismatch; recompiling"), std::string::npos)
            << err;
    EXPECT_EQ(cache.compiles(), compiles + 2);
    EXPECT_EQ(f4.report().cache_level, "compiled");
    expect_all(run_add(ctx(), f4), 3.0f);
}

TEST_P(CompileCacheTest, AWarmCudaStartLoadsTheCubinWithoutThePtx) {
    if (GetParam() != "cuda") GTEST_SKIP() << "device images (cubins) are CUDA's";
    CompileCache &cache = CompileCache::instance();
    // A name of this process's own, so that the driver's JIT cache has not seen the PTX and ptxas
    // really runs in the link (its log gives the spills).
    const std::string name = "ctx_cubin_only_" + std::to_string(::getpid());
    auto k = make_add(name.c_str(), 4.0f);
    auto f1 = ctx().compile_function(k);
    ASSERT_EQ(entries_of_kind(dir_, "ptx").size(), 1u);
    ASSERT_EQ(entries_of_kind(dir_, "cubin").size(), 1u);
    // The cold compile linked the cubin with a verbose log: the report has ptxas's figures.
    EXPECT_EQ(f1.report().cache_level, "compiled");
    EXPECT_GE(f1.report().spill_store_bytes, 0);
    EXPECT_GT(f1.report().registers, 0);

    // No PTX on disk and none in memory: a new context still loads the kernel, from the cubin.
    fs::remove(entries_of_kind(dir_, "ptx").at(0));
    cache.clear_memory();
    uint64_t compiles = cache.compiles(), disk_hits = cache.disk_hits();
    set_log_topics("cache");
    ::testing::internal::CaptureStderr();
    DeviceContext other(0, "cuda");
    auto f2 = other.compile_function(k);
    const std::string err = without_versions_line(::testing::internal::GetCapturedStderr());
    set_log_topics("");
    EXPECT_EQ(cache.compiles(), compiles);
    EXPECT_EQ(cache.disk_hits(), disk_hits + 1);
    EXPECT_EQ(f2.report().cache_level, "disk-cubin");
    EXPECT_GT(f2.report().registers, 0);
    const CacheKey key = detail::make_cache_key(k.info()->ir, TargetSpec::parse(other.target()), {});
    // One lookup, one line, with the artefact's key (as the cold run's miss line has).
    EXPECT_EQ(err, "ember[cache]: cache hit kernel=" + name + " target=" + key.target + " key=" +
                       key.short_digest() + " level=disk-cubin\n");
    expect_all(run_add(other, f2), 5.0f);
    EXPECT_TRUE(entries_of_kind(dir_, "ptx").empty()) << "the warm start read or wrote PTX";

    // Asking for the PTX (assembly) gets it from the compile cache: compiled again here.
    std::string ptx = f2.assembly();
    EXPECT_NE(ptx.find(".entry " + name), std::string::npos) << ptx;
    EXPECT_EQ(cache.compiles(), compiles + 1);
}

TEST_P(CompileCacheTest, CreatingAContextLooksNothingUpAndWritesNothing) {
    // A CUDA context warms the trace and hash code on a helper thread ([Note] Warm start): pure
    // computation, so no lookup is counted or logged and the cache directory stays empty.
    CompileCache &cache = CompileCache::instance();
    const uint64_t before = cache.compiles() + cache.memory_hits() + cache.disk_hits();
    set_log_topics("all");
    ::testing::internal::CaptureStderr();
    { DeviceContext another(0, GetParam()); }
    std::string err = ::testing::internal::GetCapturedStderr();
    set_log_topics("");
    // The one line is the device log's; no cache or compile line.
    EXPECT_EQ(err.rfind("ember[device]: DeviceContext " + GetParam() + ":0: ", 0), 0u) << err;
    EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
    EXPECT_EQ(cache.compiles() + cache.memory_hits() + cache.disk_hits(), before);
    EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_P(CompileCacheTest, WithoutADiskCacheTheMemoryLevelKeepsCubinsToo) {
    CompileCache &cache = CompileCache::instance();
    cache.set_disk_for_testing(nullptr);
    auto k = make_add(("ctx_no_disk_" + GetParam()).c_str(), 6.0f);
    uint64_t compiles = cache.compiles();
    auto f1 = ctx().compile_function(k);
    DeviceContext other(0, GetParam());
    auto f2 = other.compile_function(k);
    EXPECT_EQ(cache.compiles(), compiles + 1);
    // The second context loads the first one's cubin (CUDA) or object (CPU): no JIT, no LLVM.
    EXPECT_EQ(f2.report().cache_level, GetParam() == "cuda" ? "memory-cubin" : "memory");
    expect_all(run_add(ctx(), f1), 7.0f);
    expect_all(run_add(other, f2), 7.0f);
}

TEST_P(CompileCacheTest, EnqueueKernelAcrossContextsUsesEachContextsFunction) {
    auto k = make_add(("ctx_slot_" + GetParam()).c_str(), 1.0f);
    expect_all(run_add(ctx(), k), 2.0f);
    auto other = std::make_unique<DeviceContext>(0, GetParam());
    // Alternate: the launch slot follows the context.
    for (int round = 0; round < 3; ++round) {
        expect_all(run_add(*other, k), 2.0f);
        expect_all(run_add(ctx(), k), 2.0f);
    }
    // A context destroyed, a new one (maybe at the same address): still its own function.
    expect_all(run_add(*other, k), 2.0f);
    other.reset();
    DeviceContext third(0, GetParam());
    expect_all(run_add(third, k), 2.0f);
    // And a stream of a context.
    DeviceStream s = third.create_stream();
    constexpr int64_t n = 64;
    auto dev = third.enqueue_create_buffer<float>(n);
    auto host = third.enqueue_create_host_buffer<float>(n);
    third.synchronize();
    for (int64_t i = 0; i < n; ++i) host[i] = 0.0f;
    third.enqueue_copy(dev, host);
    third.synchronize();
    s.enqueue_function(k, dev, n, grid_dim(1), block_dim(n));
    s.synchronize();
    third.enqueue_copy(host, dev);
    third.synchronize();
    expect_all(std::vector<float>(host.begin(), host.end()), 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Apis, CompileCacheTest, ember::testing::all_apis(), ember::testing::api_name);
