/*
 * Unit tests for call.c and outbound.c: the callback rule, in process
 * against the memory event log. A callback a provider gives (a request's
 * answer, a send's commit, the cancel hook) runs exactly once, never before
 * the call that took it returns, and never inside the provider's own
 * call_respond, call_cancel or call_release: each callback here records
 * whether one of those was on the stack when it ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "unit.h"
#include "world.h"

#include "call.h"
#include "conf.h"
#include "dispatch.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "xmalloc.h"

#define V_NEW		"2025-11-25"

/* Set while the test is inside a call_* function a callback must avoid. */
static const char		*inside;

static void
setup(void)
{
	world_setup(NULL);
	world_start();
	inside = NULL;
}

/* A session, and a call of request id 7 on a request stream of it. */
static struct call *
start(struct session **sp)
{
	struct session	*s;
	struct call	*c;
	cJSON		*id;

	s = world_session(V_NEW);
	id = cJSON_CreateNumber(7);
	c = call_start(s, world_request_stream(s), id, NULL);
	cJSON_Delete(id);
	if (sp != NULL)
		*sp = s;
	return (c);
}

/* What a provider's callbacks saw. */
struct seen {
	int		 answered;	/* the request's callback ran */
	int		 answered_inside;
	char		 message[128];	/* its error's message */
	char		 text[128];	/* its result's "text" */
	int		 cancelled;	/* the cancel hook ran */
	int		 cancelled_inside;
	int		 order;		/* 1: hook first, 2: answer first */
	struct call	*release;	/* the hook releases this call */
};

static void
answered_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct seen	*seen = arg;
	const cJSON	*v;

	seen->answered++;
	if (inside != NULL)
		seen->answered_inside++;
	if (seen->order == 0)
		seen->order = 2;
	v = cJSON_GetObjectItem(error, "message");
	if (cJSON_IsString(v))
		strlcpy(seen->message, v->valuestring, sizeof seen->message);
	v = cJSON_GetObjectItem(result, "text");
	if (cJSON_IsString(v))
		strlcpy(seen->text, v->valuestring, sizeof seen->text);
}

static void
cancel_cb(void *arg)
{
	struct seen	*seen = arg;

	seen->cancelled++;
	if (inside != NULL)
		seen->cancelled_inside++;
	if (seen->order == 0)
		seen->order = 1;
	if (seen->release != NULL)
		call_release(seen->release);
}

static void
ask(struct call *c, struct seen *seen)
{
	cJSON	*params = cJSON_CreateObject();

	cJSON_AddStringToObject(params, "message", "name?");
	inside = "call_request";
	call_request(c, "elicitation/create", params, answered_cb, seen);
	inside = NULL;
}

static void
respond(struct call *c)
{
	inside = "call_respond";
	call_respond(c, cJSON_CreateObject());
	inside = NULL;
}

static void
release(struct call *c)
{
	inside = "call_release";
	call_release(c);
	inside = NULL;
}

/* The id of the last request the call sent the client, from its stream. */
struct found {
	int	 done;
	char	 id[64];
};

static void
read_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct found	*f = arg;
	const cJSON	*id;
	cJSON		*msg;
	size_t		 i;

	ck_assert_int_eq(status, EVENTLOG_OK);
	for (i = 0; i < n; i++) {
		msg = cJSON_ParseWithLength(entries[i].data, entries[i].len);
		id = cJSON_GetObjectItem(msg, "id");
		if (cJSON_IsString(id))
			strlcpy(f->id, id->valuestring, sizeof f->id);
		cJSON_Delete(msg);
	}
	f->done = 1;
}

static void
request_id(struct call *c, char *id, size_t size)
{
	struct found	 f;
	int		 n;

	memset(&f, 0, sizeof f);
	eventlog_read(el, session_id(call_session(c)),
	    stream_id(call_stream(c)), 1, 64, read_cb, &f);
	for (n = 0; !f.done && n < 100; n++)
		unit_turns(base, 1);
	ck_assert(f.done);
	ck_assert_msg(f.id[0] != '\0', "no request on the call's stream");
	strlcpy(id, f.id, size);
}

