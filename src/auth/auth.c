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
 * This file is the policy and the check; a JWT is auth_jwt.c's to
 * verify, a token for the introspection endpoint auth_introspect.c's to
 * ask about (auth_int.h).
 *
 * Every check is answered on a later loop turn through its own event,
 * also when nothing had to be waited for, so transport.c meets one
 * interleaving. Checks that wait (for a key set, an introspection answer)
 * are counted and bounded by max_pending.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "auth_int.h"
#include "clock.h"
#include "conf.h"
#include "http_client.h"
#include "jwks.h"
#include "jwt.h"
#include "log.h"
#include "provider.h"
#include "server.h"
#include "xmalloc.h"

#define AUTH_TOKEN_FILE_MAX	(1024 * 1024)
#define AUTH_ISSUER_STATIC	"mcpd:token_file"
#define AUTH_SCOPES_MAX		64		/* scopes kept of a token */
#define AUTH_WK_PATH		"/.well-known/oauth-protected-resource"

struct auth_principal {
	unsigned int	 refs;
	char		*issuer;
	char		*subject;
	char		*client_id;	/* NULL if none */
	char		**scopes;
	size_t		 nscopes;
};

/* One line of token_file. */
struct auth_static {
	unsigned char		 hash[JWT_SHA256_LEN];
	struct auth_principal	*principal;
};

RB_HEAD(auth_cache_tree, auth_cache);
TAILQ_HEAD(auth_cache_list, auth_cache);

static struct {
	const struct conf	*conf;		/* the one auth started with */
	const struct conf_auth	*a;
	struct event_base	*base;
	char			*metadata_url;
	char			*metadata_path;
	struct auth_static	*statics;
	size_t			 nstatics;
	struct auth_checks	 checks;	/* every check not answered */
	size_t			 pending;
	struct auth_cache_tree	 cache;
	struct auth_cache_list	 cache_order;
	size_t			 ncache;
} auth;

static int
auth_cache_cmp(struct auth_cache *x, struct auth_cache *y)
{
	return (memcmp(x->hash, y->hash, sizeof x->hash));
}
RB_GENERATE_STATIC(auth_cache_tree, auth_cache, tree, auth_cache_cmp);

/* ---------------------------------------------------------------------
 * Principals.
 */

struct auth_principal *
auth_principal_new(const char *issuer, const char *subject,
    const char *client_id, const char *scopes)
{
	struct auth_principal	*p;
	const char		*s, *end;

	p = xcalloc(1, sizeof *p);
	p->refs = 1;
	p->issuer = xstrdup(issuer);
	p->subject = xstrdup(subject);
	p->client_id = client_id != NULL ? xstrdup(client_id) : NULL;
	for (s = scopes; s != NULL && *s != '\0'; s = end) {
		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		end = s + strcspn(s, " ");
		if (p->nscopes == AUTH_SCOPES_MAX)
			break;
		p->scopes = xreallocarray(p->scopes, p->nscopes + 1,
		    sizeof *p->scopes);
		p->scopes[p->nscopes++] = xstrndup(s, end - s);
	}
	return (p);
}

struct auth_principal *
auth_principal_ref(struct auth_principal *p)
{
	if (p != NULL)
		p->refs++;
	return (p);
}

void
auth_principal_unref(struct auth_principal *p)
{
	size_t	i;

	if (p == NULL)
		return;
	if (p->refs == 0)
		fatalx("auth_principal_unref: no reference left");
	if (--p->refs > 0)
		return;
	free(p->issuer);
	free(p->subject);
	free(p->client_id);
	for (i = 0; i < p->nscopes; i++)
		free(p->scopes[i]);
	free(p->scopes);
	free(p);
}

static int
auth_str_same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (strcmp(a, b) == 0);
}

int
auth_principal_same(const struct auth_principal *a,
    const struct auth_principal *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (auth_str_same(a->issuer, b->issuer) &&
	    auth_str_same(a->subject, b->subject) &&
	    auth_str_same(a->client_id, b->client_id));
}

const char *
auth_principal_issuer(const struct auth_principal *p)
{
	return (p->issuer);
}

const char *
auth_principal_subject(const struct auth_principal *p)
{
	return (p->subject);
}

