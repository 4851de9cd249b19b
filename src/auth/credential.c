/*
 * Credentials toward HTTP peers (credential.h): static headers, mcpd's
 * own token (client credentials) and tokens on a caller's behalf (RFC
 * 8693 token exchange), each asked for with one POST to the token
 * endpoint (RFC 6749 2.3.1, 4.4, 5.1, 5.2; RFC 8693 2.1, 2.2):
 *
 *   credential_get ── no grant ─────────────────────────► headers
 *        │ own token (client_credentials, or nobody's request)
 *        │   kept and fresh ────────────────────────────► headers
 *        │   else: wait for the one fetch (started if none)
 *        │ a principal's (token_exchange)
 *        │   kept for its key (iss, sub, client id) ────► headers
 *        │   else: wait for the one exchange of that key
 *        ▼
 *   fetch answered ── 200, a Bearer access_token ──► kept; waiters get it
 *                 └── else ──────────────────────► waiters get the error
 *
 * A kept token is used until a little before it expires (CRED_SKEW); the
 * own token is fetched again at 80% of its life (at most 60 s early),
 * whether or not anyone asks, and a failed refresh is tried again with
 * back-off while the old token lasts. An exchanged token lives as long as
 * the token endpoint says, and never longer than the subject token it was
 * exchanged for. At most max_tokens exchanged tokens are kept; the least
 * recently used idle one goes first. Tokens and secrets are never logged.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include <cjson/cJSON.h>

#include "auth.h"
#include "base64.h"
#include "clock.h"
#include "conf.h"
#include "credential.h"
#include "http_client.h"
#include "jwt.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "xmalloc.h"

#define CRED_RESPONSE_MAX	(64 * 1024)	/* a token endpoint's answer */
#define CRED_TOKEN_MAX		(16 * 1024)	/* an access token */
#define CRED_TEXT_MAX		200		/* an error_description kept */
#define CRED_REFRESH_EARLY_MS	60000		/* at most, before expiry */
#define CRED_SKEW_MS		5000		/* at most, unused before it */
#define CRED_RETRY_MAX_MS	60000		/* refresh back-off's cap */
#define CRED_HEADERS_MAX	32

#define CRED_GRANT_EXCHANGE \
	"urn:ietf:params:oauth:grant-type:token-exchange"
#define CRED_TYPE_ACCESS	"urn:ietf:params:oauth:token-type:access_token"
#define CRED_TYPE_JWT		"urn:ietf:params:oauth:token-type:jwt"

struct credential_ask;
TAILQ_HEAD(credential_asks, credential_ask);

/* One token: mcpd's own, or one exchanged for a principal (by its key). */
struct credential_token {
	unsigned char		 key[JWT_SHA256_LEN];
	char			*token;		/* NULL: none yet */
	uint64_t		 expires_ms;	/* monotonic: not used after */
	double			 subject_exp;	/* wall s of the subject, 0 */
	struct http_client	*fetch;		/* on its way */
	struct credential	*cred;
	struct credential_asks	 waiters;
	RB_ENTRY(credential_token) tree;
	TAILQ_ENTRY(credential_token) lru;
};
RB_HEAD(credential_tokens, credential_token);
TAILQ_HEAD(credential_lru, credential_token);

struct credential {
	u_int			 refs;
	char			*name;
	const struct conf	*conf;		/* holds cc */
	const struct conf_credentials *cc;
	struct credential_token	 own;
	struct event		*refresh_ev;	/* the own token's */
	u_int			 failures;	/* own refreshes in a row */
	struct credential_tokens exchanged;
	struct credential_lru	 lru;		/* most recent first */
	size_t			 nexchanged;
	LIST_ENTRY(credential)	 entry;		/* credentials.all */
};

