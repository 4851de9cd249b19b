/*
 * Unit tests for jwt.c and jwks.c: base64url, the form of a token, each
 * algorithm verified with keys this test makes with OpenSSL (and signs
 * with: the test may, the product only verifies), the algorithms refused
 * by name, a signature of another key or of changed claims refused, and
 * key sets: usable keys kept, the others left out, kid and alg matched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "unit.h"

#include "base64.h"
#include "jwks.h"
#include "jwt.h"
#include "xmalloc.h"

/* ---------------------------------------------------------------------
 * What an authorization server does: keys, JWKs, signatures.
 */

static char *
b64url(const unsigned char *p, size_t len)
{
	return (base64_encode(p, len, 1));
}

static char *
b64url_str(const char *s)
{
	return (base64_encode(s, strlen(s), 1));
}

static char *
b64url_bn(EVP_PKEY *pkey, const char *name, int pad)
{
	BIGNUM		*bn = NULL;
	unsigned char	 buf[512];
	int		 n;
	char		*s;

	ck_assert_int_eq(EVP_PKEY_get_bn_param(pkey, name, &bn), 1);
	n = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
	ck_assert_int_gt(n, 0);
	s = b64url(buf, n);
	BN_free(bn);
	return (s);
}

static EVP_PKEY *
keygen(enum jwt_kty kty)
{
	EVP_PKEY	*pkey;

	if (kty == JWT_KTY_RSA)
		pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	else if (kty == JWT_KTY_EC)
		pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	else
		pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	ck_assert_ptr_nonnull(pkey);
	return (pkey);
}

