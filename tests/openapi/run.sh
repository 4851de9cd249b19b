#!/bin/sh
# Issue 28: REST APIs as MCP tools (openapi blocks), with Prism (npm) as
# the API and the official MCP TypeScript SDK client (openapi_test.mjs,
# which starts every mcpd and server it needs).
#
#   sh tests/openapi/run.sh MCPD_BINARY [GROUP...]
#
# `make openapi-test` runs it under scripts/with-redis, so that the resume
# group runs on the Redis log. The last line is "N passed, N failed, N
# skipped".
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
if [ ! -d "$dir/node_modules/@stoplight/prism-cli" ]; then
	echo "== npm ci in $dir (node_modules missing)"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

out=$(mktemp "${TMPDIR:-/tmp}/mcpd-openapi.XXXXXX")
trap 'rm -f "$out"' EXIT
status=0
node "$dir/openapi_test.mjs" --mcpd "$bin" "$@" | tee "$out" || status=$?
# tee hides node's status from a plain sh pipeline: read it from the output.
n='\([0-9]*\)'
# shellcheck disable=SC2046 # the three numbers, or nothing
sum="s/^openapi_test: $n passed, $n failed, $n skipped\$/\1 \2 \3/p"
set -- $(sed -n "$sum" "$out" | tail -n 1)
if [ $# -ne 3 ]; then
	echo "FAIL openapi_test.mjs printed its summary"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
echo "$1 passed, $2 failed, $3 skipped"
if [ "$2" -ne 0 ] || [ "$1" -eq 0 ]; then
	status=1
fi
exit "$status"
