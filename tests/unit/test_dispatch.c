/*
 * Unit tests for dispatch.c on the quick methods: the pages of a list and
 * the cursors that lead to them (only the ones mcpd hands out are taken),
 * the one check of a request's params for NULs, and what the method table
 * tells both revisions' edges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "confparse.h"
#include "unit.h"
#include "world.h"

#include "conf.h"
#include "dispatch.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "provider.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

/* Exec tools in the conf: with the three built-in ones, three pages. */
#define NTOOLS		247
#define NLISTED		(NTOOLS + 3)

static void
setup(void)
{
	char	*text;
	size_t	 len = 0, size = 64 * NTOOLS + 64;
	int	 i;

	text = xmalloc(size);
	len += (size_t)snprintf(text, size, "builtin_tools on\n");
	for (i = 0; i < NTOOLS; i++)
		len += (size_t)snprintf(text + len, size - len,
		    "tool t%03d {\n exec /bin/true\n}\n", i);
	world_setup(parse_ok(text));
	free(text);
	world_start();
	provider_init(conf);
}

/* Runs one quick request given as JSON text; returns the answer. */
static cJSON *
quick(const char *text)
{
	cJSON		*req, *answer;
	const char	*invalid, *cause;
	int		 code;

	req = jsonrpc_parse(text, strlen(text), &code, &cause);
	ck_assert_msg(req != NULL, "%s: %s", text, cause);
	ck_assert_int_eq(jsonrpc_classify(req, &invalid), JSONRPC_REQUEST);
	answer = dispatch_quick(NULL, req);
	cJSON_Delete(req);
	return (answer);
}

/* tools/list with this cursor (JSON text, NULL for none). */
static cJSON *
list(const char *cursor)
{
	char	text[1024];

	if (cursor == NULL)
		snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":1,"
		    "\"method\":\"tools/list\"}");
	else
		snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":1,"
		    "\"method\":\"tools/list\",\"params\":{\"cursor\":%s}}",
		    cursor);
	return (quick(text));
}

static int
error_code(const cJSON *answer)
{
	const cJSON	*error = cJSON_GetObjectItem(answer, "error");

	if (error == NULL)
		return (0);
	return (cJSON_GetObjectItem(error, "code")->valueint);
}

/* Following nextCursor lists every tool once, in pages of 100. */
START_TEST(test_pages)
{
	const cJSON	*result, *tools, *next, *tool;
	cJSON		*answer;
	char		 cursor[64], *seen;
	const char	*name;
	int		 pages = 0, total = 0, n;

	seen = xcalloc(NTOOLS, 1);
	answer = list(NULL);
	for (;;) {
		result = cJSON_GetObjectItem(answer, "result");
		ck_assert_ptr_nonnull(result);
		tools = cJSON_GetObjectItem(result, "tools");
		ck_assert_int_eq(cJSON_GetArraySize(tools),
		    pages < NLISTED / 100 ? 100 : NLISTED % 100);
		cJSON_ArrayForEach(tool, tools) {
			name = cJSON_GetObjectItem(tool, "name")->valuestring;
			if (sscanf(name, "t%d", &n) == 1) {
				ck_assert_int_eq(seen[n], 0);
				seen[n] = 1;
			}
			total++;
		}
		pages++;
		next = cJSON_GetObjectItem(result, "nextCursor");
		if (next == NULL)
			break;
		ck_assert(cJSON_IsString(next));
		snprintf(cursor, sizeof cursor, "\"%s\"", next->valuestring);
		cJSON_Delete(answer);
		answer = list(cursor);
	}
	cJSON_Delete(answer);
	ck_assert_int_eq(pages, 3);
	ck_assert_int_eq(total, NLISTED);
	ck_assert_ptr_null(memchr(seen, 0, NTOOLS));
	free(seen);
}
END_TEST

/* A null cursor is no cursor. */
START_TEST(test_null_cursor)
{
	cJSON	*answer = list("null");

	ck_assert_int_eq(error_code(answer), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(answer, "result"), "tools")), 100);
	cJSON_Delete(answer);
}
END_TEST

