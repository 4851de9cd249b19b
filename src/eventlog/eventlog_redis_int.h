/*
 * Between the redis event log (eventlog_redis.c: one server, or one
 * primary of a cluster, with its connections, outages and watches) and
 * the Redis Cluster client above it (eventlog_redis_cluster.c: the slot
 * map, one eventlog_redis per primary, redirections). Private to the
 * two files. The cluster calls the node's functions below; a node calls
 * back through the hooks it was given.
 */
#ifndef MCPD_EVENTLOG_REDIS_INT_H
#define MCPD_EVENTLOG_REDIS_INT_H

#include <stdint.h>

struct conf;
struct event_base;
struct eventlog_ops;
struct redis;
struct redis_cluster;
struct redis_link_tls;
struct redis_node_hooks;
struct redis_op;

/* eventlog_redis.c, for the cluster. */

/* The layout a node found (-1: none, and why). */
typedef void	(*redis_node_layout_cb)(struct redis *, int, const char *,
		    void *);

/*
 * The log of one primary of cluster c, at host:port, named name in log
 * lines; its settings from conf, or (conf NULL) the same as model's.
 * tls (may be NULL) is the cluster's: borrowed, never freed here. With
 * connect, connects in the background as eventlog_redis_create does;
 * else it only holds settings for others.
 */
struct redis	*redis_node_new(struct redis_cluster *,
		    const struct redis_node_hooks *, struct event_base *,
		    const struct conf *, const struct redis *, const char *,
		    const char *, int, struct redis_link_tls *, int);
/* Its operations (ops->free frees it). */
const struct eventlog_ops *redis_node_ops(void);
/* Where it is, "host:port". */
const char	*redis_node_server(const struct redis *);
/* Its credentials and TLS settings from now on (a reload). */
void		 redis_node_reconfigure(struct redis *, const char *,
		    const char *, struct redis_link_tls *, int);
/*
 * op, which a node redirected, goes to node to (with ASKING first when
 * asking): sent there in its turn, or held there behind its create.
 */
void		 redis_op_adopt(struct redis *, struct redis_op *, int);
/*
 * The layout check (the script's layout op) on node, once its command
 * connection is ready: -1 if it cannot be sent now, else cb hears it.
 */
int		 redis_node_layout(struct redis *, redis_node_layout_cb,
		    void *);
/*
 * node is out of the slot map: its connections close once nothing is in
 * flight, waiting or watched there (1), else not yet (0).
 */
int		 redis_node_park(struct redis *);
/* node is in the map again: it connects. */
void		 redis_node_unpark(struct redis *);
int		 redis_node_parked(const struct redis *);
/* Sends what node holds that may go now (a slot no longer gated). */
void		 redis_node_release(struct redis *);
/*
 * node joins a cluster that was ready: until it is, its operations wait
 * as in an outage (eventlog_outage_grace), not fail.
 */
void		 redis_node_joined(struct redis *);
/*
 * Subscribes again what a node dropped (the slot it left may be back,
 * or the map said so before the node did).
 */
void		 redis_node_resubscribe(struct redis *);
/* How many ops of slot node has (sent, waiting, held). */
unsigned int	 redis_node_owned(const struct redis *, unsigned int);
/* node lost its slots: what waits on it goes where the map says. */
void		 redis_node_evict(struct redis *);
/* The tag that places op ("SID", "keyring"...). */
const char	*redis_op_tag(const struct redis_op *);

/*
 * What a node tells its cluster (eventlog_redis_cluster.c gives them to
 * redis_node_new: a table, so the two files do not call each other).
 *   redirected	a node answered MOVED (kind 1) or ASK (kind 2) for op's
 *		slot: op is no longer the node's (left: how many ops of the
 *		slot it still has); the cluster sends it where Redis said.
 *   changed	something says the slot map may have changed: a node's
 *		connection lost, a subscription dropped or refused.
 *   ready	a node's command connection is ready: the cluster may be.
 *   ticket	the order of the cluster's ops: one more ticket.
 *   gated	whether ops of slot must wait at node: the slot moved, and
 *		the node it was on still has ops of it (they come back
 *		redirected, and go first).
 *   drained	node has no op of slot left.
 *   reroute	op, which waited on a node the map left, goes to its
 *		slot's node now.
 */
struct redis_node_hooks {
	void		(*redirected)(struct redis_cluster *,
			    struct redis *, struct redis_op *, int,
			    unsigned int, const char *, int, unsigned int);
	void		(*changed)(struct redis_cluster *, const char *);
	void		(*ready)(struct redis_cluster *, struct redis *);
	uint64_t	(*ticket)(struct redis_cluster *);
	int		(*gated)(struct redis_cluster *, struct redis *,
			    unsigned int);
	void		(*drained)(struct redis_cluster *, struct redis *,
			    unsigned int);
	void		(*reroute)(struct redis_cluster *, struct redis *,
			    struct redis_op *);
};

#endif
