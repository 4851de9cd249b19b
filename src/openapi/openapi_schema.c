/*
 * A Schema Object of OpenAPI 3.0 or 3.1 made the JSON Schema 2020-12 an
 * MCP tool's inputSchema or outputSchema is (SEP-1613: no $schema means
 * 2020-12), with every $ref expanded in place.
 *
 * What changes on the way:
 *  - 3.0's nullable: true with a type becomes type [T, "null"] (and null
 *    joins an enum); 3.0's boolean exclusiveMinimum/exclusiveMaximum
 *    become 2020-12's numbers; example becomes examples: [example].
 *  - A $ref's siblings are dropped in 3.0 (as 3.0 says); in 3.1 they
 *    apply: annotations (title, description, ...) override the target's,
 *    anything else is combined with it as allOf.
 *  - allOf of plain object schemas (type, properties, required, title,
 *    description and nothing else) is merged into one object schema;
 *    anything else stays allOf, which 2020-12 has too.
 *  - readOnly properties are left out of input schemas and writeOnly ones
 *    out of output schemas (and out of required).
 *  - Keywords JSON Schema 2020-12 does not have (discriminator, xml,
 *    externalDocs, x-*, nullable, ...) are dropped, and so is a keyword
 *    whose value is not of its type (a 3.0 document's required: true on a
 *    property, a type that is no type), so the result is a valid schema
 *    whatever the document held; formats validators do not know are
 *    dropped too (format is an annotation in 2020-12).
 *
 * Recursion: a $ref to a schema already being expanded on the way down is
 * a cycle; it becomes {"$ref": "#/$defs/NAME"}, and NAME is built once
 * into the root's $defs (openapi_schema_defs). What a document can make
 * this do is bounded: a chain of $refs to $refs is followed
 * OPENAPI_MAX_REF_HOPS times at most and may not loop (both refuse the
 * document); a schema nested deeper than max_depth, or one tool's schema
 * objects past OPENAPI_TOOL_NODES (a $ref graph that blows up) skip the
 * operation; all tools' schema objects past OPENAPI_CATALOG_NODES, and an
 * enum of more than OPENAPI_MAX_ENUM values, refuse the document.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "openapi_int.h"
#include "xmalloc.h"

/* A schema reached again through a cycle: built once, into $defs. */
struct openapi_def {
	const cJSON	*target;
	char		*name;
	int		 built;
};

enum schema_kw {
	KW_SCHEMA,		/* a schema (or a boolean, in 3.1) */
	KW_SCHEMAS,		/* a non-empty array of schemas */
	KW_SCHEMA_MAP,		/* an object of schemas */
	KW_NUMBER,
	KW_POSITIVE,		/* a number > 0 */
	KW_COUNT,		/* an integer >= 0 */
	KW_STRING,
	KW_BOOL,
	KW_ANY,
	KW_ARRAY,		/* any array */
	KW_ENUM,
	KW_TYPE,
	KW_REQUIRED,		/* unique strings */
	KW_DEPREQ,		/* an object of unique strings */
	KW_FORMAT,
	KW_EXCLUSIVE		/* a number (3.1), or 3.0's boolean */
};

