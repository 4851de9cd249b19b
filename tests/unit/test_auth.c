/*
 * Unit tests for auth.c, the resource server's policy, on an event loop
 * with no socket but the refused one of the last test: the header forms,
 * static tokens, what a JWT's claims must say (with an Ed25519 key the
 * test makes and signs with), the required scopes, the challenge texts,
 * the metadata, tool scopes, principals, and the callback rule (a check
 * is answered on a later turn, exactly once, also at shutdown).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "confparse.h"
#include "unit.h"
#include "world.h"

#include "auth.h"
#include "base64.h"
#include "conf.h"
#include "eventlog.h"
#include "http_client.h"
#include "jwt.h"
#include "log.h"
#include "provider.h"
#include "server.h"
#include "xmalloc.h"

#define RESOURCE	"https://mcp.example.test/mcp"
#define ISSUER		"https://as.example.test"
#define STATIC_TOKEN	"static-token-of-the-unit-test"

static EVP_PKEY			*key;
static char			 dir[] = "/tmp/mcpd-test-auth.XXXXXX";

struct answer {
	int			 calls;
	enum auth_status	 status;
	char			 subject[128];
	char			 client_id[128];
	char			 scopes[256];
	char			 scope[256];
};

/* "Bearer " and an EdDSA JWT of header and claims (JSON texts). */
static char *
bearer_jwt_header(const char *header, const char *claims)
{
	EVP_MD_CTX	*md = EVP_MD_CTX_new();
	unsigned char	 sig[64];
	size_t		 siglen = sizeof sig;
	char		*h, *c, *input, *s, *out;

	h = base64_encode(header, strlen(header), 1);
	c = base64_encode(claims, strlen(claims), 1);
	xasprintf(&input, "%s.%s", h, c);
	ck_assert_int_eq(EVP_DigestSignInit(md, NULL, NULL, NULL, key), 1);
	ck_assert_int_eq(EVP_DigestSign(md, sig, &siglen,
	    (unsigned char *)input, strlen(input)), 1);
	s = base64_encode(sig, siglen, 1);
	xasprintf(&out, "Bearer %s.%s", input, s);
	EVP_MD_CTX_free(md);
	free(h);
	free(c);
	free(input);
	free(s);
	return (out);
}

/* The same with the usual header (kid k1, no typ). */
static char *
bearer_jwt(const char *claims)
{
	return (bearer_jwt_header("{\"alg\":\"EdDSA\",\"kid\":\"k1\"}",
	    claims));
}

