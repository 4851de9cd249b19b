/*
 * Cursor text. Only canonical decimals are accepted (no sign, no leading
 * zero, no blanks): two spellings of one event would let a client believe it
 * holds a different position than the one the log gave it.
 */
#include <stdio.h>
#include <string.h>

#include "cursor.h"

static int
cursor_parse_number(const char **sp, char stop, uint64_t *out)
{
	const char	*s = *sp;
	uint64_t	 v = 0;
	size_t		 digits = 0;

	if (*s == '0' && s[1] != stop)
		return (-1);
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return (-1);
		v = v * 10 + (uint64_t)(*s - '0');
		digits++;
	}
	if (digits == 0 || *s != stop)
		return (-1);
	*sp = s;
	*out = v;
	return (0);
}

int
cursor_parse(const char *text, struct cursor *c)
{
	const char	*s = text;

	if (text == NULL || strlen(text) >= CURSOR_BUFSIZE)
		return (-1);
	if (cursor_parse_number(&s, '-', &c->stream) != 0)
		return (-1);
	s++;
	if (cursor_parse_number(&s, '\0', &c->seq) != 0)
		return (-1);
	return (0);
}

void
cursor_format(char *buf, size_t len, uint64_t stream, uint64_t seq)
{
	snprintf(buf, len, "%llu-%llu", (unsigned long long)stream,
	    (unsigned long long)seq);
}
