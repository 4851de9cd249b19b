/*
 * Unit tests for redis_cluster.c: key slots (Redis's own test vectors and
 * mcpd's keys), the slot map from CLUSTER SHARDS and CLUSTER SLOTS as a
 * 7.0 cluster of three primaries and three replicas answers them (in the
 * protocol, parsed by hiredis's reader), with their variations, and the
 * MOVED and ASK redirections. No server.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "unit.h"

#include "redis_cluster.h"
#include "redis_script.h"

/* The protocol, written here: a bulk string, an integer, an array. */
static char *
bulk(const char *s)
{
	char	*out;

	ck_assert_int_ge(asprintf(&out, "$%zu\r\n%s\r\n", strlen(s), s), 0);
	return (out);
}

static char *
num(long long v)
{
	char	*out;

	ck_assert_int_ge(asprintf(&out, ":%lld\r\n", v), 0);
	return (out);
}

/* An array of the elements given (each freed), NULL-terminated. */
static char *
arr(char *first, ...)
{
	va_list	 ap;
	char	*e, *out, *body = strdup(""), *tmp;
	int	 n = 0;

	va_start(ap, first);
	for (e = first; e != NULL; e = va_arg(ap, char *)) {
		ck_assert_int_ge(asprintf(&tmp, "%s%s", body, e), 0);
		free(body);
		free(e);
		body = tmp;
		n++;
	}
	va_end(ap);
	ck_assert_int_ge(asprintf(&out, "*%d\r\n%s", n, body), 0);
	free(body);
	return (out);
}

/* The reply that text is (text freed). */
static redisReply *
parse(char *text)
{
	redisReader	*rd = redisReaderCreate();
	void		*reply = NULL;

	ck_assert_int_eq(redisReaderFeed(rd, text, strlen(text)), REDIS_OK);
	ck_assert_int_eq(redisReaderGetReply(rd, &reply), REDIS_OK);
	ck_assert_ptr_nonnull(reply);
	redisReaderFree(rd);
	free(text);
	return (reply);
}

static redisReply *
error(const char *s)
{
	char	*text;

	ck_assert_int_ge(asprintf(&text, "-%s\r\n", s), 0);
	return (parse(text));
}

/* A node of CLUSTER SHARDS, as 7.0 writes it. */
static char *
shard_node(const char *id, int port, const char *ip, const char *role,
    const char *health)
{
	return (arr(bulk("id"), bulk(id), bulk("port"), num(port),
	    bulk("ip"), bulk(ip), bulk("endpoint"), bulk(ip), bulk("role"),
	    bulk(role), bulk("replication-offset"), num(0), bulk("health"),
	    bulk(health), NULL));
}

static char *
shard(long long from, long long to, char *primary, char *replica)
{
	return (arr(bulk("slots"), arr(num(from), num(to), NULL),
	    bulk("nodes"), arr(primary, replica, NULL), NULL));
}

/* What the cluster of with-redis --cluster answered (ids shortened). */
static redisReply *
three_shards(const char *health2)
{
	return (parse(arr(
	    shard(5461, 10922, shard_node("b", 35186, "127.0.0.1", "master",
	    "online"), shard_node("e", 32437, "127.0.0.1", "replica",
	    "loading")),
	    shard(10923, 16383, shard_node("c", 28748, "127.0.0.1", "master",
	    health2), shard_node("f", 37625, "127.0.0.1", "replica",
	    "online")),
	    shard(0, 5460, shard_node("a", 31162, "127.0.0.1", "master",
	    "online"), shard_node("d", 27466, "127.0.0.1", "replica",
	    "online")),
	    NULL)));
}

/* Redis's vectors (cluster.tcl, CLUSTER KEYSLOT) and mcpd's keys. */
START_TEST(test_keyslot)
{
	static const struct {
		const char	*key;
		unsigned int	 slot;
	} v[] = {
		{ "123456789", 0x31c3 & 16383 },	/* CRC16 check value */
		{ "foo", 12182 },
		{ "bar", 5061 },
		{ "{user1000}.following", 3443 },
		{ "{user1000}.followers", 3443 },
		{ "foo{}{bar}", 8363 },		/* empty tag: whole key */
		{ "foo{{bar}}zap", 4015 },	/* tag "{bar" */
		{ "foo{bar}{zap}", 5061 },	/* the first tag */
		{ "mcpd:{abc}:meta", 7638 },
		{ "mcpd:{listen}:events", 397 },
		{ "mcpd:{zzz}:events", 10118 },
		{ "mcpd:{a}:x", 15495 },
		{ "", 0 },
	};
	size_t	i;

	for (i = 0; i < sizeof v / sizeof v[0]; i++)
		ck_assert_msg(redis_cluster_keyslot(v[i].key,
		    strlen(v[i].key)) == v[i].slot, "%s: %u, not %u",
		    v[i].key, redis_cluster_keyslot(v[i].key,
		    strlen(v[i].key)), v[i].slot);
	/* A session's keys and channel share its slot. */
	ck_assert_uint_eq(redis_cluster_keyslot("mcpd:{abc}:s:12", 15),
	    redis_cluster_keyslot("abc", 3));
	ck_assert_uint_eq(redis_cluster_keyslot(REDIS_SCRIPT_LAYOUT_KEY,
	    strlen(REDIS_SCRIPT_LAYOUT_KEY)),
	    redis_cluster_keyslot("layout", 6));
}
END_TEST

