/*
 * The Streamable HTTP transport of an upstream (upstream.c's "url"): each
 * message is a POST (http_client.c), answered with 202, a JSON body or an
 * SSE stream; the session id of the initialize answer goes with every
 * later request, with the negotiated revision; a GET stream carries what
 * the server sends outside requests. A request's SSE stream that ends
 * before its answer is resumed with Last-Event-ID when the server gave
 * event ids; otherwise the request is reported lost, never dropped.
 *
 * Callbacks run from loop callbacks, never inside an upstream_http_* call,
 * and never after upstream_http_close.
 */
#ifndef MCPD_UPSTREAM_HTTP_H
#define MCPD_UPSTREAM_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct upstream_http;

struct upstream_http_cbs {
	/*
	 * One JSON-RPC message from the server (text, not NUL-ended), and
	 * the request whose stream it came on (0: none, the GET stream).
	 */
	void	(*message)(const char *, size_t, int64_t, void *);
	/* Request id will get no answer: why. */
	void	(*lost)(int64_t, const char *, void *);
	/* The session is unusable (the server forgot it): why. */
	void	(*failed)(const char *, void *);
};

/* URL, the upstream's name, max_message, idle_timeout (ms), cbs, arg. */
struct upstream_http *upstream_http_open(const char *, const char *, size_t,
			 int, const struct upstream_http_cbs *, void *);
void		 upstream_http_send(struct upstream_http *, const char *,
		     size_t, int64_t);
void		 upstream_http_forget(struct upstream_http *, int64_t);
void		 upstream_http_set_version(struct upstream_http *,
		     const char *);
void		 upstream_http_listen(struct upstream_http *);
void		 upstream_http_close(struct upstream_http *);

#endif
