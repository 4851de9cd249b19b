/*
 * The Redis layout of the event log and the one Lua script that changes it.
 *
 * A session SID owns keys that share the hash tag {SID} (one Cluster slot):
 *
 *   mcpd:{SID}:meta	hash: m = the session's meta; k:K = o (open) or e
 *			(ended) for every stream K the session ever had, so K
 *			is never created twice and a stream whose key is gone
 *			reads as expired; t = when open streams last got a new
 *			lifetime (the writer's wall clock, ms); c = tombstone
 *			scan cursor.
 *   mcpd:{SID}:s:K	a Redis Stream; entry N has the explicit id K-N (so
 *			the XADD id is the SSE id) and the field d, the
 *			message; the last entry of each create or append
 *			also has t, the operation's token (below).
 *   mcpd:{SID}:s:K:c	a stream's compacted copy, renamed over it in the
 *			script call that ends it (compact(), below): no
 *			other command ever sees it.
 *   mcpd:{SID}:events	pub/sub channel: "K-N" after each commit (an
 *			append of several entries publishes its last id);
 *			"!deleted" when delete removed the session; "m "
 *			then the text of a process's message to the others
 *			(eventlog_publish: a plain PUBLISH, not the
 *			script; the messages are in peer.h).
 *   mcpd:{SID}:x:NAME	notes (eventlog_note_set: plain SET with PX, not
 *			the script): leases l:K and r:K, the call's trace
 *			t:K, a loss x:K (lease.c), answers a:ID (outbound.c),
 *			delivery progress p:K (progress.c).
 *   mcpd:{TID}:task	a task's record (task.c), its hash tag the task id
 *			(apart from every session): "REV RECORD", REV the
 *			revision, written only by the script's task
 *			operation (compare-and-set on REV) with the
 *			record's lifetime as PX; the task's lease is the
 *			note mcpd:{TID}:x:lease.
 *   mcpd:{keyring}:keys	hash, the keyring (eventlog_keyring; seal.c's
 *			requestState keys): g = generation, p, c, n = the
 *			previous, current and next keys. Written only by
 *			the script's keyring operation; no lifetime (it
 *			is three short strings, and states in flight
 *			need it across restarts of every instance).
 *   mcpd:{keyring}:rotated	"1" with PX the rotation period, set when
 *			the ring changes: once it is gone, the next call
 *			rotates. Redis's clock times rotations, so the
 *			instances' clocks do not matter.
 *   mcpd:{layout}:version	the layout the store is in
 *			(REDIS_SCRIPT_LAYOUT), set by the layout operation
 *			when missing; an instance of another layout refuses
 *			the store (eventlog_redis.c).
 *   mcpd:{listen}:events	the channel of the pseudo session "listen"
 *			(announce.c), what instances tell each other.
 *   mcpd:{l:NAME:KEY}:b	hash, a limit's token bucket (limit.c) for one
 *			key (KEY: hex of a SHA-256 of what the limit counts
 *			apart, so a subject's bytes never reach a key or a
 *			hash tag): t = tokens in millionths, ts = when t was
 *			last refilled, d = the day (UTC, since the epoch)
 *			and q = calls counted that day. Written only by
 *			the script's take operation, with Redis's clock;
 *			it lives until full again (and the day is over).
 *   mcpd:{l:NAME:KEY}:c	sorted set, the limit's slots of calls running
 *			at once: member (an instance's token and a
 *			number) scored by when it lapses; written by the
 *			script's slot operation. A member not renewed
 *			lapses, so a dead instance's slots free
 *			themselves.
 *
 * In Redis Cluster every script call touches one slot: the keys it names
 * share one hash tag. Channels are sharded there (SPUBLISH: the script's
 * Cluster variant, redis_script_source). While a slot moves, a key the
 * call does not declare (a session's other streams) may be on the new
 * node already, and redis.call on it raises an error after the writes
 * made so far, which are not undone: such calls come first, with pcall
 * (undeclared), and a key that moved makes the operation answer TRYAGAIN
 * with nothing written.
 *
 * Lifetimes: the meta hash lives session_ttl past the session's last write;
 * open streams live longer (the caller passes 1.5 x session_ttl) and are
 * renewed at least every session_ttl / 2 while the session is written to,
 * so they outlive their session, and not by much. An ended stream lives
 * stream_ttl from its end; its k:K field stays, so it then reads as expired.
 *
 * Retries. An operation whose answer was lost (the connection dropped
 * after Redis ran it, or Redis restarted with it in its AOF) is sent
 * again, once Redis answers, in its place among the others
 * (eventlog_redis.c, the outage grace); each must then do what it did
 * once. store, end and notes are idempotent as they are; a create or an
 * append carries a token, unique to the operation, on its last entry, and
 * one that finds its own token where its last entry would go has landed:
 * it answers what it answered then (ok, the same ids) and changes nothing,
 * where another writer's entry there is a conflict as before. A task put
 * sent again (it says so) that finds its revision with its record has
 * landed too. A delete answers not-found the second time, which callers
 * take as done; a message may be published twice.
 *
 * The script answers {status} or {status, head, oldest, ended, [seq,
 * data]...}; the status is the event log's status name. Sequence numbers
 * travel as decimal strings. Lua numbers are doubles: they are only used to
 * compare a requested position with a head, where rounding a huge request
 * cannot change the outcome; ids are compared as strings.
 *
 * Appends are the hot path: the script spends a handful of commands on an
 * append of any number of entries and takes the time from the caller.
 * Every Redis with Streams (5.0 on) replicates a script's effects, so it
 * does without redis.replicate_commands(), which in Redis 7 costs more
 * than an append's commands.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cursor.h"
#include "eventlog.h"
#include "eventlog_status.h"
#include "log.h"
#include "redis_script.h"
#include "xmalloc.h"

/*
 * The script's one line that differs in Redis Cluster: there a PUBLISH
 * goes to every node of the cluster, a sharded one (Redis 7) only to the
 * nodes of the channel's slot, which is the session's (its hash tag).
 */
#define REDIS_SCRIPT_PUBSUB_LINE \
"local publish, subscribe, unsubscribe = 'PUBLISH', 'SUBSCRIBE', " \
    "'UNSUBSCRIBE'\n"
