/*
 * The SSE parser of an upstream's HTTP responses (upstream_sse.c), for
 * upstream_http.c and the unit tests: feed bytes; each event's data is
 * handed to the callback with its id (the last one seen, NULL if none).
 * -1 when a line or an event's data is longer than the bound.
 */
#ifndef MCPD_UPSTREAM_SSE_H
#define MCPD_UPSTREAM_SSE_H

#include <stddef.h>

struct upstream_sse;
typedef void	upstream_sse_cb(const char *, size_t, const char *, void *);
struct upstream_sse *upstream_sse_new(size_t, upstream_sse_cb *, void *);
int		 upstream_sse_feed(struct upstream_sse *, const char *,
		     size_t);
const char	*upstream_sse_last_id(const struct upstream_sse *);
void		 upstream_sse_free(struct upstream_sse *);

#endif
