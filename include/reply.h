/*
 * HTTP replies: the whole answers of the MCP endpoint (a JSON-RPC
 * response, an error with its status, an empty status), and where every
 * SSE response begins and ends, for both revisions (view.c, response.c).
 * A leaf: it knows evhttp and JSON-RPC's error shape, nothing of sessions
 * or streams.
 */
#ifndef MCPD_REPLY_H
#define MCPD_REPLY_H

#include <stdint.h>

#include <cjson/cJSON.h>

struct evbuffer;
struct evhttp_connection;
struct evhttp_request;
struct reply_sse;

/* Counts a response by method and status; reply_send counts and sends. */
void	reply_count(struct evhttp_request *, int);
void	reply_send(struct evhttp_request *, int, struct evbuffer *);
const char *reply_method(struct evhttp_request *);
const char *reply_session(struct evhttp_request *);
/* The request's path as the endpoint was matched (allocated). */
char	*reply_path(struct evhttp_request *);
/*
 * 429 with Retry-After (seconds) and body (taken): a request refused by a
 * limit.
 */
void	reply_limited(struct evhttp_request *, uint64_t, cJSON *);

/* Sends json (and frees it) as the body of a status reply. */
void	reply_json(struct evhttp_request *, int, cJSON *);
/* A JSON-RPC error with no id: status, code, message, data (taken) or NULL. */
void	reply_error(struct evhttp_request *, int, int, const char *, cJSON *);
void	reply_empty(struct evhttp_request *, int);
/* 503 with Retry-After: seconds, and the message as a JSON-RPC error. */
void	reply_unavailable(struct evhttp_request *, int, const char *);

/*
 * Sets on a listening socket what SSE responses need of every connection
 * it accepts (TCP_NODELAY, which Linux's accepted sockets inherit); 0, or
 * -1 with errno set.
 */
int	reply_listener(int);

/*
 * An SSE response. reply_sse_start sends its head (200, text/event-stream,
 * no caching or proxy buffering), counts it, takes the access log's fields,
 * turns the connection's timeouts off (and TCP_NODELAY on where the
 * connection did not inherit it from a listener reply_listener prepared),
 * and makes the callback the connection's close callback (the client left: the caller
 * then ends the response with REPLY_SSE_GONE). k: the stream the access
 * line names (0: none). Chunks go through reply_sse_chunk, each naming the
 * drain callback (the connection has one slot, and a chunk without it
 * would leave a paused writer waiting), and are counted. reply_sse_end
 * ends it, once, as it ended, and writes the access line; the handle is
 * freed.
 */
enum reply_sse_end {
	REPLY_SSE_DONE,	/* the terminal chunk: the connection serves on */
	REPLY_SSE_GONE,	/* the client closed the connection (close callback) */
	REPLY_SSE_CUT	/* the connection freed unended: the client resumes */
};
typedef void	reply_conn_cb(struct evhttp_connection *, void *);
struct reply_sse *reply_sse_start(struct evhttp_request *, uint64_t,
		     reply_conn_cb *, void *);
void		 reply_sse_chunk(struct reply_sse *, struct evbuffer *,
		     reply_conn_cb *, void *);
void		 reply_sse_end(struct reply_sse *, enum reply_sse_end);

#endif
