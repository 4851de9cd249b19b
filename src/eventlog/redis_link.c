/*
 * One connection to a Redis server (redis_link.h): the transport under
 * the redis event log, in place of hiredis's async API, which has no TLS
 * in Debian's 0.14.1, cannot be built over a socket it did not open, and
 * has no sharded pub/sub. hiredis is kept for what it does well: parsing
 * replies (redisReader).
 *
 * The socket is ours, whether TCP, unix or TLS. Its read event
 * persists; the commands of a loop turn are written once, at the turn's
 * end (flush_ev), and EV_WRITE is asked for only while connecting, for
 * a TLS handshake that needs it, or when the socket could not take
 * everything. A bufferevent (bufferevent_openssl for TLS) would add and
 * delete its write event on every turn and write on the next one, which
 * is what the hot path avoids. TLS is OpenSSL on that socket: the
 * handshake, then SSL_read until it wants more, and one SSL_write of the
 * turn's commands, made contiguous (one record, one write, for a turn of
 * up to 16 KiB).
 *
 * Replies are matched to commands by order (a ring of callbacks); a reply
 * with no command waiting is a push (pub/sub). A link that fails tells
 * its owner once (down), then every command still waiting hears NULL, as
 * hiredis does; the link is freed when no callback of it is running
 * (busy counts them), so a callback may close its own link.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "redis_link.h"
#include "xmalloc.h"

/* What one read takes from a socket. */
#define REDIS_LINK_READ		(64 * 1024)
/* TCP keepalive, as hiredis sets it: idle 15 s, then 3 probes 5 s apart. */
#define REDIS_LINK_KEEPIDLE	15
#define REDIS_LINK_KEEPINTVL	5
#define REDIS_LINK_KEEPCNT	3

enum redis_link_state {
	REDIS_LINK_CONNECTING,	/* TCP (or unix) connect in progress */
	REDIS_LINK_HANDSHAKE,	/* TLS handshake in progress */
	REDIS_LINK_UP,
	REDIS_LINK_CLOSED
};

struct redis_link_tls {
	SSL_CTX		*ctx;
	char		*server_name;
	int		 verify;
};

/* A command waiting for its reply. */
struct redis_link_cb {
	redis_link_reply_cb	 fn;
	void			*arg;
};

struct redis_link {
	struct event_base		*base;
	const struct redis_link_events	*ev;
	void				*arg;
	char				*name;		/* for error texts */
	enum redis_link_state		 state;
	int				 tcp;
	int				 answered;	/* a reply came */

	int				 fd;
	struct event			*rev;
	struct event			*wev;
	SSL				*ssl;		/* TLS */
	size_t				 ssl_retry;	/* a write to repeat */
	int				 write_wants_read;
	int				 read_wants_write;
	struct event			*flush_ev;
	struct evbuffer			*out;		/* this turn's */

	redisReader			*reader;
	struct redis_link_cb		*cbs;		/* ring */
	size_t				 cbs_head;
	size_t				 ncbs;
	size_t				 cbs_cap;

	int				 busy;		/* callbacks running */
	int				 closing;
	int				 flush_owed;	/* flush_ev is active */
	int				 taken;		/* the reply is kept */
};

static void	redis_link_flush_cb(evutil_socket_t, short, void *);

/* TLS settings. */

