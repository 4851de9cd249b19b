/*
 * HTTP server spans (reqtrace.h), named as OpenTelemetry's HTTP
 * conventions have them: "{method} {route}", kind SERVER, with
 * http.request.method, url.path, http.route, network.protocol.version,
 * client.address and client.port, user_agent.original and, at the end,
 * http.response.status_code; a 5xx is an error (error.type the status),
 * a 4xx is not (the server did what it should).
 *
 * The table holds the spans of requests being answered (an SSE response
 * takes its span out when it starts), at most REQTRACE_MAX: past that a
 * request is not traced. A root that is not sampled is kept too while
 * some roots are (its children must not decide again); at ratio 0 it
 * is not, so an untraced request costs a header lookup and nothing more.
 */
#include <sys/tree.h>

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "reqtrace.h"
#include "trace.h"
#include "xmalloc.h"

#define REQTRACE_MAX	65536

struct reqtrace {
	const struct evhttp_request *req;
	struct trace_span	*span;
	struct trace_span	*attached;	/* ends with it */
	RB_ENTRY(reqtrace)	 entry;
};
RB_HEAD(reqtrace_tree, reqtrace);

static struct reqtrace_tree	reqtrace_requests =
    RB_INITIALIZER(&reqtrace_requests);
static unsigned long		reqtrace_n;

static int
reqtrace_cmp(struct reqtrace *a, struct reqtrace *b)
{
	return (a->req < b->req ? -1 : a->req > b->req);
}
RB_GENERATE_STATIC(reqtrace_tree, reqtrace, entry, reqtrace_cmp);

static struct reqtrace *
reqtrace_find(const struct evhttp_request *req)
{
	struct reqtrace	find;

	if (reqtrace_n == 0)
		return (NULL);
	find.req = req;
	return (RB_FIND(reqtrace_tree, &reqtrace_requests, &find));
}

static void
reqtrace_remove(struct reqtrace *rt)
{
	RB_REMOVE(reqtrace_tree, &reqtrace_requests, rt);
	reqtrace_n--;
}

static void
reqtrace_status(struct trace_span *sp, int status)
{
	char	code[16];

	trace_attr_int(sp, "http.response.status_code", status);
	if (status >= 500) {
		snprintf(code, sizeof code, "%d", status);
		trace_error(sp, code, NULL);
	}
}

/* The request's spans end (taken out of the table before). */
void
reqtrace_done(struct reqtrace *rt, int status)
{
	if (rt == NULL)
		return;
	trace_end(rt->attached);
	reqtrace_status(rt->span, status);
	trace_end(rt->span);
	free(rt);
}

static const char *
reqtrace_method(struct evhttp_request *req)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
		return ("GET");
	case EVHTTP_REQ_POST:
		return ("POST");
	case EVHTTP_REQ_DELETE:
		return ("DELETE");
	case EVHTTP_REQ_PUT:
		return ("PUT");
	case EVHTTP_REQ_OPTIONS:
		return ("OPTIONS");
	case EVHTTP_REQ_HEAD:
		return ("HEAD");
	default:
		return ("_OTHER");
	}
}

static void
reqtrace_attributes(struct trace_span *sp, struct evhttp_request *req,
    const char *method, const char *route)
{
	struct evhttp_connection *evcon;
	const char		*uri, *ua;
	char			*addr = NULL;
	ev_uint16_t		 port = 0;

	trace_attr_str(sp, "http.request.method", method);
	trace_attr_str(sp, "http.route", route);
	if ((uri = evhttp_request_get_uri(req)) != NULL)
		trace_attr_strn(sp, "url.path", uri, strcspn(uri, "?#"));
	trace_attr_str(sp, "network.protocol.version", "1.1");
	if ((evcon = evhttp_request_get_connection(req)) != NULL) {
		evhttp_connection_get_peer(evcon, &addr, &port);
		trace_attr_str(sp, "client.address", addr);
		trace_attr_int(sp, "client.port", port);
	}
	if ((ua = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "User-Agent")) != NULL)
		trace_attr_str(sp, "user_agent.original", ua);
}

int
reqtrace_begin(struct evhttp_request *req, const char *route)
{
	struct evkeyvalq	*in;
	struct reqtrace		*rt;
	struct trace_span	*sp;
	struct trace_ctx	 parent, *pp = NULL;
	const char		*tp, *state = NULL, *method;
	char			 name[160];

	if (!trace_enabled)
		return (trace_enter(NULL));
	in = evhttp_request_get_input_headers(req);
	if ((tp = evhttp_find_header(in, "traceparent")) != NULL &&
	    trace_parse(tp, &parent) == 0) {
		pp = &parent;
		state = evhttp_find_header(in, "tracestate");
	}
	method = reqtrace_method(req);
	sp = trace_start(method, TRACE_SERVER, pp, state);
	if (sp != NULL && pp == NULL && !trace_recording(sp) &&
	    !trace_sampling())
		return (trace_enter(sp));	/* ratio 0: nothing to keep */
	/* A request freed unanswered may leave its address to this one. */
	if ((rt = reqtrace_find(req)) != NULL) {
		reqtrace_remove(rt);
		reqtrace_done(rt, 0);
	}
	if (reqtrace_n >= REQTRACE_MAX) {
		trace_end(sp);
		return (trace_enter(NULL));
	}
	rt = xcalloc(1, sizeof *rt);
	rt->req = req;
	rt->span = sp;
	RB_INSERT(reqtrace_tree, &reqtrace_requests, rt);
	reqtrace_n++;
	if (trace_recording(sp)) {
		snprintf(name, sizeof name, "%s %s", method, route);
		trace_rename(sp, name);
		reqtrace_attributes(sp, req, method, route);
	}
	return (trace_enter(sp));
}

struct trace_span *
reqtrace_span(struct evhttp_request *req)
{
	struct reqtrace	*rt = reqtrace_find(req);

	return (rt != NULL ? rt->span : NULL);
}

int
reqtrace_enter(struct reqtrace *rt)
{
	return (trace_enter(rt != NULL ? rt->span : NULL));
}

void
reqtrace_attach(struct evhttp_request *req, struct trace_span *sp)
{
	struct reqtrace	*rt;

	if (sp == NULL)
		return;
	if ((rt = reqtrace_find(req)) == NULL) {
		if (reqtrace_n >= REQTRACE_MAX) {
			trace_end(sp);
			return;
		}
		rt = xcalloc(1, sizeof *rt);
		rt->req = req;
		RB_INSERT(reqtrace_tree, &reqtrace_requests, rt);
		reqtrace_n++;
	}
	trace_end(rt->attached);
	rt->attached = sp;
}

struct reqtrace *
reqtrace_take(struct evhttp_request *req)
{
	struct reqtrace	*rt = reqtrace_find(req);

	if (rt != NULL)
		reqtrace_remove(rt);
	return (rt);
}

void
reqtrace_end(struct evhttp_request *req, int status)
{
	reqtrace_done(reqtrace_take(req), status);
}
