/*
 * Unit tests for src/openapi/: YAML by the core schema (aliases bounded,
 * merge keys, tags); a document read into tools (3.0 and 3.1 normalized
 * to JSON Schema 2020-12, $refs expanded, cycles into $defs, allOf
 * merged, names made and filtered, what cannot be made skipped); hostile
 * documents refused; a call's request built (path templating and
 * percent-encoding, every query style, headers, cookies, the body); the
 * openapi block of the configuration (every directive, defaults, errors
 * with FILE:LINE, header values read from files).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confparse.h"
#include "unit.h"

#include "conf.h"
#include "openapi.h"
#include "xmalloc.h"

/* ---------------------------------------------------------------------
 * Helpers.
 */

static char	skipped_text[8192];
static int	skipped_count;

static void
skipped_cb(const char *op, const char *why, void *arg)
{
	size_t	len = strlen(skipped_text);

	skipped_count++;
	snprintf(skipped_text + len, sizeof skipped_text - len, "%s: %s\n",
	    op, why);
}

static struct openapi_options
options(void)
{
	struct openapi_options	o;

	memset(&o, 0, sizeof o);
	o.prefix = "";
	o.max_spec = 8 * 1024 * 1024;
	o.max_operations = 1000;
	o.max_depth = 32;
	o.skipped = skipped_cb;
	skipped_text[0] = '\0';
	skipped_count = 0;
	return (o);
}

static struct openapi_spec *
spec_ok(const char *text, const struct openapi_options *o)
{
	struct openapi_spec	*spec;
	char			*cause = NULL;

	spec = openapi_spec_parse(text, strlen(text), o, &cause);
	ck_assert_msg(spec != NULL, "refused: %s", cause);
	return (spec);
}

/* Refused, and the reason holds want. */
static void
parse_refused(const char *text, const struct openapi_options *o,
    const char *want)
{
	struct openapi_spec	*spec;
	char			*cause = NULL;

	spec = openapi_spec_parse(text, strlen(text), o, &cause);
	ck_assert_msg(spec == NULL, "not refused (wanted \"%s\")", want);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strstr(cause, want) != NULL, "cause \"%s\" lacks \"%s\"",
	    cause, want);
	free(cause);
}

/* A tool's schema at a path of keys ("inputSchema/properties/x"). */
static const cJSON *
at(const cJSON *node, const char *path)
{
	char	*copy = xstrdup(path), *p = copy, *key;

	while (node != NULL && (key = strsep(&p, "/")) != NULL)
		node = cJSON_IsArray(node) ? cJSON_GetArrayItem(node,
		    atoi(key)) : cJSON_GetObjectItemCaseSensitive(node, key);
	free(copy);
	return (node);
}

static const cJSON *
tool_at(const struct openapi_spec *spec, const char *name, const char *path)
{
	const struct openapi_op	*op = openapi_spec_find(spec, name);

	ck_assert_msg(op != NULL, "no tool %s", name);
	return (at(openapi_spec_op_tool(op), path));
}

/* The JSON text of node equals want (which is JSON text too). */
static void
json_is(const cJSON *node, const char *want)
{
	cJSON	*w = cJSON_Parse(want);
	char	*got;

	ck_assert_ptr_nonnull(w);
	got = node != NULL ? cJSON_PrintUnformatted(node) : xstrdup("(null)");
	ck_assert_msg(node != NULL && cJSON_Compare(node, w, 1),
	    "got %s, want %s", got, want);
	free(got);
	cJSON_Delete(w);
}

/* ---------------------------------------------------------------------
 * YAML.
 */

START_TEST(test_yaml_core_schema)
{
	const char	*text =
	    "a: yes\nb: true\nc: 0o17\nd: 0x1F\ne: 1.5e3\nf: ~\ng: \"true\"\n"
	    "h: 012\ni: .inf\nj: 1.0.3\n200: ok\nk: -7\nl: null\nm: on\n"
	    "n: 'x: y'\no:\np: |\n  two\n  lines\nq: [1, two, {r: s}]\n"
	    "t: !!str 123\nu: !!int \"42\"\n";
	char		*cause = NULL;
	cJSON		*v;

	v = openapi_yaml_parse(text, strlen(text), &cause);
	ck_assert_msg(v != NULL, "%s", cause);
	json_is(v, "{\"a\":\"yes\",\"b\":true,\"c\":15,\"d\":31,\"e\":1500,"
	    "\"f\":null,\"g\":\"true\",\"h\":12,\"i\":\".inf\",\"j\":\"1.0.3\","
	    "\"200\":\"ok\",\"k\":-7,\"l\":null,\"m\":\"on\",\"n\":\"x: y\","
	    "\"o\":null,\"p\":\"two\\nlines\\n\","
	    "\"q\":[1,\"two\",{\"r\":\"s\"}],"
	    "\"t\":\"123\",\"u\":42}");
	cJSON_Delete(v);
}
END_TEST

START_TEST(test_yaml_aliases_and_merge)
{
	const char	*text =
	    "base: &b {x: 1, y: 2}\n"
	    "list: &l [*b, *b]\n"
	    "obj:\n  <<: *b\n  y: 3\n"
	    "two:\n  z: 0\n  <<: [*b, {w: 9}]\n"
	    "again: *l\n";
	char		*cause = NULL;
	cJSON		*v;

	v = openapi_yaml_parse(text, strlen(text), &cause);
	ck_assert_msg(v != NULL, "%s", cause);
	json_is(at(v, "obj"), "{\"x\":1,\"y\":3}");
	json_is(at(v, "two"), "{\"z\":0,\"x\":1,\"y\":2,\"w\":9}");
	json_is(at(v, "again"), "[{\"x\":1,\"y\":2},{\"x\":1,\"y\":2}]");
	cJSON_Delete(v);
}
END_TEST