/* CRC16 XMODEM bit by bit: the reference for the remembered slots. */
static unsigned int
crc16_slow(const char *p, size_t len)
{
	unsigned int	crc = 0;
	size_t		i;
	int		j;

	for (i = 0; i < len; i++) {
		crc ^= (unsigned int)(unsigned char)p[i] << 8;
		for (j = 0; j < 8; j++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
	}
	return (crc & 0xffff & 16383);
}

/*
 * Slots are remembered by two bytes of the tag: tags sharing those bytes
 * and their length (so the same place in the memo), asked in turns, each
 * get their own slot, and so do session ids and keys asked many times
 * over in any order.
 */
START_TEST(test_keyslot_remembered)
{
	char		ids[300][33], key[64];
	unsigned int	seed = 7;
	int		i, j, round;

	for (i = 0; i < 300; i++) {
		for (j = 0; j < 32; j++) {
			seed = seed * 1103515245u + 12345u;
			ids[i][j] = "0123456789abcdef"[(seed >> 16) & 15];
		}
		ids[i][32] = '\0';
	}
	/* The first 100 differ only before the bytes the memo is indexed by. */
	for (i = 1; i < 100; i++) {
		memcpy(ids[i] + 16, ids[0] + 16, 17);
		ids[i][0] = "0123456789abcdef"[i % 16];
		ids[i][1] = "0123456789abcdef"[i / 16];
	}
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 300; i++) {
			j = round == 1 ? 299 - i : (i * 7) % 300;
			ck_assert_uint_eq(redis_cluster_keyslot(ids[j], 32),
			    crc16_slow(ids[j], 32));
			snprintf(key, sizeof key, "mcpd:{%s}:s:%d", ids[j], i);
			ck_assert_uint_eq(redis_cluster_keyslot(key,
			    strlen(key)), crc16_slow(ids[j], 32));
		}
	}
	/* Longer than the memo's room: computed every time. */
	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	ck_assert_uint_eq(redis_cluster_keyslot(key, strlen(key)),
	    crc16_slow(key, strlen(key)));
	key[0] = 'j';
	ck_assert_uint_eq(redis_cluster_keyslot(key, strlen(key)),
	    crc16_slow(key, strlen(key)));
}
END_TEST

START_TEST(test_shards)
{
	struct redis_cluster_map	*m = calloc(1, sizeof *m);
	redisReply			*reply = three_shards("online");
	char				*cause = NULL;
	int				 a, b, c;

	ck_assert_int_eq(redis_cluster_shards(reply, 0, "127.0.0.1", 31162,
	    m, &cause), 0);
	ck_assert_int_eq(m->nnodes, 3);
	ck_assert_int_eq(m->covered, REDIS_CLUSTER_SLOTS);
	a = redis_cluster_find(m, "127.0.0.1", 31162);
	b = redis_cluster_find(m, "127.0.0.1", 35186);
	c = redis_cluster_find(m, "127.0.0.1", 28748);
	ck_assert(a >= 0 && b >= 0 && c >= 0);
	ck_assert_int_eq(redis_cluster_find(m, "127.0.0.1", 27466), -1);
	ck_assert_int_eq(m->slot[0], a);
	ck_assert_int_eq(m->slot[5460], a);
	ck_assert_int_eq(m->slot[5461], b);
	ck_assert_int_eq(m->slot[10922], b);
	ck_assert_int_eq(m->slot[10923], c);
	ck_assert_int_eq(m->slot[16383], c);
	ck_assert_str_eq(m->nodes[b].id, "b");
	freeReplyObject(reply);

	/* A failed primary's slots are not served. */
	reply = three_shards("failed");
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "127.0.0.1", 31162,
	    m, &cause), 0);
	ck_assert_int_eq(m->nnodes, 2);
	ck_assert_int_eq(m->covered, 10923);
	ck_assert_int_eq(m->slot[16383], -1);
	freeReplyObject(reply);
	free(m);
}
END_TEST

