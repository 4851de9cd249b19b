/*
 * Unit tests for http_client.c, against an evhttp server on the same loop
 * (127.0.0.1, port 0): a response with its status, headers and body; a
 * POST's headers and body; the body bound; the timeout; a refused
 * connection; a streaming response handed over by chunks and aborted from
 * the chunk callback; cancel; shutdown; a raw peer announcing a chunk or
 * a Content-Length past the bound, or a line that never ends; the idle
 * bound; keepalive connections: reused, never after an error or a close,
 * dropped when the server closes them idle, and a request the server cut
 * on a reused connection sent again when it is idempotent. In every case
 * done runs exactly once, never inside http_client_start or
 * http_client_cancel.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "unit.h"

#include "http_client.h"
#include "xmalloc.h"

static struct event_base	*base;
static struct evhttp		*http;
static int			 port;
static struct evhttp_request	*held;		/* /slow, never answered */
static struct evhttp_request	*streaming;	/* /stream, left open */
static int			 peer_port;	/* of the last request */

struct outcome {
	int		 done;
	int		 status;
	char		 error[128];
	char		 body[16384];
	size_t		 len;
	char		 header[128];
	int		 chunks;
	size_t		 chunked;
	int		 abort_after;	/* chunks, then -1; 0: never */
};

static void
server_cb(struct evhttp_request *req, void *arg)
{
	const char	*uri = evhttp_request_get_uri(req);
	struct evbuffer	*buf = evbuffer_new();
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evbuffer	*body = evhttp_request_get_input_buffer(req);
	const char	*h;
	enum evhttp_cmd_type cmd;
	int		 i;

	char		*addr;
	ev_uint16_t	 pport;

	evhttp_connection_get_peer(evhttp_request_get_connection(req), &addr,
	    &pport);
	peer_port = pport;
	evhttp_add_header(evhttp_request_get_output_headers(req), "X-Test",
	    "yes");
	if (strcmp(uri, "/close") == 0) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
		evbuffer_add_printf(buf, "bye");
		evhttp_send_reply(req, 200, "OK", buf);
	} else if (strcmp(uri, "/ok") == 0) {
		evbuffer_add_printf(buf, "hello");
		evhttp_send_reply(req, 200, "OK", buf);
	} else if (strcmp(uri, "/echo?q=1") == 0) {
		h = evhttp_find_header(in, "X-Who");
		cmd = evhttp_request_get_command(req);
		evbuffer_add_printf(buf, "%s %s ",
		    cmd == EVHTTP_REQ_POST ? "POST" :
		    cmd == EVHTTP_REQ_PATCH ? "PATCH" : "?",
		    h != NULL ? h : "-");
		evbuffer_add_buffer(buf, body);
		evhttp_send_reply(req, 201, "Created", buf);
	} else if (strcmp(uri, "/big") == 0) {
		for (i = 0; i < 1000; i++)
			evbuffer_add_printf(buf, "0123456789");
		evhttp_send_reply(req, 200, "OK", buf);
	} else if (strcmp(uri, "/slow") == 0) {
		held = req;
	} else if (strcmp(uri, "/stream") == 0) {
		evhttp_send_reply_start(req, 200, "OK");
		for (i = 0; i < 3; i++) {
			evbuffer_add_printf(buf, "data: %d\n\n", i);
			evhttp_send_reply_chunk(req, buf);
		}
		streaming = req;
	} else
		evhttp_send_reply(req, 404, "Not Found", buf);
	evbuffer_free(buf);
}

static void
setup(void)
{
	struct evhttp_bound_socket	*bound;
	struct sockaddr_in		 sin;
	socklen_t			 len = sizeof sin;

	/* The raw peer writes on after the client has gone. */
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
	evhttp_set_gencb(http, server_cb, NULL);
	bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	ck_assert_ptr_nonnull(bound);
	getsockname(evhttp_bound_socket_get_fd(bound),
	    (struct sockaddr *)&sin, &len);
	port = ntohs(sin.sin_port);
	http_client_init(base);
	held = streaming = NULL;
	peer_port = 0;
}

