/*
 * The audit trail: who called what, where, and how it ended
 * (docs/audit.md has the fields).
 *
 * A line is written once the outcome is committed, by the process that
 * committed it: a session's call when its response entry is in the event
 * log (call.c hears so from its stream), a stateless call when its
 * response is handed to the connection, a cancelled call when it is
 * cancelled, a refusal by a limit when it is answered, and the call of a
 * process that died when another process commits its interrupted error
 * (stream.c's orphan path, with the context the dead process left next to
 * the call's lease, audit_context). Compare-and-append lets one process
 * commit that error, so one line is written.
 *
 * Lines go to a spool (spool.c): a thread of its own writes them, the
 * loop only queues a copy, so a stalled disk or syslog never stalls it.
 * What the spool could not write is counted; the cron logs it, limited.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "auth.h"
#include "clock.h"
#include "conf.h"
#include "digest.h"
#include "jsonrpc.h"
#include "log.h"
#include "server.h"
#include "spool.h"
#include "xmalloc.h"

/* How long the exit waits for lines to be written. */
#define AUDIT_EXIT_WAIT_MS	2000

struct audit_rec {
	cJSON			*ctx;		/* the line's fields so far */
	uint64_t		 start_ms;	/* monotonic */
	int			 set;		/* outcome given: keep it */
	enum audit_outcome	 outcome;
	int			 code;		/* a JSON-RPC error's */
	int			 tool_error;
	char			*limit;
	char			*task;		/* a task created */
	size_t			 bytes;
};

static struct {
	struct spool		*spool;
	int			 arguments;
	char			 instance[320];
	struct spool_stats	 logged;	/* what the cron said so far */
	struct spool_stats	 retired;	/* spools a reload replaced */
} audit;

static const char *audit_outcome_names[AUDIT_OUTCOMES] = {
	"ok", "error", "cancelled", "interrupted", "limited"
};

const char *
audit_outcome_name(enum audit_outcome o)
{
	return (o < AUDIT_OUTCOMES ? audit_outcome_names[o] : "?");
}

int
audit_enabled(void)
{
	return (audit.spool != NULL);
}

/* This process, as lines name it: HOST:PID. */
static void
audit_set_instance(void)
{
	char	host[256];

	if (gethostname(host, sizeof host) != 0)
		strlcpy(host, "localhost", sizeof host);
	host[sizeof host - 1] = '\0';
	snprintf(audit.instance, sizeof audit.instance, "%s:%ld", host,
	    (long)getpid());
}

int
audit_init(const struct conf *conf, char **cause)
{
	audit_set_instance();
	audit.arguments = conf->audit_arguments;
	if (conf->audit_log == NULL)
		return (0);
	if ((audit.spool = spool_open(conf->audit_log,
	    (size_t)conf->audit_queue, cause)) == NULL)
		return (-1);
	log_info("audit: lines to %s", conf->audit_log);
	return (0);
}

static void
audit_add_stats(struct spool_stats *sum, const struct spool_stats *st)
{
	sum->written += st->written;
	sum->dropped += st->dropped;
	sum->failed += st->failed;
}

/*
 * A reload: the destination may change (the old spool writes what it
 * holds and goes by itself), and so may the queue and the arguments.
 * One that cannot be opened leaves lines going where they went.
 */
void
audit_configure(const struct conf *conf)
{
	struct spool		*sp;
	struct spool_stats	 st;
	char			*cause;

	audit.arguments = conf->audit_arguments;
	if (audit.spool != NULL && conf->audit_log != NULL &&
	    strcmp(spool_target(audit.spool), conf->audit_log) == 0) {
		spool_set_max(audit.spool, (size_t)conf->audit_queue);
		return;
	}
	if (conf->audit_log == NULL)
		sp = NULL;
	else if ((sp = spool_open(conf->audit_log, (size_t)conf->audit_queue,
	    &cause)) == NULL) {
		log_error("reload: audit_log %s; audit lines go on to %s",
		    cause, audit.spool != NULL ? spool_target(audit.spool) :
		    "nowhere");
		free(cause);
		return;
	}
	if (audit.spool != NULL) {
		spool_stats(audit.spool, &st);
		audit_add_stats(&audit.retired, &st);
		audit_add_stats(&audit.logged, &st);
		spool_retire(audit.spool);
	}
	audit.spool = sp;
	memset(&audit.logged, 0, sizeof audit.logged);
	log_info("audit: lines to %s", sp != NULL ? conf->audit_log :
	    "nowhere (audit_log none)");
}

void
audit_reopen(void)
{
	if (audit.spool != NULL)
		spool_reopen(audit.spool);
}

void
audit_stats(struct spool_stats *st)
{
	memset(st, 0, sizeof *st);
	if (audit.spool != NULL)
		spool_stats(audit.spool, st);
	audit_add_stats(st, &audit.retired);
}

