/*
 * Tasks: durable records of tool calls that outlive their request.
 *
 * A task's record is JSON kept in the event log (eventlog_task_put/get):
 * the Task the client sees (taskId, status, statusMessage, createdAt,
 * lastUpdatedAt, ttlMs, pollIntervalMs, and result, error or
 * inputRequests as its status has them) and, under "mcpd", what only
 * instances read: the owner (the instance running the call), when it was
 * created (wall clock, ms), and the client's answers to its input
 * requests on their way to the owner. Every change is read, changed and
 * written back as the next revision, compare-and-set (task_change): two
 * instances changing one task (a cancel here, the result there) never
 * lose a write, and a terminal status is never left again.
 *
 * The owner runs the tool through the call API with a sink (call.h)
 * instead of a stream: the response becomes the task's result (or its
 * error), a request to the client becomes an inputRequests entry that
 * tasks/update answers. With a shared log the owner also holds a lease
 * (the note "lease" of the task id, as lease.c's leases of request
 * streams), renewed while the task runs, and every TASK_TICK_MS reads its
 * record for what other instances wrote (a cancel, answers). Whoever
 * reads a task that is not finished and whose lease has lapsed knows its
 * owner died (kill -9, a crash) and fails it.
 *
 * With auth, a task is its creator's, as a session is: the record keeps
 * the principal (issuer, subject, client id) of the request that made
 * it, and a tasks/get, tasks/update or tasks/cancel of another principal
 * is answered exactly as an unknown id is (task_allowed).
 *
 * Task ids are bearer secrets (whoever holds one reads and cancels the
 * task, as the extension allows without auth): no log line carries one,
 * at any level. Lines name a task by its handle, the first 8 hex digits
 * of the id's SHA-256 (task_handle).
 *
 * Tracing: a task is a span ("task TOOL") from its tools/call to its
 * end, the parent of what its call does; the record keeps its context
 * (mcpd.traceparent), so a tasks/get, tasks/update or tasks/cancel that
 * any instance answers is traced into the task's trace (task_trace_poll),
 * linked to the request's own span. Spans name a task by its handle too.
 *
 * Retention: a record lives task_ttl from its creation, whatever its
 * status (ttlMs); then tasks/get answers not found. An instance runs at
 * most max_tasks at once, and at most max_tasks_per_principal for one
 * principal (with auth). The memory log keeps at most max_tasks records;
 * a finished one is forgotten early, the longest finished first, to make
 * room for a new task (eventlog_task_put's final).
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "announce.h"
#include "auth.h"
#include "call.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "jwt.h"
#include "lease.h"
#include "log.h"
#include "mcp.h"
#include "provider.h"
#include "random.h"
#include "server.h"
#include "task.h"
#include "trace.h"
#include "xmalloc.h"

/* How often a running task's owner renews, reads and checks its task. */
#define TASK_TICK_MS		250
/* Writes of one change that may lose a race before it gives up. */
#define TASK_CHANGE_TRIES	16
#define TASK_LEASE_NOTE		"lease"
/* How often a result the log did not take is written again. */
#define TASK_RETRY_MS		500
/* Questions one task may have pending at once. */
#define TASK_MAX_QUESTIONS	64
#define TASK_NOT_FOUND		"Failed to retrieve task: Task not found"
/* Hex digits of a task's handle in log lines. */
#define TASK_HANDLE_LEN		8

/* ---------------------------------------------------------------------
 * The state machine.
 */

static const char *task_state_names[TASK_STATE_MAX] = {
	"working", "input_required", "completed", "failed", "cancelled"
};

const char *
task_state_name(enum task_state state)
{
	if (state >= TASK_STATE_MAX)
		return ("unknown");
	return (task_state_names[state]);
}

/* A status name's state, or -1. */
int
task_state_parse(const char *name)
{
	int	i;

	for (i = 0; i < TASK_STATE_MAX; i++) {
		if (strcmp(name, task_state_names[i]) == 0)
			return (i);
	}
	return (-1);
}

int
task_state_terminal(enum task_state state)
{
	return (state == TASK_COMPLETED || state == TASK_FAILED ||
	    state == TASK_CANCELLED);
}

/* The extension's diagram: working <-> input_required, then one end. */
int
task_state_allowed(enum task_state from, enum task_state to)
{
	if (from >= TASK_STATE_MAX || to >= TASK_STATE_MAX ||
	    task_state_terminal(from))
		return (0);
	return (from != to);
}

static enum task_state
task_state_of(const cJSON *rec)
{
	const cJSON	*status;
	int		 state;

	status = cJSON_GetObjectItemCaseSensitive(rec, "status");

	if (!cJSON_IsString(status) ||
	    (state = task_state_parse(status->valuestring)) < 0)
		return (TASK_FAILED);
	return ((enum task_state)state);
}

static const char	*task_string(const cJSON *, const char *);

/*
 * A task's name in log lines (buf: TASK_HANDLE_LEN + 1 bytes): the id is
 * the secret that reads and cancels the task, so lines carry this
 * instead. The same on every instance; an operator who has an id finds
 * its lines with printf %s ID | sha256sum | cut -c1-8, and the handle
 * gives nothing of the id back.
 */
static const char *
task_handle(const char *tid, char *buf)
{
	unsigned char	hash[JWT_SHA256_LEN];
	int		i;

	if (tid == NULL) {
		strlcpy(buf, "?", TASK_HANDLE_LEN + 1);
		return (buf);
	}
	jwt_sha256(tid, strlen(tid), hash);
	for (i = 0; i < TASK_HANDLE_LEN / 2; i++)
		snprintf(buf + 2 * i, 3, "%02x", hash[i]);
	return (buf);
}

static void
task_set_string(cJSON *obj, const char *key, const char *value)
{
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	if (value != NULL)
		cJSON_AddStringToObject(obj, key, value);
}

/*
 * The only writer of a record's status: refuses (0) what the diagram
 * does not allow, and logs each transition.
 */
static int
task_set_state(cJSON *rec, enum task_state to, const char *message)
{
	enum task_state	 from = task_state_of(rec);
	char		 handle[TASK_HANDLE_LEN + 1];

	if (!task_state_allowed(from, to))
		return (0);
	log_debug("task=%s %s -> %s%s%s", task_handle(task_string(rec,
	    "taskId"), handle), task_state_name(from), task_state_name(to),
	    message != NULL ? ": " : "", message != NULL ? message : "");
	task_set_string(rec, "status", task_state_name(to));
	task_set_string(rec, "statusMessage", message);
	if (to != TASK_INPUT_REQUIRED)
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "inputRequests");
	return (1);
}

/* ---------------------------------------------------------------------
 * Records.
 */

static char	task_instance[33];	/* this process, as an owner */

