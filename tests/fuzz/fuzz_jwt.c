/*
 * Access tokens and key sets (src/auth/jwt.c, src/auth/jwks.c), what a client (a
 * token) or an authorization server (a key set) sends, and what auth.c
 * makes of a token's claims once its signature holds.
 *
 * The input is read three ways:
 * - as text: a token, a key set or base64url;
 * - as the claims of a JWT (the whole input, or what follows its first
 *   line break, whose first line is then the JOSE header; else the
 *   header is {"alg":"EdDSA","kid":"k1","typ":"at+jwt"}), signed with the
 *   harness's Ed25519 key, which the auth block's key set holds, and
 *   checked by auth_check as a request's token is: the signature passes
 *   whenever the header lets it, so the claim checks (typ, iss, aud,
 *   exp, nbf, sub, client_id, scope) are what decides.
 *
 * Oracles:
 * - base64url decoding accepts exactly the canonical unpadded texts: what
 *   it decodes encodes back byte for byte, and a text of the alphabet it
 *   refuses has a length of 1 mod 4 or stray bits;
 * - jwt_parse accepts only what has the form of a compact JWS, with an
 *   accepted algorithm and a kid that is a string if present, and a
 *   payload that is a JSON object;
 * - a key set is parsed or refused, never more than JWKS_MAX_KEYS keys,
 *   and its keys never verify the input as a token (no private material,
 *   no accident);
 * - a signed token is answered exactly once, on a later turn, OK,
 *   FORBIDDEN (valid, without the required scope) or INVALID with a
 *   reason; never anything else (no fetch, no introspection here);
 * - accepted (OK or FORBIDDEN) means the claims, as the reference reader
 *   refjson.c reads them (every byte, an escaped NUL too), say what
 *   docs/authorization.md requires: typ at+jwt or application/at+jwt in
 *   any case, iss the issuer and aud the resource to the byte (no NUL and
 *   suffix), exp a number not passed and nbf, if there, reached (with
 *   the leeway, away from the boundary), sub a string or, without one,
 *   client_id or azp; and the principal is exactly who they name (no
 *   claim replaced by another, none cut short). OK also means the
 *   required scope is among the token's;
 * - and back: claims that say all that, under the harness's own header,
 *   are accepted.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>

#include "auth.h"
#include "base64.h"
#include "clock.h"
#include "conf.h"
#include "fuzz.h"
#include "jwks.h"
#include "jwt.h"
#include "log.h"
#include "refjson.h"
#include "xmalloc.h"

#define ISSUER		"https://as.example.test"
#define RESOURCE	"https://mcp.example.test/mcp"
#define LEEWAY		30
/* Seconds from an exp or nbf boundary within which time is not judged. */
#define MARGIN		5
#define HEADER		"{\"alg\":\"EdDSA\",\"kid\":\"k1\",\"typ\":\"at+jwt\"}"
#define MAXDEPTH	64

static const char b64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static struct {
	struct event_base	*base;
	struct conf		*conf;
	EVP_PKEY		*key;
} fz;

struct answer {
	int			 calls;
	enum auth_status	 status;
	char			*why;
	char			*subject;
	char			*client_id;	/* NULL: none */
};

static void
answer_cb(const struct auth_result *r, void *arg)
{
	struct answer		*a = arg;
	const char		*cid;

	a->calls++;
	a->status = r->status;
	a->why = r->description != NULL ? xstrdup(r->description) : NULL;
	if (r->principal != NULL) {
		a->subject = xstrdup(auth_principal_subject(r->principal));
		cid = auth_principal_client_id(r->principal);
		a->client_id = cid != NULL ? xstrdup(cid) : NULL;
	}
}

static void
answer_clear(struct answer *a)
{
	free(a->why);
	free(a->subject);
	free(a->client_id);
}

