/*
 * OpenAPI blocks: REST APIs served as MCP tools (docs/openapi.md). The
 * provider itself is provider_openapi in provider.h.
 */
#ifndef MCPD_PROVIDER_OPENAPI_H
#define MCPD_PROVIDER_OPENAPI_H

#include <stdio.h>

struct conf;

/*
 * Reads each block's document as the provider would and makes its tools:
 * 0, or -1 with *cause naming the block and what is wrong. Documents
 * given by URL are fetched only with urls (mcpd -t), each within its
 * block's timeout on a loop of its own; out, if not NULL, gets a line
 * per block and one per tool (names, methods, paths: no header value).
 */
int	 provider_openapi_check(const struct conf *, FILE *, int, char **);
/* What /metrics says of each block. */
struct provider_openapi_stats {
	const char		*name;
	size_t			 tools;		/* served */
	size_t			 inflight;	/* calls */
	int			 loaded;	/* it has a catalog */
	unsigned long long	 failures;	/* readings that failed */
};

size_t	 provider_openapi_count(void);
void	 provider_openapi_stats(size_t, struct provider_openapi_stats *);

#endif
