# Helix quick start: `make demo` (set up, build, run the main job) and `make check`
# (set up, build, run every test). Both install missing Debian packages when run as root.
BUILD ?= build
MESON_OPTS ?=
RANKS ?= 4
DEMO_ARGS ?= --kvp 2 --tpa 2 --batch 2 --context 262144 --steps 8 --check

.PHONY: all deps setup build build-gpu demo check check-asan test bench fuzz clean

all: build

deps:
	@sh ci/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

setup: deps $(BUILD)/build.ninja

build: setup
	ninja -C $(BUILD)

# The CUDA build for ci/device-check.sh: made here (nvcc compiles without a GPU), carried
# to a machine with a GPU. Release (no debug info): about 20 MiB, within what can be carried.
build-gpu: setup
	[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dcuda=enabled -Dbuildtype=release $(MESON_OPTS)
	ninja -C build-gpu
	bash ci/device-libs.sh build-gpu
	du -sh build-gpu

demo: build
	$(BUILD)/launcher/helixrun -n $(RANKS) -- $(BUILD)/cli/helix decode $(DEMO_ARGS)

check: build
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

test: check

# The unit, integration and fault suites under AddressSanitizer and UBSan (slower; not
# part of `make check`). hwloc's PCI plugin leaks inside libpciaccess and is unloaded
# before LeakSanitizer can name it, so live discovery skips PCI here.
check-asan: deps
	[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined $(MESON_OPTS)
	ninja -C build-asan
	HWLOC_COMPONENTS=-pci LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite integration --suite fault

# Benchmarks of one core (suite core) measure it against that core's own limits: pinned.
# The others (several threads, ranks or nodes) run unpinned: a rank keeps a binding it
# starts with (HELIX_BIND=auto), so pinning them would put every rank on one core.
bench: build
	OPENBLAS_NUM_THREADS=1 taskset -c 1 meson test -C $(BUILD) --benchmark --print-errorlogs --suite core
	OPENBLAS_NUM_THREADS=1 meson test -C $(BUILD) --benchmark --print-errorlogs --no-suite core

# libFuzzer targets of the input readers (clang, ASan, UBSan), FUZZ_SECONDS each; a crash
# leaves its input in $(BUILD)/tests/fuzz/crash-*. `make check` runs each for 3 s.
FUZZ_SECONDS ?= 60
fuzz: setup
	for t in model cluster settings topo_xml; do \
		sh tests/fuzz/fuzz.sh $(CURDIR) $(CURDIR)/$(BUILD) $$t $(FUZZ_SECONDS) || exit 1; \
	done

clean:
	rm -rf $(BUILD) build-asan build-gpu