static void
teardown(void)
{
	http_client_shutdown();
	if (streaming != NULL)
		evhttp_send_reply_end(streaming);
	if (held != NULL)
		evhttp_send_reply(held, 500, "Bye", NULL);
	unit_turns(base, 4);
	evhttp_free(http);
	event_base_free(base);
}

static void
done_cb(struct http_client *hc, void *arg)
{
	struct outcome	*o = arg;
	const char	*body, *h;
	size_t		 len;

	o->done++;
	o->status = http_client_status(hc);
	if (http_client_error(hc) != NULL)
		snprintf(o->error, sizeof o->error, "%s",
		    http_client_error(hc));
	body = http_client_body(hc, &len);
	ck_assert_int_eq(body[len], '\0');
	if (len < sizeof o->body) {
		memcpy(o->body, body, len);
		o->len = len;
	}
	if ((h = http_client_header(hc, "x-test")) != NULL)
		snprintf(o->header, sizeof o->header, "%s", h);
}

static int
chunk_cb(struct http_client *hc, const char *data, size_t len, void *arg)
{
	struct outcome	*o = arg;

	ck_assert_int_eq(http_client_status(hc), 200);
	o->chunks++;
	o->chunked += len;
	if (o->abort_after != 0 && o->chunked >= (size_t)o->abort_after)
		return (-1);
	return (0);
}

/* Turns the loop until o is done (10 s at most). */
static void
wait_done(struct outcome *o)
{
	int	i;

	for (i = 0; i < 10000 && o->done == 0; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (o->done == 0)
			usleep(1000);
	}
	ck_assert_int_eq(o->done, 1);
	unit_turns(base, 5);
	ck_assert_int_eq(o->done, 1);
}

static struct http_client *
start(const char *method, const char *path, struct outcome *o,
    const struct http_client_request *base_r)
{
	struct http_client_request	 r;
	struct http_client		*hc;
	char				 url[128], *cause = NULL;

	if (base_r != NULL)
		r = *base_r;
	else
		memset(&r, 0, sizeof r);
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	r.method = method;
	r.url = url;
	if (r.done == NULL)
		r.done = done_cb;
	r.arg = o;
	if (r.timeout_ms == 0 && r.chunk == NULL)
		r.timeout_ms = 5000;
	hc = http_client_start(&r, &cause);
	ck_assert_msg(hc != NULL, "http_client_start: %s", cause);
	ck_assert_int_eq(o->done, 0);	/* never inside the call */
	return (hc);
}

START_TEST(test_get)
{
	struct outcome	o = { 0 };

	start("GET", "/ok", &o, NULL);
	ck_assert_uint_eq(http_client_count(), 1);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_str_eq(o.error, "");
	ck_assert_uint_eq(o.len, 5);
	ck_assert_int_eq(memcmp(o.body, "hello", 5), 0);
	ck_assert_str_eq(o.header, "yes");
	ck_assert_uint_eq(http_client_count(), 0);

	memset(&o, 0, sizeof o);
	start("GET", "/missing", &o, NULL);
	wait_done(&o);
	ck_assert_int_eq(o.status, 404);
}
END_TEST

START_TEST(test_post)
{
	struct outcome			 o = { 0 };
	struct http_client_header	 h = { "X-Who", "tester" };
	struct http_client_request	 r;

	memset(&r, 0, sizeof r);
	r.headers = &h;
	r.nheaders = 1;
	r.body = "a=b";
	r.bodylen = 3;
	start("POST", "/echo?q=1", &o, &r);
	wait_done(&o);
	ck_assert_int_eq(o.status, 201);
	o.body[o.len] = '\0';
	ck_assert_str_eq(o.body, "POST tester a=b");
}
END_TEST

START_TEST(test_body_bound)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;

	memset(&r, 0, sizeof r);
	r.max_body = 1000;
	start("GET", "/big", &o, &r);
	wait_done(&o);
	ck_assert_int_eq(o.status, 0);
	ck_assert_ptr_nonnull(strstr(o.error, "larger than 1000 bytes"));

	memset(&o, 0, sizeof o);
	r.max_body = 10000;
	start("GET", "/big", &o, &r);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_uint_eq(o.len, 10000);
}
END_TEST

