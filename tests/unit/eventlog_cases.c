/*
 * The event log's behavioural suite, run on every backend: every callback
 * runs exactly once and never before its call returns; sessions; streams
 * with their priming entry; compare-and-append; final entries; reads from
 * any position; trimming; expiry; and cancellation on free. The cases say
 * what the API promises (eventlog.h), whatever keeps the log; where the
 * backends legitimately differ, the backend's descriptor says how.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "eventlog_cases.h"

#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "random.h"

/* Loop turns a queued op may take on a backend without I/O. */
#define MAX_TURNS	1000
#define TICK_MS		50	/* longest a loop turn blocks */

const struct eventlog_cases_backend	*backend;
struct event_base			*base;
struct conf				*conf;
struct eventlog				*el;
char					 SID[33];
char					 OTHER_SID[33];

static struct event			*tick_ev;

/* Callbacks: each records what it was told. */

void
res_clear(struct res *r)
{
	size_t	i;

	for (i = 0; i < r->n; i++)
		free(r->data[i]);
	free(r->meta);
	memset(r, 0, sizeof *r);
}

void
res_called(struct res *r, enum eventlog_status status,
    const struct eventlog_info *info)
{
	r->calls++;
	r->status = status;
	if (info != NULL) {
		r->has_info = 1;
		r->info = *info;
		r->info.data = NULL;	/* valid only during the callback */
		if (info->data != NULL) {
			r->has_committed = 1;
			r->committedlen = info->len;
			memcpy(r->committed, info->data,
			    info->len < sizeof r->committed - 1 ? info->len :
			    sizeof r->committed - 1);
		}
	}
	if (r->order != NULL)
		r->rank = ++*r->order;
}

static char *
copy(const char *data, size_t len)
{
	char	*p = malloc(len + 1);

	ck_assert_ptr_nonnull(p);
	if (len > 0)
		memcpy(p, data, len);
	p[len] = '\0';
	return (p);
}

void
done_cb(enum eventlog_status status, void *arg)
{
	res_called(arg, status, NULL);
}

void
append_cb(enum eventlog_status status, const struct eventlog_info *info,
    void *arg)
{
	res_called(arg, status, info);
}

void
read_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct res	*r = arg;
	size_t		 i;

	res_called(r, status, info);
	ck_assert_uint_le(n, MAX_ENTRIES);
	for (i = 0; i < r->n; i++)
		free(r->data[i]);
	r->n = n;
	for (i = 0; i < n; i++) {
		r->seq[i] = entries[i].seq;
		r->len[i] = entries[i].len;
		r->data[i] = copy(entries[i].data, entries[i].len);
	}
}

void
load_cb(enum eventlog_status status, const char *meta, size_t len, void *arg)
{
	struct res	*r = arg;

	res_called(r, status, NULL);
	free(r->meta);
	r->meta = meta != NULL ? copy(meta, len) : NULL;
	r->metalen = len;
}

/* The loop. */

static void
tick_cb(evutil_socket_t fd, short events, void *arg)
{
}

/* One loop turn; it never blocks longer than the tick. */
void
turn(void)
{
	event_base_loop(base, EVLOOP_ONCE);
}

/* Runs the loop until *calls is non-zero or ms pass; returns elapsed ms. */
uint64_t
run_until(int *calls, int ms)
{
	uint64_t	start = clock_now_ms();

	while ((calls == NULL || *calls == 0) &&
	    clock_now_ms() - start < (uint64_t)ms)
		turn();
	return (clock_now_ms() - start);
}

/* Runs the loop (timers, the backend's cron) for ms milliseconds. */
void
run_for(int ms)
{
	run_until(NULL, ms);
}

/* Runs the loop until r has been called, then checks it was called once. */
void
wait_for(struct res *r)
{
	int	turns;

	if (backend->no_io) {
		for (turns = 0; r->calls == 0 && turns < MAX_TURNS; turns++)
			event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	} else
		run_until(&r->calls, WAIT_MS);
	ck_assert_msg(r->calls == 1, "callback ran %d times", r->calls);
}

