/*
 * Method dispatch, driven by one table for both revisions
 * (dispatch_methods, below the handlers), as nginx's ngx_command_t says
 * in which contexts a directive is allowed: each method's name, how it
 * runs, the revisions that have it (MCP_REV_*), its flags, the params
 * member that names what it is about, whose scope authorization checks,
 * the capability that enables it, and its handler. Quick methods answer at
 * once (the transport sends them as a JSON body); methods that may take
 * time or send notifications run as calls, on a request stream (where
 * their response is the last entry) or a stateless request's response.
 * Both edges ask the table (dispatch_streams, dispatch_sessionless,
 * dispatch_lookup, dispatch_scope) rather than naming methods.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "auth.h"
#include "call.h"
#include "dispatch.h"
#include "jsonrpc.h"
#include "limit.h"
#include "log.h"
#include "mcp.h"
#include "mcpd.h"
#include "mcptrace.h"
#include "outbound.h"
#include "provider.h"
#include "session.h"
#include "stream.h"
#include "task.h"
#include "trace.h"
#include "xmalloc.h"

/* tools/list page size; small lists fit on one page. */
#define DISPATCH_PAGE	100

struct dispatch_error {
	int		 code;
	const char	*message;
};

/*
 * Whom a method answers: a session's client, or a stateless one, in
 * revision rev (MCP_REV_*).
 */
struct dispatch_ctx {
	struct session			*s;	/* NULL: stateless */
	const struct auth_principal	*who;	/* NULL without auth */
	int				 rev;
	const char			*endpoint; /* whose catalog */
};

static const char *
dispatch_method(const cJSON *req)
{
	const cJSON	*m = cJSON_GetObjectItemCaseSensitive(req, "method");

	return (cJSON_IsString(m) ? m->valuestring : "");
}

static const cJSON *
dispatch_params(const cJSON *req)
{
	return (cJSON_GetObjectItemCaseSensitive(req, "params"));
}

/*
 * jsonrpc_classify left a request's params to be checked here, once for
 * every method: a name or text with a NUL would reach a provider cut at
 * the NUL (tool "echo\u0000zzz" run as echo), so it is refused whole
 * (-32602 with this message). The stateless edge asks before its other
 * checks (stateless_serve); on the session path it is checked as a
 * method runs.
 */
#define DISPATCH_NUL_PARAMS \
	"Invalid params: a name or string contains NUL (\\u0000)"

const char *
dispatch_params_refused(const cJSON *req)
{
	return (jsonrpc_has_nul(dispatch_params(req)) ? DISPATCH_NUL_PARAMS :
	    NULL);
}

/* Checked here on the session path; the stateless edge checked already. */
static int
dispatch_params_ok(int rev, const cJSON *req, struct dispatch_error *err)
{
	if (rev == MCP_REV_2026 ||
	    (err->message = dispatch_params_refused(req)) == NULL)
		return (1);
	err->code = JSONRPC_INVALID_PARAMS;
	return (0);
}

/*
 * The server's capabilities for a revision (MCP_REV_*) on the endpoint at
 * path (NULL: everything served), as initialize and server/discover say
 * them: what the endpoint's providers serve, listChanged as their
 * lists_change.
 */
cJSON *
dispatch_capabilities(int rev, const char *path)
{
	cJSON	*caps = cJSON_CreateObject();
	cJSON	*tools = cJSON_AddObjectToObject(caps, "tools");

	cJSON	*resources, *prompts;

	cJSON_AddBoolToObject(tools, "listChanged",
	    provider_endpoint_lists_change(path, rev, PROVIDER_TOOLS));
	cJSON_AddObjectToObject(caps, "logging");
	if (provider_endpoint_has(path, PROVIDER_RESOURCES)) {
		resources = cJSON_AddObjectToObject(caps, "resources");
		cJSON_AddBoolToObject(resources, "subscribe", 1);
		cJSON_AddBoolToObject(resources, "listChanged",
		    provider_endpoint_lists_change(path, rev,
		    PROVIDER_RESOURCES));
	}
	if (provider_endpoint_has(path, PROVIDER_PROMPTS)) {
		prompts = cJSON_AddObjectToObject(caps, "prompts");
		cJSON_AddBoolToObject(prompts, "listChanged",
		    provider_endpoint_lists_change(path, rev,
		    PROVIDER_PROMPTS));
	}
	if (provider_has_completions())
		cJSON_AddObjectToObject(caps, "completions");
	return (caps);
}

/*
 * initialize: negotiates the revision (the client's if supported, else our
 * latest, per the lifecycle spec) and creates the session. The response is
 * for the client once cb (session_create's) says the session is stored;
 * NULL is a refusal, with why and a static *cause, and cb never runs.
 */
