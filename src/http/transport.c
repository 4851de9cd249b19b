/*
 * The Streamable HTTP transport (MCP basic/transports): one endpoint taking
 * POST (client messages), GET (the standalone stream, or a resume) and
 * DELETE (end the session). This file turns HTTP into session and dispatch
 * calls and maps every refusal to a status and a JSON-RPC error body.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "access.h"
#include "audit.h"
#include "auth.h"
#include "conf.h"
#include "cursor.h"
#include "dispatch.h"
#include "drain.h"
#include "eventlog.h"
#include "health.h"
#include "jsonrpc.h"
#include "limit.h"
#include "lease.h"
#include "listen.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "stateless.h"
#include "prometheus.h"
#include "provider.h"
#include "reply.h"
#include "reqtrace.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "trace.h"
#include "transport.h"
#include "view.h"
#include "xmalloc.h"

static struct {
	int			 loopback;
	char			*endpoint;	/* the default's path */
} transport;

static const char *
transport_header(struct evhttp_request *req, const char *name)
{
	return (evhttp_find_header(evhttp_request_get_input_headers(req),
	    name));
}

/*
 * The endpoint a request came to: the path of its URI when that is an
 * endpoint block's, else the default endpoint's (evhttp matched it to
 * the default's callback). It lives as long as the request (or the
 * process): whoever keeps it copies it.
 */
static const char *
transport_endpoint(struct evhttp_request *req)
{
	const char	*path;

	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (path != NULL && strcmp(path, transport.endpoint) != 0 &&
	    conf_endpoint_find(server.conf, path) != NULL)
		return (path);
	return (transport.endpoint);
}

/* Case-insensitive search for a media type in a header such as Accept. */
static int
transport_lists(const char *header, const char *type)
{
	size_t		 len = strlen(type);
	const char	*p;

	if (header == NULL)
		return (0);
	for (p = header; *p != '\0'; p++) {
		if (strncasecmp(p, type, len) == 0 &&
		    (p == header || p[-1] == ' ' || p[-1] == ',') &&
		    (p[len] == '\0' || p[len] == ',' || p[len] == ';' ||
		    p[len] == ' '))
			return (1);
	}
	return (0);
}

/* Whether Accept lists type, or its second if not NULL too (one lookup). */
static int
transport_accepts(struct evhttp_request *req, const char *type,
    const char *also)
{
	const char	*accept = transport_header(req, "Accept");

	if (transport_lists(accept, "*/*"))
		return (1);
	return (transport_lists(accept, type) &&
	    (also == NULL || transport_lists(accept, also)));
}

/*
 * DNS rebinding: a page on a foreign name resolving to 127.0.0.1 would
 * reach a loopback-bound server; its Host header still names that foreign
 * name, so on loopback binds only loopback names are served.
 */
static int
transport_host_allowed(struct evhttp_request *req)
{
	static const char	*names[] = { "localhost", "127.0.0.1", "[::1]" };
	const char		*host = transport_header(req, "Host");
	size_t			 i, len;

	if (!transport.loopback)
		return (1);
	if (host == NULL)
		return (0);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		len = strlen(names[i]);
		if (strncasecmp(host, names[i], len) == 0 &&
		    (host[len] == '\0' || host[len] == ':'))
			return (1);
	}
	return (0);
}

/* A legacy request's MCP-Protocol-Version; answers and returns -1 if not. */
static int
transport_check_version(struct evhttp_request *req)
{
	const char	*version = transport_header(req, "MCP-Protocol-Version");

	if (version != NULL && !mcp_version_supported(version)) {
		reply_error(req, 400, JSONRPC_INVALID_REQUEST,
		    "Bad Request: unsupported MCP-Protocol-Version", NULL);
		return (-1);
	}
	return (0);
}

/*
 * Checks shared by every method; answers and returns -1 on refusal. The
 * version of a POST without a session is checked once its body says
 * which path it takes (stateless.c answers versions of its own).
 */
static int
transport_check_common(struct evhttp_request *req)
{
	const char	*origin = transport_header(req, "Origin");

	if (!transport_host_allowed(req)) {
		reply_error(req, 403, JSONRPC_SERVER_ERROR,
		    "Forbidden: Host header not allowed", NULL);
		return (-1);
	}
	if (origin != NULL && !conf_origin_allowed(server.conf, origin)) {
		reply_error(req, 403, JSONRPC_SERVER_ERROR,
		    "Forbidden: Origin not allowed", NULL);
		return (-1);
	}
	if (evhttp_request_get_command(req) == EVHTTP_REQ_POST &&
	    transport_header(req, "Mcp-Session-Id") == NULL)
		return (0);
	return (transport_check_version(req));
}

static int
transport_stream_room(struct evhttp_request *req, struct session *s)
{
	if ((long long)session_stream_count(s) <
	    server.conf->session_max_streams)
		return (stateless_room(req));
	reply_error(req, 429, JSONRPC_SERVER_ERROR,
	    "Too many open streams in this session (session_max_streams)",
	    NULL);
	return (0);
}

struct transport_init {
	struct evhttp_request	*req;
	cJSON			*response;
};

