/*
 * Upstream MCP servers as a provider (provider_upstream.c). Which upstream
 * serves a tool, by the name clients call it: per-tool rules look it up.
 */
#ifndef MCPD_PROVIDER_UPSTREAM_H
#define MCPD_PROVIDER_UPSTREAM_H

const char	*provider_upstream_tool_owner(const char *);

#endif
