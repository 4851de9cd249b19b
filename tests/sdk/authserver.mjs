// A real OAuth 2 authorization server for mcpd's tests: oauth2-mock-server
// (pinned in package.json) on 127.0.0.1, on a free port.
//
//   node tests/sdk/authserver.mjs [--client ID:SECRET[:opaque]]...
//       [--resource-server ID:SECRET]... [--port N] [--tls CERT KEY]
//
// With --tls it serves https (the PEM certificate and key files) and its
// issuer is https://127.0.0.1:P.
//
// It prints one JSON line on stdout once it listens:
//   {"ready":true,"port":P,"issuer":"http://127.0.0.1:P","kid":"...",
//    "jwks_uri":...,"token_endpoint":...}
// and then one JSON line per request it serves ({"req":METHOD,"path":...,
// "status":N}), so a test can see who asked what.  SIGTERM or SIGINT stops
// it; SIGHUP rotates its signing key (as POST /test/rotate does).
//
// What the mock library does not do as an authorization server in front of
// a resource server has to, this file adds, and only that:
//   - client authentication: the token endpoint accepts only the --client
//     pairs, by client_secret_basic or client_secret_post (invalid_client,
//     401, otherwise);
//   - the token says who asked: sub and client_id are the client's id;
//   - RFC 8707: the token's aud is the request's resource parameter;
//   - RFC 8414 metadata at /.well-known/oauth-authorization-server (the
//     library serves only OpenID discovery, and advertises no client
//     authentication there);
//   - key rotation: a new key is published in the JWKS next to the old one
//     and signs every token from then on (the library would take turns
//     between its keys);
//   - opaque tokens and RFC 7662 introspection: a client marked :opaque
//     gets a random string instead of its JWT, and POST /introspect, which
//     only the --resource-server pairs may call (HTTP Basic), answers the
//     JWT's claims for it with "active": true (the library's endpoint
//     answers active for anything); any other token is inactive.
//   - RFC 8693 token exchange (the library has none): grant_type
//     urn:ietf:params:oauth:grant-type:token-exchange at /token, for an
//     authenticated client, with a subject_token this server signed: a
//     token for the same sub, aud the request's resource (or audience),
//     act {sub: the client}, or 400 invalid_grant / invalid_target;
//   - token lifetimes the test sets (/test/config), so that expiry and
//     refresh happen within a test, and a jti in every token, so that
//     two tokens of one second differ.
// The test's own controls are under /test/:
//   POST /test/rotate     new signing key; answers {"kid":NEW,"previous":OLD}
//   POST /test/config     body {"cc_expires_in"?:S, "exchange_expires_in"?:S,
//                         "refuse_subjects"?:[SUB,...]}: the lifetime of
//                         client credentials and exchanged tokens, and the
//                         subjects whose exchanges are refused
//                         (invalid_target)
//   GET  /test/stats      {"requests":{PATH:COUNT,...},"kid":CURRENT,
//                         "grants":{"client_credentials":N,"exchange":N,
//                         "refused":N}}
//   POST /test/sign       body {"claims":{...},"kid"?:K,"unpublished"?:true,
//                         "expires_in"?:S}: a JWT with the issuer's iss, iat,
//                         nbf and exp, then the given claims (a null claim
//                         is left out), signed with the current key, key K,
//                         or a key that no JWKS ever shows.
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { OAuth2Issuer, OAuth2Service, JWKStore } from 'oauth2-mock-server';

const ALG = 'RS256';

function usage(msg) {
	process.stderr.write(`authserver: ${msg}\n` +
	    'usage: node authserver.mjs [--client ID:SECRET[:opaque]]...\n' +
	    '    [--resource-server ID:SECRET]... [--port N] [--tls CERT KEY]\n');
	process.exit(2);
}

