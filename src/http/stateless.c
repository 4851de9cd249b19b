/*
 * The stateless path: MCP 2026-07-28 on the endpoint the legacy
 * (2025-era, session) path serves. transport.c hands over a POST that
 * stateless_claims; everything after that is here: the request metadata
 * checks in the order of the Streamable HTTP binding's Server Validation,
 * the methods of this revision as dispatch.c's table has them (quick
 * methods answered at once, call methods run as calls), the call's sink,
 * whose messages go to the request's response (response.c: a JSON body,
 * or an SSE stream scoped to the request), subscriptions/listen streams
 * and the MRTR rounds of input_required results.
 *
 * Nothing here goes through the event log. The revision has no sessions
 * and no resumption: a response stream carries one request's
 * notifications and its response, and a client that loses it retries the
 * request (docs/protocol.md, "The stateless path"). What must survive a
 * round (the answers a client gave so far) travels with the client, in a
 * requestState sealed by seal.c, so any instance can take the next round.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "announce.h"
#include "auth.h"
#include "base64.h"
#include "call.h"
#include "conf.h"
#include "dispatch.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "mcpd.h"
#include "stateless.h"
#include "provider.h"
#include "reply.h"
#include "response.h"
#include "seal.h"
#include "server.h"
#include "sse.h"
#include "task.h"
#include "view.h"
#include "xmalloc.h"

#define STATELESS_VERSION	MCP_STATELESS_VERSION
#define STATELESS_META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define STATELESS_META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define STATELESS_META_LEVEL	"io.modelcontextprotocol/logLevel"
#define STATELESS_META_SERVER	"io.modelcontextprotocol/serverInfo"
#define STATELESS_META_SUB		"io.modelcontextprotocol/subscriptionId"

/*
 * A call that has neither answered nor sent anything this long gets an
 * SSE response anyway: evhttp only notices a client gone once it writes,
 * and a gone client must cancel its request.
 */
#define STATELESS_JSON_MS	200
/*
 * No key may sign a requestState (seal_ready): the event log's keyring not
 * read yet, or not for too long. Another instance may have one: 503.
 */
#define STATELESS_NO_STATE_KEY	"No requestState key from the event log; " \
				"retry later"
/* Mcp-Param-* headers a tool may declare, and their nesting. */
#define STATELESS_MAX_PARAMS	32
#define STATELESS_MAX_DEPTH	8

struct stateless_req;

struct stateless_req {
	struct response			*resp;
	const struct dispatch_method	*m;
	cJSON				*id;
	int				 starting; /* inside its handler */

	struct call			*call;
	int				 call_done;
	char				*name;	/* the tool, prompt or URI */
	cJSON				*answers;  /* inputResponses so far */
	cJSON				*asked;	   /* this round's questions */
	struct event			*asked_ev;

	int				 running;  /* on stateless_calls */
	TAILQ_ENTRY(stateless_req)		 call_entry;

	int				 listen;
	int				 filter[ANNOUNCE_RESOURCE_UPDATED];
	cJSON				*uris;	/* resourceSubscriptions */
	cJSON				*tasks;	/* taskIds */
	struct auth_principal		*who;	/* NULL without auth */
	TAILQ_ENTRY(stateless_req)		 entry;
};

static TAILQ_HEAD(, stateless_req)	stateless_listeners =
    TAILQ_HEAD_INITIALIZER(stateless_listeners);
/* Requests whose call has not answered: what a drain waits for. */
static TAILQ_HEAD(, stateless_req)	stateless_calls =
    TAILQ_HEAD_INITIALIZER(stateless_calls);

/* --- helpers ------------------------------------------------------------ */

static const cJSON *
stateless_get(const cJSON *obj, const char *key)
{
	return (cJSON_GetObjectItemCaseSensitive(obj, key));
}

static const cJSON *
stateless_meta(const cJSON *msg)
{
	return (stateless_get(stateless_get(msg, "params"), "_meta"));
}

static void
stateless_error(struct evhttp_request *req, int status, const cJSON *id,
    int code, const char *message, cJSON *data)
{
	reply_json(req, status, jsonrpc_error(id, code, message, data));
}

/*
 * A header's value as the binding defines it: optional whitespace
 * trimmed, the =?base64?...?= sentinel decoded. NULL (and *bad set if the
 * header was there) when absent, badly encoded or holding characters a
 * header value cannot carry.
 */
static char *
stateless_header(struct evhttp_request *req, const char *name, int *bad)
{
	const char	*v, *end;
	unsigned char	*out;
	size_t		 len, outlen;

	*bad = 0;
	v = evhttp_find_header(evhttp_request_get_input_headers(req), name);
	if (v == NULL)
		return (NULL);
	*bad = 1;
	while (*v == ' ' || *v == '\t')
		v++;
	end = v + strlen(v);
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	for (len = 0; v + len < end; len++) {
		if ((unsigned char)v[len] < 0x20 && v[len] != '\t')
			return (NULL);
		if ((unsigned char)v[len] >= 0x7f)
			return (NULL);
	}
	if (len >= 11 && strncmp(v, "=?base64?", 9) == 0 &&
	    strncmp(end - 2, "?=", 2) == 0) {
		if (base64_decode(v + 9, len - 11, 0, &out, &outlen) != 0)
			return (NULL);
		if (strlen((char *)out) != outlen ||
		    !jsonrpc_utf8_valid((char *)out, outlen)) {
			free(out);
			return (NULL);
		}
		*bad = 0;
		return ((char *)out);
	}
	*bad = 0;
	return (xstrndup(v, len));
}

