/*
 * The redis event log against a real redis-server: the behavioural suite
 * every backend passes (eventlog_cases.c), then what only Redis has: the
 * key layout, pipelining, the in-flight cap, NOSCRIPT, WAIT for replicas,
 * reply timeouts, outages waited out (eventlog_outage_grace) and past
 * the grace, operations sent again after their replies were lost (through
 * a proxy that can swallow replies and cut connections), a server killed
 * and restarted, a server down at start, the maxmemory-policy warning,
 * databases, refused set-ups, and watches across two instances.
 *
 * MCPD_TEST_REDIS_URL=redis://HOST:PORT names a server to use; without it
 * the test starts its own (redis-server on a free port, no persistence, in
 * a temporary directory) and stops it at the end. Tests that kill or pause
 * the server only run against a server of their own.
 */
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <hiredis/hiredis.h>

#include "unit.h"
#include "eventlog_cases.h"

#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "redis_script.h"

#define REDIS_SERVER	"/usr/bin/redis-server"

/* The server: ours (own_server) or the one MCPD_TEST_REDIS_URL names. */
static char	 server_host[256] = "127.0.0.1";
static int	 server_port;
static int	 server_db;
static int	 own_server;
static pid_t	 server_pid = -1;
static char	 server_dir[] = "/tmp/mcpd-test-redis.XXXXXX";

/* Server management. */

/* A port nothing listens on (now); also used outside tests: no ck_assert. */
static int
free_port(void)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			fd, port = -1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return (-1);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	close(fd);
	return (port);
}

/* A synchronous connection for looking behind the backend's back. */
static redisContext *
sync_connect(int port)
{
	struct timeval	 tv = { 1, 0 };
	redisContext	*c;

	c = redisConnectWithTimeout(server_host, port, tv);
	if (c == NULL)
		return (NULL);
	if (c->err) {
		redisFree(c);
		return (NULL);
	}
	if (server_db != 0)
		freeReplyObject(redisCommand(c, "SELECT %d", server_db));
	return (c);
}

static int
server_ping(int port)
{
	redisContext	*c = sync_connect(port);
	redisReply	*reply;
	int		 ok;

	if (c == NULL)
		return (0);
	reply = redisCommand(c, "PING");
	ok = reply != NULL && reply->type == REDIS_REPLY_STATUS;
	freeReplyObject(reply);
	redisFree(c);
	return (ok);
}

/*
 * Starts redis-server on port with more arguments (pairs, NULL after
 * them), dying with its parent; waits until it is up.
 */
static pid_t
server_start_args(int port, ...)
{
	char		 portbuf[16], logfile[512], *argv[32], dbfile[64];
	const char	*a;
	va_list		 ap;
	pid_t		 pid;
	int		 i, argc = 0;

	snprintf(portbuf, sizeof portbuf, "%d", port);
	snprintf(logfile, sizeof logfile, "%s/redis-%d.log", server_dir, port);
	snprintf(dbfile, sizeof dbfile, "dump-%d.rdb", port);
	argv[argc++] = (char *)"redis-server";
	argv[argc++] = (char *)"--port";
	argv[argc++] = portbuf;
	argv[argc++] = (char *)"--bind";
	argv[argc++] = (char *)"127.0.0.1";
	argv[argc++] = (char *)"--save";
	argv[argc++] = (char *)"";
	argv[argc++] = (char *)"--appendonly";
	argv[argc++] = (char *)"no";
	argv[argc++] = (char *)"--dir";
	argv[argc++] = server_dir;
	argv[argc++] = (char *)"--dbfilename";
	argv[argc++] = dbfile;
	argv[argc++] = (char *)"--logfile";
	argv[argc++] = logfile;
	argv[argc++] = (char *)"--maxmemory-policy";
	argv[argc++] = (char *)"noeviction";
	va_start(ap, port);
	while ((a = va_arg(ap, const char *)) != NULL && argc < 30)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	if ((pid = fork()) < 0)
		return (-1);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(REDIS_SERVER, argv);
		_exit(127);
	}
	for (i = 0; i < 500; i++) {
		if (server_ping(port))
			return (pid);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return (-1);
}

static pid_t
server_start(int port)
{
	return (server_start_args(port, (char *)NULL));
}

static void
server_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Runs one command on the test server (or another port); returns reply. */
static redisReply *
sync_command_port(int port, const char *fmt, ...)
{
	redisContext	*c = sync_connect(port);
	redisReply	*reply;
	va_list		 ap;

	ck_assert_msg(c != NULL, "cannot connect to port %d", port);
	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(reply);
	redisFree(c);
	return (reply);
}

#define sync_command(...) sync_command_port(server_port, __VA_ARGS__)

static long long
sync_integer(redisReply *reply)
{
	long long	v;

	ck_assert_msg(reply->type == REDIS_REPLY_INTEGER, "reply type %d",
	    reply->type);
	v = reply->integer;
	freeReplyObject(reply);
	return (v);
}

/* Waits until el answers something other than UNAVAILABLE. */
static int
wait_ready(struct eventlog *log, int ms)
{
	uint64_t		start = clock_now_ms();
	struct res		r;
	enum eventlog_status	status;

	for (;;) {
		memset(&r, 0, sizeof r);
		eventlog_session_load(log, "ready-probe", load_cb, &r);
		run_until(&r.calls, WAIT_MS);
		ck_assert_int_eq(r.calls, 1);
		status = r.status;
		res_clear(&r);
		if (status != EVENTLOG_UNAVAILABLE)
			return (1);
		if (clock_now_ms() - start > (uint64_t)ms)
			return (0);
		run_for(20);
	}
}

static struct eventlog *
open_on(int port, int replicas)
{
	struct eventlog	*log;
	struct conf	*c = conf;
	char		*cause = NULL;

	c->redis_port = port;
	c->commit_replicas = replicas;
	log = eventlog_create(base, c, &cause);
	ck_assert_msg(log != NULL, "eventlog_create: %s", cause);
	return (log);
}

/* Captures what the log writes to stderr between start and stop. */
static int	capture_saved = -1;
static char	capture_path[64];