cJSON *
dispatch_initialize(const cJSON *req, struct auth_principal *principal,
    const char *endpoint, enum dispatch_refusal *why, const char **cause,
    session_stored_fn cb, void *arg)
{
	const cJSON	*params = dispatch_params(req);
	const cJSON	*requested;
	const char	*version;
	cJSON		*result, *info;
	struct session	*s;
	struct trace_span *sp;
	int		 i;

	*why = DISPATCH_INVALID;
	if (jsonrpc_has_nul(params)) {
		*cause = DISPATCH_NUL_PARAMS;
		return (NULL);
	}
	requested = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	if (!cJSON_IsString(requested)) {
		*cause = "initialize needs params.protocolVersion";
		return (NULL);
	}
	version = requested->valuestring;
	if (!mcp_version_supported(version)) {
		for (i = 0; mcp_versions[i + 1] != NULL; i++)
			;
		version = mcp_versions[i];
	}
	sp = mcptrace_server(req, NULL, version, NULL);
	i = trace_enter(sp);
	s = session_create(version, params, principal, endpoint, cb,
	    arg);
	trace_leave(i);
	if (s == NULL) {
		mcptrace_error(sp, JSONRPC_INTERNAL_ERROR, "too many sessions");
		trace_end(sp);
		*why = DISPATCH_FULL;
		*cause = "too many sessions";
		return (NULL);
	}
	trace_attr_str(sp, "mcp.session.id", session_id(s));
	trace_end(sp);
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "protocolVersion", version);
	cJSON_AddItemToObject(result, "capabilities",
	    dispatch_capabilities(MCP_REV_2025, endpoint));
	info = cJSON_AddObjectToObject(result, "serverInfo");
	cJSON_AddStringToObject(info, "name", "mcpd");
	cJSON_AddStringToObject(info, "version", MCPD_VERSION);
	return (jsonrpc_result(cJSON_GetObjectItemCaseSensitive(req, "id"),
	    result));
}

/*
 * A list method's cursor is the decimal offset of its page: opaque to
 * clients, who only hand back a nextCursor. So anything else (not
 * canonical decimal, not a page start, not inside the list) is refused
 * before any arithmetic on it, which cannot then overflow.
 */
static int
dispatch_cursor(const cJSON *cursor, long count, long *offset)
{
	const char	*p;
	long		 n = 0;

	*offset = 0;
	if (cursor == NULL || cJSON_IsNull(cursor))
		return (0);
	if (!cJSON_IsString(cursor) || cursor->valuestring[0] == '0')
		return (-1);
	for (p = cursor->valuestring; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n >= count)
			return (-1);
	}
	if (p == cursor->valuestring || *p != '\0' || n % DISPATCH_PAGE != 0)
		return (-1);
	*offset = n;
	return (0);
}

/* A page being cut: DISPATCH_PAGE positions of the list, from start. */
struct dispatch_cut {
	int				 l;
	const struct auth_principal	*who;
	const char			*endpoint;
	cJSON				*page;
	int				 n;	/* items on it */
	long				 pos;	/* of the next item */
	long				 end;	/* of this page's positions */
};

/*
 * A page holds what the principal may see of DISPATCH_PAGE positions of
 * the list, so a cursor is a position found without scanning, whatever
 * the principal: a tool it lacks the scope for, or one the endpoint does
 * not serve, leaves a hole, not a shift. A run of positions it may see
 * nothing of is passed over, so no page but the last is empty.
 */
static int
dispatch_cut_cb(const cJSON *item, const char *scope, const char *source,
    void *arg)
{
	struct dispatch_cut	*c = arg;
	const cJSON		*name;
	cJSON			*shown;
	int			 allowed;

	if (c->pos >= c->end) {
		if (c->n > 0)
			return (1);
		c->end += DISPATCH_PAGE;
	}
	c->pos++;
	if (c->l == PROVIDER_TOOLS) {
		name = cJSON_GetObjectItemCaseSensitive(item, "name");
		allowed = !cJSON_IsString(name) || !auth_enabled() ||
		    auth_scope_allowed(c->who,
		    provider_tool_scope(name->valuestring));
	} else
		allowed = auth_scope_allowed(c->who, scope);
	if (allowed && provider_serves_item(c->endpoint, c->l, item, source) &&
	    (shown = provider_endpoint_item(c->endpoint, c->l, item)) != NULL) {
		cJSON_AddItemToArray(c->page, shown);
		c->n++;
	}
	return (0);
}

/* One page of list l as the context's session and principal see it. */
static cJSON *
dispatch_page(const struct dispatch_ctx *ctx, int l, const cJSON *params,
    const char *key, struct dispatch_error *err)
{
	struct dispatch_cut	 c;
	cJSON			*result;
	char			 next[32];
	long			 offset, count;

	count = (long)provider_list_walk(ctx->s, l, 0, NULL, NULL);
	if (dispatch_cursor(cJSON_GetObjectItemCaseSensitive(params, "cursor"),
	    count, &offset) != 0) {
		err->code = JSONRPC_INVALID_PARAMS;
		err->message = "Invalid params: bad pagination cursor";
		return (NULL);
	}
	result = cJSON_CreateObject();
	memset(&c, 0, sizeof c);
	c.l = l;
	c.who = ctx->who;
	c.endpoint = ctx->endpoint;
	c.page = cJSON_AddArrayToObject(result, key);
	c.pos = offset;
	c.end = offset + DISPATCH_PAGE;
	provider_list_walk(ctx->s, l, (size_t)offset, dispatch_cut_cb, &c);
	if (c.pos < count) {
		snprintf(next, sizeof next, "%ld", c.end);
		cJSON_AddStringToObject(result, "nextCursor", next);
	}
	return (result);
}

