/*
 * subscriptions/listen streams (MCP 2026-07-28): change notifications on
 * an SSE response, of every instance sharing the log (announce.h).
 */
#ifndef MCPD_LISTEN_H
#define MCPD_LISTEN_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct auth_principal;
struct evhttp_request;

/*
 * A validated listen request (id and params copied), for principal who at
 * an endpoint's path (whose catalog's changes it hears; copied).
 */
void	 listen_start(struct evhttp_request *, const cJSON *, const cJSON *,
	    struct auth_principal *, const char *);
size_t	 listen_count(void);
void	 listen_init(void);
void	 listen_cron(void);
void	 listen_shutdown(void);

#endif
