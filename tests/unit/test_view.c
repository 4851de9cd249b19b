/*
 * Unit tests for view.c, in process: an evhttp server on 127.0.0.1 (port
 * 0) in the test's own event_base, on the memory event log, and a plain
 * socket client reading the bytes. The server's handler only keeps the
 * request; the test opens the view on it with the calls transport.c makes
 * (view_open for a new request stream or the standalone stream,
 * view_resume for Last-Event-ID), so what is checked is view.c's wire:
 *
 * - the head, the priming event, entries in order with their ids, the end
 *   of the response, and the connection handed back for the next request;
 * - a resume: 200 and the entries after the cursor, or 410 with the
 *   reason, or 404 when the session is closed meanwhile;
 * - the terminal event of a view that fell behind retention;
 * - the high watermark: a client that does not read stops the view (the
 *   entries stay in the log), and once it reads, the view pulls them from
 *   the log as the connection drains;
 * - takeover: a second view of a stream cuts the first;
 * - both revisions' SSE responses (a view, a stateless response.c) begin
 *   in reply.c alike: their head, and TCP_NODELAY on their socket.
 *
 * Nothing sleeps: each wait runs loop turns (never blocking) until the
 * bytes it awaits have arrived, within a bound of turns. Loopback delivers
 * what the server writes before its send() returns.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include <cjson/cJSON.h>

#include "unit.h"
#include "world.h"

#include "conf.h"
#include "cursor.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "metrics.h"
#include "reply.h"
#include "response.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "view.h"

#define V_NEW		"2025-11-25"
#define V_OLD		"2025-03-26"
#define MAX_TURNS	20000
/* The most a test client keeps of what it receives. */
#define CLIENT_MAX	(4 * 1024 * 1024)

static struct evhttp		*http;
static int			 port;
/* The request the server received last, until the test takes it. */
static struct evhttp_request	*received;

static void
http_cb(struct evhttp_request *req, void *arg)
{
	ck_assert_ptr_null(received);
	received = req;
}

static void
setup(void)
{
	world_setup(NULL);
	memset(&metrics, 0, sizeof metrics);
}

