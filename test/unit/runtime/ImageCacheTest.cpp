/// The image cache's policy ([Note] Image cache in ImageCache.h) over a fake back end, on any
/// machine: images linked once and kept in the compile cache's memory and disk levels, the
/// preload (only this device's and driver's images, taken once, waited for, loaded on the spot
/// when the preload has not reached them, failures left to the usual path) and the program's
/// list (stored when it changed, not when it did not, not for a cache it was not read from).
/// The CUDA tests (PreloadTest, the cubin levels of CompileCacheTest) run it over the driver.
#include "CompileCache.h"
#include "DiskCache.h"
#include "ImageCache.h"
#include "Preload.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

using namespace ember;
using detail::CacheKey;
using detail::CompileCache;
using detail::DiskCache;
using detail::ImageCache;
using detail::LoadedFunction;
using detail::PreloadItem;
using detail::PreloadPlan;
namespace fs = std::filesystem;

/// A "module": the image's bytes and the symbol found in it.
struct FakeFunction final : LoadedFunction {
    std::string bytes, symbol;
};

/// Images are "image:" + the artefact; an image whose bytes say "refused" is refused;
/// a symbol that is not in the image is missing (an error naming the kernel, or null for the
/// preload).
class FakeHooks final : public detail::ImageHooks {
public:
    std::string_view image_kind() const override { return "fakeimg"; }
    std::string image_arch() const override { return "fake_90"; }
    std::string image_driver() const override { return "777"; }
    std::optional<std::string> link_image(const CompiledKernel &k, std::string &info_log) override {
        ++links;
        if (k.binary.rfind("unlinkable", 0) == 0) return std::nullopt;
        info_log = "linked " + k.kernel_name;
        return "image:" + k.binary;
    }
    std::unique_ptr<LoadedFunction> load_image_bytes(const std::string &bytes, const std::string &symbol,
                                                     const CompiledKernel *k) override {
        {
            std::lock_guard<std::mutex> lock(mutex);
            ++loads[bytes];
        }
        if (bytes.find("refused") != std::string::npos) return nullptr;
        if (bytes.find(symbol) == std::string::npos) {
            if (!k) return nullptr;
            throw std::runtime_error("the image of kernel '" + k->kernel_name + "' has no entry point '" + symbol + "'");
        }
        auto fn = std::make_unique<FakeFunction>();
        fn->bytes = bytes;
        fn->symbol = symbol;
        return fn;
    }
    int loads_of(const std::string &bytes) {
        std::lock_guard<std::mutex> lock(mutex);
        return loads[bytes];
    }

    std::atomic<int> links{0};
    std::mutex mutex;
    std::map<std::string, int> loads;
};

CompiledKernel kernel_named(const std::string &name, const std::string &artefact) {
    CompiledKernel k;
    k.kernel_name = k.entry_symbol = name;
    k.binary = artefact;
    return k;
}

/// The artefact key of a kernel whose IR hash is `ir`.
CacheKey key_of(const std::string &ir) { return artefact_key(ir, TargetSpec::parse("cpu"), CompileOptions{}); }

const FakeFunction &fake(const std::unique_ptr<LoadedFunction> &fn) { return dynamic_cast<const FakeFunction &>(*fn); }

class ImageCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("ember-image-cache-test-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        disk_ = std::make_unique<DiskCache>(dir_, DiskCache::kDefaultMaxBytes);
        CompileCache::instance().set_disk_for_testing(disk_.get());
        CompileCache::instance().clear_memory();
    }
    void TearDown() override {
        CompileCache::instance().reset_disk_to_default();
        CompileCache::instance().clear_memory();
        fs::remove_all(dir_);
    }
    /// A plan of `items` whose images (by digest) are `bytes`, as read from this test's disk.
    PreloadPlan plan_of(std::vector<PreloadItem> items, std::vector<std::string> bytes) {
        PreloadPlan plan;
        plan.disk = disk_.get();
        plan.items = std::move(items);
        for (const std::string &b : bytes) plan.bytes.push_back(std::make_shared<const std::string>(b));
        return plan;
    }
    /// The list this program stored, or empty.
    std::vector<PreloadItem> stored_list() { return detail::read_preload_plan(*disk_, "fakeimg").items; }

    fs::path dir_;
    std::unique_ptr<DiskCache> disk_;
    FakeHooks hooks_;
};

