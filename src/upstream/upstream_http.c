/*
 * Streamable HTTP to an upstream MCP server: mcpd's side as a client, on
 * http_client.c. One POST per message. Its answer is 202 (a notification
 * or a response of ours), a JSON body (one message, or a batch), or an SSE
 * stream whose events are messages: the server's requests and
 * notifications for the request, then its answer, after which the server
 * ends the stream. The SSE parser (upstream_sse.c) is bounded: a line
 * longer than the upstream's max_message ends the stream as a failure.
 *
 * A request's stream that ends before its answer: if the server gave
 * event ids, a GET with Last-Event-ID takes it up again (at most
 * UPHTTP_RESUMES times in a row); if not, the request is reported lost,
 * with why, so its call ends with an error rather than waiting. A 404
 * once the session exists means the server forgot it: the transport
 * reports itself failed, and upstream.c starts a new session.
 *
 * The GET stream (upstream_http_listen) carries what the server sends
 * outside requests; 405 means it has none. It is opened again when it
 * ends, with Last-Event-ID when it had ids, after UPHTTP_RELISTEN_MS; one
 * on which nothing arrives for idle_timeout (a half-open connection looks
 * like a quiet server) is ended and opened again the same way.
 *
 * Every response is read through http_client's bounds: one piece (a
 * chunk, a Content-Length body) of at most max_message, refused unread
 * when announced larger, so a server cannot make mcpd hold more.
 *
 * With credentials (credential.h), a post first asks for its headers, on
 * behalf of the principal whose call it carries (none: mcpd's own), and
 * keeps what it sends: a 401 makes the credential forget the token it
 * sent and the post go again once. A post whose credentials cannot be had
 * (a refused token exchange) is answered at once with a JSON-RPC error
 * (JSONRPC_UPSTREAM_CREDENTIALS) naming the OAuth error, as if the server
 * had sent it; nothing reaches the server.
 */
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <cjson/cJSON.h>

#include "auth.h"
#include "conf.h"
#include "credential.h"
#include "http_client.h"
#include "jsonrpc.h"
#include "log.h"
#include "server.h"
#include "trace.h"
#include "upstream_int.h"
#include "upstream_sse.h"
#include "xmalloc.h"

/* Resumes of one request's stream in a row before it counts as lost. */
#define UPHTTP_RESUMES		5
/* Before the GET stream is opened again. */
#define UPHTTP_RELISTEN_MS	1000
/* Bytes of a non-SSE error body kept for the message. */
#define UPHTTP_ERRBODY		200
/* The id of the GET stream's post; requests' ids are positive. */
#define UPHTTP_LISTEN		(-1)
#define UPHTTP_DELETE		(-2)
/*
 * Headers of mcpd's own (trace context among them), and the most a
 * credentials block adds.
 */
#define UPHTTP_HEADERS		(8 + 33)

/* ---------------------------------------------------------------------
 * Posts.
 */

struct upstream_http;

struct uhpost {
	struct upstream_http	*h;
	struct http_client	*hc;		/* NULL between attempts */
	int64_t			 id;		/* request, 0, or UPHTTP_* */
	int			 answered;
	int			 sse;		/* the answer is a stream */
	int			 resumes;
	struct upstream_sse	*parser;
	char			*cause;		/* it could not be sent */
	char			*body;		/* a JSON answer, gathered */
	size_t			 bodylen;
	struct auth_principal	*who;		/* on whose behalf, or NULL */
	struct credential_ask	*ask;		/* its headers, asked for */
	char			*req;		/* credentials: what it sends */
	size_t			 reqlen;
	char			*cursor;	/* ... and its Last-Event-ID */
	int			 retried;	/* after a 401, once */
	char			*traceparent;	/* its request's */
	char			*tracestate;
	TAILQ_ENTRY(uhpost)	 entry;
};
TAILQ_HEAD(uhposts, uhpost);

