/*
 * Exec tools: the conf's "tool NAME { }" blocks as MCP tools. A call's
 * arguments are checked against the tool's params and substituted into its
 * exec line; the program runs through exec.c. Every line of its standard
 * output becomes a notifications/progress when the call has a
 * progressToken, and the result is the output kept (max_output), marked
 * isError when the program failed.
 *
 * Backpressure end to end: at most EXECTOOL_INFLIGHT progress messages are
 * uncommitted at a time; the job is paused at that count. Under the block
 * policy a stream whose client lags keeps them waiting (stream.c), so the
 * job stays paused, its pipe fills and the program blocks in write(2)
 * until the client catches up.
 *
 * A call ends once: its program is done (exec's done callback). Cancel,
 * DELETE, shutdown and the tool's timeout only ask exec to kill it; the
 * call's state is freed when the program is done and no send is in flight.
 */
#include <sys/queue.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "auth.h"
#include "call.h"
#include "conf.h"
#include "exec.h"
#include "jsonrpc.h"
#include "log.h"
#include "provider.h"
#include "provider_exec.h"
#include "server.h"
#include "session.h"
#include "trace.h"
#include "utf8.h"
#include "xmalloc.h"

/* Progress messages of one call waiting for their commit. */
#define EXECTOOL_INFLIGHT	16
/* Integers beyond this lose precision as JSON numbers (2^53). */
#define EXECTOOL_INTEGER_MAX	9007199254740992.0

struct exectool_call {
	const struct conf	*conf;		/* holds tool's definition */
	const struct conf_tool	*tool;
	struct call		*call;		/* NULL once released */
	struct exec_job		*job;		/* NULL once done */
	long			 pid;
	struct event		*timer;		/* the tool's timeout */

	char			*out;		/* stdout kept */
	size_t			 outlen;
	size_t			 outsize;
	size_t			 outtotal;	/* stdout in all */
	long long		 lines;

	u_int			 inflight;	/* sends not called back */
	int			 paused;
	int			 cancelled;
	int			 timed_out;
	int			 failed;	/* the log refused a send */
	int			 done;		/* the program is done */
	struct trace_span	*span;		/* the process's life */

	TAILQ_ENTRY(exectool_call) entry;
};
TAILQ_HEAD(exectool_calls, exectool_call);

/* Calls whose programs are not done yet, for max_concurrency. */
static struct exectool_calls	exectool_running =
    TAILQ_HEAD_INITIALIZER(exectool_running);

/* ---------------------------------------------------------------------
 * Arguments, schema and text: no processes involved.
 */

cJSON *
provider_exec_schema(const struct conf_tool *tool)
{
	const struct conf_param	*param;
	cJSON			*schema, *props, *prop, *required = NULL;
	size_t			 i;

	schema = cJSON_CreateObject();
	cJSON_AddStringToObject(schema, "type", "object");
	props = cJSON_AddObjectToObject(schema, "properties");
	for (i = 0; i < tool->nparams; i++) {
		param = &tool->params[i];
		prop = cJSON_AddObjectToObject(props, param->name);
		cJSON_AddStringToObject(prop, "type",
		    conf_param_type_name(param->type));
		if (param->description != NULL)
			cJSON_AddStringToObject(prop, "description",
			    param->description);
		if (!param->required)
			continue;
		if (required == NULL)
			required = cJSON_AddArrayToObject(schema, "required");
		cJSON_AddItemToArray(required, cJSON_CreateString(param->name));
	}
	cJSON_AddBoolToObject(schema, "additionalProperties", 0);
	return (schema);
}

/* A number in its shortest form that reads back the same. */
static char *
exectool_number(double d)
{
	char	*s;
	int	 digits;

	if (d == 0)
		return (xstrdup("0"));	/* and not "-0" */
	for (digits = 15; digits < 17; digits++) {
		xasprintf(&s, "%.*g", digits, d);
		if (strtod(s, NULL) == d)
			return (s);
		free(s);
	}
	xasprintf(&s, "%.17g", d);
	return (s);
}