TEST_F(ImageCacheTest, AnImageIsLinkedOnceThenLoadedFromMemoryThenFromDisk) {
    ImageCache images(hooks_);
    const CompiledKernel k = kernel_named("scale", "artefact of scale");
    const CacheKey base = key_of("ir-of-scale");
    const char *level = "none";
    EXPECT_EQ(images.load(base, k, &level), nullptr); // nothing cached yet
    EXPECT_STREQ(level, "none");                        // a miss sets no level

    std::unique_ptr<LoadedFunction> linked = images.link_and_load(k, base);
    ASSERT_NE(linked, nullptr);
    EXPECT_EQ(fake(linked).bytes, "image:artefact of scale");
    EXPECT_EQ(linked->jit_info_log, "linked scale");
    EXPECT_GT(linked->load_seconds, 0.0);
    EXPECT_EQ(hooks_.links.load(), 1);

    std::unique_ptr<LoadedFunction> again = images.load(base, k, &level);
    ASSERT_NE(again, nullptr);
    EXPECT_STREQ(level, "memory-fakeimg");
    EXPECT_EQ(fake(again).symbol, "scale");

    CompileCache::instance().clear_memory();
    std::unique_ptr<LoadedFunction> from_disk = images.load(base, k, &level);
    ASSERT_NE(from_disk, nullptr);
    EXPECT_STREQ(level, "disk-fakeimg");
    EXPECT_EQ(hooks_.links.load(), 1); // never linked again

    // The image is the artefact's on this device: its key adds the driver and the arch.
    const CacheKey image = images.image_key_of(base);
    EXPECT_EQ(image.driver, "777");
    EXPECT_EQ(image.arch, "fake_90");
    EXPECT_TRUE(disk_->load(image.digest, "fakeimg").has_value());
    EXPECT_FALSE(disk_->load(base.digest, "fakeimg").has_value());
}

TEST_F(ImageCacheTest, AFailedLinkOrLoadLeavesTheKernelToTheBackEnd) {
    ImageCache images(hooks_);
    const char *level = "none";
    // No image: nothing kept, the lookup misses, the back end loads the artefact.
    EXPECT_EQ(images.link_and_load(kernel_named("k", "unlinkable artefact"), key_of("a")), nullptr);
    EXPECT_EQ(images.load(key_of("a"), kernel_named("k", ""), &level), nullptr);
    // An image the driver refuses is neither returned nor kept.
    EXPECT_EQ(images.link_and_load(kernel_named("k", "refused k"), key_of("b")), nullptr);
    EXPECT_EQ(images.load(key_of("b"), kernel_named("k", ""), &level), nullptr);
    EXPECT_STREQ(level, "none");
    // A missing entry point is an error naming the kernel, not a silent miss.
    try {
        images.link_and_load(kernel_named("other", "no such symbol"), key_of("d"));
        FAIL() << "a missing entry point loaded";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("kernel 'other'"), std::string::npos) << e.what();
    }
}

TEST_F(ImageCacheTest, ThePreloadTakesOnlyThisDevicesImagesOnce) {
    const CacheKey a = key_of("ir-a"), b = key_of("ir-b"), other = key_of("ir-other");
    ImageCache images(hooks_);
    const std::string a_digest = images.image_key_of(a).digest, b_digest = images.image_key_of(b).digest;
    const std::string other_digest = images.image_key_of(other).digest;
    images.set_preload(plan_of({{a_digest, "fake_90", "777", "ka"},
                                {b_digest, "fake_90", "777", "kb"},
                                {other_digest, "fake_80", "777", "ko"},   // another device
                                {other_digest, "fake_90", "776", "ko"}},  // another driver
                               {"image of ka", "image of kb", "image of ko", "image of ko"}));
    images.run_preload();
    EXPECT_EQ(hooks_.loads_of("image of ka"), 1);
    EXPECT_EQ(hooks_.loads_of("image of kb"), 1);
    EXPECT_EQ(hooks_.loads_of("image of ko"), 0); // neither of the others was loaded

    const char *level = "none";
    std::unique_ptr<LoadedFunction> fa = images.load(a, kernel_named("ka", ""), &level);
    ASSERT_NE(fa, nullptr);
    EXPECT_STREQ(level, "disk-fakeimg"); // logged as "level=disk-fakeimg preloaded"
    EXPECT_EQ(fake(fa).bytes, "image of ka");
    EXPECT_EQ(hooks_.loads_of("image of ka"), 1); // the preloaded function itself

    // Taken once: the next lookup of the same image is the memory level's (the preloaded bytes
    // were kept there).
    std::unique_ptr<LoadedFunction> fa2 = images.load(a, kernel_named("ka", ""), &level);
    ASSERT_NE(fa2, nullptr);
    EXPECT_STREQ(level, "memory-fakeimg");
    EXPECT_EQ(hooks_.loads_of("image of ka"), 2);

    // A kernel whose symbol differs from the list's does not take the preloaded image.
    EXPECT_EQ(images.load(b, kernel_named("not-kb", ""), &level), nullptr);
    images.stop();
    images.finish();
}

