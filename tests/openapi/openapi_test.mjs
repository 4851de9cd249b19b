#!/usr/bin/env node
/*
 * Issue 28: REST APIs as MCP tools through openapi blocks, seen by the
 * official MCP TypeScript SDK client.
 *
 *   node tests/openapi/openapi_test.mjs --mcpd ./mcpd [GROUP...]
 *
 * Each group starts its own mcpd (listen 127.0.0.1:0) and stops it at the
 * end (SIGTERM: exit 0, no sanitizer report):
 *
 *   prism    Prism (npm, mock mode) serving petshop-3.0.yaml (OpenAPI 3.0,
 *            YAML) and library-3.1.json (3.1, JSON), 36 operations in all:
 *            every tool listed with a schema ajv (draft 2020-12) compiles
 *            and nothing of OpenAPI's own left in it; every tool called
 *            with good arguments, which Prism's validation must pass, its
 *            structuredContent valid against its outputSchema; bad
 *            arguments answered 422 by Prism, an isError result naming
 *            it; a declared 404
 *   local    a node HTTP server of the test's own: the block's timeout, a
 *            slow call cut by the client's cancel (the server sees its
 *            request aborted), a response past max_response refused, a 5xx
 *            with a long body (bounded), a refused connection,
 *            max_concurrency, header lines (one from a file), path
 *            encoding, and one connection reused for calls in a row
 *   reload   SIGHUP: a changed document changes the tools (the client
 *            hears tools/list_changed), a broken one keeps them; a URL
 *            document fetched at start, kept when the fetch fails, taken
 *            again when it works
 *   check    mcpd -t lists the tools; a document that does not parse, and
 *            hostile ones ($ref chain, $ref cycle, huge enum, YAML alias
 *            bomb), refused by mcpd -t and at start with a clear message
 *   resume   a call whose client went away while the API answered: its
 *            answer was committed, and a GET with Last-Event-ID gets it
 *            (on the Redis log with MCPD_TEST_REDIS_URL)
 *
 * Prints one line per check and "openapi_test: N passed, N failed, N
 * skipped"; exits non-zero on any failure or after TEST_TIMEOUT_MS
 * (default 240 s).
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
	StreamableHTTPClientTransport
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
	CallToolResultSchema,
	ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import {
	REDIS_URL, check, removeTmp, runTests, setGroup, short, skip,
	startMcpd, tmpDir, waitFor
} from '../upstream/lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PRISM = path.join(HERE, 'node_modules/.bin/prism');
const PETSHOP = path.join(HERE, 'petshop-3.0.yaml');
const LIBRARY = path.join(HERE, 'library-3.1.json');
const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 240000);
const ALL = ['prism', 'local', 'reload', 'check', 'resume'];

let mcpdBin = null;
const daemons = [];
const children = [];
const servers = [];

async function mcpd(name, conf, opts = {}) {
	const d = await startMcpd(mcpdBin, name, conf, opts);
	daemons.push(d);
	return d;
}

async function stopAll() {
	while (daemons.length > 0) {
		const d = daemons.pop();
		const why = await d.stop();
		check(`mcpd ${d.name} stopped cleanly (exit 0, no sanitizer ` +
		    'report)', why === null, why ?? undefined);
	}
	for (const s of servers.splice(0))
		s.close();
	for (const c of children.splice(0))
		c.kill('SIGKILL');
}

function freePort() {
	return new Promise((resolve, reject) => {
		const s = net.createServer();
		s.on('error', reject);
		s.listen(0, '127.0.0.1', () => {
			const { port } = s.address();
			s.close(() => resolve(port));
		});
	});
}

function openapiBlock(name, lines) {
	return [`openapi ${name} {`, ...lines.map(l => `    ${l}`), '}']
	    .join('\n');
}

/* A client of mcpd's endpoint; records tools/list_changed. */
async function connect(url, name) {
	const transport = new StreamableHTTPClientTransport(url);
	const client = new Client({ name, version: '1.0.0' },
	    { capabilities: {} });
	const changed = [];
	client.setNotificationHandler(ToolListChangedNotificationSchema,
	    n => changed.push(n));
	await client.connect(transport);
	return {
		client, transport, changed,
		close: async () => {
			try {
				await transport.terminateSession();
			} catch {
				/* not what a test checks */
			}
			await client.close().catch(() => {});
		}
	};
}

async function call(client, name, args, opts) {
	try {
		return { res: await client.callTool({ name, arguments: args },
		    CallToolResultSchema, opts) };
	} catch (err) {
		return { err };
	}
}

async function metrics(d) {
	const res = await fetch(new URL('/metrics', d.url));
	return res.text();
}

const textOf = r => (r?.content ?? []).filter(c => c.type === 'text')
    .map(c => c.text).join('\n');
const errText = e => `${e?.code ?? ''} ${e?.message ?? String(e)}`;

/* ------------------------------------------------------------------ */
/* Prism */

