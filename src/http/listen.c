/*
 * subscriptions/listen (MCP 2026-07-28): an SSE response that carries the
 * change notifications its filter asks for, until the client leaves or
 * the server ends it (docs/protocol.md). stateless.c validates the request
 * and hands it over; the stream is a response.c one, and what it hears
 * comes from the notice board (announce.h), of every instance sharing the
 * log.
 *
 * Listen streams cannot be resumed: one that may have missed a change
 * (the subscription to other instances was lost, the log is unavailable)
 * ends with its result, and its client listens again and re-reads what it
 * lists; one that fell sse_high_watermark behind is cut without one (a
 * result would only queue behind what it cannot read).
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include "announce.h"
#include "auth.h"
#include "jsonrpc.h"
#include "listen.h"
#include "log.h"
#include "provider.h"
#include "response.h"
#include "session.h"
#include "task.h"
#include "xmalloc.h"

#define LISTEN_META_SUB		"io.modelcontextprotocol/subscriptionId"

struct listen {
	struct response		*resp;
	cJSON			*id;
	int			 filter[ANNOUNCE_KIND_MAX];
	cJSON			*uris;	/* resourceSubscriptions */
	cJSON			*tasks;	/* taskIds */
	struct auth_principal	*who;	/* NULL without auth */
	char			*endpoint;	/* whose catalog it hears */
	int			 listed;	/* on listen_all */
	TAILQ_ENTRY(listen)	 entry;
};

static TAILQ_HEAD(, listen)	listen_all = TAILQ_HEAD_INITIALIZER(listen_all);
static size_t			listen_n;

/* The fields of the filter for list changes, and who serves them. */
static const struct {
	const char		*field;
	enum announce_kind	 change;
	int			 list;		/* -1: always served */
} listen_filters[] = {
	{ "toolsListChanged", ANNOUNCE_TOOLS, -1 },
	{ "promptsListChanged", ANNOUNCE_PROMPTS, PROVIDER_PROMPTS },
	{ "resourcesListChanged", ANNOUNCE_RESOURCES, PROVIDER_RESOURCES },
};
#define LISTEN_NFILTERS	(sizeof listen_filters / sizeof listen_filters[0])

static void
listen_free(struct listen *l)
{
	if (l->listed) {
		TAILQ_REMOVE(&listen_all, l, entry);
		listen_n--;
	}
	response_free(l->resp);
	cJSON_Delete(l->id);
	cJSON_Delete(l->uris);
	cJSON_Delete(l->tasks);
	auth_principal_unref(l->who);
	free(l->endpoint);
	free(l);
}

/* The client left. */
static void
listen_gone(void *arg)
{
	listen_free(arg);
}

/* Ends a stream (it is freed). */
static void
listen_end(struct listen *l)
{
	response_end(l->resp);
	listen_free(l);
}

/* A notification on a listen stream, tagged with its subscription. */
static void
listen_send(struct listen *l, const char *method, cJSON *params)
{
	cJSON	*msg, *meta;

	if (params == NULL)
		params = cJSON_CreateObject();
	meta = cJSON_AddObjectToObject(params, "_meta");
	cJSON_AddItemToObject(meta, LISTEN_META_SUB, cJSON_Duplicate(l->id, 1));
	msg = jsonrpc_notification(method, params);
	response_write(l->resp, msg);
	cJSON_Delete(msg);
}

/*
 * Whether a stream may be told one more thing; one that cannot keep up is
 * ended (it is freed) rather than buffered without bound.
 */
static int
listen_keeps_up(struct listen *l)
{
	if (!response_behind(l->resp))
		return (1);
	log_limited(LOG_LEVEL_WARN, "listen-slow", "a listen stream is too "
	    "far behind; ending it");
	listen_end(l);
	return (0);
}

