/*
 * Running requests. The call owns the request's place on its stream: what
 * it sends goes there in order, and its response is the stream's last entry
 * when no other response of the same POST is still owed.
 *
 * Nothing here calls a provider back from inside a call_* function: a
 * refused send or request is answered on a later loop turn, and so is the
 * cancel hook, and the requests a call leaves unanswered (outbound_end).
 * A call is freed by its last reference: its provider's (call_release)
 * and one for a cancel notice on its way.
 */
#include <sys/types.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "auth.h"
#include "call.h"
#include "clock.h"
#include "jsonrpc.h"
#include "limit.h"
#include "log.h"
#include "mcp.h"
#include "mcptrace.h"
#include "metrics.h"
#include "outbound.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "trace.h"
#include "xmalloc.h"

struct call {
	struct session	*session;
	struct stream	*stream;
	cJSON		*id;
	cJSON		*progress_token;
	int		 finished;	/* answered or cancelled */
	int		 asked;		/* it sent the client requests */
	u_int		 refs;
	call_cancel_cb	 cancel_cb;
	void		*cancel_arg;
	char		*tool;		/* a tools/call of a known tool */
	uint64_t	 start_ms;
	struct audit_rec *audit;	/* its audit line, until written */
	struct limit_ticket *ticket;	/* its concurrency slots */
	int		 interrupted;	/* it ends with no answer of its own */
	struct trace_span *span;	/* its message's, ended with it */

	/*
	 * A stateless (2026-07-28) request's call has no session nor
	 * stream: what it sends and answers goes to its sink (stateless.c).
	 */
	const struct call_sink *sink;
	void		*sink_arg;
	int		 log_level;	/* INT_MAX: the client set none */
	cJSON		*client_caps;
	int		 resumed;	/* a valid requestState came with it */
	u_int		 asks;		/* questions put to the client */
	struct call_waiter *waiters;	/* asked; answered by a new round */
	size_t		 nwaiters;
	char		*owner;		/* a sink's name for log lines */
	struct auth_principal *principal; /* a sink's call: who it is for */
	char		*endpoint;	/* a sink's call: the path it came to */
};

/* A question left for the client's next round: its asker hears so. */
struct call_waiter {
	char		*key;
	call_response_cb cb;
	void		*arg;
};

struct call *
call_start(struct session *s, struct stream *st, const cJSON *id,
    const cJSON *progress_token)
{
	struct call	*c;

	c = xcalloc(1, sizeof *c);
	c->session = s;
	c->stream = st;
	c->refs = 1;
	c->start_ms = clock_now_ms();
	c->id = cJSON_Duplicate(id, 1);
	if (progress_token != NULL)
		c->progress_token = cJSON_Duplicate(progress_token, 1);
	session_ref(s);
	session_call_add(s, c);
	stream_expect_response(st, id);
	return (c);
}

/*
 * A call of a stateless request: its messages go to sink, its log level
 * (from the request's _meta; INT_MAX for none) and the client's declared
 * capabilities come with the request.
 */
struct call *
call_start_sink(const struct call_sink *sink, void *arg, const cJSON *id,
    const cJSON *progress_token, int level, const cJSON *client_caps,
    int resumed)
{
	struct call	*c;

	c = xcalloc(1, sizeof *c);
	c->sink = sink;
	c->sink_arg = arg;
	c->refs = 1;
	c->start_ms = clock_now_ms();
	c->id = cJSON_Duplicate(id, 1);
	if (progress_token != NULL)
		c->progress_token = cJSON_Duplicate(progress_token, 1);
	c->log_level = level;
	if (client_caps != NULL)
		c->client_caps = cJSON_Duplicate(client_caps, 1);
	c->resumed = resumed;
	return (c);
}

/* Names the call's owner in log lines: its session, or "stateless". */
const char *
call_owner(const struct call *c)
{
	if (c->session != NULL)
		return (session_id(c->session));
	return (c->owner != NULL ? c->owner : "stateless");
}

void
call_set_principal(struct call *c, struct auth_principal *p)
{
	if (p != NULL)
		auth_principal_ref(p);
	if (c->principal != NULL)
		auth_principal_unref(c->principal);
	c->principal = p;
}

struct auth_principal *
call_principal(const struct call *c)
{
	if (c->session != NULL)
		return (session_principal(c->session));
	return (c->principal);
}

