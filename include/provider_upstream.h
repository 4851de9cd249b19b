/*
 * Upstream MCP servers as a provider (provider_upstream.c). Which upstream
 * serves a tool, by the name clients call it: per-tool rules look it up.
 */
#ifndef MCPD_PROVIDER_UPSTREAM_H
#define MCPD_PROVIDER_UPSTREAM_H

const char	*provider_upstream_tool_owner(const char *);

/* What /metrics says of upstream i (0 to provider_upstream_count - 1). */
struct provider_upstream_stats {
	const char		*name;
	int			 up;		/* its main instance is ready */
	unsigned int		 instances;	/* running, the main one too */
	unsigned int		 inflight;	/* requests, all instances */
	unsigned long long	 exits;		/* runs ended, all instances */
};
size_t		 provider_upstream_count(void);
void		 provider_upstream_stats(size_t,
		     struct provider_upstream_stats *);

#endif
