/*
 * The redis event log: sessions and streams in Redis, shared by every mcpd
 * instance that points at the same server, with exactly the memory
 * backend's semantics. The layout and the Lua script that keeps each
 * operation atomic live in redis_script.c; this file is the I/O.
 *
 * Two connections. The command connection carries every operation, one
 * EVALSHA each (a plain HGET for session_load, GET and SET for notes,
 * PUBLISH for messages), pipelined: calls are issued back to back and
 * hiredis answers them in order, so a message follows what was asked
 * before it. The subscription connection exists once something is
 * watched; it only SUBSCRIBEs and UNSUBSCRIBEs (a subscribed connection
 * can do nothing else), and hears commits and messages.
 *
 * hiredis 0.14.1 has no command timeout, so we keep our own: when the
 * oldest command in flight has waited REDIS_TIMEOUT_MS (since it was sent,
 * or since the last reply if that came later), Redis has stopped
 * answering. A lost connection is retried with a backoff
 * (REDIS_BACKOFF_MIN_MS doubling to REDIS_BACKOFF_MAX_MS).
 *
 * An outage (Redis silent for REDIS_TIMEOUT_MS, or the connection lost,
 * once it has been ready) is waited out for eventlog_outage_grace: a
 * short stall, a failover or a restart with persistence should pause
 * calls, not end them. Meanwhile nothing is answered: operations asked
 * for wait in the waiting queue, in order; a silent connection is kept
 * (Redis may only be paused: its replies come in order when it wakes),
 * and a lost one hands back what it had sent and not had answered, to be
 * sent again first. Once Redis answers (a reply on the silent connection,
 * or a new one set up) everything goes, in order. An operation sent twice
 * (its first answer lost with the connection) does what it did once: the
 * script's creates and appends carry a token and recognise their own
 * entries (redis_script.c, Retries). Producers wait for their commit
 * callbacks, so they pause; the queue holds at most REDIS_MAX_INFLIGHT
 * operations and REDIS_WAIT_BYTES of commands, beyond which operations
 * are refused. Past the grace the connection is dropped and everything
 * in flight or waiting is answered UNAVAILABLE; until Redis answers
 * again, operations then fail at once (on the next loop turn), and
 * nothing is queued. With a grace of 0, or before the connection was
 * ever ready, an outage is that at once.
 *
 * Every hiredis command carries an op as its private data, and hiredis
 * calls back exactly once per command, with a NULL reply when the
 * connection goes; an op is freed after its last callback. The caller's
 * callback runs at most once per op (op->answered) however the replies go.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "clock.h"
#include "conf.h"
#include "cursor.h"
#include "eventlog.h"
#include "log.h"
#include "random.h"
#include "redis_cluster.h"
#include "redis_link.h"
#include "redis_script.h"
#include "redis_sentinel.h"
#include "xmalloc.h"

#include "eventlog_redis_int.h"

#define REDIS_TIMEOUT_MS	2000	/* a reply, or a connection's set-up */
#define REDIS_WAIT_MS		500	/* WAIT for replicas; < the above */
#define REDIS_BACKOFF_MIN_MS	100
#define REDIS_BACKOFF_MAX_MS	5000
#define REDIS_BACKOFF_GRACE_MS	500	/* at most, while ops wait */
#define REDIS_MAX_INFLIGHT	100000	/* caller ops sent or waiting */
#define REDIS_WAIT_BYTES	(64 * 1024 * 1024)	/* commands waiting */
#define REDIS_TOMBSTONES	1024	/* as the memory backend keeps */
#define REDIS_BATCH_MAX		256	/* entries in one script call */
#define REDIS_BATCH_BYTES	(1024 * 1024)	/* their data, unless one */
#define REDIS_RETRY_MIN_MS	10	/* an op's -TRYAGAIN back-off */
#define REDIS_RETRY_MAX_MS	500

struct redis;

enum redis_conn_state {
	REDIS_CONN_DOWN,	/* waiting to reconnect */
	REDIS_CONN_CONNECTING,	/* TCP connect and set-up in flight */
	REDIS_CONN_READY,
	REDIS_CONN_STATE_MAX
};

static const char *redis_conn_state_names[REDIS_CONN_STATE_MAX] = {
	"down", "connecting", "ready"
};

struct redis_conn {
	struct redis		*r;
	const char		*name;
	struct redis_link	*link;
	char			 server[300];	/* where link goes */
	enum redis_conn_state	 state;
	int			 started;
	int			 backoff_ms;
	int			 now;		/* next attempt without backoff */
	int			 asking;	/* the sentinels, for an address */
	int			 refused;	/* its credentials or the ACL */
	char			 why[256];	/* failure logged, until ready */
	struct event		*timer_ev;	/* backoff, or connect deadline */
	void			(*setup)(struct redis_conn *);
	void			(*lost)(struct redis_conn *);
};

enum redis_op_type {
	REDIS_OP_AUTH,		/* set-up of each command connection */
	REDIS_OP_SELECT,
	REDIS_OP_SCRIPT_LOAD,
	REDIS_OP_INFO,
	REDIS_OP_CHECK,
	REDIS_OP_LAYOUT,
	REDIS_OP_STORE,		/* what callers ask */
	REDIS_OP_LOAD,
	REDIS_OP_DELETE,
	REDIS_OP_CREATE,
	REDIS_OP_APPEND,
	REDIS_OP_END,
	REDIS_OP_READ,
	REDIS_OP_NOTE_SET,	/* plain SET, answered "OK" */
	REDIS_OP_PUBLISH,	/* plain PUBLISH, answered a count */
	REDIS_OP_TASK_PUT,
	REDIS_OP_TASK_GET,	/* plain GET: "REV RECORD" or nil */
	REDIS_OP_KEYRING,
	REDIS_OP_TAKE,		/* limits: the script's take */
	REDIS_OP_SLOT		/* and its slot */
};

TAILQ_HEAD(redis_ops, redis_op);

/* One entry of an append op, with the callback that awaits it. */
struct redis_append {
	uint64_t		 seq;
	eventlog_append_cb	 cb;
	void			*arg;
};

struct redis_op {
	struct redis		*r;
	enum redis_op_type	 type;
	int			 script;	/* EVALSHA of the script */
	int			 wait;		/* a commit: WAIT follows */
	int			 answered;
	int			 replies;	/* link callbacks owed */
	int			 retried;	/* sent again after NOSCRIPT */
	int			 asking;	/* ASKING first (Cluster) */
	int			 slot;		/* counted in owned, or -1 */
	uint64_t		 ticket;	/* the cluster's order */
	struct redis_ops	*list;		/* inflight, waitq, failq... */
	struct redis_link	*link;		/* sent on; NULL: taken back */
	uint64_t		 sent_ms;
	uint64_t		 tryagain_ms;	/* first -TRYAGAIN, or 0 */
	enum eventlog_status	 fail;		/* failq: the answer */
	/*
	 * With commit replicas:N: the WAIT that answers it (commits and
	 * reads), and its script's answer meanwhile (a read's entries
	 * point into the reply, kept).
	 */
	struct redis_wait	*group;
	TAILQ_ENTRY(redis_op)	 gentry;
	int			 held_ok;
	struct eventlog_info	 info;
	struct redis_script_result res;
	redisReply		*kept;
	char			*sid;		/* for log lines */
	uint64_t		 k;
	uint64_t		 seq;
	/*
	 * The command, written in the protocol as its arguments are added
	 * ("$len\r\nbytes\r\n" each, after REDIS_CMD_HEAD bytes kept for
	 * "*argc\r\n"), and handed to hiredis as it is: building an op of
	 * many entries costs a few reallocations and no formatting. Each
	 * argument's bytes are found by offset.
	 */
	char			*buf;
	size_t			 buflen;
	size_t			 bufcap;
	size_t			*argoff;
	size_t			*argvlen;
	int			 argc;
	int			 argcap;
	struct redis_append	*appends;	/* append, create: entries */
	size_t			 nappends;
	size_t			 nalloc;
	size_t			 bytes;		/* of their data */
	int			 final;		/* the last ends the stream */
	int			 final_arg;	/* index of that flag */
	int			 again_arg;	/* of "sent again", or 0 */
	int			 pairs_arg;	/* index of the first id, data */
	union {
		eventlog_done_cb	done;
		eventlog_append_cb	append;
		eventlog_read_cb	read;
		eventlog_load_cb	load;
		eventlog_task_cb	task;
		eventlog_keyring_cb	keyring;
		redis_node_layout_cb	layout;
		eventlog_take_cb	take;
		eventlog_slot_cb	slot;
	} cb;
	void			*arg;
	TAILQ_ENTRY(redis_op)	 entry;
	RB_ENTRY(redis_op)	 centry;	/* a create not answered yet */
	int			 refused;	/* held: its create failed */
};
RB_HEAD(redis_creates, redis_op);

struct redis_watcher {
	eventlog_watch_cb		 cb;
	eventlog_message_cb		 mcb;
	void				*arg;
	int				 removed;
	int				 resync;	/* owes a k = 0 call */
	TAILQ_ENTRY(redis_watcher)	 entry;
};
TAILQ_HEAD(redis_watchers, redis_watcher);

enum redis_watch_state {
	REDIS_WATCH_IDLE,		/* not subscribed */
	REDIS_WATCH_SUBSCRIBING,
	REDIS_WATCH_LIVE,
	REDIS_WATCH_UNSUBSCRIBING
};

/* The watchers of one session: one channel subscription between them. */
struct redis_watch {
	char				*sid;
	char				*channel;
	struct redis_watchers		 watchers;
	size_t				 count;		/* not removed */
	enum redis_watch_state		 state;
	int				 queued;	/* on resyncq */
	int				 dirty;		/* on dirtyq */
	RB_ENTRY(redis_watch)		 entry;
	TAILQ_ENTRY(redis_watch)	 qentry;
	TAILQ_ENTRY(redis_watch)	 dentry;
};
RB_HEAD(redis_watches, redis_watch);
TAILQ_HEAD(redis_watchq, redis_watch);

/*
 * One WAIT for the commits and reads a loop turn sent on the command
 * connection: WAIT covers every write the connection made before it, so
 * one answers them all (Redis blocks the connection on each WAIT: one
 * per op would queue their round trips to the replicas one after the
 * other).
 */
TAILQ_HEAD(redis_group_ops, redis_op);
struct redis_wait {
	struct redis		*r;
	struct redis_link	*link;
	struct redis_group_ops	 ops;
	long long		 acked;		/* replicas, last answer */
};

struct redis {
	struct event_base	*base;
	char			*name;		/* the URL, password as *** */
	enum conf_redis_kind	 kind;
	char			*host;		/* the primary (tcp, tls) */
	int			 port;
	char			*path;		/* unix */
	int			 db;
	int			 tls;
	int			 tls_verify;
	struct redis_link_tls	*tlsconf;
	char			*user;		/* AUTH; NULL password: none */
	char			*password;
	struct redis_sentinel	*sentinel;	/* redis-sentinel:// */
	struct redis_cluster	*cluster;	/* a primary of a cluster */
	const struct redis_node_hooks *hooks;	/* the cluster's */
	uint32_t		*owned;		/* its ops, per slot */
	int			 tls_borrowed;	/* tlsconf is the cluster's */
	uint64_t		 failovers;	/* changes of primary */
	uint64_t		 connects;	/* command connections set up */
	char			 role[16];	/* INFO's, once set up */
	int			 nopass_logged;
	struct redis_wait	*group;		/* this turn's WAIT */
	int			 behind;	/* WAIT short: waiting */
	char			 behind_why[128];
	int			 replicas;
	size_t			 maxlen;
	uint64_t		 session_ttl_ms;
	uint64_t		 open_ttl_ms;
	uint64_t		 stream_ttl_ms;
	size_t			 max_fields;
	int			 closing;
	int			 parked;	/* out of the map (Cluster) */

	struct redis_conn	 cmd;
	char			 sha[41];	/* of the loaded script */
	int			 sharded;	/* its variant (Cluster) */
	struct redis_ops	 inflight;	/* sent, in send order */
	size_t			 ninflight;	/* callers' ops among them */
	struct redis_ops	 failq;		/* answered on the next turn */
	struct event		*fail_ev;
	struct redis_op		*open;		/* op taking more entries */
	struct redis_creates	 creates;	/* creates not answered yet */
	struct redis_ops	 held;		/* waiting for a create */
	struct redis_ops	 gatedq;	/* their slot moved (Cluster) */
	struct redis_ops	 retryq;	/* -TRYAGAIN, sent again later */
	struct event		*retry_ev;
	int			 retry_ms;	/* its back-off, now */
	struct event		*flush_ev;	/* sends it, end of this turn */
	struct event		*deadline_ev;
	uint64_t		 deadline_ms;	/* when deadline_ev is due */
	uint64_t		 progress_ms;	/* last reply */
	int			 saturated;
	int			 policy_warned;
	uint64_t		 grace_ms;	/* eventlog_outage_grace */
	int			 ever_ready;	/* outages are waited out */
	uint64_t		 outage_ms;	/* when it began, or 0 */
	int			 stalled;	/* silent, not lost */
	int			 expired;	/* past the grace: refuse */
	struct redis_ops	 waitq;		/* waiting out the outage */
	size_t			 nwaiting;
	size_t			 waiting_bytes;
	int			 waitq_full;
	struct event		*grace_ev;
	uint64_t		 steady_ms;	/* answering since */
	char			 token[16];	/* this process's: hex */
	uint64_t		 ntokens;	/* ops that carry one */
	char			 run_id[41];	/* the server's run, once known */
	uint64_t		 run_failovers;	/* failovers when it was read */
	int			 noscript_logged;
	void			(*available_cb)(void *);
	void			*available_arg;

	struct redis_conn	 sub;
	struct redis_watches	 watches;
	struct redis_watchq	 resyncq;
	struct redis_watchq	 dirtyq;
	int			 dispatching;
	struct event		*resync_ev;
};

static void	redis_conn_connect(struct redis_conn *);
static void	redis_conn_drop(struct redis_conn *, const char *);
static void	redis_conn_drop_waiting(struct redis_conn *);
static void	redis_reply_cb(struct redis_link *, redisReply *, void *);
static void	redis_wait_cb(struct redis_link *, redisReply *, void *);
static void	redis_asking_cb(struct redis_link *, redisReply *, void *);
static void	redis_sub_push_cb(struct redis_link *, redisReply *, void *);
static void	redis_watch_release(struct redis *, struct redis_watch *);
static void	redis_resync_owed(struct redis *);
static void	redis_flush(struct redis *);

static int	redis_set_auth(struct redis *, const char *, const char *);
static void	redis_describe(void *, struct eventlog_where *);
static int	redis_reconfigure(void *, const struct conf *, char **);

static int
redis_create_cmp(struct redis_op *a, struct redis_op *b)
{
	if (a->k != b->k)
		return (a->k < b->k ? -1 : 1);
	return (strcmp(a->sid, b->sid));
}
RB_GENERATE_STATIC(redis_creates, redis_op, centry, redis_create_cmp);

static int
redis_watch_cmp(struct redis_watch *a, struct redis_watch *b)
{
	return (strcmp(a->channel, b->channel));
}
RB_GENERATE_STATIC(redis_watches, redis_watch, entry, redis_watch_cmp);

/* Connections: connect, set-up, loss, backoff. */

/*
 * A failure is logged when its reason changes (a retry that fails again
 * the same way is quiet), as an error when the credentials or the ACL
 * were refused: that needs an operator.
 */
static void
redis_conn_set_state(struct redis_conn *c, enum redis_conn_state state,
    const char *why)
{
	struct redis		*r = c->r;
	enum redis_conn_state	 old = c->state;

	c->state = state;
	if (r->closing || r->parked || old == state)
		return;
	if (state == REDIS_CONN_READY) {
		log_info("eventlog=%s: %s connection ready (%s%s)", r->name,
		    c->name, c->server, r->tls ? ", TLS" : "");
		c->why[0] = '\0';
		c->refused = 0;
		c->backoff_ms = REDIS_BACKOFF_MIN_MS;
	} else if (state == REDIS_CONN_DOWN && old == REDIS_CONN_READY) {
		log_warn("eventlog=%s: %s connection lost (%s); reconnecting",
		    r->name, c->name, why);
		strlcpy(c->why, why, sizeof c->why);
	} else if (state == REDIS_CONN_DOWN && strcmp(c->why, why) != 0) {
		log_write(c->refused ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN,
		    "eventlog=%s: %s connection failed (%s); retrying every "
		    "%d ms at most", r->name, c->name, why,
		    REDIS_BACKOFF_MAX_MS);
		strlcpy(c->why, why, sizeof c->why);
	} else {
		log_debug("eventlog=%s: %s connection %s -> %s (%s)", r->name,
		    c->name, redis_conn_state_names[old],
		    redis_conn_state_names[state], why != NULL ? why : "");
	}
}

static void
redis_conn_timer(struct redis_conn *c, int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(c->timer_ev, &tv);
}