struct redis_link_tls *
redis_link_tls_new(const struct redis_link_tls_conf *tc, char **cause)
{
	struct redis_link_tls	*t;
	char			 err[256];

	t = xcalloc(1, sizeof *t);
	t->verify = tc->verify;
	t->server_name = tc->server_name != NULL ?
	    xstrdup(tc->server_name) : NULL;
	if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		xasprintf(cause, "TLS: cannot create a context");
		goto fail;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	/* A write repeated after WANT_WRITE may come from a moved buffer. */
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER :
	    SSL_VERIFY_NONE, NULL);
	ERR_clear_error();
	if (tc->ca_file != NULL) {
		if (SSL_CTX_load_verify_locations(t->ctx, tc->ca_file,
		    NULL) != 1) {
			ERR_error_string_n(ERR_get_error(), err, sizeof err);
			xasprintf(cause, "redis_tls_ca_file %s: %s",
			    tc->ca_file, err);
			goto fail;
		}
	} else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
		xasprintf(cause, "TLS: the system's certificate store cannot "
		    "be read");
		goto fail;
	}
	if (tc->cert_file != NULL) {
		if (SSL_CTX_use_certificate_chain_file(t->ctx,
		    tc->cert_file) != 1) {
			ERR_error_string_n(ERR_get_error(), err, sizeof err);
			xasprintf(cause, "redis_tls_cert_file %s: %s",
			    tc->cert_file, err);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(t->ctx, tc->key_file,
		    SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(t->ctx) != 1) {
			ERR_error_string_n(ERR_get_error(), err, sizeof err);
			xasprintf(cause, "redis_tls_key_file %s: %s",
			    tc->key_file, err);
			goto fail;
		}
	}
	return (t);

fail:
	ERR_clear_error();
	redis_link_tls_free(t);
	return (NULL);
}

void
redis_link_tls_free(struct redis_link_tls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->ctx);	/* links' SSL objects hold their own ref */
	free(t->server_name);
	free(t);
}

/* Whether s is an IPv4 or IPv6 address rather than a name. */
static int
redis_link_is_ip(const char *s)
{
	struct in6_addr	a6;
	struct in_addr	a4;

	return (inet_pton(AF_INET, s, &a4) == 1 ||
	    inet_pton(AF_INET6, s, &a6) == 1);
}

/*
 * The SSL object of one link: the server's certificate must name name
 * (a host name: also sent as SNI; an address: matched to its IP SANs).
 */
static SSL *
redis_link_ssl(struct redis_link_tls *t, const char *host, char **cause)
{
	const char	*name = t->server_name != NULL ? t->server_name : host;
	SSL		*ssl;

	if ((ssl = SSL_new(t->ctx)) == NULL) {
		xasprintf(cause, "TLS: cannot create a connection");
		return (NULL);
	}
	if (redis_link_is_ip(name)) {
		if (t->verify && X509_VERIFY_PARAM_set1_ip_asc(
		    SSL_get0_param(ssl), name) != 1)
			goto bad;
	} else {
		if (SSL_set_tlsext_host_name(ssl, name) != 1)
			goto bad;
		if (t->verify && SSL_set1_host(ssl, name) != 1)
			goto bad;
	}
	return (ssl);

bad:
	xasprintf(cause, "TLS: cannot check the server name \"%s\"", name);
	SSL_free(ssl);
	return (NULL);
}

/* Life and death. */

static void
redis_link_free(struct redis_link *l)
{
	if (l->rev != NULL)
		event_free(l->rev);
	if (l->wev != NULL)
		event_free(l->wev);
	if (l->flush_ev != NULL)
		event_free(l->flush_ev);
	if (l->ssl != NULL)
		SSL_free(l->ssl);
	if (l->fd != -1)
		close(l->fd);
	if (l->out != NULL)
		evbuffer_free(l->out);
	if (l->reader != NULL)
		redisReaderFree(l->reader);
	free(l->cbs);
	free(l->name);
	free(l);
}

/* Frees the link once it is closing and no callback of it runs. */
static void
redis_link_release(struct redis_link *l)
{
	if (--l->busy == 0 && l->closing)
		redis_link_free(l);
}

/* Every command still waiting hears NULL, oldest first. */
static void
redis_link_cancel(struct redis_link *l)
{
	struct redis_link_cb	cb;

	while (l->ncbs > 0) {
		cb = l->cbs[l->cbs_head];
		l->cbs_head = (l->cbs_head + 1) % l->cbs_cap;
		l->ncbs--;
		cb.fn(l, NULL, cb.arg);
	}
}

