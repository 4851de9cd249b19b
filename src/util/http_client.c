/*
 * Outbound HTTP: evhttp's client on the one event loop. The state of a
 * request is its handle; evhttp's own request object lives until evhttp
 * has answered it (then the handle owns the response) or until the
 * handle's end cancels it. Every end, whatever caused it (the response,
 * a failure, the timer, a body too large, a cancel), goes through one
 * event made active, http_client_finish_cb, so the done callback runs on
 * a loop turn of its own and the connection is freed outside evhttp's
 * callbacks (freeing it inside one is the classic bug).
 *
 * Keepalive requests leave their connection idle in a pool keyed by
 * origin once evhttp is done with it (by then evhttp has put it in its
 * idle state, watching for the server's close), and take one from there:
 * only a connection whose last response came whole is ever pooled, and
 * only one whose socket is still open is ever taken. An idle connection
 * the server closes is freed on a later turn (its close callback runs
 * inside evhttp).
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "http_client.h"
#include "log.h"
#include "xmalloc.h"

#define HTTP_CLIENT_MAX_BODY	(1024 * 1024)
#define HTTP_CLIENT_MAX_HEADERS	(64 * 1024)
/*
 * Past the unit a request bounds (its body, or one piece of a stream),
 * what its connection may hold unread: a chunk's size line, the headers.
 */
#define HTTP_CLIENT_SLACK	HTTP_CLIENT_MAX_HEADERS
/* evhttp's read timeout when the caller wants none: a day. */
#define HTTP_CLIENT_LONG_SECS	86400

/* What a request sends: kept to send it again on a new connection. */
struct http_client_out {
	char			*scheme;
	char			*host;
	int			 port;
	enum evhttp_cmd_type	 cmd;
	char			*target;
	char			**names;
	char			**values;
	size_t			 nheaders;
	char			*body;
	size_t			 bodylen;
};

struct http_client {
	TAILQ_ENTRY(http_client) entry;
	struct evhttp_connection *evcon;
	struct http_client_out	*out;		/* what is sent */
	char			*origin;	/* keepalive: the pool's key */
	int			 resendable;	/* keepalive, idempotent */
	int			 reused;	/* evcon came from the pool */
	int			 got_bytes;	/* of the response, any */
	int			 resend;	/* send again (finish does) */
	struct evhttp_request	*req;	/* evhttp's, until it answered */
	struct evhttp_request	*resp;	/* the response, once owned */
	struct event		*timer;
	struct event		*idle;		/* idle_ms: no byte came */
	struct event		*finish;
	struct evbuffer		*input;		/* the connection's, watched */
	struct evbuffer_cb_entry *watch;
	const char		*error;	/* static; NULL: none (yet) */
	int			 status;
	int			 complete;	/* the whole response is in */
	int			 ending;	/* finish is active */
	struct evbuffer		*body;	/* gathered */
	size_t			 received;
	size_t			 max_body;
	size_t			 window;	/* bytes held unread, at most */
	int			 idle_ms;
	struct timeval		 idle_tv;
	struct timeval		 timeout_tv;	/* the connection's */
	char			 why[128];	/* error, when formatted */
	http_client_chunk_cb	*chunk;
	http_client_done_cb	*done;
	void			*arg;
};
TAILQ_HEAD(http_client_list, http_client);

/* A connection left idle by a keepalive request. */
struct http_client_pooled {
	TAILQ_ENTRY(http_client_pooled) entry;
	char			*origin;
	struct evhttp_connection *evcon;
	struct event		*timer;		/* unused too long, or closed */
};
TAILQ_HEAD(http_client_pool, http_client_pooled);

static struct {
	struct event_base	*base;
	struct evdns_base	*dns;
	SSL_CTX			*ssl;
	struct http_client_list	 running;
	size_t			 count;
	struct http_client_pool idle;		/* oldest first */
	size_t			 nidle;
} http_client;

void
http_client_init(struct event_base *base)
{
	http_client.base = base;
	TAILQ_INIT(&http_client.running);
	TAILQ_INIT(&http_client.idle);
}

/* ---------------------------------------------------------------------
 * The pool of idle connections.
 */

