/*
 * JSON Web Tokens (RFC 7519) signed with JWS (RFC 7515), and the
 * cryptography they need, through OpenSSL 3 (beside seal.c's HMAC and
 * http_client.c's TLS, the only users of OpenSSL). Parsing a token checks its form only; what the claims
 * must say is auth.c's policy.
 *
 * Algorithms: RS256, PS256 (RSA, 2048 bits or more), ES256 (P-256) and
 * EdDSA (Ed25519). "none" and the HMAC algorithms are refused by name:
 * a resource server that knows only public keys must never treat one as
 * a shared secret.
 */
#ifndef MCPD_JWT_H
#define MCPD_JWT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum jwt_alg {
	JWT_RS256,
	JWT_PS256,
	JWT_ES256,
	JWT_EDDSA,
	JWT_ALG_MAX
};

/* The key types of RFC 7518 / RFC 8037 a key can be. */
enum jwt_kty {
	JWT_KTY_RSA,
	JWT_KTY_EC,
	JWT_KTY_OKP
};

struct jwt;
struct jwt_key;

/* The longest value the base64url decoder takes. */
#define JWT_B64_MAX	(1024 * 1024)

/* An algorithm's name as in a JOSE header; -1 for any other (refused). */
int		 jwt_alg_parse(const char *);
const char	*jwt_alg_name(enum jwt_alg);
enum jwt_kty	 jwt_alg_kty(enum jwt_alg);

/*
 * base64url without padding (RFC 7515, 2), at most JWT_B64_MAX bytes of
 * it: an allocated buffer, or NULL. base64.c decodes.
 */
unsigned char	*jwt_base64url_decode(const char *, size_t, size_t *);

/*
 * Public keys from their JWK members, already base64url-decoded: RSA from
 * n and e, EC from crv ("P-256"), x and y, OKP from crv ("Ed25519") and
 * x. NULL with *cause (static) when the key is not one mcpd accepts.
 */
struct jwt_key	*jwt_key_rsa(const unsigned char *, size_t,
		     const unsigned char *, size_t, const char **);
struct jwt_key	*jwt_key_ec(const char *, const unsigned char *, size_t,
		     const unsigned char *, size_t, const char **);
struct jwt_key	*jwt_key_okp(const char *, const unsigned char *, size_t,
		     const char **);
enum jwt_kty	 jwt_key_kty(const struct jwt_key *);
void		 jwt_key_free(struct jwt_key *);

/*
 * A compact JWS: three base64url parts, a JSON object header with a
 * supported alg, no crit and kid and typ strings if present, a JSON
 * object payload, neither holding a NUL character (raw or \u0000: cJSON
 * would cut the string at it). NULL with *cause (static) otherwise.
 */
struct jwt	*jwt_parse(const char *, size_t, const char **);
void		 jwt_free(struct jwt *);
enum jwt_alg	 jwt_alg(const struct jwt *);
const char	*jwt_kid(const struct jwt *);	/* NULL if none */
const char	*jwt_typ(const struct jwt *);	/* NULL if none */

/* Whether JSON text holds a NUL, raw or as a \u0000 escape. */
int		 jwt_json_has_nul(const char *, size_t);
const cJSON	*jwt_claims(const struct jwt *);
/* 0 when key (of the algorithm's type) verifies the signature. */
int		 jwt_verify(const struct jwt *, const struct jwt_key *);

/* Whether text looks like a compact JWS (two dots, base64url parts). */
int		 jwt_looks_like(const char *, size_t);

#define JWT_SHA256_LEN	32
void		 jwt_sha256(const void *, size_t,
		     unsigned char[JWT_SHA256_LEN]);
/* Constant-time comparison of two buffers of the same length. */
int		 jwt_equal(const void *, const void *, size_t);

#endif
