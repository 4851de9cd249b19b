/*
 * MRTR (MCP 2026-07-28): a stateless request's questions to its client
 * travel as an input_required result and come back with the client's next
 * round, in inputResponses, with the answers of earlier rounds sealed in
 * requestState (seal.c), so any instance can take the next round. One
 * struct mrtr per request: what the request brought, and what its call
 * asked in this round.
 */
#ifndef MCPD_MRTR_H
#define MCPD_MRTR_H

#include <cjson/cJSON.h>

#include "call.h"

struct mrtr;
struct trace_ctx;

/* For method's request about name (the tool, prompt or URI; NULL: none). */
struct mrtr	*mrtr_new(const char *, const char *);
void		 mrtr_free(struct mrtr *);
/*
 * The answers the request's params bring (requestState's, then this
 * round's inputResponses): 0 and *resumed set, or -1 with the status to
 * answer (400: invalid params; 503: no key opens a state now) and a
 * static *cause.
 */
int		 mrtr_rounds(struct mrtr *, const cJSON *, int *, int *,
		     const char **);
/* The sink's ask (call.h): answered from the rounds, or asked for. */
enum call_ask	 mrtr_ask(struct mrtr *, struct call *, const char *,
		     const char *, cJSON *, const cJSON **);
/*
 * The trace context the requestState carried (the call span of the round
 * that asked), so a round taken by another instance stays in its trace;
 * NULL if none.
 */
const struct trace_ctx *mrtr_origin(const struct mrtr *);
/* The call has ended: what it asked is never answered. */
void		 mrtr_ended(struct mrtr *);

#endif
