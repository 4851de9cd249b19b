/*
 * A reference JSON reader for the oracles: strict RFC 8259, written apart
 * from cJSON and jsonrpc.c so their answers can be checked against it.
 * Strings keep every byte (an escaped NUL too) with their length.
 */
#ifndef MCPD_REFJSON_H
#define MCPD_REFJSON_H

#include <stddef.h>

enum refjson_type {
	REFJSON_NULL,
	REFJSON_FALSE,
	REFJSON_TRUE,
	REFJSON_NUMBER,
	REFJSON_STRING,
	REFJSON_ARRAY,
	REFJSON_OBJECT
};

struct refjson {
	enum refjson_type	 type;
	double			 number;
	char			*str;		/* string: decoded, NUL-ended */
	size_t			 len;
	char			*key;		/* member of an object */
	size_t			 keylen;
	struct refjson		*child;		/* first element or member */
	struct refjson		*next;
};

/*
 * NULL unless the text is one JSON value, strict by the RFC, in valid
 * UTF-8, nested at most maxdepth deep, with no lone surrogate escape.
 */
struct refjson		*refjson_parse(const char *, size_t, int);
void			 refjson_free(struct refjson *);
/* The first member named name (which holds no NUL), or NULL. */
const struct refjson	*refjson_member(const struct refjson *, const char *);
int			 refjson_string_is(const struct refjson *, const char *,
			     size_t);

#endif
