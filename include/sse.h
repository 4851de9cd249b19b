/* Server-Sent Events framing (text/event-stream), pure functions. */
#ifndef MCPD_SSE_H
#define MCPD_SSE_H

#include <stddef.h>

struct evbuffer;

/* Writes one event; id, event may be NULL; retry_ms < 0 omits retry:. */
void	sse_event(struct evbuffer *, const char *, const char *,
	    const char *, size_t, long);
void	sse_comment(struct evbuffer *, const char *);
void	sse_retry(struct evbuffer *, long);
/* The terminal event of a slow consumer: last id, reason, retry_ms. */
void	sse_backpressure_disconnect(struct evbuffer *, const char *,
	    const char *, long);

#endif
