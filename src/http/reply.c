/*
 * HTTP replies. Every 503 goes through reply_unavailable, so none goes
 * out without the Retry-After that tells a client when to come back
 * (docs/protocol.md, Requests and statuses). Every response, whole or
 * SSE, begins and ends here: each is counted and has its access line,
 * and no SSE response of either revision goes without the socket and
 * timeout settings a long-lived stream needs.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "access.h"
#include "jsonrpc.h"
#include "metrics.h"
#include "reply.h"
#include "reqtrace.h"
#include "server.h"
#include "trace.h"
#include "xmalloc.h"

/* An SSE response between its head and its end. */
struct reply_sse {
	struct evhttp_request		*req;
	struct evhttp_connection	*evcon;
	uint64_t			 k;
	int				 access;	/* a line is owed */
	uint64_t			 access_start;
	size_t				 access_bytes;
	const char			*access_method;
	char				*access_session;
	struct reqtrace			*trace;	/* its spans */
	char				 access_path[ACCESS_PATH_MAX + 1];
};

/*
 * The methods the access log names and the metrics count one by one; any
 * other is "other" in both.
 */
static const struct {
	enum evhttp_cmd_type	 cmd;
	const char		*name;
	enum metrics_method	 metric;
} reply_methods[] = {
	{ EVHTTP_REQ_GET, "GET", METRICS_GET },
	{ EVHTTP_REQ_POST, "POST", METRICS_POST },
	{ EVHTTP_REQ_DELETE, "DELETE", METRICS_DELETE },
	{ EVHTTP_REQ_PUT, "PUT", METRICS_OTHER_METHOD },
	{ EVHTTP_REQ_PATCH, "PATCH", METRICS_OTHER_METHOD },
	{ EVHTTP_REQ_OPTIONS, "OPTIONS", METRICS_OTHER_METHOD },
	{ EVHTTP_REQ_HEAD, "HEAD", METRICS_OTHER_METHOD },
};
#define REPLY_NMETHODS	(sizeof reply_methods / sizeof reply_methods[0])

static int
reply_method_index(struct evhttp_request *req)
{
	enum evhttp_cmd_type	cmd = evhttp_request_get_command(req);
	size_t			i;

	for (i = 0; i < REPLY_NMETHODS; i++) {
		if (reply_methods[i].cmd == cmd)
			return ((int)i);
	}
	return (-1);
}

const char *
reply_method(struct evhttp_request *req)
{
	int	i = reply_method_index(req);

	return (i == -1 ? "other" : reply_methods[i].name);
}

/*
 * The request's path, decoded as evhttp decoded it to match it against
 * the endpoints (allocated; "" if it has none).
 */
char *
reply_path(struct evhttp_request *req)
{
	const struct evhttp_uri	*u = evhttp_request_get_evhttp_uri(req);
	const char		*p = u != NULL ? evhttp_uri_get_path(u) : NULL;
	char			*d;

	if (p == NULL)
		return (xstrdup(""));
	/* libevent allocates through the x* allocators (main.c). */
	if ((d = evhttp_decode_uri(p)) == NULL)
		return (xstrdup(p));
	return (d);
}

/* The session a response is about: the one it names, or the request's. */
const char *
reply_session(struct evhttp_request *req)
{
	const char	*sid;

	if ((sid = evhttp_find_header(evhttp_request_get_output_headers(req),
	    "Mcp-Session-Id")) == NULL)
		sid = evhttp_find_header(evhttp_request_get_input_headers(req),
		    "Mcp-Session-Id");
	return (sid);
}

/* Every response that starts is counted by method and status here. */
void
reply_count(struct evhttp_request *req, int status)
{
	int	i = reply_method_index(req);

	metrics_http(i == -1 ? METRICS_OTHER_METHOD : reply_methods[i].metric,
	    status);
}

/* A whole reply (body NULL: none). */
void
reply_send(struct evhttp_request *req, int status, struct evbuffer *body)
{
	char	path[ACCESS_PATH_MAX + 1];
	int	depth;

	reply_count(req, status);
	if (access_enabled()) {
		depth = trace_enter(reqtrace_span(req));
		access_path(path, evhttp_request_get_uri(req));
		access_line(reply_method(req), path, status,
		    reply_session(req), 0, body != NULL ?
		    evbuffer_get_length(body) : 0, access_take(req));
		trace_leave(depth);
	}
	reqtrace_end(req, status);
	evhttp_send_reply(req, status, status == 429 ? "Too Many Requests" :
	    NULL, body);
}

void
reply_json(struct evhttp_request *req, int status, cJSON *json)
{
	struct evbuffer	*buf = evbuffer_new();
	char		*text;

	text = jsonrpc_print(json);
	cJSON_Delete(json);
	evbuffer_add(buf, text, strlen(text));
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	reply_send(req, status, buf);
	evbuffer_free(buf);
}

