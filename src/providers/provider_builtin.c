/*
 * The built-in tools (docs/protocol.md): echo, stream, notify. They exist
 * so operators and tests can see the transport's guarantees end to end:
 * `stream` produces on the request's stream, `notify` on the standalone one.
 *
 * A call keeps at most a window of messages on their way (sent, not yet
 * committed), whatever n is; under the block policy they wait in the
 * stream until the client has received enough, and so does the call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "call.h"
#include "conf.h"
#include "cursor.h"
#include "jsonrpc.h"
#include "provider.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

#define BUILTIN_MAX_N		1000000
#define BUILTIN_MAX_INTERVAL	60000
#define BUILTIN_MAX_SIZE	(1024 * 1024)
#define BUILTIN_LEVEL_INFO	1
/*
 * Messages of one call on their way to the log at once: enough small ones
 * to fill a batch of the redis log, and about 64 KiB of large ones (a
 * thousand calls in flight must not hold more than the views may).
 */
#define BUILTIN_WINDOW		64
#define BUILTIN_WINDOW_BYTES	(64 * 1024)

enum builtin_kind {
	BUILTIN_STREAM,
	BUILTIN_NOTIFY
};

struct builtin_job {
	enum builtin_kind	 kind;
	struct call		*call;
	long			 n;
	long			 i;
	long			 interval_ms;
	long			 size;
	int			 inflight;	/* sent, not yet committed */
	int			 window;	/* at most this many */
	int			 cancelled;
	struct event		*timer;
};

static void	builtin_sent_cb(int, void *);

static int
builtin_enabled(const struct conf *conf)
{
	return (conf->builtin_tools);
}

static void
builtin_add_tool(cJSON *tools, const char *name, const char *description,
    const char *schema)
{
	cJSON	*tool = cJSON_CreateObject();

	cJSON_AddStringToObject(tool, "name", name);
	cJSON_AddStringToObject(tool, "description", description);
	cJSON_AddItemToObject(tool, "inputSchema", cJSON_Parse(schema));
	cJSON_AddItemToArray(tools, tool);
}

/* stream is long enough to be worth a task when the client can take one. */
static const char *
builtin_task_support(const char *name)
{
	return (strcmp(name, "stream") == 0 ? "optional" : NULL);
}

static void
builtin_list_tools(cJSON *tools)
{
	builtin_add_tool(tools, "echo", "Return the given text.",
	    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
	    "\"string\"}},\"required\":[\"text\"]}");
	builtin_add_tool(tools, "stream",
	    "Send n progress notifications (or log messages without a "
	    "progress token) on the request's stream, then `done n`.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"n\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"interval_ms\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"size\":{\"type\":\"integer\",\"minimum\":0}},"
	    "\"required\":[\"n\"]}");
	provider_task_support(cJSON_GetArrayItem(tools,
	    cJSON_GetArraySize(tools) - 1), builtin_task_support("stream"));
	builtin_add_tool(tools, "notify",
	    "Send n log messages on the session's standalone stream, then "
	    "`queued n`.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"n\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"size\":{\"type\":\"integer\",\"minimum\":0}},"
	    "\"required\":[\"n\"]}");
}

/*
 * Reads an optional integer argument within [0, max]. The range and
 * wholeness are checked on the double: converting one out of range (1e300)
 * to an integer first is undefined behaviour.
 */
static int
builtin_int_arg(const cJSON *args, const char *name, int required, long max,
    long *out, char **cause)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(args, name);
	uint64_t	 n;

	if (v == NULL) {
		if (!required)
			return (0);
		xasprintf(cause, "missing required argument '%s'", name);
		return (-1);
	}
	if (jsonrpc_whole_number(v, (double)max, &n) != 0) {
		xasprintf(cause, "argument '%s' must be an integer from 0 to "
		    "%ld", name, max);
		return (-1);
	}
	*out = (long)n;
	return (0);
}

static void
builtin_invalid(struct call *c, char *cause)
{
	char	*text;

	xasprintf(&text, "invalid arguments: %s", cause);
	call_respond_text(c, text, 1);
	call_release(c);
	free(text);
	free(cause);
}

