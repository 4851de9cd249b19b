/*
 * Unit tests for task.c, in process, on the memory event log, with the
 * conformance fixtures as the tools (provider_taskfix.c):
 *
 * - the state machine: names, terminal states, the transitions the
 *   extension's diagram allows and no other;
 * - a task is created only once its record is committed, and every answer
 *   comes once, on a later turn;
 * - tasks/get, tasks/cancel, tasks/update against the record; unknown and
 *   malformed ids;
 * - a change racing another writer of the record (another instance, here
 *   a direct put of the next revision) re-reads and never overwrites a
 *   terminal status.
 * The shared-log parts (leases, polling) run against Redis in
 * tests/e2e/test_tasks.py.
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
#include "provider.h"
#include "server.h"
#include "task.h"

#define TURNS	200

struct answer {
	int	 calls;
	cJSON	*result;
	int	 code;
	char	 message[256];
	cJSON	*data;
};

static void
answer_cb(cJSON *result, int code, const char *message, cJSON *data,
    void *arg)
{
	struct answer	*a = arg;

	a->calls++;
	a->result = result;
	a->code = code;
	snprintf(a->message, sizeof a->message, "%s", message != NULL ?
	    message : "");
	a->data = data;
}

static void
answer_clear(struct answer *a)
{
	cJSON_Delete(a->result);
	cJSON_Delete(a->data);
	memset(a, 0, sizeof *a);
}

static void
wait_answer(struct answer *a)
{
	int	i;

	/* Never inside the call that asked. */
	ck_assert_int_eq(a->calls, 0);
	for (i = 0; i < TURNS && a->calls == 0; i++)
		unit_turns(base, 1);
	ck_assert_int_eq(a->calls, 1);
}

static void
setup(void)
{
	world_setup(NULL);
	conf->fixtures_conformance = 1;
	world_start();
	provider_init(conf);
	task_init();
}

static void
teardown(void)
{
	task_shutdown();
	world_teardown();
}

/* tools/call params for tool with args (JSON text), declaring caps. */
static cJSON *
call_params(const char *args)
{
	cJSON	*params = cJSON_CreateObject();

	cJSON_AddItemToObject(params, "arguments", cJSON_Parse(args));
	cJSON_AddItemToObject(params, "_meta", cJSON_Parse(
	    "{\"io.modelcontextprotocol/clientCapabilities\":"
	    "{\"elicitation\":{},\"extensions\":"
	    "{\"io.modelcontextprotocol/tasks\":{}}}}"));
	return (params);
}

/* A task of tool with args; returns its id (static). */
static const char *
start(const char *tool, const char *args)
{
	static char	 tid[TASK_ID_LEN + 1];
	struct answer	 a;
	cJSON		*params = call_params(args);
	const cJSON	*id;

	memset(&a, 0, sizeof a);
	task_call_tool(tool, params, NULL, NULL, answer_cb, &a);
	cJSON_Delete(params);
	wait_answer(&a);
	ck_assert_msg(a.result != NULL, "%s: %s", tool, a.message);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(a.result,
	    "resultType")), "task");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(a.result,
	    "status")), "working");
	ck_assert(!cJSON_HasObjectItem(a.result, "result"));
	ck_assert(!cJSON_HasObjectItem(a.result, "mcpd"));
	id = cJSON_GetObjectItem(a.result, "taskId");
	ck_assert(cJSON_IsString(id));
	ck_assert_uint_eq(strlen(id->valuestring), TASK_ID_LEN);
	snprintf(tid, sizeof tid, "%s", id->valuestring);
	answer_clear(&a);
	return (tid);
}

/* A method's answer (the caller clears it). */
static void
method(const char *name, const char *tid, const char *extra,
    struct answer *a)
{
	cJSON	*params = extra != NULL ? cJSON_Parse(extra) :
		    cJSON_CreateObject();

	if (tid != NULL)
		cJSON_AddStringToObject(params, "taskId", tid);
	memset(a, 0, sizeof *a);
	task_run_method(name, params, NULL, answer_cb, a);
	cJSON_Delete(params);
	wait_answer(a);
}

static const char *
status_of(const struct answer *a)
{
	return (cJSON_GetStringValue(cJSON_GetObjectItem(a->result,
	    "status")));
}

