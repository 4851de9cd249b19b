/*
 * What the parts of authorization share (src/auth/ only), top down:
 *
 *	auth.c			the policy: where a token goes (static,
 *				JWT, introspection), token_file, the
 *				challenge, the metadata, scopes of items
 *	auth_jwt.c		JWT access tokens: keys (jwks_file, jwks_uri
 *				and its refresh), signature, claims
 *	auth_introspect.c	tokens the introspection endpoint vouches
 *				for (RFC 7662)
 *	auth_answer.c		how a check ends: on a later turn, once;
 *				counted while it waits (max_pending)
 *	auth_cache.c		answered tokens by their SHA-256
 *	auth_claim.c		what claims must say, for JWTs and
 *				introspection answers alike
 *	auth_principal.c	who a token stands for
 *	auth_trace.c		the spans of a check's outbound requests
 *	jwt.c, jwks.c		signatures and key sets (OpenSSL)
 *
 * auth.c makes a check (auth_answer_new) and ends it, or hands it to
 * auth_jwt_check or auth_introspect_check, which end it with
 * auth_answer_found or auth_answer, now or once what it waits for has
 * come (auth_answer_wait counts it meanwhile). A file calls only those
 * below it.
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
struct conf_endpoint;
struct event_base;
struct http_client;
struct trace_span;

#define AUTH_CLAIM_MAX		1024		/* bytes of iss, sub, ... */
#define AUTH_SCOPES_MAX		64		/* scopes kept of a token */
#define AUTH_AUD_MAX		16		/* audiences kept of a token */

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
	char			*token;		/* the request's, wiped */
	size_t			 token_len;
	char			*endpoint;	/* the request's path, or NULL */
	char			*resource;	/* its canonical URI */
	char			**scopes;	/* its own required scopes */
	size_t			 nscopes;
	char			*scope_text;
	struct trace_span	*span;		/* the check's */
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
	struct trace_span	*span;		/* the request's */
	struct auth_checks	 waiters;
	RB_ENTRY(auth_cache)	 tree;
	TAILQ_ENTRY(auth_cache)	 order;
};

/* auth.c */
char		*auth_endpoint_resource(const char *);
const struct conf_endpoint *auth_endpoint_block(const char *);

/*
 * auth_trace.c: the outbound request of a check (jwks_uri,
 * introspection) as a CLIENT span under the current one, its
 * traceparent header, and its end with the response.
 */
struct trace_span *auth_trace_request(const char *, const char *);
int		 auth_trace_header(const struct trace_span *, char *);
void		 auth_trace_response(struct trace_span *,
		     struct http_client *);

/* auth_answer.c */
void		 auth_answer_init(struct event_base *,
		     const struct conf_auth *);
struct auth_check *auth_answer_new(auth_check_cb *, void *);
void		 auth_answer(struct auth_check *, enum auth_status,
		     const char *);
void		 auth_answer_found(struct auth_check *,
		     struct auth_principal *);
int		 auth_answer_wait(struct auth_check *);
size_t		 auth_answer_pending(void);
char		*auth_answer_scopes(char *const *, size_t, const char *);

/* auth_principal.c */
void		 auth_principal_set_claims(struct auth_principal *,
		     const cJSON *, double);
struct auth_principal *auth_principal_with_token(
		     const struct auth_principal *, const char *, size_t);
void		 auth_answer_shutdown(void);

/* auth_cache.c */
void		 auth_cache_init(long long);
struct auth_cache *auth_cache_find(const unsigned char *);
struct auth_cache *auth_cache_new(const unsigned char *);
void		 auth_cache_remove(struct auth_cache *);
void		 auth_cache_forget_jwts(void);
void		 auth_cache_clear(void);

/* auth_claim.c */
int		 auth_claim_text(const cJSON *, const char *, const char **);
int		 auth_claim_who(const cJSON *, int, const char **,
		     const char **, const char **);
char		*auth_claim_scopes(const cJSON *);
int		 auth_claim_time(const cJSON *, const char *, double *);

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
