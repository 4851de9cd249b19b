/*
 * The redis event log on Redis Cluster (eventlog redis-cluster://): one
 * eventlog_redis per primary (its connections, pipelining, batching,
 * outages and watches, unchanged), and above them the slot map that
 * sends every operation to the primary of its session's slot.
 *
 * Every key and channel of a session has the hash tag {SID}
 * (redis_script.c), a task's {TID}, the keyring's {keyring}: an
 * operation's tag names its slot (redis_cluster_keyslot), and so its
 * node. A session's operations all go to one node, in the order asked,
 * so what holds for one Redis holds per session: appends of one turn to
 * one stream in one script call, one write per node per turn, a message
 * after what was asked before it.
 *
 * The map comes from CLUSTER SHARDS (CLUSTER SLOTS before Redis 7),
 * asked on a connection of its own to a known primary or a seed, at
 * start, every REDIS_CLUSTER_REFRESH_MS, and when something says it
 * changed: a MOVED answer, a node's connection lost, a subscription a
 * node dropped. A MOVED operation goes at once to the node Redis named
 * (the map follows when the refresh answers); an ASK goes there once,
 * after ASKING. Watches follow their session's slot: when the map puts
 * it on another node, the watch moves there, and its watchers re-read
 * what they may have missed (the rule of a lost subscription).
 *
 * The store's layout (redis_script.h) is checked once the map is known,
 * on the node of its mark's slot: another layout is refused, as on one
 * Redis.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "redis_cluster.h"
#include "redis_link.h"
#include "redis_script.h"
#include "xmalloc.h"

#include "eventlog_redis_int.h"

#define REDIS_CLUSTER_REFRESH_MS	10000	/* the map, at least */
#define REDIS_CLUSTER_TIMEOUT_MS	2000	/* a map answer */
#define REDIS_CLUSTER_RETRY_MS		100	/* after a failure, doubling */
#define REDIS_CLUSTER_RETRY_MAX_MS	5000

/* One watcher of a session, and the node its watch is on now. */
struct redis_cluster_watch {
	char				*sid;
	eventlog_watch_cb		 cb;
	eventlog_message_cb		 mcb;
	void				*arg;
	int				 count;	/* times watched */
	struct redis			*node;
	RB_ENTRY(redis_cluster_watch)	 entry;
};
RB_HEAD(redis_cluster_watches, redis_cluster_watch);

/* An answer owed on the next loop turn: no node serves the slot. */
enum redis_cluster_cb_type {
	REDIS_CLUSTER_CB_DONE,
	REDIS_CLUSTER_CB_LOAD,
	REDIS_CLUSTER_CB_APPEND,
	REDIS_CLUSTER_CB_READ,
	REDIS_CLUSTER_CB_TASK,
	REDIS_CLUSTER_CB_KEYRING,
	REDIS_CLUSTER_CB_TAKE,
	REDIS_CLUSTER_CB_SLOT
};

struct redis_cluster_fail {
	enum redis_cluster_cb_type	 type;
	union {
		eventlog_done_cb	 done;
		eventlog_load_cb	 load;
		eventlog_append_cb	 append;
		eventlog_read_cb	 read;
		eventlog_task_cb	 task;
		eventlog_keyring_cb	 keyring;
		eventlog_take_cb	 take;
		eventlog_slot_cb	 slot;
	} cb;
	void				*arg;
	TAILQ_ENTRY(redis_cluster_fail)	 entry;
};
TAILQ_HEAD(redis_cluster_fails, redis_cluster_fail);

struct redis_cluster {
	struct event_base		*base;
	char				*name;	/* URL, password *** */
	struct redis_link_tls		*tls;
	int				 tls_verify;
	char				*user;
	char				*password;
	struct conf_redis_node		*seeds;
	size_t				 nseeds;

	/*
	 * The nodes: one log per primary ever mapped (never more), and one
	 * never connected that holds the settings they all take.
	 */
	struct redis			*model;
	struct redis			*nodes[REDIS_CLUSTER_NODES_MAX];
	char				*addrs[REDIS_CLUSTER_NODES_MAX];
	int				 nnodes;
	int16_t				 slot[REDIS_CLUSTER_SLOTS];
	int				 covered;
	int				 mapped;	/* a map was taken */
	int				 ready;	/* was available */
	struct redis_cluster_map	*map;		/* parsing room */
	uint64_t			 tickets;
	/* Slots moved while their old node still had ops of them. */
	uint8_t				 gated[REDIS_CLUSTER_SLOTS];
	struct redis			*gate[REDIS_CLUSTER_SLOTS];
	uint64_t			 maps;		/* maps taken */

	/* The map's own connection. */
	struct redis_link		*mlink;
	char				 mhost[REDIS_CLUSTER_HOST_MAX + 1];
	int				 mport;
	int				 mnext;	/* next to ask */
	int				 again;	/* ask again */
	int				 retry_ms;
	struct event			*refresh_ev;
	struct event			*timeout_ev;
	char				 why[384];	/* of the map */

	/* The layout mark. */
	int				 layout;	/* found, or 0 */
	int				 layout_asked;
	char				 layout_why[384];

	struct redis_cluster_watches	 watches;
	struct redis_cluster_fails	 fails;
	struct event			*fail_ev;
	void				(*available_cb)(void *);
	void				*available_arg;
	int				 closing;
};

static void	redis_cluster_refresh_cb(evutil_socket_t, short, void *);
static void	redis_cluster_redirected(struct redis_cluster *,
		    struct redis *, struct redis_op *, int, unsigned int,
		    const char *, int, unsigned int);
static void	redis_cluster_changed(struct redis_cluster *, const char *);
static void	redis_cluster_node_ready(struct redis_cluster *,
		    struct redis *);