/* Whether evhttp still holds the connection's socket open. */
static int
http_client_open(struct evhttp_connection *evcon)
{
	return (bufferevent_getfd(evhttp_connection_get_bufferevent(evcon)) !=
	    -1);
}

static void
http_client_pool_drop(struct http_client_pooled *idle)
{
	TAILQ_REMOVE(&http_client.idle, idle, entry);
	http_client.nidle--;
	/* evhttp_connection_free calls the close callback of an open one. */
	evhttp_connection_set_closecb(idle->evcon, NULL, NULL);
	evhttp_connection_free(idle->evcon);
	event_free(idle->timer);
	free(idle->origin);
	free(idle);
}

static void
http_client_pool_cb(evutil_socket_t fd, short events, void *arg)
{
	http_client_pool_drop(arg);
}

/* The server closed it (inside evhttp's callback): drop it on a later turn. */
static void
http_client_pool_closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct http_client_pooled	*idle = arg;

	event_active(idle->timer, EV_TIMEOUT, 0);
}

/* An open idle connection to origin, the latest left, or NULL. */
static struct evhttp_connection *
http_client_pool_take(const char *origin)
{
	struct http_client_pooled	*idle, *prev;
	struct evhttp_connection *evcon;

	for (idle = TAILQ_LAST(&http_client.idle, http_client_pool);
	    idle != NULL; idle = prev) {
		prev = TAILQ_PREV(idle, http_client_pool, entry);
		if (strcmp(idle->origin, origin) != 0)
			continue;
		if (!http_client_open(idle->evcon)) {
			http_client_pool_drop(idle);
			continue;
		}
		evcon = idle->evcon;
		evhttp_connection_set_closecb(evcon, NULL, NULL);
		TAILQ_REMOVE(&http_client.idle, idle, entry);
		http_client.nidle--;
		event_free(idle->timer);
		free(idle->origin);
		free(idle);
		return (evcon);
	}
	return (NULL);
}

/*
 * Leaves evcon idle for origin, within the bounds: past the origin's
 * bound it is closed, past the total the oldest idle one goes.
 */
static void
http_client_pool_put(const char *origin, struct evhttp_connection *evcon)
{
	struct http_client_pooled	*idle;
	struct timeval		 tv;
	size_t			 same = 0;

	TAILQ_FOREACH(idle, &http_client.idle, entry) {
		if (strcmp(idle->origin, origin) == 0)
			same++;
	}
	if (same >= HTTP_CLIENT_IDLE_PER_ORIGIN) {
		evhttp_connection_free(evcon);
		return;
	}
	if (http_client.nidle >= HTTP_CLIENT_IDLE_MAX)
		http_client_pool_drop(TAILQ_FIRST(&http_client.idle));
	idle = xcalloc(1, sizeof *idle);
	idle->origin = xstrdup(origin);
	idle->evcon = evcon;
	idle->timer = evtimer_new(http_client.base, http_client_pool_cb, idle);
	tv.tv_sec = HTTP_CLIENT_IDLE_MS / 1000;
	tv.tv_usec = (HTTP_CLIENT_IDLE_MS % 1000) * 1000;
	evtimer_add(idle->timer, &tv);
	evhttp_connection_set_closecb(evcon, http_client_pool_closed_cb, idle);
	TAILQ_INSERT_TAIL(&http_client.idle, idle, entry);
	http_client.nidle++;
}

size_t
http_client_idle_count(void)
{
	return (http_client.nidle);
}

/* ---------------------------------------------------------------------
 * Requests.
 */

static struct evdns_base *
http_client_dns(void)
{
	if (http_client.dns == NULL) {
		http_client.dns = evdns_base_new(http_client.base,
		    EVDNS_BASE_INITIALIZE_NAMESERVERS);
		if (http_client.dns == NULL)
			http_client.dns = evdns_base_new(http_client.base, 0);
	}
	return (http_client.dns);
}

/* The TLS context: the system's trust store, TLS 1.2 at least. */
static SSL_CTX *
http_client_ssl(void)
{
	SSL_CTX	*ctx;

	if (http_client.ssl != NULL)
		return (http_client.ssl);
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return (NULL);
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		SSL_CTX_free(ctx);
		return (NULL);
	}
	http_client.ssl = ctx;
	return (ctx);
}

