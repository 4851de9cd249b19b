/*
 * An OpenAPI document read into operations, each one MCP tool.
 *
 * The document: JSON when its first character says so, else YAML; at
 * most max_spec bytes, UTF-8, OPENAPI_MAX_NODES values and
 * OPENAPI_MAX_NESTING levels; "openapi" 3.0.x or 3.1.x.
 *
 * Each operation of paths (its path item's parameters with its own, its
 * own winning) becomes a tool:
 *  - name: operationId, or method and path ("get_pets_petId"), made what
 *    tool names may be (letters, digits, "_", "-", "."; "_" for the rest),
 *    after the block's prefix, cut to OPENAPI_NAME_MAX; a name made twice
 *    gets _2, _3, ...;
 *  - title: the summary; description: the summary and the description;
 *    annotations from the method (readOnlyHint for GET, HEAD, OPTIONS;
 *    idempotentHint for those and PUT, DELETE; destructiveHint for
 *    DELETE; openWorldHint);
 *  - inputSchema: an object with a property per parameter (its name, or,
 *    when that is not a usable property name or another location has it,
 *    "query_NAME" and the like) and "body" for a JSON request body,
 *    required as the spec says, additionalProperties false;
 *  - outputSchema: when the operation declares exactly one 2xx response
 *    and it has a JSON schema; a schema that is not an object's is
 *    wrapped as {"result": ...}, as structuredContent must be an object.
 * Header parameters named Accept, Content-Type or Authorization are left
 * out (OpenAPI says they are ignored); a request body of another media
 * type than JSON is left out when it is optional, and makes the operation
 * skipped when it is required.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "openapi_int.h"
#include "utf8.h"
#include "xmalloc.h"

/* The methods OpenAPI names, and what mcpd sends. */
static const struct {
	const char	*key;
	const char	*method;
} spec_methods[] = {
	{ "get", "GET" },
	{ "put", "PUT" },
	{ "post", "POST" },
	{ "delete", "DELETE" },
	{ "options", "OPTIONS" },
	{ "head", "HEAD" },
	{ "patch", "PATCH" },
	{ "trace", "TRACE" },
};

#define SPEC_NITEMS(a)		(sizeof (a) / sizeof (a)[0])
#define SPEC_ARG_MAX		64	/* a property name as is */

/* An operation on its way to a tool. */
struct spec_op {
	const cJSON		*doc;
	int			 v31;
	const struct openapi_options *opts;
	size_t			*total;
	const char		*method;
	int			 unsent;	/* a method mcpd never sends */
	const char		*path;
	const cJSON		*item;		/* the path item */
	const cJSON		*node;		/* the operation */
	struct openapi_op	*op;
	int			 fail;		/* enum openapi_fail */
	char			*why;
};

static void
spec_fail(struct spec_op *so, int fail, char *why)
{
	if (so->fail != OPENAPI_OK) {
		free(why);
		return;
	}
	so->fail = fail;
	so->why = why;
}

static const char *
spec_string(const cJSON *node, const char *key)
{
	return (cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(node,
	    key)));
}

/*
 * s with its control characters made "?": what a document says goes into
 * log lines (and mcpd -t's), one line each, never a forged one.
 */
