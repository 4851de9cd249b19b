/*
 * Cursor text. Only canonical decimals are accepted (no sign, no leading
 * zero, no blanks): two spellings of one event would let a client believe it
 * holds a different position than the one the log gave it. The same parser
 * and formatter serve the SSE ids, the Last-Event-ID header and the ids the
 * redis event log writes and reads, so they cannot drift apart.
 */
#include <string.h>

#include "cursor.h"

/* Longest decimal of a uint64_t. */
#define CURSOR_DIGITS	20

int
cursor_parse_seq(const char *s, size_t len, uint64_t *out)
{
	uint64_t	v = 0;
	size_t		i;

	if (len == 0 || len > CURSOR_DIGITS || (len > 1 && s[0] == '0'))
		return (-1);
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return (-1);
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return (0);
}

int
cursor_parse_len(const char *s, size_t len, struct cursor *c)
{
	const char	*dash;
	size_t		 klen;

	if (len >= CURSOR_BUFSIZE || (dash = memchr(s, '-', len)) == NULL)
		return (-1);
	klen = (size_t)(dash - s);
	if (cursor_parse_seq(s, klen, &c->stream) != 0 ||
	    cursor_parse_seq(dash + 1, len - klen - 1, &c->seq) != 0)
		return (-1);
	return (0);
}

int
cursor_parse(const char *text, struct cursor *c)
{
	if (text == NULL)
		return (-1);
	return (cursor_parse_len(text, strnlen(text, CURSOR_BUFSIZE), c));
}

/*
 * Writes v in decimal at the end of the CURSOR_DIGITS bytes before end;
 * returns where it starts. Hot: every entry's id is printed at least once.
 */
static char *
cursor_digits(char *end, uint64_t v)
{
	static const char	pairs[] =
	    "00010203040506070809101112131415161718192021222324252627282930"
	    "31323334353637383940414243444546474849505152535455565758596061"
	    "6263646566676869707172737475767778798081828384858687888990919293"
	    "949596979899";

	/* Two digits a division: ids run to 15 digits and more. */
	while (v >= 100) {
		end -= 2;
		memcpy(end, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, pairs + 2 * v, 2);
	} else
		*--end = (char)('0' + v);
	return (end);
}

size_t
cursor_format_seq(char *buf, size_t len, uint64_t seq)
{
	char	 tmp[CURSOR_DIGITS];
	char	*p = cursor_digits(tmp + sizeof tmp, seq);
	size_t	 n = (size_t)(tmp + sizeof tmp - p);

	if (len == 0)
		return (n);
	memcpy(buf, p, n < len ? n : len - 1);
	buf[n < len ? n : len - 1] = '\0';
	return (n);
}

size_t
cursor_format(char *buf, size_t len, uint64_t stream, uint64_t seq)
{
	char	 tmp[CURSOR_BUFSIZE];
	char	*end = tmp + sizeof tmp - 1, *p;
	size_t	 n;

	*end = '\0';
	p = cursor_digits(end, seq);
	*--p = '-';
	p = cursor_digits(p, stream);
	n = (size_t)(end - p);
	if (len == 0)
		return (n);
	memcpy(buf, p, n < len ? n + 1 : len - 1);
	buf[n < len ? n : len - 1] = '\0';
	return (n);
}
