/*
 * Providers: where tools, resources and prompts come from (built-in
 * diagnostics, the conformance fixtures and their task tools, exec
 * programs, REST APIs described by OpenAPI, upstream MCP servers). Each
 * provider lives in its own file and is registered in the one table in
 * provider.c. Any hook may be NULL.
 *
 * Listing hooks append definitions to an array and return at once. Hooks
 * that take a call answer through it (call_respond, call_respond_error,
 * then call_release), now or later, and return 0; they return -1 without
 * touching the call when the name or URI is not theirs.
 */
#ifndef MCPD_PROVIDER_H
#define MCPD_PROVIDER_H

#include <cjson/cJSON.h>

struct call;
struct conf;
struct session;

/*
 * An item of a list, the OAuth scope it needs (NULL: none) and its source
 * (the upstream block it comes from, NULL for mcpd's own); 1: stop.
 */
typedef int	provider_walk_cb(const cJSON *, const char *, const char *,
		    void *);

struct provider {
	const char	*name;
	int		(*enabled)(const struct conf *);

	void		(*list_tools)(cJSON *);
	int		(*call_tool)(struct call *, const char *, const cJSON *);

	void		(*list_resources)(cJSON *);
	void		(*list_resource_templates)(cJSON *);
	int		(*read_resource)(struct call *, const char *);
	/* 0 if the URI is this provider's to watch, else -1. */
	int		(*subscribe)(struct session *, const char *);

	void		(*list_prompts)(cJSON *);
	int		(*get_prompt)(struct call *, const char *,
			    const cJSON *);

	/* completion/complete: ref object, argument object, context. */
	int		(*complete)(struct call *, const cJSON *, const cJSON *,
			    const cJSON *);

	/* The configuration was loaded (start, reload); enabled or not. */
	void		(*configure)(const struct conf *);
	/* A session ends here (closed, or released to another process). */
	void		(*session_closed)(struct session *);
	/* Shutdown: stop what runs (before exec.c reaps the programs). */
	void		(*shutdown)(void);
	/*
	 * Whether list (enum provider_list) may change while a client of
	 * revision rev (MCP_REV_*) uses it: clients are told so in the
	 * capabilities (listChanged), and hear of changes (announce.h).
	 */
	int		(*lists_change)(int, int);
	/* Whether this provider serves tool NAME. */
	int		(*has_tool)(const char *);
	/* The name of the upstream that serves tool NAME, or NULL. */
	const char	*(*tool_upstream)(const char *);
	/*
	 * The lists as one session sees them (enum provider_list); when
	 * set, used in place of list_tools and the others.
	 */
	void		(*list_for)(struct session *, int, cJSON *);
	/*
	 * A tool's taskSupport: "optional" or "required", NULL if the name
	 * is not one of this provider's task tools (then it is forbidden).
	 * What the listing marks (provider_task_support) must agree.
	 */
	const char	*(*task_support)(const char *);
	/*
	 * Whether a tool with taskSupport makes its task itself (it asks
	 * by MRTR first, then task_escalate): called as a plain call.
	 */
	int		(*task_self)(const char *);
	/* The OAuth scope a tool of this provider needs (NULL: none). */
	const char	*(*tool_scope)(const char *);
	/*
	 * The scope a prompt (by name), resource (by URI) or template (by
	 * uriTemplate) of this provider needs: enum provider_list, name.
	 */
	const char	*(*item_scope)(int, const char *);
	/*
	 * For large lists, in place of list_for: the items of a list that
	 * a session sees, from a position on, each with its scope, until
	 * the callback says stop (NULL: none is visited); returns how many
	 * items the list has. Items are the provider's, not copies.
	 */
	size_t		(*list_walk)(struct session *, int, size_t,
			    provider_walk_cb *, void *);
	/*
	 * The source of an item of list l this provider serves to session
	 * s (an upstream block's name), NULL if the item is not its: what
	 * an endpoint's upstreams line selects by.
	 */
	const char	*(*source)(struct session *, int, const char *);
};