static uint64_t	redis_cluster_ticket(struct redis_cluster *);
static int	redis_cluster_gated(struct redis_cluster *, struct redis *,
		    unsigned int);
static void	redis_cluster_drained(struct redis_cluster *, struct redis *,
		    unsigned int);
static void	redis_cluster_reroute(struct redis_cluster *, struct redis *,
		    struct redis_op *);

static const struct redis_node_hooks redis_cluster_hooks = {
	.redirected = redis_cluster_redirected,
	.changed = redis_cluster_changed,
	.ready = redis_cluster_node_ready,
	.ticket = redis_cluster_ticket,
	.gated = redis_cluster_gated,
	.drained = redis_cluster_drained,
	.reroute = redis_cluster_reroute,
};
static void	redis_cluster_connect(struct redis_cluster *);
static void	redis_cluster_rehome(struct redis_cluster *);
static void	redis_cluster_layout_check(struct redis_cluster *);
static int	redis_cluster_available(void *);
static void	redis_cluster_used(const struct redis_cluster *, char *);

static int
redis_cluster_watch_cmp(struct redis_cluster_watch *a,
    struct redis_cluster_watch *b)
{
	int	c;

	if ((c = strcmp(a->sid, b->sid)) != 0)
		return (c);
	if (a->arg != b->arg)
		return ((uintptr_t)a->arg < (uintptr_t)b->arg ? -1 : 1);
	if (a->cb != b->cb)
		return ((uintptr_t)a->cb < (uintptr_t)b->cb ? -1 : 1);
	if (a->mcb != b->mcb)
		return ((uintptr_t)a->mcb < (uintptr_t)b->mcb ? -1 : 1);
	return (0);
}
RB_GENERATE_STATIC(redis_cluster_watches, redis_cluster_watch, entry,
    redis_cluster_watch_cmp);

static const struct eventlog_ops *
redis_cluster_node_ops(void)
{
	return (redis_node_ops());
}

/* Routing. */

/*
 * The node of tag's slot, or NULL: no map yet, nobody serves it, or the
 * log is closing (what its nodes' last callbacks ask for is answered
 * CANCELLED by the cluster, never by a node already freed).
 */
static struct redis *
redis_cluster_route(struct redis_cluster *c, const char *tag)
{
	int	i;

	if (c->closing)
		return (NULL);
	i = c->slot[redis_cluster_keyslot(tag, strlen(tag))];
	return (i < 0 ? NULL : c->nodes[i]);
}

/* The node at host:port, made if new (NULL past the bound). */
static struct redis *
redis_cluster_node(struct redis_cluster *c, const char *host, int port)
{
	char	*addr, *name;
	int	 i;

	xasprintf(&addr, "%s%s%s:%d", strchr(host, ':') != NULL ? "[" : "",
	    host, strchr(host, ':') != NULL ? "]" : "", port);
	for (i = 0; i < c->nnodes; i++) {
		if (strcmp(c->addrs[i], addr) == 0) {
			free(addr);
			return (c->nodes[i]);
		}
	}
	if (c->nnodes == REDIS_CLUSTER_NODES_MAX) {
		log_limited(LOG_LEVEL_WARN, "redis-cluster",
		    "eventlog=%s: more than %d primaries: %s left out",
		    c->name, REDIS_CLUSTER_NODES_MAX, addr);
		free(addr);
		return (NULL);
	}
	xasprintf(&name, "%s node %s", c->name, addr);
	c->nodes[c->nnodes] = redis_node_new(c, &redis_cluster_hooks, c->base,
	    NULL, c->model,
	    name, host, port, c->tls, 1);
	free(name);
	if (c->ready)
		redis_node_joined(c->nodes[c->nnodes]);
	c->addrs[c->nnodes] = addr;
	return (c->nodes[c->nnodes++]);
}

static int
redis_cluster_index(struct redis_cluster *c, struct redis *node)
{
	int	i;

	for (i = 0; i < c->nnodes; i++) {
		if (c->nodes[i] == node)
			return (i);
	}
	return (-1);
}

/* Answers owed because no node serves a slot: on the next turn. */

static void
redis_cluster_fail_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_cluster		*c = arg;
	struct redis_cluster_fails	 batch;
	struct redis_cluster_fail	*f;
	enum eventlog_status		 st;

	st = c->closing ? EVENTLOG_CANCELLED : EVENTLOG_UNAVAILABLE;
	TAILQ_INIT(&batch);
	TAILQ_CONCAT(&batch, &c->fails, entry);
	while ((f = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, f, entry);
		switch (f->type) {
		case REDIS_CLUSTER_CB_DONE:
			f->cb.done(st, f->arg);
			break;
		case REDIS_CLUSTER_CB_LOAD:
			f->cb.load(st, NULL, 0, f->arg);
			break;
		case REDIS_CLUSTER_CB_APPEND:
			f->cb.append(st, NULL, f->arg);
			break;
		case REDIS_CLUSTER_CB_READ:
			f->cb.read(st, NULL, 0, NULL, f->arg);
			break;
		case REDIS_CLUSTER_CB_TASK:
			f->cb.task(st, 0, NULL, 0, f->arg);
			break;
		case REDIS_CLUSTER_CB_KEYRING:
			f->cb.keyring(st, NULL, f->arg);
			break;
		case REDIS_CLUSTER_CB_TAKE:
			f->cb.take(st, NULL, f->arg);
			break;
		case REDIS_CLUSTER_CB_SLOT:
			f->cb.slot(st, 0, f->arg);
			break;
		}
		free(f);
	}
}

static struct redis_cluster_fail *
redis_cluster_fail(struct redis_cluster *c, enum redis_cluster_cb_type type,
    void *arg)
{
	struct redis_cluster_fail	*f = xcalloc(1, sizeof *f);

	f->type = type;
	f->arg = arg;
	if (TAILQ_EMPTY(&c->fails))
		event_active(c->fail_ev, EV_TIMEOUT, 0);
	TAILQ_INSERT_TAIL(&c->fails, f, entry);
	return (f);
}