void
call_set_endpoint(struct call *c, const char *path)
{
	free(c->endpoint);
	c->endpoint = path != NULL ? xstrdup(path) : NULL;
}

const char *
call_endpoint(const struct call *c)
{
	if (c->session != NULL)
		return (session_endpoint(c->session));
	return (c->endpoint);
}

/* A sink's call names its owner in log lines as name (a task's id). */
void
call_set_owner(struct call *c, const char *name)
{
	free(c->owner);
	c->owner = xstrdup(name);
}

/* The protocol revision the call's client speaks. */
const char *
call_version(const struct call *c)
{
	return (c->session != NULL ? session_version(c->session) :
	    MCP_STATELESS_VERSION);
}

int
call_stateless(const struct call *c)
{
	return (c->sink != NULL);
}

/*
 * Whether the client declared capability name for this request; a
 * session's client is taken at its word (its capabilities are checked
 * where they were before).
 */
int
call_client_capable(const struct call *c, const char *name)
{
	if (c->sink == NULL)
		return (1);
	return (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
	    c->client_caps, name)));
}

/* Whether a stateless request came back with a requestState we signed. */
int
call_resumed(const struct call *c)
{
	return (c->resumed);
}

struct session *
call_session(const struct call *c)
{
	return (c->session);
}

struct stream *
call_stream(const struct call *c)
{
	return (c->stream);
}

const cJSON *
call_id(const struct call *c)
{
	return (c->id);
}

const cJSON *
call_progress_token(const struct call *c)
{
	return (c->progress_token);
}

int
call_finished(const struct call *c)
{
	return (c->finished);
}

void
call_set_cancel(struct call *c, call_cancel_cb cb, void *arg)
{
	c->cancel_cb = cb;
	c->cancel_arg = arg;
}

static void
call_free(struct call *c)
{
	size_t	i;

	if (c->session != NULL)
		session_unref(c->session);
	else if (c->sink->gone != NULL)
		c->sink->gone(c->sink_arg);
	cJSON_Delete(c->client_caps);
	for (i = 0; i < c->nwaiters; i++)
		free(c->waiters[i].key);
	free(c->waiters);
	free(c->owner);
	free(c->endpoint);
	audit_free(c->audit);
	limit_ticket_free(c->ticket);
	if (c->principal != NULL)
		auth_principal_unref(c->principal);
	cJSON_Delete(c->id);
	cJSON_Delete(c->progress_token);
	free(c->tool);
	trace_end(c->span);
	free(c);
}

/*
 * The span of the call's message (mcptrace_server's), ended when the call
 * answers or is cancelled: its whole life. Its stream's commits are
 * traced under it (the first call of a stream gives the stream its
 * context, stream_trace).
 */
void
call_set_trace(struct call *c, struct trace_span *sp)
{
	trace_end(c->span);
	c->span = sp;
	if (c->stream != NULL && sp != NULL)
		stream_trace(c->stream, trace_span_ctx(sp));
}

struct trace_span *
call_trace(const struct call *c)
{
	return (c->span);
}

/* The call has ended: its span ends, with the response's outcome. */
static void
call_trace_end(struct call *c, const cJSON *msg)
{
	if (c->span == NULL)
		return;
	if (msg != NULL)
		mcptrace_outcome(c->span, cJSON_GetObjectItemCaseSensitive(msg,
		    "result"), cJSON_GetObjectItemCaseSensitive(msg, "error"));
	else
		trace_attr_bool(c->span, "mcpd.call.cancelled", 1);
	trace_end(c->span);
	c->span = NULL;
}

/*
 * The call runs tool name (NULL: no tool after all, an unknown name is not
 * a label of its own): it is counted by tool and outcome when it ends.
 */
void
call_set_tool(struct call *c, const char *name)
{
	free(c->tool);
	c->tool = name != NULL ? xstrdup(name) : NULL;
}

/* The call's audit record (audit.c), written when its outcome is. */
void
call_set_audit(struct call *c, struct audit_rec *rec)
{
	audit_free(c->audit);
	c->audit = rec;
}

/* The limits' slots the call holds while it runs (limit.c). */
void
call_set_ticket(struct call *c, struct limit_ticket *t)
{
	limit_ticket_free(c->ticket);
	c->ticket = t;
}

