/*
 * The provider table and the lookups across it, and what an endpoint's
 * catalog (conf.h, endpoint PATH { }) lets through of them.
 */
#include <stddef.h>
#include <string.h>

#include "announce.h"
#include "conf.h"
#include "provider.h"
#include "server.h"

static const struct provider *provider_table[] = {
	&provider_builtin,
	&provider_fixtures,
	&provider_taskfix,
	&provider_exec,
	&provider_openapi,
	&provider_upstream,
};
#define PROVIDER_COUNT (sizeof provider_table / sizeof provider_table[0])

static int	provider_on[PROVIDER_COUNT];

/* A walk across providers: the caller's callback, and whether it stopped. */
struct provider_walk {
	provider_walk_cb	*cb;
	void			*arg;
	int			*stop;
};

static int
provider_walk_stop_cb(const cJSON *item, const char *scope,
    const char *source, void *arg)
{
	struct provider_walk	*w = arg;

	*w->stop = w->cb(item, scope, source, w->arg);
	return (*w->stop);
}

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

/* ---------------------------------------------------------------------
 * Endpoints.
 */

/*
 * The endpoint block at path into *ep (NULL: none); 0 when path is no
 * endpoint at all any more (a reload took its block away), which serves
 * nothing. path NULL (a unit test, a call of no endpoint) serves all.
 */
static int
provider_endpoint(const char *path, const struct conf_endpoint **ep)
{
	*ep = NULL;
	if (path == NULL)
		return (1);
	*ep = conf_endpoint_find(server.conf, path);
	return (*ep != NULL || strcmp(path, server.conf->endpoint) == 0);
}

/* The catalog list (conf.h) of a provider list: templates are resources. */
static int
provider_catalog_list(int l)
{
	switch (l) {
	case PROVIDER_TOOLS:
		return (CONF_CATALOG_TOOLS);
	case PROVIDER_PROMPTS:
		return (CONF_CATALOG_PROMPTS);
	default:
		return (CONF_CATALOG_RESOURCES);
	}
}

const char *
provider_item_key(int l, const cJSON *item)
{
	return (cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item,
	    l == PROVIDER_RESOURCES ? "uri" : l == PROVIDER_TEMPLATES ?
	    "uriTemplate" : "name")));
}

/* The source of item name of list l as s sees it (NULL: mcpd's own). */
static const char *
provider_source(struct session *s, int l, const char *name)
{
	const struct provider	*p;
	const char		*source;
	size_t			 i;

	PROVIDER_FOREACH(i, p, source) {
		if ((source = p->source(s, l, name)) != NULL)
			return (source);
	}
	return (NULL);
}

int
provider_serves(const char *path, struct session *s, int l,
    const char *name)
{
	const struct conf_endpoint	*ep;

	if (!provider_endpoint(path, &ep))
		return (0);
	if (ep == NULL)
		return (1);
	return (conf_endpoint_serves(ep, provider_catalog_list(l), name,
	    provider_source(s, l, name)));
}

int
provider_serves_item(const char *path, int l, const cJSON *item,
    const char *source)
{
	const struct conf_endpoint	*ep;
	const char			*name;

	if (!provider_endpoint(path, &ep))
		return (0);
	if (ep == NULL)
		return (1);
	if ((name = provider_item_key(l, item)) == NULL)
		return (0);
	return (conf_endpoint_serves(ep, provider_catalog_list(l), name,
	    source));
}

const char *
provider_endpoint_tool(const char *path, const char *name)
{
	const struct conf_endpoint	*ep;

	if (!provider_endpoint(path, &ep) || ep == NULL)
		return (name);
	return (conf_catalog_own_name(&ep->catalog, name));
}

cJSON *
provider_endpoint_item(const char *path, int l, const cJSON *item)
{
	const struct conf_endpoint	*ep;
	const char			*name, *served, *text;
	cJSON				*copy;

	if (!provider_endpoint(path, &ep) || ep == NULL ||
	    l != PROVIDER_TOOLS || (name = provider_item_key(l, item)) == NULL)
		return (cJSON_Duplicate(item, 1));
	served = conf_catalog_served_name(&ep->catalog, name);
	/* A tool named as another's new name is that one's there. */
	if (served == name && conf_catalog_own_name(&ep->catalog, name) !=
	    name)
		return (NULL);
	copy = cJSON_Duplicate(item, 1);
	if (served != name)
		cJSON_ReplaceItemInObjectCaseSensitive(copy, "name",
		    cJSON_CreateString(served));
	if ((text = conf_catalog_description(&ep->catalog, name)) != NULL) {
		cJSON_DeleteItemFromObjectCaseSensitive(copy, "description");
		cJSON_AddStringToObject(copy, "description", text);
	}
	return (copy);
}

/*
 * A change of source ("" or NULL: mcpd's own) reaches the endpoint at
 * path when it serves that source, and for a resource update, that URI.
 * A list change is not matched item by item: an endpoint serving the
 * source hears it even if the items that changed are ones its patterns
 * leave out, and then lists again to find its own list as it was.
 */
int
provider_endpoint_hears(const char *path, int kind, const char *uri,
    const char *source)
{
	const struct conf_endpoint	*ep;

	if (source != NULL && *source == '\0')
		source = NULL;
	if (!provider_endpoint(path, &ep))
		return (0);
	if (ep == NULL)
		return (1);
	if (kind == ANNOUNCE_RESOURCE_UPDATED)
		return (conf_endpoint_serves(ep, CONF_CATALOG_RESOURCES, uri,
		    source));
	return (conf_endpoint_serves_source(ep, source));
}

