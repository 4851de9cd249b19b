/*
 * Unit tests for trace.c and otlp.c: W3C traceparent and tracestate as
 * the specification reads them; parent-based sampling (a sampled parent
 * honoured at ratio 0, an unsampled one at ratio 1, ratio 0 allocating
 * nothing); spans encoded in the OTLP/JSON mapping, read back from what
 * the exporter POSTs to an evhttp receiver on the same loop; the
 * exporter's batches, its bounded queue, its retries and its drops; and
 * the current span, which a span ending inside its own scope leaves.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <cjson/cJSON.h>

#include "unit.h"

#include "http_client.h"
#include "log.h"
#include "otlp.h"
#include "trace.h"

#define TP	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

static struct event_base	*base;
static struct evhttp		*http;
static int			 port;
static char			 url[64];
static int			 posts;		/* requests received */
static int			 answer = 200;	/* the receiver's */
static int			 fail_first;	/* 503s first */
static cJSON			*bodies;	/* every body accepted */
static char			 auth[128];	/* Authorization */

static void
receiver_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	struct evbuffer	*out = evbuffer_new();
	const char	*h;
	cJSON		*body;
	size_t		 len = evbuffer_get_length(in);

	posts++;
	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	strlcpy(auth, h != NULL ? h : "", sizeof auth);
	if (fail_first > 0) {
		fail_first--;
		evhttp_send_reply(req, 503, "Unavailable", NULL);
		evbuffer_free(out);
		return;
	}
	if (answer == 200) {
		body = cJSON_ParseWithLength((const char *)evbuffer_pullup(in,
		    -1), len);
		ck_assert_ptr_nonnull(body);
		cJSON_AddItemToArray(bodies, body);
		evbuffer_add_printf(out, "{}");
	}
	evhttp_send_reply(req, answer, "X", out);
	evbuffer_free(out);
}

static void
setup(void)
{
	struct evhttp_bound_socket	*bound;
	struct sockaddr_storage		 ss;
	socklen_t			 sl = sizeof ss;

	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_gencb(http, receiver_cb, NULL);
	bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	ck_assert_ptr_nonnull(bound);
	getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss,
	    &sl);
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/traces", port);
	http_client_init(base);
	posts = 0;
	answer = 200;
	fail_first = 0;
	bodies = cJSON_CreateArray();
}

static void
teardown(void)
{
	trace_configure(0, 0);
	otlp_shutdown();
	http_client_shutdown();
	evhttp_free(http);
	event_base_free(base);
	cJSON_Delete(bodies);
}

static void
exporter(size_t queue, size_t batch)
{
	char			*headers[] = { (char *)"Authorization: Bearer s3",
				    NULL };
	char			*resource[] = { (char *)"service.name=mcpd",
				    (char *)"deployment.environment.name=t\"1",
				    NULL };
	struct otlp_settings	 set = {
		.url = url, .headers = headers, .nheaders = 1,
		.resource = resource, .nresource = 2,
		.scope_name = "mcpd", .scope_version = "0.1.0",
		.queue_max = queue, .batch_max = batch,
		.interval_ms = 20, .timeout_ms = 2000
	};

	otlp_configure(base, &set);
	trace_configure(1, 1);
}

/* The loop runs until cond, or 5 s (then the test fails). */
#define RUN_UNTIL(cond) do {						\
	int	_k;							\
	for (_k = 0; _k < 5000 && !(cond); _k++) {			\
		struct timeval _tv = { 0, 1000 };			\
		event_base_loopexit(base, &_tv);			\
		event_base_dispatch(base);				\
	}								\
	ck_assert_msg((cond), "timed out: " #cond);			\
} while (0)

/* The spans of every body received, in order. */
static cJSON *
received_spans(void)
{
	cJSON	*all = cJSON_CreateArray(), *body, *span;

	cJSON_ArrayForEach(body, bodies) {
		cJSON_ArrayForEach(span, cJSON_GetObjectItem(cJSON_GetArrayItem(
		    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		    body, "resourceSpans"), 0), "scopeSpans"), 0), "spans"))
			cJSON_AddItemToArray(all, cJSON_Duplicate(span, 1));
	}
	return (all);
}

