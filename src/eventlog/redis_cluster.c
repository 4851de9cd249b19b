/*
 * Redis Cluster's rules as the redis event log needs them: the slot of a
 * key, the slot map the cluster answers, the redirections (see
 * redis_cluster.h). No I/O.
 *
 * A key's slot is CRC16 (XMODEM: polynomial 0x1021, initial value 0)
 * of the key, or of what is between its first '{' and the first '}'
 * after it when that is not empty, modulo 16384. Every key of a session
 * has the tag {SID}, so they share a slot (redis_script.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis_cluster.h"
#include "xmalloc.h"

static uint16_t	redis_cluster_crc_table[256];
static int	redis_cluster_crc_ready;

static void
redis_cluster_crc_init(void)
{
	uint16_t	crc;
	int		i, j;

	for (i = 0; i < 256; i++) {
		crc = (uint16_t)(i << 8);
		for (j = 0; j < 8; j++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 :
			    crc << 1);
		redis_cluster_crc_table[i] = crc;
	}
	redis_cluster_crc_ready = 1;
}

static uint16_t
redis_cluster_crc16(const char *p, size_t len)
{
	uint16_t	crc = 0;
	size_t		i;

	if (!redis_cluster_crc_ready)
		redis_cluster_crc_init();
	for (i = 0; i < len; i++)
		crc = (uint16_t)((crc << 8) ^ redis_cluster_crc_table[((crc >>
		    8) ^ (unsigned char)p[i]) & 0xff]);
	return (crc);
}

/*
 * The slots of tags asked for lately. Each operation asks for its
 * session's slot twice (to pick its node, then on the node) and a
 * stream's appends ask for the same session's again and again; CRC16 over
 * a session id was the costliest of mcpd's own functions in a profile of
 * events streamed on a cluster. Indexed by two bytes of the tag (session
 * ids are random), a hit checked against the whole tag. Event loop only,
 * as the table is.
 */
#define REDIS_CLUSTER_MEMO	64
#define REDIS_CLUSTER_MEMO_LEN	48

struct redis_cluster_memo {
	size_t		len;		/* 0: empty */
	unsigned int	slot;
	char		tag[REDIS_CLUSTER_MEMO_LEN];
};
static struct redis_cluster_memo redis_cluster_memo[REDIS_CLUSTER_MEMO];

unsigned int
redis_cluster_keyslot(const char *key, size_t len)
{
	struct redis_cluster_memo	*m = NULL;
	const char			*open, *close;
	unsigned int			 slot;

	open = memchr(key, '{', len);
	if (open != NULL) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
		if (close != NULL && close > open + 1) {
			key = open + 1;
			len = (size_t)(close - key);
		}
	}
	if (len > 0 && len <= REDIS_CLUSTER_MEMO_LEN) {
		m = &redis_cluster_memo[((unsigned char)key[len - 1] * 31u +
		    (unsigned char)key[len / 2] + len) % REDIS_CLUSTER_MEMO];
		if (m->len == len && memcmp(m->tag, key, len) == 0)
			return (m->slot);
	}
	slot = redis_cluster_crc16(key, len) & (REDIS_CLUSTER_SLOTS - 1);
	if (m != NULL) {
		memcpy(m->tag, key, len);
		m->len = len;
		m->slot = slot;
	}
	return (slot);
}

/* Answers. */

static int
redis_cluster_is(const redisReply *r, const char *word)
{
	return ((r->type == REDIS_REPLY_STRING ||
	    r->type == REDIS_REPLY_STATUS) && r->len == strlen(word) &&
	    strncasecmp(r->str, word, r->len) == 0);
}

/* A field of a flat name, value... array; NULL if missing. */
static const redisReply *
redis_cluster_field(const redisReply *a, const char *name)
{
	size_t	i;

	if (a->type != REDIS_REPLY_ARRAY || a->elements % 2 != 0)
		return (NULL);
	for (i = 0; i + 1 < a->elements; i += 2) {
		if (redis_cluster_is(a->element[i], name))
			return (a->element[i + 1]);
	}
	return (NULL);
}

static int
redis_cluster_int(const redisReply *r, long long min, long long max,
    long long *v)
{
	char		*end;
	long long	 n;

	if (r == NULL)
		return (-1);
	if (r->type == REDIS_REPLY_INTEGER)
		n = r->integer;
	else if (r->type == REDIS_REPLY_STRING && r->len > 0 && r->len < 24) {
		n = strtoll(r->str, &end, 10);
		if (end != r->str + r->len)
			return (-1);
	} else
		return (-1);
	if (n < min || n > max)
		return (-1);
	*v = n;
	return (0);
}

/* A usable host: said, not "?", short enough. */
static int
redis_cluster_host(const redisReply *r, char *host, size_t size)
{
	if (r == NULL || r->type != REDIS_REPLY_STRING || r->len == 0 ||
	    r->len >= size || (r->len == 1 && r->str[0] == '?') ||
	    strlen(r->str) != r->len)
		return (-1);
	memcpy(host, r->str, r->len + 1);
	return (0);
}

