/*
 * Unit tests for upstreams: the conf block (every directive, defaults and
 * each error with FILE:LINE), the framing of messages, the back-off, and
 * upstream.c's state machine on a real loop against a scripted server (a
 * shell script answering the handshake with canned lines): STARTING ->
 * LISTING -> READY, a request and its answer matched by id, a request made
 * before READY sent once ready, the exit failing what is in flight with
 * the upstream's name and status, BACKOFF and the restart, a stop.
 */
#include <sys/types.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "confparse.h"
#include "unit.h"

#include "conf.h"
#include "exec.h"
#include "server.h"
#include "upstream.h"
#include "upstream_sse.h"
#include "xmalloc.h"

static struct conf *
parse(const char *text, char **cause)
{
	*cause = NULL;
	return (conf_parse_string(text, "t.conf", cause));
}

START_TEST(test_conf_block)
{
	struct conf			*conf;
	const struct conf_upstream	*up;
	char				*cause;

	conf = parse("upstream everything {\n"
	    "    exec /bin/sh -c \"exit 0\" # argv, no shell of ours\n"
	    "    # url http://127.0.0.1:3001/mcp\n"
	    "    sharing session\n"
	    "    prefix \"ev_\"\n"
	    "    env NAME=VALUE\n"
	    "    env PATH=/bin\n"
	    "    cwd /tmp\n"
	    "    timeout 30\n"
	    "    max_concurrency 8\n"
	    "    restart_delay 2\n"
	    "    max_instances 3\n"
	    "    max_message 1m\n"
	    "}\n"
	    "upstream web {\n"
	    "    url http://127.0.0.1:3001/mcp\n"
	    "}\n"
	    "upstream tls {\n"
	    "    url https://mcp.example.com/mcp\n"
	    "}\n", &cause);
	ck_assert_msg(conf != NULL, "%s", cause);
	ck_assert_uint_eq(conf->nupstreams, 3);
	ck_assert_str_eq(conf_upstream_find(conf, "tls")->url,
	    "https://mcp.example.com/mcp");
	up = conf_upstream_find(conf, "everything");
	ck_assert_ptr_nonnull(up);
	ck_assert_int_eq(up->line, 1);
	ck_assert_str_eq(up->program, "/bin/sh");
	ck_assert_uint_eq(up->argc, 3);
	ck_assert_str_eq(up->argv[2], "exit 0");
	ck_assert_ptr_null(up->argv[3]);
	ck_assert_ptr_null(up->url);
	ck_assert_int_eq(up->sharing, CONF_SHARING_SESSION);
	ck_assert_str_eq(up->prefix, "ev_");
	ck_assert_uint_eq(up->nenv, 2);
	ck_assert_str_eq(up->env[1], "PATH=/bin");
	ck_assert_str_eq(up->cwd, "/tmp");
	ck_assert_int_eq(up->timeout, 30);
	ck_assert_int_eq(up->max_concurrency, 8);
	ck_assert_int_eq(up->restart_delay, 2);
	ck_assert_int_eq(up->max_instances, 3);
	ck_assert_int_eq(up->max_line, 1024 * 1024);

	up = conf_upstream_find(conf, "web");
	ck_assert_str_eq(up->url, "http://127.0.0.1:3001/mcp");
	ck_assert_ptr_null(up->program);
	/* The defaults. */
	ck_assert_int_eq(up->sharing, CONF_SHARING_SHARED);
	ck_assert_str_eq(up->prefix, "");
	ck_assert_int_eq(up->timeout, 60);
	ck_assert_int_eq(up->max_concurrency, 64);
	ck_assert_int_eq(up->restart_delay, 1);
	ck_assert_int_eq(up->max_instances, 64);
	ck_assert_int_eq(up->max_line, 4 * 1024 * 1024);
	ck_assert_ptr_null(conf_upstream_find(conf, "nope"));
	conf_free(conf);
}
END_TEST