const clients = new Map();
const opaqueClients = new Set();
const resourceServers = new Map();
let listenPort = 0;
let tls;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
	const a = argv[i];
	if ((a === '--client' || a === '--resource-server') &&
	    i + 1 < argv.length) {
		const parts = argv[++i].split(':');
		if (parts.length < 2 || parts[0] === '' || parts.length > 3 ||
		    (parts.length === 3 && (a !== '--client' ||
		    parts[2] !== 'opaque')))
			usage(`${a} wants ID:SECRET${a === '--client' ?
			    '[:opaque]' : ''}, not ${argv[i]}`);
		if (a === '--resource-server')
			resourceServers.set(parts[0], parts[1]);
		else {
			clients.set(parts[0], parts[1]);
			if (parts.length === 3)
				opaqueClients.add(parts[0]);
		}
	} else if (a === '--tls' && i + 2 < argv.length) {
		tls = { cert: readFileSync(argv[i + 1]),
		    key: readFileSync(argv[i + 2]) };
		i += 2;
	} else if (a === '--port' && i + 1 < argv.length) {
		listenPort = Number(argv[++i]);
		if (!Number.isInteger(listenPort) || listenPort < 0 ||
		    listenPort > 65535)
			usage(`bad --port ${argv[i]}`);
	} else
		usage(`unknown argument ${a}`);
}
if (clients.size === 0)
	clients.set('mcp-client', 'mcp-secret');

const issuer = new OAuth2Issuer();
const service = new OAuth2Service(issuer);
const requests = {};
const grants = { client_credentials: 0, exchange: 0, refused: 0 };
const config = { cc_expires_in: null, exchange_expires_in: 3600,
    refuse_subjects: [] };
let signingKid;

// Tokens are signed by the key the rotation made current, not in turns.
const keys = issuer.keys;
const keysGet = keys.get.bind(keys);
keys.get = (kid) => keysGet(kid ?? signingKid);

// Keys made for /test/sign's "unpublished": never in the JWKS.
const hidden = new JWKStore();

function emit(obj) {
	process.stdout.write(JSON.stringify(obj) + '\n');
}

async function rotate() {
	const previous = signingKid;
	const jwk = await keys.generate(ALG);
	signingKid = jwk.kid;
	if (previous !== undefined)
		emit({ rotated: signingKid, previous });
	return { kid: signingKid, previous };
}

// RFC 6749 2.3.1: the id and secret are form-urlencoded inside Basic.
function basicCredentials(req) {
	const h = req.headers.authorization;
	if (!h || !/^basic /i.test(h))
		return undefined;
	const raw = Buffer.from(h.slice(6).trim(), 'base64').toString('utf8');
	const c = raw.indexOf(':');
	if (c < 0)
		return undefined;
	try {
		return {
			id: decodeURIComponent(raw.slice(0, c).replace(/\+/g, ' ')),
			secret: decodeURIComponent(raw.slice(c + 1).replace(/\+/g,
			    ' '))
		};
	} catch {
		return undefined;
	}
}

function tokenClient(req) {
	const basic = basicCredentials(req);
	if (basic)
		return basic;
	const body = req.body ?? {};
	if (typeof body.client_id === 'string')
		return { id: body.client_id, secret: body.client_secret };
	return undefined;
}

function authenticated(client) {
	return client !== undefined && clients.has(client.id) &&
	    clients.get(client.id) === client.secret;
}

service.on('beforeTokenSigning', (token, req) => {
	const client = tokenClient(req);
	if (client !== undefined) {
		token.payload.sub = client.id;
		token.payload.client_id = client.id;
	}
	const resource = req.body?.resource;
	if (typeof resource === 'string')
		token.payload.aud = resource;
	if (token.payload.scope === undefined)
		delete token.payload.scope;
	if (req.body?.grant_type === 'client_credentials' &&
	    config.cc_expires_in !== null)
		token.payload.exp = token.payload.iat + config.cc_expires_in;
	// Two tokens of one second differ, as a real server's do.
	token.payload.jti = randomBytes(12).toString('hex');
});

// Opaque token -> the claims of the JWT it stands for.
const opaque = new Map();

service.on('beforeResponse', (response, req) => {
	const client = tokenClient(req);
	if (!authenticated(client)) {
		response.statusCode = 401;
		response.body = { error: 'invalid_client',
		    error_description: 'unknown client or wrong secret' };
		return;
	}
	if (req.body?.grant_type === 'client_credentials' &&
	    response.statusCode === 200) {
		grants.client_credentials++;
		if (config.cc_expires_in !== null)
			response.body.expires_in = config.cc_expires_in;
	}
	const jwt = response.body?.access_token;
	if (response.statusCode === 200 && opaqueClients.has(client.id) &&
	    typeof jwt === 'string') {
		const claims = JSON.parse(Buffer.from(jwt.split('.')[1],
		    'base64url').toString('utf8'));
		const token = randomBytes(32).toString('base64url');
		opaque.set(token, claims);
		response.body.access_token = token;
	}
});

