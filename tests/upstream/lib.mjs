/*
 * What the upstream tests share: checks and their tally, polling with a
 * deadline, mcpd started on a conf of the test's own and stopped with its
 * sanitizer report read, the processes mcpd started (from /proc), and a
 * TCP proxy that cuts an SSE response in the middle of an event.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const MODULES = path.join(HERE, 'node_modules');
export const EVERYTHING = path.join(MODULES,
    '@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = path.join(MODULES,
    '@modelcontextprotocol/server-filesystem/dist/index.js');
/* Makes a server that listens on every interface listen on loopback. */
export const LOOPBACK = path.join(HERE, 'loopback.cjs');

let passed = 0;
let failed = 0;
let group = '';

export function setGroup(name) {
	group = name;
}

export const short = v => {
	let s;
	try {
		s = typeof v === 'string' ? v : JSON.stringify(v);
	} catch {
		s = String(v);
	}
	return s === undefined ? 'undefined' : s.length > 400 ? s.slice(0, 400) + '...' : s;
};

export function check(name, ok, detail) {
	const full = group ? `${group}: ${name}` : name;
	if (ok) {
		passed++;
		console.log(`ok   ${full}`);
	} else {
		failed++;
		console.log(`FAIL ${full}${detail !== undefined ? `: ${short(detail)}` : ''}`);
	}
	return ok;
}

export function tally() {
	return { passed, failed };
}

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/* Polls pred (which may be async) every 20 ms until it is true or ms pass. */
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

export function textOf(result) {
	return (result?.content ?? []).filter(c => c.type === 'text')
	    .map(c => c.text).join('\n');
}

export function errText(err) {
	return `${err?.code ?? ''} ${err?.message ?? String(err)}`;
}

/* K-N as docs/protocol.md (Event ids) fixes them. */
export function parseId(id) {
	const m = /^(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$/.exec(id ?? '');
	return m ? { k: m[1], n: Number(m[2]) } : null;
}

/* ------------------------------------------------------------------ */
/* Processes */

function readProc(pid, what) {
	try {
		return fs.readFileSync(`/proc/${pid}/${what}`, 'utf8');
	} catch {
		return null;
	}
}

/* { pid, ppid, state } of a live process, or null. */
export function procStat(pid) {
	const stat = readProc(pid, 'stat');
	if (stat === null)
		return null;
	/* comm may hold spaces and parentheses: fields start after the last ')' */
	const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
	return { pid, state: rest[0], ppid: Number(rest[1]) };
}

export function alive(pid) {
	const s = procStat(pid);
	return s !== null && s.state !== 'Z' && s.state !== 'X';
}

/* The live children of pid whose command line contains match. */
export function childrenOf(pid, match = '') {
	const out = [];
	for (const name of fs.readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(name))
			continue;
		const s = procStat(Number(name));
		if (s === null || s.ppid !== pid || s.state === 'Z')
			continue;
		const cmd = (readProc(name, 'cmdline') ?? '').split('\0').join(' ');
		if (cmd.includes(match))
			out.push({ pid: s.pid, cmd });
	}
	return out;
}

/* Children of pid that exited and were not waited for. */
export function zombiesOf(pid) {
	const out = [];
	for (const name of fs.readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(name))
			continue;
		const s = procStat(Number(name));
		if (s !== null && s.ppid === pid && s.state === 'Z')
			out.push(s.pid);
	}
	return out;
}

/* Resident set size of pid in KiB (0 once gone). */
export function rssKiB(pid) {
	const status = readProc(pid, 'status');
	const m = /VmRSS:\s+([0-9]+) kB/.exec(status ?? '');
	return m ? Number(m[1]) : 0;
}

/* ------------------------------------------------------------------ */
/* mcpd */

const SANITIZER = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer/;

let tmpRoot = null;
export function tmpDir(name) {
	if (tmpRoot === null)
		tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-upstream.'));
	const d = path.join(tmpRoot, name);
	fs.mkdirSync(d, { recursive: true });
	return d;
}
export function removeTmp() {
	if (tmpRoot !== null)
		fs.rmSync(tmpRoot, { recursive: true, force: true });
}

export const REDIS_URL = process.env.MCPD_TEST_REDIS_URL || null;

/*
 * An mcpd on a free loopback port with conf (the lines after listen,
 * endpoint and eventlog). Resolves once it logged where it listens.
 */