static char *
spec_clean(char *s)
{
	char	*p;

	for (p = s; *p != '\0'; p++) {
		if ((u_char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return (s);
}

static int
spec_has_control(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((u_char)*s < 0x20 || *s == 0x7f)
			return (1);
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * The document.
 */

/*
 * The values a JSON text holds, at most: one per comma, colon and
 * bracket outside strings, plus one. What it costs to parse is known
 * before it is parsed.
 */
static size_t
spec_json_values(const char *buf, size_t len)
{
	size_t	i, n = 1;
	int	in_string = 0;

	for (i = 0; i < len; i++) {
		if (in_string) {
			if (buf[i] == '\\')
				i++;
			else if (buf[i] == '"')
				in_string = 0;
			continue;
		}
		switch (buf[i]) {
		case '"':
			in_string = 1;
			break;
		case ',':
		case ':':
		case '[':
		case '{':
			n++;
			break;
		}
	}
	return (n);
}

static int
spec_depth(const cJSON *node, int depth)
{
	const cJSON	*c;

	if (depth > OPENAPI_MAX_NESTING)
		return (-1);
	for (c = node->child; c != NULL; c = c->next) {
		if (spec_depth(c, depth + 1) != 0)
			return (-1);
	}
	return (0);
}

cJSON *
openapi_spec_doc(const char *buf, size_t len, size_t max, char **cause)
{
	cJSON		*doc;
	const char	*end, *p;
	size_t		 i, n;

	if (len > max) {
		xasprintf(cause, "%zu bytes, more than max_spec (%zu)", len,
		    max);
		return (NULL);
	}
	for (i = 0; i < len; i += n) {
		if ((n = utf8_sequence(buf + i, len - i, UTF8_NO_NUL)) == 0) {
			xasprintf(cause, "not UTF-8 text (byte %zu)", i);
			return (NULL);
		}
	}
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	for (p = buf; p < buf + len && isspace((u_char)*p); p++)
		;
	if (p == buf + len) {
		*cause = xstrdup("an empty document");
		return (NULL);
	}
	if (*p != '{' && *p != '[')
		doc = openapi_yaml_parse(buf, len, cause);
	else {
		if (spec_json_values(buf, len) > OPENAPI_MAX_NODES) {
			xasprintf(cause, "JSON: more than %d values",
			    OPENAPI_MAX_NODES);
			return (NULL);
		}
		doc = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
		if (doc == NULL) {
			end = cJSON_GetErrorPtr();
			xasprintf(cause, "JSON: not valid at byte %zu",
			    end != NULL && end >= buf && end <= buf + len ?
			    (size_t)(end - buf) : 0);
			return (NULL);
		}
		for (; end < buf + len && isspace((u_char)*end); end++)
			;
		if (end != buf + len) {
			cJSON_Delete(doc);
			xasprintf(cause, "JSON: text after the document (byte "
			    "%zu)", (size_t)(end - buf));
			return (NULL);
		}
	}
	if (doc != NULL && spec_depth(doc, 0) != 0) {
		cJSON_Delete(doc);
		xasprintf(cause, "nested deeper than %d", OPENAPI_MAX_NESTING);
		return (NULL);
	}
	return (doc);
}

/* ---------------------------------------------------------------------
 * Names.
 */

/* s as a tool name would have it: unusable characters "_", no runs. */
static char *
spec_name_clean(const char *s)
{
	char	*out = xmalloc(strlen(s) + 1), *o = out;

	for (; *s != '\0'; s++) {
		if (isalnum((u_char)*s) || *s == '-' || *s == '.')
			*o++ = *s;
		else if (o > out && o[-1] != '_')
			*o++ = '_';
	}
	while (o > out && o[-1] == '_')
		o--;
	*o = '\0';
	if (*out == '\0') {
		free(out);
		out = xstrdup("operation");
	}
	return (out);
}

/* The name before the prefix: operationId, or method and path. */
static char *
spec_op_name(const char *key, const char *path, const char *id)
{
	char	*raw, *name;

	if (id != NULL && *id != '\0')
		return (spec_name_clean(id));
	xasprintf(&raw, "%s_%s", key, path);
	name = spec_name_clean(raw);
	free(raw);
	return (name);
}

static int
spec_matches(char *const *pats, size_t n, const char *name, const char *id,
    const char *mp)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (fnmatch(pats[i], name, 0) == 0 ||
		    (id != NULL && fnmatch(pats[i], id, 0) == 0) ||
		    fnmatch(pats[i], mp, 0) == 0)
			return (1);
	}
	return (0);
}

/* Whether the block's operations lines serve this operation. */
static int
spec_allowed(const struct openapi_options *opts, const char *name,
    const char *id, const char *method, const char *path)
{
	char	*mp;
	int	 ok;

	xasprintf(&mp, "%s:%s", method, path);
	ok = (opts->nallow == 0 || spec_matches(opts->allow, opts->nallow,
	    name, id, mp)) && !spec_matches(opts->deny, opts->ndeny, name, id,
	    mp);
	free(mp);
	return (ok);
}

/* ---------------------------------------------------------------------
 * Parameters.
 */

static const struct {
	const char	*name;
	int		 style;
	int		 where;		/* bit per enum openapi_in */
} spec_styles[] = {
	{ "simple", OPENAPI_STYLE_SIMPLE,
	  1 << OPENAPI_IN_PATH | 1 << OPENAPI_IN_HEADER },
	{ "label", OPENAPI_STYLE_LABEL, 1 << OPENAPI_IN_PATH },
	{ "matrix", OPENAPI_STYLE_MATRIX, 1 << OPENAPI_IN_PATH },
	{ "form", OPENAPI_STYLE_FORM,
	  1 << OPENAPI_IN_QUERY | 1 << OPENAPI_IN_COOKIE },
	{ "spaceDelimited", OPENAPI_STYLE_SPACE, 1 << OPENAPI_IN_QUERY },
	{ "pipeDelimited", OPENAPI_STYLE_PIPE, 1 << OPENAPI_IN_QUERY },
	{ "deepObject", OPENAPI_STYLE_DEEP, 1 << OPENAPI_IN_QUERY },
};

static const char *const spec_ins[] = { "path", "query", "header", "cookie" };

/* A JSON media type: application/json, or +json, with parameters. */
static int
spec_json_type(const char *type)
{
	size_t	len = strcspn(type, "; \t");

	if (len == 16 && strncasecmp(type, "application/json", 16) == 0)
		return (1);
	return (len > 5 && strncasecmp(type + len - 5, "+json", 5) == 0);
}

/* A media type map's JSON entry: application/json first, else +json. */
static const cJSON *
spec_json_content(const cJSON *content, const char **type)
{
	const cJSON	*c;

	cJSON_ArrayForEach(c, content) {
		if (strncasecmp(c->string, "application/json", 16) == 0 &&
		    spec_json_type(c->string)) {
			*type = c->string;
			return (c);
		}
	}
	cJSON_ArrayForEach(c, content) {
		if (spec_json_type(c->string)) {
			*type = c->string;
			return (c);
		}
	}
	return (NULL);
}

/* Resolved, or NULL with so->fail set. */
static const cJSON *
spec_resolve(struct spec_op *so, const cJSON *node, const char *what)
{
	const cJSON	*out;
	char		*why = NULL, *text;
	int		 fail;

	out = openapi_schema_resolve(so->doc, so->v31, node, &fail, &why);
	if (out != NULL)
		return (out);
	xasprintf(&text, "%s: %s", what, why);
	free(why);
	spec_fail(so, fail, text);
	return (NULL);
}

/* The schema of a parameter, a body or a response, built; NULL: failed. */
static cJSON *
spec_schema(struct spec_op *so, struct openapi_build *b, const cJSON *schema,
    const char *what)
{
	cJSON	*out;
	char	*text;

	if (schema == NULL)
		return (cJSON_CreateObject());
	if ((out = openapi_schema_build(b, schema)) != NULL)
		return (out);
	xasprintf(&text, "%s: %s", what, b->why);
	spec_fail(so, b->fail, text);
	return (NULL);
}

static int
spec_arg_ok(const char *s)
{
	size_t	len = strlen(s);

	return (len > 0 && len <= SPEC_ARG_MAX &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.-") == len);
}

static int
spec_arg_taken(const struct openapi_op *op, const char *arg)
{
	size_t	i;

	if (strcmp(arg, OPENAPI_BODY_ARG) == 0)
		return (1);
	for (i = 0; i < op->nparams; i++) {
		if (strcmp(op->params[i].arg, arg) == 0)
			return (1);
	}
	return (0);
}

/*
 * The property a parameter is in inputSchema: its name when usable and
 * free, else its location and its name cleaned ("query_id"), else that
 * with _2, _3, ...
 */
static char *
spec_arg(const struct openapi_op *op, const char *name, int in)
{
	char	*clean, *arg, *base;
	size_t	 n = 1;

	if (spec_arg_ok(name) && !spec_arg_taken(op, name))
		return (xstrdup(name));
	clean = spec_name_clean(name);
	xasprintf(&base, "%s_%.*s", spec_ins[in], SPEC_ARG_MAX - 12, clean);
	free(clean);
	arg = xstrdup(base);
	while (spec_arg_taken(op, arg)) {
		free(arg);
		xasprintf(&arg, "%s_%zu", base, ++n);
	}
	free(base);
	return (arg);
}

/* The parameters that apply: the operation's, then its path item's. */
static size_t
spec_param_nodes(struct spec_op *so, const cJSON **out, size_t max)
{
	const cJSON	*lists[2], *p, *r;
	const char	*name, *in;
	size_t		 n = 0, i, j;

	lists[0] = cJSON_GetObjectItemCaseSensitive(so->node, "parameters");
	lists[1] = cJSON_GetObjectItemCaseSensitive(so->item, "parameters");
	for (i = 0; i < 2; i++) {
		if (!cJSON_IsArray(lists[i]))
			continue;
		cJSON_ArrayForEach(p, lists[i]) {
			if ((r = spec_resolve(so, p, "a parameter")) == NULL)
				return (0);
			name = spec_string(r, "name");
			in = spec_string(r, "in");
			if (name == NULL || in == NULL) {
				spec_fail(so, OPENAPI_SKIP, xstrdup("a "
				    "parameter without name or in"));
				return (0);
			}
			for (j = 0; j < n; j++) {
				if (strcmp(spec_string(out[j], "name"),
				    name) == 0 && strcmp(spec_string(out[j],
				    "in"), in) == 0)
					break;
			}
			if (j < n)
				continue;	/* the operation's wins */
			if (n == max) {
				spec_fail(so, OPENAPI_SKIP, xstrdup("too many "
				    "parameters"));
				return (0);
			}
			out[n++] = r;
		}
	}
	return (n);
}

/* One parameter into op and the properties; -1 when so failed. */
static int
spec_param(struct spec_op *so, struct openapi_build *b, const cJSON *p,
    cJSON *props, cJSON *required)
{
	struct openapi_op	*op = so->op;
	struct openapi_param	 param;
	const cJSON		*schema, *content, *mt, *v;
	const char		*name = spec_string(p, "name");
	const char		*in = spec_string(p, "in"), *style, *type;
	cJSON			*prop;
	char			*what;
	size_t			 i;
	int			 where;

	memset(&param, 0, sizeof param);
	for (i = 0; i < SPEC_NITEMS(spec_ins); i++) {
		if (strcmp(in, spec_ins[i]) == 0)
			break;
	}
	if (i == SPEC_NITEMS(spec_ins)) {
		xasprintf(&what, "parameter %s: unknown location \"%s\"", name,
		    in);
		spec_fail(so, OPENAPI_SKIP, what);
		return (-1);
	}
	param.in = (int)i;
	if (param.in == OPENAPI_IN_HEADER && (strcasecmp(name, "Accept") == 0 ||
	    strcasecmp(name, "Content-Type") == 0 ||
	    strcasecmp(name, "Authorization") == 0))
		return (0);
	style = spec_string(p, "style");
	param.style = param.in == OPENAPI_IN_QUERY || param.in ==
	    OPENAPI_IN_COOKIE ? OPENAPI_STYLE_FORM : OPENAPI_STYLE_SIMPLE;
	if (style != NULL) {
		for (i = 0; i < SPEC_NITEMS(spec_styles); i++) {
			if (strcmp(style, spec_styles[i].name) == 0)
				break;
		}
		where = i < SPEC_NITEMS(spec_styles) ? spec_styles[i].where : 0;
		if (!(where & 1 << param.in)) {
			xasprintf(&what, "parameter %s: style \"%s\" in %s is "
			    "not supported", name, style, in);
			spec_fail(so, OPENAPI_SKIP, what);
			return (-1);
		}
		param.style = spec_styles[i].style;
	}
	v = cJSON_GetObjectItemCaseSensitive(p, "explode");
	param.explode = cJSON_IsBool(v) ? cJSON_IsTrue(v) :
	    param.style == OPENAPI_STYLE_FORM;
	param.reserved = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p,
	    "allowReserved"));
	param.required = param.in == OPENAPI_IN_PATH ||
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "required"));

	schema = cJSON_GetObjectItemCaseSensitive(p, "schema");
	content = cJSON_GetObjectItemCaseSensitive(p, "content");
	if (schema == NULL && cJSON_IsObject(content)) {
		if ((mt = spec_json_content(content, &type)) == NULL) {
			xasprintf(&what, "parameter %s: content %s is not "
			    "supported (JSON is)", name, content->child !=
			    NULL ? content->child->string : "(none)");
			spec_fail(so, OPENAPI_SKIP, what);
			return (-1);
		}
		param.json = 1;
		schema = cJSON_GetObjectItemCaseSensitive(mt, "schema");
	}
	xasprintf(&what, "parameter %s", name);
	prop = spec_schema(so, b, schema, what);
	free(what);
	if (prop == NULL)
		return (-1);
	if (!cJSON_IsObject(prop)) {
		cJSON_Delete(prop);
		prop = cJSON_CreateObject();
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(p, "description")) != NULL &&
	    cJSON_IsString(v)) {
		cJSON_DeleteItemFromObjectCaseSensitive(prop, "description");
		cJSON_AddStringToObject(prop, "description", v->valuestring);
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "deprecated")) &&
	    cJSON_GetObjectItemCaseSensitive(prop, "deprecated") == NULL)
		cJSON_AddBoolToObject(prop, "deprecated", 1);

	param.name = xstrdup(name);
	param.arg = spec_arg(op, name, param.in);
	cJSON_AddItemToObject(props, param.arg, prop);
	if (param.required)
		cJSON_AddItemToArray(required, cJSON_CreateString(param.arg));
	op->params = xreallocarray(op->params, op->nparams + 1,
	    sizeof *op->params);
	op->params[op->nparams++] = param;
	return (0);
}