/* The strings of a filter's list (resourceSubscriptions, taskIds). */
static cJSON *
listen_strings(const cJSON *list)
{
	cJSON		*out = cJSON_CreateArray();
	const cJSON	*s;

	cJSON_ArrayForEach(s, list) {
		if (cJSON_IsString(s) && cJSON_GetArraySize(out) <
		    SESSION_MAX_SUBSCRIPTIONS)
			cJSON_AddItemToArray(out,
			    cJSON_CreateString(s->valuestring));
	}
	return (out);
}

static int
listen_names(const cJSON *list, const char *s)
{
	const cJSON	*u;

	cJSON_ArrayForEach(u, list) {
		if (strcmp(u->valuestring, s) == 0)
			return (1);
	}
	return (0);
}

/*
 * The acknowledgement (what of the filter is served) first, then the
 * change notifications the filter asks for. Answered with an error
 * instead: a filter that is no object, taskIds from a client that does
 * not declare the tasks extension, or (503) an instance that cannot hear
 * the others' changes now.
 */
void
listen_start(struct evhttp_request *req, const cJSON *id, const cJSON *params,
    struct auth_principal *who, const char *endpoint)
{
	const cJSON	*filter, *f;
	struct listen	*l;
	cJSON		*ack, *honoured;
	size_t		 i;

	l = xcalloc(1, sizeof *l);
	l->resp = response_new(req, listen_gone, l);
	l->id = cJSON_Duplicate(id, 1);
	l->who = auth_principal_ref(who);
	l->endpoint = endpoint != NULL ? xstrdup(endpoint) : NULL;
	filter = cJSON_GetObjectItemCaseSensitive(params, "notifications");
	if (!cJSON_IsObject(filter)) {
		response_json(l->resp, 400, jsonrpc_error(id,
		    JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "subscriptions/listen needs a notifications object",
		    NULL));
		listen_free(l);
		return;
	}
	ack = cJSON_CreateObject();
	honoured = cJSON_AddObjectToObject(ack, "notifications");
	for (i = 0; i < LISTEN_NFILTERS; i++) {
		f = cJSON_GetObjectItemCaseSensitive(filter,
		    listen_filters[i].field);
		if (!cJSON_IsTrue(f) || (listen_filters[i].list != -1 &&
		    !provider_endpoint_has(endpoint, listen_filters[i].list)))
			continue;
		l->filter[listen_filters[i].change] = 1;
		cJSON_AddBoolToObject(honoured, listen_filters[i].field, 1);
	}
	f = cJSON_GetObjectItemCaseSensitive(filter, "resourceSubscriptions");
	if (cJSON_IsArray(f) && provider_endpoint_has(endpoint,
	    PROVIDER_RESOURCES)) {
		l->uris = listen_strings(f);
		cJSON_AddItemToObject(honoured, "resourceSubscriptions",
		    cJSON_Duplicate(l->uris, 1));
	}
	f = cJSON_GetObjectItemCaseSensitive(filter, "taskIds");
	if (cJSON_IsArray(f) && cJSON_GetArraySize(f) > 0) {
		/* The extension says: only for clients that declare it. */
		if (!task_declared(params)) {
			cJSON_Delete(ack);
			response_json(l->resp, 400,
			    jsonrpc_missing_capability(id, NULL,
			    TASK_EXTENSION));
			listen_free(l);
			return;
		}
		l->tasks = listen_strings(f);
		cJSON_AddItemToObject(honoured, "taskIds",
		    cJSON_Duplicate(l->tasks, 1));
	}
	if (!announce_hearing()) {
		cJSON_Delete(ack);
		response_unavailable(l->resp, "Cannot hear other instances' "
		    "changes now, listen again later");
		listen_free(l);
		return;
	}
	l->listed = 1;
	TAILQ_INSERT_TAIL(&listen_all, l, entry);
	listen_n++;
	response_stream(l->resp);
	listen_send(l, "notifications/subscriptions/acknowledged", ack);
}

/*
 * A task's state, read for the listen streams here that asked for it:
 * each hears notifications/tasks with the DetailedTask tasks/get gives,
 * if its principal may see the task (a task of another principal is
 * one it never hears of, as tasks/get does not find it). The streams
 * are found again once the record is read (no pointer to them is kept
 * meanwhile).
 */
