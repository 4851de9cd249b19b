/*
 * Unit tests for stream.c, driven through session.c against the memory
 * event log, in process:
 *
 * - the block policy as a property: random producers (each pipelining a
 *   random number of appends, sending random batches per loop turn) share
 *   one stream under random stream_maxlen and a stream_window at most half
 *   of it (as conf.c allows), while a simulated view reads the log from
 *   its position and delivers at a random pace. Retention never trims an
 *   entry the reader has not received (its reads never meet "trimmed"),
 *   nor one of the last window entries it received (a cut may lose what
 *   was in flight: invariant 5), the log never holds more undelivered
 *   entries than the window, every producer gets all its messages
 *   committed, in its order, and nobody waits forever;
 * - a stream released while appends wait (shutdown): they go to the log
 *   as far as retention keeps what the client has not received and a
 *   window in flight besides;
 * - a log that loses the session while a producer appends: every append
 *   is answered (refused), and the session is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "unit.h"
#include "world.h"

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "stream.h"

#define V_NEW		"2025-11-25"
#define MAX_TURNS	200000
#define MAX_PRODUCERS	8

/* The log and the session layer start when the test has set conf. */
static void
setup(void)
{
	world_setup(NULL);
	conf->backpressure_request = CONF_BACKPRESSURE_BLOCK;
	conf->backpressure_standalone = CONF_BACKPRESSURE_BLOCK;
}

static void
created_cb(struct stream *st, int ok, void *arg)
{
	*(int *)arg = ok ? 1 : -1;
}

/* A small reproducible generator (xorshift64*). */
static uint64_t	rng;

static uint64_t
rnd(uint64_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return ((rng * 2685821657736338717ULL) % n);
}

/* ---------------------------------------------------------------------
 * The property.
 */

struct producer {
	int		 id;
	int		 total;		/* messages to send */
	int		 sent;
	int		 acked;		/* commit callbacks with ok */
	int		 refused;
	int		 inflight;
	int		 depth;		/* at most this many in flight */
	int		 batch;		/* at most this many per turn */
};

struct reader {
	struct session	*session;
	struct stream_watcher *watcher;	/* reports deliveries, like a view */
	uint64_t	 k;
	uint64_t	 next;		/* next entry owed */
	int		 reading;
	int		 pace;		/* reads on pace of 100 turns */
	int		 done;		/* read the final entry */
	int		 last[MAX_PRODUCERS];	/* last i seen per producer */
	const char	*failure;
	char		 why[256];
};

static void
producer_cb(int ok, void *arg)
{
	struct producer	*p = arg;

	p->inflight--;
	if (ok)
		p->acked++;
	else
		p->refused++;
}

static void
produce(struct stream *st, struct producer *p)
{
	char	msg[64];
	int	n = 1 + (int)rnd((uint64_t)p->batch);

	while (n-- > 0 && p->sent < p->total && p->inflight < p->depth) {
		snprintf(msg, sizeof msg, "p%d:%d", p->id, ++p->sent);
		p->inflight++;
		stream_append(st, msg, strlen(msg), 0, producer_cb, p);
	}
}

static void
reader_fail(struct reader *r, const char *fmt, unsigned long long a,
    unsigned long long b)
{
	if (r->failure != NULL)
		return;
	snprintf(r->why, sizeof r->why, fmt, a, b);
	r->failure = r->why;
}

