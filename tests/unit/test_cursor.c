/*
 * Unit tests for cursor.c: only canonical "K-N" text parses, and
 * cursor_format writes exactly what cursor_parse accepts. The counted
 * forms are those the redis event log reads its replies with.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"

#include "cursor.h"

static const struct {
	const char	*text;
	uint64_t	 stream;
	uint64_t	 seq;
} good[] = {
	{ "0-0", 0, 0 },
	{ "1-2", 1, 2 },
	{ "10-0", 10, 0 },
	{ "0-10", 0, 10 },
	{ "281474976710655-18446744073709551615", 281474976710655ULL,
	    UINT64_MAX },
	{ "18446744073709551615-18446744073709551615", UINT64_MAX,
	    UINT64_MAX },
	{ "18446744073709551615-0", UINT64_MAX, 0 },
};

static const char *bad[] = {
	"", "1", "1-", "-1", "-", "--", "01-2", "1-02", "00-0", "0-00",
	"1--2", "+1-2", "1-+2", " 1-2", "1-2 ", "1 -2", "1- 2", "1-2-3",
	"a-b", "1-b", "a-1", "1-2a", "0x1-2", "1_2", "1.0-2", "1-2\n",
	"\t1-2", "-1-2", "1-2-",
	/* One past UINT64_MAX on either side, and far past. */
	"18446744073709551616-1", "1-18446744073709551616",
	"99999999999999999999-0", "0-99999999999999999999",
	"184467440737095516150-1",
};

START_TEST(test_parse_good)
{
	struct cursor	c;

	memset(&c, 0xa5, sizeof c);
	ck_assert_msg(cursor_parse(good[_i].text, &c) == 0,
	    "\"%s\" refused", good[_i].text);
	ck_assert_uint_eq(c.stream, good[_i].stream);
	ck_assert_uint_eq(c.seq, good[_i].seq);
}
END_TEST

START_TEST(test_parse_bad)
{
	struct cursor	c;

	ck_assert_msg(cursor_parse(bad[_i], &c) == -1, "\"%s\" accepted",
	    bad[_i]);
}
END_TEST

START_TEST(test_parse_null)
{
	struct cursor	c;

	ck_assert_int_eq(cursor_parse(NULL, &c), -1);
}
END_TEST

/* Strings of CURSOR_BUFSIZE chars or more are refused whatever they hold. */
START_TEST(test_parse_overlong)
{
	struct cursor	c;
	char		buf[256];
	size_t		i;

	/* The longest canonical cursor is 41 chars and fits. */
	ck_assert_uint_eq(strlen("18446744073709551615-18446744073709551615"),
	    CURSOR_BUFSIZE - 1);

	/* 21 and 22 digit numbers. */
	ck_assert_int_eq(cursor_parse("1-100000000000000000000", &c), -1);
	ck_assert_int_eq(cursor_parse("100000000000000000000-1", &c), -1);

	/* A long run of digits on either side. */
	memset(buf, '9', 200);
	buf[100] = '-';
	buf[200] = '\0';
	ck_assert_int_eq(cursor_parse(buf, &c), -1);

	/* Leading zeros padding a small value past the length limit. */
	buf[0] = '1';
	buf[1] = '-';
	for (i = 2; i < 60; i++)
		buf[i] = '0';
	buf[59] = '7';
	buf[60] = '\0';
	ck_assert_int_eq(cursor_parse(buf, &c), -1);

	/* Very long input overall. */
	memset(buf, '1', sizeof buf - 1);
	buf[1] = '-';
	buf[sizeof buf - 1] = '\0';
	ck_assert_int_eq(cursor_parse(buf, &c), -1);
}
END_TEST

START_TEST(test_format)
{
	char	buf[CURSOR_BUFSIZE];

	cursor_format(buf, sizeof buf, 0, 0);
	ck_assert_str_eq(buf, "0-0");
	cursor_format(buf, sizeof buf, 12, 345);
	ck_assert_str_eq(buf, "12-345");
	cursor_format(buf, sizeof buf, UINT64_MAX, UINT64_MAX);
	ck_assert_str_eq(buf, "18446744073709551615-18446744073709551615");
}
END_TEST

/* Every value formats to text that parses back to the same value. */
START_TEST(test_round_trip)
{
	static const uint64_t	 values[] = {
		0, 1, 9, 10, 99, 100, 4294967295ULL, 4294967296ULL,
		281474976710655ULL, 9007199254740993ULL,
		18446744073709551614ULL, UINT64_MAX
	};
	size_t			 i, j;
	size_t			 n = sizeof values / sizeof values[0];
	struct cursor		 c;
	char			 buf[CURSOR_BUFSIZE], again[CURSOR_BUFSIZE];

	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			cursor_format(buf, sizeof buf, values[i], values[j]);
			ck_assert_msg(cursor_parse(buf, &c) == 0,
			    "\"%s\" refused", buf);
			ck_assert_uint_eq(c.stream, values[i]);
			ck_assert_uint_eq(c.seq, values[j]);
			cursor_format(again, sizeof again, c.stream, c.seq);
			ck_assert_str_eq(again, buf);
		}
	}
}
END_TEST

/* Parsing then formatting a canonical cursor gives back the same text. */
START_TEST(test_canonical_text)
{
	struct cursor	c;
	char		buf[CURSOR_BUFSIZE];

	ck_assert_int_eq(cursor_parse(good[_i].text, &c), 0);
	cursor_format(buf, sizeof buf, c.stream, c.seq);
	ck_assert_str_eq(buf, good[_i].text);
}
END_TEST

