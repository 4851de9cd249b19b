/*
 * MCP spans, as open-telemetry/semantic-conventions-genai
 * docs/gen-ai/mcp.md has them (status Development; the MCP conventions
 * moved there from open-telemetry/semantic-conventions):
 *
 *  - name "{mcp.method.name} {target}", the target gen_ai.tool.name or
 *    gen_ai.prompt.name when there is one, else "{mcp.method.name}";
 *  - SERVER for a message the peer sent, CLIENT for one mcpd sends,
 *    lasting until its response;
 *  - mcp.method.name; jsonrpc.request.id (as a string, not for a
 *    notification); gen_ai.tool.name and gen_ai.operation.name
 *    execute_tool for tools/call; gen_ai.prompt.name; mcp.resource.uri;
 *    mcp.session.id and mcp.protocol.version; network.transport,
 *    network.protocol.name and .version;
 *  - an error: error.type the JSON-RPC code as a string (tool_error for
 *    a result with isError), rpc.response.status_code the code, status
 *    ERROR with the error's message;
 *  - the parent of a server span is the context in params._meta (W3C
 *    traceparent and tracestate, unprefixed, SEP-414), and the HTTP
 *    request's span is then a link: one POST may carry several messages,
 *    and one message may come back over several requests.
 */
#include <stdio.h>
#include <string.h>

#include "mcptrace.h"
#include "trace.h"

#define MCPTRACE_NAME_MAX	160

static const char *
mcptrace_string(const cJSON *obj, const char *key)
{
	return (cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj,
	    key)));
}

int
mcptrace_meta_ctx(const cJSON *params, struct trace_ctx *ctx,
    const char **state)
{
	const cJSON	*meta;
	const char	*tp;

	meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	if (!cJSON_IsObject(meta) ||
	    (tp = mcptrace_string(meta, "traceparent")) == NULL ||
	    trace_parse(tp, ctx) != 0)
		return (-1);
	*state = mcptrace_string(meta, "tracestate");
	return (0);
}

static void
mcptrace_id(struct trace_span *sp, const cJSON *id)
{
	char	num[32];

	if (cJSON_IsString(id))
		trace_attr_str(sp, "jsonrpc.request.id", id->valuestring);
	else if (cJSON_IsNumber(id)) {
		if (id->valuedouble == (double)(long long)id->valuedouble)
			snprintf(num, sizeof num, "%lld",
			    (long long)id->valuedouble);
		else
			snprintf(num, sizeof num, "%.17g", id->valuedouble);
		trace_attr_str(sp, "jsonrpc.request.id", num);
	}
}

/* The name, and the attributes that name what the message is about. */
static void
mcptrace_target(struct trace_span *sp, const char *method,
    const cJSON *params)
{
	const char	*tool = NULL, *prompt = NULL, *uri;
	char		 name[MCPTRACE_NAME_MAX];

	if (strcmp(method, "tools/call") == 0) {
		tool = mcptrace_string(params, "name");
		trace_attr_str(sp, "gen_ai.operation.name", "execute_tool");
		trace_attr_str(sp, "gen_ai.tool.name", tool);
	} else if (strcmp(method, "prompts/get") == 0) {
		prompt = mcptrace_string(params, "name");
		trace_attr_str(sp, "gen_ai.prompt.name", prompt);
	} else if (strncmp(method, "resources/", 10) == 0 ||
	    strcmp(method, "notifications/resources/updated") == 0) {
		if ((uri = mcptrace_string(params, "uri")) != NULL)
			trace_attr_str(sp, "mcp.resource.uri", uri);
	}
	if (tool != NULL || prompt != NULL) {
		snprintf(name, sizeof name, "%s %s", method,
		    tool != NULL ? tool : prompt);
		trace_rename(sp, name);
	}
}

