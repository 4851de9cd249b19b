/*
 * Authorization: mcpd as an OAuth 2.1 resource server (MCP "Authorization",
 * RFC 9728, RFC 6750, RFC 8707, RFC 7662). This is the policy: which
 * tokens count, who they stand for (a principal), which scopes they carry,
 * and how a refusal is said (401 or 403, and its WWW-Authenticate), in
 * auth.c; JWT access tokens are auth_jwt.c's, introspection (RFC 7662)
 * auth_introspect.c's. The cryptography is jwt.c's, key sets jwks.c's,
 * outbound requests http_client.c's; sessions and HTTP are transport.c's,
 * which calls auth_check before it looks at a session.
 *
 * Tokens are never logged, stored or passed on: a check holds one only
 * while it runs, the introspection cache is keyed by its SHA-256, and a
 * principal keeps issuer, subject, client id, scopes, audiences and
 * expiry, and in memory only the token of the request it came with, for
 * a token exchange (credential.h), never sent anywhere else.
 *
 * Each endpoint (conf.h, endpoint PATH { }) is a resource of its own: a
 * check is for an endpoint's path (NULL: the default endpoint), whose
 * resource the token's aud must name, whose scopes it needs besides the
 * auth block's, and whose protected resource metadata its challenges
 * name.
 */
#ifndef MCPD_AUTH_H
#define MCPD_AUTH_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct conf;
struct event_base;
struct auth_principal;

enum auth_status {
	AUTH_OK,
	AUTH_MISSING,		/* no bearer token: 401 */
	AUTH_INVALID,		/* a token, not valid: 401 invalid_token */
	AUTH_FORBIDDEN,		/* valid, a scope missing: 403 */
	AUTH_UNAVAILABLE	/* cannot check now: 503 */
};

struct auth_result {
	enum auth_status	 status;
	struct auth_principal	*principal;	/* AUTH_OK: borrowed */
	const char		*description;	/* for people; static */
	const char		*scope;		/* AUTH_FORBIDDEN: needed */
	const char		*endpoint;	/* its path; NULL: default */
};

/*
 * The auth block's files (jwks_file, token_file), read and checked: 0, or
 * -1 with *cause (allocated). mcpd -t runs it; auth_init does too.
 */
int		 auth_check_files(const struct conf *, char **);
/* Takes up conf's auth block (none: auth_enabled() is 0). */
int		 auth_init(struct event_base *, const struct conf *, char **);
/* Checks still waiting are answered AUTH_UNAVAILABLE, now. */
void		 auth_shutdown(void);
int		 auth_enabled(void);

/*
 * Checks a request's Authorization header (NULL if none). cb runs exactly
 * once, on a later loop turn, with the result; the principal in it is
 * the callback's to auth_principal_ref if it keeps it.
 */
typedef void	 auth_check_cb(const struct auth_result *, void *);
void		 auth_check(const char *, const char *, auth_check_cb *,
		     void *);
size_t		 auth_pending(void);

/* WWW-Authenticate for a refusal (allocated), naming its endpoint's. */
char		*auth_challenge(const struct auth_result *);
/* The protected resource metadata (RFC 9728) of an endpoint's path. */
cJSON		*auth_metadata(const char *);
/*
 * The default endpoint's metadata paths on this server: base, then
 * suffixed with the resource's.
 */
const char	*auth_metadata_path(int);
/*
 * The endpoint block (its path) whose metadata is at path, or NULL: an
 * endpoint block's metadata is served where its resource says (RFC 9728).
 */
const char	*auth_metadata_endpoint(const char *);

/*
 * Whether a principal may use a tool, prompt, resource or template that
 * needs scope (NULL: none; 1 without auth), and the scopes to ask for
 * (allocated): the required ones, then scope. The caller knows the
 * item's scope (provider_tool_scope, provider_item_scope): authorization
 * asks no provider.
 */
int		 auth_scope_allowed(const struct auth_principal *,
		     const char *);
/* The same for an endpoint's path (its required scopes first). */
char		*auth_scopes_needed(const char *, const char *);

struct auth_principal *auth_principal_ref(struct auth_principal *);
void		 auth_principal_unref(struct auth_principal *);
/* Same issuer, subject and client id (scopes may differ). */
int		 auth_principal_same(const struct auth_principal *,
		     const struct auth_principal *);
const char	*auth_principal_issuer(const struct auth_principal *);
const char	*auth_principal_subject(const struct auth_principal *);
const char	*auth_principal_client_id(const struct auth_principal *);
int		 auth_principal_has_scope(const struct auth_principal *,
		     const char *);
/*
 * The bearer token of the request the principal came with (NULL: none:
 * a principal read back from a session's meta), and when the token
 * expires (wall-clock seconds, 0: unknown). For a token exchange only.
 */
const char	*auth_principal_token(const struct auth_principal *);
double		 auth_principal_expiry(const struct auth_principal *);
/* Whether the token's aud names resource (or it named no audience). */
int		 auth_principal_audience(const struct auth_principal *,
		     const char *);
/* Space-separated scopes (allocated). */
char		*auth_principal_scopes(const struct auth_principal *);
/* Who, without scopes, for a session's meta; and back (NULL: unreadable). */
cJSON		*auth_principal_json(const struct auth_principal *);
struct auth_principal *auth_principal_from_json(const cJSON *);
/* A principal from its parts (tests, static tokens). */
struct auth_principal *auth_principal_new(const char *, const char *,
		     const char *, const char *);

#endif
