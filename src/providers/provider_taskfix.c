/*
 * The conformance suite's task fixtures (conf: `fixtures conformance`):
 * the tools its tasks-* scenarios call by name, with the taskSupport and
 * the behaviour they describe. greet answers at once and never runs as a
 * task; slow_compute sleeps `seconds` (cancellable); failing_job ends
 * with an isError result, protocol_error_job with a JSON-RPC error;
 * confirm_delete asks one question, multi_input two at once (as task
 * input requests when they run as tasks); test_tool_with_task asks for a
 * name by MRTR, then goes on as a task (task_escalate) that greets it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "call.h"
#include "conf.h"
#include "jsonrpc.h"
#include "provider.h"
#include "server.h"
#include "task.h"
#include "xmalloc.h"

/* failing_job and protocol_error_job end this long after they start. */
#define TASKFIX_FAIL_MS		300
/* The longest slow_compute sleeps. */
#define TASKFIX_MAX_SECONDS	3600

enum taskfix_kind {
	TASKFIX_SLOW,
	TASKFIX_FAILING,
	TASKFIX_PROTOCOL_ERROR,
	TASKFIX_CONFIRM,
	TASKFIX_MULTI,
	TASKFIX_ESCALATE,	/* test_tool_with_task, asking */
	TASKFIX_GREET_LATER	/* test_tool_with_task, as its task */
};

/* A call that answers later: after a sleep, or its client's answers. */
struct taskfix_job {
	enum taskfix_kind	 kind;
	struct call		*call;
	struct event		*timer;
	char			*label;
	long			 seconds;
	int			 asked;		/* answers owed */
	int			 cancelled;
	char			*answers[2];
};

static int
taskfix_enabled(const struct conf *conf)
{
	return (conf->fixtures_conformance);
}

/* The fixtures' taskSupport, as the scenarios want it. */
static const struct {
	const char	*name;
	const char	*support;
} taskfix_supports[] = {
	{ "slow_compute", "optional" },
	{ "failing_job", "required" },
	{ "protocol_error_job", "optional" },
	{ "confirm_delete", "optional" },
	{ "multi_input", "optional" },
	{ "test_tool_with_task", "required" },
};

static const char *
taskfix_task_support(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof taskfix_supports / sizeof taskfix_supports[0];
	    i++) {
		if (strcmp(name, taskfix_supports[i].name) == 0)
			return (taskfix_supports[i].support);
	}
	return (NULL);
}

static void
taskfix_add(cJSON *tools, const char *name, const char *description,
    const char *schema)
{
	const char	*support = taskfix_task_support(name);

	cJSON	*tool = cJSON_CreateObject();

	cJSON_AddStringToObject(tool, "name", name);
	cJSON_AddStringToObject(tool, "description", description);
	cJSON_AddItemToObject(tool, "inputSchema", cJSON_Parse(schema));
	if (support != NULL)
		provider_task_support(tool, support);
	cJSON_AddItemToArray(tools, tool);
}

#define TASKFIX_NO_ARGS	"{\"type\":\"object\",\"properties\":{}}"

static void
taskfix_list_tools(cJSON *tools)
{
	taskfix_add(tools, "greet", "Says hello to name, at once.",
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
	    "\"string\"}},\"required\":[\"name\"]}");
	taskfix_add(tools, "slow_compute", "Sleeps seconds, then answers "
	    "with label.",
	    "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":"
	    "\"number\",\"minimum\":0},\"label\":{\"type\":\"string\"}}}");
	taskfix_add(tools, "failing_job", "Ends with a tool execution error.",
	    TASKFIX_NO_ARGS);
	taskfix_add(tools, "protocol_error_job", "Ends with a JSON-RPC "
	    "error.", TASKFIX_NO_ARGS);
	taskfix_add(tools, "confirm_delete", "Asks the user to confirm the "
	    "deletion of filename.",
	    "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":"
	    "\"string\"}}}");
	taskfix_add(tools, "multi_input", "Asks the user two questions at "
	    "once.", TASKFIX_NO_ARGS);
	taskfix_add(tools, "test_tool_with_task", "Asks for a name, then "
	    "greets it from a task.", TASKFIX_NO_ARGS);
}

