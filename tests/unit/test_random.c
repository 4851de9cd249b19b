/*
 * Unit tests for random.c: small requests come from a pool, larger ones
 * from the kernel; either way no byte is handed out twice (two draws are
 * never equal, across the pool's refills too), and stream numbers are
 * 48 bits and never zero.
 */
#include <stdint.h>
#include <string.h>

#include "unit.h"

#include "random.h"

#define DRAWS	200	/* 16-byte draws: several refills of the pool */

START_TEST(test_draws_differ)
{
	static unsigned char	 seen[DRAWS][16];
	unsigned char		 big[100];
	int			 i, j;

	for (i = 0; i < DRAWS; i++) {
		random_bytes(seen[i], sizeof seen[i]);
		for (j = 0; j < i; j++)
			ck_assert(memcmp(seen[i], seen[j], 16) != 0);
	}
	/* Past the pool's limit: straight from the kernel, and filled. */
	memset(big, 0, sizeof big);
	random_bytes(big, sizeof big);
	ck_assert(memcmp(big, big + 50, 50) != 0);
	random_bytes(big, 0);
}
END_TEST

START_TEST(test_u48)
{
	uint64_t	a, b;
	int		i;

	for (i = 0; i < 100; i++) {
		a = random_u48();
		b = random_u48();
		ck_assert(a != 0 && a <= 0xffffffffffffULL);
		ck_assert(a != b);
	}
}
END_TEST

START_TEST(test_hex)
{
	char	a[33], b[33];
	size_t	i;

	random_hex(a, sizeof a);
	random_hex(b, sizeof b);
	ck_assert_uint_eq(strlen(a), 32);
	ck_assert_str_ne(a, b);
	for (i = 0; i < 32; i++)
		ck_assert(strchr("0123456789abcdef", a[i]) != NULL);
}
END_TEST

static Suite *
random_suite(void)
{
	Suite	*s = suite_create("random");
	TCase	*tc = tcase_create("draws");

	tcase_add_test(tc, test_draws_differ);
	tcase_add_test(tc, test_u48);
	tcase_add_test(tc, test_hex);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(random_suite)
