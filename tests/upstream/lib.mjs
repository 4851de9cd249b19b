/*
 * What the upstream tests share: mcpd started on a conf of the test's own
 * and stopped with its sanitizer report read, and the processes mcpd
 * started (from /proc); with what every node test shares (checks and
 * their tally, polling, event ids, the TCP proxy that cuts an SSE
 * response mid-event), from tests/js/lib.mjs.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { short, sleep, waitFor } from '../js/lib.mjs';

export {
	check, counts, finish, parseId, runTests, setGroup, short, skip, sleep,
	startProxy, waitFor
} from '../js/lib.mjs';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const MODULES = path.join(HERE, 'node_modules');
export const EVERYTHING = path.join(MODULES,
    '@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = path.join(MODULES,
    '@modelcontextprotocol/server-filesystem/dist/index.js');
/* Makes a server that listens on every interface listen on loopback. */
export const LOOPBACK = path.join(HERE, 'loopback.cjs');

export function textOf(result) {
	return (result?.content ?? []).filter(c => c.type === 'text')
	    .map(c => c.text).join('\n');
}

export function errText(err) {
	return `${err?.code ?? ''} ${err?.message ?? String(err)}`;
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
