/*
 * Unit tests for credential.c, against a token endpoint of evhttp on the
 * same loop (127.0.0.1, port 0): static headers; mcpd's own token by
 * client credentials, asked for once by two asks, with the id and secret
 * form-encoded inside Basic, then kept; a token exchange's form, its
 * refusal and a principal without a token; a refused token fetched again;
 * a cancelled ask. Every callback runs exactly once, never inside a
 * credential_* call.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "unit.h"

#include "../../src/auth/auth_int.h"
#include "base64.h"
#include "conf.h"
#include "credential.h"
#include "http_client.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "xmalloc.h"

static struct event_base	*base;
static struct evhttp		*http;
static struct conf		*conf;
static int			 port;
static char			 url[128];

/* What the token endpoint saw and does. */
static struct {
	int			 requests;
	char			 body[4096];
	char			 authorization[512];
	const char		*answer;	/* JSON it answers */
	int			 status;
	struct evhttp_request	*held;		/* hold: not answered yet */
	int			 hold;
} tep;

struct got {
	int	 n;
	char	 headers[1024];
	char	 error[64];
	char	 description[256];
};

static void
token_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	struct evbuffer	*out = evbuffer_new();
	const char	*h;
	size_t		 len = evbuffer_get_length(in);

	tep.requests++;
	if (len >= sizeof tep.body)
		len = sizeof tep.body - 1;
	evbuffer_remove(in, tep.body, len);
	tep.body[len] = '\0';
	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	snprintf(tep.authorization, sizeof tep.authorization, "%s",
	    h != NULL ? h : "");
	if (tep.hold) {
		tep.held = req;
		evbuffer_free(out);
		return;
	}
	evbuffer_add_printf(out, "%s", tep.answer);
	evhttp_send_reply(req, tep.status, "X", out);
	evbuffer_free(out);
}

static void
got_cb(const struct http_client_header *h, size_t n,
    const struct credential_error *e, void *arg)
{
	struct got	*g = arg;
	size_t		 i, off = 0;

	g->n++;
	if (e != NULL) {
		snprintf(g->error, sizeof g->error, "%s", e->error);
		snprintf(g->description, sizeof g->description, "%s",
		    e->description);
		ck_assert_uint_eq(n, 0);
		return;
	}
	for (i = 0; i < n; i++)
		off += snprintf(g->headers + off, sizeof g->headers - off,
		    "%s: %s\n", h[i].name, h[i].value);
}

static void
wait_got(struct got *g)
{
	int	i;

	for (i = 0; i < 5000 && g->n == 0; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (g->n == 0)
			usleep(1000);
	}
	ck_assert_int_eq(g->n, 1);
	unit_turns(base, 3);
	ck_assert_int_eq(g->n, 1);
}

static void
setup(void)
{
	struct evhttp_bound_socket	*bound;
	struct sockaddr_in		 sin;
	socklen_t			 len = sizeof sin;

	log_level = LOG_LEVEL_ERROR;
	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_gencb(http, token_cb, NULL);
	bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	ck_assert_ptr_nonnull(bound);
	getsockname(evhttp_bound_socket_get_fd(bound),
	    (struct sockaddr *)&sin, &len);
	port = ntohs(sin.sin_port);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/token", port);
	http_client_init(base);
	conf = conf_default();
	/* What credential.c reads of the server: its loop. */
	server.base = base;
	server.conf = conf;
	memset(&tep, 0, sizeof tep);
	tep.status = 200;
	tep.answer = "{\"access_token\":\"tok-1\",\"token_type\":\"bearer\","
	    "\"expires_in\":300}";
}

static void
teardown(void)
{
	if (tep.held != NULL)
		evhttp_send_reply(tep.held, 500, "Bye", NULL);
	http_client_shutdown();
	unit_turns(base, 4);
	evhttp_free(http);
	conf_free(conf);
	event_base_free(base);
}

/* A credentials block: grant, with the id and secret given. */
static struct conf_credentials *
block(int grant, const char *id, const char *secret)
{
	struct conf_credentials	*cc = xcalloc(1, sizeof *cc);

	cc->grant = grant;
	cc->token_endpoint = xstrdup(url);
	cc->client_id = xstrdup(id);
	cc->client_secret = xstrdup(secret);
	cc->resource = xstrdup("https://up.test/mcp");
	cc->scopes = xcalloc(1, sizeof *cc->scopes);
	cc->expires_in = 300;
	cc->max_tokens = 8;
	cc->timeout = 5;
	return (cc);
}

