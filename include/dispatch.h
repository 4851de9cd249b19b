/* MCP over JSON-RPC: what each method does, independent of HTTP. */
#ifndef MCPD_DISPATCH_H
#define MCPD_DISPATCH_H

#include <cjson/cJSON.h>

#include "session.h"

struct auth_principal;
struct call;
struct limit_ticket;
struct session;
struct stream;
struct trace_ctx;

/*
 * What the edge knows of a request that the calls it starts keep: the
 * path it arrived on, and whether its tools/call was checked against the
 * limits already (answered 429 there if not admitted), with the slots
 * it holds (taken). A call not checked at the edge (a batch's) is
 * checked as it starts, and answered -32023 if refused. A stateless
 * call's trace goes on from the context of its earlier round.
 */
struct dispatch_origin {
	const char		*endpoint;
	int			 admitted;
	struct limit_ticket	*ticket;
	const struct trace_ctx	*trace;		/* a stateless call's earlier
						   round's, or NULL */
};

struct dispatch_method;

/* How a method runs. */
enum dispatch_kind {
	DISPATCH_QUICK,		/* answered at once */
	DISPATCH_CALL,		/* run as a call: a request stream, or a
				   stateless request's response */
	DISPATCH_LISTEN,	/* 2026-07-28: a stream of change notifications */
	DISPATCH_NOTIFICATION	/* a client notification; nothing answered */
};

/* A method's flags. */
#define DISPATCH_SESSIONLESS	0x1	/* answered before a session exists
					   (and refused in one): initialize */
#define DISPATCH_CACHEABLE	0x2	/* 2026-07-28: ttlMs and cacheScope */
#define DISPATCH_PARAM_HEADERS	0x4	/* 2026-07-28: the tool's x-mcp-header
					   arguments come as Mcp-Param-* */

/* What a request names whose OAuth scope it needs (transport.c checks). */
enum dispatch_scope {
	DISPATCH_SCOPE_NONE,
	DISPATCH_SCOPE_TOOL,		/* a tool, by name */
	DISPATCH_SCOPE_PROMPT,		/* a prompt, by name */
	DISPATCH_SCOPE_RESOURCE,	/* a resource, by URI */
	DISPATCH_SCOPE_REF		/* params.ref: a prompt or template */
};

/* Why initialize was refused. */
enum dispatch_refusal {
	DISPATCH_INVALID,	/* the request is wrong: 400 */
	DISPATCH_FULL		/* no room for a session now: 503 */
};

/* initialize: the request, who, the endpoint's path (NULL: default). */
cJSON	*dispatch_initialize(const cJSON *, struct auth_principal *,
	    const char *, enum dispatch_refusal *, const char **,
	    session_stored_fn, void *);
int	 dispatch_streams(const cJSON *);
int	 dispatch_sessionless(const cJSON *);
enum dispatch_scope dispatch_scope(const cJSON *, const char **);
const struct dispatch_method *dispatch_lookup(const char *, int);
const char *dispatch_method_name(const struct dispatch_method *);
enum dispatch_kind dispatch_method_kind(const struct dispatch_method *);
int	 dispatch_method_flags(const struct dispatch_method *);
const char *dispatch_method_name_param(const struct dispatch_method *);
/* The -32602 message for a request whose params hold a NUL, or NULL. */
const char *dispatch_params_refused(const cJSON *);
cJSON	*dispatch_quick(struct session *, const cJSON *);
/*
 * The same without a session, for a principal (NULL: no auth) at an
 * endpoint's path (whose catalog it sees; NULL: everything).
 */
cJSON	*dispatch_quick_stateless(const struct auth_principal *,
	    const char *, const cJSON *);
/* What a revision's clients at an endpoint's path are told is served. */
cJSON	*dispatch_capabilities(int, const char *);
void	 dispatch_start_call(struct call *, const cJSON *,
	    struct dispatch_origin *);
void	 dispatch_start(struct session *, struct stream *, const cJSON *,
	    struct dispatch_origin *);
void	 dispatch_start_batch(struct session *, struct stream *,
	    const cJSON *, struct dispatch_origin *);
/* The JSON-RPC error a call refused by a limit is answered (taken). */
struct limit_refusal;
cJSON	*dispatch_limited(const cJSON *, const struct limit_refusal *);
void	 dispatch_notification(struct session *, const cJSON *);
int	 dispatch_response(struct session *, const cJSON *);

#endif