static char *
builtin_pad(long size)
{
	char	*pad = xmalloc((size_t)size + 1);

	memset(pad, 'x', (size_t)size);
	pad[size] = '\0';
	return (pad);
}

/* One message per event: constant names are referred to, not copied. */
static cJSON *
builtin_log_message(long i, long n, long size)
{
	cJSON	*params = cJSON_CreateObject();
	cJSON	*data = cJSON_CreateObject();
	char	*pad = builtin_pad(size);

	cJSON_AddItemToObjectCS(params, "level",
	    cJSON_CreateStringReference("info"));
	cJSON_AddItemToObjectCS(params, "logger",
	    cJSON_CreateStringReference("mcpd"));
	cJSON_AddItemToObjectCS(data, "i", cJSON_CreateNumber((double)i));
	cJSON_AddItemToObjectCS(data, "n", cJSON_CreateNumber((double)n));
	cJSON_AddItemToObjectCS(data, "pad", cJSON_CreateString(pad));
	cJSON_AddItemToObjectCS(params, "data", data);
	free(pad);
	return (jsonrpc_notification("notifications/message", params));
}

static cJSON *
builtin_progress(const cJSON *token, long i, long n, long size)
{
	cJSON	*params = cJSON_CreateObject();
	char	 text[64], *padded = NULL;
	size_t	 len;

	/* "step i of n", i and n at most BUILTIN_MAX_N: no printf per event. */
	memcpy(text, "step ", 5);
	len = 5 + cursor_format_seq(text + 5, 24, (uint64_t)i);
	memcpy(text + len, " of ", 4);
	len += 4;
	len += cursor_format_seq(text + len, 24, (uint64_t)n);
	if ((long)len < size) {
		padded = builtin_pad(size);
		memcpy(padded, text, len);
	}
	cJSON_AddItemToObjectCS(params, "progressToken",
	    cJSON_Duplicate(token, 1));
	cJSON_AddItemToObjectCS(params, "progress",
	    cJSON_CreateNumber((double)i));
	cJSON_AddItemToObjectCS(params, "total", cJSON_CreateNumber((double)n));
	cJSON_AddItemToObjectCS(params, "message",
	    cJSON_CreateString(padded != NULL ? padded : text));
	free(padded);
	return (jsonrpc_notification("notifications/progress", params));
}

static void
builtin_job_free(struct builtin_job *job)
{
	if (job->timer != NULL)
		event_free(job->timer);
	call_release(job->call);
	free(job);
}

static void
builtin_finish(struct builtin_job *job)
{
	char	*text;

	xasprintf(&text, "%s %ld", job->kind == BUILTIN_STREAM ? "done" :
	    "queued", job->n);
	call_respond_text(job->call, text, 0);
	free(text);
	builtin_job_free(job);
}

/* Sends the next message; returns 0 if it was below the log level. */
static int
builtin_send_next(struct builtin_job *job)
{
	const cJSON	*token = call_progress_token(job->call);
	cJSON		*msg;

	job->i++;
	if (job->kind == BUILTIN_NOTIFY) {
		msg = builtin_log_message(job->i, job->n, job->size);
		call_send_standalone(job->call, msg, builtin_sent_cb, job);
	} else if (token != NULL) {
		msg = builtin_progress(token, job->i, job->n, job->size);
		call_send(job->call, msg, builtin_sent_cb, job);
	} else if (call_log_enabled(job->call, BUILTIN_LEVEL_INFO)) {
		msg = builtin_log_message(job->i, job->n, job->size);
		call_send(job->call, msg, builtin_sent_cb, job);
	} else
		return (0);	/* counted, not sent */
	job->inflight++;
	return (1);
}

/*
 * Without an interval, up to job->window messages are on their way to
 * the log at once (the log pipelines them); with one, a message per tick.
 * Either way the result goes only after every message is committed.
 */