/* --- quick methods ------------------------------------------------------ */

static cJSON *
dispatch_ping(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (cJSON_CreateObject());
}

/* initialize is answered before a session exists; in one it is refused. */
static cJSON *
dispatch_reinitialize(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	err->code = JSONRPC_INVALID_REQUEST;
	err->message = "Invalid Request: session already initialized";
	return (NULL);
}

/* Only the items the principal may see (auth_scope_allowed). */
static cJSON *
dispatch_tools_list(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (dispatch_page(ctx, PROVIDER_TOOLS, params, "tools", err));
}

static cJSON *
dispatch_resources_list(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (dispatch_page(ctx, PROVIDER_RESOURCES, params, "resources",
	    err));
}

static cJSON *
dispatch_templates_list(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (dispatch_page(ctx, PROVIDER_TEMPLATES, params,
	    "resourceTemplates", err));
}

static cJSON *
dispatch_prompts_list(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (dispatch_page(ctx, PROVIDER_PROMPTS, params, "prompts", err));
}

static cJSON *
dispatch_subscription(const struct dispatch_ctx *ctx, const cJSON *params,
    int on, struct dispatch_error *err)
{
	const cJSON	*uri = cJSON_GetObjectItemCaseSensitive(params, "uri");
	struct session	*s = ctx->s;

	if (!cJSON_IsString(uri)) {
		err->code = JSONRPC_INVALID_PARAMS;
		err->message = "Invalid params: uri must be a string";
		return (NULL);
	}
	if (!on) {
		session_unsubscribe(s, uri->valuestring);
		return (cJSON_CreateObject());
	}
	if (!provider_serves(ctx->endpoint, s, PROVIDER_RESOURCES,
	    uri->valuestring) || provider_subscribe(s, uri->valuestring) != 0) {
		err->code = JSONRPC_RESOURCE_NOT_FOUND;
		err->message = "Resource not found";
		return (NULL);
	}
	if (session_subscribe(s, uri->valuestring) != 0) {
		err->code = JSONRPC_INVALID_PARAMS;
		err->message = "Too many subscriptions in this session";
		return (NULL);
	}
	return (cJSON_CreateObject());
}

static cJSON *
dispatch_subscribe(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (dispatch_subscription(ctx, params, 1, err));
}

static cJSON *
dispatch_unsubscribe(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	return (dispatch_subscription(ctx, params, 0, err));
}

static cJSON *
dispatch_set_level(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	const cJSON	*level = cJSON_GetObjectItemCaseSensitive(params, "level");
	int		 n;

	if (!cJSON_IsString(level) ||
	    (n = mcp_log_level_parse(level->valuestring)) < 0) {
		err->code = JSONRPC_INVALID_PARAMS;
		err->message = "Invalid params: unknown log level";
		return (NULL);
	}
	session_set_log_level(ctx->s, n);
	return (cJSON_CreateObject());
}

/* 2026-07-28: the revisions spoken, and the capabilities of this one. */
static cJSON *
dispatch_discover(const struct dispatch_ctx *ctx, const cJSON *params,
    struct dispatch_error *err)
{
	cJSON	*result = cJSON_CreateObject(), *caps;

	cJSON_AddItemToObject(result, "supportedVersions",
	    mcp_supported_versions());
	caps = dispatch_capabilities(MCP_REV_2026, ctx->endpoint);
	task_capabilities(caps);
	cJSON_AddItemToObject(result, "capabilities", caps);
	return (result);
}

/* --- call methods ------------------------------------------------------- */

static void	dispatch_call_error(struct call *, int, const char *);

/*
 * tasks/get, tasks/update, tasks/cancel: for requests that declare the
 * extension in their _meta, as the extension says of every request.
 */
static void
dispatch_task_method(struct call *c, const char *method, const cJSON *params)
{
	if (!task_declared(params)) {
		call_respond_missing_capability(c, NULL, TASK_EXTENSION);
		call_release(c);
		return;
	}
	task_run_method(method, params, call_principal(c),
	    task_answer_call, c);
}

static void
dispatch_tasks_get(struct call *c, const cJSON *params)
{
	dispatch_task_method(c, "tasks/get", params);
}

static void
dispatch_tasks_update(struct call *c, const cJSON *params)
{
	dispatch_task_method(c, "tasks/update", params);
}

static void
dispatch_tasks_cancel(struct call *c, const cJSON *params)
{
	dispatch_task_method(c, "tasks/cancel", params);
}