static void
capture_start(void)
{
	int	fd;

	snprintf(capture_path, sizeof capture_path,
	    "/tmp/mcpd-test-log.XXXXXX");
	fd = mkstemp(capture_path);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	capture_saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* What was captured so far (allocated). */
static char *
capture_read(void)
{
	FILE	*f;
	char	*buf;
	long	 len;

	fflush(stderr);
	f = fopen(capture_path, "r");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(buf);
	buf[fread(buf, 1, (size_t)len, f)] = '\0';
	fclose(f);
	return (buf);
}

/* Runs the loop until the log has written needle, or ms pass. */
static int
capture_wait(const char *needle, int ms)
{
	uint64_t	 start = clock_now_ms();
	char		*text;
	int		 found;

	for (;;) {
		text = capture_read();
		found = strstr(text, needle) != NULL;
		free(text);
		if (found)
			return (1);
		if (clock_now_ms() - start > (uint64_t)ms)
			return (0);
		turn();
	}
}

/* Returns what was captured (allocated). */
static char *
capture_stop(void)
{
	char	*buf;

	buf = capture_read();
	dup2(capture_saved, 2);
	close(capture_saved);
	unlink(capture_path);
	fputs(buf, stderr);	/* still shown */
	return (buf);
}

static int
count_lines(const char *text, const char *needle)
{
	int		 n = 0;
	const char	*p = text;

	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	return (n);
}

/* The backend the behavioural suite runs on. */

static void
redis_configure(struct conf *c)
{
	c->eventlog = CONF_EVENTLOG_REDIS;
	free(c->redis_host);
	c->redis_host = strdup(server_host);
	ck_assert_ptr_nonnull(c->redis_host);
	c->redis_port = server_port;
	c->redis_db = server_db;
	c->commit_replicas = 0;
}

static void
redis_ready(struct eventlog *log)
{
	ck_assert_msg(wait_ready(log, 5000), "redis backend never ready");
}

/* Nothing of a deleted session is left in Redis. */
static void
redis_check_gone(const char *sid)
{
	redisReply	*reply;

	reply = sync_command("KEYS mcpd:{%s}:*", sid);
	ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(reply->elements, 0);
	freeReplyObject(reply);
}

/*
 * The TTL of an ended stream runs on the server's clock, so a stream may
 * read as expired a little before stream_ttl has passed on ours. Stream 0
 * cannot be stored: 0-0 is not a valid Redis stream id.
 */
/* The keyring is one of the server's, whichever test made it. */
static void
redis_forget_keyring(void)
{
	freeReplyObject(sync_command("DEL mcpd:{keyring}:keys "
	    "mcpd:{keyring}:rotated"));
}

static const struct eventlog_cases_backend redis_backend = {
	.configure = redis_configure,
	.ready = redis_ready,
	.no_io = 0,
	.expiry_early_ms = 50,
	.check_gone = redis_check_gone,
	.forget_keyring = redis_forget_keyring,
};

/* What only Redis has. */

/*
 * A log freed while still connecting, its set-up in flight, answers what
 * was asked of it meanwhile once, CANCELLED, and is clean (valgrind).
 */
START_TEST(test_free_connecting)
{
	struct res	r;

	eventlog_free(el);
	el = open_on(server_port, 0);
	memset(&r, 0, sizeof r);
	eventlog_session_load(el, SID, load_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	eventlog_free(el);
	el = NULL;
	ck_assert_int_eq(r.calls, 1);
	expect_status(r.status, EVENTLOG_CANCELLED);
	spin();
	ck_assert_int_eq(r.calls, 1);
	res_clear(&r);
}
END_TEST

/* Keys, ids, fields and lifetimes: docs/protocol.md, Redis layout. */
START_TEST(test_layout)
{
	redisReply	*reply;
	char		 meta[128], stream[128], ended[128];
	long long	 ttl;
	uint64_t	 before, after, t;

	before = clock_wall_ms();
	expect_status(store(SID, "{\"v\":1}", 7), EVENTLOG_OK);
	after = clock_wall_ms();
	fill(K, 2);
	fill(K + 1, 0);
	expect_status(end(SID, K + 1, NULL), EVENTLOG_OK);
	snprintf(meta, sizeof meta, "mcpd:{%s}:meta", SID);
	snprintf(stream, sizeof stream, "mcpd:{%s}:s:%d", SID, K);
	snprintf(ended, sizeof ended, "mcpd:{%s}:s:%d", SID, K + 1);

	/*
	 * The XADD id is the SSE id; the message is field d; the last entry
	 * of each append has the append's token too, t (unique to it).
	 */
	reply = sync_command("XRANGE %s - +", stream);
	ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(reply->elements, 3);
	ck_assert_str_eq(reply->element[0]->element[0]->str, "42-0");
	ck_assert_str_eq(reply->element[2]->element[0]->str, "42-2");
	ck_assert_uint_eq(reply->element[2]->element[1]->elements, 4);
	ck_assert_str_eq(reply->element[2]->element[1]->element[0]->str, "d");
	ck_assert_str_eq(reply->element[2]->element[1]->element[1]->str,
	    "{\"n\":2}");
	ck_assert_str_eq(reply->element[2]->element[1]->element[2]->str, "t");
	ck_assert_str_ne(reply->element[2]->element[1]->element[3]->str,
	    reply->element[1]->element[1]->element[3]->str);
	freeReplyObject(reply);

	/* The meta hash: the session's meta and every stream's state. */
	reply = sync_command("HMGET %s m k:%d k:%d", meta, K, K + 1);
	ck_assert_str_eq(reply->element[0]->str, "{\"v\":1}");
	ck_assert_str_eq(reply->element[1]->str, "o");
	ck_assert_str_eq(reply->element[2]->str, "e");
	freeReplyObject(reply);

	/* t: when the open streams' lifetimes were renewed, by our clock. */
	reply = sync_command("HGET %s t", meta);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	t = strtoull(reply->str, NULL, 10);
	freeReplyObject(reply);
	ck_assert(t >= before && t <= after);

	/* Lifetimes: session_ttl; open streams longer; ended: stream_ttl. */
	ttl = sync_integer(sync_command("PTTL %s", meta));
	ck_assert(ttl > 0 && ttl <= conf->session_ttl * 1000);
	ttl = sync_integer(sync_command("PTTL %s", stream));
	ck_assert(ttl > conf->session_ttl * 1000);
	ttl = sync_integer(sync_command("PTTL %s", ended));
	ck_assert(ttl > 0 && ttl <= conf->stream_ttl * 1000);

	/* Each commit advances no other stream and touches no other key. */
	reply = sync_command("KEYS mcpd:{%s}:*", SID);
	ck_assert_uint_eq(reply->elements, 3);
	freeReplyObject(reply);
}
END_TEST

/*
 * A task's record is one key, mcpd:{TID}:task, "REV RECORD", with the
 * lifetime of the last put; a value that is not one reads as unavailable,
 * never as a record.
 */
START_TEST(test_task_layout)
{
	redisReply	*reply;
	long long	 ttl;
	uint64_t	 rev;
	char		*rec;

	expect_status(tput(SID, 1, "{\"a\":1}", 60000), EVENTLOG_OK);
	reply = sync_command("GET mcpd:{%s}:task", SID);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	ck_assert_str_eq(reply->str, "1 {\"a\":1}");
	freeReplyObject(reply);
	ttl = sync_integer(sync_command("PTTL mcpd:{%s}:task", SID));
	ck_assert(ttl > 0 && ttl <= 60000);
	expect_status(tput(SID, 2, "two words\nand a line", 5000),
	    EVENTLOG_OK);
	ttl = sync_integer(sync_command("PTTL mcpd:{%s}:task", SID));
	ck_assert(ttl > 0 && ttl <= 5000);
	expect_status(tget(SID, &rev, &rec), EVENTLOG_OK);
	ck_assert_uint_eq(rev, 2);
	ck_assert_str_eq(rec, "two words\nand a line");
	free(rec);
	/* Nothing of a session is made for it. */
	reply = sync_command("KEYS mcpd:{%s}:*", SID);
	ck_assert_uint_eq(reply->elements, 1);
	freeReplyObject(reply);

	freeReplyObject(sync_command("SET mcpd:{%s}:task garbage", SID));
	expect_status(tget(SID, &rev, &rec), EVENTLOG_UNAVAILABLE);
	ck_assert_ptr_null(rec);
	freeReplyObject(sync_command("SET mcpd:{%s}:task 0", SID));
	expect_status(tget(SID, &rev, &rec), EVENTLOG_UNAVAILABLE);
	/* The script does not take it for a revision either. */
	expect_status(tput(SID, 3, "x", 5000), EVENTLOG_CONFLICT);
}
END_TEST

static void
keyring_cb(enum eventlog_status status, const struct eventlog_keyring *ring,
    void *arg)
{
	struct res	*r = arg;

	res_called(r, status, NULL);
	if (ring != NULL) {
		free(r->meta);
		r->meta = strdup(ring->current);
	}
}

static enum eventlog_status
keyring(uint64_t period, const char *fresh1, const char *fresh2, char **cur)
{
	struct res		r;
	enum eventlog_status	status;

	memset(&r, 0, sizeof r);
	eventlog_keyring(el, period, fresh1, fresh2, keyring_cb, &r);
	wait_for(&r);
	status = r.status;
	*cur = r.meta;
	r.meta = NULL;
	res_clear(&r);
	return (status);
}

/* A limit's take or slot, waited for: what it answered. */
struct taken {
	struct res		r;
	struct eventlog_taken	t;
	int			granted;
};

static void
taken_cb(enum eventlog_status status, const struct eventlog_taken *t,
    void *arg)
{
	struct taken	*k = arg;

	res_called(&k->r, status, NULL);
	if (t != NULL)
		k->t = *t;
}

static struct eventlog_taken
take(const char *key, uint64_t rate, uint64_t burst, uint64_t quota,
    uint64_t want, uint64_t min, uint64_t back, uint64_t back_day)
{
	struct eventlog_take	t = { key, rate, 60000, burst, quota, want,
				    min, back, back_day };
	struct taken		k;

	memset(&k, 0, sizeof k);
	eventlog_take(el, &t, taken_cb, &k);
	wait_for(&k.r);
	expect_status(k.r.status, EVENTLOG_OK);
	res_clear(&k.r);
	return (k.t);
}

static void
slot_cb(enum eventlog_status status, int granted, void *arg)
{
	struct taken	*k = arg;

	res_called(&k->r, status, NULL);
	k->granted = granted;
}

static int
slot(enum eventlog_slot_op op, const char *key, uint64_t max,
    const char *member)
{
	struct taken	k;

	memset(&k, 0, sizeof k);
	eventlog_slot(el, op, key, max, 60000, &member, 1, slot_cb, &k);
	wait_for(&k.r);
	expect_status(k.r.status, EVENTLOG_OK);
	res_clear(&k.r);
	return (k.granted);
}

/*
 * Limits: a bucket (one token a minute, so none comes back during the
 * test) grants what it holds, refuses with the time until min is due,
 * takes back what is given (never past the burst, to the quota only the
 * same day); the quota refuses until midnight; slots bound members, and
 * one that lapsed (its score in the past) frees its place.
 */
START_TEST(test_limit_layout)
{
	struct eventlog_taken	t;
	char			key[64], skey[96];
	long long		ttl;
	redisReply		*reply;

	snprintf(key, sizeof key, "lim:%s", SID);
	t = take(key, 1, 3, 0, 5, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 3);
	t = take(key, 1, 3, 0, 2, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 0);
	ck_assert(t.wait_ms > 50000 && t.wait_ms <= 60000 && !t.quota);
	ttl = sync_integer(sync_command("PTTL mcpd:{l:%s}:b", key));
	ck_assert(ttl > 60000 && ttl <= 3 * 60000 + 1000);
	reply = sync_command("HGET mcpd:{l:%s}:b t", key);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	ck_assert(strchr(reply->str, 'e') == NULL);	/* no exponent */
	freeReplyObject(reply);
	/* Given back: 2 of them, and never past the burst. */
	t = take(key, 1, 3, 0, 0, 0, 2, 0);
	ck_assert_uint_eq(t.granted, 0);
	t = take(key, 1, 3, 0, 5, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 2);
	t = take(key, 1, 3, 0, 0, 0, 50, 0);
	t = take(key, 1, 3, 0, 5, 5, 0, 0);
	ck_assert_uint_eq(t.granted, 0);	/* 3 < min 5: none */
	t = take(key, 1, 3, 0, 5, 3, 0, 0);
	ck_assert_uint_eq(t.granted, 3);

	/* A quota of 4 a day, no rate: then refused until midnight. */
	snprintf(key, sizeof key, "quota:%s", SID);
	t = take(key, 0, 0, 4, 3, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 3);
	t = take(key, 0, 0, 4, 3, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 1);
	t = take(key, 0, 0, 4, 1, 1, 0, 0);
	ck_assert(t.granted == 0 && t.quota);
	ck_assert(t.wait_ms > 0 && t.wait_ms <= 86400000);
	ck_assert_uint_eq(t.day, (uint64_t)time(NULL) / 86400);
	/* Given back the same day: counted again; another day's: not. */
	t = take(key, 0, 0, 4, 0, 0, 1, t.day - 1);
	t = take(key, 0, 0, 4, 1, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 0);
	t = take(key, 0, 0, 4, 0, 0, 1, t.day);
	t = take(key, 0, 0, 4, 1, 1, 0, 0);
	ck_assert_uint_eq(t.granted, 1);

	/* Slots. */
	snprintf(key, sizeof key, "slots:%s", SID);
	snprintf(skey, sizeof skey, "mcpd:{l:%s}:c", key);
	ck_assert_int_eq(slot(EVENTLOG_SLOT_TAKE, key, 1, "a:1"), 1);
	ck_assert_int_eq(slot(EVENTLOG_SLOT_TAKE, key, 1, "a:2"), 0);
	/* One a member holds already is its own (sent again). */
	ck_assert_int_eq(slot(EVENTLOG_SLOT_TAKE, key, 1, "a:1"), 1);
	ck_assert_int_eq(slot(EVENTLOG_SLOT_RENEW, key, 0, "a:1"), 1);
	ck_assert_int_eq(slot(EVENTLOG_SLOT_FREE, key, 0, "a:1"), 1);
	ck_assert_int_eq(slot(EVENTLOG_SLOT_TAKE, key, 1, "b:1"), 1);
	/* b:1's instance died: its member lapses, as if its time was over. */
	freeReplyObject(sync_command("ZADD %s 1 b:1", skey));
	ck_assert_int_eq(slot(EVENTLOG_SLOT_TAKE, key, 1, "c:1"), 1);
	ck_assert_int_eq(sync_integer(sync_command("ZCARD %s", skey)), 1);
}
END_TEST

/*
 * The keyring is the hash mcpd:{keyring}:keys, without a lifetime, and
 * its rotation mark mcpd:{keyring}:rotated lives one period (Redis's
 * clock); a hash that is not a ring is made anew, never answered.
 */
START_TEST(test_keyring_layout)
{
	redisReply	*reply;
	long long	 ttl;
	char		*cur;

	redis_forget_keyring();
	expect_status(keyring(600000, "first-key", "second-key", &cur),
	    EVENTLOG_OK);
	ck_assert_str_eq(cur, "first-key");
	free(cur);
	reply = sync_command("HGETALL mcpd:{keyring}:keys");
	ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(reply->elements, 8);
	freeReplyObject(reply);
	reply = sync_command("HGET mcpd:{keyring}:keys n");
	ck_assert_str_eq(reply->str, "second-key");
	freeReplyObject(reply);
	ck_assert_int_eq(sync_integer(sync_command(
	    "PTTL mcpd:{keyring}:keys")), -1);
	ttl = sync_integer(sync_command("PTTL mcpd:{keyring}:rotated"));
	ck_assert(ttl > 0 && ttl <= 600000);

	/* The mark gone (its period over): the next call rotates. */
	freeReplyObject(sync_command("DEL mcpd:{keyring}:rotated"));
	expect_status(keyring(600000, "third-key", "x", &cur), EVENTLOG_OK);
	ck_assert_str_eq(cur, "second-key");
	free(cur);
	reply = sync_command("HGET mcpd:{keyring}:keys g");
	ck_assert_str_eq(reply->str, "2");
	freeReplyObject(reply);

	/* Broken: a new ring, from the fresh keys. */
	freeReplyObject(sync_command("HDEL mcpd:{keyring}:keys c"));
	expect_status(keyring(600000, "fourth-key", "fifth-key", &cur),
	    EVENTLOG_OK);
	ck_assert_str_eq(cur, "fourth-key");
	free(cur);
	freeReplyObject(sync_command("HSET mcpd:{keyring}:keys g 0"));
	expect_status(keyring(600000, "sixth-key", "b", &cur), EVENTLOG_OK);
	ck_assert_str_eq(cur, "sixth-key");
	free(cur);
	redis_forget_keyring();
}
END_TEST

/* How many EVALSHA the server has run, from INFO commandstats. */
static long long
evalsha_calls(void)
{
	redisReply	*reply = sync_command("INFO commandstats");
	const char	*p;
	long long	 n = 0;

	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	if ((p = strstr(reply->str, "cmdstat_evalsha:calls=")) != NULL)
		n = strtoll(p + strlen("cmdstat_evalsha:calls="), NULL, 10);
	freeReplyObject(reply);
	return (n);
}

/* Issues append seq of stream k as fill() would, answered into r. */
static void
append_async(uint64_t k, uint64_t seq, int flags, struct res *r)
{
	char	buf[64];

	memset(r, 0, sizeof *r);
	entry_text(buf, sizeof buf, seq);
	eventlog_append(el, SID, k, seq, buf, strlen(buf), flags, append_cb,
	    r);
}

/*
 * Appends asked for in one loop turn, one after the other on one stream,
 * are one script call; each still hears its own answer, and nothing asked
 * for in between is reordered around them.
 */
START_TEST(test_append_batches)
{
	struct res	r[12], rd;
	long long	before;
	char		buf[64];
	int		i;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 0);

	before = evalsha_calls();
	for (i = 1; i <= 10; i++)
		append_async(K, (uint64_t)i, 0, &r[i]);
	wait_for(&r[10]);
	spin();
	ck_assert_int_eq(evalsha_calls() - before, 1);
	for (i = 1; i <= 10; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert(r[i].has_info);
		entry_text(buf, sizeof buf, (uint64_t)i);
		ck_assert_str_eq(r[i].committed, buf);
		ck_assert_uint_eq(r[i].info.head, (uint64_t)i);
		ck_assert_uint_eq(r[i].info.oldest, 0);
		ck_assert_int_eq(r[i].info.ended, 0);
	}

	/* A read between two appends sees the first and not the second. */
	append_async(K, 11, 0, &r[0]);
	memset(&rd, 0, sizeof rd);
	eventlog_read(el, SID, K, 0, MAX_ENTRIES, read_cb, &rd);
	append_async(K, 12, 0, &r[1]);
	wait_for(&r[1]);
	wait_for(&rd);
	expect_status(r[0].status, EVENTLOG_OK);
	expect_status(r[1].status, EVENTLOG_OK);
	expect_status(rd.status, EVENTLOG_OK);
	ck_assert_uint_eq(rd.info.head, 11);
	expect_entries(&rd, 0, 12);
	res_clear(&rd);

	/* A failed compare fails every entry, each told the log's head. */
	for (i = 1; i <= 3; i++)
		append_async(K, 20 + (uint64_t)i, 0, &r[i]);
	wait_for(&r[3]);
	for (i = 1; i <= 3; i++) {
		expect_status(r[i].status, EVENTLOG_CONFLICT);
		ck_assert_uint_eq(r[i].info.head, 12);
	}

	/* Nothing joins a final entry: what follows it is refused. */
	append_async(K, 13, 0, &r[1]);
	append_async(K, 14, EVENTLOG_FINAL, &r[2]);
	append_async(K, 15, 0, &r[3]);
	wait_for(&r[3]);
	expect_status(r[1].status, EVENTLOG_OK);
	ck_assert_int_eq(r[1].info.ended, 0);
	expect_status(r[2].status, EVENTLOG_OK);
	ck_assert_int_eq(r[2].info.ended, 1);
	expect_status(r[3].status, EVENTLOG_ENDED);
	ck_assert_uint_eq(r[3].info.head, 14);
	expect_status(readr(SID, K, 13, MAX_ENTRIES, &rd), EVENTLOG_OK);
	expect_entries(&rd, 13, 2);
	ck_assert_int_eq(rd.info.ended, 1);
	res_clear(&rd);
}
END_TEST

/*
 * More entries in one turn than stream_maxlen: split so that no append
 * trims its own entries, and retention stays exact.
 */
START_TEST(test_append_batch_maxlen)
{
	struct res	r[13], rd;
	int		i;

	reopen(5, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 0);
	for (i = 1; i <= 12; i++)
		append_async(K, (uint64_t)i, 0, &r[i]);
	wait_for(&r[12]);
	for (i = 1; i <= 12; i++) {
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_uint_eq(r[i].info.head, (uint64_t)i);
		ck_assert_uint_le(r[i].info.oldest, (uint64_t)i);
	}
	ck_assert_uint_eq(r[12].info.oldest, 8);
	expect_status(readr(SID, K, 8, MAX_ENTRIES, &rd), EVENTLOG_OK);
	expect_entries(&rd, 8, 5);
	res_clear(&rd);
	expect_status(readr(SID, K, 7, MAX_ENTRIES, &rd), EVENTLOG_TRIMMED);
	res_clear(&rd);
}
END_TEST

/* Thousands of appends issued back to back: pipelined, answered in order. */
START_TEST(test_pipeline)
{
	enum { N = 3000 };
	struct res	*r;
	struct res	 rd;
	char		 buf[64];
	int		 order = 0, i;
	uint64_t	 from;

	reopen(N + 10, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	expect_status(create(SID, K, NULL), EVENTLOG_OK);
	r = calloc(N + 1, sizeof *r);
	ck_assert_ptr_nonnull(r);
	for (i = 1; i <= N; i++) {
		r[i].order = &order;
		entry_text(buf, sizeof buf, (uint64_t)i);
		eventlog_append(el, SID, K, (uint64_t)i, buf, strlen(buf),
		    i == N ? EVENTLOG_FINAL : 0, append_cb, &r[i]);
	}
	run_until(&r[N].calls, WAIT_MS);
	spin();
	for (i = 1; i <= N; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_int_eq(r[i].rank, i);
		ck_assert_uint_eq(r[i].info.head, (uint64_t)i);
	}
	ck_assert_int_eq(r[N].info.ended, 1);
	free(r);

	for (from = 0; from <= N;) {
		expect_status(readr(SID, K, from, MAX_ENTRIES, &rd),
		    EVENTLOG_OK);
		ck_assert_uint_gt(rd.n, 0);
		expect_entries(&rd, from, rd.n);
		from += rd.n;
		res_clear(&rd);
	}
	ck_assert_uint_eq(from, N + 1);
}
END_TEST

/* Counts answers by status, for ops too many for a struct res each. */
static int	cap_counts[EVENTLOG_STATUS_MAX];
static int	cap_last_status = -1;

static void
cap_cb(enum eventlog_status status, const char *meta, size_t len, void *arg)
{
	cap_counts[status]++;
	if (arg != NULL)
		cap_last_status = status;
}

/*
 * Past REDIS_MAX_INFLIGHT (100000) ops in flight, more are refused at once
 * (issued in one loop turn, none can be answered before the cap is hit).
 */
START_TEST(test_inflight_cap)
{
	enum { CAP = 100000 };
	int	i, total;

	memset(cap_counts, 0, sizeof cap_counts);
	cap_last_status = -1;
	for (i = 0; i < CAP; i++)
		eventlog_session_load(el, SID, cap_cb, NULL);
	eventlog_session_load(el, SID, cap_cb, &cap_last_status);
	ck_assert_int_eq(cap_last_status, -1);
	for (total = 0; total < CAP + 1;) {
		turn();
		for (i = total = 0; i < EVENTLOG_STATUS_MAX; i++)
			total += cap_counts[i];
	}
	ck_assert_int_eq(cap_last_status, EVENTLOG_UNAVAILABLE);
	ck_assert_int_eq(cap_counts[EVENTLOG_NOT_FOUND], CAP);
	ck_assert_int_eq(cap_counts[EVENTLOG_UNAVAILABLE], 1);
	/* Below the cap again: accepted. */
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
}
END_TEST

/* The server forgot the script: it is sent again and the op succeeds. */
START_TEST(test_noscript)
{
	struct eventlog_info	info;
	struct res		r[3];
	int			i;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);
	freeReplyObject(sync_command("SCRIPT FLUSH"));
	expect_status(append(SID, K, 2, "{\"n\":2}", 0, &info, NULL),
	    EVENTLOG_OK);
	ck_assert_uint_eq(info.head, 2);

	/* Several in flight when the cache goes: each retried once. */
	freeReplyObject(sync_command("SCRIPT FLUSH"));
	memset(r, 0, sizeof r);
	eventlog_append(el, SID, K, 3, "{\"n\":3}", 7, 0, append_cb, &r[0]);
	eventlog_read(el, SID, K, 0, 10, read_cb, &r[1]);
	eventlog_stream_end(el, SID, K, append_cb, &r[2]);
	for (i = 0; i < 3; i++)
		wait_for(&r[i]);
	spin();
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		expect_status(r[i].status, EVENTLOG_OK);
	}
	ck_assert_int_eq(r[2].info.ended, 1);
	for (i = 0; i < 3; i++)
		res_clear(&r[i]);
}
END_TEST