/* Every {name} of the path must be a path parameter. */
static int
spec_path_check(struct spec_op *so)
{
	const char	*p = so->path, *end;
	char		*name, *what;
	size_t		 i;

	while ((p = strchr(p, '{')) != NULL) {
		if ((end = strchr(p, '}')) == NULL) {
			spec_fail(so, OPENAPI_SKIP, xstrdup("an unclosed { in "
			    "the path"));
			return (-1);
		}
		name = xstrndup(p + 1, (size_t)(end - p - 1));
		for (i = 0; i < so->op->nparams; i++) {
			if (so->op->params[i].in == OPENAPI_IN_PATH &&
			    strcmp(so->op->params[i].name, name) == 0)
				break;
		}
		if (i == so->op->nparams) {
			xasprintf(&what, "path parameter {%s} is not declared",
			    name);
			free(name);
			spec_fail(so, OPENAPI_SKIP, what);
			return (-1);
		}
		free(name);
		p = end + 1;
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * Request body and response.
 */

static int
spec_body(struct spec_op *so, struct openapi_build *b, cJSON *props,
    cJSON *required)
{
	const cJSON	*body, *content, *mt, *desc;
	const char	*type = NULL;
	cJSON		*schema;
	char		*what;
	int		 req;

	if ((body = cJSON_GetObjectItemCaseSensitive(so->node,
	    "requestBody")) == NULL)
		return (0);
	if ((body = spec_resolve(so, body, "the request body")) == NULL)
		return (-1);
	req = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "required"));
	content = cJSON_GetObjectItemCaseSensitive(body, "content");
	if ((mt = spec_json_content(content, &type)) == NULL &&
	    (mt = cJSON_GetObjectItemCaseSensitive(content, "*/*")) != NULL)
		type = "application/json";
	if (mt == NULL) {
		if (!req)
			return (0);
		xasprintf(&what, "its request body is %s, not JSON",
		    cJSON_IsObject(content) && content->child != NULL ?
		    content->child->string : "of no media type");
		spec_fail(so, OPENAPI_SKIP, what);
		return (-1);
	}
	if ((schema = spec_schema(so, b, cJSON_GetObjectItemCaseSensitive(mt,
	    "schema"), "the request body")) == NULL)
		return (-1);
	desc = cJSON_GetObjectItemCaseSensitive(body, "description");
	if (cJSON_IsObject(schema) && cJSON_IsString(desc) &&
	    cJSON_GetObjectItemCaseSensitive(schema, "description") == NULL)
		cJSON_AddStringToObject(schema, "description",
		    desc->valuestring);
	cJSON_AddItemToObject(props, OPENAPI_BODY_ARG, schema);
	if (req)
		cJSON_AddItemToArray(required, cJSON_CreateString(
		    OPENAPI_BODY_ARG));
	so->op->body = req ? 2 : 1;
	so->op->body_type = xstrdup(type);
	return (0);
}