/* Anything mcpd did not hand out: -32602, and no arithmetic on it. */
static const char *bad_cursors[] = {
	"\"9223372036854775800\"", "\"9223372036854775807\"",
	"\"9223372036854775808\"", "\"18446744073709551616\"",
	"\"99999999999999999999999999999999999999\"",
	"\"-100\"", "\"-0\"", "\"+100\"", "\" 100\"", "\"100 \"", "\"0100\"",
	"\"1e2\"", "\"0x64\"", "\"100.0\"", "\"\"", "\"0\"", "\"50\"",
	"\"101\"", "\"300\"", "\"1000\"", "\"x\"", "\"100\\u0000\"",
	"100", "1e300", "-1", "true", "[]", "{}",
};

START_TEST(test_bad_cursor)
{
	cJSON	*answer = list(bad_cursors[_i]);

	ck_assert_msg(error_code(answer) == JSONRPC_INVALID_PARAMS,
	    "cursor %s accepted", bad_cursors[_i]);
	cJSON_Delete(answer);
}
END_TEST

/* A NUL anywhere in params: -32602 for every method, with the id. */
static const char *nul_params[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\","
	    "\"params\":{\"_meta\":{\"x\":\"\\u0000\"}}}",
	"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"logging/setLevel\","
	    "\"params\":{\"level\":\"debug\\u0000\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\","
	    "\"params\":{\"cursor\\u0000\":\"100\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"no/such\","
	    "\"params\":[\"\\u0000\"]}",
};

START_TEST(test_nul_params)
{
	cJSON		*answer = quick(nul_params[_i]), *req;
	const char	*message, *cause;
	int		 code;

	ck_assert_int_eq(error_code(answer), JSONRPC_INVALID_PARAMS);
	ck_assert_int_eq(cJSON_GetObjectItem(answer, "id")->valueint, 9);
	/* The stateless edge asks first, and answers the same message. */
	req = jsonrpc_parse(nul_params[_i], strlen(nul_params[_i]), &code,
	    &cause);
	ck_assert_ptr_nonnull(message = dispatch_params_refused(req));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(answer,
	    "error"), "message")->valuestring, message);
	cJSON_Delete(req);
	cJSON_Delete(answer);
}
END_TEST

/* initialize creates no session for params with a NUL. */
START_TEST(test_nul_initialize)
{
	static const char	*bodies[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		    "\"params\":{\"protocolVersion\":\"2025-06-18\\u0000\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		    "\"params\":{\"protocolVersion\":\"2025-06-18\","
		    "\"clientInfo\":{\"name\":\"\\u0000\"}}}",
	};
	enum dispatch_refusal	 why;
	cJSON			*req;
	const char		*cause = NULL;
	int			 code;
	size_t			 i;

	for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		req = jsonrpc_parse(bodies[i], strlen(bodies[i]), &code,
		    &cause);
		ck_assert_ptr_nonnull(req);
		cause = NULL;
		ck_assert_ptr_null(dispatch_initialize(req, NULL, NULL, &why, &cause,
		    NULL, NULL));
		ck_assert_int_eq(why, DISPATCH_INVALID);
		ck_assert_ptr_nonnull(cause);
		ck_assert_msg(strstr(cause, "NUL") != NULL, "cause %s", cause);
		ck_assert_uint_eq(session_count(), 0);
		cJSON_Delete(req);
	}
}
END_TEST

/*
 * What the transport asks of each method: whether it streams, whether it
 * is answered without a session; and a quick method whose capability is
 * off (no provider has resources or prompts here) is unknown.
 */
