/*
 * What the node tests share (tests/sdk/*.mjs, tests/upstream): checks and
 * their tally, skips, the closing "NAME: N passed, N failed, N skipped"
 * line with the exit status, a deadline for the whole file, polling, event
 * ids, and the TCP proxy that cuts an SSE response in the middle of an
 * event.
 *
 * It imports node's own modules only: tests/sdk and tests/upstream each
 * have their own node_modules, and an import here would resolve from
 * tests/js, which has none.
 */
import net from 'node:net';

const tally = { passed: 0, failed: 0, skipped: 0 };
let group = '';

/* CI sets it: a skip there is a failure (see skip()). */
const NO_SKIP = !['', '0'].includes(process.env.MCPD_TEST_NO_SKIP ?? '');

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/* A value for a message: JSON, at most 400 characters. */
export const short = v => {
	let s;
	try {
		s = typeof v === 'string' ? v : JSON.stringify(v);
	} catch {
		s = String(v);
	}
	return s === undefined ? 'undefined' :
	    s.length > 400 ? s.slice(0, 400) + '...' : s;
};

/* Names the checks that follow "GROUP: name" (none: ''). */
export function setGroup(name) {
	group = name;
}

/*
 * One check: "ok   name" or "FAIL name: detail" (a string as it is,
 * anything else through short()). Returns ok.
 */
export function check(name, ok, detail) {
	const full = group ? `${group}: ${name}` : name;
	if (ok) {
		tally.passed++;
		console.log(`ok   ${full}`);
	} else {
		tally.failed++;
		const d = detail === undefined ? '' : `: ${typeof detail ===
		    'string' ? detail : short(detail)}`;
		console.log(`FAIL ${full}${d}`);
	}
	return ok;
}

/*
 * What could not run here, and why: counted apart, never as a pass; a
 * failure with MCPD_TEST_NO_SKIP=1, as CI runs the tests.
 */
export function skip(name, why) {
	const full = group ? `${group}: ${name}` : name;
	if (NO_SKIP) {
		check(name, false, `skipped, and MCPD_TEST_NO_SKIP is set: ${why}`);
		return;
	}
	tally.skipped++;
	console.log(`SKIP ${full}: ${why}`);
}

export function counts() {
	return { ...tally };
}

/*
 * The summary line run.sh reads, then the exit: 0 when nothing failed and
 * something passed.
 */
