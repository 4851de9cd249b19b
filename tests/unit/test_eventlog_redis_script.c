/*
 * Unit tests for the redis event log's pure half (redis_script.c): key
 * names, id parsing, and the parsing of the script's answers, of pub/sub
 * messages and of CONFIG GET, on replies built by hand (no server).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "unit.h"

#include "eventlog.h"
#include "redis_script.h"

/* Hand-built replies: a pool freed after each test. */
#define POOL	256

static redisReply	 pool[POOL];
static redisReply	*arrays[POOL][16];
static size_t		 used;

static redisReply *
rep_new(int type)
{
	redisReply	*r;

	ck_assert_uint_lt(used, POOL);
	r = &pool[used++];
	memset(r, 0, sizeof *r);
	r->type = type;
	return (r);
}

static redisReply *
rep_str(const char *s)
{
	redisReply	*r = rep_new(REDIS_REPLY_STRING);

	r->str = (char *)s;
	r->len = strlen(s);
	return (r);
}

static redisReply *
rep_bin(const char *s, size_t len)
{
	redisReply	*r = rep_new(REDIS_REPLY_STRING);

	r->str = (char *)s;
	r->len = len;
	return (r);
}

static redisReply *
rep_int(long long v)
{
	redisReply	*r = rep_new(REDIS_REPLY_INTEGER);

	r->integer = v;
	return (r);
}

static redisReply *
rep_err(const char *s)
{
	redisReply	*r = rep_new(REDIS_REPLY_ERROR);

	r->str = (char *)s;
	r->len = strlen(s);
	return (r);
}

/* An array of n elements, given as a NULL-terminated list. */
static redisReply *
rep_array(redisReply *first, ...)
{
	redisReply	*r = rep_new(REDIS_REPLY_ARRAY);
	redisReply	**el = arrays[used - 1];
	redisReply	*e;
	va_list		 ap;
	size_t		 n = 0;

	va_start(ap, first);
	for (e = first; e != NULL; e = va_arg(ap, redisReply *)) {
		ck_assert_uint_lt(n, 16);
		el[n++] = e;
	}
	va_end(ap);
	r->element = el;
	r->elements = n;
	return (r);
}

static void
setup(void)
{
	used = 0;
}

static void
teardown(void)
{
}

/* Parses reply; expects success. */
static void
parse_ok(redisReply *reply, struct redis_script_result *res)
{
	char	*cause = NULL;
	int	 rc;

	rc = redis_script_result(reply, res, &cause);
	ck_assert_msg(rc == 0, "parse failed: %s", cause);
}

static void
parse_bad(redisReply *reply)
{
	struct redis_script_result	 res;
	char				*cause = NULL;

	ck_assert_int_eq(redis_script_result(reply, &res, &cause), -1);
	ck_assert_ptr_nonnull(cause);
	ck_assert_ptr_null(res.entries);
	free(cause);
}

START_TEST(test_keys)
{
	char	*s;

	s = redis_script_meta_key("abc");
	ck_assert_str_eq(s, "mcpd:{abc}:meta");
	free(s);
	s = redis_script_stream_key("abc", 281474976710655ULL);
	ck_assert_str_eq(s, "mcpd:{abc}:s:281474976710655");
	free(s);
	s = redis_script_stream_prefix("abc");
	ck_assert_str_eq(s, "mcpd:{abc}:s:");
	free(s);
	s = redis_script_channel("abc");
	ck_assert_str_eq(s, "mcpd:{abc}:events");
	free(s);
	s = redis_script_task_key("abc");
	ck_assert_str_eq(s, "mcpd:{abc}:task");
	free(s);
}
END_TEST