/* The client answers request id with {"text": text}. */
static int
client_answers(struct session *s, const char *id, const char *text)
{
	cJSON	*msg, *result;
	int	 rc;

	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	cJSON_AddStringToObject(msg, "id", id);
	result = cJSON_AddObjectToObject(msg, "result");
	cJSON_AddStringToObject(result, "text", text);
	rc = dispatch_response(s, msg);
	cJSON_Delete(msg);
	return (rc);
}

/* Asking on a finished call: the error comes after call_request returns. */
START_TEST(test_request_after_end)
{
	struct call	*c = start(NULL);
	struct seen	 seen;

	memset(&seen, 0, sizeof seen);
	respond(c);
	ask(c, &seen);
	ck_assert_int_eq(seen.answered, 0);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_str_eq(seen.message, "The request's call has ended");
	release(c);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.answered, 1);
}
END_TEST

/* The client's answer reaches the callback once; a second one is stray. */
START_TEST(test_request_answered)
{
	struct session	*s;
	struct call	*c = start(&s);
	struct seen	 seen;
	char		 id[64];

	memset(&seen, 0, sizeof seen);
	ask(c, &seen);
	ck_assert_int_eq(seen.answered, 0);
	request_id(c, id, sizeof id);
	ck_assert_int_eq(strncmp(id, "mcpd-", 5), 0);
	ck_assert_int_eq(seen.answered, 0);
	ck_assert_int_eq(client_answers(s, id, "alice"), 0);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_str_eq(seen.text, "alice");
	ck_assert_int_eq(client_answers(s, id, "bob"), -1);
	respond(c);
	release(c);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_str_eq(seen.text, "alice");
}
END_TEST

/* The provider answers while its request waits: not inside call_respond. */
START_TEST(test_request_outlived_by_respond)
{
	struct session	*s;
	struct call	*c = start(&s);
	struct seen	 seen;
	char		 id[64];

	memset(&seen, 0, sizeof seen);
	ask(c, &seen);
	request_id(c, id, sizeof id);
	respond(c);
	ck_assert_int_eq(seen.answered_inside, 0);
	release(c);
	ck_assert_int_eq(seen.answered_inside, 0);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_int_eq(seen.answered_inside, 0);
	ck_assert_str_eq(seen.message, "The request's call has ended");
	/* Answered already: the client's late answer is stray. */
	ck_assert_int_eq(client_answers(s, id, "late"), -1);
	ck_assert_int_eq(seen.answered, 1);
}
END_TEST

/*
 * A lasting request (an upstream server's question) outlives its call: the
 * client's answer after the call's end still reaches the asker, once.
 */
START_TEST(test_request_lasting_answered_after_end)
{
	struct session	*s;
	struct call	*c = start(&s);
	struct seen	 seen;
	char		 id[64];

	memset(&seen, 0, sizeof seen);
	call_request_lasting(c, "roots/list", cJSON_CreateObject(),
	    answered_cb, &seen);
	request_id(c, id, sizeof id);
	respond(c);
	release(c);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.answered, 0);
	ck_assert_int_eq(client_answers(s, id, "late"), 0);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_str_eq(seen.text, "late");
	ck_assert_int_eq(client_answers(s, id, "again"), -1);
	ck_assert_int_eq(seen.answered, 1);
}
END_TEST

/*
 * The client cancels the call while its request waits: the provider hears
 * of it through its cancel hook, then its request ends, each once and
 * neither inside call_cancel.
 */