/* Once a second: lines lost since the last look are said, limited. */
void
audit_cron(void)
{
	struct spool_stats	st;

	if (audit.spool == NULL)
		return;
	spool_stats(audit.spool, &st);
	if (st.failed > audit.logged.failed)
		log_limited(LOG_LEVEL_ERROR, "audit-write", "audit_log %s: "
		    "%llu line(s) could not be written: %s",
		    spool_target(audit.spool), (unsigned long long)(st.failed -
		    audit.logged.failed), strerror(st.error));
	if (st.dropped > audit.logged.dropped)
		log_limited(LOG_LEVEL_ERROR, "audit-queue", "audit_log %s: "
		    "%llu line(s) dropped: the writer is behind by %llu "
		    "bytes (audit_queue %lld)", spool_target(audit.spool),
		    (unsigned long long)(st.dropped - audit.logged.dropped),
		    (unsigned long long)st.queued, server.conf->audit_queue);
	audit.logged = st;
}

void
audit_shutdown(void)
{
	if (audit.spool == NULL)
		return;
	spool_close(audit.spool, AUDIT_EXIT_WAIT_MS);
	audit.spool = NULL;
}

/* ---------------------------------------------------------------------
 * Records.
 */

static int
audit_method(const char *method)
{
	return (strcmp(method, "tools/call") == 0 ||
	    strcmp(method, "resources/read") == 0 ||
	    strcmp(method, "prompts/get") == 0 ||
	    strcmp(method, "tasks/cancel") == 0);
}

static void
audit_add_string(cJSON *o, const char *name, const char *value)
{
	if (value != NULL)
		cJSON_AddStringToObject(o, name, value);
	else
		cJSON_AddNullToObject(o, name);
}

struct audit_rec *
audit_begin(const char *method, const cJSON *params,
    const struct auth_principal *who, const char *sid, const char *protocol,
    const cJSON *id, const char *endpoint)
{
	struct audit_rec	*rec;
	const cJSON		*args, *v;
	cJSON			*ctx;
	char			*text, hex[DIGEST_SHA256_HEX];

	if (audit.spool == NULL || method == NULL || !audit_method(method))
		return (NULL);
	rec = xcalloc(1, sizeof *rec);
	rec->start_ms = clock_now_ms();
	rec->ctx = ctx = cJSON_CreateObject();
	cJSON_AddNumberToObject(ctx, "started_ms", (double)clock_wall_ms());
	cJSON_AddStringToObject(ctx, "instance", audit.instance);
	cJSON_AddStringToObject(ctx, "method", method);
	if (strcmp(method, "tools/call") == 0 ||
	    strcmp(method, "prompts/get") == 0)
		audit_add_string(ctx, strcmp(method, "tools/call") == 0 ?
		    "tool" : "prompt", cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(params, "name")));
	else if (strcmp(method, "resources/read") == 0)
		audit_add_string(ctx, "resource", cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(params, "uri")));
	else if (strcmp(method, "tasks/cancel") == 0)
		audit_add_string(ctx, "task", cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(params, "taskId")));
	audit_add_string(ctx, "principal", who != NULL ?
	    auth_principal_subject(who) : NULL);
	audit_add_string(ctx, "issuer", who != NULL ?
	    auth_principal_issuer(who) : NULL);
	audit_add_string(ctx, "client_id", who != NULL ?
	    auth_principal_client_id(who) : NULL);
	audit_add_string(ctx, "session", sid);
	cJSON_AddItemToObject(ctx, "request_id", id != NULL ?
	    cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	audit_add_string(ctx, "endpoint", endpoint);
	audit_add_string(ctx, "protocol", protocol);
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (args != NULL && (text = cJSON_PrintUnformatted(args)) != NULL) {
		digest_sha256_hex(text, strlen(text), hex, DIGEST_SHA256_LEN);
		cJSON_AddStringToObject(ctx, "arguments_sha256", hex);
		free(text);
	} else
		cJSON_AddNullToObject(ctx, "arguments_sha256");
	if (audit.arguments && (v = args) != NULL)
		cJSON_AddItemToObject(ctx, "arguments", cJSON_Duplicate(v, 1));
	return (rec);
}

void
audit_set(struct audit_rec *rec, enum audit_outcome outcome, int code,
    const char *limit)
{
	if (rec == NULL)
		return;
	rec->set = 1;
	rec->outcome = outcome;
	rec->code = code;
	free(rec->limit);
	rec->limit = limit != NULL ? xstrdup(limit) : NULL;
}

/* An error's code, if it is a JSON-RPC one (an integer in range). */
static int
audit_code(const cJSON *error)
{
	const cJSON	*code = cJSON_GetObjectItemCaseSensitive(error, "code");

	if (!cJSON_IsNumber(code) || code->valuedouble < -2147483648.0 ||
	    code->valuedouble > 2147483647.0)
		return (0);
	return ((int)code->valuedouble);
}