// The claims of a JWT this server signed with a key of its JWKS, or null.
function verified(token) {
	const parts = typeof token === 'string' ? token.split('.') : [];
	if (parts.length !== 3)
		return null;
	try {
		const header = JSON.parse(Buffer.from(parts[0], 'base64url'));
		const jwk = keys.toJSON().find((k) => k.kid === header.kid);
		if (!jwk || header.alg !== ALG)
			return null;
		const ok = verify('RSA-SHA256', Buffer.from(`${parts[0]}.` +
		    `${parts[1]}`), createPublicKey({ key: jwk, format: 'jwk' }),
		    Buffer.from(parts[2], 'base64url'));
		const claims = JSON.parse(Buffer.from(parts[1], 'base64url'));
		if (!ok || claims.iss !== issuer.url ||
		    !(claims.exp > Date.now() / 1000))
			return null;
		return claims;
	} catch {
		return null;
	}
}

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

// RFC 8693 2.1-2.2, for an authenticated client.
async function exchange(req, res, form) {
	const client = tokenClient(req);
	if (!authenticated(client))
		return send(res, 401, { error: 'invalid_client',
		    error_description: 'unknown client or wrong secret' });
	if (![ACCESS_TOKEN, 'urn:ietf:params:oauth:token-type:jwt']
	    .includes(form.subject_token_type))
		return send(res, 400, { error: 'invalid_request',
		    error_description: 'unsupported subject_token_type' });
	const subject = verified(form.subject_token);
	if (subject === null)
		return send(res, 400, { error: 'invalid_grant',
		    error_description: 'the subject_token is not valid' });
	const audience = form.resource ?? form.audience;
	if (typeof audience !== 'string' ||
	    config.refuse_subjects.includes(subject.sub)) {
		grants.refused++;
		return send(res, 400, { error: 'invalid_target',
		    error_description: `no token for ${subject.sub} at ` +
		    `${audience}` });
	}
	grants.exchange++;
	const claims = { sub: subject.sub, aud: audience,
	    jti: randomBytes(12).toString('hex'),
	    act: { sub: client.id }, client_id: subject.client_id ?? null,
	    scope: form.scope ?? null };
	const token = await sign({ claims,
	    expires_in: config.exchange_expires_in });
	return send(res, 200, { access_token: token,
	    issued_token_type: ACCESS_TOKEN, token_type: 'Bearer',
	    expires_in: config.exchange_expires_in });
}

/*
 * POST /token: a token exchange is this file's; anything else goes to the
 * library with the form read here (its body parser finds the request
 * finished and keeps req.body).
 */
async function token(req, res) {
	const form = Object.fromEntries(new URLSearchParams(
	    await readBody(req)));
	req.body = form;
	if (form.grant_type === EXCHANGE)
		return exchange(req, res, form);
	service.requestHandler(req, res);
}

async function introspect(req, res) {
	const rs = basicCredentials(req);
	if (rs === undefined || resourceServers.get(rs.id) !== rs.secret) {
		res.setHeader('WWW-Authenticate', 'Basic realm="introspection"');
		return send(res, 401, { error: 'invalid_client' });
	}
	const form = new URLSearchParams(await readBody(req));
	const claims = opaque.get(form.get('token') ?? '');
	if (claims === undefined ||
	    claims.exp <= Math.floor(Date.now() / 1000))
		return send(res, 200, { active: false });
	return send(res, 200, { active: true, token_type: 'Bearer',
	    ...claims });
}

function send(res, status, obj) {
	const body = JSON.stringify(obj);
	res.writeHead(status, { 'Content-Type': 'application/json',
	    'Content-Length': Buffer.byteLength(body),
	    'Cache-Control': 'no-store' });
	res.end(body);
}

// A request body, bounded: the test's own requests are small.
function readBody(req) {
	return new Promise((resolve, reject) => {
		const chunks = [];
		let n = 0;
		req.on('data', (c) => {
			n += c.length;
			if (n > 65536) {
				reject(new Error('body too large'));
				req.destroy();
				return;
			}
			chunks.push(c);
		});
		req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
		req.on('error', reject);
	});
}