/*
 * commit replicas:1 on a server without replicas and without an outage
 * grace: WAIT comes back short, and each commit fails loudly, though the
 * entry is in the primary. A read fails too: what it would return is on
 * no replica. What the script refuses needs no replica.
 */
START_TEST(test_wait_replicas)
{
	struct eventlog		*plain = el;
	struct eventlog_info	 info;
	struct res		 r;
	redisReply		*reply;
	char			*out;
	uint64_t		 start, elapsed;

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);

	conf->eventlog_outage_grace = 0;
	el = open_on(server_port, 1);
	conf->eventlog_outage_grace = 10;
	ck_assert(wait_ready(el, 5000));
	capture_start();
	start = clock_now_ms();
	expect_status(append(SID, K, 2, "{\"n\":2}", 0, &info, NULL),
	    EVENTLOG_UNAVAILABLE);
	elapsed = clock_now_ms() - start;
	out = capture_stop();
	ck_assert_msg(elapsed >= 400, "failed after only %llu ms",
	    (unsigned long long)elapsed);
	ck_assert_msg(strstr(out, "commits reached 0 of 1 replicas") != NULL,
	    "no log line: %s", out);
	free(out);

	/*
	 * The read writes a field of the meta, so that its WAIT counts from
	 * after every entry it returns, whoever wrote them (WAIT counts from
	 * the connection's own last write).
	 */
	freeReplyObject(sync_command("HDEL mcpd:{%s}:meta r", SID));
	expect_status(readr(SID, K, 1, 10, &r), EVENTLOG_UNAVAILABLE);
	res_clear(&r);
	reply = sync_command("HGET mcpd:{%s}:meta r", SID);
	ck_assert_msg(reply->type == REDIS_REPLY_STRING &&
	    strcmp(reply->str, "1") == 0, "a read with commit replicas:1 "
	    "wrote nothing");
	freeReplyObject(reply);
	/* A refused append needs no replica: it fails as before. */
	expect_status(append(SID, K, 2, "again", 0, &info, NULL),
	    EVENTLOG_CONFLICT);
	ck_assert_uint_eq(info.head, 2);
	eventlog_free(el);
	el = plain;
	/* The primary has it, as said. A read without replicas writes not. */
	freeReplyObject(sync_command("HDEL mcpd:{%s}:meta r", SID));
	expect_status(readr(SID, K, 2, 10, &r), EVENTLOG_OK);
	expect_entries(&r, 2, 1);
	res_clear(&r);
	reply = sync_command("HEXISTS mcpd:{%s}:meta r", SID);
	ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
	ck_assert_int_eq(reply->integer, 0);
	freeReplyObject(reply);
}
END_TEST

