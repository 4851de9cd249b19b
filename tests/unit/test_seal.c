/*
 * Unit tests for base64.c, seal.c and statekey.c: both alphabets
 * round-trip, a text that is not canonical base64 is refused, and a sealed
 * text opens only unchanged, under the current or the previous key, and
 * within its lifetime by the wall clock (with the skew allowed, and not
 * more); with no key file, the keys are the event log's keyring, and
 * nothing is sealed before it is read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "unit.h"

#include "base64.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "seal.h"
#include "statekey.h"
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
	ck_assert_int_eq(statekey_load(conf, 1, &cause), 0);
	ck_assert(statekey_ready());
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
	ck_assert_int_eq(statekey_load(conf, 0, &cause), 0);
	text = seal_open(sealed, &why);
	ck_assert_str_eq(text, "{\"a\":1}");
	free(text);

	/* The previous key dropped: what it sealed is refused. */
	free(conf->state_key_previous_file);
	conf->state_key_previous_file = NULL;
	ck_assert_int_eq(statekey_load(conf, 0, &cause), 0);
	ck_assert_ptr_null(seal_open(sealed, &why));
	free(sealed);

	/* A key too short is refused, and the keys stay as they were. */
	free(conf->state_key_file);
	conf->state_key_file = key_file("short\n");
	ck_assert_int_eq(statekey_load(conf, 0, &cause), -1);
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

/*
 * A sealed text made here as docs/protocol.md describes it: the format,
 * and what a client cannot do without the key.
 */
static char *
forge(const char *key, size_t keylen, const char *text, uint64_t t)
{
	unsigned char	 mac[32];
	unsigned int	 maclen = sizeof mac;
	char		*body, *stamped, *sig, *sealed;

	body = base64_encode(text, strlen(text), 1);
	xasprintf(&stamped, "%s.%llu", body, (unsigned long long)t);
	ck_assert_ptr_nonnull(HMAC(EVP_sha256(), key, (int)keylen,
	    (unsigned char *)stamped, strlen(stamped), mac, &maclen));
	sig = base64_encode(mac, sizeof mac, 1);
	xasprintf(&sealed, "%s.%s", stamped, sig);
	free(body);
	free(stamped);
	free(sig);
	return (sealed);
}

/* s opens at now to text, or is refused with a cause containing why. */
static void
expect_open(const char *s, uint64_t now, const char *text, const char *why)
{
	const char	*cause = NULL;
	char		*got = seal_open_at(s, now, &cause);

	if (text != NULL) {
		ck_assert_msg(got != NULL, "refused: %s", cause);
		ck_assert_str_eq(got, text);
	} else {
		ck_assert_msg(got == NULL, "opened: %s", got);
		ck_assert_msg(strstr(cause, why) != NULL, "cause: %s", cause);
	}
	free(got);
}

/*
 * The sealing time is the wall clock's, under the mac: a state opens
 * SEAL_LIFETIME_MS after it by the opener's clock, and up to SEAL_SKEW_MS
 * before it (clocks that disagree that much), on any instance.
 */
START_TEST(test_seal_time)
{
	struct conf	*conf = conf_default();
	char		*k1 = key_file(key1), *sealed, *bad, *cause = NULL;
	const uint64_t	 t0 = 1790000000000ULL;	/* 2026-09-21 */
	const char	*text = "{\"a\":1}", *why;

	conf->state_key_file = xstrdup(k1);
	ck_assert_int_eq(statekey_load(conf, 1, &cause), 0);
	sealed = seal_sign_at(text, t0);
	bad = forge(key1, 32, text, t0);	/* the file's newline dropped */
	ck_assert_str_eq(sealed, bad);
	free(bad);

	expect_open(sealed, t0, text, NULL);
	expect_open(sealed, t0 + SEAL_LIFETIME_MS, text, NULL);
	expect_open(sealed, t0 + SEAL_LIFETIME_MS + 1, NULL, "expired");
	expect_open(sealed, t0 + 24ULL * 3600 * 1000, NULL, "expired");
	expect_open(sealed, t0 - SEAL_SKEW_MS, text, NULL);
	expect_open(sealed, t0 - SEAL_SKEW_MS - 1, NULL, "future");
	free(sealed);

	/* Its time cannot be moved without the key. */
	sealed = forge(key1, 32, text, t0);
	bad = xstrdup(sealed);
	strrchr(bad, '.')[-1]++;	/* t0 + 1 */
	expect_open(bad, t0, NULL, "integrity");
	free(bad);
	/* Nor dropped (a state of the format without a time), nor padded. */
	bad = xstrdup(sealed);
	memmove(strchr(bad, '.'), strrchr(bad, '.'),
	    strlen(strrchr(bad, '.')) + 1);
	expect_open(bad, t0, NULL, "not one this server issued");
	free(bad);
	free(sealed);
	sealed = forge(key1, 32, text, 0);
	expect_open(sealed, t0, NULL, "expired");
	free(sealed);
	bad = xstrdup("e30.0123.AAAA");
	expect_open(bad, t0, NULL, "not one this server issued");
	free(bad);

	/* seal_sign and seal_open read the wall clock, not the monotonic. */
	sealed = forge(key1, 32, text, clock_wall_ms() - 1000);
	ck_assert_ptr_nonnull(bad = seal_open(sealed, &why));
	free(bad);
	free(sealed);
	sealed = forge(key1, 32, text, clock_wall_ms() - SEAL_LIFETIME_MS -
	    60000);
	ck_assert_ptr_null(seal_open(sealed, &why));
	free(sealed);
	sealed = seal_sign(text);
	ck_assert_uint_ge(strtoull(strchr(sealed, '.') + 1, NULL, 10),
	    clock_wall_ms() - 60000);
	ck_assert_ptr_nonnull(bad = seal_open(sealed, &why));
	free(bad);
	free(sealed);

	unlink(k1);
	free(k1);
	conf_free(conf);
}
END_TEST