START_TEST(test_conf_errors)
{
	expect_error_has("upstream a {\n}\n", "t.conf:1: upstream a: missing "
	    "\"exec PROGRAM [ARG...]\" or \"url URL\"");
	expect_error_has("upstream a {\nexec /bin/true\nurl http://h/\n}\n",
	    "t.conf:3: upstream a: exec (line 2) and url exclude each other");
	expect_error_has("upstream a {\nexec /bin/true\n}\nupstream a {\n"
	    "exec /bin/true\n}\n", "t.conf:4: duplicate upstream a (first "
	    "declared on line 1)");
	expect_error_has("upstream {\nexec /bin/true\n}\n",
	    "t.conf:1: upstream: expected \"upstream NAME { ... }\"");
	expect_error_has("upstream a/b {\nexec /bin/true\n}\n", "invalid name");
	expect_error_has("upstream a {\nexec /no/such/program\n}\n",
	    "t.conf:2: exec: program \"/no/such/program\"");
	expect_error_has("upstream a {\nexec /bin/true\nsharing some\n}\n",
	    "t.conf:3: sharing:");
	expect_error_has("upstream a {\nexec /bin/true\nprefix \"a b\"\n}\n",
	    "t.conf:3: prefix: invalid prefix");
	expect_error_has("upstream a {\nurl ftp://h/\n}\n", "t.conf:2: url: "
	    "\"ftp://h/\" is not an http:// or https:// URL");
	expect_error_has("upstream a {\nurl http:///x\n}\n", "a host is needed");
	expect_error_has("upstream a {\nurl http://h/\nenv A=1\n}\n",
	    "env and cwd are for an exec upstream");
	expect_error_has("upstream a {\nexec /bin/true\nenv A=1\nenv A=2\n}\n",
	    "t.conf:4: env: A is set twice");
	expect_error_has("upstream a {\nexec /bin/true\ntimeout 0\n}\n",
	    "t.conf:3: timeout: 0 out of range");
	expect_error_has("upstream a {\nexec /bin/true\nmax_message 1k\n}\n",
	    "t.conf:3: max_message: 1k out of range");
	expect_error_has("upstream a {\nexec /bin/true\ntool x\n}\n",
	    "t.conf:3: unknown directive \"tool\"");
}
END_TEST

START_TEST(test_frame)
{
	cJSON	*msg;
	char	*line;
	size_t	 len;

	msg = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\","
	    "\"params\":{\"t\":\"a\\nb\"}}");
	line = upstream_frame(msg, &len);
	/* One line: an embedded newline stays escaped, one at the end. */
	ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\","
	    "\"params\":{\"t\":\"a\\nb\"}}\n");
	ck_assert_uint_eq(len, strlen(line));
	ck_assert_ptr_eq(strchr(line, '\n'), line + len - 1);
	free(line);
	cJSON_Delete(msg);
}
END_TEST

START_TEST(test_backoff)
{
	ck_assert_int_eq(upstream_backoff_ms(1, 0), 1000);
	ck_assert_int_eq(upstream_backoff_ms(1, 1), 1000);
	ck_assert_int_eq(upstream_backoff_ms(1, 2), 2000);
	ck_assert_int_eq(upstream_backoff_ms(1, 3), 4000);
	ck_assert_int_eq(upstream_backoff_ms(1, 7), 60000);	/* capped */
	ck_assert_int_eq(upstream_backoff_ms(1, 100), 60000);
	ck_assert_int_eq(upstream_backoff_ms(2, 3), 8000);
	ck_assert_int_eq(upstream_backoff_ms(3600, 5), 3600000);
}
END_TEST

/* SSE events as "id|data;" in one string. */
struct sse_out {
	char	buf[1024];
	int	n;
};

static void
sse_cb(const char *data, size_t len, const char *id, void *arg)
{
	struct sse_out	*o = arg;
	size_t		 used = strlen(o->buf);

	snprintf(o->buf + used, sizeof o->buf - used, "%s|%.*s;",
	    id != NULL ? id : "-", (int)len, data);
	o->n++;
}