static void
read_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct reader	*r = arg;
	size_t		 i, deliver;
	int		 id, at;

	r->reading = 0;
	if (status == EVENTLOG_TRIMMED) {
		reader_fail(r, "entry %llu was trimmed before the reader got "
		    "it (oldest retained %llu)", (unsigned long long)r->next,
		    info != NULL ? (unsigned long long)info->oldest : 0);
		return;
	}
	if (status != EVENTLOG_OK) {
		reader_fail(r, "read from %llu: status %llu",
		    (unsigned long long)r->next, (unsigned long long)status);
		return;
	}
	if (info->head - (r->next - 1) > (uint64_t)conf->stream_window)
		reader_fail(r, "the log holds %llu entries the reader has not "
		    "received; the window is %llu", (unsigned long long)
		    (info->head - (r->next - 1)),
		    (unsigned long long)conf->stream_window);
	/* A cut loses at most a window in flight: that is retained too. */
	if (r->next > (uint64_t)conf->stream_window &&
	    info->oldest > r->next - (uint64_t)conf->stream_window)
		reader_fail(r, "entry %llu, a window before what the reader "
		    "received, is trimmed (oldest retained %llu)",
		    (unsigned long long)(r->next - (uint64_t)conf->stream_window),
		    (unsigned long long)info->oldest);
	if (n == 0) {
		if (info->ended && r->next > info->head)
			r->done = 1;
		return;
	}
	deliver = 1 + (size_t)rnd(n);
	for (i = 0; i < deliver; i++) {
		if (entries[i].seq != r->next + i) {
			reader_fail(r, "expected entry %llu, the log has %llu",
			    (unsigned long long)(r->next + i),
			    (unsigned long long)entries[i].seq);
			return;
		}
		if (strcmp(entries[i].data, "end") == 0)
			continue;
		if (sscanf(entries[i].data, "p%d:%d", &id, &at) != 2 ||
		    id < 0 || id >= MAX_PRODUCERS || at != r->last[id] + 1) {
			reader_fail(r, "entry %llu is out of its producer's "
			    "order (%llu)", (unsigned long long)entries[i].seq,
			    (unsigned long long)entries[i].len);
			return;
		}
		r->last[id] = at;
	}
	r->next += deliver;
	if (r->watcher != NULL)
		stream_watcher_delivered(r->watcher, r->next - 1);
}

/* The reader polls the log itself: of its hooks only the ends matter. */
static void
reader_ignore(void *arg, uint64_t seq)
{
}

static void
reader_committed(void *arg, const struct eventlog_entry *e, int ended)
{
}

static void
reader_gone(void *arg, const char *reason)
{
	struct reader	*r = arg;

	stream_unwatch(r->watcher);
	r->watcher = NULL;
}

static int
reader_close_after(void *arg, uint64_t n)
{
	return (-1);
}

static uint64_t
reader_received(void *arg)
{
	struct reader	*r = arg;

	return (r->next - 1);
}

static const struct stream_hooks reader_hooks = {
	reader_committed, reader_ignore, reader_ignore, reader_gone,
	reader_gone, reader_close_after, reader_received
};

static void
reader_step(struct reader *r)
{
	if (r->reading || r->done || (int)rnd(100) >= r->pace)
		return;
	r->reading = 1;
	eventlog_read(el, session_id(r->session), r->k, r->next,
	    1 + (size_t)rnd(64), read_cb, r);
}

