/*
 * JWS compact tokens and their signatures, on OpenSSL 3's EVP interface.
 * Nothing here is hand-written cryptography: keys are built with
 * EVP_PKEY_fromdata (RSA, EC) or as raw Ed25519 keys, and checked with
 * EVP_DigestVerify; the only conversion is the one JWS requires for
 * ES256, whose signature is r || s where OpenSSL wants DER.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "base64.h"
#include "jwt.h"
#include "xmalloc.h"

#define JWT_RSA_MIN_BITS	2048
#define JWT_P256_LEN		32

struct jwt_key {
	enum jwt_kty	 kty;
	EVP_PKEY	*pkey;
};

struct jwt {
	enum jwt_alg	 alg;
	char		*kid;
	char		*typ;
	cJSON		*header;
	cJSON		*claims;
	const char	*input;		/* header.payload, in the token */
	size_t		 inputlen;
	char		*copy;		/* the token, as parsed */
	unsigned char	*sig;
	size_t		 siglen;
};

static const char *const jwt_alg_names[JWT_ALG_MAX] = {
	[JWT_RS256] = "RS256",
	[JWT_PS256] = "PS256",
	[JWT_ES256] = "ES256",
	[JWT_EDDSA] = "EdDSA",
};

int
jwt_alg_parse(const char *name)
{
	int	i;

	for (i = 0; i < JWT_ALG_MAX; i++) {
		if (strcmp(jwt_alg_names[i], name) == 0)
			return (i);
	}
	return (-1);
}

const char *
jwt_alg_name(enum jwt_alg alg)
{
	return (alg < JWT_ALG_MAX ? jwt_alg_names[alg] : "?");
}

enum jwt_kty
jwt_alg_kty(enum jwt_alg alg)
{
	switch (alg) {
	case JWT_ES256:
		return (JWT_KTY_EC);
	case JWT_EDDSA:
		return (JWT_KTY_OKP);
	default:
		return (JWT_KTY_RSA);
	}
}

/* base64.c's URL-safe decoder, within the bound a JOSE part may have. */
unsigned char *
jwt_base64url_decode(const char *s, size_t len, size_t *outlen)
{
	unsigned char	*out;

	if (len > JWT_B64_MAX || base64_decode(s, len, 1, &out, outlen) != 0)
		return (NULL);
	return (out);
}

static struct jwt_key *
jwt_key_new(enum jwt_kty kty, EVP_PKEY *pkey)
{
	struct jwt_key	*key;

	key = xmalloc(sizeof *key);
	key->kty = kty;
	key->pkey = pkey;
	return (key);
}

/* A key built from parameters: RSA or EC. */
static EVP_PKEY *
jwt_key_fromdata(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM	*params;
	EVP_PKEY_CTX	*ctx, *check;
	EVP_PKEY	*pkey = NULL;

	if ((params = OSSL_PARAM_BLD_to_param(bld)) == NULL)
		return (NULL);
	ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pkey = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	if (pkey == NULL)
		return (NULL);
	/* A point off the curve, an even modulus: refused here, once. */
	check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
	if (check == NULL || EVP_PKEY_public_check(check) != 1) {
		EVP_PKEY_free(pkey);
		pkey = NULL;
	}
	EVP_PKEY_CTX_free(check);
	return (pkey);
}

struct jwt_key *
jwt_key_rsa(const unsigned char *n, size_t nlen, const unsigned char *e,
    size_t elen, const char **cause)
{
	OSSL_PARAM_BLD	*bld;
	BIGNUM		*bn = NULL, *be = NULL;
	EVP_PKEY	*pkey = NULL;

	if (nlen == 0 || elen == 0 || elen > 8 || nlen > 2048) {
		*cause = "RSA key: bad n or e";
		return (NULL);
	}
	bld = OSSL_PARAM_BLD_new();
	bn = BN_bin2bn(n, (int)nlen, NULL);
	be = BN_bin2bn(e, (int)elen, NULL);
	if (bld != NULL && bn != NULL && be != NULL &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) == 1 &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) == 1)
		pkey = jwt_key_fromdata("RSA", bld);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	if (pkey == NULL) {
		*cause = "RSA key: not a valid public key";
		return (NULL);
	}
	if (EVP_PKEY_get_bits(pkey) < JWT_RSA_MIN_BITS) {
		EVP_PKEY_free(pkey);
		*cause = "RSA key: shorter than 2048 bits";
		return (NULL);
	}
	return (jwt_key_new(JWT_KTY_RSA, pkey));
}