static char *
write_file(const char *name, const char *text)
{
	char	*path;
	FILE	*f;

	xasprintf(&path, "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return (path);
}

static void
start(const char *extra)
{
	unsigned char	 raw[32];
	size_t		 len = sizeof raw;
	char		*x, *jwks, *jwks_path, *tokens, *tokens_path;
	char		*text, *cause = NULL, hex[2 * JWT_SHA256_LEN + 1];
	unsigned char	 hash[JWT_SHA256_LEN];
	int		 i;

	ck_assert_int_eq(EVP_PKEY_get_raw_public_key(key, raw, &len), 1);
	x = base64_encode(raw, len, 1);
	xasprintf(&jwks, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\","
	    "\"kid\":\"k1\",\"x\":\"%s\"}]}", x);
	jwks_path = write_file("jwks.json", jwks);
	jwt_sha256(STATIC_TOKEN, strlen(STATIC_TOKEN), hash);
	for (i = 0; i < JWT_SHA256_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", hash[i]);
	xasprintf(&tokens, "# unit test\n%s robot mcp deploy\n", hex);
	tokens_path = write_file("tokens", tokens);
	xasprintf(&text, "auth {\n resource " RESOURCE "\n"
	    " authorization_server " ISSUER "\n jwks_file %s\n"
	    " token_file %s\n scopes mcp\n leeway 30\n%s}\n"
	    "tool deploy {\n exec /bin/true\n scope deploy\n}\n"
	    "tool status {\n exec /bin/true\n scope mcp\n}\n"
	    "tool open {\n exec /bin/true\n}\n", jwks_path, tokens_path,
	    extra);
	world_setup(parse_ok(text));
	world_start();
	http_client_init(base);
	ck_assert_msg(auth_init(base, conf, &cause) == 0, "auth_init: %s",
	    cause);
	ck_assert(auth_enabled());
	free(x);
	free(jwks);
	free(jwks_path);
	free(tokens);
	free(tokens_path);
	free(text);
}

static void
setup(void)
{
	key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	ck_assert_ptr_nonnull(key);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	char	*cmd;

	auth_shutdown();
	if (base != NULL)	/* start() ran */
		world_teardown();
	EVP_PKEY_free(key);
	xasprintf(&cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		ck_abort_msg("%s failed", cmd);
	free(cmd);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

static void
answer_cb(const struct auth_result *r, void *arg)
{
	struct answer	*a = arg;
	char		*s;

	a->calls++;
	a->status = r->status;
	if (r->status == AUTH_OK) {
		ck_assert_ptr_nonnull(r->principal);
		snprintf(a->subject, sizeof a->subject, "%s",
		    auth_principal_subject(r->principal));
		snprintf(a->client_id, sizeof a->client_id, "%s",
		    auth_principal_client_id(r->principal) != NULL ?
		    auth_principal_client_id(r->principal) : "-");
		s = auth_principal_scopes(r->principal);
		snprintf(a->scopes, sizeof a->scopes, "%s", s);
		free(s);
	}
	if (r->scope != NULL)
		snprintf(a->scope, sizeof a->scope, "%s", r->scope);
}

/* One check, answered on a later turn and only once. */
static struct answer
check(const char *header)
{
	struct answer	a;

	memset(&a, 0, sizeof a);
	auth_check(header, NULL, answer_cb, &a);
	ck_assert_int_eq(a.calls, 0);
	unit_turns(base, 3);
	ck_assert_int_eq(a.calls, 1);
	return (a);
}

static enum auth_status
status_of(const char *claims)
{
	char		*h = bearer_jwt(claims);
	struct answer	 a = check(h);

	free(h);
	return (a.status);
}

START_TEST(test_header_forms)
{
	char	*big;

	start("");
	ck_assert_int_eq(check(NULL).status, AUTH_MISSING);
	ck_assert_int_eq(check("").status, AUTH_MISSING);
	ck_assert_int_eq(check("Basic dXNlcjpwYXNz").status, AUTH_MISSING);
	ck_assert_int_eq(check("Bearertoken").status, AUTH_MISSING);
	ck_assert_int_eq(check("Bearer ").status, AUTH_INVALID);
	ck_assert_int_eq(check("Bearer a b").status, AUTH_INVALID);
	ck_assert_int_eq(check("Bearer unknown").status, AUTH_INVALID);
	ck_assert_int_eq(check("bearer " STATIC_TOKEN).status, AUTH_OK);
	ck_assert_int_eq(check("Bearer  \t" STATIC_TOKEN).status, AUTH_OK);
	big = xmalloc(16 * 1024);
	memset(big, 'a', 16 * 1024 - 1);
	big[16 * 1024 - 1] = '\0';
	memcpy(big, "Bearer ", 7);
	ck_assert_int_eq(check(big).status, AUTH_INVALID);
	free(big);
}
END_TEST

START_TEST(test_static_token)
{
	struct answer	a;

	start("");
	a = check("Bearer " STATIC_TOKEN);
	ck_assert_int_eq(a.status, AUTH_OK);
	ck_assert_str_eq(a.subject, "robot");
	ck_assert_str_eq(a.client_id, "-");
	ck_assert_str_eq(a.scopes, "mcp deploy");
	ck_assert_int_eq(check("Bearer " STATIC_TOKEN "x").status,
	    AUTH_INVALID);
}
END_TEST

START_TEST(test_jwt_claims)
{
	char		 c[1024];
	long long	 now = (long long)time(NULL);
	struct answer	 a;
	char		*h;

#define CLAIMS(fmt, ...) (snprintf(c, sizeof c, fmt, __VA_ARGS__), c)
	start("");
	h = bearer_jwt(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\",\"sub\":\"al\","
	    "\"exp\":%lld,\"scope\":\"mcp read\",\"client_id\":\"app\"}",
	    ISSUER, RESOURCE, now + 60));
	a = check(h);
	free(h);
	ck_assert_int_eq(a.status, AUTH_OK);
	ck_assert_str_eq(a.subject, "al");
	ck_assert_str_eq(a.client_id, "app");
	ck_assert_str_eq(a.scopes, "mcp read");

	/* scp, azp; a client alone is its own subject. */
	h = bearer_jwt(CLAIMS("{\"iss\":\"%s\",\"aud\":[\"x\",\"%s\"],"
	    "\"exp\":%lld,\"scp\":[\"mcp\",\"w\"],\"azp\":\"svc\"}", ISSUER,
	    RESOURCE, now + 60));
	a = check(h);
	free(h);
	ck_assert_int_eq(a.status, AUTH_OK);
	ck_assert_str_eq(a.subject, "svc");
	ck_assert_str_eq(a.client_id, "svc");
	ck_assert_str_eq(a.scopes, "mcp w");

	/* exp and nbf, with the leeway of 30 s. */
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE,
	    now - 10)), AUTH_OK);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE,
	    now - 100)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"nbf\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 600, now + 10)), AUTH_OK);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"nbf\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 600, now + 100)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"scope\":\"mcp\",\"n\":%d}", ISSUER, RESOURCE, 0)),
	    AUTH_INVALID);	/* no exp */
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":\"%lld\",\"scope\":\"mcp\"}", ISSUER,
	    RESOURCE, now + 60)), AUTH_INVALID);	/* exp a string */
	/* iss, aud, sub. */
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s/\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE,
	    now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s/\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE,
	    now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":[\"%s/\"],"
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE,
	    now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE, now + 60)),
	    AUTH_INVALID);
	/* The required scope. */
	h = bearer_jwt(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\",\"sub\":\"a\","
	    "\"exp\":%lld,\"scope\":\"mcpx read\"}", ISSUER, RESOURCE,
	    now + 60));
	a = check(h);
	free(h);
	ck_assert_int_eq(a.status, AUTH_FORBIDDEN);
	ck_assert_str_eq(a.scope, "mcp");
