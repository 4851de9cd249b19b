#!/bin/sh
# Issue 15: upstream MCP servers through mcpd, with the official MCP
# TypeScript SDK client (upstream_test.mjs, which starts every mcpd it
# needs).
#
#   sh tests/upstream/run.sh MCPD_BINARY [GROUP...]
#
# `make upstream-test` runs it under scripts/with-redis, so that the redis
# group (two mcpd on one Redis) runs; without MCPD_TEST_REDIS_URL that group
# is skipped (a failure with MCPD_TEST_NO_SKIP=1). The last line is
# "N passed, N failed, N skipped".
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
	echo "0 passed, 1 failed, 0 skipped"
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
n='\([0-9]*\)'
# shellcheck disable=SC2046 # the three numbers, or nothing
set -- $(sed -n "s/^upstream_test: $n passed, $n failed, $n skipped\$/\1 \2 \3/p" \
    "$out" | tail -n 1)
if [ $# -ne 3 ]; then
	echo "FAIL upstream_test.mjs printed its summary"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
echo "$1 passed, $2 failed, $3 skipped"
if [ "$2" -ne 0 ] || [ "$1" -eq 0 ]; then
	status=1
fi
exit "$status"