struct upstream_http {
	char			*url;
	char			*name;
	size_t			 max;
	int			 idle_ms;	/* of the GET stream */
	char			*session;	/* Mcp-Session-Id */
	char			*version;
	int			 closed;
	int			 listening;
	char			*listen_id;	/* the GET stream's cursor */
	struct event		*relisten;
	struct credential	*cred;		/* NULL: none */
	struct uhposts		 posts;
	const struct upstream_transport_cbs *cbs;
	void			*arg;
};

static void	uhpost_start(struct uhpost *, const char *, size_t,
		    const char *);
static void	upstream_http_listen(void *);

static void
upstream_http_maybe_free(struct upstream_http *h)
{
	if (!h->closed || !TAILQ_EMPTY(&h->posts))
		return;
	event_free(h->relisten);
	credential_unref(h->cred);
	free(h->url);
	free(h->name);
	free(h->session);
	free(h->version);
	free(h->listen_id);
	free(h);
}

static void
uhpost_free(struct uhpost *p)
{
	struct upstream_http	*h = p->h;

	TAILQ_REMOVE(&h->posts, p, entry);
	upstream_sse_free(p->parser);
	free(p->cause);
	free(p->body);
	auth_principal_unref(p->who);
	free(p->req);
	free(p->cursor);
	free(p->traceparent);
	free(p->tracestate);
	free(p);
	upstream_http_maybe_free(h);
}

/* Whether text is the answer to request id (a response with that id). */
static int
uhpost_is_answer(const char *text, size_t len, int64_t id)
{
	cJSON		*msg;
	const cJSON	*mid;
	int		 yes = 0;

	if (id <= 0 || (msg = cJSON_ParseWithLength(text, len)) == NULL)
		return (0);
	mid = cJSON_GetObjectItemCaseSensitive(msg, "id");
	if (!cJSON_HasObjectItem(msg, "method") && cJSON_IsNumber(mid) &&
	    mid->valuedouble == (double)id)
		yes = 1;
	cJSON_Delete(msg);
	return (yes);
}

static void
uhpost_event_cb(const char *data, size_t len, const char *id, void *arg)
{
	struct uhpost		*p = arg;
	struct upstream_http	*h = p->h;

	if (h->closed)
		return;
	if (p->id == UPHTTP_LISTEN && id != NULL) {
		free(h->listen_id);
		h->listen_id = xstrdup(id);
	}
	if (uhpost_is_answer(data, len, p->id))
		p->answered = 1;
	h->cbs->message(data, len, p->id > 0 ? p->id : 0, h->arg);
}

static int
uhpost_chunk_cb(struct http_client *hc, const char *data, size_t len,
    void *arg)
{
	struct uhpost		*p = arg;
	struct upstream_http	*h = p->h;
	const char		*type, *sid;
	int			 status = http_client_status(hc);

	if (h->closed)
		return (-1);
	if (h->session == NULL && p->id > 0 &&
	    (sid = http_client_header(hc, "Mcp-Session-Id")) != NULL)
		h->session = xstrdup(sid);
	type = http_client_header(hc, "Content-Type");
	if (status == 200 && type != NULL &&
	    strncmp(type, "text/event-stream", 17) == 0) {
		p->sse = 1;
		if (p->parser == NULL)
			p->parser = upstream_sse_new(h->max, uhpost_event_cb,
			    p);
		return (upstream_sse_feed(p->parser, data, len));
	}
	/* A JSON answer, or an error's body (only its start is kept). */
	if (status == 200 && p->bodylen + len > h->max)
		return (-1);
	if (status != 200 && p->bodylen >= UPHTTP_ERRBODY)
		return (0);
	p->body = xrealloc(p->body, p->bodylen + len + 1);
	memcpy(p->body + p->bodylen, data, len);
	p->bodylen += len;
	p->body[p->bodylen] = '\0';
	return (0);
}