/* Counted text: only len bytes count (moved from the redis script tests). */
START_TEST(test_parse_counted)
{
	struct cursor	c;
	uint64_t	v;

	ck_assert_int_eq(cursor_parse_seq("0", 1, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(cursor_parse_seq("42", 2, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(cursor_parse_seq("18446744073709551615", 20, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(cursor_parse_seq("123", 2, &v), 0);
	ck_assert_uint_eq(v, 12);

	ck_assert_int_eq(cursor_parse_seq("", 0, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("01", 2, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("-1", 2, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("+1", 2, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("1a", 2, &v), -1);
	ck_assert_int_eq(cursor_parse_seq(" 1", 2, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("18446744073709551616", 20, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("99999999999999999999", 20, &v), -1);
	ck_assert_int_eq(cursor_parse_seq("100000000000000000000", 21, &v),
	    -1);

	ck_assert_int_eq(cursor_parse_len("42-7", 4, &c), 0);
	ck_assert_uint_eq(c.stream, 42);
	ck_assert_uint_eq(c.seq, 7);
	ck_assert_int_eq(cursor_parse_len("281474976710655-0", 17, &c), 0);
	ck_assert_uint_eq(c.stream, 281474976710655ULL);
	ck_assert_uint_eq(c.seq, 0);
	ck_assert_int_eq(cursor_parse_len("42-7x", 4, &c), 0);
	ck_assert_int_eq(cursor_parse_len("42", 2, &c), -1);
	ck_assert_int_eq(cursor_parse_len("42-", 3, &c), -1);
	ck_assert_int_eq(cursor_parse_len("-7", 2, &c), -1);
	ck_assert_int_eq(cursor_parse_len("42-7-1", 6, &c), -1);
	ck_assert_int_eq(cursor_parse_len("042-7", 5, &c), -1);
	ck_assert_int_eq(cursor_parse_len("42-07", 5, &c), -1);
	/* A NUL inside the counted bytes is no digit. */
	ck_assert_int_eq(cursor_parse_len("42-7\0", 5, &c), -1);
}
END_TEST

START_TEST(test_format_seq)
{
	char	buf[CURSOR_BUFSIZE];

	ck_assert_uint_eq(cursor_format_seq(buf, sizeof buf, 0), 1);
	ck_assert_str_eq(buf, "0");
	ck_assert_uint_eq(cursor_format_seq(buf, sizeof buf, 1000), 4);
	ck_assert_str_eq(buf, "1000");
	ck_assert_uint_eq(cursor_format_seq(buf, sizeof buf, UINT64_MAX), 20);
	ck_assert_str_eq(buf, "18446744073709551615");
}
END_TEST

/* Every number up to a million, and powers of ten around: as printf. */
START_TEST(test_format_like_printf)
{
	char		buf[CURSOR_BUFSIZE], want[CURSOR_BUFSIZE];
	uint64_t	v, p;

	/*
	 * Every value of up to five digits, then a stride through the rest
	 * of the range: a million of each took Check's 4 s under ASan on a
	 * loaded machine.
	 */
	for (v = 0; v <= 100000; v++) {
		cursor_format_seq(buf, sizeof buf, v);
		snprintf(want, sizeof want, "%llu", (unsigned long long)v);
		ck_assert_str_eq(buf, want);
	}
	for (v = 100000; v < UINT64_MAX / 3; v = v * 3 + 7) {
		cursor_format_seq(buf, sizeof buf, v);
		snprintf(want, sizeof want, "%llu", (unsigned long long)v);
		ck_assert_str_eq(buf, want);
	}
	for (p = 10; p < UINT64_MAX / 10; p *= 10) {
		for (v = p - 2; v <= p + 1; v++) {
			cursor_format(buf, sizeof buf, v, p);
			snprintf(want, sizeof want, "%llu-%llu",
			    (unsigned long long)v, (unsigned long long)p);
			ck_assert_str_eq(buf, want);
		}
	}
}
END_TEST

/* Like snprintf: the whole length is returned, the text cut to fit. */
START_TEST(test_format_truncated)
{
	char	buf[5];

	ck_assert_uint_eq(cursor_format(buf, sizeof buf, 123, 4567), 8);
	ck_assert_str_eq(buf, "123-");
	ck_assert_uint_eq(cursor_format(buf, sizeof buf, 1, 2), 3);
	ck_assert_str_eq(buf, "1-2");
	ck_assert_uint_eq(cursor_format_seq(buf, sizeof buf, 123456), 6);
	ck_assert_str_eq(buf, "1234");
	ck_assert_uint_eq(cursor_format(buf, 0, 1, 2), 3);
}
END_TEST

static Suite *
cursor_suite(void)
{
	Suite	*s = suite_create("cursor");
	TCase	*tc;

	tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_parse_good, 0,
	    (int)(sizeof good / sizeof good[0]));
	tcase_add_loop_test(tc, test_parse_bad, 0,
	    (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_parse_null);
	tcase_add_test(tc, test_parse_overlong);
	tcase_add_test(tc, test_parse_counted);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_format_seq);
	tcase_add_test(tc, test_format_like_printf);
	tcase_add_test(tc, test_format_truncated);
	tcase_add_test(tc, test_round_trip);
	tcase_add_loop_test(tc, test_canonical_text, 0,
	    (int)(sizeof good / sizeof good[0]));
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(cursor_suite)