/* --- the request ------------------------------------------------------- */

static void
stateless_free(struct stateless_req *mr)
{
	if (mr->listen)
		TAILQ_REMOVE(&stateless_listeners, mr, entry);
	if (mr->asked_ev != NULL)
		event_free(mr->asked_ev);
	response_free(mr->resp);
	cJSON_Delete(mr->id);
	free(mr->name);
	cJSON_Delete(mr->answers);
	cJSON_Delete(mr->asked);
	cJSON_Delete(mr->uris);
	cJSON_Delete(mr->tasks);
	auth_principal_unref(mr->who);
	free(mr);
}

static int
stateless_done(const struct stateless_req *mr)
{
	return (response_state(mr->resp) == RESPONSE_DONE);
}

/* Freed once neither the call nor the connection can reach it. */
static void
stateless_maybe_free(struct stateless_req *mr)
{
	if (stateless_done(mr) && !mr->starting &&
	    (mr->call == NULL || mr->call_done))
		stateless_free(mr);
}

/* The client closed its stream: a running call is cancelled. */
static void
stateless_gone(void *arg)
{
	struct stateless_req	*mr = arg;

	if (mr->call != NULL && !mr->call_done) {
		/* Its sink's respond(NULL) frees mr. */
		call_cancel(mr->call, "the client closed the response stream");
		return;
	}
	stateless_maybe_free(mr);
}

/*
 * Every result of this revision says its resultType; the server names
 * itself in _meta; cacheable results carry their caching hints.
 */
static void
stateless_decorate(const struct dispatch_method *m, cJSON *result);

/* --- the call's sink ---------------------------------------------------- */

/*
 * A notification of the call: the response becomes a stream if it was
 * not one, and the sender hears back as response_sent says (the block
 * policy past sse_high_watermark).
 */
static void
stateless_sink_send(void *arg, cJSON *msg, call_sent_cb cb, void *cbarg)
{
	struct stateless_req	*mr = arg;

	if (!stateless_done(mr))
		response_write(mr->resp, msg);
	response_sent(mr->resp, cb, cbarg);
	cJSON_Delete(msg);
}

static int
stateless_error_status(const cJSON *msg)
{
	const cJSON	*code = stateless_get(stateless_get(msg, "error"), "code");

	if (cJSON_IsNumber(code) && code->valueint ==
	    JSONRPC_MISSING_CAPABILITY)
		return (400);
	if (cJSON_IsNumber(code) && code->valueint == JSONRPC_UNAVAILABLE)
		return (503);
	return (200);
}

/* The call's response (taken), or NULL: it ended without one. */
static void
stateless_sink_respond(void *arg, cJSON *msg)
{
	struct stateless_req	*mr = arg;

	mr->call_done = 1;
	if (mr->running) {
		TAILQ_REMOVE(&stateless_calls, mr, call_entry);
		mr->running = 0;
	}
	if (msg == NULL && !stateless_done(mr))
		msg = jsonrpc_error(mr->id, JSONRPC_INTERNAL_ERROR,
		    "The request ended without a result", NULL);
	if (msg != NULL && !stateless_done(mr)) {
		stateless_decorate(mr->m, stateless_get(msg, "result") != NULL ?
		    cJSON_GetObjectItemCaseSensitive(msg, "result") : NULL);
		if (response_state(mr->resp) == RESPONSE_STREAMING) {
			response_write(mr->resp, msg);
			cJSON_Delete(msg);
			response_end(mr->resp);
		} else
			response_json(mr->resp, stateless_error_status(msg),
			    msg);
	} else
		cJSON_Delete(msg);
	/* call.c touches nothing of ours once the call has ended. */
	stateless_maybe_free(mr);
}

/* --- MRTR --------------------------------------------------------------- */

/*
 * What a sealed requestState holds: the request it belongs to (method and
 * name) and the answers the client gave in earlier rounds; seal.c stamps
 * it with the time, and refuses it once too old (SEAL_LIFETIME_MS). NULL
 * when no key may sign (seal_ready).
 */
static char *
stateless_state_seal(struct stateless_req *mr)
{
	cJSON	*state = cJSON_CreateObject();
	char	*text, *sealed;

	cJSON_AddStringToObject(state, "m", dispatch_method_name(mr->m));
	cJSON_AddStringToObject(state, "n", mr->name != NULL ? mr->name : "");
	cJSON_AddItemToObject(state, "a", mr->answers != NULL ?
	    cJSON_Duplicate(mr->answers, 1) : cJSON_CreateObject());
	text = cJSON_PrintUnformatted(state);
	cJSON_Delete(state);
	sealed = seal_sign(text);
	free(text);
	return (sealed);
}