const char *
auth_principal_client_id(const struct auth_principal *p)
{
	return (p->client_id);
}

int
auth_principal_has_scope(const struct auth_principal *p, const char *scope)
{
	size_t	i;

	for (i = 0; p != NULL && i < p->nscopes; i++) {
		if (strcmp(p->scopes[i], scope) == 0)
			return (1);
	}
	return (0);
}

char *
auth_principal_scopes(const struct auth_principal *p)
{
	char	*s = xstrdup(""), *t;
	size_t	 i;

	for (i = 0; p != NULL && i < p->nscopes; i++) {
		xasprintf(&t, "%s%s%s", s, i == 0 ? "" : " ", p->scopes[i]);
		free(s);
		s = t;
	}
	return (s);
}

cJSON *
auth_principal_json(const struct auth_principal *p)
{
	cJSON	*json = cJSON_CreateObject();

	cJSON_AddStringToObject(json, "iss", p->issuer);
	cJSON_AddStringToObject(json, "sub", p->subject);
	if (p->client_id != NULL)
		cJSON_AddStringToObject(json, "client_id", p->client_id);
	return (json);
}

struct auth_principal *
auth_principal_from_json(const cJSON *json)
{
	const cJSON	*iss, *sub, *cid;

	iss = cJSON_GetObjectItemCaseSensitive(json, "iss");
	sub = cJSON_GetObjectItemCaseSensitive(json, "sub");
	cid = cJSON_GetObjectItemCaseSensitive(json, "client_id");
	if (!cJSON_IsString(iss) || !cJSON_IsString(sub) ||
	    (cid != NULL && !cJSON_IsString(cid)))
		return (NULL);
	return (auth_principal_new(iss->valuestring, sub->valuestring,
	    cid != NULL ? cid->valuestring : NULL, NULL));
}

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
 * Answering checks.
 */

static void
auth_deliver_cb(evutil_socket_t fd, short events, void *arg)
{
	struct auth_check	*c = arg;

	TAILQ_REMOVE(&auth.checks, c, entry);
	c->cb(&c->result, c->arg);
	auth_principal_unref(c->result.principal);
	event_free(c->ev);
	jwt_free(c->jwt);
	free(c->scope_text);
	free(c);
}

static void
auth_uncount(struct auth_check *c)
{
	if (c->counted) {
		c->counted = 0;
		auth.pending--;
	}
}

/* Answers c on a later turn (now, if this is a loop callback already). */
void
auth_answer(struct auth_check *c, enum auth_status status,
    const char *description)
{
	auth_uncount(c);
	c->result.status = status;
	c->result.description = description;
	if (status != AUTH_OK && status != AUTH_FORBIDDEN) {
		auth_principal_unref(c->result.principal);
		c->result.principal = NULL;
	}
	if (status == AUTH_INVALID)
		log_limited(LOG_LEVEL_INFO, "auth-invalid", "auth: token "
		    "refused: %s", description);
	event_active(c->ev, 0, 0);
}

/*
 * c waits (for a key set, an introspection answer): it counts against
 * max_pending, or, with no room left, is answered 503 and -1 returned.
 */
int
auth_wait(struct auth_check *c)
{
	if (auth.pending >= (size_t)auth.a->max_pending) {
		auth_answer(c, AUTH_UNAVAILABLE, "too many requests waiting "
		    "for authorization");
		return (-1);
	}
	c->counted = 1;
	auth.pending++;
	return (0);
}

/* The space-separated scopes every request needs (allocated). */
static char *
auth_required_text(const char *extra)
{
	char	*s = xstrdup(""), *t;
	size_t	 i;

	for (i = 0; i < auth.a->nscopes; i++) {
		xasprintf(&t, "%s%s%s", s, *s == '\0' ? "" : " ",
		    auth.a->scopes[i]);
		free(s);
		s = t;
	}
	if (extra != NULL) {
		for (i = 0; i < auth.a->nscopes; i++) {
			if (strcmp(auth.a->scopes[i], extra) == 0)
				return (s);
		}
		xasprintf(&t, "%s%s%s", s, *s == '\0' ? "" : " ", extra);
		free(s);
		s = t;
	}
	return (s);
}

