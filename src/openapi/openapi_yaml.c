/*
 * YAML to cJSON, through libyaml's event API, for OpenAPI documents.
 *
 * libyaml parses YAML 1.1 and resolves nothing: every scalar comes as
 * text. OpenAPI asks for the YAML 1.2 core schema (JSON-compatible), so
 * a plain scalar is null (~, null, empty), a boolean (true, false), an
 * integer ([-+]digits, 0o octal, 0x hex) or a float ([-+]digits with a
 * fraction or an exponent) as that schema has them, and any other plain
 * scalar, every quoted or block scalar and every key a string: yes, on,
 * 1.0.3 and .inf stay strings. A tag other than the core ones is
 * refused, as are a second document, a key that is not a scalar, a key
 * given twice and a NUL in a string. Merge keys (<<, YAML 1.1 but common
 * in API descriptions) are taken.
 *
 * Aliases are copies of their anchor's node, so a small document can
 * expand enormously ("billion laughs"): the nodes made, aliases
 * included, are bounded by OPENAPI_MAX_NODES, the aliases by
 * OPENAPI_MAX_ALIASES, nesting by OPENAPI_MAX_NESTING.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "openapi.h"
#include "xmalloc.h"

/*
 * An anchor keeps a copy of its node, made when the node is whole: the
 * node itself may be gone by the time an alias names it (a key, or a
 * mapping merged and freed).
 */
struct yaml_anchor {
	char		*name;
	cJSON		*copy;		/* NULL: a container not yet ended */
};

struct yaml_frame {
	cJSON		*node;
	char		*key;		/* a mapping's key awaiting its value */
	int		 merge;		/* that key is a plain << */
	char		*anchor;	/* its name, or NULL */
	cJSON		*merged;	/* keys merged: a key may override */
};

struct yaml_build {
	struct yaml_frame	 stack[OPENAPI_MAX_NESTING + 1];
	int			 depth;
	cJSON			*root;
	struct yaml_anchor	*anchors;
	size_t			 nanchors;
	size_t			 nodes;
	size_t			 aliases;
	int			 documents;
	char			**cause;
	size_t			 line;
};

static int
yaml_fail(struct yaml_build *b, const char *fmt, const char *arg)
{
	char	*text;

	xasprintf(&text, fmt, arg);
	xasprintf(b->cause, "YAML line %zu: %s", b->line, text);
	free(text);
	return (-1);
}

/* Digits of base from s to its end; the value in *v. */
static int
yaml_digits(const char *s, int base, double *v)
{
	char		*end;
	long long	 n;

	if (*s == '\0')
		return (0);
	errno = 0;
	n = strtoll(s, &end, base);
	if (*end != '\0' || errno != 0)
		return (0);
	*v = (double)n;
	return (1);
}

/* [-+]?[0-9]+ */
static int
yaml_is_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (*s == '\0')
		return (0);
	return (strspn(s, "0123456789") == strlen(s));
}