/* One random scenario: returns NULL or what went wrong. */
static const char *
scenario(uint64_t seed, struct reader *r)
{
	struct producer	 ps[MAX_PRODUCERS];
	struct session	*s;
	struct stream	*st;
	int		 np, i, t, finals = 0, all, standalone;

	rng = seed * 0x9e3779b97f4a7c15ULL + 1;
	conf->stream_maxlen = 2 + (long long)rnd(40);
	conf->stream_window = 1 + (long long)rnd((uint64_t)conf->stream_maxlen /
	    2);
	if (rnd(4) == 0)
		conf->stream_window = conf->stream_maxlen / 2;
	standalone = rnd(4) == 0;
	world_start();
	s = world_session(V_NEW);
	st = standalone ? session_standalone(s) : world_request_stream(s);
	unit_turns(base, 5);		/* the standalone stream exists too */

	memset(r, 0, sizeof *r);
	r->session = s;
	r->k = stream_id(st);
	r->next = 1;
	r->pace = 1 + (int)rnd(100);
	r->watcher = stream_watch(s, r->k, 1, &reader_hooks, r);
	np = 1 + (int)rnd(MAX_PRODUCERS);
	memset(ps, 0, sizeof ps);
	for (i = 0; i < np; i++) {
		ps[i].id = i;
		ps[i].total = (int)rnd(60);
		ps[i].depth = 1 + (int)rnd(70);
		ps[i].batch = 1 + (int)rnd((uint64_t)ps[i].depth);
	}
	for (t = 0; t < MAX_TURNS && r->failure == NULL; t++) {
		all = 1;
		for (i = 0; i < np; i++) {
			if (rnd(3) == 0)
				produce(st, &ps[i]);
			if (ps[i].acked + ps[i].refused < ps[i].total)
				all = 0;
		}
		/* Like a request stream's last response: then it closes. */
		if (all && !standalone && finals == 0) {
			finals = 1;
			stream_append(st, "end", 3, 1, NULL, NULL);
			stream_close(st);
		}
		reader_step(r);
		unit_turns(base, 1);
		if (all && (standalone ? r->next > stream_head(st) : r->done))
			break;
	}
	if (r->failure != NULL)
		return (r->failure);
	for (i = 0; i < np; i++) {
		if (ps[i].refused > 0)
			return ("an append was refused");
		if (ps[i].acked != ps[i].total) {
			snprintf(r->why, sizeof r->why, "producer %d got %d of "
			    "%d messages committed after %d turns: starved", i,
			    ps[i].acked, ps[i].total, t);
			return (r->why);
		}
		if (r->last[i] != ps[i].total) {
			snprintf(r->why, sizeof r->why, "the reader got %d of "
			    "producer %d's %d messages", r->last[i], i,
			    ps[i].total);
			return (r->why);
		}
	}
	session_shutdown();
	unit_turns(base, 20);
	ck_assert_uint_eq(session_allocated(), 0);
	eventlog_free(el);
	el = NULL;
	return (NULL);
}

START_TEST(test_block_never_trims_undelivered)
{
	struct reader	 r;
	const char	*failure;
	uint64_t	 seed;

	for (seed = 1; seed <= 1000; seed++) {
		failure = scenario(seed, &r);
		ck_assert_msg(failure == NULL, "seed %llu (stream_maxlen %lld, "
		    "stream_window %lld): %s", (unsigned long long)seed,
		    conf->stream_maxlen, conf->stream_window, failure);
	}
}
END_TEST

/* ---------------------------------------------------------------------
 * Release and loss.
 */

struct res {
	int			 calls;
	enum eventlog_status	 status;
	uint64_t		 oldest, head;
	int			 ended;
};

static void
head_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct res	*r = arg;

	r->calls++;
	r->status = status;
	if (info != NULL) {
		r->oldest = info->oldest;
		r->head = info->head;
		r->ended = info->ended;
	}
}

static struct res
log_head(const char *sid, uint64_t k)
{
	struct res	r;
	int		n;

	memset(&r, 0, sizeof r);
	eventlog_read(el, sid, k, 0, 0, head_cb, &r);
	for (n = 0; r.calls == 0 && n < 100; n++)
		unit_turns(base, 1);
	ck_assert_int_eq(r.calls, 1);
	return (r);
}

struct counts {
	int	ok;
	int	refused;
};

static void
count_cb(int ok, void *arg)
{
	struct counts	*c = arg;

	if (ok)
		c->ok++;
	else
		c->refused++;
}

/*
 * Shutdown: a call's last response waits for room (window 3, the client
 * received entry 1 of 4); releasing the stream sends it past the window,
 * as retention (10) still keeps everything the client has not received.
 */
START_TEST(test_release_sends_what_retention_keeps)
{
	struct session	*s;
	struct stream	*st;
	struct counts	 c = { 0, 0 };
	struct res	 r;
	char		 sid[SESSION_ID_LEN + 1];
	uint64_t	 k;
	int		 i;

	conf->stream_maxlen = 10;
	conf->stream_window = 3;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	strlcpy(sid, session_id(s), sizeof sid);
	stream_delivered(st, 1);
	for (i = 0; i < 4; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	stream_append(st, "last", 4, 1, count_cb, &c);
	unit_turns(base, 10);
	/* 2..4 fill the window: 4's producer is not told yet. */
	ck_assert_int_eq(c.ok, 3);
	stream_close(st);		/* the owner is done: it is told */
	unit_turns(base, 10);
	ck_assert_int_eq(c.ok, 4);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 4);
	ck_assert_int_eq(r.ended, 0);

	session_shutdown();
	unit_turns(base, 10);
	ck_assert_int_eq(c.ok, 5);
	ck_assert_int_eq(c.refused, 0);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 5);
	ck_assert_int_eq(r.ended, 1);
	ck_assert_uint_le(r.oldest, 2);		/* 2.. not trimmed */
}
END_TEST