/* {status} alone: no info, no entries. */
START_TEST(test_result_status_only)
{
	struct redis_script_result	res;
	static const struct {
		const char		*name;
		enum eventlog_status	 status;
	} cases[] = {
		{ "ok", EVENTLOG_OK },
		{ "conflict", EVENTLOG_CONFLICT },
		{ "not-found", EVENTLOG_NOT_FOUND },
		{ "expired", EVENTLOG_EXPIRED },
	};
	size_t	i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		parse_ok(rep_array(rep_str(cases[i].name), NULL), &res);
		ck_assert_int_eq(res.status, cases[i].status);
		ck_assert_int_eq(res.has_info, 0);
		ck_assert_uint_eq(res.nentries, 0);
		ck_assert_ptr_null(res.entries);
		redis_script_result_clear(&res);
	}
}
END_TEST

START_TEST(test_result_info)
{
	struct redis_script_result	res;

	parse_ok(rep_array(rep_str("ok"), rep_str("10"), rep_str("6"),
	    rep_int(0), NULL), &res);
	ck_assert_int_eq(res.status, EVENTLOG_OK);
	ck_assert_int_eq(res.has_info, 1);
	ck_assert_uint_eq(res.info.head, 10);
	ck_assert_uint_eq(res.info.oldest, 6);
	ck_assert_int_eq(res.info.ended, 0);
	ck_assert_uint_eq(res.nentries, 0);
	redis_script_result_clear(&res);

	parse_ok(rep_array(rep_str("ended"), rep_str("2"), rep_str("0"),
	    rep_int(1), NULL), &res);
	ck_assert_int_eq(res.status, EVENTLOG_ENDED);
	ck_assert_int_eq(res.info.ended, 1);
	redis_script_result_clear(&res);

	parse_ok(rep_array(rep_str("trimmed"), rep_str("10"), rep_str("6"),
	    rep_int(0), NULL), &res);
	ck_assert_int_eq(res.status, EVENTLOG_TRIMMED);
	redis_script_result_clear(&res);

	parse_ok(rep_array(rep_str("ahead"), rep_str("5"), rep_str("0"),
	    rep_int(0), NULL), &res);
	ck_assert_int_eq(res.status, EVENTLOG_AHEAD);
	ck_assert_uint_eq(res.info.head, 5);
	redis_script_result_clear(&res);

	parse_ok(rep_array(rep_str("conflict"), rep_str("18446744073709551615"),
	    rep_str("18446744073709551615"), rep_int(0), NULL), &res);
	ck_assert_int_eq(res.status, EVENTLOG_CONFLICT);
	ck_assert_uint_eq(res.info.head, UINT64_MAX);
	redis_script_result_clear(&res);
}
END_TEST

START_TEST(test_result_entries)
{
	struct redis_script_result	res;

	parse_ok(rep_array(rep_str("ok"), rep_str("3"), rep_str("0"),
	    rep_int(1), rep_str("0"), rep_str(""), rep_str("1"),
	    rep_bin("a\0b", 3), rep_str("2"), rep_str("{\"n\":2}"), NULL),
	    &res);
	ck_assert_int_eq(res.status, EVENTLOG_OK);
	ck_assert_uint_eq(res.info.head, 3);
	ck_assert_int_eq(res.info.ended, 1);
	ck_assert_uint_eq(res.nentries, 3);
	ck_assert_uint_eq(res.entries[0].seq, 0);
	ck_assert_uint_eq(res.entries[0].len, 0);
	ck_assert_uint_eq(res.entries[1].seq, 1);
	ck_assert_uint_eq(res.entries[1].len, 3);
	ck_assert_int_eq(memcmp(res.entries[1].data, "a\0b", 3), 0);
	ck_assert_uint_eq(res.entries[2].seq, 2);
	ck_assert_str_eq(res.entries[2].data, "{\"n\":2}");
	redis_script_result_clear(&res);
	ck_assert_ptr_null(res.entries);
	ck_assert_uint_eq(res.nentries, 0);
}
END_TEST