/* Ends the request on a later turn (once), with error if none was set. */
static void
http_client_end(struct http_client *hc, const char *error)
{
	if (hc->error == NULL && !hc->complete)
		hc->error = error;
	if (hc->ending)
		return;
	hc->ending = 1;
	event_active(hc->finish, 0, 0);
}

static void
http_client_out_free(struct http_client_out *a)
{
	size_t	i;

	if (a == NULL)
		return;
	for (i = 0; i < a->nheaders; i++) {
		free(a->names[i]);
		free(a->values[i]);
	}
	free(a->names);
	free(a->values);
	free(a->scheme);
	free(a->host);
	free(a->target);
	free(a->body);
	free(a);
}

/*
 * The connection goes back to the pool only when the whole response came
 * and nothing went wrong; evhttp closed it already if the server said so.
 */
static void
http_client_release(struct http_client *hc)
{
	if (hc->watch != NULL) {
		evbuffer_remove_cb_entry(hc->input, hc->watch);
		hc->watch = NULL;
	}
	if (hc->evcon == NULL)
		return;
	if (hc->origin != NULL && hc->complete && hc->error == NULL &&
	    http_client_open(hc->evcon))
		http_client_pool_put(hc->origin, hc->evcon);
	else
		evhttp_connection_free(hc->evcon);
	hc->evcon = NULL;
}

static void
http_client_free(struct http_client *hc)
{
	TAILQ_REMOVE(&http_client.running, hc, entry);
	http_client.count--;
	event_free(hc->timer);
	event_free(hc->idle);
	event_free(hc->finish);
	if (hc->resp != NULL)
		evhttp_request_free(hc->resp);
	http_client_release(hc);
	http_client_out_free(hc->out);
	free(hc->origin);
	evbuffer_free(hc->body);
	free(hc);
}

static int http_client_send(struct http_client *, char **);

/*
 * A request that failed on a reused connection before any byte of its
 * response came goes out once more on a new one: 0 if it did.
 */
static int
http_client_resend(struct http_client *hc)
{
	char	*cause = NULL;

	if (!hc->resend)
		return (-1);
	hc->resend = 0;
	if (hc->watch != NULL) {
		evbuffer_remove_cb_entry(hc->input, hc->watch);
		hc->watch = NULL;
	}
	evhttp_connection_free(hc->evcon);
	hc->evcon = NULL;
	hc->reused = 0;
	log_debug("http_client: %s%s: the idle connection was closed; sending "
	    "again on a new one", hc->origin, hc->out->target);
	if (http_client_send(hc, &cause) != 0) {
		free(cause);
		return (-1);
	}
	hc->error = NULL;
	hc->ending = 0;
	return (0);
}

static void
http_client_finish_cb(evutil_socket_t fd, short events, void *arg)
{
	struct http_client	*hc = arg;
	struct evhttp_request	*req;

	if (http_client_resend(hc) == 0)
		return;
	if ((req = hc->req) != NULL) {
		/* evhttp calls the error callback from inside the cancel. */
		hc->req = NULL;
		evhttp_cancel_request(req);
	}
	if (hc->error != NULL)
		hc->status = 0;
	/* A NUL after the body, for callers parsing text. */
	evbuffer_add(hc->body, "", 1);
	hc->done(hc, hc->arg);
	http_client_free(hc);
}

/*
 * A connection that holds window bytes unread is stuck: evhttp waits for
 * the end of a line (a chunk's size) that did not fit, and the read
 * watermark keeps the rest out. A timer that finds it so says that.
 */
static const char *
http_client_stuck(struct http_client *hc, const char *otherwise)
{
	if (hc->input == NULL || evbuffer_get_length(hc->input) < hc->window)
		return (otherwise);
	snprintf(hc->why, sizeof hc->why, "a response line longer than %zu "
	    "bytes", hc->window);
	return (hc->why);
}

static void
http_client_timeout_cb(evutil_socket_t fd, short events, void *arg)
{
	struct http_client	*hc = arg;

	http_client_end(hc, http_client_stuck(hc, "timeout"));
}

