/*
 * Redis Sentinel, as the redis event log uses it (redis_sentinel.h).
 *
 * A question (which server is the primary of MASTER) goes to one
 * sentinel at a time: AUTH if there are credentials, then SENTINEL
 * get-master-addr-by-name MASTER, REDIS_SENTINEL_TIMEOUT_MS for both.
 * No answer, an error or a nil (that sentinel does not know MASTER) moves
 * the question to the next sentinel; once each was asked, the question
 * fails with the last reason. The sentinel that answered is asked first
 * next time.
 *
 * The connection that answered first is kept to watch: it SUBSCRIBEs to
 * +switch-master, whose messages say "MASTER OLD-IP OLD-PORT NEW-IP
 * NEW-PORT". When it is lost, the question is asked again (of the next
 * sentinel first) after a backoff, its connection becomes the watch, and
 * an answer other than the primary known means a switch was missed:
 * the owner hears it as one.
 *
 * A sentinel without a password answers AUTH with an error saying no
 * password is configured; that is taken as a yes (mcpd authenticates to
 * the sentinels as to Redis unless told otherwise).
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "conf.h"
#include "log.h"
#include "redis_link.h"
#include "redis_sentinel.h"
#include "xmalloc.h"

#define REDIS_SENTINEL_TIMEOUT_MS	1000	/* one sentinel's answer */
#define REDIS_SENTINEL_BACKOFF_MIN_MS	100	/* a lost watch: again */
#define REDIS_SENTINEL_BACKOFF_MAX_MS	5000
#define REDIS_SENTINEL_CHANNEL		"+switch-master"

struct redis_sentinel_asker {
	redis_sentinel_found_cb		 cb;
	void				*arg;
	TAILQ_ENTRY(redis_sentinel_asker) entry;
};
TAILQ_HEAD(redis_sentinel_askers, redis_sentinel_asker);

struct redis_sentinel {
	struct event_base		*base;
	char				*name;
	char				*master;
	struct conf_redis_node		*nodes;
	size_t				 nnodes;
	struct redis_link_tls		*tls;
	char				*user;
	char				*password;
	redis_sentinel_switch_cb	 switch_cb;
	void				*switch_arg;
	int				 nopass_logged;

	/* The question under way. */
	struct redis_sentinel_askers	 askers;
	struct redis_link		*q;
	size_t				 qi;		/* the node asked */
	size_t				 tried;
	size_t				 next;		/* asked first */
	struct event			*q_timer;
	char				 qwhy[640];

	/* The answer, handed over on a later turn. */
	struct event			*answer_ev;
	char				*ahost;
	int				 aport;
	char				 awhy[800];

	/* The primary last named, and the watch. */
	char				*host;
	int				 port;
	struct redis_link		*w;
	size_t				 wi;
	char				 wname[300];
	struct event			*w_timer;
	int				 w_backoff_ms;
	int				 rewatching;
};

static void	redis_sentinel_open(struct redis_sentinel *);
static void	redis_sentinel_rewatch_cb(const char *, int, const char *,
		    void *);

static void
redis_sentinel_timer(struct event *ev, int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

/* "host:port" of node i, for messages. */
static const char *
redis_sentinel_node(const struct redis_sentinel *s, size_t i, char *buf,
    size_t len)
{
	const struct conf_redis_node	*n = &s->nodes[i];

	snprintf(buf, len, "%s%s%s:%d", strchr(n->host, ':') ? "[" : "",
	    n->host, strchr(n->host, ':') ? "]" : "", n->port);
	return (buf);
}

/* Answers: the askers hear it on a later turn. */
static void
redis_sentinel_answer(struct redis_sentinel *s, const char *host, int port,
    const char *why)
{
	free(s->ahost);
	s->ahost = host != NULL ? xstrdup(host) : NULL;
	s->aport = port;
	snprintf(s->awhy, sizeof s->awhy, "%s", why != NULL ? why : "");
	event_active(s->answer_ev, EV_TIMEOUT, 0);
}

static void
redis_sentinel_answer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_sentinel		*s = arg;
	struct redis_sentinel_askers	 batch;
	struct redis_sentinel_asker	*a;
	char				*host;

	TAILQ_INIT(&batch);
	TAILQ_CONCAT(&batch, &s->askers, entry);
	host = s->ahost;
	s->ahost = NULL;
	while ((a = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, a, entry);
		a->cb(host, s->aport, host == NULL ? s->awhy : NULL, a->arg);
		free(a);
	}
	free(host);
}