/* [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static int
yaml_is_float(const char *s)
{
	size_t	n;
	int	digits = 0;

	if (*s == '-' || *s == '+')
		s++;
	n = strspn(s, "0123456789");
	digits = n > 0;
	s += n;
	if (*s == '.') {
		s++;
		n = strspn(s, "0123456789");
		digits |= n > 0;
		s += n;
	}
	if (!digits)
		return (0);
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		n = strspn(s, "0123456789");
		if (n == 0)
			return (0);
		s += n;
	}
	return (*s == '\0');
}

/* A plain scalar by the core schema. */
static cJSON *
yaml_plain(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
	static const char *const trues[] = { "true", "True", "TRUE" };
	static const char *const falses[] = { "false", "False", "FALSE" };
	double	 v;
	size_t	 i;

	for (i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
		if (strcmp(s, nulls[i]) == 0)
			return (cJSON_CreateNull());
	for (i = 0; i < sizeof trues / sizeof trues[0]; i++)
		if (strcmp(s, trues[i]) == 0)
			return (cJSON_CreateTrue());
	for (i = 0; i < sizeof falses / sizeof falses[0]; i++)
		if (strcmp(s, falses[i]) == 0)
			return (cJSON_CreateFalse());
	if (strncmp(s, "0o", 2) == 0 && yaml_digits(s + 2, 8, &v))
		return (cJSON_CreateNumber(v));
	if (strncmp(s, "0x", 2) == 0 && yaml_digits(s + 2, 16, &v))
		return (cJSON_CreateNumber(v));
	if (yaml_is_int(s) || yaml_is_float(s))
		return (cJSON_CreateNumber(strtod(s, NULL)));
	return (cJSON_CreateString(s));
}

/* [-+]?[0-9]+, 0o[0-7]+ or 0x[0-9a-fA-F]+ */
static int
yaml_int_text(const char *s)
{
	double	v;

	if (strncmp(s, "0o", 2) == 0)
		return (yaml_digits(s + 2, 8, &v));
	if (strncmp(s, "0x", 2) == 0)
		return (yaml_digits(s + 2, 16, &v));
	return (yaml_is_int(s));
}

/* A scalar with a core tag: what the tag says, or NULL if it cannot be. */
static cJSON *
yaml_tagged(struct yaml_build *b, const char *tag, const char *s)
{
	cJSON	*v;
	int	 ok;

	if (strcmp(tag, YAML_STR_TAG) == 0 || strcmp(tag, "!") == 0)
		return (cJSON_CreateString(s));
	v = yaml_plain(s);
	if (strcmp(tag, YAML_NULL_TAG) == 0)
		ok = cJSON_IsNull(v);
	else if (strcmp(tag, YAML_BOOL_TAG) == 0)
		ok = cJSON_IsBool(v);
	else if (strcmp(tag, YAML_INT_TAG) == 0)
		ok = cJSON_IsNumber(v) && yaml_int_text(s);
	else if (strcmp(tag, YAML_FLOAT_TAG) == 0)
		ok = cJSON_IsNumber(v);
	else {
		cJSON_Delete(v);
		yaml_fail(b, "unsupported tag %s", tag);
		return (NULL);
	}
	if (ok)
		return (v);
	cJSON_Delete(v);
	yaml_fail(b, "\"%s\" does not fit its tag", s);
	return (NULL);
}

static int
yaml_tag_ok(struct yaml_build *b, const yaml_char_t *tag, const char *want)
{
	if (tag == NULL || strcmp((const char *)tag, want) == 0 ||
	    strcmp((const char *)tag, "!") == 0)
		return (0);
	return (yaml_fail(b, "unsupported tag %s", (const char *)tag));
}

static int
yaml_count(struct yaml_build *b, size_t n)
{
	b->nodes += n;
	if (b->nodes > OPENAPI_MAX_NODES) {
		xasprintf(b->cause, "YAML line %zu: more than %d nodes once "
		    "aliases are expanded", b->line, OPENAPI_MAX_NODES);
		return (-1);
	}
	return (0);
}

static size_t
yaml_size(const cJSON *v)
{
	const cJSON	*c;
	size_t		 n = 1;

	for (c = v->child; c != NULL; c = c->next)
		n += yaml_size(c);
	return (n);
}

/*
 * The keys of a merged mapping that the mapping does not have; the
 * mapping's own keys, before or after, win.
 */
static int
yaml_merge_one(struct yaml_build *b, struct yaml_frame *f, const cJSON *from)
{
	const cJSON	*c;

	if (!cJSON_IsObject(from))
		return (yaml_fail(b, "%s: a merge key's value must be a "
		    "mapping or a sequence of them", "<<"));
	for (c = from->child; c != NULL; c = c->next) {
		if (cJSON_GetObjectItemCaseSensitive(f->node, c->string) !=
		    NULL)
			continue;
		if (yaml_count(b, yaml_size(c)) != 0)
			return (-1);
		cJSON_AddItemToObject(f->node, c->string,
		    cJSON_Duplicate(c, 1));
		if (f->merged == NULL)
			f->merged = cJSON_CreateObject();
		cJSON_AddNullToObject(f->merged, c->string);
	}
	return (0);
}

/*
 * Puts v (taken) where the innermost container wants it: appended to a
 * sequence; as a mapping's key, or as the value of the key before it.
 */
static int
yaml_place(struct yaml_build *b, cJSON *v, int plain)
{
	struct yaml_frame	*f;
	const cJSON		*c;
	int			 rc = 0;

	if (b->depth == 0) {
		b->root = v;
		return (0);
	}
	f = &b->stack[b->depth - 1];
	if (cJSON_IsArray(f->node)) {
		cJSON_AddItemToArray(f->node, v);
		return (0);
	}
	if (f->key == NULL) {
		if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
			cJSON_Delete(v);
			return (yaml_fail(b, "%s", "a mapping key that is not "
			    "a scalar"));
		}
		f->merge = plain && cJSON_IsString(v) &&
		    strcmp(v->valuestring, "<<") == 0;
		f->key = cJSON_IsString(v) ? xstrdup(v->valuestring) :
		    cJSON_PrintUnformatted(v);
		cJSON_Delete(v);
		return (0);
	}
	if (f->merge) {
		if (cJSON_IsArray(v)) {
			for (c = v->child; c != NULL && rc == 0; c = c->next)
				rc = yaml_merge_one(b, f, c);
		} else
			rc = yaml_merge_one(b, f, v);
		cJSON_Delete(v);
	} else if (cJSON_GetObjectItemCaseSensitive(f->merged, f->key) !=
	    NULL) {
		cJSON_DeleteItemFromObjectCaseSensitive(f->merged, f->key);
		cJSON_ReplaceItemInObjectCaseSensitive(f->node, f->key, v);
	} else if (cJSON_GetObjectItemCaseSensitive(f->node, f->key) != NULL) {
		cJSON_Delete(v);
		rc = yaml_fail(b, "key \"%s\" given twice", f->key);
	} else
		cJSON_AddItemToObject(f->node, f->key, v);
	free(f->key);
	f->key = NULL;
	f->merge = 0;
	return (rc);
}

