# bascule -- the front door: make | make run | make test | make bench | make clean
#
#   make                 optimized build/bascule and build/bascule-sim
#   make test            sanitizer build in build/san, then unit + integration tests
#   make run             the demo: bascule-sim + bascule on 127.0.0.1:8080
#   make run-cluster     two bascule instances, one Redis, nginx in front (examples/cluster)
#   make test-tsan       ThreadSanitizer build in build/tsan, then unit + integration tests
#   make bench           benchmarks against nginx and a peer gateway (bench/)
#   make install         binaries, man pages, config and systemd unit (PREFIX=, DESTDIR=)
#   make deb             build/bascule_<version>_<arch>.deb; make image: the container image
#   make fuzz            libFuzzer targets (clang), a short run each
#   SANITIZE=address,undefined   sanitizers for the main build too
#   WERROR=1             warnings are errors (always on in the test build)
#   LTO=                 no link-time optimization (on by default for gcc builds without
#                        sanitizers: about 5% fewer instructions per proxied request)

CC      ?= cc
PKGS    := libuv libcurl json-c yaml-0.1 sqlite3 hiredis libssl libcrypto
CSTD    := -std=c11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wvla -Wformat=2 -Wno-format-nonliteral \
           -Wno-missing-field-initializers
OPT     ?= -O2 -g
SANITIZE ?=
WERROR  ?= 0

# Install the Debian packages on a fresh machine before pkg-config is asked anything.
DEPS_OK := $(shell pkg-config --exists $(PKGS) cmocka 2>/dev/null && \
             test -f /usr/include/http_parser.h && echo yes)
ifneq ($(DEPS_OK),yes)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(info bascule: installing build dependencies (scripts/install-deps))
$(shell scripts/install-deps >&2)
endif
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser -lpthread -lm

ifeq ($(WERROR),1)
WARN += -Werror
endif
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

# Link-time optimization for the shipped build: the request path crosses many small files
# (one concept per file), and inlining across them is where LTO pays. Sanitizer builds, and
# compilers other than gcc, build without it; LTO= turns it off.
CC_IS_GCC := $(shell $(CC) --version 2>/dev/null | grep -q 'Free Software Foundation' && echo yes)
ifeq ($(SANITIZE)$(CC_IS_GCC),yes)
LTO ?= -flto=auto
endif
# With LTO the code is generated at link time, so the link gets the optimization flags, and
# the archives are written by gcc-ar (the LTO plugin indexes their symbols).
LTO_LINK := $(if $(LTO),$(LTO) $(OPT))
AR_CMD := $(if $(LTO),gcc-ar,ar)

CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) $(LTO) $(SAN_FLAGS) -Isrc -Isim $(PKG_CFLAGS) -MMD -MP $(OBJ_DEFS) $(EXTRA_CFLAGS)
LDFLAGS_ALL = $(SAN_FLAGS) $(LTO_LINK) $(EXTRA_LDFLAGS) $(PKG_LIBS)

