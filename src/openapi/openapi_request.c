/*
 * A call's arguments made its operation's HTTP request: the path template
 * filled in, the query string, header and cookie parameters, and the
 * JSON body, as OpenAPI's styles say (RFC 6570 expansions, as 3.0.4 and
 * 3.1.1 correct the earlier tables):
 *
 *   path    simple a,b  k,v / k=v   label .a,b / .a.b
 *           matrix ;n=a,b / ;n=a;n=b
 *   query   form n=a,b / n=a&n=b      spaceDelimited n=a%20b
 *           pipeDelimited n=a%7Cb     deepObject n%5Bk%5D=v
 *   header  simple a,b  k,v / k=v   cookie form n=a,b / n=a; n=b
 *
 * Values are percent-encoded but for RFC 3986's unreserved characters
 * ("/" too, in a path), a query parameter with allowReserved keeping the
 * reserved ones but "#"; header values are sent as they are, refused
 * with a control character in them. A string goes as it is, a number in
 * its shortest JSON form, a boolean as true or false, null as nothing; an
 * array's items and an object's values the same (one that is itself an
 * array or object as JSON text). A parameter with content
 * application/json is sent as the JSON text of its value. An empty array
 * or object leaves its query parameter out.
 *
 * Arguments are checked only as far as the request needs: each known,
 * the required ones there. Whether a value fits its schema is for the API
 * to say (a 4xx, which the caller sees).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openapi_int.h"
#include "xmalloc.h"

/* A growing string. */
struct req_buf {
	char	*s;
	size_t	 len;
	size_t	 size;
};

static void
req_add(struct req_buf *b, const char *s, size_t len)
{
	if (b->len + len + 1 > b->size) {
		b->size = b->size == 0 ? 128 : b->size;
		while (b->len + len + 1 > b->size)
			b->size *= 2;
		b->s = xrealloc(b->s, b->size);
	}
	memcpy(b->s + b->len, s, len);
	b->len += len;
	b->s[b->len] = '\0';
}

static void
req_adds(struct req_buf *b, const char *s)
{
	req_add(b, s, strlen(s));
}

/* RFC 3986's unreserved characters, and those of keep. */
static void
req_enc(struct req_buf *b, const char *s, const char *keep)
{
	static const char	 hex[] = "0123456789ABCDEF";
	char			 e[3];
	u_char			 c;

	for (; *s != '\0'; s++) {
		c = (u_char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~' || (keep != NULL &&
		    strchr(keep, c) != NULL)) {
			req_add(b, s, 1);
			continue;
		}
		e[0] = '%';
		e[1] = hex[c >> 4];
		e[2] = hex[c & 0xf];
		req_add(b, e, 3);
	}
}

/*
 * The path template's own text: what a path may hold as it is (RFC 3986's
 * pchar and "/", a "%" that starts an escape), the rest percent-encoded.
 */
static void
req_literal(struct req_buf *b, const char *s, size_t len)
{
	static const char	 keep[] = "!$&'()*+,;=:@/";
	char			 c[2];
	size_t			 i;

	for (i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len &&
		    isxdigit((u_char)s[i + 1]) && isxdigit((u_char)s[i + 2])) {
			req_add(b, s + i, 1);
			continue;
		}
		c[0] = s[i];
		c[1] = '\0';
		req_enc(b, c, keep);
	}
}

/* A number in its shortest form that reads back the same. */
static char *
req_number(double d)
{
	char	*s;
	int	 digits;

	if (d == 0)
		return (xstrdup("0"));
	if (floor(d) == d && fabs(d) <= 9007199254740992.0) {
		xasprintf(&s, "%.0f", d);
		return (s);
	}
	for (digits = 15; digits < 17; digits++) {
		xasprintf(&s, "%.*g", digits, d);
		if (strtod(s, NULL) == d)
			return (s);
		free(s);
	}
	xasprintf(&s, "%.17g", d);
	return (s);
}

/* One value as text: a primitive as itself, anything else as JSON. */
static char *
req_text(const cJSON *v, int json)
{
	if (json)
		return (cJSON_PrintUnformatted(v));
	if (cJSON_IsString(v))
		return (xstrdup(v->valuestring));
	if (cJSON_IsNumber(v))
		return (req_number(v->valuedouble));
	if (cJSON_IsBool(v))
		return (xstrdup(cJSON_IsTrue(v) ? "true" : "false"));
	if (cJSON_IsNull(v))
		return (xstrdup(""));
	return (cJSON_PrintUnformatted(v));
}