#define REDIS_CLUSTER_FAIL(c, t, member, fn, a) do {			\
	redis_cluster_fail((c), (t), (a))->cb.member = (fn);		\
} while (0)

/* The operations: each to the node of its tag. */

static void
redis_cluster_session_store(void *p, const char *sid, const char *meta,
    size_t len, eventlog_done_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_DONE, done, cb, arg);
	else
		redis_cluster_node_ops()->session_store(n, sid, meta, len, cb,
		    arg);
}

static void
redis_cluster_session_update(void *p, const char *sid, const char *meta,
    size_t len, eventlog_done_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_DONE, done, cb, arg);
	else
		redis_cluster_node_ops()->session_update(n, sid, meta, len, cb,
		    arg);
}

static void
redis_cluster_session_load(void *p, const char *sid, eventlog_load_cb cb,
    void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_LOAD, load, cb, arg);
	else
		redis_cluster_node_ops()->session_load(n, sid, cb, arg);
}

static void
redis_cluster_session_delete(void *p, const char *sid, eventlog_done_cb cb,
    void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_DONE, done, cb, arg);
	else
		redis_cluster_node_ops()->session_delete(n, sid, cb, arg);
}

static void
redis_cluster_stream_create(void *p, const char *sid, uint64_t k,
    eventlog_append_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_APPEND, append, cb, arg);
	else
		redis_cluster_node_ops()->stream_create(n, sid, k, cb, arg);
}

static void
redis_cluster_append(void *p, const char *sid, uint64_t k, uint64_t seq,
    const char *data, size_t len, int flags, eventlog_append_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_APPEND, append, cb, arg);
	else
		redis_cluster_node_ops()->append(n, sid, k, seq, data, len,
		    flags, cb, arg);
}

static void
redis_cluster_stream_end(void *p, const char *sid, uint64_t k,
    eventlog_append_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_APPEND, append, cb, arg);
	else
		redis_cluster_node_ops()->stream_end(n, sid, k, cb, arg);
}

static void
redis_cluster_read(void *p, const char *sid, uint64_t k, uint64_t from,
    size_t max, eventlog_read_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_READ, read, cb, arg);
	else
		redis_cluster_node_ops()->read(n, sid, k, from, max, cb, arg);
}

static void
redis_cluster_publish(void *p, const char *sid, const char *msg, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_DONE, done, cb, arg);
	else
		redis_cluster_node_ops()->publish(n, sid, msg, len, cb, arg);
}

static void
redis_cluster_note_set(void *p, const char *sid, const char *name,
    const char *value, size_t len, uint64_t ttl_ms, eventlog_done_cb cb,
    void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_DONE, done, cb, arg);
	else
		redis_cluster_node_ops()->note_set(n, sid, name, value, len,
		    ttl_ms, cb, arg);
}

static void
redis_cluster_note_get(void *p, const char *sid, const char *name,
    eventlog_load_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, sid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_LOAD, load, cb, arg);
	else
		redis_cluster_node_ops()->note_get(n, sid, name, cb, arg);
}

static void
redis_cluster_task_put(void *p, const char *tid, uint64_t rev,
    const char *rec, size_t len, uint64_t ttl_ms, int final,
    eventlog_done_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, tid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_DONE, done, cb, arg);
	else
		redis_cluster_node_ops()->task_put(n, tid, rev, rec, len,
		    ttl_ms, final, cb, arg);
}

static void
redis_cluster_task_get(void *p, const char *tid, eventlog_task_cb cb,
    void *arg)
{
	struct redis	*n = redis_cluster_route(p, tid);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_TASK, task, cb, arg);
	else
		redis_cluster_node_ops()->task_get(n, tid, cb, arg);
}

static void
redis_cluster_keyring(void *p, uint64_t period_ms, const char *fresh1,
    const char *fresh2, eventlog_keyring_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_route(p, "keyring");

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_KEYRING, keyring, cb,
		    arg);
	else
		redis_cluster_node_ops()->keyring(n, period_ms, fresh1, fresh2,
		    cb, arg);
}

/*
 * A limit's bucket and its slots: on the node of that limit key's slot
 * (its own hash tag), whatever session asked.
 */
static struct redis *
redis_cluster_limit_route(struct redis_cluster *c, const char *key)
{
	char		*tag = redis_script_limit_tag(key);
	struct redis	*n = redis_cluster_route(c, tag);

	free(tag);
	return (n);
}

static void
redis_cluster_limit_take(void *p, const struct eventlog_take *t,
    eventlog_take_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_limit_route(p, t->key);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_TAKE, take, cb, arg);
	else
		redis_cluster_node_ops()->take(n, t, cb, arg);
}

static void
redis_cluster_limit_slot(void *p, enum eventlog_slot_op what, const char *key,
    uint64_t max, uint64_t ttl_ms, const char *const *members, size_t nm,
    eventlog_slot_cb cb, void *arg)
{
	struct redis	*n = redis_cluster_limit_route(p, key);

	if (n == NULL)
		REDIS_CLUSTER_FAIL(p, REDIS_CLUSTER_CB_SLOT, slot, cb, arg);
	else
		redis_cluster_node_ops()->slot(n, what, key, max, ttl_ms,
		    members, nm, cb, arg);
}

/* Watches: each on the node of its session's slot, moved with it. */