/* TLS ports; a node that does not know its address; several ranges. */
START_TEST(test_shards_variants)
{
	struct redis_cluster_map	*m = calloc(1, sizeof *m);
	redisReply			*reply;
	char				*cause = NULL;

	reply = parse(arr(arr(bulk("slots"), arr(num(0), num(99), num(200),
	    num(16383), NULL), bulk("nodes"), arr(arr(bulk("id"), bulk("x"),
	    bulk("port"), num(7000), bulk("tls-port"), num(7443),
	    bulk("ip"), bulk("?"), bulk("endpoint"), bulk("?"),
	    bulk("role"), bulk("master"), bulk("health"), bulk("online"),
	    NULL), NULL), NULL), arr(bulk("slots"), arr(num(100), num(199),
	    NULL), bulk("nodes"), arr(arr(bulk("id"), bulk("y"),
	    bulk("port"), num(7001), bulk("tls-port"), num(7444),
	    bulk("ip"), bulk("10.0.0.2"), bulk("endpoint"),
	    bulk("redis-2.example"), bulk("hostname"),
	    bulk("redis-2.example"), bulk("role"), bulk("master"),
	    bulk("health"), bulk("online"), NULL), NULL), NULL), NULL));
	ck_assert_int_eq(redis_cluster_shards(reply, 1, "seed.example", 7443,
	    m, &cause), 0);
	ck_assert_int_eq(m->nnodes, 2);
	ck_assert_int_eq(m->covered, REDIS_CLUSTER_SLOTS);
	ck_assert_str_eq(m->nodes[m->slot[0]].host, "seed.example");
	ck_assert_int_eq(m->nodes[m->slot[0]].port, 7443);
	ck_assert_str_eq(m->nodes[m->slot[150]].host, "redis-2.example");
	ck_assert_int_eq(m->nodes[m->slot[150]].port, 7444);
	/* Plaintext: the port. */
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "seed.example", 7000,
	    m, &cause), 0);
	ck_assert_int_eq(m->nodes[m->slot[150]].port, 7001);
	freeReplyObject(reply);
	free(m);
}
END_TEST

START_TEST(test_shards_bad)
{
	struct redis_cluster_map	*m = calloc(1, sizeof *m);
	redisReply			*reply;
	char				*cause = NULL;

	/* An error (a Redis before 7, or not a cluster) says so. */
	reply = error("ERR This instance has cluster support disabled");
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "h", 1, m, &cause),
	    -1);
	ck_assert_ptr_nonnull(strstr(cause, "cluster support disabled"));
	free(cause);
	freeReplyObject(reply);
	/* Overlapping ranges, a slot out of range, no nodes. */
	reply = parse(arr(shard(0, 10, shard_node("a", 1, "h", "master",
	    "online"), shard_node("b", 2, "h", "replica", "online")),
	    shard(10, 20, shard_node("c", 3, "h", "master", "online"),
	    shard_node("d", 4, "h", "replica", "online")), NULL));
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "h", 1, m, &cause),
	    -1);
	ck_assert_int_eq(m->nnodes, 0);
	free(cause);
	freeReplyObject(reply);
	reply = parse(arr(shard(0, 16384, shard_node("a", 1, "h", "master",
	    "online"), shard_node("b", 2, "h", "replica", "online")), NULL));
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "h", 1, m, &cause),
	    -1);
	free(cause);
	freeReplyObject(reply);
	reply = parse(arr(arr(bulk("slots"), arr(num(0), num(1), NULL),
	    NULL), NULL));
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "h", 1, m, &cause),
	    -1);
	free(cause);
	freeReplyObject(reply);
	reply = parse(bulk("OK"));
	ck_assert_int_eq(redis_cluster_shards(reply, 0, "h", 1, m, &cause),
	    -1);
	free(cause);
	freeReplyObject(reply);
	free(m);
}
END_TEST