/* How a value is expanded: as one, as a list, or as pairs. */
enum req_shape {
	REQ_ONE,
	REQ_LIST,
	REQ_PAIRS
};

static enum req_shape
req_shape(const struct openapi_param *p, const cJSON *v)
{
	if (p->json)
		return (REQ_ONE);
	if (cJSON_IsArray(v))
		return (REQ_LIST);
	if (cJSON_IsObject(v))
		return (REQ_PAIRS);
	return (REQ_ONE);
}

/*
 * The items of a list or pairs expanded: encoded (enc, keep), each pair
 * joined by kv ("=" or ","), items separated by sep, each item (or pair)
 * preceded by lead (a name, for a repeated one).
 */
static void
req_items(struct req_buf *b, const cJSON *v, int pairs, int enc,
    const char *keep, const char *kv, const char *sep, const char *lead)
{
	const cJSON	*c;
	char		*text;
	int		 first = 1;

	cJSON_ArrayForEach(c, v) {
		if (!first)
			req_adds(b, sep);
		first = 0;
		if (lead != NULL)
			req_adds(b, lead);
		if (pairs) {
			if (enc)
				req_enc(b, c->string, keep);
			else
				req_adds(b, c->string);
			req_adds(b, kv);
		}
		text = req_text(c, 0);
		if (enc)
			req_enc(b, text, keep);
		else
			req_adds(b, text);
		free(text);
	}
}

/* A path parameter's expansion, where its {name} stands. */
static void
req_path(struct req_buf *b, const struct openapi_param *p, const cJSON *v)
{
	enum req_shape	 shape = req_shape(p, v);
	int		 pairs = shape == REQ_PAIRS;
	const char	*kv = p->explode ? "=" : ",";
	struct req_buf	 lead = { 0 };
	char		*text;

	if (shape == REQ_ONE) {
		text = req_text(v, p->json);
		if (p->style == OPENAPI_STYLE_LABEL)
			req_adds(b, ".");
		else if (p->style == OPENAPI_STYLE_MATRIX) {
			req_adds(b, ";");
			req_enc(b, p->name, NULL);
			if (*text != '\0')
				req_adds(b, "=");
		}
		req_enc(b, text, NULL);
		free(text);
		return;
	}
	switch (p->style) {
	case OPENAPI_STYLE_LABEL:
		req_adds(b, ".");
		req_items(b, v, pairs, 1, NULL, kv, p->explode ? "." : ",",
		    NULL);
		break;
	case OPENAPI_STYLE_MATRIX:
		req_adds(&lead, ";");
		req_enc(&lead, p->name, NULL);
		req_adds(&lead, "=");
		if (p->explode && pairs)
			req_items(b, v, 1, 1, NULL, "=", "", ";");
		else if (p->explode)
			req_items(b, v, 0, 1, NULL, kv, "", lead.s);
		else {
			req_adds(b, lead.s);
			req_items(b, v, pairs, 1, NULL, ",", ",", NULL);
		}
		free(lead.s);
		break;
	default:
		req_items(b, v, pairs, 1, NULL, kv, ",", NULL);
		break;
	}
}

