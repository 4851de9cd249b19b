/*
 * The HTTP server span of each request to the MCP endpoint (reqtrace.c):
 * begun when the request arrives, its parent the traceparent and
 * tracestate headers (W3C trace-context) if they hold one, ended with the
 * response (reply.c: a whole reply, or an SSE response's end). Requests
 * are keyed by their evhttp request, as the access log keys them.
 */
#ifndef MCPD_REQTRACE_H
#define MCPD_REQTRACE_H

struct evhttp_request;
struct reqtrace;
struct trace_span;

/* Begins req's span (route: the endpoint); returns trace_enter's. */
int			 reqtrace_begin(struct evhttp_request *,
			     const char *);
/* req's span (NULL: none, or not traced). */
struct trace_span	*reqtrace_span(struct evhttp_request *);
/*
 * A span that ends with req's response (taken): what the request serves
 * that is traced apart, a resume of a call's stream.
 */
void			 reqtrace_attach(struct evhttp_request *,
			     struct trace_span *);
/* The response starts an SSE stream: its owner ends it (reqtrace_done). */
struct reqtrace		*reqtrace_take(struct evhttp_request *);
void			 reqtrace_done(struct reqtrace *, int);
/* Its span becomes current (the access line); returns trace_enter's. */
int			 reqtrace_enter(struct reqtrace *);
/* A whole response: the spans end with its status. */
void			 reqtrace_end(struct evhttp_request *, int);

#endif