/* The call is refused by limit name (its response follows). */
void
call_limited(struct call *c, const char *name)
{
	audit_set(c->audit, AUDIT_LIMITED, JSONRPC_RATE_LIMITED, name);
}

/* What another process needs to audit the call if this one dies. */
cJSON *
call_audit_context(const struct call *c)
{
	return (audit_context(c->audit));
}

static void
call_count(struct call *c, enum metrics_outcome outcome)
{
	if (c->tool != NULL)
		metrics_tool_call(c->tool, outcome,
		    (clock_now_ms() - c->start_ms) * 1000);
}

static void
call_unref(struct call *c)
{
	if (c->refs == 0)
		fatalx("call: reference count below zero");
	if (--c->refs == 0)
		call_free(c);
}

static void	call_refuse_later(call_response_cb, void *);

/* Marks the call done and settles the stream; returns 1 if it was last. */
static int
call_finish(struct call *c)
{
	size_t	i;

	c->finished = 1;
	/* Not running any more: its slots go to other calls. */
	limit_ticket_free(c->ticket);
	c->ticket = NULL;
	if (c->sink != NULL) {
		/* Its questions are answered by the client's next round. */
		for (i = 0; i < c->nwaiters; i++) {
			call_refuse_later(c->waiters[i].cb,
			    c->waiters[i].arg);
			free(c->waiters[i].key);
		}
		c->nwaiters = 0;
		return (0);
	}
	session_call_remove(c->session, c);
	if (c->asked)
		outbound_end(c);
	return (stream_response_done(c->stream));
}

static void
call_cancelled_cb(evutil_socket_t fd, short events, void *arg)
{
	struct call	*c = arg;

	if (c->cancel_cb != NULL)
		c->cancel_cb(c->cancel_arg);
	call_unref(c);
}

/*
 * Tells the provider, on a later turn, that its call was cancelled, unless
 * it has let go of the call by then. Queued before the call ends, so the
 * hook runs before the callbacks of the call's unanswered requests.
 */
static void
call_tell_cancel(struct call *c)
{
	if (c->cancel_cb == NULL)
		return;
	c->refs++;
	event_base_once(server.base, -1, EV_TIMEOUT, call_cancelled_cb, c,
	    NULL);
}

/*
 * Ends the call without a response: the client asked for it, or the session
 * is going away. The provider is told once, through its cancel hook.
 */
void
call_cancel(struct call *c, const char *reason)
{
	char	*id;

	if (c->finished)
		return;
	id = cJSON_PrintUnformatted(c->id);
	log_limited(LOG_LEVEL_INFO, "call-cancelled", "session=%s call id=%s "
	    "cancelled: %s", call_owner(c), id, reason);
	free(id);
	call_tell_cancel(c);
	call_count(c, METRICS_TOOL_CANCELLED);
	/*
	 * Nothing to commit: its line now (an abandoned one's error, if
	 * any, is committed by whoever settles the stream).
	 */
	audit_set(c->audit, c->interrupted ? AUDIT_INTERRUPTED :
	    AUDIT_CANCELLED, c->interrupted ? JSONRPC_INTERNAL_ERROR : 0,
	    NULL);
	audit_write(c->audit);
	c->audit = NULL;
	call_trace_end(c, NULL);
	if (call_finish(c))
		stream_close(c->stream);
	if (c->sink != NULL)
		c->sink->respond(c->sink_arg, NULL);
}

/*
 * Ends the call without a response because it cannot have one (its
 * stream's log failed): cancelled, but counted as interrupted.
 */
void
call_abandon(struct call *c, const char *reason)
{
	c->interrupted = 1;
	call_cancel(c, reason);
}

static void
call_append(struct call *c, struct stream *st, cJSON *msg, int final,
    call_sent_cb cb, void *arg)
{
	const char	*text;
	size_t		 len;

	/* The stream copies the text before it returns. */
	text = jsonrpc_print_shared(msg, &len);
	stream_append(st, text, len, final, cb, arg);
	cJSON_Delete(msg);
}

/*
 * A sender hears back on a later turn (the callback rule): ok, or not
 * sent. For every sink too (response.c's, task.c's), so the rule is kept
 * in one place.
 */
struct call_sent {
	call_sent_cb	 cb;
	void		*arg;
	int		 ok;
};