/* Polls tasks/get until the status is st, for 10 s at most. */
static void
wait_status(const char *tid, const char *st, struct answer *a)
{
	struct timeval	tv = { 0, 20 * 1000 };
	int		i;

	for (i = 0; i < 500; i++) {
		method("tasks/get", tid, NULL, a);
		ck_assert_msg(a->result != NULL, "tasks/get: %s", a->message);
		if (strcmp(status_of(a), st) == 0)
			return;
		answer_clear(a);
		/* The fixtures' timers need the time to pass. */
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	ck_abort_msg("task %s never %s", tid, st);
}

START_TEST(test_states)
{
	static const int	allowed[TASK_STATE_MAX][TASK_STATE_MAX] = {
		/* to: working input completed failed cancelled */
		{ 0, 1, 1, 1, 1 },	/* from working */
		{ 1, 0, 1, 1, 1 },	/* from input_required */
		{ 0, 0, 0, 0, 0 },	/* from completed */
		{ 0, 0, 0, 0, 0 },	/* from failed */
		{ 0, 0, 0, 0, 0 },	/* from cancelled */
	};
	int	i, j;

	ck_assert_str_eq(task_state_name(TASK_WORKING), "working");
	ck_assert_str_eq(task_state_name(TASK_INPUT_REQUIRED),
	    "input_required");
	ck_assert_str_eq(task_state_name(TASK_COMPLETED), "completed");
	ck_assert_str_eq(task_state_name(TASK_FAILED), "failed");
	ck_assert_str_eq(task_state_name(TASK_CANCELLED), "cancelled");
	ck_assert_str_eq(task_state_name(TASK_STATE_MAX), "unknown");
	for (i = 0; i < TASK_STATE_MAX; i++) {
		ck_assert_int_eq(task_state_parse(task_state_name(i)), i);
		ck_assert_int_eq(task_state_terminal(i), i >= TASK_COMPLETED);
		for (j = 0; j < TASK_STATE_MAX; j++)
			ck_assert_msg(task_state_allowed(i, j) == allowed[i][j],
			    "%s -> %s", task_state_name(i), task_state_name(j));
	}
	ck_assert_int_eq(task_state_parse("done"), -1);
	ck_assert_int_eq(task_state_allowed(TASK_WORKING, TASK_STATE_MAX), 0);
}
END_TEST

START_TEST(test_create_get)
{
	struct answer	 a;
	const char	*tid = start("slow_compute", "{\"seconds\":0,"
			    "\"label\":\"u\"}");
	const cJSON	*content;

	wait_status(tid, "completed", &a);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(a.result,
	    "resultType")), "complete");
	content = cJSON_GetObjectItem(cJSON_GetObjectItem(a.result, "result"),
	    "content");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(content, 0), "text")),
	    "slow_compute u: done after 0 s");
	/* The inner CallToolResult says its resultType too. */
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(a.result, "result"), "resultType")),
	    "complete");
	ck_assert(!cJSON_HasObjectItem(a.result, "mcpd"));
	answer_clear(&a);

	/* A JSON-RPC error of the call fails the task with it. */
	tid = start("protocol_error_job", "{}");
	wait_status(tid, "failed", &a);
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(a.result, "error"), "code")), -32603);
	ck_assert(!cJSON_HasObjectItem(a.result, "result"));
	answer_clear(&a);
}
END_TEST

START_TEST(test_bad_ids)
{
	static const char	*bad[] = {
		"zz",
		"",
		"0123456789ABCDEF0123456789ABCDEF",
		"0123456789abcdef0123456789abcdef0",
		"0123456789abcdef0123456789abcdef",
	};
	struct answer		 a;
	size_t			 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		method("tasks/get", bad[i], NULL, &a);
		ck_assert_ptr_null(a.result);
		ck_assert_int_eq(a.code, -32602);
		ck_assert_str_eq(a.message,
		    "Failed to retrieve task: Task not found");
		answer_clear(&a);
		method("tasks/cancel", bad[i], NULL, &a);
		ck_assert_int_eq(a.code, -32602);
		answer_clear(&a);
	}
	method("tasks/get", NULL, "{\"taskId\":3}", &a);
	ck_assert_int_eq(a.code, -32602);
	answer_clear(&a);
	method("tasks/update", "0123456789abcdef0123456789abcdef",
	    "{\"inputResponses\":[]}", &a);
	ck_assert_int_eq(a.code, -32602);
	answer_clear(&a);
	ck_assert_int_eq(task_method("tasks/get"), 1);
	ck_assert_int_eq(task_method("tasks/result"), 0);
	ck_assert_int_eq(task_method("tasks/list"), 0);
}
END_TEST

START_TEST(test_cancel)
{
	struct answer	 a;
	const char	*tid = start("slow_compute", "{\"seconds\":600}");
	char		 id[TASK_ID_LEN + 1];

	snprintf(id, sizeof id, "%s", tid);
	ck_assert_uint_eq(task_running(), 1);
	method("tasks/cancel", id, NULL, &a);
	ck_assert_ptr_nonnull(a.result);
	ck_assert_int_eq(cJSON_GetArraySize(a.result), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(a.result,
	    "resultType")), "complete");
	answer_clear(&a);
	wait_status(id, "cancelled", &a);
	answer_clear(&a);
	unit_turns(base, 10);
	/* Its call was stopped, and the run let go. */
	ck_assert_uint_eq(task_running(), 0);
	method("tasks/cancel", id, NULL, &a);
	ck_assert_ptr_nonnull(a.result);
	answer_clear(&a);
}
END_TEST

