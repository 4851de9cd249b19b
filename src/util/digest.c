/*
 * SHA-256 through OpenSSL, for what must be named or fingerprinted
 * without being kept: a limit's key in Redis (a subject may hold any
 * byte, and a hash tag's braces), the arguments of an audited call.
 */
#include <string.h>

#include <openssl/evp.h>

#include "digest.h"
#include "log.h"

void
digest_sha256(const void *data, size_t len, unsigned char *out)
{
	unsigned int	n = DIGEST_SHA256_LEN;

	if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1)
		fatalx("digest: SHA-256 failed");
}

void
digest_sha256_hex(const void *data, size_t len, char *hex, size_t n)
{
	static const char	 digits[] = "0123456789abcdef";
	unsigned char		 md[DIGEST_SHA256_LEN];
	size_t			 i;

	if (n > DIGEST_SHA256_LEN)
		n = DIGEST_SHA256_LEN;
	digest_sha256(data, len, md);
	for (i = 0; i < n; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[2 * n] = '\0';
}