START_TEST(test_timeout)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;

	memset(&r, 0, sizeof r);
	r.timeout_ms = 100;
	start("GET", "/slow", &o, &r);
	wait_done(&o);
	ck_assert_int_eq(o.status, 0);
	ck_assert_str_eq(o.error, "timeout");
}
END_TEST

START_TEST(test_refused)
{
	struct outcome	 o = { 0 };
	int		 fd, saved = port;
	struct sockaddr_in sin;
	socklen_t	 len = sizeof sin;

	/* A port that was free a moment ago, nobody listening on it. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	getsockname(fd, (struct sockaddr *)&sin, &len);
	port = ntohs(sin.sin_port);
	close(fd);
	start("GET", "/ok", &o, NULL);
	port = saved;
	wait_done(&o);
	ck_assert_int_eq(o.status, 0);
	ck_assert_str_ne(o.error, "");
}
END_TEST

START_TEST(test_bad_url)
{
	struct http_client_request	 r;
	struct outcome			 o = { 0 };
	char				*cause = NULL;
	const char			*urls[] = { "ftp://x/", "no url",
					    "http:///path", "" };
	size_t				 i;

	for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
		memset(&r, 0, sizeof r);
		r.method = "GET";
		r.url = urls[i];
		r.done = done_cb;
		r.arg = &o;
		ck_assert_ptr_null(http_client_start(&r, &cause));
		ck_assert_ptr_nonnull(cause);
		free(cause);
		cause = NULL;
	}
	r.url = "http://127.0.0.1/";
	r.method = "BREW";
	ck_assert_ptr_null(http_client_start(&r, &cause));
	free(cause);
	unit_turns(base, 3);
	ck_assert_int_eq(o.done, 0);
}
END_TEST

START_TEST(test_chunks)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;

	memset(&r, 0, sizeof r);
	r.chunk = chunk_cb;
	o.abort_after = 20;	/* the three events are 27 bytes */
	start("GET", "/stream", &o, &r);
	wait_done(&o);
	ck_assert_int_ge(o.chunks, 1);
	ck_assert_uint_ge(o.chunked, 20);
	ck_assert_int_eq(o.status, 0);
	ck_assert_str_eq(o.error, "aborted");
	ck_assert_uint_eq(o.len, 0);	/* handed over, not gathered */
}
END_TEST

START_TEST(test_cancel)
{
	struct outcome		 o = { 0 };
	struct http_client	*hc;

	hc = start("GET", "/slow", &o, NULL);
	unit_turns(base, 3);
	http_client_cancel(hc);
	ck_assert_int_eq(o.done, 0);	/* never inside the call */
	wait_done(&o);
	ck_assert_int_eq(o.status, 0);
	ck_assert_str_eq(o.error, "cancelled");

	/* At once, before anything was sent. */
	memset(&o, 0, sizeof o);
	hc = start("GET", "/ok", &o, NULL);
	http_client_cancel(hc);
	wait_done(&o);
	ck_assert_str_eq(o.error, "cancelled");
}
END_TEST

START_TEST(test_shutdown)
{
	struct outcome	o = { 0 };

	start("GET", "/slow", &o, NULL);
	unit_turns(base, 3);
	http_client_shutdown();
	ck_assert_int_eq(o.done, 1);
	ck_assert_str_eq(o.error, "shut down");
	ck_assert_uint_eq(http_client_count(), 0);
}
END_TEST

/*
 * A raw peer for what no evhttp server says: on each connection, the
 * request is ignored and `raw` is written, then `fill` bytes of `fillc`.
 */
static int		 raw_port;
static const char	*raw_head;
static size_t		 raw_fill;
static char		 raw_fillc;
static struct bufferevent *raw_bev;