static void
dispatch_unknown_tool(struct call *c, const char *name)
{
	char	*message;

	xasprintf(&message, "Unknown tool: %s", name);
	call_respond_error(c, JSONRPC_INVALID_PARAMS, message);
	call_release(c);
	free(message);
}

static void
dispatch_tools_call(struct call *c, const cJSON *params)
{
	const cJSON	*name, *args;
	const char	*tool;

	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name) || (args != NULL && !cJSON_IsObject(args))) {
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: tools/call needs a name and object "
		    "arguments");
		return;
	}
	/*
	 * The endpoint's name for a tool is undone first (its rename); a
	 * tool the endpoint does not serve is no tool there.
	 */
	if ((tool = provider_endpoint_tool(call_endpoint(c),
	    name->valuestring)) == NULL || !provider_serves(call_endpoint(c),
	    call_session(c), PROVIDER_TOOLS, tool)) {
		dispatch_unknown_tool(c, name->valuestring);
		return;
	}
	switch (task_mode(tool, params)) {
	case TASK_MODE_TASK:
		task_call_tool(tool, params, call_principal(c),
		    call_endpoint(c), task_answer_call, c);
		return;
	case TASK_MODE_REFUSE:
		call_respond_missing_capability(c, NULL, TASK_EXTENSION);
		call_release(c);
		return;
	case TASK_MODE_CALL:
		break;
	}
	call_set_tool(c, tool);
	if (provider_call_tool(c, tool, args) != 0) {
		call_set_tool(c, NULL);
		dispatch_unknown_tool(c, name->valuestring);
	}
}

static void
dispatch_call_error(struct call *c, int code, const char *message)
{
	call_respond_error(c, code, message);
	call_release(c);
}

static void
dispatch_resources_read(struct call *c, const cJSON *params)
{
	const cJSON	*uri = cJSON_GetObjectItemCaseSensitive(params, "uri");

	cJSON		*data;

	if (!cJSON_IsString(uri))
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: uri must be a string");
	else if (provider_serves(call_endpoint(c), call_session(c),
	    PROVIDER_RESOURCES, uri->valuestring) &&
	    provider_read_resource(c, uri->valuestring) == 0)
		return;
	else if (!call_stateless(c))
		dispatch_call_error(c, JSONRPC_RESOURCE_NOT_FOUND,
		    "Resource not found");
	else {
		/* 2026-07-28 (SEP-2164): invalid params, naming the URI. */
		data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "uri", uri->valuestring);
		call_respond_error_data(c, JSONRPC_INVALID_PARAMS,
		    "Resource not found", data);
		call_release(c);
	}
}

static void
dispatch_prompts_get(struct call *c, const cJSON *params)
{
	const cJSON	*name, *args;

	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name) || (args != NULL && !cJSON_IsObject(args)))
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: prompts/get needs a name and object "
		    "arguments");
	else if (!provider_serves(call_endpoint(c), call_session(c),
	    PROVIDER_PROMPTS, name->valuestring) ||
	    provider_get_prompt(c, name->valuestring, args) != 0)
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: unknown prompt");
}

/* Whether a completion's ref (a prompt, a template) is the endpoint's. */
static int
dispatch_ref_served(struct call *c, const cJSON *ref)
{
	const char	*type, *name;

	type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref,
	    "type"));
	if (type != NULL && strcmp(type, "ref/prompt") == 0 &&
	    (name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref,
	    "name"))) != NULL)
		return (provider_serves(call_endpoint(c), call_session(c),
		    PROVIDER_PROMPTS, name));
	if (type != NULL && strcmp(type, "ref/resource") == 0 &&
	    (name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref,
	    "uri"))) != NULL)
		return (provider_serves(call_endpoint(c), call_session(c),
		    PROVIDER_TEMPLATES, name));
	return (1);
}

/* Nothing to suggest is an empty completion, not an error. */
static void
dispatch_complete(struct call *c, const cJSON *params)
{
	const cJSON	*ref, *arg, *context;
	cJSON		*result, *completion;

	ref = cJSON_GetObjectItemCaseSensitive(params, "ref");
	arg = cJSON_GetObjectItemCaseSensitive(params, "argument");
	context = cJSON_GetObjectItemCaseSensitive(params, "context");
	if (!cJSON_IsObject(ref) || !cJSON_IsObject(arg)) {
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: completion/complete needs ref and "
		    "argument objects");
		return;
	}
	if (dispatch_ref_served(c, ref) &&
	    provider_complete(c, ref, arg, context) == 0)
		return;
	result = cJSON_CreateObject();
	completion = cJSON_AddObjectToObject(result, "completion");
	cJSON_AddArrayToObject(completion, "values");
	cJSON_AddNumberToObject(completion, "total", 0);
	cJSON_AddBoolToObject(completion, "hasMore", 0);
	call_respond(c, result);
	call_release(c);
}

/* --- notifications ------------------------------------------------------ */

static void
dispatch_cancelled(struct session *s, const cJSON *params)
{
	const cJSON	*id;
	struct call	*c;

	id = cJSON_GetObjectItemCaseSensitive(params, "requestId");
	if (id != NULL && (c = session_call_find(s, id)) != NULL)
		call_cancel(c, "cancelled by the client");
}

