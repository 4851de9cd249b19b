#!/usr/bin/env node
/*
 * The reference point for scripts/bench: the official MCP TypeScript SDK
 * server, stateful (one McpServer + StreamableHTTPServerTransport per
 * session) and resumable (the SDK's InMemoryEventStore), with mcpd's
 * built-in diagnostic tools implemented the same way (docs/protocol.md):
 *
 *   echo   {text}                      -> text
 *   stream {n, interval_ms?, size?}    -> n progress notifications (with a
 *                                         progressToken) or log messages on
 *                                         the request's stream, then "done n"
 *   notify {n, size?}                  -> n log messages on the standalone
 *                                         stream, then "queued n"
 *
 *   node scripts/bench.d/sdk_server.mjs [--host 127.0.0.1] [--port 0]
 *
 * Logs "listening on HOST:PORT" on stderr once bound, like mcpd.  The SDK is
 * taken from tests/sdk/node_modules (scripts/install-deps puts it there);
 * SDK_NODE_MODULES overrides that folder.
 *
 * Note: InMemoryEventStore keeps every event forever and sorts the whole
 * store on each replay; it is the SDK's example store, not a production one.
 */
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.SDK_NODE_MODULES ||
    path.resolve(here, '../../tests/sdk/node_modules');
const require = createRequire(path.join(modules, '..', 'package.json'));

const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } =
    require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { InMemoryEventStore } =
    require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { z } = require('zod');

function arg(name, dflt) {
	const i = process.argv.indexOf(`--${name}`);
	return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const host = arg('host', '127.0.0.1');
const port = Number(arg('port', '0'));
const retryMs = Number(process.env.SDK_SERVER_RETRY_MS || 1000);

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const text = t => ({ content: [{ type: 'text', text: t }] });

function newServer() {
	const server = new McpServer({ name: 'sdk-reference', version: '1.0.0' },
	    { capabilities: { logging: {} } });

	server.registerTool('echo', {
		description: 'Return the text argument',
		inputSchema: { text: z.string() }
	}, async ({ text: t }) => text(t));

	server.registerTool('stream', {
		description: 'Send n messages on the request stream, then "done n"',
		inputSchema: {
			n: z.number().int().min(0),
			interval_ms: z.number().int().min(0).optional(),
			size: z.number().int().min(0).optional()
		}
	}, async ({ n, interval_ms: interval = 0, size = 0 }, extra) => {
		const token = extra._meta?.progressToken;
		const pad = 'x'.repeat(size);
		for (let i = 1; i <= n; i++) {
			if (token !== undefined) {
				const message = `step ${i} of ${n}`;
				await extra.sendNotification({
					method: 'notifications/progress',
					params: {
						progressToken: token, progress: i, total: n,
						message: message.padEnd(size, ' ')
					}
				});
			} else {
				await extra.sendNotification({
					method: 'notifications/message',
					params: { level: 'info', data: { i, n, pad } }
				});
			}
			if (interval > 0 && i < n)
				await sleep(interval);
		}
		return text(`done ${n}`);
	});

	server.registerTool('notify', {
		description: 'Send n log messages on the standalone stream',
		inputSchema: {
			n: z.number().int().min(0),
			size: z.number().int().min(0).optional()
		}
	}, async ({ n, size = 0 }) => {
		const pad = 'x'.repeat(size);
		for (let i = 1; i <= n; i++) {
			await server.server.notification({
				method: 'notifications/message',
				params: { level: 'info', data: { i, n, pad } }
			});
		}
		return text(`queued ${n}`);
	});
	return server;
}

const transports = new Map();

function jsonError(res, status, message) {
	res.writeHead(status, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readJson(req) {
	const chunks = [];
	for await (const c of req)
		chunks.push(c);
	return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function handle(req, res) {
	const sid = req.headers['mcp-session-id'];
	let transport = sid ? transports.get(sid) : undefined;

	if (req.method === 'POST') {
		let body;
		try {
			body = await readJson(req);
		} catch {
			return jsonError(res, 400, 'Parse error');
		}
		if (!transport) {
			if (sid || !isInitializeRequest(body))
				return jsonError(res, sid ? 404 : 400, 'Invalid or missing session ID');
			const server = newServer();
			transport = new StreamableHTTPServerTransport({
				sessionIdGenerator: () => randomUUID(),
				eventStore: new InMemoryEventStore(),
				retryInterval: retryMs,
				onsessioninitialized: id => transports.set(id, transport)
			});
			transport.onclose = () => {
				if (transport.sessionId)
					transports.delete(transport.sessionId);
			};
			await server.connect(transport);
		}
		return transport.handleRequest(req, res, body);
	}
	if (!transport)
		return jsonError(res, sid ? 404 : 400, 'Invalid or missing session ID');
	return transport.handleRequest(req, res);
}

const httpServer = http.createServer((req, res) => {
	handle(req, res).catch(err => {
		console.error(`error: ${err?.stack || err}`);
		if (!res.headersSent)
			jsonError(res, 500, 'Internal error');
	});
});
httpServer.keepAliveTimeout = 60000;
httpServer.listen(port, host, () => {
	console.error(`listening on ${host}:${httpServer.address().port}`);
});
for (const sig of ['SIGTERM', 'SIGINT'])
	process.on(sig, () => process.exit(0));