/* JSON Schema 2020-12's keywords, as mcpd keeps them. */
static const struct {
	const char	*name;
	enum schema_kw	 kind;
} schema_keywords[] = {
	{ "type", KW_TYPE },
	{ "enum", KW_ENUM },
	{ "const", KW_ANY },
	{ "multipleOf", KW_POSITIVE },
	{ "maximum", KW_NUMBER },
	{ "exclusiveMaximum", KW_EXCLUSIVE },
	{ "minimum", KW_NUMBER },
	{ "exclusiveMinimum", KW_EXCLUSIVE },
	{ "maxLength", KW_COUNT },
	{ "minLength", KW_COUNT },
	{ "pattern", KW_STRING },
	{ "maxItems", KW_COUNT },
	{ "minItems", KW_COUNT },
	{ "uniqueItems", KW_BOOL },
	{ "maxContains", KW_COUNT },
	{ "minContains", KW_COUNT },
	{ "maxProperties", KW_COUNT },
	{ "minProperties", KW_COUNT },
	{ "required", KW_REQUIRED },
	{ "dependentRequired", KW_DEPREQ },
	{ "properties", KW_SCHEMA_MAP },
	{ "patternProperties", KW_SCHEMA_MAP },
	{ "additionalProperties", KW_SCHEMA },
	{ "propertyNames", KW_SCHEMA },
	{ "items", KW_SCHEMA },
	{ "prefixItems", KW_SCHEMAS },
	{ "contains", KW_SCHEMA },
	{ "allOf", KW_SCHEMAS },
	{ "anyOf", KW_SCHEMAS },
	{ "oneOf", KW_SCHEMAS },
	{ "not", KW_SCHEMA },
	{ "if", KW_SCHEMA },
	{ "then", KW_SCHEMA },
	{ "else", KW_SCHEMA },
	{ "dependentSchemas", KW_SCHEMA_MAP },
	{ "unevaluatedItems", KW_SCHEMA },
	{ "unevaluatedProperties", KW_SCHEMA },
	{ "title", KW_STRING },
	{ "description", KW_STRING },
	{ "default", KW_ANY },
	{ "deprecated", KW_BOOL },
	{ "readOnly", KW_BOOL },
	{ "writeOnly", KW_BOOL },
	{ "examples", KW_ARRAY },
	{ "format", KW_FORMAT },
	{ "contentEncoding", KW_STRING },
	{ "contentMediaType", KW_STRING },
	{ "$comment", KW_STRING },
};

/* Annotations: a 3.1 $ref's siblings of these override the target's. */
static const char *const schema_annotations[] = {
	"title", "description", "default", "deprecated", "readOnly",
	"writeOnly", "examples", "$comment"
};

/*
 * Formats kept: JSON Schema's that validators (ajv-formats among them)
 * know, and OpenAPI's own. Others are dropped rather than have a strict
 * client refuse the schema.
 */
static const char *const schema_formats[] = {
	"date-time", "date", "time", "duration", "email", "hostname", "ipv4",
	"ipv6", "uri", "uri-reference", "uri-template", "uuid",
	"json-pointer", "relative-json-pointer", "regex", "int32", "int64",
	"float", "double", "byte", "binary", "password"
};

static const char *const schema_types[] = {
	"string", "number", "integer", "boolean", "array", "object", "null"
};

#define SCHEMA_NITEMS(a)	(sizeof (a) / sizeof (a)[0])

static cJSON	*schema_build(struct openapi_build *, const cJSON *, int, int);

static void
schema_fail(struct openapi_build *b, int fail, const char *fmt, ...)
{
	va_list	ap;

	if (b->fail != OPENAPI_OK)
		return;
	b->fail = fail;
	va_start(ap, fmt);
	if (vasprintf(&b->why, fmt, ap) == -1)
		fatalx("vasprintf: out of memory");
	va_end(ap);
}

void
openapi_schema_init(struct openapi_build *b, const cJSON *doc, int v31,
    int dir, int max_depth, size_t *total)
{
	memset(b, 0, sizeof *b);
	b->doc = doc;
	b->v31 = v31;
	b->dir = dir;
	b->max_depth = max_depth;
	b->total = total;
}

void
openapi_schema_clear(struct openapi_build *b)
{
	size_t	i;

	for (i = 0; i < b->ndefs; i++)
		free(b->defs[i].name);
	free(b->defs);
	free(b->stack);
	free(b->why);
	memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------------
 * $refs.
 */

/* A JSON Pointer's segment, unescaped (percent-encoding, then ~1, ~0). */
static char *
schema_segment(const char *s, size_t len)
{
	char	*out = xmalloc(len + 1), *o = out, hex[3];
	size_t	 i;

	for (i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len &&
		    isxdigit((u_char)s[i + 1]) && isxdigit((u_char)s[i + 2])) {
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			hex[2] = '\0';
			*o++ = (char)strtol(hex, NULL, 16);
			i += 2;
		} else
			*o++ = s[i];
	}
	*o = '\0';
	for (o = out; (o = strchr(o, '~')) != NULL; o++) {
		if (o[1] == '1' || o[1] == '0') {
			*o = o[1] == '1' ? '/' : '~';
			memmove(o + 1, o + 2, strlen(o + 2) + 1);
		}
	}
	return (out);
}