static void
redis_cluster_watch(void *p, const char *sid, eventlog_watch_cb cb,
    eventlog_message_cb mcb, void *arg)
{
	struct redis_cluster		*c = p;
	struct redis_cluster_watch	*w, *had;

	if (c->closing)
		return;
	w = xcalloc(1, sizeof *w);
	w->sid = xstrdup(sid);
	w->cb = cb;
	w->mcb = mcb;
	w->arg = arg;
	if ((had = RB_INSERT(redis_cluster_watches, &c->watches, w)) !=
	    NULL) {
		/* The same watcher again: counted, as a node counts it. */
		free(w->sid);
		free(w);
		w = had;
	} else
		w->node = redis_cluster_route(c, sid);
	w->count++;
	if (w->node != NULL)
		redis_cluster_node_ops()->watch(w->node, sid, cb, mcb, arg);
}

static void
redis_cluster_unwatch(void *p, const char *sid, eventlog_watch_cb cb,
    eventlog_message_cb mcb, void *arg)
{
	struct redis_cluster		*c = p;
	struct redis_cluster_watch	 find, *w;

	find.sid = (char *)sid;
	find.cb = cb;
	find.mcb = mcb;
	find.arg = arg;
	if ((w = RB_FIND(redis_cluster_watches, &c->watches, &find)) == NULL)
		return;
	if (w->node != NULL)
		redis_cluster_node_ops()->unwatch(w->node, sid, cb, mcb, arg);
	if (--w->count > 0)
		return;
	RB_REMOVE(redis_cluster_watches, &c->watches, w);
	free(w->sid);
	free(w);
}

/* Every watch whose slot is on another node now moves there. */
static void
redis_cluster_rehome(struct redis_cluster *c)
{
	struct redis_cluster_watch	*w;
	struct redis			*n;
	int				 i;

	RB_FOREACH(w, redis_cluster_watches, &c->watches) {
		n = redis_cluster_route(c, w->sid);
		if (n == w->node)
			continue;
		for (i = 0; i < w->count; i++) {
			if (w->node != NULL)
				redis_cluster_node_ops()->unwatch(w->node,
				    w->sid, w->cb, w->mcb, w->arg);
			if (n != NULL)
				redis_cluster_node_ops()->watch(n, w->sid,
				    w->cb, w->mcb, w->arg);
		}
		w->node = n;
	}
}

/* The slot map. */

/*
 * A node the map uses connects again if it was out of it: before the
 * watches move to it (redis_cluster_rehome), so they subscribe there.
 */
static void
redis_cluster_wake(struct redis_cluster *c)
{
	char	used[REDIS_CLUSTER_NODES_MAX];
	int	i;

	redis_cluster_used(c, used);
	for (i = 0; i < c->nnodes; i++) {
		if (used[i])
			redis_node_unpark(c->nodes[i]);
	}
}

/*
 * Nodes the map no longer uses give away what waits on them, and close
 * their connections once nothing is left there (else on a later map).
 */
static void
redis_cluster_evict(struct redis_cluster *c)
{
	char	used[REDIS_CLUSTER_NODES_MAX];
	int	i;

	redis_cluster_used(c, used);
	for (i = 0; i < c->nnodes; i++) {
		if (!used[i]) {
			redis_node_evict(c->nodes[i]);
			redis_node_park(c->nodes[i]);
		}
	}
}

static void
redis_cluster_reroute(struct redis_cluster *c, struct redis *from,
    struct redis_op *op)
{
	struct redis	*to = redis_cluster_route(c, redis_op_tag(op));

	redis_op_adopt(to != NULL ? to : from, op, 0);
}

/* Takes the map just parsed: nodes made for new primaries. */
static void
redis_cluster_take(struct redis_cluster *c, const char *from)
{
	struct redis_cluster_map	*m = c->map;
	struct redis			*n;
	int16_t				 idx[REDIS_CLUSTER_NODES_MAX];
	int				 i, changed = 0, first = !c->mapped;

	for (i = 0; i < m->nnodes; i++) {
		n = redis_cluster_node(c, m->nodes[i].host, m->nodes[i].port);
		idx[i] = (int16_t)(n != NULL ? redis_cluster_index(c, n) : -1);
	}
	for (i = 0; i < REDIS_CLUSTER_SLOTS; i++) {
		int16_t	v = m->slot[i] < 0 ? -1 : idx[m->slot[i]];
		int16_t	old = c->slot[i];

		/*
		 * A slot nobody serves now (its primary failed, no replica
		 * took over yet) stays where it was: its ops wait there,
		 * as in an outage, rather than fail.
		 */
		if (old == v || v < 0)
			continue;
		changed = 1;
		c->slot[i] = v;
		/* As for a MOVED: the old node's ops of it go first. */
		if (old >= 0 && v >= 0 && !c->gated[i] &&
		    redis_node_owned(c->nodes[old], (unsigned int)i) > 0) {
			c->gated[i] = 1;
			c->gate[i] = c->nodes[old];
		}
	}
	c->covered = m->covered;
	c->mapped = 1;
	c->maps++;
	c->why[0] = '\0';
	if (first || changed)
		log_info("eventlog=%s: slot map from %s: %d primaries, %d of "
		    "%d slots served", c->name, from, m->nnodes, m->covered,
		    REDIS_CLUSTER_SLOTS);
	if (m->covered < REDIS_CLUSTER_SLOTS)
		snprintf(c->why, sizeof c->why, "the cluster serves %d of %d "
		    "slots", m->covered, REDIS_CLUSTER_SLOTS);
	redis_cluster_wake(c);
	if (changed)
		redis_cluster_rehome(c);
	redis_cluster_evict(c);
	for (i = 0; i < c->nnodes; i++)
		redis_node_resubscribe(c->nodes[i]);
	redis_cluster_layout_check(c);
}

static void
redis_cluster_schedule(struct redis_cluster *c, int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	if (!c->closing)
		evtimer_add(c->refresh_ev, &tv);
}

