/* The provider table and the lookups across it. */
#include <stddef.h>
#include <string.h>

#include "conf.h"
#include "provider.h"

static const struct provider *provider_table[] = {
	&provider_builtin,
	&provider_fixtures,
	&provider_exec,
	&provider_upstream,
};
#define PROVIDER_COUNT (sizeof provider_table / sizeof provider_table[0])

static int	provider_on[PROVIDER_COUNT];

/* Each enabled provider that has hook `h`. */
#define PROVIDER_FOREACH(i, p, h)					\
	for ((i) = 0; (i) < PROVIDER_COUNT; (i)++)			\
		if (((p) = provider_table[(i)]), !provider_on[(i)] ||	\
		    (p)->h == NULL) {} else

void
provider_init(const struct conf *conf)
{
	size_t	i;

	for (i = 0; i < PROVIDER_COUNT; i++) {
		provider_on[i] = provider_table[i]->enabled(conf);
		if (provider_table[i]->configure != NULL)
			provider_table[i]->configure(conf);
	}
}

void
provider_session_closed(struct session *s)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, session_closed)
		p->session_closed(s);
}

void
provider_shutdown(void)
{
	size_t	i;

	for (i = 0; i < PROVIDER_COUNT; i++) {
		if (provider_table[i]->shutdown != NULL)
			provider_table[i]->shutdown();
	}
}

int
provider_lists_change(void)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, lists_change) {
		if (p->lists_change())
			return (1);
	}
	return (0);
}

/* Tools of the providers that list them, searched by name. */
static int
provider_lists_tool(const struct provider *p, const char *name)
{
	cJSON		*all;
	const cJSON	*t;
	int		 found = 0;

	if (p->has_tool != NULL)
		return (p->has_tool(name));
	all = cJSON_CreateArray();
	p->list_tools(all);
	cJSON_ArrayForEach(t, all) {
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    t, "name")) != NULL ? cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(t, "name")) : "",
		    name) == 0) {
			found = 1;
			break;
		}
	}
	cJSON_Delete(all);
	return (found);
}

const char *
provider_tool_owner(const char *name, const struct provider *self)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, list_tools) {
		if (p != self && provider_lists_tool(p, name))
			return (p->name);
	}
	return (NULL);
}

#define PROVIDER_HAS(fn, h)						\
int									\
fn(void)								\
{									\
	const struct provider	*p;					\
	size_t			 i;					\
									\
	PROVIDER_FOREACH(i, p, h)					\
		return (1);						\
	return (0);							\
}
PROVIDER_HAS(provider_has_resources, read_resource)
PROVIDER_HAS(provider_has_prompts, get_prompt)
PROVIDER_HAS(provider_has_completions, complete)

/* A list as session s sees it (NULL: as any session does). */
#define PROVIDER_LIST(fn, h, l)						\
cJSON *									\
fn(struct session *s)							\
{									\
	const struct provider	*p;					\
	cJSON			*all = cJSON_CreateArray();		\
	size_t			 i;					\
									\
	for (i = 0; i < PROVIDER_COUNT; i++) {				\
		p = provider_table[i];					\
		if (!provider_on[i])					\
			continue;					\
		if (p->list_for != NULL)				\
			p->list_for(s, l, all);				\
		else if (p->h != NULL)					\
			p->h(all);					\
	}								\
	return (all);							\
}
PROVIDER_LIST(provider_list_tools, list_tools, PROVIDER_TOOLS)
PROVIDER_LIST(provider_list_resources, list_resources, PROVIDER_RESOURCES)
PROVIDER_LIST(provider_list_resource_templates, list_resource_templates,
    PROVIDER_TEMPLATES)
PROVIDER_LIST(provider_list_prompts, list_prompts, PROVIDER_PROMPTS)

int
provider_call_tool(struct call *c, const char *name, const cJSON *args)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, call_tool) {
		if (p->call_tool(c, name, args) == 0)
			return (0);
	}
	return (-1);
}

int
provider_read_resource(struct call *c, const char *uri)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, read_resource) {
		if (p->read_resource(c, uri) == 0)
			return (0);
	}
	return (-1);
}

int
provider_subscribe(struct session *s, const char *uri)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, subscribe) {
		if (p->subscribe(s, uri) == 0)
			return (0);
	}
	return (-1);
}

int
provider_get_prompt(struct call *c, const char *name, const cJSON *args)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, get_prompt) {
		if (p->get_prompt(c, name, args) == 0)
			return (0);
	}
	return (-1);
}

int
provider_complete(struct call *c, const cJSON *ref, const cJSON *arg,
    const cJSON *context)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, complete) {
		if (p->complete(c, ref, arg, context) == 0)
			return (0);
	}
	return (-1);
}