static void
raw_accept_cb(evutil_socket_t fd, short events, void *arg)
{
	struct evbuffer	*out;
	char		*fill;
	int		 c;

	if ((c = accept(fd, NULL, NULL)) == -1)
		return;
	evutil_make_socket_nonblocking(c);
	raw_bev = bufferevent_socket_new(base, c, BEV_OPT_CLOSE_ON_FREE);
	out = bufferevent_get_output(raw_bev);
	evbuffer_add(out, raw_head, strlen(raw_head));
	fill = xmalloc(raw_fill);
	memset(fill, raw_fillc, raw_fill);
	evbuffer_add(out, fill, raw_fill);
	free(fill);
	bufferevent_enable(raw_bev, EV_WRITE);
}

/* A listening socket on a free loopback port whose accepts go to cb. */
static struct event *
raw_listen_cb(event_callback_fn cb)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	int			 fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	getsockname(fd, (struct sockaddr *)&sin, &len);
	raw_port = ntohs(sin.sin_port);
	raw_bev = NULL;
	return (event_new(base, fd, EV_READ | EV_PERSIST, cb, NULL));
}

static struct event *
raw_listen(const char *head, size_t fill, char fillc)
{
	raw_head = head;
	raw_fill = fill;
	raw_fillc = fillc;
	return (raw_listen_cb(raw_accept_cb));
}

static void
raw_close(struct event *ev)
{
	close(event_get_fd(ev));
	event_free(ev);
	if (raw_bev != NULL)
		bufferevent_free(raw_bev);
}

/*
 * A chunk announced far past the bound is refused when announced: what
 * the peer sends of it is never gathered (it would be 8 MiB here).
 */
START_TEST(test_chunk_announced_too_large)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;
	struct event			*ev;
	int				 saved = port;

	ev = raw_listen("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n25800000\r\n", 8 * 1024 * 1024, 'x');
	event_add(ev, NULL);
	memset(&r, 0, sizeof r);
	r.chunk = chunk_cb;
	r.max_chunk = 64 * 1024;
	port = raw_port;
	start("GET", "/", &o, &r);
	port = saved;
	wait_done(&o);
	ck_assert_int_eq(o.chunks, 0);
	ck_assert_ptr_nonnull(strstr(o.error, "larger than 131072 bytes"));
	raw_close(ev);
}
END_TEST

/* So is a Content-Length past max_body, before its body is read. */
START_TEST(test_length_announced_too_large)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;
	struct event			*ev;
	int				 saved = port;

	ev = raw_listen("HTTP/1.1 200 OK\r\nContent-Length: 629145600\r\n"
	    "\r\n", 1024 * 1024, 'x');
	event_add(ev, NULL);
	memset(&r, 0, sizeof r);
	r.max_body = 64 * 1024;
	port = raw_port;
	start("GET", "/", &o, &r);
	port = saved;
	wait_done(&o);
	ck_assert_int_eq(o.status, 0);
	ck_assert_ptr_nonnull(strstr(o.error, "larger than 65536 bytes"));
	raw_close(ev);
}
END_TEST

/*
 * A chunk's size line that never ends stops at the read watermark (the
 * connection holds no more than the window) and ends with the timeout,
 * saying what it was.
 */
START_TEST(test_endless_line_held_at_the_window)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;
	struct event			*ev;
	int				 saved = port;

	ev = raw_listen("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n", 4 * 1024 * 1024, 'f');
	event_add(ev, NULL);
	memset(&r, 0, sizeof r);
	r.chunk = chunk_cb;
	r.max_chunk = 64 * 1024;
	r.timeout_ms = 1000;
	port = raw_port;
	start("GET", "/", &o, &r);
	port = saved;
	wait_done(&o);
	ck_assert_int_eq(o.chunks, 0);
	ck_assert_str_eq(o.error, "a response line longer than 131072 bytes");
	raw_close(ev);
}
END_TEST

/* Bytes reset the idle timer; none for idle_ms end the request. */
START_TEST(test_idle)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;

	memset(&r, 0, sizeof r);
	r.chunk = chunk_cb;
	r.idle_ms = 200;
	start("GET", "/stream", &o, &r);
	wait_done(&o);
	ck_assert_int_ge(o.chunks, 1);	/* the three events, then nothing */
	ck_assert_str_eq(o.error, "idle: nothing received for 200 ms");
}
END_TEST

