/*
 * Token introspection (RFC 7662): a token that is not a JWT is sent to
 * the introspection endpoint, authenticated with HTTP Basic when the conf
 * names a client; its answer is cached (auth_cache.c) by the token's
 * SHA-256 until the token's exp (jwks_cache at most), and checks of the
 * same token while it is asked about wait for that one answer. At most
 * introspection_rate new tokens a second are sent.
 */
#include <sys/queue.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_int.h"
#include "base64.h"
#include "clock.h"
#include "conf.h"
#include "credential.h"
#include "http_client.h"
#include "log.h"
#include "trace.h"
#include "xmalloc.h"

#define AUTH_INTROSPECT_MAX	(64 * 1024)	/* bytes of an answer */

static struct {
	const struct conf_auth	*a;
	uint64_t		 second_ms;	/* introspection_rate's */
	long long		 count;		/* new tokens asked in it */
} intro;

/*
 * What the introspection endpoint said: e->principal, or the refusal in
 * e->why; neither when the answer is none (not a JSON object with a
 * boolean active, RFC 7662 2.2): then the token cannot be checked now,
 * and that is not remembered.
 */
static void
auth_introspect_read(struct auth_cache *e, const char *body, size_t len)
{
	cJSON		*json = NULL;
	const cJSON	*active, *aud;
	const char	*iss, *sub, *cid;
	double		 now = (double)clock_wall_ms() / 1000, exp;
	uint64_t	 ttl = (uint64_t)intro.a->jwks_cache * 1000;
	char		*scopes;
	int		 r;

	e->why = NULL;
	if (jwt_json_has_nul(body, len)) {
		/* A claim cJSON would cut short (a sub "alice\u0000x"). */
		e->why = "the introspection answer holds a NUL character";
		goto out;
	}
	json = cJSON_ParseWithLength(body, len);
	active = cJSON_GetObjectItemCaseSensitive(json, "active");
	if (!cJSON_IsObject(json) || !cJSON_IsBool(active)) {
		log_limited(LOG_LEVEL_WARN, "auth-introspection", "auth: "
		    "introspection %s: the answer is not a JSON object with a "
		    "boolean active; the token is answered 503, nothing is "
		    "cached", intro.a->introspection);
		goto out;
	}
	e->why = "the token is not active";
	if (!cJSON_IsTrue(active))
		goto out;
	if ((r = auth_claim_time(json, "exp", &exp)) < 0 ||
	    (r == 0 && now > exp + (double)intro.a->leeway)) {
		e->why = "the token has expired";
		goto out;
	}
	if (r == 0 && (exp - now) * 1000 < (double)ttl)
		ttl = exp > now ? (uint64_t)((exp - now) * 1000) : 0;
	/* Which resource it must name is the request's (auth_answer_found). */
	aud = cJSON_GetObjectItemCaseSensitive(json, "aud");
	if (aud != NULL && !cJSON_IsString(aud) && !cJSON_IsArray(aud)) {
		e->why = "the audience (aud) is not this resource";
		goto out;
	}
	if ((r = auth_claim_text(json, "iss", &iss)) < 0 ||
	    (r == 0 && strcmp(iss, intro.a->issuer) != 0)) {
		e->why = "wrong issuer (iss)";
		goto out;
	}
	if (auth_claim_who(json, 0, &sub, &cid, &e->why) != 0)
		goto out;
	scopes = auth_claim_scopes(json);
	e->principal = auth_principal_new(intro.a->issuer, sub, cid, scopes);
	free(scopes);
	auth_principal_set_claims(e->principal, aud, r == 0 ? exp : 0);
	e->why = NULL;
out:
	e->expires_ms = clock_now_ms() + ttl;
	cJSON_Delete(json);
}

/* A cache entry is answered (or could not be): its waiters hear it. */
static void
auth_introspect_tell(struct auth_cache *e)
{
	struct auth_check	*c;

	while ((c = TAILQ_FIRST(&e->waiters)) != NULL) {
		TAILQ_REMOVE(&e->waiters, c, wait);
		c->waiting = NULL;
		if (e->principal != NULL)
			auth_answer_found(c, auth_principal_ref(e->principal));
		else if (e->why != NULL)
			auth_answer(c, AUTH_INVALID, e->why);
		else
			auth_answer(c, AUTH_UNAVAILABLE, "the introspection "
			    "endpoint gave no usable answer");
	}
}

static void
auth_introspect_cb(struct http_client *hc, void *arg)
{
	struct auth_cache	*e = arg;
	const char		*body;
	size_t			 len;

	e->request = NULL;
	auth_trace_response(e->span, hc);
	e->span = NULL;
	if (http_client_status(hc) == 200) {
		body = http_client_body(hc, &len);
		auth_introspect_read(e, body, len);
	} else {
		log_limited(LOG_LEVEL_WARN, "auth-introspection", "auth: "
		    "introspection %s: %s", intro.a->introspection,
		    http_client_status(hc) != 0 ? "status not 200" :
		    http_client_error(hc));
		e->why = NULL;
	}
	auth_introspect_tell(e);
	if (e->principal == NULL && e->why == NULL)
		auth_cache_remove(e);	/* not an answer: ask again */
}

