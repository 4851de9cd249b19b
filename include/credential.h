/*
 * Credentials toward an HTTP peer mcpd calls (an upstream with a url, or
 * any outbound request on a caller's behalf): what the conf's
 * credentials { } block says to send, turned into request headers. Never
 * the caller's own token: MCP's authorization specification forbids
 * passing it through.
 *
 *  - header NAME FILE: static headers, their values read with the
 *    configuration (a reload takes up new ones: credential_update);
 *  - grant client_credentials: mcpd's own bearer token from the token
 *    endpoint (RFC 6749 4.4), kept until it expires and fetched again
 *    before it does;
 *  - grant token_exchange: for a principal, a token on its behalf (RFC
 *    8693: its token as the subject_token), kept per principal until it
 *    expires and never past the principal's own token's expiry; for no
 *    principal (what mcpd sends on nobody's behalf), mcpd's own
 *    client_credentials token.
 *
 * credential_get asks for the headers of one request: its callback runs
 * exactly once, on a later loop turn, never inside a credential_* call,
 * with the headers (valid during the callback) or, with none, the reason
 * (an OAuth error code and a description for people, never a token).
 * Concurrent asks for the same token wait for one request to the token
 * endpoint. credential_cancel makes a pending ask's callback run (on a
 * later turn) with the error "cancelled".
 */
#ifndef MCPD_CREDENTIAL_H
#define MCPD_CREDENTIAL_H

#include <stddef.h>

struct auth_principal;
struct conf;
struct conf_credentials;
struct credential;
struct credential_ask;
struct http_client_header;

struct credential_error {
	const char	*error;		/* OAuth error code, or mcpd's */
	const char	*description;	/* for people, bounded */
};

typedef void	credential_cb(const struct http_client_header *, size_t,
		    const struct credential_error *, void *);

/*
 * The credentials of block cc of conf (a reference to conf is held), for
 * the peer named name in log lines. NULL cc: none (no headers).
 */
struct credential *credential_new(const char *, const struct conf *,
		     const struct conf_credentials *);
/*
 * A reload: the block of the new conf. Tokens are kept unless what they
 * were asked with changed (the token endpoint, the client, the grant's
 * parameters).
 */
void		 credential_update(struct credential *, const struct conf *,
		     const struct conf_credentials *);
struct credential *credential_ref(struct credential *);
void		 credential_unref(struct credential *);

struct credential_ask *credential_get(struct credential *,
		     struct auth_principal *, credential_cb *, void *);
void		 credential_cancel(struct credential_ask *);
/*
 * The peer refused the token sent on behalf of who (NULL: mcpd's own):
 * it is forgotten, so the next ask fetches another.
 */
void		 credential_refused(struct credential *,
		     const struct auth_principal *);
/* Whether the credentials give a bearer token (a grant). */
int		 credential_has_grant(const struct credential *);
/* Tokens kept over every credential, for /metrics. */
size_t		 credential_cached(void);

/* application/x-www-form-urlencoded of len bytes (allocated). */
char		*credential_form(const char *, size_t);

#endif
