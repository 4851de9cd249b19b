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

static cJSON *
dispatch_capabilities(void)
{
	cJSON	*caps = cJSON_CreateObject();
	cJSON	*tools = cJSON_AddObjectToObject(caps, "tools");

	cJSON_AddBoolToObject(tools, "listChanged", 0);
	cJSON_AddObjectToObject(caps, "logging");
	return (caps);
}

/*
 * initialize: negotiates the revision (the client's if supported, else our
 * latest, per the lifecycle spec) and creates the session.
 */
cJSON *
dispatch_initialize(const cJSON *req, struct session **sp, char **cause)
{
	const cJSON	*params = dispatch_params(req);
	const cJSON	*requested;
	const char	*version;
	cJSON		*result, *info;
	int		 i;

	requested = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	if (!cJSON_IsString(requested)) {
		*cause = "initialize needs params.protocolVersion";
		return (NULL);
	}
	version = requested->valuestring;
	if (!session_version_supported(version)) {
		for (i = 0; session_versions[i + 1] != NULL; i++)
			;
		version = session_versions[i];
	}
	if ((*sp = session_create(version, params, cause)) == NULL)
		return (NULL);
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "protocolVersion", version);
	cJSON_AddItemToObject(result, "capabilities", dispatch_capabilities());
	info = cJSON_AddObjectToObject(result, "serverInfo");
	cJSON_AddStringToObject(info, "name", "mcpd");
	cJSON_AddStringToObject(info, "version", MCPD_VERSION);
	return (jsonrpc_result(cJSON_GetObjectItemCaseSensitive(req, "id"),
	    result));
}

int
dispatch_streams(const cJSON *req)
{
	return (strcmp(dispatch_method(req), "tools/call") == 0);
}

static cJSON *
dispatch_tools_list(const cJSON *params, struct dispatch_error *err)
{
	const cJSON	*cursor;
	cJSON		*all, *result, *page, *tool;
	char		*end, next[32];
	long		 offset = 0, i = 0;

	cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");
	if (cursor != NULL) {
		if (!cJSON_IsString(cursor) || cursor->valuestring[0] == '\0' ||
		    (offset = strtol(cursor->valuestring, &end, 10)) < 0 ||
		    *end != '\0') {
			err->code = JSONRPC_INVALID_PARAMS;
			err->message = "Invalid pagination cursor";
			return (NULL);
		}
	}
	all = provider_list_tools();
	result = cJSON_CreateObject();
	page = cJSON_AddArrayToObject(result, "tools");
	while ((tool = cJSON_DetachItemFromArray(all, 0)) != NULL) {
		if (i >= offset && i < offset + DISPATCH_PAGE)
			cJSON_AddItemToArray(page, tool);
		else
			cJSON_Delete(tool);
		i++;
	}
	cJSON_Delete(all);
	if (offset + DISPATCH_PAGE < i) {
		snprintf(next, sizeof next, "%ld", offset + DISPATCH_PAGE);
		cJSON_AddStringToObject(result, "nextCursor", next);
	}
	return (result);
}

static cJSON *
dispatch_set_level(struct session *s, const cJSON *params,
    struct dispatch_error *err)
{
	const cJSON	*level = cJSON_GetObjectItemCaseSensitive(params, "level");
	int		 n;

	if (!cJSON_IsString(level) ||
	    (n = session_log_level_parse(level->valuestring)) < 0) {
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
		return (dispatch_tools_list(params, err));
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

	if ((result = dispatch_run(s, req, &err)) == NULL)
		return (jsonrpc_error(id, err.code, err.message, NULL));
	return (jsonrpc_result(id, result));
}

static void
dispatch_tools_call(struct call *c, const cJSON *params)
{
	const cJSON	*name, *args;
	char		*message;

	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name) || (args != NULL && !cJSON_IsObject(args))) {
		call_respond_error(c, JSONRPC_INVALID_PARAMS,
		    "Invalid params: tools/call needs a name and object "
		    "arguments");
		call_release(c);
		return;
	}
	if (provider_call_tool(c, name->valuestring, args) != 0) {
		xasprintf(&message, "Unknown tool: %s", name->valuestring);
		call_respond_error(c, JSONRPC_INVALID_PARAMS, message);
		call_release(c);
		free(message);
	}
}

/* Starts a request whose response goes onto stream st. */
void
dispatch_start(struct session *s, struct stream *st, const cJSON *req)
{
	const cJSON		*id = cJSON_GetObjectItemCaseSensitive(req, "id");
	const cJSON		*params = dispatch_params(req);
	const cJSON		*meta, *token;
	struct dispatch_error	 err;
	struct call		*c;
	cJSON			*result;

	meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	if (token != NULL && !cJSON_IsString(token) && !cJSON_IsNumber(token))
		token = NULL;
	c = call_start(s, st, id, token);
	if (dispatch_streams(req)) {
		dispatch_tools_call(c, params);
		return;
	}
	if ((result = dispatch_run(s, req, &err)) != NULL)
		call_respond(c, result);
	else
		call_respond_error(c, err.code, err.message);
	call_release(c);
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

void
dispatch_response(struct session *s, const cJSON *msg)
{
	log_debug("session=%s response without a pending server request "
	    "ignored", session_id(s));
}