/*
 * Opens a requestState: its earlier answers (taken by the caller), or
 * NULL and a static *cause if it is not ours, was changed, belongs to
 * another request or is too old (seal.c).
 */
static cJSON *
stateless_state_open(const struct stateless_req *mr, const char *sealed,
    const char **cause)
{
	cJSON		*state, *answers;
	const cJSON	*m, *n;
	char		*text;

	if ((text = seal_open(sealed, cause)) == NULL)
		return (NULL);
	state = cJSON_Parse(text);
	free(text);
	m = stateless_get(state, "m");
	n = stateless_get(state, "n");
	*cause = "requestState belongs to another request";
	if (!cJSON_IsString(m) || !cJSON_IsString(n) ||
	    strcmp(m->valuestring, dispatch_method_name(mr->m)) != 0 ||
	    strcmp(n->valuestring, mr->name != NULL ? mr->name : "") != 0) {
		cJSON_Delete(state);
		return (NULL);
	}
	answers = cJSON_DetachItemFromObjectCaseSensitive(state, "a");
	cJSON_Delete(state);
	if (!cJSON_IsObject(answers)) {
		cJSON_Delete(answers);
		return (cJSON_CreateObject());
	}
	return (answers);
}

/* The end of the turn the call asked in: its input_required result. */
static void
stateless_asked_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stateless_req	*mr = arg;
	cJSON			*result;
	char			*state;

	if (mr->call_done || mr->asked == NULL)
		return;
	if ((state = stateless_state_seal(mr)) == NULL) {
		/* mr may be freed by the time this returns. */
		call_respond_error(mr->call, JSONRPC_UNAVAILABLE,
		    STATELESS_NO_STATE_KEY);
		return;
	}
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "resultType", "input_required");
	cJSON_AddItemToObject(result, "inputRequests", mr->asked);
	mr->asked = NULL;
	cJSON_AddStringToObject(result, "requestState", state);
	free(state);
	/* mr may be freed by the time this returns. */
	call_respond(mr->call, result);
}

/*
 * A question of the call (provider_*.c through call_request): answered
 * from the client's inputResponses (this round's or, in requestState,
 * an earlier one's), else kept for this turn's input_required result.
 * (One the client declared no capability for never gets here: call.c
 * ends the call with -32021.)
 */
static enum call_ask
stateless_sink_ask(void *arg, struct call *c, const char *key,
    const char *method, cJSON *params, const cJSON **answer)
{
	struct stateless_req	*mr = arg;
	const cJSON		*found;
	cJSON			*q;

	found = stateless_get(mr->answers, key);
	if (cJSON_IsObject(found)) {
		cJSON_Delete(params);
		*answer = found;
		return (CALL_ASK_ANSWERED);
	}
	if (mr->asked == NULL)
		mr->asked = cJSON_CreateObject();
	q = cJSON_CreateObject();
	cJSON_AddStringToObject(q, "method", method);
	cJSON_AddItemToObject(q, "params", params != NULL ? params :
	    cJSON_CreateObject());
	cJSON_DeleteItemFromObjectCaseSensitive(mr->asked, key);
	cJSON_AddItemToObject(mr->asked, key, q);
	if (mr->asked_ev == NULL)
		mr->asked_ev = evtimer_new(server.base, stateless_asked_cb, mr);
	if (!evtimer_pending(mr->asked_ev, NULL))
		event_active(mr->asked_ev, EV_TIMEOUT, 0);
	return (CALL_ASK_PENDING);
}

static const struct call_sink stateless_sink = {
	stateless_sink_send,
	stateless_sink_respond,
	stateless_sink_ask,
	NULL
};

/* --- results ------------------------------------------------------------ */

static void
stateless_decorate(const struct dispatch_method *m, cJSON *result)
{
	cJSON	*meta, *info;
	int	 complete;

	if (!cJSON_IsObject(result))
		return;
	if (!cJSON_HasObjectItem(result, "resultType"))
		cJSON_AddStringToObject(result, "resultType", "complete");
	complete = strcmp(cJSON_GetStringValue(stateless_get(result,
	    "resultType")) != NULL ? cJSON_GetStringValue(stateless_get(result,
	    "resultType")) : "", "complete") == 0;
	if ((meta = cJSON_GetObjectItemCaseSensitive(result, "_meta")) ==
	    NULL || !cJSON_IsObject(meta)) {
		cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
		meta = cJSON_AddObjectToObject(result, "_meta");
	}
	info = cJSON_AddObjectToObject(meta, STATELESS_META_SERVER);
	cJSON_AddStringToObject(info, "name", "mcpd");
	cJSON_AddStringToObject(info, "version", MCPD_VERSION);
	/*
	 * What mcpd lists can change on a reload, and an exec tool's
	 * resource on any read: no freshness is promised. Nothing served
	 * depends on who asks.
	 */
	if (m != NULL && (dispatch_method_flags(m) & DISPATCH_CACHEABLE) &&
	    complete) {
		if (!cJSON_HasObjectItem(result, "ttlMs"))
			cJSON_AddNumberToObject(result, "ttlMs", 0);
		if (!cJSON_HasObjectItem(result, "cacheScope"))
			cJSON_AddStringToObject(result, "cacheScope", "public");
	}
}

