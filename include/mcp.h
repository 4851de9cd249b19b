/*
 * What the Model Context Protocol itself defines that several files need:
 * the revisions this server speaks, the logging levels a client sets, and
 * the capability a server-to-client request needs of the client.
 */
#ifndef MCPD_MCP_H
#define MCPD_MCP_H

#include <cjson/cJSON.h>

/*
 * The two families of revisions, as masks: the 2025-era ones of
 * mcp_versions, spoken in sessions, and 2026-07-28, stateless
 * (stateless.c). The method table (dispatch.c) says which serves a
 * method; providers say for which their lists change.
 */
#define MCP_REV_2025		0x1
#define MCP_REV_2026		0x2
#define MCP_STATELESS_VERSION	"2026-07-28"

/* The session revisions, oldest first; the last is preferred. */
extern const char *mcp_versions[];
int		 mcp_version_supported(const char *);
cJSON		*mcp_supported_versions(void);
int		 mcp_version_at_least(const char *, const char *);

/* MCP logging levels, in RFC 5424 order. */
int		 mcp_log_level_parse(const char *);
const char	*mcp_log_level_name(int);

/* "sampling", "elicitation" or "roots" for their requests; else NULL. */
const char	*mcp_request_capability(const char *);

#endif