/* The connection is down: wait, then try again. */
static void
redis_conn_down(struct redis_conn *c, const char *why)
{
	redis_conn_set_state(c, REDIS_CONN_DOWN, why);
	if (c->r->closing || c->r->parked)
		return;
	if (c->now) {
		/* A failover named where to go: no reason to wait. */
		c->now = 0;
		redis_conn_timer(c, 0);
	} else {
		redis_conn_timer(c, c->backoff_ms);
		c->backoff_ms *= 2;
		if (c->backoff_ms > REDIS_BACKOFF_MAX_MS)
			c->backoff_ms = REDIS_BACKOFF_MAX_MS;
	}
	if (c->lost != NULL)
		c->lost(c);
}

/*
 * Link l is going away (it failed, or we close it): forget it. Anything
 * still calling back for an older link is ignored.
 */
static void
redis_conn_gone(struct redis_conn *c, const struct redis_link *l,
    const char *why)
{
	if (l == NULL || l != c->link)
		return;
	c->link = NULL;
	redis_conn_down(c, why);
}

static void
redis_conn_down_cb(struct redis_link *l, const char *why, void *arg)
{
	redis_conn_gone(arg, l, why);
}

/* A reply no command waits for, on the command connection: out of step. */
static void
redis_cmd_push_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_conn	*c = arg;

	log_warn("eventlog=%s: a reply nothing asked for on the %s "
	    "connection: %s", c->r->name, c->name, reply->type ==
	    REDIS_REPLY_ERROR ? reply->str : "(not an error)");
	redis_conn_drop(c, "a reply out of step");
}

static void	redis_cmd_flush_cb(struct redis_link *, void *);

static const struct redis_link_events redis_cmd_events = {
	.down = redis_conn_down_cb,
	.push = redis_cmd_push_cb,
	.flush = redis_cmd_flush_cb,
};

static const struct redis_link_events redis_sub_events = {
	.down = redis_conn_down_cb,
	.push = redis_sub_push_cb,
};

/* Opens c's link to the server known (the primary, with Sentinel). */
static void
redis_conn_open(struct redis_conn *c)
{
	struct redis		*r = c->r;
	struct redis_link_addr	 addr;
	char			*cause;

	memset(&addr, 0, sizeof addr);
	if (r->kind == CONF_REDIS_UNIX) {
		addr.path = r->path;
		strlcpy(c->server, r->path, sizeof c->server);
	} else {
		addr.host = r->host;
		addr.port = r->port;
		addr.tls = r->tls;
		snprintf(c->server, sizeof c->server, "%s%s%s:%d",
		    strchr(r->host, ':') != NULL ? "[" : "", r->host,
		    strchr(r->host, ':') != NULL ? "]" : "", r->port);
	}
	c->link = redis_link_open(r->base, &addr, r->tlsconf, c == &r->cmd ?
	    &redis_cmd_events : &redis_sub_events, c, &cause);
	if (c->link == NULL) {
		redis_conn_down(c, cause);
		free(cause);
		return;
	}
	redis_conn_timer(c, REDIS_TIMEOUT_MS);
	if (c->setup != NULL)
		c->setup(c);
}

static void	redis_conn_found_cb(const char *, int, const char *, void *);

/*
 * Connects c. Behind Sentinel, every attempt asks the sentinels first
 * which server is the primary: never straight back to the one that was
 * (a failover drops connections, and Redis kills its clients when a
 * sentinel changes its role).
 */
static void
redis_conn_connect(struct redis_conn *c)
{
	struct redis	*r = c->r;

	c->started = 1;
	redis_conn_set_state(c, REDIS_CONN_CONNECTING, NULL);
	if (r->sentinel == NULL) {
		redis_conn_open(c);
		return;
	}
	if (!c->asking) {
		c->asking = 1;
		redis_sentinel_ask(r->sentinel, redis_conn_found_cb, c);
	}
}

/* Drops a connection to a server that is not the primary any more. */
static void
redis_conn_moved(struct redis_conn *c, const char *server, const char *why)
{
	if (c->link == NULL || strcmp(c->server, server) == 0)
		return;
	c->now = 1;
	redis_conn_drop(c, why);
}

/*
 * The primary is (host, port), as the sentinels say: a change of
 * primary once one was known is a failover, and connections to the old
 * one go.
 */
static void
redis_primary_at(struct redis *r, const char *host, int port)
{
	char	why[384], server[300];

	if (r->host != NULL && strcmp(r->host, host) == 0 && r->port == port)
		return;
	if (r->host != NULL) {
		r->failovers++;
		log_warn("eventlog=%s: the primary is now %s:%d, was %s:%d "
		    "(failover %llu seen)", r->name, host, port, r->host,
		    r->port, (unsigned long long)r->failovers);
	} else
		log_info("eventlog=%s: the sentinels name %s:%d as the "
		    "primary", r->name, host, port);
	free(r->host);
	r->host = xstrdup(host);
	r->port = port;
	snprintf(server, sizeof server, "%s%s%s:%d", strchr(host, ':') !=
	    NULL ? "[" : "", host, strchr(host, ':') != NULL ? "]" : "", port);
	snprintf(why, sizeof why, "failover: the primary is now %s", server);
	redis_conn_moved(&r->cmd, server, why);
	redis_conn_moved(&r->sub, server, why);
}

static void
redis_conn_found_cb(const char *host, int port, const char *why, void *arg)
{
	struct redis_conn	*c = arg;
	struct redis		*r = c->r;

	c->asking = 0;
	if (host == NULL) {
		redis_conn_down(c, why);
		return;
	}
	redis_primary_at(r, host, port);
	redis_conn_open(c);
}

/* A sentinel saw the switch: go there now. */
static void
redis_switch_cb(const char *host, int port, void *arg)
{
	redis_primary_at(arg, host, port);
}

/* Backoff over (connect again), or connect deadline (give up). */
static void
redis_conn_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis_conn	*c = arg;

	switch (c->state) {
	case REDIS_CONN_DOWN:
		redis_conn_connect(c);
		break;
	case REDIS_CONN_CONNECTING:
		redis_conn_drop_waiting(c);
		break;
	default:
		break;
	}
}

/*
 * Drops the connection now: every command it had sent and not had
 * answered hears a NULL reply (at once, or after the callback we are in
 * returns).
 */
static void
redis_conn_drop(struct redis_conn *c, const char *why)
{
	struct redis_link	*l = c->link;

	if (l == NULL)
		return;
	redis_conn_gone(c, l, why);
	redis_link_close(l);
}

/* A connect or set-up that took too long: say what it waited for. */
static void
redis_conn_drop_waiting(struct redis_conn *c)
{
	char	why[256];

	if (c->link == NULL)
		return;
	snprintf(why, sizeof why, "no answer while connecting (waited for "
	    "%s)", redis_link_waiting_for(c->link));
	redis_conn_drop(c, why);
}

/*
 * Redis refused the connection's credentials or the ACL refused a
 * command: not a passing outage. Dropped, and tried again with the
 * backoff; a reload with other credentials tries again at once.
 */
static void
redis_conn_refuse(struct redis_conn *c, const char *why)
{
	c->refused = 1;
	redis_conn_drop(c, why);
}

/* AUTH [user] password, first on every connection. */
static int
redis_conn_auth(struct redis_conn *c, redis_link_reply_cb cb, void *arg)
{
	return (redis_link_auth(c->link, c->r->user, c->r->password, cb,
	    arg));
}

/*
 * AUTH's answer: 0 when the connection may go on. A password Redis does
 * not ask for is not an error (redis-cli takes it alike): said once.
 */
static int
redis_conn_auth_reply(struct redis_conn *c, redisReply *reply)
{
	struct redis	*r = c->r;
	char		 why[512], what[400];

	if (reply->type != REDIS_REPLY_ERROR)
		return (0);
	if (strstr(reply->str, "without any password configured") != NULL) {
		if (!r->nopass_logged)
			log_warn("eventlog=%s: Redis has no password, and "
			    "mcpd was given one: it is not needed", r->name);
		r->nopass_logged = 1;
		return (0);
	}
	if (redis_script_refusal(reply, what, sizeof what) ==
	    REDIS_REFUSED_NONE)
		snprintf(what, sizeof what, "%.200s", reply->str);
	snprintf(why, sizeof why, "AUTH refused: %s", what);
	redis_conn_refuse(c, why);
	return (-1);
}

/* Ops: build, send, answer, free. */

static struct redis_op *
redis_op_new(struct redis *r, enum redis_op_type type, const char *sid,
    uint64_t k)
{
	struct redis_op	*op;

	op = xcalloc(1, sizeof *op);
	op->r = r;
	op->type = type;
	op->sid = sid != NULL ? xstrdup(sid) : NULL;
	op->k = k;
	op->slot = -1;
	if (r->cluster != NULL && type >= REDIS_OP_STORE && sid != NULL) {
		op->slot = (int)redis_cluster_keyslot(sid, strlen(sid));
		op->ticket = r->hooks->ticket(r->cluster);
		r->owned[op->slot]++;
	}
	return (op);
}

/*
 * op is no longer r's (freed, or redirected): once r has no op of its
 * slot left, the cluster may send the slot's ops held elsewhere.
 */
static void
redis_op_disown(struct redis_op *op)
{
	struct redis	*r = op->r;

	if (op->slot < 0)
		return;
	if (--r->owned[op->slot] == 0)
		r->hooks->drained(r->cluster, r, (unsigned int)op->slot);
}

/* Held while an older node still has ops of its slot (a MOVED). */
static int
redis_op_gated(const struct redis_op *op)
{
	return (op->slot >= 0 && op->r->hooks->gated(op->r->cluster, op->r,
	    (unsigned int)op->slot));
}

/*
 * Puts op on list q in the order the cluster's ops were asked for (a
 * redirected op goes before those asked after it); on one Redis, at the
 * end.
 */
static void
redis_op_hold(struct redis_ops *q, struct redis_op *op)
{
	struct redis_op	*at;

	at = TAILQ_LAST(q, redis_ops);
	while (at != NULL && at->ticket > op->ticket)
		at = TAILQ_PREV(at, redis_ops, entry);
	if (at == NULL)
		TAILQ_INSERT_HEAD(q, op, entry);
	else
		TAILQ_INSERT_AFTER(q, at, op, entry);
	op->list = q;
}

/* Bytes kept before the arguments for "*argc\r\n". */
#define REDIS_CMD_HEAD	16

/* Room for n more bytes at the end of op's command. */
static char *
redis_op_room(struct redis_op *op, size_t n)
{
	size_t	need = op->buflen + n;

	if (need < n)
		fatalx("%s: argument too long", __func__);
	if (need > op->bufcap) {
		if (op->bufcap == 0)
			op->bufcap = 512;
		while (op->bufcap < need)
			op->bufcap *= 2;
		op->buf = xrealloc(op->buf, op->bufcap);
	}
	return (op->buf + op->buflen);
}

static int
redis_op_next_arg(struct redis_op *op)
{
	if (op->buflen == 0) {
		redis_op_room(op, REDIS_CMD_HEAD);
		op->buflen = REDIS_CMD_HEAD;
	}
	if (op->argc == op->argcap) {
		op->argcap = op->argcap == 0 ? 32 : op->argcap * 2;
		op->argoff = xreallocarray(op->argoff, (size_t)op->argcap,
		    sizeof *op->argoff);
		op->argvlen = xreallocarray(op->argvlen, (size_t)op->argcap,
		    sizeof *op->argvlen);
	}
	return (op->argc++);
}

/*
 * Starts argument i of len bytes ("$len\r\n"); returns where its bytes
 * go. redis_op_end_arg() closes it.
 */
static char *
redis_op_begin_arg(struct redis_op *op, int i, size_t len)
{
	char	 digits[CURSOR_BUFSIZE], *p;
	size_t	 n;

	n = cursor_format_seq(digits, sizeof digits, len);
	p = redis_op_room(op, 1 + n + 2 + len + 2);
	p[0] = '$';
	memcpy(p + 1, digits, n);
	memcpy(p + 1 + n, "\r\n", 2);
	op->argoff[i] = op->buflen + 1 + n + 2;
	op->argvlen[i] = len;
	return (p + 1 + n + 2);
}

static void
redis_op_end_arg(struct redis_op *op, int i)
{
	char	*p = op->buf + op->argoff[i] + op->argvlen[i];

	memcpy(p, "\r\n", 2);
	op->buflen = op->argoff[i] + op->argvlen[i] + 2;
}

static void
redis_op_arg(struct redis_op *op, const char *p, size_t len)
{
	int	i = redis_op_next_arg(op);

	memcpy(redis_op_begin_arg(op, i, len), p, len);
	redis_op_end_arg(op, i);
}

/* An argument made of two strings and a number ("" and 0: none). */
static void
redis_op_arg3(struct redis_op *op, const char *a, const char *b,
    const char *c, int with_k, uint64_t k)
{
	char	 digits[CURSOR_BUFSIZE], *p;
	size_t	 la = strlen(a), lb = strlen(b), lc = strlen(c), lk = 0;
	int	 i = redis_op_next_arg(op);

	if (with_k)
		lk = cursor_format_seq(digits, sizeof digits, k);
	p = redis_op_begin_arg(op, i, la + lb + lc + lk);
	memcpy(p, a, la);
	memcpy(p + la, b, lb);
	memcpy(p + la + lb, c, lc);
	memcpy(p + la + lb + lc, digits, lk);
	redis_op_end_arg(op, i);
}

static void __attribute__((format(printf, 2, 3)))
redis_op_argf(struct redis_op *op, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 len;

	va_start(ap, fmt);
	len = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (len < 0)
		fatalx("%s: out of memory", __func__);
	redis_op_arg(op, s, (size_t)len);
	free(s);
}

/* A number, printed without printf: many go into every op. */
static void
redis_op_argu(struct redis_op *op, uint64_t v)
{
	char	buf[CURSOR_BUFSIZE];

	redis_op_arg(op, buf, cursor_format_seq(buf, sizeof buf, v));
}

/* An entry's id, K-N: the XADD id is the SSE id. */
static void
redis_op_argid(struct redis_op *op, uint64_t k, uint64_t seq)
{
	char	buf[CURSOR_BUFSIZE];

	redis_op_arg(op, buf, cursor_format(buf, sizeof buf, k, seq));
}

/*
 * Replaces argument i (EVALSHA and its hash by EVAL and the script, after
 * NOSCRIPT): the command is written again around it.
 */
static void
redis_op_set_arg(struct redis_op *op, int i, const char *p, size_t len)
{
	struct redis_op	 copy;
	int		 j;

	memset(&copy, 0, sizeof copy);
	for (j = 0; j < op->argc; j++) {
		if (j == i)
			redis_op_arg(&copy, p, len);
		else
			redis_op_arg(&copy, op->buf + op->argoff[j],
			    op->argvlen[j]);
	}
	free(op->buf);
	free(op->argoff);
	free(op->argvlen);
	op->buf = copy.buf;
	op->buflen = copy.buflen;
	op->bufcap = copy.bufcap;
	op->argoff = copy.argoff;
	op->argvlen = copy.argvlen;
	op->argcap = copy.argcap;
}

/* The whole command: "*argc\r\n" written into the bytes kept for it. */
static const char *
redis_op_command(struct redis_op *op, size_t *len)
{
	char	 digits[CURSOR_BUFSIZE];
	size_t	 n;
	char	*p;

	n = cursor_format_seq(digits, sizeof digits, (uint64_t)op->argc);
	p = op->buf + REDIS_CMD_HEAD - (1 + n + 2);
	p[0] = '*';
	memcpy(p + 1, digits, n);
	memcpy(p + 1 + n, "\r\n", 2);
	*len = op->buflen - (size_t)(p - op->buf);
	return (p);
}

static const char *
redis_op_argp(const struct redis_op *op, int i)
{
	return (op->buf + op->argoff[i]);
}

/* Takes an allocated string as the next argument. */
static void
redis_op_take(struct redis_op *op, char *s)
{
	redis_op_arg(op, s, strlen(s));
	free(s);
}

static int
redis_op_is_user(const struct redis_op *op)
{
	return (op->type >= REDIS_OP_STORE);
}

/* op leaves its WAIT, and what it kept for it. */
static void
redis_wait_leave(struct redis_op *op)
{
	if (op->group == NULL)
		return;
	TAILQ_REMOVE(&op->group->ops, op, gentry);
	op->group = NULL;
	op->held_ok = 0;
	if (op->kept != NULL) {
		redis_script_result_clear(&op->res);
		freeReplyObject(op->kept);
		op->kept = NULL;
	}
}

/* op is answered by the WAIT that ends this turn on the connection. */
static void
redis_wait_join(struct redis_op *op)
{
	struct redis		*r = op->r;
	struct redis_wait	*g = r->group;

	redis_wait_leave(op);
	if (g == NULL) {
		g = xcalloc(1, sizeof *g);
		g->r = r;
		g->link = r->cmd.link;
		TAILQ_INIT(&g->ops);
		r->group = g;
	}
	TAILQ_INSERT_TAIL(&g->ops, op, gentry);
	op->group = g;
}

static void
redis_op_unlist(struct redis_op *op)
{
	struct redis	*r = op->r;

	if (op->list == NULL)
		return;
	TAILQ_REMOVE(op->list, op, entry);
	if (op->list == &r->inflight && redis_op_is_user(op))
		r->ninflight--;
	else if (op->list == &r->waitq) {
		r->nwaiting--;
		r->waiting_bytes -= op->buflen;
	}
	op->list = NULL;
}

