/*
 * JSON Web Key Sets (RFC 7517, 5): the public keys tokens are verified
 * with. A set is parsed from JSON text once and then only read; keys mcpd
 * cannot use (private members aside, other types, curves or uses) are left
 * out, not errors, since an authorization server's set may hold keys for
 * others.
 */
#ifndef MCPD_JWKS_H
#define MCPD_JWKS_H

#include <stddef.h>

#include "jwt.h"

struct jwks;

/* The largest key set read or fetched, and the most keys kept of one. */
#define JWKS_MAX_SIZE	(256 * 1024)
#define JWKS_MAX_KEYS	64

/*
 * A set from its JSON text, or NULL with *cause (allocated) when the text
 * is no key set. A set with no usable key is a set, empty.
 */
struct jwks	*jwks_parse(const char *, size_t, char **);
struct jwks	*jwks_load(const char *, char **);
void		 jwks_free(struct jwks *);
size_t		 jwks_count(const struct jwks *);
/*
 * Whether kid (NULL: any) names a key of the set that may verify alg; the
 * keys that may, in order, through *i (start at 0): NULL after the last.
 */
const struct jwt_key *jwks_next(const struct jwks *, const char *,
		     enum jwt_alg, size_t *);
int		 jwks_has_kid(const struct jwks *, const char *);

#endif