START_TEST(test_result_bad)
{
	/* Not an array, empty, unknown or badly typed status. */
	parse_bad(rep_str("ok"));
	parse_bad(rep_int(0));
	parse_bad(rep_array(NULL));
	parse_bad(rep_array(rep_str("fine"), NULL));
	parse_bad(rep_array(rep_int(0), NULL));
	parse_bad(rep_array(rep_str("cancelled"), NULL));
	parse_bad(rep_array(rep_str("unavailable"), NULL));
	/* Info of the wrong size or type. */
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_int(1), rep_str("0"),
	    rep_int(0), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("x"),
	    rep_int(0), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"),
	    rep_int(2), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"),
	    rep_str("0"), NULL));
	/* Statuses with and without info where the script never sends it. */
	parse_bad(rep_array(rep_str("ahead"), NULL));
	parse_bad(rep_array(rep_str("trimmed"), NULL));
	parse_bad(rep_array(rep_str("ended"), NULL));
	parse_bad(rep_array(rep_str("expired"), rep_str("1"), rep_str("0"),
	    rep_int(0), NULL));
	parse_bad(rep_array(rep_str("not-found"), rep_str("1"), rep_str("0"),
	    rep_int(0), NULL));
	/* Entries: odd count, bad seq, bad data, on a non-ok status. */
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"),
	    rep_int(0), rep_str("1"), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"),
	    rep_int(0), rep_str("1a"), rep_str("x"), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"),
	    rep_int(0), rep_str("1"), rep_int(5), NULL));
	parse_bad(rep_array(rep_str("ok"), rep_str("1"), rep_str("0"),
	    rep_int(0), rep_str("0"), rep_str(""), rep_str("1"), rep_int(5),
	    NULL));
	parse_bad(rep_array(rep_str("ahead"), rep_str("1"), rep_str("0"),
	    rep_int(0), rep_str("1"), rep_str("x"), NULL));
	/* An error reply: the cause is its text. */
	{
		struct redis_script_result	 res;
		char				*cause = NULL;

		ck_assert_int_eq(redis_script_result(rep_err("ERR boom"), &res,
		    &cause), -1);
		ck_assert_str_eq(cause, "ERR boom");
		free(cause);
	}
}
END_TEST

/* The keyring's answer: {"ok", generation, previous, current, next}. */
START_TEST(test_keyring)
{
	struct eventlog_keyring	ring;
	char			big[EVENTLOG_KEY_MAX + 2];

	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("7"), rep_str(""), rep_str("cur"), rep_str("nxt"), NULL),
	    &ring), 0);
	ck_assert_uint_eq(ring.generation, 7);
	ck_assert_str_eq(ring.previous, "");
	ck_assert_str_eq(ring.current, "cur");
	ck_assert_str_eq(ring.next, "nxt");

	memset(big, 'k', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	/* Another status, shape or type; generation 0; a key missing. */
	ck_assert_int_eq(redis_script_keyring(rep_err("ERR x"), &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("conflict"),
	    rep_str("1"), rep_str(""), rep_str("c"), rep_str("n"), NULL),
	    &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("1"), rep_str(""), rep_str("c"), NULL), &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_int(1), rep_str(""), rep_str("c"), rep_str("n"), NULL),
	    &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("0"), rep_str(""), rep_str("c"), rep_str("n"), NULL),
	    &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("1"), rep_str("p"), rep_str(""), rep_str("n"), NULL),
	    &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("1"), rep_str("p"), rep_str("c"), rep_int(5), NULL),
	    &ring), -1);
	/* A key too long, or with a NUL in it. */
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("1"), rep_str(""), rep_str(big), rep_str("n"), NULL),
	    &ring), -1);
	ck_assert_int_eq(redis_script_keyring(rep_array(rep_str("ok"),
	    rep_str("1"), rep_str(""), rep_bin("c\0c", 3), rep_str("n"),
	    NULL), &ring), -1);
}
END_TEST