/* The map connection is done with (answered, failed, or too slow). */
static void
redis_cluster_done(struct redis_cluster *c, const char *why)
{
	struct redis_link	*l = c->mlink;

	c->mlink = NULL;
	evtimer_del(c->timeout_ev);
	redis_link_close(l);
	if (why != NULL) {
		if (strcmp(c->why, why) != 0)
			log_warn("eventlog=%s: slot map: %s; trying the next "
			    "node", c->name, why);
		strlcpy(c->why, why, sizeof c->why);
		redis_cluster_schedule(c, c->retry_ms);
		c->retry_ms *= 2;
		if (c->retry_ms > REDIS_CLUSTER_RETRY_MAX_MS)
			c->retry_ms = REDIS_CLUSTER_RETRY_MAX_MS;
		return;
	}
	c->retry_ms = REDIS_CLUSTER_RETRY_MS;
	if (c->again) {
		c->again = 0;
		redis_cluster_schedule(c, 0);
	} else
		redis_cluster_schedule(c, REDIS_CLUSTER_REFRESH_MS);
}

static void
redis_cluster_slots_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_cluster	*c = arg;
	char			*cause, why[512];

	if (l != c->mlink)
		return;
	if (reply == NULL) {
		redis_cluster_done(c, "connection lost");
		return;
	}
	if (redis_cluster_slots(reply, c->mhost, c->mport, c->map,
	    &cause) != 0) {
		snprintf(why, sizeof why, "%s", cause);
		free(cause);
		redis_cluster_done(c, why);
		return;
	}
	snprintf(why, sizeof why, "%s:%d (CLUSTER SLOTS)", c->mhost, c->mport);
	redis_cluster_take(c, why);
	redis_cluster_done(c, NULL);
}

static void
redis_cluster_shards_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_cluster	*c = arg;
	char			*cause, why[512];

	if (l != c->mlink)
		return;
	if (reply == NULL) {
		redis_cluster_done(c, "connection lost");
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR &&
	    strstr(reply->str, "nknown subcommand") != NULL) {
		/* Before Redis 7: the older answer. */
		if (redis_link_command(l, redis_cluster_slots_cb, c, "CLUSTER",
		    "SLOTS", NULL) != 0)
			redis_cluster_done(c, "connection lost");
		return;
	}
	if (redis_cluster_shards(reply, c->tls != NULL, c->mhost, c->mport,
	    c->map, &cause) != 0) {
		snprintf(why, sizeof why, "%s:%d: %s", c->mhost, c->mport,
		    cause);
		free(cause);
		redis_cluster_done(c, why);
		return;
	}
	snprintf(why, sizeof why, "%s:%d", c->mhost, c->mport);
	redis_cluster_take(c, why);
	redis_cluster_done(c, NULL);
}

static void
redis_cluster_auth_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_cluster	*c = arg;
	char			 why[1024], what[400];

	if (l != c->mlink || reply == NULL ||
	    reply->type != REDIS_REPLY_ERROR ||
	    strstr(reply->str, "without any password configured") != NULL)
		return;
	if (redis_script_refusal(reply, what, sizeof what) ==
	    REDIS_REFUSED_NONE)
		snprintf(what, sizeof what, "%.200s", reply->str);
	snprintf(why, sizeof why, "AUTH refused at %s:%d: %s", c->mhost,
	    c->mport, what);
	redis_cluster_done(c, why);
}

static void
redis_cluster_down_cb(struct redis_link *l, const char *why, void *arg)
{
	struct redis_cluster	*c = arg;
	char			 text[512];

	if (l != c->mlink)
		return;
	c->mlink = NULL;	/* the link frees itself */
	evtimer_del(c->timeout_ev);
	snprintf(text, sizeof text, "%s:%d: %s", c->mhost, c->mport, why);
	if (strcmp(c->why, text) != 0)
		log_warn("eventlog=%s: slot map: %s; trying the next node",
		    c->name, text);
	strlcpy(c->why, text, sizeof c->why);
	redis_cluster_schedule(c, c->retry_ms);
	c->retry_ms *= 2;
	if (c->retry_ms > REDIS_CLUSTER_RETRY_MAX_MS)
		c->retry_ms = REDIS_CLUSTER_RETRY_MAX_MS;
}

static const struct redis_link_events redis_cluster_link_events = {
	.down = redis_cluster_down_cb,
};

/*
 * Asks the next address for the map: the primaries known, then the
 * seeds, in turn, so one dead node is passed over.
 */
static void
redis_cluster_connect(struct redis_cluster *c)
{
	struct redis_link_addr	 addr;
	size_t			 n = (size_t)c->nnodes + c->nseeds, i;
	const char		*host;
	char			*cause;
	int			 port;

	i = (size_t)c->mnext++ % n;
	if (i < (size_t)c->nnodes) {
		/* "host:port" or "[v6]:port" */
		const char	*a = c->addrs[i], *colon = strrchr(a, ':');

		if (a[0] == '[')
			snprintf(c->mhost, sizeof c->mhost, "%.*s",
			    (int)(colon - a - 2), a + 1);
		else
			snprintf(c->mhost, sizeof c->mhost, "%.*s",
			    (int)(colon - a), a);
		c->mport = atoi(colon + 1);
	} else {
		host = c->seeds[i - (size_t)c->nnodes].host;
		port = c->seeds[i - (size_t)c->nnodes].port;
		strlcpy(c->mhost, host, sizeof c->mhost);
		c->mport = port;
	}
	memset(&addr, 0, sizeof addr);
	addr.host = c->mhost;
	addr.port = c->mport;
	addr.tls = c->tls != NULL;
	c->mlink = redis_link_open(c->base, &addr, c->tls,
	    &redis_cluster_link_events, c, &cause);
	if (c->mlink == NULL) {
		char	why[512];

		snprintf(why, sizeof why, "%s:%d: %s", c->mhost, c->mport,
		    cause);
		free(cause);
		strlcpy(c->why, why, sizeof c->why);
		redis_cluster_schedule(c, c->retry_ms);
		return;
	}
	if (c->password != NULL)
		redis_link_auth(c->mlink, c->user, c->password,
		    redis_cluster_auth_cb, c);
	redis_link_command(c->mlink, redis_cluster_shards_cb, c, "CLUSTER",
	    "SHARDS", NULL);
	{
		struct timeval	tv = { REDIS_CLUSTER_TIMEOUT_MS / 1000,
				    (REDIS_CLUSTER_TIMEOUT_MS % 1000) * 1000 };

		evtimer_add(c->timeout_ev, &tv);
	}
}

