#!/bin/sh
# Issue 15: upstream MCP servers through mcpd, with the official MCP
# TypeScript SDK client (upstream_test.mjs, which starts every mcpd it
# needs).
#
#   sh tests/upstream/run.sh MCPD_BINARY [GROUP...]
#
# `make upstream-test` runs it under scripts/with-redis, so that the redis
# group (two mcpd on one Redis) runs; without MCPD_TEST_REDIS_URL that group
# says SKIP. The last line is "N passed, N failed".
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 MCPD_BINARY [GROUP...]" >&2
	exit 2
fi
bin=$1
shift
dir=$(cd "$(dirname "$0")" && pwd)

if [ ! -x "$bin" ]; then
	echo "FAIL $bin is not an executable"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ ! -d "$dir/node_modules/@modelcontextprotocol/server-everything" ]; then
	echo "== npm ci in $dir (node_modules missing)"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

out=$(mktemp "${TMPDIR:-/tmp}/mcpd-upstream.XXXXXX")
trap 'rm -f "$out"' EXIT
status=0
node "$dir/upstream_test.mjs" --mcpd "$bin" "$@" | tee "$out" || status=$?
# tee hides node's status from a plain sh pipeline: read it from the output.
counts=$(sed -n 's/^upstream_test: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" |
    tail -n 1)
if [ -z "$counts" ]; then
	echo "FAIL upstream_test.mjs printed its summary"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "${counts% *} passed, ${counts#* } failed"
if [ "${counts#* }" -ne 0 ] || [ "${counts% *}" -eq 0 ]; then
	status=1
fi
exit "$status"