/* ---------------------------------------------------------------------
 * Keepalive.
 */

static struct http_client *
start_keepalive(const char *method, const char *path, struct outcome *o,
    size_t max_body)
{
	struct http_client_request	r;

	memset(&r, 0, sizeof r);
	r.keepalive = 1;
	r.max_body = max_body;
	return (start(method, path, o, &r));
}

static int	reused_seen;

static void
reused_done_cb(struct http_client *hc, void *arg)
{
	reused_seen = http_client_reused(hc);
	done_cb(hc, arg);
}

/* Sequential keepalive requests share one connection; others do not. */
START_TEST(test_keepalive_reuse)
{
	struct outcome			 o;
	struct http_client_request	 r;
	int				 first, i;

	for (i = 0; i < 3; i++) {
		memset(&o, 0, sizeof o);
		memset(&r, 0, sizeof r);
		r.keepalive = 1;
		r.done = reused_done_cb;
		start("GET", "/ok", &o, &r);
		wait_done(&o);
		ck_assert_int_eq(o.status, 200);
		ck_assert_int_eq(reused_seen, i > 0);
		if (i == 0)
			first = peer_port;
		ck_assert_int_eq(peer_port, first);
		ck_assert_uint_eq(http_client_idle_count(), 1);
	}
	/* A request without keepalive neither takes nor leaves one. */
	memset(&o, 0, sizeof o);
	start("GET", "/ok", &o, NULL);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_int_ne(peer_port, first);
	ck_assert_uint_eq(http_client_idle_count(), 1);
}
END_TEST

/* A response not read whole, or one the server closed, leaves nothing. */
START_TEST(test_keepalive_not_after_error_or_close)
{
	struct outcome	o = { 0 };
	int		first;

	start_keepalive("GET", "/ok", &o, 0);
	wait_done(&o);
	first = peer_port;
	ck_assert_uint_eq(http_client_idle_count(), 1);

	memset(&o, 0, sizeof o);
	start_keepalive("GET", "/big", &o, 1000);
	wait_done(&o);
	ck_assert_ptr_nonnull(strstr(o.error, "larger than 1000 bytes"));
	ck_assert_int_eq(peer_port, first);	/* it took the idle one */
	ck_assert_uint_eq(http_client_idle_count(), 0);

	memset(&o, 0, sizeof o);
	start_keepalive("GET", "/ok", &o, 0);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_int_ne(peer_port, first);
	ck_assert_uint_eq(http_client_idle_count(), 1);

	memset(&o, 0, sizeof o);
	start_keepalive("GET", "/close", &o, 0);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_uint_eq(http_client_idle_count(), 0);

	/* A cancelled one neither. */
	memset(&o, 0, sizeof o);
	http_client_cancel(start_keepalive("GET", "/slow", &o, 0));
	wait_done(&o);
	ck_assert_str_eq(o.error, "cancelled");
	ck_assert_uint_eq(http_client_idle_count(), 0);
}
END_TEST