#undef CLAIMS
}
END_TEST

/*
 * Claims are read whole or refused: a NUL (\u0000) would cut iss, aud or
 * sub short as cJSON keeps C strings, so it refuses the token; a sub or
 * client id that is there but not a usable string is a refusal, never
 * replaced by another claim.
 */
START_TEST(test_jwt_claims_exact)
{
	char		 c[4096], big[1100];
	long long	 now = (long long)time(NULL);
	struct answer	 a;
	char		*h;

#define CLAIMS(fmt, ...) (snprintf(c, sizeof c, fmt, __VA_ARGS__), c)
	start("");
	/* A suffix after a NUL: the configured value, then more. */
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\\u0000.evil\","
	    "\"aud\":\"%s\",\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s"
	    "\\u0000x\",\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":[\"%s"
	    "\\u0000x\"],\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"admin\\u0000x\",\"exp\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	/* An escaped backslash before u0000 is text, not a NUL. */
	h = bearer_jwt(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\\\\u0000\",\"exp\":%lld,\"scope\":\"mcp\"}",
	    ISSUER, RESOURCE, now + 60));
	a = check(h);
	free(h);
	ck_assert_int_eq(a.status, AUTH_OK);
	ck_assert_str_eq(a.subject, "a\\u0000");
	/* sub there but unusable: refused, not replaced by client_id. */
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":7,\"client_id\":\"app\",\"exp\":%lld,"
	    "\"scope\":\"mcp\"}", ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":null,\"azp\":\"app\",\"exp\":%lld,"
	    "\"scope\":\"mcp\"}", ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	memset(big, 'b', 1025);
	big[1025] = '\0';
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"%s\",\"client_id\":\"app\",\"exp\":%lld,"
	    "\"scope\":\"mcp\"}", ISSUER, RESOURCE, big, now + 60)),
	    AUTH_INVALID);
	ck_assert_int_eq(status_of(CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"client_id\":[\"app\"],\"exp\":%lld,"
	    "\"scope\":\"mcp\"}", ISSUER, RESOURCE, now + 60)), AUTH_INVALID);
	/* Without token_type, typ is not looked at (but must be a string). */
	h = bearer_jwt_header("{\"alg\":\"EdDSA\",\"kid\":\"k1\","
	    "\"typ\":\"JWT\"}", CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER,
	    RESOURCE, now + 60));
	ck_assert_int_eq(check(h).status, AUTH_OK);
	free(h);
	h = bearer_jwt_header("{\"alg\":\"EdDSA\",\"kid\":\"k1\","
	    "\"typ\":1}", CLAIMS("{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER,
	    RESOURCE, now + 60));
	ck_assert_int_eq(check(h).status, AUTH_INVALID);
	free(h);
