/*
 * Unit tests for redis_link.c against a fake server on the loop (a
 * listener on 127.0.0.1 or a unix socket, whose answers each test writes
 * byte by byte): replies go to the oldest command waiting, a reply nothing
 * waits for is a push, the turn's commands and what the flush hook adds
 * leave together, a lost link tells its owner before the commands still
 * waiting hear NULL, a link closed from its own callback is freed after
 * it, a protocol error or a connection closed before any answer says so,
 * and a TLS link waiting for a handshake says it may be a plaintext port.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <hiredis/hiredis.h>

#include "unit.h"

#include "redis_link.h"

#define WAIT_MS	3000

static struct event_base	*base;

/* The fake server: one accepted connection at a time. */
static struct evconnlistener	*listener;
static struct bufferevent	*peer;		/* the accepted connection */
static struct evbuffer		*got;		/* what the link sent */
static int			 port;
static char			 sockpath[108];

static void
peer_read_cb(struct bufferevent *bev, void *arg)
{
	evbuffer_add_buffer(got, bufferevent_get_input(bev));
}

static void
peer_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		bufferevent_free(peer);
		peer = NULL;
	}
}

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	ck_assert_ptr_null(peer);
	peer = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(peer, peer_read_cb, NULL, peer_event_cb, NULL);
	bufferevent_enable(peer, EV_READ | EV_WRITE);
}

static void
server_tcp(void)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listener = evconnlistener_new_bind(base, accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
	    (struct sockaddr *)&sin, sizeof sin);
	ck_assert_ptr_nonnull(listener);
	getsockname(evconnlistener_get_fd(listener), (struct sockaddr *)&sin,
	    &len);
	port = ntohs(sin.sin_port);
}

static void
server_unix(void)
{
	struct sockaddr_un	sun;

	snprintf(sockpath, sizeof sockpath, "/tmp/mcpd-link-%d.sock",
	    (int)getpid());
	unlink(sockpath);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strlcpy(sun.sun_path, sockpath, sizeof sun.sun_path);
	listener = evconnlistener_new_bind(base, accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE, 16, (struct sockaddr *)&sun, sizeof sun);
	ck_assert_ptr_nonnull(listener);
}

static void
setup(void)
{
	base = event_base_new();
	got = evbuffer_new();
	peer = NULL;
	sockpath[0] = '\0';
}

static void
teardown(void)
{
	if (peer != NULL)
		bufferevent_free(peer);
	peer = NULL;
	if (listener != NULL)
		evconnlistener_free(listener);
	listener = NULL;
	if (sockpath[0] != '\0')
		unlink(sockpath);
	evbuffer_free(got);
	unit_turns(base, 5);
	event_base_free(base);
}

/* Turns the loop until cond() or WAIT_MS. */
static int
until(int (*cond)(void))
{
	struct timeval	tv = { 0, 10000 };
	int		i;

	for (i = 0; i < WAIT_MS / 10 && !cond(); i++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	return (cond());
}

/* What the owner hears. */
static struct {
	int		 ups;
	int		 downs;
	char		 why[512];
	int		 pushes;
	char		 push[64];
	int		 flushes;
	int		 order;		/* of the last callback */
	int		 down_at;
	struct redis_link *link;
	int		 flush_sends;	/* commands the hook sends */
} ev;

struct reply {
	int	 calls;
	int	 null;
	int	 at;
	char	 text[64];
	int	 close_link;		/* close the link from the callback */
};

static void
reply_cb(struct redis_link *l, struct redisReply *r, void *arg)
{
	struct reply	*rep = arg;

	rep->calls++;
	rep->at = ++ev.order;
	if (r == NULL)
		rep->null = 1;
	else if (r->type == REDIS_REPLY_STRING ||
	    r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR)
		snprintf(rep->text, sizeof rep->text, "%s", r->str);
	if (rep->close_link)
		redis_link_close(l);
}

static void
up_cb(struct redis_link *l, void *arg)
{
	ev.ups++;
}

static void
down_cb(struct redis_link *l, const char *why, void *arg)
{
	ev.downs++;
	ev.down_at = ++ev.order;
	snprintf(ev.why, sizeof ev.why, "%s", why);
	ev.link = NULL;
}

static void
push_cb(struct redis_link *l, struct redisReply *r, void *arg)
{
	ev.pushes++;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	    r->element[2]->type == REDIS_REPLY_STRING)
		snprintf(ev.push, sizeof ev.push, "%s", r->element[2]->str);
}

static struct reply	hooked;

