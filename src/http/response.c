/*
 * A stateless request's response (response.h): JSON or SSE, decided by
 * what comes first, a whole answer or a message. The SSE stream begins
 * and ends in reply.c, like a session's view, so both revisions' streams
 * are counted, logged and set up alike.
 */
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "conf.h"
#include "jsonrpc.h"
#include "log.h"
#include "reply.h"
#include "response.h"
#include "server.h"
#include "sse.h"
#include "xmalloc.h"

struct response {
	struct evhttp_request		*req;
	struct evhttp_connection	*evcon;
	enum response_state		 state;
	struct reply_sse		*sse;
	struct event			*late;	  /* the JSON body's deadline */
	struct event			*timer;	  /* keep-alive comments */
	call_sent_cb			 sent_cb; /* waiting for a drain */
	void				*sent_arg;
	response_gone_cb		*gone_cb;
	void				*gone_arg;
};

static void	response_keepalive_cb(evutil_socket_t, short, void *);
static void	response_drained_cb(struct evhttp_connection *, void *);

struct response *
response_new(struct evhttp_request *req, response_gone_cb *cb, void *arg)
{
	struct response	*r;

	r = xcalloc(1, sizeof *r);
	r->req = req;
	r->evcon = evhttp_request_get_connection(req);
	r->state = RESPONSE_WAITING;
	r->gone_cb = cb;
	r->gone_arg = arg;
	return (r);
}

enum response_state
response_state(const struct response *r)
{
	return (r->state);
}

/* Done: timers stop, and a waiting writer hears it may not go on. */
static void
response_done(struct response *r)
{
	r->state = RESPONSE_DONE;
	if (r->late != NULL)
		evtimer_del(r->late);
	if (r->timer != NULL)
		evtimer_del(r->timer);
	if (r->sent_cb != NULL) {
		call_sent_later(r->sent_cb, r->sent_arg, 0);
		r->sent_cb = NULL;
	}
}

void
response_free(struct response *r)
{
	if (r == NULL)
		return;
	if (r->state != RESPONSE_DONE)
		fatalx("response: freed before it is done");
	if (r->late != NULL)
		event_free(r->late);
	if (r->timer != NULL)
		event_free(r->timer);
	free(r);
}

void
response_json(struct response *r, int status, cJSON *msg)
{
	if (r->state != RESPONSE_WAITING) {
		cJSON_Delete(msg);
		return;
	}
	response_done(r);
	if (status == 503)
		evhttp_add_header(evhttp_request_get_output_headers(r->req),
		    "Retry-After", "1");
	reply_json(r->req, status, msg);
}

void
response_unavailable(struct response *r, const char *message)
{
	if (r->state != RESPONSE_WAITING)
		return;
	response_done(r);
	reply_unavailable(r->req, 1, message);
}

/* The client left while the stream was open. */
static void
response_closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct response	*r = arg;

	if (r->state != RESPONSE_STREAMING)
		return;
	log_debug("stateless request: the client closed its stream");
	reply_sse_end(r->sse, REPLY_SSE_GONE);
	r->sse = NULL;
	response_done(r);
	/* r may be freed by the time this returns. */
	r->gone_cb(r->gone_arg);
}

void
response_stream(struct response *r)
{
	struct timeval	tv;

	if (r->state != RESPONSE_WAITING)
		return;
	if (r->late != NULL)
		evtimer_del(r->late);
	r->sse = reply_sse_start(r->req, 0, response_closed_cb, r);
	r->state = RESPONSE_STREAMING;
	r->timer = event_new(server.base, -1, EV_PERSIST,
	    response_keepalive_cb, r);
	tv.tv_sec = server.conf->sse_keepalive;
	tv.tv_usec = 0;
	evtimer_add(r->timer, &tv);
}

/*
 * evhttp notices a client gone only once it writes, and a gone client
 * must cancel its request: a response that has sent nothing by then
 * becomes a stream anyway.
 */
static void
response_late_cb(evutil_socket_t fd, short events, void *arg)
{
	response_stream(arg);
}

void
response_stream_after(struct response *r, int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	if (r->state != RESPONSE_WAITING)
		return;
	if (r->late == NULL)
		r->late = evtimer_new(server.base, response_late_cb, r);
	evtimer_add(r->late, &tv);
}

static size_t
response_queued(const struct response *r)
{
	return (evbuffer_get_length(bufferevent_get_output(
	    evhttp_connection_get_bufferevent(r->evcon))));
}

int
response_behind(const struct response *r)
{
	return (r->state == RESPONSE_STREAMING && (long long)response_queued(r)
	    >= server.conf->sse_high_watermark);
}

static void
response_keepalive_cb(evutil_socket_t fd, short events, void *arg)
{
	struct response	*r = arg;
	struct evbuffer	*buf;

	if (r->state != RESPONSE_STREAMING || response_queued(r) > 0)
		return;
	buf = evbuffer_new();
	sse_comment(buf, "keepalive");
	reply_sse_chunk(r->sse, buf, response_drained_cb, r);
	evbuffer_free(buf);
}

void
response_write(struct response *r, const cJSON *msg)
{
	struct evbuffer	*buf;
	const char	*text;
	size_t		 len;

	if (r->state == RESPONSE_WAITING)
		response_stream(r);
	if (r->state != RESPONSE_STREAMING)
		return;
	buf = evbuffer_new();
	text = jsonrpc_print_shared(msg, &len);
	sse_event(buf, NULL, "message", text, len, -1);
	reply_sse_chunk(r->sse, buf, response_drained_cb, r);
	evbuffer_free(buf);
}

void
response_end(struct response *r)
{
	if (r->state != RESPONSE_STREAMING)
		return;
	reply_sse_end(r->sse, REPLY_SSE_DONE);
	r->sse = NULL;
	response_done(r);
}

/* The client took what was queued: a paused writer goes on. */
static void
response_drained_cb(struct evhttp_connection *evcon, void *arg)
{
	struct response	*r = arg;
	call_sent_cb	 cb = r->sent_cb;

	if (cb == NULL)
		return;
	r->sent_cb = NULL;
	cb(1, r->sent_arg);
}

void
response_sent(struct response *r, call_sent_cb cb, void *arg)
{
	if (r->state != RESPONSE_STREAMING)
		call_sent_later(cb, arg, r->state != RESPONSE_DONE);
	else if (!response_behind(r) || cb == NULL || r->sent_cb != NULL)
		call_sent_later(cb, arg, 1);
	else {
		r->sent_cb = cb;
		r->sent_arg = arg;
	}
}
