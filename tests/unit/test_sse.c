/*
 * Unit tests for sse.c: the exact bytes of every frame. Each line break in
 * a payload (LF, CRLF or a lone CR) starts a new "data:" field, so an SSE
 * client that joins the fields with LF gets the payload back.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "unit.h"

#include "sse.h"

static struct evbuffer	*out;

static void
setup(void)
{
	out = evbuffer_new();
	ck_assert_ptr_nonnull(out);
}

static void
teardown(void)
{
	evbuffer_free(out);
	out = NULL;
}

/* Checks that the buffer holds exactly want, then empties it. */
static void
expect_bytes(const char *want)
{
	size_t	 len = evbuffer_get_length(out);
	char	*got;

	got = malloc(len + 1);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(evbuffer_remove(out, got, len), (int)len);
	got[len] = '\0';
	ck_assert_msg(len == strlen(want) && memcmp(got, want, len) == 0,
	    "got \"%s\" (%zu bytes), want \"%s\"", got, len, want);
	free(got);
}

static void
event_str(const char *id, const char *event, const char *data, long retry)
{
	sse_event(out, id, event, data, strlen(data), retry);
}

START_TEST(test_data_only)
{
	event_str(NULL, NULL, "{\"a\":1}", -1);
	expect_bytes("data: {\"a\":1}\n\n");
}
END_TEST

START_TEST(test_id_and_data)
{
	event_str("12-3", NULL, "hello", -1);
	expect_bytes("id: 12-3\ndata: hello\n\n");
}
END_TEST

START_TEST(test_all_fields)
{
	event_str("7-1", "message", "x", 1500);
	expect_bytes("event: message\nid: 7-1\nretry: 1500\ndata: x\n\n");
}
END_TEST

START_TEST(test_event_without_id)
{
	/* An event without id does not move the client's cursor. */
	event_str(NULL, "backpressure-disconnect",
	    "{\"last_event_id\":\"5-9\",\"reason\":\"slow-consumer\"}", 3000);
	expect_bytes("event: backpressure-disconnect\nretry: 3000\n"
	    "data: {\"last_event_id\":\"5-9\","
	    "\"reason\":\"slow-consumer\"}\n\n");
}
END_TEST

START_TEST(test_retry_zero)
{
	event_str(NULL, NULL, "x", 0);
	expect_bytes("retry: 0\ndata: x\n\n");
}
END_TEST

/* A priming event: an id and an empty payload, still one data field. */
START_TEST(test_empty_data)
{
	event_str("42-0", NULL, "", 1000);
	expect_bytes("id: 42-0\nretry: 1000\ndata:\n\n");

	sse_event(out, NULL, NULL, "ignored", 0, -1);
	expect_bytes("data:\n\n");
}
END_TEST

START_TEST(test_lf)
{
	event_str("1-1", NULL, "a\nb\nc", -1);
	expect_bytes("id: 1-1\ndata: a\ndata: b\ndata: c\n\n");
}
END_TEST

START_TEST(test_crlf)
{
	event_str(NULL, NULL, "a\r\nb\r\nc", -1);
	expect_bytes("data: a\ndata: b\ndata: c\n\n");
}
END_TEST

START_TEST(test_cr)
{
	event_str(NULL, NULL, "a\rb\rc", -1);
	expect_bytes("data: a\ndata: b\ndata: c\n\n");
}
END_TEST

START_TEST(test_mixed_breaks)
{
	/* LF CR is two breaks; CR LF is one. */
	event_str(NULL, NULL, "a\n\rb\r\nc\rd\ne", -1);
	expect_bytes("data: a\ndata:\ndata: b\ndata: c\ndata: d\n"
	    "data: e\n\n");
}
END_TEST

START_TEST(test_empty_lines)
{
	event_str(NULL, NULL, "a\n\nb", -1);
	expect_bytes("data: a\ndata:\ndata: b\n\n");
	event_str(NULL, NULL, "a\r\n\r\nb", -1);
	expect_bytes("data: a\ndata:\ndata: b\n\n");
	event_str(NULL, NULL, "a\r\rb", -1);
	expect_bytes("data: a\ndata:\ndata: b\n\n");
}
END_TEST

