/*
 * The response to one stateless (2026-07-28) request: a JSON body while
 * nothing has been sent, or else an SSE stream scoped to the request
 * (begun and ended by reply.c), for stateless.c's requests and listen.c's
 * streams. Nothing of it goes through the event log: what is written goes
 * out as it comes, with keep-alive comments while nothing is queued.
 *
 * Memory per response stays near sse_high_watermark: a writer is told it
 * may go on (response_sent) only once the client has taken what is
 * queued past it, and listen streams that fall that far behind end
 * (response_behind).
 */
#ifndef MCPD_RESPONSE_H
#define MCPD_RESPONSE_H

#include <cjson/cJSON.h>

#include "call.h"

struct evhttp_request;
struct response;

enum response_state {
	RESPONSE_WAITING,	/* nothing sent yet: a JSON body is possible */
	RESPONSE_STREAMING,	/* an SSE response has begun */
	RESPONSE_DONE		/* the response ended, or the client left */
};

/*
 * The client closed the stream: the response is done, and its owner
 * hears so once (it may free the response in the callback).
 */
typedef void	response_gone_cb(void *);

struct response	*response_new(struct evhttp_request *, response_gone_cb *,
		     void *);
void		 response_free(struct response *);
enum response_state response_state(const struct response *);

/* A whole JSON body (taken) with its status (a 503 with Retry-After). */
void		 response_json(struct response *, int, cJSON *);
/* 503 with Retry-After and message, before anything was sent. */
void		 response_unavailable(struct response *, const char *);
/* The SSE stream begins now, or ms from now if nothing was sent by then. */
void		 response_stream(struct response *);
void		 response_stream_after(struct response *, int);
/* A message on the stream (which begins if it had not). */
void		 response_write(struct response *, const cJSON *);
/* The stream ends, normally: the connection may serve again. */
void		 response_end(struct response *);
/* Whether sse_high_watermark bytes or more wait for the client. */
int		 response_behind(const struct response *);
/*
 * cb(ok, arg) runs once, on a later turn: 1 when the writer may go on (at
 * once below the watermark, else once the client has drained what is
 * queued; one writer waits at a time), 0 once the response is done.
 */
void		 response_sent(struct response *, call_sent_cb, void *);

#endif