void
audit_respond(struct audit_rec *rec, const cJSON *msg, size_t len)
{
	const cJSON	*result, *error, *task;

	if (rec == NULL)
		return;
	rec->bytes = len;
	result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	error = cJSON_GetObjectItemCaseSensitive(msg, "error");
	/* A CreateTaskResult: the task this call created. */
	task = cJSON_GetObjectItemCaseSensitive(result, "taskId");
	if (!cJSON_IsString(task))
		task = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(result, "task"), "taskId");
	if (cJSON_IsString(task)) {
		free(rec->task);
		rec->task = xstrdup(task->valuestring);
	}
	if (rec->set) {
		if (error != NULL && rec->code == 0)
			rec->code = audit_code(error);
		return;
	}
	if (error != NULL) {
		rec->outcome = AUDIT_ERROR;
		rec->code = audit_code(error);
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
	    "isError"))) {
		rec->outcome = AUDIT_ERROR;
		rec->tool_error = 1;
	} else
		rec->outcome = AUDIT_OK;
}

void
audit_free(struct audit_rec *rec)
{
	if (rec == NULL)
		return;
	cJSON_Delete(rec->ctx);
	free(rec->limit);
	free(rec->task);
	free(rec);
}

cJSON *
audit_context(const struct audit_rec *rec)
{
	return (rec != NULL ? cJSON_Duplicate(rec->ctx, 1) : NULL);
}

/* RFC 3339, UTC, to the millisecond. */
static void
audit_time(char *buf, size_t len, uint64_t wall_ms)
{
	time_t		t = (time_t)(wall_ms / 1000);
	struct tm	tm;
	char		s[32];

	gmtime_r(&t, &tm);
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", s, (unsigned)(wall_ms % 1000));
}

/*
 * The line: time and the request's fields first (a stable order), then
 * the outcome's, in the names docs/audit.md fixes.
 */
static void
audit_emit(cJSON *ctx, enum audit_outcome outcome, int code, int tool_error,
    const char *limit, const char *task, uint64_t duration_ms, size_t bytes,
    const char *writer)
{
	cJSON		*line, *item;
	char		 when[64], *text;

	if (audit.spool == NULL)
		return;
	line = cJSON_CreateObject();
	audit_time(when, sizeof when, clock_wall_ms());
	cJSON_AddStringToObject(line, "time", when);
	while ((item = ctx->child) != NULL) {
		cJSON_DetachItemViaPointer(ctx, item);
		if (item->string != NULL &&
		    strcmp(item->string, "started_ms") == 0) {
			cJSON_Delete(item);
			continue;
		}
		if (item->string != NULL && strcmp(item->string, "task") == 0 &&
		    task != NULL) {
			cJSON_Delete(item);
			continue;
		}
		cJSON_AddItemToObject(line, item->string, item);
	}
	if (task != NULL)
		cJSON_AddStringToObject(line, "task", task);
	cJSON_AddStringToObject(line, "outcome", audit_outcome_name(outcome));
	if (code != 0)
		cJSON_AddNumberToObject(line, "code", code);
	if (tool_error)
		cJSON_AddBoolToObject(line, "tool_error", 1);
	if (limit != NULL)
		cJSON_AddStringToObject(line, "limit", limit);
	cJSON_AddNumberToObject(line, "duration_ms", (double)duration_ms);
	cJSON_AddNumberToObject(line, "response_bytes", (double)bytes);
	if (writer != NULL)
		cJSON_AddStringToObject(line, "written_by", writer);
	if ((text = cJSON_PrintUnformatted(line)) != NULL) {
		spool_put(audit.spool, text, strlen(text));
		free(text);
	}
	cJSON_Delete(line);
}

void
audit_write(struct audit_rec *rec)
{
	if (rec == NULL)
		return;
	audit_emit(rec->ctx, rec->outcome, rec->code, rec->tool_error,
	    rec->limit, rec->task, clock_now_ms() - rec->start_ms, rec->bytes,
	    NULL);
	audit_free(rec);
}

void
audit_orphan(const cJSON *ctx, const char *sid, const cJSON *id,
    const char *message)
{
	cJSON		*copy, *err;
	char		*text;
	double		 started;
	uint64_t	 now = clock_wall_ms(), duration = 0;
	size_t		 bytes = 0;

	if (audit.spool == NULL)
		return;
	if (cJSON_IsObject(ctx))
		copy = cJSON_Duplicate(ctx, 1);
	else {
		/* The dead process left nothing to say what it was. */
		copy = cJSON_CreateObject();
		cJSON_AddNullToObject(copy, "instance");
		cJSON_AddNullToObject(copy, "method");
		audit_add_string(copy, "session", sid);
		cJSON_AddItemToObject(copy, "request_id", cJSON_Duplicate(id,
		    1));
	}
	started = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(copy,
	    "started_ms"));
	if (started > 0 && (uint64_t)started < now)
		duration = now - (uint64_t)started;
	err = jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, message, NULL);
	if ((text = cJSON_PrintUnformatted(err)) != NULL) {
		bytes = strlen(text);
		free(text);
	}
	cJSON_Delete(err);
	audit_emit(copy, AUDIT_INTERRUPTED, JSONRPC_INTERNAL_ERROR, 0, NULL,
	    NULL, duration, bytes, audit.instance);
	cJSON_Delete(copy);
}
