#!/usr/bin/env bash
# Downstream tests: ember used by another project, the three ways the README documents.
#
#   run.sh install      EMBER_BUILD WORK   `cmake --install` EMBER_BUILD into WORK/prefix (moved
#                                          there after the install, so the package must be
#                                          relocatable), then build and run test/downstream/
#                                          saxpy.cpp with find_package(ember CONFIG) and with
#                                          `pkg-config --cflags --libs ember`. Quick: it reuses the
#                                          built ember (the ctest test `downstream-install`).
#   run.sh fetchcontent EMBER_BUILD WORK   the same program in a project that adds this source tree
#                                          with FetchContent, built Debug: ember builds its
#                                          libraries again (minutes), and must leave the project's
#                                          settings alone (`make test-downstream`).
#
# EMBER_BUILD supplies the generator and C++ compiler (its CMakeCache.txt); WORK is emptied first.
# The programs run on the CPU device (EMBER_API=cpu) with a compile cache inside WORK. A consumer
# must need no LLVM: the installed package, pkg-config flags and build commands must not name it.
# Exit status 77 (ctest: skipped) when pkg-config is missing.
set -euo pipefail

usage() {
    echo "usage: $0 install|fetchcontent EMBER_BUILD_DIR WORK_DIR" >&2
    exit 2
}
[[ $# -eq 3 ]] || usage
mode=$1
[[ $mode == install || $mode == fetchcontent ]] || usage
build=$(cd "$2" && pwd)
work=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
jobs=${JOBS:-2}

fail() {
    echo "downstream ($mode): FAIL: $*" >&2
    exit 1
}
step() { echo "downstream ($mode): $*"; }

cache_value() { # cache_value NAME: NAME's value in the ember build's CMakeCache.txt
    sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1
}
[[ -f $build/CMakeCache.txt ]] || fail "$build is not a configured CMake build folder"
generator=$(cache_value CMAKE_GENERATOR)
cxx=$(cache_value CMAKE_CXX_COMPILER)
# The version, from the header that is its one source.
version_part() {
    sed -n "s/^#define EMBER_VERSION_$1 \([0-9]*\)$/\1/p" "$src/include/ember/Version.h"
}
major=$(version_part MAJOR)
minor=$(version_part MINOR)
patch=$(version_part PATCH)
version=$major.$minor.$patch
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    fail "cannot read the version from include/ember/Version.h"

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
export EMBER_API=cpu EMBER_CACHE_DIR=$work/cache
unset EMBER_DUMP EMBER_DUMP_DIR

# run_program EXE: runs the vector add, which checks every element and exits 1 on a mismatch.
run_program() {
    local out
    out=$("$1") || fail "$1 failed (exit status $?)"
    echo "$out"
    [[ $out == *"downstream: ember $version, "*" (cpu): OK"* ]] || fail "$1 printed: $out"
}

# no_llvm WHAT FILE...: none of FILE names LLVM (a library, an include folder, a package).
no_llvm() {
    local what=$1
    shift
    if grep -i -n llvm "$@"; then
        fail "$what name LLVM (above): a consumer must need no LLVM"
    fi
}

if [[ $mode == install ]]; then
    step "installing $build"
    cmake --install "$build" --prefix "$work/staged" >"$work/install.log" ||
        fail "cmake --install failed (see $work/install.log)"
    mv "$work/staged" "$work/prefix"
    prefix=$work/prefix

    config=$(find "$prefix" -name emberConfig.cmake -print -quit)
    pc=$(find "$prefix" -name ember.pc -print -quit)
    [[ -n $config ]] || fail "no emberConfig.cmake installed"
    [[ -n $pc ]] || fail "no ember.pc installed"
    for f in "$(dirname "$config")"/{emberConfigVersion,emberTargets}.cmake \
        "$prefix"/include/ember/{ember.h,Version.h,Error.h} \
        "$prefix"/include/ember/{compiler/Compiler.h,dsl/DSL.h,runtime/DeviceContext.h} \
        "$prefix/bin/ember-compile"; do
        [[ -f $f ]] || fail "not installed: ${f#"$prefix"/}"
    done
    no_llvm "the installed CMake targets" "$(dirname "$config")"/emberTargets*.cmake
    no_llvm "the installed pkg-config file's fields" <(grep -E '^(Requires|Cflags|Libs)' "$pc")
    if grep -rn -E '#\s*include\s*[<"](llvm|lld)/' "$prefix/include"; then
        fail "installed headers include LLVM's (above)"
    fi

    # Installed binaries find the installed libraries (install RPATH $ORIGIN/../lib), also after
    # the move, and name no LLVM library (it is linked in statically).
    libdir=$(dirname "$(find "$prefix" -name 'libember_compiler.so*' -print -quit)")
    for elf in "$prefix/bin/ember-compile" "$libdir"/libember_{compiler,dsl,runtime}.so; do
        dyn=$(readelf -d "$elf")
        if grep -q -i 'NEEDED.*llvm' <<<"$dyn"; then fail "$elf needs an LLVM shared library"; fi
        grep -q "R\(UN\)\?PATH.*\[\$ORIGIN" <<<"$dyn" || fail "$elf has no \$ORIGIN RPATH"
    done
    resolved=$(ldd "$prefix/bin/ember-compile" |
        sed -n 's/.*libember_compiler\.so[^ ]* => \([^ ]*\).*/\1/p')
    [[ -n $resolved && $(realpath "$resolved") == "$(realpath "$libdir")"/* ]] ||
        fail "installed ember-compile loads libember_compiler from '$resolved', not $libdir"
    first=$("$prefix/bin/ember-compile" --version | head -n 1)
    [[ $first == "ember-compile $version (LLVM "*")" ]] ||
        fail "installed ember-compile --version printed '$first'"
    step "installed ember-compile: $first"

    # find_package, from a project that sets no C++ standard and cannot find LLVM. Before 1.0 a
    # minor version may change the API: the package must refuse a request for the next one.
    step "find_package(ember) consumer"
    cmake -S "$here/find_package" -B "$work/find_package" -G "$generator" --no-warn-unused-cli \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
        -DEMBER_WANTED_VERSION="$major.$minor" -DEMBER_REJECTED_VERSION="$major.$((minor + 1))" \
        -DEMBER_EXPECTED_VERSION="$version" >"$work/find_package.configure.log" 2>&1 ||
        { cat "$work/find_package.configure.log"; fail "configuring the find_package consumer"; }
    cmake --build "$work/find_package" --verbose -j "$jobs" >"$work/find_package.build.log" 2>&1 ||
        { cat "$work/find_package.build.log"; fail "building the find_package consumer"; }
    no_llvm "the consumer's compile and link commands" "$work/find_package.build.log"
    run_program "$work/find_package/downstream_saxpy"

    # pkg-config: the same source, compiled and linked with ember.pc's flags only.
    if ! command -v pkg-config >/dev/null; then
        echo "downstream (install): pkg-config not found, the pkg-config check is skipped" >&2
        exit 77
    fi
    step "pkg-config consumer"
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(dirname "$pc")
    pc_version=$(pkg-config --modversion ember)
    [[ $pc_version == "$version" ]] || fail "pkg-config --modversion ember: '$pc_version'"
    flags=$(pkg-config --cflags --libs ember)
    no_llvm "pkg-config's flags" <<<"$flags $(pkg-config --libs --static ember)"
    mkdir -p "$work/pkg-config"
    # shellcheck disable=SC2086 # the flags are words
    "$cxx" "$here/saxpy.cpp" $flags -o "$work/pkg-config/downstream_saxpy" ||
        fail "building with pkg-config's flags: $flags"
    run_program "$work/pkg-config/downstream_saxpy"
else
    # The checks of the project's settings are in fetchcontent/CMakeLists.txt (configure time).
    step "FetchContent consumer, Debug (ember builds its libraries)"
    cmake -S "$here/fetchcontent" -B "$work/fetchcontent" -G "$generator" \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug -DEMBER_SOURCE_DIR="$src" \
        >"$work/fetchcontent.configure.log" 2>&1 ||
        { cat "$work/fetchcontent.configure.log"; fail "configuring the FetchContent consumer"; }
    grep "^-- downstream:" "$work/fetchcontent.configure.log" ||
        fail "the FetchContent consumer's checks did not run"
    grep -q "^CMAKE_BUILD_TYPE:STRING=Debug$" "$work/fetchcontent/CMakeCache.txt" ||
        fail "the consumer's cached build type is not Debug"
    cmake --build "$work/fetchcontent" -j "$jobs" >"$work/fetchcontent.build.log" 2>&1 ||
        { tail -n 50 "$work/fetchcontent.build.log"; fail "building the FetchContent consumer"; }
    # The build tree: the program where the project puts its programs; no ember program built.
    [[ -x $work/fetchcontent/downstream_saxpy ]] ||
        fail "the consumer's program is not in its own build folder"
    built=$(find "$work/fetchcontent" -type f \( -name ember-compile -o -name ember-difftest \
        -o -name 'ember-*-tests' -o -name vector_add -o -name scalar_add -o -name first_launch \) )
    [[ -z $built ]] || fail "ember built programs the project did not ask for: $built"
    # ember added no install rules: installing the project installs nothing.
    cmake --install "$work/fetchcontent" --prefix "$work/fetchcontent-prefix" >/dev/null
    if [[ -d $work/fetchcontent-prefix ]] && [[ -n $(ls -A "$work/fetchcontent-prefix") ]]; then
        fail "installing the project installed ember's files: $(find "$work/fetchcontent-prefix")"
    fi
    run_program "$work/fetchcontent/downstream_saxpy"
fi
step "OK"
