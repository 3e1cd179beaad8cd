# The two commands a user needs: `make demo` and `make test`.
# Everything else here is a convenience over cmake/ctest.
#
# Setup follows the goal: build, demo and install install only what
# building and running need (scripts/bootstrap.sh); test, test-asan,
# build-release and fuzz also what only the tests use (bootstrap.sh --test:
# clang, Chromium, redis-server, Node and the AT Protocol PDS).

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
RELEASE_BUILD ?= build-release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# Tests run two per core: most of the suite's time is agents waiting on
# their ticks, typing delays and backoffs (a room test uses a second of
# CPU in three minutes), so twice the cores keeps them busy without
# starving the CPU-bound ones (the browser, the PDS, the soak).
TEST_JOBS  ?= $(shell echo $$(( $(JOBS) * 2 )))
PREFIX     ?= /usr/local
FUZZ_SECONDS ?= 300
CMAKE_FLAGS ?=

.PHONY: all bootstrap bootstrap-test configure build build-release test test-long test-fast test-asan demo fuzz bench install clean format

all: build

bootstrap:
	@scripts/bootstrap.sh

bootstrap-test:
	@scripts/bootstrap.sh --test

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: bootstrap configure
	cmake --build $(BUILD) -j $(JOBS)

# The whole suite, then again under ASan + UBSan (less the long variants
# labelled plainonly, whose code paths a sibling test covers under the
# sanitizers too), less the few labelled long (the pull-request end-to-end
# variants that kill agents or conflict: `make test-long`), so that CI stays
# near 30 minutes. The default build is
# RelWithDebInfo (-O2: the footprint figures are this build's); Debug is the
# ASan one; `make build-release` checks the -O3 build's warnings.
test: bootstrap-test build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -LE long
	$(MAKE) --no-print-directory test-asan

# The long variants make test leaves out (plain build).
test-long: bootstrap-test build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -L long

# Builds the whole tree with -DCMAKE_BUILD_TYPE=Release (no tests run).
build-release: bootstrap-test
	cmake -S . -B $(RELEASE_BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(RELEASE_BUILD) -j $(JOBS)

test-fast: bootstrap-test build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)

test-asan: bootstrap-test
	cmake -S . -B $(ASAN_BUILD) -DGA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(TEST_JOBS) -LE 'plainonly|long'

# The demo builds what it runs itself, quietly (its log in
# $(BUILD)/demo-build.log, shown if the build fails).
demo:
	@JOBS=$(JOBS) PREFIX="$(PREFIX)" CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/demo.sh $(BUILD)

# libFuzzer targets (clang); each runs FUZZ_SECONDS (default 300).
fuzz: bootstrap-test
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DGA_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh $(BUILD)

# Installs under PREFIX (default /usr/local) whatever prefix $(BUILD) was
# configured with: the prefix is given at install time, and the systemd
# units are written then (contrib/systemd/install-units.cmake). DESTDIR
# stages the tree for a package: make install PREFIX=/usr DESTDIR=/tmp/pkg.
# Only what is installed is built (the two binaries; not the test suite).
install: bootstrap configure
	cmake --build $(BUILD) -j $(JOBS) --target general-agent agent-space
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(RELEASE_BUILD)