struct jwt_key *
jwt_key_ec(const char *crv, const unsigned char *x, size_t xlen,
    const unsigned char *y, size_t ylen, const char **cause)
{
	OSSL_PARAM_BLD	*bld;
	unsigned char	 point[1 + 2 * JWT_P256_LEN];
	EVP_PKEY	*pkey = NULL;

	if (strcmp(crv, "P-256") != 0) {
		*cause = "EC key: only crv P-256 is supported";
		return (NULL);
	}
	if (xlen != JWT_P256_LEN || ylen != JWT_P256_LEN) {
		*cause = "EC key: x and y must be 32 bytes";
		return (NULL);
	}
	point[0] = 0x04;	/* uncompressed (SEC 1) */
	memcpy(point + 1, x, JWT_P256_LEN);
	memcpy(point + 1 + JWT_P256_LEN, y, JWT_P256_LEN);
	if ((bld = OSSL_PARAM_BLD_new()) != NULL &&
	    OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
	    "prime256v1", 0) == 1 &&
	    OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY,
	    point, sizeof point) == 1)
		pkey = jwt_key_fromdata("EC", bld);
	OSSL_PARAM_BLD_free(bld);
	if (pkey == NULL) {
		*cause = "EC key: not a point of P-256";
		return (NULL);
	}
	return (jwt_key_new(JWT_KTY_EC, pkey));
}

struct jwt_key *
jwt_key_okp(const char *crv, const unsigned char *x, size_t xlen,
    const char **cause)
{
	EVP_PKEY	*pkey;

	if (strcmp(crv, "Ed25519") != 0) {
		*cause = "OKP key: only crv Ed25519 is supported";
		return (NULL);
	}
	if (xlen != 32 || (pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519,
	    NULL, x, xlen)) == NULL) {
		*cause = "OKP key: x must be a 32-byte Ed25519 key";
		return (NULL);
	}
	return (jwt_key_new(JWT_KTY_OKP, pkey));
}

enum jwt_kty
jwt_key_kty(const struct jwt_key *key)
{
	return (key->kty);
}

void
jwt_key_free(struct jwt_key *key)
{
	if (key == NULL)
		return;
	EVP_PKEY_free(key->pkey);
	free(key);
}

/* A character of the base64url alphabet. */
static int
jwt_b64_char(char ch)
{
	return ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_');
}

int
jwt_looks_like(const char *s, size_t len)
{
	size_t	i, dots = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '.')
			dots++;
		else if (!jwt_b64_char(s[i]))
			return (0);
	}
	return (dots == 2);
}

/*
 * Whether JSON text holds a NUL byte, raw or escaped (\u0000): cJSON
 * keeps strings as C strings, so such a string would be read cut short
 * ("https://as.example\u0000.evil" as the issuer "https://as.example").
 * A backslash takes the byte after it along, so "\\u0000" is text;
 * outside strings a backslash is malformed JSON anyway.
 */
int
jwt_json_has_nul(const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		if (s[i] == '\0')
			return (1);
		if (s[i] != '\\')
			continue;
		if (len - i >= 6 && memcmp(s + i + 1, "u0000", 5) == 0)
			return (1);
		i++;
	}
	return (0);
}

/* A base64url part holding a JSON object; NULL with *cause otherwise. */
static cJSON *
jwt_part_json(const char *s, size_t len, const char *what,
    const char **cause)
{
	unsigned char	*raw;
	size_t		 n;
	cJSON		*json;

	*cause = what;
	if ((raw = jwt_base64url_decode(s, len, &n)) == NULL)
		return (NULL);
	if (jwt_json_has_nul((const char *)raw, n)) {
		free(raw);
		*cause = "the token holds a NUL character";
		return (NULL);
	}
	json = cJSON_ParseWithLength((const char *)raw, n);
	free(raw);
	if (json != NULL && !cJSON_IsObject(json)) {
		cJSON_Delete(json);
		return (NULL);
	}
	return (json);
}