START_TEST(test_sse_parser)
{
	struct upstream_sse	*p;
	struct sse_out		 o;
	const char		*in = "retry: 1000\n\nid: 1\ndata: {\"a\":1}\n\n"
				    ": keepalive\n\ndata:x\r\ndata: y\r\n\r\n"
				    "event: message\nid: 2\ndata: z\n\n";
	size_t			 i;

	/* The same events whether the bytes come at once or one by one. */
	memset(&o, 0, sizeof o);
	p = upstream_sse_new(100, sse_cb, &o);
	ck_assert_int_eq(upstream_sse_feed(p, in, strlen(in)), 0);
	ck_assert_str_eq(o.buf, "1|{\"a\":1};1|x\ny;2|z;");
	ck_assert_str_eq(upstream_sse_last_id(p), "2");
	upstream_sse_free(p);
	memset(&o, 0, sizeof o);
	p = upstream_sse_new(100, sse_cb, &o);
	for (i = 0; in[i] != '\0'; i++)
		ck_assert_int_eq(upstream_sse_feed(p, in + i, 1), 0);
	ck_assert_str_eq(o.buf, "1|{\"a\":1};1|x\ny;2|z;");
	upstream_sse_free(p);

	/* No event without its blank line; none without data. */
	memset(&o, 0, sizeof o);
	p = upstream_sse_new(100, sse_cb, &o);
	ck_assert_int_eq(upstream_sse_feed(p, "id: 5\n\ndata: half", 18), 0);
	ck_assert_int_eq(o.n, 0);
	ck_assert_str_eq(upstream_sse_last_id(p), "5");
	upstream_sse_free(p);

	/* A line or an event over the bound fails. */
	memset(&o, 0, sizeof o);
	p = upstream_sse_new(8, sse_cb, &o);
	ck_assert_int_eq(upstream_sse_feed(p, "data: 0123456789", 16), -1);
	upstream_sse_free(p);
	p = upstream_sse_new(8, sse_cb, &o);
	ck_assert_int_eq(upstream_sse_feed(p, "data: 12345\ndata: 678\n", 23),
	    -1);
	upstream_sse_free(p);
}
END_TEST

/* ---------------------------------------------------------------------
 * The state machine against a scripted server.
 */

/*
 * Reads each message and answers with canned lines: the handshake (ids 1
 * and 2: initialize, tools/list), then the request with id 3, then exits
 * with status 5 after the request with id 4 (never answered).
 */
static const char script[] =
    "r() { read l; id=$(printf %s \"$l\" | "
    "sed 's/.*\"id\":\\([0-9]*\\)}$/\\1/'); };"
    "r; echo '{\"jsonrpc\":\"2.0\",\"id\":'$id',\"result\":{"
    "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
    "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}';"
    "read l; r;"
    "echo 'not json at all';"
    "echo '{\"jsonrpc\":\"2.0\",\"id\":'$id',\"result\":{\"tools\":"
    "[{\"name\":\"t1\",\"inputSchema\":{}}]}}';"
    "r; echo '{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}';"
    "echo '{\"jsonrpc\":\"2.0\",\"id\":'$id',\"result\":{\"ok\":true}}';"
    "read l; exit 5";

struct ustate {
	int		 catalogs;
	int		 answered;
	char		*error;
	int		 ok;
};

static void
u_catalog(struct upstream *u, void *arg)
{
	((struct ustate *)arg)->catalogs++;
}

static const struct upstream_hooks u_hooks = { u_catalog, NULL, NULL };

static void
u_answer_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct ustate	*st = arg;

	st->answered++;
	if (error != NULL)
		st->error = xstrdup(cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(error, "message")));
	else
		st->ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
		    "ok"));
}

static struct event_base	*base;