static void
dispatch_initialized(struct session *s, const cJSON *params)
{
	log_debug("session=%s initialized", session_id(s));
}

/* --- the table ---------------------------------------------------------- */

struct dispatch_method {
	const char		*name;
	enum dispatch_kind	 kind;
	int			 revs;		/* MCP_REV_* that have it */
	int			 flags;		/* DISPATCH_SESSIONLESS ... */
	/* The params member it is about (2026-07-28: Mcp-Name mirrors it). */
	const char		*name_param;
	enum dispatch_scope	 scope;
	/* The capability that enables a quick method; NULL: always on. */
	int			(*enabled)(void);

	cJSON			*(*quick)(const struct dispatch_ctx *,
				    const cJSON *, struct dispatch_error *);
	void			 (*call)(struct call *, const cJSON *);
	void			 (*notify)(struct session *, const cJSON *);
};

#define BOTH	(MCP_REV_2025 | MCP_REV_2026)
#define S2025	MCP_REV_2025
#define S2026	MCP_REV_2026

/*
 * A quick method whose capability is off is unknown (-32601; 404 on the
 * stateless path). Call methods have none: a provider-less resources/read,
 * prompts/get or completion/complete is answered by its handler (not
 * found, unknown prompt, an empty completion).
 */
#define QUICK(name, revs, flags, enabled, fn) \
	{ name, DISPATCH_QUICK, revs, flags, NULL, DISPATCH_SCOPE_NONE, \
	  enabled, fn, NULL, NULL }
#define CALL(name, revs, flags, param, scope, fn) \
	{ name, DISPATCH_CALL, revs, flags, param, scope, NULL, NULL, fn, \
	  NULL }
#define LISTEN(name, revs) \
	{ name, DISPATCH_LISTEN, revs, 0, NULL, DISPATCH_SCOPE_NONE, NULL, \
	  NULL, NULL, NULL }
#define NOTIFICATION(name, revs, fn) \
	{ name, DISPATCH_NOTIFICATION, revs, 0, NULL, DISPATCH_SCOPE_NONE, \
	  NULL, NULL, NULL, fn }

static const struct dispatch_method dispatch_methods[] = {
	QUICK("initialize", S2025, DISPATCH_SESSIONLESS, NULL,
	    dispatch_reinitialize),
	QUICK("ping", S2025, 0, NULL, dispatch_ping),
	QUICK("server/discover", S2026, DISPATCH_CACHEABLE, NULL,
	    dispatch_discover),
	QUICK("tools/list", BOTH, DISPATCH_CACHEABLE, NULL,
	    dispatch_tools_list),
	QUICK("resources/list", BOTH, DISPATCH_CACHEABLE,
	    provider_has_resources, dispatch_resources_list),
	QUICK("resources/templates/list", BOTH, DISPATCH_CACHEABLE,
	    provider_has_resources, dispatch_templates_list),
	/* subscribe names a resource, whose scope is checked. */
	{ "resources/subscribe", DISPATCH_QUICK, S2025, 0, "uri",
	  DISPATCH_SCOPE_RESOURCE, provider_has_resources, dispatch_subscribe,
	  NULL, NULL },
	QUICK("resources/unsubscribe", S2025, 0, provider_has_resources,
	    dispatch_unsubscribe),
	QUICK("prompts/list", BOTH, DISPATCH_CACHEABLE, provider_has_prompts,
	    dispatch_prompts_list),
	QUICK("logging/setLevel", S2025, 0, NULL, dispatch_set_level),
	LISTEN("subscriptions/listen", S2026),
	CALL("tools/call", BOTH, DISPATCH_PARAM_HEADERS, "name",
	    DISPATCH_SCOPE_TOOL, dispatch_tools_call),
	CALL("resources/read", BOTH, DISPATCH_CACHEABLE, "uri",
	    DISPATCH_SCOPE_RESOURCE, dispatch_resources_read),
	CALL("prompts/get", BOTH, 0, "name", DISPATCH_SCOPE_PROMPT,
	    dispatch_prompts_get),
	CALL("completion/complete", BOTH, 0, NULL, DISPATCH_SCOPE_REF,
	    dispatch_complete),
	/* The tasks extension (task.c). */
	CALL("tasks/get", BOTH, 0, "taskId", DISPATCH_SCOPE_NONE,
	    dispatch_tasks_get),
	CALL("tasks/update", BOTH, 0, "taskId", DISPATCH_SCOPE_NONE,
	    dispatch_tasks_update),
	CALL("tasks/cancel", BOTH, 0, "taskId", DISPATCH_SCOPE_NONE,
	    dispatch_tasks_cancel),
	NOTIFICATION("notifications/cancelled", S2025, dispatch_cancelled),
	NOTIFICATION("notifications/initialized", S2025,
	    dispatch_initialized),
};
#define DISPATCH_NMETHODS \
	(sizeof dispatch_methods / sizeof dispatch_methods[0])

