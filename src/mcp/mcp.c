/*
 * Protocol revisions and logging levels (docs/protocol.md). Revisions are
 * dates, so string order is release order.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "mcp.h"

const char *mcp_versions[] = {
	"2025-03-26", "2025-06-18", "2025-11-25", NULL
};

static const char *mcp_log_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert",
	"emergency", NULL
};

int
mcp_version_supported(const char *version)
{
	int	i;

	for (i = 0; mcp_versions[i] != NULL; i++) {
		if (strcmp(mcp_versions[i], version) == 0)
			return (1);
	}
	return (0);
}

/* Every revision spoken, newest first: the stateless one, then sessions'. */
cJSON *
mcp_supported_versions(void)
{
	cJSON	*list = cJSON_CreateArray();
	int	 i, n;

	cJSON_AddItemToArray(list, cJSON_CreateString(MCP_STATELESS_VERSION));
	for (n = 0; mcp_versions[n] != NULL; n++)
		;
	for (i = n - 1; i >= 0; i--)
		cJSON_AddItemToArray(list, cJSON_CreateString(mcp_versions[i]));
	return (list);
}

int
mcp_version_at_least(const char *version, const char *min)
{
	return (strcmp(version, min) >= 0);
}

int
mcp_log_level_parse(const char *name)
{
	int	i;

	for (i = 0; mcp_log_levels[i] != NULL; i++) {
		if (strcmp(mcp_log_levels[i], name) == 0)
			return (i);
	}
	return (-1);
}

/* An unknown level reads as "info", the default. */
const char *
mcp_log_level_name(int level)
{
	if (level < 0 || level > 7)
		return ("info");
	return (mcp_log_levels[level]);
}

const char *
mcp_request_capability(const char *method)
{
	if (strcmp(method, "sampling/createMessage") == 0)
		return ("sampling");
	if (strcmp(method, "elicitation/create") == 0)
		return ("elicitation");
	if (strcmp(method, "roots/list") == 0)
		return ("roots");
	return (NULL);
}
