/// \file
/// ember's version: the one place it is written. CMake reads the three numbers from here (the
/// project's VERSION, emberConfigVersion.cmake, ember.pc), the compiler library reports it
/// (`ember_version()`, `ember-compile --version`) and puts it into every compile-cache key.
/// Until 1.0 a minor version may change the API and a patch version does not (CHANGELOG.md).
#ifndef EMBER_VERSION_H
#define EMBER_VERSION_H

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0

#define EMBER_VERSION_STRINGIFY_(x) #x
#define EMBER_VERSION_STRINGIFY(x) EMBER_VERSION_STRINGIFY_(x)
/// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
#define EMBER_VERSION_STRING                                                                       \
    EMBER_VERSION_STRINGIFY(EMBER_VERSION_MAJOR)                                                   \
    "." EMBER_VERSION_STRINGIFY(EMBER_VERSION_MINOR) "." EMBER_VERSION_STRINGIFY(                  \
        EMBER_VERSION_PATCH)
/// One number that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is 100), for
/// `#if EMBER_VERSION >= ...`.
#define EMBER_VERSION                                                                              \
    (EMBER_VERSION_MAJOR * 10000 + EMBER_VERSION_MINOR * 100 + EMBER_VERSION_PATCH)

namespace ember {
/// The version of the headers a program was compiled with (`ember_version()` in
/// ember/compiler/CacheSupport.h is the library's, which may differ when a program runs with
/// another build of the shared libraries).
inline constexpr int version_major = EMBER_VERSION_MAJOR;
inline constexpr int version_minor = EMBER_VERSION_MINOR;
inline constexpr int version_patch = EMBER_VERSION_PATCH;
inline constexpr const char *version_string = EMBER_VERSION_STRING;
} // namespace ember

#endif // EMBER_VERSION_H