static void
redis_op_free(struct redis_op *op)
{
	struct redis	*r = op->r;

	redis_wait_leave(op);
	if (op->type == REDIS_OP_AUTH && op->buf != NULL)
		explicit_bzero(op->buf, op->bufcap);

	if (op->type == REDIS_OP_CREATE &&
	    RB_FIND(redis_creates, &r->creates, op) == op)
		RB_REMOVE(redis_creates, &r->creates, op);
	redis_op_unlist(op);
	redis_op_disown(op);
	free(op->buf);
	free(op->argoff);
	free(op->argvlen);
	free(op->appends);
	free(op->sid);
	free(op);
}

/*
 * Every entry of an append hears what it would have heard alone: they
 * were committed together, so each is the head when it is answered, and
 * only the last one may end the stream. (No entry was trimmed by its own
 * append: an append takes at most stream_maxlen entries.) A create that
 * took appends is answered first, as the stream with entry 0 alone; if it
 * failed, its entries failed with it.
 */
static void
redis_append_answer(struct redis_op *op, enum eventlog_status status,
    const struct eventlog_info *info)
{
	struct redis_append	*a;
	struct eventlog_info	 each;
	size_t			 i;
	int			 data;

	if (op->type == REDIS_OP_CREATE) {
		if (status == EVENTLOG_OK && info != NULL) {
			memset(&each, 0, sizeof each);
			op->cb.append(status, &each, op->arg);
		} else
			op->cb.append(status, info, op->arg);
	}
	for (i = 0; i < op->nappends; i++) {
		a = &op->appends[i];
		if (status != EVENTLOG_OK || info == NULL) {
			a->cb(status, info, a->arg);
			continue;
		}
		each = *info;
		each.head = a->seq;
		each.ended = info->ended && i == op->nappends - 1;
		data = op->pairs_arg + 2 * (int)i + 1;
		each.data = redis_op_argp(op, data);
		each.len = op->argvlen[data];
		a->cb(status, &each, a->arg);
	}
}

static void	redis_op_dispatch(struct redis_op *);
static void	redis_op_reject(struct redis_op *, enum eventlog_status);
static int	redis_op_retrying(const struct redis_op *);
static void	redis_retry_cb(evutil_socket_t, short, void *);

/*
 * An op on stream K while K's create is in flight, not in the create's
 * own script call: sent alone, it could land in a stream K the create is
 * refused for (K taken) and succeed there. It waits for the answer.
 */
static int
redis_op_awaits(struct redis *r, struct redis_op *op)
{
	struct redis_op	*create, find;

	if ((op->type != REDIS_OP_APPEND && op->type != REDIS_OP_END) ||
	    RB_EMPTY(&r->creates))
		return (0);
	find.k = op->k;
	find.sid = op->sid;
	create = RB_FIND(redis_creates, &r->creates, &find);
	return (create != NULL && create != op);
}

/*
 * Sends what waits, in order, up to the next op that still awaits a
 * create: the held ops keep their place in the pipeline (a delete asked
 * for after an append does not overtake it).
 */
static void
redis_release(struct redis *r)
{
	struct redis_op	*op;

	while ((op = TAILQ_FIRST(&r->held)) != NULL) {
		if (!op->refused && redis_op_awaits(r, op))
			return;
		redis_op_unlist(op);
		if (op->refused)
			redis_op_reject(op, op->fail);
		else
			redis_op_dispatch(op);
	}
}

/* The create of stream K is answered: what waited for it goes, or fails. */
static void
redis_create_answered(struct redis_op *create, enum eventlog_status status)
{
	struct redis	*r = create->r;
	struct redis_op	*op;

	if (RB_FIND(redis_creates, &r->creates, create) != create)
		return;
	RB_REMOVE(redis_creates, &r->creates, create);
	if (status != EVENTLOG_OK) {
		TAILQ_FOREACH(op, &r->held, entry) {
			if (op->k == create->k &&
			    strcmp(op->sid, create->sid) == 0) {
				op->refused = 1;
				op->fail = status;
			}
		}
	}
	redis_release(r);
}

/* A task's value is "REV RECORD" (redis_script.c): split it. */
static void
redis_task_answer(struct redis_op *op, enum eventlog_status status,
    const char *data, size_t len)
{
	uint64_t	rev = 0;
	size_t		i = 0;

	if (status == EVENTLOG_OK) {
		while (i < len && data[i] >= '0' && data[i] <= '9' &&
		    rev < UINT64_MAX / 10)
			rev = rev * 10 + (uint64_t)(data[i++] - '0');
		if (i == 0 || i >= len || data[i] != ' ' || rev == 0) {
			log_limited(LOG_LEVEL_WARN, "redis-reply", "eventlog=%s: "
			    "a task's key holds no task record", op->r->name);
			status = EVENTLOG_UNAVAILABLE;
		}
	}
	if (status != EVENTLOG_OK)
		op->cb.task(status, 0, NULL, 0, op->arg);
	else
		op->cb.task(status, rev, data + i + 1, len - i - 1, op->arg);
}

/* Runs the caller's callback, once. */
static void
redis_op_answer(struct redis_op *op, enum eventlog_status status,
    const struct eventlog_info *info, const struct eventlog_entry *entries,
    size_t n, const char *data, size_t len)
{
	if (op->answered)
		return;
	op->answered = 1;
	switch (op->type) {
	case REDIS_OP_AUTH:
	case REDIS_OP_SELECT:
	case REDIS_OP_SCRIPT_LOAD:
	case REDIS_OP_INFO:
	case REDIS_OP_CHECK:
	case REDIS_OP_LAYOUT:
		/* The cluster's check, on a connection lost. */
		if (op->cb.layout != NULL)
			op->cb.layout(op->r, -1, "connection lost", op->arg);
		break;
	case REDIS_OP_STORE:
	case REDIS_OP_DELETE:
	case REDIS_OP_NOTE_SET:
	case REDIS_OP_PUBLISH:
	case REDIS_OP_TASK_PUT:
		op->cb.done(status, op->arg);
		break;
	case REDIS_OP_LOAD:
		op->cb.load(status, data, len, op->arg);
		break;
	case REDIS_OP_TASK_GET:
		redis_task_answer(op, status, data, len);
		break;
	case REDIS_OP_KEYRING:
		/* A ring is answered by redis_keyring_reply. */
		op->cb.keyring(status, NULL, op->arg);
		break;
	case REDIS_OP_TAKE:
		/* What was taken is answered by redis_limit_reply. */
		op->cb.take(status, NULL, op->arg);
		break;
	case REDIS_OP_SLOT:
		op->cb.slot(status, 0, op->arg);
		break;
	case REDIS_OP_CREATE:
		redis_create_answered(op, status);
		/* FALLTHROUGH */
	case REDIS_OP_APPEND:
		redis_append_answer(op, status, info);
		break;
	case REDIS_OP_END:
		op->cb.append(status, info, op->arg);
		break;
	case REDIS_OP_READ:
		op->cb.read(status, entries, n, info, op->arg);
		break;
	}
	/* What it kept for its answer (a read's reply) goes now. */
	redis_wait_leave(op);
}

static void
redis_op_fail(struct redis_op *op)
{
	redis_op_answer(op, op->r->closing ? EVENTLOG_CANCELLED :
	    EVENTLOG_UNAVAILABLE, NULL, NULL, 0, NULL, 0);
}

/* Answers op on the next loop turn, without sending it. */
static void
redis_op_reject(struct redis_op *op, enum eventlog_status status)
{
	struct redis	*r = op->r;

	redis_op_unlist(op);
	op->fail = status;
	if (TAILQ_EMPTY(&r->failq) && !r->closing)
		event_active(r->fail_ev, EV_TIMEOUT, 0);
	TAILQ_INSERT_TAIL(&r->failq, op, entry);
	op->list = &r->failq;
}

static void
redis_fail_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis		*r = arg;
	struct redis_ops	 batch;
	struct redis_op		*op;

	TAILQ_INIT(&batch);
	TAILQ_CONCAT(&batch, &r->failq, entry);
	TAILQ_FOREACH(op, &batch, entry)
		op->list = &batch;
	while ((op = TAILQ_FIRST(&batch)) != NULL) {
		redis_op_unlist(op);
		redis_op_answer(op, op->fail, NULL, NULL, 0, NULL, 0);
		redis_op_free(op);
	}
}

/*
 * The oldest op in flight is due REDIS_TIMEOUT_MS after it was sent or
 * after the last reply, whichever is later: replies come in order, so a
 * connection that keeps answering is slow, not stuck, and a long pipeline
 * is not failed for being long.
 */
static uint64_t
redis_deadline_start(struct redis *r, struct redis_op *op)
{
	return (op->sent_ms > r->progress_ms ? op->sent_ms : r->progress_ms);
}

/* Outages: waited out for the grace, then failed. */

static int	redis_op_send(struct redis_op *, int);
static void	redis_deadline_arm(struct redis *);
static void	redis_wait_discard(struct redis *);
static void	redis_op_release(struct redis_op *);
static int	redis_reply_refused(struct redis_op *, struct redis_link *,
		    redisReply *);
static int	redis_reply_redirected(struct redis_op *, redisReply *);
static int	redis_reply_tryagain(struct redis_op *, redisReply *);

/* Whether an outage is waited out now rather than failed. */
static int
redis_grace_open(const struct redis *r)
{
	return (r->grace_ms > 0 && r->ever_ready && !r->expired &&
	    !r->closing);
}

/* op waits for Redis to answer again, at the end of the queue. */
static void
redis_op_wait(struct redis_op *op)
{
	struct redis	*r = op->r;

	if (r->ninflight + r->nwaiting >= REDIS_MAX_INFLIGHT ||
	    r->waiting_bytes + op->buflen > REDIS_WAIT_BYTES) {
		if (!r->waitq_full)
			log_warn("eventlog=%s: %zu operations (%zu bytes) wait "
			    "for Redis already; refusing more", r->name,
			    r->nwaiting, r->waiting_bytes);
		r->waitq_full = 1;
		redis_op_reject(op, EVENTLOG_UNAVAILABLE);
		return;
	}
	TAILQ_INSERT_TAIL(&r->waitq, op, entry);
	op->list = &r->waitq;
	r->nwaiting++;
	r->waiting_bytes += op->buflen;
}

/* Redis stopped answering at since: wait for it, up to the grace. */
static void
redis_outage_begin(struct redis *r, uint64_t since, const char *why)
{
	uint64_t	now = clock_now_ms(), end, due;
	struct timeval	tv;

	if (r->outage_ms != 0)
		return;
	r->outage_ms = since > 0 ? since : 1;
	end = since + r->grace_ms;
	due = end > now ? end - now : 0;
	tv.tv_sec = (time_t)(due / 1000);
	tv.tv_usec = (suseconds_t)(due % 1000) * 1000;
	evtimer_add(r->grace_ev, &tv);
	log_warn("eventlog=%s: %s; waiting up to %llu s for it "
	    "(eventlog_outage_grace): operations wait and calls pause",
	    r->name, why, (unsigned long long)(r->grace_ms / 1000));
}

/*
 * Redis answers (again): the outage, if any, is over, and what waited
 * goes, in order, behind what is in flight.
 */
static void
redis_outage_end(struct redis *r)
{
	struct redis_op	*op;
	uint64_t	 now = clock_now_ms();

	if (r->outage_ms == 0)
		return;
	r->steady_ms = now;
	log_info("eventlog=%s: Redis answers again after %llu ms; sending "
	    "the %zu operations that waited", r->name,
	    (unsigned long long)(now - r->outage_ms), r->nwaiting);
	r->outage_ms = 0;
	r->stalled = 0;
	r->behind = 0;
	r->expired = 0;
	r->waitq_full = 0;
	evtimer_del(r->grace_ev);
	while ((op = TAILQ_FIRST(&r->waitq)) != NULL) {
		redis_op_unlist(op);
		if (redis_op_send(op, 0) != 0)
			redis_op_reject(op, EVENTLOG_UNAVAILABLE);
	}
	/* What a stall left in flight is due again from now on. */
	redis_deadline_arm(r);
}

/*
 * The grace is over and Redis has not answered: what waits and what is in
 * flight fails, and so does everything until Redis answers again.
 */
static void
redis_grace_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis	*r = arg;
	struct redis_op	*op;

	r->expired = 1;
	log_warn("eventlog=%s: %s for %llu ms, past eventlog_outage_grace "
	    "(%llu s): failing %zu operations; operations fail at once until "
	    "Redis answers", r->name, r->behind ? r->behind_why : "no answer",
	    (unsigned long long)(clock_now_ms() - r->outage_ms),
	    (unsigned long long)(r->grace_ms / 1000),
	    r->nwaiting + r->ninflight);
	while ((op = TAILQ_FIRST(&r->waitq)) != NULL)
		redis_op_reject(op, EVENTLOG_UNAVAILABLE);
	if (r->stalled) {
		r->stalled = 0;
		redis_conn_drop(&r->cmd, "no reply within "
		    "eventlog_outage_grace");
	} else if (r->behind) {
		/*
		 * What waits for the replicas fails with the connection (the
		 * primary has it: a later read may return it once they do),
		 * and a new connection starts over.
		 */
		r->behind = 0;
		redis_conn_drop(&r->cmd, "replicas did not acknowledge "
		    "within eventlog_outage_grace");
	}
}

/* A reply came on the command connection: a stall, if any, is over. */
static void
redis_progress(struct redis *r)
{
	r->progress_ms = clock_now_ms();
	if (r->stalled)
		redis_outage_end(r);
}

/*
 * The command connection is down (lost, or an attempt failed). Within
 * the grace an outage begins, and what it had sent and not had answered
 * goes back to the front of the waiting queue, in the order it was sent,
 * to be sent again once a connection is set up: its replies, if Redis
 * sent them, are lost, and the retry finds what it did (redis_script.c).
 */
static void
redis_cmd_lost(struct redis_conn *c)
{
	struct redis	*r = c->r;
	struct redis_op	*op, *prev;

	redis_wait_discard(r);
	if (r->cluster != NULL)
		r->hooks->changed(r->cluster, "a node's connection lost");
	if (!redis_grace_open(r))
		return;
	r->stalled = 0;
	r->behind = 0;
	redis_outage_begin(r, clock_now_ms(), "connection lost");
	for (op = TAILQ_LAST(&r->inflight, redis_ops); op != NULL; op = prev) {
		prev = TAILQ_PREV(op, redis_ops, entry);
		if (!redis_op_is_user(op) || op->answered)
			continue;
		redis_op_unlist(op);
		redis_wait_leave(op);
		op->link = NULL;
		if (op->again_arg > 0)
			op->buf[op->argoff[op->again_arg]] = '1';
		TAILQ_INSERT_HEAD(&r->waitq, op, entry);
		op->list = &r->waitq;
		r->nwaiting++;
		r->waiting_bytes += op->buflen;
	}
	/* Back soon after Redis is: clients are waiting. */
	if (c->backoff_ms > REDIS_BACKOFF_GRACE_MS)
		c->backoff_ms = REDIS_BACKOFF_GRACE_MS;
}

static void
redis_deadline_arm(struct redis *r)
{
	struct redis_op	*op = TAILQ_FIRST(&r->inflight);
	uint64_t	 now, due;
	struct timeval	 tv;

	if (op == NULL || evtimer_pending(r->deadline_ev, NULL))
		return;
	now = clock_now_ms();
	r->deadline_ms = redis_deadline_start(r, op) + REDIS_TIMEOUT_MS;
	due = r->deadline_ms > now ? r->deadline_ms - now : 0;
	tv.tv_sec = (time_t)(due / 1000);
	tv.tv_usec = (suseconds_t)(due % 1000) * 1000;
	evtimer_add(r->deadline_ev, &tv);
}

/* The oldest command in flight has had no answer for too long. */
static void
redis_deadline_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis	*r = arg;
	struct redis_op	*op = TAILQ_FIRST(&r->inflight);
	uint64_t	 now = clock_now_ms();

	if (op == NULL || r->stalled)
		return;
	if (now > r->deadline_ms + REDIS_TIMEOUT_MS / 4) {
		/*
		 * We fire late: this process did not run its loop (a long
		 * callback, a stopped process), so replies could not be read.
		 * That is not Redis's fault: give it a full period again.
		 */
		r->progress_ms = now;
	}
	if (now - redis_deadline_start(r, op) < REDIS_TIMEOUT_MS) {
		redis_deadline_arm(r);
		return;
	}
	if (r->cmd.state != REDIS_CONN_READY) {
		/* Set-up unanswered: a failed attempt, logged once. */
		redis_conn_drop_waiting(&r->cmd);
		return;
	}
	if (redis_grace_open(r)) {
		/*
		 * Redis may only be paused (CLIENT PAUSE, DEBUG SLEEP, a slow
		 * fork): the connection stays, its replies come in order.
		 */
		r->stalled = 1;
		redis_outage_begin(r, redis_deadline_start(r, op), "no reply "
		    "in 2000 ms");
		return;
	}
	log_warn("eventlog=%s: no reply in %d ms; failing %zu operations "
	    "in flight", r->name, REDIS_TIMEOUT_MS, r->ninflight);
	redis_conn_drop(&r->cmd, "reply timeout");
}

/*
 * Sends op on the command connection: EVALSHA (or EVAL, with the script's
 * text, when retrying after NOSCRIPT). With commit replicas:N, a commit or
 * a read is answered by the WAIT that ends the turn (redis_cmd_flush_cb).
 */