#undef BOTH
#undef S2025
#undef S2026
#undef QUICK
#undef CALL
#undef LISTEN
#undef NOTIFICATION

/* The line of method name, whatever its revisions; NULL if none. */
static const struct dispatch_method *
dispatch_named(const char *name)
{
	size_t	i;

	for (i = 0; i < DISPATCH_NMETHODS; i++) {
		if (strcmp(name, dispatch_methods[i].name) == 0)
			return (&dispatch_methods[i]);
	}
	return (NULL);
}

/* The line of msg's method if revision rev has it as this kind, or NULL. */
static const struct dispatch_method *
dispatch_find(const cJSON *msg, enum dispatch_kind kind, int rev)
{
	const struct dispatch_method	*m = dispatch_named(
					    dispatch_method(msg));

	return (m != NULL && m->kind == kind && (m->revs & rev) ? m : NULL);
}

/*
 * A request's method in revision rev (MCP_REV_*), if it has it and its
 * capability is on: what the stateless edge serves. NULL: not found.
 */
const struct dispatch_method *
dispatch_lookup(const char *name, int rev)
{
	const struct dispatch_method	*m = dispatch_named(name);

	if (m == NULL || !(m->revs & rev) || m->kind == DISPATCH_NOTIFICATION ||
	    (m->enabled != NULL && !m->enabled()))
		return (NULL);
	return (m);
}

const char *
dispatch_method_name(const struct dispatch_method *m)
{
	return (m->name);
}

enum dispatch_kind
dispatch_method_kind(const struct dispatch_method *m)
{
	return (m->kind);
}

int
dispatch_method_flags(const struct dispatch_method *m)
{
	return (m->flags);
}

const char *
dispatch_method_name_param(const struct dispatch_method *m)
{
	return (m->name_param);
}

/*
 * What request msg names whose scope authorization checks, in either
 * revision (a method a revision lacks is refused later, as unknown): the
 * kind, and in *name the params member the table names (for
 * DISPATCH_SCOPE_REF the caller reads params.ref).
 */
enum dispatch_scope
dispatch_scope(const cJSON *msg, const char **name)
{
	const struct dispatch_method	*m = dispatch_named(
					    dispatch_method(msg));

	*name = NULL;
	if (m == NULL)
		return (DISPATCH_SCOPE_NONE);
	if (m->name_param != NULL)
		*name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    dispatch_params(msg), m->name_param));
	return (m->scope);
}

/* Whether a request runs as a call on a request stream. */
int
dispatch_streams(const cJSON *req)
{
	return (dispatch_find(req, DISPATCH_CALL, MCP_REV_2025) != NULL);
}

/* Whether msg is a request answered without a session (initialize). */
int
dispatch_sessionless(const cJSON *msg)
{
	const struct dispatch_method	*m;

	if (!cJSON_IsObject(msg) || !cJSON_HasObjectItem(msg, "id"))
		return (0);
	m = dispatch_find(msg, DISPATCH_QUICK, MCP_REV_2025);
	return (m != NULL && (m->flags & DISPATCH_SESSIONLESS));
}

/* Runs a quick method: a result, or NULL with *err filled in. */
static cJSON *
dispatch_run(const struct dispatch_ctx *ctx, const cJSON *req,
    struct dispatch_error *err)
{
	const struct dispatch_method	*m;

	m = dispatch_find(req, DISPATCH_QUICK, ctx->rev);
	if (m == NULL || (m->enabled != NULL && !m->enabled())) {
		err->code = JSONRPC_METHOD_NOT_FOUND;
		err->message = "Method not found";
		return (NULL);
	}
	return (m->quick(ctx, dispatch_params(req), err));
}

/* The span of a message: its session's, or a stateless one's. */
static struct trace_span *
dispatch_span(struct session *s, const cJSON *req,
    const struct trace_ctx *origin)
{
	return (mcptrace_server(req, s != NULL ? session_id(s) : NULL,
	    s != NULL ? session_version(s) : MCP_STATELESS_VERSION, origin));
}

static cJSON *
dispatch_answer(const struct dispatch_ctx *ctx, const cJSON *req)
{
	const cJSON		*id = cJSON_GetObjectItemCaseSensitive(req, "id");
	struct dispatch_error	 err;
	struct trace_span	*sp = dispatch_span(ctx->s, req, NULL);
	cJSON			*result, *answer;
	int			 depth = trace_enter(sp);

	if (!dispatch_params_ok(ctx->rev, req, &err) ||
	    (result = dispatch_run(ctx, req, &err)) == NULL) {
		mcptrace_error(sp, err.code, err.message);
		answer = jsonrpc_error(id, err.code, err.message, NULL);
	} else
		answer = jsonrpc_result(id, result);
	trace_leave(depth);
	trace_end(sp);
	return (answer);
}