static const struct {
	const char	*method;	/* as JSON */
	int		 id;		/* a request, else a notification */
	int		 streams;
	int		 sessionless;
	int		 code;		/* of dispatch_quick's answer */
} methods[] = {
	{ "\"initialize\"", 1, 0, 1, JSONRPC_INVALID_REQUEST },
	{ "\"initialize\"", 0, 0, 0, -1 },
	{ "\"ping\"", 1, 0, 0, 0 },
	{ "\"tools/list\"", 1, 0, 0, 0 },
	{ "\"resources/list\"", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
	{ "\"resources/templates/list\"", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
	{ "\"resources/subscribe\"", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
	{ "\"prompts/list\"", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
	{ "\"tools/call\"", 1, 1, 0, -1 },
	{ "\"resources/read\"", 1, 1, 0, -1 },
	{ "\"prompts/get\"", 1, 1, 0, -1 },
	{ "\"completion/complete\"", 1, 1, 0, -1 },
	{ "\"notifications/cancelled\"", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
	{ "\"no/such\"", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
	{ "7", 1, 0, 0, JSONRPC_METHOD_NOT_FOUND },
};

START_TEST(test_method_table)
{
	cJSON		*msg, *answer;
	char		 text[256];
	const char	*cause;
	int		 code;

	snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",%s\"method\":%s}",
	    methods[_i].id ? "\"id\":1," : "", methods[_i].method);
	msg = jsonrpc_parse(text, strlen(text), &code, &cause);
	ck_assert_msg(msg != NULL, "%s: %s", text, cause);
	ck_assert_msg(dispatch_streams(msg) == methods[_i].streams,
	    "%s: streams", text);
	ck_assert_msg(dispatch_sessionless(msg) == methods[_i].sessionless,
	    "%s: sessionless", text);
	if (methods[_i].code >= 0) {
		answer = dispatch_quick(NULL, msg);
		ck_assert_msg(error_code(answer) == methods[_i].code,
		    "%s: code %d", text, error_code(answer));
		cJSON_Delete(answer);
	}
	cJSON_Delete(msg);
}
END_TEST

/*
 * One table for both revisions: which has a method, how it runs, its
 * flags and the params member it names (the stateless edge's Mcp-Name).
 */
static const struct {
	const char		*name;
	int			 rev;
	int			 found;
	enum dispatch_kind	 kind;
	int			 flags;
	const char		*name_param;
} revisions[] = {
	{ "ping", MCP_REV_2025, 1, DISPATCH_QUICK, 0, NULL },
	{ "ping", MCP_REV_2026, 0, 0, 0, NULL },
	{ "initialize", MCP_REV_2026, 0, 0, 0, NULL },
	{ "initialize", MCP_REV_2025, 1, DISPATCH_QUICK,
	  DISPATCH_SESSIONLESS, NULL },
	{ "server/discover", MCP_REV_2025, 0, 0, 0, NULL },
	{ "server/discover", MCP_REV_2026, 1, DISPATCH_QUICK,
	  DISPATCH_CACHEABLE, NULL },
	{ "subscriptions/listen", MCP_REV_2026, 1, DISPATCH_LISTEN, 0, NULL },
	{ "subscriptions/listen", MCP_REV_2025, 0, 0, 0, NULL },
	{ "tools/list", MCP_REV_2026, 1, DISPATCH_QUICK, DISPATCH_CACHEABLE,
	  NULL },
	{ "tools/call", MCP_REV_2026, 1, DISPATCH_CALL,
	  DISPATCH_PARAM_HEADERS, "name" },
	{ "tools/call", MCP_REV_2025, 1, DISPATCH_CALL,
	  DISPATCH_PARAM_HEADERS, "name" },
	{ "resources/read", MCP_REV_2026, 1, DISPATCH_CALL,
	  DISPATCH_CACHEABLE, "uri" },
	{ "prompts/get", MCP_REV_2026, 1, DISPATCH_CALL, 0, "name" },
	{ "tasks/update", MCP_REV_2026, 1, DISPATCH_CALL, 0, "taskId" },
	/* No provider has resources or prompts here: off, so not found. */
	{ "resources/list", MCP_REV_2026, 0, 0, 0, NULL },
	{ "prompts/list", MCP_REV_2026, 0, 0, 0, NULL },
	{ "resources/subscribe", MCP_REV_2026, 0, 0, 0, NULL },
	{ "logging/setLevel", MCP_REV_2026, 0, 0, 0, NULL },
	{ "notifications/cancelled", MCP_REV_2025, 0, 0, 0, NULL },
	{ "no/such", MCP_REV_2026, 0, 0, 0, NULL },
};

START_TEST(test_revisions)
{
	const struct dispatch_method	*m;

	m = dispatch_lookup(revisions[_i].name, revisions[_i].rev);
	ck_assert_msg((m != NULL) == revisions[_i].found, "%s in %d: found",
	    revisions[_i].name, revisions[_i].rev);
	if (m == NULL)
		return;
	ck_assert_str_eq(dispatch_method_name(m), revisions[_i].name);
	ck_assert_int_eq(dispatch_method_kind(m), revisions[_i].kind);
	ck_assert_int_eq(dispatch_method_flags(m), revisions[_i].flags);
	if (revisions[_i].name_param == NULL)
		ck_assert_ptr_null(dispatch_method_name_param(m));
	else
		ck_assert_str_eq(dispatch_method_name_param(m),
		    revisions[_i].name_param);
}
END_TEST

/* What the authorization check asks of a request: what it names. */
static const struct {
	const char		*msg;
	enum dispatch_scope	 scope;
	const char		*name;
} scopes[] = {
	{ "{\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}",
	  DISPATCH_SCOPE_TOOL, "t" },
	{ "{\"method\":\"prompts/get\",\"params\":{\"name\":\"p\"}}",
	  DISPATCH_SCOPE_PROMPT, "p" },
	{ "{\"method\":\"resources/read\",\"params\":{\"uri\":\"u\"}}",
	  DISPATCH_SCOPE_RESOURCE, "u" },
	{ "{\"method\":\"resources/subscribe\",\"params\":{\"uri\":"
	  "\"u\"}}", DISPATCH_SCOPE_RESOURCE, "u" },
	{ "{\"method\":\"completion/complete\",\"params\":{}}",
	  DISPATCH_SCOPE_REF, NULL },
	{ "{\"method\":\"tools/list\",\"params\":{\"name\":\"t\"}}",
	  DISPATCH_SCOPE_NONE, NULL },
	{ "{\"method\":\"tools/call\",\"params\":{\"name\":7}}",
	  DISPATCH_SCOPE_TOOL, NULL },
	{ "{\"method\":7}", DISPATCH_SCOPE_NONE, NULL },
};

START_TEST(test_scopes)
{
	cJSON		*msg = cJSON_Parse(scopes[_i].msg);
	const char	*name;

	ck_assert_ptr_nonnull(msg);
	ck_assert_int_eq(dispatch_scope(msg, &name), scopes[_i].scope);
	if (scopes[_i].name == NULL)
		ck_assert_ptr_null(name);
	else
		ck_assert_str_eq(name, scopes[_i].name);
	cJSON_Delete(msg);
}
END_TEST

#define NITEMS(a)	((int)(sizeof (a) / sizeof (a)[0]))

static Suite *
dispatch_suite(void)
{
	Suite	*s = suite_create("dispatch");
	TCase	*tc;

	tc = tcase_create("pages");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_test(tc, test_pages);
	tcase_add_test(tc, test_null_cursor);
	tcase_add_loop_test(tc, test_bad_cursor, 0, NITEMS(bad_cursors));
	suite_add_tcase(s, tc);

	tc = tcase_create("nul");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_loop_test(tc, test_nul_params, 0, NITEMS(nul_params));
	tcase_add_test(tc, test_nul_initialize);
	suite_add_tcase(s, tc);

	tc = tcase_create("methods");
	tcase_add_checked_fixture(tc, setup, world_teardown);
	tcase_add_loop_test(tc, test_method_table, 0, NITEMS(methods));
	tcase_add_loop_test(tc, test_revisions, 0, NITEMS(revisions));
	tcase_add_loop_test(tc, test_scopes, 0, NITEMS(scopes));
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(dispatch_suite)