static int
redis_op_send(struct redis_op *op, int eval)
{
	struct redis	*r = op->r;
	const char	*body = redis_script_source(r->sharded);
	const char	*cmd;
	size_t		 len;

	if (r->cmd.link == NULL)
		return (-1);
	if (op->script && eval) {
		redis_op_set_arg(op, 0, "EVAL", 4);
		redis_op_set_arg(op, 1, body, strlen(body));
	}
	/* ASK: this command, once, at the node importing the slot. */
	if (op->asking && redis_link_command(r->cmd.link, redis_asking_cb,
	    NULL, "ASKING", NULL) != 0)
		return (-1);
	op->asking = 0;
	cmd = redis_op_command(op, &len);
	if (redis_link_send(r->cmd.link, cmd, len, redis_reply_cb, op) != 0)
		return (-1);
	op->replies++;
	if (r->replicas > 0 && (op->wait || op->type == REDIS_OP_READ))
		redis_wait_join(op);

	redis_op_unlist(op);
	op->link = r->cmd.link;
	op->sent_ms = clock_now_ms();
	TAILQ_INSERT_TAIL(&r->inflight, op, entry);
	op->list = &r->inflight;
	if (redis_op_is_user(op))
		r->ninflight++;
	redis_deadline_arm(r);
	return (0);
}

/*
 * ASKING's answer: OK, or an error the command after it hears too (it
 * then fails or is redirected as any other).
 */
static void
redis_asking_cb(struct redis_link *l, redisReply *reply, void *arg)
{
}

static size_t
redis_wait_count(const struct redis_wait *g)
{
	const struct redis_op	*op;
	size_t			 n = 0;

	TAILQ_FOREACH(op, &g->ops, gentry)
		n++;
	return (n);
}

/* The turn's WAIT was never sent (its connection went): forget it. */
static void
redis_wait_discard(struct redis *r)
{
	struct redis_wait	*g = r->group;
	struct redis_op		*op;

	if (g == NULL)
		return;
	r->group = NULL;
	while ((op = TAILQ_FIRST(&g->ops)) != NULL)
		redis_wait_leave(op);
	free(g);
}

static int
redis_wait_send(struct redis_wait *g)
{
	char	n[16], ms[16];

	snprintf(n, sizeof n, "%d", g->r->replicas);
	snprintf(ms, sizeof ms, "%d", REDIS_WAIT_MS);
	return (redis_link_command(g->link, redis_wait_cb, g, "WAIT", n, ms,
	    NULL));
}

/*
 * The end of the turn on the command connection: the append still open
 * goes, then one WAIT for every commit and read sent this turn.
 */
static void
redis_cmd_flush_cb(struct redis_link *l, void *arg)
{
	struct redis_conn	*c = arg;
	struct redis		*r = c->r;
	struct redis_wait	*g;
	struct redis_op		*op;

	if (l != c->link)
		return;
	redis_flush(r);
	if ((g = r->group) == NULL)
		return;
	r->group = NULL;
	if (!TAILQ_EMPTY(&g->ops) && redis_wait_send(g) == 0)
		return;
	while ((op = TAILQ_FIRST(&g->ops)) != NULL) {
		redis_op_answer(op, EVENTLOG_UNAVAILABLE, NULL, NULL, 0, NULL,
		    0);
		redis_op_release(op);
	}
	free(g);
}

/*
 * A caller's op: sent now if the connection is ready, else refused. An
 * append still taking entries goes first: ops reach Redis in the order
 * they were asked for.
 */
static void
redis_op_submit(struct redis_op *op)
{
	struct redis	*r = op->r;

	redis_flush(r);
	if (redis_op_gated(op)) {
		/* Its slot moved: it waits, apart, not holding others up. */
		redis_op_hold(&r->gatedq, op);
		return;
	}
	if (!TAILQ_EMPTY(&r->held) || redis_op_awaits(r, op)) {
		redis_op_hold(&r->held, op);
		return;
	}
	redis_op_dispatch(op);
}

/* Sends op now, or refuses it. */
static void
redis_op_dispatch(struct redis_op *op)
{
	struct redis	*r = op->r;

	if (r->closing) {
		redis_op_reject(op, EVENTLOG_CANCELLED);
		return;
	}
	if (redis_op_retrying(op)) {
		/* Its slot waits out a -TRYAGAIN: behind what did. */
		redis_op_hold(&r->retryq, op);
		return;
	}
	if (r->cmd.state != REDIS_CONN_READY || r->outage_ms != 0 ||
	    !TAILQ_EMPTY(&r->waitq)) {
		if (redis_grace_open(r))
			redis_op_wait(op);
		else
			redis_op_reject(op, EVENTLOG_UNAVAILABLE);
		return;
	}
	if (r->ninflight >= REDIS_MAX_INFLIGHT) {
		if (!r->saturated)
			log_warn("eventlog=%s: %d operations in flight; "
			    "refusing more", r->name, REDIS_MAX_INFLIGHT);
		r->saturated = 1;
		redis_op_reject(op, EVENTLOG_UNAVAILABLE);
		return;
	}
	r->saturated = 0;
	if (redis_op_send(op, 0) != 0)
		redis_op_reject(op, EVENTLOG_UNAVAILABLE);
}

/*
 * Frees op once the link owes it nothing more and no WAIT is to answer
 * it, unless it goes again.
 */
static void
redis_op_release(struct redis_op *op)
{
	if (op->replies == 0 && op->group == NULL &&
	    op->list != &op->r->waitq)
		redis_op_free(op);
}

/* Its connection is gone: op fails, unless it was taken back to wait. */
static void
redis_op_lost(struct redis_op *op, struct redis_link *l)
{
	redis_conn_gone(&op->r->cmd, l, "connection lost");
	if (op->list != &op->r->waitq)
		redis_op_fail(op);
}

/*
 * The command connection's set-up, issued before it is even connected:
 * AUTH, SELECT, INFO and SCRIPT LOAD in one write; once the script is
 * loaded, its check op says whether the ACL lets this user run every
 * command mcpd sends. The connection is ready on that answer. INFO goes
 * before the script: Redis 7 answers a bulk string over 16 KB from a
 * client not yet authenticated with a protocol error, not NOAUTH, and the
 * script is longer than that, so a server that wants a password must say
 * so to a short command first.
 */
static void
redis_cmd_setup(struct redis_conn *c)
{
	struct redis	*r = c->r;
	struct redis_op	*op;

	if (r->password != NULL) {
		op = redis_op_new(r, REDIS_OP_AUTH, NULL, 0);
		redis_op_arg(op, "AUTH", 4);
		if (r->user != NULL)
			redis_op_arg(op, r->user, strlen(r->user));
		redis_op_arg(op, r->password, strlen(r->password));
		if (redis_op_send(op, 0) != 0)
			redis_op_free(op);
	}
	if (r->db != 0) {
		op = redis_op_new(r, REDIS_OP_SELECT, NULL, 0);
		redis_op_arg(op, "SELECT", 6);
		redis_op_argf(op, "%d", r->db);
		if (redis_op_send(op, 0) != 0)
			redis_op_free(op);
	}
	op = redis_op_new(r, REDIS_OP_INFO, NULL, 0);
	redis_op_arg(op, "INFO", 4);
	if (redis_op_send(op, 0) != 0)
		redis_op_free(op);
	op = redis_op_new(r, REDIS_OP_SCRIPT_LOAD, NULL, 0);
	redis_op_arg(op, "SCRIPT", 6);
	redis_op_arg(op, "LOAD", 4);
	redis_op_arg(op, redis_script_source(r->sharded),
	    strlen(redis_script_source(r->sharded)));
	if (redis_op_send(op, 0) != 0)
		redis_op_free(op);
}

static struct redis_op	*redis_script_op_keys(struct redis *,
			    enum redis_op_type, const char *, const char *,
			    uint64_t, int, int);
static void		 redis_cmd_ready(struct redis *);
static void		 redis_node_layout_reply(struct redis_op *,
			    redisReply *);

/* The layout op: marks the store if nobody did, answers its layout. */
static struct redis_op *
redis_layout_op(struct redis *r)
{
	struct redis_op	*op;
	char		 layout[16];

	op = redis_op_new(r, REDIS_OP_LAYOUT, "layout", 0);
	op->script = 1;
	redis_op_arg(op, "EVALSHA", 7);
	redis_op_arg(op, r->sha, strlen(r->sha));
	redis_op_arg(op, "1", 1);
	redis_op_arg(op, REDIS_SCRIPT_LAYOUT_KEY,
	    strlen(REDIS_SCRIPT_LAYOUT_KEY));
	redis_op_arg(op, "layout", 6);
	snprintf(layout, sizeof layout, "%d", REDIS_SCRIPT_LAYOUT);
	redis_op_arg(op, layout, strlen(layout));
	return (op);
}

/*
 * The script is loaded: may this user run what mcpd sends, and is the
 * store in the layout this mcpd reads (marked now if nobody did)?
 */
static void
redis_cmd_check(struct redis *r)
{
	struct redis_op	*op;

	/*
	 * A cluster's node runs it whatever its slots: it declares no keys
	 * (the names it checks are in ARGV). The cluster checks the layout
	 * once, on the node of its mark's slot.
	 */
	op = redis_script_op_keys(r, REDIS_OP_CHECK, "check", "check", 1, 1,
	    r->cluster == NULL);
	redis_op_arg(op, r->replicas > 0 ? "1" : "0", 1);
	if (redis_op_send(op, 0) != 0)
		redis_op_free(op);
	if (r->cluster != NULL)
		return;
	op = redis_layout_op(r);
	if (redis_op_send(op, 0) != 0)
		redis_op_free(op);
}

/*
 * The cluster's check of the layout, on the node of its mark's slot
 * once it is ready: -1 if it cannot be sent now. cb hears the layout,
 * or -1 and why.
 */
int
redis_node_layout(struct redis *r, redis_node_layout_cb cb, void *arg)
{
	struct redis_op	*op;

	if (r->cmd.state != REDIS_CONN_READY)
		return (-1);
	op = redis_layout_op(r);
	op->cb.layout = cb;
	op->arg = arg;
	if (redis_op_send(op, 0) != 0) {
		redis_op_free(op);
		return (-1);
	}
	return (0);
}

static void
redis_node_layout_reply(struct redis_op *op, redisReply *reply)
{
	char	why[256];
	int	layout;

	if (redis_script_layout(reply, &layout) == 0)
		op->cb.layout(op->r, layout, NULL, op->arg);
	else {
		snprintf(why, sizeof why, "%.200s", reply->type ==
		    REDIS_REPLY_ERROR ? reply->str : "an unexpected answer");
		op->cb.layout(op->r, -1, why, op->arg);
	}
}

/*
 * A reconnection may reach a server that restarted: with its data (from
 * AOF or RDB), or empty, in which case every session and stream it held
 * is gone. The streams that were being written fail on their next append
 * and say what they lost; this says why, once. Only the primary will do:
 * a replica refuses every write.
 */
static void
redis_info_reply(struct redis *r, redisReply *reply)
{
	struct redis_info	info;
	char			why[384];

	if (redis_script_info(reply, r->db, &info) != 0)
		return;		/* INFO renamed or disabled: nothing to say */
	strlcpy(r->role, info.role, sizeof r->role);
	if (info.cluster != -1 && info.cluster != (r->cluster != NULL)) {
		redis_conn_refuse(&r->cmd, info.cluster ? "this Redis is a "
		    "node of a Redis Cluster: use eventlog "
		    "redis-cluster://H1:P1,H2:P2,..." : "this Redis is not in "
		    "cluster mode (cluster_enabled no): use eventlog "
		    "redis://");
		return;
	}
	if (info.role[0] != '\0' && strcmp(info.role, "master") != 0) {
		snprintf(why, sizeof why, "%s is a replica (role %s), not the "
		    "primary%s", r->cmd.server, info.role, r->sentinel != NULL ?
		    "; asking the sentinels again" : "");
		redis_conn_drop(&r->cmd, why);
		return;
	}
	if (info.policy[0] != '\0' && strcmp(info.policy, "noeviction") !=
	    0 && !r->policy_warned) {
		log_warn("eventlog=%s: maxmemory-policy is %s, not noeviction: "
		    "Redis may evict committed events", r->name, info.policy);
		r->policy_warned = 1;
	}
	if (r->run_id[0] != '\0' && strcmp(r->run_id, info.run_id) != 0 &&
	    r->failovers == r->run_failovers) {
		if (info.keys == 0)
			log_error("eventlog=%s: Redis restarted empty (run "
			    "%s, was %s): every session and stream it held "
			    "is lost; their calls end and their clients are "
			    "told", r->name, info.run_id, r->run_id);
		else
			log_warn("eventlog=%s: Redis restarted (run %s, was "
			    "%s) with %lld keys in database %d", r->name,
			    info.run_id, r->run_id, info.keys, r->db);
	}
	r->run_failovers = r->failovers;
	strlcpy(r->run_id, info.run_id, sizeof r->run_id);
}

/* A set-up command was refused: the connection goes, saying why. */
static void
redis_setup_refused_conn(struct redis_conn *c, const char *cmd,
    redisReply *reply)
{
	char				 why[640], what[512];
	enum redis_script_refusal	 kind;

	kind = redis_script_refusal(reply, what, sizeof what);
	if (kind == REDIS_REFUSED_NONE)
		snprintf(what, sizeof what, "%.200s", reply->type ==
		    REDIS_REPLY_ERROR ? reply->str : "an unexpected answer");
	snprintf(why, sizeof why, "%s refused: %s", cmd, what);
	if (kind == REDIS_REFUSED_AUTH || kind == REDIS_REFUSED_ACL)
		redis_conn_refuse(c, why);
	else
		redis_conn_drop(c, why);
}

static void
redis_setup_refused(struct redis_op *op, const char *cmd, redisReply *reply)
{
	redis_setup_refused_conn(&op->r->cmd, cmd, reply);
}

/* The check op's answer: {'ok'}, or {'refused', COMMAND}. */
static void
redis_check_reply(struct redis_op *op, redisReply *reply)
{
	struct redis	*r = op->r;
	char		 why[384];

	if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
	    reply->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(reply->element[0]->str, "refused") == 0 &&
	    reply->element[1]->type == REDIS_REPLY_STRING) {
		snprintf(why, sizeof why, "the ACL forbids %.40s to this user "
		    "(the rules mcpd needs are in docs/deployment.md)",
		    reply->element[1]->str);
		redis_conn_refuse(&r->cmd, why);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(reply->element[0]->str, "ok") != 0)
		redis_setup_refused(op, "EVALSHA", reply);
	else if (r->cluster != NULL)
		redis_cmd_ready(r);
}

/*
 * The layout op's answer, the last of the set-up: the connection is
 * ready if the store is in this mcpd's layout. Another layout is an
 * operator's matter (instances of two versions on one store), refused
 * like credentials, with the backoff.
 */
static void
redis_layout_reply(struct redis_op *op, redisReply *reply)
{
	struct redis	*r = op->r;
	char		 why[384];
	int		 layout;

	if (redis_script_layout(reply, &layout) != 0) {
		redis_setup_refused(op, "EVALSHA (layout)", reply);
		return;
	}
	if (layout != REDIS_SCRIPT_LAYOUT) {
		snprintf(why, sizeof why, "the store is in layout %d (%s), "
		    "this mcpd reads layout %d: run one version of mcpd on "
		    "it (docs/protocol.md, Redis layout)", layout,
		    REDIS_SCRIPT_LAYOUT_KEY, REDIS_SCRIPT_LAYOUT);
		redis_conn_refuse(&r->cmd, why);
		return;
	}
	redis_cmd_ready(r);
}

/* The command connection's set-up is done: ready. */
static void
redis_cmd_ready(struct redis *r)
{
	r->connects++;
	redis_conn_set_state(&r->cmd, REDIS_CONN_READY, NULL);
	/*
	 * Steady since now, after a lost connection (waited out or not); a
	 * first connection ends no outage anybody waited in.
	 */
	r->steady_ms = r->ever_ready ? clock_now_ms() : 1;
	r->ever_ready = 1;
	redis_outage_end(r);
	redis_resync_owed(r);
	/* After what waited out the outage: it goes first. */
	if (r->available_cb != NULL)
		r->available_cb(r->available_arg);
	if (r->cluster != NULL)
		r->hooks->ready(r->cluster, r);
}

static void
redis_setup_reply(struct redis_op *op, redisReply *reply)
{
	struct redis	*r = op->r;
	char		 why[256];

	op->answered = 1;
	switch (op->type) {
	case REDIS_OP_AUTH:
		redis_conn_auth_reply(&r->cmd, reply);
		break;
	case REDIS_OP_SELECT:
		if (reply->type == REDIS_REPLY_STATUS)
			break;
		/* Never let ops reach database 0 by mistake: drop it. */
		snprintf(why, sizeof why, "SELECT %d", r->db);
		redis_setup_refused(op, why, reply);
		break;
	case REDIS_OP_SCRIPT_LOAD:
		if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
			redis_setup_refused(op, "SCRIPT LOAD", reply);
			break;
		}
		memcpy(r->sha, reply->str, 40);
		r->sha[40] = '\0';
		r->noscript_logged = 0;
		redis_cmd_check(r);
		break;
	case REDIS_OP_INFO:
		if (reply->type == REDIS_REPLY_ERROR &&
		    redis_script_refusal(reply, why, sizeof why) !=
		    REDIS_REFUSED_NONE)
			redis_setup_refused(op, "INFO", reply);
		else
			redis_info_reply(r, reply);
		break;
	case REDIS_OP_CHECK:
		redis_check_reply(op, reply);
		break;
	case REDIS_OP_LAYOUT:
		if (op->cb.layout != NULL)
			redis_node_layout_reply(op, reply);
		else
			redis_layout_reply(op, reply);
		break;
	default:
		break;
	}
}

