/*
 * Issue 27: the official TypeScript SDK client (v1) with OpenTelemetry's
 * API (@opentelemetry/api, the W3C propagator of @opentelemetry/core, the
 * async-hooks context manager), against an mcpd whose otel_endpoint is
 * this file's own OTLP/HTTP receiver (node:http). Inside a context holding
 * a span of the client's, its fetch injects traceparent into every HTTP
 * request and the call injects it into params._meta, as the OTel MCP
 * conventions ask; every span mcpd exports for that call must be in the
 * client's trace, with a parent chain that ends at the client's span.
 *
 *   node otel_test.mjs http://127.0.0.1:PORT/mcp RECEIVER_PORT
 *
 * (run.sh starts mcpd with otel_endpoint http://127.0.0.1:RECEIVER_PORT.)
 */
import http from 'node:http';
import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check, runTests, short, waitFor } from '../js/lib.mjs';

const TRACE_ID = '5bf92f3577b34da6a3ce929d0e0e4737';
const SPAN_ID = '10f067aa0ba902b7';

/* The receiver: every span of every request, and a mapping check. */
function receiver(port) {
	const spans = [];
	const problems = [];
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', c => { body += c; });
		req.on('end', () => {
			try {
				const msg = JSON.parse(body);
				for (const rs of msg.resourceSpans)
					for (const ss of rs.scopeSpans)
						for (const s of ss.spans) {
							if (!/^[0-9a-f]{32}$/.test(s.traceId) ||
							    !/^[0-9a-f]{16}$/.test(s.spanId) ||
							    !/^[0-9]+$/.test(s.startTimeUnixNano) ||
							    typeof s.kind !== 'number')
								problems.push(s);
							spans.push(s);
						}
			} catch (err) {
				problems.push(String(err));
			}
			res.writeHead(200, { 'Content-Type': 'application/json' });
			res.end('{}');
		});
	});
	server.listen(port, '127.0.0.1');
	return { spans, problems, close: () => server.close() };
}

/* A fetch that puts the active context's traceparent on each request. */
const tracedFetch = (input, init = {}) => {
	const headers = new Headers(init.headers);
	const carrier = {};
	propagation.inject(context.active(), carrier);
	for (const [k, v] of Object.entries(carrier))
		headers.set(k, v);
	return fetch(input, { ...init, headers });
};

async function tracedCall(url, rec) {
	context.setGlobalContextManager(
	    new AsyncLocalStorageContextManager().enable());
	propagation.setGlobalPropagator(new W3CTraceContextPropagator());
	const ctx = trace.setSpanContext(context.active(), {
		traceId: TRACE_ID, spanId: SPAN_ID,
		traceFlags: TraceFlags.SAMPLED, isRemote: false
	});
	const client = new Client({ name: 'otel-test', version: '1.0.0' },
	    { capabilities: {} });
	const transport = new StreamableHTTPClientTransport(url,
	    { fetch: tracedFetch });
	await client.connect(transport);
	const result = await context.with(ctx, () => {
		const meta = {};
		propagation.inject(context.active(), meta);
		return client.callTool({ name: 'stream', arguments: { n: 5 },
		    _meta: meta });
	});
	check('the call answered', result?.content?.[0]?.text === 'done 5',
	    short(result));

	const ok = await waitFor(() => rec.spans.some(s =>
	    s.name === 'eventlog commit' && s.traceId === TRACE_ID), 10000);
	check('mcpd exported the call\'s spans', ok,
	    short(rec.spans.map(s => s.name)));
	const call = rec.spans.filter(s => s.name === 'tools/call stream');
	check('one span for the call', call.length === 1, short(call));
	if (call.length !== 1)
		return;
	const mine = rec.spans.filter(s => s.traceId === TRACE_ID);
	check('the call\'s span is in the client\'s trace, its parent the ' +
	    'client\'s span (params._meta)', call[0].traceId === TRACE_ID &&
	    call[0].parentSpanId === SPAN_ID, short(call[0]));
	const http_ = mine.filter(s => s.name === 'POST /mcp');
	check('the POST\'s span has the client\'s span as parent (header)',
	    http_.length >= 1 && http_.every(s => s.parentSpanId === SPAN_ID),
	    short(http_));
	const ids = new Set(mine.map(s => s.spanId).concat([SPAN_ID]));
	check('every span of the trace hangs from the client\'s span',
	    mine.every(s => ids.has(s.parentSpanId)), short(mine.map(s =>
	    [s.name, s.parentSpanId])));
	const commit = mine.find(s => s.name === 'eventlog commit');
	check('the commits are under the call', commit?.parentSpanId ===
	    call[0].spanId, short(commit));
	check('the mapping holds', rec.problems.length === 0,
	    short(rec.problems));
	await client.close();
}

const [arg, port] = process.argv.slice(2);
if (!arg || !port) {
	console.error('usage: node otel_test.mjs URL RECEIVER_PORT');
	process.exit(2);
}
const rec = receiver(Number(port));
runTests('otel_test', () => tracedCall(new URL(arg), rec),
    { timeoutMs: 30000, cleanup: () => rec.close() });
