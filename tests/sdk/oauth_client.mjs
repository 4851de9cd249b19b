// The official MCP TypeScript SDK client, with its OAuth support, against an
// mcpd that wants tokens (run by tests/e2e/test_auth_peers.py).
//
//   node tests/sdk/oauth_client.mjs --url URL --client-id ID
//       --client-secret SECRET --issuer AS_URL [--scope SCOPES]
//       [--call NAME JSON]...
//
// The client starts with no token at all.  The SDK's ClientCredentialsProvider
// (client_secret_basic, bound to --issuer, asking for --scope) has to do the
// rest itself: take the 401 and its WWW-Authenticate resource_metadata,
// fetch mcpd's RFC 9728 metadata, then the authorization server's RFC 8414
// metadata, get a token from its token endpoint, and retry.  Then it lists
// the tools and makes each --call; a call that fails is written down and
// the next one made.  (In SDK 1.32.2 this provider always asks for its own
// --scope: the scope of a 401 or 403 challenge, or of the metadata, does
// not reach its token request, so its step-up on a 403 insufficient_scope
// asks for the same token again.)
//
// Prints one JSON document on stdout:
//   {"fetches":[{"method":M,"url":U,"status":S,"www_authenticate":W,
//                "authorization":"Bearer"|null,"body":TOKEN_REQUEST_FORM},...],
//    "tools":[NAME,...],
//    "calls":[{"name":N,"result":R}|{"name":N,"error":E},...],
//    "error":null|STRING}
// and exits 0 when it connected and listed the tools, 1 otherwise ("error"
// says where it stopped).  The test reads it and checks what the SDK did on
// the wire.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS || 30000);

const opts = { calls: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
	const a = argv[i];
	const next = () => {
		if (i + 1 >= argv.length) {
			process.stderr.write(`oauth_client: ${a} needs a value\n`);
			process.exit(2);
		}
		return argv[++i];
	};
	if (a === '--url')
		opts.url = next();
	else if (a === '--client-id')
		opts.clientId = next();
	else if (a === '--client-secret')
		opts.clientSecret = next();
	else if (a === '--issuer')
		opts.issuer = next();
	else if (a === '--scope')
		opts.scope = next();
	else if (a === '--call') {
		const name = next();
		opts.calls.push({ name, args: JSON.parse(next()) });
	} else {
		process.stderr.write(`oauth_client: unknown argument ${a}\n`);
		process.exit(2);
	}
}
for (const k of ['url', 'clientId', 'clientSecret', 'issuer']) {
	if (opts[k] === undefined) {
		process.stderr.write(`oauth_client: --${k} is required\n`);
		process.exit(2);
	}
}

const out = { fetches: [], tools: [], calls: [], error: null };

function done(code) {
	process.stdout.write(JSON.stringify(out) + '\n', () =>
	    process.exit(code));
}

setTimeout(() => {
	out.error = `timed out after ${TIMEOUT_MS} ms`;
	done(1);
}, TIMEOUT_MS).unref();

// Every request the SDK makes, mcpd's and the authorization server's, goes
// through here and is written down (the transport and auth() both take it).
async function tracingFetch(input, init) {
	const url = typeof input === 'string' ? input :
	    input instanceof URL ? input.href : input.url;
	const method = init?.method ?? 'GET';
	const headers = new Headers(init?.headers ?? {});
	const auth = headers.get('authorization');
	const entry = { method, url,
	    authorization: auth ? auth.split(' ')[0] : null };
	if (typeof init?.body === 'string' && !url.startsWith(opts.url))
		entry.body = init.body;
	else if (init?.body instanceof URLSearchParams)
		entry.body = init.body.toString();
	out.fetches.push(entry);
	const res = await fetch(input, init);
	entry.status = res.status;
	entry.www_authenticate = res.headers.get('www-authenticate');
	return res;
}

const provider = new ClientCredentialsProvider({
	clientId: opts.clientId,
	clientSecret: opts.clientSecret,
	clientName: 'mcpd-oauth-test',
	scope: opts.scope,
	expectedIssuer: opts.issuer
});

const client = new Client({ name: 'mcpd-oauth-test', version: '0.1' });
const transport = new StreamableHTTPClientTransport(new URL(opts.url), {
	authProvider: provider,
	fetch: tracingFetch
});

try {
	await client.connect(transport);
	const listed = await client.listTools();
	out.tools = listed.tools.map((t) => t.name);
	for (const c of opts.calls) {
		try {
			const result = await client.callTool({ name: c.name,
			    arguments: c.args });
			out.calls.push({ name: c.name, result });
		} catch (e) {
			out.calls.push({ name: c.name, error: String(e) });
		}
	}
	await transport.terminateSession().catch(() => {});
	await client.close();
	done(0);
} catch (e) {
	out.error = e?.stack ?? String(e);
	done(1);
}