static void
redis_load_reply(struct redis_op *op, redisReply *reply)
{
	if (reply->type == REDIS_REPLY_STRING)
		redis_op_answer(op, EVENTLOG_OK, NULL, NULL, 0, reply->str,
		    reply->len);
	else if (reply->type == REDIS_REPLY_NIL)
		redis_op_answer(op, EVENTLOG_NOT_FOUND, NULL, NULL, 0, NULL,
		    0);
	else {
		log_limited(LOG_LEVEL_WARN, "redis-reply", "eventlog=%s: "
		    "session=%s load: %s", op->r->name, op->sid,
		    reply->type == REDIS_REPLY_ERROR ? reply->str :
		    "unexpected reply");
		redis_op_answer(op, EVENTLOG_UNAVAILABLE, NULL, NULL, 0, NULL,
		    0);
	}
}

static void
redis_keyring_reply(struct redis_op *op, redisReply *reply)
{
	struct eventlog_keyring	ring;

	if (redis_script_keyring(reply, &ring) != 0) {
		log_limited(LOG_LEVEL_WARN, "redis-reply", "eventlog=%s: "
		    "keyring: %s", op->r->name,
		    reply->type == REDIS_REPLY_ERROR ? reply->str :
		    "unexpected answer from the event-log script");
		redis_op_answer(op, EVENTLOG_UNAVAILABLE, NULL, NULL, 0, NULL,
		    0);
		return;
	}
	op->answered = 1;
	op->cb.keyring(EVENTLOG_OK, &ring, op->arg);
}

/* A limit's take or slot (not redis_script_result's shape). */
static void
redis_limit_reply(struct redis_op *op, redisReply *reply)
{
	struct eventlog_taken	taken;
	int			granted, bad;

	if (op->type == REDIS_OP_TAKE)
		bad = redis_script_taken(reply, &taken) != 0;
	else
		bad = redis_script_slot(reply, &granted) != 0;
	if (bad) {
		log_limited(LOG_LEVEL_WARN, "redis-reply", "eventlog=%s: "
		    "limit %s: %s", op->r->name, op->sid,
		    reply->type == REDIS_REPLY_ERROR ? reply->str :
		    "unexpected answer from the event-log script");
		redis_op_answer(op, EVENTLOG_UNAVAILABLE, NULL, NULL, 0, NULL,
		    0);
		return;
	}
	op->answered = 1;
	if (op->type == REDIS_OP_TAKE)
		op->cb.take(EVENTLOG_OK, &taken, op->arg);
	else
		op->cb.slot(EVENTLOG_OK, granted, op->arg);
}

static void
redis_script_reply(struct redis_op *op, redisReply *reply)
{
	struct redis			*r = op->r;
	struct redis_script_result	 res;
	char				*cause;

	if (redis_script_noscript(reply) && !op->retried) {
		/*
		 * The server lost its script cache (restart, failover, SCRIPT
		 * FLUSH). EVAL loads it again; ops already pipelined behind
		 * this one may overtake it, which compare-and-append turns
		 * into a conflict, never into a silent reordering.
		 */
		if (!r->noscript_logged)
			log_info("eventlog=%s: script not cached; sending "
			    "it again", r->name);
		r->noscript_logged = 1;
		op->retried = 1;
		if (redis_op_send(op, 1) != 0)
			redis_op_fail(op);
		return;
	}
	if (op->type == REDIS_OP_KEYRING) {
		redis_keyring_reply(op, reply);
		return;
	}
	if (op->type == REDIS_OP_TAKE || op->type == REDIS_OP_SLOT) {
		redis_limit_reply(op, reply);
		return;
	}
	if (redis_script_result(reply, &res, &cause) != 0) {
		log_limited(LOG_LEVEL_WARN, "redis-reply", "eventlog=%s: "
		    "session=%s stream=%llu: %s", r->name, op->sid,
		    (unsigned long long)op->k, cause);
		free(cause);
		redis_op_answer(op, EVENTLOG_UNAVAILABLE, NULL, NULL, 0, NULL,
		    0);
		return;
	}
	if (res.status == EVENTLOG_OK && op->group != NULL) {
		/* The WAIT that ends the turn decides: keep the answer. */
		op->held_ok = 1;
		op->info = res.info;
		if (op->type == REDIS_OP_READ) {
			op->res = res;
			op->kept = reply;
			redis_link_take_reply(op->link);
		} else
			redis_script_result_clear(&res);
		return;
	}
	redis_op_answer(op, res.status, res.has_info ? &res.info : NULL,
	    res.entries, res.nentries, NULL, 0);
	redis_script_result_clear(&res);
}

static void
redis_reply_cb(struct redis_link *l, redisReply *reply, void *privdata)
{
	struct redis_op	*op = privdata;

	op->replies--;
	if (l != op->link) {
		/* From a lost connection it was taken back from: it waits. */
		redis_op_release(op);
		return;
	}
	if (reply != NULL && l == op->r->cmd.link)
		redis_progress(op->r);
	if (reply == NULL)
		redis_op_lost(op, l);
	else if (!op->answered) {
		if (!redis_op_is_user(op))
			redis_setup_reply(op, reply);
		else if (redis_reply_redirected(op, reply))
			return;	/* another node's now */
		else if (redis_reply_tryagain(op, reply))
			return;	/* sent again after a back-off */
		else if (redis_reply_refused(op, l, reply))
			;	/* the connection went, and op with it */
		else if (op->type == REDIS_OP_LOAD ||
		    op->type == REDIS_OP_TASK_GET)
			redis_load_reply(op, reply);
		else if (op->type == REDIS_OP_NOTE_SET)
			redis_op_answer(op, reply->type == REDIS_REPLY_STATUS ?
			    EVENTLOG_OK : EVENTLOG_UNAVAILABLE, NULL, NULL, 0,
			    NULL, 0);
		else if (op->type == REDIS_OP_PUBLISH)
			redis_op_answer(op, reply->type == REDIS_REPLY_INTEGER ?
			    EVENTLOG_OK : EVENTLOG_UNAVAILABLE, NULL, NULL, 0,
			    NULL, 0);
		else
			redis_script_reply(op, reply);
	}
	redis_op_release(op);
}

/*
 * Whether op's slot waits out a -TRYAGAIN on its node: then op waits
 * too, behind the ops of that slot asked for before it.
 */
static int
redis_op_retrying(const struct redis_op *op)
{
	const struct redis_op	*at;

	if (op->slot < 0)
		return (0);
	TAILQ_FOREACH(at, &op->r->retryq, entry) {
		if (at->slot == op->slot)
			return (1);
	}
	return (0);
}

/*
 * In a cluster, -TRYAGAIN: Redis's own, while a slot being moved has the
 * keys a command names on both nodes, or the script's, for a key it does
 * not declare that moved already (redis_script.c). Either way op was not
 * run and wrote nothing. Only its slot is in the way, not the node: op
 * leaves the pipeline and goes again after a back-off (REDIS_RETRY_MIN_MS,
 * doubled up to REDIS_RETRY_MAX_MS while ops keep getting it), to the node
 * of its slot then; the ops of its slot asked for after it wait behind it
 * (redis_op_retrying), the node's other slots go on. Waited out as an
 * outage is, for eventlog_outage_grace from its first -TRYAGAIN; past
 * that, or without a grace, it fails UNAVAILABLE. 1 if so.
 */
static int
redis_reply_tryagain(struct redis_op *op, redisReply *reply)
{
	struct redis	*r = op->r;
	struct timeval	 tv;
	uint64_t	 now;
	int		 released = 0;

	if (r->cluster == NULL || op->replies > 0 || op->slot < 0)
		return (0);
	if (reply->type != REDIS_REPLY_ERROR || reply->len < 8 ||
	    strncmp(reply->str, "TRYAGAIN", 8) != 0) {
		if (op->tryagain_ms != 0)
			r->retry_ms = REDIS_RETRY_MIN_MS;	/* got by */
		return (0);
	}
	redis_op_unlist(op);
	redis_wait_leave(op);
	op->link = NULL;
	op->asking = 0;
	if (op->type == REDIS_OP_CREATE &&
	    RB_FIND(redis_creates, &r->creates, op) == op) {
		/* What waits for it is held behind it (same slot). */
		RB_REMOVE(redis_creates, &r->creates, op);
		released = 1;
	}
	now = clock_now_ms();
	if (op->tryagain_ms == 0)
		op->tryagain_ms = now;
	if (!redis_grace_open(r) || now - op->tryagain_ms >= r->grace_ms) {
		log_limited(LOG_LEVEL_WARN, "redis-tryagain", "eventlog=%s: "
		    "%s: %.200s, for %llu ms; reported unavailable", r->name,
		    redis_op_tag(op), reply->str,
		    (unsigned long long)(now - op->tryagain_ms));
		redis_op_reject(op, EVENTLOG_UNAVAILABLE);
	} else {
		log_limited(LOG_LEVEL_INFO, "redis-tryagain", "eventlog=%s: "
		    "%s: %.200s; sent again in %d ms", r->name,
		    redis_op_tag(op), reply->str, r->retry_ms);
		redis_op_hold(&r->retryq, op);
		if (!evtimer_pending(r->retry_ev, NULL)) {
			tv.tv_sec = r->retry_ms / 1000;
			tv.tv_usec = (r->retry_ms % 1000) * 1000;
			evtimer_add(r->retry_ev, &tv);
			r->retry_ms = r->retry_ms * 2 > REDIS_RETRY_MAX_MS ?
			    REDIS_RETRY_MAX_MS : r->retry_ms * 2;
		}
	}
	if (released)
		redis_release(r);
	return (1);
}

/*
 * The back-off is over: what got -TRYAGAIN, and what waited behind it,
 * goes again in the order asked for, each to its slot's node now.
 */
static void
redis_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis		*r = arg;
	struct redis_ops	 go;
	struct redis_op		*op;

	TAILQ_INIT(&go);
	TAILQ_CONCAT(&go, &r->retryq, entry);
	TAILQ_FOREACH(op, &go, entry)
		op->list = &go;
	while ((op = TAILQ_FIRST(&go)) != NULL) {
		redis_op_unlist(op);
		if (op->type == REDIS_OP_CREATE &&
		    RB_FIND(redis_creates, &r->creates, op) == op)
			RB_REMOVE(redis_creates, &r->creates, op);
		r->hooks->reroute(r->cluster, r, op);
	}
}

/*
 * In a cluster, MOVED or ASK: op was not run here, and goes where Redis
 * says (redis_cluster_redirected), its place in this node's pipeline
 * given up. 1 if so.
 */
static int
redis_reply_redirected(struct redis_op *op, redisReply *reply)
{
	struct redis			*r = op->r;
	enum redis_cluster_redirect	 kind;
	unsigned int			 slot;
	char				 host[REDIS_CLUSTER_HOST_MAX + 1];
	int				 port;

	if (r->cluster == NULL || op->replies > 0)
		return (0);
	kind = redis_cluster_redirect(reply, &slot, host, sizeof host, &port);
	if (kind == REDIS_CLUSTER_NONE)
		return (0);
	redis_op_unlist(op);
	redis_wait_leave(op);
	op->link = NULL;
	if (op->type == REDIS_OP_CREATE &&
	    RB_FIND(redis_creates, &r->creates, op) == op) {
		/* What waits here for it goes too, and is redirected. */
		RB_REMOVE(redis_creates, &r->creates, op);
		redis_release(r);
	}
	if (host[0] == '\0')	/* the node that answered, elsewhere */
		strlcpy(host, r->host, sizeof host);
	/* Counted as r's until the cluster has gated the slot. */
	r->hooks->redirected(r->cluster, r, op, kind ==
	    REDIS_CLUSTER_MOVED ? 1 : 2, slot, host, port,
	    op->slot >= 0 ? r->owned[op->slot] - 1 : 0);
	return (1);
}

/*
 * An error reply that says nothing runs on this connection now (refused
 * credentials or ACL, a replica, a loading or busy server): op was not
 * run. The connection goes, and op with it: sent again once Redis
 * answers (within the outage grace), or failed.
 */
static int
redis_reply_refused(struct redis_op *op, struct redis_link *l,
    redisReply *reply)
{
	struct redis			*r = op->r;
	enum redis_script_refusal	 kind;
	char				 why[512];

	kind = redis_script_refusal(reply, why, sizeof why);
	if (kind == REDIS_REFUSED_NONE)
		return (0);
	if (kind == REDIS_REFUSED_AUTH || kind == REDIS_REFUSED_ACL)
		redis_conn_refuse(&r->cmd, why);
	else
		redis_conn_drop(&r->cmd, why);
	if (op->link == l && op->list != &r->waitq)
		redis_op_fail(op);
	return (1);
}

/*
 * With commit replicas:N, a commit counts once N replicas acknowledged
 * it, and a read is answered once N replicas have what it returns (it
 * wrote, so the WAIT after it covers everything it saw): nobody is shown
 * an entry a failover could lose. The turn's WAIT answers them all. When
 * it says fewer replicas did, that is waited out as an outage (another
 * WAIT, every REDIS_WAIT_MS) for eventlog_outage_grace; past it, or
 * without a grace, they are reported UNAVAILABLE although the primary
 * has the entries: a later read may return them once the replicas do
 * (and a retried append then meets a conflict), but nothing was promised.
 */
static void
redis_wait_cb(struct redis_link *l, redisReply *reply, void *privdata)
{
	struct redis_wait	*g = privdata;
	struct redis		*r = g->r;
	struct redis_op		*op;
	char			 why[512];
	enum redis_script_refusal kind;

	if (reply != NULL && l == r->cmd.link)
		redis_progress(r);
	if (reply != NULL && reply->type == REDIS_REPLY_INTEGER &&
	    reply->integer >= r->replicas) {
		if (r->behind) {
			r->behind = 0;
			redis_outage_end(r);
		}
		while ((op = TAILQ_FIRST(&g->ops)) != NULL) {
			if (!op->held_ok)
				redis_wait_leave(op);
			else if (op->type == REDIS_OP_READ)
				redis_op_answer(op, op->res.status,
				    op->res.has_info ? &op->res.info : NULL,
				    op->res.entries, op->res.nentries, NULL, 0);
			else
				redis_op_answer(op, EVENTLOG_OK, &op->info,
				    NULL, 0, NULL, 0);
			redis_op_release(op);
		}
		free(g);
		return;
	}
	if (reply != NULL && reply->type == REDIS_REPLY_INTEGER) {
		g->acked = reply->integer;
		snprintf(why, sizeof why, "commits reached %lld of %d "
		    "replicas within %d ms", reply->integer, r->replicas,
		    REDIS_WAIT_MS);
		if (redis_grace_open(r) && l == r->cmd.link) {
			if (!r->behind) {
				r->behind = 1;
				strlcpy(r->behind_why, why,
				    sizeof r->behind_why);
				redis_outage_begin(r, clock_now_ms(), why);
			}
			if (redis_wait_send(g) == 0)
				return;
		}
		log_limited(LOG_LEVEL_WARN, "redis-wait", "eventlog=%s: %s; "
		    "%zu operations reported unavailable (the primary has "
		    "them)", r->name, why, redis_wait_count(g));
	} else if (reply != NULL) {
		kind = redis_script_refusal(reply, why, sizeof why);
		if (kind == REDIS_REFUSED_AUTH || kind == REDIS_REFUSED_ACL)
			redis_conn_refuse(&r->cmd, why);
		else if (kind != REDIS_REFUSED_NONE)
			/* A replica now: what waits goes again, elsewhere. */
			redis_conn_drop(&r->cmd, why);
		else
			log_limited(LOG_LEVEL_WARN, "redis-wait",
			    "eventlog=%s: WAIT failed: %.200s; commits "
			    "reported unavailable", r->name,
			    reply->type == REDIS_REPLY_ERROR ? reply->str :
			    "unexpected reply");
	}
	/* What was not taken back to wait for a new connection fails. */
	while ((op = TAILQ_FIRST(&g->ops)) != NULL) {
		redis_wait_leave(op);
		if (op->link == l && op->list != &r->waitq)
			redis_op_fail(op);
		redis_op_release(op);
	}
	free(g);
}

/* The operations. */

/*
 * An op of the script: KEYS (unless declare is 0: none) and the ARGV
 * every operation shares.
 */
