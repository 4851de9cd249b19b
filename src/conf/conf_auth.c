/*
 * The auth block: auth { ... }, mcpd as an OAuth resource server
 * (auth.c). Its table, its parser, and what a reload needs of it: whether
 * two blocks differ, and a copy of the running one.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conf_int.h"
#include "xmalloc.h"


static conf_line_cb	conf_auth_introspection;

static const struct conf_enum conf_auth_token_types[] = {
	{ "any", CONF_TOKEN_ANY },
	{ "at+jwt", CONF_TOKEN_AT_JWT },
	{ NULL, 0 }
};

/* The directives inside "auth { }"; offsets into struct conf_auth. */
#define CONF_AUTH_OFF(f)	offsetof(struct conf_auth, f)
static const struct conf_entry conf_auth_entries[] = {
	{ .name = "resource", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(resource), .check = conf_check_url,
	  .args = "URI",
	  .help = "This server's canonical URI as clients reach it, such as "
	  "https://mcp.example.com/mcp (RFC 8707): a JWT's aud must "
	  "contain it, and the protected resource metadata names it. "
	  "Required." },
	{ .name = "authorization_server", .type = CONF_WORDS,
	  .offset = CONF_AUTH_OFF(authorization_servers),
	  .offset2 = CONF_AUTH_OFF(nauthorization_servers),
	  .check = conf_check_url, .args = "URL...",
	  .help = "The issuer URL of each authorization server clients may "
	  "get tokens from, as the protected resource metadata "
	  "(/.well-known/oauth-protected-resource) lists them. Required." },
	{ .name = "issuer", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(issuer), .args = "ISSUER",
	  .def_text = "the first authorization_server",
	  .help = "The iss a JWT access token must carry, exactly." },
	{ .name = "token_type", .type = CONF_ENUM,
	  .offset = CONF_AUTH_OFF(token_type),
	  .values = conf_auth_token_types, .def = "any",
	  .help = "at+jwt: a JWT access token's header must say typ at+jwt "
	  "or application/at+jwt (RFC 9068, in any case), so that another "
	  "JWT signed with the same keys (an ID token, say) cannot pass as "
	  "an access token; any: typ is not looked at, for authorization "
	  "servers that do not set it." },
	{ .name = "jwks_file", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(jwks_file), .check = conf_check_file,
	  .args = "PATH",
	  .help = "A JSON Web Key Set (RFC 7517) whose keys verify JWT "
	  "access tokens: RSA (RS256, PS256), EC P-256 (ES256) and Ed25519 "
	  "(EdDSA). Read at start-up." },
	{ .name = "jwks_uri", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(jwks_uri), .check = conf_check_url,
	  .args = "URL",
	  .help = "Where the authorization server publishes its key set; "
	  "fetched at start-up, again after jwks_cache, and when a token "
	  "names a kid the set lacks (at most once per jwks_refresh_min). "
	  "With jwks_file too, both sets count." },
	{ .name = "introspection", .type = CONF_LINE,
	  .line = conf_auth_introspection,
	  .args = "URL [CLIENT_ID CLIENT_SECRET_FILE]",
	  .help = "Tokens that are not JWTs are sent to this token "
	  "introspection endpoint (RFC 7662), authenticated with HTTP Basic "
	  "as CLIENT_ID with the secret in the file (its first line); an "
	  "active answer is cached until the token's exp, at most "
	  "jwks_cache seconds." },
	{ .name = "introspection_rate", .type = CONF_INTEGER,
	  .offset = CONF_AUTH_OFF(introspection_rate), .min = 1,
	  .max = 1000000, .def = "50",
	  .help = "Tokens the introspection endpoint is asked about per "
	  "second, at most. Only tokens without a cached answer count, so "
	  "a client sending made-up tokens cannot flood the authorization "
	  "server; past the rate such a token is answered 503 with "
	  "Retry-After (it cannot be checked now), never let through." },
	{ .name = "scopes", .type = CONF_WORDS, .offset = CONF_AUTH_OFF(scopes),
	  .offset2 = CONF_AUTH_OFF(nscopes), .check = conf_check_scope,
	  .args = "SCOPE...", .def_text = "none",
	  .help = "Scopes every request's token must have; one that lacks "
	  "one is answered 403 with error=\"insufficient_scope\"." },
	{ .name = "token_file", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(token_file), .check = conf_check_file,
	  .args = "PATH",
	  .help = "Static tokens, one per line: the SHA-256 of the token in "
	  "hex, the principal (subject) it stands for, and its scopes, "
	  "separated by blanks; \"#\" starts a comment. Make the hash with "
	  "printf %s TOKEN | sha256sum. Read at start-up." },
	{ .name = "leeway", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(leeway), .min = 0, .max = 600, .def = "60",
	  .help = "Clock skew allowed when checking a token's exp and nbf." },
	{ .name = "max_token", .type = CONF_SIZE,
	  .offset = CONF_AUTH_OFF(max_token), .min = 256, .max = 64 * CONF_KIB,
	  .def = "8k",
	  .help = "Largest access token accepted; a longer one is answered "
	  "401 without being parsed." },
	{ .name = "jwks_cache", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(jwks_cache), .min = 10, .max = 86400,
	  .def = "300",
	  .help = "How long a key set fetched from jwks_uri, an "
	  "introspection answer or a verified JWT is used before it is "
	  "asked for or checked again (a JWT at most until its exp)." },
	{ .name = "jwks_refresh_min", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(jwks_refresh_min), .min = 1, .max = 86400,
	  .def = "10",
	  .help = "Least time between two fetches of jwks_uri, so tokens "
	  "naming unknown keys cannot make mcpd hammer the authorization "
	  "server; such a token waits for a fetch under way, or is "
	  "answered 401." },
	{ .name = "cache_max", .type = CONF_INTEGER,
	  .offset = CONF_AUTH_OFF(cache_max), .min = 1, .max = 1000000,
	  .def = "10000",
	  .help = "Introspection answers and verified JWTs remembered at "
	  "once (by the token's SHA-256, never the token)." },
	{ .name = "max_pending", .type = CONF_INTEGER,
	  .offset = CONF_AUTH_OFF(max_pending), .min = 1, .max = 1000000,
	  .def = "1024",
	  .help = "Requests that may wait at once for a key set or an "
	  "introspection answer; more are answered 503." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(timeout), .min = 1, .max = 120, .def = "5",
	  .help = "How long a fetch of jwks_uri or an introspection request "
	  "may take." },
};