static void
transport_initialized_cb(struct session *s, int status, void *arg)
{
	struct transport_init	*ti = arg;

	if (status == EVENTLOG_OK && !session_closed(s)) {
		evhttp_add_header(evhttp_request_get_output_headers(ti->req),
		    "Mcp-Session-Id", session_id(s));
		reply_json(ti->req, 200, ti->response);
	} else {
		cJSON_Delete(ti->response);
		session_close(s, "its meta could not be stored");
		reply_unavailable(ti->req, 1,
		    "Event log unavailable, retry later");
	}
	free(ti);
}

static void
transport_initialize(struct evhttp_request *req, const cJSON *msg,
    struct auth_principal *who)
{
	struct transport_init	*ti;
	enum dispatch_refusal	 why;
	const char		*invalid, *cause;

	if (jsonrpc_classify(msg, &invalid) != JSONRPC_REQUEST) {
		reply_json(req, 400, jsonrpc_error(
		    jsonrpc_reply_id(msg), JSONRPC_INVALID_REQUEST, invalid,
		    NULL));
		return;
	}
	if (transport_header(req, "Mcp-Session-Id") != NULL) {
		reply_error(req, 400, JSONRPC_INVALID_REQUEST,
		    "Bad Request: initialize must not carry Mcp-Session-Id",
		    NULL);
		return;
	}
	ti = xmalloc(sizeof *ti);
	ti->req = req;
	ti->response = dispatch_initialize(msg, who, transport_endpoint(req),
	    &why, &cause, transport_initialized_cb, ti);
	if (ti->response != NULL)
		return;
	free(ti);
	if (why == DISPATCH_FULL)
		reply_unavailable(req, 5, "Too many sessions, retry later");
	else
		reply_error(req, 400, JSONRPC_INVALID_PARAMS, cause,
		    NULL);
}

/* A notification, or a client's answer to a server request. */
static void
transport_accept_message(struct session *s, const cJSON *msg,
    enum jsonrpc_kind kind)
{
	if (kind == JSONRPC_NOTIFICATION)
		dispatch_notification(s, msg);
	else
		dispatch_response(s, msg);
}

struct transport_start {
	struct evhttp_request	*req;
	struct session		*session;
};

/*
 * The request stream's create is answered: show the stream as the POST's
 * response, or answer 503 (404 if the session ended meanwhile). The
 * calls started without waiting for it; on a failed create the stream
 * layer has ended them already, and they own the stream.
 */
static void
transport_stream_created_cb(struct stream *st, int ok, void *arg)
{
	struct transport_start	*ts = arg;
	struct session		*s = ts->session;
	int64_t			 upto;

	if (session_closed(s)) {
		reply_error(ts->req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
	} else if (!ok) {
		reply_unavailable(ts->req, 1,
		    "Event log unavailable, retry later");
	} else {
		view_open(ts->req, s, stream_id(st), stream_head(st) + 1,
		    (int64_t)stream_head(st), 1);
		/* Polling the calls asked for before there was a view. */
		if ((upto = stream_view_close_after(st)) >= 0)
			stream_close_after(st, (uint64_t)upto);
		if (stream_is_request_open(st))
			stream_publish_owner(st);
	}
	session_unref(s);
	free(ts);
}

/*
 * Opens the POST's request stream and starts its calls in the same loop
 * turn, so that the create and what the calls append at once reach the
 * log together (one script call with the redis log). The response starts
 * only once the create is committed. The session is current (loaded, or
 * with a shared log read again for this request: a call started here
 * honours a log level set through another process); a log that could not
 * be read is not written to: 503, and nothing starts.
 */
static void
transport_open_stream(struct evhttp_request *req, struct session *s,
    const cJSON *msg, enum eventlog_status logged, struct dispatch_origin *o)
{
	struct transport_start	*ts;
	struct stream		*st;

	if (logged != EVENTLOG_OK) {
		reply_unavailable(req, 1, "Event log unavailable, retry later");
		return;
	}
	ts = xmalloc(sizeof *ts);
	ts->req = req;
	ts->session = s;
	session_ref(s);
	st = stream_open(s, STREAM_REQUEST, transport_stream_created_cb, ts);
	if (!cJSON_IsArray(msg))
		dispatch_start(s, st, msg, o);
	else
		dispatch_start_batch(s, st, msg, o);
}

/*
 * The path audit lines and limits name: only worked out when one of them
 * is on (allocated, or NULL).
 */
static char *
transport_path(struct evhttp_request *req)
{
	return (limit_any() || audit_enabled() ? reply_path(req) : NULL);
}

/*
 * A single request refused by a limit (docs/limits.md): 429 with
 * Retry-After, the JSON-RPC error -32023 as the body, and its audit line.
 */
static void
transport_limited(struct evhttp_request *req, struct session *s,
    const cJSON *msg, const char *path, const struct limit_refusal *r)
{
	const cJSON		*id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	struct audit_rec	*rec;
	cJSON			*body;
	char			*text;

	log_limited(LOG_LEVEL_INFO, "limited", "session=%s tools/call refused "
	    "by limit %s (%s): retry after %llu ms", session_id(s), r->limit,
	    limit_reason_name(r->reason), (unsigned long long)r->retry_ms);
	body = dispatch_limited(id, r);
	rec = audit_begin("tools/call", cJSON_GetObjectItemCaseSensitive(msg,
	    "params"), session_principal(s), session_id(s),
	    session_version(s), id, path);
	if (rec != NULL) {
		audit_set(rec, AUDIT_LIMITED, JSONRPC_RATE_LIMITED, r->limit);
		text = cJSON_PrintUnformatted(body);
		audit_respond(rec, body, text != NULL ? strlen(text) : 0);
		free(text);
	}
	reply_limited(req, limit_retry_seconds(r), body);
	audit_write(rec);
}

/* A single call request, admitted: its stream opens (if there is room). */
static void
transport_admitted(struct evhttp_request *req, struct session *s,
    const cJSON *msg, enum eventlog_status logged, const char *path,
    struct limit_ticket *t)
{
	struct dispatch_origin	o = { path, 1, t, NULL };

	if (transport_stream_room(req, s))
		transport_open_stream(req, s, msg, logged, &o);
	limit_ticket_free(o.ticket);	/* unless a call took it */
}

/* A single request's limit check that had to wait for the shared log. */
struct transport_check {
	struct evhttp_request	*req;
	struct session		*session;
	cJSON			*msg;
	enum eventlog_status	 logged;
	char			*path;
};

static void
transport_checked_cb(struct limit_ticket *t, const struct limit_refusal *r,
    void *arg)
{
	struct transport_check	*tc = arg;
	struct session		*s = tc->session;

	if (session_closed(s)) {
		limit_ticket_free(t);
		reply_error(tc->req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
	} else if (r != NULL)
		transport_limited(tc->req, s, tc->msg, tc->path, r);
	else
		transport_admitted(tc->req, s, tc->msg, tc->logged, tc->path, t);
	session_unref(s);
	cJSON_Delete(tc->msg);
	free(tc->path);
	free(tc);
}

/*
 * A single request that runs as a call: a tools/call is checked against
 * the limits first (429 if refused; with the shared log it may have to
 * wait for Redis, holding a copy of the request), then it starts.
 */
static void
transport_call(struct evhttp_request *req, struct session *s, cJSON *msg,
    enum eventlog_status logged)
{
	struct limit_subject	 sub;
	struct limit_refusal	 r;
	struct limit_ticket	*t = NULL;
	struct transport_check	*tc;
	char			*path = transport_path(req);

	sub.tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(msg, "params"), "name"));
	if (!limit_any() || sub.tool == NULL || strcmp(cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(msg, "method")),
	    "tools/call") != 0) {
		transport_admitted(req, s, msg, logged, path, NULL);
		free(path);
		return;
	}
	sub.who = session_principal(s);
	sub.endpoint = path;
	tc = xmalloc(sizeof *tc);
	switch (limit_check(&sub, &t, &r, transport_checked_cb, tc)) {
	case LIMIT_ADMIT:
		transport_admitted(req, s, msg, logged, path, t);
		break;
	case LIMIT_REFUSE:
		transport_limited(req, s, msg, path, &r);
		break;
	case LIMIT_PENDING:
		tc->req = req;
		tc->session = s;
		session_ref(s);
		tc->msg = cJSON_Duplicate(msg, 1);
		tc->logged = logged;
		tc->path = path;
		return;
	}
	free(tc);
	free(path);
}