static void
call_sent_later_cb(evutil_socket_t fd, short events, void *arg)
{
	struct call_sent	*s = arg;

	s->cb(s->ok, s->arg);
	free(s);
}

void
call_sent_later(call_sent_cb cb, void *arg, int ok)
{
	struct call_sent	*s;

	if (cb == NULL)
		return;
	s = xmalloc(sizeof *s);
	s->cb = cb;
	s->arg = arg;
	s->ok = ok;
	event_base_once(server.base, -1, EV_TIMEOUT, call_sent_later_cb, s,
	    NULL);
}

/* What a finished call owes an asker: a refusal, later. */
struct call_refusal {
	call_response_cb answered;
	void		*arg;
};

static void
call_refused_cb(evutil_socket_t fd, short events, void *arg)
{
	struct call_refusal	*r = arg;
	cJSON			*error;

	error = cJSON_CreateObject();
	cJSON_AddNumberToObject(error, "code", JSONRPC_SERVER_ERROR);
	cJSON_AddStringToObject(error, "message",
	    "The request's call has ended");
	r->answered(NULL, error, r->arg);
	cJSON_Delete(error);
	free(r);
}

static void
call_refuse_later(call_response_cb answered, void *arg)
{
	struct call_refusal	*r;

	r = xmalloc(sizeof *r);
	r->answered = answered;
	r->arg = arg;
	event_base_once(server.base, -1, EV_TIMEOUT, call_refused_cb, r,
	    NULL);
}

/* A finished call sends nothing; its sender still hears back, later. */
static void
call_refuse(cJSON *msg, call_sent_cb cb, void *arg)
{
	cJSON_Delete(msg);
	call_sent_later(cb, arg, 0);
}

void
call_send(struct call *c, cJSON *msg, call_sent_cb cb, void *arg)
{
	if (c->finished)
		call_refuse(msg, cb, arg);
	else if (c->sink != NULL)
		c->sink->send(c->sink_arg, msg, cb, arg);
	else
		call_append(c, c->stream, msg, 0, cb, arg);
}

/* A stateless request has no standalone stream: refused. */
void
call_send_standalone(struct call *c, cJSON *msg, call_sent_cb cb, void *arg)
{
	struct stream	*st;

	st = c->sink == NULL ? session_standalone(c->session) : NULL;
	if (c->finished || st == NULL)
		call_refuse(msg, cb, arg);
	else
		call_append(c, st, msg, 0, cb, arg);
}

/*
 * Asks the client something (see outbound.h): the request goes on the
 * call's stream, and cb runs once, on a later turn, with the client's
 * answer or an error (timeout, or the call ended first).
 */
void
call_request(struct call *c, const char *method, cJSON *params,
    call_response_cb cb, void *arg)
{
	call_request_keyed(c, NULL, method, params, cb, arg);
}

/* An answer found in the request itself, told on a later turn. */
struct call_answer {
	call_response_cb cb;
	void		*arg;
	cJSON		*result;
};

static void
call_answered_cb(evutil_socket_t fd, short events, void *arg)
{
	struct call_answer	*a = arg;

	a->cb(a->result, NULL, a->arg);
	cJSON_Delete(a->result);
	free(a);
}

/*
 * A stateless request asks through MRTR (mrtr.c): the sink finds the
 * answer among the request's inputResponses, or leaves the question for
 * an input_required result and the client's next round (the asker hears
 * an error once the call has ended), or refuses it (the call has ended,
 * with -32021 say). key names the question in inputRequests; NULL: one
 * is made from the order of the call's questions, which a provider
 * running the same way again asks in the same order. A question the
 * client declared no capability for (sampling, elicitation, roots) ends
 * the call with -32021, whatever the sink.
 */