/* The log, the session layer and the HTTP server, on conf as set. */
static void
start(void)
{
	struct evhttp_bound_socket	*bound;
	struct sockaddr_in		 sin;
	socklen_t			 len = sizeof sin;

	world_start();
	http = evhttp_new(base);
	ck_assert_ptr_nonnull(http);
	evhttp_set_gencb(http, http_cb, NULL);
	bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	ck_assert_ptr_nonnull(bound);
	/* As server_bind does: every connection with Nagle off. */
	ck_assert_int_eq(reply_listener(evhttp_bound_socket_get_fd(bound)), 0);
	ck_assert_int_eq(getsockname(evhttp_bound_socket_get_fd(bound),
	    (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
}

static void
teardown(void)
{
	if (el != NULL) {
		view_shutdown();	/* in server_run's order */
		world_stop();
		ck_assert_uint_eq(view_count(), 0);
		evhttp_free(http);
		http = NULL;
	}
	received = NULL;
	world_free();
}

static void
stored_cb(struct session *s, int status, void *arg)
{
	*(int *)arg = status == EVENTLOG_OK ? 1 : -1;
}

/* A session whose record (and standalone stream) is in the log. */
static struct session *
create(const char *version)
{
	struct session	*s;
	int		 done = 0, n;

	s = session_create(version, NULL, NULL, NULL, stored_cb, &done);
	ck_assert_msg(s != NULL, "session_create refused");
	for (n = 0; done == 0 && n < MAX_TURNS; n++)
		unit_turns(base, 1);
	ck_assert_int_eq(done, 1);
	return (s);
}

static void
count_cb(int ok, void *arg)
{
	ck_assert_int_eq(ok, 1);
	(*(int *)arg)++;
}

/* Appends and waits until the log has committed it. */
static void
append(struct stream *st, const char *data, int final)
{
	int	done = 0, n;

	stream_append(st, data, strlen(data), final, count_cb, &done);
	for (n = 0; done == 0 && n < MAX_TURNS; n++)
		unit_turns(base, 1);
	ck_assert_int_eq(done, 1);
}

/* ---------------------------------------------------------------------
 * The client: a nonblocking socket, and the response it is reading.
 */

struct client {
	int		 fd;
	char		*raw;		/* received, not consumed */
	size_t		 rawlen;
	int		 eof;

	size_t		 headlen;	/* 0 until the head is complete */
	int		 status;
	long long	 clen;		/* Content-Length; -1: chunked */
	size_t		 pos;		/* raw bytes of this response read */
	char		*body;		/* decoded, NUL-terminated */
	size_t		 bodylen;
	int		 ended;		/* the body is complete */
};

static void
client_reset(struct client *c)
{
	c->headlen = 0;
	c->status = 0;
	c->clen = -1;
	c->pos = 0;
	c->bodylen = 0;
	c->body[0] = '\0';
	c->ended = 0;
}

/* rcvbuf > 0 shrinks the client's receive buffer (before connecting). */
static struct client *
client_connect(int rcvbuf)
{
	struct client		*c;
	struct sockaddr_in	 sin;

	c = calloc(1, sizeof *c);
	ck_assert_ptr_nonnull(c);
	c->raw = malloc(CLIENT_MAX);
	c->body = malloc(CLIENT_MAX + 1);
	ck_assert(c->raw != NULL && c->body != NULL);
	client_reset(c);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(c->fd, 0);
	if (rcvbuf > 0)
		ck_assert_int_eq(setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF,
		    &rcvbuf, sizeof rcvbuf), 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* The kernel completes the handshake; the loop accepts later. */
	ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&sin, sizeof sin),
	    0);
	ck_assert_int_eq(fcntl(c->fd, F_SETFL, O_NONBLOCK), 0);
	return (c);
}

static void
client_free(struct client *c)
{
	if (c->fd != -1)
		close(c->fd);
	free(c->raw);
	free(c->body);
	free(c);
}

/* Sends a GET for the endpoint; returns the request the server got. */
static struct evhttp_request *
client_get(struct client *c)
{
	static const char	 get[] = "GET /mcp HTTP/1.1\r\n"
				    "Host: 127.0.0.1\r\n"
				    "Accept: text/event-stream\r\n\r\n";
	struct evhttp_request	*req;
	int			 n;

	ck_assert_int_eq(send(c->fd, get, sizeof get - 1, MSG_NOSIGNAL),
	    (int)(sizeof get - 1));
	for (n = 0; received == NULL && n < MAX_TURNS; n++)
		unit_turns(base, 1);
	ck_assert_msg(received != NULL, "the server got no request");
	req = received;
	received = NULL;
	return (req);
}

/* The value of header name in the response's head, or NULL. */
static const char *
client_header(struct client *c, const char *name)
{
	static char	 value[256];
	const char	*line, *end, *eol;
	size_t		 n = strlen(name), len;

	end = c->raw + c->headlen;
	line = memmem(c->raw, c->headlen, "\r\n", 2) + 2;
	for (; line < end; line = eol + 2) {
		eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		if ((size_t)(eol - line) > n + 1 &&
		    strncasecmp(line, name, n) == 0 && line[n] == ':') {
			line += n + 1;
			while (*line == ' ')
				line++;
			len = (size_t)(eol - line);
			ck_assert_uint_lt(len, sizeof value);
			memcpy(value, line, len);
			value[len] = '\0';
			return (value);
		}
	}
	return (NULL);
}

static void
client_body_add(struct client *c, const char *p, size_t len)
{
	ck_assert_uint_le(c->bodylen + len, CLIENT_MAX);
	memcpy(c->body + c->bodylen, p, len);
	c->bodylen += len;
	c->body[c->bodylen] = '\0';
}

/* Reads the response's head and as much of its body as has arrived. */
static void
client_parse(struct client *c)
{
	const char	*p, *eol, *v;
	char		*end;
	size_t		 size, avail;

	if (c->headlen == 0) {
		if ((p = memmem(c->raw, c->rawlen, "\r\n\r\n", 4)) == NULL)
			return;
		c->headlen = (size_t)(p - c->raw) + 4;
		ck_assert_int_eq(sscanf(c->raw, "HTTP/1.1 %d", &c->status),
		    1);
		if ((v = client_header(c, "Content-Length")) != NULL)
			c->clen = strtoll(v, NULL, 10);
		else if (c->status == 204)
			c->clen = 0;
		else {
			v = client_header(c, "Transfer-Encoding");
			ck_assert_msg(v != NULL && strcmp(v, "chunked") == 0,
			    "a response neither chunked nor with a length");
		}
		c->pos = c->headlen;
	}
	while (!c->ended) {
		avail = c->rawlen - c->pos;
		p = c->raw + c->pos;
		if (c->clen >= 0) {
			if (avail > (size_t)c->clen - c->bodylen)
				avail = (size_t)c->clen - c->bodylen;
			client_body_add(c, p, avail);
			c->pos += avail;
			c->ended = c->bodylen == (size_t)c->clen;
			return;
		}
		if ((eol = memmem(p, avail, "\r\n", 2)) == NULL)
			return;
		size = strtoul(p, &end, 16);
		ck_assert_msg(end > p && end == eol, "a bad chunk size line");
		if (avail - (size_t)(eol + 2 - p) < size + 2)
			return;		/* not all there yet */
		ck_assert_int_eq(memcmp(eol + 2 + size, "\r\n", 2), 0);
		client_body_add(c, eol + 2, size);
		c->pos += (size_t)(eol + 2 - p) + size + 2;
		c->ended = size == 0;
	}
}

/* Takes what the socket holds, without waiting. */
static void
client_read(struct client *c)
{
	ssize_t	n;

	while (!c->eof) {
		ck_assert_uint_lt(c->rawlen, CLIENT_MAX);
		n = read(c->fd, c->raw + c->rawlen, CLIENT_MAX - c->rawlen);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			c->eof = 1;
		if (n <= 0)
			break;
		c->rawlen += (size_t)n;
	}
	client_parse(c);
}

/* Done with the response read: the next one on the connection follows. */
static void
client_next(struct client *c)
{
	ck_assert(c->ended);
	memmove(c->raw, c->raw + c->pos, c->rawlen - c->pos);
	c->rawlen -= c->pos;
	client_reset(c);
	client_parse(c);
}

/* At most the last 300 bytes of s: a failure message Check can carry. */
static const char *
tail(const char *s)
{
	size_t	len = strlen(s);

	return (len > 300 ? s + len - 300 : s);
}

#define CLIENT_AWAIT(c, cond, what) do {				\
	int	 n_;							\
									\
	for (n_ = 0; n_ < MAX_TURNS; n_++) {				\
		client_read(c);						\
		if (cond)						\
			break;						\
		unit_turns(base, 1);							\
	}								\
	ck_assert_msg((cond), "no %s after %d turns; body so far "	\
	    "(%zu bytes) ends \"%s\"", tail(what), MAX_TURNS,		\
	    (c)->bodylen, tail((c)->body));				\
} while (0)