/* A principal is known: the required scopes decide. Takes p. */
void
auth_found(struct auth_check *c, struct auth_principal *p)
{
	size_t	i;

	c->result.principal = p;
	for (i = 0; i < auth.a->nscopes; i++) {
		if (!auth_principal_has_scope(p, auth.a->scopes[i])) {
			c->scope_text = auth_required_text(NULL);
			c->result.scope = c->scope_text;
			log_limited(LOG_LEVEL_INFO, "auth-scope", "auth: "
			    "subject %s lacks scope %s", p->subject,
			    auth.a->scopes[i]);
			auth_answer(c, AUTH_FORBIDDEN,
			    "the token lacks a required scope");
			return;
		}
	}
	auth_answer(c, AUTH_OK, NULL);
}

/* ---------------------------------------------------------------------
 * Claims: what a JWT's claims or an introspection answer must say.
 */

/*
 * A string claim: absent (1), a string of at most AUTH_CLAIM_MAX bytes
 * (0, in *v), or there but not usable (-1).
 */
int
auth_claim_text(const cJSON *claims, const char *name, const char **v)
{
	const cJSON	*c = cJSON_GetObjectItemCaseSensitive(claims, name);

	*v = NULL;
	if (c == NULL)
		return (1);
	if (!cJSON_IsString(c) || strlen(c->valuestring) > AUTH_CLAIM_MAX)
		return (-1);
	*v = c->valuestring;
	return (0);
}

/*
 * Who a token's claims name: sub, and client_id (or azp, in a JWT). A
 * client acting for itself (client credentials) may have no sub: its
 * client id is then the subject. 0, or -1 with *why.
 */
int
auth_claim_who(const cJSON *claims, int jwt, const char **sub,
    const char **cid, const char **why)
{
	int	r;

	if ((r = auth_claim_text(claims, "client_id", cid)) < 0) {
		*why = "client_id is not a string (or too long)";
		return (-1);
	}
	if (r > 0 && jwt && auth_claim_text(claims, "azp", cid) < 0) {
		*why = "azp is not a string (or too long)";
		return (-1);
	}
	if ((r = auth_claim_text(claims, "sub", sub)) < 0) {
		*why = "sub is not a string (or too long)";
		return (-1);
	}
	if (r > 0 && (*sub = *cid) == NULL) {
		*why = "no subject (sub) nor client_id";
		return (-1);
	}
	return (0);
}

/* Whether aud (a string or an array of them) names this resource. */
int
auth_claim_aud(const cJSON *aud)
{
	const cJSON	*v;

	if (cJSON_IsString(aud))
		return (strcmp(aud->valuestring, auth.a->resource) == 0);
	if (!cJSON_IsArray(aud))
		return (0);
	cJSON_ArrayForEach(v, aud) {
		if (cJSON_IsString(v) &&
		    strcmp(v->valuestring, auth.a->resource) == 0)
			return (1);
	}
	return (0);
}

/* scope (RFC 9068: space-separated) or scp (an array), as one string. */
char *
auth_claim_scopes(const cJSON *claims)
{
	const cJSON	*scope, *v;
	char		*s, *t;

	scope = cJSON_GetObjectItemCaseSensitive(claims, "scope");
	if (cJSON_IsString(scope))
		return (xstrndup(scope->valuestring, 4096));
	s = xstrdup("");
	scope = cJSON_GetObjectItemCaseSensitive(claims, "scp");
	cJSON_ArrayForEach(v, scope) {
		if (!cJSON_IsString(v) || strlen(s) > 4096)
			continue;
		xasprintf(&t, "%s%s%s", s, *s == '\0' ? "" : " ",
		    v->valuestring);
		free(s);
		s = t;
	}
	return (s);
}

/* A time claim: absent (1), a number of seconds (0), or bad (-1). */
int
auth_claim_time(const cJSON *claims, const char *name, double *t)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(claims, name);

	if (v == NULL)
		return (1);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 1e13)
		return (-1);
	*t = v->valuedouble;
	return (0);
}

/* ---------------------------------------------------------------------
 * The cache: answered tokens by their SHA-256 (verified JWTs,
 * introspection answers and requests under way).
 */