/* Refused, the reason holding want. */
static void
yaml_refused(const char *text, const char *want)
{
	char	*cause = NULL;
	cJSON	*v;

	v = openapi_yaml_parse(text, strlen(text), &cause);
	ck_assert_msg(v == NULL, "not refused: %s", text);
	ck_assert_msg(cause != NULL && strstr(cause, want) != NULL,
	    "cause \"%s\" lacks \"%s\"", cause, want);
	free(cause);
}

START_TEST(test_yaml_refused)
{
	struct { const char *text, *want; } cases[] = {
		{ "a: 1\na: 2\n", "given twice" },
		{ "a: 1\n---\nb: 2\n", "more than one document" },
		{ "a: !custom x\n", "unsupported tag" },
		{ "a: !!int abc\n", "does not fit its tag" },
		{ "a: \"x\\0y\"\n", "NUL" },
		{ "? [1, 2]\n: x\n", "not a scalar" },
		{ "a: *nope\n", "names no anchor" },
		{ "a: &x [1, *x]\n", "inside its own anchor" },
		{ "a: [1, 2\nb: 3\n", "YAML line" },
		{ "", "empty" },
	};
	size_t	i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		yaml_refused(cases[i].text, cases[i].want);
}
END_TEST

/* Billion laughs: each level nine aliases of the one before. */
START_TEST(test_yaml_alias_bomb)
{
	char	text[4096], *p = text;
	int	i, j;

	p += sprintf(p, "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol]\n");
	for (i = 1; i < 10; i++) {
		p += sprintf(p, "l%d: &l%d [", i, i);
		for (j = 0; j < 9; j++)
			p += sprintf(p, "%s*l%d", j > 0 ? ", " : "", i - 1);
		p += sprintf(p, "]\n");
	}
	yaml_refused(text, "nodes once aliases are expanded");
}
END_TEST

/* ---------------------------------------------------------------------
 * Documents.
 */

static const char spec30[] =
"openapi: 3.0.3\n"
"info: {title: Pets, version: 1.0.0}\n"
"servers:\n"
"  - url: https://{host}/v1\n"
"    variables: {host: {default: api.example.com}}\n"
"paths:\n"
"  /pets/{petId}:\n"
"    parameters:\n"
"      - {name: petId, in: path, required: true, schema: {type: integer, "
"format: int64}}\n"
"    get:\n"
"      operationId: getPet\n"
"      summary: One pet\n"
"      description: The pet with this id.\n"
"      parameters:\n"
"        - {name: fields, in: query, style: form, explode: false, schema: "
"{type: array, items: {type: string}}}\n"
"        - {name: X-Trace, in: header, schema: {type: string}}\n"
"        - {name: Authorization, in: header, schema: {type: string}}\n"
"        - {name: petId, in: query, description: shadowing, schema: {type: "
"string}}\n"
"      responses:\n"
"        '200':\n"
"          description: ok\n"
"          content:\n"
"            application/json:\n"
"              schema: {$ref: '#/components/schemas/Pet'}\n"
"        '404': {description: none}\n"
"    delete:\n"
"      responses: {'204': {description: gone}}\n"
"  /pets:\n"
"    get:\n"
"      operationId: listPets\n"
"      x-internal: true\n"
"      parameters:\n"
"        - {name: limit, in: query, schema: {type: integer, minimum: 1, "
"maximum: 100, exclusiveMaximum: true}}\n"
"      responses:\n"
"        '200':\n"
"          description: ok\n"
"          content:\n"
"            application/json:\n"
"              schema: {type: array, items: {$ref: "
"'#/components/schemas/Pet'}}\n"
"    post:\n"
"      operationId: createPet\n"
"      requestBody:\n"
"        required: true\n"
"        content:\n"
"          application/json:\n"
"            schema: {$ref: '#/components/schemas/NewPet'}\n"
"      responses:\n"
"        '201': {description: made}\n"
"        '200': {description: also}\n"
"  /upload:\n"
"    post:\n"
"      operationId: upload\n"
"      requestBody:\n"
"        required: true\n"
"        content: {multipart/form-data: {schema: {type: object}}}\n"
"      responses: {'200': {description: ok}}\n"
"  /remote:\n"
"    get:\n"
"      operationId: remote\n"
"      parameters:\n"
"        - {name: q, in: query, schema: {$ref: 'other.yaml#/Thing'}}\n"
"      responses: {'200': {description: ok}}\n"
"  /trees:\n"
"    get:\n"
"      operationId: getTree\n"
"      responses:\n"
"        '200':\n"
"          description: ok\n"
"          content:\n"
"            application/json:\n"
"              schema: {$ref: '#/components/schemas/Node'}\n"
"components:\n"
"  schemas:\n"
"    Pet:\n"
"      allOf:\n"
"        - $ref: '#/components/schemas/NewPet'\n"
"        - type: object\n"
"          required: [id]\n"
"          properties:\n"
"            id: {type: integer, format: int64, readOnly: true}\n"
"    NewPet:\n"
"      type: object\n"
"      required: [name]\n"
"      discriminator: {propertyName: kind}\n"
"      properties:\n"
"        name: {type: string, example: Rex}\n"
"        tag: {type: string, nullable: true}\n"
"        kind: {type: string, enum: [cat, dog], nullable: true}\n"
"        phone: {type: string, format: phone}\n"
"        secret: {type: string, writeOnly: true}\n"
"        stamp: {type: string, readOnly: true}\n"
"        weird: {type: string, required: true, x-thing: 1}\n"
"    Node:\n"
"      type: object\n"
"      properties:\n"
"        value: {type: string}\n"
"        children: {type: array, items: {$ref: '#/components/schemas/Node'}}\n";

