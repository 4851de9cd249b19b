/*
 * Unit tests for utf8.c, the one UTF-8 validator: the sequences RFC 3629
 * allows and their lengths, what it refuses, and the NUL rule, the only
 * thing the UTF8_NO_NUL flag changes (the JSON-RPC parser and the log
 * take a NUL, an exec tool's output does not).
 */
#include <string.h>

#include "unit.h"

#include "utf8.h"

#define NITEMS(a)	(sizeof (a) / sizeof (a)[0])

struct sequence {
	const char	*s;
	size_t		 len;		/* bytes given */
	size_t		 want;		/* utf8_sequence's answer */
};

static const struct sequence sequences[] = {
	{ "a", 1, 1 },
	{ "\x7f", 1, 1 },
	{ "ab", 2, 1 },				/* one sequence at a time */
	{ "\xc3\xa9", 2, 2 },			/* U+00E9 */
	{ "\xc2\x80", 2, 2 },			/* U+0080, the first of two */
	{ "\xe2\x82\xac", 3, 3 },		/* U+20AC */
	{ "\xef\xbf\xbd", 3, 3 },		/* U+FFFD */
	{ "\xf0\x9f\x98\x80", 4, 4 },		/* U+1F600 */
	{ "\xf4\x8f\xbf\xbf", 4, 4 },		/* U+10FFFF, the last */
	{ "\x80", 1, 0 },			/* a lone continuation */
	{ "\xc0\x80", 2, 0 },			/* an overlong NUL */
	{ "\xc1\xbf", 2, 0 },			/* overlong */
	{ "\xe0\x80\xaf", 3, 0 },		/* overlong */
	{ "\xf0\x8f\xbf\xbf", 4, 0 },		/* overlong */
	{ "\xed\xa0\x80", 3, 0 },		/* a surrogate, U+D800 */
	{ "\xed\xbf\xbf", 3, 0 },		/* U+DFFF */
	{ "\xf4\x90\x80\x80", 4, 0 },		/* past U+10FFFF */
	{ "\xf8\x88\x80\x80\x80", 5, 0 },	/* five bytes */
	{ "\xff", 1, 0 },
	{ "\xe2\x82", 2, 0 },			/* cut short */
	{ "\xe2\x82\xac", 2, 0 },		/* the length given counts */
	{ "\xc3\x28", 2, 0 },			/* no continuation */
};

START_TEST(test_sequences)
{
	const struct sequence	*q = &sequences[_i];

	ck_assert_uint_eq(utf8_sequence(q->s, q->len, 0), q->want);
	ck_assert_uint_eq(utf8_sequence(q->s, q->len, UTF8_NO_NUL), q->want);
}
END_TEST

START_TEST(test_nul)
{
	static const char	nul[] = { '\0', 'a' };

	ck_assert_uint_eq(utf8_sequence(nul, 1, 0), 1);
	ck_assert_uint_eq(utf8_sequence(nul, 2, 0), 1);
	ck_assert_uint_eq(utf8_sequence(nul, 1, UTF8_NO_NUL), 0);
	ck_assert_uint_eq(utf8_sequence(nul, 2, UTF8_NO_NUL), 0);
	ck_assert_uint_eq(utf8_sequence(nul + 1, 1, UTF8_NO_NUL), 1);
}
END_TEST

/* Every input of one to three bytes not starting with NUL: same answer. */
START_TEST(test_flag_only_nul)
{
	unsigned char	b[3];
	unsigned int	x, y, z;
	size_t		a0, a1;

	for (x = 1; x < 256; x++) {
		b[0] = (unsigned char)x;
		for (y = 0; y < 256; y++) {
			b[1] = (unsigned char)y;
			for (z = 0; z < 256; z++) {
				b[2] = (unsigned char)z;
				a0 = utf8_sequence((char *)b, 3, 0);
				a1 = utf8_sequence((char *)b, 3, UTF8_NO_NUL);
				if (a0 != a1)
					ck_abort_msg("%02x %02x %02x: %zu "
					    "without the flag, %zu with it", x,
					    y, z, a0, a1);
			}
			if (utf8_sequence((char *)b, 2, 0) !=
			    utf8_sequence((char *)b, 2, UTF8_NO_NUL))
				ck_abort_msg("%02x %02x differ", x, y);
		}
		if (utf8_sequence((char *)b, 1, 0) !=
		    utf8_sequence((char *)b, 1, UTF8_NO_NUL))
			ck_abort_msg("%02x differs", x);
	}
}
END_TEST

static Suite *
utf8_suite(void)
{
	Suite	*s = suite_create("utf8");
	TCase	*tc = tcase_create("utf8");

	tcase_add_loop_test(tc, test_sequences, 0, NITEMS(sequences));
	tcase_add_test(tc, test_nul);
	tcase_add_test(tc, test_flag_only_nul);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(utf8_suite)