/*
 * The same with a window half of retention, the most conf.c allows: the
 * log already holds a window past what the client received, and what
 * would leave less than a window of room in flight stays out of the log
 * (and is refused).
 */
START_TEST(test_release_never_trims_undelivered)
{
	struct session	*s;
	struct stream	*st;
	struct counts	 c = { 0, 0 };
	struct res	 r;
	char		 sid[SESSION_ID_LEN + 1];
	uint64_t	 k;
	int		 i;

	conf->stream_maxlen = 4;
	conf->stream_window = 2;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	strlcpy(sid, session_id(s), sizeof sid);
	stream_delivered(st, 1);
	for (i = 0; i < 4; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	stream_append(st, "last", 4, 1, count_cb, &c);
	stream_close(st);
	unit_turns(base, 10);
	ck_assert_int_eq(c.ok, 3);		/* 1, and 2..3: the window */

	session_shutdown();
	unit_turns(base, 10);
	ck_assert_int_eq(c.ok, 3);
	ck_assert_int_eq(c.refused, 2);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 3);
	ck_assert_int_eq(r.ended, 0);
	ck_assert_uint_eq(r.oldest, 0);
}
END_TEST

/*
 * Released with the client further on (it received 6 of 9; retention 10,
 * window 3): what waits goes to the log as far as retention still keeps
 * a window before what the client received, entries 4.. (a cut may have
 * lost them in flight: invariant 5); not up to retention itself, which
 * would trim 4..6.
 */
START_TEST(test_release_leaves_room_in_flight)
{
	struct session	*s;
	struct stream	*st;
	struct counts	 c = { 0, 0 };
	struct res	 r;
	char		 sid[SESSION_ID_LEN + 1];
	uint64_t	 k;
	int		 i;

	conf->stream_maxlen = 10;
	conf->stream_window = 3;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	strlcpy(sid, session_id(s), sizeof sid);
	for (i = 0; i < 3; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	unit_turns(base, 10);
	stream_delivered(st, 3);
	for (i = 0; i < 3; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	unit_turns(base, 10);
	stream_delivered(st, 6);
	for (i = 0; i < 14; i++)		/* 7..20 */
		stream_append(st, "m", 1, 0, count_cb, &c);
	stream_append(st, "last", 4, 1, count_cb, &c);
	unit_turns(base, 10);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 9);		/* 7..9: the window */
	stream_close(st);
	unit_turns(base, 10);

	session_shutdown();
	unit_turns(base, 10);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 13);		/* 6 + retention - window */
	ck_assert_int_eq(r.ended, 0);
	ck_assert_uint_le(r.oldest, 4);
	ck_assert_int_eq(c.ok, 13);
	ck_assert_int_eq(c.refused, 8);		/* 14..20 and the last */
}
END_TEST

static void
deleted_cb(enum eventlog_status status, void *arg)
{
	*(int *)arg = 1;
}

/*
 * The log loses the session (as a FLUSHALL does) while a producer has
 * appends in flight and waiting: every append is answered, refused, and
 * the session is closed here too (which lets go of the stream).
 */
