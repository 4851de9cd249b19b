/*
 * Unit tests for session.c: ids, the table, max_sessions, close (out of the
 * table at once, memory released once the loop has answered the log ops;
 * run under valgrind), the stored meta, idle expiry, and the revision and
 * log-level helpers.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "unit.h"
#include "world.h"

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "mcp.h"
#include "server.h"
#include "session.h"
#include "stream.h"

#define V_OLD		"2025-03-26"
#define V_MID		"2025-06-18"
#define V_NEW		"2025-11-25"
#define MAX_TURNS	1000

static void
setup(void)
{
	world_setup(NULL);
	world_start();
}

/* Loads a session's meta from the log; returns the status. */
struct load_res {
	int			 calls;
	enum eventlog_status	 status;
	char			*meta;
};

static void
load_cb(enum eventlog_status status, const char *meta, size_t len, void *arg)
{
	struct load_res	*r = arg;

	r->calls++;
	r->status = status;
	if (meta != NULL) {
		r->meta = malloc(len + 1);
		memcpy(r->meta, meta, len);
		r->meta[len] = '\0';
	}
}

static enum eventlog_status
load(const char *id, char **meta)
{
	struct load_res	r;
	int		n;

	memset(&r, 0, sizeof r);
	eventlog_session_load(el, id, load_cb, &r);
	for (n = 0; r.calls == 0 && n < MAX_TURNS; n++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert_int_eq(r.calls, 1);
	if (meta != NULL)
		*meta = r.meta;
	else
		free(r.meta);
	return (r.status);
}

static int
is_lower_hex(const char *s)
{
	for (; *s != '\0'; s++) {
		if (!isdigit((unsigned char)*s) && (*s < 'a' || *s > 'f'))
			return (0);
	}
	return (1);
}

START_TEST(test_create_find)
{
	struct session	*s1, *s2;

	s1 = world_session(V_NEW);
	s2 = world_session(V_OLD);
	ck_assert_ptr_ne(s1, s2);
	ck_assert_uint_eq(session_count(), 2);

	ck_assert_uint_eq(strlen(session_id(s1)), SESSION_ID_LEN);
	ck_assert_uint_eq(strlen(session_id(s2)), SESSION_ID_LEN);
	ck_assert(is_lower_hex(session_id(s1)));
	ck_assert(is_lower_hex(session_id(s2)));
	ck_assert_str_ne(session_id(s1), session_id(s2));

	ck_assert_ptr_eq(session_find(session_id(s1)), s1);
	ck_assert_ptr_eq(session_find(session_id(s2)), s2);

	ck_assert_str_eq(session_version(s1), V_NEW);
	ck_assert_str_eq(session_version(s2), V_OLD);
	ck_assert_int_eq(session_closed(s1), 0);
	ck_assert_ptr_nonnull(session_standalone(s1));
	ck_assert_uint_eq(session_stream_count(s1), 1);

	ck_assert_ptr_eq(server.conf, conf);
	ck_assert_ptr_eq(server.eventlog, el);
	ck_assert_ptr_eq(server.base, base);
}
END_TEST

/* Many sessions: all ids distinct, all found. */
START_TEST(test_many)
{
	struct session	*s[300];
	size_t		 i, j, n = sizeof s / sizeof s[0];

	for (i = 0; i < n; i++)
		s[i] = world_session(V_MID);
	ck_assert_uint_eq(session_count(), n);
	for (i = 0; i < n; i++) {
		ck_assert_ptr_eq(session_find(session_id(s[i])), s[i]);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(session_id(s[i]), session_id(s[j]));
	}
	unit_turns(base, 5);
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(session_find(session_id(s[i])), s[i]);
}
END_TEST

START_TEST(test_find_unknown)
{
	struct session	*s;
	char		 id[SESSION_ID_LEN + 8];
	size_t		 i;

	s = world_session(V_NEW);

	ck_assert_ptr_null(session_find(""));
	ck_assert_ptr_null(session_find("abc"));
	ck_assert_ptr_null(session_find("0123456789abcdef0123456789abcdef"));

	/* Prefix (31 chars) and one extra char (33). */
	memcpy(id, session_id(s), SESSION_ID_LEN - 1);
	id[SESSION_ID_LEN - 1] = '\0';
	ck_assert_ptr_null(session_find(id));
	snprintf(id, sizeof id, "%s0", session_id(s));
	ck_assert_ptr_null(session_find(id));
	snprintf(id, sizeof id, " %s", session_id(s));
	ck_assert_ptr_null(session_find(id));

	/* Right length, wrong characters. */
	strcpy(id, session_id(s));
	for (i = 0; i < SESSION_ID_LEN; i++)
		id[i] = (char)toupper((unsigned char)id[i]);
	if (strcmp(id, session_id(s)) != 0)
		ck_assert_ptr_null(session_find(id));
	strcpy(id, session_id(s));
	id[0] = 'g';
	ck_assert_ptr_null(session_find(id));
	id[0] = '-';
	ck_assert_ptr_null(session_find(id));
	strcpy(id, session_id(s));
	id[SESSION_ID_LEN - 1] = id[SESSION_ID_LEN - 1] == 'a' ? 'b' : 'a';
	ck_assert_ptr_null(session_find(id));
	memset(id, 'z', SESSION_ID_LEN);
	id[SESSION_ID_LEN] = '\0';
	ck_assert_ptr_null(session_find(id));

	ck_assert_ptr_eq(session_find(session_id(s)), s);
}
END_TEST

START_TEST(test_max_sessions)
{
	struct session	*s[3], *extra;
	int		 i;

	conf->max_sessions = 3;
	for (i = 0; i < 3; i++)
		s[i] = world_session(V_NEW);
	extra = session_create(V_NEW, NULL, NULL, NULL, NULL, NULL);
	ck_assert_ptr_null(extra);
	ck_assert_uint_eq(session_count(), 3);

	/* A closed session frees its slot at once. */
	session_close(s[1], "test");
	ck_assert_uint_eq(session_count(), 2);
	extra = world_session(V_NEW);
	ck_assert_uint_eq(session_count(), 3);
	ck_assert_ptr_null(session_create(V_NEW, NULL, NULL, NULL, NULL, NULL));
	ck_assert_ptr_eq(session_find(session_id(extra)), extra);
	ck_assert_ptr_eq(session_find(session_id(s[0])), s[0]);
}
END_TEST

/* Closed before the loop ever ran: the queued log ops still settle it. */
START_TEST(test_close_at_once)
{
	struct session	*s, *other;
	char		 id[SESSION_ID_LEN + 1];

	other = world_session(V_NEW);
	s = world_session(V_NEW);
	strcpy(id, session_id(s));
	ck_assert_uint_eq(session_count(), 2);

	session_close(s, "test");
	ck_assert_ptr_null(session_find(id));
	ck_assert_uint_eq(session_count(), 1);
	/* Still valid until the loop answers the pending log ops. */
	ck_assert_int_eq(session_closed(s), 1);
	ck_assert_ptr_null(session_standalone(s));
	ck_assert_uint_eq(session_stream_count(s), 0);
	session_close(s, "again");		/* idempotent */
	ck_assert_uint_eq(session_count(), 1);

	unit_turns(base, 10);
	/* Gone from the log too; the other session is untouched. */
	ck_assert_int_eq(load(id, NULL), EVENTLOG_NOT_FOUND);
	ck_assert_ptr_eq(session_find(session_id(other)), other);
	ck_assert_int_eq(load(session_id(other), NULL), EVENTLOG_OK);
}
END_TEST

/* Closed after it settled in the log. */
START_TEST(test_close_later)
{
	struct session	*s;
	char		 id[SESSION_ID_LEN + 1];

	s = world_session(V_MID);
	strcpy(id, session_id(s));
	unit_turns(base, 10);
	ck_assert_int_eq(load(id, NULL), EVENTLOG_OK);

	session_close(s, "test");
	ck_assert_ptr_null(session_find(id));
	ck_assert_uint_eq(session_count(), 0);
	unit_turns(base, 10);
	ck_assert_int_eq(load(id, NULL), EVENTLOG_NOT_FOUND);
}
END_TEST

/* A reference held elsewhere keeps the memory; the last unref frees it. */
START_TEST(test_close_ref)
{
	struct session	*s;

	s = world_session(V_NEW);
	session_ref(s);
	session_close(s, "test");
	unit_turns(base, 10);
	ck_assert_int_eq(session_closed(s), 1);
	ck_assert_str_eq(session_version(s), V_NEW);
	ck_assert_uint_eq(strlen(session_id(s)), SESSION_ID_LEN);
	session_unref(s);
}
END_TEST

/*
 * Shutdown releases every session from the process but leaves it in the
 * log, for the next process (or another instance) to carry on; every
 * session object is freed once the loop has run.
 */
START_TEST(test_shutdown)
{
	struct session	*s1, *s2;
	char		 id1[SESSION_ID_LEN + 1], id2[SESSION_ID_LEN + 1];

	s1 = world_session(V_NEW);
	s2 = world_session(V_NEW);
	strcpy(id1, session_id(s1));
	strcpy(id2, session_id(s2));
	unit_turns(base, 5);
	session_shutdown();
	ck_assert_uint_eq(session_count(), 0);
	ck_assert_ptr_null(session_find(id1));
	ck_assert_ptr_null(session_find(id2));
	unit_turns(base, 10);
	ck_assert_uint_eq(session_allocated(), 0);
	ck_assert_int_eq(load(id1, NULL), EVENTLOG_OK);
	ck_assert_int_eq(load(id2, NULL), EVENTLOG_OK);
}
END_TEST

/* Closing with log ops still queued, then freeing the log (cancelled). */
START_TEST(test_close_then_free_log)
{
	struct session	*s;

	s = world_session(V_NEW);
	session_close(s, "test");
	world_session(V_OLD);
	session_shutdown();
	eventlog_free(el);		/* every pending op: CANCELLED */
	el = NULL;
	ck_assert_uint_eq(session_count(), 0);
}
END_TEST

/* The session's meta is stored in the log and follows its log level. */
START_TEST(test_stored_meta)
{
	struct session	*s;
	cJSON		*json;
	char		*meta = NULL;

	s = world_session(V_MID);
	ck_assert_int_eq(load(session_id(s), &meta), EVENTLOG_OK);
	ck_assert_ptr_nonnull(meta);
	json = cJSON_Parse(meta);
	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(cJSON_GetObjectItem(json, "version")->valuestring,
	    V_MID);
	ck_assert_str_eq(cJSON_GetObjectItem(json, "log_level")->valuestring,
	    mcp_log_level_name(session_log_level(s)));
	cJSON_Delete(json);
	free(meta);

	session_set_log_level(s, mcp_log_level_parse("warning"));
	ck_assert_int_eq(session_log_level(s), 3);
	ck_assert_int_eq(load(session_id(s), &meta), EVENTLOG_OK);
	json = cJSON_Parse(meta);
	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(cJSON_GetObjectItem(json, "log_level")->valuestring,
	    "warning");
	cJSON_Delete(json);
	free(meta);
}
END_TEST

/* Idle expiry: only after session_ttl without activity. */
START_TEST(test_cron_idle)
{
	struct session	*s;
	char		 id[SESSION_ID_LEN + 1];

	conf->session_ttl = 1;
	s = world_session(V_NEW);
	strcpy(id, session_id(s));
	unit_turns(base, 5);

	session_cron();
	ck_assert_ptr_eq(session_find(id), s);

	run_for(600);
	session_cron();
	ck_assert_ptr_eq(session_find(id), s);
	session_touch(s);		/* activity restarts the clock */

	run_for(600);				/* 1.2 s old, 0.6 s idle */
	session_cron();
	ck_assert_ptr_eq(session_find(id), s);

	run_for(500);				/* 1.1 s idle */
	session_cron();
	ck_assert_ptr_null(session_find(id));
	ck_assert_uint_eq(session_count(), 0);
	unit_turns(base, 10);
	ck_assert_int_eq(load(id, NULL), EVENTLOG_NOT_FOUND);
}
END_TEST

/* A session with an attached view is in use even when idle. */
START_TEST(test_cron_view)
{
	static const struct stream_hooks	 none;
	struct stream_watcher			*fake;
	struct session				*busy, *idle;
	char					 busy_id[SESSION_ID_LEN + 1];
	char					 idle_id[SESSION_ID_LEN + 1];

	conf->session_ttl = 1;
	busy = world_session(V_NEW);
	idle = world_session(V_NEW);
	strcpy(busy_id, session_id(busy));
	strcpy(idle_id, session_id(idle));
	unit_turns(base, 5);
	/* K 0 names no stream (stream numbers are never 0): no wakeups. */
	fake = stream_watch(busy, 0, 0, &none, NULL);

	run_for(1100);
	session_cron();
	ck_assert_ptr_eq(session_find(busy_id), busy);
	ck_assert_ptr_null(session_find(idle_id));

	/* Detached: idle from the last cron pass on. */
	stream_unwatch(fake);
	session_cron();
	ck_assert_ptr_eq(session_find(busy_id), busy);
	run_for(1100);
	session_cron();
	ck_assert_ptr_null(session_find(busy_id));
}
END_TEST

static Suite *
session_suite(void)
{
	Suite	*s = suite_create("session");
	TCase	*tc;

	tc = tcase_create("table");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_create_find);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_find_unknown);
	tcase_add_test(tc, test_max_sessions);
	tcase_add_test(tc, test_stored_meta);
	suite_add_tcase(s, tc);

	tc = tcase_create("close");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_close_at_once);
	tcase_add_test(tc, test_close_later);
	tcase_add_test(tc, test_close_ref);
	tcase_add_test(tc, test_shutdown);
	tcase_add_test(tc, test_close_then_free_log);
	suite_add_tcase(s, tc);

	tc = tcase_create("cron");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cron_idle);
	tcase_add_test(tc, test_cron_view);
	suite_add_tcase(s, tc);

	return (s);
}

UNIT_MAIN(session_suite)