export function finish(name) {
	const { passed, failed, skipped } = tally;
	console.log(`${name}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
	process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

/*
 * A deadline for the whole file: past ms, one more failed check, then
 * onTimeout() (kill what the test started, clean up), then finish(name).
 * Returns the timer, to clear when the test is done in time.
 */
export function deadline(name, ms, onTimeout) {
	return setTimeout(() => {
		setGroup('');
		check(`finished within ${ms} ms`, false, 'timeout');
		onTimeout?.();
		finish(name);
	}, ms);
}

/*
 * Runs a test file's body (async) under deadline(name, timeoutMs,
 * onTimeout), then finishes as name; an exception is a failed check.
 * cleanup() runs before the exit, whatever happened.
 */
export async function runTests(name, body, { timeoutMs, onTimeout,
    cleanup } = {}) {
	const timer = deadline(name, timeoutMs, () => {
		onTimeout?.();
		cleanup?.();
	});
	try {
		await body();
	} catch (err) {
		check('ran without an exception', false, err?.stack || String(err));
	}
	clearTimeout(timer);
	cleanup?.();
	finish(name);
}

/* Polls pred (which may be async) every `every` ms until it is true or ms pass. */
export async function waitFor(pred, ms, every = 20) {
	const end = Date.now() + ms;
	for (;;) {
		let v;
		try {
			v = await pred();
		} catch {
			v = false;
		}
		if (v)
			return v;
		if (Date.now() >= end)
			return v;
		await sleep(every);
	}
}

/* K-N as docs/protocol.md (Event ids) fixes them, or null. */
export function parseId(id) {
	const m = /^(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$/.exec(id ?? '');
	return m ? { k: m[1], n: Number(m[2]) } : null;
}

/* ------------------------------------------------------------------ */
/* The TCP proxy */

/* Does a request's text hold a tools/call of the builtin `stream` tool? */
export const streamCall = text => /"method"\s*:\s*"tools\/call"/.test(text) &&
    /"name"\s*:\s*"stream"/.test(text);

/*
 * Where a chunk is torn: in the middle of its last `data:` line (the
 * event it belongs to arrives incomplete, the events before it whole),
 * or, with none, in its middle.
 */
function tearAt(buf) {
	const at = buf.lastIndexOf('data:');
	return at < 0 ? Math.max(1, buf.length >> 1) :
	    at + ((buf.length - at) >> 1);
}

/*
 * A TCP proxy on a free loopback port in front of target (a URL), which
 * forwards bytes both ways. Resolves to { url (target's, through the
 * proxy), port, connections, cuts, close() }.
 *
 * With cutAfter, it cuts once: the first connection whose request bytes
 * satisfy arm(text) (by default a tools/call of `stream`) is watched, and
 * once the bytes back on it have carried cutAfter matches of cutText
 * ('notifications/progress'), the chunk in hand is forwarded up to the
 * middle of its last data: line (a torn SSE event) and both sockets are
 * reset. Like any proxy it has read, and so acknowledged, what it did not
 * forward.
 *
 * Without, it only forwards, through pipe(): a reader that stalls stalls
 * the server, as without a proxy; `connections` counts what came through.
 */
export function startProxy(target, { cutAfter, arm = streamCall,
    cutText = 'notifications/progress' } = {}) {
	const state = { cuts: 0, connections: 0 };
	const sockets = new Set();

	state.server = net.createServer(client => {
		const upstream = net.connect({ host: target.hostname,
		    port: Number(target.port || 80) });

		state.connections++;
		for (const s of [client, upstream]) {
			sockets.add(s);
			s.on('close', () => sockets.delete(s));
		}
		if (cutAfter === undefined) {
			for (const s of [client, upstream])
				s.on('error', () => { client.destroy(); upstream.destroy(); });
			client.pipe(upstream);
			upstream.pipe(client);
			return;
		}

		let req = '';
		let armed = false;
		let seen = 0;
		let tail = '';
		let cutting = false;

		client.setNoDelay(true);
		upstream.setNoDelay(true);
		client.on('data', buf => {
			if (state.cuts === 0 && !armed) {
				req = (req + buf.toString('latin1')).slice(-16384);
				if (arm(req))
					armed = true;
			}
			if (!cutting)
				upstream.write(buf);
		});
		upstream.on('data', buf => {
			if (cutting)
				return;
			if (armed && state.cuts === 0) {
				/* Count across chunk boundaries: keep a short tail. */
				const text = tail + buf.toString('latin1');
				seen += text.split(cutText).length - 1;
				tail = text.slice(-(cutText.length - 1));
				if (seen >= cutAfter) {
					cutting = true;
					state.cuts++;
					client.write(buf.subarray(0, tearAt(buf)), () => {
						client.resetAndDestroy();
						upstream.resetAndDestroy();
					});
					return;
				}
			}
			client.write(buf);
		});
		const endBoth = () => {
			if (cutting)
				return;
			client.destroy();
			upstream.destroy();
		};
		for (const s of [client, upstream]) {
			s.on('error', endBoth);
			s.on('close', endBoth);
		}
	});
	return new Promise((resolve, reject) => {
		state.server.on('error', reject);
		state.server.listen(0, '127.0.0.1', () => {
			state.port = state.server.address().port;
			state.url = new URL(target.href);
			state.url.host = `127.0.0.1:${state.port}`;
			state.close = () => {
				for (const s of sockets)
					s.destroy();
				state.server.close();
			};
			resolve(state);
		});
	});
}