export async function startMcpd(bin, name, conf, { eventlog = 'memory' } = {}) {
	const dir = tmpDir(name);
	const confPath = path.join(dir, 'mcpd.conf');
	fs.writeFileSync(confPath, [
		'# written by tests/upstream',
		'listen 127.0.0.1:0',
		'endpoint /mcp',
		`eventlog ${eventlog}`,
		'builtin_tools off',
		'drain_delay 0',
		'drain_timeout 0',
		conf
	].join('\n') + '\n');
	const env = { ...process.env };
	env.ASAN_OPTIONS ??= 'detect_leaks=1:abort_on_error=0:exitcode=99';
	env.UBSAN_OPTIONS ??= 'print_stacktrace=1:halt_on_error=1';
	const proc = spawn(bin, ['-c', confPath], {
		stdio: ['ignore', 'ignore', 'pipe'], env
	});
	const d = {
		name, proc, pid: proc.pid, stderr: '', exited: null, confPath,
		url: null, port: 0
	};
	proc.stderr.setEncoding('utf8');
	proc.stderr.on('data', s => {
		d.stderr += s;
		/* a bound: what a test reads is the start and the end */
		if (d.stderr.length > 4 << 20)
			d.stderr = d.stderr.slice(0, 1 << 20) + '\n[...]\n' +
			    d.stderr.slice(-(1 << 20));
	});
	const exited = new Promise(resolve => proc.on('exit', (code, sig) => {
		d.exited = { code, sig };
		resolve(d.exited);
	}));
	d.wait = () => exited;
	const port = await waitFor(() => {
		const m = /listening on 127\.0\.0\.1:([0-9]+)/.exec(d.stderr);
		return m ? Number(m[1]) : (d.exited ? -1 : 0);
	}, 20000);
	if (!(port > 0))
		throw new Error(`mcpd ${name} did not start (${short(d.exited)}):\n` +
		    `${d.stderr.slice(-3000)}\nconf:\n${fs.readFileSync(confPath, 'utf8')}`);
	d.port = port;
	d.url = new URL(`http://127.0.0.1:${port}/mcp`);
	d.tail = (n = 30) => d.stderr.split('\n').slice(-n).map(l => `# ${l}`).join('\n');
	/*
	 * SIGTERM, then the exit: true when it exited 0 within 10 s (after
	 * that, SIGKILL) with no sanitizer report and no child left behind.
	 */
	d.stop = async () => {
		if (d.exited === null) {
			const kids = childrenOf(d.pid);
			proc.kill('SIGTERM');
			const done = await Promise.race([exited, sleep(10000).then(() => null)]);
			if (done === null) {
				proc.kill('SIGKILL');
				await exited;
				return `${name} did not exit within 10 s of SIGTERM`;
			}
			const left = await waitFor(() => kids.every(k => !alive(k.pid)), 5000);
			if (!left)
				return `${name} left children running: ${short(kids.filter(k => alive(k.pid)))}`;
		}
		if (SANITIZER.test(d.stderr))
			return `${name}: sanitizer report:\n${d.stderr.slice(d.stderr.search(SANITIZER) - 200, d.stderr.search(SANITIZER) + 4000)}`;
		if (d.exited.code !== 0)
			return `${name} exited ${short(d.exited)}\n${d.tail()}`;
		return null;
	};
	return d;
}

/* ------------------------------------------------------------------ */
/* A TCP proxy that cuts */

/*
 * Forwards bytes both ways. The first connection whose request contains
 * armText is watched: once its response has carried cutAfter matches of
 * cutText, the proxy forwards that chunk up to the middle of the last
 * match (a torn SSE event) and resets both sockets. It cuts once.
 */
export function startCutProxy(target, { armText, cutText, cutAfter }) {
	const state = { cuts: 0, connections: 0 };
	const sockets = new Set();

	state.server = net.createServer(client => {
		const upstream = net.connect({ host: target.hostname, port: Number(target.port) });
		let req = '';
		let armed = false;
		let resp = '';
		let cut = false;

		state.connections++;
		for (const s of [client, upstream]) {
			sockets.add(s);
			s.setNoDelay(true);
			s.on('close', () => sockets.delete(s));
		}
		client.on('data', buf => {
			if (state.cuts === 0 && !armed) {
				req = (req + buf.toString('latin1')).slice(-16384);
				if (req.includes(armText))
					armed = true;
			}
			if (!cut)
				upstream.write(buf);
		});
		upstream.on('data', buf => {
			if (cut)
				return;
			if (armed && state.cuts === 0) {
				resp += buf.toString('latin1');
				if (resp.split(cutText).length - 1 >= cutAfter) {
					const text = buf.toString('latin1');
					const at = text.lastIndexOf(cutText);
					cut = true;
					state.cuts++;
					client.write(buf.subarray(0, Math.max(0, at) + 5), () => {
						client.resetAndDestroy();
						upstream.resetAndDestroy();
					});
					return;
				}
			}
			client.write(buf);
		});
		const endBoth = () => {
			if (cut)
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
			state.url = new URL(target.href);
			state.url.host = `127.0.0.1:${state.server.address().port}`;
			state.close = () => {
				for (const s of sockets)
					s.destroy();
				state.server.close();
			};
			resolve(state);
		});
	});
}
