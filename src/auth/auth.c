/*
 * The resource server's policy. A check goes:
 *
 *   Authorization header ── not Bearer, or none ──► AUTH_MISSING (401)
 *        │ Bearer TOKEN
 *        ├── longer than max_token ──────────────► AUTH_INVALID (401)
 *        ├── its SHA-256 in token_file ──────────► principal
 *        ├── a JWS, and key sets are configured ─► key by kid: jwks_file,
 *        │       jwks_uri's set (fetched again first when kid is unknown,
 *        │       at most once per jwks_refresh_min); signature, then typ,
 *        │       iss, aud, exp, nbf, sub ──────────► principal
 *        └── otherwise, with introspection ──────► cache by SHA-256, or
 *                POST to the endpoint (at most introspection_rate new
 *                tokens a second); active, exp, aud, iss, sub ► principal
 *   principal ── lacks a required scope ─────────► AUTH_FORBIDDEN (403)
 *             └─────────────────────────────────► AUTH_OK
 *
 * A JWT verified once is remembered under its SHA-256 until it expires
 * (jwks_cache at most), like an introspection answer: a client sends the
 * same token with every request, and a signature costs more than the
 * rest of the request. A new key set from jwks_uri forgets them all, so a
 * key taken out of the set stops its tokens at once.
 *
 * A claim that is there but unusable (not a string, too long, a NUL in
 * it) refuses the token: it is never replaced by another claim nor read
 * cut short. An introspection answer that is not what RFC 7662 says (not
 * a JSON object with a boolean active) is not an answer: 503, and
 * nothing is cached.
 *
 * This file is the policy: where a token goes, static tokens, what a
 * refusal says, which scopes an item needs. A JWT is auth_jwt.c's to
 * verify, an opaque token auth_introspect.c's to ask about; a check ends
 * through auth_answer.c, on a later loop turn, exactly once (auth_int.h
 * has the whole map).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth_int.h"
#include "conf.h"
#include "http_client.h"
#include "jwks.h"
#include "jwt.h"
#include "log.h"
#include "server.h"
#include "trace.h"
#include "xmalloc.h"

#define AUTH_TOKEN_FILE_MAX	(1024 * 1024)
#define AUTH_ISSUER_STATIC	"mcpd:token_file"
#define AUTH_WK_PATH		"/.well-known/oauth-protected-resource"

/* One line of token_file. */
struct auth_static {
	unsigned char		 hash[JWT_SHA256_LEN];
	struct auth_principal	*principal;
};

static struct {
	const struct conf	*conf;		/* the one auth started with */
	const struct conf_auth	*a;
	char			*metadata_url;
	char			*metadata_path;
	struct auth_static	*statics;
	size_t			 nstatics;
} auth;

/* ---------------------------------------------------------------------
 * Files: jwks_file and token_file.
 */

static int
auth_hex_digit(int ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return (ch - 'a' + 10);
	return (-1);
}