static int
spec_is_2xx(const char *code)
{
	return (strlen(code) == 3 && code[0] == '2' &&
	    ((isdigit((u_char)code[1]) && isdigit((u_char)code[2])) ||
	    strcasecmp(code + 1, "XX") == 0));
}

/*
 * outputSchema, when exactly one 2xx response is declared and its JSON
 * schema is known (else a call's answer cannot be promised to fit one).
 */
static int
spec_output(struct spec_op *so, cJSON *tool)
{
	const cJSON		*responses, *r, *found = NULL, *mt, *schema;
	const char		*type;
	struct openapi_build	 b;
	cJSON			*out, *wrap, *props;
	int			 n = 0;

	responses = cJSON_GetObjectItemCaseSensitive(so->node, "responses");
	if (!cJSON_IsObject(responses))
		return (0);
	cJSON_ArrayForEach(r, responses) {
		if (spec_is_2xx(r->string)) {
			found = r;
			n++;
		}
	}
	if (n != 1)
		return (0);
	if ((r = spec_resolve(so, found, "its 2xx response")) == NULL)
		return (-1);
	mt = spec_json_content(cJSON_GetObjectItemCaseSensitive(r, "content"),
	    &type);
	if (mt == NULL || (schema = cJSON_GetObjectItemCaseSensitive(mt,
	    "schema")) == NULL)
		return (0);
	openapi_schema_init(&b, so->doc, so->v31, OPENAPI_OUTPUT,
	    so->opts->max_depth, so->total);
	out = spec_schema(so, &b, schema, "its response");
	if (out == NULL) {
		openapi_schema_clear(&b);
		return (-1);
	}
	if (!cJSON_IsObject(out) || !cJSON_IsString(
	    cJSON_GetObjectItemCaseSensitive(out, "type")) || strcmp(
	    cJSON_GetObjectItemCaseSensitive(out, "type")->valuestring,
	    "object") != 0) {
		wrap = cJSON_CreateObject();
		cJSON_AddStringToObject(wrap, "type", "object");
		props = cJSON_AddObjectToObject(wrap, "properties");
		cJSON_AddItemToObject(props, "result", out);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(wrap, "required"),
		    cJSON_CreateString("result"));
		out = wrap;
		so->op->wraps = 1;
	}
	if (openapi_schema_defs(&b, out) != 0) {
		spec_fail(so, b.fail, xstrdup(b.why));
		cJSON_Delete(out);
		openapi_schema_clear(&b);
		return (-1);
	}
	openapi_schema_clear(&b);
	cJSON_AddItemToObject(tool, "outputSchema", out);
	so->op->output = 1;
	return (0);
}

