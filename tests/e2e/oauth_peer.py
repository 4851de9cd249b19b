"""
A real OAuth 2 authorization server for the end-to-end tests of mcpd's
`auth` block: tests/sdk/authserver.mjs (oauth2-mock-server, pinned in
tests/sdk/package.json and installed by `make deps` into tests/sdk/
node_modules) in a child process on 127.0.0.1, on a free port.

    with AuthServer(h.workdir, {"alice": "alice-secret"}) as asrv:
        tok = asrv.token("alice", scope="mcp", resource=RESOURCE)
        asrv.rotate()

It can serve https (tls=(cert, key)), issue opaque tokens that its
introspection endpoint answers for, rotate its signing key, exchange
tokens (RFC 8693) and shorten token lifetimes (configure). Also: the SDK
OAuth client script (tests/sdk/oauth_client.mjs), the lines of mcpd's auth
block for a given authorization server, environ() to start a daemon with
a variable set (SSL_CERT_FILE), and ResourceServer, an MCP server behind
OAuth (tests/sdk/resource_server.mjs) for mcpd's upstream credentials.

Python 3.11 standard library only.
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from mcpd_harness import Skip, expect, tmo

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_DIR = os.path.normpath(os.path.join(HERE, "..", "sdk"))
AUTHSERVER = os.path.join(SDK_DIR, "authserver.mjs")
OAUTH_CLIENT = os.path.join(SDK_DIR, "oauth_client.mjs")


def node_ready():
    """The node binary, after checking that what the scripts import is
    installed; Skip saying how to get it otherwise (counted as skipped,
    and a failure where MCPD_TEST_NO_SKIP is set, as in CI: a test that
    silently skips there proves nothing)."""
    node = shutil.which("node")
    if node is None:
        raise Skip("node is not on PATH (run `make deps`)")
    for pkg in ("oauth2-mock-server", "@modelcontextprotocol/sdk"):
        if not os.path.isfile(os.path.join(SDK_DIR, "node_modules", pkg,
                                           "package.json")):
            raise Skip(f"tests/sdk/node_modules/{pkg} is missing (run "
                       f"`make deps`)")
    return node


def jwt_parts(token):
    """(header, payload) of a compact JWS, decoded, not verified."""
    def seg(s):
        return json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
    parts = token.split(".")
    expect(len(parts) == 3, f"not a compact JWS: {token[:60]!r}")
    return seg(parts[0]), seg(parts[1])


class HTTPReply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        return json.loads(self.body)


def http(method, url, body=None, headers=None, timeout=10, cafile=None):
    """One HTTP request with urllib (https: verified against cafile, or
    the system's store); every status is returned, not raised."""
    data = body
    if isinstance(body, dict):
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
    elif isinstance(body, str):
        data = body.encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers=headers or {})
    ctx = ssl.create_default_context(cafile=cafile) \
        if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(req, timeout=tmo(timeout),
                                    context=ctx) as r:
            return HTTPReply(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        return HTTPReply(e.code, e.headers, e.read())


class AuthServer:
    """tests/sdk/authserver.mjs, started and stopped by the test."""

    def __init__(self, workdir, clients=None, opaque=(),
                 resource_servers=None, tls=None):
        """clients: id -> secret; opaque: the ids among them whose tokens
        are opaque (for introspection); resource_servers: id -> secret of
        those who may call /introspect; tls: (certificate, key) PEM
        files to serve https with (the certificate is its own CA)."""
        self.tls = tls
        self.cafile = tls[0] if tls else None
        self.clients = dict(clients or {"mcp-client": "mcp-secret"})
        self.opaque = set(opaque)
        self.resource_servers = dict(resource_servers or {})
        self.workdir = workdir
        self.proc = None
        self.lines = []             # its stdout, one decoded JSON per line
        self.cond = threading.Condition()
        self.port = None
        self.issuer = None
        self.kid = None
        self.errpath = os.path.join(workdir, "authserver.stderr")

    # process

    def start(self, timeout=20):
        node = node_ready()
        argv = [node, AUTHSERVER]
        for cid, secret in self.clients.items():
            argv += ["--client", f"{cid}:{secret}" +
                     (":opaque" if cid in self.opaque else "")]
        for rid, secret in self.resource_servers.items():
            argv += ["--resource-server", f"{rid}:{secret}"]
        if self.tls:
            argv += ["--tls", *self.tls]
        self.err = open(self.errpath, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self.err,
                                     cwd=SDK_DIR, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.wait_line(lambda m: m.get("ready"), timeout,
                               "the authorization server's ready line")
        self.port = ready["port"]
        self.issuer = ready["issuer"]
        self.kid = ready["kid"]
        self.jwks_uri = ready["jwks_uri"]
        self.token_endpoint = ready["token_endpoint"]
        scheme = "https" if self.tls else "http"
        expect(self.issuer == f"{scheme}://127.0.0.1:{self.port}",
               f"authorization server issuer {self.issuer!r}")
        return self

    def _read(self):
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                msg = {"unparsed": raw.decode(errors="replace")}
            with self.cond:
                self.lines.append(msg)
                self.cond.notify_all()
        with self.cond:
            self.lines.append({"eof": True})
            self.cond.notify_all()

    def wait_line(self, pred, timeout=10, what="line"):
        deadline = time.monotonic() + tmo(timeout)
        with self.cond:
            while True:
                for m in self.lines:
                    if pred(m):
                        return m
                if any(m.get("eof") for m in self.lines):
                    raise AssertionError(
                        f"authorization server exited before {what}; "
                        f"stderr:\n{self.stderr_tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no {what} from the authorization server within "
                        f"{tmo(timeout):.0f}s; stderr:\n"
                        f"{self.stderr_tail()}")
                self.cond.wait(min(remaining, 0.2))

    def stderr_tail(self, n=20):
        try:
            with open(self.errpath, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-n:])
        except OSError:
            return "(none)"

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(tmo(5))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        self.proc = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

    # what it is asked

    def url(self, path):
        return f"{self.issuer}{path}"

    def token_reply(self, client_id, secret=None, scope=None, resource=None,
                    basic=True):
        """POST /token, grant_type client_credentials: the raw reply."""
        secret = self.clients.get(client_id) if secret is None else secret
        form = {"grant_type": "client_credentials"}
        if scope is not None:
            form["scope"] = scope
        if resource is not None:
            form["resource"] = resource
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if basic:
            cred = (urllib.parse.quote(client_id, safe="") + ":" +
                    urllib.parse.quote(secret or "", safe=""))
            headers["Authorization"] = \
                "Basic " + base64.b64encode(cred.encode()).decode()
        else:
            form["client_id"] = client_id
            form["client_secret"] = secret or ""
        return http("POST", self.token_endpoint,
                    urllib.parse.urlencode(form), headers,
                    cafile=self.cafile)

    def token(self, client_id, scope=None, resource=None):
        """An access token by client credentials (client_secret_basic)."""
        r = self.token_reply(client_id, scope=scope, resource=resource)
        expect(r.status == 200, f"token for {client_id} -> HTTP {r.status} "
               f"{r.body[:300]!r}")
        tok = r.json.get("access_token")
        kind = "an opaque" if client_id in self.opaque else "a JWT"
        expect(isinstance(tok, str) and
               (tok.count(".") == 2) == (client_id not in self.opaque),
               f"token reply without {kind} access_token: "
               f"{r.body[:300]!r}")
        return tok

    def rotate(self):
        """A new signing key (published next to the old one); its kid."""
        r = http("POST", self.url("/test/rotate"), b"", cafile=self.cafile)
        expect(r.status == 200, f"/test/rotate -> HTTP {r.status}")
        kid = r.json["kid"]
        expect(kid != self.kid, "rotation kept the kid")
        self.kid = kid
        return kid

    def sign(self, claims, unpublished=False, expires_in=None, kid=None):
        """A JWT with the issuer's iss/iat/nbf/exp and these claims (None
        drops one), signed by the current key, key kid, or a key that no
        JWKS of this server ever shows."""
        spec = {"claims": claims, "unpublished": unpublished}
        if expires_in is not None:
            spec["expires_in"] = expires_in
        if kid is not None:
            spec["kid"] = kid
        r = http("POST", self.url("/test/sign"), spec, cafile=self.cafile)
        expect(r.status == 200, f"/test/sign -> HTTP {r.status} "
               f"{r.body[:200]!r}")
        return r.json["token"]

    def stats(self):
        r = http("GET", self.url("/test/stats"), cafile=self.cafile)
        expect(r.status == 200, f"/test/stats -> HTTP {r.status}")
        return r.json

    def configure(self, **config):
        """cc_expires_in, exchange_expires_in (seconds), refuse_subjects
        (subjects whose token exchanges are refused, invalid_target)."""
        r = http("POST", self.url("/test/config"), config,
                 cafile=self.cafile)
        expect(r.status == 200, f"/test/config -> HTTP {r.status}")
        return r.json

    def grants(self):
        """Tokens issued so far: {client_credentials, exchange, refused}."""
        return self.stats()["grants"]

    def wait_grants(self, kind, pred, timeout=10, what=None):
        deadline = time.monotonic() + tmo(timeout)
        while True:
            n = self.grants()[kind]
            if pred(n):
                return n
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{kind} grants on the authorization server: {n}; "
                    f"{what or 'condition'} not reached within "
                    f"{tmo(timeout):.0f}s")
            time.sleep(0.05)

    def count(self, path, method="GET"):
        """Requests it has answered on METHOD PATH."""
        return self.stats()["requests"].get(f"{method} {path}", 0)

    def jwks_fetches(self):
        return self.count("/jwks")

    def wait_count(self, path, pred, method="GET", timeout=10, what=None):
        deadline = time.monotonic() + tmo(timeout)
        while True:
            n = self.count(path, method)
            if pred(n):
                return n
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{method} {path} on the authorization server: {n} "
                    f"requests; {what or 'condition'} not reached within "
                    f"{tmo(timeout):.0f}s")
            time.sleep(0.02)