/* Stops every event: nothing of the link runs again. */
static void
redis_link_quiet(struct redis_link *l)
{
	l->state = REDIS_LINK_CLOSED;
	if (l->rev != NULL)
		event_del(l->rev);
	if (l->wev != NULL)
		event_del(l->wev);
	if (l->flush_ev != NULL)
		event_del(l->flush_ev);
}

/* The link failed by itself: tell the owner, then the waiting commands. */
static void
redis_link_fail(struct redis_link *l, const char *why)
{
	if (l->closing)
		return;
	l->closing = 1;
	redis_link_quiet(l);
	l->busy++;
	if (l->ev->down != NULL)
		l->ev->down(l, why, l->arg);
	redis_link_cancel(l);
	redis_link_release(l);
}

void
redis_link_close(struct redis_link *l)
{
	if (l == NULL || l->closing)
		return;
	l->closing = 1;
	redis_link_quiet(l);
	l->busy++;
	redis_link_cancel(l);
	redis_link_release(l);
}

/* Replies. */

static void
redis_link_push_cb(struct redis_link *l, redis_link_reply_cb fn, void *arg)
{
	size_t	i, n;
	struct redis_link_cb *cbs;

	if (l->ncbs == l->cbs_cap) {
		n = l->cbs_cap == 0 ? 64 : l->cbs_cap * 2;
		cbs = xreallocarray(NULL, n, sizeof *cbs);
		for (i = 0; i < l->ncbs; i++)
			cbs[i] = l->cbs[(l->cbs_head + i) % l->cbs_cap];
		free(l->cbs);
		l->cbs = cbs;
		l->cbs_cap = n;
		l->cbs_head = 0;
	}
	l->cbs[(l->cbs_head + l->ncbs) % l->cbs_cap] = (struct redis_link_cb){
	    fn, arg };
	l->ncbs++;
}

/* Hands every whole reply read so far to whom it is for. */
static void
redis_link_dispatch(struct redis_link *l)
{
	struct redis_link_cb	 cb;
	void			*reply;
	char			 why[256];

	while (!l->closing) {
		if (redisReaderGetReply(l->reader, &reply) != REDIS_OK) {
			snprintf(why, sizeof why, "protocol error from %s: %s",
			    l->name, l->reader->errstr);
			redis_link_fail(l, why);
			return;
		}
		if (reply == NULL)
			return;
		l->answered = 1;
		l->taken = 0;
		if (l->ncbs > 0) {
			cb = l->cbs[l->cbs_head];
			l->cbs_head = (l->cbs_head + 1) % l->cbs_cap;
			l->ncbs--;
			cb.fn(l, reply, cb.arg);
		} else if (l->ev->push != NULL)
			l->ev->push(l, reply, l->arg);
		if (!l->taken)
			freeReplyObject(reply);
	}
}

static void
redis_link_feed(struct redis_link *l, const char *p, size_t len)
{
	if (redisReaderFeed(l->reader, p, len) != REDIS_OK)
		redis_link_fail(l, "out of memory reading a reply");
}

/* Closed by the server: with a hint when it looks like a TLS port. */
static void
redis_link_eof(struct redis_link *l)
{
	char	why[256];

	if (!l->answered && l->ssl == NULL)
		snprintf(why, sizeof why, "%s closed the connection before "
		    "answering (a TLS port? then use rediss://)", l->name);
	else
		snprintf(why, sizeof why, "closed by %s", l->name);
	redis_link_fail(l, why);
}

static void
redis_link_errno(struct redis_link *l, const char *what, int error)
{
	char	why[256];

	snprintf(why, sizeof why, "%s %s: %s%s", what, l->name,
	    strerror(error), l->state == REDIS_LINK_UP && !l->answered &&
	    l->ssl == NULL ? " (a TLS port? then use rediss://)" : "");
	redis_link_fail(l, why);
}

/* The plain transport (TCP, unix). */