/* "Bearer " and header.claims signed with the harness's key. */
static char *
sign(const void *header, size_t hlen, const void *claims, size_t clen)
{
	EVP_MD_CTX	*md = EVP_MD_CTX_new();
	unsigned char	 sig[64];
	size_t		 siglen = sizeof sig;
	char		*h, *c, *input, *s, *out;

	h = base64_encode(header, hlen, 1);
	c = base64_encode(claims, clen, 1);
	xasprintf(&input, "%s.%s", h, c);
	if (md == NULL || EVP_DigestSignInit(md, NULL, NULL, NULL,
	    fz.key) != 1 || EVP_DigestSign(md, sig, &siglen,
	    (unsigned char *)input, strlen(input)) != 1)
		abort();
	s = base64_encode(sig, siglen, 1);
	xasprintf(&out, "Bearer %s.%s", input, s);
	EVP_MD_CTX_free(md);
	free(h);
	free(c);
	free(input);
	free(s);
	return (out);
}

/* Checks a token as a request's, on the harness's loop. */
static void
check(const char *bearer, struct answer *a)
{
	int	turns;

	memset(a, 0, sizeof *a);
	auth_check(bearer, NULL, answer_cb, a);
	FUZZ_CHECK(a->calls == 0, "answered before auth_check returned");
	for (turns = 0; turns < 8 && a->calls == 0; turns++)
		event_base_loop(fz.base, EVLOOP_NONBLOCK);
	FUZZ_CHECK(a->calls == 1, "answered %d times", a->calls);
}

/* ---------------------------------------------------------------------
 * The reference: what docs/authorization.md says of the claims.
 */

static int
ref_is(const struct refjson *v, const char *s)
{
	return (v != NULL && v->type == REFJSON_STRING &&
	    refjson_string_is(v, s, strlen(s)));
}

/* Whether a string anywhere (a value or a member's name) holds a NUL. */
static int
ref_has_nul(const struct refjson *v)
{
	const struct refjson	*c;

	if (v->key != NULL && memchr(v->key, '\0', v->keylen) != NULL)
		return (1);
	if (v->type == REFJSON_STRING && memchr(v->str, '\0', v->len) != NULL)
		return (1);
	for (c = v->child; c != NULL; c = c->next) {
		if (ref_has_nul(c))
			return (1);
	}
	return (0);
}

/* A string claim as auth.c takes it: absent 1, usable 0, else -1. */
static int
ref_text(const struct refjson *claims, const char *name,
    const struct refjson **v)
{
	*v = refjson_member(claims, name);
	if (*v == NULL)
		return (1);
	if ((*v)->type != REFJSON_STRING || (*v)->len > 1024)
		return (-1);
	return (0);
}

static int
ref_aud_ok(const struct refjson *aud)
{
	const struct refjson	*c;

	if (ref_is(aud, RESOURCE))
		return (1);
	if (aud == NULL || aud->type != REFJSON_ARRAY)
		return (0);
	for (c = aud->child; c != NULL; c = c->next) {
		if (ref_is(c, RESOURCE))
			return (1);
	}
	return (0);
}

/* A time claim: absent 1, a number in range 0, else -1. */
static int
ref_time(const struct refjson *claims, const char *name, double *t)
{
	const struct refjson	*v = refjson_member(claims, name);

	if (v == NULL)
		return (1);
	if (v->type != REFJSON_NUMBER || !(v->number >= 0) ||
	    v->number > 1e13)
		return (-1);
	*t = v->number;
	return (0);
}

static int
ref_typ_ok(const struct refjson *header)
{
	const struct refjson	*typ = refjson_member(header, "typ");

	if (typ == NULL || typ->type != REFJSON_STRING ||
	    memchr(typ->str, '\0', typ->len) != NULL)
		return (0);
	return (strcasecmp(typ->str, "at+jwt") == 0 ||
	    strcasecmp(typ->str, "application/at+jwt") == 0);
}

/* Whether "mcp" is one of the space-separated words of a string. */
static int
ref_word_mcp(const struct refjson *v)
{
	const char	*p, *end;

	if (v == NULL || v->type != REFJSON_STRING)
		return (0);
	for (p = v->str; *p != '\0'; p = end) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, " ");
		if (end - p == 3 && memcmp(p, "mcp", 3) == 0)
			return (1);
	}
	return (0);
}

