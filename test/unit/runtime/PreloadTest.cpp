/// \file
/// The preload list ([Note] Preload in runtime/lib/Preload.h): its text round-trips and foreign or
/// malformed text is refused; a plan skips images that are gone; and, on a CUDA device, in fresh
/// processes (this binary running PreloadTestChild.ProcessSide): a second run takes its kernels
/// preloaded, EMBER_PRELOAD=0 turns that off, another order and new kernels still work, a
/// context destroyed while its helper preloads is safe, and a corrupt list or cubin is a warning
/// and the run goes on with correct results.
#include "ember/ember.h"

#include "DiskCache.h"
#include "Preload.h"
#include "SelfProcess.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ember;
using ember::detail::DiskCache;
using ember::detail::PreloadItem;
namespace fs = std::filesystem;

namespace {

std::string digest_of(char c) { return std::string(64, c); }

TEST(PreloadList, ItsTextRoundTrips) {
    std::vector<PreloadItem> items = {{digest_of('a'), "sm_90", "13000", "scalar_add"},
                                      {digest_of('0'), "sm_80", "12040", "k_2"}};
    std::string text = detail::format_preload_list(items);
    EXPECT_EQ(text, "ember-preload 1\n" + digest_of('a') + " sm_90 13000 scalar_add\n" + digest_of('0') +
                        " sm_80 12040 k_2\n");
    auto parsed = detail::parse_preload_list(text);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, items);
    auto empty = detail::parse_preload_list("ember-preload 1\n");
    ASSERT_TRUE(empty.has_value());
    EXPECT_TRUE(empty->empty());
}

TEST(PreloadList, ForeignOrMalformedTextIsRefused) {
    const std::string good = digest_of('b') + " sm_90 13000 k\n";
    EXPECT_TRUE(detail::parse_preload_list("ember-preload 1\n" + good).has_value());
    for (const std::string &bad : {
             "ember-preload 2\n" + good,                         // another format
             "ember-preload 1\n" + good.substr(0, good.size() - 1), // no final newline
             "ember-preload 1\n" + digest_of('g') + " sm_90 13000 k\n", // not hex
             "ember-preload 1\n" + digest_of('b').substr(1) + " sm_90 13000 k\n", // 63 digits
             "ember-preload 1\n" + digest_of('b') + " sm_90 13000\n",    // a field missing
             "ember-preload 1\n" + digest_of('b') + " sm_90 13000 k j\n", // a space in the symbol
             "ember-preload 1\n" + digest_of('b') + " sm_90  k\n",        // an empty field
             "ember-preload 1\n" + digest_of('b') + " sm_90 13000 k\x01\n", // a control character
             std::string("garbage"), std::string()}) {
        EXPECT_FALSE(detail::parse_preload_list(bad).has_value()) << bad;
    }
}

TEST(PreloadList, KeepsAtMostTheLimit) {
    std::vector<PreloadItem> items(detail::kMaxPreload + 5, PreloadItem{digest_of('c'), "sm_90", "13000", "k"});
    auto parsed = detail::parse_preload_list(detail::format_preload_list(items));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->size(), detail::kMaxPreload);
    // A list longer than the limit was not written by ember.
    std::string text = detail::format_preload_list(items);
    text += digest_of('c') + " sm_90 13000 k\n";
    EXPECT_FALSE(detail::parse_preload_list(text).has_value());
}