static void
listen_task_read_cb(const cJSON *task, const cJSON *principal, void *arg)
{
	char		*tid = arg;
	struct listen	*l, *l1;

	TAILQ_FOREACH_SAFE(l, &listen_all, entry, l1) {
		if (task == NULL ||
		    response_state(l->resp) != RESPONSE_STREAMING ||
		    !listen_names(l->tasks, tid) ||
		    !task_allowed(principal, l->who) || !listen_keeps_up(l))
			continue;
		listen_send(l, "notifications/tasks", cJSON_Duplicate(task, 1));
	}
	free(tid);
}

static void
listen_task_changed(const char *tid)
{
	struct listen	*l;

	TAILQ_FOREACH(l, &listen_all, entry) {
		if (response_state(l->resp) == RESPONSE_STREAMING &&
		    listen_names(l->tasks, tid))
			break;
	}
	if (l != NULL)
		task_read(tid, listen_task_read_cb, xstrdup(tid));
}

/*
 * A change, of any instance: every stream whose filter asks hears it, if
 * its endpoint serves the change's source (and resource).
 */
static void
listen_changed(enum announce_kind change, const char *uri,
    const char *source, void *arg)
{
	struct listen	*l, *l1;
	cJSON		*params;
	int		 match;

	if (change == ANNOUNCE_TASK) {
		listen_task_changed(uri);
		return;
	}
	TAILQ_FOREACH_SAFE(l, &listen_all, entry, l1) {
		if (response_state(l->resp) != RESPONSE_STREAMING)
			continue;
		if (change == ANNOUNCE_RESOURCE_UPDATED)
			match = listen_names(l->uris, uri);
		else
			match = l->filter[change];
		if (!match || !provider_endpoint_hears(l->endpoint, change,
		    uri, source) || !listen_keeps_up(l))
			continue;
		params = NULL;
		if (change == ANNOUNCE_RESOURCE_UPDATED) {
			params = cJSON_CreateObject();
			cJSON_AddStringToObject(params, "uri", uri);
		}
		listen_send(l, announce_method(change), params);
	}
}

/*
 * Every stream ends with its result, so clients listen again (elsewhere
 * if need be): the process stops, or can no longer hear what other
 * instances announce.
 */
static void
listen_end_all(const char *why)
{
	struct listen	*l, *l1;
	cJSON		*result, *meta;

	TAILQ_FOREACH_SAFE(l, &listen_all, entry, l1) {
		if (response_state(l->resp) != RESPONSE_STREAMING)
			continue;
		log_info("listen stream ended: %s", why);
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "resultType", "complete");
		meta = cJSON_AddObjectToObject(result, "_meta");
		cJSON_AddItemToObject(meta, LISTEN_META_SUB,
		    cJSON_Duplicate(l->id, 1));
		result = jsonrpc_result(l->id, result);
		response_write(l->resp, result);
		cJSON_Delete(result);
		listen_end(l);
	}
}

/* Changes may have been missed: the streams cannot make up for it. */
static void
listen_lost(const char *why, void *arg)
{
	listen_end_all(why);
}

static const struct announce_hooks listen_announce_hooks = {
	ANNOUNCE_EVERYWHERE,
	listen_changed,
	listen_lost
};

void
listen_init(void)
{
	announce_subscribe(&listen_announce_hooks, NULL);
}

/* Once a second: streams that cannot hear other instances' changes end. */
void
listen_cron(void)
{
	if (!announce_hearing() && !TAILQ_EMPTY(&listen_all))
		listen_end_all("the event log is unavailable");
}

/* Streams open (they count against max_views; /healthz shows them). */
size_t
listen_count(void)
{
	return (listen_n);
}

void
listen_shutdown(void)
{
	listen_end_all("the server stops");
	announce_unsubscribe(&listen_announce_hooks, NULL);
}