/* The public JWK of pkey, as JSON text (allocated). */
static char *
jwk(EVP_PKEY *pkey, enum jwt_kty kty, const char *kid, const char *alg)
{
	char		*a, *b, *s, extra[128];
	unsigned char	 raw[32];
	size_t		 len = sizeof raw;

	snprintf(extra, sizeof extra, "\"kid\":\"%s\"%s%s%s", kid,
	    alg != NULL ? ",\"alg\":\"" : "", alg != NULL ? alg : "",
	    alg != NULL ? "\"" : "");
	if (kty == JWT_KTY_RSA) {
		a = b64url_bn(pkey, OSSL_PKEY_PARAM_RSA_N, 0);
		b = b64url_bn(pkey, OSSL_PKEY_PARAM_RSA_E, 0);
		xasprintf(&s, "{\"kty\":\"RSA\",%s,\"n\":\"%s\",\"e\":\"%s\"}",
		    extra, a, b);
	} else if (kty == JWT_KTY_EC) {
		a = b64url_bn(pkey, OSSL_PKEY_PARAM_EC_PUB_X, 32);
		b = b64url_bn(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
		xasprintf(&s, "{\"kty\":\"EC\",\"crv\":\"P-256\",%s,"
		    "\"x\":\"%s\",\"y\":\"%s\"}", extra, a, b);
	} else {
		ck_assert_int_eq(EVP_PKEY_get_raw_public_key(pkey, raw, &len),
		    1);
		a = b64url(raw, len);
		b = NULL;
		xasprintf(&s, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",%s,"
		    "\"x\":\"%s\"}", extra, a);
	}
	free(a);
	free(b);
	return (s);
}

/* A compact JWS of payload signed by pkey with alg. */
static char *
sign(EVP_PKEY *pkey, const char *alg, const char *kid, const char *payload)
{
	EVP_MD_CTX	*md = EVP_MD_CTX_new();
	EVP_PKEY_CTX	*pctx;
	const EVP_MD	*digest = EVP_sha256();
	unsigned char	 sig[512], raw[64], *p;
	size_t		 siglen = sizeof sig;
	char		*header, *h, *b, *input, *s, *tok;
	ECDSA_SIG	*es;
	const BIGNUM	*r, *ss;
	const unsigned char *cp;

	xasprintf(&header, "{\"alg\":\"%s\",\"kid\":\"%s\"}", alg, kid);
	h = b64url_str(header);
	b = b64url_str(payload);
	xasprintf(&input, "%s.%s", h, b);
	if (strcmp(alg, "EdDSA") == 0)
		digest = NULL;
	ck_assert_int_eq(EVP_DigestSignInit(md, &pctx, digest, NULL, pkey), 1);
	if (strcmp(alg, "PS256") == 0) {
		EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
		EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
	}
	ck_assert_int_eq(EVP_DigestSign(md, sig, &siglen,
	    (unsigned char *)input, strlen(input)), 1);
	p = sig;
	if (strcmp(alg, "ES256") == 0) {
		cp = sig;
		es = d2i_ECDSA_SIG(NULL, &cp, (long)siglen);
		ck_assert_ptr_nonnull(es);
		ECDSA_SIG_get0(es, &r, &ss);
		BN_bn2binpad(r, raw, 32);
		BN_bn2binpad(ss, raw + 32, 32);
		ECDSA_SIG_free(es);
		p = raw;
		siglen = 64;
	}
	s = b64url(p, siglen);
	xasprintf(&tok, "%s.%s", input, s);
	EVP_MD_CTX_free(md);
	free(header);
	free(h);
	free(b);
	free(input);
	free(s);
	return (tok);
}

static struct jwks *
set_of(const char *members)
{
	struct jwks	*set;
	char		*text, *cause = NULL;

	xasprintf(&text, "{\"keys\":[%s]}", members);
	set = jwks_parse(text, strlen(text), &cause);
	ck_assert_msg(set != NULL, "jwks_parse: %s", cause);
	free(text);
	return (set);
}

/* Whether some key of set verifies tok. */
static int
verifies(const struct jwks *set, const char *tok)
{
	struct jwt		*j;
	const struct jwt_key	*key;
	const char		*cause;
	size_t			 i = 0;
	int			 ok = 0;

	if ((j = jwt_parse(tok, strlen(tok), &cause)) == NULL)
		return (0);
	while (!ok && (key = jwks_next(set, jwt_kid(j), jwt_alg(j),
	    &i)) != NULL)
		ok = jwt_verify(j, key) == 0;
	jwt_free(j);
	return (ok);
}

/* ---------------------------------------------------------------------
 * Tests.
 */

START_TEST(test_base64url)
{
	unsigned char	*out;
	size_t		 len;

	out = jwt_base64url_decode("aGVsbG8", 7, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(memcmp(out, "hello", 5), 0);
	free(out);
	out = jwt_base64url_decode("", 0, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(len, 0);
	free(out);
	out = jwt_base64url_decode("-_8", 3, &len);	/* fb ff */
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(len, 2);
	ck_assert_uint_eq(out[0], 0xfb);
	ck_assert_uint_eq(out[1], 0xff);
	free(out);
	/* Padding, the standard alphabet, a lone digit, stray bits. */
	ck_assert_ptr_null(jwt_base64url_decode("aGVsbG8=", 8, &len));
	ck_assert_ptr_null(jwt_base64url_decode("a+/b", 4, &len));
	ck_assert_ptr_null(jwt_base64url_decode("aGVsb", 5, &len));
	ck_assert_ptr_null(jwt_base64url_decode("aGVsbG9", 7, &len));
}
END_TEST

START_TEST(test_algorithms)
{
	ck_assert_int_eq(jwt_alg_parse("RS256"), JWT_RS256);
	ck_assert_int_eq(jwt_alg_parse("PS256"), JWT_PS256);
	ck_assert_int_eq(jwt_alg_parse("ES256"), JWT_ES256);
	ck_assert_int_eq(jwt_alg_parse("EdDSA"), JWT_EDDSA);
	ck_assert_int_eq(jwt_alg_parse("none"), -1);
	ck_assert_int_eq(jwt_alg_parse("HS256"), -1);
	ck_assert_int_eq(jwt_alg_parse("HS512"), -1);
	ck_assert_int_eq(jwt_alg_parse("rs256"), -1);
	ck_assert_int_eq(jwt_alg_parse("RS384"), -1);
}
END_TEST

static const char *const bad_tokens[] = {
	"",
	"abc",
	"a.b",
	"a.b.c.d",
	"e30.e30.",			/* {} header: no alg */
	"eyJhbGciOiJub25lIn0.e30.",	/* alg none, empty signature */
	"eyJhbGciOiJub25lIn0.e30.AAAA",	/* alg none */
	"eyJhbGciOiJIUzI1NiJ9.e30.AAAA",	/* HS256 */
	"eyJhbGciOiJSUzI1NiJ9.W10.AAAA",	/* payload [] */
	"eyJhbGciOiJSUzI1NiJ9.e30",	/* two parts */
	"eyJhbGciOiJSUzI1NiJ9.e30.",	/* no signature */
	"eyJhbGciOiJSUzI1NiIsImNyaXQiOlsieCJdfQ.e30.AAAA", /* crit */
	"eyJhbGciOiJSUzI1NiIsImtpZCI6MX0.e30.AAAA",	/* kid 1 */
	"eyJhbGciOiJSUzI1NiJ9.e30.AA+A",	/* not base64url */
	"W10.e30.AAAA",			/* header [] */
	"eyJhbGciOiJSUzI1NiIsInR5cCI6MX0.e30.AAAA",	/* typ 1 */
	/* A NUL, escaped or raw, in a claim or the header. */
	"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhXHUwMDAwYiJ9.AAAA",
	"eyJhbGciOiJSUzI1NiIsImtpZCI6ImtcdTAwMDB4In0.e30.AAAA",
	"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhACJ9.AAAA",
};

START_TEST(test_bad_form)
{
	const char	*tok = bad_tokens[_i], *cause = NULL;

	ck_assert_ptr_null(jwt_parse(tok, strlen(tok), &cause));
	ck_assert_ptr_nonnull(cause);
}
END_TEST

/* A NUL, raw or escaped, anywhere cJSON would keep it in a string. */
START_TEST(test_json_nul)
{
#define HAS_NUL(s) jwt_json_has_nul(s, sizeof s - 1)
	ck_assert(HAS_NUL("{\"a\":\"x\\u0000\"}"));
	ck_assert(HAS_NUL("{\"a\\u0000\":1}"));
	ck_assert(HAS_NUL("{\"a\":\"x\0\"}"));
	ck_assert(HAS_NUL("\\u0000"));
	ck_assert(!HAS_NUL("{\"a\":\"x\\\\u0000\"}"));	/* \\u0000: text */
	ck_assert(HAS_NUL("{\"a\":\"\\u00000\"}"));	/* then a 0 */
	ck_assert(!HAS_NUL("{\"a\":\"\\u0001\\\"\\u000\"}"));
	ck_assert(!HAS_NUL("\\u000"));
	ck_assert(!HAS_NUL("\\"));
#undef HAS_NUL
}
END_TEST

/* typ is kept for auth.c's policy (token_type). */
START_TEST(test_typ)
{
	const char	*cause;
	char		*h, *tok;
	struct jwt	*j;

	h = b64url_str("{\"alg\":\"EdDSA\",\"typ\":\"at+jwt\"}");
	xasprintf(&tok, "%s.e30.AAAA", h);
	j = jwt_parse(tok, strlen(tok), &cause);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(jwt_typ(j), "at+jwt");
	jwt_free(j);
	free(tok);
	free(h);
	j = jwt_parse("eyJhbGciOiJSUzI1NiJ9.e30.AAAA", 29, &cause);
	ck_assert_ptr_nonnull(j);
	ck_assert_ptr_null(jwt_typ(j));
	jwt_free(j);
}
END_TEST

static const struct {
	enum jwt_kty	 kty;
	const char	*alg;
} algs[] = {
	{ JWT_KTY_RSA, "RS256" },
	{ JWT_KTY_RSA, "PS256" },
	{ JWT_KTY_EC, "ES256" },
	{ JWT_KTY_OKP, "EdDSA" },
};

START_TEST(test_each_algorithm)
{
	EVP_PKEY	*pkey = keygen(algs[_i].kty), *other;
	char		*j, *tok, *forged, *wrong, *members, *dot;
	struct jwks	*set, *wrongset;
	const char	*payload = "{\"sub\":\"alice\",\"exp\":4000000000}";

	j = jwk(pkey, algs[_i].kty, "k1", NULL);
	set = set_of(j);
	ck_assert_uint_eq(jwks_count(set), 1);
	ck_assert(jwks_has_kid(set, "k1"));
	tok = sign(pkey, algs[_i].alg, "k1", payload);
	ck_assert_msg(verifies(set, tok), "%s does not verify", algs[_i].alg);

	/* Other claims under the same signature. */
	dot = strchr(tok, '.');
	forged = xstrdup(tok);
	forged[dot - tok + 2] ^= 1;
	ck_assert(!verifies(set, forged));
	/* Another key under the same kid. */
	other = keygen(algs[_i].kty);
	wrong = jwk(other, algs[_i].kty, "k1", NULL);
	wrongset = set_of(wrong);
	ck_assert(!verifies(wrongset, tok));
	/* The right key under another kid is not tried. */
	free(j);
	j = jwk(pkey, algs[_i].kty, "k2", NULL);
	jwks_free(set);
	set = set_of(j);
	ck_assert(!verifies(set, tok));
	/* A JWK for another alg of its type is not used. */
	free(j);
	j = jwk(pkey, algs[_i].kty, "k1", algs[_i].kty == JWT_KTY_RSA &&
	    strcmp(algs[_i].alg, "RS256") == 0 ? "PS256" : NULL);
	xasprintf(&members, "%s", j);
	jwks_free(set);
	set = set_of(members);
	if (strcmp(algs[_i].alg, "RS256") == 0)
		ck_assert(!verifies(set, tok));
	else
		ck_assert(verifies(set, tok));

	free(members);
	free(forged);
	free(wrong);
	free(tok);
	free(j);
	jwks_free(set);
	jwks_free(wrongset);
	EVP_PKEY_free(pkey);
	EVP_PKEY_free(other);
}
END_TEST

/* A key of one type never verifies a token of another's algorithm. */
START_TEST(test_kty_mismatch)
{
	EVP_PKEY	*ec = keygen(JWT_KTY_EC), *ed = keygen(JWT_KTY_OKP);
	char		*jec = jwk(ec, JWT_KTY_EC, "k", NULL), *jed, *members;
	char		*tok;
	struct jwks	*set;

	jed = jwk(ed, JWT_KTY_OKP, "k", NULL);
	xasprintf(&members, "%s,%s", jec, jed);
	set = set_of(members);
	ck_assert_uint_eq(jwks_count(set), 2);
	tok = sign(ec, "ES256", "k", "{}");
	ck_assert(verifies(set, tok));
	free(tok);
	tok = sign(ed, "EdDSA", "k", "{}");
	ck_assert(verifies(set, tok));
	free(tok);
	free(jec);
	free(jed);
	free(members);
	jwks_free(set);
	EVP_PKEY_free(ec);
	EVP_PKEY_free(ed);
}
END_TEST

START_TEST(test_jwks_skips_unusable)
{
	EVP_PKEY	*pkey = keygen(JWT_KTY_OKP);
	char		*good = jwk(pkey, JWT_KTY_OKP, "good", NULL), *members;
	struct jwks	*set;
	char		*cause = NULL;

	xasprintf(&members,
	    "{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"kid\":\"hmac\"},"
	    "{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\",\"kid\":\"short\"},"
	    "{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"},"
	    "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"offcurve\","
	    "\"x\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
	    "\"y\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AA\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"},"
	    "%s,"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"use\":\"enc\","
	    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"alg\":\"HS256\","
	    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"alg\":\"ES256\","
	    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"},"
	    "7, null, \"x\"", good);
	set = set_of(members);
	ck_assert_uint_eq(jwks_count(set), 1);
	ck_assert(jwks_has_kid(set, "good"));
	ck_assert(!jwks_has_kid(set, "hmac"));
	jwks_free(set);

	ck_assert_ptr_null(jwks_parse("[]", 2, &cause));
	free(cause);
	ck_assert_ptr_null(jwks_parse("{\"keys\":{}}", 11, &cause));
	free(cause);
	ck_assert_ptr_null(jwks_parse("{\"keys\":[", 9, &cause));
	free(cause);
	set = jwks_parse("{\"keys\":[]}", 11, &cause);
	ck_assert_uint_eq(jwks_count(set), 0);
	jwks_free(set);
	free(members);
	free(good);
	EVP_PKEY_free(pkey);
}
END_TEST

START_TEST(test_sha256_equal)
{
	unsigned char	a[JWT_SHA256_LEN], b[JWT_SHA256_LEN];
	static const unsigned char abc[JWT_SHA256_LEN] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41,
		0x40, 0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3,
		0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00,
		0x15, 0xad };

	jwt_sha256("abc", 3, a);
	ck_assert(jwt_equal(a, abc, sizeof a));
	jwt_sha256("abd", 3, b);
	ck_assert(!jwt_equal(a, b, sizeof a));
	ck_assert(jwt_looks_like("a.b.c", 5));
	ck_assert(!jwt_looks_like("a.b", 3));
	ck_assert(!jwt_looks_like("a.b.c d", 7));
}
END_TEST

static Suite *
jwt_suite(void)
{
	Suite	*s = suite_create("jwt");
	TCase	*tc;

	tc = tcase_create("form");
	tcase_add_test(tc, test_base64url);
	tcase_add_test(tc, test_algorithms);
	tcase_add_loop_test(tc, test_bad_form, 0,
	    (int)(sizeof bad_tokens / sizeof bad_tokens[0]));
	tcase_add_test(tc, test_sha256_equal);
	tcase_add_test(tc, test_json_nul);
	tcase_add_test(tc, test_typ);
	suite_add_tcase(s, tc);

	tc = tcase_create("signatures");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_each_algorithm, 0,
	    (int)(sizeof algs / sizeof algs[0]));
	tcase_add_test(tc, test_kty_mismatch);
	tcase_add_test(tc, test_jwks_skips_unusable);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(jwt_suite)
