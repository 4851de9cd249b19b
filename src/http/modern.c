/*
 * The stateless path: MCP 2026-07-28 on the endpoint the legacy
 * (2025-era, session) path serves. transport.c hands over a POST that
 * modern_claims; everything after that is here: the request metadata
 * checks in the order of the Streamable HTTP binding's Server Validation,
 * the method table of this revision (modern_methods, one handler per
 * method), the response (a JSON body, or an SSE stream scoped to the
 * request), subscriptions/listen streams and the MRTR rounds of
 * input_required results.
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

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "auth.h"
#include "base64.h"
#include "call.h"
#include "conf.h"
#include "dispatch.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "modern.h"
#include "provider.h"
#include "reply.h"
#include "seal.h"
#include "server.h"
#include "sse.h"
#include "task.h"
#include "view.h"
#include "xmalloc.h"

#define MODERN_VERSION		CALL_MODERN_VERSION
#define MODERN_META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define MODERN_META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define MODERN_META_LEVEL	"io.modelcontextprotocol/logLevel"
#define MODERN_META_SERVER	"io.modelcontextprotocol/serverInfo"
#define MODERN_META_SUB		"io.modelcontextprotocol/subscriptionId"

/* JSON-RPC errors this revision defines. */
#define MODERN_HEADER_MISMATCH	-32020
#define MODERN_MISSING_CAP	-32021
#define MODERN_UNSUPPORTED	-32022

/*
 * A call that has neither answered nor sent anything this long gets an
 * SSE response anyway: evhttp only notices a client gone once it writes,
 * and a gone client must cancel its request.
 */
#define MODERN_JSON_MS		200
/*
 * No key may sign a requestState (seal_ready): the event log's keyring not
 * read yet, or not for too long. Another instance may have one: 503.
 */
#define MODERN_NO_STATE_KEY	"No requestState key from the event log; " \
				"retry later"
/* Mcp-Param-* headers a tool may declare, and their nesting. */
#define MODERN_MAX_PARAMS	32
#define MODERN_MAX_DEPTH	8

enum modern_state {
	MODERN_WAITING,		/* nothing sent yet: a JSON body is possible */
	MODERN_STREAMING,	/* an SSE response has begun */
	MODERN_DONE		/* the response ended, or the client left */
};

struct modern_req;

/*
 * One method of this revision. A handler of its own (run), or dispatch.c's
 * (quick methods answered at once, call methods run as a call whose sink
 * is this file). name_param: the params member Mcp-Name mirrors.
 */
struct modern_method {
	const char	*name;
	const char	*name_param;
	int		 flags;
#define MODERN_CALL		0x1	/* runs as a call (dispatch.c) */
#define MODERN_CACHEABLE	0x2	/* ttlMs and cacheScope */
	int		(*enabled)(void);
	void		(*run)(struct modern_req *, const cJSON *);
};

struct modern_req {
	struct evhttp_request		*req;
	struct evhttp_connection	*evcon;
	const struct modern_method	*m;
	cJSON				*id;
	enum modern_state		 state;
	struct event			*late;	/* the JSON body's deadline */
	struct event			*timer;	/* keep-alive comments */
	int				 starting; /* inside its handler */

	struct call			*call;
	int				 call_done;
	char				*name;	/* the tool, prompt or URI */
	cJSON				*answers;  /* inputResponses so far */
	cJSON				*asked;	   /* this round's questions */
	struct event			*asked_ev;
	call_sent_cb			 sent_cb;  /* waiting for a drain */
	void				*sent_arg;

	int				 running;  /* on modern_calls */
	TAILQ_ENTRY(modern_req)		 call_entry;

	int				 listen;
	int				 filter[MODERN_RESOURCE_UPDATED];
	cJSON				*uris;	/* resourceSubscriptions */
	cJSON				*tasks;	/* taskIds */
	struct auth_principal		*who;	/* NULL without auth */
	TAILQ_ENTRY(modern_req)		 entry;
};

static TAILQ_HEAD(, modern_req)	modern_listeners =
    TAILQ_HEAD_INITIALIZER(modern_listeners);
/* Requests whose call has not answered: what a drain waits for. */
static TAILQ_HEAD(, modern_req)	modern_calls =
    TAILQ_HEAD_INITIALIZER(modern_calls);

/* Changes heard from other instances (a shared log): see modern_notify. */
static struct {
	int	watching;
	int	live;		/* the subscription went live once */
} modern_fanout;

/* --- helpers ------------------------------------------------------------ */

static const cJSON *
modern_get(const cJSON *obj, const char *key)
{
	return (cJSON_GetObjectItemCaseSensitive(obj, key));
}

static const cJSON *
modern_meta(const cJSON *msg)
{
	return (modern_get(modern_get(msg, "params"), "_meta"));
}

/* The revision's versions, newest first, then the legacy ones. */
static cJSON *
modern_supported(void)
{
	cJSON	*list = cJSON_CreateArray();
	int	 i, n;

	cJSON_AddItemToArray(list, cJSON_CreateString(MODERN_VERSION));
	for (n = 0; mcp_versions[n] != NULL; n++)
		;
	for (i = n - 1; i >= 0; i--)
		cJSON_AddItemToArray(list, cJSON_CreateString(mcp_versions[i]));
	return (list);
}