static void
redis_link_set_tcp(int fd)
{
	int	on = 1, idle = REDIS_LINK_KEEPIDLE;
	int	intvl = REDIS_LINK_KEEPINTVL, cnt = REDIS_LINK_KEEPCNT;

	/* Best effort: a socket without them still works. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
	    sizeof intvl);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

static void	redis_link_ssl_write(struct redis_link *);

/* Writes what it can; asks for EV_WRITE when the socket is full. */
static void
redis_link_write(struct redis_link *l)
{
	int	n;

	if (l->ssl != NULL) {
		redis_link_ssl_write(l);
		return;
	}
	while (evbuffer_get_length(l->out) > 0) {
		n = evbuffer_write(l->out, l->fd);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			redis_link_errno(l, "writing to", errno);
			return;
		}
		if (n == 0)
			break;
	}
	if (evbuffer_get_length(l->out) > 0)
		event_add(l->wev, NULL);
	else
		event_del(l->wev);
}

static void
redis_link_up(struct redis_link *l)
{
	l->state = REDIS_LINK_UP;
	if (l->ev->up != NULL)
		l->ev->up(l, l->arg);
	if (!l->closing && !l->flush_owed &&
	    evbuffer_get_length(l->out) > 0) {
		l->flush_owed = 1;
		event_active(l->flush_ev, EV_TIMEOUT, 0);
	}
}

static void	redis_link_handshake(struct redis_link *);
static void	redis_link_ssl_read(struct redis_link *);

/* The connect is done: set up TCP, then up, or the TLS handshake. */
static void
redis_link_connected(struct redis_link *l)
{
	event_del(l->wev);
	if (l->tcp)
		redis_link_set_tcp(l->fd);
	event_add(l->rev, NULL);
	if (l->ssl == NULL) {
		redis_link_up(l);
		return;
	}
	if (SSL_set_fd(l->ssl, l->fd) != 1) {
		redis_link_fail(l, "TLS: cannot use the socket");
		return;
	}
	SSL_set_connect_state(l->ssl);
	l->state = REDIS_LINK_HANDSHAKE;
	redis_link_handshake(l);
}

static void
redis_link_write_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_link	*l = arg;
	socklen_t		 len;
	int			 error;

	l->busy++;
	if (l->state == REDIS_LINK_CONNECTING) {
		error = 0;
		len = sizeof error;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
			error = errno;
		if (error != 0)
			redis_link_errno(l, "connect to", error);
		else
			redis_link_connected(l);
	} else if (l->state == REDIS_LINK_HANDSHAKE)
		redis_link_handshake(l);
	else if (l->state == REDIS_LINK_UP) {
		redis_link_write(l);
		if (!l->closing && l->ssl != NULL && l->read_wants_write) {
			l->read_wants_write = 0;
			redis_link_ssl_read(l);
		}
	}
	redis_link_release(l);
}

static void
redis_link_read_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_link	*l = arg;
	char			 buf[REDIS_LINK_READ];
	ssize_t			 n;

	l->busy++;
	if (l->state == REDIS_LINK_HANDSHAKE)
		redis_link_handshake(l);
	else if (l->ssl != NULL) {
		redis_link_ssl_read(l);
		if (!l->closing && l->write_wants_read) {
			l->write_wants_read = 0;
			redis_link_write(l);
		}
	} else {
		n = read(fd, buf, sizeof buf);
		if (n > 0) {
			redis_link_feed(l, buf, (size_t)n);
			redis_link_dispatch(l);
		} else if (n == 0)
			redis_link_eof(l);
		else if (errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			redis_link_errno(l, "reading from", errno);
	}
	redis_link_release(l);
}