static void
call_ask(struct call *c, const char *key, const char *method, cJSON *params,
    call_response_cb cb, void *arg)
{
	struct call_answer	*a;
	const cJSON		*answer = NULL;
	const char		*cap = mcp_request_capability(method);
	char			*made = NULL;
	enum call_ask		 asked;

	if (key == NULL) {
		xasprintf(&made, "input-%u", c->asks);
		key = made;
	}
	c->asks++;
	if (cap != NULL && !call_client_capable(c, cap)) {
		cJSON_Delete(params);
		call_respond_missing_capability(c, cap, NULL);
		asked = CALL_ASK_REFUSED;
	} else
		asked = c->sink->ask(c->sink_arg, c, key, method, params,
		    &answer);
	switch (asked) {
	case CALL_ASK_ANSWERED:
		a = xmalloc(sizeof *a);
		a->cb = cb;
		a->arg = arg;
		a->result = cJSON_Duplicate(answer, 1);
		event_base_once(server.base, -1, EV_TIMEOUT, call_answered_cb,
		    a, NULL);
		break;
	case CALL_ASK_PENDING:
		if (!c->finished) {
			c->waiters = xreallocarray(c->waiters, c->nwaiters + 1,
			    sizeof *c->waiters);
			c->waiters[c->nwaiters].key = xstrdup(key);
			c->waiters[c->nwaiters].cb = cb;
			c->waiters[c->nwaiters++].arg = arg;
			break;
		}
		/* FALLTHROUGH */
	case CALL_ASK_REFUSED:
		call_refuse_later(cb, arg);
		break;
	}
	free(made);
}

/*
 * The answer to the question key that a sink left pending (a task's, from
 * tasks/update): its asker hears it on a later turn. -1 if no question of
 * that key is pending.
 */
int
call_answer(struct call *c, const char *key, const cJSON *result)
{
	struct call_answer	*a;
	size_t			 i;

	for (i = 0; i < c->nwaiters; i++) {
		if (strcmp(c->waiters[i].key, key) == 0)
			break;
	}
	if (i == c->nwaiters || c->finished)
		return (-1);
	a = xmalloc(sizeof *a);
	a->cb = c->waiters[i].cb;
	a->arg = c->waiters[i].arg;
	a->result = cJSON_Duplicate(result, 1);
	free(c->waiters[i].key);
	memmove(&c->waiters[i], &c->waiters[i + 1],
	    (c->nwaiters - i - 1) * sizeof *c->waiters);
	c->nwaiters--;
	event_base_once(server.base, -1, EV_TIMEOUT, call_answered_cb, a,
	    NULL);
	return (0);
}

/* A request to the client, traced: its span ends with the answer. */
struct call_traced {
	call_response_cb	 cb;
	void			*arg;
	struct trace_span	*span;
};

static void
call_request_traced_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct call_traced	*ct = arg;

	mcptrace_outcome(ct->span, result, error);
	trace_end(ct->span);
	ct->cb(result, error, ct->arg);
	free(ct);
}

void
call_request_keyed(struct call *c, const char *key, const char *method,
    cJSON *params, call_response_cb cb, void *arg)
{
	struct call_traced	*ct = NULL;
	const char		*id;
	cJSON			*msg, *idj;

	if (c->finished) {
		cJSON_Delete(params);
		call_refuse_later(cb, arg);
		return;
	}
	if (c->sink != NULL) {
		call_ask(c, key, method, params, cb, arg);
		return;
	}
	c->asked = 1;
	if (trace_enabled) {
		/* Its round trip is a span: the answer ends it. */
		ct = xmalloc(sizeof *ct);
		ct->cb = cb;
		ct->arg = arg;
		cb = call_request_traced_cb;
		arg = ct;
	}
	id = outbound_new(c, session_id(c->session), cb, arg);
	if (ct != NULL) {
		idj = cJSON_CreateString(id);
		ct->span = mcptrace_client(method, params, idj, c->span,
		    "tcp");
		cJSON_Delete(idj);
		trace_attr_str(ct->span, "mcp.session.id",
		    session_id(c->session));
		mcptrace_inject(params, ct->span);
	}
	msg = jsonrpc_notification(method, params);
	cJSON_AddStringToObject(msg, "id", id);
	log_debug("session=%s request %s %s sent", session_id(c->session), id,
	    method);
	call_append(c, c->stream, msg, 0, NULL, NULL);
}

int
call_log_enabled(const struct call *c, int level)
{
	if (c->sink != NULL)
		return (level >= c->log_level);
	return (level >= session_log_level(c->session));
}

/*
 * SEP-1699 polling: the client's connection for this request ends once it
 * has received what the stream has committed so far (at least the priming
 * event, so the client holds a cursor). The call goes on, what it sends is
 * committed as usual, and the client picks it up with GET and
 * Last-Event-ID. Returns -1 (and nothing changes) if the call has
 * finished, no connection shows its stream, or the client's revision has
 * no priming events (before 2025-11-25). A call starts before its stream's
 * creation is answered: the connection that will show it, opened then,
 * is told. A batch's requests share one stream, and so one connection.
 */