#undef CLAIMS
}
END_TEST

/* token_type at+jwt: RFC 9068's typ, in its two spellings, any case. */
START_TEST(test_jwt_typ)
{
	static const struct {
		const char	*typ;	/* NULL: none */
		enum auth_status status;
	} cases[] = {
		{ NULL, AUTH_INVALID },
		{ "JWT", AUTH_INVALID },
		{ "at+jwtx", AUTH_INVALID },
		{ "application/jwt", AUTH_INVALID },
		{ "at+jwt", AUTH_OK },
		{ "AT+JWT", AUTH_OK },
		{ "application/at+jwt", AUTH_OK },
		{ "Application/At+JWT", AUTH_OK },
	};
	char		 c[1024], hd[256], *h;
	long long	 now = (long long)time(NULL);
	size_t		 i;

	start(" token_type at+jwt\n");
	snprintf(c, sizeof c, "{\"iss\":\"%s\",\"aud\":\"%s\","
	    "\"sub\":\"a\",\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER,
	    RESOURCE, now + 60);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].typ == NULL)
			snprintf(hd, sizeof hd, "{\"alg\":\"EdDSA\","
			    "\"kid\":\"k1\"}");
		else
			snprintf(hd, sizeof hd, "{\"alg\":\"EdDSA\","
			    "\"kid\":\"k1\",\"typ\":\"%s\"}", cases[i].typ);
		h = bearer_jwt_header(hd, c);
		ck_assert_msg(check(h).status == cases[i].status, "typ %s",
		    cases[i].typ != NULL ? cases[i].typ : "(none)");
		free(h);
	}
}
END_TEST

START_TEST(test_challenge_and_metadata)
{
	struct auth_result	 r;
	cJSON			*md;
	char			*s, *text;
	struct auth_principal	*p;

	start("");
	ck_assert_str_eq(auth_metadata_path(0),
	    "/.well-known/oauth-protected-resource");
	ck_assert_str_eq(auth_metadata_path(1),
	    "/.well-known/oauth-protected-resource/mcp");
	memset(&r, 0, sizeof r);
	r.status = AUTH_MISSING;
	s = auth_challenge(&r);
	ck_assert_str_eq(s, "Bearer resource_metadata=\"https://mcp.example."
	    "test/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\"");
	free(s);
	r.status = AUTH_INVALID;
	r.description = "the token has expired";
	s = auth_challenge(&r);
	ck_assert_str_eq(s, "Bearer error=\"invalid_token\", "
	    "error_description=\"the token has expired\", resource_metadata="
	    "\"https://mcp.example.test/.well-known/oauth-protected-resource/"
	    "mcp\"");
	free(s);
	r.status = AUTH_FORBIDDEN;
	r.scope = "mcp deploy";
	r.description = "x";
	s = auth_challenge(&r);
	ck_assert(strstr(s, "Bearer error=\"insufficient_scope\", "
	    "scope=\"mcp deploy\", resource_metadata=\"https://") == s);
	free(s);

	md = auth_metadata(NULL);
	text = cJSON_PrintUnformatted(md);
	ck_assert_str_eq(text, "{\"resource\":\"" RESOURCE "\","
	    "\"authorization_servers\":[\"" ISSUER "\"],"
	    "\"scopes_supported\":[\"mcp\",\"deploy\"],"
	    "\"bearer_methods_supported\":[\"header\"],"
	    "\"resource_name\":\"mcpd\"}");
	free(text);
	cJSON_Delete(md);

	/*
	 * Tools: their scope (the exec provider's, from the tool block),
	 * who may call them, what to ask for.
	 */
	provider_init(conf);
	ck_assert_str_eq(provider_tool_scope("deploy"), "deploy");
	ck_assert_ptr_null(provider_tool_scope("open"));
	ck_assert_ptr_null(provider_tool_scope("echo"));
	p = auth_principal_new(ISSUER, "al", NULL, "mcp");
	ck_assert(!auth_scope_allowed(p, provider_tool_scope("deploy")));
	ck_assert(auth_scope_allowed(p, provider_tool_scope("status")));
	ck_assert(auth_scope_allowed(p, provider_tool_scope("open")));
	ck_assert(auth_scope_allowed(p, provider_tool_scope("no-such-tool")));
	auth_principal_unref(p);
	s = auth_scopes_needed(NULL, provider_tool_scope("deploy"));
	ck_assert_str_eq(s, "mcp deploy");
	free(s);
	s = auth_scopes_needed(NULL, provider_tool_scope("status"));
	ck_assert_str_eq(s, "mcp");
	free(s);
	provider_shutdown();
}
END_TEST

