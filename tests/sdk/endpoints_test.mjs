#!/usr/bin/env node
/*
 * Endpoints (issue 26): two MCP endpoints on one listener, each with its
 * own tools and its own required scope, seen by the official SDK clients
 * of both revisions: the v1 client on sessions (2025-11-25) and the v2
 * client on the stateless path (2026-07-28).
 *
 *   node tests/sdk/endpoints_test.mjs http://127.0.0.1:PORT/mcp CAROL ALICE
 *
 * The daemon (tests/sdk/run.sh writes its conf) has builtin_tools on,
 * fixtures conformance, an auth block whose token_file knows the static
 * tokens CAROL (scopes team-echo team-fixtures) and ALICE (team-echo),
 * and two endpoint blocks:
 *   /mcp/echo      tools echo; prompts and resources denied; scope team-echo
 *   /mcp/fixtures  tools test_*; scope team-fixtures
 * On each, a client lists only that endpoint's tools and cannot call the
 * others' (-32602, unknown tool); a session of one is unknown (404) on the
 * other; a token without an endpoint's scope is refused there (403) with
 * that endpoint's own protected resource metadata, which names its own
 * resource.
 *
 * Prints one line per check and "endpoints_test: N passed, N failed, N
 * skipped" (tests/js/lib.mjs); exits non-zero on any failure or after
 * TEST_TIMEOUT_MS (default 30 s).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from
    '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 }
    from '@modelcontextprotocol/client';
import { check, runTests, short } from '../js/lib.mjs';

const base = new URL(process.argv[2]);
const CAROL = process.argv[3];
const ALICE = process.argv[4];
const at = (path) => new URL(path, base);
const ECHO = at('/mcp/echo');
const FIXTURES = at('/mcp/fixtures');

const auth = (token) => ({ headers: { Authorization: `Bearer ${token}` } });

async function v1(url, token) {
	const client = new Client({ name: 'mcpd-endpoints-v1', version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(url,
	    { requestInit: auth(token) });
	await client.connect(transport);
	return { client, transport };
}

async function v2(url, token) {
	const client = new ClientV2({ name: 'mcpd-endpoints-v2',
	    version: '1.0.0' }, { versionNegotiation:
	    { mode: { pin: '2026-07-28' } } });
	await client.connect(new TransportV2(url, { requestInit: auth(token) }));
	return { client };
}

async function callError(client, name, args) {
	try {
		const r = await client.callTool({ name, arguments: args });
		return { result: r };
	} catch (err) {
		return { code: err?.code, message: err?.message };
	}
}

/* The same checks for a client of either revision. */
async function endpointChecks(revision, connect) {
	const e = await connect(ECHO, CAROL);
	const f = await connect(FIXTURES, CAROL);
	const echo = (await e.client.listTools()).tools.map((t) => t.name);
	check(`${revision}: /mcp/echo lists only echo`, echo.join() === 'echo',
	    echo);
	const fx = (await f.client.listTools()).tools.map((t) => t.name);
	check(`${revision}: /mcp/fixtures lists only test_* tools`,
	    fx.length > 0 && fx.every((n) => n.startsWith('test_')), fx);
	const ok = await e.client.callTool({ name: 'echo',
	    arguments: { text: `${revision} here` } });
	check(`${revision}: echo called on /mcp/echo`,
	    ok.content?.[0]?.text === `${revision} here`, ok);
	const fok = await f.client.callTool({ name: 'test_simple_text',
	    arguments: {} });
	check(`${revision}: test_simple_text called on /mcp/fixtures`,
	    fok.content?.[0]?.type === 'text' && !fok.isError, fok);
	let r = await callError(e.client, 'test_simple_text', {});
	check(`${revision}: /mcp/fixtures' tool is unknown on /mcp/echo (-32602)`,
	    r.code === -32602 && /Unknown tool/.test(r.message ?? ''), r);
	r = await callError(f.client, 'echo', { text: 'x' });
	check(`${revision}: /mcp/echo's tool is unknown on /mcp/fixtures (-32602)`,
	    r.code === -32602 && /Unknown tool/.test(r.message ?? ''), r);
	const prompts = await e.client.listPrompts().then((x) => x.prompts,
	    (err) => err);
	check(`${revision}: /mcp/echo serves no prompt (prompts deny *)`,
	    Array.isArray(prompts) && prompts.length === 0, short(prompts));
	const fprompts = await f.client.listPrompts().then((x) => x.prompts,
	    (err) => err);
	check(`${revision}: /mcp/fixtures serves the fixtures' prompts`,
	    Array.isArray(fprompts) && fprompts.length > 0, short(fprompts));
	await e.client.close();
	await f.client.close();
}

/* A token without the endpoint's scope: 403 naming its own metadata. */
async function scopeChecks() {
	let err = null;
	try {
		await v1(FIXTURES, ALICE);
	} catch (e) {
		err = e;
	}
	check('v1: a token without team-fixtures cannot connect to /mcp/fixtures',
	    err !== null, 'connected');
	const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
	    params: { protocolVersion: '2025-11-25', capabilities: {},
	    clientInfo: { name: 'raw', version: '1' } } });
	const headers = { 'Content-Type': 'application/json',
	    Accept: 'application/json, text/event-stream',
	    Authorization: `Bearer ${ALICE}` };
	const res = await fetch(FIXTURES, { method: 'POST', headers, body });
	const challenge = res.headers.get('www-authenticate') ?? '';
	check('403 insufficient_scope naming team-fixtures and /mcp/fixtures\' ' +
	    'metadata', res.status === 403 && /insufficient_scope/.test(challenge) &&
	    /scope="[^"]*team-fixtures/.test(challenge) && challenge.includes(
	    'resource_metadata="https://mcpd.test/.well-known/' +
	    'oauth-protected-resource/mcp/fixtures"'), `${res.status} ${challenge}`);
	const alice = await v1(ECHO, ALICE);
	check('the same token connects to /mcp/echo', true);
	await alice.client.close();
	const md = await fetch(at('/.well-known/oauth-protected-resource/mcp/fixtures'));
	const doc = await md.json().catch(() => null);
	check('/mcp/fixtures has its own protected resource metadata',
	    md.status === 200 && doc?.resource === 'https://mcpd.test/mcp/fixtures' &&
	    doc?.scopes_supported?.includes('team-fixtures') &&
	    !doc?.scopes_supported?.includes('team-echo'), doc);
}

/* A session is its endpoint's: on another, it does not exist. */
async function sessionChecks() {
	const e = await v1(ECHO, CAROL);
	const sid = e.transport.sessionId;
	const res = await fetch(FIXTURES, { method: 'POST', headers: {
		'Content-Type': 'application/json',
		Accept: 'application/json, text/event-stream',
		Authorization: `Bearer ${CAROL}`, 'Mcp-Session-Id': sid,
		'MCP-Protocol-Version': '2025-11-25' },
	    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
	check('a session of /mcp/echo named on /mcp/fixtures: 404',
	    typeof sid === 'string' && res.status === 404, res.status);
	const echo = (await e.client.listTools()).tools.map((t) => t.name);
	check('and it goes on on its own endpoint', echo.join() === 'echo', echo);
	await e.client.close();
}

runTests('endpoints_test', async () => {
	await endpointChecks('v1', v1);
	await endpointChecks('v2', v2);
	await scopeChecks();
	await sessionChecks();
}, { timeoutMs: Number(process.env.TEST_TIMEOUT_MS || 30000) });