async function startPrism(spec) {
	const port = await freePort();
	const proc = spawn(PRISM,
	    ['mock', '-h', '127.0.0.1', '-p', String(port), spec],
	    { stdio: ['ignore', 'pipe', 'pipe'] });
	children.push(proc);
	let log = '';
	proc.stdout.on('data', b => { log = (log + b).slice(-20000); });
	proc.stderr.on('data', b => { log = (log + b).slice(-20000); });
	const up = await waitFor(() => /Prism is listening/.test(log) ||
	    proc.exitCode !== null, 60000, 100);
	if (!up || proc.exitCode !== null)
		throw new Error(`prism did not start on ${spec}:\n${log}`);
	return { port, proc, log: () => log };
}

/* Where the keys are property names, not keywords. */
const NAMES_AT =
    /\/(properties|patternProperties|\$defs|dependentSchemas)$/;

/* Keywords of OpenAPI that a JSON Schema must not carry. */
function openapiLeftovers(schema, where = '') {
	const bad = [];
	const walk = (v, p) => {
		if (Array.isArray(v)) {
			v.forEach((x, i) => walk(x, `${p}/${i}`));
			return;
		}
		if (v === null || typeof v !== 'object')
			return;
		for (const [k, x] of Object.entries(v)) {
			/* Property names are the API's, not keywords. */
			const inNames = NAMES_AT.test(p);
			if (!inNames && (['nullable', 'discriminator',
			    'example', 'xml', 'externalDocs'].includes(k) ||
			    k.startsWith('x-')))
				bad.push(`${p}/${k}`);
			walk(x, `${p}/${k}`);
		}
	};
	walk(schema, where);
	return bad;
}

const ISBN = '978-0-13-110362-7';

/* Good arguments for every tool of both documents. */
const GOOD = {
	listPets: { limit: 5, tags: ['a', 'b'], status: 'available' },
	createPet: { body: { name: 'Rex', species: 'dog', tags: ['x'],
	    owner: { name: 'Ann',
		address: { street: 'Main', city: 'Oslo' } } } },
	getPet: { petId: 7 },
	updatePet: { petId: 7, body: { name: 'Rex' } },
	deletePet: { petId: 7,
	    'X-Request-Id': '3fa85f64-5717-4562-b3fc-2c963f66afa6' },
	patchPet: { petId: 7, body: { status: 'sold' } },
	listPhotos: { petId: 7, page: 1, per_page: 10 },
	addPhoto: { petId: 7,
	    body: { url: 'https://example.com/p.jpg', caption: 'hi' } },
	addVaccination: { petId: 7,
	    body: { vaccine: 'rabies', date: '2024-01-02', notes: 'ok' } },
	searchPets: { q: 'rex', fields: ['id', 'name'],
	    filter: { species: 'dog', minAge: 2 } },
	getInventory: {},
	placeOrder: { body: { items: [{ petId: 1, quantity: 2 }],
	    shipping: { address: { street: 'Main', zip: '12345' } } } },
	getOrder: { orderId: 'ord-12' },
	cancelOrder: { orderId: 'ord-12' },
	createUser: { body: { username: 'ann', email: 'ann@example.com',
	    phone: null, password: 'pw' } },
	getUserByName: { username: 'ann', session: 'abc' },
	listUserPets: { username: 'ann', status: ['available', 'sold'] },
	listCategories: {},
	health: {},

	listBooks: { author: 'Knuth', genre: 'science', year: 1968,
	    tags: ['classic', 'cs'] },
	createBook: { body: { isbn: ISBN, title: 'TAOCP', subtitle: null,
	    genre: 'science', format: 'print',
	    authors: [{ name: 'Knuth', born: 1938 }],
	    published: { year: 1968,
		publisher: { name: 'AW', city: 'Reading' } } } },
	getBook: { isbn: ISBN },
	replaceBook: { isbn: ISBN, body: { isbn: ISBN, title: 'T' } },
	patchBook: { isbn: ISBN, body: { copies: 3 } },
	deleteBook: { isbn: ISBN },
	listReviews: { isbn: ISBN, minRating: 3, sort: 'best' },
	addReview: { isbn: ISBN, body: { rating: 5, text: 'great',
	    reviewer: { name: 'Bo', email: 'bo@example.com' } } },
	listAuthors: { page: 2 },
	createAuthor: { body: { name: 'Knuth', born: null } },
	getAuthor: { authorId: 1 },
	listLoans: { status: ['open', 'late'], member: 'm1' },
	createLoan: { body: { isbn: ISBN, memberId: 1, due: '2025-01-01' } },
	returnLoan: { loanId: 4 },
	getMember: { memberId: 3, 'X-Library-Branch': 'north' },
	search: { q: 'knuth', filter: { genre: 'science', available: true } },
	stats: {}
};

/* Arguments mcpd sends as they are and Prism refuses (422). */
const BAD = [
	['listPets', { limit: 'abc' }, 'query parameter limit must be integer'],
	['searchPets', { q: 'x' }, 'minLength'],
	['getOrder', { orderId: 'bad' }, 'pattern'],
	['placeOrder', { body: { items: [] } }, 'minItems'],
	['listBooks', { year: 1000 }, 'exclusiveMinimum'],
	['getMember', { memberId: 3, 'X-Library-Branch': 'east' },
	    'allowed values'],
	['addReview', { isbn: ISBN, body: { rating: 9 } }, 'maximum']
];