START_TEST(test_spec_30)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	const cJSON		*s;

	spec = spec_ok(spec30, &o);
	ck_assert_str_eq(openapi_spec_version(spec), "3.0.3");
	ck_assert_str_eq(openapi_spec_title(spec), "Pets");
	ck_assert_str_eq(openapi_spec_server(spec),
	    "https://api.example.com/v1");
	/* getPet, delete_pets_petId, listPets, createPet, getTree */
	ck_assert_uint_eq(openapi_spec_count(spec), 5);
	ck_assert_uint_eq(openapi_spec_skipped(spec), 2);
	ck_assert_int_eq(skipped_count, 2);
	ck_assert_ptr_nonnull(strstr(skipped_text, "POST /upload (upload): "
	    "its request body is multipart/form-data, not JSON"));
	ck_assert_ptr_nonnull(strstr(skipped_text, "GET /remote (remote): "
	    "parameter q: $ref \"other.yaml#/Thing\" is not a reference"));

	/* Parameters: by name; a name in two locations made apart. */
	json_is(tool_at(spec, "getPet", "inputSchema"),
	    "{\"type\":\"object\",\"properties\":{"
	    "\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	    "\"X-Trace\":{\"type\":\"string\"},"
	    "\"petId\":{\"type\":\"string\",\"description\":\"shadowing\"},"
	    "\"path_petId\":{\"type\":\"integer\",\"format\":\"int64\"}},"
	    "\"required\":[\"path_petId\"],\"additionalProperties\":false}");
	ck_assert_str_eq(cJSON_GetStringValue(tool_at(spec, "getPet",
	    "title")), "One pet");
	ck_assert_str_eq(cJSON_GetStringValue(tool_at(spec, "getPet",
	    "description")), "One pet\n\nThe pet with this id.");
	json_is(tool_at(spec, "getPet", "annotations"), "{\"readOnlyHint\":"
	    "true,\"idempotentHint\":true,\"openWorldHint\":true}");

	/* Output: allOf merged, writeOnly out, 3.0 nullable, formats. */
	json_is(tool_at(spec, "getPet", "outputSchema"),
	    "{\"type\":\"object\",\"properties\":{"
	    "\"name\":{\"type\":\"string\",\"examples\":[\"Rex\"]},"
	    "\"tag\":{\"type\":[\"string\",\"null\"]},"
	    "\"kind\":{\"type\":[\"string\",\"null\"],"
	    "\"enum\":[\"cat\",\"dog\",null]},"
	    "\"phone\":{\"type\":\"string\"},"
	    "\"stamp\":{\"type\":\"string\",\"readOnly\":true},"
	    "\"weird\":{\"type\":\"string\"},"
	    "\"id\":{\"type\":\"integer\",\"format\":\"int64\","
	    "\"readOnly\":true}},"
	    "\"required\":[\"name\",\"id\"]}");
	ck_assert_int_eq(openapi_spec_op_wraps(openapi_spec_find(spec,
	    "getPet")), 0);

	/* An array response is wrapped; exclusiveMaximum: true made 2020-12. */
	json_is(tool_at(spec, "listPets", "outputSchema/required"),
	    "[\"result\"]");
	json_is(tool_at(spec, "listPets",
	    "outputSchema/properties/result/type"), "\"array\"");
	ck_assert_int_eq(openapi_spec_op_wraps(openapi_spec_find(spec,
	    "listPets")), 1);
	json_is(tool_at(spec, "listPets", "inputSchema/properties/limit"),
	    "{\"type\":\"integer\",\"minimum\":1,\"exclusiveMaximum\":100}");

	/* The body: readOnly out of input; two 2xx: no outputSchema. */
	s = tool_at(spec, "createPet", "inputSchema");
	json_is(at(s, "required"), "[\"body\"]");
	ck_assert_ptr_null(at(s, "properties/body/properties/stamp"));
	ck_assert_ptr_nonnull(at(s, "properties/body/properties/secret"));
	ck_assert_ptr_null(at(s, "properties/body/discriminator"));
	ck_assert_ptr_null(tool_at(spec, "createPet", "outputSchema"));
	json_is(tool_at(spec, "createPet", "annotations/destructiveHint"),
	    "false");

	/* No operationId: method and path. */
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "delete_pets_petId"));
	json_is(tool_at(spec, "delete_pets_petId", "annotations/"
	    "destructiveHint"), "true");

	/* A recursive schema: expanded once, the cycle through $defs. */
	s = tool_at(spec, "getTree", "outputSchema");
	json_is(at(s, "properties/children/items"),
	    "{\"$ref\":\"#/$defs/Node\"}");
	json_is(at(s, "$defs/Node/properties/children/items"),
	    "{\"$ref\":\"#/$defs/Node\"}");
	openapi_spec_free(spec);
}
END_TEST

