/*
 * Unit tests for xmalloc.c: the copies event data is made of keep every
 * byte (NULs too) and end with a NUL.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "xmalloc.h"

START_TEST(test_memdup)
{
	static const char	 data[] = { 'a', '\0', 'b', '\n', '\0' };
	char			*copy;

	copy = xmemdup(data, 4);
	ck_assert_int_eq(memcmp(copy, data, 4), 0);
	ck_assert_int_eq(copy[4], '\0');
	free(copy);

	copy = xmemdup("", 0);
	ck_assert_int_eq(copy[0], '\0');
	free(copy);
}
END_TEST

START_TEST(test_strndup)
{
	char	*copy;

	/* Unlike xmemdup, it stops at the first NUL. */
	copy = xstrndup("ab\0cd", 5);
	ck_assert_str_eq(copy, "ab");
	free(copy);
	copy = xstrndup("abcdef", 3);
	ck_assert_str_eq(copy, "abc");
	free(copy);
}
END_TEST

static Suite *
xmalloc_suite(void)
{
	Suite	*s = suite_create("xmalloc");
	TCase	*tc = tcase_create("copies");

	tcase_add_test(tc, test_memdup);
	tcase_add_test(tc, test_strndup);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(xmalloc_suite)