RESOURCE_SERVER = os.path.join(SDK_DIR, "resource_server.mjs")


class ResourceServer:
    """tests/sdk/resource_server.mjs: an MCP server (tool whoami) that
    accepts only tokens of issuer for its own URL, or (header) wants that
    header; started and stopped by the test."""

    def __init__(self, workdir, issuer=None, header=None):
        self.issuer = issuer
        self.header = header
        self.errpath = os.path.join(workdir, "resource_server.stderr")
        self.proc = None
        self.url = None

    def start(self, timeout=20):
        node = node_ready()
        argv = [node, RESOURCE_SERVER]
        if self.issuer:
            argv += ["--issuer", self.issuer]
        if self.header:
            argv += ["--header", self.header]
        self.err = open(self.errpath, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self.err,
                                     cwd=SDK_DIR, start_new_session=True)
        ready = {}

        def read():
            line = self.proc.stdout.readline()
            try:
                ready.update(json.loads(line))
            except ValueError:
                pass
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(tmo(timeout))
        if not ready.get("ready"):
            self.stop()
            with open(self.errpath, errors="replace") as f:
                raise AssertionError("the resource server did not start: "
                                     f"{f.read()[-2000:]}")
        self.url = ready["url"]
        self.port = ready["port"]
        return self

    def stats(self):
        r = http("GET", f"http://127.0.0.1:{self.port}/test/stats")
        expect(r.status == 200, f"resource server stats -> HTTP {r.status}")
        return r.json

    def revoke(self, token_hash):
        """The token (the first 16 hex digits of its SHA-256, as whoami
        says it) is refused from now on."""
        r = http("POST", f"http://127.0.0.1:{self.port}/test/revoke",
                 {"token": token_hash})
        expect(r.status == 204, f"resource server revoke -> HTTP {r.status}")

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(tmo(5))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        self.proc = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