/* A query parameter's part of the query string (nothing if empty). */
static void
req_query(struct req_buf *b, const struct openapi_param *p, const cJSON *v)
{
	enum req_shape	 shape = req_shape(p, v);
	const char	*keep = p->reserved ? ":/?[]@!$&'()*+,;=" : NULL;
	const char	*sep;
	const cJSON	*c;
	struct req_buf	 name = { 0 }, lead = { 0 };
	char		*text;

	if (shape != REQ_ONE && cJSON_GetArraySize(v) == 0)
		return;
	if (b->len > 0)
		req_adds(b, "&");
	req_enc(&name, p->name, NULL);
	if (shape == REQ_ONE) {
		text = req_text(v, p->json);
		req_adds(b, name.s);
		req_adds(b, "=");
		req_enc(b, text, keep);
		free(text);
		free(name.s);
		return;
	}
	if (p->style == OPENAPI_STYLE_DEEP && shape == REQ_PAIRS) {
		/* name[key]=value: each key between the brackets */
		cJSON_ArrayForEach(c, v) {
			if (c != v->child)
				req_adds(b, "&");
			req_adds(b, name.s);
			req_adds(b, "%5B");
			req_enc(b, c->string, NULL);
			req_adds(b, "%5D=");
			text = req_text(c, 0);
			req_enc(b, text, keep);
			free(text);
		}
	} else if (p->explode && (p->style == OPENAPI_STYLE_FORM ||
	    p->style == OPENAPI_STYLE_DEEP || shape == REQ_LIST)) {
		if (shape == REQ_PAIRS)
			req_items(b, v, 1, 1, keep, "=", "&", NULL);
		else {
			req_adds(&lead, name.s);
			req_adds(&lead, "=");
			req_items(b, v, 0, 1, keep, "=", "&", lead.s);
		}
	} else {
		sep = p->style == OPENAPI_STYLE_SPACE ? "%20" :
		    p->style == OPENAPI_STYLE_PIPE ? "%7C" : ",";
		req_adds(b, name.s);
		req_adds(b, "=");
		req_items(b, v, shape == REQ_PAIRS, 1, keep, sep, sep, NULL);
	}
	free(lead.s);
	free(name.s);
}

