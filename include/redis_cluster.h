/*
 * What the redis event log needs to know of Redis Cluster, with no I/O:
 * the slot of a key (CRC16 with the hash-tag rule), the slot map as the
 * cluster tells it (CLUSTER SHARDS, or CLUSTER SLOTS before Redis 7), and
 * the redirections a node answers (MOVED, ASK). Testable without a server.
 */
#ifndef MCPD_REDIS_CLUSTER_H
#define MCPD_REDIS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

struct redisReply;

#define REDIS_CLUSTER_SLOTS	16384
/* Primaries one map holds: a cluster this size is far past mcpd's. */
#define REDIS_CLUSTER_NODES_MAX	256
#define REDIS_CLUSTER_HOST_MAX	255

/* The slot of a key: of its hash tag {...} when it has a non-empty one. */
unsigned int	 redis_cluster_keyslot(const char *, size_t);

/* A primary: where it is and its node id ("" when not said). */
struct redis_cluster_node {
	char		 host[REDIS_CLUSTER_HOST_MAX + 1];
	int		 port;
	char		 id[41];
};

/*
 * The slot map: every primary that serves slots, and for every slot the
 * index of its primary in nodes, or -1 (a slot nobody serves: the
 * cluster is not whole).
 */
struct redis_cluster_map {
	struct redis_cluster_node	 nodes[REDIS_CLUSTER_NODES_MAX];
	int				 nnodes;
	int16_t				 slot[REDIS_CLUSTER_SLOTS];
	int				 covered;	/* slots served */
};

/*
 * Builds the map from a CLUSTER SHARDS answer (Redis 7): the primary of
 * each shard that has slots (with tls, its tls-port when it has one).
 * A shard whose primary is not "online" is left out (its slots are not
 * served until a replica takes over). A primary with no address ("?")
 * is the node that answered, at seed_host:seed_port. -1 with *cause
 * (allocated) if the answer has another shape.
 */
int		 redis_cluster_shards(const struct redisReply *, int,
		     const char *, int, struct redis_cluster_map *, char **);
/* The same from CLUSTER SLOTS (Redis 3 to 6, and 7). */
int		 redis_cluster_slots(const struct redisReply *,
		     const char *, int, struct redis_cluster_map *, char **);
/*
 * The index of (host, port) in the map, -1 if it is not there.
 */
int		 redis_cluster_find(const struct redis_cluster_map *,
		     const char *, int);

/* What an error reply says of where the key is. */
enum redis_cluster_redirect {
	REDIS_CLUSTER_NONE,	/* not a redirection */
	REDIS_CLUSTER_MOVED,	/* the slot is the node's for good */
	REDIS_CLUSTER_ASK	/* this command only, after ASKING */
};

/*
 * Parses "MOVED SLOT HOST:PORT" or "ASK SLOT HOST:PORT" (an IPv6 host
 * is in brackets or not; an empty host means the node that answered, as
 * Redis says when it does not know its own address: host is then "").
 */
enum redis_cluster_redirect redis_cluster_redirect(const struct redisReply *,
		    unsigned int *, char *, size_t, int *);

#endif
