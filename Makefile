# mcpd: `make` builds ./mcpd; `make check` installs what tests need and runs
# every test; `make asan-check` runs the unit tests and the end-to-end suite
# (memory and redis event logs) under ASan/UBSan/LSan.

CC	?= cc
PKGS	 = libevent libcjson hiredis libbsd-overlay
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

BUILD	?= build
OPT	?= -O2
CFLAGS	+= -D_GNU_SOURCE -D__unused="__attribute__((__unused__))" -std=gnu11 -g $(OPT) -Wall -Wextra -Werror -Wshadow \
	   -Wno-unused-parameter -Iinclude $(PKG_CFLAGS) -MMD -MP
LDLIBS	+= $(PKG_LIBS) -lm

SRCS	 = $(filter-out src/main.c,$(wildcard src/*.c))
OBJS	 = $(SRCS:src/%.c=$(BUILD)/%.o)
LIB	 = $(BUILD)/libmcpd.a

UNIT_SRCS = $(wildcard tests/unit/test_*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)

PYTHON	?= python3

.PHONY: all clean check unit e2e e2e-redis sdk-test asan asan-check deps conformance bench

all: mcpd

mcpd: $(BUILD)/main.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(LIB): $(OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: src/%.c | $(BUILD)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD):
	mkdir -p $(BUILD)/unit

$(BUILD)/unit/%: tests/unit/%.c tests/unit/unit.h $(LIB) | $(BUILD)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags check) -Itests/unit \
	    -o $@ $< $(filter %.o,$^) $(LIB) $(LDFLAGS) \
	    $(shell pkg-config --libs check) $(LDLIBS)

# Test code shared by several tests: tests/unit/NAME.c, not test_*.c.
$(BUILD)/unit/%.o: tests/unit/%.c | $(BUILD)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags check) -Itests/unit \
	    -c -o $@ $<

# The event-log behavioural suite runs on every backend.
$(BUILD)/unit/test_eventlog $(BUILD)/unit/test_eventlog_redis: \
    $(BUILD)/unit/eventlog_cases.o

deps:
	sh scripts/install-deps

unit: $(UNIT_BINS)
	@rc=0; for t in $(UNIT_BINS); do echo "== $$t"; $$t || rc=1; done; exit $$rc

e2e: mcpd
	$(PYTHON) tests/e2e/run.py --mcpd ./mcpd

# The same end-to-end suite on the redis event log (a private redis-server).
e2e-redis: mcpd
	sh scripts/with-redis $(PYTHON) tests/e2e/run.py --mcpd ./mcpd

sdk-test: mcpd
	sh tests/sdk/run.sh ./mcpd

check: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) e2e
	$(MAKE) e2e-redis
	$(MAKE) sdk-test

# The sanitizer build lives in its own directory so it never mixes objects
# with the normal one. It is built with clang: gcc's UBSan has no
# float-cast-overflow, and a double from JSON converted out of range is
# exactly the undefined behaviour client input can reach.
ASAN_CC	 = clang
SANITIZE = address,undefined,float-cast-overflow
ASAN_BUILD = $(MAKE) BUILD=build-asan CC=$(ASAN_CC) \
	    OPT="-O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) \
	    -fno-sanitize-recover=undefined,float-cast-overflow" \
	    LDFLAGS="-fsanitize=$(SANITIZE)"
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

asan:
	$(ASAN_BUILD) build-asan/mcpd-asan-link

build-asan/mcpd-asan-link: $(BUILD)/main.o $(LIB)
	$(CC) $(CFLAGS) -o mcpd-asan $^ $(LDFLAGS) $(LDLIBS)
	touch $@

# The unit tests and the end-to-end suite (on both event logs) under the
# sanitizers.
asan-check: asan
	$(ASAN_ENV) $(ASAN_BUILD) unit
	$(ASAN_ENV) $(PYTHON) tests/e2e/run.py --mcpd ./mcpd-asan --sanitized
	$(ASAN_ENV) sh scripts/with-redis $(PYTHON) tests/e2e/run.py \
	    --mcpd ./mcpd-asan --sanitized

conformance: mcpd
	sh scripts/conformance

bench: mcpd
	sh scripts/bench

clean:
	rm -rf build build-asan mcpd mcpd-asan

-include $(wildcard $(BUILD)/*.d $(BUILD)/unit/*.d)
