"""
Tokens, keys and small servers for the authorization tests (test_auth.py).

Keys are made and used with the openssl command-line tool (RSA 2048 for
RS256 and PS256, P-256 for ES256, Ed25519 for EdDSA); base64url, JSON and
the JWT framing are the standard library's. The JWKS and introspection
servers are http.server instances on 127.0.0.1 in threads of the test.

Python 3.11 standard library only, plus the openssl binary.
"""

import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import ssl
import subprocess
import threading
import time
import urllib.parse


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _openssl(*args, data=None):
    p = subprocess.run(["openssl", *args], input=data, capture_output=True,
                       check=False)
    if p.returncode != 0:
        raise AssertionError(f"openssl {' '.join(args)} failed: "
                             f"{p.stderr.decode(errors='replace')}")
    return p.stdout


def _hex_block(text, label):
    """The colon-separated hex bytes after a label of openssl -text."""
    m = re.search(label + r"\s*\n((?:\s+[0-9a-f:]+\n?)+)", text)
    if not m:
        raise AssertionError(f"no {label} in openssl output:\n{text}")
    return bytes.fromhex(re.sub(r"[\s:]", "", m.group(1)))


def _der_ecdsa_to_raw(der):
    """An ECDSA-Sig-Value (DER) as JWS wants it: r || s, 32 bytes each."""
    if der[0] != 0x30:
        raise AssertionError("not a DER ECDSA signature")
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7f)
    out = b""
    for _ in range(2):
        if der[i] != 0x02:
            raise AssertionError("not a DER INTEGER")
        n = der[i + 1]
        v = der[i + 2:i + 2 + n].lstrip(b"\0")
        out += v.rjust(32, b"\0")
        i += 2 + n
    return out


class Key:
    """A private key of one kind (rsa, ec, ed25519) in a PEM file."""

    ALGS = {"rsa": ("RS256", "PS256"), "ec": ("ES256",),
            "ed25519": ("EdDSA",)}

    def __init__(self, workdir, kind, kid):
        self.kind = kind
        self.kid = kid
        self.path = os.path.join(workdir, f"key-{kid}.pem")
        if kind == "rsa":
            _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt",
                     "rsa_keygen_bits:2048", "-out", self.path)
        elif kind == "ec":
            _openssl("genpkey", "-algorithm", "EC", "-pkeyopt",
                     "ec_paramgen_curve:P-256", "-out", self.path)
        else:
            _openssl("genpkey", "-algorithm", "ED25519", "-out", self.path)
        self.public_pem = _openssl("pkey", "-in", self.path, "-pubout")

    def jwk(self, alg=None):
        text = _openssl("pkey", "-in", self.path, "-noout",
                        "-text_pub").decode()
        jwk = {"kid": self.kid, "use": "sig"}
        if alg is not None:
            jwk["alg"] = alg
        if self.kind == "rsa":
            n = _hex_block(text, "Modulus:").lstrip(b"\0")
            e = int(re.search(r"Exponent: (\d+)", text).group(1))
            jwk.update(kty="RSA", n=b64url(n),
                       e=b64url(e.to_bytes((e.bit_length() + 7) // 8,
                                           "big")))
        elif self.kind == "ec":
            pub = _hex_block(text, "pub:")
            jwk.update(kty="EC", crv="P-256", x=b64url(pub[1:33]),
                       y=b64url(pub[33:65]))
        else:
            jwk.update(kty="OKP", crv="Ed25519",
                       x=b64url(_hex_block(text, "pub:")))
        return jwk

    def sign(self, alg, data):
        if alg == "RS256":
            return _openssl("dgst", "-sha256", "-sign", self.path, data=data)
        if alg == "PS256":
            return _openssl("dgst", "-sha256", "-sign", self.path,
                            "-sigopt", "rsa_padding_mode:pss",
                            "-sigopt", "rsa_pss_saltlen:digest", data=data)
        if alg == "ES256":
            return _der_ecdsa_to_raw(_openssl("dgst", "-sha256", "-sign",
                                              self.path, data=data))
        if alg == "EdDSA":
            tmp = self.path + ".in"
            with open(tmp, "wb") as f:
                f.write(data)
            try:
                return _openssl("pkeyutl", "-sign", "-inkey", self.path,
                                "-rawin", "-in", tmp)
            finally:
                os.unlink(tmp)
        raise AssertionError(f"no signer for {alg}")


def jwks(*jwk_list):
    return {"keys": list(jwk_list)}