/* A quick method of session s (NULL in tests: no principal either). */
cJSON *
dispatch_quick(struct session *s, const cJSON *req)
{
	struct dispatch_ctx	ctx = { s, s != NULL ? session_principal(s) :
				    NULL, MCP_REV_2025, s != NULL ?
				    session_endpoint(s) : NULL };

	return (dispatch_answer(&ctx, req));
}

/* A quick method of the stateless path, for principal who at endpoint. */
cJSON *
dispatch_quick_stateless(const struct auth_principal *who,
    const char *endpoint, const cJSON *req)
{
	struct dispatch_ctx	ctx = { NULL, who, MCP_REV_2026, endpoint };

	return (dispatch_answer(&ctx, req));
}

/* A request's call on stream st, owing its response there. */
static struct call *
dispatch_call(struct session *s, struct stream *st, const cJSON *req)
{
	const cJSON	*meta, *token;

	meta = cJSON_GetObjectItemCaseSensitive(dispatch_params(req), "_meta");
	token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	if (token != NULL && !cJSON_IsString(token) && !cJSON_IsNumber(token))
		token = NULL;
	return (call_start(s, st, cJSON_GetObjectItemCaseSensitive(req, "id"),
	    token));
}

/*
 * A call refused by a limit: -32023 (docs/limits.md), data.retryAfter in
 * seconds (issue 26), retryAfterMs (the rate-limited error SEP), the
 * limit's name and why. message is allocated.
 */
static cJSON *
dispatch_limited_data(const struct limit_refusal *r, char **message)
{
	cJSON	*data = cJSON_CreateObject();

	cJSON_AddNumberToObject(data, "retryAfter",
	    (double)limit_retry_seconds(r));
	cJSON_AddNumberToObject(data, "retryAfterMs", (double)r->retry_ms);
	cJSON_AddStringToObject(data, "limit", r->limit);
	cJSON_AddStringToObject(data, "reason", limit_reason_name(r->reason));
	xasprintf(message, "Rate limited: limit %s (%s); retry after %llu s",
	    r->limit, limit_reason_name(r->reason),
	    (unsigned long long)limit_retry_seconds(r));
	return (data);
}

cJSON *
dispatch_limited(const cJSON *id, const struct limit_refusal *r)
{
	char	*message;
	cJSON	*data, *err;

	data = dispatch_limited_data(r, &message);
	err = jsonrpc_error(id, JSONRPC_RATE_LIMITED, message, data);
	free(message);
	return (err);
}

/*
 * The method of a call admitted to run: a call method's handler, or a
 * quick method (in a batch that streams) answered on the stream. The
 * call's span is current while it runs: what it starts is traced under
 * it.
 */
static void
dispatch_run_method(struct session *s, struct call *c, const cJSON *req)
{
	const struct dispatch_method	*m;
	struct dispatch_ctx		 ctx = { s, call_principal(c),
					    s != NULL ? MCP_REV_2025 :
					    MCP_REV_2026, call_endpoint(c) };
	struct dispatch_error		 err;
	cJSON				*result;
	int				 depth;

	depth = trace_enter(call_trace(c));
	if ((m = dispatch_find(req, DISPATCH_CALL, ctx.rev)) != NULL)
		m->call(c, dispatch_params(req));
	else {
		if ((result = dispatch_run(&ctx, req, &err)) != NULL)
			call_respond(c, result);
		else
			call_respond_error(c, err.code, err.message);
		call_release(c);
	}
	trace_leave(depth);
}

/* A call's limit check that had to wait for the shared log. */
struct dispatch_wait {
	struct session	*s;
	struct call	*c;
	cJSON		*req;
};

static void
dispatch_refuse(struct call *c, const struct limit_refusal *r)
{
	char	*message;
	cJSON	*data;

	data = dispatch_limited_data(r, &message);
	call_limited(c, r->limit);
	call_respond_error_data(c, JSONRPC_RATE_LIMITED, message, data);
	free(message);
	call_release(c);
}

static void
dispatch_checked_cb(struct limit_ticket *t, const struct limit_refusal *r,
    void *arg)
{
	struct dispatch_wait	*w = arg;

	if (call_finished(w->c)) {
		limit_ticket_free(t);
		call_release(w->c);
	} else if (r != NULL)
		dispatch_refuse(w->c, r);
	else {
		call_set_ticket(w->c, t);
		dispatch_run_method(w->s, w->c, w->req);
	}
	cJSON_Delete(w->req);
	free(w);
}

/*
 * A tools/call the edge did not check (a batch's) against the limits:
 * 1 when it may run now, 0 when it was answered or waits for its check.
 */