BUILD   ?= build
LIB_SRC := $(sort $(wildcard src/*/*.c))
SIM_SRC := $(sort $(wildcard sim/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
# Helpers the unit tests share (the request harness): an archive, linked into every test.
UNIT_HELPER_SRC := $(sort $(wildcard tests/unit/harness/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
SIM_OBJ := $(SIM_SRC:%.c=$(BUILD)/obj/%.o)
SIM_LIB_OBJ := $(filter-out %/sim/main.o,$(SIM_OBJ))
MAIN_OBJ := $(BUILD)/obj/src/main.o
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_HELPER_OBJ := $(UNIT_HELPER_SRC:%.c=$(BUILD)/obj/%.o)

.PHONY: all run test test-unit test-integration bench fuzz clean check-layering format \
        fuzz-replay-bins test-fuzz-replay
.DEFAULT_GOAL := all

all: $(BUILD)/bascule $(BUILD)/bascule-sim

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/libbascule.a: $(LIB_OBJ)
	@rm -f $@
	$(AR_CMD) rcs $@ $^

$(BUILD)/bascule: $(MAIN_OBJ) $(BUILD)/libbascule.a
	$(CC) -o $@ $^ $(LDFLAGS_ALL)

$(BUILD)/libsim.a: $(SIM_LIB_OBJ)
	@rm -f $@
	$(AR_CMD) rcs $@ $^

$(BUILD)/bascule-sim: $(BUILD)/obj/sim/main.o $(BUILD)/libsim.a $(BUILD)/libbascule.a
	$(CC) -o $@ $^ $(LDFLAGS_ALL)

$(BUILD)/libunit.a: $(UNIT_HELPER_OBJ)
	@rm -f $@
	$(AR_CMD) rcs $@ $^

# Unit tests link the archives: only the objects a test uses are pulled in.
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libunit.a $(BUILD)/libsim.a $(BUILD)/libbascule.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libunit.a $(BUILD)/libsim.a $(BUILD)/libbascule.a \
	  $(LDFLAGS_ALL) -lcmocka

unit-bins: $(UNIT_BIN)

# ---- tests: a sanitizer build of everything in build/san -----------------------------------
SAN_MAKE = $(MAKE) --no-print-directory BUILD=build/san OPT="-O1 -g" SANITIZE=address,undefined \
           WERROR=1 EXTRA_CFLAGS=-DBSC_UNIT_TEST

test: check-layering
	$(SAN_MAKE) all unit-bins
	$(MAKE) --no-print-directory test-unit test-integration test-fuzz-replay

test-unit:
	@scripts/run-unit build/san/tests

# Every test and hook is bounded (tests/lib/bounded_test.mjs; not --test-timeout, which in
# Node 20 bounds each file as a whole): a hang fails its test instead of holding the run.
test-integration: tests/node_modules/.package-lock.json
	cd tests && BASCULE_BIN=$(CURDIR)/build/san/bascule BASCULE_SIM_BIN=$(CURDIR)/build/san/bascule-sim \
	  node --test --test-concurrency=2 integration/ e2e/

# The same suites beside CPU-burning loops: timing assumptions in tests fail here.
.PHONY: test-stress
test-stress: tests/node_modules/.package-lock.json
	$(SAN_MAKE) all unit-bins
	+@scripts/test-stress

# ThreadSanitizer (gcc; it cannot be combined with ASan, hence its own build): every unit test
# and the integration suites; any report fails (tests/tsan.supp: library internals only).
TSAN_MAKE = $(MAKE) --no-print-directory BUILD=build/tsan CC=gcc OPT="-O1 -g" SANITIZE=thread \
            WERROR=1 EXTRA_CFLAGS=-DBSC_UNIT_TEST
.PHONY: test-tsan
test-tsan: tests/node_modules/.package-lock.json
	$(TSAN_MAKE) all unit-bins
	@scripts/test-tsan build/tsan

tests/node_modules/.package-lock.json: tests/package.json tests/package-lock.json
	cd tests && npm ci --no-audit --no-fund
	@touch $@

check-layering:
	@scripts/check-layering
	@scripts/check-standalone
	@scripts/check-writers

# ---- demo, benchmarks, fuzzing --------------------------------------------------------------
run: all
	@scripts/demo

.PHONY: run-cluster
run-cluster: all
	@scripts/run-cluster

bench: all
	@bench/run

fuzz:
	@scripts/fuzz

# Every committed fuzz input (tests/fuzz/corpus/NAME/) replayed once under the test build's
# sanitizers: each target linked with a plain main() (tests/fuzz/replay_main.c), no clang.
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz-replay/%)

$(BUILD)/fuzz-replay/%: tests/fuzz/%.c $(BUILD)/obj/tests/fuzz/replay_main.o $(BUILD)/libbascule.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(filter %.o,$^) $(BUILD)/libbascule.a $(LDFLAGS_ALL)

# The differential response-reader target also links the reference reader (http-parser based).
$(BUILD)/fuzz-replay/fuzz_h1_reader_diff: $(BUILD)/obj/tests/unit/harness/h1_resp_ref.o
# ... and so does the request reader's (tests/unit/harness/h1_req_ref.c).
$(BUILD)/fuzz-replay/fuzz_h1_request_diff: $(BUILD)/obj/tests/unit/harness/h1_req_ref.o
# ... and the request checks' (the token-by-token checks, tests/unit/harness/json_check_ref.c).
$(BUILD)/fuzz-replay/fuzz_json_check_diff: $(BUILD)/obj/tests/unit/harness/json_check_ref.o
# ... and the usage read's (bsc_json_members on each object, tests/unit/harness/openai_usage_ref.c).
$(BUILD)/fuzz-replay/fuzz_usage_diff: $(BUILD)/obj/tests/unit/harness/openai_usage_ref.o

fuzz-replay-bins: $(FUZZ_REPLAY_BIN)

test-fuzz-replay:
	$(SAN_MAKE) fuzz-replay-bins
	@scripts/fuzz --replay build/san/fuzz-replay

# Formats only the files named (make format FILES="src/core/buf.c src/core/buf.h"): the tree
# is not mass-reformatted, so that concurrent branches still merge. Check without writing:
# clang-format --dry-run FILE.
format:
	@if [ -z "$(FILES)" ]; then \
	    echo 'usage: make format FILES="a.c b.h"  (formats only those files, with .clang-format)'; \
	    exit 2; fi
	clang-format -i $(FILES)

clean:
	rm -rf build

include mk/package.mk

-include $(LIB_OBJ:.o=.d) $(SIM_OBJ:.o=.d) $(UNIT_HELPER_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_BIN:=.d) $(FUZZ_REPLAY_BIN:=.d)