TEST(PreloadList, APlanSkipsImagesThatAreGone) {
    fs::path dir = fs::temp_directory_path() / ("ember-preload-plan-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    DiskCache disk(dir, DiskCache::kDefaultMaxBytes);
    EXPECT_TRUE(detail::read_preload_plan(disk, "cubin").items.empty()); // no list yet
    disk.store(digest_of('d'), "cubin", "the cubin's bytes");
    detail::write_preload_list(disk, {{digest_of('d'), "sm_90", "13000", "a"}, {digest_of('e'), "sm_90", "13000", "b"}});
    detail::PreloadPlan plan = detail::read_preload_plan(disk, "cubin");
    ASSERT_EQ(plan.items.size(), 2u);
    ASSERT_EQ(plan.bytes.size(), 2u);
    EXPECT_EQ(plan.disk, &disk);
    ASSERT_TRUE(plan.bytes[0]);
    EXPECT_EQ(*plan.bytes[0], "the cubin's bytes");
    EXPECT_FALSE(plan.bytes[1]); // gone (evicted): skipped
    fs::remove_all(dir);
}

TEST(PreloadList, TheKnobTurnsItOff) {
    const char *saved = std::getenv("EMBER_PRELOAD");
    std::string keep = saved ? saved : "";
    for (const char *off : {"0", "false", "off", "no"}) {
        ::setenv("EMBER_PRELOAD", off, 1);
        EXPECT_FALSE(detail::preload_enabled()) << off;
    }
    ::setenv("EMBER_PRELOAD", "1", 1);
    EXPECT_TRUE(detail::preload_enabled());
    ::unsetenv("EMBER_PRELOAD");
    EXPECT_TRUE(detail::preload_enabled());
    if (saved) ::setenv("EMBER_PRELOAD", keep.c_str(), 1);
}

// ---------------------------------------------------------------------------------------------
// Fresh processes on a CUDA device.

constexpr const char *kModeVar = "EMBER_TEST_PRELOAD_CHILD";

auto make_scale(int i) {
    return kernel("preload_scale_" + std::to_string(i), {"v", "n"}, [i](Ptr<float> v, Int n) {
        auto idx = global_idx.x;
        if_(idx < n, [&] { v[idx] = v[idx] * float(i + 2) + 1.0f; });
    });
}

/// Compiles kernel `i` on `ctx`, runs it over 64 ones and checks every element.
void compile_and_check(DeviceContext &ctx, int i) {
    constexpr int n = 64;
    auto k = make_scale(i);
    auto buf = ctx.enqueue_create_buffer<float>(n);
    auto host = ctx.enqueue_create_host_buffer<float>(n);
    ctx.synchronize();
    for (int j = 0; j < n; ++j) host[j] = 1.0f;
    ctx.enqueue_copy(buf, host);
    ctx.enqueue_function(k, buf, n, grid_dim(1), block_dim(n));
    ctx.enqueue_copy(host, buf);
    ctx.synchronize();
    for (int j = 0; j < n; ++j) ASSERT_EQ(host[j], float(i + 2) + 1.0f) << "kernel " << i << " element " << j;
}

using ember::testing::ChildResult;

/// Runs this binary with only PreloadTestChild.ProcessSide, in `mode`, with the cache in `dir`,
/// EMBER_LOG=cache and `extra` ("NAME=value") in the environment.
ChildResult run_child(const std::string &mode, const fs::path &dir, const std::string &extra = "") {
    std::vector<std::string> add = {std::string(kModeVar) + "=" + mode,
                                    "EMBER_CACHE_DIR=" + dir.string(), "EMBER_LOG=cache"};
    if (!extra.empty()) add.push_back(extra);
    return ember::testing::run_self(
        "PreloadTestChild.ProcessSide",
        {kModeVar, "EMBER_CACHE_DIR=", "EMBER_LOG=", "EMBER_PRELOAD=", "EMBER_API="}, add,
        dir.parent_path() / (dir.filename().string() + ".stderr"));
}

/// The EMBER_LOG=cache line of kernel `i` in `err` ("" if none).
std::string cache_line(const std::string &err, int i) {
    std::istringstream lines(err);
    const std::string name = "kernel=preload_scale_" + std::to_string(i) + " ";
    for (std::string line; std::getline(lines, line);)
        if (line.find("ember[cache]: cache ") != std::string::npos && line.find(name) != std::string::npos)
            return line;
    return "";
}

bool ends_with(const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The child's side: skips unless a PreloadTest started it. Modes: "forward" compiles and runs
/// kernels 0, 1, 2; "reverse" kernels 2, 1, 0, then a new one, 3; "none" makes a context and
/// destroys it at once (while its helper may still preload).
TEST(PreloadTestChild, ProcessSide) {
    const char *mode = std::getenv(kModeVar);
    if (!mode) GTEST_SKIP() << "the child side of the PreloadTest cases; runs only when one of them starts it";
    DeviceContext ctx(0, "cuda");
    std::string m = mode;
    if (m == "forward") {
        for (int i : {0, 1, 2}) compile_and_check(ctx, i);
    } else if (m == "reverse") {
        for (int i : {2, 1, 0, 3}) compile_and_check(ctx, i);
    } else {
        ASSERT_EQ(m, "none");
    }
}

class PreloadTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (DeviceContext::number_of_devices("cuda") == 0) GTEST_SKIP() << "no CUDA device";
        dir_ = fs::temp_directory_path() / ("ember-preload-test-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    /// The files of the program list in the cache (one after a run that compiled).
    std::vector<fs::path> lists() const {
        std::vector<fs::path> out;
        if (fs::exists(dir_))
            for (const auto &e : fs::directory_iterator(dir_))
                if (e.path().extension() == ".preload") out.push_back(e.path());
        return out;
    }
    fs::path dir_;
};

TEST_F(PreloadTest, ASecondRunTakesTheFirstRunsKernelsPreloaded) {
    ChildResult first = run_child("forward", dir_);
    ASSERT_EQ(first.status, 0) << first.err;
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(first.err, i), "level=compiled")) << first.err;
    EXPECT_EQ(lists().size(), 1u);

    ChildResult second = run_child("forward", dir_);
    ASSERT_EQ(second.status, 0) << second.err;
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(second.err, i), "level=disk-cubin preloaded")) << second.err;

    ChildResult off = run_child("forward", dir_, "EMBER_PRELOAD=0");
    ASSERT_EQ(off.status, 0) << off.err;
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(off.err, i), "level=disk-cubin")) << off.err;
}