/* Runs the loop a while longer: nothing may call back again. */
void
spin(void)
{
	int	i;

	for (i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	run_for(TICK_MS);
}

/* The operations, each waited for. */

void
expect_status(enum eventlog_status got, enum eventlog_status want)
{
	ck_assert_msg(got == want, "status %s, want %s",
	    eventlog_status_name(got), eventlog_status_name(want));
}

enum eventlog_status
store(const char *sid, const char *meta, size_t len)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_session_store(el, sid, meta, len, done_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	status = r.status;
	res_clear(&r);
	return (status);
}

void
load(const char *sid, struct res *r)
{
	memset(r, 0, sizeof *r);
	eventlog_session_load(el, sid, load_cb, r);
	ck_assert_int_eq(r->calls, 0);
	wait_for(r);
}

static enum eventlog_status
delete(const char *sid)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_session_delete(el, sid, done_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	status = r.status;
	res_clear(&r);
	return (status);
}

/* A refused create tells nothing of the stream it did not make. */
enum eventlog_status
create(const char *sid, uint64_t k, struct eventlog_info *info)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_stream_create(el, sid, k, append_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	if (info != NULL) {
		ck_assert(r.has_info || r.status != EVENTLOG_OK);
		*info = r.info;
	}
	if (r.status != EVENTLOG_OK)
		ck_assert(!r.has_info);
	status = r.status;
	res_clear(&r);
	return (status);
}

enum eventlog_status
append(const char *sid, uint64_t k, uint64_t seq, const char *data,
    int flags, struct eventlog_info *info, int *has_info)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_append(el, sid, k, seq, data, strlen(data), flags, append_cb,
	    &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	if (info != NULL)
		*info = r.info;
	if (has_info != NULL)
		*has_info = r.has_info;
	status = r.status;
	res_clear(&r);
	return (status);
}

enum eventlog_status
end(const char *sid, uint64_t k, struct eventlog_info *info)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_stream_end(el, sid, k, append_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	if (info != NULL)
		*info = r.info;
	status = r.status;
	res_clear(&r);
	return (status);
}

/* Reads into r (which the caller clears). */
enum eventlog_status
readr(const char *sid, uint64_t k, uint64_t from, size_t max, struct res *r)
{
	memset(r, 0, sizeof *r);
	eventlog_read(el, sid, k, from, max, read_cb, r);
	ck_assert_int_eq(r->calls, 0);
	wait_for(r);
	return (r->status);
}

/* The text appended as entry seq by fill(). */
void
entry_text(char *buf, size_t len, uint64_t seq)
{
	snprintf(buf, len, "{\"n\":%llu}", (unsigned long long)seq);
}

/* Creates stream k of SID and appends entries 1..n. */
void
fill(uint64_t k, uint64_t n)
{
	char		buf[64];
	uint64_t	seq;

	expect_status(create(SID, k, NULL), EVENTLOG_OK);
	for (seq = 1; seq <= n; seq++) {
		entry_text(buf, sizeof buf, seq);
		expect_status(append(SID, k, seq, buf, 0, NULL, NULL),
		    EVENTLOG_OK);
	}
}

/* Checks r holds entries from..from+count-1 as fill() wrote them. */
void
expect_entries(const struct res *r, uint64_t from, size_t count)
{
	char	buf[64];
	size_t	i;

	ck_assert_uint_eq(r->n, count);
	for (i = 0; i < count; i++) {
		ck_assert_uint_eq(r->seq[i], from + i);
		if (from + i == 0) {
			ck_assert_uint_eq(r->len[i], 0);
			continue;
		}
		entry_text(buf, sizeof buf, from + i);
		ck_assert_uint_eq(r->len[i], strlen(buf));
		ck_assert_str_eq(r->data[i], buf);
	}
}

/* The fixture. */

static void
open_log(long long maxlen, long long ttl)
{
	char	*cause = NULL;

	conf->stream_maxlen = maxlen;
	conf->stream_ttl = ttl;
	backend->configure(conf);
	el = eventlog_create(base, conf, &cause);
	ck_assert_msg(el != NULL, "eventlog_create: %s", cause);
	if (backend->ready != NULL)
		backend->ready(el);
}

void
reopen(long long maxlen, long long ttl)
{
	eventlog_free(el);
	open_log(maxlen, ttl);
}

void
eventlog_cases_setup(void)
{
	struct timeval	tv = { 0, TICK_MS * 1000 };

	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	tick_ev = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	event_add(tick_ev, &tv);
	conf = conf_default();
	/* Fresh ids: a shared server outlives the tests. */
	random_hex(SID, sizeof SID);
	random_hex(OTHER_SID, sizeof OTHER_SID);
	open_log(1000, 300);
}

void
eventlog_cases_teardown(void)
{
	eventlog_free(el);
	el = NULL;
	event_free(tick_ev);
	tick_ev = NULL;
	event_base_free(base);
	base = NULL;
	conf_free(conf);
	conf = NULL;
}

/* The cases. */

/* No callback runs inside the call that queued it; each runs once. */
START_TEST(test_never_inline)
{
	struct res	r[7];
	int		i;

	memset(r, 0, sizeof r);
	eventlog_session_store(el, SID, "{}", 2, done_cb, &r[0]);
	eventlog_session_load(el, SID, load_cb, &r[1]);
	eventlog_stream_create(el, SID, K, append_cb, &r[2]);
	eventlog_append(el, SID, K, 1, "x", 1, 0, append_cb, &r[3]);
	eventlog_read(el, SID, K, 0, 10, read_cb, &r[4]);
	eventlog_stream_end(el, SID, K, append_cb, &r[5]);
	eventlog_session_delete(el, SID, done_cb, &r[6]);
	for (i = 0; i < 7; i++)
		ck_assert_int_eq(r[i].calls, 0);
	for (i = 0; i < 7; i++)
		wait_for(&r[i]);
	spin();
	for (i = 0; i < 7; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		expect_status(r[i].status, EVENTLOG_OK);
	}
	/*
	 * The load saw the store; the read saw the priming entry and the
	 * append, in order.
	 */
	ck_assert_str_eq(r[1].meta, "{}");
	ck_assert_uint_eq(r[4].n, 2);
	ck_assert_uint_eq(r[4].seq[0], 0);
	ck_assert_uint_eq(r[4].seq[1], 1);
	ck_assert_str_eq(r[4].data[1], "x");
	for (i = 0; i < 7; i++)
		res_clear(&r[i]);
}
END_TEST

/* Ops queued back to back complete in the order they were made. */
START_TEST(test_order)
{
	struct res	r[6];
	int		order = 0, i;

	memset(r, 0, sizeof r);
	for (i = 0; i < 6; i++)
		r[i].order = &order;
	eventlog_session_store(el, SID, "m", 1, done_cb, &r[0]);
	eventlog_stream_create(el, SID, K, append_cb, &r[1]);
	eventlog_append(el, SID, K, 1, "a", 1, 0, append_cb, &r[2]);
	eventlog_append(el, SID, K, 2, "b", 1, 0, append_cb, &r[3]);
	eventlog_append(el, SID, K, 3, "c", 1, EVENTLOG_FINAL, append_cb,
	    &r[4]);
	eventlog_read(el, SID, K, 1, 10, read_cb, &r[5]);
	for (i = 0; i < 6; i++)
		wait_for(&r[i]);
	for (i = 0; i < 6; i++) {
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_int_eq(r[i].rank, i + 1);
	}
	ck_assert_uint_eq(r[4].info.head, 3);
	ck_assert_int_eq(r[4].info.ended, 1);
	ck_assert_uint_eq(r[5].n, 3);
	ck_assert_str_eq(r[5].data[0], "a");
	ck_assert_str_eq(r[5].data[1], "b");
	ck_assert_str_eq(r[5].data[2], "c");
	for (i = 0; i < 6; i++)
		res_clear(&r[i]);
}
END_TEST

/*
 * A stream's creator does not wait for the create's answer before it
 * appends (a call starts as its stream is created): the create and the
 * appends asked for in the same turn commit in order, each answered as if
 * alone, the create first. Past stream_maxlen, none trims its own.
 */
START_TEST(test_create_with_appends)
{
	struct res	r[8], rd;
	int		order = 0, i;
	char		buf[64];

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	memset(r, 0, sizeof r);
	for (i = 0; i < 4; i++)
		r[i].order = &order;
	eventlog_stream_create(el, SID, K, append_cb, &r[0]);
	for (i = 1; i <= 3; i++) {
		entry_text(buf, sizeof buf, (uint64_t)i);
		eventlog_append(el, SID, K, (uint64_t)i, buf, strlen(buf),
		    i == 3 ? EVENTLOG_FINAL : 0, append_cb, &r[i]);
	}
	for (i = 0; i < 4; i++) {
		wait_for(&r[i]);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_int_eq(r[i].rank, i + 1);
		ck_assert(r[i].has_info);
		ck_assert_uint_eq(r[i].info.head, (uint64_t)i);
		ck_assert_uint_eq(r[i].info.oldest, 0);
		ck_assert_int_eq(r[i].info.ended, i == 3);
	}
	ck_assert_int_eq(r[0].has_committed, 0);
	for (i = 1; i <= 3; i++) {
		entry_text(buf, sizeof buf, (uint64_t)i);
		ck_assert_str_eq(r[i].committed, buf);
	}
	expect_status(readr(SID, K, 0, 10, &rd), EVENTLOG_OK);
	expect_entries(&rd, 0, 4);
	ck_assert_int_eq(rd.info.ended, 1);
	res_clear(&rd);
	for (i = 0; i < 4; i++)
		res_clear(&r[i]);

	/* More than stream_maxlen entries with the create. */
	reopen(3, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	memset(r, 0, sizeof r);
	eventlog_stream_create(el, SID, K + 1, append_cb, &r[0]);
	for (i = 1; i <= 6; i++) {
		entry_text(buf, sizeof buf, (uint64_t)i);
		eventlog_append(el, SID, K + 1, (uint64_t)i, buf, strlen(buf),
		    0, append_cb, &r[i]);
	}
	for (i = 0; i <= 6; i++) {
		wait_for(&r[i]);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_uint_eq(r[i].info.head, (uint64_t)i);
		ck_assert_uint_le(r[i].info.oldest, (uint64_t)i);
	}
	ck_assert_uint_eq(r[6].info.oldest, 4);
	expect_status(readr(SID, K + 1, 4, 10, &rd), EVENTLOG_OK);
	expect_entries(&rd, 4, 3);
	res_clear(&rd);
	expect_status(readr(SID, K + 1, 3, 10, &rd), EVENTLOG_TRIMMED);
	res_clear(&rd);
	for (i = 0; i <= 6; i++)
		res_clear(&r[i]);
}
END_TEST

/*
 * The appends and the end asked for after a create, before its answer,
 * fail with it: a missing session, or a stream number already taken,
 * whose stream they must not touch, even when it looks like they could
 * continue it (its head is 0), and even when other work separates them
 * from the create.
 */
START_TEST(test_create_failed_appends)
{
	struct res	r[4], rd;
	int		i;

	/* No such session. */
	memset(r, 0, sizeof r);
	eventlog_stream_create(el, SID, K, append_cb, &r[0]);
	eventlog_append(el, SID, K, 1, "a", 1, 0, append_cb, &r[1]);
	eventlog_stream_end(el, SID, K, append_cb, &r[2]);
	for (i = 0; i < 3; i++) {
		wait_for(&r[i]);
		expect_status(r[i].status, EVENTLOG_NOT_FOUND);
		ck_assert(!r[i].has_info);
		res_clear(&r[i]);
	}

	/* K is taken, and its head is 0. */
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 0);
	memset(r, 0, sizeof r);
	eventlog_stream_create(el, SID, K, append_cb, &r[0]);
	eventlog_append(el, SID, K, 1, "a", 1, 0, append_cb, &r[1]);
	eventlog_append(el, SID, K, 2, "b", 1, EVENTLOG_FINAL, append_cb,
	    &r[2]);
	for (i = 0; i < 3; i++) {
		wait_for(&r[i]);
		expect_status(r[i].status, EVENTLOG_CONFLICT);
		ck_assert(!r[i].has_info);
		res_clear(&r[i]);
	}

	/* Other work between the create and the appends. */
	memset(r, 0, sizeof r);
	eventlog_stream_create(el, SID, K, append_cb, &r[0]);
	eventlog_read(el, OTHER_SID, K, 0, 10, read_cb, &r[1]);
	eventlog_append(el, SID, K, 1, "a", 1, 0, append_cb, &r[2]);
	eventlog_stream_end(el, SID, K, append_cb, &r[3]);
	for (i = 0; i < 4; i++)
		wait_for(&r[i]);
	expect_status(r[0].status, EVENTLOG_CONFLICT);
	expect_status(r[1].status, EVENTLOG_NOT_FOUND);
	expect_status(r[2].status, EVENTLOG_CONFLICT);
	expect_status(r[3].status, EVENTLOG_CONFLICT);
	for (i = 0; i < 4; i++)
		res_clear(&r[i]);

	/* Stream K is as it was: entry 0, open. */
	expect_status(readr(SID, K, 0, 10, &rd), EVENTLOG_OK);
	expect_entries(&rd, 0, 1);
	ck_assert_int_eq(rd.info.ended, 0);
	res_clear(&rd);
}
END_TEST

/* An op queued from a callback runs after that callback, not inside it. */
static struct res	nested_inner;
static int		nested_inner_calls_seen;

static void
nested_outer_cb(enum eventlog_status status, void *arg)
{
	res_called(arg, status, NULL);
	eventlog_session_load(el, SID, load_cb, &nested_inner);
	nested_inner_calls_seen = nested_inner.calls;
}

START_TEST(test_nested)
{
	struct res	outer;

	memset(&outer, 0, sizeof outer);
	memset(&nested_inner, 0, sizeof nested_inner);
	nested_inner_calls_seen = -1;
	eventlog_session_store(el, SID, "meta", 4, nested_outer_cb, &outer);
	wait_for(&outer);
	ck_assert_int_eq(nested_inner_calls_seen, 0);
	wait_for(&nested_inner);
	expect_status(nested_inner.status, EVENTLOG_OK);
	ck_assert_str_eq(nested_inner.meta, "meta");
	res_clear(&outer);
	res_clear(&nested_inner);
}
END_TEST

START_TEST(test_session)
{
	struct res	r;

	load(SID, &r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	ck_assert_ptr_null(r.meta);
	res_clear(&r);

	expect_status(store(SID, "{\"v\":1}", 7), EVENTLOG_OK);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_OK);
	ck_assert_uint_eq(r.metalen, 7);
	ck_assert_str_eq(r.meta, "{\"v\":1}");
	res_clear(&r);

	/* A second store replaces the meta; only len bytes are kept. */
	expect_status(store(SID, "{\"v\":2}trailing", 7), EVENTLOG_OK);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_OK);
	ck_assert_uint_eq(r.metalen, 7);
	ck_assert_str_eq(r.meta, "{\"v\":2}");
	res_clear(&r);

	/* Meta may hold NUL bytes. */
	expect_status(store(SID, "a\0b", 3), EVENTLOG_OK);
	load(SID, &r);
	ck_assert_uint_eq(r.metalen, 3);
	ck_assert_int_eq(memcmp(r.meta, "a\0b", 3), 0);
	res_clear(&r);

	/* Other sessions are separate. */
	load(OTHER_SID, &r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	res_clear(&r);
	expect_status(store(OTHER_SID, "o", 1), EVENTLOG_OK);

	expect_status(delete(SID), EVENTLOG_OK);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	res_clear(&r);
	expect_status(delete(SID), EVENTLOG_NOT_FOUND);

	load(OTHER_SID, &r);
	expect_status(r.status, EVENTLOG_OK);
	ck_assert_str_eq(r.meta, "o");
	res_clear(&r);
}
END_TEST

static enum eventlog_status
update(const char *sid, const char *meta, size_t len)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_session_update(el, sid, meta, len, done_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	status = r.status;
	res_clear(&r);
	return (status);
}

/*
 * An update replaces the meta of a session the log has, and is refused
 * once the log lost it (deleted, expired, flushed): it never brings a
 * session back.
 */
START_TEST(test_session_update)
{
	struct res	r;

	expect_status(update(SID, "u", 1), EVENTLOG_NOT_FOUND);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	res_clear(&r);

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 2);
	expect_status(update(SID, "u2", 2), EVENTLOG_OK);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_OK);
	ck_assert_str_eq(r.meta, "u2");
	res_clear(&r);
	/* Its streams are untouched. */
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.info.head, 2);
	res_clear(&r);

	expect_status(delete(SID), EVENTLOG_OK);
	expect_status(update(SID, "u3", 2), EVENTLOG_NOT_FOUND);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	res_clear(&r);
}
END_TEST