/* The server closes an idle connection: it leaves the pool by itself. */
START_TEST(test_keepalive_server_closes_idle)
{
	struct outcome	o = { 0 };
	int		first, i;

	evhttp_set_timeout(http, 1);
	start_keepalive("GET", "/ok", &o, 0);
	wait_done(&o);
	first = peer_port;
	ck_assert_uint_eq(http_client_idle_count(), 1);
	for (i = 0; i < 5000 && http_client_idle_count() > 0; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ck_assert_uint_eq(http_client_idle_count(), 0);

	memset(&o, 0, sizeof o);
	start_keepalive("GET", "/ok", &o, 0);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_int_ne(peer_port, first);
}
END_TEST

/*
 * A peer that answers the first request of each connection and closes
 * on the second without a byte: how a server that closed an idle
 * connection looks to a request already sent on it.
 */
static int			 cut_conns;
static struct bufferevent	*cut_bevs[8];

static void
cut_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer	*in = bufferevent_get_input(bev);
	struct evbuffer_ptr p;
	intptr_t	 n = (intptr_t)arg;
	int		 i;

	for (;;) {
		p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		if (p.pos == -1)
			return;
		evbuffer_drain(in, p.pos + 4);
		if (n++ == 0) {
			bufferevent_setcb(bev, cut_read_cb, NULL, NULL,
			    (void *)n);
			evbuffer_add_printf(bufferevent_get_output(bev),
			    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
			continue;
		}
		for (i = 0; i < cut_conns; i++) {
			if (cut_bevs[i] == bev)
				cut_bevs[i] = NULL;
		}
		bufferevent_free(bev);
		return;
	}
}

static void
cut_accept_cb(evutil_socket_t fd, short events, void *arg)
{
	struct bufferevent	*bev;
	int			 c;

	if ((c = accept(fd, NULL, NULL)) == -1 || cut_conns == 8)
		return;
	evutil_make_socket_nonblocking(c);
	bev = bufferevent_socket_new(base, c, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, cut_read_cb, NULL, NULL, (void *)0);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	cut_bevs[cut_conns++] = bev;
}

START_TEST(test_keepalive_resend_idempotent)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;
	struct event			*ev;
	int				 saved = port, i;

	cut_conns = 0;
	ev = raw_listen_cb(cut_accept_cb);
	event_add(ev, NULL);
	port = raw_port;

	start_keepalive("GET", "/a", &o, 0);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_int_eq(cut_conns, 1);

	/* Cut on the reused connection: a GET goes out again, once. */
	memset(&o, 0, sizeof o);
	start_keepalive("GET", "/b", &o, 0);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	ck_assert_str_eq(o.error, "");
	ck_assert_int_eq(cut_conns, 2);

	/* A POST does not: the server may have acted on it. */
	memset(&o, 0, sizeof o);
	memset(&r, 0, sizeof r);
	r.keepalive = 1;
	r.body = "x";
	r.bodylen = 1;
	start("POST", "/c", &o, &r);
	wait_done(&o);
	ck_assert_int_eq(o.status, 0);
	ck_assert_str_ne(o.error, "");
	ck_assert_int_eq(cut_conns, 2);
	port = saved;

	http_client_shutdown();
	for (i = 0; i < cut_conns; i++) {
		if (cut_bevs[i] != NULL)
			bufferevent_free(cut_bevs[i]);
	}
	raw_close(ev);
}
END_TEST

/* PATCH and OPTIONS are methods too; a PATCH's body has its length. */
START_TEST(test_methods)
{
	struct outcome			 o = { 0 };
	struct http_client_request	 r;

	memset(&r, 0, sizeof r);
	r.body = "a=b";
	r.bodylen = 3;
	r.keepalive = 1;
	start("PATCH", "/echo?q=1", &o, &r);
	wait_done(&o);
	ck_assert_int_eq(o.status, 201);
	o.body[o.len] = '\0';
	ck_assert_str_eq(o.body, "PATCH - a=b");
	memset(&o, 0, sizeof o);
	start("PATCH", "/ok", &o, NULL);	/* the same connection, whole */
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
	memset(&o, 0, sizeof o);
	start("OPTIONS", "/ok", &o, NULL);
	wait_done(&o);
	ck_assert_int_eq(o.status, 200);
}
END_TEST

static Suite *
http_client_suite(void)
{
	Suite	*s = suite_create("http_client");
	TCase	*tc;

	tc = tcase_create("requests");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_get);
	tcase_add_test(tc, test_post);
	tcase_add_test(tc, test_body_bound);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_bad_url);
	tcase_add_test(tc, test_chunks);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_shutdown);
	tcase_add_test(tc, test_chunk_announced_too_large);
	tcase_add_test(tc, test_length_announced_too_large);
	tcase_add_test(tc, test_endless_line_held_at_the_window);
	tcase_add_test(tc, test_idle);
	tcase_add_test(tc, test_keepalive_reuse);
	tcase_add_test(tc, test_keepalive_not_after_error_or_close);
	tcase_add_test(tc, test_keepalive_server_closes_idle);
	tcase_add_test(tc, test_keepalive_resend_idempotent);
	tcase_add_test(tc, test_methods);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(http_client_suite)