static void
flush_cb(struct redis_link *l, void *arg)
{
	ev.flushes++;
	if (ev.flush_sends-- > 0)
		redis_link_command(l, reply_cb, &hooked, "WAIT", "1", "0",
		    NULL);
}

static const struct redis_link_events events = {
	.up = up_cb,
	.down = down_cb,
	.push = push_cb,
	.flush = flush_cb,
};

static struct redis_link *
open_tcp(int p, int tls)
{
	struct redis_link_addr	 a = { "127.0.0.1", p, NULL, tls };
	struct redis_link_tls_conf tc = { NULL, NULL, NULL, NULL, 0 };
	struct redis_link_tls	*t = NULL;
	struct redis_link	*l;
	char			*cause = NULL;

	memset(&ev, 0, sizeof ev);
	if (tls)
		ck_assert_ptr_nonnull(t = redis_link_tls_new(&tc, &cause));
	l = redis_link_open(base, &a, t, &events, NULL, &cause);
	ck_assert_msg(l != NULL, "open: %s", cause);
	redis_link_tls_free(t);		/* the link keeps what it needs */
	ev.link = l;
	return (l);
}

static int	cond_peer(void) { return (peer != NULL); }
static int	cond_up(void) { return (ev.ups > 0); }
static int	cond_down(void) { return (ev.downs > 0); }
static size_t	want_bytes;
static int	cond_got(void) { return (evbuffer_get_length(got) >= want_bytes); }
static struct reply *waited;
static int	cond_reply(void) { return (waited->calls > 0); }
static int	want_pushes;
static int	cond_push(void) { return (ev.pushes >= want_pushes); }

static void
peer_send(const char *s)
{
	ck_assert_ptr_nonnull(peer);
	bufferevent_write(peer, s, strlen(s));
}

/* What the link wrote, as text (the test's commands are ASCII). */
static char *
sent(void)
{
	size_t	 n = evbuffer_get_length(got);
	char	*s = xmalloc(n + 1);

	evbuffer_copyout(got, s, n);
	s[n] = '\0';
	return (s);
}

#define PING	"*1\r\n$4\r\nPING\r\n"
#define GETX	"*2\r\n$3\r\nGET\r\n$1\r\nx\r\n"

START_TEST(test_fifo_and_push)
{
	struct redis_link	*l;
	struct reply		 r1, r2;
	char			*s;

	server_tcp();
	l = open_tcp(port, 0);
	memset(&r1, 0, sizeof r1);
	memset(&r2, 0, sizeof r2);
	/* Sent before the connect is done: written once it is. */
	ck_assert_int_eq(redis_link_send(l, PING, strlen(PING), reply_cb, &r1),
	    0);
	ck_assert_int_eq(redis_link_command(l, reply_cb, &r2, "GET", "x",
	    NULL), 0);
	ck_assert_int_eq(r1.calls, 0);
	ck_assert_uint_eq(redis_link_pending(l), 2);
	ck_assert(until(cond_up));
	ck_assert(redis_link_is_up(l));
	want_bytes = strlen(PING GETX);
	ck_assert(until(cond_got));
	s = sent();
	ck_assert_str_eq(s, PING GETX);
	free(s);
	/* Both replies and a message, in one segment, then one more. */
	peer_send("+PONG\r\n$1\r\nv\r\n*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n"
	    "$2\r\nm1\r\n");
	waited = &r2;
	ck_assert(until(cond_reply));
	ck_assert_int_eq(r1.calls, 1);
	ck_assert_str_eq(r1.text, "PONG");
	ck_assert_str_eq(r2.text, "v");
	ck_assert_int_lt(r1.at, r2.at);
	want_pushes = 1;
	ck_assert(until(cond_push));
	ck_assert_str_eq(ev.push, "m1");
	/* A reply split across reads is one reply. */
	peer_send("*3\r\n$7\r\nmes");
	unit_turns(base, 3);
	peer_send("sage\r\n$1\r\nc\r\n$2\r\nm2\r\n");
	want_pushes = 2;
	ck_assert(until(cond_push));
	ck_assert_str_eq(ev.push, "m2");
	ck_assert_uint_eq(redis_link_pending(l), 0);
	ck_assert_ptr_null(redis_link_tls_version(l));
	redis_link_close(l);
	ck_assert_int_eq(ev.downs, 0);		/* closed, not lost */
}
END_TEST