/*
 * Without an outage grace (eventlog_outage_grace 0): a server that stops
 * answering makes the oldest op time out, everything in flight fails
 * once, new ops fail at once, and the log recovers.
 */
START_TEST(test_timeout)
{
	struct res		r[3], late;
	struct res		rd;
	uint64_t		start, elapsed, head;
	int			i;

	if (!own_server)
		return;
	conf->eventlog_outage_grace = 0;
	reopen(1000, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);

	freeReplyObject(sync_command("CLIENT PAUSE 3000 ALL"));
	memset(r, 0, sizeof r);
	start = clock_now_ms();
	eventlog_append(el, SID, K, 2, "{\"n\":2}", 7, 0, append_cb, &r[0]);
	eventlog_read(el, SID, K, 0, 10, read_cb, &r[1]);
	eventlog_session_load(el, SID, load_cb, &r[2]);
	for (i = 0; i < 3; i++)
		wait_for(&r[i]);
	elapsed = clock_now_ms() - start;
	ck_assert_msg(elapsed >= 1900 && elapsed < 2900,
	    "timed out after %llu ms", (unsigned long long)elapsed);
	for (i = 0; i < 3; i++) {
		expect_status(r[i].status, EVENTLOG_UNAVAILABLE);
		ck_assert(!r[i].has_info);
	}

	/* While reconnecting, new ops fail at once. */
	memset(&late, 0, sizeof late);
	start = clock_now_ms();
	eventlog_session_load(el, SID, load_cb, &late);
	ck_assert_int_eq(late.calls, 0);
	wait_for(&late);
	expect_status(late.status, EVENTLOG_UNAVAILABLE);
	ck_assert_uint_lt(clock_now_ms() - start, 200);
	res_clear(&late);

	/* The pause ends; the log comes back; no callback ran twice. */
	ck_assert(wait_ready(el, 6000));
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(r[i].calls, 1);
	for (i = 0; i < 3; i++)
		res_clear(&r[i]);

	/* Whether the unanswered append landed, the log says which. */
	expect_status(readr(SID, K, 0, 10, &rd), EVENTLOG_OK);
	head = rd.info.head;
	ck_assert(head == 1 || head == 2);
	res_clear(&rd);
	expect_status(append(SID, K, head + 1, "next", 0, NULL, NULL),
	    EVENTLOG_OK);
}
END_TEST

/* Runs the loop until *done or WAIT_MS pass; returns *done. */
static int
run_until_flag(int (*done)(void))
{
	uint64_t	start = clock_now_ms();

	while (!done() && clock_now_ms() - start < WAIT_MS)
		turn();
	return (done());
}

static int
log_stalled(void)
{
	return (!eventlog_available(el));
}

/*
 * A server that stops answering for longer than the reply timeout but
 * within the outage grace (10 s by default): nothing fails. The ops in
 * flight wait on the connection, the log reads as unavailable (and not
 * steady) meanwhile, ops asked for then wait behind them, and once the
 * server answers everything is answered in order, committed once.
 */
START_TEST(test_outage_stall)
{
	struct res	r[4];
	uint64_t	paused;
	int		order = 0, i;

	if (!own_server)
		return;
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);

	paused = clock_now_ms();
	freeReplyObject(sync_command("CLIENT PAUSE 5000 ALL"));
	memset(r, 0, sizeof r);
	for (i = 0; i < 4; i++)
		r[i].order = &order;
	eventlog_append(el, SID, K, 2, "{\"n\":2}", 7, 0, append_cb, &r[0]);
	eventlog_read(el, SID, K, 0, 10, read_cb, &r[1]);
	ck_assert_msg(run_until_flag(log_stalled), "the stall never showed");
	ck_assert_uint_eq(eventlog_steady_ms(el), 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(r[i].calls, 0);
	/* Asked for during the stall: waits behind what is in flight. */
	eventlog_append(el, SID, K, 3, "{\"n\":3}", 7, 0, append_cb, &r[2]);
	eventlog_session_load(el, SID, load_cb, &r[3]);
	for (i = 0; i < 4; i++)
		wait_for(&r[i]);
	spin();
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_int_eq(r[i].rank, i + 1);
	}
	ck_assert_uint_eq(r[0].info.head, 2);
	ck_assert_uint_eq(r[1].info.head, 2);
	expect_entries(&r[1], 0, 3);
	ck_assert_uint_eq(r[2].info.head, 3);
	ck_assert(eventlog_available(el));
	/* Steady again, but only since the stall. */
	ck_assert_uint_lt(eventlog_steady_ms(el), clock_now_ms() - paused);
	for (i = 0; i < 4; i++)
		res_clear(&r[i]);
	ck_assert_int_eq(sync_integer(sync_command("XLEN mcpd:{%s}:s:%d",
	    SID, K)), 4);
}
END_TEST

/*
 * An outage longer than the grace (3 s here): what waited fails
 * UNAVAILABLE, ops asked for then fail at once rather than wait, and the
 * log comes back once the server answers.
 */