/* Whether "mcp" is a scope of the claims: scope's, else scp's. */
static int
ref_has_mcp(const struct refjson *claims)
{
	const struct refjson	*scope, *c;

	scope = refjson_member(claims, "scope");
	if (scope != NULL && scope->type == REFJSON_STRING)
		return (ref_word_mcp(scope));
	scope = refjson_member(claims, "scp");
	for (c = scope != NULL ? scope->child : NULL; c != NULL; c = c->next) {
		if (ref_word_mcp(c))
			return (1);
	}
	return (0);
}

/*
 * What the reference says of claims under header: 1 valid, 0 refused,
 * -1 too close to a time boundary to say. *sub and *cid: who they name.
 */
static int
ref_valid(const struct refjson *header, const struct refjson *claims,
    const struct refjson **sub, const struct refjson **cid)
{
	const struct refjson	*iss;
	double			 now = (double)clock_wall_ms() / 1000;
	double			 exp, nbf;
	int			 r;

	*sub = *cid = NULL;
	if (claims->type != REFJSON_OBJECT || ref_has_nul(header) ||
	    ref_has_nul(claims) || !ref_typ_ok(header))
		return (0);
	if (ref_text(claims, "iss", &iss) != 0 || !ref_is(iss, ISSUER))
		return (0);
	if (!ref_aud_ok(refjson_member(claims, "aud")))
		return (0);
	if (ref_time(claims, "exp", &exp) != 0)
		return (0);
	if (exp + LEEWAY > now - MARGIN && exp + LEEWAY < now + MARGIN)
		return (-1);
	if (now > exp + LEEWAY)
		return (0);
	if ((r = ref_time(claims, "nbf", &nbf)) < 0)
		return (0);
	if (r == 0 && nbf - LEEWAY > now - MARGIN &&
	    nbf - LEEWAY < now + MARGIN)
		return (-1);
	if (r == 0 && nbf > now + LEEWAY)
		return (0);
	if ((r = ref_text(claims, "client_id", cid)) < 0)
		return (0);
	if (r > 0 && ref_text(claims, "azp", cid) < 0)
		return (0);
	if ((r = ref_text(claims, "sub", sub)) < 0)
		return (0);
	if (r > 0 && (*sub = *cid) == NULL)
		return (0);
	return (1);
}

/* A run of number characters longer than cJSON reads a number whole. */
static int
long_number(const unsigned char *p, size_t len)
{
	size_t	i, run = 0;

	for (i = 0; i < len; i++) {
		run = isdigit(p[i]) || strchr("eE+-.", p[i]) != NULL ?
		    run + 1 : 0;
		if (run >= 60)
			return (1);
	}
	return (0);
}