START_TEST(test_log_loses_the_session)
{
	struct session	*s;
	struct stream	*st;
	struct counts	 c = { 0, 0 };
	char		 sid[SESSION_ID_LEN + 1];
	int		 i, deleted = 0;

	conf->stream_maxlen = 100;
	conf->stream_window = 5;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	strlcpy(sid, session_id(s), sizeof sid);
	for (i = 0; i < 3; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	unit_turns(base, 5);
	ck_assert_int_eq(c.ok, 3);
	eventlog_session_delete(el, sid, deleted_cb, &deleted);
	for (i = 0; i < 10; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	unit_turns(base, 20);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(c.ok, 3);
	ck_assert_int_eq(c.refused, 10);
	ck_assert_ptr_null(session_find(sid));
}
END_TEST

/* ---------------------------------------------------------------------
 * Watchers: the hooks a view registers, recorded by a fake one.
 */

#define FAKE_MAX	64

struct fake {
	struct stream_watcher	*w;
	int			 ncommitted;
	uint64_t		 seqs[FAKE_MAX];
	char			 data[FAKE_MAX][16];
	int			 ended_at;	/* index of the ended one; -1 */
	int			 nwakeups;
	uint64_t		 wakeups[FAKE_MAX];
	int64_t			 lost;		/* -1: not told */
	int			 closes;
	int			 aborts;
	char			 reason[128];
	int64_t			 close_after;	/* -1: not asked */
	uint64_t		 received;
};

static void
fake_committed(void *arg, const struct eventlog_entry *e, int ended)
{
	struct fake	*f = arg;

	ck_assert_int_lt(f->ncommitted, FAKE_MAX);
	f->seqs[f->ncommitted] = e->seq;
	snprintf(f->data[f->ncommitted], sizeof f->data[0], "%.*s",
	    (int)e->len, e->data != NULL ? e->data : "");
	if (ended) {
		ck_assert_int_eq(f->ended_at, -1);
		f->ended_at = f->ncommitted;
	}
	f->ncommitted++;
}

static void
fake_wakeup(void *arg, uint64_t seq)
{
	struct fake	*f = arg;

	ck_assert_int_lt(f->nwakeups, FAKE_MAX);
	f->wakeups[f->nwakeups++] = seq;
}

static void
fake_lost(void *arg, uint64_t head)
{
	struct fake	*f = arg;

	f->lost = (int64_t)head;
}

/* Like a view: closing or aborting ends the watcher. */
static void
fake_close(void *arg, const char *reason)
{
	struct fake	*f = arg;

	f->closes++;
	strlcpy(f->reason, reason, sizeof f->reason);
	stream_unwatch(f->w);
	f->w = NULL;
}

static void
fake_abort(void *arg, const char *reason)
{
	struct fake	*f = arg;

	f->aborts++;
	strlcpy(f->reason, reason, sizeof f->reason);
	stream_unwatch(f->w);
	f->w = NULL;
}

static int
fake_close_after(void *arg, uint64_t n)
{
	struct fake	*f = arg;

	f->close_after = (int64_t)n;
	return (0);
}

static uint64_t
fake_received(void *arg)
{
	struct fake	*f = arg;

	return (f->received);
}

static const struct stream_hooks fake_hooks = {
	fake_committed, fake_wakeup, fake_lost, fake_close, fake_abort,
	fake_close_after, fake_received
};

static void
fake_watch(struct fake *f, struct session *s, uint64_t k, int sole)
{
	memset(f, 0, sizeof *f);
	f->ended_at = -1;
	f->lost = -1;
	f->close_after = -1;
	f->w = stream_watch(s, k, sole, &fake_hooks, f);
	ck_assert_ptr_nonnull(f->w);
	ck_assert_ptr_eq(session_attached(s, k), f->w);
}

/*
 * Commits reach the watcher in order, each with its bytes, the last one
 * marked as the stream's end; entry 0 of a stream watched before it was
 * created comes as a wakeup (it has no bytes to take).
 */
START_TEST(test_hooks_commits_in_order)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 f;
	char		 msg[16];
	int		 i, created = 0;

	world_start();
	s = world_session(V_NEW);
	st = stream_open(s, STREAM_REQUEST, created_cb, &created);
	fake_watch(&f, s, stream_id(st), 1);
	unit_turns(base, 5);
	ck_assert_int_eq(created, 1);
	ck_assert_int_eq(f.nwakeups, 1);
	ck_assert_uint_eq(f.wakeups[0], 0);

	for (i = 1; i <= 5; i++) {
		snprintf(msg, sizeof msg, "m%d", i);
		stream_append(st, msg, strlen(msg), i == 5, NULL, NULL);
	}
	stream_close(st);
	unit_turns(base, 10);
	ck_assert_int_eq(f.ncommitted, 5);
	for (i = 0; i < 5; i++) {
		snprintf(msg, sizeof msg, "m%d", i + 1);
		ck_assert_uint_eq(f.seqs[i], (uint64_t)i + 1);
		ck_assert_str_eq(f.data[i], msg);
	}
	ck_assert_int_eq(f.ended_at, 4);
	ck_assert_int_eq(f.nwakeups, 1);
	ck_assert_int_eq(f.lost, -1);
	stream_unwatch(f.w);
}
END_TEST

/*
 * At most one watcher per stream: the second one takes over, the first is
 * aborted ("taken over") and hears nothing more.
 */
START_TEST(test_hooks_takeover)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 a, b;
	uint64_t	 k;

	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	fake_watch(&a, s, k, 1);
	stream_append(st, "one", 3, 0, NULL, NULL);
	unit_turns(base, 5);
	ck_assert_int_eq(a.ncommitted, 1);

	fake_watch(&b, s, k, 1);
	ck_assert_int_eq(a.aborts, 1);
	ck_assert_str_eq(a.reason, "taken over");
	ck_assert_ptr_null(a.w);
	ck_assert_ptr_eq(session_attached(s, k), b.w);

	stream_append(st, "two", 3, 1, NULL, NULL);
	stream_close(st);
	unit_turns(base, 10);
	ck_assert_int_eq(a.ncommitted, 1);
	ck_assert_int_eq(b.ncommitted, 1);
	ck_assert_uint_eq(b.seqs[0], 2);
	ck_assert_str_eq(b.data[0], "two");
	ck_assert_int_eq(b.ended_at, 0);
	ck_assert_int_eq(b.aborts + b.closes, 0);
	stream_unwatch(b.w);
}
END_TEST