/* The layout op's answer, {'ok', N}. */
START_TEST(test_layout)
{
	int	layout = 0;

	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"),
	    rep_str("2"), NULL), &layout), 0);
	ck_assert_int_eq(layout, 2);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"),
	    rep_str("17"), NULL), &layout), 0);
	ck_assert_int_eq(layout, 17);
	/* An error, another shape, a mark that is not a layout number. */
	ck_assert_int_eq(redis_script_layout(rep_err("NOPERM x"), &layout),
	    -1);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"), NULL),
	    &layout), -1);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("conflict"),
	    rep_str("2"), NULL), &layout), -1);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"),
	    rep_str("0"), NULL), &layout), -1);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"),
	    rep_str("two"), NULL), &layout), -1);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"),
	    rep_str("99999999999"), NULL), &layout), -1);
	ck_assert_int_eq(redis_script_layout(rep_array(rep_str("ok"),
	    rep_int(2), NULL), &layout), -1);
}
END_TEST

/*
 * Redis Cluster's variant differs in its pub/sub line only: the same
 * lines (an ACL refusal names the command by its line in either), with
 * the sharded commands.
 */
START_TEST(test_sharded_source)
{
	const char	*plain = redis_script_source(0);
	const char	*sharded = redis_script_source(1);
	const char	*p, *q;
	int		 lines = 0, differ = 0;

	ck_assert_ptr_eq(sharded, redis_script_source(1));
	ck_assert_ptr_nonnull(strstr(plain, "'PUBLISH', 'SUBSCRIBE', "
	    "'UNSUBSCRIBE'"));
	ck_assert_ptr_null(strstr(plain, "'SPUBLISH', 'SSUBSCRIBE'"));
	ck_assert_ptr_nonnull(strstr(sharded, "'SPUBLISH', 'SSUBSCRIBE', "
	    "'SUNSUBSCRIBE'"));
	ck_assert_ptr_null(strstr(sharded, "'PUBLISH'"));
	for (p = plain, q = sharded; *p != '\0' && *q != '\0'; lines++) {
		size_t	n = strcspn(p, "\n"), m = strcspn(q, "\n");

		if (n != m || memcmp(p, q, n) != 0)
			differ++;
		p += n + (p[n] == '\n');
		q += m + (q[m] == '\n');
	}
	ck_assert(*p == '\0' && *q == '\0');
	ck_assert_int_gt(lines, 100);
	ck_assert_int_eq(differ, 1);
	/* No command named in a call, so every publish goes by the line. */
	ck_assert_ptr_null(strstr(plain, "call('PUBLISH'"));
}
END_TEST

START_TEST(test_noscript)
{
	ck_assert(redis_script_noscript(rep_err(
	    "NOSCRIPT No matching script. Please use EVAL.")));
	ck_assert(!redis_script_noscript(rep_err("ERR something")));
	ck_assert(!redis_script_noscript(rep_err("NOSCR")));
	ck_assert(!redis_script_noscript(rep_str("NOSCRIPT")));
}
END_TEST