struct jwt *
jwt_parse(const char *token, size_t len, const char **cause)
{
	struct jwt	*j;
	const char	*dot1, *dot2, *end = token + len;
	const cJSON	*alg, *kid, *crit, *typ;
	int		 a;

	if (!jwt_looks_like(token, len)) {
		*cause = "not a compact JWS";
		return (NULL);
	}
	dot1 = memchr(token, '.', len);
	dot2 = memchr(dot1 + 1, '.', end - dot1 - 1);
	j = xcalloc(1, sizeof *j);
	j->copy = xmalloc(len + 1);
	memcpy(j->copy, token, len);
	j->copy[len] = '\0';
	j->input = j->copy;
	j->inputlen = dot2 - token;
	if ((j->header = jwt_part_json(token, dot1 - token,
	    "the JOSE header is not a JSON object", cause)) == NULL)
		goto fail;
	alg = cJSON_GetObjectItemCaseSensitive(j->header, "alg");
	if (!cJSON_IsString(alg)) {
		*cause = "the JOSE header has no alg";
		goto fail;
	}
	if ((a = jwt_alg_parse(alg->valuestring)) < 0) {
		*cause = "alg not accepted (RS256, PS256, ES256, EdDSA only)";
		goto fail;
	}
	j->alg = a;
	crit = cJSON_GetObjectItemCaseSensitive(j->header, "crit");
	if (crit != NULL) {
		*cause = "the JOSE header has crit, which mcpd does not know";
		goto fail;
	}
	kid = cJSON_GetObjectItemCaseSensitive(j->header, "kid");
	if (kid != NULL && !cJSON_IsString(kid)) {
		*cause = "kid is not a string";
		goto fail;
	}
	if (kid != NULL)
		j->kid = xstrdup(kid->valuestring);
	typ = cJSON_GetObjectItemCaseSensitive(j->header, "typ");
	if (typ != NULL && !cJSON_IsString(typ)) {
		*cause = "typ is not a string";
		goto fail;
	}
	if (typ != NULL)
		j->typ = xstrdup(typ->valuestring);
	if ((j->claims = jwt_part_json(dot1 + 1, dot2 - dot1 - 1,
	    "the payload is not a JSON object", cause)) == NULL)
		goto fail;
	j->sig = jwt_base64url_decode(dot2 + 1, end - dot2 - 1, &j->siglen);
	if (j->sig == NULL || j->siglen == 0) {
		*cause = "the signature is not base64url";
		goto fail;
	}
	return (j);

fail:
	jwt_free(j);
	return (NULL);
}

void
jwt_free(struct jwt *j)
{
	if (j == NULL)
		return;
	free(j->kid);
	free(j->typ);
	cJSON_Delete(j->header);
	cJSON_Delete(j->claims);
	free(j->copy);
	free(j->sig);
	free(j);
}

enum jwt_alg
jwt_alg(const struct jwt *j)
{
	return (j->alg);
}

const char *
jwt_kid(const struct jwt *j)
{
	return (j->kid);
}

const char *
jwt_typ(const struct jwt *j)
{
	return (j->typ);
}

const cJSON *
jwt_claims(const struct jwt *j)
{
	return (j->claims);
}

/* JWS's ES256 signature, r || s, as the DER ECDSA-Sig-Value OpenSSL takes. */
static unsigned char *
jwt_es256_der(const unsigned char *sig, size_t siglen, size_t *derlen)
{
	ECDSA_SIG	*es;
	BIGNUM		*r, *s;
	unsigned char	*der = NULL, *p;
	int		 n;

	if (siglen != 2 * JWT_P256_LEN)
		return (NULL);
	if ((es = ECDSA_SIG_new()) == NULL)
		return (NULL);
	r = BN_bin2bn(sig, JWT_P256_LEN, NULL);
	s = BN_bin2bn(sig + JWT_P256_LEN, JWT_P256_LEN, NULL);
	if (r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return (NULL);
	}
	if ((n = i2d_ECDSA_SIG(es, NULL)) > 0) {
		der = p = xmalloc(n);
		if (i2d_ECDSA_SIG(es, &p) != n) {
			free(der);
			der = NULL;
		}
		*derlen = n;
	}
	ECDSA_SIG_free(es);
	return (der);
}

int
jwt_verify(const struct jwt *j, const struct jwt_key *key)
{
	EVP_MD_CTX	*md;
	EVP_PKEY_CTX	*pctx = NULL;
	const EVP_MD	*digest = EVP_sha256();
	const unsigned char *sig = j->sig;
	unsigned char	*der = NULL;
	size_t		 siglen = j->siglen;
	int		 ok = 0;

	if (key->kty != jwt_alg_kty(j->alg))
		return (-1);
	if (j->alg == JWT_ES256) {
		if ((der = jwt_es256_der(j->sig, j->siglen, &siglen)) == NULL)
			return (-1);
		sig = der;
	}
	if (j->alg == JWT_EDDSA)
		digest = NULL;	/* Ed25519 hashes by itself */
	if ((md = EVP_MD_CTX_new()) == NULL)
		goto out;
	if (EVP_DigestVerifyInit(md, &pctx, digest, NULL, key->pkey) != 1)
		goto out;
	if (j->alg == JWT_PS256 &&
	    (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx,
	    RSA_PSS_SALTLEN_DIGEST) != 1 ||
	    EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) != 1))
		goto out;
	ok = EVP_DigestVerify(md, sig, siglen,
	    (const unsigned char *)j->input, j->inputlen) == 1;
out:
	EVP_MD_CTX_free(md);
	free(der);
	return (ok ? 0 : -1);
}

void
jwt_sha256(const void *data, size_t len, unsigned char out[JWT_SHA256_LEN])
{
	unsigned int	n;

	if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1)
		memset(out, 0, JWT_SHA256_LEN);
}

int
jwt_equal(const void *a, const void *b, size_t len)
{
	return (CRYPTO_memcmp(a, b, len) == 0);
}