static void
modern_error(struct evhttp_request *req, int status, const cJSON *id,
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
modern_header(struct evhttp_request *req, const char *name, int *bad)
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

/* --- the response ------------------------------------------------------- */

static void	modern_keepalive_cb(evutil_socket_t, short, void *);

static void
modern_free(struct modern_req *mr)
{
	if (mr->listen)
		TAILQ_REMOVE(&modern_listeners, mr, entry);
	if (mr->late != NULL)
		event_free(mr->late);
	if (mr->timer != NULL)
		event_free(mr->timer);
	if (mr->asked_ev != NULL)
		event_free(mr->asked_ev);
	cJSON_Delete(mr->id);
	free(mr->name);
	cJSON_Delete(mr->answers);
	cJSON_Delete(mr->asked);
	cJSON_Delete(mr->uris);
	cJSON_Delete(mr->tasks);
	auth_principal_unref(mr->who);
	free(mr);
}

/* Freed once neither the call nor the connection can reach it. */
static void
modern_maybe_free(struct modern_req *mr)
{
	if (mr->state == MODERN_DONE && !mr->starting &&
	    (mr->call == NULL || mr->call_done))
		modern_free(mr);
}

static void
modern_closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct modern_req	*mr = arg;

	if (mr->state != MODERN_STREAMING)
		return;
	log_debug("stateless request: the client closed its stream");
	mr->state = MODERN_DONE;
	/* On a peer close the request is ours to end (STYLE.md). */
	evhttp_send_reply_end(mr->req);
	if (mr->call != NULL && !mr->call_done) {
		/* Its sink's respond(NULL) frees mr. */
		call_cancel(mr->call, "the client closed the response stream");
		return;
	}
	modern_maybe_free(mr);
}

static void
modern_stream_start(struct modern_req *mr)
{
	struct evkeyvalq	*headers;
	struct bufferevent	*bev;
	struct timeval		 tv;

	headers = evhttp_request_get_output_headers(mr->req);
	evhttp_add_header(headers, "Content-Type", "text/event-stream");
	evhttp_add_header(headers, "Cache-Control", "no-cache");
	evhttp_add_header(headers, "X-Accel-Buffering", "no");
	reply_count(mr->req, 200);
	evhttp_send_reply_start(mr->req, 200, "OK");
	mr->state = MODERN_STREAMING;
	bev = evhttp_connection_get_bufferevent(mr->evcon);
	bufferevent_set_timeouts(bev, NULL, NULL);
	evhttp_connection_set_closecb(mr->evcon, modern_closed_cb, mr);
	mr->timer = event_new(server.base, -1, EV_PERSIST,
	    modern_keepalive_cb, mr);
	tv.tv_sec = server.conf->sse_keepalive;
	tv.tv_usec = 0;
	evtimer_add(mr->timer, &tv);
}

static size_t
modern_queued(struct modern_req *mr)
{
	return (evbuffer_get_length(bufferevent_get_output(
	    evhttp_connection_get_bufferevent(mr->evcon))));
}

static void	modern_drained_cb(struct evhttp_connection *, void *);

/*
 * Every chunk names the drain callback: the connection has one slot, and
 * a chunk sent without it would leave a paused sender waiting forever
 * (the end of the reply takes the slot back).
 */
static void
modern_chunk(struct modern_req *mr, struct evbuffer *buf)
{
	evhttp_send_reply_chunk_with_cb(mr->req, buf, modern_drained_cb, mr);
}

static void
modern_write(struct modern_req *mr, const cJSON *msg)
{
	struct evbuffer	*buf = evbuffer_new();
	const char	*text;
	size_t		 len;

	text = jsonrpc_print_shared(msg, &len);
	sse_event(buf, NULL, "message", text, len, -1);
	modern_chunk(mr, buf);
	evbuffer_free(buf);
}

/* Ends a streaming response normally: the connection may serve again. */
static void
modern_stream_end(struct modern_req *mr)
{
	evhttp_connection_set_closecb(mr->evcon, NULL, NULL);
	evhttp_connection_set_timeout(mr->evcon, SERVER_REQUEST_TIMEOUT);
	evhttp_send_reply_end(mr->req);
	mr->state = MODERN_DONE;
}

static void
modern_keepalive_cb(evutil_socket_t fd, short events, void *arg)
{
	struct modern_req	*mr = arg;
	struct evbuffer		*buf;

	if (mr->state != MODERN_STREAMING || modern_queued(mr) > 0)
		return;
	buf = evbuffer_new();
	sse_comment(buf, "keepalive");
	modern_chunk(mr, buf);
	evbuffer_free(buf);
}

/* The deadline for a JSON body passed: the response becomes a stream. */
static void
modern_json_late_cb(evutil_socket_t fd, short events, void *arg)
{
	struct modern_req	*mr = arg;

	if (mr->state == MODERN_WAITING)
		modern_stream_start(mr);
}

/*
 * Every result of this revision says its resultType; the server names
 * itself in _meta; cacheable results carry their caching hints.
 */
static void
modern_decorate(const struct modern_method *m, cJSON *result);

/* --- the call's sink ---------------------------------------------------- */

struct modern_sent {
	call_sent_cb	 cb;
	void		*arg;
	int		 ok;
};

static void
modern_sent_later_cb(evutil_socket_t fd, short events, void *arg)
{
	struct modern_sent	*s = arg;

	s->cb(s->ok, s->arg);
	free(s);
}

static void
modern_sent_later(call_sent_cb cb, void *arg, int ok)
{
	struct modern_sent	*s;

	if (cb == NULL)
		return;
	s = xmalloc(sizeof *s);
	s->cb = cb;
	s->arg = arg;
	s->ok = ok;
	event_base_once(server.base, -1, EV_TIMEOUT, modern_sent_later_cb, s,
	    NULL);
}

/* The client took what was queued: a paused sender goes on. */
static void
modern_drained_cb(struct evhttp_connection *evcon, void *arg)
{
	struct modern_req	*mr = arg;
	call_sent_cb		 cb = mr->sent_cb;

	if (cb == NULL)
		return;
	mr->sent_cb = NULL;
	cb(1, mr->sent_arg);
}