int
call_close_view(struct call *c)
{
	if (c->finished || c->sink != NULL)
		return (-1);
	return (stream_close_after(c->stream, stream_head(c->stream)));
}

/*
 * The response is committed (or, ok 0, not: the stream failed, and the
 * error owed is settled by lease.c): the audit line goes.
 */
static void
call_committed_cb(int ok, void *arg)
{
	struct audit_rec	*rec = arg;

	if (!ok)
		audit_set(rec, AUDIT_INTERRUPTED, JSONRPC_INTERNAL_ERROR, NULL);
	audit_write(rec);
}

/* The call's response (taken): the stream's last entry if none is owed. */
static void
call_send_response(struct call *c, cJSON *msg)
{
	int		 last = call_finish(c);
	const char	*text;
	char		*printed;
	size_t		 len;
	const cJSON	*result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	struct audit_rec *rec = c->audit;

	if (result == NULL)
		call_count(c, METRICS_TOOL_FAILED);
	else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result,
	    "isError")))
		call_count(c, METRICS_TOOL_ERROR);
	else
		call_count(c, METRICS_TOOL_OK);
	call_trace_end(c, msg);

	c->audit = NULL;
	if (c->sink != NULL) {
		/* Handed to the client's connection: committed as it gets. */
		if (rec != NULL) {
			printed = cJSON_PrintUnformatted(msg);
			audit_respond(rec, msg, printed != NULL ?
			    strlen(printed) : 0);
			free(printed);
		}
		c->sink->respond(c->sink_arg, msg);
		audit_write(rec);
		return;
	}
	/* The stream copies the text before it returns. */
	text = jsonrpc_print_shared(msg, &len);
	audit_respond(rec, msg, len);
	stream_append_response(c->stream, text, len, last, c->id,
	    rec != NULL ? call_committed_cb : NULL, rec);
	cJSON_Delete(msg);
	if (last)
		stream_close(c->stream);
}

void
call_respond(struct call *c, cJSON *result)
{
	if (c->finished) {
		cJSON_Delete(result);
		return;
	}
	call_send_response(c, jsonrpc_result(c->id, result));
}

/* A tool's result of one text item; is_error: a tool execution error. */
void
call_respond_text(struct call *c, const char *text, int is_error)
{
	cJSON	*result, *item;

	if (c->finished)
		return;
	result = cJSON_CreateObject();
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", text);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(result, "content"), item);
	if (is_error)
		cJSON_AddBoolToObject(result, "isError", 1);
	call_send_response(c, jsonrpc_result(c->id, result));
}

void
call_respond_error(struct call *c, int code, const char *message)
{
	call_respond_error_data(c, code, message, NULL);
}

/* -32021: the client did not declare a capability or an extension. */
void
call_respond_missing_capability(struct call *c, const char *capability,
    const char *extension)
{
	if (!c->finished)
		call_send_response(c, jsonrpc_missing_capability(c->id,
		    capability, extension));
}

/* An error with its data member (taken), as another server answered it. */
void
call_respond_error_data(struct call *c, int code, const char *message,
    cJSON *data)
{
	if (c->finished) {
		cJSON_Delete(data);
		return;
	}
	call_send_response(c, jsonrpc_error(c->id, code, message, data));
}

/*
 * The process is letting the session go (shutdown) while the call runs:
 * its response is an error saying so, committed like any response, and
 * the provider is cancelled.
 */
void
call_interrupt(struct call *c, const char *reason)
{
	char	*message;

	if (c->finished)
		return;
	call_tell_cancel(c);
	c->interrupted = 1;
	audit_set(c->audit, AUDIT_INTERRUPTED, JSONRPC_INTERNAL_ERROR, NULL);
	xasprintf(&message, "The call was interrupted: %s", reason);
	call_respond_error(c, JSONRPC_INTERNAL_ERROR, message);
	free(message);
}

/*
 * The provider will not touch the call again, nor hear of it: a call it
 * has not answered is cancelled without its hook.
 */
void
call_release(struct call *c)
{
	c->cancel_cb = NULL;
	if (!c->finished)
		call_cancel(c, "released by its provider");
	call_unref(c);
}