static void
ring_cb(enum eventlog_status status, const struct eventlog_keyring *ring,
    void *arg)
{
	char	**keys = arg;

	ck_assert_int_eq(status, EVENTLOG_OK);
	keys[0] = xstrdup(ring->previous);
	keys[1] = xstrdup(ring->current);
	keys[2] = xstrdup(ring->next);
}

static void
ring_read(struct event_base *base, struct eventlog *el, uint64_t period,
    const char *f1, const char *f2, char **keys)
{
	int	turns;

	memset(keys, 0, 3 * sizeof *keys);
	eventlog_keyring(el, period, f1, f2, ring_cb, keys);
	for (turns = 0; keys[0] == NULL && turns < 100; turns++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert_ptr_nonnull(keys[0]);
}

/*
 * Without a key file the keys are the log's keyring: nothing is sealed
 * until it is read; then the current key signs, and the previous, current
 * and next keys open (an instance that has not yet heard of a rotation
 * opens what one that has signs), and no other key does.
 */
START_TEST(test_seal_ring)
{
	struct conf		*conf = conf_default();
	struct event_base	*base = event_base_new();
	struct eventlog		*el;
	char			*cause = NULL, *keys[3], *sealed, *bad;
	const char		*text = "{\"b\":2}", *why;
	const char		 a[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	const char		 b[] = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
	const char		 c[] = "cccccccccccccccccccccccccccccccccccc";
	const uint64_t		 t0 = 1790000000000ULL;
	uint64_t		 start;
	int			 turns, i;

	ck_assert_ptr_nonnull(el = eventlog_create(base, conf, &cause));
	ck_assert_int_eq(statekey_load(conf, 1, &cause), 0);
	ck_assert(!statekey_ready());
	ck_assert_ptr_null(seal_sign_at(text, t0));
	sealed = forge(a, 36, text, t0);
	ck_assert_ptr_null(seal_open_at(sealed, t0, &why));
	free(sealed);

	/* A ring whose period (1 ms) has passed when seal.c reads it. */
	ring_read(base, el, 1, a, b, keys);
	for (i = 0; i < 3; i++)
		free(keys[i]);
	start = clock_now_ms();
	while (clock_now_ms() - start < 2)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	statekey_start(base, el);
	ck_assert(!statekey_ready());	/* the log answers on a later turn */
	for (turns = 0; !statekey_ready() && turns < 100; turns++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert(statekey_ready());

	/* seal.c's reading rotated it: previous a, current b, next fresh. */
	ring_read(base, el, (uint64_t)conf->state_key_rotation * 1000, c, c,
	    keys);
	ck_assert_str_eq(keys[0], a);
	ck_assert_str_eq(keys[1], b);
	ck_assert_uint_eq(strlen(keys[2]), 64);	/* 32 random bytes, hex */
	ck_assert_uint_eq(strspn(keys[2], "0123456789abcdef"), 64);

	sealed = seal_sign_at(text, t0);
	bad = forge(b, 36, text, t0);
	ck_assert_str_eq(sealed, bad);
	free(bad);
	free(sealed);
	for (i = 0; i < 3; i++) {
		sealed = forge(keys[i], strlen(keys[i]), text, t0);
		expect_open(sealed, t0, text, NULL);
		free(sealed);
	}
	sealed = forge(c, 36, text, t0);
	expect_open(sealed, t0, NULL, "integrity");
	free(sealed);

	statekey_stop();
	eventlog_free(el);
	for (i = 0; i < 3; i++)
		free(keys[i]);
	event_base_free(base);
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
	tcase_add_test(tc, test_seal_time);
	tcase_add_test(tc, test_seal_ring);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(seal_suite)