/* Opens a non-blocking socket to ai, connecting; -1 with *cause. */
static int
redis_link_socket(const struct sockaddr *sa, socklen_t salen, int family,
    const char *name, char **cause)
{
	int	fd;

	fd = socket(family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (fd < 0) {
		xasprintf(cause, "socket for %s: %s", name, strerror(errno));
		return (-1);
	}
	if (connect(fd, sa, salen) != 0 && errno != EINPROGRESS) {
		xasprintf(cause, "connect to %s: %s", name, strerror(errno));
		close(fd);
		return (-1);
	}
	return (fd);
}

/* The TLS transport. */

/*
 * Why TLS failed: the certificate check during the handshake, OpenSSL's
 * error, or the socket's.
 */
static void
redis_link_tls_fail(struct redis_link *l, int ssl_error)
{
	unsigned long	 e;
	long		 verify;
	char		 err[256], why[512];
	int		 error = errno;
	const char	*hint = "", *what;

	what = l->state == REDIS_LINK_HANDSHAKE ? "TLS handshake with" :
	    "TLS connection to";
	verify = SSL_get_verify_result(l->ssl);
	e = ERR_peek_last_error();
	ERR_clear_error();
	if (l->state == REDIS_LINK_HANDSHAKE && verify != X509_V_OK) {
		snprintf(why, sizeof why, "TLS handshake with %s: the server's "
		    "certificate is refused: %s", l->name,
		    X509_verify_cert_error_string(verify));
	} else if (e != 0) {
		ERR_error_string_n(e, err, sizeof err);
		if (strstr(err, "wrong version number") != NULL ||
		    strstr(err, "packet length too long") != NULL ||
		    strstr(err, "record layer failure") != NULL)
			hint = " (a plaintext port? then use redis://)";
		snprintf(why, sizeof why, "%s %s: %s%s", what, l->name, err,
		    hint);
	} else if (ssl_error == SSL_ERROR_ZERO_RETURN ||
	    (ssl_error == SSL_ERROR_SYSCALL && error == 0)) {
		if (l->state == REDIS_LINK_UP)
			snprintf(why, sizeof why, "closed by %s", l->name);
		else
			snprintf(why, sizeof why, "%s closed the connection "
			    "during the TLS handshake", l->name);
	} else
		snprintf(why, sizeof why, "%s %s: %s", what, l->name,
		    ssl_error == SSL_ERROR_SYSCALL ? strerror(error) :
		    "TLS error");
	redis_link_fail(l, why);
}

static void
redis_link_handshake(struct redis_link *l)
{
	int	r, e;

	ERR_clear_error();
	if ((r = SSL_do_handshake(l->ssl)) == 1) {
		event_del(l->wev);
		redis_link_up(l);
		return;
	}
	switch ((e = SSL_get_error(l->ssl, r))) {
	case SSL_ERROR_WANT_READ:
		event_del(l->wev);	/* the read event persists */
		break;
	case SSL_ERROR_WANT_WRITE:
		event_add(l->wev, NULL);
		break;
	default:
		redis_link_tls_fail(l, e);
		break;
	}
}

/*
 * Everything OpenSSL can give now: it may hold whole records the socket
 * will not signal again.
 */
static void
redis_link_ssl_read(struct redis_link *l)
{
	char	buf[REDIS_LINK_READ];
	int	n, e;

	while (!l->closing) {
		ERR_clear_error();
		if ((n = SSL_read(l->ssl, buf, sizeof buf)) > 0) {
			/* Replies go as they come, as over plaintext. */
			redis_link_feed(l, buf, (size_t)n);
			redis_link_dispatch(l);
			continue;
		}
		e = SSL_get_error(l->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			break;
		if (e == SSL_ERROR_WANT_WRITE) {
			/* A key update wants to write first. */
			l->read_wants_write = 1;
			event_add(l->wev, NULL);
			break;
		}
		redis_link_tls_fail(l, e);
		return;
	}
}

/*
 * The turn's commands in one SSL_write (a record, and a write, per 16
 * KiB). One that must be repeated (WANT_WRITE, WANT_READ) is repeated
 * with the same length, as OpenSSL asks.
 */
static void
redis_link_ssl_write(struct redis_link *l)
{
	size_t	 len;
	char	*p;
	int	 n, e;

	while ((len = evbuffer_get_length(l->out)) > 0) {
		if (l->ssl_retry > 0)
			len = l->ssl_retry;
		else if (len > INT_MAX)
			len = INT_MAX;
		p = (char *)evbuffer_pullup(l->out, (ssize_t)len);
		ERR_clear_error();
		if ((n = SSL_write(l->ssl, p, (int)len)) > 0) {
			l->ssl_retry = 0;
			evbuffer_drain(l->out, (size_t)n);
			continue;
		}
		l->ssl_retry = len;
		e = SSL_get_error(l->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE) {
			event_add(l->wev, NULL);
			return;
		}
		if (e == SSL_ERROR_WANT_READ) {
			l->write_wants_read = 1;
			return;
		}
		redis_link_tls_fail(l, e);
		return;
	}
	event_del(l->wev);
}

/* Opening. */

static int
redis_link_open_tcp(struct redis_link *l, const struct redis_link_addr *a,
    struct redis_link_tls *tls, char **cause)
{
	struct addrinfo	 hints, *res, *ai;
	char		 port[16];
	int		 error;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof port, "%d", a->port);
	if ((error = getaddrinfo(a->host, port, &hints, &res)) != 0) {
		xasprintf(cause, "cannot resolve %s: %s", a->host,
		    gai_strerror(error));
		return (-1);
	}
	l->tcp = 1;
	if (a->tls && (l->ssl = redis_link_ssl(tls, a->host, cause)) == NULL) {
		freeaddrinfo(res);
		return (-1);
	}
	for (ai = res; ai != NULL && l->fd == -1; ai = ai->ai_next) {
		free(*cause);
		*cause = NULL;
		l->fd = redis_link_socket(ai->ai_addr, ai->ai_addrlen,
		    ai->ai_family, l->name, cause);
	}
	freeaddrinfo(res);
	if (l->fd == -1 && *cause == NULL)
		xasprintf(cause, "%s: no address to connect to", a->host);
	return (l->fd == -1 ? -1 : 0);
}

static int
redis_link_open_unix(struct redis_link *l, const struct redis_link_addr *a,
    char **cause)
{
	struct sockaddr_un	sun;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, a->path, sizeof sun.sun_path) >=
	    sizeof sun.sun_path) {
		xasprintf(cause, "unix socket path too long: %s", a->path);
		return (-1);
	}
	l->fd = redis_link_socket((struct sockaddr *)&sun, sizeof sun, AF_UNIX,
	    l->name, cause);
	return (l->fd == -1 ? -1 : 0);
}