/*
 * The scope item name of list l needs, if the endpoint serves it to s
 * (NULL: a stateless client): one it does not serve is unknown there, as
 * dispatch.c answers it, so no scope of another endpoint's item shows.
 */
static const char *
transport_served_scope(const char *endpoint, struct session *s, int l,
    const char *name)
{
	if (name != NULL && l == PROVIDER_TOOLS)
		name = provider_endpoint_tool(endpoint, name);
	if (name == NULL || !provider_serves(endpoint, s, l, name))
		return (NULL);
	if (l == PROVIDER_TOOLS)
		return (provider_tool_scope(name));
	return (provider_item_scope(l, name));
}

/*
 * What a request names that may need a scope, and that scope: a tool
 * (tools/call), a prompt (prompts/get, a ref/prompt completion), a
 * resource (resources/read and subscribe) or a template (a ref/resource
 * completion), as dispatch.c's table says. NULL: nothing scoped.
 */
static const char *
transport_item_scope(const char *endpoint, struct session *s,
    const cJSON *msg, const char **what, const char **name)
{
	const cJSON	*ref;
	const char	*type;

	switch (dispatch_scope(msg, name)) {
	case DISPATCH_SCOPE_NONE:
		break;
	case DISPATCH_SCOPE_TOOL:
		*what = "tool";
		return (transport_served_scope(endpoint, s, PROVIDER_TOOLS,
		    *name));
	case DISPATCH_SCOPE_PROMPT:
		*what = "prompt";
		return (transport_served_scope(endpoint, s, PROVIDER_PROMPTS,
		    *name));
	case DISPATCH_SCOPE_RESOURCE:
		*what = "resource";
		return (transport_served_scope(endpoint, s,
		    PROVIDER_RESOURCES, *name));
	case DISPATCH_SCOPE_REF:
		ref = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(msg, "params"), "ref");
		type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    ref, "type"));
		*what = "prompt";
		*name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    ref, "name"));
		if (type != NULL && strcmp(type, "ref/prompt") == 0)
			return (transport_served_scope(endpoint, s,
			    PROVIDER_PROMPTS, *name));
		*what = "resource template";
		*name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    ref, "uri"));
		if (type != NULL && strcmp(type, "ref/resource") == 0)
			return (transport_served_scope(endpoint, s,
			    PROVIDER_TEMPLATES, *name));
		break;
	}
	return (NULL);
}