START_TEST(test_outage_past_grace)
{
	struct res	r[2], late;
	struct res	rd;
	uint64_t	head;
	int		i;

	if (!own_server)
		return;
	conf->eventlog_outage_grace = 3;
	reopen(1000, 300);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);

	freeReplyObject(sync_command("CLIENT PAUSE 6000 ALL"));
	memset(r, 0, sizeof r);
	eventlog_append(el, SID, K, 2, "{\"n\":2}", 7, 0, append_cb, &r[0]);
	ck_assert_msg(run_until_flag(log_stalled), "the stall never showed");
	eventlog_session_load(el, SID, load_cb, &r[1]);
	for (i = 0; i < 2; i++) {
		wait_for(&r[i]);
		expect_status(r[i].status, EVENTLOG_UNAVAILABLE);
	}
	/* Past the grace, while the server is still paused: refused. */
	memset(&late, 0, sizeof late);
	eventlog_session_load(el, SID, load_cb, &late);
	ck_assert_int_eq(late.calls, 0);
	wait_for(&late);
	expect_status(late.status, EVENTLOG_UNAVAILABLE);
	res_clear(&late);

	ck_assert(wait_ready(el, 8000));
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		res_clear(&r[i]);
	}
	expect_status(readr(SID, K, 0, 10, &rd), EVENTLOG_OK);
	head = rd.info.head;
	ck_assert(head == 1 || head == 2);
	res_clear(&rd);
	expect_status(append(SID, K, head + 1, "next", 0, NULL, NULL),
	    EVENTLOG_OK);
}
END_TEST

/*
 * A proxy between a log and the server, on the test's loop: mute swallows
 * the server's bytes (Redis runs the commands, the log never hears), hold
 * keeps the log's back (Redis never gets them), cut closes every
 * connection. So a connection lost after, or before, its last commands
 * ran, on demand.
 */
struct proxy_pair {
	struct bufferevent		*client;
	struct bufferevent		*server;
	TAILQ_ENTRY(proxy_pair)		 entry;
};
static TAILQ_HEAD(, proxy_pair)	proxy_pairs =
    TAILQ_HEAD_INITIALIZER(proxy_pairs);
static struct evconnlistener	*proxy_listener;
static struct sockaddr_in	 proxy_to;
static int			 proxy_port;
static int			 proxy_mute;
static int			 proxy_hold;

static void
proxy_pair_free(struct proxy_pair *p)
{
	TAILQ_REMOVE(&proxy_pairs, p, entry);
	bufferevent_free(p->client);
	bufferevent_free(p->server);
	free(p);
}

static void
proxy_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_pair	*p = arg;
	struct evbuffer		*in = bufferevent_get_input(bev);

	if (bev == p->server) {
		if (proxy_mute)
			evbuffer_drain(in, evbuffer_get_length(in));
		else
			bufferevent_write_buffer(p->client, in);
	} else if (!proxy_hold)
		bufferevent_write_buffer(p->server, in);
}

static void
proxy_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		proxy_pair_free(arg);
}

static void
proxy_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
	struct proxy_pair	*p;

	p = calloc(1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	p->client = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	p->server = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(p->client, proxy_read_cb, NULL, proxy_event_cb, p);
	bufferevent_setcb(p->server, proxy_read_cb, NULL, proxy_event_cb, p);
	bufferevent_enable(p->client, EV_READ | EV_WRITE);
	bufferevent_enable(p->server, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&proxy_pairs, p, entry);
	if (bufferevent_socket_connect(p->server,
	    (struct sockaddr *)&proxy_to, sizeof proxy_to) != 0)
		proxy_pair_free(p);
}

/* Starts the proxy to the test server; -1 if it cannot (not IPv4). */
static int
proxy_start(void)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;

	memset(&proxy_to, 0, sizeof proxy_to);
	proxy_to.sin_family = AF_INET;
	proxy_to.sin_port = htons((uint16_t)server_port);
	if (inet_pton(AF_INET, server_host, &proxy_to.sin_addr) != 1)
		return (-1);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	proxy_listener = evconnlistener_new_bind(base, proxy_accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
	    (struct sockaddr *)&sin, sizeof sin);
	ck_assert_ptr_nonnull(proxy_listener);
	ck_assert_int_eq(getsockname(evconnlistener_get_fd(proxy_listener),
	    (struct sockaddr *)&sin, &len), 0);
	proxy_port = ntohs(sin.sin_port);
	proxy_mute = proxy_hold = 0;
	return (0);
}

/* Closes every connection through the proxy, dropping what it holds. */
static void
proxy_cut(void)
{
	struct proxy_pair	*p;

	while ((p = TAILQ_FIRST(&proxy_pairs)) != NULL)
		proxy_pair_free(p);
}

/* Whether the proxy holds some of the log's bytes back. */
static int
proxy_holding(void)
{
	struct proxy_pair	*p;

	TAILQ_FOREACH(p, &proxy_pairs, entry) {
		if (evbuffer_get_length(bufferevent_get_input(p->client)) > 0)
			return (1);
	}
	return (0);
}

static void
proxy_stop(void)
{
	proxy_cut();
	evconnlistener_free(proxy_listener);
	proxy_listener = NULL;
}

static long long
stream_len(uint64_t k)
{
	return (sync_integer(sync_command("XLEN mcpd:{%s}:s:%llu", SID,
	    (unsigned long long)k)));
}

static int
retry_landed(void)
{
	return (stream_len(K) == 5 && stream_len(K + 1) == 1 &&
	    sync_integer(sync_command("EXISTS mcpd:{%s}:task", OTHER_SID)) ==
	    1);
}

/*
 * Operations whose replies are lost with their connection after Redis ran
 * them (an append of three entries in one script call, a create, a task
 * put) are sent again once a connection is set up, and recognise what
 * they did: answered as the first time (ok, the same ids), written once.
 * A different append at the same position still conflicts, and so does a
 * task put of the same revision that is not a retry. An append Redis
 * never got is committed by its retry, once.
 */
START_TEST(test_retry_after_lost_reply)
{
	struct eventlog		*plain = el;
	struct eventlog_info	 info;
	struct res		 r[3], rc, rt;
	uint64_t		 rev;
	char			 buf[64], *rec;
	int			 i;

	if (proxy_start() != 0)
		return;
	el = open_on(proxy_port, 0);
	ck_assert(wait_ready(el, 5000));
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);

	proxy_mute = 1;
	for (i = 0; i < 3; i++)
		append_async(K, 2 + (uint64_t)i, 0, &r[i]);
	memset(&rc, 0, sizeof rc);
	eventlog_stream_create(el, SID, K + 1, append_cb, &rc);
	memset(&rt, 0, sizeof rt);
	eventlog_task_put(el, OTHER_SID, 1, "rec", 3, 60000, 0, done_cb,
	    &rt);
	ck_assert_msg(run_until_flag(retry_landed), "Redis never ran them");
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(r[i].calls, 0);
	ck_assert_int_eq(rc.calls + rt.calls, 0);
	proxy_cut();
	proxy_mute = 0;

	for (i = 0; i < 3; i++) {
		wait_for(&r[i]);
		expect_status(r[i].status, EVENTLOG_OK);
		ck_assert_uint_eq(r[i].info.head, 2 + (uint64_t)i);
		entry_text(buf, sizeof buf, 2 + (uint64_t)i);
		ck_assert_str_eq(r[i].committed, buf);
		ck_assert_int_eq(r[i].info.ended, 0);
	}
	wait_for(&rc);
	expect_status(rc.status, EVENTLOG_OK);
	wait_for(&rt);
	expect_status(rt.status, EVENTLOG_OK);
	spin();
	ck_assert_int_eq(stream_len(K), 5);
	ck_assert_int_eq(stream_len(K + 1), 1);
	expect_status(tget(OTHER_SID, &rev, &rec), EVENTLOG_OK);
	ck_assert_uint_eq(rev, 1);
	ck_assert_str_eq(rec, "rec");
	free(rec);

	/* Another writer's entry where a retry's would be: a conflict. */
	expect_status(append(SID, K, 4, "other", 0, &info, NULL),
	    EVENTLOG_CONFLICT);
	ck_assert_uint_eq(info.head, 4);
	expect_status(tput(OTHER_SID, 1, "rec", 60000), EVENTLOG_CONFLICT);

	/* Never reached Redis: the retry commits it, once. */
	proxy_hold = 1;
	append_async(K, 5, EVENTLOG_FINAL, &r[0]);
	ck_assert_msg(run_until_flag(proxy_holding), "the append never left");
	ck_assert_int_eq(r[0].calls, 0);
	proxy_cut();
	proxy_hold = 0;
	wait_for(&r[0]);
	expect_status(r[0].status, EVENTLOG_OK);
	ck_assert_uint_eq(r[0].info.head, 5);
	ck_assert_int_eq(r[0].info.ended, 1);
	ck_assert_int_eq(stream_len(K), 6);

	eventlog_free(el);
	el = plain;
	proxy_stop();
}
END_TEST

/* Redis down when the log is created: it still is, and keeps trying. */
START_TEST(test_down_at_start)
{
	struct eventlog	*plain = el;
	struct res	 r;
	int		 port = free_port(), failed;
	char		*out;
	pid_t		 pid;

	if (!own_server)
		return;
	ck_assert_int_gt(port, 0);
	capture_start();
	el = open_on(port, 0);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_UNAVAILABLE);
	res_clear(&r);
	run_for(1000);		/* several attempts: 100, 200, 400 ms... */
	load(SID, &r);
	expect_status(r.status, EVENTLOG_UNAVAILABLE);
	res_clear(&r);
	out = capture_stop();
	failed = count_lines(out, "command connection failed");
	free(out);
	ck_assert_msg(failed == 1, "%d failure lines", failed);

	pid = server_start(port);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(wait_ready(el, 6000), "never connected");
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 2);
	eventlog_free(el);
	server_stop(pid);
	el = plain;
}
END_TEST