/* The question goes to the next sentinel, or fails once all were asked. */
static void
redis_sentinel_next(struct redis_sentinel *s)
{
	struct redis_link	*l = s->q;
	char			 why[800];

	s->q = NULL;
	evtimer_del(s->q_timer);
	redis_link_close(l);	/* its callbacks see s->q != l */
	if (++s->tried < s->nnodes) {
		s->qi = (s->qi + 1) % s->nnodes;
		redis_sentinel_open(s);
		return;
	}
	snprintf(why, sizeof why, "no sentinel named the primary of %s "
	    "(the last said: %s)", s->master, s->qwhy);
	redis_sentinel_answer(s, NULL, 0, why);
}

static void
redis_sentinel_q_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_sentinel	*s = arg;
	char			 node[300];

	snprintf(s->qwhy, sizeof s->qwhy, "sentinel %s: no answer in %d ms",
	    redis_sentinel_node(s, s->qi, node, sizeof node),
	    REDIS_SENTINEL_TIMEOUT_MS);
	redis_sentinel_next(s);
}

static void
redis_sentinel_auth_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_sentinel	*s = arg;
	char			 node[300];

	if (l != s->q || reply == NULL || reply->type != REDIS_REPLY_ERROR)
		return;
	if (strstr(reply->str, "without any password configured") != NULL) {
		if (!s->nopass_logged)
			log_info("eventlog=%s: sentinel %s has no password; "
			    "asking it without", s->name, redis_sentinel_node(s,
			    s->qi, node, sizeof node));
		s->nopass_logged = 1;
		return;
	}
	snprintf(s->qwhy, sizeof s->qwhy, "sentinel %s: AUTH refused: %.200s "
	    "(redis_sentinel_user, redis_sentinel_password_file)",
	    redis_sentinel_node(s, s->qi, node, sizeof node), reply->str);
	redis_sentinel_next(s);
}

/* The connection that answered watches for switches from now on. */
static void
redis_sentinel_watch(struct redis_sentinel *s)
{
	s->w = s->q;
	s->q = NULL;
	s->wi = s->qi;
	redis_sentinel_node(s, s->wi, s->wname, sizeof s->wname);
	if (redis_link_command(s->w, NULL, NULL, "SUBSCRIBE",
	    REDIS_SENTINEL_CHANNEL, NULL) != 0) {
		s->w = NULL;
		return;
	}
	log_info("eventlog=%s: sentinel %s watched for failovers of %s",
	    s->name, s->wname, s->master);
}

static void
redis_sentinel_reply_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_sentinel	*s = arg;
	redisReply		*h, *p;
	char			 node[300];
	int			 port;

	if (l != s->q || reply == NULL)
		return;
	redis_sentinel_node(s, s->qi, node, sizeof node);
	if (reply->type == REDIS_REPLY_NIL) {
		snprintf(s->qwhy, sizeof s->qwhy, "sentinel %s does not "
		    "monitor %s", node, s->master);
		redis_sentinel_next(s);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    (h = reply->element[0])->type != REDIS_REPLY_STRING ||
	    (p = reply->element[1])->type != REDIS_REPLY_STRING ||
	    h->len == 0 || h->len > 253 ||
	    (port = atoi(p->str)) <= 0 || port > 65535) {
		snprintf(s->qwhy, sizeof s->qwhy, "sentinel %s: %.200s", node,
		    reply->type == REDIS_REPLY_ERROR ? reply->str :
		    "an unexpected answer");
		redis_sentinel_next(s);
		return;
	}
	evtimer_del(s->q_timer);
	s->next = s->qi;
	redis_sentinel_answer(s, h->str, port, NULL);
	if (s->host != NULL && (strcmp(s->host, h->str) != 0 ||
	    s->port != port)) {
		/* Asked again after a lost watch, or by a lost connection. */
		log_info("eventlog=%s: sentinel %s names %s:%d as the primary "
		    "of %s, not %s:%d", s->name, node, h->str, port,
		    s->master, s->host, s->port);
		s->switch_cb(h->str, port, s->switch_arg);
	}
	free(s->host);
	s->host = xstrdup(h->str);
	s->port = port;
	if (l != s->q)
		return;		/* the owner closed it meanwhile */
	if (s->w == NULL)
		redis_sentinel_watch(s);
	else {
		l = s->q;
		s->q = NULL;
		redis_link_close(l);
	}
}

