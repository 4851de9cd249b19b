// An MCP server behind OAuth, as an upstream of mcpd with credentials
// (tests/e2e/test_credentials.py): the official SDK's server over
// Streamable HTTP (stateless: a transport per request) on 127.0.0.1, on a
// free port, at /mcp.
//
//   node tests/sdk/resource_server.mjs --issuer AS_URL
//   node tests/sdk/resource_server.mjs --header NAME
//
// With --issuer it is a resource server that accepts only a bearer JWT
// signed by a key of AS_URL's /jwks, with iss AS_URL, not expired, whose
// aud is its own URL (http://127.0.0.1:PORT/mcp): anything else is 401
// with a Bearer challenge, and is counted. With --header it wants header
// NAME on every request (400 without it).
//
// Its one tool, whoami, answers what the request that carried the call
// had: {"sub","aud","act","client_id","token":SHA-256 of the token, first
// 16 hex digits,"header":NAME's value}, as JSON text.
//
// The same as a REST API, for mcpd's openapi blocks, behind the same
// checks (the same audience): GET /api/openapi.json, an OpenAPI 3.0
// document whose one operation is whoami, GET /api/whoami, answering that
// object as application/json.
//
// It prints one JSON line on stdout once it listens:
//   {"ready":true,"port":P,"url":"http://127.0.0.1:P/mcp"}
// GET /test/stats answers {"accepted":N,"refused":N,"initialize":N,
// "subjects":{SUB:N,...}}: requests let through and refused, initialize
// requests, and calls per token subject. POST /test/revoke with body
// {"token":HASH} refuses that token from then on, as a server that
// revoked it early would. SIGTERM or SIGINT stops it.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from
    '@modelcontextprotocol/sdk/server/streamableHttp.js';

let issuer;
let header;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
	if (argv[i] === '--issuer' && i + 1 < argv.length)
		issuer = argv[++i];
	else if (argv[i] === '--header' && i + 1 < argv.length)
		header = argv[++i].toLowerCase();
	else {
		process.stderr.write(`resource_server: unknown argument ` +
		    `${argv[i]}\n`);
		process.exit(2);
	}
}

const stats = { accepted: 0, refused: 0, initialize: 0, subjects: {} };
const revoked = new Set();
let selfUrl;
let jwks = [];

async function fetchKeys() {
	const r = await fetch(`${issuer}/jwks`);
	jwks = (await r.json()).keys ?? [];
}