START_TEST(test_policy_warning)
{
	struct eventlog	*plain = el;
	char		*out;

	if (!own_server)
		return;
	freeReplyObject(sync_command("CONFIG SET maxmemory-policy "
	    "allkeys-lru"));
	/*
	 * The set-up's CONFIG GET is sent before any op, so it has been
	 * answered once wait_ready() has seen an op answered.
	 */
	capture_start();
	el = open_on(server_port, 0);
	ck_assert(wait_ready(el, 5000));
	out = capture_stop();
	freeReplyObject(sync_command("CONFIG SET maxmemory-policy "
	    "noeviction"));
	ck_assert_msg(strstr(out, "maxmemory-policy is allkeys-lru") != NULL,
	    "no warning: %s", out);
	free(out);
	eventlog_free(el);

	/* noeviction: no warning. */
	capture_start();
	el = open_on(server_port, 0);
	ck_assert(wait_ready(el, 5000));
	out = capture_stop();
	ck_assert_ptr_null(strstr(out, "maxmemory-policy"));
	free(out);
	eventlog_free(el);
	el = plain;
}
END_TEST

/* redis://HOST:PORT/DB keeps the session in that database. */
START_TEST(test_database)
{
	struct eventlog	*plain = el;
	int		 db = server_db == 3 ? 4 : 3;
	redisContext	*c;
	redisReply	*reply;

	conf->redis_db = db;
	el = open_on(server_port, 0);
	ck_assert(wait_ready(el, 5000));
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	c = sync_connect(server_port);
	ck_assert_ptr_nonnull(c);
	reply = redisCommand(c, "SELECT %d", db);
	freeReplyObject(reply);
	reply = redisCommand(c, "EXISTS mcpd:{%s}:meta", SID);
	ck_assert_int_eq(reply->integer, 1);
	freeReplyObject(reply);
	reply = redisCommand(c, "SELECT %d", server_db);
	freeReplyObject(reply);
	reply = redisCommand(c, "EXISTS mcpd:{%s}:meta", SID);
	ck_assert_int_eq(reply->integer, 0);
	freeReplyObject(reply);
	redisFree(c);
	eventlog_free(el);
	conf->redis_db = server_db;
	el = plain;
}
END_TEST

/*
 * A server that refuses the set-up (here: it wants a password): every
 * attempt fails, the log says so once, and ops answer UNAVAILABLE.
 */
START_TEST(test_setup_refused)
{
	struct eventlog	*plain = el;
	struct res	 r;
	redisContext	*c;
	char		*out;

	if (!own_server)
		return;
	freeReplyObject(sync_command("CONFIG SET requirepass secret"));
	capture_start();
	el = open_on(server_port, 0);
	run_for(1000);
	load(SID, &r);
	expect_status(r.status, EVENTLOG_UNAVAILABLE);
	res_clear(&r);
	out = capture_stop();

	c = sync_connect(server_port);
	ck_assert_ptr_nonnull(c);
	freeReplyObject(redisCommand(c, "AUTH secret"));
	freeReplyObject(redisCommand(c, "CONFIG SET requirepass %s", ""));
	redisFree(c);

	ck_assert_msg(count_lines(out, "command connection failed "
	    "(INFO refused: NOAUTH Authentication required. (Redis "
	    "wants a password") == 1, "log: %s", out);
	ck_assert_msg(count_lines(out, "eventlog=") == 2, "log: %s", out);
	free(out);
	/* It keeps trying, and gets there once the server lets it. */
	ck_assert_msg(wait_ready(el, 8000), "never connected");
	eventlog_free(el);
	el = plain;
}
END_TEST

/*
 * The store's layout mark: set by the first instance, and a store marked
 * with another layout refused with the reason (on /readyz), until it is
 * in this mcpd's layout again.
 */
START_TEST(test_layout_version)
{
	struct eventlog		*plain = el;
	struct eventlog_where	 w;
	struct res		 r;
	redisReply		*reply;
	char			*out;

	reply = sync_command("GET %s", REDIS_SCRIPT_LAYOUT_KEY);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	ck_assert_int_eq(atoi(reply->str), REDIS_SCRIPT_LAYOUT);
	freeReplyObject(reply);

	freeReplyObject(sync_command("SET %s %d", REDIS_SCRIPT_LAYOUT_KEY,
	    REDIS_SCRIPT_LAYOUT + 1));
	capture_start();
	el = open_on(server_port, 0);
	ck_assert(capture_wait("the store is in layout", 5000));
	load(SID, &r);
	expect_status(r.status, EVENTLOG_UNAVAILABLE);
	res_clear(&r);
	memset(&w, 0, sizeof w);
	eventlog_describe(el, &w);
	ck_assert_ptr_nonnull(w.why);
	ck_assert_msg(strstr(w.why, "this mcpd reads layout") != NULL,
	    "why: %s", w.why);
	out = capture_stop();
	ck_assert_msg(strstr(out, " error ") != NULL, "log: %s", out);
	free(out);

	freeReplyObject(sync_command("SET %s %d", REDIS_SCRIPT_LAYOUT_KEY,
	    REDIS_SCRIPT_LAYOUT));
	ck_assert_msg(wait_ready(el, 8000), "never connected");
	eventlog_free(el);
	el = plain;
}
END_TEST

/* A database the server refuses: nothing may land in database 0. */
START_TEST(test_select_refused)
{
	struct eventlog	*plain = el;
	struct res	 r;
	char		*out;

	capture_start();
	conf->redis_db = 999;
	el = open_on(server_port, 0);
	conf->redis_db = server_db;
	/* Asked once the server has refused the database. */
	ck_assert_msg(capture_wait("connection failed (SELECT 999 refused: ",
	    5000), "SELECT 999 never refused");
	eventlog_session_store(el, SID, "m", 1, done_cb, memset(&r, 0,
	    sizeof r));
	wait_for(&r);
	expect_status(r.status, EVENTLOG_UNAVAILABLE);
	res_clear(&r);
	out = capture_stop();
	ck_assert_msg(strstr(out, "connection failed (SELECT 999 refused: ") !=
	    NULL, "log: %s", out);
	free(out);
	eventlog_free(el);
	el = plain;
	load(SID, &r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	res_clear(&r);
}
END_TEST

/* Watches. */

#define MAX_NOTES	64

struct watcher {
	int		 calls;
	int		 resyncs;	/* k == 0 calls */
	size_t		 n;
	uint64_t	 k[MAX_NOTES];
	uint64_t	 seq[MAX_NOTES];
	char		 sid[33];
	int		 unwatch_in_cb;
	size_t		 nmsgs;		/* messages (message_cb) */
	char		 msgs[MAX_NOTES][32];
	struct eventlog	*log;		/* not NULL: k == 0 calls checked */
	int		 unavailable;	/* k == 0 while reads would fail */
};

static void
message_cb(const char *sid, const char *msg, size_t len, void *arg)
{
	struct watcher	*w = arg;

	snprintf(w->sid, sizeof w->sid, "%s", sid);
	if (w->nmsgs < MAX_NOTES)
		snprintf(w->msgs[w->nmsgs++], sizeof w->msgs[0], "%.*s",
		    (int)len, msg);
}

static void
messages_wait(struct watcher *w, size_t n)
{
	uint64_t	start = clock_now_ms();

	while (w->nmsgs < n && clock_now_ms() - start < WAIT_MS)
		turn();
	ck_assert_msg(w->nmsgs == n, "%zu messages, want %zu", w->nmsgs, n);
}

static void
watch_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	struct watcher	*w = arg;

	w->calls++;
	snprintf(w->sid, sizeof w->sid, "%s", sid);
	if (k == 0) {
		w->resyncs++;
		if (w->log != NULL && !eventlog_available(w->log))
			w->unavailable++;
		return;
	}
	if (w->n < MAX_NOTES) {
		w->k[w->n] = k;
		w->seq[w->n] = seq;
		w->n++;
	}
	if (w->unwatch_in_cb)
		eventlog_unwatch(el, sid, watch_cb, NULL, w);
}

/* Waits until w has n notes. */
static void
notes_wait(struct watcher *w, size_t n)
{
	uint64_t	start = clock_now_ms();

	while (w->n < n && clock_now_ms() - start < WAIT_MS)
		turn();
	ck_assert_msg(w->n == n, "%zu notes, want %zu", w->n, n);
}

static void
resync_wait(struct watcher *w, int n)
{
	uint64_t	start = clock_now_ms();

	while (w->resyncs < n && clock_now_ms() - start < WAIT_MS)
		turn();
	ck_assert_msg(w->resyncs == n, "%d resyncs, want %d", w->resyncs, n);
}

/* Whether the server's replica is in sync, within ms. */
static int
replica_online(int ms)
{
	uint64_t	 start = clock_now_ms();
	redisReply	*reply;
	int		 ok;

	for (;;) {
		reply = sync_command("INFO replication");
		ok = reply->type == REDIS_REPLY_STRING &&
		    strstr(reply->str, "state=online") != NULL;
		freeReplyObject(reply);
		if (ok)
			return (1);
		if (clock_now_ms() - start > (uint64_t)ms)
			return (0);
		usleep(20000);
	}
}

/*
 * commit replicas:1 with a replica, two instances: while the replica
 * does not follow (stopped), a commit is answered to nobody, and the
 * other instance, which hears of it (the script published it) and reads,
 * gets nothing either: no reader sees an entry a failover could lose.
 * Both are answered once the replica has it; /readyz meanwhile says why.
 */
