/*
 * Unit tests for the event-log API on the memory backend: status names and
 * stream ids; the behavioural suite every backend passes (eventlog_cases.c);
 * and what only the memory backend has: the per-session stream budget, and
 * watches that do nothing.
 */
#include <stdint.h>

#include "unit.h"

#include "conf.h"
#include "eventlog.h"
#include "eventlog_cases.h"

static void
memory_configure(struct conf *c)
{
	c->eventlog = CONF_EVENTLOG_MEMORY;
}

/*
 * Everything happens in this process, on the next loop turns. Stream 0 is
 * created like any other (the API does not rule it out; redis cannot).
 */
static const struct eventlog_cases_backend memory_backend = {
	.configure = memory_configure,
	.no_io = 1,
	.expiry_early_ms = 0,
};

START_TEST(test_status_names)
{
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_OK), "ok");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_CONFLICT), "conflict");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_NOT_FOUND),
	    "not-found");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_TRIMMED), "trimmed");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_EXPIRED), "expired");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_AHEAD), "ahead");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_ENDED), "ended");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_CANCELLED),
	    "cancelled");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_FULL), "full");
	ck_assert_str_eq(eventlog_status_name(EVENTLOG_STATUS_MAX), "unknown");
}
END_TEST

START_TEST(test_new_stream_id)
{
	uint64_t	a, b;
	int		i;

	for (i = 0; i < 1000; i++) {
		a = eventlog_new_stream_id();
		ck_assert_uint_ne(a, 0);
		ck_assert_uint_le(a, 0xffffffffffffULL);
	}
	a = eventlog_new_stream_id();
	b = eventlog_new_stream_id();
	ck_assert_uint_ne(a, b);
}
END_TEST

/* What only the memory backend has. */

/*
 * At session_max_streams the oldest finished stream expires early; an open
 * one never does.
 */
START_TEST(test_stream_budget)
{
	struct res	r;

	conf->session_max_streams = 3;
	reopen(1000, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);
	fill(K + 1, 1);
	expect_status(end(SID, K + 1, NULL), EVENTLOG_OK);
	expect_status(end(SID, K, NULL), EVENTLOG_OK);
	fill(K + 2, 1);
	/* Full: K + 1 ended first, so it makes room for K + 3. */
	fill(K + 3, 1);
	expect_status(readr(SID, K + 1, 1, 10, &r), EVENTLOG_EXPIRED);
	res_clear(&r);
	expect_status(readr(SID, K, 1, 10, &r), EVENTLOG_OK);
	res_clear(&r);
	/* Only open streams left but one: K goes next, K + 2 stays. */
	fill(K + 4, 1);
	expect_status(readr(SID, K, 1, 10, &r), EVENTLOG_EXPIRED);
	res_clear(&r);
	expect_status(readr(SID, K + 2, 1, 10, &r), EVENTLOG_OK);
	res_clear(&r);
}
END_TEST

/*
 * The memory log holds at most max_tasks task records: a create beyond
 * is FULL, never an eviction of a live record; an expired one makes room.
 */
START_TEST(test_task_budget)
{
	uint64_t	 rev;
	char		*rec;

	conf->max_tasks = 2;
	reopen(1000, 300);
	expect_status(tput("t1", 1, "a", 600000), EVENTLOG_OK);
	expect_status(tput("t2", 1, "b", 200), EVENTLOG_OK);
	expect_status(tput("t3", 1, "c", 600000), EVENTLOG_FULL);
	/* Later revisions of records it holds still go in. */
	expect_status(tput("t1", 2, "a2", 600000), EVENTLOG_OK);
	while (tget("t2", &rev, &rec) == EVENTLOG_OK) {
		free(rec);
		run_for(50);
	}
	expect_status(tput("t3", 1, "c", 600000), EVENTLOG_OK);
	expect_status(tget("t1", &rev, &rec), EVENTLOG_OK);
	ck_assert_uint_eq(rev, 2);
	ck_assert_str_eq(rec, "a2");
	free(rec);
}
END_TEST

/*
 * Full, the memory log forgets a finished record (put final) to make
 * room for a new one: the one finished longest ago, whatever the order
 * they were created in; never a record whose task runs.
 */
START_TEST(test_task_evicts_finished)
{
	uint64_t	 rev;
	char		*rec;

	conf->max_tasks = 3;
	reopen(1000, 300);
	expect_status(tput("t1", 1, "a", 600000), EVENTLOG_OK);
	expect_status(tput("t2", 1, "b", 600000), EVENTLOG_OK);
	expect_status(tput("t3", 1, "c", 600000), EVENTLOG_OK);
	/* None finished: a fourth is refused. */
	expect_status(tput("t4", 1, "d", 600000), EVENTLOG_FULL);
	/* t2 finishes, then t1: t2 is the one finished longest ago. */
	expect_status(tput_final("t2", 2, "b2", 600000, 1), EVENTLOG_OK);
	expect_status(tput_final("t1", 2, "a2", 600000, 1), EVENTLOG_OK);
	expect_status(tput("t4", 1, "d", 600000), EVENTLOG_OK);
	expect_status(tget("t2", &rev, &rec), EVENTLOG_NOT_FOUND);
	expect_status(tget("t1", &rev, &rec), EVENTLOG_OK);
	ck_assert_str_eq(rec, "a2");
	free(rec);
	expect_status(tput("t5", 1, "e", 600000), EVENTLOG_OK);
	expect_status(tget("t1", &rev, &rec), EVENTLOG_NOT_FOUND);
	/* Only running tasks' records are left: full again. */
	expect_status(tput("t6", 1, "f", 600000), EVENTLOG_FULL);
	expect_status(tget("t3", &rev, &rec), EVENTLOG_OK);
	free(rec);
	/* A final record written again keeps its place and stays final. */
	expect_status(tput_final("t3", 2, "c2", 600000, 1), EVENTLOG_OK);
	expect_status(tput_final("t3", 3, "c3", 600000, 1), EVENTLOG_OK);
	expect_status(tput("t6", 1, "f", 600000), EVENTLOG_OK);
	expect_status(tget("t3", &rev, &rec), EVENTLOG_NOT_FOUND);
}
END_TEST

static void
watch_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	(*(int *)arg)++;
}

/*
 * Nothing commits to a memory log but this process, whose session layer
 * sees its own commits: the log is not shared, and a watch is a no-op.
 */
START_TEST(test_watch_memory)
{
	int	calls = 0;

	ck_assert_int_eq(eventlog_shared(el), 0);
	eventlog_watch(el, SID, watch_cb, NULL, &calls);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 2);
	expect_status(end(SID, K, NULL), EVENTLOG_OK);
	run_for(100);
	eventlog_unwatch(el, SID, watch_cb, NULL, &calls);
	ck_assert_int_eq(calls, 0);
}
END_TEST

static Suite *
eventlog_suite(void)
{
	Suite	*s = suite_create("eventlog");
	TCase	*tc;

	tc = tcase_create("api");
	tcase_add_test(tc, test_status_names);
	tcase_add_test(tc, test_new_stream_id);
	suite_add_tcase(s, tc);

	eventlog_cases_add(s, &memory_backend);

	tc = tcase_create("memory");
	tcase_add_checked_fixture(tc, eventlog_cases_setup,
	    eventlog_cases_teardown);
	tcase_add_test(tc, test_stream_budget);
	tcase_add_test(tc, test_watch_memory);
	tcase_add_test(tc, test_task_budget);
	tcase_add_test(tc, test_task_evicts_finished);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(eventlog_suite)