START_TEST(test_principals)
{
	struct auth_principal	*a, *b, *c, *d;
	cJSON			*json, *bad;
	char			*s;

	a = auth_principal_new(ISSUER, "al", "app", "x y  z");
	ck_assert(auth_principal_has_scope(a, "y"));
	ck_assert(!auth_principal_has_scope(a, "x y"));
	s = auth_principal_scopes(a);
	ck_assert_str_eq(s, "x y z");
	free(s);
	json = auth_principal_json(a);
	s = cJSON_PrintUnformatted(json);
	ck_assert_str_eq(s, "{\"iss\":\"" ISSUER "\",\"sub\":\"al\","
	    "\"client_id\":\"app\"}");
	free(s);
	b = auth_principal_from_json(json);
	cJSON_Delete(json);
	ck_assert_ptr_nonnull(b);
	ck_assert(auth_principal_same(a, b));	/* scopes do not count */
	c = auth_principal_new(ISSUER, "al", NULL, NULL);
	d = auth_principal_new("https://other", "al", "app", NULL);
	ck_assert(!auth_principal_same(a, c));
	ck_assert(!auth_principal_same(a, d));
	ck_assert(!auth_principal_same(a, NULL));
	ck_assert(auth_principal_same(NULL, NULL));
	bad = cJSON_Parse("{\"iss\":\"i\",\"sub\":7}");
	ck_assert_ptr_null(auth_principal_from_json(bad));
	cJSON_Delete(bad);
	bad = cJSON_Parse("{\"iss\":\"i\",\"sub\":\"s\",\"client_id\":1}");
	ck_assert_ptr_null(auth_principal_from_json(bad));
	cJSON_Delete(bad);
	auth_principal_unref(a);
	auth_principal_unref(b);
	auth_principal_unref(c);
	auth_principal_unref(d);
}
END_TEST

/* A check waiting for a key set is answered when auth shuts down. */
START_TEST(test_shutdown_answers_waiting)
{
	struct answer	 a;
	char		*h, c[512];

	start(" jwks_uri http://127.0.0.1:1/jwks\n timeout 30\n");
	snprintf(c, sizeof c, "{\"iss\":\"%s\",\"aud\":\"%s\",\"sub\":\"a\","
	    "\"exp\":%lld,\"scope\":\"mcp\"}", ISSUER, RESOURCE,
	    (long long)time(NULL) + 60);
	h = bearer_jwt(c);
	memcpy(strstr(h, "Bearer ") + 7, "eyJhbGciOiJFZERTQSIsImtpZCI6Im"
	    "syIn0", 35);	/* kid k2: not in jwks_file */
	memset(&a, 0, sizeof a);
	auth_check(h, NULL, answer_cb, &a);
	free(h);
	ck_assert_int_eq(a.calls, 0);
	ck_assert_uint_eq(auth_pending(), 1);
	auth_shutdown();
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.status, AUTH_UNAVAILABLE);
	ck_assert_uint_eq(auth_pending(), 0);
	unit_turns(base, 3);
	ck_assert_int_eq(a.calls, 1);
}
END_TEST

static Suite *
auth_suite(void)
{
	Suite	*s = suite_create("auth");
	TCase	*tc;

	tc = tcase_create("policy");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_header_forms);
	tcase_add_test(tc, test_static_token);
	tcase_add_test(tc, test_jwt_claims);
	tcase_add_test(tc, test_jwt_claims_exact);
	tcase_add_test(tc, test_jwt_typ);
	tcase_add_test(tc, test_challenge_and_metadata);
	tcase_add_test(tc, test_principals);
	tcase_add_test(tc, test_shutdown_answers_waiting);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(auth_suite)