static int
dispatch_admit(struct session *s, struct call *c, const cJSON *req,
    const struct dispatch_origin *o)
{
	struct limit_subject	 sub;
	struct limit_ticket	*t;
	struct limit_refusal	 r;
	struct dispatch_wait	*w;
	const char		*name;

	if (o == NULL || o->admitted || !limit_any() ||
	    strcmp(dispatch_method(req), "tools/call") != 0 ||
	    (name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    dispatch_params(req), "name"))) == NULL)
		return (1);
	sub.who = call_principal(c);
	sub.tool = name;
	sub.endpoint = o->endpoint;
	w = xmalloc(sizeof *w);
	switch (limit_check(&sub, &t, &r, dispatch_checked_cb, w)) {
	case LIMIT_ADMIT:
		free(w);
		call_set_ticket(c, t);
		return (1);
	case LIMIT_REFUSE:
		free(w);
		dispatch_refuse(c, &r);
		return (0);
	case LIMIT_PENDING:
		break;
	}
	w->s = s;
	w->c = c;
	w->req = cJSON_Duplicate(req, 1);
	return (0);
}

/*
 * Runs the method of a started call once it is admitted. s NULL: a
 * stateless request's call, whose trace goes on from o->trace (an
 * earlier round's) unless its _meta says otherwise. Audited methods get
 * their record here.
 */
static void
dispatch_run_call(struct session *s, struct call *c, const cJSON *req,
    struct dispatch_origin *o)
{
	struct dispatch_error	 err;
	int			 rev = s != NULL ? MCP_REV_2025 : MCP_REV_2026;
	int			 depth;

	call_set_trace(c, dispatch_span(s, req, o != NULL ? o->trace : NULL));
	call_set_audit(c, audit_begin(dispatch_method(req), dispatch_params(req),
	    call_principal(c), s != NULL ? session_id(s) : NULL,
	    call_version(c), call_id(c), o != NULL ? o->endpoint : NULL));
	if (o != NULL && o->ticket != NULL) {
		call_set_ticket(c, o->ticket);
		o->ticket = NULL;
	}
	if (!dispatch_params_ok(rev, req, &err)) {
		depth = trace_enter(call_trace(c));
		dispatch_call_error(c, err.code, err.message);
		trace_leave(depth);
		return;
	}
	if (dispatch_admit(s, c, req, o))
		dispatch_run_method(s, c, req);
}

/*
 * Starts a stateless request's call (stateless.c), which owes its response
 * to its sink: a call method, or a quick one answered through the call.
 */
void
dispatch_start_call(struct call *c, const cJSON *req,
    struct dispatch_origin *o)
{
	dispatch_run_call(NULL, c, req, o);
}

/* Starts a request whose response goes onto stream st. */
void
dispatch_start(struct session *s, struct stream *st, const cJSON *req,
    struct dispatch_origin *o)
{
	dispatch_run_call(s, dispatch_call(s, st, req), req, o);
}

/*
 * Starts the requests of a batch, which share stream st. Every call owes
 * its response before any runs: the stream ends with the last response
 * owed, and a call answered at once must not end it under the others.
 */
void
dispatch_start_batch(struct session *s, struct stream *st,
    const cJSON *batch, struct dispatch_origin *o)
{
	const cJSON	*msg;
	const char	*cause;
	struct call	**calls;
	size_t		 n = 0, i;

	calls = xreallocarray(NULL, (size_t)cJSON_GetArraySize(batch) + 1,
	    sizeof *calls);
	cJSON_ArrayForEach(msg, batch) {
		if (jsonrpc_classify(msg, &cause) == JSONRPC_REQUEST)
			calls[n++] = dispatch_call(s, st, msg);
	}
	i = 0;
	cJSON_ArrayForEach(msg, batch) {
		if (jsonrpc_classify(msg, &cause) != JSONRPC_REQUEST)
			continue;
		/* An earlier call may have ended the session, and this one. */
		if (call_finished(calls[i]))
			call_release(calls[i]);
		else
			dispatch_run_call(s, calls[i], msg, o);
		i++;
	}
	free(calls);
}

void
dispatch_notification(struct session *s, const cJSON *msg)
{
	const struct dispatch_method	*m;
	struct trace_span		*sp = dispatch_span(s, msg, NULL);
	int				 depth = trace_enter(sp);

	if ((m = dispatch_find(msg, DISPATCH_NOTIFICATION, MCP_REV_2025)) !=
	    NULL)
		m->notify(s, dispatch_params(msg));
	else
		log_debug("session=%s notification %s ignored", session_id(s),
		    dispatch_method(msg));
	trace_leave(depth);
	trace_end(sp);
}

/* A client's answer to a server request: 0 if it was awaited, else -1. */
int
dispatch_response(struct session *s, const cJSON *msg)
{
	enum outbound_route	 route;
	char			*id;

	if ((route = outbound_response(session_id(s), msg)) ==
	    OUTBOUND_ROUTED)
		return (0);
	id = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(msg,
	    "id"));
	if (route == OUTBOUND_FORWARDED)
		log_limited(LOG_LEVEL_INFO, "stray-answer", "session=%s "
		    "response id=%s matches no pending request here; left for "
		    "another process (ignored unless one waits for it)",
		    session_id(s), id);
	else
		log_limited(LOG_LEVEL_WARN, "stray-answer", "session=%s "
		    "response id=%s matches no pending request (unknown, "
		    "already answered or timed out)", session_id(s), id);
	free(id);
	return (route == OUTBOUND_FORWARDED ? 0 : -1);
}