static void
task_iso_time(char *buf, size_t len, uint64_t ms)
{
	time_t		t = (time_t)(ms / 1000);
	struct tm	tm;
	size_t		n;

	gmtime_r(&t, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03uZ", (u_int)(ms % 1000));
}

static cJSON *
task_mcpd(const cJSON *rec)
{
	return (cJSON_GetObjectItemCaseSensitive(rec, "mcpd"));
}

static uint64_t
task_number(const cJSON *obj, const char *key)
{
	const cJSON	*n = cJSON_GetObjectItemCaseSensitive(obj, key);

	return (cJSON_IsNumber(n) && n->valuedouble > 0 ?
	    (uint64_t)n->valuedouble : 0);
}

static const char *
task_string(const cJSON *obj, const char *key)
{
	const cJSON	*s = cJSON_GetObjectItemCaseSensitive(obj, key);

	return (cJSON_IsString(s) ? s->valuestring : NULL);
}

/* Milliseconds the record has left to live (0: none). */
static uint64_t
task_ttl_left(const cJSON *rec)
{
	uint64_t	end, now = clock_wall_ms();

	end = task_number(task_mcpd(rec), "created") +
	    task_number(rec, "ttlMs");
	return (end > now ? end - now : 0);
}

static cJSON *
task_record_new(const char *tid, const char *tool,
    const struct auth_principal *who)
{
	cJSON		*rec = cJSON_CreateObject(), *mcpd;
	uint64_t	 now = clock_wall_ms();
	char		 when[40];

	task_iso_time(when, sizeof when, now);
	cJSON_AddStringToObject(rec, "taskId", tid);
	cJSON_AddStringToObject(rec, "status", task_state_name(TASK_WORKING));
	cJSON_AddStringToObject(rec, "createdAt", when);
	cJSON_AddStringToObject(rec, "lastUpdatedAt", when);
	cJSON_AddNumberToObject(rec, "ttlMs",
	    (double)server.conf->task_ttl * 1000);
	cJSON_AddNumberToObject(rec, "pollIntervalMs",
	    (double)server.conf->task_poll_ms);
	mcpd = cJSON_AddObjectToObject(rec, "mcpd");
	cJSON_AddStringToObject(mcpd, "owner", task_instance);
	cJSON_AddNumberToObject(mcpd, "created", (double)now);
	cJSON_AddStringToObject(mcpd, "tool", tool);
	if (who != NULL)
		cJSON_AddItemToObject(mcpd, "principal",
		    auth_principal_json(who));
	return (rec);
}

/*
 * Whether who may see and change a task bound to principal (the record's
 * mcpd.principal; NULL: none). Without auth every task is anyone's who
 * holds its id, whoever made it. With auth a task is its creator's, as a
 * session is (transport_serve): same issuer, subject and client id. A
 * record that names no principal (made while auth was off, or by an mcpd
 * before tasks were bound) or one that cannot be read is nobody's: with
 * auth, tasks/get answers it not found to everyone.
 */
int
task_allowed(const cJSON *principal, const struct auth_principal *who)
{
	struct auth_principal	*p;
	int			 same;

	if (!auth_enabled())
		return (1);
	if (principal == NULL || who == NULL ||
	    (p = auth_principal_from_json(principal)) == NULL)
		return (0);
	same = auth_principal_same(p, who);
	auth_principal_unref(p);
	return (same);
}

static const cJSON *
task_principal(const cJSON *rec)
{
	return (cJSON_GetObjectItemCaseSensitive(task_mcpd(rec), "principal"));
}

/* What the client sees of a record: the Task, with its payload or not. */
static cJSON *
task_view(const cJSON *rec, int detailed)
{
	static const char	*fields[] = { "taskId", "status",
				    "statusMessage", "createdAt",
				    "lastUpdatedAt", "ttlMs",
				    "pollIntervalMs" };
	static const char	*payload[] = { "result", "error",
				    "inputRequests" };
	cJSON			*view = cJSON_CreateObject();
	const cJSON		*item;
	size_t			 i;

	for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		if ((item = cJSON_GetObjectItemCaseSensitive(rec,
		    fields[i])) != NULL)
			cJSON_AddItemToObject(view, fields[i],
			    cJSON_Duplicate(item, 1));
	}
	for (i = 0; detailed && i < sizeof payload / sizeof payload[0]; i++) {
		if ((item = cJSON_GetObjectItemCaseSensitive(rec,
		    payload[i])) != NULL)
			cJSON_AddItemToObject(view, payload[i],
			    cJSON_Duplicate(item, 1));
	}
	return (view);
}

static cJSON *
task_result(const cJSON *rec, const char *type, int detailed)
{
	cJSON	*result = task_view(rec, detailed);

	cJSON_AddStringToObject(result, "resultType", type);
	return (result);
}

static cJSON *
task_parse(const char *text, size_t len)
{
	cJSON	*rec = cJSON_ParseWithLength(text, len);

	if (rec != NULL && (!cJSON_IsObject(rec) ||
	    task_string(rec, "taskId") == NULL || task_mcpd(rec) == NULL)) {
		cJSON_Delete(rec);
		rec = NULL;
	}
	return (rec);
}

/* Task ids as we make them: anything else is not found, unlooked-up. */
static int
task_id_ok(const char *tid)
{
	size_t	i;

	for (i = 0; i < TASK_ID_LEN; i++) {
		if (!((tid[i] >= '0' && tid[i] <= '9') ||
		    (tid[i] >= 'a' && tid[i] <= 'f')))
			return (0);
	}
	return (tid[i] == '\0');
}

/* ---------------------------------------------------------------------
 * Answers, always on a later turn.
 */

struct task_answer {
	task_answer_cb	 cb;
	task_read_cb	 read_cb;	/* task_read's: nothing found */
	void		*arg;
	cJSON		*result;
	int		 code;
	char		*message;
	cJSON		*data;
};

static void
task_answer_cb_later(evutil_socket_t fd, short events, void *arg)
{
	struct task_answer	*a = arg;

	if (a->read_cb != NULL)
		a->read_cb(NULL, NULL, a->arg);
	else
		a->cb(a->result, a->code, a->message, a->data, a->arg);
	free(a->message);
	free(a);
}

static void
task_answer_later(task_answer_cb cb, void *arg, cJSON *result, int code,
    const char *message, cJSON *data)
{
	struct task_answer	*a = xcalloc(1, sizeof *a);

	a->cb = cb;
	a->arg = arg;
	a->result = result;
	a->code = code;
	a->message = message != NULL ? xstrdup(message) : NULL;
	a->data = data;
	event_base_once(server.base, -1, EV_TIMEOUT, task_answer_cb_later, a,
	    NULL);
}

/* ---------------------------------------------------------------------
 * Changes: read, change, write back compare-and-set; again on a race.
 */


