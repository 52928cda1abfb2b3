/// \file
/// Stops a compile with one clear message when the compiler or its C++ library is too old for
/// ember's headers, instead of pages of errors from deep inside them. Included first by the
/// umbrella header ember/ember.h and by ember/Error.h, which every other header reaches.
///
/// The minimums are what ember's headers need and were tried: C++20 with concepts and
/// std::source_location. GCC 11 has both; clang 14 has no __builtin_source_location, without
/// which libstdc++ 12 declares no std::source_location, so clang 15 is the first that works.
/// Building ember itself is tested with g++ 12 and clang 16 (the CMake configure check says so).
#ifndef EMBER_COMPILER_CHECK_H
#define EMBER_COMPILER_CHECK_H

#define EMBER_COMPILER_CHECK_STR_(x) #x
#define EMBER_COMPILER_CHECK_STR(x) EMBER_COMPILER_CHECK_STR_(x)

// #error does not expand macros, so the version found is said by #pragma message just before.
// clang defines __GNUC__ too (as 4): it is tested first.
#if defined(__clang__) && __clang_major__ < 15
#pragma message("ember: this compiler is clang " EMBER_COMPILER_CHECK_STR(__clang_major__))
#error "ember needs clang 15 or newer, or g++ 11 or newer"
#elif !defined(__clang__) && defined(__GNUC__) && __GNUC__ < 11
#pragma message("ember: this compiler is g++ " EMBER_COMPILER_CHECK_STR(__GNUC__))
#error "ember needs g++ 11 or newer, or clang 15 or newer"
#elif __cplusplus < 202002L
#error "ember's headers are C++20: compile with -std=c++20 (CMake: link ember::ember)"
#else
// The library, whatever the compiler: e.g. clang 15 with libc++ 15 has no std::source_location.
#include <version>
#if !defined(__cpp_lib_source_location)
#error "ember needs std::source_location: libstdc++ 11 or newer, or libc++ 16 or newer"
#endif
#endif

#endif // EMBER_COMPILER_CHECK_H