/* A whole JSON-RPC response (taken) for a request answered at once. */
static void
stateless_reply(struct stateless_req *mr, cJSON *msg)
{
	stateless_decorate(mr->m, cJSON_GetObjectItemCaseSensitive(msg,
	    "result"));
	response_json(mr->resp, 200, msg);
}

/* --- subscriptions/listen ---------------------------------------------- */

static const struct {
	const char		*field;
	enum announce_kind	 change;
	int			(*served)(void);
} stateless_filters[] = {
	{ "toolsListChanged", ANNOUNCE_TOOLS, NULL },
	{ "promptsListChanged", ANNOUNCE_PROMPTS, provider_has_prompts },
	{ "resourcesListChanged", ANNOUNCE_RESOURCES,
	  provider_has_resources },
};
#define STATELESS_NFILTERS \
	(sizeof stateless_filters / sizeof stateless_filters[0])

/* A notification on a listen stream, tagged with its subscription. */
static void
stateless_listen_send(struct stateless_req *mr, const char *method,
    cJSON *params)
{
	cJSON	*msg, *meta;

	if (params == NULL)
		params = cJSON_CreateObject();
	meta = cJSON_AddObjectToObject(params, "_meta");
	cJSON_AddItemToObject(meta, STATELESS_META_SUB, cJSON_Duplicate(mr->id,
	    1));
	msg = jsonrpc_notification(method, params);
	response_write(mr->resp, msg);
	cJSON_Delete(msg);
}

/*
 * subscriptions/listen: the acknowledgement (what of the filter is
 * served) first, then the change notifications the filter asks for,
 * until the client leaves or the server ends the stream.
 */
static void
stateless_listen(struct stateless_req *mr, const cJSON *params)
{
	const cJSON	*filter = stateless_get(params, "notifications");
	const cJSON	*f, *uri;
	cJSON		*ack, *honoured;
	size_t		 i;

	if (!cJSON_IsObject(filter)) {
		stateless_reply(mr, jsonrpc_error(mr->id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: subscriptions/listen needs a "
		    "notifications object", NULL));
		return;
	}
	ack = cJSON_CreateObject();
	honoured = cJSON_AddObjectToObject(ack, "notifications");
	for (i = 0; i < STATELESS_NFILTERS; i++) {
		f = stateless_get(filter, stateless_filters[i].field);
		if (!cJSON_IsTrue(f) || (stateless_filters[i].served != NULL &&
		    !stateless_filters[i].served()))
			continue;
		mr->filter[stateless_filters[i].change] = 1;
		cJSON_AddBoolToObject(honoured, stateless_filters[i].field, 1);
	}
	f = stateless_get(filter, "resourceSubscriptions");
	if (cJSON_IsArray(f) && provider_has_resources()) {
		mr->uris = cJSON_CreateArray();
		cJSON_ArrayForEach(uri, f) {
			if (cJSON_IsString(uri) && cJSON_GetArraySize(mr->uris)
			    < SESSION_MAX_SUBSCRIPTIONS)
				cJSON_AddItemToArray(mr->uris,
				    cJSON_CreateString(uri->valuestring));
		}
		cJSON_AddItemToObject(honoured, "resourceSubscriptions",
		    cJSON_Duplicate(mr->uris, 1));
	}
	f = stateless_get(filter, "taskIds");
	if (cJSON_IsArray(f) && cJSON_GetArraySize(f) > 0) {
		/* The extension says: only for clients that declare it. */
		if (!task_declared(params)) {
			cJSON_Delete(ack);
			response_json(mr->resp, 400,
			    jsonrpc_missing_capability(mr->id, NULL,
			    TASK_EXTENSION));
			return;
		}
		mr->tasks = cJSON_CreateArray();
		cJSON_ArrayForEach(uri, f) {
			if (cJSON_IsString(uri) && cJSON_GetArraySize(mr->tasks)
			    < SESSION_MAX_SUBSCRIPTIONS)
				cJSON_AddItemToArray(mr->tasks,
				    cJSON_CreateString(uri->valuestring));
		}
		cJSON_AddItemToObject(honoured, "taskIds",
		    cJSON_Duplicate(mr->tasks, 1));
	}
	if (!announce_hearing()) {
		cJSON_Delete(ack);
		response_unavailable(mr->resp, "Cannot hear other instances' "
		    "changes now, listen again later");
		return;
	}
	mr->listen = 1;
	TAILQ_INSERT_TAIL(&stateless_listeners, mr, entry);
	response_stream(mr->resp);
	stateless_listen_send(mr, "notifications/subscriptions/acknowledged",
	    ack);
}