/* A whole number, all digits (exact up to 2^53). */
static char *
exectool_integer(double d)
{
	char	*s;

	if (d == 0)
		return (xstrdup("0"));
	xasprintf(&s, "%.0f", d);
	return (s);
}

/* One argument as an argv word, or NULL with *cause set. */
static char *
exectool_value(const struct conf_param *param, const cJSON *v,
    char **cause)
{
	switch (param->type) {
	case CONF_PARAM_STRING:
		if (cJSON_IsString(v))
			return (xstrdup(v->valuestring));
		xasprintf(cause, "argument '%s' must be a string",
		    param->name);
		return (NULL);
	case CONF_PARAM_INTEGER:
		if (cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
		    floor(v->valuedouble) == v->valuedouble &&
		    fabs(v->valuedouble) <= EXECTOOL_INTEGER_MAX)
			return (exectool_integer(v->valuedouble));
		xasprintf(cause, "argument '%s' must be an integer",
		    param->name);
		return (NULL);
	case CONF_PARAM_NUMBER:
		if (cJSON_IsNumber(v) && isfinite(v->valuedouble))
			return (exectool_number(v->valuedouble));
		xasprintf(cause, "argument '%s' must be a number",
		    param->name);
		return (NULL);
	case CONF_PARAM_BOOLEAN:
		if (cJSON_IsBool(v))
			return (xstrdup(cJSON_IsTrue(v) ? "true" : "false"));
		xasprintf(cause, "argument '%s' must be a boolean (true or "
		    "false)", param->name);
		return (NULL);
	}
	xasprintf(cause, "argument '%s' has an unknown type", param->name);
	return (NULL);
}

static int
exectool_param(const struct conf_tool *tool, const char *name)
{
	size_t	i;

	for (i = 0; i < tool->nparams; i++) {
		if (strcmp(tool->params[i].name, name) == 0)
			return ((int)i);
	}
	return (-1);
}

static void
exectool_words_free(char **words, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(words[i]);
	free(words);
}

char **
provider_exec_argv(const struct conf_tool *tool, const cJSON *args,
    char **cause)
{
	const struct conf_param	*param;
	const cJSON		*v, *w;
	char			**values, **argv;
	size_t			 i;
	int			 p;

	if (args != NULL && !cJSON_IsObject(args)) {
		*cause = xstrdup("arguments must be an object");
		return (NULL);
	}
	cJSON_ArrayForEach(v, args) {
		if (exectool_param(tool, v->string) == -1) {
			xasprintf(cause, "unknown argument '%s'", v->string);
			return (NULL);
		}
		for (w = v->next; w != NULL; w = w->next) {
			if (strcmp(w->string, v->string) == 0) {
				xasprintf(cause, "argument '%s' is given "
				    "twice", v->string);
				return (NULL);
			}
		}
	}

	values = xcalloc(tool->nparams, sizeof *values);
	for (i = 0; i < tool->nparams; i++) {
		param = &tool->params[i];
		v = cJSON_GetObjectItemCaseSensitive(args, param->name);
		if (v == NULL) {
			if (param->required) {
				xasprintf(cause, "missing required argument "
				    "'%s'", param->name);
				exectool_words_free(values, tool->nparams);
				return (NULL);
			}
			values[i] = xstrdup("");
		} else if ((values[i] = exectool_value(param, v,
		    cause)) == NULL) {
			exectool_words_free(values, tool->nparams);
			return (NULL);
		}
	}

	argv = xcalloc(tool->argc + 1, sizeof *argv);
	for (i = 0; i < tool->argc; i++) {
		p = tool->argv_param[i];
		argv[i] = xstrdup(p >= 0 ? values[p] : tool->argv[i]);
	}
	exectool_words_free(values, tool->nparams);
	return (argv);
}

char *
provider_exec_text(const char *s, size_t len)
{
	char	*out, *o;
	size_t	 i = 0, n;

	o = out = xmalloc(len * 3 + 1);
	while (i < len) {
		if ((n = utf8_sequence(s + i, len - i, UTF8_NO_NUL)) == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
			i++;
			continue;
		}
		memcpy(o, s + i, n);
		o += n;
		i += n;
	}
	*o = '\0';
	return (out);
}

