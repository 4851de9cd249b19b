#!/usr/bin/env node
/*
 * Interop test: the official MCP TypeScript SDK client against mcpd.
 *
 *   node tests/sdk/client_test.mjs http://127.0.0.1:PORT/mcp
 *
 * 1. initialize, tools/list (echo, stream, notify), tools/call echo;
 * 2. notify: messages on the session's standalone (GET) stream;
 * 3. the resumption test: a `stream` call (n=40, 25 ms apart, with a
 *    progressToken) goes through a small TCP proxy that cuts the connection
 *    carrying its SSE response after ~10 progress notifications (RST, mid
 *    event).  The SDK must reconnect on its own with GET + Last-Event-ID, and
 *    the test asserts that progress 1..40 arrives exactly once, in order, that
 *    the result is "done 40", that the proxy really cut, and that the event
 *    ids the client saw form one unbroken K-0..K-N sequence
 *    (docs/protocol.md, Event ids).
 *
 * 4. connection reuse (issue 10): Node's fetch (undici) pools connections and
 *    sends its next request on one as soon as a response on it has ended.
 *    For each way an SSE response ends (the stream's own end, a DELETE sent
 *    from elsewhere, a slow-consumer disconnect), fetch reads the response to
 *    its end and at once POSTs again: the POST must be answered, on the same
 *    connection (a proxy counts them).  run.sh's conf makes the slow consumer
 *    quick to find: sse_high_watermark 64k, slow_consumer_grace_ms 300.
 *
 * Prints one line per check and "client_test: N passed, N failed, N
 * skipped" (tests/js/lib.mjs); exits non-zero on any failure or after
 * TEST_TIMEOUT_MS (default 30 s).
 *
 * SDK_TEST_ID_FORMAT=any skips the K-N id checks (for running this file
 * against a server that does not use mcpd's ids, e.g. the SDK's own).
 */
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
	CallToolResultSchema,
	LoggingMessageNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import {
	check, counts, parseId, runTests, short, sleep, startProxy, waitFor
} from '../js/lib.mjs';

const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 30000);
const STREAM_N = 40;
const STREAM_INTERVAL_MS = 25;
const CUT_AFTER_PROGRESS = 10;
const CHECK_IDS = process.env.SDK_TEST_ID_FORMAT !== 'any';

/*
 * A fetch that records every request the transport makes (method,
 * Last-Event-ID, status, content type), so the test can see the standalone
 * GET and the resuming GET.
 */
function recordingFetch(log) {
	return async (input, init = {}) => {
		const headers = new Headers(init.headers);
		const entry = {
			method: init.method || 'GET',
			lastEventId: headers.get('last-event-id'),
			at: Date.now()
		};
		log.push(entry);
		try {
			const res = await fetch(input, init);
			entry.status = res.status;
			entry.contentType = res.headers.get('content-type') || '';
			return res;
		} catch (err) {
			entry.error = String(err);
			throw err;
		}
	};
}

function newClient(name) {
	return new Client({ name, version: '1.0.0' }, { capabilities: {} });
}

function textOf(result) {
	const item = result?.content?.find(c => c.type === 'text');
	return item?.text;
}