/* test_tool_with_task makes its task itself, once it has its answer. */
static int
taskfix_task_self(const char *name)
{
	return (strcmp(name, "test_tool_with_task") == 0);
}

static void
taskfix_free(struct taskfix_job *job)
{
	if (job->timer != NULL)
		event_free(job->timer);
	free(job->label);
	free(job->answers[0]);
	free(job->answers[1]);
	free(job);
}

/* Ends the job with its call's response (already sent, or not at all). */
static void
taskfix_done(struct taskfix_job *job)
{
	call_release(job->call);
	if (job->asked == 0)
		taskfix_free(job);
	else
		job->cancelled = 1;	/* the last answer frees it */
}

static void
taskfix_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct taskfix_job	*job = arg;
	char			*text;

	switch (job->kind) {
	case TASKFIX_SLOW:
		xasprintf(&text, "slow_compute %s: done after %ld s",
		    job->label, job->seconds);
		call_respond_text(job->call, text, 0);
		free(text);
		break;
	case TASKFIX_FAILING:
		call_respond_text(job->call, "failing_job: the job failed", 1);
		break;
	case TASKFIX_GREET_LATER:
		xasprintf(&text, "Hello, %s! (from a task)", job->label);
		call_respond_text(job->call, text, 0);
		free(text);
		break;
	default:
		call_respond_error(job->call, JSONRPC_INTERNAL_ERROR,
		    "protocol_error_job: internal failure");
		break;
	}
	taskfix_done(job);
}

static void
taskfix_cancel_cb(void *arg)
{
	struct taskfix_job	*job = arg;

	if (job->timer != NULL)
		evtimer_del(job->timer);
	taskfix_done(job);
}

static void
taskfix_answered_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct taskfix_job	*job = arg;
	const cJSON		*action, *content, *value;
	cJSON			*args;
	char			*text, **slot;

	job->asked--;
	if (job->cancelled) {
		if (job->asked == 0)
			taskfix_free(job);
		return;
	}
	slot = job->answers[0] == NULL ? &job->answers[0] : &job->answers[1];
	action = cJSON_GetObjectItemCaseSensitive(result, "action");
	content = cJSON_GetObjectItemCaseSensitive(result, "content");
	value = cJSON_GetObjectItemCaseSensitive(content, "name");
	if (job->kind == TASKFIX_ESCALATE) {
		if (error != NULL || !cJSON_IsString(value)) {
			call_respond_text(job->call, "test_tool_with_task: no "
			    "name given", 1);
			taskfix_done(job);
			return;
		}
		/* The call is the task's to answer and release now. */
		args = cJSON_CreateObject();
		cJSON_AddStringToObject(args, "user_name", value->valuestring);
		call_set_cancel(job->call, NULL, NULL);
		task_escalate(job->call, "test_tool_with_task", args);
		taskfix_free(job);
		return;
	}
	if (error != NULL || !cJSON_IsString(action))
		*slot = xstrdup("no answer");
	else if (cJSON_IsString(value))
		xasprintf(slot, "%s %s", action->valuestring,
		    value->valuestring);
	else
		*slot = xstrdup(action->valuestring);
	if (job->asked > 0)
		return;
	if (job->kind == TASKFIX_CONFIRM)
		xasprintf(&text, "confirm_delete %s: %s", job->label,
		    job->answers[0]);
	else
		xasprintf(&text, "multi_input: %s; %s", job->answers[0],
		    job->answers[1]);
	call_set_cancel(job->call, NULL, NULL);
	call_respond_text(job->call, text, 0);
	free(text);
	taskfix_done(job);
}

