/*
 * What the parts of authorization share (src/auth/ only):
 *
 *	auth.c			the policy: principals, static tokens, a
 *				check and its answer, what claims must say,
 *				the cache of answered tokens, the challenge
 *	auth_jwt.c		JWT access tokens: keys (jwks_file, jwks_uri
 *				and its refresh), signature, claims
 *	auth_introspect.c	tokens the introspection endpoint vouches
 *				for (RFC 7662)
 *
 * A check is auth.c's; the other two take it (auth_jwt_check,
 * auth_introspect_check) and end it with auth_found or auth_answer, now
 * or once what it waits for has come (auth_wait counts it meanwhile).
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

struct conf_auth;
struct http_client;

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

/*
 * A verified JWT, an introspection answer, or one on its way, by the
 * token's SHA-256.
 */
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

/* auth.c */
void		 auth_answer(struct auth_check *, enum auth_status,
		     const char *);
void		 auth_found(struct auth_check *, struct auth_principal *);
int		 auth_wait(struct auth_check *);
int		 auth_claim_text(const cJSON *, const char *, const char **);
int		 auth_claim_who(const cJSON *, int, const char **,
		     const char **, const char **);
int		 auth_claim_aud(const cJSON *);
char		*auth_claim_scopes(const cJSON *);
int		 auth_claim_time(const cJSON *, const char *, double *);
struct auth_cache *auth_cache_find(const unsigned char *);
struct auth_cache *auth_cache_new(const unsigned char *);
void		 auth_cache_remove(struct auth_cache *);
void		 auth_cache_forget_jwts(void);

/* auth_jwt.c */
int		 auth_jwt_init(const struct conf_auth *, char **);
size_t		 auth_jwt_file_keys(void);
void		 auth_jwt_start(void);
void		 auth_jwt_check(struct auth_check *, const char *, size_t);
void		 auth_jwt_shutdown(void);

/* auth_introspect.c */
void		 auth_introspect_init(const struct conf_auth *);
void		 auth_introspect_check(struct auth_check *, const char *,
		     size_t);
void		 auth_introspect_shutdown(void);

#endif