def jwt(key, claims, alg=None, header=None, kid=True):
    """A compact JWS of claims signed by key (alg: its first by default);
    header entries override or (None) drop the defaults."""
    alg = alg or Key.ALGS[key.kind][0]
    h = {"alg": alg, "typ": "at+jwt"}
    if kid:
        h["kid"] = key.kid
    for k, v in (header or {}).items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    head = b64url(json.dumps(h).encode()) + "." + \
        b64url(json.dumps(claims).encode())
    return head + "." + b64url(key.sign(h["alg"], head.encode()))


def unsigned(claims, alg="none"):
    """A token with alg none (and an empty signature)."""
    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode()) + "." + \
        b64url(json.dumps(claims).encode())
    return head + "."


def hs256(secret, claims, kid=None):
    """HS256 with secret as the key: what an attacker does with a public
    key when a server confuses algorithms."""
    h = {"alg": "HS256", "typ": "JWT"}
    if kid:
        h["kid"] = kid
    head = b64url(json.dumps(h).encode()) + "." + \
        b64url(json.dumps(claims).encode())
    mac = hmac.new(secret, head.encode(), hashlib.sha256).digest()
    return head + "." + b64url(mac)


def claims(issuer, audience, sub="alice", scope="mcp", lifetime=300,
           **extra):
    now = int(time.time())
    c = {"iss": issuer, "aud": audience, "sub": sub, "iat": now,
         "exp": now + lifetime, "scope": scope}
    # None leaves a claim out (a JSON null is a claim, and a bad one).
    c = {k: v for k, v in c.items() if v is not None}
    for k, v in extra.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return c


def sha256_hex(token):
    return hashlib.sha256(token.encode()).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.server.owner.on_get(self)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        self.server.owner.on_post(self, body)


def make_cert(workdir, san, name):
    """A self-signed P-256 certificate for san ("IP:127.0.0.1"): (cert,
    key) paths; the certificate is its own CA."""
    cert = os.path.join(workdir, f"{name}.crt")
    key = os.path.join(workdir, f"{name}.key")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out",
             cert, "-days", "2", "-subj", f"/CN={name}", "-addext",
             f"subjectAltName={san}", "-addext",
             "basicConstraints=critical,CA:TRUE")
    return cert, key


class _Server:
    def __init__(self, tls=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     _Handler)
        self.scheme = "http"
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket,
                                                server_side=True)
            self.scheme = "https"
        self.httpd.owner = self
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       daemon=True)
        self.thread.start()

    def url(self, path):
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def on_get(self, req):
        req._send(404, {"error": "not found"})

    def on_post(self, req, body):
        req._send(404, {"error": "not found"})


class JwksServer(_Server):
    """Serves a key set at /jwks and counts the fetches."""

    def __init__(self, keyset, tls=None):
        super().__init__(tls)
        self.keyset = keyset
        self.fetches = 0
        self.traceparents = []          # each fetch's header, or None
        self.gate = threading.Event()   # cleared: fetches are held
        self.gate.set()

    def set_keys(self, keyset):
        with self.lock:
            self.keyset = keyset

    def on_get(self, req):
        if req.path != "/jwks":
            return super().on_get(req)
        with self.cond:
            self.fetches += 1
            self.traceparents.append(req.headers.get("traceparent"))
            self.cond.notify_all()
        self.gate.wait(60)
        with self.lock:
            keyset = self.keyset
        req._send(200, keyset)

    def wait_fetches(self, n, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.fetches < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"jwks fetched {self.fetches} "
                                         f"times, waited for {n}")
                self.cond.wait(left)


class IntrospectionServer(_Server):
    """RFC 7662 at /introspect: answers from a dict token -> answer, after
    checking the client's HTTP Basic credentials; counts the requests."""

    def __init__(self, client_id, secret):
        super().__init__()
        self.answers = {}
        self.requests = 0
        self.bad_auth = 0
        want = f"{client_id}:{secret}".encode()
        self.basic = "Basic " + base64.b64encode(want).decode()
        self.traceparents = []          # each request's header, or None

    def on_post(self, req, body):
        if req.path != "/introspect":
            return super().on_post(req, body)
        form = urllib.parse.parse_qs(body.decode())
        with self.cond:
            self.requests += 1
            self.traceparents.append(req.headers.get("traceparent"))
            if req.headers.get("Authorization") != self.basic:
                self.bad_auth += 1
                req._send(401, {"error": "invalid_client"})
                return
            token = (form.get("token") or [""])[0]
            answer = self.answers.get(token, {"active": False})
        req._send(200, answer)
