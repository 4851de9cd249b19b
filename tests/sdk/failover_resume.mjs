#!/usr/bin/env node
/*
 * Issue 24: the official MCP TypeScript SDK client among the clients of a
 * Redis failover (run by tests/redis/test_sentinel.py, which triggers the
 * failover; it lives here to use this directory's pinned node_modules).
 *
 *   node tests/sdk/failover_resume.mjs http://127.0.0.1:PORT/mcp MODE
 *
 * One `stream` call (n=60, 100 ms apart, a progress token) through the TCP
 * proxy of tests/js/lib.mjs, which cuts the connection carrying its SSE
 * response (RST, in the middle of an event) after 10 progress
 * notifications; the SDK resumes on its own (GET + Last-Event-ID). It
 * prints "started" once the call has 3 progress notifications: the test
 * starts the failover then, so the call runs across it.
 *
 * MODE exact (commit replicas:1): passes when every progress 1..60
 * arrived exactly once and in order, the one response says "done 60", and
 * the event ids form one unbroken K-1..K-61 sequence. MODE exact-or-gone
 * (commit primary, which a failover may roll back): passes that way, or
 * when a resume was answered 410, or when the call ended with the
 * documented error (the event log lost or diverged from its stream),
 * what arrived before unbroken; never when a progress comes twice, one
 * is skipped, or the call hangs.
 *
 * The SDK (1.32.2) keeps a stream's last event id per response: when a
 * resumed response (GET + Last-Event-ID, which per the wire contract
 * starts with a bare retry:, no id) ends before its first event, for
 * instance as the event log fails over, the SDK's next attempt is a GET
 * with no Last-Event-ID at all, which opens the session's standalone
 * stream, and the call is never heard of again. The fetch below puts
 * the call's last id back on such a GET (counted, and printed), so what
 * is tested is mcpd's answer to a client that resumes correctly.
 *
 * Prints one check line and "failover_resume: N passed, N failed, N
 * skipped" (tests/js/lib.mjs).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, parseId, runTests, short, sleep, startProxy } from '../js/lib.mjs';

const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 90000);
const STREAM_N = 60;
const STREAM_INTERVAL_MS = 100;
const CUT_AFTER = 10;

async function run(url, mode) {
	const proxy = await startProxy(url, { cutAfter: CUT_AFTER });
	const gets = [];
	/* A 410 ends the call at once: the SDK would retry it until its
	 * request timeout. */
	const gone = new AbortController();
	const ids = [];
	let repaired = 0;
	const transport = new StreamableHTTPClientTransport(proxy.url, {
		fetch: async (input, init = {}) => {
			const headers = new Headers(init.headers);
			const callId = ids.length > 0 ? ids[ids.length - 1] : null;
			if ((init.method || 'GET') === 'GET' && callId &&
			    !headers.has('last-event-id') && proxy.cuts > 0) {
				headers.set('last-event-id', callId);
				init = { ...init, headers };
				repaired++;
			}
			const lastEventId = headers.get('last-event-id');
			const res = await fetch(input, init);
			if ((init.method || 'GET') === 'GET' && lastEventId) {
				gets.push({ lastEventId, status: res.status });
				if (res.status === 410 && mode === 'exact-or-gone')
					gone.abort();
			}
			return res;
		},
		reconnectionOptions: {
			initialReconnectionDelay: 200,
			maxReconnectionDelay: 2000,
			reconnectionDelayGrowFactor: 1.5,
			maxRetries: 20
		}
	});
	const client = new Client({ name: 'mcpd-failover-test', version: '1.0.0' },
	    { capabilities: {} });
	const problems = [];
	let outcome = 'exact';
	await client.connect(transport);
	const up = transport.onmessage;
	const seen = [];
	transport.onmessage = (msg, extra) => {
		seen.push(msg);
		up(msg, extra);
	};
	const progress = [];
	let result;
	let started = false;
	try {
		result = await client.callTool(
		    { name: 'stream', arguments: { n: STREAM_N, interval_ms: STREAM_INTERVAL_MS } },
		    CallToolResultSchema, {
			    onprogress: p => {
				    progress.push(p.progress);
				    if (progress.length === 3 && !started) {
					    started = true;
					    console.log('started');
				    }
			    },
			    onresumptiontoken: id => ids.push(id),
			    timeout: 75000,
			    signal: gone.signal
		    });
	} catch (err) {
		const text = String(err?.message || err);
		if (mode === 'exact-or-gone' && gets.some(g => g.status === 410))
			outcome = 'gone';
		else if (mode === 'exact-or-gone' && /event log/.test(text))
			outcome = 'error';	/* the documented error */
		else
			problems.push(`call failed: ${text}; resumes ${short(gets)}, ` +
			    `${repaired} repaired`);
	}
	await sleep(200);	/* a duplicate response would come now */
	if (proxy.cuts !== 1)
		problems.push(`the proxy did not cut (cuts=${proxy.cuts})`);
	if (ids.length > 0 && parseId(ids[0])?.n === 0)
		ids.shift();	/* the priming event */
	const parsed = ids.map(parseId);
	const unbroken = parsed.every((p, i) => p !== null &&
	    p.k === parsed[0].k && p.n === i + 1);
	const upTo = Array.from({ length: progress.length }, (_, i) => i + 1);
	if (progress.join() !== upTo.join())
		problems.push(`progress [${progress.join()}]: a gap or a repeat`);
	if (!unbroken)
		problems.push(`event ids [${ids.join()}] are not K-1, K-2...`);
	if (outcome === 'exact') {
		const responses = seen.filter(m => m.result !== undefined ||
		    m.error !== undefined);
		const text = result?.content?.find(c => c.type === 'text')?.text;
		if (progress.length !== STREAM_N)
			problems.push(`${progress.length} progress notifications, ` +
			    `expected ${STREAM_N}`);
		if (responses.length !== 1)
			problems.push(`${responses.length} responses: ${short(responses)}`);
		if (text !== `done ${STREAM_N}` || result?.isError)
			problems.push(`result ${short(result)}`);
		if (ids.length !== STREAM_N + 1)
			problems.push(`${ids.length} event ids, expected ${STREAM_N + 1}`);
		if (!gets.some(g => g.status === 200))
			problems.push(`no resume answered 200: ${short(gets)}`);
	}
	try {
		await transport.terminateSession();
	} catch {
		/* not what this tests */
	}
	await client.close().catch(() => {});
	proxy.close();
	return { outcome, why: problems.length === 0 ? null : problems.join('; ') };
}

const [arg, mode = 'exact'] = process.argv.slice(2);
if (!arg || !['exact', 'exact-or-gone'].includes(mode)) {
	console.error('usage: node failover_resume.mjs http://127.0.0.1:PORT/mcp ' +
	    '[exact|exact-or-gone]');
	process.exit(2);
}
runTests('failover_resume', async () => {
	const { outcome, why } = await run(new URL(arg), mode);
	check(`the SDK client across the failover (${mode}): ${outcome}`,
	    why === null, why);
}, { timeoutMs: TEST_TIMEOUT_MS });