static const cJSON *
attr_value(const cJSON *span, const char *key)
{
	const cJSON	*kv;

	cJSON_ArrayForEach(kv, cJSON_GetObjectItem(span, "attributes")) {
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(kv,
		    "key")), key) == 0)
			return (cJSON_GetObjectItem(kv, "value"));
	}
	return (NULL);
}

static int
is_hex(const char *s, size_t n)
{
	size_t	i;

	if (s == NULL || strlen(s) != n)
		return (0);
	for (i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return (0);
	}
	return (1);
}

/* ------------------------------------------------------------------ */

START_TEST(test_parse)
{
	struct trace_ctx	ctx;
	char			out[TRACE_PARENT_LEN + 1];

	ck_assert_int_eq(trace_parse(TP, &ctx), 0);
	ck_assert_int_eq(ctx.state, TRACE_CTX_IDS);
	ck_assert_int_eq(ctx.flags, 1);
	ck_assert_int_eq(ctx.remote, 1);
	ck_assert_int_eq(ctx.trace_id[0], 0x0a);
	ck_assert_int_eq(ctx.span_id[7], 0x31);
	ck_assert_int_eq(trace_format(&ctx, out), 0);
	ck_assert_str_eq(out, TP);

	/* Uppercase, zeros, version ff, a 00 too long, bad dashes. */
	ck_assert_int_eq(trace_parse("00-0AF7651916CD43DD8448EB211C80319C-"
	    "b7ad6b7169203331-01", &ctx), -1);
	ck_assert_int_eq(trace_parse("00-00000000000000000000000000000000-"
	    "b7ad6b7169203331-01", &ctx), -1);
	ck_assert_int_eq(trace_parse("00-0af7651916cd43dd8448eb211c80319c-"
	    "0000000000000000-01", &ctx), -1);
	ck_assert_int_eq(trace_parse("ff-0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-01", &ctx), -1);
	ck_assert_int_eq(trace_parse(TP "-x", &ctx), -1);
	ck_assert_int_eq(trace_parse("00_0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-01", &ctx), -1);
	ck_assert_int_eq(trace_parse("00-0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-0", &ctx), -1);
	ck_assert_int_eq(trace_parse("", &ctx), -1);
	ck_assert_int_eq(trace_parse(NULL, &ctx), -1);
	/* A later version: read at the same places, with more after "-". */
	ck_assert_int_eq(trace_parse("01-0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-00-what-comes", &ctx), 0);
	ck_assert_int_eq(ctx.flags, 0);
	ck_assert_int_eq(trace_parse("01-0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-00x", &ctx), -1);
}
END_TEST

