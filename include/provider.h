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
};

extern const struct provider provider_builtin;
extern const struct provider provider_fixtures;
extern const struct provider provider_taskfix;
extern const struct provider provider_exec;

void	 provider_init(const struct conf *);
int	 provider_has_resources(void);
int	 provider_has_prompts(void);
int	 provider_has_completions(void);

cJSON	*provider_list_tools(void);
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
cJSON	*provider_list_resources(void);
cJSON	*provider_list_resource_templates(void);
int	 provider_read_resource(struct call *, const char *);
int	 provider_subscribe(struct session *, const char *);
cJSON	*provider_list_prompts(void);
int	 provider_get_prompt(struct call *, const char *, const cJSON *);
int	 provider_complete(struct call *, const cJSON *, const cJSON *,
	    const cJSON *);

#endif
