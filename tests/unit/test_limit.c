/*
 * Limits (limit.c, conf_limit.c) in a process whose buckets are its own
 * (the memory log): the block's syntax and its errors; a burst, then a
 * refusal with the time until a token is due; keys kept apart (by
 * principal, client, principal and tool); a call refused by one limit
 * gives back what another gave it; concurrency slots held by a ticket
 * until it is freed; a daily quota; tools and endpoints patterns. The Redis side is test_eventlog_redis.c's
 * (test_limit_layout) and the e2e and cluster suites'.
 */
#include <string.h>

#include "unit.h"
#include "confparse.h"

#include "auth.h"
#include "conf.h"
#include "limit.h"
#include "server.h"

static struct conf	*lconf;

static void
use(const char *text)
{
	if (lconf != NULL)
		conf_free(lconf);
	lconf = parse_ok(text);
	server.conf = lconf;
	server.shared = 0;
}

static void
teardown(void)
{
	limit_cron();
	conf_free(lconf);
	lconf = NULL;
	server.conf = NULL;
}

static void
unexpected_cb(struct limit_ticket *t, const struct limit_refusal *r,
    void *arg)
{
	ck_abort_msg("a check of the process's own buckets waited");
}

/* A check: LIMIT_ADMIT (the ticket in *t) or LIMIT_REFUSE (r). */
static enum limit_verdict
check(const struct auth_principal *who, const char *tool,
    const char *endpoint, struct limit_ticket **t, struct limit_refusal *r)
{
	struct limit_subject	sub = { who, tool, endpoint };
	struct limit_ticket	*mine;
	enum limit_verdict	 v;

	v = limit_check(&sub, &mine, r, unexpected_cb, NULL);
	ck_assert_int_ne(v, LIMIT_PENDING);
	if (t != NULL)
		*t = mine;
	else
		limit_ticket_free(mine);
	return (v);
}

START_TEST(test_limit_syntax)
{
	struct conf			*c;
	const struct conf_limit		*l;

	c = parse_ok("limit per-caller {\n key principal client\n"
	    " rate 10/s\n burst 10\n concurrency 4\n tools echo stream*\n"
	    " quota 1000/day\n endpoints /mcp /mcp/github\n}\n"
	    "limit slow {\n key tool\n rate 30/m\n}\n");
	ck_assert_uint_eq(c->nlimits, 2);
	l = conf_limit_find(c, "per-caller");
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(l->keys, CONF_LIMIT_KEY_PRINCIPAL |
	    CONF_LIMIT_KEY_CLIENT);
	ck_assert_int_eq(l->rate, 10);
	ck_assert_int_eq(l->period_ms, 1000);
	ck_assert_int_eq(l->burst, 10);
	ck_assert_int_eq(l->concurrency, 4);
	ck_assert_int_eq(l->quota, 1000);
	ck_assert_uint_eq(l->ntools, 2);
	ck_assert_str_eq(l->tools[1], "stream*");
	ck_assert_uint_eq(l->nendpoints, 2);
	l = conf_limit_find(c, "slow");
	ck_assert_int_eq(l->period_ms, 60000);
	ck_assert_int_eq(l->burst, 30);		/* N of rate */
	ck_assert_int_eq(c->limit_fallback, CONF_LIMIT_LOCAL);
	conf_free(c);

	expect_error("limit a {\n rate 1/s\n}\n",
	    "t.conf:1: limit a: missing \"key principal|client|tool|"
	    "upstream...\"");
	expect_error("limit a {\n key tool\n}\n",
	    "t.conf:1: limit a: it limits nothing (rate, concurrency or "
	    "quota)");
	expect_error("limit a {\n key tool\n rate 1/d\n}\n",
	    "t.conf:3: rate: expected N/s, N/m or N/h, not \"1/d\"");
	expect_error_has("limit a {\n key tool\n rate 0/s\n}\n",
	    "expected N/UNIT with N from 1");
	expect_error_has("limit a {\n key tool sky\n rate 1/s\n}\n",
	    "expected principal|client|tool|upstream, not \"sky\"");
	expect_error_has("limit a {\n key tool tool\n rate 1/s\n}\n",
	    "tool given twice");
	expect_error("limit a {\n key tool\n concurrency 1\n burst 3\n}\n",
	    "t.conf:4: limit a: burst without rate");
	expect_error_has("limit a {\n key tool\n quota 5/week\n}\n",
	    "expected N/day");
	expect_error_has("limit a {\n key tool\n rate 1/s\n endpoints mcp\n"
	    "}\n", "path must start with \"/\"");
	expect_error_has("limit a {\n key tool\n rate 1/s\n}\n"
	    "limit a {\n key tool\n rate 1/s\n}\n", "duplicate limit a");
	expect_error_has("limit a{b {\n key tool\n rate 1/s\n}\n",
	    "invalid name");
}
END_TEST