static void
claims_check(const uint8_t *data, size_t size)
{
	const uint8_t		*nl = memchr(data, '\n', size);
	const uint8_t		*hdr = (const uint8_t *)HEADER, *claims = data;
	size_t			 hlen = strlen(HEADER), clen = size;
	struct refjson		*rh, *rc;
	const struct refjson	*sub, *cid;
	struct answer		 a;
	char			*bearer;
	int			 valid;

	if (nl != NULL) {
		hdr = data;
		hlen = (size_t)(nl - data);
		claims = nl + 1;
		clen = size - hlen - 1;
	}
	bearer = sign(hdr, hlen, claims, clen);
	check(bearer, &a);
	FUZZ_CHECK(a.status == AUTH_OK || a.status == AUTH_FORBIDDEN ||
	    a.status == AUTH_INVALID, "status %d", a.status);
	if (a.status == AUTH_INVALID)
		FUZZ_CHECK(a.why != NULL && *a.why != '\0', "refused, no why");

	rh = refjson_parse((const char *)hdr, hlen, MAXDEPTH);
	rc = refjson_parse((const char *)claims, clen, MAXDEPTH);
	/* What the reference cannot read it cannot judge. */
	if (rh == NULL || rc == NULL || rh->type != REFJSON_OBJECT)
		goto out;
	valid = ref_valid(rh, rc, &sub, &cid);
	if (a.status != AUTH_INVALID) {
		if (valid == 0)
			fuzz_print_bytes("claims", claims, clen);
		FUZZ_CHECK(valid != 0, "accepted claims the rules refuse");
		if (valid < 0)
			goto out;
		FUZZ_CHECK(a.subject != NULL && sub->len == strlen(a.subject) &&
		    memcmp(sub->str, a.subject, sub->len) == 0,
		    "subject \"%s\" is not what the claims name", a.subject);
		FUZZ_CHECK(cid == NULL ? a.client_id == NULL :
		    a.client_id != NULL && cid->len == strlen(a.client_id) &&
		    memcmp(cid->str, a.client_id, cid->len) == 0,
		    "client id \"%s\" is not what the claims name",
		    a.client_id != NULL ? a.client_id : "(none)");
		if (a.status == AUTH_OK)
			FUZZ_CHECK(ref_has_mcp(rc), "OK without scope mcp");
	} else if (valid > 0 && nl == NULL && strlen(bearer) < 60000 &&
	    !long_number(claims, clen) && !long_number(hdr, hlen)) {
		fuzz_print_bytes("claims", claims, clen);
		FUZZ_CHECK(0, "refused (%s) claims the rules accept", a.why);
	}
out:
	refjson_free(rh);
	refjson_free(rc);
	answer_clear(&a);
	free(bearer);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char	 good[] = "{\"iss\":\"" ISSUER "\",\"aud\":\""
				    RESOURCE "\",\"sub\":\"alice\","
				    "\"exp\":4000000000,\"scope\":\"mcp\"}";
	char			 dir[] = "/tmp/mcpd-fuzz-jwt.XXXXXX";
	unsigned char		 raw[32];
	size_t			 rawlen = sizeof raw;
	char			*x, *path, *text, *cause;
	FILE			*f;
	struct answer		 a;

	event_set_mem_functions(xmalloc, xrealloc, free);	/* as main() */
	xmalloc_init_cjson();
	log_level = LOG_LEVEL_ERROR;
	fz.base = event_base_new();
	fz.key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	if (fz.base == NULL || fz.key == NULL || mkdtemp(dir) == NULL ||
	    EVP_PKEY_get_raw_public_key(fz.key, raw, &rawlen) != 1)
		abort();
	x = base64_encode(raw, rawlen, 1);
	xasprintf(&path, "%s/jwks.json", dir);
	if ((f = fopen(path, "w")) == NULL)
		abort();
	fprintf(f, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\","
	    "\"kid\":\"k1\",\"x\":\"%s\"}]}", x);
	fclose(f);
	xasprintf(&text, "auth {\n resource " RESOURCE "\n"
	    " authorization_server " ISSUER "\n jwks_file %s\n scopes mcp\n"
	    " token_type at+jwt\n leeway %d\n max_token 64k\n cache_max 1000\n"
	    "}\n", path, LEEWAY);
	if ((fz.conf = conf_parse_string(text, "fuzz.conf", &cause)) == NULL ||
	    auth_init(fz.base, fz.conf, &cause) != 0) {
		fprintf(stderr, "fuzz_jwt: %s\n", cause);
		abort();
	}
	/* The key set is read: the file can go. */
	unlink(path);
	rmdir(dir);
	free(x);
	free(path);
	free(text);

	/* The harness reaches the claim checks: a good token passes. */
	text = sign(HEADER, strlen(HEADER), good, strlen(good));
	check(text, &a);
	FUZZ_CHECK(a.status == AUTH_OK, "the harness's good token: %s",
	    a.why != NULL ? a.why : "?");
	answer_clear(&a);
	free(text);
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
		/* Encoded back, the same text: one text per value. */
		back = base64_encode(raw, n, 1);
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

	claims_check(data, size);
	return (0);
}
