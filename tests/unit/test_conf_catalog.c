/*
 * Unit tests of issue 26's configuration: catalogs (tools allow|deny,
 * rename, description, in upstream and endpoint blocks), endpoint blocks
 * beside the plain endpoint line, and credentials blocks; what each
 * refuses, and what the lookups the providers use answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "confparse.h"

#include "conf.h"
#include "xmalloc.h"

#define UP	"upstream u {\n    url http://127.0.0.1:9/mcp\n"

START_TEST(test_catalog_lines)
{
	struct conf		*conf;
	const struct conf_catalog *cat;

	conf = parse_ok(UP
	    "    tools allow get-* echo\n"
	    "    tools deny get-secret*\n"
	    "    tools deny zap\n"
	    "    prompts deny p?\n"
	    "    resources allow demo://public/*\n"
	    "    rename echo say\n"
	    "    description echo \"Says it\"\n"
	    "}\n");
	cat = &conf->upstreams[0].catalog;
	ck_assert_uint_eq(cat->nallow[CONF_CATALOG_TOOLS], 2);
	ck_assert_uint_eq(cat->ndeny[CONF_CATALOG_TOOLS], 2);
	ck_assert(conf_catalog_allows(cat, CONF_CATALOG_TOOLS, "get-sum"));
	ck_assert(conf_catalog_allows(cat, CONF_CATALOG_TOOLS, "echo"));
	ck_assert(!conf_catalog_allows(cat, CONF_CATALOG_TOOLS, "get-secret"));
	ck_assert(!conf_catalog_allows(cat, CONF_CATALOG_TOOLS, "zap"));
	ck_assert(!conf_catalog_allows(cat, CONF_CATALOG_TOOLS, "other"));
	ck_assert(!conf_catalog_allows(cat, CONF_CATALOG_PROMPTS, "p1"));
	ck_assert(conf_catalog_allows(cat, CONF_CATALOG_PROMPTS, "p12"));
	ck_assert(conf_catalog_allows(cat, CONF_CATALOG_RESOURCES,
	    "demo://public/a"));
	ck_assert(!conf_catalog_allows(cat, CONF_CATALOG_RESOURCES,
	    "demo://private/a"));
	/* Names: the upstream's own, served under the new one only. */
	ck_assert_str_eq(conf_catalog_served_name(cat, "echo"), "say");
	ck_assert_str_eq(conf_catalog_served_name(cat, "get-sum"), "get-sum");
	ck_assert_str_eq(conf_catalog_own_name(cat, "say"), "echo");
	ck_assert_ptr_null(conf_catalog_own_name(cat, "echo"));
	ck_assert_str_eq(conf_catalog_own_name(cat, "get-sum"), "get-sum");
	ck_assert_str_eq(conf_catalog_description(cat, "echo"), "Says it");
	ck_assert_ptr_null(conf_catalog_description(cat, "say"));
	conf_free(conf);
}
END_TEST

START_TEST(test_catalog_errors)
{
	expect_error(UP "    tools\n}\n", "t.conf:3: tools: missing value");
	expect_error(UP "    tools deny\n}\n",
	    "t.conf:3: tools: expected \"tools [allow|deny] PATTERN...\"");
	expect_error(UP "    tools \"\"\n}\n",
	    "t.conf:3: tools: invalid pattern \"\" (1 to 256 characters)");
	expect_error(UP "    rename a\n}\n",
	    "t.conf:3: rename: expected \"rename OLD NEW\"");
	expect_error(UP "    rename a b\n    rename a c\n}\n",
	    "t.conf:4: rename: a is renamed twice");
	expect_error(UP "    rename a b\n    rename c b\n}\n",
	    "t.conf:4: rename: two tools renamed b");
	expect_error_has(UP "    rename a \"b c\"\n}\n",
	    "invalid tool name \"b c\"");
	expect_error(UP "    description a x y\n}\n",
	    "t.conf:3: description: expected \"description NAME TEXT\" "
	    "(quote the text)");
	expect_error(UP "    description a x\n    description a y\n}\n",
	    "t.conf:4: description: a is described twice");
}
END_TEST

