/* MCP over JSON-RPC: what each method does, independent of HTTP. */
#ifndef MCPD_DISPATCH_H
#define MCPD_DISPATCH_H

#include <cjson/cJSON.h>

struct session;
struct stream;

#define MCPD_VERSION	"0.1.0"

cJSON	*dispatch_initialize(const cJSON *, struct session **, char **);
int	 dispatch_streams(const cJSON *);
cJSON	*dispatch_quick(struct session *, const cJSON *);
void	 dispatch_start(struct session *, struct stream *, const cJSON *);
void	 dispatch_start_batch(struct session *, struct stream *,
	    const cJSON *);
void	 dispatch_notification(struct session *, const cJSON *);
int	 dispatch_response(struct session *, const cJSON *);

#endif