#define REDIS_SCRIPT_SHARDED_LINE \
"local publish, subscribe, unsubscribe = 'SPUBLISH', 'SSUBSCRIBE', " \
    "'SUNSUBSCRIBE'\n"

static const char redis_script_lua[] =
"-- mcpd event log (see src/eventlog/redis_script.c).\n"
"-- KEYS[1] the session's meta hash, KEYS[2] the stream (stream ops).\n"
"-- ARGV[1] operation, ARGV[2] session lifetime (ms), ARGV[3] open\n"
"-- stream lifetime (ms), ARGV[4] stream key prefix, ARGV[5] channel,\n"
"-- ARGV[6] the stream's field in the meta hash, ARGV[7] the caller's\n"
"-- wall clock (ms); then per operation.\n"
"local meta, stream = KEYS[1], KEYS[2]\n"
"-- Plain pub/sub; Redis Cluster's variant has the sharded commands here.\n"
REDIS_SCRIPT_PUBSUB_LINE

"local op, sttl, ottl = ARGV[1], ARGV[2], ARGV[3]\n"
"local prefix, channel, field, now = ARGV[4], ARGV[5], ARGV[6], ARGV[7]\n"
"\n"
"local function seq(id)\n"
"	return string.match(id, '%-(%d+)$')\n"
"end\n"
"\n"
"local function isstream(f)\n"
"	return string.sub(f, 1, 2) == 'k:'\n"
"end\n"
"\n"
"local function key(f)\n"
"	return prefix .. string.sub(f, 3)\n"
"end\n"
"\n"
"-- A call on a key the operation did not declare (the session's other\n"
"-- streams). While Redis Cluster moves the session's slot, such a key\n"
"-- may be on the new node already, and redis.call raises an error after\n"
"-- the writes made so far, which are not undone. So these calls come\n"
"-- before the operation writes anything, with pcall: nil (and nothing\n"
"-- written) if the key has moved, else what the command answers (other\n"
"-- errors raised as redis.call would).\n"
"local function undeclared(cmd, k, ...)\n"
"	local r = redis.pcall(cmd, k, ...)\n"
"	if type(r) == 'table' and r.err then\n"
"		if string.find(r.err, 'non local key', 1, true) or\n"
"		    string.find(r.err, 'same slot', 1, true) then\n"
"			return nil\n"
"		end\n"
"		return redis.call(cmd, k, ...)\n"
"	end\n"
"	return r\n"
"end\n"
"\n"
"-- What an operation answers when a key of its session has moved: the\n"
"-- client sends it again shortly, at the slot's owner then.\n"
"local function moving()\n"
"	return redis.error_reply('TRYAGAIN mcpd: the session\\'s keys are '\n"
"	    .. 'moving to another node')\n"
"end\n"
"\n"
"-- The session lives sttl past this write (touched, after the writes);\n"
"-- open streams get ottl, renewed first (renew, before any write) when\n"
"-- the last renewal (t, by whichever writer) is sttl / 2 old, or in\n"
"-- the future of this writer's clock. renew answers false if a stream\n"
"-- has moved (nothing is written then), else whether it renewed.\n"
"local function renew(t)\n"
"	local n, last = tonumber(now), tonumber(t or '0')\n"
"	if n >= last and n - last < tonumber(sttl) / 2 then\n"
"		return 'no'\n"
"	end\n"
"	local all = redis.call('HGETALL', meta)\n"
"	for i = 1, #all, 2 do\n"
"		if not isstream(all[i]) or all[i + 1] ~= 'o' then\n"
"			-- an ended stream, or another field\n"
"		elseif key(all[i]) == stream then\n"
"			redis.call('PEXPIRE', stream, ottl)\n"
"		elseif not undeclared('PEXPIRE', key(all[i]), ottl) then\n"
"			return false\n"
"		end\n"
"	end\n"
"	return 'yes'\n"
"end\n"
"\n"
"local function touched(renewed)\n"
"	redis.call('PEXPIRE', meta, sttl)\n"
"	if renewed == 'yes' then\n"
"		redis.call('HSET', meta, 't', now)\n"
"	end\n"
"end\n"
"\n"
"-- Past max fields, forgets a few streams whose keys are gone (a\n"
"-- forgotten stream reads as not found, as past the memory backend's\n"
"-- tombstone ring). The caller asks for it on one create in 64 (max\n"
"-- is nil on the others): a session whose streams are all alive would\n"
"-- otherwise pay a scan for nothing on every create.\n"
"local function prune(max)\n"
"	if not max or redis.call('HLEN', meta) <= max then\n"
"		return\n"
"	end\n"
"	local cursor = redis.call('HGET', meta, 'c') or '0'\n"
"	local res = redis.call('HSCAN', meta, cursor, 'COUNT', 64)\n"
"	local f, gone = res[2], {}\n"
"	for i = 1, #f, 2 do\n"
"		if isstream(f[i]) then\n"
"			local e = undeclared('EXISTS', key(f[i]))\n"
"			if e == nil then\n"
"				-- a stream moving: prune another time\n"
"				return\n"
"			elseif e == 0 then\n"
"				gone[#gone + 1] = f[i]\n"
"			end\n"
"		end\n"
"	end\n"
"	redis.call('HSET', meta, 'c', res[1])\n"
"	for i = 1, #gone do\n"
"		redis.call('HDEL', meta, gone[i])\n"
"	end\n"
"end\n"
"\n"
"local function oldest()\n"
"	return seq(redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1][1])\n"
"end\n"
"\n"
"-- The same after an append of ours: the stream holds head - oldest + 1\n"
"-- entries, all ids in between (only this script writes it, trimming\n"
"-- from the front), so its length tells, without reading an entry.\n"
"local function oldest_after(head)\n"
"	local o = tonumber(head) + 1 - redis.call('XLEN', stream)\n"
"	if o < 0 then\n"
"		return oldest()\n"
"	end\n"
"	return string.format('%d', o)\n"
"end\n"
"\n"
"-- An error status, or the stream's state, last id, head and the\n"
"-- session's t. The stream's field is there only with the session's m\n"
"-- (create needs m; only delete and expiry remove m, with the hash): m\n"
"-- itself is not read, its text would only be copied into Lua.\n"
"local function lookup()\n"
"	local f = redis.call('HMGET', meta, field, 't')\n"
"	if not f[1] then\n"
"		return 'not-found'\n"
"	end\n"
"	local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]\n"
"	if not last then\n"
"		return 'expired'\n"
"	end\n"
"	return nil, f[1], last[1], seq(last[1]), f[2]\n"
"end\n"
"\n"
"-- An ended stream is compacted: Redis gave its first node room for\n"
"-- stream-node-max-bytes (4 KB by default) and would keep all of it for\n"
"-- the stream's lifetime; COPY allocates the copy's nodes at their size\n"
"-- and RENAME frees the old at once, for the next call's stream to reuse\n"
"-- (a short call's stream then costs Redis a tenth of the memory and\n"
"-- less than half the time). Only where the ACL allows both commands\n"
"-- (Redis 7's acl_check_cmd: before it, nothing is asked and nothing\n"
"-- compacted). The copy's key is not declared: while Redis Cluster moves\n"
"-- the slot it may be refused after this call's writes, so pcall, and a\n"
"-- refusal leaves the stream as it is. The room wasted is one node's\n"
"-- whatever the length, while the copy costs the whole stream (about\n"
"-- 0.4 us an entry: 41 of the 400 us of Redis's CPU a stream n=100 call\n"
"-- took): up to 32 entries only, one node or two of ~130-byte messages.\n"
"local function compact()\n"
"	local copy = stream .. ':c'\n"
"	if not redis.acl_check_cmd or\n"
"	    redis.call('XLEN', stream) > 32 or\n"
"	    not redis.acl_check_cmd('COPY', stream, copy) or\n"
"	    not redis.acl_check_cmd('RENAME', copy, stream) then\n"
"		return\n"
"	end\n"
"	local ok, n = pcall(redis.call, 'COPY', stream, copy)\n"
"	if ok and n == 1 then\n"
"		redis.call('RENAME', copy, stream)\n"
"	end\n"
"end\n"
"\n"
"local function finish(ttl)\n"
"	redis.call('HSET', meta, field, 'e')\n"
"	compact()\n"
"	redis.call('PEXPIRE', stream, ttl)\n"
"end\n"
"\n"
"-- XADDs the pairs from ARGV[i] (id, data...), trimming to maxlen once,\n"
"-- with the last, which carries the operation's token: per XADD, the\n"
"-- trim costs more than the XADD. Returns the last id, or last if there\n"
"-- are none.\n"
"local function add(i, maxlen, last, token)\n"
"	local n, argv, call = #ARGV, ARGV, redis.call\n"
"	if n < i then\n"
"		return last\n"
"	end\n"
"	for j = i, n - 2, 2 do\n"
"		call('XADD', stream, argv[j], 'd', argv[j + 1])\n"
"	end\n"
"	redis.call('XADD', stream, 'MAXLEN', maxlen, ARGV[n - 1], 'd',\n"
"	    ARGV[n], 't', token)\n"
"	return ARGV[n - 1]\n"
"end\n"
"\n"
"-- The id of the last entry the operation writes: the last pair's from\n"
"-- ARGV[i] on, or first if it has none.\n"
"local function lastid(i, first)\n"
"	if #ARGV < i then\n"
"		return first\n"
"	end\n"
"	return ARGV[#ARGV - 1]\n"
"end\n"
"\n"
"-- Whether this very operation is in the stream already (sent again\n"
"-- after its answer was lost): its last entry, id, has its token.\n"
"local function landed(id, token)\n"
"	local e = redis.call('XRANGE', stream, id, id)[1]\n"
"	return e ~= nil and e[2][3] == 't' and e[2][4] == token\n"
"end\n"
"\n"
"if op == 'check' then\n"
"	-- Whether this connection's user may run every command mcpd sends\n"
"	-- (Redis 7's ACL; nothing to ask before): {'ok'}, or {'refused',\n"
"	-- the first command it may not run}. KEYS and channel are of the\n"
"	-- session 'check'; ARGV[8] '1' if commits WAIT for replicas.\n"
"	if not redis.acl_check_cmd then\n"
"		return {'ok'}\n"
"	end\n"
"	-- In a cluster it names no key (any node runs it): the names are\n"
"	-- only checked against the ACL's patterns.\n"
"	local meta, stream = meta or prefix, stream or prefix\n"
"	local cmds = {\n"
"		{'XADD', stream, '1-1', 'd', ''}, {'XRANGE', stream, '-', '+'},\n"
"		{'XREVRANGE', stream, '+', '-'}, {'XLEN', stream},\n"
"		{'HSET', meta, 'f', 'v'}, {'HGET', meta, 'f'},\n"
"		{'HMGET', meta, 'f'}, {'HGETALL', meta}, {'HDEL', meta, 'f'},\n"
"		{'HEXISTS', meta, 'f'}, {'HKEYS', meta}, {'HLEN', meta},\n"
"		{'HSCAN', meta, '0'}, {'EXISTS', meta}, {'PEXPIRE', meta, '1'},\n"
"		{'UNLINK', meta}, {'SET', meta, 'v', 'PX', '1'}, {'GET', meta},\n"
"		{publish, channel, 'm'}, {subscribe, channel},\n"
"		{unsubscribe, channel}, {'EVAL', 'return 1', '0'},\n"
"		{'INFO'}}\n"
"	if ARGV[8] == '1' then\n"
"		cmds[#cmds + 1] = {'WAIT', '1', '0'}\n"
"	end\n"
"	if publish == 'SPUBLISH' then\n"
"		cmds[#cmds + 1] = {'ASKING'}\n"
"		cmds[#cmds + 1] = {'CLUSTER', 'SHARDS'}\n"
"	end\n"
"	for i = 1, #cmds do\n"
"		if not redis.acl_check_cmd(unpack(cmds[i])) then\n"
"			return {'refused', cmds[i][1]}\n"
"		end\n"
"	end\n"
"	return {'ok'}\n"
"end\n"
"\n"
"if op == 'layout' then\n"
"	-- KEYS[1] the layout's mark, ARGV[2] the layout this mcpd writes:\n"
"	-- marks a store nobody marked, answers {'ok', the layout marked}.\n"
"	redis.call('SET', meta, ARGV[2], 'NX')\n"
"	return {'ok', redis.call('GET', meta)}\n"
"end\n"
"\n"
"if op == 'task' then\n"
"	-- KEYS[1] the task's key, holding 'REV RECORD'; ARGV[2] the\n"
"	-- revision to write (1: the key must not exist, else the key's REV\n"
"	-- must be one less), ARGV[3] its lifetime (ms), ARGV[4] the record,\n"
"	-- ARGV[5] 1 if the put is sent again (its answer was lost).\n"
"	local cur = redis.call('GET', meta)\n"
"	local rev = tonumber(ARGV[2])\n"
"	if cur then\n"
"		local have = tonumber(string.match(cur, '^(%d+) '))\n"
"		if have == rev and ARGV[5] == '1' and\n"
"		    cur == ARGV[2] .. ' ' .. ARGV[4] then\n"
"			return {'ok'}	-- this put, sent again: it landed\n"
"		end\n"
"		if have ~= rev - 1 then\n"
"			return {'conflict'}\n"
"		end\n"
"	elseif rev ~= 1 then\n"
"		return {'not-found'}\n"
"	end\n"
"	redis.call('SET', meta, ARGV[2] .. ' ' .. ARGV[4], 'PX', ARGV[3])\n"
"	return {'ok'}\n"
"end\n"
"\n"
"if op == 'keyring' then\n"
"	-- KEYS[1] the ring (hash g, p, c, n), KEYS[2] its rotation mark;\n"
"	-- ARGV[2] the period (ms), ARGV[3], ARGV[4] fresh keys.\n"
"	local ring = redis.call('HMGET', meta, 'g', 'p', 'c', 'n')\n"
"	local g, changed = tonumber(ring[1] or ''), true\n"
"	if not (g and g >= 1 and ring[2] and ring[3] and ring[4]) or\n"
"	    ring[3] == '' or ring[4] == '' then\n"
"		-- none, or not one this script wrote: a new ring\n"
"		ring = {'1', '', ARGV[3], ARGV[4]}\n"
"	elseif redis.call('EXISTS', stream) == 0 then\n"
"		ring = {string.format('%d', g + 1), ring[3], ring[4],\n"
"		    ARGV[3]}\n"
"	else\n"
"		changed = false\n"
"	end\n"
"	if changed then\n"
"		redis.call('HSET', meta, 'g', ring[1], 'p', ring[2], 'c',\n"
"		    ring[3], 'n', ring[4])\n"
"		redis.call('SET', stream, '1', 'PX', ARGV[2])\n"
"	end\n"
"	return {'ok', ring[1], ring[2], ring[3], ring[4]}\n"
"end\n"
"\n"
"-- Limits: Redis's clock, so the instances' clocks do not matter\n"
"-- (every Redis with Streams replicates a script's effects, so TIME\n"
"-- before a write is allowed). Numbers stored go through %d: Lua 5.1\n"
"-- would print a large one with an exponent, and round it.\n"
"local function millis()\n"
"	local t = redis.call('TIME')\n"
"	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
"end\n"
"\n"
"if op == 'take' then\n"
"	-- KEYS[1] the bucket; ARGV[2] rate (tokens a period), ARGV[3]\n"
"	-- period (ms), ARGV[4] burst, ARGV[5] quota a day (0: none),\n"
"	-- ARGV[6] want, ARGV[7] min, ARGV[8] back, ARGV[9] back's day.\n"
"	-- Tokens are counted in millionths (integers: no drift).\n"
"	local rate, period = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
"	local burst, quota = tonumber(ARGV[4]), tonumber(ARGV[5])\n"
"	local want, min = tonumber(ARGV[6]), tonumber(ARGV[7])\n"
"	local back, bday = tonumber(ARGV[8]), tonumber(ARGV[9])\n"
"	local U = 1000000\n"
"	local now = millis()\n"
"	local day = math.floor(now / 86400000)\n"
"	local f = redis.call('HMGET', meta, 't', 'ts', 'd', 'q')\n"
"	local t, ts = tonumber(f[1]), tonumber(f[2])\n"
"	local d, q = tonumber(f[3]), tonumber(f[4]) or 0\n"
"	local grant, wait, byquota = want, 0, 0\n"
"	if rate > 0 then\n"
"		local cap = burst * U\n"
"		if not t or not ts then\n"
"			t, ts = cap, now\n"
"		end\n"
"		if now > ts then\n"
"			t = t + math.floor((now - ts) * rate * U / period)\n"
"		end\n"
"		t = math.min(cap, t + back * U)\n"
"		grant = math.min(grant, math.floor(t / U))\n"
"	end\n"
"	if quota > 0 then\n"
"		if d ~= day then\n"
"			d, q = day, 0\n"
"		end\n"
"		if bday == day then\n"
"			q = math.max(0, q - back)\n"
"		end\n"
"		grant = math.min(grant, math.max(0, quota - q))\n"
"	end\n"
"	if grant < min then\n"
"		grant = 0\n"
"		if quota > 0 and quota - q < min then\n"
"			byquota, wait = 1, (day + 1) * 86400000 - now\n"
"		else\n"
"			wait = math.ceil((min * U - t) * period / (rate * U))\n"
"		end\n"
"	end\n"
"	local life = 0\n"
"	if rate > 0 then\n"
"		t = t - grant * U\n"
"		redis.call('HSET', meta, 't', string.format('%d', t), 'ts',\n"
"		    string.format('%d', now))\n"
"		life = math.ceil((burst * U - t) * period / (rate * U))\n"
"	end\n"
"	if quota > 0 then\n"
"		redis.call('HSET', meta, 'd', string.format('%d', d), 'q',\n"
"		    string.format('%d', q + grant))\n"
"		life = math.max(life, (day + 1) * 86400000 - now)\n"
"	end\n"
"	redis.call('PEXPIRE', meta, string.format('%d', life + 1000))\n"
"	return {'ok', grant, wait, day, byquota}\n"
"end\n"
"\n"
"if op == 'slot' then\n"
"	-- KEYS[1] the slots; ARGV[2] take, renew or free, ARGV[3] the\n"
"	-- members' lifetime (ms), ARGV[4] max (take), members from ARGV[5].\n"
"	local what, ttl = ARGV[2], tonumber(ARGV[3])\n"
"	if what == 'free' then\n"
"		for i = 5, #ARGV do\n"
"			redis.call('ZREM', meta, ARGV[i])\n"
"		end\n"
"		return {'ok', 1}\n"
"	end\n"
"	local now = millis()\n"
"	redis.call('ZREMRANGEBYSCORE', meta, '-inf', string.format('%d', now))\n"
"	local at = string.format('%d', now + ttl)\n"
"	if what == 'take' then\n"
"		if redis.call('ZSCORE', meta, ARGV[5]) == false and\n"
"		    redis.call('ZCARD', meta) >= tonumber(ARGV[4]) then\n"
"			return {'ok', 0}\n"
"		end\n"
"		redis.call('ZADD', meta, at, ARGV[5])\n"
"	else\n"
"		for i = 5, #ARGV do\n"
"			redis.call('ZADD', meta, at, ARGV[i])\n"
"		end\n"
"	end\n"
"	redis.call('PEXPIRE', meta, string.format('%d', ttl))\n"
"	return {'ok', 1}\n"
"end\n"
"\n"
"if op == 'store' then\n"
"	-- ARGV[8] the session's meta; ARGV[9] '1': only if the session is\n"
"	-- there (an update never brings back a session the log lost).\n"
"	if ARGV[9] == '1' and redis.call('HEXISTS', meta, 'm') == 0 then\n"
"		return {'not-found'}\n"
"	end\n"
"	local renewed = renew(redis.call('HGET', meta, 't'))\n"
"	if not renewed then\n"
"		return moving()\n"
"	end\n"
"	redis.call('HSET', meta, 'm', ARGV[8])\n"
"	touched(renewed)\n"
"	return {'ok'}\n"
"end\n"
"\n"
"if op == 'delete' then\n"
"	if redis.call('HEXISTS', meta, 'm') == 0 then\n"
"		return {'not-found'}\n"
"	end\n"
"	-- A stream that moved already is deleted when this is sent again\n"
"	-- (the meta goes last, so the fields still name it).\n"
"	local fields = redis.call('HKEYS', meta)\n"
"	for i = 1, #fields do\n"
"		if isstream(fields[i]) and\n"
"		    not undeclared('UNLINK', key(fields[i])) then\n"
"			return moving()\n"
"		end\n"
"	end\n"
"	redis.call('UNLINK', meta)\n"
"	-- Every process holding the session drops it at once.\n"
"	redis.call(publish, channel, '" EVENTLOG_MESSAGE_DELETED "')\n"
"	return {'ok'}\n"
"end\n"
"\n"
"if op == 'create' then\n"
"	-- The stream with its priming entry, and the entries that follow it\n"
"	-- if the caller had them already: one step, so they are committed\n"
"	-- only with the stream. ARGV[8] id K-0, ARGV[9] stream_maxlen,\n"
"	-- ARGV[10] fields before pruning ('' on the creates that do not\n"
"	-- prune), ARGV[11] 1 if the last entry is\n"
"	-- the stream's last, ARGV[12] stream_ttl (ms), ARGV[13] the\n"
"	-- operation's token, then pairs from ARGV[14]: id K-1, data; K-2,\n"
"	-- data... (at most stream_maxlen - 1, so none is trimmed here).\n"
"	local f = redis.call('HMGET', meta, 'm', field, 't')\n"
"	if not f[1] then\n"
"		return {'not-found'}\n"
"	end\n"
"	if f[2] or redis.call('EXISTS', stream) == 1 then\n"
"		local id = lastid(14, ARGV[8])\n"
"		if landed(id, ARGV[13]) then\n"
"			return {'ok', seq(id), oldest(),\n"
"			    ARGV[11] == '1' and 1 or 0}\n"
"		end\n"
"		return {'conflict'}\n"
"	end\n"
"	local renewed = renew(f[3])\n"
"	if not renewed then\n"
"		return moving()\n"
"	end\n"
"	prune(tonumber(ARGV[10]))\n"
"	local last\n"
"	if #ARGV < 14 then\n"
"		redis.call('XADD', stream, ARGV[8], 'd', '', 't', ARGV[13])\n"
"		last = ARGV[8]\n"
"	else\n"
"		redis.call('XADD', stream, ARGV[8], 'd', '')\n"
"		last = add(14, ARGV[9], ARGV[8], ARGV[13])\n"
"	end\n"
"	local ended = 0\n"
"	if ARGV[11] == '1' then\n"
"		finish(ARGV[12])\n"
"		ended = 1\n"
"	else\n"
"		redis.call('HSET', meta, field, 'o')\n"
"		redis.call('PEXPIRE', stream, ottl)\n"
"	end\n"
"	touched(renewed)\n"
"	redis.call(publish, channel, last)\n"
"	return {'ok', seq(last), '0', ended}\n"
"end\n"
"\n"
"if op == 'append' then\n"
"	-- Entries N, N+1... in one step. ARGV[8] the id the stream must end\n"
"	-- with now (K-(N-1)), ARGV[9] 1 if the last entry is the stream's\n"
"	-- last, ARGV[10] stream_maxlen, ARGV[11] stream_ttl (ms), ARGV[12]\n"
"	-- the operation's token, then pairs from ARGV[13]: id K-N, data;\n"
"	-- K-(N+1), data... (at most stream_maxlen, so none is trimmed by its\n"
"	-- own append).\n"
"	local err, state, last, head, t = lookup()\n"
"	if err then\n"
"		return {err}\n"
"	end\n"
"	if state == 'e' or last ~= ARGV[8] then\n"
"		local id = lastid(13, ARGV[8])\n"
"		if landed(id, ARGV[12]) then\n"
"			return {'ok', seq(id), oldest(),\n"
"			    ARGV[9] == '1' and 1 or 0}\n"
"		end\n"
"		if state == 'e' then\n"
"			return {'ended', head, oldest(), 1}\n"
"		end\n"
"		return {'conflict', head, oldest(), 0}\n"
"	end\n"
"	local renewed = renew(t)\n"
"	if not renewed then\n"
"		return moving()\n"
"	end\n"
"	last = add(13, ARGV[10], last, ARGV[12])\n"
"	local ended = 0\n"
"	if ARGV[9] == '1' then\n"
"		finish(ARGV[11])\n"
"		ended = 1\n"
"	end\n"
"	touched(renewed)\n"
"	-- One message for the lot: followers read up to it.\n"
"	redis.call(publish, channel, last)\n"
"	return {'ok', seq(last), oldest_after(seq(last)), ended}\n"
"end\n"
"\n"
"if op == 'end' then\n"
"	-- ARGV[8] stream_ttl (ms)\n"
"	local err, state, last, head, t = lookup()\n"
"	if err then\n"
"		return {err}\n"
"	end\n"
"	if state ~= 'e' then\n"
"		local renewed = renew(t)\n"
"		if not renewed then\n"
"			return moving()\n"
"		end\n"
"		finish(ARGV[8])\n"
"		touched(renewed)\n"
"		redis.call(publish, channel, last)\n"
"	end\n"
"	return {'ok', head, oldest(), 1}\n"
"end\n"
"\n"
"if op == 'read' then\n"
"	-- ARGV[8] from, ARGV[9] id K-from, ARGV[10] max entries, ARGV[11]\n"
"	-- '1' with commit replicas:N: the read writes (a field nobody\n"
"	-- reads), so that the WAIT that follows it on this connection\n"
"	-- covers every entry it returns, whoever wrote them.\n"
"	local err, state, last, head = lookup()\n"
"	if err then\n"
"		return {err}\n"
"	end\n"
"	if ARGV[11] == '1' then\n"
"		redis.call('HSET', meta, 'r', '1')\n"
"	end\n"
"	local r = {'ok', head, oldest(), state == 'e' and 1 or 0}\n"
"	local from = tonumber(ARGV[8])\n"
"	if from > tonumber(head) + 1 then\n"
"		r[1] = 'ahead'\n"
"	elseif from < tonumber(r[3]) then\n"
"		r[1] = 'trimmed'\n"
"	elseif tonumber(ARGV[10]) > 0 then\n"
"		local e = redis.call('XRANGE', stream, ARGV[9], '+', 'COUNT',\n"
"		    ARGV[10])\n"
"		for i = 1, #e do\n"
"			r[#r + 1] = seq(e[i][1])\n"
"			r[#r + 1] = e[i][2][2]\n"
"		end\n"
"	end\n"
"	return r\n"
"end\n"
"\n"
"return redis.error_reply('ERR mcpd: unknown operation ' .. tostring(op))\n";