static void
taskfix_ask(struct taskfix_job *job, const char *message, const char *field)
{
	cJSON	*params = cJSON_CreateObject(), *schema, *props, *prop;

	cJSON_AddStringToObject(params, "mode", "form");
	cJSON_AddStringToObject(params, "message", message);
	schema = cJSON_AddObjectToObject(params, "requestedSchema");
	cJSON_AddStringToObject(schema, "type", "object");
	props = cJSON_AddObjectToObject(schema, "properties");
	prop = cJSON_AddObjectToObject(props, field);
	cJSON_AddStringToObject(prop, "type", strcmp(field, "confirm") == 0 ?
	    "boolean" : "string");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(schema, "required"),
	    cJSON_CreateString(field));
	job->asked++;
	call_request(job->call, "elicitation/create", params,
	    taskfix_answered_cb, job);
}

static int
taskfix_call_tool(struct call *c, const char *name, const cJSON *args)
{
	static const struct {
		const char		*name;
		enum taskfix_kind	 kind;
	} kinds[] = {
		{ "slow_compute", TASKFIX_SLOW },
		{ "failing_job", TASKFIX_FAILING },
		{ "protocol_error_job", TASKFIX_PROTOCOL_ERROR },
		{ "confirm_delete", TASKFIX_CONFIRM },
		{ "multi_input", TASKFIX_MULTI },
		{ "test_tool_with_task", TASKFIX_ESCALATE },
	};
	const cJSON		*arg;
	struct taskfix_job	*job;
	struct timeval		 tv = { 0, TASKFIX_FAIL_MS * 1000 };
	char			*text, *message;
	size_t			 i;

	if (strcmp(name, "greet") == 0) {
		arg = cJSON_GetObjectItemCaseSensitive(args, "name");
		xasprintf(&text, "Hello, %s!", cJSON_IsString(arg) ?
		    arg->valuestring : "World");
		call_respond_text(c, text, 0);
		call_release(c);
		free(text);
		return (0);
	}
	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strcmp(name, kinds[i].name) == 0)
			break;
	}
	if (i == sizeof kinds / sizeof kinds[0])
		return (-1);

	job = xcalloc(1, sizeof *job);
	job->kind = kinds[i].kind;
	job->call = c;
	/* Run again as its task, it has the name it asked for. */
	if (job->kind == TASKFIX_ESCALATE &&
	    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args,
	    "user_name"))) {
		job->kind = TASKFIX_GREET_LATER;
		arg = cJSON_GetObjectItemCaseSensitive(args, "user_name");
	} else
		arg = cJSON_GetObjectItemCaseSensitive(args, job->kind ==
		    TASKFIX_CONFIRM ? "filename" : "label");
	job->label = xstrdup(cJSON_IsString(arg) ? arg->valuestring : "-");
	call_set_cancel(c, taskfix_cancel_cb, job);
	switch (job->kind) {
	case TASKFIX_SLOW:
		arg = cJSON_GetObjectItemCaseSensitive(args, "seconds");
		if (cJSON_IsNumber(arg) && arg->valuedouble > 0)
			job->seconds = arg->valuedouble > TASKFIX_MAX_SECONDS ?
			    TASKFIX_MAX_SECONDS : (long)arg->valuedouble;
		tv.tv_sec = job->seconds;
		tv.tv_usec = 0;
		/* FALLTHROUGH */
	case TASKFIX_FAILING:
	case TASKFIX_PROTOCOL_ERROR:
	case TASKFIX_GREET_LATER:
		job->timer = evtimer_new(server.base, taskfix_timer_cb, job);
		evtimer_add(job->timer, &tv);
		break;
	case TASKFIX_CONFIRM:
		xasprintf(&message, "Delete %s?", job->label);
		taskfix_ask(job, message, "confirm");
		free(message);
		break;
	case TASKFIX_MULTI:
		taskfix_ask(job, "What is your name?", "name");
		taskfix_ask(job, "What is your quest?", "name");
		break;
	case TASKFIX_ESCALATE:
		taskfix_ask(job, "What is your name?", "name");
		break;
	}
	return (0);
}

const struct provider provider_taskfix = {
	.name = "taskfix",
	.enabled = taskfix_enabled,
	.list_tools = taskfix_list_tools,
	.call_tool = taskfix_call_tool,
	.task_support = taskfix_task_support,
	.task_self = taskfix_task_self,
};