static void
redis_cluster_refresh_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_cluster	*c = arg;

	if (c->closing || c->mlink != NULL)
		return;
	redis_cluster_connect(c);
}

static void
redis_cluster_timeout_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_cluster	*c = arg;
	char			 why[512];

	if (c->mlink == NULL)
		return;
	snprintf(why, sizeof why, "%s:%d: no answer in %d ms", c->mhost,
	    c->mport, REDIS_CLUSTER_TIMEOUT_MS);
	redis_cluster_done(c, why);
}

static void
redis_cluster_changed(struct redis_cluster *c, const char *why)
{
	if (c->closing)
		return;
	log_debug("eventlog=%s: refreshing the slot map (%s)", c->name, why);
	if (c->mlink != NULL) {
		c->again = 1;
		return;
	}
	evtimer_del(c->refresh_ev);
	redis_cluster_schedule(c, 0);
}

/*
 * op was redirected by from: MOVED (kind 1) moves the slot for good, so
 * the map takes it now (the refresh confirms it, and may say more); ASK
 * (kind 2) sends this op only.
 */
static void
redis_cluster_redirected(struct redis_cluster *c, struct redis *from,
    struct redis_op *op, int kind, unsigned int slot, const char *host,
    int port, unsigned int left)
{
	struct redis	*to;

	to = redis_cluster_node(c, host, port);
	if (to == NULL || to == from) {
		/* Nowhere else to go: as a node that cannot serve it. */
		to = from;
	}
	if (kind == 1 && to != from) {
		c->slot[slot] = (int16_t)redis_cluster_index(c, to);
		/*
		 * The ops from still has of the slot come back redirected
		 * in their order: until they have, the slot's ops wait
		 * wherever they are, so none overtakes them.
		 */
		if (left > 0) {
			c->gated[slot] = 1;
			c->gate[slot] = from;
		}
		redis_cluster_changed(c, "MOVED");
	}
	/*
	 * A node out of the map may be where a slot goes (ASK to a new
	 * primary, importing its first slot): it connects again.
	 */
	redis_node_unpark(to);
	redis_op_adopt(to, op, kind == 2);
}

static uint64_t
redis_cluster_ticket(struct redis_cluster *c)
{
	return (++c->tickets);
}

static int
redis_cluster_gated(struct redis_cluster *c, struct redis *node,
    unsigned int slot)
{
	return (c->gated[slot] && c->gate[slot] != node);
}

static void
redis_cluster_drained(struct redis_cluster *c, struct redis *node,
    unsigned int slot)
{
	int	i;

	if (c->closing || !c->gated[slot] || c->gate[slot] != node)
		return;
	c->gated[slot] = 0;
	c->gate[slot] = NULL;
	for (i = 0; i < c->nnodes; i++)
		redis_node_release(c->nodes[i]);
}

/* The layout mark, on the node of its slot. */

static void
redis_cluster_layout_cb(struct redis *node, int layout, const char *why,
    void *arg)
{
	struct redis_cluster	*c = arg;

	c->layout_asked = 0;
	if (layout == REDIS_SCRIPT_LAYOUT) {
		c->layout = layout;
		c->layout_why[0] = '\0';
		if (redis_cluster_available(c) && c->available_cb != NULL)
			c->available_cb(c->available_arg);
		return;
	}
	if (layout > 0) {
		if (c->layout != layout)
			log_error("eventlog=%s: the store is in layout "
			    "%d (%s), this mcpd reads layout %d: run one "
			    "version of mcpd on it (docs/protocol.md, Redis "
			    "layout)", c->name, layout,
			    REDIS_SCRIPT_LAYOUT_KEY, REDIS_SCRIPT_LAYOUT);
		c->layout = layout;
		snprintf(c->layout_why, sizeof c->layout_why, "the store is "
		    "in layout %d (%s), this mcpd reads layout %d", layout,
		    REDIS_SCRIPT_LAYOUT_KEY, REDIS_SCRIPT_LAYOUT);
		return;
	}
	snprintf(c->layout_why, sizeof c->layout_why, "layout check at %s: "
	    "%s", redis_node_server(node), why);
	redis_cluster_changed(c, "the layout check failed");
}

static void
redis_cluster_layout_check(struct redis_cluster *c)
{
	struct redis	*n;

	if (c->layout == REDIS_SCRIPT_LAYOUT || c->layout_asked || c->closing)
		return;
	if ((n = redis_cluster_route(c, "layout")) == NULL)
		return;
	if (redis_node_layout(n, redis_cluster_layout_cb, c) == 0)
		c->layout_asked = 1;
}

static void
redis_cluster_node_ready(struct redis_cluster *c, struct redis *node)
{
	redis_cluster_layout_check(c);
	if (redis_cluster_available(c) && c->available_cb != NULL)
		c->available_cb(c->available_arg);
}

/* Life cycle, and what the cluster says of itself. */

/* Which nodes the map uses (a node it left may still be there). */
static void
redis_cluster_used(const struct redis_cluster *c, char *used)
{
	int	i;

	memset(used, 0, REDIS_CLUSTER_NODES_MAX);
	for (i = 0; i < REDIS_CLUSTER_SLOTS; i++) {
		if (c->slot[i] >= 0)
			used[c->slot[i]] = 1;
	}
}