START_TEST(test_wait_replicas_gate)
{
	struct eventlog		*plain = el, *a, *b;
	struct eventlog_where	 where;
	struct watcher		 w;
	struct res		 ra, rb;
	redisReply		*reply;
	pid_t			 replica;
	int			 port;
	char			 arg[64];

	if (!own_server)
		return;
	port = free_port();
	snprintf(arg, sizeof arg, "%d", server_port);
	/* A full sync at once, not after diskless sync's 5 s delay. */
	freeReplyObject(sync_command("CONFIG SET repl-diskless-sync-delay 0"));
	replica = server_start_args(port, "--replicaof", "127.0.0.1", arg,
	    (char *)NULL);
	ck_assert_msg(replica > 0, "replica did not start");
	ck_assert_msg(replica_online(5000), "replica never in sync");

	a = el = open_on(server_port, 1);
	ck_assert(wait_ready(a, 5000));
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);
	b = open_on(server_port, 1);
	ck_assert(wait_ready(b, 5000));
	memset(&w, 0, sizeof w);
	eventlog_watch(b, SID, watch_cb, NULL, &w);
	resync_wait(&w, 1);
	/*
	 * The replica has acknowledged everything written so far, b's own
	 * writes among it: a WAIT of b's that counted from b's last write
	 * would succeed at once. Only the read's own write holds it back.
	 */
	freeReplyObject(sync_command("SET mcpd-test:mark 1"));
	reply = sync_command("WAIT 1 5000");
	ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
	ck_assert_int_eq(reply->integer, 1);
	freeReplyObject(reply);

	kill(replica, SIGSTOP);
	memset(&ra, 0, sizeof ra);
	eventlog_append(a, SID, K, 2, "{\"n\":2}", 7, 0, append_cb, &ra);
	notes_wait(&w, 1);	/* b hears of it at once */
	memset(&rb, 0, sizeof rb);
	eventlog_read(b, SID, K, 2, 10, read_cb, &rb);
	/* Both wait for the replica, past several WAITs. */
	run_for(1500);
	ck_assert_int_eq(ra.calls, 0);
	ck_assert_int_eq(rb.calls, 0);
	ck_assert(!eventlog_available(a));
	eventlog_describe(a, &where);
	ck_assert_msg(where.why != NULL && strstr(where.why,
	    "reached 0 of 1 replicas") != NULL, "why: %s", where.why);

	kill(replica, SIGCONT);
	wait_for(&ra);
	expect_status(ra.status, EVENTLOG_OK);
	ck_assert_uint_eq(ra.info.head, 2);
	wait_for(&rb);
	expect_status(rb.status, EVENTLOG_OK);
	expect_entries(&rb, 2, 1);
	res_clear(&ra);
	res_clear(&rb);
	ck_assert(eventlog_available(a));

	eventlog_unwatch(b, SID, watch_cb, NULL, &w);
	eventlog_free(b);
	eventlog_free(a);
	el = plain;
	server_stop(replica);
}
END_TEST

/* Instance A watches; instance B commits; A hears of each commit. */
START_TEST(test_watch)
{
	struct eventlog	*a, *b = el;
	struct watcher	 w1, w2;
	size_t		 i;

	a = open_on(server_port, 0);
	ck_assert(wait_ready(a, 5000));
	memset(&w1, 0, sizeof w1);
	memset(&w2, 0, sizeof w2);

	eventlog_watch(a, SID, watch_cb, NULL, &w1);
	ck_assert_int_eq(w1.calls, 0);
	resync_wait(&w1, 1);		/* live now */
	ck_assert_str_eq(w1.sid, SID);

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 2);
	expect_status(append(SID, K, 3, "r", EVENTLOG_FINAL, NULL, NULL),
	    EVENTLOG_OK);
	fill(K + 1, 0);
	expect_status(end(SID, K + 1, NULL), EVENTLOG_OK);
	expect_status(end(SID, K + 1, NULL), EVENTLOG_OK);	/* silent */
	notes_wait(&w1, 6);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(w1.k[i], K);
		ck_assert_uint_eq(w1.seq[i], i);
	}
	ck_assert_uint_eq(w1.k[4], K + 1);	/* created */
	ck_assert_uint_eq(w1.seq[4], 0);
	ck_assert_uint_eq(w1.k[5], K + 1);	/* ended at its head */
	ck_assert_uint_eq(w1.seq[5], 0);

	/*
	 * Other sessions are not heard; refused commits are not heard: the
	 * next note is that of the next commit (notes come in commit order
	 * on one connection).
	 */
	expect_status(store(OTHER_SID, "m", 1), EVENTLOG_OK);
	expect_status(create(OTHER_SID, K, NULL), EVENTLOG_OK);
	expect_status(append(SID, K, 9, "x", 0, NULL, NULL),
	    EVENTLOG_ENDED);
	ck_assert_uint_eq(w1.n, 6);

	/* A second watcher of the same session: told it is live, alone. */
	eventlog_watch(a, SID, watch_cb, NULL, &w2);
	resync_wait(&w2, 1);
	ck_assert_int_eq(w1.resyncs, 1);
	expect_status(create(SID, K + 2, NULL), EVENTLOG_OK);
	notes_wait(&w1, 7);
	ck_assert_uint_eq(w1.k[6], K + 2);
	ck_assert_uint_eq(w1.seq[6], 0);
	notes_wait(&w2, 1);

	/*
	 * Counted: one unwatch leaves the other watching. (Were w1 told of
	 * this commit late, its next note below would not be its next one.)
	 */
	eventlog_unwatch(a, SID, watch_cb, NULL, &w1);
	expect_status(append(SID, K + 2, 1, "x", 0, NULL, NULL), EVENTLOG_OK);
	notes_wait(&w2, 2);
	ck_assert_uint_eq(w1.n, 7);

	/* The last unwatch: nothing more; unknown unwatches are harmless. */
	eventlog_unwatch(a, SID, watch_cb, NULL, &w2);
	eventlog_unwatch(a, SID, watch_cb, NULL, &w2);
	eventlog_unwatch(a, OTHER_SID, watch_cb, NULL, &w2);
	expect_status(append(SID, K + 2, 2, "y", 0, NULL, NULL), EVENTLOG_OK);
	run_for(200);
	ck_assert_uint_eq(w2.n, 2);

	/* Watching again after that works (unsubscribe, then subscribe). */
	eventlog_watch(a, SID, watch_cb, NULL, &w1);
	eventlog_unwatch(a, SID, watch_cb, NULL, &w1);
	eventlog_watch(a, SID, watch_cb, NULL, &w1);
	resync_wait(&w1, 2);
	expect_status(append(SID, K + 2, 3, "z", 0, NULL, NULL), EVENTLOG_OK);
	notes_wait(&w1, 8);
	ck_assert_uint_eq(w1.k[7], K + 2);
	ck_assert_uint_eq(w1.seq[7], 3);

	/* The instance that commits hears itself too. */
	memset(&w2, 0, sizeof w2);
	eventlog_watch(b, SID, watch_cb, NULL, &w2);
	resync_wait(&w2, 1);
	expect_status(append(SID, K + 2, 4, "w", 0, NULL, NULL), EVENTLOG_OK);
	notes_wait(&w2, 1);
	notes_wait(&w1, 9);

	/* Freeing a log with watches is clean. */
	eventlog_free(a);
}
END_TEST

/*
 * Messages: what one instance publishes on a session reaches every
 * watcher of it that takes messages (the publisher's too), in order with
 * commits, and a delete tells them the session is gone; a watcher without
 * a message callback hears commits only.
 */
START_TEST(test_watch_messages)
{
	struct eventlog	*a, *b = el;
	struct watcher	 w1, w2, w3;
	struct res	 r;

	a = open_on(server_port, 0);
	ck_assert(wait_ready(a, 5000));
	memset(&w1, 0, sizeof w1);
	memset(&w2, 0, sizeof w2);
	memset(&w3, 0, sizeof w3);
	eventlog_watch(a, SID, watch_cb, message_cb, &w1);
	eventlog_watch(a, SID, watch_cb, NULL, &w2);
	eventlog_watch(b, SID, watch_cb, message_cb, &w3);
	resync_wait(&w1, 1);
	resync_wait(&w2, 1);
	resync_wait(&w3, 1);

	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	memset(&r, 0, sizeof r);
	eventlog_publish(b, SID, "d 42 7", 6, done_cb, &r);
	ck_assert_int_eq(r.calls, 0);
	wait_for(&r);
	expect_status(r.status, EVENTLOG_OK);
	fill(K, 0);
	messages_wait(&w1, 1);
	ck_assert_str_eq(w1.msgs[0], "d 42 7");
	ck_assert_str_eq(w1.sid, SID);
	messages_wait(&w3, 1);
	ck_assert_str_eq(w3.msgs[0], "d 42 7");
	notes_wait(&w2, 1);
	ck_assert_uint_eq(w2.nmsgs, 0);

	/* A message that looks like a commit id is a message all the same. */
	memset(&r, 0, sizeof r);
	eventlog_publish(b, SID, "42-9", 4, done_cb, &r);
	wait_for(&r);
	messages_wait(&w1, 2);
	ck_assert_str_eq(w1.msgs[1], "42-9");
	ck_assert_uint_eq(w1.n, 1);

	/* The unwatch matches the message callback too. */
	eventlog_unwatch(a, SID, watch_cb, NULL, &w1);
	memset(&r, 0, sizeof r);
	eventlog_publish(b, SID, "x", 1, done_cb, &r);
	wait_for(&r);
	messages_wait(&w1, 3);
	eventlog_unwatch(a, SID, watch_cb, message_cb, &w1);

	/* A delete says so to every watcher, after the data is gone. */
	memset(&r, 0, sizeof r);
	eventlog_session_delete(b, SID, done_cb, &r);
	wait_for(&r);
	expect_status(r.status, EVENTLOG_OK);
	messages_wait(&w3, 4);
	ck_assert_str_eq(w3.msgs[3], EVENTLOG_MESSAGE_DELETED);
	ck_assert_uint_eq(w1.nmsgs, 3);
	/* A delete of what is not there says nothing. */
	memset(&r, 0, sizeof r);
	eventlog_session_delete(b, SID, done_cb, &r);
	wait_for(&r);
	expect_status(r.status, EVENTLOG_NOT_FOUND);
	run_for(200);
	ck_assert_uint_eq(w3.nmsgs, 4);

	eventlog_unwatch(a, SID, watch_cb, NULL, &w2);
	eventlog_unwatch(b, SID, watch_cb, message_cb, &w3);
	eventlog_free(a);
}
END_TEST