void
auth_cache_remove(struct auth_cache *e)
{
	RB_REMOVE(auth_cache_tree, &auth.cache, e);
	TAILQ_REMOVE(&auth.cache_order, e, order);
	auth.ncache--;
	auth_principal_unref(e->principal);
	free(e);
}

/* The entry of a token's hash, unless it has expired. */
struct auth_cache *
auth_cache_find(const unsigned char *hash)
{
	struct auth_cache	 find, *e;

	memcpy(find.hash, hash, sizeof find.hash);
	if ((e = RB_FIND(auth_cache_tree, &auth.cache, &find)) != NULL &&
	    e->request == NULL && e->expires_ms <= clock_now_ms()) {
		auth_cache_remove(e);
		e = NULL;
	}
	return (e);
}

/* Room for one more entry: the expired go, then the oldest answered. */
static void
auth_cache_room(void)
{
	struct auth_cache	*e, *next;
	uint64_t		 now = clock_now_ms();

	TAILQ_FOREACH_SAFE(e, &auth.cache_order, order, next) {
		if ((long long)auth.ncache < auth.a->cache_max)
			return;
		if (e->request == NULL && e->expires_ms <= now)
			auth_cache_remove(e);
	}
	TAILQ_FOREACH_SAFE(e, &auth.cache_order, order, next) {
		if ((long long)auth.ncache < auth.a->cache_max)
			return;
		if (e->request == NULL)
			auth_cache_remove(e);
	}
}

/* A new entry for a token's hash, to be filled in by the caller. */
struct auth_cache *
auth_cache_new(const unsigned char *hash)
{
	struct auth_cache	*e;

	auth_cache_room();
	e = xcalloc(1, sizeof *e);
	memcpy(e->hash, hash, sizeof e->hash);
	TAILQ_INIT(&e->waiters);
	RB_INSERT(auth_cache_tree, &auth.cache, e);
	TAILQ_INSERT_TAIL(&auth.cache_order, e, order);
	auth.ncache++;
	return (e);
}