static const char spec31[] =
"{\"openapi\":\"3.1.0\",\"info\":{\"title\":\"T\",\"version\":\"1\"},"
"\"paths\":{\"/things\":{\"post\":{\"operationId\":\"make thing!\","
"\"requestBody\":{\"content\":{\"application/merge-patch+json\":{\"schema\":"
"{\"$ref\":\"#/components/schemas/Thing\",\"description\":\"Over\"}}}},"
"\"responses\":{\"200\":{\"description\":\"ok\",\"content\":{"
"\"application/json\":{\"schema\":{\"type\":[\"object\",\"null\"]}}}}}},"
"\"get\":{\"operationId\":\"getThings\",\"parameters\":[{\"name\":\"q\","
"\"in\":\"query\",\"schema\":{\"$ref\":\"#/components/schemas/Q\","
"\"minLength\":2}},{\"name\":\"filter\",\"in\":\"query\",\"content\":{"
"\"application/json\":{\"schema\":{\"type\":\"object\"}}}}],"
"\"responses\":{\"2XX\":{\"description\":\"ok\"}}}}},"
"\"components\":{\"schemas\":{\"Thing\":{\"type\":\"object\","
"\"description\":\"A thing\",\"properties\":{\"n\":{\"type\":[\"integer\","
"\"null\"],\"exclusiveMinimum\":0,\"const\":3},"
"\"nullable\":{\"nullable\":true}}},"
"\"Q\":{\"type\":\"string\",\"maxLength\":9}}}}";

START_TEST(test_spec_31)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;

	spec = spec_ok(spec31, &o);
	ck_assert_ptr_null(openapi_spec_server(spec));
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "make_thing"));
	/* Annotations beside a $ref override; 3.1's keywords kept. */
	json_is(tool_at(spec, "make_thing", "inputSchema/properties/body"),
	    "{\"type\":\"object\",\"description\":\"Over\",\"properties\":{"
	    "\"n\":{\"type\":[\"integer\",\"null\"],\"exclusiveMinimum\":0,"
	    "\"const\":3},\"nullable\":{}}}");
	json_is(tool_at(spec, "make_thing", "outputSchema"),
	    "{\"type\":\"object\",\"properties\":{\"result\":{\"type\":"
	    "[\"object\",\"null\"]}},\"required\":[\"result\"]}");
	/* Other keywords beside a $ref: both hold. */
	json_is(tool_at(spec, "getThings", "inputSchema/properties/q"),
	    "{\"allOf\":[{\"type\":\"string\",\"maxLength\":9},"
	    "{\"minLength\":2}]}");
	json_is(tool_at(spec, "getThings", "inputSchema/properties/filter"),
	    "{\"type\":\"object\"}");
	openapi_spec_free(spec);
}
END_TEST

START_TEST(test_spec_names_and_filters)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	char			 p1[] = "get*", p2[] = "createPet";
	char			 p3[] = "GET:/trees";
	char			*allow[] = { p1, p2 }, *deny[] = { p3 };

	o.prefix = "pets_";
	spec = spec_ok(spec30, &o);
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "pets_getPet"));
	ck_assert_str_eq(cJSON_GetStringValue(tool_at(spec, "pets_getPet",
	    "name")), "pets_getPet");
	openapi_spec_free(spec);

	o = options();
	o.allow = allow;
	o.nallow = 2;
	o.deny = deny;
	o.ndeny = 1;
	spec = spec_ok(spec30, &o);
	ck_assert_uint_eq(openapi_spec_count(spec), 2);
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "getPet"));
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "createPet"));
	openapi_spec_free(spec);

	/* Names made twice get a number. */
	o = options();
	spec = spec_ok("{\"openapi\":\"3.0.0\",\"info\":{},\"paths\":{"
	    "\"/a\":{\"get\":{\"operationId\":\"x y\",\"responses\":{}}},"
	    "\"/b\":{\"get\":{\"operationId\":\"x-y\",\"responses\":{}},"
	    "\"put\":{\"operationId\":\"x_y\",\"responses\":{}}}}}", &o);
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "x_y"));
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "x-y"));
	ck_assert_ptr_nonnull(openapi_spec_find(spec, "x_y_2"));
	openapi_spec_free(spec);
}
END_TEST

/* A chain of n $refs: S0 -> S1 -> ... -> Sn (a schema). */
static char *
ref_chain(int n)
{
	char	*text, *p;
	int	 i;

	text = xmalloc(100 * (size_t)n + 1024);
	p = text + sprintf(text, "{\"openapi\":\"3.0.0\",\"info\":{},\"paths\":"
	    "{\"/a\":{\"get\":{\"parameters\":[{\"name\":\"q\",\"in\":"
	    "\"query\",\"schema\":{\"$ref\":\"#/components/schemas/S0\"}}],"
	    "\"responses\":{}}}},\"components\":{\"schemas\":{");
	for (i = 0; i < n; i++)
		p += sprintf(p, "\"S%d\":{\"$ref\":"
		    "\"#/components/schemas/S%d\"},", i, i + 1);
	sprintf(p, "\"S%d\":{\"type\":\"string\"}}}}", n);
	return (text);
}

START_TEST(test_spec_hostile)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	char			*text, *p;
	int			 i;

	text = ref_chain(64);
	spec = spec_ok(text, &o);
	openapi_spec_free(spec);
	free(text);
	text = ref_chain(65);
	parse_refused(text, &o, "a chain of more than 64 $refs");
	free(text);

	parse_refused("{\"openapi\":\"3.0.0\",\"info\":{},\"paths\":{\"/a\":{"
	    "\"get\":{\"requestBody\":{\"content\":{\"application/json\":{"
	    "\"schema\":{\"$ref\":\"#/components/schemas/A\"}}}},"
	    "\"responses\":{}}}},\"components\":{\"schemas\":{\"A\":{\"$ref\":"
	    "\"#/components/schemas/B\"},\"B\":{\"$ref\":"
	    "\"#/components/schemas/A\"}}}}", &o, "cycle of $refs");

	text = xmalloc(16384);
	p = text + sprintf(text, "openapi: 3.1.0\ninfo: {}\npaths:\n  /a:\n"
	    "    get:\n      parameters:\n        - name: e\n          in: "
	    "query\n          schema: {enum: [");
	for (i = 0; i <= OPENAPI_MAX_ENUM; i++)
		p += sprintf(p, "%s%d", i > 0 ? "," : "", i);
	sprintf(p, "]}\n      responses: {}\n");
	parse_refused(text, &o, "an enum of 1001 values");
	free(text);

	parse_refused("{\"swagger\":\"2.0\"}", &o, "Swagger 2.0");
	parse_refused("{\"openapi\":\"3.2.0\"}", &o, "OpenAPI 3.2.0 is not");
	parse_refused("{\"info\":{}}", &o, "not an OpenAPI document");
	parse_refused("{\"openapi\":\"3.0.0\",}", &o, "JSON: not valid");
	parse_refused("openapi: [", &o, "YAML line");
	parse_refused("{\"openapi\":\"3.0.0\",\"x\":\"\xff\"}", &o,
	    "not UTF-8 text (byte 24)");

	o.max_spec = 10;
	parse_refused(spec30, &o, "more than max_spec (10)");
	o = options();
	o.max_operations = 4;
	parse_refused(spec30, &o, "7 operations, more than max_operations (4)");
}
END_TEST