/*
 * A notification of the call: the response becomes a stream if it was
 * not one. Past the high watermark the sender hears back only once the
 * client has taken what is queued (the block policy): memory per request
 * stays near sse_high_watermark.
 */
static void
modern_sink_send(void *arg, cJSON *msg, call_sent_cb cb, void *cbarg)
{
	struct modern_req	*mr = arg;

	if (mr->state == MODERN_DONE) {
		cJSON_Delete(msg);
		modern_sent_later(cb, cbarg, 0);
		return;
	}
	if (mr->state == MODERN_WAITING)
		modern_stream_start(mr);
	modern_write(mr, msg);
	if ((long long)modern_queued(mr) < server.conf->sse_high_watermark ||
	    cb == NULL || mr->sent_cb != NULL)
		modern_sent_later(cb, cbarg, 1);
	else {
		mr->sent_cb = cb;
		mr->sent_arg = cbarg;
	}
	cJSON_Delete(msg);
}

static int
modern_error_status(const cJSON *msg)
{
	const cJSON	*code = modern_get(modern_get(msg, "error"), "code");

	if (cJSON_IsNumber(code) && code->valueint == MODERN_MISSING_CAP)
		return (400);
	if (cJSON_IsNumber(code) && code->valueint == JSONRPC_UNAVAILABLE)
		return (503);
	return (200);
}

/* The call's response (taken), or NULL: it ended without one. */
static void
modern_sink_respond(void *arg, cJSON *msg)
{
	struct modern_req	*mr = arg;
	int			 status;

	mr->call_done = 1;
	if (mr->running) {
		TAILQ_REMOVE(&modern_calls, mr, call_entry);
		mr->running = 0;
	}
	if (mr->sent_cb != NULL) {
		modern_sent_later(mr->sent_cb, mr->sent_arg, 0);
		mr->sent_cb = NULL;
	}
	if (msg == NULL && mr->state != MODERN_DONE)
		msg = jsonrpc_error(mr->id, JSONRPC_INTERNAL_ERROR,
		    "The request ended without a result", NULL);
	if (msg != NULL && mr->state != MODERN_DONE) {
		modern_decorate(mr->m, modern_get(msg, "result") != NULL ?
		    cJSON_GetObjectItemCaseSensitive(msg, "result") : NULL);
		if (mr->state == MODERN_STREAMING) {
			modern_write(mr, msg);
			cJSON_Delete(msg);
			modern_stream_end(mr);
		} else {
			mr->state = MODERN_DONE;
			status = modern_error_status(msg);
			if (status == 503)
				evhttp_add_header(
				    evhttp_request_get_output_headers(mr->req),
				    "Retry-After", "1");
			reply_json(mr->req, status, msg);
		}
	} else
		cJSON_Delete(msg);
	/* call.c touches nothing of ours once the call has ended. */
	modern_maybe_free(mr);
}

/* --- MRTR --------------------------------------------------------------- */

/*
 * What a sealed requestState holds: the request it belongs to (method and
 * name) and the answers the client gave in earlier rounds; seal.c stamps
 * it with the time, and refuses it once too old (SEAL_LIFETIME_MS). NULL
 * when no key may sign (seal_ready).
 */