/* 1: write the record as changed; 0: leave it as it is. */
typedef int (*task_change_fn)(cJSON *, void *);
/* (status, the record as it is now or NULL, whether this change wrote it) */
typedef void (*task_changed_cb)(enum eventlog_status, const cJSON *, int,
		    void *);

struct task_change {
	char		 tid[TASK_ID_LEN + 1];
	char		 handle[TASK_HANDLE_LEN + 1];
	int		 check;	/* a client's request: who must match */
	struct auth_principal *who;
	task_change_fn	 fn;
	void		*ctx;
	task_changed_cb	 cb;
	void		*arg;
	cJSON		*rec;
	uint64_t	 rev;
	int		 tries;
};

static void	task_change_read(struct task_change *);

static void
task_change_end(struct task_change *tc, enum eventlog_status status,
    int wrote)
{
	tc->cb(status, status == EVENTLOG_OK ? tc->rec : NULL, wrote, tc->arg);
	cJSON_Delete(tc->rec);
	auth_principal_unref(tc->who);
	free(tc);
}

static void
task_change_put_cb(enum eventlog_status status, void *arg)
{
	struct task_change	*tc = arg;

	if (status == EVENTLOG_CONFLICT && ++tc->tries < TASK_CHANGE_TRIES) {
		cJSON_Delete(tc->rec);
		tc->rec = NULL;
		task_change_read(tc);
		return;
	}
	/*
	 * A change is committed: its listeners hear of it, on every instance
	 * (announce.h: each reads the task again, with task_read, and tells
	 * those task_allowed lets see it).
	 */
	if (status == EVENTLOG_OK)
		announce_change(ANNOUNCE_TASK, tc->tid);
	else
		log_limited(LOG_LEVEL_WARN, "task-write", "task=%s revision "
		    "%llu not written: %s", tc->handle,
		    (unsigned long long)tc->rev + 1,
		    eventlog_status_name(status));
	task_change_end(tc, status, status == EVENTLOG_OK);
}

/* A terminal record is never changed again: the log may forget it. */
static void
task_write(const char *tid, const cJSON *rec, uint64_t rev,
    eventlog_done_cb cb, void *arg)
{
	char	*text = cJSON_PrintUnformatted(rec);

	eventlog_task_put(server.eventlog, tid, rev, text, strlen(text),
	    task_ttl_left(rec), task_state_terminal(task_state_of(rec)), cb,
	    arg);
	free(text);
}

static void
task_change_got_cb(enum eventlog_status status, uint64_t rev,
    const char *text, size_t len, void *arg)
{
	struct task_change	*tc = arg;
	char			 when[40];

	if (status != EVENTLOG_OK) {
		task_change_end(tc, status, 0);
		return;
	}
	if ((tc->rec = task_parse(text, len)) == NULL) {
		log_limited(LOG_LEVEL_WARN, "task-read", "task=%s: the log "
		    "holds no task record under its id", tc->handle);
		task_change_end(tc, EVENTLOG_NOT_FOUND, 0);
		return;
	}
	/*
	 * Its time is up: as good as gone, whatever the log still holds.
	 * Another principal's is not there either, and is not changed.
	 */
	if (task_ttl_left(tc->rec) == 0 || (tc->check &&
	    !task_allowed(task_principal(tc->rec), tc->who))) {
		task_change_end(tc, EVENTLOG_NOT_FOUND, 0);
		return;
	}
	tc->rev = rev;
	if (tc->fn == NULL || !tc->fn(tc->rec, tc->ctx)) {
		task_change_end(tc, EVENTLOG_OK, 0);
		return;
	}
	task_iso_time(when, sizeof when, clock_wall_ms());
	task_set_string(tc->rec, "lastUpdatedAt", when);
	task_write(tc->tid, tc->rec, rev + 1, task_change_put_cb, tc);
}

static void
task_change_read(struct task_change *tc)
{
	eventlog_task_get(server.eventlog, tc->tid, task_change_got_cb, tc);
}

/*
 * Changes task tid with fn (NULL: only reads it); cb runs once, later.
 * For a client's request (check), a task who may not see is NOT_FOUND,
 * and fn never runs on it.
 */
static void
task_change_as(const char *tid, int check, struct auth_principal *who,
    task_change_fn fn, void *ctx, task_changed_cb cb, void *arg)
{
	struct task_change	*tc = xcalloc(1, sizeof *tc);

	strlcpy(tc->tid, tid, sizeof tc->tid);
	task_handle(tid, tc->handle);
	tc->check = check;
	tc->who = auth_principal_ref(who);
	tc->fn = fn;
	tc->ctx = ctx;
	tc->cb = cb;
	tc->arg = arg;
	task_change_read(tc);
}

/* The owner's changes, and the reads of its own tasks. */
static void
task_change(const char *tid, task_change_fn fn, void *ctx,
    task_changed_cb cb, void *arg)
{
	task_change_as(tid, 0, NULL, fn, ctx, cb, arg);
}

/* The changes. */

/* ctx: the call's JSON-RPC response. */
static int
task_change_complete(cJSON *rec, void *ctx)
{
	const cJSON	*msg = ctx, *result, *error, *message;
	cJSON		*copy;

	if (task_state_terminal(task_state_of(rec)))
		return (0);
	result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	error = cJSON_GetObjectItemCaseSensitive(msg, "error");
	if (result != NULL) {
		task_set_state(rec, TASK_COMPLETED, NULL);
		/*
		 * The result is the CallToolResult the call would have
		 * answered, and a 2026-07-28 result says its resultType
		 * (clients validate it); the legacy path ignores the member.
		 */
		copy = cJSON_Duplicate(result, 1);
		if (cJSON_IsObject(copy) &&
		    !cJSON_HasObjectItem(copy, "resultType"))
			cJSON_AddStringToObject(copy, "resultType", "complete");
		cJSON_AddItemToObject(rec, "result", copy);
	} else {
		message = cJSON_GetObjectItemCaseSensitive(error, "message");
		task_set_state(rec, TASK_FAILED, cJSON_IsString(message) ?
		    message->valuestring : "the call failed");
		cJSON_AddItemToObject(rec, "error", error != NULL ?
		    cJSON_Duplicate(error, 1) : cJSON_CreateObject());
	}
	cJSON_DeleteItemFromObjectCaseSensitive(task_mcpd(rec), "responses");
	return (1);
}

/* ctx: the reason. The owner is gone: a JSON-RPC error of ours. */
static int
task_change_fail(cJSON *rec, void *ctx)
{
	cJSON	*error;

	if (task_state_terminal(task_state_of(rec)))
		return (0);
	task_set_state(rec, TASK_FAILED, ctx);
	error = cJSON_AddObjectToObject(rec, "error");
	cJSON_AddNumberToObject(error, "code", JSONRPC_INTERNAL_ERROR);
	cJSON_AddStringToObject(error, "message", ctx);
	cJSON_DeleteItemFromObjectCaseSensitive(task_mcpd(rec), "responses");
	return (1);
}

