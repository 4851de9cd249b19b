#!/bin/sh
# Run the official MCP TypeScript SDK clients against a real mcpd: the v1
# SDK on sessions (client_test.mjs), the v2 client on the stateless
# 2026-07-28 path (client_v2_test.mjs), and the v2 client with the tasks
# extension package (client_v2_tasks_test.mjs).
#
#   sh tests/sdk/run.sh MCPD_BINARY
#
# Starts MCPD_BINARY on a free loopback port (listen 127.0.0.1:0; the port is
# read from its "listening on 127.0.0.1:PORT" log line), runs the scripts
# against it, stops it with SIGTERM and exits with the test's status.  The
# last line is "N passed, N failed" (the client's checks plus this script's
# own: daemon started, daemon stopped cleanly).
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
	echo "0 passed, 1 failed"
	exit 1
fi
if ! command -v node >/dev/null 2>&1; then
	echo "FAIL node not found (run scripts/install-deps)"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ] ||
    [ ! -d "$dir/node_modules/@modelcontextprotocol/client" ] ||
    [ ! -d "$dir/node_modules/@modelcontextprotocol/ext-tasks" ]; then
	echo "== npm ci in $dir (node_modules missing)"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-sdk.XXXXXX")
pid=
passed=0
failed=0

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

"$bin" -c "$tmp/mcpd.conf" 2>"$tmp/mcpd.log" &
pid=$!

# Wait (at most 30 s) for the daemon to say where it listens.
port=
i=0
while [ $i -lt 300 ]; do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' \
	    "$tmp/mcpd.log" | head -n 1)
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
if [ -z "$port" ]; then
	fail "mcpd started and logged 'listening on 127.0.0.1:PORT'"
	show_log
	echo "$passed passed, $failed failed"
	exit 1
fi
ok "mcpd started, listening on 127.0.0.1:$port"

status=0
# One test file: its output, and its "NAME: N passed, N failed" summary
# added to the counts (tee hides node's status from a plain sh pipeline).
run_client() {
	node "$dir/$1.mjs" "http://127.0.0.1:$port/mcp" | tee "$tmp/$1.out" ||
	    status=$?
	counts=$(sed -n "s/^$1: \\([0-9]*\\) passed, \\([0-9]*\\) failed\$/\\1 \\2/p" \
	    "$tmp/$1.out" | tail -n 1)
	if [ -n "$counts" ]; then
		passed=$((passed + ${counts% *}))
		failed=$((failed + ${counts#* }))
		if [ "${counts#* }" -ne 0 ] || [ "${counts% *}" -eq 0 ]; then
			status=1
		fi
	else
		fail "$1.mjs printed its summary"
		status=1
	fi
}
run_client client_test
run_client client_v2_test
run_client client_v2_tasks_test

# Stop the daemon: SIGTERM, then at most 5 s for it to exit.
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
	# 0: clean exit; 143: killed by the SIGTERM itself (no handler yet).
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
echo "$passed passed, $failed failed"
exit "$status"
