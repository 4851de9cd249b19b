/*
 * The reference JSON reader. Deliberately plain: a recursive descent over
 * the RFC 8259 grammar, with its own UTF-8 decoding, so that it shares no
 * code (and no shortcut) with the reader under test.
 */
#include <stdlib.h>
#include <string.h>

#include "refjson.h"

struct refjson_in {
	const unsigned char	*p;
	const unsigned char	*end;
	int			 depth;
	int			 maxdepth;
};

static struct refjson	*refjson_value(struct refjson_in *);

static struct refjson *
refjson_new(enum refjson_type type)
{
	struct refjson	*v;

	if ((v = calloc(1, sizeof *v)) == NULL)
		abort();
	v->type = type;
	return (v);
}

void
refjson_free(struct refjson *v)
{
	struct refjson	*next;

	for (; v != NULL; v = next) {
		next = v->next;
		refjson_free(v->child);
		free(v->str);
		free(v->key);
		free(v);
	}
}

static void
refjson_space(struct refjson_in *in)
{
	while (in->p < in->end && (*in->p == ' ' || *in->p == '\t' ||
	    *in->p == '\n' || *in->p == '\r'))
		in->p++;
}

static int
refjson_literal(struct refjson_in *in, const char *word)
{
	size_t	len = strlen(word);

	if ((size_t)(in->end - in->p) < len || memcmp(in->p, word, len) != 0)
		return (-1);
	in->p += len;
	return (0);
}

