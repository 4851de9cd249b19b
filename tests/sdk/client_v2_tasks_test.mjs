#!/usr/bin/env node
/*
 * Interop test: the v2 client (@modelcontextprotocol/client) pinned to
 * 2026-07-28 with the official tasks extension package
 * (@modelcontextprotocol/ext-tasks) against mcpd's tasks on the stateless
 * path.
 *
 *   node tests/sdk/client_v2_tasks_test.mjs http://127.0.0.1:PORT/mcp
 *
 * The extension sends tools/call and tasks/* through rawDispatch (the SDK
 * client's codecs refuse a task result): here one POST per request with the
 * stateless path's headers (the extension adds its own Mcp-Name).
 * Checks: tools/list marks the fixtures' taskSupport; slow_compute run as
 * a task, polled with tasks/get (through the extension's TaskController)
 * to completed with its exact content; a second slow_compute cancelled
 * while working, then read cancelled.
 * The daemon needs `fixtures conformance`.
 *
 * Prints one line per check and "client_v2_tasks_test: N passed, N failed,
 * N skipped" (tests/js/lib.mjs); exits non-zero on any failure or after
 * TEST_TIMEOUT_MS (default 30 s).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';
import { check, deadline, finish } from '../js/lib.mjs';

const url = new URL(process.argv[2]);
const VERSION = '2026-07-28';
const clientInfo = { name: 'mcpd-sdk-v2-tasks-test', version: '1.0.0' };
const timer = deadline('client_v2_tasks_test',
    Number(process.env.TEST_TIMEOUT_MS || 30000));

/* The extension's host-owned request path: one POST, a JSON body back. */
let nextId = 1;
async function rawDispatch(request, options = {}) {
	const p = request.params ?? {};
	const name = request.method === 'tools/call' ? p.name : p.taskId;
	const headers = {
		'content-type': 'application/json',
		accept: 'application/json, text/event-stream',
		'mcp-protocol-version': VERSION,
		'mcp-method': request.method,
		...(name !== undefined ? { 'mcp-name': String(name) } : {}),
	};
	/* The extension names its own (Mcp-Name): one header per name. */
	for (const [k, v] of Object.entries(options.context?.headers ?? {}))
		headers[k.toLowerCase()] = v;
	const res = await fetch(url, { method: 'POST', headers,
	    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, ...request }),
	    signal: options.signal });
	const text = await res.text();
	let body;
	try {
		body = JSON.parse(text);
	} catch {
		throw new Error(`${request.method}: HTTP ${res.status}, not JSON: ` +
		    text.slice(0, 200));
	}
	if (body.error !== undefined)
		return { kind: 'error', error: body.error };
	return { kind: 'result', result: body.result };
}

/* Polls a task (tasks/get) until pred holds or the deadline passes. */
async function pollTask(controller, pred, ms) {
	const deadline = Date.now() + ms;
	let view;
	for (;;) {
		view = await controller.snapshot();
		if (pred(view) || Date.now() > deadline)
			return view;
		await new Promise((r) => setTimeout(r,
		    view.suggestedPollIntervalMs ?? 100));
	}
}

const client = new Client(clientInfo, { capabilities: {},
    versionNegotiation: { mode: { pin: VERSION } } });
let session;
try {
	await client.connect(new StreamableHTTPClientTransport(url));
	check('negotiated 2026-07-28',
	    client.getNegotiatedProtocolVersion() === VERSION,
	    client.getNegotiatedProtocolVersion());
	const ext = client.getServerCapabilities()?.extensions?.[
	    'io.modelcontextprotocol/tasks'];
	check('server/discover lists the tasks extension', ext !== undefined,
	    JSON.stringify(client.getServerCapabilities()));
	const { tools } = await client.listTools();
	check('tools/list has slow_compute',
	    tools.some((t) => t.name === 'slow_compute'),
	    JSON.stringify(tools.map((t) => t.name)));
	/* The client's 2026 Tool drops execution: read it off the wire. */
	const raw = await rawDispatch({ method: 'tools/list', params: {
	    _meta: { 'io.modelcontextprotocol/protocolVersion': VERSION,
	    'io.modelcontextprotocol/clientCapabilities': {} } } });
	const support = Object.fromEntries((raw.result?.tools ?? []).map((t) =>
	    [t.name, t.execution?.taskSupport]));
	check('tools/list: slow_compute optional, failing_job required',
	    support.slow_compute === 'optional' &&
	    support.failing_job === 'required', JSON.stringify(support));

	session = createTaskSessionFromClient(client, {
	    endpointId: 'mcpd-sdk-v2-tasks-test', rawDispatch,
	    v2RequestFraming: { protocolVersion: VERSION, clientInfo,
	    clientCapabilities: {} } });
	check('extension session is v2 with cancellation',
	    session.capabilities.execution && session.capabilities.cancellation,
	    JSON.stringify(session.capabilities));

	/* A task run to completion, polled through tasks/get. */
	const exec = await session.callTool('slow_compute',
	    { seconds: 1, label: 'v2' }, { task: { preference: 'require' } });
	check('slow_compute runs as a task', exec.kind === 'task' &&
	    /^[0-9a-f]{32}$/.test(exec.handle?.taskId ?? ''),
	    `${exec.kind} ${JSON.stringify(exec.handle)}`);
	const ctl = session.task(exec.handle.taskId);
	const first = await ctl.snapshot();
	check('tasks/get right after finds the task',
	    first.taskId === exec.handle.taskId &&
	    ['working', 'completed'].includes(first.status),
	    JSON.stringify(first.raw));
	const done = await pollTask(ctl, (v) => v.status !== 'working', 10000);
	check('tasks/get polled to completed', done.status === 'completed',
	    JSON.stringify(done.raw));
	const outcome = await ctl.result();
	const want = [{ type: 'text', text: 'slow_compute v2: done after 1 s' }];
	check('the task result content, exactly',
	    outcome.status === 'completed' &&
	    JSON.stringify(outcome.result?.content) === JSON.stringify(want) &&
	    outcome.result?.isError !== true, JSON.stringify(outcome));
	await exec.close();

	/* A task cancelled while it runs. */
	const slow = await session.callTool('slow_compute',
	    { seconds: 20, label: 'cancel-me' },
	    { task: { preference: 'require' } });
	check('second slow_compute runs as a task', slow.kind === 'task',
	    slow.kind);
	const ctl2 = session.task(slow.handle.taskId);
	const before = await ctl2.snapshot();
	check('before cancel: working', before.status === 'working',
	    JSON.stringify(before.raw));
	await ctl2.cancel();
	const after = await pollTask(ctl2, (v) => v.status !== 'working', 5000);
	check('after tasks/cancel: cancelled', after.status === 'cancelled',
	    JSON.stringify(after.raw));
	const gone = await ctl2.result();
	check('the extension settles it cancelled',
	    gone.status === 'cancelled', JSON.stringify(gone));
	await slow.close();
} catch (e) {
	check('no exception', false, e?.stack ?? String(e));
}
try {
	await session?.close();
	await client.close();
} catch (e) {
	check('closed cleanly', false, e?.stack ?? String(e));
}
clearTimeout(timer);
finish('client_v2_tasks_test');