async function readJson(req) {
	const text = await readBody(req);
	return text === '' ? {} : JSON.parse(text);
}

function metadata() {
	const base = issuer.url;
	return {
		issuer: base,
		authorization_endpoint: `${base}/authorize`,
		token_endpoint: `${base}/token`,
		jwks_uri: `${base}/jwks`,
		introspection_endpoint: `${base}/introspect`,
		grant_types_supported: ['client_credentials',
		    'authorization_code', EXCHANGE],
		token_endpoint_auth_methods_supported: ['client_secret_basic',
		    'client_secret_post'],
		response_types_supported: ['code'],
		code_challenge_methods_supported: ['S256'],
		scopes_supported: ['mcp', 'deploy']
	};
}

async function sign(spec) {
	const claims = spec.claims ?? {};
	let store = keys;
	let kid = spec.kid;
	if (spec.unpublished) {
		if (hidden.toJSON().length === 0)
			await hidden.generate(ALG);
		store = hidden;
		kid = hidden.toJSON()[0].kid;
	}
	const fake = new OAuth2Issuer();
	fake.url = issuer.url;
	// The fake issuer signs with the chosen key of the chosen store.
	Object.defineProperty(fake, 'keys', { value: {
		get: () => (store === keys ? keys.get(kid) : hidden.get(kid))
	} });
	return await fake.buildToken({
		expiresIn: spec.expires_in ?? 3600,
		scopesOrTransform: (_header, payload) => {
			for (const [k, v] of Object.entries(claims)) {
				if (v === null)
					delete payload[k];
				else
					payload[k] = v;
			}
		}
	});
}

async function control(req, res, path) {
	if (req.method === 'POST' && path === '/test/rotate')
		return send(res, 200, await rotate());
	if (req.method === 'GET' && path === '/test/stats')
		return send(res, 200, { requests, kid: signingKid, grants });
	if (req.method === 'POST' && path === '/test/config') {
		let spec;
		try {
			spec = await readJson(req);
		} catch (e) {
			return send(res, 400, { error: String(e) });
		}
		for (const k of Object.keys(config)) {
			if (spec[k] !== undefined)
				config[k] = spec[k];
		}
		return send(res, 200, config);
	}
	if (req.method === 'POST' && path === '/test/sign') {
		let spec;
		try {
			spec = await readJson(req);
		} catch (e) {
			return send(res, 400, { error: String(e) });
		}
		return send(res, 200, { token: await sign(spec) });
	}
	return send(res, 404, { error: 'no such test control' });
}

function handle(req, res) {
	const path = new URL(req.url, 'http://x').pathname;
	if (!path.startsWith('/test/')) {
		const key = `${req.method} ${path}`;
		requests[key] = (requests[key] ?? 0) + 1;
		res.on('finish', () => emit({ req: req.method, path,
		    status: res.statusCode }));
	}
	if (path.startsWith('/test/')) {
		control(req, res, path).catch((e) => send(res, 500,
		    { error: String(e) }));
		return;
	}
	if (req.method === 'GET' &&
	    path === '/.well-known/oauth-authorization-server')
		return send(res, 200, metadata());
	if (req.method === 'POST' && path === '/token') {
		token(req, res).catch((e) => send(res, 400,
		    { error: 'invalid_request', error_description: String(e) }));
		return;
	}
	if (req.method === 'POST' && path === '/introspect') {
		introspect(req, res).catch((e) => send(res, 400,
		    { error: 'invalid_request', error_description: String(e) }));
		return;
	}
	service.requestHandler(req, res);
}

const server = tls ? createTlsServer(tls, handle) : createServer(handle);

await rotate();
server.listen(listenPort, '127.0.0.1', () => {
	const port = server.address().port;
	issuer.url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
	emit({ ready: true, port, issuer: issuer.url, kid: signingKid,
	    jwks_uri: `${issuer.url}/jwks`,
	    token_endpoint: `${issuer.url}/token` });
});
server.on('error', (e) => {
	process.stderr.write(`authserver: ${e.message}\n`);
	process.exit(1);
});

function stop() {
	server.close(() => process.exit(0));
	server.closeAllConnections();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('SIGHUP', () => {
	rotate().catch((e) => process.stderr.write(`authserver: ${e}\n`));
});
