/*
 * Key sets. Each usable JWK becomes a jwt_key (jwt.c builds it; this file
 * only reads JSON), with its kid and, if the JWK says, the one alg it is
 * for. Usable: kty RSA, EC (P-256) or OKP (Ed25519), use absent or "sig",
 * key_ops absent or listing "verify".
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwks.h"
#include "jwt.h"
#include "xmalloc.h"

struct jwks_key {
	char		*kid;		/* NULL if the JWK has none */
	int		 alg;		/* enum jwt_alg; -1: any of its kty */
	struct jwt_key	*key;
};

struct jwks {
	struct jwks_key	*keys;
	size_t		 nkeys;
};

static const char *
jwks_string(const cJSON *jwk, const char *name)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(jwk, name);

	return (cJSON_IsString(v) ? v->valuestring : NULL);
}

/* A base64url member, decoded; NULL if absent or not base64url. */
static unsigned char *
jwks_bytes(const cJSON *jwk, const char *name, size_t *len)
{
	const char	*s = jwks_string(jwk, name);

	if (s == NULL)
		return (NULL);
	return (jwt_base64url_decode(s, strlen(s), len));
}

static int
jwks_for_verify(const cJSON *jwk)
{
	const cJSON	*ops, *op;
	const char	*use = jwks_string(jwk, "use");

	if (cJSON_GetObjectItemCaseSensitive(jwk, "use") != NULL &&
	    (use == NULL || strcmp(use, "sig") != 0))
		return (0);
	if ((ops = cJSON_GetObjectItemCaseSensitive(jwk, "key_ops")) == NULL)
		return (1);
	cJSON_ArrayForEach(op, ops) {
		if (cJSON_IsString(op) &&
		    strcmp(op->valuestring, "verify") == 0)
			return (1);
	}
	return (0);
}

/* The key of one JWK, or NULL if mcpd cannot use it. */
static struct jwt_key *
jwks_key(const cJSON *jwk)
{
	const char	*kty = jwks_string(jwk, "kty");
	const char	*crv = jwks_string(jwk, "crv");
	const char	*cause;
	unsigned char	*a = NULL, *b = NULL;
	size_t		 alen = 0, blen = 0;
	struct jwt_key	*key = NULL;

	if (kty == NULL || !jwks_for_verify(jwk))
		return (NULL);
	if (strcmp(kty, "RSA") == 0) {
		a = jwks_bytes(jwk, "n", &alen);
		b = jwks_bytes(jwk, "e", &blen);
		if (a != NULL && b != NULL)
			key = jwt_key_rsa(a, alen, b, blen, &cause);
	} else if (strcmp(kty, "EC") == 0 && crv != NULL) {
		a = jwks_bytes(jwk, "x", &alen);
		b = jwks_bytes(jwk, "y", &blen);
		if (a != NULL && b != NULL)
			key = jwt_key_ec(crv, a, alen, b, blen, &cause);
	} else if (strcmp(kty, "OKP") == 0 && crv != NULL) {
		if ((a = jwks_bytes(jwk, "x", &alen)) != NULL)
			key = jwt_key_okp(crv, a, alen, &cause);
	}
	free(a);
	free(b);
	return (key);
}

struct jwks *
jwks_parse(const char *text, size_t len, char **cause)
{
	struct jwks	*set;
	struct jwks_key	*k;
	cJSON		*json;
	const cJSON	*keys, *jwk;
	const char	*kid, *alg;
	struct jwt_key	*key;
	int		 a;

	if (len > JWKS_MAX_SIZE) {
		xasprintf(cause, "key set larger than %d bytes", JWKS_MAX_SIZE);
		return (NULL);
	}
	json = cJSON_ParseWithLength(text, len);
	keys = cJSON_GetObjectItemCaseSensitive(json, "keys");
	if (!cJSON_IsObject(json) || !cJSON_IsArray(keys)) {
		xasprintf(cause, "not a JWK set (a JSON object with an array "
		    "\"keys\")");
		cJSON_Delete(json);
		return (NULL);
	}
	set = xcalloc(1, sizeof *set);
	cJSON_ArrayForEach(jwk, keys) {
		if (set->nkeys == JWKS_MAX_KEYS)
			break;
		if (!cJSON_IsObject(jwk))
			continue;
		a = -1;
		if ((alg = jwks_string(jwk, "alg")) != NULL &&
		    (a = jwt_alg_parse(alg)) < 0)
			continue;	/* for an algorithm mcpd refuses */
		if ((key = jwks_key(jwk)) == NULL)
			continue;
		if (a >= 0 && jwt_alg_kty(a) != jwt_key_kty(key)) {
			jwt_key_free(key);
			continue;
		}
		set->keys = xreallocarray(set->keys, set->nkeys + 1,
		    sizeof *set->keys);
		k = &set->keys[set->nkeys++];
		kid = jwks_string(jwk, "kid");
		k->kid = kid != NULL ? xstrdup(kid) : NULL;
		k->alg = a;
		k->key = key;
	}
	cJSON_Delete(json);
	return (set);
}

struct jwks *
jwks_load(const char *path, char **cause)
{
	FILE		*f;
	char		*text;
	size_t		 len;
	struct jwks	*set;

	if ((f = fopen(path, "r")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	text = xmalloc(JWKS_MAX_SIZE + 1);
	len = fread(text, 1, JWKS_MAX_SIZE + 1, f);
	fclose(f);
	if ((set = jwks_parse(text, len, cause)) == NULL) {
		free(text);
		return (NULL);
	}
	free(text);
	return (set);
}

void
jwks_free(struct jwks *set)
{
	size_t	i;

	if (set == NULL)
		return;
	for (i = 0; i < set->nkeys; i++) {
		free(set->keys[i].kid);
		jwt_key_free(set->keys[i].key);
	}
	free(set->keys);
	free(set);
}

size_t
jwks_count(const struct jwks *set)
{
	return (set != NULL ? set->nkeys : 0);
}

const struct jwt_key *
jwks_next(const struct jwks *set, const char *kid, enum jwt_alg alg,
    size_t *i)
{
	const struct jwks_key	*k;

	for (; set != NULL && *i < set->nkeys; (*i)++) {
		k = &set->keys[*i];
		if (kid != NULL && (k->kid == NULL || strcmp(k->kid, kid) != 0))
			continue;
		if (k->alg >= 0 && k->alg != (int)alg)
			continue;
		if (jwt_key_kty(k->key) != jwt_alg_kty(alg))
			continue;
		(*i)++;
		return (k->key);
	}
	return (NULL);
}

int
jwks_has_kid(const struct jwks *set, const char *kid)
{
	size_t	i;

	for (i = 0; set != NULL && kid != NULL && i < set->nkeys; i++) {
		if (set->keys[i].kid != NULL &&
		    strcmp(set->keys[i].kid, kid) == 0)
			return (1);
	}
	return (0);
}
