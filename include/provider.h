/*
 * Providers: where tools, resources and prompts come from (built-in
 * diagnostics, the conformance fixtures; exec programs and stdio MCP
 * servers later). Each provider lives in its own file and is registered in
 * the one table in provider.c. Any hook may be NULL.
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
	/* Whether the lists may change while a session lives. */
	int		(*lists_change)(void);
	/* Whether this provider serves tool NAME. */
	int		(*has_tool)(const char *);
	/*
	 * The lists as one session sees them (enum provider_list); when
	 * set, used in place of list_tools and the others.
	 */
	void		(*list_for)(struct session *, int, cJSON *);
};

enum provider_list {
	PROVIDER_TOOLS,
	PROVIDER_PROMPTS,
	PROVIDER_RESOURCES,
	PROVIDER_TEMPLATES
};

extern const struct provider provider_builtin;
extern const struct provider provider_fixtures;
extern const struct provider provider_exec;
extern const struct provider provider_upstream;

void	 provider_init(const struct conf *);
int	 provider_has_resources(void);
int	 provider_has_prompts(void);
int	 provider_has_completions(void);
int	 provider_lists_change(void);
void	 provider_session_closed(struct session *);
void	 provider_shutdown(void);
/* Which provider serves tool NAME, besides self (NULL: none). */
const char *provider_tool_owner(const char *, const struct provider *);

cJSON	*provider_list_tools(struct session *);
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