static void
builtin_pump(struct builtin_job *job)
{
	struct timeval	tv;

	if (job->interval_ms > 0) {
		if (job->i < job->n && job->inflight == 0) {
			tv.tv_sec = job->interval_ms / 1000;
			tv.tv_usec = (job->interval_ms % 1000) * 1000;
			evtimer_add(job->timer, &tv);
		}
	} else {
		while (job->i < job->n && job->inflight < job->window)
			builtin_send_next(job);
	}
	if (job->i == job->n && job->inflight == 0)
		builtin_finish(job);
}

static void
builtin_sent_cb(int ok, void *arg)
{
	struct builtin_job	*job = arg;

	job->inflight--;
	if (!ok && !job->cancelled) {
		call_respond_error(job->call, JSONRPC_INTERNAL_ERROR,
		    "The event log refused a message of this call");
		job->cancelled = 1;
	}
	if (job->cancelled) {
		if (job->inflight == 0)
			builtin_job_free(job);
		return;
	}
	builtin_pump(job);
}

static void
builtin_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct builtin_job	*job = arg;

	/* A message below the log level still takes its tick. */
	if (!builtin_send_next(job))
		builtin_pump(job);
}

static void
builtin_cancel_cb(void *arg)
{
	struct builtin_job	*job = arg;

	job->cancelled = 1;
	evtimer_del(job->timer);
	if (job->inflight == 0)
		builtin_job_free(job);
}

static void
builtin_start(struct call *c, enum builtin_kind kind, const cJSON *args)
{
	struct builtin_job	*job;
	char			*cause = NULL;
	long			 n = 0, interval_ms = 0, size = 0;

	if (builtin_int_arg(args, "n", 1, BUILTIN_MAX_N, &n, &cause) != 0 ||
	    (kind == BUILTIN_STREAM && builtin_int_arg(args, "interval_ms", 0,
	    BUILTIN_MAX_INTERVAL, &interval_ms, &cause) != 0) ||
	    builtin_int_arg(args, "size", 0, BUILTIN_MAX_SIZE, &size,
	    &cause) != 0) {
		builtin_invalid(c, cause);
		return;
	}
	job = xcalloc(1, sizeof *job);
	job->kind = kind;
	job->call = c;
	job->n = n;
	job->interval_ms = interval_ms;
	job->size = size;
	job->window = BUILTIN_WINDOW;
	if (size > 0 && BUILTIN_WINDOW_BYTES / size < BUILTIN_WINDOW)
		job->window = (int)(BUILTIN_WINDOW_BYTES / size);
	if (job->window == 0)
		job->window = 1;
	job->timer = evtimer_new(server.base, builtin_timer_cb, job);
	call_set_cancel(c, builtin_cancel_cb, job);
	/* With an interval the first message goes at once, ticks follow. */
	if (interval_ms > 0 && n > 0)
		builtin_send_next(job);
	builtin_pump(job);
}

static void
builtin_echo(struct call *c, const cJSON *args)
{
	const cJSON	*text = cJSON_GetObjectItemCaseSensitive(args, "text");

	if (!cJSON_IsString(text)) {
		builtin_invalid(c, xstrdup("argument 'text' must be a string"));
		return;
	}
	call_respond_text(c, text->valuestring, 0);
	call_release(c);
}

static int
builtin_call_tool(struct call *c, const char *name, const cJSON *args)
{
	if (strcmp(name, "echo") == 0)
		builtin_echo(c, args);
	else if (strcmp(name, "stream") == 0)
		builtin_start(c, BUILTIN_STREAM, args);
	else if (strcmp(name, "notify") == 0 && call_stateless(c)) {
		/* A tool execution error: 2026-07-28 has no such stream. */
		call_respond_text(c, "notify needs a session: a stateless "
		    "(2026-07-28) request has no standalone stream", 1);
		call_release(c);
	} else if (strcmp(name, "notify") == 0)
		builtin_start(c, BUILTIN_NOTIFY, args);
	else
		return (-1);
	return (0);
}

const struct provider provider_builtin = {
	.name = "builtin",
	.enabled = builtin_enabled,
	.list_tools = builtin_list_tools,
	.call_tool = builtin_call_tool,
	.task_support = builtin_task_support,
};