static void
http_client_idle_cb(evutil_socket_t fd, short events, void *arg)
{
	struct http_client	*hc = arg;

	snprintf(hc->why, sizeof hc->why, "idle: nothing received for %d ms",
	    hc->idle_ms);
	http_client_end(hc, http_client_stuck(hc, hc->why));
}

/* Bytes came in on the connection: an idle request is not idle. */
static void
http_client_watch_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct http_client	*hc = arg;

	if (info->n_added > 0)
		hc->got_bytes = 1;
	if (info->n_added > 0 && hc->idle_ms > 0 && !hc->ending)
		evtimer_add(hc->idle, &hc->idle_tv);
}

/* Takes what evhttp has read of the body. */
static void
http_client_take(struct http_client *hc, struct evhttp_request *req)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	size_t		 len = evbuffer_get_length(in);
	char		*data;

	if (len == 0 || hc->error != NULL)
		return;
	hc->received += len;
	if (hc->max_body != 0 && hc->received > hc->max_body) {
		evbuffer_drain(in, len);
		snprintf(hc->why, sizeof hc->why, "response body larger than "
		    "%zu bytes", hc->max_body);
		http_client_end(hc, hc->why);
		return;
	}
	/*
	 * A stream has no total bound, but evhttp counts the body from its
	 * start: the next chunk may be window bytes past what came so far,
	 * and one announced larger is refused before any of it is read.
	 */
	if (hc->max_body == 0)
		evhttp_connection_set_max_body_size(hc->evcon,
		    (ev_ssize_t)(hc->received + hc->window));
	if (hc->chunk == NULL) {
		evbuffer_remove_buffer(in, hc->body, len);
		return;
	}
	data = (char *)evbuffer_pullup(in, -1);
	hc->status = evhttp_request_get_response_code(req);
	if (hc->chunk(hc, data, len, hc->arg) != 0)
		http_client_end(hc, "aborted");
	evbuffer_drain(in, len);
}

static void
http_client_chunk_evcb(struct evhttp_request *req, void *arg)
{
	struct http_client	*hc = arg;

	if (hc->req == req && !hc->ending)
		http_client_take(hc, req);
}

static void
http_client_error_evcb(enum evhttp_request_error error, void *arg)
{
	struct http_client	*hc = arg;
	const char		*why;

	switch (error) {
	case EVREQ_HTTP_TIMEOUT:
		why = "timeout";
		break;
	case EVREQ_HTTP_EOF:
		why = "connection closed before the response ended";
		break;
	case EVREQ_HTTP_INVALID_HEADER:
		why = "invalid response headers";
		break;
	case EVREQ_HTTP_DATA_TOO_LONG:
		/* Also a malformed chunk size: both end the read at once. */
		snprintf(hc->why, sizeof hc->why, "response body or chunk "
		    "larger than %zu bytes, or malformed chunking",
		    hc->max_body != 0 ? hc->max_body : hc->window);
		why = hc->why;
		break;
	case EVREQ_HTTP_REQUEST_CANCEL:
		why = "cancelled";
		break;
	default:
		why = "connection failed";
		break;
	}
	if (hc->error == NULL)
		hc->error = why;
}

/* evhttp is done with the request: req is the response, or NULL. */
static void
http_client_done_evcb(struct evhttp_request *req, void *arg)
{
	struct http_client	*hc = arg;

	if (hc->req == NULL)
		return;		/* our own cancel */
	hc->req = NULL;
	if (req == NULL || evhttp_request_get_response_code(req) == 0) {
		/* The server closed a pooled connection as it was reused. */
		if (hc->reused && !hc->got_bytes && hc->resendable &&
		    !hc->ending)
			hc->resend = 1;
		http_client_end(hc, hc->error != NULL ? hc->error :
		    "connection failed");
		return;
	}
	http_client_take(hc, req);
	evhttp_request_own(req);
	hc->resp = req;
	hc->status = evhttp_request_get_response_code(req);
	hc->complete = hc->error == NULL;
	http_client_end(hc, NULL);
}

