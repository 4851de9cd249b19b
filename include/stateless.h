/*
 * The stateless path's edge (MCP 2026-07-28): which POSTs are its
 * (stateless_claims), and serving them (stateless_serve) as dispatch.c's
 * table says. Its calls count against max_views with session views and
 * listen streams (stateless_room), and a drain waits for them.
 */
#ifndef MCPD_STATELESS_H
#define MCPD_STATELESS_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct auth_principal;
struct evhttp_request;

int	 stateless_claims(struct evhttp_request *, const cJSON *);
/*
 * A request stateless_claims took (taken), for a principal (NULL: no auth),
 * at an endpoint's path (whose catalog it sees; copied where kept).
 */
void	 stateless_serve(struct evhttp_request *, cJSON *,
	    struct auth_principal *, const char *);
void	 stateless_shutdown(void);
size_t	 stateless_running_calls(void);
/* Whether one more open stream fits; 0: req was answered 503. */
int	 stateless_room(struct evhttp_request *);
void	 stateless_interrupt_calls(const char *);

#endif
