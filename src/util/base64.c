/*
 * Base64 (RFC 4648), standard and URL-safe alphabets: the =?base64?...?=
 * sentinel of the 2026-07-28 request headers (standard, padded) and the
 * signed requestState of MRTR (URL-safe, unpadded).
 */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "xmalloc.h"

static const char base64_std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char base64_url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* A NUL-terminated encoding; url: URL-safe alphabet, no padding. */
char *
base64_encode(const void *data, size_t len, int url)
{
	const unsigned char	*p = data;
	const char		*alpha = url ? base64_url : base64_std;
	char			*out, *o;
	size_t			 i;
	unsigned int		 v;

	out = o = xmalloc((len + 2) / 3 * 4 + 1);
	for (i = 0; i + 2 < len; i += 3) {
		v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*o++ = alpha[v >> 18 & 63];
		*o++ = alpha[v >> 12 & 63];
		*o++ = alpha[v >> 6 & 63];
		*o++ = alpha[v & 63];
	}
	if (i < len) {
		v = (unsigned)p[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)p[i + 1] << 8;
		*o++ = alpha[v >> 18 & 63];
		*o++ = alpha[v >> 12 & 63];
		if (i + 1 < len)
			*o++ = alpha[v >> 6 & 63];
		else if (!url)
			*o++ = '=';
		if (!url)
			*o++ = '=';
	}
	*o = '\0';
	return (out);
}

static int
base64_value(char c, const char *alpha)
{
	const char	*p;

	if (c == '\0' || (p = strchr(alpha, c)) == NULL)
		return (-1);
	return ((int)(p - alpha));
}

/*
 * Decodes len bytes of text into *out (allocated, NUL-terminated for
 * convenience, *outlen without it). The standard alphabet wants its
 * padding, the URL-safe one has none; anything else is refused (-1).
 */
int
base64_decode(const char *text, size_t len, int url, unsigned char **out,
    size_t *outlen)
{
	const char	*alpha = url ? base64_url : base64_std;
	unsigned char	*buf;
	size_t		 i, n = 0, pad = 0;
	unsigned int	 v = 0;
	int		 d, bits = 0;

	if (!url) {
		if (len % 4 != 0)
			return (-1);
		while (pad < 2 && len > 0 && text[len - 1] == '=') {
			len--;
			pad++;
		}
	} else if (len % 4 == 1)
		return (-1);
	buf = xmalloc(len / 4 * 3 + 3);
	for (i = 0; i < len; i++) {
		if ((d = base64_value(text[i], alpha)) < 0) {
			free(buf);
			return (-1);
		}
		v = (v << 6 | (unsigned)d) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (unsigned char)(v >> bits & 0xff);
		}
	}
	/* The bits left over must be zero: one text per value. */
	if ((v & ((1u << bits) - 1)) != 0) {
		free(buf);
		return (-1);
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return (0);
}