/* Every node of the map serves, and the store is in this layout. */
static int
redis_cluster_available(void *p)
{
	struct redis_cluster	*c = p;
	char			 used[REDIS_CLUSTER_NODES_MAX];
	int			 i;

	if (c->closing || !c->mapped || c->covered < REDIS_CLUSTER_SLOTS ||
	    c->layout != REDIS_SCRIPT_LAYOUT)
		return (0);
	redis_cluster_used(c, used);
	for (i = 0; i < c->nnodes; i++) {
		if (used[i] && !redis_node_ops()->available(c->nodes[i]))
			return (0);
	}
	c->ready = 1;
	return (1);
}

/* The least steady node's time. */
static uint64_t
redis_cluster_steady(void *p)
{
	struct redis_cluster	*c = p;
	char			 used[REDIS_CLUSTER_NODES_MAX];
	uint64_t		 least = UINT64_MAX, t;
	int			 i;

	if (!redis_cluster_available(c))
		return (0);
	redis_cluster_used(c, used);
	for (i = 0; i < c->nnodes; i++) {
		if (!used[i])
			continue;
		t = redis_node_ops()->steady(c->nodes[i]);
		if (t < least)
			least = t;
	}
	return (least == UINT64_MAX ? 0 : least);
}

static void
redis_cluster_on_available(void *p, void (*cb)(void *), void *arg)
{
	struct redis_cluster	*c = p;

	c->available_cb = cb;
	c->available_arg = arg;
}

static void
redis_cluster_describe(void *p, struct eventlog_where *w)
{
	struct redis_cluster	*c = p;
	struct eventlog_where	 nw;
	static char		 server[64];
	static struct eventlog_node nodes[REDIS_CLUSTER_NODES_MAX];
	int			 slots[REDIS_CLUSTER_NODES_MAX];
	int			 i;

	w->address = c->name;
	snprintf(server, sizeof server, "%d primaries", c->nnodes);
	w->server = server;
	w->role = "cluster";
	w->tls = c->tls != NULL;
	w->tls_verify = c->tls_verify;
	memset(slots, 0, sizeof slots);
	for (i = 0; i < REDIS_CLUSTER_SLOTS; i++) {
		if (c->slot[i] >= 0)
			slots[c->slot[i]]++;
	}
	w->nodes = nodes;
	w->nnodes = (size_t)c->nnodes;
	for (i = 0; i < c->nnodes; i++) {
		memset(&nw, 0, sizeof nw);
		redis_node_ops()->describe(c->nodes[i], &nw);
		/*
		 * Every node ever mapped. A primary is one the map gives
		 * slots; one out of the map has no role mcpd knows now
		 * (its connection closes: what it said last may be stale).
		 */
		nodes[i].server = c->addrs[i];
		nodes[i].role = slots[i] > 0 ? "master" : NULL;
		nodes[i].slots = slots[i];
		nodes[i].why = nw.why;
		if (redis_node_parked(c->nodes[i]))
			nodes[i].state = "closed";
		else
			nodes[i].state = nw.why == NULL ? "ready" :
			    "connecting";
		w->connects += nw.connects;
		w->failovers += nw.failovers;
		if (w->tls_version == NULL) {
			w->tls_version = nw.tls_version;
			w->tls_cipher = nw.tls_cipher;
		}
		if (w->why == NULL && nw.why != NULL &&
		    redis_cluster_available(c) == 0)
			w->why = nw.why;
	}
	if (c->closing)
		w->why = "closing";
	else if (!c->mapped)
		w->why = c->why[0] != '\0' ? c->why : "asking for the slot map";
	else if (c->covered < REDIS_CLUSTER_SLOTS)
		w->why = c->why;
	else if (c->layout != REDIS_SCRIPT_LAYOUT)
		w->why = c->layout_why[0] != '\0' ? c->layout_why :
		    "checking the store's layout";
}

static int
redis_cluster_reconfigure(void *p, const struct conf *conf, char **cause)
{
	struct redis_cluster	*c = p;
	struct redis_link_tls	*tls = NULL;
	struct redis_link_tls_conf tc;
	int			 i;

	if (c->tls != NULL) {
		memset(&tc, 0, sizeof tc);
		tc.ca_file = conf->redis_tls_ca_file;
		tc.cert_file = conf->redis_tls_cert_file;
		tc.key_file = conf->redis_tls_key_file;
		tc.server_name = conf->redis_tls_server_name;
		tc.verify = conf->redis_tls_verify;
		if ((tls = redis_link_tls_new(&tc, cause)) == NULL)
			return (-1);
		/* Links keep theirs; the nodes take the new one. */
		for (i = 0; i < c->nnodes; i++)
			redis_node_reconfigure(c->nodes[i], NULL, NULL, tls,
			    conf->redis_tls_verify);
		redis_node_reconfigure(c->model, NULL, NULL, tls,
		    conf->redis_tls_verify);
		redis_link_tls_free(c->tls);
		c->tls = tls;
		c->tls_verify = conf->redis_tls_verify;
	}
	free(c->user);
	if (c->password != NULL) {
		explicit_bzero(c->password, strlen(c->password));
		free(c->password);
	}
	c->user = conf_redis_user(conf) != NULL ?
	    xstrdup(conf_redis_user(conf)) : NULL;
	c->password = conf_redis_password(conf) != NULL ?
	    xstrdup(conf_redis_password(conf)) : NULL;
	for (i = 0; i < c->nnodes; i++)
		redis_node_reconfigure(c->nodes[i], c->user, c->password, NULL,
		    0);
	redis_node_reconfigure(c->model, c->user, c->password, NULL, 0);
	return (0);
}

