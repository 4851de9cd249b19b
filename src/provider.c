/* The provider table and the lookups across it. */
#include <stddef.h>

#include "conf.h"
#include "provider.h"

static const struct provider *provider_table[] = {
	&provider_builtin,
};
#define PROVIDER_COUNT (sizeof provider_table / sizeof provider_table[0])

static int	provider_on[PROVIDER_COUNT];

void
provider_init(const struct conf *conf)
{
	size_t	i;

	for (i = 0; i < PROVIDER_COUNT; i++)
		provider_on[i] = provider_table[i]->enabled(conf);
}

cJSON *
provider_list_tools(void)
{
	cJSON	*tools = cJSON_CreateArray();
	size_t	 i;

	for (i = 0; i < PROVIDER_COUNT; i++) {
		if (provider_on[i])
			provider_table[i]->list_tools(tools);
	}
	return (tools);
}

int
provider_call_tool(struct call *c, const char *name, const cJSON *args)
{
	size_t	i;

	for (i = 0; i < PROVIDER_COUNT; i++) {
		if (provider_on[i] &&
		    provider_table[i]->call_tool(c, name, args) == 0)
			return (0);
	}
	return (-1);
}

cJSON *
provider_text_result(const char *text, int is_error)
{
	cJSON	*result = cJSON_CreateObject();
	cJSON	*content = cJSON_AddArrayToObject(result, "content");
	cJSON	*item = cJSON_CreateObject();

	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", text);
	cJSON_AddItemToArray(content, item);
	if (is_error)
		cJSON_AddBoolToObject(result, "isError", 1);
	return (result);
}