static void
redis_sentinel_lost(struct redis_sentinel *s, const char *why)
{
	log_warn("eventlog=%s: the watch on sentinel %s is lost (%s); "
	    "watching another", s->name, s->wname, why);
	s->w = NULL;
	s->next = (s->wi + 1) % s->nnodes;
	redis_sentinel_timer(s->w_timer, s->w_backoff_ms);
}

static void
redis_sentinel_down_cb(struct redis_link *l, const char *why, void *arg)
{
	struct redis_sentinel	*s = arg;

	if (l == s->q) {
		s->q = NULL;
		snprintf(s->qwhy, sizeof s->qwhy, "%s", why);
		redis_sentinel_next(s);
	} else if (l == s->w)
		redis_sentinel_lost(s, why);
}

/* "MASTER OLD-IP OLD-PORT NEW-IP NEW-PORT" on +switch-master. */
static void
redis_sentinel_push_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_sentinel	*s = arg;
	redisReply		*m;
	char			 name[256], oldh[256], newh[256];
	int			 oldp, newp;

	if (l != s->w)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		redis_link_close(l);
		redis_sentinel_lost(s, reply->str);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(reply->element[0]->str, "message") != 0 ||
	    (m = reply->element[2])->type != REDIS_REPLY_STRING)
		return;
	if (sscanf(m->str, "%255s %255s %d %255s %d", name, oldh, &oldp, newh,
	    &newp) != 5 || strcmp(name, s->master) != 0 || newp <= 0 ||
	    newp > 65535)
		return;
	log_info("eventlog=%s: sentinel %s: +switch-master %s from %s:%d to "
	    "%s:%d", s->name, s->wname, name, oldh, oldp, newh, newp);
	free(s->host);
	s->host = xstrdup(newh);
	s->port = newp;
	s->switch_cb(newh, newp, s->switch_arg);
}

static const struct redis_link_events redis_sentinel_events = {
	.down = redis_sentinel_down_cb,
	.push = redis_sentinel_push_cb,
};

/* Asks sentinel qi. */
static void
redis_sentinel_open(struct redis_sentinel *s)
{
	struct redis_link_addr	 addr;
	char			*cause, node[300];

	memset(&addr, 0, sizeof addr);
	addr.host = s->nodes[s->qi].host;
	addr.port = s->nodes[s->qi].port;
	addr.tls = s->tls != NULL;
	s->q = redis_link_open(s->base, &addr, s->tls, &redis_sentinel_events,
	    s, &cause);
	if (s->q == NULL) {
		snprintf(s->qwhy, sizeof s->qwhy, "sentinel %s: %s",
		    redis_sentinel_node(s, s->qi, node, sizeof node), cause);
		free(cause);
		redis_sentinel_next(s);
		return;
	}
	if (s->password != NULL)
		redis_link_auth(s->q, s->user, s->password,
		    redis_sentinel_auth_cb, s);
	redis_link_command(s->q, redis_sentinel_reply_cb, s, "SENTINEL",
	    "get-master-addr-by-name", s->master, NULL);
	redis_sentinel_timer(s->q_timer, REDIS_SENTINEL_TIMEOUT_MS);
}

void
redis_sentinel_ask(struct redis_sentinel *s, redis_sentinel_found_cb cb,
    void *arg)
{
	struct redis_sentinel_asker	*a;

	a = xcalloc(1, sizeof *a);
	a->cb = cb;
	a->arg = arg;
	TAILQ_INSERT_TAIL(&s->askers, a, entry);
	if (s->q != NULL || event_pending(s->answer_ev, EV_TIMEOUT, NULL))
		return;		/* the question under way answers it too */
	s->tried = 0;
	s->qi = s->next;
	s->qwhy[0] = '\0';
	redis_sentinel_open(s);
}