/* ---------------------------------------------------------------------
 * Calls.
 */

static int
exectool_enabled(const struct conf *conf)
{
	return (conf->ntools > 0);
}

/*
 * The scope the tool block names (NULL: none), from the running
 * configuration: a reload changes it live.
 */
static const char *
exectool_tool_scope(const char *name)
{
	const struct conf_tool	*tool = conf_tool_find(server.conf, name);

	return (tool != NULL ? tool->scope : NULL);
}

/* What the tool block's task key says. */
static const char *
exectool_task_support(const char *name)
{
	const struct conf_tool	*tool = conf_tool_find(server.conf, name);

	if (tool == NULL || tool->task_support == CONF_TASK_FORBIDDEN)
		return (NULL);
	return (tool->task_support == CONF_TASK_REQUIRED ? "required" :
	    "optional");
}

static void
exectool_list_tools(cJSON *tools)
{
	const struct conf	*conf = server.conf;
	const struct conf_tool	*tool;
	cJSON			*item;
	size_t			 i;

	for (i = 0; i < conf->ntools; i++) {
		tool = &conf->tools[i];
		item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, "name", tool->name);
		if (tool->description != NULL)
			cJSON_AddStringToObject(item, "description",
			    tool->description);
		cJSON_AddItemToObject(item, "inputSchema",
		    provider_exec_schema(tool));
		if (exectool_task_support(tool->name) != NULL)
			provider_task_support(item,
			    exectool_task_support(tool->name));
		cJSON_AddItemToArray(tools, item);
	}
}

/* Ends a call that started nothing with an isError result. */
static void
exectool_refuse(struct call *c, char *text)
{
	call_respond_text(c, text, 1);
	call_release(c);
	free(text);
}

/* The call's session, for log lines. */
static const char *
exectool_sid(const struct exectool_call *t)
{
	return (t->call != NULL ? call_owner(t->call) : "-");
}

static void
exectool_maybe_free(struct exectool_call *t)
{
	if (!t->done || t->inflight > 0)
		return;
	event_free(t->timer);
	free(t->out);
	conf_release(t->conf);
	free(t);
}

/* Keep what fits of a line of stdout for the result. */
static void
exectool_keep(struct exectool_call *t, const char *line, size_t len,
    int newline)
{
	size_t	max = (size_t)t->tool->max_output, room, need;

	t->outtotal += len + (newline ? 1 : 0);
	if (t->outlen >= max)
		return;
	room = max - t->outlen;
	need = len + (newline ? 1 : 0);
	if (need > room)
		need = room;
	if (t->outlen + need > t->outsize) {
		t->outsize = t->outsize == 0 ? 4096 : t->outsize;
		while (t->outsize < t->outlen + need)
			t->outsize *= 2;
		if (t->outsize > max)
			t->outsize = max;
		t->out = xrealloc(t->out, t->outsize);
	}
	if (need <= len)
		memcpy(t->out + t->outlen, line, need);
	else {
		memcpy(t->out + t->outlen, line, len);
		t->out[t->outlen + len] = '\n';
	}
	t->outlen += need;
}

static cJSON *
exectool_progress(const cJSON *token, long long n, const char *line,
    size_t len)
{
	cJSON	*params = cJSON_CreateObject();
	char	*text;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	text = provider_exec_text(line, len);
	cJSON_AddItemToObject(params, "progressToken",
	    cJSON_Duplicate(token, 1));
	cJSON_AddNumberToObject(params, "progress", (double)n);
	cJSON_AddStringToObject(params, "message", text);
	free(text);
	return (jsonrpc_notification("notifications/progress", params));
}

static void
exectool_sent_cb(int ok, void *arg)
{
	struct exectool_call	*t = arg;

	t->inflight--;
	if (!ok && !t->cancelled && !t->done && !t->failed) {
		log_limited(LOG_LEVEL_WARN, "exec-refused", "session=%s "
		    "tool=%s pid=%ld: the event log refused a progress "
		    "message; killing the program", exectool_sid(t),
		    t->tool->name, t->pid);
		t->failed = 1;
		exec_kill(t->job);
	}
	if (t->paused && t->inflight < EXECTOOL_INFLIGHT) {
		t->paused = 0;
		if (t->job != NULL)
			exec_resume(t->job);
	}
	exectool_maybe_free(t);
}