/* A bucket of 2 refilled once an hour: two calls, then the wait. */
START_TEST(test_limit_burst_then_refused)
{
	struct limit_refusal	r;

	use("limit b {\n key principal\n rate 1/h\n burst 2\n}\n");
	ck_assert_int_eq(check(NULL, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "echo", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_str_eq(r.limit, "b");
	ck_assert_int_eq(r.reason, LIMIT_RATE);
	/* A whole token, at one an hour: about an hour. */
	ck_assert(r.retry_ms > 3500 * 1000 && r.retry_ms <= 3600 * 1000);
	ck_assert_uint_eq(limit_retry_seconds(&r), (r.retry_ms + 999) / 1000);
}
END_TEST

/* Principals, tools and endpoints: each its own bucket, or not counted. */
START_TEST(test_limit_keys_and_patterns)
{
	struct auth_principal	*alice, *bob;
	struct limit_refusal	 r;

	alice = auth_principal_new("https://as", "alice", NULL, "");
	bob = auth_principal_new("https://as", "bob", NULL, "");
	use("limit p {\n key principal\n rate 1/h\n burst 1\n tools echo s*\n"
	    " endpoints /mcp\n}\n");
	ck_assert_int_eq(check(alice, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(alice, "echo", "/mcp", NULL, &r),
	    LIMIT_REFUSE);
	/* The same principal's other tool counts in the same bucket. */
	ck_assert_int_eq(check(alice, "stream", "/mcp", NULL, &r),
	    LIMIT_REFUSE);
	ck_assert_int_eq(check(bob, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	/* Not covered: another tool, another endpoint. */
	ck_assert_int_eq(check(alice, "notify", "/mcp", NULL, &r),
	    LIMIT_ADMIT);
	ck_assert_int_eq(check(alice, "echo", "/mcp/other", NULL, &r),
	    LIMIT_ADMIT);
	/* Anonymous is one principal of its own. */
	ck_assert_int_eq(check(NULL, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "echo", "/mcp", NULL, &r), LIMIT_REFUSE);
	auth_principal_unref(alice);
	auth_principal_unref(bob);
}
END_TEST

/*
 * key client: tokens of one client id share a bucket whoever their
 * subject; tokens without one share the no-client key. key principal
 * tool: a bucket per principal and tool.
 */
START_TEST(test_limit_client_and_combined_keys)
{
	struct auth_principal	*a, *b, *c, *n;
	struct limit_refusal	 r;

	a = auth_principal_new("https://as", "alice", "ci", "");
	b = auth_principal_new("https://as", "bob", "ci", "");
	c = auth_principal_new("https://as", "carol", "desktop", "");
	n = auth_principal_new("https://as", "dave", NULL, "");
	use("limit c {\n key client\n rate 1/h\n burst 1\n}\n");
	ck_assert_int_eq(check(a, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(b, "echo", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_str_eq(r.limit, "c");
	ck_assert_int_eq(check(c, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(n, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "echo", "/mcp", NULL, &r),
	    LIMIT_REFUSE);

	use("limit pt {\n key principal tool\n rate 1/h\n burst 1\n}\n");
	ck_assert_int_eq(check(a, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(a, "echo", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_int_eq(check(a, "stream", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(b, "echo", "/mcp", NULL, &r), LIMIT_ADMIT);
	auth_principal_unref(a);
	auth_principal_unref(b);
	auth_principal_unref(c);
	auth_principal_unref(n);
}
END_TEST

/* Refused by one limit: the token the other gave goes back. */
START_TEST(test_limit_refusal_gives_back)
{
	struct limit_refusal	r;

	use("limit a {\n key principal\n rate 1/h\n burst 1\n tools x\n}\n"
	    "limit b {\n key principal\n rate 1/h\n burst 2\n}\n");
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_str_eq(r.limit, "a");
	/* b gave its token back: one is left for y. */
	ck_assert_int_eq(check(NULL, "y", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "y", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_str_eq(r.limit, "b");
}
END_TEST

static void
stat_of(const char *name, struct limit_stat *st)
{
	size_t	i;

	for (i = 0; i < limit_stat_count(); i++) {
		limit_stat(i, st);
		if (strcmp(st->name, name) == 0)
			return;
	}
	ck_abort_msg("no stat for limit %s", name);
}

START_TEST(test_limit_concurrency_ticket)
{
	struct limit_ticket	*t1, *t2;
	struct limit_refusal	 r;
	struct limit_stat	 st;

	use("limit c {\n key principal\n concurrency 2\n}\n");
	ck_assert_int_eq(check(NULL, "x", "/mcp", &t1, &r), LIMIT_ADMIT);
	ck_assert_ptr_nonnull(t1);
	ck_assert_int_eq(check(NULL, "x", "/mcp", &t2, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_int_eq(r.reason, LIMIT_CONCURRENCY);
	ck_assert_uint_eq(r.retry_ms, 1000);
	stat_of("c", &st);
	ck_assert_uint_eq(st.running, 2);
	ck_assert_uint_eq(st.refused[LIMIT_CONCURRENCY], 1);
	limit_ticket_free(t1);
	ck_assert_int_eq(check(NULL, "x", "/mcp", &t1, &r), LIMIT_ADMIT);
	limit_ticket_free(t1);
	limit_ticket_free(t2);
	stat_of("c", &st);
	ck_assert_uint_eq(st.running, 0);
}
END_TEST

START_TEST(test_limit_quota)
{
	struct limit_refusal	r;
	struct limit_totals	t;

	use("limit q {\n key principal\n quota 2/day\n}\n");
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_ADMIT);
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_REFUSE);
	ck_assert_int_eq(r.reason, LIMIT_QUOTA);
	ck_assert(r.retry_ms > 0 && r.retry_ms <= 86400 * 1000);
	/* The day's count is kept: the entry stays through the cron. */
	limit_cron();
	limit_totals(&t);
	ck_assert_uint_eq(t.keys, 1);
	ck_assert_int_eq(check(NULL, "x", "/mcp", NULL, &r), LIMIT_REFUSE);
}
END_TEST

/* Nothing covers: admitted, no ticket, nothing kept. */
START_TEST(test_limit_none)
{
	struct limit_ticket	*t;
	struct limit_refusal	 r;
	struct limit_totals	 tot;

	use("builtin_tools on\n");
	ck_assert_int_eq(check(NULL, "x", "/mcp", &t, &r), LIMIT_ADMIT);
	ck_assert_ptr_null(t);
	ck_assert_int_eq(limit_any(), 0);
	limit_totals(&tot);
	ck_assert_uint_eq(tot.keys, 0);
}
END_TEST

static Suite *
limit_suite(void)
{
	Suite	*s = suite_create("limit");
	TCase	*tc = tcase_create("limit");

	tcase_add_unchecked_fixture(tc, limit_init, NULL);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_limit_syntax);
	tcase_add_test(tc, test_limit_burst_then_refused);
	tcase_add_test(tc, test_limit_keys_and_patterns);
	tcase_add_test(tc, test_limit_client_and_combined_keys);
	tcase_add_test(tc, test_limit_refusal_gives_back);
	tcase_add_test(tc, test_limit_concurrency_ticket);
	tcase_add_test(tc, test_limit_quota);
	tcase_add_test(tc, test_limit_none);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(limit_suite)