void
redis_sentinel_cancel(struct redis_sentinel *s, redis_sentinel_found_cb cb,
    void *arg)
{
	struct redis_sentinel_asker	*a, *a1;

	TAILQ_FOREACH_SAFE(a, &s->askers, entry, a1) {
		if (a->cb == cb && a->arg == arg) {
			TAILQ_REMOVE(&s->askers, a, entry);
			free(a);
		}
	}
}

/* The watch was lost: ask again, and watch on what answers. */
static void
redis_sentinel_w_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_sentinel	*s = arg;

	if (s->w != NULL || s->rewatching)
		return;
	s->rewatching = 1;
	redis_sentinel_ask(s, redis_sentinel_rewatch_cb, s);
}

static void
redis_sentinel_rewatch_cb(const char *host, int port, const char *why,
    void *arg)
{
	struct redis_sentinel	*s = arg;

	s->rewatching = 0;
	if (host == NULL || s->w == NULL) {
		s->w_backoff_ms *= 2;
		if (s->w_backoff_ms > REDIS_SENTINEL_BACKOFF_MAX_MS)
			s->w_backoff_ms = REDIS_SENTINEL_BACKOFF_MAX_MS;
		redis_sentinel_timer(s->w_timer, s->w_backoff_ms);
		return;
	}
	s->w_backoff_ms = REDIS_SENTINEL_BACKOFF_MIN_MS;
}

struct redis_sentinel *
redis_sentinel_create(struct event_base *base, const char *name,
    const char *master, const struct conf_redis_node *nodes, size_t n,
    struct redis_link_tls *tls, redis_sentinel_switch_cb cb, void *arg)
{
	struct redis_sentinel	*s;
	size_t			 i;

	s = xcalloc(1, sizeof *s);
	s->base = base;
	s->name = xstrdup(name);
	s->master = xstrdup(master);
	s->nodes = xcalloc(n, sizeof *s->nodes);
	for (i = 0; i < n; i++) {
		s->nodes[i].host = xstrdup(nodes[i].host);
		s->nodes[i].port = nodes[i].port;
	}
	s->nnodes = n;
	s->tls = tls;
	s->switch_cb = cb;
	s->switch_arg = arg;
	s->w_backoff_ms = REDIS_SENTINEL_BACKOFF_MIN_MS;
	TAILQ_INIT(&s->askers);
	s->q_timer = evtimer_new(base, redis_sentinel_q_timer_cb, s);
	s->w_timer = evtimer_new(base, redis_sentinel_w_timer_cb, s);
	s->answer_ev = event_new(base, -1, 0, redis_sentinel_answer_cb, s);
	return (s);
}

void
redis_sentinel_set_auth(struct redis_sentinel *s, const char *user,
    const char *password)
{
	free(s->user);
	if (s->password != NULL) {
		explicit_bzero(s->password, strlen(s->password));
		free(s->password);
	}
	s->user = user != NULL ? xstrdup(user) : NULL;
	s->password = password != NULL ? xstrdup(password) : NULL;
}

void
redis_sentinel_set_tls(struct redis_sentinel *s, struct redis_link_tls *tls)
{
	s->tls = tls;
}

const char *
redis_sentinel_watching(const struct redis_sentinel *s)
{
	return (s->w != NULL ? s->wname : NULL);
}

void
redis_sentinel_free(struct redis_sentinel *s)
{
	struct redis_sentinel_asker	*a;
	struct redis_link		*l;
	size_t				 i;

	if (s == NULL)
		return;
	if ((l = s->q) != NULL) {
		s->q = NULL;
		redis_link_close(l);
	}
	if ((l = s->w) != NULL) {
		s->w = NULL;
		redis_link_close(l);
	}
	while ((a = TAILQ_FIRST(&s->askers)) != NULL) {
		TAILQ_REMOVE(&s->askers, a, entry);
		free(a);
	}
	event_free(s->q_timer);
	event_free(s->w_timer);
	event_free(s->answer_ev);
	for (i = 0; i < s->nnodes; i++)
		free(s->nodes[i].host);
	free(s->nodes);
	free(s->ahost);
	free(s->host);
	redis_sentinel_set_auth(s, NULL, NULL);
	free(s->master);
	free(s->name);
	free(s);
}