static int
stateless_listens(const cJSON *list, const char *s)
{
	const cJSON	*u;

	cJSON_ArrayForEach(u, list) {
		if (strcmp(u->valuestring, s) == 0)
			return (1);
	}
	return (0);
}

/*
 * A task's state, read for the listen streams here that asked for it:
 * each hears notifications/tasks with the DetailedTask tasks/get gives,
 * if its principal may see the task (a task of another principal is
 * one it never hears of, as tasks/get does not find it). The listeners
 * are found again once the record is read (no pointer to them is kept
 * meanwhile).
 */
static void
stateless_task_read_cb(const cJSON *task, const cJSON *principal, void *arg)
{
	char			*tid = arg;
	struct stateless_req	*mr, *mr1;

	TAILQ_FOREACH_SAFE(mr, &stateless_listeners, entry, mr1) {
		if (task == NULL ||
		    response_state(mr->resp) != RESPONSE_STREAMING ||
		    !stateless_listens(mr->tasks, tid) ||
		    !task_allowed(principal, mr->who))
			continue;
		if (response_behind(mr->resp)) {
			log_limited(LOG_LEVEL_WARN, "listen-slow", "a listen "
			    "stream is too far behind; ending it");
			response_end(mr->resp);
			stateless_maybe_free(mr);
			continue;
		}
		stateless_listen_send(mr, "notifications/tasks",
		    cJSON_Duplicate(task, 1));
	}
	free(tid);
}

static void
stateless_task_changed(const char *tid)
{
	struct stateless_req	*mr;

	TAILQ_FOREACH(mr, &stateless_listeners, entry) {
		if (response_state(mr->resp) == RESPONSE_STREAMING &&
		    stateless_listens(mr->tasks, tid))
			break;
	}
	if (mr == NULL)
		return;
	task_read(tid, stateless_task_read_cb, xstrdup(tid));
}

/*
 * A change: every listen stream here whose filter asks for it hears of
 * it. One that cannot keep up is ended (its client listens again and
 * re-reads what it lists) rather than buffered without bound.
 */
static void
stateless_deliver(enum announce_kind change, const char *uri, void *arg)
{
	struct stateless_req	*mr, *mr1;
	const cJSON		*u;
	cJSON			*params;
	int			 match;

	if (change == ANNOUNCE_TASK) {
		stateless_task_changed(uri);
		return;
	}
	TAILQ_FOREACH_SAFE(mr, &stateless_listeners, entry, mr1) {
		if (response_state(mr->resp) != RESPONSE_STREAMING)
			continue;
		match = 0;
		if (change != ANNOUNCE_RESOURCE_UPDATED)
			match = mr->filter[change];
		else {
			cJSON_ArrayForEach(u, mr->uris) {
				if (strcmp(u->valuestring, uri) == 0)
					match = 1;
			}
		}
		if (!match)
			continue;
		if (response_behind(mr->resp)) {
			log_limited(LOG_LEVEL_WARN, "listen-slow", "a listen "
			    "stream is too far behind; ending it");
			response_end(mr->resp);
			stateless_maybe_free(mr);
			continue;
		}
		params = NULL;
		if (change == ANNOUNCE_RESOURCE_UPDATED) {
			params = cJSON_CreateObject();
			cJSON_AddStringToObject(params, "uri", uri);
		}
		stateless_listen_send(mr, announce_method(change), params);
	}
}

static void	stateless_listen_end_all(const char *);

/* Changes may have been missed: listen streams cannot be resumed. */
static void
stateless_lost(const char *why, void *arg)
{
	stateless_listen_end_all(why);
}

/* Listen streams hear every instance's changes (announce.h). */
static const struct announce_hooks stateless_announce_hooks = {
	ANNOUNCE_EVERYWHERE,
	stateless_deliver,
	stateless_lost
};

void
stateless_init(void)
{
	announce_subscribe(&stateless_announce_hooks, NULL);
}

/*
 * Once a second: listen streams that cannot hear other instances'
 * changes (the log unavailable) end.
 */
void
stateless_cron(void)
{
	if (!announce_hearing() && !TAILQ_EMPTY(&stateless_listeners))
		stateless_listen_end_all("the event log is unavailable");
}

/*
 * Listen streams end with their result, so clients listen again
 * (elsewhere if need be): the process stops, or can no longer hear what
 * other instances announce.
 */
static void
stateless_listen_end_all(const char *why)
{
	struct stateless_req	*mr, *mr1;
	cJSON			*result, *meta;

	TAILQ_FOREACH_SAFE(mr, &stateless_listeners, entry, mr1) {
		if (response_state(mr->resp) != RESPONSE_STREAMING)
			continue;
		log_info("listen stream ended: %s", why);
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "resultType", "complete");
		meta = cJSON_AddObjectToObject(result, "_meta");
		cJSON_AddItemToObject(meta, STATELESS_META_SUB,
		    cJSON_Duplicate(mr->id, 1));
		result = jsonrpc_result(mr->id, result);
		response_write(mr->resp, result);
		cJSON_Delete(result);
		response_end(mr->resp);
		stateless_maybe_free(mr);
	}
}

