/*
 * Unit tests for lease.c's log side, in process, on the memory event log
 * (which has no notes, so no leases: the checks themselves run against
 * Redis in tests/e2e/test_redis.py). What is tested here:
 *
 * - the error answers: one JSON-RPC error per request id owed, after the
 *   head, the last one final; compare-and-append, so a second answerer
 *   (or a late owner) is refused; no ids: the stream is ended bare; the
 *   callback runs once, never inside the call;
 * - settling: the ids are answered once the log answers, the watcher is
 *   told what was committed, and a session that goes (lease_forget)
 *   hears nothing more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "unit.h"
#include "world.h"

#include "conf.h"
#include "eventlog.h"
#include "lease.h"
#include "log.h"
#include "server.h"

#define SID	"0123456789abcdef0123456789abcdef"
#define K	4242

static void
done_cb(enum eventlog_status status, void *arg)
{
	*(int *)arg = 1;
}

static void
appended_cb(enum eventlog_status status, const struct eventlog_info *info,
    void *arg)
{
	ck_assert_int_eq(status, EVENTLOG_OK);
	(*(int *)arg)++;
}

/* A session with stream K holding entries 0..2. */
static void
setup(void)
{
	int	 stored = 0, appended = 0;

	world_setup(NULL);
	world_start();
	eventlog_session_store(el, SID, "{}", 2, done_cb, &stored);
	eventlog_stream_create(el, SID, K, appended_cb, &appended);
	eventlog_append(el, SID, K, 1, "one", 3, 0, appended_cb, &appended);
	eventlog_append(el, SID, K, 2, "two", 3, 0, appended_cb, &appended);
	unit_turns(base, 5);
	ck_assert_int_eq(stored, 1);
	ck_assert_int_eq(appended, 3);
}

struct entries {
	int			 calls;
	enum eventlog_status	 status;
	uint64_t		 head;
	int			 ended;
	size_t			 n;
	char			 data[8][256];
};

static void
read_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct entries	*r = arg;
	size_t		 i;

	r->calls++;
	r->status = status;
	if (info != NULL) {
		r->head = info->head;
		r->ended = info->ended;
	}
	for (i = 0; i < n && i < 8; i++)
		snprintf(r->data[i], sizeof r->data[i], "%.*s",
		    (int)entries[i].len, entries[i].data);
	r->n = n;
}

static struct entries
log_from(uint64_t from)
{
	struct entries	r;

	memset(&r, 0, sizeof r);
	eventlog_read(el, SID, K, from, 8, read_cb, &r);
	unit_turns(base, 5);
	ck_assert_int_eq(r.calls, 1);
	return (r);
}

struct answered {
	int			 calls;
	enum eventlog_status	 status;
	int			 committed;
	uint64_t		 head;
	int			 ended;
};

static void
answered_cb(const char *sid, uint64_t k, enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct answered	*a = arg;

	ck_assert_str_eq(sid, SID);
	ck_assert_uint_eq(k, K);
	a->calls++;
	a->status = status;
	a->committed = info != NULL;
	if (info != NULL) {
		a->head = info->head;
		a->ended = info->ended;
	}
}

static cJSON *
ids(const char *json)
{
	cJSON	*a = cJSON_Parse(json);

	ck_assert(cJSON_IsArray(a));
	return (a);
}

/* Each id owed gets an error after the head, the last one final. */
START_TEST(test_answer_after_head)
{
	struct answered	 a = { 0 };
	struct entries	 r;
	cJSON		*owed = ids("[7,\"x\"]"), *msg;

	lease_answer(SID, K, owed, 2, 2, "gone", answered_cb, &a);
	ck_assert_int_eq(a.calls, 0);		/* never inside the call */
	unit_turns(base, 5);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.status, EVENTLOG_OK);
	ck_assert_int_eq(a.committed, 1);
	ck_assert_uint_eq(a.head, 4);
	ck_assert_int_eq(a.ended, 1);

	r = log_from(3);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_int_eq(r.ended, 1);
	msg = cJSON_Parse(r.data[0]);
	ck_assert_int_eq(cJSON_GetObjectItem(msg, "id")->valueint, 7);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(msg,
	    "error"), "message")->valuestring, "gone");
	cJSON_Delete(msg);
	msg = cJSON_Parse(r.data[1]);
	ck_assert_str_eq(cJSON_GetObjectItem(msg, "id")->valuestring, "x");
	cJSON_Delete(msg);
	cJSON_Delete(owed);
}
END_TEST