START_TEST(test_slots)
{
	struct redis_cluster_map	*m = calloc(1, sizeof *m);
	redisReply			*reply;
	char				*cause = NULL;

	/* As 7.0 answered, and with a replica and a node without address. */
	reply = parse(arr(
	    arr(num(0), num(5460), arr(bulk("127.0.0.1"), num(31162),
	    bulk("a"), arr(NULL), NULL), arr(bulk("127.0.0.1"), num(27466),
	    bulk("d"), NULL), NULL),
	    arr(num(5461), num(10922), arr(bulk(""), num(35186), bulk("b"),
	    NULL), NULL),
	    arr(num(10923), num(16383), arr(bulk("127.0.0.1"), num(28748),
	    NULL), NULL),
	    NULL));
	ck_assert_int_eq(redis_cluster_slots(reply, "seed", 6379, m,
	    &cause), 0);
	ck_assert_int_eq(m->nnodes, 3);
	ck_assert_int_eq(m->covered, REDIS_CLUSTER_SLOTS);
	ck_assert_int_eq(m->nodes[m->slot[0]].port, 31162);
	ck_assert_str_eq(m->nodes[m->slot[0]].id, "a");
	ck_assert_str_eq(m->nodes[m->slot[6000]].host, "seed");
	ck_assert_int_eq(m->nodes[m->slot[6000]].port, 6379);
	ck_assert_int_eq(m->nodes[m->slot[16383]].port, 28748);
	ck_assert_int_eq(redis_cluster_find(m, "127.0.0.1", 27466), -1);
	freeReplyObject(reply);

	reply = parse(arr(arr(num(0), num(5460), NULL), NULL));
	ck_assert_int_eq(redis_cluster_slots(reply, "seed", 6379, m,
	    &cause), -1);
	free(cause);
	freeReplyObject(reply);
	reply = parse(arr(arr(num(9), num(1), arr(bulk("h"), num(1), NULL),
	    NULL), NULL));
	ck_assert_int_eq(redis_cluster_slots(reply, "seed", 6379, m,
	    &cause), -1);
	free(cause);
	freeReplyObject(reply);
	free(m);
}
END_TEST

START_TEST(test_redirect)
{
	static const struct {
		const char			*text;
		enum redis_cluster_redirect	 kind;
		unsigned int			 slot;
		const char			*host;
		int				 port;
	} v[] = {
		{ "MOVED 3999 127.0.0.1:6381", REDIS_CLUSTER_MOVED, 3999,
		    "127.0.0.1", 6381 },
		{ "ASK 7638 10.0.0.5:7000", REDIS_CLUSTER_ASK, 7638,
		    "10.0.0.5", 7000 },
		{ "MOVED 1 redis-1.example:6379", REDIS_CLUSTER_MOVED, 1,
		    "redis-1.example", 6379 },
		{ "MOVED 16383 ::1:7001", REDIS_CLUSTER_MOVED, 16383, "::1",
		    7001 },
		{ "MOVED 5 [::1]:7001", REDIS_CLUSTER_MOVED, 5, "::1", 7001 },
		{ "MOVED 3999 :6380", REDIS_CLUSTER_MOVED, 3999, "", 6380 },
		{ "MOVED 16384 h:1", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "MOVED x h:1", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "MOVED 1 h", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "MOVED 1 h:", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "MOVED 1 h:70000", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "MOVED 1 h:0", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "MOVED 1 h:1x", REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "TRYAGAIN Multiple keys request during rehashing of slot",
		    REDIS_CLUSTER_NONE, 0, NULL, 0 },
		{ "ERR MOVED 1 h:1", REDIS_CLUSTER_NONE, 0, NULL, 0 },
	};
	enum redis_cluster_redirect	 kind;
	redisReply			*reply;
	unsigned int			 slot;
	char				 host[REDIS_CLUSTER_HOST_MAX + 1];
	int				 port;
	size_t				 i;

	for (i = 0; i < sizeof v / sizeof v[0]; i++) {
		reply = error(v[i].text);
		kind = redis_cluster_redirect(reply, &slot, host, sizeof host,
		    &port);
		ck_assert_msg(kind == v[i].kind, "%s: %d", v[i].text, kind);
		if (kind != REDIS_CLUSTER_NONE) {
			ck_assert_uint_eq(slot, v[i].slot);
			ck_assert_str_eq(host, v[i].host);
			ck_assert_int_eq(port, v[i].port);
		}
		freeReplyObject(reply);
	}
	/* Not an error; a host longer than the room for it. */
	reply = parse(bulk("MOVED 1 h:1"));
	ck_assert_int_eq(redis_cluster_redirect(reply, &slot, host,
	    sizeof host, &port), REDIS_CLUSTER_NONE);
	freeReplyObject(reply);
	reply = error("MOVED 1 abcdef:1");
	ck_assert_int_eq(redis_cluster_redirect(reply, &slot, host, 4,
	    &port), REDIS_CLUSTER_NONE);
	freeReplyObject(reply);
}
END_TEST

static Suite *
redis_cluster_suite(void)
{
	Suite	*s = suite_create("redis_cluster");
	TCase	*tc = tcase_create("pure");

	tcase_add_test(tc, test_keyslot);
	tcase_add_test(tc, test_keyslot_remembered);
	tcase_add_test(tc, test_shards);
	tcase_add_test(tc, test_shards_variants);
	tcase_add_test(tc, test_shards_bad);
	tcase_add_test(tc, test_slots);
	tcase_add_test(tc, test_redirect);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(redis_cluster_suite)