static void
exectool_line_cb(const char *line, size_t len, int newline, void *arg)
{
	struct exectool_call	*t = arg;
	const cJSON		*token;

	exectool_keep(t, line, len, newline);
	t->lines++;
	if (t->cancelled || t->failed)
		return;
	if ((token = call_progress_token(t->call)) == NULL)
		return;
	t->inflight++;
	call_send(t->call, exectool_progress(token, t->lines, line, len),
	    exectool_sent_cb, t);
	if (t->inflight >= EXECTOOL_INFLIGHT && !t->paused) {
		t->paused = 1;
		exec_pause(t->job);
	}
}

static void
exectool_add_text(cJSON *content, const char *text)
{
	cJSON	*item = cJSON_CreateObject();

	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", text);
	cJSON_AddItemToArray(content, item);
}

/* How the program ended, and stderr, for an isError result. */
static char *
exectool_status(const struct exectool_call *t, const struct exec_result *r)
{
	const char	*sig;
	char		*how, *err, *text;

	if (r->exited)
		xasprintf(&how, "exit status %d", r->status);
	else {
		if ((sig = sigabbrev_np(r->status)) == NULL)
			sig = "?";
		xasprintf(&how, "killed by signal %d (SIG%s)", r->status,
		    sig);
	}
	if (t->timed_out) {
		xasprintf(&text, "timed out after %lld s (%s)",
		    t->tool->timeout, how);
		free(how);
		how = text;
	}
	if (r->errtotal == 0)
		return (how);
	err = provider_exec_text(r->err, r->errlen);
	if (r->errtotal > r->errlen)
		xasprintf(&text, "%s\nstderr (first %zu of %zu bytes):\n%s",
		    how, r->errlen, r->errtotal, err);
	else
		xasprintf(&text, "%s\nstderr:\n%s", how, err);
	free(err);
	free(how);
	return (text);
}

/*
 * The result: stdout as the first text item; a note when it was cut; on
 * failure a last item with the status and stderr, and isError.
 */
static cJSON *
exectool_result(const struct exectool_call *t, const struct exec_result *r)
{
	cJSON	*result = cJSON_CreateObject();
	cJSON	*content = cJSON_AddArrayToObject(result, "content");
	char	*text;
	int	 failed;

	text = provider_exec_text(t->out, t->outlen);
	exectool_add_text(content, text);
	free(text);
	if (t->outtotal > t->outlen) {
		xasprintf(&text, "[output cut: the first %zu of %zu bytes "
		    "are shown (max_output)]", t->outlen, t->outtotal);
		exectool_add_text(content, text);
		free(text);
	}
	failed = t->timed_out || !r->exited || r->status != 0;
	if (failed) {
		text = exectool_status(t, r);
		exectool_add_text(content, text);
		free(text);
		cJSON_AddBoolToObject(result, "isError", 1);
	}
	return (result);
}

/* The process's span ends as it ended. */
static void
exectool_trace_end(struct exectool_call *t, const struct exec_result *r)
{
	char	what[32];

	if (r->exited)
		trace_attr_int(t->span, "process.exit.code", r->status);
	else
		trace_attr_int(t->span, "mcpd.process.signal", r->status);
	trace_attr_int(t->span, "mcpd.process.output_lines", t->lines);
	if (t->timed_out)
		trace_error(t->span, "timeout", NULL);
	else if (!r->exited) {
		snprintf(what, sizeof what, "signal %d", r->status);
		trace_error(t->span, "signal", what);
	} else if (r->status != 0) {
		snprintf(what, sizeof what, "exit status %d", r->status);
		trace_error(t->span, "exit_status", what);
	}
	trace_end(t->span);
	t->span = NULL;
}