/*
 * A request for a tool, prompt or resource whose scope the request's
 * token lacks: 403 with the scopes to ask for, before anything starts.
 * An upstream's scope covers all it serves, not only its tools. 1 if it
 * was refused.
 */
static int
transport_tool_refused(struct evhttp_request *req,
    const struct auth_principal *who, struct session *s, const cJSON *msg)
{
	struct auth_result	 r;
	const char		*scope, *what = NULL, *name = NULL;
	const char		*sid = s != NULL ? session_id(s) : NULL;
	const char		*endpoint = transport_endpoint(req);
	char			*scopes, *challenge, *text;

	if (!auth_enabled())
		return (0);
	scope = transport_item_scope(endpoint, s, msg, &what, &name);
	if (scope == NULL || auth_scope_allowed(who, scope))
		return (0);
	scopes = auth_scopes_needed(endpoint, scope);
	memset(&r, 0, sizeof r);
	r.status = AUTH_FORBIDDEN;
	r.scope = scopes;
	r.endpoint = endpoint;
	xasprintf(&text, "the token lacks the scope of this %s", what);
	r.description = text;
	challenge = auth_challenge(&r);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "WWW-Authenticate", challenge);
	log_limited(LOG_LEVEL_INFO, "auth-tool-scope", "session=%s: "
	    "%s refused: the token lacks scope %s", sid != NULL ?
	    sid : "(stateless)", cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(msg, "method")), scope);
	free(text);
	xasprintf(&text, "Forbidden: insufficient scope for this %s", what);
	reply_error(req, 403, JSONRPC_SERVER_ERROR, text, NULL);
	free(text);
	free(challenge);
	free(scopes);
	return (1);
}

static void
transport_single(struct evhttp_request *req, struct session *s, cJSON *msg,
    enum eventlog_status logged)
{
	enum jsonrpc_kind	 kind;
	const char		*cause;

	kind = jsonrpc_classify(msg, &cause);
	switch (kind) {
	case JSONRPC_INVALID:
		reply_json(req, 400, jsonrpc_error(
		    jsonrpc_reply_id(msg), JSONRPC_INVALID_REQUEST, cause,
		    NULL));
		return;
	case JSONRPC_NOTIFICATION:
	case JSONRPC_RESPONSE:
		/*
		 * docs/protocol.md: a response is answered 202 whether or not
		 * it was awaited; a stray one is logged, and changes nothing.
		 */
		transport_accept_message(s, msg, kind);
		reply_empty(req, 202);
		return;
	case JSONRPC_REQUEST:
		break;
	}
	if (transport_tool_refused(req, session_principal(s), s, msg))
		return;
	if (!dispatch_streams(msg)) {
		reply_json(req, 200, dispatch_quick(s, msg));
		return;
	}
	transport_call(req, s, msg, logged);
}

/*
 * A JSON-RPC batch (2025-03-26 only). Quick requests are answered in one
 * JSON array; if any request streams, every response goes on one stream.
 */
static void
transport_batch(struct evhttp_request *req, struct session *s, cJSON *batch,
    enum eventlog_status logged)
{
	cJSON			*msg, *responses;
	enum jsonrpc_kind	 kind;
	const char		*cause;
	struct dispatch_origin	 o = { NULL, 0, NULL, NULL };
	char			*path;
	int			 requests = 0, streams = 0;

	if (!mcp_version_at_least("2025-03-26", session_version(s)) ||
	    cJSON_GetArraySize(batch) == 0) {
		reply_error(req, 400, JSONRPC_INVALID_REQUEST,
		    "Invalid Request: batches are not supported by this "
		    "protocol revision", NULL);
		return;
	}
	cJSON_ArrayForEach(msg, batch) {
		kind = jsonrpc_classify(msg, &cause);
		if (kind == JSONRPC_REQUEST) {
			requests++;
			streams += dispatch_streams(msg);
			if (transport_tool_refused(req, session_principal(s),
			    s, msg))
				return;
		}
	}
	responses = cJSON_CreateArray();
	cJSON_ArrayForEach(msg, batch) {
		kind = jsonrpc_classify(msg, &cause);
		if (kind == JSONRPC_INVALID)
			cJSON_AddItemToArray(responses, jsonrpc_error(
			    jsonrpc_reply_id(msg), JSONRPC_INVALID_REQUEST,
			    cause, NULL));
		else if (kind != JSONRPC_REQUEST)
			transport_accept_message(s, msg, kind);
		else if (streams == 0)
			cJSON_AddItemToArray(responses, dispatch_quick(s, msg));
	}
	if (streams == 0) {
		if (cJSON_GetArraySize(responses) == 0) {
			cJSON_Delete(responses);
			reply_empty(req, 202);
		} else
			reply_json(req, 200, responses);
		return;
	}
	if (cJSON_GetArraySize(responses) > 0 || !transport_stream_room(req, s)) {
		/* Invalid members cannot share a stream with their ids. */
		if (cJSON_GetArraySize(responses) > 0)
			reply_json(req, 400, responses);
		else
			cJSON_Delete(responses);
		return;
	}
	cJSON_Delete(responses);
	o.endpoint = path = transport_path(req);
	transport_open_stream(req, s, batch, logged, &o);
	free(path);
}

static void	transport_with_session(struct evhttp_request *, cJSON *,
		    const struct cursor *, struct auth_principal *);