START_TEST(test_update)
{
	struct answer	 a;
	const cJSON	*requests;
	char		 id[TASK_ID_LEN + 1], extra[256];

	snprintf(id, sizeof id, "%s", start("confirm_delete",
	    "{\"filename\":\"f\"}"));
	wait_status(id, "input_required", &a);
	requests = cJSON_GetObjectItem(a.result, "inputRequests");
	ck_assert_int_eq(cJSON_GetArraySize(requests), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    requests->child, "method")), "elicitation/create");
	snprintf(extra, sizeof extra, "{\"inputResponses\":{\"%s\":"
	    "{\"action\":\"accept\",\"content\":{\"confirm\":true}}}}",
	    requests->child->string);
	answer_clear(&a);
	method("tasks/update", id, "{\"inputResponses\":{\"other\":{}}}", &a);
	ck_assert_ptr_nonnull(a.result);
	answer_clear(&a);
	method("tasks/update", id, extra, &a);
	ck_assert_ptr_nonnull(a.result);
	answer_clear(&a);
	wait_status(id, "completed", &a);
	ck_assert(!cJSON_HasObjectItem(a.result, "inputRequests"));
	answer_clear(&a);
}
END_TEST

static void
put_cb(enum eventlog_status status, void *arg)
{
	*(enum eventlog_status *)arg = status;
}

static void
got_cb(enum eventlog_status status, uint64_t rev, const char *rec,
    size_t len, void *arg)
{
	*(uint64_t *)arg = rev;
}

/*
 * Another writer commits the next revision (the task completed
 * elsewhere) while a tasks/cancel is between its read and its write: the
 * cancel's write is refused, it reads again, finds the task terminal, and
 * leaves it so.
 */
START_TEST(test_race)
{
	struct answer		 a;
	enum eventlog_status	 put = EVENTLOG_STATUS_MAX;
	cJSON			*params, *rec;
	char			 id[TASK_ID_LEN + 1], *text;
	uint64_t		 rev = 0;

	snprintf(id, sizeof id, "%s", start("slow_compute",
	    "{\"seconds\":600}"));
	method("tasks/get", id, NULL, &a);
	rec = a.result;
	a.result = NULL;
	answer_clear(&a);
	eventlog_task_get(el, id, got_cb, &rev);
	unit_turns(base, 3);
	ck_assert_uint_ge(rev, 1);

	/* The record as another instance would write it, keeping mcpd. */
	cJSON_ReplaceItemInObject(rec, "status", cJSON_CreateString(
	    "completed"));
	cJSON_DeleteItemFromObject(rec, "resultType");
	cJSON_AddItemToObject(rec, "result", cJSON_Parse(
	    "{\"content\":[{\"type\":\"text\",\"text\":\"elsewhere\"}]}"));
	cJSON_AddItemToObject(rec, "mcpd", cJSON_Parse(
	    "{\"owner\":\"other\",\"created\":1e15}"));
	text = cJSON_PrintUnformatted(rec);
	cJSON_Delete(rec);

	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "taskId", id);
	memset(&a, 0, sizeof a);
	task_run_method("tasks/cancel", params, NULL, answer_cb, &a);
	/* Queued behind the cancel's read, before its write. */
	eventlog_task_put(el, id, rev + 1, text, strlen(text), 60000, 0,
	    put_cb, &put);
	cJSON_Delete(params);
	free(text);
	wait_answer(&a);
	ck_assert_int_eq(put, EVENTLOG_OK);
	ck_assert_ptr_nonnull(a.result);	/* acknowledged all the same */
	answer_clear(&a);
	method("tasks/get", id, NULL, &a);
	ck_assert_str_eq(status_of(&a), "completed");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    a.result, "result"), "content"), 0), "text")), "elsewhere");
	answer_clear(&a);
}
END_TEST

START_TEST(test_mode)
{
	cJSON	*with = call_params("{}"), *without = cJSON_CreateObject();

	ck_assert_int_eq(task_declared(with), 1);
	ck_assert_int_eq(task_declared(without), 0);
	ck_assert_int_eq(task_mode("slow_compute", with), TASK_MODE_TASK);
	ck_assert_int_eq(task_mode("slow_compute", without), TASK_MODE_CALL);
	ck_assert_int_eq(task_mode("failing_job", without), TASK_MODE_REFUSE);
	ck_assert_int_eq(task_mode("greet", with), TASK_MODE_CALL);
	ck_assert_int_eq(task_mode("no such tool", with), TASK_MODE_CALL);
	/* Makes its own task after its MRTR rounds. */
	ck_assert_int_eq(task_mode("test_tool_with_task", with),
	    TASK_MODE_CALL);
	ck_assert_int_eq(task_mode("test_tool_with_task", without),
	    TASK_MODE_REFUSE);
	cJSON_Delete(with);
	cJSON_Delete(without);
}
END_TEST

static Suite *
task_suite(void)
{
	Suite	*s = suite_create("task");
	TCase	*tc = tcase_create("task");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_states);
	tcase_add_test(tc, test_create_get);
	tcase_add_test(tc, test_bad_ids);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_update);
	tcase_add_test(tc, test_race);
	tcase_add_test(tc, test_mode);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(task_suite)
