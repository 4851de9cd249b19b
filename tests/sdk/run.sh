#!/bin/sh
# Run the official MCP TypeScript SDK clients against a real mcpd: the v1
# SDK on sessions (client_test.mjs), the v2 client on the stateless
# 2026-07-28 path (client_v2_test.mjs), and the v2 client with the tasks
# extension package (client_v2_tasks_test.mjs); both on two endpoints with
# their own tools and scopes (endpoints_test.mjs). Then the v1 client with
# OpenTelemetry's API context against a daemon that exports spans to the
# test's own receiver (otel_test.mjs). Then the v1 SDK's
# cut-and-resume with events in flight (cut_test.mjs) against a daemon per
# retention, on the memory log and, when MCPD_TEST_REDIS_URL is set
# (scripts/with-redis), on Redis.
#
#   sh tests/sdk/run.sh MCPD_BINARY
#
# Starts MCPD_BINARY on a free loopback port (listen 127.0.0.1:0; the port is
# read from its "listening on 127.0.0.1:PORT" log line), runs the scripts
# against it, stops it with SIGTERM and exits with the test's status.  The
# last line is "N passed, N failed, N skipped" (the client's checks plus
# this script's own: each daemon started, each daemon stopped cleanly).
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 MCPD_BINARY" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/$1 ;;
esac
dir=$(cd "$(dirname "$0")" && pwd)

if [ ! -x "$bin" ]; then
	echo "FAIL $bin is not an executable"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
if ! command -v node >/dev/null 2>&1; then
	echo "FAIL node not found (run scripts/install-deps)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
if [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ] ||
    [ ! -d "$dir/node_modules/@modelcontextprotocol/client" ] ||
    [ ! -d "$dir/node_modules/@modelcontextprotocol/ext-tasks" ] ||
    [ ! -d "$dir/node_modules/@opentelemetry/context-async-hooks" ]; then
	echo "== npm ci in $dir (node_modules missing)"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-sdk.XXXXXX")
pid=
passed=0
failed=0
skipped=0

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ok() {
	passed=$((passed + 1))
	echo "ok   $1"
}
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
}
show_log() {
	echo "# --- mcpd stderr (last 40 lines) ---"
	tail -n 40 "$tmp/mcpd.log" | sed 's/^/# /'
}

