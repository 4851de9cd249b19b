/*
 * JWT access tokens (RFC 9068): a token's signature is checked with the
 * keys of jwks_file and of jwks_uri's set, then its claims (typ, iss, aud,
 * exp, nbf, sub) make its principal. jwks_uri's set is fetched at start,
 * again after jwks_cache, and when a token names a kid the set lacks (at
 * most once per jwks_refresh_min); checks waiting for it wait here. A
 * verified token is remembered in auth_cache.c until it expires; a new
 * key set forgets them all, so a key taken out stops its tokens at once.
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth_int.h"
#include "clock.h"
#include "conf.h"
#include "http_client.h"
#include "jwks.h"
#include "log.h"
#include "trace.h"
#include "xmalloc.h"

static struct {
	const struct conf_auth	*a;
	struct jwks		*file;		/* jwks_file's */
	struct jwks		*uri;		/* jwks_uri's, once fetched */
	uint64_t		 uri_fetched_ms;
	uint64_t		 uri_refresh_ms;	/* for an unknown kid */
	int			 uri_refreshed;
	struct http_client	*uri_fetch;
	struct auth_checks	 waiters;	/* for uri_fetch */
} keys;

static void	auth_jwt_fetch(void);

/* RFC 9068 (2.1, 4): typ at+jwt, or its media type, in any case. */
static int
auth_jwt_typ_ok(const char *typ)
{
	if (keys.a->token_type == CONF_TOKEN_ANY)
		return (1);
	return (typ != NULL && (strcasecmp(typ, "at+jwt") == 0 ||
	    strcasecmp(typ, "application/at+jwt") == 0));
}

/* The claims of a verified JWT: its principal, or NULL and why not. */
static struct auth_principal *
auth_jwt_principal(const struct jwt *j, double *expp, const char **why)
{
	const cJSON	*claims = jwt_claims(j), *aud;
	const char	*iss, *sub, *cid;
	double		 now = (double)clock_wall_ms() / 1000, exp, nbf;
	double		 leeway = (double)keys.a->leeway;
	struct auth_principal *p;
	char		*scopes;
	int		 r;

	if (!auth_jwt_typ_ok(jwt_typ(j))) {
		*why = "the token's typ is not at+jwt";
		return (NULL);
	}
	if (auth_claim_text(claims, "iss", &iss) != 0 ||
	    strcmp(iss, keys.a->issuer) != 0) {
		*why = "wrong issuer (iss)";
		return (NULL);
	}
	/* Which resource it must name is the request's (auth_answer_found). */
	aud = cJSON_GetObjectItemCaseSensitive(claims, "aud");
	if (!cJSON_IsString(aud) && !cJSON_IsArray(aud)) {
		*why = "the audience (aud) is not this resource";
		return (NULL);
	}
	if ((r = auth_claim_time(claims, "exp", &exp)) != 0) {
		*why = r > 0 ? "no expiry (exp)" : "exp is not a number";
		return (NULL);
	}
	if (now > exp + leeway) {
		*why = "the token has expired";
		return (NULL);
	}
	*expp = exp;
	if ((r = auth_claim_time(claims, "nbf", &nbf)) < 0) {
		*why = "nbf is not a number";
		return (NULL);
	}
	if (r == 0 && nbf > now + leeway) {
		*why = "the token is not valid yet (nbf)";
		return (NULL);
	}
	if (auth_claim_who(claims, 1, &sub, &cid, why) != 0)
		return (NULL);
	scopes = auth_claim_scopes(claims);
	p = auth_principal_new(iss, sub, cid, scopes);
	free(scopes);
	auth_principal_set_claims(p, aud, exp);
	return (p);
}

static int
auth_jwt_try(const struct jwt *j, const struct jwks *set)
{
	const struct jwt_key	*key;
	size_t			 i = 0;

	while ((key = jwks_next(set, jwt_kid(j), jwt_alg(j), &i)) != NULL) {
		if (jwt_verify(j, key) == 0)
			return (0);
	}
	return (-1);
}