/* What an operation cannot have makes it skipped, and says why. */
START_TEST(test_spec_skips)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	char			*text, *p;
	int			 i;

	/* A schema deeper than max_depth. */
	o.max_depth = 4;
	text = xmalloc(4096);
	p = text + sprintf(text, "{\"openapi\":\"3.0.0\",\"info\":{},"
	    "\"paths\":{"
	    "\"/deep\":{\"get\":{\"operationId\":\"deep\",\"parameters\":[{"
	    "\"name\":\"q\",\"in\":\"query\",\"schema\":");
	for (i = 0; i < 6; i++)
		p += sprintf(p, "{\"type\":\"array\",\"items\":");
	p += sprintf(p, "{}");
	for (i = 0; i < 6; i++)
		p += sprintf(p, "}");
	sprintf(p, "}],\"responses\":{}}},\"/ok\":{\"get\":{\"responses\":{}}},"
	    "\"/p/{x}\":{\"get\":{\"operationId\":\"undeclared\","
	    "\"responses\":{}}},\"/t\":{\"trace\":{\"responses\":{}}},"
	    "\"/gone\":{\"$ref\":\"#/components/pathItems/none\"}}}");
	spec = spec_ok(text, &o);
	ck_assert_uint_eq(openapi_spec_count(spec), 1);
	ck_assert_ptr_nonnull(strstr(skipped_text, "GET /deep (deep): "
	    "parameter q: a schema nested deeper than max_schema_depth (4)"));
	ck_assert_ptr_nonnull(strstr(skipped_text, "path parameter {x} is "
	    "not declared"));
	ck_assert_ptr_nonnull(strstr(skipped_text, "TRACE /t: mcpd does not "
	    "send this method"));
	ck_assert_ptr_nonnull(strstr(skipped_text, "/gone: $ref "
	    "\"#/components/pathItems/none\" names nothing"));
	ck_assert_uint_eq(openapi_spec_skipped(spec), 4);
	openapi_spec_free(spec);
	free(text);

	/*
	 * A $ref graph that doubles at each level: 2^20 schema objects
	 * from a few lines. Cut at OPENAPI_TOOL_NODES.
	 */
	o = options();
	text = xmalloc(8192);
	p = text + sprintf(text, "{\"openapi\":\"3.0.0\",\"info\":{},"
	    "\"paths\":{"
	    "\"/bomb\":{\"get\":{\"operationId\":\"bomb\",\"parameters\":[{"
	    "\"name\":\"q\",\"in\":\"query\",\"schema\":{\"$ref\":"
	    "\"#/components/schemas/D0\"}}],\"responses\":{}}}},"
	    "\"components\":{\"schemas\":{");
	for (i = 0; i < 20; i++)
		p += sprintf(p, "\"D%d\":{\"type\":\"object\",\"properties\":{"
		    "\"a\":{\"$ref\":\"#/components/schemas/D%d\"},"
		    "\"b\":{\"$ref\":"
		    "\"#/components/schemas/D%d\"}}},", i, i + 1, i + 1);
	sprintf(p, "\"D20\":{\"type\":\"string\"}}}}");
	o.max_depth = 64;
	spec = spec_ok(text, &o);
	ck_assert_uint_eq(openapi_spec_count(spec), 0);
	ck_assert_ptr_nonnull(strstr(skipped_text, "bomb): parameter q: its "
	    "schema expands past 20000 schema objects"));
	openapi_spec_free(spec);
	free(text);
}
END_TEST

/* ---------------------------------------------------------------------
 * Requests.
 */

static const char spec_req[] =
"openapi: 3.1.0\n"
"info: {title: R, version: '1'}\n"
"paths:\n"
"  /items/{id}/{label}{matrix}:\n"
"    put:\n"
"      operationId: put\n"
"      parameters:\n"
"        - {name: id, in: path, required: true, schema: {type: string}}\n"
"        - {name: label, in: path, required: true, style: label, explode: "
"true, schema: {type: array}}\n"
"        - {name: matrix, in: path, required: true, style: matrix, schema: "
"{type: object}}\n"
"        - {name: tags, in: query, schema: {type: array}}\n"
"        - {name: csv, in: query, explode: false, schema: {type: array}}\n"
"        - {name: sp, in: query, style: spaceDelimited, explode: false, "
"schema: {type: array}}\n"
"        - {name: pipe, in: query, style: pipeDelimited, explode: false, "
"schema: {type: array}}\n"
"        - {name: filter, in: query, style: deepObject, explode: true, schema: "
"{type: object}}\n"
"        - {name: obj, in: query, schema: {type: object}}\n"
"        - {name: raw, in: query, allowReserved: true, schema: {type: "
"string}}\n"
"        - {name: j, in: query, content: {application/json: {schema: {type: "
"object}}}}\n"
"        - {name: X-Ids, in: header, schema: {type: array}}\n"
"        - {name: session, in: cookie, schema: {type: string}}\n"
"        - {name: prefs, in: cookie, explode: false, schema: {type: array}}\n"
"      requestBody:\n"
"        required: true\n"
"        content: {application/json: {schema: {type: object}}}\n"
"      responses: {'204': {description: done}}\n";