static int
task_change_cancel(cJSON *rec, void *ctx)
{
	if (task_state_terminal(task_state_of(rec)))
		return (0);
	task_set_state(rec, TASK_CANCELLED, "Cancelled by the client");
	cJSON_DeleteItemFromObjectCaseSensitive(task_mcpd(rec), "responses");
	return (1);
}

/* ctx: {key, method, params}, the owner's request to the client. */
static int
task_change_ask(cJSON *rec, void *ctx)
{
	const cJSON	*ask = ctx;
	cJSON		*requests, *req;
	enum task_state	 state = task_state_of(rec);

	if (task_state_terminal(state))
		return (0);
	if (state == TASK_WORKING)
		task_set_state(rec, TASK_INPUT_REQUIRED, NULL);
	if ((requests = cJSON_GetObjectItemCaseSensitive(rec,
	    "inputRequests")) == NULL)
		requests = cJSON_AddObjectToObject(rec, "inputRequests");
	req = cJSON_CreateObject();
	cJSON_AddItemToObject(req, "method", cJSON_Duplicate(
	    cJSON_GetObjectItemCaseSensitive(ask, "method"), 1));
	cJSON_AddItemToObject(req, "params", cJSON_Duplicate(
	    cJSON_GetObjectItemCaseSensitive(ask, "params"), 1));
	cJSON_AddItemToObject(requests, task_string(ask, "key"), req);
	return (1);
}

/*
 * ctx: the client's inputResponses. Those answering an outstanding
 * request go to the owner; others are ignored, as the extension says.
 */
static int
task_change_update(cJSON *rec, void *ctx)
{
	const cJSON	*responses = ctx, *answer;
	cJSON		*requests, *mcpd = task_mcpd(rec), *owed;
	int		 changed = 0;

	if (task_state_of(rec) != TASK_INPUT_REQUIRED)
		return (0);
	requests = cJSON_GetObjectItemCaseSensitive(rec, "inputRequests");
	cJSON_ArrayForEach(answer, responses) {
		if (!cJSON_IsObject(answer) ||
		    !cJSON_HasObjectItem(requests, answer->string))
			continue;
		if ((owed = cJSON_GetObjectItemCaseSensitive(mcpd,
		    "responses")) == NULL)
			owed = cJSON_AddObjectToObject(mcpd, "responses");
		cJSON_DeleteItemFromObjectCaseSensitive(owed, answer->string);
		cJSON_AddItemToObject(owed, answer->string,
		    cJSON_Duplicate(answer, 1));
		cJSON_DeleteItemFromObjectCaseSensitive(requests,
		    answer->string);
		changed = 1;
	}
	if (changed && cJSON_GetArraySize(requests) == 0)
		task_set_state(rec, TASK_WORKING, NULL);
	return (changed);
}

/* ctx: the keys of answers the owner has taken. */
static int
task_change_taken(cJSON *rec, void *ctx)
{
	const cJSON	*keys = ctx, *key;
	cJSON		*owed;
	int		 changed = 0;

	owed = cJSON_GetObjectItemCaseSensitive(task_mcpd(rec), "responses");
	cJSON_ArrayForEach(key, keys) {
		if (cJSON_HasObjectItem(owed, key->valuestring)) {
			cJSON_DeleteItemFromObjectCaseSensitive(owed,
			    key->valuestring);
			changed = 1;
		}
	}
	return (changed);
}

/* ---------------------------------------------------------------------
 * Runs: the tasks this instance owns.
 */

struct task_run {
	char			 tid[TASK_ID_LEN + 1];
	char			 handle[TASK_HANDLE_LEN + 1];
	char			*tool;
	cJSON			*args;
	cJSON			*caps;	/* the creating request's */
	struct auth_principal	*who;	/* the creating request's */
	char			*endpoint; /* the creating request's */
	struct call		*call;		/* NULL: gone */
	int			 ended;	/* the call finished */
	int			 closing; /* shutdown: no more ticks */
	u_int			 refs;
	cJSON			*keys;	/* its questions pending */
	uint64_t		 created_ms;	/* wall clock */
	uint64_t		 ttl_ms;
	uint64_t		 renewed_ms;
	int			 polling;
	struct event		*timer;
	struct trace_span	*span;	/* until its call takes it */
	RB_ENTRY(task_run)	 entry;
};
RB_HEAD(task_runs, task_run);

static struct task_runs	task_runs = RB_INITIALIZER(&task_runs);

static int
task_run_cmp(struct task_run *a, struct task_run *b)
{
	return (strcmp(a->tid, b->tid));
}
RB_GENERATE_STATIC(task_runs, task_run, entry, task_run_cmp);

static struct task_run *
task_run_find(const char *tid)
{
	struct task_run	find;

	strlcpy(find.tid, tid, sizeof find.tid);
	return (RB_FIND(task_runs, &task_runs, &find));
}

static void
task_run_unref(struct task_run *run)
{
	if (run->refs == 0)
		fatalx("task=%s: reference count below zero", run->handle);
	if (--run->refs > 0)
		return;
	RB_REMOVE(task_runs, &task_runs, run);
	trace_end(run->span);
	if (run->timer != NULL)
		event_free(run->timer);
	cJSON_Delete(run->keys);
	free(run->tool);
	cJSON_Delete(run->args);
	cJSON_Delete(run->caps);
	if (run->who != NULL)
		auth_principal_unref(run->who);
	free(run->endpoint);
	free(run);
}

size_t
task_running(void)
{
	struct task_run	*run;
	size_t		 n = 0;

	RB_FOREACH(run, task_runs, &task_runs) {
		if (!run->ended)
			n++;
	}
	return (n);
}

/* Tasks running here for principal who. */
static size_t
task_running_for(const struct auth_principal *who)
{
	struct task_run	*run;
	size_t		 n = 0;

	RB_FOREACH(run, task_runs, &task_runs) {
		if (!run->ended && auth_principal_same(run->who, who))
			n++;
	}
	return (n);
}

static void
task_noted_cb(enum eventlog_status status, void *arg)
{
	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED)
		log_limited(LOG_LEVEL_WARN, "task-lease", "task lease not "
		    "written: %s", eventlog_status_name(status));
}

static void
task_run_lease(struct task_run *run)
{
	if (!server.shared)
		return;
	run->renewed_ms = clock_now_ms();
	eventlog_note_set(server.eventlog, run->tid, TASK_LEASE_NOTE,
	    task_instance, strlen(task_instance), lease_ttl_ms(),
	    task_noted_cb, NULL);
}

