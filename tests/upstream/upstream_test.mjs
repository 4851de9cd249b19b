#!/usr/bin/env node
/*
 * Issue 15: upstream MCP servers served through mcpd, seen by the official
 * MCP TypeScript SDK client.
 *
 *   node tests/upstream/upstream_test.mjs --mcpd ./mcpd [GROUP...]
 *   node tests/upstream/upstream_test.mjs --url URL     (the basics only,
 *       against any server in front of server-everything: supergateway)
 *
 * Each group starts its own mcpd (listen 127.0.0.1:0) with the upstream
 * blocks it needs and stops it at the end (SIGTERM: exit 0, no sanitizer
 * report, no child left behind):
 *
 *   everything  server-everything over stdio, sharing shared, env: every
 *               tool (echo, progress, sampling and elicitation answered by
 *               the client, resources, templates, prompts, completions),
 *               and errors that must not hang
 *   filesystem  server-filesystem over stdio (prefix fs_, cwd, a relative
 *               directory argument) next to server-everything
 *   resume      a long-running call whose SSE response is cut mid-event:
 *               resumed once, every progress and the result exactly once,
 *               event ids contiguous
 *   crash       the upstream child SIGKILLed mid-call: the call fails
 *               naming the upstream, a new child comes, the next call works
 *   limits      cancellation, the block's timeout and max_concurrency, seen
 *               in /metrics' requests in flight
 *   session     sharing session: one child per client session, state of one
 *               invisible to the other, roots asked of the right client,
 *               the child gone with its session
 *   http        server-everything over Streamable HTTP (url): the basics,
 *               and the server killed mid-call then started again
 *   catalog     server-everything's catalog curated in its block (issue
 *               26): tools allow|deny, rename, description, prompts deny;
 *               what is left out is an unknown tool; a reload changes the
 *               catalog live and clients hear tools/list_changed
 *   redis       two mcpd on one Redis (MCPD_TEST_REDIS_URL): a sampling
 *               request raised by a call on the first answered by a POST
 *               to the second; a long call on the first, cut, resumed on
 *               the second
 *
 * Prints one line per check and "upstream_test: N passed, N failed, N
 * skipped" (tests/js/lib.mjs); exits non-zero on any failure or after
 * TEST_TIMEOUT_MS (default 240 s).
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
	CallToolResultSchema,
	CreateMessageRequestSchema,
	ElicitRequestSchema,
	ListRootsRequestSchema,
	LoggingMessageNotificationSchema,
	ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import {
	EVERYTHING, FILESYSTEM, LOOPBACK, REDIS_URL, check, childrenOf, procStat,
	zombiesOf,
	errText, parseId, removeTmp, runTests, setGroup, short, skip, startMcpd,
	startProxy, textOf, tmpDir, waitFor
} from './lib.mjs';

const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 240000);
const ALL = ['everything', 'filesystem', 'resume', 'crash', 'limits', 'session', 'http',
	'catalog', 'redis'];

/* server-everything's tools; the second list it registers only for a
 * client that declared sampling, elicitation (url too) and roots. */
const TOOLS = ['echo', 'get-annotated-message', 'get-env', 'get-resource-links',
	'get-resource-reference', 'get-structured-content', 'get-sum',
	'get-tiny-image', 'gzip-file-as-resource', 'toggle-simulated-logging',
	'toggle-subscriber-updates', 'trigger-long-running-operation'];
const CONDITIONAL_TOOLS = ['get-roots-list', 'trigger-elicitation-request',
	'trigger-url-elicitation', 'trigger-sampling-request', 'simulate-research-query'];
const PROMPTS = ['simple-prompt', 'args-prompt', 'completable-prompt', 'resource-prompt'];
const DOCS = path.join(path.dirname(EVERYTHING), 'docs');

const CAPABILITIES = {
	sampling: {},
	elicitation: { form: {}, url: {} },
	roots: { listChanged: true }
};

let mcpdBin = null;
const daemons = [];

function upstreamBlock(name, lines) {
	return [`upstream ${name} {`, ...lines.map(l => `    ${l}`), '}'].join('\n');
}

function everythingBlock(name, extra = []) {
	return upstreamBlock(name, [`exec ${process.execPath} ${EVERYTHING} stdio`, ...extra]);
}

/*
 * An mcpd; with opts.tools, once its tools/list has them: a shared
 * upstream starts with mcpd, and its catalog comes when its handshake is
 * done, which a client that connects at once does not wait for.
 */
async function mcpd(name, conf, opts = {}) {
	const d = await startMcpd(mcpdBin, name, conf, opts);
	daemons.push(d);
	if (opts.tools) {
		const c = await connect(d.url, 'ready', { capabilities: {} });
		let names = [];
		const ok = await waitFor(async () => {
			names = (await c.client.listTools()).tools.map(t => t.name);
			return opts.tools.every(t => names.includes(t));
		}, 20000, 50);
		await c.close();
		if (!ok)
			throw new Error(`${name}: tools/list never had ${opts.tools} (had ${names})\n${d.tail()}`);
	}
	return d;
}

async function stopAll() {
	while (daemons.length > 0) {
		const d = daemons.pop();
		/* A child exits and is reaped at once (SIGCHLD is a loop event). */
		if (d.exited === null) {
			const z = await waitFor(() => zombiesOf(d.pid).length === 0, 2000);
			check(`mcpd ${d.name} left no zombie child`, z, zombiesOf(d.pid));
		}
		const why = await d.stop();
		check(`mcpd ${d.name} stopped cleanly (exit 0, no sanitizer report, children gone)`,
		    why === null, why ?? undefined);
	}
}

/*
 * A client with the capabilities server-everything looks for, answering
 * sampling, elicitation and roots as the test says. The transport's
 * messages are recorded before the SDK sees them (it drops a response it
 * no longer waits for, which would hide a duplicate).
 */