/* Appends code point cp as UTF-8. */
static void
refjson_put(char *buf, size_t *len, unsigned long cp)
{
	if (cp < 0x80)
		buf[(*len)++] = (char)cp;
	else if (cp < 0x800) {
		buf[(*len)++] = (char)(0xc0 | (cp >> 6));
		buf[(*len)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		buf[(*len)++] = (char)(0xe0 | (cp >> 12));
		buf[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[(*len)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		buf[(*len)++] = (char)(0xf0 | (cp >> 18));
		buf[(*len)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		buf[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[(*len)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static int
refjson_hex4(struct refjson_in *in, unsigned long *out)
{
	unsigned long	v = 0;
	int		i, c;

	if (in->end - in->p < 4)
		return (-1);
	for (i = 0; i < 4; i++) {
		c = in->p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned long)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned long)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned long)(c - 'A' + 10);
		else
			return (-1);
	}
	in->p += 4;
	*out = v;
	return (0);
}

/* One raw (unescaped) UTF-8 sequence, validated the long way. */
static int
refjson_raw(struct refjson_in *in, unsigned long *out)
{
	unsigned long	cp, min;
	int		n, i;

	cp = *in->p;
	if (cp < 0x80)
		n = 0, min = 0;
	else if (cp >= 0xc2 && cp <= 0xdf)
		n = 1, min = 0x80, cp &= 0x1f;
	else if (cp >= 0xe0 && cp <= 0xef)
		n = 2, min = 0x800, cp &= 0x0f;
	else if (cp >= 0xf0 && cp <= 0xf4)
		n = 3, min = 0x10000, cp &= 0x07;
	else
		return (-1);
	if (in->end - in->p <= n)
		return (-1);
	for (i = 1; i <= n; i++) {
		if ((in->p[i] & 0xc0) != 0x80)
			return (-1);
		cp = (cp << 6) | (in->p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return (-1);
	in->p += n + 1;
	*out = cp;
	return (0);
}

static int
refjson_string(struct refjson_in *in, char **sp, size_t *lenp)
{
	unsigned long	 cp, lo;
	char		*buf;
	size_t		 len = 0;

	in->p++;	/* the opening quote */
	/* Decoding never grows the text. */
	if ((buf = malloc((size_t)(in->end - in->p) + 1)) == NULL)
		abort();
	for (;;) {
		if (in->p >= in->end || *in->p < 0x20)
			goto bad;
		if (*in->p == '"') {
			in->p++;
			break;
		}
		if (*in->p != '\\') {
			if (refjson_raw(in, &cp) != 0)
				goto bad;
			refjson_put(buf, &len, cp);
			continue;
		}
		if (++in->p >= in->end)
			goto bad;
		switch (*in->p++) {
		case '"':
			buf[len++] = '"';
			break;
		case '\\':
			buf[len++] = '\\';
			break;
		case '/':
			buf[len++] = '/';
			break;
		case 'b':
			buf[len++] = '\b';
			break;
		case 'f':
			buf[len++] = '\f';
			break;
		case 'n':
			buf[len++] = '\n';
			break;
		case 'r':
			buf[len++] = '\r';
			break;
		case 't':
			buf[len++] = '\t';
			break;
		case 'u':
			if (refjson_hex4(in, &cp) != 0)
				goto bad;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				goto bad;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (refjson_literal(in, "\\u") != 0 ||
				    refjson_hex4(in, &lo) != 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					goto bad;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			refjson_put(buf, &len, cp);
			break;
		default:
			goto bad;
		}
	}
	buf[len] = '\0';
	*sp = buf;
	*lenp = len;
	return (0);
bad:
	free(buf);
	return (-1);
}

static int
refjson_digits(struct refjson_in *in)
{
	const unsigned char	*start = in->p;

	while (in->p < in->end && *in->p >= '0' && *in->p <= '9')
		in->p++;
	return (in->p > start ? 0 : -1);
}

static struct refjson *
refjson_number(struct refjson_in *in)
{
	const unsigned char	*start = in->p;
	struct refjson		*v;
	char			*lexeme;

	if (in->p < in->end && *in->p == '-')
		in->p++;
	if (in->p < in->end && *in->p == '0')
		in->p++;
	else if (refjson_digits(in) != 0)
		return (NULL);
	if (in->p < in->end && *in->p == '.') {
		in->p++;
		if (refjson_digits(in) != 0)
			return (NULL);
	}
	if (in->p < in->end && (*in->p == 'e' || *in->p == 'E')) {
		in->p++;
		if (in->p < in->end && (*in->p == '+' || *in->p == '-'))
			in->p++;
		if (refjson_digits(in) != 0)
			return (NULL);
	}
	if ((lexeme = strndup((const char *)start,
	    (size_t)(in->p - start))) == NULL)
		abort();
	v = refjson_new(REFJSON_NUMBER);
	v->number = strtod(lexeme, NULL);
	free(lexeme);
	return (v);
}

static struct refjson *
refjson_container(struct refjson_in *in, int object)
{
	struct refjson	*v, *item, **tail;
	char		*key = NULL;
	size_t		 keylen = 0;

	if (++in->depth > in->maxdepth)
		return (NULL);
	in->p++;
	v = refjson_new(object ? REFJSON_OBJECT : REFJSON_ARRAY);
	tail = &v->child;
	refjson_space(in);
	if (in->p < in->end && *in->p == (object ? '}' : ']')) {
		in->p++;
		in->depth--;
		return (v);
	}
	for (;;) {
		refjson_space(in);
		if (object) {
			if (in->p >= in->end || *in->p != '"' ||
			    refjson_string(in, &key, &keylen) != 0)
				goto bad;
			refjson_space(in);
			if (in->p >= in->end || *in->p++ != ':')
				goto bad;
		}
		if ((item = refjson_value(in)) == NULL)
			goto bad;
		item->key = key;
		item->keylen = keylen;
		key = NULL;
		*tail = item;
		tail = &item->next;
		refjson_space(in);
		if (in->p >= in->end)
			goto bad;
		if (*in->p == ',') {
			in->p++;
			continue;
		}
		if (*in->p++ != (object ? '}' : ']'))
			goto bad;
		break;
	}
	in->depth--;
	return (v);
bad:
	free(key);
	refjson_free(v);
	return (NULL);
}

static struct refjson *
refjson_value(struct refjson_in *in)
{
	struct refjson	*v;

	refjson_space(in);
	if (in->p >= in->end)
		return (NULL);
	switch (*in->p) {
	case '{':
		return (refjson_container(in, 1));
	case '[':
		return (refjson_container(in, 0));
	case '"':
		v = refjson_new(REFJSON_STRING);
		if (refjson_string(in, &v->str, &v->len) != 0) {
			free(v);
			return (NULL);
		}
		return (v);
	case 'n':
		return (refjson_literal(in, "null") == 0 ?
		    refjson_new(REFJSON_NULL) : NULL);
	case 't':
		return (refjson_literal(in, "true") == 0 ?
		    refjson_new(REFJSON_TRUE) : NULL);
	case 'f':
		return (refjson_literal(in, "false") == 0 ?
		    refjson_new(REFJSON_FALSE) : NULL);
	default:
		return (refjson_number(in));
	}
}

struct refjson *
refjson_parse(const char *text, size_t len, int maxdepth)
{
	struct refjson_in	 in;
	struct refjson		*v;

	in.p = (const unsigned char *)text;
	in.end = in.p + len;
	in.depth = 0;
	in.maxdepth = maxdepth;
	if ((v = refjson_value(&in)) == NULL)
		return (NULL);
	refjson_space(&in);
	if (in.p != in.end) {
		refjson_free(v);
		return (NULL);
	}
	return (v);
}

const struct refjson *
refjson_member(const struct refjson *v, const char *name)
{
	const struct refjson	*m;

	if (v == NULL || v->type != REFJSON_OBJECT)
		return (NULL);
	for (m = v->child; m != NULL; m = m->next) {
		if (m->keylen == strlen(name) && memcmp(m->key, name,
		    m->keylen) == 0)
			return (m);
	}
	return (NULL);
}

int
refjson_string_is(const struct refjson *v, const char *s, size_t len)
{
	return (v != NULL && v->type == REFJSON_STRING && v->len == len &&
	    memcmp(v->str, s, len) == 0);
}