/* ---------------------------------------------------------------------
 * The tool.
 */

static void
spec_describe(struct spec_op *so, cJSON *tool)
{
	const char	*summary = spec_string(so->node, "summary");
	const char	*desc = spec_string(so->node, "description");
	char		*text;
	int		 dep;

	dep = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so->node,
	    "deprecated"));
	if (summary != NULL && *summary != '\0')
		cJSON_AddStringToObject(tool, "title", summary);
	if (summary != NULL && *summary != '\0' && desc != NULL &&
	    *desc != '\0' && strncmp(desc, summary, strlen(summary)) != 0)
		xasprintf(&text, "%s%s\n\n%s", dep ? "Deprecated. " : "",
		    summary, desc);
	else if (desc != NULL && *desc != '\0')
		xasprintf(&text, "%s%s", dep ? "Deprecated. " : "", desc);
	else if (summary != NULL && *summary != '\0')
		xasprintf(&text, "%s%s", dep ? "Deprecated. " : "", summary);
	else
		xasprintf(&text, "%s%s %s", dep ? "Deprecated. " : "",
		    so->method, so->path);
	cJSON_AddStringToObject(tool, "description", text);
	free(text);
}

static void
spec_annotate(struct spec_op *so, cJSON *tool)
{
	const char	*m = so->method;
	cJSON		*a = cJSON_AddObjectToObject(tool, "annotations");
	int		 safe, idem;

	safe = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ||
	    strcmp(m, "OPTIONS") == 0;
	idem = safe || strcmp(m, "PUT") == 0 || strcmp(m, "DELETE") == 0;
	cJSON_AddBoolToObject(a, "readOnlyHint", safe);
	if (!safe)
		cJSON_AddBoolToObject(a, "destructiveHint",
		    strcmp(m, "DELETE") == 0);
	cJSON_AddBoolToObject(a, "idempotentHint", idem);
	cJSON_AddBoolToObject(a, "openWorldHint", 1);
}

