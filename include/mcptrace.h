/*
 * MCP's and JSON-RPC's OpenTelemetry semantic conventions (mcptrace.c),
 * in one place for every layer that traces a message: the span of a
 * message a client sent (SERVER), of a request mcpd sends (CLIENT: to an
 * upstream, or to a client: elicitation, sampling), the outcome a
 * response gives them, and the trace context a request carries in
 * params._meta (traceparent, tracestate).
 */
#ifndef MCPD_MCPTRACE_H
#define MCPD_MCPTRACE_H

#include <cjson/cJSON.h>

struct trace_ctx;
struct trace_span;

/*
 * A message from a client (msg: request or notification) in session sid
 * (NULL: none) of revision version. Its parent: params._meta's context,
 * else origin (NULL: none; an MRTR round's requestState), else the
 * current span (the HTTP request's), which is linked when it is not the
 * parent.
 */
struct trace_span *mcptrace_server(const cJSON *, const char *,
		     const char *, const struct trace_ctx *);
/*
 * A request mcpd sends (method, params, id as sent), under parent;
 * network.transport is transport ("tcp", "pipe"), NULL for none.
 */
struct trace_span *mcptrace_client(const char *, const cJSON *,
		     const cJSON *, const struct trace_span *, const char *);
/* params._meta gets sp's traceparent and tracestate (params an object). */
void		 mcptrace_inject(cJSON *, const struct trace_span *);
/* The outcome a response (result or error member) gives sp. */
void		 mcptrace_outcome(struct trace_span *, const cJSON *,
		     const cJSON *);
/* A JSON-RPC error code and message as sp's outcome. */
void		 mcptrace_error(struct trace_span *, int, const char *);
/* The context params._meta carries: 0, or -1 if none valid. */
int		 mcptrace_meta_ctx(const cJSON *, struct trace_ctx *,
		     const char **);

#endif