static void
await_head(struct client *c)
{
	CLIENT_AWAIT(c, c->headlen > 0, "response head");
}

static void
await_body(struct client *c, const char *want)
{
	CLIENT_AWAIT(c, memmem(c->body, c->bodylen, want, strlen(want)) !=
	    NULL, want);
}

static void
await_end(struct client *c)
{
	CLIENT_AWAIT(c, c->ended, "end of the response");
}

static void
await_eof(struct client *c)
{
	CLIENT_AWAIT(c, c->eof, "end of the connection");
}

static void
expect_body(struct client *c, const char *want)
{
	size_t	i;

	for (i = 0; i < c->bodylen && c->body[i] == want[i]; i++)
		;
	ck_assert_msg(c->bodylen == strlen(want) && i == c->bodylen,
	    "body (%zu bytes, want %zu) differs at byte %zu: \"%.200s\", "
	    "want \"%.200s\"", c->bodylen, strlen(want), i, c->body + i,
	    want + i);
}

/* The body is a JSON-RPC error with code; returns its data, or NULL. */
static cJSON *
expect_rpc_error(struct client *c, int code, cJSON **json)
{
	cJSON	*error;

	ck_assert_str_eq(client_header(c, "Content-Type"), "application/json");
	*json = cJSON_Parse(c->body);
	ck_assert_msg(*json != NULL, "not JSON: %s", c->body);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(*json, "id")));
	error = cJSON_GetObjectItem(*json, "error");
	ck_assert_ptr_nonnull(error);
	ck_assert_int_eq(cJSON_GetObjectItem(error, "code")->valueint, code);
	return (cJSON_GetObjectItem(error, "data"));
}

static const char *
data_string(cJSON *data, const char *name)
{
	cJSON	*item = cJSON_GetObjectItem(data, name);

	return (cJSON_IsString(item) ? item->valuestring : NULL);
}