static int
http_client_method(const char *name, enum evhttp_cmd_type *cmd)
{
	static const struct {
		const char		*name;
		enum evhttp_cmd_type	 cmd;
	} methods[] = {
		{ "GET", EVHTTP_REQ_GET },
		{ "POST", EVHTTP_REQ_POST },
		{ "PUT", EVHTTP_REQ_PUT },
		{ "DELETE", EVHTTP_REQ_DELETE },
		{ "HEAD", EVHTTP_REQ_HEAD },
		{ "PATCH", EVHTTP_REQ_PATCH },
		{ "OPTIONS", EVHTTP_REQ_OPTIONS },
	};
	size_t	i;

	for (i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		if (strcmp(methods[i].name, name) == 0) {
			*cmd = methods[i].cmd;
			return (0);
		}
	}
	return (-1);
}

/* The connection for a URL's scheme, host and port. */
static struct evhttp_connection *
http_client_connect(const char *scheme, const char *host, int port,
    char **cause)
{
	struct bufferevent	*bev = NULL;
	struct evhttp_connection *evcon;
	SSL_CTX			*ctx;
	SSL			*ssl;
	struct in_addr		 in4;
	struct in6_addr		 in6;

	if (strcasecmp(scheme, "https") == 0) {
		if ((ctx = http_client_ssl()) == NULL ||
		    (ssl = SSL_new(ctx)) == NULL) {
			xasprintf(cause, "cannot set up TLS");
			return (NULL);
		}
		/*
		 * The certificate must name the host: an IP address in its
		 * iPAddress entries, a name in its DNS ones. Names get SNI,
		 * addresses may not (RFC 6066, 3).
		 */
		if (inet_pton(AF_INET, host, &in4) == 1 ||
		    inet_pton(AF_INET6, host, &in6) == 1)
			X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
			    host);
		else {
			SSL_set_tlsext_host_name(ssl, host);
			SSL_set1_host(ssl, host);
		}
		bev = bufferevent_openssl_socket_new(http_client.base, -1, ssl,
		    BUFFEREVENT_SSL_CONNECTING,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		if (bev == NULL) {
			SSL_free(ssl);
			xasprintf(cause, "cannot set up TLS");
			return (NULL);
		}
		/* Many servers close without close_notify. */
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	}
	evcon = evhttp_connection_base_bufferevent_new(http_client.base,
	    http_client_dns(), bev, host, (unsigned short)port);
	if (evcon == NULL) {
		if (bev != NULL)
			bufferevent_free(bev);
		xasprintf(cause, "cannot create a connection to %s", host);
	}
	return (evcon);
}

/* Whether a request may be sent twice (RFC 9110, 9.2.2). */
static int
http_client_idempotent(enum evhttp_cmd_type cmd)
{
	return (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD ||
	    cmd == EVHTTP_REQ_PUT || cmd == EVHTTP_REQ_DELETE ||
	    cmd == EVHTTP_REQ_OPTIONS);
}

/*
 * Sends what hc->out holds on a connection: an idle one of its origin
 * for a keepalive request, else a new one. -1 with *cause when no
 * connection can be made; once evhttp has the request, a failure is
 * the request's end.
 */