/* The error replies that are about the connection, not one operation. */
START_TEST(test_refusal)
{
	char	why[512];

	ck_assert_int_eq(redis_script_refusal(rep_err("WRONGPASS invalid "
	    "username-password pair or user is disabled."), why, sizeof why),
	    REDIS_REFUSED_AUTH);
	ck_assert_str_eq(why, "WRONGPASS invalid username-password pair or "
	    "user is disabled. (check redis_user and redis_password_file)");
	ck_assert_int_eq(redis_script_refusal(rep_err("NOAUTH Authentication "
	    "required."), why, sizeof why), REDIS_REFUSED_AUTH);
	ck_assert_int_eq(redis_script_refusal(rep_err("NOPERM this user has "
	    "no permissions to run the 'evalsha' command"), why, sizeof why),
	    REDIS_REFUSED_ACL);
	ck_assert_ptr_nonnull(strstr(why, "'evalsha'"));
	ck_assert_int_eq(redis_script_refusal(rep_err("READONLY You can't "
	    "write against a read only replica."), why, sizeof why),
	    REDIS_REFUSED_ROLE);
	ck_assert_int_eq(redis_script_refusal(rep_err("MASTERDOWN Link with "
	    "MASTER is down"), why, sizeof why), REDIS_REFUSED_ROLE);
	/* WAIT on a primary that a failover made a replica (Cluster). */
	ck_assert_int_eq(redis_script_refusal(rep_err("ERR WAIT cannot be "
	    "used with replica instances. Please also note that since Redis "
	    "4.0 if a replica is configured to be writable"), why, sizeof why),
	    REDIS_REFUSED_ROLE);
	ck_assert_int_eq(redis_script_refusal(rep_err("ERR WAIT timeout"),
	    why, sizeof why), REDIS_REFUSED_NONE);
	/* A WAIT blocked on a primary that a failover made a replica. */
	ck_assert_int_eq(redis_script_refusal(rep_err("UNBLOCKED force "
	    "unblock from blocking operation, instance state changed (master "
	    "-> replica?)"), why, sizeof why), REDIS_REFUSED_ROLE);
	ck_assert_int_eq(redis_script_refusal(rep_err("LOADING Redis is "
	    "loading the dataset in memory"), why, sizeof why),
	    REDIS_REFUSED_BUSY);
	ck_assert_int_eq(redis_script_refusal(rep_err("BUSY Redis is busy "
	    "running a script."), why, sizeof why), REDIS_REFUSED_BUSY);
	ck_assert_int_eq(redis_script_refusal(rep_err("TRYAGAIN Multiple keys "
	    "request during rehashing of slot"), why, sizeof why),
	    REDIS_REFUSED_BUSY);
	/* Inside the script: the ACL, named by the script's line. */
	ck_assert_int_eq(redis_script_refusal(rep_err("ERR The user executing "
	    "the script can't run this command or subcommand script: "
	    "0123, on @user_script:1."), why, sizeof why), REDIS_REFUSED_ACL);
	ck_assert_int_eq(redis_script_refusal(rep_err("ERR The user executing "
	    "the script can't publish to the channel mentioned in the command "
	    "script: 0123, on @user_script:0."), why, sizeof why),
	    REDIS_REFUSED_ACL);
	ck_assert_ptr_nonnull(strstr(why, "forbids PUBLISH inside the "
	    "event-log script"));
	/* Errors of one operation, or not errors. */
	ck_assert_int_eq(redis_script_refusal(rep_err("ERR Error running "
	    "script"), why, sizeof why), REDIS_REFUSED_NONE);
	ck_assert_int_eq(redis_script_refusal(rep_err("NOSCRIPT No matching "
	    "script."), why, sizeof why), REDIS_REFUSED_NONE);
	ck_assert_int_eq(redis_script_refusal(rep_err("BUSYKEY Target key "
	    "name already exists."), why, sizeof why), REDIS_REFUSED_NONE);
	ck_assert_int_eq(redis_script_refusal(rep_str("READONLY"), why,
	    sizeof why), REDIS_REFUSED_NONE);
}
END_TEST

/* Every line of the script that calls Redis names its command. */
START_TEST(test_command_at)
{
	const char	*src = redis_script_source(0), *p, *cmd;
	int		 line = 1, calls = 0;
	char		 why[512], text[256];

	for (p = src; *p != '\0'; p++) {
		if (*p == '\n')
			line++;
		if (strncmp(p, "call('", 6) != 0)
			continue;
		cmd = redis_script_command_at(line);
		ck_assert_msg(cmd != NULL, "line %d", line);
		ck_assert_msg(strncmp(p + 6, cmd, strlen(cmd)) == 0 &&
		    p[6 + strlen(cmd)] == '\'', "line %d: %s", line, cmd);
		calls++;
	}
	ck_assert_int_gt(calls, 20);
	ck_assert_ptr_null(redis_script_command_at(0));
	ck_assert_ptr_null(redis_script_command_at(100000));
	/* The line of the XADD in add(), as Redis names it. */
	for (line = 1, p = src; strncmp(p, "call('XADD', stream, argv[j]", 28)
	    != 0; p++) {
		if (*p == '\n')
			line++;
	}
	snprintf(text, sizeof text, "ERR The user executing the script can't "
	    "run this command or subcommand script: 0123, on "
	    "@user_script:%d.", line);
	ck_assert_int_eq(redis_script_refusal(rep_err(text), why, sizeof why),
	    REDIS_REFUSED_ACL);
	ck_assert_msg(strstr(why, "forbids XADD inside") != NULL, "%s", why);
}
END_TEST