START_TEST(test_state)
{
	char	big[TRACE_STATE_MAX + 8];
	char	many[33 * 6 + 1];
	int	i;

	ck_assert(trace_state_ok("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
	ck_assert(trace_state_ok("a@b=1, x/y=2 ,,k*=v"));
	ck_assert(!trace_state_ok("Rojo=1"));		/* uppercase key */
	ck_assert(!trace_state_ok("rojo"));		/* no value */
	ck_assert(!trace_state_ok("rojo=a=b"));
	ck_assert(!trace_state_ok("rojo=\x01"));
	memset(big, 'a', sizeof big - 1);
	big[0] = 'k';
	big[1] = '=';
	big[sizeof big - 1] = '\0';
	ck_assert(!trace_state_ok(big));		/* too long */
	many[0] = '\0';
	for (i = 0; i < 33; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many),
		    "%sk%d=v", i > 0 ? "," : "", i);
	ck_assert(!trace_state_ok(many));		/* 33 members */
}
END_TEST

START_TEST(test_sampling)
{
	struct trace_ctx	 parent;
	struct trace_span	*sp, *child;
	size_t			 live = trace_live();
	char			 tp[TRACE_PARENT_LEN + 1];
	int			 i, sampled = 0;

	exporter(1000, 100);
	/* Off: nothing at all. */
	trace_configure(0, 1);
	ck_assert_ptr_null(trace_start("x", TRACE_SERVER, NULL, NULL));

	/* Ratio 0: a root is the static unsampled span, and so are its
	   children; nothing is allocated, nothing propagated. */
	trace_configure(1, 0);
	sp = trace_start("root", TRACE_SERVER, NULL, NULL);
	ck_assert_ptr_nonnull(sp);
	ck_assert(!trace_recording(sp));
	ck_assert_int_eq(trace_span_ctx(sp)->state, TRACE_CTX_DROPPED);
	child = trace_child("child", TRACE_INTERNAL, sp);
	ck_assert_ptr_eq(child, sp);
	ck_assert_int_eq(trace_traceparent(sp, tp), -1);
	ck_assert_uint_eq(trace_live(), live);
	trace_end(child);
	trace_end(sp);

	/* A sampled parent is honoured at ratio 0. */
	ck_assert_int_eq(trace_parse(TP, &parent), 0);
	sp = trace_start("remote", TRACE_SERVER, &parent, "k=v");
	ck_assert(trace_recording(sp));
	ck_assert_int_eq(memcmp(trace_span_ctx(sp)->trace_id,
	    parent.trace_id, 16), 0);
	ck_assert_str_eq(trace_span_state(sp), "k=v");
	child = trace_child("child", TRACE_INTERNAL, sp);
	ck_assert(trace_recording(child));
	ck_assert_str_eq(trace_span_state(child), "k=v");
	trace_end(child);
	trace_end(sp);

	/* An unsampled parent at ratio 1: not recorded, but passed on. */
	trace_configure(1, 1);
	ck_assert_int_eq(trace_parse("00-0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-00", &parent), 0);
	sp = trace_start("remote", TRACE_SERVER, &parent, NULL);
	ck_assert(!trace_recording(sp));
	ck_assert_int_eq(trace_traceparent(sp, tp), 0);
	ck_assert_int_eq(strncmp(tp, "00-0af7651916cd43dd8448eb211c80319c-",
	    36), 0);
	ck_assert_str_eq(tp + 53, "00");
	ck_assert_str_ne(tp + 36, "b7ad6b7169203331-00");
	trace_end(sp);

	/* Ratio 1: every root; a root's flags say sampled and random. */
	sp = trace_start("root", TRACE_SERVER, NULL, NULL);
	ck_assert(trace_recording(sp));
	ck_assert_int_eq(trace_span_ctx(sp)->flags, 3);
	trace_end(sp);

	/* Ratio 0.5: about half the roots (2000 draws; 12 sigma). */
	trace_configure(1, 0.5);
	for (i = 0; i < 2000; i++) {
		sp = trace_start("root", TRACE_SERVER, NULL, NULL);
		sampled += trace_recording(sp);
		trace_end(sp);
	}
	ck_assert_int_gt(sampled, 600);
	ck_assert_int_lt(sampled, 1400);
	ck_assert_uint_eq(trace_live(), live);
}
END_TEST

START_TEST(test_encoding)
{
	struct trace_ctx	 parent, other;
	struct trace_span	*sp;
	struct otlp_stats	 st;
	cJSON			*spans, *s, *rs;
	const cJSON		*v;
	const char		*start, *end;

	exporter(1000, 100);
	ck_assert_int_eq(trace_parse(TP, &parent), 0);
	ck_assert_int_eq(trace_parse("00-1af7651916cd43dd8448eb211c80319c-"
	    "c7ad6b7169203331-01", &other), 0);
	sp = trace_start("tools/call echo", TRACE_SERVER, &parent, "k=v");
	trace_attr_str(sp, "mcp.method.name", "tools/call");
	trace_attr_int(sp, "process.pid", 4242);
	trace_attr_bool(sp, "mcpd.call.cancelled", 1);
	/* Bytes that are not UTF-8, quotes and control characters. */
	trace_attr_strn(sp, "weird", "a\"b\\c\n\x01\xff\xc3\xa9", 10);
	trace_link(sp, &other);
	trace_error(sp, "-32602", "Invalid params: \"x\"");
	trace_end(sp);
	RUN_UNTIL(cJSON_GetArraySize(bodies) == 1 && !otlp_busy());

	rs = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(bodies,
	    0), "resourceSpans"), 0);
	v = attr_value(cJSON_GetObjectItem(rs, "resource"), "service.name");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "stringValue")), "mcpd");
	v = attr_value(cJSON_GetObjectItem(rs, "resource"),
	    "deployment.environment.name");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "stringValue")), "t\"1");
	ck_assert_str_eq(auth, "Bearer s3");

	spans = received_spans();
	ck_assert_int_eq(cJSON_GetArraySize(spans), 1);
	s = cJSON_GetArrayItem(spans, 0);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(s,
	    "traceId")), "0af7651916cd43dd8448eb211c80319c");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(s,
	    "parentSpanId")), "b7ad6b7169203331");
	ck_assert(is_hex(cJSON_GetStringValue(cJSON_GetObjectItem(s,
	    "spanId")), 16));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(s,
	    "traceState")), "k=v");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(s, "name")),
	    "tools/call echo");
	ck_assert_int_eq(cJSON_GetObjectItem(s, "kind")->valueint, 2);
	/* W3C sampled, and "the parent is remote" (0x300). */
	ck_assert_int_eq(cJSON_GetObjectItem(s, "flags")->valueint, 0x301);
	start = cJSON_GetStringValue(cJSON_GetObjectItem(s,
	    "startTimeUnixNano"));
	end = cJSON_GetStringValue(cJSON_GetObjectItem(s, "endTimeUnixNano"));
	ck_assert_ptr_nonnull(start);
	ck_assert_ptr_nonnull(end);
	ck_assert_uint_ge(strlen(start), 19);
	ck_assert(strtoull(end, NULL, 10) >= strtoull(start, NULL, 10));
	v = attr_value(s, "process.pid");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "intValue")), "4242");
	v = attr_value(s, "mcpd.call.cancelled");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(v, "boolValue")));
	v = attr_value(s, "weird");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "stringValue")), "a\"b\\c\n\x01\xef\xbf\xbd\xc3\xa9");
	v = attr_value(s, "error.type");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "stringValue")), "-32602");
	v = cJSON_GetObjectItem(s, "status");
	ck_assert_int_eq(cJSON_GetObjectItem(v, "code")->valueint, 2);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "message")), "Invalid params: \"x\"");
	v = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "links"), 0);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v,
	    "traceId")), "1af7651916cd43dd8448eb211c80319c");
	otlp_get_stats(&st);
	ck_assert_uint_eq(st.exported, 1);
	ck_assert_uint_eq(st.queued, 0);
	cJSON_Delete(spans);
}
END_TEST