static char *
modern_state_seal(struct modern_req *mr)
{
	cJSON	*state = cJSON_CreateObject();
	char	*text, *sealed;

	cJSON_AddStringToObject(state, "m", mr->m->name);
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
modern_state_open(const struct modern_req *mr, const char *sealed,
    const char **cause)
{
	cJSON		*state, *answers;
	const cJSON	*m, *n;
	char		*text;

	if ((text = seal_open(sealed, cause)) == NULL)
		return (NULL);
	state = cJSON_Parse(text);
	free(text);
	m = modern_get(state, "m");
	n = modern_get(state, "n");
	*cause = "requestState belongs to another request";
	if (!cJSON_IsString(m) || !cJSON_IsString(n) ||
	    strcmp(m->valuestring, mr->m->name) != 0 ||
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
modern_asked_cb(evutil_socket_t fd, short events, void *arg)
{
	struct modern_req	*mr = arg;
	cJSON			*result;
	char			*state;

	if (mr->call_done || mr->asked == NULL)
		return;
	if ((state = modern_state_seal(mr)) == NULL) {
		/* mr may be freed by the time this returns. */
		call_respond_error(mr->call, JSONRPC_UNAVAILABLE,
		    MODERN_NO_STATE_KEY);
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
 * A question the client declared no capability for ends the call with
 * -32021.
 */
static enum call_ask
modern_sink_ask(void *arg, struct call *c, const char *key,
    const char *method, cJSON *params, const cJSON **answer)
{
	struct modern_req	*mr = arg;
	const char		*cap = mcp_request_capability(method);
	const cJSON		*found;
	cJSON			*data, *q;
	char			*message;

	if (cap != NULL && !call_client_capable(c, cap)) {
		cJSON_Delete(params);
		data = cJSON_CreateObject();
		cJSON_AddObjectToObject(cJSON_AddObjectToObject(data,
		    "requiredCapabilities"), cap);
		xasprintf(&message, "Missing required client capability: %s",
		    cap);
		call_respond_error_data(c, MODERN_MISSING_CAP, message, data);
		free(message);
		return (CALL_ASK_REFUSED);
	}
	found = modern_get(mr->answers, key);
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
		mr->asked_ev = evtimer_new(server.base, modern_asked_cb, mr);
	if (!evtimer_pending(mr->asked_ev, NULL))
		event_active(mr->asked_ev, EV_TIMEOUT, 0);
	return (CALL_ASK_PENDING);
}

static const struct call_sink modern_sink = {
	modern_sink_send,
	modern_sink_respond,
	modern_sink_ask,
	NULL
};

/* --- results ------------------------------------------------------------ */

static void
modern_decorate(const struct modern_method *m, cJSON *result)
{
	cJSON	*meta, *info;
	int	 complete;

	if (!cJSON_IsObject(result))
		return;
	if (!cJSON_HasObjectItem(result, "resultType"))
		cJSON_AddStringToObject(result, "resultType", "complete");
	complete = strcmp(cJSON_GetStringValue(modern_get(result,
	    "resultType")) != NULL ? cJSON_GetStringValue(modern_get(result,
	    "resultType")) : "", "complete") == 0;
	if ((meta = cJSON_GetObjectItemCaseSensitive(result, "_meta")) ==
	    NULL || !cJSON_IsObject(meta)) {
		cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
		meta = cJSON_AddObjectToObject(result, "_meta");
	}
	info = cJSON_AddObjectToObject(meta, MODERN_META_SERVER);
	cJSON_AddStringToObject(info, "name", "mcpd");
	cJSON_AddStringToObject(info, "version", MCPD_VERSION);
	/*
	 * What mcpd lists can change on a reload, and an exec tool's
	 * resource on any read: no freshness is promised. Nothing served
	 * depends on who asks.
	 */
	if (m != NULL && (m->flags & MODERN_CACHEABLE) && complete) {
		if (!cJSON_HasObjectItem(result, "ttlMs"))
			cJSON_AddNumberToObject(result, "ttlMs", 0);
		if (!cJSON_HasObjectItem(result, "cacheScope"))
			cJSON_AddStringToObject(result, "cacheScope", "public");
	}
}

/* A whole JSON-RPC response (taken) for a request answered at once. */
static void
modern_reply(struct modern_req *mr, cJSON *msg)
{
	modern_decorate(mr->m, cJSON_GetObjectItemCaseSensitive(msg,
	    "result"));
	mr->state = MODERN_DONE;
	reply_json(mr->req, 200, msg);
}

/*
 * For a method handler in another file (a line of modern_methods): the
 * request's id, and its answer (a whole JSON-RPC response, taken), given
 * in the handler or on a later turn; the request is freed with it.
 */
const cJSON *
modern_request_id(const struct modern_req *mr)
{
	return (mr->id);
}

void
modern_respond(struct modern_req *mr, cJSON *msg)
{
	if (mr->state != MODERN_WAITING) {
		cJSON_Delete(msg);
		return;
	}
	modern_reply(mr, msg);
	modern_maybe_free(mr);
}

/* --- methods of our own ------------------------------------------------- */

static void
modern_discover(struct modern_req *mr, const cJSON *params)
{
	cJSON	*result = cJSON_CreateObject(), *caps, *o;

	cJSON_AddItemToObject(result, "supportedVersions", modern_supported());
	caps = dispatch_capabilities();
	/* Listen streams hear list changes (the fixtures make some). */
	if (server.conf->fixtures_conformance) {
		if ((o = cJSON_GetObjectItemCaseSensitive(caps, "tools")) !=
		    NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(o, "listChanged",
			    cJSON_CreateTrue());
		if ((o = cJSON_GetObjectItemCaseSensitive(caps, "prompts")) !=
		    NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(o, "listChanged",
			    cJSON_CreateTrue());
	}
	task_capabilities(caps);
	cJSON_AddItemToObject(result, "capabilities", caps);
	modern_reply(mr, jsonrpc_result(mr->id, result));
}

static const struct {
	const char		*field;
	enum modern_change	 change;
	int			(*served)(void);
} modern_filters[] = {
	{ "toolsListChanged", MODERN_TOOLS_CHANGED, NULL },
	{ "promptsListChanged", MODERN_PROMPTS_CHANGED, provider_has_prompts },
	{ "resourcesListChanged", MODERN_RESOURCES_CHANGED,
	  provider_has_resources },
};
#define MODERN_NFILTERS	(sizeof modern_filters / sizeof modern_filters[0])

/* A notification on a listen stream, tagged with its subscription. */
static void
modern_listen_send(struct modern_req *mr, const char *method, cJSON *params)
{
	cJSON	*msg, *meta;

	if (params == NULL)
		params = cJSON_CreateObject();
	meta = cJSON_AddObjectToObject(params, "_meta");
	cJSON_AddItemToObject(meta, MODERN_META_SUB, cJSON_Duplicate(mr->id,
	    1));
	msg = jsonrpc_notification(method, params);
	modern_write(mr, msg);
	cJSON_Delete(msg);
}

/*
 * subscriptions/listen: the acknowledgement (what of the filter is
 * served) first, then the change notifications the filter asks for,
 * until the client leaves or the server ends the stream.
 */
static void
modern_listen(struct modern_req *mr, const cJSON *params)
{
	const cJSON	*filter = modern_get(params, "notifications");
	const cJSON	*f, *uri;
	cJSON		*ack, *honoured;
	size_t		 i;

	if (!cJSON_IsObject(filter)) {
		modern_reply(mr, jsonrpc_error(mr->id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: subscriptions/listen needs a "
		    "notifications object", NULL));
		return;
	}
	ack = cJSON_CreateObject();
	honoured = cJSON_AddObjectToObject(ack, "notifications");
	for (i = 0; i < MODERN_NFILTERS; i++) {
		f = modern_get(filter, modern_filters[i].field);
		if (!cJSON_IsTrue(f) || (modern_filters[i].served != NULL &&
		    !modern_filters[i].served()))
			continue;
		mr->filter[modern_filters[i].change] = 1;
		cJSON_AddBoolToObject(honoured, modern_filters[i].field, 1);
	}
	f = modern_get(filter, "resourceSubscriptions");
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
	f = modern_get(filter, "taskIds");
	if (cJSON_IsArray(f) && cJSON_GetArraySize(f) > 0) {
		/* The extension says: only for clients that declare it. */
		if (!task_declared(params)) {
			cJSON_Delete(ack);
			mr->state = MODERN_DONE;
			modern_error(mr->req, 400, mr->id, MODERN_MISSING_CAP,
			    "Missing required client capability",
			    task_missing_capability());
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
	if (modern_fanout.watching && (!modern_fanout.live ||
	    !eventlog_available(server.eventlog))) {
		cJSON_Delete(ack);
		mr->state = MODERN_DONE;
		reply_unavailable(mr->req, 1, "Cannot hear other instances' "
		    "changes now, listen again later");
		return;
	}
	mr->listen = 1;
	TAILQ_INSERT_TAIL(&modern_listeners, mr, entry);
	modern_stream_start(mr);
	modern_listen_send(mr, "notifications/subscriptions/acknowledged",
	    ack);
}

static int
modern_listens(const cJSON *list, const char *s)
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
modern_task_read_cb(const cJSON *task, const cJSON *principal, void *arg)
{
	char			*tid = arg;
	struct modern_req	*mr, *mr1;

	TAILQ_FOREACH_SAFE(mr, &modern_listeners, entry, mr1) {
		if (task == NULL || mr->state != MODERN_STREAMING ||
		    !modern_listens(mr->tasks, tid) ||
		    !task_allowed(principal, mr->who))
			continue;
		if ((long long)modern_queued(mr) >=
		    server.conf->sse_high_watermark) {
			log_limited(LOG_LEVEL_WARN, "listen-slow", "a listen "
			    "stream is too far behind; ending it");
			modern_stream_end(mr);
			modern_maybe_free(mr);
			continue;
		}
		modern_listen_send(mr, "notifications/tasks",
		    cJSON_Duplicate(task, 1));
	}
	free(tid);
}

static void
modern_task_changed(const char *tid)
{
	struct modern_req	*mr;

	TAILQ_FOREACH(mr, &modern_listeners, entry) {
		if (mr->state == MODERN_STREAMING &&
		    modern_listens(mr->tasks, tid))
			break;
	}
	if (mr == NULL)
		return;
	task_read(tid, modern_task_read_cb, xstrdup(tid));
}

/* task.c's hook: a change it committed goes to every instance's listens. */
static void
modern_task_listener(const char *tid, const cJSON *task)
{
	modern_notify(MODERN_TASK_CHANGED, tid);
}

/*
 * A change: every listen stream here whose filter asks for it hears of
 * it. One that cannot keep up is ended (its client listens again and
 * re-reads what it lists) rather than buffered without bound.
 */
static void
modern_deliver(enum modern_change change, const char *uri)
{
	static const char	*methods[] = {
		"notifications/tools/list_changed",
		"notifications/prompts/list_changed",
		"notifications/resources/list_changed",
		"notifications/resources/updated"
	};
	struct modern_req	*mr, *mr1;
	const cJSON		*u;
	cJSON			*params;
	int			 match;

	if (change == MODERN_TASK_CHANGED) {
		modern_task_changed(uri);
		return;
	}
	TAILQ_FOREACH_SAFE(mr, &modern_listeners, entry, mr1) {
		if (mr->state != MODERN_STREAMING)
			continue;
		match = 0;
		if (change != MODERN_RESOURCE_UPDATED)
			match = mr->filter[change];
		else {
			cJSON_ArrayForEach(u, mr->uris) {
				if (strcmp(u->valuestring, uri) == 0)
					match = 1;
			}
		}
		if (!match)
			continue;
		if ((long long)modern_queued(mr) >=
		    server.conf->sse_high_watermark) {
			log_limited(LOG_LEVEL_WARN, "listen-slow", "a listen "
			    "stream is too far behind; ending it");
			modern_stream_end(mr);
			modern_maybe_free(mr);
			continue;
		}
		params = NULL;
		if (change == MODERN_RESOURCE_UPDATED) {
			params = cJSON_CreateObject();
			cJSON_AddStringToObject(params, "uri", uri);
		}
		modern_listen_send(mr, methods[change], params);
	}
}

/*
 * With a shared log, changes go to every instance through the log's
 * messages (Redis PUBLISH on one channel, MODERN_CHANNEL); each delivers
 * to its own listen streams, this one included, when the message comes
 * back. "C<change><uri>".
 */
#define MODERN_CHANNEL	"listen"


struct modern_published {
	enum modern_change	 change;
	char			*uri;
};

static void
modern_published_cb(enum eventlog_status status, void *arg)
{
	struct modern_published	*p = arg;

	if (status != EVENTLOG_OK) {
		/* The others cannot hear it; this instance's listeners can. */
		log_limited(LOG_LEVEL_WARN, "listen-publish", "a change could "
		    "not be published to other instances: %s",
		    eventlog_status_name(status));
		modern_deliver(p->change, p->uri);
	}
	free(p->uri);
	free(p);
}

void
modern_notify(enum modern_change change, const char *uri)
{
	struct modern_published	*p;
	char			*msg;
	int			 len;

	if (uri == NULL)
		uri = "";
	if (!modern_fanout.watching ||
	    strlen(uri) + 2 > EVENTLOG_MESSAGE_MAX) {
		modern_deliver(change, uri);
		return;
	}
	len = xasprintf(&msg, "C%d%s", (int)change, uri);
	p = xmalloc(sizeof *p);
	p->change = change;
	p->uri = xstrdup(uri);
	eventlog_publish(server.eventlog, MODERN_CHANNEL, msg, (size_t)len,
	    modern_published_cb, p);
	free(msg);
}

static void
modern_message_cb(const char *sid, const char *msg, size_t len, void *arg)
{
	char	*uri;

	if (len < 2 || msg[0] != 'C' || msg[1] < '0' ||
	    msg[1] > '0' + MODERN_TASK_CHANGED)
		return;		/* a newer instance's, or not ours */
	uri = xstrndup(msg + 2, len - 2);
	modern_deliver((enum modern_change)(msg[1] - '0'), uri);
	free(uri);
}

static void	modern_listen_end_all(const char *);

/*
 * The subscription is (again) live: k = 0 says what was published
 * meanwhile may be lost. Listen streams cannot be resumed, so those open
 * across the gap end, and their clients listen again.
 */
static void
modern_watch_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	if (k != 0)
		return;
	if (modern_fanout.live)
		modern_listen_end_all("the subscription to other instances' "
		    "changes was lost");
	modern_fanout.live = 1;
}

void
modern_init(void)
{
	task_set_listener(modern_task_listener);
	if (!server.shared)
		return;
	eventlog_watch(server.eventlog, MODERN_CHANNEL, modern_watch_cb,
	    modern_message_cb, NULL);
	modern_fanout.watching = 1;
}

/* Once a second: a log that cannot be reached ends the listen streams. */
void
modern_cron(void)
{
	if (modern_fanout.watching && !eventlog_available(server.eventlog) &&
	    !TAILQ_EMPTY(&modern_listeners))
		modern_listen_end_all("the event log is unavailable");
}

/*
 * Listen streams end with their result, so clients listen again
 * (elsewhere if need be): the process stops, or can no longer hear what
 * other instances announce.
 */
static void
modern_listen_end_all(const char *why)
{
	struct modern_req	*mr, *mr1;
	cJSON			*result, *meta;

	TAILQ_FOREACH_SAFE(mr, &modern_listeners, entry, mr1) {
		if (mr->state != MODERN_STREAMING)
			continue;
		log_info("listen stream ended: %s", why);
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "resultType", "complete");
		meta = cJSON_AddObjectToObject(result, "_meta");
		cJSON_AddItemToObject(meta, MODERN_META_SUB,
		    cJSON_Duplicate(mr->id, 1));
		result = jsonrpc_result(mr->id, result);
		modern_write(mr, result);
		cJSON_Delete(result);
		modern_stream_end(mr);
		modern_maybe_free(mr);
	}
}

/* Stateless calls running (a drain waits for them as for sessions'). */
size_t
modern_running_calls(void)
{
	struct modern_req	*mr;
	size_t			 n = 0;

	TAILQ_FOREACH(mr, &modern_calls, call_entry)
		n++;
	return (n);
}

/* Listen streams open (they count against max_views; /healthz shows them). */
size_t
modern_listen_count(void)
{
	struct modern_req	*mr;
	size_t			 n = 0;

	TAILQ_FOREACH(mr, &modern_listeners, entry)
		n++;
	return (n);
}

/* Each running call answers an error saying why, and its provider stops. */
void
modern_interrupt_calls(const char *reason)
{
	struct modern_req	*mr, *mr1;

	TAILQ_FOREACH_SAFE(mr, &modern_calls, call_entry, mr1)
		call_interrupt(mr->call, reason);
}

void
modern_shutdown(void)
{
	modern_interrupt_calls("the server is shutting down");
	modern_listen_end_all("the server stops");
	if (modern_fanout.watching)
		eventlog_unwatch(server.eventlog, MODERN_CHANNEL,
		    modern_watch_cb, modern_message_cb, NULL);
	modern_fanout.watching = 0;
}

/* --- the table ---------------------------------------------------------- */

static const struct modern_method modern_methods[] = {
	{ "server/discover", NULL, MODERN_CACHEABLE, NULL, modern_discover },
	{ "subscriptions/listen", NULL, 0, NULL, modern_listen },
	{ "tools/list", NULL, MODERN_CACHEABLE, NULL, NULL },
	{ "tools/call", "name", MODERN_CALL, NULL, NULL },
	{ "resources/list", NULL, MODERN_CACHEABLE, provider_has_resources,
	  NULL },
	{ "resources/templates/list", NULL, MODERN_CACHEABLE,
	  provider_has_resources, NULL },
	{ "resources/read", "uri", MODERN_CALL | MODERN_CACHEABLE, NULL, NULL },
	{ "prompts/list", NULL, MODERN_CACHEABLE, provider_has_prompts, NULL },
	{ "prompts/get", "name", MODERN_CALL, NULL, NULL },
	{ "completion/complete", NULL, MODERN_CALL, NULL, NULL },
	/* The tasks extension (task.c), through dispatch.c's handlers. */
	{ "tasks/get", "taskId", MODERN_CALL, NULL, NULL },
	{ "tasks/update", "taskId", MODERN_CALL, NULL, NULL },
	{ "tasks/cancel", "taskId", MODERN_CALL, NULL, NULL },
};
#define MODERN_NMETHODS	(sizeof modern_methods / sizeof modern_methods[0])

static const struct modern_method *
modern_find(const char *name)
{
	size_t	i;

	for (i = 0; i < MODERN_NMETHODS; i++) {
		if (strcmp(modern_methods[i].name, name) == 0)
			return (modern_methods[i].enabled == NULL ||
			    modern_methods[i].enabled() ? &modern_methods[i] :
			    NULL);
	}
	return (NULL);
}

/* --- Mcp-Param-* -------------------------------------------------------- */

/* A body value as its header carries it; NULL: no header expected. */
static char *
modern_param_text(const cJSON *v)
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
modern_param_equal(const cJSON *v, const char *header)
{
	char	*text, *end;
	double	 d;
	int	 same;

	if (cJSON_IsNumber(v)) {
		/* Numerically: 42.0 is 42. */
		d = strtod(header, &end);
		return (*header != '\0' && *end == '\0' && d == v->valuedouble);
	}
	if ((text = modern_param_text(v)) == NULL)
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
modern_params_walk(struct evhttp_request *req, const cJSON *schema,
    const cJSON *args, int depth, char **why)
{
	const cJSON	*props, *p, *annot, *v;
	char		*hname, *hval;
	int		 bad;

	if (depth > MODERN_MAX_DEPTH ||
	    !cJSON_IsObject(props = modern_get(schema, "properties")))
		return (0);
	cJSON_ArrayForEach(p, props) {
		v = cJSON_IsObject(args) ? modern_get(args, p->string) : NULL;
		annot = modern_get(p, "x-mcp-header");
		if (cJSON_IsString(annot)) {
			xasprintf(&hname, "Mcp-Param-%s", annot->valuestring);
			hval = modern_header(req, hname, &bad);
			if (bad || (v != NULL && !cJSON_IsNull(v) &&
			    (hval == NULL || !modern_param_equal(v, hval)))) {
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
		if (modern_params_walk(req, p, v, depth + 1, why) != 0)
			return (-1);
	}
	return (0);
}

static int
modern_params_check(struct evhttp_request *req, const cJSON *params,
    char **why)
{
	const cJSON	*name = modern_get(params, "name"), *t;
	cJSON		*tools;
	int		 rc = 0;

	if (!cJSON_IsString(name))
		return (0);
	tools = provider_list_tools(NULL);
	cJSON_ArrayForEach(t, tools) {
		if (cJSON_IsString(modern_get(t, "name")) &&
		    strcmp(modern_get(t, "name")->valuestring,
		    name->valuestring) == 0) {
			rc = modern_params_walk(req, modern_get(t,
			    "inputSchema"), modern_get(params, "arguments"), 0,
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
modern_claims(struct evhttp_request *req, const cJSON *msg)
{
	struct evkeyvalq	*in = evhttp_request_get_input_headers(req);
	const char		*version;

	if (!cJSON_IsObject(msg) ||
	    evhttp_find_header(in, "Mcp-Session-Id") != NULL)
		return (0);
	if ((version = evhttp_find_header(in, "MCP-Protocol-Version")) != NULL)
		return (!mcp_version_supported(version));
	return (modern_get(modern_meta(msg), MODERN_META_VERSION) != NULL);
}

/* The request's metadata against its headers; 0 or answered. */
static int
modern_validate(struct evhttp_request *req, const cJSON *msg,
    const cJSON *id, const struct modern_method **mp)
{
	const cJSON	*meta = modern_meta(msg), *pv, *caps, *method, *nv;
	const struct modern_method *m;
	char		*h, *message;
	cJSON		*data;
	int		 bad;

	pv = modern_get(meta, MODERN_META_VERSION);
	caps = modern_get(meta, MODERN_META_CAPS);
	if (!cJSON_IsString(pv) || !cJSON_IsObject(caps)) {
		modern_error(req, 400, id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: _meta must carry "
		    MODERN_META_VERSION " and " MODERN_META_CAPS, NULL);
		return (-1);
	}
	h = modern_header(req, "MCP-Protocol-Version", &bad);
	if (h == NULL || strcmp(h, pv->valuestring) != 0) {
		xasprintf(&message, "Header mismatch: MCP-Protocol-Version %s%s "
		    "the body's %s", h == NULL ? "is missing for" : h,
		    h == NULL ? "" : " does not match", pv->valuestring);
		modern_error(req, 400, id, MODERN_HEADER_MISMATCH, message,
		    NULL);
		free(message);
		free(h);
		return (-1);
	}
	free(h);
	method = modern_get(msg, "method");
	h = modern_header(req, "Mcp-Method", &bad);
	if (h == NULL || strcmp(h, method->valuestring) != 0) {
		modern_error(req, 400, id, MODERN_HEADER_MISMATCH, h == NULL ?
		    "Header mismatch: Mcp-Method is missing or malformed" :
		    "Header mismatch: Mcp-Method does not match the body's "
		    "method", NULL);
		free(h);
		return (-1);
	}
	free(h);
	if (strcmp(pv->valuestring, MODERN_VERSION) != 0) {
		data = cJSON_CreateObject();
		cJSON_AddItemToObject(data, "supported", modern_supported());
		cJSON_AddStringToObject(data, "requested", pv->valuestring);
		modern_error(req, 400, id, MODERN_UNSUPPORTED,
		    "Unsupported protocol version", data);
		return (-1);
	}
	if ((m = modern_find(method->valuestring)) == NULL) {
		modern_error(req, 404, id, JSONRPC_METHOD_NOT_FOUND,
		    "Method not found", NULL);
		return (-1);
	}
	if (m->name_param != NULL) {
		nv = modern_get(modern_get(msg, "params"), m->name_param);
		h = modern_header(req, "Mcp-Name", &bad);
		if (h == NULL || (cJSON_IsString(nv) &&
		    strcmp(h, nv->valuestring) != 0)) {
			modern_error(req, 400, id, MODERN_HEADER_MISMATCH,
			    h == NULL ? "Header mismatch: Mcp-Name is missing "
			    "or malformed" : "Header mismatch: Mcp-Name does "
			    "not match the body", NULL);
			free(h);
			return (-1);
		}
		free(h);
	}
	if (strcmp(m->name, "tools/call") == 0 &&
	    modern_params_check(req, modern_get(msg, "params"), &message) != 0) {
		modern_error(req, 400, id, MODERN_HEADER_MISMATCH, message,
		    NULL);
		free(message);
		return (-1);
	}
	*mp = m;
	return (0);
}

/* The answers so far: requestState's and this round's; 0 or answered. */
static int
modern_rounds(struct modern_req *mr, const cJSON *params, int *resumed)
{
	const cJSON	*state = modern_get(params, "requestState");
	const cJSON	*responses = modern_get(params, "inputResponses");
	const cJSON	*r;
	const char	*cause;

	*resumed = 0;
	if (state != NULL && !seal_ready()) {
		reply_unavailable(mr->req, 1, MODERN_NO_STATE_KEY);
		return (-1);
	}
	if (state != NULL) {
		if (!cJSON_IsString(state) ||
		    (mr->answers = modern_state_open(mr, state->valuestring,
		    &cause)) == NULL) {
			modern_error(mr->req, 400, mr->id,
			    JSONRPC_INVALID_PARAMS, cJSON_IsString(state) ?
			    cause : "requestState must be a string", NULL);
			return (-1);
		}
		*resumed = 1;
	}
	if (responses == NULL)
		return (0);
	if (!cJSON_IsObject(responses)) {
		modern_error(mr->req, 400, mr->id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: inputResponses must be an object", NULL);
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
modern_start_call(struct modern_req *mr, const cJSON *msg, int resumed,
    struct auth_principal *who)
{
	const cJSON	*meta = modern_meta(msg), *level, *token;
	struct timeval	 tv;
	int		 n = INT_MAX;

	level = modern_get(meta, MODERN_META_LEVEL);
	if (cJSON_IsString(level))
		n = mcp_log_level_parse(level->valuestring);
	if (n < 0) {
		modern_reply(mr, jsonrpc_error(mr->id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: unknown " MODERN_META_LEVEL, NULL));
		modern_free(mr);
		return;
	}
	token = modern_get(meta, "progressToken");
	if (token != NULL && !cJSON_IsString(token) && !cJSON_IsNumber(token))
		token = NULL;
	mr->call = call_start_sink(&modern_sink, mr, mr->id, token, n,
	    modern_get(meta, MODERN_META_CAPS), resumed);
	call_set_principal(mr->call, who);
	TAILQ_INSERT_TAIL(&modern_calls, mr, call_entry);
	mr->running = 1;
	mr->starting = 1;
	dispatch_start_call(mr->call, msg);
	mr->starting = 0;
	if (mr->state == MODERN_DONE) {
		modern_maybe_free(mr);
		return;
	}
	if (mr->state == MODERN_WAITING) {
		mr->late = evtimer_new(server.base, modern_json_late_cb, mr);
		tv.tv_sec = 0;
		tv.tv_usec = MODERN_JSON_MS * 1000;
		evtimer_add(mr->late, &tv);
	}
}

/*
 * Whether one more open stream fits: session views, stateless calls and
 * listen streams hold a connection each, and together they stay within
 * max_views (transport.c asks before a session's view, too).
 */
int
modern_room(void)
{
	size_t	n = view_count() + modern_running_calls() +
		    modern_listen_count();

	if ((long long)n < server.conf->max_views)
		return (1);
	log_limited(LOG_LEVEL_WARN, "max-views", "open stream limit reached "
	    "(max_views %lld)", server.conf->max_views);
	return (0);
}

/* A POST modern_claims took (msg taken): validated, then carried out. */
void
modern_serve(struct evhttp_request *req, cJSON *msg,
    struct auth_principal *who)
{
	const struct modern_method	*m;
	struct modern_req		*mr;
	const cJSON			*id, *nv;
	const char			*cause;
	int				 resumed;

	switch (jsonrpc_classify(msg, &cause)) {
	case JSONRPC_INVALID:
		modern_error(req, 400, jsonrpc_reply_id(msg),
		    JSONRPC_INVALID_REQUEST, cause, NULL);
		goto out;
	case JSONRPC_RESPONSE:
		modern_error(req, 400, jsonrpc_reply_id(msg),
		    JSONRPC_INVALID_REQUEST, "Invalid Request: a client sends "
		    "no responses in " MODERN_VERSION, NULL);
		goto out;
	case JSONRPC_NOTIFICATION:
		/* The revision defines none over HTTP: taken, ignored. */
		reply_empty(req, 202);
		goto out;
	case JSONRPC_REQUEST:
		break;
	}
	id = modern_get(msg, "id");
	if (jsonrpc_has_nul(modern_get(msg, "params"))) {
		modern_error(req, 400, id, JSONRPC_INVALID_PARAMS,
		    "Invalid params: a name or string contains NUL (\\u0000)",
		    NULL);
		goto out;
	}
	if (modern_validate(req, msg, id, &m) != 0)
		goto out;
	if ((m->flags & MODERN_CALL || m->run == modern_listen) &&
	    !modern_room()) {
		reply_unavailable(req, 1, "Too many open streams, retry later");
		goto out;
	}
	mr = xcalloc(1, sizeof *mr);
	mr->req = req;
	mr->evcon = evhttp_request_get_connection(req);
	mr->m = m;
	mr->id = cJSON_Duplicate(id, 1);
	mr->who = auth_principal_ref(who);
	if (m->name_param != NULL) {
		nv = modern_get(modern_get(msg, "params"), m->name_param);
		mr->name = cJSON_IsString(nv) ? xstrdup(nv->valuestring) :
		    NULL;
	}
	if (m->run != NULL) {
		mr->starting = 1;
		m->run(mr, modern_get(msg, "params"));
		mr->starting = 0;
		modern_maybe_free(mr);
	} else if (!(m->flags & MODERN_CALL)) {
		modern_reply(mr, dispatch_quick_stateless(who, msg));
		modern_free(mr);
	} else if (modern_rounds(mr, modern_get(msg, "params"), &resumed) != 0)
		modern_free(mr);
	else
		modern_start_call(mr, msg, resumed, who);
out:
	cJSON_Delete(msg);
}
