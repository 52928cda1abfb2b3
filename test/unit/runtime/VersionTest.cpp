/// \file
/// include/ember/Version.h, the one place ember's version is written: the macros, the constants
/// and the version the libraries report (ember_version(), which ember-compile --version and every
/// compile-cache key use) agree, and the umbrella header brings them.
#include "ember/ember.h"

#include "ember/compiler/CacheSupport.h"

#include <gtest/gtest.h>

#include <string>

TEST(VersionTest, MacrosConstantsAndLibraryAgree) {
    const std::string numbers = std::to_string(EMBER_VERSION_MAJOR) + "." +
                                std::to_string(EMBER_VERSION_MINOR) + "." +
                                std::to_string(EMBER_VERSION_PATCH);
    EXPECT_EQ(std::string(EMBER_VERSION_STRING), numbers);
    EXPECT_EQ(std::string(ember::version_string), numbers);
    EXPECT_EQ(ember::version_major, EMBER_VERSION_MAJOR);
    EXPECT_EQ(ember::version_minor, EMBER_VERSION_MINOR);
    EXPECT_EQ(ember::version_patch, EMBER_VERSION_PATCH);
    EXPECT_EQ(EMBER_VERSION,
              EMBER_VERSION_MAJOR * 10000 + EMBER_VERSION_MINOR * 100 + EMBER_VERSION_PATCH);
    // This program and the libraries it loaded are one build.
    EXPECT_EQ(ember::ember_version(), numbers);
}

// The ordering number keeps its promise: the minor and patch numbers stay below 100.
static_assert(EMBER_VERSION_MINOR < 100 && EMBER_VERSION_PATCH < 100);