/* The call will not go on: it hears so, unless it ended already. */
static void
task_run_stop(struct task_run *run, const char *why)
{
	if (run->call != NULL && !run->ended)
		call_cancel(run->call, why);
}

struct task_taken {
	struct task_run	*run;
	cJSON		*keys;
};

static void
task_taken_cb(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_taken	*tt = arg;

	cJSON_Delete(tt->keys);
	task_run_unref(tt->run);
	free(tt);
}

/* Hands the owner's call the answers the record holds for it. */
static void
task_run_deliver(struct task_run *run, const cJSON *rec)
{
	const cJSON		*owed, *answer;
	struct task_taken	*tt;
	cJSON			*taken = NULL, *key;
	int			 i;

	if (run->call == NULL || run->ended)
		return;
	owed = cJSON_GetObjectItemCaseSensitive(task_mcpd(rec), "responses");
	for (i = 0; i < cJSON_GetArraySize(run->keys); /* nothing */) {
		key = cJSON_GetArrayItem(run->keys, i);
		answer = cJSON_GetObjectItemCaseSensitive(owed,
		    key->valuestring);
		if (answer == NULL ||
		    call_answer(run->call, key->valuestring, answer) != 0) {
			i++;
			continue;
		}
		if (taken == NULL)
			taken = cJSON_CreateArray();
		cJSON_AddItemToArray(taken, cJSON_DetachItemFromArray(
		    run->keys, i));
	}
	if (taken == NULL)
		return;
	tt = xmalloc(sizeof *tt);
	tt->run = run;
	tt->keys = taken;
	run->refs++;
	task_change(run->tid, task_change_taken, taken, task_taken_cb, tt);
}

/*
 * What the record says now, for the owner: a status someone else made
 * terminal ends the call; answers are delivered.
 */
static void
task_run_sync(struct task_run *run, const cJSON *rec)
{
	if (rec == NULL) {
		task_run_stop(run, "the task is gone (task_ttl)");
		return;
	}
	if (task_state_terminal(task_state_of(rec))) {
		task_run_stop(run, "the task ended (tasks/cancel, or its "
		    "owner taken for dead)");
		return;
	}
	task_run_deliver(run, rec);
}

static void
task_run_polled_cb(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_run	*run = arg;

	run->polling = 0;
	if (status == EVENTLOG_OK || status == EVENTLOG_NOT_FOUND)
		task_run_sync(run, rec);
	task_run_unref(run);
}

static void
task_run_tick_cb(evutil_socket_t fd, short events, void *arg)
{
	struct task_run	*run = arg;
	struct timeval	 tv = { 0, TASK_TICK_MS * 1000 };

	if (run->closing)
		return;
	if (clock_wall_ms() >= run->created_ms + run->ttl_ms)
		task_run_stop(run, "task_ttl ended");
	if (server.shared) {
		if (clock_now_ms() - run->renewed_ms >= lease_renew_ms())
			task_run_lease(run);
		if (!run->polling && !run->ended) {
			run->polling = 1;
			run->refs++;
			task_change(run->tid, NULL, NULL, task_run_polled_cb,
			    run);
		}
	}
	evtimer_add(run->timer, &tv);
}

/* The sink: where a task's call sends. */

/* Tasks carry no notifications (the extension): as good as sent. */
static void
task_sink_send(void *arg, cJSON *msg, call_sent_cb cb, void *cbarg)
{
	cJSON_Delete(msg);
	call_sent_later(cb, cbarg, 1);
}

/*
 * A result on its way to the record. One the log could not take now
 * (down, slow) is written again every TASK_RETRY_MS while the task's
 * time lasts: the run holds on meanwhile, and so does its lease, so no
 * instance takes the task for dead while its result waits.
 */
struct task_complete {
	struct task_run		*run;
	cJSON			*msg;
	struct event		*retry;
	int			 writing;	/* a change in flight */
	TAILQ_ENTRY(task_complete) entry;
};
static TAILQ_HEAD(, task_complete) task_retries =
    TAILQ_HEAD_INITIALIZER(task_retries);

static void	task_completed_cb(enum eventlog_status, const cJSON *, int,
		    void *);

static void
task_complete_free(struct task_complete *tcm)
{
	if (tcm->retry != NULL) {
		TAILQ_REMOVE(&task_retries, tcm, entry);
		event_free(tcm->retry);
	}
	cJSON_Delete(tcm->msg);
	task_run_unref(tcm->run);
	free(tcm);
}

static void
task_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	struct task_complete	*tcm = arg;

	tcm->writing = 1;
	task_change(tcm->run->tid, task_change_complete, tcm->msg,
	    task_completed_cb, tcm);
}

static void
task_completed_cb(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_complete	*tcm = arg;
	struct task_run		*run = tcm->run;
	struct timeval		 tv = { 0, TASK_RETRY_MS * 1000 };

	tcm->writing = 0;
	if ((status == EVENTLOG_UNAVAILABLE || status == EVENTLOG_CONFLICT) &&
	    !run->closing && clock_wall_ms() < run->created_ms + run->ttl_ms) {
		log_limited(LOG_LEVEL_WARN, "task-result", "task=%s: result "
		    "not written yet (%s); trying again", run->handle,
		    eventlog_status_name(status));
		if (tcm->retry == NULL) {
			tcm->retry = evtimer_new(server.base, task_retry_cb,
			    tcm);
			TAILQ_INSERT_TAIL(&task_retries, tcm, entry);
		}
		evtimer_add(tcm->retry, &tv);
		return;
	}
	if (status != EVENTLOG_OK)
		log_limited(LOG_LEVEL_WARN, "task-result", "task=%s: result "
		    "not kept: %s", run->handle, eventlog_status_name(status));
	else if (!wrote)
		log_debug("task=%s result dropped: the task had ended",
		    run->handle);
	task_complete_free(tcm);
}

/* The call's response (taken), or NULL: it was cancelled. */
static void
task_sink_respond(void *arg, cJSON *msg)
{
	struct task_run		*run = arg;
	struct task_complete	*tcm;

	run->ended = 1;
	if (msg == NULL)
		return;
	tcm = xcalloc(1, sizeof *tcm);
	tcm->run = run;
	tcm->msg = msg;
	run->refs++;
	tcm->writing = 1;
	task_change(run->tid, task_change_complete, msg, task_completed_cb,
	    tcm);
}

struct task_ask {
	struct task_run	*run;
	cJSON		*ask;
};

static void
task_asked_cb(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_ask	*ta = arg;

	/* Not asked (the task has ended): its call is being stopped. */
	if (!wrote)
		log_debug("task=%s: question %s not asked", ta->run->handle,
		    task_string(ta->ask, "key"));
	cJSON_Delete(ta->ask);
	task_run_unref(ta->run);
	free(ta);
}