/* Stateless calls running (a drain waits for them as for sessions'). */
size_t
stateless_running_calls(void)
{
	struct stateless_req	*mr;
	size_t			 n = 0;

	TAILQ_FOREACH(mr, &stateless_calls, call_entry)
		n++;
	return (n);
}

/* Listen streams open (they count against max_views; /healthz shows them). */
size_t
stateless_listen_count(void)
{
	struct stateless_req	*mr;
	size_t			 n = 0;

	TAILQ_FOREACH(mr, &stateless_listeners, entry)
		n++;
	return (n);
}

/* Each running call answers an error saying why, and its provider stops. */
void
stateless_interrupt_calls(const char *reason)
{
	struct stateless_req	*mr, *mr1;

	TAILQ_FOREACH_SAFE(mr, &stateless_calls, call_entry, mr1)
		call_interrupt(mr->call, reason);
}

void
stateless_shutdown(void)
{
	stateless_interrupt_calls("the server is shutting down");
	stateless_listen_end_all("the server stops");
	announce_unsubscribe(&stateless_announce_hooks, NULL);
}

/* --- Mcp-Param-* -------------------------------------------------------- */

/* A body value as its header carries it; NULL: no header expected. */
static char *
stateless_param_text(const cJSON *v)
{
	char	*s;

	if (cJSON_IsString(v))
		return (xstrdup(v->valuestring));
	if (cJSON_IsBool(v))
		return (xstrdup(cJSON_IsTrue(v) ? "true" : "false"));
	if (cJSON_IsNumber(v)) {
		xasprintf(&s, "%.17g", v->valuedouble);
		return (s);
	}
	return (NULL);
}

static int
stateless_param_equal(const cJSON *v, const char *header)
{
	char	*text, *end;
	double	 d;
	int	 same;

	if (cJSON_IsNumber(v)) {
		/* Numerically: 42.0 is 42. */
		d = strtod(header, &end);
		return (*header != '\0' && *end == '\0' && d == v->valuedouble);
	}
	if ((text = stateless_param_text(v)) == NULL)
		return (0);
	same = strcmp(text, header) == 0;
	free(text);
	return (same);
}

/*
 * Walks a tool's inputSchema for x-mcp-header annotations along
 * properties chains; each one whose value is in the arguments must come
 * with its header, equal to it. 0, or -1 with *why (allocated).
 */
static int
stateless_params_walk(struct evhttp_request *req, const cJSON *schema,
    const cJSON *args, int depth, char **why)
{
	const cJSON	*props, *p, *annot, *v;
	char		*hname, *hval;
	int		 bad;

	if (depth > STATELESS_MAX_DEPTH ||
	    !cJSON_IsObject(props = stateless_get(schema, "properties")))
		return (0);
	cJSON_ArrayForEach(p, props) {
		v = cJSON_IsObject(args) ? stateless_get(args, p->string) : NULL;
		annot = stateless_get(p, "x-mcp-header");
		if (cJSON_IsString(annot)) {
			xasprintf(&hname, "Mcp-Param-%s", annot->valuestring);
			hval = stateless_header(req, hname, &bad);
			if (bad || (v != NULL && !cJSON_IsNull(v) &&
			    (hval == NULL || !stateless_param_equal(v, hval)))) {
				xasprintf(why, "Header mismatch: %s %s the "
				    "body's arguments.%s", hname, bad ?
				    "is not a valid header value for" :
				    hval == NULL ? "is missing for" :
				    "does not match", p->string);
				free(hname);
				free(hval);
				return (-1);
			}
			free(hname);
			free(hval);
		}
		if (stateless_params_walk(req, p, v, depth + 1, why) != 0)
			return (-1);
	}
	return (0);
}

static int
stateless_params_check(struct evhttp_request *req, const cJSON *params,
    char **why)
{
	const cJSON	*name = stateless_get(params, "name"), *t;
	cJSON		*tools;
	int		 rc = 0;

	if (!cJSON_IsString(name))
		return (0);
	tools = provider_list_tools(NULL);
	cJSON_ArrayForEach(t, tools) {
		if (cJSON_IsString(stateless_get(t, "name")) &&
		    strcmp(stateless_get(t, "name")->valuestring,
		    name->valuestring) == 0) {
			rc = stateless_params_walk(req, stateless_get(t,
			    "inputSchema"), stateless_get(params, "arguments"), 0,
			    why);
			break;
		}
	}
	cJSON_Delete(tools);
	return (rc);
}

/* --- serving ------------------------------------------------------------ */

/*
 * Whether a POST is the stateless path's: a single message, no session,
 * and a protocol version that is not a legacy one, in the header or
 * (with no header) in the body's _meta. initialize, a session, a batch or
 * a 2025 header stay on the legacy path, byte for byte.
 */
int
stateless_claims(struct evhttp_request *req, const cJSON *msg)
{
	struct evkeyvalq	*in = evhttp_request_get_input_headers(req);
	const char		*version;

	if (!cJSON_IsObject(msg) ||
	    evhttp_find_header(in, "Mcp-Session-Id") != NULL)
		return (0);
	if ((version = evhttp_find_header(in, "MCP-Protocol-Version")) != NULL)
		return (!mcp_version_supported(version));
	return (stateless_get(stateless_meta(msg), STATELESS_META_VERSION) != NULL);
}

