#!/usr/bin/env node
/*
 * Interop test: the official MCP TypeScript SDK v2 client
 * (@modelcontextprotocol/client) against mcpd's stateless path.
 *
 *   node tests/sdk/client_v2_test.mjs http://127.0.0.1:PORT/mcp
 *
 * For the negotiation pinned to 2026-07-28 and for `auto`: connect
 * (server/discover), the era and the server's identity, tools/list,
 * tools/call echo, and the fixtures' test_input_required_result_elicitation,
 * whose input_required result the client answers through its
 * elicitation/create handler and retries with the requestState (MRTR).
 * The daemon needs `fixtures conformance` and `builtin_tools on`.
 *
 * Prints one line per check and "client_v2_test: N passed, N failed, N
 * skipped" (tests/js/lib.mjs); exits non-zero on any failure or after
 * TEST_TIMEOUT_MS (default 30 s).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { check, runTests } from '../js/lib.mjs';

const url = new URL(process.argv[2]);

async function run(mode) {
	const label = typeof mode === 'string' ? mode : `pin ${mode.pin}`;
	const client = new Client({ name: 'mcpd-sdk-v2-test', version: '1.0.0' },
	    { capabilities: { elicitation: {} }, versionNegotiation: { mode } });
	const asked = [];
	client.setRequestHandler('elicitation/create', async (req) => {
		asked.push(req.params.message);
		return { action: 'accept', content: { name: 'Ada' } };
	});
	await client.connect(new StreamableHTTPClientTransport(url));
	check(`${label}: negotiated 2026-07-28`,
	    client.getNegotiatedProtocolVersion() === '2026-07-28',
	    client.getNegotiatedProtocolVersion());
	const info = client.getServerVersion();
	check(`${label}: server identifies as mcpd`, info?.name === 'mcpd',
	    JSON.stringify(info));
	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name);
	check(`${label}: tools/list has echo and the MRTR fixture`,
	    names.includes('echo') &&
	    names.includes('test_input_required_result_elicitation'),
	    JSON.stringify(names));
	const echo = await client.callTool({ name: 'echo',
	    arguments: { text: 'hello v2' } });
	check(`${label}: tools/call echo`,
	    echo.content?.[0]?.text === 'hello v2', JSON.stringify(echo));
	const elicited = await client.callTool({
	    name: 'test_input_required_result_elicitation', arguments: {} });
	check(`${label}: elicitation answered through MRTR`,
	    elicited.content?.[0]?.text === 'Hello, Ada!' && asked.length === 1 &&
	    asked[0] === 'What is your name?',
	    `${JSON.stringify(elicited)} asked ${JSON.stringify(asked)}`);
	await client.close();
}

runTests('client_v2_test', async () => {
	await run({ pin: '2026-07-28' });
	await run('auto');
}, { timeoutMs: Number(process.env.TEST_TIMEOUT_MS || 30000) });