struct credential_ask {
	struct credential	*cred;
	struct credential_token	*waiting;	/* on its waiters, or NULL */
	credential_cb		*cb;
	void			*arg;
	struct event		*ev;
	char			*bearer;	/* "Bearer ...", or NULL */
	char			*error;		/* NULL: none */
	char			*description;
	int			 answered;	/* its event is active */
	TAILQ_ENTRY(credential_ask) wait;
};

static LIST_HEAD(, credential)	credentials_all =
    LIST_HEAD_INITIALIZER(credentials_all);

static int
credential_token_cmp(struct credential_token *a, struct credential_token *b)
{
	return (memcmp(a->key, b->key, sizeof a->key));
}
RB_GENERATE_STATIC(credential_tokens, credential_token, tree,
    credential_token_cmp);

static void	credential_fetch(struct credential_token *,
		    struct auth_principal *);

/* ---------------------------------------------------------------------
 * Small pieces.
 */

/* RFC 6749 (appendix B): unreserved characters as they are, the rest %XX. */
char *
credential_form(const char *s, size_t len)
{
	char	*out = xmalloc(len * 3 + 1), *o = out;
	size_t	 i;

	for (i = 0; i < len; i++) {
		if (isalnum((u_char)s[i]) || strchr("-._~", s[i]) != NULL)
			*o++ = s[i];
		else
			o += sprintf(o, "%%%02X", (u_char)s[i]);
	}
	*o = '\0';
	return (out);
}