static void
block_free(struct conf_credentials *cc)
{
	size_t	i;

	for (i = 0; i < cc->nheaders; i++) {
		free(cc->headers[i].name);
		free(cc->headers[i].file);
		free(cc->headers[i].value);
	}
	free(cc->headers);
	free(cc->token_endpoint);
	free(cc->client_id);
	free(cc->client_secret);
	free(cc->resource);
	xfree_words(cc->scopes);
	free(cc);
}

START_TEST(test_static_headers)
{
	struct conf_credentials	*cc = block(CONF_GRANT_NONE, "x", "y");
	struct credential	*cred;
	struct got		 g;

	cc->headers = xcalloc(1, sizeof *cc->headers);
	cc->headers[0].name = xstrdup("X-Api-Key");
	cc->headers[0].file = xstrdup("/dev/null");
	cc->headers[0].value = xstrdup("k-1");
	cc->nheaders = 1;
	cred = credential_new("up", conf, cc);
	memset(&g, 0, sizeof g);
	credential_get(cred, NULL, got_cb, &g);
	ck_assert_int_eq(g.n, 0);	/* never inside the call */
	wait_got(&g);
	ck_assert_str_eq(g.headers, "X-Api-Key: k-1\n");
	ck_assert_int_eq(tep.requests, 0);
	credential_unref(cred);
	block_free(cc);
}
END_TEST

START_TEST(test_client_credentials_once_then_kept)
{
	struct conf_credentials	*cc = block(CONF_GRANT_CLIENT_CREDENTIALS,
				    "my id", "s:e/c+");
	struct credential	*cred;
	struct got		 a, b, c;
	unsigned char		*raw;
	size_t			 len;

	cred = credential_new("up", conf, cc);
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	memset(&c, 0, sizeof c);
	credential_get(cred, NULL, got_cb, &a);
	credential_get(cred, NULL, got_cb, &b);
	wait_got(&a);
	wait_got(&b);
	ck_assert_int_eq(tep.requests, 1);
	ck_assert_str_eq(a.headers, "Authorization: Bearer tok-1\n");
	ck_assert_str_eq(b.headers, a.headers);
	ck_assert_ptr_nonnull(strstr(tep.body,
	    "grant_type=client_credentials"));
	ck_assert_ptr_nonnull(strstr(tep.body,
	    "resource=https%3A%2F%2Fup.test%2Fmcp"));
	/* RFC 6749 2.3.1: form-encoded, then base64. */
	ck_assert(strncmp(tep.authorization, "Basic ", 6) == 0);
	ck_assert_int_eq(base64_decode(tep.authorization + 6,
	    strlen(tep.authorization + 6), 0, &raw, &len), 0);
	ck_assert_int_eq(len, strlen("my%20id:s%3Ae%2Fc%2B"));
	ck_assert(memcmp(raw, "my%20id:s%3Ae%2Fc%2B", len) == 0);
	free(raw);
	/* Kept: no second request. */
	credential_get(cred, NULL, got_cb, &c);
	wait_got(&c);
	ck_assert_int_eq(tep.requests, 1);
	ck_assert_str_eq(c.headers, a.headers);
	ck_assert_uint_ge(credential_cached(), 1);
	/* Refused by the peer: the next ask fetches again. */
	tep.answer = "{\"access_token\":\"tok-2\",\"token_type\":\"Bearer\"}";
	credential_refused(cred, NULL);
	memset(&c, 0, sizeof c);
	credential_get(cred, NULL, got_cb, &c);
	wait_got(&c);
	ck_assert_int_eq(tep.requests, 2);
	ck_assert_str_eq(c.headers, "Authorization: Bearer tok-2\n");
	credential_unref(cred);
	block_free(cc);
}
END_TEST