/* Names a node; node NULL: a container begins, its copy comes later. */
static int
yaml_anchor(struct yaml_build *b, const char *name, const cJSON *node)
{
	size_t	i;

	if (name == NULL)
		return (0);
	/* A name used again names the later node from there on. */
	for (i = 0; i < b->nanchors; i++) {
		if (strcmp(b->anchors[i].name, name) == 0)
			break;
	}
	if (i == b->nanchors) {
		b->anchors = xreallocarray(b->anchors, b->nanchors + 1,
		    sizeof *b->anchors);
		b->anchors[b->nanchors].name = xstrdup(name);
		b->anchors[b->nanchors++].copy = NULL;
	}
	cJSON_Delete(b->anchors[i].copy);
	b->anchors[i].copy = NULL;
	if (node == NULL)
		return (0);
	if (yaml_count(b, yaml_size(node)) != 0)
		return (-1);
	b->anchors[i].copy = cJSON_Duplicate(node, 1);
	return (0);
}

static int
yaml_alias(struct yaml_build *b, const yaml_char_t *name)
{
	size_t	i;

	if (++b->aliases > OPENAPI_MAX_ALIASES) {
		xasprintf(b->cause, "YAML line %zu: more than %d aliases",
		    b->line, OPENAPI_MAX_ALIASES);
		return (-1);
	}
	for (i = 0; i < b->nanchors; i++) {
		if (strcmp(b->anchors[i].name, (const char *)name) == 0)
			break;
	}
	if (i == b->nanchors)
		return (yaml_fail(b, "alias *%s names no anchor",
		    (const char *)name));
	if (b->anchors[i].copy == NULL)
		return (yaml_fail(b, "alias *%s is inside its own anchor",
		    (const char *)name));
	if (yaml_count(b, yaml_size(b->anchors[i].copy)) != 0)
		return (-1);
	return (yaml_place(b, cJSON_Duplicate(b->anchors[i].copy, 1), 0));
}

static int
yaml_scalar(struct yaml_build *b, const yaml_event_t *ev)
{
	const char	*s = (const char *)ev->data.scalar.value;
	const char	*tag = (const char *)ev->data.scalar.tag;
	cJSON		*v;
	int		 plain;

	if (strlen(s) != ev->data.scalar.length)
		return (yaml_fail(b, "%s", "a NUL character in a string"));
	if (yaml_count(b, 1) != 0)
		return (-1);
	plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (tag != NULL && strcmp(tag, "!") != 0 &&
	    strncmp(tag, "tag:yaml.org,2002:", 18) != 0)
		return (yaml_fail(b, "unsupported tag %s", tag));
	if (tag != NULL && (v = yaml_tagged(b, tag, s)) == NULL)
		return (-1);
	else if (tag == NULL)
		v = plain ? yaml_plain(s) : cJSON_CreateString(s);
	if (yaml_anchor(b, (const char *)ev->data.scalar.anchor, v) != 0) {
		cJSON_Delete(v);
		return (-1);
	}
	return (yaml_place(b, v, plain && tag == NULL));
}