/* The priming event of stream k at entry n (with the default retry). */
static const char *
priming(uint64_t k, uint64_t n)
{
	static char	buf[128];
	char		id[CURSOR_BUFSIZE];

	cursor_format(id, sizeof id, k, n);
	snprintf(buf, sizeof buf, "id: %s\nretry: 1000\ndata:\n\n", id);
	return (buf);
}

/* ---------------------------------------------------------------------
 * A POST's response: a request stream shown from its creation.
 */

/*
 * As transport_stream_created_cb opens it: the head, the priming event,
 * each entry with its id (a payload's lines as data fields), the end of
 * the response when the stream ends; and the connection is the client's
 * again, for its next request (here one answered 503 + Retry-After).
 */
START_TEST(test_request_stream)
{
	struct session		*s;
	struct stream		*st;
	struct client		*c;
	struct evhttp_request	*req;
	struct evbuffer		*want;
	cJSON			*json;
	char			 id[CURSOR_BUFSIZE];
	uint64_t		 k;
	int			 i;

	start();
	s = create(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	c = client_connect(0);
	req = client_get(c);
	view_open(req, s, k, stream_head(st) + 1, (int64_t)stream_head(st), 1);
	ck_assert_uint_eq(view_count(), 1);
	await_head(c);
	ck_assert_int_eq(c->status, 200);
	ck_assert_str_eq(client_header(c, "Content-Type"),
	    "text/event-stream");
	ck_assert_str_eq(client_header(c, "Cache-Control"), "no-cache");
	ck_assert_str_eq(client_header(c, "X-Accel-Buffering"), "no");
	ck_assert_str_eq(client_header(c, "Mcp-Session-Id"), session_id(s));
	await_body(c, priming(k, 0));
	want = evbuffer_new();
	evbuffer_add(want, priming(k, 0), strlen(priming(k, 0)));

	append(st, "{\"one\":1}", 0);
	append(st, "two\nlines", 0);
	stream_append(st, "{\"three\":3}", 11, 1, NULL, NULL);
	stream_close(st);
	await_end(c);
	for (i = 1; i <= 3; i++) {
		cursor_format(id, sizeof id, k, (uint64_t)i);
		evbuffer_add_printf(want, "id: %s\n%s\n\n", id, i == 1 ?
		    "data: {\"one\":1}" : i == 2 ? "data: two\ndata: lines" :
		    "data: {\"three\":3}");
	}
	evbuffer_add(want, "", 1);
	expect_body(c, (const char *)evbuffer_pullup(want, -1));
	evbuffer_free(want);
	ck_assert_uint_eq(metrics.events_written, 3);
	ck_assert_uint_eq(view_count(), 0);

	client_next(c);
	req = client_get(c);
	reply_unavailable(req, 7, "Busy, retry later");
	await_end(c);
	ck_assert(!c->eof);
	ck_assert_int_eq(c->status, 503);
	ck_assert_str_eq(client_header(c, "Retry-After"), "7");
	ck_assert_ptr_null(expect_rpc_error(c, JSONRPC_UNAVAILABLE, &json));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(json,
	    "error"), "message")->valuestring, "Busy, retry later");
	cJSON_Delete(json);
	client_free(c);
}
END_TEST

/* Whether the server's socket of req's connection has TCP_NODELAY set. */
static int
nodelay(struct evhttp_request *req)
{
	int		on = 0;
	socklen_t	len = sizeof on;

	ck_assert_int_eq(getsockopt(bufferevent_getfd(
	    evhttp_connection_get_bufferevent(evhttp_request_get_connection(
	    req))), IPPROTO_TCP, TCP_NODELAY, &on, &len), 0);
	return (on);
}

static void
gone_cb(void *arg)
{
	ck_abort_msg("the client did not leave");
}

/*
 * An SSE response of either revision begins in reply.c: a session's view
 * and a stateless request's response (response.c) both send the SSE head
 * on a connection with Nagle off (small events, each at once: no
 * delayed-ACK stall), which it has from its listener (reply_listener).
 */