static void
transport_post(struct evhttp_request *req, struct auth_principal *who)
{
	struct evbuffer	*body = evhttp_request_get_input_buffer(req);
	const char	*ctype = transport_header(req, "Content-Type");
	cJSON		*msg;
	size_t		 len;
	const char	*cause;
	int		 code;

	if (ctype == NULL || strncasecmp(ctype, "application/json", 16) != 0 ||
	    (ctype[16] != '\0' && ctype[16] != ';' && ctype[16] != ' ')) {
		reply_error(req, 415, JSONRPC_INVALID_REQUEST,
		    "Unsupported Media Type: Content-Type must be "
		    "application/json", NULL);
		return;
	}
	if (!transport_accepts(req, "application/json",
	    "text/event-stream")) {
		reply_error(req, 406, JSONRPC_INVALID_REQUEST,
		    "Not Acceptable: Accept must list application/json and "
		    "text/event-stream", NULL);
		return;
	}
	len = evbuffer_get_length(body);
	if ((long long)len > server.conf->max_body) {
		reply_error(req, 413, JSONRPC_INVALID_REQUEST,
		    "Payload Too Large: the body exceeds max_body", NULL);
		return;
	}
	msg = jsonrpc_parse((const char *)evbuffer_pullup(body, -1), len,
	    &code, &cause);
	if (msg == NULL) {
		reply_error(req, 400, code, cause, NULL);
		return;
	}
	/* A 2026-07-28 request: the stateless path (stateless.c) from here. */
	if (stateless_claims(req, msg)) {
		if (transport_tool_refused(req, who, NULL, msg))
			cJSON_Delete(msg);
		else
			stateless_serve(req, msg, who, transport_endpoint(req));
		return;
	}
	if (transport_header(req, "Mcp-Session-Id") == NULL &&
	    transport_check_version(req) != 0) {
		cJSON_Delete(msg);
		return;
	}
	if (dispatch_sessionless(msg)) {
		transport_initialize(req, msg, who);
		cJSON_Delete(msg);
		return;
	}
	transport_with_session(req, msg, NULL, who);
}

/*
 * Last-Event-ID is parsed here, once: what goes on is the cursor, and a
 * header that is no cursor is answered 400 before the session is looked
 * up.
 */
static void
transport_get(struct evhttp_request *req, struct auth_principal *who)
{
	const char	*last = transport_header(req, "Last-Event-ID");
	struct cursor	 c;

	if (!transport_accepts(req, "text/event-stream", NULL)) {
		reply_error(req, 406, JSONRPC_INVALID_REQUEST,
		    "Not Acceptable: Accept must list text/event-stream", NULL);
		return;
	}
	if (last != NULL && cursor_parse(last, &c) != 0) {
		reply_error(req, 400, JSONRPC_INVALID_REQUEST,
		    "Bad Request: Last-Event-ID is not an event id of the "
		    "form K-N", NULL);
		return;
	}
	transport_with_session(req, NULL, last != NULL ? &c : NULL, who);
}

/*
 * A resume of stream K stays in the trace of K's call, wherever that ran:
 * a span "stream resume" under the call's context (ctx: from the stream,
 * or the session's last streams, if this process knows it; else from the
 * call record in a shared log, lease_trace_get), ending with the
 * response; it and the request's own span link each other.
 */
static void
transport_resume(struct evhttp_request *req, struct session *s,
    const struct cursor *from, const struct trace_ctx *ctx)
{
	struct trace_span	*http = reqtrace_span(req), *sp = NULL;
	char			 cursor[48];
	int			 depth;

	if (ctx != NULL && ctx->state != TRACE_CTX_NONE) {
		sp = trace_start("stream resume", TRACE_INTERNAL, ctx, NULL);
		trace_link(sp, trace_span_ctx(http));
		trace_link(http, ctx);
		if (trace_recording(sp)) {
			cursor_format(cursor, sizeof cursor, from->stream,
			    from->seq);
			trace_attr_str(sp, "mcp.session.id", session_id(s));
			trace_attr_int(sp, "mcpd.stream.id",
			    (int64_t)from->stream);
			trace_attr_str(sp, "mcpd.last_event_id", cursor);
		}
		reqtrace_attach(req, sp);
	}
	depth = trace_enter(sp != NULL ? sp : http);
	view_resume(req, s, from);
	trace_leave(depth);
}

struct transport_traced {
	struct evhttp_request	*req;
	struct session		*session;
	struct cursor		 from;
};

