# det - build, test and benchmark.
#
#   make          build libdet.so, libdetsup.so, the samples, and .venv (setup on first use)
#   make demo     record a heisenbug sample until it fails, then replay it
#   make test     everything CI runs (checks + all tests)
#   make bench    det-vs-native ratios (medians of several runs)
#   make stress   slow statistical runs
#   make package  the Debian package (build/deb/), lintian-checked
#   make package-check  build it, install it in a fresh Debian (debootstrap), use it, purge it
#   make install  PREFIX=/usr/local DESTDIR=...: commands in bin/, native libraries
#                 and the Python package in lib/det/, the gdb extension in share/det/,
#                 man pages and bash completion (generated from the parsers); make uninstall
#   make fuzz     100000 damaged traces and 10000 damaged capture logs through every tool
#                 (make test runs 1000 and 80)
#   make kmod     det's kernel module, built against Debian's packaged kernel headers
#   make check-kmod  boot Debian's kernel in qemu: replay with the module, fuzz it, kill replays
#   make bench-kmod  kmod vs futex backends and replay vs native, inside qemu (make bench runs it)
#
# Rules: every target works from a fresh clone on Debian 12; tools/setup.sh
# installs what is missing (as root) or says what to install.

CC      ?= gcc
CXX     ?= g++
WARN    := -Wall -Wextra -Werror
# EXTRA_CFLAGS / EXTRA_LDFLAGS: a distribution's own (debian/rules passes dpkg-buildflags)
CFLAGS  := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iinclude $(EXTRA_CFLAGS)
VENV    := .venv
PY      := $(VENV)/bin/python
SETUP   := $(VENV)/.det-setup