START_TEST(test_sse_start_both_revisions)
{
	struct session		*s;
	struct stream		*st;
	struct client		*c;
	struct evhttp_request	*req;
	struct response		*r;
	cJSON			*msg;

	start();
	s = create(V_NEW);
	st = world_request_stream(s);
	c = client_connect(0);
	req = client_get(c);
	ck_assert(nodelay(req));
	view_open(req, s, stream_id(st), stream_head(st) + 1,
	    (int64_t)stream_head(st), 1);
	await_head(c);
	ck_assert_int_eq(c->status, 200);
	ck_assert_str_eq(client_header(c, "Content-Type"),
	    "text/event-stream");
	ck_assert(nodelay(req));
	stream_append(st, "{}", 2, 1, NULL, NULL);
	stream_close(st);
	await_end(c);
	client_free(c);

	c = client_connect(0);
	req = client_get(c);
	ck_assert(nodelay(req));
	r = response_new(req, gone_cb, NULL);
	ck_assert_int_eq(response_state(r), RESPONSE_WAITING);
	msg = jsonrpc_notification("notifications/progress", NULL);
	response_write(r, msg);
	cJSON_Delete(msg);
	ck_assert_int_eq(response_state(r), RESPONSE_STREAMING);
	await_head(c);
	ck_assert_int_eq(c->status, 200);
	ck_assert_str_eq(client_header(c, "Content-Type"),
	    "text/event-stream");
	ck_assert_str_eq(client_header(c, "X-Accel-Buffering"), "no");
	ck_assert(nodelay(req));
	await_body(c, "event: message\ndata: {\"jsonrpc\":\"2.0\","
	    "\"method\":\"notifications/progress\"}\n\n");
	response_end(r);
	ck_assert_int_eq(response_state(r), RESPONSE_DONE);
	await_end(c);
	ck_assert(!c->eof);
	response_free(r);
	client_free(c);
}
END_TEST

/* A client before 2025-11-25 gets no priming event and no retry:. */
START_TEST(test_no_priming_before_2025_11_25)
{
	struct session		*s;
	struct stream		*st;
	struct client		*c;
	struct evhttp_request	*req;
	char			 want[128], id[CURSOR_BUFSIZE];
	uint64_t		 k;

	start();
	s = create(V_OLD);
	st = world_request_stream(s);
	k = stream_id(st);
	c = client_connect(0);
	req = client_get(c);
	view_open(req, s, k, stream_head(st) + 1, (int64_t)stream_head(st), 1);
	stream_append(st, "{}", 2, 1, NULL, NULL);
	stream_close(st);
	await_end(c);
	cursor_format(id, sizeof id, k, 1);
	snprintf(want, sizeof want, "id: %s\ndata: {}\n\n", id);
	expect_body(c, want);
	client_free(c);
}
END_TEST

/* ---------------------------------------------------------------------
 * Resumes.
 */

/*
 * From K-1 of an ended stream: 200, a bare retry: (the client holds a
 * cursor already), entries 2 and 3, the end.
 */
START_TEST(test_resume_shows_what_follows)
{
	struct session		*s;
	struct stream		*st;
	struct client		*c;
	struct cursor		 from;
	char			 want[256], id2[CURSOR_BUFSIZE];
	char			 id3[CURSOR_BUFSIZE];

	start();
	s = create(V_NEW);
	st = world_request_stream(s);
	from.stream = stream_id(st);
	from.seq = 1;
	append(st, "one", 0);
	append(st, "two", 0);
	append(st, "three", 1);
	stream_close(st);
	unit_turns(base, 10);

	c = client_connect(0);
	view_resume(client_get(c), s, &from);
	await_end(c);
	ck_assert_int_eq(c->status, 200);
	ck_assert_str_eq(client_header(c, "Content-Type"),
	    "text/event-stream");
	cursor_format(id2, sizeof id2, from.stream, 2);
	cursor_format(id3, sizeof id3, from.stream, 3);
	snprintf(want, sizeof want, "retry: 1000\n\nid: %s\ndata: two\n\n"
	    "id: %s\ndata: three\n\n", id2, id3);
	expect_body(c, want);
	client_free(c);
}
END_TEST

/* One resume refused; returns the 410's error data (in *json). */
static cJSON *
resume_refused(struct session *s, uint64_t k, uint64_t n, cJSON **json)
{
	struct client	*c;
	struct cursor	 from = { k, n };
	cJSON		*data;
	char		 id[CURSOR_BUFSIZE];

	c = client_connect(0);
	view_resume(client_get(c), s, &from);
	await_end(c);
	ck_assert_int_eq(c->status, 410);
	data = expect_rpc_error(c, JSONRPC_RESUME_FAILED, json);
	ck_assert_ptr_nonnull(data);
	cursor_format(id, sizeof id, k, n);
	ck_assert_str_eq(data_string(data, "last_event_id"), id);
	client_free(c);
	return (data);
}