START_TEST(test_batches)
{
	struct trace_span	*sp;
	struct otlp_stats	 st;
	int			 i;

	/* batch 2, 5 spans: three requests, in order. */
	exporter(1000, 2);
	for (i = 0; i < 5; i++) {
		sp = trace_start("s", TRACE_INTERNAL, NULL, NULL);
		trace_attr_int(sp, "i", i);
		trace_end(sp);
	}
	RUN_UNTIL(!otlp_busy());
	otlp_get_stats(&st);
	ck_assert_int_eq(posts, 3);
	ck_assert_uint_eq(st.exported, 5);
	ck_assert_uint_eq(st.requests_ok, 3);
	ck_assert_uint_eq(st.queued, 0);
	ck_assert_uint_eq(st.queued_bytes, 0);
}
END_TEST

START_TEST(test_queue_bound)
{
	struct trace_span	*sp;
	struct otlp_stats	 st;
	int			 i;

	/* Nothing is sent before the loop turns: past 16, spans drop. */
	exporter(16, 4);
	answer = 503;
	for (i = 0; i < 40; i++) {
		sp = trace_start("s", TRACE_INTERNAL, NULL, NULL);
		trace_end(sp);
	}
	otlp_get_stats(&st);
	ck_assert_uint_eq(st.queued, 16);
	ck_assert_uint_eq(st.dropped_full, 24);
}
END_TEST