void
reply_error(struct evhttp_request *req, int status, int code,
    const char *message, cJSON *data)
{
	reply_json(req, status, jsonrpc_error(NULL, code, message, data));
}

void
reply_empty(struct evhttp_request *req, int status)
{
	reply_send(req, status, NULL);
}

void
reply_unavailable(struct evhttp_request *req, int retry_after,
    const char *message)
{
	char	seconds[16];

	snprintf(seconds, sizeof seconds, "%d", retry_after);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Retry-After", seconds);
	reply_error(req, 503, JSONRPC_UNAVAILABLE, message, NULL);
}

void
reply_limited(struct evhttp_request *req, uint64_t retry_after, cJSON *body)
{
	char	seconds[24];

	snprintf(seconds, sizeof seconds, "%llu",
	    (unsigned long long)retry_after);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Retry-After", seconds);
	reply_json(req, 429, body);
}

int
reply_listener(int fd)
{
	int	on = 1;

	return (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on));
}

struct reply_sse *
reply_sse_start(struct evhttp_request *req, uint64_t k, reply_conn_cb *closecb,
    void *arg)
{
	struct reply_sse	*rs;
	struct evkeyvalq	*headers;
	struct bufferevent	*bev;
	const char		*sid;
#ifndef __linux__
	int			 one = 1;
#endif

	rs = xcalloc(1, sizeof *rs);
	rs->req = req;
	rs->evcon = evhttp_request_get_connection(req);
	rs->k = k;
	headers = evhttp_request_get_output_headers(req);
	evhttp_add_header(headers, "Content-Type", "text/event-stream");
	evhttp_add_header(headers, "Cache-Control", "no-cache");
	evhttp_add_header(headers, "X-Accel-Buffering", "no");
	reply_count(req, 200);
	if (access_enabled()) {
		rs->access = 1;
		rs->access_start = access_take(req);
		rs->access_method = reply_method(req);
		access_path(rs->access_path, evhttp_request_get_uri(req));
		if ((sid = reply_session(req)) != NULL)
			rs->access_session = xstrdup(sid);
	}
	rs->trace = reqtrace_take(req);
	evhttp_send_reply_start(req, 200, "OK");

	/* An idle stream is healthy; stalls are the cron's business. */
	bev = evhttp_connection_get_bufferevent(rs->evcon);
	bufferevent_set_timeouts(bev, NULL, NULL);
	/*
	 * Events go out as small chunks, each as soon as it is ready:
	 * Nagle's algorithm would hold one back until the client's delayed
	 * ACK (40 ms) for every short response. On Linux the connection has
	 * TCP_NODELAY already, from its listener (reply_listener): a system
	 * call per response saved.
	 */
#ifndef __linux__
	setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one,
	    sizeof one);
#endif
	evhttp_connection_set_closecb(rs->evcon, closecb, arg);
	return (rs);
}

void
reply_sse_chunk(struct reply_sse *rs, struct evbuffer *buf,
    reply_conn_cb *drained, void *arg)
{
	rs->access_bytes += evbuffer_get_length(buf);
	evhttp_send_reply_chunk_with_cb(rs->req, buf, drained, arg);
}

/*
 * The end, however it came (evhttp's traps: on a peer's close the
 * request is ours to end, once):
 *  - DONE: the close callback is cleared first (it is the connection's
 *    and would fire into freed memory on a later close), and the
 *    connection gets back the request timeouts the stream took away, so
 *    an idle or stalled client does not hold it;
 *  - GONE: in the close callback the request is ours to end, once, or
 *    it leaks;
 *  - CUT: the request goes with its connection, never ended, and the
 *    client does not reuse it.
 */
void
reply_sse_end(struct reply_sse *rs, enum reply_sse_end how)
{
	int	depth;

	switch (how) {
	case REPLY_SSE_DONE:
		evhttp_connection_set_closecb(rs->evcon, NULL, NULL);
		evhttp_connection_set_timeout(rs->evcon, SERVER_REQUEST_TIMEOUT);
		evhttp_send_reply_end(rs->req);
		break;
	case REPLY_SSE_GONE:
		evhttp_send_reply_end(rs->req);
		break;
	case REPLY_SSE_CUT:
		evhttp_connection_set_closecb(rs->evcon, NULL, NULL);
		break;
	}
	if (rs->access) {
		depth = reqtrace_enter(rs->trace);
		access_line(rs->access_method, rs->access_path, 200,
		    rs->access_session, rs->k, rs->access_bytes,
		    rs->access_start);
		trace_leave(depth);
	}
	reqtrace_done(rs->trace, 200);
	if (how == REPLY_SSE_CUT)
		evhttp_connection_free(rs->evcon);
	free(rs->access_session);
	free(rs);
}