static int
http_client_send(struct http_client *hc, char **cause)
{
	struct http_client_out	*o = hc->out;
	struct evkeyvalq	*out;
	struct bufferevent	*bev;
	char			 hostport[300], length[32];
	size_t			 i;

	if (hc->origin != NULL &&
	    (hc->evcon = http_client_pool_take(hc->origin)) != NULL)
		hc->reused = 1;
	else if ((hc->evcon = http_client_connect(o->scheme, o->host, o->port,
	    cause)) == NULL)
		return (-1);
	hc->got_bytes = 0;

	/*
	 * What is held per request is bounded as bytes arrive, not once a
	 * piece is whole: evhttp gathers a chunk (or a Content-Length body)
	 * before handing it over, so a size past the bound is refused when
	 * it is announced, and the read watermark keeps a line that never
	 * ends (a chunk's size) from growing past the window.
	 */
	evhttp_connection_set_max_headers_size(hc->evcon,
	    HTTP_CLIENT_MAX_HEADERS);
	evhttp_connection_set_max_body_size(hc->evcon, (ev_ssize_t)(
	    hc->max_body != 0 ? hc->max_body : hc->window));
	bev = evhttp_connection_get_bufferevent(hc->evcon);
	bufferevent_setwatermark(bev, EV_READ, 0, hc->window);
	hc->input = bufferevent_get_input(bev);
	hc->watch = evbuffer_add_cb(hc->input, http_client_watch_cb, hc);
	evhttp_connection_set_timeout_tv(hc->evcon, &hc->timeout_tv);

	hc->req = evhttp_request_new(http_client_done_evcb, hc);
	evhttp_request_set_chunked_cb(hc->req, http_client_chunk_evcb);
	evhttp_request_set_error_cb(hc->req, http_client_error_evcb);
	out = evhttp_request_get_output_headers(hc->req);
	if (o->port == (strcasecmp(o->scheme, "https") == 0 ? 443 : 80))
		snprintf(hostport, sizeof hostport, "%s", o->host);
	else if (strchr(o->host, ':') != NULL)
		snprintf(hostport, sizeof hostport, "[%s]:%d", o->host,
		    o->port);
	else
		snprintf(hostport, sizeof hostport, "%s:%d", o->host, o->port);
	evhttp_add_header(out, "Host", hostport);
	if (hc->origin == NULL)
		evhttp_add_header(out, "Connection", "close");
	for (i = 0; i < o->nheaders; i++)
		evhttp_add_header(out, o->names[i], o->values[i]);
	if (o->body != NULL) {
		evbuffer_add(evhttp_request_get_output_buffer(hc->req),
		    o->body, o->bodylen);
		/* evhttp adds it for POST and PUT only: PATCH needs it too. */
		if (evhttp_find_header(out, "Content-Length") == NULL) {
			snprintf(length, sizeof length, "%zu", o->bodylen);
			evhttp_add_header(out, "Content-Length", length);
		}
	}
	if (evhttp_make_request(hc->evcon, hc->req, o->cmd, o->target) != 0) {
		/* evhttp has freed the request. */
		hc->req = NULL;
		http_client_end(hc, "cannot send the request");
	}
	return (0);
}