static void
redis_cluster_map_init(struct redis_cluster_map *map)
{
	int	i;

	map->nnodes = 0;
	map->covered = 0;
	for (i = 0; i < REDIS_CLUSTER_SLOTS; i++)
		map->slot[i] = -1;
}

int
redis_cluster_find(const struct redis_cluster_map *map, const char *host,
    int port)
{
	int	i;

	for (i = 0; i < map->nnodes; i++) {
		if (map->nodes[i].port == port &&
		    strcmp(map->nodes[i].host, host) == 0)
			return (i);
	}
	return (-1);
}

/* The index of a primary, added if new; -1 when the map is full. */
static int
redis_cluster_add(struct redis_cluster_map *map,
    const struct redis_cluster_node *n)
{
	int	i;

	if ((i = redis_cluster_find(map, n->host, n->port)) != -1)
		return (i);
	if (map->nnodes == REDIS_CLUSTER_NODES_MAX)
		return (-1);
	map->nodes[map->nnodes] = *n;
	return (map->nnodes++);
}

/* Slots start..end are node i's: -1 if they overlap slots already had. */
static int
redis_cluster_assign(struct redis_cluster_map *map, long long start,
    long long end, int i)
{
	long long	s;

	if (start > end)
		return (-1);
	for (s = start; s <= end; s++) {
		if (map->slot[s] != -1)
			return (-1);
		map->slot[s] = (int16_t)i;
		map->covered++;
	}
	return (0);
}

/* A node of CLUSTER SHARDS: 1 if it is the shard's usable primary. */
static int
redis_cluster_shard_node(const redisReply *a, int tls, const char *seed_host,
    int seed_port, struct redis_cluster_node *n)
{
	const redisReply	*id, *role, *health;
	long long		 port;

	role = redis_cluster_field(a, "role");
	if (role == NULL || !redis_cluster_is(role, "master"))
		return (0);
	memset(n, 0, sizeof *n);
	id = redis_cluster_field(a, "id");
	if (id != NULL && id->type == REDIS_REPLY_STRING &&
	    id->len < sizeof n->id)
		memcpy(n->id, id->str, id->len + 1);
	health = redis_cluster_field(a, "health");
	if (health != NULL && !redis_cluster_is(health, "online"))
		return (0);	/* failed, or loading: not serving */
	if ((!tls || redis_cluster_int(redis_cluster_field(a, "tls-port"), 1,
	    65535, &port) != 0) &&
	    redis_cluster_int(redis_cluster_field(a, "port"), 1, 65535,
	    &port) != 0)
		return (0);
	n->port = (int)port;
	if (redis_cluster_host(redis_cluster_field(a, "endpoint"), n->host,
	    sizeof n->host) != 0 &&
	    redis_cluster_host(redis_cluster_field(a, "ip"), n->host,
	    sizeof n->host) != 0) {
		if (seed_host == NULL || strlen(seed_host) >= sizeof n->host)
			return (0);
		/* "?": the node does not know its address; we reached it. */
		strlcpy(n->host, seed_host, sizeof n->host);
		n->port = seed_port;
	}
	return (1);
}

int
redis_cluster_shards(const redisReply *reply, int tls, const char *seed_host,
    int seed_port, struct redis_cluster_map *map, char **cause)
{
	const redisReply		*shard, *slots, *nodes;
	struct redis_cluster_node	 n;
	long long			 start, end;
	size_t				 i, j;
	int				 at, found;

	redis_cluster_map_init(map);
	if (reply->type == REDIS_REPLY_ERROR) {
		xasprintf(cause, "CLUSTER SHARDS: %.200s", reply->str);
		return (-1);
	}
	if (reply->type != REDIS_REPLY_ARRAY)
		goto bad;
	for (i = 0; i < reply->elements; i++) {
		shard = reply->element[i];
		slots = redis_cluster_field(shard, "slots");
		nodes = redis_cluster_field(shard, "nodes");
		if (slots == NULL || nodes == NULL ||
		    slots->type != REDIS_REPLY_ARRAY || slots->elements % 2 ||
		    nodes->type != REDIS_REPLY_ARRAY)
			goto bad;
		if (slots->elements == 0)
			continue;	/* a shard with no slots (yet) */
		found = 0;
		for (j = 0; j < nodes->elements && !found; j++)
			found = redis_cluster_shard_node(nodes->element[j],
			    tls, seed_host, seed_port, &n);
		if (!found)
			continue;	/* its primary is down: not served */
		if ((at = redis_cluster_add(map, &n)) == -1) {
			xasprintf(cause, "more than %d primaries",
			    REDIS_CLUSTER_NODES_MAX);
			return (-1);
		}
		for (j = 0; j < slots->elements; j += 2) {
			if (redis_cluster_int(slots->element[j], 0,
			    REDIS_CLUSTER_SLOTS - 1, &start) != 0 ||
			    redis_cluster_int(slots->element[j + 1], 0,
			    REDIS_CLUSTER_SLOTS - 1, &end) != 0 ||
			    redis_cluster_assign(map, start, end, at) != 0)
				goto bad;
		}
	}
	return (0);

bad:
	redis_cluster_map_init(map);
	xasprintf(cause, "CLUSTER SHARDS: an answer of another shape");
	return (-1);
}