const struct conf_table conf_auth_table = {
	conf_auth_entries, CONF_NITEMS(conf_auth_entries)
};

const char conf_auth_examples[] =
"auth {\n"
"    resource https://mcp.example.com/mcp\n"
"    authorization_server https://auth.example.com\n"
"    issuer https://auth.example.com\n"
"    jwks_uri https://auth.example.com/jwks\n"
"    scopes mcp\n"
"}\n";

/* introspection URL [CLIENT_ID CLIENT_SECRET_FILE] */
static int
conf_auth_introspection(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_auth	*auth = base;
	char			*url, *path, *secret;

	if (argc != 1 && argc != 3) {
		xasprintf(why, "expected \"introspection %s\"", ce->args);
		return (-1);
	}
	if (conf_check_url(argv[0], &url, why) != 0)
		return (-1);
	if (argc == 3) {
		if (conf_check_file(argv[2], &path, why) != 0) {
			free(url);
			return (-1);
		}
		free(path);
		if (conf_read_secret(argv[2], &secret, why) != 0) {
			free(url);
			return (-1);
		}
		if (strchr(argv[1], ':') != NULL || *argv[1] == '\0') {
			xasprintf(why, "invalid client id \"%s\"", argv[1]);
			free(url);
			free(secret);
			return (-1);
		}
		auth->client_id = xstrdup(argv[1]);
		auth->client_secret = secret;
	}
	auth->introspection = url;
	return (0);
}

static void
conf_auth_delete(struct conf_auth *auth)
{
	const struct conf_entry	*ce;
	char			*field;
	size_t			 i;

	if (auth == NULL)
		return;
	for (i = 0; i < CONF_NITEMS(conf_auth_entries); i++) {
		ce = &conf_auth_entries[i];
		field = (char *)auth + ce->offset;
		if (ce->type == CONF_STRING)
			free(*(char **)field);
		else if (ce->type == CONF_WORDS)
			xfree_words(*(char ***)field);
	}
	free(auth->introspection);
	free(auth->client_id);
	if (auth->client_secret != NULL) {
		explicit_bzero(auth->client_secret,
		    strlen(auth->client_secret));
		free(auth->client_secret);
	}
	free(auth);
}