async function groupPrism() {
	setGroup('prism');
	let p30, p31;
	try {
		[p30, p31] = await Promise.all([startPrism(PETSHOP),
		    startPrism(LIBRARY)]);
	} catch (err) {
		check('Prism starts', false, err.message);
		return;
	}
	const d = await mcpd('prism', [
		openapiBlock('shop', [`spec ${PETSHOP}`,
		    `base_url http://127.0.0.1:${p30.port}`]),
		openapiBlock('library', [`spec ${LIBRARY}`,
		    `base_url http://127.0.0.1:${p31.port}`,
		    'header X-Client mcpd-test'])
	].join('\n'));
	const c = await connect(d.url, 'prism');
	const { client } = c;
	const caps = client.getServerCapabilities() ?? {};
	check('tools capability with listChanged',
	    caps.tools?.listChanged === true, caps);

	const tools = (await client.listTools()).tools;
	const names = tools.map(t => t.name);
	const want = Object.keys(GOOD);
	check(`tools/list has the ${want.length} operations of both documents`,
	    want.every(n => names.includes(n)) && names.length === want.length,
	    `missing ${want.filter(n => !names.includes(n))}; ` +
	    `extra ${names.filter(n => !want.includes(n))}`);

	const ajv = new Ajv2020({ strict: false, allErrors: true });
	addFormats(ajv);
	const bad = [], leftovers = [], argsBad = [];
	const outputs = {};
	for (const t of tools) {
		for (const key of ['inputSchema', 'outputSchema']) {
			const s = t[key];
			if (s === undefined)
				continue;
			if (!ajv.validateSchema(s)) {
				bad.push(`${t.name}.${key}: ` +
				    ajv.errorsText(ajv.errors));
				continue;
			}
			try {
				const v = ajv.compile(s);
				if (key === 'outputSchema')
					outputs[t.name] = v;
				else if (GOOD[t.name] && !v(GOOD[t.name]))
					argsBad.push(`${t.name}: ` +
					    ajv.errorsText(v.errors));
			} catch (err) {
				bad.push(`${t.name}.${key}: ${err.message}`);
			}
			leftovers.push(...openapiLeftovers(s,
			    `${t.name}.${key}`));
		}
		if (t.inputSchema?.type !== 'object' || (t.outputSchema &&
		    t.outputSchema.type !== 'object'))
			bad.push(`${t.name}: a schema whose type is not ` +
			    'object');
	}
	check('every inputSchema and outputSchema is a valid JSON Schema ' +
	    '2020-12 (ajv)', bad.length === 0, bad);
	check('no OpenAPI keyword left in them (nullable, discriminator, ' +
	    'example, x-...)', leftovers.length === 0, leftovers);
	check('the test\'s good arguments fit the inputSchemas',
	    argsBad.length === 0, argsBad);
	const withOutput = tools.filter(t => t.outputSchema).length;
	check('outputSchema where one 2xx JSON response is declared ' +
	    '(most tools)', withOutput >= 25, withOutput);

	const getPet = tools.find(t => t.name === 'getPet');
	check('3.0 nullable made a type with null; readOnly id kept in output',
	    JSON.stringify(getPet?.outputSchema?.properties?.species?.type) ===
	    '["string","null"]' &&
	    getPet?.outputSchema?.required?.includes('id'),
	    getPet?.outputSchema);
	const createPet = tools.find(t => t.name === 'createPet');
	check('the request body is "body", required; readOnly left out of ' +
	    'input',
	    createPet?.inputSchema?.required?.includes('body') &&
	    createPet.inputSchema.properties.body.properties.id === undefined,
	    createPet?.inputSchema);
	const cats = tools.find(t => t.name === 'listCategories');
	check('a recursive schema refers to itself through $defs',
	    cats?.outputSchema?.$defs?.Category?.properties?.children?.items
	    ?.$ref === '#/$defs/Category', cats?.outputSchema);
	const author = tools.find(t => t.name === 'getAuthor');
	check('3.1: a description beside a $ref applies',
	    author?.outputSchema?.description ===
	    'The author, with a description beside the $ref',
	    author?.outputSchema);

	/* Every tool, good arguments: Prism's validation passes them. */
	const failed = [];
	for (const [name, args] of Object.entries(GOOD)) {
		const r = await call(client, name, args);
		if (r.err || r.res.isError) {
			failed.push(`${name}: ` + (r.err ? errText(r.err) :
			    textOf(r.res).slice(0, 400)));
			continue;
		}
		const v = outputs[name];
		if (v && !v(r.res.structuredContent))
			failed.push(`${name}: structuredContent: ` +
			    ajv.errorsText(v.errors));
		if (!v && !/^HTTP 2\d\d \(no content\)$/.test(textOf(r.res)) &&
		    r.res.content.length === 0)
			failed.push(`${name}: no content`);
	}
	check(`all ${want.length} tools called through the SDK client: ` +
	    'Prism took every request, and each structuredContent fits its ' +
	    'outputSchema', failed.length === 0, failed);

	const pets = await call(client, 'listPets', GOOD.listPets);
	check('an array response comes as structuredContent {result: [...]} ' +
	    'and as text', Array.isArray(pets.res?.structuredContent?.result) &&
	    JSON.parse(textOf(pets.res)).length ===
	    pets.res.structuredContent.result.length,
	    pets.res ?? errText(pets.err));

	for (const [name, args, why] of BAD) {
		const r = await call(client, name, args);
		check(`${name} ${short(args)}: Prism answers 422, an isError ` +
		    'result with status and body', r.res?.isError === true &&
		    /^HTTP 422 from /.test(textOf(r.res)) &&
		    textOf(r.res).includes(why), r.res ?? errText(r.err));
	}
	const nf = await call(client, 'getPet',
	    { petId: 77, Prefer: 'code=404' });
	check('a declared 404: isError, HTTP 404 and the body',
	    nf.res?.isError === true &&
	    textOf(nf.res).includes('HTTP 404 from GET') &&
	    textOf(nf.res).includes('no pet 77'), nf.res ?? errText(nf.err));
	const unknown = await call(client, 'getPet', { petId: 1, nope: 2 });
	check('an argument the tool lacks: isError, nothing sent',
	    unknown.res?.isError === true &&
	    textOf(unknown.res).includes("unknown argument 'nope'"),
	    unknown.res ?? errText(unknown.err));
	await c.close();
	p30.proc.kill();
	p31.proc.kill();
}