/*
 * The log loses the session: the watcher hears that nothing after the last
 * committed entry will come, then the session is closed here too and the
 * watcher with it.
 */
START_TEST(test_hooks_lost)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 f;
	char		 sid[SESSION_ID_LEN + 1];
	int		 i, deleted = 0;

	conf->stream_window = 100;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	strlcpy(sid, session_id(s), sizeof sid);
	fake_watch(&f, s, stream_id(st), 1);
	for (i = 0; i < 3; i++)
		stream_append(st, "m", 1, 0, NULL, NULL);
	unit_turns(base, 5);
	ck_assert_int_eq(f.ncommitted, 3);
	eventlog_session_delete(el, sid, deleted_cb, &deleted);
	stream_append(st, "m", 1, 0, NULL, NULL);
	unit_turns(base, 20);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(f.ncommitted, 3);
	ck_assert_int_eq(f.lost, 3);
	ck_assert_int_eq(f.closes, 1);
	ck_assert_ptr_null(f.w);
	ck_assert_ptr_null(session_find(sid));
}
END_TEST

struct last {
	int			 calls;
	enum eventlog_status	 status;
	uint64_t		 head;
	int			 ended;
	char			 data[256];
};

static void
last_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct last	*l = arg;

	l->calls++;
	l->status = status;
	if (info != NULL) {
		l->head = info->head;
		l->ended = info->ended;
	}
	if (n > 0)
		snprintf(l->data, sizeof l->data, "%.*s",
		    (int)entries[n - 1].len, entries[n - 1].data);
}

/* The log's last entry of stream K, read from `from` on. */
static struct last
log_last(const char *sid, uint64_t k, uint64_t from)
{
	struct last	l;
	int		n;

	memset(&l, 0, sizeof l);
	eventlog_read(el, sid, k, from, 64, last_cb, &l);
	for (n = 0; l.calls == 0 && n < 100; n++)
		unit_turns(base, 1);
	ck_assert_int_eq(l.calls, 1);
	return (l);
}

static void
appended_cb(enum eventlog_status status, const struct eventlog_info *info,
    void *arg)
{
	*(enum eventlog_status *)arg = status;
}

/*
 * Another writer took the next entry behind the stream's back: the
 * stream's append is refused (compare-and-append), the request it owed is
 * answered with an error after what the log has, and the watcher is woken
 * to read both, never told of an entry this process did not commit.
 */