static void
exectool_done_cb(const struct exec_result *r, void *arg)
{
	struct exectool_call	*t = arg;
	int			 depth = trace_enter(call_trace(t->call));

	t->job = NULL;
	t->done = 1;
	TAILQ_REMOVE(&exectool_running, t, entry);
	evtimer_del(t->timer);
	exectool_trace_end(t, r);
	log_limited(LOG_LEVEL_INFO, "exec-exit", "session=%s tool=%s pid=%ld: "
	    "%s %d, %lld lines, %zu bytes%s", exectool_sid(t), t->tool->name,
	    t->pid, r->exited ? "exit status" : "killed by signal", r->status,
	    t->lines, t->outtotal, t->cancelled ? " (cancelled)" :
	    t->timed_out ? " (timed out)" : "");

	if (!t->cancelled) {
		if (t->failed)
			call_respond_error(t->call, JSONRPC_INTERNAL_ERROR,
			    "The event log refused a message of this call");
		else
			call_respond(t->call, exectool_result(t, r));
	}
	call_release(t->call);
	t->call = NULL;
	trace_leave(depth);
	exectool_maybe_free(t);
}

static void
exectool_cancel_cb(void *arg)
{
	struct exectool_call	*t = arg;

	t->cancelled = 1;
	if (t->job != NULL)
		exec_kill(t->job);
}

static void
exectool_timeout_cb(evutil_socket_t fd, short events, void *arg)
{
	struct exectool_call	*t = arg;

	log_limited(LOG_LEVEL_WARN, "exec-timeout", "session=%s tool=%s "
	    "pid=%ld: timed out after %lld s", exectool_sid(t), t->tool->name,
	    t->pid, t->tool->timeout);
	t->timed_out = 1;
	if (t->job != NULL)
		exec_kill(t->job);
}

/*
 * Calls of the tool named name whose programs are not done, those started
 * before a reload (with the tool's definition of then) included.
 */
static long long
exectool_count(const char *name)
{
	struct exectool_call	*t;
	long long		 n = 0;

	TAILQ_FOREACH(t, &exectool_running, entry) {
		if (strcmp(t->tool->name, name) == 0)
			n++;
	}
	return (n);
}

/*
 * The tool's environment, and who the call is for when auth is on (never
 * the token): MCPD_ISSUER, MCPD_SUBJECT, MCPD_CLIENT_ID (empty without
 * one) and MCPD_SCOPES (space-separated); and while tracing, the
 * process's trace context as OpenTelemetry's environment carrier has it:
 * TRACEPARENT, and TRACESTATE if there is one. A variable of the tool's
 * own env by one of these names is left out, so the program can trust
 * them.
 */
static char **
exectool_env(const struct conf_tool *tool, const struct auth_principal *p,
    const struct trace_span *sp)
{
	static const char	*names[] = { "MCPD_ISSUER=", "MCPD_SUBJECT=",
				    "MCPD_CLIENT_ID=", "MCPD_SCOPES=",
				    "TRACEPARENT=", "TRACESTATE=" };
	char			**env, *scopes, tp[TRACE_PARENT_LEN + 1];
	size_t			 i, j, n = 0;
	const char		*cid;
	int			 traced = trace_traceparent(sp, tp) == 0;

	env = xcalloc(tool->nenv + 7, sizeof *env);
	for (i = 0; i < tool->nenv; i++) {
		for (j = 0; j < 6; j++) {
			if (((j < 4 && p != NULL) || (j >= 4 && traced)) &&
			    strncmp(tool->env[i], names[j],
			    strlen(names[j])) == 0)
				break;
		}
		if (j == 6)
			env[n++] = xstrdup(tool->env[i]);
	}
	if (p != NULL) {
		cid = auth_principal_client_id(p);
		scopes = auth_principal_scopes(p);
		xasprintf(&env[n++], "MCPD_ISSUER=%s",
		    auth_principal_issuer(p));
		xasprintf(&env[n++], "MCPD_SUBJECT=%s",
		    auth_principal_subject(p));
		xasprintf(&env[n++], "MCPD_CLIENT_ID=%s",
		    cid != NULL ? cid : "");
		xasprintf(&env[n++], "MCPD_SCOPES=%s", scopes);
		free(scopes);
	}
	if (traced) {
		xasprintf(&env[n++], "TRACEPARENT=%s", tp);
		if (trace_span_state(sp) != NULL)
			xasprintf(&env[n++], "TRACESTATE=%s",
			    trace_span_state(sp));
	}
	env[n] = NULL;
	return (env);
}

