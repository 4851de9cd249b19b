/*
 * Unit tests for stream.c, driven through session.c against the memory
 * event log, in process:
 *
 * - the block policy as a property: random producers (each pipelining a
 *   random number of appends, sending random batches per loop turn) share
 *   one stream under random stream_maxlen and stream_window, while a
 *   simulated view reads the log from its position and delivers at a
 *   random pace. Retention never trims an entry the reader has not
 *   received (its reads never meet "trimmed"), the log never holds more
 *   undelivered entries than the window, every producer gets all its
 *   messages committed, in its order, and nobody waits forever;
 * - a stream released while appends wait (shutdown): they go to the log
 *   as far as retention keeps what the client has not received;
 * - a log that loses the session while a producer appends: every append
 *   is answered (refused), and the session is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "unit.h"

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "stream.h"

#define V_NEW		"2025-11-25"
#define MAX_TURNS	200000
#define MAX_PRODUCERS	8

static struct event_base	*base;
static struct conf		*conf;
static struct eventlog		*el;

static void
setup(void)
{
	log_level = LOG_LEVEL_ERROR;
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	conf = conf_default();
	conf->eventlog = CONF_EVENTLOG_MEMORY;
	conf->backpressure_request = CONF_BACKPRESSURE_BLOCK;
	conf->backpressure_standalone = CONF_BACKPRESSURE_BLOCK;
}

/* The log and the session layer, on the conf as the test set it. */
static void
start(void)
{
	char	*cause = NULL;

	el = eventlog_create(base, conf, &cause);
	ck_assert_msg(el != NULL, "eventlog_create: %s", cause);
	server_init(base, conf, el);
	session_init();
}

static void
turn(void)
{
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void
turns(int n)
{
	while (n-- > 0)
		turn();
}

static void
teardown(void)
{
	if (el != NULL) {
		session_shutdown();
		turns(20);
		ck_assert_uint_eq(session_allocated(), 0);
		eventlog_free(el);
		el = NULL;
	}
	event_base_free(base);
	base = NULL;
	conf_free(conf);
	conf = NULL;
}

static struct session *
create(void)
{
	struct session	*s;

	s = session_create(V_NEW, NULL, NULL, NULL);
	ck_assert_msg(s != NULL, "session_create refused");
	return (s);
}

static void
created_cb(struct stream *st, int ok, void *arg)
{
	*(int *)arg = ok ? 1 : -1;
}

/* A request stream of s, created in the log. */
static struct stream *
open_request(struct session *s)
{
	struct stream	*st;
	int		 created = 0, n;

	st = stream_open(s, STREAM_REQUEST);
	stream_when_created(st, created_cb, &created);
	for (n = 0; created == 0 && n < 100; n++)
		turn();
	ck_assert_int_eq(created, 1);
	return (st);
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
	struct stream	*stream;
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
	stream_delivered(r->stream, r->next - 1);
}

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
	conf->stream_maxlen = 1 + (long long)rnd(40);
	conf->stream_window = 1 + (long long)rnd((uint64_t)conf->stream_maxlen);
	if (rnd(4) == 0)
		conf->stream_window = conf->stream_maxlen;
	standalone = rnd(4) == 0;
	start();
	s = create();
	st = standalone ? session_standalone(s) : open_request(s);
	turns(5);		/* the standalone stream exists too */

	memset(r, 0, sizeof *r);
	r->session = s;
	r->stream = st;
	r->k = stream_id(st);
	r->next = 1;
	r->pace = 1 + (int)rnd(100);
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
		turn();
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
	turns(20);
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
		turn();
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
	start();
	s = create();
	st = open_request(s);
	k = stream_id(st);
	strlcpy(sid, session_id(s), sizeof sid);
	stream_delivered(st, 1);
	for (i = 0; i < 4; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	stream_append(st, "last", 4, 1, count_cb, &c);
	turns(10);
	/* 2..4 fill the window: 4's producer is not told yet. */
	ck_assert_int_eq(c.ok, 3);
	stream_close(st);		/* the owner is done: it is told */
	turns(10);
	ck_assert_int_eq(c.ok, 4);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 4);
	ck_assert_int_eq(r.ended, 0);

	session_shutdown();
	turns(10);
	ck_assert_int_eq(c.ok, 5);
	ck_assert_int_eq(c.refused, 0);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 5);
	ck_assert_int_eq(r.ended, 1);
	ck_assert_uint_le(r.oldest, 2);		/* 2.. not trimmed */
}
END_TEST

/*
 * The same with a window as large as retention: what would trim entries
 * the client has not received stays out of the log (and is refused).
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
	conf->stream_window = 4;
	start();
	s = create();
	st = open_request(s);
	k = stream_id(st);
	strlcpy(sid, session_id(s), sizeof sid);
	stream_delivered(st, 1);
	for (i = 0; i < 5; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	stream_append(st, "last", 4, 1, count_cb, &c);
	stream_close(st);
	turns(10);
	ck_assert_int_eq(c.ok, 5);		/* 2..5: the window */

	session_shutdown();
	turns(10);
	ck_assert_int_eq(c.ok, 5);
	ck_assert_int_eq(c.refused, 1);
	r = log_head(sid, k);
	ck_assert_uint_eq(r.head, 5);
	ck_assert_int_eq(r.ended, 0);
	ck_assert_uint_eq(r.oldest, 2);
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
	start();
	s = create();
	st = open_request(s);
	strlcpy(sid, session_id(s), sizeof sid);
	for (i = 0; i < 3; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	turns(5);
	ck_assert_int_eq(c.ok, 3);
	eventlog_session_delete(el, sid, deleted_cb, &deleted);
	for (i = 0; i < 10; i++)
		stream_append(st, "m", 1, 0, count_cb, &c);
	turns(20);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(c.ok, 3);
	ck_assert_int_eq(c.refused, 10);
	ck_assert_ptr_null(session_find(sid));
}
END_TEST

static Suite *
stream_suite(void)
{
	Suite	*s = suite_create("stream");
	TCase	*tc;

	tc = tcase_create("block");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_block_never_trims_undelivered);
	tcase_add_test(tc, test_release_sends_what_retention_keeps);
	tcase_add_test(tc, test_release_never_trims_undelivered);
	suite_add_tcase(s, tc);

	tc = tcase_create("loss");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_log_loses_the_session);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(stream_suite)
