/* MCP over JSON-RPC: what each method does, independent of HTTP. */
#ifndef MCPD_DISPATCH_H
#define MCPD_DISPATCH_H

#include <cjson/cJSON.h>

#include "session.h"

struct auth_principal;
struct call;
struct session;
struct stream;

/* Why initialize was refused. */
enum dispatch_refusal {
	DISPATCH_INVALID,	/* the request is wrong: 400 */
	DISPATCH_FULL		/* no room for a session now: 503 */
};

cJSON	*dispatch_initialize(const cJSON *, struct auth_principal *,
	    enum dispatch_refusal *, const char **, session_stored_fn, void *);
int	 dispatch_streams(const cJSON *);
int	 dispatch_sessionless(const cJSON *);
cJSON	*dispatch_quick(struct session *, const cJSON *);
/* The same without a session, for a principal (NULL: no auth). */
cJSON	*dispatch_quick_stateless(const struct auth_principal *,
	    const cJSON *);
cJSON	*dispatch_capabilities(int);
void	 dispatch_start_call(struct call *, const cJSON *);
void	 dispatch_start(struct session *, struct stream *, const cJSON *);
void	 dispatch_start_batch(struct session *, struct stream *,
	    const cJSON *);
void	 dispatch_notification(struct session *, const cJSON *);
int	 dispatch_response(struct session *, const cJSON *);

#endif