/* Deleting a session takes its streams with it. */
START_TEST(test_session_delete_streams)
{
	struct res	r;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 3);
	fill(K + 1, 1);
	expect_status(end(SID, K + 1, NULL), EVENTLOG_OK);
	expect_status(delete(SID), EVENTLOG_OK);
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);
	expect_status(append(SID, K, 4, "x", 0, NULL, NULL),
	    EVENTLOG_NOT_FOUND);
	expect_status(readr(SID, K + 1, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);

	/* Nothing of the session is left behind the API's back either. */
	if (backend->check_gone != NULL)
		backend->check_gone(SID);

	/* The session can come back; its old streams do not. */
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);
}
END_TEST

START_TEST(test_stream_create)
{
	struct eventlog_info	info;
	struct res		r;

	expect_status(create(SID, K, NULL), EVENTLOG_NOT_FOUND);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);

	memset(&info, 0xff, sizeof info);
	expect_status(create(SID, K, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 0);
	ck_assert_uint_eq(info.oldest, 0);
	ck_assert_int_eq(info.ended, 0);

	/* Entry 0 is committed, with empty data. */
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.seq[0], 0);
	ck_assert_uint_eq(r.len[0], 0);
	ck_assert_str_eq(r.data[0], "");
	ck_assert(r.has_info);
	ck_assert_uint_eq(r.info.head, 0);
	ck_assert_uint_eq(r.info.oldest, 0);
	res_clear(&r);

	/* A stream number is never created twice. */
	expect_status(create(SID, K, NULL), EVENTLOG_CONFLICT);
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 1);
	res_clear(&r);

	/* Other stream numbers are independent. */
	expect_status(create(SID, K + 1, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 0);

	/* The largest stream number there is. */
	expect_status(create(SID, 0xffffffffffffULL, &info), EVENTLOG_OK);
	expect_status(append(SID, 0xffffffffffffULL, 1, "big", 0, &info,
	    NULL), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 1);

	/* And 0, which eventlog_new_stream_id() never draws: refused. */
	expect_status(create(SID, 0, NULL), EVENTLOG_CONFLICT);
	expect_status(readr(SID, 0, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);
}
END_TEST

/* A committed append's answer carries its entry; a refused one none. */
START_TEST(test_append_answer)
{
	static const char	 bytes[] = "one\0two\n";
	struct res		 r;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(create(SID, K, NULL), EVENTLOG_OK);

	memset(&r, 0, sizeof r);
	eventlog_append(el, SID, K, 1, bytes, sizeof bytes - 1, 0, append_cb,
	    &r);
	wait_for(&r);
	expect_status(r.status, EVENTLOG_OK);
	ck_assert(r.has_committed);
	ck_assert_uint_eq(r.committedlen, sizeof bytes - 1);
	ck_assert(memcmp(r.committed, bytes, sizeof bytes - 1) == 0);
	res_clear(&r);

	memset(&r, 0, sizeof r);
	eventlog_append(el, SID, K, 3, "x", 1, 0, append_cb, &r);
	wait_for(&r);
	expect_status(r.status, EVENTLOG_CONFLICT);
	ck_assert(!r.has_committed);
	res_clear(&r);

	memset(&r, 0, sizeof r);
	eventlog_append(el, SID, K, 2, "", 0, EVENTLOG_FINAL, append_cb, &r);
	wait_for(&r);
	expect_status(r.status, EVENTLOG_OK);
	ck_assert_int_eq(r.info.ended, 1);
	ck_assert(r.has_committed);
	ck_assert_uint_eq(r.committedlen, 0);
	res_clear(&r);
}
END_TEST

START_TEST(test_compare_and_append)
{
	struct eventlog_info	info;
	struct res		r;
	int			has_info;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(create(SID, K, NULL), EVENTLOG_OK);

	/* Only head + 1 is accepted. */
	expect_status(append(SID, K, 0, "zero", 0, &info, &has_info),
	    EVENTLOG_CONFLICT);
	ck_assert(has_info);
	ck_assert_uint_eq(info.head, 0);
	expect_status(append(SID, K, 2, "two", 0, &info, NULL),
	    EVENTLOG_CONFLICT);
	ck_assert_uint_eq(info.head, 0);

	expect_status(append(SID, K, 1, "one", 0, &info, NULL), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 1);
	ck_assert_uint_eq(info.oldest, 0);
	ck_assert_int_eq(info.ended, 0);

	/* Replaying seq 1, skipping ahead, going back: all refused. */
	expect_status(append(SID, K, 1, "again", 0, &info, NULL),
	    EVENTLOG_CONFLICT);
	ck_assert_uint_eq(info.head, 1);
	expect_status(append(SID, K, 3, "three", 0, &info, NULL),
	    EVENTLOG_CONFLICT);
	ck_assert_uint_eq(info.head, 1);
	expect_status(append(SID, K, UINT64_MAX, "max", 0, &info, NULL),
	    EVENTLOG_CONFLICT);
	ck_assert_uint_eq(info.head, 1);

	/* The refused appends left nothing behind. */
	expect_status(readr(SID, K, 0, 100, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.seq[1], 1);
	ck_assert_str_eq(r.data[1], "one");
	ck_assert_uint_eq(r.info.head, 1);
	res_clear(&r);

	expect_status(append(SID, K, 2, "two", 0, &info, NULL), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);

	/* A conflicting op racing a good one: the log decides in order. */
	{
		struct res	a, b;

		memset(&a, 0, sizeof a);
		memset(&b, 0, sizeof b);
		eventlog_append(el, SID, K, 3, "first", 5, 0, append_cb, &a);
		eventlog_append(el, SID, K, 3, "second", 6, 0, append_cb, &b);
		wait_for(&a);
		wait_for(&b);
		expect_status(a.status, EVENTLOG_OK);
		expect_status(b.status, EVENTLOG_CONFLICT);
		ck_assert_uint_eq(b.info.head, 3);
	}
	expect_status(readr(SID, K, 3, 100, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_str_eq(r.data[0], "first");
	res_clear(&r);
}
END_TEST

START_TEST(test_final)
{
	struct eventlog_info	info;
	struct res		r;
	int			has_info;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(create(SID, K, NULL), EVENTLOG_OK);
	expect_status(append(SID, K, 1, "a", 0, NULL, NULL), EVENTLOG_OK);
	expect_status(append(SID, K, 2, "result", EVENTLOG_FINAL, &info,
	    NULL), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);
	ck_assert_int_eq(info.ended, 1);

	/* Nothing follows the final entry, whatever seq is named. */
	expect_status(append(SID, K, 3, "late", 0, &info, &has_info),
	    EVENTLOG_ENDED);
	ck_assert(has_info);
	ck_assert_uint_eq(info.head, 2);
	ck_assert_int_eq(info.ended, 1);
	expect_status(append(SID, K, 2, "dup", 0, NULL, NULL), EVENTLOG_ENDED);
	expect_status(append(SID, K, 3, "late", EVENTLOG_FINAL, NULL, NULL),
	    EVENTLOG_ENDED);

	/* Reads still work and report the end. */
	expect_status(readr(SID, K, 0, 100, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_str_eq(r.data[2], "result");
	ck_assert_int_eq(r.info.ended, 1);
	ck_assert_uint_eq(r.info.head, 2);
	res_clear(&r);
	expect_status(readr(SID, K, 3, 100, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(r.info.ended, 1);
	res_clear(&r);

	/* Ending an ended stream is harmless. */
	expect_status(end(SID, K, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);
	ck_assert_int_eq(info.ended, 1);
}
END_TEST

/* Every start position returns the rest of the stream in order. */
START_TEST(test_read_positions)
{
	struct res	r;
	uint64_t	from, last = 20;
	size_t		max;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, last);

	for (from = 0; from <= last + 1; from++) {
		expect_status(readr(SID, K, from, 1000, &r), EVENTLOG_OK);
		expect_entries(&r, from, (size_t)(last + 1 - from));
		ck_assert_uint_eq(r.info.head, last);
		ck_assert_uint_eq(r.info.oldest, 0);
		ck_assert_int_eq(r.info.ended, 0);
		res_clear(&r);
	}

	/* At most max entries, from the front. */
	for (max = 0; max <= 5; max++) {
		expect_status(readr(SID, K, 7, max, &r), EVENTLOG_OK);
		expect_entries(&r, 7, max);
		res_clear(&r);
	}
	expect_status(readr(SID, K, 19, 5, &r), EVENTLOG_OK);
	expect_entries(&r, 19, 2);
	res_clear(&r);
	expect_status(readr(SID, K, 19, SIZE_MAX, &r), EVENTLOG_OK);
	expect_entries(&r, 19, 2);
	res_clear(&r);

	/* Paging with max walks the whole stream without holes. */
	from = 0;
	for (;;) {
		expect_status(readr(SID, K, from, 3, &r), EVENTLOG_OK);
		if (r.n == 0) {
			res_clear(&r);
			break;
		}
		expect_entries(&r, from, r.n);
		from += r.n;
		res_clear(&r);
	}
	ck_assert_uint_eq(from, last + 1);
}
END_TEST

START_TEST(test_read_ahead)
{
	struct res	r;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 5);

	/* head + 1: nothing yet, not an error. */
	expect_status(readr(SID, K, 6, 10, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_uint_eq(r.info.head, 5);
	res_clear(&r);

	/* Beyond: the reader claims entries the log never committed. */
	expect_status(readr(SID, K, 7, 10, &r), EVENTLOG_AHEAD);
	ck_assert_uint_eq(r.n, 0);
	ck_assert(r.has_info);
	ck_assert_uint_eq(r.info.head, 5);
	ck_assert_uint_eq(r.info.oldest, 0);
	res_clear(&r);
	expect_status(readr(SID, K, 1000000, 10, &r), EVENTLOG_AHEAD);
	res_clear(&r);
	expect_status(readr(SID, K, UINT64_MAX, 10, &r), EVENTLOG_AHEAD);
	ck_assert_uint_eq(r.info.head, 5);
	res_clear(&r);

	/* A fresh stream: only entry 0 exists. */
	expect_status(create(SID, K + 1, NULL), EVENTLOG_OK);
	expect_status(readr(SID, K + 1, 1, 10, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 0);
	res_clear(&r);
	expect_status(readr(SID, K + 1, 2, 10, &r), EVENTLOG_AHEAD);
	ck_assert_uint_eq(r.info.head, 0);
	res_clear(&r);
}
END_TEST

/* Past stream_maxlen the oldest entries go; reading them says so. */
START_TEST(test_trim)
{
	struct eventlog_info	info;
	struct res		r;
	uint64_t		from;

	reopen(5, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 9);			/* entries 0..9, keeps 5..9 */

	expect_status(append(SID, K, 10, "{\"n\":10}", 0, &info, NULL),
	    EVENTLOG_OK);			/* keeps 6..10 */
	ck_assert_uint_eq(info.oldest, 6);
	ck_assert_uint_eq(info.head, 10);

	for (from = 0; from < 6; from++) {
		expect_status(readr(SID, K, from, 100, &r), EVENTLOG_TRIMMED);
		ck_assert_uint_eq(r.n, 0);
		ck_assert(r.has_info);
		ck_assert_uint_eq(r.info.oldest, 6);
		ck_assert_uint_eq(r.info.head, 10);
		ck_assert_int_eq(r.info.ended, 0);
		res_clear(&r);
	}
	for (from = 6; from <= 11; from++) {
		expect_status(readr(SID, K, from, 100, &r), EVENTLOG_OK);
		expect_entries(&r, from, (size_t)(11 - from));
		ck_assert_uint_eq(r.info.oldest, 6);
		res_clear(&r);
	}
	expect_status(readr(SID, K, 12, 100, &r), EVENTLOG_AHEAD);
	ck_assert_uint_eq(r.info.oldest, 6);
	ck_assert_uint_eq(r.info.head, 10);
	res_clear(&r);
}
END_TEST

/* stream_maxlen 1 keeps only the head; the priming entry goes first. */
START_TEST(test_trim_one)
{
	struct eventlog_info	info;
	struct res		r;

	reopen(1, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(create(SID, K, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.oldest, 0);
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_OK);
	ck_assert_uint_eq(r.n, 1);
	res_clear(&r);

	expect_status(append(SID, K, 1, "{\"n\":1}", 0, &info, NULL),
	    EVENTLOG_OK);
	ck_assert_uint_eq(info.oldest, 1);
	ck_assert_uint_eq(info.head, 1);
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_TRIMMED);
	ck_assert_uint_eq(r.info.oldest, 1);
	ck_assert_uint_eq(r.info.head, 1);
	res_clear(&r);
	expect_status(readr(SID, K, 1, 10, &r), EVENTLOG_OK);
	expect_entries(&r, 1, 1);
	res_clear(&r);
}
END_TEST

/*
 * The ring grows and wraps (a maxlen that is not a power of two, many times
 * over): after every append the retained window reads back whole.
 */
START_TEST(test_trim_ring)
{
	struct eventlog_info	info;
	struct res		r;
	char			buf[64];
	uint64_t		seq, oldest;
	const uint64_t		maxlen = 13;

	reopen((long long)maxlen, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(create(SID, K, NULL), EVENTLOG_OK);
	for (seq = 1; seq <= 100; seq++) {
		entry_text(buf, sizeof buf, seq);
		expect_status(append(SID, K, seq, buf, 0, &info, NULL),
		    EVENTLOG_OK);
		oldest = seq + 1 > maxlen ? seq + 1 - maxlen : 0;
		ck_assert_uint_eq(info.oldest, oldest);
		ck_assert_uint_eq(info.head, seq);

		expect_status(readr(SID, K, oldest, 1000, &r), EVENTLOG_OK);
		expect_entries(&r, oldest, (size_t)(seq - oldest + 1));
		res_clear(&r);
		if (oldest > 0) {
			expect_status(readr(SID, K, oldest - 1, 1000, &r),
			    EVENTLOG_TRIMMED);
			res_clear(&r);
		}
	}
}
END_TEST

START_TEST(test_stream_end)
{
	struct eventlog_info	info;
	struct res		r;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 2);
	expect_status(end(SID, K, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);
	ck_assert_int_eq(info.ended, 1);

	expect_status(append(SID, K, 3, "late", 0, &info, NULL),
	    EVENTLOG_ENDED);
	ck_assert_uint_eq(info.head, 2);

	expect_status(readr(SID, K, 1, 10, &r), EVENTLOG_OK);
	expect_entries(&r, 1, 2);
	ck_assert_int_eq(r.info.ended, 1);
	res_clear(&r);

	/* Ending twice is fine; the head does not move. */
	expect_status(end(SID, K, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);
	ck_assert_int_eq(info.ended, 1);

	/* An ended fresh stream keeps its priming entry. */
	expect_status(create(SID, K + 1, NULL), EVENTLOG_OK);
	expect_status(end(SID, K + 1, &info), EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 0);
	ck_assert_int_eq(info.ended, 1);
}
END_TEST

/* After stream_ttl an ended stream is gone, and reads say "expired". */
START_TEST(test_expiry)
{
	struct eventlog_info	info;
	struct res		r;
	uint64_t		ended_ms, elapsed;
	enum eventlog_status	status;

	reopen(1000, 1);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 3);
	fill(K + 1, 1);			/* stays open: never expires */
	fill(K + 2, 1);
	expect_status(append(SID, K + 2, 2, "r", EVENTLOG_FINAL, NULL, NULL),
	    EVENTLOG_OK);		/* ended by its final entry */
	ended_ms = clock_now_ms();	/* at or before the end commits */
	expect_status(end(SID, K, NULL), EVENTLOG_OK);

	/*
	 * Poll: nothing announces an expiry. It comes within about 2 s (a
	 * memory log's cron runs every second).
	 */
	for (;;) {
		status = readr(SID, K, 1, 10, &r);
		elapsed = clock_now_ms() - ended_ms;
		if (status == EVENTLOG_EXPIRED) {
			ck_assert(!r.has_info);
			res_clear(&r);
			break;
		}
		expect_status(status, EVENTLOG_OK);
		expect_entries(&r, 1, 3);
		res_clear(&r);
		ck_assert_msg(elapsed < 3500, "not expired after %llu ms",
		    (unsigned long long)elapsed);
		run_for(100);
	}
	ck_assert_msg(elapsed + backend->expiry_early_ms >= 1000,
	    "expired after only %llu ms", (unsigned long long)elapsed);

	/* Every op on it now says expired; K is never created again. */
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_EXPIRED);
	res_clear(&r);
	expect_status(readr(SID, K, 100, 10, &r), EVENTLOG_EXPIRED);
	res_clear(&r);
	expect_status(append(SID, K, 4, "x", 0, NULL, NULL), EVENTLOG_EXPIRED);
	expect_status(end(SID, K, NULL), EVENTLOG_EXPIRED);
	expect_status(create(SID, K, NULL), EVENTLOG_CONFLICT);

	/*
	 * The stream ended by FINAL ended before K: it is gone too, without
	 * waiting any longer.
	 */
	expect_status(readr(SID, K + 2, 0, 10, &r), EVENTLOG_EXPIRED);
	res_clear(&r);

	/* The open stream and the session are untouched. */
	expect_status(readr(SID, K + 1, 0, 10, &r), EVENTLOG_OK);
	expect_entries(&r, 0, 2);
	res_clear(&r);
	expect_status(append(SID, K + 1, 2, "{\"n\":2}", 0, &info, NULL),
	    EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_OK);
	res_clear(&r);

	/* A stream never created is unknown, not expired. */
	expect_status(readr(SID, K + 3, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);
}
END_TEST

START_TEST(test_not_found)
{
	struct res	r;
	int		has_info;

	/* Unknown session. */
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_NOT_FOUND);
	ck_assert_uint_eq(r.n, 0);
	ck_assert(!r.has_info);
	res_clear(&r);
	expect_status(append(SID, K, 1, "x", 0, NULL, NULL),
	    EVENTLOG_NOT_FOUND);
	expect_status(end(SID, K, NULL), EVENTLOG_NOT_FOUND);
	expect_status(create(SID, K, NULL), EVENTLOG_NOT_FOUND);
	expect_status(delete(SID), EVENTLOG_NOT_FOUND);

	/* Known session, unknown stream. */
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);
	expect_status(readr(SID, K + 1, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);
	expect_status(append(SID, K + 1, 1, "x", 0, NULL, &has_info),
	    EVENTLOG_NOT_FOUND);
	ck_assert(!has_info);
	expect_status(end(SID, K + 1, NULL), EVENTLOG_NOT_FOUND);

	/* A stream of another session is not reachable through this one. */
	expect_status(store(OTHER_SID, "m", 1), EVENTLOG_OK);
	expect_status(readr(OTHER_SID, K, 0, 10, &r), EVENTLOG_NOT_FOUND);
	res_clear(&r);
	expect_status(append(OTHER_SID, K, 2, "x", 0, NULL, NULL),
	    EVENTLOG_NOT_FOUND);
	expect_status(readr(SID, K, 0, 10, &r), EVENTLOG_OK);
	expect_entries(&r, 0, 2);
	res_clear(&r);
}
END_TEST

/*
 * A message is answered once, later, in order with the ops around it,
 * whether or not anybody hears it (nobody does here); a message to a
 * session the log does not have is sent all the same.
 */
START_TEST(test_publish)
{
	struct res	r[4];
	int		order = 0, i;

	memset(r, 0, sizeof r);
	for (i = 0; i < 4; i++)
		r[i].order = &order;
	eventlog_session_store(el, SID, "m", 1, done_cb, &r[0]);
	eventlog_publish(el, SID, "d 42 1", 6, done_cb, &r[1]);
	eventlog_session_load(el, SID, load_cb, &r[2]);
	eventlog_publish(el, OTHER_SID, "a x", 3, done_cb, &r[3]);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(r[i].calls, 0);
	for (i = 0; i < 4; i++)
		wait_for(&r[i]);
	spin();
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_int_eq(r[i].rank, i + 1);
	}
	ck_assert_str_eq(r[2].meta, "m");
	for (i = 0; i < 4; i++)
		res_clear(&r[i]);

	/* Freeing the log answers a message not sent yet: CANCELLED. */
	memset(r, 0, sizeof r);
	eventlog_publish(el, SID, "d 42 2", 6, done_cb, &r[0]);
	eventlog_free(el);
	el = NULL;
	ck_assert_int_eq(r[0].calls, 1);
	expect_status(r[0].status, EVENTLOG_CANCELLED);
	res_clear(&r[0]);
}
END_TEST

/* Freeing the log answers every queued op once, with CANCELLED. */
START_TEST(test_free_cancels)
{
	struct res	r[8];
	int		i;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);

	memset(r, 0, sizeof r);
	eventlog_session_store(el, SID, "{}", 2, done_cb, &r[0]);
	eventlog_session_load(el, SID, load_cb, &r[1]);
	eventlog_stream_create(el, SID, K + 1, append_cb, &r[2]);
	eventlog_append(el, SID, K, 2, "x", 1, 0, append_cb, &r[3]);
	eventlog_read(el, SID, K, 0, 10, read_cb, &r[4]);
	eventlog_stream_end(el, SID, K, append_cb, &r[5]);
	eventlog_session_delete(el, SID, done_cb, &r[6]);
	eventlog_read(el, OTHER_SID, K, 0, 10, read_cb, &r[7]);

	eventlog_free(el);
	el = NULL;
	for (i = 0; i < 8; i++) {
		ck_assert_msg(r[i].calls == 1, "op %d: %d calls", i,
		    r[i].calls);
		expect_status(r[i].status, EVENTLOG_CANCELLED);
	}
	ck_assert_uint_eq(r[4].n, 0);
	ck_assert_ptr_null(r[1].meta);

	/* Nothing fires later either. */
	spin();
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		res_clear(&r[i]);
	}
}
END_TEST

/* A callback that queues more work while the log is being freed. */
static struct res	cancel_inner;

static void
cancel_outer_cb(enum eventlog_status status, void *arg)
{
	res_called(arg, status, NULL);
	eventlog_session_load(el, SID, load_cb, &cancel_inner);
}

/* Work queued by a callback during the free is answered CANCELLED too. */
START_TEST(test_free_cancels_nested)
{
	struct res	outer;
	struct eventlog	*log = el;

	memset(&outer, 0, sizeof outer);
	memset(&cancel_inner, 0, sizeof cancel_inner);
	eventlog_session_store(el, SID, "m", 1, cancel_outer_cb, &outer);
	eventlog_free(log);
	el = NULL;
	ck_assert_int_eq(outer.calls, 1);
	expect_status(outer.status, EVENTLOG_CANCELLED);
	ck_assert_int_eq(cancel_inner.calls, 1);
	expect_status(cancel_inner.status, EVENTLOG_CANCELLED);
	res_clear(&cancel_inner);
}
END_TEST

/* Task records: what one task put or get said. */
static void
task_cb(enum eventlog_status status, uint64_t rev, const char *rec,
    size_t len, void *arg)
{
	struct res	*r = arg;

	res_called(r, status, NULL);
	r->seq[0] = rev;
	free(r->meta);
	r->meta = rec != NULL ? copy(rec, len) : NULL;
	r->metalen = len;
}

enum eventlog_status
tput(const char *tid, uint64_t rev, const char *rec, uint64_t ttl_ms)
{
	return (tput_final(tid, rev, rec, ttl_ms, 0));
}

/* A put saying whether the record is final (its task finished). */
enum eventlog_status
tput_final(const char *tid, uint64_t rev, const char *rec, uint64_t ttl_ms,
    int final)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_task_put(el, tid, rev, rec, strlen(rec), ttl_ms, final,
	    done_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	status = r.status;
	res_clear(&r);
	return (status);
}

/* The record (allocated, or NULL) and its revision in *rev. */
enum eventlog_status
tget(const char *tid, uint64_t *rev, char **rec)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_task_get(el, tid, task_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	status = r.status;
	*rev = r.seq[0];
	*rec = r.meta;
	r.meta = NULL;
	res_clear(&r);
	return (status);
}

/*
 * A task record is compare-and-set on its revision: created once, each
 * later revision written over the one before it only, and apart from
 * sessions of the same id.
 */
START_TEST(test_task_records)
{
	uint64_t	 rev;
	char		*rec;

	expect_status(tget(SID, &rev, &rec), EVENTLOG_NOT_FOUND);
	ck_assert_ptr_null(rec);
	/* No revision 2 of a record that does not exist. */
	expect_status(tput(SID, 2, "{\"v\":2}", 60000), EVENTLOG_NOT_FOUND);
	expect_status(tget(SID, &rev, &rec), EVENTLOG_NOT_FOUND);

	expect_status(tput(SID, 1, "{\"v\":1}", 60000), EVENTLOG_OK);
	expect_status(tget(SID, &rev, &rec), EVENTLOG_OK);
	ck_assert_uint_eq(rev, 1);
	ck_assert_str_eq(rec, "{\"v\":1}");
	free(rec);

	/* Created once; a stale or a skipped revision is refused. */
	expect_status(tput(SID, 1, "{\"v\":\"again\"}", 60000),
	    EVENTLOG_CONFLICT);
	expect_status(tput(SID, 3, "{\"v\":3}", 60000), EVENTLOG_CONFLICT);
	expect_status(tput(SID, 2, "{\"v\":2} with a space", 60000),
	    EVENTLOG_OK);
	expect_status(tput(SID, 2, "{\"v\":\"lost race\"}", 60000),
	    EVENTLOG_CONFLICT);
	expect_status(tget(SID, &rev, &rec), EVENTLOG_OK);
	ck_assert_uint_eq(rev, 2);
	ck_assert_str_eq(rec, "{\"v\":2} with a space");
	free(rec);

	/* Tasks and sessions of one id are separate; so are two tasks. */
	expect_status(tget(OTHER_SID, &rev, &rec), EVENTLOG_NOT_FOUND);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(delete(SID), EVENTLOG_OK);
	expect_status(tget(SID, &rev, &rec), EVENTLOG_OK);
	ck_assert_uint_eq(rev, 2);
	free(rec);
}
END_TEST

/* A record lives ttl_ms from its last put; then it reads as not found. */
START_TEST(test_task_expiry)
{
	uint64_t		 rev, start;
	char			*rec;
	enum eventlog_status	 status;

	expect_status(tput(SID, 1, "short", 300), EVENTLOG_OK);
	expect_status(tput(OTHER_SID, 1, "long", 600000), EVENTLOG_OK);
	start = clock_now_ms();
	for (;;) {
		status = tget(SID, &rev, &rec);
		free(rec);
		if (status == EVENTLOG_NOT_FOUND)
			break;
		expect_status(status, EVENTLOG_OK);
		ck_assert_msg(clock_now_ms() - start < WAIT_MS,
		    "task record not expired");
		run_for(50);
	}
	/* Gone: no later revision, and its id may be created again. */
	expect_status(tput(SID, 2, "late", 60000), EVENTLOG_NOT_FOUND);
	expect_status(tput(SID, 1, "new", 60000), EVENTLOG_OK);
	expect_status(tget(OTHER_SID, &rev, &rec), EVENTLOG_OK);
	ck_assert_str_eq(rec, "long");
	free(rec);
}
END_TEST

struct ring {
	struct res	 r;
	uint64_t	 generation;
	/* previous, current, next */
	char		 keys[3][EVENTLOG_KEY_MAX + 1];
};

static void
ring_cb(enum eventlog_status status, const struct eventlog_keyring *ring,
    void *arg)
{
	struct ring	*rg = arg;

	res_called(&rg->r, status, NULL);
	if (status != EVENTLOG_OK) {
		ck_assert_ptr_null(ring);
		return;
	}
	rg->generation = ring->generation;
	strlcpy(rg->keys[0], ring->previous, sizeof rg->keys[0]);
	strlcpy(rg->keys[1], ring->current, sizeof rg->keys[1]);
	strlcpy(rg->keys[2], ring->next, sizeof rg->keys[2]);
}

static void
ring(uint64_t period_ms, const char *fresh1, const char *fresh2,
    struct ring *rg)
{
	memset(rg, 0, sizeof *rg);
	eventlog_keyring(el, period_ms, fresh1, fresh2, ring_cb, rg);
	ck_assert_int_eq(rg->r.calls, 0);
	wait_for(&rg->r);
	expect_status(rg->r.status, EVENTLOG_OK);
}

static void
expect_ring(const struct ring *rg, uint64_t generation, const char *previous,
    const char *current, const char *next)
{
	ck_assert_uint_eq(rg->generation, generation);
	ck_assert_str_eq(rg->keys[0], previous);
	ck_assert_str_eq(rg->keys[1], current);
	ck_assert_str_eq(rg->keys[2], next);
}

/*
 * The keyring: created by the first call from its fresh keys, answered
 * unchanged within a period whatever fresh keys later calls bring, and
 * rotated by the first call after one: each key is next, then current,
 * then previous, so a key is known a period before it signs.
 */
START_TEST(test_keyring)
{
	struct ring	rg;

	if (backend->forget_keyring != NULL)
		backend->forget_keyring();
	ring(60000, "key-a", "key-b", &rg);
	expect_ring(&rg, 1, "", "key-a", "key-b");
	ring(60000, "key-c", "key-d", &rg);
	expect_ring(&rg, 1, "", "key-a", "key-b");

	/* A period of 1 ms: the next call, later, rotates. */
	if (backend->forget_keyring != NULL)
		backend->forget_keyring();
	else
		reopen(1000, 300);
	ring(1, "key-e", "key-f", &rg);
	expect_ring(&rg, 1, "", "key-e", "key-f");
	run_for(5);
	ring(1, "key-g", "key-h", &rg);
	expect_ring(&rg, 2, "key-e", "key-f", "key-g");
	run_for(5);
	ring(60000, "key-i", "key-j", &rg);
	expect_ring(&rg, 3, "key-f", "key-g", "key-i");
	run_for(5);
	ring(60000, "key-k", "key-l", &rg);
	expect_ring(&rg, 3, "key-f", "key-g", "key-i");
}
END_TEST

/* Freeing an idle log, and one with data in it, is clean (valgrind). */
START_TEST(test_free_idle)
{
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 50);
	expect_status(end(SID, K, NULL), EVENTLOG_OK);
	fill(K + 1, 3);
	expect_status(store(OTHER_SID, "m", 1), EVENTLOG_OK);
	expect_status(tput(SID, 1, "task", 60000), EVENTLOG_OK);
	eventlog_free(el);
	el = NULL;
	eventlog_free(NULL);
}
END_TEST

void
eventlog_cases_add(Suite *s, const struct eventlog_cases_backend *b)
{
	TCase	*tc;

	backend = b;

	tc = tcase_create("async");
	tcase_add_checked_fixture(tc, eventlog_cases_setup,
	    eventlog_cases_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_never_inline);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_create_with_appends);
	tcase_add_test(tc, test_create_failed_appends);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_free_cancels);
	tcase_add_test(tc, test_free_cancels_nested);
	tcase_add_test(tc, test_free_idle);
	tcase_add_test(tc, test_publish);
	suite_add_tcase(s, tc);

	tc = tcase_create("semantics");
	tcase_add_checked_fixture(tc, eventlog_cases_setup,
	    eventlog_cases_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_session);
	tcase_add_test(tc, test_session_update);
	tcase_add_test(tc, test_session_delete_streams);
	tcase_add_test(tc, test_stream_create);
	tcase_add_test(tc, test_append_answer);
	tcase_add_test(tc, test_compare_and_append);
	tcase_add_test(tc, test_final);
	tcase_add_test(tc, test_read_positions);
	tcase_add_test(tc, test_read_ahead);
	tcase_add_test(tc, test_trim);
	tcase_add_test(tc, test_trim_one);
	tcase_add_test(tc, test_trim_ring);
	tcase_add_test(tc, test_stream_end);
	tcase_add_test(tc, test_expiry);
	tcase_add_test(tc, test_not_found);
	tcase_add_test(tc, test_task_records);
	tcase_add_test(tc, test_task_expiry);
	tcase_add_test(tc, test_keyring);
	suite_add_tcase(s, tc);
}
