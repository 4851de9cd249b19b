/*
 * Unit tests for upstream_sse.c beyond test_upstream.c's: the line ends
 * WHATWG allows (CR alone too, CRLF split across reads), fields without a
 * colon, an id that holds a NUL (ignored), an id kept for later events,
 * data that is empty (no event), and the bound on an event's data.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"

#include "upstream_sse.h"

/* Events as "id|data;" in one string. */
struct events {
	char	buf[1024];
	int	n;
};

static void
events_cb(const char *data, size_t len, const char *id, void *arg)
{
	struct events	*e = arg;
	size_t		 used = strlen(e->buf);

	snprintf(e->buf + used, sizeof e->buf - used, "%s|%.*s;",
	    id != NULL ? id : "-", (int)len, data);
	e->n++;
}

/* in (len bytes) fed in pieces of step bytes: the events as text. */
static const char *
feed(const char *in, size_t len, size_t step, size_t max, int *rc)
{
	static struct events	 e;
	struct upstream_sse	*p;
	size_t			 i, n;

	memset(&e, 0, sizeof e);
	p = upstream_sse_new(max, events_cb, &e);
	*rc = 0;
	for (i = 0; i < len && *rc == 0; i += n) {
		n = len - i < step ? len - i : step;
		*rc = upstream_sse_feed(p, in + i, n);
	}
	upstream_sse_free(p);
	return (e.buf);
}

static void
expect(const char *in, size_t len, const char *want)
{
	size_t	step;
	int	rc;

	for (step = 1; step <= len; step++) {
		ck_assert_msg(strcmp(feed(in, len, step, 1000, &rc), want) ==
		    0 && rc == 0, "in pieces of %zu: \"%s\", not \"%s\"",
		    step, feed(in, len, step, 1000, &rc), want);
	}
}

#define EXPECT(in, want)	expect(in, sizeof (in) - 1, want)

START_TEST(test_line_ends)
{
	EXPECT("data: a\rdata: b\r\r", "-|a\nb;");
	EXPECT("data: a\r\ndata: b\r\n\r\n", "-|a\nb;");
	EXPECT("data: a\ndata: b\n\n", "-|a\nb;");
	/* CR LF is one end; CR CR is two (an event ends). */
	EXPECT("data: a\r\r\ndata: b\n\n", "-|a;-|b;");
}
END_TEST

START_TEST(test_fields)
{
	/* A field without a colon has an empty value. */
	EXPECT("data\ndata: x\n\n", "-|\nx;");
	/* Only one space after the colon is taken off. */
	EXPECT("data:  x\n\n", "-| x;");
	/* Empty data: no event. */
	EXPECT("data\n\ndata:\n\n", "");
	/* Unknown fields and comments change nothing. */
	EXPECT("event: e\nretry: 5\n: hi\nfoo: bar\ndata: x\n\n", "-|x;");
}
END_TEST

START_TEST(test_ids)
{
	/* An id holds for the events after it, until another. */
	EXPECT("id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n",
	    "1|a;1|b;2|c;");
	/* An id holding a NUL is ignored. */
	EXPECT("id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n", "1|a;1|b;");
}
END_TEST

START_TEST(test_bound)
{
	int	rc;

	/* An event's data over the bound, though each line is within it. */
	feed("data: 123\ndata: 456\ndata: 789\n\n", 31, 31, 10, &rc);
	ck_assert_int_eq(rc, -1);
	feed("data: 123\ndata: 45\n\n", 20, 20, 10, &rc);
	ck_assert_int_eq(rc, 0);
}
END_TEST

static Suite *
upstream_sse_suite(void)
{
	Suite	*s = suite_create("upstream_sse");
	TCase	*tc = tcase_create("parser");

	tcase_add_test(tc, test_line_ends);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_bound);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(upstream_sse_suite)