/* The hook's commands go with the turn's; it runs once per turn. */
START_TEST(test_flush_hook)
{
	struct redis_link	*l;
	struct reply		 r1;
	char			*s;

	server_tcp();
	l = open_tcp(port, 0);
	ck_assert(until(cond_up));
	memset(&r1, 0, sizeof r1);
	memset(&hooked, 0, sizeof hooked);
	ev.flush_sends = 1;
	ev.flushes = 0;
	redis_link_send(l, PING, strlen(PING), reply_cb, &r1);
	redis_link_send(l, GETX, strlen(GETX), reply_cb, &r1);
#define WAIT	"*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$1\r\n0\r\n"
	want_bytes = strlen(PING GETX WAIT);
	ck_assert(until(cond_peer));
	ck_assert(until(cond_got));
	s = sent();
	ck_assert_str_eq(s, PING GETX WAIT);
	free(s);
	ck_assert_int_eq(ev.flushes, 1);
	ck_assert_uint_eq(redis_link_pending(l), 3);
	/* A command with no callback waits for nothing. */
	redis_link_command(l, NULL, NULL, "SUBSCRIBE", "c", NULL);
	ck_assert_uint_eq(redis_link_pending(l), 3);
	redis_link_close(l);
	/* Every callback owed heard NULL, at once. */
	ck_assert_int_eq(r1.calls, 2);
	ck_assert(r1.null);
	ck_assert_int_eq(hooked.calls, 1);
	ck_assert(hooked.null);
}
END_TEST

/*
 * The server goes: the owner hears it first, then each command still
 * waiting hears NULL, oldest first; nothing is called again.
 */
START_TEST(test_lost)
{
	struct redis_link	*l;
	struct reply		 r1, r2;

	server_tcp();
	l = open_tcp(port, 0);
	memset(&r1, 0, sizeof r1);
	memset(&r2, 0, sizeof r2);
	redis_link_send(l, PING, strlen(PING), reply_cb, &r1);
	redis_link_send(l, PING, strlen(PING), reply_cb, &r2);
	want_bytes = 2 * strlen(PING);
	ck_assert(until(cond_peer));
	ck_assert(until(cond_got));
	peer_send("+PONG\r\n");
	waited = &r1;
	ck_assert(until(cond_reply));
	bufferevent_free(peer);
	peer = NULL;
	ck_assert(until(cond_down));
	ck_assert_msg(strstr(ev.why, "closed by 127.0.0.1:") != NULL, "%s",
	    ev.why);
	ck_assert_int_eq(r2.calls, 1);
	ck_assert(r2.null);
	ck_assert_int_lt(ev.down_at, r2.at);
	ck_assert_int_eq(r1.calls, 1);
	ck_assert(!r1.null);
	(void)l;	/* freed by the link itself */
	unit_turns(base, 5);
	ck_assert_int_eq(r2.calls, 1);
}
END_TEST

/* Closed from its own callback: the rest hear NULL; sends are refused. */
START_TEST(test_close_in_callback)
{
	struct redis_link	*l;
	struct reply		 r1, r2, r3;

	server_tcp();
	l = open_tcp(port, 0);
	memset(&r1, 0, sizeof r1);
	memset(&r2, 0, sizeof r2);
	memset(&r3, 0, sizeof r3);
	r1.close_link = 1;
	redis_link_send(l, PING, strlen(PING), reply_cb, &r1);
	redis_link_send(l, PING, strlen(PING), reply_cb, &r2);
	redis_link_send(l, PING, strlen(PING), reply_cb, &r3);
	want_bytes = 3 * strlen(PING);
	ck_assert(until(cond_peer));
	ck_assert(until(cond_got));
	/* All three answered in one segment: the second and third are
	 * read, and not handed to anyone but as NULL. */
	peer_send("+A\r\n+B\r\n+C\r\n");
	waited = &r3;
	ck_assert(until(cond_reply));
	ck_assert_str_eq(r1.text, "A");
	ck_assert(r2.null && r3.null);
	ck_assert_int_eq(r2.calls, 1);
	ck_assert_int_eq(r3.calls, 1);
	ck_assert_int_eq(ev.downs, 0);
}
END_TEST

START_TEST(test_protocol_error)
{
	struct reply	r1;

	server_tcp();
	(void)open_tcp(port, 0);
	memset(&r1, 0, sizeof r1);
	redis_link_send(ev.link, PING, strlen(PING), reply_cb, &r1);
	ck_assert(until(cond_peer));
	peer_send("!not resp\r\n");
	ck_assert(until(cond_down));
	ck_assert_msg(strstr(ev.why, "protocol error from 127.0.0.1:") !=
	    NULL, "%s", ev.why);
	ck_assert(r1.null);
}
END_TEST