/* Whether the endpoint serves anything of provider p (its sources). */
static int
provider_endpoint_uses(const struct conf_endpoint *ep,
    const struct provider *p)
{
	if (ep == NULL || p->source == NULL)
		return (1);
	return (ep->all_upstreams || ep->nupstreams > 0);
}

int
provider_endpoint_has(const char *path, int l)
{
	const struct conf_endpoint	*ep;
	const struct provider		*p;
	size_t				 i;

	if (!provider_endpoint(path, &ep))
		return (0);
	for (i = 0; i < PROVIDER_COUNT; i++) {
		p = provider_table[i];
		if (!provider_on[i] || !provider_endpoint_uses(ep, p))
			continue;
		if ((l == PROVIDER_PROMPTS && p->get_prompt != NULL) ||
		    (l != PROVIDER_PROMPTS && p->read_resource != NULL))
			return (1);
	}
	return (0);
}

int
provider_endpoint_lists_change(const char *path, int rev, int list)
{
	const struct conf_endpoint	*ep;
	const struct provider		*p;
	size_t				 i;

	if (!provider_endpoint(path, &ep))
		return (0);
	PROVIDER_FOREACH(i, p, lists_change) {
		if (provider_endpoint_uses(ep, p) && p->lists_change(rev, list))
			return (1);
	}
	return (0);
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
provider_lists_change(int rev, int list)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, lists_change) {
		if (p->lists_change(rev, list))
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

cJSON *
provider_other_tools(const struct provider *self)
{
	const struct provider	*p;
	cJSON			*all = cJSON_CreateArray(), *some, *t, *o;
	const char		*name;
	size_t			 i;

	PROVIDER_FOREACH(i, p, list_tools) {
		if (p == self)
			continue;
		some = cJSON_CreateArray();
		p->list_tools(some);
		cJSON_ArrayForEach(t, some) {
			name = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(t, "name"));
			if (name == NULL)
				continue;
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			cJSON_AddStringToObject(o, "provider", p->name);
			cJSON_AddItemToArray(all, o);
		}
		cJSON_Delete(some);
	}
	return (all);
}

const char *
provider_item_scope(int l, const char *name)
{
	const struct provider	*p;
	const char		*scope;
	size_t			 i;

	PROVIDER_FOREACH(i, p, item_scope) {
		if ((scope = p->item_scope(l, name)) != NULL)
			return (scope);
	}
	return (NULL);
}

/* A provider's list, made whole (small lists: the built-in ones). */
static cJSON *
provider_list_one(const struct provider *p, struct session *s, int l)
{
	cJSON	*all = cJSON_CreateArray();
	void	(*list)(cJSON *) = NULL;

	if (p->list_for != NULL) {
		p->list_for(s, l, all);
		return (all);
	}
	switch (l) {
	case PROVIDER_TOOLS:
		list = p->list_tools;
		break;
	case PROVIDER_PROMPTS:
		list = p->list_prompts;
		break;
	case PROVIDER_RESOURCES:
		list = p->list_resources;
		break;
	case PROVIDER_TEMPLATES:
		list = p->list_resource_templates;
		break;
	}
	if (list != NULL)
		list(all);
	return (all);
}

size_t
provider_list_walk(struct session *s, int l, size_t from,
    provider_walk_cb *cb, void *arg)
{
	const struct provider	*p;
	cJSON			*all;
	const cJSON		*item;
	size_t			 i, n, total = 0;
	int			 stop = cb == NULL;

	for (i = 0; i < PROVIDER_COUNT; i++) {
		p = provider_table[i];
		if (!provider_on[i])
			continue;
		if (p->list_walk != NULL) {
			n = p->list_walk(s, l, stop ? 0 : from, stop ? NULL :
			    provider_walk_stop_cb, &(struct provider_walk){
			    cb, arg, &stop });
		} else {
			all = provider_list_one(p, s, l);
			n = (size_t)cJSON_GetArraySize(all);
			if (!stop && from < n) {
				item = cJSON_GetArrayItem(all, (int)from);
				for (; item != NULL && !stop; item = item->next)
					stop = cb(item, NULL, NULL, arg);
			}
			cJSON_Delete(all);
		}
		total += n;
		from -= from >= n ? n : from;
	}
	return (total);
}

/*
 * The OAuth scope a tool needs (NULL: none): the first tool_scope hook
 * that knows it. What auth_scope_allowed and auth_scopes_needed are
 * given for a tool.
 */
const char *
provider_tool_upstream(const char *name)
{
	const struct provider	*p;
	const char		*up;
	size_t			 i;

	PROVIDER_FOREACH(i, p, tool_upstream) {
		if ((up = p->tool_upstream(name)) != NULL)
			return (up);
	}
	return (NULL);
}

const char *
provider_tool_scope(const char *name)
{
	const struct provider	*p;
	const char		*scope;
	size_t			 i;

	PROVIDER_FOREACH(i, p, tool_scope) {
		if ((scope = p->tool_scope(name)) != NULL)
			return (scope);
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

void
provider_task_support(cJSON *tool, const char *support)
{
	cJSON	*execution = cJSON_AddObjectToObject(tool, "execution");

	cJSON_AddStringToObject(execution, "taskSupport", support);
}

const char *
provider_tool_task(const char *name)
{
	const struct provider	*p;
	const char		*support;
	size_t			 i;

	PROVIDER_FOREACH(i, p, task_support) {
		if ((support = p->task_support(name)) != NULL)
			return (support);
	}
	return ("forbidden");
}

int
provider_tool_task_self(const char *name)
{
	const struct provider	*p;
	size_t			 i;

	PROVIDER_FOREACH(i, p, task_self) {
		if (p->task_self(name))
			return (1);
	}
	return (0);
}