/* ------------------------------------------------------------------ */
/* A server of our own */

const LOCAL_SPEC = `openapi: 3.0.3
info: {title: Local, version: '1'}
paths:
  /slow:
    get:
      operationId: slow
      parameters: [{name: ms, in: query, schema: {type: integer}}]
      responses: {'200': {description: ok}}
  /big:
    get:
      operationId: big
      parameters: [{name: bytes, in: query, schema: {type: integer}}]
      responses: {'200': {description: ok}}
  /status/{code}:
    get:
      operationId: status
      parameters:
        - {name: code, in: path, required: true, schema: {type: integer}}
      responses: {'200': {description: ok}}
  /echo/{id}:
    get:
      operationId: echo
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: q, in: query, schema: {type: array, items: {type: string}}}
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: object}}}
`;

/*
 * The API of the local and reload groups: /slow?ms=N answers after N ms
 * (and counts requests aborted before), /big?bytes=N, /status/CODE,
 * /echo/ID (what came: url, headers, the client's port), /spec (the
 * document state.spec, or 500 while state.specBroken).
 */
function startApi() {
	const state = { aborted: 0, slowSeen: 0, slowDone: 0, spec: LOCAL_SPEC,
	    specBroken: false, specFetches: 0, echoes: [] };
	const server = http.createServer((req, res) => {
		const url = new URL(req.url, 'http://x');
		const json = (code, v) => {
			const body = JSON.stringify(v);
			res.writeHead(code, {
			    'Content-Type': 'application/json',
			    'Content-Length': Buffer.byteLength(body) });
			res.end(body);
		};
		if (url.pathname === '/slow') {
			state.slowSeen++;
			const ms = Number(url.searchParams.get('ms') || 10000);
			const t = setTimeout(() => {
				json(200, { slept: ms });
				state.slowDone++;
			}, ms);
			res.on('close', () => {
				if (!res.writableFinished) {
					clearTimeout(t);
					state.aborted++;
				}
			});
		} else if (url.pathname === '/big') {
			const n = Number(url.searchParams.get('bytes') || 0);
			json(200, { data: 'x'.repeat(n) });
		} else if (url.pathname.startsWith('/status/')) {
			const code = Number(url.pathname.slice(8));
			json(code, { error: `status ${code}`,
			    pad: 'p'.repeat(12000) });
		} else if (url.pathname.startsWith('/echo/')) {
			const e = { url: req.url, headers: req.headers,
			    port: req.socket.remotePort };
			state.echoes.push(e);
			json(200, e);
		} else if (url.pathname === '/spec') {
			state.specFetches++;
			if (state.specBroken)
				json(500, { error: 'down' });
			else {
				res.writeHead(200,
				    { 'Content-Type': 'application/yaml' });
				res.end(state.spec);
			}
		} else
			json(404, { error: 'no route' });
	});
	servers.push(server);
	return new Promise(resolve => server.listen(0, '127.0.0.1', () => {
		state.port = server.address().port;
		state.url = `http://127.0.0.1:${state.port}`;
		resolve(state);
	}));
}

