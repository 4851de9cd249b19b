/*
 * The length of one well-formed UTF-8 sequence: what the JSON-RPC parser
 * checks request bodies with, what JSON log lines pass through as it is
 * (anything else they escape byte by byte), and what an exec tool's
 * output keeps (anything else, and NUL, becomes U+FFFD).
 */
#include "utf8.h"

/*
 * The sequence starting at s (len > 0 bytes left): its length, or 0. With
 * UTF8_NO_NUL in flags a NUL is not one.
 */
size_t
utf8_sequence(const char *s, size_t len, int flags)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n, k;
	unsigned int		 cp;

	if (p[0] == '\0' && (flags & UTF8_NO_NUL))
		return (0);
	if (p[0] < 0x80)
		return (1);
	if ((p[0] & 0xe0) == 0xc0) {
		n = 1;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 2;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 3;
		cp = p[0] & 0x07;
	} else
		return (0);
	for (k = 1; k <= n; k++) {
		if (k >= len || (p[k] & 0xc0) != 0x80)
			return (0);
		cp = (cp << 6) | (p[k] & 0x3f);
	}
	if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
	    (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return (0);
	return (n + 1);
}
