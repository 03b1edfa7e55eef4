# Glove: thin wrapper over meson + ninja.
#   make         build build/glove (optimized, with debug info); installs only
#                the Debian build packages (scripts/deps.sh build), never npm
#   make demo    build and run a contained program on a built-in example
#                (installs the test packages first: scripts/deps.sh test)
#   make check   deps (build and test packages, npm test peers: scripts/deps.sh),
#                the normal and the ASan/UBSan build, the layering check,
#                unit tests, the integration matrix (each file in the cells
#                tests/integration/matrix names, in parallel where safe), the
#                package checks, make demo, the conformance suite, the agent
#                CLI suite and the fuzz smoke; prints a table of stages
#                (scripts/check.sh)
#   make check-full  the same with every integration file in all four cells
#                (normal and ASan builds, as root and as uid 65534)
#   make conformance  the official MCP conformance suite (2026-07-28 and
#                2025-11-25) against its reference server, directly and
#                through glove run's HTTP and command endpoints; prints the
#                scenario table (tests/conformance/run.sh)
#   make agents  the five real agent CLIs against a fake model server, under
#                glove exec and as gloved managed sessions (tests/agents/run.sh)
#   (demo, conformance, agents and bench install the test packages first:
#   Debian packages and tests/package-lock.json, scripts/deps.sh test)
#   make test-deps   only that
#   make bench   start-up benchmarks (JSON lines under bench/results/)
#   make fuzz    longer libFuzzer runs
#   make install     meson install of build/: binaries, man pages, shell
#                    completions, unit templates; PREFIX (default /usr/local)
#                    and DESTDIR respected
#   make uninstall   removes every file the last install wrote (meson's
#                    install log, build/meson-logs/install-log.txt)
BUILD      ?= build
ASAN_BUILD ?= build-asan
MESON      ?= meson
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps test-deps build asan demo check check-full conformance agents unit integration bench fuzz clean install uninstall

all: build

deps:
	@scripts/deps.sh build

test-deps:
	@scripts/deps.sh test

$(BUILD)/build.ninja: | deps
	$(MESON) setup $(BUILD) --buildtype=debugoptimized -Db_ndebug=if-release

$(ASAN_BUILD)/build.ninja: | deps
	$(MESON) setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

demo: build test-deps
	@scripts/demo.sh $(BUILD)

check:
	@scripts/check.sh $(BUILD) $(ASAN_BUILD)

check-full:
	@scripts/check.sh --full $(BUILD) $(ASAN_BUILD)

conformance: build test-deps
	@tests/conformance/run.sh $(BUILD)

agents: build test-deps
	@tests/agents/run.sh $(BUILD)

bench: build test-deps
	@bench/run.sh $(BUILD)

fuzz: deps
	@scripts/fuzz.sh long

install: build
	$(MESON) configure $(BUILD) -Dprefix=$(PREFIX)
	ninja -C $(BUILD)
	$(MESON) install -C $(BUILD) --no-rebuild $(if $(DESTDIR),--destdir "$(DESTDIR)")

uninstall:
	@scripts/uninstall.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
