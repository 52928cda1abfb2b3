# Quick start: `make run` and `make test` on a fresh Debian 12 clone. Both install the Debian
# packages they need when they are missing (with sudo when not root), configure into build/,
# and build.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
DEBIAN_PACKAGES := cmake ninja-build g++ python3 llvm-19-dev llvm-19-tools lld-19 liblld-19-dev \
                   libgtest-dev zlib1g-dev libzstd-dev

.PHONY: all deps configure build run test bench clean

all: build

deps:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
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

bench: build
	$(BUILD)/bench/first_launch
	$(BUILD)/bench/compile_cache

clean:
	rm -rf $(BUILD)
