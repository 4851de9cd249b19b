/*
 * OpenAPI documents (src/openapi/): any bytes read as a document (JSON or
 * YAML), its tools made, and a request built for each. Oracles:
 * - a document is accepted, or refused with a cause of one line;
 * - every tool is one a client can take: a name of 1 to 128 of
 *   [A-Za-z0-9_.-], unique, found by it; an inputSchema of type object
 *   with additionalProperties false; an outputSchema, when there is one,
 *   of type object; no OpenAPI keyword left in a schema (nullable,
 *   discriminator, example, xml, externalDocs, x-...), outside the names
 *   of properties;
 * - the request of a call with no arguments is built, or refused with a
 *   cause; a built one has a URL that starts with the base URL and holds
 *   no blank or control character, and headers without CR or LF;
 * - all of it is freed (LeakSanitizer), within the bounds (a document
 *   that tries to blow up is refused or its operation skipped, in time).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "openapi.h"
#include "xmalloc.h"

#define BASE	"http://api.example:8080/v1"

static const uint8_t	*fuzz_data;
static size_t		 fuzz_size;

static void
skipped_cb(const char *op, const char *why, void *arg)
{
	FUZZ_CHECK(op != NULL && why != NULL && strchr(why, '\n') == NULL,
	    "a skipped line of more than one line: %s", why);
}

static int
name_ok(const char *s)
{
	size_t	len = strlen(s), i;

	if (len == 0 || len > OPENAPI_NAME_MAX)
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("_-.", s[i]) == NULL)
			return (0);
	}
	return (1);
}

/* No OpenAPI keyword in a schema; names of properties are the API's. */
static void
check_schema(const cJSON *s, const char *tool)
{
	static const char *const bad[] = {
		"nullable", "discriminator", "example", "xml", "externalDocs"
	};
	const cJSON	*c, *n;
	size_t		 i;

	if (!cJSON_IsObject(s))
		return;
	cJSON_ArrayForEach(c, s) {
		for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
			FUZZ_CHECK(strcmp(c->string, bad[i]) != 0 &&
			    strncmp(c->string, "x-", 2) != 0,
			    "tool %s: keyword %s left in a schema", tool,
			    c->string);
		if (strcmp(c->string, "properties") == 0 ||
		    strcmp(c->string, "patternProperties") == 0 ||
		    strcmp(c->string, "$defs") == 0 ||
		    strcmp(c->string, "dependentSchemas") == 0) {
			cJSON_ArrayForEach(n, c)
				check_schema(n, tool);
		} else if (cJSON_IsArray(c)) {
			cJSON_ArrayForEach(n, c)
				check_schema(n, tool);
		} else
			check_schema(c, tool);
	}
}

static void
check_request(const struct openapi_op *op)
{
	struct openapi_request	 r;
	cJSON			*args = cJSON_CreateObject();
	char			*cause = NULL;
	const char		*p;
	size_t			 i;

	if (openapi_request_build(op, BASE, args, &r, &cause) != 0) {
		FUZZ_CHECK(cause != NULL && *cause != '\0',
		    "a request refused without a cause");
		free(cause);
		cJSON_Delete(args);
		return;
	}
	FUZZ_CHECK(strncmp(r.url, BASE, strlen(BASE)) == 0,
	    "URL %s is not under the base", r.url);
	for (p = r.url; *p != '\0'; p++)
		FUZZ_CHECK((unsigned char)*p > 0x20 && *p != 0x7f,
		    "URL %s has a blank or a control character", r.url);
	for (i = 0; i < r.nheaders; i++)
		FUZZ_CHECK(strpbrk(r.headers[i].value, "\r\n") == NULL &&
		    strpbrk(r.headers[i].name, "\r\n") == NULL,
		    "header %s splits the request", r.headers[i].name);
	openapi_request_clear(&r);
	cJSON_Delete(args);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	xmalloc_init_cjson();
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct openapi_options	 o;
	struct openapi_spec	*spec;
	const struct openapi_op	*op;
	const cJSON		*tool, *in, *out;
	const char		*name;
	char			*cause = NULL;
	size_t			 i, j;

	fuzz_data = data;
	fuzz_size = size;
	memset(&o, 0, sizeof o);
	o.prefix = "p_";
	o.max_spec = 1024 * 1024;
	o.max_operations = 200;
	o.max_depth = 16;
	o.skipped = skipped_cb;
	spec = openapi_spec_parse((const char *)data, size, &o, &cause);
	if (spec == NULL) {
		FUZZ_CHECK(cause != NULL && *cause != '\0' &&
		    strchr(cause, '\n') == NULL, "refused with cause \"%s\"",
		    cause != NULL ? cause : "(none)");
		free(cause);
		return (0);
	}
	FUZZ_CHECK(cause == NULL, "accepted with a cause: %s", cause);
	for (i = 0; i < openapi_spec_count(spec); i++) {
		op = openapi_spec_op(spec, i);
		name = openapi_spec_op_name(op);
		tool = openapi_spec_op_tool(op);
		FUZZ_CHECK(name_ok(name), "tool name \"%s\"", name);
		FUZZ_CHECK(strncmp(name, "p_", 2) == 0, "no prefix: %s", name);
		FUZZ_CHECK(openapi_spec_find(spec, name) == op,
		    "tool %s is not found by its name", name);
		for (j = i + 1; j < openapi_spec_count(spec); j++)
			FUZZ_CHECK(strcmp(openapi_spec_op_name(
			    openapi_spec_op(spec, j)), name) != 0,
			    "tool %s twice", name);
		FUZZ_CHECK(strcmp(cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(tool, "name")), name) == 0,
		    "the tool's name is not its operation's: %s", name);
		in = cJSON_GetObjectItemCaseSensitive(tool, "inputSchema");
		FUZZ_CHECK(strcmp(cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(in, "type")), "object") ==
		    0 && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(in,
		    "additionalProperties")), "tool %s: inputSchema", name);
		check_schema(in, name);
		out = cJSON_GetObjectItemCaseSensitive(tool, "outputSchema");
		FUZZ_CHECK(out == NULL || (cJSON_IsString(
		    cJSON_GetObjectItemCaseSensitive(out, "type")) && strcmp(
		    cJSON_GetObjectItemCaseSensitive(out, "type")->valuestring,
		    "object") == 0), "tool %s: outputSchema", name);
		FUZZ_CHECK((out != NULL) == openapi_spec_op_has_output(op),
		    "tool %s: has_output", name);
		check_schema(out, name);
		check_request(op);
	}
	openapi_spec_free(spec);
	return (0);
}
