/*
 * How a check ends. Every check is answered on a later loop turn through
 * its own event, also when nothing had to be waited for, so transport.c
 * meets one interleaving; its callback runs exactly once, also at
 * shutdown (then with AUTH_UNAVAILABLE). Checks that wait (for a key
 * set, an introspection answer) are counted and bounded by max_pending.
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "auth_int.h"
#include "conf.h"
#include "log.h"
#include "trace.h"
#include "xmalloc.h"

static struct {
	const struct conf_auth	*a;
	struct event_base	*base;
	struct auth_checks	 checks;	/* every check not answered */
	size_t			 pending;
} answer;

/* The check's span ends with its answer. */
static void
auth_answer_trace(struct auth_check *c)
{
	static const char *const results[] = { "ok", "missing", "invalid",
	    "forbidden", "unavailable" };

	if ((size_t)c->result.status < sizeof results / sizeof results[0])
		trace_attr_str(c->span, "mcpd.auth.result",
		    results[c->result.status]);
	if (c->result.status == AUTH_UNAVAILABLE)
		trace_error(c->span, "unavailable", c->result.description);
	trace_end(c->span);
	c->span = NULL;
}

static void
auth_answer_deliver_cb(evutil_socket_t fd, short events, void *arg)
{
	struct auth_check	*c = arg;

	TAILQ_REMOVE(&answer.checks, c, entry);
	auth_answer_trace(c);
	c->cb(&c->result, c->arg);
	auth_principal_unref(c->result.principal);
	event_free(c->ev);
	jwt_free(c->jwt);
	free(c->scope_text);
	if (c->token != NULL) {
		explicit_bzero(c->token, c->token_len);
		free(c->token);
	}
	free(c->endpoint);
	free(c->resource);
	xfree_words(c->scopes);
	free(c);
}

static void
auth_answer_uncount(struct auth_check *c)
{
	if (c->counted) {
		c->counted = 0;
		answer.pending--;
	}
}

/* Answers c on a later turn (now, if this is a loop callback already). */
void
auth_answer(struct auth_check *c, enum auth_status status,
    const char *description)
{
	auth_answer_uncount(c);
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
auth_answer_wait(struct auth_check *c)
{
	if (answer.pending >= (size_t)answer.a->max_pending) {
		auth_answer(c, AUTH_UNAVAILABLE, "too many requests waiting "
		    "for authorization");
		return (-1);
	}
	c->counted = 1;
	answer.pending++;
	return (0);
}

/* s with scope after a blank, unless it holds it already (s taken). */
static char *
auth_answer_add_scope(char *s, const char *scope)
{
	const char	*p;
	char		*t;
	size_t		 n = strlen(scope);

	for (p = s; (p = strstr(p, scope)) != NULL; p += n) {
		if ((p == s || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return (s);
	}
	xasprintf(&t, "%s%s%s", s, *s == '\0' ? "" : " ", scope);
	free(s);
	return (t);
}

/*
 * The space-separated scopes every request needs (the auth block's, then
 * the endpoint's, n of them), and extra if it is not one of them
 * (allocated): what a refusal asks for.
 */
char *
auth_answer_scopes(char *const *endpoint, size_t n, const char *extra)
{
	char	*s = xstrdup("");
	size_t	 i;

	for (i = 0; i < answer.a->nscopes; i++)
		s = auth_answer_add_scope(s, answer.a->scopes[i]);
	for (i = 0; i < n; i++)
		s = auth_answer_add_scope(s, endpoint[i]);
	if (extra != NULL)
		s = auth_answer_add_scope(s, extra);
	return (s);
}

/* The first scope of list (n) p lacks, or NULL. */
static const char *
auth_answer_lacks(const struct auth_principal *p, char *const *list,
    size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (!auth_principal_has_scope(p, list[i]))
			return (list[i]);
	}
	return (NULL);
}

/*
 * A principal is known: its audience must be the request's endpoint (a
 * token for another resource is invalid here, RFC 8707), then the
 * required scopes decide. The principal handed on is a copy holding the
 * request's token. Takes p.
 */
void
auth_answer_found(struct auth_check *c, struct auth_principal *p)
{
	const char	*lacks;

	if (c->resource != NULL && !auth_principal_audience(p, c->resource)) {
		auth_principal_unref(p);
		auth_answer(c, AUTH_INVALID,
		    "the audience (aud) is not this resource");
		return;
	}
	if (c->token != NULL) {
		c->result.principal = auth_principal_with_token(p, c->token,
		    c->token_len);
		auth_principal_unref(p);
	} else
		c->result.principal = p;
	p = c->result.principal;
	if ((lacks = auth_answer_lacks(p, answer.a->scopes,
	    answer.a->nscopes)) != NULL || (lacks = auth_answer_lacks(p,
	    c->scopes, c->nscopes)) != NULL) {
		c->scope_text = auth_answer_scopes(c->scopes, c->nscopes, NULL);
		c->result.scope = c->scope_text;
		log_limited(LOG_LEVEL_INFO, "auth-scope", "auth: subject %s "
		    "lacks scope %s", auth_principal_subject(p), lacks);
		auth_answer(c, AUTH_FORBIDDEN,
		    "the token lacks a required scope");
		return;
	}
	auth_answer(c, AUTH_OK, NULL);
}

/* A new check, for auth_check; cb runs once, on a later turn. */
struct auth_check *
auth_answer_new(auth_check_cb *cb, void *arg)
{
	struct auth_check	*c;

	c = xcalloc(1, sizeof *c);
	c->cb = cb;
	c->arg = arg;
	c->ev = event_new(answer.base, -1, 0, auth_answer_deliver_cb, c);
	TAILQ_INSERT_TAIL(&answer.checks, c, entry);
	return (c);
}

size_t
auth_answer_pending(void)
{
	return (answer.pending);
}

void
auth_answer_init(struct event_base *base, const struct conf_auth *a)
{
	answer.a = a;
	answer.base = base;
	TAILQ_INIT(&answer.checks);
	answer.pending = 0;
}

/*
 * Every check not answered yet is, now: AUTH_UNAVAILABLE (after
 * http_client_shutdown, whose callbacks answered what they could).
 */
void
auth_answer_shutdown(void)
{
	struct auth_check	*c;

	while ((c = TAILQ_FIRST(&answer.checks)) != NULL) {
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
		auth_answer_uncount(c);
		event_del(c->ev);
		auth_answer_deliver_cb(-1, 0, c);
	}
	memset(&answer, 0, sizeof answer);
}