async function basics(url) {
	const log = [];
	const transport = new StreamableHTTPClientTransport(url, { fetch: recordingFetch(log) });
	const client = newClient('mcpd-sdk-test');

	try {
		await client.connect(transport);
		check('initialize', true);
	} catch (err) {
		check('initialize', false, err?.message || String(err));
		return;
	}
	check('session id issued', typeof transport.sessionId === 'string' &&
	    transport.sessionId.length > 0, short(transport.sessionId));
	check('protocol version negotiated', ['2025-03-26', '2025-06-18', '2025-11-25']
	    .includes(transport.protocolVersion), short(transport.protocolVersion));

	try {
		const { tools } = await client.listTools();
		const names = tools.map(t => t.name);
		check('tools/list has echo, stream, notify',
		    ['echo', 'stream', 'notify'].every(n => names.includes(n)), short(names));
	} catch (err) {
		check('tools/list has echo, stream, notify', false, err?.message);
	}

	try {
		const res = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
		check('tools/call echo returns "hi"', textOf(res) === 'hi' && !res.isError, short(res));
	} catch (err) {
		check('tools/call echo returns "hi"', false, err?.message);
	}

	/* notify goes to the standalone stream: wait until the SDK has it open. */
	const haveGet = await waitFor(() => log.some(e => e.method === 'GET' &&
	    !e.lastEventId && e.status === 200 &&
	    e.contentType.startsWith('text/event-stream')), 5000);
	check('standalone GET stream opened (200 text/event-stream)', haveGet,
	    short(log.filter(e => e.method === 'GET')));
	if (haveGet) {
		const logs = [];
		client.setNotificationHandler(LoggingMessageNotificationSchema,
		    n => logs.push(n.params));
		try {
			const res = await client.callTool({ name: 'notify', arguments: { n: 3 } });
			check('tools/call notify returns "queued 3"', textOf(res) === 'queued 3', short(res));
			await waitFor(() => logs.length >= 3, 5000);
			const is = logs.map(l => l?.data?.i);
			check('notify: 3 messages on the standalone stream, in order',
			    logs.length === 3 && is.join() === '1,2,3' &&
			    logs.every(l => l.level === 'info' && l.data?.n === 3), short(logs));
		} catch (err) {
			check('tools/call notify returns "queued 3"', false, err?.message);
		}
	}

	try {
		await transport.terminateSession();
		check('DELETE session', transport.sessionId === undefined);
	} catch (err) {
		check('DELETE session', false, err?.message);
	}
	await client.close().catch(() => {});
}

async function resumeThroughCut(url) {
	const proxy = await startProxy(url, { cutAfter: CUT_AFTER_PROGRESS });

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
	const client = newClient('mcpd-sdk-resume-test');
	client.onerror = err => errors.push(err?.message || String(err));

	try {
		await client.connect(transport);
	} catch (err) {
		check('resume: initialize through proxy', false, err?.message);
		proxy.close();
		return;
	}

	const progress = [];
	const ids = [];
	let result;
	try {
		result = await client.callTool(
		    { name: 'stream', arguments: { n: STREAM_N, interval_ms: STREAM_INTERVAL_MS } },
		    CallToolResultSchema,
		    {
			    onprogress: p => progress.push(p),
			    onresumptiontoken: id => ids.push(id),
			    timeout: TEST_TIMEOUT_MS - 5000
		    });
	} catch (err) {
		check('resume: stream call completes', false, err?.message || String(err));
	}

	check('resume: proxy cut the SSE response mid-stream', proxy.cuts >= 1,
	    `cuts=${proxy.cuts}`);
	const resumes = log.filter(e => e.method === 'GET' && e.lastEventId);
	check('resume: SDK reconnected with GET + Last-Event-ID',
	    resumes.length >= 1 && resumes.some(e => e.status === 200), short(resumes));

	if (result !== undefined) {
		check(`resume: result is "done ${STREAM_N}"`,
		    textOf(result) === `done ${STREAM_N}` && !result.isError, short(result));
	}
	const values = progress.map(p => p.progress);
	const want = Array.from({ length: STREAM_N }, (_, i) => i + 1);
	check(`resume: progress 1..${STREAM_N} each exactly once, in order`,
	    values.join() === want.join(), `got [${values.join()}]`);
	check(`resume: every progress has total ${STREAM_N}`,
	    progress.length > 0 && progress.every(p => p.total === STREAM_N));

	if (CHECK_IDS) {
		const parsed = ids.map(parseId);
		const allValid = ids.length > 0 && parsed.every(p => p !== null);
		check('resume: every event id is K-N', allValid, short(ids));
		if (allValid) {
			const oneStream = parsed.every(p => p.k === parsed[0].k);
			let gap = null;
			for (let i = 1; i < parsed.length && gap === null; i++)
				if (parsed[i].n !== parsed[i - 1].n + 1)
					gap = `${ids[i - 1]} then ${ids[i]}`;
			check('resume: ids are one stream, consecutive, no repeats',
			    oneStream && gap === null, gap ?? short(ids));
			check('resume: ids start at K-0 or K-1',
			    parsed[0].n <= 1, ids[0]);
			const last = parsed[parsed.length - 1].n;
			check(`resume: last id is K-${STREAM_N + 1} (n progress + result)`,
			    last === STREAM_N + 1, ids[ids.length - 1]);
			const k = parsed[0].k;
			check('resume: Last-Event-ID names the same stream',
			    resumes.length > 0 && resumes.every(e => parseId(e.lastEventId)?.k === k),
			    short(resumes.map(e => e.lastEventId)));
		}
	}
	if (counts().failed > 0 && errors.length > 0)
		console.log(`# transport errors: ${short(errors)}`);

	try {
		await transport.terminateSession();
	} catch {
		/* not what this part tests */
	}
	await client.close().catch(() => {});
	proxy.close();
}