/* A leading or trailing break yields an empty field on that side. */
START_TEST(test_edge_breaks)
{
	event_str(NULL, NULL, "a\n", -1);
	expect_bytes("data: a\ndata:\n\n");
	event_str(NULL, NULL, "\na", -1);
	expect_bytes("data:\ndata: a\n\n");
	event_str(NULL, NULL, "a\r", -1);
	expect_bytes("data: a\ndata:\n\n");
	event_str(NULL, NULL, "a\r\n", -1);
	expect_bytes("data: a\ndata:\n\n");
	event_str(NULL, NULL, "\n", -1);
	expect_bytes("data:\ndata:\n\n");
	event_str(NULL, NULL, "\r\n", -1);
	expect_bytes("data:\ndata:\n\n");
	event_str(NULL, NULL, "\r", -1);
	expect_bytes("data:\ndata:\n\n");
}
END_TEST

/* A payload starting with a space keeps it (the parser strips just one). */
START_TEST(test_leading_space)
{
	event_str(NULL, NULL, " x", -1);
	expect_bytes("data:  x\n\n");
}
END_TEST

/* Only len bytes are framed; a NUL inside is passed through. */
START_TEST(test_length_bounded)
{
	sse_event(out, NULL, NULL, "abc\ndef", 2, -1);
	expect_bytes("data: ab\n\n");

	sse_event(out, NULL, NULL, "a\0b", 3, -1);
	ck_assert_uint_eq(evbuffer_get_length(out), 11);
	ck_assert_int_eq(memcmp(evbuffer_pullup(out, -1), "data: a\0b\n\n",
	    11), 0);
	evbuffer_drain(out, 11);
}
END_TEST

START_TEST(test_events_append)
{
	event_str("1-1", NULL, "one", -1);
	event_str("1-2", NULL, "two", -1);
	expect_bytes("id: 1-1\ndata: one\n\nid: 1-2\ndata: two\n\n");
}
END_TEST

START_TEST(test_comment)
{
	sse_comment(out, "keepalive");
	expect_bytes(": keepalive\n\n");
	sse_comment(out, "");
	expect_bytes(": \n\n");
}
END_TEST

/*
 * The terminal event of a slow consumer, as clients have always seen it:
 * no id, and retry: after the data.
 */
START_TEST(test_backpressure_disconnect)
{
	sse_backpressure_disconnect(out, "5-9", "slow-consumer", 3000);
	expect_bytes("event: backpressure-disconnect\n"
	    "data: {\"last_event_id\":\"5-9\",\"reason\":\"slow-consumer\"}\n"
	    "retry: 3000\n\n");
	sse_backpressure_disconnect(out, "18446744073709551615-0", "x", 0);
	expect_bytes("event: backpressure-disconnect\n"
	    "data: {\"last_event_id\":\"18446744073709551615-0\","
	    "\"reason\":\"x\"}\nretry: 0\n\n");
}
END_TEST

START_TEST(test_retry_frame)
{
	sse_retry(out, 2500);
	expect_bytes("retry: 2500\n\n");
	sse_retry(out, 0);
	expect_bytes("retry: 0\n\n");
}
END_TEST

static Suite *
sse_suite(void)
{
	Suite	*s = suite_create("sse");
	TCase	*tc;

	tc = tcase_create("event");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_data_only);
	tcase_add_test(tc, test_id_and_data);
	tcase_add_test(tc, test_all_fields);
	tcase_add_test(tc, test_event_without_id);
	tcase_add_test(tc, test_retry_zero);
	tcase_add_test(tc, test_empty_data);
	tcase_add_test(tc, test_events_append);
	suite_add_tcase(s, tc);

	tc = tcase_create("data");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lf);
	tcase_add_test(tc, test_crlf);
	tcase_add_test(tc, test_cr);
	tcase_add_test(tc, test_mixed_breaks);
	tcase_add_test(tc, test_empty_lines);
	tcase_add_test(tc, test_edge_breaks);
	tcase_add_test(tc, test_leading_space);
	tcase_add_test(tc, test_length_bounded);
	suite_add_tcase(s, tc);

	tc = tcase_create("frames");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_comment);
	tcase_add_test(tc, test_retry_frame);
	tcase_add_test(tc, test_backpressure_disconnect);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(sse_suite)