struct redis_link *
redis_link_open(struct event_base *base, const struct redis_link_addr *a,
    struct redis_link_tls *tls, const struct redis_link_events *ev,
    void *arg, char **cause)
{
	struct redis_link	*l;
	int			 rc;

	*cause = NULL;
	l = xcalloc(1, sizeof *l);
	l->base = base;
	l->ev = ev;
	l->arg = arg;
	l->fd = -1;
	l->state = REDIS_LINK_CONNECTING;
	if (a->path != NULL)
		l->name = xstrdup(a->path);
	else if (strchr(a->host, ':') != NULL)
		xasprintf(&l->name, "[%s]:%d", a->host, a->port);
	else
		xasprintf(&l->name, "%s:%d", a->host, a->port);
	if ((l->reader = redisReaderCreate()) == NULL)
		fatalx("%s: out of memory", __func__);
	l->out = evbuffer_new();
	l->flush_ev = event_new(base, -1, 0, redis_link_flush_cb, l);
	if (a->path != NULL)
		rc = redis_link_open_unix(l, a, cause);
	else if (a->tls && tls == NULL) {
		xasprintf(cause, "TLS asked for without TLS settings");
		rc = -1;
	} else
		rc = redis_link_open_tcp(l, a, tls, cause);
	if (rc != 0) {
		redis_link_free(l);
		return (NULL);
	}
	l->rev = event_new(base, l->fd, EV_READ|EV_PERSIST, redis_link_read_cb,
	    l);
	l->wev = event_new(base, l->fd, EV_WRITE, redis_link_write_cb, l);
	event_add(l->wev, NULL);	/* says when the connect is done */
	return (l);
}

/* Sending. */