static const char *
header_of(const struct openapi_request *r, const char *name)
{
	size_t	i;

	for (i = 0; i < r->nheaders; i++) {
		if (strcmp(r->headers[i].name, name) == 0)
			return (r->headers[i].value);
	}
	return (NULL);
}

START_TEST(test_request_build)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	struct openapi_request	 r;
	cJSON			*args;
	char			*cause = NULL;

	spec = spec_ok(spec_req, &o);
	args = cJSON_Parse("{\"id\":\"a b/c?\",\"label\":[\"x\",\"y\"],"
	    "\"matrix\":{\"R\":100,\"G\":\"2 0\"},\"tags\":[\"t1\",\"t&2\"],"
	    "\"csv\":[1,2.5,true],\"sp\":[\"a\",\"b\"],\"pipe\":[\"a\",\"b\"],"
	    "\"filter\":{\"color\":\"red\",\"size\":3},\"obj\":{\"k\":\"v\"},"
	    "\"raw\":\"a/b?c=d#e\",\"j\":{\"a\":[1]},\"X-Ids\":[1,2],"
	    "\"session\":\"s;1\",\"prefs\":[\"a\",\"b\"],"
	    "\"body\":{\"name\":\"x\",\"n\":[1,null]}}");
	ck_assert_int_eq(openapi_request_build(openapi_spec_find(spec, "put"),
	    "https://api.example.com/v1/", args, &r, &cause), 0);
	ck_assert_str_eq(r.method, "PUT");
	ck_assert_str_eq(r.url, "https://api.example.com/v1/items/"
	    "a%20b%2Fc%3F/.x.y;matrix=R,100,G,2%200"
	    "?tags=t1&tags=t%262&csv=1,2.5,true&sp=a%20b&pipe=a%7Cb"
	    "&filter%5Bcolor%5D=red&filter%5Bsize%5D=3&k=v"
	    "&raw=a/b?c=d%23e&j=%7B%22a%22%3A%5B1%5D%7D");
	ck_assert_str_eq(header_of(&r, "X-Ids"), "1,2");
	ck_assert_str_eq(header_of(&r, "Cookie"), "session=s%3B1; prefs=a,b");
	ck_assert_str_eq(header_of(&r, "Content-Type"), "application/json");
	ck_assert_str_eq(r.body, "{\"name\":\"x\",\"n\":[1,null]}");
	ck_assert_uint_eq(r.bodylen, strlen(r.body));
	openapi_request_clear(&r);
	cJSON_Delete(args);
	openapi_spec_free(spec);
}
END_TEST

/* Arguments that cannot make a request: a reason, nothing sent. */
START_TEST(test_request_refused)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	const struct openapi_op	*op;
	struct openapi_request	 r;
	struct { const char *args, *want; } cases[] = {
		{ "{\"label\":[],\"matrix\":{},\"body\":{}}",
		  "missing required argument 'id'" },
		{ "{\"id\":\"1\",\"label\":[],\"matrix\":{}}",
		  "missing required argument 'body'" },
		{ "{\"id\":\"1\",\"label\":[],\"matrix\":{},\"body\":{},"
		  "\"nope\":1}", "unknown argument 'nope'" },
		{ "{\"id\":\"1\",\"label\":[],\"matrix\":{},\"body\":{},"
		  "\"X-Ids\":\"a\\r\\nEvil: 1\"}", "control character" },
		{ "[1]", "arguments must be an object" },
	};
	cJSON			*args;
	char			*cause;
	size_t			 i;

	spec = spec_ok(spec_req, &o);
	op = openapi_spec_find(spec, "put");
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cause = NULL;
		args = cJSON_Parse(cases[i].args);
		ck_assert_ptr_nonnull(args);
		ck_assert_int_eq(openapi_request_build(op, "http://h", args,
		    &r, &cause), -1);
		ck_assert_msg(cause != NULL && strstr(cause, cases[i].want) !=
		    NULL, "%s: cause %s", cases[i].args, cause);
		ck_assert_ptr_null(r.url);
		free(cause);
		cJSON_Delete(args);
	}
	openapi_spec_free(spec);
}
END_TEST

/* The other path styles and explode settings, one primitive each. */
START_TEST(test_request_styles)
{
	struct openapi_options	 o = options();
	struct openapi_spec	*spec;
	struct openapi_request	 r;
	cJSON			*args;
	char			*cause = NULL;

	spec = spec_ok("openapi: 3.0.0\ninfo: {}\npaths:\n"
	    "  /{a}/{b}/{c}/{d}/x y%2F:z:\n    get:\n      operationId: s\n"
	    "      parameters:\n"
	    "        - {name: a, in: path, required: true, style: matrix, "
	        "schema: {}}\n"
	    "        - {name: b, in: path, required: true, style: label, "
	        "schema: {}}\n"
	    "        - {name: c, in: path, required: true, style: matrix, "
	        "explode: true, schema: {}}\n"
	    "        - {name: d, in: path, required: true, schema: {}}\n"
	    "        - {name: e, in: query, explode: false, schema: {}}\n"
	    "      responses: {}\n", &o);
	args = cJSON_Parse("{\"a\":\"\",\"b\":7,\"c\":{\"x\":1,\"y\":2},"
	    "\"d\":{\"k\":\"v\"},\"e\":{\"R\":1,\"G\":2}}");
	ck_assert_int_eq(openapi_request_build(openapi_spec_find(spec, "s"),
	    "http://h:8080", args, &r, &cause), 0);
	ck_assert_str_eq(r.url,
	    "http://h:8080/;a/.7/;x=1;y=2/k,v/x%20y%2F:z?e=R,1,G,2");
	ck_assert_ptr_null(r.body);
	openapi_request_clear(&r);
	cJSON_Delete(args);
	openapi_spec_free(spec);
}
END_TEST

