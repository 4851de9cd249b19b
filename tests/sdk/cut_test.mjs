#!/usr/bin/env node
/*
 * Events in flight at a cut (issue 22, item 1; DESIGN.md invariant 5:
 * written is not received). The official TypeScript SDK client calls the
 * `stream` tool (n events, interval_ms 1, with a progressToken) through a
 * TCP proxy that cuts the connection carrying the response once the
 * client-bound bytes have carried CUT progress notifications: it forwards
 * the chunk in hand up to the middle of its last event's data (a torn
 * event) and resets both sides. What mcpd wrote and the client did not
 * get is lost, while the producer, under `block`, runs on as far as its
 * window lets it until the SDK resumes (after the server's retry: delay)
 * with GET + Last-Event-ID. Retention must still hold every event after
 * the client's last id: the one resume is a 200 (not a 410 "trimmed"),
 * each progress arrives exactly once and in order, the ids form one
 * unbroken K-N sequence and the call completes.
 *
 *   node tests/sdk/cut_test.mjs http://127.0.0.1:PORT/mcp LABEL N CUT...
 *
 * LABEL names the daemon's conf in the check lines ("memory stream_maxlen
 * 32"), N is the stream call's n, and each CUT is one call, cut after that
 * many progress notifications. The events are paced (the proxy reads
 * them about one per chunk) and the proxy forwards all of the chunk but
 * the torn event, so that what it read and did not forward, which mcpd
 * cannot see, stays within the window of room retention keeps for it
 * even when this busy process reads late.
 * run.sh runs this against daemons with stream_maxlen 32, 64 and the
 * default, on the memory log and (under scripts/with-redis) on Redis.
 *
 * Prints one line per check and "cut_test: N passed, N failed, N
 * skipped" (tests/js/lib.mjs); exits non-zero on any failure or after
 * TEST_TIMEOUT_MS (default 60 s).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
	check, counts, parseId, runTests, short, startProxy
} from '../js/lib.mjs';

const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 60000);
/* A call resumed into a 410 is retried by the SDK until it gives up. */
const CALL_TIMEOUT_MS = 10000;

/* Records every request the transport makes, to count the resumes. */
function recordingFetch(log) {
	return async (input, init = {}) => {
		const headers = new Headers(init.headers);
		const entry = { method: init.method || 'GET',
		    lastEventId: headers.get('last-event-id') };
		log.push(entry);
		try {
			const res = await fetch(input, init);
			entry.status = res.status;
			if (res.status === 410)
				entry.body = await res.clone().text();
			return res;
		} catch (err) {
			entry.error = String(err);
			throw err;
		}
	};
}

async function cutOnce(url, label, n, cut) {
	const name = `${label}, n=${n}, cut after ${cut}`;
	const proxy = await startProxy(url, { cutAfter: cut });
	const log = [];
	const errors = [];
	const transport = new StreamableHTTPClientTransport(proxy.url, {
		fetch: recordingFetch(log),
		reconnectionOptions: {
			initialReconnectionDelay: 100,
			maxReconnectionDelay: 1000,
			reconnectionDelayGrowFactor: 1.5,
			maxRetries: 5
		}
	});
	const client = new Client({ name: 'mcpd-sdk-cut-test', version: '1.0.0' },
	    { capabilities: {} });
	client.onerror = err => errors.push(err?.message || String(err));

	try {
		await client.connect(transport);
	} catch (err) {
		check(`${name}: initialize through the proxy`, false, err?.message);
		proxy.close();
		return;
	}
	const progress = [];
	const ids = [];
	let result;
	let error;
	try {
		result = await client.callTool(
		    { name: 'stream', arguments: { n, interval_ms: 1 } },
		    CallToolResultSchema, {
			    onprogress: p => progress.push(p.progress),
			    onresumptiontoken: id => ids.push(id),
			    timeout: CALL_TIMEOUT_MS
		    });
	} catch (err) {
		error = err?.message || String(err);
	}
	const resumes = log.filter(e => e.method === 'GET' && e.lastEventId);

	check(`${name}: the proxy cut the response`, proxy.cuts === 1,
	    `cuts=${proxy.cuts}`);
	check(`${name}: resumed exactly once, answered 200`,
	    resumes.length === 1 && resumes[0].status === 200,
	    short(resumes));
	check(`${name}: the call completed ("done ${n}")`,
	    result !== undefined && !result.isError &&
	    result.content?.[0]?.text === `done ${n}`, error ?? short(result));
	const want = Array.from({ length: n }, (_, i) => i + 1).join();
	check(`${name}: progress 1..${n} each exactly once, in order`,
	    progress.join() === want, `got [${progress.join()}]`);
	const parsed = ids.map(parseId);
	let gap = ids.length === 0 ? 'no ids' : null;
	for (let i = 0; i < parsed.length && gap === null; i++) {
		if (parsed[i] === null || parsed[i].k !== parsed[0].k)
			gap = `id ${ids[i]}`;
		else if (i > 0 && parsed[i].n !== parsed[i - 1].n + 1)
			gap = `${ids[i - 1]} then ${ids[i]}`;
	}
	check(`${name}: ids one stream, consecutive, up to K-${n + 1}`,
	    gap === null && parsed[parsed.length - 1].n === n + 1,
	    gap ?? short(ids.slice(-3)));
	if (counts().failed > 0 && errors.length > 0)
		console.log(`# transport errors: ${short(errors)}`);

	try {
		await transport.terminateSession();
	} catch {
		/* not what this test is about */
	}
	await client.close().catch(() => {});
	proxy.close();
}

const [arg, label, nArg, ...cutArgs] = process.argv.slice(2);
if (!arg || !label || !nArg || cutArgs.length === 0) {
	console.error('usage: node cut_test.mjs URL LABEL N CUT...');
	process.exit(2);
}
const url = new URL(arg);
runTests('cut_test', async () => {
	for (const cut of cutArgs)
		await cutOnce(url, label, Number(nArg), Number(cut));
}, { timeoutMs: TEST_TIMEOUT_MS });