/*
 * Whether one more token may be sent to the endpoint in this second
 * (introspection_rate): counts it if so. Tokens with a cached answer, or
 * one on its way, do not count.
 */
static int
auth_introspect_rate(void)
{
	uint64_t	now = clock_now_ms();

	if (now - intro.second_ms >= 1000) {
		intro.second_ms = now;
		intro.count = 0;
	}
	if (intro.count >= intro.a->introspection_rate)
		return (0);
	intro.count++;
	return (1);
}

/*
 * A token that is not a JWT: its cached answer, the answer already asked
 * for, or a new question to the endpoint.
 */
void
auth_introspect_check(struct auth_check *c, const char *token, size_t len)
{
	struct auth_cache		*e;
	struct http_client_request	 r;
	struct http_client_header	 h[4];
	char				*body, *tok, *id, *secret, *pair;
	char				*basic = NULL, *cause;
	char				 tp[TRACE_PARENT_LEN + 1];
	size_t				 nh = 0;

	if ((e = auth_cache_find(c->hash)) != NULL && e->jwt) {
		auth_answer_found(c, auth_principal_ref(e->principal));
		return;
	}
	if (e != NULL && e->request == NULL) {
		if (e->principal != NULL)
			auth_answer_found(c, auth_principal_ref(e->principal));
		else
			auth_answer(c, AUTH_INVALID, e->why);
		return;
	}
	if (auth_answer_wait(c) != 0)
		return;
	if (e == NULL && !auth_introspect_rate()) {
		log_limited(LOG_LEVEL_WARN, "auth-introspection-rate", "auth: "
		    "introspection_rate (%lld a second) reached: a new token "
		    "answered 503", intro.a->introspection_rate);
		auth_answer(c, AUTH_UNAVAILABLE, "too many new tokens to "
		    "introspect now");
		return;
	}
	if (e != NULL) {
		/* The same token is being asked about already. */
		c->waiting = e;
		TAILQ_INSERT_TAIL(&e->waiters, c, wait);
		return;
	}

	e = auth_cache_new(c->hash);
	c->waiting = e;
	TAILQ_INSERT_TAIL(&e->waiters, c, wait);

	tok = credential_form(token, len);
	xasprintf(&body, "token=%s&token_type_hint=access_token", tok);
	explicit_bzero(tok, strlen(tok));
	free(tok);
	h[nh].name = "Content-Type";
	h[nh++].value = "application/x-www-form-urlencoded";
	h[nh].name = "Accept";
	h[nh++].value = "application/json";
	if (intro.a->client_id != NULL) {
		id = credential_form(intro.a->client_id,
		    strlen(intro.a->client_id));
		secret = credential_form(intro.a->client_secret,
		    strlen(intro.a->client_secret));
		xasprintf(&pair, "%s:%s", id, secret);
		tok = base64_encode(pair, strlen(pair), 0);
		xasprintf(&basic, "Basic %s", tok);
		explicit_bzero(pair, strlen(pair));
		explicit_bzero(secret, strlen(secret));
		explicit_bzero(tok, strlen(tok));
		free(id);
		free(secret);
		free(pair);
		free(tok);
		h[nh].name = "Authorization";
		h[nh++].value = basic;
	}
	e->span = auth_trace_request("POST", intro.a->introspection);
	if (auth_trace_header(e->span, tp) == 0) {
		h[nh].name = "traceparent";
		h[nh++].value = tp;
	}
	memset(&r, 0, sizeof r);
	r.method = "POST";
	r.url = intro.a->introspection;
	r.headers = h;
	r.nheaders = nh;
	r.body = body;
	r.bodylen = strlen(body);
	r.max_body = AUTH_INTROSPECT_MAX;
	r.timeout_ms = (int)intro.a->timeout * 1000;
	r.done = auth_introspect_cb;
	r.arg = e;
	e->request = http_client_start(&r, &cause);
	explicit_bzero(body, strlen(body));
	free(body);
	if (basic != NULL) {
		explicit_bzero(basic, strlen(basic));
		free(basic);
	}
	if (e->request == NULL) {
		trace_error(e->span, "connection", cause);
		trace_end(e->span);
		e->span = NULL;
		log_limited(LOG_LEVEL_WARN, "auth-introspection", "auth: "
		    "introspection: %s", cause);
		free(cause);
		auth_introspect_tell(e);
		auth_cache_remove(e);
	}
}

void
auth_introspect_init(const struct conf_auth *a)
{
	intro.a = a;
}

void
auth_introspect_shutdown(void)
{
	memset(&intro, 0, sizeof intro);
}
