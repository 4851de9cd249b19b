/*
 * Access tokens and key sets (src/jwt.c, src/jwks.c), what a client (a
 * token) or an authorization server (a key set) sends. Oracles:
 * - base64url decoding accepts exactly the canonical unpadded texts: what
 *   it decodes encodes back byte for byte, and a text of the alphabet it
 *   refuses has a length of 1 mod 4 or stray bits;
 * - jwt_parse accepts only what has the form of a compact JWS, with an
 *   accepted algorithm and a kid that is a string if present, and a
 *   payload that is a JSON object;
 * - a key set is parsed or refused, never more than JWKS_MAX_KEYS keys,
 *   and its keys never verify the input as a token (no private material,
 *   no accident).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "jwks.h"
#include "jwt.h"
#include "xmalloc.h"

static const char b64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *
ref_encode(const unsigned char *p, size_t len)
{
	char		*out = xmalloc(len * 4 / 3 + 4), *o = out;
	unsigned int	 v;
	size_t		 i;

	for (i = 0; i < len; i += 3) {
		v = p[i] << 16;
		if (i + 1 < len)
			v |= p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = b64_digits[(v >> 18) & 63];
		*o++ = b64_digits[(v >> 12) & 63];
		if (i + 1 < len)
			*o++ = b64_digits[(v >> 6) & 63];
		if (i + 2 < len)
			*o++ = b64_digits[v & 63];
	}
	*o = '\0';
	return (out);
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
	char			*text = fuzz_strndup(data, size), *back, *cause;
	size_t			 len = strlen(text), n, i = 0;
	unsigned char		*raw;
	struct jwt		*j;
	struct jwks		*set;
	const struct jwt_key	*key;
	const char		*why;

	if ((raw = jwt_base64url_decode(text, len, &n)) != NULL) {
		back = ref_encode(raw, n);
		FUZZ_CHECK(strcmp(back, text) == 0, "\"%s\" decodes to %zu "
		    "bytes that encode as \"%s\"", text, n, back);
		free(back);
		free(raw);
	} else if (len % 4 != 1 && strspn(text, b64_digits) == len) {
		/* Refused although of the alphabet: stray bits only. */
		FUZZ_CHECK(len > 0, "the empty text refused");
	}

	if ((j = jwt_parse(text, len, &why)) != NULL) {
		FUZZ_CHECK(jwt_looks_like(text, len), "parsed a non-JWS");
		FUZZ_CHECK(jwt_alg(j) < JWT_ALG_MAX, "alg %d", jwt_alg(j));
		FUZZ_CHECK(cJSON_IsObject(jwt_claims(j)), "claims not object");
	} else
		FUZZ_CHECK(why != NULL && *why != '\0', "no cause");

	if ((set = jwks_parse(text, len, &cause)) != NULL) {
		FUZZ_CHECK(jwks_count(set) <= JWKS_MAX_KEYS, "%zu keys",
		    jwks_count(set));
		if (j != NULL) {
			while ((key = jwks_next(set, NULL, jwt_alg(j), &i)) !=
			    NULL)
				FUZZ_CHECK(jwt_verify(j, key) != 0,
				    "a key set verified itself as a token");
		}
		jwks_free(set);
	} else
		free(cause);
	jwt_free(j);
	free(text);
	return (0);
}