/*
 * The node a local reference ("#", "#/a/b") names in doc, or NULL with
 * *why: one that names nothing, and one that is not local (another
 * document, a 3.1 $id or anchor), which mcpd does not follow.
 */
static const cJSON *
schema_pointer(const cJSON *doc, const char *ref, char **why)
{
	const cJSON	*node = doc;
	const char	*p, *end;
	char		*seg, *num_end;
	long		 n;

	if (strncmp(ref, "#/", 2) != 0 && strcmp(ref, "#") != 0) {
		xasprintf(why, "$ref \"%s\" is not a reference into the same "
		    "document (#/...): mcpd does not follow it", ref);
		return (NULL);
	}
	for (p = ref + 1; *p == '/'; p = end) {
		end = strchr(p + 1, '/');
		if (end == NULL)
			end = p + strlen(p);
		seg = schema_segment(p + 1, (size_t)(end - p - 1));
		if (cJSON_IsArray(node)) {
			n = strtol(seg, &num_end, 10);
			node = *seg != '\0' && *num_end == '\0' && n >= 0 &&
			    n < INT32_MAX ? cJSON_GetArrayItem(node, (int)n) :
			    NULL;
		} else if (cJSON_IsObject(node))
			node = cJSON_GetObjectItemCaseSensitive(node, seg);
		else
			node = NULL;
		free(seg);
		if (node == NULL) {
			xasprintf(why, "$ref \"%s\" names nothing in the "
			    "document", ref);
			return (NULL);
		}
	}
	return (node);
}

/*
 * A node that is only a reference: a $ref, and in 3.1 nothing else (a
 * 3.0 $ref's siblings are ignored, so it is one whatever they are).
 */
static const char *
schema_only_ref(const cJSON *node, int v31)
{
	const cJSON	*ref;

	if (!cJSON_IsObject(node) || (ref = cJSON_GetObjectItemCaseSensitive(
	    node, "$ref")) == NULL || !cJSON_IsString(ref))
		return (NULL);
	if (v31 && cJSON_GetArraySize(node) != 1)
		return (NULL);
	return (ref->valuestring);
}

/*
 * Where ref leads through nodes that are only references: at most
 * OPENAPI_MAX_REF_HOPS of them, never one twice (a document doing either
 * is refused).
 */
static const cJSON *
schema_follow(const cJSON *doc, int v31, const char *ref, int *fail,
    char **why)
{
	const cJSON	*seen[OPENAPI_MAX_REF_HOPS], *node;
	const char	*next;
	size_t		 hops = 0, i;

	for (;;) {
		if ((node = schema_pointer(doc, ref, why)) == NULL) {
			*fail = OPENAPI_SKIP;
			return (NULL);
		}
		if ((next = schema_only_ref(node, v31)) == NULL)
			return (node);
		for (i = 0; i < hops; i++) {
			if (seen[i] == node) {
				xasprintf(why, "$ref \"%s\" is part of a cycle "
				    "of $refs that never reaches a schema",
				    ref);
				*fail = OPENAPI_REFUSE;
				return (NULL);
			}
		}
		if (hops == OPENAPI_MAX_REF_HOPS) {
			xasprintf(why, "a chain of more than %d $refs (at "
			    "\"%s\")", OPENAPI_MAX_REF_HOPS, ref);
			*fail = OPENAPI_REFUSE;
			return (NULL);
		}
		seen[hops++] = node;
		ref = next;
	}
}

const cJSON *
openapi_schema_resolve(const cJSON *doc, int v31, const cJSON *node, int *fail,
    char **why)
{
	const cJSON	*ref;

	*fail = OPENAPI_OK;
	if (!cJSON_IsObject(node) || (ref = cJSON_GetObjectItemCaseSensitive(
	    node, "$ref")) == NULL)
		return (node);
	if (!cJSON_IsString(ref)) {
		*why = xstrdup("a $ref that is not a string");
		*fail = OPENAPI_SKIP;
		return (NULL);
	}
	return (schema_follow(doc, v31, ref->valuestring, fail, why));
}

