/*
 * The cache of answered tokens, by the token's SHA-256 (never the
 * token): verified JWTs (auth_jwt.c) and introspection answers, or
 * questions under way (auth_introspect.c). At most cache_max entries:
 * the expired go first, then the oldest answered.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdlib.h>
#include <string.h>

#include "auth_int.h"
#include "clock.h"
#include "xmalloc.h"

RB_HEAD(auth_cache_tree, auth_cache);
TAILQ_HEAD(auth_cache_list, auth_cache);

static struct {
	struct auth_cache_tree	 tree;
	struct auth_cache_list	 order;		/* oldest first */
	size_t			 n;
	long long		 max;		/* cache_max */
} cache;

static int
auth_cache_cmp(struct auth_cache *x, struct auth_cache *y)
{
	return (memcmp(x->hash, y->hash, sizeof x->hash));
}
RB_GENERATE_STATIC(auth_cache_tree, auth_cache, tree, auth_cache_cmp);

void
auth_cache_remove(struct auth_cache *e)
{
	RB_REMOVE(auth_cache_tree, &cache.tree, e);
	TAILQ_REMOVE(&cache.order, e, order);
	cache.n--;
	auth_principal_unref(e->principal);
	free(e);
}

/* The entry of a token's hash, unless it has expired. */
struct auth_cache *
auth_cache_find(const unsigned char *hash)
{
	struct auth_cache	 find, *e;

	memcpy(find.hash, hash, sizeof find.hash);
	if ((e = RB_FIND(auth_cache_tree, &cache.tree, &find)) != NULL &&
	    e->request == NULL && e->expires_ms <= clock_now_ms()) {
		auth_cache_remove(e);
		e = NULL;
	}
	return (e);
}

/* Room for one more entry: the expired go, then the oldest answered. */
static void
auth_cache_room(void)
{
	struct auth_cache	*e, *next;
	uint64_t		 now = clock_now_ms();

	TAILQ_FOREACH_SAFE(e, &cache.order, order, next) {
		if ((long long)cache.n < cache.max)
			return;
		if (e->request == NULL && e->expires_ms <= now)
			auth_cache_remove(e);
	}
	TAILQ_FOREACH_SAFE(e, &cache.order, order, next) {
		if ((long long)cache.n < cache.max)
			return;
		if (e->request == NULL)
			auth_cache_remove(e);
	}
}

/* A new entry for a token's hash, to be filled in by the caller. */
struct auth_cache *
auth_cache_new(const unsigned char *hash)
{
	struct auth_cache	*e;

	auth_cache_room();
	e = xcalloc(1, sizeof *e);
	memcpy(e->hash, hash, sizeof e->hash);
	TAILQ_INIT(&e->waiters);
	RB_INSERT(auth_cache_tree, &cache.tree, e);
	TAILQ_INSERT_TAIL(&cache.order, e, order);
	cache.n++;
	return (e);
}

/* The verified JWTs go (a new key set): they are verified again. */
void
auth_cache_forget_jwts(void)
{
	struct auth_cache	*e, *next;

	TAILQ_FOREACH_SAFE(e, &cache.order, order, next) {
		if (e->jwt)
			auth_cache_remove(e);
	}
}

void
auth_cache_init(long long max)
{
	RB_INIT(&cache.tree);
	TAILQ_INIT(&cache.order);
	cache.n = 0;
	cache.max = max;
}

/* Every entry goes (shutdown). */
void
auth_cache_clear(void)
{
	struct auth_cache	*e;

	while ((e = TAILQ_FIRST(&cache.order)) != NULL)
		auth_cache_remove(e);
}