/* so->op made whole, or so->fail set. */
static void
spec_op_build(struct spec_op *so)
{
	const cJSON		*params[256];
	struct openapi_build	 b;
	cJSON			*tool, *input, *props, *required;
	size_t			 n, i;

	tool = cJSON_CreateObject();
	cJSON_AddStringToObject(tool, "name", so->op->name);
	spec_describe(so, tool);
	input = cJSON_CreateObject();
	cJSON_AddStringToObject(input, "type", "object");
	props = cJSON_AddObjectToObject(input, "properties");
	required = cJSON_CreateArray();
	openapi_schema_init(&b, so->doc, so->v31, OPENAPI_INPUT,
	    so->opts->max_depth, so->total);

	n = spec_param_nodes(so, params, SPEC_NITEMS(params));
	for (i = 0; i < n && so->fail == OPENAPI_OK; i++)
		spec_param(so, &b, params[i], props, required);
	if (so->fail == OPENAPI_OK)
		spec_path_check(so);
	if (so->fail == OPENAPI_OK)
		spec_body(so, &b, props, required);
	if (so->fail == OPENAPI_OK && openapi_schema_defs(&b, input) != 0)
		spec_fail(so, b.fail, xstrdup(b.why));
	openapi_schema_clear(&b);
	if (cJSON_GetArraySize(required) > 0)
		cJSON_AddItemToObject(input, "required", required);
	else
		cJSON_Delete(required);
	cJSON_AddBoolToObject(input, "additionalProperties", 0);
	cJSON_AddItemToObject(tool, "inputSchema", input);
	if (so->fail == OPENAPI_OK)
		spec_output(so, tool);
	spec_annotate(so, tool);
	if (so->fail != OPENAPI_OK) {
		cJSON_Delete(tool);
		return;
	}
	so->op->tool = tool;
}

static void
spec_op_clear(struct openapi_op *op)
{
	size_t	i;

	for (i = 0; i < op->nparams; i++) {
		free(op->params[i].arg);
		free(op->params[i].name);
	}
	free(op->params);
	free(op->name);
	free(op->path);
	free(op->body_type);
	cJSON_Delete(op->tool);
	memset(op, 0, sizeof *op);
}

void
openapi_spec_free(struct openapi_spec *spec)
{
	size_t	i;

	if (spec == NULL)
		return;
	for (i = 0; i < spec->nops; i++)
		spec_op_clear(&spec->ops[i]);
	free(spec->ops);
	free(spec->version);
	free(spec->title);
	free(spec->server);
	free(spec);
}

/* ---------------------------------------------------------------------
 * The document's operations.
 */

/* The first server's URL, its variables given their defaults. */
static char *
spec_server(const cJSON *doc)
{
	const cJSON	*server, *vars, *v;
	const char	*url, *p, *end;
	char		*out, *name, *next;

	server = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc,
	    "servers"), 0);
	if ((url = spec_string(server, "url")) == NULL)
		return (NULL);
	vars = cJSON_GetObjectItemCaseSensitive(server, "variables");
	out = xstrdup("");
	for (p = url; *p != '\0'; p = end + 1) {
		if (*p != '{' || (end = strchr(p, '}')) == NULL) {
			end = p + strcspn(p + 1, "{");
			xasprintf(&next, "%s%.*s", out, (int)(end - p + 1), p);
			free(out);
			out = next;
			continue;
		}
		name = xstrndup(p + 1, (size_t)(end - p - 1));
		v = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(vars, name), "default");
		xasprintf(&next, "%s%s", out, cJSON_IsString(v) ?
		    v->valuestring : "");
		free(name);
		free(out);
		out = next;
	}
	return (out);
}