/* The $defs entry of a cycle's target (made on first use). */
static cJSON *
schema_def_ref(struct openapi_build *b, const cJSON *target, const char *ref)
{
	const char	*last;
	cJSON		*out;
	char		*name, *p, *ref_text;
	size_t		 i, n = 1, len;

	for (i = 0; i < b->ndefs; i++) {
		if (b->defs[i].target == target)
			break;
	}
	if (i == b->ndefs) {
		last = strrchr(ref, '/');
		last = last != NULL ? last + 1 : "schema";
		name = schema_segment(last, strlen(last));
		for (p = name; *p != '\0'; p++) {
			if (!isalnum((u_char)*p) && strchr("_-.", *p) == NULL)
				*p = '_';
		}
		if (*name == '\0' || strlen(name) > 64) {
			free(name);
			name = xstrdup("schema");
		}
		len = strlen(name);
		for (;;) {
			for (i = 0; i < b->ndefs; i++) {
				if (strcmp(b->defs[i].name, name) == 0)
					break;
			}
			if (i == b->ndefs)
				break;
			name[len] = '\0';
			p = name;
			xasprintf(&name, "%s_%zu", p, ++n);
			free(p);
		}
		b->defs = xreallocarray(b->defs, b->ndefs + 1,
		    sizeof *b->defs);
		b->defs[b->ndefs].target = target;
		b->defs[b->ndefs].name = name;
		b->defs[b->ndefs].built = 0;
		i = b->ndefs++;
	}
	xasprintf(&ref_text, "#/$defs/%s", b->defs[i].name);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "$ref", ref_text);
	free(ref_text);
	return (out);
}

static int
schema_on_stack(const struct openapi_build *b, const cJSON *target)
{
	size_t	i;

	for (i = 0; i < b->nstack; i++) {
		if (b->stack[i] == target)
			return (1);
	}
	return (0);
}

static void
schema_push(struct openapi_build *b, const cJSON *target)
{
	if (b->nstack == b->stacksize) {
		b->stacksize = b->stacksize == 0 ? 16 : b->stacksize * 2;
		b->stack = xreallocarray(b->stack, b->stacksize,
		    sizeof *b->stack);
	}
	b->stack[b->nstack++] = target;
}

/* ---------------------------------------------------------------------
 * Keywords.
 */

static int
schema_kind(const char *name, enum schema_kw *kind)
{
	size_t	i;

	for (i = 0; i < SCHEMA_NITEMS(schema_keywords); i++) {
		if (strcmp(schema_keywords[i].name, name) == 0) {
			*kind = schema_keywords[i].kind;
			return (0);
		}
	}
	return (-1);
}

static int
schema_in(const char *s, const char *const *list, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (strcmp(s, list[i]) == 0)
			return (1);
	}
	return (0);
}

/* A type as 2020-12 has it (a name, or unique names), or NULL. */
static cJSON *
schema_type(const cJSON *v)
{
	const cJSON	*t, *u;

	if (cJSON_IsString(v))
		return (schema_in(v->valuestring, schema_types,
		    SCHEMA_NITEMS(schema_types)) ? cJSON_Duplicate(v, 0) :
		    NULL);
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
		return (NULL);
	cJSON_ArrayForEach(t, v) {
		if (!cJSON_IsString(t) || !schema_in(t->valuestring,
		    schema_types, SCHEMA_NITEMS(schema_types)))
			return (NULL);
		for (u = t->next; u != NULL; u = u->next) {
			if (cJSON_IsString(u) && strcmp(u->valuestring,
			    t->valuestring) == 0)
				return (NULL);
		}
	}
	return (cJSON_Duplicate(v, 1));
}

/* Unique strings of an array, or NULL. */
static cJSON *
schema_strings(const cJSON *v)
{
	const cJSON	*t, *u;
	cJSON		*out;

	if (!cJSON_IsArray(v))
		return (NULL);
	out = cJSON_CreateArray();
	cJSON_ArrayForEach(t, v) {
		if (!cJSON_IsString(t))
			continue;
		for (u = out->child; u != NULL; u = u->next) {
			if (strcmp(u->valuestring, t->valuestring) == 0)
				break;
		}
		if (u == NULL)
			cJSON_AddItemToArray(out, cJSON_Duplicate(t, 0));
	}
	return (out);
}