/* A header value: no control characters (they would split the head). */
static int
req_header_ok(const char *s)
{
	for (; *s != '\0'; s++) {
		if (((u_char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return (0);
	}
	return (1);
}

static void
req_header_add(struct openapi_request *r, const char *name, char *value)
{
	r->headers = xreallocarray(r->headers, r->nheaders + 1,
	    sizeof *r->headers);
	r->headers[r->nheaders].name = xstrdup(name);
	r->headers[r->nheaders++].value = value;
}

static int
req_header(struct openapi_request *r, const struct openapi_param *p,
    const cJSON *v, char **cause)
{
	struct req_buf	b = { 0 };

	if (req_shape(p, v) == REQ_ONE)
		b.s = req_text(v, p->json);
	else
		req_items(&b, v, cJSON_IsObject(v), 0, NULL,
		    p->explode ? "=" : ",", ",", NULL);
	if (b.s == NULL)
		b.s = xstrdup("");
	if (!req_header_ok(b.s)) {
		xasprintf(cause, "argument '%s' cannot go in header %s: it has "
		    "a control character", p->arg, p->name);
		free(b.s);
		return (-1);
	}
	req_header_add(r, p->name, b.s);
	return (0);
}

/* One cookie's part of the Cookie header. */
static void
req_cookie(struct req_buf *b, const struct openapi_param *p, const cJSON *v)
{
	enum req_shape	 shape = req_shape(p, v);
	struct req_buf	 lead = { 0 };
	char		*text;

	if (b->len > 0)
		req_adds(b, "; ");
	if (shape == REQ_ONE) {
		text = req_text(v, p->json);
		req_enc(b, p->name, NULL);
		req_adds(b, "=");
		req_enc(b, text, NULL);
		free(text);
		return;
	}
	if (p->explode && shape == REQ_PAIRS)
		req_items(b, v, 1, 1, NULL, "=", "; ", NULL);
	else if (p->explode) {
		req_enc(&lead, p->name, NULL);
		req_adds(&lead, "=");
		req_items(b, v, 0, 1, NULL, "=", "; ", lead.s);
		free(lead.s);
	} else {
		req_enc(b, p->name, NULL);
		req_adds(b, "=");
		req_items(b, v, shape == REQ_PAIRS, 1, NULL, ",", ",", NULL);
	}
}

static const struct openapi_param *
req_param(const struct openapi_op *op, int in, const char *name, size_t len)
{
	size_t	i;

	for (i = 0; i < op->nparams; i++) {
		if (op->params[i].in == in && strlen(op->params[i].name) ==
		    len && strncmp(op->params[i].name, name, len) == 0)
			return (&op->params[i]);
	}
	return (NULL);
}

/* Each argument is one the tool has, given once. */
static int
req_check_args(const struct openapi_op *op, const cJSON *args, char **cause)
{
	const cJSON	*a, *b;
	size_t		 i;

	if (args != NULL && !cJSON_IsObject(args)) {
		*cause = xstrdup("arguments must be an object");
		return (-1);
	}
	cJSON_ArrayForEach(a, args) {
		for (i = 0; i < op->nparams; i++) {
			if (strcmp(op->params[i].arg, a->string) == 0)
				break;
		}
		if (i == op->nparams && (op->body == 0 ||
		    strcmp(a->string, OPENAPI_BODY_ARG) != 0)) {
			xasprintf(cause, "unknown argument '%s'", a->string);
			return (-1);
		}
		for (b = a->next; b != NULL; b = b->next) {
			if (strcmp(a->string, b->string) == 0) {
				xasprintf(cause, "argument '%s' is given "
				    "twice", a->string);
				return (-1);
			}
		}
	}
	for (i = 0; i < op->nparams; i++) {
		if (op->params[i].required && cJSON_GetObjectItemCaseSensitive(
		    args, op->params[i].arg) == NULL) {
			xasprintf(cause, "missing required argument '%s'",
			    op->params[i].arg);
			return (-1);
		}
	}
	if (op->body == 2 && cJSON_GetObjectItemCaseSensitive(args,
	    OPENAPI_BODY_ARG) == NULL) {
		xasprintf(cause, "missing required argument '%s' (the request "
		    "body)", OPENAPI_BODY_ARG);
		return (-1);
	}
	return (0);
}

int
openapi_request_build(const struct openapi_op *op, const char *base,
    const cJSON *args, struct openapi_request *r, char **cause)
{
	const struct openapi_param	*p;
	const cJSON			*v;
	struct req_buf			 url = { 0 }, query = { 0 };
	struct req_buf			 cookie = { 0 };
	const char			*t, *end;
	size_t				 i, blen;

	memset(r, 0, sizeof *r);
	if (req_check_args(op, args, cause) != 0)
		return (-1);
	r->method = op->method;

	blen = strlen(base);
	while (blen > 0 && base[blen - 1] == '/')
		blen--;
	req_add(&url, base, blen);
	for (t = op->path; *t != '\0'; t = end) {
		if (*t != '{' || (end = strchr(t, '}')) == NULL) {
			end = t + 1 + strcspn(t + 1, "{");
			req_literal(&url, t, (size_t)(end - t));
			continue;
		}
		p = req_param(op, OPENAPI_IN_PATH, t + 1,
		    (size_t)(end - t - 1));
		end++;
		if (p != NULL && (v = cJSON_GetObjectItemCaseSensitive(args,
		    p->arg)) != NULL)
			req_path(&url, p, v);
	}
	for (i = 0; i < op->nparams; i++) {
		p = &op->params[i];
		if ((v = cJSON_GetObjectItemCaseSensitive(args, p->arg)) ==
		    NULL)
			continue;
		switch (p->in) {
		case OPENAPI_IN_QUERY:
			req_query(&query, p, v);
			break;
		case OPENAPI_IN_HEADER:
			if (req_header(r, p, v, cause) != 0)
				goto fail;
			break;
		case OPENAPI_IN_COOKIE:
			req_cookie(&cookie, p, v);
			break;
		}
	}
	if (query.len > 0) {
		req_adds(&url, "?");
		req_add(&url, query.s, query.len);
	}
	r->url = url.s;
	if (cookie.s != NULL)
		req_header_add(r, "Cookie", cookie.s);
	req_header_add(r, "Accept", xstrdup("application/json, */*;q=0.5"));
	if (op->body != 0 && (v = cJSON_GetObjectItemCaseSensitive(args,
	    OPENAPI_BODY_ARG)) != NULL) {
		r->body = cJSON_PrintUnformatted(v);
		r->bodylen = strlen(r->body);
		req_header_add(r, "Content-Type", xstrdup(op->body_type));
	}
	free(query.s);
	return (0);

fail:
	free(url.s);
	free(query.s);
	free(cookie.s);
	openapi_request_clear(r);
	return (-1);
}

void
openapi_request_clear(struct openapi_request *r)
{
	size_t	i;

	for (i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->headers);
	free(r->url);
	free(r->body);
	memset(r, 0, sizeof *r);
}