/* The verified JWTs go (a new key set): they are verified again. */
void
auth_cache_forget_jwts(void)
{
	struct auth_cache	*e, *next;

	TAILQ_FOREACH_SAFE(e, &auth.cache_order, order, next) {
		if (e->jwt)
			auth_cache_remove(e);
	}
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

void
auth_check(const char *header, auth_check_cb *cb, void *arg)
{
	struct auth_check	*c;
	const char		*token;
	unsigned char		 hash[JWT_SHA256_LEN];
	size_t			 len = 0, i;

	c = xcalloc(1, sizeof *c);
	c->cb = cb;
	c->arg = arg;
	c->ev = event_new(auth.base, -1, 0, auth_deliver_cb, c);
	TAILQ_INSERT_TAIL(&auth.checks, c, entry);

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
	for (i = 0; i < auth.nstatics; i++) {
		if (jwt_equal(hash, auth.statics[i].hash, sizeof hash)) {
			auth_found(c, auth_principal_ref(
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

size_t
auth_pending(void)
{
	return (auth.pending);
}

/* ---------------------------------------------------------------------
 * What the client is told.
 */

char *
auth_challenge(const struct auth_result *r)
{
	char	*s, *scopes;

	switch (r->status) {
	case AUTH_MISSING:
		scopes = auth_required_text(NULL);
		if (*scopes != '\0')
			xasprintf(&s, "Bearer resource_metadata=\"%s\", "
			    "scope=\"%s\"", auth.metadata_url, scopes);
		else
			xasprintf(&s, "Bearer resource_metadata=\"%s\"",
			    auth.metadata_url);
		free(scopes);
		break;
	case AUTH_FORBIDDEN:
		xasprintf(&s, "Bearer error=\"insufficient_scope\", "
		    "scope=\"%s\", resource_metadata=\"%s\", "
		    "error_description=\"%s\"", r->scope != NULL ? r->scope :
		    "", auth.metadata_url, r->description != NULL ?
		    r->description : "insufficient scope");
		break;
	default:
		xasprintf(&s, "Bearer error=\"invalid_token\", "
		    "error_description=\"%s\", resource_metadata=\"%s\"",
		    r->description != NULL ? r->description : "invalid token",
		    auth.metadata_url);
		break;
	}
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

cJSON *
auth_metadata(void)
{
	cJSON	*md = cJSON_CreateObject(), *list;
	size_t	 i;

	cJSON_AddStringToObject(md, "resource", auth.a->resource);
	list = cJSON_AddArrayToObject(md, "authorization_servers");
	for (i = 0; i < auth.a->nauthorization_servers; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(
		    auth.a->authorization_servers[i]));
	list = cJSON_AddArrayToObject(md, "scopes_supported");
	for (i = 0; i < auth.a->nscopes; i++)
		auth_add_scope(list, auth.a->scopes[i]);
	for (i = 0; i < server.conf->ntools; i++) {
		if (server.conf->tools[i].scope != NULL)
			auth_add_scope(list, server.conf->tools[i].scope);
	}
	for (i = 0; i < server.conf->nupstreams; i++) {
		if (server.conf->upstreams[i].scope != NULL)
			auth_add_scope(list, server.conf->upstreams[i].scope);
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
 */
static void
auth_metadata_where(const char *resource)
{
	const char	*host = strstr(resource, "://") + 3;
	const char	*path = host + strcspn(host, "/?");
	size_t		 plen = strcspn(path, "?");

	if (plen == 1 && *path == '/')
		plen = 0;
	xasprintf(&auth.metadata_path, "%s%.*s", AUTH_WK_PATH, (int)plen,
	    path);
	xasprintf(&auth.metadata_url, "%.*s%s", (int)(path - resource),
	    resource, auth.metadata_path);
}

/* ---------------------------------------------------------------------
 * Tools.
 */

const char *
auth_tool_scope(const char *tool)
{
	const struct conf_tool	*t;

	if ((t = conf_tool_find(server.conf, tool)) != NULL)
		return (t->scope);
	return (provider_tool_scope(tool));
}

int
auth_tool_allowed(const struct auth_principal *p, const char *tool)
{
	const char	*scope;

	if (auth.a == NULL || (scope = auth_tool_scope(tool)) == NULL)
		return (1);
	return (auth_principal_has_scope(p, scope));
}

char *
auth_tool_scopes_needed(const char *tool)
{
	return (auth_required_text(auth_tool_scope(tool)));
}

/* Prompts, resources and templates: the scope their provider names. */
int
auth_scope_allowed(const struct auth_principal *p, const char *scope)
{
	if (auth.a == NULL || scope == NULL)
		return (1);
	return (auth_principal_has_scope(p, scope));
}

char *
auth_scopes_needed(const char *scope)
{
	return (auth_required_text(scope));
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

	auth.base = base;
	TAILQ_INIT(&auth.checks);
	RB_INIT(&auth.cache);
	TAILQ_INIT(&auth.cache_order);
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
	auth_introspect_init(a);
	auth.conf = conf_ref(conf);
	auth.a = a;
	auth_metadata_where(a->resource);
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
	struct auth_check	*c;
	struct auth_cache	*e;

	if (auth.a == NULL)
		return;
	/* The fetches' callbacks answer their waiters. */
	http_client_shutdown();
	while ((c = TAILQ_FIRST(&auth.checks)) != NULL) {
		if (c->waiting != NULL) {
			TAILQ_REMOVE(&c->waiting->waiters, c, wait);
			c->waiting = NULL;
			auth_answer(c, AUTH_UNAVAILABLE, "shutting down");
		}
		/* Nothing new is served now, whatever the token was. */
		if (c->result.status != AUTH_UNAVAILABLE) {
			auth_principal_unref(c->result.principal);
			c->result.principal = NULL;
			c->result.status = AUTH_UNAVAILABLE;
			c->result.description = "shutting down";
		}
		auth_uncount(c);
		event_del(c->ev);
		auth_deliver_cb(-1, 0, c);
	}
	while ((e = TAILQ_FIRST(&auth.cache_order)) != NULL)
		auth_cache_remove(e);
	auth_jwt_shutdown();
	auth_introspect_shutdown();
	auth_statics_free(auth.statics, auth.nstatics);
	free(auth.metadata_url);
	free(auth.metadata_path);
	conf_release(auth.conf);
	memset(&auth, 0, sizeof auth);
}