TEST_F(ImageCacheTest, AnImageThePreloadHasNotReachedIsLoadedOnTheSpot) {
    const CacheKey a = key_of("ir-a"), refused = key_of("ir-refused");
    ImageCache images(hooks_);
    images.set_preload(plan_of({{images.image_key_of(a).digest, "fake_90", "777", "ka"},
                                {images.image_key_of(refused).digest, "fake_90", "777", "kr"}},
                               {"image of ka", "refused image of kr"}));
    // no run_preload: the user's thread gets there first
    const char *level = "none";
    std::unique_ptr<LoadedFunction> fa = images.load(a, kernel_named("ka", ""), &level);
    ASSERT_NE(fa, nullptr);
    EXPECT_STREQ(level, "disk-fakeimg"); // logged as "level=disk-fakeimg preloaded"
    // A preloaded image the driver refuses goes the usual way: not in the cache here, a miss.
    EXPECT_EQ(images.load(refused, kernel_named("kr", ""), &level), nullptr);
    // The preload that starts later skips what was taken and what failed.
    images.run_preload();
    EXPECT_EQ(hooks_.loads_of("image of ka"), 1);
    EXPECT_EQ(hooks_.loads_of("refused image of kr"), 1);
    images.finish();
}

TEST_F(ImageCacheTest, LookupsWaitForAPreloadInProgressAndStopEndsIt) {
    ImageCache images(hooks_);
    std::vector<PreloadItem> items;
    std::vector<std::string> bytes;
    for (int i = 0; i < 200; ++i) {
        items.push_back({images.image_key_of(key_of("ir-" + std::to_string(i))).digest, "fake_90", "777",
                         "k" + std::to_string(i)});
        bytes.push_back("image of k" + std::to_string(i));
    }
    images.set_preload(plan_of(items, bytes));
    std::thread helper([&] { images.run_preload(); });
    const char *level = "none";
    // Every kernel gets its function exactly once, whichever thread loaded it.
    for (int i = 0; i < 200; i += 7) {
        std::unique_ptr<LoadedFunction> fn =
            images.load(key_of("ir-" + std::to_string(i)), kernel_named("k" + std::to_string(i), ""), &level);
        ASSERT_NE(fn, nullptr) << i;
        EXPECT_STREQ(level, "disk-fakeimg"); // logged as "level=disk-fakeimg preloaded"
    }
    images.stop();
    helper.join();
    for (int i = 0; i < 200; ++i) EXPECT_LE(hooks_.loads_of("image of k" + std::to_string(i)), 1) << i;
    images.finish();
}

TEST_F(ImageCacheTest, TheProgramsListIsStoredWhenItChanged) {
    const CacheKey a = key_of("ir-a"), b = key_of("ir-b");
    {
        ImageCache images(hooks_);
        images.set_preload(plan_of({}, {})); // the program's first context, no list yet
        ASSERT_NE(images.link_and_load(kernel_named("kb", "artefact kb"), b), nullptr);
        ASSERT_NE(images.link_and_load(kernel_named("ka", "artefact ka"), a), nullptr);
        ASSERT_NE(images.link_and_load(kernel_named("kb", "artefact kb"), b), nullptr); // first use counts
        images.finish();
    }
    std::vector<PreloadItem> list = stored_list();
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].symbol, "kb"); // first-use order
    EXPECT_EQ(list[1].symbol, "ka");
    EXPECT_EQ(list[0].arch, "fake_90");
    EXPECT_EQ(list[0].driver, "777");

    // A second run that uses the same images in the same order leaves the list as it is.
    {
        ImageCache images(hooks_);
        images.set_preload(detail::read_preload_plan(*disk_, "fakeimg"));
        images.run_preload();
        const char *level = "none";
        ASSERT_NE(images.load(b, kernel_named("kb", ""), &level), nullptr);
        ASSERT_NE(images.load(a, kernel_named("ka", ""), &level), nullptr);
        images.finish();
    }
    EXPECT_EQ(stored_list(), list);
    // A run that uses fewer stores the new list.
    {
        ImageCache images(hooks_);
        images.set_preload(detail::read_preload_plan(*disk_, "fakeimg"));
        const char *level = "none";
        ASSERT_NE(images.load(a, kernel_named("ka", ""), &level), nullptr);
        EXPECT_STREQ(level, "disk-fakeimg"); // logged as "level=disk-fakeimg preloaded"
        images.finish();
    }
    list = stored_list();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].symbol, "ka");

    // Not the program's first context: nothing recorded, nothing stored.
    fs::remove_all(dir_);
    disk_ = std::make_unique<DiskCache>(dir_, DiskCache::kDefaultMaxBytes);
    CompileCache::instance().set_disk_for_testing(disk_.get());
    {
        ImageCache images(hooks_);
        ASSERT_NE(images.link_and_load(kernel_named("ka", "artefact ka"), a), nullptr);
        images.finish();
    }
    EXPECT_TRUE(stored_list().empty());

    // A list read from another disk cache is not written to this one.
    const fs::path other_dir = dir_.string() + "-elsewhere";
    DiskCache elsewhere(other_dir, DiskCache::kDefaultMaxBytes);
    {
        ImageCache images(hooks_);
        PreloadPlan plan;
        plan.disk = &elsewhere;
        images.set_preload(plan);
        ASSERT_NE(images.link_and_load(kernel_named("ka", "artefact ka"), a), nullptr);
        images.finish();
    }
    EXPECT_TRUE(stored_list().empty());
    fs::remove_all(other_dir);
}

} // namespace