/* A verified JWT, remembered until it expires (jwks_cache at most). */
static void
auth_jwt_remember(const unsigned char *hash, struct auth_principal *p,
    double exp)
{
	struct auth_cache	*e;
	double			 left;
	uint64_t		 ttl = (uint64_t)keys.a->jwks_cache * 1000;

	if (auth_cache_find(hash) != NULL)
		return;
	left = (exp + (double)keys.a->leeway) * 1000 -
	    (double)clock_wall_ms();
	if (left <= 0)
		return;
	if (left < (double)ttl)
		ttl = (uint64_t)left;
	e = auth_cache_new(hash);
	e->principal = auth_principal_ref(p);
	e->jwt = 1;
	e->expires_ms = clock_now_ms() + ttl;
}

/* Verifies with the keys there are now; answers c. */
static void
auth_jwt_verify(struct auth_check *c)
{
	struct auth_principal	*p;
	const char		*why = "invalid token";
	double			 exp = 0;

	if (auth_jwt_try(c->jwt, keys.file) != 0 &&
	    auth_jwt_try(c->jwt, keys.uri) != 0) {
		if (keys.a->jwks_uri != NULL && keys.uri == NULL)
			auth_answer(c, AUTH_UNAVAILABLE, "the authorization "
			    "server's keys cannot be fetched");
		else if (jwt_kid(c->jwt) != NULL &&
		    !jwks_has_kid(keys.file, jwt_kid(c->jwt)) &&
		    !jwks_has_kid(keys.uri, jwt_kid(c->jwt)))
			auth_answer(c, AUTH_INVALID, "no key with the token's "
			    "kid");
		else
			auth_answer(c, AUTH_INVALID, "bad signature");
		return;
	}
	if ((p = auth_jwt_principal(c->jwt, &exp, &why)) == NULL) {
		auth_answer(c, AUTH_INVALID, why);
		return;
	}
	auth_jwt_remember(c->hash, p, exp);
	auth_answer_found(c, p);
}

/*
 * Whether a token naming an unknown kid may have the set fetched again:
 * once per jwks_refresh_min, however many such tokens come.
 */
static int
auth_jwt_may_refresh(void)
{
	return (!keys.uri_refreshed || clock_now_ms() - keys.uri_refresh_ms >=
	    (uint64_t)keys.a->jwks_refresh_min * 1000);
}

/*
 * A token that looks like a JWT: from the cache, or verified now, or
 * once a fresh key set has come when it names a kid the sets lack.
 */
void
auth_jwt_check(struct auth_check *c, const char *token, size_t len)
{
	struct auth_cache	*e;
	const char		*why, *kid;
	int			 known;

	if ((e = auth_cache_find(c->hash)) != NULL && e->jwt) {
		auth_answer_found(c, auth_principal_ref(e->principal));
		return;
	}
	if ((c->jwt = jwt_parse(token, len, &why)) == NULL) {
		auth_answer(c, AUTH_INVALID, why);
		return;
	}
	if (keys.a->jwks_uri == NULL) {
		auth_jwt_verify(c);
		return;
	}
	kid = jwt_kid(c->jwt);
	known = (kid != NULL && jwks_has_kid(keys.file, kid)) ||
	    (keys.uri != NULL && (kid == NULL ||
	    jwks_has_kid(keys.uri, kid)));
	if (!known && (keys.uri_fetch != NULL || auth_jwt_may_refresh())) {
		/* Wait for a fresh set: the key may just have rotated. */
		if (auth_answer_wait(c) != 0)
			return;
		TAILQ_INSERT_TAIL(&keys.waiters, c, wait);
		if (keys.uri_fetch == NULL) {
			keys.uri_refreshed = 1;
			keys.uri_refresh_ms = clock_now_ms();
			auth_jwt_fetch();
		}
		return;
	}
	/* A set older than jwks_cache is fetched again, in the background. */
	if (keys.uri != NULL && keys.uri_fetch == NULL &&
	    clock_now_ms() - keys.uri_fetched_ms >=
	    (uint64_t)keys.a->jwks_cache * 1000) {
		keys.uri_fetched_ms = clock_now_ms();	/* once per period */
		auth_jwt_fetch();
	}
	auth_jwt_verify(c);
}