static int
schema_is_count(const cJSON *v)
{
	return (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble <= 9007199254740992.0 &&
	    floor(v->valuedouble) == v->valuedouble);
}

/* The value a keyword keeps, or NULL when it is dropped. */
static cJSON *
schema_keyword(struct openapi_build *b, enum schema_kw kind, const cJSON *v,
    int depth)
{
	const cJSON	*c;
	cJSON		*out, *s;

	switch (kind) {
	case KW_SCHEMA:
		return (schema_build(b, v, depth + 1, 0));
	case KW_SCHEMAS:
		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
			return (NULL);
		out = cJSON_CreateArray();
		cJSON_ArrayForEach(c, v) {
			if ((s = schema_build(b, c, depth + 1, 0)) == NULL) {
				cJSON_Delete(out);
				return (NULL);
			}
			cJSON_AddItemToArray(out, s);
		}
		return (out);
	case KW_SCHEMA_MAP:
		if (!cJSON_IsObject(v))
			return (NULL);
		out = cJSON_CreateObject();
		cJSON_ArrayForEach(c, v) {
			if ((s = schema_build(b, c, depth + 1, 0)) == NULL) {
				cJSON_Delete(out);
				return (NULL);
			}
			cJSON_AddItemToObject(out, c->string, s);
		}
		return (out);
	case KW_NUMBER:
		return (cJSON_IsNumber(v) ? cJSON_Duplicate(v, 0) : NULL);
	case KW_POSITIVE:
		return (cJSON_IsNumber(v) && v->valuedouble > 0 ?
		    cJSON_Duplicate(v, 0) : NULL);
	case KW_COUNT:
		return (schema_is_count(v) ? cJSON_Duplicate(v, 0) : NULL);
	case KW_STRING:
		return (cJSON_IsString(v) ? cJSON_Duplicate(v, 0) : NULL);
	case KW_BOOL:
		return (cJSON_IsBool(v) ? cJSON_Duplicate(v, 0) : NULL);
	case KW_ANY:
		return (cJSON_Duplicate(v, 1));
	case KW_ARRAY:
		return (cJSON_IsArray(v) ? cJSON_Duplicate(v, 1) : NULL);
	case KW_ENUM:
		if (!cJSON_IsArray(v))
			return (NULL);
		if (cJSON_GetArraySize(v) > OPENAPI_MAX_ENUM) {
			schema_fail(b, OPENAPI_REFUSE, "an enum of %d values "
			    "(more than %d)", cJSON_GetArraySize(v),
			    OPENAPI_MAX_ENUM);
			return (NULL);
		}
		return (cJSON_Duplicate(v, 1));
	case KW_TYPE:
		return (schema_type(v));
	case KW_REQUIRED:
		return (schema_strings(v));
	case KW_DEPREQ:
		if (!cJSON_IsObject(v))
			return (NULL);
		out = cJSON_CreateObject();
		cJSON_ArrayForEach(c, v) {
			if ((s = schema_strings(c)) != NULL)
				cJSON_AddItemToObject(out, c->string, s);
		}
		return (out);
	case KW_FORMAT:
		return (cJSON_IsString(v) && schema_in(v->valuestring,
		    schema_formats, SCHEMA_NITEMS(schema_formats)) ?
		    cJSON_Duplicate(v, 0) : NULL);
	case KW_EXCLUSIVE:
		/* 3.0's booleans are handled with nullable, after. */
		return (cJSON_IsNumber(v) ? cJSON_Duplicate(v, 0) : NULL);
	}
	return (NULL);
}

/* ---------------------------------------------------------------------
 * What 3.0 says differently, and what a direction leaves out.
 */

/* 3.0's exclusiveMinimum: true beside minimum: 2020-12's number. */
static void
schema_exclusive(cJSON *out, const cJSON *in, const char *ex,
    const char *bound)
{
	const cJSON	*flag = cJSON_GetObjectItemCaseSensitive(in, ex);
	cJSON		*b;

	if (!cJSON_IsBool(flag))
		return;
	if (cJSON_IsTrue(flag) && (b = cJSON_DetachItemFromObjectCaseSensitive(
	    out, bound)) != NULL)
		cJSON_AddItemToObject(out, ex, b);
}

