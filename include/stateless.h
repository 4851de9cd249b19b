#ifndef MCPD_STATELESS_H
#define MCPD_STATELESS_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct auth_principal;
struct evhttp_request;
struct stateless_req;

int	 stateless_claims(struct evhttp_request *, const cJSON *);
/* A request stateless_claims took (taken), for a principal (NULL: no auth). */
void	 stateless_serve(struct evhttp_request *, cJSON *,
	    struct auth_principal *);
void	 stateless_shutdown(void);
size_t	 stateless_running_calls(void);
int	 stateless_room(struct evhttp_request *);
void	 stateless_interrupt_calls(const char *);

#endif