/* One line: SHA256HEX SUBJECT [SCOPE...]; 1 for a line, 0 for none. */
static int
auth_static_line(char *line, struct auth_static *st, char **why)
{
	char	*words[2 + AUTH_SCOPES_MAX], *p, *scopes;
	size_t	 n = 0, i, len;
	int	 hi, lo;

	line[strcspn(line, "#\r\n")] = '\0';
	for (p = strtok(line, " \t"); p != NULL; p = strtok(NULL, " \t")) {
		if (n == sizeof words / sizeof words[0]) {
			xasprintf(why, "more than %d scopes", AUTH_SCOPES_MAX);
			return (-1);
		}
		words[n++] = p;
	}
	if (n == 0)
		return (0);
	if (n < 2) {
		xasprintf(why, "expected SHA256HEX SUBJECT [SCOPE...]");
		return (-1);
	}
	if (strlen(words[0]) != 2 * JWT_SHA256_LEN) {
		xasprintf(why, "the hash must be 64 hex digits");
		return (-1);
	}
	for (i = 0; i < JWT_SHA256_LEN; i++) {
		hi = auth_hex_digit((u_char)words[0][2 * i]);
		lo = auth_hex_digit((u_char)words[0][2 * i + 1]);
		if (hi < 0 || lo < 0) {
			xasprintf(why, "the hash must be 64 hex digits");
			return (-1);
		}
		st->hash[i] = (hi << 4) | lo;
	}
	if (strlen(words[1]) > AUTH_CLAIM_MAX) {
		xasprintf(why, "subject too long");
		return (-1);
	}
	scopes = xstrdup("");
	for (i = 2; i < n; i++) {
		if (!conf_scope_ok(words[i])) {
			xasprintf(why, "invalid scope \"%s\"", words[i]);
			free(scopes);
			return (-1);
		}
		len = strlen(scopes);
		scopes = xrealloc(scopes, len + strlen(words[i]) + 2);
		snprintf(scopes + len, strlen(words[i]) + 2, "%s%s",
		    len == 0 ? "" : " ", words[i]);
	}
	st->principal = auth_principal_new(AUTH_ISSUER_STATIC, words[1], NULL,
	    scopes);
	free(scopes);
	return (1);
}

static void
auth_statics_free(struct auth_static *list, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		auth_principal_unref(list[i].principal);
	free(list);
}