int
conf_auth_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_auth	*auth;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_auth_entries)];
	size_t			 i;

	if (cd->argc != 1) {
		xasprintf(cause, "%s:%d: auth: expected \"auth {\"", file,
		    cd->line);
		return (-1);
	}
	if (conf->auth != NULL) {
		xasprintf(cause, "%s:%d: duplicate auth (first set on line %d)",
		    file, cd->line, conf->auth->line);
		return (-1);
	}
	auth = xcalloc(1, sizeof *auth);
	auth->line = cd->line;
	conf_set_defaults(auth, conf_auth_entries,
	    CONF_NITEMS(conf_auth_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_auth_entries;
	cs.nentries = CONF_NITEMS(conf_auth_entries);
	cs.base = auth;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}
	if (auth->resource == NULL) {
		xasprintf(cause, "%s:%d: auth: missing \"resource URI\"", file,
		    cd->line);
		goto fail;
	}
	if (auth->nauthorization_servers == 0) {
		xasprintf(cause, "%s:%d: auth: missing \"authorization_server "
		    "URL...\"", file, cd->line);
		goto fail;
	}
	if (auth->jwks_file == NULL && auth->jwks_uri == NULL &&
	    auth->introspection == NULL && auth->token_file == NULL) {
		xasprintf(cause, "%s:%d: auth: no way to check a token (set "
		    "jwks_file, jwks_uri, introspection or token_file)", file,
		    cd->line);
		goto fail;
	}
	if (auth->issuer == NULL)
		auth->issuer = xstrdup(auth->authorization_servers[0]);
	conf->auth = auth;
	return (0);

fail:
	conf_auth_delete(auth);
	return (-1);
}

/* Whether two auth blocks say different things (file contents aside). */
static int
conf_auth_differ(const struct conf_auth *a, const struct conf_auth *b)
{
	if (a == NULL || b == NULL)
		return (a != b);
	return (conf_str_differ(a->resource, b->resource) ||
	    conf_str_differ(a->issuer, b->issuer) ||
	    conf_str_differ(a->jwks_file, b->jwks_file) ||
	    conf_str_differ(a->jwks_uri, b->jwks_uri) ||
	    conf_str_differ(a->introspection, b->introspection) ||
	    conf_str_differ(a->client_id, b->client_id) ||
	    conf_str_differ(a->client_secret, b->client_secret) ||
	    conf_str_differ(a->token_file, b->token_file) ||
	    conf_words_differ(a->authorization_servers,
	    a->nauthorization_servers, b->authorization_servers,
	    b->nauthorization_servers) ||
	    conf_words_differ(a->scopes, a->nscopes, b->scopes, b->nscopes) ||
	    a->leeway != b->leeway || a->max_token != b->max_token ||
	    a->jwks_cache != b->jwks_cache ||
	    a->jwks_refresh_min != b->jwks_refresh_min ||
	    a->cache_max != b->cache_max || a->max_pending != b->max_pending ||
	    a->timeout != b->timeout);
}

static struct conf_auth *
conf_auth_copy(const struct conf_auth *a)
{
	struct conf_auth	*c;

	if (a == NULL)
		return (NULL);
	c = xmalloc(sizeof *c);
	*c = *a;
	c->resource = conf_str_copy(a->resource);
	c->authorization_servers = conf_words_copy(a->authorization_servers,
	    a->nauthorization_servers);
	c->issuer = conf_str_copy(a->issuer);
	c->jwks_file = conf_str_copy(a->jwks_file);
	c->jwks_uri = conf_str_copy(a->jwks_uri);
	c->introspection = conf_str_copy(a->introspection);
	c->client_id = conf_str_copy(a->client_id);
	c->client_secret = conf_str_copy(a->client_secret);
	c->scopes = conf_words_copy(a->scopes, a->nscopes);
	c->token_file = conf_str_copy(a->token_file);
	return (c);
}

/* What the auth block put into base: conf_free's. */
void
conf_auth_free(void *base)
{
	struct conf	*conf = base;

	conf_auth_delete(conf->auth);
}

/*
 * A reload keeps the running auth block (auth.c took it up at start): 1
 * if the new file's said something else.
 */
int
conf_auth_keep(void *newbase, const void *oldbase)
{
	struct conf		*new = newbase;
	const struct conf	*old = oldbase;

	if (!conf_auth_differ(new->auth, old->auth))
		return (0);
	conf_auth_delete(new->auth);
	new->auth = conf_auth_copy(old->auth);
	return (1);
}
