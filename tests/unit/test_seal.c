/*
 * Unit tests for base64.c and seal.c: both alphabets round-trip, a text
 * that is not canonical base64 is refused, and a sealed text opens only
 * unchanged and under the current or the previous key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "base64.h"
#include "conf.h"
#include "seal.h"
#include "xmalloc.h"

static const char *samples[] = {
	"", "f", "fo", "foo", "foob", "fooba", "foobar", "Hello, \xe4\xb8\x96",
	"=?base64?literal?=", "line1\nline2",
};

START_TEST(test_round_trip)
{
	const char	*s = samples[_i];
	unsigned char	*out;
	size_t		 len;
	char		*enc;
	int		 url;

	for (url = 0; url <= 1; url++) {
		enc = base64_encode(s, strlen(s), url);
		ck_assert_int_eq(base64_decode(enc, strlen(enc), url, &out,
		    &len), 0);
		ck_assert_uint_eq(len, strlen(s));
		ck_assert_mem_eq(out, s, len);
		free(out);
		free(enc);
	}
}
END_TEST

START_TEST(test_known)
{
	char	*enc;

	enc = base64_encode("Hello", 5, 0);
	ck_assert_str_eq(enc, "SGVsbG8=");
	free(enc);
	enc = base64_encode("\xfb\xff", 2, 1);
	ck_assert_str_eq(enc, "-_8");
	free(enc);
}
END_TEST

static const char *bad_std[] = {
	"SGVsbG8", "SGVs!!!bG8=", "SGVsbG9=", "S===", "=", "SGVsbG8==",
	"SGVs bG8=", "-_8=",
};

START_TEST(test_bad)
{
	const char	*s = bad_std[_i];
	unsigned char	*out = NULL;
	size_t		 len;

	ck_assert_int_eq(base64_decode(s, strlen(s), 0, &out, &len), -1);
	ck_assert_ptr_null(out);
}
END_TEST

static char *
key_file(const char *text)
{
	char	*path;
	FILE	*f;

	path = xstrdup("/tmp/mcpd-test-seal.XXXXXX");
	close(mkstemp(path));
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return (path);
}

static const char key1[] = "0123456789abcdef0123456789abcdef\n";
static const char key2[] = "fedcba9876543210fedcba9876543210fedc";

START_TEST(test_seal)
{
	struct conf	*conf = conf_default();
	char		*k1 = key_file(key1), *k2 = key_file(key2);
	char		*sealed, *text, *cause = NULL, *bad;
	const char	*why;

	conf->state_key_file = xstrdup(k1);
	ck_assert_int_eq(seal_load(conf, 1, &cause), 0);
	ck_assert(seal_shared_key());
	sealed = seal_sign("{\"a\":1}");
	text = seal_open(sealed, &why);
	ck_assert_str_eq(text, "{\"a\":1}");
	free(text);

	/* One character changed anywhere: refused. */
	bad = xstrdup(sealed);
	bad[1] = bad[1] == 'A' ? 'B' : 'A';
	ck_assert_ptr_null(seal_open(bad, &why));
	free(bad);
	bad = xstrdup(sealed);
	bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == 'A' ? 'B' : 'A';
	ck_assert_ptr_null(seal_open(bad, &why));
	free(bad);
	ck_assert_ptr_null(seal_open("no dot", &why));
	ck_assert_ptr_null(seal_open(".", &why));

	/* Rotated: the new key signs, the previous one still opens. */
	free(conf->state_key_file);
	conf->state_key_file = xstrdup(k2);
	conf->state_key_previous_file = xstrdup(k1);
	ck_assert_int_eq(seal_load(conf, 0, &cause), 0);
	text = seal_open(sealed, &why);
	ck_assert_str_eq(text, "{\"a\":1}");
	free(text);

	/* The previous key dropped: what it sealed is refused. */
	free(conf->state_key_previous_file);
	conf->state_key_previous_file = NULL;
	ck_assert_int_eq(seal_load(conf, 0, &cause), 0);
	ck_assert_ptr_null(seal_open(sealed, &why));
	free(sealed);

	/* A key too short is refused, and the keys stay as they were. */
	free(conf->state_key_file);
	conf->state_key_file = key_file("short\n");
	ck_assert_int_eq(seal_load(conf, 0, &cause), -1);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	sealed = seal_sign("x");
	unlink(conf->state_key_file);
	unlink(k1);
	unlink(k2);
	free(k1);
	free(k2);
	text = seal_open(sealed, &why);
	ck_assert_str_eq(text, "x");
	free(text);
	free(sealed);
	conf_free(conf);
}
END_TEST

static Suite *
seal_suite(void)
{
	Suite	*s = suite_create("seal");
	TCase	*tc;

	tc = tcase_create("base64");
	tcase_add_loop_test(tc, test_round_trip, 0,
	    (int)(sizeof samples / sizeof samples[0]));
	tcase_add_test(tc, test_known);
	tcase_add_loop_test(tc, test_bad, 0,
	    (int)(sizeof bad_std / sizeof bad_std[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("seal");
	tcase_add_test(tc, test_seal);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(seal_suite)