struct http_client *
http_client_start(const struct http_client_request *r, char **cause)
{
	struct http_client	*hc;
	struct http_client_out	*o;
	struct evhttp_uri	*uri;
	const char		*scheme, *host, *path, *query;
	enum evhttp_cmd_type	 cmd;
	int			 port;
	size_t			 i;

	if (http_client_method(r->method, &cmd) != 0) {
		xasprintf(cause, "method %s not supported", r->method);
		return (NULL);
	}
	if ((uri = evhttp_uri_parse(r->url)) == NULL ||
	    (scheme = evhttp_uri_get_scheme(uri)) == NULL ||
	    (strcasecmp(scheme, "http") != 0 &&
	    strcasecmp(scheme, "https") != 0) ||
	    (host = evhttp_uri_get_host(uri)) == NULL || *host == '\0' ||
	    strlen(host) > 255) {
		xasprintf(cause, "not an http or https URL: %s", r->url);
		if (uri != NULL)
			evhttp_uri_free(uri);
		return (NULL);
	}
	if ((port = evhttp_uri_get_port(uri)) == -1)
		port = strcasecmp(scheme, "https") == 0 ? 443 : 80;
	if ((path = evhttp_uri_get_path(uri)) == NULL || *path == '\0')
		path = "/";
	query = evhttp_uri_get_query(uri);

	o = xcalloc(1, sizeof *o);
	o->scheme = xstrdup(scheme);
	o->host = xstrdup(host);
	o->port = port;
	o->cmd = cmd;
	xasprintf(&o->target, "%s%s%s", path, query != NULL ? "?" : "",
	    query != NULL ? query : "");
	evhttp_uri_free(uri);
	o->nheaders = r->nheaders;
	o->names = xcalloc(r->nheaders + 1, sizeof *o->names);
	o->values = xcalloc(r->nheaders + 1, sizeof *o->values);
	for (i = 0; i < r->nheaders; i++) {
		o->names[i] = xstrdup(r->headers[i].name);
		o->values[i] = xstrdup(r->headers[i].value);
	}
	if (r->body != NULL) {
		o->body = xmalloc(r->bodylen + 1);
		memcpy(o->body, r->body, r->bodylen);
		o->bodylen = r->bodylen;
	}

	hc = xcalloc(1, sizeof *hc);
	hc->out = o;
	if (r->keepalive && r->chunk == NULL) {
		xasprintf(&hc->origin, "%s://%s:%d", strcasecmp(o->scheme,
		    "https") == 0 ? "https" : "http", o->host, o->port);
		hc->resendable = http_client_idempotent(cmd);
	}
	hc->max_body = r->max_body;
	if (hc->max_body == 0 && r->chunk == NULL)
		hc->max_body = HTTP_CLIENT_MAX_BODY;
	hc->window = (hc->max_body != 0 ? hc->max_body : r->max_chunk != 0 ?
	    r->max_chunk : HTTP_CLIENT_MAX_BODY) + HTTP_CLIENT_SLACK;
	hc->chunk = r->chunk;
	hc->done = r->done;
	hc->arg = r->arg;
	if (r->timeout_ms > 0) {
		hc->timeout_tv.tv_sec = r->timeout_ms / 1000;
		hc->timeout_tv.tv_usec = (r->timeout_ms % 1000) * 1000;
	} else
		hc->timeout_tv.tv_sec = HTTP_CLIENT_LONG_SECS;
	hc->body = evbuffer_new();
	hc->timer = evtimer_new(http_client.base, http_client_timeout_cb, hc);
	hc->idle = evtimer_new(http_client.base, http_client_idle_cb, hc);
	hc->finish = event_new(http_client.base, -1, 0, http_client_finish_cb,
	    hc);
	TAILQ_INSERT_TAIL(&http_client.running, hc, entry);
	http_client.count++;
	if (http_client_send(hc, cause) != 0) {
		http_client_free(hc);
		return (NULL);
	}
	if ((hc->idle_ms = r->idle_ms) > 0) {
		hc->idle_tv.tv_sec = r->idle_ms / 1000;
		hc->idle_tv.tv_usec = (r->idle_ms % 1000) * 1000;
		evtimer_add(hc->idle, &hc->idle_tv);
	}
	if (r->timeout_ms > 0)
		evtimer_add(hc->timer, &hc->timeout_tv);
	return (hc);
}

/* A response already in is still what done reports. */
void
http_client_cancel(struct http_client *hc)
{
	http_client_end(hc, "cancelled");
}

int
http_client_reused(const struct http_client *hc)
{
	return (hc->reused);
}

size_t
http_client_count(void)
{
	return (http_client.count);
}

int
http_client_status(const struct http_client *hc)
{
	return (hc->error != NULL ? 0 : hc->status);
}

const char *
http_client_error(const struct http_client *hc)
{
	if (hc->error == NULL && hc->status == 0)
		return ("no response");
	return (hc->error);
}

const char *
http_client_header(const struct http_client *hc, const char *name)
{
	struct evhttp_request	*req = hc->resp != NULL ? hc->resp : hc->req;

	if (req == NULL)
		return (NULL);
	return (evhttp_find_header(evhttp_request_get_input_headers(req),
	    name));
}

const char *
http_client_body(const struct http_client *hc, size_t *len)
{
	size_t	n = evbuffer_get_length(hc->body);

	*len = n > 0 ? n - 1 : 0;	/* the NUL finish added */
	return ((const char *)evbuffer_pullup(hc->body, -1));
}

/* Running requests end now, their done callbacks told "shut down". */
void
http_client_shutdown(void)
{
	struct http_client	*hc;

	while ((hc = TAILQ_FIRST(&http_client.running)) != NULL) {
		if (hc->error == NULL)
			hc->error = "shut down";
		hc->resend = 0;
		event_del(hc->finish);
		http_client_finish_cb(-1, 0, hc);
	}
	while (!TAILQ_EMPTY(&http_client.idle))
		http_client_pool_drop(TAILQ_FIRST(&http_client.idle));
	if (http_client.dns != NULL) {
		evdns_base_free(http_client.dns, 0);
		http_client.dns = NULL;
	}
	if (http_client.ssl != NULL) {
		SSL_CTX_free(http_client.ssl);
		http_client.ssl = NULL;
	}
}