/*
 * A question of the call becomes an entry of the task's inputRequests;
 * the answer comes with a tasks/update (task_run_deliver).
 */
static enum call_ask
task_sink_ask(void *arg, struct call *c, const char *key, const char *method,
    cJSON *params, const cJSON **answer)
{
	struct task_run	*run = arg;
	struct task_ask	*ta;

	if (cJSON_GetArraySize(run->keys) >= TASK_MAX_QUESTIONS) {
		cJSON_Delete(params);
		call_respond_error(c, JSONRPC_INTERNAL_ERROR, "The task asked "
		    "too many questions at once");
		return (CALL_ASK_REFUSED);
	}
	cJSON_AddItemToArray(run->keys, cJSON_CreateString(key));
	ta = xmalloc(sizeof *ta);
	ta->run = run;
	ta->ask = cJSON_CreateObject();
	cJSON_AddStringToObject(ta->ask, "key", key);
	cJSON_AddStringToObject(ta->ask, "method", method);
	cJSON_AddItemToObject(ta->ask, "params", params != NULL ? params :
	    cJSON_CreateObject());
	run->refs++;
	task_change(run->tid, task_change_ask, ta->ask, task_asked_cb, ta);
	return (CALL_ASK_PENDING);
}

static void
task_sink_gone(void *arg)
{
	struct task_run	*run = arg;

	run->call = NULL;
	task_run_unref(run);
}

static const struct call_sink task_sink = {
	.send = task_sink_send,
	.respond = task_sink_respond,
	.ask = task_sink_ask,
	.gone = task_sink_gone,
};

/* ---------------------------------------------------------------------
 * Creating a task.
 */

struct task_create {
	struct task_run	*run;
	cJSON		*rec;
	task_answer_cb	 cb;
	void		*arg;
};

/* Committed: a tasks/get anywhere finds it. The tool starts now. */
static void
task_create_put_cb(enum eventlog_status status, void *arg)
{
	struct task_create	*tcr = arg;
	struct task_run		*run = tcr->run;
	struct timeval		 tv = { 0, TASK_TICK_MS * 1000 };
	struct call		*c;
	cJSON			*id;
	char			 owner[TASK_ID_LEN + 8], *message;
	int			 depth;

	if (status != EVENTLOG_OK) {
		trace_error(run->span, eventlog_status_name(status),
		    "the task could not be stored");
		log_limited(LOG_LEVEL_WARN, "task-create", "task=%s not "
		    "created: %s", run->handle, eventlog_status_name(status));
		tcr->cb(NULL, JSONRPC_INTERNAL_ERROR, status == EVENTLOG_FULL ?
		    "Too many tasks kept (max_tasks); try again later" :
		    "The task could not be stored; try again", NULL,
		    tcr->arg);
		run->ended = 1;
		task_run_unref(run);
		cJSON_Delete(tcr->rec);
		free(tcr);
		return;
	}
	announce_change(ANNOUNCE_TASK, run->tid);
	log_info("task=%s tool=%s created", run->handle, run->tool);

	/* The call's id and owner name it in log lines: by its handle. */
	snprintf(owner, sizeof owner, "task=%s", run->handle);
	id = cJSON_CreateString(owner);
	c = run->call = call_start_sink(&task_sink, run, id, NULL, INT_MAX,
	    run->caps, 0);
	cJSON_Delete(id);
	call_set_owner(c, owner);
	call_set_principal(c, run->who);
	call_set_endpoint(c, run->endpoint);
	call_set_tool(c, run->tool);
	/* The task's span ends with its call: what it does is under it. */
	call_set_trace(c, run->span);
	run->span = NULL;
	depth = trace_enter(call_trace(c));
	run->timer = evtimer_new(server.base, task_run_tick_cb, run);
	evtimer_add(run->timer, &tv);
	if (provider_call_tool(c, run->tool, run->args) != 0) {
		call_set_tool(c, NULL);
		xasprintf(&message, "Unknown tool: %s", run->tool);
		call_respond_error(c, JSONRPC_INVALID_PARAMS, message);
		call_release(c);
		free(message);
	}
	trace_leave(depth);
	cJSON_Delete(run->args);
	run->args = NULL;
	cJSON_Delete(run->caps);
	run->caps = NULL;
	tcr->cb(task_result(tcr->rec, "task", 0), 0, NULL, NULL, tcr->arg);
	cJSON_Delete(tcr->rec);
	free(tcr);
}

/*
 * The task's span, under the current one (the tools/call's), and its
 * context in the record for whoever reads it.
 */
static void
task_trace_start(struct task_run *run, cJSON *rec)
{
	char	name[160], tp[TRACE_PARENT_LEN + 1];

	if (!trace_enabled)
		return;
	run->span = trace_child("task", TRACE_INTERNAL, trace_current());
	if (!trace_recording(run->span))
		goto context;
	snprintf(name, sizeof name, "task %s", run->tool);
	trace_rename(run->span, name);
	trace_attr_str(run->span, "gen_ai.operation.name", "execute_tool");
	trace_attr_str(run->span, "gen_ai.tool.name", run->tool);
	trace_attr_str(run->span, "mcpd.task.handle", run->handle);
context:
	if (trace_traceparent(run->span, tp) == 0)
		cJSON_AddStringToObject(task_mcpd(rec), "traceparent", tp);
}

void
task_call_tool(const char *name, const cJSON *params,
    struct auth_principal *who, const char *endpoint, task_answer_cb cb,
    void *arg)
{
	const cJSON		*args, *caps;
	struct task_run		*run;
	struct task_create	*tcr;
	char			*text;

	/*
	 * One principal cannot take every slot: the others keep
	 * max_tasks - max_tasks_per_principal. Without auth, everyone is
	 * the same nobody, and max_tasks is the only bound.
	 */
	if (auth_enabled() && task_running_for(who) >=
	    (size_t)server.conf->max_tasks_per_principal) {
		task_answer_later(cb, arg, NULL, JSONRPC_INTERNAL_ERROR,
		    "Too many tasks running for this principal "
		    "(max_tasks_per_principal); try again later", NULL);
		return;
	}
	if (task_running() >= (size_t)server.conf->max_tasks) {
		task_answer_later(cb, arg, NULL, JSONRPC_INTERNAL_ERROR,
		    "Too many tasks running (max_tasks); try again later",
		    NULL);
		return;
	}
	run = xcalloc(1, sizeof *run);
	random_hex(run->tid, sizeof run->tid);
	task_handle(run->tid, run->handle);
	run->tool = xstrdup(name);
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	run->args = args != NULL ? cJSON_Duplicate(args, 1) :
	    cJSON_CreateObject();
	caps = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(params, "_meta"),
	    "io.modelcontextprotocol/clientCapabilities");
	run->caps = caps != NULL ? cJSON_Duplicate(caps, 1) :
	    cJSON_CreateObject();
	run->who = who != NULL ? auth_principal_ref(who) : NULL;
	run->endpoint = endpoint != NULL ? xstrdup(endpoint) : NULL;
	run->keys = cJSON_CreateArray();
	run->refs = 1;		/* its call's, once it has one */
	RB_INSERT(task_runs, &task_runs, run);

	tcr = xcalloc(1, sizeof *tcr);
	tcr->run = run;
	tcr->cb = cb;
	tcr->arg = arg;
	tcr->rec = task_record_new(run->tid, name, who);
	task_trace_start(run, tcr->rec);
	run->created_ms = task_number(task_mcpd(tcr->rec), "created");
	run->ttl_ms = task_number(tcr->rec, "ttlMs");

	/* The lease first: a tasks/get that finds the task finds it alive. */
	task_run_lease(run);
	text = cJSON_PrintUnformatted(tcr->rec);
	eventlog_task_put(server.eventlog, run->tid, 1, text, strlen(text),
	    run->ttl_ms, 0, task_create_put_cb, tcr);
	free(text);
}