/* The request's metadata against its headers; 0 or answered. */
static int
stateless_validate(struct evhttp_request *req, const cJSON *msg,
    const cJSON *id, const struct dispatch_method **mp)
{
	const cJSON	*meta = stateless_meta(msg), *pv, *caps, *method, *nv;
	const struct dispatch_method *m;
	const char	*np;
	char		*h, *message;
	cJSON		*data;
	int		 bad;

	pv = stateless_get(meta, STATELESS_META_VERSION);
	caps = stateless_get(meta, STATELESS_META_CAPS);
	if (!cJSON_IsString(pv) || !cJSON_IsObject(caps)) {
		stateless_error(req, 400, id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: _meta must carry "
		    STATELESS_META_VERSION " and " STATELESS_META_CAPS, NULL);
		return (-1);
	}
	h = stateless_header(req, "MCP-Protocol-Version", &bad);
	if (h == NULL || strcmp(h, pv->valuestring) != 0) {
		xasprintf(&message, "Header mismatch: MCP-Protocol-Version %s%s "
		    "the body's %s", h == NULL ? "is missing for" : h,
		    h == NULL ? "" : " does not match", pv->valuestring);
		stateless_error(req, 400, id, JSONRPC_HEADER_MISMATCH, message,
		    NULL);
		free(message);
		free(h);
		return (-1);
	}
	free(h);
	method = stateless_get(msg, "method");
	h = stateless_header(req, "Mcp-Method", &bad);
	if (h == NULL || strcmp(h, method->valuestring) != 0) {
		stateless_error(req, 400, id, JSONRPC_HEADER_MISMATCH, h == NULL ?
		    "Header mismatch: Mcp-Method is missing or malformed" :
		    "Header mismatch: Mcp-Method does not match the body's "
		    "method", NULL);
		free(h);
		return (-1);
	}
	free(h);
	if (strcmp(pv->valuestring, STATELESS_VERSION) != 0) {
		data = cJSON_CreateObject();
		cJSON_AddItemToObject(data, "supported", mcp_supported_versions());
		cJSON_AddStringToObject(data, "requested", pv->valuestring);
		stateless_error(req, 400, id, JSONRPC_UNSUPPORTED_VERSION,
		    "Unsupported protocol version", data);
		return (-1);
	}
	if ((m = dispatch_lookup(method->valuestring, MCP_REV_2026)) == NULL) {
		stateless_error(req, 404, id, JSONRPC_METHOD_NOT_FOUND,
		    "Method not found", NULL);
		return (-1);
	}
	if ((np = dispatch_method_name_param(m)) != NULL) {
		nv = stateless_get(stateless_get(msg, "params"), np);
		h = stateless_header(req, "Mcp-Name", &bad);
		if (h == NULL || (cJSON_IsString(nv) &&
		    strcmp(h, nv->valuestring) != 0)) {
			stateless_error(req, 400, id, JSONRPC_HEADER_MISMATCH,
			    h == NULL ? "Header mismatch: Mcp-Name is missing "
			    "or malformed" : "Header mismatch: Mcp-Name does "
			    "not match the body", NULL);
			free(h);
			return (-1);
		}
		free(h);
	}
	if ((dispatch_method_flags(m) & DISPATCH_PARAM_HEADERS) &&
	    stateless_params_check(req, stateless_get(msg, "params"), &message) != 0) {
		stateless_error(req, 400, id, JSONRPC_HEADER_MISMATCH, message,
		    NULL);
		free(message);
		return (-1);
	}
	*mp = m;
	return (0);
}

/* The answers so far: requestState's and this round's; 0 or answered. */
static int
stateless_rounds(struct stateless_req *mr, const cJSON *params, int *resumed)
{
	const cJSON	*state = stateless_get(params, "requestState");
	const cJSON	*responses = stateless_get(params, "inputResponses");
	const cJSON	*r;
	const char	*cause;

	*resumed = 0;
	if (state != NULL && !seal_ready()) {
		response_unavailable(mr->resp, STATELESS_NO_STATE_KEY);
		return (-1);
	}
	if (state != NULL) {
		if (!cJSON_IsString(state) ||
		    (mr->answers = stateless_state_open(mr, state->valuestring,
		    &cause)) == NULL) {
			response_json(mr->resp, 400, jsonrpc_error(mr->id,
			    JSONRPC_INVALID_PARAMS, cJSON_IsString(state) ?
			    cause : "requestState must be a string", NULL));
			return (-1);
		}
		*resumed = 1;
	}
	if (responses == NULL)
		return (0);
	if (!cJSON_IsObject(responses)) {
		response_json(mr->resp, 400, jsonrpc_error(mr->id,
		    JSONRPC_INVALID_PARAMS, "Invalid params: inputResponses "
		    "must be an object", NULL));
		return (-1);
	}
	if (mr->answers == NULL)
		mr->answers = cJSON_CreateObject();
	/* An answer that is no result object is asked for again. */
	cJSON_ArrayForEach(r, responses) {
		if (!cJSON_IsObject(r))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(mr->answers, r->string);
		cJSON_AddItemToObject(mr->answers, r->string,
		    cJSON_Duplicate(r, 1));
	}
	return (0);
}

