/*
 * The sentinels of a redis-sentinel:// event log: which server is the
 * primary of the service they monitor (asked of each sentinel in turn,
 * the one that answered last first), and, on one long-lived connection
 * to a sentinel, every +switch-master of that service as it happens. A
 * lost watch moves to the next sentinel, asking again first: a switch
 * made meanwhile is not missed.
 */
#ifndef MCPD_REDIS_SENTINEL_H
#define MCPD_REDIS_SENTINEL_H

#include <stddef.h>

struct conf_redis_node;
struct event_base;
struct redis_link_tls;
struct redis_sentinel;

/*
 * An answer: (host, port, NULL, arg), or (NULL, 0, why, arg) when no
 * sentinel named a primary.
 */
typedef void	(*redis_sentinel_found_cb)(const char *, int, const char *,
		    void *);
/* The sentinels switched the primary to (host, port). */
typedef void	(*redis_sentinel_switch_cb)(const char *, int, void *);

/*
 * name is for log lines; the nodes are copied; tls is used (not owned)
 * for every connection to a sentinel, NULL for none.
 */
struct redis_sentinel *redis_sentinel_create(struct event_base *,
		    const char *, const char *, const struct conf_redis_node *,
		    size_t, struct redis_link_tls *, redis_sentinel_switch_cb,
		    void *);
void		 redis_sentinel_free(struct redis_sentinel *);
/* The credentials (copied; NULL password: no AUTH) and TLS from now on. */
void		 redis_sentinel_set_auth(struct redis_sentinel *,
		    const char *, const char *);
void		 redis_sentinel_set_tls(struct redis_sentinel *,
		    struct redis_link_tls *);
/*
 * Asks which server is the primary: cb(arg) runs once, never inside this
 * call, unless redis_sentinel_cancel(cb, arg) comes first. Asks made
 * while one is under way share its answer.
 */
void		 redis_sentinel_ask(struct redis_sentinel *,
		    redis_sentinel_found_cb, void *);
void		 redis_sentinel_cancel(struct redis_sentinel *,
		    redis_sentinel_found_cb, void *);
/* The sentinel watching for switches ("host:port"), or NULL. */
const char	*redis_sentinel_watching(const struct redis_sentinel *);

#endif