/* nullable: true with a type: the type also allows null. */
static void
schema_nullable(cJSON *out, const cJSON *in)
{
	const cJSON	*nullable = cJSON_GetObjectItemCaseSensitive(in,
			    "nullable"), *t;
	cJSON		*type, *types, *en;

	if (!cJSON_IsTrue(nullable) || (type =
	    cJSON_GetObjectItemCaseSensitive(out, "type")) == NULL)
		return;
	if (cJSON_IsString(type)) {
		if (strcmp(type->valuestring, "null") == 0)
			return;
		types = cJSON_CreateArray();
		cJSON_AddItemToArray(types, cJSON_CreateString(
		    type->valuestring));
		cJSON_AddItemToArray(types, cJSON_CreateString("null"));
		cJSON_ReplaceItemInObjectCaseSensitive(out, "type", types);
	} else {
		cJSON_ArrayForEach(t, type) {
			if (strcmp(t->valuestring, "null") == 0)
				return;
		}
		cJSON_AddItemToArray(type, cJSON_CreateString("null"));
	}
	if ((en = cJSON_GetObjectItemCaseSensitive(out, "enum")) != NULL) {
		cJSON_ArrayForEach(t, en) {
			if (cJSON_IsNull(t))
				return;
		}
		cJSON_AddItemToArray(en, cJSON_CreateNull());
	}
}

/* Input leaves readOnly properties out, output writeOnly ones. */
static void
schema_direction(struct openapi_build *b, cJSON *out)
{
	const char	*flag = b->dir == OPENAPI_INPUT ? "readOnly" :
			    "writeOnly";
	cJSON		*props, *p, *next, *req, *r, *rnext;

	if ((props = cJSON_GetObjectItemCaseSensitive(out, "properties")) ==
	    NULL)
		return;
	req = cJSON_GetObjectItemCaseSensitive(out, "required");
	for (p = props->child; p != NULL; p = next) {
		next = p->next;
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, flag)))
			continue;
		for (r = req != NULL ? req->child : NULL; r != NULL;
		    r = rnext) {
			rnext = r->next;
			if (strcmp(r->valuestring, p->string) == 0)
				cJSON_Delete(cJSON_DetachItemViaPointer(req,
				    r));
		}
		cJSON_Delete(cJSON_DetachItemViaPointer(props, p));
	}
	if (req != NULL && cJSON_GetArraySize(req) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(out, "required");
}

/* ---------------------------------------------------------------------
 * allOf.
 */

/* A member merge can take: an object schema of these keys only. */
static int
schema_mergeable(const cJSON *s)
{
	static const char *const keys[] = {
		"type", "properties", "required", "title", "description"
	};
	const cJSON	*c, *type;

	if (!cJSON_IsObject(s))
		return (0);
	cJSON_ArrayForEach(c, s) {
		if (!schema_in(c->string, keys, SCHEMA_NITEMS(keys)))
			return (0);
	}
	type = cJSON_GetObjectItemCaseSensitive(s, "type");
	return (type == NULL || (cJSON_IsString(type) &&
	    strcmp(type->valuestring, "object") == 0));
}

static void
schema_merge_into(cJSON *props, cJSON *req, const cJSON *s)
{
	const cJSON	*p, *r, *have;
	cJSON		*both, *list;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(s,
	    "properties")) {
		have = cJSON_GetObjectItemCaseSensitive(props, p->string);
		if (have == NULL)
			cJSON_AddItemToObject(props, p->string,
			    cJSON_Duplicate(p, 1));
		else if (!cJSON_Compare(have, p, 1)) {
			/* Both constrain it: both must hold. */
			both = cJSON_CreateObject();
			list = cJSON_AddArrayToObject(both, "allOf");
			cJSON_AddItemToArray(list, cJSON_Duplicate(have, 1));
			cJSON_AddItemToArray(list, cJSON_Duplicate(p, 1));
			cJSON_ReplaceItemInObjectCaseSensitive(props,
			    p->string, both);
		}
	}
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(s,
	    "required")) {
		cJSON_ArrayForEach(have, req) {
			if (strcmp(have->valuestring, r->valuestring) == 0)
				break;
		}
		if (have == NULL)
			cJSON_AddItemToArray(req, cJSON_Duplicate(r, 0));
	}
}

