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

/*
 * The space-separated scopes every request needs, and extra if it is not
 * one of them (allocated): what a refusal asks for.
 */
char *
auth_answer_scopes(const char *extra)
{
	char	*s = xstrdup(""), *t;
	size_t	 i;

	for (i = 0; i < answer.a->nscopes; i++) {
		xasprintf(&t, "%s%s%s", s, *s == '\0' ? "" : " ",
		    answer.a->scopes[i]);
		free(s);
		s = t;
	}
	if (extra != NULL) {
		for (i = 0; i < answer.a->nscopes; i++) {
			if (strcmp(answer.a->scopes[i], extra) == 0)
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
auth_answer_found(struct auth_check *c, struct auth_principal *p)
{
	size_t	i;

	c->result.principal = p;
	for (i = 0; i < answer.a->nscopes; i++) {
		if (!auth_principal_has_scope(p, answer.a->scopes[i])) {
			c->scope_text = auth_answer_scopes(NULL);
			c->result.scope = c->scope_text;
			log_limited(LOG_LEVEL_INFO, "auth-scope", "auth: "
			    "subject %s lacks scope %s",
			    auth_principal_subject(p), answer.a->scopes[i]);
			auth_answer(c, AUTH_FORBIDDEN,
			    "the token lacks a required scope");
			return;
		}
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
