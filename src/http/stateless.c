/*
 * The stateless path's edge: MCP 2026-07-28 on the endpoint the legacy
 * (2025-era, session) path serves. transport.c hands over a POST that
 * stateless_claims; here it is checked in the order of the Streamable HTTP
 * binding's Server Validation (metadata, Mcp-Method, Mcp-Name,
 * Mcp-Param-*), then served as dispatch.c's table says: a quick method
 * answered at once, a call whose sink is this file (its messages go to the
 * request's response, response.c: a JSON body, or an SSE stream scoped to
 * the request; its questions to the client go through MRTR, mrtr.c), or a
 * subscriptions/listen stream (listen.c).
 *
 * Nothing here goes through the event log. The revision has no sessions
 * and no resumption: a response stream carries one request's
 * notifications and its response, and a client that loses it retries the
 * request (docs/protocol.md, "The stateless path"). What must survive a
 * round (the answers a client gave so far) travels with the client, in a
 * requestState (mrtr.c), so any instance can take the next round.
 */
#include <sys/queue.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "audit.h"
#include "auth.h"
#include "base64.h"
#include "call.h"
#include "conf.h"
#include "dispatch.h"
#include "jsonrpc.h"
#include "limit.h"
#include "listen.h"
#include "log.h"
#include "mcp.h"
#include "mcpd.h"
#include "mrtr.h"
#include "stateless.h"
#include "provider.h"
#include "reply.h"
#include "response.h"
#include "server.h"
#include "view.h"
#include "xmalloc.h"

#define STATELESS_VERSION	MCP_STATELESS_VERSION
#define STATELESS_META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define STATELESS_META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define STATELESS_META_LEVEL	"io.modelcontextprotocol/logLevel"
#define STATELESS_META_SERVER	"io.modelcontextprotocol/serverInfo"

/*
 * A call that has neither answered nor sent anything this long gets an
 * SSE response anyway: evhttp only notices a client gone once it writes,
 * and a gone client must cancel its request.
 */
#define STATELESS_JSON_MS	200
/* Mcp-Param-* headers a tool may declare, and their nesting. */
#define STATELESS_MAX_PARAMS	32
#define STATELESS_MAX_DEPTH	8

/* One request of a call method, until its call and its response end. */
struct stateless_req {
	struct response			*resp;
	const struct dispatch_method	*m;
	cJSON				*id;
	int				 starting; /* inside its handler */

	struct call			*call;
	int				 call_done;
	struct mrtr			*mrtr;	/* a call's rounds */
	int				 checking; /* its limits, in Redis */