/*
 * A task_answer_cb whose arg is a call: the answer, or the error, is the
 * call's response, and the call is released.
 */
void
task_answer_call(cJSON *result, int code, const char *message, cJSON *data,
    void *arg)
{
	struct call	*c = arg;

	if (result != NULL)
		call_respond(c, result);
	else
		call_respond_error_data(c, code, message, data);
	call_release(c);
}

/*
 * A call that gathered its input (by MRTR) goes on as a task: tool name
 * runs again with args (taken) as the task's call, and call c answers
 * with the CreateTaskResult (or an error) once the task is committed.
 */
void
task_escalate(struct call *c, const char *name, cJSON *args)
{
	cJSON	*params = cJSON_CreateObject();

	cJSON_AddItemToObject(params, "arguments", args);
	task_call_tool(name, params, call_principal(c), call_endpoint(c),
	    task_answer_call, c);
	cJSON_Delete(params);
}

/* ---------------------------------------------------------------------
 * The client's methods.
 */

struct task_request {
	char		 tid[TASK_ID_LEN + 1];
	char		 handle[TASK_HANDLE_LEN + 1];
	const char	*method;
	int		 check;	/* who must be allowed (not task_read) */
	struct auth_principal *who;
	cJSON		*ctx;	/* a change's: inputResponses */
	task_answer_cb	 cb;
	task_read_cb	 read_cb;	/* task_read's, instead of cb */
	void		*arg;
	struct trace_ctx from;		/* the request's span */
};

/*
 * A request about a task, whichever instance answers it, is a span of
 * the task's trace (the record's mcpd.traceparent), linked to the
 * request's own span.
 */
static void
task_trace_poll(struct task_request *tr, const cJSON *rec)
{
	struct trace_ctx	 task;
	struct trace_span	*sp;

	if (!trace_enabled || tr->method == NULL || trace_parse(task_string(
	    task_mcpd(rec), "traceparent"), &task) != 0)
		return;
	sp = trace_start(tr->method, TRACE_INTERNAL, &task, NULL);
	trace_link(sp, &tr->from);
	trace_attr_str(sp, "mcpd.task.handle", tr->handle);
	trace_attr_str(sp, "mcpd.task.status", task_state_name(
	    task_state_of(rec)));
	trace_end(sp);
}

static void
task_request_free(struct task_request *tr)
{
	cJSON_Delete(tr->ctx);
	auth_principal_unref(tr->who);
	free(tr);
}

/* A change for the request: who must be allowed to see the task. */
static void
task_request_change(struct task_request *tr, task_change_fn fn, void *ctx,
    task_changed_cb cb)
{
	task_change_as(tr->tid, tr->check, tr->who, fn, ctx, cb, tr);
}

static cJSON *
task_ack(void)
{
	cJSON	*result = cJSON_CreateObject();

	cJSON_AddStringToObject(result, "resultType", "complete");
	return (result);
}

static void
task_not_found(struct task_request *tr)
{
	if (tr->read_cb != NULL)
		tr->read_cb(NULL, NULL, tr->arg);
	else
		tr->cb(NULL, JSONRPC_INVALID_PARAMS, TASK_NOT_FOUND, NULL,
		    tr->arg);
	task_request_free(tr);
}

static void
task_unavailable(struct task_request *tr, enum eventlog_status status)
{
	log_limited(LOG_LEVEL_WARN, "task-read", "task=%s %s: %s", tr->handle,
	    tr->method, eventlog_status_name(status));
	if (tr->read_cb != NULL)
		tr->read_cb(NULL, NULL, tr->arg);
	else
		tr->cb(NULL, JSONRPC_INTERNAL_ERROR, "The task store is "
		    "unavailable; try again", NULL, tr->arg);
	task_request_free(tr);
}

static void
task_got_answer(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_request	*tr = arg;
	cJSON			*view;

	if (status == EVENTLOG_OK)
		task_trace_poll(tr, rec);
	if (status == EVENTLOG_NOT_FOUND)
		task_not_found(tr);
	else if (status != EVENTLOG_OK)
		task_unavailable(tr, status);
	else if (tr->read_cb != NULL) {
		view = task_view(rec, 1);
		tr->read_cb(view, task_principal(rec), tr->arg);
		cJSON_Delete(view);
		task_request_free(tr);
	} else {
		tr->cb(task_result(rec, "complete", 1), 0, NULL, NULL, tr->arg);
		task_request_free(tr);
	}
}

static char	task_owner_gone[] = "The instance running the task is gone";

/* With a shared log: is the owner still holding its lease? */
static void
task_lease_cb(enum eventlog_status status, const char *value, size_t len,
    void *arg)
{
	struct task_request	*tr = arg;

	if (status == EVENTLOG_NOT_FOUND && lease_lapse_counts()) {
		log_info("task=%s: its owner's lease lapsed; failing it",
		    tr->handle);
		task_request_change(tr, task_change_fail, task_owner_gone,
		    task_got_answer);
		return;
	}
	task_request_change(tr, NULL, NULL, task_got_answer);
}

static void
task_got_cb(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_request	*tr = arg;
	const char		*owner;

	if (status != EVENTLOG_OK || task_state_terminal(task_state_of(rec))) {
		task_got_answer(status, rec, wrote, tr);
		return;
	}
	owner = task_string(task_mcpd(rec), "owner");
	if (owner != NULL && strcmp(owner, task_instance) == 0) {
		if (task_run_find(tr->tid) != NULL)
			task_got_answer(status, rec, wrote, tr);
		else
			task_request_change(tr, task_change_fail,
			    task_owner_gone, task_got_answer);
		return;
	}
	if (!server.shared) {
		/* Not ours, in a log nobody shares: a process before us. */
		task_request_change(tr, task_change_fail, task_owner_gone,
		    task_got_answer);
		return;
	}
	eventlog_note_get(server.eventlog, tr->tid, TASK_LEASE_NOTE,
	    task_lease_cb, tr);
}