static void
transport_traced_cb(const struct trace_ctx *ctx, void *arg)
{
	struct transport_traced	*tt = arg;

	if (session_closed(tt->session))
		reply_error(tt->req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
	else
		transport_resume(tt->req, tt->session, &tt->from, ctx);
	session_unref(tt->session);
	free(tt);
}

/*
 * GET once the session is known: a resume from cursor `from`, or (from is
 * NULL) the standalone stream.
 */
static void
transport_get_session(struct evhttp_request *req, struct session *s,
    const struct cursor *from)
{
	struct stream		*st;
	struct transport_traced	*tt;
	const struct trace_ctx	*ctx = NULL;

	if (!stateless_room(req))
		return;
	if (from != NULL && trace_enabled)
		ctx = session_trace_find(s, from->stream);
	if (from != NULL && trace_enabled && ctx == NULL && server.shared) {
		tt = xmalloc(sizeof *tt);
		tt->req = req;
		tt->session = s;
		tt->from = *from;
		session_ref(s);
		lease_trace_get(session_id(s), from->stream,
		    transport_traced_cb, tt);
		return;
	}
	if (from != NULL) {
		transport_resume(req, s, from, ctx);
		return;
	}
	st = session_standalone(s);
	view_open(req, s, stream_id(st), stream_head(st) + 1,
	    (int64_t)stream_head(st), 0);
}

/*
 * The request's session is known: carry the request out. A session is its
 * endpoint's only, and with auth its principal's only: to another
 * endpoint or anyone else it does not exist, and the answer is the
 * unknown session's, word for word. logged is what the
 * log said when the session was read for this request (loaded, or read
 * again); a request stream or a DELETE needs the log, so they are 503
 * unless it answered; a quick request, a notification, an answer or a GET
 * (whose reads say for themselves) are served from what this process
 * holds.
 */
static void
transport_serve(struct evhttp_request *req, struct session *s, cJSON *msg,
    const struct cursor *from, struct auth_principal *who,
    enum eventlog_status logged)
{
	if (strcmp(session_endpoint(s), transport_endpoint(req)) != 0) {
		log_limited(LOG_LEVEL_INFO, "endpoint-session", "a session of "
		    "endpoint %s named at endpoint %s answered as unknown",
		    session_endpoint(s), transport_endpoint(req));
		reply_error(req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
		return;
	}
	if (auth_enabled()) {
		if (!auth_principal_same(session_principal(s), who)) {
			log_limited(LOG_LEVEL_INFO, "auth-session", "auth: a "
			    "session named by another principal (subject %s) "
			    "answered as unknown",
			    auth_principal_subject(who));
			reply_error(req, 404, JSONRPC_SESSION_NOT_FOUND,
			    "Session not found", NULL);
			return;
		}
		session_set_principal(s, who);
	}
	session_touch(s);
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_POST:
		if (cJSON_IsArray(msg))
			transport_batch(req, s, msg, logged);
		else
			transport_single(req, s, msg, logged);
		break;
	case EVHTTP_REQ_GET:
		transport_get_session(req, s, from);
		break;
	default:
		/* Ended for everyone only if the log can say so to them. */
		if (logged != EVENTLOG_OK) {
			reply_unavailable(req, 1,
			    "Event log unavailable, retry later");
			break;
		}
		session_close(s, "deleted by the client");
		reply_empty(req, 204);
		break;
	}
}

struct transport_wait {
	struct evhttp_request	*req;
	cJSON			*msg;
	int			 resume;	/* from is a GET's cursor */
	struct cursor		 from;
	struct auth_principal	*who;
};

static void
transport_loaded_cb(struct session *s, int status, void *arg)
{
	struct transport_wait	*w = arg;
	int			 depth = trace_enter(reqtrace_span(w->req));

	if (s != NULL)
		transport_serve(w->req, s, w->msg, w->resume ? &w->from : NULL,
		    w->who, EVENTLOG_OK);
	else if (status == EVENTLOG_NOT_FOUND)
		reply_error(w->req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
	else
		reply_unavailable(w->req, 1,
		    "Event log unavailable, retry later");
	cJSON_Delete(w->msg);
	auth_principal_unref(w->who);
	free(w);
	trace_leave(depth);
}

/*
 * A session held here was read again: serve the request, or 404 if the
 * log said it is gone (the read ended the session here, session_gone).
 */
static void
transport_reread_cb(struct session *s, int status, void *arg)
{
	struct transport_wait	*w = arg;
	int			 depth = trace_enter(reqtrace_span(w->req));

	if (session_closed(s))
		reply_error(w->req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
	else
		transport_serve(w->req, s, w->msg, w->resume ? &w->from : NULL,
		    w->who, status);
	cJSON_Delete(w->msg);
	auth_principal_unref(w->who);
	free(w);
	trace_leave(depth);
}

/*
 * Finds the request's session and serves the request (taking msg, and for
 * a resume the cursor `from`): 400 without Mcp-Session-Id, 404 for an
 * unknown or ended session. With a shared log the log decides: a session
 * this process does not hold is loaded, and one it holds is read again
 * (one HGET), as the log may have lost it (FLUSHALL, a Redis restarted
 * empty) or another process deleted or expired it: every request about it
 * is then 404, on every process, not only those that write to the log.
 */
static void
transport_with_session(struct evhttp_request *req, cJSON *msg,
    const struct cursor *from, struct auth_principal *who)
{
	const char		*sid = transport_header(req, "Mcp-Session-Id");
	struct transport_wait	*w;
	struct session		*s;

	if (sid == NULL) {
		reply_error(req, 400, JSONRPC_INVALID_REQUEST,
		    "Bad Request: Mcp-Session-Id header is required", NULL);
	} else if ((s = session_find(sid)) != NULL && !server.shared) {
		transport_serve(req, s, msg, from, who, EVENTLOG_OK);
	} else if (s == NULL && (!server.shared ||
	    strlen(sid) != SESSION_ID_LEN)) {
		reply_error(req, 404, JSONRPC_SESSION_NOT_FOUND,
		    "Session not found", NULL);
	} else {
		w = xmalloc(sizeof *w);
		w->req = req;
		w->msg = msg;
		w->resume = from != NULL;
		if (from != NULL)
			w->from = *from;
		w->who = auth_principal_ref(who);
		if (s != NULL)
			session_refresh(s, transport_reread_cb, w);
		else
			session_load(sid, transport_loaded_cb, w);
		return;
	}
	cJSON_Delete(msg);
}

static void
transport_delete(struct evhttp_request *req, struct auth_principal *who)
{
	transport_with_session(req, NULL, NULL, who);
}

/*
 * Every request starts here, and the access log notes when. Once a drain
 * has closed the listening socket, each reply says Connection: close, and
 * evhttp closes the connection after it (an SSE response after its end):
 * the client's next request opens a connection the balancer sends to
 * another instance.
 */
static void
transport_begin(struct evhttp_request *req)
{
	access_begin(req);
	if (drain_closing())
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
}

/* The request may go on, as who (NULL without auth). */
static void
transport_route(struct evhttp_request *req, struct auth_principal *who)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_POST:
		transport_post(req, who);
		break;
	case EVHTTP_REQ_GET:
		transport_get(req, who);
		break;
	case EVHTTP_REQ_DELETE:
		transport_delete(req, who);
		break;
	default:
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Allow", "GET, POST, DELETE");
		reply_error(req, 405, JSONRPC_INVALID_REQUEST,
		    "Method Not Allowed", NULL);
		break;
	}
}

/*
 * The token is checked (auth.c): go on, or say why not (MCP
 * Authorization, RFC 6750 3): 401 with the challenge naming the
 * protected resource metadata, 403 with the scopes needed.
 */
static void
transport_authorized_cb(const struct auth_result *r, void *arg)
{
	struct evhttp_request	*req = arg;
	char			*challenge, *message;
	int			 depth;

	if (r->status == AUTH_OK) {
		depth = trace_enter(reqtrace_span(req));
		transport_route(req, r->principal);
		trace_leave(depth);
		return;
	}
	if (r->status == AUTH_UNAVAILABLE) {
		reply_unavailable(req, 1, "Authorization cannot be checked "
		    "now, retry later");
		return;
	}
	challenge = auth_challenge(r);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "WWW-Authenticate", challenge);
	free(challenge);
	if (r->status == AUTH_FORBIDDEN) {
		reply_error(req, 403, JSONRPC_SERVER_ERROR,
		    "Forbidden: insufficient scope", NULL);
		return;
	}
	xasprintf(&message, "Unauthorized: %s", r->description);
	reply_error(req, 401, JSONRPC_SERVER_ERROR, message, NULL);
	free(message);
}