/*
 * 410 with the reason and, when the stream is known, its oldest and head;
 * 404 when the session is closed while the cursor is checked. No view is
 * left behind.
 */
START_TEST(test_resume_refused)
{
	struct session	*s;
	struct stream	*st;
	struct client	*c;
	struct cursor	 from;
	cJSON		*json, *data;
	char		 id[CURSOR_BUFSIZE];
	uint64_t	 k;
	int		 i;

	conf->stream_maxlen = 3;
	conf->stream_window = 3;
	start();
	s = create(V_NEW);
	st = session_standalone(s);
	k = stream_id(st);
	for (i = 0; i < 5; i++)
		append(st, "x", 0);	/* close policy: 1 and 2 are trimmed */

	data = resume_refused(s, k, 1, &json);
	ck_assert_str_eq(data_string(data, "reason"), "trimmed");
	cursor_format(id, sizeof id, k, 3);
	ck_assert_str_eq(data_string(data, "oldest"), id);
	cursor_format(id, sizeof id, k, 5);
	ck_assert_str_eq(data_string(data, "head"), id);
	cJSON_Delete(json);

	data = resume_refused(s, k + 1, 0, &json);
	ck_assert_str_eq(data_string(data, "reason"), "unknown-stream");
	ck_assert_ptr_null(cJSON_GetObjectItem(data, "head"));
	cJSON_Delete(json);
	ck_assert_uint_eq(view_count(), 0);

	from.stream = k;
	from.seq = 5;
	c = client_connect(0);
	view_resume(client_get(c), s, &from);
	session_close(s, "closed while the cursor is checked");
	await_end(c);
	ck_assert_int_eq(c->status, 404);
	expect_rpc_error(c, JSONRPC_SESSION_NOT_FOUND, &json);
	cJSON_Delete(json);
	ck_assert_uint_eq(view_count(), 0);
	client_free(c);
}
END_TEST

/* ---------------------------------------------------------------------
 * Backpressure.
 */

/*
 * A view whose next entry is no longer retained did not keep up: it ends
 * with the terminal event, which has no id and names the last id it
 * queued, and then the response ends.
 */
START_TEST(test_terminal_event)
{
	struct session	*s;
	struct stream	*st;
	struct client	*c;
	char		 want[256], id[CURSOR_BUFSIZE];
	uint64_t	 k;
	int		 i;

	conf->stream_maxlen = 3;
	conf->stream_window = 3;
	start();
	s = create(V_NEW);
	st = session_standalone(s);
	k = stream_id(st);
	for (i = 0; i < 6; i++)
		append(st, "x", 0);
	c = client_connect(0);
	view_open(client_get(c), s, k, 1, -1, 0);
	await_end(c);
	ck_assert_int_eq(c->status, 200);
	cursor_format(id, sizeof id, k, 0);
	snprintf(want, sizeof want, "event: backpressure-disconnect\n"
	    "data: {\"last_event_id\":\"%s\",\"reason\":\"slow-consumer\"}\n"
	    "retry: 1000\n\n", id);
	expect_body(c, want);
	ck_assert_uint_eq(metrics.slow_consumers_closed, 1);
	ck_assert_uint_eq(view_count(), 0);
	client_free(c);
}
END_TEST

#define BIG_ENTRIES	200
#define BIG_SIZE	2000

static void
big_entry(char *buf, int i)
{
	int	n;

	n = snprintf(buf, BIG_SIZE + 1, "{\"i\":%d,\"pad\":\"", i);
	memset(buf + n, 'a' + i % 26, (size_t)(BIG_SIZE - n - 2));
	memcpy(buf + BIG_SIZE - 2, "\"}", 3);
}

/*
 * The high watermark, block policy: a client that does not read leaves
 * the view over the watermark, and the view stops writing while the log
 * commits every entry. Once the client reads, the connection drains and
 * the view pulls what it owes from the log: every entry arrives, in order,
 * and the response ends.
 */
