#ifndef MCPD_MODERN_H
#define MCPD_MODERN_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct auth_principal;
struct evhttp_request;
struct modern_req;

int	 modern_claims(struct evhttp_request *, const cJSON *);
/* A request modern_claims took (taken), for a principal (NULL: no auth). */
void	 modern_serve(struct evhttp_request *, cJSON *,
	    struct auth_principal *);
const cJSON *modern_request_id(const struct modern_req *);
void	 modern_respond(struct modern_req *, cJSON *);
void	 modern_init(void);
void	 modern_cron(void);
void	 modern_shutdown(void);
size_t	 modern_running_calls(void);
size_t	 modern_listen_count(void);
int	 modern_room(void);
void	 modern_interrupt_calls(const char *);

/* What a listen stream can be told (its filter's fields). */
enum modern_change {
	MODERN_TOOLS_CHANGED,
	MODERN_PROMPTS_CHANGED,
	MODERN_RESOURCES_CHANGED,
	MODERN_RESOURCE_UPDATED,
	MODERN_TASK_CHANGED	/* the tasks extension: uri is the task id */
};
void	 modern_notify(enum modern_change, const char *);

#endif