/*
 * allOf of object schemas merged into out: properties together (one
 * constrained twice keeps both as its own allOf), required together, the
 * first title and description kept.
 */
static void
schema_merge_allof(cJSON *out)
{
	cJSON		*all = cJSON_GetObjectItemCaseSensitive(out, "allOf");
	cJSON		*props, *req, *own;
	const cJSON	*m, *text;
	const char	*keys[] = { "title", "description" };
	size_t		 i;

	if (all == NULL)
		return;
	cJSON_ArrayForEach(m, all) {
		if (!schema_mergeable(m))
			return;
	}
	all = cJSON_DetachItemFromObjectCaseSensitive(out, "allOf");
	if (!schema_mergeable(out)) {
		cJSON_AddItemToObject(out, "allOf", all);
		return;
	}
	own = cJSON_Duplicate(out, 1);
	props = cJSON_CreateObject();
	req = cJSON_CreateArray();
	schema_merge_into(props, req, own);
	cJSON_ArrayForEach(m, all)
		schema_merge_into(props, req, m);
	for (i = 0; i < 2; i++) {
		if (cJSON_GetObjectItemCaseSensitive(out, keys[i]) != NULL)
			continue;
		cJSON_ArrayForEach(m, all) {
			if ((text = cJSON_GetObjectItemCaseSensitive(m,
			    keys[i])) != NULL) {
				cJSON_AddItemToObject(out, keys[i],
				    cJSON_Duplicate(text, 0));
				break;
			}
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(out, "type");
	cJSON_DeleteItemFromObjectCaseSensitive(out, "properties");
	cJSON_DeleteItemFromObjectCaseSensitive(out, "required");
	cJSON_AddStringToObject(out, "type", "object");
	cJSON_AddItemToObject(out, "properties", props);
	if (cJSON_GetArraySize(req) > 0)
		cJSON_AddItemToObject(out, "required", req);
	else
		cJSON_Delete(req);
	cJSON_Delete(own);
	cJSON_Delete(all);
}

/* ---------------------------------------------------------------------
 * Building.
 */

/* A $ref: its target expanded, or a $ref into $defs for a cycle. */
static cJSON *
schema_ref(struct openapi_build *b, const cJSON *node, int depth)
{
	const cJSON	*ref = cJSON_GetObjectItemCaseSensitive(node, "$ref");
	const cJSON	*target, *c;
	cJSON		*out, *sib, *all;
	char		*why = NULL;
	int		 fail, annotations_only = 1;

	if (!cJSON_IsString(ref)) {
		schema_fail(b, OPENAPI_SKIP, "a $ref that is not a string");
		return (NULL);
	}
	if ((target = schema_follow(b->doc, b->v31, ref->valuestring, &fail,
	    &why)) == NULL) {
		schema_fail(b, fail, "%s", why);
		free(why);
		return (NULL);
	}
	if (schema_on_stack(b, target))
		out = schema_def_ref(b, target, ref->valuestring);
	else {
		schema_push(b, target);
		out = schema_build(b, target, depth, 0);
		b->nstack--;
	}
	if (out == NULL || !b->v31 || cJSON_GetArraySize(node) == 1)
		return (out);

	/* 3.1: what stands beside the $ref applies too. */
	if ((sib = schema_build(b, node, depth, 1)) == NULL) {
		cJSON_Delete(out);
		return (NULL);
	}
	cJSON_ArrayForEach(c, sib) {
		if (!schema_in(c->string, schema_annotations,
		    SCHEMA_NITEMS(schema_annotations)))
			annotations_only = 0;
	}
	if (annotations_only && cJSON_IsObject(out)) {
		while (sib->child != NULL) {
			c = sib->child;
			cJSON_DeleteItemFromObjectCaseSensitive(out, c->string);
			cJSON_AddItemToObject(out, c->string,
			    cJSON_DetachItemViaPointer(sib, sib->child));
		}
		cJSON_Delete(sib);
		return (out);
	}
	all = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(all, "allOf"), out);
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(all, "allOf"),
	    sib);
	schema_merge_allof(all);
	return (all);
}