START_TEST(test_info)
{
	struct redis_info	info;
	const char		*text =
	    "# Server\r\nredis_version:7.0.15\r\n"
	    "run_id:0123456789abcdef0123456789abcdef01234567\r\n"
	    "uptime_in_seconds:3\r\n\r\n# Keyspace\r\n"
	    "db0:keys=12,expires=3,avg_ttl=0\r\n"
	    "db2:keys=5,expires=0,avg_ttl=0\r\n";

	ck_assert_int_eq(redis_script_info(rep_str(text), 0, &info), 0);
	ck_assert_str_eq(info.run_id,
	    "0123456789abcdef0123456789abcdef01234567");
	ck_assert_int_eq(info.keys, 12);
	ck_assert_str_eq(info.role, "");
	ck_assert_int_eq(info.cluster, -1);	/* not said */
	ck_assert_int_eq(redis_script_info(rep_str(
	    "run_id:r\r\n# Cluster\r\ncluster_enabled:1\r\n"), 0, &info), 0);
	ck_assert_int_eq(info.cluster, 1);
	ck_assert_int_eq(redis_script_info(rep_str(
	    "run_id:r\r\n# Cluster\r\ncluster_enabled:0\r\n"), 0, &info), 0);
	ck_assert_int_eq(info.cluster, 0);
	ck_assert_int_eq(redis_script_info(rep_str(
	    "run_id:r\r\ncluster_enabled:10\r\n"), 0, &info), 0);
	ck_assert_int_eq(info.cluster, -1);
	ck_assert_int_eq(redis_script_info(rep_str(
	    "run_id:r\r\n# Memory\r\nmaxmemory_policy:allkeys-lru\r\n"
	    "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\n"), 0,
	    &info), 0);
	ck_assert_str_eq(info.role, "slave");
	ck_assert_str_eq(info.policy, "allkeys-lru");
	ck_assert_int_eq(redis_script_info(rep_str(text), 2, &info), 0);
	ck_assert_int_eq(info.keys, 5);
	/* No line for a database without keys; db1 is not db12's prefix. */
	ck_assert_int_eq(redis_script_info(rep_str(text), 1, &info), 0);
	ck_assert_int_eq(info.keys, 0);
	ck_assert_int_eq(redis_script_info(rep_str(
	    "run_id:abc\ndb12:keys=7,expires=0\n"), 1, &info), 0);
	ck_assert_str_eq(info.run_id, "abc");
	ck_assert_int_eq(info.keys, 0);
	/* Without a run id, or not text: nothing to go by. */
	ck_assert_int_eq(redis_script_info(rep_str("# Server\r\n"), 0,
	    &info), -1);
	ck_assert_int_eq(redis_script_info(rep_err("ERR unknown command"), 0,
	    &info), -1);
}
END_TEST