static int
auth_load_statics(const char *path, struct auth_static **listp, size_t *np,
    char **cause)
{
	FILE			*f;
	char			*line = NULL, *why;
	size_t			 size = 0, n = 0, total = 0;
	ssize_t			 len;
	struct auth_static	*list = NULL, st;
	int			 lineno = 0, r;

	if ((f = fopen(path, "r")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (-1);
	}
	while ((len = getline(&line, &size, f)) != -1) {
		lineno++;
		total += len;
		if (total > AUTH_TOKEN_FILE_MAX) {
			xasprintf(cause, "%s: larger than %d bytes", path,
			    AUTH_TOKEN_FILE_MAX);
			goto fail;
		}
		if ((r = auth_static_line(line, &st, &why)) < 0) {
			xasprintf(cause, "%s:%d: %s", path, lineno, why);
			free(why);
			goto fail;
		}
		if (r == 0)
			continue;
		list = xreallocarray(list, n + 1, sizeof *list);
		list[n++] = st;
	}
	free(line);
	fclose(f);
	*listp = list;
	*np = n;
	return (0);

fail:
	free(line);
	fclose(f);
	auth_statics_free(list, n);
	return (-1);
}

int
auth_check_files(const struct conf *conf, char **cause)
{
	const struct conf_auth	*a = conf->auth;
	struct jwks		*keys;
	struct auth_static	*list;
	size_t			 n;
	char			*why;

	if (a == NULL)
		return (0);
	if (a->jwks_file != NULL) {
		if ((keys = jwks_load(a->jwks_file, &why)) == NULL) {
			xasprintf(cause, "jwks_file %s: %s", a->jwks_file, why);
			free(why);
			return (-1);
		}
		jwks_free(keys);
	}
	if (a->token_file != NULL) {
		if (auth_load_statics(a->token_file, &list, &n, cause) != 0)
			return (-1);
		auth_statics_free(list, n);
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * The check.
 */

/* The token of "Bearer TOKEN", or NULL. */
static const char *
auth_bearer(const char *header, size_t *len)
{
	const char	*p;

	if (header == NULL || strncasecmp(header, "Bearer", 6) != 0 ||
	    (header[6] != ' ' && header[6] != '\t'))
		return (NULL);
	for (p = header + 6; *p == ' ' || *p == '\t'; p++)
		;
	*len = strcspn(p, " \t\r\n");
	return (p);
}

static void	auth_metadata_locate(const char *, char **, char **);

static char **
auth_words_copy(char *const *list, size_t n)
{
	char	**copy;
	size_t	  i;

	copy = xcalloc(n + 1, sizeof *copy);
	for (i = 0; i < n; i++)
		copy[i] = xstrdup(list[i]);
	return (copy);
}

/*
 * The endpoint block at path, or NULL (the default endpoint without one,
 * or no endpoint: then only the auth block's requirements apply).
 */
const struct conf_endpoint *
auth_endpoint_block(const char *path)
{
	return (path != NULL ? conf_endpoint_find(server.conf, path) : NULL);
}

/*
 * The canonical URI (RFC 8707) of the endpoint at path (allocated): its
 * block's resource, the auth block's for the default endpoint, else the
 * auth block's resource with its path replaced by the endpoint's.
 */
char *
auth_endpoint_resource(const char *path)
{
	const struct conf_endpoint	*ep = auth_endpoint_block(path);
	const char			*r = auth.a->resource, *host;
	char				*s;

	if (ep != NULL && ep->resource != NULL)
		return (xstrdup(ep->resource));
	if (path == NULL || strcmp(path, server.conf->endpoint) == 0)
		return (xstrdup(r));
	host = strstr(r, "://") + 3;
	xasprintf(&s, "%.*s%s", (int)(host + strcspn(host, "/?") - r), r,
	    path);
	return (s);
}

static void
auth_check_token(struct auth_check *c, const char *header)
{
	const char		*token;
	unsigned char		 hash[JWT_SHA256_LEN];
	size_t			 len = 0, i;

	if ((token = auth_bearer(header, &len)) == NULL) {
		auth_answer(c, AUTH_MISSING, "no bearer token");
		return;
	}
	if (len == 0 || token[len] != '\0') {
		auth_answer(c, AUTH_INVALID, "malformed Authorization header");
		return;
	}
	if ((long long)len > auth.a->max_token) {
		auth_answer(c, AUTH_INVALID, "the token is too large "
		    "(max_token)");
		return;
	}
	jwt_sha256(token, len, hash);
	memcpy(c->hash, hash, sizeof c->hash);
	c->token = xstrndup(token, len);
	c->token_len = len;
	for (i = 0; i < auth.nstatics; i++) {
		if (jwt_equal(hash, auth.statics[i].hash, sizeof hash)) {
			auth_answer_found(c, auth_principal_ref(
			    auth.statics[i].principal));
			return;
		}
	}
	if ((auth.a->jwks_file != NULL || auth.a->jwks_uri != NULL) &&
	    jwt_looks_like(token, len)) {
		auth_jwt_check(c, token, len);
		return;
	}
	if (auth.a->introspection != NULL) {
		auth_introspect_check(c, token, len);
		return;
	}
	auth_answer(c, AUTH_INVALID, auth.a->jwks_file != NULL ||
	    auth.a->jwks_uri != NULL ? "not a JWT" : "unknown token");
}

/*
 * A token check is a span under the current one (the HTTP request's),
 * current while the check runs: a key set fetch or an introspection
 * request it starts is traced under it.
 */
void
auth_check(const char *header, const char *endpoint, auth_check_cb *cb,
    void *arg)
{
	const struct conf_endpoint	*ep;
	struct auth_check		*c;
	int				 depth;

	c = auth_answer_new(cb, arg);
	if (endpoint != NULL) {
		c->endpoint = xstrdup(endpoint);
		c->result.endpoint = c->endpoint;
		if ((ep = auth_endpoint_block(endpoint)) != NULL) {
			c->scopes = auth_words_copy(ep->scopes,
			    ep->nscopes);
			c->nscopes = ep->nscopes;
		}
	}
	c->resource = auth_endpoint_resource(endpoint);
	if (trace_current() != NULL)
		c->span = trace_child("token check", TRACE_INTERNAL,
		    trace_current());
	depth = trace_enter(c->span);
	auth_check_token(c, header);
	trace_leave(depth);
}

size_t
auth_pending(void)
{
	return (auth_answer_pending());
}

/* ---------------------------------------------------------------------
 * What the client is told.
 */

/* The endpoint's required scopes (its block's), for a challenge. */
static char *
auth_endpoint_scopes(const char *path, const char *extra)
{
	const struct conf_endpoint	*ep = auth_endpoint_block(path);

	return (auth_answer_scopes(ep != NULL ? ep->scopes : NULL,
	    ep != NULL ? ep->nscopes : 0, extra));
}

char *
auth_challenge(const struct auth_result *r)
{
	char	*s, *scopes, *url;

	auth_metadata_locate(r->endpoint, NULL, &url);
	switch (r->status) {
	case AUTH_MISSING:
		scopes = auth_endpoint_scopes(r->endpoint, NULL);
		if (*scopes != '\0')
			xasprintf(&s, "Bearer resource_metadata=\"%s\", "
			    "scope=\"%s\"", url, scopes);
		else
			xasprintf(&s, "Bearer resource_metadata=\"%s\"", url);
		free(scopes);
		break;
	case AUTH_FORBIDDEN:
		xasprintf(&s, "Bearer error=\"insufficient_scope\", "
		    "scope=\"%s\", resource_metadata=\"%s\", "
		    "error_description=\"%s\"", r->scope != NULL ? r->scope :
		    "", url, r->description != NULL ? r->description :
		    "insufficient scope");
		break;
	default:
		xasprintf(&s, "Bearer error=\"invalid_token\", "
		    "error_description=\"%s\", resource_metadata=\"%s\"",
		    r->description != NULL ? r->description : "invalid token",
		    url);
		break;
	}
	free(url);
	return (s);
}

static void
auth_add_scope(cJSON *list, const char *scope)
{
	const cJSON	*v;

	cJSON_ArrayForEach(v, list) {
		if (strcmp(v->valuestring, scope) == 0)
			return;
	}
	cJSON_AddItemToArray(list, cJSON_CreateString(scope));
}

/*
 * The metadata of the endpoint at path (NULL: the default): its resource,
 * and the scopes of what it serves (the exec tools and upstreams its
 * catalog lets through).
 */
cJSON *
auth_metadata(const char *path)
{
	const struct conf_endpoint	*ep = auth_endpoint_block(path);
	const struct conf		*conf = server.conf;
	cJSON				*md = cJSON_CreateObject(), *list;
	char				*resource;
	size_t				 i;

	resource = auth_endpoint_resource(path);
	cJSON_AddStringToObject(md, "resource", resource);
	free(resource);
	list = cJSON_AddArrayToObject(md, "authorization_servers");
	for (i = 0; i < auth.a->nauthorization_servers; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(
		    auth.a->authorization_servers[i]));
	list = cJSON_AddArrayToObject(md, "scopes_supported");
	for (i = 0; i < auth.a->nscopes; i++)
		auth_add_scope(list, auth.a->scopes[i]);
	for (i = 0; ep != NULL && i < ep->nscopes; i++)
		auth_add_scope(list, ep->scopes[i]);
	for (i = 0; i < conf->ntools; i++) {
		if (conf->tools[i].scope != NULL && conf_endpoint_serves(ep,
		    CONF_CATALOG_TOOLS, conf->tools[i].name, NULL))
			auth_add_scope(list, conf->tools[i].scope);
	}
	for (i = 0; i < conf->nupstreams; i++) {
		if (conf->upstreams[i].scope != NULL &&
		    conf_endpoint_serves_source(ep, conf->upstreams[i].name))
			auth_add_scope(list, conf->upstreams[i].scope);
	}
	for (i = 0; i < server.conf->nopenapis; i++) {
		if (server.conf->openapis[i].scope != NULL)
			auth_add_scope(list, server.conf->openapis[i].scope);
	}
	list = cJSON_AddArrayToObject(md, "bearer_methods_supported");
	cJSON_AddItemToArray(list, cJSON_CreateString("header"));
	cJSON_AddStringToObject(md, "resource_name", "mcpd");
	return (md);
}

const char *
auth_metadata_path(int suffixed)
{
	return (suffixed ? auth.metadata_path : AUTH_WK_PATH);
}

/*
 * RFC 9728 (3.1): the well-known path goes between the resource's host
 * and its path, https://mcp.example.com/mcp having its metadata at
 * https://mcp.example.com/.well-known/oauth-protected-resource/mcp.
 * Either pointer may be NULL.
 */
static void
auth_metadata_where(const char *resource, char **pathp, char **urlp)
{
	const char	*host = strstr(resource, "://") + 3;
	const char	*path = host + strcspn(host, "/?");
	size_t		 plen = strcspn(path, "?");
	char		*mp;

	if (plen == 1 && *path == '/')
		plen = 0;
	xasprintf(&mp, "%s%.*s", AUTH_WK_PATH, (int)plen, path);
	if (urlp != NULL)
		xasprintf(urlp, "%.*s%s", (int)(path - resource), resource,
		    mp);
	if (pathp != NULL)
		*pathp = mp;
	else
		free(mp);
}

/* Where the metadata of the endpoint at path (NULL: default) is. */
static void
auth_metadata_locate(const char *endpoint, char **pathp, char **urlp)
{
	char	*resource = auth_endpoint_resource(endpoint);

	auth_metadata_where(resource, pathp, urlp);
	free(resource);
}

const char *
auth_metadata_endpoint(const char *path)
{
	const struct conf_endpoint	*ep;
	char				*mp;
	size_t				 i;
	int				 same;

	for (i = 0; auth.a != NULL && i < server.conf->nendpoints; i++) {
		ep = &server.conf->endpoints[i];
		if (strcmp(ep->path, server.conf->endpoint) == 0)
			continue;	/* the default's, registered at start */
		auth_metadata_locate(ep->path, &mp, NULL);
		same = strcmp(mp, path) == 0;
		free(mp);
		if (same)
			return (ep->path);
	}
	return (NULL);
}

/* ---------------------------------------------------------------------
 * Scopes of tools, prompts, resources and templates, as their providers
 * name them (provider_tool_scope, provider_item_scope: the caller asks).
 */

/* Whether p may use an item that needs scope (NULL: none); 1 without auth. */
int
auth_scope_allowed(const struct auth_principal *p, const char *scope)
{
	if (auth.a == NULL || scope == NULL)
		return (1);
	return (auth_principal_has_scope(p, scope));
}

char *
auth_scopes_needed(const char *endpoint, const char *scope)
{
	return (auth_endpoint_scopes(endpoint, scope));
}

/* ---------------------------------------------------------------------
 * Start and end.
 */

int
auth_enabled(void)
{
	return (auth.a != NULL);
}

int
auth_init(struct event_base *base, const struct conf *conf, char **cause)
{
	const struct conf_auth	*a = conf->auth;

	auth_answer_init(base, a);
	if (a == NULL)
		return (0);
	if (auth_jwt_init(a, cause) != 0) {
		auth_jwt_shutdown();
		return (-1);
	}
	if (a->token_file != NULL && auth_load_statics(a->token_file,
	    &auth.statics, &auth.nstatics, cause) != 0) {
		auth_jwt_shutdown();
		return (-1);
	}
	auth_cache_init(a->cache_max);
	auth_introspect_init(a);
	auth.conf = conf_ref(conf);
	auth.a = a;
	auth_metadata_where(a->resource, &auth.metadata_path,
	    &auth.metadata_url);
	log_info("auth: resource %s, issuer %s; %zu keys from jwks_file, "
	    "%zu static tokens%s%s", a->resource, a->issuer,
	    auth_jwt_file_keys(), auth.nstatics,
	    a->jwks_uri != NULL ? ", jwks_uri" : "",
	    a->introspection != NULL ? ", introspection" : "");
	auth_jwt_start();
	return (0);
}

void
auth_shutdown(void)
{
	if (auth.a == NULL)
		return;
	/* The fetches' callbacks answer their waiters. */
	http_client_shutdown();
	auth_answer_shutdown();
	auth_cache_clear();
	auth_jwt_shutdown();
	auth_introspect_shutdown();
	auth_statics_free(auth.statics, auth.nstatics);
	free(auth.metadata_url);
	free(auth.metadata_path);
	conf_release(auth.conf);
	memset(&auth, 0, sizeof auth);
}