// The claims of a valid token for this server, or a reason string.
async function check(token) {
	const parts = token.split('.');
	if (parts.length !== 3)
		return 'not a JWT';
	let h, claims;
	try {
		h = JSON.parse(Buffer.from(parts[0], 'base64url'));
		claims = JSON.parse(Buffer.from(parts[1], 'base64url'));
	} catch {
		return 'not a JWT';
	}
	if (!jwks.some((k) => k.kid === h.kid))
		await fetchKeys();
	const jwk = jwks.find((k) => k.kid === h.kid);
	if (!jwk || h.alg !== 'RS256')
		return 'unknown key';
	if (!verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`),
	    createPublicKey({ key: jwk, format: 'jwk' }),
	    Buffer.from(parts[2], 'base64url')))
		return 'bad signature';
	if (claims.iss !== issuer)
		return 'wrong issuer';
	if (!(claims.exp > Date.now() / 1000))
		return 'expired';
	const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
	if (!aud.includes(selfUrl))
		return `the audience is not ${selfUrl}`;
	return claims;
}

function refuse(res, status, why) {
	stats.refused++;
	const body = JSON.stringify({ error: why });
	const h = { 'Content-Type': 'application/json' };
	if (status === 401)
		h['WWW-Authenticate'] = `Bearer error="invalid_token", ` +
		    `error_description="${why}"`;
	res.writeHead(status, h);
	res.end(body);
}

function readBody(req) {
	return new Promise((resolve, reject) => {
		const chunks = [];
		req.on('data', (c) => chunks.push(c));
		req.on('end', () => resolve(Buffer.concat(chunks).toString()));
		req.on('error', reject);
	});
}

function mcpServer(seen) {
	const server = new McpServer({ name: 'resource-server',
	    version: '1.0.0' });
	server.registerTool('whoami', { description: 'Who the request that ' +
	    'carried this call was for' }, async () => ({
		content: [{ type: 'text', text: JSON.stringify(seen) }]
	}));
	return server;
}

function restDocument() {
	const origin = selfUrl.replace(/\/mcp$/, '');
	return { openapi: '3.0.3',
	    info: { title: 'resource server', version: '1.0.0' },
	    servers: [{ url: `${origin}/api` }],
	    paths: { '/whoami': { get: { operationId: 'whoami',
		summary: 'Who the request that carried this call was for',
		responses: { 200: { description: 'the token\'s claims',
		    content: { 'application/json': { schema: {
			type: 'object' } } } } } } } } };
}

function rest(req, res, path, seen) {
	if (req.method !== 'GET') {
		res.writeHead(405, { Allow: 'GET' });
		res.end();
		return;
	}
	stats.accepted++;
	let body = seen;
	if (path === '/api/openapi.json')
		body = restDocument();
	else if (seen.sub !== undefined)
		stats.subjects[seen.sub] = (stats.subjects[seen.sub] ?? 0) + 1;
	res.writeHead(200, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify(body));
}

async function handle(req, res) {
	const path = new URL(req.url, 'http://x').pathname;
	if (req.method === 'GET' && path === '/test/stats') {
		res.writeHead(200, { 'Content-Type': 'application/json' });
		res.end(JSON.stringify(stats));
		return;
	}
	if (req.method === 'POST' && path === '/test/revoke') {
		revoked.add(JSON.parse(await readBody(req)).token);
		res.writeHead(204);
		res.end();
		return;
	}
	if (path !== '/mcp' && path !== '/api/openapi.json' &&
	    path !== '/api/whoami')
		return refuse(res, 404, 'no such path');
	const seen = {};
	if (header !== undefined) {
		if (typeof req.headers[header] !== 'string')
			return refuse(res, 400, `no ${header} header`);
		seen.header = req.headers[header];
	}
	if (issuer !== undefined) {
		const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
		if (m === null)
			return refuse(res, 401, 'no bearer token');
		const claims = await check(m[1]);
		if (typeof claims === 'string')
			return refuse(res, 401, claims);
		const hash = createHash('sha256').update(m[1]).digest('hex')
		    .slice(0, 16);
		if (revoked.has(hash))
			return refuse(res, 401, 'revoked');
		Object.assign(seen, { sub: claims.sub, aud: claims.aud,
		    act: claims.act ?? null, client_id: claims.client_id ?? null,
		    token: hash });
	}
	if (path.startsWith('/api/'))
		return rest(req, res, path, seen);
	if (req.method !== 'POST') {
		res.writeHead(405, { Allow: 'POST' });
		res.end();
		return;
	}
	const body = JSON.parse(await readBody(req));
	stats.accepted++;
	if (body?.method === 'initialize')
		stats.initialize++;
	if (body?.method === 'tools/call' && seen.sub !== undefined)
		stats.subjects[seen.sub] = (stats.subjects[seen.sub] ?? 0) + 1;
	const server = mcpServer(seen);
	const transport = new StreamableHTTPServerTransport({
		sessionIdGenerator: undefined, enableJsonResponse: true });
	res.on('close', () => {
		transport.close();
		server.close();
	});
	await server.connect(transport);
	await transport.handleRequest(req, res, body);
}

const http = createServer((req, res) => {
	handle(req, res).catch((e) => {
		if (!res.headersSent)
			refuse(res, 500, String(e));
	});
});
if (issuer !== undefined)
	await fetchKeys();
http.listen(0, '127.0.0.1', () => {
	const port = http.address().port;
	selfUrl = `http://127.0.0.1:${port}/mcp`;
	process.stdout.write(JSON.stringify({ ready: true, port,
	    url: selfUrl }) + '\n');
});
function stop() {
	http.close(() => process.exit(0));
	http.closeAllConnections();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
