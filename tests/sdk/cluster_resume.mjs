#!/usr/bin/env node
/*
 * Issue 12: the official MCP TypeScript SDK client resumes exactly once
 * through a load balancer (run by tests/cluster/test_cluster.py against
 * nginx in front of three mcpd on one Redis; it lives here to use this
 * directory's pinned node_modules).
 *
 *   node tests/sdk/cluster_resume.mjs http://127.0.0.1:NGINX_PORT/mcp
 *
 * Five rounds, each with a new client and session: a `stream` call (n=40,
 * 25 ms apart, progress token) goes through a TCP proxy in front of nginx
 * that cuts the connection carrying its SSE response (RST, in the middle of
 * an event) after CUTS[i] progress notifications. The SDK resumes on its own
 * (GET + Last-Event-ID, through nginx, so on whichever instance nginx
 * picks). A round passes when the proxy cut, the SDK resumed with 200,
 * every progress 1..40 arrived exactly once and in order, the response to
 * the call arrived exactly once (counted on the transport, before the SDK's
 * own bookkeeping could hide a duplicate) with "done 40", and the event ids
 * form one unbroken K-1..K-41 sequence.
 *
 * Prints one line per round and "cluster_resume: N passed, N failed, N
 * skipped" (tests/js/lib.mjs).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, parseId, runTests, short, sleep, startProxy } from '../js/lib.mjs';

const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 50000);
const STREAM_N = 40;
const STREAM_INTERVAL_MS = 25;
const CUTS = [1, 5, 12, 24, 39];

/* One round; returns null when it passed, else why not. */
async function round(url, cutAfter) {
	const proxy = await startProxy(url, { cutAfter });
	const gets = [];
	const transport = new StreamableHTTPClientTransport(proxy.url, {
		fetch: async (input, init = {}) => {
			const lastEventId = new Headers(init.headers).get('last-event-id');
			const res = await fetch(input, init);
			if ((init.method || 'GET') === 'GET' && lastEventId)
				gets.push({ lastEventId, status: res.status });
			return res;
		},
		reconnectionOptions: {
			initialReconnectionDelay: 100,
			maxReconnectionDelay: 1000,
			reconnectionDelayGrowFactor: 1.5,
			maxRetries: 5
		}
	});
	const client = new Client({ name: 'mcpd-cluster-test', version: '1.0.0' },
	    { capabilities: {} });
	const problems = [];
	try {
		await client.connect(transport);
		/* Every message the transport hands up, before the SDK's protocol
		 * layer (which drops a response it no longer waits for). */
		const up = transport.onmessage;
		const seen = [];
		transport.onmessage = (msg, extra) => {
			seen.push(msg);
			up(msg, extra);
		};
		const progress = [];
		const ids = [];
		let result;
		try {
			result = await client.callTool(
			    { name: 'stream', arguments: { n: STREAM_N, interval_ms: STREAM_INTERVAL_MS } },
			    CallToolResultSchema, {
				    onprogress: p => progress.push(p.progress),
				    onresumptiontoken: id => ids.push(id),
				    timeout: 15000
			    });
		} catch (err) {
			problems.push(`call failed: ${err?.message || err}`);
		}
		/* A duplicate response would come after the result: let it. */
		await sleep(200);
		if (proxy.cuts !== 1)
			problems.push(`the proxy did not cut (cuts=${proxy.cuts})`);
		if (!gets.some(g => g.status === 200))
			problems.push(`no resume GET answered 200: ${short(gets)}`);
		const want = Array.from({ length: STREAM_N }, (_, i) => i + 1).join();
		if (progress.join() !== want)
			problems.push(`progress [${progress.join()}]`);
		const responses = seen.filter(m => m.result !== undefined || m.error !== undefined);
		if (responses.length !== 1)
			problems.push(`${responses.length} responses: ${short(responses)}`);
		const text = result?.content?.find(c => c.type === 'text')?.text;
		if (result !== undefined && (text !== `done ${STREAM_N}` || result.isError))
			problems.push(`result ${short(result)}`);
		/* The priming event (K-0, no data) may be reported too. */
		if (ids.length > 0 && parseId(ids[0])?.n === 0)
			ids.shift();
		const parsed = ids.map(parseId);
		const contiguous = parsed.length === STREAM_N + 1 &&
		    parsed.every((p, i) => p !== null && p.k === parsed[0].k && p.n === i + 1);
		if (!contiguous)
			problems.push(`event ids [${ids.join()}], expected K-1..K-${STREAM_N + 1}`);
	} catch (err) {
		problems.push(`initialize through the proxy: ${err?.message || err}`);
	}
	try {
		await transport.terminateSession();
	} catch {
		/* not what this tests */
	}
	await client.close().catch(() => {});
	proxy.close();
	return problems.length === 0 ? null : problems.join('; ');
}

const arg = process.argv[2];
if (!arg) {
	console.error('usage: node cluster_resume.mjs http://127.0.0.1:PORT/mcp');
	process.exit(2);
}
const url = new URL(arg);
runTests('cluster_resume', async () => {
	for (const cutAfter of CUTS) {
		const why = await round(url, cutAfter);
		check(`cut after ${cutAfter} progress notifications: resumed ` +
		    'exactly once', why === null, why);
	}
}, { timeoutMs: TEST_TIMEOUT_MS });