/* ---------------------------------------------------------------------
 * The conf block.
 */

START_TEST(test_conf_block)
{
	const struct conf_openapi	*oa;
	struct conf			*conf;
	char				 key[] =
	    "/tmp/mcpd-test-openapi.XXXXXX";
	char				*text;
	FILE				*f;
	int				 fd;

	fd = mkstemp(key);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fprintf(f, "s3cr3t value\nsecond line ignored\n");
	fclose(f);
	xasprintf(&text, "openapi pets {\n"
	    "    spec /etc/mcpd/pets.yaml\n"
	    "    base_url https://api.example.com/v2/\n"
	    "    prefix pets_\n"
	    "    operations allow get* \"POST:/pets\"\n"
	    "    operations deny deletePet\n"
	    "    operations allow listPets\n"
	    "    header X-Api-Key file:%s\n"
	    "    header X-Team \"a team\"\n"
	    "    timeout 10\n"
	    "    max_response 64k\n"
	    "    max_concurrency 4\n"
	    "    scope pets.read\n"
	    "    max_spec 1m\n"
	    "    max_operations 50\n"
	    "    max_schema_depth 8\n"
	    "}\n"
	    "openapi gh {\n"
	    "    spec https://example.com/api.json\n"
	    "}\n", key);
	conf = parse_ok(text);
	free(text);
	ck_assert_uint_eq(conf->nopenapis, 2);
	oa = conf_openapi_find(conf, "pets");
	ck_assert_int_eq(oa->line, 1);
	ck_assert_str_eq(oa->spec, "/etc/mcpd/pets.yaml");
	ck_assert_int_eq(oa->spec_url, 0);
	ck_assert_str_eq(oa->base_url, "https://api.example.com/v2/");
	ck_assert_str_eq(oa->prefix, "pets_");
	ck_assert_uint_eq(oa->nallow, 3);
	ck_assert_str_eq(oa->allow[1], "POST:/pets");
	ck_assert_str_eq(oa->allow[2], "listPets");
	ck_assert_ptr_null(oa->allow[3]);
	ck_assert_uint_eq(oa->ndeny, 1);
	ck_assert_uint_eq(oa->nheaders, 2);
	ck_assert_str_eq(oa->headers[0].name, "X-Api-Key");
	ck_assert_str_eq(oa->headers[0].value, "s3cr3t value");
	ck_assert_str_eq(oa->headers[0].file, key);
	ck_assert_str_eq(oa->headers[1].value, "a team");
	ck_assert_ptr_null(oa->headers[1].file);
	ck_assert_int_eq(oa->timeout, 10);
	ck_assert_int_eq(oa->max_response, 64 * 1024);
	ck_assert_int_eq(oa->max_concurrency, 4);
	ck_assert_str_eq(oa->scope, "pets.read");
	ck_assert_int_eq(oa->max_spec, 1024 * 1024);
	ck_assert_int_eq(oa->max_operations, 50);
	ck_assert_int_eq(oa->max_schema_depth, 8);

	/* Defaults. */
	oa = conf_openapi_find(conf, "gh");
	ck_assert_int_eq(oa->spec_url, 1);
	ck_assert_ptr_null(oa->base_url);
	ck_assert_str_eq(oa->prefix, "");
	ck_assert_uint_eq(oa->nallow + oa->ndeny + oa->nheaders, 0);
	ck_assert_int_eq(oa->timeout, 30);
	ck_assert_int_eq(oa->max_response, 4 * 1024 * 1024);
	ck_assert_int_eq(oa->max_concurrency, 64);
	ck_assert_ptr_null(oa->scope);
	ck_assert_int_eq(oa->max_spec, 8 * 1024 * 1024);
	ck_assert_int_eq(oa->max_operations, 1000);
	ck_assert_int_eq(oa->max_schema_depth, 32);
	conf_free(conf);
	unlink(key);
}
END_TEST

