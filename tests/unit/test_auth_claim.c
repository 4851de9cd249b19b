/*
 * Unit tests for auth_claim.c, what a JWT's claims or an introspection
 * answer must say, read alike for both: a string claim absent, usable or
 * refused (never cut short, never replaced by another), who the claims
 * name, the audience, the scopes, the times. Pure functions of JSON.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "unit.h"

#include "../../src/auth/auth_int.h"
#include "xmalloc.h"

#define NITEMS(a)	(sizeof (a) / sizeof (a)[0])
#define RESOURCE	"https://mcp.example.test/mcp"

static cJSON *
json(const char *text)
{
	cJSON	*j = cJSON_Parse(text);

	ck_assert_msg(j != NULL, "bad test JSON: %s", text);
	return (j);
}

START_TEST(test_text)
{
	cJSON		*c;
	const char	*v;
	char		*text, *big;

	c = json("{\"iss\":\"https://as\",\"n\":1,\"o\":{},\"z\":null}");
	ck_assert_int_eq(auth_claim_text(c, "iss", &v), 0);
	ck_assert_str_eq(v, "https://as");
	ck_assert_int_eq(auth_claim_text(c, "absent", &v), 1);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(auth_claim_text(c, "n", &v), -1);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(auth_claim_text(c, "o", &v), -1);
	ck_assert_int_eq(auth_claim_text(c, "z", &v), -1);
	/* Names are case-sensitive: ISS is another claim. */
	ck_assert_int_eq(auth_claim_text(c, "ISS", &v), 1);
	cJSON_Delete(c);

	/* AUTH_CLAIM_MAX bytes are a claim; one more is refused whole. */
	big = xmalloc(AUTH_CLAIM_MAX + 2);
	memset(big, 'a', AUTH_CLAIM_MAX + 1);
	big[AUTH_CLAIM_MAX + 1] = '\0';
	xasprintf(&text, "{\"long\":\"%s\",\"max\":\"%.*s\"}", big,
	    AUTH_CLAIM_MAX, big);
	c = json(text);
	ck_assert_int_eq(auth_claim_text(c, "long", &v), -1);
	ck_assert_int_eq(auth_claim_text(c, "max", &v), 0);
	ck_assert_uint_eq(strlen(v), AUTH_CLAIM_MAX);
	cJSON_Delete(c);
	free(text);
	free(big);
}
END_TEST

struct who {
	const char	*claims;
	int		 jwt;
	int		 want;		/* 0 or -1 */
	const char	*sub;
	const char	*cid;
};

static const struct who whos[] = {
	{ "{\"sub\":\"al\"}", 1, 0, "al", NULL },
	{ "{\"sub\":\"al\",\"client_id\":\"app\"}", 1, 0, "al", "app" },
	{ "{\"sub\":\"al\",\"azp\":\"app\"}", 1, 0, "al", "app" },
	/* azp is a JWT's; an introspection answer says client_id. */
	{ "{\"sub\":\"al\",\"azp\":\"app\"}", 0, 0, "al", NULL },
	/* client_id wins over azp. */
	{ "{\"sub\":\"al\",\"client_id\":\"a\",\"azp\":\"b\"}", 1, 0, "al",
	  "a" },
	/* A client acting for itself: its id is the subject. */
	{ "{\"client_id\":\"robot\"}", 0, 0, "robot", "robot" },
	{ "{\"azp\":\"robot\"}", 1, 0, "robot", "robot" },
	{ "{}", 1, -1, NULL, NULL },
	{ "{\"azp\":\"robot\"}", 0, -1, NULL, NULL },
	{ "{\"sub\":7}", 1, -1, NULL, NULL },
	{ "{\"sub\":\"al\",\"client_id\":[]}", 1, -1, NULL, NULL },
	{ "{\"sub\":\"al\",\"azp\":false}", 1, -1, NULL, NULL },
	/* A bad sub is refused, not replaced by client_id. */
	{ "{\"sub\":null,\"client_id\":\"robot\"}", 1, -1, NULL, NULL },
};