/* The end of the turn: the owner's last word, then one write. */
static void
redis_link_flush_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_link	*l = arg;

	l->busy++;
	/* What the hook sends rides along: flush_owed stays set meanwhile. */
	if (l->ev->flush != NULL)
		l->ev->flush(l, l->arg);
	l->flush_owed = 0;
	if (!l->closing && l->state == REDIS_LINK_UP &&
	    !event_pending(l->wev, EV_WRITE, NULL) && !l->write_wants_read)
		redis_link_write(l);
	redis_link_release(l);
}

int
redis_link_send(struct redis_link *l, const char *cmd, size_t len,
    redis_link_reply_cb fn, void *arg)
{
	if (l->closing)
		return (-1);
	if (evbuffer_add(l->out, cmd, len) != 0)
		fatalx("%s: out of memory", __func__);
	if (fn != NULL)
		redis_link_push_cb(l, fn, arg);
	if (l->state == REDIS_LINK_UP && !l->flush_owed) {
		l->flush_owed = 1;
		event_active(l->flush_ev, EV_TIMEOUT, 0);
	}
	return (0);
}

int
redis_link_sendv(struct redis_link *l, redis_link_reply_cb fn, void *arg,
    int argc, const char *const *argv, const size_t *argvlen)
{
	struct evbuffer	*b;
	size_t		 len;
	int		 i, rc;

	if (l->closing)
		return (-1);
	b = evbuffer_new();
	evbuffer_add_printf(b, "*%d\r\n", argc);
	for (i = 0; i < argc; i++) {
		evbuffer_add_printf(b, "$%zu\r\n", argvlen[i]);
		evbuffer_add(b, argv[i], argvlen[i]);
		evbuffer_add(b, "\r\n", 2);
	}
	len = evbuffer_get_length(b);
	rc = redis_link_send(l, (const char *)evbuffer_pullup(b, -1), len,
	    fn, arg);
	evbuffer_free(b);
	return (rc);
}

int
redis_link_auth(struct redis_link *l, const char *user, const char *password,
    redis_link_reply_cb fn, void *arg)
{
	if (user != NULL)
		return (redis_link_command(l, fn, arg, "AUTH", user, password,
		    NULL));
	return (redis_link_command(l, fn, arg, "AUTH", password, NULL));
}

int
redis_link_command(struct redis_link *l, redis_link_reply_cb fn, void *arg,
    ...)
{
	const char	*argv[16];
	size_t		 argvlen[16];
	va_list		 ap;
	int		 argc = 0;
	const char	*s;

	va_start(ap, arg);
	while ((s = va_arg(ap, const char *)) != NULL) {
		if (argc == 16)
			fatalx("%s: too many arguments", __func__);
		argv[argc] = s;
		argvlen[argc++] = strlen(s);
	}
	va_end(ap);
	return (redis_link_sendv(l, fn, arg, argc, argv, argvlen));
}

/* What the owner may ask. */

void
redis_link_take_reply(struct redis_link *l)
{
	l->taken = 1;
}

size_t
redis_link_pending(const struct redis_link *l)
{
	return (l->ncbs);
}

int
redis_link_is_up(const struct redis_link *l)
{
	return (l->state == REDIS_LINK_UP);
}

const char *
redis_link_waiting_for(const struct redis_link *l)
{
	switch (l->state) {
	case REDIS_LINK_CONNECTING:
		return ("TCP connect");
	case REDIS_LINK_HANDSHAKE:
		return ("TLS handshake (is it a plaintext port? then use "
		    "redis://)");
	case REDIS_LINK_UP:
		return (l->answered ? "a reply" : "the first reply");
	default:
		return ("nothing");
	}
}

const char *
redis_link_tls_version(const struct redis_link *l)
{
	if (l->ssl == NULL || l->state != REDIS_LINK_UP)
		return (NULL);
	return (SSL_get_version(l->ssl));
}

const char *
redis_link_tls_cipher(const struct redis_link *l)
{
	if (l->ssl == NULL || l->state != REDIS_LINK_UP)
		return (NULL);
	return (SSL_get_cipher_name(l->ssl));
}