static struct redis_op *
redis_script_op_keys(struct redis *r, enum redis_op_type type,
    const char *name, const char *sid, uint64_t k, int stream, int declare)
{
	struct redis_op	*op = redis_op_new(r, type, sid, k);

	op->script = 1;
	redis_op_arg(op, "EVALSHA", 7);
	redis_op_arg(op, r->sha, strlen(r->sha));
	redis_op_arg(op, !declare ? "0" : stream ? "2" : "1", 1);
	if (declare)
		redis_op_arg3(op, REDIS_SCRIPT_KEY_HEAD, sid,
		    REDIS_SCRIPT_META_TAIL, 0, 0);
	if (declare && stream)
		redis_op_arg3(op, REDIS_SCRIPT_KEY_HEAD, sid,
		    REDIS_SCRIPT_STREAM_TAIL, 1, k);
	redis_op_arg(op, name, strlen(name));
	redis_op_argu(op, r->session_ttl_ms);
	redis_op_argu(op, r->open_ttl_ms);
	redis_op_arg3(op, REDIS_SCRIPT_KEY_HEAD, sid, REDIS_SCRIPT_STREAM_TAIL,
	    0, 0);
	redis_op_arg3(op, REDIS_SCRIPT_KEY_HEAD, sid, REDIS_SCRIPT_CHANNEL_TAIL,
	    0, 0);
	if (stream)
		redis_op_arg3(op, REDIS_SCRIPT_FIELD_HEAD, "", "", 1, k);
	else
		redis_op_arg(op, "", 0);
	redis_op_argu(op, clock_wall_ms());
	return (op);
}

static struct redis_op *
redis_script_op(struct redis *r, enum redis_op_type type, const char *name,
    const char *sid, uint64_t k, int stream)
{
	return (redis_script_op_keys(r, type, name, sid, k, stream, 1));
}

