# Quick start: `make run` and `make test` on a fresh Debian 12 clone. Both install the Debian
# packages they need when they are missing (with sudo when not root), configure into build/,
# and build.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
DEBIAN_PACKAGES := cmake ninja-build g++ python3 llvm-19-dev llvm-19-tools lld-19 liblld-19-dev \
                   libgtest-dev zlib1g-dev libzstd-dev libamdhip64-5 libamd-comgr2 pkgconf
# The sanitizer and fuzzer builds use clang: GCC 12's UBSan mis-instruments CodeGenLLVM.cpp, and
# libFuzzer is part of clang (libclang-rt-19-dev holds the sanitizer and libFuzzer runtimes).
CLANG_PACKAGES := clang-19 libclang-rt-19-dev clang-16 clang-format-19
CLANG_CMAKE_ARGS := -DCMAKE_CXX_COMPILER=clang++-19
# `make test-clang`: the oldest clang ember supports (the README's minimum compilers).
CLANG_MIN_CXX := clang++-16
CLANG_BUILD ?= build-clang
# `make format-check`: the commits since FORMAT_BASE (scripts/check-format.sh).
FORMAT_BASE ?= HEAD~1
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# `make fuzz`: seconds per fuzzer; findings go to $(FUZZ_BUILD)/fuzz/artifacts/<fuzzer>/.
FUZZ_SECONDS ?= 300
FUZZ_ARGS ?=

.PHONY: all deps deps-clang deps-format configure build run test test-downstream bench test-asan \
        test-clang format-check fuzz-build fuzz clean

all: build

deps: PACKAGES = $(DEBIAN_PACKAGES)
deps-clang: PACKAGES = $(DEBIAN_PACKAGES) $(CLANG_PACKAGES)
deps-format: PACKAGES = clang-format-19
deps deps-clang deps-format:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "ember: installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/examples/scalar_add

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# ember used by another project (test/downstream/run.sh): installed, through find_package and
# pkg-config; then as a FetchContent subproject built Debug, which builds ember's libraries again.
test-downstream: build
	JOBS=$(JOBS) test/downstream/run.sh install $(BUILD) $(BUILD)/test/downstream-install
	JOBS=$(JOBS) test/downstream/run.sh fetchcontent $(BUILD) $(BUILD)/test/downstream-fetchcontent

bench: build
	$(BUILD)/bench/first_launch
	$(BUILD)/bench/compile_cache
	$(BUILD)/bench/graph_replay
	$(BUILD)/bench/ptx_rules
	$(BUILD)/bench/kernels

# ASan + UBSan (clang) over the compiler, DSL and runtime unit tests and lit, on the CPU device.
# ASAN_OPTIONS/UBSAN_OPTIONS from the environment are kept. By default: allocator_may_return_null,
# since tests ask for impossible sizes and expect a MemoryError; alloc_dealloc_mismatch=0, since
# LLVM's own (uninstrumented) PredicateInfo frees with free() what operator new allocated.
# LSAN_OPTIONS (default: test/sanitizers/lsan.supp) suppresses the leak an LLVM fatal error leaves.
test-asan: deps-clang
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CLANG_CMAKE_ARGS) \
	  -DEMBER_SANITIZE=address,undefined -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_BUILD_BENCH=OFF \
	  $(CMAKE_ARGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:alloc_dealloc_mismatch=0} \
	UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	LSAN_OPTIONS=$${LSAN_OPTIONS:-suppressions=$(CURDIR)/test/sanitizers/lsan.supp} \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# Everything but the benchmarks, built with the oldest supported clang (CLANG_MIN_CXX) against
# libstdc++, and its tests: what GCC accepts and clang does not fails here.
test-clang: deps-clang
	@cmake -S . -B $(CLANG_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_CXX_COMPILER=$(CLANG_MIN_CXX) -DEMBER_BUILD_BENCH=OFF $(CMAKE_ARGS) >/dev/null
	cmake --build $(CLANG_BUILD) -j $(JOBS)
	ctest --test-dir $(CLANG_BUILD) --output-on-failure -j $(JOBS)

# The C++ lines changed since FORMAT_BASE (default: the last commit) against .clang-format.
# Uncommitted work: scripts/check-format.sh --worktree.
format-check: deps-format
	scripts/check-format.sh $(FORMAT_BASE)

# The libFuzzer harnesses of test/fuzz (only ember_compiler and the harnesses are built).
fuzz-build: deps-clang
	@cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CLANG_CMAKE_ARGS) \
	  -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_BUILD_BENCH=OFF \
	  $(CMAKE_ARGS) >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target ember-fuzzers

# Each fuzzer for FUZZ_SECONDS, one after the other (scripts/fuzz.sh; FUZZ_ARGS adds options).
fuzz: fuzz-build
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -L fuzz
	scripts/fuzz.sh --build $(FUZZ_BUILD) --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(CLANG_BUILD)