static void
loop_until(int *flag, int want)
{
	int	i;

	for (i = 0; i < 500 && *flag < want; i++) {
		struct timeval	tv = { 0, 10000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	ck_assert_int_ge(*flag, want);
}

START_TEST(test_state_machine)
{
	struct conf		*conf;
	const struct conf_upstream *def;
	struct upstream		*u;
	struct ustate		 st, st2, st3;
	char			*cause;
	const cJSON		*tools;
	int			 i;

	base = event_base_new();
	exec_init(base);
	/* The script goes in as $0 of sh -c 'eval "$0"', in place of X. */
	conf = parse("upstream s {\nexec /bin/sh -c \"eval \\\"$0\\\"\" X\n"
	    "restart_delay 1\n}\n", &cause);
	ck_assert_msg(conf != NULL, "%s", cause);
	def = conf_upstream_find(conf, "s");
	/* Put the real script in place of the placeholder. */
	ck_assert_str_eq(def->argv[2], "eval \"$0\"");
	free(def->argv[3]);
	((struct conf_upstream *)def)->argv[3] = xstrdup(script);
	server.base = base;		/* no event log: none is needed */
	server.conf = conf;

	memset(&st, 0, sizeof st);
	memset(&st2, 0, sizeof st2);
	memset(&st3, 0, sizeof st3);
	u = upstream_start(def, NULL, NULL, &u_hooks, &st);
	ck_assert_int_eq(upstream_state(u), UPSTREAM_STARTING);
	ck_assert_str_eq(upstream_name(u), "s");
	/* Made before READY: sent once ready, gets id 3. */
	upstream_request(u, "tools/call", cJSON_CreateObject(), u_answer_cb,
	    &st2);
	ck_assert_int_eq(st2.answered, 0);	/* never inside the call */
	loop_until(&st.catalogs, 1);
	ck_assert_int_eq(upstream_state(u), UPSTREAM_READY);
	tools = upstream_catalog(u, UPSTREAM_TOOLS);
	ck_assert_int_eq(cJSON_GetArraySize(tools), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(tools, 0), "name")), "t1");
	loop_until(&st2.answered, 1);
	ck_assert_ptr_null(st2.error);
	ck_assert_int_eq(st2.ok, 1);

	/* The next request is never answered: the exit fails it, loudly. */
	upstream_request(u, "tools/call", cJSON_CreateObject(), u_answer_cb,
	    &st3);
	ck_assert_uint_eq(upstream_inflight(u), 1);
	loop_until(&st3.answered, 1);
	ck_assert_ptr_nonnull(st3.error);
	ck_assert_msg(strstr(st3.error, "upstream s: exited with status 5") !=
	    NULL, "%s", st3.error);
	ck_assert_int_eq(upstream_state(u), UPSTREAM_BACKOFF);
	ck_assert_uint_eq(upstream_inflight(u), 0);

	/* It restarts after restart_delay and is ready again. */
	loop_until(&st.catalogs, 2);
	ck_assert_int_eq(upstream_state(u), UPSTREAM_READY);

	/* A request in flight when the owner stops it ends with an error. */
	free(st3.error);
	memset(&st3, 0, sizeof st3);
	upstream_request(u, "tools/call", cJSON_CreateObject(), u_answer_cb,
	    &st3);
	loop_until(&st3.answered, 0);
	upstream_stop(u, "the test is over");
	ck_assert_int_eq(st3.answered, 0);
	loop_until(&st3.answered, 1);
	ck_assert_msg(strstr(st3.error, "upstream s stopped (the test is "
	    "over)") != NULL, "%s", st3.error);
	for (i = 0; i < 50 && exec_count() > 0; i++)
		loop_until(&st3.answered, 1);
	free(st2.error);
	free(st3.error);
	exec_shutdown();
	unit_turns(base, 4);
	conf_free(conf);
	event_base_free(base);
}
END_TEST

static Suite *
upstream_suite(void)
{
	Suite	*s = suite_create("upstream");
	TCase	*tc = tcase_create("upstream");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_conf_block);
	tcase_add_test(tc, test_conf_errors);
	tcase_add_test(tc, test_frame);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_sse_parser);
	tcase_add_test(tc, test_state_machine);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(upstream_suite)