static void
redis_session_store(void *p, const char *sid, const char *meta, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct redis_op	*op;

	op = redis_script_op(p, REDIS_OP_STORE, "store", sid, 0, 0);
	redis_op_arg(op, meta, len);
	op->wait = 1;
	op->cb.done = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/* A store that the script refuses (not-found) once the meta is gone. */
static void
redis_session_update(void *p, const char *sid, const char *meta, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct redis_op	*op;

	op = redis_script_op(p, REDIS_OP_STORE, "store", sid, 0, 0);
	redis_op_arg(op, meta, len);
	redis_op_arg(op, "1", 1);
	op->wait = 1;
	op->cb.done = cb;
	op->arg = arg;
	redis_op_submit(op);
}

static void
redis_session_load(void *p, const char *sid, eventlog_load_cb cb, void *arg)
{
	struct redis_op	*op = redis_op_new(p, REDIS_OP_LOAD, sid, 0);

	redis_op_arg(op, "HGET", 4);
	redis_op_arg3(op, REDIS_SCRIPT_KEY_HEAD, sid, REDIS_SCRIPT_META_TAIL,
	    0, 0);
	redis_op_arg(op, "m", 1);
	op->cb.load = cb;
	op->arg = arg;
	redis_op_submit(op);
}

static void
redis_note_set(void *p, const char *sid, const char *name, const char *value,
    size_t len, uint64_t ttl_ms, eventlog_done_cb cb, void *arg)
{
	struct redis_op	*op = redis_op_new(p, REDIS_OP_NOTE_SET, sid, 0);

	redis_op_arg(op, "SET", 3);
	redis_op_take(op, redis_script_note_key(sid, name));
	redis_op_arg(op, value, len);
	redis_op_arg(op, "PX", 2);
	redis_op_argu(op, ttl_ms);
	op->cb.done = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/* A note that is not there (never set, or its time ran out): NOT_FOUND. */
static void
redis_note_get(void *p, const char *sid, const char *name,
    eventlog_load_cb cb, void *arg)
{
	struct redis_op	*op = redis_op_new(p, REDIS_OP_LOAD, sid, 0);

	redis_op_arg(op, "GET", 3);
	redis_op_take(op, redis_script_note_key(sid, name));
	op->cb.load = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/*
 * On the command connection, behind what was asked before: a note set
 * first is there when the message arrives.
 */
static void
redis_publish(void *p, const char *sid, const char *msg, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct redis_op	*op = redis_op_new(p, REDIS_OP_PUBLISH, sid, 0);
	char		*payload;
	int		 i;

	if (op->r->sharded)
		redis_op_arg(op, "SPUBLISH", 8);
	else
		redis_op_arg(op, "PUBLISH", 7);
	redis_op_take(op, redis_script_channel(sid));
	i = redis_op_next_arg(op);
	payload = redis_op_begin_arg(op, i, 2 + len);
	memcpy(payload, REDIS_SCRIPT_MESSAGE_HEAD, 2);
	memcpy(payload + 2, msg, len);
	redis_op_end_arg(op, i);
	op->cb.done = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/*
 * A task's record is one key of its own, {TID} its hash tag, written by
 * the script (compare-and-set on the revision) and read with a plain GET.
 * Records are not counted here (each lives its TTL), so final changes
 * nothing.
 */
static void
redis_task_put(void *p, const char *tid, uint64_t rev, const char *rec,
    size_t len, uint64_t ttl_ms, int final, eventlog_done_cb cb, void *arg)
{
	struct redis	*r = p;
	struct redis_op	*op = redis_op_new(r, REDIS_OP_TASK_PUT, tid, 0);

	op->script = 1;
	redis_op_arg(op, "EVALSHA", 7);
	redis_op_arg(op, r->sha, strlen(r->sha));
	redis_op_arg(op, "1", 1);
	redis_op_take(op, redis_script_task_key(tid));
	redis_op_arg(op, "task", 4);
	redis_op_argu(op, rev);
	redis_op_argu(op, ttl_ms > 0 ? ttl_ms : 1);
	redis_op_arg(op, rec, len);
	op->again_arg = op->argc;
	redis_op_arg(op, "0", 1);
	op->wait = 1;
	op->cb.done = cb;
	op->arg = arg;
	redis_op_submit(op);
}

static void
redis_task_get(void *p, const char *tid, eventlog_task_cb cb, void *arg)
{
	struct redis_op	*op = redis_op_new(p, REDIS_OP_TASK_GET, tid, 0);

	redis_op_arg(op, "GET", 3);
	redis_op_take(op, redis_script_task_key(tid));
	op->cb.task = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/* The keyring's two keys, {keyring} their hash tag: one script call. */
static void
redis_keyring(void *p, uint64_t period_ms, const char *fresh1,
    const char *fresh2, eventlog_keyring_cb cb, void *arg)
{
	struct redis	*r = p;
	struct redis_op	*op = redis_op_new(r, REDIS_OP_KEYRING, "keyring", 0);

	op->script = 1;
	redis_op_arg(op, "EVALSHA", 7);
	redis_op_arg(op, r->sha, strlen(r->sha));
	redis_op_arg(op, "2", 1);
	redis_op_arg(op, REDIS_SCRIPT_KEYRING_KEY,
	    strlen(REDIS_SCRIPT_KEYRING_KEY));
	redis_op_arg(op, REDIS_SCRIPT_KEYRING_MARK,
	    strlen(REDIS_SCRIPT_KEYRING_MARK));
	redis_op_arg(op, "keyring", 7);
	redis_op_argu(op, period_ms);
	redis_op_arg(op, fresh1, strlen(fresh1));
	redis_op_arg(op, fresh2, strlen(fresh2));
	op->cb.keyring = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/*
 * A limit's bucket, or its slots: one key each (its own hash tag), one
 * script call. op->sid is that tag ("l:NAME:HEX"): it names the limit's
 * key in log lines and, in a cluster, the slot the op belongs to (a
 * MOVED sends it where the tag's slot went). A take sent again after a
 * lost answer takes its tokens twice: a limit may admit a little less
 * than it should across a Redis outage, never more.
 */
static struct redis_op *
redis_limit_op(struct redis *r, enum redis_op_type type, const char *key)
{
	char		*tag = redis_script_limit_tag(key);
	struct redis_op	*op = redis_op_new(r, type, tag, 0);

	free(tag);
	op->script = 1;
	redis_op_arg(op, "EVALSHA", 7);
	redis_op_arg(op, r->sha, strlen(r->sha));
	redis_op_arg(op, "1", 1);
	redis_op_take(op, redis_script_limit_key(key,
	    type == REDIS_OP_SLOT));
	return (op);
}

static void
redis_take(void *p, const struct eventlog_take *t, eventlog_take_cb cb,
    void *arg)
{
	struct redis_op	*op = redis_limit_op(p, REDIS_OP_TAKE, t->key);

	redis_op_arg(op, "take", 4);
	redis_op_argu(op, t->rate);
	redis_op_argu(op, t->period_ms > 0 ? t->period_ms : 1);
	redis_op_argu(op, t->burst);
	redis_op_argu(op, t->quota);
	redis_op_argu(op, t->want);
	redis_op_argu(op, t->min);
	redis_op_argu(op, t->back);
	redis_op_argu(op, t->back_day);
	op->cb.take = cb;
	op->arg = arg;
	redis_op_submit(op);
}

static void
redis_slot(void *p, enum eventlog_slot_op what, const char *key,
    uint64_t max, uint64_t ttl_ms, const char *const *members, size_t n,
    eventlog_slot_cb cb, void *arg)
{
	static const char *const names[] = { "take", "renew", "free" };
	struct redis_op		*op = redis_limit_op(p, REDIS_OP_SLOT, key);
	size_t			 i;

	redis_op_arg(op, "slot", 4);
	redis_op_arg(op, names[what], strlen(names[what]));
	redis_op_argu(op, ttl_ms > 0 ? ttl_ms : 1);
	redis_op_argu(op, max);
	for (i = 0; i < n; i++)
		redis_op_arg(op, members[i], strlen(members[i]));
	op->cb.slot = cb;
	op->arg = arg;
	redis_op_submit(op);
}

static void
redis_session_delete(void *p, const char *sid, eventlog_done_cb cb,
    void *arg)
{
	struct redis_op	*op;

	op = redis_script_op(p, REDIS_OP_DELETE, "delete", sid, 0, 0);
	op->cb.done = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/*
 * Appends asked for in one loop turn, to one stream, one after the other,
 * travel as one op: one EVALSHA commits them all (the script's cost is
 * mostly per call, not per entry). A create takes the appends that follow
 * it the same way, so a stream and its first entries are one call and
 * commit together. The op stays open, taking entries, until something
 * else is asked for or the turn ends.
 */
static size_t
redis_batch_max(const struct redis *r)
{
	return (r->maxlen < REDIS_BATCH_MAX ? r->maxlen : REDIS_BATCH_MAX);
}

/* The entries an op may still take: a create's entry 0 counts. */
static int
redis_op_takes(const struct redis *r, const struct redis_op *op)
{
	size_t	n = op->nappends + (op->type == REDIS_OP_CREATE);

	return (n < redis_batch_max(r));
}

static int
redis_append_joins(struct redis *r, const char *sid, uint64_t k,
    uint64_t seq, size_t len)
{
	struct redis_op	*op = r->open;
	uint64_t	 last;

	if (op == NULL || op->k != k || op->final || !redis_op_takes(r, op) ||
	    op->bytes + len > REDIS_BATCH_BYTES || strcmp(op->sid, sid) != 0)
		return (0);
	last = op->nappends > 0 ? op->appends[op->nappends - 1].seq : 0;
	return (last + 1 == seq);
}

/* Keeps op open for appends until the end of this loop turn. */
static void
redis_op_open(struct redis *r, struct redis_op *op)
{
	redis_flush(r);
	if (!r->closing && (r->cmd.state == REDIS_CONN_READY ||
	    redis_grace_open(r))) {
		r->open = op;
		event_active(r->flush_ev, EV_TIMEOUT, 0);
	}
}

/*
 * The op's token: this process's, then how many came before (unique to
 * the op), so that a retry knows its own entries (redis_script.c).
 */
static void
redis_op_token(struct redis *r, struct redis_op *op)
{
	char	buf[sizeof r->token + CURSOR_BUFSIZE];
	size_t	n = strlen(r->token);

	memcpy(buf, r->token, n);
	n += cursor_format_seq(buf + n, sizeof buf - n, ++r->ntokens);
	redis_op_arg(op, buf, n);
}

/* Makes the script's "final" argument say so: the op's last entry ends. */
static void
redis_op_set_final(struct redis_op *op)
{
	op->final = 1;
	op->buf[op->argoff[op->final_arg]] = '1';
}

static void
redis_stream_create(void *p, const char *sid, uint64_t k,
    eventlog_append_cb cb, void *arg)
{
	struct redis	*r = p;
	struct redis_op	*op;

	op = redis_script_op(r, REDIS_OP_CREATE, "create", sid, k, 1);
	redis_op_argid(op, k, 0);
	redis_op_argu(op, r->maxlen);
	/* One create in 64 prunes the session's fields (redis_script.c). */
	if (k % 64 == 0)
		redis_op_argu(op, r->max_fields);
	else
		redis_op_arg(op, "", 0);
	op->final_arg = op->argc;
	redis_op_arg(op, "0", 1);
	redis_op_argu(op, r->stream_ttl_ms);
	redis_op_token(r, op);
	op->pairs_arg = op->argc;
	op->wait = 1;
	op->cb.append = cb;
	op->arg = arg;
	RB_INSERT(redis_creates, &r->creates, op);
	/* Stream 0 is never drawn, and 0-0 is not a valid Redis stream id. */
	if (k == 0) {
		redis_op_reject(op, EVENTLOG_CONFLICT);
		return;
	}
	redis_op_open(r, op);
	if (op != r->open)
		redis_op_submit(op);
}

static struct redis_op *
redis_append_op(struct redis *r, const char *sid, uint64_t k, uint64_t seq)
{
	struct redis_op	*op;

	op = redis_script_op(r, REDIS_OP_APPEND, "append", sid, k, 1);
	op->seq = seq;
	if (seq == 0)
		redis_op_arg(op, "", 0);	/* matches no stream */
	else
		redis_op_argid(op, k, seq - 1);
	op->final_arg = op->argc;
	redis_op_arg(op, "0", 1);
	redis_op_argu(op, r->maxlen);
	redis_op_argu(op, r->stream_ttl_ms);
	redis_op_token(r, op);
	op->pairs_arg = op->argc;
	op->wait = 1;
	return (op);
}

static void
redis_append(void *p, const char *sid, uint64_t k, uint64_t seq,
    const char *data, size_t len, int flags, eventlog_append_cb cb, void *arg)
{
	struct redis		*r = p;
	struct redis_op		*op;
	struct redis_append	*a;

	if (redis_append_joins(r, sid, k, seq, len))
		op = r->open;
	else {
		op = redis_append_op(r, sid, k, seq);
		redis_op_open(r, op);
	}
	if (op->nappends == op->nalloc) {
		op->nalloc = op->nalloc == 0 ? 4 : op->nalloc * 2;
		op->appends = xreallocarray(op->appends, op->nalloc,
		    sizeof *op->appends);
	}
	a = &op->appends[op->nappends++];
	a->seq = seq;
	a->cb = cb;
	a->arg = arg;
	op->bytes += len;
	redis_op_argid(op, k, seq);
	redis_op_arg(op, data, len);
	if (flags & EVENTLOG_FINAL)
		redis_op_set_final(op);
	if (op != r->open)
		redis_op_submit(op);
}

/* Sends the open op, if any. */
static void
redis_flush(struct redis *r)
{
	struct redis_op	*op = r->open;

	if (op == NULL)
		return;
	r->open = NULL;
	redis_op_submit(op);
}

static void
redis_flush_cb(evutil_socket_t fd, short events, void *arg)
{
	redis_flush(arg);
}

static void
redis_stream_end(void *p, const char *sid, uint64_t k, eventlog_append_cb cb,
    void *arg)
{
	struct redis	*r = p;
	struct redis_op	*op;

	op = redis_script_op(r, REDIS_OP_END, "end", sid, k, 1);
	redis_op_argu(op, r->stream_ttl_ms);
	op->wait = 1;
	op->cb.append = cb;
	op->arg = arg;
	redis_op_submit(op);
}

static void
redis_read(void *p, const char *sid, uint64_t k, uint64_t from, size_t max,
    eventlog_read_cb cb, void *arg)
{
	struct redis	*r = p;
	struct redis_op	*op;

	/* A stream never holds more than maxlen entries. */
	if (max > r->maxlen)
		max = r->maxlen;
	op = redis_script_op(r, REDIS_OP_READ, "read", sid, k, 1);
	op->seq = from;
	redis_op_argu(op, from);
	redis_op_argid(op, k, from);
	redis_op_argu(op, max);
	/*
	 * With commit replicas:N the read writes, so that the WAIT after it
	 * covers what it returns, whoever wrote it: WAIT counts from this
	 * connection's last write.
	 */
	redis_op_arg(op, r->replicas > 0 ? "1" : "0", 1);
	op->cb.read = cb;
	op->arg = arg;
	redis_op_submit(op);
}

/* Watches: one subscription per watched session, counted. */

static struct redis_watch *
redis_watch_find(struct redis *r, const char *channel)
{
	struct redis_watch	find;

	find.channel = (char *)channel;
	return (RB_FIND(redis_watches, &r->watches, &find));
}

static void
redis_watch_subscribe(struct redis *r, struct redis_watch *w)
{
	if (r->sub.state != REDIS_CONN_READY || r->sub.link == NULL)
		return;
	if (redis_link_command(r->sub.link, NULL, NULL, r->sharded ?
	    "SSUBSCRIBE" : "SUBSCRIBE", w->channel, NULL) == 0)
		w->state = REDIS_WATCH_SUBSCRIBING;
}

static void
redis_watch_queue(struct redis *r, struct redis_watch *w)
{
	if (w->queued)
		return;
	if (TAILQ_EMPTY(&r->resyncq))
		event_active(r->resync_ev, EV_TIMEOUT, 0);
	TAILQ_INSERT_TAIL(&r->resyncq, w, qentry);
	w->queued = 1;
}

static void
redis_watch_free(struct redis *r, struct redis_watch *w)
{
	struct redis_watcher	*wr;

	RB_REMOVE(redis_watches, &r->watches, w);
	if (w->queued)
		TAILQ_REMOVE(&r->resyncq, w, qentry);
	if (w->dirty)
		TAILQ_REMOVE(&r->dirtyq, w, dentry);
	while ((wr = TAILQ_FIRST(&w->watchers)) != NULL) {
		TAILQ_REMOVE(&w->watchers, wr, entry);
		free(wr);
	}
	free(w->channel);
	free(w->sid);
	free(w);
}

/* Forgets removed watchers; unsubscribes or frees a watch nobody holds. */
static void
redis_watch_sweep(struct redis *r, struct redis_watch *w)
{
	struct redis_watcher	*wr, *wr1;

	for (wr = TAILQ_FIRST(&w->watchers); wr != NULL; wr = wr1) {
		wr1 = TAILQ_NEXT(wr, entry);
		if (wr->removed) {
			TAILQ_REMOVE(&w->watchers, wr, entry);
			free(wr);
		}
	}
	if (w->count > 0 || w->queued)
		return;
	switch (w->state) {
	case REDIS_WATCH_SUBSCRIBING:
	case REDIS_WATCH_LIVE:
		if (r->sub.state == REDIS_CONN_READY && r->sub.link != NULL &&
		    redis_link_command(r->sub.link, NULL, NULL, r->sharded ?
		    "SUNSUBSCRIBE" : "UNSUBSCRIBE", w->channel, NULL) == 0) {
			w->state = REDIS_WATCH_UNSUBSCRIBING;
			return;
		}
		w->state = REDIS_WATCH_IDLE;
		break;
	case REDIS_WATCH_UNSUBSCRIBING:
		return;		/* freed when Redis confirms */
	case REDIS_WATCH_IDLE:
		break;
	}
	redis_watch_free(r, w);
}

/* Sweeps w now, or after the watcher callbacks running now return. */
static void
redis_watch_release(struct redis *r, struct redis_watch *w)
{
	if (r->dispatching > 0) {
		if (!w->dirty) {
			TAILQ_INSERT_TAIL(&r->dirtyq, w, dentry);
			w->dirty = 1;
		}
		return;
	}
	redis_watch_sweep(r, w);
}

/* Watchers were called: sweep what they let go of, once all returned. */
static void
redis_watch_notified(struct redis *r, struct redis_watch *w)
{
	if (--r->dispatching > 0)
		return;
	redis_watch_release(r, w);
	while ((w = TAILQ_FIRST(&r->dirtyq)) != NULL) {
		TAILQ_REMOVE(&r->dirtyq, w, dentry);
		w->dirty = 0;
		redis_watch_sweep(r, w);
	}
}

/* Calls w's watchers (with resync: those owing a k = 0 call). */
static void
redis_watch_notify(struct redis *r, struct redis_watch *w, uint64_t k,
    uint64_t seq, int resync)
{
	struct redis_watcher	*wr;

	r->dispatching++;
	TAILQ_FOREACH(wr, &w->watchers, entry) {
		if (wr->removed || (resync && !wr->resync))
			continue;
		wr->resync = 0;
		wr->cb(w->sid, k, seq, wr->arg);
	}
	redis_watch_notified(r, w);
}

/* Calls w's watchers that take messages. */
static void
redis_watch_message(struct redis *r, struct redis_watch *w, const char *msg,
    size_t len)
{
	struct redis_watcher	*wr;

	r->dispatching++;
	TAILQ_FOREACH(wr, &w->watchers, entry) {
		if (!wr->removed && wr->mcb != NULL)
			wr->mcb(w->sid, msg, len, wr->arg);
	}
	redis_watch_notified(r, w);
}

/*
 * The k = 0 calls owed: each tells its watcher to read again what it may
 * have missed, so it is made only once reads can be made. A subscription
 * that comes back before the command connection (a Redis restart: both
 * reconnect, in either order) waits for it; otherwise the re-reads would
 * fail and nothing would ask again (a session the log lost kept here).
 * redis_resync_owed runs this again once the command connection is ready.
 */
static void
redis_resync_cb(evutil_socket_t fd, short events, void *arg)
{
	struct redis		*r = arg;
	struct redis_watchq	 batch;
	struct redis_watch	*w;

	if (r->cmd.state != REDIS_CONN_READY)
		return;
	TAILQ_INIT(&batch);
	TAILQ_CONCAT(&batch, &r->resyncq, qentry);
	while ((w = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, w, qentry);
		w->queued = 0;
		if (w->state == REDIS_WATCH_LIVE)
			redis_watch_notify(r, w, 0, 0, 1);
		else
			redis_watch_release(r, w);
	}
}

/* The command connection is ready: the k = 0 calls that waited for it. */
static void
redis_resync_owed(struct redis *r)
{
	if (!TAILQ_EMPTY(&r->resyncq))
		event_active(r->resync_ev, EV_TIMEOUT, 0);
}

static void
redis_watch_live(struct redis *r, struct redis_watch *w)
{
	struct redis_watcher	*wr;

	w->state = REDIS_WATCH_LIVE;
	TAILQ_FOREACH(wr, &w->watchers, entry)
		wr->resync = 1;
	redis_watch_queue(r, w);
}

static void
redis_sub_push_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_conn	*c = arg;
	struct redis		*r = c->r;
	struct redis_pubsub	 ps;
	struct redis_watch	*w;

	if (l != c->link)
		return;
	if (r->cluster != NULL && reply->type == REDIS_REPLY_ERROR &&
	    (strncmp(reply->str, "MOVED ", 6) == 0 ||
	    strncmp(reply->str, "CLUSTERDOWN", 11) == 0)) {
		/*
		 * A channel whose slot is not here (an answer says not
		 * which): subscribed again, every one, once the cluster has
		 * looked at its map; those that moved go with it.
		 */
		r->hooks->changed(r->cluster, "a subscription refused");
		redis_conn_drop(c, reply->str);
		return;
	}
	if (redis_script_pubsub(reply, &ps) != 0) {
		log_warn("eventlog=%s: unexpected message on the subscription "
		    "connection", r->name);
		return;
	}
	if ((w = redis_watch_find(r, ps.channel)) == NULL)
		return;
	switch (ps.kind) {
	case REDIS_PUBSUB_SUBSCRIBE:
		if (w->state == REDIS_WATCH_SUBSCRIBING)
			redis_watch_live(r, w);
		break;
	case REDIS_PUBSUB_UNSUBSCRIBE:
		if (w->state != REDIS_WATCH_UNSUBSCRIBING &&
		    r->cluster != NULL) {
			/*
			 * The node dropped it: the session's slot left it.
			 * Watched again where the slot is now, once the
			 * cluster knows; the re-read then catches up.
			 */
			w->state = REDIS_WATCH_IDLE;
			r->hooks->changed(r->cluster, "a node dropped a "
			    "subscription (its slot moved)");
			redis_watch_release(r, w);
			break;
		}
		if (w->state != REDIS_WATCH_UNSUBSCRIBING)
			break;
		w->state = REDIS_WATCH_IDLE;
		if (w->count > 0)
			redis_watch_subscribe(r, w);	/* watched again */
		else
			redis_watch_release(r, w);
		break;
	case REDIS_PUBSUB_MESSAGE:
		if (w->state != REDIS_WATCH_LIVE)
			break;
		if (ps.k != 0)
			redis_watch_notify(r, w, ps.k, ps.seq, 0);
		else
			redis_watch_message(r, w, ps.data, ps.len);
		break;
	case REDIS_PUBSUB_OTHER:
		break;
	}
}

static void
redis_sub_ready(struct redis_conn *c)
{
	struct redis		*r = c->r;
	struct redis_watch	*w;

	redis_conn_set_state(c, REDIS_CONN_READY, NULL);
	RB_FOREACH(w, redis_watches, &r->watches) {
		if (w->count > 0 && w->state == REDIS_WATCH_IDLE)
			redis_watch_subscribe(r, w);
	}
}

/* AUTH's answer, or PING's: the server speaks to this connection. */
static void
redis_sub_setup_cb(struct redis_link *l, redisReply *reply, void *arg)
{
	struct redis_conn	*c = arg;

	if (l != c->link || reply == NULL)
		return;
	if (c->r->password != NULL && redis_conn_auth_reply(c, reply) != 0)
		return;
	if (c->r->password == NULL && reply->type == REDIS_REPLY_ERROR) {
		redis_setup_refused_conn(c, "PING", reply);
		return;
	}
	redis_sub_ready(c);
}

/*
 * AUTH first, as on the command connection, or PING: it is ready (and
 * subscribes) once Redis answered, not when TCP connects (a TLS port
 * accepts a plaintext connection, then drops it).
 */
static void
redis_sub_setup(struct redis_conn *c)
{
	if (c->r->password != NULL)
		redis_conn_auth(c, redis_sub_setup_cb, c);
	else
		redis_link_command(c->link, redis_sub_setup_cb, c, "PING",
		    NULL);
}

/* Every subscription went with the connection. */
static void
redis_sub_lost(struct redis_conn *c)
{
	struct redis		*r = c->r;
	struct redis_watch	*w, *w1;

	RB_FOREACH_SAFE(w, redis_watches, &r->watches, w1) {
		w->state = REDIS_WATCH_IDLE;
		redis_watch_release(r, w);
	}
}

static void
redis_watch(void *p, const char *sid, eventlog_watch_cb cb,
    eventlog_message_cb mcb, void *arg)
{
	struct redis		*r = p;
	struct redis_watch	*w;
	struct redis_watcher	*wr;
	char			*channel;

	if (r->closing)
		return;
	channel = redis_script_channel(sid);
	if ((w = redis_watch_find(r, channel)) == NULL) {
		w = xcalloc(1, sizeof *w);
		w->sid = xstrdup(sid);
		w->channel = channel;
		TAILQ_INIT(&w->watchers);
		RB_INSERT(redis_watches, &r->watches, w);
	} else
		free(channel);

	wr = xcalloc(1, sizeof *wr);
	wr->cb = cb;
	wr->mcb = mcb;
	wr->arg = arg;
	TAILQ_INSERT_TAIL(&w->watchers, wr, entry);
	w->count++;

	switch (w->state) {
	case REDIS_WATCH_IDLE:
		if (r->parked)
			break;	/* subscribed once it connects (unpark) */
		if (!r->sub.started)
			redis_conn_connect(&r->sub);
		else
			redis_watch_subscribe(r, w);
		break;
	case REDIS_WATCH_LIVE:
		wr->resync = 1;
		redis_watch_queue(r, w);
		break;
	default:
		break;		/* the confirmation will tell it */
	}
}

static void
redis_unwatch(void *p, const char *sid, eventlog_watch_cb cb,
    eventlog_message_cb mcb, void *arg)
{
	struct redis		*r = p;
	struct redis_watch	*w;
	struct redis_watcher	*wr;
	char			*channel;

	channel = redis_script_channel(sid);
	w = redis_watch_find(r, channel);
	free(channel);
	if (w == NULL)
		return;
	TAILQ_FOREACH(wr, &w->watchers, entry) {
		if (!wr->removed && wr->cb == cb && wr->mcb == mcb &&
		    wr->arg == arg) {
			wr->removed = 1;
			w->count--;
			break;
		}
	}
	redis_watch_release(r, w);
}

/* Life cycle. */

/*
 * Answers everything once with CANCELLED: ops never sent, then those in
 * flight (dropping the connection calls their callbacks), then whatever
 * those callbacks asked for meanwhile, and what waited for a create.
 */
static void
redis_free(void *p)
{
	struct redis		*r = p;
	struct redis_op		*op;
	struct redis_watch	*w, *w1;
	struct redis_link	*l;

	r->closing = 1;
	if (r->sentinel != NULL) {
		redis_sentinel_cancel(r->sentinel, redis_conn_found_cb,
		    &r->cmd);
		redis_sentinel_cancel(r->sentinel, redis_conn_found_cb,
		    &r->sub);
	}
	if ((op = r->open) != NULL) {
		r->open = NULL;
		redis_op_answer(op, EVENTLOG_CANCELLED, NULL, NULL, 0, NULL,
		    0);
		redis_op_free(op);
	}
	if ((l = r->cmd.link) != NULL) {
		r->cmd.link = NULL;
		redis_link_close(l);
	}
	if ((l = r->sub.link) != NULL) {
		r->sub.link = NULL;
		redis_link_close(l);
	}
	for (;;) {
		/* Answering a create releases what waited for it. */
		if ((op = TAILQ_FIRST(&r->failq)) == NULL &&
		    (op = TAILQ_FIRST(&r->waitq)) == NULL &&
		    (op = TAILQ_FIRST(&r->held)) == NULL &&
		    (op = TAILQ_FIRST(&r->gatedq)) == NULL &&
		    (op = TAILQ_FIRST(&r->retryq)) == NULL)
			break;
		redis_op_unlist(op);
		redis_op_answer(op, EVENTLOG_CANCELLED, NULL, NULL, 0, NULL,
		    0);
		redis_op_free(op);
	}
	RB_FOREACH_SAFE(w, redis_watches, &r->watches, w1)
		redis_watch_free(r, w);
	event_free(r->fail_ev);
	event_free(r->flush_ev);
	event_free(r->deadline_ev);
	event_free(r->grace_ev);
	event_free(r->resync_ev);
	event_free(r->retry_ev);
	event_free(r->cmd.timer_ev);
	event_free(r->sub.timer_ev);
	redis_wait_discard(r);
	redis_sentinel_free(r->sentinel);
	if (!r->tls_borrowed)
		redis_link_tls_free(r->tlsconf);
	free(r->owned);
	log_debug("eventlog=%s: closed", r->name);
	redis_set_auth(r, NULL, NULL);
	free(r->name);
	free(r->host);
	free(r->path);
	free(r);
}

/*
 * Operations succeed now only on a ready command connection that answers
 * and whose replicas keep up (in an outage they wait, or fail).
 */
static int
redis_available(void *arg)
{
	struct redis	*r = arg;

	return (!r->closing && r->cmd.state == REDIS_CONN_READY &&
	    !r->stalled && !r->behind);
}

static uint64_t
redis_steady(void *arg)
{
	struct redis	*r = arg;

	if (!redis_available(r) || r->steady_ms == 0)
		return (0);
	return (clock_now_ms() - r->steady_ms);
}

static void
redis_on_available(void *arg, void (*cb)(void *), void *cbarg)
{
	struct redis	*r = arg;

	r->available_cb = cb;
	r->available_arg = cbarg;
}

static const struct eventlog_ops redis_ops = {
	.name = "redis",
	.free = redis_free,
	.session_store = redis_session_store,
	.session_update = redis_session_update,
	.session_load = redis_session_load,
	.session_delete = redis_session_delete,
	.stream_create = redis_stream_create,
	.append = redis_append,
	.stream_end = redis_stream_end,
	.read = redis_read,
	.watch = redis_watch,
	.unwatch = redis_unwatch,
	.publish = redis_publish,
	.note_set = redis_note_set,
	.note_get = redis_note_get,
	.task_put = redis_task_put,
	.task_get = redis_task_get,
	.keyring = redis_keyring,
	.take = redis_take,
	.slot = redis_slot,
	.available = redis_available,
	.on_available = redis_on_available,
	.steady = redis_steady,
	.describe = redis_describe,
	.reconfigure = redis_reconfigure,
};

static void
redis_conn_init(struct redis *r, struct redis_conn *c, const char *name)
{
	c->r = r;
	c->name = name;
	c->state = REDIS_CONN_DOWN;
	c->backoff_ms = REDIS_BACKOFF_MIN_MS;
	c->timer_ev = evtimer_new(r->base, redis_conn_timer_cb, c);
}

/* The credentials from now on (copies; the old password zeroed). */
static int
redis_set_auth(struct redis *r, const char *user, const char *password)
{
	int	changed;

	changed = (user == NULL) != (r->user == NULL) ||
	    (user != NULL && strcmp(user, r->user) != 0) ||
	    (password == NULL) != (r->password == NULL) ||
	    (password != NULL && strcmp(password, r->password) != 0);
	free(r->user);
	if (r->password != NULL) {
		explicit_bzero(r->password, strlen(r->password));
		free(r->password);
	}
	r->user = user != NULL ? xstrdup(user) : NULL;
	r->password = password != NULL ? xstrdup(password) : NULL;
	return (changed);
}

/* The TLS settings of conf: NULL (with *cause) if they cannot be used. */
static struct redis_link_tls *
redis_tls_new(const struct conf *conf, char **cause)
{
	struct redis_link_tls_conf	tc;

	memset(&tc, 0, sizeof tc);
	tc.ca_file = conf->redis_tls_ca_file;
	tc.cert_file = conf->redis_tls_cert_file;
	tc.key_file = conf->redis_tls_key_file;
	tc.server_name = conf->redis_tls_server_name;
	tc.verify = conf->redis_tls_verify;
	return (redis_link_tls_new(&tc, cause));
}

static void
redis_tls_warn(struct redis *r)
{
	if (r->tls && !r->tls_verify)
		log_warn("eventlog=%s: redis_tls_verify off: the server's "
		    "certificate is not checked, so anyone on the way can "
		    "read and change the event log", r->name);
}

/* A connection refused for its credentials tries the new ones now. */
static void
redis_conn_retry(struct redis_conn *c)
{
	if (!c->refused || c->state != REDIS_CONN_DOWN || c->r->parked)
		return;
	log_info("eventlog=%s: new credentials: connecting again now",
	    c->r->name);
	evtimer_del(c->timer_ev);
	c->backoff_ms = REDIS_BACKOFF_MIN_MS;
	redis_conn_connect(c);
}

/*
 * A reload: the credentials and the TLS files, for the connections made
 * from now on. Nothing changes if the new TLS files cannot be used.
 */
static int
redis_reconfigure(void *arg, const struct conf *conf, char **cause)
{
	struct redis		*r = arg;
	struct redis_link_tls	*tls = NULL;
	int			 was_verify = r->tls_verify;

	if (r->tls && (tls = redis_tls_new(conf, cause)) == NULL)
		return (-1);
	if (tls != NULL) {
		if (r->sentinel != NULL)
			redis_sentinel_set_tls(r->sentinel, tls);
		redis_link_tls_free(r->tlsconf);	/* links keep theirs */
		r->tlsconf = tls;
		r->tls_verify = conf->redis_tls_verify;
		if (was_verify)
			redis_tls_warn(r);
	}
	if (r->sentinel != NULL)
		redis_sentinel_set_auth(r->sentinel,
		    conf_redis_sentinel_user(conf),
		    conf_redis_sentinel_password(conf));
	if (redis_set_auth(r, conf_redis_user(conf),
	    conf_redis_password(conf))) {
		redis_conn_retry(&r->cmd);
		redis_conn_retry(&r->sub);
	}
	return (0);
}

/* Where the log is, for /healthz and /metrics. */
static void
redis_describe(void *arg, struct eventlog_where *w)
{
	struct redis	*r = arg;

	w->address = r->name;
	w->server = r->cmd.server[0] != '\0' ? r->cmd.server : NULL;
	w->role = r->role[0] != '\0' ? r->role : NULL;
	w->tls = r->tls;
	w->tls_verify = r->tls_verify;
	if (r->cmd.link != NULL) {
		w->tls_version = redis_link_tls_version(r->cmd.link);
		w->tls_cipher = redis_link_tls_cipher(r->cmd.link);
	}
	w->failovers = r->failovers;
	w->connects = r->connects;
	if (r->closing)
		w->why = "closing";
	else if (r->cmd.state != REDIS_CONN_READY)
		w->why = r->cmd.why[0] != '\0' ? r->cmd.why : "connecting";
	else if (r->stalled)
		w->why = "no reply from Redis in 2000 ms";
	else if (r->behind)
		w->why = r->behind_why;
}

/* The parts of a log every kind shares: lists, events, connections. */
static struct redis *
redis_alloc(struct event_base *base)
{
	struct redis	*r;

	r = xcalloc(1, sizeof *r);
	r->base = base;
	snprintf(r->token, sizeof r->token, "%012llx",
	    (unsigned long long)random_u48());
	TAILQ_INIT(&r->inflight);
	TAILQ_INIT(&r->failq);
	TAILQ_INIT(&r->waitq);
	RB_INIT(&r->creates);
	TAILQ_INIT(&r->held);
	TAILQ_INIT(&r->gatedq);
	TAILQ_INIT(&r->retryq);
	RB_INIT(&r->watches);
	TAILQ_INIT(&r->resyncq);
	TAILQ_INIT(&r->dirtyq);
	r->fail_ev = event_new(base, -1, 0, redis_fail_cb, r);
	r->flush_ev = event_new(base, -1, 0, redis_flush_cb, r);
	r->deadline_ev = evtimer_new(base, redis_deadline_cb, r);
	r->grace_ev = evtimer_new(base, redis_grace_cb, r);
	r->resync_ev = event_new(base, -1, 0, redis_resync_cb, r);
	r->retry_ev = evtimer_new(base, redis_retry_cb, r);
	r->retry_ms = REDIS_RETRY_MIN_MS;

	redis_conn_init(r, &r->cmd, "command");
	r->cmd.setup = redis_cmd_setup;
	r->cmd.lost = redis_cmd_lost;
	redis_conn_init(r, &r->sub, "subscription");
	r->sub.setup = redis_sub_setup;
	r->sub.lost = redis_sub_lost;
	return (r);
}

/* What conf says of the log's streams, sessions and commits. */
static void
redis_settings(struct redis *r, const struct conf *conf)
{
	r->db = conf->redis_db;
	r->replicas = conf->commit_replicas;
	r->maxlen = (size_t)conf->stream_maxlen;
	r->session_ttl_ms = (uint64_t)conf->session_ttl * 1000;
	r->open_ttl_ms = r->session_ttl_ms + r->session_ttl_ms / 2;
	r->stream_ttl_ms = (uint64_t)conf->stream_ttl * 1000;
	r->max_fields = REDIS_TOMBSTONES + (size_t)conf->session_max_streams;
	r->grace_ms = (uint64_t)conf->eventlog_outage_grace * 1000;
}

static void
redis_settings_copy(struct redis *r, const struct redis *model)
{
	r->db = model->db;
	r->replicas = model->replicas;
	r->maxlen = model->maxlen;
	r->session_ttl_ms = model->session_ttl_ms;
	r->open_ttl_ms = model->open_ttl_ms;
	r->stream_ttl_ms = model->stream_ttl_ms;
	r->max_fields = model->max_fields;
	r->grace_ms = model->grace_ms;
	r->tls_verify = model->tls_verify;
	redis_set_auth(r, model->user, model->password);
}

static void
redis_created(struct redis *r)
{
	log_info("eventlog=%s: stream_maxlen=%zu stream_ttl=%llus "
	    "session_ttl=%llus commit replicas:%d outage_grace=%llus%s%s",
	    r->name, r->maxlen, (unsigned long long)(r->stream_ttl_ms / 1000),
	    (unsigned long long)(r->session_ttl_ms / 1000), r->replicas,
	    (unsigned long long)(r->grace_ms / 1000), r->tls ? " tls" : "",
	    r->password != NULL ? (r->user != NULL ? " auth=user" :
	    " auth=password") : "");
	if (r->cluster == NULL)
		redis_tls_warn(r);
	redis_conn_connect(&r->cmd);
}

struct redis *
redis_node_new(struct redis_cluster *cluster,
    const struct redis_node_hooks *hooks, struct event_base *base,
    const struct conf *conf, const struct redis *model, const char *name,
    const char *host, int port, struct redis_link_tls *tls, int connect)
{
	struct redis	*r = redis_alloc(base);

	r->cluster = cluster;
	r->hooks = hooks;
	r->owned = xcalloc(REDIS_CLUSTER_SLOTS, sizeof *r->owned);
	r->sharded = 1;
	r->kind = tls != NULL ? CONF_REDIS_TLS : CONF_REDIS_TCP;
	r->tls = tls != NULL;
	r->tlsconf = tls;
	r->tls_borrowed = 1;
	r->name = xstrdup(name);
	r->host = xstrdup(host);
	r->port = port;
	if (conf != NULL) {
		redis_settings(r, conf);
		r->tls_verify = conf->redis_tls_verify;
		redis_set_auth(r, conf_redis_user(conf),
		    conf_redis_password(conf));
	} else
		redis_settings_copy(r, model);
	if (connect)
		redis_created(r);
	return (r);
}

const struct eventlog_ops *
redis_node_ops(void)
{
	return (&redis_ops);
}

const char *
redis_node_server(const struct redis *r)
{
	return (r->cmd.server[0] != '\0' ? r->cmd.server : r->host);
}

void
redis_node_reconfigure(struct redis *r, const char *user,
    const char *password, struct redis_link_tls *tls, int verify)
{
	if (tls != NULL) {
		r->tlsconf = tls;	/* links keep theirs */
		r->tls_verify = verify;
	}
	if (redis_set_auth(r, user, password)) {
		redis_conn_retry(&r->cmd);
		redis_conn_retry(&r->sub);
	}
}

/* The ops of slots no longer gated go, in the order asked for. */
void
redis_node_release(struct redis *r)
{
	struct redis_ops	 go;
	struct redis_op		*op, *next;

	TAILQ_INIT(&go);
	for (op = TAILQ_FIRST(&r->gatedq); op != NULL; op = next) {
		next = TAILQ_NEXT(op, entry);
		if (redis_op_gated(op))
			continue;
		TAILQ_REMOVE(&r->gatedq, op, entry);
		TAILQ_INSERT_TAIL(&go, op, entry);
		op->list = &go;
	}
	while ((op = TAILQ_FIRST(&go)) != NULL) {
		redis_op_unlist(op);
		redis_op_submit(op);
	}
}

void
redis_node_joined(struct redis *r)
{
	if (r->grace_ms == 0 || r->ever_ready)
		return;
	r->ever_ready = 1;
	redis_outage_begin(r, clock_now_ms(), "a primary new to this "
	    "instance, connecting");
}

void
redis_node_resubscribe(struct redis *r)
{
	struct redis_watch	*w;

	RB_FOREACH(w, redis_watches, &r->watches) {
		if (w->count > 0 && w->state == REDIS_WATCH_IDLE)
			redis_watch_subscribe(r, w);
	}
}

/*
 * The node is out of the cluster's slot map (its slots went to others,
 * it is a replica now, or gone): its connections close, and are not
 * made again until a map names it again (redis_node_unpark). Only once
 * nothing is in flight there, waits there or is watched there (a MOVED,
 * or a lost connection, brings what was in flight back to be sent
 * elsewhere): until then 0, and the cluster tries again on its next map.
 */
int
redis_node_park(struct redis *r)
{
	struct redis_watch	*w;

	if (r->parked)
		return (1);
	if (!TAILQ_EMPTY(&r->inflight) || r->nwaiting > 0 ||
	    !TAILQ_EMPTY(&r->held) || !TAILQ_EMPTY(&r->gatedq) ||
	    !TAILQ_EMPTY(&r->retryq) || !TAILQ_EMPTY(&r->failq))
		return (0);
	RB_FOREACH(w, redis_watches, &r->watches) {
		if (w->count > 0)
			return (0);
	}
	log_info("eventlog=%s: not in the slot map any more: its "
	    "connections close", r->name);
	r->parked = 1;
	evtimer_del(r->cmd.timer_ev);
	evtimer_del(r->sub.timer_ev);
	/* An outage of a node nothing waits for is nobody's now. */
	r->outage_ms = 0;
	r->stalled = r->behind = r->expired = 0;
	evtimer_del(r->grace_ev);
	redis_conn_drop(&r->cmd, "out of the slot map");
	redis_conn_drop(&r->sub, "out of the slot map");
	r->cmd.state = r->sub.state = REDIS_CONN_DOWN;
	return (1);
}

/*
 * A map names the node again: it connects (after redis_node_park), its
 * subscription connection too if it ever had one or a watch waits for
 * it; the watches then subscribe as the connection is set up.
 */
void
redis_node_unpark(struct redis *r)
{
	struct redis_watch	*w;
	int			 watched = 0;

	if (!r->parked)
		return;
	r->parked = 0;
	log_info("eventlog=%s: in the slot map again: connecting", r->name);
	r->cmd.backoff_ms = r->sub.backoff_ms = REDIS_BACKOFF_MIN_MS;
	r->cmd.why[0] = r->sub.why[0] = '\0';
	/* What is sent there meanwhile waits, as for a new primary. */
	if (r->grace_ms > 0 && r->ever_ready)
		redis_outage_begin(r, clock_now_ms(), "a primary back in the "
		    "slot map, connecting");
	redis_conn_connect(&r->cmd);
	RB_FOREACH(w, redis_watches, &r->watches) {
		if (w->count > 0)
			watched = 1;
	}
	if (r->sub.started || watched)
		redis_conn_connect(&r->sub);
}

int
redis_node_parked(const struct redis *r)
{
	return (r->parked);
}

unsigned int
redis_node_owned(const struct redis *r, unsigned int slot)
{
	return (r->owned != NULL ? r->owned[slot] : 0);
}

static int
redis_op_ticket_cmp(const void *a, const void *b)
{
	const struct redis_op	*x = *(struct redis_op *const *)a;
	const struct redis_op	*y = *(struct redis_op *const *)b;

	return (x->ticket < y->ticket ? -1 : x->ticket > y->ticket);
}

/*
 * The node has no slot any more (its primary failed over, or gave its
 * slots away): what waits on it (an outage's queue, ops held) goes to
 * the nodes of their slots now, in the order asked for. What is in
 * flight comes back as redirections, or, with the connection lost, to
 * the queue, and then here on the next map.
 */
void
redis_node_evict(struct redis *r)
{
	struct redis_op	**ops, *op;
	size_t		  n = 0, i;

	TAILQ_FOREACH(op, &r->held, entry)
		n++;
	TAILQ_FOREACH(op, &r->gatedq, entry)
		n++;
	TAILQ_FOREACH(op, &r->retryq, entry)
		n++;
	ops = xreallocarray(NULL, r->nwaiting + n + 1, sizeof *ops);
	n = 0;
	while ((op = TAILQ_FIRST(&r->waitq)) != NULL) {
		redis_op_unlist(op);
		ops[n++] = op;
	}
	while ((op = TAILQ_FIRST(&r->held)) != NULL) {
		redis_op_unlist(op);
		ops[n++] = op;
	}
	while ((op = TAILQ_FIRST(&r->gatedq)) != NULL) {
		redis_op_unlist(op);
		ops[n++] = op;
	}
	while ((op = TAILQ_FIRST(&r->retryq)) != NULL) {
		redis_op_unlist(op);
		ops[n++] = op;
	}
	if (n == 0) {
		free(ops);
		return;
	}
	log_info("eventlog=%s: no slot here any more: %zu waiting "
	    "operations go to the slots' new nodes", r->name, n);
	qsort(ops, n, sizeof *ops, redis_op_ticket_cmp);
	for (i = 0; i < n; i++) {
		op = ops[i];
		if (op->type == REDIS_OP_CREATE &&
		    RB_FIND(redis_creates, &r->creates, op) == op)
			RB_REMOVE(redis_creates, &r->creates, op);
		r->hooks->reroute(r->cluster, r, op);
	}
	free(ops);
}

const char *
redis_op_tag(const struct redis_op *op)
{
	return (op->sid != NULL ? op->sid : "");
}

void
redis_op_adopt(struct redis *to, struct redis_op *op, int asking)
{
	redis_op_disown(op);
	op->r = to;
	if (op->slot >= 0)
		to->owned[op->slot]++;
	op->asking = asking;
	op->link = NULL;
	if (op->type == REDIS_OP_CREATE)
		RB_INSERT(redis_creates, &to->creates, op);
	redis_op_submit(op);
}

/*
 * Never fails for want of a server: it connects in the background and
 * keeps trying; until then every operation answers UNAVAILABLE. Fails
 * for TLS files that cannot be used.
 */
void *
eventlog_redis_create(struct event_base *base, const struct conf *conf,
    const struct eventlog_ops **ops, char **cause)
{
	struct redis		*r;
	struct redis_link_tls	*tls = NULL;

	if ((conf->redis_kind == CONF_REDIS_TCP ||
	    conf->redis_kind == CONF_REDIS_TLS) &&
	    (conf->redis_host == NULL || conf->redis_port <= 0)) {
		xasprintf(cause, "the redis event log needs a host and port");
		return (NULL);
	}
	if (conf_redis_tls(conf) && (tls = redis_tls_new(conf, cause)) == NULL)
		return (NULL);
	r = redis_alloc(base);
	r->kind = conf->redis_kind;
	r->tls = tls != NULL;
	r->tlsconf = tls;
	r->tls_verify = conf->redis_tls_verify;
	if (conf->redis_name != NULL)
		r->name = xstrdup(conf->redis_name);
	else
		xasprintf(&r->name, "redis://%s:%d/%d", conf->redis_host,
		    conf->redis_port, conf->redis_db);
	if (r->kind == CONF_REDIS_TCP || r->kind == CONF_REDIS_TLS) {
		r->host = xstrdup(conf->redis_host);
		r->port = conf->redis_port;
	} else if (r->kind == CONF_REDIS_UNIX)
		r->path = xstrdup(conf->redis_path);
	else
		r->sentinel = redis_sentinel_create(base, r->name,
		    conf->redis_master, conf->redis_sentinels,
		    conf->nredis_sentinels, r->tlsconf, redis_switch_cb, r);
	if (r->sentinel != NULL)
		redis_sentinel_set_auth(r->sentinel,
		    conf_redis_sentinel_user(conf),
		    conf_redis_sentinel_password(conf));
	redis_set_auth(r, conf_redis_user(conf), conf_redis_password(conf));
	redis_settings(r, conf);
	redis_created(r);
	*ops = &redis_ops;
	return (r);
}
