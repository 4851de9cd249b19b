/*
 * What the parts of authorization share (src/auth/ only): a check and
 * the cache of answered tokens, which auth.c keeps, and what auth_jwt.c
 * (JWT access tokens, key sets) and auth_introspect.c (RFC 7662) do with
 * them.
 */
#ifndef MCPD_AUTH_INT_H
#define MCPD_AUTH_INT_H

#include <sys/queue.h>
#include <sys/tree.h>

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "auth.h"
#include "jwt.h"

#define AUTH_CLAIM_MAX		1024		/* bytes of iss, sub, ... */

struct auth_cache;

struct auth_check {
	auth_check_cb		*cb;
	void			*arg;
	struct auth_result	 result;
	struct event		*ev;
	struct jwt		*jwt;		/* waiting for keys */
	struct auth_cache	*waiting;	/* for an introspection */
	int			 counted;	/* in auth.pending */
	unsigned char		 hash[JWT_SHA256_LEN];	/* the token's */
	char			*scope_text;
	TAILQ_ENTRY(auth_check)	 entry;		/* auth.checks */
	TAILQ_ENTRY(auth_check)	 wait;		/* a waiting list */
};
TAILQ_HEAD(auth_checks, auth_check);

/* An introspection answer, or one on its way, by the token's SHA-256. */
struct auth_cache {
	unsigned char		 hash[JWT_SHA256_LEN];
	struct auth_principal	*principal;	/* NULL: inactive */
	const char		*why;		/* inactive: why */
	int			 jwt;		/* a verified JWT */
	uint64_t		 expires_ms;	/* monotonic */
	struct http_client	*request;	/* on its way */
	struct auth_checks	 waiters;
	RB_ENTRY(auth_cache)	 tree;
	TAILQ_ENTRY(auth_cache)	 order;
};
RB_HEAD(auth_cache_tree, auth_cache);
TAILQ_HEAD(auth_cache_list, auth_cache);

struct auth_state {
	const struct conf	*conf;		/* the one auth started with */
	const struct conf_auth	*a;
	struct event_base	*base;
	char			*metadata_url;
	char			*metadata_path;
	struct jwks		*file_keys;
	struct jwks		*uri_keys;
	uint64_t		 uri_fetched_ms;
	uint64_t		 uri_refresh_ms;	/* for an unknown kid */
	int			 uri_refreshed;
	struct http_client	*uri_fetch;
	struct auth_checks	 key_waiters;
	struct auth_static	*statics;
	size_t			 nstatics;
	struct auth_checks	 checks;	/* every check not answered */
	size_t			 pending;
	struct auth_cache_tree	 cache;
	struct auth_cache_list	 cache_order;
	size_t			 ncache;
	uint64_t		 intro_second_ms; /* introspection_rate's */
	long long		 intro_count;	  /* new tokens asked in it */
};
extern struct auth_state auth;

RB_PROTOTYPE(auth_cache_tree, auth_cache, tree, auth_cache_cmp);

/* auth.c */
void		 auth_answer(struct auth_check *, enum auth_status,
		     const char *);
void		 auth_found(struct auth_check *, struct auth_principal *);
int		 auth_claim_text(const cJSON *, const char *, const char **);
int		 auth_claim_who(const cJSON *, int, const char **,
		     const char **, const char **);
int		 auth_aud_ok(const cJSON *);
char		*auth_claim_scopes(const cJSON *);
int		 auth_claim_time(const cJSON *, const char *, double *);
void		 auth_cache_remove(struct auth_cache *);
void		 auth_cache_room(void);
struct auth_cache *auth_cache_find(const unsigned char *);

/* auth_jwt.c */
void		 auth_jwt(struct auth_check *, const char *, size_t);
void		 auth_jwks_fetch(void);

/* auth_introspect.c */
void		 auth_introspect(struct auth_check *, const char *, size_t,
		     const unsigned char [JWT_SHA256_LEN]);

#endif