const char *
redis_script_source(int sharded)
{
	static char	*variant;
	const char	*line;
	size_t		 at, n;

	if (!sharded)
		return (redis_script_lua);
	if (variant == NULL) {
		line = strstr(redis_script_lua, REDIS_SCRIPT_PUBSUB_LINE);
		if (line == NULL)
			fatalx("%s: the script has no pub/sub line", __func__);
		at = (size_t)(line - redis_script_lua);
		n = strlen(REDIS_SCRIPT_PUBSUB_LINE);
		xasprintf(&variant, "%.*s%s%s", (int)at, redis_script_lua,
		    REDIS_SCRIPT_SHARDED_LINE, line + n);
	}
	return (variant);
}

char *
redis_script_meta_key(const char *sid)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_META_KEY, sid);
	return (s);
}

char *
redis_script_task_key(const char *tid)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_TASK_KEY, tid);
	return (s);
}

char *
redis_script_note_key(const char *sid, const char *name)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_NOTE_KEY, sid, name);
	return (s);
}

char *
redis_script_stream_key(const char *sid, uint64_t k)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_STREAM_KEY, sid, (unsigned long long)k);
	return (s);
}

char *
redis_script_stream_prefix(const char *sid)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_STREAM_PREFIX, sid);
	return (s);
}

