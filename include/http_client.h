/*
 * Outbound HTTP/1.1 on the event loop (evhttp's client; https through
 * libevent_openssl, the peer's certificate and name verified against the
 * system's trust store). One connection per request, closed after it.
 *
 * A request is started with http_client_start and ends exactly once: its
 * done callback runs on a later loop turn, never inside a call of this
 * API, with a response or an error, and the handle is freed after it
 * returns. While it runs, the handle describes the response:
 *
 *   http_client_status   the response's status, 0 if there is none
 *   http_client_error    NULL for a response, else why there is none
 *                        (connection refused, timeout, body too large,
 *                        cancelled, ...)
 *   http_client_header   a response header (case-insensitive), or NULL
 *   http_client_body     the body gathered (not with a chunk callback),
 *                        followed by a NUL
 *
 * With a chunk callback (a streaming response, such as SSE), each piece
 * of the body is handed over as it arrives, with status and headers
 * readable from the handle, and not gathered; the callback returns 0 to
 * go on or -1 to end the request (done then runs with the error
 * "aborted"). max_body bounds what is gathered (0: 1 MiB); with a chunk
 * callback it bounds the whole body only when not 0, and else max_chunk
 * (0: 1 MiB) bounds one piece as the server sends it (a chunk of chunked
 * encoding, a Content-Length body, a line). Bounds hold as bytes arrive:
 * a chunk or Content-Length announced past one is refused before it is
 * read, and a request never holds more than its bound plus 64 KiB. The
 * timeout covers the whole request, the body included, unless it is 0
 * (none: a stream that stays open; the connection still fails when the
 * peer goes away); idle_ms, if not 0, ends it (error "idle: ...") when no
 * byte at all came for that long.
 *
 * http_client_cancel ends a request early: done runs on a later turn with
 * the error "cancelled", or with the response if it was in already (once
 * done has run the handle is gone, and cancel must not be called).
 * Headers, body and URL are copied by http_client_start; nothing the
 * caller passes is kept.
 *
 * Connections: one per request, closed after it (Connection: close),
 * unless the request asks for keepalive (a gathered request, no chunk
 * callback). Then it takes a connection to the same origin (scheme, host,
 * port) that an earlier keepalive request left idle, if one is still open,
 * and leaves its own idle when its response was read to the end without
 * an error; any other end (an error, a timeout, a body too large, a
 * cancel, a server that said close) closes it. Idle connections are
 * bounded: HTTP_CLIENT_IDLE_PER_ORIGIN per origin, HTTP_CLIENT_IDLE_MAX in
 * all, each closed after HTTP_CLIENT_IDLE_MS unused (or at once when the
 * server closes it). A request sent on a reused connection that the server
 * closed before a byte of the response came is sent again once on a new
 * connection when its method is idempotent (GET, HEAD, PUT, DELETE,
 * OPTIONS): the server may have closed it as it went idle.
 */
#ifndef MCPD_HTTP_CLIENT_H
#define MCPD_HTTP_CLIENT_H

#include <stddef.h>

struct event_base;
struct http_client;

typedef void	http_client_done_cb(struct http_client *, void *);
typedef int	http_client_chunk_cb(struct http_client *, const char *,
		    size_t, void *);

struct http_client_header {
	const char	*name;
	const char	*value;
};

#define HTTP_CLIENT_IDLE_PER_ORIGIN	64
#define HTTP_CLIENT_IDLE_MAX		256
#define HTTP_CLIENT_IDLE_MS		4000

struct http_client_request {
	/* GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS */
	const char			*method;
	const char			*url;		/* http:// or https:// */
	const struct http_client_header	*headers;
	size_t				 nheaders;
	const char			*body;		/* NULL: none */
	size_t				 bodylen;
	size_t				 max_body;
	size_t				 max_chunk;	/* a stream's piece */
	int				 timeout_ms;
	int				 idle_ms;	/* 0: no idle bound */
	int				 keepalive;	/* reuse connections */
	http_client_chunk_cb		*chunk;		/* NULL: gather */
	http_client_done_cb		*done;
	void				*arg;
};

/* Requests are made on base; shutdown ends those still running. */
void		 http_client_init(struct event_base *);
void		 http_client_shutdown(void);

/*
 * Starts a request. NULL with *cause (allocated) when it cannot start
 * (a URL that is not http or https, ...): then done never runs.
 */
struct http_client *http_client_start(const struct http_client_request *,
		     char **);
void		 http_client_cancel(struct http_client *);
size_t		 http_client_count(void);
/* Connections left idle for keepalive requests, open or not yet swept. */
size_t		 http_client_idle_count(void);
/* Whether the request went on a connection an earlier one left idle. */
int		 http_client_reused(const struct http_client *);

int		 http_client_status(const struct http_client *);
const char	*http_client_error(const struct http_client *);
const char	*http_client_header(const struct http_client *, const char *);
const char	*http_client_body(const struct http_client *, size_t *);

#endif