/* A JSON body: one message or a batch of them. */
static void
uhpost_json(struct uhpost *p)
{
	struct upstream_http	*h = p->h;
	cJSON			*json, *item;
	char			*text;

	if ((json = cJSON_ParseWithLength(p->body, p->bodylen)) == NULL) {
		log_limited(LOG_LEVEL_WARN, "upstream-http", "upstream=%s: a "
		    "JSON answer that does not parse", h->name);
		return;
	}
	if (!cJSON_IsArray(json)) {
		if (uhpost_is_answer(p->body, p->bodylen, p->id))
			p->answered = 1;
		h->cbs->message(p->body, p->bodylen, p->id, h->arg);
		cJSON_Delete(json);
		return;
	}
	cJSON_ArrayForEach(item, json) {
		if ((text = cJSON_PrintUnformatted(item)) == NULL)
			continue;
		if (uhpost_is_answer(text, strlen(text), p->id))
			p->answered = 1;
		h->cbs->message(text, strlen(text), p->id, h->arg);
		free(text);
	}
	cJSON_Delete(json);
}

static void
uhpost_lost(struct uhpost *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
uhpost_lost(struct uhpost *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*why;

	if (p->id <= 0 || p->answered || p->h->closed)
		return;
	va_start(ap, fmt);
	if (vasprintf(&why, fmt, ap) == -1)
		fatalx("vasprintf");
	va_end(ap);
	p->answered = 1;
	p->h->cbs->lost(p->id, why, p->h->arg);
	free(why);
}

static void
uhpost_relisten_cb(evutil_socket_t fd, short events, void *arg)
{
	struct upstream_http	*h = arg;

	upstream_http_listen(h);
}

/*
 * Whether the server, or its session there, is gone (a new session is
 * due), and why; NULL if not. A server started again answers the old
 * session id with 404, as the spec says, or (some SDK servers) 400.
 */
static const char *
uhpost_gone(const struct uhpost *p, const char *err, int status)
{
	const struct upstream_http	*h = p->h;

	if (err != NULL)
		return (strcmp(err, "connection failed") == 0 ? "cannot "
		    "connect to the server (connection failed)" : NULL);
	if (h->session == NULL)
		return (NULL);
	if (status == 404)
		return ("the server no longer knows its session (404)");
	if (status == 400 && p->body != NULL &&
	    strcasestr(p->body, "session") != NULL)
		return ("the server no longer knows its session (400)");
	return (NULL);
}

static void
uhpost_done_cb(struct http_client *hc, void *arg)
{
	struct uhpost		*p = arg;
	struct upstream_http	*h = p->h;
	const char		*err = http_client_error(hc), *cursor, *type;
	const char		*gone;
	int			 status = http_client_status(hc);
	struct timeval		 tv = { 0, UPHTTP_RELISTEN_MS * 1000 };

	p->hc = NULL;
	if (h->closed || p->id == UPHTTP_DELETE) {
		uhpost_free(p);
		return;
	}
	if (err == NULL && status == 401 && h->cred != NULL && !p->retried &&
	    credential_has_grant(h->cred) && !p->answered) {
		/* The token was refused (revoked, expired early): once more. */
		credential_refused(h->cred, p->who);
		p->retried = 1;
		free(p->body);
		p->body = NULL;
		p->bodylen = 0;
		uhpost_start(p, p->req, p->reqlen, p->cursor);
		return;
	}
	if (p->id != UPHTTP_LISTEN && (gone = uhpost_gone(p, err,
	    status)) != NULL) {
		uhpost_lost(p, "%s", gone);
		if (!h->closed)
			h->cbs->failed(gone, h->arg);
		uhpost_free(p);
		return;
	}
	if (p->id == UPHTTP_LISTEN) {
		h->listening = 0;
		if (err == NULL && (status == 405 || status == 404)) {
			log_debug("upstream=%s: no GET stream (HTTP %d)",
			    h->name, status);
			uhpost_free(p);
			return;
		}
		if (err != NULL)
			log_limited(LOG_LEVEL_INFO, "upstream-http", "upstream="
			    "%s: the GET stream ended (%s); opening it again",
			    h->name, err);
		uhpost_free(p);
		evtimer_add(h->relisten, &tv);
		return;
	}
	type = http_client_header(hc, "Content-Type");
	if (err == NULL && status == 200 && type != NULL &&
	    strncmp(type, "text/event-stream", 17) == 0)
		p->sse = 1;	/* also when no event came at all */
	if (err == NULL && status == 200 && !p->sse && p->bodylen > 0)
		uhpost_json(p);
	if (p->answered || (err == NULL && status == 202) ||
	    (p->id == 0 && err == NULL && status / 100 == 2)) {
		uhpost_free(p);
		return;
	}
	if (err == NULL && status / 100 != 2) {
		uhpost_lost(p, "HTTP %d from the server: %.*s", status,
		    (int)(p->bodylen > UPHTTP_ERRBODY ? UPHTTP_ERRBODY :
		    p->bodylen), p->body != NULL ? p->body : "");
		if (p->id == 0)
			log_limited(LOG_LEVEL_WARN, "upstream-http", "upstream="
			    "%s: a notification or answer of ours was "
			    "refused: HTTP %d", h->name, status);
		uhpost_free(p);
		return;
	}
	/* The stream ended before the answer: resume it if we can. */
	cursor = p->parser != NULL ? upstream_sse_last_id(p->parser) : NULL;
	if (p->sse && cursor != NULL && p->resumes < UPHTTP_RESUMES) {
		p->resumes++;
		log_limited(LOG_LEVEL_INFO, "upstream-http", "upstream=%s: the "
		    "stream of request %lld ended before its answer (%s); "
		    "resuming after %s", h->name, (long long)p->id,
		    err != NULL ? err : "closed", cursor);
		uhpost_start(p, NULL, 0, cursor);
		return;
	}
	if (p->sse && cursor == NULL)
		uhpost_lost(p, "its stream ended before the answer (%s) and "
		    "gave no event ids to resume from", err != NULL ? err :
		    "closed by the server");
	else
		uhpost_lost(p, "%s", err != NULL ? err : "no answer");
	uhpost_free(p);
}

static void
uhpost_unsent_cb(evutil_socket_t fd, short events, void *arg)
{
	struct uhpost	*p = arg;

	if (p->id == UPHTTP_LISTEN)
		p->h->listening = 0;
	uhpost_lost(p, "cannot send: %s", p->cause);
	uhpost_free(p);
}

/*
 * Sends a POST of body, or (body NULL) a GET resuming after cursor (NULL:
 * the GET stream from now), with the nextra headers of its credentials.
 */
static void
uhpost_send(struct uhpost *p, const char *body, size_t len,
    const char *cursor, const struct http_client_header *extra,
    size_t nextra)
{
	struct upstream_http		*h = p->h;
	struct http_client_header	 hdrs[UPHTTP_HEADERS];
	struct http_client_request	 r;
	size_t				 n = 0, i;
	char				*cause = NULL;

	if (body != NULL) {
		hdrs[n].name = "Content-Type";
		hdrs[n++].value = "application/json";
		hdrs[n].name = "Accept";
		hdrs[n++].value = "application/json, text/event-stream";
	} else {
		hdrs[n].name = "Accept";
		hdrs[n++].value = "text/event-stream";
	}
	if (h->session != NULL) {
		hdrs[n].name = "Mcp-Session-Id";
		hdrs[n++].value = h->session;
	}
	if (h->version != NULL) {
		hdrs[n].name = "MCP-Protocol-Version";
		hdrs[n++].value = h->version;
	}
	if (cursor != NULL) {
		hdrs[n].name = "Last-Event-ID";
		hdrs[n++].value = cursor;
	}
	if (p->traceparent != NULL) {
		hdrs[n].name = "traceparent";
		hdrs[n++].value = p->traceparent;
		if (p->tracestate != NULL) {
			hdrs[n].name = "tracestate";
			hdrs[n++].value = p->tracestate;
		}
	}
	for (i = 0; i < nextra && n < UPHTTP_HEADERS; i++)
		hdrs[n++] = extra[i];
	memset(&r, 0, sizeof r);
	r.method = p->id == UPHTTP_DELETE ? "DELETE" : body != NULL ? "POST" :
	    "GET";
	r.url = h->url;
	r.headers = hdrs;
	r.nheaders = n;
	r.body = body;
	r.bodylen = len;
	r.timeout_ms = p->id == UPHTTP_DELETE ? 5000 : 0;
	/* A piece larger than a message would be is refused unread. */
	r.max_chunk = h->max;
	r.idle_ms = p->id == UPHTTP_LISTEN ? h->idle_ms : 0;
	r.chunk = uhpost_chunk_cb;
	r.done = uhpost_done_cb;
	r.arg = p;
	p->bodylen = 0;
	p->sse = 0;
	if ((p->hc = http_client_start(&r, &cause)) == NULL) {
		log_limited(LOG_LEVEL_WARN, "upstream-http", "upstream=%s: %s",
		    h->name, cause);
		/* Reported on a later turn, as any failure of a post is. */
		free(p->cause);
		p->cause = cause;
		event_base_once(server.base, -1, EV_TIMEOUT,
		    uhpost_unsent_cb, p, NULL);
	}
}

/*
 * A post whose credentials cannot be had: a request is answered with a
 * JSON-RPC error (its call ends with it), the GET stream is opened again
 * later, a notification or an answer of ours is dropped, with a log line.
 */
static void
uhpost_refused(struct uhpost *p, const struct credential_error *e)
{
	struct upstream_http	*h = p->h;
	struct timeval		 tv = { 0, UPHTTP_RELISTEN_MS * 1000 };
	cJSON			*msg, *error, *data;
	char			*text;

	log_limited(LOG_LEVEL_WARN, "upstream-credentials", "upstream=%s: "
	    "no credentials for a request: %s: %s", h->name, e->error,
	    e->description);
	if (p->id == UPHTTP_LISTEN) {
		h->listening = 0;
		evtimer_add(h->relisten, &tv);
		return;
	}
	if (p->id <= 0 || p->answered)
		return;
	p->answered = 1;
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	cJSON_AddNumberToObject(msg, "id", (double)p->id);
	error = cJSON_AddObjectToObject(msg, "error");
	cJSON_AddNumberToObject(error, "code", JSONRPC_UPSTREAM_CREDENTIALS);
	xasprintf(&text, "upstream %s: no credentials for this request: "
	    "%s (%s)", h->name, e->error, e->description);
	cJSON_AddStringToObject(error, "message", text);
	free(text);
	data = cJSON_AddObjectToObject(error, "data");
	cJSON_AddStringToObject(data, "upstream", h->name);
	cJSON_AddStringToObject(data, "error", e->error);
	cJSON_AddStringToObject(data, "error_description", e->description);
	text = cJSON_PrintUnformatted(msg);
	cJSON_Delete(msg);
	h->cbs->message(text, strlen(text), p->id, h->arg);
	free(text);
}

/* Its credentials' headers came (or why they cannot): it goes, or ends. */
static void
uhpost_credential_cb(const struct http_client_header *extra, size_t n,
    const struct credential_error *e, void *arg)
{
	struct uhpost	*p = arg;

	p->ask = NULL;
	if (p->h->closed || (p->answered && p->id > 0)) {
		uhpost_free(p);
		return;
	}
	if (e != NULL) {
		uhpost_refused(p, e);
		uhpost_free(p);
		return;
	}
	uhpost_send(p, p->req, p->reqlen, p->cursor, extra, n);
}

/*
 * A post of body (a GET after cursor if NULL): at once, or with
 * credentials once its headers come, what it sends kept for a retry.
 */
static void
uhpost_start(struct uhpost *p, const char *body, size_t len,
    const char *cursor)
{
	struct upstream_http	*h = p->h;
	char			*copy;

	if (h->cred == NULL) {
		uhpost_send(p, body, len, cursor, NULL, 0);
		return;
	}
	if (body != p->req) {
		copy = body != NULL ? xmalloc(len + 1) : NULL;
		if (copy != NULL) {
			memcpy(copy, body, len);
			copy[len] = '\0';
		}
		free(p->req);
		p->req = copy;
		p->reqlen = len;
	}
	if (cursor != p->cursor) {
		copy = cursor != NULL ? xstrdup(cursor) : NULL;
		free(p->cursor);
		p->cursor = copy;
	}
	p->ask = credential_get(h->cred, p->who, uhpost_credential_cb, p);
}

static struct uhpost *
uhpost_new(struct upstream_http *h, int64_t id)
{
	struct uhpost	*p;

	p = xcalloc(1, sizeof *p);
	p->h = h;
	p->id = id;
	TAILQ_INSERT_TAIL(&h->posts, p, entry);
	return (p);
}

/* ---------------------------------------------------------------------
 * The transport's operations (upstream_int.h).
 */

/*
 * A message to the server, a line whose newline is not sent; id > 0 for
 * a request (its answer is awaited).
 */
static const char *
upstream_http_send(void *arg, const char *line, size_t len, int64_t id,
    struct auth_principal *who)
{
	struct upstream_http	*h = arg;
	struct uhpost		*p;
	struct trace_span	*sp = trace_current();
	char			 tp[TRACE_PARENT_LEN + 1];

	if (h->closed)
		return (NULL);
	p = uhpost_new(h, id);
	p->who = auth_principal_ref(who);
	/* The request's trace context (upstream.c made its span current). */
	if (trace_traceparent(sp, tp) == 0) {
		p->traceparent = xstrdup(tp);
		if (trace_span_state(sp) != NULL)
			p->tracestate = xstrdup(trace_span_state(sp));
	}
	uhpost_start(p, line, len - 1, NULL);
	return (NULL);
}

/* Request id is no longer awaited (timeout, cancel): its POST ends. */
static void
upstream_http_forget(void *arg, int64_t id)
{
	struct upstream_http	*h = arg;
	struct uhpost		*p;

	TAILQ_FOREACH(p, &h->posts, entry) {
		if (p->id == id && id > 0) {
			p->answered = 1;
			if (p->hc != NULL)
				http_client_cancel(p->hc);
			if (p->ask != NULL)
				credential_cancel(p->ask);
		}
	}
}

static void
upstream_http_set_version(void *arg, const char *version)
{
	struct upstream_http	*h = arg;

	free(h->version);
	h->version = xstrdup(version);
}

static void
upstream_http_listen(void *arg)
{
	struct upstream_http	*h = arg;
	struct uhpost		*p;

	if (h->closed || h->listening || h->session == NULL)
		return;
	h->listening = 1;
	p = uhpost_new(h, UPHTTP_LISTEN);
	uhpost_start(p, NULL, 0, h->listen_id);
}

/*
 * Ends the transport, and the run with it: the session is deleted at the
 * server (not waited for), every request in flight is cancelled; no
 * callback runs after.
 */
static int
upstream_http_close(void *arg, int stopping)
{
	struct upstream_http	*h = arg;
	struct uhpost		*p;

	if (h->closed)
		return (1);
	TAILQ_FOREACH(p, &h->posts, entry) {
		if (p->hc != NULL)
			http_client_cancel(p->hc);
		if (p->ask != NULL)
			credential_cancel(p->ask);
	}
	evtimer_del(h->relisten);
	if (h->session != NULL) {
		p = uhpost_new(h, UPHTTP_DELETE);
		uhpost_start(p, NULL, 0, NULL);
	}
	h->closed = 1;
	upstream_http_maybe_free(h);
	return (1);
}

static const struct upstream_transport upstream_http_ops = {
	.broken = "a new session follows",
	.send = upstream_http_send,
	.forget = upstream_http_forget,
	.set_version = upstream_http_set_version,
	.listen = upstream_http_listen,
	.close = upstream_http_close,
};

void *
upstream_http_open(const struct conf_upstream *def, const char *name,
    const char *sid, struct credential *cred,
    const struct upstream_transport_cbs *cbs, void *arg,
    const struct upstream_transport **ops, char **cause)
{
	struct upstream_http	*h;

	h = xcalloc(1, sizeof *h);
	h->cred = cred != NULL ? credential_ref(cred) : NULL;
	h->url = xstrdup(def->url);
	h->name = xstrdup(name);
	h->max = (size_t)def->max_line;
	h->idle_ms = (int)def->idle_timeout * 1000;
	h->cbs = cbs;
	h->arg = arg;
	TAILQ_INIT(&h->posts);
	h->relisten = evtimer_new(server.base, uhpost_relisten_cb, h);
	*ops = &upstream_http_ops;
	return (h);
}