START_TEST(test_token_exchange)
{
	struct conf_credentials	*cc = block(CONF_GRANT_TOKEN_EXCHANGE,
				    "mcpd", "sec");
	struct auth_principal	*p, *who, *bare;
	struct credential	*cred;
	struct got		 g;

	cc->client_auth = CONF_CLIENT_AUTH_POST;
	cred = credential_new("up", conf, cc);
	p = auth_principal_new("https://as.test", "alice", NULL, NULL);
	who = auth_principal_with_token(p, "caller.jwt", 10);
	memset(&g, 0, sizeof g);
	tep.answer = "{\"access_token\":\"ex-1\",\"token_type\":\"Bearer\","
	    "\"issued_token_type\":"
	    "\"urn:ietf:params:oauth:token-type:access_token\"}";
	credential_get(cred, who, got_cb, &g);
	wait_got(&g);
	ck_assert_str_eq(g.headers, "Authorization: Bearer ex-1\n");
	ck_assert_ptr_nonnull(strstr(tep.body, "grant_type=urn%3Aietf%3Aparams"
	    "%3Aoauth%3Agrant-type%3Atoken-exchange"));
	ck_assert_ptr_nonnull(strstr(tep.body, "subject_token=caller.jwt&"));
	ck_assert_ptr_nonnull(strstr(tep.body, "client_id=mcpd"));
	ck_assert_ptr_nonnull(strstr(tep.body, "client_secret=sec"));
	ck_assert_str_eq(tep.authorization, "");

	/* Kept for the principal, whatever token it brings next. */
	memset(&g, 0, sizeof g);
	credential_get(cred, who, got_cb, &g);
	wait_got(&g);
	ck_assert_int_eq(tep.requests, 1);

	/* No principal: mcpd's own token, by client credentials. */
	tep.answer = "{\"access_token\":\"own\",\"token_type\":\"Bearer\"}";
	memset(&g, 0, sizeof g);
	credential_get(cred, NULL, got_cb, &g);
	wait_got(&g);
	ck_assert_str_eq(g.headers, "Authorization: Bearer own\n");
	ck_assert_ptr_nonnull(strstr(tep.body,
	    "grant_type=client_credentials"));

	/* A principal whose token mcpd does not hold. */
	bare = auth_principal_new("https://as.test", "bob", NULL, NULL);
	memset(&g, 0, sizeof g);
	credential_get(cred, bare, got_cb, &g);
	wait_got(&g);
	ck_assert_str_eq(g.error, "invalid_request");

	/* Refused: the OAuth error and its description, bounded. */
	tep.status = 400;
	tep.answer = "{\"error\":\"invalid_target\",\"error_description\":"
	    "\"not for you\\n\"}";
	auth_principal_unref(bare);
	bare = auth_principal_new("https://as.test", "mallory", NULL, NULL);
	auth_principal_unref(who);
	who = auth_principal_with_token(bare, "m.jwt", 5);
	memset(&g, 0, sizeof g);
	credential_get(cred, who, got_cb, &g);
	wait_got(&g);
	ck_assert_str_eq(g.error, "invalid_target");
	ck_assert_str_eq(g.description, "not for you?");
	ck_assert_str_eq(g.headers, "");

	/* An answer that is no token. */
	tep.status = 200;
	tep.answer = "{\"access_token\":\"x\",\"token_type\":\"mac\"}";
	memset(&g, 0, sizeof g);
	credential_get(cred, who, got_cb, &g);
	wait_got(&g);
	ck_assert_str_eq(g.error, "invalid_response");

	auth_principal_unref(who);
	auth_principal_unref(bare);
	auth_principal_unref(p);
	credential_unref(cred);
	block_free(cc);
}
END_TEST

START_TEST(test_cancel)
{
	struct conf_credentials	*cc = block(CONF_GRANT_CLIENT_CREDENTIALS,
				    "mcpd", "sec");
	struct credential	*cred;
	struct credential_ask	*ask;
	struct got		 g;
	uint64_t		 failures;
	int			 i;

	tep.hold = 1;
	cred = credential_new("up", conf, cc);
	memset(&g, 0, sizeof g);
	ask = credential_get(cred, NULL, got_cb, &g);
	for (i = 0; i < 2000 && tep.held == NULL; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ck_assert_ptr_nonnull(tep.held);
	credential_cancel(ask);
	ck_assert_int_eq(g.n, 0);
	wait_got(&g);
	ck_assert_str_eq(g.error, "cancelled");
	/* The fetch goes on for others; the block must outlive it. */
	failures = metrics.credential_failures;
	evhttp_send_reply(tep.held, 500, "No", NULL);
	tep.held = NULL;
	for (i = 0; i < 2000 && metrics.credential_failures == failures; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ck_assert_uint_eq(metrics.credential_failures, failures + 1);
	credential_unref(cred);
	block_free(cc);
}
END_TEST

START_TEST(test_form)
{
	char	*s = credential_form("a b/c~d-e_f.g&=%", 16);

	ck_assert_str_eq(s, "a%20b%2Fc~d-e_f.g%26%3D%25");
	free(s);
}
END_TEST

static Suite *
credential_suite(void)
{
	Suite	*s = suite_create("credential");
	TCase	*tc = tcase_create("credential");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_static_headers);
	tcase_add_test(tc, test_client_credentials_once_then_kept);
	tcase_add_test(tc, test_token_exchange);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_form);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(credential_suite)