char *
redis_script_limit_key(const char *name, int slots)
{
	char	*s;

	xasprintf(&s, slots ? REDIS_SCRIPT_SLOTS_KEY : REDIS_SCRIPT_BUCKET_KEY,
	    name);
	return (s);
}

char *
redis_script_limit_tag(const char *name)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_LIMIT_TAG, name);
	return (s);
}

char *
redis_script_channel(const char *sid)
{
	char	*s;

	xasprintf(&s, REDIS_SCRIPT_CHANNEL, sid);
	return (s);
}

static int
redis_script_status(const struct redisReply *reply,
    enum eventlog_status *status)
{
	int	i;

	if (reply->type != REDIS_REPLY_STRING &&
	    reply->type != REDIS_REPLY_STATUS)
		return (-1);
	for (i = 0; i < EVENTLOG_STATUS_MAX; i++) {
		if (strlen(eventlog_status_name(i)) == reply->len &&
		    memcmp(eventlog_status_name(i), reply->str,
		    reply->len) == 0) {
			*status = i;
			return (0);
		}
	}
	return (-1);
}

static int
redis_script_number(const struct redisReply *reply, uint64_t *v)
{
	if (reply->type != REDIS_REPLY_STRING)
		return (-1);
	return (cursor_parse_seq(reply->str, reply->len, v));
}