static void
transport_endpoint_cb(struct evhttp_request *req, void *arg)
{
	int	depth;

	transport_begin(req);
	depth = reqtrace_begin(req, transport_endpoint(req));
	if (transport_check_common(req) == 0) {
		if (!auth_enabled())
			transport_route(req, NULL);
		else
			auth_check(transport_header(req, "Authorization"),
			    transport_endpoint(req), transport_authorized_cb,
			    req);
	}
	trace_leave(depth);
}

/*
 * Protected resource metadata (RFC 9728) of an endpoint (NULL: the
 * default): public, for any origin.
 */
static void
transport_metadata(struct evhttp_request *req, const char *endpoint)
{
	struct evkeyvalq	*out = evhttp_request_get_output_headers(req);

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_add_header(out, "Allow", "GET");
		reply_error(req, 405, JSONRPC_INVALID_REQUEST,
		    "Method Not Allowed", NULL);
		return;
	}
	evhttp_add_header(out, "Access-Control-Allow-Origin", "*");
	evhttp_add_header(out, "Cache-Control", "max-age=300");
	reply_json(req, 200, auth_metadata(endpoint));
}

static void
transport_metadata_cb(struct evhttp_request *req, void *arg)
{
	transport_begin(req);
	transport_metadata(req, NULL);
}

/*
 * A Redis Cluster's nodes: each one mcpd has mapped, its role as it says,
 * the slots the map gives it and its connection's state.
 */
static void
transport_health_nodes(cJSON *redis, const struct eventlog_where *w)
{
	cJSON	*nodes, *n;
	size_t	 i;

	nodes = cJSON_AddArrayToObject(redis, "nodes");
	for (i = 0; i < w->nnodes; i++) {
		n = cJSON_CreateObject();
		cJSON_AddStringToObject(n, "server", w->nodes[i].server);
		if (w->nodes[i].role != NULL)
			cJSON_AddStringToObject(n, "role", w->nodes[i].role);
		cJSON_AddNumberToObject(n, "slots", w->nodes[i].slots);
		cJSON_AddStringToObject(n, "state", w->nodes[i].state);
		if (w->nodes[i].why != NULL)
			cJSON_AddStringToObject(n, "reason", w->nodes[i].why);
		cJSON_AddItemToArray(nodes, n);
	}
}

/*
 * The counters, and the event log's state: 503 while the log cannot take
 * operations (nothing can be committed, so nothing can be served).
 */