/* The fetch is over (or never started): its waiters verify now. */
static void
auth_jwt_waiters(void)
{
	struct auth_check	*c;

	while ((c = TAILQ_FIRST(&keys.waiters)) != NULL) {
		TAILQ_REMOVE(&keys.waiters, c, wait);
		auth_jwt_verify(c);
	}
}

static void
auth_jwt_fetched_cb(struct http_client *hc, void *arg)
{
	struct jwks		*set;
	const char		*body;
	size_t			 len;
	char			*why;

	keys.uri_fetch = NULL;
	auth_trace_response(arg, hc);
	if (http_client_status(hc) != 200) {
		log_limited(LOG_LEVEL_WARN, "auth-jwks", "auth: jwks_uri %s: "
		    "%s", keys.a->jwks_uri, http_client_status(hc) != 0 ?
		    "status not 200" : http_client_error(hc));
	} else {
		body = http_client_body(hc, &len);
		if ((set = jwks_parse(body, len, &why)) == NULL) {
			log_limited(LOG_LEVEL_WARN, "auth-jwks", "auth: "
			    "jwks_uri %s: %s", keys.a->jwks_uri, why);
			free(why);
		} else {
			jwks_free(keys.uri);
			keys.uri = set;
			/* What the old set verified is verified again. */
			auth_cache_forget_jwts();
			keys.uri_fetched_ms = clock_now_ms();
			log_info("auth: jwks_uri %s: %zu keys",
			    keys.a->jwks_uri, jwks_count(set));
		}
	}
	auth_jwt_waiters();
}

static void
auth_jwt_fetch(void)
{
	struct http_client_request	 r;
	struct http_client_header	 h[2] = { { "Accept",
					    "application/json" } };
	struct trace_span		*sp;
	char				*cause, tp[TRACE_PARENT_LEN + 1];

	memset(&r, 0, sizeof r);
	r.method = "GET";
	r.url = keys.a->jwks_uri;
	r.headers = h;
	r.nheaders = 1;
	sp = auth_trace_request(r.method, r.url);
	if (auth_trace_header(sp, tp) == 0) {
		h[1].name = "traceparent";
		h[1].value = tp;
		r.nheaders = 2;
	}
	r.max_body = JWKS_MAX_SIZE;
	r.timeout_ms = (int)keys.a->timeout * 1000;
	r.done = auth_jwt_fetched_cb;
	r.arg = sp;
	log_debug("auth: fetching %s", keys.a->jwks_uri);
	if ((keys.uri_fetch = http_client_start(&r, &cause)) == NULL) {
		log_limited(LOG_LEVEL_WARN, "auth-jwks", "auth: jwks_uri: %s",
		    cause);
		trace_error(sp, "connection", cause);
		trace_end(sp);
		free(cause);
		auth_jwt_waiters();
	}
}

/* jwks_file's keys, read now; jwks_uri's are fetched by auth_jwt_start. */
int
auth_jwt_init(const struct conf_auth *a, char **cause)
{
	char	*why;

	keys.a = a;
	TAILQ_INIT(&keys.waiters);
	if (a->jwks_file != NULL &&
	    (keys.file = jwks_load(a->jwks_file, &why)) == NULL) {
		xasprintf(cause, "jwks_file %s: %s", a->jwks_file, why);
		free(why);
		return (-1);
	}
	return (0);
}

size_t
auth_jwt_file_keys(void)
{
	return (jwks_count(keys.file));
}

void
auth_jwt_start(void)
{
	if (keys.a->jwks_uri != NULL)
		auth_jwt_fetch();
}

/* After http_client_shutdown: no fetch is under way, no check waits. */
void
auth_jwt_shutdown(void)
{
	jwks_free(keys.file);
	jwks_free(keys.uri);
	memset(&keys, 0, sizeof keys);
}
