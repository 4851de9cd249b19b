/*
 * Unit tests for peer.c: the messages processes sharing a log send each
 * other parse back to what was formatted, and anything else (another
 * process's garbage, a newer process's message) is PEER_UNKNOWN.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "eventlog.h"
#include "peer.h"

static void
parse(const char *text, struct peer_message *m)
{
	peer_parse(text, strlen(text), m);
}

START_TEST(test_delivered)
{
	struct peer_message	m;
	char			buf[PEER_DELIVERED_BUFSIZE];
	size_t			len;

	len = peer_format_delivered(buf, sizeof buf, 281474976710655ULL,
	    UINT64_MAX);
	ck_assert_uint_eq(len, strlen(buf));
	ck_assert_str_eq(buf, "d 281474976710655 18446744073709551615");
	peer_parse(buf, len, &m);
	ck_assert_int_eq(m.kind, PEER_DELIVERED);
	ck_assert_uint_eq(m.k, 281474976710655ULL);
	ck_assert_uint_eq(m.seq, UINT64_MAX);

	parse("d 42 0", &m);
	ck_assert_int_eq(m.kind, PEER_DELIVERED);
	ck_assert_uint_eq(m.seq, 0);
}
END_TEST

static const char *bad[] = {
	"", "d", "d ", "d 42", "d 42 ", "d 0 1", "d 42 1 2", "d 42 x",
	"d  42 1", "d 042 1", "d -1 1", "d 42 18446744073709551616", "x 1 2",
	"a", "a ", "a  {}", "!", "!deletedx", "deleted", "d42 1",
};

START_TEST(test_bad)
{
	struct peer_message	m;

	parse(bad[_i], &m);
	ck_assert_msg(m.kind == PEER_UNKNOWN, "\"%s\" parsed as %d", bad[_i],
	    m.kind);
}
END_TEST

START_TEST(test_deleted)
{
	struct peer_message	m;

	parse(EVENTLOG_MESSAGE_DELETED, &m);
	ck_assert_int_eq(m.kind, PEER_DELETED);
}
END_TEST

/* "g" exactly; "g " or "gg" are somebody else's. */
START_TEST(test_gone)
{
	struct peer_message	m;

	parse(PEER_GONE_MESSAGE, &m);
	ck_assert_int_eq(m.kind, PEER_GONE);
	parse("g ", &m);
	ck_assert_int_eq(m.kind, PEER_UNKNOWN);
	parse("gg", &m);
	ck_assert_int_eq(m.kind, PEER_UNKNOWN);
}
END_TEST

START_TEST(test_answer)
{
	struct peer_message	 m;
	const char		*json = "{\"result\":{\"a\":\"b c\"}}";
	char			*s;
	size_t			 len;

	s = peer_format_answer("mcpd-0123", json, strlen(json), &len);
	ck_assert_uint_eq(len, strlen(s));
	peer_parse(s, len, &m);
	ck_assert_int_eq(m.kind, PEER_ANSWER);
	ck_assert_uint_eq(m.idlen, 9);
	ck_assert(memcmp(m.id, "mcpd-0123", 9) == 0);
	ck_assert_uint_eq(m.len, strlen(json));
	ck_assert(memcmp(m.json, json, m.len) == 0);
	free(s);

	/* Without its answer: read the note. */
	s = peer_format_answer("mcpd-0123", NULL, 0, &len);
	ck_assert_str_eq(s, "a mcpd-0123");
	peer_parse(s, len, &m);
	ck_assert_int_eq(m.kind, PEER_ANSWER);
	ck_assert_ptr_null(m.json);
	ck_assert_uint_eq(m.idlen, 9);
	free(s);

	/* An id too long to be ours. */
	parse("a 01234567890123456789012345678901234567890123456789"
	    "012345678901234 {}", &m);
	ck_assert_int_eq(m.kind, PEER_UNKNOWN);
}
END_TEST

/* An answer that would not fit in a message travels without it. */
START_TEST(test_answer_bound)
{
	struct peer_message	 m;
	char			*json, *s;
	size_t			 n, len;

	for (n = EVENTLOG_MESSAGE_MAX - 12; n <= EVENTLOG_MESSAGE_MAX - 8;
	    n++) {
		json = malloc(n);
		memset(json, 'x', n);
		s = peer_format_answer("mcpd-0123", json, n, &len);
		ck_assert_uint_le(len, EVENTLOG_MESSAGE_MAX);
		peer_parse(s, len, &m);
		ck_assert_int_eq(m.kind, PEER_ANSWER);
		/* "a " + 9 + " " = 12 bytes before the answer. */
		if (n + 12 <= EVENTLOG_MESSAGE_MAX)
			ck_assert_uint_eq(m.len, n);
		else
			ck_assert_ptr_null(m.json);
		free(s);
		free(json);
	}
}
END_TEST

static Suite *
peer_suite(void)
{
	Suite	*s = suite_create("peer");
	TCase	*tc;

	tc = tcase_create("messages");
	tcase_add_test(tc, test_delivered);
	tcase_add_loop_test(tc, test_bad, 0,
	    (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_deleted);
	tcase_add_test(tc, test_gone);
	tcase_add_test(tc, test_answer);
	tcase_add_test(tc, test_answer_bound);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(peer_suite)
