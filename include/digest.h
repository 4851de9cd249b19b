/* SHA-256 of bytes (digest.c), for names and fingerprints, never secrets. */
#ifndef MCPD_DIGEST_H
#define MCPD_DIGEST_H

#include <stddef.h>

#define DIGEST_SHA256_LEN	32
#define DIGEST_SHA256_HEX	(2 * DIGEST_SHA256_LEN + 1)

void	digest_sha256(const void *, size_t, unsigned char *);
/* The first n bytes of the digest in lower-case hex, NUL-terminated. */
void	digest_sha256_hex(const void *, size_t, char *, size_t);

#endif