/* The statuses the script may answer, and whether they carry the info. */
static int
redis_script_status_ok(enum eventlog_status status, int has_info)
{
	switch (status) {
	case EVENTLOG_OK:
	case EVENTLOG_CONFLICT:
		return (1);
	case EVENTLOG_NOT_FOUND:
	case EVENTLOG_EXPIRED:
		return (!has_info);
	case EVENTLOG_TRIMMED:
	case EVENTLOG_AHEAD:
	case EVENTLOG_ENDED:
		return (has_info);
	default:
		return (0);
	}
}

int
redis_script_result(const struct redisReply *reply,
    struct redis_script_result *res, char **cause)
{
	const struct redisReply	*e;
	size_t			 i, n;

	memset(res, 0, sizeof *res);
	if (reply->type == REDIS_REPLY_ERROR) {
		xasprintf(cause, "%.*s", (int)reply->len, reply->str);
		return (-1);
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0 ||
	    (reply->elements != 1 && reply->elements < 4) ||
	    (reply->elements > 4 && (reply->elements - 4) % 2 != 0))
		goto bad;
	if (redis_script_status(reply->element[0], &res->status) != 0)
		goto bad;
	if (reply->elements >= 4) {
		res->has_info = 1;
		if (redis_script_number(reply->element[1],
		    &res->info.head) != 0 ||
		    redis_script_number(reply->element[2],
		    &res->info.oldest) != 0)
			goto bad;
		e = reply->element[3];
		if (e->type != REDIS_REPLY_INTEGER ||
		    (e->integer != 0 && e->integer != 1))
			goto bad;
		res->info.ended = (int)e->integer;
	}
	if (!redis_script_status_ok(res->status, res->has_info))
		goto bad;
	if (reply->elements <= 4)
		return (0);
	if (res->status != EVENTLOG_OK)
		goto bad;