START_TEST(test_watermark_pause_and_resume)
{
	struct session		*s;
	struct stream		*st;
	struct client		*c;
	struct evhttp_request	*req;
	struct evbuffer		*want;
	char			 data[BIG_SIZE + 1], id[CURSOR_BUFSIZE];
	uint64_t		 k, paused;
	int			 i, n, acked = 0, sndbuf = 4096;

	conf->sse_high_watermark = 4096;
	conf->backpressure_request = CONF_BACKPRESSURE_BLOCK;
	conf->stream_maxlen = 1000;
	conf->stream_window = 1000;
	start();
	s = create(V_NEW);
	st = world_request_stream(s);
	k = stream_id(st);
	/* Small socket buffers: the kernel must not absorb the backlog. */
	c = client_connect(4096);
	req = client_get(c);
	ck_assert_int_eq(setsockopt(bufferevent_getfd(
	    evhttp_connection_get_bufferevent(evhttp_request_get_connection(
	    req))), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
	view_open(req, s, k, stream_head(st) + 1, (int64_t)stream_head(st), 1);
	await_body(c, priming(k, 0));
	want = evbuffer_new();
	evbuffer_add(want, priming(k, 0), strlen(priming(k, 0)));

	for (i = 1; i <= BIG_ENTRIES; i++) {
		big_entry(data, i);
		stream_append(st, data, BIG_SIZE, i == BIG_ENTRIES, count_cb,
		    &acked);
		cursor_format(id, sizeof id, k, (uint64_t)i);
		evbuffer_add_printf(want, "id: %s\ndata: %s\n\n", id, data);
	}
	evbuffer_add(want, "", 1);
	for (n = 0; acked < BIG_ENTRIES && n < MAX_TURNS; n++)
		unit_turns(base, 1);
	ck_assert_int_eq(acked, BIG_ENTRIES);	/* all in the log */
	stream_close(st);
	unit_turns(base, 100);
	paused = metrics.events_written;
	ck_assert_msg(paused < BIG_ENTRIES / 2, "a client that reads nothing "
	    "was written %llu entries of %d bytes (watermark 4096)",
	    (unsigned long long)paused, BIG_SIZE);
	unit_turns(base, 1000);
	ck_assert_uint_eq(metrics.events_written, paused);
	ck_assert_uint_eq(view_count(), 1);

	await_end(c);
	expect_body(c, (const char *)evbuffer_pullup(want, -1));
	ck_assert_uint_eq(metrics.events_written, BIG_ENTRIES);
	ck_assert_uint_eq(view_count(), 0);
	evbuffer_free(want);
	client_free(c);
}
END_TEST

/* ---------------------------------------------------------------------
 * Takeover.
 */

/*
 * A resume of a stream that has a view cuts the old view's connection
 * (no end of response: it is most likely half-open); the new view shows
 * what follows.
 */
START_TEST(test_takeover)
{
	struct session	*s;
	struct stream	*st;
	struct client	*a, *b;
	struct cursor	 from;
	char		 want[128], id[CURSOR_BUFSIZE];
	uint64_t	 k;

	start();
	s = create(V_NEW);
	st = session_standalone(s);
	k = stream_id(st);
	a = client_connect(0);
	view_open(client_get(a), s, k, stream_head(st) + 1,
	    (int64_t)stream_head(st), 0);
	await_body(a, priming(k, 0));
	ck_assert_uint_eq(view_count(), 1);

	b = client_connect(0);
	from.stream = k;
	from.seq = 0;
	view_resume(client_get(b), s, &from);
	await_body(b, "retry: 1000\n\n");
	await_eof(a);
	ck_assert(!a->ended);
	expect_body(a, priming(k, 0));
	ck_assert_uint_eq(view_count(), 1);

	append(st, "{\"after\":1}", 0);
	cursor_format(id, sizeof id, k, 1);
	snprintf(want, sizeof want, "retry: 1000\n\nid: %s\ndata: "
	    "{\"after\":1}\n\n", id);
	await_body(b, want);
	expect_body(b, want);
	ck_assert(!b->ended && !b->eof);
	client_free(a);
	client_free(b);
}
END_TEST

static Suite *
view_suite(void)
{
	Suite	*s = suite_create("view");
	TCase	*tc;

	tc = tcase_create("open");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_request_stream);
	tcase_add_test(tc, test_no_priming_before_2025_11_25);
	tcase_add_test(tc, test_sse_start_both_revisions);
	suite_add_tcase(s, tc);

	tc = tcase_create("resume");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_resume_shows_what_follows);
	tcase_add_test(tc, test_resume_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("backpressure");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_terminal_event);
	tcase_add_test(tc, test_watermark_pause_and_resume);
	suite_add_tcase(s, tc);

	tc = tcase_create("takeover");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_takeover);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(view_suite)