START_TEST(test_request_outlived_by_cancel)
{
	struct call	*c = start(NULL);
	struct seen	 seen;

	memset(&seen, 0, sizeof seen);
	call_set_cancel(c, cancel_cb, &seen);
	ask(c, &seen);
	inside = "call_cancel";
	call_cancel(c, "cancelled by the client");
	inside = NULL;
	ck_assert_int_eq(seen.cancelled + seen.answered, 0);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.cancelled, 1);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_int_eq(seen.order, 1);
	ck_assert_str_eq(seen.message, "The request's call has ended");
	release(c);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.cancelled, 1);
	ck_assert_int_eq(seen.answered, 1);
}
END_TEST

/* A provider that lets go of its call is not called back for it. */
START_TEST(test_release_unanswered)
{
	struct call	*c = start(NULL);
	struct seen	 seen;

	memset(&seen, 0, sizeof seen);
	call_set_cancel(c, cancel_cb, &seen);
	release(c);
	ck_assert_int_eq(seen.cancelled_inside, 0);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.cancelled, 0);
}
END_TEST

/* Released between its cancellation and the hook: no hook either. */
START_TEST(test_release_after_cancel)
{
	struct call	*c = start(NULL);
	struct seen	 seen;

	memset(&seen, 0, sizeof seen);
	call_set_cancel(c, cancel_cb, &seen);
	call_cancel(c, "cancelled by the client");
	release(c);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.cancelled, 0);
}
END_TEST

/* The hook may release the call; the call outlives what still uses it. */
START_TEST(test_release_in_hook)
{
	struct call	*c = start(NULL);
	struct seen	 seen;

	memset(&seen, 0, sizeof seen);
	seen.release = c;
	call_set_cancel(c, cancel_cb, &seen);
	ask(c, &seen);
	call_cancel(c, "cancelled by the client");
	unit_turns(base, 5);
	ck_assert_int_eq(seen.cancelled, 1);
	ck_assert_int_eq(seen.answered, 1);
}
END_TEST

/*
 * The session ends (shutdown) while the call runs: its response is an
 * error, and the hook runs once, on a later turn than the interruption.
 */
START_TEST(test_interrupt)
{
	struct session	*s;
	struct call	*c = start(&s);
	struct seen	 seen;

	memset(&seen, 0, sizeof seen);
	call_set_cancel(c, cancel_cb, &seen);
	ask(c, &seen);
	inside = "call_interrupt";
	call_interrupt(c, "shutting down");
	inside = NULL;
	ck_assert(call_finished(c));
	ck_assert_int_eq(seen.cancelled_inside + seen.answered_inside, 0);
	unit_turns(base, 5);
	ck_assert_int_eq(seen.cancelled, 1);
	ck_assert_int_eq(seen.answered, 1);
	ck_assert_int_eq(seen.order, 1);
	release(c);
}
END_TEST

/* A send on a finished call is refused after call_send returns. */
static void
sent_cb(int ok, void *arg)
{
	int	*seen = arg;

	*seen = ok ? 1 : -1;
}

START_TEST(test_send_after_end)
{
	struct call	*c = start(NULL);
	int		 seen = 0;

	respond(c);
	call_send(c, jsonrpc_notification("notifications/message",
	    cJSON_CreateObject()), sent_cb, &seen);
	ck_assert_int_eq(seen, 0);
	unit_turns(base, 5);
	ck_assert_int_eq(seen, -1);
	release(c);
}
END_TEST

static Suite *
call_suite(void)
{
	Suite	*s = suite_create("call");
	TCase	*tc = tcase_create("rule");

	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_request_after_end);
	tcase_add_test(tc, test_request_answered);
	tcase_add_test(tc, test_request_outlived_by_respond);
	tcase_add_test(tc, test_request_lasting_answered_after_end);
	tcase_add_test(tc, test_request_outlived_by_cancel);
	tcase_add_test(tc, test_release_unanswered);
	tcase_add_test(tc, test_release_after_cancel);
	tcase_add_test(tc, test_release_in_hook);
	tcase_add_test(tc, test_interrupt);
	tcase_add_test(tc, test_send_after_end);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(call_suite)