# Starts the daemon on $tmp/mcpd.conf; sets pid and port. Returns 1 (with
# the log shown) when it did not say where it listens within 30 s.
start_mcpd() {
	"$bin" -c "$tmp/mcpd.conf" 2>"$tmp/mcpd.log" &
	pid=$!
	port=
	i=0
	while [ $i -lt 300 ]; do
		port=$(sed -n \
		    's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' \
		    "$tmp/mcpd.log" | head -n 1)
		[ -n "$port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	if [ -z "$port" ]; then
		fail "mcpd started and logged 'listening on 127.0.0.1:PORT'"
		show_log
		return 1
	fi
	ok "mcpd started, listening on 127.0.0.1:$port"
}

# Stops the daemon: SIGTERM, then at most 5 s for it to exit. Shows its
# log when anything failed so far.
stop_mcpd() {
	kill -TERM "$pid" 2>/dev/null || true
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "mcpd exits within 5 s of SIGTERM"
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		status=1
	else
		rc=0
		wait "$pid" || rc=$?
		# 0: clean exit; 143: killed by the SIGTERM itself (no
		# handler yet).
		if [ "$rc" -eq 0 ] || [ "$rc" -eq 143 ]; then
			ok "mcpd stopped on SIGTERM (exit $rc)"
		else
			fail "mcpd stopped on SIGTERM (exit $rc)"
			status=1
		fi
	fi
	pid=
	if [ "$status" -ne 0 ]; then
		show_log
		[ "$failed" -gt 0 ] || failed=1
	fi
}

cat >"$tmp/mcpd.conf" <<EOF
# written by tests/sdk/run.sh
listen 127.0.0.1:0
endpoint /mcp
eventlog memory
builtin_tools on
fixtures conformance
backpressure_standalone close
sse_high_watermark 65536
slow_consumer_grace_ms 300
stream_maxlen 100000
EOF

status=0
if ! start_mcpd; then
	echo "$passed passed, $failed failed, $skipped skipped"
	exit 1
fi

# One test file (its arguments follow the URL): its output, and its
# "NAME: N passed, N failed, N skipped" summary (tests/js/lib.mjs) added to
# the counts (tee hides node's status from a plain sh pipeline).
run_client() {
	name=$1
	shift
	node "$dir/$name.mjs" "http://127.0.0.1:$port/mcp" "$@" |
	    tee "$tmp/$name.out" || status=$?
	n='\([0-9]*\)'
	# shellcheck disable=SC2046 # the three numbers, or nothing
	set -- $(sed -n \
	    "s/^$name: $n passed, $n failed, $n skipped\$/\1 \2 \3/p" \
	    "$tmp/$name.out" | tail -n 1)
	if [ $# -eq 3 ]; then
		passed=$((passed + $1))
		failed=$((failed + $2))
		skipped=$((skipped + $3))
		if [ "$2" -ne 0 ] || [ "$1" -eq 0 ]; then
			status=1
		fi
	else
		fail "$name.mjs printed its summary"
		status=1
	fi
}
run_client client_test
run_client client_v2_test
run_client client_v2_tasks_test
stop_mcpd

# Endpoints (issue 26, endpoints_test.mjs): two endpoints with their own
# tools and scopes, static tokens from a token_file (carol has both scopes,
# alice one).
carol=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
alice=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
{
	printf '%s carol team-echo team-fixtures\n' \
	    "$(printf %s "$carol" | sha256sum | cut -d' ' -f1)"
	printf '%s alice team-echo\n' \
	    "$(printf %s "$alice" | sha256sum | cut -d' ' -f1)"
} >"$tmp/tokens"
cat >"$tmp/mcpd.conf" <<EOF
# written by tests/sdk/run.sh
listen 127.0.0.1:0
endpoint /mcp
eventlog memory
builtin_tools on
fixtures conformance
drain_delay 0
auth {
    resource https://mcpd.test/mcp
    authorization_server https://auth.mcpd.test
    token_file $tmp/tokens
}
endpoint /mcp/echo {
    tools echo
    prompts deny *
    resources deny *
    scopes team-echo
}
endpoint /mcp/fixtures {
    tools test_*
    scopes team-fixtures
}
EOF
if start_mcpd; then
	run_client endpoints_test "$carol" "$alice"
	stop_mcpd
else
	status=1
fi

# Issue 27 (otel_test.mjs): the SDK client with OpenTelemetry's API
# context; mcpd exports to the script's own OTLP receiver, on a port
# picked here.
otelport=$(node -e 'const s=require("net").createServer();
s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();})')
cat >"$tmp/mcpd.conf" <<EOF
# written by tests/sdk/run.sh
listen 127.0.0.1:0
endpoint /mcp
eventlog memory
builtin_tools on
drain_delay 0
otel_endpoint http://127.0.0.1:$otelport
otel_interval_ms 50
EOF
if start_mcpd; then
	run_client otel_test "$otelport"
	stop_mcpd
else
	status=1
fi

# Events in flight at a cut (issue 22, cut_test.mjs): a `stream` call of
# 160 events cut early, in the middle and late under block, with
# stream_maxlen 32 and 64 (the window half of it) and, cut once, with the
# default retention. The client reconnects after sse_retry_ms (500): time
# enough for a producer that ran a window past what was written to have
# the client's next event trimmed. drain_delay 0: nothing to drain, so
# each daemon exits at once on SIGTERM.
logs=memory
if [ -n "${MCPD_TEST_REDIS_URL:-}" ]; then
	logs="memory $MCPD_TEST_REDIS_URL"
fi
for log in $logs; do
	for maxlen in 32 64 default; do
		cat >"$tmp/mcpd.conf" <<EOF
# written by tests/sdk/run.sh
listen 127.0.0.1:0
endpoint /mcp
eventlog $log
builtin_tools on
backpressure_request block
sse_retry_ms 500
drain_delay 0
EOF
		cuts="5 80 150"
		if [ "$maxlen" = default ]; then
			cuts=80
		else
			echo "stream_maxlen $maxlen" >>"$tmp/mcpd.conf"
		fi
		start_mcpd || { status=1; continue; }
		# shellcheck disable=SC2086 # one argument per cut
		run_client cut_test "${log%%://*} stream_maxlen $maxlen" 160 \
		    $cuts
		stop_mcpd
	done
done

echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
