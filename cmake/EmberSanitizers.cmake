# Sanitizer and fuzzer builds (clang only): `make test-asan` configures build-asan with
# EMBER_SANITIZE=address,undefined, `make fuzz` configures build-fuzz with EMBER_FUZZ=ON.
#
# EMBER_SANITIZE: a comma-separated list for -fsanitize= (e.g. "address,undefined"), applied to
#   every target of the build. Any report stops the program (-fno-sanitize-recover=all).
# EMBER_FUZZ: builds the libFuzzer harnesses of test/fuzz; implies address,undefined, and
#   instruments ember's own code for coverage (-fsanitize=fuzzer-no-link).
#
# GCC is refused: GCC 12's UBSan mis-instruments CodeGenLLVM.cpp, and libFuzzer is clang's. LLVM's
# static libraries linked into ember_compiler stay uninstrumented: reports point at ember's code,
# or at LLVM through a call from it.
include_guard(GLOBAL)

set(EMBER_SANITIZE "" CACHE STRING
    "Sanitizers for every target, comma-separated, e.g. address,undefined (clang only)")
option(EMBER_FUZZ "Build the libFuzzer harnesses of test/fuzz (clang only)" OFF)

if(EMBER_FUZZ AND NOT EMBER_SANITIZE)
  set(EMBER_SANITIZE "address,undefined")
endif()

if(EMBER_SANITIZE OR EMBER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR
      "ember: EMBER_SANITIZE/EMBER_FUZZ need clang (found ${CMAKE_CXX_COMPILER_ID} "
      "${CMAKE_CXX_COMPILER_VERSION}): GCC 12's UBSan mis-instruments CodeGenLLVM.cpp and libFuzzer "
      "is part of clang. Configure a separate build folder with "
      "-DCMAKE_CXX_COMPILER=clang++-19 (Debian: apt-get install clang-19 libclang-rt-19-dev), "
      "or use `make test-asan` / `make fuzz`, which do so.")
  endif()
  set(ember_sanitize_flags -fsanitize=${EMBER_SANITIZE} -fno-sanitize-recover=all
      -fno-omit-frame-pointer -gline-tables-only)
  # UBSan's `function` check reads a signature in the 8 bytes before every function called
  # through a pointer. The kernels the CPU device calls are JIT-compiled code with no such
  # prologue, and one at the start of a page faults on the unmapped page before it (SEGV in
  # CpuModuleTest.CompilesLoadsAndRunsFromManyThreads).
  if(EMBER_SANITIZE MATCHES "undefined|function")
    list(APPEND ember_sanitize_flags -fno-sanitize=function)
  endif()
  if(EMBER_FUZZ)
    list(APPEND ember_sanitize_flags -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options(${ember_sanitize_flags})
  # --as-needed, as Debian's GCC links by default: LLVM's link interface names libz3, which
  # nothing ember uses needs, and the GPU machine the fuzzers are carried to does not have.
  add_link_options(-fsanitize=${EMBER_SANITIZE} -Wl,--as-needed)
  if(EMBER_FUZZ)
    message(STATUS "ember: sanitizers ${EMBER_SANITIZE}, libFuzzer harnesses in test/fuzz")
  else()
    message(STATUS "ember: sanitizers ${EMBER_SANITIZE}")
  endif()
endif()