static void
transport_healthz_cb(struct evhttp_request *req, void *arg)
{
	cJSON			*health = cJSON_CreateObject(), *log, *tls;
	cJSON			*redis;
	int			 up = health_log_available();
	struct eventlog_where	 w;

	transport_begin(req);
	cJSON_AddStringToObject(health, "status", up ? "ok" :
	    "eventlog unavailable");
	log = cJSON_AddObjectToObject(health, "eventlog");
	cJSON_AddStringToObject(log, "backend",
	    eventlog_name(server.eventlog));
	cJSON_AddStringToObject(log, "state", up ? "ready" : "unavailable");
	/* Which Redis, as what, over what, and why not; never a password. */
	if (server.shared) {
		eventlog_describe(server.eventlog, &w);
		redis = cJSON_AddObjectToObject(health, "redis");
		cJSON_AddStringToObject(redis, "address", w.address);
		if (w.server != NULL)
			cJSON_AddStringToObject(redis, "server", w.server);
		if (w.role != NULL)
			cJSON_AddStringToObject(redis, "role", w.role);
		tls = cJSON_AddObjectToObject(redis, "tls");
		cJSON_AddBoolToObject(tls, "enabled", w.tls);
		if (w.tls) {
			cJSON_AddBoolToObject(tls, "verify", w.tls_verify);
			if (w.tls_version != NULL)
				cJSON_AddStringToObject(tls, "version",
				    w.tls_version);
			if (w.tls_cipher != NULL)
				cJSON_AddStringToObject(tls, "cipher",
				    w.tls_cipher);
		}
		cJSON_AddNumberToObject(redis, "failovers",
		    (double)w.failovers);
		cJSON_AddNumberToObject(redis, "connects",
		    (double)w.connects);
		if (!up && w.why != NULL)
			cJSON_AddStringToObject(redis, "reason", w.why);
		if (w.nodes != NULL)
			transport_health_nodes(redis, &w);
	}
	cJSON_AddNumberToObject(health, "sessions", (double)session_count());
	/* What max_views bounds: views, stateless calls, listen streams. */
	cJSON_AddNumberToObject(health, "streams", (double)(view_count() +
	    stateless_running_calls() + listen_count()));
	cJSON_AddNumberToObject(health, "listens",
	    (double)listen_count());
	cJSON_AddItemToObject(health, "metrics", metrics_json());
	if (auth_enabled())
		cJSON_AddNumberToObject(health, "auth_waiting",
		    (double)auth_pending());
	reply_json(req, up ? 200 : 503, health);
}

/* Whether a balancer should send this instance new work (health.c). */
static void
transport_readyz_cb(struct evhttp_request *req, void *arg)
{
	cJSON		*ready = cJSON_CreateObject();
	const char	*why = health_not_ready(), *reason;

	transport_begin(req);
	cJSON_AddStringToObject(ready, "status", why != NULL ? why : "ready");
	if (why != NULL && (reason = health_not_ready_reason()) != NULL)
		cJSON_AddStringToObject(ready, "reason", reason);
	reply_json(req, why != NULL ? 503 : 200, ready);
}

/* Whether the loop turns: its cron ran lately (health.c). */
static void
transport_livez_cb(struct evhttp_request *req, void *arg)
{
	cJSON	*live = cJSON_CreateObject();
	int	 ok = health_live();

	transport_begin(req);
	cJSON_AddStringToObject(live, "status", ok ? "live" : "stalled");
	reply_json(req, ok ? 200 : 503, live);
}

/* Prometheus scrapes this (prometheus.c). */
static void
transport_metrics_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*buf = evbuffer_new();
	char		*text;
	size_t		 len;

	transport_begin(req);
	text = prometheus_text(&len);
	evbuffer_add(buf, text, len);
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", PROMETHEUS_CONTENT_TYPE);
	reply_send(req, 200, buf);
	evbuffer_free(buf);
}

/*
 * Any other path: an endpoint block's (looked up in the running
 * configuration, so a reload adds and removes them), its protected
 * resource metadata, or nothing.
 */
static void
transport_other_cb(struct evhttp_request *req, void *arg)
{
	const char	*path, *endpoint;

	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (path != NULL && conf_endpoint_find(server.conf, path) != NULL) {
		transport_endpoint_cb(req, NULL);
		return;
	}
	transport_begin(req);
	if (path != NULL && auth_enabled() &&
	    (endpoint = auth_metadata_endpoint(path)) != NULL) {
		transport_metadata(req, endpoint);
		return;
	}
	reply_error(req, 404, JSONRPC_INVALID_REQUEST,
	    "Not Found: no such endpoint", NULL);
}

static int
transport_is_loopback(const char *host)
{
	return (strcmp(host, "localhost") == 0 ||
	    strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	    strcmp(host, "[::1]") == 0);
}

void
transport_init(struct evhttp *http, const char *endpoint)
{
	transport.loopback = transport_is_loopback(server.conf->listen_host);
	free(transport.endpoint);
	transport.endpoint = xstrdup(endpoint);
	evhttp_set_cb(http, endpoint, transport_endpoint_cb, NULL);
	if (auth_enabled()) {
		evhttp_set_cb(http, auth_metadata_path(0),
		    transport_metadata_cb, NULL);
		if (strcmp(auth_metadata_path(0), auth_metadata_path(1)) != 0)
			evhttp_set_cb(http, auth_metadata_path(1),
			    transport_metadata_cb, NULL);
	}
	evhttp_set_cb(http, "/healthz", transport_healthz_cb, NULL);
	evhttp_set_cb(http, "/readyz", transport_readyz_cb, NULL);
	evhttp_set_cb(http, "/livez", transport_livez_cb, NULL);
	evhttp_set_cb(http, "/metrics", transport_metrics_cb, NULL);
	evhttp_set_gencb(http, transport_other_cb, NULL);
}
