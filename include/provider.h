/*
 * Providers: where tools come from (built-in diagnostics now; conformance
 * fixtures, exec programs and stdio MCP servers later). Each provider lives
 * in its own file and is registered in the one table in provider.c.
 */
#ifndef MCPD_PROVIDER_H
#define MCPD_PROVIDER_H

#include <cjson/cJSON.h>

struct call;
struct conf;

struct provider {
	const char	*name;
	int		(*enabled)(const struct conf *);
	/* Appends this provider's tool definitions to an array. */
	void		(*list_tools)(cJSON *);
	/* Starts a call: 0 if the tool is this provider's, else -1. */
	int		(*call_tool)(struct call *, const char *, const cJSON *);
};

extern const struct provider provider_builtin;

void	 provider_init(const struct conf *);
cJSON	*provider_list_tools(void);
int	 provider_call_tool(struct call *, const char *, const cJSON *);
cJSON	*provider_text_result(const char *, int);

#endif