/* A watcher may unwatch itself from its callback. */
START_TEST(test_watch_unwatch_in_cb)
{
	struct watcher	w1, w2;

	memset(&w1, 0, sizeof w1);
	memset(&w2, 0, sizeof w2);
	w1.unwatch_in_cb = 1;
	eventlog_watch(el, SID, watch_cb, NULL, &w1);
	eventlog_watch(el, SID, watch_cb, NULL, &w2);
	resync_wait(&w1, 1);
	resync_wait(&w2, 1);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);
	notes_wait(&w2, 2);
	ck_assert_uint_eq(w1.n, 1);
	eventlog_unwatch(el, SID, watch_cb, NULL, &w2);
	expect_status(append(SID, K, 2, "x", 0, NULL, NULL), EVENTLOG_OK);
	run_for(100);
	ck_assert_uint_eq(w1.n, 1);
	ck_assert_uint_eq(w2.n, 2);
}
END_TEST

/*
 * Without an outage grace: the server is killed with ops in flight and a
 * watch live: every op fails once, new ops fail at once, the loss is
 * logged once, and after a restart on the same port the log and the
 * watch come back.
 */
START_TEST(test_kill_restart)
{
	struct res	r[4], late;
	struct watcher	w;
	char		*out;
	int		i;

	if (!own_server)
		return;
	conf->eventlog_outage_grace = 0;
	reopen(1000, 300);
	memset(&w, 0, sizeof w);
	eventlog_watch(el, SID, watch_cb, NULL, &w);
	resync_wait(&w, 1);
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K, 1);
	notes_wait(&w, 2);

	/* Hold the replies back so the ops are surely in flight. */
	freeReplyObject(sync_command("CLIENT PAUSE 5000 ALL"));
	memset(r, 0, sizeof r);
	eventlog_append(el, SID, K, 2, "{\"n\":2}", 7, 0, append_cb, &r[0]);
	eventlog_append(el, SID, K, 3, "{\"n\":3}", 7, 0, append_cb, &r[1]);
	eventlog_read(el, SID, K, 0, 10, read_cb, &r[2]);
	eventlog_session_store(el, SID, "n", 1, done_cb, &r[3]);
	run_for(100);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(r[i].calls, 0);

	capture_start();
	server_stop(server_pid);
	server_pid = -1;
	for (i = 0; i < 4; i++)
		wait_for(&r[i]);
	for (i = 0; i < 4; i++)
		expect_status(r[i].status, EVENTLOG_UNAVAILABLE);

	memset(&late, 0, sizeof late);
	eventlog_append(el, SID, K, 2, "x", 1, 0, append_cb, &late);
	ck_assert_int_eq(late.calls, 0);
	wait_for(&late);
	expect_status(late.status, EVENTLOG_UNAVAILABLE);
	res_clear(&late);

	run_for(1200);		/* a few reconnection attempts */
	out = capture_stop();
	ck_assert_msg(count_lines(out, "command connection lost") == 1,
	    "log: %s", out);
	ck_assert_msg(count_lines(out, "command connection failed") <= 1,
	    "log: %s", out);
	ck_assert_msg(count_lines(out, "subscription connection lost") == 1,
	    "log: %s", out);
	free(out);

	server_pid = server_start(server_port);
	ck_assert_int_gt(server_pid, 0);
	ck_assert_msg(wait_ready(el, 8000), "never reconnected");
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		res_clear(&r[i]);
	}

	/* The server lost everything (no persistence): loud, not silent. */
	expect_status(append(SID, K, 2, "x", 0, NULL, NULL),
	    EVENTLOG_NOT_FOUND);
	resync_wait(&w, 2);	/* the watch is live again: re-read */
	expect_status(store(SID, "m", 1), EVENTLOG_OK);
	fill(K + 1, 1);
	notes_wait(&w, 4);
	ck_assert_uint_eq(w.k[3], K + 1);
	ck_assert_uint_eq(w.seq[3], 1);
	eventlog_unwatch(el, SID, watch_cb, NULL, &w);
}
END_TEST

/*
 * The subscription comes back before the command connection (both lost;
 * the command connection's set-up refused meanwhile: SCRIPT is denied):
 * the watcher's k = 0 call waits until reads can be made, or the re-read
 * it asks for would fail and nothing would ask again (a session that
 * Redis lost kept by its process). Restores the ACL it changes; runs
 * before test_kill_restart, which starts a fresh server anyway.
 */
START_TEST(test_resync_waits_for_commands)
{
	struct watcher	 w;
	redisReply	*reply;
	char		*channel;
	uint64_t	 start;
	long long	 subscribed;

	if (!own_server)
		return;
	freeReplyObject(sync_command("ACL SETUSER default +@all"));
	memset(&w, 0, sizeof w);
	w.log = el;
	eventlog_watch(el, SID, watch_cb, NULL, &w);
	resync_wait(&w, 1);
	ck_assert_int_eq(w.unavailable, 0);

	freeReplyObject(sync_command("ACL SETUSER default -script"));
	freeReplyObject(sync_command("CLIENT KILL TYPE pubsub"));
	freeReplyObject(sync_command("CLIENT KILL TYPE normal"));
	/* Until the subscription is back: subscribed again, as Redis says. */
	channel = redis_script_channel(SID);
	start = clock_now_ms();
	for (;;) {
		reply = sync_command("PUBSUB NUMSUB %s", channel);
		ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
		subscribed = reply->element[1]->integer;
		freeReplyObject(reply);
		if (subscribed == 1)
			break;
		ck_assert_msg(clock_now_ms() - start < WAIT_MS,
		    "the subscription never came back");
		run_for(20);
	}
	free(channel);
	run_for(300);		/* the confirmation, and then some */
	ck_assert(!eventlog_available(el));
	ck_assert_msg(w.resyncs == 1, "a k = 0 call (%d) with the command "
	    "connection down (%d of them)", w.resyncs, w.unavailable);

	freeReplyObject(sync_command("ACL SETUSER default +script"));
	resync_wait(&w, 2);
	ck_assert_int_eq(w.unavailable, 0);
	eventlog_unwatch(el, SID, watch_cb, NULL, &w);
}
END_TEST

static Suite *
eventlog_redis_suite(void)
{
	Suite	*s = suite_create("eventlog_redis");
	TCase	*tc;

	eventlog_cases_add(s, &redis_backend);

	tc = tcase_create("redis");
	tcase_add_checked_fixture(tc, eventlog_cases_setup,
	    eventlog_cases_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_free_connecting);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_task_layout);
	tcase_add_test(tc, test_keyring_layout);
	tcase_add_test(tc, test_limit_layout);
	tcase_add_test(tc, test_pipeline);
	tcase_add_test(tc, test_append_batches);
	tcase_add_test(tc, test_append_batch_maxlen);
	tcase_add_test(tc, test_inflight_cap);
	tcase_add_test(tc, test_noscript);
	tcase_add_test(tc, test_wait_replicas);
	tcase_add_test(tc, test_wait_replicas_gate);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_outage_stall);
	tcase_add_test(tc, test_outage_past_grace);
	tcase_add_test(tc, test_retry_after_lost_reply);
	tcase_add_test(tc, test_down_at_start);
	tcase_add_test(tc, test_policy_warning);
	tcase_add_test(tc, test_database);
	tcase_add_test(tc, test_setup_refused);
	tcase_add_test(tc, test_layout_version);
	tcase_add_test(tc, test_select_refused);
	tcase_add_test(tc, test_watch);
	tcase_add_test(tc, test_watch_messages);
	tcase_add_test(tc, test_watch_unwatch_in_cb);
	suite_add_tcase(s, tc);

	/* Last: it replaces the server (in a forked test, for good). */
	tc = tcase_create("restart");
	tcase_add_checked_fixture(tc, eventlog_cases_setup,
	    eventlog_cases_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_resync_waits_for_commands);
	tcase_add_test(tc, test_kill_restart);
	suite_add_tcase(s, tc);
	return (s);
}

/* redis://HOST[:PORT][/DB] */
static int
parse_url(const char *url)
{
	const char	*p, *colon, *slash;
	size_t		 len;

	if (strncmp(url, "redis://", 8) != 0)
		return (-1);
	p = url + 8;
	slash = strchr(p, '/');
	colon = strchr(p, ':');
	if (colon != NULL && slash != NULL && colon > slash)
		colon = NULL;
	len = colon != NULL ? (size_t)(colon - p) : slash != NULL ?
	    (size_t)(slash - p) : strlen(p);
	if (len == 0 || len >= sizeof server_host)
		return (-1);
	memcpy(server_host, p, len);
	server_host[len] = '\0';
	server_port = colon != NULL ? atoi(colon + 1) : 6379;
	server_db = slash != NULL ? atoi(slash + 1) : 0;
	return (server_port > 0 ? 0 : -1);
}

/* Removes the server's directory (its log files). */
static void
server_dir_remove(void)
{
	char	cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", server_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", server_dir);
}

int
main(void)
{
	SRunner		*sr;
	redisContext	*c;
	const char	*url = getenv("MCPD_TEST_REDIS_URL");
	int		 failed;

	unit_init();
	signal(SIGPIPE, SIG_IGN);
	if (url != NULL && *url != '\0') {
		if (parse_url(url) != 0) {
			fprintf(stderr, "bad MCPD_TEST_REDIS_URL: %s\n", url);
			return (EXIT_FAILURE);
		}
	} else {
		if (mkdtemp(server_dir) == NULL) {
			perror("mkdtemp");
			return (EXIT_FAILURE);
		}
		own_server = 1;
		server_port = free_port();
		if (server_port <= 0 ||
		    (server_pid = server_start(server_port)) < 0) {
			fprintf(stderr, "cannot start %s\n", REDIS_SERVER);
			server_dir_remove();
			return (EXIT_FAILURE);
		}
	}

	sr = srunner_create(eventlog_redis_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	if (own_server) {
		/* Whichever server now listens (a restarted one, perhaps). */
		if ((c = sync_connect(server_port)) != NULL) {
			freeReplyObject(redisCommand(c, "SHUTDOWN NOSAVE"));
			redisFree(c);
		}
		server_stop(server_pid);
		server_dir_remove();
	}
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