static void
stateless_start_call(struct stateless_req *mr, const cJSON *msg, int resumed,
    struct auth_principal *who)
{
	const cJSON	*meta = stateless_meta(msg), *level, *token;
	int		 n = INT_MAX;

	level = stateless_get(meta, STATELESS_META_LEVEL);
	if (cJSON_IsString(level))
		n = mcp_log_level_parse(level->valuestring);
	if (n < 0) {
		stateless_reply(mr, jsonrpc_error(mr->id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: unknown " STATELESS_META_LEVEL, NULL));
		stateless_free(mr);
		return;
	}
	token = stateless_get(meta, "progressToken");
	if (token != NULL && !cJSON_IsString(token) && !cJSON_IsNumber(token))
		token = NULL;
	mr->call = call_start_sink(&stateless_sink, mr, mr->id, token, n,
	    stateless_get(meta, STATELESS_META_CAPS), resumed);
	call_set_principal(mr->call, who);
	TAILQ_INSERT_TAIL(&stateless_calls, mr, call_entry);
	mr->running = 1;
	mr->starting = 1;
	dispatch_start_call(mr->call, msg);
	mr->starting = 0;
	if (stateless_done(mr))
		stateless_maybe_free(mr);
	else
		response_stream_after(mr->resp, STATELESS_JSON_MS);
}

/*
 * Whether one more open stream fits: session views, stateless calls and
 * listen streams hold a connection each, and together they stay within
 * max_views (transport.c asks before a session's view, too).
 */
int
stateless_room(void)
{
	size_t	n = view_count() + stateless_running_calls() +
		    stateless_listen_count();

	if ((long long)n < server.conf->max_views)
		return (1);
	log_limited(LOG_LEVEL_WARN, "max-views", "open stream limit reached "
	    "(max_views %lld)", server.conf->max_views);
	return (0);
}

/* A POST stateless_claims took (msg taken): validated, then carried out. */
void
stateless_serve(struct evhttp_request *req, cJSON *msg,
    struct auth_principal *who)
{
	const struct dispatch_method	*m;
	struct stateless_req		*mr;
	const cJSON			*id, *nv;
	const char			*cause, *np;
	enum dispatch_kind		 kind;
	int				 resumed;

	switch (jsonrpc_classify(msg, &cause)) {
	case JSONRPC_INVALID:
		stateless_error(req, 400, jsonrpc_reply_id(msg),
		    JSONRPC_INVALID_REQUEST, cause, NULL);
		goto out;
	case JSONRPC_RESPONSE:
		stateless_error(req, 400, jsonrpc_reply_id(msg),
		    JSONRPC_INVALID_REQUEST, "Invalid Request: a client sends "
		    "no responses in " STATELESS_VERSION, NULL);
		goto out;
	case JSONRPC_NOTIFICATION:
		/* The revision defines none over HTTP: taken, ignored. */
		reply_empty(req, 202);
		goto out;
	case JSONRPC_REQUEST:
		break;
	}
	id = stateless_get(msg, "id");
	if (jsonrpc_has_nul(stateless_get(msg, "params"))) {
		stateless_error(req, 400, id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: a name or string contains NUL (\\u0000)",
		    NULL);
		goto out;
	}
	if (stateless_validate(req, msg, id, &m) != 0)
		goto out;
	kind = dispatch_method_kind(m);
	if ((kind == DISPATCH_CALL || kind == DISPATCH_LISTEN) &&
	    !stateless_room()) {
		reply_unavailable(req, 1, "Too many open streams, retry later");
		goto out;
	}
	mr = xcalloc(1, sizeof *mr);
	mr->resp = response_new(req, stateless_gone, mr);
	mr->m = m;
	mr->id = cJSON_Duplicate(id, 1);
	mr->who = auth_principal_ref(who);
	if ((np = dispatch_method_name_param(m)) != NULL) {
		nv = stateless_get(stateless_get(msg, "params"), np);
		mr->name = cJSON_IsString(nv) ? xstrdup(nv->valuestring) :
		    NULL;
	}
	if (kind == DISPATCH_LISTEN) {
		mr->starting = 1;
		stateless_listen(mr, stateless_get(msg, "params"));
		mr->starting = 0;
		stateless_maybe_free(mr);
	} else if (kind == DISPATCH_QUICK) {
		stateless_reply(mr, dispatch_quick_stateless(who, msg));
		stateless_free(mr);
	} else if (stateless_rounds(mr, stateless_get(msg, "params"), &resumed) != 0)
		stateless_free(mr);
	else
		stateless_start_call(mr, msg, resumed, who);
out:
	cJSON_Delete(msg);
}