static int
yaml_open(struct yaml_build *b, cJSON *node, const yaml_char_t *anchor)
{
	struct yaml_frame	*f;

	if (b->depth == OPENAPI_MAX_NESTING) {
		cJSON_Delete(node);
		xasprintf(b->cause, "YAML line %zu: nested deeper than %d",
		    b->line, OPENAPI_MAX_NESTING);
		return (-1);
	}
	if (yaml_count(b, 1) != 0) {
		cJSON_Delete(node);
		return (-1);
	}
	f = &b->stack[b->depth++];
	memset(f, 0, sizeof *f);
	f->node = node;
	if (anchor != NULL) {
		f->anchor = xstrdup((const char *)anchor);
		yaml_anchor(b, f->anchor, NULL);
	}
	return (0);
}

static void
yaml_frame_clear(struct yaml_frame *f)
{
	free(f->key);
	free(f->anchor);
	cJSON_Delete(f->merged);
	f->key = f->anchor = NULL;
	f->merged = NULL;
}

static int
yaml_close(struct yaml_build *b)
{
	struct yaml_frame	*f = &b->stack[--b->depth];
	int			 rc;

	rc = yaml_anchor(b, f->anchor, f->node);
	yaml_frame_clear(f);
	if (rc != 0) {
		cJSON_Delete(f->node);
		return (-1);
	}
	return (yaml_place(b, f->node, 0));
}

static int
yaml_event(struct yaml_build *b, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++b->documents > 1)
			return (yaml_fail(b, "%s", "more than one document"));
		return (0);
	case YAML_SCALAR_EVENT:
		return (yaml_scalar(b, ev));
	case YAML_ALIAS_EVENT:
		return (yaml_alias(b, ev->data.alias.anchor));
	case YAML_SEQUENCE_START_EVENT:
		if (yaml_tag_ok(b, ev->data.sequence_start.tag,
		    YAML_SEQ_TAG) != 0)
			return (-1);
		return (yaml_open(b, cJSON_CreateArray(),
		    ev->data.sequence_start.anchor));
	case YAML_MAPPING_START_EVENT:
		if (yaml_tag_ok(b, ev->data.mapping_start.tag,
		    YAML_MAP_TAG) != 0)
			return (-1);
		return (yaml_open(b, cJSON_CreateObject(),
		    ev->data.mapping_start.anchor));
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return (yaml_close(b));
	default:
		return (0);
	}
}

cJSON *
openapi_yaml_parse(const char *buf, size_t len, char **cause)
{
	struct yaml_build	 b;
	yaml_parser_t		 parser;
	yaml_event_t		 ev;
	int			 rc = 0, done = 0;
	size_t			 i;

	memset(&b, 0, sizeof b);
	b.cause = cause;
	if (!yaml_parser_initialize(&parser)) {
		*cause = xstrdup("YAML: cannot set up the parser");
		return (NULL);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && rc == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			xasprintf(cause, "YAML line %zu column %zu: %s%s%s",
			    parser.problem_mark.line + 1,
			    parser.problem_mark.column + 1,
			    parser.problem != NULL ? parser.problem : "error",
			    parser.context != NULL ? " " : "",
			    parser.context != NULL ? parser.context : "");
			rc = -1;
			break;
		}
		b.line = ev.start_mark.line + 1;
		rc = yaml_event(&b, &ev);
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	while (b.depth > 0) {
		yaml_frame_clear(&b.stack[b.depth - 1]);
		cJSON_Delete(b.stack[--b.depth].node);
	}
	for (i = 0; i < b.nanchors; i++) {
		free(b.anchors[i].name);
		cJSON_Delete(b.anchors[i].copy);
	}
	free(b.anchors);
	if (rc != 0) {
		cJSON_Delete(b.root);
		return (NULL);
	}
	if (b.root == NULL) {
		*cause = xstrdup("YAML: an empty document");
		return (NULL);
	}
	return (b.root);
}