enum provider_list {
	PROVIDER_TOOLS,
	PROVIDER_PROMPTS,
	PROVIDER_RESOURCES,
	PROVIDER_TEMPLATES
};

extern const struct provider provider_builtin;
extern const struct provider provider_fixtures;
extern const struct provider provider_taskfix;
extern const struct provider provider_exec;
extern const struct provider provider_openapi;
extern const struct provider provider_upstream;

void	 provider_init(const struct conf *);

/*
 * Endpoints' catalogs (conf.h, endpoint PATH { }): whether the endpoint
 * at path (NULL: everything is served) serves item name of list l to
 * session s (NULL: to a stateless client), its source looked up; the
 * same for an item of a walk with its source known; and whether a change
 * (announce.h) of source is one its clients hear (for a resource update,
 * of resource uri). A path no longer an endpoint (a reload took it away)
 * serves nothing.
 */
int	 provider_serves(const char *, struct session *, int, const char *);
int	 provider_serves_item(const char *, int, const cJSON *, const char *);
int	 provider_endpoint_hears(const char *, int, const char *,
	    const char *);
/* The name of an item of list l: name, uri, or a template's uriTemplate. */
const char *provider_item_key(int, const cJSON *);
/*
 * The name a tool goes by in mcpd for the name a client of the endpoint
 * at path calls it (its block's rename undone), or NULL when no tool goes
 * by that name there; and an item of list l as that endpoint shows it (a
 * copy, renamed and described as its block says), or NULL when its
 * renames hide it.
 */
const char *provider_endpoint_tool(const char *, const char *);
cJSON	*provider_endpoint_item(const char *, int, const cJSON *);
int	 provider_has_resources(void);
int	 provider_has_prompts(void);
int	 provider_has_completions(void);
int	 provider_lists_change(int, int);
/*
 * The same for the endpoint at path: a provider counts when the endpoint
 * serves anything of it (an upstream provider: one of its upstreams).
 */
int	 provider_endpoint_has(const char *, int);
int	 provider_endpoint_lists_change(const char *, int, int);
void	 provider_session_closed(struct session *);
void	 provider_shutdown(void);
/* Which provider serves tool NAME, besides self (NULL: none). */
const char *provider_tool_owner(const char *, const struct provider *);
/* Every tool of the providers other than self: [{name, provider}]. */
cJSON	*provider_other_tools(const struct provider *);
/* The upstream serving tool NAME (limits), or NULL: mcpd's own or none. */
const char *provider_tool_upstream(const char *);
/* The scope tool NAME needs (NULL: none), as its provider says. */
const char *provider_tool_scope(const char *);
/* The scope a prompt, resource or template needs (enum provider_list). */
const char *provider_item_scope(int, const char *);
/*
 * List l as session s sees it, from position from on: cb gets each item
 * with its scope until it returns 1. The list's length.
 */
size_t	 provider_list_walk(struct session *, int, size_t,
	    provider_walk_cb *, void *);

cJSON	*provider_list_tools(struct session *);
/*
 * A tool's execution.taskSupport (io.modelcontextprotocol/tasks): a
 * listing hook marks a tool definition with provider_task_support;
 * provider_tool_task asks the providers' task_support hooks (no listing
 * is built on a call's path): "forbidden" (the default, also for a tool
 * nobody has), "optional" or "required".
 */
void	 provider_task_support(cJSON *, const char *);
const char *provider_tool_task(const char *);
int	 provider_tool_task_self(const char *);
int	 provider_call_tool(struct call *, const char *, const cJSON *);
cJSON	*provider_list_resources(struct session *);
cJSON	*provider_list_resource_templates(struct session *);
int	 provider_read_resource(struct call *, const char *);
int	 provider_subscribe(struct session *, const char *);
cJSON	*provider_list_prompts(struct session *);
int	 provider_get_prompt(struct call *, const char *, const cJSON *);
int	 provider_complete(struct call *, const cJSON *, const cJSON *,
	    const cJSON *);

#endif