const MCP_HEADERS = {
	'content-type': 'application/json',
	accept: 'application/json, text/event-stream'
};

/* One request to mcpd on a connection of its own, outside fetch's pool. */
function sideRequest(url, method, sid, body) {
	return new Promise((resolve, reject) => {
		const headers = { ...MCP_HEADERS, 'mcp-protocol-version': '2025-11-25' };
		if (sid)
			headers['mcp-session-id'] = sid;
		const req = http.request(url, { method, headers, agent: false }, res => {
			let text = '';
			res.setEncoding('utf8');
			res.on('data', d => { text += d; });
			res.on('end', () => resolve({ status: res.statusCode, text,
			    sid: res.headers['mcp-session-id'] }));
			res.on('error', reject);
		});
		req.on('error', reject);
		req.end(body === undefined ? undefined : JSON.stringify(body));
	});
}

async function fetchPost(url, sid, body) {
	const headers = { ...MCP_HEADERS, 'mcp-protocol-version': '2025-11-25' };
	if (sid)
		headers['mcp-session-id'] = sid;
	return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

/*
 * Reads an SSE response to its end, then at once POSTs a ping on the pool:
 * it must be answered (wantStatus) on the connection the response came on.
 */
async function endThenReuse(name, proxy, sid, reader, wantStatus) {
	let text = '';
	try {
		const decoder = new TextDecoder();
		for (;;) {
			const { value, done } = await reader.read();
			if (done)
				break;
			text += decoder.decode(value, { stream: true });
		}
	} catch (err) {
		check(`reuse (${name}): the SSE response ends cleanly`, false,
		    err?.cause?.code || err?.message);
		return text;
	}
	/*
	 * undici puts the connection back in its pool once it has handled the
	 * bytes it read (one turn of node's loop); the next request then goes
	 * on it, as a client's next request would.
	 */
	await new Promise(resolve => setImmediate(resolve));
	const before = proxy.connections;
	try {
		const res = await fetchPost(proxy.url, sid,
		    { jsonrpc: '2.0', id: 99, method: 'ping' });
		await res.text();
		check(`reuse (${name}): the next POST is answered ${wantStatus}`,
		    res.status === wantStatus, `HTTP ${res.status}`);
	} catch (err) {
		check(`reuse (${name}): the next POST is answered ${wantStatus}`, false,
		    `${err?.message} ${err?.cause?.code || ''}`);
	}
	check(`reuse (${name}): on the same connection`, proxy.connections === before,
	    `${proxy.connections - before} new connection(s)`);
	return text;
}

/*
 * A session made outside fetch's pool: the connection of the response
 * under test is then the only one in the pool, and the POST after it has
 * no other to go on.
 */
async function reuseSession(direct) {
	const res = await sideRequest(direct, 'POST', null, {
		jsonrpc: '2.0', id: 1, method: 'initialize',
		params: { protocolVersion: '2025-11-25', capabilities: {},
		    clientInfo: { name: 'mcpd-reuse-test', version: '1.0.0' } }
	});
	await sideRequest(direct, 'POST', res.sid,
	    { jsonrpc: '2.0', method: 'notifications/initialized' });
	return res.sid;
}

async function getStream(proxy, sid) {
	const res = await fetch(proxy.url, {
		headers: { accept: 'text/event-stream', 'mcp-session-id': sid,
		    'mcp-protocol-version': '2025-11-25' }
	});
	const reader = res.body.getReader();
	await reader.read();		/* the priming event: the view is open */
	return reader;
}

async function connectionReuse(url) {
	const direct = url.href;

	/* 1. the stream's own end: a tools/call's response */
	let proxy = await startProxy(url);
	try {
		const sid = await reuseSession(direct);
		const res = await fetchPost(proxy.url, sid, { jsonrpc: '2.0', id: 2,
		    method: 'tools/call', params: { name: 'stream', arguments: { n: 3 } } });
		const text = await endThenReuse('stream call ended', proxy, sid,
		    res.body.getReader(), 200);
		check('reuse (stream call ended): the result arrived', text.includes('done 3'));
	} catch (err) {
		check('reuse (stream call ended): ran', false, err?.stack || String(err));
	}
	proxy.close();

	/* 2. DELETE from another connection ends the GET stream */
	proxy = await startProxy(url);
	try {
		const sid = await reuseSession(direct);
		const reader = await getStream(proxy, sid);
		const del = await sideRequest(direct, 'DELETE', sid);
		check('reuse (DELETE): DELETE answered', [200, 204].includes(del.status),
		    `HTTP ${del.status}`);
		await endThenReuse('GET stream ended by DELETE', proxy, sid, reader, 404);
	} catch (err) {
		check('reuse (DELETE): ran', false, err?.stack || String(err));
	}
	proxy.close();

	/* 3. a slow-consumer disconnect ends the GET stream */
	proxy = await startProxy(url);
	try {
		const sid = await reuseSession(direct);
		const reader = await getStream(proxy, sid);	/* then not read */
		const health = () => sideRequest(new URL('/healthz', url).href, 'GET')
		    .then(r => JSON.parse(r.text).metrics.slow_consumers_closed);
		/* Notifications until the stalled reader's buffers are full. */
		const closed = await health();
		let now = closed;
		for (let i = 0; i < 20 && now === closed; i++) {
			const notify = await sideRequest(direct, 'POST', sid, { jsonrpc: '2.0',
			    id: 3 + i, method: 'tools/call',
			    params: { name: 'notify', arguments: { n: 500, size: 4096 } } });
			if (!notify.text.includes('queued 500')) {
				check('reuse (slow consumer): notify queued 500', false,
				    short(notify.text));
				break;
			}
			const end = Date.now() + 1000;
			while (now === closed && Date.now() < end) {
				await sleep(50);
				now = await health();
			}
		}
		check('reuse (slow consumer): the stalled GET was disconnected',
		    now > closed, `slow_consumers_closed ${closed} -> ${now}`);
		const text = await endThenReuse('slow-consumer disconnect', proxy, sid,
		    reader, 200);
		check('reuse (slow consumer): the response ends with backpressure-disconnect',
		    /event: backpressure-disconnect\n[^]*\n\n$/.test(text), short(text.slice(-200)));
	} catch (err) {
		check('reuse (slow consumer): ran', false, err?.stack || String(err));
	}
	proxy.close();
}

const arg = process.argv[2];
if (!arg) {
	console.error('usage: node client_test.mjs http://127.0.0.1:PORT/mcp');
	process.exit(2);
}
const url = new URL(arg);
runTests('client_test', async () => {
	await basics(url);
	await resumeThroughCut(url);
	await connectionReuse(url);
}, { timeoutMs: TEST_TIMEOUT_MS });