START_TEST(test_hooks_conflict_answers_after_the_log)
{
	struct session		*s;
	struct stream		*st;
	struct fake		 f;
	struct last		 l;
	cJSON			*id = cJSON_CreateNumber(7);
	enum eventlog_status	 other = EVENTLOG_STATUS_MAX;
	char			 sid[SESSION_ID_LEN + 1];
	uint64_t		 k;

	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	strlcpy(sid, session_id(s), sizeof sid);
	stream_expect_response(st, id);
	fake_watch(&f, s, k, 1);
	stream_append(st, "mine", 4, 0, NULL, NULL);
	unit_turns(base, 5);
	ck_assert_int_eq(f.ncommitted, 1);

	eventlog_append(el, sid, k, 2, "theirs", 6, 0, appended_cb, &other);
	unit_turns(base, 5);
	ck_assert_int_eq(other, EVENTLOG_OK);
	stream_append(st, "refused", 7, 0, NULL, NULL);
	unit_turns(base, 20);
	ck_assert_int_eq(f.ncommitted, 1);
	ck_assert_int_eq(f.lost, -1);
	ck_assert_int_ge(f.nwakeups, 2);
	ck_assert_uint_eq(f.wakeups[0], 2);		/* the log's head */
	ck_assert_uint_eq(f.wakeups[f.nwakeups - 1], 3);	/* the error */

	l = log_last(sid, k, 2);
	ck_assert_int_eq(l.status, EVENTLOG_OK);
	ck_assert_uint_eq(l.head, 3);
	ck_assert_int_eq(l.ended, 1);
	ck_assert_ptr_nonnull(strstr(l.data, "\"id\":7"));
	ck_assert_ptr_nonnull(strstr(l.data, "\"error\""));
	cJSON_Delete(id);
	stream_close(st);
	stream_unwatch(f.w);
}
END_TEST

/*
 * Block policy through the watcher: with nothing delivered, the stream
 * sends a window of entries and tells their producers but the last; each
 * delivery the watcher reports lets the next ones go, in order.
 */
START_TEST(test_hooks_block_window)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 f;
	struct counts	 c = { 0, 0 };
	char		 msg[16];
	int		 i;

	conf->stream_maxlen = 10;
	conf->stream_window = 3;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	fake_watch(&f, s, stream_id(st), 1);
	for (i = 1; i <= 6; i++) {
		snprintf(msg, sizeof msg, "m%d", i);
		stream_append(st, msg, strlen(msg), 0, count_cb, &c);
	}
	unit_turns(base, 10);
	ck_assert_int_eq(f.ncommitted, 3);		/* 1..3: the window */
	ck_assert_int_eq(c.ok, 2);			/* 3's producer waits */

	stream_watcher_delivered(f.w, 2);
	ck_assert_int_eq(c.ok, 3);			/* told at once */
	unit_turns(base, 10);
	ck_assert_int_eq(f.ncommitted, 5);		/* 4, 5 */
	ck_assert_int_eq(c.ok, 4);

	stream_watcher_delivered(f.w, 5);
	unit_turns(base, 10);
	ck_assert_int_eq(f.ncommitted, 6);
	ck_assert_int_eq(c.ok, 6);
	ck_assert_int_eq(c.refused, 0);
	for (i = 0; i < 6; i++) {
		snprintf(msg, sizeof msg, "m%d", i + 1);
		ck_assert_uint_eq(f.seqs[i], (uint64_t)i + 1);
		ck_assert_str_eq(f.data[i], msg);
	}
	stream_close(st);
	stream_unwatch(f.w);
}
END_TEST

/*
 * What reaches a watcher from outside its stream: the shared log's
 * published commits (not for a sole watcher, which hears its stream),
 * "commits may be missed", polling's close_after, and the session closing.
 */