RUNTIME_SRC := $(wildcard preload/*.c) recorder/rings.c replayer/enforce.c replayer/strict.c replayer/logical.c replayer/snapshot.c $(wildcard replayer/turns_*.c)
RUNTIME_HDR := $(wildcard preload/*.h preload/*.def) recorder/rings.h include/det/crc32c.h replayer/enforce.h replayer/strict.h replayer/logical.h include/det/events.def include/det/events.h include/det/shm.h include/det/gdb.h replayer/turns.h include/det/turns.def include/det/detsched.h
SUP_SRC     := supervisor/supervisor.c supervisor/sums.c supervisor/schedpack.c supervisor/identity.c supervisor/digest.c recorder/capture.c recorder/convert.c recorder/convert_log.c recorder/convert_merge.c recorder/convert_write.c recorder/convert_pack.c recorder/convert_btree.c replayer/schedule.c replayer/follow.c replayer/sup_turns.c
# detrun --isolated's runtime (isolated/): preloaded instead of libdet.so
ISO_SRC     := $(wildcard isolated/*.c)
ISO_HDR     := $(wildcard isolated/*.h)
SUP_HDR     := include/det/crc32c.h supervisor/supervisor.h supervisor/sums.h supervisor/schedpack.h supervisor/digest.h recorder/convert.h recorder/logfmt.h replayer/feeder.h include/det/sup.h include/det/shm.h include/det/events.def include/det/events.h include/det/turns.def include/det/detsched.h
RUNTIME_HDR += include/det/cc.h
# How each library's sources compile (tools/layering.py compiles each alone with the same flags)
RUNTIME_CFLAGS := $(CFLAGS) -Ipreload -fPIC -fvisibility=hidden -U_FORTIFY_SOURCE -fexceptions
SUP_CFLAGS     := $(CFLAGS) -fPIC -fvisibility=hidden
ISO_CFLAGS     := $(CFLAGS) -fPIC -fvisibility=hidden -U_FORTIFY_SOURCE

# det-cc (llvm/): the pass plugin, for the clang tools/setup.sh installs
LLVM_CONFIG := llvm-config-22
LLVM_BIN    := /usr/lib/llvm-22/bin
DETPASS     := build/DetPass.so
DETCC       := llvm/det-cc

SAMPLES_C   := $(wildcard samples/*.c)
SAMPLES_CXX := $(wildcard samples/*.cpp)
SAMPLE_BINS := $(patsubst samples/%.c,samples/bin/%,$(SAMPLES_C)) $(patsubst samples/%.cpp,samples/bin/%,$(SAMPLES_CXX))
# Samples built with det-cc (their header says so): lock-free code whose
# atomics must be events; the window bugs also with memory points (NAME.mem)
CC_SAMPLES  := atomic_spinlock spsc_queue seqlock dcl_bug check_then_act_flag lost_update
WINDOW_BUGS := dcl_bug check_then_act_flag lost_update
SAMPLE_BINS += $(patsubst %,samples/bin/%.mem,$(WINDOW_BUGS))
TESTPROG_C  := $(wildcard tests/programs/*.c)
TESTPROG_CXX := $(wildcard tests/programs/*.cpp)
TESTPROGS   := $(patsubst tests/programs/%.c,tests/bin/%,$(TESTPROG_C)) \
	       $(patsubst tests/programs/%.cpp,tests/bin/%,$(TESTPROG_CXX)) tests/bin/hello_static \
	       tests/bin/detcheck_spin.detcc
BENCH_C     := $(wildcard bench/*.c)
BENCH_BINS  := $(patsubst bench/%.c,bench/bin/%,$(BENCH_C))

# install: what goes where, as DEST=SRC pairs (DEST relative to PREFIX); the
# Python package, the commands, their man pages and completion come from
# setup.cfg (tools/install.py). A new file to install is one line here.
PREFIX  ?= /usr/local
DESTDIR ?=
SYS_PY  ?= python3
INSTALL_FILES := lib/det=build/libdet.so lib/det=build/libdetsup.so lib/det=build/libdetiso.so lib/det=build/detptrace \
                 $(foreach f,$(wildcard gdb-ext/*.py gdb-ext/det_gdb/*.py gdb-ext/det_gdb/commands/*.py),\
                   share/det/$(patsubst %/,%,$(dir $(f)))=$(f))
PY_SRC  := $(wildcard store/det/*.py recorder/det_record/*.py hunt/det_hunt/*.py compare/det_compare/*.py \
             compare/det_compare/bisect/*.py replayer/det_replay/*.py tui/det_tui/*.py dap/det_dap/*.py check/det_check/*.py \
             tui/det_tui/*.tcss) setup.cfg

.PHONY: all setup native samples benches testprogs demo test check bench stress fuzz clean dist install uninstall \
        kmod check-kmod bench-kmod \
	package package-check vsix

all: $(SETUP) native samples benches testprogs dist build/.bytecode

setup: $(SETUP)
$(SETUP): tools/setup.sh setup.cfg
	tools/setup.sh

native: build/libdet.so build/libdetsup.so build/libdetiso.so build/detptrace $(DETPASS)

# -isystem: LLVM's headers do not pass -Wextra -Werror
$(DETPASS): llvm/DetPass.cpp include/det/cc.h include/det/events.def include/det/events.h
	@mkdir -p build
	$(LLVM_BIN)/clang++ $(shell $(LLVM_CONFIG) --cxxflags | sed 's|-I\([^ ]*\)|-isystem \1|') -Iinclude \
		-O2 $(WARN) -fPIC -shared -o $@ $<

# A library whose sources are found by wildcard is built again when one is
# removed too: its list goes to a file rewritten only when the list changes.
source_list = $(shell mkdir -p build; echo '$(2)' | cmp -s - $(1) || echo '$(2)' > $(1))
$(call source_list,build/libdet.sources,$(RUNTIME_SRC) $(RUNTIME_HDR))
$(call source_list,build/libdetiso.sources,$(ISO_SRC) $(ISO_HDR))

build/libdet.so: $(RUNTIME_SRC) $(RUNTIME_HDR) build/libdet.sources
	@mkdir -p build
	$(CC) $(RUNTIME_CFLAGS) -shared -Wl,-z,defs $(EXTRA_LDFLAGS) -o $@ $(RUNTIME_SRC) -ldl

build/libdetiso.so: $(ISO_SRC) $(ISO_HDR) build/libdetiso.sources
	@mkdir -p build
	$(CC) $(ISO_CFLAGS) -shared -Wl,-z,defs $(EXTRA_LDFLAGS) -o $@ $(ISO_SRC) -ldl

build/libdetsup.so: $(SUP_SRC) $(SUP_HDR)
	@mkdir -p build
	$(CC) $(SUP_CFLAGS) -shared -Wl,-z,defs $(EXTRA_LDFLAGS) -o $@ $(SUP_SRC) -lsqlite3

# detrec --ptrace's supervisor (ptracer/): a program, not a library; installed, so
# nothing in it names the checkout (its debug info's paths are relative)
build/detptrace: ptracer/detptrace.c include/det/events.def include/det/events.h
	@mkdir -p build
	$(CC) $(CFLAGS) -ffile-prefix-map=$(CURDIR)=. $(EXTRA_LDFLAGS) -o $@ ptracer/detptrace.c

# The checkout's modules compiled ahead: with PYTHONDONTWRITEBYTECODE set,
# every det command would compile them again at each start (~0.1 s).
build/.bytecode: $(SETUP) $(filter %.py,$(PY_SRC))
	@mkdir -p build
	.venv/bin/python -m compileall -q store/det recorder/det_record hunt/det_hunt compare/det_compare \
		replayer/det_replay tui/det_tui dap/det_dap check/det_check
	@touch $@

# dist: everything an install needs, built without .venv (a Debian package build has none)
dist: native build/.cli-docs
build/.cli-docs: $(PY_SRC) tools/install.py tools/gen_cli_docs.py
	@mkdir -p build
	$(SYS_PY) tools/install.py stage build/python
	$(SYS_PY) tools/gen_cli_docs.py --python build/python --man build/man --completion build/completion
	@touch $@

install: dist
	$(SYS_PY) tools/install.py install --prefix "$(PREFIX)" --destdir "$(DESTDIR)" --stage build/python \
		$(addprefix --file ,$(INSTALL_FILES))

uninstall:
	$(SYS_PY) tools/install.py uninstall --prefix "$(PREFIX)" --destdir "$(DESTDIR)" $(addprefix --file ,$(INSTALL_FILES))

samples: $(SAMPLE_BINS)
samples/bin/%: samples/%.c samples/sample.h
	@mkdir -p samples/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -pthread $(SAMPLE_LDFLAGS) -o $@ $<
# bound at start-up: lazy binding's first caller is a race of its own (see the sample's header)
samples/bin/uninit_local: SAMPLE_LDFLAGS := -Wl,-z,now
$(patsubst %,samples/bin/%,$(CC_SAMPLES)): samples/bin/%: samples/%.c samples/sample.h $(DETPASS) $(DETCC)
	@mkdir -p samples/bin
	$(DETCC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -pthread -o $@ $<
samples/bin/%.mem: samples/%.c samples/sample.h $(DETPASS) $(DETCC)
	@mkdir -p samples/bin
	$(DETCC) --sched-points=memory -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -pthread -o $@ $<
samples/bin/%: samples/%.cpp samples/sample.h
	@mkdir -p samples/bin
	$(CXX) -std=c++17 -O2 -g $(WARN) -pthread -o $@ $<

testprogs: $(TESTPROGS)
tests/bin/%: tests/programs/%.c
	@mkdir -p tests/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -pthread -o $@ $<
tests/bin/ring_scribble: tests/programs/ring_scribble.c include/det/shm.h
	@mkdir -p tests/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -Iinclude -pthread -o $@ $<
tests/bin/header_site: tests/programs/header_site.h
tests/bin/%: tests/programs/%.cpp
	@mkdir -p tests/bin
	$(CXX) -std=c++20 -O1 -g $(WARN) -pthread -o $@ $<
tests/bin/omp_%: tests/programs/omp_%.c
	@mkdir -p tests/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -fopenmp -o $@ $<
tests/bin/ptrace_%: tests/programs/ptrace_%.c
	@mkdir -p tests/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -static -pthread -o $@ $<
tests/bin/hello_static: tests/programs/hello.c
	@mkdir -p tests/bin
	$(CC) -std=c11 -O1 $(WARN) -static -o $@ $<
# the same spin lock built both ways: detcheck tells them apart (tests/e2e/test_detcheck.py)
tests/bin/detcheck_spin.detcc: tests/programs/detcheck_spin.c $(DETPASS) $(DETCC)
	@mkdir -p tests/bin
	$(DETCC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -pthread -o $@ $<

benches: $(BENCH_BINS)
bench/bin/%: bench/%.c
	@mkdir -p bench/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -pthread -o $@ $<

demo: all
	tools/demo.sh

check: $(SETUP)
	$(PY) tools/gen_events.py --check
	$(VENV)/bin/ruff check store recorder hunt compare replayer tests tools bench gdb-ext tui dap kmod check
	$(PY) tools/layering.py --cc "$(CC)" --lib det "$(RUNTIME_CFLAGS)" $(RUNTIME_SRC) \
		--lib detsup "$(SUP_CFLAGS)" $(SUP_SRC) --lib detiso "$(ISO_CFLAGS)" $(ISO_SRC) \
		--lib detptrace "$(CFLAGS)" ptracer/detptrace.c

test: all check
	$(PY) -m pytest -q -x tests

bench: all
	$(PY) bench/run.py
	$(PY) bench/ptrace.py
	$(MAKE) bench-kmod

# The module is built out of tree in build/kmod against the headers that
# kmod/harness/kernel.sh unpacks into build/kernel (nothing is installed),
# or against KDIR (a real machine: make -B kmod KDIR=/lib/modules/$(uname -r)/build).
KMOD_GUEST_BIN := build/kmod-guest/bin/fuzz build/kmod-guest/bin/killtest build/kmod-guest/bin/handoff \
                  build/kmod-guest/bin/slowpoke
kmod: build/kmod/detsched.ko
build/kmod/detsched.ko: kmod/detsched.c kmod/Kbuild include/det/detsched.h kmod/harness/kernel.sh
	@mkdir -p build/kmod
	cp kmod/detsched.c kmod/Kbuild build/kmod/
	kdir="$(KDIR)"; [ -n "$$kdir" ] || kdir=build/kernel/root/usr/src/linux-headers-$$(kmod/harness/kernel.sh)-amd64; \
		$(MAKE) -s -C "$$kdir" M=$(CURDIR)/build/kmod DET_INCLUDE=$(CURDIR)/include modules
build/kmod-guest/bin/%: kmod/harness/%.c include/det/detsched.h
	@mkdir -p build/kmod-guest/bin
	$(CC) $(CFLAGS) -pthread -o $@ $<

check-kmod: all kmod $(KMOD_GUEST_BIN)
	$(PY) kmod/harness/run.py check

bench-kmod: all kmod $(KMOD_GUEST_BIN)
	$(PY) kmod/harness/run.py bench

package:
	tools/setup.sh --package
	tools/package.sh

package-check: all
	tools/setup.sh --package
	$(PY) -m pytest -q -s tests/package -m package

stress: all
	$(PY) -m pytest -q tests/stress -m stress

fuzz: all
	$(PY) tests/fuzz/fuzz_traces.py --mutations 100000 --gdb-every 1000
	$(PY) tests/fuzz/fuzz_logs.py --mutations 10000

# vsix: the VS Code extension (editor/vscode), packaged by @vscode/vsce from
# npm (pinned by editor/vscode/tools/package-lock.json, installed in build/vsce)
VSCE_DIR := build/vsce
VSIX_SRC := editor/vscode/package.json editor/vscode/extension.js editor/vscode/README.md editor/vscode/.vscodeignore
vsix: build/det-debug.vsix
$(VSCE_DIR)/.installed: editor/vscode/tools/package.json editor/vscode/tools/package-lock.json
	@mkdir -p $(VSCE_DIR)
	cp $^ $(VSCE_DIR)/
	cd $(VSCE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@
build/det-debug.vsix: $(VSCE_DIR)/.installed $(VSIX_SRC)
	cd editor/vscode && $(CURDIR)/$(VSCE_DIR)/node_modules/.bin/vsce package --no-dependencies --skip-license \
		--allow-missing-repository --out $(CURDIR)/$@

clean:
	rm -rf build samples/bin bench/bin tests/bin