START_TEST(test_endpoint_blocks)
{
	struct conf			*conf;
	const struct conf_endpoint	*ep;

	conf = parse_ok("endpoint /v1\n"
	    UP "}\n"
	    "upstream w {\n    url http://127.0.0.1:9/w\n}\n"
	    "endpoint /v1/u {\n"
	    "    upstreams u\n"
	    "    tools u_* echo\n"
	    "    tools deny u_drop\n"
	    "    scopes team-u\n"
	    "}\n"
	    "endpoint /v1/none {\n    upstreams none\n    rename echo say\n"
	    "    description echo \"Says\"\n}\n"
	    "endpoint /v1 {\n    tools deny secret\n}\n");
	/* The plain line is the default endpoint, as before. */
	ck_assert_str_eq(conf->endpoint, "/v1");
	ck_assert_uint_eq(conf->nendpoints, 3);
	ep = conf_endpoint_find(conf, "/v1/u");
	ck_assert_ptr_nonnull(ep);
	ck_assert(!ep->all_upstreams);
	ck_assert_uint_eq(ep->nscopes, 1);
	ck_assert_str_eq(ep->scopes[0], "team-u");
	ck_assert(conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "u_x", "u"));
	ck_assert(!conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "u_x", "w"));
	ck_assert(!conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "u_drop",
	    "u"));
	ck_assert(conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "echo", NULL));
	ck_assert(!conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "notify",
	    NULL));
	ck_assert(conf_endpoint_serves_source(ep, "u"));
	ck_assert(!conf_endpoint_serves_source(ep, "w"));
	ck_assert(conf_endpoint_serves_source(ep, NULL));
	ep = conf_endpoint_find(conf, "/v1/none");
	ck_assert(!conf_endpoint_serves_source(ep, "u"));
	ck_assert_str_eq(conf_catalog_own_name(&ep->catalog, "say"), "echo");
	ck_assert_str_eq(conf_catalog_description(&ep->catalog, "echo"),
	    "Says");
	ck_assert(conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "echo", NULL));
	/* A block of the default's path configures it. */
	ep = conf_endpoint_find(conf, "/v1");
	ck_assert_ptr_nonnull(ep);
	ck_assert(!conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "secret",
	    NULL));
	ck_assert(conf_endpoint_serves(ep, CONF_CATALOG_TOOLS, "x", "w"));
	ck_assert(conf_endpoint_exists(conf, "/v1"));
	ck_assert(conf_endpoint_exists(conf, "/v1/u"));
	ck_assert(!conf_endpoint_exists(conf, "/v2"));
	ck_assert_ptr_null(conf_endpoint_find(conf, "/v2"));
	/* No block: everything, for the default only. */
	ck_assert(conf_endpoint_serves(NULL, CONF_CATALOG_TOOLS, "x", "w"));
	conf_free(conf);

	expect_error("endpoint /a {\n}\nendpoint /a {\n}\n",
	    "t.conf:3: duplicate endpoint /a (first declared on line 1)");
	expect_error("endpoint /a\nendpoint /b\n",
	    "t.conf:2: duplicate endpoint (first set on line 1)");
	expect_error("endpoint /metrics {\n}\n",
	    "t.conf:1: endpoint /metrics is a path mcpd serves itself");
	expect_error("endpoint /.well-known/x {\n}\n",
	    "t.conf:1: endpoint /.well-known/x is a path mcpd serves itself");
	expect_error("endpoint /a {\n    upstreams nope\n}\n",
	    "t.conf:1: endpoint /a: no upstream block named nope, nor "
	    "openapi block");
	expect_error("endpoint /a {\n    upstreams u none\n}\n",
	    "t.conf:2: upstreams: none stands alone");
	expect_error("endpoint /a b {\n}\n",
	    "t.conf:1: endpoint: expected \"endpoint PATH {\"");
	expect_error("endpoint a {\n}\n",
	    "t.conf:1: endpoint: path must start with \"/\", not \"a\"");
	expect_error("endpoint /a {\n    resource ftp://x\n}\n",
	    "t.conf:2: resource: \"ftp://x\" is not an http:// or https:// "
	    "URL");
}
END_TEST