START_TEST(test_who)
{
	const struct who	*w = &whos[_i];
	cJSON			*c = json(w->claims);
	const char		*sub = NULL, *cid = NULL, *why = NULL;
	int			 r;

	r = auth_claim_who(c, w->jwt, &sub, &cid, &why);
	ck_assert_int_eq(r, w->want);
	if (r == 0) {
		ck_assert_str_eq(sub, w->sub);
		if (w->cid == NULL)
			ck_assert_ptr_null(cid);
		else
			ck_assert_str_eq(cid, w->cid);
	} else
		ck_assert(why != NULL && *why != '\0');
	cJSON_Delete(c);
}
END_TEST

struct aud {
	const char	*aud;
	int		 want;
};

static const struct aud auds[] = {
	{ "\"" RESOURCE "\"", 1 },
	{ "[\"other\",\"" RESOURCE "\"]", 1 },
	{ "[1,null,\"" RESOURCE "\"]", 1 },
	{ "\"" RESOURCE "/\"", 0 },
	{ "\"https://mcp.example.test\"", 0 },
	{ "[]", 0 },
	{ "[\"other\"]", 0 },
	{ "[[\"" RESOURCE "\"]]", 0 },
	{ "{\"aud\":\"" RESOURCE "\"}", 0 },
	{ "null", 0 },
	{ "7", 0 },
};

/* What a principal keeps of aud decides which resource it is for. */
START_TEST(test_aud)
{
	cJSON			*a = json(auds[_i].aud);
	struct auth_principal	*p;

	p = auth_principal_new("iss", "sub", NULL, NULL);
	auth_principal_set_claims(p, a, 0);
	ck_assert_int_eq(auth_principal_audience(p, RESOURCE), auds[_i].want);
	auth_principal_unref(p);
	cJSON_Delete(a);
}
END_TEST

START_TEST(test_scopes)
{
	static const struct {
		const char	*claims;
		const char	*want;
	} cases[] = {
		{ "{\"scope\":\"mcp deploy\"}", "mcp deploy" },
		{ "{\"scp\":[\"mcp\",\"deploy\"]}", "mcp deploy" },
		{ "{\"scp\":[\"mcp\",7,null,\"deploy\"]}", "mcp deploy" },
		/* scope, when a string, is the one read. */
		{ "{\"scope\":\"a\",\"scp\":[\"b\"]}", "a" },
		{ "{\"scope\":7,\"scp\":[\"b\"]}", "b" },
		{ "{\"scp\":\"mcp\"}", "" },
		{ "{}", "" },
	};
	cJSON	*c;
	char	*s;
	size_t	 i;

	for (i = 0; i < NITEMS(cases); i++) {
		c = json(cases[i].claims);
		s = auth_claim_scopes(c);
		ck_assert_msg(strcmp(s, cases[i].want) == 0, "%s: \"%s\"",
		    cases[i].claims, s);
		free(s);
		cJSON_Delete(c);
	}
}
END_TEST

START_TEST(test_time)
{
	cJSON	*c;
	double	 t = -1;

	c = json("{\"exp\":1767225600,\"zero\":0,\"neg\":-1,\"far\":1e14,"
	    "\"text\":\"1767225600\",\"frac\":1.5}");
	ck_assert_int_eq(auth_claim_time(c, "exp", &t), 0);
	ck_assert(t == 1767225600.0);
	ck_assert_int_eq(auth_claim_time(c, "zero", &t), 0);
	ck_assert(t == 0.0);
	ck_assert_int_eq(auth_claim_time(c, "frac", &t), 0);
	ck_assert(t == 1.5);
	ck_assert_int_eq(auth_claim_time(c, "absent", &t), 1);
	ck_assert_int_eq(auth_claim_time(c, "neg", &t), -1);
	ck_assert_int_eq(auth_claim_time(c, "far", &t), -1);
	ck_assert_int_eq(auth_claim_time(c, "text", &t), -1);
	cJSON_Delete(c);
}
END_TEST

static Suite *
auth_claim_suite(void)
{
	Suite	*s = suite_create("auth_claim");
	TCase	*tc = tcase_create("claims");

	tcase_add_test(tc, test_text);
	tcase_add_loop_test(tc, test_who, 0, NITEMS(whos));
	tcase_add_loop_test(tc, test_aud, 0, NITEMS(auds));
	tcase_add_test(tc, test_scopes);
	tcase_add_test(tc, test_time);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(auth_claim_suite)