START_TEST(test_retry)
{
	struct trace_span	*sp;
	struct otlp_stats	 st;

	/* 503 twice, then taken: one batch, three attempts. */
	exporter(100, 10);
	fail_first = 2;
	sp = trace_start("s", TRACE_INTERNAL, NULL, NULL);
	trace_end(sp);
	RUN_UNTIL(!otlp_busy());
	otlp_get_stats(&st);
	ck_assert_int_eq(posts, 3);
	ck_assert_uint_eq(st.requests_failed, 2);
	ck_assert_uint_eq(st.exported, 1);
	ck_assert_uint_eq(st.dropped_failed, 0);
}
END_TEST

START_TEST(test_refused)
{
	struct trace_span	*sp;
	struct otlp_stats	 st;
	int			 i;

	/* 400 is not sent again: the batch is dropped and counted. */
	exporter(100, 10);
	answer = 400;
	for (i = 0; i < 3; i++) {
		sp = trace_start("s", TRACE_INTERNAL, NULL, NULL);
		trace_end(sp);
	}
	RUN_UNTIL(!otlp_busy());
	otlp_get_stats(&st);
	ck_assert_int_eq(posts, 1);
	ck_assert_uint_eq(st.dropped_failed, 3);
	ck_assert_uint_eq(st.exported, 0);
}
END_TEST

START_TEST(test_flush)
{
	struct trace_span	*sp;
	struct otlp_stats	 st;

	/* A receiver that is down: the flush tries each batch once. */
	exporter(100, 10);
	fail_first = 100;
	sp = trace_start("s", TRACE_INTERNAL, NULL, NULL);
	trace_end(sp);
	otlp_flush();
	RUN_UNTIL(!otlp_busy());
	otlp_get_stats(&st);
	ck_assert_int_eq(posts, 1);
	ck_assert_uint_eq(st.dropped_failed, 1);
}
END_TEST

START_TEST(test_current)
{
	struct trace_span	*a, *b;
	char			 tid[33], sid[17];
	int			 d1, d2;

	exporter(100, 10);
	ck_assert_ptr_nonnull(log_trace_ids);
	ck_assert_int_eq(log_trace_ids(tid, sid), 0);
	a = trace_start("a", TRACE_SERVER, NULL, NULL);
	b = trace_child("b", TRACE_INTERNAL, a);
	d1 = trace_enter(a);
	ck_assert_ptr_eq(trace_current(), a);
	ck_assert_int_eq(log_trace_ids(tid, sid), 1);
	ck_assert(is_hex(tid, 32));
	ck_assert(is_hex(sid, 16));
	d2 = trace_enter(b);
	ck_assert_ptr_eq(trace_current(), b);
	/* a ends while b's scope is in it: no level keeps it. */
	trace_end(a);
	trace_leave(d2);
	ck_assert_ptr_null(trace_current());
	trace_leave(d1);
	ck_assert_ptr_null(trace_current());
	trace_end(b);
}
END_TEST

static Suite *
trace_suite(void)
{
	Suite	*s = suite_create("trace");
	TCase	*tc = tcase_create("trace");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_state);
	tcase_add_test(tc, test_sampling);
	tcase_add_test(tc, test_encoding);
	tcase_add_test(tc, test_batches);
	tcase_add_test(tc, test_queue_bound);
	tcase_add_test(tc, test_retry);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_flush);
	tcase_add_test(tc, test_current);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(trace_suite)
