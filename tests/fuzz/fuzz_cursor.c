/*
 * Cursor text (src/eventlog/cursor.c), the SSE id and Last-Event-ID. Oracles:
 * - cursor_parse accepts exactly what a reference reading of the grammar
 *   accepts: "K-N", two canonical decimals (no sign, no leading zero) that
 *   fit in 64 bits;
 * - an accepted text formats back byte for byte (one spelling per event);
 * - any (K, N) taken from the input formats to a text that parses back to
 *   (K, N), within CURSOR_BUFSIZE.
 */
#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "fuzz.h"

static const char cursor_max[] = "18446744073709551615";

/* The grammar, read independently of cursor.c: digits compared as text. */
static int
ref_number(const char **sp, char stop, uint64_t *out)
{
	const char	*s = *sp;
	size_t		 n = 0, i;
	uint64_t	 v = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	if (n == 0 || s[n] != stop || (s[0] == '0' && n > 1))
		return (-1);
	if (n > sizeof cursor_max - 1 || (n == sizeof cursor_max - 1 &&
	    strncmp(s, cursor_max, n) > 0))
		return (-1);
	for (i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	*sp = s + n;
	*out = v;
	return (0);
}

static int
ref_parse(const char *s, struct cursor *c)
{
	if (ref_number(&s, '-', &c->stream) != 0)
		return (-1);
	s++;
	return (ref_number(&s, '\0', &c->seq));
}

static void
check_format(uint64_t k, uint64_t n)
{
	char		buf[CURSOR_BUFSIZE];
	struct cursor	c;

	memset(buf, 'x', sizeof buf);
	cursor_format(buf, sizeof buf, k, n);
	FUZZ_CHECK(memchr(buf, '\0', sizeof buf) != NULL,
	    "cursor_format(%llu, %llu) fills the buffer",
	    (unsigned long long)k, (unsigned long long)n);
	FUZZ_CHECK(cursor_parse(buf, &c) == 0,
	    "formatted \"%s\" does not parse", buf);
	FUZZ_CHECK(c.stream == k && c.seq == n, "\"%s\" parses to %llu-%llu",
	    buf, (unsigned long long)c.stream, (unsigned long long)c.seq);
}

static uint64_t
read_u64(const uint8_t *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return (v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cursor	 got, want;
	char		*text, buf[CURSOR_BUFSIZE];
	int		 rc, ref;

	text = fuzz_strndup(data, size);
	memset(&got, 0, sizeof got);
	rc = cursor_parse(text, &got);
	ref = ref_parse(text, &want);
	if (rc != ref)
		fuzz_print_bytes("text", text, strlen(text));
	FUZZ_CHECK(rc == ref, "cursor_parse says %d, the grammar says %d",
	    rc, ref);
	if (rc == 0) {
		FUZZ_CHECK(got.stream == want.stream && got.seq == want.seq,
		    "\"%s\" parsed as %llu-%llu", text,
		    (unsigned long long)got.stream,
		    (unsigned long long)got.seq);
		cursor_format(buf, sizeof buf, got.stream, got.seq);
		FUZZ_CHECK(strcmp(buf, text) == 0,
		    "\"%s\" formats back as \"%s\"", text, buf);
	}
	free(text);

	/* (K, N) from the raw bytes, and the extremes around them. */
	if (size >= 16) {
		check_format(read_u64(data), read_u64(data + 8));
		check_format(read_u64(data), UINT64_MAX);
		check_format(UINT64_MAX, read_u64(data + 8));
	}
	check_format(UINT64_MAX, UINT64_MAX);
	check_format(0, 0);
	return (0);
}