START_TEST(test_pubsub)
{
	struct redis_pubsub	ps;

	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("subscribe"),
	    rep_str("mcpd:{a}:events"), rep_int(1), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_SUBSCRIBE);
	ck_assert_str_eq(ps.channel, "mcpd:{a}:events");
	ck_assert_uint_eq(ps.channellen, 15);

	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("unsubscribe"),
	    rep_str("mcpd:{a}:events"), rep_int(0), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_UNSUBSCRIBE);

	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("mcpd:{a}:events"), rep_str("42-7"), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_MESSAGE);
	ck_assert_uint_eq(ps.k, 42);
	ck_assert_uint_eq(ps.seq, 7);

	/* Sharded (Redis Cluster): the same to us. */
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("ssubscribe"),
	    rep_str("mcpd:{a}:events"), rep_int(1), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_SUBSCRIBE);
	ck_assert_int_eq(redis_script_pubsub(rep_array(
	    rep_str("sunsubscribe"), rep_str("mcpd:{a}:events"), rep_int(0),
	    NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_UNSUBSCRIBE);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("smessage"),
	    rep_str("mcpd:{a}:events"), rep_str("43-8"), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_MESSAGE);
	ck_assert_uint_eq(ps.k, 43);
	ck_assert_uint_eq(ps.seq, 8);

	/* A process's message ("m " then its text), and the script's. */
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("mcpd:{a}:events"), rep_str("m d 42 7"), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_MESSAGE);
	ck_assert_uint_eq(ps.k, 0);
	ck_assert_uint_eq(ps.len, 6);
	ck_assert(memcmp(ps.data, "d 42 7", 6) == 0);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("mcpd:{a}:events"), rep_str(EVENTLOG_MESSAGE_DELETED),
	    NULL), &ps), 0);
	ck_assert_uint_eq(ps.k, 0);
	ck_assert_uint_eq(ps.len, strlen(EVENTLOG_MESSAGE_DELETED));
	ck_assert(memcmp(ps.data, EVENTLOG_MESSAGE_DELETED, ps.len) == 0);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("c"), rep_str("m "), NULL), &ps), -1);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("c"), rep_str("!"), NULL), &ps), -1);

	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("psubscribe"),
	    rep_str("x*"), rep_int(1), NULL), &ps), 0);
	ck_assert_int_eq(ps.kind, REDIS_PUBSUB_OTHER);

	/* A message must carry a real id (stream 0 is never one). */
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("c"), rep_str("0-1"), NULL), &ps), -1);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("c"), rep_str("hello"), NULL), &ps), -1);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("c"), rep_int(3), NULL), &ps), -1);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_int(1), rep_str("1-1"), NULL), &ps), -1);
	ck_assert_int_eq(redis_script_pubsub(rep_array(rep_str("message"),
	    rep_str("c"), NULL), &ps), -1);
	ck_assert_int_eq(redis_script_pubsub(rep_str("message"), &ps), -1);
}
END_TEST

/* The script names every operation and status the C side relies on. */
START_TEST(test_source)
{
	const char	*s = redis_script_source(0);
	static const char *words[] = {
		"'store'", "'delete'", "'create'", "'append'", "'end'",
		"'read'", "'ok'", "'conflict'", "'not-found'", "'expired'",
		"'ahead'", "'trimmed'", "'ended'", "'XADD'", "'MAXLEN'",
		"'PUBLISH'", "'PEXPIRE'", "'UNLINK'", "'keyring'",
		"'layout'", "'TRYAGAIN", NULL
	};
	int		 i;

	for (i = 0; words[i] != NULL; i++)
		ck_assert_msg(strstr(s, words[i]) != NULL, "missing %s",
		    words[i]);
	/* Exact trimming: the approximate form would make oldest vary. */
	ck_assert_ptr_null(strstr(s, "'~'"));
}
END_TEST

static Suite *
redis_script_suite(void)
{
	Suite	*s = suite_create("eventlog_redis_script");
	TCase	*tc;

	tc = tcase_create("pure");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_result_status_only);
	tcase_add_test(tc, test_result_info);
	tcase_add_test(tc, test_result_entries);
	tcase_add_test(tc, test_result_bad);
	tcase_add_test(tc, test_keyring);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_sharded_source);
	tcase_add_test(tc, test_noscript);
	tcase_add_test(tc, test_refusal);
	tcase_add_test(tc, test_command_at);
	tcase_add_test(tc, test_info);
	tcase_add_test(tc, test_pubsub);
	tcase_add_test(tc, test_source);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(redis_script_suite)