START_TEST(test_conf_errors)
{
	expect_error("openapi a {\n}\n",
	    "t.conf:1: openapi a: missing \"spec FILE|URL\"");
	expect_error("openapi a {\n spec x.yaml\n}\n",
	    "t.conf:2: spec: \"x.yaml\" is neither an absolute path nor an "
	    "http:// or https:// URL");
	expect_error("openapi a {\n spec /a\n}\nopenapi a {\n spec /b\n}\n",
	    "t.conf:4: duplicate openapi a (first declared on line 1)");
	expect_error("openapi a/b {\n spec /a\n}\n",
	    "t.conf:1: openapi: invalid name \"a/b\" (1 to 128 letters, "
	    "digits, \"_\", \"-\" or \".\")");
	expect_error_has("openapi a {\n spec /a\n base_url http://h/x?y\n}\n",
	    "t.conf:3: base_url: \"http://h/x?y\" has a query or a fragment");
	expect_error_has("openapi a {\n spec /a\n base_url ftp://h\n}\n",
	    "t.conf:3: base_url: ");
	expect_error("openapi a {\n spec /a\n operations maybe x\n}\n",
	    "t.conf:3: operations: expected \"operations allow|deny "
	    "PATTERN...\"");
	expect_error("openapi a {\n spec /a\n header Host x\n}\n",
	    "t.conf:3: header: Host is set by mcpd");
	expect_error("openapi a {\n spec /a\n header X-A 1\n header x-a 2\n}\n",
	    "t.conf:4: header: header x-a is given twice");
	expect_error("openapi a {\n spec /a\n header \"X A\" 1\n}\n",
	    "t.conf:3: header: invalid header name \"X A\"");
	expect_error_has("openapi a {\n spec /a\n"
	    " header X-A file:/nonexistent/k\n}\n",
	    "t.conf:3: header: \"/nonexistent/k\": No such file");
	expect_error("openapi a {\n spec /a\n header X-A file:rel\n}\n",
	    "t.conf:3: header: file:rel is not an absolute path");
	expect_error_has("openapi a {\n spec /a\n max_schema_depth 2\n}\n",
	    "t.conf:3: max_schema_depth: ");
	expect_error_has("openapi a {\n spec /a\n prefix \"a b\"\n}\n",
	    "t.conf:3: prefix: invalid prefix");
}
END_TEST

/* credentials { } as an HTTP upstream's, beside the header lines. */
START_TEST(test_conf_credentials)
{
	const struct conf_openapi	*oa;
	struct conf			*conf;
	char				 secret[] =
	    "/tmp/mcpd-test-openapi.XXXXXX";
	char				*text;
	FILE				*f;
	int				 fd;

	fd = mkstemp(secret);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fprintf(f, "client-secret\n");
	fclose(f);
	xasprintf(&text, "openapi pets {\n"
	    "    spec /etc/mcpd/pets.yaml\n"
	    "    header X-Team blue\n"
	    "    credentials {\n"
	    "        grant client_credentials\n"
	    "        token_endpoint https://as.example.com/token\n"
	    "        client_id mcpd\n"
	    "        client_secret_file %s\n"
	    "        header X-Tenant %s\n"
	    "    }\n"
	    "}\n"
	    "openapi plain {\n"
	    "    spec /etc/mcpd/pets.yaml\n"
	    "}\n", secret, secret);
	conf = parse_ok(text);
	free(text);
	oa = conf_openapi_find(conf, "pets");
	ck_assert_ptr_nonnull(oa->credentials);
	ck_assert_int_eq(oa->credentials->line, 4);
	ck_assert_int_eq(oa->credentials->grant,
	    CONF_GRANT_CLIENT_CREDENTIALS);
	ck_assert_str_eq(oa->credentials->client_secret, "client-secret");
	ck_assert_uint_eq(oa->credentials->nheaders, 1);
	ck_assert_str_eq(oa->credentials->headers[0].value, "client-secret");
	ck_assert_uint_eq(oa->nheaders, 1);
	ck_assert_ptr_null(conf_openapi_find(conf, "plain")->credentials);
	conf_free(conf);

	/* A token exchange needs the caller's token: an auth block. */
	xasprintf(&text, "openapi a {\n spec /a\n credentials {\n"
	    "  grant token_exchange\n  token_endpoint https://as/t\n"
	    "  client_id c\n  client_secret_file %s\n }\n}\n", secret);
	expect_error(text, "t.conf:3: openapi a: grant token_exchange needs "
	    "an auth block (the caller's token is what is exchanged)");
	free(text);
	/* One header from two places, or a static Authorization and a grant. */
	xasprintf(&text, "openapi a {\n spec /a\n header x-tenant 1\n"
	    " credentials {\n  header X-Tenant %s\n }\n}\n", secret);
	expect_error(text, "t.conf:4: openapi a: header X-Tenant is in a "
	    "header line and in credentials");
	free(text);
	xasprintf(&text, "openapi a {\n spec /a\n header Authorization x\n"
	    " credentials {\n  grant client_credentials\n"
	    "  token_endpoint https://as/t\n  client_id c\n"
	    "  client_secret_file %s\n }\n}\n", secret);
	expect_error(text, "t.conf:4: openapi a: a header Authorization line "
	    "and a credentials grant exclude each other");
	free(text);
	expect_error("openapi a {\n spec /a\n credentials {\n }\n}\n",
	    "t.conf:3: credentials: neither a header nor a grant");
	unlink(secret);
}
END_TEST

static Suite *
openapi_suite(void)
{
	Suite	*s = suite_create("openapi");
	TCase	*tc;

	tc = tcase_create("yaml");
	tcase_add_test(tc, test_yaml_core_schema);
	tcase_add_test(tc, test_yaml_aliases_and_merge);
	tcase_add_test(tc, test_yaml_refused);
	tcase_add_test(tc, test_yaml_alias_bomb);
	suite_add_tcase(s, tc);

	tc = tcase_create("spec");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_spec_30);
	tcase_add_test(tc, test_spec_31);
	tcase_add_test(tc, test_spec_names_and_filters);
	tcase_add_test(tc, test_spec_hostile);
	tcase_add_test(tc, test_spec_skips);
	suite_add_tcase(s, tc);

	tc = tcase_create("request");
	tcase_add_test(tc, test_request_build);
	tcase_add_test(tc, test_request_refused);
	tcase_add_test(tc, test_request_styles);
	suite_add_tcase(s, tc);

	tc = tcase_create("conf");
	tcase_add_test(tc, test_conf_block);
	tcase_add_test(tc, test_conf_errors);
	tcase_add_test(tc, test_conf_credentials);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(openapi_suite)