int
redis_cluster_slots(const redisReply *reply, const char *seed_host,
    int seed_port, struct redis_cluster_map *map, char **cause)
{
	const redisReply		*range, *primary;
	struct redis_cluster_node	 n;
	long long			 start, end, port;
	size_t				 i;
	int				 at;

	redis_cluster_map_init(map);
	if (reply->type == REDIS_REPLY_ERROR) {
		xasprintf(cause, "CLUSTER SLOTS: %.200s", reply->str);
		return (-1);
	}
	if (reply->type != REDIS_REPLY_ARRAY)
		goto bad;
	for (i = 0; i < reply->elements; i++) {
		range = reply->element[i];
		if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
		    redis_cluster_int(range->element[0], 0,
		    REDIS_CLUSTER_SLOTS - 1, &start) != 0 ||
		    redis_cluster_int(range->element[1], 0,
		    REDIS_CLUSTER_SLOTS - 1, &end) != 0)
			goto bad;
		primary = range->element[2];
		if (primary->type != REDIS_REPLY_ARRAY ||
		    primary->elements < 2 ||
		    redis_cluster_int(primary->element[1], 1, 65535,
		    &port) != 0)
			goto bad;
		memset(&n, 0, sizeof n);
		n.port = (int)port;
		if (redis_cluster_host(primary->element[0], n.host,
		    sizeof n.host) != 0) {
			if (seed_host == NULL ||
			    strlen(seed_host) >= sizeof n.host)
				goto bad;
			strlcpy(n.host, seed_host, sizeof n.host);
			n.port = seed_port;
		}
		if (primary->elements >= 3 &&
		    primary->element[2]->type == REDIS_REPLY_STRING &&
		    primary->element[2]->len < sizeof n.id)
			memcpy(n.id, primary->element[2]->str,
			    primary->element[2]->len + 1);
		if ((at = redis_cluster_add(map, &n)) == -1) {
			xasprintf(cause, "more than %d primaries",
			    REDIS_CLUSTER_NODES_MAX);
			return (-1);
		}
		if (redis_cluster_assign(map, start, end, at) != 0)
			goto bad;
	}
	return (0);

bad:
	redis_cluster_map_init(map);
	xasprintf(cause, "CLUSTER SLOTS: an answer of another shape");
	return (-1);
}

enum redis_cluster_redirect
redis_cluster_redirect(const redisReply *reply, unsigned int *slot,
    char *host, size_t size, int *port)
{
	enum redis_cluster_redirect	 kind;
	const char			*p, *end, *colon, *h;
	char				*e;
	unsigned long			 v;
	size_t				 hlen;

	if (reply->type != REDIS_REPLY_ERROR)
		return (REDIS_CLUSTER_NONE);
	p = reply->str;
	end = p + reply->len;
	if (reply->len > 6 && strncmp(p, "MOVED ", 6) == 0) {
		kind = REDIS_CLUSTER_MOVED;
		p += 6;
	} else if (reply->len > 4 && strncmp(p, "ASK ", 4) == 0) {
		kind = REDIS_CLUSTER_ASK;
		p += 4;
	} else
		return (REDIS_CLUSTER_NONE);
	if (*p < '0' || *p > '9')
		return (REDIS_CLUSTER_NONE);
	v = strtoul(p, &e, 10);
	if (*e != ' ' || v >= REDIS_CLUSTER_SLOTS)
		return (REDIS_CLUSTER_NONE);
	p = e + 1;
	/* HOST:PORT, the last colon the port's (IPv6 hosts have some). */
	colon = NULL;
	for (h = p; h < end; h++) {
		if (*h == ':')
			colon = h;
	}
	if (colon == NULL || colon + 1 >= end)
		return (REDIS_CLUSTER_NONE);
	h = p;
	hlen = (size_t)(colon - p);
	if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
		h++;
		hlen -= 2;
	}
	if (hlen >= size)
		return (REDIS_CLUSTER_NONE);
	v = 0;
	for (p = colon + 1; p < end; p++) {
		if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned long)(*p -
		    '0')) > 65535)
			return (REDIS_CLUSTER_NONE);
	}
	if (v == 0)
		return (REDIS_CLUSTER_NONE);
	*slot = (unsigned int)strtoul(reply->str + (kind ==
	    REDIS_CLUSTER_MOVED ? 6 : 4), NULL, 10);
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (int)v;
	return (kind);
}