def auth_lines(resource, asrv, scopes="mcp", jwks="uri", extra=()):
    """mcpd's auth block for authorization server asrv (a list of conf
    lines for Harness.start's extra_lines)."""
    lines = ["auth {",
             f"    resource {resource}",
             f"    authorization_server {asrv.issuer}",
             f"    issuer {asrv.issuer}"]
    if jwks == "uri":
        lines.append(f"    jwks_uri {asrv.jwks_uri}")
    else:
        lines.append(f"    jwks_file {jwks}")
    if scopes:
        lines.append(f"    scopes {scopes}")
    lines.extend(f"    {x}" for x in extra)
    lines.append("}")
    return lines


def run_oauth_client(url, client_id, secret, issuer, scope=None, calls=(),
                     timeout=40, cafile=None):
    """tests/sdk/oauth_client.mjs; (exit status, its JSON document,
    stderr). cafile: a CA node trusts besides its own (an https AS)."""
    node = node_ready()
    argv = [node, OAUTH_CLIENT, "--url", url, "--client-id", client_id,
            "--client-secret", secret, "--issuer", issuer]
    if scope is not None:
        argv += ["--scope", scope]
    for name, args in calls:
        argv += ["--call", name, json.dumps(args)]
    env = os.environ.copy()
    env["TEST_TIMEOUT_MS"] = str(int(tmo(timeout - 5) * 1000))
    if cafile:
        env["NODE_EXTRA_CA_CERTS"] = cafile
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                       cwd=SDK_DIR, env=env, timeout=tmo(timeout))
    out = p.stdout.decode(errors="replace").strip().splitlines()
    doc = None
    if out:
        try:
            doc = json.loads(out[-1])
        except ValueError:
            pass
    expect(doc is not None, f"oauth_client.mjs printed no JSON document "
           f"(exit {p.returncode}); stdout:\n{p.stdout[-2000:]!r}\n"
           f"stderr:\n{p.stderr[-2000:]!r}")
    return p.returncode, doc, p.stderr.decode(errors="replace")


class environ:
    """os.environ with these variables set while the block runs (the
    harness gives a daemon the test's environment)."""

    def __init__(self, **env):
        self.env = env

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
