# mcpd: `make` builds ./mcpd; `make check` installs what tests need and runs
# every test; `make asan-check` runs the unit tests and the end-to-end suite
# (memory and redis event logs) under ASan/UBSan/LSan.

CC	?= cc
PKGS	 = libevent libevent_openssl libcjson hiredis libbsd-overlay libssl \
	   libcrypto yaml-0.1
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

BUILD	?= build
OPT	?= -O2
CFLAGS	+= -D_GNU_SOURCE -D__unused="__attribute__((__unused__))" -std=gnu11 -g $(OPT) -Wall -Wextra -Werror -Wshadow -Wwrite-strings \
	   -Wno-unused-parameter -Iinclude $(PKG_CFLAGS) -MMD -MP
LDLIBS	+= $(PKG_LIBS) -lm

# src/ has a folder per layer (docs/architecture.md); file names are unique
# across them, so the objects stay side by side in $(BUILD).
SRCDIRS	 = core conf http session mcp providers upstream openapi auth eventlog \
	   util
vpath %.c $(SRCDIRS:%=src/%)
SRCS	 = $(filter-out src/core/main.c,$(wildcard $(SRCDIRS:%=src/%/*.c)))
OBJS	 = $(patsubst %.c,$(BUILD)/%.o,$(notdir $(SRCS)))
LIB	 = $(BUILD)/libmcpd.a

UNIT_SRCS = $(wildcard tests/unit/test_*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)

PYTHON	?= python3

# Where `make install` puts things; DESTDIR prefixes every path (staging).
PREFIX	?= /usr/local
SBINDIR	?= $(PREFIX)/sbin
MANDIR	?= $(PREFIX)/share/man
DOCDIR	?= $(PREFIX)/share/doc/mcpd
SYSCONFDIR ?= /etc
UNITDIR	?= $(PREFIX)/lib/systemd/system

.PHONY: all clean callgraph check test test-e2e install install-check unit e2e e2e-redis redis-ops-test redis-cluster-test sdk-test cluster-test upstream-test openapi-test asan asan-check deps conformance bench \
	fuzz fuzz-replay fuzz-merge fuzz-build fuzz-bins

all: mcpd

mcpd: $(BUILD)/main.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(LIB): $(OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c | $(BUILD)
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

# The tests of sessions and of what lives on them run in the memory-log
# world of world.c; those that write a configuration parse it through
# confparse.c.
WORLD_TESTS = test_auth test_call test_dispatch test_lease test_session \
	test_stream test_task test_view
$(WORLD_TESTS:%=$(BUILD)/unit/%): $(BUILD)/unit/world.o
CONF_TESTS = test_auth test_conf test_conf_catalog test_dispatch \
	test_exec_args test_exec_conf test_limit test_openapi test_upstream
$(CONF_TESTS:%=$(BUILD)/unit/%): $(BUILD)/unit/confparse.o

# The event-log behavioural suite runs on every backend.
$(BUILD)/unit/test_eventlog $(BUILD)/unit/test_eventlog_redis: \
    $(BUILD)/unit/eventlog_cases.o

deps:
	sh scripts/install-deps

# mcpd.conf(5) comes from the conf table, as mcpd.conf.example does.
$(BUILD)/mcpd.conf.5: mcpd
	./mcpd -M > $@

# The binary, both manual pages, the systemd unit (its paths for this
# PREFIX), the example configuration (and a configuration to start from,
# unless one is there already).
install: mcpd $(BUILD)/mcpd.conf.5
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR) \
	    $(DESTDIR)$(SYSCONFDIR)/mcpd
	install -m 755 mcpd $(DESTDIR)$(SBINDIR)/mcpd
	install -m 644 docs/mcpd.8 $(DESTDIR)$(MANDIR)/man8/mcpd.8
	install -m 644 $(BUILD)/mcpd.conf.5 $(DESTDIR)$(MANDIR)/man5/mcpd.conf.5
	install -m 644 mcpd.conf.example $(DESTDIR)$(DOCDIR)/mcpd.conf.example
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -m 644 docs/*.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/local/sbin/|$(SBINDIR)/|g' \
	    -e 's|/etc/mcpd/|$(SYSCONFDIR)/mcpd/|g' conf/mcpd.service \
	    > $(DESTDIR)$(UNITDIR)/mcpd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/mcpd.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/mcpd/mcpd.conf ] || \
	    install -m 644 mcpd.conf.example $(DESTDIR)$(SYSCONFDIR)/mcpd/mcpd.conf

# Installs into a staging directory and runs what was installed.
install-check: mcpd
	sh tests/install/smoke.sh

unit: $(UNIT_BINS)
	@rc=0; for t in $(UNIT_BINS); do echo "== $$t"; $$t || rc=1; done; exit $$rc

e2e: mcpd
	$(PYTHON) tests/e2e/run.py --mcpd ./mcpd

# The same end-to-end suite on the redis event log (a private redis-server).
e2e-redis: mcpd
	sh scripts/with-redis $(PYTHON) tests/e2e/run.py --mcpd ./mcpd

# Issue 24, Redis as operators run it: the resume suite and the heart of
# the backpressure suite on each way of reaching Redis (a password in the
# URL, the ACL user of docs/deployment.md with a password file, TLS, a
# unix socket: scripts/with-redis MODE), then tests/redis/ (refusals and
# their recovery, TLS checks, Sentinel failovers under load).
REDIS_OPS_MODES = requirepass acl tls unix
REDIS_OPS_E2E = -k test_resume \
	-k test_backpressure::test_slow_request_consumer_blocks_producer \
	-k test_backpressure::test_slow_standalone_consumer_is_disconnected \
	-k test_backpressure::test_cut_with_unacknowledged_events_resumes \
	-k test_backpressure::test_close_policy_client_away_too_long_gets_410_trimmed \
	-k test_backpressure::test_never_reading_request_client_memory_bounded_block
redis-ops-test: mcpd
	@for m in $(REDIS_OPS_MODES); do \
	    sh scripts/with-redis --$$m $(PYTHON) tests/e2e/run.py \
	        --mcpd ./mcpd $(REDIS_OPS_E2E) || exit 1; \
	done
	$(PYTHON) tests/redis/run.py --mcpd ./mcpd

# The SDK clients; the cut-and-resume test (cut_test.mjs) also on Redis.
sdk-test: mcpd
	sh scripts/with-redis sh tests/sdk/run.sh ./mcpd

# Issue 15: upstream MCP servers (server-everything, server-filesystem from
# npm) through mcpd, driven by the official SDK client; tests/upstream/.
# Under with-redis for its two-instances group.
upstream-test: mcpd
	sh scripts/with-redis sh tests/upstream/run.sh ./mcpd

# Issue 28: REST APIs as tools (openapi blocks) against Prism from npm and
# a server of the test's own, driven by the official SDK client;
# tests/openapi/. Under with-redis for its resume group.
openapi-test: mcpd
	sh scripts/with-redis sh tests/openapi/run.sh ./mcpd

# Issue 12: nginx (conf/nginx.conf) in front of three mcpd on one private
# redis-server; tests/cluster/.
cluster-test: mcpd
	sh scripts/with-redis $(PYTHON) tests/cluster/run.py --mcpd ./mcpd

# Issue 25, Redis Cluster: on one cluster of three primaries and three
# replicas with passwords (scripts/with-redis --cluster),
# tests/redis/test_cluster.py (sessions spread, resharding and failovers
# under load), the e2e resume, backpressure, task and limits suites (a
# limit's keys on the node of their own slot), then tests/cluster/; and
# the resume suite on such a cluster over TLS. Beside the other suites
# of make check: its nodes' ports and bus ports are drawn below every
# port the others draw (scripts/free-port --cluster).
REDIS_CLUSTER_E2E = -k test_resume:: -k test_backpressure:: -k test_tasks:: \
	-k test_limits::
redis-cluster-test: mcpd
	sh scripts/with-redis --cluster sh -c '\
	    $(PYTHON) tests/redis/run.py --mcpd ./mcpd -k test_cluster && \
	    $(PYTHON) tests/e2e/run.py --mcpd ./mcpd $(REDIS_CLUSTER_E2E) && \
	    $(PYTHON) tests/cluster/run.py --mcpd ./mcpd'
	sh scripts/with-redis --cluster-tls $(PYTHON) tests/e2e/run.py \
	    --mcpd ./mcpd -k test_resume::

# The only cycle among src/ files allowed: a session, its streams, their
# calls (docs/architecture.md, "Who calls whom"); and the layer rules
# between src/ folders, written down in scripts/callgraph.rules
# (`scripts/callgraph -f` prints the graph between folders).
callgraph: all
	sh scripts/callgraph -c 'call session stream' -f

# `make check`: the build and the call graph, then every suite, CHECK_JOBS
# of them at once (issue 29). They share nothing: each starts its daemons
# on ports the kernel picks (listen 127.0.0.1:0) or free_port() draws
# below the kernel's ephemeral range (tests/e2e/mcpd_harness.py), from a
# slice of that range of the suite's own (MCPD_TEST_PORT_LANE), its own
# redis-server (scripts/with-redis, private_redis) and work directories
# from mktemp; the one fixed path, /dev/log, is taken in turn under a lock
# (tests/e2e/test_audit.py). Each suite writes to $(CHECK_LOGS)/SUITE.log,
# printed whole when it ends (so the "N passed, N failed, N skipped" lines
# .ci/run adds up are never interleaved); every suite runs even when one
# fails (-k), and check fails if any did. The longest go first.
CHECK_JOBS ?= 3
CHECK_LOGS ?= $(BUILD)/check
CHECK_SUITES = e2e e2e-redis redis-ops-test redis-cluster-test \
	cluster-test upstream-test openapi-test sdk-test unit install-check

check: deps
	$(MAKE) -j$(CHECK_JOBS) all
	$(MAKE) callgraph
	@rm -rf $(CHECK_LOGS) && mkdir -p $(CHECK_LOGS)
	@$(MAKE) --no-print-directory -k -j$(CHECK_JOBS) \
	    $(CHECK_SUITES:%=check-suite-%); rc=$$?; \
	echo "==> make check: $$(cat $(CHECK_LOGS)/*.result | tr '\n' ' ')"; \
	exit $$rc

check-suite-%: mcpd
	@log=$(CHECK_LOGS)/$*.log; t0=$$(date +%s); \
	echo "==> $* started ($$log)"; \
	lane=0; for s in $(CHECK_SUITES); do \
	    [ "$$s" = "$*" ] && break; lane=$$((lane + 1)); done; \
	MCPD_TEST_PORT_LANE=$$lane \
	MCPD_TEST_PORT_LANES=$(words $(CHECK_SUITES)) \
	$(MAKE) --no-print-directory $* >$$log 2>&1; rc=$$?; \
	t=$$(( $$(date +%s) - t0 )); \
	if [ $$rc = 0 ]; then r="$*: ok in $${t}s"; \
	else r="$*: FAILED (exit $$rc) in $${t}s"; fi; \
	echo "$$r;" >$(CHECK_LOGS)/$*.result; \
	flock $(CHECK_LOGS)/.print sh -c \
	    'echo "==> $$1 (whole output)"; cat "$$2"; echo "==> $$3"' \
	    sh "$*" "$$log" "$$r"; \
	exit $$rc

# What a developer runs before each commit, in about a minute on a 2-core
# machine: the build, the call graph, the unit tests and the
# quick part of the end-to-end suite on the memory log (TEST_E2E: the
# wire contract, sessions, streams and resume; the slow tests of outages,
# drains, upstreams, exec and the Redis backend are left to make check).
TEST_E2E = $(TEST_E2E_MODULES:%=-k %::)
TEST_E2E_MODULES = test_wire test_session test_streams test_resume \
	test_sse test_http test_tools
# The unit tests and that part of e2e run side by side, each one's output
# printed whole when it ends (-O).
test:
	$(MAKE) -j$(CHECK_JOBS) all
	$(MAKE) callgraph
	$(MAKE) -j$(CHECK_JOBS) $(UNIT_BINS)
	$(MAKE) --no-print-directory -j2 -O unit test-e2e

test-e2e: mcpd
	$(PYTHON) tests/e2e/run.py --mcpd ./mcpd $(TEST_E2E)

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
# sanitizers, and tests/redis/'s passwords, ACL and TLS (the link layer's
# TLS paths).
asan-check: asan
	$(ASAN_ENV) $(ASAN_BUILD) unit
	$(ASAN_ENV) $(PYTHON) tests/e2e/run.py --mcpd ./mcpd-asan --sanitized
	$(ASAN_ENV) sh scripts/with-redis $(PYTHON) tests/e2e/run.py \
	    --mcpd ./mcpd-asan --sanitized
	$(ASAN_ENV) sh scripts/with-redis sh tests/upstream/run.sh ./mcpd-asan
	$(ASAN_ENV) sh scripts/with-redis sh tests/openapi/run.sh ./mcpd-asan
	$(ASAN_ENV) $(PYTHON) tests/redis/run.py --mcpd ./mcpd-asan --sanitized \
	    -k test_redis_access

# libFuzzer harnesses (tests/fuzz/, see tests/fuzz/README.md). They need
# clang: the library is built again in build-fuzz/ with coverage and the
# sanitizers, and each harness is linked with libFuzzer.
FUZZ_NAMES	 = cursor sse jsonrpc conf pagination http jwt openapi
FUZZ_SECONDS	?= 60
FUZZ_REPLAY_SECONDS ?= 10
FUZZ_FLAGS	?= -timeout=30
FUZZ_BUILD = $(MAKE) BUILD=build-fuzz CC=clang OPT="-O1 -fno-omit-frame-pointer \
	    -fsanitize=fuzzer-no-link,address,undefined \
	    -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=fuzzer,address,undefined"
FUZZ_ENV = ASAN_OPTIONS=detect_leaks=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
FUZZ_COMMON = $(BUILD)/fuzz/fuzz.o $(BUILD)/fuzz/refjson.o

fuzz-build:
	$(FUZZ_BUILD) fuzz-bins

fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)

.PRECIOUS: $(BUILD)/fuzz/%.o

$(BUILD)/fuzz/%.o: tests/fuzz/%.c | $(BUILD)
	@mkdir -p $(BUILD)/fuzz
	$(CC) $(CFLAGS) -Itests/fuzz -c -o $@ $<

$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/fuzz_%.o $(FUZZ_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# Each harness for FUZZ_SECONDS, starting from its committed corpus
# (tests/fuzz/corpus/NAME, only read); what it finds goes to
# build-fuzz/corpus/NAME, crashes to build-fuzz/artifacts/.
fuzz: fuzz-build
	@rc=0; for n in $(FUZZ_NAMES); do \
	    echo "== fuzz_$$n for $(FUZZ_SECONDS) s"; \
	    mkdir -p build-fuzz/corpus/$$n build-fuzz/artifacts; \
	    case $$n in pagination) d=jsonrpc;; *) d=$$n;; esac; \
	    dict=; [ -f tests/fuzz/$$d.dict ] && dict=-dict=tests/fuzz/$$d.dict; \
	    $(FUZZ_ENV) build-fuzz/fuzz/fuzz_$$n $(FUZZ_FLAGS) $$dict \
	        -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=build-fuzz/artifacts/$$n- \
	        build-fuzz/corpus/$$n tests/fuzz/corpus/$$n || rc=1; \
	done; exit $$rc

# CI: every committed input once (a regression suite: crash-* entries are
# bugs that were fixed), then each harness for FUZZ_REPLAY_SECONDS.
fuzz-replay: fuzz-build
	@mkdir -p build-fuzz/artifacts; rc=0; for n in $(FUZZ_NAMES); do \
	    log=build-fuzz/replay-$$n.log; \
	    if $(FUZZ_ENV) build-fuzz/fuzz/fuzz_$$n $(FUZZ_FLAGS) \
	        -artifact_prefix=build-fuzz/artifacts/$$n- \
	        tests/fuzz/corpus/$$n/* >$$log 2>&1; then \
	        echo "== fuzz_$$n: $$(grep -c '^Executed' $$log) inputs of" \
	            "tests/fuzz/corpus/$$n pass"; \
	    else \
	        echo "== fuzz_$$n: FAILED on $$(grep '^Running:' $$log | \
	            tail -1 | cut -d' ' -f2)"; \
	        grep -v '^Running:\|^Executed' $$log | tail -40; rc=1; \
	    fi; \
	done; [ $$rc = 0 ] || { echo "fuzz-replay: a committed input fails"; \
	    exit 1; }
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_REPLAY_SECONDS)

# Folds what build-fuzz/corpus/NAME found into the committed corpus,
# keeping only inputs that reach code it does not (edges, not counts).
fuzz-merge: fuzz-build
	@for n in $(FUZZ_NAMES); do \
	    mkdir -p build-fuzz/corpus/$$n; \
	    build-fuzz/fuzz/fuzz_$$n -merge=1 -use_counters=0 \
	        tests/fuzz/corpus/$$n build-fuzz/corpus/$$n || exit 1; \
	done

conformance: mcpd
	sh scripts/conformance

# Every comparison of README's performance table (scripts/bench-all):
# `make bench BENCH_ARGS="--rounds 5"`; BENCH_ARGS=--quick checks the
# chain in a few minutes.
BENCH_ARGS ?=
bench: mcpd
	bash scripts/bench-all $(BENCH_ARGS)

clean:
	rm -rf build build-asan build-fuzz mcpd mcpd-asan

-include $(wildcard $(BUILD)/*.d $(BUILD)/unit/*.d $(BUILD)/fuzz/*.d)
