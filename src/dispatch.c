/*
 * Method dispatch. Quick methods answer at once (the transport sends them as
 * a JSON body); methods that may take time or send notifications run as
 * calls on a request stream, where their response is the last entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "dispatch.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "outbound.h"
#include "provider.h"
#include "session.h"
#include "stream.h"
#include "xmalloc.h"

/* tools/list page size; small lists fit on one page. */
#define DISPATCH_PAGE	100

struct dispatch_error {
	int		 code;
	const char	*message;
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
 * the NUL (tool "echo\u0000zzz" run as echo), so it is refused whole.
 */
#define DISPATCH_NUL_PARAMS \
	"Invalid params: a name or string contains NUL (\\u0000)"

static int
dispatch_params_ok(const cJSON *req, struct dispatch_error *err)
{
	if (!jsonrpc_has_nul(dispatch_params(req)))
		return (1);
	err->code = JSONRPC_INVALID_PARAMS;
	err->message = DISPATCH_NUL_PARAMS;
	return (0);
}

static cJSON *
dispatch_capabilities(void)
{
	cJSON	*caps = cJSON_CreateObject();
	cJSON	*tools = cJSON_AddObjectToObject(caps, "tools");

	cJSON	*resources, *prompts;

	cJSON_AddBoolToObject(tools, "listChanged", 0);
	cJSON_AddObjectToObject(caps, "logging");
	if (provider_has_resources()) {
		resources = cJSON_AddObjectToObject(caps, "resources");
		cJSON_AddBoolToObject(resources, "subscribe", 1);
		cJSON_AddBoolToObject(resources, "listChanged", 0);
	}
	if (provider_has_prompts()) {
		prompts = cJSON_AddObjectToObject(caps, "prompts");
		cJSON_AddBoolToObject(prompts, "listChanged", 0);
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
dispatch_initialize(const cJSON *req, enum dispatch_refusal *why,
    const char **cause, session_stored_fn cb, void *arg)
{
	const cJSON	*params = dispatch_params(req);
	const cJSON	*requested;
	const char	*version;
	cJSON		*result, *info;
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
	if (session_create(version, params, cb, arg) == NULL) {
		*why = DISPATCH_FULL;
		*cause = "too many sessions";
		return (NULL);
	}
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "protocolVersion", version);
	cJSON_AddItemToObject(result, "capabilities", dispatch_capabilities());
	info = cJSON_AddObjectToObject(result, "serverInfo");
	cJSON_AddStringToObject(info, "name", "mcpd");
	cJSON_AddStringToObject(info, "version", MCPD_VERSION);
	return (jsonrpc_result(cJSON_GetObjectItemCaseSensitive(req, "id"),
	    result));
}

/*
 * Methods answered by a provider run as calls on a request stream: they may
 * take time, send progress, or ask the client something first.
 */
static const char *dispatch_call_methods[] = {
	"tools/call", "resources/read", "prompts/get", "completion/complete",
	NULL
};

int
dispatch_streams(const cJSON *req)
{
	const char	*method = dispatch_method(req);
	int		 i;

	for (i = 0; dispatch_call_methods[i] != NULL; i++) {
		if (strcmp(method, dispatch_call_methods[i]) == 0)
			return (1);
	}
	return (0);
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

/* One page of a list method. */
static cJSON *
dispatch_page(cJSON *all, const cJSON *params, const char *key,
    struct dispatch_error *err)
{
	cJSON		*result, *page, *item;
	char		 next[32];
	long		 offset, count, i = 0;

	count = cJSON_GetArraySize(all);
	if (dispatch_cursor(cJSON_GetObjectItemCaseSensitive(params, "cursor"),
	    count, &offset) != 0) {
		cJSON_Delete(all);
		err->code = JSONRPC_INVALID_PARAMS;
		err->message = "Invalid params: bad pagination cursor";
		return (NULL);
	}
	result = cJSON_CreateObject();
	page = cJSON_AddArrayToObject(result, key);
	while ((item = cJSON_DetachItemFromArray(all, 0)) != NULL) {
		if (i >= offset && i < offset + DISPATCH_PAGE)
			cJSON_AddItemToArray(page, item);
		else
			cJSON_Delete(item);
		i++;
	}
	cJSON_Delete(all);
	if (offset + DISPATCH_PAGE < count) {
		snprintf(next, sizeof next, "%ld", offset + DISPATCH_PAGE);
		cJSON_AddStringToObject(result, "nextCursor", next);
	}
	return (result);
}

static cJSON *
dispatch_subscription(struct session *s, const cJSON *params, int on,
    struct dispatch_error *err)
{
	const cJSON	*uri = cJSON_GetObjectItemCaseSensitive(params, "uri");

	if (!cJSON_IsString(uri)) {
		err->code = JSONRPC_INVALID_PARAMS;
		err->message = "Invalid params: uri must be a string";
		return (NULL);
	}
	if (!on) {
		session_unsubscribe(s, uri->valuestring);
		return (cJSON_CreateObject());
	}
	if (provider_subscribe(s, uri->valuestring) != 0) {
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
dispatch_set_level(struct session *s, const cJSON *params,
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
	session_set_log_level(s, n);
	return (cJSON_CreateObject());
}

/* Runs a quick method: a result, or NULL with *err filled in. */
static cJSON *
dispatch_run(struct session *s, const cJSON *req, struct dispatch_error *err)
{
	const char	*method = dispatch_method(req);
	const cJSON	*params = dispatch_params(req);

	if (strcmp(method, "ping") == 0)
		return (cJSON_CreateObject());
	if (strcmp(method, "tools/list") == 0)
		return (dispatch_page(provider_list_tools(), params, "tools",
		    err));
	if (strcmp(method, "resources/list") == 0 && provider_has_resources())
		return (dispatch_page(provider_list_resources(), params,
		    "resources", err));
	if (strcmp(method, "resources/templates/list") == 0 &&
	    provider_has_resources())
		return (dispatch_page(provider_list_resource_templates(), params,
		    "resourceTemplates", err));
	if (strcmp(method, "resources/subscribe") == 0 &&
	    provider_has_resources())
		return (dispatch_subscription(s, params, 1, err));
	if (strcmp(method, "resources/unsubscribe") == 0 &&
	    provider_has_resources())
		return (dispatch_subscription(s, params, 0, err));
	if (strcmp(method, "prompts/list") == 0 && provider_has_prompts())
		return (dispatch_page(provider_list_prompts(), params,
		    "prompts", err));
	if (strcmp(method, "logging/setLevel") == 0)
		return (dispatch_set_level(s, params, err));
	if (strcmp(method, "initialize") == 0) {
		err->code = JSONRPC_INVALID_REQUEST;
		err->message = "Invalid Request: session already initialized";
		return (NULL);
	}
	err->code = JSONRPC_METHOD_NOT_FOUND;
	err->message = "Method not found";
	return (NULL);
}

cJSON *
dispatch_quick(struct session *s, const cJSON *req)
{
	const cJSON		*id = cJSON_GetObjectItemCaseSensitive(req, "id");
	struct dispatch_error	 err;
	cJSON			*result;

	if (!dispatch_params_ok(req, &err) ||
	    (result = dispatch_run(s, req, &err)) == NULL)
		return (jsonrpc_error(id, err.code, err.message, NULL));
	return (jsonrpc_result(id, result));
}

static void	dispatch_call_error(struct call *, int, const char *);

static void
dispatch_tools_call(struct call *c, const cJSON *params)
{
	const cJSON	*name, *args;
	char		*message;

	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name) || (args != NULL && !cJSON_IsObject(args))) {
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: tools/call needs a name and object "
		    "arguments");
		return;
	}
	if (provider_call_tool(c, name->valuestring, args) != 0) {
		xasprintf(&message, "Unknown tool: %s", name->valuestring);
		call_respond_error(c, JSONRPC_INVALID_PARAMS, message);
		call_release(c);
		free(message);
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

	if (!cJSON_IsString(uri))
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: uri must be a string");
	else if (provider_read_resource(c, uri->valuestring) != 0)
		dispatch_call_error(c, JSONRPC_RESOURCE_NOT_FOUND,
		    "Resource not found");
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
	else if (provider_get_prompt(c, name->valuestring, args) != 0)
		dispatch_call_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: unknown prompt");
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
	if (provider_complete(c, ref, arg, context) == 0)
		return;
	result = cJSON_CreateObject();
	completion = cJSON_AddObjectToObject(result, "completion");
	cJSON_AddArrayToObject(completion, "values");
	cJSON_AddNumberToObject(completion, "total", 0);
	cJSON_AddBoolToObject(completion, "hasMore", 0);
	call_respond(c, result);
	call_release(c);
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

/* Runs the method of a started call. */
static void
dispatch_run_call(struct session *s, struct call *c, const cJSON *req)
{
	const cJSON		*params = dispatch_params(req);
	struct dispatch_error	 err;
	cJSON			*result;

	if (!dispatch_params_ok(req, &err)) {
		dispatch_call_error(c, err.code, err.message);
		return;
	}
	if (strcmp(dispatch_method(req), "tools/call") == 0) {
		dispatch_tools_call(c, params);
		return;
	}
	if (strcmp(dispatch_method(req), "resources/read") == 0) {
		dispatch_resources_read(c, params);
		return;
	}
	if (strcmp(dispatch_method(req), "prompts/get") == 0) {
		dispatch_prompts_get(c, params);
		return;
	}
	if (strcmp(dispatch_method(req), "completion/complete") == 0) {
		dispatch_complete(c, params);
		return;
	}
	if ((result = dispatch_run(s, req, &err)) != NULL)
		call_respond(c, result);
	else
		call_respond_error(c, err.code, err.message);
	call_release(c);
}

/* Starts a request whose response goes onto stream st. */
void
dispatch_start(struct session *s, struct stream *st, const cJSON *req)
{
	dispatch_run_call(s, dispatch_call(s, st, req), req);
}

/*
 * Starts the requests of a batch, which share stream st. Every call owes
 * its response before any runs: the stream ends with the last response
 * owed, and a call answered at once must not end it under the others.
 */
void
dispatch_start_batch(struct session *s, struct stream *st,
    const cJSON *batch)
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
			dispatch_run_call(s, calls[i], msg);
		i++;
	}
	free(calls);
}

void
dispatch_notification(struct session *s, const cJSON *msg)
{
	const char	*method = dispatch_method(msg);
	const cJSON	*params = dispatch_params(msg);
	const cJSON	*id;
	struct call	*c;

	if (strcmp(method, "notifications/cancelled") == 0) {
		id = cJSON_GetObjectItemCaseSensitive(params, "requestId");
		if (id != NULL && (c = session_call_find(s, id)) != NULL)
			call_cancel(c, "cancelled by the client");
		return;
	}
	if (strcmp(method, "notifications/initialized") == 0) {
		log_debug("session=%s initialized", session_id(s));
		return;
	}
	log_debug("session=%s notification %s ignored", session_id(s), method);
}

/* A client's answer to a server request: 0 if it was awaited, else -1. */
int
dispatch_response(struct session *s, const cJSON *msg)
{
	enum outbound_route	 route;
	char			*id;

	if ((route = outbound_response(s, msg)) == OUTBOUND_ROUTED)
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