/* A file of one line, for secrets and header values. */
static char *
file_of(const char *name, const char *text)
{
	char	*path;
	FILE	*f;

	xasprintf(&path, "/tmp/mcpd-unit-%d-%s", (int)getpid(), name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return (path);
}

START_TEST(test_credentials_block)
{
	struct conf			*conf, *again;
	const struct conf_credentials	*cc;
	char				*key, *secret, *text;

	key = file_of("key", "k-1\n");
	secret = file_of("secret", "s3cret\nignored\n");
	xasprintf(&text, UP
	    "    credentials {\n"
	    "        header X-Api-Key %s\n"
	    "        grant client_credentials\n"
	    "        token_endpoint https://as.test/token\n"
	    "        client_id mcpd\n"
	    "        client_secret_file %s\n"
	    "        client_auth post\n"
	    "        scope a b\n"
	    "    }\n"
	    "}\n", key, secret);
	conf = parse_ok(text);
	cc = conf->upstreams[0].credentials;
	ck_assert_ptr_nonnull(cc);
	ck_assert_uint_eq(cc->nheaders, 1);
	ck_assert_str_eq(cc->headers[0].name, "X-Api-Key");
	ck_assert_str_eq(cc->headers[0].value, "k-1");
	ck_assert_int_eq(cc->grant, CONF_GRANT_CLIENT_CREDENTIALS);
	ck_assert_str_eq(cc->client_secret, "s3cret");
	ck_assert_int_eq(cc->client_auth, CONF_CLIENT_AUTH_POST);
	ck_assert_uint_eq(cc->nscopes, 2);
	ck_assert_int_eq(cc->expires_in, 300);
	/* The same file, read again: the same; a new value differs. */
	again = parse_ok(text);
	ck_assert(!conf_credentials_differ(cc,
	    again->upstreams[0].credentials));
	conf_free(again);
	free(file_of("key", "k-2\n"));
	again = parse_ok(text);
	ck_assert(conf_credentials_differ(cc,
	    again->upstreams[0].credentials));
	conf_free(again);
	conf_free(conf);
	free(text);

	expect_error(UP "    credentials {\n    }\n}\n",
	    "t.conf:3: credentials: neither a header nor a grant");
	expect_error(UP "    credentials {\n        grant client_credentials\n"
	    "    }\n}\n", "t.conf:3: credentials: grant client_credentials "
	    "needs token_endpoint, client_id and client_secret_file");
	xasprintf(&text, UP "    credentials {\n        header Accept %s\n"
	    "    }\n}\n", key);
	expect_error(text, "t.conf:4: header: Accept is a header mcpd sets "
	    "itself");
	free(text);
	xasprintf(&text, UP "    credentials {\n        header \"X Y\" %s\n"
	    "    }\n}\n", key);
	expect_error(text, "t.conf:4: header: invalid header name \"X Y\"");
	free(text);
	expect_error(UP "    credentials {\n        header X-Key /nonexistent\n"
	    "    }\n}\n", "t.conf:4: header: \"/nonexistent\": No such file or "
	    "directory");
	xasprintf(&text, UP "    credentials {\n"
	    "        header Authorization %s\n"
	    "        grant client_credentials\n"
	    "        token_endpoint https://as.test/token\n"
	    "        client_id mcpd\n        client_secret_file %s\n"
	    "    }\n}\n", key, secret);
	expect_error(text, "t.conf:4: credentials: header Authorization and "
	    "a grant exclude each other");
	free(text);
	xasprintf(&text, UP "    credentials {\n"
	    "        grant token_exchange\n"
	    "        token_endpoint https://as.test/token\n"
	    "        client_id mcpd\n        client_secret_file %s\n"
	    "    }\n}\n", secret);
	expect_error(text, "t.conf:3: upstream u: grant token_exchange needs "
	    "an auth block (the caller's token is what is exchanged)");
	free(text);
	xasprintf(&text, "upstream e {\n    exec /bin/true\n"
	    "    credentials {\n        header X-K %s\n    }\n}\n", key);
	expect_error(text, "t.conf:3: upstream e: credentials are for a url "
	    "upstream, not an exec one");
	free(text);
	free(file_of("bad", "a\001b\n"));
	xasprintf(&text, UP "    credentials {\n"
	    "        header X-K /tmp/mcpd-unit-%d-bad\n    }\n}\n",
	    (int)getpid());
	expect_error_has(text, "the secret must be one line of 1 to 4096 "
	    "printable ASCII characters");
	free(text);

	xasprintf(&text, "/tmp/mcpd-unit-%d-bad", (int)getpid());
	unlink(text);
	free(text);
	unlink(key);
	unlink(secret);
	free(key);
	free(secret);
}
END_TEST

static Suite *
conf_catalog_suite(void)
{
	Suite	*s = suite_create("conf_catalog");
	TCase	*tc = tcase_create("conf_catalog");

	tcase_add_test(tc, test_catalog_lines);
	tcase_add_test(tc, test_catalog_errors);
	tcase_add_test(tc, test_endpoint_blocks);
	tcase_add_test(tc, test_credentials_block);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(conf_catalog_suite)