static struct trace_span *
mcptrace_attrs(struct trace_span *sp, const char *method, const cJSON *msg,
    const char *sid, const char *version, const char *transport)
{
	if (!trace_recording(sp))
		return (sp);
	trace_attr_str(sp, "mcp.method.name", method);
	mcptrace_id(sp, cJSON_GetObjectItemCaseSensitive(msg, "id"));
	mcptrace_target(sp, method, cJSON_GetObjectItemCaseSensitive(msg,
	    "params"));
	if (sid != NULL)
		trace_attr_str(sp, "mcp.session.id", sid);
	if (version != NULL)
		trace_attr_str(sp, "mcp.protocol.version", version);
	if (transport != NULL) {
		trace_attr_str(sp, "network.transport", transport);
		if (strcmp(transport, "tcp") == 0) {
			trace_attr_str(sp, "network.protocol.name", "http");
			trace_attr_str(sp, "network.protocol.version", "1.1");
		}
	}
	return (sp);
}

static const char *
mcptrace_method(const cJSON *msg)
{
	const char	*method = mcptrace_string(msg, "method");

	return (method != NULL ? method : "_OTHER");
}

struct trace_span *
mcptrace_server(const cJSON *msg, const char *sid, const char *version,
    const struct trace_ctx *origin)
{
	struct trace_span	*sp, *cur = trace_current();
	struct trace_ctx	 meta;
	const char		*method, *state = NULL;

	if (!trace_enabled)
		return (NULL);
	method = mcptrace_method(msg);
	if (mcptrace_meta_ctx(cJSON_GetObjectItemCaseSensitive(msg, "params"),
	    &meta, &state) == 0)
		sp = trace_start(method, TRACE_SERVER, &meta, state);
	else if (origin != NULL && origin->state == TRACE_CTX_IDS)
		sp = trace_start(method, TRACE_SERVER, origin, NULL);
	else
		return (mcptrace_attrs(trace_child(method, TRACE_SERVER, cur),
		    method, msg, sid, version, "tcp"));
	/* The transport's context: a link, not the parent. */
	trace_link(sp, trace_span_ctx(cur));
	return (mcptrace_attrs(sp, method, msg, sid, version, "tcp"));
}

struct trace_span *
mcptrace_client(const char *method, const cJSON *params, const cJSON *id,
    const struct trace_span *parent, const char *transport)
{
	struct trace_span	*sp;
	cJSON			*msg;

	if (!trace_enabled)
		return (NULL);
	sp = trace_child(method, TRACE_CLIENT, parent);
	if (!trace_recording(sp))
		return (sp);
	/* A view of the request for the attributes, nothing copied. */
	msg = cJSON_CreateObject();
	if (id != NULL)
		cJSON_AddItemReferenceToObject(msg, "id", (cJSON *)id);
	if (params != NULL)
		cJSON_AddItemReferenceToObject(msg, "params", (cJSON *)params);
	mcptrace_attrs(sp, method, msg, NULL, NULL, transport);
	cJSON_Delete(msg);
	return (sp);
}

void
mcptrace_inject(cJSON *params, const struct trace_span *sp)
{
	char		 tp[TRACE_PARENT_LEN + 1];
	const char	*state;
	cJSON		*meta;

	if (!cJSON_IsObject(params) || trace_traceparent(sp, tp) != 0)
		return;
	meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	if (!cJSON_IsObject(meta)) {
		cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
		meta = cJSON_AddObjectToObject(params, "_meta");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "traceparent");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "tracestate");
	cJSON_AddStringToObject(meta, "traceparent", tp);
	if ((state = trace_span_state(sp)) != NULL)
		cJSON_AddStringToObject(meta, "tracestate", state);
}

void
mcptrace_error(struct trace_span *sp, int code, const char *message)
{
	char	num[24];

	if (!trace_recording(sp))
		return;
	snprintf(num, sizeof num, "%d", code);
	trace_attr_str(sp, "rpc.response.status_code", num);
	trace_error(sp, num, message);
}

void
mcptrace_outcome(struct trace_span *sp, const cJSON *result,
    const cJSON *error)
{
	const cJSON	*code;

	if (!trace_recording(sp))
		return;
	if (error != NULL) {
		code = cJSON_GetObjectItemCaseSensitive(error, "code");
		mcptrace_error(sp, cJSON_IsNumber(code) ?
		    (int)code->valuedouble : 0, mcptrace_string(error,
		    "message"));
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
	    "isError")))
		trace_error(sp, "tool_error", NULL);
}