/* tasks/cancel and tasks/update: acknowledged; the owner hears here. */
static void
task_changed_ack(enum eventlog_status status, const cJSON *rec, int wrote,
    void *arg)
{
	struct task_request	*tr = arg;
	struct task_run		*run;

	if (status == EVENTLOG_NOT_FOUND) {
		task_not_found(tr);
		return;
	}
	if (status != EVENTLOG_OK) {
		task_unavailable(tr, status);
		return;
	}
	task_trace_poll(tr, rec);
	if (wrote && (run = task_run_find(tr->tid)) != NULL)
		task_run_sync(run, rec);
	tr->cb(task_ack(), 0, NULL, NULL, tr->arg);
	task_request_free(tr);
}

int
task_method(const char *method)
{
	return (strcmp(method, "tasks/get") == 0 ||
	    strcmp(method, "tasks/update") == 0 ||
	    strcmp(method, "tasks/cancel") == 0);
}

void
task_run_method(const char *method, const cJSON *params,
    struct auth_principal *who, task_answer_cb cb, void *arg)
{
	struct task_request	*tr;
	const cJSON		*id, *responses;

	id = cJSON_GetObjectItemCaseSensitive(params, "taskId");
	if (!cJSON_IsString(id)) {
		task_answer_later(cb, arg, NULL, JSONRPC_INVALID_PARAMS,
		    "Invalid params: taskId must be a string", NULL);
		return;
	}
	responses = cJSON_GetObjectItemCaseSensitive(params, "inputResponses");
	if (strcmp(method, "tasks/update") == 0 && !cJSON_IsObject(responses)) {
		task_answer_later(cb, arg, NULL, JSONRPC_INVALID_PARAMS,
		    "Invalid params: inputResponses must be an object", NULL);
		return;
	}
	if (!task_id_ok(id->valuestring)) {
		task_answer_later(cb, arg, NULL, JSONRPC_INVALID_PARAMS,
		    TASK_NOT_FOUND, NULL);
		return;
	}
	tr = xcalloc(1, sizeof *tr);
	strlcpy(tr->tid, id->valuestring, sizeof tr->tid);
	task_handle(tr->tid, tr->handle);
	if (trace_span_ctx(trace_current()) != NULL)
		tr->from = *trace_span_ctx(trace_current());
	tr->check = 1;
	tr->who = auth_principal_ref(who);
	tr->cb = cb;
	tr->arg = arg;
	if (strcmp(method, "tasks/get") == 0) {
		tr->method = "tasks/get";
		task_request_change(tr, NULL, NULL, task_got_cb);
	} else if (strcmp(method, "tasks/cancel") == 0) {
		tr->method = "tasks/cancel";
		task_request_change(tr, task_change_cancel, NULL,
		    task_changed_ack);
	} else {
		tr->method = "tasks/update";
		tr->ctx = cJSON_Duplicate(responses, 1);
		task_request_change(tr, task_change_update, tr->ctx,
		    task_changed_ack);
	}
}

/*
 * For status notifications: one read for every listener of the task,
 * whoever they are; each is told only if task_allowed says so of the
 * principal the read answers. As tasks/get, a task whose owner is gone
 * is failed on the way.
 */
void
task_read(const char *tid, task_read_cb cb, void *arg)
{
	struct task_request	*tr;
	struct task_answer	*a;

	if (!task_id_ok(tid)) {
		a = xcalloc(1, sizeof *a);
		a->read_cb = cb;
		a->arg = arg;
		event_base_once(server.base, -1, EV_TIMEOUT,
		    task_answer_cb_later, a, NULL);
		return;
	}
	tr = xcalloc(1, sizeof *tr);
	strlcpy(tr->tid, tid, sizeof tr->tid);
	task_handle(tr->tid, tr->handle);
	tr->method = "a read for listeners";
	tr->read_cb = cb;
	tr->arg = arg;
	task_request_change(tr, NULL, NULL, task_got_cb);
}

/* ---------------------------------------------------------------------
 * Negotiation.
 */

int
task_declared(const cJSON *params)
{
	const cJSON	*meta, *caps, *ext;

	meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	caps = cJSON_GetObjectItemCaseSensitive(meta,
	    "io.modelcontextprotocol/clientCapabilities");
	ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
	return (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(ext,
	    TASK_EXTENSION)));
}

enum task_mode
task_mode(const char *tool, const cJSON *params)
{
	const char	*support = provider_tool_task(tool);

	if (strcmp(support, "forbidden") == 0)
		return (TASK_MODE_CALL);
	if (task_declared(params))
		return (provider_tool_task_self(tool) ? TASK_MODE_CALL :
		    TASK_MODE_TASK);
	if (strcmp(support, "required") == 0)
		return (TASK_MODE_REFUSE);
	return (TASK_MODE_CALL);
}

void
task_capabilities(cJSON *caps)
{
	cJSON	*ext;

	ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
	if (ext == NULL)
		ext = cJSON_AddObjectToObject(caps, "extensions");
	cJSON_AddObjectToObject(ext, TASK_EXTENSION);
}

/* ---------------------------------------------------------------------
 * Life.
 */

void
task_init(void)
{
	random_hex(task_instance, sizeof task_instance);
	log_debug("tasks: this instance owns its tasks as %s", task_instance);
}

/*
 * The drain gave up waiting: the tasks still running end failed, with an
 * error saying why (with a shared log, the lease would say so anyway, a
 * little later).
 */
void
task_interrupt(const char *reason)
{
	struct task_run	*run, *run1;

	RB_FOREACH_SAFE(run, task_runs, &task_runs, run1) {
		if (run->call != NULL && !run->ended)
			call_interrupt(run->call, reason);
	}
}

/* The process is going: no run ticks again, no result is retried. */
void
task_shutdown(void)
{
	struct task_run		*run;
	struct task_complete	*tcm, *tcm1;

	/* One being written hears back from the log (it is going too). */
	TAILQ_FOREACH_SAFE(tcm, &task_retries, entry, tcm1) {
		tcm->run->closing = 1;
		if (tcm->writing)
			continue;
		log_warn("task=%s: its result is lost: the server stops while "
		    "the event log cannot take it", tcm->run->handle);
		task_complete_free(tcm);
	}
	task_interrupt("the server is shutting down");
	RB_FOREACH(run, task_runs, &task_runs) {
		run->closing = 1;
		if (run->timer != NULL)
			evtimer_del(run->timer);
	}
}