TEST_F(PreloadTest, AnotherOrderAndANewKernelStillWork) {
    ASSERT_EQ(run_child("forward", dir_).status, 0);
    ChildResult reverse = run_child("reverse", dir_);
    ASSERT_EQ(reverse.status, 0) << reverse.err;
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(reverse.err, i), "level=disk-cubin preloaded")) << reverse.err;
    EXPECT_TRUE(ends_with(cache_line(reverse.err, 3), "level=compiled")) << reverse.err;
    // The list now holds the four kernels in the order of that run.
    ChildResult again = run_child("reverse", dir_);
    ASSERT_EQ(again.status, 0) << again.err;
    for (int i : {0, 1, 2, 3}) EXPECT_TRUE(ends_with(cache_line(again.err, i), "level=disk-cubin preloaded")) << again.err;
}

TEST_F(PreloadTest, AContextDestroyedWhileItsHelperPreloadsIsSafe) {
    ASSERT_EQ(run_child("reverse", dir_).status, 0);
    auto list = lists();
    ASSERT_EQ(list.size(), 1u);
    auto written = fs::last_write_time(list[0]);
    for (int run = 0; run < 3; ++run) {
        ChildResult none = run_child("none", dir_);
        EXPECT_EQ(none.status, 0) << none.err;
        EXPECT_EQ(none.err.find("ember[cache]"), std::string::npos) << none.err; // no lookup
    }
    // A run that used no kernel keeps the program's list.
    ASSERT_EQ(lists().size(), 1u);
    EXPECT_EQ(fs::last_write_time(lists()[0]), written);
}

TEST_F(PreloadTest, ACorruptListOrCubinIsAWarningAndTheRunGoesOn) {
    ASSERT_EQ(run_child("forward", dir_).status, 0);
    auto list = lists();
    ASSERT_EQ(list.size(), 1u);
    {
        // Flip the last byte of the list: its checksum no longer matches.
        std::fstream f(list[0], std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(-1, std::ios::end);
        char c = 0;
        f.get(c);
        f.seekp(-1, std::ios::end);
        f.put(char(c ^ 0x5a));
    }
    ChildResult corrupt = run_child("forward", dir_);
    ASSERT_EQ(corrupt.status, 0) << corrupt.err;
    EXPECT_NE(corrupt.err.find(list[0].filename().string()), std::string::npos) << corrupt.err; // the warning names it
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(corrupt.err, i), "level=disk-cubin")) << corrupt.err;
    // The run wrote the list again: the next one preloads.
    ChildResult next = run_child("forward", dir_);
    ASSERT_EQ(next.status, 0) << next.err;
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(next.err, i), "level=disk-cubin preloaded")) << next.err;

    // Now truncate every cubin: each is a warning and a miss; the kernels come from the PTX.
    for (const auto &e : fs::directory_iterator(dir_))
        if (e.path().extension() == ".cubin") fs::resize_file(e.path(), 30);
    ChildResult truncated = run_child("forward", dir_);
    ASSERT_EQ(truncated.status, 0) << truncated.err;
    for (int i : {0, 1, 2}) EXPECT_TRUE(ends_with(cache_line(truncated.err, i), "level=disk")) << truncated.err;
}

} // namespace