/* Makes names unique: a later one gets _2, _3, ... (cut to fit). */
static void
spec_unique(struct openapi_spec *spec, struct openapi_op *op)
{
	char	*base = op->name, *name = NULL;
	size_t	 i, n = 1, len;
	int	 taken = 1;

	while (taken) {
		taken = 0;
		for (i = 0; i < spec->nops; i++) {
			if (&spec->ops[i] != op && strcmp(spec->ops[i].name,
			    name != NULL ? name : base) == 0) {
				taken = 1;
				break;
			}
		}
		if (!taken)
			break;
		free(name);
		len = strlen(base);
		if (len > OPENAPI_NAME_MAX - 8)
			len = OPENAPI_NAME_MAX - 8;
		xasprintf(&name, "%.*s_%zu", (int)len, base, ++n);
	}
	if (name != NULL) {
		free(base);
		op->name = name;
	}
}

static void
spec_skip(const struct openapi_options *opts, struct spec_op *so,
    const char *id)
{
	char	*what, *why;

	if (opts->skipped == NULL)
		return;
	xasprintf(&what, "%s %s%s%s%s", so->method, so->path,
	    id != NULL ? " (" : "", id != NULL ? id : "", id != NULL ? ")" :
	    "");
	why = xstrdup(so->why);
	opts->skipped(spec_clean(what), spec_clean(why), opts->arg);
	free(what);
	free(why);
}

/* One operation: 0 (made or skipped), -1 with *cause (refused). */
static int
spec_operation(struct openapi_spec *spec, struct spec_op *so,
    const char *key, char **cause)
{
	const char	*id = spec_string(so->node, "operationId");
	char		*base;
	size_t		 len;

	base = spec_op_name(key, so->path, id);
	if (!spec_allowed(so->opts, base, id, so->method, so->path)) {
		free(base);
		return (0);
	}
	len = strlen(so->opts->prefix) + strlen(base);
	so->op = &spec->ops[spec->nops];
	memset(so->op, 0, sizeof *so->op);
	xasprintf(&so->op->name, "%s%.*s", so->opts->prefix,
	    (int)(len > OPENAPI_NAME_MAX ? OPENAPI_NAME_MAX -
	    strlen(so->opts->prefix) : strlen(base)), base);
	free(base);
	so->op->method = so->method;
	so->op->path = xstrdup(so->path);
	if (!cJSON_IsObject(so->node))
		spec_fail(so, OPENAPI_SKIP, xstrdup("not an object"));
	else if (so->unsent)
		spec_fail(so, OPENAPI_SKIP, xstrdup("mcpd does not send this "
		    "method"));
	else
		spec_op_build(so);
	if (so->fail == OPENAPI_OK) {
		spec->nops++;
		spec_unique(spec, so->op);
		cJSON_ReplaceItemInObjectCaseSensitive(so->op->tool, "name",
		    cJSON_CreateString(so->op->name));
		return (0);
	}
	spec_op_clear(so->op);
	if (so->fail == OPENAPI_REFUSE) {
		xasprintf(cause, "operation %s %s%s%s%s: %s", so->method,
		    so->path, id != NULL ? " (" : "", id != NULL ? id : "",
		    id != NULL ? ")" : "", so->why);
		return (-1);
	}
	spec->skipped++;
	spec_skip(so->opts, so, id);
	return (0);
}

/* The operations in paths: their count, or -1 with *cause. */
static long
spec_count(const cJSON *doc, int v31, const cJSON *paths, char **cause)
{
	const cJSON	*p, *item;
	char		*why = NULL;
	size_t		 i;
	long		 n = 0;
	int		 fail;

	cJSON_ArrayForEach(p, paths) {
		if ((item = openapi_schema_resolve(doc, v31, p, &fail, &why)) ==
		    NULL) {
			if (fail == OPENAPI_REFUSE) {
				xasprintf(cause, "path %s: %s", p->string, why);
				free(why);
				return (-1);
			}
			free(why);
			why = NULL;
			continue;
		}
		for (i = 0; i < SPEC_NITEMS(spec_methods); i++) {
			if (cJSON_GetObjectItemCaseSensitive(item,
			    spec_methods[i].key) != NULL)
				n++;
		}
	}
	return (n);
}