async function connect(url, name, opts = {}) {
	const asked = { sampling: [], elicitation: [], roots: 0 };
	const seen = [];
	const gets = [];
	const transport = new StreamableHTTPClientTransport(url, {
		fetch: async (input, init = {}) => {
			const method = init.method || 'GET';
			const lastEventId = new Headers(init.headers).get('last-event-id');
			const target = opts.route ? opts.route(input, init) : input;
			const res = await fetch(target, init);
			if (method === 'GET' && lastEventId)
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
	const caps = opts.capabilities ?? CAPABILITIES;
	const client = new Client({ name, version: '1.0.0' }, { capabilities: caps });
	if (caps.sampling) client.setRequestHandler(CreateMessageRequestSchema, async req => {
		asked.sampling.push(req.params);
		return opts.sample ? opts.sample(req.params) : {
			role: 'assistant', model: 'mcpd-test-model',
			content: { type: 'text', text: `sampled by ${name}` }
		};
	});
	if (caps.elicitation) client.setRequestHandler(ElicitRequestSchema, async req => {
		asked.elicitation.push(req.params);
		if (req.params.mode === 'url')
			return { action: 'accept' };
		return { action: 'accept', content: { name: `Ada of ${name}`, check: true, integer: 7 } };
	});
	if (caps.roots) client.setRequestHandler(ListRootsRequestSchema, async () => {
		asked.roots++;
		return { roots: opts.roots ?? [] };
	});
	const logs = [];
	client.setNotificationHandler(LoggingMessageNotificationSchema, n => logs.push(n.params));
	await client.connect(transport);
	const up = transport.onmessage;
	transport.onmessage = (msg, extra) => {
		seen.push(msg);
		up(msg, extra);
	};
	return { client, transport, asked, seen, gets, logs,
		close: async () => {
			try {
				await transport.terminateSession();
			} catch {
				/* not what a test checks unless it says so */
			}
			await client.close().catch(() => {});
		} };
}

async function call(client, name, args, opts) {
	try {
		return { res: await client.callTool({ name, arguments: args }, CallToolResultSchema, opts) };
	} catch (err) {
		return { err };
	}
}

/* ------------------------------------------------------------------ */

/*
 * Every tool, resource, prompt and completion of server-everything, through
 * whatever serves it at url. mcpdSide: the checks only mcpd's conf makes
 * (env).
 */
async function everythingBasics(url, { prefix = '', mcpdSide = true } = {}) {
	const p = n => prefix + n;
	let c;
	try {
		c = await connect(url, 'basics',
		    { roots: [{ uri: 'file:///srv/basics-root', name: 'basics root' }] });
		check('initialize through the upstream server', true);
	} catch (err) {
		check('initialize through the upstream server', false, errText(err));
		return;
	}
	const { client, asked } = c;
	const caps = client.getServerCapabilities() ?? {};
	check('capabilities: tools, resources, prompts, completions',
	    caps.tools && caps.resources && caps.prompts && caps.completions, caps);

	/* tools/list */
	let tools = [];
	try {
		tools = (await client.listTools()).tools;
	} catch (err) {
		check('tools/list', false, errText(err));
	}
	const names = tools.map(t => t.name);
	const missing = TOOLS.map(p).filter(n => !names.includes(n));
	check(`tools/list has all ${TOOLS.length} tools of server-everything`,
	    missing.length === 0, `missing ${missing}; got ${names}`);
	const cmissing = CONDITIONAL_TOOLS.map(p).filter(n => !names.includes(n));
	check('tools/list has the tools server-everything offers only to a client ' +
	    'that can sample, elicit (form and url) and list roots',
	    cmissing.length === 0, `missing ${cmissing}`);
	const echoDef = tools.find(t => t.name === p('echo'));
	check('echo keeps its input schema and annotations',
	    echoDef?.inputSchema?.properties?.message?.type === 'string' &&
	    echoDef?.inputSchema?.required?.includes('message') &&
	    echoDef?.annotations?.readOnlyHint === true && echoDef?.title === 'Echo Tool',
	    echoDef);
	const structDef = tools.find(t => t.name === p('get-structured-content'));
	check('get-structured-content keeps its output schema',
	    structDef?.outputSchema?.properties?.temperature?.type === 'number', structDef);
	const research = tools.find(t => t.name === p('simulate-research-query'));
	if (research)
		check('simulate-research-query keeps execution.taskSupport',
		    research.execution?.taskSupport === 'required', research);

	/* tools/call, one per tool */
	let r = await call(client, p('echo'), { message: 'hi there' });
	check('echo', textOf(r.res) === 'Echo: hi there' && !r.res.isError, r.res ?? errText(r.err));
	r = await call(client, p('echo'), { message: 'ünïcødé ✓ "quoted" \\ \n line' });
	check('echo: non-ASCII, quotes, backslash, newline intact',
	    textOf(r.res) === 'Echo: ünïcødé ✓ "quoted" \\ \n line', r.res ?? errText(r.err));
	const big = 'x'.repeat(200000);
	r = await call(client, p('echo'), { message: big });
	check('echo: a 200 kB message', textOf(r.res) === `Echo: ${big}`,
	    r.err ? errText(r.err) : `${textOf(r.res).length} characters`);
	r = await call(client, p('get-sum'), { a: 2.5, b: -7 });
	check('get-sum', textOf(r.res) === 'The sum of 2.5 and -7 is -4.5.', r.res ?? errText(r.err));
	r = await call(client, p('get-annotated-message'), { messageType: 'error', includeImage: true });
	check('get-annotated-message: annotations and an image',
	    r.res?.content?.[0]?.annotations?.priority === 1 &&
	    r.res?.content?.[0]?.annotations?.audience?.join() === 'user,assistant' &&
	    r.res?.content?.[1]?.type === 'image' && r.res?.content?.[1]?.mimeType === 'image/png',
	    r.res ?? errText(r.err));
	r = await call(client, p('get-tiny-image'), {});
	const img = r.res?.content?.find(x => x.type === 'image');
	check('get-tiny-image: a PNG',
	    img?.mimeType === 'image/png' &&
	    Buffer.from(img.data ?? '', 'base64').subarray(1, 4).toString() === 'PNG',
	    r.res ?? errText(r.err));
	r = await call(client, p('get-structured-content'), { location: 'Chicago' });
	check('get-structured-content: structuredContent',
	    r.res?.structuredContent?.temperature === 36 &&
	    r.res?.structuredContent?.conditions === 'Light rain / drizzle', r.res ?? errText(r.err));
	r = await call(client, p('get-resource-links'), { count: 3 });
	const links = (r.res?.content ?? []).filter(x => x.type === 'resource_link');
	check('get-resource-links: 3 links',
	    links.length === 3 && links[1].uri === 'demo://resource/dynamic/text/2', r.res ?? errText(r.err));
	r = await call(client, p('get-resource-reference'), { resourceType: 'Text', resourceId: 3 });
	const ref = r.res?.content?.find(x => x.type === 'resource');
	check('get-resource-reference: an embedded resource',
	    ref?.resource?.uri === 'demo://resource/dynamic/text/3' &&
	    ref?.resource?.text?.startsWith('Resource 3: This is a plaintext resource'), r.res ?? errText(r.err));
	if (mcpdSide) {
		r = await call(client, p('get-env'), {});
		let env = {};
		try {
			env = JSON.parse(textOf(r.res));
		} catch {
			/* checked below */
		}
		check('get-env: the upstream block\'s env reached the child',
		    env.MCPD_UPSTREAM_TEST === 'a=b c' && env.MCPD_UPSTREAM_SECOND === '2', r.res ?? errText(r.err));
	}

	/* gzip-file-as-resource: a data: URI in, a session resource out */
	const plain = 'mcpd upstream gzip test\n'.repeat(50);
	const dataUri = `data:text/plain;base64,${Buffer.from(plain).toString('base64')}`;
	r = await call(client, p('gzip-file-as-resource'),
	    { name: 'basics.txt.gz', data: dataUri, outputType: 'resource' });
	const gz = r.res?.content?.find(x => x.type === 'resource')?.resource;
	let unzipped = null;
	try {
		unzipped = gunzipSync(Buffer.from(gz?.blob ?? '', 'base64')).toString();
	} catch {
		/* checked below */
	}
	check('gzip-file-as-resource: the blob gunzips to the input', unzipped === plain,
	    r.res ?? errText(r.err));
	r = await call(client, p('gzip-file-as-resource'),
	    { name: 'link.txt.gz', data: dataUri, outputType: 'resourceLink' });
	const link = r.res?.content?.find(x => x.type === 'resource_link');
	check('gzip-file-as-resource: a resource link',
	    link?.uri === 'demo://resource/session/link.txt.gz', r.res ?? errText(r.err));
	try {
		const rd = await client.readResource({ uri: 'demo://resource/session/link.txt.gz' });
		check('resources/read of the resource the tool registered',
		    gunzipSync(Buffer.from(rd.contents[0].blob, 'base64')).toString() === plain, rd);
	} catch (err) {
		check('resources/read of the resource the tool registered', false, errText(err));
	}

	/* progress */
	const progress = [];
	r = await call(client, p('trigger-long-running-operation'), { duration: 0.5, steps: 5 },
	    { onprogress: x => progress.push(x) });
	check('trigger-long-running-operation: the result',
	    textOf(r.res) === 'Long running operation completed. Duration: 0.5 seconds, Steps: 5.',
	    r.res ?? errText(r.err));
	check('trigger-long-running-operation: progress 1..5 of 5, in order',
	    progress.map(x => `${x.progress}/${x.total}`).join() === '1/5,2/5,3/5,4/5,5/5', progress);

	/* sampling, answered by this client */
	r = await call(client, p('trigger-sampling-request'), { prompt: 'the sky?', maxTokens: 7 });
	const s = asked.sampling.at(-1);
	check('trigger-sampling-request: the client was asked, with the tool\'s parameters',
	    asked.sampling.length === 1 && s?.maxTokens === 7 &&
	    s?.messages?.[0]?.content?.text === 'Resource trigger-sampling-request context: the sky?' &&
	    s?.systemPrompt === 'You are a helpful test server.', asked.sampling);
	check('trigger-sampling-request: the client\'s answer is in the result',
	    textOf(r.res).includes('"text": "sampled by basics"') &&
	    textOf(r.res).includes('"model": "mcpd-test-model"'), r.res ?? errText(r.err));

	/* elicitation, form and url */
	r = await call(client, p('trigger-elicitation-request'), {});
	const e = asked.elicitation.at(-1);
	check('trigger-elicitation-request: the client was asked for the form',
	    asked.elicitation.length === 1 && e?.requestedSchema?.required?.join() === 'name' &&
	    e?.requestedSchema?.properties?.email?.format === 'email', asked.elicitation);
	check('trigger-elicitation-request: the client\'s answer is in the result',
	    textOf(r.res).includes('- Name: Ada of basics') &&
	    textOf(r.res).includes('- Agreed to terms: true') &&
	    textOf(r.res).includes('- Favorite Integer: 7'), r.res ?? errText(r.err));
	r = await call(client, p('trigger-url-elicitation'),
	    { url: 'https://example.com/consent', elicitationId: 'el-1' });
	const u = asked.elicitation.at(-1);
	check('trigger-url-elicitation: the client was asked to open the url',
	    u?.mode === 'url' && u?.url === 'https://example.com/consent' && u?.elicitationId === 'el-1', u);
	check('trigger-url-elicitation: accepted',
	    textOf(r.res).includes('User completed the URL elicitation flow.\nElicitation ID: el-1'),
	    r.res ?? errText(r.err));
	r = await call(client, p('trigger-url-elicitation'),
	    { url: 'https://example.com/auth', errorPath: true });
	check('trigger-url-elicitation errorPath: error -32042 with its elicitations',
	    r.err?.code === -32042 &&
	    r.err?.elicitations?.[0]?.url === 'https://modelcontextprotocol.io', r.err ?? r.res);

	/*
	 * Roots: the server asks for them once, right after initialize, when
	 * its client may be mcpd with no call in flight (then mcpd answers an
	 * empty list: docs/upstreams.md), and again only when it has none.
	 * What it lists is then nobody's or this client's, never an error.
	 */
	r = await call(client, p('get-roots-list'), {});
	const roots = textOf(r.res);
	check('get-roots-list: no roots, or this client\'s',
	    r.res?.isError !== true && (roots.startsWith('The client supports roots but no roots') ||
	    (roots.includes('Current MCP Roots (1 total)') &&
	    roots.includes('URI: file:///srv/basics-root'))), r.res ?? errText(r.err));

	/* toggles: state in the server, answered in turn */
	r = await call(client, p('toggle-subscriber-updates'), {});
	const t1 = textOf(r.res);
	r = await call(client, p('toggle-subscriber-updates'), {});
	const t2 = textOf(r.res);
	check('toggle-subscriber-updates: started, then stopped',
	    t1.startsWith('Started simulated resource updated') && t2.startsWith('Stopped simulated resource updates'),
	    [t1, t2]);
	r = await call(client, p('toggle-simulated-logging'), {});
	const l1 = textOf(r.res);
	r = await call(client, p('toggle-simulated-logging'), {});
	const l2 = textOf(r.res);
	check('toggle-simulated-logging: started, then stopped',
	    l1.startsWith('Started simulated, random-leveled logging') && l2.startsWith('Stopped simulated logging'),
	    [l1, l2]);

	/* errors: answered, never a hang */
	r = await call(client, p('echo'), {});
	check('echo without its required argument: an error',
	    r.res?.isError === true || r.err?.code === -32602, r.res ?? errText(r.err));
	r = await call(client, p('no-such-tool'), {});
	check('an unknown tool: an error', r.res?.isError === true || r.err !== undefined,
	    r.res ?? errText(r.err));
	r = await call(client, p('simulate-research-query'), { topic: 'x' });
	check('a tool that requires a task, called without one: an error',
	    r.res?.isError === true || r.err !== undefined, r.res ?? errText(r.err));
	r = await call(client, p('echo'), { message: 'still here' });
	check('echo after the errors', textOf(r.res) === 'Echo: still here', r.res ?? errText(r.err));

	/* resources */
	try {
		const { resources } = await client.listResources();
		const uris = resources.map(x => x.uri);
		const docs = fs.readdirSync(DOCS).filter(f => f.endsWith('.md'));
		const want = docs.map(f => `demo://resource/static/document/${encodeURIComponent(f)}`);
		check(`resources/list has the ${docs.length} static documents`,
		    want.every(w => uris.includes(w)), uris);
		const rd = await client.readResource({ uri: 'demo://resource/static/document/features.md' });
		check('resources/read of a static document: the file\'s text',
		    rd.contents?.[0]?.text === fs.readFileSync(path.join(DOCS, 'features.md'), 'utf8') &&
		    rd.contents[0].mimeType === 'text/markdown', short(rd).slice(0, 200));
	} catch (err) {
		check('resources/list and read', false, errText(err));
	}
	try {
		const { resourceTemplates } = await client.listResourceTemplates();
		const tmpl = resourceTemplates.map(x => x.uriTemplate);
		check('resources/templates/list: text and blob templates',
		    tmpl.includes('demo://resource/dynamic/text/{resourceId}') &&
		    tmpl.includes('demo://resource/dynamic/blob/{resourceId}'), tmpl);
		const rt = await client.readResource({ uri: 'demo://resource/dynamic/text/5' });
		check('resources/read of a template\'s text resource',
		    rt.contents?.[0]?.text?.startsWith('Resource 5: This is a plaintext resource') &&
		    rt.contents[0].uri === 'demo://resource/dynamic/text/5', rt);
		const rb = await client.readResource({ uri: 'demo://resource/dynamic/blob/6' });
		check('resources/read of a template\'s blob resource',
		    Buffer.from(rb.contents?.[0]?.blob ?? '', 'base64').toString()
			.startsWith('Resource 6: This is a base64 blob'), rb);
	} catch (err) {
		check('resources/templates/list and read', false, errText(err));
	}
	try {
		await client.readResource({ uri: 'demo://resource/dynamic/text/0' });
		check('resources/read of a bad resource id: an error', false, 'answered');
	} catch (err) {
		check('resources/read of a bad resource id: an error', err?.code !== undefined, errText(err));
	}
	try {
		await client.subscribeResource({ uri: 'demo://resource/dynamic/text/1' });
		await client.unsubscribeResource({ uri: 'demo://resource/dynamic/text/1' });
		check('resources/subscribe and unsubscribe', true);
	} catch (err) {
		check('resources/subscribe and unsubscribe', false, errText(err));
	}
	/* A subscription reaches the server: its updates reach this client. */
	try {
		await client.subscribeResource({ uri: 'demo://resource/dynamic/text/2' });
		const mark = c.seen.length;
		r = await call(client, p('toggle-subscriber-updates'), {});
		const updated = await waitFor(() => c.seen.slice(mark).some(m =>
		    m.method === 'notifications/resources/updated' &&
		    m.params?.uri === 'demo://resource/dynamic/text/2'), 10000);
		check('resources/subscribe: the server\'s notifications/resources/updated reach the client',
		    updated, c.seen.slice(mark).map(m => m.method ?? 'response'));
		await call(client, p('toggle-subscriber-updates'), {});
		await client.unsubscribeResource({ uri: 'demo://resource/dynamic/text/2' });
	} catch (err) {
		check('resources/subscribe: updates', false, errText(err));
	}

	/* prompts */
	try {
		const { prompts } = await client.listPrompts();
		const pn = prompts.map(x => x.name);
		check('prompts/list has the 4 prompts', PROMPTS.map(p).every(n => pn.includes(n)), pn);
		const args = prompts.find(x => x.name === p('args-prompt'))?.arguments ?? [];
		check('args-prompt keeps its arguments',
		    args.find(a => a.name === 'city')?.required === true &&
		    args.find(a => a.name === 'state')?.required !== true, args);
		let g = await client.getPrompt({ name: p('simple-prompt') });
		check('prompts/get simple-prompt',
		    g.messages?.[0]?.content?.text === 'This is a simple prompt without arguments.', g);
		g = await client.getPrompt({ name: p('args-prompt'), arguments: { city: 'Paris', state: 'TX' } });
		check('prompts/get args-prompt with arguments',
		    g.messages?.[0]?.content?.text === 'What\'s weather in Paris, TX?', g);
		g = await client.getPrompt({ name: p('resource-prompt'),
		    arguments: { resourceType: 'Blob', resourceId: '4' } });
		check('prompts/get resource-prompt: an embedded resource',
		    g.messages?.[1]?.content?.resource?.uri === 'demo://resource/dynamic/blob/4', g);
	} catch (err) {
		check('prompts', false, errText(err));
	}
	try {
		await client.getPrompt({ name: p('args-prompt'), arguments: {} });
		check('prompts/get without a required argument: an error', false, 'answered');
	} catch (err) {
		check('prompts/get without a required argument: an error', err?.code !== undefined, errText(err));
	}

	/* completions */
	try {
		let cp = await client.complete({ ref: { type: 'ref/prompt', name: p('completable-prompt') },
		    argument: { name: 'department', value: 'S' } });
		check('completion/complete of a prompt argument',
		    cp.completion?.values?.join() === 'Sales,Support', cp);
		cp = await client.complete({ ref: { type: 'ref/prompt', name: p('completable-prompt') },
		    argument: { name: 'name', value: '' },
		    context: { arguments: { department: 'Engineering' } } });
		check('completion/complete with context arguments',
		    cp.completion?.values?.join() === 'Alice,Bob,Charlie', cp);
		cp = await client.complete({ ref: { type: 'ref/resource',
		    uri: 'demo://resource/dynamic/text/{resourceId}' },
		    argument: { name: 'resourceId', value: '12' } });
		check('completion/complete of a resource template variable',
		    cp.completion?.values?.join() === '12', cp);
	} catch (err) {
		check('completions', false, errText(err));
	}

	try {
		await client.setLoggingLevel('warning');
		await client.ping();
		check('logging/setLevel and ping', true);
	} catch (err) {
		check('logging/setLevel and ping', false, errText(err));
	}
	await c.close();
}

/* ------------------------------------------------------------------ */

async function groupEverything() {
	const d = await mcpd('everything', everythingBlock('everything', [
		'sharing shared',
		'env "MCPD_UPSTREAM_TEST=a=b c"',
		'env MCPD_UPSTREAM_SECOND=2'
	]), { tools: ['echo', 'trigger-sampling-request'] });
	await everythingBasics(d.url);
	const kids = childrenOf(d.pid, 'server-everything');
	check('one child for the shared upstream', kids.length === 1, kids);

	/*
	 * Two clients' calls in flight on the shared upstream: whose a
	 * sampling request is cannot be told, and it is refused, not sent to
	 * the wrong client nor left hanging (docs/upstreams.md).
	 */
	const x = await connect(d.url, 'X');
	const y = await connect(d.url, 'Y');
	const progress = [];
	const long = call(x.client, 'trigger-long-running-operation', { duration: 3, steps: 30 },
	    { onprogress: p => progress.push(p.progress) });
	await waitFor(() => progress.length >= 1, 10000);
	const r = await call(y.client, 'trigger-sampling-request', { prompt: 'whose?' });
	check('a sampling request with two clients\' calls in flight: refused, naming sharing session',
	    (r.res?.isError === true && /sharing session/.test(textOf(r.res))) ||
	    /sharing session/.test(r.err?.message ?? ''), r.res ?? errText(r.err));
	check('neither client was asked', x.asked.sampling.length === 0 &&
	    y.asked.sampling.length === 0, [x.asked.sampling, y.asked.sampling]);
	const lr = await long;
	check('the other client\'s call completes', textOf(lr.res).startsWith(
	    'Long running operation completed.') && progress.length === 30, lr.res ?? errText(lr.err));
	await x.close();
	await y.close();
}

async function groupFilesystem() {
	const root = tmpDir('fs-root');
	fs.mkdirSync(path.join(root, 'sub'));
	fs.writeFileSync(path.join(root, 'sub', 'hello.txt'), 'hello\nworld');
	const outside = tmpDir('fs-outside');
	fs.writeFileSync(path.join(outside, 'secret.txt'), 'no');
	const d = await mcpd('filesystem', [
		/* "." is the block's cwd: the cwd reached the child */
		upstreamBlock('files', [`exec ${process.execPath} ${FILESYSTEM} .`,
			'prefix fs_', `cwd ${root}`]),
		everythingBlock('everything')
	].join('\n'), { tools: ['echo', 'fs_read_text_file'] });
	/* A client without roots: the directory of the command line stays. */
	const c = await connect(d.url, 'fs', { capabilities: {} });
	const { client } = c;
	const names = (await client.listTools()).tools.map(t => t.name);
	check('tools/list: fs_ tools and server-everything\'s next to them',
	    ['fs_read_text_file', 'fs_write_file', 'fs_list_directory', 'fs_edit_file',
		'fs_search_files', 'fs_list_allowed_directories', 'echo'].every(n => names.includes(n)) &&
	    !names.includes('read_text_file') && !names.includes('fs_echo'), names);
	const real = fs.realpathSync(root);
	let r = await call(client, 'fs_list_allowed_directories', {});
	check('fs_list_allowed_directories: the block\'s cwd', textOf(r.res).includes(real),
	    r.res ?? errText(r.err));
	r = await call(client, 'fs_read_text_file', { path: path.join(real, 'sub', 'hello.txt') });
	check('fs_read_text_file', textOf(r.res) === 'hello\nworld', r.res ?? errText(r.err));
	r = await call(client, 'fs_read_text_file', { path: path.join(real, 'sub', 'hello.txt'), tail: 1 });
	check('fs_read_text_file tail 1', textOf(r.res).trim() === 'world', r.res ?? errText(r.err));
	const body = 'written through mcpd ✓\n';
	r = await call(client, 'fs_write_file', { path: path.join(real, 'new.txt'), content: body });
	check('fs_write_file: the file is on disk',
	    !r.res?.isError && fs.readFileSync(path.join(root, 'new.txt'), 'utf8') === body,
	    r.res ?? errText(r.err));
	r = await call(client, 'fs_edit_file', { path: path.join(real, 'new.txt'),
	    edits: [{ oldText: 'written', newText: 'edited' }] });
	check('fs_edit_file: a diff, the file changed',
	    textOf(r.res).includes('-written through mcpd') &&
	    fs.readFileSync(path.join(root, 'new.txt'), 'utf8') === 'edited through mcpd ✓\n',
	    r.res ?? errText(r.err));
	r = await call(client, 'fs_list_directory', { path: real });
	check('fs_list_directory', textOf(r.res).includes('[DIR] sub') &&
	    textOf(r.res).includes('[FILE] new.txt'), r.res ?? errText(r.err));
	r = await call(client, 'fs_search_files', { path: real, pattern: '**/hello.txt' });
	check('fs_search_files', textOf(r.res).includes(path.join(real, 'sub', 'hello.txt')),
	    r.res ?? errText(r.err));
	r = await call(client, 'fs_read_text_file', { path: path.join(outside, 'secret.txt') });
	check('fs_read_text_file outside the allowed directory: an error',
	    r.res?.isError === true && textOf(r.res).includes('Access denied'), r.res ?? errText(r.err));
	r = await call(client, 'echo', { message: 'next to files' });
	check('echo of the other upstream', textOf(r.res) === 'Echo: next to files', r.res ?? errText(r.err));
	/* This client declared no sampling: the upstream's request is refused
	 * at once (the tool fails), never sent to it nor left to time out. */
	const t0 = Date.now();
	r = await call(client, 'trigger-sampling-request', { prompt: 'no' }, { timeout: 20000 });
	check('sampling asked of a client that cannot sample: the call fails at once',
	    (r.res?.isError === true || r.err?.code !== undefined) && !/timed out/i.test(errText(r.err)) &&
	    Date.now() - t0 < 15000, r.res ?? errText(r.err));
	r = await call(client, 'trigger-elicitation-request', {}, { timeout: 20000 });
	check('elicitation asked of a client that cannot elicit: the call fails at once',
	    (r.res?.isError === true || r.err?.code !== undefined) && !/timed out/i.test(errText(r.err)),
	    r.res ?? errText(r.err));
	await c.close();
	check('one child per upstream', childrenOf(d.pid, FILESYSTEM).length === 1 &&
	    childrenOf(d.pid, EVERYTHING).length === 1, childrenOf(d.pid));
}

/* ------------------------------------------------------------------ */

const STEPS = 30;

async function groupResume() {
	const d = await mcpd('resume', everythingBlock('everything'), { tools: ['echo'] });
	const proxy = await startProxy(d.url, {
		arm: text => text.includes('trigger-long-running-operation'),
		cutAfter: 8
	});
	try {
		const c = await connect(proxy.url, 'resume');
		const progress = [];
		const ids = [];
		const r = await call(c.client, 'trigger-long-running-operation',
		    { duration: 3, steps: STEPS }, {
			    onprogress: x => progress.push(x.progress),
			    onresumptiontoken: id => ids.push(id),
			    timeout: 30000
		    });
		check('the call completes', textOf(r.res) ===
		    `Long running operation completed. Duration: 3 seconds, Steps: ${STEPS}.`,
		    r.res ?? errText(r.err));
		check('the proxy cut the SSE response mid-event', proxy.cuts === 1, proxy.cuts);
		check('the SDK resumed with GET + Last-Event-ID (200)',
		    c.gets.some(g => g.status === 200), c.gets);
		const want = Array.from({ length: STEPS }, (_, i) => i + 1).join();
		check(`progress 1..${STEPS} each exactly once, in order`, progress.join() === want,
		    progress.join());
		/* A duplicate would come before the stream's end; a ping after the
		 * result goes on its own stream, which ends after it. */
		await c.client.ping();
		const responses = c.seen.filter(m => m.id !== undefined && (m.result || m.error) &&
		    m.result?.content !== undefined);
		check('the result arrived exactly once (counted on the transport)',
		    responses.length === 1, responses);
		if (ids.length > 0 && parseId(ids[0])?.n === 0)
			ids.shift();
		/* The stream may carry more than progress and the result (what
		 * the upstream asks while the call runs): at least STEPS + 1. */
		const parsed = ids.map(parseId);
		const ok = parsed.length >= STEPS + 1 &&
		    parsed.every((x, i) => x !== null && x.k === parsed[0].k && x.n === i + 1);
		check(`event ids K-1..K-N (N >= ${STEPS + 1}), one stream, no gap, no repeat`, ok,
		    ids.map(i => i.replace(/^[0-9]+-/, '')).join());
		await c.close();
	} finally {
		proxy.close();
	}
}

/* ------------------------------------------------------------------ */

async function groupCrash() {
	const d = await mcpd('crash', everythingBlock('everything', ['restart_delay 1']),
	    { tools: ['echo'] });
	const c = await connect(d.url, 'crash');
	const { client } = c;
	let r = await call(client, 'echo', { message: 'before' });
	check('echo before the crash', textOf(r.res) === 'Echo: before', r.res ?? errText(r.err));
	const kids = childrenOf(d.pid, EVERYTHING);
	check('one upstream child', kids.length === 1, kids);
	if (kids.length !== 1)
		return;
	const old = kids[0].pid;

	const progress = [];
	const running = call(client, 'trigger-long-running-operation', { duration: 60, steps: 60 },
	    { onprogress: x => progress.push(x.progress), timeout: 30000 });
	const started = await waitFor(() => progress.length >= 2, 10000);
	check('the long call is running (2 progress notifications)', started, progress);
	const logAt = d.stderr.length;
	process.kill(old, 'SIGKILL');
	const t0 = Date.now();
	r = await running;
	check('the running call fails with an error naming the upstream',
	    r.err !== undefined && /everything/.test(r.err.message) && Date.now() - t0 < 20000,
	    r.res ?? errText(r.err));
	check('no progress after the crash went missing before it', progress.join() ===
	    progress.map((_, i) => i + 1).join(), progress);
	/* Gone from /proc: a zombie mcpd did not wait for would stay. */
	check('the dead child is reaped (no zombie)', await waitFor(() => {
		const st = procStat(old);
		return st === null || st.ppid !== d.pid;
	}, 10000), procStat(old));

	/* Until the new child is up a call may fail, naming the upstream; then
	 * calls work again. */
	const errors = [];
	const back = await waitFor(async () => {
		const x = await call(client, 'echo', { message: 'after' });
		if (textOf(x.res) === 'Echo: after')
			return true;
		errors.push(x.err ? x.err.message : textOf(x.res));
		return false;
	}, 20000, 100);
	check('after the restart, echo works again', back, errors.slice(-3));
	check('calls during the restart failed naming the upstream',
	    errors.every(m => /everything/.test(m)), errors);
	const now = childrenOf(d.pid, EVERYTHING);
	check('a new child replaced the old one', now.length === 1 && now[0].pid !== old, now);
	r = await call(client, 'trigger-long-running-operation', { duration: 0.2, steps: 2 });
	check('a long call on the new child completes',
	    textOf(r.res).startsWith('Long running operation completed.'), r.res ?? errText(r.err));
	check('mcpd logged the upstream\'s exit, naming it',
	    /everything.*(exit|signal|kill|died)|(exit|signal|kill|died).*everything/i
		.test(d.stderr.slice(logAt)), d.stderr.slice(logAt, logAt + 2000));
	await c.close();
}

/* ------------------------------------------------------------------ */

/* mcpd_upstream_requests_inflight of upstream name, from /metrics. */
async function inflight(d, name) {
	const res = await fetch(new URL('/metrics', d.url));
	const m = new RegExp(`^mcpd_upstream_requests_inflight\\{upstream="${name}"\\} ([0-9]+)$`, 'm')
	    .exec(await res.text());
	return m ? Number(m[1]) : -1;
}

async function groupLimits() {
	const d = await mcpd('limits', everythingBlock('everything',
	    ['timeout 2', 'max_concurrency 2']), { tools: ['echo'] });
	const c = await connect(d.url, 'limits');
	const { client } = c;
	check('/metrics: no request in flight at rest', await inflight(d, 'everything') === 0,
	    await inflight(d, 'everything'));

	/* Cancelled by the client: mcpd lets the upstream request go at once. */
	const ac = new AbortController();
	const progress = [];
	const cancelled = call(client, 'trigger-long-running-operation', { duration: 30, steps: 30 },
	    { onprogress: x => progress.push(x.progress), signal: ac.signal });
	await waitFor(() => progress.length >= 1, 10000);
	check('a long call in flight is counted', await inflight(d, 'everything') === 1,
	    await inflight(d, 'everything'));
	const mark = c.seen.length;
	const token = c.seen.find(m => m.method === 'notifications/progress')?.params?.progressToken;
	ac.abort('the test cancels');
	const r0 = await cancelled;
	check('the cancelled call rejects at the client', r0.err !== undefined, r0.res);
	check('after the cancel, no request in flight (mcpd sent it on and let it go)',
	    await waitFor(async () => await inflight(d, 'everything') === 0, 5000),
	    await inflight(d, 'everything'));
	let r = await call(client, 'echo', { message: 'after cancel' });
	check('echo after the cancel', textOf(r.res) === 'Echo: after cancel', r.res ?? errText(r.err));

	/* The block's timeout: the call ends with an error naming the upstream. */
	const t0 = Date.now();
	r = await call(client, 'trigger-long-running-operation', { duration: 20, steps: 4 },
	    { timeout: 30000 });
	check('timeout 2: the call ends with an error naming the upstream',
	    r.err !== undefined && /everything/.test(r.err.message) && Date.now() - t0 < 15000,
	    r.res ?? errText(r.err));
	/* server-everything ignores the cancel and goes on sending progress
	 * every second: 2 s later, none of it reached the client. */
	const late = c.seen.slice(mark).filter(m => m.method === 'notifications/progress' &&
	    m.params?.progressToken === token);
	check('no progress of the cancelled call reached the client after the cancel',
	    token !== undefined && late.length <= 1, late);
	check('after the timeout, no request in flight',
	    await waitFor(async () => await inflight(d, 'everything') === 0, 5000),
	    await inflight(d, 'everything'));

	/* max_concurrency 2: a third call at once is refused, the two go on. */
	const p1 = [];
	const p2 = [];
	const one = call(client, 'trigger-long-running-operation', { duration: 1, steps: 2 },
	    { onprogress: x => p1.push(x) });
	const two = call(client, 'trigger-long-running-operation', { duration: 1, steps: 2 },
	    { onprogress: x => p2.push(x) });
	await waitFor(async () => await inflight(d, 'everything') === 2, 5000);
	r = await call(client, 'echo', { message: 'third' });
	check('max_concurrency 2: a third call is refused, saying the upstream is busy',
	    r.err !== undefined && /everything/.test(r.err.message) && /busy/.test(r.err.message),
	    r.res ?? errText(r.err));
	const [a1, a2] = await Promise.all([one, two]);
	check('the two calls complete', textOf(a1.res).startsWith('Long running operation completed.') &&
	    textOf(a2.res).startsWith('Long running operation completed.'), [a1, a2]);
	r = await call(client, 'echo', { message: 'fourth' });
	check('then a call is served again', textOf(r.res) === 'Echo: fourth', r.res ?? errText(r.err));
	await c.close();
}

/* ------------------------------------------------------------------ */

async function groupSession() {
	const rootA = tmpDir('roots-a');
	const rootB = tmpDir('roots-b');
	const d = await mcpd('session', [
		everythingBlock('everything', ['sharing session']),
		upstreamBlock('files', [`exec ${process.execPath} ${FILESYSTEM} ${tmpDir('fs-cli')}`,
			'prefix fs_', 'sharing session'])
	].join('\n'), { tools: ['echo', 'fs_list_allowed_directories'] });
	/* Children not of a client session (what mcpd runs to learn the
	 * catalog, if it does) are not counted. */
	const base = new Set(childrenOf(d.pid).map(k => k.pid));
	const ours = match => childrenOf(d.pid, match).filter(k => !base.has(k.pid));
	const a = await connect(d.url, 'A', { roots: [{ uri: `file://${rootA}`, name: 'root of A' }] });
	let r = await call(a.client, 'echo', { message: 'A' });
	check('echo on session A', textOf(r.res) === 'Echo: A', r.res ?? errText(r.err));
	const kidA = ours(EVERYTHING);
	check('session A\'s first call started a server-everything child', kidA.length === 1, kidA);
	const b = await connect(d.url, 'B', { roots: [{ uri: `file://${rootB}`, name: 'root of B' }] });
	r = await call(b.client, 'echo', { message: 'B' });
	check('echo on session B', textOf(r.res) === 'Echo: B', r.res ?? errText(r.err));
	const kids = ours(EVERYTHING);
	check('session B\'s first call started another', kids.length === 2 &&
	    kids.some(k => k.pid === kidA[0]?.pid), kids);

	/* State in one child is not in the other. */
	r = await call(a.client, 'toggle-simulated-logging', {});
	const ta = textOf(r.res);
	r = await call(b.client, 'toggle-simulated-logging', {});
	const tb = textOf(r.res);
	check('a toggle on A is not seen by B (both start)',
	    ta.startsWith('Started') && tb.startsWith('Started'), [ta, tb]);
	await call(a.client, 'toggle-simulated-logging', {});
	await call(b.client, 'toggle-simulated-logging', {});
	const dataUri = `data:text/plain;base64,${Buffer.from('only A').toString('base64')}`;
	r = await call(a.client, 'gzip-file-as-resource',
	    { name: 'only-a.gz', data: dataUri, outputType: 'resourceLink' });
	check('A registers a resource', !r.res?.isError && r.res !== undefined, r.res ?? errText(r.err));
	/* mcpd lists again on the child's list_changed, after the call's
	 * answer: wait for it. */
	let la = [];
	await waitFor(async () => {
		la = (await a.client.listResources()).resources.map(x => x.uri);
		return la.includes('demo://resource/session/only-a.gz');
	}, 5000, 50);
	const lb = (await b.client.listResources()).resources.map(x => x.uri);
	check('B does not list A\'s resource', !lb.includes('demo://resource/session/only-a.gz') &&
	    lb.length > 0, lb);
	check('A lists its resource (resources/list of its own child)',
	    la.includes('demo://resource/session/only-a.gz'), la);
	try {
		await b.client.readResource({ uri: 'demo://resource/session/only-a.gz' });
		check('B cannot read A\'s resource', false, 'B read it');
	} catch (err) {
		check('B cannot read A\'s resource', true);
	}
	const rd = await a.client.readResource({ uri: 'demo://resource/session/only-a.gz' })
	    .catch(err => ({ err }));
	check('A reads its resource', rd.contents?.[0]?.blob !== undefined &&
	    gunzipSync(Buffer.from(rd.contents[0].blob, 'base64')).toString() === 'only A', rd);

	/* Roots: each child asks its own client. */
	r = await call(a.client, 'get-roots-list', {});
	check('get-roots-list on A: not B\'s roots', r.res !== undefined &&
	    !textOf(r.res).includes(rootB), r.res ?? errText(r.err));
	check('get-roots-list on A: A\'s roots',
	    textOf(r.res).includes(`file://${rootA}`), r.res ?? errText(r.err));
	r = await call(b.client, 'get-roots-list', {});
	check('get-roots-list on B: not A\'s roots', r.res !== undefined &&
	    !textOf(r.res).includes(rootA), r.res ?? errText(r.err));
	check('get-roots-list on B: B\'s roots',
	    textOf(r.res).includes(`file://${rootB}`), r.res ?? errText(r.err));
	/*
	 * server-filesystem takes its client's roots as its directories, once
	 * its roots/list is answered: a deadline, since a loaded machine starts
	 * the four node children of this group slowly.
	 */
	const realA = fs.realpathSync(rootA);
	const realB = fs.realpathSync(rootB);
	let fsA = '';
	await waitFor(async () => {
		fsA = textOf((await call(a.client, 'fs_list_allowed_directories', {})).res);
		return fsA.includes(realA);
	}, 15000, 100);
	check('server-filesystem of A: not B\'s roots', fsA !== '' && !fsA.includes(realB), fsA);
	check('server-filesystem of A took A\'s roots', fsA.includes(realA), fsA);
	let fsB = '';
	await waitFor(async () => {
		fsB = textOf((await call(b.client, 'fs_list_allowed_directories', {})).res);
		return fsB.includes(realB);
	}, 15000, 100);
	check('server-filesystem of B: not A\'s roots', fsB !== '' && !fsB.includes(realA), fsB);
	check('server-filesystem of B took B\'s roots', fsB.includes(realB), fsB);
	check('both clients were asked for roots',
	    a.asked.roots >= 1 && b.asked.roots >= 1, [a.asked.roots, b.asked.roots]);

	/* Sampling goes to the session whose child asked. */
	r = await call(b.client, 'trigger-sampling-request', { prompt: 'who?' });
	check('sampling asked of B only', b.asked.sampling.length === 1 && a.asked.sampling.length === 0 &&
	    textOf(r.res).includes('sampled by B'), r.res ?? errText(r.err));

	/* A session's end ends its children. */
	const before = ours('');
	check('four session children (two upstreams, two sessions)', before.length === 4, before);
	await a.close();
	const gone = await waitFor(() => ours('').length === 2, 10000);
	const left = ours('');
	check('DELETE of session A stops its two children, B\'s stay', gone &&
	    left.every(k => k.pid !== kidA[0]?.pid) &&
	    left.every(k => before.some(x => x.pid === k.pid)), { before, left });
	r = await call(b.client, 'echo', { message: 'B still' });
	check('B works on', textOf(r.res) === 'Echo: B still', r.res ?? errText(r.err));
	await b.close();
}

/* ------------------------------------------------------------------ */

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

/* server-everything in Streamable HTTP mode on 127.0.0.1:port; resolves
 * once it listens. */
async function startHttpEverything(port) {
	const server = spawn(process.execPath, ['--require', LOOPBACK, EVERYTHING, 'streamableHttp'],
	    { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
	let err = '';
	server.stderr.on('data', s => { err += s; });
	const up = await waitFor(() => err.includes('listening on port') || server.exitCode !== null, 15000);
	check('server-everything listens (Streamable HTTP, loopback)',
	    up && err.includes('listening on port'), err);
	return server;
}

async function groupHttp() {
	const port = await freePort();
	let server = await startHttpEverything(port);
	try {
		const d = await mcpd('http', upstreamBlock('everything',
		    [`url http://127.0.0.1:${port}/mcp`, 'prefix web_', 'restart_delay 1']),
		    { tools: ['web_echo'] });
		await everythingBasics(d.url, { prefix: 'web_', mcpdSide: false });
		check('no child for a url upstream', childrenOf(d.pid).length === 0, childrenOf(d.pid));

		/* The server killed mid-call, then started again on its port. */
		const c = await connect(d.url, 'http-crash');
		const progress = [];
		const running = call(c.client, 'web_trigger-long-running-operation',
		    { duration: 60, steps: 60 }, { onprogress: x => progress.push(x.progress), timeout: 30000 });
		check('a long call runs on the HTTP upstream',
		    await waitFor(() => progress.length >= 2, 10000), progress);
		server.kill('SIGKILL');
		const r = await running;
		check('the server killed: the call fails with an error naming the upstream',
		    r.err !== undefined && /everything/.test(r.err.message), r.res ?? errText(r.err));
		server = await startHttpEverything(port);
		const errors = [];
		const back = await waitFor(async () => {
			const x = await call(c.client, 'web_echo', { message: 'back' });
			if (textOf(x.res) === 'Echo: back')
				return true;
			errors.push(x.err ? x.err.message : textOf(x.res));
			return false;
		}, 15000, 200);
		check('the server back: echo works again (a new upstream session)',
		    back, errors.slice(-2));
		check('calls meanwhile failed naming the upstream', errors.every(m => /everything/.test(m)),
		    errors);
		const p2 = [];
		const r2 = await call(c.client, 'web_trigger-long-running-operation', { duration: 0.3, steps: 3 },
		    { onprogress: x => p2.push(x.progress) });
		check('progress and the result through the new upstream session',
		    textOf(r2.res).startsWith('Long running operation completed.') && p2.join() === '1,2,3',
		    [r2.res ?? errText(r2.err), p2]);
		await c.close();
	} finally {
		server.kill('SIGKILL');
	}
}

/* ------------------------------------------------------------------ */

/*
 * The catalog lines of an upstream block, on the names server-everything
 * gives (before the prefix): only what they let through is served, under
 * the names and descriptions they say; the rest is an unknown tool.
 */
async function groupCatalog() {
	const deny = 'tools deny get-env get-tiny-image';
	const d = await mcpd('catalog', everythingBlock('everything', [
		'prefix ev_',
		'tools allow echo get-* trigger-long-running-operation',
		deny,
		'rename get-sum add',
		'description echo "Says it back"',
		'prompts deny args-prompt'
	]), { tools: ['ev_echo', 'ev_add'] });
	const c = await connect(d.url, 'catalog');
	const changed = [];
	c.client.setNotificationHandler(ToolListChangedNotificationSchema,
	    () => changed.push(Date.now()));
	const served = name => /^(echo|get-.*|trigger-long-running-operation)$/
	    .test(name) && !['get-env', 'get-tiny-image'].includes(name);
	const want = [...TOOLS, ...CONDITIONAL_TOOLS].filter(served)
	    .map(n => `ev_${n === 'get-sum' ? 'add' : n}`).sort();
	let tools = (await c.client.listTools()).tools;
	const names = tools.map(t => t.name).sort();
	check('tools/list: what allow lets through, less deny, renamed',
	    names.join() === want.join(), { got: names, want });
	const add = tools.find(t => t.name === 'ev_add');
	check('the renamed tool keeps its input schema',
	    add?.inputSchema?.properties?.a !== undefined &&
	    add?.inputSchema?.properties?.b !== undefined, add);
	check('description replaces the upstream\'s',
	    tools.find(t => t.name === 'ev_echo')?.description === 'Says it back',
	    tools.find(t => t.name === 'ev_echo'));
	let r = await call(c.client, 'ev_add', { a: 2, b: 3 });
	check('a call of the new name reaches the upstream under its own',
	    textOf(r.res) === 'The sum of 2 and 3 is 5.' && !r.res.isError,
	    r.res ?? errText(r.err));
	r = await call(c.client, 'ev_echo', { message: 'curated' });
	check('an allowed tool', textOf(r.res) === 'Echo: curated',
	    r.res ?? errText(r.err));
	for (const name of ['ev_get-env', 'ev_get-sum', 'ev_toggle-simulated-logging']) {
		r = await call(c.client, name, {});
		check(`${name} (left out) is an unknown tool (-32602)`,
		    r.err?.code === -32602 && /Unknown tool/.test(r.err?.message),
		    r.res ?? errText(r.err));
	}
	const prompts = (await c.client.listPrompts()).prompts.map(p => p.name);
	check('prompts deny leaves the prompt out',
	    prompts.includes('ev_simple-prompt') && !prompts.includes('ev_args-prompt'),
	    prompts);
	let err = null;
	try {
		await c.client.getPrompt({ name: 'ev_args-prompt', arguments: { city: 'x' } });
	} catch (e) {
		err = e;
	}
	check('prompts/get of a denied prompt is an error', err?.code === -32602,
	    errText(err));

	/* A reload changes the catalog without restarting the upstream. */
	const kids = childrenOf(d.pid, 'server-everything').map(k => k.pid);
	fs.writeFileSync(d.confPath, fs.readFileSync(d.confPath, 'utf8')
	    .replace(deny, 'tools deny get-tiny-image'));
	process.kill(d.pid, 'SIGHUP');
	const heard = await waitFor(() => changed.length > 0, 10000);
	check('after a reload that changes the catalog, tools/list_changed',
	    heard, d.tail(10));
	tools = (await c.client.listTools()).tools.map(t => t.name);
	check('the reloaded catalog serves what it now lets through',
	    tools.includes('ev_get-env') && !tools.includes('ev_get-tiny-image'),
	    tools);
	r = await call(c.client, 'ev_get-env', {});
	check('and calls reach it', r.res !== undefined && !r.res.isError,
	    r.res ?? errText(r.err));
	const now = childrenOf(d.pid, 'server-everything').map(k => k.pid);
	check('the upstream was not restarted for it',
	    now.length === 1 && now[0] === kids[0], { before: kids, now });
	await c.close();
}

async function groupRedis() {
	if (REDIS_URL === null) {
		skip('two mcpd on one Redis', 'needs MCPD_TEST_REDIS_URL (run ' +
		    'under scripts/with-redis)');
		return;
	}
	const conf = everythingBlock('everything');
	const one = await mcpd('redis-1', conf, { eventlog: REDIS_URL, tools: ['echo'] });
	const two = await mcpd('redis-2', conf, { eventlog: REDIS_URL, tools: ['echo'] });
	/* Answers to server-to-client requests (a JSON-RPC response posted)
	 * go to instance 2, everything else to instance 1. */
	const answered = [];
	const c = await connect(one.url, 'R', {
		route: (input, init) => {
			if ((init.method || 'GET') !== 'POST' || typeof init.body !== 'string')
				return input;
			const msg = JSON.parse(init.body);
			if (msg.method === undefined && msg.id !== undefined) {
				answered.push(msg.id);
				return two.url;
			}
			return input;
		}
	});
	let r = await call(c.client, 'trigger-sampling-request', { prompt: 'across', maxTokens: 3 });
	check('sampling raised on 1, answered on 2: the answer is in the result',
	    answered.length === 1 && textOf(r.res).includes('sampled by R'), [answered, r.res ?? errText(r.err)]);
	r = await call(c.client, 'trigger-elicitation-request', {});
	check('elicitation raised on 1, answered on 2: the answer is in the result',
	    answered.length === 2 && textOf(r.res).includes('- Name: Ada of R'), [answered, r.res ?? errText(r.err)]);
	const k1 = childrenOf(one.pid, EVERYTHING);
	const k2 = childrenOf(two.pid, EVERYTHING);
	check('each instance runs its own child of the shared upstream',
	    k1.length === 1 && k2.length === 1 && k1[0].pid !== k2[0].pid, [k1, k2]);
	/*
	 * A long call on instance 1, its SSE response cut mid-event; the SDK's
	 * resuming GET goes to instance 2, which shows the rest from Redis
	 * while instance 1's child goes on: every progress and the result
	 * exactly once.
	 */
	const proxy = await startProxy(one.url, {
		arm: text => text.includes('trigger-long-running-operation'),
		cutAfter: 5
	});
	try {
		const resumedOn = [];
		const cc = await connect(proxy.url, 'R-resume', {
			route: (input, init) => {
				if ((init.method || 'GET') === 'GET' &&
				    new Headers(init.headers).get('last-event-id')) {
					resumedOn.push(2);
					return two.url;
				}
				return input;
			}
		});
		const progress = [];
		const rr = await call(cc.client, 'trigger-long-running-operation', { duration: 2, steps: 20 },
		    { onprogress: x => progress.push(x.progress), timeout: 30000 });
		check('a long call cut on instance 1 completes after resuming on instance 2',
		    proxy.cuts === 1 && resumedOn.length >= 1 && cc.gets.some(g => g.status === 200) &&
		    textOf(rr.res).startsWith('Long running operation completed.'),
		    { cuts: proxy.cuts, gets: cc.gets, res: rr.res ?? errText(rr.err) });
		check('  every progress exactly once, in order, across the two instances',
		    progress.join() === Array.from({ length: 20 }, (_, i) => i + 1).join(), progress.join());
		await cc.client.ping();
		const results = cc.seen.filter(m => m.id !== undefined && m.result?.content !== undefined);
		check('  the result exactly once', results.length === 1, results);
		await cc.close();
	} finally {
		proxy.close();
	}

	/* The same session through instance 2, which runs its own child. */
	const c2 = await connect(two.url, 'R2');
	r = await call(c2.client, 'echo', { message: 'on 2' });
	check('a call through instance 2', textOf(r.res) === 'Echo: on 2', r.res ?? errText(r.err));
	await c2.close();
	await c.close();
}

/* ------------------------------------------------------------------ */

const argv = process.argv.slice(2);
const groups = [];
let url = null;
for (let i = 0; i < argv.length; i++) {
	if (argv[i] === '--mcpd')
		mcpdBin = path.resolve(argv[++i]);
	else if (argv[i] === '--url')
		url = new URL(argv[++i]);
	else
		groups.push(argv[i]);
}
if (mcpdBin === null && url === null) {
	console.error('usage: upstream_test.mjs --mcpd MCPD [GROUP...] | --url URL');
	process.exit(2);
}
for (const g of groups) {
	if (!ALL.includes(g)) {
		console.error(`no group ${g}; groups: ${ALL.join(' ')}`);
		process.exit(2);
	}
}
runTests('upstream_test', async () => {
	if (url !== null) {
		setGroup('basics');
		await everythingBasics(url, { mcpdSide: false });
		return;
	}
	for (const g of groups.length > 0 ? groups : ALL) {
		const fn = { everything: groupEverything, filesystem: groupFilesystem,
			resume: groupResume, crash: groupCrash, limits: groupLimits,
			session: groupSession,
			http: groupHttp, catalog: groupCatalog, redis: groupRedis }[g];
		setGroup(g);
		const t0 = Date.now();
		try {
			await fn();
		} catch (err) {
			check('ran without an exception', false, err?.stack || String(err));
			for (const d of daemons)
				console.log(d.tail(20));
		}
		await stopAll();
		console.log(`# ${g}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
	}
}, {
	timeoutMs: TEST_TIMEOUT_MS,
	onTimeout: () => {
		for (const d of daemons)
			d.proc.kill('SIGKILL');
	},
	cleanup: removeTmp
});