	n = (reply->elements - 4) / 2;
	res->entries = xcalloc(n, sizeof *res->entries);
	for (i = 0; i < n; i++) {
		if (redis_script_number(reply->element[4 + 2 * i],
		    &res->entries[i].seq) != 0)
			goto bad;
		e = reply->element[5 + 2 * i];
		if (e->type != REDIS_REPLY_STRING)
			goto bad;
		res->entries[i].data = e->str;
		res->entries[i].len = e->len;
	}
	res->nentries = n;
	return (0);

bad:
	redis_script_result_clear(res);
	xasprintf(cause, "unexpected answer from the event-log script");
	return (-1);
}

static int
redis_script_key(const struct redisReply *reply, int empty, const char **key)
{
	if (reply->type != REDIS_REPLY_STRING ||
	    reply->len > EVENTLOG_KEY_MAX || (reply->len == 0 && !empty) ||
	    strlen(reply->str) != reply->len)
		return (-1);
	*key = reply->str;
	return (0);
}

int
redis_script_keyring(const struct redisReply *reply,
    struct eventlog_keyring *ring)
{
	enum eventlog_status	status;

	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 5 ||
	    redis_script_status(reply->element[0], &status) != 0 ||
	    status != EVENTLOG_OK ||
	    redis_script_number(reply->element[1], &ring->generation) != 0 ||
	    ring->generation == 0 ||
	    redis_script_key(reply->element[2], 1, &ring->previous) != 0 ||
	    redis_script_key(reply->element[3], 0, &ring->current) != 0 ||
	    redis_script_key(reply->element[4], 0, &ring->next) != 0)
		return (-1);
	return (0);
}