	int				 running;  /* on stateless_calls */
	TAILQ_ENTRY(stateless_req)	 call_entry;
};

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
	mrtr_free(mr->mrtr);
	response_free(mr->resp);
	cJSON_Delete(mr->id);
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
	if (stateless_done(mr) && !mr->starting && !mr->checking &&
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
	mrtr_ended(mr->mrtr);
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

/* A question of the call (provider_*.c through call_request): MRTR. */
static enum call_ask
stateless_sink_ask(void *arg, struct call *c, const char *key,
    const char *method, cJSON *params, const cJSON **answer)
{
	struct stateless_req	*mr = arg;

	return (mrtr_ask(mr->mrtr, c, key, method, params, answer));
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

/*
 * A tool the endpoint does not serve has no headers to check: its call is
 * answered as an unknown tool.
 */
static int
stateless_params_check(struct evhttp_request *req, const cJSON *params,
    const char *endpoint, char **why)
{
	const cJSON	*name = stateless_get(params, "name"), *t;
	const char	*tool;
	cJSON		*tools;
	int		 rc = 0;

	if (!cJSON_IsString(name) || (tool = provider_endpoint_tool(endpoint,
	    name->valuestring)) == NULL || !provider_serves(endpoint, NULL,
	    PROVIDER_TOOLS, tool))
		return (0);
	tools = provider_list_tools(NULL);
	cJSON_ArrayForEach(t, tools) {
		if (cJSON_IsString(stateless_get(t, "name")) &&
		    strcmp(stateless_get(t, "name")->valuestring, tool) == 0) {
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
    const cJSON *id, const char *endpoint, const struct dispatch_method **mp)
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
	    stateless_params_check(req, stateless_get(msg, "params"), endpoint,
	    &message) != 0) {
		stateless_error(req, 400, id, JSONRPC_HEADER_MISMATCH, message,
		    NULL);
		free(message);
		return (-1);
	}
	*mp = m;
	return (0);
}

static void
stateless_start_call(struct stateless_req *mr, const cJSON *msg, int resumed,
    struct auth_principal *who, struct dispatch_origin *o)
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
	call_set_endpoint(mr->call, o->endpoint);
	TAILQ_INSERT_TAIL(&stateless_calls, mr, call_entry);
	mr->running = 1;
	mr->starting = 1;
	o->trace = mrtr_origin(mr->mrtr);
	dispatch_start_call(mr->call, msg, o);
	mr->starting = 0;
	if (stateless_done(mr))
		stateless_maybe_free(mr);
	else
		response_stream_after(mr->resp, STATELESS_JSON_MS);
}

/*
 * A call refused by a limit: on this path the JSON-RPC error -32023 is
 * the answer, as for any call that fails (docs/limits.md), with its
 * audit line.
 */
static void
stateless_limited(struct stateless_req *mr, const cJSON *msg,
    struct auth_principal *who, const char *path,
    const struct limit_refusal *r)
{
	struct audit_rec	*rec;
	cJSON			*body;
	char			*text;

	log_limited(LOG_LEVEL_INFO, "limited", "stateless tools/call refused "
	    "by limit %s (%s): retry after %llu ms", r->limit,
	    limit_reason_name(r->reason), (unsigned long long)r->retry_ms);
	body = dispatch_limited(mr->id, r);
	rec = audit_begin("tools/call", stateless_get(msg, "params"), who, NULL,
	    STATELESS_VERSION, mr->id, path);
	if (rec != NULL) {
		audit_set(rec, AUDIT_LIMITED, JSONRPC_RATE_LIMITED, r->limit);
		text = cJSON_PrintUnformatted(body);
		audit_respond(rec, body, text != NULL ? strlen(text) : 0);
		free(text);
	}
	response_json(mr->resp, 200, body);
	audit_write(rec);
}

/* A call's limit check that had to wait for the shared log. */
struct stateless_check {
	struct stateless_req	*mr;
	cJSON			*msg;
	struct auth_principal	*who;
	int			 resumed;
	char			*path;
};

static void
stateless_checked_cb(struct limit_ticket *t, const struct limit_refusal *r,
    void *arg)
{
	struct stateless_check	*sc = arg;
	struct stateless_req	*mr = sc->mr;
	struct dispatch_origin	 o = { sc->path, 1, t, NULL };

	mr->checking = 0;
	if (stateless_done(mr))
		stateless_free(mr);	/* its client left meanwhile */
	else if (r != NULL) {
		stateless_limited(mr, sc->msg, sc->who, sc->path, r);
		stateless_free(mr);
	} else
		stateless_start_call(mr, sc->msg, sc->resumed, sc->who, &o);
	limit_ticket_free(o.ticket);	/* unless the call took it */
	cJSON_Delete(sc->msg);
	auth_principal_unref(sc->who);
	free(sc->path);
	free(sc);
}

/*
 * A call of the request, once the limits admit a tools/call (with the
 * shared log they may first ask Redis: msg is copied meanwhile).
 */
static void
stateless_call(struct stateless_req *mr, const cJSON *msg, int resumed,
    struct auth_principal *who, const char *endpoint)
{
	struct limit_subject	 sub;
	struct limit_refusal	 r;
	struct stateless_check	*sc;
	struct dispatch_origin	 o = { endpoint, 1, NULL, NULL };
	char			*path;

	path = endpoint != NULL ? xstrdup(endpoint) : NULL;
	sub.tool = cJSON_GetStringValue(stateless_get(stateless_get(msg,
	    "params"), "name"));
	if (!limit_any() || sub.tool == NULL ||
	    strcmp(dispatch_method_name(mr->m), "tools/call") != 0) {
		stateless_start_call(mr, msg, resumed, who, &o);
		free(path);
		return;
	}
	sub.who = who;
	sub.endpoint = path;
	sc = xcalloc(1, sizeof *sc);
	switch (limit_check(&sub, &o.ticket, &r, stateless_checked_cb, sc)) {
	case LIMIT_ADMIT:
		stateless_start_call(mr, msg, resumed, who, &o);
		limit_ticket_free(o.ticket);
		break;
	case LIMIT_REFUSE:
		stateless_limited(mr, msg, who, path, &r);
		stateless_free(mr);
		break;
	case LIMIT_PENDING:
		sc->mr = mr;
		sc->msg = cJSON_Duplicate(msg, 1);
		sc->who = auth_principal_ref(who);
		sc->resumed = resumed;
		sc->path = path;
		mr->checking = 1;
		return;
	}
	free(sc);
	free(path);
}

/*
 * Whether one more open stream fits: session views, stateless calls and
 * listen streams hold a connection each, and together they stay within
 * max_views (transport.c asks before a session's view, too). 0: req is
 * answered 503.
 */
int
stateless_room(struct evhttp_request *req)
{
	size_t	n = view_count() + stateless_running_calls() + listen_count();

	if ((long long)n < server.conf->max_views)
		return (1);
	log_limited(LOG_LEVEL_WARN, "max-views", "open stream limit reached "
	    "(max_views %lld)", server.conf->max_views);
	reply_unavailable(req, 1, "Too many open streams, retry later");
	return (0);
}

/* A POST stateless_claims took (msg taken): validated, then carried out. */
void
stateless_serve(struct evhttp_request *req, cJSON *msg,
    struct auth_principal *who, const char *endpoint)
{
	const struct dispatch_method	*m;
	struct stateless_req		*mr;
	const cJSON			*id, *params;
	const char			*cause, *np;
	enum dispatch_kind		 kind;
	int				 resumed, status;

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
	if ((cause = dispatch_params_refused(msg)) != NULL) {
		stateless_error(req, 400, id, JSONRPC_INVALID_PARAMS, cause,
		    NULL);
		goto out;
	}
	if (stateless_validate(req, msg, id, endpoint, &m) != 0)
		goto out;
	kind = dispatch_method_kind(m);
	if ((kind == DISPATCH_CALL || kind == DISPATCH_LISTEN) &&
	    !stateless_room(req))
		goto out;
	if (kind == DISPATCH_LISTEN) {
		listen_start(req, id, stateless_get(msg, "params"), who,
		    endpoint);
		goto out;
	}
	mr = xcalloc(1, sizeof *mr);
	mr->resp = response_new(req, stateless_gone, mr);
	mr->m = m;
	mr->id = cJSON_Duplicate(id, 1);
	if (kind == DISPATCH_QUICK) {
		stateless_reply(mr, dispatch_quick_stateless(who, endpoint,
		    msg));
		stateless_free(mr);
		goto out;
	}
	params = stateless_get(msg, "params");
	np = dispatch_method_name_param(m);
	mr->mrtr = mrtr_new(dispatch_method_name(m), np != NULL ?
	    cJSON_GetStringValue(stateless_get(params, np)) : NULL);
	if (mrtr_rounds(mr->mrtr, params, &resumed, &status, &cause) == 0)
		stateless_call(mr, msg, resumed, who, endpoint);
	else {
		if (status == 503)
			response_unavailable(mr->resp, cause);
		else
			response_json(mr->resp, status, jsonrpc_error(id,
			    JSONRPC_INVALID_PARAMS, cause, NULL));
		stateless_free(mr);
	}
out:
	cJSON_Delete(msg);
}