static void
redis_cluster_free(void *p)
{
	struct redis_cluster		*c = p;
	struct redis_cluster_watch	*w, *w1;
	size_t				 i;
	int				 j;

	c->closing = 1;
	if (c->mlink != NULL) {
		struct redis_link	*l = c->mlink;

		c->mlink = NULL;
		redis_link_close(l);
	}
	RB_FOREACH_SAFE(w, redis_cluster_watches, &c->watches, w1) {
		RB_REMOVE(redis_cluster_watches, &c->watches, w);
		free(w->sid);
		free(w);
	}
	for (j = 0; j < c->nnodes; j++) {
		redis_node_ops()->free(c->nodes[j]);
		free(c->addrs[j]);
	}
	redis_node_ops()->free(c->model);
	/* What the nodes' last callbacks asked for, answered CANCELLED. */
	while (!TAILQ_EMPTY(&c->fails))
		redis_cluster_fail_cb(-1, 0, c);
	event_free(c->fail_ev);
	event_free(c->refresh_ev);
	event_free(c->timeout_ev);
	redis_link_tls_free(c->tls);
	for (i = 0; i < c->nseeds; i++)
		free(c->seeds[i].host);
	free(c->seeds);
	free(c->user);
	if (c->password != NULL) {
		explicit_bzero(c->password, strlen(c->password));
		free(c->password);
	}
	free(c->map);
	log_debug("eventlog=%s: closed", c->name);
	free(c->name);
	free(c);
}

static const struct eventlog_ops redis_cluster_ops = {
	.name = "redis",
	.free = redis_cluster_free,
	.session_store = redis_cluster_session_store,
	.session_update = redis_cluster_session_update,
	.session_load = redis_cluster_session_load,
	.session_delete = redis_cluster_session_delete,
	.stream_create = redis_cluster_stream_create,
	.append = redis_cluster_append,
	.stream_end = redis_cluster_stream_end,
	.read = redis_cluster_read,
	.watch = redis_cluster_watch,
	.unwatch = redis_cluster_unwatch,
	.publish = redis_cluster_publish,
	.note_set = redis_cluster_note_set,
	.note_get = redis_cluster_note_get,
	.task_put = redis_cluster_task_put,
	.task_get = redis_cluster_task_get,
	.keyring = redis_cluster_keyring,
	.take = redis_cluster_limit_take,
	.slot = redis_cluster_limit_slot,
	.available = redis_cluster_available,
	.on_available = redis_cluster_on_available,
	.steady = redis_cluster_steady,
	.describe = redis_cluster_describe,
	.reconfigure = redis_cluster_reconfigure,
};

/*
 * Asks the seeds for the map, and connects to its primaries; until they
 * are ready every operation answers UNAVAILABLE. Fails for TLS files
 * that cannot be used.
 */
void *
eventlog_redis_cluster_create(struct event_base *base,
    const struct conf *conf, const struct eventlog_ops **ops, char **cause)
{
	struct redis_cluster		*c;
	struct redis_link_tls_conf	 tc;
	struct redis_link_tls		*tls = NULL;
	size_t				 i;
	char				*name;

	if (conf->nredis_sentinels == 0) {
		xasprintf(cause, "redis-cluster:// needs at least one node");
		return (NULL);
	}
	if (conf_redis_tls(conf)) {
		memset(&tc, 0, sizeof tc);
		tc.ca_file = conf->redis_tls_ca_file;
		tc.cert_file = conf->redis_tls_cert_file;
		tc.key_file = conf->redis_tls_key_file;
		tc.server_name = conf->redis_tls_server_name;
		tc.verify = conf->redis_tls_verify;
		if ((tls = redis_link_tls_new(&tc, cause)) == NULL)
			return (NULL);
	}
	c = xcalloc(1, sizeof *c);
	c->base = base;
	c->name = xstrdup(conf->redis_name);
	c->tls = tls;
	c->tls_verify = conf->redis_tls_verify;
	if (conf_redis_user(conf) != NULL)
		c->user = xstrdup(conf_redis_user(conf));
	if (conf_redis_password(conf) != NULL)
		c->password = xstrdup(conf_redis_password(conf));
	c->nseeds = conf->nredis_sentinels;
	c->seeds = xcalloc(c->nseeds, sizeof *c->seeds);
	for (i = 0; i < c->nseeds; i++) {
		c->seeds[i].host = xstrdup(conf->redis_sentinels[i].host);
		c->seeds[i].port = conf->redis_sentinels[i].port;
	}
	for (i = 0; i < REDIS_CLUSTER_SLOTS; i++)
		c->slot[i] = -1;
	c->map = xcalloc(1, sizeof *c->map);
	c->retry_ms = REDIS_CLUSTER_RETRY_MS;
	RB_INIT(&c->watches);
	TAILQ_INIT(&c->fails);
	c->fail_ev = event_new(base, -1, 0, redis_cluster_fail_cb, c);
	c->refresh_ev = evtimer_new(base, redis_cluster_refresh_cb, c);
	c->timeout_ev = evtimer_new(base, redis_cluster_timeout_cb, c);

	/* Settings for the nodes, which come from the map. */
	xasprintf(&name, "%s (settings)", c->name);
	c->model = redis_node_new(c, &redis_cluster_hooks, base, conf, NULL,
	    name, c->seeds[0].host, c->seeds[0].port, c->tls, 0);
	free(name);
	log_info("eventlog=%s: Redis Cluster from %zu seed%s%s", c->name,
	    c->nseeds, c->nseeds == 1 ? "" : "s", c->tls != NULL ? ", TLS" :
	    "");
	if (c->tls != NULL && !c->tls_verify)
		log_warn("eventlog=%s: redis_tls_verify off: the servers' "
		    "certificates are not checked, so anyone on the way can "
		    "read and change the event log", c->name);
	redis_cluster_connect(c);
	*ops = &redis_cluster_ops;
	return (c);
}