/*
 * node as 2020-12, depth levels down from the tool's root; with
 * skip_ref, node's $ref is left aside (its siblings alone).
 */
static cJSON *
schema_build(struct openapi_build *b, const cJSON *node, int depth,
    int skip_ref)
{
	const cJSON	*c, *example;
	cJSON		*out, *v;
	enum schema_kw	 kind;

	if (b->fail != OPENAPI_OK)
		return (NULL);
	if (++*b->total > OPENAPI_CATALOG_NODES) {
		schema_fail(b, OPENAPI_REFUSE, "the tools' schemas expand past "
		    "%d schema objects in all", OPENAPI_CATALOG_NODES);
		return (NULL);
	}
	if (++b->nodes > OPENAPI_TOOL_NODES) {
		schema_fail(b, OPENAPI_SKIP, "its schema expands past %d "
		    "schema objects", OPENAPI_TOOL_NODES);
		return (NULL);
	}
	if (depth > b->max_depth) {
		schema_fail(b, OPENAPI_SKIP, "a schema nested deeper than "
		    "max_schema_depth (%d)", b->max_depth);
		return (NULL);
	}
	if (cJSON_IsBool(node))
		return (cJSON_Duplicate(node, 0));
	if (!cJSON_IsObject(node)) {
		schema_fail(b, OPENAPI_SKIP, "a schema that is not an object");
		return (NULL);
	}
	if (!skip_ref && cJSON_GetObjectItemCaseSensitive(node, "$ref") !=
	    NULL)
		return (schema_ref(b, node, depth));
	if (cJSON_GetObjectItemCaseSensitive(node, "$dynamicRef") != NULL) {
		schema_fail(b, OPENAPI_SKIP, "a $dynamicRef, which mcpd does "
		    "not follow");
		return (NULL);
	}

	out = cJSON_CreateObject();
	cJSON_ArrayForEach(c, node) {
		if (schema_kind(c->string, &kind) != 0)
			continue;
		v = schema_keyword(b, kind, c, depth);
		if (b->fail != OPENAPI_OK) {
			cJSON_Delete(v);
			cJSON_Delete(out);
			return (NULL);
		}
		if (v != NULL)
			cJSON_AddItemToObject(out, c->string, v);
	}
	schema_exclusive(out, node, "exclusiveMinimum", "minimum");
	schema_exclusive(out, node, "exclusiveMaximum", "maximum");
	if (!b->v31)
		schema_nullable(out, node);
	example = cJSON_GetObjectItemCaseSensitive(node, "example");
	if (example != NULL && cJSON_GetObjectItemCaseSensitive(out,
	    "examples") == NULL)
		cJSON_AddItemToArray(cJSON_AddArrayToObject(out, "examples"),
		    cJSON_Duplicate(example, 1));
	schema_direction(b, out);
	schema_merge_allof(out);
	return (out);
}

cJSON *
openapi_schema_build(struct openapi_build *b, const cJSON *node)
{
	return (schema_build(b, node, 0, 0));
}

int
openapi_schema_defs(struct openapi_build *b, cJSON *root)
{
	cJSON	*defs = NULL, *s;
	size_t	 i;

	/* Building one may add another: the loop reaches it too. */
	for (i = 0; i < b->ndefs; i++) {
		if (b->defs[i].built)
			continue;
		b->defs[i].built = 1;
		b->nstack = 0;
		schema_push(b, b->defs[i].target);
		if ((s = schema_build(b, b->defs[i].target, 1, 0)) == NULL) {
			cJSON_Delete(defs);
			return (-1);
		}
		if (defs == NULL)
			defs = cJSON_CreateObject();
		cJSON_AddItemToObject(defs, b->defs[i].name, s);
	}
	if (defs != NULL)
		cJSON_AddItemToObject(root, "$defs", defs);
	return (0);
}