struct openapi_spec *
openapi_spec_parse(const char *buf, size_t len,
    const struct openapi_options *opts, char **cause)
{
	struct openapi_spec	*spec;
	struct spec_op		 so;
	cJSON			*doc;
	const cJSON		*paths, *p, *item, *info;
	const char		*version;
	char			*why = NULL, *what;
	size_t			 total = 0, i;
	long			 n;
	int			 v31, fail;

	if ((doc = openapi_spec_doc(buf, len, opts->max_spec, cause)) == NULL)
		return (NULL);
	if (!cJSON_IsObject(doc)) {
		*cause = xstrdup("not an OpenAPI document (not an object)");
		goto fail;
	}
	version = spec_string(doc, "openapi");
	if (version == NULL) {
		*cause = xstrdup(cJSON_GetObjectItemCaseSensitive(doc,
		    "swagger") != NULL ? "Swagger 2.0 is not supported: "
		    "convert it to OpenAPI 3" : "not an OpenAPI document (no "
		    "\"openapi\" version)");
		goto fail;
	}
	if (strncmp(version, "3.0.", 4) == 0 || strcmp(version, "3.0") == 0)
		v31 = 0;
	else if (strncmp(version, "3.1.", 4) == 0 ||
	    strcmp(version, "3.1") == 0)
		v31 = 1;
	else {
		xasprintf(cause, "OpenAPI %s is not supported (3.0 and 3.1 "
		    "are)", version);
		goto fail;
	}
	paths = cJSON_GetObjectItemCaseSensitive(doc, "paths");
	if (paths != NULL && !cJSON_IsObject(paths)) {
		*cause = xstrdup("paths is not an object");
		goto fail;
	}
	if ((n = spec_count(doc, v31, paths, cause)) < 0)
		goto fail;
	if ((size_t)n > opts->max_operations) {
		xasprintf(cause, "%ld operations, more than max_operations "
		    "(%zu)", n, opts->max_operations);
		goto fail;
	}

	spec = xcalloc(1, sizeof *spec);
	spec->version = xstrdup(version);
	info = cJSON_GetObjectItemCaseSensitive(doc, "info");
	spec->title = spec_clean(xstrdup(spec_string(info, "title") !=
	    NULL ? spec_string(info, "title") : ""));
	spec->server = spec_server(doc);
	spec->ops = xcalloc((size_t)n + 1, sizeof *spec->ops);
	cJSON_ArrayForEach(p, paths) {
		item = openapi_schema_resolve(doc, v31, p, &fail, &why);
		if (item == NULL && opts->skipped != NULL) {
			what = spec_clean(xstrdup(p->string));
			opts->skipped(what, spec_clean(why), opts->arg);
			free(what);
		}
		spec->skipped += item == NULL;
		free(why);
		why = NULL;
		for (i = 0; item != NULL && i < SPEC_NITEMS(spec_methods);
		    i++) {
			memset(&so, 0, sizeof so);
			so.doc = doc;
			so.v31 = v31;
			so.opts = opts;
			so.total = &total;
			so.method = spec_methods[i].method;
			so.unsent = strcmp(so.method, "TRACE") == 0;
			so.path = p->string;
			so.item = item;
			if ((so.node = cJSON_GetObjectItemCaseSensitive(item,
			    spec_methods[i].key)) == NULL)
				continue;
			if (*so.path != '/' || spec_has_control(so.path)) {
				xasprintf(&so.why, "a path that does not start "
				    "with / or has a control character");
				so.fail = OPENAPI_SKIP;
				spec->skipped++;
				spec_skip(opts, &so, spec_string(so.node,
				    "operationId"));
				free(so.why);
				continue;
			}
			if (spec_operation(spec, &so, spec_methods[i].key,
			    cause) != 0) {
				free(so.why);
				openapi_spec_free(spec);
				goto fail;
			}
			free(so.why);
		}
	}
	cJSON_Delete(doc);
	return (spec);

fail:
	cJSON_Delete(doc);
	spec_clean(*cause);
	return (NULL);
}

/* ---------------------------------------------------------------------
 * Accessors.
 */

const char *
openapi_spec_version(const struct openapi_spec *spec)
{
	return (spec->version);
}

const char *
openapi_spec_title(const struct openapi_spec *spec)
{
	return (spec->title);
}

const char *
openapi_spec_server(const struct openapi_spec *spec)
{
	return (spec->server);
}

size_t
openapi_spec_count(const struct openapi_spec *spec)
{
	return (spec->nops);
}

size_t
openapi_spec_skipped(const struct openapi_spec *spec)
{
	return (spec->skipped);
}

const struct openapi_op *
openapi_spec_op(const struct openapi_spec *spec, size_t i)
{
	return (i < spec->nops ? &spec->ops[i] : NULL);
}

const struct openapi_op *
openapi_spec_find(const struct openapi_spec *spec, const char *name)
{
	size_t	i;

	for (i = 0; i < spec->nops; i++) {
		if (strcmp(spec->ops[i].name, name) == 0)
			return (&spec->ops[i]);
	}
	return (NULL);
}

const char *
openapi_spec_op_name(const struct openapi_op *op)
{
	return (op->name);
}

const char *
openapi_spec_op_method(const struct openapi_op *op)
{
	return (op->method);
}

const char *
openapi_spec_op_path(const struct openapi_op *op)
{
	return (op->path);
}

const cJSON *
openapi_spec_op_tool(const struct openapi_op *op)
{
	return (op->tool);
}

int
openapi_spec_op_wraps(const struct openapi_op *op)
{
	return (op->wraps);
}

int
openapi_spec_op_has_output(const struct openapi_op *op)
{
	return (op->output);
}
