# Helix quick start: `make demo` (set up, build, run the main job) and `make check`
# (set up, build, run every test). Both install missing Debian packages when run as root.
BUILD ?= build
MESON_OPTS ?=
RANKS ?= 4
DEMO_ARGS ?= --kvp 2 --tpa 2 --batch 2 --context 262144 --steps 8 --check

.PHONY: all deps setup build demo check test bench clean

all: build

deps:
	@sh ci/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

setup: deps $(BUILD)/build.ninja

build: setup
	ninja -C $(BUILD)

demo: build
	$(BUILD)/launcher/helixrun -n $(RANKS) -- $(BUILD)/cli/helix decode $(DEMO_ARGS)

check: build
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

test: check

bench: build
	meson test -C $(BUILD) --benchmark --print-errorlogs

clean:
	rm -rf $(BUILD)