/* Closed before any answer: a plaintext link to a TLS port, it may be. */
START_TEST(test_closed_before_answering)
{
	struct reply	r1;

	server_tcp();
	(void)open_tcp(port, 0);
	memset(&r1, 0, sizeof r1);
	redis_link_send(ev.link, PING, strlen(PING), reply_cb, &r1);
	ck_assert(until(cond_peer));
	want_bytes = strlen(PING);
	ck_assert(until(cond_got));
	bufferevent_free(peer);
	peer = NULL;
	ck_assert(until(cond_down));
	ck_assert_msg(strstr(ev.why, "closed the connection before answering "
	    "(a TLS port? then use rediss://)") != NULL, "%s", ev.why);
}
END_TEST

/* TLS to a server that never answers the handshake: it says so. */
START_TEST(test_tls_waiting)
{
	struct redis_link	*l;

	server_tcp();
	l = open_tcp(port, 1);
	ck_assert(until(cond_peer));
	unit_turns(base, 5);
	ck_assert(!redis_link_is_up(l));
	ck_assert_str_eq(redis_link_waiting_for(l), "TLS handshake (is it a "
	    "plaintext port? then use redis://)");
	redis_link_close(l);
}
END_TEST

START_TEST(test_unix)
{
	struct redis_link_addr	 a = { NULL, 0, NULL, 0 };
	struct redis_link	*l;
	struct reply		 r1;
	char			*cause = NULL;

	server_unix();
	a.path = sockpath;
	memset(&ev, 0, sizeof ev);
	l = redis_link_open(base, &a, NULL, &events, NULL, &cause);
	ck_assert_msg(l != NULL, "open: %s", cause);
	memset(&r1, 0, sizeof r1);
	redis_link_send(l, PING, strlen(PING), reply_cb, &r1);
	ck_assert(until(cond_peer));
	peer_send("+PONG\r\n");
	waited = &r1;
	ck_assert(until(cond_reply));
	ck_assert_str_eq(r1.text, "PONG");
	ck_assert_int_eq(ev.downs, 0);	/* no TCP keepalive on AF_UNIX */
	redis_link_close(l);
}
END_TEST

/* Nothing listens: refused at once, or said by down. */
START_TEST(test_refused)
{
	struct redis_link_addr	 a = { "127.0.0.1", 0, NULL, 0 };
	struct redis_link	*l;
	char			*cause = NULL;

	server_tcp();
	a.port = port;
	evconnlistener_free(listener);
	listener = NULL;
	memset(&ev, 0, sizeof ev);
	l = redis_link_open(base, &a, NULL, &events, NULL, &cause);
	if (l == NULL) {
		ck_assert_msg(strstr(cause, "Connection refused") != NULL, "%s",
		    cause);
		free(cause);
		return;
	}
	ck_assert_int_eq(ev.downs, 0);		/* never inside the open */
	ck_assert(until(cond_down));
	ck_assert_msg(strstr(ev.why, "Connection refused") != NULL, "%s",
	    ev.why);
}
END_TEST

/* The TLS settings' files are checked when they are made. */
START_TEST(test_tls_files)
{
	struct redis_link_tls_conf	 tc = { "/nonexistent/ca.pem", NULL,
					    NULL, NULL, 1 };
	char				*cause = NULL;

	ck_assert_ptr_null(redis_link_tls_new(&tc, &cause));
	ck_assert_msg(strstr(cause, "redis_tls_ca_file /nonexistent/ca.pem")
	    != NULL, "%s", cause);
	free(cause);
	tc.ca_file = NULL;
	tc.cert_file = "/nonexistent/c.pem";
	tc.key_file = "/nonexistent/k.pem";
	ck_assert_ptr_null(redis_link_tls_new(&tc, &cause));
	ck_assert_msg(strstr(cause, "redis_tls_cert_file") != NULL, "%s",
	    cause);
	free(cause);
}
END_TEST

static Suite *
redis_link_suite(void)
{
	Suite	*s = suite_create("redis_link");
	TCase	*tc = tcase_create("link");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_fifo_and_push);
	tcase_add_test(tc, test_flush_hook);
	tcase_add_test(tc, test_lost);
	tcase_add_test(tc, test_close_in_callback);
	tcase_add_test(tc, test_protocol_error);
	tcase_add_test(tc, test_closed_before_answering);
	tcase_add_test(tc, test_tls_waiting);
	tcase_add_test(tc, test_unix);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_tls_files);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(redis_link_suite)