static int
exectool_call_tool(struct call *c, const char *name, const cJSON *args)
{
	const struct conf	*conf = server.conf;
	const struct conf_tool	*tool;
	struct exectool_call	*t;
	struct exec_spec	 spec;
	struct exec_job		*job;
	struct timeval		 tv;
	char			**argv, **env, *cause = NULL, *text;
	char			 spanname[160];

	if ((tool = conf_tool_find(conf, name)) == NULL)
		return (-1);

	if ((argv = provider_exec_argv(tool, args, &cause)) == NULL) {
		xasprintf(&text, "invalid arguments: %s", cause);
		free(cause);
		exectool_refuse(c, text);
		return (0);
	}
	if (tool->max_concurrency > 0 &&
	    exectool_count(tool->name) >= tool->max_concurrency) {
		xasprintf(&text, "tool busy: %s is running %lld calls "
		    "(max_concurrency); try again later", tool->name,
		    tool->max_concurrency);
		goto busy;
	}
	if (exec_count() >= conf->max_children) {
		xasprintf(&text, "tool busy: %lld programs are running "
		    "(max_children); try again later", conf->max_children);
		goto busy;
	}

	t = xcalloc(1, sizeof *t);
	t->span = trace_child(tool->name, TRACE_INTERNAL, call_trace(c));
	if (trace_recording(t->span)) {
		snprintf(spanname, sizeof spanname, "exec %s", tool->name);
		trace_rename(t->span, spanname);
		trace_attr_str(t->span, "process.executable.path",
		    tool->program);
		trace_attr_str(t->span, "gen_ai.tool.name", tool->name);
	}
	memset(&spec, 0, sizeof spec);
	spec.path = tool->program;
	spec.argv = argv;
	env = exectool_env(tool, call_principal(c), t->span);
	spec.envp = env;
	spec.cwd = tool->cwd;
	spec.name = tool->name;
	job = exec_start(&spec, exectool_line_cb, exectool_done_cb, t, &cause);
	xfree_words(env);
	if (job == NULL) {
		log_limited(LOG_LEVEL_WARN, "exec-start", "session=%s tool=%s: "
		    "cannot run: %s", call_owner(c), tool->name,
		    cause);
		xasprintf(&text, "cannot run %s: %s", tool->name, cause);
		trace_error(t->span, "start_failed", cause);
		trace_end(t->span);
		free(cause);
		free(t);
		xfree_words(argv);
		exectool_refuse(c, text);
		return (0);
	}
	xfree_words(argv);

	t->conf = conf_ref(conf);
	t->tool = tool;
	t->call = c;
	t->job = job;
	t->pid = (long)exec_pid(job);
	trace_attr_int(t->span, "process.pid", t->pid);
	t->timer = evtimer_new(server.base, exectool_timeout_cb, t);
	tv.tv_sec = tool->timeout;
	tv.tv_usec = 0;
	evtimer_add(t->timer, &tv);
	TAILQ_INSERT_TAIL(&exectool_running, t, entry);
	call_set_cancel(c, exectool_cancel_cb, t);
	log_limited(LOG_LEVEL_INFO, "exec-start", "session=%s tool=%s pid=%ld: "
	    "started", call_owner(c), tool->name, t->pid);
	return (0);

busy:
	log_limited(LOG_LEVEL_INFO, "exec-busy", "session=%s %s",
	    call_owner(c), text);
	xfree_words(argv);
	exectool_refuse(c, text);
	return (0);
}

const struct provider provider_exec = {
	.name = "exec",
	.enabled = exectool_enabled,
	.list_tools = exectool_list_tools,
	.call_tool = exectool_call_tool,
	.task_support = exectool_task_support,
	.tool_scope = exectool_tool_scope,
};