START_TEST(test_hooks_from_outside)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 sole, other;
	char		 sid[SESSION_ID_LEN + 1];

	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	strlcpy(sid, session_id(s), sizeof sid);
	ck_assert_int_eq(stream_close_after(st, 4), -1);	/* no watcher */

	fake_watch(&sole, s, stream_id(st), 1);
	stream_watcher_published(sole.w, 9);
	ck_assert_int_eq(sole.nwakeups, 0);
	stream_watcher_missed(sole.w);
	ck_assert_int_eq(sole.nwakeups, 1);
	ck_assert_uint_eq(sole.wakeups[0], 0);
	ck_assert_int_eq(stream_close_after(st, 4), 0);
	ck_assert_int_eq(sole.close_after, 4);

	/* A stream this process has no object for: K 12345. */
	fake_watch(&other, s, 12345, 0);
	stream_watcher_published(other.w, 9);
	ck_assert_int_eq(other.nwakeups, 1);
	ck_assert_uint_eq(other.wakeups[0], 9);

	session_close(s, "test ends it");
	ck_assert_int_eq(sole.closes, 1);
	ck_assert_int_eq(other.closes, 1);
	ck_assert_str_eq(other.reason, "test ends it");
	ck_assert_ptr_null(session_find(sid));
}
END_TEST

/*
 * A watcher that comes after the stream left its session (closed, its last
 * append still in the log's hands: a resume landing just then) still
 * hears that last commit from the stream.
 */
START_TEST(test_hooks_late_watcher)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 f;
	uint64_t	 k;

	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	stream_append(st, "last", 4, 1, NULL, NULL);
	stream_close(st);
	ck_assert_ptr_null(session_stream(s, k));
	fake_watch(&f, s, k, 0);
	unit_turns(base, 10);
	ck_assert_int_eq(f.ncommitted, 1);
	ck_assert_str_eq(f.data[0], "last");
	ck_assert_int_eq(f.ended_at, 0);
	stream_unwatch(f.w);
}
END_TEST

struct closer {
	struct stream	*stream;
	int		 told;
};

static void
closer_cb(int ok, void *arg)
{
	struct closer	*c = arg;

	if (c->told++ == 0)
		stream_close(c->stream);
}

/*
 * A paused producer that closes the stream from its commit callback, run
 * from inside the watcher's delivery. Its entry was the last, so when the
 * callback returns nothing holds the stream any more: it is freed on a
 * later turn, not under the delivery still walking it (ASan would see).
 */
START_TEST(test_closed_from_a_callback)
{
	struct session	*s;
	struct stream	*st;
	struct fake	 f;
	struct closer	 c;
	uint64_t	 k;

	conf->stream_maxlen = 10;
	conf->stream_window = 1;
	world_start();
	s = world_session(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	fake_watch(&f, s, k, 1);
	c.stream = st;
	c.told = 0;
	stream_append(st, "last", 4, 1, closer_cb, &c);
	unit_turns(base, 10);
	ck_assert_int_eq(f.ncommitted, 1);
	ck_assert_int_eq(c.told, 0);		/* paused: window 1 */

	stream_watcher_delivered(f.w, 1);
	ck_assert_int_eq(c.told, 1);
	ck_assert_ptr_null(session_stream(s, k));
	unit_turns(base, 10);
	ck_assert_int_eq(c.told, 1);
	stream_unwatch(f.w);
}
END_TEST

static Suite *
stream_suite(void)
{
	Suite	*s = suite_create("stream");
	TCase	*tc;

	tc = tcase_create("block");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_block_never_trims_undelivered);
	tcase_add_test(tc, test_release_sends_what_retention_keeps);
	tcase_add_test(tc, test_release_never_trims_undelivered);
	tcase_add_test(tc, test_release_leaves_room_in_flight);
	suite_add_tcase(s, tc);

	tc = tcase_create("loss");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_log_loses_the_session);
	suite_add_tcase(s, tc);

	tc = tcase_create("hooks");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_hooks_commits_in_order);
	tcase_add_test(tc, test_hooks_takeover);
	tcase_add_test(tc, test_hooks_lost);
	tcase_add_test(tc, test_hooks_conflict_answers_after_the_log);
	tcase_add_test(tc, test_hooks_block_window);
	tcase_add_test(tc, test_hooks_from_outside);
	tcase_add_test(tc, test_hooks_late_watcher);
	tcase_add_test(tc, test_closed_from_a_callback);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(stream_suite)