async function groupLocal() {
	setGroup('local');
	const api = await startApi();
	const dir = tmpDir('local');
	const specPath = path.join(dir, 'local.yaml');
	fs.writeFileSync(specPath, LOCAL_SPEC);
	const keyPath = path.join(dir, 'api.key');
	fs.writeFileSync(keyPath, 'k3y-from-a-file\n');
	const closed = await freePort();
	const d = await mcpd('local', [
		openapiBlock('local', [`spec ${specPath}`,
		    `base_url ${api.url}/`, 'timeout 2', 'max_response 16k',
		    'max_concurrency 2',
		    `header X-Api-Key file:${keyPath}`,
		    'header X-Team "platform team"']),
		openapiBlock('dead', [`spec ${specPath}`,
		    `base_url http://127.0.0.1:${closed}`,
		    'prefix dead_', 'operations allow echo'])
	].join('\n'));
	const c = await connect(d.url, 'local');
	const { client } = c;
	const names = (await client.listTools()).tools.map(t => t.name).sort();
	check('two blocks on one document: prefix and operations allow',
	    JSON.stringify(names) ===
	    '["big","dead_echo","echo","slow","status"]', names);

	/* Header lines, path encoding, query arrays; one connection reused. */
	api.echoes.length = 0;
	let r = await call(client, 'echo', { id: 'a b/ü', q: ['x', 'y&z'] });
	const e = r.res?.structuredContent;
	check('path and query encoded as the document says',
	    e?.url === '/echo/a%20b%2F%C3%BC?q=x&q=y%26z',
	    r.res ?? errText(r.err));
	check('header lines sent: one from a file, one with a blank',
	    e?.headers?.['x-api-key'] === 'k3y-from-a-file' &&
	    e?.headers?.['x-team'] === 'platform team' &&
	    /^mcpd\//.test(e?.headers?.['user-agent'] ?? ''), e?.headers);
	for (let i = 0; i < 3; i++)
		await call(client, 'echo', { id: String(i) });
	const ports = new Set(api.echoes.map(x => x.port));
	check('calls in a row go over one kept-alive connection',
	    api.echoes.length === 4 && ports.size === 1,
	    api.echoes.map(x => x.port));

	/* The block's timeout. */
	r = await call(client, 'slow', { ms: 10000 });
	check('past the block\'s timeout: isError naming it',
	    r.res?.isError === true && new RegExp('^timeout: GET .*/slow\\?' +
	    'ms=10000 gave no whole response within 2 s').test(textOf(r.res)),
	    r.res ?? errText(r.err));

	/* Cancelled by the client: the request to the API is aborted. */
	const before = api.aborted, seen = api.slowSeen;
	const ac = new AbortController();
	const pending = call(client, 'slow', { ms: 60000 }, { signal: ac.signal,
	    timeout: 120000 });
	await waitFor(() => api.slowSeen > seen, 10000);
	ac.abort();
	r = await pending;
	check('the client cancels: the SDK call ends', r.err !== undefined,
	    r.res);
	const aborted = await waitFor(() => api.aborted > before, 10000);
	check('the client cancels: mcpd aborts the request to the API', aborted,
	    { aborted: api.aborted });

	/* max_concurrency 2: a third call while two run is refused. */
	const s1 = call(client, 'slow', { ms: 1500 });
	const s2 = call(client, 'slow', { ms: 1500 });
	await waitFor(() => api.slowSeen >= seen + 3, 10000);
	const m = await metrics(d);
	check('/metrics: the block\'s tools, and its two calls in flight',
	    /^mcpd_openapi_tools\{openapi="local"\} 4$/m.test(m) &&
	    /^mcpd_openapi_calls_inflight\{openapi="local"\} 2$/m.test(m) &&
	    /^mcpd_openapi_tools\{openapi="dead"\} 1$/m.test(m),
	    m.split('\n').filter(l => l.includes('openapi')).join('\n'));
	r = await call(client, 'echo', { id: 'busy' });
	check('max_concurrency: a call beyond it is "busy"',
	    r.res?.isError === true &&
	    /^busy: openapi local has 2 calls in flight/.test(textOf(r.res)),
	    r.res ?? errText(r.err));
	const [a1, a2] = await Promise.all([s1, s2]);
	check('the two calls in flight finish',
	    a1.res?.structuredContent?.slept === 1500 &&
	    a2.res?.structuredContent?.slept === 1500, [a1.res, a2.res]);

	/* max_response 16k: refused, not cut. */
	r = await call(client, 'big', { bytes: 16000 });
	check('a response under max_response comes whole',
	    r.res?.structuredContent?.data?.length === 16000,
	    r.res ?? errText(r.err));
	r = await call(client, 'big', { bytes: 17000 });
	check('a response over max_response is refused, saying so',
	    r.res?.isError === true &&
	    textOf(r.res).includes('more than max_response (16384 bytes)') &&
	    r.res.structuredContent === undefined, r.res ?? errText(r.err));

	/* Error statuses, their bodies bounded. */
	r = await call(client, 'status', { code: 503 });
	const t = textOf(r.res);
	check('a 5xx: isError with status and the start of the body',
	    r.res?.isError === true && t.startsWith('HTTP 503 from GET') &&
	    t.includes('"error":"status 503"') &&
	    new RegExp('\\[the body is cut: the first 8192 of 120\\d\\d ' +
	    'bytes are shown\\]').test(t),
	    t.slice(0, 300) + ' ... ' + t.slice(-200));
	r = await call(client, 'status', { code: 404 });
	check('a 4xx: isError with status', r.res?.isError === true &&
	    textOf(r.res).startsWith('HTTP 404 from GET'),
	    r.res ?? errText(r.err));

	/* Nobody listening. */
	r = await call(client, 'dead_echo', { id: 'x' });
	check('a refused connection: isError naming it',
	    r.res?.isError === true &&
	    /^connection failed: GET http:\/\/127\.0\.0\.1:\d+\/echo\/x/
	    .test(textOf(r.res)), r.res ?? errText(r.err));
	await c.close();
}

/* ------------------------------------------------------------------ */
/* Reload */

async function groupReload() {
	setGroup('reload');
	const api = await startApi();
	const dir = tmpDir('reload');
	const specPath = path.join(dir, 'api.yaml');
	fs.writeFileSync(specPath, LOCAL_SPEC);
	api.spec = LOCAL_SPEC.replace(/operationId: (\w+)/g,
	    'operationId: remote_$1');
	const d = await mcpd('reload', [
		openapiBlock('file', [`spec ${specPath}`,
		    `base_url ${api.url}`]),
		openapiBlock('url', [`spec ${api.url}/spec`,
		    `base_url ${api.url}`, 'timeout 2'])
	].join('\n'));
	const c = await connect(d.url, 'reload');
	const { client } = c;
	const list = async () => (await client.listTools()).tools
	    .map(t => t.name).sort();
	let names = [];
	const fetched = await waitFor(async () => (names = await list())
	    .includes('remote_echo'), 10000);
	check('a URL document is fetched at start: its tools come', fetched &&
	    names.length === 8, names);

	/* The file changes: one operation more, one less. */
	fs.writeFileSync(specPath, LOCAL_SPEC
	    .replace('operationId: big', 'operationId: huge')
	    .replace(/ {2}\/slow:[^]*?(?= {2}\/big:)/, ''));
	const heard = c.changed.length;
	process.kill(d.pid, 'SIGHUP');
	const took = await waitFor(async () => (names = await list())
	    .includes('huge'), 10000);
	check('SIGHUP takes up a changed document', took &&
	    !names.includes('slow') && !names.includes('big'), names);
	check('the client hears tools/list_changed',
	    await waitFor(() => c.changed.length > heard, 5000),
	    c.changed.length);
	let r = await call(client, 'huge', { bytes: 10 });
	check('the new tool works',
	    r.res?.structuredContent?.data === 'x'.repeat(10),
	    r.res ?? errText(r.err));

	/* A broken document and a failed fetch keep what was served. */
	fs.writeFileSync(specPath, 'openapi: 3.0.3\npaths: [unclosed\n');
	api.specBroken = true;
	const fetches = api.specFetches;
	process.kill(d.pid, 'SIGHUP');
	const logged = await waitFor(() => new RegExp('openapi file: cannot ' +
	    'take .*: YAML line \\d+.*; its 3 tools stay').test(d.stderr) &&
	    /openapi url: cannot fetch .*: HTTP 500; its 4 tools stay/
	    .test(d.stderr), 10000);
	check('a document that does not parse, a fetch that fails: one line ' +
	    'each, tools kept', logged && api.specFetches > fetches, d.tail(8));
	names = await list();
	check('/metrics counts the failed readings',
	    /^mcpd_openapi_document_failures_total\{openapi="file"\} 1$/m
	    .test(await metrics(d)) &&
	    /^mcpd_openapi_document_failures_total\{openapi="url"\} [1-9]/m
	    .test(await metrics(d)));
	check('the tools are still served', names.includes('huge') &&
	    names.includes('remote_echo') && names.length === 7, names);
	r = await call(client, 'remote_echo', { id: 'kept' });
	check('and still work', r.res?.structuredContent?.url === '/echo/kept',
	    r.res ?? errText(r.err));

	/* The URL answers again, with another document. */
	api.specBroken = false;
	api.spec = LOCAL_SPEC.replace('operationId: echo',
	    'operationId: echo2');
	fs.writeFileSync(specPath, LOCAL_SPEC);
	process.kill(d.pid, 'SIGHUP');
	const again = await waitFor(async () =>
	    (names = await list()).includes('echo2') &&
	    names.includes('slow'), 10000);
	check('fixed: both documents taken again', again, names);
	await c.close();
}

/* ------------------------------------------------------------------ */
/* mcpd -t and start */

function mcpdT(conf) {
	const dir = tmpDir('check');
	const p = path.join(dir,
	    `t${Math.random().toString(36).slice(2)}.conf`);
	fs.writeFileSync(p, `listen 127.0.0.1:0\neventlog memory\n${conf}\n`);
	const t = spawnSync(mcpdBin, ['-t', '-c', p],
	    { encoding: 'utf8', timeout: 30000 });
	const start = spawnSync(mcpdBin, ['-c', p],
	    { encoding: 'utf8', timeout: 30000, env: { ...process.env,
	    ASAN_OPTIONS: 'detect_leaks=1:exitcode=99' } });
	return { t, start };
}

function refChain(n) {
	const schemas = {};
	for (let i = 0; i < n; i++)
		schemas[`S${i}`] = { $ref: `#/components/schemas/S${i + 1}` };
	schemas[`S${n}`] = { type: 'string' };
	return JSON.stringify({ openapi: '3.0.3',
	    info: { title: 'x', version: '1' },
	    paths: { '/a': { get: { operationId: 'a',
		parameters: [{ name: 'q', in: 'query',
		    schema: { $ref: '#/components/schemas/S0' } }],
		responses: {} } } },
	    components: { schemas } });
}

async function groupCheck() {
	setGroup('check');
	const dir = tmpDir('check');
	const write = (name, text) => {
		const p = path.join(dir, name);
		fs.writeFileSync(p, text);
		return p;
	};
	const block = spec => openapiBlock('api', [`spec ${spec}`,
	    'base_url http://127.0.0.1:9']);

	let { t } = mcpdT(block(PETSHOP));
	check('mcpd -t: configuration ok, a line per tool',
	    t.status === 0 && new RegExp('openapi api: 19 tools from ' +
	    '.*petshop-3\\.0\\.yaml \\(OpenAPI 3\\.0\\.3, "Pet shop"\\)')
	    .test(t.stdout) &&
	    /openapi api: {3}getPet {2}GET \/pets\/\{petId\}/.test(t.stdout) &&
	    /configuration ok/.test(t.stdout), t.stdout + t.stderr);
	({ t } = mcpdT(openapiBlock('api', [`spec ${LIBRARY}`])));
	check('mcpd -t: a file whose server is relative needs base_url',
	    t.status === 1 && t.stderr.includes('the document\'s server ' +
	    '"/api" is relative to a file: set base_url'), t.stderr);

	/* A URL's document: fetched by mcpd -t (its server answers). */
	const api = await startApi();
	const tconf = path.join(dir, 'url.conf');
	const ublock = openapiBlock('api', [`spec ${api.url}/spec`,
	    'header X-Api-Key k']);
	fs.writeFileSync(tconf,
	    `listen 127.0.0.1:0\neventlog memory\n${ublock}\n`);
	const checkAsync = () => new Promise(resolve => {
		const p = spawn(mcpdBin, ['-t', '-c', tconf]);
		let out = '', err = '';
		p.stdout.on('data', b => { out += b; });
		p.stderr.on('data', b => { err += b; });
		p.on('exit', code => resolve({ code, out, err }));
	});
	let tu = await checkAsync();
	check('mcpd -t fetches a URL document and lists its tools',
	    tu.code === 0 &&
	    /openapi api: 4 tools from http:\/\/127\.0\.0\.1:\d+\/spec/
	    .test(tu.out) && api.specFetches === 1, tu.out + tu.err);
	api.specBroken = true;
	tu = await checkAsync();
	check('mcpd -t: a URL that answers 500 is an error saying so',
	    tu.code === 1 &&
	    /openapi api: http:\/\/.*\/spec: cannot fetch: HTTP 500/
	    .test(tu.err),
	    tu.out + tu.err);

	const info = { title: 'x', version: '1' };
	const ref = n => ({ $ref: `#/components/schemas/${n}` });
	const letter = i => String.fromCharCode(97 + i);
	const cases = [
		['a document that does not parse', write('broken.yaml',
		    'openapi: 3.0.3\npaths: {a: [}\n'),
		    /openapi api: .*broken\.yaml: YAML line 2/],
		['not OpenAPI 3', write('swagger.json',
		    '{"swagger": "2.0", "paths": {}}'),
		    /Swagger 2\.0 is not supported: convert it to OpenAPI 3/],
		['a chain of 100 $refs', write('chain.json', refChain(100)),
		    new RegExp('operation GET /a \\(a\\): parameter q: a ' +
		    'chain of more than 64 \\$refs')],
		['a cycle of $refs', write('cycle.json', JSON.stringify({
		    openapi: '3.1.0', info, paths: { '/a': { post: {
			requestBody: { content: { 'application/json':
			    { schema: ref('A') } } },
			responses: {} } } },
		    components: { schemas: { A: ref('B'), B: ref('A') } } })),
		    /a cycle of \$refs that never reaches a schema/],
		['an enum of 5000 values', write('enum.json', JSON.stringify({
		    openapi: '3.0.3', info, paths: { '/a': { get: {
			parameters: [{ name: 'e', in: 'query',
			    schema: { type: 'integer',
				enum: [...Array(5000).keys()] } }],
			responses: {} } } } })),
		    /an enum of 5000 values \(more than 1000\)/],
		['a YAML alias bomb', write('bomb.yaml', 'openapi: 3.0.3\n' +
		    'a: &a [x, x, x, x, x, x, x, x, x, x]\n' +
		    [...Array(8).keys()].map(i =>
			`${letter(i + 1)}: &${letter(i + 1)} [` +
			Array(10).fill(`*${letter(i)}`).join(', ') + ']')
		    .join('\n') + '\n'),
		    /more than 1000000 nodes once aliases are expanded/],
		['a missing file', path.join(dir, 'nowhere.yaml'),
		    /nowhere\.yaml: No such file/]
	];
	for (const [what, spec, want] of cases) {
		const { t: tt, start } = mcpdT(block(spec));
		check(`mcpd -t refuses ${what}, saying why`,
		    tt.status === 1 && want.test(tt.stderr),
		    tt.stderr || tt.stdout);
		check(`mcpd does not start on ${what}`,
		    start.status === 1 && want.test(start.stderr),
		    start.stderr || start.status);
	}
}

/* ------------------------------------------------------------------ */
/* Resume */

/* The SSE events of a response body so far. */
function sseEvents(text) {
	return text.split('\n\n').filter(b => b.trim()).map(b => {
		const e = {};
		for (const line of b.split('\n')) {
			const m = /^(\w+): ?(.*)$/.exec(line);
			if (m)
				e[m[1]] = (e[m[1]] ? e[m[1]] + '\n' : '') +
				    m[2];
		}
		return e;
	});
}

async function groupResume() {
	setGroup('resume');
	const api = await startApi();
	const dir = tmpDir('resume');
	const specPath = path.join(dir, 'api.yaml');
	fs.writeFileSync(specPath, LOCAL_SPEC);
	const d = await mcpd('resume', openapiBlock('api', [`spec ${specPath}`,
	    `base_url ${api.url}`]), REDIS_URL ? { eventlog: REDIS_URL } : {});
	if (!REDIS_URL)
		skip('on the Redis log',
		    'MCPD_TEST_REDIS_URL is not set; on the memory log');
	const hdr = { 'Content-Type': 'application/json',
	    Accept: 'application/json, text/event-stream' };
	let res = await fetch(d.url, { method: 'POST', headers: hdr,
	    body: JSON.stringify({ jsonrpc: '2.0', id: 1,
		method: 'initialize', params: {
		    protocolVersion: '2025-11-25', capabilities: {},
		    clientInfo: { name: 'resume', version: '1' } } }) });
	const sid = res.headers.get('mcp-session-id');
	await res.text();
	const sh = { ...hdr, 'Mcp-Session-Id': sid,
	    'MCP-Protocol-Version': '2025-11-25' };
	await (await fetch(d.url, { method: 'POST', headers: sh,
	    body: JSON.stringify({ jsonrpc: '2.0',
		method: 'notifications/initialized' }) })).text();

	/* The call; the client reads the priming event and goes away. */
	const ac = new AbortController();
	const seen = api.slowSeen;
	res = await fetch(d.url, { method: 'POST', headers: sh,
	    signal: ac.signal, body: JSON.stringify({ jsonrpc: '2.0', id: 2,
		method: 'tools/call',
		params: { name: 'slow', arguments: { ms: 1200 } } }) });
	const reader = res.body.getReader();
	let text = '';
	while (!/\n\n/.test(text)) {
		const { value, done } = await reader.read();
		if (done)
			break;
		text += new TextDecoder().decode(value);
	}
	const prime = sseEvents(text)[0]?.id;
	ac.abort();
	check('the call\'s response opens with a priming id',
	    /^\d+-0$/.test(prime ?? ''), text);
	const done = api.slowDone;
	check('the API answers after the client left (the call was not cut)',
	    await waitFor(() => api.slowDone > done, 10000) &&
	    api.aborted === 0,
	    { seen: api.slowSeen - seen, aborted: api.aborted });

	res = await fetch(d.url, { method: 'GET',
	    headers: { ...sh, 'Last-Event-ID': prime } });
	const body = await res.text();
	const events = sseEvents(body);
	const answer = events.find(e => e.data && e.data.includes('"id":2'));
	let msg = null;
	try {
		msg = JSON.parse(answer?.data ?? 'null');
	} catch { /* checked below */ }
	const k = prime.split('-')[0];
	check('a GET with Last-Event-ID gets the committed answer, the next id',
	    res.status === 200 && answer?.id === `${k}-1` &&
	    msg?.result?.structuredContent?.slept === 1200 &&
	    /"slept":1200/.test(msg?.result?.content?.[0]?.text ?? ''), body);
}

/* ------------------------------------------------------------------ */

async function main() {
	const args = process.argv.slice(2);
	const i = args.indexOf('--mcpd');
	if (i < 0 || !args[i + 1]) {
		console.error('usage: openapi_test.mjs --mcpd MCPD [GROUP...]');
		process.exit(2);
	}
	mcpdBin = path.resolve(args[i + 1]);
	args.splice(i, 2);
	const groups = args.length > 0 ? args : ALL;
	const runs = { prism: groupPrism, local: groupLocal,
	    reload: groupReload, check: groupCheck, resume: groupResume };
	for (const g of groups) {
		if (!runs[g]) {
			check(`group ${g} exists`, false, `groups: ${ALL}`);
			continue;
		}
		if (g === 'prism' && !fs.existsSync(PRISM)) {
			setGroup(g);
			skip('Prism', `${PRISM} missing (make deps)`);
			continue;
		}
		try {
			await runs[g]();
		} catch (err) {
			check(`group ${g} ran without an exception`, false,
			    err?.stack ?? String(err));
		}
		setGroup(g);
		await stopAll();
	}
}

runTests('openapi_test', main, {
	timeoutMs: TEST_TIMEOUT_MS,
	onTimeout: () => {
		for (const d of daemons)
			d.proc.kill('SIGKILL');
		for (const c of children)
			c.kill('SIGKILL');
	},
	cleanup: () => {
		for (const c of children)
			c.kill('SIGKILL');
		for (const s of servers)
			s.close();
		removeTmp();
	}
});