int
redis_script_layout(const struct redisReply *reply, int *layout)
{
	enum eventlog_status	status;
	uint64_t		v;

	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    redis_script_status(reply->element[0], &status) != 0 ||
	    status != EVENTLOG_OK ||
	    redis_script_number(reply->element[1], &v) != 0 || v == 0 ||
	    v > INT_MAX)
		return (-1);
	*layout = (int)v;
	return (0);
}

static int
redis_script_integer(const struct redisReply *reply, uint64_t *v)
{
	if (reply->type != REDIS_REPLY_INTEGER || reply->integer < 0)
		return (-1);
	*v = (uint64_t)reply->integer;
	return (0);
}

int
redis_script_taken(const struct redisReply *reply,
    struct eventlog_taken *taken)
{
	enum eventlog_status	status;
	uint64_t		quota;

	memset(taken, 0, sizeof *taken);
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 5 ||
	    redis_script_status(reply->element[0], &status) != 0 ||
	    status != EVENTLOG_OK ||
	    redis_script_integer(reply->element[1], &taken->granted) != 0 ||
	    redis_script_integer(reply->element[2], &taken->wait_ms) != 0 ||
	    redis_script_integer(reply->element[3], &taken->day) != 0 ||
	    redis_script_integer(reply->element[4], &quota) != 0 || quota > 1)
		return (-1);
	taken->quota = (int)quota;
	return (0);
}

int
redis_script_slot(const struct redisReply *reply, int *granted)
{
	enum eventlog_status	status;
	uint64_t		v;

	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    redis_script_status(reply->element[0], &status) != 0 ||
	    status != EVENTLOG_OK ||
	    redis_script_integer(reply->element[1], &v) != 0 || v > 1)
		return (-1);
	*granted = (int)v;
	return (0);
}

void
redis_script_result_clear(struct redis_script_result *res)
{
	free(res->entries);
	memset(res, 0, sizeof *res);
}

int
redis_script_noscript(const struct redisReply *reply)
{
	return (reply->type == REDIS_REPLY_ERROR && reply->len >= 8 &&
	    strncmp(reply->str, "NOSCRIPT", 8) == 0);
}

/*
 * INFO is text: "name:value" lines in "# Section" blocks. run_id changes
 * with every start of the server; the keyspace line "dbN:keys=K,..." is
 * there only for a database that has keys; role is master or slave (the
 * replication section), maxmemory_policy is in the memory section. INFO
 * rather than CONFIG GET: an ACL that allows CONFIG GET shows every
 * password in the server's configuration.
 */
int
redis_script_info(const struct redisReply *reply, int db,
    struct redis_info *info)
{
	const char	*p, *end, *eol, *v;
	char		 prefix[32];
	size_t		 plen, n;

	memset(info, 0, sizeof *info);
	info->cluster = -1;
	if (reply->type != REDIS_REPLY_STRING)
		return (-1);
	plen = (size_t)snprintf(prefix, sizeof prefix, "db%d:", db);
	end = reply->str + reply->len;
	for (p = reply->str; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		n = (size_t)(eol - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n > 7 && strncmp(p, "run_id:", 7) == 0 &&
		    n - 7 < sizeof info->run_id) {
			memcpy(info->run_id, p + 7, n - 7);
			info->run_id[n - 7] = '\0';
		} else if (n > 5 && strncmp(p, "role:", 5) == 0 &&
		    n - 5 < sizeof info->role) {
			memcpy(info->role, p + 5, n - 5);
			info->role[n - 5] = '\0';
		} else if (n == 17 && strncmp(p, "cluster_enabled:", 16) == 0 &&
		    (p[16] == '0' || p[16] == '1')) {
			info->cluster = p[16] - '0';
		} else if (n > 17 && strncmp(p, "maxmemory_policy:", 17) == 0 &&
		    n - 17 < sizeof info->policy) {
			memcpy(info->policy, p + 17, n - 17);
			info->policy[n - 17] = '\0';
		} else if (n > plen && strncmp(p, prefix, plen) == 0 &&
		    (v = memmem(p + plen, n - plen, "keys=", 5)) != NULL)
			info->keys = strtoll(v + 5, NULL, 10);
	}
	return (info->run_id[0] != '\0' ? 0 : -1);
}

/*
 * The error replies that say something of the connection or the server
 * rather than of one operation: it was not run, and nothing that follows
 * on this connection will be until the cause is gone.
 */