static void
credential_wipe(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* "&name=value" (value form-encoded) onto *body. */
static void
credential_form_add(char **body, const char *name, const char *value)
{
	char	*v, *t;

	v = credential_form(value, strlen(value));
	xasprintf(&t, "%s%s%s=%s", *body, **body == '\0' ? "" : "&", name, v);
	credential_wipe(v);
	credential_wipe(*body);
	*body = t;
}

/* What a peer said, made safe for a message: printable ASCII, bounded. */
static char *
credential_text(const char *s, size_t max)
{
	char	*out;
	size_t	 i, n;

	if (s == NULL)
		return (NULL);
	n = strlen(s) > max ? max : strlen(s);
	out = xmalloc(n + 1);
	for (i = 0; i < n; i++)
		out[i] = (u_char)s[i] >= 0x20 && (u_char)s[i] < 0x7f ?
		    s[i] : '?';
	out[n] = '\0';
	return (out);
}

/* The time a token of ttl ms is used until, from now. */
static uint64_t
credential_until(uint64_t now, uint64_t ttl)
{
	uint64_t	skew = ttl / 10;

	if (skew > CRED_SKEW_MS)
		skew = CRED_SKEW_MS;
	return (now + ttl - skew);
}

static int
credential_fresh(const struct credential_token *t)
{
	return (t->token != NULL && clock_now_ms() < t->expires_ms);
}

/* ---------------------------------------------------------------------
 * Asks: each answered once, on a later turn, through its own event.
 */

static void
credential_deliver_cb(evutil_socket_t fd, short events, void *arg)
{
	struct credential_ask		*a = arg;
	const struct conf_credentials	*cc = a->cred->cc;
	struct http_client_header	 h[CRED_HEADERS_MAX + 1];
	struct credential_error		 e;
	size_t				 n = 0, i;

	if (a->error != NULL) {
		e.error = a->error;
		e.description = a->description != NULL ? a->description :
		    a->error;
		a->cb(NULL, 0, &e, a->arg);
	} else {
		for (i = 0; cc != NULL && i < cc->nheaders &&
		    n < CRED_HEADERS_MAX; i++) {
			h[n].name = cc->headers[i].name;
			h[n++].value = cc->headers[i].value;
		}
		if (a->bearer != NULL) {
			h[n].name = "Authorization";
			h[n++].value = a->bearer;
		}
		a->cb(h, n, NULL, a->arg);
	}
	event_free(a->ev);
	credential_wipe(a->bearer);
	free(a->error);
	free(a->description);
	credential_unref(a->cred);
	free(a);
}

/* a is answered (on a later turn): with t's token, or error. */
static void
credential_answer(struct credential_ask *a, const struct credential_token *t,
    const char *error, const char *description)
{
	if (a->waiting != NULL) {
		TAILQ_REMOVE(&a->waiting->waiters, a, wait);
		a->waiting = NULL;
	}
	a->answered = 1;
	if (error != NULL) {
		a->error = xstrdup(error);
		a->description = description != NULL ? xstrdup(description) :
		    NULL;
	} else if (t != NULL)
		xasprintf(&a->bearer, "Bearer %s", t->token);
	event_active(a->ev, 0, 0);
}

/* Every waiter of t hears its token, or the error. */
static void
credential_tell(struct credential_token *t, const char *error,
    const char *description)
{
	struct credential_ask	*a;

	while ((a = TAILQ_FIRST(&t->waiters)) != NULL)
		credential_answer(a, t, error, description);
}

/* ---------------------------------------------------------------------
 * The token endpoint.
 */

/* A fetch failed: why, as an OAuth error code and a description. */
static void
credential_failed(struct credential_token *t, const char *error,
    const char *description)
{
	struct credential	*cred = t->cred;

	log_limited(LOG_LEVEL_WARN, "credential", "credentials of %s: %s "
	    "token request failed: %s%s%s", cred->name, t == &cred->own ?
	    "client_credentials" : "token exchange", error, description !=
	    NULL ? ": " : "", description != NULL ? description : "");
	metrics.credential_failures++;
	credential_tell(t, error, description);
}

/* The own token's next fetch: at 80% of its life, at most 60 s early. */
static void
credential_schedule(struct credential *cred, uint64_t ttl)
{
	uint64_t	early = ttl / 5;
	struct timeval	tv;

	if (early > CRED_REFRESH_EARLY_MS)
		early = CRED_REFRESH_EARLY_MS;
	tv.tv_sec = (ttl - early) / 1000;
	tv.tv_usec = ((ttl - early) % 1000) * 1000;
	evtimer_add(cred->refresh_ev, &tv);
}

/*
 * A refresh of the own token failed while the old one lasts: again after
 * a back-off (1, 2, 4 ... s, at most 60 s), not past the old one's end.
 */
static void
credential_retry(struct credential *cred)
{
	uint64_t	ms = 1000, now = clock_now_ms();
	struct timeval	tv;

	if (cred->failures < 7)
		ms <<= cred->failures;
	if (ms > CRED_RETRY_MAX_MS)
		ms = CRED_RETRY_MAX_MS;
	cred->failures++;
	if (!credential_fresh(&cred->own))
		return;		/* the next ask fetches */
	if (now + ms > cred->own.expires_ms)
		ms = cred->own.expires_ms - now;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(cred->refresh_ev, &tv);
}

/*
 * The token endpoint's answer (RFC 6749 5.1, 5.2; RFC 8693 2.2): a
 * token kept and handed to t's waiters, or the error they get.
 */
static void
credential_fetched_cb(struct http_client *hc, void *arg)
{
	struct credential_token	*t = arg;
	struct credential	*cred = t->cred;
	const struct conf_credentials *cc = cred->cc;
	cJSON			*json = NULL;
	const cJSON		*tok, *type, *expires, *err, *desc;
	const char		*body, *why;
	char			*error = NULL, *text = NULL;
	uint64_t		 ttl, now = clock_now_ms(), left;
	double			 wall;
	size_t			 len, i;
	int			 status = http_client_status(hc), ok = 0;

	t->fetch = NULL;
	if (cc == NULL || cc->grant == CONF_GRANT_NONE) {
		/* A reload took the grant away meanwhile. */
		credential_tell(t, "cancelled", "the credentials changed");
		goto out;
	}
	if (status == 0) {
		xasprintf(&text, "the token endpoint could not be reached: %s",
		    http_client_error(hc));
		credential_failed(t, "temporarily_unavailable", text);
		goto out;
	}
	body = http_client_body(hc, &len);
	json = cJSON_ParseWithLength(body, len);
	if (status != 200) {
		err = cJSON_GetObjectItemCaseSensitive(json, "error");
		desc = cJSON_GetObjectItemCaseSensitive(json,
		    "error_description");
		error = credential_text(cJSON_IsString(err) ? err->valuestring :
		    NULL, 64);
		text = credential_text(cJSON_IsString(desc) ?
		    desc->valuestring : NULL, CRED_TEXT_MAX);
		if (text == NULL)
			xasprintf(&text, "the token endpoint answered HTTP %d",
			    status);
		credential_failed(t, error != NULL && *error != '\0' ? error :
		    "invalid_response", text);
		goto out;
	}
	tok = cJSON_GetObjectItemCaseSensitive(json, "access_token");
	type = cJSON_GetObjectItemCaseSensitive(json, "token_type");
	expires = cJSON_GetObjectItemCaseSensitive(json, "expires_in");
	why = NULL;
	if (!cJSON_IsString(tok) || *tok->valuestring == '\0' ||
	    strlen(tok->valuestring) > CRED_TOKEN_MAX)
		why = "no usable access_token in the answer";
	else if (!cJSON_IsString(type) ||
	    strcasecmp(type->valuestring, "Bearer") != 0)
		why = "the token_type is not Bearer";
	else if (expires != NULL && (!cJSON_IsNumber(expires) ||
	    expires->valuedouble < 1 || expires->valuedouble > 31536000))
		why = "expires_in is not a number of seconds";
	for (i = 0; why == NULL && tok->valuestring[i] != '\0'; i++) {
		if ((u_char)tok->valuestring[i] <= 0x20 ||
		    (u_char)tok->valuestring[i] >= 0x7f)
			why = "the access_token holds a character a header "
			    "cannot";
	}
	if (why != NULL) {
		credential_failed(t, "invalid_response", why);
		goto out;
	}
	ttl = (uint64_t)(expires != NULL ? expires->valuedouble :
	    (double)cc->expires_in) * 1000;
	if (t->subject_exp > 0) {
		/* Never longer than the caller's own token lives. */
		wall = t->subject_exp * 1000 - (double)clock_wall_ms();
		left = wall > 0 ? (uint64_t)wall : 0;
		if (left < ttl)
			ttl = left;
	}
	credential_wipe(t->token);
	t->token = xstrdup(tok->valuestring);
	t->expires_ms = credential_until(now, ttl);
	metrics.credential_tokens++;
	log_debug("credentials of %s: a %s token for %llu s", cred->name,
	    t == &cred->own ? "client_credentials" : "token exchange",
	    (unsigned long long)(ttl / 1000));
	if (t == &cred->own) {
		cred->failures = 0;
		credential_schedule(cred, ttl);
	}
	credential_tell(t, NULL, NULL);
	ok = 1;
out:
	if (t == &cred->own && !ok)
		credential_retry(cred);
	cJSON_Delete(json);
	free(error);
	free(text);
	credential_unref(cred);
}

/*
 * Asks the token endpoint for t: mcpd's own token, or (who) one exchanged
 * for who's token. Its answer goes to t's waiters.
 */
static void
credential_fetch(struct credential_token *t, struct auth_principal *who)
{
	struct credential		*cred = t->cred;
	const struct conf_credentials	*cc = cred->cc;
	struct http_client_header	 h[3];
	struct http_client_request	 r;
	char				*body = xstrdup(""), *scope, *pair;
	char				*id, *secret, *b64, *basic = NULL;
	char				*cause = NULL;
	size_t				 i, nh = 0;

	if (who != NULL) {
		credential_form_add(&body, "grant_type", CRED_GRANT_EXCHANGE);
		credential_form_add(&body, "subject_token",
		    auth_principal_token(who));
		credential_form_add(&body, "subject_token_type",
		    cc->subject_token_type == CONF_SUBJECT_JWT ?
		    CRED_TYPE_JWT : CRED_TYPE_ACCESS);
		credential_form_add(&body, "requested_token_type",
		    CRED_TYPE_ACCESS);
		t->subject_exp = auth_principal_expiry(who);
	} else
		credential_form_add(&body, "grant_type", "client_credentials");
	if (cc->resource != NULL)
		credential_form_add(&body, "resource", cc->resource);
	if (cc->audience != NULL)
		credential_form_add(&body, "audience", cc->audience);
	if (cc->nscopes > 0) {
		scope = xstrdup("");
		for (i = 0; i < cc->nscopes; i++) {
			xasprintf(&pair, "%s%s%s", scope, i == 0 ? "" : " ",
			    cc->scopes[i]);
			free(scope);
			scope = pair;
		}
		credential_form_add(&body, "scope", scope);
		free(scope);
	}
	h[nh].name = "Content-Type";
	h[nh++].value = "application/x-www-form-urlencoded";
	h[nh].name = "Accept";
	h[nh++].value = "application/json";
	if (cc->client_auth == CONF_CLIENT_AUTH_POST) {
		credential_form_add(&body, "client_id", cc->client_id);
		credential_form_add(&body, "client_secret", cc->client_secret);
	} else {
		/* RFC 6749 2.3.1: each form-encoded, then base64. */
		id = credential_form(cc->client_id, strlen(cc->client_id));
		secret = credential_form(cc->client_secret,
		    strlen(cc->client_secret));
		xasprintf(&pair, "%s:%s", id, secret);
		b64 = base64_encode(pair, strlen(pair), 0);
		xasprintf(&basic, "Basic %s", b64);
		credential_wipe(pair);
		credential_wipe(secret);
		credential_wipe(b64);
		free(id);
		h[nh].name = "Authorization";
		h[nh++].value = basic;
	}
	memset(&r, 0, sizeof r);
	r.method = "POST";
	r.url = cc->token_endpoint;
	r.headers = h;
	r.nheaders = nh;
	r.body = body;
	r.bodylen = strlen(body);
	r.max_body = CRED_RESPONSE_MAX;
	r.timeout_ms = (int)cc->timeout * 1000;
	r.done = credential_fetched_cb;
	r.arg = t;
	credential_ref(cred);
	t->fetch = http_client_start(&r, &cause);
	credential_wipe(body);
	credential_wipe(basic);
	if (t->fetch == NULL) {
		credential_failed(t, "temporarily_unavailable", cause);
		free(cause);
		credential_unref(cred);
	}
}

/* ---------------------------------------------------------------------
 * Exchanged tokens, by principal.
 */

static void
credential_key(const struct auth_principal *who, unsigned char *key)
{
	const char	*cid = auth_principal_client_id(who);
	char		*s;
	int		 len;

	len = xasprintf(&s, "%s%c%s%c%s", auth_principal_issuer(who), '\0',
	    auth_principal_subject(who), '\0', cid != NULL ? cid : "");
	jwt_sha256(s, (size_t)len, key);
	free(s);
}

static void
credential_token_free(struct credential_token *t)
{
	credential_wipe(t->token);
	free(t);
}

/* Forgets an exchanged token no one waits for. */
static void
credential_forget(struct credential *cred, struct credential_token *t)
{
	RB_REMOVE(credential_tokens, &cred->exchanged, t);
	TAILQ_REMOVE(&cred->lru, t, lru);
	cred->nexchanged--;
	credential_token_free(t);
}

/* who's entry, made (and the least recently used idle ones forgotten). */
static struct credential_token *
credential_exchanged(struct credential *cred, const struct auth_principal *who)
{
	struct credential_token	 key, *t, *old;

	credential_key(who, key.key);
	if ((t = RB_FIND(credential_tokens, &cred->exchanged, &key)) != NULL) {
		TAILQ_REMOVE(&cred->lru, t, lru);
		TAILQ_INSERT_HEAD(&cred->lru, t, lru);
		return (t);
	}
	while (cred->nexchanged >= (size_t)cred->cc->max_tokens &&
	    (old = TAILQ_LAST(&cred->lru, credential_lru)) != NULL &&
	    old->fetch == NULL && TAILQ_EMPTY(&old->waiters))
		credential_forget(cred, old);
	t = xcalloc(1, sizeof *t);
	memcpy(t->key, key.key, sizeof t->key);
	t->cred = cred;
	TAILQ_INIT(&t->waiters);
	RB_INSERT(credential_tokens, &cred->exchanged, t);
	TAILQ_INSERT_HEAD(&cred->lru, t, lru);
	cred->nexchanged++;
	return (t);
}

/* ---------------------------------------------------------------------
 * The interface.
 */

static void
credential_refresh_cb(evutil_socket_t fd, short events, void *arg)
{
	struct credential	*cred = arg;

	if (cred->own.fetch == NULL && cred->cc != NULL &&
	    cred->cc->grant != CONF_GRANT_NONE)
		credential_fetch(&cred->own, NULL);
}

struct credential *
credential_new(const char *name, const struct conf *conf,
    const struct conf_credentials *cc)
{
	struct credential	*cred;

	cred = xcalloc(1, sizeof *cred);
	cred->refs = 1;
	cred->name = xstrdup(name);
	cred->conf = conf_ref(conf);
	cred->cc = cc;
	cred->own.cred = cred;
	TAILQ_INIT(&cred->own.waiters);
	RB_INIT(&cred->exchanged);
	TAILQ_INIT(&cred->lru);
	cred->refresh_ev = evtimer_new(server.base, credential_refresh_cb,
	    cred);
	LIST_INSERT_HEAD(&credentials_all, cred, entry);
	return (cred);
}

static int
credential_same_words(char **a, size_t na, char **b, size_t nb)
{
	size_t	i;

	if (na != nb)
		return (0);
	for (i = 0; i < na; i++) {
		if (strcmp(a[i], b[i]) != 0)
			return (0);
	}
	return (1);
}

/* Whether tokens asked with a and with b may stand in for each other. */
static int
credential_same_grant(const struct conf_credentials *a,
    const struct conf_credentials *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (a->grant == b->grant &&
	    strcmp(a->token_endpoint != NULL ? a->token_endpoint : "",
	    b->token_endpoint != NULL ? b->token_endpoint : "") == 0 &&
	    strcmp(a->client_id != NULL ? a->client_id : "",
	    b->client_id != NULL ? b->client_id : "") == 0 &&
	    strcmp(a->client_secret != NULL ? a->client_secret : "",
	    b->client_secret != NULL ? b->client_secret : "") == 0 &&
	    strcmp(a->resource != NULL ? a->resource : "",
	    b->resource != NULL ? b->resource : "") == 0 &&
	    strcmp(a->audience != NULL ? a->audience : "",
	    b->audience != NULL ? b->audience : "") == 0 &&
	    a->subject_token_type == b->subject_token_type &&
	    credential_same_words(a->scopes, a->nscopes, b->scopes,
	    b->nscopes));
}

/* Forgets every kept token no one waits for (a changed grant). */
static void
credential_forget_all(struct credential *cred)
{
	struct credential_token	*t, *t1;

	TAILQ_FOREACH_SAFE(t, &cred->lru, lru, t1) {
		if (t->fetch == NULL && TAILQ_EMPTY(&t->waiters))
			credential_forget(cred, t);
		else {
			credential_wipe(t->token);
			t->token = NULL;
		}
	}
	credential_wipe(cred->own.token);
	cred->own.token = NULL;
	evtimer_del(cred->refresh_ev);
}

void
credential_update(struct credential *cred, const struct conf *conf,
    const struct conf_credentials *cc)
{
	if (!credential_same_grant(cred->cc, cc)) {
		log_info("credentials of %s: changed by the reload; tokens "
		    "kept are forgotten", cred->name);
		credential_forget_all(cred);
	}
	conf_ref(conf);
	conf_release(cred->conf);
	cred->conf = conf;
	cred->cc = cc;
}

struct credential *
credential_ref(struct credential *cred)
{
	cred->refs++;
	return (cred);
}

void
credential_unref(struct credential *cred)
{
	struct credential_token	*t, *t1;

	if (cred == NULL)
		return;
	if (cred->refs == 0)
		fatalx("credential_unref: no reference left");
	if (--cred->refs > 0)
		return;
	/* Nothing waits: every ask and fetch holds a reference. */
	TAILQ_FOREACH_SAFE(t, &cred->lru, lru, t1)
		credential_forget(cred, t);
	credential_wipe(cred->own.token);
	event_free(cred->refresh_ev);
	LIST_REMOVE(cred, entry);
	conf_release(cred->conf);
	free(cred->name);
	free(cred);
}

int
credential_has_grant(const struct credential *cred)
{
	return (cred->cc != NULL && cred->cc->grant != CONF_GRANT_NONE);
}

/* The token who's requests carry (NULL: mcpd's own). */
static struct credential_token *
credential_token_for(struct credential *cred, const struct auth_principal *who)
{
	struct credential_token	key, *t;

	if (who == NULL || cred->cc->grant != CONF_GRANT_TOKEN_EXCHANGE)
		return (&cred->own);
	credential_key(who, key.key);
	t = RB_FIND(credential_tokens, &cred->exchanged, &key);
	return (t);
}

struct credential_ask *
credential_get(struct credential *cred, struct auth_principal *who,
    credential_cb *cb, void *arg)
{
	const struct conf_credentials	*cc = cred->cc;
	struct credential_ask		*a;
	struct credential_token		*t;
	int				 exchange;

	a = xcalloc(1, sizeof *a);
	a->cred = credential_ref(cred);
	a->cb = cb;
	a->arg = arg;
	a->ev = event_new(server.base, -1, 0, credential_deliver_cb, a);
	if (cc == NULL || cc->grant == CONF_GRANT_NONE) {
		credential_answer(a, NULL, NULL, NULL);
		return (a);
	}
	exchange = who != NULL && cc->grant == CONF_GRANT_TOKEN_EXCHANGE;
	if (exchange && auth_principal_token(who) == NULL) {
		credential_answer(a, NULL, "invalid_request", "mcpd does not "
		    "hold the caller's token to exchange");
		return (a);
	}
	t = exchange ? credential_exchanged(cred, who) : &cred->own;
	if (credential_fresh(t)) {
		credential_answer(a, t, NULL, NULL);
		return (a);
	}
	a->waiting = t;
	TAILQ_INSERT_TAIL(&t->waiters, a, wait);
	if (t->fetch == NULL)
		credential_fetch(t, exchange ? who : NULL);
	return (a);
}

void
credential_cancel(struct credential_ask *a)
{
	if (a->answered)
		return;		/* its answer is on its way */
	credential_answer(a, NULL, "cancelled", "the request was cancelled");
}

void
credential_refused(struct credential *cred, const struct auth_principal *who)
{
	struct credential_token	*t;

	if (cred->cc == NULL || cred->cc->grant == CONF_GRANT_NONE ||
	    (t = credential_token_for(cred, who)) == NULL || t->fetch != NULL)
		return;
	log_limited(LOG_LEVEL_INFO, "credential", "credentials of %s: the "
	    "server refused a token (401); it is fetched again", cred->name);
	credential_wipe(t->token);
	t->token = NULL;
}

size_t
credential_cached(void)
{
	const struct credential	*cred;
	size_t			 n = 0;

	LIST_FOREACH(cred, &credentials_all, entry)
		n += cred->nexchanged + (cred->own.token != NULL);
	return (n);
}