/* Compare-and-append: whoever answers second is refused, not misplaced. */
START_TEST(test_answer_twice_is_refused)
{
	struct answered	 a = { 0 }, b = { 0 };
	struct entries	 r;
	cJSON		*owed = ids("[7]");

	lease_answer(SID, K, owed, 2, 2, "first", answered_cb, &a);
	lease_answer(SID, K, owed, 2, 2, "second", answered_cb, &b);
	unit_turns(base, 5);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.status, EVENTLOG_OK);
	ck_assert_int_eq(b.calls, 1);
	ck_assert_int_ne(b.status, EVENTLOG_OK);
	ck_assert_int_eq(b.committed, 0);
	r = log_from(3);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_ptr_nonnull(strstr(r.data[0], "first"));
	cJSON_Delete(owed);
}
END_TEST

/* No ids on record: the stream ends bare, so its views do not hang. */
START_TEST(test_answer_nothing_owed_ends)
{
	struct answered	 a = { 0 };
	struct entries	 r;
	cJSON		*owed = ids("[]");

	lease_answer(SID, K, owed, 2, 2, "gone", answered_cb, &a);
	unit_turns(base, 5);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.status, EVENTLOG_OK);
	ck_assert_uint_eq(a.head, 2);
	r = log_from(3);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(r.ended, 1);
	cJSON_Delete(owed);
}
END_TEST

struct told {
	int			 n;
	enum lease_event	 ev[8];
	uint64_t		 head[8];
};

static void
settle_cb(const char *sid, uint64_t k, enum lease_event ev,
    enum eventlog_status status, uint64_t head, void *arg)
{
	struct told	*t = arg;

	ck_assert_int_lt(t->n, 8);
	t->ev[t->n] = ev;
	t->head[t->n] = head;
	t->n++;
}

/*
 * The log answers again: the ids are answered after what it holds (entry 2
 * landed although this process saw its append fail at 1), the watcher is
 * told, and the settle is over.
 */
START_TEST(test_settle_answers_after_the_log)
{
	struct told	 t = { 0 };
	struct entries	 r;
	cJSON		*owed = ids("[7]");

	lease_settle(SID, K, 1, 1, owed, settle_cb, &t);
	cJSON_Delete(owed);
	ck_assert_int_eq(lease_settling(SID, K), 1);
	ck_assert_int_eq(lease_settling(SID, K + 1), 0);
	ck_assert_int_eq(t.n, 0);
	unit_turns(base, 10);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(t.ev[0], LEASE_COMMITTED);
	ck_assert_uint_eq(t.head[0], 3);
	ck_assert_int_eq(lease_settling(SID, K), 0);
	r = log_from(3);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_int_eq(r.ended, 1);
	ck_assert_ptr_nonnull(strstr(r.data[0], "event log was unavailable"));
}
END_TEST

/* The session goes while a try is in flight: nothing more is told. */
START_TEST(test_settle_forgotten)
{
	struct told	 t = { 0 };
	struct entries	 r;
	cJSON		*owed = ids("[7]");

	lease_settle(SID, K, 2, 2, owed, settle_cb, &t);
	cJSON_Delete(owed);
	lease_forget(SID);
	ck_assert_int_eq(lease_settling(SID, K), 0);
	unit_turns(base, 10);
	ck_assert_int_eq(t.n, 0);
	r = log_from(3);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(r.ended, 0);
}
END_TEST

/*
 * The lease lives lease_ttl; its owner renews it three times per lease,
 * but never less often than every second (two renewals may be lost or
 * late before it lapses), and a check every LEASE_CHECK_MS finds a dead
 * owner within lease_ttl + 1 s.
 */
START_TEST(test_renewal_cadence)
{
	struct conf	*def = conf_default();

	ck_assert_int_eq(def->lease_ttl, 5);
	conf_free(def);
	conf->lease_ttl = 1;
	ck_assert_uint_eq(lease_ttl_ms(), 1000);
	ck_assert_uint_eq(lease_renew_ms(), 333);
	conf->lease_ttl = 3;
	ck_assert_uint_eq(lease_renew_ms(), 1000);
	conf->lease_ttl = 300;
	ck_assert_uint_eq(lease_ttl_ms(), 300000);
	ck_assert_uint_eq(lease_renew_ms(), 1000);
	ck_assert_uint_lt(LEASE_CHECK_MS, 1000);
}
END_TEST

static Suite *
lease_suite(void)
{
	Suite	*s = suite_create("lease");
	TCase	*tc;

	tc = tcase_create("answer");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_answer_after_head);
	tcase_add_test(tc, test_answer_twice_is_refused);
	tcase_add_test(tc, test_answer_nothing_owed_ends);
	tcase_add_test(tc, test_renewal_cadence);
	suite_add_tcase(s, tc);

	tc = tcase_create("settle");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_settle_answers_after_the_log);
	tcase_add_test(tc, test_settle_forgotten);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(lease_suite)
