#!/bin/sh
# `make install` into a staging directory (DESTDIR), then the installed
# files are checked and the installed mcpd is run on the installed
# configuration: what a package or an image built by these steps gets.
set -eu
stage=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-install.XXXXXX")
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$stage"
}
trap cleanup EXIT INT TERM
fail() { echo "install-check: $*" >&2; exit 1; }

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null
for f in usr/sbin/mcpd usr/share/man/man8/mcpd.8 \
    usr/share/man/man5/mcpd.conf.5 usr/share/doc/mcpd/mcpd.conf.example \
    usr/lib/systemd/system/mcpd.service etc/mcpd/mcpd.conf; do
	[ -f "$stage/$f" ] || fail "$f not installed"
done
bin=$stage/usr/sbin/mcpd
"$bin" -V | grep -q '^mcpd [0-9]' || fail "installed mcpd -V"

# Both pages render without a warning from groff.
for page in man8/mcpd.8 man5/mcpd.conf.5; do
	w=$(man --warnings -l "$stage/usr/share/man/$page" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "$page: $w"
done
# Every directive of the table is in the generated page.
for d in $("$bin" -e | sed -n 's/^#\{0,1\}\([a-z_]*\) .*/\1/p' | sort -u); do
	grep -q "fB$d\\\\fR" "$stage/usr/share/man/man5/mcpd.conf.5" ||
	    fail "mcpd.conf.5 lacks $d"
done

# The unit names the installed paths; systemd-analyze checks it (its
# ExecStart binaries and man pages must exist, so they are looked up in
# the staging directory).
unit=$stage/usr/lib/systemd/system/mcpd.service
grep -q '^ExecStart=/usr/sbin/mcpd -c /etc/mcpd/mcpd.conf$' "$unit" ||
    fail "the installed unit does not name /usr/sbin/mcpd"
sed "s|/usr/sbin/mcpd|$bin|g" "$unit" > "$stage/mcpd.service"
MANPATH=$stage/usr/share/man systemd-analyze verify "$stage/mcpd.service" ||
    fail "systemd-analyze verify"

# A second install keeps the configuration an operator edited.
echo "# edited" >> "$stage/etc/mcpd/mcpd.conf"
make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null
grep -q '^# edited' "$stage/etc/mcpd/mcpd.conf" ||
    fail "install overwrote an existing mcpd.conf"

# The installed binary on the installed configuration, on a free port.
port=$(python3 scripts/free-port)
conf=$stage/smoke.conf
# No drain delay: nothing balances this one instance.
{ sed "s/^listen .*/listen 127.0.0.1:$port/" "$stage/etc/mcpd/mcpd.conf"
  echo "drain_delay 0"; } > "$conf"
"$bin" -t -c "$conf" >/dev/null || fail "mcpd -t on the installed conf"
"$bin" -c "$conf" 2>"$stage/mcpd.log" &
pid=$!
i=0
until python3 - "$port" <<'PY' 2>/dev/null
import json, sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/mcp" % sys.argv[1],
    data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "1"}}}).encode(),
    headers={"Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
r = urllib.request.urlopen(req, timeout=2)
body = json.load(r)
assert r.status == 200 and body["result"]["serverInfo"]["name"] == "mcpd"
assert r.headers["Mcp-Session-Id"]
PY
do
	i=$((i + 1))
	kill -0 "$pid" 2>/dev/null || { cat "$stage/mcpd.log" >&2; fail "mcpd exited"; }
	[ "$i" -lt 100 ] || fail "no initialize answer from the installed mcpd"
	sleep 0.05
done
kill "$pid"
wait "$pid" || fail "installed mcpd did not stop cleanly"
pid=
echo "install-check: installed files, manual pages and the installed mcpd pass"