static const struct {
	const char		*prefix;
	enum redis_script_refusal kind;
	const char		*what;
} redis_script_refusals[] = {
	{ "NOAUTH", REDIS_REFUSED_AUTH, "Redis wants a password: set one "
	    "in the URL or redis_password_file" },
	{ "WRONGPASS", REDIS_REFUSED_AUTH, "check redis_user and "
	    "redis_password_file" },
	{ "NOPERM", REDIS_REFUSED_ACL, "the rules mcpd needs are in "
	    "docs/deployment.md" },
	{ "READONLY", REDIS_REFUSED_ROLE, "this server is a replica now (a "
	    "failover?)" },
	{ "MASTERDOWN", REDIS_REFUSED_ROLE, "this replica lost its primary" },
	{ "ERR WAIT cannot be used with replica", REDIS_REFUSED_ROLE,
	    "this server is a replica now (a failover?)" },
	{ "UNBLOCKED", REDIS_REFUSED_ROLE, "the server's role changed under "
	    "a waiting command (a failover?)" },
	{ "LOADING", REDIS_REFUSED_BUSY, "Redis is loading its data" },
	{ "BUSY", REDIS_REFUSED_BUSY, "Redis runs a script that does not "
	    "end" },
	{ "TRYAGAIN", REDIS_REFUSED_BUSY, "Redis asks to try again later" },
	{ "CLUSTERDOWN", REDIS_REFUSED_BUSY, "the cluster is down" },
	{ "NOREPLICAS", REDIS_REFUSED_BUSY, "not enough replicas "
	    "(min-replicas-to-write)" },
	{ "OOM", REDIS_REFUSED_BUSY, "Redis is out of memory (maxmemory)" },
	{ "MISCONF", REDIS_REFUSED_BUSY, "Redis cannot persist and refuses "
	    "writes (stop-writes-on-bgsave-error)" },
};

/* Inside the script: the ACL refused one of its calls. */
#define REDIS_SCRIPT_ACL_RUN	"The user executing the script can't run"
#define REDIS_SCRIPT_ACL_PUB	"The user executing the script can't publish"
#define REDIS_SCRIPT_LINE	"@user_script:"

const char *
redis_script_command_at(int line)
{
	static char	 name[32];
	const char	*p = redis_script_lua, *eol, *q;
	size_t		 n;
	int		 i;

	for (i = 1; i < line && p != NULL; i++) {
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	if (p == NULL || line < 1)
		return (NULL);
	if ((eol = strchr(p, '\n')) == NULL)
		eol = p + strlen(p);
	if ((q = memmem(p, (size_t)(eol - p), "call('", 6)) == NULL)
		return (NULL);
	q += 6;
	n = strcspn(q, "'");
	if (n == 0 || n >= sizeof name || q + n > eol)
		return (NULL);
	memcpy(name, q, n);
	name[n] = '\0';
	return (name);
}

enum redis_script_refusal
redis_script_refusal(const struct redisReply *reply, char *why, size_t len)
{
	const char	*line, *cmd;
	size_t		 i, n;
	int		 at;

	if (reply->type != REDIS_REPLY_ERROR)
		return (REDIS_REFUSED_NONE);
	for (i = 0; i < sizeof redis_script_refusals /
	    sizeof redis_script_refusals[0]; i++) {
		n = strlen(redis_script_refusals[i].prefix);
		if (reply->len >= n && strncmp(reply->str,
		    redis_script_refusals[i].prefix, n) == 0 &&
		    (reply->len == n || reply->str[n] == ' ')) {
			snprintf(why, len, "%.*s (%s)", (int)(reply->len >
			    200 ? 200 : reply->len), reply->str,
			    redis_script_refusals[i].what);
			return (redis_script_refusals[i].kind);
		}
	}
	if (strstr(reply->str, REDIS_SCRIPT_ACL_RUN) == NULL &&
	    strstr(reply->str, REDIS_SCRIPT_ACL_PUB) == NULL)
		return (REDIS_REFUSED_NONE);
	at = 0;
	if ((line = strstr(reply->str, REDIS_SCRIPT_LINE)) != NULL)
		at = atoi(line + strlen(REDIS_SCRIPT_LINE));
	if ((cmd = redis_script_command_at(at)) == NULL)
		cmd = strstr(reply->str, REDIS_SCRIPT_ACL_PUB) != NULL ?
		    "PUBLISH" : "a command";
	snprintf(why, len, "the ACL forbids %s inside the event-log script "
	    "(its line %d; the rules mcpd needs are in docs/deployment.md)",
	    cmd, at);
	return (REDIS_REFUSED_ACL);
}

static int
redis_script_is(const struct redisReply *reply, const char *word)
{
	return (reply->type == REDIS_REPLY_STRING &&
	    reply->len == strlen(word) && strcasecmp(reply->str, word) == 0);
}

int
redis_script_pubsub(const struct redisReply *reply, struct redis_pubsub *ps)
{
	const struct redisReply	*kind, *channel, *payload;
	struct cursor		 c;

	memset(ps, 0, sizeof *ps);
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3)
		return (-1);
	kind = reply->element[0];
	channel = reply->element[1];
	payload = reply->element[2];
	if (channel->type != REDIS_REPLY_STRING)
		return (-1);
	ps->channel = channel->str;
	ps->channellen = channel->len;
	/* Plain, or sharded (Redis Cluster): the same to us. */
	if (redis_script_is(kind, "subscribe") ||
	    redis_script_is(kind, "ssubscribe"))
		ps->kind = REDIS_PUBSUB_SUBSCRIBE;
	else if (redis_script_is(kind, "unsubscribe") ||
	    redis_script_is(kind, "sunsubscribe"))
		ps->kind = REDIS_PUBSUB_UNSUBSCRIBE;
	else if (redis_script_is(kind, "message") ||
	    redis_script_is(kind, "smessage")) {
		ps->kind = REDIS_PUBSUB_MESSAGE;
		if (payload->type != REDIS_REPLY_STRING)
			return (-1);
		if (payload->len > 2 && memcmp(payload->str,
		    REDIS_SCRIPT_MESSAGE_HEAD, 2) == 0) {
			ps->data = payload->str + 2;	/* a process's */
			ps->len = payload->len - 2;
		} else if (payload->len > 1 && payload->str[0] == '!') {
			ps->data = payload->str;	/* the script's */
			ps->len = payload->len;
		} else if (cursor_parse_len(payload->str, payload->len,
		    &c) != 0 || c.stream == 0)
			return (-1);
		else {
			ps->k = c.stream;
			ps->seq = c.seq;
		}
	} else
		ps->kind = REDIS_PUBSUB_OTHER;
	return (0);
}
